#!/bin/bash
# Guest script: rdmans against the real ib_core + rdma_rxe of Debian's kernel.
# Device dump vs iproute2, netns mode get/set and EBUSY, GID table vs sysfs,
# rxe refusing to move, rename, and bad input that must change nothing.
set -u
. "$RDMANS_VM_LIB"
R=$RDMANS_BUILD_DIR/src/cli/rdmans

snapshot() { rdma -j dev; rdma -j link; ip -o link | vm_link_view; ip netns list; }

vm_load_rdma
vm_veth veth0 veth1
vm_veth veth2 veth3
ip addr add 192.168.77.1/24 dev veth0

vm_run_code 0 "link add rxe0 (rdmans)" "$R" link add rxe0 type rxe netdev veth0
vm_check "link add rxe1 (iproute2)" rdma link add rxe1 type rxe netdev veth2

# --- device dump equals iproute2's --------------------------------------
ours=$("$R" -j dev | jq -c '[.[] | {ifindex, ifname, node_guid, sys_image_guid}]')
theirs=$(rdma -j dev | jq -c '[.[] | {ifindex, ifname, node_guid, sys_image_guid}]')
vm_check "dev: index, name, GUIDs equal 'rdma -j dev'" vm_expect_eq "$theirs" "$ours"
ours=$("$R" -j dev | jq -c '[.[] | .ifname as $d | .ports[] | {ifname: $d, port, state, physical_state, netdev}] | sort_by(.ifname)')
theirs=$(rdma -j link | jq -c '[.[] | {ifname, port, state, physical_state, netdev}] | sort_by(.ifname)')
vm_check "dev: ports, states, netdevs equal 'rdma -j link'" vm_expect_eq "$theirs" "$ours"
vm_check "dev: protocol is roce" vm_expect_eq '["roce","roce"]' "$("$R" -j dev | jq -c '[.[].protocol]')"
vm_run_code 0 "dev show rxe1" "$R" dev show rxe1
vm_check "dev show rxe1 prints only rxe1" vm_expect_eq 1 "$(printf '%s\n' "$OUT" | grep -c ': rxe')"
vm_check "dev text names the netdev" vm_expect_contains "$OUT" "netdev veth2"

# --- GID table equals sysfs -----------------------------------------------
for i in $(seq 1 50); do
	grep -q "ffff:c0a8:4d01" /sys/class/infiniband/rxe0/ports/1/gids/* 2>/dev/null && break
	sleep 0.1
done
expected=$(cd /sys/class/infiniband/rxe0/ports/1 &&
	for g in gids/*; do
		n=${g#gids/}
		v=$(cat "$g")
		[ "$v" = 0000:0000:0000:0000:0000:0000:0000:0000 ] && continue
		t=$(cat "gid_attrs/types/$n" 2>/dev/null) || continue
		echo "$n $v $t $(cat "gid_attrs/ndevs/$n" 2>/dev/null)"
	done | sort -n)
ours=$("$R" -j gids rxe0 | jq -r '.[] | "\(.index) \(.gid) \(.type | sub("^IB$"; "IB/RoCE v1") | sub("^RoCE v1$"; "IB/RoCE v1")) \(.netdev // "")"' | sort -n)
vm_check "gids rxe0 equal sysfs" vm_expect_eq "$expected" "$ours"
v2=$("$R" -j gids rxe0 | jq -c '[.[] | select(.ipv4 == "192.168.77.1" and .ver == "v2") | .index]')
vm_check "gids: one RoCE v2 entry carries 192.168.77.1" vm_expect_eq 1 "$(echo "$v2" | jq length)"
vm_run_code 0 "gids table prints" "$R" gids
vm_check "gids header is show_gids'" vm_expect_contains "$OUT" "DEV          PORT INDEX GID"

# --- netns mode ---------------------------------------------------------------
vm_check "mode: shared at start" vm_expect_eq shared "$("$R" -j system | jq -r .netns_mode)"
vm_run_code 0 "mode: set exclusive while no netns exists" "$R" system set netns exclusive
vm_check "mode: rdma system agrees" vm_expect_contains "$(rdma system show)" "netns exclusive"
vm_check "mode: rdmans reads exclusive" vm_expect_eq exclusive "$("$R" -j system | jq -r .netns_mode)"

ip netns add pod1
before=$(snapshot)
vm_run_code 11 "mode: switching with a netns present is EBUSY" "$R" system set netns shared
vm_check "mode: EBUSY explains and names --persist" vm_expect_contains "$ERR" "--persist"
vm_check "mode: unchanged after EBUSY" vm_expect_eq exclusive "$("$R" -j system | jq -r .netns_mode)"
vm_run_code 0 "mode: --persist writes the boot default and exits 0" "$R" system set netns exclusive --persist
vm_check "mode: --persist file" grep -qx "options ib_core netns_mode=0" /etc/modprobe.d/rdmans-ib_core.conf
vm_run_code 0 "mode: system shows the persisted boot mode" "$R" -j system
vm_check "mode: boot source is our file" vm_expect_eq /etc/modprobe.d/rdmans-ib_core.conf "$(echo "$OUT" | jq -r .boot.source)"

# --- moving rxe: the driver cannot; nothing changes ----------------------------
vm_run_code 12 "move rxe0: refused" "$R" move rxe0 pod1
vm_check "move rxe0: says the driver cannot change namespace" vm_expect_contains "$ERR" "cannot change network namespace"
vm_run_code 12 "move rxe0 --with-netdev: refused" "$R" move rxe0 pod1 --with-netdev --netdev-name net1
vm_check "move: nothing changed (devices, links, namespaces)" vm_expect_eq "$before" "$(snapshot)"
vm_check "move --with-netdev: veth0 back home with its address" vm_expect_contains "$(ip -o addr show dev veth0)" "192.168.77.1/24"

# --- bad input: one line, own exit code, nothing changed --------------------------
vm_run_code 3 "unknown device" "$R" move nosuch0 pod1
vm_check "unknown device: message" vm_expect_contains "$ERR" "RDMA device nosuch0 not found in any network namespace"
vm_run_code 8 "target is where the device is" "$R" move rxe0 host
vm_check "already there: message" vm_expect_contains "$ERR" "already in the host netns"
vm_run_code 4 "unknown PID" "$R" move rxe0 999999
vm_run_code 6 "not a netns" "$R" move rxe0 /proc/self/ns/uts
vm_run_code 7 "device name with /" "$R" dev show rx/e0
vm_run_code 3 "dev show unknown" "$R" dev show nosuch0
vm_check "bad input changed nothing" vm_expect_eq "$before" "$(snapshot)"

# --- --all-netns ------------------------------------------------------------------
vm_run_code 0 "dev --all-netns" "$R" -j dev --all-netns
vm_check "--all-netns: both rxe devices, in the host" vm_expect_eq '["rxe0:true","rxe1:true"]' \
	"$(echo "$OUT" | jq -c '[.[] | "\(.ifname):\(.netns.host)"] | sort')"

# --- rename -----------------------------------------------------------------------
vm_run_code 0 "rename rxe1 to roce_a" "$R" dev set rxe1 name roce_a
vm_check "rename: rdma dev shows roce_a" vm_expect_contains "$(rdma dev)" "roce_a:"
vm_run_code 13 "rename onto a taken name" "$R" dev set roce_a name rxe0
vm_run_code 7 "rename to a name with /" "$R" dev set roce_a name a/b
vm_run_code 0 "rename back" "$R" dev set roce_a name rxe1
vm_check "rename: rxe1 again" vm_expect_contains "$(rdma dev)" "rxe1:"

# --- soft device delete --------------------------------------------------------------
vm_run_code 0 "link del rxe1" "$R" link del rxe1
vm_check "link del: gone" sh -c "! rdma dev | grep -q rxe1"

ip netns del pod1
vm_done
