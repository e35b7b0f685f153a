# shellcheck shell=bash
# TAP helpers for every shell test suite (netns on the host, VM guests through
# tests/vm/guest-lib.sh, node and image). POSIX sh where guest scripts need it.
#
# vm_check NAME CMD... runs CMD and prints "ok N - NAME" or "not ok N - NAME"
# followed by CMD's output as "# " lines; vm_ok/vm_not_ok print a result
# directly; vm_done prints the plan "1..N" and exits non-zero if any check
# failed. Diagnostics go to stdout as "# " lines so the output stays valid TAP.

VM_TAP_N=0
VM_TAP_FAILED=0

# tap_skip_unless_root: a test that needs root and runs as another user says
# so in its plan ("1..0 # SKIP needs root") and exits 77 (meson: skipped).
tap_skip_unless_root() {
	[ "$(id -u)" = 0 ] || { echo "1..0 # SKIP needs root"; exit 77; }
}

# tap_fail_unless_root WHY: a test that must not be skipped gives up (vm_fail)
# unless it runs as root.
tap_fail_unless_root() {
	[ "$(id -u)" = 0 ] || vm_fail "needs root ($1)"
}

# tap_require_exec PATH...: give up (vm_fail) unless each PATH is executable.
tap_require_exec() {
	local b
	for b in "$@"; do [ -x "$b" ] || vm_fail "no executable at $b (build first)"; done
}

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

# vm_capture CMD...: runs CMD; its stdout in $OUT, its stderr in $ERR, its
# exit status in $VM_RC
vm_capture() {
	local errf
	errf=$(mktemp)
	VM_RC=0
	OUT=$("$@" 2>"$errf") || VM_RC=$?
	ERR=$(cat "$errf")
	rm -f "$errf"
}

# vm_code_result WANT NAME CMD...: one TAP result for CMD, just captured
# (vm_capture): it exited with WANT, else its status and output as diagnostics
vm_code_result() {
	local want=$1 name=$2
	shift 2
	if [ "$VM_RC" = "$want" ]; then
		vm_ok "$name"
	else
		vm_not_ok "$name"
		vm_diag "command: $* (exit $VM_RC, expected $want)"
		vm_diag "stdout: $OUT"
		vm_diag "stderr: $ERR"
	fi
}

# vm_run_code WANT NAME CMD...: one TAP result: CMD exits with WANT.
# CMD's stdout is kept in $OUT and its stderr in $ERR for later checks.
vm_run_code() {
	local want=$1 name=$2
	shift 2
	vm_capture "$@"
	vm_code_result "$want" "$name" "$@"
}

# vm_link_view: ip's link lines (-o link, addr) without the two fields that the
# kernel's linkwatch updates after the change they follow: the operstate
# ("state UP") and IFF_RUNNING (which ip shows as NO-CARRIER when it is off). A
# snapshot taken just after `ip link set ... up` of a veth pair can catch them
# half-way ("NO-CARRIER,BROADCAST,MULTICAST,UP,LOWER_UP ... state LOWERLAYERDOWN").
# The admin state (UP) and the carrier (LOWER_UP) change at once and stay.
VM_LINK_VIEW_SED='s/NO-CARRIER,//; s/ state [A-Z]+//'
vm_link_view() { sed -E "$VM_LINK_VIEW_SED"; }

# vm_freeze PID: SIGSTOP, and back once every thread of PID has stopped (state T,
# or t under a tracer). kill(2) wakes one thread, which then stops the others;
# until it has run, the rest go on: a server could still answer the request a
# test sends next (the same in etcd-faults.py's freeze()).
vm_freeze() {
	{ kill -STOP "$1" && vm_poll 30 vm_all_stopped "$1"; } >/dev/null 2>&1 ||
		vm_fail "process $1 did not stop within 30 s of SIGSTOP"
}
vm_all_stopped() {
	local f st
	for f in /proc/"$1"/task/*/stat; do
		st=$(sed 's/.*) //' "$f" 2>/dev/null | cut -c1)
		case "$st" in T | t) ;; *) return 1 ;; esac
	done
}

# vm_wait_exit PID SECS: waits at most SECS for child PID to exit and returns
# its status; one that is still running then is killed (-9) and gives 124, so
# that a daemon which does not stop fails its check instead of hanging the test.
vm_wait_exit() {
	local tries=$(($2 * 10)) st
	while [ "$tries" -gt 0 ]; do
		st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)
		case "$st" in Z | "") break ;; esac
		sleep 0.1
		tries=$((tries - 1))
	done
	if [ "$tries" = 0 ]; then
		kill -9 "$1" 2>/dev/null
		wait "$1" 2>/dev/null
		return 124
	fi
	wait "$1"
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
