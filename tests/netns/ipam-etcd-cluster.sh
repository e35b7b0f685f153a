#!/bin/bash
# A 3-member etcd cluster keeps serving rdma-netns-ipam with one member
# (the leader) killed -9 in the middle of a burst of ADDs from 60 simulated
# nodes, and no address is handed out twice.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/ipam-lib.sh"

etcd_cluster 3
EP=$(etcd_endpoints_json)
base_conf() { # base_conf NODE
	printf '%s' '{"cniVersion":"1.1.0","name":"rdma-cluster","ipam":{"type":"rdma-netns-ipam",
 "range":"10.61.0.0/22","store":"etcd","node_name":"'"$1"'","etcd":{"endpoints":'"$EP"',"key_prefix":"/c","timeout_ms":3000}}}'
}

NODES=60 PER_NODE=5
# client NODE: PER_NODE ADDs in a row, each retried as kubelet would (up to 10 times)
client() {
	local n=$1 k try CONF
	CONF=$(base_conf "node-$n")
	for k in $(seq 1 "$PER_NODE"); do
		for try in $(seq 1 10); do
			if ipam_run ADD "n$n-c$k" net1 "ns/pod-$n-$k"; then
				printf '%s %s\n' "$try" "$(ip_of)" >"$IPAM_TMP/res.$n.$k"
				break
			fi
			printf '%s\n' "$IPAM_OUT" >>"$IPAM_TMP/retries.$n"
			sleep 0.2
		done
	done
}

# leader_index: which member leads (64-bit ids compared as text, not through jq's floats)
leader_index() {
	local i fields
	for i in 0 1 2; do
		fields=$(etcdctl_ "$i" endpoint status -w fields 2>/dev/null) || continue
		[ "$(awk -F' : ' '/"MemberID"/ {print $2}' <<<"$fields")" = \
			"$(awk -F' : ' '/"Leader"/ {print $2}' <<<"$fields")" ] && { echo "$i"; return; }
	done
	echo none
}

jobs=()
for n in $(seq 1 "$NODES"); do
	client "$n" &
	jobs+=($!)
done
# mid-run: wait until about a third of the ADDs are in, then kill the leader
for _ in $(seq 1 300); do
	[ "$(find "$IPAM_TMP" -name 'res.*' | wc -l)" -ge $((NODES * PER_NODE / 3)) ] && break
	sleep 0.05
done
victim=$(leader_index)
[ "$victim" != none ] || vm_fail "no etcd member says it leads"
done_before=$(find "$IPAM_TMP" -name 'res.*' | wc -l)
kill -9 "${ETCD_PIDS[victim]}"
wait "${ETCD_PIDS[victim]}" 2>/dev/null
vm_diag "killed member m$victim (the leader) after $done_before of $((NODES * PER_NODE)) ADDs"
wait "${jobs[@]}"

alive=0
[ "$victim" = 0 ] && alive=1
total=$((NODES * PER_NODE))
vm_check "the leader was killed mid-run" bash -c "[ $done_before -lt $total ]"
vm_check "every ADD succeeded (with kubelet-style retries)" vm_expect_eq "$total" \
	"$(find "$IPAM_TMP" -name 'res.*' | wc -l)" "successful ADDs"
vm_diag "ADDs that needed a retry: $(cat "$IPAM_TMP"/res.* | awk '$1 > 1' | wc -l); failures seen: $(cat "$IPAM_TMP"/retries.* 2>/dev/null | jq -r .code 2>/dev/null | sort | uniq -c | tr '\n' ' ')"
vm_check "no address was handed out twice" vm_expect_eq "$total" \
	"$(cat "$IPAM_TMP"/res.* | awk '{print $2}' | sort -u | grep -c .)" "distinct addresses"
vm_check "etcd holds exactly one address key per ADD" vm_expect_eq "$total" \
	"$(etcdctl_ "$alive" get --prefix /c/_default/addr/ --keys-only | grep -c .)" "address keys"
vm_check "... and one attachment per pod" vm_expect_eq "$total" \
	"$(etcdctl_ "$alive" get --prefix /c/_default/attachments/ --keys-only | grep -c .)" "attachment keys"
eps=$(IFS=,; echo "${ETCD_CLIENT[*]}")
vm_check "no orphaned or empty records (rdmans ipam gc --dry-run)" vm_expect_eq \
	'{"dry_run":true,"temp_files":0,"orphans":0,"empty_attachments":0,"rebuilt_attachments":0,"damaged_records":0}' \
	"$("$RDMANS" -j ipam gc --dry-run --etcd "$eps" --etcd-prefix /c)"
vm_check "the stored addresses are the ones the ADDs returned" vm_expect_eq \
	"$(cat "$IPAM_TMP"/res.* | awk '{print $2}' | sort)" \
	"$("$RDMANS" -j ipam ls --etcd "$eps" --etcd-prefix /c | jq -r '.[].address' | sort)" "addresses"

# the two survivors keep serving ADD, CHECK and DEL
CONF=$(base_conf node-x)
vm_check "ADD with one member down" ipam_run ADD after net1 ns/after
vm_check "CHECK with one member down" ipam_run CHECK after net1 ns/after
vm_check "DEL with one member down" ipam_run DEL after net1 ns/after
vm_check "STATUS with one member down" ipam_run STATUS -

vm_done
