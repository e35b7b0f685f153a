#!/bin/bash
# Builds and runs the libFuzzer targets of tests/fuzz (clang, ASan+UBSan,
# in build-fuzz; -Dfuzz=true).
#   tools/fuzz.sh TARGET SECONDS   one target, e.g. tools/fuzz.sh fuzz-nccl-merge 600
#   tools/fuzz.sh --all SECONDS    every target, SECONDS each (tools/test.sh: a short run)
#   tools/fuzz.sh --list           the targets
# Each run starts from the seeds (tests/fuzz/corpus/TARGET) and the inputs
# kept by earlier runs (build-fuzz/corpus/TARGET). A crash or a broken
# property is saved as build-fuzz/crashes/TARGET-crash-*, reproduced with
# build-fuzz/tests/fuzz/TARGET FILE, and fails the run. Prints one line per
# target: its runs and seconds.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
build=${RDMANS_FUZZ_BUILD:-build-fuzz}
targets=(fuzz-nccl-merge fuzz-cni-conf fuzz-cni-args fuzz-ipam-config fuzz-ipam-range
	fuzz-ipam-record fuzz-cni-state fuzz-oci-state fuzz-oci-config fuzz-etcd-response fuzz-ping-wire
	fuzz-nri-wire fuzz-device-plugin-config)

usage() {
	echo "usage: tools/fuzz.sh TARGET SECONDS | --all SECONDS | --list" >&2
	exit 2
}
# the kubernetes store's kubeconfig reader (src/lib/ipam/ipam_kubeconfig.c)
targets+=(fuzz-kubeconfig)
# whereabouts' IPPools, as rdmans ipam import reads them (src/lib/ipam/ipam_import.c)
targets+=(fuzz-whereabouts-ippool)
# the GPU reader (src/lib/gpu/gpu.c)
targets+=(fuzz-gpu)
[ $# -ge 1 ] || usage
if [ "$1" = --list ]; then
	printf '%s\n' "${targets[@]}"
	exit 0
fi
[ $# = 2 ] && [[ $2 =~ ^[0-9]+$ ]] && [ "$2" -gt 0 ] || usage
secs=$2
if [ "$1" = --all ]; then
	run=("${targets[@]}")
else
	printf '%s\n' "${targets[@]}" | grep -qx -- "$1" ||
		{ echo "tools/fuzz.sh: no target '$1' (tools/fuzz.sh --list)" >&2; exit 2; }
	run=("$1")
fi
command -v clang >/dev/null || { echo "tools/fuzz.sh: clang is not installed (tools/install-deps.sh)" >&2; exit 1; }

if [ ! -d "$build" ]; then
	CC=clang meson setup "$build" -Dfuzz=true -Dnri=enabled -Dwerror=true -Db_sanitize=address,undefined \
		-Db_lundef=false >/dev/null
fi
if ! out=$(ninja -C "$build" "${run[@]/#/tests/fuzz/}" 2>&1); then
	printf '%s\n' "$out" | tail -30 >&2
	echo "tools/fuzz.sh: the fuzz targets do not build" >&2
	exit 1
fi

mkdir -p "$build/crashes"
rc=0
for t in "${run[@]}"; do
	mkdir -p "$build/corpus/$t"
	log=$build/fuzz-$t.log
	# new inputs go to the first directory (the build's), never into the tree's seeds
	status=0
	ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0} \
	UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
		timeout $((secs + 60)) "$build/tests/fuzz/$t" -max_total_time="$secs" -timeout=10 \
		-rss_limit_mb=2048 -max_len=8192 -print_final_stats=1 \
		-artifact_prefix="$build/crashes/$t-" "$build/corpus/$t" "tests/fuzz/corpus/$t" \
		>"$log" 2>&1 || status=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	if [ "$status" = 0 ]; then
		echo "$t: ${runs:-?} runs in ${secs} s, no crash"
	else
		rc=1
		echo "$t: FAILED after ${runs:-?} runs (exit $status):"
		grep -E 'property broken|ERROR: |SUMMARY|Test unit written' "$log" | head -5 | sed 's/^/  /'
	fi
done
exit $rc
