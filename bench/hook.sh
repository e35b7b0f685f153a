#!/bin/bash
# Benchmark: what rdmans-hook adds to a container's start. runc create +
# start + delete of a busybox container in a pod netns, N times each (one
# run), and the ratio to the same without the hook:
#   none     no hook
#   no-op    the hook configured, no rdmans.io annotation (every other container)
#   resolve  rdmans.io/nccl-profile: the hook probes the netns, resolves, merges
#            and writes /etc/nccl.conf and the profile script (sysfs is a fake
#            tree holding one RoCE device: the host kernel has no RDMA; the
#            addresses come from the real netns over rtnetlink)
# Device moves are not in it (once per pod, and only the VM has RDMA).
# Release build, no sanitizers. Root.
#   bench/hook.sh [ITERATIONS]     (default 50)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
build=${RDMANS_BENCH_BUILD:-build-bench}
n=${1:-50}
[ "$(id -u)" = 0 ] || { echo "bench/hook.sh: needs root (runc, netns)" >&2; exit 1; }
[ -d "$build" ] || meson setup "$build" -Dbuildtype=release >/dev/null
ninja -C "$build" src/hook/rdmans-hook >/dev/null
. tests/netns/hook-lib.sh
HOOK=$top/$build/src/hook/rdmans-hook

tmp=$(mktemp -d /tmp/rdmans-bench-hook.XXXXXX)
NS=rnb-pod
cleanup() {
	for id in $(runc --root "$tmp/runc" list -q 2>/dev/null); do
		runc --root "$tmp/runc" delete -f "$id" >/dev/null 2>&1 || true
	done
	ip netns del "$NS" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
ip netns del "$NS" 2>/dev/null || true
ip netns add "$NS"
ip link add rnb-h type veth peer name net1 netns "$NS"
ip -n "$NS" addr add 10.100.100.1/24 dev net1
ip -n "$NS" link set net1 up
hl_fake_roce "$tmp/sys" irdma0 net1 10.100.100.1 1
export HL_HOOK_ENV="[\"RDMANS_SYSFS_ROOT=$tmp/sys\"]"

hl_bundle "$tmp/none" "$HOOK" "/var/run/netns/$NS" '["true"]' 'del(.hooks)'
hl_bundle "$tmp/noop" "$HOOK" "/var/run/netns/$NS" '["true"]'
hl_bundle "$tmp/resolve" "$HOOK" "/var/run/netns/$NS" '["true"]' '.annotations = {"rdmans.io/nccl-profile": "roce"}'

# cycle BUNDLE ID: create, start, delete; prints its milliseconds
cycle() {
	local t0 t1
	t0=$(date +%s%N)
	runc --root "$tmp/runc" create -b "$1" "$2" </dev/null >/dev/null
	runc --root "$tmp/runc" start "$2"
	runc --root "$tmp/runc" delete -f "$2" 2>/dev/null
	t1=$(date +%s%N)
	echo "scale=3; ($t1 - $t0) / 1000000" | bc -l
}
kinds=(none noop resolve)
for k in "${kinds[@]}"; do cycle "$tmp/$k" "warm-$k" >/dev/null; done # page cache, runc's first run
# interleaved, so drift on a shared machine hits every kind alike
for ((i = 0; i < n; i++)); do
	for k in "${kinds[@]}"; do cycle "$tmp/$k" "$k-$i" >>"$tmp/$k.ms"; done
done
grep -q '^NCCL_IB_GID_INDEX=1$' "$tmp/resolve/rootfs/etc/nccl.conf" ||
	{ echo "bench/hook.sh: the hook did not write the expected nccl.conf" >&2; exit 1; }

# The hook alone, on the resolve path: the state a runtime would pass, for a process in the pod.
ip netns exec "$NS" sleep 600 &
sleeper=$!
sleep 0.2
state="{\"ociVersion\":\"1.0.2\",\"id\":\"bench\",\"status\":\"creating\",\"pid\":$sleeper,\"bundle\":\"$tmp/resolve\",\"annotations\":{\"rdmans.io/nccl-profile\":\"roce\"}}"
echo "$state" >"$tmp/state.json"
t0=$(date +%s%N)
for ((i = 0; i < n; i++)); do
	RDMANS_SYSFS_ROOT=$tmp/sys "$HOOK" <"$tmp/state.json"
done
t1=$(date +%s%N)
kill "$sleeper"
hook_ms=$(echo "scale=2; ($t1 - $t0) / 1000000 / $n" | bc -l)

median() { sort -n "$1" | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
mean() { awk '{ s += $1 } END { printf "%.2f", s / NR }' "$1"; }
m_none=$(median "$tmp/none.ms")
echo "runc $(runc --version | head -1 | awk '{print $3}'), $n create+start+delete cycles each (interleaved), $(nproc) cores"
a_none=$(mean "$tmp/none.ms")
printf '%-8s %10s %8s %10s %8s\n' "" "median ms" "ratio" "mean ms" "ratio"
for k in "${kinds[@]}"; do
	m=$(median "$tmp/$k.ms")
	a=$(mean "$tmp/$k.ms")
	printf '%-8s %10.2f %8.3f %10.2f %8.3f\n' "$k" "$m" "$(echo "$m / $m_none" | bc -l)" "$a" "$(echo "$a / $a_none" | bc -l)"
done
printf 'the hook alone, resolve path: %.2f ms per run (%d runs back to back)\n' "$hook_ms" "$n"
