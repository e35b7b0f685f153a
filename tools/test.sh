#!/bin/bash
# Installs, builds (-Werror, ASan+UBSan) and runs every suite: unit, netns, vm.
# Also cross-builds every binary for arm64 (tools/cross-build.sh), whose node
# tree the arm64 suite runs under qemu-system-aarch64.
# Usage: tools/test.sh [meson test args, e.g. --suite unit]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
build=${RDMANS_TEST_BUILD:-build-test}

tools/install-deps.sh
prep_today=$(tests/vm/prepare.sh --print)
# the current world: sid's kernel and userland root (cached; about 70 s the first time)
prep_current=$(RDMANS_VM_WORLD=current tests/vm/prepare.sh --print)
# the arm64 world: Debian's arm64 kernel and headers, a busybox root (about 25 s the first time)
prep_arm64=$(RDMANS_VM_WORLD=arm64 tests/vm/prepare.sh --print)
# the kubernetes store's tests: a real API server built from sid's packages (cached in
# /var/cache/rdmans-apiserver; the first time a sid root and a go build, about 15 min on 2 cores)
tools/apiserver.sh >/dev/null
if [ ! -d "$build" ]; then
	meson setup "$build" -Dwerror=true -Dnri=enabled -Ddevice_plugin=enabled -Db_sanitize=address,undefined -Db_lundef=false \
		-Dfault_injection=true
fi
# the test build kills rdma-netns at chosen steps (never a release build)
meson configure "$build" -Dfault_injection=true -Dnri=enabled -Ddevice_plugin=enabled >/dev/null
ninja -C "$build"
# prepare.sh's answers for vm-run.sh (RDMANS_VM_PREPARED): each guest test reads
# them instead of running prepare.sh's checks again
RDMANS_VM_PREPARED=$(cd "$build" && pwd)/vm-prepared
export RDMANS_VM_PREPARED
mkdir -p "$RDMANS_VM_PREPARED"
echo "$prep_today" >"$RDMANS_VM_PREPARED/today"
echo "$prep_current" >"$RDMANS_VM_PREPARED/current"
echo "$prep_arm64" >"$RDMANS_VM_PREPARED/arm64"
tools/check-format.sh
# Every binary cross-built for arm64 (tools/cross-build.sh: -Werror, the
# release options); its node tree is what the arm64 suite runs. A break fails
# the run, after the suites.
t0=$SECONDS
cross_rc=0
tools/cross-build.sh arm64 || cross_rc=1
echo "arm64 cross build: $((SECONDS - t0)) s"

rc=$cross_rc
# ASan's leak checker needs ptrace, which namespaces tests may not have; leaks are still reported.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
logs=$build/meson-logs
rm -f "$logs/testlog.json" "$logs/hostlog.json"
if [ $# -gt 0 ]; then
	meson test -C "$build" --print-errorlogs --num-processes 2 "$@" || rc=$?
else
	# The whole run in two lanes side by side. Guests: the VM suites two at a
	# time (a guest has one vCPU), the unit tests among them. Host: one at a
	# time, the tests on this kernel's namespaces (they share netns names,
	# ports and etcd with each other, never with a guest), then the fuzz
	# targets (tests/fuzz, a few seconds each from their seeds, in a clang
	# build of their own: they must build and find nothing; tools/fuzz.sh
	# runs longer). The host lane's output follows the guests'.
	host_out=$logs/host-lane.out
	(
		r=0
		meson test -C "$build" --no-rebuild --print-errorlogs --num-processes 1 \
			--logbase hostlog --suite netns --suite node --suite image || r=1
		tools/fuzz.sh --all "${RDMANS_FUZZ_SECONDS:-5}" || r=1
		exit $r
	) >"$host_out" 2>&1 &
	host=$!
	meson test -C "$build" --no-rebuild --print-errorlogs --num-processes 2 \
		--no-suite netns --no-suite node --no-suite image || rc=$?
	wait "$host" || rc=1
	echo "--- the host lane: netns, node, image, fuzz ---"
	cat "$host_out"
fi

# One closing line for people and CI: N passed, N failed, N skipped (meson tests, both lanes).
python3 - "$logs/testlog.json" "$logs/hostlog.json" <<'PY' || rc=1
import json, os, sys
tests = [json.loads(l) for f in sys.argv[1:] if os.path.exists(f) for l in open(f) if l.strip()]
res = [t["result"] for t in tests]
# What each failed TAP test said at its failures (the "not ok" line and the
# diagnostics after it), so that a CI log's tail shows the cause.
for t in tests:
    if t["result"] in ("OK", "EXPECTEDFAIL", "SKIP"):
        continue
    lines = t.get("stdout", "").splitlines()
    shown = []
    for i, l in enumerate(lines):
        if l.startswith("not ok"):
            shown.append(l)
            for d in lines[i + 1:i + 21]:
                if not d.startswith("#"):
                    break
                shown.append(d)
    print(f"--- {t['name']}: {t['result']} after {t['duration']:.0f} s ---")
    print("\n".join(shown[-60:] or lines[-30:]))
print("durations: " + ", ".join(f"{t['name'].split(' / ')[-1]} {t['duration']:.0f}"
                                 for t in sorted(tests, key=lambda t: -t["duration"])[:12]))
ok = sum(r in ("OK", "EXPECTEDFAIL") for r in res)
skip = sum(r == "SKIP" for r in res)
fail = len(res) - ok - skip
print(f"{ok} passed, {fail} failed, {skip} skipped")
# A skipped suite proves nothing: treat it as a failure.
sys.exit(1 if fail or skip or not res else 0)
PY
[ "$cross_rc" = 0 ] || echo "the arm64 cross build failed (tools/cross-build.sh arm64, above)"
exit $rc
