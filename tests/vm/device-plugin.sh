#!/bin/bash
# Guest script: rdmans-device-plugin as kubelet's device manager drives it
# (tests/vm/kubelet.py, from kubelet's own .proto files): Register with the
# call back before the answer, ListAndWatch, health from the netns mode and
# the ports, a device in a pod staying listed, GetPreferredAllocation,
# Allocate (CDI names, NCCL_IB_HCA, device nodes), a kubelet restart.
set -u
. "$RDMANS_VM_LIB"
vm_kubelet_env
RES=rdmans.io/rdma
SOCK=rdmans-rdma.sock

vm_load_rdma
vm_load_simhca
for i in 0 1 2 3; do
	vm_veth "h$i" "p$i" || vm_fail "veth h$i"
	vm_simhca_new "mlx5_%d" "h$i" >/dev/null || vm_fail "simhca device on h$i"
done
# the device IDs: simhca's auxiliary devices, as a PCI address would be
id() { awk -v n="mlx5_$1" '$2 == n { print $4 }' /sys/bus/simhca/list; }
vm_check "four devices with auxiliary IDs" vm_expect_eq "simhca.roce.0 simhca.roce.3" "$(id 0) $(id 3)"

kubelet_start() {
	$K serve "$DIR" "$LOG" 2>>/run/kubelet/kubelet.err &
	KPID=$!
}
kubelet_stop() { kill "$KPID" && vm_wait_exit "$KPID" 60; }
events() { grep -c "\"event\": \"$1\"" "$LOG" 2>/dev/null || true; }
last_list() { $K last-list "$LOG" "$RES"; }
lists() { $K lists "$LOG" "$RES"; }
list_is() { [ "$(last_list)" = "$1" ]; }

kubelet_start
vm_check "kubelet.sock is served" vm_poll 60 test -S "$DIR/kubelet.sock"
"$DP" --plugin-dir "$DIR" --poll-ms 200 2>/run/kubelet/plugin.err &
PLUGIN=$!

# --- Register, as kubelet sees it ---------------------------------------------------
vm_kubelet_registered "the plugin registers (kubelet dials back before it answers)" 180
reg=$(grep '"event": "register"' "$LOG" | head -n 1)
vm_check "Register: API v1beta1" vm_expect_contains "$reg" '"version": "v1beta1"'
vm_check "Register: resource rdmans.io/rdma" vm_expect_contains "$reg" '"resource": "rdmans.io/rdma"'
vm_check "Register: endpoint is the socket's basename" vm_expect_contains "$reg" "\"endpoint\": \"$SOCK\""
vm_check "Register: GetPreferredAllocation offered" vm_expect_contains "$reg" '"preferred": true'

# --- shared mode: listed, Unhealthy, so pods stay Pending -----------------------------
vm_check "ListAndWatch sends the first list" vm_poll 60 sh -c "[ \"\$($K lists $LOG $RES)\" -ge 1 ]"
vm_check "shared mode: all four Unhealthy" vm_expect_eq "simhca.roce.0 Unhealthy -
simhca.roce.1 Unhealthy -
simhca.roce.2 Unhealthy -
simhca.roce.3 Unhealthy -" "$(last_list)"
vm_check "shared mode: the log says why" vm_expect_contains "$(cat /run/kubelet/plugin.err)" "shared RDMA netns mode"

# --- exclusive mode: Healthy, without a restart ------------------------------------------
vm_run_code 0 "rdmans system set netns exclusive" "$R" system set netns exclusive
all_healthy="simhca.roce.0 Healthy -
simhca.roce.1 Healthy -
simhca.roce.2 Healthy -
simhca.roce.3 Healthy -"
vm_check "exclusive mode: all four Healthy" vm_poll 60 list_is "$all_healthy"

# --- a port going down, and up --------------------------------------------------------
n=$(lists)
t0=$(date +%s.%N)
ip link set h1 down
vm_check "port of mlx5_1 down: simhca.roce.1 Unhealthy" vm_poll 60 sh -c "$K last-list $LOG $RES | grep -qx 'simhca.roce.1 Unhealthy -'"
t1=$(grep '"event": "list"' "$LOG" | tail -n 1 | sed 's/.*"t": \([0-9.]*\).*/\1/')
vm_diag "port down -> ListAndWatch: $(echo "$t1 - $t0" | bc) s (poll 200 ms)"
vm_check "port down: one list per change, not one per poll" vm_expect_eq $((n + 1)) "$(lists)"
vm_check "port down: the others stay Healthy" vm_expect_eq 3 "$(last_list | grep -c ' Healthy ')"
ip link set h1 up
vm_check "port up again: all four Healthy" vm_poll 60 list_is "$all_healthy"

# --- GetPreferredAllocation and Allocate ---------------------------------------------------
vm_run_code 0 "GetPreferredAllocation honours must_include" $K preferred "$DIR" "$SOCK" \
	--available simhca.roce.0,simhca.roce.1,simhca.roce.2,simhca.roce.3 --must simhca.roce.2 --size 2
vm_check "preferred: must_include first, then the lowest ID" vm_expect_eq "simhca.roce.2,simhca.roce.0" "$OUT"
vm_run_code 0 "Allocate two devices" $K allocate "$DIR" "$SOCK" simhca.roce.0 simhca.roce.1
a=$OUT
vm_check "Allocate: the CDI devices of rdmans cdi generate" vm_expect_eq \
	'["rdmans.io/rdma=mlx5_0","rdmans.io/rdma=mlx5_1"]' "$(echo "$a" | jq -c '[.container_responses[0].cdi_devices[].name]')"
vm_check "Allocate: NCCL_IB_HCA names exactly these devices" vm_expect_eq "=mlx5_0,mlx5_1" \
	"$(echo "$a" | jq -r '.container_responses[0].envs.NCCL_IB_HCA')"
vm_check "Allocate (cdi-cri): no annotation, no device node" vm_expect_eq "null null" \
	"$(echo "$a" | jq -r '.container_responses[0] | "\(.annotations) \(.devices)"')"
vm_run_code 1 "Allocate of a device the plugin does not list is refused" $K allocate "$DIR" "$SOCK" simhca.roce.9
vm_check "refused: INVALID_ARGUMENT naming the device" vm_expect_contains "$ERR" "INVALID_ARGUMENT: device simhca.roce.9 is not one this plugin lists"

# --- a device in a pod's netns stays listed ----------------------------------------------------
ip netns add pod1
vm_run_code 0 "mlx5_0 moves into pod1" "$R" move mlx5_0 pod1
vm_check "mlx5_0 left the host" sh -c '! test -e /sys/class/infiniband/mlx5_0'
# the next change kubelet hears of (mlx5_3's port) is sent after the move was seen
ip link set h3 down
vm_check "in use: the next list still has it, Healthy" vm_poll 60 list_is "simhca.roce.0 Healthy -
simhca.roce.1 Healthy -
simhca.roce.2 Healthy -
simhca.roce.3 Unhealthy -"
ip link set h3 up
vm_check "in use: port up again" vm_poll 60 list_is "$all_healthy"
vm_run_code 0 "mlx5_0 comes home" "$R" move mlx5_0 host
ip netns del pod1

# --- a kubelet restart: kubelet.sock anew, the plugin's socket removed ---------------------------
regs=$(events register)
kubelet_stop
vm_check "kubelet gone: the ListAndWatch stream ended" vm_poll 30 sh -c "grep -q '\"event\": \"stream-end\"' $LOG"
kubelet_start
vm_kubelet_registered "after the restart: registered again" 180 $((regs + 1))
vm_check "after the restart: the full list again" vm_poll 60 list_is "$all_healthy"
vm_check "after the restart: the plugin serves its socket again" test -S "$DIR/$SOCK"
vm_run_code 0 "after the restart: Allocate works" $K allocate "$DIR" "$SOCK" simhca.roce.3

# --- SIGTERM ends it, and its socket goes --------------------------------------------------------
vm_plugin_stops rdmans-device-plugin "$PLUGIN" /run/kubelet/plugin.err
vm_check "SIGTERM: its socket is removed" sh -c "! test -e $DIR/$SOCK"

# --- device-specs and cdi-annotations, a pool of the config file -----------------------------------
cat >/run/kubelet/pools.json <<'EOF'
{ "pools": [ { "name": "rail", "selectors": { "names": ["mlx5_[23]"] } },
             { "name": "rest" } ] }
EOF
"$DP" --plugin-dir "$DIR" --poll-ms 200 --config /run/kubelet/pools.json \
	--device-list-strategy device-specs,cdi-annotations 2>>/run/kubelet/plugin.err &
PLUGIN=$!
vm_check "two pools: rdmans.io/rail lists mlx5_2 and mlx5_3" vm_poll 60 sh -c \
	"[ \"\$($K last-list $LOG rdmans.io/rail | cut -d' ' -f1 | tr '\n' ' ')\" = 'simhca.roce.2 simhca.roce.3 ' ]"
vm_check "two pools: rdmans.io/rest lists the other two" vm_poll 60 sh -c \
	"[ \"\$($K last-list $LOG rdmans.io/rest | cut -d' ' -f1 | tr '\n' ' ')\" = 'simhca.roce.0 simhca.roce.1 ' ]"
vm_run_code 0 "Allocate (device-specs, cdi-annotations)" $K allocate "$DIR" rdmans-rail.sock simhca.roce.2
uverbs=$(basename "$(ls -d /sys/class/infiniband/mlx5_2/device/infiniband_verbs/uverbs* 2>/dev/null)")
vm_check "device-specs: mlx5_2's uverbs node and rdma_cm" vm_expect_eq "/dev/infiniband/$uverbs /dev/infiniband/rdma_cm" \
	"$(echo "$OUT" | jq -r '[.container_responses[0].devices[].host_path] | join(" ")')"
vm_check "cdi-annotations: the annotation names the CDI device" vm_expect_eq \
	'{"cdi.k8s.io/rdmans-device-plugin_simhca.roce.2":"rdmans.io/rdma=mlx5_2"}' \
	"$(echo "$OUT" | jq -c '.container_responses[0].annotations')"
vm_plugin_stops "rdmans-device-plugin with two pools" "$PLUGIN" /run/kubelet/plugin.err

# --- bad input: a clear error, exit 2, nothing served ----------------------------------------------
echo '{ "pools": [ { "name": "x", "selectors": { "name": ["typo"] } } ] }' >/run/kubelet/bad.json
vm_run_code 2 "a config with an unknown key is refused" "$DP" --plugin-dir "$DIR" --config /run/kubelet/bad.json
vm_check "refused: names the key" vm_expect_contains "$ERR" "pools[0].selectors: unknown key 'name'"
vm_run_code 2 "an unknown strategy is refused" "$DP" --plugin-dir "$DIR" --device-list-strategy cdi
vm_check "refused: names the strategies" vm_expect_contains "$ERR" "use cdi-cri, cdi-annotations or device-specs"
vm_run_code 1 "a plugin directory that is not there" "$DP" --plugin-dir /run/none
vm_check "refused: names the directory" vm_expect_contains "$ERR" "cannot watch the plugin directory /run/none"
kubelet_stop
vm_done
