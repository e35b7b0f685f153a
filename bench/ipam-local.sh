#!/bin/bash
# rdma-netns-ipam's local store beside the reference host-local plugin
# (/usr/lib/cni/host-local, containernetworking-plugins), same machine, same
# disk, each exec'ed as a runtime execs it:
#   1. ADD+DEL latency on an empty /20
#   2. ADD and DEL latency with the /20 10% and 90% full (host-local finds
#      a container's lease on DEL by reading every lease file; rdma-netns-ipam
#      reads the container's attachment record)
# Pools are filled by the plugins themselves (4 at a time). Cycles of the two
# plugins are interleaved in rounds. Prints ms: median, mean, p99.
#
#   bench/ipam-local.sh [CYCLES]      (default 200; fill phases use CYCLES/2)
#   RDMA_NETNS_IPAM=path   the plugin (default: a release build in build-bench-ipam)
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
n=${1:-200}
m=$((n / 2))
plugin=${RDMA_NETNS_IPAM:-}
if [ -z "$plugin" ]; then
	b=$top/${RDMANS_BENCH_BUILD:-build-bench-ipam}
	[ -d "$b" ] || meson setup "$b" -Dbuildtype=release >/dev/null
	ninja -C "$b" src/ipam/rdma-netns-ipam >/dev/null
	plugin=$b/src/ipam/rdma-netns-ipam
fi
hl=/usr/lib/cni/host-local
[ -x "$hl" ] || { echo "ipam-local.sh: $hl missing (apt-get install containernetworking-plugins)" >&2; exit 1; }

tmp=$(mktemp -d /var/tmp/rn-ipam-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
SUBNET=10.90.0.0/20 # 4094 usable
SIZE=4094
ours_conf='{"cniVersion":"1.0.0","name":"bench","ipam":{"type":"rdma-netns-ipam","range":"'$SUBNET'","dataDir":"'$tmp'/ours","node_name":"bench"}}'
hl_conf='{"cniVersion":"1.0.0","name":"bench","ipam":{"type":"host-local","ranges":[[{"subnet":"'$SUBNET'"}]],"dataDir":"'$tmp'/hl"}}'
export ours_conf hl_conf plugin hl

run() { # run ours|hl CMD CID
	local conf=$ours_conf bin=$plugin
	[ "$1" = hl ] && conf=$hl_conf bin=$hl
	printf '%s' "$conf" | CNI_COMMAND=$2 CNI_CONTAINERID=$3 CNI_IFNAME=net1 CNI_NETNS=/var/run/netns/x \
		CNI_PATH=/usr/lib/cni "$bin" >/dev/null || { echo "ipam-local.sh: $1 $2 $3 failed" >&2; exit 1; }
}
export -f run

# cycles WHICH COUNT TAG: COUNT ADD+DEL cycles; appends "add_us del_us" lines to $tmp/WHICH.TAG
cycles() {
	local which=$1 count=$2 tag=$3 i t0 t1 t2
	for ((i = 0; i < count; i++)); do
		t0=${EPOCHREALTIME/./}
		run "$which" ADD "cyc-$tag-$i"
		t1=${EPOCHREALTIME/./}
		run "$which" DEL "cyc-$tag-$i"
		t2=${EPOCHREALTIME/./}
		echo "$((t1 - t0)) $((t2 - t1))" >>"$tmp/$which.$tag"
	done
}

# interleaved TAG COUNT: both plugins, rounds of 10
interleaved() {
	local tag=$1 count=$2 done=0 r
	while [ "$done" -lt "$count" ]; do
		r=$((count - done < 10 ? count - done : 10))
		cycles ours "$r" "$tag-$done"
		cycles hl "$r" "$tag-$done"
		done=$((done + r))
	done
	cat "$tmp"/ours."$tag"-* >"$tmp/ours.$tag"
	cat "$tmp"/hl."$tag"-* >"$tmp/hl.$tag"
}

# fill TO HAVE: ADDs (4 at a time) until each pool holds TO addresses; prints the seconds each took
fill() {
	local to=$1 have=$2 t0 t1 t2
	t0=${EPOCHREALTIME/./}
	seq "$((have + 1))" "$to" | xargs -P 4 -I{} bash -c 'run ours ADD fill-{}'
	t1=${EPOCHREALTIME/./}
	seq "$((have + 1))" "$to" | xargs -P 4 -I{} bash -c 'run hl ADD fill-{}'
	t2=${EPOCHREALTIME/./}
	echo "  filling to $to: rdma-netns-ipam $(((t1 - t0) / 1000000)) s, host-local $(((t2 - t1) / 1000000)) s ($((to - have)) ADDs each, 4 at a time)" >&2
}

# stats FILE COLUMN: median mean p99 in ms
stats() {
	awk -v c="$2" '{print $c}' "$1" | sort -n | awk '{v[NR] = $1; s += $1}
		END {p = int(NR * 0.99 + 0.5); if (p < 1) p = 1
		     printf "%7.2f %7.2f %7.2f", v[int((NR + 1) / 2)] / 1000, s / NR / 1000, v[p] / 1000}'
}

echo "rdma-netns-ipam (local store) vs host-local, $SUBNET ($SIZE addresses), $(nproc) CPUs, $(df -T "$tmp" | awk 'NR == 2 {print $2}') at $tmp"
echo "plugin: $plugin"
echo
interleaved empty "$n"
printf '%-34s %-16s %7s %7s %7s\n' "ms per operation" plugin median mean p99
# ADD+DEL per cycle: sum of the two columns
for w in ours hl; do awk '{print $1 + $2}' "$tmp/$w.empty" >"$tmp/$w.cycle"; done
printf '%-34s %-16s %s\n' "ADD+DEL, empty pool ($n cycles)" rdma-netns-ipam "$(stats "$tmp/ours.cycle" 1)"
printf '%-34s %-16s %s\n' "" host-local "$(stats "$tmp/hl.cycle" 1)"
printf '%-34s %-16s %s\n' "  of which ADD" rdma-netns-ipam "$(stats "$tmp/ours.empty" 1)"
printf '%-34s %-16s %s\n' "" host-local "$(stats "$tmp/hl.empty" 1)"
printf '%-34s %-16s %s\n' "  of which DEL" rdma-netns-ipam "$(stats "$tmp/ours.empty" 2)"
printf '%-34s %-16s %s\n' "" host-local "$(stats "$tmp/hl.empty" 2)"

have=0
for pct in 10 90; do
	to=$((SIZE * pct / 100))
	fill "$to" "$have"
	have=$to
	interleaved "p$pct" "$m"
	printf '%-34s %-16s %s\n' "ADD, pool $pct% full ($to held)" rdma-netns-ipam "$(stats "$tmp/ours.p$pct" 1)"
	printf '%-34s %-16s %s\n' "" host-local "$(stats "$tmp/hl.p$pct" 1)"
	printf '%-34s %-16s %s\n' "DEL, pool $pct% full ($to held)" rdma-netns-ipam "$(stats "$tmp/ours.p$pct" 2)"
	printf '%-34s %-16s %s\n' "" host-local "$(stats "$tmp/hl.p$pct" 2)"
done
