#!/bin/bash
# Guest script: an InfiniBand HCA (simhca's "ib" port: LID, SM LID, GID 0
# from the subnet prefix and port GUID) with its IPoIB netdev (the kernel's
# ib_ipoib), through rdmans in exclusive mode:
#  - rdmans dev/gids/env on the host;
#  - rdma-netns ADD (by RDMA device, and by the IPoIB netdev) with
#    host-local: the RDMA device moves; its IPoIB netdev, which the kernel
#    removes and makes anew whenever the device changes netns (in the host's
#    netns before Linux 6.17, in the device's since), is found again by its
#    port's GID and becomes net1 with the address; CHECK; NCCL's settings in
#    the pod (no GID index on IB, NCCL_SOCKET_IFNAME the IPoIB netdev);
#    doctor, and the exporter with the port's PMA counters; DEL
#    leaves the host as before, also after the pod's netns was deleted;
#  - rdma-netns chained after host-device on the IPoIB netdev: the new one
#    gets prevResult's address and route back; at DEL the one the kernel
#    makes on the host goes back to the pod for host-device's DEL;
#  - rdmans-hook moving the IB device into a runc container's pod, and its
#    nccl.conf.
# Output is TAP.
set -u # not -e: a failed check must not stop the others
. "$RDMANS_VM_LIB"
. "$(dirname "$RDMANS_VM_LIB")/../netns/cni-lib.sh"
. "$(dirname "$RDMANS_VM_LIB")/../netns/hook-lib.sh"
cni_vm_setup
HOOK=$RDMANS_BUILD_DIR/src/hook/rdmans-hook
vm_diag "kernel $(uname -r)"
[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd

vm_load_rdma exclusive
vm_load_simhca
vm_check "ib_ipoib loads" modprobe ib_ipoib || vm_fail "no ib_ipoib"
echo "mlx5_%d - 0 ib" >/sys/bus/simhca/new_device || vm_fail "simhca IB device"
GID=fe80:0000:0000:0000:0200:5348:4341:0000
HWGID=fe:80:00:00:00:00:00:00:02:00:53:48:43:41:00:00
# the IPoIB netdev of mlx5_0 in netns $1 ("" the host's): its hardware address ends in the GID
ipoib_of() {
	ip ${1:+-n "$1"} -o link | awk -v g="$HWGID" '$0 ~ "link/infiniband [0-9a-f:]*" g " " { sub(":", "", $2); sub("@.*", "", $2); print $2 }'
}
export HWGID
export -f ipoib_of # for the bash -c of the checks below
vm_check "the host's IPoIB netdev of mlx5_0 is ib0" vm_expect_eq ib0 "$(ipoib_of "")"

# --- on the host ---------------------------------------------------------------------------------
vm_capture "$R" dev
vm_check "rdmans dev: mlx5_0 is IB, port ACTIVE, no bound netdev" \
	sh -c 'case "$1" in *"mlx5_0: ib "*"port 1 ACTIVE LINK_UP"*) exit 0 ;; esac; echo "$1"; exit 1' _ "$OUT"
vm_capture "$R" -j gids mlx5_0
vm_check "rdmans gids: GID 0 is the subnet prefix and port GUID, type IB" vm_expect_eq "0 $GID IB" \
	"$(jq -r '.[0] | "\(.index) \(.gid) \(.ver)"' <<<"$OUT" 2>&1)"
vm_run_code 0 "rdmans env on the host" "$R" env
vm_check "  NCCL_IB_HCA==mlx5_0" vm_expect_contains "$OUT" $'\nNCCL_IB_HCA==mlx5_0'
vm_check "  no GID index on InfiniBand" sh -c '! printf "%s\n" "$1" | grep -q "^NCCL_IB_GID_INDEX"' _ "$OUT"

# Everything a test here may change: devices and their netns, links (by name), state files.
snap() {
	"$R" dev --all-netns
	ip -o link | awk '{ sub("@.*", "", $2); print $2 }'
	for ns in /var/run/netns/*; do
		[ -e "$ns" ] || continue
		echo "netns ${ns##*/}"
		ip -n "${ns##*/}" -o link | awk '{ sub("@.*", "", $2); print $2 }'
	done
	find /tmp/cni/state -type f -not -path "*/locks/*" 2>/dev/null | sort
}
conf() { # conf SELECTION-JSON: main mode, host-local on 10.56.0.0/24
	printf '{"cniVersion":"1.0.0","name":"ibnet","type":"rdma-netns",%s,"ipam":{"type":"host-local","subnet":"10.56.0.0/24","dataDir":"%s"}}' "$1" "$HL"
}

# --- rdma-netns: ADD, CHECK, DEL --------------------------------------------------------------------
ip netns add pod1
CNI_NS=/var/run/netns/pod1
CNI_CID=c1
before=$(snap)
cni_expect_ok "ADD by rdmaDevice mlx5_0" ADD "$(conf '"rdmaDevice":"mlx5_0"')"
res=$OUT
ip4=$(jq -r '.ips[0].address' <<<"$res" | cut -d/ -f1)
vm_check "mlx5_0 is in pod1, not on the host" sh -c '! rdma dev show mlx5_0 && ip netns exec pod1 rdma dev show mlx5_0'
vm_check "the pod's IPoIB netdev of mlx5_0 is net1" vm_expect_eq net1 "$(ipoib_of pod1)"
vm_check "the host has no IPoIB netdev of mlx5_0 left" vm_expect_eq "" "$(ipoib_of "")"
vm_check "net1 holds the result's address $ip4" vm_expect_contains "$(ip -n pod1 -o addr show dev net1)" "inet $ip4/24"
vm_check "the result names net1 in pod1" vm_expect_eq "net1 /var/run/netns/pod1" \
	"$(jq -r '.interfaces[0] | "\(.name) \(.sandbox)"' <<<"$res" 2>&1)"
cni_expect_ok "CHECK" CHECK "$(conf '"rdmaDevice":"mlx5_0"' | jq -c ".prevResult = $res")"
vm_run_code 0 "rdmans env --netns pod1" "$R" env --netns pod1
vm_check "  NCCL_IB_HCA==mlx5_0" vm_expect_contains "$OUT" $'\nNCCL_IB_HCA==mlx5_0'
vm_check "  NCCL_SOCKET_IFNAME=net1 (the IPoIB netdev with the address)" vm_expect_contains "$OUT" $'\nNCCL_SOCKET_IFNAME=net1'
vm_check "  no GID index on InfiniBand" sh -c '! printf "%s\n" "$1" | grep -q "^NCCL_IB_GID_INDEX"' _ "$OUT"
vm_run_code 20 "rdmans doctor in pod1 (boot mode WARN only)" ip netns exec pod1 "$R" doctor
vm_check "  port-state PASS, no GID index needed" sh -c 'printf "%s\n" "$1" | grep -q "^PASS  port-state .*mlx5_0/1: ACTIVE" &&
	printf "%s\n" "$1" | grep -q "^PASS  nccl-gid-index .*no GID index needed"' _ "$OUT"
vm_run_code 0 "rdmans exporter --once" "$R" exporter --once
vm_check "  mlx5_0's port: InfiniBand, in pod1, ACTIVE" sh -c 'printf "%s\n" "$1" | grep -q "^rdmans_port_info{device=\"mlx5_0\",port=\"1\",.*netns=\"pod1\".*link_layer=\"InfiniBand\"" &&
	printf "%s\n" "$1" | grep -q "^rdmans_port_state{device=\"mlx5_0\",port=\"1\",.*netns=\"pod1\".*} 4$"' _ "$OUT"
# the port's PMA counters, as a subnet's traffic would leave them (simhca's set_counters)
echo "0 port_xmit_data 1000 port_rcv_data 2500000000 symbol_error 3" >/sys/bus/simhca/set_counters
vm_run_code 0 "rdmans exporter --once, with the port's counters set" "$R" exporter --once
vm_check "  bytes transmitted: 4 x port_xmit_data's words, in pod1" sh -c 'printf "%s\n" "$1" | grep -q "^rdmans_port_transmitted_bytes_total{device=\"mlx5_0\",port=\"1\",.*netns=\"pod1\".*} 4000$"' _ "$OUT"
vm_check "  bytes received past 32 bits: 10000000000" sh -c 'printf "%s\n" "$1" | grep -q "^rdmans_port_received_bytes_total{device=\"mlx5_0\",.*} 10000000000$"' _ "$OUT"
vm_check "  symbol errors: 3" sh -c 'printf "%s\n" "$1" | grep -q "^rdmans_port_symbol_error_total{device=\"mlx5_0\",.*} 3$"' _ "$OUT"
cni_expect_ok "DEL" DEL "$(conf '"rdmaDevice":"mlx5_0"')"
vm_check "DEL: mlx5_0 home, and its IPoIB netdev ib0 (made anew)" vm_expect_eq ib0 "$(ipoib_of "")"
vm_check "DEL: the node as before (devices, links by name, state)" vm_expect_eq "$before" "$(snap)"
cni_expect_ok "DEL twice" DEL "$(conf '"rdmaDevice":"mlx5_0"')"

cni_expect_ok "ADD by the IPoIB netdev ib0" ADD "$(conf '"device":"ib0"')"
vm_check "mlx5_0 and its IPoIB netdev (net1) are in pod1" bash -c 'ip netns exec pod1 rdma dev show mlx5_0 && [ "$(ipoib_of pod1)" = net1 ]'
ip netns del pod1
vm_check "pod1 deleted: mlx5_0 comes back by itself" vm_poll 60 rdma dev show mlx5_0
cni_expect_ok "DEL after the pod's netns is gone" DEL "$(conf '"device":"ib0"')"
vm_check "DEL: the host has mlx5_0's IPoIB netdev ib0, no state" bash -c '[ "$(ipoib_of "")" = ib0 ] && [ -z "$(find /tmp/cni/state -type f -not -path "*/locks/*")" ]'

# --- chained after host-device (as after ib-sriov-cni): the IPoIB netdev it set up is made anew ---
ip netns add pod3
CNI_NS=/var/run/netns/pod3
CNI_CID=c3
before=$(snap)
hd=$(printf '{"cniVersion":"1.0.0","name":"ibchain","type":"host-device","device":"ib0","ipam":{"type":"static","addresses":[{"address":"10.60.0.2/24"}],"routes":[{"dst":"10.61.0.0/16","gw":"10.60.0.1"}]}}')
cni_expect_ok "host-device ADD: ib0 as net1 in pod3 with 10.60.0.2/24" ADD "$hd"
chained=$(jq -c --argjson p "$OUT" '{cniVersion: "1.0.0", name: "ibchain", type: "rdma-netns", prevResult: $p}' <<<'{}')
cni_expect_ok "rdma-netns ADD chained after it" ADD "$chained"
vm_check "mlx5_0 is in pod3" ip netns exec pod3 rdma dev show mlx5_0
vm_check "the pod's IPoIB netdev of mlx5_0 is net1 again" vm_expect_eq net1 "$(ipoib_of pod3)"
vm_check "net1 has prevResult's address again" vm_expect_contains "$(ip -n pod3 -o addr show dev net1)" "inet 10.60.0.2/24"
vm_check "and prevResult's route" vm_expect_contains "$(ip -n pod3 route show 10.61.0.0/16)" "via 10.60.0.1 dev net1"
cni_expect_ok "rdma-netns CHECK chained" CHECK "$chained"
cni_expect_ok "rdma-netns DEL chained" DEL "$chained"
vm_check "  mlx5_0 is home" rdma dev show mlx5_0
vm_check "  the IPoIB netdev made anew is back in pod3 as net1, for host-device's DEL" vm_expect_eq net1 "$(ipoib_of pod3)"
cni_expect_ok "host-device DEL, next in the chain, takes it home" DEL "$hd"
vm_check "  as ib0, the name in its alias" vm_expect_eq ib0 "$(ipoib_of "")"
vm_check "chained done: the node as before" vm_expect_eq "$before" "$(snap)"
ip netns del pod3

# --- rdmans-hook ------------------------------------------------------------------------------------
cg=/sys/fs/cgroup
mountpoint -q "$cg" || mount -t cgroup2 none "$cg" || vm_fail "cannot mount cgroup2 for runc"
tmp=$(mktemp -d /tmp/rdmans-ib.XXXXXX)
ip netns add pod2
hl_bundle "$tmp/c1" "$HOOK" /var/run/netns/pod2 '["cat","/etc/nccl.conf"]' '.annotations = {"rdmans.io/devices": "mlx5_0"}'
if hl_run "$tmp/runc" "$tmp/c1" c1; then vm_ok "a container asking rdmans-hook for mlx5_0 runs"; else
	vm_not_ok "a container asking rdmans-hook for mlx5_0 runs"
	vm_diag "$HL_ERR"
fi
vm_check "mlx5_0 is in pod2" ip netns exec pod2 rdma dev show mlx5_0
vm_check "nccl.conf: NCCL_IB_HCA==mlx5_0" vm_expect_contains "$HL_OUT" $'\nNCCL_IB_HCA==mlx5_0\n'
vm_check "nccl.conf: no GID index on InfiniBand" sh -c '! printf "%s\n" "$1" | grep -q "^NCCL_IB_GID_INDEX"' _ "$HL_OUT"
ip netns del pod2
vm_check "pod2 deleted: mlx5_0 and an IPoIB netdev of it back on the host" \
	vm_poll 60 bash -c 'rdma dev show mlx5_0 >/dev/null && [ -n "$(ipoib_of "")" ]'
vm_done
