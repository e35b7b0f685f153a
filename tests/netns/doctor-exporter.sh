#!/bin/bash
# rdmans doctor and exporter on the host kernel (no RDMA in it): the no-RDMA
# verdicts, the process checks on real processes (memlock limit without
# CAP_IPC_LOCK, NCCL settings from a real environment and a private
# /etc/nccl.conf), the exporter's HTTP behaviour and its bad input.
# Root, real processes and namespaces. TAP.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
R=${RDMANS:-$RDMANS_BUILD_DIR/src/cli/rdmans}

tap_skip_unless_root

status() { echo "$OUT" | jq -r --arg id "$1" '[.checks[] | select(.id == $id)][0].status'; }
message() { echo "$OUT" | jq -r --arg id "$1" '[.checks[] | select(.id == $id)][0].message'; }
is_comm() { [ "$(cat "/proc/$1/comm" 2>/dev/null)" = "$2" ]; }

tmp=$(mktemp -d)
pids=()
exporter=
cleanup() {
	for p in "${pids[@]}" $exporter; do kill "$p" 2>/dev/null; done
	ip netns del rnd-pod 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
ip netns del rnd-pod 2>/dev/null
ip netns add rnd-pod

# --- doctor without RDMA -----------------------------------------------------------
vm_run_code 21 "doctor: no RDMA netlink is a FAIL (exit 21)" "$R" -j doctor
vm_check "rdma-netlink FAIL" vm_expect_eq FAIL "$(status rdma-netlink)"
vm_check "the fix says modprobe ib_core" vm_expect_contains \
	"$(echo "$OUT" | jq -r '.checks[] | select(.id == "rdma-netlink") | .fix')" "modprobe ib_core"
vm_check "netns-mode SKIP" vm_expect_eq SKIP "$(status netns-mode)"
vm_check "devices FAIL" vm_expect_eq FAIL "$(status devices)"
vm_check "worst is FAIL" vm_expect_eq FAIL "$(echo "$OUT" | jq -r .worst)"
vm_run_code 21 "doctor --netns rnd-pod" "$R" -j doctor --netns rnd-pod
vm_check "--netns: target named" vm_expect_eq "netns 'rnd-pod'" "$(echo "$OUT" | jq -r .target)"
vm_check "--netns: no process, memlock SKIP" vm_expect_eq SKIP "$(status memlock)"
mkdir -p "$tmp/etc/modprobe.d"
echo "options ib_core netns_mode=0" >"$tmp/etc/modprobe.d/ib.conf"
vm_run_code 21 "doctor with exclusive mode configured for the next boot" env RDMANS_CONFIG_ROOT="$tmp" "$R" -j doctor
vm_check "netns-mode-boot PASS, source named" vm_expect_contains "$(message netns-mode-boot)" "exclusive (/etc/modprobe.d/ib.conf)"

# --- bad input ---------------------------------------------------------------------
vm_run_code 2 "doctor --pid junk" "$R" doctor --pid 1x
vm_run_code 2 "doctor --pid and --netns" "$R" doctor --pid 1 --netns rnd-pod
vm_run_code 2 "doctor --netns without a value" "$R" doctor --netns
vm_run_code 4 "doctor --pid of no process" "$R" doctor --pid 999999999
vm_check "says no process" vm_expect_contains "$ERR" "no process with PID 999999999"
vm_run_code 5 "doctor --netns of no netns" "$R" doctor --netns nosuch
vm_run_code 6 "doctor --netns of a path that is no netns" "$R" doctor --netns /etc/hostname
vm_run_code 2 "doctor --set without =" "$R" doctor --set NCCL_IB_HCA

# --- a process without CAP_IPC_LOCK and a low memlock limit, NCCL settings from env and its nccl.conf
ip netns exec rnd-pod prlimit --memlock=65536:65536 setpriv --bounding-set=-ipc_lock \
	env NCCL_IB_HCA=mlx5 NCCL_IB_DISABLE=0 \
	unshare -m sh -c 'mount -t tmpfs none /etc && echo NCCL_SOCKET_IFNAME=eth9 >/etc/nccl.conf && exec sleep 1000' &
pids+=($!)
p=${pids[-1]}
vm_poll 60 is_comm "$p" sleep
vm_run_code 21 "doctor --pid of a limited process" "$R" -j doctor --pid "$p"
vm_check "memlock FAIL: 64 KiB, no CAP_IPC_LOCK" vm_expect_contains "$(message memlock)" "RLIMIT_MEMLOCK 64 KiB (hard 64 KiB) and no CAP_IPC_LOCK"
vm_check "the target is its netns" vm_expect_eq "the netns of PID $p" "$(echo "$OUT" | jq -r .target)"
vm_check "nccl-hca FAIL: mlx5 selects nothing here" vm_expect_contains "$(message nccl-hca)" "NCCL_IB_HCA=mlx5 (environment) selects no RDMA port"
vm_check "nccl-socket-ifname FAIL: eth9 from its /etc/nccl.conf" vm_expect_contains "$(message nccl-socket-ifname)" "NCCL_SOCKET_IFNAME=eth9 (/etc/nccl.conf) matches no netdev"
vm_check "nccl-net PASS (NCCL_IB_DISABLE=0)" vm_expect_eq PASS "$(status nccl-net)"
ip netns exec rnd-pod env NCCL_IB_DISABLE=1 sleep 1000 &
pids+=($!)
vm_poll 60 is_comm "${pids[-1]}" sleep
vm_run_code 21 "doctor --pid with NCCL_IB_DISABLE=1" "$R" -j doctor --pid "${pids[-1]}"
vm_check "nccl-net FAIL" vm_expect_contains "$(message nccl-net)" "NCCL_IB_DISABLE=1 (environment): NCCL will not use RDMA"
vm_check "memlock PASS for root (CAP_IPC_LOCK)" vm_expect_eq PASS "$(status memlock)"
vm_run_code 21 "doctor text output" "$R" doctor --pid "${pids[-1]}"
vm_check "text: a FAIL line with its fix" sh -c 'echo "$1" | grep -q "^FAIL  nccl-net" && echo "$1" | grep -q "fix: remove NCCL_IB_DISABLE"' sh "$OUT"
vm_check "text: the summary line" sh -c 'echo "$1" | tail -1 | grep -Eq "^[0-9]+ PASS, [0-9]+ WARN, [0-9]+ FAIL, [0-9]+ SKIP$"' sh "$OUT"

# --- exporter ----------------------------------------------------------------------
vm_run_code 0 "exporter --once without RDMA" "$R" exporter --once
vm_check "rdmans_up 0" sh -c 'echo "$1" | grep -qx "rdmans_up 0"' sh "$OUT"
if command -v promtool >/dev/null; then
	vm_check "promtool check metrics accepts it" sh -c 'echo "$1" | promtool check metrics' sh "$OUT"
fi
vm_run_code 2 "--listen without a port" "$R" exporter --listen 127.0.0.1
vm_run_code 2 "--listen with port 65536" "$R" exporter --listen :65536
vm_run_code 2 "--listen with a bare IPv6 address" "$R" exporter --listen ::1:9877
vm_run_code 2 "--listen with an unknown host" "$R" exporter --listen no-such-host.invalid:9877
vm_run_code 2 "exporter with an unknown option" "$R" exporter --bogus
"$R" exporter --listen 127.0.0.1:0 2>"$tmp/exp.log" &
exporter=$!
vm_poll 60 grep -q "port" "$tmp/exp.log"
port=$(sed -n 's/.*(port \([0-9]*\)[;)].*/\1/p' "$tmp/exp.log")
vm_check "exporter on an ephemeral port ($port)" test -n "$port"
url=http://127.0.0.1:$port
vm_check "GET /metrics is 200 with the 0.0.4 content type" sh -c "curl -sfi '$url/metrics' | grep -qi '^content-type: text/plain; version=0.0.4'"
vm_check "GET / is 200" curl -sf -o /dev/null "$url/"
vm_check "GET /other is 404" sh -c "[ \"\$(curl -s -o /dev/null -w '%{http_code}' '$url/other')\" = 404 ]"
vm_check "POST /metrics is 405" sh -c "[ \"\$(curl -s -o /dev/null -w '%{http_code}' -X POST '$url/metrics')\" = 405 ]"
# A body used to get the connection closed with no status at all
code_of() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
vm_check "POST /metrics with a body is 405" vm_expect_eq 405 "$(code_of --data hello "$url/metrics")"
vm_check "PUT /metrics with a chunked body is 405" vm_expect_eq 405 \
	"$(code_of -X PUT -H 'Transfer-Encoding: chunked' --data-binary hello "$url/metrics")"
vm_check "... saying Allow: GET, HEAD" sh -c "curl -si --data hello '$url/metrics' | grep -qi '^allow: GET, HEAD'"
vm_check "GET /metrics%00/x is 404, not the metrics" vm_expect_eq 404 "$(code_of --path-as-is "$url/metrics%00/x")"
# a raw NUL byte, which curl cannot send: libmicrohttpd 0.9 hands the path cut at it
raw_code() {
	python3 -c 'import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=60)
s.sendall(sys.argv[2].encode("latin1").decode("unicode_escape").encode("latin1"))
print(s.makefile("rb").readline().split()[1].decode())' "$port" "$1"
}
vm_check "GET /metrics<NUL>/x is 400, not the metrics" vm_expect_eq 400 \
	"$(raw_code 'GET /metrics\0/x HTTP/1.1\r\nHost: x\r\n\r\n')"
vm_check "method GET<NUL>X is 400, not read as GET" vm_expect_eq 400 \
	"$(raw_code 'GET\0X /metrics HTTP/1.1\r\nHost: x\r\n\r\n')"
vm_check "a NUL in the query is 400 too" vm_expect_eq 400 "$(raw_code 'GET /metrics?a\0b HTTP/1.1\r\nHost: x\r\n\r\n')"
vm_check "POST with a NUL in the path and a body is 400" vm_expect_eq 400 \
	"$(raw_code 'POST /metrics\0/x HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello')"
vm_check "the same raw sender, without the NUL, gets the metrics (200)" vm_expect_eq 200 \
	"$(raw_code 'GET /metrics?a=b HTTP/1.1\r\nHost: x\r\n\r\n')"
vm_check "... and with spaces before the target too" vm_expect_eq 200 \
	"$(raw_code 'GET   /metrics HTTP/1.1\r\nHost: x\r\n\r\n')"
vm_check "100 scrapes over one connection (keep-alive)" sh -c "curl -sfv -o /dev/null '$url/metrics?[1-100]' 2>&1 | grep -c 'Re-using existing connection' | grep -qx 99"
fds0=$(ls /proc/$exporter/fd | wc -l)
curl -sf -o /dev/null "$url/metrics?[1-500]"
vm_check "no fd growth over 500 scrapes" vm_expect_eq "$fds0" "$(ls /proc/$exporter/fd | wc -l)"

# 1000 slow clients: each holds a request whose headers never
# end, a line a second, so no idle timeout ends it. A scrape from the same
# address must still be answered; the guards are generous bounds on a hang,
# not timings.
ulimit -n 4096
python3 "$here/slowloris.py" 127.0.0.1 "$port" 1000 "$tmp/slow.ready" >"$tmp/slow.out" 2>&1 &
slow=$!
pids+=("$slow")
vm_poll 120 grep -q "connected 1000" "$tmp/slow.ready"
vm_check "1000 slow clients connected" grep -q "connected 1000" "$tmp/slow.ready"
holds_1000() { [ "$(ls "/proc/$exporter/fd" | wc -l)" -ge 1000 ]; }
vm_poll 60 holds_1000
vm_check "the exporter holds them all (1000+ fds: none refused)" holds_1000
vm_check "a scrape is still answered, with the metrics" sh -c "curl -sf --max-time 120 '$url/metrics' | grep -qx 'rdmans_up 0'"
vm_check "... and so is GET / (another connection)" sh -c "curl -sf --max-time 120 '$url/' | grep -q 'rdmans exporter'"
kill -TERM "$slow"
wait "$slow"
vm_check "the slow clients were still connected through the scrapes" vm_expect_eq "open 1000 closed 0" "$(cat "$tmp/slow.out")"
vm_poll 60 sh -c "[ \$(ls /proc/$exporter/fd | wc -l) -le $((fds0 + 5)) ]"
vm_check "their connections are closed and freed once they go" sh -c "[ \$(ls /proc/$exporter/fd | wc -l) -le $((fds0 + 5)) ]"
vm_run_code 1 "a second exporter on the same port fails" "$R" exporter --listen "127.0.0.1:$port"
vm_check "it says it cannot listen" vm_expect_contains "$ERR" "cannot listen on 127.0.0.1:$port"
kill -TERM "$exporter"
rc=0
wait "$exporter" || rc=$?
vm_check "exporter exits 0 on SIGTERM" vm_expect_eq 0 "$rc"
exporter=
vm_done
