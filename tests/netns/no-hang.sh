#!/bin/bash
# No input hangs a binary: a path a user, a runtime or a
# config names may be a FIFO (opening it for reading waits for a writer that
# never comes), a character device, a directory, a socket or a huge file.
# The CLI, both CNI plugins and the hook each refuse it with a clear error.
# `timeout 20` only guards the run: a hang fails the check, nothing is timed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
B=$RDMANS_BUILD_DIR
R=$B/src/cli/rdmans

tap_skip_unless_root

tmp=$(mktemp -d)
sock_pid=
trap '[ -z "$sock_pid" ] || kill "$sock_pid" 2>/dev/null; rm -rf "$tmp"; rm -f /run/netns/rnh-fifo /run/netns/rnh-file' EXIT
mkfifo "$tmp/fifo"
echo "not a certificate" >"$tmp/cert.pem"
mkdir "$tmp/dir"
truncate -s 2G "$tmp/huge" # sparse: reads as 2 GiB of zeroes
python3 -c 'import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(); time.sleep(3600)' "$tmp/sock" &
sock_pid=$!
vm_poll 60 test -S "$tmp/sock" || vm_fail "no socket at $tmp/sock"
# name:path, and the words the refusal must hold
declare -A KIND=([fifo]="$tmp/fifo" [chardev]=/dev/zero [dir]="$tmp/dir" [socket]="$tmp/sock" [huge]="$tmp/huge")
declare -A TYPE=([fifo]="is a FIFO" [chardev]="is a character device" [dir]="is a directory"
	[socket]="is a socket" [huge]="is larger than")

# guarded NAME WANT_RC NEEDLE CMD...: CMD returns (timeout 20 guards a hang) with
# WANT_RC ("nz": any failure, "any": any status) and NEEDLE in its stdout+stderr.
guarded() {
	local name=$1 want=$2 needle=$3 rc=0 out
	shift 3
	out=$(timeout 20 "$@" 2>&1 <"${STDIN_FROM:-/dev/null}") || rc=$?
	if [ "$rc" = 124 ]; then
		vm_not_ok "$name"
		vm_diag "command: $* hung (killed after 20 s)"
	elif [ "$want" = any ] || { [ "$want" = nz ] && [ "$rc" != 0 ]; } || [ "$rc" = "$want" ]; then
		if vm_expect_contains "$out" "$needle"; then vm_ok "$name"; else vm_not_ok "$name"; fi
	else
		vm_not_ok "$name"
		vm_diag "command: $* (exit $rc, expected $want)"
		vm_diag "$out"
	fi
}

# --- netns paths: --netns, CNI_NETNS ----------------------------------------------------
for k in fifo chardev dir socket huge; do
	p=${KIND[$k]}
	for cmd in gids env doctor; do
		# shellcheck disable=SC2086
		guarded "rdmans $cmd --netns $k: not a netns" 6 "is not a network namespace" "$R" $cmd --netns "$p"
	done
	guarded "rdmans move irdma0 TARGET=$k: not a netns" 6 "is not a network namespace" "$R" move irdma0 "$p"
done

# stray files among the named namespaces: every netns walk (exporter, dev --all-netns) skips them
mkdir -p /run/netns
rm -f /run/netns/rnh-fifo /run/netns/rnh-file
mkfifo /run/netns/rnh-fifo
echo junk >/run/netns/rnh-file
guarded "exporter --once with a FIFO and a file in /run/netns: returns" 0 "rdmans_scrape_namespaces" "$R" exporter --once
guarded "dev --all-netns with a FIFO in /run/netns: returns" any "" "$R" dev --all-netns
guarded "gids --netns rnh-fifo (a name): not a netns" 6 "is not a network namespace" "$R" gids --netns rnh-fifo
rm -f /run/netns/rnh-fifo /run/netns/rnh-file

conf='{"cniVersion":"1.0.0","name":"rnh","type":"rdma-netns","device":"rnh0","requireRdma":false}'
cni() { # cni CMD NETNS: rdma-netns as a runtime runs it
	echo "$conf" | CNI_COMMAND=$1 CNI_CONTAINERID=rnh-c1 CNI_NETNS=$2 CNI_IFNAME=net1 \
		CNI_PATH=/usr/lib/cni CNI_ARGS= "$B/src/cni/rdma-netns"
}
export -f cni
export conf B
state_dir=/var/lib/cni/rdma-netns
for k in fifo chardev dir socket huge; do
	guarded "CNI ADD with CNI_NETNS=$k: error code 4" 1 '"code":4,' bash -c "cni ADD '${KIND[$k]}'"
	guarded "CNI ADD with CNI_NETNS=$k: says it is not a netns" 1 "is not a network namespace" bash -c "cni ADD '${KIND[$k]}'"
	guarded "CNI DEL with CNI_NETNS=$k returns (nothing was added)" 0 "" bash -c "cni DEL '${KIND[$k]}'"
done
vm_check "no state left for rnh-c1" sh -c "! ls $state_dir 2>/dev/null | grep -q rnh-c1"

# --- config and data files users name -------------------------------------------------------
for k in fifo chardev dir socket huge; do
	p=${KIND[$k]}
	t=${TYPE[$k]}
	guarded "rdmans env --config $k: refused" nz "$t" "$R" env --config "$p"
	guarded "rdmans doctor --config $k: refused" nz "$t" "$R" doctor --config "$p"
	guarded "rdmans env --cni-config $k: refused" nz "$t" "$R" env --cni-config "$p"
	guarded "rdmans env --merge $k: refused" nz "$t" "$R" env --format nccl-conf --merge "$p"
	guarded "rdmans ipam ls --config $k: refused" nz "$t" "$R" ipam ls --config "$p"
done

# rdmans system reads /etc/modprobe.d/*.conf: a FIFO there is skipped, not waited on
mkdir -p "$tmp/cfg/etc/modprobe.d"
mkfifo "$tmp/cfg/etc/modprobe.d/stray.conf"
echo "options ib_core netns_mode=0" >"$tmp/cfg/etc/modprobe.d/rdmans-ib_core.conf"
guarded "rdmans system with a FIFO in modprobe.d: returns, reads the real file" nz "exclusive" \
	env RDMANS_CONFIG_ROOT="$tmp/cfg" "$R" system
mkdir -p "$tmp/cfg/proc"
mkfifo "$tmp/cfg/proc/cmdline"
guarded "rdmans system with a FIFO as /proc/cmdline: returns, reads modprobe.d" nz "exclusive" \
	env RDMANS_CONFIG_ROOT="$tmp/cfg" "$R" system

# rdma-netns-ipam: configuration_path, etcd password_file, log_file
ipam() { # ipam CONF_JSON: the IPAM plugin's ADD
	echo "$1" | CNI_COMMAND=ADD CNI_CONTAINERID=rnh-c1 CNI_NETNS=/proc/self/ns/net CNI_IFNAME=net1 \
		CNI_PATH=/usr/lib/cni "$B/src/ipam/rdma-netns-ipam"
}
export -f ipam
for k in fifo chardev dir socket huge; do
	p=${KIND[$k]}
	t=${TYPE[$k]}
	guarded "IPAM configuration_path=$k: refused" nz "$t" bash -c \
		"ipam '{\"cniVersion\":\"1.0.0\",\"name\":\"rnh\",\"ipam\":{\"type\":\"rdma-netns-ipam\",\"configuration_path\":\"$p\"}}'"
	guarded "IPAM etcd password_file=$k: refused" nz "$t" bash -c \
		"ipam '{\"cniVersion\":\"1.0.0\",\"name\":\"rnh\",\"ipam\":{\"type\":\"rdma-netns-ipam\",\"range\":\"10.197.0.0/29\",\"store\":\"etcd\",\"etcd\":{\"endpoints\":[\"http://127.0.0.1:1\"],\"username\":\"u\",\"password_file\":\"$p\"}}}'"
	# a huge log file is appended to, as logs are; a huge CA file is libcurl's to parse
	[ "$k" = huge ] && continue
	for f in ca_file cert_file key_file; do
		cert= # a key needs a certificate: a real file, so the key is what is refused
		[ "$f" != key_file ] || cert="\"cert_file\":\"$tmp/cert.pem\","
		guarded "IPAM etcd $f=$k: refused before libcurl opens it" nz "$f $p $t" bash -c \
			"ipam '{\"cniVersion\":\"1.0.0\",\"name\":\"rnh\",\"ipam\":{\"type\":\"rdma-netns-ipam\",\"range\":\"10.197.0.0/29\",\"store\":\"etcd\",\"etcd\":{\"endpoints\":[\"https://127.0.0.1:1\"],$cert\"$f\":\"$p\"}}}'"
	done
	guarded "IPAM log_file=$k: ADD returns, says the log is not a file" any "$t" bash -c \
		"ipam '{\"cniVersion\":\"1.0.0\",\"name\":\"rnh\",\"ipam\":{\"type\":\"rdma-netns-ipam\",\"range\":\"10.197.0.0/29\",\"dataDir\":\"$tmp/ipam\",\"log_file\":\"$p\"}}'"
done

# --- the hook: the bundle's config.json ------------------------------------------------------
for k in fifo chardev dir socket huge; do
	mkdir -p "$tmp/bundle-$k"
	ln -s "${KIND[$k]}" "$tmp/bundle-$k/config.json"
	guarded "hook: bundle config.json is a $k: refused" 1 "${TYPE[$k]}" sh -c \
		"echo '{\"ociVersion\":\"1.0.2\",\"id\":\"rnh\",\"status\":\"creating\",\"pid\":$$,\"bundle\":\"$tmp/bundle-$k\"}' | '$B/src/hook/rdmans-hook'"
done

# --- stdin that never ends -----------------------------------------------------------------------
guarded "rdma-netns: endless stdin refused by size" 1 "larger than" sh -c \
	"CNI_COMMAND=ADD CNI_CONTAINERID=c CNI_NETNS=/proc/self/ns/net CNI_IFNAME=net1 '$B/src/cni/rdma-netns' </dev/zero"
guarded "rdma-netns-ipam: endless stdin refused by size" 1 "larger than" sh -c \
	"CNI_COMMAND=ADD CNI_CONTAINERID=c CNI_NETNS=/proc/self/ns/net CNI_IFNAME=net1 '$B/src/ipam/rdma-netns-ipam' </dev/zero"
guarded "rdmans-hook: endless stdin refused by size" 1 "larger than 1 MiB" sh -c "'$B/src/hook/rdmans-hook' </dev/zero"

# --- stdin whose writer never closes it (a runtime that keeps the pipe) ---------------------------
# open_stdin DOC NAME WANT_RC NEEDLE CMD...: guarded CMD reads DOC from a stdin that never ends
open_stdin() {
	local doc=$1 holder
	shift
	rm -f "$tmp/in" && mkfifo "$tmp/in"
	{
		printf '%s\n' "$doc"
		exec sleep 1000
	} >"$tmp/in" &
	holder=$!
	STDIN_FROM=$tmp/in guarded "$@"
	kill "$holder" 2>/dev/null
	wait "$holder" 2>/dev/null
}
open_stdin "$conf" "rdma-netns: DEL with stdin left open returns" 0 "" env CNI_COMMAND=DEL \
	CNI_CONTAINERID=rnh-never CNI_IFNAME=net1 CNI_PATH=/usr/lib/cni "$B/src/cni/rdma-netns"
open_stdin '{"cniVersion":"1.0.0","name":"rnh","ipam":{"type":"rdma-netns-ipam","range":"10.197.0.0/29","dataDir":"'"$tmp/ipam"'"}}' \
	"rdma-netns-ipam: DEL with stdin left open returns" 0 "" env CNI_COMMAND=DEL \
	CNI_CONTAINERID=rnh-never CNI_IFNAME=net1 CNI_PATH=/usr/lib/cni "$B/src/ipam/rdma-netns-ipam"
open_stdin '{"ociVersion":"1.0.2","id":"rnh","status":"creating","pid":'$$',"bundle":"/nonexistent"}' \
	"rdmans-hook: state with stdin left open: goes on, names the bundle" 1 \
	"cannot open the bundle's /nonexistent/config.json" "$B/src/hook/rdmans-hook"

vm_done
