#!/bin/bash
# check-nccl-conf.sh NCCL_CONF [--via etc|conf-file] [--ifname IF|auto] [--python PY] [--keep-log FILE]
#
# Does real NCCL take the values of an nccl.conf that `rdmans env --format
# nccl-conf` (or rdmans-hook) wrote? Runs PyTorch's NCCL (one process,
# world_size 1, one all_reduce on GPU 0) with NCCL_DEBUG=INFO and
# NCCL_DEBUG_SUBSYS=ENV,INIT, then looks in its log for each variable of the
# file: "NAME set by environment to VALUE" (NCCL logs values from nccl.conf
# that way: it setenv()s them) or "NAME set to VALUE".
#
# For the GPU machine (device tool; not run in CI): it has a GPU and NCCL but
# no RDMA device, so NCCL logs what it reads at init (NCCL_IB_DISABLE,
# NCCL_IB_HCA, NCCL_SOCKET_IFNAME, ...) and then falls back to sockets;
# values NCCL reads only when it opens an RDMA device (NCCL_IB_GID_INDEX,
# NCCL_IB_TIMEOUT, ...) are reported as "not read in this run", not as failures.
#
#   --via etc        install the file as /etc/nccl.conf (root; the previous one
#                    is put back on exit). Default when run as root: the path
#                    rdmans-hook writes.
#   --via conf-file  point NCCL_CONF_FILE at it (no root needed; same parser).
#   --ifname IF      replace NCCL_SOCKET_IFNAME in the copy used (the pod's
#                    net1 does not exist on the GPU machine; bootstrap needs a
#                    real interface). "auto": the default route's interface.
#   --python PY      default /opt/torch/.venv/bin/python
#   --keep-log FILE  keep NCCL's log there
#
# Exit 0 when every variable NCCL logged has the file's value and at least one
# was logged; 1 when NCCL logged a different value, none at all, or a variable
# of the file is set in the environment (it would win over the file); 2 on usage.
set -u
me=check-nccl-conf.sh
usage() { sed -n '2,3p' "$0" | sed 's/^# //' >&2; exit 2; }

conf=
via=
ifname=
py=/opt/torch/.venv/bin/python
keep=
while [ $# -gt 0 ]; do
	case "$1" in
	--via) via=${2:-}; shift 2 ;;
	--ifname) ifname=${2:-}; shift 2 ;;
	--python) py=${2:-}; shift 2 ;;
	--keep-log) keep=${2:-}; shift 2 ;;
	-h | --help) usage ;;
	-*) echo "$me: unknown option $1" >&2; usage ;;
	*) [ -z "$conf" ] || usage; conf=$1; shift ;;
	esac
done
[ -n "$conf" ] || usage
[ -r "$conf" ] || { echo "$me: cannot read $conf" >&2; exit 2; }
[ -x "$py" ] || { echo "$me: no python at $py (--python)" >&2; exit 2; }
if [ -z "$via" ]; then
	if [ "$(id -u)" = 0 ]; then via=etc; else via="conf-file"; fi
fi
case "$via" in etc | conf-file) ;; *) echo "$me: --via etc or conf-file" >&2; exit 2 ;; esac
[ "$via" != etc ] || [ "$(id -u)" = 0 ] || { echo "$me: --via etc needs root" >&2; exit 2; }

tmp=$(mktemp -d)
backup=
restore() {
	if [ "$via" = etc ]; then
		if [ -n "$backup" ]; then mv -f "$backup" /etc/nccl.conf; else rm -f /etc/nccl.conf; fi
	fi
	rm -rf "$tmp"
}
trap restore EXIT

# The variables as NCCL reads them: '#' lines skipped, NAME=VALUE, first one wins.
awk '!/^#/ && index($0, "=") > 1 { n = substr($0, 1, index($0, "=") - 1); if (!(n in seen)) { seen[n] = 1; print } }' \
	"$conf" >"$tmp/vars"
cp "$conf" "$tmp/nccl.conf"
if [ -n "$ifname" ]; then
	# the default route's interface, from /proc (the GPU machine has no iproute2)
	[ "$ifname" != auto ] || ifname=$(awk '$2 == "00000000" { print $1; exit }' /proc/net/route)
	[ -n "$ifname" ] || { echo "$me: no default route to take an interface from" >&2; exit 2; }
	echo "note: NCCL_SOCKET_IFNAME replaced by $ifname in the copy used (the file says: $(grep -m1 '^NCCL_SOCKET_IFNAME=' "$conf" | cut -d= -f2-))"
	sed -i "s|^NCCL_SOCKET_IFNAME=.*|NCCL_SOCKET_IFNAME=$ifname|" "$tmp/nccl.conf"
	sed -i "s|^NCCL_SOCKET_IFNAME=.*|NCCL_SOCKET_IFNAME=$ifname|" "$tmp/vars"
fi
[ -s "$tmp/vars" ] || { echo "$me: $conf sets no variable" >&2; exit 2; }

# The environment wins over the file: refuse to test with the same names set.
bad=0
while IFS= read -r line; do
	name=${line%%=*}
	if [ -n "${!name+x}" ]; then
		echo "$me: $name is set in the environment (${!name}); unset it, it would win over the file" >&2
		bad=1
	fi
done <"$tmp/vars"
[ "$bad" = 0 ] || exit 1

if [ "$via" = etc ]; then
	if [ -e /etc/nccl.conf ]; then
		backup=$tmp/nccl.conf.orig
		cp -a /etc/nccl.conf "$backup"
	fi
	install -m 0644 "$tmp/nccl.conf" /etc/nccl.conf
	runenv=()
	where=/etc/nccl.conf
else
	runenv=(NCCL_CONF_FILE="$tmp/nccl.conf")
	where="NCCL_CONF_FILE=$tmp/nccl.conf"
fi

port=$((29500 + RANDOM % 1000))
cat >"$tmp/run.py" <<'PY'
import os, sys
import torch
import torch.distributed as dist
print("torch", torch.__version__, "nccl", ".".join(map(str, torch.cuda.nccl.version())), flush=True)
dist.init_process_group("nccl", rank=0, world_size=1)
t = torch.ones(4, device="cuda:0")
dist.all_reduce(t)
torch.cuda.synchronize()
print("ALL_REDUCE_DONE", t.sum().item(), flush=True)
dist.destroy_process_group()
PY
echo "running PyTorch NCCL with $where"
env "${runenv[@]}" MASTER_ADDR=127.0.0.1 MASTER_PORT="$port" NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ENV,INIT \
	timeout 300 "$py" "$tmp/run.py" >"$tmp/log" 2>&1
rc=$?
[ -z "$keep" ] || cp "$tmp/log" "$keep"
echo "python exit status $rc$([ "$rc" = 0 ] || echo ' (init may fail without a usable interface; the values read before that still count)')"
grep -m1 -E "NCCL version|^torch " "$tmp/log"
grep -m1 "ALL_REDUCE_DONE" "$tmp/log"

taken=0 differ=0 unread=0
echo "--- variables of $conf"
while IFS= read -r line; do
	name=${line%%=*}
	value=${line#*=}
	hits=$(grep -F "NCCL INFO" "$tmp/log" | grep -E "(^|[^A-Z_])$name (set by environment to|set to) " || true)
	if [ -z "$hits" ]; then
		printf '%-28s %-20s not read in this run\n' "$name" "$value"
		unread=$((unread + 1))
		continue
	fi
	ok=0
	while IFS= read -r h; do
		got=$(sed -E "s/.*$name (set by environment to|set to) //; s/\.$//" <<<"$h")
		[ "$got" = "$value" ] && ok=1
	done <<<"$hits"
	if [ "$ok" = 1 ]; then
		printf '%-28s %-20s TAKEN\n' "$name" "$value"
		taken=$((taken + 1))
	else
		printf '%-28s %-20s DIFFERENT: %s\n' "$name" "$value" "$(head -1 <<<"$hits")"
		differ=$((differ + 1))
	fi
	grep -F "NCCL INFO" "$tmp/log" | grep -E "(^|[^A-Z_])$name (set by environment to|set to) " | head -2 | sed 's/^/    log: /'
done <"$tmp/vars"
echo "--- $taken taken, $differ different, $unread not read by NCCL in this run"
grep -E "NET/IB|NET/Socket|Using network|Bootstrap" "$tmp/log" | head -5 | sed 's/^/    log: /'
[ "$differ" = 0 ] && [ "$taken" -gt 0 ]
