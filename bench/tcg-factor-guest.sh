#!/bin/bash
# Guest half of bench/tcg-factor.sh: the same probe as on the host, in the VM.
set -u
. "${RDMANS_VM_LIB:-$(dirname "$0")/../tests/vm/guest-lib.sh}"
. "$(dirname "$0")/tcg-factor-lib.sh"
vm_diag "in the VM: $(tcg_probe_ms "$RDMANS_BUILD_DIR/src/cli/rdmans" "${TEST_BENCH_RUNS:-40}") ms per probe (median)"
vm_ok "probe timed"
vm_done
