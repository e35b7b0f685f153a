#!/bin/bash
# The node tree on a host with no libc and no library at all: a release build
# with -Dnode_bundle=true (as deploy/Containerfile builds it), installed by
# deploy/node-install.sh into a root that holds only busybox-static. Inside
# it (chroot), as the kubelet and a runtime run them: both CNI plugins answer
# VERSION, rdma-netns does ADD/CHECK/DEL of a veth with rdma-netns-ipam's
# local store, rdma-netns-ipam reaches a real etcd on loopback (libcurl from
# the tree), rdmans-hook rejects bad input with its message. Root; veths and
# namespaces named rnn*.
set -u
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
. "$here/node-lib.sh"
tap_fail_unless_root "chroot, namespaces"
: "${RDMANS_BUILD_DIR:?}"
tmp=$(mktemp -d /tmp/rnn.XXXXXX)
root=$tmp/host
image=$tmp/image

cleanup() {
	ip netns del rnn-pod 2>/dev/null
	ip link del rnn0 2>/dev/null
	ip link del rnn0p 2>/dev/null
	rm -rf "$tmp"
}
cleanup_all() {
	cleanup
	ipam_cleanup
}
trap cleanup EXIT

# --- the release build, installed as the image holds it --------------------------------
node_release_install

node_root "$root"
install_node() {
	RDMANS_HOST_ROOT=$root RDMANS_NODE_TREE=$tree RDMANS_CLI=$image/usr/sbin/rdmans \
		RDMANS_HOOK_JSON=$image/usr/share/containers/oci/hooks.d/rdmans-hook.json \
		sh "$src/deploy/node-install.sh"
}
mkdir -p "$root/etc/containers/oci/hooks.d"
vm_check "node-install.sh installs into the bare root" install_node
libdir=$(cd "$tree" && ls -d lib-*)

# --- nothing from the host -----------------------------------------------------------------
vm_check "the root has no libc, loader or library directory outside /opt/rdmans" bash -c '
	cd "$1" && found=$(find . \( -name "libc.so*" -o -name "ld-linux*" -o -name "*.so*" \) ! -path "./opt/rdmans/*")
	[ -z "$found" ] && [ ! -e lib ] && [ ! -e lib64 ] && [ ! -e usr ] || { echo "found: $found $(ls)"; exit 1; }' _ "$root"
for b in opt/cni/bin/rdma-netns opt/cni/bin/rdma-netns-ipam opt/rdmans/bin/rdmans-hook opt/rdmans/bin/rdmans; do
	vm_check "$b asks for the tree's loader /opt/rdmans/$libdir" vm_expect_eq \
		"/opt/rdmans/$libdir/ld-linux-x86-64.so.2" "$(node_elf_interp "$root/$b")" "interpreter"
done
vm_check "the hooks.d JSON names the installed hook" grep -q '"path": "/opt/rdmans/bin/rdmans-hook"' \
	"$root/etc/containers/oci/hooks.d/rdmans-hook.json"

# --- VERSION, the hook, the CLI ---------------------------------------------------------------
out=$(in_root "$root" CNI_COMMAND=VERSION -- /opt/cni/bin/rdma-netns </dev/null 2>&1)
vm_check "rdma-netns answers VERSION in the bare root" vm_expect_eq \
	'["0.3.0","0.3.1","0.4.0","1.0.0","1.1.0"]' "$(jq -c .supportedVersions <<<"$out" 2>&1)" "$out"
out=$(in_root "$root" CNI_COMMAND=VERSION -- /opt/cni/bin/rdma-netns-ipam </dev/null 2>&1)
vm_check "rdma-netns-ipam answers VERSION in the bare root" vm_expect_eq \
	'1.1.0' "$(jq -r .cniVersion <<<"$out" 2>&1)" "$out"
rc=0
out=$(in_root "$root" -- /opt/rdmans/bin/rdmans-hook <<<'garbage' 2>&1) || rc=$?
vm_check "rdmans-hook rejects bad input with its message" bash -c '
	[ "$1" != 0 ] && [[ $2 == *"is not an OCI state"* ]] || { echo "exit $1: $2"; exit 1; }' _ "$rc" "$out"
out=$(in_root "$root" -- /opt/rdmans/bin/rdmans --version 2>&1)
vm_check "rdmans --version in the bare root" vm_expect_eq "rdmans $(meson introspect --projectinfo "$build" | jq -r .version)" "$out"

# --- ADD/CHECK/DEL of a veth, IPAM delegated to rdma-netns-ipam (local store) -------------
ip link add rnn0 type veth peer name rnn0p
ip netns add rnn-pod
conf='{"cniVersion":"1.0.0","name":"rnnode","type":"rdma-netns","device":"rnn0","requireRdma":false,
 "ipam":{"type":"rdma-netns-ipam","range":"10.61.0.0/24","gateway":"10.61.0.1"}}'
cni() { # cni CMD: rdma-netns in the root, as the kubelet runs it
	in_root "$root" CNI_COMMAND="$1" CNI_CONTAINERID=rnn-c1 CNI_NETNS=/var/run/netns/rnn-pod \
		CNI_IFNAME=net1 CNI_PATH=/opt/cni/bin "CNI_ARGS=K8S_POD_NAMESPACE=default;K8S_POD_NAME=rnn" \
		-- /opt/cni/bin/rdma-netns <<<"$conf"
}
out=$(cni ADD 2>&1)
addr=$(jq -r '.ips[0].address' <<<"$out" 2>/dev/null)
vm_check "ADD moves the veth into the pod with an address from rdma-netns-ipam" \
	bash -c '[[ $1 =~ ^10\.61\.0\.[0-9]+/24$ ]] || { echo "$2"; exit 1; }' _ "$addr" "$out"
vm_check "... net1 is in the pod with that address" bash -c 'ip -n rnn-pod -o addr show net1 | grep -q "inet $1 "' _ "$addr"
vm_check "... and rnn0 is gone from the host" bash -c '! ip link show rnn0 2>/dev/null'
vm_check "... the local store in the root holds the address record" vm_expect_eq 1 \
	"$(find "$root/var/lib/cni/rdma-netns-ipam" -type f -name "${addr%/*}" 2>/dev/null | wc -l)" "records"
vm_check "CHECK succeeds" cni CHECK
vm_check "DEL succeeds" cni DEL
vm_check "... rnn0 is back on the host" ip link show rnn0
vm_check "... the pod holds no net1" bash -c '! ip -n rnn-pod link show net1 2>/dev/null'
vm_check "... and the store neither the address nor the attachment" vm_expect_eq 0 \
	"$(find "$root/var/lib/cni/rdma-netns-ipam" -type f \( -name "${addr%/*}" -o -path "*/attachments/*" \) | wc -l)" "records"

# --- rdma-netns-ipam and a real etcd on loopback --------------------------------------------
IPAM=$root/opt/cni/bin/rdma-netns-ipam RDMANS=$image/usr/sbin/rdmans
. "$here/../netns/ipam-lib.sh"
trap cleanup_all EXIT
etcd_cluster 1
econf='{"cniVersion":"1.0.0","name":"rnn-etcd","type":"rdma-netns","ipam":{"type":"rdma-netns-ipam",
 "range":"10.62.0.0/24","store":"etcd","node_name":"rnn-node","etcd":{"endpoints":["'"${ETCD_CLIENT[0]}"'"],"key_prefix":"/rnn"}}}'
ipam() {
	in_root "$root" CNI_COMMAND="$1" CNI_CONTAINERID=rnn-e1 CNI_NETNS=/var/run/netns/none CNI_IFNAME=net1 \
		CNI_PATH=/opt/cni/bin -- /opt/cni/bin/rdma-netns-ipam <<<"$econf"
}
out=$(ipam ADD 2>&1)
vm_check "rdma-netns-ipam ADD over etcd in the bare root" bash -c \
	'[[ $(jq -r ".ips[0].address" <<<"$1") =~ ^10\.62\.0\.[0-9]+/24$ ]] || { echo "$1"; exit 1; }' _ "$out"
vm_check "... etcd holds its key" vm_expect_eq 1 \
	"$(etcdctl_ 0 get --prefix /rnn/ --keys-only | grep -c addr/)" "keys"
vm_check "... CHECK over etcd" ipam CHECK
vm_check "... DEL over etcd" ipam DEL
vm_check "... and etcd holds no key" vm_expect_eq 0 \
	"$(etcdctl_ 0 get --prefix /rnn/ --keys-only | grep -c addr/)" "keys"

# --- an upgrade: a new library set replaces the old one ------------------------------------
mkdir -p "$root/opt/rdmans/lib-000000000000"
vm_check "a second install succeeds" install_node
vm_check "... removes library sets no binary names" bash -c '[ ! -e "$1/opt/rdmans/lib-000000000000" ] && [ -d "$1/opt/rdmans/$2" ]' _ "$root" "$libdir"
out=$(in_root "$root" CNI_COMMAND=VERSION -- /opt/cni/bin/rdma-netns </dev/null 2>&1)
vm_check "... and rdma-netns still answers VERSION" vm_expect_contains "$out" '"supportedVersions"'
vm_done
