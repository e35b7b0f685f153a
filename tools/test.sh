#!/bin/bash
# Installs, builds (-Werror, ASan+UBSan) and runs every suite: unit, netns, vm.
# Usage: tools/test.sh [meson test args, e.g. --suite unit]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
build=${RDMANS_TEST_BUILD:-build-test}

tools/install-deps.sh
tests/vm/prepare.sh
# the current world: sid's kernel and userland root (cached; about 70 s the first time)
RDMANS_VM_WORLD=current tests/vm/prepare.sh
if [ ! -d "$build" ]; then
	meson setup "$build" -Dwerror=true -Dnri=enabled -Db_sanitize=address,undefined -Db_lundef=false \
		-Dfault_injection=true
fi
# the test build kills rdma-netns at chosen steps (never a release build)
meson configure "$build" -Dfault_injection=true -Dnri=enabled >/dev/null
ninja -C "$build"
tools/check-format.sh

rc=0
# ASan's leak checker needs ptrace, which namespaces tests may not have; leaks are still reported.
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0} \
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
	meson test -C "$build" --print-errorlogs --num-processes 2 "$@" || rc=$?

# The fuzz targets (tests/fuzz), a few seconds each from their seeds, in a
# clang build of their own (build-fuzz): they must build and find nothing.
# Only for the whole run (no meson test arguments); tools/fuzz.sh runs longer.
if [ $# = 0 ]; then
	tools/fuzz.sh --all "${RDMANS_FUZZ_SECONDS:-5}" || rc=1
fi

# One closing line for people and CI: N passed, N failed, N skipped (meson tests).
python3 - "$build/meson-logs/testlog.json" <<'PY' || rc=1
import json, sys
res = [json.loads(l)["result"] for l in open(sys.argv[1]) if l.strip()]
ok = sum(r in ("OK", "EXPECTEDFAIL") for r in res)
skip = sum(r == "SKIP" for r in res)
fail = len(res) - ok - skip
print(f"{ok} passed, {fail} failed, {skip} skipped")
# A skipped suite proves nothing: treat it as a failure.
sys.exit(1 if fail or skip or not res else 0)
PY
exit $rc
