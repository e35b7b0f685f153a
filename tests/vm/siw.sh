#!/bin/bash
# Guest script: soft-iWARP (the kernel's siw driver, built out of tree from
# Debian's linux-source by tests/vm/kmod-build.sh: Debian's kernel config
# leaves CONFIG_RDMA_SIW out) through rdmans, on the world's kernel.
#  - shared netns mode: a siw device made inside each of two netns on its own
#    veth end; rping and `rdmans ping --device` carry traffic between them;
#    `rdmans env` names the iWARP reason NCCL cannot use them, and `rdmans
#    doctor` skips the RoCE-only checks saying why;
#  - exclusive mode: the kernel refuses to move a siw device (EOPNOTSUPP),
#    and `rdmans move`, rdma-netns ADD and rdmans-hook each say it is the
#    driver, and change nothing; a siw device made inside a pod's netns is
#    registered in the host's.
# Output is TAP.
set -u # not -e: a failed check must not stop the others
. "$RDMANS_VM_LIB"
. "$(dirname "$RDMANS_VM_LIB")/../netns/cni-lib.sh"
. "$(dirname "$RDMANS_VM_LIB")/../netns/hook-lib.sh"
cni_vm_setup
HOOK=$RDMANS_BUILD_DIR/src/hook/rdmans-hook
KO=${1:-${RDMANS_SIW_KO:-}}
[ -f "$KO" ] || vm_fail "no siw.ko at '$KO' (meson builds it: tests/vm/meson.build)"
vm_diag "kernel $(uname -r)"
[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd

vm_load_rdma
modprobe libcrc32c 2>/dev/null # 6.1's siw needs it; 7.2's does not
vm_check "siw.ko loads" insmod "$KO" || vm_fail "no siw"

# --- shared mode: a siw device in each of two netns, traffic between them ---------------------
vm_netns_pair 10.78.0 || vm_fail "netns A and B"
vm_check "siwA in netns A on a0" ip netns exec A rdma link add siwA type siw netdev a0 || vm_fail "no siwA"
vm_check "siwB in netns B on b0" ip netns exec B rdma link add siwB type siw netdev b0 || vm_fail "no siwB"
vm_check "siwA is an RNIC (iWARP) on Ethernet" vm_expect_eq "4: RNIC Ethernet" \
	"$(cat /sys/class/infiniband/siwA/node_type /sys/class/infiniband/siwA/ports/1/link_layer | tr '\n' ' ' | sed 's/ $//')"
vm_capture ip netns exec A "$R" dev
vm_check "rdmans dev in A: siwA, iw, port ACTIVE on a0" \
	sh -c 'case "$1" in *"siwA: iw"*"port 1 ACTIVE LINK_UP netdev a0"*) exit 0 ;; esac; echo "$1"; exit 1' _ "$OUT$ERR"

# the kernel's own reference client
ip netns exec B rping -s -P -a 10.78.0.2 >/dev/null 2>&1 &
RPING=$!
vm_check "rping server in B listens" vm_poll 60 vm_cm_listening rping
vm_check_client "rping from A to B over siw (3 pings, verified)" \
	ip netns exec A timeout 60 rping -c -a 10.78.0.2 -C 3 -V
kill "$RPING" 2>/dev/null
wait "$RPING" 2>/dev/null

# rdmans ping names its device: NCCL would use none of these (below)
"$R" ping --server --netns A --device siwA --timeout 30 >/tmp/siw-server.log 2>&1 &
SERVER=$!
vm_check "rdmans ping --server in A listens" vm_poll 60 vm_cm_listening rdmans
vm_check "rdmans ping from B to A over siw" ip netns exec B "$R" ping 10.78.0.1 --device siwB \
	--count 50 --bw-count 50 --timeout 30
pinged=$VM_OUT
vm_diag "$(printf '%s' "$pinged" | grep -E 'latency|bandwidth' | tr '\n' ';')"
vm_check "  it reports latency and bandwidth on siwB" sh -c 'case "$1" in *"siwB port 1"*"bandwidth"*) exit 0 ;; esac; exit 1' _ "$pinged"
vm_run_code 3 "rdmans ping without --device: NCCL would use no device here, and says why" \
	ip netns exec B "$R" ping 10.78.0.1 --count 1 --bw-count 1 --timeout 10
vm_check "  the reason is iWARP" vm_expect_contains "$ERR" "iWARP device: NCCL's IB transport connects its queue pairs without a connection manager"
kill "$SERVER" 2>/dev/null
wait "$SERVER" 2>/dev/null

vm_run_code 3 "rdmans env in A: nothing NCCL can use" ip netns exec A "$R" env
vm_check "  siwA: iWARP, connected only through rdma_cm" vm_expect_contains "$ERR" "siwA port 1: iWARP device: NCCL's IB transport connects its queue pairs without a connection manager, which iWARP requires (rdma_cm)"
vm_run_code 21 "rdmans doctor in A (shared mode fails it)" ip netns exec A "$R" doctor
doc=$OUT
vm_check "  devices: siwA (iWARP)" vm_expect_contains "$doc" "siwA (iWARP)"
vm_check "  gid: skipped, iWARP has no RoCE v2 GID" sh -c 'printf "%s\n" "$1" | grep -q "^SKIP  gid .*siwA/1: iWARP device"' _ "$doc"
vm_check "  mtu: skipped, iWARP traffic is TCP" sh -c 'printf "%s\n" "$1" | grep -q "^SKIP  mtu .*siwA/1: iWARP device: its traffic is TCP"' _ "$doc"
vm_check "  netdev: siwB's is not in A, and that fails" sh -c 'printf "%s\n" "$1" | grep -q "^FAIL  netdev .*siwB/1: "' _ "$doc"

ip netns del A
ip netns del B
# the veths die with their netns, and siw lets its devices go with them
vm_check "siwA and siwB leave with their netdevs" vm_poll 60 sh -c '[ -z "$(rdma dev)" ]'
vm_check "exclusive mode once no other netns is left" vm_poll 60 "$R" system set netns exclusive

# --- exclusive mode: the kernel cannot move a siw device ----------------------------------------
vm_veth h0 p0 || vm_fail "veth h0"
ip addr add 10.79.0.1/24 dev h0
vm_check "siw0 on h0" rdma link add siw0 type siw netdev h0 || vm_fail "no siw0"
ip netns add pod
CNI_NS=/var/run/netns/pod
CNI_CID=c1
snap() { "$R" dev --all-netns; ip -o link | vm_link_view | sed 's/^[0-9]*: //'; ip -n pod -o link | vm_link_view; find /tmp/cni/state -type f -not -path "*/locks/*" 2>/dev/null; }
before=$(snap)
vm_run_code 1 "the kernel's answer to 'rdma dev set siw0 netns pod'" rdma dev set siw0 netns pod
vm_check "  Operation not supported" vm_expect_contains "$ERR" "Operation not supported"
vm_run_code 12 "rdmans move siw0 pod: refused" "$R" move siw0 pod --with-netdev
vm_check "  it says the driver cannot change namespace (not shared mode)" \
	vm_expect_contains "$ERR" "cannot move RDMA device siw0: its driver cannot change network namespace"
vm_check "  nothing changed" vm_expect_eq "$before" "$(snap)"

conf='{"cniVersion":"1.0.0","name":"rdmanet","type":"rdma-netns","device":"h0"}'
cni_expect_err "rdma-netns ADD of h0 (siw0): refused" 109 "its driver cannot change network namespace" ADD "$conf"
vm_check "  nothing changed (siw0 and h0 on the host, no state)" vm_expect_eq "$before" "$(snap)"
cni_expect_ok "DEL after the failed ADD" DEL "$conf"
vm_check "  nothing changed" vm_expect_eq "$before" "$(snap)"

cg=/sys/fs/cgroup
mountpoint -q "$cg" || mount -t cgroup2 none "$cg" || vm_fail "cannot mount cgroup2 for runc"
tmp=$(mktemp -d /tmp/rdmans-siw.XXXXXX)
hl_bundle "$tmp/c1" "$HOOK" /var/run/netns/pod '["true"]' '.annotations = {"rdmans.io/devices": "siw0"}'
if hl_run "$tmp/runc" "$tmp/c1" c1; then
	vm_not_ok "a container asking rdmans-hook for siw0 does not start"
else
	vm_ok "a container asking rdmans-hook for siw0 does not start"
fi
vm_check "  the hook says the driver cannot change namespace" vm_expect_contains "$HL_ERR" "its driver cannot change network namespace"
vm_check "  nothing changed" vm_expect_eq "$before" "$(snap)"

# what the message tells: a siw device made inside the pod is the host's
ip link set p0 netns pod
vm_check "rdma link add siwp inside pod" ip netns exec pod rdma link add siwp type siw netdev p0
vm_check "  siwp is registered in the host's netns, not the pod's" \
	sh -c 'rdma dev show siwp && ! ip netns exec pod rdma dev show siwp'
vm_done
