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
# The pod pair: two netns, each given one end of a veth by rdma-netns with
# "softRoce": true (the product's soft-RoCE pods: an rxe device on the pod's
# net1, made inside it; host-local addresses), as current-vm-cni-softroce
# makes them. Every measurement of the run is between these two pods.
. "$(dirname "$RDMANS_VM_LIB")/../netns/cni-lib.sh"
cni_vm_setup
vm_veth ha hb
ip netns add A
ip netns add B
export CNI_IF=net1 CNI_ARGS_DEFAULT="IgnoreUnknown=1" # (cni_run's)
for p in A:ha:aaaaaaaaaaaa1111 B:hb:bbbbbbbbbbbb2222; do
	IFS=: read -r ns dev cid <<<"$p"
	CNI_CID=$cid CNI_NS=/var/run/netns/$ns cni_run ADD "$(jq -nc --arg hl "$HL" --arg dev "$dev" \
		'{cniVersion: "1.0.0", name: "softnet", type: "rdma-netns", device: $dev, softRoce: true,
		ipam: {type: "host-local", subnet: "10.58.0.0/24", dataDir: $hl}}')"
	[ "$RC" = 0 ] || { echo "bench: CNI ADD of pod $ns failed: $OUT" >&2; exit 1; }
done
DA=rxeaaaaaaaaaaaa_net1 DB=rxebbbbbbbbbbbb_net1
ADDR_A=$(ip -n A -4 -o addr show net1 | awk '{ split($4, a, "/"); print a[1] }')
echo "# pods A ($DA, $ADDR_A) and B ($DB, $(ip -n B -4 -o addr show net1 | awk '{ print $4 }'))"

# A client starts once its server's rdma_cm id listens (guest-lib.sh), not after a delay.
# perftest PROG SIZE COLUMN: run it server in A, client in B; print that column of its result line
perftest() {
	local prog=$1 size=$2 col=$3 out pid
	ip netns exec A timeout 300 "$prog" -R -d "$DA" -s "$size" -n "$n" >/dev/null 2>&1 &
	pid=$!
	vm_poll 60 vm_cm_listening "$prog" || echo "# $prog: its server did not listen" >&2
	# (perftest 25.01's clients crash at times: "Failed to connect RDMA CM events", exit 139;
	# that round has no figure for it, and its server is stopped)
	if ! out=$(ip netns exec B timeout 300 "$prog" -R -d "$DB" -s "$size" -n "$n" "$ADDR_A" 2>&1); then
		echo "# $prog client: exit $?: $(tail -n 2 <<<"$out" | tr '\n' ' ')" >&2
		kill "$pid" 2>/dev/null
	fi
	wait "$pid" || echo "# $prog server: exit $?" >&2
	awk -v s="$size" -v c="$col" '$1 == s && NF >= c { v = $c } END { print v }' <<<"$out"
}
# the same sizes: 64 B for latency, 65536 B for bandwidth (rdmans ping's defaults)
rdmans_ping() {
	local out pid
	"$R" ping --server --netns A --device "$DA" --once >/tmp/server.out 2>&1 &
	pid=$!
	vm_poll 60 vm_cm_listening rdmans || echo "# rdmans ping --server did not listen" >&2
	out=$(ip netns exec B "$R" -j ping "$ADDR_A" --device "$DB" --count "$n" --bw-count "$n" --lat-size 64 --size 65536 2>&1) ||
		echo "# rdmans ping: exit $?: $out" >&2
	wait "$pid" || echo "# rdmans ping --server: exit $?: $(cat /tmp/server.out)" >&2
	jq -r '"\(.bandwidth.mib_s) \(.send.p50_us) \(.write.p50_us)"' <<<"$out"
}
median() { grep . | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

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
