#!/bin/bash
# Stress: rounds of concurrent ADD, DEL and CHECK of rdma-netns
# (with rdma-netns-ipam on a 2-address range) from 6 pods competing for 3
# netdevs, with random kills: kill -9 from outside at a random moment, and
# the test build's own SIGKILL after a random step. After every round no
# netdev is lost or in two places and no address is on two pods; at the end
# DEL of every attachment succeeds and leaves 0 moved netdevs, 0 addresses,
# 0 leases and 0 state files. The interleavings are random (the seed is
# printed); what is asserted holds for every one of them.
#   TEST_CNI_STRESS_ROUNDS   rounds (default 30), 8 operations each
#   TEST_CNI_STRESS_SEED     RANDOM seed (default: time)
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/cni-lib.sh"
IPAM=$RDMANS_BUILD_DIR/src/ipam/rdma-netns-ipam
RDMANS=$RDMANS_BUILD_DIR/src/cli/rdmans
cni_netns_setup rnst "$IPAM"
tap_require_exec "$RDMANS"
mkdir "$tmp/out"
rounds=${TEST_CNI_STRESS_ROUNDS:-30}
seed=${TEST_CNI_STRESS_SEED:-$(date +%s)}
RANDOM=$seed
vm_diag "random seed $seed (TEST_CNI_STRESS_SEED=$seed repeats the choices, not the timing)"
NDEV=3 NPOD=6 NOPS=8

cni_netns_clean rnst
trap 'cni_netns_clean rnst; rm -rf "$tmp"' EXIT

declare -A mac
for ((i = 0; i < NDEV; i++)); do
	ip link add "rnst$i" type veth peer name "rnst${i}p"
	ip link set "rnst$i" alias "stress $i"
	mac[$i]=$(cat "/sys/class/net/rnst$i/address")
done
for ((i = 0; i < NPOD; i++)); do
	ip netns add "rnst-p$i"
	# pod i asks for netdev i % NDEV: two pods per netdev
	jq -nc --arg d "$tmp/ri" --arg dev "rnst$((i % NDEV))" '{cniVersion: "1.0.0",
		name: "rnstnet", type: "rdma-netns", device: $dev, requireRdma: false,
		returnTimeout: 2,
		ipam: {type: "rdma-netns-ipam", range: "10.196.0.0/29",
		       range_start: "10.196.0.1", range_end: "10.196.0.2", dataDir: $d}}' >"$tmp/conf$i"
done
host_links() { ip -o link | grep -E '^[0-9]+: rnst' | sed -E 's/^[0-9]+: //; s/ qdisc.*alias/ alias/; s/ qdisc.*//' | vm_link_view; }
baseline=$(host_links)

# op POD VERB: one plugin run in the background, as a runtime starts it
pids=()
op() {
	local p=$1 verb=$2 n=$3
	local -a fault=()
	# one in four dies at a random step of its own (the test build's SIGKILL)
	((RANDOM % 4)) || fault=(RDMA_NETNS_FAULT_STEP=$((RANDOM % 10 + 1)))
	env CNI_COMMAND="$verb" CNI_CONTAINERID="rnst-c$p" CNI_NETNS="/var/run/netns/rnst-p$p" \
		CNI_IFNAME=net1 CNI_PATH="$tmp/bin" \
		CNI_ARGS="K8S_POD_NAMESPACE=stress;K8S_POD_NAME=pod$p" "${fault[@]}" \
		"$PLUGIN" <"$tmp/conf$p" >"$tmp/out/$n.out" 2>"$tmp/out/$n.err" &
	pids+=($!)
}

# Each place's links and addresses, read once a round: one ip per pod, not
# one per netdev and pod (ip -n switches namespaces and remounts /sys: 80 ms
# here, and 24 of them made most of a round's time). PLACE_LINKS[p] (p =
# NPOD: the host) holds -o link lines, POD_ADDRS[p] -o addr lines.
read_places() {
	local p out l
	PLACE_LINKS=() POD_ADDRS=()
	for ((p = 0; p < NPOD; p++)); do
		out=$(printf '%s\n' 'link show' 'addr show' | ip -n "rnst-p$p" -o -batch -)
		while IFS= read -r l; do
			if [[ $l =~ ^[0-9]+:\ [^\ ]+:\ \< ]]; then PLACE_LINKS[p]+=$l$'\n'; else POD_ADDRS[p]+=$l$'\n'; fi
		done <<<"$out"
	done
	PLACE_LINKS[NPOD]=$(ip -o link)
}
# Where each netdev is: exactly one place (host or one pod), by MAC.
placement_ok() {
	local i p where n bad=0
	for ((i = 0; i < NDEV; i++)); do
		n=0 where=
		[[ ${PLACE_LINKS[NPOD],,} == *"${mac[$i],,}"* ]] && { n=$((n + 1)); where+=" host"; }
		for ((p = 0; p < NPOD; p++)); do
			[[ ${PLACE_LINKS[p],,} == *"${mac[$i],,}"* ]] && { n=$((n + 1)); where+=" pod$p"; }
		done
		[ "$n" = 1 ] || { echo "netdev rnst$i (${mac[$i]}) is in $n places:$where"; bad=1; }
	done
	return $bad
}
# No IPv4 address on two pods.
addresses_ok() {
	local p dup='' name fam a
	local -A on=()
	for ((p = 0; p < NPOD; p++)); do
		while read -r _ name fam a _; do
			if [ "$fam" != inet ] || [ "$name" = lo ]; then continue; fi
			[ -z "${on[$a]:-}" ] || dup+="${dup:+ }$a"
			on[$a]=1
		done <<<"${POD_ADDRS[p]:-}"
	done
	[ -z "$dup" ] || { echo "on two pods: $dup"; return 1; }
}

codes=()
bad_rounds=0
for ((r = 1; r <= rounds; r++)); do
	pids=()
	for ((k = 0; k < NOPS; k++)); do
		case $((RANDOM % 8)) in
		0 | 1 | 2 | 3) verb=ADD ;;
		4 | 5 | 6) verb=DEL ;;
		*) verb=CHECK ;;
		esac
		op $((RANDOM % NPOD)) "$verb" "$r.$k"
	done
	# kill -9 one or two of them from outside, at a random moment
	sleep "0.0$((RANDOM % 9 + 1))"
	for ((k = 0; k < RANDOM % 3; k++)); do kill -9 "${pids[RANDOM % NOPS]}" 2>/dev/null; done
	wait
	for f in "$tmp"/out/"$r".*.out; do
		c=$(jq -r '.code // empty' "$f" 2>/dev/null)
		codes+=("${c:-ok}")
	done
	read_places
	why=$(placement_ok; addresses_ok)
	if [ -n "$why" ]; then
		bad_rounds=$((bad_rounds + 1))
		[ "$bad_rounds" -gt 3 ] || vm_diag "round $r: $why"
	fi
done
vm_diag "outcomes: $(printf '%s\n' "${codes[@]}" | sort | uniq -c | awk '{ printf "%s x%s  ", $2, $1 }')"
vm_check "$rounds rounds of $NOPS concurrent operations with kills: no netdev lost or in two places, no address on two pods ($bad_rounds rounds failed)" test "$bad_rounds" = 0

# DEL of everything, as a runtime does for every pod it ever started
del_bad=0
for ((p = 0; p < NPOD; p++)); do
	cni_out=$(env CNI_COMMAND=DEL CNI_CONTAINERID="rnst-c$p" CNI_NETNS="/var/run/netns/rnst-p$p" \
		CNI_IFNAME=net1 CNI_PATH="$tmp/bin" CNI_ARGS="K8S_POD_NAMESPACE=stress;K8S_POD_NAME=pod$p" \
		"$PLUGIN" <"$tmp/conf$p" 2>&1) || { del_bad=$((del_bad + 1)); vm_diag "DEL of pod$p: $cni_out"; }
done
vm_check "DEL of every attachment succeeds" test "$del_bad" = 0
vm_check "every netdev is home with its name and alias" vm_expect_eq "$baseline" "$(host_links)"
left=$(for ((p = 0; p < NPOD; p++)); do ip -n "rnst-p$p" -o link | awk -F': ' '$2 != "lo"'; done)
vm_check "0 netdevs left in the pods" vm_expect_eq "" "$left"
left=$(for ((p = 0; p < NPOD; p++)); do ip -n "rnst-p$p" -o addr | awk '$2 != "lo"'; done)
vm_check "0 addresses left in the pods" vm_expect_eq "" "$left"
vm_check "0 state files" vm_expect_eq "" "$(find "$tmp/state" "$tmp/devinfo" -type f ! -path '*/locks/*' 2>/dev/null)"
"$RDMANS" ipam gc --data-dir "$tmp/ri" >/dev/null 2>&1 # what killed writers left in .tmp
vm_check "0 leases (address and attachment records, temp files)" vm_expect_eq "" \
	"$(find "$tmp/ri" -type f ! -path '*/.locks/*' 2>/dev/null)"
vm_check "0 plugin processes left" vm_expect_eq "" "$(pgrep -f "$tmp/bin" || true)"
vm_done
