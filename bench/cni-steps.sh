#!/bin/bash
# Where an ADD and a DEL spend their time, step by step, for rdma-netns and
# host-device doing the same job as bench/cni-veth.sh (a veth moved into a
# pod under another name, brought up; back on DEL). Each call runs under
#   strace -f -ttt -T
# and bench/cni-steps.awk sorts its system calls into steps: process start
# (execve to reading stdin), locks, state files, fsync, sysfs, netns files,
# netlink sockets, each kind of netlink request (gets, dumps by type, the
# move, link changes), RDMA netlink, threads and processes created, setns.
# Per step: calls per ADD (or DEL) and the median time inside them over the
# traced runs; "wall" is elapsed from execve to exit under strace (which
# slows every system call: compare counts, and times within one table).
# Untraced medians of the same calls close the table, and their CPU time
# (user + system of every thread: bash's `times` around each call; the
# mean, as each call is only a few clock ticks). Root.
#
#   bench/cni-steps.sh [RUNS]     (default 15 traced and untraced calls per verb)
#   RDMA_NETNS=path       the plugin (default: a release build in $RDMANS_BENCH_BUILD, build-bench)
#   RDMA_NETNS_BASE=path  a second rdma-netns (main's, say) profiled beside it
#   HOST_DEVICE=path      the host-device plugin (default /usr/lib/cni/host-device)
#   RDMANS_BENCH_DEVICE=NAME  move this existing netdev instead of a veth made here
#                         (the VM's simhca-bound veth with its RDMA device)
set -eu
. "$(dirname "$0")/lib.sh"
n=${1:-15}
bench_host_start cni-steps.sh strace
bench_plugin
base=${RDMA_NETNS_BASE:-}
hd=${HOST_DEVICE:-/usr/lib/cni/host-device}
[ -x "$hd" ] || { echo "cni-steps.sh: $hd missing (apt-get install containernetworking-plugins)" >&2; exit 1; }

bench_veth_pod "${RDMANS_BENCH_DEVICE:-}"

kinds="rn hd"
[ -z "$base" ] || kinds="rn base hd"
label() { case $1 in rn) echo "rdma-netns" ;; base) echo "rdma-netns (base)" ;; hd) echo "host-device $("$hd" </dev/null 2>&1 | head -n 1 | sed 's/^CNI host-device plugin //')" ;; esac; }
# CPU time (user + system, all threads) of the waited-for children so far, in
# us, from a `times` snapshot (taken in this shell: no child between it and the call)
cpu_us() {
	tail -n 1 "$1" | awk '{ s = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); s += a[1] * 60 + a[2] } printf "%d", s * 1e6 }'
}
call() { # KIND VERB [trace file] (no subshell: the CPU time of the call is all the plugin's)
	local b=$plugin c=$conf_rn
	case $1 in
	base) b=$base ;;
	hd) b=$hd c=$conf_hd ;;
	esac
	if [ -n "${3:-}" ]; then
		CNI_COMMAND=$2 strace -f -ttt -T -v -x -s 512 -qq -o "$3" "$b" <<<"$c" >/dev/null
	else
		CNI_COMMAND=$2 "$b" <<<"$c" >/dev/null
	fi
}
for k in $kinds; do # each really moves and restores
	call "$k" ADD && call "$k" DEL || { echo "cni-steps.sh: $(label "$k") failed" >&2; exit 1; }
	ip link show "$dev" >/dev/null || { echo "cni-steps.sh: $(label "$k") did not bring $dev back" >&2; exit 1; }
done
for ((i = 0; i < n; i++)); do # interleaved: traced and untraced, kind after kind
	for k in $kinds; do
		call "$k" ADD "$tmp/$k-ADD-$i.st"
		call "$k" DEL "$tmp/$k-DEL-$i.st"
		times >"$tmp/c0"
		t0=${EPOCHREALTIME/./}
		call "$k" ADD
		t1=${EPOCHREALTIME/./}
		times >"$tmp/c1"
		t2=${EPOCHREALTIME/./}
		call "$k" DEL
		t3=${EPOCHREALTIME/./}
		times >"$tmp/c2"
		echo $(((t1 - t0) * 1000)) >>"$tmp/$k-ADD.wall"
		echo $(((t3 - t2) * 1000)) >>"$tmp/$k-DEL.wall"
		echo $(($(cpu_us "$tmp/c1") - $(cpu_us "$tmp/c0"))) >>"$tmp/$k-ADD.cpu"
		echo $(($(cpu_us "$tmp/c2") - $(cpu_us "$tmp/c1"))) >>"$tmp/$k-DEL.cpu"
		# VERSION: the process's start and exit alone (no namespace, no file, no netlink)
		times >"$tmp/c0"
		t0=${EPOCHREALTIME/./}
		call "$k" VERSION
		t1=${EPOCHREALTIME/./}
		times >"$tmp/c1"
		echo $(((t1 - t0) * 1000)) >>"$tmp/$k-VERSION.wall"
		echo $(($(cpu_us "$tmp/c1") - $(cpu_us "$tmp/c0"))) >>"$tmp/$k-VERSION.cpu"
	done
done

median() { sort -n | awk '{ v[NR] = $1 } END { if (NR == 0) print 0; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# one table per verb: a column pair (calls, ms) per kind; calls and ms are medians over the runs
echo "Per-step profile of CNI ADD and DEL ($n traced runs each, medians), $(nproc) CPUs, kernel $(uname -r), netdev $dev"
echo "rdma-netns: $plugin"
[ -z "$base" ] || echo "rdma-netns (base): $base"
for verb in ADD DEL; do
	for k in $kinds; do
		for ((i = 0; i < n; i++)); do
			awk -v state_dir="$tmp/state" -f "$top/bench/cni-steps.awk" "$tmp/$k-$verb-$i.st"
		done >"$tmp/$k-$verb.steps"
	done
	steps=$(cat "$tmp"/*-"$verb".steps | cut -f1 | sort -u)
	echo
	printf '%-44s' "$verb: step"
	for k in $kinds; do printf ' | %-26s' "$(label "$k")"; done
	echo
	printf '%-44s' ""
	for k in $kinds; do printf ' | %8s %9s %7s' "calls" "ms" ""; done
	echo
	while IFS= read -r s; do
		printf '%-44s' "$s"
		for k in $kinds; do
			c=$(awk -F'\t' -v s="$s" '$1 == s { print $2 }' "$tmp/$k-$verb.steps" | median)
			t=$(awk -F'\t' -v s="$s" '$1 == s { print $3 }' "$tmp/$k-$verb.steps" | median)
			# a step some runs lack counts 0 there
			m=$(awk -F'\t' -v s="$s" '$1 == s' "$tmp/$k-$verb.steps" | wc -l)
			[ "$m" -ge $(((n + 1) / 2)) ] || { c=0; t=0; }
			printf ' | %8s %9.3f %7s' "$c" "$t" ""
		done
		echo
	done <<<"$(grep -v '^wall' <<<"$steps"; grep '^wall' <<<"$steps")"
	printf '%-44s' "untraced wall, median (ms)"
	for k in $kinds; do printf ' | %8s %9.3f %7s' "" "$(median <"$tmp/$k-$verb.wall" | awk '{ print $1 / 1e6 }')" ""; done
	echo
	printf '%-44s' "untraced CPU (user+sys, all threads), mean"
	for k in $kinds; do printf ' | %8s %9.3f %7s' "" "$(awk '{ s += $1 } END { print s / NR / 1e3 }' "$tmp/$k-$verb.cpu")" ""; done
	echo
done
echo
printf '%-44s' "VERSION (start and exit alone): wall, median"
for k in $kinds; do printf ' | %8s %9.3f %7s' "" "$(median <"$tmp/$k-VERSION.wall" | awk '{ print $1 / 1e6 }')" ""; done
echo
printf '%-44s' "VERSION: CPU (user+sys, all threads), mean"
for k in $kinds; do printf ' | %8s %9.3f %7s' "" "$(awk '{ s += $1 } END { print s / NR / 1e3 }' "$tmp/$k-VERSION.cpu")" ""; done
echo
echo
echo "calls: system calls of that step (threads: clones; wall: all system calls); ms: time inside them under strace,"
echo "except start and wall (elapsed). 'waits' overlap the work of the threads waited for."
