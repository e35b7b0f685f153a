#!/bin/bash
# rdma-netns-ipam's kubernetes store against a real API server (Debian's
# apiextensions-apiserver over etcd, tools/apiserver.sh; k8s-lib.sh): the CRD
# from deploy/ created through REST; ADD, repeated ADD, CHECK, DEL, GC and the
# requests each costs, counted by the server; 100 parallel ADDs from clients
# posing as two nodes with no duplicate; the last free address; rdmans ipam
# ls/show/release over the store; an RBAC denial naming verb and resource;
# whereabouts' IPPools imported (rdmans ipam import) from the same server; a
# DEL racing the same pod's new ADD; rdmans ipam reconcile over the store.
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


# whereabouts' IPPools imported: the IPPool CRD (group, kind and fields of
# whereabouts' pkg/api/.../ippool_types.go) on the same server, a pool written
# through REST as whereabouts writes it (offsets from the range's address),
# read back as 'kubectl get ippools -A -o json' prints it, imported
WB=$(printf '%s' "$CONF" | jq -c '.name = "rdma-wb" | .ipam += {range: "10.72.0.0/29", network_name: "wb"} | del(.ipam.gateway)')
printf '%s' "$WB" >"$IPAM_TMP/wb.conf"
wb_crd='{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
 "metadata":{"name":"ippools.whereabouts.cni.cncf.io"},"spec":{"group":"whereabouts.cni.cncf.io",
 "scope":"Namespaced","names":{"plural":"ippools","singular":"ippool","kind":"IPPool","listKind":"IPPoolList"},
 "versions":[{"name":"v1alpha1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object",
 "properties":{"spec":{"type":"object","required":["range"],"properties":{"range":{"type":"string"},
 "allocations":{"type":"object","additionalProperties":{"type":"object","required":["id"],
 "properties":{"id":{"type":"string"},"podref":{"type":"string"},"ifname":{"type":"string"}}}}}}}}}}]}}'
k8s_curl -o /dev/null -X POST -H 'Content-Type: application/json' --data-binary "$wb_crd" \
	"$K8S_URL/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
WB_URL=$K8S_URL/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/kube-system/ippools
# pod wb-1 at offset 1 with its ifname; wb-2 at offset 2 as whereabouts before 0.7 wrote it
wb_pool='{"apiVersion":"whereabouts.cni.cncf.io/v1alpha1","kind":"IPPool",
 "metadata":{"name":"wb-10.72.0.0-29","namespace":"kube-system"},"spec":{"range":"10.72.0.0/29",
 "allocations":{"1":{"id":"wbc1","podref":"ns/wb-1","ifname":"net1"},"2":{"id":"wbc2","podref":"ns/wb-2"}}}}'
for i in $(seq 1 100); do
	[ "$(k8s_curl -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
		--data-binary "$wb_pool" "$WB_URL")" = 201 ] && break
	sleep 0.1 # the new CRD is served a moment after it is created
done
k8s_curl "$K8S_URL/apis/whereabouts.cni.cncf.io/v1alpha1/ippools" >"$IPAM_TMP/ippools.json"
vm_check "whereabouts' IPPool is stored and listed by the server" vm_expect_eq "wb-10.72.0.0-29 2" \
	"$(jq -r '.items[0] | "\(.metadata.name) \(.spec.allocations | length)"' "$IPAM_TMP/ippools.json")"
wb_objects() { k8s_objects | grep -c '"address":"10\.72\.'; }
rc=0
"$RDMANS" ipam import "$IPAM_TMP/ippools.json" --config "$IPAM_TMP/wb.conf" >"$IPAM_TMP/import.out" 2>&1 || rc=$?
vm_check "an import with an allocation naming no interface is refused as a whole" vm_expect_eq "7 0" \
	"$rc $(wb_objects)" "exit status and objects"
vm_check "... saying which and what to give" vm_expect_contains "$(cat "$IPAM_TMP/import.out")" \
	"IPPool wb-10.72.0.0-29: 10.72.0.2 (allocation 2) names no interface (whereabouts before 0.7): give the pods' interface with --ifname; nothing imported"
before=$(k8s_requests)
"$RDMANS" -j ipam import "$IPAM_TMP/ippools.json" --config "$IPAM_TMP/wb.conf" --ifname net1 >"$IPAM_TMP/import.out" 2>&1
vm_check "the import with --ifname succeeds" vm_expect_eq 0 $? "exit status"
vm_check "... taking both addresses for their pods" vm_expect_eq "10.72.0.1 ns/wb-1/net1 imported,10.72.0.2 ns/wb-2/net1 imported" \
	"$(jq -r '[.events[] | "\(.address) \(.attachment) \(.outcome)"] | sort | join(",")' "$IPAM_TMP/import.out")"
vm_check "... 2 requests each" vm_expect_eq 4 "$(($(k8s_requests) - before))" "requests"
vm_check "the RdmaAddresses name the pods, and no node" vm_expect_eq \
	'{"address":"10.72.0.1","pod":"ns/wb-1","node":"","attachment":"ns/wb-1/net1"} {"address":"10.72.0.2","pod":"ns/wb-2","node":"","attachment":"ns/wb-2/net1"}' \
	"$(k8s_objects | grep '"address":"10\.72\.' | sort | tr '\n' ' ' | sed 's/ $//')"
"$RDMANS" ipam import "$IPAM_TMP/ippools.json" --config "$IPAM_TMP/wb.conf" --ifname net1 >"$IPAM_TMP/import.out" 2>&1
vm_check "importing again succeeds and takes nothing twice" vm_expect_eq "0 2" "$? $(wb_objects)" \
	"exit status and objects"
vm_check "... reporting both as already held" vm_expect_contains "$(cat "$IPAM_TMP/import.out")" \
	"import: 2 allocation(s): 0 imported, 2 already held, 0 refused"
CONF=$WB ipam_run CHECK wbc1 net1 ns/wb-1
vm_check "the runtime's CHECK for pod wb-1's container finds its imported address" vm_expect_eq 0 $? "exit status"
# the /29's 6 usable addresses: 2 imported, 4 left for new pods, then none
for i in 3 4 5 6; do CONF=$WB ipam_run ADD "wbnew$i" net1 "ns/wbnew-$i"; done
CONF=$WB ipam_run ADD wbnew7 net1 ns/wbnew-7
vm_check "new pods get the 4 addresses the import left, then none" vm_expect_eq \
	"1 10.72.0.3 10.72.0.4 10.72.0.5 10.72.0.6" \
	"$? $(k8s_objects | jq -r 'select(.pod | startswith("ns/wbnew")) | .address' | sort | tr '\n' ' ' | sed 's/ $//')"
CONF=$WB ipam_run DEL wbc1 net1 ns/wb-1
vm_check "the runtime's DEL for pod wb-1 releases the imported address" vm_expect_eq "0 1" \
	"$? $(wb_objects | awk '{print $1 - 4}')" "exit status and imported objects left"
# an allocation whose address another pod holds now is refused and listed; the others go in
jq '.items[0].spec.allocations += {"1": {"id":"wbc9","podref":"ns/wb-9","ifname":"net1"},
	"3": {"id":"wbc3","podref":"ns/wb-3","ifname":"net1"}}' "$IPAM_TMP/ippools.json" >"$IPAM_TMP/ippools2.json"
rc=0
"$RDMANS" ipam import "$IPAM_TMP/ippools2.json" --config "$IPAM_TMP/wb.conf" --ifname net1 >"$IPAM_TMP/import.out" 2>&1 || rc=$?
vm_check "an import with an address held by another pod exits 13 (exists)" vm_expect_eq 13 "$rc" "exit status"
vm_check "... naming the address and its holder" vm_expect_contains "$(cat "$IPAM_TMP/import.out")" \
	"10.72.0.3 in range 10.72.0.0/29 is already held by $(k8s_objects | jq -r 'select(.address == "10.72.0.3") | .attachment')"
vm_check "... taking the free one (pod wb-9 at 10.72.0.1) and keeping wb-2" vm_expect_contains \
	"$(cat "$IPAM_TMP/import.out")" "import: 3 allocation(s): 1 imported, 1 already held, 1 refused"
# an offset outside the pool's range: nothing is read into the store
jq '.items[0].spec.allocations += {"8": {"id":"x","podref":"ns/x","ifname":"net1"}}' \
	"$IPAM_TMP/ippools.json" >"$IPAM_TMP/ippools3.json"
n=$(k8s_objects | grep -c .)
rc=0
"$RDMANS" ipam import "$IPAM_TMP/ippools3.json" --config "$IPAM_TMP/wb.conf" --ifname net1 >"$IPAM_TMP/import.out" 2>&1 || rc=$?
vm_check "an allocation outside its IPPool's range is refused, and nothing changes" vm_expect_eq \
	"7 $n" "$rc $(k8s_objects | grep -c .)" "exit status and objects"
vm_check "... naming pool, key and range" vm_expect_contains "$(cat "$IPAM_TMP/import.out")" \
	"IPPool wb-10.72.0.0-29: allocation 8 is outside range 10.72.0.0/29"


# DEL of a pod's old sandbox racing the ADD of its new one (the same attachment,
# ns/race/net1): whichever runs first, the new container ends up holding one
# address and the old one none; 10 rounds
RACE=$(printf '%s' "$CONF" | jq -c '.ipam += {network_name: "race"}')
bad=""
for r in $(seq 1 10); do
	CONF=$RACE ipam_run ADD "race$r" net1 ns/race || bad+=" round $r: ADD race$r failed;"
	(CONF=$RACE ipam_run DEL "race$r" net1 ns/race; echo "$?" >"$IPAM_TMP/race.del") &
	del=$!
	CONF=$RACE ipam_run ADD "race$((r + 1))" net1 ns/race
	add_rc=$?
	wait "$del"
	held=$(k8s_curl "$K8S_URL/apis/rdmans.io/v1alpha1/rdmaaddresses" |
		jq -r '[.items[].spec | select(.scope == "race") | .record | capture("container_id=(?<c>[^\n]*)").c] | join(" ")')
	[ "$add_rc $(cat "$IPAM_TMP/race.del") $held" = "0 0 race$((r + 1))" ] ||
		bad+=" round $r: ADD $add_rc, DEL $(cat "$IPAM_TMP/race.del"), held by '$held';"
	CONF=$RACE ipam_run DEL "race$((r + 1))" net1 ns/race || bad+=" round $r: the cleanup DEL failed;"
done
vm_check "a DEL racing the pod's new ADD: the new container holds one address, 10 rounds" \
	vm_expect_eq "" "$bad" "rounds that broke it"

# the reconciler over this store: node-a's pod whose netns is gone is released,
# its live pod and node-b's records are kept
REC=$(printf '%s' "$CONF" | jq -c '.ipam += {network_name: "rec"}')
trap 'ip netns del rnk8s-live 2>/dev/null; ip netns del rnk8s-dead 2>/dev/null; k8s_cleanup' EXIT
ip netns add rnk8s-live
ip netns add rnk8s-dead
rec_add() { # rec_add CID POD NETNS NODE
	IPAM_OUT=$(printf '%s' "$REC" | jq -c --arg n "$4" '.ipam.node_name = $n' |
		CNI_COMMAND=ADD CNI_CONTAINERID=$1 CNI_IFNAME=net1 CNI_NETNS=/var/run/netns/$3 \
		CNI_PATH=/nonexistent CNI_ARGS="K8S_POD_NAMESPACE=ns;K8S_POD_NAME=$2" "$IPAM" 2>>"$IPAM_TMP/stderr")
}
rec_add reclive rec-live rnk8s-live node-a && rec_add recdead rec-dead rnk8s-dead node-a &&
	rec_add recother rec-other rnk8s-dead node-b
vm_check "three ADDs with live netns paths succeed" vm_expect_eq 0 $? "exit status"
ip netns del rnk8s-dead
"$RDMANS" ipam reconcile --grace 0 --node node-a --config "$IPAM_TMP/flat.conf" >"$IPAM_TMP/rec.out" 2>&1
vm_check "rdmans ipam reconcile over the kubernetes store succeeds" vm_expect_eq 0 $? "exit status"
vm_check "... releasing node-a's pod whose netns is gone, and only it" vm_expect_eq \
	"ns/rec-live node-a,ns/rec-other node-b" \
	"$(k8s_objects | jq -r 'select(.pod | startswith("ns/rec-")) | "\(.pod) \(.node)"' | sort | paste -sd,)"
vm_check "... saying so" vm_expect_contains "$(cat "$IPAM_TMP/rec.out")" "released"
ip netns del rnk8s-live

vm_done
