#!/bin/sh
# Run by deploy/uninstall.yaml's init container, with the host's paths mounted
# under /host as deploy/daemonset.yaml mounts them, once the rdmans DaemonSet
# is deleted: removes what deploy/node-install.sh and deploy/node-kubeconfig.sh
# wrote on the host, and nothing else.
#   PREFIX (/opt/rdmans)          the node tree: bin/, lib-ID/, installed.list
#   the CNI bin directory         rdma-netns, rdma-netns-ipam
#   both hooks.d directories      rdmans-hook.json
#   /etc/cdi/rdmans.json
#   /etc/modprobe.d/rdmans-ib_core.conf  (rdmans system set netns ... --persist)
#   /etc/cni/net.d/rdma-netns-ipam.d/    ca.crt, token and rdma-netns-ipam.kubeconfig
#                                 when that kubeconfig is node-kubeconfig.sh's;
#                                 rdma-netns-ipam.conf only when it is exactly
#                                 what node-kubeconfig.sh writes
#   the directories the install created, once empty; temp files a killed
#   install left (*.rdmans-new)
# A file outside the tree goes only while it is what node-install.sh wrote: the
# checksum PREFIX/installed.list recorded for it (for a file the list does not
# name: CNI plugins byte for byte the tree's, a JSON naming the tree's hook, a
# modprobe.d file rdmans wrote). One changed since, or someone else's, is
# left, and said. One line "removed PATH" per file or directory removed; run
# again, it removes nothing and succeeds.
#
# Refused (exit 1, nothing removed) while rdma-netns holds an attachment: a
# state file in /var/lib/cni/rdma-netns, a pod whose DEL has not come; each is
# named. Removing the plugins then would leave its netdev and RDMA devices in
# the pod for good: the runtime's DEL would find no plugin to call.
#
#   RDMANS_HOST_ROOT        the host's / (default /host; empty: run on the host itself)
#   RDMANS_CNI_BIN_DIR      the host's CNI bin directory (default /opt/cni/bin;
#                           installed.list names the one the install used)
#   RDMANS_NODE_TREE        the node tree in the image, whose "prefix" file names
#                           PREFIX (default /usr/lib/rdmans/node; none: /opt/rdmans)
#   RDMANS_KUBECONFIG_DIR   node-kubeconfig.sh's directory, as the host names it
#                           (default /etc/cni/net.d/rdma-netns-ipam.d)
#   RDMANS_UNINSTALL_FORCE  true: go on while pods hold attachments (their
#                           netdevs stay in them; their state and IPAM records
#                           stay too, so a reinstall's DEL brings them home)
#   RDMANS_UNINSTALL_IPAM   true: remove rdma-netns-ipam's local store
#                           (/var/lib/cni/rdma-netns-ipam) and rdma-netns's state
#                           (/var/lib/cni/rdma-netns) too; kept otherwise, so a
#                           reinstall finds the addresses still held
set -u
me=node-uninstall
host=${RDMANS_HOST_ROOT-/host}
cni_bin=${RDMANS_CNI_BIN_DIR:-/opt/cni/bin}
tree=${RDMANS_NODE_TREE:-/usr/lib/rdmans/node}
kcdir=${RDMANS_KUBECONFIG_DIR:-/etc/cni/net.d/rdma-netns-ipam.d}
force=${RDMANS_UNINSTALL_FORCE:-false}
ipam=${RDMANS_UNINSTALL_IPAM:-false}
state=/var/lib/cni/rdma-netns
ipam_store=/var/lib/cni/rdma-netns-ipam
modprobe_conf=/etc/modprobe.d/rdmans-ib_core.conf

die() {
	echo "$me: error: $*" >&2
	exit 1
}
say() { echo "$me: $*" >&2; }

prefix=/opt/rdmans
[ ! -f "$tree/prefix" ] || prefix=$(cat "$tree/prefix")
case $prefix in /?*) ;; *) die "the node tree's prefix '$prefix' is not an absolute path below /" ;; esac
case $kcdir in /?*) ;; *) die "RDMANS_KUBECONFIG_DIR '$kcdir' is not an absolute path" ;; esac
case $force in true | false) ;; *) die "RDMANS_UNINSTALL_FORCE is '$force': say true or false" ;; esac
case $ipam in true | false) ;; *) die "RDMANS_UNINSTALL_IPAM is '$ipam': say true or false" ;; esac
[ -z "$host" ] || [ -d "$host" ] || die "no host root at $host: mount the host's paths there (RDMANS_HOST_ROOT)"
list=$host$prefix/installed.list

# --- pods that still hold an attachment ----------------------------------------------------
# attachments: one line per rdma-netns state file (the layout: include/rdmans/cni_state.h:
# "NETWORK:CONTAINERID:IFNAME", key=value lines; dot files and locks/ are not state)
v() { sed -n "s/^$1=//p" "$f" | head -n 1; }
attachments() {
	[ -d "$host$state" ] || return 0
	for f in "$host$state"/*; do
		[ -f "$f" ] && [ ! -L "$f" ] || continue
		[ "${f##*/}" != locks ] || continue
		pod="$(v pod_namespace)/$(v pod_name)"
		[ "$pod" != / ] || pod="(no pod named)"
		echo "  $pod: network $(v network), container $(v container_id), interface $(v ifname), $(v phase) ($f)"
	done
}
held=$(attachments)
if [ -n "$held" ]; then
	n=$(printf '%s\n' "$held" | wc -l | tr -d ' ')
	if [ "$force" != true ]; then
		echo "$me: refused: $n attachment(s) of rdma-netns still held, their pods' DEL not come yet:" >&2
		printf '%s\n' "$held" >&2
		echo "$me: delete those pods (or drain the node) first; or set RDMANS_UNINSTALL_FORCE=true: their netdevs and RDMA devices then stay in the pods until a reinstall's DEL brings them home" >&2
		exit 1
	fi
	say "RDMANS_UNINSTALL_FORCE=true: going on although $n attachment(s) are held (their state and IPAM records are kept):"
	printf '%s\n' "$held" >&2
fi

# --- removal -------------------------------------------------------------------------------
failed=false
# rm_path PATH: removes a file or symlink, with its line (one that cannot go: said, and
# the exit status says so); an empty directory too (one that cannot go: status 1, unsaid)
rm_path() {
	if [ -d "$1" ] && [ ! -L "$1" ]; then
		rmdir "$1" 2>/dev/null || return 1
	elif [ -e "$1" ] || [ -L "$1" ]; then
		if ! rm -f "$1"; then
			say "could not remove $1"
			failed=true
			return 1
		fi
	else
		return 0
	fi
	echo "removed $1"
}
# rm_tree PATH: PATH and everything below it, deepest first, one line each
rm_tree() {
	[ -e "$1" ] || [ -L "$1" ] || return 0
	while IFS= read -r p; do
		if [ -d "$p" ] && [ ! -L "$p" ]; then
			rm_path "$p" || {
				say "could not remove $p: $(ls -A "$p" | head -n 5 | tr '\n' ' ')left in it"
				failed=true
			}
		elif [ -n "$p" ]; then
			rm_path "$p"
		fi
	done <<-EOF
		$(find "$1" -depth)
	EOF
}
# rm_dir DIR: an empty DIR goes; otherwise it stays, said
rm_dir() {
	[ -d "$1" ] && [ ! -L "$1" ] || return 0
	rm_path "$1" && return 0
	if [ -n "$(ls -A "$1" 2>/dev/null)" ]; then
		say "kept $1: not empty ($(ls -A "$1" | head -n 5 | tr '\n' ' ' | sed 's/ $//'))"
	else
		say "kept $1: empty, but cannot be removed here (a mount point: the hostPath volume); remove it on the host if you like"
	fi
}
sha() { sha256sum <"$1" | cut -d' ' -f1; }
# listed PATH: the checksum installed.list recorded for the file PATH (none: empty)
listed() {
	[ -f "$list" ] || return 0
	while read -r k s p; do
		if [ "$k" = file ] && [ "$p" = "$1" ]; then
			echo "$s"
			return 0
		fi
	done <"$list"
}
# ours PATH WHY: whether the host's file PATH is what the install wrote. WHY is a
# command that says so for a file installed.list does not name.
ours() {
	s=$(listed "$1")
	if [ -n "$s" ]; then
		[ "$(sha "$host$1")" = "$s" ] && return 0
		say "kept $host$1: changed since node-install.sh wrote it (not the checksum $list records)"
		return 1
	fi
	"$2" "$host$1" && return 0
	say "kept $host$1: not what node-install.sh writes (installed.list does not name it)"
	return 1
}
# remove_ours PATH WHY: PATH (the host's name) goes when it is ours
remove_ours() {
	[ -f "$host$1" ] || return 0
	ours "$1" "$2" && rm_path "$host$1"
}
same_as_tree() { cmp -s "$1" "$host$prefix/bin/${1##*/}"; }
names_our_hook() { grep -q "\"path\": *\"$prefix/bin/rdmans-hook\"" "$1"; }
rdmans_wrote() { head -n 1 "$1" | grep -q "^# Written by 'rdmans system set netns"; }

# the CNI plugins: where installed.list says they went, and RDMANS_CNI_BIN_DIR
bins=$cni_bin
if [ -f "$list" ]; then
	while read -r k s p; do
		case $k:$p in file:*/rdma-netns | file:*/rdma-netns-ipam) bins="$bins
${p%/*}" ;; esac
	done <"$list"
fi
bins=$(printf '%s\n' "$bins" | sort -u)
while IFS= read -r d; do
	for b in rdma-netns rdma-netns-ipam; do
		remove_ours "$d/$b" same_as_tree
		rm_path "$host$d/$b.rdmans-new"
	done
done <<-EOF
	$bins
EOF

# the OCI hook's JSON and the CDI spec
for d in /etc/containers/oci/hooks.d /usr/share/containers/oci/hooks.d; do
	remove_ours "$d/rdmans-hook.json" names_our_hook
	rm_path "$host$d/rdmans-hook.json.rdmans-new"
done
remove_ours /etc/cdi/rdmans.json names_our_hook
rm_path "$host/etc/cdi/rdmans.json.rdmans-new"

# the node's features for Node Feature Discovery (NFD drops the labels with the file)
nfd_wrote() { head -n 1 "$1" | grep -q "^# written by rdmans system nfd"; }
remove_ours /etc/kubernetes/node-feature-discovery/features.d/rdmans nfd_wrote
rm_path "$host/etc/kubernetes/node-feature-discovery/features.d/.rdmans.rdmans-new"

# the boot default of ib_core's netns mode
if [ -f "$host$modprobe_conf" ] && ours "$modprobe_conf" rdmans_wrote && rm_path "$host$modprobe_conf"; then
	say "ib_core stays in its current netns mode until the node reboots (or ib_core is reloaded); from then on the kernel's default (shared) applies, unless another modprobe.d file or the kernel command line says otherwise ('rdmans system' shows both)"
fi

# node-kubeconfig.sh's files: the credentials go with the kubeconfig that is
# ours (its first line says so), the flat file only when it is exactly ours
kc=$host$kcdir
if [ -d "$kc" ]; then
	kcours=false
	if [ -f "$kc/rdma-netns-ipam.kubeconfig" ]; then
		if head -n 1 "$kc/rdma-netns-ipam.kubeconfig" | grep -q "^# written by rdmans' node-kubeconfig.sh"; then
			kcours=true
		else
			say "kept $kc/rdma-netns-ipam.kubeconfig, ca.crt and token: that kubeconfig is not node-kubeconfig.sh's"
		fi
	fi
	if [ -f "$kc/rdma-netns-ipam.conf" ]; then
		# node-kubeconfig.sh's flat_conf, the one text that is ours: change both
		flat=$(printf '{"store": "kubernetes", "kubernetes": {"kubeconfig": "%s/rdma-netns-ipam.kubeconfig"}}' "$kcdir")
		if [ "$(cat "$kc/rdma-netns-ipam.conf")" = "$flat" ] && [ "$(wc -l <"$kc/rdma-netns-ipam.conf" | tr -d ' ')" = 1 ]; then
			rm_path "$kc/rdma-netns-ipam.conf"
		else
			say "kept $kc/rdma-netns-ipam.conf: not what node-kubeconfig.sh writes (an operator's own)"
		fi
	fi
	if $kcours; then
		rm_path "$kc/ca.crt"
		rm_path "$kc/token"
		rm_path "$kc/rdma-netns-ipam.kubeconfig"
	fi
	for f in "$kc"/.ca.crt.* "$kc"/.token.* "$kc"/.rdma-netns-ipam.kubeconfig.* "$kc"/.rdma-netns-ipam.conf.*; do
		rm_path "$f"
	done
	rm_dir "$kc"
fi

# rdma-netns's state and rdma-netns-ipam's local store, when asked and no pod holds any
if [ "$ipam" = true ]; then
	if [ -n "$held" ] || [ -n "$(attachments)" ]; then
		say "kept $host$state and $host$ipam_store: attachments are held (above, or made since)"
	else
		rm_tree "$host$state"
		rm_tree "$host$ipam_store"
		for d in "$host$state" "$host$ipam_store"; do rm_dir "$d"; done
	fi
elif [ -d "$host$ipam_store" ] || [ -d "$host$state" ]; then
	say "kept $host$ipam_store (IPAM records) and $host$state: RDMANS_UNINSTALL_IPAM=true removes them"
fi

# the node tree, installed.list last; then the directories the install created
dirs=''
[ ! -f "$list" ] || dirs=$(sed -n 's/^dir - //p' "$list" | sort -r)
if [ -d "$host$prefix" ]; then
	[ ! -d "$host$prefix/bin" ] || rm_tree "$host$prefix/bin"
	for d in "$host$prefix"/lib-*; do
		rm_tree "$d"
	done
	rm_path "$host$prefix/installed.list.rdmans-new"
	rm_path "$list"
	rm_dir "$host$prefix"
fi
while IFS= read -r d; do
	[ -z "$d" ] || [ "$d" = "$prefix" ] || [ ! -d "$host$d" ] || [ -n "$(ls -A "$host$d")" ] || rm_path "$host$d"
done <<-EOF
	$dirs
EOF
! $failed
