#!/bin/bash
# rdmans ipam reconcile on the host kernel, local store and a real etcd:
# pods killed without DEL (their netns deleted under a live record) are
# freed after the grace period and not before (the grace is a flag, the age
# is the record's own time=: no sleep races a clock); a pod whose container
# still runs, a record without a netns and damaged records are reported, not
# released; ADDs racing the reconciler never lose their address (rounds of
# kills, re-ADDs and new pods on a tiny range, invariants after each); two
# nodes sharing one etcd each free only their own. Damaged records
# through the CLI and the plugin on both stores.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/ipam-lib.sh"

ipam_pods_setup rnrc

# pod_add CID POD NETNS-NAME [NODE]: ADD with CNI_NETNS=/var/run/netns/NAME (created if missing)
pod_add() {
	local cid=$1 pod=$2 ns=$3 node=${4:-node-a} conf
	[ -e "/var/run/netns/$ns" ] || ip netns add "$ns"
	conf=$(printf '%s' "$CONF" | jq -c --arg n "$node" '.ipam.node_name = $n')
	IPAM_OUT=$(printf '%s' "$conf" | CNI_COMMAND=ADD CNI_CONTAINERID=$cid CNI_IFNAME=net1 \
		CNI_NETNS=/var/run/netns/$ns CNI_PATH=/nonexistent \
		CNI_ARGS="K8S_POD_NAMESPACE=${pod%/*};K8S_POD_NAME=${pod#*/}" "$IPAM" 2>>"$IPAM_TMP/stderr")
}
# plugin CMD CID POD: CHECK/DEL of a pod (CNI_NETNS as ADD had it does not matter to IPAM)
plugin() {
	IPAM_OUT=$(printf '%s' "$CONF" | CNI_COMMAND=$1 CNI_CONTAINERID=$2 CNI_IFNAME=net1 \
		CNI_NETNS=/var/run/netns/none CNI_PATH=/nonexistent \
		CNI_ARGS="K8S_POD_NAMESPACE=${3%/*};K8S_POD_NAME=${3#*/}" "$IPAM" 2>>"$IPAM_TMP/stderr")
}
rdm() { "$RDMANS" "$@" "${STORE[@]}"; }
held() { rdm -j ipam ls | jq -r '[.[] | select(.address and .pod) | .address] | length'; }
addr_of_pod() { rdm -j ipam ls --pod "$1" | jq -r '.[0].address // "none"'; }
hexkey() { local IFS=.; set -- $1; printf '4-%02x%02x%02x%02x' "$1" "$2" "$3" "$4"; }
# record_get ADDR / record_put ADDR TEXT: the stored address record, whatever the store
record_get() {
	if [ "$KIND" = local ]; then cat "$DATA/_default/addr/$1"; else etcdctl_ 0 get --print-value-only "/$PREFIX/_default/addr/$(hexkey "$1")"; fi
}
record_netns_inode() { record_get "$1" | sed -n 's/^netns_ino=//p'; }
record_put() {
	if [ "$KIND" = local ]; then
		rm -rf "$DATA/_default/addr/$1"
		printf '%s' "$2" >"$DATA/_default/addr/$1"
	else etcd_put "/$PREFIX/_default/addr/$(hexkey "$1")" "$2"; fi
}
# etcd_put KEY VALUE: through the JSON gateway (etcdctl refuses an empty value)
etcd_put() {
	curl -fsS -o /dev/null "${ETCD_CLIENT[0]}/v3/kv/put" -d "{\"key\":\"$(printf '%s' "$1" | base64 -w0)\",\"value\":\"$(printf '%s' "$2" | base64 -w0)\"}"
}
att_put() { # att_put POD TEXT
	local id="${1}/net1"
	if [ "$KIND" = local ]; then printf '%s' "$2" >"$DATA/_default/attachments/${id//\//%2F}"
	else etcd_put "/$PREFIX/_default/attachments/$id" "$2"; fi
}

# A container that runs: a process in a cgroup whose path names its ID, as runtimes do.
for d in /sys/fs/cgroup/unified /sys/fs/cgroup; do
	if [ "$(stat -fc %T "$d" 2>/dev/null)" = cgroup2fs ]; then
		CGROUP_DIR=$d/rnrc-test-$$.scope/cri-containerd-runningcontainer1.scope
		break
	fi
done

scenario() { # scenario KIND: the whole sequence against one store
	KIND=$1
	local out r i round x nsp
	vm_diag "---- store: $KIND"
	# 1. four pods, two killed without DEL
	for i in 1 2 3 4; do pod_add "c$i-$KIND" "ns/p$i" "$NS_PREFIX-$i" || vm_not_ok "ADD p$i"; done
	p1=$(addr_of_pod ns/p1)
	p2=$(addr_of_pod ns/p2)
	ip netns del "$NS_PREFIX-1"
	ip netns del "$NS_PREFIX-2"
	out=$(rdm ipam reconcile --node node-a --grace 3600)
	vm_check "$KIND: within the grace period nothing is released" vm_expect_eq 4 "$(held)"
	vm_check "$KIND: ... and the log says why p1 is kept" vm_expect_contains "$out" \
		"kept (grace) $p1 (pod ns/p1, ifname net1, container c1-$KIND, node node-a, scope _default): /var/run/netns/$NS_PREFIX-1 no longer exists; record"
	# p1's record says it is two hours old: past a one-hour grace; p2's is new
	old=$(date -u -d '-2 hours' +%Y-%m-%dT%H:%M:%SZ)
	record_put "$p1" "$(record_get "$p1" | sed "s/^time=.*/time=$old/")"
	out=$(rdm ipam reconcile --node node-a --grace 3600)
	vm_check "$KIND: a dead pod's record older than the grace is released" vm_expect_eq "none 3" \
		"$(addr_of_pod ns/p1) $(held)"
	vm_check "$KIND: ... one log line with pod, address and why" vm_expect_eq 1 \
		"$(grep -c "released $p1 (pod ns/p1, ifname net1, container c1-$KIND, node node-a, scope _default): /var/run/netns/$NS_PREFIX-1 no longer exists; container c1-$KIND not running; record [0-9]*s old" <<<"$out")"
	vm_check "$KIND: ... and p2, younger than the grace, is kept" vm_expect_eq "$p2" "$(addr_of_pod ns/p2)"
	out=$(rdm ipam reconcile --node node-a --grace 0 --dry-run)
	vm_check "$KIND: --dry-run says what it would release and releases nothing" vm_expect_eq "1 3" \
		"$(grep -c "would release $p2 (pod ns/p2" <<<"$out") $(held)"
	out=$(rdm -j ipam reconcile --node node-a --grace 0)
	vm_check "$KIND: with --grace 0 p2 goes; the live p3 and p4 stay" vm_expect_eq "1 2 2" \
		"$(jq -r '"\(.released) \(.alive) \(.this_node - 1)"' <<<"$out")"
	for i in 3 4; do
		plugin CHECK "c$i-$KIND" "ns/p$i"
		vm_check "$KIND: CHECK of the live p$i still passes" vm_expect_eq 0 "$?"
	done
	# 2. what cannot be told is kept: no netns recorded, a container that runs
	IPAM_OUT=$(printf '%s' "$CONF" | CNI_COMMAND=ADD CNI_CONTAINERID=c5-$KIND CNI_IFNAME=net1 \
		CNI_ARGS="K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p5" "$IPAM" 2>>"$IPAM_TMP/stderr")
	out=$(rdm ipam reconcile --node node-a --grace 0)
	vm_check "$KIND: a record without a netns is kept and reported" vm_expect_contains "$out" \
		"kept (cannot tell) $(addr_of_pod ns/p5) (pod ns/p5"
	if [ -n "$CGROUP_DIR" ]; then
		pod_add runningcontainer1 ns/p6 "$NS_PREFIX-6"
		ip netns del "$NS_PREFIX-6"
		out=$(rdm ipam reconcile --node node-a --grace 0)
		vm_check "$KIND: a gone netns whose container still runs is kept" vm_expect_contains "$out" \
			"kept (container runs) $(addr_of_pod ns/p6) (pod ns/p6"
		kill "$SLEEPER"
		wait "$SLEEPER" 2>/dev/null
		SLEEPER=
		out=$(rdm ipam reconcile --node node-a --grace 0)
		vm_check "$KIND: ... and released once it stops" vm_expect_eq "none" "$(addr_of_pod ns/p6)"
	fi
	plugin DEL "c5-$KIND" ns/p5
	# a netns path that is a plain file (an unpropagated mount) cannot be told: kept
	: >"/var/run/netns/$NS_PREFIX-plain"
	pod_add "c9-$KIND" ns/p9 "$NS_PREFIX-plain"
	vm_check "$KIND: a netns path that is no namespace is kept and reported" vm_expect_contains \
		"$(rdm ipam reconcile --node node-a --grace 0)" "kept (cannot tell) $(addr_of_pod ns/p9) (pod ns/p9"
	rm -f "/var/run/netns/$NS_PREFIX-plain"
	plugin DEL "c9-$KIND" ns/p9
	# the same netns name made again: another namespace, the pod's is gone
	pod_add "c10-$KIND" ns/p10 "$NS_PREFIX-10"
	# the old namespace is held (a bind mount) while the new one is made: the kernel
	# gives a freed namespace's inode number to the next one, and whether the old one
	# was freed yet depended on the machine's load (it failed once beside two guests)
	: >"$IPAM_TMP/old-ns-$KIND"
	mount --bind "/var/run/netns/$NS_PREFIX-10" "$IPAM_TMP/old-ns-$KIND"
	ip netns del "$NS_PREFIX-10"
	ip netns add "$NS_PREFIX-10"
	umount "$IPAM_TMP/old-ns-$KIND"
	vm_check "$KIND: the new namespace has another inode than the recorded one" \
		sh -c '[ "$(stat -L -c %i "$1")" != "$2" ]' _ "/var/run/netns/$NS_PREFIX-10" "$(record_netns_inode "$(addr_of_pod ns/p10)")"
	vm_check "$KIND: a netns name reused by a new namespace (other inode) counts as gone" vm_expect_contains \
		"$(rdm ipam reconcile --node node-a --grace 0)" "is now another namespace"
	vm_check "$KIND: ... and the record is released" vm_expect_eq none "$(addr_of_pod ns/p10)"

	# 3. damaged records: seen, reported, removed only while damaged
	pod_add "c7-$KIND" ns/p7 "$NS_PREFIX-7"
	p7=$(addr_of_pod ns/p7)
	good=$(record_get "$p7")
	record_put 10.70.0.40 "$(printf '\001garbage')"
	record_put 10.70.0.41 ""
	record_put 10.70.0.42 "$(printf '%s' "$good" | head -c 40)"
	vm_check "$KIND: ipam ls lists the 3 damaged records with why" vm_expect_eq \
		'10.70.0.40 10.70.0.41 10.70.0.42' \
		"$(rdm -j ipam ls | jq -r '[.[] | select(.damaged) | .address] | sort | join(" ")')"
	vm_check "$KIND: ipam show of a damaged address says DAMAGED" vm_expect_contains \
		"$(rdm ipam show 10.70.0.41)" "DAMAGED:      it is empty"
	out=$(rdm ipam reconcile --node node-a --grace 0)
	vm_check "$KIND: the reconciler reports them and frees none" vm_expect_eq "3 3" \
		"$(grep -c '^[^ ]* damaged address record 10.70.0.4[012]' <<<"$out") $(rdm -j ipam ls | jq '[.[] | select(.damaged)] | length')"
	vm_check "$KIND: gc counts them and leaves them" vm_expect_contains "$(rdm ipam gc)" \
		"3 damaged address record(s) still take their address"
	rc=0
	out=$(rdm ipam release --damaged "$p7" 2>&1) || rc=$?
	vm_check "$KIND: release --damaged refuses a readable record" vm_expect_eq "1 $good" "$([ $rc != 0 ] && echo 1) $(record_get "$p7")"
	rdm ipam release --damaged 10.70.0.40 >/dev/null
	vm_check "$KIND: release --damaged removes one damaged record" vm_expect_eq \
		'10.70.0.41 10.70.0.42' "$(rdm -j ipam ls | jq -r '[.[] | select(.damaged) | .address] | sort | join(" ")')"
	# a damaged attachment: re-ADD keeps the address (was code 6), DEL frees it
	att_put ns/p7 "not a record"
	pod_add "c7-$KIND" ns/p7 "$NS_PREFIX-7"
	vm_check "$KIND: re-ADD over a damaged attachment returns the pod's address" vm_expect_eq "$p7/24" \
		"$(jq -r '.ips[0].address' <<<"$IPAM_OUT")"
	att_put ns/p7 ""
	plugin DEL "c7-$KIND" ns/p7
	vm_check "$KIND: DEL over a damaged attachment succeeds and frees the address" vm_expect_eq "0 none" \
		"$? $(addr_of_pod ns/p7)"
	# DEL of a pod whose own address record was damaged: nothing is left
	pod_add "c8-$KIND" ns/p8 "$NS_PREFIX-8"
	p8=$(addr_of_pod ns/p8)
	record_put "$p8" "garbage"
	plugin DEL "c8-$KIND" ns/p8
	vm_check "$KIND: DEL of a pod whose address record is damaged removes it too" vm_expect_eq "0 0" \
		"$? $(rdm -j ipam ls | jq --arg a "$p8" '[.[] | select(.address == $a)] | length')"
	rdm ipam release --damaged >/dev/null
	vm_check "$KIND: release --damaged without an address clears the rest" vm_expect_eq 0 \
		"$(rdm -j ipam ls | jq '[.[] | select(.damaged)] | length')"

	# 4. ADDs racing the reconciler on a /29 (6 addresses, 5 pods): each round kills
	#    pods without DEL, then, while two reconcilers run, re-ADDs some as new
	#    sandboxes (new netns, same attachment), restarts others in a new netns
	#    under the same container ID (podman restart: only the record's exact
	#    revision tells the old from the new), and replaces the rest by new pods
	#    (DEL + ADD: the same addresses change hands). No live pod may lose its
	#    address; the live pods' addresses are all different.
	local CONF_SAVE=$CONF lost=0 dup=0 bad=0 rounds=${RACE_ROUNDS:-25}
	CONF=$(printf '%s' "$CONF" | jq -c '.name = "race" | .ipam.network_name = "race" | .ipam.range = "10.71.0.0/29"')
	declare -A cid pod
	for i in 1 2 3 4 5; do
		cid[$i]=r0-$i-$KIND
		pod[$i]=race/s$i-0
		pod_add "${cid[$i]}" "${pod[$i]}" "$NS_PREFIX-r$i-0" || bad=$((bad + 1))
	done
	for round in $(seq 1 "$rounds"); do
		# (the names from /var/run/netns, as ip netns list reads them: each round's
		# processes are most of this test's time)
		for i in 1 2 3 4 5; do
			for nsp in "/var/run/netns/$NS_PREFIX-r$i-"*; do ip netns del "${nsp##*/}"; done
		done
		(
			rdm ipam reconcile --node node-a --grace 0 --scope race >/dev/null &
			rdm ipam reconcile --node node-a --grace 0 --scope race >/dev/null &
			for i in 1 2 3 4 5; do
				case $(((i + round) % 3)) in
				0) # a new sandbox of the same pod
					pod_add "r$round-$i-$KIND" "${pod[$i]}" "$NS_PREFIX-r$i-$round" || echo fail >>"$IPAM_TMP/race.fail" ;;
				1) # the same container restarted in a new netns (podman restart)
					pod_add "${cid[$i]}" "${pod[$i]}" "$NS_PREFIX-r$i-$round" || echo fail >>"$IPAM_TMP/race.fail" ;;
				2) # the pod deleted, another one takes its place
					plugin DEL "${cid[$i]}" "${pod[$i]}"
					pod_add "r$round-$i-$KIND" "race/s$i-$round" "$NS_PREFIX-r$i-$round" || echo fail >>"$IPAM_TMP/race.fail" ;;
				esac &
			done
			wait
		)
		for i in 1 2 3 4 5; do
			case $(((i + round) % 3)) in
			0) cid[$i]=r$round-$i-$KIND ;;
			2) cid[$i]=r$round-$i-$KIND pod[$i]=race/s$i-$round ;;
			esac
			plugin CHECK "${cid[$i]}" "${pod[$i]}" || lost=$((lost + 1))
		done
		# the live pods' addresses, from one listing of the network
		x=$(rdm -j ipam ls --network race | jq -r --args '.[] | select(.pod as $p | $ARGS.positional | index([$p])) |
			.address' "${pod[@]}" | sort -u | wc -l)
		[ "$x" = 5 ] || dup=$((dup + 1))
	done
	bad=$((bad + $(cat "$IPAM_TMP/race.fail" 2>/dev/null | wc -l)))
	vm_check "$KIND: $rounds rounds of ADDs racing two reconcilers: every ADD succeeded" vm_expect_eq 0 "$bad"
	vm_check "$KIND: ... no live pod lost its address (CHECK after each round)" vm_expect_eq 0 "$lost"
	vm_check "$KIND: ... each of the 5 live pods held its own address" vm_expect_eq 0 "$dup"
	rdm ipam reconcile --node node-a --grace 0 >/dev/null
	vm_check "$KIND: ... and at the end exactly the 5 live pods hold addresses" vm_expect_eq 5 \
		"$(rdm -j ipam ls --network race | jq length)"
	for n in $(ip netns list | awk '{print $1}' | grep "^$NS_PREFIX-"); do ip netns del "$n"; done
	CONF=$CONF_SAVE
	rdm ipam reconcile --node node-a --grace 0 >/dev/null
	vm_check "$KIND: with every netns gone, the reconciler leaves nothing of node-a" vm_expect_eq 0 \
		"$(rdm -j ipam ls --node node-a | jq length)"
}

if [ -n "$CGROUP_DIR" ] && mkdir -p "$CGROUP_DIR"; then
	start_sleeper() {
		sleep 600 &
		SLEEPER=$!
		echo "$SLEEPER" >"$CGROUP_DIR/cgroup.procs"
	}
else
	vm_diag "no cgroup2 hierarchy to put a container in: the running-container case is not run"
	vm_not_ok "a cgroup2 hierarchy for the running-container case"
	CGROUP_DIR=
fi

DATA=$IPAM_TMP/store
STORE=(--data-dir "$DATA")
CONF='{"cniVersion":"1.1.0","name":"rdma-rc","ipam":{"type":"rdma-netns-ipam","range":"10.70.0.0/24","dataDir":"'"$DATA"'","node_name":"node-a"}}'
[ -z "$CGROUP_DIR" ] || start_sleeper
scenario local

etcd_cluster 1
PREFIX=rc
EP=$(etcd_endpoints_json)
STORE=(--etcd "${ETCD_CLIENT[0]}" --etcd-prefix "/$PREFIX")
CONF='{"cniVersion":"1.1.0","name":"rdma-rc","ipam":{"type":"rdma-netns-ipam","range":"10.70.0.0/24","store":"etcd","node_name":"node-a","etcd":{"endpoints":'"$EP"',"key_prefix":"/'$PREFIX'"}}}'
[ -z "$CGROUP_DIR" ] || start_sleeper
scenario etcd

# two nodes sharing one etcd: each frees only its own
for i in 1 2 3; do
	pod_add "a$i" "ns/a$i" "$NS_PREFIX-a$i" node-a
	pod_add "b$i" "ns/b$i" "$NS_PREFIX-b$i" node-b
done
for n in $(ip netns list | awk '{print $1}' | grep "^$NS_PREFIX-[ab]"); do ip netns del "$n"; done
out=$(rdm -j ipam reconcile --node node-a --grace 0)
vm_check "two nodes, one etcd: node-a's reconciler frees node-a's 3 dead pods" vm_expect_eq "3 0" \
	"$(jq -r .released <<<"$out") $(rdm -j ipam ls --node node-a | jq length)"
vm_check "... and leaves node-b's 3 (dead too) alone" vm_expect_eq 3 "$(rdm -j ipam ls --node node-b | jq length)"
out=$(rdm -j ipam reconcile --node node-b --grace 0)
vm_check "node-b's reconciler then frees its own 3" vm_expect_eq "3 0" \
	"$(jq -r .released <<<"$out") $(rdm -j ipam ls --node node-b | jq length)"

vm_check "bad --grace: usage error, nothing changed" bash -c "! '$RDMANS' ipam reconcile --grace -5 ${STORE[*]} 2>/dev/null"
vm_done
