#!/bin/bash
# rdma-netns-ipam as a CNI plugin, with the local store: results in every
# CNI version, errors with spec codes, bad input changing nothing, 100
# parallel ADDs, whereabouts' flat-file search, the log, and rdmans ipam.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/ipam-lib.sh"

STORE=$IPAM_TMP/store
LOG=$IPAM_TMP/ipam.log
NET=rdma-dual
conf() { # conf CNIVERSION IPAM-KEYS: a config of network $NET
	printf '{"cniVersion":"%s","name":"'"$NET"'","type":"rdma-netns","ipam":{"type":"rdma-netns-ipam","dataDir":"%s","node_name":"node-1","log_file":"%s","log_level":"verbose",%s}}' \
		"$1" "$STORE" "$LOG" "$2"
}
code_of() { printf '%s' "$IPAM_OUT" | jq -r .code; }
# fails NAME CODE CMD CID: the plugin exits 1 with error JSON of that code
fails() {
	local name=$1 code=$2 rc=0
	shift 2
	ipam_run "$@" || rc=$?
	if [ "$rc" = 1 ] && [ "$(code_of)" = "$code" ] && [ -n "$(printf '%s' "$IPAM_OUT" | jq -r .msg)" ]; then
		vm_ok "$name"
	else
		vm_not_ok "$name"
		vm_diag "exit $rc, expected 1 with code $code: $IPAM_OUT"
	fi
}
# succeeds NAME CMD CID...: exit 0, output kept in $IPAM_OUT
succeeds() {
	local name=$1 rc=0
	shift
	ipam_run "$@" || rc=$?
	if [ "$rc" = 0 ]; then vm_ok "$name"; else
		vm_not_ok "$name"
		vm_diag "exit $rc: $IPAM_OUT"
	fi
}

DUAL='"ipRanges":[{"range":"10.64.0.0/24"},{"range":"fd00:64::/64"}],"gateway":"10.64.0.1","routes":[{"dst":"0.0.0.0/0","gw":"10.64.0.1"},{"dst":"fd00::/8"}],"dns":{"nameservers":["10.64.0.53"]}'

CONF=$(conf 1.1.0 "$DUAL")
out=$(printf '%s' "$CONF" | CNI_COMMAND=VERSION "$IPAM")
vm_check "VERSION lists 0.1.0 to 1.1.0" vm_expect_eq \
	'{"cniVersion":"1.1.0","supportedVersions":["0.1.0","0.2.0","0.3.0","0.3.1","0.4.0","1.0.0","1.1.0"]}' "$out"

succeeds "ADD (1.1.0, dual-stack)" ADD c-new net1 ns/new
vm_check "1.1.0 result: ips without version, gateway on the IPv4 one, routes, dns" vm_expect_eq \
	'1.1.0|2|24 64|10.64.0.1 null|null|2|10.64.0.53' \
	"$(printf '%s' "$IPAM_OUT" | jq -r '[.cniVersion, (.ips|length), ([.ips[].address|split("/")[1]]|join(" ")), ([.ips[].gateway]|map(tostring)|join(" ")), (.ips[0].version|tostring), (.routes|length), .dns.nameservers[0]]|join("|")')"
v4=$(printf '%s' "$IPAM_OUT" | jq -r '.ips[0].address')
for v in 0.3.1 0.4.0; do
	CONF=$(conf $v "$DUAL")
	succeeds "ADD ($v)" ADD "c-$v" net1 "ns/p-$v"
	vm_check "$v result carries ips[].version" vm_expect_eq "$v|4 6" \
		"$(printf '%s' "$IPAM_OUT" | jq -r '"\(.cniVersion)|\([.ips[].version]|join(" "))"')"
done
CONF=$(conf 0.2.0 "$DUAL")
succeeds "ADD (0.2.0)" ADD c-020 net1 ns/p-020
vm_check "0.2.0 result: ip4 and ip6, routes split by family" vm_expect_eq \
	'0.2.0|24|10.64.0.1|0.0.0.0/0|64|fd00::/8|10.64.0.53' \
	"$(printf '%s' "$IPAM_OUT" | jq -r '[.cniVersion, (.ip4.ip|split("/")[1]), .ip4.gateway, .ip4.routes[0].dst, (.ip6.ip|split("/")[1]), .ip6.routes[0].dst, .dns.nameservers[0]]|join("|")')"
CONF=$(conf 0.2.0 '"ipRanges":[{"range":"10.64.1.0/24"},{"range":"10.64.2.0/24"}]')
fails "0.2.0 cannot carry two IPv4 addresses: code 1" 1 ADD c-020b net1

CONF=$(conf 1.1.0 "$DUAL")
succeeds "a repeated ADD succeeds" ADD c-new net1 ns/new
vm_check "... with the same address" vm_expect_eq "$v4" "$(printf '%s' "$IPAM_OUT" | jq -r '.ips[0].address')"
prev=$(printf '%s' "$IPAM_OUT")
CONF=$(printf '%s' "$(conf 1.1.0 "$DUAL")" | jq -c --argjson p "$prev" '. + {prevResult: $p}')
succeeds "CHECK with a matching prevResult" CHECK c-new net1 ns/new
CONF=$(printf '%s' "$CONF" | jq -c '.prevResult.ips[0].address = "10.64.0.250/24"')
fails "CHECK with a prevResult missing the address: code 102" 102 CHECK c-new net1 ns/new
CONF=$(conf 0.3.1 "$DUAL")
fails "CHECK before 0.4.0: code 1" 1 CHECK c-new net1 ns/new
CONF=$(conf 1.1.0 "$DUAL")
fails "CHECK of an unknown container: code 102" 102 CHECK c-ghost net1 ns/ghost

# bad input: a clear error with its spec code, and nothing changes
before=$(find "$STORE" -type f ! -path '*/.locks/*' | sort | xargs cat | md5sum)
CONF=$(conf 9.9.9 "$DUAL")
fails "unknown cniVersion: code 1" 1 ADD c-x net1
CONF='{"cniVersion":"1.1.0", nope'
fails "config that is not JSON: code 6" 6 ADD c-x net1
CONF=$(conf 1.1.0 '"range":"10.64.0.0/33"')
fails "a bad range: code 7" 7 ADD c-x net1
vm_check "... naming the key" vm_expect_contains "$(printf '%s' "$IPAM_OUT" | jq -r .details)" "ipam.range: range '10.64.0.0/33' is not a CIDR"
CONF=$(conf 1.1.0 "$DUAL")
rc=0
IPAM_OUT=$(printf '%s' "$CONF" | CNI_COMMAND=ADD CNI_IFNAME=net1 "$IPAM" 2>/dev/null) || rc=$?
vm_check "no CNI_CONTAINERID: code 4" vm_expect_eq "1 4" "$rc $(code_of)"
rc=0
IPAM_OUT=$(printf '%s' "$CONF" | CNI_COMMAND=FROB CNI_CONTAINERID=x CNI_IFNAME=net1 "$IPAM" 2>/dev/null) || rc=$?
vm_check "an unknown CNI_COMMAND: code 4" vm_expect_eq "1 4" "$rc $(code_of)"
fails "a container ID with a slash: code 4" 4 ADD "../../etc" net1
fails "an ifname too long: code 4" 4 ADD c-x averyveryverylongifname
# one rule in both plugins (rdma-netns forwards STATUS and GC with its own configuration):
# CHECK needs 0.4.0, STATUS and GC are taken from any version the plugin speaks
CONF=$(conf 1.0.0 "$DUAL")
succeeds "STATUS with cniVersion 1.0.0 is answered" STATUS -
CONF=$(conf 1.1.0 "$DUAL")
fails "GC without the valid attachments: code 7" 7 GC -
CONF=$(conf 1.1.0 '"range":"10.64.0.0/24"' | jq -c '.ipam.dataDir = "/proc/version/sub"')
fails "an unusable dataDir: code 5" 5 ADD c-x net1
vm_check "... saying which directory" vm_expect_contains "$(printf '%s' "$IPAM_OUT" | jq -r .details)" "/proc/version/sub"
after=$(find "$STORE" -type f ! -path '*/.locks/*' | sort | xargs cat | md5sum)
vm_check "bad input changed no record" vm_expect_eq "$before" "$after"

# DEL works whatever became of the ranges
CONF=$(conf 1.1.0 '"range":"broken"')
succeeds "DEL with a broken range still releases" DEL c-020 net1 ns/p-020
vm_check "... the record" vm_expect_eq 0 "$(grep -l '^container_id=c-020$' "$STORE"/_default/addr/* 2>/dev/null | wc -l)"

# 100 parallel ADDs on the local store, in another network
NET=rdma-local
CONF=$(conf 1.1.0 '"range":"10.65.0.0/24"')
ipam_parallel_adds 100 par-
vm_check "100 parallel local ADDs all succeed" vm_expect_eq 0 "$PAR_FAILS"
vm_check "... with 100 distinct addresses" vm_expect_eq 100 "$(printf '%s\n' "$PAR_ADDRS" | sort -u | grep -c .)"

# GC: what is not in the valid list goes (this node, this network only)
valid=$(for i in $(seq 1 50); do printf '{"containerID":"par%s","ifname":"net1"},' "$i"; done)
CONF=$(conf 1.1.0 '"range":"10.65.0.0/24"' | jq -c --argjson v "[${valid%,}]" '. + {"cni.dev/valid-attachments": $v}')
succeeds "GC" GC -
vm_check "GC kept the 50 valid attachments of rdma-local" vm_expect_eq 50 \
	"$("$RDMANS" -j ipam ls --data-dir "$STORE" --network rdma-local | jq '[.[] | select(.range == "10.65.0.0/24")] | length')"
vm_check "GC left network rdma-dual's records alone (3 attachments, 6 addresses)" vm_expect_eq 6 \
	"$("$RDMANS" -j ipam ls --data-dir "$STORE" --network rdma-dual | jq length)"
CONF=$(conf 1.1.0 '"range":"10.65.0.0/24"')
succeeds "STATUS" STATUS -

# whereabouts' flat file: the inline config names no range and no dataDir
mkdir -p "$IPAM_TMP/root/etc/cni/net.d/whereabouts.d"
printf '{"range":"10.66.0.0/28","dataDir":"%s","log_file":"%s"}' "$STORE" "$LOG" >"$IPAM_TMP/root/etc/cni/net.d/whereabouts.d/whereabouts.conf"
CONF='{"cniVersion":"1.0.0","name":"flat","ipam":{"type":"rdma-netns-ipam"}}'
rc=0
IPAM_OUT=$(printf '%s' "$CONF" | RDMANS_CONFIG_ROOT=$IPAM_TMP/root CNI_COMMAND=ADD CNI_CONTAINERID=flat1 CNI_IFNAME=net1 "$IPAM" 2>/dev/null) || rc=$?
vm_check "the range comes from /etc/cni/net.d/whereabouts.d/whereabouts.conf" vm_expect_eq "0 10.66.0." \
	"$rc $(ip_of | cut -d. -f1-3)."
CONF='{"cniVersion":"1.0.0","name":"flat","ipam":{"type":"rdma-netns-ipam","configuration_path":"'"$IPAM_TMP"'/none.conf"}}'
fails "a configuration_path that does not exist: code 7" 7 ADD flat2 net1

vm_check "the log has one line per ADD with the address" bash -c "grep -q 'allocated $v4 .*(pod ns/new, node node-1, store local)' '$LOG'"
vm_check "the log has the errors" bash -c "grep -q 'address allocation failed (code 5)' '$LOG'"

# rdmans ipam
ls_out=$("$RDMANS" ipam ls --data-dir "$STORE" --pod ns/new)
vm_check "rdmans ipam ls shows the pod's two addresses" vm_expect_eq 3 "$(printf '%s\n' "$ls_out" | wc -l)"
vm_check "rdmans ipam show ADDRESS" vm_expect_contains "$("$RDMANS" ipam show "${v4%/*}" --data-dir "$STORE")" "pod:          ns/new"
rc=0
err=$("$RDMANS" ipam show 10.99.99.99 --data-dir "$STORE" 2>&1) || rc=$?
vm_check "rdmans ipam show of a free address: exit 1, one line" vm_expect_eq "1|rdmans: no record holds 10.99.99.99 (see 'rdmans ipam ls')" "$rc|$err"
rc=0
"$RDMANS" ipam release --data-dir "$STORE" 2>/dev/null || rc=$?
vm_check "rdmans ipam release without a target: usage, exit 2" vm_expect_eq 2 "$rc"
rc=0
"$RDMANS" ipam ls --data-dir "$STORE" --etcd http://x:1 2>/dev/null || rc=$?
vm_check "rdmans ipam ls with two stores: exit 2" vm_expect_eq 2 "$rc"
vm_check "rdmans ipam release --pod releases both addresses" vm_expect_eq "${v4%/*} 2" \
	"$("$RDMANS" -j ipam release --pod ns/new --data-dir "$STORE" | jq -r '"\(.released[0]) \(.released | length)"')"
NET=rdma-dual
CONF=$(conf 1.1.0 "$DUAL")
fails "CHECK after the operator released it: code 102" 102 CHECK c-new net1 ns/new
vm_check "rdmans ipam gc on a clean store removes nothing" vm_expect_eq \
	'{"dry_run":false,"temp_files":0,"orphans":0,"empty_attachments":0,"rebuilt_attachments":0,"damaged_records":0}' "$("$RDMANS" -j ipam gc --data-dir "$STORE")"

vm_done
