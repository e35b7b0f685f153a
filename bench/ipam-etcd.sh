#!/bin/bash
# rdma-netns-ipam over a 3-member etcd cluster (Debian's etcd-server, on
# loopback, data on disk): 500 ADDs from 100 concurrent clients, each a
# simulated node doing 5 ADDs in a row (the case whereabouts took 4m34s for
# in its PR #127). Prints the wall time, per-ADD median and p99, and the
# duplicates (must be 0); once with a /16 and once with a /23, where the
# 500 ADDs fill 98% of the pool.
#
#   bench/ipam-etcd.sh [CLIENTS [PER_CLIENT]]   (default 100 5)
#   RDMA_NETNS_IPAM=path   the plugin (default: a release build in build-bench-ipam)
#   ETCD_DATA=dir          where the members keep their data (default /var/tmp: disk;
#                          /dev/shm takes the disk's fsync out of the figures)
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
clients=${1:-100}
per=${2:-5}
plugin=${RDMA_NETNS_IPAM:-}
b=$top/${RDMANS_BENCH_BUILD:-build-bench-ipam}
if [ -z "$plugin" ]; then
	[ -d "$b" ] || meson setup "$b" -Dbuildtype=release >/dev/null
	ninja -C "$b" src/ipam/rdma-netns-ipam src/cli/rdmans >/dev/null
	plugin=$b/src/ipam/rdma-netns-ipam
fi
set +e
RDMANS_BUILD_DIR=$b IPAM=$plugin
. "$top/tests/vm/guest-lib.sh"
. "$top/tests/netns/ipam-lib.sh"
# etcd's data on disk, as a cluster would have it (not tmpfs)
IPAM_TMP_DISK=$(mktemp -d "${ETCD_DATA:-/var/tmp}/rn-ipam-etcd-bench.XXXXXX")
trap 'ipam_cleanup; rm -rf "$IPAM_TMP_DISK"' EXIT
real_tmp=$IPAM_TMP
IPAM_TMP=$IPAM_TMP_DISK etcd_cluster 3
IPAM_TMP=$real_tmp
EP=$(etcd_endpoints_json)

# client NODE PREFIX RANGE: PER ADDs; "latency_us address" lines to $IPAM_TMP/lat.PREFIX.NODE
client() {
	local n=$1 prefix=$2 range=$3 k t0 t1 CONF
	CONF='{"cniVersion":"1.1.0","name":"bench","ipam":{"type":"rdma-netns-ipam","range":"'$range'",
 "store":"etcd","node_name":"node-'$n'","etcd":{"endpoints":'$EP',"key_prefix":"/'$prefix'"}}}'
	for k in $(seq 1 "$per"); do
		t0=${EPOCHREALTIME/./}
		if ipam_run ADD "n$n-c$k" net1 "ns/pod-$n-$k"; then
			t1=${EPOCHREALTIME/./}
			# no jq here: 500 forks of it would weigh on the 2 CPUs etcd needs
			[[ $IPAM_OUT =~ \"address\":\"([^/\"]+) ]]
			echo "$((t1 - t0)) ${BASH_REMATCH[1]}" >>"$IPAM_TMP/lat.$prefix.$n"
		else
			echo "FAIL $IPAM_OUT" >>"$IPAM_TMP/lat.$prefix.$n"
		fi
	done
}

# etcd_cpu: CPU seconds the members have used so far (utime+stime, clock ticks)
etcd_cpu() {
	local pid t=0
	for pid in "${ETCD_PIDS[@]}"; do
		t=$((t + $(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null || echo 0)))
	done
	echo "$t"
}

scenario() { # scenario PREFIX RANGE [CLIENTS [PER]]
	local prefix=$1 range=$2 clients=${3:-$clients} per=${4:-$per} n t0 t1 jobs=() total fails dups cpu0 cpu1
	cpu0=$(etcd_cpu)
	t0=${EPOCHREALTIME/./}
	for n in $(seq 1 "$clients"); do
		client "$n" "$prefix" "$range" &
		jobs+=($!)
	done
	wait "${jobs[@]}"
	t1=${EPOCHREALTIME/./}
	cpu1=$(etcd_cpu)
	total=$((clients * per))
	fails=$(cat "$IPAM_TMP"/lat."$prefix".* | grep -c '^FAIL')
	dups=$(cat "$IPAM_TMP"/lat."$prefix".* | grep -v '^FAIL' | awk '{print $2}' | sort | uniq -d | wc -l)
	stored=$(etcdctl_ 0 get --prefix "/$prefix/_default/addr/" --keys-only | grep -c .)
	cat "$IPAM_TMP"/lat."$prefix".* | grep -v '^FAIL' | awk '{print $1}' | sort -n | awk \
		-v wall="$(((t1 - t0) / 1000))" -v total="$total" -v fails="$fails" -v dups="$dups" \
		-v stored="$stored" -v range="$range" -v etcd_cpu="$(((cpu1 - cpu0) * 100 / $(getconf CLK_TCK)))" '
		{v[NR] = $1; s += $1}
		END {p99 = int(NR * 0.99 + 0.5); if (p99 < 1) p99 = 1
		     printf "%-14s %4d ADDs  wall %6.2f s  per ADD: median %6.1f ms  p99 %6.1f ms  max %6.1f ms  failed %d  duplicates %d  stored %d  etcd CPU %.1f s\n",
			range, total, wall / 1000, v[int((NR + 1) / 2)] / 1000, v[p99] / 1000, v[NR] / 1000, fails, dups, stored, etcd_cpu / 100}'
	cat "$IPAM_TMP"/lat."$prefix".* | grep '^FAIL' | head -3
}

echo "rdma-netns-ipam, etcd $(etcd --version | awk '/etcd Version/ {print $3}') x3 on loopback (data on $(df -T "$IPAM_TMP_DISK" | awk 'NR == 2 {print $2}')), $clients clients x $per ADDs, $(nproc) CPUs"
echo "plugin: $plugin"
echo "one client alone (the latency floor), then $clients concurrent clients:"
scenario one 10.91.0.0/16 1 50
scenario b16 10.92.0.0/16
scenario b23 10.93.0.0/23
