#!/bin/bash
# Guest half of bench/ping-vs-perftest.sh (run by tests/vm/vm-run.sh).
set -euo pipefail
. "$RDMANS_VM_LIB"
R=$RDMANS_BUILD_DIR/src/cli/rdmans
# a sanitizer build's figures say nothing about rdmans ping
if ldd "$R" | grep -q -E 'libasan|libubsan'; then
	echo "bench: $R is a sanitizer build; use a release build (bench/ping-vs-perftest.sh makes one)" >&2
	exit 1
fi
rounds=${TEST_BENCH_ROUNDS:-3}
n=${TEST_BENCH_ITERS:-500}
vm_load_rdma
ip netns add A
ip netns add B
ip link add a0 type veth peer name b0
ip link set a0 netns A
ip link set b0 netns B
ip -n A addr add 10.77.0.1/24 dev a0
ip -n B addr add 10.77.0.2/24 dev b0
for x in A:a0 B:b0; do ip -n "${x%:*}" link set lo up; ip -n "${x%:*}" link set "${x#*:}" up; done
ip netns exec A rdma link add rxeA type rxe netdev a0
ip netns exec B rdma link add rxeB type rxe netdev b0
for i in $(seq 1 100); do
	grep -q 0a4d:0002 /sys/class/infiniband/rxeB/ports/1/gids/* 2>/dev/null && break
	sleep 0.1
done

# A client starts once its server's rdma_cm id listens (guest-lib.sh), not after a delay.
# perftest PROG SIZE COLUMN: run it server in A, client in B; print that column of its result line
perftest() {
	local prog=$1 size=$2 col=$3 out pid
	ip netns exec A timeout 300 "$prog" -R -d rxeA -s "$size" -n "$n" >/dev/null 2>&1 &
	pid=$!
	vm_poll 60 vm_cm_listening "$prog" || echo "# $prog: its server did not listen" >&2
	out=$(ip netns exec B timeout 300 "$prog" -R -d rxeB -s "$size" -n "$n" 10.77.0.1 2>&1) ||
		echo "# $prog client: exit $?: $(tail -n 2 <<<"$out")" >&2
	wait "$pid" || echo "# $prog server: exit $?" >&2
	awk -v s="$size" -v c="$col" '$1 == s && NF >= c { v = $c } END { print v }' <<<"$out"
}
# the same sizes: 64 B for latency, 65536 B for bandwidth (rdmans ping's defaults)
rdmans_ping() {
	local out pid
	"$R" ping --server --netns A --once >/tmp/server.out 2>&1 &
	pid=$!
	vm_poll 60 vm_cm_listening rdmans || echo "# rdmans ping --server did not listen" >&2
	out=$(ip netns exec B "$R" -j ping 10.77.0.1 --count "$n" --bw-count "$n" --lat-size 64 --size 65536 2>&1) ||
		echo "# rdmans ping: exit $?: $out" >&2
	wait "$pid" || echo "# rdmans ping --server: exit $?: $(cat /tmp/server.out)" >&2
	jq -r '"\(.bandwidth.mib_s) \(.send.p50_us) \(.write.p50_us)"' <<<"$out"
}
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

: >/tmp/bw; : >/tmp/sl; : >/tmp/wl; : >/tmp/rbw; : >/tmp/rsl; : >/tmp/rwl
for r in $(seq 1 "$rounds"); do
	read -r bw sl wl <<<"$(rdmans_ping)"
	echo "$bw" >>/tmp/rbw; echo "$sl" >>/tmp/rsl; echo "$wl" >>/tmp/rwl
	perftest ib_write_bw 65536 4 >>/tmp/bw
	perftest ib_send_lat 64 5 >>/tmp/sl
	perftest ib_write_lat 64 5 >>/tmp/wl
	echo "# round $r: rdmans $bw MiB/s, $sl us, $wl us; perftest $(tail -1 /tmp/bw) MiB/s, $(tail -1 /tmp/sl) us, $(tail -1 /tmp/wl) us"
done
rbw=$(median </tmp/rbw) pbw=$(median </tmp/bw)
rsl=$(median </tmp/rsl) psl=$(median </tmp/sl)
rwl=$(median </tmp/rwl) pwl=$(median </tmp/wl)
echo "rounds $rounds, $n iterations each, kernel $(uname -r) under TCG, rdmans $("$R" --version 2>&1 | head -n 1) ($(jq -r '.[] | select(.name == "buildtype") | .value' "$RDMANS_BUILD_DIR/meson-info/intro-buildoptions.json" 2>/dev/null || echo '?'))"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }
printf '%-34s %10s %10s %7s\n' "" "rdmans" "perftest" "ratio"
printf '%-34s %10.2f %10.2f %7.2f   (goal >= 0.9)\n' "bandwidth MiB/s (vs ib_write_bw)" "$rbw" "$pbw" "$(ratio "$rbw" "$pbw")"
printf '%-34s %10.2f %10.2f %7.2f   (goal <= 1.1)\n' "SEND latency us (vs ib_send_lat)" "$rsl" "$psl" "$(ratio "$rsl" "$psl")"
printf '%-34s %10.2f %10.2f %7.2f   (goal <= 1.1)\n' "WRITE latency us (vs ib_write_lat)" "$rwl" "$pwl" "$(ratio "$rwl" "$pwl")"
