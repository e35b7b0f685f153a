#!/bin/bash
# Prepares what the VM test suite needs, and is fast when it is already there:
#  - host packages (qemu, busybox-static, kmod, iproute2, rdma-core, ...,
#    linux-headers-$KVER for out-of-tree test modules), installed only if missing;
#  - Debian's kernel package linux-image-$KVER, fetched with `apt-get download`
#    (never installed on the host) and unpacked with dpkg-deb -x;
#  - a busybox initramfs that mounts the host's / over 9p under a tmpfs overlay.
#
# Layout ($RDMANS_VM_CACHE, default /var/cache/rdmans-vm):
#   $CACHE/$KVER/root/        the unpacked package (depmod'ed)
#   $CACHE/$KVER/vmlinuz      -> root/boot/vmlinuz-$KVER
#   $CACHE/$KVER/modules      -> root/lib/modules/$KVER
#   $CACHE/$KVER/initramfs.img
#
# Prints nothing on stdout except, with --print, "KVER=... CACHE_DIR=..." lines.
# KVER comes from tests/vm/kver.sh ($RDMANS_VM_KVER overrides it).
set -eu -o pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${RDMANS_VM_CACHE:-/var/cache/rdmans-vm}

log() { echo "prepare.sh: $*" >&2; }
die() { echo "prepare.sh: error: $*" >&2; exit 1; }

# Bumped whenever the initramfs contents below change in a way the hash of
# this file would not already catch (kept for clarity).
INITRAMFS_FORMAT=1

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

# --- kernel version ---------------------------------------------------------
if ! KVER=$("$HERE/kver.sh" 2>/dev/null); then
	need_root "apt-get update"
	apt_update_once
	KVER=$("$HERE/kver.sh") || die "cannot determine the kernel version (kver.sh failed)"
fi
case "$KVER" in
*[!A-Za-z0-9._+-]* | "") die "odd kernel version '$KVER'" ;;
esac

# --- host packages ----------------------------------------------------------
ensure_packages qemu-system-x86 busybox-static cpio gzip kmod util-linux \
	coreutils iproute2 rdma-core ibverbs-utils "linux-headers-$KVER"

# --- kernel + modules + initramfs (under a lock: tests may run concurrently) --
mkdir -p "$CACHE" 2>/dev/null || die "cannot create cache dir $CACHE (set RDMANS_VM_CACHE?)"
[ -w "$CACHE" ] || die "cache dir $CACHE is not writable (set RDMANS_VM_CACHE?)"
exec 9>"$CACHE/.lock"
flock 9

KDIR=$CACHE/$KVER
mkdir -p "$KDIR"

if [ ! -e "$KDIR/root/.unpacked" ]; then
	log "fetching linux-image-$KVER"
	dl=$(mktemp -d "$CACHE/.dl.XXXXXX")
	trap 'rm -rf "$dl"' EXIT
	if ! (cd "$dl" && apt-get download -q -o APT::Sandbox::User=root "linux-image-$KVER" >&2); then
		need_root "apt-get update"
		apt_update_once
		(cd "$dl" && apt-get download -q -o APT::Sandbox::User=root "linux-image-$KVER" >&2) ||
			die "apt-get download linux-image-$KVER failed"
	fi
	deb=$(ls "$dl"/linux-image-*.deb 2>/dev/null | head -n 1)
	[ -n "$deb" ] || die "apt-get download produced no .deb"
	log "unpacking $(basename "$deb")"
	mkdir "$dl/root"
	dpkg-deb -x "$deb" "$dl/root" || die "dpkg-deb -x $deb failed"
	[ -f "$dl/root/boot/vmlinuz-$KVER" ] || die "no boot/vmlinuz-$KVER in $deb"
	[ -d "$dl/root/lib/modules/$KVER" ] || die "no lib/modules/$KVER in $deb"
	depmod -b "$dl/root" "$KVER" || die "depmod failed"
	touch "$dl/root/.unpacked"
	rm -rf "$KDIR/root" "$KDIR/initramfs.img"
	mv "$dl/root" "$KDIR/root"
	rm -rf "$dl"
	trap - EXIT
fi
ln -sfn "root/boot/vmlinuz-$KVER" "$KDIR/vmlinuz"
ln -sfn "root/lib/modules/$KVER" "$KDIR/modules"

# The initramfs is rebuilt whenever this script changes.
stamp="$INITRAMFS_FORMAT $KDIR $(sha256sum "$0" | cut -d' ' -f1) $(sha256sum /bin/busybox | cut -d' ' -f1)"
if [ ! -f "$KDIR/initramfs.img" ] || [ "$(cat "$KDIR/initramfs.stamp" 2>/dev/null)" != "$stamp" ]; then
	log "building initramfs for $KVER"
	ir=$(mktemp -d "$CACHE/.initramfs.XXXXXX")
	trap 'rm -rf "$ir"' EXIT
	mkdir -p "$ir/bin" "$ir/mod" "$ir/dev" "$ir/proc" "$ir/sys" "$ir/newroot" \
		"$ir/lower" "$ir/rw"
	cp /bin/busybox "$ir/bin/busybox"
	# Modules needed to reach the 9p root, in load order (dependencies first).
	: >"$ir/mod/order"
	for m in virtio_pci 9pnet_virtio 9p overlay; do
		modprobe -d "$KDIR/root" -S "$KVER" --show-depends "$m" ||
			die "module $m not found for $KVER"
	done | while read -r kind path _; do
		[ "$kind" = insmod ] || continue # "builtin X": nothing to load
		name=$(basename "$path")
		grep -qx "$name" "$ir/mod/order" && continue
		cp "$path" "$ir/mod/$name"
		echo "$name" >>"$ir/mod/order"
	done
	[ -s "$ir/mod/order" ] || die "no modules for the initramfs"
	cat >"$ir/init" <<'EOF'
#!/bin/busybox sh
# rdmans VM stage 1: reach the host's / over 9p, put a tmpfs overlay on top,
# mount the API filesystems, then switch_root and run the job (stage 2).
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
mount -t tmpfs -o mode=0755 rw /rw
mkdir -p /rw/upper /rw/work
mount -t overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work overlay /newroot ||
	panic "cannot mount the overlay root"
N=/newroot
mount -t proc proc $N/proc
mount -t sysfs sysfs $N/sys
mount -t devtmpfs devtmpfs $N/dev
mkdir -p $N/dev/pts $N/dev/shm
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts $N/dev/pts
mount -t tmpfs -o mode=1777 shm $N/dev/shm
mount -t tmpfs -o mode=0755 run $N/run
mkdir -p $N/run/netns $N/run/lock $N/run/rdmans-vm/share
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,cache=none rdmansvm $N/run/rdmans-vm/share ||
	panic "cannot mount the job share (9p tag rdmansvm)"
mount -t debugfs debugfs $N/sys/kernel/debug 2>/dev/null
mount -t tracefs tracefs $N/sys/kernel/tracing 2>/dev/null
mount -t bpf bpf $N/sys/fs/bpf 2>/dev/null
mount -t cgroup2 cgroup2 $N/sys/fs/cgroup 2>/dev/null
# The unpacked module tree lives in the cache dir, which the host's / shows.
kver=$(uname -r)
mods=$(cat /rdmans-vm-modules)
mkdir -p $N/lib/modules/$kver
mount --bind $N$mods $N/lib/modules/$kver || panic "cannot bind $mods to /lib/modules/$kver"
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
$B env -i PATH="$PATH" HOME=/root TERM=dumb LANG=C.UTF-8 \
	/bin/bash "$S/job.sh" >"$S/out" 2>&1 </dev/null
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
	echo "$KDIR/root/lib/modules/$KVER" >"$ir/rdmans-vm-modules"
	(cd "$ir" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0) |
		gzip -1 >"$ir.img" || die "cannot build the initramfs"
	mv "$ir.img" "$KDIR/initramfs.img"
	echo "$stamp" >"$KDIR/initramfs.stamp"
	rm -rf "$ir"
	trap - EXIT
fi

if [ "${1:-}" = --print ]; then
	echo "KVER=$KVER"
	echo "CACHE_DIR=$KDIR"
fi
