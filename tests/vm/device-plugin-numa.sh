#!/bin/bash
# Guest script: rdmans-device-plugin on a node with a real PCI topology, the one vm-rails uses
# (RDMANS_VM_QEMU_EXTRA from meson: two NUMA nodes, an expander host bridge
# on each, two PCI bridges under each host bridge, two e1000 NICs under each
# bridge, and a stand-in GPU beside them) and a simhca HCA on each NIC, whose PCI function is its parent as
# irdma's and mlx5's are. kubelet's side (kubelet.py) sees the PCI addresses
# with their NUMA nodes; GetPreferredAllocation keeps a request on one node
# and behind one bridge; rdma-netns takes the allocated ID as Multus's
# deviceID and moves that NIC.
set -u
. "$RDMANS_VM_LIB"
vm_kubelet_env
CNI=$RDMANS_BUILD_DIR/src/cni/rdma-netns

vm_load_rdma
vm_load_simhca
modprobe e1000 || vm_fail "modprobe e1000"
nics() { # "BDF IFNAME" of each PCI NIC, by BDF
	local n
	for n in /sys/class/net/*; do
		[ -e "$n/device" ] && echo "$(basename "$(readlink -f "$n/device")") $(basename "$n")"
	done | sort
}
vm_check "eight PCI NICs" vm_poll 60 sh -c "[ \$(ls -d /sys/class/net/*/device | wc -l) = 8 ]"
mapfile -t nic <<<"$(nics)" # (the guest has no /dev/fd for <(...))
for i in "${!nic[@]}"; do
	bdf[i]=${nic[i]% *}
	ifn=${nic[i]#* }
	ip link set "$ifn" up
	dev[i]=$(vm_simhca_new "mlx5_%d" "$ifn") || vm_fail "simhca on $ifn"
done
vm_diag "NICs: ${nic[*]}"
vm_check "mlx5_0's parent is its PCI function ${bdf[0]}" vm_expect_eq "${bdf[0]}" \
	"$(basename "$(dirname "$(readlink -f /sys/class/infiniband/mlx5_0/device)")")"
vm_check "rdmans system set netns exclusive" "$R" system set netns exclusive

$K serve "$DIR" "$LOG" 2>/run/kubelet/kubelet.err &
KPID=$!
vm_poll 60 test -S "$DIR/kubelet.sock" || vm_fail "kubelet.py: $(tail -n 3 /run/kubelet/kubelet.err)"
"$DP" --plugin-dir "$DIR" --poll-ms 200 2>/run/kubelet/plugin.err &
PLUGIN=$!
vm_kubelet_registered "rdmans-device-plugin registers" 240
want=$(for i in 0 1 2 3 4 5 6 7; do echo "${bdf[i]} Healthy $(cat "/sys/bus/pci/devices/${bdf[i]}/numa_node")"; done)
list_is() { [ "$($K last-list "$LOG" rdmans.io/rdma)" = "$1" ]; }
vm_check "ListAndWatch: eight devices by PCI address, each with its NUMA node" vm_poll 240 list_is "$want"
vm_check "four on NUMA node 0, four on node 1" vm_expect_eq "4 4" \
	"$(echo "$want" | grep -c ' 0$') $(echo "$want" | grep -c ' 1$')"
vm_diag "$(echo "$want" | tr '\n' ';')"

all=$(IFS=,; echo "${bdf[*]}")
pref() { $K preferred "$DIR" rdmans-rdma.sock --available "$1" --size "$2" ${3:+--must "$3"}; }
vm_run_code 0 "GetPreferredAllocation: 4 of 8" pref "$all" 4
vm_check "  one NUMA node, the bridge pair first" vm_expect_eq "${bdf[0]},${bdf[1]},${bdf[2]},${bdf[3]}" "$OUT"
vm_run_code 0 "GetPreferredAllocation: 2 with must_include ${bdf[6]}" pref "$all" 2 "${bdf[6]}"
vm_check "  its neighbour behind the same bridge" vm_expect_eq "${bdf[6]},${bdf[7]}" "$OUT"
vm_run_code 0 "GetPreferredAllocation: 2 of one on node 0 and three on node 1" \
	pref "${bdf[0]},${bdf[4]},${bdf[5]},${bdf[6]}" 2
vm_check "  both on node 1, behind one bridge" vm_expect_eq "${bdf[4]},${bdf[5]}" "$OUT"

vm_run_code 0 "Allocate ${bdf[4]},${bdf[5]}" $K allocate "$DIR" rdmans-rdma.sock "${bdf[4]}" "${bdf[5]}"
vm_check "  CDI devices of ${dev[4]} and ${dev[5]}" vm_expect_eq "rdmans.io/rdma=${dev[4]},rdmans.io/rdma=${dev[5]}" \
	"$(jq -r '[.container_responses[0].cdi_devices[].name] | join(",")' <<<"$OUT")"
vm_check "  NCCL_IB_HCA=${dev[4]},${dev[5]} exactly" vm_expect_eq "=${dev[4]},${dev[5]}" \
	"$(jq -r '.container_responses[0].envs.NCCL_IB_HCA' <<<"$OUT")"

# --- the allocated ID as Multus passes it: deviceID, to rdma-netns --------------------------
ip netns add pod
conf=$(jq -cn --arg id "${bdf[4]}" '{cniVersion: "1.0.0", name: "rail", type: "rdma-netns", deviceID: $id}')
cni() { echo "$conf" | CNI_COMMAND=$1 CNI_CONTAINERID=c1 CNI_NETNS=/var/run/netns/pod CNI_IFNAME=net1 \
	CNI_PATH=$(dirname "$CNI") "$CNI"; }
vm_run_code 0 "rdma-netns ADD with deviceID ${bdf[4]}" cni ADD
vm_check "  ${dev[4]} and its NIC (net1) are in the pod" sh -c \
	"ip netns exec pod rdma dev show ${dev[4]} && ip -n pod link show net1"
vm_check "  the plugin still lists ${bdf[4]}, Healthy (ports of the others change nothing)" \
	sh -c "$K last-list $LOG rdmans.io/rdma | grep -qx '${bdf[4]} Healthy 1'"
vm_run_code 0 "rdma-netns DEL" cni DEL
vm_check "  ${dev[4]} is home" rdma dev show "${dev[4]}"
ip netns del pod

vm_plugin_stops rdmans-device-plugin "$PLUGIN" /run/kubelet/plugin.err
kill "$KPID"
vm_done
