#!/bin/bash
# rdma-netns-ipam refuses, with a clear error and no change, what would
# otherwise go wrong quietly: absurd ranges, an ipam.log_file it
# cannot write to, and symlinks inside its data directory, which could send
# its records anywhere.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/ipam-lib.sh"

STORE=$IPAM_TMP/store
conf() { # conf IPAM-KEYS
	printf '{"cniVersion":"1.0.0","name":"refuse","type":"rdma-netns","ipam":{"type":"rdma-netns-ipam","dataDir":"%s",%s}}' \
		"$STORE" "$1"
}
# refused NAME CODE NEEDLE: the last ipam_run failed with CODE and NEEDLE in msg or details
refused() {
	local name=$1 code=$2 needle=$3 got text
	got=$(printf '%s' "$IPAM_OUT" | jq -r '.code // empty' 2>/dev/null)
	text=$(printf '%s' "$IPAM_OUT" | jq -r '"\(.msg) \(.details // "")"' 2>/dev/null)
	if [ "$IPAM_RC" = 1 ] && [ "$got" = "$code" ] && [[ $text == *"$needle"* ]]; then
		vm_ok "$name"
	else
		vm_not_ok "$name"
		vm_diag "exit $IPAM_RC, expected 1, code $code and '$needle': $IPAM_OUT"
	fi
}
run() { IPAM_RC=0; ipam_run "$@" || IPAM_RC=$?; }
no_records() { [ -z "$(find "$STORE" -type f ! -path '*/.locks/*' 2>/dev/null)" ]; }

# ---- absurd ranges ----
for r in "fd00::/0" "0.0.0.0/0" "10.0.0.0/4" "224.0.0.0/24" "ff02::/64" "127.0.0.0/8"; do
	CONF=$(conf '"range":"'"$r"'"')
	run ADD c1 net1 ns/a
	refused "range $r is refused (code 7)" 7 "range '$r'"
done
vm_check "no record was written for them" no_records

# ---- ipam.log_file it cannot write to ----
mkfifo "$IPAM_TMP/fifo"
mkdir "$IPAM_TMP/adir"
ln -s "$IPAM_TMP/real.log" "$IPAM_TMP/link.log"
for lf in "$IPAM_TMP/no/such/dir/ipam.log" "$IPAM_TMP/fifo" "$IPAM_TMP/adir" "$IPAM_TMP/link.log"; do
	CONF=$(conf '"range":"10.68.0.0/24","log_file":"'"$lf"'"')
	IPAM_RC=0
	# a FIFO without a reader must not block: timeout only ends a hang that is itself the failure
	IPAM_OUT=$(printf '%s' "$CONF" | CNI_COMMAND=ADD CNI_CONTAINERID=c1 CNI_IFNAME=net1 \
		CNI_NETNS=/var/run/netns/none CNI_PATH=/nonexistent \
		CNI_ARGS="K8S_POD_NAMESPACE=ns;K8S_POD_NAME=a" timeout 20 "$IPAM" 2>>"$IPAM_TMP/stderr") ||
		IPAM_RC=$?
	refused "log_file ${lf#"$IPAM_TMP"/}: ADD fails with a clear error" 7 "ipam.log_file $lf"
done
vm_check "the symlink's target was not created" test ! -e "$IPAM_TMP/real.log"
vm_check "no address was taken meanwhile" no_records
CONF=$(conf '"range":"10.68.0.0/24","log_level":"verbose","log_file":"'"$IPAM_TMP"'/ok.log"')
run ADD c1 net1 ns/a
vm_check "a writable log_file works" test "$IPAM_RC" = 0 -a -s "$IPAM_TMP/ok.log"
run DEL c1 net1 ns/a
vm_check "DEL" test "$IPAM_RC" = 0

# ---- symlinks inside the data directory ----
# Each subdirectory the store uses, made a symlink to a directory elsewhere:
# ADD refuses (code 5); neither ADD nor DEL writes anything there.
for sub in .tmp .locks _default _default/addr _default/attachments; do
	rm -rf "$STORE" "$IPAM_TMP/elsewhere"
	mkdir -p "$STORE/$(dirname "$sub")" "$IPAM_TMP/elsewhere"
	ln -s "$IPAM_TMP/elsewhere" "$STORE/$sub"
	CONF=$(conf '"range":"10.68.0.0/24"')
	run ADD c1 net1 ns/a
	refused "data dir with $sub a symlink: ADD refuses" 5 "symbolic link; refused"
	run DEL c1 net1 ns/a
	vm_check "data dir with $sub a symlink: nothing written through it" \
		test -z "$(ls -A "$IPAM_TMP/elsewhere")"
	rm "$STORE/$sub"
	run ADD c1 net1 ns/a
	vm_check "without the symlink ADD works" test "$IPAM_RC" = 0
	run DEL c1 net1 ns/a
done
vm_done
