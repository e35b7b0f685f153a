#!/bin/bash
# Acceptance: the IIJ E810 walkthrough's whole flow with every rdmans piece, as a
# node meets it, asserted step by step, in two boots of one VM "node":
#   boot 1: exclusive mode; two pods get a simulated HCA + netdev from
#           rdma-netns with rdma-netns-ipam through the CNI protocol; the GID
#           table, rdmans env, a runc container whose nccl.conf the hook
#           wrote, doctor and one exporter scrape inside; pod-b deleted
#           without DEL: GC and DEL clean up. pod-a is left attached.
#   boot 2: the node "rebooted" with the same state directory: CHECK tells
#           the truth (the pod is gone) and DEL still cleans up.
# On the host it runs both boots and prints one TAP stream.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)

if [ "${RDMANS_IN_VM:-}" != 1 ]; then
	state=$(mktemp -d /var/tmp/rdmans-accept.XXXXXX)
	trap 'rm -rf "$state"' EXIT
	rc=0
	for phase in 1 2; do
		RDMANS_VM_STATE_DIR=$state RDMANS_ACCEPT_PHASE=$phase \
			"$HERE/vm-run.sh" "$HERE/acceptance.sh" >"$state.out$phase" 2>&1 || rc=1
	done
	# one TAP stream: number the checks of both boots in order, one plan
	awk -v rc=$rc '
		/^(not )?ok [0-9]+/ { n++; sub(/ok [0-9]+/, "ok " n); print; next }
		/^1\.\.[0-9]+$/ { next }
		{ print }
		END { print "1.." n; if (rc) print "# a boot failed" }' "$state.out1" "$state.out2"
	rm -f "$state.out1" "$state.out2"
	exit $rc
fi

. "$RDMANS_VM_LIB"
. "$HERE/../netns/cni-lib.sh"
. "$HERE/../netns/hook-lib.sh"
B=$RDMANS_BUILD_DIR
R=$B/src/cli/rdmans

# The node's disk: CNI state and IPAM records survive the "reboot".
disk=/var/lib/rdmans-node
mkdir -p "$disk"
mount -t 9p -o trans=virtio,version=9p2000.L,cache=none rdmansstate "$disk" || vm_fail "no state share"
mkdir -p "$disk/cni" "$disk/ipam"
export RDMA_NETNS_STATE_DIR=$disk/cni
CNI_BIN=/tmp/cni-bin
mkdir -p "$CNI_BIN"
ln -sf "$B/src/cni/rdma-netns" "$CNI_BIN/rdma-netns"
ln -sf "$B/src/ipam/rdma-netns-ipam" "$CNI_BIN/rdma-netns-ipam"
NET='{"cniVersion":"1.1.0","name":"rdma-net","type":"rdma-netns","device":"DEV","ipam":{"type":"rdma-netns-ipam","range":"10.100.100.0/24","dataDir":"'$disk/ipam'"}}'
conf() { printf '%s' "${NET/DEV/$1}"; }
pod_args() { echo "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=$1"; }
ipam_records() { "$R" -j ipam ls --data-dir "$disk/ipam" | jq -c '[.[] | .address] | sort'; }

vm_load_rdma exclusive
vm_load_simhca
vm_veth eth1 eth1-peer
vm_veth eth2 eth2-peer
d1=$(vm_simhca_new "irdma%d" eth1) || vm_fail "simhca on eth1"
d2=$(vm_simhca_new "irdma%d" eth2) || vm_fail "simhca on eth2"

if [ "$RDMANS_ACCEPT_PHASE" = 1 ]; then
	vm_check "boot 1: exclusive netns mode" vm_expect_eq exclusive "$("$R" -j system | jq -r .netns_mode)"
	vm_run_code 0 "exclusive mode persisted for the next boot" "$R" system set netns exclusive --persist

	# --- two pods through the CNI protocol ---------------------------------------
	ip netns add pod-a
	ip netns add pod-b
	CNI_CID=cid-pod-a CNI_NS=/var/run/netns/pod-a cni_expect_ok "CNI ADD pod-a (eth1 + $d1)" ADD "$(conf eth1)" "CNI_ARGS=$(pod_args pod-a)"
	ip_a=$(jq -r '.ips[0].address' <<<"$OUT" 2>/dev/null)
	CNI_CID=cid-pod-b CNI_NS=/var/run/netns/pod-b cni_expect_ok "CNI ADD pod-b (eth2 + $d2)" ADD "$(conf eth2)" "CNI_ARGS=$(pod_args pod-b)"
	ip_b=$(jq -r '.ips[0].address' <<<"$OUT" 2>/dev/null)
	vm_check "IPAM gave two addresses of 10.100.100.0/24 ($ip_a, $ip_b)" sh -c "case '$ip_a $ip_b' in 10.100.100.*/24\ 10.100.100.*/24) [ '$ip_a' != '$ip_b' ];; *) false;; esac"
	vm_check "pod-a: net1 carries $ip_a" vm_expect_contains "$(ip -n pod-a -o addr show dev net1)" "$ip_a"

	vm_run_code 0 "rdmans dev --all-netns" "$R" -j dev --all-netns
	vm_check "each HCA is in its pod" vm_expect_eq "$d1=pod-a,$d2=pod-b" \
		"$(jq -r '.[] | "\(.ifname)=\(.netns.name)"' <<<"$OUT" | sort | paste -sd,)"
	gid_a=$("$R" -j gids "$d1" --netns pod-a | jq -r ".[] | select(.ipv4 == \"${ip_a%/*}\" and .ver == \"v2\") | .index")
	vm_check "pod-a's GID table holds ${ip_a%/*} as RoCE v2 (index $gid_a)" test -n "$gid_a"

	vm_run_code 0 "rdmans env --netns pod-a" "$R" env --netns pod-a --format env
	vm_check "env: NCCL_IB_HCA==$d1 (exact name)" vm_expect_contains "$OUT" "NCCL_IB_HCA==$d1"
	vm_check "env: NCCL_IB_GID_INDEX=$gid_a" vm_expect_contains "$OUT" "NCCL_IB_GID_INDEX=$gid_a"
	vm_check "env: NCCL_SOCKET_IFNAME=net1" vm_expect_contains "$OUT" "NCCL_SOCKET_IFNAME=net1"

	# --- a container in pod-a, its nccl.conf written by the hook -------------------
	cg=/sys/fs/cgroup
	mountpoint -q "$cg" || mount -t cgroup2 none "$cg"
	tmp=$(mktemp -d)
	hl_bundle "$tmp/c1" "$B/src/hook/rdmans-hook" /var/run/netns/pod-a \
		'["sh","-c","cat /etc/nccl.conf"]' '.annotations = {"rdmans.io/nccl-profile": "roce"}'
	if hl_run "$tmp/runc" "$tmp/c1" c1; then vm_ok "runc container in pod-a with rdmans-hook"; else
		vm_not_ok "runc container in pod-a with rdmans-hook"; vm_diag "$HL_ERR"; fi
	vm_check "the container reads NCCL_IB_GID_INDEX=$gid_a from /etc/nccl.conf" \
		vm_expect_contains "$HL_OUT" $'\n'"NCCL_IB_GID_INDEX=$gid_a"$'\n'

	# --- doctor and one exporter scrape --------------------------------------------
	# WARN (exit 20) is fair here: simhca has no user-space provider, so the active MTU is unread
	vm_run_code 20 "rdmans doctor --netns pod-a: no check fails" "$R" doctor --netns pod-a
	vm_check "doctor: GID check passes with pod-a's address" vm_expect_contains "$OUT" "RoCE v2: ${ip_a%/*} at GID index $gid_a"
	vm_check "doctor: boot mode passes once persisted" sh -c "printf '%s\n' \"\$1\" | grep -q '^PASS  netns-mode-boot'" _ "$OUT"
	vm_run_code 0 "one exporter scrape" "$R" exporter --once --cni-state-dir "$disk/cni"
	vm_check "exporter: $d1 labelled with pod-a" sh -c "printf '%s\n' \"\$1\" | grep -E '^rdmans_port_state\\{' | grep 'device=\"$d1\"' | grep -q 'pod=\"pod-a\"'" _ "$OUT"

	# --- pod-b deleted without DEL: GC and DEL clean up ----------------------------
	ip netns del pod-b
	vm_check "pod-b's netns gone: $d2 returns to the host" vm_poll 60 rdma dev show "$d2"
	CNI_CID=cid-pod-b CNI_NS="" cni_expect_ok "CNI GC keeps only pod-a" GC \
		"$(jq -c '. + {"cni.dev/valid-attachments": [{"containerID": "cid-pod-a", "ifname": "net1"}]}' <<<"$(conf eth1)")"
	vm_check "GC released pod-b's address" vm_expect_eq "[\"${ip_a%/*}\"]" "$(ipam_records | jq -c '[.[] | sub("/.*"; "")]')"
	CNI_CID=cid-pod-b CNI_NS="" cni_expect_ok "CNI DEL pod-b after GC still succeeds" DEL "$(conf eth2)"
	vm_check "no CNI state left for pod-b" vm_expect_eq "" "$(grep -rl cid-pod-b "$disk/cni" 2>/dev/null)"
	vm_check "pod-a is untouched" ip netns exec pod-a rdma dev show "$d1"
	# pod-a stays attached across the "reboot"
else
	vm_check "boot 2: the state of boot 1 is on the node's disk" test -n "$(ls "$disk/cni")"
	vm_check "boot 2: pod-a's address is still recorded" vm_expect_eq 1 "$(ipam_records | jq length)"
	CNI_CID=cid-pod-a CNI_NS=/var/run/netns/pod-a cni_run CHECK "$(conf eth1)" "CNI_ARGS=$(pod_args pod-a)"
	if [ "$RC" != 0 ]; then vm_ok "CHECK after the reboot reports a failure"; else vm_not_ok "CHECK after the reboot reports a failure"; cni_diag_run; fi
	vm_check "CHECK's message says the pod's netns is gone" vm_expect_contains "$(jq -r .msg <<<"$OUT")" "network namespace is gone"
	CNI_CID=cid-pod-a CNI_NS="" cni_expect_ok "CNI DEL pod-a after the reboot" DEL "$(conf eth1)" "CNI_ARGS=$(pod_args pod-a)"
	vm_check "no CNI state left" vm_expect_eq "" "$(find "$disk/cni" -type f ! -path '*/locks/*' ! -name '*.lock' 2>/dev/null)"
	vm_check "no address left" vm_expect_eq "[]" "$(ipam_records)"
	vm_check "$d1 and eth1 on the host" sh -c "rdma dev show $d1 && ip link show eth1"
fi
vm_done
