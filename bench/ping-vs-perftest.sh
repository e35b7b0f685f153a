#!/bin/bash
# rdmans ping against perftest between two soft-RoCE pods (rdma-netns with
# "softRoce": true gives each netns an rxe device on its end of a veth), in the
# current world (sid's 7.2 kernel, where rxe carries traffic between netns;
# tests/vm/prepare.sh): in one guest, on that one pod pair, interleaved in rounds,
#   bandwidth  rdmans ping's RDMA WRITE stream  vs  ib_write_bw -R  (65536 B)
#   latency    rdmans ping's SEND ping-pong p50 vs  ib_send_lat -R  t_typical (64 B)
#              rdmans ping's WRITE ping-pong p50 vs ib_write_lat -R t_typical (64 B)
# Prints each figure (median over the rounds) and the ratios; the goal is
# bandwidth >= 0.9x and latency <= 1.1x. TCG emulation: absolute figures are
# the VM's, the ratios are what carries. Not a test.
#   bench/ping-vs-perftest.sh [ROUNDS [ITERATIONS]]     (default 3 rounds of 500)
#   RDMANS_BENCH_BUILD=dir   the build to use (default build-bench: buildtype=release, no
#                            sanitizers; the guest refuses a sanitizer build)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bench_release_build ping-vs-perftest.sh src/cli/rdmans src/cni/rdma-netns
RDMANS_VM_WORLD=current RDMANS_BUILD_DIR=$build \
	TEST_BENCH_ROUNDS=${1:-3} TEST_BENCH_ITERS=${2:-500} RDMANS_VM_TIMEOUT=${RDMANS_VM_TIMEOUT:-1800} \
	tests/vm/vm-run.sh bench/ping-vs-perftest-guest.sh
