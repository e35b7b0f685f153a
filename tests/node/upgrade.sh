#!/bin/bash
# Upgrade and uninstall of what the DaemonSet puts on a node, in a host root
# that holds only busybox-static (as node.sh builds it; the host kernel has no
# RDMA, so a pod is a netns and its netdev a veth).
#   Upgrade: node tree v1 installed, a pod attached through its rdma-netns, then
#   tree v2 (the same binaries against a library directory of another ID, as a
#   build with other libraries gets) installed over it while the pod runs: the
#   pod's netdev, address and state are untouched, v1's libraries go, and CHECK
#   and DEL through v2's plugins succeed and leave nothing.
#   Uninstall: deploy/node-uninstall.sh as uninstall.yaml's init container runs
#   it: busybox sh in a container root with the host root at /host. It refuses
#   while a pod holds an attachment (and removes nothing), removes every path
#   the install and node-kubeconfig.sh made (a find of the root before install
#   and after uninstall is identical; IPAM records and CNI state stay unless
#   asked), one line each; a second run removes nothing; an operator's own
#   hooks.d JSON, CNI plugin and flat file stay; RDMANS_UNINSTALL_FORCE=true
#   goes on past a pod, whose netdev a reinstall's DEL brings home.
# Root; veths and namespaces named rnu*.
set -u
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
. "$here/node-lib.sh"
tap_fail_unless_root "chroot, namespaces"
: "${RDMANS_BUILD_DIR:?}"
command -v patchelf >/dev/null || vm_fail "patchelf is not installed (tools/install-deps.sh)"
tmp=$(mktemp -d /tmp/rnu.XXXXXX)
ctr=$tmp/ctr   # uninstall.yaml's init container: busybox, the script at the image's path
root=$ctr/host # the node's /, mounted at /host in that container
image=$tmp/image

cleanup() {
	ip netns del rnu-pod 2>/dev/null
	ip link del rnu0 2>/dev/null
	ip link del rnu0p 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

# --- the release build, as the image holds it -------------------------------------------
node_release_install
prefix=$(cat "$tree/prefix")
lib1=$(cd "$tree" && ls -d lib-*)

# v2: v1's tree with its libraries under another ID, the binaries patched to it
tree2=$tmp/tree2
lib2=lib-$(printf '%s' "$lib1-v2" | sha256sum | cut -c1-12)
cp -a "$tree" "$tree2" && mv "$tree2/$lib1" "$tree2/$lib2" || vm_fail "cannot copy the node tree"
for b in "$tree2"/bin/*; do
	patchelf --set-interpreter "$prefix/$lib2/ld-linux-x86-64.so.2" --force-rpath --set-rpath "$prefix/$lib2" "$b" ||
		vm_fail "patchelf $b failed"
done

# The image's rdmans, but for `cdi generate`: with no RDMA device here it writes
# no spec, so this writes the one it would (naming the hook), for the uninstall
# to find. `system set netns exclusive --persist` is the real one (no ib_core
# here: it writes modprobe.d and applies nothing, as tests/netns/cli.sh shows).
cli=$tmp/rdmans-cli
cat >"$cli" <<EOF
#!/bin/sh
if [ "\$1" = cdi ]; then
	[ "\$3" = --hook ] && [ "\$5" = --output ] || exit 2
	printf '{"cdiVersion":"0.6.0","kind":"rdmans.io/rdma","devices":[],"containerEdits":{"hooks":[{"hookName":"createRuntime","path":"%s"}]}}\n' "\$4" >"\$6"
	exit
fi
exec "$image/usr/sbin/rdmans" "\$@"
EOF
chmod 0755 "$cli"

# --- the host: busybox only, what a node with a container runtime has, and an operator's files
node_root "$ctr"
# the image has coreutils, sed, grep and find: here busybox's, each under its name
for a in $(/bin/busybox --list); do [ -e "$ctr/bin/$a" ] || ln -s busybox "$ctr/bin/$a"; done
mkdir -p "$ctr/usr/lib/rdmans/node"
cp "$src/deploy/node-uninstall.sh" "$ctr/usr/lib/rdmans/node-uninstall.sh"
cp "$tree/prefix" "$ctr/usr/lib/rdmans/node/prefix"
node_root "$root"
mkdir -p "$root/etc/containers/oci/hooks.d" "$root/usr/share/containers/oci/hooks.d" \
	"$root/etc/cni/net.d" "$root/var/lib/cni" "$root/opt/cni/bin" \
	"$root/etc/kubernetes/node-feature-discovery/features.d"
printf '#!/bin/sh\necho the operator'"'"'s plugin\n' >"$root/opt/cni/bin/bridge"
chmod 0755 "$root/opt/cni/bin/bridge"
printf '{"version": "1.0.0", "hook": {"path": "/usr/bin/nvidia-ctk"}, "when": {"always": true}, "stages": ["prestart"]}\n' \
	>"$root/etc/containers/oci/hooks.d/oci-nvidia-hook.json"
# initramfs-tools on the host, as Debian has it: its lister names ib_core in the
# running kernel's initrd (unless /boot/.no-ib-core), its rebuild records its arguments
mkdir -p "$root/boot" "$root/usr/sbin" "$root/var/log"
printf '#!/bin/sh\n[ "$1" = /boot/initrd.img-%s ] || exit 1\necho usr/lib/modules/%s/kernel/drivers/net/veth.ko\n[ -e /boot/.no-ib-core ] || echo usr/lib/modules/%s/kernel/drivers/infiniband/core/ib_core.ko\n' \
	"$(uname -r)" "$(uname -r)" "$(uname -r)" >"$root/usr/sbin/lsinitramfs"
printf '#!/bin/sh\necho "$*" >/var/log/update-initramfs.args\n' >"$root/usr/sbin/update-initramfs"
chmod 0755 "$root/usr/sbin/lsinitramfs" "$root/usr/sbin/update-initramfs"

install_node() { # install_node TREE [VAR=VALUE...]: node-install.sh as node.sh runs it
	local t=$1
	shift
	env "$@" RDMANS_HOST_ROOT="$root" RDMANS_NODE_TREE="$t" RDMANS_CLI="$cli" \
		RDMANS_HOOK_JSON="$image/usr/share/containers/oci/hooks.d/rdmans-hook.json" \
		sh "$src/deploy/node-install.sh"
}
sa=$tmp/sa
mkdir -p "$sa" && echo "the cluster's CA" >"$sa/ca.crt" && echo "a token" >"$sa/token"
kubeconfig() { # the ipam-kubeconfig container's first round
	env KUBERNETES_SERVICE_HOST=10.96.0.1 RDMANS_SA_DIR="$sa" RDMANS_HOST_ROOT="$root" \
		RDMANS_IPAM_FLAT_CONF=true sh "$src/deploy/node-kubeconfig.sh" --once
}
uninstall() { # uninstall [VAR=VALUE...]: in the container, busybox sh, the host at /host
	in_root "$ctr" "$@" -- /bin/sh /usr/lib/rdmans/node-uninstall.sh
}
# snap: every path under the host root, with each file's checksum and mode, sorted
snap() {
	(cd "$root" && find . -mindepth 1 | while IFS= read -r p; do
		if [ -L "$p" ]; then
			echo "$p -> $(readlink "$p")"
		elif [ -f "$p" ]; then
			echo "$p $(stat -c %a "$p") $(sha256sum <"$p" | cut -c1-16)"
		else
			echo "$p/"
		fi
	done | LC_ALL=C sort)
}
# paths SNAP: its paths alone, as the uninstaller names them (/host/...)
paths() { sed 's/ .*//; s|/$||; s|^\.|/host|' <<<"$1" | LC_ALL=C sort; }
# no_state SNAP: without rdma-netns's state and rdma-netns-ipam's store
no_state() { grep -v '^\./var/lib/cni/rdma-netns\(-ipam\)\?[/ ]' <<<"$1"; }
# removed: the paths the last run's stdout says it removed, sorted
removed() { sed -n 's/^removed //p' <<<"$OUT" | LC_ALL=C sort; }
# minus A B: the lines of A that B lacks
minus() { LC_ALL=C comm -23 <(LC_ALL=C sort <<<"$1") <(LC_ALL=C sort <<<"$2"); }

# --- a pod attached through v1 -------------------------------------------------------------
before=$(snap)
vm_check "node-install.sh installs tree v1 ($lib1), RDMANS_PERSIST_EXCLUSIVE=true, RDMANS_REBUILD_INITRAMFS=true" \
	install_node "$tree" RDMANS_PERSIST_EXCLUSIVE=true RDMANS_REBUILD_INITRAMFS=true RDMANS_HOST_FULL_ROOT="$root"
install_out=$VM_OUT
vm_check "... finding ib_core in the initrd, it rebuilds it in the host's root" vm_expect_eq \
	"-u -k $(uname -r)" "$(cat "$root/var/log/update-initramfs.args" 2>&1)" "update-initramfs's arguments"
vm_check "... saying so" vm_expect_contains "$install_out" \
	"ib_core is in /boot/initrd.img-$(uname -r): update-initramfs -u -k $(uname -r) (in the host's root)"
rm -f "$root/var/log/update-initramfs.args"
vm_check "node-kubeconfig.sh writes its files (flat file too)" kubeconfig
list=$root$prefix/installed.list
vm_check "installed.list records the files outside the tree, with their checksums" bash -c '
	for p in /opt/cni/bin/rdma-netns /opt/cni/bin/rdma-netns-ipam /etc/containers/oci/hooks.d/rdmans-hook.json \
		/usr/share/containers/oci/hooks.d/rdmans-hook.json /etc/cdi/rdmans.json /etc/modprobe.d/rdmans-ib_core.conf; do
		grep -qx "file $(sha256sum <"$2$p" | cut -d" " -f1) $p" "$1" || { cat "$1"; echo "no line for $p"; exit 1; }
	done' _ "$list" "$root"
vm_check "Node Feature Discovery's features.d gets the node's rdmans features" vm_expect_eq \
	"rdmans.feature.node.kubernetes.io/netns-mode-next-boot=exclusive
rdmans.feature.node.kubernetes.io/rdma-devices=0" \
	"$(grep -v '^#' "$root/etc/kubernetes/node-feature-discovery/features.d/rdmans" 2>&1)" "features.d/rdmans"
vm_check "... recorded in installed.list" grep -q " /etc/kubernetes/node-feature-discovery/features.d/rdmans$" "$list"
vm_check "... and the directories it created, not those that were there" vm_expect_eq \
	"/etc/cdi /etc/modprobe.d /opt/rdmans /opt/rdmans/bin" "$(sed -n 's/^dir - //p' "$list" | sort | tr '\n' ' ' | sed 's/ $//')" "dirs"

ip link add rnu0 type veth peer name rnu0p
ip netns add rnu-pod
conf='{"cniVersion":"1.0.0","name":"rnunode","type":"rdma-netns","device":"rnu0","requireRdma":false,
 "ipam":{"type":"rdma-netns-ipam","store":"local","range":"10.63.0.0/24","gateway":"10.63.0.1"}}'
cni() { # cni CMD: the installed rdma-netns in the root, as the kubelet runs it
	in_root "$root" CNI_COMMAND="$1" CNI_CONTAINERID=rnu-c1 CNI_NETNS=/var/run/netns/rnu-pod \
		CNI_IFNAME=net1 CNI_PATH=/opt/cni/bin "CNI_ARGS=K8S_POD_NAMESPACE=default;K8S_POD_NAME=rnu" \
		-- /opt/cni/bin/rdma-netns <<<"$conf"
}
pod_view() { ip -n rnu-pod -o addr show net1 2>&1; ip -n rnu-pod -o link show net1 2>&1 | vm_link_view; }
statef=$root/var/lib/cni/rdma-netns/rnunode:rnu-c1:net1
out=$(cni ADD 2>&1)
addr=$(jq -r '.ips[0].address' <<<"$out" 2>/dev/null)
vm_check "ADD through v1's /opt/cni/bin/rdma-netns gives the pod net1 and an address" \
	bash -c '[[ $1 =~ ^10\.63\.0\.[0-9]+/24$ ]] && ip -n rnu-pod -o addr show net1 | grep -q "inet $1 " || { echo "$2"; exit 1; }' _ "$addr" "$out"
ipam_records() { find "$root/var/lib/cni/rdma-netns-ipam" -type f -name "${addr%/*}" 2>/dev/null | wc -l; }
vm_check "... with its state file and its IPAM record" bash -c '[ -f "$1" ] && [ "$2" = 1 ]' _ "$statef" "$(ipam_records)"
pod1=$(pod_view)
state1=$(cat "$statef")

# --- the uninstaller refuses while the pod is attached -------------------------------------
snap1=$(snap)
vm_run_code 1 "node-uninstall.sh refuses while a pod holds an attachment" uninstall
vm_check "... naming the pod, its network, container and interface" vm_expect_contains "$ERR" \
	"default/rnu: network rnunode, container rnu-c1, interface net1, ready (/host/var/lib/cni/rdma-netns/rnunode:rnu-c1:net1)" "stderr"
vm_check "... and how to go on anyway" vm_expect_contains "$ERR" "RDMANS_UNINSTALL_FORCE=true" "stderr"
vm_check "... having removed nothing" vm_expect_eq "$snap1" "$(snap)" "the host root"

# --- upgrade to v2 while the pod runs -------------------------------------------------------
touch "$root/boot/.no-ib-core"
vm_check "node-install.sh installs tree v2 ($lib2) over v1 (exclusive and its initramfs asked again)" \
	install_node "$tree2" RDMANS_PERSIST_EXCLUSIVE=true RDMANS_REBUILD_INITRAMFS=true RDMANS_HOST_FULL_ROOT="$root"
install_out=$VM_OUT
vm_check "... ib_core not in the initrd: no rebuild, and it says why" bash -c \
	'[ ! -e "$1/var/log/update-initramfs.args" ] && [[ $2 == *"ib_core is not in /boot/initrd.img-"*": no initramfs rebuild needed"* ]]' \
	_ "$root" "$install_out"
rm -f "$root/boot/.no-ib-core"
vm_check "... says it removed v1's libraries" vm_expect_contains "$install_out" "removed $root$prefix/$lib1"
vm_check "... which are gone, v2's there" bash -c '[ ! -e "$1/$2" ] && [ -x "$1/$3/ld-linux-x86-64.so.2" ]' _ "$root$prefix" "$lib1" "$lib2"
for b in opt/cni/bin/rdma-netns opt/cni/bin/rdma-netns-ipam opt/rdmans/bin/rdmans-hook; do
	vm_check "... $b asks for v2's loader" vm_expect_eq "$prefix/$lib2/ld-linux-x86-64.so.2" "$(node_elf_interp "$root/$b")" "interpreter"
done
vm_check "... installed.list has v2's checksum for rdma-netns" grep -qx \
	"file $(sha256sum <"$tree2/bin/rdma-netns" | cut -d' ' -f1) /opt/cni/bin/rdma-netns" "$list"
vm_check "... and still the directories v1 created" vm_expect_eq 4 "$(grep -c '^dir - ' "$list")" "dir lines"
vm_check "the pod's net1, its address and link, are untouched" vm_expect_eq "$pod1" "$(pod_view)" "the pod's net1"
vm_check "... its state file too" vm_expect_eq "$state1" "$(cat "$statef" 2>&1)" "state file"
vm_check "CHECK through v2's plugins" cni CHECK
vm_check "DEL through v2's plugins" cni DEL
vm_check "... rnu0 is back on the host, the pod holds no net1" bash -c 'ip link show rnu0 >/dev/null && ! ip -n rnu-pod link show net1 2>/dev/null'
vm_check "... no state file, no IPAM record" bash -c '[ ! -e "$1" ] && [ "$2" = 0 ]' _ "$statef" "$(ipam_records)"

# --- uninstall, no pod left ------------------------------------------------------------------
installed=$(snap)
vm_run_code 0 "node-uninstall.sh removes what the install wrote" uninstall
after=$(snap)
vm_check "... the host root is as before the install, but for the IPAM records and CNI state" \
	vm_expect_eq "$before" "$(no_state "$after")" "the host root (a find)"
vm_check "... which it kept, and says so" bash -c '[ -d "$1/var/lib/cni/rdma-netns-ipam" ] && [[ $2 == *"RDMANS_UNINSTALL_IPAM=true removes them"* ]]' _ "$root" "$ERR"
vm_check "... one line per path it removed, each of them" vm_expect_eq \
	"$(paths "$(minus "$(no_state "$installed")" "$before")")" "$(removed)" "removed paths"
vm_check "... the modprobe.d file among them, saying ib_core stays in its mode until reboot" bash -c \
	'[[ $1 == *"removed /host/etc/modprobe.d/rdmans-ib_core.conf"* && $2 == *"until the node reboots"* ]]' _ "$OUT" "$ERR"
vm_check "... the operator's CNI plugin and hooks.d JSON among what stayed" \
	bash -c '[ -x "$1/opt/cni/bin/bridge" ] && [ -f "$1/etc/containers/oci/hooks.d/oci-nvidia-hook.json" ]' _ "$root"
vm_run_code 0 "a second run succeeds" uninstall
vm_check "... removing nothing" vm_expect_eq "" "$OUT" "stdout"
vm_run_code 0 "RDMANS_UNINSTALL_IPAM=true removes the IPAM records and CNI state too" uninstall RDMANS_UNINSTALL_IPAM=true
vm_check "... the host root is exactly as before the install" vm_expect_eq "$before" "$(snap)" "the host root (a find)"
vm_check "... one line per path" vm_expect_eq "$(paths "$(minus "$after" "$before")")" "$(removed)" "removed paths"

# --- an operator's own files, and RDMANS_UNINSTALL_FORCE --------------------------------------
mkdir -p "$root/etc/cni/net.d/rdma-netns-ipam.d"
echo '{"store": "local"}' >"$root/etc/cni/net.d/rdma-netns-ipam.d/rdma-netns-ipam.conf"
before2=$(snap)
install_v2_kubeconfig() { install_node "$tree2" && kubeconfig; }
vm_check "with the operator's own flat file: node-install.sh and node-kubeconfig.sh" install_v2_kubeconfig
vm_check "... node-kubeconfig.sh left the flat file alone" vm_expect_eq '{"store": "local"}' \
	"$(cat "$root/etc/cni/net.d/rdma-netns-ipam.d/rdma-netns-ipam.conf")" "flat file"
usr_hook=$root/usr/share/containers/oci/hooks.d/rdmans-hook.json
sed -i 's/"timeout": *30/"timeout": 60/' "$usr_hook"
vm_check "the operator edits the installed hooks.d JSON in /usr/share" bash -c '! cmp -s "$1" "$2"' _ "$usr_hook" "$root/etc/containers/oci/hooks.d/rdmans-hook.json"
out=$(cni ADD 2>&1)
addr=$(jq -r '.ips[0].address' <<<"$out" 2>/dev/null)
vm_check "a pod attached again" bash -c 'ip -n rnu-pod -o addr show net1 | grep -q "inet $1 " || { echo "$2"; exit 1; }' _ "$addr" "$out"
pod2=$(pod_view)
vm_run_code 0 "RDMANS_UNINSTALL_FORCE=true goes on past it (RDMANS_UNINSTALL_IPAM=true asked too)" \
	uninstall RDMANS_UNINSTALL_FORCE=true RDMANS_UNINSTALL_IPAM=true
vm_check "... naming the attachment it goes past" vm_expect_contains "$ERR" "default/rnu: network rnunode" "stderr"
forced=$(snap)
vm_check "... keeps the state and IPAM records of the pod still attached" bash -c '[ -f "$1" ] && [ "$2" = 1 ]' _ "$statef" "$(ipam_records)"
vm_check "... keeps the edited hooks.d JSON, saying why" bash -c '[ -f "$1" ] && [[ $2 == *"kept /host/usr/share/containers/oci/hooks.d/rdmans-hook.json: changed since node-install.sh wrote it"* ]]' _ "$usr_hook" "$ERR"
vm_check "... keeps the operator's flat file, saying why" vm_expect_contains "$ERR" "rdma-netns-ipam.conf: not what node-kubeconfig.sh writes" "stderr"
vm_check "... and removes all the rest" vm_expect_eq "$(LC_ALL=C sort <<<"$before2
./usr/share/containers/oci/hooks.d/rdmans-hook.json")" "$(no_state "$forced" | sed 's|\(hooks.d/rdmans-hook.json\) .*|\1|')" "the host root (a find)"
vm_check "... the pod's net1 untouched" vm_expect_eq "$pod2" "$(pod_view)" "the pod's net1"
vm_check "a reinstall" install_node "$tree2"
vm_check "... and its DEL brings the netdev home" cni DEL
vm_check "... rnu0 back on the host, no state file, no IPAM record" bash -c \
	'ip link show rnu0 >/dev/null && [ ! -e "$1" ] && [ "$2" = 0 ]' _ "$statef" "$(ipam_records)"
vm_run_code 0 "a last uninstall (RDMANS_UNINSTALL_IPAM=true)" uninstall RDMANS_UNINSTALL_IPAM=true
vm_check "... leaves the host root as the operator had it" vm_expect_eq "$before2" "$(snap)" "the host root (a find)"
vm_done
