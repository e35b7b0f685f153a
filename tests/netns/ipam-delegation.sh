#!/bin/bash
# Delegation end to end: rdma-netns (main mode, "requireRdma": false on this
# RDMA-less kernel) with "ipam": {"type": "rdma-netns-ipam", "store": "etcd"}.
# The address etcd hands out lands on the pod's interface; an ADD that fails
# after IPAM gives the address back; DEL releases it; GC is forwarded.
# (tests/netns/cni.sh covers the same with the local store.) Names: "rni".
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/cni-lib.sh"
. "$here/ipam-lib.sh"
cni_netns_setup rni "$IPAM"

cni_netns_clean rni
trap 'cni_netns_clean rni; ipam_cleanup; rm -rf "$tmp"' EXIT

etcd_cluster 1
EP=${ETCD_CLIENT[0]}
keys() { etcdctl_ 0 get --prefix "/d/_default/$1" --keys-only | grep -c .; }

ip link add rni0 type veth peer name rni0p
ip link add rni1 type veth peer name rni1p
ip netns add rni-pod1
ip netns add rni-pod2
CNI_CID=rni-c1
CNI_NS=/var/run/netns/rni-pod1
conf() { # conf DEVICE [JQ-FILTER]
	jq -nc --arg ep "$EP" --arg dev "$1" --arg log "$IPAM_TMP/ipam.log" '{cniVersion: "1.1.0", name: "rni-net", type: "rdma-netns",
		device: $dev, requireRdma: false,
		ipam: {type: "rdma-netns-ipam", range: "10.70.0.0/24", gateway: "10.70.0.1",
		       routes: [{dst: "10.71.0.0/16", gw: "10.70.0.1"}], store: "etcd",
		       etcd: {endpoints: [$ep], key_prefix: "/d"}, node_name: "node-1",
		       log_file: $log, log_level: "verbose"}}' | jq -c "${2:-.}"
}

cni_expect_ok "ADD through rdma-netns with rdma-netns-ipam over etcd" ADD "$(conf rni0)"
addr=$(printf '%s' "$OUT" | jq -r '.ips[0].address')
vm_check "the result carries the IPAM address $addr and the gateway" vm_expect_eq "10.70.0.1" \
	"$(printf '%s' "$OUT" | jq -r '.ips[0].gateway')"
vm_check "the address is on net1 in the pod" sh -c "ip -n rni-pod1 -o addr show dev net1 | grep -q ' $addr '"
vm_check "the IPAM route is in the pod" sh -c "ip -n rni-pod1 route | grep -q '^10.71.0.0/16 via 10.70.0.1 dev net1'"
vm_check "etcd holds one address, for pod default/pod-a" vm_expect_eq "1 default/pod-a" \
	"$(keys addr/) $("$RDMANS" -j ipam ls --etcd "$EP" --etcd-prefix /d | jq -r '.[0].pod')"
cni_expect_ok "CHECK through rdma-netns" CHECK "$(conf rni0)"
cni_expect_ok "STATUS forwarded to rdma-netns-ipam" STATUS "$(conf rni0)" CNI_CONTAINERID= CNI_NETNS= CNI_IFNAME=

# ADD fails after IPAM (the IPAM route's gateway is not on the pod's subnet): the address goes back
bad=$(conf rni1 '.ipam.routes = [{dst: "10.72.0.0/16", gw: "10.99.0.1"}]')
cni_expect_err "an ADD that fails after IPAM fails" 109 "" ADD "$bad" \
	CNI_CONTAINERID=rni-c2 CNI_NETNS=/var/run/netns/rni-pod2 CNI_ARGS="IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=pod-b"
vm_check "... after rdma-netns-ipam had allocated an address for it" \
	grep -q '\] ADD rni-c2/net1: allocated 10.70.0' "$IPAM_TMP/ipam.log"
vm_check "... which rdma-netns gave back (IPAM DEL)" grep -q '\] DEL rni-c2/net1: released 1 address' "$IPAM_TMP/ipam.log"
vm_check "... so etcd holds only pod-a's address" vm_expect_eq "1 1" "$(keys addr/) $(keys attachments/)"
vm_check "... and rni1 is back on the host" ip -o link show rni1

cni_expect_ok "DEL through rdma-netns" DEL "$(conf rni0)"
vm_check "DEL released the address in etcd" vm_expect_eq "0 0" "$(keys addr/) $(keys attachments/)"
cni_expect_ok "a second DEL succeeds" DEL "$(conf rni0)"

# etcd in NOSPACE (its own alarm, raised through its maintenance API): the cause reaches the runtime
mid=$(curl -s -X POST "$EP/v3/maintenance/status" -d '{}' | jq -r .header.member_id)
curl -s -X POST "$EP/v3/maintenance/alarm" -o /dev/null \
	-d "{\"action\":\"ACTIVATE\",\"memberID\":\"$mid\",\"alarm\":\"NOSPACE\"}"
cni_expect_err "ADD with etcd in NOSPACE fails with code 5 (I/O), not 100" 5 "address allocation failed" \
	ADD "$(conf rni0)"
vm_check "... its details name etcd's NOSPACE and what to do" vm_expect_contains \
	"$(jq -r .details <<<"$OUT" 2>/dev/null)" "database space exceeded: its database is over its quota"
vm_check "... and rni0 is back on the host, the pod without net1" \
	sh -c 'ip -o link show rni0 >/dev/null && ! ip -n rni-pod1 link show net1 2>/dev/null'
cni_expect_ok "the DEL after it succeeds, the alarm still raised" DEL "$(conf rni0)"
vm_check "... and etcd holds nothing" vm_expect_eq "0 0" "$(keys addr/) $(keys attachments/)"
etcdctl_ 0 alarm disarm >/dev/null

cni_expect_ok "ADD again for GC" ADD "$(conf rni0)"
cni_expect_ok "GC with an empty valid list, forwarded" GC "$(conf rni0 '.["cni.dev/valid-attachments"] = []')" \
	CNI_CONTAINERID= CNI_NETNS= CNI_IFNAME=
vm_check "GC released the address in etcd" vm_expect_eq "0 0" "$(keys addr/) $(keys attachments/)"

vm_done
