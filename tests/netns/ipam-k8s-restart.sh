#!/bin/bash
# The kubernetes store when its API server goes away (k8s-lib.sh: the real
# server over etcd). Down: ADD, DEL and STATUS fail with code 11 naming the
# server's URL, and nothing is lost. Killed (-9) while 60 ADDs run from two
# nodes and started again: every ADD either got an address or failed saying
# why; no address is held twice; once the runtime sends the DEL a failed ADD
# calls for, no record is left that no successful ADD holds. One of the
# server's three etcd members killed during 40 ADDs: the same, and the store
# keeps working on the two left.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/ipam-lib.sh"
. "$here/k8s-lib.sh"

# three etcd members under the server: one is killed below
K8S_ETCD_MEMBERS=3
k8s_start
KC=$IPAM_TMP/node.kubeconfig
k8s_kubeconfig "$KC" admin
CONF='{"cniVersion":"1.1.0","name":"rdma-k8s","type":"rdma-netns","ipam":{"type":"rdma-netns-ipam",
 "range":"10.72.0.0/24","store":"kubernetes","node_name":"node-a",
 "kubernetes":{"kubeconfig":"'"$KC"'","timeout_ms":15000,"deadline_ms":30000}}}'
# the down server's checks want no wait: a short deadline over each call
DOWN=$(printf '%s' "$CONF" | jq -c '.ipam.kubernetes += {timeout_ms: 1000, deadline_ms: 1500}')

ipam_run ADD held net1 ns/held
vm_check "ADD with the server up succeeds" vm_expect_eq 0 $? "exit status"
held=$(ip_of)

# down: each verb says so, naming the URL
k8s_stop
rc=0
CONF=$DOWN ipam_run ADD down net1 ns/down || rc=$?
vm_check "ADD with the API server down fails with code 11 (try again later)" vm_expect_eq "1 11" \
	"$rc $(printf '%s' "$IPAM_OUT" | jq -r .code)" "exit status and code"
vm_check "... naming the server's URL" vm_expect_contains "$(printf '%s' "$IPAM_OUT" | jq -r .details)" \
	"the Kubernetes API server at $K8S_URL is unreachable (kubeconfig $KC), tried for this call's deadline of 1500 ms (ipam.kubernetes.deadline_ms): last: "
rc=0
CONF=$DOWN ipam_run DEL held net1 ns/held || rc=$?
vm_check "DEL with the server down fails (the runtime retries) instead of losing the record" \
	vm_expect_eq "1 11" "$rc $(printf '%s' "$IPAM_OUT" | jq -r .code)" "exit status and code"
rc=0
CONF=$DOWN ipam_run STATUS - || rc=$?
vm_check "STATUS with the server down gives code 50" vm_expect_eq "1 50" \
	"$rc $(printf '%s' "$IPAM_OUT" | jq -r .code)" "exit status and code"
k8s_server
vm_check "after the restart, the held address is still held" vm_expect_eq "$held" \
	"$(k8s_objects | jq -r 'select(.pod == "ns/held") | .address')" "address"

# killed with 60 ADDs in flight, started again; the checks hold wherever the kill lands
# (an ADD whose deadline outlasts the restart gets through: refused connections are retried)
k8s_adds_start 60
sleep 0.5
k8s_stop
k8s_server
wait "${K8S_JOBS[@]}"
ok=$(grep -l '^0 ' "$IPAM_TMP"/par.* | wc -l)
vm_diag "$ok of 60 ADDs succeeded across the restart"
bad=$(grep -hv '^0 ' "$IPAM_TMP"/par.* | cut -d' ' -f2- | jq -r 'select(.code != 11 or (.details | test("Kubernetes API server at") | not)) | .details' | head -3)
vm_check "every failed ADD failed with code 11 naming the API server" vm_expect_eq "" "$bad" "other failures"
addrs=$(for f in "$IPAM_TMP"/par.*; do grep -q '^0 ' "$f" && cut -d' ' -f2- "$f" | jq -r '.ips[0].address'; done | sort)
vm_check "no address was handed out twice" vm_expect_eq "$(printf '%s\n' "$addrs" | grep -c .)" \
	"$(printf '%s\n' "$addrs" | sort -u | grep -c .)" "distinct addresses"
# what the runtime does after a failed ADD: DEL
for i in $(seq 1 60); do
	grep -q '^0 ' "$IPAM_TMP/par.$i" && continue
	CONF=$(k8s_conf_of "$i") ipam_run DEL "par$i" net1 "ns/pod-$i" ||
		vm_diag "DEL par$i failed: $IPAM_OUT"
done
want=$( (echo "$held"; for f in "$IPAM_TMP"/par.*; do grep -q '^0 ' "$f" && cut -d' ' -f2- "$f" | jq -r '.ips[0].address' | cut -d/ -f1; done) | sort)
vm_check "the server holds exactly the successful ADDs' addresses: no duplicate, no leaked record" \
	vm_expect_eq "$want" "$(k8s_objects | jq -r .address | sort)" "addresses held"
vm_check "each successful ADD's pod holds its address" vm_expect_eq 0 "$(
	for f in "$IPAM_TMP"/par.*; do
		grep -q '^0 ' "$f" || continue
		i=${f##*.}
		a=$(cut -d' ' -f2- "$f" | jq -r '.ips[0].address' | cut -d/ -f1)
		k8s_objects | jq -s -e --arg a "$a" --arg p "ns/pod-$i" 'any(.[]; .address == $a and .pod == $p)' >/dev/null ||
			echo "$a not held by ns/pod-$i"
	done | grep -c .)" "addresses not held by their pod" || vm_diag "$(k8s_objects | head -3)"


# an etcd member killed (-9) under the server while 40 ADDs run from two nodes:
# the other two hold quorum. Wherever the kill lands: no address twice, every
# failure a clear error, and once the runtime's DELs ran, the store holds exactly
# the successful ADDs' addresses; then 20 new ADDs all succeed on two members
QCONF=$(printf '%s' "$CONF" | jq -c '.ipam += {network_name: "quorum", range: "10.73.0.0/24"}')
quorum_objects() { k8s_objects | grep '"address":"10\.73\.'; }
CONF=$QCONF k8s_adds_start 40
sleep 0.3
kill -9 "${ETCD_PIDS[0]}"
wait "${K8S_JOBS[@]}"
ok=$(grep -l '^0 ' "$IPAM_TMP"/par.* | wc -l)
vm_diag "$ok of 40 ADDs succeeded across the member's death"
bad=$(grep -hv '^0 ' "$IPAM_TMP"/par.* | cut -d' ' -f2- | jq -r 'select((.msg // "") == "" or (.details // "") == "") | tostring' | head -3)
vm_check "every failed ADD says why (code, message, details)" vm_expect_eq "" "$bad" "failures without a reason"
addrs=$(for f in "$IPAM_TMP"/par.*; do grep -q '^0 ' "$f" && cut -d' ' -f2- "$f" | jq -r '.ips[0].address' | cut -d/ -f1; done | sort)
vm_check "no address was handed out twice" vm_expect_eq "$(printf '%s\n' "$addrs" | grep -c .)" \
	"$(printf '%s\n' "$addrs" | sort -u | grep -c .)" "distinct addresses"
for i in $(seq 1 40); do
	grep -q '^0 ' "$IPAM_TMP/par.$i" && continue
	CONF=$(CONF=$QCONF k8s_conf_of "$i") ipam_run DEL "par$i" net1 "ns/pod-$i" ||
		vm_diag "DEL par$i failed: $IPAM_OUT"
done
vm_check "the server holds exactly the successful ADDs' addresses" vm_expect_eq "$addrs" \
	"$(quorum_objects | jq -r .address | sort)" "addresses held"
for i in $(seq 41 60); do
	CONF=$(CONF=$QCONF k8s_conf_of "$i") ipam_run ADD "par$i" net1 "ns/pod-$i" || vm_diag "ADD par$i: $IPAM_OUT"
done
vm_check "20 ADDs after the kill all succeed on the two members left" vm_expect_eq "$((ok + 20))" \
	"$(quorum_objects | grep -c .)" "objects"

vm_done
