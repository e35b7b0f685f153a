#!/bin/bash
# ADD+DEL of a veth move into a pod and back, on the host kernel:
#   rdma-netns     the plugin (main mode, no IPAM, "requireRdma": false)
#   host-device    the reference plugin from containernetworking-plugins
#                  (/usr/lib/cni/host-device: Debian 12's, 1.1.1), same job
#   host-device (current)  the same plugin as the current world ships it
#                  (sid's containernetworking-plugins, 1.9.1 today; its root
#                  made by tests/vm/prepare.sh with RDMANS_VM_WORLD=current),
#                  run on this host (it needs glibc 2.34)
#   ip -batch      the floor: the same kernel operations (alias, move+rename,
#                  up; move back+rename, alias cleared) by iproute2, fewest
#                  processes (3 per cycle: host, pod, host)
#   rdma-netns (base)  optional: a second build of the plugin (RDMA_NETNS_BASE),
#                  e.g. main's, to compare a change with in the same run
#   rdma-netns, state on tmpfs  the plugin with its state directory in
#                  /dev/shm instead of on the disk under /var/tmp: what the
#                  state file's disk I/O costs on this machine (host-device
#                  keeps no state)
# Each is run in one go, interleaved in rounds, on one veth. Prints ms per
# ADD+DEL cycle (median, mean, interquartile range), the CPU time a cycle
# costs (user + system of its processes and threads: what a loaded machine
# cannot blur), the medians of ADD and DEL alone (ip: the whole cycle under
# ADD) and the ratios. Root.
#
#   bench/cni-veth.sh [CYCLES]       (default 300)
#   RDMA_NETNS=path       the plugin (default: a release build in $RDMANS_BENCH_BUILD, build-bench)
#   RDMA_NETNS_BASE=path  another rdma-netns to compare with (not run when unset)
#   RDMANS_BENCH_CURRENT=0  leave out the current world's host-device (the VM guest)
set -eu
. "$(dirname "$0")/lib.sh"
n=${1:-300}
bench_host_start cni-veth.sh
bench_plugin
base=${RDMA_NETNS_BASE:-}
[ -z "$base" ] || [ -x "$base" ] || { echo "cni-veth.sh: RDMA_NETNS_BASE $base is not executable" >&2; exit 1; }
hd=/usr/lib/cni/host-device
[ -x "$hd" ] || { echo "cni-veth.sh: $hd missing (apt-get install containernetworking-plugins)" >&2; exit 1; }
hd19=
if [ "${RDMANS_BENCH_CURRENT:-1}" != 0 ]; then
	cur_root=$(RDMANS_VM_WORLD=current "$top/tests/vm/prepare.sh" --print | sed -n 's/^ROOT=//p') ||
		{ echo "cni-veth.sh: tests/vm/prepare.sh (current world) failed" >&2; exit 1; }
	hd19=$cur_root/usr/lib/cni/host-device
	[ -x "$hd19" ] || { echo "cni-veth.sh: $hd19 missing (tests/vm/prepare.sh, current world)" >&2; exit 1; }
fi
hd_ver() { "$1" </dev/null 2>&1 | head -n 1 | sed 's/^CNI host-device plugin //'; }

bench_veth_pod
self=$$
printf 'link set dev rnb0 alias rnb0\nlink set dev rnb0 netns rnb-pod name net1\n' >"$tmp/add-host"
printf 'link set dev net1 up\nlink set dev net1 netns %s name rnb0\n' "$self" >"$tmp/pod"
printf 'link set dev rnb0 alias ""\n' >"$tmp/del-host"

# add_K and del_K: one plugin's ADD and DEL; ip's floor has no such split
# (its pod batch brings net1 up and moves it back), so its DEL is empty
add_rn() { CNI_COMMAND=ADD "$plugin" <<<"$conf_rn" >/dev/null; }
del_rn() { CNI_COMMAND=DEL "$plugin" <<<"$conf_rn" >/dev/null; }
add_base() { RDMA_NETNS_STATE_DIR=$tmp/state-base CNI_COMMAND=ADD "$base" <<<"$conf_rn" >/dev/null; }
del_base() { RDMA_NETNS_STATE_DIR=$tmp/state-base CNI_COMMAND=DEL "$base" <<<"$conf_rn" >/dev/null; }
add_rnt() { RDMA_NETNS_STATE_DIR=$state_tmpfs CNI_COMMAND=ADD "$plugin" <<<"$conf_rn" >/dev/null; }
del_rnt() { RDMA_NETNS_STATE_DIR=$state_tmpfs CNI_COMMAND=DEL "$plugin" <<<"$conf_rn" >/dev/null; }
add_hd() { CNI_COMMAND=ADD "$hd" <<<"$conf_hd" >/dev/null; }
del_hd() { CNI_COMMAND=DEL "$hd" <<<"$conf_hd" >/dev/null; }
add_hd19() { CNI_COMMAND=ADD "$hd19" <<<"$conf_hd" >/dev/null; }
del_hd19() { CNI_COMMAND=DEL "$hd19" <<<"$conf_hd" >/dev/null; }
add_ip() {
	ip -batch "$tmp/add-host"
	ip -n rnb-pod -batch "$tmp/pod"
	ip -batch "$tmp/del-host"
}
del_ip() { :; }
kinds="rn hd hd19 ip"
[ -z "$base" ] || kinds="rn base hd hd19 ip"
if [ "$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ]; then
	shm=$(mktemp -d /dev/shm/rnb-state.XXXXXX)
	bench_rm_at_exit+=("$shm")
	state_tmpfs=$shm/state
	kinds="rn rnt ${kinds#rn }"
else
	echo "cni-veth.sh: /dev/shm is no tmpfs here: rdma-netns with its state on tmpfs left out" >&2
fi
[ -n "$hd19" ] || kinds=${kinds/ hd19/}
# sanity: each really moves and restores
for k in $kinds; do
	{ "add_$k" && "del_$k"; } || { echo "cni-veth.sh: $k's ADD or DEL failed" >&2; exit 1; }
	ip link show rnb0 >/dev/null || { echo "cni-veth.sh: $k's ADD+DEL did not bring rnb0 back" >&2; exit 1; }
done
CNI_COMMAND=ADD "$plugin" <<<"$conf_rn" >/dev/null
ip -n rnb-pod link show net1 >/dev/null || { echo "cni-veth.sh: rdma-netns did not move rnb0" >&2; exit 1; }
CNI_COMMAND=DEL "$plugin" <<<"$conf_rn" >/dev/null

for k in $kinds; do : >"$tmp/$k" && : >"$tmp/$k.add" && : >"$tmp/$k.del"; done
rounds=10
per=$(((n + rounds - 1) / rounds))
# CPU time (user + system, every thread) of the waited-for children, in us, from
# a `times` snapshot taken in this shell (nothing forks between it and a cycle)
cpu_us() { tail -n 1 "$1" | awk '{ s = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); s += a[1] * 60 + a[2] } printf "%d", s * 1e6 }'; }
for ((r = 0; r < rounds; r++)); do
	for k in $kinds; do
		times >"$tmp/c0"
		for ((i = 0; i < per; i++)); do
			t0=${EPOCHREALTIME/./}
			"add_$k"
			t1=${EPOCHREALTIME/./}
			"del_$k"
			t2=${EPOCHREALTIME/./}
			echo $(((t2 - t0) * 1000)) >>"$tmp/$k"
			echo $(((t1 - t0) * 1000)) >>"$tmp/$k.add"
			echo $(((t2 - t1) * 1000)) >>"$tmp/$k.del"
		done
		times >"$tmp/c1"
		echo "$per $(($(cpu_us "$tmp/c1") - $(cpu_us "$tmp/c0")))" >>"$tmp/$k.cpu"
	done
done

stats() { # median, mean, 25th and 75th percentile in ms
	sort -n "$1" | awk '
	function q(p, i) { i = int(p * (NR - 1)) + 1; return v[i] + (p * (NR - 1) + 1 - i) * (v[i + 1] - v[i]) }
	{ v[NR] = $1; s += $1 } END {
		printf "%.2f %.2f %.2f %.2f", q(0.5) / 1e6, s / NR / 1e6, q(0.25) / 1e6, q(0.75) / 1e6 }'
}
label() {
	case $1 in
	rn) echo "rdma-netns" ;;
	base) echo "rdma-netns base" ;;
	rnt) echo "rdma-netns, state on tmpfs" ;;
	hd) echo "host-device 1.1.1 (Debian 12)" ;;
	hd19) echo "host-device, current world (sid)" ;;
	ip) echo "ip -batch (floor, 3 processes)" ;;
	esac
}
echo "ADD+DEL of a veth move, $((per * rounds)) cycles each, $(nproc) CPUs, kernel $(uname -r)"
echo "rdma-netns: $plugin"
[ -z "$base" ] || echo "rdma-netns base: $base"
printf '%-40s %9s %9s %17s %9s %9s %9s\n' "" "median" "mean" "IQR" "CPU" "ADD" "DEL"
for k in $kinds; do
	read -r med mean q1 q3 <<<"$(stats "$tmp/$k")"
	cpu=$(awk '{ n += $1; s += $2 } END { printf "%.2f", s / n / 1e3 }' "$tmp/$k.cpu")
	eval "med_$k=$med cpu_$k=$cpu"
	read -r add _ <<<"$(stats "$tmp/$k.add")"
	del=-
	[ "$k" = ip ] || read -r del _ <<<"$(stats "$tmp/$k.del")"
	printf '%-40s %6s ms %6s ms %6s - %6s ms %6s ms %6s ms %6s ms\n' "$(label "$k")" "$med" "$mean" "$q1" "$q3" "$cpu" "$add" "$del"
done
[ -z "$hd19" ] || echo "host-device versions: Debian 12 '$(hd_ver "$hd")', current world '$(hd_ver "$hd19")' ($(dpkg-query --admindir="$cur_root/var/lib/dpkg" -W -f='${Version}' containernetworking-plugins 2>/dev/null))"
awk -v a="$med_rn" -v b="$med_hd" -v c="$med_ip" -v d="${med_base:-}" -v e="${med_hd19:-}" -v t="${med_rnt:-}" 'BEGIN {
	printf "rdma-netns / host-device 1.1.1: %.2f   ", a / b
	if (t != "") printf "state on tmpfs: %.2f   ", t / b
	if (e != "") printf "rdma-netns / host-device (current): %.2f   ", a / e
	printf "rdma-netns / ip -batch: %.2f", a / c
	if (d != "") printf "   rdma-netns / base: %.2f   base / host-device: %.2f", a / d, d / b
	printf "   (medians)\n" }'
awk -v a="$cpu_rn" -v b="$cpu_hd" -v c="$cpu_ip" -v d="${cpu_base:-}" -v t="${cpu_rnt:-}" 'BEGIN {
	printf "CPU per cycle (user+sys of every process and thread, mean): rdma-netns / host-device 1.1.1: %.2f   ", a / b
	if (t != "") printf "state on tmpfs: %.2f   ", t / b
	printf "rdma-netns / ip -batch: %.2f", a / c
	if (d != "") printf "   rdma-netns / base: %.2f", a / d
	printf "\n" }'
