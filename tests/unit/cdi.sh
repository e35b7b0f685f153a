#!/bin/bash
# `rdmans cdi generate` on a fake sysfs tree: the spec validates against the
# CDI JSON schema (tests/cdi/validate.py, python3-jsonschema) and says what
# it should; and the oci-hooks(5) JSON of hooks/. No root needed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../vm/guest-lib.sh"
B=${RDMANS_BUILD_DIR:?}
R=$B/src/cli/rdmans
VALIDATE=$here/../cdi/validate.py
/usr/bin/python3 -c 'import jsonschema' 2>/dev/null ||
	vm_fail "python3-jsonschema is not installed (tools/install-deps.sh)"

tmp=$(mktemp -d /tmp/rdmans-cdi-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
sys=$tmp/sys
uverbs() { # uverbs N DEV MINOR
	mkdir -p "$sys/class/infiniband_verbs/uverbs$1"
	echo "$2" >"$sys/class/infiniband_verbs/uverbs$1/ibdev"
	echo "231:$3" >"$sys/class/infiniband_verbs/uverbs$1/dev"
}
uverbs 0 irdma0 192
uverbs 1 mlx5_10 193
uverbs 2 mlx5_1 194
echo 6 >"$sys/class/infiniband_verbs/abi_version"
mkdir -p "$sys/class/misc/rdma_cm" && echo "10:58" >"$sys/class/misc/rdma_cm/dev"
export RDMANS_SYSFS_ROOT=$sys RDMANS_CONFIG_ROOT=$tmp/cfg

gen() { # gen ARGS...: the spec in $SPEC (also $tmp/spec.json), stderr in $ERR, status returned
	local rc=0
	SPEC=$("$R" cdi generate "$@" 2>"$tmp/err") || rc=$?
	ERR=$(cat "$tmp/err")
	printf '%s\n' "$SPEC" >"$tmp/spec.json"
	return "$rc"
}
q() { jq -r "$1" <<<"$SPEC"; }
gen_ok() { # gen_ok NAME ARGS...: gen in this shell, one TAP result for its status
	local name=$1
	shift
	if gen "$@"; then vm_ok "$name"; else vm_not_ok "$name"; vm_diag "rdmans cdi generate $*" "$ERR"; fi
}

gen_ok "generate succeeds"
vm_check "the spec validates against the CDI schema" /usr/bin/python3 "$VALIDATE" "$tmp/spec.json"
# the lowest version its content needs (CDI's MinimumRequiredVersion): podman 4.3 refuses 0.6.0
vm_check "kind rdmans.io/rdma, cdiVersion 0.3.0 (the lowest its content needs)" vm_expect_eq "rdmans.io/rdma 0.3.0" "$(q '"\(.kind) \(.cdiVersion)"')"
vm_check "one device per RDMA device, and all" vm_expect_eq "irdma0 mlx5_1 mlx5_10 all" "$(q '[.devices[].name] | join(" ")')"
vm_check "a device's uverbs node" vm_expect_eq "/dev/infiniband/uverbs2 c 231 194 rw" \
	"$(q '.devices[] | select(.name == "mlx5_1") | .containerEdits.deviceNodes[] | "\(.path) \(.type) \(.major) \(.minor) \(.permissions)"')"
vm_check "a device's createRuntime hook moves it" vm_expect_eq "createRuntime rdmans-hook --device mlx5_1" \
	"$(q '.devices[] | select(.name == "mlx5_1") | .containerEdits.hooks[] | "\(.hookName) \(.args | join(" "))"')"
vm_check "the hook path is absolute and the installed one" vm_expect_eq "$(jq -r .hook.path "$B/hooks/rdmans-hook.json")" \
	"$(q '.devices[0].containerEdits.hooks[0].path')"
vm_check "all: every node; the hook takes the pod's own devices (--all), none named" vm_expect_eq "3 rdmans-hook --all" \
	"$(q '.devices[] | select(.name == "all") | .containerEdits | "\(.deviceNodes | length) \(.hooks[0].args | join(" "))"')"
# the environment beats /etc/nccl.conf: a node-wide HCA list would send a pod to devices it does not hold
vm_check "no device carries env (NCCL_IB_HCA is the hook's, per pod)" vm_expect_eq "" \
	"$(q '[.devices[].containerEdits.env // empty | .[]] | join(" ")')"
vm_check "every container gets rdma_cm" vm_expect_eq "/dev/infiniband/rdma_cm 10 58" \
	"$(q '.containerEdits.deviceNodes[] | "\(.path) \(.major) \(.minor)"')"
vm_check "env: the profile's values, nothing pod-dependent" vm_expect_eq "NCCL_IB_DISABLE=0" "$(q '.containerEdits.env | join(" ")')"

gen_ok "scnet with an address pool" --profile scnet --addr-range 10.100.100.0/24 --set NCCL_IB_TIMEOUT=23
vm_check "  validates" /usr/bin/python3 "$VALIDATE" "$tmp/spec.json"
vm_check "  the hook resolves with the same profile" vm_expect_eq "rdmans-hook --profile scnet --device irdma0" \
	"$(q '.devices[0].containerEdits.hooks[0].args | join(" ")')"
vm_check "  env: profile, pool, override; no GID index, no HCA, no interface (the hook's, per pod)" vm_expect_eq \
	"NCCL_IB_DISABLE=0 NCCL_IB_ADDR_FAMILY=AF_INET NCCL_IB_ADDR_RANGE=10.100.100.0/24 NCCL_IB_ROCE_VERSION_NUM=2 NCCL_IB_QPS_PER_CONNECTION=8 NCCL_IB_TC=136 NCCL_IB_TIMEOUT=23" \
	"$(q '.containerEdits.env | join(" ")')"
gen_ok "an IPv6 address pool" --addr-range fd00:100::/64
vm_check "  env: AF_INET6 and the IPv6 range" vm_expect_eq \
	"NCCL_IB_DISABLE=0 NCCL_IB_ADDR_FAMILY=AF_INET6 NCCL_IB_ADDR_RANGE=fd00:100::/64 NCCL_IB_ROCE_VERSION_NUM=2" \
	"$(q '.containerEdits.env | join(" ")')"
mkdir -p "$tmp/etc" && echo '{"profile": "roce", "env": {"NCCL_IB_HCA": "=mlx5_1", "NCCL_IB_TC": 106}}' >"$tmp/etc/nccl.json"
gen_ok "a config file naming an HCA" --config "$tmp/etc/nccl.json"
vm_check "  its HCA stays out of the env; the hook reads the file per pod" vm_expect_eq \
	"NCCL_IB_DISABLE=0 NCCL_IB_TC=106|rdmans-hook --config $tmp/etc/nccl.json --device irdma0" \
	"$(q '"\(.containerEdits.env | join(" "))|\(.devices[0].containerEdits.hooks[0].args | join(" "))"')"
gen_ok "--hook PATH" --hook /opt/rdmans/bin/rdmans-hook
vm_check "  every hook runs it" vm_expect_eq "/opt/rdmans/bin/rdmans-hook" "$(q '[.devices[].containerEdits.hooks[].path] | unique | join(" ")')"

out=$(cd "$tmp" && "$R" cdi generate --output cdi/rdmans.json 2>&1) && rc=0 || rc=$?
vm_check "--output writes the file (relative path, directory created)" sh -c "[ $rc = 0 ] && [ -f '$tmp/cdi/rdmans.json' ]"
vm_check "  says so" vm_expect_contains "$out" "wrote cdi/rdmans.json: 3 devices and \"all\""
gen
vm_check "  the same spec as on stdout" vm_expect_eq "$SPEC" "$(cat "$tmp/cdi/rdmans.json")"
vm_check "  validates" /usr/bin/python3 "$VALIDATE" "$tmp/cdi/rdmans.json"

uverbs 3 1ib 195
gen_ok "a device whose name starts with a digit"
vm_check "  needs cdiVersion 0.5.0, and says so" vm_expect_eq "0.5.0" "$(q .cdiVersion)"
vm_check "  validates" /usr/bin/python3 "$VALIDATE" "$tmp/spec.json"
rm -r "$sys/class/infiniband_verbs/uverbs3"

rm -r "$sys/class/misc"
gen_ok "without rdma_ucm: generates"
vm_check "  warns" vm_expect_contains "$ERR" "modprobe rdma_ucm"
vm_check "  no rdma_cm node" vm_expect_eq "null" "$(q '.containerEdits.deviceNodes')"
vm_check "  validates" /usr/bin/python3 "$VALIDATE" "$tmp/spec.json"

# bad input: one line, its exit code, no output
expect_fail() { # NAME CODE NEEDLE ARGS...
	local name=$1 code=$2 needle=$3 rc=0
	shift 3
	gen "$@" || rc=$?
	if [ "$rc" = "$code" ] && [ -z "$SPEC" ] && [ "$(printf '%s\n' "$ERR" | wc -l)" = 1 ] &&
		vm_expect_contains "$ERR" "$needle" stderr; then
		vm_ok "$name"
	else
		vm_not_ok "$name"
		vm_diag "rdmans cdi generate $* (exit $rc, expected $code)" "$ERR"
	fi
}
expect_fail "relative --hook" 2 "--hook needs an absolute path" --hook rdmans-hook
expect_fail "--set of a pod-dependent value" 2 "--set NCCL_IB_GID_INDEX: its value depends on the pod" --set NCCL_IB_GID_INDEX=3
expect_fail "--set NCCL_SOCKET_IFNAME" 2 "put it in --config FILE" --set NCCL_SOCKET_IFNAME=net1
expect_fail "bad --addr-range" 7 "address range '10.0.0.0/33' is not a CIDR" --addr-range 10.0.0.0/33
expect_fail "unknown profile" 2 "unknown NCCL profile 'azure'" --profile azure
expect_fail "--set without a value" 2 "--set takes NAME=VALUE" --set NCCL_IB_TC
expect_fail "unknown option" 2 "unexpected argument '--frob'" --frob
expect_fail "relative --config (the hook reads it too)" 2 "need absolute paths" --config nccl.json
mkdir -p "$tmp/cfg/etc/rdmans" && echo '{"env": {"NCCL_IB_TC": [1]}}' >"$tmp/cfg/etc/rdmans/nccl.json"
expect_fail "bad config file" 7 "env NCCL_IB_TC must be a string, an integer"
rm -r "$tmp/cfg"
rm -r "$sys/class/infiniband_verbs"
expect_fail "no uverbs node" 3 "no RDMA device has a /dev/infiniband/uverbs node"
saved=$(cat "$tmp/cdi/rdmans.json")
out=$(cd "$tmp" && "$R" cdi generate --output cdi/rdmans.json 2>&1) && rc=0 || rc=$?
vm_check "a failed --output run: exit 3, the old file kept" sh -c "[ $rc = 3 ]"
vm_check "  the old file kept" vm_expect_eq "$saved" "$(cat "$tmp/cdi/rdmans.json")"

# the validator is not a rubber stamp
jq 'del(.kind)' "$tmp/cdi/rdmans.json" >"$tmp/bad1.json"
jq '.devices[0].containerEdits.hooks[0].hookName = "preStart"' "$tmp/cdi/rdmans.json" >"$tmp/bad2.json"
jq '.cdiVersion = "0.9.0"' "$tmp/cdi/rdmans.json" >"$tmp/bad3.json"
jq '.cdiVersion = "0.6.0"' "$tmp/cdi/rdmans.json" >"$tmp/bad4.json" # what podman 4.3 refused
for f in bad1 bad2 bad3 bad4; do
	vm_check "validator rejects $f" sh -c "! /usr/bin/python3 '$VALIDATE' '$tmp/$f.json' 2>/dev/null"
done

# --- hooks/: oci-hooks(5) 1.0.0 ---------------------------------------------------------------
H=$B/hooks/rdmans-hook.json
vm_check "hooks JSON: version 1.0.0, createRuntime, absolute path, args[0]" vm_expect_eq "1.0.0 createRuntime true rdmans-hook" \
	"$(jq -r '"\(.version) \(.stages | join(",")) \(.hook.path | startswith("/")) \(.hook.args[0])"' "$H")"
vm_check "hooks JSON: only known keys" vm_expect_eq "hook stages version when|args path timeout|annotations" \
	"$(jq -r '"\(keys | join(" "))|\(.hook | keys | join(" "))|\(.when | keys | join(" "))"' "$H")"
match=$(/usr/bin/python3 - "$H" <<'PY'
import json, re, sys
when = json.load(open(sys.argv[1]))["when"]["annotations"]
for key in ["rdmans.io/devices", "rdmans.io/nccl", "rdmans.io/nccl-profile", "rdmans.io/nccl-conf",
            "example.com/devices", "xrdmans.io/nccl"]:
    hit = any(re.search(k, key) and re.search(v, "x") for k, v in when.items())
    print(key, "yes" if hit else "no")
PY
)
vm_check "hooks JSON: runs for the annotations that ask for something" vm_expect_eq \
	"rdmans.io/devices yes rdmans.io/nccl yes rdmans.io/nccl-profile yes rdmans.io/nccl-conf no example.com/devices no xrdmans.io/nccl no" \
	"$(tr '\n' ' ' <<<"$match" | sed 's/ $//')"

vm_done
