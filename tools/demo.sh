#!/bin/bash
# Installs, builds and runs the demo: boots a VM with Debian's kernel (real
# ib_core, rdma_rxe and simhca, our simulated HCA) and walks the IIJ E810 walkthrough's manual
# steps with rdmans doing each one.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
build=${RDMANS_DEMO_BUILD:-build-demo}

tools/install-deps.sh
tests/vm/prepare.sh
[ -d "$build" ] || meson setup "$build" >/dev/null
ninja -C "$build" all tests/vm/simhca.ko
RDMANS_BUILD_DIR=$top/$build RDMANS_SIMHCA_KO=$top/$build/tests/vm/simhca.ko \
	tests/vm/vm-run.sh tests/vm/demo.sh
