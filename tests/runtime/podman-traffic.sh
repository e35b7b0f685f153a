#!/bin/bash
# Guest script, current world (kernel 7.2: soft-RoCE carries traffic between
# namespaces): RDMA traffic between two pods that podman 5 makes. Podman 5
# (sid) has no CNI backend, so no rdma-netns runs for it: its pods get their
# network from netavark (the default bridge network, and an IPv6-only one),
# and the annotation rdmans.io/soft-roce=eth0 on their containers makes
# rdmans-hook (installed by meson install: createRuntime in hooks.d, the
# precreate JSON in its own directory, both named in containers.conf's
# hooks_dir) create an rxe device on the pod's eth0 inside the pod, give the
# container its device nodes and write /etc/nccl.conf. Between the pods, over
# IPv4 and over IPv6-only pods:
#  - `rdmans ping` from B to a server in A, on nccl.conf's device and GID index
#  - rping, and ib_write_bw with -x the GID index /etc/nccl.conf names (IPv4:
#    perftest 25.01 resolves its peer as IPv4 only)
# The pods' rxe devices go with their network. Without the precreate JSON the
# annotation is refused, saying what is missing; so is a netdev the pod lacks.
set -u
. "$(dirname "$0")/runtime-lib.sh"
PAUSE=localhost/rdmans-pause:1
RIMG=localhost/rdmans-rdma:1

vm_load_rdma # shared netns mode: what soft-RoCE pods need
modprobe rdma_ucm
rt_syslog
rt_t "install" rt_install
rt_podman
# rdmans-hook(8), PRECREATE: podman reads the precreate JSON where it is told to
echo "hooks_dir = [\"$(dirname "$HOOK_JSON")\", \"$(dirname "$HOOK_PRE_JSON")\"]" >>/etc/containers/containers.conf
rt_pause_image "$PAUSE"
rt_t "rdma image" vm_check "an image with rdmans, rping, ib_write_bw and the verbs provider" rt_rdma_image "$RIMG"
vm_diag "$(rt_world); $(podman --version); $(/usr/lib/podman/netavark --version 2>&1)"
rdevs() { rdma dev show 2>/dev/null | awk '{ print $2 }' | sort | tr '\n' ' '; }
before=$(rdevs)
ncclval() { sed -n "s/^$2=//p" <<<"$1"; }
SR=(--annotation rdmans.io/soft-roce=eth0)

# an IPv6 subnet alone (podman's --ipv6 means dual stack: it adds an IPv4 subnet)
rt_t "IPv6-only network" vm_run_code 0 "podman network create: an IPv6-only network (netavark)" \
	timeout 120 podman network create --subnet fd77::/64 n6
vm_diag "n6: $(podman network inspect n6 | jq -c '.[0] | {subnets, ipv6_enabled}')"

# --- without the precreate JSON: refused, and why ---------------------------------------------
rt_t "podman run, no precreate" rt_run_code 126 "rdmans.io/soft-roce with only the createRuntime JSON is refused" \
	timeout 120 podman run --rm --hooks-dir "$(dirname "$HOOK_JSON")" "${SR[@]}" "$RIMG" true
vm_check "  podman's error says the precreate JSON is missing" vm_expect_contains "$ERR" \
	"the precreate stage makes it and gives the container its device nodes"

# --- a netdev the pod does not have: refused, the node's log says why, nothing made ---------------
RT_SYSLOG_MARK=$(wc -l <"$RT_SYSLOG")
rc=0
timeout 120 podman run --rm --annotation rdmans.io/soft-roce=eth9 "$RIMG" true >/dev/null 2>&1 || rc=$?
vm_check "rdmans.io/soft-roce=eth9 (no such netdev in the pod) fails the container (exit $rc)" test "$rc" != 0
vm_check "  the node's log (precreate: podman drops its stderr) names the netdev" vm_expect_contains \
	"$(sed -n '/^# syslog:/,$p' <<<"$(rt_hook_said)")" "rdmans.io/soft-roce: eth9: cannot add rxe device"
vm_check "  no rxe device was made" vm_expect_eq "$before" "$(rdevs)"

# pod_up NAME NETWORK: a podman pod on NETWORK (infra: the pause image); NS its netns name
pod_up() {
	vm_run_code 0 "podman pod create $1 (network $2)" timeout 120 podman pod create --name "$1" \
		--network "$2" --infra-image "$PAUSE" || return 1
	vm_run_code 0 "  podman pod start $1" timeout 120 podman pod start "$1"
	[ "$(podman pod inspect -f '{{.State}}' "$1" 2>/dev/null)" = Running ] || return 1
	NS=$(podman inspect -f '{{.NetworkSettings.SandboxKey}}' "$(podman pod inspect -f '{{.InfraContainerID}}' "$1")")
	NS=${NS##*/}
}
# ctr_up POD NAME CMD...: a container of POD asking for soft-RoCE on eth0
ctr_up() {
	local pod=$1 name=$2
	shift 2
	rt_run_code 0 "  podman run $name in $pod (rdmans.io/soft-roce=eth0)" \
		timeout 120 podman run -d --name "$name" --pod "$pod" "${SR[@]}" "$RIMG" "$@"
	[ "$(podman inspect -f '{{.State.Running}}' "$name" 2>/dev/null)" = true ] && return 0
	vm_not_ok "  $name is not running: $(podman logs "$name" 2>&1 | tail -n 5 | tr '\n' ' ')"
	return 1
}

# pair FAMILY NETWORK: pods A and B, the servers in A, the client in B; both pods go again
pair() {
	pair_run "$@"
	podman pod rm -f -t 0 "$1-a" "$1-b" >/dev/null 2>&1
	vm_check "$1: the pods' rxe devices went with their network" vm_expect_eq "$before" "$(rdevs)"
}
pair_run() {
	local fam=$1 net=$2 nsA addrA conf hca gid confA hcaA gidA
	vm_diag "--- $fam: pods on network $net ---"
	pod_up "$fam-a" "$net" || return
	nsA=$NS
	pod_up "$fam-b" "$net" || return
	if [ "$fam" = ipv4 ]; then
		addrA=$(ip -n "$nsA" -o -4 addr show eth0 | awk '{ split($4, a, "/"); print a[1] }')
	else
		addrA=$(ip -n "$nsA" -o -6 addr show eth0 scope global | awk '{ split($4, a, "/"); print a[1] }')
	fi
	ctr_up "$fam-b" "$fam-client" sleep 1000000 || return
	conf=$(podman exec "$fam-client" cat /etc/nccl.conf 2>&1)
	hca=$(ncclval "$conf" NCCL_IB_HCA)
	gid=$(ncclval "$conf" NCCL_IB_GID_INDEX)
	vm_diag "$fam: pod A: $(ip -n "$nsA" -o addr show eth0 | awk '{ print $3, $4 }' | tr '\n' ' ')"
	vm_diag "$fam: pod A $addrA; B's nccl.conf: $(grep '^NCCL_' <<<"$conf" | tr '\n' ' ')"
	vm_check "$fam: the hook wrote B's nccl.conf: its own rxe device ($hca), GID index $gid" \
		sh -c 'case "$1" in "=rxe"*_eth0) [ -n "$2" ] ;; *) exit 1 ;; esac' _ "$hca" "$gid"
	vm_check "  B's container has that device's node and rdma_cm" podman exec "$fam-client" \
		sh -c 'test -c /dev/infiniband/rdma_cm && ls /dev/infiniband | grep -q uverbs'
	if [ "$fam" = ipv6 ]; then
		vm_check "$fam: pod A has no IPv4 address" vm_expect_eq "" "$(ip -n "$nsA" -o -4 addr show eth0)"
		vm_check "$fam: nccl.conf says AF_INET6" vm_expect_eq AF_INET6 "$(ncclval "$conf" NCCL_IB_ADDR_FAMILY)"
	fi

	# rdmans ping: the server is a container of pod A
	ctr_up "$fam-a" "$fam-ping-server" rdmans ping --server --timeout 30 || return
	confA=$(podman exec "$fam-ping-server" cat /etc/nccl.conf 2>&1)
	hcaA=$(ncclval "$confA" NCCL_IB_HCA)
	gidA=$(ncclval "$confA" NCCL_IB_GID_INDEX)
	vm_check "$fam: A's nccl.conf names A's own rxe device ($hcaA), not B's" \
		sh -c 'case "$1" in "=rxe"*_eth0) [ "$1" != "$2" ] ;; *) exit 1 ;; esac' _ "$hcaA" "$hca"
	vm_poll 120 vm_cm_listening rdmans
	vm_run_code 0 "$fam: rdmans ping from pod B to pod A ($addrA), on nccl.conf's device and GID" \
		timeout 120 podman exec "$fam-client" rdmans ping "$addrA" --count 50 --bw-count 50 --timeout 30
	vm_diag "$OUT"
	vm_check "  it used nccl.conf's device ${hca#=} and GID index $gid" vm_expect_contains "$OUT" "${hca#=} port 1, GID index $gid"
	podman rm -f -t 0 "$fam-ping-server" >/dev/null
	vm_poll 120 sh -c '! rdma res show cm_id | grep -q "state LISTEN .* comm rdmans "'

	ctr_up "$fam-a" "$fam-rping-server" rping -s -P -a "$addrA" -C 5 || return
	vm_poll 120 vm_cm_listening rping
	vm_check_client "$fam: rping from pod B to pod A (5 pings)" \
		timeout 120 podman exec "$fam-client" rping -c -a "$addrA" -C 5 -v
	vm_diag "$(head -n 2 <<<"$OUT")"

	# perftest 25.01 resolves its peer as IPv4 only ("Address family for hostname
	# not supported"): ib_write_bw runs between the IPv4 pods
	[ "$fam" = ipv4 ] || return 0
	# each side on its own pod's device and GID index, as nccl.conf names them
	# (-F: a report even when an emulated vCPU spoils perftest's clock calibration; tests/vm/ping.sh)
	ctr_up "$fam-a" "$fam-bw-server" ib_write_bw -F -x "$gidA" -d "${hcaA#=}" -n 200 || return
	vm_poll 120 vm_tcp_listening "$nsA" 18515
	vm_run_code 0 "$fam: ib_write_bw -x $gid (nccl.conf's GID index) from pod B to pod A" \
		timeout 120 podman exec "$fam-client" ib_write_bw -F -x "$gid" -d "${hca#=}" -n 200 "$addrA"
	vm_diag "$(tail -n 3 <<<"$OUT")"
}
rt_t "ipv4 pair" pair ipv4 podman
rt_t "ipv6 pair" pair ipv6 n6
vm_done
