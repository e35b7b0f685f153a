#!/bin/bash
# rdma-netns: after any ADD outcome, DEL succeeds and leaves nothing; what
# the plugin cannot know is reported, never guessed. On the host
# kernel, root: the state an older ADD of "device": "lo" left behind; 50
# racing ADDs of one container; a DEL whose netlink lookups are denied; a
# state directory whose locks/ is a symlink. Every name here starts with
# "rnv". (Each failure path of ADD killed at each step: cni-faults.sh.)
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/cni-lib.sh"
IPAM=$RDMANS_BUILD_DIR/src/ipam/rdma-netns-ipam
DENY=$RDMANS_BUILD_DIR/tests/netns/deny-netlink
cni_netns_setup rnv "$IPAM"
tap_require_exec "$DENY"
cni_netns_clean rnv
trap 'umount "$tmp/ri" 2>/dev/null; cni_netns_clean rnv; rm -rf "$tmp"' EXIT

cni_veth_pod rnv
conf=$(jq -nc --arg d "$tmp/ri" '{cniVersion: "1.0.0", name: "rnvnet", type: "rdma-netns",
	device: "rnv0", requireRdma: false, returnTimeout: 2,
	ipam: {type: "rdma-netns-ipam", range: "10.197.0.0/29", dataDir: $d}}')

snap() { # the host's lo too: an old ADD of "device": "lo" may move it
	cni_netns_snap rnv 'rnv|lo'
	cni_scratch_files state devinfo ri
}
ip -n rnv-pod link set lo up
baseline=$(snap)
nothing_left() { vm_expect_eq "$baseline" "$(snap)" "the node"; }

# ---- the state an ADD of "device": "lo" left behind before lo was refused ----
# (phase adding, the host's lo recorded with MAC 00:00:00:00:00:00): the
# pod's own lo has that name and MAC, and is not the host's.
mkdir -p "$tmp/state/locks" "$tmp/elsewhere"
chmod 700 "$tmp/state"
cat >"$tmp/lo-state" <<STATE
# rdma-netns attachment state (format: include/rdmans/cni_state.h)
format=1
network=rnvnet
container_id=$CNI_CID
ifname=net1
netns=$CNI_NS
phase=adding
created=1
ipam=rdma-netns-ipam
mode=main
rdma_kernel=0
netdevs=1
netdev.0.name=lo
netdev.0.pod_name=net1
netdev.0.mac=00:00:00:00:00:00
netdev.0.ifindex=1
netdev.0.kind=
netdev.0.alias=$(cat /sys/class/net/lo/ifalias)
netdev.0.up=1
rdma=0
STATE
cp "$tmp/lo-state" "$tmp/state/rnvnet:$CNI_CID:net1"
pod_lo=$(ip -n rnv-pod -o link show lo)
host_lo=$(ip -o link show lo)
cni_expect_ok "DEL of the state a refused lo ADD left succeeds" DEL "$conf"
vm_check "its state file is gone" test ! -e "$tmp/state/rnvnet:$CNI_CID:net1"
vm_check "the pod keeps its own lo" vm_expect_eq "$pod_lo" "$(ip -n rnv-pod -o link show lo)"
vm_check "the host's lo is as it was" vm_expect_eq "$host_lo" "$(ip -o link show lo)"
cni_expect_err "ADD of lo is refused before anything changes" 109 "netdev lo cannot leave" \
	ADD "$(jq -c '.device = "lo"' <<<"$conf")"
cni_expect_ok "DEL after it succeeds" DEL "$(jq -c '.device = "lo"' <<<"$conf")"
vm_check "nothing left" nothing_left

# ---- 50 ADDs of one container at once ----
# One gets the netdev; every other is told the attachment exists (105) or to
# try again (11): never that the device is not on the host (100).
racers=50
for ((i = 0; i < racers; i++)); do
	(
		cni_run ADD "$conf"
		code=0
		[ "$RC" = 0 ] || code=$(jq -r '.code // "none"' <<<"$OUT" 2>/dev/null)
		echo "$code" >"$tmp/race.$i"
	) &
done
wait
codes=$(cat "$tmp"/race.* | sort | uniq -c | awk '{ printf "%s x%s ", $2, $1 }')
vm_diag "racing ADDs: $codes"
vm_check "exactly one of $racers racing ADDs succeeds" test "$(grep -lx 0 "$tmp"/race.* | wc -l)" = 1
vm_check "every other one says 105 (exists) or 11 (try again)" \
	test "$(grep -Lx -e 0 -e 105 -e 11 "$tmp"/race.* | wc -l)" = 0
vm_check "the netdev is in the pod" ip -n rnv-pod link show net1
cni_expect_ok "DEL after the race succeeds" DEL "$conf"
vm_check "nothing left after the race" nothing_left

# ---- a DEL whose route netlink is denied (seccomp, an LSM) ----
cni_expect_ok "ADD" ADD "$conf"
mkdir "$tmp/deny"
printf '#!/bin/sh\nexec %s %s "$@"\n' "$DENY" "$PLUGIN" >"$tmp/deny/rdma-netns"
chmod +x "$tmp/deny/rdma-netns"
ln -s "$IPAM" "$tmp/deny/rdma-netns-ipam"
CNI_BIN=$tmp/deny cni_expect_err "DEL says the lookup failed, not that the netdev is gone" 109 \
	"Operation not permitted" DEL "$conf"
vm_check "the denied DEL keeps the state file for the next DEL" \
	test -e "$tmp/state/rnvnet:$CNI_CID:net1"
vm_check "the netdev is still in the pod" ip -n rnv-pod link show net1
cni_expect_ok "the next DEL succeeds" DEL "$conf"
vm_check "nothing left after it" nothing_left

# ---- a state directory whose locks/ is a symlink ----
rm -rf "$tmp/state/locks"
ln -s "$tmp/elsewhere" "$tmp/state/locks"
cni_expect_err "ADD refuses a locks/ symlink in the state directory" 5 \
	"locks is not a directory (a symlink there is refused" ADD "$conf"
vm_check "no lock was made through it" test -z "$(ls -A "$tmp/elsewhere")"
vm_check "the netdev stayed home" ip link show rnv0
rm "$tmp/state/locks"
cni_expect_ok "DEL after it succeeds" DEL "$conf"
vm_check "nothing left" nothing_left

# ---- a state file that is a symlink (to a state someone else wrote) ----
cp "$tmp/lo-state" "$tmp/elsewhere/planted"
ln -s "$tmp/elsewhere/planted" "$tmp/state/rnvnet:$CNI_CID:net1"
cni_expect_err "DEL refuses a symlinked state file" 5 "is a symbolic link" DEL "$conf"
cni_expect_err "ADD refuses it too" 5 "is a symbolic link" ADD "$conf"
vm_check "the planted file was not acted on or removed" cmp "$tmp/lo-state" "$tmp/elsewhere/planted"
rm "$tmp/state/rnvnet:$CNI_CID:net1"
cni_expect_ok "DEL after it is removed succeeds" DEL "$conf"
vm_check "nothing left" nothing_left

# ---- a read-only IPAM data directory during DEL ----
cni_expect_ok "ADD" ADD "$conf"
state=$tmp/state/rnvnet:$CNI_CID:net1
mount --bind "$tmp/ri" "$tmp/ri" && mount -o remount,ro,bind "$tmp/ri" ||
	vm_fail "cannot make a read-only bind mount of $tmp/ri"
cni_run DEL "$conf"
vm_check "DEL with the IPAM store read-only fails with code 5 naming the cause" \
	vm_expect_contains "$RC $(jq -r '"\(.code) \(.details)"' <<<"$OUT")" "1 5 cannot open lock $tmp/ri/.locks/"
vm_check "... Read-only file system" vm_expect_contains "$OUT" "Read-only file system"
vm_check "... the netdev is home" ip link show rnv0
vm_check "... the state file says what is left: phase=releasing, not ready" \
	vm_expect_eq "phase=releasing" "$(grep '^phase=' "$state")"
cni_expect_err "CHECK says the DEL did not finish" 107 "did not release the address; DEL it again" \
	CHECK "$conf"
umount "$tmp/ri"
cni_expect_ok "DEL again once the store is writable" DEL "$conf"
vm_check "nothing left" nothing_left
vm_done
