#!/bin/bash
# Guest script: "here" under `nsenter -n`. nsenter --net
# joins a netns but keeps the caller's mount namespace, so /sys still shows
# the host's netns while netlink shows the pod's. Every command that reads
# "here" (dev, gids, env, doctor, exporter) must give the pod's answer, equal
# to what --netns gives from the host, or refuse and say how to get it.
# `ip netns exec` remounts /sys; nsenter --net does not: both are checked.
set -u
. "$RDMANS_VM_LIB"
R=$RDMANS_BUILD_DIR/src/cli/rdmans
IN_POD="nsenter --net=/run/netns/pod1"
# a root process without CAP_SYS_ADMIN: it cannot mount a sysfs of its own
NO_ADMIN="setpriv --bounding-set -sys_admin"

vm_load_rdma exclusive
vm_load_simhca
vm_veth h0 p0 && vm_veth h1 p1 || vm_fail "veths"
dev0=$(vm_simhca_new "irdma%d" h0) || vm_fail "simhca on h0"
dev1=$(vm_simhca_new "irdma%d" h1) || vm_fail "simhca on h1"
ip addr add 10.57.1.1/24 dev h1
ip netns add pod1
vm_check "move $dev0 into pod1 with its netdev (net1)" "$R" move "$dev0" pod1 --with-netdev --netdev-name net1
ip -n pod1 addr add 10.57.0.2/24 dev net1 && ip -n pod1 link set net1 up && ip -n pod1 link set lo up
gid_in_pod() { "$R" -j gids "$dev0" --netns pod1 | jq -e '.[] | select(.ipv4 == "10.57.0.2" and .ver == "v2")'; }
gid_on_host() { "$R" -j gids "$dev1" | jq -e '.[] | select(.ipv4 == "10.57.1.1" and .ver == "v2")'; }
vm_check "pod1's GID for 10.57.0.2 appears" vm_poll 60 gid_in_pod
vm_check "the host's GID for 10.57.1.1 appears" vm_poll 60 gid_on_host
vm_check "nsenter --net keeps the host's /sys (the case under test)" \
	$IN_POD sh -c "test -e /sys/class/infiniband/$dev1 && test ! -e /sys/class/infiniband/$dev0"

# --- dev: netlink only --------------------------------------------------------------
vm_run_code 0 "dev under nsenter --net" $IN_POD "$R" -j dev
vm_check "dev under nsenter: $dev0 alone" vm_expect_eq "$dev0" "$(echo "$OUT" | jq -r '[.[].ifname] | join(" ")')"

# --- gids ---------------------------------------------------------------------------
vm_run_code 0 "gids --netns pod1 (from the host)" "$R" -j gids --netns pod1
want=$OUT
vm_check "gids --netns pod1: $dev0 on net1 with 10.57.0.2" \
	sh -c "echo '$want' | jq -e '[.[].dev] | unique == [\"$dev0\"]' && echo '$want' | jq -e 'any(.[]; .ipv4 == \"10.57.0.2\")'"
vm_run_code 0 "gids under nsenter --net" $IN_POD "$R" -j gids
vm_check "gids under nsenter --net = gids --netns pod1" vm_expect_eq "$want" "$OUT"
vm_run_code 0 "gids under ip netns exec" ip netns exec pod1 "$R" -j gids
vm_check "gids under ip netns exec = gids --netns pod1" vm_expect_eq "$want" "$OUT"
vm_run_code 0 "gids $dev0 under nsenter --net (named)" $IN_POD "$R" -j gids "$dev0"
vm_check "gids $dev0 under nsenter --net = --netns pod1" vm_expect_eq "$want" "$OUT"
vm_run_code 3 "gids $dev1 under nsenter --net: not here" $IN_POD "$R" -j gids "$dev1"
vm_run_code 1 "gids under nsenter --net without CAP_SYS_ADMIN: refused" $IN_POD $NO_ADMIN "$R" gids
vm_check "refusal says how: --netns" vm_expect_contains "$ERR" "--netns TARGET"
vm_check "refusal says why: /sys is another netns's" vm_expect_contains "$ERR" "/sys shows another network namespace"
vm_check "refusal prints no table" vm_expect_eq "" "$OUT"
vm_run_code 0 "gids on the host without CAP_SYS_ADMIN: /sys is its own, answered" $NO_ADMIN "$R" -j gids
vm_check "host without CAP_SYS_ADMIN: $dev1, not $dev0" vm_expect_eq "$dev1" "$(echo "$OUT" | jq -r '[.[].dev] | unique | join(" ")')"

# --- env ----------------------------------------------------------------------------
vm_run_code 0 "env --netns pod1 (from the host)" "$R" env --netns pod1 --format env
want=$OUT
vm_check "env --netns pod1 names $dev0 only" sh -c "echo '$want' | grep -q '^NCCL_IB_HCA=.*$dev0' && ! echo '$want' | grep -q '$dev1'"
vm_run_code 0 "env under nsenter --net" $IN_POD "$R" env --format env
vm_check "env under nsenter --net = env --netns pod1" vm_expect_eq "$want" "$OUT"
vm_run_code 0 "env under ip netns exec" ip netns exec pod1 "$R" env --format env
vm_check "env under ip netns exec = env --netns pod1" vm_expect_eq "$want" "$OUT"
vm_run_code 1 "env under nsenter --net without CAP_SYS_ADMIN: refused" $IN_POD $NO_ADMIN "$R" env
vm_check "env refusal says how: --netns" vm_expect_contains "$ERR" "--netns TARGET"
vm_check "env refusal prints no settings" vm_expect_eq "" "$OUT"

# --- doctor: the netns checks (process checks differ: there is a process here) --------
# the devices check names the target ("in netns 'pod1'", "in this process's netns"): not compared
netns_checks() {
	jq -c '[.checks[] | select(.id | IN("devices", "port-state", "netdev", "gid", "mtu")) | {id, subject, status, message}
		| .message |= sub("in (netns .pod1.|this process.s netns)"; "in TARGET")]'
}
"$R" -j doctor --netns pod1 >/tmp/doctor-want.json
want=$(netns_checks </tmp/doctor-want.json)
vm_check "doctor --netns pod1: $dev0 in pod1" vm_expect_contains "$want" "$dev0 (Ethernet)"
vm_check "doctor --netns pod1: the GID of 10.57.0.2" vm_expect_contains "$want" "10.57.0.2 at GID index"
$IN_POD "$R" -j doctor >/tmp/doctor-got.json
vm_check "doctor under nsenter --net = doctor --netns pod1 (netns checks)" vm_expect_eq "$want" "$(netns_checks </tmp/doctor-got.json)"
ip netns exec pod1 "$R" -j doctor >/tmp/doctor-got.json
vm_check "doctor under ip netns exec = doctor --netns pod1 (netns checks)" vm_expect_eq "$want" "$(netns_checks </tmp/doctor-got.json)"
vm_run_code 21 "doctor under nsenter --net without CAP_SYS_ADMIN: FAIL" $IN_POD $NO_ADMIN "$R" -j doctor
printf '%s\n' "$OUT" >/tmp/doctor-refused.json
vm_check "doctor: the devices check FAILs and says how (--netns)" \
	vm_expect_contains "$(jq -r '.checks[] | select(.id == "devices") | .status + " " + .message' /tmp/doctor-refused.json)" "FAIL cannot read this process's netns: /sys shows another"
vm_check "doctor: ... run with --netns" vm_expect_contains "$(cat /tmp/doctor-refused.json)" "--netns TARGET"
vm_check "doctor without CAP_SYS_ADMIN names no host device" sh -c "! grep -q '$dev1' /tmp/doctor-refused.json"

# --- exporter: every netns, read from wherever it runs --------------------------------
dev_lines() { grep -E "device=\"($dev0|$dev1)\"" | grep -v '^#' | sort; }
vm_run_code 0 "exporter --once on the host" "$R" exporter --once
want=$(printf '%s\n' "$OUT" | dev_lines)
vm_check "exporter on the host: $dev0 from pod1 on net1" \
	sh -c "printf '%s\n' '$want' | grep '^rdmans_port_state{' | grep 'device=\"$dev0\"' | grep 'netdev=\"net1\"' | grep -q 'netns=\"pod1\"'"
vm_check "exporter on the host: $dev0's rate (read from pod1's sysfs)" \
	sh -c "printf '%s\n' '$want' | grep '^rdmans_port_rate_bytes_per_second{' | grep -q 'device=\"$dev0\"'"
vm_run_code 0 "exporter --once under nsenter --net" $IN_POD "$R" exporter --once
vm_check "exporter under nsenter --net = on the host ($dev0, $dev1)" vm_expect_eq "$want" "$(printf '%s\n' "$OUT" | dev_lines)"
vm_check "exporter under nsenter --net: no namespace failed" \
	vm_expect_eq "rdmans_scrape_namespace_errors 0" "$(printf '%s\n' "$OUT" | grep '^rdmans_scrape_namespace_errors')"

"$R" move "$dev0" host --with-netdev --netdev-name h0 >/dev/null || vm_diag "could not bring $dev0 home"
ip netns del pod1
vm_done
