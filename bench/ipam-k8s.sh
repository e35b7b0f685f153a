#!/bin/bash
# rdma-netns-ipam's kubernetes store beside its etcd store (figures, not a test):
# N ADDs (default 200) from C concurrent clients (default 10) into a /16
# (65,534 usable addresses) that is empty, then 10%, 50% and 90% full, each
# store in turn at each fill: ADDs per second, median and p99 per ADD, and
# requests per ADD as the server counts them (the API server's
# apiserver_request_total on rdmaaddresses; etcd's gRPC KV calls). The API
# server is tools/apiserver.sh's, over its own single etcd member; the etcd
# store gets a single member too, so the two differ by the store alone.
#
# The fill is written straight into each store's etcd, in bulk (txns of 128
# puts through its JSON gateway), exactly as the stores write it: for the
# kubernetes store the RdmaAddress objects as the API server keeps them (JSON
# under its registry prefix, found by creating one object through REST; the
# server's watch cache takes them in, and the run waits until a list through
# REST counts them); for the etcd store the address records and their
# attachments. The filled addresses are a seeded random sample of the range,
# the same in both stores, topped up from one level to the next; the measured
# ADDs' own objects are deleted after each run, so each level starts at its
# fill exactly. At the first fill the bench checks that the stores see it:
# rdmans ipam ls counts it with none damaged, a GET of a filled name returns
# its object and a create of it is refused with 409.
#
# Seen 2026-11-29 (bench/ipam-k8s.sh 200 10, release build; 2 cores, load average
# 7.8 at the start and 24.8 at the end: other test runs beside it; 363 s in all):
#   kubernetes  0% full: 5.3 ADDs/s, median 1154 ms, p99 2034 ms,  2.00 requests per ADD, 0 failed, 0 duplicates
#   etcd        0% full: 6.7 ADDs/s, median  784 ms, p99 1429 ms,  2.00 requests per ADD, 0 failed, 0 duplicates
#   kubernetes 10% full: 8.8 ADDs/s, median  665 ms, p99 1194 ms,  2.11 requests per ADD, 0 failed, 0 duplicates
#   etcd       10% full: 8.1 ADDs/s, median  632 ms, p99 1180 ms,  2.00 requests per ADD, 0 failed, 0 duplicates
#   kubernetes 50% full: 4.2 ADDs/s, median 1739 ms, p99 3864 ms,  2.85 requests per ADD, 0 failed, 0 duplicates
#   etcd       50% full: 7.2 ADDs/s, median  717 ms, p99 1540 ms,  2.00 requests per ADD, 0 failed, 0 duplicates
#   kubernetes 90% full: 3.6 ADDs/s, median 1900 ms, p99 6992 ms, 10.60 requests per ADD, 0 failed, 0 duplicates
#   etcd       90% full: 5.3 ADDs/s, median 1048 ms, p99 1806 ms,  2.00 requests per ADD, 0 failed, 0 duplicates
# (the fill: 5, 20 and 15 s to write the three steps to both stores; the API server
# listed each within 0.3 s.) The kubernetes store creates until a name is free, so
# an ADD costs its list and about 1/(1 - fill) creates: 2.11, 3 and 11 expected at
# 10, 50 and 90%, 2.11, 2.85 and 10.60 seen; the etcd store reads a window of 256
# addresses with the attachment, which at 90% still holds free ones, and stays at
# 2. The machine's load moved through the run and sets the rates (the 10% run
# outpaced the empty one), so they compare only loosely; the requests per ADD are
# what the store decides.
#
#   bench/ipam-k8s.sh [N [CLIENTS]]       (default 200 10)
#   RDMA_NETNS_IPAM=path RDMANS=path       the binaries (default: a release build in build-bench-ipam)
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
N=${1:-200}
C=${2:-10}
FILLS="0 10 50 90"
. "$top/bench/lib.sh"
bench_ipam_binaries
set +e
. "$top/tests/vm/guest-lib.sh"
. "$top/tests/netns/ipam-lib.sh"
. "$top/tests/netns/k8s-lib.sh"
bench_t0=${EPOCHREALTIME/./}
echo "load average at start: $(cat /proc/loadavg)"

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

# run NAME COUNTER FILL: the N ADDs with $CONF, then one line of figures
run() {
	local name=$1 counter=$2 fill=$3 k t0 t1 r0 r1 out=$IPAM_TMP/bench-$1-$3 pids=()
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
	python3 - "$out" "$name" "$N" "$C" "$((t1 - t0))" "$((r1 - r0))" "$fill" <<'PY'
import sys
lines = [l.split() for l in open(sys.argv[1])]
name, n, c, wall, reqs = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
fill = int(sys.argv[7])
ok = sorted(int(l[0]) for l in lines if l[1] != "FAIL")
addrs = [l[1] for l in lines if l[1] != "FAIL"]
fails = len(lines) - len(ok)
med = ok[len(ok) // 2] / 1000 if ok else 0
p99 = ok[min(len(ok) - 1, int(len(ok) * 0.99))] / 1000 if ok else 0
print(f"{name:10} {fill:2}% full, {n} ADDs, {c} clients: {len(ok) / (wall / 1e6):6.1f} ADDs/s, "
      f"median {med:6.1f} ms, p99 {p99:6.1f} ms, {reqs / max(len(ok), 1):5.2f} requests per ADD, "
      f"{fails} failed, {len(addrs) - len(set(addrs))} duplicates", flush=True)
PY
}

# fill.py put|clean|name STORE ETCD-URL PREFIX COUNT [FROM]: the fill, the first COUNT
# addresses of a seeded shuffle of the range's 65,534. put writes those from FROM
# on (txns of 128 puts); clean deletes every address (and, etcd store, every
# attachment) under PREFIX the fill does not have: the measured ADDs'. STORE:
# k8s (PREFIX the API server's directory of RdmaAddresses) or etcd (the store's
# PREFIX/SCOPE/). name prints the object name of fill address COUNT. The records are as rn_ipam_record_format writes them; the
# objects as the API server stored the one created through REST (k8s_fill_prefix).
cat >"$IPAM_TMP/fill.py" <<'PY'
import base64, json, random, sys, time, urllib.request, uuid
mode, store, url, prefix, count = sys.argv[1:6]
count = int(count)
first = int(sys.argv[6]) if len(sys.argv) > 6 else 0
NET, RANGE, SCOPE, POOL = 0x0A5F0000, "10.95.0.0/16", "_default", "addr"
addrs = list(range(NET + 1, NET + 0xFFFF))  # less the network and broadcast addresses
random.Random(20261129).shuffle(addrs)

def fnv(data, h=0xCBF29CE484222325):
    for c in data:
        h = ((h ^ c) * 0x100000001B3) & (2**64 - 1)
    return h

def hash2(a, b):  # ipam_store_k8s.c's hash2: a with its NUL, then b
    return fnv(b.encode(), fnv(a.encode() + b"\0"))

def ip(v):
    return ".".join(str(v >> s & 255) for s in (24, 16, 8, 0))

def b64(s):
    return base64.b64encode(s.encode()).decode()

def post(path, body):
    req = urllib.request.Request(url + path, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.load(r)

SUFFIX = "-%016x" % hash2(SCOPE, POOL)
now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())

def owner(i):
    return [("network", "bench"), ("container_id", "fill%d" % i), ("ifname", "net1"),
            ("pod", "fill/pod-%d" % i), ("node", "node-%d" % (i % 100)), ("time", now),
            ("netns", "/var/run/netns/none"), ("netns_ino", "")]

def text(header, fields):
    return header + "".join("%s=%s\n" % kv for kv in fields)

def puts(i):
    a = ip(addrs[i])
    att = "fill/pod-%d/net1" % i
    rec = text("# rdma-netns-ipam address record\n",
               [("ip", a), ("range", RANGE), ("scope", SCOPE), ("pool", POOL), ("attachment", att)] + owner(i))
    if store == "etcd":
        yield prefix + POOL + "/4-%08x" % addrs[i], rec
        yield prefix + "attachments/" + att, text("# rdma-netns-ipam attachment record\n",
            [("attachment", att), ("scope", SCOPE)] + owner(i) + [("address", "%s %s %s" % (POOL, a, RANGE))])
        return
    name = a + SUFFIX
    spec = {"address": a, "attachment": att, "node": "node-%d" % (i % 100), "pod": "fill/pod-%d" % i,
            "pool": POOL, "record": rec, "scope": SCOPE}
    fields = {"f:metadata": {"f:labels": {".": {}, "f:rdmans.io/attachment": {}}},
              "f:spec": {".": {}, **{"f:" + k: {} for k in spec}}}
    obj = {"apiVersion": "rdmans.io/v1alpha1", "kind": "RdmaAddress",
           "metadata": {"creationTimestamp": now, "generation": 1,
                        "labels": {"rdmans.io/attachment": "%016x" % hash2(SCOPE, att)},
                        "managedFields": [{"apiVersion": "rdmans.io/v1alpha1", "fieldsType": "FieldsV1",
                                           "fieldsV1": fields, "manager": "unknown", "operation": "Update",
                                           "time": now}],
                        "name": name, "uid": str(uuid.UUID(int=random.getrandbits(128), version=4))},
           "spec": spec}
    yield prefix + name, json.dumps(obj, separators=(",", ":")) + "\n"

def txn(ops):
    for k in range(0, len(ops), 128):
        post("/v3/kv/txn", {"success": ops[k:k + 128]})

if mode == "name":  # the object name of fill address COUNT
    print(ip(addrs[count]) + SUFFIX)
    sys.exit(0)
if mode == "put":
    txn([{"request_put": {"key": b64(k), "value": b64(v)}} for i in range(first, count) for k, v in puts(i)])
    sys.exit(0)
# clean: every key under prefix, page by page; those the fill has not, deleted
keep = set(k for i in range(count) for k, v in puts(i))
gone, start, end = [], prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1)
while True:
    ans = post("/v3/kv/range", {"key": b64(start), "range_end": b64(end), "keys_only": True, "limit": 10000})
    keys = [base64.b64decode(kv["key"]).decode() for kv in ans.get("kvs", [])]
    gone += [k for k in keys if k not in keep]
    if not ans.get("more"):
        break
    start = keys[-1] + "\0"
txn([{"request_delete_range": {"key": b64(k)}} for k in gone])
PY

# k8s_create NAME: creates an RdmaAddress NAME through REST (its spec a placeholder); prints the HTTP status
k8s_create() {
	k8s_curl -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
		"$K8S_URL/apis/rdmans.io/v1alpha1/rdmaaddresses" -d '{"apiVersion":"rdmans.io/v1alpha1",
 "kind":"RdmaAddress","metadata":{"name":"'"$1"'"},"spec":{"address":"10.95.0.0","scope":"_default",
 "pool":"addr","attachment":"bench/probe/net1","record":"placeholder"}}'
}

# k8s_fill_prefix: sets K8S_DIR, where the API server keeps RdmaAddresses in its
# etcd, from one object created through REST (then deleted)
k8s_fill_prefix() {
	local key
	k8s_create bench-probe >/dev/null
	key=$(ETCDCTL_API=3 etcdctl --endpoints="$K8S_ETCD" get --prefix /registry/ --keys-only | grep '/rdmaaddresses/bench-probe$')
	k8s_curl -o /dev/null -X DELETE "$K8S_URL/apis/rdmans.io/v1alpha1/rdmaaddresses/bench-probe"
	[ -n "$key" ] || vm_fail "the API server's etcd has no key for an object created through REST"
	K8S_DIR=${key%bench-probe}
}

# k8s_count: the RdmaAddresses a list through REST counts (one page, and the rest it says)
k8s_count() {
	k8s_curl "$K8S_URL/apis/rdmans.io/v1alpha1/rdmaaddresses?limit=1" |
		jq '(.metadata.remainingItemCount // 0) + (.items | length)'
}

# k8s_settle COUNT: waits (at most 300 s) until the server lists COUNT objects
k8s_settle() {
	local i
	for ((i = 0; i < 600; i++)); do
		[ "$(k8s_count)" = "$1" ] && return 0
		sleep 0.5
	done
	vm_fail "the API server lists $(k8s_count) RdmaAddresses, not the $1 written to its etcd"
}

# fill_check STORE FLAT COUNT: rdmans ipam ls over the store counts COUNT, none damaged
fill_check() {
	local got
	got=$("$RDMANS" -j ipam ls --config "$2" | jq -c '[length, ([.[] | select(.damaged)] | length)]')
	[ "$got" = "[$3,0]" ] || vm_fail "$1: rdmans ipam ls over the fill says [records, damaged] $got, not [$3,0]"
}

# k8s_taken_check: a filled name is there through REST, and a create of it is refused (409)
k8s_taken_check() {
	local name code
	name=$(python3 "$IPAM_TMP/fill.py" name k8s - - 0)
	[ "$(k8s_curl "$K8S_URL/apis/rdmans.io/v1alpha1/rdmaaddresses/$name" | jq -r .spec.node)" != null ] ||
		vm_fail "kubernetes: a GET of filled $name does not return it"
	code=$(k8s_create "$name")
	[ "$code" = 409 ] || vm_fail "kubernetes: a create of filled $name says $code, not 409"
}

k8s_start
KC=$IPAM_TMP/bench.kubeconfig
k8s_kubeconfig "$KC" sa
k8s_fill_prefix
K8S_CONF='{"cniVersion":"1.1.0","name":"bench","ipam":{"type":"rdma-netns-ipam","range":"10.95.0.0/16",
 "store":"kubernetes","node_name":"bench","kubernetes":{"kubeconfig":"'"$KC"'"}}}'
printf '{"store":"kubernetes","kubernetes":{"kubeconfig":"%s"}}\n' "$KC" >"$IPAM_TMP/k8s.flat"

etcd_cluster 1
ETCD_CONF='{"cniVersion":"1.1.0","name":"bench","ipam":{"type":"rdma-netns-ipam","range":"10.95.0.0/16",
 "store":"etcd","node_name":"bench","etcd":{"endpoints":'"$(etcd_endpoints_json)"',"key_prefix":"/bench"}}}'
printf '{"store":"etcd","etcd":{"endpoints":%s,"key_prefix":"/bench"}}\n' "$(etcd_endpoints_json)" >"$IPAM_TMP/etcd.flat"

have=0
checked=
for pct in $FILLS; do
	count=$((65534 * pct / 100))
	t0=${EPOCHREALTIME/./}
	python3 "$IPAM_TMP/fill.py" put k8s "$K8S_ETCD" "$K8S_DIR" "$count" "$have" ||
		vm_fail "kubernetes: the fill to $pct% failed"
	python3 "$IPAM_TMP/fill.py" put etcd "${ETCD_CLIENT[0]}" /bench/_default/ "$count" "$have" ||
		vm_fail "etcd: the fill to $pct% failed"
	t1=${EPOCHREALTIME/./}
	k8s_settle "$count"
	[ "$count" = 0 ] || echo "fill $pct%: $count addresses ($((count - have)) new), written to both" \
		"stores in $(((t1 - t0) / 1000)) ms, listed through REST $(((${EPOCHREALTIME/./} - t1) / 1000)) ms later"
	have=$count
	if [ "$count" -gt 0 ] && [ -z "$checked" ]; then
		fill_check kubernetes "$IPAM_TMP/k8s.flat" "$count"
		fill_check etcd "$IPAM_TMP/etcd.flat" "$count"
		k8s_taken_check
		checked=1
	fi
	CONF=$K8S_CONF
	run kubernetes k8s_requests "$pct"
	CONF=$ETCD_CONF
	run etcd etcd_requests "$pct"
	# the measured ADDs' own objects go: the next level starts at its fill exactly
	python3 "$IPAM_TMP/fill.py" clean k8s "$K8S_ETCD" "$K8S_DIR" "$count" ||
		vm_fail "kubernetes: deleting the measured ADDs' objects failed"
	python3 "$IPAM_TMP/fill.py" clean etcd "${ETCD_CLIENT[0]}" /bench/_default/ "$count" ||
		vm_fail "etcd: deleting the measured ADDs' objects failed"
done
echo "load average at end: $(cat /proc/loadavg); the bench took $(((${EPOCHREALTIME/./} - bench_t0) / 1000000)) s"
