#!/bin/bash
# Guest script (current world: kernel 7.2, where soft-RoCE carries traffic
# between network namespaces). Two netns A and B joined by a veth, an rxe
# device made inside each on its own end (shared netns mode), then:
#  - `rdmans ping --server --netns A` and `ip netns exec B rdmans ping ADDR`
#    report latency and bandwidth, IPv4 and IPv6, text and -j, with the
#    device and GID index NCCL would use (resolved as `rdmans env`);
#  - each failure names its cause, with its exit code (rdmans(8)): nothing
#    listening, an unreachable address, a wrong GID index, no device node,
#    no verbs provider, memlock too low (a user without CAP_IPC_LOCK), a
#    silent (stopped) server: bounded by `timeout`, never a hang;
#  - rping and ib_write_bw between the same netns, as the reference.
# Output is TAP.
set -u # not -e: a failed check must not stop the others
# shellcheck source=guest-lib.sh
. "${RDMANS_VM_LIB:-$(dirname "$0")/guest-lib.sh}"

[ "${RDMANS_IN_VM:-}" = 1 ] || vm_fail "run me inside the VM: tests/vm/vm-run.sh $0"
vm_diag "kernel $(uname -r)"
R=$RDMANS_BUILD_DIR/src/cli/rdmans
[ -x "$R" ] || vm_fail "no $R"
T=$(mktemp -d)

vm_check "rdma modules load (shared netns mode)" vm_load_rdma || vm_fail "no RDMA stack"
vm_netns_pair 10.77.0 fd77 || vm_fail "netns A and B"
vm_check "rxeA in netns A on a0" ip netns exec A rdma link add rxeA type rxe netdev a0 ||
	vm_fail "no rxeA"
vm_check "rxeB in netns B on b0" ip netns exec B rdma link add rxeB type rxe netdev b0 ||
	vm_fail "no rxeB"
# the GIDs of the addresses appear asynchronously
vm_poll 20 sh -c 'grep -q "0a4d:0001" /sys/class/infiniband/rxeA/ports/1/gids/* 2>/dev/null'
vm_poll 20 sh -c 'grep -q "fd77" /sys/class/infiniband/rxeB/ports/1/gids/* 2>/dev/null'
vm_check "rdmans env in B names rxeB" ip netns exec B "$R" env
vm_expect_contains "$VM_OUT" "NCCL_IB_HCA==rxeB" "rdmans env" || vm_not_ok "env names rxeB"

# --timeout 30: emulated soft-RoCE on a loaded machine can stall for seconds (a run once saw
# "went silent for 3.0 s", the default meant for a real fabric); the failure cases below set
# their own bounds.
SMALL=(--count 200 --bw-count 200 --timeout 30)

# once the server in A listens (its rdma_cm id, bounded wait), one ping answers
wait_server() {
	vm_poll 120 vm_cm_listening rdmans || { vm_diag "no rdma_cm id of rdmans listens"; return 1; }
	ip netns exec B "$R" ping 10.77.0.1 --count 1 --bw-count 1
}

"$R" ping --server --netns A --timeout 30 >"$T/server.log" 2>&1 &
SERVER=$!
vm_check "the server in A answers" wait_server

run_client() { ip netns exec B "$R" "$@"; }

for fam in 10.77.0.1 fd77::1; do
	vm_run_code 0 "rdmans ping $fam from netns B to the server in A" \
		run_client ping "$fam" "${SMALL[@]}"
	vm_diag "$OUT"
	vm_expect_contains "$OUT" "rxeB port 1, GID index" "ping $fam" || vm_not_ok "$fam: uses rxeB"
	vm_expect_contains "$OUT" "SEND ping-pong" "ping $fam" || vm_not_ok "$fam: SEND latency"
	vm_expect_contains "$OUT" "RDMA WRITE ping-pong" "ping $fam" || vm_not_ok "$fam: WRITE latency"
	vm_expect_contains "$OUT" "MiB/s" "ping $fam" || vm_not_ok "$fam: bandwidth"
	vm_expect_contains "$OUT" "rdmans ping $fam:" "ping $fam" || vm_not_ok "$fam: peer"
	vm_run_code 0 "rdmans -j ping $fam" run_client -j ping "$fam" "${SMALL[@]}"
	vm_diag "$OUT"
	vm_expect_contains "$OUT" '"device":"rxeB"' "-j ping $fam" || vm_not_ok "$fam -j: device"
	vm_expect_contains "$OUT" '"p99_us":' "-j ping $fam" || vm_not_ok "$fam -j: p99"
	vm_expect_contains "$OUT" '"mib_s":' "-j ping $fam" || vm_not_ok "$fam -j: bandwidth"
	vm_expect_contains "$OUT" "\"peer\":\"$fam\"" "-j ping $fam" || vm_not_ok "$fam -j: peer"
done
# what NCCL reads: /etc/nccl.conf (as the hook writes it), then the environment over it
printf 'NCCL_IB_HCA==rxeB\nNCCL_IB_GID_INDEX=1\n' >/etc/nccl.conf
vm_run_code 0 "rdmans ping with /etc/nccl.conf's device and GID index" run_client -j ping 10.77.0.1 "${SMALL[@]}"
vm_expect_contains "$OUT" '"chosen_by":"NCCL_IB_HCA, NCCL_IB_GID_INDEX of /etc/nccl.conf"' "nccl.conf" ||
	vm_not_ok "nccl.conf: named as the source"
vm_expect_contains "$OUT" '"gid_index":1' "nccl.conf" || vm_not_ok "nccl.conf: its GID index"
printf 'NCCL_IB_HCA==rxeB\nNCCL_IB_GID_INDEX=0\n' >/etc/nccl.conf
vm_run_code 16 "a link-local GID index in /etc/nccl.conf: exit 16" run_client ping 10.77.0.1 "${SMALL[@]}"
vm_expect_contains "$ERR" "GID index 0 of rxeB port 1 is the link-local" "nccl.conf index 0" ||
	vm_not_ok "nccl.conf index 0: cause named"
vm_diag "nccl.conf GID 0: $ERR"
vm_run_code 0 "NCCL_IB_GID_INDEX in the environment beats /etc/nccl.conf" \
	env NCCL_IB_GID_INDEX=1 ip netns exec B "$R" -j ping 10.77.0.1 "${SMALL[@]}"
vm_expect_contains "$OUT" '"gid_index":1' "environment" || vm_not_ok "environment: its GID index"
rm -f /etc/nccl.conf
vm_expect_contains "$(cat "$T/server.log")" "served" "server log" || vm_not_ok "the server says whom it served"
vm_diag "server: $(cat "$T/server.log")"

# doctor --peer: the same ping as one more check
vm_run_code 0 "rdmans doctor --peer 10.77.0.1 runs" sh -c \
	'ip netns exec B "$0" doctor --peer 10.77.0.1; rc=$?; [ $rc = 0 ] || [ $rc = 20 ] || [ $rc = 21 ]' "$R"
vm_expect_contains "$OUT" "PASS  rdma-ping" "doctor --peer" || vm_not_ok "doctor: rdma-ping passes"
vm_diag "$(echo "$OUT" | grep rdma-ping)"
vm_run_code 21 "rdmans doctor --peer 10.77.0.99 (nobody there): exit 21" timeout 60 ip netns exec B \
	"$R" doctor --peer 10.77.0.99
vm_expect_contains "$OUT" "FAIL  rdma-ping" "doctor --peer" || vm_not_ok "doctor: rdma-ping fails"
vm_diag "$(echo "$OUT" | grep -A1 rdma-ping)"

# A peer whose neighbour answer comes late: A ignores ARP for 4 s while B's
# lookup of it fails (one probe, then FAILED). The kernel looks at a failed
# lookup again only at the request's own deadline, so one 20 s request would
# wait out its 20 s; rdmans ping asks again each second (seen with soft-RoCE
# pods under containerd 2.1: a 30 s request timed out on a peer that answered).
late_arp() {
	local rc
	ip -n B neigh flush dev b0
	ip netns exec B sysctl -qw net.ipv4.neigh.b0.mcast_solicit=1
	ip netns exec A sysctl -qw net.ipv4.conf.a0.arp_ignore=8
	(sleep 4 && ip netns exec A sysctl -qw net.ipv4.conf.a0.arp_ignore=0) &
	ip netns exec B "$R" ping 10.77.0.1 --count 1 --bw-count 1 --timeout 20
	rc=$?
	wait
	ip netns exec A sysctl -qw net.ipv4.conf.a0.arp_ignore=0
	ip netns exec B sysctl -qw net.ipv4.neigh.b0.mcast_solicit=3
	return $rc
}
vm_run_code 0 "a peer that answers ARP only after 4 s: rdmans ping resolves it (--timeout 20)" late_arp
vm_diag "late ARP: $OUT$ERR"

# usage errors: exit 2, nothing run
vm_run_code 2 "rdmans ping without an address or --server: usage" "$R" ping
vm_run_code 2 "rdmans ping --server ADDR: usage" "$R" ping --server 10.77.0.1
vm_run_code 2 "rdmans ping --count 0: usage" "$R" ping 10.77.0.1 --count 0
vm_expect_contains "$ERR" "--count takes a number from 1" "--count 0" || vm_not_ok "--count 0: says why"
vm_run_code 7 "rdmans ping of a name, not an address: exit 7" "$R" ping --device rxeB --gid-index 1 pod-a
vm_expect_contains "$ERR" "not an IPv4 or IPv6 address" "name" || vm_not_ok "name: says why"

# ---- failures, each bounded (timeout 60 would say 124) ----
vm_run_code 14 "no listener: exit 14" timeout 60 ip netns exec B "$R" ping 10.77.0.1 --port 4791
vm_expect_contains "$ERR" "nothing listens on port 4791" "no listener" || vm_not_ok "no listener: cause named"
vm_diag "no listener: $ERR"

vm_run_code 14 "unreachable address: exit 14" timeout 60 ip netns exec B "$R" ping 10.77.0.99
vm_expect_contains "$ERR" "unreachable" "unreachable" || vm_not_ok "unreachable: cause named"
vm_diag "unreachable: $ERR"

vm_run_code 16 "wrong GID index: exit 16" timeout 60 ip netns exec B "$R" ping 10.77.0.1 \
	--device rxeB --gid-index 200
vm_expect_contains "$ERR" "GID index 200 of rxeB" "wrong GID" || vm_not_ok "wrong GID: cause named"
vm_diag "wrong GID: $ERR"

vm_run_code 16 "GID of the other family: exit 16" timeout 60 ip netns exec B "$R" ping fd77::1 \
	--set NCCL_IB_GID_INDEX=1 --family ipv4
vm_diag "other family: $ERR"

vm_run_code 3 "no device node: exit 3" timeout 60 ip netns exec B unshare -m sh -c \
	'mount -t tmpfs none /dev/infiniband && exec "$0" ping 10.77.0.1' "$R"
vm_expect_contains "$ERR" "no /dev/infiniband/rdma_cm" "no device node" ||
	vm_not_ok "no device node: cause named"
vm_diag "no device node: $ERR"

vm_run_code 3 "no verbs provider: exit 3" timeout 60 ip netns exec B unshare -m sh -c \
	'mount -t tmpfs none /etc/libibverbs.d && exec "$0" ping 10.77.0.1' "$R"
vm_expect_contains "$ERR" "no verbs provider" "no provider" || vm_not_ok "no provider: cause named"
vm_diag "no verbs provider: $ERR"

vm_run_code 15 "memlock 0 without CAP_IPC_LOCK: exit 15" timeout 60 ip netns exec B \
	prlimit --memlock=0:0 setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
	"$R" ping 10.77.0.1 "${SMALL[@]}"
vm_expect_contains "$ERR" "RLIMIT_MEMLOCK" "memlock" || vm_not_ok "memlock: cause named"
vm_diag "memlock: $ERR"

# a server that stopped answering: the client gives up on its own
vm_freeze "$SERVER"
vm_run_code 14 "silent (stopped) server: exit 14, no hang" timeout 60 ip netns exec B "$R" \
	ping 10.77.0.1 --timeout 2
vm_diag "silent server: $ERR"
kill -CONT "$SERVER"
kill "$SERVER"
wait "$SERVER" 2>/dev/null

# ---- the reference: rping and ib_write_bw between the same netns ----
ip netns exec A rping -s -a 10.77.0.1 -C 5 >"$T/rping-s.log" 2>&1 &
RS=$!
vm_poll 120 vm_cm_listening rping
vm_check "rping from B to A (5 pings)" timeout 60 ip netns exec B rping -c -a 10.77.0.1 -C 5 -v
vm_diag "rping: $(echo "$VM_OUT" | head -5)"
wait "$RS" 2>/dev/null

GIDB=$(ip netns exec B "$R" env 2>/dev/null | sed -n 's/^NCCL_IB_GID_INDEX=//p')
# -F: perftest times itself by the TSC against gettimeofday and refuses to
# report ("Correlation coefficient r^2 < 0.9") when an emulated vCPU is
# descheduled while it calibrates; the data moves either way, which is what
# these reference runs show.
ip netns exec A timeout 120 ib_write_bw -F -R -d rxeA -n 200 >"$T/bw-s.log" 2>&1 &
BS=$!
vm_poll 120 vm_cm_listening ib_write_bw
vm_check "ib_write_bw -R from B to A" timeout 120 ip netns exec B ib_write_bw -F -R -d rxeB -n 200 10.77.0.1
vm_diag "ib_write_bw: $(echo "$VM_OUT" | tail -4)"
wait "$BS" 2>/dev/null
ip netns exec A timeout 120 ib_write_bw -F -x "$GIDB" -d rxeA -n 200 >"$T/bw-s.log" 2>&1 &
BS=$!
vm_poll 120 vm_tcp_listening A 18515
vm_check "ib_write_bw -x $GIDB from B to A" timeout 120 ip netns exec B ib_write_bw -F -x "$GIDB" \
	-d rxeB -n 200 10.77.0.1
vm_diag "ib_write_bw -x: $(echo "$VM_OUT" | tail -4)"
wait "$BS" 2>/dev/null

rm -rf "$T"
vm_done
