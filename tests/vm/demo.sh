#!/bin/bash
# The demo (README's first command), run inside the VM: doc 003's manual
# steps, each done by rdmans, each printed with its result. Fails loudly.
set -euo pipefail
. "$RDMANS_VM_LIB"
R=$RDMANS_BUILD_DIR/src/cli/rdmans

step=0
say() { step=$((step + 1)); printf '\n\033[1m== %d. %s\033[0m\n' "$step" "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }
trap 'echo; echo "DEMO FAILED at step $step: $BASH_COMMAND" >&2' ERR

say "Load the RDMA stack of Debian's kernel ($(uname -r)): ib_core, rdma_rxe, and simhca, a simulated RoCE HCA"
vm_load_rdma
vm_load_simhca
run "$R" system

say "ib_core must be in exclusive netns mode before pods exist (doc 003 needed a reboot)"
run "$R" system set netns exclusive --persist
run cat /etc/modprobe.d/rdmans-ib_core.conf

say "A node with two RoCE NICs (veth pairs here) and a soft-RoCE device"
vm_veth eth1 eth1-peer
vm_veth eth2 eth2-peer
vm_veth eth3 eth3-peer
ip addr add 192.168.100.1/24 dev eth3
irdma0=$(vm_simhca_new "irdma%d" eth1)
irdma1=$(vm_simhca_new "irdma%d" eth2)
run "$R" link add rxe0 type rxe netdev eth3
run "$R" dev

say "The GID table (show_gids): the RoCE v2 entry of an IPv4 address is NCCL_IB_GID_INDEX"
for _ in $(seq 50); do "$R" -j gids rxe0 | jq -e '.[] | select(.ipv4)' >/dev/null && break; sleep 0.1; done
run "$R" gids

say "Two pods: network namespaces held by a process each, as a container runtime makes them"
ip netns add pod-a
ip netns add pod-b
ip netns exec pod-b sleep 600 &
pod_b_pid=$!
sleep 0.2
echo "pod-a: /var/run/netns/pod-a   pod-b: PID $pod_b_pid"

say "Move $irdma0 and its netdev into pod-a (as net1), $irdma1 into pod-b by PID"
run "$R" move "$irdma0" pod-a --with-netdev --netdev-name net1
run "$R" move "$irdma1" "$pod_b_pid" --with-netdev --netdev-name net1
ip -n pod-a addr add 10.100.100.1/24 dev net1 && ip -n pod-a link set net1 up
ip -n pod-b addr add 10.100.100.2/24 dev net1 && ip -n pod-b link set net1 up

say "The host no longer sees them; rdmans finds them in their namespaces"
run rdma dev
run "$R" dev --all-netns

say "The GID table inside pod-a: the pod's address as a RoCE v2 GID"
for _ in $(seq 50); do "$R" -j gids "$irdma0" --netns pod-a | jq -e '.[] | select(.ipv4 == "10.100.100.1")' >/dev/null && break; sleep 0.1; done
run "$R" gids "$irdma0" --netns pod-a
gid_a=$("$R" -j gids "$irdma0" --netns pod-a | jq -r '.[] | select(.ipv4 == "10.100.100.1" and .ver == "v2") | .index')
[ -n "$gid_a" ]

say "Bad input changes nothing: a soft-RoCE device cannot move, and says so"
if "$R" move rxe0 pod-a; then echo "rxe0 moved?" >&2; false; else echo "(exit $?, as expected)"; fi

say "Pod teardown: devices come home"
run "$R" move "$irdma1" host --with-netdev --netdev-name eth2
ip netns del pod-a
for _ in $(seq 100); do rdma dev show "$irdma0" >/dev/null 2>&1 && break; sleep 0.1; done
echo "pod-a deleted: $irdma0 returned to the host by itself"
run "$R" dev
kill "$pod_b_pid"

cat <<SUMMARY

== Summary ================================================================
 netns mode          exclusive now and at boot (/etc/modprobe.d/rdmans-ib_core.conf)
 pod-a               $irdma0 + net1 10.100.100.1, RoCE v2 GID index $gid_a
 pod-b               $irdma1 + net1 10.100.100.2 (moved by PID)
 soft-RoCE rxe0      refused to move, nothing changed
 teardown            both devices back on the host, names kept
 kernel              $(uname -r), real ib_core; simhca stands in for irdma
===========================================================================
SUMMARY
