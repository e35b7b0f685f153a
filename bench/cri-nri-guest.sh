#!/bin/bash
# Guest half of bench/cri-nri.sh (current world): what rdmans-nri adds to
# CreateContainer through CRI. One pod that asks for its RDMA device
# (rdmans.io/devices); in each round, N CreateContainer calls with no plugin,
# then N with rdmans-nri registered (each gets the NCCL env and device
# nodes); the plugin is stopped between rounds. Prints the median and p90
# of each, the p50 added, and the plugin's own time per container (its log).
set -u
. "$(dirname "$0")/../tests/runtime/nri-lib.sh"
rounds=${TEST_BENCH_ROUNDS:-3}
per=${TEST_BENCH_PER:-20}

nri_node
nri_start
vm_poll 300 nri_registered 1 || vm_fail "rdmans-nri did not register"
cri runp podA "" "json:{\"rdmans.io/devices\": \"${dev[0]}\"}" || vm_fail "RunPodSandbox: $CRI_OUT"
podA=$(jq -r . <<<"$CRI_OUT")
kill "$NRI_PID" && wait "$NRI_PID" 2>/dev/null

ms_now() { echo $(($(date +%s%N) / 1000)); }
create_n() { # create_n LABEL: N CreateContainer calls, microseconds of each to /tmp/LABEL.us
	local i t0 t1 c
	for i in $(seq 1 "$per"); do
		t0=$(ms_now)
		cri create "$podA" "c-$1-$i" "$IMG" 'json:["sleep", "1000000"]' || vm_fail "CreateContainer: $CRI_OUT"
		t1=$(ms_now)
		c=$(jq -r . <<<"$CRI_OUT")
		echo $((t1 - t0)) >>"/tmp/$1.us"
		cri rmc "$c" >/dev/null || vm_fail "RemoveContainer: $CRI_OUT"
	done
}
rm -f /tmp/without.us /tmp/with.us
for r in $(seq 1 "$rounds"); do
	create_n without
	nri_start
	vm_poll 300 nri_registered "$r" || vm_fail "rdmans-nri did not register"
	create_n with
	kill "$NRI_PID" && wait "$NRI_PID" 2>/dev/null
	vm_ok "round $r: $per CreateContainer calls without rdmans-nri, $per with"
done
cri create "$podA" check "$IMG" 'json:["sleep", "1000000"]' >/dev/null
pct() { sort -n "$1" | awk -v p="$2" '{ v[NR] = $1 } END { i = int((NR - 1) * p / 100) + 1; printf "%.1f", v[i] / 1000 }'; }
w50=$(pct /tmp/without.us 50) w90=$(pct /tmp/without.us 90)
p50=$(pct /tmp/with.us 50) p90=$(pct /tmp/with.us 90)
grep -o '([0-9]* ms)' /tmp/nri.log | tr -d '(ms) ' >/tmp/plugin.ms
own50=$(sort -n /tmp/plugin.ms | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
vm_diag "CreateContainer through CRI, ms (p50 / p90), $((rounds * per)) calls each:"
vm_diag "  without rdmans-nri  $w50 / $w90"
vm_diag "  with rdmans-nri     $p50 / $p90"
vm_diag "  added at p50: $(awk -v a="$p50" -v b="$w50" 'BEGIN { printf "%.1f", a - b }') ms; the plugin's own time per container, p50: $own50 ms ($(wc -l </tmp/plugin.ms) containers)"
vm_diag "  (TCG emulation: absolute figures are the VM's)"
kill "$CTRD" 2>/dev/null
vm_done
