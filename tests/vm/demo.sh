#!/bin/bash
# The demo (README's first command), run inside the VM: the IIJ E810 walkthrough's manual
# flow with rdmans doing every step, each printed with its result, ending in
# a one-screen summary. Fails loudly at the first step that fails.
set -euo pipefail
. "$RDMANS_VM_LIB"
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../netns/hook-lib.sh"
B=$RDMANS_BUILD_DIR
R=$B/src/cli/rdmans

step=0
say() { step=$((step + 1)); printf '\n\033[1m== %d. %s\033[0m\n' "$step" "$*"; }
run() { printf '$ %s\n' "$*" >&2; "$@"; }
trap 'echo; echo "DEMO FAILED at step $step: $BASH_COMMAND" >&2' ERR

# CNI as a runtime calls it: env + config on stdin, result on stdout
mkdir -p /tmp/cni-bin /var/lib/cni/rdma-netns-ipam
ln -sf "$B/src/cni/rdma-netns" /tmp/cni-bin/rdma-netns
ln -sf "$B/src/ipam/rdma-netns-ipam" /tmp/cni-bin/rdma-netns-ipam
NAD='{"cniVersion":"1.1.0","name":"nic0","type":"rdma-netns","device":"DEV","ipam":{"type":"rdma-netns-ipam","range":"10.100.100.0/24"}}'
cni() { # cni COMMAND POD NETDEV
	printf '$ CNI_COMMAND=%s CNI_NETNS=/var/run/netns/%s CNI_IFNAME=net1 rdma-netns <<< %s\n' "$1" "$2" "${NAD/DEV/$3}" >&2
	CNI_COMMAND=$1 CNI_CONTAINERID=cid-$2 CNI_NETNS=/var/run/netns/$2 CNI_IFNAME=net1 \
		CNI_PATH=/tmp/cni-bin:/usr/lib/cni CNI_ARGS="K8S_POD_NAMESPACE=default;K8S_POD_NAME=$2" \
		/tmp/cni-bin/rdma-netns <<<"${NAD/DEV/$3}"
}

say "The node: Debian's kernel $(uname -r) with the real ib_core; simhca stands in for two Intel E810 (irdma) NICs"
vm_load_rdma
vm_load_simhca
vm_veth eth1 eth1-peer
vm_veth eth2 eth2-peer
d1=$(vm_simhca_new "irdma%d" eth1)
d2=$(vm_simhca_new "irdma%d" eth2)
run "$R" dev

say "ib_core must be in exclusive netns mode (the IIJ E810 walkthrough: modprobe.d + reboot, because of EBUSY)"
run "$R" system
run "$R" system set netns exclusive --persist
run "$R" system

say "Two pods: network namespaces, as the container runtime creates them"
ip netns add pod-a
ip netns add pod-b
run ip netns list

say "rdma-netns (CNI ADD) moves each NIC and its RDMA device into a pod; rdma-netns-ipam gives the address"
cni ADD pod-a eth1 | jq -c '{interfaces: [.interfaces[] | .name], ips: [.ips[].address]}'
cni ADD pod-b eth2 | jq -c '{interfaces: [.interfaces[] | .name], ips: [.ips[].address]}'
run "$R" ipam ls --data-dir /var/lib/cni/rdma-netns-ipam

say "The host no longer sees them; rdmans finds each in its pod"
run rdma dev
run "$R" dev --all-netns

say "The GID table inside pod-a: the pod's address as a RoCE v2 GID (what NCCL_IB_GID_INDEX must name)"
ip_a=$(ip -n pod-a -j addr show dev net1 | jq -r '.[0].addr_info[] | select(.family == "inet") | .local')
vm_poll 60 sh -c "'$R' -j gids $d1 --netns pod-a | jq -e '.[] | select(.ipv4 == \"$ip_a\")'"
run "$R" gids "$d1" --netns pod-a

say "The NCCL settings, resolved from what is really in each pod"
run "$R" env --netns pod-a --explain
run "$R" env --netns pod-b --format env

say "A container in pod-a (runc + rdmans-hook): /etc/nccl.conf is there for every process"
mountpoint -q /sys/fs/cgroup || mount -t cgroup2 none /sys/fs/cgroup
tmp=$(mktemp -d)
hl_bundle "$tmp/c1" "$B/src/hook/rdmans-hook" /var/run/netns/pod-a \
	'["sh","-c","grep ^NCCL /etc/nccl.conf"]' '.annotations = {"rdmans.io/nccl-profile": "roce"}'
echo '$ runc run c1   # createRuntime hook: rdmans-hook'
hl_run "$tmp/runc" "$tmp/c1" c1 || { echo "$HL_ERR" >&2; false; }
echo "$HL_OUT"
gid_a=$(printf '%s\n' "$HL_OUT" | sed -n 's/^NCCL_IB_GID_INDEX=//p')

say "rdmans doctor inside pod-a"
"$R" doctor --netns pod-a || [ $? = 20 ] # WARN: simhca has no libibverbs provider, so the active MTU is unread

say "One Prometheus scrape (rdmans exporter): counters and port state, labelled by pod"
"$R" exporter --once | grep -E "^rdmans_port_state\{" | sed 's/^/  /'

say "Teardown: CNI DEL for pod-b; pod-a deleted without DEL (a crashed node), then GC"
cni DEL pod-b eth2
ip netns del pod-a
vm_poll 60 rdma dev show "$d1"
echo "pod-a's netns is gone: $d1 returned to the host by itself"
printf '$ CNI_COMMAND=GC rdma-netns (no valid attachments)\n'
CNI_COMMAND=GC CNI_PATH=/tmp/cni-bin:/usr/lib/cni /tmp/cni-bin/rdma-netns \
	<<<"$(jq -c '. + {"cni.dev/valid-attachments": []}' <<<"${NAD/DEV/eth1}")"
run "$R" dev
run "$R" ipam ls --data-dir /var/lib/cni/rdma-netns-ipam
left=$("$R" -j ipam ls --data-dir /var/lib/cni/rdma-netns-ipam | jq length)
[ "$left" = 0 ]

cat <<SUMMARY

== Summary ===================================================================
 node        $(uname -r), real ib_core; simhca devices $d1, $d2
 netns mode  exclusive now and at boot (/etc/modprobe.d/rdmans-ib_core.conf)
 pod-a       $d1 + net1 $ip_a via rdma-netns/rdma-netns-ipam; RoCE v2 GID $gid_a
             nccl.conf written by rdmans-hook in a runc container; doctor: no FAIL
 pod-b       $d2 + net1, released by CNI DEL
 crash path  pod-a deleted without DEL: device came home, GC freed its address
 leftovers   $left addresses, $(rdma dev | grep -c .) devices back on the host
==============================================================================
SUMMARY
