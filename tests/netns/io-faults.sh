#!/bin/bash
# Errno injection: every write of the IPAM local store and of
# rdma-netns's state file fails in turn with ENOSPC, EIO, EROFS and EDQUOT
# (RDMANS_FAULT_IO=N:ERRNO, test builds only: meson -Dfault_injection=true).
# Each time the CNI error must name the cause (strerror's words), must not
# call a full disk a full range (code 100), and the DEL the runtime runs next
# must succeed and leave nothing behind. Root (veths) for the rdma-netns part.
# Every name here starts with "rnio".
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/cni-lib.sh"
IPAM=$RDMANS_BUILD_DIR/src/ipam/rdma-netns-ipam
cni_netns_start rnio "$IPAM"

declare -A WORDS=([ENOSPC]="No space left on device" [EIO]="Input/output error"
	[EROFS]="Read-only file system" [EDQUOT]="Disk quota exceeded")
writes_of() { sed -n 's/.*fault injection: .*made \([0-9]*\) writes.*/\1/p' <<<"$1" | tail -1; }
fired() { grep -q 'fault injection: .*writes, failed: ' <<<"$1"; }

# ---- rdma-netns-ipam, local store ----
STORE=$tmp/store
RCONF=$(jq -nc --arg d "$STORE" '{cniVersion: "1.0.0", name: "rnionet", type: "rdma-netns",
	ipam: {type: "rdma-netns-ipam", dataDir: $d, range: "10.77.0.0/24"}}')
ipam() { # ipam CMD CID [VAR=VALUE...]: the plugin alone; OUT, ERR, RC
	local cmd=$1 cid=$2
	shift 2
	RC=0
	OUT=$(env CNI_COMMAND="$cmd" CNI_CONTAINERID="$cid" CNI_IFNAME=net1 CNI_NETNS=/var/run/netns/none \
		CNI_PATH=/nonexistent "$@" "$IPAM" <<<"$RCONF" 2>"$tmp/ipam.err") || RC=$?
	ERR=$(<"$tmp/ipam.err")
}
records() { (cd "$STORE" 2>/dev/null && find . -type f ! -path './.locks/*' | sort); }
# names_cause ERRNO: the last run failed with code 5 (I/O) and strerror's words in msg or details
names_cause() {
	local got text
	got=$(jq -r '.code // empty' <<<"$OUT" 2>/dev/null)
	text=$(jq -r '"\(.msg) \(.details // "")"' <<<"$OUT" 2>/dev/null)
	[ "$RC" = 1 ] && [ "$got" = 5 ] && [[ $text == *"${WORDS[$1]}"* ]]
}
# rounds RUN SNAP VERB ERRNO WRITES WHAT: for each write N of VERB, VERB with
# write N failing with ERRNO (a DEL after an ADD), then DEL: the cause named
# (an ADD's injected failure must fail it), DEL succeeds, SNAP as before.
# RUN CMD [VAR=VALUE...] runs the plugin (OUT, ERR, RC). One TAP result.
rounds() {
	local run=$1 snap=$2 verb=$3 e=$4 total=$5 what=$6 base n why bad=0
	base=$($snap)
	for ((n = 1; n <= total; n++)); do
		why=
		if [ "$verb" = DEL ]; then
			$run ADD
			[ "$RC" = 0 ] || why="ADD before DEL's fault $n failed: $OUT"
		fi
		$run "$verb" RDMANS_FAULT_IO="$n:$e"
		if [ -n "$why" ]; then :; elif [ "$verb" = ADD ] && ! fired "$ERR"; then
			why="write $n did not fire"
		elif fired "$ERR" && ! names_cause "$e"; then
			why="$verb with write $n failing ($e): exit $RC, not code 5 naming '${WORDS[$e]}': $OUT"
		fi
		$run DEL
		[ -n "$why" ] || [ "$RC" = 0 ] || why="DEL after $verb's write $n failed ($e): $OUT"
		[ -n "$why" ] || [ "$($snap)" = "$base" ] ||
			why="left behind after $verb's write $n failed ($e), then DEL: $(diff <(echo "$base") <($snap))"
		[ -z "$why" ] || { bad=$((bad + 1)); vm_diag "$why"; $run DEL; }
	done
	vm_check "$what $verb, each of its $total writes failing with $e: code 5 naming '${WORDS[$e]}', then DEL leaves nothing new" test "$bad" = 0
}
ipam_c1() { ipam "$1" rnio-c1 "${@:2}"; }

# three other pods hold addresses, as on a node in use: they must stay held
for c in held1 held2 held3; do ipam ADD "$c"; done
vm_check "three addresses held before the faults" test "$(records | grep -c /addr/)" = 3
base=$(records)
ipam ADD rnio-c1 RDMANS_FAULT_IO=0:ENOSPC
add_writes=$(writes_of "$ERR")
vm_check "an ADD with the switch off succeeds and counts its writes" test "$RC" = 0 -a -n "$add_writes"
ipam DEL rnio-c1 RDMANS_FAULT_IO=0:ENOSPC
del_writes=$(writes_of "$ERR")
vm_check "a DEL counts its writes" test "$RC" = 0 -a -n "$del_writes"
[ -n "$add_writes" ] && [ -n "$del_writes" ] || vm_fail "no write count: build with meson -Dfault_injection=true"
vm_diag "rdma-netns-ipam: ADD makes $add_writes writes, DEL $del_writes"
vm_check "ADD writes at least an attachment and an address (>= 4 writes)" test "$add_writes" -ge 4

for e in ENOSPC EIO EROFS EDQUOT; do
	rounds ipam_c1 records ADD "$e" "$add_writes" rdma-netns-ipam
	rounds ipam_c1 records DEL "$e" "$del_writes" rdma-netns-ipam
done
# a full range is still a full range (code 100), and a full disk on a full range too is I/O
RCONF=$(jq -c '.ipam.range = "10.78.0.0/30"' <<<"$RCONF")
ipam ADD rnio-f1
ipam ADD rnio-f2
ipam ADD rnio-f3
vm_check "a really full range: code 100, 'no free address'" \
	vm_expect_contains "$(jq -r '"\(.code) \(.details)"' <<<"$OUT")" "100 no free address in range 10.78.0.0/30"
for c in rnio-f1 rnio-f2 rnio-f3; do ipam DEL "$c"; done

# ---- rdma-netns: its state file ----
cni_veth_pod rnio "$(jq -nc --arg d "$tmp/hl" '{type: "host-local", subnet: "10.193.0.0/24", dataDir: $d}')"
snap() { cni_netns_snap rnio && cni_scratch_files state devinfo hl; }
cni_c1() { cni_run "$1" "$conf" "${@:2}"; }
baseline=$(snap)
cni_run ADD "$conf" RDMANS_FAULT_IO=0:ENOSPC
cadd=$(writes_of "$ERR")
cni_run DEL "$conf" RDMANS_FAULT_IO=0:ENOSPC
cdel=$(writes_of "$ERR")
vm_check "rdma-netns: ADD and DEL count their state writes" test "$RC" = 0 -a -n "$cadd" -a -n "$cdel"
vm_diag "rdma-netns: ADD makes ${cadd:-?} state writes, DEL ${cdel:-?}"
vm_check "the node is as before" vm_expect_eq "$baseline" "$(snap)"
for e in ENOSPC EIO EROFS EDQUOT; do
	rounds cni_c1 snap ADD "$e" "${cadd:-0}" "rdma-netns (state file)"
	rounds cni_c1 snap DEL "$e" "${cdel:-0}" "rdma-netns (state file)"
done
vm_done
