# shellcheck shell=bash
# Shared by tests/runtime/cri-nri.sh and bench/cri-nri-guest.sh: a node
# whose pod network is host-device (no Multus, no rdma-netns), three veth
# "NICs" h0..h2 with a simhca RoCE device each (dev[0..2]), containerd 2.x
# with NRI on (its default) and a runtime handler per NIC (nic1, nic2; the
# default handler gets h0), and rdmans-nri as a DaemonSet runs it.
. "$(dirname "${BASH_SOURCE[0]}")/runtime-lib.sh"
PAUSE=localhost/rdmans-pause:1
inns() { ip netns exec "${1##*/}" "${@:2}"; } # a pod's netns (/var/run/netns/cni-...), its own /sys

nri_node() {
	rt_setup
	[ -x "$NRI" ] || vm_fail "meson install left no rdmans-nri (build with -Dnri=enabled)"
	rt_pause_image "$PAUSE"
	vm_diag "$(containerd --version)"
	for i in 0 1 2; do
		vm_veth "h$i" "p$i" || vm_fail "veth h$i"
		dev[i]=$(vm_simhca_new "mlx5_%d" "h$i") || vm_fail "simhca on h$i"
	done
	mkdir -p /etc/cni/net.d /etc/containerd
	rm -f /etc/cni/net.d/*
	nri_hdconf 0 >/etc/cni/net.d/10-nic.conflist
	{
		echo 'version = 3'
		# NRI's 2 s per request is meant for hardware; this guest runs under TCG, about
		# 30 times slower, beside other guests on the CI's two cores: there a pod's
		# RunPodSandbox (kubelet.py's PodResources answer, the move) can take longer,
		# and a plugin that misses the deadline is disconnected. The plugin keeps its
		# own patience (at most 1.5 s for the image's NCCL) whatever this says.
		echo "[plugins.'io.containerd.nri.v1.nri']"
		echo "  plugin_request_timeout = '60s'"
		echo "[plugins.'io.containerd.cri.v1.images'.pinned_images]"
		echo "  sandbox = '$PAUSE'"
		for i in 1 2; do
			echo "[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.nic$i]"
			echo "  runtime_type = 'io.containerd.runc.v2'"
			echo "  cni_conf_dir = '/etc/cni/nic$i'"
			echo "  cni_max_conf_num = 1"
			mkdir -p "/etc/cni/nic$i"
			nri_hdconf "$i" >"/etc/cni/nic$i/10-nic.conflist"
		done
	} >/etc/containerd/config.toml
	rt_t "containerd start" cri_containerd /etc/containerd/config.toml
	cri_images "$IMG" "$PAUSE"
	cri_start
	: >/tmp/nri.log
}

nri_hdconf() { # nri_hdconf I: host-device on h$I, 10.8$I.0.2/24
	jq -n --arg d "h$1" --arg a "10.8$1.0.2/24" '{cniVersion: "1.0.0", name: "nic\($d)", plugins: [
		{type: "host-device", device: $d, ipam: {type: "static", addresses: [{address: $a}]}}]}'
}

nri_start() { # the plugin as the DaemonSet runs it: connects to the socket, and again after restarts
	"$NRI" >>/tmp/nri.log 2>&1 &
	NRI_PID=$!
}

nri_registered() { # nri_registered N: its log says "registered" N times
	[ "$(grep -c ': registered as ' /tmp/nri.log)" -ge "$1" ]
}
