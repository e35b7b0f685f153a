#!/bin/bash
# rdmans on the host kernel (no RDMA in it): bad input gets one clear line,
# its own exit code, and changes nothing. Root, real namespaces.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
RDMANS=${RDMANS:-$RDMANS_BUILD_DIR/src/cli/rdmans}

tap_skip_unless_root

# expect_fail NAME CODE NEEDLE CMD...: CMD exits with CODE, prints one stderr line containing NEEDLE
expect_fail() {
	local name=$1 code=$2 needle=$3 rc=0 out
	shift 3
	out=$("$@" 2>&1 >/dev/null) || rc=$?
	if [ "$rc" = "$code" ] && [ "$(printf '%s\n' "$out" | wc -l)" = 1 ] &&
		vm_expect_contains "$out" "$needle" "stderr"; then
		vm_ok "$name"
	else
		vm_not_ok "$name"
		vm_diag "command: $* (exit $rc, expected $code)"
		vm_diag "$out"
	fi
}

ip netns del rnc-pod 2>/dev/null
ip netns add rnc-pod
trap 'ip netns del rnc-pod 2>/dev/null; rm -rf "$tmp"' EXIT
tmp=$(mktemp -d) && mkdir "$tmp/etc"
before=$(ip -o link | vm_link_view; ip netns list)

expect_fail "no RDMA netlink: dev" 9 "this kernel has no RDMA netlink" "$RDMANS" dev
expect_fail "no RDMA netlink: move" 9 "this kernel has no RDMA netlink" "$RDMANS" move irdma0 rnc-pod
expect_fail "unknown PID" 4 "no process with PID 999999999" "$RDMANS" move irdma0 999999999
expect_fail "unknown netns name" 5 "no network namespace named 'nosuch'" "$RDMANS" move irdma0 nosuch
expect_fail "path that is not a netns" 6 "/etc/hostname is not a network namespace" "$RDMANS" move irdma0 /etc/hostname
expect_fail "device name with a slash" 7 "must not contain '/'" "$RDMANS" move irdma0/x rnc-pod
expect_fail "device name with .." 7 "must not contain '..'" "$RDMANS" move .. rnc-pod
expect_fail "netns name .." 7 "must not contain '..'" "$RDMANS" move irdma0 ..
expect_fail "unknown container" 4 "no running process belongs to container 'deadbeefcafe'" "$RDMANS" move irdma0 --container deadbeefcafe
expect_fail "target and container both" 2 "not both" "$RDMANS" move irdma0 rnc-pod --container deadbeefcafe
expect_fail "unknown object" 2 "unknown object 'frobnicate'" "$RDMANS" frobnicate
expect_fail "unknown verb" 2 "unknown command 'dev frob'" "$RDMANS" dev frob
expect_fail "bad mode" 2 "must be 'exclusive' or 'shared'" "$RDMANS" system set netns private
expect_fail "no CAP_NET_ADMIN / not root" 10 "run as root" setpriv --reuid=65534 --regid=65534 --clear-groups "$RDMANS" move irdma0 1

after=$(ip -o link | vm_link_view; ip netns list)
vm_check "bad input changed no link or netns" vm_expect_eq "$before" "$after" "links and namespaces"

# --persist writes the boot default even where it cannot apply now.
out=$(RDMANS_CONFIG_ROOT=$tmp "$RDMANS" system set netns exclusive --persist 2>&1)
vm_check "--persist writes modprobe.d" grep -qx "options ib_core netns_mode=0" "$tmp/etc/modprobe.d/rdmans-ib_core.conf"
vm_check "--persist says the next step" vm_expect_contains "$out" "reboot the node"
out=$(RDMANS_CONFIG_ROOT=$tmp "$RDMANS" -j system 2>/dev/null)
vm_check "system shows the boot mode from the file" vm_expect_eq \
	'{"netns_mode":null,"boot":{"netns_mode":"exclusive","source":"/etc/modprobe.d/rdmans-ib_core.conf"}}' "$out"
# a shared-mode consumer on the node (NVIDIA's shared RDMA device plugin, by its
# binary's name): exclusive mode is refused, nothing is written, --force goes on
rm -f "$tmp/etc/modprobe.d/rdmans-ib_core.conf"
cp /bin/sleep "$tmp/k8s-rdma-shared-dp"
"$tmp/k8s-rdma-shared-dp" 600 &
shared_dp=$!
rc=0
out=$(RDMANS_CONFIG_ROOT=$tmp "$RDMANS" system set netns exclusive --persist 2>&1) || rc=$?
vm_check "exclusive mode is refused while k8s-rdma-shared-dev-plugin runs (exit 11, busy)" \
	vm_expect_eq 11 "$rc" "exit status"
vm_check "... naming it and its PID, and what to do" vm_expect_contains "$out" \
	"k8s-rdma-shared (PID $shared_dp) runs on this node and needs shared mode"
vm_check "... writing nothing" test ! -e "$tmp/etc/modprobe.d/rdmans-ib_core.conf"
out=$(RDMANS_CONFIG_ROOT=$tmp "$RDMANS" system set netns exclusive --persist --force 2>&1)
vm_check "--force persists it anyway" grep -qx "options ib_core netns_mode=0" "$tmp/etc/modprobe.d/rdmans-ib_core.conf"
kill "$shared_dp"
wait "$shared_dp" 2>/dev/null

# what Node Feature Discovery's local source reads (features.d): no RDMA netlink here, so
# no mode now and no device; the next boot's mode from the file
out=$(RDMANS_CONFIG_ROOT=$tmp "$RDMANS" system nfd 2>&1)
vm_check "system nfd: the feature lines of a node without RDMA, exclusive at the next boot" vm_expect_eq \
	"rdmans.feature.node.kubernetes.io/netns-mode-next-boot=exclusive
rdmans.feature.node.kubernetes.io/rdma-devices=0" "$(printf '%s\n' "$out" | grep -v '^#')"
mkdir -p "$tmp/proc" && echo "BOOT_IMAGE=/vmlinuz ib_core.netns_mode=1 quiet" >"$tmp/proc/cmdline"
out=$(RDMANS_CONFIG_ROOT=$tmp "$RDMANS" system 2>/dev/null)
vm_check "kernel command line wins over modprobe.d" vm_expect_contains "$out" "shared (/proc/cmdline)"

vm_done
