# shellcheck shell=bash
# Shared by the benchmarks. Source it from bench/NAME.sh:
#   bench_release_build NAME TARGET...   needs root; cd to the tree; a release
#       build in $RDMANS_BENCH_BUILD (build-bench), with TARGETs built; sets
#       top and build (absolute)
#   bench_host_start NAME TOOL...   needs root and each TOOL; takes the netns
#       suite's machine-wide lock (veths come and go: a test checking that bad
#       input changed no host link must not see them); sets top
#   bench_plugin   sets plugin: $RDMA_NETNS, or a release build's (made when missing)
#   bench_veth_pod [DEVICE]   the netns rnb-pod and the netdev the plugins
#       move into it: DEVICE, else a veth rnb0 (peer rnb0p) made here. The
#       netns, the veth, tmp (a directory made here) and each path added to
#       bench_rm_at_exit are gone at exit.
#       Exports the CNI environment of an ADD as net1; sets dev, and conf_rn
#       and conf_hd, rdma-netns's and host-device's network config for it
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

# bench_plugin: sets plugin, $RDMA_NETNS or rdma-netns from a release build in
# $RDMANS_BENCH_BUILD (build-bench), made when missing (after bench_host_start)
bench_plugin() {
	plugin=${RDMA_NETNS:-}
	if [ -z "$plugin" ]; then
		local b=$top/${RDMANS_BENCH_BUILD:-build-bench}
		[ -d "$b" ] || meson setup "$b" -Dbuildtype=release >/dev/null
		ninja -C "$b" src/cni/rdma-netns >/dev/null
		plugin=$b/src/cni/rdma-netns
	fi
}

# bench_ipam_binaries: sets b, IPAM and RDMANS: $RDMA_NETNS_IPAM and $RDMANS,
# or rdma-netns-ipam and rdmans from a release build in $RDMANS_BENCH_BUILD
# (build-bench-ipam), made when missing; RDMANS_BUILD_DIR is that build
bench_ipam_binaries() {
	b=$top/${RDMANS_BENCH_BUILD:-build-bench-ipam}
	if [ -z "${RDMA_NETNS_IPAM:-}" ]; then
		[ -d "$b" ] || meson setup "$b" -Dbuildtype=release >/dev/null
		ninja -C "$b" src/ipam/rdma-netns-ipam src/cli/rdmans >/dev/null
	fi
	RDMANS_BUILD_DIR=$b
	IPAM=${RDMA_NETNS_IPAM:-$b/src/ipam/rdma-netns-ipam}
	RDMANS=${RDMANS:-$b/src/cli/rdmans}
}

bench_veth_gone() {
	ip netns del rnb-pod 2>/dev/null || true
	[ "$dev" != rnb0 ] || ip link del rnb0 2>/dev/null || true
}
bench_veth_pod() {
	dev=${1:-rnb0}
	tmp=$(mktemp -d /var/tmp/rnb.XXXXXX)
	bench_veth_gone
	bench_rm_at_exit=()
	trap 'bench_veth_gone; rm -rf "$tmp" "${bench_rm_at_exit[@]}"' EXIT
	[ "$dev" != rnb0 ] || ip link add rnb0 type veth peer name rnb0p
	ip netns add rnb-pod
	export RDMA_NETNS_STATE_DIR=$tmp/state RDMA_NETNS_DEVINFO_DIR=$tmp/devinfo
	export CNI_CONTAINERID=bench1 CNI_NETNS=/var/run/netns/rnb-pod CNI_IFNAME=net1 CNI_PATH=/usr/lib/cni
	conf_rn="{\"cniVersion\":\"1.0.0\",\"name\":\"bench\",\"type\":\"rdma-netns\",\"device\":\"$dev\",\"requireRdma\":false}"
	conf_hd="{\"cniVersion\":\"1.0.0\",\"name\":\"bench\",\"type\":\"host-device\",\"device\":\"$dev\"}"
}

bench_host_start() {
	local me=$1 tool
	shift
	top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
	[ "$(id -u)" = 0 ] || { echo "bench/$me: needs root" >&2; exit 1; }
	for tool in "$@"; do
		command -v "$tool" >/dev/null || { echo "bench/$me: needs $tool" >&2; exit 1; }
	done
	exec 9>/run/lock/rdmans-netns-suite.lock
	flock 9
}
