#!/bin/bash
# Self-test of the simhca test double (tests/vm/simhca/README.md). Output is TAP.
#
# On the host:   tests/vm/simhca/selftest.sh
#   builds simhca.ko (build.sh) and re-runs itself in the VM (vm-run.sh).
# In the VM:     tests/vm/vm-run.sh tests/vm/simhca/selftest.sh [SIMHCA_KO]
#   SIMHCA_KO defaults to $RDMANS_SIMHCA_KO, else to where build.sh puts it
#   by default (build it on the host first: building in the guest is slow).
#
# Needs a fresh VM: it switches ib_core to exclusive netns mode, which the
# kernel refuses once any other network namespace exists.
# shellcheck disable=SC2317 # helpers run through vm_check/poll look unreachable
set -u # not -e: a failed check must not stop the others

HERE=$(cd "$(dirname "$0")" && pwd)

if [ "${RDMANS_IN_VM:-}" != 1 ]; then
	ko=${1:-${RDMANS_SIMHCA_KO:-}}
	if [ -z "$ko" ]; then
		ko=$("$HERE/build.sh") || { echo "Bail out! build.sh failed"; exit 1; }
	fi
	exec "$HERE/../vm-run.sh" "$HERE/selftest.sh" "$ko"
fi

# shellcheck source=../guest-lib.sh
. "${RDMANS_VM_LIB:-$HERE/../guest-lib.sh}"

# Building in the guest works but takes minutes under TCG: build on the host.
# Without an argument, look where build.sh puts the module by default.
KO=${1:-${RDMANS_SIMHCA_KO:-}}
if [ -z "$KO" ]; then
	for KO in ${RDMANS_BUILD_DIR:+"$RDMANS_BUILD_DIR/simhca/simhca.ko"} \
		"${RDMANS_VM_CACHE:-/var/cache/rdmans-vm}/simhca-$(uname -r)/simhca.ko" \
		"${XDG_CACHE_HOME:-$HOME/.cache}/rdmans-vm/simhca-$(uname -r)/simhca.ko"; do
		[ -f "$KO" ] && break
	done
fi
[ -f "$KO" ] || vm_fail "no simhca.ko (looked at '$KO'): run tests/vm/simhca/build.sh on the host first"

CTL=/sys/bus/simhca
IBS=/sys/class/infiniband
vm_diag "kernel $(uname -r), module $KO"

# --- helpers -----------------------------------------------------------------

# poll SECS CMD...: run CMD every 0.1 s until it succeeds or SECS pass.
poll() {
	local secs=$1 i
	shift
	for ((i = 0; i < secs * 10; i++)); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	"$@"
}

# bounded SECS CMD...: run CMD in the background; if it has not finished
# after SECS (a kernel hang: D state cannot be killed), leave it and return 124.
bounded() {
	local secs=$1 pid i
	shift
	"$@" &
	pid=$!
	for ((i = 0; i < secs * 10; i++)); do
		if ! kill -0 "$pid" 2>/dev/null; then
			wait "$pid"
			return
		fi
		sleep 0.1
	done
	echo "still running after ${secs}s: $*"
	return 124
}

hang_bail() {
	vm_diag "$(dmesg | tail -n 30)"
	vm_fail "$1 hangs"
}

ctl_write() { # ctl_write FILE TEXT: write TEXT to $CTL/FILE, fail like the kernel
	printf '%s\n' "$2" >"$CTL/$1"
}

list_field() { # list_field ID COLUMN: column (2 ibdev, 3 netdev, 4 auxdev) of $CTL/list
	awk -v id="$1" -v c="$2" '$1 == id { print $c }' "$CTL/list"
}

list_is() { # list_is ID COLUMN VALUE
	[ "$(list_field "$1" "$2")" = "$3" ]
}

in_ns() { # in_ns NS CMD...: run CMD in netns NS ("" = here)
	local ns=$1
	shift
	if [ -n "$ns" ]; then ip netns exec "$ns" "$@"; else "$@"; fi
}

# gid_hex_v4 A.B.C.D: the sysfs form of ::ffff:A.B.C.D
gid_hex_v4() {
	local IFS=.
	# shellcheck disable=SC2086
	set -- $1
	printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' "$1" "$2" "$3" "$4"
}

# gid_index NS DEV GID TYPE: print the index of GID with TYPE on DEV port 1
# (as netns NS sees /sys); fail if there is none.
# shellcheck disable=SC2016 # the inner script expands its own "$1".."$3"
gid_index() {
	in_ns "$1" sh -c '
		d=/sys/class/infiniband/$1/ports/1
		for f in "$d"/gids/*; do
			n=${f##*/}
			[ "$(cat "$f" 2>/dev/null)" = "$2" ] || continue
			[ "$(cat "$d/gid_attrs/types/$n" 2>/dev/null)" = "$3" ] || continue
			echo "$n"; exit 0
		done
		exit 1' sh "$2" "$3" "$4"
}

rdma_dev_has() { # rdma_dev_has NS DEV
	in_ns "$1" rdma dev show 2>/dev/null | grep -q "^[0-9]*: $2: "
}

link_netdev() { # link_netdev NS DEV: the netdev `rdma link` shows for DEV/1
	in_ns "$1" rdma link show "$2/1" 2>/dev/null | sed -n 's/.* netdev \([^ ]*\).*/\1/p'
}

expect_fail() { # expect_fail CMD...: succeed if CMD fails
	! "$@" 2>/dev/null
}

# --- setup -------------------------------------------------------------------

vm_check "rdma modules load" vm_load_rdma || vm_fail "no RDMA stack"
vm_check "insmod simhca.ko" insmod "$KO" || vm_fail "cannot load simhca"
vm_check "control files exist" test -w "$CTL/new_device" -a -w "$CTL/del_device" -a -r "$CTL/list"
vm_check "veth pair veth0/veth1" vm_veth veth0 veth1 || vm_fail "no veth"
vm_check "veth pair veth2/veth3" vm_veth veth2 veth3 || vm_fail "no veth"

# --- creation, names, binding --------------------------------------------------

vm_check "new_device 'irdma%d veth0'" ctl_write new_device "irdma%d veth0"
vm_check "new_device 'mlx5_%d veth2'" ctl_write new_device "mlx5_%d veth2"
vm_diag "$CTL/list:" "$(cat "$CTL/list")"
IR=$(list_field 0 2)
MLX=$(list_field 1 2)
vm_check "list names device 0 irdma0 on veth0 (simhca.roce.0)" \
	vm_expect_eq "0 irdma0 veth0 simhca.roce.0" "$(grep '^0 ' "$CTL/list")" "list line 0"
vm_check "list names device 1 mlx5_0 on veth2 (simhca.roce.1)" \
	vm_expect_eq "1 mlx5_0 veth2 simhca.roce.1" "$(grep '^1 ' "$CTL/list")" "list line 1"
if [ "$IR" != irdma0 ] || [ "$MLX" != mlx5_0 ]; then
	vm_fail "devices not created as expected"
fi

vm_check "rdma dev lists irdma0" rdma_dev_has "" irdma0
vm_check "rdma dev lists mlx5_0" rdma_dev_has "" mlx5_0
vm_diag "$(rdma dev show)"
vm_check "rdma link: irdma0/1 netdev veth0" vm_expect_eq veth0 "$(link_netdev "" irdma0)" "irdma0 netdev"
vm_check "rdma link: mlx5_0/1 netdev veth2" vm_expect_eq veth2 "$(link_netdev "" mlx5_0)" "mlx5_0 netdev"
vm_check "auxiliary device simhca.roce.0 has infiniband/irdma0" \
	test -d /sys/bus/auxiliary/devices/simhca.roce.0/infiniband/irdma0
vm_check "auxiliary device simhca.roce.1 has infiniband/mlx5_0" \
	test -d /sys/bus/auxiliary/devices/simhca.roce.1/infiniband/mlx5_0
vm_check "irdma0's parent is simhca.roce.0" \
	vm_expect_eq simhca.roce.0 "$(basename "$(readlink -f /sys/class/infiniband/irdma0/device)")"
vm_check "auxiliary driver simhca.roce binds simhca.roce.0" \
	test -e /sys/bus/auxiliary/drivers/simhca.roce/simhca.roce.0
vm_check "node_type is CA" grep -q '^1: CA' /sys/class/infiniband/irdma0/node_type
vm_check "link layer Ethernet" grep -qx Ethernet /sys/class/infiniband/irdma0/ports/1/link_layer
uverbs=$(grep -lx irdma0 /sys/class/infiniband_verbs/uverbs*/ibdev 2>/dev/null | head -n 1)
vm_check "irdma0 has a uverbs char device" test -n "$uverbs" -a -c "/dev/infiniband/$(basename "$(dirname "$uverbs")")"
vm_diag "ibv_devinfo -l: $(ibv_devinfo -l 2>&1 | tr '\n' ' ')"
vm_check "the MAD layer opened QP1 (GSI) on irdma0/1" sh -c 'rdma res show qp link irdma0/1 | grep -q "lqpn 1 type GSI"'
vm_check "irdma0 has a umad device" sh -c 'grep -qx irdma0 /sys/class/infiniband_mad/umad*/ibdev'

# --- bad control input -----------------------------------------------------------

vm_check "new_device refuses a name with %s" expect_fail ctl_write new_device "bad%s veth0"
vm_check "new_device refuses two %d" expect_fail ctl_write new_device "a%db%d veth0"
vm_check "new_device refuses a '/' in the name" expect_fail ctl_write new_device "a/b veth0"
vm_check "new_device refuses an unknown netdev" expect_fail ctl_write new_device "x%d nosuchdev0"
vm_check "new_device refuses a non-Ethernet netdev (lo)" expect_fail ctl_write new_device "x%d lo"
vm_check "new_device refuses a used ID" expect_fail ctl_write new_device "x%d veth0 1"
vm_check "new_device refuses a taken fixed name" expect_fail ctl_write new_device "irdma0 veth0"
vm_check "del_device refuses an unknown ID" expect_fail ctl_write del_device 999
vm_check "failed requests left nothing behind" vm_expect_eq 2 "$(wc -l <"$CTL/list")" "devices in list"

# --- GIDs from the netdev's addresses ------------------------------------------------

IP0=192.0.2.1
GID0=$(gid_hex_v4 $IP0)
vm_check "ip addr add $IP0/24 dev veth0" ip addr add $IP0/24 dev veth0
vm_check "irdma0 gets a RoCE v2 GID ::ffff:$IP0" poll 5 gid_index "" irdma0 "$GID0" "RoCE v2"
vm_diag "RoCE v2 GID index: $(gid_index "" irdma0 "$GID0" "RoCE v2")"
vm_check "irdma0 gets a RoCE v1 GID ::ffff:$IP0" poll 5 gid_index "" irdma0 "$GID0" "IB/RoCE v1"
n=$(gid_index "" irdma0 "$GID0" "RoCE v2")
vm_check "that GID's netdev is veth0" vm_expect_eq veth0 \
	"$(cat "/sys/class/infiniband/irdma0/ports/1/gid_attrs/ndevs/${n:-0}" 2>&1)"
vm_check "mlx5_0 does not get veth0's address" expect_fail gid_index "" mlx5_0 "$GID0" "RoCE v2"

# --- port state follows the link ---------------------------------------------------------

vm_check "irdma0 port ACTIVE with veth0/veth1 up" poll 5 grep -q ACTIVE /sys/class/infiniband/irdma0/ports/1/state
vm_check "rdma link says ACTIVE LINK_UP" sh -c 'rdma link show irdma0/1 | grep -q "state ACTIVE physical_state LINK_UP"'
# Port events: a kprobe on ib_dispatch_event shows what the notifier dispatches
# (struct ib_event: device at +0, port_num at +8, event at +16;
# IB_EVENT_PORT_ACTIVE = 9, IB_EVENT_PORT_ERR = 10).
TR=/sys/kernel/tracing
kprobe=0
if [ -w $TR/kprobe_events ] &&
	echo 'p:simhca_portev ib_dispatch_event port=+8(%di):u32 ev=+16(%di):s32' >>$TR/kprobe_events 2>/dev/null; then
	echo >$TR/trace && echo 1 >$TR/events/kprobes/simhca_portev/enable && kprobe=1
fi
[ $kprobe = 1 ] || vm_diag "no kprobe on ib_dispatch_event: port events not checked"
vm_check "ip link set veth1 down (veth0 loses carrier)" ip link set veth1 down
vm_check "irdma0 port DOWN without carrier" poll 5 grep -q DOWN /sys/class/infiniband/irdma0/ports/1/state
vm_check "ip link set veth1 up" ip link set veth1 up
vm_check "irdma0 port ACTIVE again" poll 5 grep -q ACTIVE /sys/class/infiniband/irdma0/ports/1/state
if [ $kprobe = 1 ]; then
	vm_check "IB_EVENT_PORT_ERR dispatched on carrier loss" poll 5 grep -q 'port=1 ev=10' $TR/trace
	vm_check "IB_EVENT_PORT_ACTIVE dispatched on carrier gain" poll 5 grep -q 'port=1 ev=9' $TR/trace
	vm_diag "$(grep simhca_portev $TR/trace)"
	echo 0 >$TR/events/kprobes/simhca_portev/enable
	echo '-:simhca_portev' >>$TR/kprobe_events
fi
vm_check "ip link set veth0 down" ip link set veth0 down
vm_check "irdma0 port DOWN when veth0 is down" poll 5 grep -q DOWN /sys/class/infiniband/irdma0/ports/1/state
vm_check "rdma link says DOWN DISABLED" sh -c 'rdma link show irdma0/1 | grep -q "state DOWN physical_state DISABLED"'
vm_check "ip link set veth0 up" ip link set veth0 up
vm_check "irdma0 port ACTIVE after veth0 up" poll 5 grep -q ACTIVE /sys/class/infiniband/irdma0/ports/1/state

# --- netns moves (exclusive mode) ------------------------------------------------------------

vm_check "rdma system set netns exclusive" rdma system set netns exclusive ||
	vm_fail "cannot switch to exclusive mode (is another netns there already?)"
vm_check "ip netns add pod1" ip netns add pod1
vm_check "rdma dev set irdma0 netns pod1" rdma dev set irdma0 netns pod1
vm_check "irdma0 is gone from the host's rdma dev" expect_fail rdma_dev_has "" irdma0
vm_check "irdma0 is gone from the host's /sys/class/infiniband" test ! -e /sys/class/infiniband/irdma0
vm_check "simhca.roce.0/infiniband/ is empty on the host" \
	test -z "$(ls /sys/bus/auxiliary/devices/simhca.roce.0/infiniband/ 2>/dev/null)"
vm_check "pod1's rdma dev lists irdma0" rdma_dev_has pod1 irdma0
vm_check "pod1 sees /sys/class/infiniband/irdma0" ip netns exec pod1 test -d /sys/class/infiniband/irdma0
vm_check "mlx5_0 stays on the host" rdma_dev_has "" mlx5_0
vm_check "list still reports irdma0 on veth0" vm_expect_eq "irdma0 veth0" "$(list_field 0 2) $(list_field 0 3)"
vm_check "pod1's rdma link does not show veth0 (not in pod1)" vm_expect_eq "" "$(link_netdev pod1 irdma0)"

vm_check "ip link set veth0 netns pod1" ip link set veth0 netns pod1
vm_check "irdma0 stays registered after its netdev moved" rdma_dev_has pod1 irdma0
vm_check "list still binds irdma0 to veth0" vm_expect_eq veth0 "$(list_field 0 3)"
vm_check "pod1: ip addr add $IP0/24 dev veth0" ip -n pod1 addr add $IP0/24 dev veth0
vm_check "pod1: ip link set veth0 up" ip -n pod1 link set veth0 up
vm_check "pod1's rdma link: irdma0/1 netdev veth0" vm_expect_eq veth0 "$(link_netdev pod1 irdma0)"
vm_check "pod1 sees the RoCE v2 GID ::ffff:$IP0 on irdma0" poll 5 gid_index pod1 irdma0 "$GID0" "RoCE v2"
vm_check "irdma0 port ACTIVE in pod1" poll 5 sh -c 'ip netns exec pod1 cat /sys/class/infiniband/irdma0/ports/1/state | grep -q ACTIVE'

# A device staying on the host while its netdev visits pod1.
vm_check "ip link set veth2 netns pod1" ip link set veth2 netns pod1
vm_check "mlx5_0 stays registered on the host" rdma_dev_has "" mlx5_0
vm_check "host's rdma link: mlx5_0 shows no netdev (veth2 is in pod1)" vm_expect_eq "" "$(link_netdev "" mlx5_0)"
vm_check "mlx5_0 port DOWN (the move closed veth2)" poll 5 grep -q DOWN /sys/class/infiniband/mlx5_0/ports/1/state
vm_check "ip -n pod1 link set veth2 netns 1 (back)" ip -n pod1 link set veth2 netns 1
vm_check "ip link set veth2 up" ip link set veth2 up
vm_check "host's rdma link: mlx5_0/1 netdev veth2 again" vm_expect_eq veth2 "$(link_netdev "" mlx5_0)"
vm_check "mlx5_0 port ACTIVE again" poll 5 grep -q ACTIVE /sys/class/infiniband/mlx5_0/ports/1/state

# Deleting pod1 destroys veth0 (a veth dies with its netns) and returns irdma0.
bounded 30 ip netns del pod1
rc=$?
[ $rc = 124 ] && { vm_not_ok "ip netns del pod1"; hang_bail "ip netns del"; }
if [ $rc = 0 ]; then vm_ok "ip netns del pod1"; else vm_not_ok "ip netns del pod1"; fi
vm_check "irdma0 returns to init_net with its name" poll 10 rdma_dev_has "" irdma0
vm_check "irdma0 is back under simhca.roce.0/infiniband/" \
	poll 5 test -d /sys/bus/auxiliary/devices/simhca.roce.0/infiniband/irdma0
vm_check "veth1 went with veth0" poll 10 expect_fail ip link show veth1
vm_check "irdma0 let go of the destroyed veth0 (list shows -)" poll 5 list_is 0 3 -
vm_check "rdma link: irdma0/1 has no netdev" vm_expect_eq "" "$(link_netdev "" irdma0)"
vm_check "irdma0 port DOWN without a netdev" grep -q DOWN /sys/class/infiniband/irdma0/ports/1/state
vm_check "irdma0's RoCE GID for $IP0 is gone" expect_fail gid_index "" irdma0 "$GID0" "RoCE v2"

# --- a bound netdev is destroyed on the host ------------------------------------------------

bounded 30 ip link del veth2
rc=$?
[ $rc = 124 ] && { vm_not_ok "ip link del veth2 (bound to mlx5_0) returns"; hang_bail "ip link del veth2"; }
if [ $rc = 0 ]; then vm_ok "ip link del veth2 (bound to mlx5_0) returns"; else vm_not_ok "ip link del veth2 (bound to mlx5_0) returns"; fi
vm_check "mlx5_0 stays registered without its netdev" rdma_dev_has "" mlx5_0
vm_check "list shows mlx5_0 without netdev" vm_expect_eq "mlx5_0 -" "$(list_field 1 2) $(list_field 1 3)"
vm_check "mlx5_0 port DOWN" grep -q DOWN /sys/class/infiniband/mlx5_0/ports/1/state

# --- del_device ---------------------------------------------------------------------------------

vm_check "del_device 1" ctl_write del_device 1
vm_check "mlx5_0 is gone" expect_fail rdma_dev_has "" mlx5_0
vm_check "simhca.roce.1 is gone" test ! -e /sys/bus/auxiliary/devices/simhca.roce.1
vm_check "list no longer has ID 1" vm_expect_eq "" "$(list_field 1 2)"

# --- fixed name, explicit ID, a device bound to a macvlan -------------------------------------

vm_check "veth pair veth4/veth5" vm_veth veth4 veth5
vm_check "new_device 'rocep0s1 veth4 7' (fixed name, ID 7)" ctl_write new_device "rocep0s1 veth4 7"
vm_check "list: 7 rocep0s1 veth4 simhca.roce.7" vm_expect_eq "7 rocep0s1 veth4 simhca.roce.7" "$(grep '^7 ' "$CTL/list")"
vm_check "ip link add mv0 link veth5 type macvlan" ip link add mv0 link veth5 type macvlan mode bridge
vm_check "new_device 'erdma_%d mv0'" ctl_write new_device "erdma_%d mv0"
ER=$(awk '$3 == "mv0" { print $2 }' "$CTL/list")
vm_check "erdma_0 on mv0" vm_expect_eq erdma_0 "$ER"
vm_check "rdma link: erdma_0/1 netdev mv0" vm_expect_eq mv0 "$(link_netdev "" erdma_0)"

# --- unbind/bind through the auxiliary bus --------------------------------------------------

vm_check "unbind simhca.roce.7 unregisters rocep0s1" sh -c \
	'echo simhca.roce.7 >/sys/bus/auxiliary/drivers/simhca.roce/unbind && ! rdma dev show rocep0s1 >/dev/null 2>&1'
vm_check "bind simhca.roce.7 registers rocep0s1 again" sh -c \
	'echo simhca.roce.7 >/sys/bus/auxiliary/drivers/simhca.roce/bind && rdma dev show rocep0s1 >/dev/null'
vm_check "rdma link: rocep0s1/1 netdev veth4" vm_expect_eq veth4 "$(link_netdev "" rocep0s1)"

# --- races: netdev destruction against del_device ------------------------------------------

race_once() { # a device on vr0; destroy vr0 and the device at the same time
	ip link add vr0 type veth peer name vr1 || return 1
	ctl_write new_device "race%d vr0 100" || return 1
	ip link del vr0 &
	local pid=$!
	ctl_write del_device 100 || return 1
	wait "$pid"
	! ip link show vr0 >/dev/null 2>&1 && [ -z "$(list_field 100 2)" ]
}
race_loop() {
	local i
	for i in $(seq 10); do race_once || { echo "round $i failed"; return 1; }; done
}
bounded 120 race_loop
rc=$?
[ $rc = 124 ] && { vm_not_ok "10 rounds of ip link del racing del_device"; hang_bail "race"; }
if [ $rc = 0 ]; then vm_ok "10 rounds of ip link del racing del_device"; else vm_not_ok "10 rounds of ip link del racing del_device"; fi

# --- InfiniBand ports ---------------------------------------------------------------------------

ib_attr_is() { # ib_attr_is NS DEV FILE VALUE: /sys/class/infiniband/DEV/FILE as NS sees it
	vm_expect_eq "$4" "$(in_ns "$1" cat "/sys/class/infiniband/$2/$3" 2>&1)" "$2 $3"
}

# ipoib_if NS ID: the IPoIB netdev(s) in NS whose parent is simhca.roce.ID
# shellcheck disable=SC2016 # the inner script expands its own "$1"
ipoib_if() {
	in_ns "$1" sh -c 'for n in /sys/class/net/*; do
		[ "$(cat "$n/type" 2>/dev/null)" = 32 ] || continue
		[ "$(basename "$(readlink -f "$n/device")")" = "simhca.roce.$1" ] && echo "${n##*/}"
	done; true' sh "$2"
}

ifindex_gone() { # ifindex_gone IFINDEX NS...: no netdev has IFINDEX in init_net nor in NS
	local ns
	for ns in "" "$@"; do
		in_ns "$ns" ip -o link show | grep -q "^$1: " && return 1
	done
	return 0
}

vm_check "veth pair vib0/vib1" vm_veth vib0 vib1
vm_check "new_device 'ibp%d - 20 ib' (IB, no netdev)" ctl_write new_device "ibp%d - 20 ib"
vm_check "list: 20 ibp0 - simhca.roce.20" vm_expect_eq "20 ibp0 - simhca.roce.20" "$(grep '^20 ' "$CTL/list")"
vm_check "new_device 'ibv%d vib0 21 ib' (IB, link state from vib0)" ctl_write new_device "ibv%d vib0 21 ib"
vm_check "list: 21 ibv0 vib0 simhca.roce.21" vm_expect_eq "21 ibv0 vib0 simhca.roce.21" "$(grep '^21 ' "$CTL/list")"
vm_check "new_device refuses '-' for a RoCE device" expect_fail ctl_write new_device "x%d - 22"
vm_check "new_device refuses IB ID 49150 (LID = ID + 2 > 0xbfff)" expect_fail ctl_write new_device "x%d - 49150 ib"
vm_check "new_device refuses an unknown keyword" expect_fail ctl_write new_device "x%d vib0 22 roce"
vm_check "ibp0: link layer InfiniBand" ib_attr_is "" ibp0 ports/1/link_layer InfiniBand
vm_check "ibp0: node_guid 0200:5348:4341:0014 (from ID 20)" ib_attr_is "" ibp0 node_guid 0200:5348:4341:0014
vm_check "ibp0: lid 0x16 (ID + 2)" ib_attr_is "" ibp0 ports/1/lid 0x16
vm_check "ibp0: sm_lid 0x1" ib_attr_is "" ibp0 ports/1/sm_lid 0x1
vm_check "ibp0: lmc 0, sm_sl 0" vm_expect_eq "0 0" "$(cat $IBS/ibp0/ports/1/lid_mask_count $IBS/ibp0/ports/1/sm_sl | xargs)"
vm_check "ibp0: state 4: ACTIVE" ib_attr_is "" ibp0 ports/1/state "4: ACTIVE"
vm_check "ibp0: phys_state 5: LinkUp" ib_attr_is "" ibp0 ports/1/phys_state "5: LinkUp"
vm_check "ibp0: rate 400 Gb/sec (4X NDR)" ib_attr_is "" ibp0 ports/1/rate "400 Gb/sec (4X NDR)"
vm_check "ibp0: GID 0 fe80::0200:5348:4341:0014" \
	ib_attr_is "" ibp0 ports/1/gids/0 fe80:0000:0000:0000:0200:5348:4341:0014
vm_check "ibp0: P_Key 0 0xffff" ib_attr_is "" ibp0 ports/1/pkeys/0 0xffff
vm_check "ibp0: cap_mask has IB_PORT_CM_SUP (set by ib_cm)" \
	test $(($(cat $IBS/ibp0/ports/1/cap_mask) & 0x10000)) != 0
vm_check "rdma link: ibp0/1 lid 22 sm_lid 1, no netdev" \
	vm_expect_eq "link ibp0/1 subnet_prefix fe80:0000:0000:0000 lid 22 sm_lid 1 lmc 0 state ACTIVE physical_state LINK_UP" \
	"$(rdma link show ibp0/1 | sed 's/ *$//')"
vm_check "the MAD layer opened QP0 (SMI) and QP1 (GSI) on ibp0/1" sh -c \
	'rdma res show qp link ibp0/1 | grep -q "lqpn 0 type SMI" && rdma res show qp link ibp0/1 | grep -q "lqpn 1 type GSI"'
vm_check "ibp0 has umad and issm devices" sh -c \
	'grep -qx ibp0 /sys/class/infiniband_mad/umad*/ibdev && grep -qx ibp0 /sys/class/infiniband_mad/issm*/ibdev'
vm_check "ibv0: lid 0x17" ib_attr_is "" ibv0 ports/1/lid 0x17
vm_check "ip link set vib1 down (vib0 loses carrier)" ip link set vib1 down
vm_check "ibv0 port DOWN, Polling" poll 5 sh -c \
	"grep -qx '1: DOWN' $IBS/ibv0/ports/1/state && grep -qx '2: Polling' $IBS/ibv0/ports/1/phys_state"
vm_check "ip link set vib1 up" ip link set vib1 up
vm_check "ibv0 port ACTIVE again" poll 5 grep -qx "4: ACTIVE" $IBS/ibv0/ports/1/state

# --- port counters (PMA counters/ and hw_counters/) ------------------------------------------

# cnt_are DEV DIR NAME=VALUE...: ports/1/DIR/NAME of DEV reads VALUE, for each
cnt_are() {
	local dev=$1 dir=$2 kv got bad=0
	shift 2
	for kv in "$@"; do
		got=$(cat "$IBS/$dev/ports/1/$dir/${kv%%=*}" 2>&1)
		[ "$got" = "${kv#*=}" ] || { echo "$dev $dir/${kv%%=*}: '$got', expected '${kv#*=}'"; bad=1; }
	done
	return $bad
}

# cnt_all_zero DEV DIR: every counter in ports/1/DIR of DEV reads 0
cnt_all_zero() {
	local f bad=0 n=0
	for f in "$IBS/$1/ports/1/$2"/*; do
		[ "${f##*/}" = lifespan ] && continue
		n=$((n + 1))
		[ "$(cat "$f" 2>&1)" = 0 ] || { echo "$f: $(cat "$f" 2>&1)"; bad=1; }
	done
	[ $n -gt 0 ] || { echo "no counter in $IBS/$1/ports/1/$2"; return 1; }
	return $bad
}

# ctl_refused FILE TEXT ERROR: writing TEXT to $CTL/FILE fails with ERROR (strerror)
ctl_refused() {
	local err
	if err=$({ printf '%s\n' "$2" >"$CTL/$1"; } 2>&1); then
		echo "'$2' was accepted"
		return 1
	fi
	case "$err" in *"$3"*) return 0 ;; esac
	echo "'$2': $err (expected $3)"
	return 1
}

vm_check "set_counters exists" test -w "$CTL/set_counters"
vm_diag "rocep0s1 ports/1/counters: $(cd $IBS/rocep0s1/ports/1/counters && echo *)"
vm_diag "rocep0s1 ports/1/hw_counters: $(cd $IBS/rocep0s1/ports/1/hw_counters && echo *)"
# The extended table: ClassPortInfo says IB_PMA_CLASS_CAP_EXT_WIDTH.
vm_check "rocep0s1 (RoCE) has the extended counters table" test -r $IBS/rocep0s1/ports/1/counters/unicast_xmit_packets -a \
	-r $IBS/rocep0s1/ports/1/counters/port_xmit_wait
vm_check "ibp0 (IB) has the extended counters table" test -r $IBS/ibp0/ports/1/counters/multicast_rcv_packets
vm_check "rocep0s1 counters/ all 0 at first" cnt_all_zero rocep0s1 counters
vm_check "rocep0s1 hw_counters/ all 0 at first" cnt_all_zero rocep0s1 hw_counters
vm_check "ibp0 counters/ all 0 at first" cnt_all_zero ibp0 counters
vm_check "set_counters: 7 (rocep0s1) data, packets, errors" ctl_write set_counters \
	"7 port_xmit_data 5000000000000 port_rcv_data 0x100000000 port_xmit_packets 12345678901 port_rcv_packets 3 unicast_xmit_packets 11 multicast_rcv_packets 12 symbol_error 65535 link_downed 255 port_rcv_errors 7 port_xmit_discards 8 local_link_integrity_errors 15 excessive_buffer_overrun_errors 9 VL15_dropped 10 port_xmit_wait 4294967295"
vm_check "rocep0s1 counters/ show them (64-bit data and packets)" cnt_are rocep0s1 counters \
	port_xmit_data=5000000000000 port_rcv_data=4294967296 port_xmit_packets=12345678901 port_rcv_packets=3 \
	unicast_xmit_packets=11 unicast_rcv_packets=0 multicast_rcv_packets=12 symbol_error=65535 link_downed=255 \
	port_rcv_errors=7 port_xmit_discards=8 local_link_integrity_errors=15 excessive_buffer_overrun_errors=9 \
	VL15_dropped=10 port_xmit_wait=4294967295 link_error_recovery=0
vm_check "set_counters: 7 hw counters" ctl_write set_counters "7 np_cnp_sent 21 rp_cnp_handled 22 out_of_sequence 23"
vm_check "rocep0s1 hw_counters/ show them" cnt_are rocep0s1 hw_counters np_cnp_sent=21 rp_cnp_handled=22 out_of_sequence=23 \
	rp_cnp_ignored=0
vm_diag "$(cd $IBS/rocep0s1/ports/1 && grep -H . counters/port_xmit_data counters/port_rcv_data counters/symbol_error \
	hw_counters/np_cnp_sent hw_counters/lifespan)"
vm_diag "$(rdma statistic show link rocep0s1/1)"
vm_check "rdma statistic shows rocep0s1's np_cnp_sent 21" sh -c 'rdma statistic show link rocep0s1/1 | grep -q " np_cnp_sent 21 "'
vm_check "set_counters: 20 (ibp0)" ctl_write set_counters "20 port_xmit_data 40 port_rcv_packets 41 link_downed 1 out_of_buffer 42"
ibp0_cnt_set() {
	cnt_are ibp0 counters port_xmit_data=40 port_rcv_packets=41 link_downed=1 port_rcv_data=0 &&
		cnt_are ibp0 hw_counters out_of_buffer=42
}
vm_check "ibp0 counters/ and hw_counters/ show them" ibp0_cnt_set
vm_check "ibp0 (IB) has no congestion hw_counters" test ! -e $IBS/ibp0/ports/1/hw_counters/np_cnp_sent
vm_check "rocep0s1's counters are its own" cnt_are rocep0s1 counters port_xmit_data=5000000000000 link_downed=255
vm_check "set_counters refuses an unknown ID (ENOENT)" ctl_refused set_counters "999 port_xmit_data 1" "No such file"
vm_check "set_counters refuses an unknown name (EINVAL)" ctl_refused set_counters "7 port_bogus 1" "Invalid argument"
vm_check "set_counters refuses a non-number (EINVAL)" ctl_refused set_counters "7 port_rcv_data 12x" "Invalid argument"
vm_check "set_counters refuses a missing value (EINVAL)" ctl_refused set_counters "7 port_rcv_data" "Invalid argument"
vm_check "set_counters refuses a value too wide for the field (ERANGE)" ctl_refused set_counters "7 symbol_error 65536" "out of range"
vm_check "set_counters refuses a RoCE-only hw counter on ibp0 (EINVAL)" ctl_refused set_counters "20 np_cnp_sent 1" "Invalid argument"
vm_check "set_counters refuses a write with one bad pair (EINVAL)" ctl_refused set_counters \
	"7 port_rcv_data 99 port_bogus 1" "Invalid argument"
cnt_unchanged() {
	cnt_are rocep0s1 counters port_rcv_data=4294967296 symbol_error=65535 && ibp0_cnt_set
}
vm_check "refused writes changed nothing" cnt_unchanged

# IPoIB (measured, README "InfiniBand devices"): its netdev goes with the ib_device
# (the ib_core client is removed and added again around a netns move): 6.1
# creates the new one in init_net, 6.17 and later in the device's netns.
case $(uname -r) in
6.1.*) ipoib_ns=init ;;
*) if [ "$(uname -r | awk -F'[.-]' '{ print $1 * 1000 + $2 }')" -ge 6017 ]; then ipoib_ns=dev; else ipoib_ns=; fi ;;
esac
[ -n "$ipoib_ns" ] || vm_diag "kernel $(uname -r): IPoIB netns not known, not asserted"
ipoib_where() { # ipoib_where NS: NS itself ("dev") or "" (init) as $ipoib_ns wants
	if [ "$ipoib_ns" = dev ]; then echo "$1"; fi
}
vm_check "modprobe ib_ipoib" modprobe ib_ipoib
vm_check "ib_ipoib creates a netdev for ibp0" poll 10 test -n "$(ipoib_if "" 20)"
IPIF=$(ipoib_if "" 20)
IPIFX=$(cat "/sys/class/net/$IPIF/ifindex" 2>/dev/null)
vm_diag "ibp0's IPoIB netdev: $IPIF (ifindex $IPIFX)"
vm_check "$IPIF is named ib%d" vm_expect_eq 1 "$(echo "$IPIF" | grep -cx 'ib[0-9]*')"
vm_check "$IPIF's hardware address ends with ibp0's GID 0" sh -c \
	"grep -q 'fe:80:00:00:00:00:00:00:02:00:53:48:43:41:00:14\$' /sys/class/net/$IPIF/address"
vm_check "ib_ipoib creates a netdev for ibv0" poll 10 test -n "$(ipoib_if "" 21)"
vm_check "ip link set $IPIF up" ip link set "$IPIF" up
vm_check "$IPIF is UP, NO-CARRIER (no SA answers its broadcast join)" sh -c \
	"ip -o link show '$IPIF' | grep -q '<NO-CARRIER,.*,UP>'"
vm_check "ip netns add pod3" ip netns add pod3
vm_check "rdma dev set ibp0 netns pod3" rdma dev set ibp0 netns pod3
vm_check "$IPIF's receives were flushed on close (no 'timing out' in the kernel log)" \
	sh -c "! dmesg | grep -q '$IPIF: timing out'"
vm_check "pod3's rdma dev lists ibp0" rdma_dev_has pod3 ibp0
vm_check "pod3: ibp0 port ACTIVE, lid 0x16" sh -c \
	"ip netns exec pod3 grep -qx '4: ACTIVE' $IBS/ibp0/ports/1/state && ip netns exec pod3 grep -qx 0x16 $IBS/ibp0/ports/1/lid"
vm_check "$IPIF (ifindex $IPIFX) was destroyed" ifindex_gone "$IPIFX" pod3
if [ -n "$ipoib_ns" ]; then
	ns=$(ipoib_where pod3)
	other=pod3
	[ -n "$ns" ] && other=
	vm_check "a new IPoIB netdev for ibp0 in ${ns:-init_net}" poll 10 test -n "$(ipoib_if "$ns" 20)"
	vm_check "none in ${other:-init_net}" vm_expect_eq "" "$(ipoib_if "$other" 20)"
	vm_check "it is named $IPIF in init_net (6.1), ib0 in pod3 (later)" \
		vm_expect_eq "$([ -n "$ns" ] && echo ib0 || echo "$IPIF")" "$(ipoib_if "$ns" 20)"
fi
bounded 30 ip netns del pod3
rc=$?
[ $rc = 124 ] && { vm_not_ok "ip netns del pod3"; hang_bail "ip netns del pod3"; }
if [ $rc = 0 ]; then vm_ok "ip netns del pod3"; else vm_not_ok "ip netns del pod3"; fi
vm_check "ibp0 returns to init_net" poll 10 rdma_dev_has "" ibp0
vm_check "ibp0 has an IPoIB netdev in init_net" poll 10 test -n "$(ipoib_if "" 20)"
IPIF=$(ipoib_if "" 20)
IPIFX=$(cat "/sys/class/net/$IPIF/ifindex" 2>/dev/null)
vm_diag "ibp0's IPoIB netdev: $IPIF (ifindex $IPIFX)"
# A netdev moved on its own: the kernel gives it back (netns_refund) ...
vm_check "ip netns add pod4" ip netns add pod4
vm_check "ip link set $IPIF netns pod4" ip link set "$IPIF" netns pod4
vm_check "ibp0 stays in init_net" rdma_dev_has "" ibp0
bounded 30 ip netns del pod4
rc=$?
[ $rc = 124 ] && { vm_not_ok "ip netns del pod4"; hang_bail "ip netns del pod4"; }
if [ $rc = 0 ]; then vm_ok "ip netns del pod4"; else vm_not_ok "ip netns del pod4"; fi
vm_check "$IPIF comes back to init_net, same ifindex $IPIFX" poll 10 sh -c \
	"ip -o link show '$IPIF' | grep -q '^$IPIFX: $IPIF:'"
# ... but not when its device moves: it is destroyed, in whatever netns it is.
vm_check "ip netns add pod4" ip netns add pod4
vm_check "ip link set $IPIF netns pod4" ip link set "$IPIF" netns pod4
vm_check "rdma dev set ibp0 netns pod4" rdma dev set ibp0 netns pod4
vm_check "$IPIF (ifindex $IPIFX, in pod4) was destroyed" ifindex_gone "$IPIFX" pod4
if [ -n "$ipoib_ns" ]; then
	ns=$(ipoib_where pod4)
	vm_check "a new IPoIB netdev for ibp0 in ${ns:-init_net}" poll 10 test -n "$(ipoib_if "$ns" 20)"
fi
bounded 30 ip netns del pod4
rc=$?
[ $rc = 124 ] && { vm_not_ok "ip netns del pod4 (with ibp0)"; hang_bail "ip netns del pod4"; }
if [ $rc = 0 ]; then vm_ok "ip netns del pod4 (with ibp0)"; else vm_not_ok "ip netns del pod4 (with ibp0)"; fi
vm_check "ibp0 returns to init_net" poll 10 rdma_dev_has "" ibp0
vm_check "rmmod ib_ipoib" rmmod ib_ipoib
vm_check "del_device 20 and 21" sh -c "printf '20\n' >$CTL/del_device && printf '21\n' >$CTL/del_device"
vm_check "ibp0 and ibv0 are gone" sh -c '! rdma dev show | grep -Eq " (ibp0|ibv0): "'
vm_check "ip link del vib0" ip link del vib0

# --- rmmod with devices inside a netns -------------------------------------------------------

vm_check "ip netns add pod2" ip netns add pod2
vm_check "rdma dev set rocep0s1 netns pod2" rdma dev set rocep0s1 netns pod2
vm_check "rdma dev set irdma0 netns pod2" rdma dev set irdma0 netns pod2
vm_check "ip link set veth4 netns pod2" ip link set veth4 netns pod2
vm_check "pod2's rdma dev lists rocep0s1 and irdma0" sh -c \
	'ip netns exec pod2 rdma dev show | grep -q " rocep0s1: " && ip netns exec pod2 rdma dev show | grep -q " irdma0: "'
vm_check "pod2 reads rocep0s1's counters (set from init_net)" ip netns exec pod2 sh -c \
	"grep -qx 5000000000000 $IBS/rocep0s1/ports/1/counters/port_xmit_data && grep -qx 21 $IBS/rocep0s1/ports/1/hw_counters/np_cnp_sent"
# The netdev is looked up in the writer's netns; the device starts in init_net.
vm_check "veth pair veth8/veth9, veth8 in pod2" sh -c 'ip link add veth8 type veth peer name veth9 && ip link set veth8 netns pod2'
vm_check "new_device 'nsdev%d veth8' written from inside pod2" \
	ip netns exec pod2 sh -c 'printf "nsdev%%d veth8 9\n" >/sys/bus/simhca/new_device'
vm_check "list: 9 nsdev0 veth8 simhca.roce.9" vm_expect_eq "9 nsdev0 veth8 simhca.roce.9" "$(grep '^9 ' "$CTL/list")"
vm_check "nsdev0 is registered in init_net" rdma_dev_has "" nsdev0
vm_check "pod2's rdma dev does not list nsdev0 yet" expect_fail rdma_dev_has pod2 nsdev0
vm_check "rdma dev set nsdev0 netns pod2" rdma dev set nsdev0 netns pod2
vm_check "pod2's rdma link: nsdev0/1 netdev veth8" vm_expect_eq veth8 "$(link_netdev pod2 nsdev0)"
bounded 60 rmmod simhca
rc=$?
[ $rc = 124 ] && { vm_not_ok "rmmod simhca with devices in pod2"; hang_bail "rmmod simhca"; }
if [ $rc = 0 ]; then vm_ok "rmmod simhca with devices in pod2"; else vm_not_ok "rmmod simhca with devices in pod2"; fi
vm_check "pod2 has no RDMA device left" vm_expect_eq "" "$(ip netns exec pod2 rdma dev show 2>&1)"
vm_check "the host has no simhca device left" sh -c '! rdma dev show | grep -Eq " (erdma_0|irdma0|rocep0s1|mlx5_0): "'
vm_check "/sys/bus/simhca is gone" test ! -e $CTL
vm_check "simhca.roce.* auxiliary devices are gone" sh -c '! ls -d /sys/bus/auxiliary/devices/simhca.roce.* 2>/dev/null'
bounded 30 ip netns del pod2
rc=$?
[ $rc = 124 ] && { vm_not_ok "ip netns del pod2"; hang_bail "ip netns del pod2"; }
if [ $rc = 0 ]; then vm_ok "ip netns del pod2"; else vm_not_ok "ip netns del pod2"; fi
# veth4 died with pod2, taking veth5 and the macvlan on it along.
vm_check "mv0 went with veth4/veth5" poll 10 expect_fail ip link show mv0

# --- reload ----------------------------------------------------------------------------------------

vm_check "insmod simhca.ko again" insmod "$KO"
vm_check "veth pair veth6/veth7" vm_veth veth6 veth7
vm_check "new_device 'irdma%d veth6' reuses irdma0" sh -c \
	"printf 'irdma%%d veth6\n' >$CTL/new_device && grep -qx '0 irdma0 veth6 simhca.roce.0' $CTL/list"
bounded 60 rmmod simhca
rc=$?
[ $rc = 124 ] && { vm_not_ok "rmmod simhca again"; hang_bail "rmmod simhca"; }
if [ $rc = 0 ]; then vm_ok "rmmod simhca again"; else vm_not_ok "rmmod simhca again"; fi

# --- the kernel log ----------------------------------------------------------------------------------

bad=$(dmesg | grep -E 'WARNING:|BUG:|Oops|Call Trace|waiting for .* to become free|refcount_t|list_(add|del) corruption|INFO: task .* blocked' || true)
if [ -z "$bad" ]; then
	vm_ok "kernel log has no warnings, oopses or netdev refcount waits"
else
	vm_not_ok "kernel log has no warnings, oopses or netdev refcount waits"
	vm_diag "$bad"
fi
vm_diag "simhca kernel messages:" "$(dmesg | grep -i simhca | tail -n 20)"
vm_done
