#!/bin/bash
# rdma-netns-ipam's kubernetes store beside its etcd store (figures, not a test):
# N ADDs (default 1,000) into an empty /16 from C concurrent clients (default
# 10), each store in turn: ADDs per second, median and p99 per ADD, and
# requests per ADD as the server counts them (the API server's
# apiserver_request_total on rdmaaddresses; etcd's gRPC KV calls). The API
# server is tools/apiserver.sh's, over its own single etcd member; the etcd
# store gets a single member too, so the two differ by the store alone.
#
# Seen 2026-11-28 (release build, 2 cores at load average 13: a full test run's VM lane
# beside it; 300 ADDs, 10 clients, an empty /16):
#   kubernetes  4.5 ADDs/s, median 1244 ms, p99 3728 ms, 2.00 requests per ADD, 0 failed, 0 duplicates
#   etcd        5.1 ADDs/s, median  991 ms, p99 1828 ms, 2.00 requests per ADD, 0 failed, 0 duplicates
# The machine's load sets both rates; what the store decides is the requests per ADD.
#
#   bench/ipam-k8s.sh [N [CLIENTS]]       (default 1000 10)
#   RDMA_NETNS_IPAM=path RDMANS=path       the binaries (default: a release build in build-bench-ipam)
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
N=${1:-1000}
C=${2:-10}
. "$top/bench/lib.sh"
bench_ipam_binaries
set +e
. "$top/tests/vm/guest-lib.sh"
. "$top/tests/netns/ipam-lib.sh"
. "$top/tests/netns/k8s-lib.sh"

etcd_requests() {
	curl -fsS --max-time 2 "${ETCD_CLIENT[0]}/metrics" 2>/dev/null |
		awk '/^grpc_server_started_total\{.*grpc_service="etcdserverpb.KV"/ {s += $2} END {printf "%d", s}'
}

# client K: ADDs K, K+C, ... below N; "microseconds address|FAIL" lines
client() {
	local k=$1 i t0 t1
	for ((i = k; i < N; i += C)); do
		t0=${EPOCHREALTIME/./}
		if ipam_run ADD "c$i" net1 "ns/p$i"; then
			t1=${EPOCHREALTIME/./}
			echo "$((t1 - t0)) $(ip_of)"
		else
			echo "0 FAIL $IPAM_OUT"
		fi
	done
}

# run NAME COUNTER: the N ADDs with $CONF, then one line of figures
run() {
	local name=$1 counter=$2 k t0 t1 r0 r1 out=$IPAM_TMP/bench-$1 pids=()
	r0=$($counter)
	t0=${EPOCHREALTIME/./}
	for ((k = 0; k < C; k++)); do
		client "$k" >"$out.$k" &
		pids+=($!)
	done
	# the clients only: the servers are children too
	wait "${pids[@]}"
	t1=${EPOCHREALTIME/./}
	r1=$($counter)
	cat "$out".* >"$out"
	python3 - "$out" "$name" "$N" "$C" "$((t1 - t0))" "$((r1 - r0))" <<'PY'
import sys
lines = [l.split() for l in open(sys.argv[1])]
name, n, c, wall, reqs = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
ok = sorted(int(l[0]) for l in lines if l[1] != "FAIL")
addrs = [l[1] for l in lines if l[1] != "FAIL"]
fails = len(lines) - len(ok)
med = ok[len(ok) // 2] / 1000 if ok else 0
p99 = ok[min(len(ok) - 1, int(len(ok) * 0.99))] / 1000 if ok else 0
print(f"{name:10} {n} ADDs, {c} clients: {len(ok) / (wall / 1e6):6.1f} ADDs/s, median {med:6.1f} ms, "
      f"p99 {p99:6.1f} ms, {reqs / max(len(ok), 1):.2f} requests per ADD, {fails} failed, "
      f"{len(addrs) - len(set(addrs))} duplicates")
PY
}

k8s_start
KC=$IPAM_TMP/bench.kubeconfig
k8s_kubeconfig "$KC" sa
CONF='{"cniVersion":"1.1.0","name":"bench","ipam":{"type":"rdma-netns-ipam","range":"10.95.0.0/16",
 "store":"kubernetes","node_name":"bench","kubernetes":{"kubeconfig":"'"$KC"'"}}}'
run kubernetes k8s_requests

etcd_cluster 1
CONF='{"cniVersion":"1.1.0","name":"bench","ipam":{"type":"rdma-netns-ipam","range":"10.95.0.0/16",
 "store":"etcd","node_name":"bench","etcd":{"endpoints":'"$(etcd_endpoints_json)"',"key_prefix":"/bench"}}}'
run etcd etcd_requests
