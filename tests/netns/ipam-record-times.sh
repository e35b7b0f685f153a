#!/bin/bash
# Record times of every kind through `rdmans ipam reconcile`: a
# dead pod's record (netns deleted, no container) whose time= is far in the
# future, an hour ahead, a little ahead, now, long ago, before 1970, or
# garbage. A time that cannot show an ADD in flight (unreadable, or further
# ahead than the grace) never holds an address; a time a little ahead or
# younger than the grace does, and says so. Local store; the clock is the
# CLI's own (no sleeps: each record's time is set relative to `date`, with
# an hour's margin either side of the 300 s grace).
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/ipam-lib.sh"

ipam_pods_setup rnrt
tap_skip_unless_root

DATA=$IPAM_TMP/store
CONF='{"cniVersion":"1.1.0","name":"rdma-rt","ipam":{"type":"rdma-netns-ipam","range":"10.72.0.0/24","dataDir":"'"$DATA"'","node_name":"node-a"}}'
rdm() { "$RDMANS" "$@" --data-dir "$DATA"; }
ago() { date -u -d "$1" +%Y-%m-%dT%H:%M:%SZ; }

# NAME|TIME|EXPECTED (released or "kept (grace)")|words in the log line
table=(
	"the year 9999|9999-12-31T23:59:59Z|released|is [0-9]*s ahead of this clock"
	"an hour ahead|$(ago '+1 hour')|released|ahead of this clock (stepped back, or the record was edited)"
	"a minute ahead|$(ago '+1 minute')|kept (grace)|ahead of this clock, grace 300s"
	"now|$(ago now)|kept (grace)|record [0-9]*s old, grace 300s"
	"two hours ago|$(ago '-2 hours')|released|record [0-9]*s old"
	"1900|1900-01-01T00:00:00Z|released|record [0-9]*s old"
	"a second before 1970|1969-12-31T23:59:59Z|released|record [0-9]*s old"
	"garbage|yesterday|released|its time 'yesterday' is unreadable"
	"empty||released|its time '' is unreadable"
)
i=0
for row in "${table[@]}"; do
	IFS='|' read -r name t want words <<<"$row"
	i=$((i + 1))
	ip netns add "$NS_PREFIX-$i"
	IPAM_OUT=$(printf '%s' "$CONF" | CNI_COMMAND=ADD CNI_CONTAINERID="rt$i" CNI_IFNAME=net1 \
		CNI_NETNS="/var/run/netns/$NS_PREFIX-$i" CNI_PATH=/nonexistent \
		CNI_ARGS="K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p$i" "$IPAM" 2>>"$IPAM_TMP/stderr")
	a=$(ip_of)
	ip netns del "$NS_PREFIX-$i"
	f=$DATA/_default/addr/$a
	sed -i "s/^time=.*/time=$t/" "$f"
	out=$(rdm ipam reconcile --node node-a --grace 300 2>&1)
	line=$(grep -F " $a (pod ns/p$i," <<<"$out")
	left=$(rdm -j ipam ls --pod "ns/p$i" | jq -r '.[0].address // "none"')
	if [ "$want" = released ]; then gone=none; else gone=$a; fi
	if [[ $line == *"$want $a "* ]] && grep -q "$words" <<<"$line" && [ "$left" = "$gone" ]; then
		vm_ok "time '$t' ($name): $want"
	else
		vm_not_ok "time '$t' ($name): $want, the log saying '$words'"
		vm_diag "reconcile said: $out"
		vm_diag "ls --pod ns/p$i: $left"
	fi
	# what is kept goes by hand, so each row starts from an empty range
	[ "$left" = none ] || rdm ipam release "$a" >/dev/null
done

# ---- records from before netns= was recorded ----
# legacy_add CID TIME: an ADD without CNI_NETNS (what an older plugin stored), its time= set
legacy_add() {
	IPAM_OUT=$(printf '%s' "$CONF" | CNI_COMMAND=ADD CNI_CONTAINERID="$1" CNI_IFNAME=net1 \
		CNI_PATH=/nonexistent CNI_ARGS="K8S_POD_NAMESPACE=ns;K8S_POD_NAME=$1" "$IPAM" \
		2>>"$IPAM_TMP/stderr")
	sed -i "s/^time=.*/time=$2/" "$DATA/_default/addr/$(ip_of)"
}
reconcile_line() { rdm ipam reconcile --node node-a --grace 300 2>&1 | grep -F "(pod ns/$1,"; }
legacy_add legacydead1 "$(ago '-2 days')"
vm_check "a legacy record while no container of this node is seen: kept, saying why" \
	vm_expect_contains "$(reconcile_line legacydead1)" \
	"kept (cannot tell) $(ip_of) (pod ns/legacydead1, ifname net1, container legacydead1, node node-a, scope _default): no namespace path recorded (a record from before netns= was recorded), and no container of this node's records is seen running here"
for d in /sys/fs/cgroup/unified /sys/fs/cgroup; do
	if [ "$(stat -fc %T "$d" 2>/dev/null)" = cgroup2fs ]; then
		CGROUP_DIR=$d/rnrt-test-$$.scope/cri-containerd-legacyrunning1.scope
		break
	fi
done
if [ -n "$CGROUP_DIR" ] && mkdir -p "$CGROUP_DIR"; then
	sleep 600 &
	SLEEPER=$!
	echo "$SLEEPER" >"$CGROUP_DIR/cgroup.procs"
	legacy_add legacyrunning1 "$(ago '-2 days')"
	running=$(ip_of)
	legacy_add legacyyoung1 "$(ago '-30 minutes')"
	young=$(ip_of)
	out=$(rdm ipam reconcile --node node-a --grace 300 2>&1)
	vm_check "a legacy record whose container runs no process, 2 days old: released" \
		vm_expect_contains "$(grep -F '(pod ns/legacydead1,' <<<"$out")" \
		"(a record from before netns= was recorded: judged by its container alone, with a grace of 3600s); container legacydead1 not running; record"
	vm_check "... and gone" vm_expect_eq none "$(rdm -j ipam ls --pod ns/legacydead1 | jq -r '.[0].address // "none"')"
	vm_check "a legacy record whose container runs: kept" \
		vm_expect_contains "$(grep -F '(pod ns/legacyrunning1,' <<<"$out")" "kept (container runs) $running "
	vm_check "a legacy record 30 minutes old: kept (12 x the grace, at least an hour)" \
		vm_expect_contains "$(grep -F '(pod ns/legacyyoung1,' <<<"$out")" "kept (grace) $young "
else
	vm_not_ok "a cgroup2 hierarchy to put a container in"
fi
vm_done
