#!/bin/bash
# Guest script: podman 4.3 (Debian, CNI backend) runs rdma-netns and
# rdma-netns-ipam as `meson install` put them, with
# cni-conf/10-rdma-netns.conflist as shipped (its deviceID set to a simhca
# device): the container sees the renamed netdev, its address, its RDMA
# device and the RoCE v2 GID of that address; a second container asking for
# the held device is refused with a message naming what podman told (pod
# name, no namespace); restart and `network reload` keep everything; stop
# and rm bring netdev and device home with no state file and no lease left.
set -u
. "$RDMANS_VM_LIB"
. "$(dirname "$0")/runtime-lib.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)

vm_load_rdma exclusive
vm_load_simhca
rt_t "meson install" rt_install
rt_podman
rt_t "podman import" rt_image
vm_veth h0 p0 || vm_fail "veth h0"
vm_veth h1 p1 || vm_fail "veth h1"
d0=$(vm_simhca_new "irdma%d" h0) || vm_fail "simhca on h0"
d1=$(vm_simhca_new "irdma%d" h1) || vm_fail "simhca on h1"
aux0=$(awk -v d="$d0" '$2 == d { print $4 }' /sys/bus/simhca/list)
mac0=$(cat /sys/class/net/h0/address)

shipped=$top/cni-conf/10-rdma-netns.conflist
conf=/etc/cni/net.d/10-rdma-netns.conflist
jq --arg id "$aux0" '.plugins[0].deviceID = $id' "$shipped" >"$conf"
vm_check "the conflist is cni-conf's, deviceID set to $aux0 ($d0 on h0)" vm_expect_eq \
	"$(jq -S 'del(.plugins[0].deviceID)' "$shipped")" "$(jq -S 'del(.plugins[0].deviceID)' "$conf")"
net=$(jq -r .name "$conf")
vm_check "podman lists network $net (its libcni takes cniVersion $(jq -r .cniVersion "$conf"))" \
	sh -c "podman network ls --format '{{.Name}}' | grep -qx '$net'"

# Everything a container may change on the node: RDMA devices and where they
# are, h0 and its addresses, rdma-netns state and device-info files, leases.
snap() {
	"$R" dev --all-netns
	ip -o link show h0 2>&1 | sed 's/ qlen.*//'
	ip -o -4 addr show h0 2>&1 # (IPv6 link-local comes and goes with DAD: not ours)
	find /var/lib/cni/rdma-netns /var/run/k8s.cni.cncf.io -type f ! -path '*/locks/*' 2>/dev/null | sort
	"$R" ipam ls 2>&1
}
state_files() { find /var/lib/cni/rdma-netns -maxdepth 1 -type f | wc -l; }
before=$(snap)

# inside CTR: eth0's MAC and IPv4 address, the RDMA devices there
look_inside() {
	IN=$(podman exec "$1" sh -c 'cat /sys/class/net/eth0/address; ip -o -4 addr show eth0 | sed "s/.* inet \([^ ]*\) .*/\1/"; ls /sys/class/infiniband | tr "\n" " "' 2>&1)
	IN_MAC=$(sed -n 1p <<<"$IN")
	IN_ADDR=$(sed -n 2p <<<"$IN")
	IN_DEVS=$(sed -n 3p <<<"$IN" | sed 's/ $//')
}
attached() { # attached WHEN: the checks of a running c1
	local when=$1 gid
	look_inside c1
	vm_check "$when: eth0 in the container is h0 (MAC $mac0)" vm_expect_eq "$mac0" "$IN_MAC"
	vm_check "$when: eth0 has an address of the conflist's range ($IN_ADDR)" \
		sh -c "case '$IN_ADDR' in 10.56.*/16) exit 0 ;; esac; exit 1"
	vm_check "$when: the container sees $d0 and only it" vm_expect_eq "$d0" "$IN_DEVS"
	vm_check "$when: $d0 and h0 are gone from the host" sh -c "! rdma dev show $d0 && ! ip link show h0"
	gid=$(rt_gid_in c1 "$d0" "${IN_ADDR%/*}")
	vm_check "$when: a RoCE v2 GID of $d0 holds ${IN_ADDR%/*}, read inside (index $gid)" test -n "$gid"
	vm_check "$when: one state file, one lease" vm_expect_eq "1 1" \
		"$(state_files) $("$R" -j ipam ls | jq length)"
}

rt_t "podman run (CNI ADD)" vm_run_code 0 "podman run --network $net starts c1" \
	podman run -d --name c1 --network "$net" "$IMG" sleep 1000000
attached "run"
st=$(find /var/lib/cni/rdma-netns -maxdepth 1 -type f)
vm_check "the state names pod c1 (podman's K8S_POD_NAME) and no namespace" \
	sh -c "grep -qx 'pod_name=c1' '$st' && ! grep -q '^pod_namespace=' '$st'"

# --- a second container asking for the held device --------------------------------------------
during=$(snap)
rt_t "podman run refused" vm_run_code 126 "a second container on $net fails to start" \
	podman run --name c2 --network "$net" "$IMG" true
vm_check "  the refusal says who holds the device: pod c1, as podman named it" \
	vm_expect_contains "$ERR" "the selected device belongs to pod c1 (container"
vm_check "  and invents nothing it was not told (no 'pod ?/c1')" sh -c 'case "$1" in *"pod ?/"*) exit 1 ;; esac' _ "$ERR"
vm_check "  nothing changed on the node" vm_expect_eq "$during" "$(snap)"
podman rm -f c2 >/dev/null 2>&1

# --- restart and network reload keep netdev, address, device and GID ---------------------------
rt_t "podman restart" vm_run_code 0 "podman restart c1" podman restart -t 0 c1
attached "restart"
rt_t "podman network reload" vm_run_code 0 "podman network reload c1" podman network reload c1
attached "network reload"

# --- stop and rm bring everything home, nothing left -------------------------------------------
rt_t "podman stop (CNI DEL)" vm_run_code 0 "podman stop c1" podman stop -t 0 c1
vm_check "stop: $d0 and h0 home; no state, device-info or lease left; the node as before" \
	vm_expect_eq "$before" "$(snap)"
rt_t "podman rm" vm_run_code 0 "podman rm c1" podman rm c1
vm_check "rm: the node as before" vm_expect_eq "$before" "$(snap)"
vm_check "$d1 never moved" rdma dev show "$d1"
vm_done
