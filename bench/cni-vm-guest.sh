#!/bin/bash
# Guest half of bench/cni-vm.sh (runs in the VM as root).
set -eu
. "$RDMANS_VM_LIB"
n=${TEST_BENCH_CYCLES:-30}
plugin=$RDMANS_BUILD_DIR/src/cni/rdma-netns
vm_load_rdma exclusive
vm_load_simhca
vm_veth h0 p0
dev=$(vm_simhca_new "irdma%d" h0)
ip netns add pod
ip netns attach host 1
export RDMA_NETNS_STATE_DIR=/tmp/bench-state CNI_CONTAINERID=bench CNI_NETNS=/var/run/netns/pod \
	CNI_IFNAME=net1 CNI_PATH=/usr/lib/cni
conf="{\"cniVersion\":\"1.0.0\",\"name\":\"bench\",\"type\":\"rdma-netns\",\"device\":\"h0\"}"

# The figures are taken with address space randomization, the kernel's default
# (tests/vm/vm-run.sh boots guests with norandmaps; TEST_BENCH_ASLR below)
echo 2 >/proc/sys/kernel/randomize_va_space
if [ "${TEST_BENCH_MODE:-rdma}" = perf ]; then
	# where the CPU goes, rdma-netns against host-device (bench/cni-perf.sh)
	RDMA_NETNS=$plugin "$(dirname "$0")/cni-perf.sh" "$n"
	exit 0
fi
if [ "${TEST_BENCH_MODE:-rdma}" = veth ]; then
	# this machine's figures for bench/cni-steps.sh and bench/cni-veth.sh (x3)
	export RDMA_NETNS=$plugin RDMANS_BENCH_CURRENT=0
	steps=${TEST_BENCH_STEPS:-5}
	if [ "$steps" != 0 ]; then
		"$(dirname "$0")/cni-steps.sh" "$steps"
		echo
		echo "== with an RDMA device: $dev bound to h0 (host-device moves the netdev alone)"
		RDMANS_BENCH_DEVICE=h0 "$(dirname "$0")/cni-steps.sh" "$steps"
	fi
	runs=${TEST_BENCH_RUNS:-3}
	# TEST_BENCH_ASLR="2 0": the runs with address space randomization (the
	# kernel's default, 2), then without (0): under TCG a translated block is
	# found again by its virtual address, so randomized code is translated anew
	# by every process
	for aslr in ${TEST_BENCH_ASLR:-2}; do
		echo "$aslr" >/proc/sys/kernel/randomize_va_space
		for ((run = 1; run <= runs; run++)); do
			echo
			echo "== bench/cni-veth.sh $n, run $run of $runs, randomize_va_space=$aslr"
			"$(dirname "$0")/cni-veth.sh" "$n"
		done
	done
	exit 0
fi

cycle_rn() {
	CNI_COMMAND=ADD "$plugin" <<<"$conf" >/dev/null
	CNI_COMMAND=DEL "$plugin" <<<"$conf" >/dev/null
}
cycle_manual() {
	ip link set h0 netns pod name net1
	rdma dev set "$dev" netns pod
	ip netns exec pod rdma dev set "$dev" netns host
	ip -n pod link set net1 netns 1 name h0
}
for f in cycle_rn cycle_manual; do # both really move, and bring back
	$f
	rdma dev show "$dev" >/dev/null && ip link show h0 >/dev/null || { echo "$f did not bring $dev and h0 back" >&2; exit 1; }
done
CNI_COMMAND=ADD "$plugin" <<<"$conf" >/dev/null
ip netns exec pod rdma dev show "$dev" >/dev/null || { echo "rdma-netns did not move $dev" >&2; exit 1; }
CNI_COMMAND=DEL "$plugin" <<<"$conf" >/dev/null

: >/tmp/rn
: >/tmp/manual
rounds=5
per=$(((n + rounds - 1) / rounds))
for ((r = 0; r < rounds; r++)); do
	for k in rn manual; do
		for ((i = 0; i < per; i++)); do
			t0=$(date +%s%N)
			"cycle_$k"
			echo $(($(date +%s%N) - t0)) >>"/tmp/$k"
		done
	done
done
stats() {
	sort -n "$1" | awk '{ v[NR] = $1; s += $1 } END {
		m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		printf "%.1f %.1f", m / 1e6, s / NR / 1e6 }'
}
read -r a am <<<"$(stats /tmp/rn)"
read -r b bm <<<"$(stats /tmp/manual)"
echo "ADD+DEL of RDMA device $dev + netdev h0, $((per * rounds)) cycles each, VM (TCG) kernel $(uname -r)"
printf '%-36s %9s %9s\n' "" "median" "mean"
printf '%-36s %6s ms %6s ms\n' "rdma-netns (2 processes)" "$a" "$am"
printf '%-36s %6s ms %6s ms\n' "ip link + rdma dev set (5 execs)" "$b" "$bm"
awk -v a="$a" -v b="$b" 'BEGIN { printf "rdma-netns / by hand: %.2f (medians)\n", a / b }'
