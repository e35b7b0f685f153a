#!/bin/bash
# rdma-netns killed half way (SIGKILL, no cleanup) at every step of ADD, and
# at 200 random steps of ADD or DEL: the DEL the runtime runs next must leave
# no netdev, address, route, lease or state file behind. Needs the test build
# (meson -Dfault_injection=true: RDMA_NETNS_FAULT_STEP=N). Root, veths on
# the host kernel. Every name here starts with "rncf".
#   TEST_CNI_FAULT_RUNS   random runs (default 200)
#   TEST_CNI_FAULT_SEED   RANDOM seed (default: time; printed)
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../vm/guest-lib.sh"
. "$here/cni-lib.sh"

[ "$(id -u)" = 0 ] || { echo "1..0 # SKIP needs root"; exit 77; }
PLUGIN=${RDMA_NETNS:-$RDMANS_BUILD_DIR/src/cni/rdma-netns}
[ -x "$PLUGIN" ] || vm_fail "no rdma-netns binary at $PLUGIN"
runs=${TEST_CNI_FAULT_RUNS:-200}
seed=${TEST_CNI_FAULT_SEED:-$(date +%s)}
RANDOM=$seed
vm_diag "random seed $seed (TEST_CNI_FAULT_SEED=$seed repeats this run)"

tmp=$(mktemp -d /tmp/rncf.XXXXXX)
mkdir "$tmp/bin"
ln -s "$PLUGIN" "$tmp/bin/rdma-netns"
CNI_BIN=$tmp/bin
CNI_TMP=$tmp
export RDMA_NETNS_STATE_DIR=$tmp/state RDMA_NETNS_DEVINFO_DIR=$tmp/devinfo
cleanup() {
	ip netns del rncf-pod 2>/dev/null
	ip link del rncf0 2>/dev/null
}
cleanup
trap 'cleanup; rm -rf "$tmp"' EXIT

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
	ip -o link | grep -E '^[0-9]+: rncf' | sed -E 's/^[0-9]+: //'
	ip -o addr | grep -E '^[0-9]+: rncf' | grep -v 'inet6 fe80'
	echo "pod:"
	ip -n rncf-pod -o link | sed -E 's/^[0-9]+: //'
	ip -n rncf-pod -o addr | grep -v 'inet6 fe80'
	ip -n rncf-pod route
	(cd "$tmp" && find state devinfo hl -type f ! -path 'state/locks/*' \
		! -name 'last_reserved_ip*' ! -name lock 2>/dev/null | sort)
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
# state, IPAM, alias, move, up, address, 2 routes, ready: at least 9
vm_check "ADD has a step for every change (>= 9)" test "$add_steps" -ge 9
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

for ((n = 1; n <= add_steps; n++)); do
	if kill_at ADD "$n"; then vm_ok "ADD killed after step $n, then DEL: nothing left"; else
		vm_not_ok "ADD killed after step $n, then DEL: nothing left"
		vm_diag "$WHY"
		cni_run DEL "$conf"
	fi
done
for ((n = 1; n <= del_steps; n++)); do
	if kill_at DEL "$n"; then vm_ok "DEL killed after step $n, then DEL again: nothing left"; else
		vm_not_ok "DEL killed after step $n, then DEL again: nothing left"
		vm_diag "$WHY"
		cni_run DEL "$conf"
	fi
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
vm_done
