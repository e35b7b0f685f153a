#!/bin/bash
# Guest script: podman (4.3 today, 5.x with runc or crun in the current world) runs rdmans-hook from the oci-hooks JSON that
# `meson install` put where podman reads it, and from the
# CDI spec `rdmans cdi generate` wrote to /etc/cdi (items 1-3). Each pod's
# netns already holds its netdev (net1) and address, as a CNI plugin leaves
# it; podman joins it with --network ns:PATH.
#  - hooks.d: the rdmans.io annotations run the hook and nothing else does;
#    /etc/nccl.conf names the pod's device and the GID index that holds the
#    pod's address, checked against the GID table from inside; PID 1 and
#    `podman exec` see it; a read-only rootfs is refused with the fix and
#    nothing moved, or started by the documented annotation.
#  - CDI: --device rdmans.io/rdma=DEV is accepted (cdiVersion), the device
#    nodes are there, the environment holds no pod-dependent NCCL value, and
#    nccl.conf is still right; rdma=all gives the pod its own devices only.
#  - `rdmans move DEV --container ID` with podman's container ID.
set -u
. "$(dirname "$0")/runtime-lib.sh"

rt_setup

# --- item 6: installed where podman looks, pointing at the installed hook -----------------------
vm_check "meson install put the hook JSON where podman and CRI-O read it ($HOOK_JSON)" \
	sh -c 'for d in $2; do [ "$(dirname "$1")" = "$d" ] && exit 0; done; exit 1' _ "$HOOK_JSON" "$HOOKS_DIRS"
vm_check "  its hook.path is the installed rdmans-hook ($HOOK)" vm_expect_eq "$HOOK" "$(jq -r .hook.path "$HOOK_JSON")"

d1=$(rt_pod pod1 v1 10.56.0.2/24 "irdma%d") || vm_fail "pod1"
d2=$(rt_pod pod2 v2 10.57.0.2/24 "mlx5_%d") || vm_fail "pod2"
# inside CTR: the nccl.conf lines NCCL reads (no comments)
conf_in() { podman exec "$1" sh -c 'grep "^NCCL_" /etc/nccl.conf' 2>&1; }
val() { sed -n "s/^$2=//p" <<<"$1"; }

# --- hooks.d: nothing runs the hook but its annotations ----------------------------------------
rt_t "podman run, no annotation" vm_run_code 0 "a container in pod1 without annotations runs" \
	podman run --rm --network ns:/var/run/netns/pod1 "$IMG" sh -c 'ls /etc/nccl.conf 2>/dev/null; ls /sys/class/infiniband'
vm_check "  no hook: $d1 stays on the host, no nccl.conf" vm_expect_eq "host|" "$(rt_where "$d1")|$OUT"
vm_run_code 0 "a container with other annotations (example.com/devices, rdmans.io/nccl-conf) runs" \
	podman run --rm --network ns:/var/run/netns/pod1 --annotation "example.com/devices=$d1" \
	--annotation rdmans.io/nccl-conf=on "$IMG" sh -c 'ls /etc/nccl.conf 2>/dev/null; ls /sys/class/infiniband'
vm_check "  no hook: $d1 stays on the host, no nccl.conf" vm_expect_eq "host|" "$(rt_where "$d1")|$OUT"

# --- hooks.d: the annotations move the device and write nccl.conf --------------------------------
rt_t "podman run, hook" vm_run_code 0 "a container in pod1 annotated rdmans.io/devices=$d1 starts" \
	podman run -d --name c1 --network ns:/var/run/netns/pod1 --annotation "rdmans.io/devices=$d1" \
	--annotation rdmans.io/nccl-profile=roce "$IMG" sh -c 'cat /etc/nccl.conf; exec sleep 1000000'
vm_check "  $d1 is in pod1" vm_expect_eq pod1 "$(rt_where "$d1")"
gid=$(rt_gid_in c1 "$d1" 10.56.0.2)
vm_check "  inside, a RoCE v2 GID of $d1 holds 10.56.0.2 (index $gid)" test -n "$gid"
conf=$(conf_in c1)
vm_check "  podman exec: nccl.conf names $d1 (exact: =$d1)" vm_expect_eq "=$d1" "$(val "$conf" NCCL_IB_HCA)"
vm_check "  podman exec: nccl.conf's GID index is that GID's ($gid)" vm_expect_eq "$gid" "$(val "$conf" NCCL_IB_GID_INDEX)"
vm_check "  podman exec: nccl.conf's interface is net1" vm_expect_eq net1 "$(val "$conf" NCCL_SOCKET_IFNAME)"
vm_check "  PID 1 read the same file at start" vm_expect_contains "$(podman logs c1 2>&1)" "NCCL_IB_GID_INDEX=$gid"
podman rm -f -t 0 c1 >/dev/null

# --- read-only rootfs ------------------------------------------------------------------------
rt_t "podman run --read-only" rt_run_code 126 "a read-only container asking for $d2 is refused" \
	podman run --rm --read-only --network ns:/var/run/netns/pod2 --annotation "rdmans.io/devices=$d2" "$IMG" true
said=$(rt_hook_said)
ro_msg="its root filesystem is read-only (root.readonly in config.json), so rdmans-hook cannot write /etc/nccl.conf there"
if [ "${RDMANS_PODMAN_RUNTIME:-runc}" = runc ]; then
	vm_check "  podman's error (runc passes the hook's stderr on) says why" vm_expect_contains "$ERR" "$ro_msg"
else # crun: "error executing hook ... (exit code: 1)", nothing more
	vm_diag "podman's error with ${RDMANS_PODMAN_RUNTIME}: $ERR"
fi
vm_check "  the node's log (syslog, as rdmans-hook) says why" vm_expect_contains "$(sed -n '/^# syslog:/,$p' <<<"$said")" "$ro_msg"
vm_check "  ... names the annotation" vm_expect_contains "$(sed -n '/^# syslog:/,$p' <<<"$said")" 'Set the annotation rdmans.io/nccl-conf: "off"'
vm_check "  nothing moved: $d2 is still on the host" vm_expect_eq host "$(rt_where "$d2")"
vm_run_code 0 "with rdmans.io/nccl-conf=off it starts" podman run --rm --read-only --network ns:/var/run/netns/pod2 \
	--annotation "rdmans.io/devices=$d2" --annotation rdmans.io/nccl-conf=off "$IMG" sh -c 'ls /sys/class/infiniband; ls /etc/nccl.conf 2>/dev/null; true'
vm_check "  it sees $d2 and has no nccl.conf" vm_expect_eq "$d2" "$OUT"

# --- CDI: the generated spec in /etc/cdi ---------------------------------------------------
d3=$(rt_pod pod3 v3 10.58.0.2/24 "irdma%d") || vm_fail "pod3"
vm_veth h5 p5 || vm_fail "veth h5"
d5=$(vm_simhca_new "irdma%d" h5) || vm_fail "simhca on h5"
rt_t "cdi generate" vm_run_code 0 "rdmans cdi generate --output /etc/cdi/rdmans.json" "$R" cdi generate --output /etc/cdi/rdmans.json
spec=/etc/cdi/rdmans.json
vm_check "  the spec says cdiVersion 0.3.0, the lowest its content needs" vm_expect_eq 0.3.0 "$(jq -r .cdiVersion "$spec")"
node3=$(jq -r --arg d "$d3" '.devices[] | select(.name == $d) | .containerEdits.deviceNodes[0].path' "$spec")
rt_t "podman run --device (CDI)" vm_run_code 0 "podman run --device rdmans.io/rdma=$d3: podman 4.3 takes the spec" \
	podman run -d --name c3 --network ns:/var/run/netns/pod3 --device "rdmans.io/rdma=$d3" "$IMG" sleep 1000000
vm_check "  its hook moved $d3 into pod3" vm_expect_eq pod3 "$(rt_where "$d3")"
vm_check "  the device nodes are there ($node3, rdma_cm)" podman exec c3 test -c "$node3" -a -c /dev/infiniband/rdma_cm
# PID 1's: podman applies CDI edits to the spec it runs, not to the config exec sessions take
env3=$(podman exec c3 cat /proc/1/environ | tr '\0' '\n' | grep '^NCCL_' | sort)
vm_check "  PID 1's environment holds the spec's node-wide values, and only those" vm_expect_eq \
	"$(jq -r '.containerEdits.env[]' "$spec" | sort)" "$env3"
vm_check "  ... no pod-dependent one (HCA, GID index, interface)" \
	bash -c '! grep -E "^NCCL_(IB_HCA|IB_GID_INDEX|SOCKET_IFNAME)=" <<<"$1"' _ "$env3"
gid=$(rt_gid_in c3 "$d3" 10.58.0.2)
conf=$(conf_in c3)
vm_check "  nccl.conf names $d3 and GID $gid (holds 10.58.0.2 inside)" vm_expect_eq "=$d3 $gid" \
	"$(val "$conf" NCCL_IB_HCA) $(val "$conf" NCCL_IB_GID_INDEX)"
podman rm -f -t 0 c3 >/dev/null

# --- CDI "all": the pod's own devices ------------------------------------------------------
# pod4's network attachment gave it d4 (moved in, as rdma-netns does); d5's netdev stays on
# the host; d2 is in pod2 since the read-only run. "all" takes d4 and nothing else.
d4=$(rt_pod pod4 v4 10.59.0.2/24 "irdma%d") || vm_fail "pod4"
rdma dev set "$d4" netns pod4 || vm_fail "moving $d4 into pod4"
"$R" cdi generate --output "$spec" 2>/dev/null || vm_fail "cdi generate again"
node4=$(jq -r --arg d "$d4" '.devices[] | select(.name == $d) | .containerEdits.deviceNodes[0].path' "$spec")
node5=$(jq -r --arg d "$d5" '.devices[] | select(.name == $d) | .containerEdits.deviceNodes[0].path' "$spec")
rt_t "podman run rdma=all" vm_run_code 0 "rdmans.io/rdma=all in pod4 starts, though $d2 is in another pod" \
	podman run -d --name c4 --network ns:/var/run/netns/pod4 --device rdmans.io/rdma=all "$IMG" sleep 1000000
vm_check "  the container sees $d4 only" vm_expect_eq "$d4" "$(podman exec c4 ls /sys/class/infiniband 2>&1)"
vm_check "  $d5 (netdev on the host) and $d2 (pod2) stayed where they were" vm_expect_eq "host pod2" "$(rt_where "$d5") $(rt_where "$d2")"
vm_check "  nccl.conf: NCCL_IB_HCA is $d4 only" vm_expect_eq "=$d4" "$(val "$(conf_in c4)" NCCL_IB_HCA)"
vm_check "  PID 1's environment names no HCA (it would beat nccl.conf)" \
	bash -c '! podman exec c4 cat /proc/1/environ | tr "\0" "\n" | grep "^NCCL_IB_HCA="'
vm_check "  its own device node opens" podman exec c4 sh -c "exec 3<$node4"
vm_check "  another device's node is there but the kernel refuses it (not in this netns)" \
	podman exec c4 sh -c "test -c $node5 && ! (exec 3<$node5) 2>/dev/null"
podman rm -f -t 0 c4 >/dev/null
ip netns add pod5 && ip -n pod5 link set lo up
rt_run_code 126 "rdmans.io/rdma=all in a pod that got no RDMA device is refused" \
	podman run --rm --network ns:/var/run/netns/pod5 --device rdmans.io/rdma=all "$IMG" true
said=$(rt_hook_said)
[ "${RDMANS_PODMAN_RUNTIME:-runc}" = crun ] || vm_check "  saying so (podman's error)" vm_expect_contains "$ERR" \
	"its network namespace holds none and none of its netdevs has one on the host"
vm_check "  saying so (the node's log)" vm_expect_contains "$(sed -n '/^# syslog:/,$p' <<<"$said")" \
	"its network namespace holds none and none of its netdevs has one on the host"

# --- rdmans move --container with podman's own container ID ---------------------------------
ip netns add pod6 && ip -n pod6 link set lo up
vm_veth h6 p6 || vm_fail "veth h6"
d6=$(vm_simhca_new "irdma%d" h6) || vm_fail "simhca on h6"
podman run -d --name c6 --network ns:/var/run/netns/pod6 "$IMG" sleep 1000000 >/dev/null || vm_fail "podman run c6"
cid=$(podman inspect -f '{{.Id}}' c6)
vm_run_code 0 "rdmans move $d6 --container ${cid:0:12} (podman's ID, a prefix)" "$R" move "$d6" --container "${cid:0:12}"
vm_check "  $d6 is in c6's netns (pod6)" vm_expect_eq pod6 "$(rt_where "$d6")"
vm_check "  the container sees it" vm_expect_eq "$d6" "$(podman exec c6 ls /sys/class/infiniband 2>&1)"
podman rm -f -t 0 c6 >/dev/null
vm_done
