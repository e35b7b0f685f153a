#!/bin/bash
# Guest script, current world (kernel 7.2: soft-RoCE carries traffic between
# namespaces): RDMA traffic between two pods that containerd 2.x makes through
# CRI, as kubelet would. Each pod's network is the shipped conflist with
# "softRoce": true on one end of a veth (rdma-netns makes an rxe device in
# the pod; shared netns mode) and rdma-netns-ipam's shared range. Its
# containers run an image holding rdma-core's verbs provider, rping,
# ib_write_bw and rdmans, with the CDI device rdmans.io/rdma=all (device nodes
# and the hook that writes /etc/nccl.conf). Between the pods, over IPv4 and
# over IPv6-only pods:
#  - `rdmans ping` from B to a server in A, on NCCL's own device and GID index
#  - rping, and ib_write_bw with -x the GID index /etc/nccl.conf names (IPv4:
#    perftest 25.01 resolves its peer as IPv4 only)
# An image without the verbs provider: `rdmans doctor` in the pod says so.
set -u
. "$(dirname "$0")/runtime-lib.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
PAUSE=localhost/rdmans-pause:1
RIMG=localhost/rdmans-rdma:1
NOPROV=localhost/rdmans-rdma-noprovider:1

vm_load_rdma # shared netns mode: what soft-RoCE pods need
modprobe rdma_ucm
rt_syslog
rt_t "install" rt_install
rt_podman
rt_pause_image "$PAUSE"

rt_t "rdma image" vm_check "an image with rdmans, rping, ib_write_bw and the verbs providers" rt_rdma_image "$RIMG"
vm_check "the same image without the verbs providers" rt_rdma_image "$NOPROV" noprovider

# The node: one veth, an end for each pod; a runtime handler (RuntimeClass) per
# pod picks its conf dir, since the two conflists name different netdevs.
vm_veth ha hb || vm_fail "veth ha/hb"
vm_veth hc hd || vm_fail "veth hc/hd"
netconf() { # netconf NETDEV RANGE OUT
	jq --arg d "$1" --arg r "$2" '.plugins[0] |= (del(.deviceID) | .device = $d | .softRoce = true
		| .ipam = {type: "rdma-netns-ipam", range: $r})' "$top/cni-conf/10-rdma-netns.conflist" >"$3"
}
mkdir -p /etc/containerd /etc/cni/net.d /etc/cdi
{
	echo 'version = 3'
	echo "[plugins.'io.containerd.cri.v1.images'.pinned_images]"
	echo "  sandbox = '$PAUSE'"
	for p in a:ha:10.77.0.0/24 b:hb:10.77.0.0/24 c:hc:fd77::/64 d:hd:fd77::/64; do
		IFS=: read -r h dev range <<<"$p" # (range takes the rest, colons and all)
		mkdir -p "/etc/cni/p$h"
		netconf "$dev" "$range" "/etc/cni/p$h/10-rdma-netns.conflist"
		echo "[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.p$h]"
		echo "  runtime_type = 'io.containerd.runc.v2'"
		echo "  cni_conf_dir = '/etc/cni/p$h'"
		echo "  cni_max_conf_num = 1"
	done
} >/etc/containerd/config.toml
cp /etc/cni/pa/10-rdma-netns.conflist /etc/cni/net.d/
rt_t "containerd start" cri_containerd /etc/containerd/config.toml
cri_images "$PAUSE" "$RIMG" "$NOPROV"
cri_start
vm_diag "$(rt_world); $(containerd --version)"
before=$(rdma dev show 2>/dev/null | awk '{ print $2 }' | sort | tr '\n' ' ')

# pod_up NAME HANDLER: RunPodSandbox; sets POD (id), NS (netns path), ADDR
pod_up() {
	rt_here "RunPodSandbox $1 (softRoce, handler $2)" cri runp "$1" "" "json:{}" "$2" || return 1
	POD=$(jq -r . <<<"$CRI_OUT")
	cri pstatus "$POD" || return 1
	NS=$(jq -r .netns <<<"$CRI_OUT")
	ADDR=$(jq -r .ip <<<"$CRI_OUT")
	vm_diag "$1: $ADDR, $(ip netns exec "${NS##*/}" rdma link show 2>&1 | tr '\n' ' ')"
}
# ctr_up POD NAME IMAGE CMD-JSON: CreateContainer (CDI rdmans.io/rdma=all) + StartContainer; sets CID
ctr_up() {
	rt_here "  CreateContainer $2 (CDI rdmans.io/rdma=all)" cri create "$1" "$2" "$3" "json:$4" \
		'json:["rdmans.io/rdma=all"]' || return 1
	CID=$(jq -r . <<<"$CRI_OUT")
	rt_here "  StartContainer $2" cri start "$CID"
}
# in CID CMD...: ExecSync; OUT (stdout+stderr), RC
in_ctr() {
	local cid=$1
	shift
	cri exec "$cid" "json:$(printf '%s\0' "$@" | jq -Rsc 'split("\u0000")[:-1]')" json:120 ||
		{ OUT=$CRI_OUT RC=255; return 1; }
	OUT=$(jq -r '.stdout + .stderr' <<<"$CRI_OUT")
	RC=$(jq -r .exit <<<"$CRI_OUT")
	[ "$RC" = 0 ]
}
# ctr_out CID CMD...: in_ctr, its output printed; 124 when the exec ran out of time
ctr_out() {
	local rc=0
	in_ctr "$@" || rc=$?
	printf '%s\n' "$OUT"
	[ "$rc" = 0 ] && return 0
	[ "$RC" = 255 ] && grep -qiE 'deadline exceeded|timeout' <<<"$OUT" && return 124
	return "$RC"
}
ncclval() { sed -n "s/^$2=//p" <<<"$1"; }

# pair FAMILY HANDLER_A HANDLER_B: pods A and B, the servers in A, the clients in B;
# both pods are removed again, whatever happened
pair() {
	PODS=()
	pair_run "$@"
	local p
	for p in "${PODS[@]}"; do cri stopp "$p" && cri rmp "$p" || vm_not_ok "stop/remove $p: $CRI_OUT"; done
}
pair_run() {
	local fam=$1 ha=$2 hb=$3 podA podB addrA nsA srv cb conf hca gid hcaA gidA
	vm_diag "--- $fam: pods $ha and $hb ---"
	pod_up "$fam-a" "$ha" || return
	podA=$POD addrA=$ADDR nsA=${NS##*/}
	PODS+=("$POD")
	pod_up "$fam-b" "$hb" || return
	podB=$POD
	PODS+=("$POD")
	# the CDI spec names the device nodes there are: the pods' rxe devices are new
	vm_check "  rdmans cdi generate (the pods' rxe devices are in it)" "$R" cdi generate --output /etc/cdi/rdmans.json
	ctr_up "$podB" client "$RIMG" '["sleep", "1000000"]' || return
	cb=$CID
	in_ctr "$cb" cat /etc/nccl.conf
	conf=$OUT
	hca=$(ncclval "$conf" NCCL_IB_HCA)
	gid=$(ncclval "$conf" NCCL_IB_GID_INDEX)
	vm_check "$fam: the hook wrote B's nccl.conf: its own rxe device ($hca), GID index $gid" \
		sh -c 'case "$1" in "=rxe"*) [ -n "$2" ] ;; *) exit 1 ;; esac' _ "$hca" "$gid"
	[ "$fam" = ipv6 ] && vm_check "$fam: nccl.conf says AF_INET6" vm_expect_eq AF_INET6 "$(ncclval "$conf" NCCL_IB_ADDR_FAMILY)"

	# rdmans ping: the server is container A's process
	ctr_up "$podA" ping-server "$RIMG" '["rdmans", "ping", "--server", "--timeout", "30"]' || return
	srv=$CID
	in_ctr "$srv" cat /etc/nccl.conf
	hcaA=$(ncclval "$OUT" NCCL_IB_HCA)
	gidA=$(ncclval "$OUT" NCCL_IB_GID_INDEX)
	vm_check "$fam: A's nccl.conf names A's own rxe device ($hcaA), not B's" \
		sh -c 'case "$1" in "=rxe"*) [ "$1" != "$2" ] ;; *) exit 1 ;; esac' _ "$hcaA" "$hca"
	vm_poll 120 vm_cm_listening rdmans
	rt_here "$fam: rdmans ping from pod B to pod A ($addrA), on nccl.conf's device and GID" \
		in_ctr "$cb" rdmans ping "$addrA" --count 50 --bw-count 50 --timeout 30
	vm_diag "$OUT"
	vm_check "  it used nccl.conf's device ${hca#=} and GID index $gid" vm_expect_contains "$OUT" "${hca#=} port 1, GID index $gid"
	cri stopc "$srv" >/dev/null
	vm_poll 120 sh -c '! rdma res show cm_id | grep -q "state LISTEN .* comm rdmans "'

	ctr_up "$podA" rping-server "$RIMG" "[\"rping\", \"-s\", \"-P\", \"-a\", \"$addrA\", \"-C\", \"5\"]" || return
	vm_poll 120 vm_cm_listening rping
	vm_check_client "$fam: rping from pod B to pod A (5 pings)" ctr_out "$cb" rping -c -a "$addrA" -C 5 -v
	vm_diag "$(head -n 2 <<<"$OUT")"

	# perftest 25.01 resolves its peer as IPv4 only, with or without -R ("Address
	# family for hostname not supported for ai_family: 2"): ib_write_bw runs
	# between the IPv4 pods; the IPv6 pods have rdmans ping and rping.
	[ "$fam" = ipv4 ] || return 0
	# each side on its own pod's device and GID index (in shared mode A's container could
	# open B's rxe device too, and the test would then run inside B)
	# (-F: a report even when an emulated vCPU spoils perftest's clock calibration; tests/vm/ping.sh)
	ctr_up "$podA" bw-server "$RIMG" "$(printf '%s\0' ib_write_bw -F -x "$gidA" -d "${hcaA#=}" -n 200 |
		jq -Rsc 'split("\u0000")[:-1]')" || return
	vm_poll 120 vm_tcp_listening "$nsA" 18515
	rt_here "$fam: ib_write_bw -x $gid (nccl.conf's GID index) from pod B to pod A" \
		in_ctr "$cb" ib_write_bw -F -x "$gid" -d "${hca#=}" -n 200 "$addrA"
	vm_diag "$(tail -n 3 <<<"$OUT")"
}
pair ipv4 pa pb
pair ipv6 pc pd
vm_check "the pods' rxe devices are gone with them" vm_expect_eq "$before" \
	"$(rdma dev show 2>/dev/null | awk '{ print $2 }' | sort | tr '\n' ' ')"

# --- an image without the verbs provider: doctor in the pod says so ----------------------------
CID=
pod_up noprov pa &&
	vm_check "  rdmans cdi generate (the pod's rxe device is in it)" "$R" cdi generate --output /etc/cdi/rdmans.json &&
	ctr_up "$POD" c "$NOPROV" '["sleep", "1000000"]'
in_ctr "$CID" rdmans doctor
vm_diag "$OUT"
vm_check "doctor in a pod whose image lacks the verbs provider names it" vm_expect_contains "$OUT" "libibverbs does not list RDMA device"
cri stopp "$POD" && cri rmp "$POD"
vm_done
