#!/bin/bash
# Benchmark: `rdmans exporter` scraping 8 RDMA devices spread over 64 pod
# namespaces (simulated HCAs, each moved with its netdev into every 8th
# netns; the other 56 hold none), in the VM. Release build, no sanitizers.
# Prints the time per scrape (the exporter's own figure and over HTTP), then
# open fds and RSS of the exporter before and after SCRAPES scrapes over one
# keep-alive connection.
#   bench/exporter.sh [SCRAPES]            (default 10000)
# Knobs: RDMANS_BENCH_DEVS_PER_NS=8 puts 8 devices in each of the 64
# namespaces (512 in all) instead.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
build=${RDMANS_BENCH_BUILD:-build-bench-exporter}
if [ "${RDMANS_IN_VM:-}" != 1 ]; then
	tests/vm/prepare.sh
	[ -d "$build" ] || meson setup "$build" -Dbuildtype=release >/dev/null
	ninja -C "$build" src/cli/rdmans tests/vm/simhca.ko >/dev/null
	RDMANS_BUILD_DIR=$top/$build RDMANS_SIMHCA_KO=$top/$build/tests/vm/simhca.ko \
		RDMANS_BENCH_SCRAPES=${1:-10000} RDMANS_VM_TIMEOUT=${RDMANS_VM_TIMEOUT:-7200} \
		RDMANS_BENCH_HOSTLOAD="$(cut -d' ' -f1-3 /proc/loadavg)" \
		RDMANS_VM_PASS_ENV="RDMANS_BENCH_DEVS_PER_NS" exec tests/vm/vm-run.sh "$0"
fi

# shellcheck source=../tests/vm/guest-lib.sh
. "$RDMANS_VM_LIB"
R=$RDMANS_BUILD_DIR/src/cli/rdmans
scrapes=$RDMANS_BENCH_SCRAPES
per_ns=${RDMANS_BENCH_DEVS_PER_NS:-0}
NS=64
PORT=19880
URL=http://127.0.0.1:$PORT/metrics

vm_load_rdma exclusive >/dev/null
vm_load_simhca
for ((n = 0; n < NS; n++)); do ip netns add "pod$n"; done
if [ "$per_ns" -gt 0 ]; then
	ndev=$((NS * per_ns))
	targets=()
	for ((n = 0; n < NS; n++)); do
		for ((k = 0; k < per_ns; k++)); do targets+=("pod$n"); done
	done
else
	ndev=8
	targets=()
	for ((k = 0; k < ndev; k++)); do targets+=("pod$((k * NS / ndev))"); done
fi
t0=$(date +%s.%N)
for ((k = 0; k < ndev; k++)); do
	vm_veth "b$k" "bp$k"
	dev=$(vm_simhca_new "mlx5_%d" "b$k")
	"$R" move "$dev" "${targets[$k]}" --with-netdev --netdev-name "net$k" >/dev/null
done
setup_s=$(echo "$(date +%s.%N) - $t0" | bc -l)
placed=$("$R" -j dev --all-netns | jq '[.[] | select(.netns.host | not)] | length')

"$R" exporter --listen 127.0.0.1:$PORT 2>/dev/null &
pid=$!
for ((i = 0; i < 100; i++)); do curl -sf -o /dev/null "$URL" && break; sleep 0.1; done
out=$(curl -sf "$URL")
served=$(printf '%s\n' "$out" | grep -c '^rdmans_port_state{' || true)
nsread=$(printf '%s\n' "$out" | awk '/^rdmans_scrape_namespaces / { print $2 }')
printf '%s\n' "$out" | promtool check metrics >/dev/null && promtool=ok || promtool=FAILED

# time per scrape: the exporter's own figure, and end to end over HTTP
own=()
http=()
for ((i = 0; i < 200; i++)); do
	t=$(curl -sf -o /tmp/scrape.prom -w '%{time_total}' "$URL")
	http+=("$t")
	own+=("$(awk '/^rdmans_scrape_duration_seconds / { print $2 }' /tmp/scrape.prom)")
done
stats() { # min median p95 max, in ms
	printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 * 1000 } END {
		printf "min %.2f  median %.2f  p95 %.2f  max %.2f ms", v[1], v[int((NR + 1) / 2)], v[int(NR * 0.95)], v[NR] }'
}

fds() { ls "/proc/$pid/fd" | wc -l; }
rss() { awk '/^VmRSS/ { print $2 }' "/proc/$pid/status"; }

echo "exporter benchmark, in the VM (qemu TCG, $(nproc) vCPUs, kernel $(uname -r)), release build"
echo "host load when it started (1/5/15 min; the VM shares the host's cores): $RDMANS_BENCH_HOSTLOAD"
echo "namespaces: $NS pods + host; devices: $placed simhca devices in pods ($ndev created in ${setup_s%.*} s); each scrape read $nsread namespaces"
echo "served: $served ports; promtool check metrics: $promtool"
echo "time per scrape, exporter's own (rdmans_scrape_duration_seconds), 200 scrapes: $(stats "${own[@]}")"
echo "time per scrape, over HTTP (curl time_total), 200 scrapes:                  $(stats "${http[@]}")"
fd0=$(fds)
rss0=$(rss)
echo "before: open fds $fd0, RSS $rss0 KiB"
# in chunks over one keep-alive connection each, so a slow machine still shows the trend
chunk=$((scrapes < 1000 ? scrapes : 1000))
done_n=0
t0=$(date +%s.%N)
while [ "$done_n" -lt "$scrapes" ]; do
	curl -sf -o /dev/null "$URL?[1-$chunk]"
	done_n=$((done_n + chunk))
	echo "after $done_n scrapes: open fds $(fds), RSS $(rss) KiB ($(echo "($(date +%s.%N) - $t0) * 1000 / $done_n" | bc -l | cut -d. -f1) ms per scrape so far)"
done
elapsed=$(echo "$(date +%s.%N) - $t0" | bc -l)
fd1=$(fds)
rss1=$(rss)
hwm=$(awk '/^VmHWM/ { print $2 }' "/proc/$pid/status")
kill "$pid"
wait "$pid" || true

printf '%d scrapes: %.1f s, %.2f ms per scrape\n' "$scrapes" "$elapsed" "$(echo "$elapsed * 1000 / $scrapes" | bc -l)"
echo "open fds:  before $fd0, after $fd1"
echo "RSS (KiB): before $rss0, after $rss1 (peak $hwm)"
