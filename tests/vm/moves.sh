#!/bin/bash
# Guest script: moving simulated HCAs between namespaces with rdmans, on the
# real ib_core path (issue: simulated RoCE HCA). iproute2's rdma cross-checks.
set -u
. "$RDMANS_VM_LIB"
R=$RDMANS_BUILD_DIR/src/cli/rdmans

on_host() { rdma dev show "$1" >/dev/null 2>&1; }
in_ns() { ip netns exec "$1" rdma dev show "$2" >/dev/null 2>&1; }
absent_on_host() { ! on_host "$1" && [ ! -e "/sys/class/infiniband/$1" ]; }
snapshot() { rdma -j dev; ip -o link | vm_link_view; ip netns list; }

vm_load_rdma
vm_load_simhca
for i in 0 1 2 3 4 5 6 7; do
	vm_veth "h$i" "p$i" || vm_fail "veth h$i"
done
dev=$(vm_simhca_new "irdma%d" h0) || vm_fail "simhca device on h0"
vm_check "simhca device is irdma0" vm_expect_eq irdma0 "$dev"

# --- shared mode: a move is refused, with the fix, and nothing changes ----------
ip netns add pod-shared
before=$(snapshot)
vm_run_code 12 "shared mode: move refused" "$R" move irdma0 pod-shared
vm_check "shared mode: names the fix" vm_expect_contains "$ERR" "rdmans system set netns exclusive"
vm_check "shared mode: nothing changed" vm_expect_eq "$before" "$(snapshot)"
ip netns del pod-shared
# netns teardown is asynchronous: the mode switch succeeds once it is gone
vm_check "exclusive mode once no other netns is left" vm_poll 60 "$R" system set netns exclusive

# --- by PID, by name, by path; and back ---------------------------------------------
ip netns add pod1
ip netns add pod2
ip netns add pod3
ip netns exec pod1 sleep 1000 &
pod1_pid=$!
vm_poll 60 test "$(readlink /proc/$pod1_pid/ns/net)" != "$(readlink /proc/self/ns/net)"

vm_run_code 0 "move irdma0 into a PID's netns" "$R" move irdma0 "$pod1_pid"
vm_check "by PID: gone from the host (rdma dev and sysfs)" absent_on_host irdma0
vm_check "by PID: visible in pod1" in_ns pod1 irdma0
vm_run_code 0 "move irdma0 from pod1 to pod2 by name" "$R" move irdma0 pod2
vm_check "by name: in pod2, not in pod1" sh -c "ip netns exec pod2 rdma dev show irdma0 && ! ip netns exec pod1 rdma dev show irdma0"
vm_check "by name: the message says where from" vm_expect_contains "$OUT" "from netns 'pod1'"
vm_run_code 0 "move irdma0 to pod3 by path" "$R" move irdma0 /var/run/netns/pod3
vm_check "by path: in pod3" in_ns pod3 irdma0
vm_run_code 0 "--all-netns finds irdma0 in pod3" "$R" -j dev --all-netns
vm_check "--all-netns: pod3 holds irdma0" vm_expect_eq pod3 "$(echo "$OUT" | jq -r '.[] | select(.ifname == "irdma0") | .netns.name')"
vm_run_code 0 "gids --netns pod3" "$R" -j gids irdma0 --netns pod3
vm_check "gids inside pod3: the link-local RoCE v2 GID" vm_expect_eq v2 "$(echo "$OUT" | jq -r '[.[] | select(.gid | startswith("fe80")) | .ver] | last')"
vm_run_code 8 "move to where it is: refused" "$R" move irdma0 pod3
vm_run_code 0 "back to the host" "$R" move irdma0 host
vm_check "back: on the host, its sysfs too" sh -c "rdma dev show irdma0 && test -e /sys/class/infiniband/irdma0"
vm_check "back: its auxiliary sysfs link" test -e "/sys/bus/auxiliary/devices/$(awk '$2 == "irdma0" { print $4 }' /sys/bus/simhca/list)/infiniband/irdma0"

# --- the netns is deleted while the device is inside --------------------------------
vm_run_code 0 "move irdma0 into pod3 again" "$R" move irdma0 pod3
ip netns del pod3
vm_check "netns deleted: irdma0 returns to the host with its name" vm_poll 60 on_host irdma0

# --- netdev and RDMA device together: the pod's IPv4 as a RoCE v2 GID ----------------
vm_run_code 0 "move irdma0 with its netdev, renamed net1" "$R" move irdma0 "$pod1_pid" --with-netdev --netdev-name net1
vm_check "--with-netdev: says what moved" vm_expect_contains "$OUT" "with netdev h0 (now net1)"
vm_check "net1 is in pod1, h0 gone from the host" sh -c "ip netns exec pod1 ip link show net1 && ! ip link show h0"
ip -n pod1 addr add 10.56.0.2/24 dev net1
ip -n pod1 link set net1 up
gid_of_pod() { "$R" -j gids irdma0 --netns pod1 | jq -e '.[] | select(.ipv4 == "10.56.0.2" and .ver == "v2")'; }
vm_check "GID table in pod1 shows 10.56.0.2 as RoCE v2" vm_poll 60 gid_of_pod
vm_check "rdma link in pod1: irdma0 bound to net1" vm_expect_contains "$(ip netns exec pod1 rdma link show irdma0/1)" "netdev net1"
vm_check "the host's sysfs has no such GID" sh -c "! grep -rqs ffff:0a38:0002 /sys/class/infiniband/*/ports/*/gids/"
vm_run_code 0 "home again with the netdev, original name" "$R" move irdma0 host --with-netdev --netdev-name h0
vm_check "home: h0 and irdma0 on the host" sh -c "ip link show h0 && rdma dev show irdma0"

# --- bad input on a real device: one line, exit code, nothing changed ------------------
before=$(snapshot)
ip -n pod1 link add net1 type veth peer name net1p
vm_run_code 13 "netdev name taken in the target" "$R" move irdma0 pod1 --with-netdev --netdev-name net1
vm_check "taken name: irdma0 moved back to the host" on_host irdma0
vm_check "taken name: h0 still on the host" ip link show h0
ip -n pod1 link del net1
vm_check "taken name: nothing changed" vm_expect_eq "$before" "$(snapshot)"

# --- container ID through /proc/*/cgroup --------------------------------------------
cg=/sys/fs/cgroup
mountpoint -q "$cg" || mount -t cgroup2 none "$cg"
cid=4f3c2a1b9e8d7c6b5a4f3c2a1b9e8d7c6b5a4f3c2a1b9e8d7c6b5a4f3c2a1b9e
mkdir -p "$cg/kubepods.slice/cri-containerd-$cid.scope"
echo "$pod1_pid" >"$cg/kubepods.slice/cri-containerd-$cid.scope/cgroup.procs"
vm_run_code 0 "move by container ID prefix" "$R" move irdma0 --container "${cid:0:12}"
vm_check "--container: irdma0 in pod1" in_ns pod1 irdma0
vm_run_code 4 "unknown container ID" "$R" move irdma0 --container 0123456789ab
"$R" move irdma0 host >/dev/null

# --- eight rails, eight pods, in parallel --------------------------------------------
names=(irdma0)
for i in 1 2 3 4 5 6 7; do
	names+=("$(vm_simhca_new "mlx5_%d" "h$i")") || vm_fail "simhca on h$i"
	ip netns add "rail$i"
done
ip netns add rail0
pids=()
for i in 0 1 2 3 4 5 6 7; do
	"$R" move "${names[$i]}" "rail$i" --with-netdev --netdev-name "net$i" >"/tmp/move$i.log" 2>&1 &
	pids+=($!)
done
failed=0
for i in 0 1 2 3 4 5 6 7; do
	wait "${pids[$i]}" || { failed=1; vm_diag "move ${names[$i]}: $(cat /tmp/move$i.log)"; }
done
vm_check "8 parallel moves all succeed" test "$failed" = 0
landed=0
for i in 0 1 2 3 4 5 6 7; do
	ip netns exec "rail$i" rdma dev show "${names[$i]}" >/dev/null 2>&1 &&
		ip -n "rail$i" link show "net$i" >/dev/null 2>&1 && landed=$((landed + 1))
done
vm_check "every rail landed in its own netns with its netdev" vm_expect_eq 8 "$landed"
vm_run_code 0 "--all-netns after the parallel moves" "$R" -j dev --all-netns
want=$(for i in 0 1 2 3 4 5 6 7; do echo "${names[$i]}=rail$i"; done | sort | paste -sd,)
got=$(echo "$OUT" | jq -r '.[] | "\(.ifname)=\(.netns.name)"' | sort | paste -sd,)
vm_check "--all-netns: each device in its namespace" vm_expect_eq "$want" "$got"
vm_check "rdma dev on the host lists none of them" vm_expect_eq "" "$(rdma dev)"

for i in 0 1 2 3 4 5 6 7; do ip netns del "rail$i"; done
returned() { [ "$(rdma dev | grep -c .)" = 8 ]; }
vm_check "deleting the 8 namespaces returns the 8 devices" vm_poll 30 returned

# --- listing while another device moves ------------------------------------------------
# The kernel sends one device per part of a dump and resumes by counting the
# devices the netns sees: a device that leaves or arrives between two parts makes
# a naive listing skip or repeat the next one (a stress loop once lost an ADD
# to it). The lowest-index device moves host <-> netns in a loop meanwhile.
ip netns add churn
ip netns attach hostns 1
mover=$(rdma -j dev | jq -r '.[0].ifname')
stay=$(rdma -j dev | jq -r --arg m "$mover" '[.[] | select(.ifname != $m) | .ifname] | sort | join(" ")')
rm -f /tmp/churn.stop /tmp/churn.moves
(while [ ! -e /tmp/churn.stop ]; do
	rdma dev set "$mover" netns churn && ip netns exec churn rdma dev set "$mover" netns hostns &&
		echo >>/tmp/churn.moves
done) &
churn_pid=$!
moves() { cat /tmp/churn.moves 2>/dev/null | wc -l; }
wrong=0
# at least 40 listings, and on until the device went out and back 5 times
for ((k = 0; k < 400 && (k < 40 || $(moves) < 5); k++)); do
	got=$("$R" -j dev 2>&1 | jq -r --arg m "$mover" '[.[] | select(.ifname != $m) | .ifname] | sort | join(" ")' 2>&1)
	[ "$got" = "$stay" ] || { wrong=$((wrong + 1)); vm_diag "listing $k: $got"; }
done
touch /tmp/churn.stop
wait "$churn_pid"
vm_diag "$k listings while $mover went out and back $(moves) times"
vm_check "$mover went out and back at least 5 times meanwhile" test "$(moves)" -ge 5
vm_check "every listing meanwhile has the 7 that stay, once ($stay)" vm_expect_eq 0 "$wrong"
on_host "$mover" || ip netns exec churn rdma dev set "$mover" netns hostns
vm_check "$mover home after the churn" on_host "$mover"
ip netns del churn
ip netns del hostns

kill "$pod1_pid" 2>/dev/null
vm_done
