#!/bin/bash
# rdmans-hook --stage precreate without root or RDMA (what needs a netns and devices is in
# tests/runtime/podman-precreate.sh): the config goes back byte for byte when nothing is
# asked or nothing can be resolved yet; bad or huge input is exit 1 with nothing on stdout;
# and the precreate hooks.d JSON of hooks/.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../vm/guest-lib.sh"
B=${RDMANS_BUILD_DIR:?}
HOOK=$B/src/hook/rdmans-hook
tmp=$(mktemp -d /tmp/rdmans-precreate-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

pre() { # pre NAME FILE: the hook on FILE, one TAP result for exit 0; stdout in $tmp/out, stderr in $ERR
	local rc=0
	"$HOOK" --stage precreate <"$2" >"$tmp/out" 2>"$tmp/err" || rc=$?
	ERR=$(cat "$tmp/err")
	vm_check "$1 (exit $rc)" test "$rc" = 0
}

# what a decode and encode would change: 2^64-1, 0.1, 1e5, escapes, spacing
printf '%s' '{"ociVersion":"1.0.2-dev","process":{"env":["PATH=/bin"],"args":["sh"]},
 "root":{"path":"/nonexistent"},"annotations":{"io.podman.annotations.autoremove":"TRUE"},
 "linux":{"resources":{"memory":{"swappiness":18446744073709551615}},"namespaces":[{"type":"network","path":"/run/netns/x"}]},
 "x-new":{"f":0.1,"g":1e5,"s":"caf\u00e9 \/"}}' >"$tmp/plain.json"
pre "no rdmans.io annotation: the config goes back" "$tmp/plain.json"
vm_check "  stdout is the config, byte for byte" cmp "$tmp/plain.json" "$tmp/out"

printf '{"ociVersion": "1.0.2-dev"}' >"$tmp/noproc.json"
pre "no process and nothing asked: the config goes back" "$tmp/noproc.json"
vm_check "  stdout is the config, byte for byte" cmp "$tmp/noproc.json" "$tmp/out"

sed 's/"type":"network","path":"\/run\/netns\/x"/"type":"network"/; s/"io.podman.annotations.autoremove"/"rdmans.io\/nccl-profile"/' \
	"$tmp/plain.json" >"$tmp/new.json"
pre "a new netns (no path): the config goes back" "$tmp/new.json"
vm_check "  stdout is the config, byte for byte" cmp "$tmp/new.json" "$tmp/out"
vm_check "  it says why nothing was added" vm_expect_contains "$ERR" \
	"rdmans-hook: precreate: the OCI config asks for a new network namespace, which does not exist yet"

printf '{"process": {"env": [1]}, "annotations": {"rdmans.io/nccl-profile": "roce"}}' >"$tmp/bad.json"
vm_run_code 1 "process.env with a number: exit 1" "$HOOK" --stage precreate <"$tmp/bad.json"
vm_check "  nothing on stdout, the message names it" vm_expect_eq "|process.env[0] is not a string" \
	"$OUT|$(grep -o 'process.env\[0\] is not a string' <<<"$ERR")"
printf '{"process": {"env": []}, "process": {}}' >"$tmp/dup.json"
vm_run_code 1 "a key twice: exit 1, nothing on stdout" "$HOOK" --stage precreate <"$tmp/dup.json"
vm_check "  nothing on stdout" vm_expect_eq "" "$OUT"
head -c 17825792 /dev/zero | tr '\0' ' ' >"$tmp/huge.json"
vm_run_code 1 "17 MiB on stdin: exit 1" "$HOOK" --stage precreate <"$tmp/huge.json"
vm_check "  nothing on stdout, the bound named" vm_expect_eq "|larger than 16 MiB" "$OUT|$(grep -o 'larger than 16 MiB' <<<"$ERR")"
vm_run_code 1 "--stage with an unknown stage: exit 1" "$HOOK" --stage poststop </dev/null
vm_check "  saying which stages there are" vm_expect_contains "$ERR" "--stage takes createRuntime, prestart or precreate"

# --- hooks/rdmans-hook-precreate.json: oci-hooks(5) 1.0.0 ---------------------------------------
H=$B/hooks/rdmans-hook-precreate.json
vm_check "precreate JSON: version 1.0.0, precreate, the installed hook, --stage precreate" vm_expect_eq \
	"1.0.0 precreate $(jq -r .hook.path "$B/hooks/rdmans-hook.json") rdmans-hook --stage precreate" \
	"$(jq -r '"\(.version) \(.stages | join(",")) \(.hook.path) \(.hook.args | join(" "))"' "$H")"
vm_check "precreate JSON: the createRuntime JSON's annotations" vm_expect_eq \
	"$(jq -c .when "$B/hooks/rdmans-hook.json")" "$(jq -c .when "$H")"
vm_done
