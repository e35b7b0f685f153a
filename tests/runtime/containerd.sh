#!/bin/bash
# Guest script: containerd 1.6 (Debian) runs rdma-netns and rdma-netns-ipam as
# `meson install` put them, through `ctr run --cni` with
# cni-conf/10-rdma-netns.conflist as shipped (deviceID set to a simhca
# device on a "physical" netdev, a USB gadget, which the kernel hands back
# when a netns dies). ADD: the task sees the renamed netdev, its address, its
# RDMA device and the RoCE v2 GID of the address. ctr calls DEL after the
# task has exited, when its netns is gone: netdev (its name back) and device
# come home, no state file, no lease.
set -u
. "$RDMANS_VM_LIB"
. "$(dirname "$0")/runtime-lib.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)

vm_load_rdma exclusive
vm_load_simhca
rt_t "meson install" rt_install
rt_podman
rt_t "podman import" rt_image

# containerd: state on tmpfs (its overlayfs snapshotter cannot sit on the guest's overlay root);
# no CRI plugin (nothing here speaks CRI, and Debian 12 has no crictl)
mkdir -p /var/lib/containerd /run/containerd /etc/containerd
mountpoint -q /var/lib/containerd || mount -t tmpfs tmpfs /var/lib/containerd
cat >/tmp/containerd.toml <<'CONF'
version = 2
disabled_plugins = ["io.containerd.grpc.v1.cri"]
CONF
containerd --config /tmp/containerd.toml >/tmp/containerd.log 2>&1 &
ctrd=$!
trap 'kill $ctrd 2>/dev/null' EXIT
rt_t "containerd start" vm_check "containerd answers" vm_poll 60 ctr version ||
	vm_fail "containerd did not start: $(tail -n 5 /tmp/containerd.log)"
ver=$(ctr version 2>/dev/null | awk '/Server:/ { s = 1 } s && /Version:/ { print $2; exit }')
vm_diag "containerd $ver, $(runc --version | head -n 1)"
podman save --quiet --format oci-archive -o /tmp/img.tar "$IMG" || vm_fail "podman save"
rt_t "ctr images import" vm_check "ctr images import of the busybox image" ctr images import --base-name localhost/rdmans-busybox /tmp/img.tar
ref=$(ctr images ls -q | head -n 1)
vm_diag "image: $ref"

modprobe dummy_hcd && modprobe g_ether && vm_poll 60 ip link show usb0 >/dev/null || vm_fail "no USB gadget netdev (dummy_hcd + g_ether)"
ip link set usb0 up
dev=$(vm_simhca_new "irdma%d" usb0) || vm_fail "simhca on usb0"
aux=$(awk -v d="$dev" '$2 == d { print $4 }' /sys/bus/simhca/list)
mac=$(cat /sys/class/net/usb0/address)
shipped=$top/cni-conf/10-rdma-netns.conflist
jq --arg id "$aux" '.plugins[0].deviceID = $id' "$shipped" >/etc/cni/net.d/10-rdma-netns.conflist

snap() {
	"$R" dev --all-netns
	ip -o link show usb0 2>&1 | sed 's/ qlen.*//'
	ip -o -4 addr show usb0 2>&1
	find /var/lib/cni/rdma-netns /var/run/k8s.cni.cncf.io -type f ! -path '*/locks/*' 2>/dev/null | sort
	"$R" ipam ls 2>&1
}
before=$(snap)

# In the task: eth0's MAC, address, the RDMA devices, and the RoCE v2 GID index of the address.
# shellcheck disable=SC2016 # the task's sh expands it
inside='cat /sys/class/net/eth0/address
a=$(ip -o -4 addr show eth0 | sed "s/.* inet \([^ ]*\) .*/\1/"); echo "$a"
ls /sys/class/infiniband | tr "\n" " "; echo
IFS=. read -r o1 o2 o3 o4 <<E
${a%/*}
E
h=$(printf "%02x%02x:%02x%02x" "$o1" "$o2" "$o3" "$o4")
for d in /sys/class/infiniband/*/ports/1; do for f in $d/gids/*; do i=${f##*/}
	[ "$(cat $f)" = "0000:0000:0000:0000:0000:ffff:$h" ] && [ "$(cat $d/gid_attrs/types/$i)" = "RoCE v2" ] && echo "gid $i"
done; done; true'
rt_t "ctr run --cni (ADD, task, DEL)" vm_run_code 0 "ctr run --rm --cni: the task runs" \
	ctr run --rm --cni "$ref" t1 sh -c "$inside"
vm_check "ADD: eth0 in the task is usb0 (MAC $mac)" vm_expect_eq "$mac" "$(sed -n 1p <<<"$OUT")"
addr=$(sed -n 2p <<<"$OUT")
vm_check "ADD: eth0 has an address of the conflist's range ($addr)" sh -c "case '$addr' in 10.56.*/16) exit 0 ;; esac; exit 1"
vm_check "ADD: the task sees $dev only" vm_expect_eq "$dev " "$(sed -n 3p <<<"$OUT")"
vm_check "ADD: a RoCE v2 GID of $dev holds ${addr%/*}, read inside" vm_expect_contains "$(sed -n 4p <<<"$OUT")" "gid "
vm_check "DEL after the task exited (its netns gone): usb0 and $dev home, no state, no lease" \
	vm_expect_eq "$before" "$(snap)"
vm_check "  usb0 has its name back (the kernel returned it as it was named in the pod)" ip link show usb0
vm_done
