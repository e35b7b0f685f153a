#!/bin/bash
# Guest script: runc containers whose pod netns gets simulated HCAs from
# rdmans-hook. The pod's netns already holds its netdev with an
# address (as host-device + IPAM leave it); the hook moves the RDMA device in
# and writes the RoCE v2 GID index of that address, which the test finds
# independently with the EPFL RunAI guide's grep one-liner over the pod's sysfs.
set -u
. "$RDMANS_VM_LIB"
. "$(dirname "$0")/../netns/hook-lib.sh"
B=$RDMANS_BUILD_DIR
R=$B/src/cli/rdmans
HOOK=$B/src/hook/rdmans-hook
VALIDATE=$(dirname "$0")/../cdi/validate.py

# The EPFL RunAI guide: the RoCE v2 entry whose GID is the IPv4-mapped address, in netns $1 for device $2
gid_by_grep() {
	ip netns exec "$1" sh -c "grep -l 'RoCE v2' \$(grep -l '0000:0000:0000:0000:0000:ffff:$3' /sys/class/infiniband/$2/ports/1/gids/* | sed 's/gids/gid_attrs\/types/') | sed 's/.*\///'"
}

vm_load_rdma exclusive
vm_load_simhca
modprobe rdma_ucm 2>/dev/null
cg=/sys/fs/cgroup
mountpoint -q "$cg" || mount -t cgroup2 none "$cg" || vm_fail "cannot mount cgroup2 for runc"
tmp=$(mktemp -d /tmp/rdmans-vmhook.XXXXXX)

# Two pods, each with its netdev (net1) and address already there.
pod() { # pod NS HOSTSIDE ADDR: a netns whose net1 (peer HOSTSIDE on the host) has ADDR
	ip netns add "$1" && ip link add "$2" type veth peer name "$2p" && ip link set "$2" up &&
		ip link set "$2p" netns "$1" && ip -n "$1" link set "$2p" name net1 &&
		ip -n "$1" addr add "$3" dev net1 && ip -n "$1" link set net1 up && ip -n "$1" link set lo up
}
pod pod1 h1 10.56.0.2/24 || vm_fail "pod1"
pod pod2 h2 10.57.0.2/24 || vm_fail "pod2"
# The HCAs sit on the host, bound to the pods' netdevs (the binding follows a netdev across namespaces).
d1=$(ip netns exec pod1 sh -c '. "$RDMANS_VM_LIB"; vm_simhca_new "irdma%d" net1') || vm_fail "simhca on pod1's net1"
d2=$(ip netns exec pod2 sh -c '. "$RDMANS_VM_LIB"; vm_simhca_new "mlx5_%d" net1') || vm_fail "simhca on pod2's net1"
vm_check "HCAs created on the host ($d1, $d2)" sh -c "rdma dev show $d1 && rdma dev show $d2"

CAT='["sh","-c","cat /etc/nccl.conf; . /etc/profile.d/rdmans-nccl.sh; echo HCA=$NCCL_IB_HCA GID=$NCCL_IB_GID_INDEX"]'

# --- the hook moves the device and writes the GID index of the pod's address -----------
hl_bundle "$tmp/c1" "$HOOK" /var/run/netns/pod1 "$CAT" \
	".annotations = {\"rdmans.io/devices\": \"$d1\", \"rdmans.io/nccl-profile\": \"roce\"}"
if hl_run "$tmp/runc" "$tmp/c1" c1; then vm_ok "container in pod1 asking for $d1 runs"; else
	vm_not_ok "container in pod1 asking for $d1 runs"; vm_diag "$HL_ERR"; fi
vm_check "$d1 is now in pod1" ip netns exec pod1 rdma dev show "$d1"
vm_check "$d1 is gone from the host" sh -c "! rdma dev show $d1 && [ ! -e /sys/class/infiniband/$d1 ]"
want=$(gid_by_grep pod1 "$d1" 0a38:0002)
vm_check "the EPFL RunAI guide's one-liner finds a RoCE v2 GID for 10.56.0.2 in pod1 ($want)" test -n "$want"
vm_check "nccl.conf: NCCL_IB_GID_INDEX is that entry" vm_expect_contains "$HL_OUT" $'\n'"NCCL_IB_GID_INDEX=$want"$'\n'
vm_check "nccl.conf: NCCL_IB_HCA==$d1 (exact name)" vm_expect_contains "$HL_OUT" $'\n'"NCCL_IB_HCA==$d1"$'\n'
vm_check "nccl.conf: NCCL_SOCKET_IFNAME=net1" vm_expect_contains "$HL_OUT" $'\nNCCL_SOCKET_IFNAME=net1\n'
vm_check "nccl.conf: says which GID holds which address" vm_expect_contains "$HL_OUT" "RoCE v2 GID $want of $d1 port 1 holds 10.56.0.2/24 (net1)"
vm_check "profile script: the same values for shells" vm_expect_contains "$HL_OUT" "HCA==$d1 GID=$want"
out=$("$R" env --netns pod1 2>&1)
vm_check "rdmans env --netns pod1 agrees" vm_expect_contains "$out" "NCCL_IB_GID_INDEX=$want"

# --- a second container of the same pod, and a restart: nothing to move, same settings ---------
hl_bundle "$tmp/c2" "$HOOK" /var/run/netns/pod1 "$CAT" ".annotations = {\"rdmans.io/devices\": \"$d1\"}"
if hl_run "$tmp/runc" "$tmp/c2" c2; then vm_ok "second container of pod1: the hook is idempotent"; else
	vm_not_ok "second container of pod1: the hook is idempotent"; vm_diag "$HL_ERR"; fi
vm_check "  it gets the same GID index" vm_expect_contains "$HL_OUT" "HCA==$d1 GID=$want"
if hl_run "$tmp/runc" "$tmp/c1" c1; then vm_ok "restart of the first container"; else
	vm_not_ok "restart of the first container"; vm_diag "$HL_ERR"; fi
vm_check "  one rdmans block in its nccl.conf" vm_expect_eq 1 "$(grep -c '^# rdmans: begin' "$tmp/c1/rootfs/etc/nccl.conf")"

# --- pod2 gets the other HCA, at the index of its own address ---------------------------------
hl_bundle "$tmp/c3" "$HOOK" /var/run/netns/pod2 "$CAT" \
	".annotations = {\"rdmans.io/devices\": \"$d2\", \"rdmans.io/nccl\": \"{\\\"env\\\": {\\\"NCCL_IB_TIMEOUT\\\": 23}}\"}"
if hl_run "$tmp/runc" "$tmp/c3" c3; then vm_ok "container in pod2 asking for $d2 runs"; else
	vm_not_ok "container in pod2 asking for $d2 runs"; vm_diag "$HL_ERR"; fi
want2=$(gid_by_grep pod2 "$d2" 0a39:0002)
vm_check "pod2: GID index of 10.57.0.2 ($want2)" vm_expect_contains "$HL_OUT" "HCA==$d2 GID=$want2"
vm_check "pod2: the annotation's timeout" vm_expect_contains "$HL_OUT" $'\nNCCL_IB_TIMEOUT=23\n'
vm_check "pod2 sees only its own HCA" vm_expect_eq "$d2" "$(ip netns exec pod2 rdma -j dev | jq -r '[.[].ifname] | join(" ")')"

# --- a device in another pod is not taken -----------------------------------------------------
before=$(ip netns exec pod1 rdma -j dev; ip netns exec pod2 rdma -j dev)
hl_bundle "$tmp/c4" "$HOOK" /var/run/netns/pod2 "$CAT" ".annotations = {\"rdmans.io/devices\": \"$d1\"}"
if hl_run "$tmp/runc" "$tmp/c4" c4; then vm_not_ok "asking for pod1's device from pod2: refused"; else
	vm_ok "asking for pod1's device from pod2: refused"; fi
vm_check "  says where it is" vm_expect_contains "$HL_ERR" "RDMA device $d1 is in another pod's network namespace (netns pod1)"
vm_check "  nothing moved" vm_expect_eq "$before" "$(ip netns exec pod1 rdma -j dev; ip netns exec pod2 rdma -j dev)"
vm_check "  nothing written" test ! -e "$tmp/c4/rootfs/etc"
hl_bundle "$tmp/c4" "$HOOK" /var/run/netns/pod2 "$CAT" '.annotations = {"rdmans.io/devices": "nosuch0"}'
hl_run "$tmp/runc" "$tmp/c4" c4b
vm_check "unknown device: refused, named" vm_expect_contains "$HL_ERR" "RDMA device nosuch0 not found in any network namespace"

# --- CDI: the uverbs nodes of devices in pods are still listed; the spec validates ------------
spec=$("$R" cdi generate --addr-range 10.56.0.0/16 2>"$tmp/cdi.err")
printf '%s\n' "$spec" >"$tmp/cdi.json"
vm_check "cdi generate on the VM's real sysfs" test -n "$spec"
vm_check "  lists both HCAs, though both are in pods" vm_expect_eq "$(printf '%s\n' "$d1" "$d2" all | paste -sd' ')" \
	"$(jq -r '[.devices[].name] | join(" ")' <<<"$spec")"
node=$(jq -r ".devices[] | select(.name == \"$d1\") | .containerEdits.deviceNodes[0].path" <<<"$spec")
vm_check "  $d1's uverbs node is the one ib_uverbs made for it ($node)" vm_expect_eq "$d1" \
	"$(cat "/sys/class/infiniband_verbs/$(basename "$node")/ibdev")"
vm_check "  the node exists with that major:minor" vm_expect_eq \
	"$(jq -r ".devices[] | select(.name == \"$d1\") | .containerEdits.deviceNodes[0] | \"\(.major):\(.minor)\"" <<<"$spec")" \
	"$(printf '%d:%d' "0x$(stat -c %t "$node")" "0x$(stat -c %T "$node")")"
vm_check "  validates against the CDI schema" /usr/bin/python3 "$VALIDATE" "$tmp/cdi.json"

# --- IPv6-only and dual-stack pods: the kernel fills their IPv6 GIDs ---------------
# gid_slot NS DEV GID: the index whose GID (sysfs form) is GID and whose type is RoCE v2, as the
# pod's own sysfs shows it; the pod's global address, written out in full.
gid_slot() {
	ip netns exec "$1" sh -c "for g in /sys/class/infiniband/$2/ports/1/gids/*; do
		i=\${g##*/}
		[ \"\$(cat \$g)\" = '$3' ] && [ \"\$(cat /sys/class/infiniband/$2/ports/1/gid_attrs/types/\$i 2>/dev/null)\" = 'RoCE v2' ] && echo \$i
	done | head -1"
}
v6pod() { # v6pod NS HOSTSIDE: a netns whose net1 (peer HOSTSIDE) is up, no address yet
	ip netns add "$1" && ip link add "$2" type veth peer name "$2p" && ip link set "$2" up &&
		ip link set "$2p" netns "$1" && ip -n "$1" link set "$2p" name net1 &&
		ip -n "$1" link set net1 up && ip -n "$1" link set lo up
}
v6pod pod3 h3 || vm_fail "pod3"
v6pod pod4 h4 || vm_fail "pod4"
ip -n pod3 addr add fd00:56::2/64 dev net1 nodad
ip -n pod4 addr add 10.58.0.2/24 dev net1
ip -n pod4 addr add fd00:58::2/64 dev net1 nodad
d3=$(ip netns exec pod3 sh -c '. "$RDMANS_VM_LIB"; vm_simhca_new "mlx5_%d" net1') || vm_fail "simhca on pod3's net1"
d4=$(ip netns exec pod4 sh -c '. "$RDMANS_VM_LIB"; vm_simhca_new "mlx5_%d" net1') || vm_fail "simhca on pod4's net1"
V3=fd00:0056:0000:0000:0000:0000:0000:0002
V4=fd00:0058:0000:0000:0000:0000:0000:0002

# IPv6-only: the hook's nccl.conf names the RoCE v2 GID of fd00:56::2, as the pod's sysfs shows it
hl_bundle "$tmp/c6" "$HOOK" /var/run/netns/pod3 "$CAT" \
	".annotations = {\"rdmans.io/devices\": \"$d3\", \"rdmans.io/nccl-profile\": \"roce\"}"
if hl_run "$tmp/runc" "$tmp/c6" c6; then vm_ok "IPv6-only pod3: container with $d3 runs"; else
	vm_not_ok "IPv6-only pod3: container with $d3 runs"; vm_diag "$HL_ERR"; fi
want3=$(gid_slot pod3 "$d3" "$V3")
vm_check "IPv6-only: the pod's GID table holds fd00:56::2 as RoCE v2 ($want3)" test -n "$want3"
vm_check "IPv6-only nccl.conf: NCCL_IB_GID_INDEX=$want3" vm_expect_contains "$HL_OUT" $'\n'"NCCL_IB_GID_INDEX=$want3"$'\n'
vm_check "IPv6-only nccl.conf: NCCL_IB_ADDR_FAMILY=AF_INET6" vm_expect_contains "$HL_OUT" $'\nNCCL_IB_ADDR_FAMILY=AF_INET6\n'
vm_check "IPv6-only nccl.conf: NCCL_SOCKET_FAMILY=AF_INET6" vm_expect_contains "$HL_OUT" $'\nNCCL_SOCKET_FAMILY=AF_INET6\n'
vm_check "IPv6-only nccl.conf: no image NCCL, settings for every version" vm_expect_contains "$HL_OUT" "# NCCL version unknown (no libnccl in the image"
# rdmans env --explain inside the pod (its netns and its sysfs)
out=$(ip netns exec pod3 "$R" env --format nccl-conf --explain 2>&1)
printf '%s\n' "$out" | sed 's/^/# pod3: /'
vm_check "rdmans env --explain in pod3: IPv6-only" vm_expect_contains "$out" "# address family IPv6: IPv6-only"
vm_check "rdmans env --explain in pod3: RoCE v2 GID $want3 holds fd00:56::2/64" vm_expect_contains "$out" "# $d3 port 1: used, netdev net1, RoCE v2 GID $want3 holds fd00:56::2/64"
vm_check "rdmans env in pod3: the same GID index" vm_expect_contains "$out" $'\n'"NCCL_IB_GID_INDEX=$want3"$'\n'
vm_check "the link-local GIDs are not it" sh -c "! ip netns exec pod3 cat /sys/class/infiniband/$d3/ports/1/gids/$want3 | grep -q '^fe80'"

# dual-stack: IPv4 by default; the annotation's "family": "ipv6" picks the IPv6 GID
hl_bundle "$tmp/c7" "$HOOK" /var/run/netns/pod4 "$CAT" ".annotations = {\"rdmans.io/devices\": \"$d4\"}"
hl_run "$tmp/runc" "$tmp/c7" c7 || vm_diag "$HL_ERR"
want4v4=$(gid_by_grep pod4 "$d4" 0a3a:0002)
want4v6=$(gid_slot pod4 "$d4" "$V4")
vm_check "dual-stack: the pod's table holds both as RoCE v2 ($want4v4, $want4v6)" sh -c "[ -n '$want4v4' ] && [ -n '$want4v6' ] && [ '$want4v4' != '$want4v6' ]"
vm_check "dual-stack default: IPv4, NCCL_IB_GID_INDEX=$want4v4" vm_expect_contains "$HL_OUT" "HCA==$d4 GID=$want4v4"
vm_check "  and says it chose IPv4 as NCCL's default" vm_expect_contains "$HL_OUT" "# address family IPv4: dual-stack: IPv4, NCCL's default family"
hl_bundle "$tmp/c8" "$HOOK" /var/run/netns/pod4 "$CAT" \
	".annotations = {\"rdmans.io/devices\": \"$d4\", \"rdmans.io/nccl\": \"{\\\"family\\\": \\\"ipv6\\\"}\"}"
hl_run "$tmp/runc" "$tmp/c8" c8 || vm_diag "$HL_ERR"
vm_check "dual-stack + family ipv6: NCCL_IB_GID_INDEX=$want4v6" vm_expect_contains "$HL_OUT" "HCA==$d4 GID=$want4v6"
vm_check "  NCCL_IB_ADDR_FAMILY=AF_INET6" vm_expect_contains "$HL_OUT" $'\nNCCL_IB_ADDR_FAMILY=AF_INET6\n'
out=$(ip netns exec pod4 "$R" env --family ipv6 2>&1)
vm_check "rdmans env --family ipv6 in pod4 agrees" vm_expect_contains "$out" "NCCL_IB_GID_INDEX=$want4v6"

# --- pods go away: the devices come home ------------------------------------------------------
ip netns del pod1
ip netns del pod2
ip netns del pod3
ip netns del pod4
vm_check "deleting the pods returns the HCAs to the host" vm_poll 60 sh -c "rdma dev show $d1 && rdma dev show $d2 && rdma dev show $d3 && rdma dev show $d4"
vm_done
