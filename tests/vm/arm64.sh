#!/bin/sh
# Guest script for the arm64 world (tests/vm/prepare.sh): Debian's arm64
# kernel under qemu-system-aarch64, a root of busybox alone. The arm64 node
# tree (tools/cross-build.sh arm64, $RDMANS_NODE_TREE) is installed there by
# deploy/node-install.sh as the DaemonSet's init container does it, and runs
# with its own loader and libraries: the CLI switches ib_core to exclusive
# mode, rdma-netns moves a simulated HCA (simhca built for this kernel,
# $RDMANS_SIMHCA_KO) and its netdev into a netns with an address from
# rdma-netns-ipam, CHECK, DEL back; rdmans-hook moves a device into a
# container's netns and writes its nccl.conf, given the OCI state on stdin as
# a runtime gives it. POSIX sh: there is no bash here.
set -u
. "$RDMANS_VM_LIB"
src=$(cd "$(dirname "$RDMANS_VM_LIB")/../.." && pwd)
tree=${RDMANS_NODE_TREE:-}
[ -f "$tree/machine" ] || vm_fail "no arm64 node tree at RDMANS_NODE_TREE='$tree' (tools/cross-build.sh arm64 makes it)"
R=/opt/rdmans/bin/rdmans

vm_check "an aarch64 machine running Debian's arm64 kernel ($(uname -r))" \
	sh -c '[ "$(uname -m)" = aarch64 ] && case "$(uname -r)" in *-arm64) ;; *) exit 1 ;; esac'
# the root's own files: the repository and build trees shown in it are other mounts
vm_check "the root holds busybox alone: no libc, no loader, no library, no /usr" sh -c '
	found=$(find / -xdev \( -name "*.so" -o -name "*.so.*" -o -name "ld-linux*" \) 2>/dev/null)
	[ -z "$found" ] && [ ! -e /usr ] && [ ! -e /lib64 ] || { echo "found: $found $(ls /)"; exit 1; }'

# --- the node tree, installed as on a node -------------------------------------------------
mkdir -p /etc/containers/oci/hooks.d /opt/cni/bin
# the hooks.d JSON of the same install (DESTDIR/usr/share beside DESTDIR/usr/local/lib/rdmans/node-*)
hook_json=${tree%/usr/local/lib/rdmans/*}/usr/share/containers/oci/hooks.d/rdmans-hook.json
vm_check "deploy/node-install.sh installs the arm64 tree (node-$(cat "$tree/machine"))" env \
	RDMANS_HOST_ROOT=/ RDMANS_NODE_TREE="$tree" RDMANS_CLI=$R RDMANS_HOOK_JSON="$hook_json" \
	sh "$src/deploy/node-install.sh"
vm_check "rdmans --version runs from /opt/rdmans" sh -c "$R --version | grep -q '^rdmans [0-9]'"
vm_check "rdma-netns answers VERSION" sh -c \
	'CNI_COMMAND=VERSION /opt/cni/bin/rdma-netns </dev/null | grep -q "\"supportedVersions\":\[.*\"1.1.0\"\]"'
vm_check "rdma-netns-ipam answers VERSION" sh -c \
	'CNI_COMMAND=VERSION /opt/cni/bin/rdma-netns-ipam </dev/null | grep -q "\"cniVersion\":\"1.1.0\""'
vm_check "the hooks.d JSON names the installed hook" \
	grep -q '"path": "/opt/rdmans/bin/rdmans-hook"' /etc/containers/oci/hooks.d/rdmans-hook.json

# --- RDMA: the kernel's ib_core, simhca on a dummy netdev ----------------------------------------
modprobe ib_core && modprobe ib_uverbs && modprobe dummy || vm_fail "modprobe ib_core ib_uverbs dummy"
vm_check "rdmans system set netns exclusive" $R system set netns exclusive
vm_check "rdmans system: exclusive" sh -c "$R system | grep -q exclusive"
vm_load_simhca
ip link add nic0 type dummy && ip link set nic0 up ||
	vm_fail "a dummy netdev nic0"
dev=$(vm_simhca_new "mlx5_%d" nic0) || vm_fail "simhca on nic0"
# dev_on DEV NETDEV [nsenter args]: rdmans dev lists DEV with NETDEV (its output shown when not)
dev_on() {
	out=$(${3:-} $R dev 2>&1)
	echo "$out" | grep -A1 "^[0-9]*: $1:" | grep -q "netdev $2\$" || { echo "$out"; return 1; }
}
vm_check "rdmans dev: $dev on nic0" dev_on "$dev" nic0

# --- rdma-netns main mode: ADD, CHECK, DEL ------------------------------------------------------
mkdir -p /run/netns
touch /run/netns/pod && unshare --net=/run/netns/pod true || vm_fail "a netns at /run/netns/pod"
conf='{"cniVersion":"1.0.0","name":"a64","type":"rdma-netns","rdmaDevice":"'$dev'",
 "ipam":{"type":"rdma-netns-ipam","range":"10.62.0.0/24","gateway":"10.62.0.1"}}'
cni() { # cni CMD [PREVRESULT]: rdma-netns as the kubelet's runtime runs it
	{ if [ -n "${2:-}" ]; then echo "${conf%\}}, \"prevResult\": $2}"; else echo "$conf"; fi; } | env CNI_COMMAND="$1" CNI_CONTAINERID=a64-c1 CNI_NETNS=/run/netns/pod CNI_IFNAME=net1 \
		CNI_PATH=/opt/cni/bin CNI_ARGS="K8S_POD_NAMESPACE=default;K8S_POD_NAME=a64" /opt/cni/bin/rdma-netns
}
in_pod() { nsenter --net=/run/netns/pod "$@"; }
out=$(cni ADD 2>/tmp/add.err)
addr=$(echo "$out" | tr -d ' \n' | sed -n 's/.*"address":"\(10\.62\.0\.[0-9]*\)\/24".*/\1/p')
vm_check "ADD: a result with an address from rdma-netns-ipam ($addr)" sh -c '[ -n "$1" ] || { echo "$2"; exit 1; }' _ "$addr" "$out $(cat /tmp/add.err)"
vm_check "... $dev is in the pod, on net1" dev_on "$dev" net1 "nsenter --net=/run/netns/pod"
vm_check "... and no longer on the host" sh -c "! $R dev | grep -q '$dev'"
vm_check "... its netdev is the pod's net1 with that address" sh -c \
	"nsenter --net=/run/netns/pod ip -o addr show net1 | grep -q 'inet $addr/24'"
vm_check "... nic0 is gone from the host" sh -c '! ip link show nic0 2>/dev/null'
vm_check "... rdma-netns-ipam's local store holds the address" sh -c \
	"[ \$(find /var/lib/cni/rdma-netns-ipam -type f -name '$addr' | wc -l) = 1 ]"
vm_check "rdmans env --netns pod: NCCL_IB_HCA==$dev and a GID index" sh -c \
	"$R env --netns pod >/tmp/env.out 2>&1; grep -qx 'NCCL_IB_HCA==$dev' /tmp/env.out &&
	grep -q '^NCCL_IB_GID_INDEX=[0-9]' /tmp/env.out || { cat /tmp/env.out; exit 1; }"
vm_check "CHECK succeeds" cni CHECK "$out"
vm_check "DEL succeeds" cni DEL
vm_check "... $dev is back on the host, on nic0" dev_on "$dev" nic0
vm_check "... nic0 is back on the host, without the pod's address" sh -c "ip -o link show nic0 && ! ip -o addr show nic0 | grep -q 'inet '"
vm_check "... the pod holds no net1" sh -c '! nsenter --net=/run/netns/pod ip link show net1 2>/dev/null'
vm_check "... the store no longer holds the address" sh -c \
	"[ \$(find /var/lib/cni/rdma-netns-ipam -type f -name '$addr' | wc -l) = 0 ]"
vm_check "DEL again succeeds" cni DEL

# --- rdmans-hook: the OCI state on stdin, as runc's createRuntime gives it ------------------------
touch /run/netns/pod2 && unshare --net=/run/netns/pod2 true || vm_fail "a netns at /run/netns/pod2"
nsenter --net=/run/netns/pod2 sh -c 'ip link add net1 type dummy && ip addr add 10.63.0.2/24 dev net1 &&
	ip link set net1 up && ip link set lo up' || vm_fail "pod2's net1"
dev2=$(nsenter --net=/run/netns/pod2 sh -c '. "$RDMANS_VM_LIB"; vm_simhca_new "mlx5_%d" net1') ||
	vm_fail "simhca on pod2's net1"
b=/tmp/bundle
mkdir -p $b/rootfs/etc
echo '{"ociVersion":"1.0.2","process":{"args":["sh"],"cwd":"/"},"root":{"path":"rootfs"},
 "linux":{"namespaces":[{"type":"network","path":"/run/netns/pod2"}]},
 "annotations":{"rdmans.io/devices":"'$dev2'"}}' >$b/config.json
# the container's process: its PID is written from inside pod2, so once the
# file is there the process is in pod2 (the hook reads /proc/PID/ns/net)
nsenter --net=/run/netns/pod2 sh -c 'echo $$ >/tmp/c.pid.new && mv /tmp/c.pid.new /tmp/c.pid && exec sleep 600' &
vm_poll 60 test -s /tmp/c.pid || vm_fail "the container's process did not start in pod2"
pid=$(cat /tmp/c.pid)
state='{"ociVersion":"1.0.2","id":"a64c","status":"creating","pid":'$pid',"bundle":"'$b'","annotations":{"rdmans.io/devices":"'$dev2'"}}'
vm_check "rdmans-hook (createRuntime) succeeds" sh -c "echo '$state' | /opt/rdmans/bin/rdmans-hook"
vm_check "... $dev2 is in the container's netns, on net1" dev_on "$dev2" net1 "nsenter --net=/run/netns/pod2"
vm_check "... nccl.conf: NCCL_IB_HCA==$dev2" grep -qx "NCCL_IB_HCA==$dev2" $b/rootfs/etc/nccl.conf
vm_check "... nccl.conf: the GID index of 10.63.0.2 and NCCL_SOCKET_IFNAME=net1" sh -c "
	grep -q '^NCCL_IB_GID_INDEX=[0-9]' $b/rootfs/etc/nccl.conf && grep -qx NCCL_SOCKET_IFNAME=net1 $b/rootfs/etc/nccl.conf &&
	grep -q 'holds 10.63.0.2/24 (net1)' $b/rootfs/etc/nccl.conf || { cat $b/rootfs/etc/nccl.conf; exit 1; }"
vm_check "rdmans-hook rejects bad input with its message" sh -c \
	'! echo garbage | /opt/rdmans/bin/rdmans-hook 2>/tmp/hook.err && grep -q "is not an OCI state" /tmp/hook.err'
kill $pid
vm_done
