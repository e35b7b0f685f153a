#!/bin/bash
# Installs, builds and runs the demo: boots a VM with Debian's kernel (real
# ib_core, rdma_rxe and the simulated HCA) and walks doc 003's manual steps
# with rdmans doing each one.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
build=${RDMANS_DEMO_BUILD:-build}

tools/install-deps.sh
[ -d "$build" ] || meson setup "$build"
ninja -C "$build"
RDMANS_BUILD_DIR=$top/$build tests/vm/vm-run.sh tests/vm/demo.sh
