#!/bin/bash
# Benchmark: `rdmans -j dev` beside iproute2's `rdma -j dev` (and `rdma -j dev`
# + `rdma -j link`, which together print what rdmans prints) on the same
# devices, in one VM run. Release build, no sanitizers.
#   bench/dev-dump.sh [ITERATIONS]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
build=${RDMANS_BENCH_BUILD:-build-bench}
if [ "${RDMANS_IN_VM:-}" != 1 ]; then
	tests/vm/prepare.sh
	[ -d "$build" ] || meson setup "$build" -Dbuildtype=release >/dev/null
	ninja -C "$build" all tests/vm/simhca.ko >/dev/null
	RDMANS_BUILD_DIR=$top/$build RDMANS_SIMHCA_KO=$top/$build/tests/vm/simhca.ko \
		RDMANS_BENCH_ITER=${1:-300} exec tests/vm/vm-run.sh "$0"
fi

. "$RDMANS_VM_LIB"
R=$RDMANS_BUILD_DIR/src/cli/rdmans
n=$RDMANS_BENCH_ITER
vm_load_rdma >/dev/null
vm_load_simhca
for i in $(seq 0 7); do
	vm_veth "b$i" "bp$i"
	vm_simhca_new "mlx5_%d" "b$i" >/dev/null
done
vm_veth r0 rp0
rdma link add rxe0 type rxe netdev r0
ndev=$(rdma dev | grep -c .)

# loop CMD...: seconds for $n runs
loop() {
	local t0 t1
	t0=$(date +%s.%N)
	for ((i = 0; i < n; i++)); do "$@" >/dev/null; done
	t1=$(date +%s.%N)
	echo "$t1 - $t0" | bc -l
}
both() { rdma -j dev && rdma -j link; }
loop "$R" -j dev >/dev/null # warm caches
ours=$(loop "$R" -j dev)
theirs=$(loop rdma -j dev)
pair=$(loop both)
printf 'devices: %d (8 simhca + 1 rxe), %d runs each, in the VM (TCG)\n' "$ndev" "$n"
printf '%-32s %8.2f ms/run\n' "rdmans -j dev" "$(echo "$ours * 1000 / $n" | bc -l)"
printf '%-32s %8.2f ms/run\n' "rdma -j dev" "$(echo "$theirs * 1000 / $n" | bc -l)"
printf '%-32s %8.2f ms/run\n' "rdma -j dev; rdma -j link" "$(echo "$pair * 1000 / $n" | bc -l)"
printf 'ratio rdmans / rdma dev:            %.2f\n' "$(echo "$ours / $theirs" | bc -l)"
printf 'ratio rdmans / (rdma dev + link):   %.2f\n' "$(echo "$ours / $pair" | bc -l)"
