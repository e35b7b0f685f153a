#!/bin/bash
# What rdmans-nri adds to CreateContainer through containerd 2.x's CRI
# (current world: tests/vm/prepare.sh), with and without the plugin in one
# run, interleaved in rounds. The goal is under 2 ms added at p50.
#   bench/cri-nri.sh [ROUNDS [PER_ROUND]]     (default 3 x 20)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bench_release_build cri-nri.sh all tests/vm/simhca-current.ko
meson configure "$build" -Dnri=enabled >/dev/null
ninja -C "$build" >/dev/null
RDMANS_VM_WORLD=current RDMANS_BUILD_DIR=$build RDMANS_SIMHCA_KO=$build/tests/vm/simhca-current.ko \
	TEST_BENCH_ROUNDS=${1:-3} TEST_BENCH_PER=${2:-20} RDMANS_VM_TIMEOUT=${RDMANS_VM_TIMEOUT:-1800} \
	tests/vm/vm-run.sh bench/cri-nri-guest.sh
