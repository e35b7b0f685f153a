#!/bin/bash
# Guest script (current world, kernel 7.2): rdma-netns with "softRoce": true.
# Two pods get the two ends of one veth (main mode, host-local); each gets an
# rxe device made inside it on its own netdev; rdmans ping and rping run
# between them; DEL deletes each rxe device (and a DEL after the netns died
# finds it gone with it); exclusive mode is refused with the reason, and
# nothing is left behind. Output is TAP.
set -u
. "$RDMANS_VM_LIB"
. "$(dirname "$RDMANS_VM_LIB")/../netns/cni-lib.sh"
cni_vm_setup
CNI_ARGS_DEFAULT="IgnoreUnknown=1"
[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd

conf() {
	jq -nc --arg hl "$HL" --arg dev "$1" '{cniVersion: "1.0.0", name: "softnet",
		type: "rdma-netns", device: $dev, softRoce: true,
		ipam: {type: "host-local", subnet: "10.58.0.0/24", dataDir: $hl}}'
}
rdma_devs() { rdma dev show 2>/dev/null | awk '{print $2}' | tr -d : | sort | tr '\n' ' '; }

vm_load_rdma
vm_veth ha hb || vm_fail "veth"
ip netns add spod-a && ip netns add spod-b || vm_fail "netns"
before=$(rdma_devs)

CNI_IF=net1
CNI_CID=aaaaaaaaaaaa1111 CNI_NS=/var/run/netns/spod-a \
	cni_expect_ok "ADD pod a (softRoce, netdev ha)" ADD "$(conf ha)"
cni_diag_run
CNI_CID=bbbbbbbbbbbb2222 CNI_NS=/var/run/netns/spod-b \
	cni_expect_ok "ADD pod b (softRoce, netdev hb)" ADD "$(conf hb)"
vm_diag "kallsyms: $(grep -c ' rxe_ns_pernet_sk4\| rxe_namespace_init' /proc/kallsyms) rxe_ns symbols"
vm_check "rxeaaaaaaaaaaaa_net1 exists, on net1 in pod a" \
	sh -c 'ip netns exec spod-a rdma link show | grep "rxeaaaaaaaaaaaa_net1/1.*netdev net1"'
vm_check "rxebbbbbbbbbbbb_net1 exists, on net1 in pod b" \
	sh -c 'ip netns exec spod-b rdma link show | grep "rxebbbbbbbbbbbb_net1/1.*netdev net1"'
addr_a=$(ip -n spod-a -4 -o addr show net1 | awk '{print $4}' | cut -d/ -f1)
vm_diag "pod a: $addr_a"
vm_check "rdmans env in pod b names its own rxe device" ip netns exec spod-b "$R" env
vm_expect_contains "$VM_OUT" "NCCL_IB_HCA==rxebbbbbbbbbbbb_net1" "env" || vm_not_ok "env: pod b's rxe"
vm_diag "env in pod b: $VM_OUT"
vm_diag "$("$R" gids --netns spod-b 2>&1)"

"$R" ping --server --netns spod-a --once >/tmp/cni/ping-server.log 2>&1 &
SRV=$!
vm_poll 120 vm_cm_listening rdmans
vm_check "rdmans ping between the soft-RoCE pods" ip netns exec spod-b "$R" ping "$addr_a" --count 50 --bw-count 50
vm_diag "$VM_OUT"
wait "$SRV" 2>/dev/null
ip netns exec spod-a rping -s -P -a "$addr_a" -C 3 >/dev/null 2>&1 &
RS=$!
vm_poll 120 vm_cm_listening rping
vm_check_client "rping between the soft-RoCE pods" timeout 60 ip netns exec spod-b rping -c -a "$addr_a" -C 3 -v
kill "$RS" 2>/dev/null
wait "$RS" 2>/dev/null

CNI_CID=aaaaaaaaaaaa1111 CNI_NS=/var/run/netns/spod-a \
	cni_expect_ok "DEL pod a" DEL "$(conf ha)"
vm_check "DEL deleted pod a's rxe device" sh -c '! rdma dev show rxeaaaaaaaaaaaa_net1'
vm_check "ha is back on the host" ip link show ha
# pod b's netns dies first: its rxe goes with it; DEL still succeeds
ip netns del spod-b
vm_poll 20 sh -c '! rdma dev show rxebbbbbbbbbbbb_net1'
CNI_CID=bbbbbbbbbbbb2222 CNI_NS=/var/run/netns/spod-b \
	cni_expect_ok "DEL pod b after its netns died" DEL "$(conf hb)"
vm_check "no rxe device left" vm_expect_eq "$before" "$(rdma_devs)" "RDMA devices"

# exclusive mode: refused, with the reason, nothing left (a new veth: hb's end died with spod-b)
ip netns del spod-a
vm_veth hc hd || vm_fail "veth hc"
vm_check "exclusive mode (no other netns now)" rdma system set netns exclusive
ip netns add spod-c
CNI_CID=cccccccccccc3333 CNI_NS=/var/run/netns/spod-c \
	cni_expect_err "softRoce in exclusive mode: refused" 110 "needs shared RDMA netns mode" ADD "$(conf hc)"
vm_diag "exclusive: $(jq -r .msg <<<"$OUT")"
vm_check "hc stayed on the host" ip link show hc
CNI_CID=cccccccccccc3333 CNI_NS=/var/run/netns/spod-c \
	cni_expect_err "STATUS of a softRoce network in exclusive mode: not available" 50 "softRoce needs shared" \
	STATUS "$(conf hc | jq -c '.cniVersion = "1.1.0"')"
vm_check "no rxe device made" vm_expect_eq "$before" "$(rdma_devs)" "RDMA devices"
vm_done
