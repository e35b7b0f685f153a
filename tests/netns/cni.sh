#!/bin/bash
# rdma-netns on the host kernel (no RDMA in it, so "requireRdma": false):
# the netdev half of the plugin through the real binary, run as a runtime
# runs it. Moves, renames and restores; IPAM delegated to Debian's
# host-local and static; chained after host-device; CHECK, STATUS, GC;
# rollback; and bad input that must leave the node exactly as it was.
# Root, real namespaces and veths. Every name here starts with "rnc".
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/cni-lib.sh"
cni_netns_setup rnc
[ -x /usr/lib/cni/host-local ] || vm_fail "containernetworking-plugins is not installed (tools/install-deps.sh)"
HL=$tmp/hl

cni_netns_clean rnc
trap 'cni_netns_clean rnc; rm -rf "$tmp"' EXIT

veth() { # veth NAME: NAME (to attach) and NAMEp (its peer, left down: no carrier noise), on the host
	ip link add "$1" type veth peer name "$1p"
}
pod() { ip netns add "$1"; }

# What this test may have changed: its links, addresses, namespaces and their
# contents, state files, device-info files, host-local leases.
snap() {
	cni_netns_snap rnc
	(cd "$tmp" && find state devinfo hl -type f ! -path 'state/locks/*' \
		! -name 'last_reserved_ip*' ! -name lock 2>/dev/null | sort)
}

# conf VERSION [JQ-FILTER...]: a main-mode config for device rnc0 with host-local
conf() {
	local v=$1 f='.'
	shift
	[ $# -eq 0 ] || f=$(printf '%s | ' "$@" | sed 's/ | $//')
	jq -nc --arg v "$v" --arg hl "$HL" '{cniVersion: $v, name: "rncnet", type: "rdma-netns",
		device: "rnc0", requireRdma: false,
		ipam: {type: "host-local", subnet: "10.199.0.0/24", dataDir: $hl,
		       routes: [{dst: "0.0.0.0/0"}]}}' | jq -c "$f"
}

in_pod() { ip -n "$1" -o link show "$2" >/dev/null 2>&1; }
on_host() { ip -o link show "$1" >/dev/null 2>&1; }
leases() { find "$HL" -type f ! -name 'last_reserved_ip*' ! -name lock 2>/dev/null | wc -l; }
state_files() { find "$tmp/state" -maxdepth 1 -type f 2>/dev/null | wc -l; }

# --- VERSION --------------------------------------------------------------------------
cni_expect_ok "VERSION answers" VERSION '{"cniVersion":"1.1.0"}'
vm_check "VERSION lists 0.3.0 0.3.1 0.4.0 1.0.0 1.1.0" vm_expect_eq '["0.3.0","0.3.1","0.4.0","1.0.0","1.1.0"]' \
	"$(printf '%s' "$OUT" | jq -c .supportedVersions)"
cni_expect_ok "VERSION with an empty stdin" VERSION ''
vm_check "VERSION: cniVersion of the answer is the latest" vm_expect_eq 1.1.0 "$(printf '%s' "$OUT" | jq -r .cniVersion)"

# --- main mode: move, rename, IPAM, restore ------------------------------------------------
veth rnc0
pod rnc-pod1
CNI_NS=/var/run/netns/rnc-pod1
ip link set rnc0 alias "uplink to rack 7"
mac0=$(cat /sys/class/net/rnc0/address)
before=$(snap)
cni_expect_ok "ADD (1.0.0, host-local)" ADD "$(conf 1.0.0)"
res=$OUT
vm_check "result: interface net1 in the pod's netns, with the netdev's MAC" vm_expect_eq \
	"net1 $mac0 $CNI_NS" "$(printf '%s' "$res" | jq -r '.interfaces[0] | "\(.name) \(.mac) \(.sandbox)"')"
vm_check "result: 1.0.0 has no ips[].version, interface 0, a gateway" vm_expect_eq \
	"10.199.0.2/24 0 10.199.0.1 null" "$(printf '%s' "$res" | jq -r '.ips[0] | "\(.address) \(.interface) \(.gateway) \(.version)"')"
vm_check "the netdev left the host" sh -c '! ip link show rnc0'
vm_check "it is net1 in the pod, same MAC" vm_expect_eq "$mac0" "$(ip netns exec rnc-pod1 cat /sys/class/net/net1/address)"
vm_check "its alias names it on the host (as host-device does)" vm_expect_contains "$(ip -n rnc-pod1 -d link show net1)" "alias rnc0"
vm_check "net1 is up with the IPAM address" vm_expect_contains "$(ip -n rnc-pod1 -o addr show dev net1)" "inet 10.199.0.2/24"
vm_check "the IPAM route is in the pod" vm_expect_contains "$(ip -n rnc-pod1 route)" "default via 10.199.0.1 dev net1"
vm_check "host-local holds one lease" vm_expect_eq 1 "$(leases)"
st=$(find "$tmp/state" -maxdepth 1 -type f)
vm_check "one state file, mode 0600, in a 0700 directory" vm_expect_eq "1 600 700" \
	"$(state_files) $(stat -c %a "$st") $(stat -c %a "$tmp/state")"
vm_check "state: pod labels for the exporter" vm_expect_eq "default pod-a rnc-c1 net1 ready" \
	"$(for k in pod_namespace pod_name container_id ifname phase; do sed -n "s/^$k=//p" "$st"; done | paste -sd' ')"
vm_check "state: original name and alias remembered" sh -c "grep -qx 'netdev.0.name=rnc0' '$st' && grep -qx 'netdev.0.alias=uplink to rack 7' '$st'"

cni_expect_ok "CHECK passes" CHECK "$(conf 1.0.0 ".prevResult = $res")"
ip -n rnc-pod1 addr del 10.199.0.2/24 dev net1
cni_expect_err "CHECK notices a missing address" 107 "address 10.199.0.2/24 is no longer on net1" CHECK "$(conf 1.0.0)"
ip -n rnc-pod1 addr add 10.199.0.2/24 dev net1
cni_expect_err "CHECK with cniVersion 0.3.1 is refused" 1 "CHECK needs cniVersion 0.4.0" CHECK "$(conf 0.3.1)"

during=$(snap)
cni_expect_err "ADD twice: refused" 105 "already has net1" ADD "$(conf 1.0.0)"
vm_check "ADD twice: the first attachment is intact" vm_expect_eq "$during" "$(snap)"
veth rnc1
during=$(snap)
cni_expect_err "another pod asking for the same device: names the owner" 101 "belongs to pod default/pod-a" \
	ADD "$(conf 1.0.0)" CNI_CONTAINERID=rnc-c2 CNI_IFNAME=net1
vm_check "another pod: nothing changed" vm_expect_eq "$during" "$(snap)"
ip link del rnc1

cni_expect_ok "DEL" DEL "$(conf 1.0.0)"
vm_check "DEL: rnc0 is back on the host under its name" on_host rnc0
vm_check "DEL: its alias is restored" vm_expect_contains "$(ip -d link show rnc0)" "alias uplink to rack 7"
vm_check "DEL: node exactly as before ADD (links, addresses, leases, state)" vm_expect_eq "$before" "$(snap)"
cni_expect_ok "DEL again succeeds" DEL "$(conf 1.0.0)"
cni_expect_ok "DEL of an unknown container succeeds" DEL "$(conf 1.0.0)" CNI_CONTAINERID=rnc-never CNI_NETNS=
ip link set rnc0 alias ""
before=$(snap)

# --- versions ------------------------------------------------------------------------------
for v in 0.3.0 0.3.1 0.4.0; do
	cni_expect_ok "ADD with cniVersion $v" ADD "$(conf $v)"
	vm_check "$v result: cniVersion $v, ips[].version \"4\"" vm_expect_eq "$v 4" \
		"$(printf '%s' "$OUT" | jq -r '"\(.cniVersion) \(.ips[0].version)"')"
	cni_expect_ok "DEL with cniVersion $v" DEL "$(conf $v)"
done
ip link set rnc0 up
# (host-local 1.1.1 knows no 1.1.0: no IPAM here)
cni_expect_ok "ADD with cniVersion 1.1.0" ADD "$(conf 1.1.0 'del(.ipam)')"
vm_check "1.1.0 result" vm_expect_eq "1.1.0 net1" "$(printf '%s' "$OUT" | jq -r '"\(.cniVersion) \(.interfaces[0].name)"')"
cni_expect_ok "DEL (1.1.0)" DEL "$(conf 1.1.0 'del(.ipam)')"
vm_check "a netdev that was up comes back up" vm_expect_contains "$(ip -o link show rnc0)" ",UP"
ip link set rnc0 down

# --- selection by MAC; static IPAM ----------------------------------------------------------
static=$(conf 1.0.0 'del(.device)' ".hwaddr = \"$mac0\"" \
	'.ipam = {type: "static", addresses: [{address: "10.198.0.9/24", gateway: "10.198.0.1"}], routes: [{dst: "10.197.0.0/16"}]}')
cni_expect_ok "ADD by hwaddr with static IPAM" ADD "$static"
vm_check "static: address and route via the gateway" sh -c \
	"ip -n rnc-pod1 -o addr show dev net1 | grep -q 10.198.0.9/24 && ip -n rnc-pod1 route | grep -q '10.197.0.0/16 via 10.198.0.1 dev net1'"
cni_expect_ok "DEL (static)" DEL "$static"
vm_check "static: node as before" vm_expect_eq "$before" "$(snap)"

# --- no IPAM; the nccl block is kept in the state for the hooks --------------------------------
plain=$(conf 1.0.0 'del(.ipam)' '.nccl = {NCCL_IB_HCA: "=rnc0", NCCL_IB_QPS_PER_CONNECTION: 8, NCCL_IB_DISABLE: false}')
cni_expect_ok "ADD without IPAM" ADD "$plain"
vm_check "no IPAM: no ips in the result" vm_expect_eq 0 "$(printf '%s' "$OUT" | jq '.ips | length')"
st=$(find "$tmp/state" -maxdepth 1 -type f)
vm_check "nccl block passed through to the state" vm_expect_eq "nccl.NCCL_IB_HCA==rnc0 nccl.NCCL_IB_QPS_PER_CONNECTION=8 nccl.NCCL_IB_DISABLE=0" \
	"$(grep '^nccl\.' "$st" | paste -sd' ')"
cni_expect_ok "DEL without IPAM" DEL "$plain"

# --- DEL after the netns was deleted (a veth dies with it) ------------------------------------
cni_expect_ok "ADD into a netns that will be deleted" ADD "$(conf 1.0.0)"
ip netns del rnc-pod1
cni_expect_ok "DEL after the netns is gone" DEL "$(conf 1.0.0)"
vm_check "netns gone: state removed and lease released" vm_expect_eq "0 0" "$(state_files) $(leases)"
vm_check "the veth died with its netns" sh -c '! ip link show rnc0'
pod rnc-pod1
veth rnc0
mac0=$(cat /sys/class/net/rnc0/address)
before=$(snap)

# --- after a reboot: a state file of an older boot claims nothing ------------------------------
cni_expect_ok "ADD (before a reboot)" ADD "$(conf 1.0.0)"
st=$(find "$tmp/state" -maxdepth 1 -type f)
vm_check "state: this boot's ID recorded" vm_expect_eq "$(cat /proc/sys/kernel/random/boot_id)" \
	"$(sed -n 's/^boot_id=//p' "$st")"
# what a reboot leaves: the pod's netns gone, the netdev home under its boot name (a physical one
# would be; our veth stands in), the state file and the lease; the file now of another boot
ip -n rnc-pod1 link set net1 netns $$ name rnc0
ip link set rnc0 alias ""
ip netns del rnc-pod1
sed -i 's/^boot_id=.*/boot_id=00000000-0000-4000-8000-000000000000/' "$st"
pod rnc-pod2
cni_expect_ok "after the reboot, a new pod gets the device before the old pod's DEL" \
	ADD "$(conf 1.0.0)" CNI_CONTAINERID=rnc-c2 CNI_NETNS=/var/run/netns/rnc-pod2
cni_expect_ok "the old pod's DEL succeeds" DEL "$(conf 1.0.0)"
vm_check "... and leaves the device in the new pod" in_pod rnc-pod2 net1
vm_check "... releasing only the old pod's address" vm_expect_eq "1 1" "$(state_files) $(leases)"
cni_expect_ok "the new pod's DEL" DEL "$(conf 1.0.0)" CNI_CONTAINERID=rnc-c2 CNI_NETNS=/var/run/netns/rnc-pod2
ip netns del rnc-pod2
pod rnc-pod1
vm_check "reboot: node as before" vm_expect_eq "$before" "$(snap)"
# its file records its boot: a removal that a power loss undid would claim nothing, so no fsync
cni_expect_ok "ADD without IPAM" ADD "$(conf 1.0.0 'del(.ipam)')"
CNI_COMMAND=DEL CNI_CONTAINERID=$CNI_CID CNI_NETNS=$CNI_NS CNI_IFNAME=$CNI_IF CNI_PATH=/usr/lib/cni \
	strace -f -qq -e trace=fsync,fdatasync -o "$tmp/del.strace" "$CNI_BIN/rdma-netns" \
	<<<"$(conf 1.0.0 'del(.ipam)')" >/dev/null 2>&1
vm_check "DEL without IPAM: no fsync" vm_expect_eq "0 $before" "$(grep -c fsync "$tmp/del.strace") $(snap)"

# --- chained after the real host-device plugin ------------------------------------------------
list=$(jq -nc --arg hl "$HL" '{cniVersion: "1.0.0", name: "rncchain", plugins: [
	{type: "host-device", device: "rnc0", ipam: {type: "host-local", subnet: "10.196.0.0/24", dataDir: $hl}},
	{type: "rdma-netns", requireRdma: false}]}')
if cni_list_add "$list"; then vm_ok "conflist ADD: host-device then rdma-netns"; else vm_not_ok "conflist ADD"; cni_diag_run; fi
vm_check "chained: prevResult passed on (host-device's address)" vm_expect_eq "net1 10.196.0.2/24" \
	"$(printf '%s' "${CNI_LIST_RESULT:-{\}}" | jq -r '"\(.interfaces[0].name) \(.ips[0].address)"')"
vm_check "chained: net1 in the pod" in_pod rnc-pod1 net1
cni_run CHECK "$(cni_list_conf "$list" 1 "$CNI_LIST_RESULT")"
vm_check "chained: CHECK passes" vm_expect_eq 0 "$RC"
if cni_list_del "$list"; then vm_ok "conflist DEL"; else vm_not_ok "conflist DEL"; cni_diag_run; fi
vm_check "chained: rdma-netns did not touch the netdev (host-device left its alias)" \
	vm_expect_contains "$(ip -o link show rnc0)" "alias rnc0"
ip link set rnc0 alias "" # host-device's, not ours to clean
vm_check "chained: node as before" vm_expect_eq "$before" "$(snap)"
cni_expect_err "chained: prevResult without our interface" 7 "prevResult has no interface named net1" \
	ADD "$(jq -nc '{cniVersion:"1.0.0",name:"rncchain",type:"rdma-netns",requireRdma:false,
		prevResult:{cniVersion:"1.0.0",interfaces:[{name:"eth9"}],ips:[]}}')"
cni_expect_err "chained: ipam is refused" 7 "'ipam' is for main mode" \
	ADD "$(jq -nc '{cniVersion:"1.0.0",name:"rncchain",type:"rdma-netns",requireRdma:false,ipam:{type:"static"},
		prevResult:{cniVersion:"1.0.0",interfaces:[{name:"net1"}],ips:[]}}')"

# --- rollback: a failure after the move undoes everything --------------------------------------
bad_route=$(conf 1.0.0 '.ipam = {type: "static", addresses: [{address: "10.195.0.9/24"}], routes: [{dst: "10.194.0.0/16", gw: "10.193.0.1"}]}')
cni_expect_err "a route that cannot be added fails ADD" 109 "(everything ADD changed was undone)" ADD "$bad_route"
vm_check "rollback after the move: node as before" vm_expect_eq "$before" "$(snap)"
cni_expect_err "an IPAM failure fails ADD" 108 "IPAM plugin" ADD "$(conf 1.0.0 '.ipam.type = "rnc-no-such-ipam"')"
cni_expect_err "host-local failing (bad subnet) fails ADD" 999 "IPAM plugin host-local" ADD "$(conf 1.0.0 '.ipam.subnet = "10.199.0.0/99"')"
vm_check "rollback after IPAM failures: node as before" vm_expect_eq "$before" "$(snap)"
ip -n rnc-pod1 link add net1 type dummy 2>/dev/null || ip -n rnc-pod1 link add net1 type veth peer name net1p
before_clash=$(snap)
cni_expect_err "the pod has a net1 already" 105 "already has a netdev named net1" ADD "$(conf 1.0.0)"
vm_check "name clash: nothing changed, lease released" vm_expect_eq "$before_clash" "$(snap)"
ip -n rnc-pod1 link del net1

# --- GC: everything not listed goes, listed attachments stay -----------------------------------
# host-local 1.1.1 has no GC: rdma-netns DELs the lease of each stale attachment
# itself. (GC is a 1.1.0 verb; rdma-netns takes it from any version, and
# host-local takes nothing newer than 1.0.0.)
veth rnc2
pod rnc-pod2
cni_expect_ok "GC setup: ADD c1" ADD "$(conf 1.0.0)"
cni_expect_ok "GC setup: ADD c2" ADD "$(conf 1.0.0 '.device = "rnc2"')" CNI_CONTAINERID=rnc-c2 CNI_NETNS=/var/run/netns/rnc-pod2
keep=$(snap)
cni_expect_ok "GC with both listed changes nothing" GC "$(conf 1.0.0 '.["cni.dev/valid-attachments"] = [{containerID: "rnc-c1", ifname: "net1"}, {containerID: "rnc-c2", ifname: "net1"}]')" \
	CNI_CONTAINERID= CNI_NETNS= CNI_IFNAME=
vm_check "GC, all valid: nothing changed" vm_expect_eq "$keep" "$(snap)"
cni_expect_ok "GC (cni.dev/valid-attachments) keeps c1 only" GC "$(conf 1.0.0 '.["cni.dev/valid-attachments"] = [{containerID: "rnc-c1", ifname: "net1"}]')" \
	CNI_CONTAINERID= CNI_NETNS= CNI_IFNAME=
vm_check "GC: prints nothing" vm_expect_eq "" "$OUT"
vm_check "GC: c2's netdev is home, c1's still in its pod" sh -c "ip link show rnc2 && ip -n rnc-pod1 link show net1"
vm_check "GC: one state file and one lease left" vm_expect_eq "1 1" "$(state_files) $(leases)"
cni_expect_ok "GC of another network leaves ours alone" GC "$(conf 1.0.0 '.name = "rncother"' '.["cni.dev/valid-attachments"] = []')" \
	CNI_CONTAINERID= CNI_NETNS= CNI_IFNAME=
vm_check "GC of another network: still one state file" vm_expect_eq 1 "$(state_files)"
cni_expect_ok "GC (old key cni.dev/attachments), empty list" GC "$(conf 1.0.0 '.["cni.dev/attachments"] = []')" \
	CNI_CONTAINERID= CNI_NETNS= CNI_IFNAME=
vm_check "GC: nothing left" vm_expect_eq "0 0 ok" "$(state_files) $(leases) $(on_host rnc0 && echo ok)"
ip link del rnc2
ip netns del rnc-pod2

# --- end to end with rdma-netns-ipam (1.1.0: STATUS and GC are forwarded to it) ---------------
IPAM_BIN=$RDMANS_BUILD_DIR/src/ipam/rdma-netns-ipam
[ -x "$IPAM_BIN" ] || vm_fail "no rdma-netns-ipam at $IPAM_BIN"
ln -s "$IPAM_BIN" "$tmp/bin/rdma-netns-ipam"
ipam_leases() { find "$tmp/ipam" -path '*/addr/*' -type f 2>/dev/null | wc -l; }
rip=$(conf 1.1.0 '.name = "rncrip"' '.ipam = {type: "rdma-netns-ipam", range: "10.189.0.0/24", gateway: "10.189.0.1", dataDir: "'"$tmp/ipam"'"}')
veth rnc2
pod rnc-pod2
cni_expect_ok "rdma-netns-ipam: ADD (1.1.0)" ADD "$rip"
ripaddr=$(printf '%s' "$OUT" | jq -r '.ips[0].address')
vm_check "rdma-netns-ipam: its address $ripaddr is on net1 and held in its store" sh -c \
	"ip -n rnc-pod1 -o addr show dev net1 | grep -q ' $ripaddr ' && [ \$(find '$tmp/ipam' -path '*/addr/*' -type f | wc -l) = 1 ]"
cni_expect_ok "rdma-netns-ipam: CHECK" CHECK "$rip"
cni_expect_ok "rdma-netns-ipam: STATUS forwarded" STATUS "$rip" CNI_CONTAINERID= CNI_NETNS= CNI_IFNAME=
cni_expect_ok "rdma-netns-ipam: ADD of a second pod" ADD "$(jq -c '.device = "rnc2"' <<<"$rip")" CNI_CONTAINERID=rnc-c2 CNI_NETNS=/var/run/netns/rnc-pod2 CNI_ARGS="IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=pod-b"
vm_check "rdma-netns-ipam: two leases" vm_expect_eq 2 "$(ipam_leases)"
cni_expect_ok "rdma-netns-ipam: GC keeping the first pod, forwarded" GC \
	"$(jq -c '.["cni.dev/valid-attachments"] = [{containerID: "rnc-c1", ifname: "net1"}]' <<<"$rip")" CNI_CONTAINERID= CNI_NETNS= CNI_IFNAME=
vm_check "rdma-netns-ipam GC: the second pod's netdev home, its lease released; the first kept" sh -c \
	"ip link show rnc2 >/dev/null && ip -n rnc-pod1 link show net1 >/dev/null && [ \$(find '$tmp/ipam' -path '*/addr/*' -type f | wc -l) = 1 ]"
cni_expect_ok "rdma-netns-ipam: DEL" DEL "$rip"
vm_check "rdma-netns-ipam: no lease, no state, rnc0 home" vm_expect_eq "0 0 ok" "$(ipam_leases) $(state_files) $(on_host rnc0 && echo ok)"
ip link del rnc2
ip netns del rnc-pod2

# --- STATUS ---------------------------------------------------------------------------------
cni_expect_ok "STATUS with requireRdma false" STATUS "$(conf 1.1.0)" CNI_CONTAINERID= CNI_NETNS= CNI_IFNAME=
cni_expect_err "STATUS when RDMA is required on a node without it" 50 "this node has no RDMA" \
	STATUS "$(conf 1.1.0 'del(.requireRdma)')" CNI_CONTAINERID= CNI_NETNS= CNI_IFNAME=

# --- concurrency ------------------------------------------------------------------------------
for i in 1 2 3 4 5 6 7 8; do
	veth "rncp$i"
	pod "rnc-par$i"
done
# par_run CMD: CMD for pods rnc-par1..8 (netdevs rncp1..8) at once; each one's "RC OUT" in $tmp/parI
par_run() {
	local i pids=()
	for i in 1 2 3 4 5 6 7 8; do
		(cni_run "$1" "$(conf 1.0.0 ".device = \"rncp$i\"")" CNI_CONTAINERID="rnc-par$i" CNI_NETNS="/var/run/netns/rnc-par$i"
			echo "$RC $OUT" >"$tmp/par$i") &
		pids+=($!)
	done
	wait "${pids[@]}"
}
before_par=$(snap)
par_run ADD
ok=0
for i in 1 2 3 4 5 6 7 8; do
	read -r rc _ <"$tmp/par$i"
	[ "$rc" = 0 ] && in_pod "rnc-par$i" net1 && ok=$((ok + 1))
done
vm_check "8 parallel ADDs on 8 netdevs all land" vm_expect_eq 8 "$ok"
vm_check "8 pods got 8 different addresses" vm_expect_eq 8 \
	"$(for i in 1 2 3 4 5 6 7 8; do ip -n "rnc-par$i" -o -4 addr show dev net1 | awk '{ print $4 }'; done | sort -u | wc -l)"
par_run DEL
vm_check "8 parallel DELs: node as before" vm_expect_eq "$before_par" "$(snap)"

# two pods, one device, at the same time: one wins, the other is told who has it
for round in $(seq 1 20); do
	(cni_run ADD "$(conf 1.0.0 '.device = "rncp1"')" CNI_CONTAINERID=rnc-x1 CNI_NETNS=/var/run/netns/rnc-par1
		echo "$RC $(printf '%s' "$OUT" | jq -r '.code // 0')" >"$tmp/x1") &
	(cni_run ADD "$(conf 1.0.0 '.device = "rncp1"')" CNI_CONTAINERID=rnc-x2 CNI_NETNS=/var/run/netns/rnc-par2
		echo "$RC $(printf '%s' "$OUT" | jq -r '.code // 0')" >"$tmp/x2") &
	wait
	got="$(cat "$tmp/x1") / $(cat "$tmp/x2")"
	where=$( (in_pod rnc-par1 net1 && echo par1) || (in_pod rnc-par2 net1 && echo par2) || echo none)
	case "$got" in
	"0 0 / 1 101" | "1 101 / 0 0")
		vm_check "round $round: same device twice at once: one ADD wins, one gets 101 ($where)" \
			test "$where" != none ;;
	*) vm_not_ok "round $round: same device twice at once"; vm_diag "results: $got" ;;
	esac
	cni_run DEL "$(conf 1.0.0 '.device = "rncp1"')" CNI_CONTAINERID=rnc-x1 CNI_NETNS=/var/run/netns/rnc-par1
	cni_run DEL "$(conf 1.0.0 '.device = "rncp1"')" CNI_CONTAINERID=rnc-x2 CNI_NETNS=/var/run/netns/rnc-par2
	vm_check "round $round: both DELs leave the node as before" vm_expect_eq "$before_par" "$(snap)"
done
for i in 1 2 3 4 5 6 7 8; do ip link del "rncp$i"; ip netns del "rnc-par$i"; done

# --- the host's management interface -------------------------------------------------------------
# In a scratch "node" netns (the plugin acts on its own netns), so a bug cannot
# take the real uplink away.
pod rnc-node
ip -n rnc-node link add rncmgmt type veth peer name rncmgmtp
ip -n rnc-node link set rncmgmt up
ip -n rnc-node link set rncmgmtp up
ip -n rnc-node addr add 10.192.0.2/24 dev rncmgmt
ip -n rnc-node route add default via 10.192.0.1
node_snap() {
	ip -n rnc-node -o link | vm_link_view
	ip -n rnc-node -o addr | grep -v "inet6 fe80"
	ip -n rnc-node route
	ip -n rnc-pod1 -o link | vm_link_view
	snap
}
before_node=$(node_snap)
mgmt=$(conf 1.0.0 '.device = "rncmgmt"' 'del(.ipam)')
CNI_ERRF=$tmp/err
RC=0
OUT=$(printf '%s' "$mgmt" | ip netns exec rnc-node env CNI_COMMAND=ADD CNI_CONTAINERID=rnc-m CNI_NETNS=/var/run/netns/rnc-pod1 \
	CNI_IFNAME=net1 CNI_PATH="$CNI_BIN" "$PLUGIN" 2>"$CNI_ERRF") || RC=$?
vm_check "the netdev with the default route is refused (104)" vm_expect_eq "1 104" "$RC $(printf '%s' "$OUT" | jq -r .code)"
vm_check "the message says how to allow it" vm_expect_contains "$(printf '%s' "$OUT" | jq -r .msg)" '"allowDefaultRoute": true'
vm_check "refused: the node's netns unchanged" vm_expect_eq "$before_node" "$(node_snap)"
RC=0
OUT=$(printf '%s' "$mgmt" | jq -c '.allowDefaultRoute = true' | ip netns exec rnc-node env CNI_COMMAND=ADD \
	CNI_CONTAINERID=rnc-m CNI_NETNS=/var/run/netns/rnc-pod1 CNI_IFNAME=net1 CNI_PATH="$CNI_BIN" "$PLUGIN" 2>"$CNI_ERRF") || RC=$?
vm_check "with allowDefaultRoute it moves" sh -c "[ $RC = 0 ] && ip -n rnc-pod1 link show net1"
RC=0
printf '%s' "$mgmt" | ip netns exec rnc-node env CNI_COMMAND=DEL CNI_CONTAINERID=rnc-m CNI_IFNAME=net1 \
	CNI_PATH="$CNI_BIN" "$PLUGIN" >/dev/null 2>&1 || RC=$?
vm_check "and DEL brings it home (its addresses are gone, as with host-device)" sh -c \
	"[ $RC = 0 ] && ip -n rnc-node link show rncmgmt && ! ip -n rnc-pod1 link show net1"
ip netns del rnc-node

# --- the shipped examples (cni-conf/) parse: ADD gets as far as the missing netns ----------------
for f in "$here"/../../cni-conf/*.yaml "$here"/../../cni-conf/*.conflist; do
	case "$f" in
	*.yaml) c=$(sed -n "/config: '/,\$p" "$f" | sed "1s/.*config: '//; \$s/'[[:space:]]*\$//") ;; # the NAD's config: '...'

	*) c=$(cat "$f") ;;
	esac
	c=$(jq -c 'if .plugins then (.plugins[] | select(.type == "rdma-netns")) + {cniVersion: .cniVersion, name: .name} else . end' <<<"$c" 2>/dev/null)
	cni_expect_err "cni-conf/${f##*/} is a valid rdma-netns configuration" 4 "/var/run/netns/rnc-nosuch does not exist" \
		ADD "$c" CNI_NETNS=/var/run/netns/rnc-nosuch
done

# --- bad input: one clear CNI error, the node exactly as before --------------------------------
before=$(snap)
C=$(conf 1.0.0)
cni_expect_err "malformed JSON" 6 "cannot decode the network configuration" ADD '{"cniVersion": "1.0.0", "name": '
cni_expect_err "not an object" 6 "must be a JSON object" ADD '["rdma-netns"]'
cni_expect_err "empty stdin" 6 "no network configuration on stdin" ADD ''
cni_expect_err "duplicate key" 6 "duplicate object key" ADD '{"cniVersion":"1.0.0","name":"a","name":"b"}'
cni_expect_err "requireRdma as a string" 7 "'requireRdma' must be true or false, not a string" ADD "$(conf 1.0.0 '.requireRdma = "false"')"
cni_expect_err "device as a number" 7 "'device' must be a string, not a number" ADD "$(conf 1.0.0 '.device = 42')"
cni_expect_err "ipam as a string" 7 "'ipam' must be an object" ADD "$(conf 1.0.0 '.ipam = "host-local"')"
cni_expect_err "gidTimeout as a string" 7 "'gidTimeout' must be a number of seconds" ADD "$(conf 1.0.0 '.gidTimeout = "10"')"
cni_expect_err "gidTimeout out of range" 7 "between 0 and 600" ADD "$(conf 1.0.0 '.gidTimeout = -1')"
cni_expect_err "nccl value as an object" 7 "'nccl.NCCL_X' must be a string, number or boolean" ADD "$(conf 1.0.0 '.nccl = {NCCL_X: {}}')"
cni_expect_err "nccl key with '='" 7 "'nccl' key 'A=B'" ADD "$(conf 1.0.0 '.nccl = {"A=B": "1"}')"
cni_expect_err "misspelt key requireRDMA" 2 "did you mean 'requireRdma'" ADD "$(conf 1.0.0 '.requireRDMA = false')"
cni_expect_err "misspelt key rdma_devices" 2 "did you mean 'rdmaDevice'" ADD "$(conf 1.0.0 '.rdma_devices = "x"')"
cni_expect_err "host-device's kernelpath" 2 "'kernelpath' is not supported" ADD "$(conf 1.0.0 '.kernelpath = "/sys/x"')"
cni_expect_err "unsupported cniVersion 0.2.0" 1 "CNI version 0.2.0 is not supported" ADD "$(conf 0.2.0)"
cni_expect_err "no cniVersion: read as 0.1.0, which rdma-netns does not speak" 1 "has no 'cniVersion', which reads as 0.1.0" ADD "$(conf 1.0.0 'del(.cniVersion)')"
cni_expect_err "no name" 7 "has no 'name'" ADD "$(conf 1.0.0 'del(.name)')"
cni_expect_err "network name with '/'" 7 "network name 'a/b' may only contain" ADD "$(conf 1.0.0 '.name = "a/b"')"
cni_expect_err "no device selected" 7 "no device selected" ADD "$(conf 1.0.0 'del(.device)')"
cni_expect_err "unknown device" 100 "netdev rnc-nosuch not found on the host" ADD "$(conf 1.0.0 '.device = "rnc-nosuch"')"
cni_expect_err "device name with '/'" 7 "must not contain '/'" ADD "$(conf 1.0.0 '.device = "a/b"')"
cni_expect_err "device name .." 7 "must not contain '..'" ADD "$(conf 1.0.0 '.device = ".."')"
cni_expect_err "rdmaDevice with '..'" 7 "must not contain '..'" ADD "$(conf 1.0.0 '.rdmaDevice = "../mlx5_0"')"
cni_expect_err "deviceID with '/'" 7 "must not contain '/'" ADD "$(conf 1.0.0 '.deviceID = "pci/0000:01:00.0"')"
cni_expect_err "unknown PCI device" 100 "no PCI or auxiliary device 0000:ff:1f.7" ADD "$(conf 1.0.0 'del(.device)' '.deviceID = "0000:ff:1f.7"')"
cni_expect_err "hwaddr that is not a MAC" 7 "is not a MAC address" ADD "$(conf 1.0.0 'del(.device)' '.hwaddr = "zz:00:00:00:00:00"')"
cni_expect_err "device and hwaddr disagree" 7 "do not name the same device" ADD "$(conf 1.0.0 ".hwaddr = \"$(cat /sys/class/net/rnc0p/address)\"")"
cni_expect_err "deviceID and runtimeConfig.deviceID disagree" 7 "name different devices" \
	ADD "$(conf 1.0.0 '.deviceID = "0000:01:00.0"' '.runtimeConfig = {deviceID: "0000:02:00.0"}')"
cni_expect_err "ipam without a type" 7 "'ipam' has no 'type'" ADD "$(conf 1.0.0 '.ipam = {subnet: "10.0.0.0/24"}')"
cni_expect_err "ipam type with a path" 7 "must not contain '/'" ADD "$(conf 1.0.0 '.ipam.type = "/bin/sh"')"
cni_expect_err "CNIDeviceInfoFile outside the devinfo directory" 7 "refusing to write there" \
	ADD "$(conf 1.0.0 '.runtimeConfig = {CNIDeviceInfoFile: "/etc/passwd"}')"
cni_expect_err "CNIDeviceInfoFile with .." 7 "without '..'" \
	ADD "$(conf 1.0.0 '.runtimeConfig = {CNIDeviceInfoFile: "/var/run/k8s.cni.cncf.io/devinfo/../x"}')"
cni_expect_err "RDMA required on a node without RDMA" 103 "this kernel has no RDMA netlink" ADD "$(conf 1.0.0 'del(.requireRdma)')"
cni_expect_err "no CNI_COMMAND" 4 "CNI_COMMAND is not set" "" "$C"
cni_expect_err "unknown CNI_COMMAND" 4 "unknown CNI_COMMAND 'FROB'" FROB "$C"
cni_expect_err "no CNI_CONTAINERID" 4 "CNI_CONTAINERID is not set" ADD "$C" CNI_CONTAINERID=
cni_expect_err "no CNI_NETNS" 4 "CNI_NETNS is not set" ADD "$C" CNI_NETNS=
cni_expect_err "no CNI_IFNAME" 4 "CNI_IFNAME is not set" ADD "$C" CNI_IFNAME=
cni_expect_err "no CNI_PATH for the IPAM plugin" 4 "CNI_PATH is not set" ADD "$C" CNI_PATH=
cni_expect_err "CNI_NETNS that does not exist" 4 "/var/run/netns/rnc-nosuch does not exist" ADD "$C" CNI_NETNS=/var/run/netns/rnc-nosuch
cni_expect_err "CNI_NETNS that is not a netns" 4 "is not a network namespace" ADD "$C" CNI_NETNS=/etc/hostname
cni_expect_err "CNI_NETNS relative" 4 "must be an absolute path" ADD "$C" CNI_NETNS=rnc-pod1
cni_expect_err "CNI_NETNS is the host's own" 4 "is the host's own network namespace" ADD "$C" CNI_NETNS=/proc/self/ns/net
cni_expect_err "container ID with '/'" 4 "container ID '../x' must start with" ADD "$C" CNI_CONTAINERID=../x
cni_expect_err "CNI_IFNAME .." 4 "must not contain '..'" ADD "$C" CNI_IFNAME=..
cni_expect_err "CNI_IFNAME with '/'" 4 "must not contain '/'" ADD "$C" CNI_IFNAME=a/b
cni_expect_err "CNI_IFNAME too long" 4 "too long" ADD "$C" CNI_IFNAME=rnc-very-long-name
cni_expect_err "CNI_ARGS malformed" 4 "CNI_ARGS is malformed" ADD "$C" CNI_ARGS="K8S_POD_NAME"
cni_expect_err "GC with a malformed attachment list" 7 "must be an object with string members" \
	GC "$(conf 1.1.0 '.["cni.dev/valid-attachments"] = [{containerID: 1}]')"
# nothing of this container's to undo: DEL succeeds whatever the input (cni-del-table.sh)
cni_expect_ok "DEL with malformed JSON and nothing to undo succeeds" DEL '{'
vm_check "bad input changed nothing (links, addresses, netns, state, leases)" vm_expect_eq "$before" "$(snap)"
vm_check "bad input left no state file" vm_expect_eq 0 "$(state_files)"

vm_done
