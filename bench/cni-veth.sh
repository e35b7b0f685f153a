#!/bin/bash
# ADD+DEL of a veth move into a pod and back, on the host kernel:
#   rdma-netns     the plugin (main mode, no IPAM, "requireRdma": false)
#   host-device    the reference plugin from containernetworking-plugins
#                  (/usr/lib/cni/host-device), same job
#   ip -batch      the floor: the same kernel operations (alias, move+rename,
#                  up; move back+rename, alias cleared) by iproute2, fewest
#                  processes (3 per cycle: host, pod, host)
# Each is run in one go, interleaved in rounds, on one veth. Prints ms per
# ADD+DEL cycle (median and mean) and the ratios. Root.
#
#   bench/cni-veth.sh [CYCLES]       (default 300)
#   RDMA_NETNS=path   the plugin (default: a release build in $RDMANS_BENCH_BUILD, build-bench)
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
n=${1:-300}
[ "$(id -u)" = 0 ] || { echo "cni-veth.sh: needs root" >&2; exit 1; }
plugin=${RDMA_NETNS:-}
if [ -z "$plugin" ]; then
	b=$top/${RDMANS_BENCH_BUILD:-build-bench}
	[ -d "$b" ] || meson setup "$b" -Dbuildtype=release >/dev/null
	ninja -C "$b" src/cni/rdma-netns >/dev/null
	plugin=$b/src/cni/rdma-netns
fi
hd=/usr/lib/cni/host-device
[ -x "$hd" ] || { echo "cni-veth.sh: $hd missing (apt-get install containernetworking-plugins)" >&2; exit 1; }

tmp=$(mktemp -d /var/tmp/rnb.XXXXXX)
cleanup() {
	ip netns del rnb-pod 2>/dev/null || true
	ip link del rnb0 2>/dev/null || true
}
cleanup
trap 'cleanup; rm -rf "$tmp"' EXIT
ip link add rnb0 type veth peer name rnb0p
ip netns add rnb-pod
export RDMA_NETNS_STATE_DIR=$tmp/state RDMA_NETNS_DEVINFO_DIR=$tmp/devinfo
export CNI_CONTAINERID=bench1 CNI_NETNS=/var/run/netns/rnb-pod CNI_IFNAME=net1 CNI_PATH=/usr/lib/cni
conf_rn='{"cniVersion":"1.0.0","name":"bench","type":"rdma-netns","device":"rnb0","requireRdma":false}'
conf_hd='{"cniVersion":"1.0.0","name":"bench","type":"host-device","device":"rnb0"}'
self=$$
printf 'link set dev rnb0 alias rnb0\nlink set dev rnb0 netns rnb-pod name net1\n' >"$tmp/add-host"
printf 'link set dev net1 up\nlink set dev net1 netns %s name rnb0\n' "$self" >"$tmp/pod"
printf 'link set dev rnb0 alias ""\n' >"$tmp/del-host"

now_ns() { date +%s%N; }
cycle_rn() {
	CNI_COMMAND=ADD "$plugin" <<<"$conf_rn" >/dev/null
	CNI_COMMAND=DEL "$plugin" <<<"$conf_rn" >/dev/null
}
cycle_hd() {
	CNI_COMMAND=ADD "$hd" <<<"$conf_hd" >/dev/null
	CNI_COMMAND=DEL "$hd" <<<"$conf_hd" >/dev/null
}
cycle_ip() {
	ip -batch "$tmp/add-host"
	ip -n rnb-pod -batch "$tmp/pod"
	ip -batch "$tmp/del-host"
}
# sanity: each really moves and restores
for f in cycle_rn cycle_hd cycle_ip; do
	$f || { echo "cni-veth.sh: $f failed" >&2; exit 1; }
	ip link show rnb0 >/dev/null || { echo "cni-veth.sh: $f did not bring rnb0 back" >&2; exit 1; }
done
CNI_COMMAND=ADD "$plugin" <<<"$conf_rn" >/dev/null
ip -n rnb-pod link show net1 >/dev/null || { echo "cni-veth.sh: rdma-netns did not move rnb0" >&2; exit 1; }
CNI_COMMAND=DEL "$plugin" <<<"$conf_rn" >/dev/null

: >"$tmp/rn"
: >"$tmp/hd"
: >"$tmp/ip"
rounds=10
per=$(((n + rounds - 1) / rounds))
for ((r = 0; r < rounds; r++)); do
	for k in rn hd ip; do
		for ((i = 0; i < per; i++)); do
			t0=$(now_ns)
			"cycle_$k"
			echo $(($(now_ns) - t0)) >>"$tmp/$k"
		done
	done
done

stats() { # median and mean in ms
	sort -n "$1" | awk '{ v[NR] = $1; s += $1 } END {
		m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		printf "%.2f %.2f", m / 1e6, s / NR / 1e6 }'
}
read -r rn_med rn_mean <<<"$(stats "$tmp/rn")"
read -r hd_med hd_mean <<<"$(stats "$tmp/hd")"
read -r ip_med ip_mean <<<"$(stats "$tmp/ip")"
echo "ADD+DEL of a veth move, $((per * rounds)) cycles each, $(nproc) CPUs, kernel $(uname -r)"
printf '%-34s %8s %8s\n' "" "median" "mean"
printf '%-34s %6s ms %6s ms\n' "rdma-netns ($(basename "$(dirname "$(dirname "$(dirname "$plugin")")")"))" "$rn_med" "$rn_mean"
printf '%-34s %6s ms %6s ms\n' "host-device (/usr/lib/cni)" "$hd_med" "$hd_mean"
printf '%-34s %6s ms %6s ms\n' "ip -batch (floor, 3 processes)" "$ip_med" "$ip_mean"
awk -v a="$rn_med" -v b="$hd_med" -v c="$ip_med" 'BEGIN {
	printf "rdma-netns / host-device: %.2f   rdma-netns / ip -batch: %.2f   (medians)\n", a / b, a / c }'
