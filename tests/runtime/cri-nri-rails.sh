#!/bin/bash
# Guest script, current world: rails through rdmans-nri under containerd 2.1,
# driven through CRI as kubelet drives it, on the PCI topology of
# tests/vm/rails.sh (eight NICs with a simhca HCA each, four stand-in GPUs
# beside them; vm_pci_rails). The GPUs reach the containers as NVIDIA's
# device plugin gives them with CDI: CDI devices nvidia.com/gpu=N in
# CreateContainer, which containerd resolves from /etc/cdi into device nodes
# before NRI sees the container. The pod network is host-device on one NIC;
# the other netdevs come into the pod as Multus would add them. The pod asks
# rdmans.io/devices: gpu-aligned:
#  - each container's CreateContainer moves in the HCAs beside its own GPUs
#    and gives it an NCCL_IB_HCA of its own (PID 1's environment);
#  - a container without GPUs gets every device of the pod;
#  - StopPodSandbox brings home every device rdmans-nri moved, and only those.
set -u
. "$(dirname "$0")/nri-lib.sh"

rt_setup
[ -x "$NRI" ] || vm_fail "meson install left no rdmans-nri (build with -Dnri=enabled)"
rt_pause_image "$PAUSE"
vm_pci_rails
vm_diag "$(containerd --version); NICs ${ifname[*]} -> ${dev[*]}; GPUs ${gpu[*]}"

# NVIDIA's CDI spec as nvidia-ctk writes it, reduced to the device nodes
mkdir -p /etc/cdi
jq -n '{cdiVersion: "0.5.0", kind: "nvidia.com/gpu", devices: [range(4) as $i |
	{name: "\($i)", containerEdits: {deviceNodes: [{path: "/dev/nvidia\($i)"}]}}]}' >/etc/cdi/nvidia.json
# the pod network: host-device on NIC 1 (bridge 0's second: no GPU's first choice)
mkdir -p /etc/cni/net.d /etc/containerd
rm -f /etc/cni/net.d/*
jq -n --arg d "${ifname[1]}" '{cniVersion: "1.0.0", name: "nic", plugins: [{type: "host-device",
	device: $d, ipam: {type: "static", addresses: [{address: "10.61.1.2/24"}]}}]}' >/etc/cni/net.d/10-nic.conflist
{
	echo 'version = 3'
	echo "[plugins.'io.containerd.cri.v1.images'.pinned_images]"
	echo "  sandbox = '$PAUSE'"
} >/etc/containerd/config.toml
rt_t "containerd start" cri_containerd /etc/containerd/config.toml
cri_images "$IMG" "$PAUSE"
cri_start
: >/tmp/nri.log
nri_start
vm_check "rdmans-nri registers with containerd" vm_poll 300 nri_registered 1

rt_here "RunPodSandbox pod (rdmans.io/devices: gpu-aligned)" \
	cri runp pod "" 'json:{"rdmans.io/devices": "gpu-aligned"}'
pod=$(jq -r . <<<"$CRI_OUT")
cri pstatus "$pod"
ns=$(jq -r .netns <<<"$CRI_OUT")
vm_check "  no device moved for the sandbox: it has no GPU" vm_expect_eq "" "$(inns "$ns" rdma dev show)"
for i in 0 2 3 4 5 6 7; do # what Multus would add: every other NIC, net1..., with its address
	if ! { ip link set "${ifname[i]}" netns "${ns##*/}" name "net$i" && inns "$ns" ip addr add "10.61.$i.2/24" dev "net$i" &&
		inns "$ns" ip link set "net$i" up; }; then vm_fail "${ifname[i]} into the pod as net$i"; fi
done
# as CNI leaves a pod's interfaces: up, with carrier (the e1000 reports its link a moment later)
vm_check "the eight NICs are up: their RDMA ports are ACTIVE" \
	vm_poll 60 sh -c '[ "$(rdma link show | grep -c "state ACTIVE")" = 8 ]'
hca_of() { # hca_of CONTAINER: NCCL_IB_HCA of its PID 1
	cri exec "$1" 'json:["cat", "/proc/1/environ"]' && jq -r .stdout <<<"$CRI_OUT" | tr '\0' '\n' | grep '^NCCL_IB_HCA='
}
in_pod() { inns "$ns" rdma dev show | awk '{ print $2 }' | tr -d : | sort | tr '\n' ' ' | sed 's/ $//'; }

rt_here "CreateContainer cA with CDI devices nvidia.com/gpu=0 and =1" \
	cri create "$pod" cA "$IMG" 'json:["sleep", "1000000"]' 'json:["nvidia.com/gpu=0", "nvidia.com/gpu=1"]'
cA=$(jq -r . <<<"$CRI_OUT")
cri start "$cA"
vm_check "  ${dev[0]} and ${dev[2]}, beside GPUs 0 and 1, are in the pod, nothing else" \
	vm_expect_eq "${dev[0]} ${dev[2]}" "$(in_pod)"
vm_check "  cA: NCCL_IB_HCA==${dev[0]},${dev[2]}" vm_expect_eq "NCCL_IB_HCA==${dev[0]},${dev[2]}" "$(hca_of "$cA")"
cri exec "$cA" 'json:["sh", "-c", "ls /dev/nvidia*"]'
vm_check "  cA has /dev/nvidia0 and /dev/nvidia1 (containerd's CDI)" vm_expect_eq "/dev/nvidia0 /dev/nvidia1" \
	"$(jq -r .stdout <<<"$CRI_OUT" | xargs)"

rt_here "CreateContainer cB with CDI device nvidia.com/gpu=3" \
	cri create "$pod" cB "$IMG" 'json:["sleep", "1000000"]' 'json:["nvidia.com/gpu=3"]'
cB=$(jq -r . <<<"$CRI_OUT")
cri start "$cB"
vm_check "  ${dev[6]}, beside GPU 3, joins them" vm_expect_eq "${dev[0]} ${dev[2]} ${dev[6]}" "$(in_pod)"
vm_check "  cB: NCCL_IB_HCA==${dev[6]}: its own rail, not cA's" vm_expect_eq "NCCL_IB_HCA==${dev[6]}" "$(hca_of "$cB")"
vm_check "  cA's settings are as they were" vm_expect_eq "NCCL_IB_HCA==${dev[0]},${dev[2]}" "$(hca_of "$cA")"
vm_check "  rdmans-nri's record of the pod names the three" vm_expect_eq "${dev[0]} ${dev[2]} ${dev[6]}" \
	"$(grep -hv '^netns ' /run/rdmans/nri/* | sort | xargs)"

rt_here "CreateContainer cC without GPUs" cri create "$pod" cC "$IMG" 'json:["sleep", "1000000"]'
cC=$(jq -r . <<<"$CRI_OUT")
cri start "$cC"
vm_check "  cC: every device of the pod" vm_expect_eq "NCCL_IB_HCA==${dev[0]},${dev[2]},${dev[6]}" "$(hca_of "$cC")"
vm_check "  nothing moved for it" vm_expect_eq "${dev[0]} ${dev[2]} ${dev[6]}" "$(in_pod)"
vm_diag "rdmans-nri: $(grep -v registered /tmp/nri.log | tr '\n' ' ')"

rt_here "StopPodSandbox" cri stopp "$pod"
rt_here "RemovePodSandbox" cri rmp "$pod"
vm_check "the three are home" sh -c "rdma dev show ${dev[0]} && rdma dev show ${dev[2]} && rdma dev show ${dev[6]}"
vm_check "no record is left" sh -c "[ -z \"\$(ls /run/rdmans/nri 2>/dev/null)\" ]"
kill "$NRI_PID" 2>/dev/null
vm_done
