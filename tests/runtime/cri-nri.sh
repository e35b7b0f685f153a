#!/bin/bash
# Guest script, current world: rdmans-nri, the NRI plugin, under containerd
# 2.1 driven through CRI as kubelet drives it. NRI is on by default there.
# The node has no Multus and no rdma-netns: its pod network is host-device
# (CNI plugins 1.9), which gives a pod the netdev of an RDMA NIC but leaves
# the RDMA device on the host. A pod that asks by annotation
# (rdmans.io/devices) gets the device from rdmans-nri at RunPodSandbox, and
# its containers get the NCCL settings in their environment (PID 1's, and
# ExecSync's: containerd builds exec's env from the adjusted spec) and the
# device nodes, with no CDI spec and no hook.
#  - a pod without annotations is left as it came
#  - a variable the container sets itself wins
#  - a device that does not exist, after one that does: RunPodSandbox fails
#    with our message, the one it moved goes home at once, nothing is left
#  - the plugin killed -9 mid-session, started again; containerd restarted:
#    the plugin connects again by itself
#  - an InfiniBand HCA: NCCL_IB_HCA, no GID index
#  - a soft-iWARP device (siw): the kernel cannot move it, RunPodSandbox fails
#    with our message
#  - pre-installed in /opt/nri/plugins: containerd starts it itself
#  - Stop/RemovePodSandbox: the device is home, the node is as before
set -u
. "$(dirname "$0")/nri-lib.sh"

nri_node
vm_check "containerd made its NRI socket (NRI is on by default)" test -S /var/run/nri/nri.sock

ctrd_restart() {
	kill "$CTRD" && wait "$CTRD" 2>/dev/null
	rt_t "containerd restart" cri_containerd /etc/containerd/config.toml
	cri_ready
}
snap() { # where each device and NIC is (host-device brings a NIC home down: not ours to judge)
	for i in 0 1 2; do echo "${dev[i]}: $(rt_where "${dev[i]}"); h$i: $(ip -br link show "h$i" 2>&1 | cut -d' ' -f1)"; done
	ip netns list
	find /run/rdmans/nri -type f 2>/dev/null | sort
}
before=$(snap)

nri_start
vm_check "rdmans-nri registers with containerd" vm_poll 300 nri_registered 1
vm_diag "rdmans-nri: $(tr '\n' ' ' </tmp/nri.log)"

# --- a pod that asks for its RDMA device -------------------------------------------------------
rt_here "RunPodSandbox podA, annotation rdmans.io/devices: ${dev[0]}" \
	cri runp podA "" "json:{\"rdmans.io/devices\": \"${dev[0]}\"}"
podA=$(jq -r . <<<"$CRI_OUT")
cri pstatus "$podA"
nsA=$(jq -r .netns <<<"$CRI_OUT")
vm_check "  host-device gave it h0 as eth0" inns "$nsA" ip link show eth0
vm_check "  rdmans-nri moved ${dev[0]} into it" vm_expect_eq "${dev[0]}" \
	"$(inns "$nsA" rdma dev show 2>&1 | awk '{ print $2 }' | tr -d :)"
gid=$(inns "$nsA" sh -c "$RT_GID_SCRIPT" _ "${dev[0]}" "$(rt_gid_hex 10.80.0.2)")
vm_diag "the RoCE v2 GID of 10.80.0.2 on ${dev[0]} in the pod: index $gid"
# class/infiniband_verbs is not tagged by netns: the host sees the pod's uverbs node
uverbs=$(grep -lx "${dev[0]}" /sys/class/infiniband_verbs/uverbs*/ibdev | head -n 1 | xargs dirname | xargs basename)

want="NCCL_IB_GID_INDEX=$gid NCCL_IB_HCA==${dev[0]}"
nccl_of() { grep -E '^NCCL_IB_(HCA|GID_INDEX)=' | sort | tr '\n' ' ' | sed 's/ $//'; }
rt_here "CreateContainer c1 in podA (no CDI device, no hook)" cri create "$podA" c1 "$IMG" 'json:["sleep", "1000000"]'
c1=$(jq -r . <<<"$CRI_OUT")
rt_here "StartContainer c1" cri start "$c1"
cri exec "$c1" 'json:["cat", "/proc/1/environ"]'
env1=$(jq -r .stdout <<<"$CRI_OUT" | tr '\0' '\n')
vm_diag "c1 exec cat /proc/1/environ: $(head -c 300 <<<"$CRI_OUT")"
vm_diag "c1 /proc/1/environ: $(grep ^NCCL_ <<<"$env1" | tr '\n' ' ')"
vm_check "c1: PID 1's environment holds $want" vm_expect_eq "$want" "$(nccl_of <<<"$env1")"
cri exec "$c1" 'json:["env"]'
vm_check "c1: ExecSync's environment holds them too" vm_expect_eq "$want" "$(jq -r .stdout <<<"$CRI_OUT" | nccl_of)"
cri exec "$c1" "json:[\"sh\", \"-c\", \"test -c /dev/infiniband/$uverbs && test -c /dev/infiniband/rdma_cm && echo ok\"]"
vm_check "c1 has /dev/infiniband/$uverbs and rdma_cm" vm_expect_eq "ok" "$(jq -r .stdout <<<"$CRI_OUT" | tr -d '\n')"

rt_here "CreateContainer c2 in podA with NCCL_IB_GID_INDEX=7 of its own" \
	cri create "$podA" c2 "$IMG" 'json:["sleep", "1000000"]' 'json:[]' 'json:{"NCCL_IB_GID_INDEX": "7"}'
c2=$(jq -r . <<<"$CRI_OUT")
cri start "$c2"
cri exec "$c2" 'json:["env"]'
vm_check "c2: its own value wins, the HCA is still ours" vm_expect_eq \
	"NCCL_IB_GID_INDEX=7 NCCL_IB_HCA==${dev[0]}" "$(jq -r .stdout <<<"$CRI_OUT" | nccl_of)"
vm_check "  rdmans-nri said so" grep -q "sets NCCL_IB_GID_INDEX=7 already: it wins" /tmp/nri.log

# --- a pod without annotations ----------------------------------------------------------------
rt_here "RunPodSandbox podB (no annotations, handler nic1)" cri runp podB "" "json:{}" nic1
podB=$(jq -r . <<<"$CRI_OUT")
cri create "$podB" c3 "$IMG" 'json:["sleep", "1000000"]' && c3=$(jq -r . <<<"$CRI_OUT") && cri start "$c3"
cri exec "$c3" 'json:["sh", "-c", "env | grep -c ^NCCL_; ls /dev/infiniband 2>&1 | wc -l"]'
vm_check "podB's container: no NCCL_ variable, no /dev/infiniband" vm_expect_eq "0 1" \
	"$(jq -r .stdout <<<"$CRI_OUT" | xargs)"
vm_check "  ${dev[1]} stays on the host" rdma dev show "${dev[1]}"

# --- a device that does not exist, after one that does ----------------------------------------
cri runp podE "" "json:{\"rdmans.io/devices\": \"${dev[2]},nosuch0\"}" nic2
vm_check "RunPodSandbox podE asking for ${dev[2]},nosuch0 fails" test $? != 0
vm_diag "RunPodSandbox podE: $CRI_OUT"
vm_check "  containerd's error carries ours: it names nosuch0" vm_expect_contains "$CRI_OUT" "nosuch0"
vm_check "  rdmans-nri took ${dev[2]}, which it had moved, home at once" \
	grep -q "pod default/podE: RDMA device ${dev[2]} is back in the host's netns" /tmp/nri.log
vm_check "  and no record names it" sh -c "! grep -rqsx '${dev[2]}' /run/rdmans/nri"
cri pods
for p in $(jq -r '.[] | select(.name == "podE") | .id' <<<"$CRI_OUT"); do cri stopp "$p"; cri rmp "$p"; done
vm_check "  ${dev[2]} is on the host" rdma dev show "${dev[2]}"

# --- an InfiniBand HCA: no GID index in NCCL's settings ------------------------------------------
echo "mlx5_%d - 9 ib" >/sys/bus/simhca/new_device
ibdev=$(awk '$1 == 9 { print $2 }' /sys/bus/simhca/list)
vm_check "an InfiniBand HCA ($ibdev)" test "$(cat "/sys/class/infiniband/$ibdev/ports/1/link_layer" 2>&1)" = InfiniBand
rt_here "RunPodSandbox podI, rdmans.io/devices: $ibdev (handler nic2)" \
	cri runp podI "" "json:{\"rdmans.io/devices\": \"$ibdev\"}" nic2
podI=$(jq -r . <<<"$CRI_OUT")
cri pstatus "$podI"
vm_check "  rdmans-nri moved $ibdev into it" inns "$(jq -r .netns <<<"$CRI_OUT")" rdma dev show "$ibdev"
rt_here "CreateContainer cI in podI" cri create "$podI" cI "$IMG" 'json:["sleep", "1000000"]'
cI=$(jq -r . <<<"$CRI_OUT")
cri start "$cI"
cri exec "$cI" 'json:["env"]'
vm_check "cI: NCCL_IB_HCA==$ibdev and no GID index (InfiniBand)" vm_expect_eq "NCCL_IB_HCA==$ibdev" \
	"$(jq -r .stdout <<<"$CRI_OUT" | nccl_of)"
rt_here "StopPodSandbox podI" cri stopp "$podI"
rt_here "RemovePodSandbox podI" cri rmp "$podI"
vm_check "  $ibdev is home" rdma dev show "$ibdev"
echo 9 >/sys/bus/simhca/del_device

# --- soft-iWARP: a device the kernel cannot move; RunPodSandbox fails saying so ------------------
modprobe libcrc32c 2>/dev/null # 6.1's siw needs it; 7.2's does not
vm_check "siw.ko loads" insmod "$RDMANS_SIW_KO"
vm_veth sw0 sw1 && rdma link add siw0 type siw netdev sw0
cri runp podW "" "json:{\"rdmans.io/devices\": \"siw0\"}" nic2
vm_check "RunPodSandbox podW asking for siw0 (iWARP) fails" test $? != 0
vm_check "  containerd's error carries ours: the driver cannot change namespace" \
	vm_expect_contains "$CRI_OUT" "cannot move RDMA device siw0: its driver cannot change network namespace"
vm_check "  siw0 is on the host, no record names it" sh -c "rdma dev show siw0 && ! grep -rqsx siw0 /run/rdmans/nri"
cri pods
for p in $(jq -r '.[] | select(.name == "podW") | .id' <<<"$CRI_OUT"); do cri stopp "$p"; cri rmp "$p"; done
rdma link delete siw0
ip link del sw0

# --- the plugin killed mid-session, then containerd restarted ---------------------------------
kill -9 "$NRI_PID"
wait "$NRI_PID" 2>/dev/null
rt_here "with rdmans-nri dead, CreateContainer still works (NRI goes on without it)" \
	cri create "$podA" c4 "$IMG" 'json:["sleep", "1000000"]'
c4=$(jq -r . <<<"$CRI_OUT")
cri start "$c4"
cri exec "$c4" 'json:["env"]'
vm_check "  and its container has no NCCL settings" vm_expect_eq "" "$(jq -r .stdout <<<"$CRI_OUT" | nccl_of)"
nri_start
vm_check "rdmans-nri started again registers" vm_poll 300 nri_registered 2
ctrd_restart
vm_check "after containerd's restart, rdmans-nri connects and registers again by itself" vm_poll 300 nri_registered 3
rt_here "CreateContainer c5 in podA" cri create "$podA" c5 "$IMG" 'json:["sleep", "1000000"]'
c5=$(jq -r . <<<"$CRI_OUT")
cri start "$c5"
cri exec "$c5" 'json:["env"]'
vm_check "c5: the NCCL settings again" vm_expect_eq "$want" "$(jq -r .stdout <<<"$CRI_OUT" | nccl_of)"

# --- stop and remove: everything home -----------------------------------------------------------
for p in "$podA" "$podB"; do
	rt_here "StopPodSandbox $p" cri stopp "$p"
	rt_here "RemovePodSandbox $p" cri rmp "$p"
done
# podA outlived a containerd restart: containerd 2.1 sends no Stop/RemovePodSandbox for such
# pods, and the kernel takes the device home with the netns
vm_check "${dev[0]} is back on the host" rdma dev show "${dev[0]}"
# --- pre-installed: containerd starts the plugin itself ---------------------------------------
kill "$NRI_PID" && wait "$NRI_PID" 2>/dev/null
mkdir -p /opt/nri/plugins
cp "$NRI" /opt/nri/plugins/50-rdmans-nri
ctrd_restart
rt_here "RunPodSandbox podP, rdmans.io/devices: ${dev[1]} (rdmans-nri in /opt/nri/plugins)" \
	cri runp podP "" "json:{\"rdmans.io/devices\": \"${dev[1]}\"}" nic1
podP=$(jq -r . <<<"$CRI_OUT")
gidP=$(cri pstatus "$podP" && inns "$(jq -r .netns <<<"$CRI_OUT")" sh -c "$RT_GID_SCRIPT" _ "${dev[1]}" "$(rt_gid_hex 10.81.0.2)")
rt_here "CreateContainer c6 in podP" cri create "$podP" c6 "$IMG" 'json:["sleep", "1000000"]'
c6=$(jq -r . <<<"$CRI_OUT")
cri start "$c6"
cri exec "$c6" 'json:["env"]'
vm_check "c6: the NCCL settings from the plugin containerd started" vm_expect_eq "NCCL_IB_GID_INDEX=$gidP NCCL_IB_HCA==${dev[1]}" "$(jq -r .stdout <<<"$CRI_OUT" | nccl_of)"
vm_check "  containerd started it with its connection" pgrep -f /opt/nri/plugins/50-rdmans-nri

vm_check "  podA's record is dropped (its netns is gone)" grep -q 'its netns .* is gone: record dropped' "$RT_SYSLOG"
rt_here "StopPodSandbox podP" cri stopp "$podP"
vm_check "  rdmans-nri took ${dev[1]} home" grep -q "pod default/podP: RDMA device ${dev[1]} is back in the host's netns" "$RT_SYSLOG"
rt_here "RemovePodSandbox podP" cri rmp "$podP"
vm_check "the node is as before: devices, NICs, netns, no record of rdmans-nri" vm_expect_eq "$before" "$(snap)"

vm_diag "rdmans-nri's log (daemon): $(tail -n 12 /tmp/nri.log | tr '\n' '|')"
vm_diag "containerd: $(grep -E 'level=(error|warning)' /tmp/containerd.log | tail -n 8 | cut -c1-400 | tr '\n' '|')"
vm_diag "rdmans-nri in syslog: $(grep rdmans-nri "$RT_SYSLOG" | tail -n 8 | cut -c1-300 | tr '\n' '|')"
kill "$CTRD" 2>/dev/null
vm_done
