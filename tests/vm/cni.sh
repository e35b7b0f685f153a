#!/bin/bash
# Guest script: the rdma-netns CNI plugin with simulated HCAs on Debian's
# 6.1 kernel (real ib_core), run as a runtime runs it. Main mode (by
# netdev, RDMA device and auxiliary id), chained after the real host-device
# plugin, DEL after the netns was deleted (a veth dies, a "physical" USB
# gadget netdev comes back renamed), DEL twice, ADD twice, shared mode, a
# soft-RoCE device that cannot move, 8 pods in parallel on 8 devices, and
# kills at random steps (with RDMANS_FAULT_INJECTION=true).
set -u
. "$RDMANS_VM_LIB"
. "$(dirname "$RDMANS_VM_LIB")/../netns/cni-lib.sh"
cni_vm_setup
DEVINFO=/var/run/k8s.cni.cncf.io/devinfo

on_host() { rdma dev show "$1" >/dev/null 2>&1; }
in_ns() { ip netns exec "$1" rdma dev show "$2" >/dev/null 2>&1; }
aux_of() { awk -v d="$1" '$2 == d { print $4 }' /sys/bus/simhca/list; }
state_files() { local f n=0; for f in /tmp/cni/state/*; do [ -f "$f" ] && n=$((n + 1)); done; echo $n; }
# Everything a test here may change, in few processes (each exec costs ~0.5 s under TCG):
# RDMA devices in every netns, links and addresses (not IPv6 link-local) of every
# netns, state, device-info and lease files.
addrs() {
	local line skip=0
	while IFS= read -r line; do
		if [[ $line == *"inet6 fe80"* ]]; then skip=1; continue; fi
		if ((skip)); then skip=0; continue; fi
		printf '%s\n' "$line"
	done <<<"$(ip "$@" addr | vm_link_view)"
}
snap() {
	local ns f
	"$R" dev --all-netns
	addrs
	for ns in /var/run/netns/*; do
		[ -e "$ns" ] || continue
		echo "netns ${ns##*/}"
		addrs -n "${ns##*/}"
	done
	while IFS= read -r f; do
		case "$f" in */locks/* | */last_reserved_ip* | */lock) ;; *) echo "$f" ;; esac
	done <<<"$(find /tmp/cni/state "$DEVINFO" "$HL" -type f 2>/dev/null | sort)"
}
# conf DEVICE-SELECTION-JQ [MORE-JQ...]: main mode, host-local on 10.56.0.0/24
conf() {
	local f='.'
	[ $# -eq 0 ] || f=$(printf '%s | ' "$@" | sed 's/ | $//')
	jq -nc --arg hl "$HL" '{cniVersion: "1.0.0", name: "rdmanet", type: "rdma-netns",
		ipam: {type: "host-local", subnet: "10.56.0.0/24", dataDir: $hl}}' | jq -c "$f"
}
pod_gid() { # pod_gid NETNS DEV IPV4: the pod's address is a RoCE v2 GID of DEV there
	"$R" -j gids "$2" --netns "$1" | jq -e --arg ip "$3" '.[] | select(.ipv4 == $ip and .ver == "v2")'
}

# (no /dev/fd in the guest: bash's <(...) needs it)
[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd
vm_load_rdma
vm_load_simhca
for i in 0 1 2 3 4 5 6 7; do
	vm_veth "h$i" "p$i" || vm_fail "veth h$i"
done
vm_veth hx px || vm_fail "veth hx"
dev0=$(vm_simhca_new "irdma%d" h0) || vm_fail "simhca on h0"
vm_check "simhca device irdma0 on h0" vm_expect_eq irdma0 "$dev0"
first=$(snap)
vm_check "the snapshot sees RDMA devices and addresses" sh -c 'case "$1" in *irdma0*"link/ether"*) exit 0 ;; esac; exit 1' _ "$first"

# --- shared mode: refused with the fix, nothing changed; STATUS says so -----------------------------
vm_diag "shared mode: refused with the fix, nothing changed; STATUS says so (t=${SECONDS}s)"
ip netns add pod-shared
CNI_NS=/var/run/netns/pod-shared
before=$(snap)
cni_expect_err "shared mode: ADD refused (102)" 102 "rdmans system set netns exclusive --persist" ADD "$(conf '.device = "h0"')"
vm_check "shared mode: nothing changed" vm_expect_eq "$before" "$(snap)"
cni_expect_err "shared mode: STATUS is 50" 50 "shared netns mode" STATUS "$(conf '.device = "h0"')"
ip netns del pod-shared
vm_check "exclusive mode once no other netns is left" vm_poll 60 "$R" system set netns exclusive
cni_expect_ok "exclusive mode: STATUS passes" STATUS "$(conf '.device = "h0"')"

# --- main mode --------------------------------------------------------------------------------------
vm_diag "main mode (t=${SECONDS}s)"
ip netns add pod1
CNI_NS=/var/run/netns/pod1
CNI_CID=c1
before=$(snap)
cni_expect_ok "ADD h0 (main mode, host-local)" ADD "$(conf '.device = "h0"' '.nccl = {NCCL_IB_GID_INDEX: "auto"}')"
res=$OUT
vm_check "irdma0 left the host, is in pod1" sh -c "! rdma dev show irdma0 && ip netns exec pod1 rdma dev show irdma0"
vm_check "h0 is net1 in pod1" sh -c "! ip link show h0 && ip -n pod1 link show net1"
ip4=$(printf '%s' "$res" | jq -r '.ips[0].address' | cut -d/ -f1)
vm_check "the result's address is on net1" vm_expect_contains "$(ip -n pod1 -o addr show dev net1)" "inet $ip4/24"
vm_check "ADD returned after the RoCE v2 GID of $ip4 appeared in pod1" pod_gid pod1 irdma0 "$ip4"
vm_check "rdma link in pod1: irdma0 on net1" vm_expect_contains "$(ip netns exec pod1 rdma link show irdma0/1)" "netdev net1"
st=$(find /tmp/cni/state -maxdepth 1 -type f)
vm_check "state names irdma0 and the pod" sh -c "grep -qx 'rdma.0.name=irdma0' '$st' && grep -qx 'pod_name=pod-a' '$st'"
di="$DEVINFO/cni/rdmanet-c1_net1"
vm_check "device-info file for Multus: type pci, rdma-device irdma0" vm_expect_eq "pci 1.1.0 irdma0" \
	"$(jq -r '"\(.type) \(.version) \(.pci["rdma-device"])"' "$di" 2>&1)"
cni_expect_ok "CHECK passes" CHECK "$(conf '.device = "h0"' ".prevResult = $res")"
"$R" move irdma0 host >/dev/null
cni_expect_err "CHECK notices the RDMA device left the pod" 107 "RDMA device irdma0 is no longer in the pod" CHECK "$(conf '.device = "h0"')"
"$R" move irdma0 pod1 >/dev/null
during=$(snap)
cni_expect_err "ADD twice: refused" 105 "already has net1" ADD "$(conf '.device = "h0"')"
cni_expect_err "another pod asking for irdma0 by name: told who has it" 101 "belongs to pod default/pod-a" \
	ADD "$(conf '.rdmaDevice = "irdma0"')" CNI_CONTAINERID=c9
vm_check "ADD twice / other pod: nothing changed" vm_expect_eq "$during" "$(snap)"
cni_expect_ok "DEL" DEL "$(conf '.device = "h0"')"
vm_check "DEL: irdma0 and h0 back on the host" sh -c "rdma dev show irdma0 && ip link show h0"
vm_check "DEL: the host's GID table has no pod address" sh -c "! $R -j gids irdma0 | jq -e --arg ip $ip4 '.[] | select(.ipv4 == \$ip)'"
vm_check "DEL: node as before (devices, links, addresses, state, devinfo, lease)" vm_expect_eq "$before" "$(snap)"
cni_expect_ok "DEL twice" DEL "$(conf '.device = "h0"')"

cni_expect_ok "ADD by rdmaDevice irdma0" ADD "$(conf '.rdmaDevice = "irdma0"')"
vm_check "by rdmaDevice: irdma0 and its netdev (as net1) in pod1" sh -c "ip netns exec pod1 rdma dev show irdma0 && ip -n pod1 link show net1"
cni_expect_ok "DEL (rdmaDevice)" DEL "$(conf '.rdmaDevice = "irdma0"')"
aux0=$(aux_of irdma0)
cni_expect_ok "ADD by runtimeConfig.deviceID $aux0 (as Multus passes it)" ADD \
	"$(conf ".runtimeConfig = {deviceID: \"$aux0\", CNIDeviceInfoFile: \"$DEVINFO/cni/multus-chose-this\"}")"
vm_check "by deviceID: irdma0 in pod1, h0 as net1" sh -c "ip netns exec pod1 rdma dev show irdma0 && ip -n pod1 link show net1"
vm_check "device-info written where Multus said" vm_expect_eq irdma0 "$(jq -r '.pci["rdma-device"]' "$DEVINFO/cni/multus-chose-this" 2>&1)"
cni_expect_ok "DEL (deviceID)" DEL "$(conf ".runtimeConfig = {deviceID: \"$aux0\"}")"
vm_check "main mode done: node as before" vm_expect_eq "$before" "$(snap)"

# one netdev, two RDMA devices bound to it: both go, both come back
vm_simhca_new "mlx5_%d" h3 >/dev/null && vm_simhca_new "mlx5_%d" h3 >/dev/null || vm_fail "two simhca devices on h3"
dev3b=$(awk '$3 == "h3" { print $2 }' /sys/bus/simhca/list | tail -1)
dev3a=$(awk '$3 == "h3" { print $2 }' /sys/bus/simhca/list | head -1)
before=$(snap)
cni_expect_ok "ADD h3, a netdev with two RDMA devices" ADD "$(conf '.device = "h3"')"
vm_check "both $dev3a and $dev3b are in pod1" sh -c "ip netns exec pod1 rdma dev show $dev3a && ip netns exec pod1 rdma dev show $dev3b"
vm_check "device-info lists both" vm_expect_eq "$dev3a,$dev3b" "$(jq -r '.pci["rdma-device"]' "$DEVINFO/cni/rdmanet-c1_net1" 2>&1)"
cni_expect_ok "DEL h3" DEL "$(conf '.device = "h3"')"
vm_check "both home: node as before" vm_expect_eq "$before" "$(snap)"

# --- a soft-RoCE device cannot move: the kernel refuses, nothing changes --------------------------
rdma link add rxe0 type rxe netdev hx || vm_fail "rdma link add rxe0"
before=$(snap)
cni_expect_err "rxe0 cannot change netns: ADD fails" 109 "cannot move RDMA device rxe0" ADD "$(conf '.device = "hx"')"
vm_check "rxe: everything undone (rxe0 and hx on the host, no lease)" vm_expect_eq "$before" "$(snap)"
cni_expect_err "a netdev without RDMA is refused by default" 103 "has no RDMA device" ADD "$(conf '.device = "p5"')"
rdma link delete rxe0

# --- a netns-local netdev: refused before anything changes (6.1 says so by the ethtool feature) ----
ip link add rncbr0 type bridge || vm_fail "ip link add rncbr0 type bridge"
before=$(snap)
cni_expect_err "a bridge (netns-local) is refused before any change" 109 "netdev rncbr0 cannot leave" \
	ADD "$(conf '.device = "rncbr0" | .requireRdma = false')"
cni_expect_ok "DEL after it succeeds" DEL "$(conf '.device = "rncbr0" | .requireRdma = false')"
vm_check "bridge: nothing changed, nothing left" vm_expect_eq "$before" "$(snap)"
ip link del rncbr0

# --- DEL after the netns was deleted ----------------------------------------------------------------
vm_diag "DEL after the netns was deleted (t=${SECONDS}s)"
before=$(snap)
cni_expect_ok "ADD h0 into pod1" ADD "$(conf '.device = "h0"')"
ip netns del pod1
cni_expect_ok "DEL after pod1 was deleted (veth died with it)" DEL "$(conf '.device = "h0"')"
vm_check "irdma0 is back on the host (the kernel returned it)" on_host irdma0
vm_check "no state, no lease, no device-info left" vm_expect_eq "0 0" \
	"$(state_files) $(find "$HL" "$DEVINFO" -type f ! -name 'last_reserved*' ! -name lock | wc -l)"
ip netns add pod1
vm_veth h0 p0 || vm_fail "veth h0 again"
dev0=$(vm_simhca_new "irdma%d" h0) || vm_fail "a new simhca device on the new h0"

# a "physical" netdev (USB gadget, no rtnl_link_ops) returns to the host when its netns dies
modprobe dummy_hcd && modprobe g_ether && vm_poll 60 ip link show usb0 || vm_fail "no USB gadget netdev (dummy_hcd + g_ether)"
ip link set usb0 alias "gadget uplink"
devu=$(vm_simhca_new "roce%d" usb0) || vm_fail "simhca on usb0"
ip netns add podu
before_u=$(snap)
cni_expect_ok "ADD usb0 (physical) into podu" ADD "$(conf '.device = "usb0"')" CNI_CONTAINERID=cu CNI_NETNS=/var/run/netns/podu
ip netns del podu
vm_check "the kernel hands usb0 back under its pod name" vm_poll 60 sh -c "ip -o link | grep -q 'net1\\|dev[0-9]'"
cni_expect_ok "DEL after podu was deleted" DEL "$(conf '.device = "usb0"')" CNI_CONTAINERID=cu CNI_NETNS=/var/run/netns/podu
vm_check "usb0 has its name and alias back, $devu is home" sh -c "ip -o link show usb0 | grep -q 'alias gadget uplink' && rdma dev show $devu"
ip netns add podu
vm_check "DEL after the netns died: node as before" vm_expect_eq "$before_u" "$(snap)"
ip netns del podu

# --- chained after the real host-device plugin ----------------------------------------------------
vm_diag "host-device: $(/usr/lib/cni/host-device </dev/null 2>&1 | head -n 1)"
aux1=$(aux_of "$(vm_simhca_new "mlx5_%d" h1)")
dev1=$(awk -v a="$aux1" '$4 == a { print $2 }' /sys/bus/simhca/list)
list=$(jq -nc --arg hl "$HL" --arg aux "$aux1" '{cniVersion: "1.0.0", name: "chainnet", plugins: [
	{type: "host-device", device: "h1", ipam: {type: "host-local", subnet: "10.57.0.0/24", dataDir: $hl}},
	{type: "rdma-netns", runtimeConfig: {deviceID: $aux}}]}')
before=$(snap)
if cni_list_add "$list"; then vm_ok "conflist ADD: host-device, then rdma-netns (deviceID $aux1)"; else
	vm_not_ok "conflist ADD"; cni_diag_run; fi
ipc=$(printf '%s' "${CNI_LIST_RESULT:-{\}}" | jq -r '.ips[0].address' | cut -d/ -f1)
vm_check "chained: $dev1 followed h1 (net1) into pod1" sh -c "ip netns exec pod1 rdma dev show $dev1 && ip -n pod1 link show net1"
vm_check "chained: the RoCE v2 GID of host-device's address $ipc is there" pod_gid pod1 "$dev1" "$ipc"
vm_check "chained: the result is host-device's, passed on" vm_expect_eq "net1 $ipc" \
	"$(printf '%s' "${CNI_LIST_RESULT:-{\}}" | jq -r '"\(.interfaces[0].name) \(.ips[0].address | split("/")[0])"')"
cni_run CHECK "$(cni_list_conf "$list" 1 "$CNI_LIST_RESULT")"
vm_check "chained: CHECK passes" vm_expect_eq 0 "$RC"
if cni_list_del "$list"; then vm_ok "conflist DEL (rdma-netns first, then host-device)"; else vm_not_ok "conflist DEL"; cni_diag_run; fi
ip link set h1 alias "" up # host-device leaves its alias behind and h1 down
vm_check "chained: $dev1 and h1 home, node as before" vm_expect_eq "$before" "$(snap)"
# chained without any hint: simhca has no PCI function to go by
nohint=$(printf '%s' "$list" | jq -c '.plugins[1] |= {type: "rdma-netns"}')
cni_run ADD "$(cni_list_conf "$nohint" 0)"
hd_res=$OUT
cni_expect_err "chained without deviceID/rdmaDevice: nothing to find the RDMA device by (103)" 103 "no PCI function" \
	ADD "$(cni_list_conf "$nohint" 1 "$hd_res")"
CNI_LIST_RESULT=$hd_res
if cni_list_del "$nohint"; then vm_ok "the runtime's DEL of the failed list"; else vm_not_ok "DEL of the failed list"; cni_diag_run; fi
ip link set h1 alias "" up
vm_check "chained refusal: node as before after the runtime's DEL" vm_expect_eq "$before" "$(snap)"

# --- 8 pods in parallel on 8 devices ----------------------------------------------------------------
vm_diag "8 pods in parallel on 8 devices (t=${SECONDS}s)"
declare -A rail
rail[0]=$dev0
rail[1]=$dev1
rail[3]=$dev3a
for i in 2 4 5 6 7; do rail[$i]=$(vm_simhca_new "mlx5_%d" "h$i") || vm_fail "simhca on h$i"; done
for i in 0 1 2 3 4 5 6 7; do ip netns add "rail$i"; done
before=$(snap)
for i in 0 1 2 3 4 5 6 7; do
	(cni_run ADD "$(conf ".device = \"h$i\"")" CNI_CONTAINERID="r$i" CNI_NETNS="/var/run/netns/rail$i"
		echo "$RC $OUT" >"/tmp/cni/par$i") &
done
wait
ok=0
for i in 0 1 2 3 4 5 6 7; do
	read -r rc out <"/tmp/cni/par$i"
	addr=$(printf '%s' "$out" | jq -r '.ips[0].address' 2>/dev/null | cut -d/ -f1)
	if [ "$rc" = 0 ] && in_ns "rail$i" "${rail[$i]}" && pod_gid "rail$i" "${rail[$i]}" "$addr" >/dev/null 2>&1; then
		ok=$((ok + 1))
	else
		vm_diag "rail$i: $rc $out"
	fi
done
vm_check "8 parallel ADDs: each pod has its RDMA device and the GID of its own address" vm_expect_eq 8 "$ok"
vm_check "no RDMA device with a netdev left on the host" vm_expect_eq "" \
	"$(for i in 0 1 2 3 4 5 6 7; do rdma dev show "${rail[$i]}" 2>/dev/null; done)"
for i in 0 1 2 3 4 5 6 7; do
	(cni_run DEL "$(conf ".device = \"h$i\"")" CNI_CONTAINERID="r$i"; echo "$RC" >"/tmp/cni/par$i") &
done
wait
vm_check "8 parallel DELs: every device home, node as before" vm_expect_eq "$before" "$(snap)"

# --- killed at every step and at random steps, then DEL: nothing left (test builds) -----------------
vm_diag "killed at every step and at random steps, then DEL: nothing left (test builds) (t=${SECONDS}s)"
# usb0 is "physical": when its netns dies with it inside, the kernel hands it back.
if [ "${RDMANS_FAULT_INJECTION:-false}" = true ]; then
	ip netns add podf
	CNI_NS=/var/run/netns/podf
	CNI_CID=f1
	fconf=$(conf '.device = "usb0"')
	before=$(snap)
	cni_run ADD "$fconf" RDMA_NETNS_FAULT_STEP=100000
	total=$(sed -n 's/.*ADD made \([0-9]*\) steps.*/\1/p' <<<"$ERR")
	cni_run DEL "$fconf"
	vm_check "ADD with an RDMA device counts its steps (${total:-none})" test -n "$total"
	total=${total:-1}
	bad=0
	for ((k = 1; k <= total; k++)); do
		cni_run ADD "$fconf" RDMA_NETNS_FAULT_STEP="$k"
		killed=$RC
		cni_run DEL "$fconf"
		now=$(snap)
		if [ "$killed" != 137 ] || [ "$RC" != 0 ] || [ "$now" != "$before" ]; then
			bad=$((bad + 1))
			vm_diag "step $k: ADD exit $killed, DEL exit $RC: $OUT"
			vm_diag "$(diff <(echo "$before") <(echo "$now"))"
		fi
	done
	vm_check "ADD killed after each of its $total steps, then DEL: nothing left" vm_expect_eq 0 "$bad"
	seed=${TEST_CNI_FAULT_SEED:-$(date +%s)}
	RANDOM=$seed
	bad=0
	for ((k = 1; k <= ${TEST_CNI_VM_FAULT_RUNS:-5}; k++)); do
		n=$((RANDOM % total + 1))
		cni_run ADD "$fconf" RDMA_NETNS_FAULT_STEP="$n"
		ip netns del podf # the pod dies too before the runtime's DEL
		cni_run DEL "$fconf"
		ip netns add podf
		now=$(snap)
		if [ "$RC" != 0 ] || [ "$now" != "$before" ]; then
			bad=$((bad + 1))
			vm_diag "kill at $n, then netns deleted: DEL exit $RC: $OUT"
			vm_diag "$(diff <(echo "$before") <(echo "$now"))"
		fi
	done
	vm_check "${TEST_CNI_VM_FAULT_RUNS:-5} random kills (seed $seed), the netns deleted, then DEL: nothing left" vm_expect_eq 0 "$bad"
fi

vm_done
