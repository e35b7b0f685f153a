#!/bin/bash
# Guest script, current world: a pod that holds rdmans-device-plugin's
# device on a node without Multus. Its pod network is host-device (the NIC's
# netdev only, as in cri-nri.sh); kubelet's side (tests/vm/kubelet.py, from
# kubelet's .proto files) allocates the device and lists it on the
# PodResources socket; rdmans-nri asks kubelet there at RunPodSandbox and
# moves exactly that device, and gives the container its device node and
# NCCL settings. The pod has no rdmans.io annotation and no CDI device.
set -u
. "$(dirname "$0")/nri-lib.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
K="python3 $top/tests/vm/kubelet.py"
export RDMANS_KUBELET_PROTOS=$B/src/lib/device-plugin/kubelet_proto RDMANS_KUBELET_PY=/run/kubelet/py
DIR=/var/lib/kubelet/device-plugins
PODRES=/var/lib/kubelet/pod-resources/kubelet.sock
STATE=/run/kubelet/allocations.json
LOG=/run/kubelet/events.jsonl

nri_node
vm_check "rdmans system set netns exclusive" "$R" system set netns exclusive
DP=$(jq -r --arg s "$B/src/device-plugin/rdmans-device-plugin" '.[$s]' "$B/meson-info/intro-installed.json")
aux0=$(awk -v d="${dev[0]}" '$2 == d { print $4 }' /sys/bus/simhca/list)
aux1=$(awk -v d="${dev[1]}" '$2 == d { print $4 }' /sys/bus/simhca/list)

mkdir -p "$DIR" /run/kubelet
$K serve "$DIR" "$LOG" "$PODRES" "$STATE" 2>/run/kubelet/kubelet.err &
KPID=$!
vm_poll 120 test -S "$PODRES" || vm_fail "kubelet.py did not serve: $(tail -n 5 /run/kubelet/kubelet.err)"
"$DP" 2>/run/kubelet/plugin.err &
PLUGIN=$!
vm_kubelet_registered "rdmans-device-plugin registers" 240
nri_start
vm_check "rdmans-nri registers with containerd" vm_poll 300 nri_registered 1

# --- kubelet admits the pod: Allocate, and its checkpoint lists the device ----------------------------
vm_run_code 0 "Allocate $aux0 for podK's container" $K allocate "$DIR" rdmans-rdma.sock "$aux0"
env=$(jq -c '.container_responses[0].envs' <<<"$OUT")
$K assign "$STATE" default podK c rdmans.io/rdma "$aux0"
# another pod's device, which podK must not get
$K assign "$STATE" default other c rdmans.io/rdma "$aux1"

rt_here "RunPodSandbox podK (no annotation; host-device gives it h0)" cri runp podK
podK=$(jq -r . <<<"$CRI_OUT")
cri pstatus "$podK"
nsK=$(jq -r .netns <<<"$CRI_OUT")
vm_check "  rdmans-nri asked kubelet's PodResources" grep -q '"event": "podresources-list"' "$LOG"
vm_check "  rdmans-nri moved exactly ${dev[0]} into podK" vm_expect_eq "${dev[0]}" \
	"$(inns "$nsK" rdma dev show 2>&1 | awk '{ print $2 }' | tr -d :)"
vm_check "  the other pod's ${dev[1]} stayed on the host" vm_expect_eq host "$(rt_where "${dev[1]}")"
vm_diag "rdmans-nri: $(grep -i 'podK' /tmp/nri.log | tr '\n' ' ')"
gid=$(inns "$nsK" sh -c "$RT_GID_SCRIPT" _ "${dev[0]}" "$(rt_gid_hex 10.80.0.2)")

rt_here "CreateContainer with Allocate's envs (no CDI device, no hook)" \
	cri create "$podK" c "$IMG" 'json:["sleep", "1000000"]' 'json:[]' "json:$env"
c=$(jq -r . <<<"$CRI_OUT")
rt_here "StartContainer" cri start "$c"
cri exec "$c" 'json:["sh", "-c", "tr \"\\0\" \"\\n\" </proc/1/environ | grep -E \"^NCCL_IB_(HCA|GID_INDEX)=\" | sort | tr \"\\n\" \" \"; ls /dev/infiniband | tr \"\\n\" \" \""]'
ex=$(jq -r .stdout <<<"$CRI_OUT")
vm_diag "in the container: $ex"
vm_diag "rdmans-nri at CreateContainer: $(grep 'container c of pod default/podK' /tmp/nri.log | tr '\n' ' ')"
vm_check "  PID 1: NCCL_IB_HCA from Allocate, the GID index from rdmans-nri" vm_expect_contains "$ex" \
	"NCCL_IB_GID_INDEX=$gid NCCL_IB_HCA==${dev[0]} "
vm_check "  its uverbs node and rdma_cm" vm_expect_contains "$ex" "rdma_cm uverbs"
rt_here "StopPodSandbox podK" cri stopp "$podK"
rt_here "RemovePodSandbox podK" cri rmp "$podK"
vm_check "${dev[0]} is home" vm_expect_eq host "$(rt_where "${dev[0]}")"

# --- kubelet gone: a pod without annotations starts as it came ------------------------------------
kill "$KPID"
vm_wait_exit "$KPID" 60
rt_here "with kubelet's socket gone, RunPodSandbox of a plain pod works" cri runp podL
podL=$(jq -r . <<<"$CRI_OUT")
vm_check "  nothing moved" vm_expect_eq "host host" "$(rt_where "${dev[0]}") $(rt_where "${dev[1]}")"
rt_here "StopPodSandbox podL" cri stopp "$podL"
rt_here "RemovePodSandbox podL" cri rmp "$podL"

vm_plugin_stops "rdmans-device-plugin (kubelet went away under it)" "$PLUGIN" /run/kubelet/plugin.err
vm_still_running "rdmans-nri (kubelet went away under it)" "$NRI_PID" /tmp/nri.log
kill "$NRI_PID" 2>/dev/null
kill "$CTRD" && vm_wait_exit "$CTRD" 120 2>/dev/null
vm_done
