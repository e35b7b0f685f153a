#!/bin/bash
# Guest half of bench/cri-8rail.sh (current world). Output is TAP, so that the
# runtime suite can run one round of it (current-bench-cri-8rail): every pod
# comes up with its 8 rails and the node is as before after each removal.
set -u
. "$(dirname "$0")/../tests/runtime/runtime-lib.sh"
top=$(cd "$(dirname "$0")/.." && pwd)
rounds=${TEST_BENCH_ROUNDS:-5}
kinds=${TEST_BENCH_KINDS:-rdma8 rdma8hl hd8} # the test (current-bench-cri-8rail) runs rdma8 alone
PAUSE=localhost/rdmans-pause:1

rt_setup
rt_pause_image "$PAUSE"
vm_diag "$(containerd --version); $(runc --version | head -n 1); host-device $(/usr/lib/cni/host-device </dev/null 2>&1 | head -n 1)"
mkdir -p /etc/containerd /etc/cni/net.d /etc/cni/rdma8 /etc/cni/rdma8hl /etc/cni/hd8
for i in 0 1 2 3 4 5 6 7; do
	vm_veth "h$i" "p$i" || vm_fail "veth h$i"
	d=$(vm_simhca_new "mlx5_%d" "h$i") || vm_fail "simhca on h$i"
	aux=$(awk -v d="$d" '$2 == d { print $4 }' /sys/bus/simhca/list)
	jq --arg id "$aux" --arg n "rail$i" --arg r "10.$((70 + i)).0.0/16" --arg g "10.$((70 + i)).0.1" \
		'.name = $n | .plugins[0].deviceID = $id | .plugins[0].ipam.range = $r | .plugins[0].ipam.gateway = $g' \
		"$top/cni-conf/10-rdma-netns.conflist" >"/etc/cni/rdma8/1$i-rail.conflist"
	jq --arg n "rail$i" --arg s "10.$((80 + i)).0.0/24" \
		'.plugins[0].ipam = {type: "host-local", subnet: $s, dataDir: "/run/hl"}' \
		"/etc/cni/rdma8/1$i-rail.conflist" >"/etc/cni/rdma8hl/1$i-rail.conflist"
	jq -n --arg n "rail$i" --arg d "h$i" --arg s "10.$((90 + i)).0.0/24" \
		'{cniVersion: "1.0.0", name: $n, plugins: [{type: "host-device", device: $d,
		  ipam: {type: "host-local", subnet: $s, dataDir: "/run/hl"}}]}' >"/etc/cni/hd8/1$i-rail.conflist"
done
cp /etc/cni/rdma8/10-rail.conflist /etc/cni/net.d/
{
	echo 'version = 3'
	echo "[plugins.'io.containerd.cri.v1.images'.pinned_images]"
	echo "  sandbox = '$PAUSE'"
	for k in rdma8 rdma8hl hd8; do
		echo "[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.$k]"
		echo "  runtime_type = 'io.containerd.runc.v2'"
		echo "  cni_conf_dir = '/etc/cni/$k'"
		echo "  cni_max_conf_num = 8"
	done
} >/etc/containerd/config.toml
cri_containerd /etc/containerd/config.toml
cri_images "$IMG" "$PAUSE"
cri_start

snap() {
	local i
	"$R" dev --all-netns
	for i in 0 1 2 3 4 5 6 7; do ip -o link show "h$i" | sed 's/ qlen.*//; s/ link-netnsid.*//'; done
	ip netns list
}
before=$(snap)
node_back() { # the snapshot equals $before once the ports are up again (bounded)
	local i
	for i in $(seq 1 150); do
		[ "$(snap)" = "$before" ] && return 0
		sleep 0.2
	done
	vm_expect_eq "$before" "$(snap)"
}
now_ms() { echo $(($(date +%s%N) / 1000000)); }
for k in rdma8 rdma8hl hd8; do : >"/tmp/run-$k" && : >"/tmp/stop-$k"; done
for ((r = 1; r <= rounds; r++)); do
	for k in $kinds; do
		t0=$(now_ms)
		rt_here "round $r, $k: RunPodSandbox with 8 networks" cri runp "pod-$k-$r" "" "json:{}" "$k" || continue
		t1=$(now_ms)
		id=$(jq -r . <<<"$CRI_OUT")
		cri pstatus "$id"
		ns=$(jq -r .netns <<<"$CRI_OUT")
		vm_check "  8 rails in the pod" vm_expect_eq 8 \
			"$(ip -n "${ns##*/}" -o -4 addr show | grep -c ' 10\.[789][0-9]\.')"
		t2=$(now_ms)
		rt_here "  StopPodSandbox" cri stopp "$id"
		rt_here "  RemovePodSandbox" cri rmp "$id"
		t3=$(now_ms)
		# host-device leaves its netdev down with its alias set (vm-cni saw it too): undo that
		[ "$k" != hd8 ] || for i in 0 1 2 3 4 5 6 7; do ip link set "h$i" alias "" up; done
		rt_here "  the node is as before" node_back
		echo $((t1 - t0)) >>"/tmp/run-$k"
		echo $((t3 - t2)) >>"/tmp/stop-$k"
	done
done
med() { sort -n "$1" | awk '{ v[NR] = $1; s += $1 } END { if (NR) printf "%d %d", v[int((NR + 1) / 2)], s / NR; else printf "- -" }'; }
vm_diag "one pod, 8 rails, $rounds rounds (ms, median mean): RunPodSandbox | Stop+Remove"
for k in rdma8 rdma8hl hd8; do
	read -r m a <<<"$(med "/tmp/run-$k")"
	read -r sm sa <<<"$(med "/tmp/stop-$k")"
	eval "run_$k=$m"
	vm_diag "$(printf '%-28s %6s %6s | %6s %6s' "$k" "$m" "$a" "$sm" "$sa")"
done
[ "$kinds" != "rdma8 rdma8hl hd8" ] ||
	vm_diag "$(awk -v a="$run_rdma8" -v b="$run_hd8" -v c="$run_rdma8hl" 'BEGIN {
	printf "RunPodSandbox ratio: rdma-netns x8 / host-device x8 = %.2f; rdma-netns+host-local x8 / host-device x8 = %.2f (goal <= 1.2)", a / b, c / b }')"
vm_done
