#!/bin/bash
# rdma-netns-ipam's kubernetes store against a real API server (Debian's
# apiextensions-apiserver over etcd, tools/apiserver.sh; k8s-lib.sh): the CRD
# from deploy/ created through REST; ADD, repeated ADD, CHECK, DEL, GC and the
# requests each costs, counted by the server; 100 parallel ADDs from clients
# posing as two nodes with no duplicate; the last free address; rdmans ipam
# ls/show/release over the store; an RBAC denial naming verb and resource.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/ipam-lib.sh"
. "$here/k8s-lib.sh"

k8s_start
vm_check "the CRD from deploy/ is created through REST" vm_expect_eq 201 "$K8S_CRD_STATUS" "HTTP status"

KC=$IPAM_TMP/node.kubeconfig
k8s_kubeconfig "$KC" admin
# No deadline over a call, long requests: what is checked here is what the store hands
# out under contention, whatever the machine's load
CONF='{"cniVersion":"1.1.0","name":"rdma-k8s","type":"rdma-netns","ipam":{"type":"rdma-netns-ipam",
 "range":"10.70.0.0/24","gateway":"10.70.0.1","datastore":"kubernetes","node_name":"node-a",
 "kubernetes":{"kubeconfig":"'"$KC"'","timeout_ms":60000,"deadline_ms":120000}}}'

# one ADD, counted by the server
before=$(k8s_requests)
ipam_run ADD first net1 ns/first
vm_check "ADD over whereabouts' datastore: kubernetes succeeds" vm_expect_eq 0 $? "exit status"
first=$(ip_of)
after=$(k8s_requests)
vm_check "a first ADD costs 2 requests (the attachment's list, the create)" vm_expect_eq 2 "$((after - before))" "requests"
vm_check "the RdmaAddress says address, pod and node" vm_expect_eq \
	"{\"address\":\"$first\",\"pod\":\"ns/first\",\"node\":\"node-a\",\"attachment\":\"ns/first/net1\"}" \
	"$(k8s_objects)" "object"
before=$(k8s_requests)
ipam_run ADD first net1 ns/first
vm_check "a repeated ADD returns the same address" vm_expect_eq "$first" "$(ip_of)"
vm_check "... for 1 request" vm_expect_eq 1 "$(($(k8s_requests) - before))" "requests"
before=$(k8s_requests)
vm_check "CHECK of the held attachment succeeds" ipam_run CHECK first net1 ns/first
vm_check "... for 1 request" vm_expect_eq 1 "$(($(k8s_requests) - before))" "requests"
rc=0
ipam_run CHECK stranger net1 ns/first || rc=$?
vm_check "CHECK from another container of the pod fails" vm_expect_eq 1 "$rc" "exit status"
vm_check "DEL by another container of the same pod releases nothing" ipam_run DEL stranger net1 ns/first
vm_check "... and the address is still held" vm_expect_eq 1 "$(k8s_objects | grep -c .)" "objects"
before=$(k8s_requests)
vm_check "DEL of the attachment succeeds" ipam_run DEL first net1 ns/first
vm_check "... for 2 requests (the list, the delete with its resourceVersion)" vm_expect_eq 2 \
	"$(($(k8s_requests) - before))" "requests"
vm_check "... and removes its RdmaAddress" vm_expect_eq 0 "$(k8s_objects | grep -c .)" "objects"
vm_check "DEL again succeeds (nothing held)" ipam_run DEL first net1 ns/first

# 100 ADDs at once, from clients posing as two nodes
k8s_adds_start 100
wait "${K8S_JOBS[@]}"
PAR_FAILS=$(cat "$IPAM_TMP"/par.* | grep -cv '^0 ')
PAR_ADDRS=$(for i in "$IPAM_TMP"/par.*; do cut -d' ' -f2- "$i" | jq -r '.ips[0].address'; done | sort)
vm_check "100 parallel ADDs from two nodes all succeed" vm_expect_eq 0 "$PAR_FAILS" "failed ADDs"
[ "$PAR_FAILS" = 0 ] || vm_diag "failed: $(grep -hv '^0 ' "$IPAM_TMP"/par.* | head -3)"
vm_check "... with 100 distinct addresses (0 duplicates)" vm_expect_eq 100 \
	"$(printf '%s\n' "$PAR_ADDRS" | sort -u | grep -c .)" "distinct"
vm_check "every address is in 10.70.0.2-254 with prefix 24" vm_expect_eq 0 \
	"$(printf '%s\n' "$PAR_ADDRS" | grep -cvE '^10\.70\.0\.([2-9]|[1-9][0-9]|1[0-9][0-9]|2[0-4][0-9]|25[0-4])/24$')" "addresses out of range"
vm_check "the API server holds 100 RdmaAddresses, 50 per node" vm_expect_eq "100 50 50" \
	"$(k8s_objects | grep -c .) $(k8s_objects | grep -c '"node":"node-a"') $(k8s_objects | grep -c '"node":"node-b"')" "objects"

# the operators' commands over the same store (a flat file naming it)
printf '{"store":"kubernetes","kubernetes":{"kubeconfig":"%s"}}\n' "$KC" >"$IPAM_TMP/flat.conf"
vm_check "rdmans ipam ls sees the 100" vm_expect_eq 100 \
	"$("$RDMANS" -j ipam ls --config "$IPAM_TMP/flat.conf" | jq length)" "records"
vm_check "rdmans ipam ls --node node-b sees its 50" vm_expect_eq 50 \
	"$("$RDMANS" -j ipam ls --config "$IPAM_TMP/flat.conf" --node node-b | jq length)" "records"
a7=$(cut -d' ' -f2- "$IPAM_TMP/par.7" | jq -r '.ips[0].address' | cut -d/ -f1)
vm_check "rdmans ipam show names pod-7's address" vm_expect_contains \
	"$("$RDMANS" ipam show "$a7" --config "$IPAM_TMP/flat.conf" 2>&1)" "ns/pod-7"
vm_check "rdmans ipam release frees it" "$RDMANS" ipam release "$a7" --config "$IPAM_TMP/flat.conf"
vm_check "... and its RdmaAddress is gone" vm_expect_eq 99 "$(k8s_objects | grep -c .)" "objects"
rc=0
ipam_run CHECK par7 net1 ns/pod-7 || rc=$?
vm_check "CHECK of the released attachment fails" vm_expect_eq 1 "$rc" "exit status"

# GC on node-a: its attachments not in the valid list go, node-b's stay
valid=$(for i in $(seq 1 2 40); do printf '{"containerID":"par%s","ifname":"net1"},' "$i"; done)
GCONF=$(printf '%s' "$CONF" | jq -c --argjson v "[${valid%,}]" '. + {"cni.dev/valid-attachments": $v}')
gc_run() { CONF=$GCONF ipam_run GC -; }
vm_check "GC on node-a succeeds" gc_run
vm_check "GC kept node-a's 19 valid ones (pod-7 was released) and node-b's 50" vm_expect_eq "19 50" \
	"$(k8s_objects | grep -c '"node":"node-a"') $(k8s_objects | grep -c '"node":"node-b"')" "objects"

# the last free address: a /29 of its own (network_name: another scope), 6 usable
SMALL=$(printf '%s' "$CONF" | jq -c '.ipam += {range: "10.71.0.0/29", network_name: "small"} | del(.ipam.gateway)')
for i in 1 2 3 4 5 6; do
	CONF=$SMALL ipam_run ADD "small$i" net1 "ns/small-$i" || vm_diag "ADD small$i failed: $IPAM_OUT"
done
rc=0
CONF=$SMALL ipam_run ADD small7 net1 ns/small-7 || rc=$?
vm_check "the first ADD after the last free address fails" vm_expect_eq 1 "$rc" "exit status"
vm_check "... saying why" vm_expect_contains "$(printf '%s' "$IPAM_OUT" | jq -r .details)" \
	"no free address in range 10.71.0.0/29: all 6 usable addresses are taken"
vm_check "the 6 are held in scope small, apart from the /24's" vm_expect_eq 6 \
	"$("$RDMANS" -j ipam ls --config "$IPAM_TMP/flat.conf" --scope small | jq length)" "records"

# RBAC as deploy/rbac.yaml grants it: its ServiceAccount does ADD, CHECK and DEL; a user
# no binding names is denied, and the message names verb, resource and the role to grant
k8s_kubeconfig "$IPAM_TMP/sa.kubeconfig" sa
SA=$(printf '%s' "$CONF" | jq -c --arg k "$IPAM_TMP/sa.kubeconfig" '.ipam.kubernetes.kubeconfig = $k')
sa_add() { CONF=$SA ipam_run ADD sa net1 ns/sa; }
vm_check "ADD as deploy/rbac.yaml's ServiceAccount succeeds" sa_add
sa_ok() { CONF=$SA ipam_run CHECK sa net1 ns/sa && CONF=$SA ipam_run DEL sa net1 ns/sa; }
vm_check "... and so do its CHECK and DEL (the ClusterRole's verbs suffice)" sa_ok
k8s_kubeconfig "$IPAM_TMP/denied.kubeconfig" node
DENIED=$(printf '%s' "$CONF" | jq -c --arg k "$IPAM_TMP/denied.kubeconfig" '.ipam.kubernetes.kubeconfig = $k')
rc=0
CONF=$DENIED ipam_run ADD denied net1 ns/denied || rc=$?
vm_check "ADD as a user no binding names fails with code 101 (denied)" vm_expect_eq "1 101" \
	"$rc $(printf '%s' "$IPAM_OUT" | jq -r .code)" "exit status and code"
vm_check "... naming the verb, the resource, the server's reason and the role to grant" vm_expect_contains \
	"$(printf '%s' "$IPAM_OUT" | jq -r .details)" \
	"the Kubernetes API server at $K8S_URL denies list on rdmaaddresses.rdmans.io (403 Forbidden: rdmaaddresses.rdmans.io is forbidden: User \"system:node:node-x\" cannot list resource \"rdmaaddresses\" in API group \"rdmans.io\" at the cluster scope: RBAC: no ClusterRoleBinding in deploy/rbac.yaml grants it): grant it to the kubeconfig's user (deploy/rbac.yaml's ClusterRole rdmans-ipam)"

# a kubeconfig the store cannot use: refused by line, before any request
printf 'clusters:\n- name: c\n  cluster: {server: x}\n' >"$IPAM_TMP/flow.kubeconfig"
rc=0
CONF=$(printf '%s' "$CONF" | jq -c --arg k "$IPAM_TMP/flow.kubeconfig" '.ipam.kubernetes.kubeconfig = $k') \
	ipam_run ADD flow net1 ns/flow || rc=$?
vm_check "a kubeconfig in YAML the reader does not take is refused, with its line" vm_expect_contains \
	"$rc $(printf '%s' "$IPAM_OUT" | jq -r .details)" "line 3: flow collections"

vm_done
