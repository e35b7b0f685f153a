#!/bin/bash
# Guest script, current world: a pod that asks for rdmans.io/rdma, as a
# Kubernetes node runs it. rdmans-device-plugin as meson installs it serves
# kubelet's side (tests/vm/kubelet.py, kubelet's .proto files); its answers
# go where kubelet puts them:
#  - GetPreferredAllocation, then Allocate for the pod's container;
#  - the allocated device ID to rdma-netns as `deviceID`, which is what
#    Multus passes for a NAD's k8s.v1.cni.cncf.io/resourceName (here the
#    node's conflist names it, since Multus cannot run here);
#  - CRI CreateContainer with Allocate's CDIDevices and envs, as kubelet 1.28+
#    sends them, through containerd 2.1 with the CDI spec `rdmans cdi generate`
#    wrote.
# Each pod gets exactly its allocated device, moved, its device node, and
# NCCL settings naming it; a second pod gets another; the devices come home.
# RDMANS_CONTAINERD=1.7: the same with trixie's containerd 1.7 (prepare.sh puts
# it in the root's /opt/containerd-1.7), CDI turned on as 1.7 needs.
set -u
. "$(dirname "$0")/runtime-lib.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
PAUSE=localhost/rdmans-pause:1
K="python3 $top/tests/vm/kubelet.py"
export RDMANS_KUBELET_PROTOS=$B/src/lib/device-plugin/kubelet_proto RDMANS_KUBELET_PY=/run/kubelet/py
DIR=/var/lib/kubelet/device-plugins
LOG=/run/kubelet/events.jsonl
inns() { ip netns exec "${1##*/}" "${@:2}"; }

vm_load_rdma
vm_load_simhca
modprobe rdma_ucm 2>/dev/null
rt_t "install" rt_install
DP=$(jq -r --arg s "$B/src/device-plugin/rdmans-device-plugin" '.[$s]' "$B/meson-info/intro-installed.json")
rt_podman
rt_t "podman import" rt_image
rt_pause_image "$PAUSE"
vm_check "rdmans system set netns exclusive (the node's admin did, before any pod)" "$R" system set netns exclusive

for i in 0 1 2 3; do
	vm_veth "h$i" "p$i" || vm_fail "veth h$i"
	dev[i]=$(vm_simhca_new "mlx5_%d" "h$i") || vm_fail "simhca on h$i"
	aux[i]=$(awk -v d="${dev[i]}" '$2 == d { print $4 }' /sys/bus/simhca/list)
done
dev_of() { local i; for i in 0 1 2 3; do [ "${aux[i]}" = "$1" ] && echo "${dev[i]}"; done; }

# --- kubelet and the plugin -------------------------------------------------------------------
mkdir -p "$DIR" /run/kubelet
$K serve "$DIR" "$LOG" 2>/run/kubelet/kubelet.err &
KPID=$!
vm_poll 120 test -S "$DIR/kubelet.sock" || vm_fail "kubelet.py did not serve: $(tail -n 5 /run/kubelet/kubelet.err)"
"$DP" 2>/run/kubelet/plugin.err &
PLUGIN=$!
vm_kubelet_registered "rdmans-device-plugin registers" 240
healthy() { [ "$($K last-list "$LOG" rdmans.io/rdma | grep -c ' Healthy ')" = 4 ]; }
vm_check "rdmans-device-plugin (installed, default plugin dir) lists four Healthy devices" vm_poll 240 healthy

# --- the node: CNI and CDI as on a Kubernetes node ---------------------------------------------
mkdir -p /etc/cni/net.d /etc/cdi /etc/containerd
rm -f /etc/cni/net.d/*
vm_check "rdmans cdi generate --output /etc/cdi/rdmans.json" "$R" cdi generate --output /etc/cdi/rdmans.json
if [ "${RDMANS_CONTAINERD:-}" = 1.7 ]; then
	export PATH=/opt/containerd-1.7/bin:$PATH # containerd, its runc shim and ctr
	# 1.7 takes one CNI bin dir (Debian's default: /usr/lib/cni, the reference
	# plugins): ours, with the loopback plugin its CRI runs for every pod
	[ -e "$CNI_INSTALLED/loopback" ] || ln -s /usr/lib/cni/loopback "$CNI_INSTALLED/loopback"
	cat >/etc/containerd/config.toml <<CONF
version = 2
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE"
  enable_cdi = true
  cdi_spec_dirs = ["/etc/cdi", "/var/run/cdi"]
[plugins."io.containerd.grpc.v1.cri".cni]
  bin_dir = "$CNI_INSTALLED"
  conf_dir = "/etc/cni/net.d"
CONF
else
	{
		echo 'version = 3'
		echo "[plugins.'io.containerd.cri.v1.images'.pinned_images]"
		echo "  sandbox = '$PAUSE'"
	} >/etc/containerd/config.toml
fi
shipped=$top/cni-conf/10-rdma-netns.conflist
# what Multus hands rdma-netns for the pod's NAD: the device kubelet allocated
multus_conf() {
	jq --arg id "$1" '.plugins[0].deviceID = $id | .plugins[0].ipam.range = "10.70.0.0/16" |
		.plugins[0].ipam.gateway = "10.70.0.1"' "$shipped" >/etc/cni/net.d/10-rdma-netns.conflist.new &&
		mv /etc/cni/net.d/10-rdma-netns.conflist.new /etc/cni/net.d/10-rdma-netns.conflist
}
multus_conf "${aux[0]}"
rt_t "containerd start" cri_containerd /etc/containerd/config.toml
vm_diag "$(rt_world); $(containerd --version)"
cri_images "$IMG" "$PAUSE"
cri_start
cri_ready
rt_here "CRI Version answers" cri version
vm_check "  the runtime is containerd ${RDMANS_CONTAINERD:-2}" vm_expect_eq "containerd ${RDMANS_CONTAINERD:-2}" \
	"$(jq -r '.runtimeName + " " + (.runtimeVersion | ltrimstr("v") | split(".")[:(if env.RDMANS_CONTAINERD then 2 else 1 end)] | join("."))' <<<"$CRI_OUT")"

# a pod: kubelet's allocation, then its sandbox and container
declare -A pod ctr ns ip got
pod_up() { # pod_up NAME AVAILABLE: allocate one device out of AVAILABLE, run the pod
	local name=$1 available=$2 alloc cdi env
	vm_run_code 0 "$name: GetPreferredAllocation of 1 out of $available" \
		$K preferred "$DIR" rdmans-rdma.sock --available "$available" --size 1
	got[$name]=$OUT
	vm_run_code 0 "$name: Allocate ${got[$name]}" $K allocate "$DIR" rdmans-rdma.sock "${got[$name]}"
	alloc=$(jq -c '.container_responses[0]' <<<"$OUT")
	cdi=$(jq -c '[.cdi_devices[].name]' <<<"$alloc")
	env=$(jq -c '.envs' <<<"$alloc")
	vm_check "  Allocate: CDI device rdmans.io/rdma=$(dev_of "${got[$name]}")" vm_expect_eq \
		"[\"rdmans.io/rdma=$(dev_of "${got[$name]}")\"]" "$cdi"
	multus_conf "${got[$name]}"
	rt_here "$name: containerd loaded the conflist naming ${got[$name]}" cri_net_loaded "${got[$name]}"
	rt_here "$name: RunPodSandbox" cri runp "$name"
	pod[$name]=$(jq -r . <<<"$CRI_OUT")
	cri pstatus "${pod[$name]}"
	ns[$name]=$(jq -r .netns <<<"$CRI_OUT")
	ip[$name]=$(jq -r .ip <<<"$CRI_OUT")
	rt_here "$name: CreateContainer with Allocate's CDIDevices and envs" \
		cri create "${pod[$name]}" c "$IMG" 'json:["sleep", "1000000"]' "json:$cdi" "json:$env"
	ctr[$name]=$(jq -r . <<<"$CRI_OUT")
	rt_here "$name: StartContainer" cri start "${ctr[$name]}"
}

# containerd reloads a changed conflist on its own; the next RunPodSandbox
# must use the new one: wait until CRI Status (verbose) shows it loaded
cri_net_loaded() {
	local i
	for i in $(seq 1 300); do
		cri cniconfig && grep -qF "$1" <<<"$CRI_OUT" && return 0
		sleep 0.2
	done
	vm_diag "containerd's loaded CNI config never named $1: $(jq -r . <<<"$CRI_OUT" | tr -d '\n' | cut -c1-300)"
	return 1
}

in_ctr() { cri exec "${ctr[$1]}" "json:$(jq -cn --arg s "$2" '["sh", "-c", $s]')" && jq -r .stdout <<<"$CRI_OUT"; }

check_pod() { # check_pod NAME: the container has exactly its device, its node, its NCCL settings
	local name=$1 d node
	d=$(dev_of "${got[$name]}")
	node=$(jq -r --arg d "$d" '.devices[] | select(.name == $d) | .containerEdits.deviceNodes[0].path' /etc/cdi/rdmans.json)
	vm_check "  $name: the pod's netns holds $d only" vm_expect_eq "$d" \
		"$(inns "${ns[$name]}" rdma dev show 2>&1 | awk '{ print $2 }' | tr -d :)"
	in_ctr "$name" "ls /sys/class/infiniband; test -c $node && echo node" >/dev/null
	vm_check "  $name: the container sees $d only, and its node $node" vm_expect_eq "$d node" \
		"$(jq -r .stdout <<<"$CRI_OUT" | tr '\n' ' ' | sed 's/ *$//')"
	[ "$(jq -r .exit <<<"$CRI_OUT")" = 0 ] || vm_diag "ExecSync: $CRI_OUT"
	vm_check "  $name: NCCL_IB_HCA in PID 1's environment names exactly $d" vm_expect_eq "NCCL_IB_HCA==$d" \
		"$(in_ctr "$name" "tr '\\0' '\\n' </proc/1/environ | grep ^NCCL_IB_HCA=")"
	vm_check "  $name: /etc/nccl.conf from the CDI hook names $d" vm_expect_contains \
		"$(in_ctr "$name" "cat /etc/nccl.conf")" "NCCL_IB_HCA==$d"
}

all="${aux[0]},${aux[1]},${aux[2]},${aux[3]}"
pod_up pod1 "$all"
check_pod pod1
vm_check "pod1's device stays listed, Healthy, while in the pod" healthy
rest=$(tr ',' '\n' <<<"$all" | grep -vx "${got[pod1]}" | paste -sd,)
pod_up pod2 "$rest"
vm_check "pod2 got another device than pod1" test "${got[pod1]}" != "${got[pod2]}"
check_pod pod2

for name in pod1 pod2; do
	rt_here "$name: StopPodSandbox" cri stopp "${pod[$name]}"
	rt_here "$name: RemovePodSandbox" cri rmp "${pod[$name]}"
done
vm_check "every device is home" vm_expect_eq "host host host host" \
	"$(for i in 0 1 2 3; do rt_where "${dev[i]}"; done | tr '\n' ' ' | sed 's/ $//')"

vm_plugin_stops rdmans-device-plugin "$PLUGIN" /run/kubelet/plugin.err
kill "$KPID"
kill "$CTRD" && vm_wait_exit "$CTRD" 120 2>/dev/null
vm_done
