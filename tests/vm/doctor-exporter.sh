#!/bin/bash
# Guest script: `rdmans doctor` and `rdmans exporter` on the real ib_core.
#  - rxe in init_net (real hw_counters): rping traffic moves the counters the
#    exporter serves over HTTP, equal to what `rdma statistic` says; promtool
#    accepts the output;
#  - doctor catches a shared-mode system, then (exclusive mode, simulated
#    HCAs moved into pods) a down port, a missing GID (full GID table), a
#    wrong NCCL_IB_GID_INDEX in a process's environment, a low memlock limit
#    and missing /dev/infiniband nodes;
#  - the exporter follows devices into pods (invisible to the host's sysfs),
#    labelled with their netns and, from the CNI plugin's state, the pod.
set -u
# shellcheck source=guest-lib.sh
. "${RDMANS_VM_LIB:-$(dirname "$0")/guest-lib.sh}"
R=$RDMANS_BUILD_DIR/src/cli/rdmans
PORT=19877
URL=http://127.0.0.1:$PORT/metrics

is_comm() { [ "$(cat "/proc/$1/comm" 2>/dev/null)" = "$2" ]; }
# status ID [SUBJECT]: the status of a doctor check in $OUT (JSON)
status() {
	echo "$OUT" | jq -r --arg id "$1" --arg s "${2:-}" \
		'[.checks[] | select(.id == $id and ($s == "" or .subject == $s))][0].status'
}
message() {
	echo "$OUT" | jq -r --arg id "$1" --arg s "${2:-}" \
		'[.checks[] | select(.id == $id and ($s == "" or .subject == $s))][0].message'
}
# metric TEXT NAME LABELS...: value of the sample of NAME whose labels include each LABEL
metric() {
	local text=$1 name=$2 line
	shift 2
	line=$(printf '%s\n' "$text" | grep -E "^${name}[{ ]")
	for l in "$@"; do
		line=$(printf '%s\n' "$line" | grep -F "$l")
	done
	printf '%s\n' "$line" | awk 'NR == 1 { print $NF }'
}
stat_of() { # stat_of DEV/PORT NAME: the counter as iproute2 reads it
	rdma statistic show link "$1" | tr ' ' '\n' | awk -v n="$2" 'prev == n { print; exit } { prev = $0 }'
}

vm_load_rdma
vm_veth veth0 veth1 || vm_fail "veth0"
ip addr add 192.168.50.1/24 dev veth0
rdma link add rxe0 type rxe netdev veth0 || vm_fail "rxe0"
vm_poll 60 sh -c 'grep -q ffff:c0a8:3201 /sys/class/infiniband/rxe0/ports/1/gids/*'

# --- shared mode ------------------------------------------------------------
vm_run_code 21 "doctor on a shared-mode system exits 21 (FAIL)" "$R" -j doctor
vm_check "doctor: netns-mode FAIL" vm_expect_eq FAIL "$(status netns-mode)"
vm_check "doctor: the fix names exclusive mode" vm_expect_contains \
	"$(echo "$OUT" | jq -r '.checks[] | select(.id == "netns-mode") | .fix')" "rdmans system set netns exclusive"
vm_check "doctor: rxe0's RoCE v2 GID of 192.168.50.1 found" vm_expect_contains "$(message gid rxe0/1)" "192.168.50.1 at GID index 1"
vm_check "doctor: rxe0 port ACTIVE" vm_expect_eq PASS "$(status port-state rxe0/1)"
vm_check "doctor: active MTU read through verbs" vm_expect_contains "$(message mtu rxe0/1)" "active MTU 1024"
vm_run_code 21 "doctor text output" "$R" doctor
vm_check "doctor text: FAIL line and a fix line" sh -c 'echo "$1" | grep -q "^FAIL  netns-mode" && echo "$1" | grep -q "fix: "' sh "$OUT"
vm_run_code 2 "doctor --pid with junk is a usage error" "$R" doctor --pid 12ab
vm_run_code 2 "doctor --pid and --netns together is a usage error" "$R" doctor --pid 1 --netns host
vm_run_code 4 "doctor --pid of no process" "$R" doctor --pid 999999
vm_check "doctor --pid of no process: says so" vm_expect_contains "$ERR" "no process with PID 999999"
vm_run_code 5 "doctor --netns of no netns" "$R" doctor --netns nosuch

# --- exporter, rxe counters, traffic ---------------------------------------------
vm_run_code 0 "exporter --once" "$R" exporter --once
printf '%s\n' "$OUT" >/tmp/once.prom
vm_check "promtool check metrics accepts exporter --once" sh -c 'promtool check metrics </tmp/once.prom'
vm_check "exporter --once: every rxe0 hw counter of sysfs is there" sh -c '
	for c in $(ls /sys/class/infiniband/rxe0/ports/1/hw_counters | grep -vx lifespan); do
		grep -q "^rdmans_port_hw_${c}_total{device=\"rxe0\",port=\"1\",netdev=\"veth0\",netns=\"host\"" /tmp/once.prom || { echo "missing $c"; exit 1; }
	done'
"$R" exporter --listen 127.0.0.1:$PORT 2>/tmp/exporter.log &
EXPORTER=$!
vm_check "exporter listens" vm_poll 60 curl -sf -o /dev/null "$URL"
vm_run_code 0 "scrape before traffic" curl -sf "$URL"
before_sent=$(metric "$OUT" rdmans_port_hw_sent_pkts_total 'device="rxe0"')
before_sends=$(metric "$OUT" rdmans_port_hw_rdma_sends_total 'device="rxe0"')
vm_check "sent_pkts of rxe0 is served" test -n "$before_sent"
timeout 120 rping -s -a 192.168.50.1 -C 10 >/tmp/rping-s.log 2>&1 &
# the client is refused until the server listens: retry it (no sleep to guess)
vm_check "rping over rxe0 (10 pings)" vm_poll 60 timeout 60 rping -c -a 192.168.50.1 -C 10
wait $! 2>/dev/null
vm_run_code 0 "scrape after traffic" curl -sf "$URL"
after_sent=$(metric "$OUT" rdmans_port_hw_sent_pkts_total 'device="rxe0"')
after_sends=$(metric "$OUT" rdmans_port_hw_rdma_sends_total 'device="rxe0"')
vm_check "traffic raised sent_pkts ($before_sent -> $after_sent)" test "${after_sent:-0}" -gt "${before_sent:-0}"
vm_check "traffic raised rdma_sends ($before_sends -> $after_sends)" test "${after_sends:-0}" -gt "${before_sends:-0}"
vm_check "served sent_pkts equals 'rdma statistic'" vm_expect_eq "$(stat_of rxe0/1 sent_pkts)" "$after_sent"
printf '%s\n' "$OUT" >/tmp/http.prom
vm_check "promtool check metrics accepts the HTTP output" sh -c 'promtool check metrics </tmp/http.prom'
vm_check "Content-Type is the 0.0.4 text format" sh -c "curl -sfI '$URL' | grep -qi '^content-type: text/plain; version=0.0.4'"
vm_check "other paths are 404" sh -c "[ \"\$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:$PORT/nope)\" = 404 ]"
vm_run_code 1 "a second exporter on the same port fails" "$R" exporter --listen 127.0.0.1:$PORT
vm_check "second exporter: says it cannot listen" vm_expect_contains "$ERR" "cannot listen on 127.0.0.1:$PORT"
vm_run_code 2 "exporter --listen with a bad port" "$R" exporter --listen 127.0.0.1:70000

# --- exclusive mode ---------------------------------------------------------------
vm_check "switch to exclusive mode" "$R" system set netns exclusive
vm_run_code 20 "doctor in exclusive mode, not persisted: worst is WARN (exit 20)" "$R" -j doctor
vm_check "doctor: netns-mode PASS" vm_expect_eq PASS "$(status netns-mode)"
vm_check "doctor: netns-mode-boot WARN (not persisted)" vm_expect_eq WARN "$(status netns-mode-boot)"

# --- pods with simulated HCAs ----------------------------------------------------
vm_load_simhca
vm_veth h1 p1 && vm_veth h2 p2 || vm_fail "veths"
dev1=$(vm_simhca_new "irdma%d" h1) || vm_fail "simhca on h1"
dev2=$(vm_simhca_new "mlx5_%d" h2) || vm_fail "simhca on h2"
ip netns add pod1
ip netns add pod2
ip netns exec pod1 sleep 1000 &
POD1=$!
vm_poll 60 is_comm $POD1 sleep
vm_check "move $dev1 into pod1 with its netdev (net1)" "$R" move "$dev1" pod1 --with-netdev --netdev-name net1
vm_check "move $dev2 into pod2 with its netdev (net1)" "$R" move "$dev2" pod2 --with-netdev --netdev-name net1
ip -n pod1 addr add 10.56.1.2/24 dev net1 && ip -n pod1 link set net1 up
ip -n pod2 addr add 10.56.2.2/24 dev net1 && ip -n pod2 link set net1 up
gid_index() { "$R" -j gids "$1" --netns "$2" | jq -r --arg a "$3" '.[] | select(.ipv4 == $a and .ver == "v2") | .index'; }
has_gid() { [ -n "$(gid_index "$dev1" pod1 10.56.1.2)" ]; }
vm_check "pod1's GID for 10.56.1.2 appears" vm_poll 60 has_gid
IDX1=$(gid_index "$dev1" pod1 10.56.1.2)
vm_check "$dev1 is invisible to the host's sysfs" test ! -e "/sys/class/infiniband/$dev1"

# the CNI plugin's state for pod1 (format: include/rdmans/cni_state.h)
# a clean state dir of its own: the host's (seen through the overlay) may hold other tests' files
mkdir -p /var/lib/cni/rdma-netns && mount -t tmpfs -o mode=0700 none /var/lib/cni/rdma-netns
cat >/var/lib/cni/rdma-netns/rdma:4f3c2a1b9e8d:net1 <<EOF
format=1
network=rdma
container_id=4f3c2a1b9e8d
ifname=net1
netns=/var/run/netns/pod1
mode=main
phase=ready
pod_namespace=ml
pod_name=gpu-pod0
rdma=1
rdma.0.name=$dev1
EOF

vm_run_code 0 "scrape with devices in pods" curl -sf "$URL"
printf '%s\n' "$OUT" >/tmp/pods.prom
vm_check "promtool check metrics accepts it" sh -c 'promtool check metrics </tmp/pods.prom'
vm_check "$dev1 served from pod1, netdev net1, labelled with its pod" vm_expect_eq 4 \
	"$(metric "$OUT" rdmans_port_state "device=\"$dev1\"" 'netdev="net1"' 'netns="pod1"' 'pod="gpu-pod0"' 'namespace="ml"' 'container="4f3c2a1b9e8d"')"
vm_check "$dev2 served from pod2 (no CNI state: no pod label)" vm_expect_eq 4 \
	"$(metric "$OUT" rdmans_port_state "device=\"$dev2\"" 'netns="pod2"' 'pod=""')"
vm_check "rxe0 still served from the host" vm_expect_eq 4 "$(metric "$OUT" rdmans_port_state 'device="rxe0"' 'netns="host"')"
vm_check "the scrape read every namespace" test "$(metric "$OUT" rdmans_scrape_namespaces)" -ge 3

vm_run_code 20 "doctor --netns pod1: healthy, worst WARN (veth MTU 1500)" "$R" -j doctor --netns pod1
vm_check "pod1: devices names $dev1" vm_expect_contains "$(message devices)" "$dev1 (Ethernet)"
vm_check "pod1: port ACTIVE" vm_expect_eq PASS "$(status port-state "$dev1/1")"
vm_check "pod1: netdev net1 up" vm_expect_eq PASS "$(status netdev "$dev1/1")"
vm_check "pod1: GID of 10.56.1.2 at index $IDX1" vm_expect_contains "$(message gid "$dev1/1")" "10.56.1.2 at GID index $IDX1"
vm_check "pod1: no process, process checks skipped" vm_expect_eq SKIP "$(status memlock)"

# a down port
ip -n pod1 link set net1 down
vm_check "port goes DOWN" vm_poll 60 sh -c "ip netns exec pod1 rdma link show '$dev1/1' | grep -q 'state DOWN'"
vm_run_code 21 "doctor --netns pod1 with net1 down: FAIL" "$R" -j doctor --netns pod1
vm_check "down port: port-state FAIL" vm_expect_eq FAIL "$(status port-state "$dev1/1")"
vm_check "down port: the fix says ip link set net1 up" vm_expect_contains \
	"$(echo "$OUT" | jq -r --arg s "$dev1/1" '.checks[] | select(.id == "port-state" and .subject == $s) | .fix')" "ip link set net1 up"
vm_check "down port: netdev FAIL" vm_expect_eq FAIL "$(status netdev "$dev1/1")"
vm_run_code 0 "scrape with the port down" curl -sf "$URL"
vm_check "exporter: rdmans_port_state 1 (DOWN)" vm_expect_eq 1 "$(metric "$OUT" rdmans_port_state "device=\"$dev1\"")"
vm_check "exporter: rdmans_port_netdev_up 0" vm_expect_eq 0 "$(metric "$OUT" rdmans_port_netdev_up "device=\"$dev1\"")"
ip -n pod1 link set net1 up
vm_check "port ACTIVE again" vm_poll 60 sh -c "ip netns exec pod1 rdma link show '$dev1/1' | grep -q 'state ACTIVE'"

# a missing GID: the 16-slot table is full (fe80 + 7 IPv4 addresses, 2 slots each)
for i in 3 4 5 6 7 8 9; do ip -n pod1 addr add "10.56.1.$i/24" dev net1; done
missing() { "$R" -j doctor --netns pod1 | jq -e --arg s "$dev1/1" '.checks[] | select(.id == "gid" and .subject == $s and .status == "FAIL")'; }
vm_check "doctor: a GID is missing once the table is full" vm_poll 60 missing
vm_run_code 21 "doctor --netns pod1 with a full GID table" "$R" -j doctor --netns pod1
vm_check "missing GID: 10.56.1.9 named, table full" sh -c 'echo "$1" | grep -q "10.56.1.9" && echo "$1" | grep -q "GID table is full (16 of 16"' sh "$(message gid "$dev1/1")"
for i in 3 4 5 6 7 8 9; do ip -n pod1 addr del "10.56.1.$i/24" dev net1; done
vm_check "GIDs come back: gid PASS" vm_poll 60 sh -c "'$R' -j doctor --netns pod1 | jq -e --arg s '$dev1/1' '.checks[] | select(.id == \"gid\" and .subject == \$s and .status == \"PASS\")'"

# a process with a wrong NCCL_IB_GID_INDEX, and one with the right one
wrong=$((IDX1 + 4))
ip netns exec pod1 env NCCL_IB_HCA="$dev1" NCCL_IB_GID_INDEX=$wrong NCCL_SOCKET_IFNAME=net1 sleep 1000 &
WRONG=$!
ip netns exec pod1 env NCCL_IB_HCA="=$dev1" NCCL_IB_GID_INDEX=$IDX1 sleep 1000 &
RIGHT=$!
vm_poll 60 is_comm $WRONG sleep
vm_poll 60 is_comm $RIGHT sleep
vm_check "the NCCL processes run in pod1" sh -c '[ "$(readlink /proc/$1/ns/net)" = "$(readlink /proc/$3/ns/net)" ] && [ "$(readlink /proc/$2/ns/net)" = "$(readlink /proc/$3/ns/net)" ]' sh $WRONG $RIGHT $POD1
vm_run_code 21 "doctor --pid (NCCL_IB_GID_INDEX=$wrong): FAIL" "$R" -j doctor --pid $WRONG
vm_check "wrong GID index: nccl-gid-index FAIL" vm_expect_eq FAIL "$(status nccl-gid-index)"
vm_check "wrong GID index: names the right one" vm_expect_contains "$(message nccl-gid-index)" "the RoCE v2 GID of 10.56.1.2/24 is index $IDX1"
vm_check "wrong GID index: HCA and interface fine" sh -c '[ "$1" = PASS ] && [ "$2" = PASS ]' sh "$(status nccl-hca)" "$(status nccl-socket-ifname)"
vm_check "the target is the process's netns" vm_expect_contains "$(echo "$OUT" | jq -r .target)" "PID $WRONG"
vm_run_code 20 "doctor --pid (NCCL_IB_GID_INDEX=$IDX1): no FAIL" "$R" -j doctor --pid $RIGHT
vm_check "right GID index: nccl-gid-index PASS" vm_expect_eq PASS "$(status nccl-gid-index)"
vm_check "right GID index: memlock PASS (root has CAP_IPC_LOCK)" vm_expect_eq PASS "$(status memlock)"
vm_check "right GID index: uverbs node present" vm_expect_contains "$(message dev-nodes)" "$dev1)"

# nccl.conf in the process's mount namespace: /etc/nccl.conf names a wrong index
ip netns exec pod1 unshare -m sh -c "mount -t tmpfs none /etc && echo NCCL_IB_GID_INDEX=$wrong >/etc/nccl.conf && exec sleep 1000" &
CONF=$!
vm_poll 60 is_comm $CONF sleep
vm_check "the container's /etc/nccl.conf is there" test -e /proc/$CONF/root/etc/nccl.conf
vm_run_code 21 "doctor --pid, wrong index in the container's /etc/nccl.conf" "$R" -j doctor --pid $CONF
vm_check "nccl.conf: source named" vm_expect_contains "$(message nccl-gid-index)" "NCCL_IB_GID_INDEX=$wrong (/etc/nccl.conf)"

# memlock limit without CAP_IPC_LOCK, and no /dev/infiniband nodes
ip netns exec pod1 prlimit --memlock=65536:65536 setpriv --bounding-set=-ipc_lock \
	unshare -m sh -c 'mount -t tmpfs none /dev/infiniband && exec sleep 1000' &
LOCKED=$!
vm_poll 60 is_comm $LOCKED sleep
vm_run_code 21 "doctor --pid (memlock 64 KiB, no IPC_LOCK, empty /dev/infiniband)" "$R" -j doctor --pid $LOCKED
vm_check "memlock FAIL" vm_expect_eq FAIL "$(status memlock)"
vm_check "memlock: says 64 KiB" vm_expect_contains "$(message memlock)" "64 KiB"
vm_check "dev-nodes FAIL: uverbs missing" sh -c 'echo "$1" | grep -q "missing"' sh "$(message dev-nodes)"

kill "$WRONG" "$RIGHT" "$CONF" "$LOCKED" "$POD1" 2>/dev/null
kill "$EXPORTER" 2>/dev/null
vm_check "exporter stops on SIGTERM" vm_poll 60 sh -c "! kill -0 $EXPORTER"
wait "$EXPORTER"
vm_check "exporter exit status 0" test $? = 0
vm_done
