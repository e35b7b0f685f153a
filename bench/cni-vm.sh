#!/bin/bash
# In the VM (Debian 6.1, real ib_core, a simulated HCA bound to a veth):
# ADD+DEL of an RDMA device with its netdev into a pod and back,
#   rdma-netns      the plugin, main mode, no IPAM
#   ip + rdma       by hand: ip link set h0 netns pod name net1, rdma dev set
#                   irdma0 netns pod; back: ip netns exec pod rdma dev set
#                   irdma0 netns host, ip -n pod link set net1 netns 1 name h0
# interleaved in rounds. Prints ms per cycle (median, mean) and the ratio.
# TCG emulation: absolute figures are the VM's, the ratio is what carries.
#   bench/cni-vm.sh [CYCLES]     (default 30)
# TEST_BENCH_MODE=veth: in the guest instead, bench/cni-steps.sh (TEST_BENCH_STEPS
# traced runs, 5; 0: none) on a veth and on the RDMA device's netdev, then
# bench/cni-veth.sh CYCLES three times in a row (TEST_BENCH_RUNS; RDMA_NETNS_BASE
# passes in too; TEST_BENCH_ASLR="2 0" runs them with address space
# randomization, then without).
# TEST_BENCH_MODE=perf: in the guest, bench/cni-perf.sh CYCLES (perf record of
# rdma-netns and host-device: where the guest's CPU goes).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bench_release_build cni-vm.sh src/cni/rdma-netns tests/vm/simhca.ko
RDMANS_VM_PASS_ENV="${RDMANS_VM_PASS_ENV:-} RDMA_NETNS_BASE" \
	RDMANS_BUILD_DIR=$build RDMANS_SIMHCA_KO=$build/tests/vm/simhca.ko \
	TEST_BENCH_CYCLES=${1:-30} RDMANS_VM_TIMEOUT=${RDMANS_VM_TIMEOUT:-900} \
	tests/vm/vm-run.sh bench/cni-vm-guest.sh
