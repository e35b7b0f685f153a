# shellcheck shell=bash
# Helpers for runc containers with rdmans-hook (tests/netns/hook.sh,
# tests/vm/hook.sh, bench/hook.sh). Source it; needs root, runc, jq and
# busybox-static.

# hl_rootfs DIR: a minimal busybox image in DIR (bin/, proc/, dev/, sys/, tmp/).
hl_rootfs() {
	local dir=$1 a
	mkdir -p "$dir/bin" "$dir/proc" "$dir/dev" "$dir/sys" "$dir/tmp"
	cp /bin/busybox "$dir/bin/busybox"
	for a in sh cat ls grep test echo env readlink sleep true; do
		ln -sf busybox "$dir/bin/$a"
	done
}

# hl_bundle DIR HOOK NETNS ARGS_JSON [JQ_FILTER [JQ ARGS...]]: an OCI bundle in DIR
# whose rootfs is DIR/rootfs, running ARGS_JSON (a JSON array) in the
# network namespace at path NETNS ("" for none: the host's), with HOOK as
# its createRuntime hook (hook env from $HL_HOOK_ENV, a JSON array).
# JQ_FILTER edits config.json further.
hl_bundle() {
	local dir=$1 hook=$2 netns=$3 args=$4 filter=${5:-.}
	shift 5 2>/dev/null || shift $#
	mkdir -p "$dir"
	[ -d "$dir/rootfs" ] || hl_rootfs "$dir/rootfs"
	rm -f "$dir/config.json"
	(cd "$dir" && runc spec) || return 1
	jq --argjson args "$args" --arg hook "$hook" --arg netns "$netns" \
		--argjson henv "${HL_HOOK_ENV:-[]}" "$@" '
		.process.terminal = false | .process.args = $args
		| .process.env = ["PATH=/bin"]
		| .root = {path: "rootfs", readonly: false}
		| .linux.namespaces |= map(select(.type != "network"))
		| if $netns != "" then .linux.namespaces += [{type: "network", path: $netns}] else . end
		| .hooks = {createRuntime: [{path: $hook, args: ["rdmans-hook"], env: $henv}]}
		| .annotations = {}
		| '"$filter" "$dir/config.json" >"$dir/config.json.new" &&
		mv "$dir/config.json.new" "$dir/config.json"
}

# hl_run ROOT DIR ID: runc run (state under ROOT); stdout in $HL_OUT, stderr in $HL_ERR, status returned.
# shellcheck disable=SC2034 # HL_OUT and HL_ERR are for the caller
hl_run() {
	local rc=0
	HL_OUT=$(runc --root "$1" run -b "$2" "$3" 2>"$2.err" </dev/null) || rc=$?
	HL_ERR=$(cat "$2.err")
	runc --root "$1" delete -f "$3" >/dev/null 2>&1
	return "$rc"
}

# hl_fake_gid SYSFS DEV NETDEV INDEX GID TYPE: GID slot INDEX of DEV port 1 (an
# Ethernet port, ACTIVE, bound to NETDEV) holds GID (sysfs form) of TYPE.
hl_fake_gid() {
	local root=$1 dev=$2 ndev=$3 idx=$4 gid=$5 type=$6 p
	p=$root/class/infiniband/$dev/ports/1
	mkdir -p "$p/gids" "$p/gid_attrs/types" "$p/gid_attrs/ndevs" "$root/class/net/$ndev"
	echo "4: ACTIVE" >"$p/state"
	echo "Ethernet" >"$p/link_layer"
	echo "$gid" >"$p/gids/$idx"
	echo "$type" >"$p/gid_attrs/types/$idx"
	echo "$ndev" >"$p/gid_attrs/ndevs/$idx"
}

# hl_fake_roce SYSFS DEV NETDEV IPV4 INDEX: a RoCE device in a fake sysfs tree
# whose RoCE v2 GID INDEX holds IPV4 (::ffff:a.b.c.d), bound to NETDEV.
hl_fake_roce() {
	local root=$1 dev=$2 ndev=$3 ip=$4 idx=$5 p hex
	p=$root/class/infiniband/$dev/ports/1
	mkdir -p "$p/gids" "$p/gid_attrs/types" "$p/gid_attrs/ndevs" "$root/class/net/$ndev"
	echo "4: ACTIVE" >"$p/state"
	echo "Ethernet" >"$p/link_layer"
	echo "fe80:0000:0000:0000:b696:91ff:feec:a458" >"$p/gids/0"
	echo "RoCE v2" >"$p/gid_attrs/types/0"
	echo "$ndev" >"$p/gid_attrs/ndevs/0"
	# shellcheck disable=SC2086 # the octets are meant to split
	hex=$(printf '%02x%02x:%02x%02x' ${ip//./ })
	echo "0000:0000:0000:0000:0000:ffff:$hex" >"$p/gids/$idx"
	echo "RoCE v2" >"$p/gid_attrs/types/$idx"
	echo "$ndev" >"$p/gid_attrs/ndevs/$idx"
}
