#!/bin/bash
# Both CNI plugins over the protocol's edges, one table: they share one
# skeleton (rn_cni_main), so each edge gets the same answer from both. No
# root: every call below is refused or answered before anything changes.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
B=${RDMANS_BUILD_DIR:?}
tmp=$(mktemp -d /tmp/rdmans-cni-protocol.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export RDMA_NETNS_STATE_DIR=$tmp/state RDMANS_CONFIG_ROOT=$tmp/root
mkdir -p "$tmp/state" "$tmp/root"

# call PLUGIN COMMAND STDIN-FILE: exit status in RC, stdout in OUT
call() {
	RC=0
	OUT=$(env -u CNI_COMMAND ${2:+CNI_COMMAND=$2} CNI_CONTAINERID=c1 CNI_IFNAME=net1 \
		CNI_NETNS=/var/run/netns/none CNI_PATH=/nonexistent \
		timeout 20 "$B/src/$1" <"$3" 2>"$tmp/err") || RC=$?
}
# row NAME COMMAND STDIN-FILE CODE MSG [CNIVERSION]: both plugins exit 1 with
# error CODE whose msg has MSG, in CNIVERSION (the latest when not given)
row() {
	local p out
	for p in cni/rdma-netns ipam/rdma-netns-ipam; do
		call "$p" "$2" "$3"
		out=$(jq -r '"\(.code)|\(.cniVersion)|\(.msg)"' <<<"$OUT" 2>/dev/null)
		if [ "$RC" = 1 ] && [ "${out%%|*}" = "$4" ] && [[ "$out" == *"|${6:-1.1.0}|"*"$5"* ]]; then
			vm_ok "${p#*/}: $1"
		else
			vm_not_ok "${p#*/}: $1"
			vm_diag "exit $RC, expected 1 with code $4, cniVersion ${6:-1.1.0}, '$5': $OUT $(cat "$tmp/err")"
		fi
	done
}

printf '{"cniVersion":"1.0.0","name":"n","type":"rdma-netns"}' >"$tmp/ok"
printf '{"cniVersion":"1.0.0", "name": ' >"$tmp/malformed"
printf '["cniVersion"]' >"$tmp/array"
printf '{"cniVersion":"1.0.0","name":"a","name":"b"}' >"$tmp/dupkey"
printf '{"cniVersion":9,"name":"n"}' >"$tmp/vernum"
printf '{"cniVersion":"9.9.9","name":"n"}' >"$tmp/ver999"
printf '{"cniVersion":"0.3.1","name":"n","type":"rdma-netns"}' >"$tmp/v031"
printf '{"name":"n","type":"rdma-netns"}' >"$tmp/nover"
: >"$tmp/empty"
{ printf '{"cniVersion":"1.0.0","name":"n","x":"'; head -c $((4 * 1024 * 1024)) /dev/zero | tr '\0' a; printf '"}'; } >"$tmp/huge"

row "no CNI_COMMAND: code 4" "" "$tmp/ok" 4 "CNI_COMMAND is not set"
row "unknown CNI_COMMAND: code 4" FROB "$tmp/ok" 4 "unknown CNI_COMMAND 'FROB'"
row "empty stdin: code 6" ADD "$tmp/empty" 6 "no network configuration on stdin"
row "malformed JSON: code 6" ADD "$tmp/malformed" 6 "cannot decode the network configuration"
row "a JSON array: code 6" ADD "$tmp/array" 6 "must be a JSON object, not an array"
row "a duplicate key: code 6" ADD "$tmp/dupkey" 6 "duplicate object key"
row "stdin over 4 MiB: code 6" ADD "$tmp/huge" 6 "larger than 4 MiB"
row "cniVersion a number: code 7" ADD "$tmp/vernum" 7 "'cniVersion' must be a version string"
row "unknown cniVersion: code 1" ADD "$tmp/ver999" 1 "CNI version 9.9.9 is not supported"
row "CHECK with cniVersion 0.3.1: code 1, in 0.3.1" CHECK "$tmp/v031" 1 \
	"CHECK needs cniVersion 0.4.0 or later (the configuration says 0.3.1)" 0.3.1

# no cniVersion reads as 0.1.0 in both (libcni's rule): rdma-netns speaks 0.3.0 and later
call cni/rdma-netns ADD "$tmp/nover"
vm_check "rdma-netns: no cniVersion reads as 0.1.0, refused with code 1" vm_expect_eq \
	"1|1|1.1.0|true" "$RC|$(jq -r '"\(.code)|\(.cniVersion)|\(.msg|contains("reads as 0.1.0"))"' <<<"$OUT")"
call ipam/rdma-netns-ipam CHECK "$tmp/nover"
vm_check "rdma-netns-ipam: no cniVersion reads as 0.1.0, so no CHECK; the error in 0.1.0" vm_expect_eq \
	"1|1|0.1.0|true" "$RC|$(jq -r '"\(.code)|\(.cniVersion)|\(.msg|contains("CHECK needs cniVersion 0.4.0"))"' <<<"$OUT")"

for p in cni/rdma-netns:0.3.0 ipam/rdma-netns-ipam:0.1.0; do
	name=${p%:*}
	call "$name" VERSION "$tmp/empty"
	vm_check "${name#*/}: VERSION with an empty stdin answers in 1.1.0, from ${p#*:} on" vm_expect_eq \
		"0|1.1.0|${p#*:}|1.1.0" "$RC|$(jq -r '"\(.cniVersion)|\(.supportedVersions[0])|\(.supportedVersions[-1])"' <<<"$OUT")"
	call "$name" VERSION "$tmp/malformed"
	vm_check "${name#*/}: VERSION does not read stdin" test "$RC|$(jq -r .cniVersion <<<"$OUT")" = "0|1.1.0"
	# a runtime that keeps stdin open and writes nothing cannot hang VERSION
	rm -f "$tmp/fifo"
	mkfifo "$tmp/fifo"
	exec 3<>"$tmp/fifo"
	RC=0
	OUT=$(CNI_COMMAND=VERSION timeout 10 "$B/src/$name" <"$tmp/fifo" 2>/dev/null) || RC=$?
	exec 3>&-
	vm_check "${name#*/}: VERSION with a stdin that never closes answers" test "$RC|$(jq -r .cniVersion <<<"$OUT")" = "0|1.1.0"
	call "$name" "" "$tmp/ok"
	vm_check "${name#*/}: no CNI_COMMAND names the plugin and its versions on stderr" \
		vm_expect_contains "$(cat "$tmp/err")" "${name#*/} "
done
vm_done
