#!/bin/bash
# build.sh [OUTDIR]
#
# Builds the simhca test-double kernel module (simhca.ko) for the kernel the
# VM suite boots (tests/vm/kver.sh; $RDMANS_VM_KVER overrides it) and prints
# the path of the .ko on stdout (nothing else goes to stdout).
# With RDMANS_VM_WORLD=current, for the current world's kernel instead, with
# the compiler and headers of that world's sid root (tests/vm/prepare.sh), in
# a chroot: sid's kernel needs sid's gcc.
#
# The sources are copied into OUTDIR and built there, out of tree
# (make -C /usr/src/linux-headers-$KVER M=OUTDIR): nothing is written into the
# source tree. OUTDIR defaults to $RDMANS_BUILD_DIR/simhca when
# RDMANS_BUILD_DIR is set, else ${RDMANS_VM_CACHE:-/var/cache/rdmans-vm}/simhca-$KVER
# (or ~/.cache/rdmans-vm/simhca-$KVER when that is not writable). The guest
# sees the host's files at the same paths, so the printed path works there.
#
# linux-headers-$KVER is installed with apt-get when missing (needs root).
# Rebuilds are incremental; concurrent runs on one OUTDIR are serialised.
set -eu -o pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
me=simhca/build.sh
log() { echo "$me: $*" >&2; }
die() { echo "$me: error: $*" >&2; exit 1; }

ROOT=/
if [ "${RDMANS_VM_WORLD:-today}" = current ]; then
	prep=$("$HERE/../prepare.sh" --print) || die "prepare.sh (current world) failed"
	KVER=$(echo "$prep" | sed -n 's/^KVER=//p')
	ROOT=$(echo "$prep" | sed -n 's/^ROOT=//p')
	[ -f "$ROOT/usr/src/linux-headers-$KVER/Makefile" ] ||
		die "the current world's root $ROOT has no linux-headers-$KVER"
else
	if ! KVER=$("$HERE/../kver.sh" 2>/dev/null); then
		[ "$(id -u)" = 0 ] || die "cannot determine the kernel version (run 'apt-get update' as root)"
		apt-get update -qq >&2 || die "apt-get update failed"
		KVER=$("$HERE/../kver.sh") || die "cannot determine the kernel version (kver.sh failed)"
	fi
	case "$KVER" in
	*[!A-Za-z0-9._+-]* | "") die "odd kernel version '$KVER'" ;;
	esac

	KDIR=/usr/src/linux-headers-$KVER
	if [ ! -f "$KDIR/Makefile" ] || [ ! -f "$KDIR/Module.symvers" ]; then
		[ "$(id -u)" = 0 ] || die "$KDIR is missing; install linux-headers-$KVER (as root)"
		log "installing linux-headers-$KVER"
		export DEBIAN_FRONTEND=noninteractive
		if ! apt-get install -y -qq --no-install-recommends "linux-headers-$KVER" >&2; then
			apt-get update -qq >&2 || die "apt-get update failed"
			apt-get install -y -qq --no-install-recommends "linux-headers-$KVER" >&2 ||
				die "apt-get install linux-headers-$KVER failed"
		fi
		[ -f "$KDIR/Makefile" ] || die "linux-headers-$KVER installed but $KDIR/Makefile is missing"
	fi
fi

if [ $# -ge 1 ] && [ -n "$1" ]; then
	OUT=$1
elif [ -n "${RDMANS_BUILD_DIR:-}" ]; then
	OUT=$RDMANS_BUILD_DIR/simhca
else
	cache=${RDMANS_VM_CACHE:-/var/cache/rdmans-vm}
	if mkdir -p "$cache" 2>/dev/null && [ -w "$cache" ]; then
		OUT=$cache/simhca-$KVER
	else
		OUT=${XDG_CACHE_HOME:-$HOME/.cache}/rdmans-vm/simhca-$KVER
	fi
fi
mkdir -p "$OUT" || die "cannot create $OUT"
OUT=$(cd "$OUT" && pwd)
src=$(cd "$HERE" && pwd)
[ "$OUT" != "$src" ] || die "OUTDIR must not be the source directory"

exec 9>"$OUT/.build.lock"
flock 9

# Copy only what changed, so that make's timestamps keep rebuilds incremental.
for f in Kbuild simhca.c; do
	cmp -s "$src/$f" "$OUT/$f" 2>/dev/null || cp "$src/$f" "$OUT/$f"
done
# A build made for another kernel must not be reused.
if [ "$(cat "$OUT/.kver" 2>/dev/null)" != "$KVER" ]; then
	rm -f "$OUT"/*.o "$OUT"/*.ko "$OUT"/*.mod "$OUT"/*.mod.c "$OUT"/.*.cmd \
		"$OUT/Module.symvers" "$OUT/modules.order"
	echo "$KVER" >"$OUT/.kver"
fi

if [ "$ROOT" = / ]; then
	build() { make -C "$KDIR" M="$OUT" modules; }
else
	# objtool needs /proc; the chroot sees OUT at /mnt, in a mount namespace of its own
	build() {
		unshare -m sh -c 'mount -t proc proc "$1/proc" && mount --bind "$2" "$1/mnt" &&
			exec chroot "$1" make -C "/usr/src/linux-headers-$3" M=/mnt modules' _ "$ROOT" "$OUT" "$KVER"
	}
fi
if ! build >"$OUT/build.log" 2>&1; then
	cat "$OUT/build.log" >&2
	die "building simhca.ko failed (log: $OUT/build.log)"
fi
# Show compiler warnings, if any.
grep -E 'warning:|error:' "$OUT/build.log" >&2 || true
[ -f "$OUT/simhca.ko" ] || die "make succeeded but $OUT/simhca.ko is missing"
echo "$OUT/simhca.ko"
