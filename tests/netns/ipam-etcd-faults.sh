#!/bin/bash
# The etcd store's failures, at every write of rdma-netns-ipam's ADD, DEL and GC.
# A real etcd member sits behind etcd-faults.py, which passes everything
# through until the Nth write, then makes it fail, as do the writes after it:
#   nospace      the member's own NOSPACE alarm (etcd itself refuses the write)
#   frozen       the member stopped (SIGSTOP) with the write sent to it; it
#                carries it out once continued, after the plugin gave up
#   unavailable  503 "etcdserver: no leader"
#   badgateway   502 with a plain-text body, from a load balancer
#   reset        the connection reset, no answer
# Each time the CNI error must name the cause and never call it a full range
# (code 100); once the fault is gone, the DEL (or GC) the runtime runs next
# succeeds and etcd holds exactly what it held before. On a member in NOSPACE,
# DEL and GC still work: etcd allows deletes. Also a member over its
# --quota-backend-bytes, with no proxy: etcd's own NOSPACE.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/ipam-lib.sh"

etcd_cluster 1
ETCD_PID=${ETCD_PIDS[0]}
python3 "$here/etcd-faults.py" "${ETCD_CLIENT[0]}" "$ETCD_PID" "$IPAM_TMP/control" \
	"$IPAM_TMP/port" 2>"$IPAM_TMP/proxy.log" &
ETCD_PIDS+=($!)
vm_poll 30 test -s "$IPAM_TMP/port"
PROXY=http://127.0.0.1:$(cat "$IPAM_TMP/port" 2>/dev/null)
vm_check "the fault proxy serves (its state: $(curl -s "$PROXY/_state"))" \
	sh -c "curl -fs '$PROXY/_state' | grep -q '^writes'"

conf_for() { # conf_for ENDPOINT TIMEOUT_MS DEADLINE_MS
	jq -nc --arg ep "$1" --argjson t "$2" --argjson d "$3" '{cniVersion: "1.1.0", name: "rdma-etcd-faults",
		ipam: {type: "rdma-netns-ipam", range: "10.62.0.0/24", store: "etcd", node_name: "node-1",
		etcd: {endpoints: [$ep], key_prefix: "/f", timeout_ms: $t, deadline_ms: $d}}}'
}
# Only the call that meets a frozen member runs with short timeouts (its
# deadline is what it must name). Every other call has time to spare: a
# member writing to a busy disk, or just continued, may take over 500 ms to
# answer, and that must not decide the test. The frozen call's reads before
# its write have 3 s, which no read of a member that answers comes near.
CONF=$(conf_for "$PROXY" 10000 30000)
FROZEN_CONF=$(conf_for "$PROXY" 1000 3000)
# ipam CMD CID: the plugin through the proxy; OUT, RC
ipam() {
	RC=0
	ipam_run "$1" "$2" net1 "ns/$2" || RC=$?
	OUT=$IPAM_OUT
}
# GC keeps the three held pods' attachments and releases every other one
gc_conf() { jq -c '. + {"cni.dev/valid-attachments": [range(1; 4) | {containerID: "held\(.)", ifname: "net1"}]}' <<<"$1"; }
run_verb() { # run_verb VERB [CONF]: c1's ADD or DEL, or a GC, with CONF (default: $CONF)
	local conf=${2:-$CONF}
	if [ "$1" = GC ]; then CONF=$(gc_conf "$conf") ipam GC -; else CONF=$conf ipam "$1" c1; fi
}
records() { etcdctl_ 0 get --prefix /f/ --keys-only | grep . | sort; }
GEN=0
fault() { # fault N MODE: from write N on (0: none), counting from now
	GEN=$((GEN + 1))
	echo "$GEN $1 $2" >"$IPAM_TMP/control.new"
	mv "$IPAM_TMP/control.new" "$IPAM_TMP/control"
}
proxy_writes() { curl -s "$PROXY/_state" | awk '{print $2}'; }
settled() { curl -s "$PROXY/_state" | grep -q ' open 0$'; }
reached() { [ "$(proxy_writes)" -ge "$1" ]; }
# recover: the fault goes (the member continued, its alarm disarmed, the
# proxy passing through), and every request the plugin made is over: the
# one a frozen member held has been carried out
recover() {
	fault 0 off
	kill -CONT "$ETCD_PID"
	vm_poll 60 settled
	etcdctl_ 0 alarm disarm >/dev/null
}

declare -A WORDS=([nospace]="etcdserver: mvcc: database space exceeded: its database is over its quota" [frozen]="deadline of 3000 ms"
	[unavailable]="etcdserver: no leader" [badgateway]="HTTP 502: upstream connect error"
	[reset]="Connection reset by peer")
# the CNI code: the store cannot take the write (5, I/O), or try again later (11)
declare -A CODE=([nospace]=5 [frozen]=11 [unavailable]=11 [badgateway]=5 [reset]=11)
names_cause() { # names_cause MODE: the last run failed with its code and words
	[ "$RC" = 1 ] && [ "$(jq -r .code <<<"$OUT" 2>/dev/null)" = "${CODE[$1]}" ] &&
		[[ "$(jq -r '"\(.msg) \(.details // "")"' <<<"$OUT" 2>/dev/null)" == *"${WORDS[$1]}"* ]]
}

# three other pods hold addresses, as on a node in use: they must stay held
for c in held1 held2 held3; do ipam ADD "$c"; done
vm_check "three addresses held before the faults" vm_expect_eq 6 "$(records | grep -c .)" "keys"
base=$(records)
fault 0 off
ipam ADD c1
add_writes=$(proxy_writes)
vm_check "an ADD through the proxy succeeds and counts its writes ($add_writes)" test "$RC" = 0 -a "${add_writes:-0}" -ge 1
fault 0 off
ipam DEL c1
del_writes=$(proxy_writes)
vm_check "a DEL through the proxy succeeds and counts its writes ($del_writes)" test "$RC" = 0 -a "${del_writes:-0}" -ge 1
vm_check "etcd holds what it held before" vm_expect_eq "$base" "$(records)"
ipam ADD c1
fault 0 off
run_verb GC
gc_writes=$(proxy_writes)
vm_check "a GC through the proxy succeeds, releasing c1, and counts its writes ($gc_writes)" \
	test "$RC" = 0 -a "${gc_writes:-0}" -ge 1 -a "$(records)" = "$base"

# rounds VERB MODE TOTAL: VERB (ADD, DEL, GC) with MODE from each of its
# writes on, then the fault goes and what the runtime runs next: DEL, or GC
rounds() {
	local verb=$1 mode=$2 total=$3 n why bad=0 late=0 after
	for ((n = 1; n <= total; n++)); do
		why=
		if [ "$verb" != ADD ]; then
			ipam ADD c1
			[ "$RC" = 0 ] || why="ADD before $verb's fault $n failed: $OUT"
		fi
		fault "$n" "$mode"
		if [ "$mode" = frozen ]; then run_verb "$verb" "$FROZEN_CONF"; else run_verb "$verb"; fi
		vm_poll 60 reached "$n"
		if [ -n "$why" ]; then
			:
		elif [ "$(proxy_writes)" -lt "$n" ]; then
			why="$verb made $(proxy_writes) writes, fewer than $n"
		elif [ "$verb" != ADD ] && [ "$mode" = nospace ]; then
			# a full etcd still deletes: DEL and GC must free the address anyway
			[ "$RC" = 0 ] || why="$verb on a member over its quota failed: $OUT"
		elif ! names_cause "$mode"; then
			why="$verb with write $n failing ($mode): exit $RC, not code ${CODE[$mode]} naming '${WORDS[$mode]}': $OUT"
		fi
		[ "$n" != 1 ] || vm_diag "$verb, $mode: exit $RC $(jq -c '{code, msg, details}' <<<"$OUT" 2>/dev/null)"
		recover
		[ "$(records | grep -c .)" = "$(($(grep -c . <<<"$base") + 2))" ] && late=$((late + 1))
		after=DEL
		[ "$verb" != GC ] || after=GC
		run_verb "$after"
		[ -n "$why" ] || [ "$RC" = 0 ] || why="$after after $verb's write $n failed ($mode): $OUT"
		[ -n "$why" ] || [ "$(records)" = "$base" ] ||
			why="left behind after $verb's write $n failed ($mode), then $after: $(diff <(echo "$base") <(records))"
		[ -z "$why" ] || { bad=$((bad + 1)); vm_diag "$why"; ipam DEL c1; }
	done
	# the ADD's claim that a frozen member carried out after waking: DEL freed it above
	[ "$verb" != ADD ] || [ "$mode" != frozen ] || vm_check \
		"the frozen member carried out each held claim once continued ($late of $total), and DEL freed it" \
		test "$late" = "$total"
	if [ "$verb" != ADD ] && [ "$mode" = nospace ]; then
		vm_check "$verb, each of its $total writes with the member's NOSPACE alarm raised: it still frees the address, nothing left" test "$bad" = 0
	else
		vm_check "$verb, each of its $total writes failing ($mode): code ${CODE[$mode]} naming '${WORDS[$mode]}', then $after leaves nothing new" test "$bad" = 0
	fi
}
for mode in nospace frozen unavailable badgateway reset; do
	rounds ADD "$mode" "$add_writes"
	rounds DEL "$mode" "$del_writes"
	rounds GC "$mode" "$gc_writes"
done
vm_check "the three other pods' addresses are still held" vm_expect_eq "$base" "$(records)"

# a member that really is over its quota: no proxy, no alarm raised by hand
free_port
qport=$PORT
free_port
etcd --name q --data-dir "$IPAM_TMP/etcd-q" --quota-backend-bytes 1 \
	--listen-client-urls "http://127.0.0.1:$qport" --advertise-client-urls "http://127.0.0.1:$qport" \
	--listen-peer-urls "http://127.0.0.1:$PORT" --initial-advertise-peer-urls "http://127.0.0.1:$PORT" \
	--initial-cluster "q=http://127.0.0.1:$PORT" >"$IPAM_TMP/etcd-q.log" 2>&1 &
ETCD_PIDS+=($!)
vm_poll 30 sh -c "curl -fs http://127.0.0.1:$qport/health | grep -q true"
CONF=$(conf_for "http://127.0.0.1:$qport" 10000 30000)
ipam ADD q1
vm_check "an ADD on a member over its --quota-backend-bytes fails with code 5 naming etcd's NOSPACE" names_cause nospace
vm_check "... and the member's own alarm says NOSPACE" sh -c \
	"ETCDCTL_API=3 etcdctl --endpoints=http://127.0.0.1:$qport alarm list | grep -q NOSPACE"
ipam DEL q1
vm_check "the DEL after it succeeds" test "$RC" = 0
vm_check "... and the full member holds nothing of it" vm_expect_eq "" \
	"$(ETCDCTL_API=3 etcdctl --endpoints="http://127.0.0.1:$qport" get --prefix /f/ --keys-only)"
vm_done
