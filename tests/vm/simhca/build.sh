#!/bin/bash
# build.sh [OUTDIR]
#
# Builds the simhca test-double kernel module (simhca.ko) for the kernel the
# VM suite boots, and prints the path of the .ko on stdout: ../kmod-build.sh
# says where OUTDIR defaults to, and how the current world
# (RDMANS_VM_WORLD=current) builds with its own root's compiler.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
exec "$HERE/../kmod-build.sh" simhca "$HERE" "${1:-}"
