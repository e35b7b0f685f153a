#!/bin/bash
# Guest script, current world: containerd 2.x driven through its CRI API as
# kubelet drives it (tests/runtime/cri.py, generated from Debian's cri-api
# api.proto). containerd runs with its CRI plugin set up as on a Kubernetes
# node: /etc/cni/net.d holding a cni-conf/ conflist as shipped (deviceID set
# to a simhca device), rdma-netns and rdma-netns-ipam in /opt/cni/bin as
# meson installs them, CDI on (the spec `rdmans cdi generate` writes), a
# sandbox image built here.
#  - Status: STATUS is called for 1.1.0 networks only; what the node reports
#    when ours fails (shared netns mode), and once `rdmans system set netns
#    exclusive` fixed it
#  - RunPodSandbox: the netdev (eth0) and RDMA device are in the pod,
#    PodSandboxStatus reports the pod's address
#  - CreateContainer with the CDI device (CDIDevices, as a device plugin
#    passes it): ExecSync sees the device node and /etc/nccl.conf
#  - StopPodSandbox, RemovePodSandbox: everything back
#  - containerd restarted with pods running, then each pod removed
#  - containerd killed -9 during RunPodSandbox (in our ADD), started again,
#    the pod removed: nothing left
#  - 8 pods in parallel on 8 devices (one runtime handler per rail, each
#    with its own CNI conf dir: containerd's per-handler cni_conf_dir)
set -u
. "$(dirname "$0")/runtime-lib.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
PAUSE=localhost/rdmans-pause:1
inns() { ip netns exec "${1##*/}" "${@:2}"; } # a pod's netns (/var/run/netns/cni-...), its own /sys

# shared netns mode first: the node starts as one whose admin has not switched yet
vm_load_rdma
vm_load_simhca
modprobe rdma_ucm 2>/dev/null
rt_t "install" rt_install
rt_podman
rt_t "podman import" rt_image
vm_diag "$(rt_world); $(containerd --version); $(runc --version | head -n 1)"

rt_pause_image "$PAUSE"

# --- the node: 9 veth "NICs", each with a simhca RoCE device -------------------------------
for i in 0 1 2 3 4 5 6 7 8; do
	vm_veth "h$i" "p$i" || vm_fail "veth h$i"
	dev[i]=$(vm_simhca_new "mlx5_%d" "h$i") || vm_fail "simhca on h$i"
	aux[i]=$(awk -v d="${dev[i]}" '$2 == d { print $4 }' /sys/bus/simhca/list)
	mac[i]=$(cat "/sys/class/net/h$i/address")
done
shipped=$top/cni-conf/10-rdma-netns.conflist
shipped11=$top/cni-conf/10-rdma-netns-1.1.conflist
netconf() { # netconf FILE I OUT: the shipped FILE with rail I's device, range 10.(60+I).0.0/16
	jq --arg id "${aux[$2]}" --arg r "10.$((60 + $2)).0.0/16" --arg g "10.$((60 + $2)).0.1" \
		'.plugins[0].deviceID = $id | .plugins[0].ipam.range = $r | .plugins[0].ipam.gateway = $g' \
		"$1" >"$3"
}
mkdir -p /etc/cni/net.d /etc/cdi
rm -f /etc/cni/net.d/*
netconf "$shipped" 0 /etc/cni/net.d/10-rdma-netns.conflist

# containerd's config: what differs from its defaults on a node (CNI dirs and CDI are defaults)
mkdir -p /etc/containerd
{
	echo 'version = 3'
	echo "[plugins.'io.containerd.cri.v1.images'.pinned_images]"
	echo "  sandbox = '$PAUSE'"
	for i in 1 2 3 4 5 6 7 8; do
		echo "[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.rail$i]"
		echo "  runtime_type = 'io.containerd.runc.v2'"
		echo "  cni_conf_dir = '/etc/cni/rail$i'"
		echo "  cni_max_conf_num = 1"
		mkdir -p "/etc/cni/rail$i"
		netconf "$shipped11" "$i" "/etc/cni/rail$i/10-rdma-netns.conflist"
	done
} >/etc/containerd/config.toml
rt_t "containerd start" cri_containerd /etc/containerd/config.toml
cri_images "$IMG" "$PAUSE"
vm_diag "images: $(ctr -n k8s.io images ls -q | tr '\n' ' ')"
cri_start

rt_here "CRI Version answers" cri version
vm_diag "CRI Version: $CRI_OUT"
vm_check "  the runtime is containerd 2.x" vm_expect_eq "containerd 2" \
	"$(jq -r '.runtimeName + " " + (.runtimeVersion | split(".")[0])' <<<"$CRI_OUT")"

snap() {
	local i
	"$R" dev --all-netns
	for i in 0 1 2 3 4 5 6 7 8; do ip -o link show "h$i" 2>&1 | sed 's/ qlen.*//; s/ link-netnsid.*//' | vm_link_view; done
	ip -o -4 addr show 2>&1 | grep -v ' lo '
	ip netns list
	find /var/lib/cni/rdma-netns /var/run/k8s.cni.cncf.io -type f ! -path '*/locks/*' 2>/dev/null | sort
	"$R" ipam ls 2>&1
}

# --- CRI Status and CNI STATUS --------------------------------------------------------------
net_ready() { # net_ready WANT: poll CRI Status until NetworkReady is WANT (containerd reloads CNI confs on its own)
	local i
	for i in $(seq 1 300); do
		cri status || return 1
		[ "$(jq -r '.NetworkReady.status' <<<"$CRI_OUT")" = "$1" ] && return 0
		sleep 0.2
	done
	vm_diag "NetworkReady stayed $(jq -c '.NetworkReady' <<<"$CRI_OUT"), wanted $1"
	return 1
}
rt_here "shared netns mode, 1.0.0 conflist: NetworkReady (containerd calls no STATUS below 1.1.0)" net_ready true
netconf "$shipped11" 0 /etc/cni/net.d/10-rdma-netns.conflist
rt_here "shared netns mode, 1.1.0 conflist: containerd calls STATUS, NetworkReady false" net_ready false
vm_check "  the node's condition carries our message" vm_expect_contains "$CRI_OUT" "shared netns mode: RDMA devices cannot move into pods"
vm_diag "NetworkReady: $(jq -c '.NetworkReady' <<<"$CRI_OUT")"
vm_check "rdmans system set netns exclusive (no pod yet)" "$R" system set netns exclusive
rt_here "  NetworkReady again: STATUS passes" net_ready true
netconf "$shipped" 0 /etc/cni/net.d/10-rdma-netns.conflist
net_ready true >/dev/null
before=$(snap)

# --- one pod: RunPodSandbox, CreateContainer with CDI, ExecSync, Stop, Remove -----------------
rt_t "cdi generate" vm_check "rdmans cdi generate --output /etc/cdi/rdmans.json" "$R" cdi generate --output /etc/cdi/rdmans.json
node0=$(jq -r --arg d "${dev[0]}" '.devices[] | select(.name == $d) | .containerEdits.deviceNodes[0].path' /etc/cdi/rdmans.json)
rt_t "RunPodSandbox" rt_here "RunPodSandbox pod1 (1.0.0 conflist as shipped, deviceID ${aux[0]})" cri runp pod1
pod1=$(jq -r . <<<"$CRI_OUT")
cri pstatus "$pod1" || vm_diag "PodSandboxStatus: $CRI_OUT"
ns1=$(jq -r .netns <<<"$CRI_OUT")
ip1=$(jq -r .ip <<<"$CRI_OUT")
vm_check "  PodSandboxStatus: ready, netns $ns1" vm_expect_eq "SANDBOX_READY" "$(jq -r .state <<<"$CRI_OUT")"
vm_check "  eth0 in the pod is h0 (MAC ${mac[0]})" vm_expect_eq "${mac[0]}" "$(inns "$ns1" cat /sys/class/net/eth0/address 2>&1)"
vm_check "  PodSandboxStatus's address ($ip1) is eth0's" vm_expect_contains \
	"$(inns "$ns1" ip -o -4 addr show eth0 2>&1)" " $ip1/16 "
vm_check "  ${dev[0]} is in the pod, the pod sees it only" vm_expect_eq "${dev[0]}" \
	"$(inns "$ns1" rdma dev show 2>&1 | awk '{ print $2 }' | tr -d :)"
rt_here "  the node's CNI network is ready while the pod runs" net_ready true

rt_t "CreateContainer" rt_here "CreateContainer with CDIDevices rdmans.io/rdma=${dev[0]}" \
	cri create "$pod1" c1 "$IMG" 'json:["sleep", "1000000"]' "json:[\"rdmans.io/rdma=${dev[0]}\"]"
c1=$(jq -r . <<<"$CRI_OUT")
rt_here "StartContainer" cri start "$c1"
gid_script=$RT_GID_SCRIPT
cri exec "$c1" 'json:["sh", "-c", "ls /sys/class/infiniband; test -c '"$node0"' && echo node ok; grep ^NCCL_ /etc/nccl.conf"]'
ex=$(jq -r .stdout <<<"$CRI_OUT")
vm_diag "ExecSync: $ex"
vm_check "ExecSync: the container sees ${dev[0]} and its device node $node0" vm_expect_eq "${dev[0]} node ok" \
	"$(sed -n 1,2p <<<"$ex" | tr '\n' ' ' | sed 's/ $//')"
cri exec "$c1" "json:$(jq -cn --arg s "$gid_script" --arg d "${dev[0]}" --arg h "$(rt_gid_hex "$ip1")" '["sh", "-c", $s, "_", $d, $h]')"
gid=$(jq -r .stdout <<<"$CRI_OUT" | tr -d '\n')
vm_check "ExecSync: /etc/nccl.conf names ${dev[0]} and the RoCE v2 GID index of $ip1 ($gid)" vm_expect_eq \
	"NCCL_IB_GID_INDEX=$gid NCCL_IB_HCA==${dev[0]}" \
	"$(grep -E '^NCCL_IB_(HCA|GID_INDEX)=' <<<"$ex" | sort | tr '\n' ' ' | sed 's/ $//')"
rt_here "StopContainer" cri stopc "$c1"
rt_here "RemoveContainer" cri rmc "$c1"
rt_t "StopPodSandbox" rt_here "StopPodSandbox pod1" cri stopp "$pod1"
vm_check "  h0 is home under its name, ${dev[0]} on the host" sh -c "ip link show h0 >/dev/null && rdma dev show ${dev[0]} >/dev/null"
rt_here "RemovePodSandbox pod1" cri rmp "$pod1"
vm_check "  the node is as before: devices, netdevs, netns, state, leases" vm_expect_eq "$before" "$(snap)"

# --- containerd restarted with pods running -------------------------------------------------
rt_here "RunPodSandbox pod2 (rail 0)" cri runp pod2
pod2=$(jq -r . <<<"$CRI_OUT")
rt_here "RunPodSandbox pod3 (rail 1, runtime handler rail1)" cri runp pod3 "" "json:{}" rail1
pod3=$(jq -r . <<<"$CRI_OUT")
kill "$CTRD" && wait "$CTRD" 2>/dev/null
rt_t "containerd restart" cri_containerd /etc/containerd/config.toml
cri_ready
vm_check "after the restart, both pods are listed ready" vm_expect_eq "2" \
	"$(cri pods && jq '[.[] | select(.state == "SANDBOX_READY")] | length' <<<"$CRI_OUT")"
vm_check "  ${dev[0]} and ${dev[1]} are still in them" sh -c "! rdma dev show ${dev[0]} 2>/dev/null && ! rdma dev show ${dev[1]} 2>/dev/null"
for p in "$pod2" "$pod3"; do
	rt_here "StopPodSandbox $p" cri stopp "$p"
	rt_here "RemovePodSandbox $p" cri rmp "$p"
done
vm_check "  nothing leaked: the node is as before" vm_expect_eq "$before" "$(snap)"

# --- containerd killed -9 in the middle of RunPodSandbox ---------------------------------------
# A wrapper holds our ADD until containerd is dead, so the kill lands inside RunPodSandbox
# whatever the speed; then the ADD finishes with nobody to read its result.
mv /opt/cni/bin/rdma-netns /opt/cni/bin/rdma-netns.real
cat >/opt/cni/bin/rdma-netns <<'EOF'
#!/bin/sh
if [ "$CNI_COMMAND" = ADD ]; then
	: >/tmp/add-held
	while [ ! -e /tmp/add-go ]; do sleep 0.1; done
fi
exec /opt/cni/bin/rdma-netns.real "$@"
EOF
chmod 755 /opt/cni/bin/rdma-netns
rm -f /tmp/add-held /tmp/add-go
python3 "$RT_DIR/cri.py" runp '"podk"' >/tmp/podk.out 2>&1 &
runp_pid=$!
vm_check "RunPodSandbox podk reached our ADD" vm_poll 300 test -e /tmp/add-held
kill -9 "$CTRD"
wait "$CTRD" 2>/dev/null
touch /tmp/add-go
wait "$runp_pid"
vm_diag "the client of the killed RunPodSandbox: $(tail -c 300 /tmp/podk.out)"
# the orphaned ADD ends on its own (it was containerd's child); wait for it to leave
vm_poll 120 sh -c '! pgrep -x rdma-netns.real' >/dev/null
mv /opt/cni/bin/rdma-netns.real /opt/cni/bin/rdma-netns
rt_t "containerd restart" cri_containerd /etc/containerd/config.toml
cri_ready
cri pods
vm_diag "after the restart: $CRI_OUT"
for p in $(jq -r '.[] | select(.name == "podk") | .id' <<<"$CRI_OUT"); do
	rt_here "StopPodSandbox podk ($p)" cri stopp "$p"
	rt_here "RemovePodSandbox podk" cri rmp "$p"
done
vm_check "  nothing left of podk: the node is as before" vm_expect_eq "$before" "$(snap)"

# --- 8 pods in parallel on 8 devices ------------------------------------------------------------
specs=$(jq -cn '[range(1; 9) | ["rail\(.)", "rail\(.)"]]')
rt_t "8 parallel RunPodSandbox" rt_here "8 RunPodSandbox in parallel, one per rail (1.1.0 conflists)" cri runp_many "json:$specs"
res=$CRI_OUT
ok=0
for i in 1 2 3 4 5 6 7 8; do
	id=$(jq -r ".[$((i - 1))].ok // empty" <<<"$res")
	rp[i]=$id
	[ -n "$id" ] || { vm_diag "rail$i: $(jq -c ".[$((i - 1))]" <<<"$res")"; continue; }
	cri pstatus "$id" || continue
	ns=$(jq -r .netns <<<"$CRI_OUT")
	a=$(jq -r .ip <<<"$CRI_OUT")
	in_pod=$(inns "$ns" rdma dev show 2>/dev/null | awk '{ print $2 }' | tr -d :)
	gids=$(inns "$ns" sh -c "$RT_GID_SCRIPT" _ "${dev[i]}" "$(rt_gid_hex "$a")")
	if [ "$in_pod" = "${dev[i]}" ] && [ -n "$gids" ] && [ "$(inns "$ns" cat /sys/class/net/eth0/address)" = "${mac[i]}" ]; then
		ok=$((ok + 1))
	else
		vm_diag "rail$i: pod sees '$in_pod' (want ${dev[i]}), address $a, GID '$gids'"
	fi
done
vm_check "  each pod has its own device, its netdev, and the GID of its own address" vm_expect_eq 8 "$ok"
for i in 1 2 3 4 5 6 7 8; do
	[ -n "${rp[i]}" ] || continue
	cri stopp "${rp[i]}" && cri rmp "${rp[i]}" || vm_diag "rail$i: $CRI_OUT"
done
vm_check "8 pods stopped and removed: the node is as before" vm_expect_eq "$before" "$(snap)"

kill "$CTRD" 2>/dev/null
vm_done
