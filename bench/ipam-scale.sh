#!/bin/bash
# rdma-netns-ipam at scale (figures, not a test):
#   1. N ADDs (default 5,000) into a /16 on a 3-member etcd (loopback, data on
#      disk), C concurrent clients; per fill decile: median and p99 per ADD and
#      etcd requests per ADD (gRPC calls counted by the members' /metrics).
#   2. the same into a fresh prefix while member m1 is killed (-9) at 30% and
#      restarted at 60%: duplicates, lost addresses (an ADD that succeeded but
#      whose record is not its own) and failures that are not a CNI error.
#   3. the reconciler over the N records of step 1 (all of node "bench", all
#      netns gone): a --dry-run judging every record, then releasing them all.
#   4. the local store with a whole /16 (65,534 records, written straight to
#      the data directory as the plugin writes them): ADD and DEL through the
#      plugin at 10% and 99% fill, `rdmans ipam ls` at 60,000 records, the
#      reconciler over 60,000 records of which 5,000 are this node's dead ones.
#
#   bench/ipam-scale.sh [N [CLIENTS]]     (default 5000 10)
#   RDMA_NETNS_IPAM=path RDMANS=path       the binaries (default: a release build in build-bench-ipam)
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
N=${1:-5000}
C=${2:-10}
. "$top/bench/lib.sh"
bench_ipam_binaries
set +e
. "$top/tests/vm/guest-lib.sh"
. "$top/tests/netns/ipam-lib.sh"
DISK=$(mktemp -d /var/tmp/rn-ipam-scale.XXXXXX)
trap 'ipam_cleanup; rm -rf "$DISK"' EXIT
real_tmp=$IPAM_TMP
IPAM_TMP=$DISK etcd_cluster 3
IPAM_TMP=$real_tmp
EP=$(etcd_endpoints_json)
now_ms() { echo $((${EPOCHREALTIME/./} / 1000)); }

# etcd_requests: gRPC KV calls served by the three members so far
etcd_requests() {
	local i t=0 v
	for i in 0 1 2; do
		v=$(curl -fsS --max-time 2 "${ETCD_CLIENT[i]}/metrics" 2>/dev/null |
			awk '/^grpc_server_started_total\{.*grpc_service="etcdserverpb.KV"/ {s += $2} END {printf "%d", s}')
		t=$((t + ${v:-0}))
	done
	echo "$t"
}

# client K PREFIX FROM TO: ADDs FROM..TO-1 with stride C starting at FROM+K; "us address|FAIL json" lines
client() {
	local k=$1 prefix=$2 from=$3 to=$4 i t0 t1 CONF
	CONF='{"cniVersion":"1.1.0","name":"bench","ipam":{"type":"rdma-netns-ipam","range":"10.94.0.0/16",
 "store":"etcd","node_name":"bench","etcd":{"endpoints":'$EP',"key_prefix":"/'$prefix'"}}}'
	for ((i = from + k; i < to; i += C)); do
		t0=${EPOCHREALTIME/./}
		if ipam_run ADD "c$i" net1 "ns/p$i"; then
			t1=${EPOCHREALTIME/./}
			[[ $IPAM_OUT =~ \"address\":\"([^/\"]+) ]]
			echo "$((t1 - t0)) ${BASH_REMATCH[1]} p$i"
		else
			echo "FAIL p$i $IPAM_OUT"
		fi
	done >>"$IPAM_TMP/$prefix.$k"
}

# decile PREFIX D: ADDs of decile D (N/10 of them) from C clients; prints its line
decile() {
	local prefix=$1 d=$2 from=$((N * $2 / 10)) to=$((N * ($2 + 1) / 10)) k r0 r1 t0 t1 jobs=()
	r0=$(etcd_requests)
	t0=$(now_ms)
	rm -f "$IPAM_TMP/$prefix".*
	for ((k = 0; k < C; k++)); do
		client "$k" "$prefix" "$from" "$to" &
		jobs+=($!)
	done
	wait "${jobs[@]}"
	t1=$(now_ms)
	r1=$(etcd_requests)
	cat "$IPAM_TMP/$prefix".* >>"$IPAM_TMP/all.$prefix"
	cat "$IPAM_TMP/$prefix".* | grep -v '^FAIL' | awk '{print $1}' | sort -n | awk \
		-v d="$d" -v n="$((to - from))" -v req="$((r1 - r0))" -v wall="$((t1 - t0))" \
		-v fails="$(cat "$IPAM_TMP/$prefix".* | grep -c '^FAIL')" '
		{v[NR] = $1}
		END {p99 = int(NR * 0.99 + 0.5); if (p99 < 1) p99 = 1
		     printf "  fill %3d-%3d%%  %5d ADDs  %6.1f s  median %6.1f ms  p99 %6.1f ms  etcd requests/ADD %5.1f  failed %d\n",
			d * 10, d * 10 + 10, n, wall / 1000, v[int((NR + 1) / 2)] / 1000, v[p99] / 1000, req / (n ? n : 1), fails}'
}

verdict() { # verdict PREFIX: duplicates, lost, unclean failures over the whole run
	local prefix=$1 ok dups lost unclean
	ok=$(grep -v '^FAIL' "$IPAM_TMP/all.$prefix")
	dups=$(awk '{print $2}' <<<"$ok" | sort | uniq -d | wc -l)
	# lost: the record at the address an ADD returned does not name that pod
	"$RDMANS" -j ipam ls --etcd "${ETCD_CLIENT[0]}" --etcd-prefix "/$prefix" |
		jq -r '.[] | select(.address) | "\(.address) \(.pod)"' | sed 's| ns/| |' | sort >"$IPAM_TMP/stored.$prefix"
	lost=$(awk '{print $2, $3}' <<<"$ok" | sort | comm -23 - "$IPAM_TMP/stored.$prefix" | wc -l)
	unclean=$(grep '^FAIL' "$IPAM_TMP/all.$prefix" | cut -d' ' -f3- | jq -r 'if (.code|type) == "number" and (.msg|length) > 0 then empty else "x" end' 2>/dev/null | wc -l)
	unclean=$((unclean + $(grep '^FAIL' "$IPAM_TMP/all.$prefix" | cut -d' ' -f3- | grep -cv '^{')))
	echo "  $(grep -vc '^FAIL' "$IPAM_TMP/all.$prefix") succeeded, $(grep -c '^FAIL' "$IPAM_TMP/all.$prefix") failed (codes: $(grep "^FAIL" "$IPAM_TMP/all.$prefix" | cut -d" " -f3- | jq -r .code 2>/dev/null | sort | uniq -c | awk "{print \$2 \" x\" \$1}" | paste -sd, -)); duplicates $dups, lost $lost, failures that are not a CNI error $unclean"
}

echo "rdma-netns-ipam at scale: etcd $(etcd --version | awk '/etcd Version/ {print $3}') x3 on loopback (data on $(df -T "$DISK" | awk 'NR == 2 {print $2}')), $(nproc) CPUs, $N ADDs from $C clients"
echo "1. $N ADDs into 10.94.0.0/16 (65,534 addresses), by fill decile of the $N:"
t0=$(now_ms)
for d in 0 1 2 3 4 5 6 7 8 9; do decile s1 "$d"; done
echo "  total $(($(now_ms) - t0)) ms"
verdict s1

echo "2. the same, member m1 killed (-9) at 30% and restarted at 60%:"
for d in 0 1 2 3 4 5 6 7 8 9; do
	if [ "$d" = 3 ]; then
		mapfile -d '' m1_cmd <"/proc/${ETCD_PIDS[1]}/cmdline"
		kill -9 "${ETCD_PIDS[1]}"
		wait "${ETCD_PIDS[1]}" 2>/dev/null
		echo "  -- m1 killed"
	fi
	if [ "$d" = 6 ]; then
		"${m1_cmd[@]}" >>"$DISK/etcd-m1.log" 2>&1 &
		ETCD_PIDS[1]=$!
		echo "  -- m1 restarted"
	fi
	decile s2 "$d"
done
verdict s2

echo "3. the reconciler over the $N records of node bench (every netns gone):"
t0=$(now_ms)
out=$("$RDMANS" -j ipam reconcile --etcd "${ETCD_CLIENT[0]}" --etcd-prefix /s1 --node bench --grace 0 --dry-run)
echo "  --dry-run: $(jq -r '"\(.records) records, \(.released) to release"' <<<"$out") in $(($(now_ms) - t0)) ms"
r0=$(etcd_requests)
t0=$(now_ms)
out=$("$RDMANS" -j ipam reconcile --etcd "${ETCD_CLIENT[0]}" --etcd-prefix /s1 --node bench --grace 0)
echo "  released $(jq -r .released <<<"$out") in $(($(now_ms) - t0)) ms, $((($(etcd_requests) - r0) / ($(jq -r .released <<<"$out") + 1))) etcd requests per release"

echo "4. the local store, a whole /16:"
DATA=$DISK/local
LCONF='{"cniVersion":"1.1.0","name":"bench","ipam":{"type":"rdma-netns-ipam","range":"10.95.0.0/16","dataDir":"'$DATA'","node_name":"other"}}'
# the template: a record and an attachment the plugin writes, then copied to every address
printf '%s' "$LCONF" | CNI_COMMAND=ADD CNI_CONTAINERID=tmpl CNI_IFNAME=net1 CNI_NETNS=/var/run/netns/none CNI_ARGS="K8S_POD_NAMESPACE=ns;K8S_POD_NAME=tmpl" "$IPAM" >/dev/null
fill() { # fill FROM TO NODE: records for addresses index FROM..TO-1 (10.95.x.y, from .0.1)
	python3 - "$DATA" "$1" "$2" "$3" <<'EOF'
import os, sys, glob
data, a, b, node = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
tmpl = open(glob.glob(data + "/_default/addr/*")[0]).read()
att = open(glob.glob(data + "/_default/attachments/*")[0]).read()
lines = lambda t: [l for l in t.splitlines() if not l.startswith(("ip=", "attachment=", "container_id=", "pod=", "node=", "address="))]
rec, at = lines(tmpl), lines(att)
for i in range(a, b):
    v = i + 1
    ip = "10.95.%d.%d" % (v >> 8, v & 255)
    p = "f%d" % i
    path = "%s/_default/addr/%s" % (data, ip)
    if os.path.exists(path):
        continue
    with open(path, "w") as f:
        f.write("\n".join(rec + ["ip=" + ip, "attachment=ns/%s/net1" % p, "container_id=c" + p, "pod=ns/" + p, "node=" + node]) + "\n")
    with open("%s/_default/attachments/ns%%2F%s%%2Fnet1" % (data, p), "w") as f:
        f.write("\n".join(at + ["attachment=ns/%s/net1" % p, "container_id=c" + p, "pod=ns/" + p, "node=" + node, "address=addr %s 10.95.0.0/16" % ip]) + "\n")
EOF
}
cost() { # cost LABEL: 50 ADD+DEL pairs through the plugin, median/p99 of each
	local i t0 t1 t2
	: >"$DISK/cost"
	for i in $(seq 1 50); do
		t0=${EPOCHREALTIME/./}
		printf '%s' "$LCONF" | CNI_COMMAND=ADD CNI_CONTAINERID=k$i CNI_IFNAME=net1 CNI_NETNS=/var/run/netns/none "$IPAM" >/dev/null || echo "ADD failed" >&2
		t1=${EPOCHREALTIME/./}
		printf '%s' "$LCONF" | CNI_COMMAND=DEL CNI_CONTAINERID=k$i CNI_IFNAME=net1 CNI_NETNS=/var/run/netns/none "$IPAM" >/dev/null || echo "DEL failed" >&2
		t2=${EPOCHREALTIME/./}
		echo "$((t1 - t0)) $((t2 - t1))" >>"$DISK/cost"
	done
	for col in 1 2; do
		awk -v c=$col '{print $c}' "$DISK/cost" | sort -n | awk -v l="$1" -v w="$([ $col = 1 ] && echo ADD || echo DEL)" \
			'{v[NR] = $1} END {printf "  %-22s %s median %5.2f ms  p99 %5.2f ms\n", l, w, v[int((NR + 1) / 2)] / 1000, v[int(NR * 0.99 + 0.5)] / 1000}'
	done
}
t0=$(now_ms)
fill 1 6553 other
echo "  filled to 10% ($(ls "$DATA/_default/addr" | wc -l) records) in $(($(now_ms) - t0)) ms"
cost "at 10% (6,553)"
fill 6553 55000 other
fill 55000 60000 bench
echo "  $(ls "$DATA/_default/addr" | wc -l) records:"
t0=$(now_ms)
n=$("$RDMANS" -j ipam ls --data-dir "$DATA" | jq length)
echo "  rdmans ipam ls -j: $n records in $(($(now_ms) - t0)) ms (jq included)"
t0=$(now_ms)
"$RDMANS" ipam ls --data-dir "$DATA" >/dev/null
echo "  rdmans ipam ls (table): $(($(now_ms) - t0)) ms"
t0=$(now_ms)
out=$("$RDMANS" -j ipam reconcile --data-dir "$DATA" --node bench --grace 0)
echo "  reconcile over $(jq -r .records <<<"$out") records, $(jq -r .this_node <<<"$out") of this node, all dead: released $(jq -r .released <<<"$out") in $(($(now_ms) - t0)) ms"
fill 55000 65534 other
echo "  filled to $(ls "$DATA/_default/addr" | wc -l) of 65,534"
# 99%: 655 addresses left free
for i in $(seq 1 655); do rm -f "$DATA/_default/addr/10.95.$(((i * 97) >> 8 & 255)).$(((i * 97) & 255))"; done
echo "  freed back to $(ls "$DATA/_default/addr" | wc -l) records (99%)"
cost "at 99% ($(ls "$DATA/_default/addr" | wc -l))"
