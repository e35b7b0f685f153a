#!/bin/bash
# Guest side of bench/device-plugin.sh.
set -u
. "$RDMANS_VM_LIB"
vm_kubelet_env
vm_load_rdma
vm_load_simhca
"$R" system set netns exclusive || vm_fail "exclusive mode"
for i in 0 1 2 3 4 5 6 7; do
	vm_veth "h$i" "p$i" && vm_simhca_new "mlx5_%d" "h$i" >/dev/null || vm_fail "simhca on h$i"
done
$K serve "$DIR" "$LOG" 2>/run/kubelet/kubelet.err &
vm_poll 60 test -S "$DIR/kubelet.sock" || vm_fail "kubelet.py"
unhealthy_list() { $K last-list "$LOG" rdmans.io/rdma | grep -q "^simhca.roce.3 Unhealthy"; }
healthy_list() { [ "$($K last-list "$LOG" rdmans.io/rdma | grep -c ' Healthy ')" = 8 ]; }
for poll in 1000 200; do
	"$DP" --plugin-dir "$DIR" --poll-ms "$poll" 2>/run/kubelet/plugin.err &
	pid=$!
	vm_poll 120 healthy_list || vm_fail "8 Healthy devices"
	if [ "$poll" = 1000 ]; then
		set -- $($K time-allocate "$DIR" rdmans-rdma.sock "${TEST_BENCH_N:-200}" simhca.roce.0 simhca.roce.1)
		echo "# Allocate of 2 devices, ${TEST_BENCH_N:-200} calls: median $1 ms, p99 $2 ms, max $3 ms"
	fi
	lat=()
	for round in 1 2 3 4 5; do
		t0=$(date +%s.%N)
		ip link set h3 down
		vm_poll 60 unhealthy_list || vm_fail "no Unhealthy list"
		t1=$(grep '"event": "list"' "$LOG" | tail -n 1 | sed 's/.*"t": \([0-9.]*\).*/\1/')
		lat+=("$(echo "($t1 - $t0) * 1000" | bc | cut -d. -f1)")
		ip link set h3 up
		vm_poll 60 healthy_list || vm_fail "Healthy again"
	done
	echo "# port down -> ListAndWatch at --poll-ms $poll: ${lat[*]} ms"
	kill "$pid"
	wait "$pid"
done
vm_ok "figures printed"
vm_done
