#!/bin/bash
# Prepares what the VM test suite needs, and is fast when it is already there.
# Three worlds ($RDMANS_VM_WORLD):
#  - today (the default): Debian 12's kernel (linux-image-$KVER, kver.sh), and
#    the host's own / as the guest's root;
#  - arm64: Debian 12's arm64 kernel of the same version (linux-image-$KVER
#    of dpkg's foreign architecture arm64, booted by qemu-system-aarch64), its
#    headers for cross-building test modules (with the host's linux-kbuild and
#    gcc-aarch64-linux-gnu), and a guest root holding nothing but Debian's
#    arm64 busybox-static: what runs there brings its own loader and libraries;
#  - current: Debian sid's kernel (linux-binary-, linux-modules-$KVER) and a
#    sid userland root made by mmdebstrap (containerd 2.x, podman 5, runc,
#    crun, CNI plugins, rdma-core, perftest, and the headers and compiler that
#    build out-of-tree modules for that kernel), never installed on the host.
#    Sid is read through a private apt list dir: the host's apt setup is untouched.
# Both: host packages (qemu, busybox-static, ...) installed only if missing;
# kernel packages fetched with `apt-get download` and unpacked with dpkg-deb -x;
# a busybox initramfs that mounts the host's / over 9p under a tmpfs overlay
# (and, in the current world, the sid root as the guest's / instead).
#
# Layout ($RDMANS_VM_CACHE, default /var/cache/rdmans-vm):
#   $CACHE/$KVER/root/        the unpacked packages (depmod'ed)
#   $CACHE/$KVER/vmlinuz      the kernel image
#   $CACHE/$KVER/modules      -> the module tree
#   $CACHE/$KVER/initramfs.img
#   $CACHE/current/apt/       sid's package lists (current world)
#   $CACHE/current/root/      the sid userland (current world)
#
# Prints nothing on stdout except, with --print, "KVER=... CACHE_DIR=...
# WORLD=... ROOT=... ARCH=..." lines (ROOT: the guest's / on the host, "/" for
# today; ARCH: the guest machine's `uname -m`).
# KVER: kver.sh for today, sid's linux-image-amd64 for current;
# $RDMANS_VM_KVER overrides either.
set -eu -o pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${RDMANS_VM_CACHE:-/var/cache/rdmans-vm}
WORLD=${RDMANS_VM_WORLD:-today}
case "$WORLD" in today | current | arm64) ;; *) echo "prepare.sh: error: RDMANS_VM_WORLD must be today, current or arm64, not '$WORLD'" >&2; exit 2 ;; esac

log() { echo "prepare.sh: $*" >&2; }
die() { echo "prepare.sh: error: $*" >&2; exit 1; }

# Bumped whenever the initramfs contents below change in a way the hash of
# this file would not already catch (kept for clarity).
INITRAMFS_FORMAT=2

apt_updated=0
apt_update_once() {
	[ "$apt_updated" = 1 ] && return 0
	log "running apt-get update"
	apt-get update -qq >&2 || die "apt-get update failed"
	apt_updated=1
}

need_root() {
	[ "$(id -u)" = 0 ] || die "$1 needs root (run as root or with sudo)"
}

pkg_installed() {
	dpkg-query -W -f='${Status}\n' "$1" 2>/dev/null | grep -q '^install ok installed$'
}

ensure_packages() {
	missing=
	for p in "$@"; do
		pkg_installed "$p" || missing="$missing $p"
	done
	[ -z "$missing" ] && return 0
	need_root "installing$missing"
	log "installing$missing"
	export DEBIAN_FRONTEND=noninteractive
	# shellcheck disable=SC2086
	if ! apt-get install -y -qq --no-install-recommends $missing >&2; then
		apt_update_once
		# shellcheck disable=SC2086
		apt-get install -y -qq --no-install-recommends $missing >&2 ||
			die "apt-get install$missing failed"
	fi
}

# --- sid through a private apt dir (current world) ---------------------------
# The mirror is the host's own (its debian.sources or sources.list), suite sid.
SID=$CACHE/current
# sid_apt_opts, sid_mirror, sid_lists
# shellcheck source=tools/sid-apt.sh
. "$HERE/../../tools/sid-apt.sh"

# --- kernel version ---------------------------------------------------------
sid_kver() {
	if [ -n "${RDMANS_VM_KVER:-}" ]; then
		KVER=$RDMANS_VM_KVER
	else
		# shellcheck disable=SC2046
		KVER=$(apt-cache $(sid_apt_opts) depends linux-image-amd64 2>/dev/null |
			sed -n 's/.*Depends: linux-image-\([0-9].*-amd64\)$/\1/p' | head -n 1)
		[ -n "$KVER" ] || die "sid's linux-image-amd64 names no kernel"
	fi
}
# What the sid root holds; its stamp names them and the kernel its headers are for.
sid_pkgs="bash iproute2 kmod procps util-linux jq busybox-static strace ca-certificates
	containerd runc crun podman netavark containernetworking-plugins iptables nftables
	rdma-core ibverbs-utils ibverbs-providers rdmacm-utils perftest
	libmnl0 libnl-3-200 libnl-route-3-200 libjansson4 libcurl4t64 libibverbs1
	librdmacm1t64 libmicrohttpd12t64 libasan8 libubsan1
	python3 python3-grpcio python3-protobuf python3-grpc-tools golang-k8s-cri-api-dev python3-jsonschema
	etcd-server etcd-client make"
sid_root_stamp() { echo "$(echo $sid_pkgs | tr ' ' '\n' | LC_ALL=C sort | tr '\n' ' ')linux-headers-$KVER"; }

if [ "$WORLD" = current ]; then
	mkdir -p "$SID" 2>/dev/null || die "cannot create $SID (set RDMANS_VM_CACHE?)"
	exec 8>"$SID/.lock"
	flock 8
	sid_lists
	sid_kver
	# Anything to fetch from sid: lists as old as the cache may name packages the
	# archive no longer has, so fetch them again first (and take sid's kernel of today).
	if [ ! -e "$CACHE/$KVER/root/.unpacked" ] ||
		[ "$(cat "$SID/root/.rdmans-world" 2>/dev/null)" != "$(sid_root_stamp)" ]; then
		rm -f "$SID/apt/.updated"
		sid_lists
		sid_kver
	fi
elif ! KVER=$("$HERE/kver.sh" 2>/dev/null); then
	need_root "apt-get update"
	apt_update_once
	KVER=$("$HERE/kver.sh") || die "cannot determine the kernel version (kver.sh failed)"
fi
if [ "$WORLD" = arm64 ]; then
	# Debian builds one kernel version for both architectures
	KVER=${KVER%-amd64}-arm64
	if ! dpkg --print-foreign-architectures | grep -qx arm64; then
		need_root "dpkg --add-architecture arm64"
		log "dpkg --add-architecture arm64"
		dpkg --add-architecture arm64
		apt_updated=0
		apt_update_once
	fi
fi
# --- host packages ----------------------------------------------------------
ensure_packages qemu-system-x86 busybox-static cpio gzip kmod util-linux \
	coreutils iproute2 rdma-core ibverbs-utils xz-utils
# today's world builds its test modules on the host; the current one in its
# root; arm64's with the cross compiler and the headers unpacked below
case "$WORLD" in
today) ensure_packages "linux-headers-$KVER" ;;
arm64) ensure_packages qemu-system-arm gcc-aarch64-linux-gnu make ;;
esac

# --- kernel + modules + initramfs (under a lock: tests may run concurrently) --
mkdir -p "$CACHE" 2>/dev/null || die "cannot create cache dir $CACHE (set RDMANS_VM_CACHE?)"
[ -w "$CACHE" ] || die "cache dir $CACHE is not writable (set RDMANS_VM_CACHE?)"
exec 9>"$CACHE/.lock"
flock 9

KDIR=$CACHE/$KVER
mkdir -p "$KDIR"

# The kernel's packages: today, linux-image-$KVER holds it all; in sid the image,
# its modules and its config are three packages (linux-image-$KVER is empty).
if [ "$WORLD" = current ]; then
	kpkgs="linux-binary-$KVER linux-modules-$KVER linux-base-$KVER"
	apt_download() {
		# shellcheck disable=SC2046
		apt-get $(sid_apt_opts) download -q "$@" >&2
	}
else
	kpkgs="linux-image-$KVER"
	if [ "$WORLD" = arm64 ]; then
		majmin=$(echo "$KVER" | sed -n 's/^\([0-9]\+\.[0-9]\+\)[.-].*/\1/p')
		kpkgs="linux-image-$KVER:arm64 linux-headers-$KVER:arm64 linux-headers-${KVER%-arm64}-common"
		kpkgs="$kpkgs linux-kbuild-$majmin busybox-static:arm64"
	fi
	apt_download() {
		apt-get download -q -o APT::Sandbox::User=root "$@" >&2 && return 0
		need_root "apt-get update"
		apt_update_once
		apt-get download -q -o APT::Sandbox::User=root "$@" >&2
	}
fi
if [ ! -e "$KDIR/root/.unpacked" ]; then
	log "fetching $kpkgs"
	dl=$(mktemp -d "$CACHE/.dl.XXXXXX")
	trap 'rm -rf "$dl"' EXIT
	# shellcheck disable=SC2086
	(cd "$dl" && apt_download $kpkgs) || die "apt-get download $kpkgs failed"
	mkdir "$dl/root"
	for deb in "$dl"/*.deb; do
		[ -f "$deb" ] || die "apt-get download produced no .deb"
		log "unpacking $(basename "$deb")"
		dpkg-deb -x "$deb" "$dl/root" || die "dpkg-deb -x $deb failed"
	done
	# sid ships a merged /usr: bookworm's depmod looks only under ROOT/lib/modules
	[ -e "$dl/root/lib" ] || ln -s usr/lib "$dl/root/lib"
	[ -d "$dl/root/lib/modules/$KVER" ] || die "no lib/modules/$KVER in $kpkgs"
	depmod -b "$dl/root" "$KVER" || die "depmod failed"
	if [ "$WORLD" = arm64 ]; then
		# the headers include their common part by its installed path: here, the unpacked one
		sed -i "s|^include /usr/src/|include $KDIR/root/usr/src/|" "$dl/root/usr/src/linux-headers-$KVER/Makefile" ||
			die "no Makefile in linux-headers-$KVER"
	fi
	touch "$dl/root/.unpacked"
	rm -rf "$KDIR/root" "$KDIR/initramfs.img"
	mv "$dl/root" "$KDIR/root"
	rm -rf "$dl"
	trap - EXIT
fi
for vmlinuz in "root/boot/vmlinuz-$KVER" "root/lib/modules/$KVER/vmlinuz" ""; do
	[ -z "$vmlinuz" ] || [ ! -f "$KDIR/$vmlinuz" ] || break
done
[ -n "$vmlinuz" ] || die "no kernel image (boot/vmlinuz-$KVER or lib/modules/$KVER/vmlinuz) in $KDIR/root"
ln -sfn "$vmlinuz" "$KDIR/vmlinuz"
ln -sfn "root/lib/modules/$KVER" "$KDIR/modules"

# The guest's busybox: the host's, or the arm64 package's for that world.
busybox=/bin/busybox
[ "$WORLD" != arm64 ] || busybox=$KDIR/root/bin/busybox
[ -x "$busybox" ] || die "no busybox at $busybox"
# The initramfs is rebuilt whenever this script changes.
stamp="$INITRAMFS_FORMAT $KDIR $(sha256sum "$0" | cut -d' ' -f1) $(sha256sum "$busybox" | cut -d' ' -f1)"
if [ ! -f "$KDIR/initramfs.img" ] || [ "$(cat "$KDIR/initramfs.stamp" 2>/dev/null)" != "$stamp" ]; then
	log "building initramfs for $KVER"
	ir=$(mktemp -d "$CACHE/.initramfs.XXXXXX")
	trap 'rm -rf "$ir"' EXIT
	mkdir -p "$ir/bin" "$ir/mod" "$ir/dev" "$ir/proc" "$ir/sys" "$ir/newroot" \
		"$ir/lower" "$ir/rw"
	cp "$busybox" "$ir/bin/busybox"
	# Modules needed to reach the 9p root, in load order (dependencies first).
	: >"$ir/mod/order"
	for m in virtio_pci 9pnet_virtio 9p overlay; do
		modprobe -d "$KDIR/root" -S "$KVER" --show-depends "$m" ||
			die "module $m not found for $KVER"
	done | while read -r kind path _; do
		[ "$kind" = insmod ] || continue # "builtin X": nothing to load
		name=$(basename "$path")
		# busybox insmod takes plain modules: sid's are .ko.xz
		case "$name" in *.xz) name=${name%.xz} ;; esac
		grep -qx "$name" "$ir/mod/order" && continue
		case "$path" in
		*.xz) xz -dc "$path" >"$ir/mod/$name" || die "cannot decompress $path" ;;
		*) cp "$path" "$ir/mod/$name" ;;
		esac
		echo "$name" >>"$ir/mod/order"
	done
	[ -s "$ir/mod/order" ] || die "no modules for the initramfs"
	cat >"$ir/init" <<'EOF'
#!/bin/busybox sh
# rdmans VM stage 1: reach the host's / over 9p, put a tmpfs overlay on top,
# mount the API filesystems, then switch_root and run the job (stage 2).
# The job share may name another root (its file "root": a host directory, the
# current world's sid root) and host directories to show at the same paths in
# it (its file "binds", one a line), each under a tmpfs overlay of its own.
/bin/busybox --install -s /bin
export PATH=/bin
panic() { echo "rdmans-vm init: $*"; poweroff -f; sleep 5; }
mount -t devtmpfs devtmpfs /dev
mount -t proc proc /proc
mount -t sysfs sysfs /sys
for m in $(cat /mod/order); do
	insmod "/mod/$m" || panic "insmod $m failed"
done
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144,cache=loose hostroot /lower ||
	panic "cannot mount the host root (9p tag hostroot)"
mkdir -p /share
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,cache=none rdmansvm /share ||
	panic "cannot mount the job share (9p tag rdmansvm)"
root=
[ -f /share/root ] && root=$(cat /share/root)
[ -z "$root" ] || [ -d "/lower$root" ] || panic "the guest root $root is not a directory on the host"
mount -t tmpfs -o mode=0755 rw /rw
mkdir -p /rw/upper /rw/work
mount -t overlay -o lowerdir=/lower$root,upperdir=/rw/upper,workdir=/rw/work overlay /newroot ||
	panic "cannot mount the overlay root"
N=/newroot
i=0
[ -f /share/binds ] && while read -r p; do
	[ -n "$p" ] || continue
	i=$((i + 1))
	mkdir -p "/rw/b$i/upper" "/rw/b$i/work" "$N$p" &&
		mount -t overlay -o "lowerdir=/lower$p,upperdir=/rw/b$i/upper,workdir=/rw/b$i/work" overlay "$N$p" ||
		panic "cannot show the host's $p in the guest"
done </share/binds
mount -t proc proc $N/proc
mount -t sysfs sysfs $N/sys
mount -t devtmpfs devtmpfs $N/dev
mkdir -p $N/dev/pts $N/dev/shm
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts $N/dev/pts
mount -t tmpfs -o mode=1777 shm $N/dev/shm
mount -t tmpfs -o mode=0755 run $N/run
mkdir -p $N/run/netns $N/run/lock $N/run/rdmans-vm/share $N/tmp
mount --move /share $N/run/rdmans-vm/share || panic "cannot move the job share into the root"
mount -t debugfs debugfs $N/sys/kernel/debug 2>/dev/null
mount -t tracefs tracefs $N/sys/kernel/tracing 2>/dev/null
mount -t bpf bpf $N/sys/fs/bpf 2>/dev/null
mount -t cgroup2 cgroup2 $N/sys/fs/cgroup 2>/dev/null
# The unpacked module tree lives in the cache dir, which the host's / shows.
kver=$(uname -r)
mods=$(cat /rdmans-vm-modules)
mkdir -p $N/lib/modules/$kver
mount --bind /lower$mods $N/lib/modules/$kver || panic "cannot bind $mods to /lib/modules/$kver"
cp /bin/busybox /stage2 $N/run/rdmans-vm/
exec switch_root $N /run/rdmans-vm/busybox sh /run/rdmans-vm/stage2
EOF
	cat >"$ir/stage2" <<'EOF'
# rdmans VM stage 2 (PID 1 in the real root): run the job the host wrote to the
# share, record its exit status there, power off.
B=/run/rdmans-vm/busybox
S=/run/rdmans-vm/share
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
$B hostname rdmans-vm
$B ip link set lo up 2>/dev/null || ip link set lo up
modprobe -q configfs && mount -t configfs configfs /sys/kernel/config 2>/dev/null
# a root of busybox alone (the arm64 world's) runs the job with its sh
sh=/bin/bash
[ -x $sh ] || sh=/bin/sh
$B env -i PATH="$PATH" HOME=/root TERM=dumb LANG=C.UTF-8 \
	$sh "$S/job.sh" >"$S/out" 2>&1 </dev/null
rc=$?
if [ "$rc" != 0 ]; then
	{
		echo "# --- job exited $rc; guest kernel log (tail) ---"
		$B dmesg | $B tail -n 40 | $B sed 's/^/# /'
	} >>"$S/out" 2>&1
fi
echo "$rc" >"$S/rc.tmp" && $B mv "$S/rc.tmp" "$S/rc"
$B sync
$B poweroff -f
EOF
	chmod 755 "$ir/init"
	readlink -f "$KDIR/root/lib/modules/$KVER" >"$ir/rdmans-vm-modules"
	(cd "$ir" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0) |
		gzip -1 >"$ir.img" || die "cannot build the initramfs"
	mv "$ir.img" "$KDIR/initramfs.img"
	echo "$stamp" >"$KDIR/initramfs.stamp"
	rm -rf "$ir"
	trap - EXIT
fi

# --- the current world's userland: a sid root ---------------------------------
# What a current node runs (containerd 2.x, podman 5, runc, crun, CNI plugins,
# rdma-core, perftest), the libraries of our test build, the CRI client's
# grpc tools, and gcc + linux-headers-$KVER for out-of-tree test modules.
ROOT=/
if [ "$WORLD" = current ]; then
	ROOT=$SID/root
	rstamp=$(sid_root_stamp)
	if [ "$(cat "$ROOT/.rdmans-world" 2>/dev/null)" != "$rstamp" ]; then
		need_root "building the sid root"
		ensure_packages mmdebstrap
		log "building the current world's sid root (mmdebstrap, about 1 GB)"
		rm -rf "$SID/root.new"
		mmdebstrap --quiet --variant=minbase --aptopt='Acquire::Check-Valid-Until "false"' \
			--include="$(echo $sid_pkgs "linux-headers-$KVER" | tr ' ' ',')" sid "$SID/root.new" \
			"deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $(sid_mirror) sid main" >&2 ||
			die "mmdebstrap of the sid root failed"
		echo "$rstamp" >"$SID/root.new/.rdmans-world"
		rm -rf "$ROOT"
		mv "$SID/root.new" "$ROOT"
	fi
fi

# containerd 1.7 (trixie's, the release most clusters still run) beside sid's
# 2.x in the current root, in /opt/containerd-1.7/bin: the CRI tests run both
if [ "$WORLD" = current ] && [ ! -x "$ROOT/opt/containerd-1.7/bin/containerd" ]; then
	need_root "fetching trixie's containerd"
	(
		SID=$CACHE/trixie SID_SUITE=trixie
		mkdir -p "$SID"
		sid_lists
		dl=$(mktemp -d)
		trap 'rm -rf "$dl"' EXIT
		# shellcheck disable=SC2046
		(cd "$dl" && apt-get $(sid_apt_opts) download -q containerd >&2) ||
			die "apt-get download of trixie's containerd failed"
		dpkg-deb -x "$dl"/containerd_*.deb "$dl/x" || die "cannot unpack trixie's containerd"
		mkdir -p "$ROOT/opt/containerd-1.7/bin.new"
		cp "$dl/x/usr/bin/containerd" "$dl/x/usr/bin/containerd-shim-runc-v2" "$dl/x/usr/bin/ctr" \
			"$ROOT/opt/containerd-1.7/bin.new/" || die "trixie's containerd lacks a binary"
		rm -rf "$ROOT/opt/containerd-1.7/bin"
		mv "$ROOT/opt/containerd-1.7/bin.new" "$ROOT/opt/containerd-1.7/bin"
		log "containerd $(ls "$dl"/containerd_*.deb | sed 's/.*containerd_//; s/_amd64.deb//') in $ROOT/opt/containerd-1.7"
	) || exit 1
fi

# --- the arm64 world's root: busybox alone ------------------------------------
# Nothing else: no libc, no loader, no library. Its applets are the host
# busybox's list (the same Debian version); the guest's overlay makes it writable.
if [ "$WORLD" = arm64 ]; then
	ROOT=$KDIR/busybox-root
	# made again, as the initramfs is, whenever this script or the busybox changes
	if [ "$(cat "$ROOT/.rdmans-world" 2>/dev/null)" != "$stamp" ]; then
		rm -rf "$ROOT.new"
		mkdir -p "$ROOT.new/bin" "$ROOT.new/proc" "$ROOT.new/sys" "$ROOT.new/dev" "$ROOT.new/run" \
			"$ROOT.new/tmp" "$ROOT.new/etc" "$ROOT.new/root"
		cp "$busybox" "$ROOT.new/bin/busybox"
		for a in $(/bin/busybox --list); do
			[ "$a" = busybox ] || ln -s busybox "$ROOT.new/bin/$a"
		done
		ln -s bin "$ROOT.new/sbin"
		mkdir "$ROOT.new/var" && ln -s /run "$ROOT.new/var/run"
		echo "root:x:0:0:root:/root:/bin/sh" >"$ROOT.new/etc/passwd"
		echo "$stamp" >"$ROOT.new/.rdmans-world"
		rm -rf "$ROOT"
		mv "$ROOT.new" "$ROOT"
	fi
fi

if [ "${1:-}" = --print ]; then
	echo "KVER=$KVER"
	echo "CACHE_DIR=$KDIR"
	echo "WORLD=$WORLD"
	echo "ROOT=$ROOT"
	if [ "$WORLD" = arm64 ]; then echo "ARCH=aarch64"; else echo "ARCH=x86_64"; fi
fi
