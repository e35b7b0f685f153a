#!/bin/bash
# rdma-netns-ipam with a real etcd (Debian's etcd-server) on loopback:
# 100 parallel ADDs from a /24 get 100 distinct addresses; the ADD after the
# last free address is taken fails with a clear error; repeated ADD, DEL,
# CHECK, STATUS and GC over etcd; an unreachable store fails clearly.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/ipam-lib.sh"

etcd_cluster 1
EP=$(etcd_endpoints_json)
# No deadline over a call, long requests: what is checked here is what the store hands out
# under contention, whatever the machine's load (the deadline is checked below, etcd frozen)
CONF='{"cniVersion":"1.1.0","name":"rdma-etcd","type":"rdma-netns","ipam":{"type":"rdma-netns-ipam",
 "range":"10.60.0.0/24","gateway":"10.60.0.1","store":"etcd","node_name":"node-1",
 "etcd":{"endpoints":'"$EP"',"key_prefix":"/t","timeout_ms":60000,"deadline_ms":0}}}'

# 100 ADDs at once, each its own pod (as 100 kubelets would send them)
ipam_parallel_adds 100 pod-
vm_check "100 parallel ADDs all succeed" vm_expect_eq 0 "$PAR_FAILS" "failed ADDs"
[ "$PAR_FAILS" = 0 ] || vm_diag "failed: $(grep -hv '^0 ' "$IPAM_TMP"/par.* | head -3)"
vm_check "100 parallel ADDs give 100 distinct addresses" vm_expect_eq 100 "$(printf '%s\n' "$PAR_ADDRS" | sort -u | grep -c .)" "distinct"
vm_check "every address is in 10.60.0.2-254 with prefix 24" vm_expect_eq 0 \
	"$(printf '%s\n' "$PAR_ADDRS" | grep -cvE '^10\.60\.0\.([2-9]|[1-9][0-9]|1[0-9][0-9]|2[0-4][0-9]|25[0-4])/24$')" "addresses out of range"
vm_check "etcd holds 100 address keys" vm_expect_eq 100 \
	"$(etcdctl_ 0 get --prefix /t/_default/addr/ --keys-only | grep -c .)" "keys"
vm_check "rdmans ipam ls sees the 100" vm_expect_eq 100 \
	"$("$RDMANS" -j ipam ls --etcd "${ETCD_CLIENT[0]}" --etcd-prefix /t | jq length)" "records"

# records say node, container, ifname, pod and time
rec=$(etcdctl_ 0 get --prefix /t/_default/addr/ --print-value-only | head -12)
vm_check "an etcd record is readable text with node, container, pod, time" bash -c '
	for k in ip= node=node-1 container_id=par ifname=net1 pod=ns/pod- time=20 network=rdma-etcd; do
		grep -q "^$k" <<<"$1" || { echo "missing $k in: $1"; exit 1; }
	done' _ "$rec"

# a repeated ADD returns what it holds
ipam_run ADD par7 net1 ns/pod-7
vm_check "a repeated ADD returns the same address" vm_expect_eq \
	"$(cut -d' ' -f2- "$IPAM_TMP/par.7" | jq -r '.ips[0].address')" "$(printf '%s' "$IPAM_OUT" | jq -r '.ips[0].address')"
vm_check "CHECK of a held attachment succeeds" ipam_run CHECK par7 net1 ns/pod-7

# fill the /24: 253 usable (network, broadcast and gateway never handed out)
for i in $(seq 101 253); do
	ipam_run ADD "fill$i" net1 "ns/pod-$i" || { vm_diag "ADD $i failed: $IPAM_OUT"; break; }
done
vm_check "253 addresses are held" vm_expect_eq 253 \
	"$(etcdctl_ 0 get --prefix /t/_default/addr/ --keys-only | grep -c .)" "keys"
vm_check "the gateway was never handed out" vm_expect_eq 0 \
	"$("$RDMANS" -j ipam ls --etcd "${ETCD_CLIENT[0]}" --etcd-prefix /t | jq '[.[] | select(.address == "10.60.0.1" or .address == "10.60.0.0" or .address == "10.60.0.255")] | length')" "special addresses held"
rc=0
ipam_run ADD late net1 ns/late || rc=$?
vm_check "the first ADD after the last free address fails" vm_expect_eq 1 "$rc" "exit status"
vm_check "... with error code 100 and a message that says why" vm_expect_eq \
	'100|no free address in range 10.60.0.0/24: all 253 usable addresses are taken' \
	"$(printf '%s' "$IPAM_OUT" | jq -r '"\(.code)|\(.details | split(" (")[0])"')" "error"
rc=0
ipam_run STATUS - || rc=$?
vm_check "STATUS reports the exhausted pool with code 50" vm_expect_eq "1 50" \
	"$rc $(printf '%s' "$IPAM_OUT" | jq -r .code)" "status"
vm_check "the failed ADD left no attachment" vm_expect_eq "" \
	"$(etcdctl_ 0 get --prefix /t/_default/attachments/ns/late --keys-only)" "attachment keys"

# DEL frees exactly the caller's address; the late ADD then gets it
freed=$(cut -d' ' -f2- "$IPAM_TMP/par.42" | jq -r '.ips[0].address')
vm_check "DEL of one attachment succeeds" ipam_run DEL par42 net1 ns/pod-42
vm_check "DEL again succeeds (nothing held)" ipam_run DEL par42 net1 ns/pod-42
vm_check "DEL by another container of the same pod releases nothing" ipam_run DEL other net1 ns/pod-43
vm_check "CHECK of pod-43 still succeeds" ipam_run CHECK par43 net1 ns/pod-43
vm_check "STATUS succeeds with one address free" ipam_run STATUS -
ipam_run ADD late net1 ns/late
vm_check "the late ADD now gets the freed address" vm_expect_eq "$freed" "$(printf '%s' "$IPAM_OUT" | jq -r '.ips[0].address')"

# GC: this node's attachments not in the valid list go; node-2's stay
CONF2=$(printf '%s' "$CONF" | sed 's/"node_name":"node-1"/"node_name":"node-2"/')
( CONF=$CONF2; ipam_run DEL fill250 net1 ns/pod-250; ipam_run ADD n2 net1 ns/on-node-2 )
valid=$(for i in $(seq 1 100); do [ "$i" = 42 ] || printf '{"containerID":"par%s","ifname":"net1"},' "$i"; done)
CONF=$(printf '%s' "$CONF" | jq -c --argjson v "[${valid%,},{\"containerID\":\"late\",\"ifname\":\"net1\"}]" '. + {"cni.dev/valid-attachments": $v}')
vm_check "GC succeeds" ipam_run GC -
vm_check "GC released the 152 stale fills of node-1 and kept 100 + node-2's" vm_expect_eq 101 \
	"$(etcdctl_ 0 get --prefix /t/_default/addr/ --keys-only | grep -c .)" "keys after GC"
vm_check "node-2's address survived GC" bash -c "'$RDMANS' -j ipam ls --etcd '${ETCD_CLIENT[0]}' --etcd-prefix /t --node node-2 | jq -e 'length == 1' >/dev/null"

# a frozen etcd (SIGSTOP: connections open, nothing answers): one deadline over the
# whole call, both figures in the message (it said "timed out after 5001
# milliseconds" after 4 tries of 5 s)
vm_freeze "${ETCD_PIDS[0]}"
FROZEN=$(printf '%s' "$CONF" | jq -c '.ipam.etcd += {timeout_ms: 1500, deadline_ms: 2500}')
rc=0
IPAM_OUT=$(printf '%s' "$FROZEN" | CNI_COMMAND=ADD CNI_CONTAINERID=frozen CNI_IFNAME=net1 \
	CNI_NETNS=/var/run/netns/none CNI_PATH=/nonexistent "$IPAM" 2>>"$IPAM_TMP/stderr") || rc=$?
kill -CONT "${ETCD_PIDS[0]}"
vm_check "ADD with etcd frozen fails with code 11" vm_expect_eq "1 11" "$rc $(printf '%s' "$IPAM_OUT" | jq -r .code)"
vm_check "... saying the call's deadline and each request's limit" vm_expect_contains \
	"$(printf '%s' "$IPAM_OUT" | jq -r .details)" \
	"etcd did not answer within this call's deadline of 2500 ms (ipam.etcd.deadline_ms; each request at most 1500 ms, ipam.etcd.timeout_ms): last: "
# four tries of 500 ms fill a 2000 ms deadline: the last try ends on the deadline, and the
# message must say so (a CI run heard "no etcd endpoint answered" when it ended there)
vm_freeze "${ETCD_PIDS[0]}"
rc=0
IPAM_OUT=$(printf '%s' "$CONF" | jq -c '.ipam.etcd += {timeout_ms: 500, deadline_ms: 2000}' |
	CNI_COMMAND=ADD CNI_CONTAINERID=frozen CNI_IFNAME=net1 CNI_NETNS=/var/run/netns/none \
		CNI_PATH=/nonexistent "$IPAM" 2>>"$IPAM_TMP/stderr") || rc=$?
kill -CONT "${ETCD_PIDS[0]}"
vm_check "ADD whose tries end on the deadline fails with code 11, naming the deadline" vm_expect_contains \
	"$rc $(printf '%s' "$IPAM_OUT" | jq -r '"\(.code) \(.details)"')" \
	"1 11 etcd did not answer within this call's deadline of 2000 ms (ipam.etcd.deadline_ms; each request at most 500 ms, ipam.etcd.timeout_ms): last: "
vm_check "ipam.etcd.deadline_ms must be a number" bash -c "printf '%s' '$(printf '%s' "$CONF" | jq -c '.ipam.etcd.deadline_ms = "soon"')' |
	CNI_COMMAND=ADD CNI_CONTAINERID=x CNI_IFNAME=net1 CNI_PATH=/n '$IPAM' 2>/dev/null | grep -q 'ipam.etcd.deadline_ms must be a number of milliseconds'"

# an unreachable store: a clear error, code 11 (try again later)
free_port
dead=$PORT
CONF=$(printf '%s' "$CONF" | jq -c --arg ep "http://127.0.0.1:$dead" '.ipam.etcd.endpoints = [$ep]')
rc=0
ipam_run ADD nostore net1 ns/nostore || rc=$?
vm_check "ADD with no etcd answering fails with code 11" vm_expect_eq "1 11" "$rc $(printf '%s' "$IPAM_OUT" | jq -r .code)"
vm_check "... naming the endpoint" vm_expect_contains "$(printf '%s' "$IPAM_OUT" | jq -r .details)" "127.0.0.1:$dead"
rc=0
ipam_run STATUS - || rc=$?
vm_check "STATUS with no etcd answering gives code 50" vm_expect_eq "1 50" "$rc $(printf '%s' "$IPAM_OUT" | jq -r .code)"
rc=0
ipam_run DEL par1 net1 ns/pod-1 || rc=$?
vm_check "DEL with no etcd answering fails (kubelet retries) instead of losing the record" vm_expect_eq "1 11" "$rc $(printf '%s' "$IPAM_OUT" | jq -r .code)"
vm_check "and pod-1's record is still there" vm_expect_eq 1 \
	"$(etcdctl_ 0 get --prefix /t/_default/attachments/ns/pod-1/ --keys-only | grep -c .)" "attachment"

vm_done
