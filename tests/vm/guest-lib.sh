# shellcheck shell=bash
# Helpers for guest scripts run by vm-run.sh. Source it:
#   . "${RDMANS_VM_LIB:-$(dirname "$0")/guest-lib.sh}"
#
# TAP output: vm_check NAME CMD... runs CMD and prints "ok N - NAME" or
# "not ok N - NAME" followed by CMD's output as "# " lines; vm_ok/vm_not_ok
# print a result directly; vm_done prints the plan "1..N" and exits non-zero
# if any check failed. Diagnostics go to stdout as "# " lines so the output
# stays valid TAP.

VM_TAP_N=0
VM_TAP_FAILED=0

# vm_diag TEXT...: print TEXT as TAP comment lines.
vm_diag() {
	printf '%s\n' "$*" | sed 's/^/# /'
}

# vm_fail MSG: give up (TAP "Bail out!"), exit 1.
vm_fail() {
	echo "Bail out! $*"
	exit 1
}

vm_ok() {
	VM_TAP_N=$((VM_TAP_N + 1))
	echo "ok $VM_TAP_N - $*"
}

vm_not_ok() {
	VM_TAP_N=$((VM_TAP_N + 1))
	VM_TAP_FAILED=$((VM_TAP_FAILED + 1))
	echo "not ok $VM_TAP_N - $*"
}

# vm_check NAME CMD [ARGS...]: one TAP result for CMD's exit status.
# CMD's output is kept in $VM_OUT (stdout+stderr) and shown on failure.
vm_check() {
	local name=$1 rc=0
	shift
	VM_OUT=$("$@" 2>&1) || rc=$?
	if [ "$rc" = 0 ]; then
		vm_ok "$name"
	else
		vm_not_ok "$name"
		vm_diag "command: $* (exit $rc)"
		[ -z "$VM_OUT" ] || vm_diag "$VM_OUT"
	fi
	return "$rc"
}

# vm_expect_eq WANT GOT [WHAT]: succeed if WANT = GOT, else say why.
vm_expect_eq() {
	[ "$1" = "$2" ] && return 0
	vm_diag "${3:-value}: expected '$1', got '$2'"
	return 1
}

# vm_expect_contains HAYSTACK NEEDLE [WHAT]: succeed if NEEDLE is in HAYSTACK.
vm_expect_contains() {
	case "$1" in *"$2"*) return 0 ;; esac
	vm_diag "${3:-output} does not contain '$2':"
	vm_diag "$1"
	return 1
}

# vm_run_code WANT NAME CMD...: one TAP result: CMD exits with WANT.
# CMD's stdout is kept in $OUT and its stderr in $ERR for later checks.
vm_run_code() {
	local want=$1 name=$2 rc=0 errf
	shift 2
	errf=$(mktemp)
	OUT=$("$@" 2>"$errf") || rc=$?
	ERR=$(cat "$errf")
	rm -f "$errf"
	if [ "$rc" = "$want" ]; then
		vm_ok "$name"
	else
		vm_not_ok "$name"
		vm_diag "command: $* (exit $rc, expected $want)"
		vm_diag "stdout: $OUT"
		vm_diag "stderr: $ERR"
	fi
}

# vm_poll SECS CMD...: runs CMD every 0.1 s until it succeeds or SECS pass
# (then once more, so its output and status reach the caller).
vm_poll() { # POSIX sh: guest scripts also source this from `sh -c`
	local tries=$(($1 * 10))
	shift
	while [ "$tries" -gt 0 ]; do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.1
		tries=$((tries - 1))
	done
	"$@"
}

# vm_done: print the TAP plan; exit 0 if every check passed, else 1.
vm_done() {
	echo "1..$VM_TAP_N"
	[ "$VM_TAP_FAILED" = 0 ] || { vm_diag "$VM_TAP_FAILED of $VM_TAP_N checks failed"; exit 1; }
	exit 0
}

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
