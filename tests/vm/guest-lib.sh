# shellcheck shell=bash
# Helpers for guest scripts run by vm-run.sh. Source it:
#   . "${RDMANS_VM_LIB:-$(dirname "$0")/guest-lib.sh}"
#
# The TAP helpers (vm_check, vm_ok, vm_not_ok, vm_diag, vm_fail, vm_done, ...)
# live in tests/lib/tap.sh, sourced from here; this file adds the guest's
# RDMA and simhca helpers.

# This file's directory: bash knows it; POSIX sh (guest `sh -c`) has RDMANS_VM_LIB.
if [ -n "${BASH_VERSION:-}" ]; then
	eval '_rn_vm_lib_dir=$(dirname "${BASH_SOURCE[0]}")'
else
	_rn_vm_lib_dir=$(dirname "${RDMANS_VM_LIB:-$0}")
fi
# shellcheck source=../lib/tap.sh
. "$_rn_vm_lib_dir/../lib/tap.sh"

# vm_load_rdma [exclusive]: load the RDMA core, user-space access modules and
# the soft-RoCE driver. "exclusive" loads ib_core with netns_mode=0 (the boot
# time way to get exclusive netns mode).
vm_load_rdma() {
	local opt=
	[ "${1:-}" != exclusive ] || opt=netns_mode=0
	if [ -n "$opt" ] && [ -d /sys/module/ib_core ]; then
		vm_expect_eq 0 "$(cat /sys/module/ib_core/parameters/netns_mode)" "ib_core netns_mode (already loaded)" || return 1
	fi
	# shellcheck disable=SC2086
	modprobe ib_core $opt || vm_fail "modprobe ib_core $opt failed"
	modprobe -a ib_uverbs ib_umad rdma_cm rdma_ucm rdma_rxe ||
		vm_fail "modprobe of the RDMA modules failed (is /lib/modules/$(uname -r) there?)"
}

# vm_veth NAME PEER: create a veth pair, both ends up.
vm_veth() {
	ip link add "$1" type veth peer name "$2" &&
		ip link set "$1" up && ip link set "$2" up
}

# vm_netns_pair V4PREFIX [V6PREFIX]: netns A and B joined by a veth (a0 in A,
# b0 in B, both up, lo up too), with V4PREFIX.1/24 on a0 and V4PREFIX.2/24 on
# b0 (and V6PREFIX::1/64, ::2/64 when given).
vm_netns_pair() {
	local n l i
	ip netns add A && ip netns add B || return 1
	ip link add a0 type veth peer name b0 && ip link set a0 netns A && ip link set b0 netns B ||
		return 1
	for n in A B; do
		l=$(echo $n | tr AB ab)0
		i=$([ $n = A ] && echo 1 || echo 2)
		ip -n $n link set lo up
		ip -n $n addr add "$1.$i/24" dev "$l" || return 1
		[ -z "${2:-}" ] || ip -n $n addr add "$2::$i/64" dev "$l" nodad || return 1
		ip -n $n link set "$l" up || return 1
	done
}

# vm_load_simhca: insmod the simulated HCA built on the host ($RDMANS_SIMHCA_KO).
vm_load_simhca() {
	[ -f "${RDMANS_SIMHCA_KO:-}" ] || vm_fail "RDMANS_SIMHCA_KO='${RDMANS_SIMHCA_KO:-}' is not a file (meson builds it: tests/vm/meson.build)"
	[ -d /sys/bus/simhca ] || insmod "$RDMANS_SIMHCA_KO" || vm_fail "insmod $RDMANS_SIMHCA_KO failed"
}

# vm_simhca_new PATTERN NETDEV: creates a simulated HCA bound to NETDEV and
# prints its RDMA device name (tests/vm/simhca/README.md).
vm_simhca_new() {
	echo "$1 $2" >/sys/bus/simhca/new_device || return 1
	awk -v n="$2" '$3 == n { name = $2 } END { if (name == "") exit 1; print name }' /sys/bus/simhca/list
}

# vm_pci_rails: on the PCI topology of meson's numa_gpus (tests/vm/meson.build),
# a simhca HCA "mlx5_N" on each of the eight PCI NICs, by PCI address, and the
# four stand-in GPUs (qemu's edu functions, vendor 0x1234 device 0x11e8) named
# GPUs through a driver tree of our own: a tmpfs on /proc/driver with
# nvidia/gpus/BDF/information as NVIDIA's driver 580 writes it, and
# /dev/nvidiaN. Sets dev[], ifname[] (NIC i) and gpu[], uuid[] (GPU i, NVML's
# order); GPU i sits on the bridge of NICs 2i and 2i+1.
vm_pci_rails() {
	local i n d
	modprobe e1000 || vm_fail "modprobe e1000"
	vm_poll 60 sh -c "[ \$(ls -d /sys/class/net/*/device 2>/dev/null | wc -l) = 8 ]" ||
		vm_fail "eight PCI NICs did not show up"
	i=0
	for n in $(for n in /sys/class/net/*; do
		[ -e "$n/device" ] && echo "$(basename "$(readlink -f "$n/device")") $(basename "$n")"
	done | sort | cut -d' ' -f2); do
		ifname[i]=$n
		ip link set "$n" up
		dev[i]=$(vm_simhca_new "mlx5_%d" "$n") || vm_fail "simhca on $n"
		i=$((i + 1))
	done
	i=0
	for d in /sys/bus/pci/devices/*; do
		[ "$(cat "$d/vendor")" = 0x1234 ] && [ "$(cat "$d/device")" = 0x11e8 ] || continue
		gpu[i]=$(basename "$d")
		i=$((i + 1))
	done
	[ "${#gpu[@]}" = 4 ] || vm_fail "four stand-in GPUs (qemu edu) wanted, found ${#gpu[@]}"
	mount -t tmpfs -o mode=0555 rdmans-fake-nvidia /proc/driver || vm_fail "cannot mount a tmpfs on /proc/driver"
	for i in 0 1 2 3; do
		d=/proc/driver/nvidia/gpus/${gpu[i]}
		mkdir -p "$d"
		uuid[i]=GPU-0000000$i-1111-2222-3333-44444444444$i
		printf 'Model: \t\t NVIDIA H200\nIRQ:   \t\t 41\nGPU UUID: \t %s\nBus Type: \t PCIe\nBus Location: \t %s\nDevice Minor: \t %d\nGPU Excluded:\t No\n' \
			"${uuid[i]}" "${gpu[i]}" "$i" >"$d/information"
		[ -e "/dev/nvidia$i" ] || mknod "/dev/nvidia$i" c 195 "$i"
	done
}

# vm_cm_listening COMM: an rdma_cm id of a process named COMM listens (rdmans
# ping --server, rping -s, ib_write_bw -R): what a client waits for, not a delay.
vm_cm_listening() {
	rdma res show cm_id 2>/dev/null | grep -q "state LISTEN .* comm $1 "
}

# vm_check_client NAME CMD...: vm_run_code 0 for a reference client with no
# timeout of its own (rping), run under one (CMD exits 124 when it ran out).
# Under the emulator an rping client hung silent for 120 s once, in one of
# some 25 fresh-clone runs of the test command (its -v output is
# block-buffered into a pipe, so nothing showed where). A first try that runs
# out is reported with the guest's rdma_cm ids and QPs, and a second try
# decides; the server must be persistent (rping -s -P) to take it. Any other
# failure fails at once.
vm_check_client() {
	local name=$1
	shift
	vm_capture "$@"
	if [ "$VM_RC" = 124 ]; then
		vm_diag "$name: the first try ran out of time, silent; rdma_cm ids: $(rdma res show cm_id 2>&1 |
			tr '\n' ';'); QPs: $(rdma res show qp 2>&1 | grep -v 'type GSI' | tr '\n' ';'); a second try decides"
		vm_capture "$@"
	fi
	vm_code_result 0 "$name" "$@"
}

# vm_tcp_listening NETNS PORT: a TCP socket listens on PORT in NETNS (perftest's
# out-of-band exchange, without -R)
vm_tcp_listening() {
	ip netns exec "$1" ss -ltnH "sport = :$2" 2>/dev/null | grep -q .
}

# vm_kubelet_env: what a guest needs to stand in for kubelet beside
# rdmans-device-plugin (tests/vm/kubelet.py, from kubelet's .proto files):
# R, DP (the build's binaries), K (kubelet.py, its modules generated once
# in /run/kubelet/py), DIR (the plugin directory, made), LOG (its events).
vm_kubelet_env() {
	R=$RDMANS_BUILD_DIR/src/cli/rdmans
	DP=$RDMANS_BUILD_DIR/src/device-plugin/rdmans-device-plugin
	export RDMANS_KUBELET_PROTOS=$RDMANS_BUILD_DIR/src/lib/device-plugin/kubelet_proto RDMANS_KUBELET_PY=/run/kubelet/py
	K="/usr/bin/python3 $_rn_vm_lib_dir/kubelet.py"
	DIR=/run/kubelet/device-plugins
	LOG=/run/kubelet/events.jsonl
	mkdir -p "$DIR"
}

# vm_still_running NAME PID LOG: one TAP result: the daemon PID has not
# exited on its own (a crash, a sanitizer's stop); LOG's tail when it has.
vm_still_running() {
	vm_check "$1 is still running" kill -0 "$2" && return 0
	vm_diag "$1's log: $(tail -n 30 "$3" 2>&1)"
	return 1
}

# vm_plugin_stops NAME PID LOG: vm_still_running, then SIGTERM ends it with
# exit 0 within 60 s (ASan's leak check passed); LOG's tail when it does not.
vm_plugin_stops() {
	local rc=0
	vm_still_running "$@" || return 1
	kill "$2"
	vm_wait_exit "$2" 60 || rc=$?
	vm_check "$1 exits 0 on SIGTERM" vm_expect_eq 0 "$rc" && return 0
	vm_diag "$1's log: $(tail -n 30 "$3" 2>&1)"
	return 1
}

# vm_kubelet_registered NAME SECS [N]: one TAP result: kubelet.py has seen N
# (default 1) registrations through to GetDevicePluginOptions within SECS. On
# failure, both sides' logs are shown and the script gives up: nothing after
# it means anything without a registered plugin.
vm_kubelet_registered() {
	local name=$1 secs=$2 want=${3:-1}
	# shellcheck disable=SC2016
	vm_check "$name" vm_poll "$secs" sh -c '[ "$(grep -c "\"event\": \"options\"" "$1")" -ge "$2" ]' _ \
		"$LOG" "$want" && return 0
	vm_diag "kubelet.py's events: $(tail -n 10 "$LOG" 2>&1)"
	vm_diag "kubelet.py's stderr: $(tail -n 30 /run/kubelet/kubelet.err 2>&1)"
	vm_diag "the plugin's stderr: $(tail -n 30 /run/kubelet/plugin.err 2>&1)"
	vm_diag "processes: $(ps -eo pid,stat,etime,time,args 2>&1 | grep -E 'kubelet|device-plugin' | grep -v grep)"
	vm_diag "load: $(cat /proc/loadavg)"
	vm_fail "no registration within $secs s"
}
