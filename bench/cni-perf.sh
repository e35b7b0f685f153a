#!/bin/bash
# Where the CPU of an ADD+DEL goes, rdma-netns against host-device, on this
# machine's kernel: perf record (cpu-clock, kernel and user, the loop's
# processes and threads; not kernel threads) of CYCLES ADD+DEL cycles of each
# on one veth, as bench/cni-veth.sh runs them. Prints, for each plugin, the
# samples by command (the plugin, the shell running the loop) and by shared
# object, and the kernel and user symbols with the most samples. Then off
# CPU: a second run under perf record -e sched:sched_switch -g -a, and the
# time the plugin's threads spent switched out, by the kernel stack they
# slept in (bench/offcpu.py: RCU waits of the move, disk I/O, a thread
# waiting for another; one thread's wait may overlap another's work). Run
# in the VM guest by `TEST_BENCH_MODE=perf bench/cni-vm.sh CYCLES` (why the guest's
# ratio differs from the host's: bench/cni-profile.md, "The guest: the emulator's
# translation cache"). Root; needs perf.
#   bench/cni-perf.sh [CYCLES]   (default 30)
#   RDMA_NETNS=path              the plugin (default: build-bench's release build)
set -eu
. "$(dirname "$0")/lib.sh"
n=${1:-30}
bench_host_start cni-perf.sh perf
plugin=${RDMA_NETNS:-$top/build-bench/src/cni/rdma-netns}
hd=/usr/lib/cni/host-device
for p in "$plugin" "$hd"; do
	[ -x "$p" ] || { echo "cni-perf.sh: $p missing" >&2; exit 1; }
done

bench_veth_pod
echo "$conf_rn" >"$tmp/rn.json"
echo "$conf_hd" >"$tmp/hd.json"
# cycles PLUGIN CONF N: N ADD+DEL, each checked (a failed cycle would profile an error path)
cat >"$tmp/cycles" <<'EOF'
for ((i = 0; i < $3; i++)); do
	CNI_COMMAND=ADD "$1" <"$2" >/dev/null || exit 1
	CNI_COMMAND=DEL "$1" <"$2" >/dev/null || exit 1
done
EOF
freq=${RDMANS_PERF_FREQ:-1000}
for k in rn hd; do
	p=$plugin
	[ $k = rn ] || p=$hd
	bash "$tmp/cycles" "$p" "$tmp/$k.json" 2 || { echo "cni-perf.sh: $p fails ADD+DEL" >&2; exit 1; }
	perf record -q -e cpu-clock -F "$freq" -o "$tmp/$k.data" -- bash "$tmp/cycles" "$p" "$tmp/$k.json" "$n" \
		2>"$tmp/$k.err" || { cat "$tmp/$k.err" >&2; exit 1; }
	# off CPU needs the sched tracepoints (tracefs); without them, the rest still runs
	perf record -q -e sched:sched_switch -g -a -o "$tmp/$k.off" -- bash "$tmp/cycles" "$p" "$tmp/$k.json" "$n" \
		2>"$tmp/$k.off.err" || rm -f "$tmp/$k.off"
done

report() { # report KIND SORT LIMIT: the top LIMIT lines of perf report --sort SORT
	perf report -q -i "$tmp/$1.data" --stdio --sort "$2" 2>/dev/null | grep -v '^$' | head -n "$3"
}
echo "perf record -e cpu-clock -F $freq of $n ADD+DEL cycles each, $(nproc) CPUs, kernel $(uname -r)"
for k in rn hd; do
	p=$plugin
	[ $k = rn ] || p=$hd
	echo
	echo "== $([ $k = rn ] && echo "rdma-netns" || echo "host-device") ($p)"
	echo "-- by command and object: share of the samples, and CPU ms per ADD+DEL cycle"
	perf report -q -n -i "$tmp/$k.data" --stdio --sort comm,dso 2>/dev/null | grep -v '^$' |
		awk -v f="$freq" -v n="$n" '{ pct[NR] = $1; cnt[NR] = $2; $1 = $2 = ""; what[NR] = $0; total += cnt[NR] }
		END { for (i = 1; i <= NR && i <= 12; i++) printf "  %8s %9.1f ms  %s\n", pct[i], cnt[i] * 1000 / f / n, what[i]
		      printf "  %8s %9.1f ms   all (%d samples of %d us)\n", "100%", total * 1000 / f / n, total, 1e6 / f }'
	echo "-- symbols (kernel [k] and user [.])"
	report $k sym 25
	echo "-- the plugin's process in user space: symbols by object"
	perf report -q -i "$tmp/$k.data" --stdio --comms "$(basename "$p")" \
		--sort dso,sym 2>/dev/null | grep -v -e '^$' -e 'kernel.kallsyms' | head -n 30
	echo "-- off CPU: ms per cycle its threads were switched out, by where (D: kernel wait, S: sleep, R: preempted)"
	if [ -f "$tmp/$k.off" ]; then
		perf script -i "$tmp/$k.off" -F comm,tid,cpu,time,event,trace,ip,sym 2>/dev/null |
			python3 "$top/bench/offcpu.py" "$(basename "$p")" "$n" 14
	else
		echo "  not recorded: $(tail -n 1 "$tmp/$k.off.err")"
	fi
done
