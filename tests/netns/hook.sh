#!/bin/bash
# rdmans-hook in real runc containers on the host kernel. The host has no
# RDMA, so the hook reads a fake sysfs tree (RDMANS_SYSFS_ROOT, passed in the
# hook's env) holding irdma0 whose RoCE v2 GID 1 is the address of the
# container's real veth net1; addresses come from the real netns.
# Also `rdmans env` against that netns. Root, runc, busybox-static, jq.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
. "$here/hook-lib.sh"
B=${RDMANS_BUILD_DIR:?}
HOOK=$B/src/hook/rdmans-hook
R=$B/src/cli/rdmans

tap_skip_unless_root
for t in runc jq busybox; do
	command -v "$t" >/dev/null || vm_fail "$t is not installed (tools/install-deps.sh)"
done

tmp=$(mktemp -d /tmp/rdmans-hook-test.XXXXXX)
NS=rnh-pod
cleanup() {
	for id in $(runc --root "$tmp/runc" list -q 2>/dev/null); do
		runc --root "$tmp/runc" delete -f "$id" >/dev/null 2>&1
	done
	ip netns del "$NS" 2>/dev/null
	ip netns del rnh-pod6 2>/dev/null
	umount "$tmp/ro/rootfs" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
ip netns del "$NS" 2>/dev/null
ip netns add "$NS" || vm_fail "ip netns add"
ip link add rnh-h type veth peer name net1 netns "$NS" || vm_fail "veth"
ip -n "$NS" addr add 10.100.100.1/24 dev net1
ip -n "$NS" link set net1 up
ip -n "$NS" link set lo up

host_files() { ls -l --time-style=+%s.%N /etc/nccl.conf /etc/profile.d/rdmans-nccl.sh /nccl.conf 2>&1; }
host_before=$(host_files)

sys=$tmp/sys
hl_fake_roce "$sys" irdma0 net1 10.100.100.1 1
mkdir -p "$sys/class/net/lo"
export HL_HOOK_ENV="[\"RDMANS_SYSFS_ROOT=$sys\", \"RDMANS_CONFIG_ROOT=$tmp/cfg\"]"
PODNS=/var/run/netns/$NS
CAT='["sh","-c","cat /etc/nccl.conf"]'
PROF='{"rdmans.io/nccl-profile": "roce"}'

# --- nccl.conf and the profile script --------------------------------------------------
hl_bundle "$tmp/b1" "$HOOK" "$PODNS" \
	'["sh","-c","cat /etc/nccl.conf; echo ---; . /etc/profile.d/rdmans-nccl.sh; echo GID=$NCCL_IB_GID_INDEX HCA=$NCCL_IB_HCA IF=$NCCL_SOCKET_IFNAME TIMEOUT=$NCCL_IB_TIMEOUT"]' \
	'.annotations = {"rdmans.io/nccl": "{\"profile\": \"baidu-cce\", \"env\": {\"NCCL_SOCKET_IFNAME\": \"net1\"}}"}'
if hl_run "$tmp/runc" "$tmp/b1" rnh-1; then vm_ok "container with rdmans.io/nccl runs"; else
	vm_not_ok "container with rdmans.io/nccl runs"; vm_diag "$HL_ERR"; fi
conf=${HL_OUT%%---*}
vm_check "nccl.conf: GID index of the container's address" vm_expect_contains "$conf" $'\nNCCL_IB_GID_INDEX=1\n'
vm_check "nccl.conf: HCA, exact name" vm_expect_contains "$conf" $'\nNCCL_IB_HCA==irdma0\n'
vm_check "nccl.conf: the annotation's interface" vm_expect_contains "$conf" $'\nNCCL_SOCKET_IFNAME=net1\n'
vm_check "nccl.conf: the profile's timeout" vm_expect_contains "$conf" $'\nNCCL_IB_TIMEOUT=22\n'
vm_check "nccl.conf: says why" vm_expect_contains "$conf" "RoCE v2 GID 1 of irdma0 port 1 holds 10.100.100.1/24 (net1)"
vm_check "profile script sets the same values for shells" vm_expect_contains "$HL_OUT" "GID=1 HCA==irdma0 IF=net1 TIMEOUT=22"
vm_check "files written in the bundle's rootfs" test -f "$tmp/b1/rootfs/etc/nccl.conf" -a -f "$tmp/b1/rootfs/etc/profile.d/rdmans-nccl.sh"

# the environment wins over the profile script, as it does over nccl.conf for NCCL
hl_bundle "$tmp/b1" "$HOOK" "$PODNS" \
	'["sh","-c",". /etc/profile.d/rdmans-nccl.sh; echo GID=$NCCL_IB_GID_INDEX"]' \
	'.annotations = {"rdmans.io/nccl-profile": "roce"} | .process.env += ["NCCL_IB_GID_INDEX=7"]'
hl_run "$tmp/runc" "$tmp/b1" rnh-1b
vm_check "profile script leaves variables the environment sets" vm_expect_eq "GID=7" "$HL_OUT"

# the same rootfs again (a restart): one block, nothing doubled
hl_bundle "$tmp/b1" "$HOOK" "$PODNS" "$CAT" ".annotations = $PROF"
hl_run "$tmp/runc" "$tmp/b1" rnh-1c
vm_check "restart: one rdmans block" vm_expect_eq 1 "$(grep -c '^# rdmans: begin' <<<"$HL_OUT")"
vm_check "restart: each variable once" vm_expect_eq "" "$(grep -v '^#' <<<"$HL_OUT" | cut -d= -f1 | sort | uniq -d)"

# --- the image's own nccl.conf is merged ------------------------------------------------
hl_bundle "$tmp/b2" "$HOOK" "$PODNS" "$CAT" '.annotations = {"rdmans.io/nccl-profile": "baidu-cce"}'
mkdir -p "$tmp/b2/rootfs/etc"
printf '# from the image\nNCCL_DEBUG=WARN\nNCCL_IB_TIMEOUT=18\nNCCL_IB_HCA=mlx5\n' >"$tmp/b2/rootfs/etc/nccl.conf"
hl_run "$tmp/runc" "$tmp/b2" rnh-2
vm_check "image conf: its own lines kept" vm_expect_contains "$HL_OUT" $'# rdmans: end\n# from the image\nNCCL_DEBUG=WARN\nNCCL_IB_TIMEOUT=18\n'
vm_check "image conf: its timeout beats the profile's" vm_expect_eq "" "$(grep '^NCCL_IB_TIMEOUT=22' <<<"$HL_OUT")"
vm_check "image conf: detection beats its HCA, kept as a comment" vm_expect_contains "$HL_OUT" $'#rdmans-overridden:NCCL_IB_HCA=mlx5'
vm_check "image conf: the detected HCA is the one NCCL reads" vm_expect_eq "NCCL_IB_HCA==irdma0" "$(grep '^NCCL_IB_HCA=' <<<"$HL_OUT")"

# --- an image whose /etc is a symlink -----------------------------------------------------
outside=$tmp/outside-etc
mkdir -p "$outside"
hl_bundle "$tmp/b3" "$HOOK" "$PODNS" "$CAT" ".annotations = $PROF"
ln -s "$outside" "$tmp/b3/rootfs/etc"
mkdir -p "$tmp/b3/rootfs$outside"
hl_run "$tmp/runc" "$tmp/b3" rnh-3
vm_check "/etc -> $outside: the container reads its nccl.conf" vm_expect_contains "$HL_OUT" "NCCL_IB_GID_INDEX=1"
vm_check "/etc -> $outside: nothing written on the host" vm_expect_eq "" "$(ls -A "$outside")"
vm_check "/etc -> $outside: the file is inside the rootfs" test -f "$tmp/b3/rootfs$outside/nccl.conf"

hl_bundle "$tmp/b4" "$HOOK" "$PODNS" "$CAT" ".annotations = $PROF"
ln -s "$outside/deeper" "$tmp/b4/rootfs/etc"
if hl_run "$tmp/runc" "$tmp/b4" rnh-4; then vm_not_ok "/etc -> a directory the image lacks: refused"; else
	vm_ok "/etc -> a directory the image lacks: refused"; fi
vm_check "  with a message saying so" vm_expect_contains "$HL_ERR" "it is a symlink to a directory the image does not have"
vm_check "  nothing written on the host" sh -c "[ ! -e '$outside/deeper' ] && [ -z \"\$(ls -A '$outside')\" ]"
vm_check "  no container left behind" vm_expect_eq "" "$(runc --root "$tmp/runc" list -q)"

hl_bundle "$tmp/b5" "$HOOK" "$PODNS" "$CAT" ".annotations = $PROF"
ln -s ../../../../../../../../.. "$tmp/b5/rootfs/etc"
hl_run "$tmp/runc" "$tmp/b5" rnh-5
vm_check "/etc -> ../../..: stays in the rootfs" vm_expect_contains "$HL_OUT" "NCCL_IB_HCA==irdma0"
vm_check "/etc -> ../../..: the file is the rootfs's /nccl.conf" test -f "$tmp/b5/rootfs/nccl.conf"
vm_check "/etc -> ../../..: no /nccl.conf on the host" test ! -e /nccl.conf

# --- read-only rootfs ---------------------------------------------------------------------
hl_bundle "$tmp/b6" "$HOOK" "$PODNS" "$CAT" ".annotations = $PROF | .root.readonly = true"
if hl_run "$tmp/runc" "$tmp/b6" rnh-6; then vm_not_ok "readonly rootfs: creation fails"; else
	vm_ok "readonly rootfs: creation fails"; fi
vm_check "  the message says why and what to do" vm_expect_contains "$HL_ERR" "its root filesystem is read-only"
vm_check "  and names the way out" vm_expect_contains "$HL_ERR" 'Set the annotation rdmans.io/nccl-conf'
vm_check "  nothing written" test ! -e "$tmp/b6/rootfs/etc"
hl_bundle "$tmp/b6" "$HOOK" "$PODNS" '["sh","-c","ls /etc 2>&1; echo ran"]' \
	'.annotations = {"rdmans.io/nccl-profile": "roce", "rdmans.io/nccl-conf": "off"} | .root.readonly = true'
hl_run "$tmp/runc" "$tmp/b6" rnh-6b
vm_check "readonly rootfs with nccl-conf off: runs, no file" vm_expect_contains "$HL_OUT" "ran"
vm_check "  nothing written" test ! -e "$tmp/b6/rootfs/etc"

# a rootfs on a read-only mount (not marked readonly in config.json): EROFS, said so
mkdir -p "$tmp/ro"
hl_rootfs "$tmp/ro/rootfs"
mount --bind "$tmp/ro/rootfs" "$tmp/ro/rootfs" && mount -o remount,bind,ro "$tmp/ro/rootfs"
hl_bundle "$tmp/ro" "$HOOK" "$PODNS" "$CAT" ".annotations = $PROF"
if hl_run "$tmp/runc" "$tmp/ro" rnh-7; then vm_not_ok "rootfs on a read-only mount: creation fails"; else
	vm_ok "rootfs on a read-only mount: creation fails"; fi
vm_check "  the message says read-only" vm_expect_contains "$HL_ERR" "read-only: cannot write /etc/nccl.conf"
umount "$tmp/ro/rootfs"

# --- no annotations: nothing --------------------------------------------------------------
hl_bundle "$tmp/b8" "$HOOK" "$PODNS" '["sh","-c","ls /etc 2>&1; echo ran"]'
if hl_run "$tmp/runc" "$tmp/b8" rnh-8; then vm_ok "no annotations: runs"; else vm_not_ok "no annotations: runs"; vm_diag "$HL_ERR"; fi
vm_check "no annotations: no files" test ! -e "$tmp/b8/rootfs/etc"
# ... even in the host's netns
hl_bundle "$tmp/b8" "$HOOK" "" '["true"]'
if hl_run "$tmp/runc" "$tmp/b8" rnh-8b; then vm_ok "no annotations, host netns: runs"; else vm_not_ok "no annotations, host netns: runs"; vm_diag "$HL_ERR"; fi

# --- refused: the host's netns ------------------------------------------------------------
hl_bundle "$tmp/b9" "$HOOK" "" "$CAT" ".annotations = $PROF"
if hl_run "$tmp/runc" "$tmp/b9" rnh-9; then vm_not_ok "host netns: refused"; else vm_ok "host netns: refused"; fi
vm_check "  says it shares the host's netns" vm_expect_contains "$HL_ERR" "container rnh-9: it shares the host's network namespace"
vm_check "  nothing written" test ! -e "$tmp/b9/rootfs/etc"

# --- a device asked for on a kernel without RDMA -------------------------------------------
hl_bundle "$tmp/b10" "$HOOK" "$PODNS" "$CAT" '.annotations = {"rdmans.io/devices": "irdma0"}'
if hl_run "$tmp/runc" "$tmp/b10" rnh-10; then vm_not_ok "device on a kernel without RDMA: refused"; else
	vm_ok "device on a kernel without RDMA: refused"; fi
vm_check "  says the kernel has no RDMA netlink" vm_expect_contains "$HL_ERR" "no RDMA netlink"
hl_bundle "$tmp/b10" "$HOOK" "$PODNS" "$CAT" '.annotations = {"rdmans.io/devices": "irdma0,../x"}'
hl_run "$tmp/runc" "$tmp/b10" rnh-10b
vm_check "  bad device name in the annotation: named" vm_expect_contains "$HL_ERR" "annotation rdmans.io/devices: RDMA device name '../x' must not contain '..'"
hl_bundle "$tmp/b10" "$HOOK" "$PODNS" "$CAT" '.annotations = {"rdmans.io/nccl": "{\"env\": {\"LD_PRELOAD\": \"/x.so\"}}"}'
hl_run "$tmp/runc" "$tmp/b10" rnh-10c
vm_check "  non-NCCL variable in rdmans.io/nccl: refused" vm_expect_contains "$HL_ERR" "annotation rdmans.io/nccl: 'LD_PRELOAD' is not an NCCL variable"
vm_check "  nothing written" test ! -e "$tmp/b10/rootfs/etc"

# --- NCCL settings asked for where no RDMA is ------------------------------
# a kernel without RDMA (no class/infiniband, as on this host), and one whose pod has no device
nordma=$tmp/sys-nordma
mkdir -p "$nordma/class/net/net1" "$tmp/sys-nodev/class/infiniband" "$tmp/sys-nodev/class/net/net1"
SOCK_PROF='{"rdmans.io/nccl-profile": "baidu-cce"}'
HL_HOOK_ENV="[\"RDMANS_SYSFS_ROOT=$nordma\", \"RDMANS_CONFIG_ROOT=$tmp/cfg\"]" \
	hl_bundle "$tmp/b12" "$HOOK" "$PODNS" "$CAT" ".annotations = $SOCK_PROF"
if hl_run "$tmp/runc" "$tmp/b12" rnh-12; then vm_not_ok "nccl-profile on a kernel without RDMA: refused"; else
	vm_ok "nccl-profile on a kernel without RDMA: refused"; fi
vm_check "  names the cause: the kernel has no RDMA" vm_expect_contains "$HL_ERR" \
	"this node's kernel has no RDMA (no RDMA driver loaded: /sys/class/infiniband is absent)"
vm_check "  no hint at 'rdmans dev --all-netns', which fails there too" \
	bash -c '[[ $1 != *all-netns* ]]' sh "$HL_ERR"
# (runc shows the hook's stderr with its quotes escaped)
vm_check "  names the way out" vm_expect_contains "$HL_ERR" \
	"sockets\\\" to start it with NCCL over sockets (NCCL_IB_DISABLE=1"
vm_check "  nothing written" test ! -e "$tmp/b12/rootfs/etc"
HL_HOOK_ENV="[\"RDMANS_SYSFS_ROOT=$nordma\", \"RDMANS_CONFIG_ROOT=$tmp/cfg\"]" \
	hl_bundle "$tmp/b12" "$HOOK" "$PODNS" "$CAT" \
	'.annotations = {"rdmans.io/nccl-profile": "baidu-cce", "rdmans.io/nccl-conf": "sockets"}'
if hl_run "$tmp/runc" "$tmp/b12" rnh-12b; then vm_ok "nccl-conf sockets: runs"; else
	vm_not_ok "nccl-conf sockets: runs"; vm_diag "$HL_ERR"; fi
vm_check "  NCCL_IB_DISABLE=1" vm_expect_contains "$HL_OUT" $'\nNCCL_IB_DISABLE=1\n'
vm_check "  the profile's non-RDMA settings" vm_expect_contains "$HL_OUT" $'\nNCCL_SOCKET_IFNAME=eth0\n'
vm_check "  none of its NCCL_IB_* ones" vm_expect_eq "" "$(grep -E '^NCCL_IB_(TIMEOUT|QPS)' <<<"$HL_OUT")"
vm_check "  a warning in the file" vm_expect_contains "$HL_OUT" \
	"# warning: NCCL runs over sockets, slower than RDMA (annotation rdmans.io/nccl-conf): this node's kernel has no RDMA"
HL_HOOK_ENV="[\"RDMANS_SYSFS_ROOT=$tmp/sys-nodev\", \"RDMANS_CONFIG_ROOT=$tmp/cfg\"]" \
	hl_bundle "$tmp/b12" "$HOOK" "$PODNS" "$CAT" ".annotations = $SOCK_PROF"
hl_run "$tmp/runc" "$tmp/b12" rnh-12c
vm_check "RDMA loaded but no device in the pod: that cause, and the way out" vm_expect_contains "$HL_ERR" \
	"no RDMA device in this network namespace: NCCL would fall back to sockets ('rdmans dev --all-netns' shows where the devices are; 'rdmans move DEV TARGET' brings one here). Set the annotation rdmans.io/nccl-conf: "
hl_bundle "$tmp/b12" "$HOOK" "$PODNS" "$CAT" '.annotations = {"rdmans.io/nccl-profile": "roce", "rdmans.io/nccl-conf": "sockets"}'
hl_run "$tmp/runc" "$tmp/b12" rnh-12d
vm_check "nccl-conf sockets where RDMA is usable: RDMA as with on" vm_expect_contains "$HL_OUT" $'\nNCCL_IB_DISABLE=0\n'

# --- garbage on stdin ---------------------------------------------------------------------
hl_bundle "$tmp/b11" /bin/sh "$PODNS" "$CAT" \
	'.annotations = {"rdmans.io/nccl-profile": "roce"} | .hooks.createRuntime[0].args = ["sh", "-c", "echo \"{garbage\" | " + $realhook]' \
	--arg realhook "$HOOK"
if hl_run "$tmp/runc" "$tmp/b11" rnh-11; then vm_not_ok "garbage state: creation fails"; else vm_ok "garbage state: creation fails"; fi
vm_check "  the runtime shows our message" vm_expect_contains "$HL_ERR" "rdmans-hook: the input on stdin is not an OCI state"
vm_check "  no container left behind" vm_expect_eq "" "$(runc --root "$tmp/runc" list -q)"
vm_check "  no runc state left behind" test ! -e "$tmp/runc/rnh-11"
vm_check "  nothing written" test ! -e "$tmp/b11/rootfs/etc"
out=$(echo 'not json' | "$HOOK" 2>&1) && rc=0 || rc=$?
vm_check "garbage state, direct: exit 1, one line" sh -c "[ $rc = 1 ] && [ $(printf '%s\n' "$out" | wc -l) = 1 ]"
out=$(echo '{"id":"x","pid":0,"bundle":"/nonexistent"}' | "$HOOK" 2>&1) && rc=0 || rc=$?
vm_check "state without a process: exit 1, named" vm_expect_contains "$out" "container x: the OCI state says pid 0"
out=$(echo '{"id":"x","pid":1,"bundle":"/nonexistent"}' | "$HOOK" 2>&1) && rc=0 || rc=$?
vm_check "state with a missing bundle: exit 1, named" vm_expect_contains "$out" "cannot open the bundle's /nonexistent/config.json: No such file"

vm_check "the host's /etc/nccl.conf and profile.d were never touched" vm_expect_eq "$host_before" "$(host_files)"

# --- rdmans env against the same netns ------------------------------------------------------
export RDMANS_SYSFS_ROOT=$sys RDMANS_CONFIG_ROOT=$tmp/cfg
out=$("$R" env --netns "$NS" 2>&1)
vm_check "rdmans env --netns: env lines" vm_expect_eq $'NCCL_IB_DISABLE=0\nNCCL_IB_HCA==irdma0\nNCCL_IB_GID_INDEX=1\nNCCL_SOCKET_IFNAME=net1' "$out"
out=$("$R" env --netns "$NS" --format nccl-conf --explain 2>&1)
vm_check "rdmans env --explain: where each value came from" vm_expect_contains "$out" "# NCCL_IB_GID_INDEX: detected: RoCE v2 GID 1 of irdma0 port 1 holds 10.100.100.1/24 (net1)"
out=$("$R" env --netns "$NS" --format json --set NCCL_IB_TIMEOUT=23 2>&1)
vm_check "rdmans env json: value and origin" vm_expect_eq "23 the command line" "$(jq -r '.settings[] | select(.name == "NCCL_IB_TIMEOUT") | "\(.value) \(.origin)"' <<<"$out")"
mkdir -p "$tmp/cfg/etc/rdmans"
echo '{"profile": "scnet", "env": {"NCCL_IB_TC": null}}' >"$tmp/cfg/etc/rdmans/nccl.json"
out=$("$R" env --netns "$NS" --format json 2>/dev/null)
vm_check "the config file picks the profile" vm_expect_eq "scnet config $tmp/cfg/etc/rdmans/nccl.json" "$(jq -r '"\(.profile.name) \(.profile.origin)"' <<<"$out")"
vm_check "the config file's null removes the profile's TC" vm_expect_eq "null" "$(jq -c '.env.NCCL_IB_TC' <<<"$out")"
echo '{"profile": "scnet",' >"$tmp/cfg/etc/rdmans/nccl.json"
out=$("$R" env --netns "$NS" 2>&1) && rc=0 || rc=$?
vm_check "broken config file: exit 7, the file named" sh -c "[ $rc = 7 ] && echo '$out' | grep -q 'nccl.json is not valid JSON'"
rm -f "$tmp/cfg/etc/rdmans/nccl.json"
printf 'NCCL_DEBUG=WARN\nNCCL_IB_HCA=mlx5\n' >"$tmp/image.conf"
out=$("$R" env --netns "$NS" --format nccl-conf --merge "$tmp/image.conf" 2>&1)
vm_check "rdmans env --merge: the image's line commented, ours set" vm_expect_eq $'#rdmans-overridden:NCCL_IB_HCA=mlx5\nNCCL_IB_HCA==irdma0' "$(grep -x -e '#rdmans-overridden:NCCL_IB_HCA=mlx5' -e 'NCCL_IB_HCA==irdma0' <<<"$out" | sort)"
ip -n "$NS" link set net1 down
echo "1: DOWN" >"$sys/class/infiniband/irdma0/ports/1/state"
out=$("$R" env --netns "$NS" 2>&1) && rc=0 || rc=$?
vm_check "port down: exit 3, says why" sh -c "[ $rc = 3 ] && echo '$out' | grep -q 'irdma0 port 1: port state is DOWN'"
unset RDMANS_SYSFS_ROOT RDMANS_CONFIG_ROOT

# --- IPv6-only and dual-stack pods, and the image's NCCL version ---------------------------
# A second pod netns: net1 holds fd00:100::1/64 (and fe80:: link-local); irdma6's table
# is the kernel's for it: 0/1 link-local v1/v2, 2/3 the global address v1/v2.
NS6=rnh-pod6
ip netns del "$NS6" 2>/dev/null
ip netns add "$NS6" || vm_fail "ip netns add $NS6"
ip link add rnh-h6 type veth peer name net1 netns "$NS6" || vm_fail "veth"
ip -n "$NS6" addr add fd00:100::1/64 dev net1 nodad
ip -n "$NS6" link set net1 up
sys6=$tmp/sys6
mkdir -p "$sys6/class/net/lo"
hl_fake_gid "$sys6" irdma6 net1 0 "fe80:0000:0000:0000:b696:91ff:feec:a458" "IB/RoCE v1"
hl_fake_gid "$sys6" irdma6 net1 1 "fe80:0000:0000:0000:b696:91ff:feec:a458" "RoCE v2"
hl_fake_gid "$sys6" irdma6 net1 2 "fd00:0100:0000:0000:0000:0000:0000:0001" "IB/RoCE v1"
hl_fake_gid "$sys6" irdma6 net1 3 "fd00:0100:0000:0000:0000:0000:0000:0001" "RoCE v2"
out=$(RDMANS_SYSFS_ROOT=$sys6 "$R" env --netns "$NS6" --format nccl-conf --explain 2>&1)
vm_check "IPv6-only: --explain says the family and why" vm_expect_contains "$out" "# address family IPv6: IPv6-only"
vm_check "IPv6-only: the RoCE v2 GID of the global address" vm_expect_contains "$out" "# irdma6 port 1: used, netdev net1, RoCE v2 GID 3 holds fd00:100::1/64"
vm_check "IPv6-only: NCCL_IB_GID_INDEX=3" vm_expect_contains "$out" $'\nNCCL_IB_GID_INDEX=3\n'
vm_check "IPv6-only: NCCL_IB_ADDR_FAMILY=AF_INET6" vm_expect_contains "$out" $'\nNCCL_IB_ADDR_FAMILY=AF_INET6\n'
vm_check "IPv6-only: bootstrap over IPv6" vm_expect_contains "$out" $'\nNCCL_SOCKET_FAMILY=AF_INET6'
vm_check "IPv6-only: --netns names no image to find NCCL in" vm_expect_contains "$out" "# NCCL version unknown (not looked for: --netns names no image"

# the hook finds the image's NCCL and says so
HL_HOOK_ENV="[\"RDMANS_SYSFS_ROOT=$sys6\", \"RDMANS_CONFIG_ROOT=$tmp/cfg\"]" \
	hl_bundle "$tmp/b6v" "$HOOK" "/var/run/netns/$NS6" "$CAT" ".annotations = $PROF"
mkdir -p "$tmp/b6v/rootfs/usr/lib/x86_64-linux-gnu"
: >"$tmp/b6v/rootfs/usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5"
hl_run "$tmp/runc" "$tmp/b6v" rnh-6v || vm_diag "$HL_ERR"
vm_check "hook: the image's NCCL version and the rule it follows" vm_expect_contains "$HL_OUT" "# NCCL 2.21.5, seen in the image: /usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5: NCCL 2.21-2.26.1 picks"
vm_check "hook: IPv6-only pod, GID 3 and AF_INET6" sh -c "grep -qx 'NCCL_IB_GID_INDEX=3' <<'E'
$HL_OUT
E
grep -qx 'NCCL_IB_ADDR_FAMILY=AF_INET6' <<'E'
$HL_OUT
E"
printf '%s\n' "$HL_OUT" >"$tmp/ipv6-nccl.conf"
[ -z "${RDMANS_KEEP_IPV6_CONF:-}" ] || cp "$tmp/ipv6-nccl.conf" "$RDMANS_KEEP_IPV6_CONF"

# dual-stack: IPv4 by default; the annotation's "family" picks IPv6
ip -n "$NS6" addr add 10.100.106.1/24 dev net1
hl_fake_gid "$sys6" irdma6 net1 4 "0000:0000:0000:0000:0000:ffff:0a64:6a01" "IB/RoCE v1"
hl_fake_gid "$sys6" irdma6 net1 5 "0000:0000:0000:0000:0000:ffff:0a64:6a01" "RoCE v2"
out=$(RDMANS_SYSFS_ROOT=$sys6 "$R" env --netns "$NS6" --format json 2>&1)
vm_check "dual-stack: IPv4 by default, GID 5" vm_expect_eq "ipv4 5" "$(jq -r '"\(.family.name) \(.env.NCCL_IB_GID_INDEX)"' <<<"$out")"
HL_HOOK_ENV="[\"RDMANS_SYSFS_ROOT=$sys6\", \"RDMANS_CONFIG_ROOT=$tmp/cfg\"]" \
	hl_bundle "$tmp/b6d" "$HOOK" "/var/run/netns/$NS6" "$CAT" '.annotations = {"rdmans.io/nccl": "{\"family\": \"ipv6\"}"}'
hl_run "$tmp/runc" "$tmp/b6d" rnh-6d || vm_diag "$HL_ERR"
vm_check "dual-stack + family ipv6 annotation: GID 3" vm_expect_eq "NCCL_IB_GID_INDEX=3" "$(grep '^NCCL_IB_GID_INDEX=' <<<"$HL_OUT")"
vm_check "  and says who asked" vm_expect_contains "$HL_OUT" "# address family IPv6: annotation rdmans.io/nccl asks for IPv6"
ip netns del "$NS6"

vm_done
