# shellcheck shell=bash
# Helpers for the node and image suites: a host root with no libc and no
# library at all (busybox-static only), and commands run inside it as the
# kubelet or a runtime would run them on such a host. Sources tests/lib/tap.sh
# unless its helpers are there already.
#
#   node_root DIR        makes DIR: /bin/busybox (static) and /bin/sh, empty
#                        /proc /sys /dev /tmp /run/netns /etc, /var/run -> /run
#   in_root DIR [VAR=VALUE...] -- CMD [ARGS...]
#                        runs CMD chrooted into DIR with only VAR=VALUE (and
#                        PATH=/bin) in its environment, in a private mount
#                        namespace with proc, sysfs and the host's /run/netns
#                        mounted; stdin, stdout and the exit status are CMD's
#   node_elf_interp FILE the program interpreter FILE asks for (none: static)

# shellcheck source=../lib/tap.sh
declare -F vm_ok >/dev/null || . "${BASH_SOURCE[0]%/*}/../lib/tap.sh"

node_root() {
	local r=$1
	mkdir -p "$r/bin" "$r/proc" "$r/sys" "$r/dev" "$r/tmp" "$r/run/netns" "$r/etc" "$r/var"
	ln -s /run "$r/var/run"
	[ -z "$(node_elf_interp /bin/busybox)" ] || vm_fail "/bin/busybox is not static (apt-get install busybox-static)"
	cp /bin/busybox "$r/bin/busybox"
	ln -s busybox "$r/bin/sh"
}

in_root() {
	local r=$1
	local -a vars=(PATH=/bin)
	shift
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		vars+=("$1")
		shift
	done
	shift
	mkdir -p /run/netns
	/usr/bin/env -i "${vars[@]}" /usr/bin/unshare -m --propagation private /bin/sh -c '
		r=$1
		shift
		/usr/bin/mount -t proc proc "$r/proc" && /usr/bin/mount -t sysfs sysfs "$r/sys" &&
			/usr/bin/mount --rbind /run/netns "$r/run/netns" || exit 125
		exec /usr/sbin/chroot "$r" "$@"' sh "$r" "$@"
}

node_elf_interp() {
	LC_ALL=C readelf -l "$1" 2>/dev/null | sed -n 's/.*Requesting program interpreter: \(.*\)]$/\1/p'
}

# node_release_install: the release build with -Dnode_bundle=true, as deploy/Containerfile
# builds it ($RDMANS_BUILD_DIR/node-release), installed into $image; $tree is its node tree.
# Needs src, tmp and image set.
node_release_install() {
	build=$RDMANS_BUILD_DIR/node-release
	if [ ! -f "$build/build.ninja" ]; then
		meson setup "$build" "$src" --prefix=/usr --buildtype=release -Dtests=false \
			-Dnode_bundle=true -Dcnibindir=/usr/lib/rdmans/cni >"$tmp/build.log" 2>&1 ||
			{ vm_diag "$(tail -20 "$tmp/build.log")"; vm_fail "meson setup of the node build failed"; }
	fi
	{ ninja -C "$build" && DESTDIR=$image meson install -C "$build" --no-rebuild; } >"$tmp/build.log" 2>&1 ||
		{ vm_diag "$(tail -20 "$tmp/build.log")"; vm_fail "release build or install with -Dnode_bundle=true failed"; }
	tree=$image/usr/lib/rdmans/node
}
