#!/bin/bash
# vm-run.sh GUEST_SCRIPT [ARGS...]
#
# Boots Debian's kernel in qemu and runs GUEST_SCRIPT there as root, with ARGS,
# in the same working directory; what the guest writes stays in its tmpfs.
# RDMANS_VM_WORLD picks the world (prepare.sh):
#  - today (default): Debian 12's kernel, the host's / as the guest's root (9p,
#    read-only, tmpfs overlay on top): the guest sees host files at the same paths;
#  - current: sid's kernel and the sid root prepare.sh builds as the guest's
#    root; of the host's files the guest sees, at the same paths, this
#    repository, the working directory, $RDMANS_BUILD_DIR and the directories
#    listed (space-separated) in $RDMANS_VM_BINDS, each under its own overlay.
#
# The script's stdout+stderr appear on this script's stdout; this script exits
# with the script's exit status, or non-zero with a message on stderr when the
# guest dies or times out.
#
# Passed into the guest: RDMANS_*, TEST_*, the sanitizer/meson variables
# (ASAN_OPTIONS, UBSAN_OPTIONS, LSAN_OPTIONS, MSAN_OPTIONS, MALLOC_PERTURB_,
# MESON_TEST_ITERATION) and any name listed in $RDMANS_VM_PASS_ENV. The guest
# also gets RDMANS_IN_VM=1 and RDMANS_VM_LIB (path of guest-lib.sh).
#
# Knobs: RDMANS_VM_PREPARED (prepare.sh --print's answers, a file a world,
# as tools/test.sh leaves them), RDMANS_VM_TIMEOUT (s, default 300), RDMANS_VM_MEM (MiB, 2048),
# RDMANS_VM_SMP (1), RDMANS_VM_ACCEL (tcg,thread=multi), RDMANS_VM_APPEND
# (extra kernel command line, e.g. ib_core.netns_mode=0), RDMANS_VM_QEMU_EXTRA
# (extra qemu arguments, split on spaces), RDMANS_VM_CACHE,
# RDMANS_VM_KVER, RDMANS_VM_STATE_DIR (a host dir the guest can mount as tag
# rdmansstate, kept across runs), RDMANS_VM_VERBOSE=1 (timings on stderr), RDMANS_VM_KEEP=1
# (keep the work dir with console.log).
set -eu -o pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
me=vm-run.sh
die() { echo "$me: error: $*" >&2; exit 1; }
say() { [ "${RDMANS_VM_VERBOSE:-0}" = 0 ] || echo "$me: $*" >&2; }

[ $# -ge 1 ] || { echo "usage: $me GUEST_SCRIPT [ARGS...]" >&2; exit 2; }
script=$1
shift
[ -f "$script" ] || die "guest script '$script' not found"
script=$(readlink -f "$script")
cwd=$(pwd)

timeout_s=${RDMANS_VM_TIMEOUT:-300}
case "$timeout_s" in '' | *[!0-9]*) die "RDMANS_VM_TIMEOUT must be a number of seconds" ;; esac

t0=$(date +%s.%N)
# tools/test.sh asks prepare.sh once a world before the suites and leaves its
# answers in $RDMANS_VM_PREPARED/WORLD: asked again by each of some 40 guest
# tests, its checks (dpkg-query per package, apt-cache over the package
# lists) took 3-4 s of CPU each, on a machine whose cores the guests fill.
if [ -n "${RDMANS_VM_PREPARED:-}" ] && [ -s "$RDMANS_VM_PREPARED/${RDMANS_VM_WORLD:-today}" ]; then
	prep=$(cat "$RDMANS_VM_PREPARED/${RDMANS_VM_WORLD:-today}")
else
	prep=$("$HERE/prepare.sh" --print) || die "prepare.sh failed"
fi
KVER=$(echo "$prep" | sed -n 's/^KVER=//p')
KDIR=$(echo "$prep" | sed -n 's/^CACHE_DIR=//p')
ROOT=$(echo "$prep" | sed -n 's/^ROOT=//p')
ARCH=$(echo "$prep" | sed -n 's/^ARCH=//p')
[ -n "$KVER" ] && [ -r "$KDIR/vmlinuz" ] && [ -r "$KDIR/initramfs.img" ] ||
	die "prepare.sh did not leave a kernel and initramfs in '$KDIR'"

work=$(mktemp -d "${TMPDIR:-/tmp}/rdmans-vm.XXXXXX")
mkdir "$work/share"
qpid=
tpid=
cleanup() {
	[ -z "$qpid" ] || kill "$qpid" 2>/dev/null || true
	[ -z "$tpid" ] || kill "$tpid" 2>/dev/null || true
	if [ "${RDMANS_VM_KEEP:-0}" != 0 ]; then
		echo "$me: kept $work" >&2
	else
		rm -rf "$work"
	fi
}
trap cleanup EXIT
trap 'echo "$me: interrupted" >&2; exit 130' INT
trap 'echo "$me: terminated" >&2; exit 143' TERM HUP

# The job: environment, cwd, then the script. %q quoting is read by bash.
{
	echo '#!/bin/bash'
	for var in $(compgen -e); do
		case "$var" in
		RDMANS_* | TEST_* | ASAN_OPTIONS | UBSAN_OPTIONS | LSAN_OPTIONS | MSAN_OPTIONS | \
			MALLOC_PERTURB_ | MESON_TEST_ITERATION) ;;
		*) case " ${RDMANS_VM_PASS_ENV:-} " in *" $var "*) ;; *) continue ;; esac ;;
		esac
		printf 'export %s=%q\n' "$var" "${!var}"
	done
	printf 'export RDMANS_IN_VM=1 RDMANS_VM_LIB=%q\n' "$HERE/guest-lib.sh"
	printf 'echo "$(cut -d" " -f1 /proc/uptime)" >/run/rdmans-vm/share/boot-uptime\n'
	printf 'cd %q || { echo "vm-run: cannot cd to %q in the guest" >&2; exit 125; }\n' "$cwd" "$cwd"
	if [ -x "$script" ]; then
		printf 'exec %q' "$script"
	else
		printf 'exec /bin/bash %q' "$script"
	fi
	[ $# -eq 0 ] || printf ' %q' "$@"
	echo
} >"$work/share/job.sh"
: >"$work/share/out"
if [ "$ROOT" != / ]; then
	echo "$ROOT" >"$work/share/root"
	# each once, parents first (shorter paths): a bind inside another one is mounted over it
	for d in "$(cd "$HERE/../.." && pwd)" "$cwd" ${RDMANS_BUILD_DIR:-} ${RDMANS_VM_BINDS:-}; do
		[ -d "$d" ] || die "cannot show $d in the guest: not a directory"
		readlink -f "$d"
	done | sort -u | awk '{ print length($0) " " $0 }' | sort -s -n -k1,1 | cut -d' ' -f2- >"$work/share/binds"
fi

# One vCPU by default: with two, a guest once sat in a soft lockup on both
# vCPUs (runc and its re-exec, 400 s) under multi-threaded TCG; one vCPU
# cannot livelock on cross-CPU waits and ran the suite as fast here.
# The CPU: Nehalem (SSE4.2, no AVX, no ERMS, no 5-level paging). Under TCG
# "max" was 1.3-2x slower at moving data: podman import of 40 MB 53-67 s
# against 35-42 s, sha256sum 4.4-5.7 s against 2.4-2.9 s, reading 300
# libraries over 9p 14-17 s against 9-11 s (the guest's copy routines and
# page walks are emulated); RDMANS_VM_CPU names another.
# norandmaps: no address space randomization in the guest. TCG finds a
# translated block again by its virtual address, so every process of a
# randomized PIE (ours, podman, containerd, libc) was translated anew:
# current-vm-cni took 198 s with it, 113 s without (bench/cni-profile.md,
# "The guest: the emulator's translation cache"). It changes no behaviour
# the tests look at.
# no_timer_check: at boot the kernel counts timer interrupts through the IO-APIC
# for a few milliseconds and panics if too few came ("IO-APIC + timer doesn't
# work!"). An emulated CPU on a busy host can miss that window (0.028 s
# into the boot); cloud images boot VMs with the same option.
append="quiet loglevel=3 panic=-1 mitigations=off norandmaps ${RDMANS_VM_APPEND:-}"
if [ "$ARCH" = aarch64 ]; then
	# The arm64 world: qemu's generic "virt" board (PCI, a PL011 UART), a
	# Cortex-A72: ARMv8.0 like the cores Debian's arm64 kernel is built for,
	# and without "max"'s pointer authentication, which TCG computes in
	# software on every function return.
	# shellcheck disable=SC2054 # commas are qemu syntax
	qemu=(qemu-system-aarch64 -machine virt -cpu "${RDMANS_VM_CPU:-cortex-a72}")
	append="console=ttyAMA0 $append"
else
	# shellcheck disable=SC2054
	qemu=(qemu-system-x86_64 -cpu "${RDMANS_VM_CPU:-Nehalem}")
	append="console=ttyS0 no_timer_check $append"
fi
# shellcheck disable=SC2054,SC2206 # commas are qemu syntax; QEMU_EXTRA is split on purpose
qemu+=(-nodefaults -nographic -no-reboot
	-accel "${RDMANS_VM_ACCEL:-tcg,thread=multi}"
	-m "${RDMANS_VM_MEM:-2048}" -smp "${RDMANS_VM_SMP:-1}"
	-kernel "$KDIR/vmlinuz" -initrd "$KDIR/initramfs.img" -append "$append"
	-monitor none -serial "file:$work/console.log"
	-virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap
	-virtfs "local,path=$work/share,mount_tag=rdmansvm,security_model=none,multidevs=remap")
# A host directory that outlives the VM ("the node's disk" across a reboot):
# the guest mounts it with `mount -t 9p -o trans=virtio,version=9p2000.L rdmansstate DIR`.
if [ -n "${RDMANS_VM_STATE_DIR:-}" ]; then
	[ -d "$RDMANS_VM_STATE_DIR" ] || die "RDMANS_VM_STATE_DIR=$RDMANS_VM_STATE_DIR is not a directory"
	qemu+=(-virtfs "local,path=$RDMANS_VM_STATE_DIR,mount_tag=rdmansstate,security_model=none,multidevs=remap")
fi
# last: the shares above take their places on the main PCI bus before an
# extra expander bus (pxb) exists, which takes bridges only
# shellcheck disable=SC2206 # split on purpose
qemu+=(${RDMANS_VM_QEMU_EXTRA:-})

# Which world this ran in, for the TAP log
echo "# world: ${RDMANS_VM_WORLD:-today} (kernel $KVER, root ${ROOT})"
t1=$(date +%s.%N)
timeout -k 10 "$timeout_s" "${qemu[@]}" </dev/null >"$work/qemu.log" 2>&1 &
qpid=$!
tail -n +1 -f -s 0.2 --pid="$qpid" "$work/share/out" &
tpid=$!
qrc=0
wait "$qpid" || qrc=$?
qpid=
wait "$tpid" || true
tpid=
t2=$(date +%s.%N)

say "kernel $KVER; prepare $(awk "BEGIN{printf \"%.1f\", $t1 - $t0}")s," \
	"VM $(awk "BEGIN{printf \"%.1f\", $t2 - $t1}")s," \
	"job started at guest uptime $(cat "$work/share/boot-uptime" 2>/dev/null || echo '?')s"

show_console() {
	echo "$me: --- guest console (tail) ---" >&2
	# (drop the firmware's terminal escapes and CRs)
	tail -n 40 "$work/console.log" 2>/dev/null |
		LC_ALL=C sed -e 's/\x1bc//g' -e 's/\x1b\[[0-9;?]*[A-Za-z]//g' -e 's/\r//g' >&2 || true
	if [ -s "$work/qemu.log" ]; then
		echo "$me: --- qemu ---" >&2
		tail -n 20 "$work/qemu.log" >&2
	fi
}

if [ -f "$work/share/rc" ]; then
	rc=$(cat "$work/share/rc")
	case "$rc" in '' | *[!0-9]*) die "guest wrote a bad exit status '$rc'" ;; esac
	[ "$rc" = 0 ] || echo "$me: $(basename "$script") exited $rc in the guest" >&2
	exit "$rc"
fi
if [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then
	echo "$me: error: guest timed out after ${timeout_s}s (RDMANS_VM_TIMEOUT); qemu killed" >&2
else
	echo "$me: error: guest stopped without reporting an exit status (qemu exit $qrc)" >&2
fi
show_console
exit 1
