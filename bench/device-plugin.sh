#!/bin/bash
# rdmans-device-plugin's figures, in the VM (today's world: Debian's 6.1
# kernel, 8 simhca devices), driven by kubelet's side (tests/vm/kubelet.py):
#  - Allocate: N calls on one connection, as kubelet keeps one (median, p99, max);
#  - a port going down: the time from `ip link set down` to the ListAndWatch
#    message that says Unhealthy, at the default poll (1000 ms) and at 200 ms.
# Release build; TCG emulation: absolute times are the guest's.
#   bench/device-plugin.sh [N]     (default 200)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bench_release_build device-plugin.sh src/device-plugin/rdmans-device-plugin src/cli/rdmans \
	src/lib/device-plugin/kubelet_proto/deviceplugin.proto src/lib/device-plugin/kubelet_proto/podresources.proto tests/vm/simhca.ko
RDMANS_BUILD_DIR=$build RDMANS_SIMHCA_KO=$build/tests/vm/simhca.ko TEST_BENCH_N=${1:-200} \
	RDMANS_VM_TIMEOUT=${RDMANS_VM_TIMEOUT:-1200} tests/vm/vm-run.sh bench/device-plugin-guest.sh
