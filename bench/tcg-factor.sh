#!/bin/bash
# How much slower the VM (TCG emulation, no KVM here) runs rdmans' per-pod
# probe than this host does, so that the VM's absolute figures (bench/cri-nri.sh,
# cri-8rail.sh, ping-vs-perftest.sh) can be read as a native machine's: the same
# `rdmans env --netns` (release build) timed N times natively and in the VM.
#   bench/tcg-factor.sh [N]     (default 40)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/tcg-factor-lib.sh"
bench_release_build tcg-factor.sh src/cli/rdmans tests/vm/simhca.ko
native=$(tcg_probe_ms "$build/src/cli/rdmans" "${1:-40}")
echo "native: $native ms per probe (median)"
out=$(RDMANS_BUILD_DIR=$build RDMANS_SIMHCA_KO=$build/tests/vm/simhca.ko TEST_BENCH_RUNS=${1:-40} \
	tests/vm/vm-run.sh bench/tcg-factor-guest.sh)
echo "$out" | grep '^#'
vm=$(sed -n 's/.*in the VM: \([0-9.]*\) ms.*/\1/p' <<<"$out")
awk -v v="$vm" -v n="$native" 'BEGIN { printf "the VM is %.1fx slower at it\n", v / n }'
