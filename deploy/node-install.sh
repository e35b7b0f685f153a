#!/bin/sh
# Run by the DaemonSet's init container with the host's paths mounted under
# /host: installs the node tree (the CLI, the CNI plugins and the OCI hook,
# with their own loader and libraries: they need nothing from the host), the
# CNI plugins into the CNI bin directory, the OCI hook definition and a CDI
# spec, and, when RDMANS_PERSIST_EXCLUSIVE=true, the modprobe.d option that
# makes ib_core start in exclusive netns mode at the next boot, and, where
# Node Feature Discovery's features.d is mounted, the node's rdmans features.
#
#   RDMANS_HOST_ROOT     the host's / (default /host)
#   RDMANS_CNI_BIN_DIR   the host's CNI bin directory (default /opt/cni/bin)
#   RDMANS_NODE_TREE     the node tree in the image (default: this machine's,
#                        /usr/lib/rdmans/node-$(uname -m) where the image has one
#                        (a cross build's, node-aarch64), else /usr/lib/rdmans/node;
#                        deploy/node-bundle.sh made it; its "prefix" file says
#                        where on the host it must go, /opt/rdmans by default,
#                        its "machine" file the `uname -m` it runs on)
#   RDMANS_CLI           the image's own rdmans (default /usr/sbin/rdmans)
#   RDMANS_HOOK_JSON     the hooks.d JSON to adapt (default from /usr/share)
#   RDMANS_PERSIST_EXCLUSIVE=true  write modprobe.d (refused while a shared-mode
#                        consumer runs); with RDMANS_REBUILD_INITRAMFS=true also
#                        rebuild the initramfs where ib_core is in it, in the
#                        host's / mounted whole at RDMANS_HOST_FULL_ROOT
#
# PREFIX/installed.list records, for deploy/node-uninstall.sh, what this and
# earlier installs wrote outside the tree, as the host names it: "file SHA256
# PATH" per file (the uninstaller removes it only while it still has that
# content) and "dir - PATH" per directory they created (removed when empty).
set -eu
host=${RDMANS_HOST_ROOT:-/host}
cni_bin=${RDMANS_CNI_BIN_DIR:-/opt/cni/bin}
machine=$(uname -m)
tree=${RDMANS_NODE_TREE:-/usr/lib/rdmans/node}
if [ -z "${RDMANS_NODE_TREE:-}" ] && [ -d "/usr/lib/rdmans/node-$machine" ]; then
	tree=/usr/lib/rdmans/node-$machine
fi
rdmans=${RDMANS_CLI:-/usr/sbin/rdmans}
hook_json=${RDMANS_HOOK_JSON:-/usr/share/containers/oci/hooks.d/rdmans-hook.json}

[ -f "$tree/prefix" ] || { echo "node-install: no node tree at $tree (built with meson -Dnode_bundle=true?)" >&2 && exit 1; }
# a tree for another machine would install binaries no CNI call can run
if [ -f "$tree/machine" ] && [ "$(cat "$tree/machine")" != "$machine" ]; then
	echo "node-install: the node tree $tree is for $(cat "$tree/machine"), this node is $machine" >&2 && exit 1
fi
prefix=$(cat "$tree/prefix")
libdir=$(cd "$tree" && ls -d lib-*)
hook=$prefix/bin/rdmans-hook
list=$host$prefix/installed.list

# record KIND PATH: PATH (the host's name for it) in installed.list, in place of
# an earlier line for it; the list is replaced whole, never seen half written
record() {
	if [ "$1" = file ]; then sum=$(sha256sum <"$host$2" | cut -d' ' -f1); else sum=-; fi
	{
		[ ! -f "$list" ] || while read -r k s p; do [ "$p" = "$2" ] || echo "$k $s $p"; done <"$list"
		echo "$1 $sum $2"
	} >"$list.rdmans-new"
	mv -f "$list.rdmans-new" "$list"
}
# mkdirs DIR: mkdir -p DIR, recording each directory it creates
mkdirs() {
	d=$1 new=''
	while [ ! -d "$d" ]; do
		new="$d
$new" d=$(dirname "$d")
	done
	mkdir -p "$1"
	printf '%s' "$new" | while IFS= read -r d; do record dir "${d#"$host"}"; done
}

install_file() { # install_file SRC DEST MODE: atomic, so a running kubelet never sees half a file
	mkdirs "$(dirname "$2")"
	cp "$1" "$2.rdmans-new"
	chmod "$3" "$2.rdmans-new"
	mv -f "$2.rdmans-new" "$2"
	echo "installed $2"
	case $2 in "$host$prefix"/*) ;; *) record file "${2#"$host"}" ;; esac
}

mkdirs "$host$prefix"
# The libraries first, in a directory of their own that no binary uses yet.
if [ ! -d "$host$prefix/$libdir" ]; then
	rm -rf "$host$prefix/$libdir.rdmans-new"
	cp -R "$tree/$libdir" "$host$prefix/$libdir.rdmans-new"
	mv "$host$prefix/$libdir.rdmans-new" "$host$prefix/$libdir"
	echo "installed $host$prefix/$libdir"
fi
for b in "$tree"/bin/*; do
	install_file "$b" "$host$prefix/bin/${b##*/}" 0755
done
install_file "$tree/bin/rdma-netns" "$host$cni_bin/rdma-netns" 0755
install_file "$tree/bin/rdma-netns-ipam" "$host$cni_bin/rdma-netns-ipam" 0755
# Libraries of earlier versions: no binary names them any more.
for d in "$host$prefix"/lib-*; do
	[ "$d" = "$host$prefix/$libdir" ] || [ ! -d "$d" ] || { rm -rf "$d" && echo "removed $d"; }
done

# The hook runs on the host, from the path its JSON names.
for d in /etc/containers/oci/hooks.d /usr/share/containers/oci/hooks.d; do
	if [ -d "$host$d" ]; then
		sed 's|"path": *"[^"]*"|"path": "'"$hook"'"|' "$hook_json" >"$host$d/rdmans-hook.json.rdmans-new"
		mv -f "$host$d/rdmans-hook.json.rdmans-new" "$host$d/rdmans-hook.json"
		echo "installed $host$d/rdmans-hook.json"
		record file "$d/rdmans-hook.json"
	fi
done
# containerd has no hooks.d: CDI carries the device nodes, env and the hook.
# It lists the device nodes, so it needs them: without (ib_uverbs not loaded
# yet, say) the rest is installed and the next start of this pod writes it.
mkdirs "$host/etc/cdi"
if "$rdmans" cdi generate --hook "$hook" --output "$host/etc/cdi/rdmans.json.rdmans-new"; then
	mv -f "$host/etc/cdi/rdmans.json.rdmans-new" "$host/etc/cdi/rdmans.json"
	echo "installed $host/etc/cdi/rdmans.json"
	record file /etc/cdi/rdmans.json
else
	echo "node-install: no CDI spec written (see above); containerd pods get no CDI edits until it is" >&2
fi
# rebuild_initramfs: where ib_core is in the running kernel's initramfs, the
# modprobe.d line takes effect only in a rebuilt one. In the host's own root
# (RDMANS_HOST_FULL_ROOT: the host's / mounted whole), with its own tools:
# initramfs-tools (Debian, Ubuntu) or dracut (RHEL, Fedora, SUSE).
rebuild_initramfs() {
	full=${RDMANS_HOST_FULL_ROOT:-}
	kver=$(uname -r)
	if [ -z "$full" ] || [ ! -d "$full/boot" ]; then
		echo "node-install: RDMANS_REBUILD_INITRAMFS=true needs the host's / mounted whole, named by RDMANS_HOST_FULL_ROOT (deploy/components/persist-exclusive does both)" >&2
		return 1
	fi
	if chroot "$full" sh -c 'command -v lsinitramfs' >/dev/null 2>&1; then
		img=/boot/initrd.img-$kver lister=lsinitramfs rebuild="update-initramfs -u -k $kver"
	elif chroot "$full" sh -c 'command -v lsinitrd' >/dev/null 2>&1; then
		img=/boot/initramfs-$kver.img lister=lsinitrd rebuild="dracut -f $img $kver"
	else
		echo "node-install: the host has neither initramfs-tools (lsinitramfs) nor dracut (lsinitrd): if ib_core loads from its initramfs, rebuild it by hand" >&2
		return 1
	fi
	if ! chroot "$full" "$lister" "$img" | grep -q '/ib_core\.ko'; then
		echo "ib_core is not in $img: no initramfs rebuild needed"
		return 0
	fi
	echo "ib_core is in $img: $rebuild (in the host's root)"
	# shellcheck disable=SC2086
	chroot "$full" $rebuild || {
		echo "node-install: '$rebuild' failed on the host (above)" >&2
		return 1
	}
}
if [ "${RDMANS_PERSIST_EXCLUSIVE:-false}" = true ]; then
	mkdirs "$host/etc/modprobe.d"
	# refused while a shared-mode consumer runs (k8s-rdma-shared-dev-plugin): this
	# pod's init fails, saying so, until it is gone
	if ! RDMANS_CONFIG_ROOT=$host "$rdmans" system set netns exclusive --persist; then
		echo "node-install: exclusive mode not persisted (above); retried at the pod's next start" >&2
		exit 1
	fi
	record file /etc/modprobe.d/rdmans-ib_core.conf
	if [ "${RDMANS_REBUILD_INITRAMFS:-false}" = true ]; then
		rebuild_initramfs || exit 1
	fi
fi
# What the node is ready for (exclusive now, at the next boot, its device
# count), for Node Feature Discovery's local source, when its features.d is
# there: written at each start, so it follows reboots. NFD skips names that
# start with '.', so the temp file is never read half written.
nfd=/etc/kubernetes/node-feature-discovery/features.d
if [ -d "$host$nfd" ]; then
	if RDMANS_CONFIG_ROOT=$host "$rdmans" system nfd >"$host$nfd/.rdmans.rdmans-new" &&
		mv -f "$host$nfd/.rdmans.rdmans-new" "$host$nfd/rdmans"; then
		echo "installed $host$nfd/rdmans"
		record file "$nfd/rdmans"
	else
		rm -f "$host$nfd/.rdmans.rdmans-new"
		echo "node-install: no Node Feature Discovery file written (see above)" >&2
	fi
fi
"$rdmans" system || true
