#!/bin/bash
# rdma-netns killed half way (SIGKILL, no cleanup) at every step of ADD, and
# at 200 random steps of ADD or DEL: the DEL the runtime runs next must leave
# no netdev, address, route, lease or state file behind. Then every way ADD
# is refused, by rdma-netns or by the kernel (a netns-local netdev, an
# altname clash, IPv6 disabled in the pod, an unreachable gateway, an
# exhausted range, a taken pod interface name): the ADD fails with its code
# and undoes itself, the DEL after it succeeds, and ADD killed at each of
# its steps (its undo's included) followed by DEL leaves nothing either.
# Needs the test build (meson -Dfault_injection=true: RDMA_NETNS_FAULT_STEP=N,
# RDMA_NETNS_FAULT_SKIP). Root, veths on the host kernel. Every name here
# starts with "rncf".
#   TEST_CNI_FAULT_RUNS   random runs (default 200)
#   TEST_CNI_FAULT_SEED   RANDOM seed (default: time; printed)
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/cni-lib.sh"
cni_netns_setup rncf
runs=${TEST_CNI_FAULT_RUNS:-200}
seed=${TEST_CNI_FAULT_SEED:-$(date +%s)}
RANDOM=$seed
vm_diag "random seed $seed (TEST_CNI_FAULT_SEED=$seed repeats this run)"
cni_netns_clean rncf
trap 'cni_netns_clean rncf; rm -rf "$tmp"' EXIT

ip link add rncf0 type veth peer name rncf0p
ip link set rncf0 alias "fault test"
ip netns add rncf-pod
CNI_NS=/var/run/netns/rncf-pod
CNI_CID=rncf-c1
conf=$(jq -nc --arg hl "$tmp/hl" '{cniVersion: "1.0.0", name: "rncfnet", type: "rdma-netns",
	device: "rncf0", requireRdma: false,
	ipam: {type: "host-local", subnet: "10.191.0.0/24", dataDir: $hl,
	       routes: [{dst: "0.0.0.0/0"}, {dst: "10.190.0.0/16"}]}}')

snap() {
	cni_netns_snap rncf
	(cd "$tmp" && find state devinfo hl ri -type f ! -path 'state/locks/*' \
		! -path 'ri/.locks/*' ! -name 'last_reserved_ip*' ! -name lock 2>/dev/null | sort)
}
steps_of() { sed -n 's/.*fault injection: [A-Z]* made \([0-9]*\) steps.*/\1/p' <<<"$1" | tail -1; }
state_files() { find "$tmp/state" -maxdepth 1 -type f 2>/dev/null | wc -l; }

baseline=$(snap)
cni_run ADD "$conf" RDMA_NETNS_FAULT_STEP=100000
add_steps=$(steps_of "$ERR")
vm_check "a full ADD under the switch succeeds and counts its steps" test "$RC" = 0 -a -n "$add_steps"
cni_run DEL "$conf" RDMA_NETNS_FAULT_STEP=100000
del_steps=$(steps_of "$ERR")
vm_check "a full DEL counts its steps" test "$RC" = 0 -a -n "$del_steps"
[ -n "$add_steps" ] && [ -n "$del_steps" ] ||
	vm_fail "rdma-netns does not count steps: build it with meson -Dfault_injection=true"
vm_diag "ADD makes $add_steps steps, DEL $del_steps"
# state, IPAM, alias, move (it brings the netdev up too), address, 2 routes, ready: at least 8
vm_check "ADD has a step for every change (>= 8)" test "$add_steps" -ge 8
vm_check "the node is as before" vm_expect_eq "$baseline" "$(snap)"

# one kill: ADD (or DEL) dies at step N; then what the runtime does next
# (DEL, again after a killed DEL) must clean up. Sets WHY on failure.
kill_at() {
	local verb=$1 n=$2
	WHY=
	if [ "$verb" = DEL ]; then
		cni_run ADD "$conf"
		[ "$RC" = 0 ] || { WHY="ADD before the killed DEL failed: $OUT"; return 1; }
	fi
	cni_run "$verb" "$conf" RDMA_NETNS_FAULT_STEP="$n"
	case "$ERR" in
	*"killed after step $n "*) ;;
	*) WHY="$verb was not killed at step $n (exit $RC): $ERR"; return 1 ;;
	esac
	[ "$RC" = 137 ] || { WHY="$verb killed at step $n exited $RC, not 137"; return 1; }
	[ "$verb" = DEL ] || [ "$(state_files)" = 1 ] || { WHY="ADD killed at step $n left no state file for DEL"; return 1; }
	cni_run DEL "$conf"
	[ "$RC" = 0 ] || { WHY="DEL after the kill at $verb step $n failed: $OUT"; return 1; }
	local now
	now=$(snap)
	[ "$now" = "$baseline" ] || { WHY="left behind after $verb killed at step $n, then DEL:
$(diff <(echo "$baseline") <(echo "$now"))"; return 1; }
	return 0
}

for verb in ADD DEL; do
	if [ "$verb" = ADD ]; then total=$add_steps then="then DEL"; else total=$del_steps then="then DEL again"; fi
	for ((n = 1; n <= total; n++)); do
		if kill_at "$verb" "$n"; then vm_ok "$verb killed after step $n, $then: nothing left"; else
			vm_not_ok "$verb killed after step $n, $then: nothing left"
			vm_diag "$WHY"
			cni_run DEL "$conf"
		fi
	done
done

bad=0
for ((i = 1; i <= runs; i++)); do
	if ((RANDOM % 4 == 0)); then verb=DEL total=$del_steps; else verb=ADD total=$add_steps; fi
	n=$((RANDOM % total + 1))
	if ! kill_at "$verb" "$n"; then
		bad=$((bad + 1))
		[ "$bad" -gt 3 ] || vm_diag "run $i: $WHY"
		cni_run DEL "$conf"
	fi
done
vm_check "$runs random kills during ADD or DEL, each followed by DEL: nothing left ($bad failed)" test "$bad" = 0
vm_check "the netdev is home with its name and alias" vm_expect_contains "$(ip -o link show rncf0)" "alias fault test"

# The same with rdma-netns-ipam: its leases (address and attachment records) go too.
conf=$(jq -nc --arg ri "$tmp/ri" '{cniVersion: "1.0.0", name: "rncfnet", type: "rdma-netns",
	device: "rncf0", requireRdma: false,
	ipam: {type: "rdma-netns-ipam", range: "10.192.0.0/29", dataDir: $ri,
	       routes: [{dst: "10.190.0.0/16"}]}}')
ln -s "$RDMANS_BUILD_DIR/src/ipam/rdma-netns-ipam" "$tmp/bin/rdma-netns-ipam"
cni_run ADD "$conf" RDMA_NETNS_FAULT_STEP=100000
ri_steps=$(steps_of "$ERR")
cni_run DEL "$conf"
vm_check "rdma-netns-ipam: a full ADD and DEL succeed" test "$RC" = 0 -a -n "$ri_steps"
baseline=$(snap)
bad=0
for ((n = 1; n <= ${ri_steps:-0}; n++)); do
	kill_at ADD "$n" || { bad=$((bad + 1)); vm_diag "$WHY"; cni_run DEL "$conf"; }
done
vm_check "rdma-netns-ipam: ADD killed after each of its $ri_steps steps, then DEL: no lease, nothing left" test "$bad" = 0

# ---- every way ADD is refused, by rdma-netns or by the kernel ----

# refused WHEN NAME CODE CONF [VAR=VALUE...]: ADD fails with CODE, having
# undone itself; DEL after it succeeds. WHEN "before": refused before any
# change (no step); "after": after some, and ADD killed after each of its
# steps (the undo's included), then DEL, leaves nothing. The node's state
# before is the baseline.
refused() {
	local when=$1 name=$2 code=$3 c=$4 base steps got n bad=0 now
	shift 4
	base=$(snap)
	cni_run ADD "$c" RDMA_NETNS_FAULT_STEP=100000 "$@"
	steps=$(steps_of "$ERR")
	REFUSED_MSG=$ERR
	got=$(jq -r '.code // empty' <<<"$OUT" 2>/dev/null)
	if [ "$RC" = 1 ] && [ "$got" = "$code" ]; then vm_ok "$name: ADD fails with code $code"; else
		vm_not_ok "$name: ADD fails with code $code"
		cni_diag_run
	fi
	vm_check "$name: the failed ADD undid everything it did" vm_expect_eq "$base" "$(snap)"
	cni_run DEL "$c" "$@"
	now=$(snap)
	if [ "$RC" = 0 ] && [ "$now" = "$base" ]; then vm_ok "$name: DEL after it succeeds and leaves nothing"; else
		vm_not_ok "$name: DEL after it succeeds and leaves nothing"
		cni_diag_run
		diff <(echo "$base") <(echo "$now") | sed 's/^/# /'
	fi
	if [ "$when" = before ]; then
		vm_check "$name: refused before any change" test "${steps:-x}" = 0
		return
	fi
	for ((n = 1; n <= ${steps:-0}; n++)); do
		cni_run ADD "$c" RDMA_NETNS_FAULT_STEP="$n" "$@"
		[ "$RC" = 137 ] || { bad=$((bad + 1)); vm_diag "step $n: ADD exited $RC, not killed"; }
		cni_run DEL "$c" "$@"
		now=$(snap)
		if [ "$RC" != 0 ] || [ "$now" != "$base" ]; then
			bad=$((bad + 1))
			vm_diag "killed after step $n, then DEL (exit $RC): $OUT"
			diff <(echo "$base") <(echo "$now") | sed 's/^/# /'
			cni_run DEL "$c" "$@"
		fi
	done
	vm_check "$name: ADD killed after each of its ${steps:-0} steps, then DEL: nothing left" test "${steps:-0}" -gt 0 -a "$bad" = 0
}

with() { jq -c "$1" <<<"$conf"; }

# netns-local netdevs: refused before anything changes (no step at all) ...
refused before "device lo" 109 "$(with '.device = "lo"')"
vm_check "device lo: a clear message" vm_expect_contains "$REFUSED_MSG" "netdev lo cannot leave the host's network namespace"
ip link add rncfbr0 type bridge
refused before "a bridge (netns-local)" 109 "$(with '.device = "rncfbr0"')"
# ... and, as on kernels that tell neither IFLA_NETNS_IMMUTABLE nor the ethtool
# feature, refused by the kernel at the move: undone all the same
refused after "device lo, refused by the kernel" 109 "$(with '.device = "lo"')" RDMA_NETNS_FAULT_SKIP=movable
vm_check "device lo, refused by the kernel: says so" vm_expect_contains "$REFUSED_MSG" "the kernel refuses to move netdev lo"
refused after "a bridge, refused by the kernel" 109 "$(with '.device = "rncfbr0"')" RDMA_NETNS_FAULT_SKIP=movable
ip link del rncfbr0

# the kernel refuses the move: an altname of the netdev names a netdev in the pod
ip link property add dev rncf0 altname rncfalt
ip -n rncf-pod link add rncfalt type veth peer name rncfaltp
refused after "an altname clash in the pod (kernel)" 105 "$conf"
ip -n rncf-pod link del rncfalt
ip link property del dev rncf0 altname rncfalt

# the pod already has the interface name
ip -n rncf-pod link add net1 type veth peer name rncfp1
refused after "the pod interface name is taken" 105 "$conf"
ip -n rncf-pod link del net1

# the kernel refuses the address: IPv6 is disabled in the pod
ip netns exec rncf-pod sysctl -qw net.ipv6.conf.default.disable_ipv6=1 net.ipv6.conf.all.disable_ipv6=1
refused after "IPv6 disabled in the pod (kernel refuses the address)" 109 "$(with '.ipam.range = "fd00:192::/120"')"
ip netns exec rncf-pod sysctl -qw net.ipv6.conf.default.disable_ipv6=0 net.ipv6.conf.all.disable_ipv6=0

# the kernel refuses the route: its gateway is not on the pod's link
refused after "an unreachable gateway (kernel refuses the route)" 109 \
	"$(with '.ipam.routes = [{dst: "10.190.0.0/16", gw: "10.77.0.1"}]')"

# the IPAM plugin refuses: the range is exhausted by two other containers
small=$(with '.ipam.range = "10.193.0.0/30"')
ipam_only=$(jq -c '{cniVersion, name, ipam}' <<<"$small")
for other in rncf-x1 rncf-x2; do
	cni_run ADD "$ipam_only" CNI_CONTAINERID="$other" CNI_ARGS="K8S_POD_NAMESPACE=default;K8S_POD_NAME=$other"
done
vm_check "two other containers take the two addresses of a /30" test "$RC" = 0
refused after "an exhausted range (IPAM refuses)" 100 "$small"
for other in rncf-x1 rncf-x2; do
	cni_run DEL "$ipam_only" CNI_CONTAINERID="$other" CNI_ARGS="K8S_POD_NAMESPACE=default;K8S_POD_NAME=$other"
done
vm_check "the netdev is home after every refused ADD" vm_expect_contains "$(ip -o link show rncf0)" "alias fault test"
vm_done
