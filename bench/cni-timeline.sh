#!/bin/bash
# When, in each ADD and DEL of bench/cni-veth.sh's job, the plugin starts,
# sends its move, gets the move's answer and exits, against the tick
# (grace periods end on ticks): where rdma-netns's
# cycle loses a tick to host-device's. Kernel tracepoints in a tracefs
# instance of our own: sched_process_exec/exit, sendmsg and sendto (Go) of
# the plugin's processes, and the tick's hrtimer. Per call: exec to
# the move sent, the move, the move's answer to exit (ms, medians), and
# where in the 4 ms tick (from the last tick before it, on either CPU) the
# move was sent. Root.
#
#   bench/cni-timeline.sh [CYCLES]   (default 100 of each plugin)
#   RDMA_NETNS=path   the plugin (default: a release build in build-bench)
set -eu
. "$(dirname "$0")/lib.sh"
n=${1:-100}
bench_host_start cni-timeline.sh python3
bench_plugin
hd=/usr/lib/cni/host-device
[ -x "$hd" ] || { echo "cni-timeline.sh: $hd missing" >&2; exit 1; }
T=/sys/kernel/tracing
[ -d "$T/instances" ] || { echo "cni-timeline.sh: no tracefs at $T" >&2; exit 1; }

bench_veth_pod
inst=$T/instances/rnb-timeline.$$
mkdir "$inst"
echo 0 >"$inst/tracing_on"
trap 'bench_veth_gone; rmdir "$inst" 2>/dev/null; rm -rf "$tmp"' EXIT
filter='comm == "rdma-netns" || comm == "host-device"'
for e in sched/sched_process_exec sched/sched_process_exit syscalls/sys_enter_sendmsg \
	syscalls/sys_exit_sendmsg syscalls/sys_enter_sendto syscalls/sys_exit_sendto; do
	echo "$filter" >"$inst/events/$e/filter"
	echo 1 >"$inst/events/$e/enable"
done
echo 1 >"$inst/events/timer/hrtimer_expire_entry/enable" # the tick is an hrtimer
echo 16384 >"$inst/buffer_size_kb"
echo mono >"$inst/trace_clock"

add_rn() { CNI_COMMAND=ADD "$plugin" <<<"$conf_rn" >/dev/null; }
del_rn() { CNI_COMMAND=DEL "$plugin" <<<"$conf_rn" >/dev/null; }
add_hd() { CNI_COMMAND=ADD "$hd" <<<"$conf_hd" >/dev/null; }
del_hd() { CNI_COMMAND=DEL "$hd" <<<"$conf_hd" >/dev/null; }
for k in rn hd; do "add_$k" && "del_$k"; done
echo 1 >"$inst/tracing_on"
for ((r = 0; r < 10; r++)); do
	for k in rn hd; do
		for ((i = 0; i < (n + 9) / 10; i++)); do "add_$k" && "del_$k"; done
	done
done
echo 0 >"$inst/tracing_on"
cat "$inst/trace" >"$tmp/trace"
[ -z "${RDMANS_TIMELINE_KEEP:-}" ] || cp "$tmp/trace" "$RDMANS_TIMELINE_KEEP"

python3 - "$tmp/trace" <<'EOF'
import re, statistics, sys
line = re.compile(r'^\s*(\S+)-(\d+)\s+\[\d+\]\s+\S+\s+([\d.]+):\s+(.*)$')
ticks, procs, pending, order = [], {}, {}, []
for l in open(sys.argv[1]):
    m = line.match(l)
    if not m:
        continue
    comm, tid, t, rest = m.group(1), int(m.group(2)), float(m.group(3)) * 1e3, m.group(4)
    if rest.startswith('hrtimer_expire_entry:'):
        if 'tick_' in rest:
            ticks.append(t)
        continue
    if rest.startswith('sched_process_exec:'):
        pid = int(re.search(r' pid=(\d+)', rest).group(1))
        procs[pid] = {'plugin': 'rdma-netns' if 'rdma-netns' in rest else 'host-device',
                      'exec': t, 'sends': [], 'exit': None}
        order.append(pid)
        continue
    # a thread's line carries no tgid: it belongs to the running process of its plugin
    owner = next((pid for pid in reversed(order) if procs[pid]['exit'] is None
                  and comm == procs[pid]['plugin'][:len(comm)]), None)
    if owner is None:
        continue
    p = procs[owner]
    if rest.startswith('sched_process_exit:'):
        if 'group_dead=true' in rest:
            p['exit'] = t
    elif rest.startswith('sys_send') and '->' in rest:
        if tid in pending:
            p['sends'].append((pending.pop(tid), t))
    elif rest.startswith('sys_send'):
        pending[tid] = t

# both CPUs tick within microseconds of each other (an idle one may not): one grid
grid = []
for t in sorted(ticks):
    if not grid or t - grid[-1] > 1.0:
        grid.append(t)

def tick_phase(t):
    lo, hi = 0, len(grid)
    while lo < hi:
        mid = (lo + hi) // 2
        if grid[mid] <= t: lo = mid + 1
        else: hi = mid
    return t - grid[lo - 1] if lo else float('nan')

rows = {}
calls = [procs[p] for p in order if procs[p]['exit'] is not None and procs[p]['sends']]
# calls alternate ADD, DEL per plugin
seen = {}
for p in calls:
    k = p['plugin']
    verb = 'ADD' if seen.get(k, 0) % 2 == 0 else 'DEL'
    seen[k] = seen.get(k, 0) + 1
    s0, s1 = max(p['sends'], key=lambda s: s[1] - s[0])
    r = rows.setdefault((k, verb), [[], [], [], [], [], []])
    r[0].append(s0 - p['exec']); r[1].append(s1 - s0); r[2].append(p['exit'] - s1)
    r[3].append(p['exit'] - p['exec']); r[4].append(tick_phase(s0)); r[5].append(tick_phase(s1))
print('%-12s %-4s %5s %10s %9s %10s %9s %12s %12s' % ('plugin', 'call', 'n', 'exec>move', 'move', 'move>exit', 'total', 'sent: tick+', 'acked: tick+'))
for (k, verb), r in sorted(rows.items()):
    med = [statistics.median(x) for x in r]
    print('%-12s %-4s %5d %7.2f ms %6.2f ms %7.2f ms %6.2f ms %9.2f ms %9.2f ms' % (k, verb, len(r[0]), *med))
gaps = [b - a for a, b in zip(grid, grid[1:])]
print('ticks: %d, median gap %.2f ms' % (len(grid), statistics.median(gaps) if gaps else float('nan')))
EOF
