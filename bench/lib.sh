# shellcheck shell=bash
# Shared by the benchmarks that boot the VM. Source it from bench/NAME.sh:
#   bench_release_build NAME TARGET...   needs root; cd to the tree; a release
#       build in $RDMANS_BENCH_BUILD (build-bench), with TARGETs built; sets
#       top and build (absolute)
bench_release_build() {
	local me=$1
	shift
	top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
	cd "$top"
	[ "$(id -u)" = 0 ] || { echo "bench/$me: needs root" >&2; exit 1; }
	build=$top/${RDMANS_BENCH_BUILD:-build-bench}
	[ -d "$build" ] || meson setup "$build" -Dbuildtype=release >/dev/null
	ninja -C "$build" "$@" >/dev/null
}
