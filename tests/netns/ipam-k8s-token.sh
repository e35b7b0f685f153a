#!/bin/bash
# deploy/node-kubeconfig.sh (the DaemonSet's ipam-kubeconfig container) and the
# kubernetes store's tokenFile, against the real API server of k8s-lib.sh, which
# authenticates bearer tokens by TokenReview (rbac-authorizer.py's tokens file):
# from a fake ServiceAccount the script writes the host's CA, token (0600) and a
# kubeconfig that names them and holds no token; an ADD through it succeeds;
# once the token rotates and the old one is revoked, the host's stale token is
# refused (401, code 101, no record), then the script copies the new one and
# the same kubeconfig works again with no restart; it refuses a missing token,
# CA or server; with RDMANS_IPAM_FLAT_CONF=true it writes the flat file that
# gives NADs naming no store this one, never over an operator's file; its loop
# copies a rotated token and ends on SIGTERM.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/ipam-lib.sh"
. "$here/k8s-lib.sh"
SCRIPT=$K8S_TOP/deploy/node-kubeconfig.sh
[ -r "$SCRIPT" ] || vm_fail "no $SCRIPT"

k8s_start
SA_USER=system:serviceaccount:rdmans-system:rdmans
SA_GROUPS=system:serviceaccounts,system:serviceaccounts:rdmans-system,system:authenticated
TOKEN_A=token-a-$(openssl rand -hex 16)
TOKEN_B=token-b-$(openssl rand -hex 16)
TOKEN_C=token-c-$(openssl rand -hex 16)
k8s_tokens "$TOKEN_A $SA_USER $SA_GROUPS"

# The ServiceAccount as kubelet mounts it: the token without a newline, the cluster's CA.
SA=$IPAM_TMP/serviceaccount
mkdir -p "$SA"
cp "$K8S_PKI/ca.crt" "$SA/ca.crt"
# sa_token TOKEN: kubelet's rotation, atomic like its own
sa_token() {
	printf '%s' "$1" >"$SA/.token.new" && mv -f "$SA/.token.new" "$SA/token"
}
sa_token "$TOKEN_A"

# The container sees the host's / at ROOT; the host names the directory D. Here
# the host is this machine: D is a link to ROOT/D, so both names reach the same
# files, and the plugin (run on the host) finds only what the kubeconfig names.
ROOT=$IPAM_TMP/hostroot
D=$IPAM_TMP/etc-cni-net.d/rdma-netns-ipam.d
OUTD=$ROOT$D
mkdir -p "$ROOT${D%/*}"
ln -s "$ROOT${D%/*}" "${D%/*}"
KC=$D/rdma-netns-ipam.kubeconfig

# script [ARGS...]: node-kubeconfig.sh under dash (POSIX sh, as in the image), as the
# DaemonSet runs it; SVC_HOST (none: unset) and SVC_ROOT change what it is given
script_cmd() {
	local svc=(KUBERNETES_SERVICE_HOST="${SVC_HOST:-127.0.0.1}")
	[ "${SVC_HOST-}" != none ] || svc=(-u KUBERNETES_SERVICE_HOST)
	SCRIPT_CMD=(env "${svc[@]}" KUBERNETES_SERVICE_PORT="$K8S_PORT" RDMANS_SA_DIR="$SA"
		RDMANS_HOST_ROOT="${SVC_ROOT:-$ROOT}" RDMANS_KUBECONFIG_DIR="$D" dash "$SCRIPT")
}
script() {
	script_cmd
	"${SCRIPT_CMD[@]}" "$@"
}
# kc_json FILE: a kubeconfig as JSON, read by a YAML reader other than ours (python3-yaml)
kc_json() {
	/usr/bin/python3 -c 'import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))' "$1"
}

vm_run_code 0 "node-kubeconfig.sh --once writes the host's files" script --once
vm_check "... saying so, one line each" vm_expect_eq \
	"node-kubeconfig: wrote $OUTD/ca.crt
node-kubeconfig: wrote $OUTD/token
node-kubeconfig: wrote $OUTD/rdma-netns-ipam.kubeconfig" "$OUT" "stdout"
vm_check "the token is 0600, the CA and the kubeconfig 0644" vm_expect_eq \
	"token 600 ca.crt 644 rdma-netns-ipam.kubeconfig 644" \
	"$(for f in token ca.crt rdma-netns-ipam.kubeconfig; do printf '%s %s ' "$f" "$(stat -c %a "$OUTD/$f")"; done | sed 's/ $//')" "modes"
vm_check "the directory holds those three and no temp file" vm_expect_eq \
	"ca.crt rdma-netns-ipam.kubeconfig token" "$(find "$OUTD" -mindepth 1 -printf '%f\n' | sort | tr '\n' ' ' | sed 's/ $//')" "files"
vm_check "the host's token is the ServiceAccount's" vm_expect_eq "$TOKEN_A" "$(cat "$OUTD/token")" "token"
vm_check "the host's CA is the ServiceAccount's" cmp "$SA/ca.crt" "$OUTD/ca.crt"
vm_check "the kubeconfig names the server, and the CA and token by their host paths" vm_expect_eq \
	"[\"https://127.0.0.1:$K8S_PORT\",\"$D/ca.crt\",\"$D/token\"]" \
	"$(kc_json "$KC" | jq -c '[.clusters[0].cluster.server, .clusters[0].cluster["certificate-authority"], .users[0].user.tokenFile]')" \
	"server, certificate-authority, tokenFile"
vm_check "... and its user has a tokenFile and nothing else (no token)" vm_expect_eq '["tokenFile"]' \
	"$(kc_json "$KC" | jq -c '.users[0].user | keys')" "user's keys"
vm_check "... and no token text" vm_expect_eq 0 "$(grep -c -e "$TOKEN_A" -e 'token-' "$KC")" "lines with a token"
cp "$KC" "$IPAM_TMP/kubeconfig.before"
KC_INODE=$(stat -c %i "$KC")

# the plugin, on the host, through the written kubeconfig: bearer token A
CONF='{"cniVersion":"1.1.0","name":"rdma-k8s","type":"rdma-netns","ipam":{"type":"rdma-netns-ipam",
 "range":"10.73.0.0/24","datastore":"kubernetes","node_name":"node-a",
 "kubernetes":{"kubeconfig":"'"$KC"'","timeout_ms":60000,"deadline_ms":120000}}}'
rc=0
ipam_run ADD first net1 ns/first || rc=$?
vm_check "ADD through the written kubeconfig (token A) succeeds" vm_expect_eq 0 "$rc" "exit status"
[ "$rc" = 0 ] || vm_diag "$IPAM_OUT"
first=$(ip_of)
vm_check "... and its RdmaAddress is there" vm_expect_eq \
	"{\"address\":\"$first\",\"pod\":\"ns/first\",\"node\":\"node-a\",\"attachment\":\"ns/first/net1\"}" \
	"$(k8s_objects)" "objects"

# kubelet rotates the token to B and A is revoked; the host still holds A
sa_token "$TOKEN_B"
k8s_tokens "$TOKEN_B $SA_USER $SA_GROUPS"
rc=0
ipam_run ADD second net1 ns/second || rc=$?
vm_check "ADD with the revoked token still on the host fails with code 101 (denied)" vm_expect_eq "1 101" \
	"$rc $(printf '%s' "$IPAM_OUT" | jq -r .code)" "exit status and code"
vm_check "... saying the server does not accept the credentials (401), naming the kubeconfig" \
	vm_expect_contains "$(printf '%s' "$IPAM_OUT" | jq -r .details)" \
	"the Kubernetes API server at https://127.0.0.1:$K8S_PORT does not accept our credentials (401 Unauthorized): check the token, token file or client certificate of kubeconfig $KC"
vm_check "... and creates no record" vm_expect_eq 1 "$(k8s_objects | grep -c .)" "objects"

vm_run_code 0 "node-kubeconfig.sh --once after the rotation succeeds" script --once
vm_check "... reporting the rotation, and nothing else" vm_expect_eq \
	"node-kubeconfig: the token rotated ($SA/token changed): wrote $OUTD/token again" "$OUT" "stdout"
vm_check "the host's token is now B" vm_expect_eq "$TOKEN_B" "$(cat "$OUTD/token")" "token"
vm_check "... still 0600" vm_expect_eq 600 "$(stat -c %a "$OUTD/token")" "mode"
vm_check "the kubeconfig was left alone (same file, same text)" vm_expect_eq \
	"$KC_INODE same" "$(stat -c %i "$KC") $(cmp -s "$IPAM_TMP/kubeconfig.before" "$KC" && echo same)" \
	"inode and text"
rc=0
ipam_run ADD second net1 ns/second || rc=$?
vm_check "the same plugin and kubeconfig now ADD with token B (tokenFile read at each request)" \
	vm_expect_eq 0 "$rc" "exit status"
[ "$rc" = 0 ] || vm_diag "$IPAM_OUT"
vm_check "... and the server holds both records" vm_expect_eq 2 "$(k8s_objects | grep -c .)" "objects"
vm_check "DEL of the first attachment with token B succeeds" ipam_run DEL first net1 ns/first
vm_check "... and removes its RdmaAddress" vm_expect_eq 0 "$(k8s_objects | grep -c '"pod":"ns/first"')" "objects"

# refusals: nothing to hand over, or nowhere to send it
rm "$SA/token"
vm_run_code 1 "node-kubeconfig.sh refuses when the ServiceAccount has no token" script --once
vm_check "... saying which file is missing" vm_expect_contains "$ERR" "node-kubeconfig: error: no $SA/token"
vm_check "... and leaves the host's token as it was" vm_expect_eq "$TOKEN_B" "$(cat "$OUTD/token")" "token"
: >"$SA/token"
vm_run_code 1 "node-kubeconfig.sh refuses an empty token" script --once
vm_check "... saying so" vm_expect_contains "$ERR" "node-kubeconfig: error: $SA/token is empty"
sa_token "$TOKEN_B"
mv "$SA/ca.crt" "$SA/ca.crt.away"
vm_run_code 1 "node-kubeconfig.sh refuses when the ServiceAccount has no CA" script --once
vm_check "... saying which file is missing" vm_expect_contains "$ERR" "node-kubeconfig: error: no $SA/ca.crt"
mv "$SA/ca.crt.away" "$SA/ca.crt"
no_server() { SVC_HOST=none script --once; }
vm_run_code 1 "node-kubeconfig.sh refuses when KUBERNETES_SERVICE_HOST is unset" no_server
vm_check "... saying so" vm_expect_contains "$ERR" "node-kubeconfig: error: KUBERNETES_SERVICE_HOST is not set"
v6() { SVC_HOST=fd00::1 SVC_ROOT=$IPAM_TMP/v6root script --once; }
mkdir -p "$IPAM_TMP/v6root${D%/*}"
vm_run_code 0 "an IPv6 service address is written" v6
vm_check "... in brackets" vm_expect_eq "https://[fd00::1]:$K8S_PORT" \
	"$(kc_json "$IPAM_TMP/v6root$D/rdma-netns-ipam.kubeconfig" | jq -r '.clusters[0].cluster.server')" "server"

# the flat file every NAD's plugin merges (RDMANS_IPAM_FLAT_CONF=true, as the DaemonSet sets it)
flat() { RDMANS_IPAM_FLAT_CONF=true script --once; }
vm_run_code 0 "with RDMANS_IPAM_FLAT_CONF=true it writes the flat file" flat
vm_check "... saying so, and nothing else changed" vm_expect_eq \
	"node-kubeconfig: wrote $OUTD/rdma-netns-ipam.conf" "$OUT" "stdout"
vm_check "... naming the kubernetes store and the kubeconfig by its host path" vm_expect_eq \
	"{\"store\":\"kubernetes\",\"kubernetes\":{\"kubeconfig\":\"$KC\"}}" \
	"$(jq -c . "$OUTD/rdma-netns-ipam.conf")" "flat file"
rc=0
CONF='{"cniVersion":"1.1.0","name":"rdma-flat","type":"rdma-netns","ipam":{"type":"rdma-netns-ipam",
 "range":"10.74.0.0/24","node_name":"node-a","configuration_path":"'"$D/rdma-netns-ipam.conf"'"}}' \
	ipam_run ADD flat net1 ns/flat || rc=$?
vm_check "a NAD naming no store gets the kubernetes store from the flat file" vm_expect_eq \
	"0 1" "$rc $(k8s_objects | grep -c '"pod":"ns/flat"')" "exit status and objects"
CONF='{"cniVersion":"1.1.0","name":"rdma-flat","type":"rdma-netns","ipam":{"type":"rdma-netns-ipam",
 "range":"10.74.0.0/24","node_name":"node-a","configuration_path":"'"$D/rdma-netns-ipam.conf"'"}}' \
	ipam_run DEL flat net1 ns/flat
vm_run_code 0 "run again, it writes nothing (the file is its own)" flat
vm_check "... and says nothing" vm_expect_eq "" "$OUT" "stdout"
printf '{"store": "etcd", "etcd": {"endpoints": ["http://127.0.0.1:1"]}}\n' >"$OUTD/rdma-netns-ipam.conf"
vm_run_code 0 "an operator's own flat file is left alone" flat
vm_check "... saying so" vm_expect_contains "$ERR" "rdma-netns-ipam.conf is not ours (it is not what we write): left as it is"
vm_check "... unchanged" vm_expect_contains "$(cat "$OUTD/rdma-netns-ipam.conf")" '"store": "etcd"'
rm -f "$OUTD/rdma-netns-ipam.conf"

# the loop the container runs: a rotation is copied at the next check; SIGTERM ends it
# (each wait below is for an event, bounded at 30 s; the check interval is 1 s)
wait_for_line() { # wait_for_line FILE TEXT
	local i
	for ((i = 0; i < 300; i++)); do
		grep -qF -- "$2" "$1" && return 0
		sleep 0.1
	done
	vm_diag "$1 has no line with '$2' after 30 s:"
	vm_diag "$(cat "$1")"
	return 1
}
script_cmd
# the command itself in the background (not a function: $! must be the script's PID)
RDMANS_TOKEN_CHECK_INTERVAL=1 "${SCRIPT_CMD[@]}" >"$IPAM_TMP/loop.log" 2>&1 &
LOOP=$!
vm_check "the loop starts" wait_for_line "$IPAM_TMP/loop.log" "checking $SA/token every 1s"
sa_token "$TOKEN_C"
k8s_tokens "$TOKEN_C $SA_USER $SA_GROUPS"
vm_check "the loop copies a rotated token, saying so" wait_for_line "$IPAM_TMP/loop.log" \
	"node-kubeconfig: the token rotated ($SA/token changed): wrote $OUTD/token again"
vm_check "... and the host's token is now C" vm_expect_eq "$TOKEN_C" "$(cat "$OUTD/token")" "token"
kill -TERM "$LOOP"
rc=0
wait "$LOOP" || rc=$?
vm_check "SIGTERM ends the loop with exit 0" vm_expect_eq 0 "$rc" "exit status"
rc=0
ipam_run DEL second net1 ns/second || rc=$?
vm_check "DEL with the loop's token C succeeds" vm_expect_eq 0 "$rc" "exit status"
vm_check "... and no record is left" vm_expect_eq 0 "$(k8s_objects | grep -c .)" "objects"

vm_done
