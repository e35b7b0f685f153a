#!/bin/bash
# kmod-build.sh NAME SOURCE [OUTDIR] [VAR=VALUE...]
#
# Builds the kernel module NAME.ko out of tree for the kernel the VM suite
# boots (tests/vm/kver.sh; $RDMANS_VM_KVER overrides it) and prints the path
# of the .ko on stdout (nothing else goes to stdout). VAR=VALUE pairs go to
# make (CONFIG_RDMA_SIW=m).
# SOURCE is a directory of ours (tests/vm/simhca), or kernel:PATH, a directory
# of the booted kernel's own source (kernel:drivers/infiniband/sw/siw): for
# the drivers Debian's kernel config leaves out. That directory is taken once
# from Debian's linux-source-X.Y (of the kernel's world) and cached in
# ${RDMANS_VM_CACHE:-/var/cache/rdmans-vm}/kernel-src-$KVER/.
# With RDMANS_VM_WORLD=current, for the current world's kernel instead, with
# the compiler and headers of that world's sid root (tests/vm/prepare.sh), in
# a chroot: sid's kernel needs sid's gcc.
# With RDMANS_VM_WORLD=arm64, for the arm64 world's kernel, cross-compiled
# with gcc-aarch64-linux-gnu against the headers prepare.sh unpacked.
#
# The sources are copied into OUTDIR and built there
# (make -C /usr/src/linux-headers-$KVER M=OUTDIR): nothing is written into the
# source tree. OUTDIR defaults to $RDMANS_BUILD_DIR/NAME when
# RDMANS_BUILD_DIR is set, else ${RDMANS_VM_CACHE:-/var/cache/rdmans-vm}/NAME-$KVER
# (or ~/.cache/rdmans-vm/NAME-$KVER when that is not writable). The guest
# sees the host's files at the same paths, so the printed path works there.
#
# linux-headers-$KVER is installed with apt-get when missing (needs root).
# Rebuilds are incremental; concurrent runs on one OUTDIR are serialised.
set -eu -o pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 2 ] || { echo "usage: kmod-build.sh NAME SOURCE [OUTDIR] [VAR=VALUE...]" >&2; exit 2; }
NAME=$1 SOURCE=$2
shift 2
OUT_ARG=
if [ $# -ge 1 ]; then
	OUT_ARG=$1
	shift
fi
me="kmod-build.sh $NAME"
log() { echo "$me: $*" >&2; }
die() { echo "$me: error: $*" >&2; exit 1; }
need_root() { [ "$(id -u)" = 0 ] || die "$1 needs root (run as root or with sudo)"; }
case "$NAME" in *[!A-Za-z0-9_-]* | "") die "odd module name '$NAME'" ;; esac
for v in "$@"; do
	case "$v" in [A-Z_]*=*) ;; *) die "'$v' is not VAR=VALUE" ;; esac
done
CACHE=${RDMANS_VM_CACHE:-/var/cache/rdmans-vm}

ROOT=/
CROSS=()
if [ "${RDMANS_VM_WORLD:-today}" = arm64 ]; then
	prep=$("$HERE/prepare.sh" --print) || die "prepare.sh (arm64 world) failed"
	KVER=$(echo "$prep" | sed -n 's/^KVER=//p')
	KDIR=$(echo "$prep" | sed -n 's/^CACHE_DIR=//p')/root/usr/src/linux-headers-$KVER
	[ -f "$KDIR/Makefile" ] || die "the arm64 world has no linux-headers-$KVER at $KDIR"
	CROSS=(ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu-)
elif [ "${RDMANS_VM_WORLD:-today}" = current ]; then
	prep=$("$HERE/prepare.sh" --print) || die "prepare.sh (current world) failed"
	KVER=$(echo "$prep" | sed -n 's/^KVER=//p')
	ROOT=$(echo "$prep" | sed -n 's/^ROOT=//p')
	[ -f "$ROOT/usr/src/linux-headers-$KVER/Makefile" ] ||
		die "the current world's root $ROOT has no linux-headers-$KVER"
else
	if ! KVER=$("$HERE/kver.sh" 2>/dev/null); then
		need_root "determining the kernel version ('apt-get update')"
		apt-get update -qq >&2 || die "apt-get update failed"
		KVER=$("$HERE/kver.sh") || die "cannot determine the kernel version (kver.sh failed)"
	fi
	case "$KVER" in
	*[!A-Za-z0-9._+-]* | "") die "odd kernel version '$KVER'" ;;
	esac

	KDIR=/usr/src/linux-headers-$KVER
	if [ ! -f "$KDIR/Makefile" ] || [ ! -f "$KDIR/Module.symvers" ]; then
		need_root "installing linux-headers-$KVER"
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

# kernel:PATH -> that directory of linux-source-X.Y, fetched once per kernel.
# Only PATH is unpacked (the tarball is 140-165 MB; the .deb is not kept).
kernel_source() {
	local sub=$1 majmin pkg dir stage deb
	case "$sub" in "" | /* | *..* | *[!A-Za-z0-9/_.-]*) die "odd kernel source path '$sub'" ;; esac
	majmin=$(echo "$KVER" | sed -n 's/^\([0-9]\+\.[0-9]\+\)[.-].*/\1/p')
	[ -n "$majmin" ] || die "cannot read X.Y from the kernel version '$KVER'"
	pkg=linux-source-$majmin
	dir=$CACHE/kernel-src-$KVER
	if [ -f "$dir/$sub/Makefile" ] && [ -f "$dir/.done-$(echo "$sub" | tr / _)" ]; then
		echo "$dir/$sub"
		return 0
	fi
	need_root "fetching $pkg for $sub"
	mkdir -p "$dir"
	exec 8>"$dir/.fetch.lock"
	flock 8
	if [ ! -f "$dir/.done-$(echo "$sub" | tr / _)" ]; then
		stage=$(mktemp -d "$dir/.stage.XXXXXX")
		log "fetching $pkg (for $sub)"
		if [ "$ROOT" = / ]; then
			if ! (cd "$stage" && apt-get -o APT::Sandbox::User=root download -qq "$pkg" >&2); then
				apt-get update -qq >&2 || die "apt-get update failed"
				(cd "$stage" && apt-get -o APT::Sandbox::User=root download -qq "$pkg" >&2) || die "apt-get download $pkg failed"
			fi
		else
			SID=$CACHE/current
			# shellcheck source=../../tools/sid-apt.sh
			. "$HERE/../../tools/sid-apt.sh"
			sid_download "$stage" "$pkg"
		fi
		deb=$(ls "$stage"/"$pkg"_*.deb 2>/dev/null | head -n 1)
		[ -n "$deb" ] || die "no $pkg .deb after the download"
		dpkg-deb --fsys-tarfile "$deb" | tar -xO "./usr/src/$pkg.tar.xz" |
			tar -xJ -C "$stage" "$pkg/$sub" || die "unpacking $sub from $deb failed"
		basename "$deb" >"$stage/$pkg/.from"
		mkdir -p "$dir/$(dirname "$sub")"
		rm -rf "${dir:?}/$sub"
		mv "$stage/$pkg/$sub" "$dir/$sub"
		cp "$stage/$pkg/.from" "$dir/.from"
		rm -rf "$stage"
		touch "$dir/.done-$(echo "$sub" | tr / _)"
	fi
	exec 8>&-
	echo "$dir/$sub"
}

case "$SOURCE" in
kernel:*) src=$(kernel_source "${SOURCE#kernel:}") ;;
*) src=$(cd "$SOURCE" && pwd) || die "no source directory '$SOURCE'" ;;
esac

if [ -n "$OUT_ARG" ]; then
	OUT=$OUT_ARG
elif [ -n "${RDMANS_BUILD_DIR:-}" ]; then
	OUT=$RDMANS_BUILD_DIR/$NAME
else
	if mkdir -p "$CACHE" 2>/dev/null && [ -w "$CACHE" ]; then
		OUT=$CACHE/$NAME-$KVER
	else
		OUT=${XDG_CACHE_HOME:-$HOME/.cache}/rdmans-vm/$NAME-$KVER
	fi
fi
mkdir -p "$OUT" || die "cannot create $OUT"
OUT=$(cd "$OUT" && pwd)
[ "$OUT" != "$src" ] || die "OUTDIR must not be the source directory"

exec 9>"$OUT/.build.lock"
flock 9

# Copy only what changed, so that make's timestamps keep rebuilds incremental.
for f in "$src"/Kbuild "$src"/Makefile "$src"/*.c "$src"/*.h; do
	[ -f "$f" ] || continue
	cmp -s "$f" "$OUT/${f##*/}" 2>/dev/null || cp "$f" "$OUT/${f##*/}"
done
# A build made for another kernel must not be reused.
if [ "$(cat "$OUT/.kver" 2>/dev/null)" != "$KVER" ]; then
	rm -f "$OUT"/*.o "$OUT"/*.ko "$OUT"/*.mod "$OUT"/*.mod.c "$OUT"/.*.cmd \
		"$OUT/Module.symvers" "$OUT/modules.order"
	echo "$KVER" >"$OUT/.kver"
fi

if [ "$ROOT" = / ]; then
	build() { make -C "$KDIR" M="$OUT" "${CROSS[@]}" "$@" modules; }
else
	# objtool needs /proc; the chroot sees OUT at /mnt, in a mount namespace of its own
	build() {
		unshare -m sh -c 'mount -t proc proc "$1/proc" && mount --bind "$2" "$1/mnt" &&
			r=$1 k=$3 && shift 3 && exec chroot "$r" make -C "/usr/src/linux-headers-$k" M=/mnt "$@" modules' \
			_ "$ROOT" "$OUT" "$KVER" "$@"
	}
fi
if ! build "$@" >"$OUT/build.log" 2>&1; then
	cat "$OUT/build.log" >&2
	die "building $NAME.ko failed (log: $OUT/build.log)"
fi
# Show compiler warnings, if any.
grep -E 'warning:|error:' "$OUT/build.log" >&2 || true
[ -f "$OUT/$NAME.ko" ] || die "make succeeded but $OUT/$NAME.ko is missing"
echo "$OUT/$NAME.ko"
