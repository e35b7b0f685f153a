#!/bin/bash
# Guest script: podman runs rdmans-hook at its precreate stage from the
# precreate hooks.d JSON `meson install` put in its own directory, given to podman with
# --hooks-dir next to the default one (where the createRuntime JSON is). The pod's netns
# already holds its netdev (net1) and address, as a CNI plugin leaves it; podman joins it
# with --network ns:PATH, which is the path the hook finds in the OCI config.
#  - PID 1's environment (/proc/1/environ) holds NCCL_IB_HCA, NCCL_IB_GID_INDEX (the GID
#    that holds the pod's address, read inside) and NCCL_SOCKET_IFNAME, the values
#    nccl.conf has; the rest of the environment is as podman made it;
#  - `podman exec` sessions do not get them (podman builds exec's env from its own
#    record); nccl.conf serves them;
#  - a variable the user sets (-e) wins, and the hook says so;
#  - without the precreate directory nothing reaches the environment (the feature);
#  - a new netns (--network none): nothing to resolve, config unchanged, the container runs;
#  - a bad annotation fails the container's creation; bad or huge input on stdin is
#    an error with nothing on stdout.
# RDMANS_PODMAN names another podman binary (another world's), default `podman`.
set -u
. "$(dirname "$0")/runtime-lib.sh"

if [ -n "${RDMANS_PODMAN:-}" ]; then
	podman() { "$RDMANS_PODMAN" "$@"; }
fi
rt_setup
echo "# $(podman --version)"

PRE_DIR=$(dirname "$HOOK_PRE_JSON")
vm_check "meson install put the precreate JSON in a directory of its own ($PRE_DIR)" \
	sh -c 'for d in $2; do [ "$1" = "$d" ] && exit 1; done; exit 0' _ "$PRE_DIR" "$HOOKS_DIRS"
vm_check "  its hook.path is the installed rdmans-hook, stage precreate" vm_expect_eq \
	"$HOOK precreate --stage precreate" \
	"$(jq -r '[.hook.path, .stages[0], .hook.args[1], .hook.args[2]] | join(" ")' "$HOOK_PRE_JSON")"
vm_check "  gated by the annotations of the createRuntime JSON" vm_expect_eq \
	"$(jq -c .when "$HOOK_JSON")" "$(jq -c .when "$HOOK_PRE_JSON")"

# podman's --hooks-dir replaces its default list: name both
both=(--hooks-dir "$(dirname "$HOOK_JSON")" --hooks-dir "$PRE_DIR")
environ() { podman exec "$1" cat /proc/1/environ | tr '\0' '\n'; }
val() { sed -n "s/^$2=//p" <<<"$1"; }

d1=$(rt_pod pod1 v1 10.56.0.2/24 "irdma%d") || vm_fail "pod1"
d2=$(rt_pod pod2 v2 10.57.0.2/24 "mlx5_%d") || vm_fail "pod2"

# --- the settings in PID 1's environment ---------------------------------------------------
rt_t "podman run, precreate" vm_run_code 0 "a container in pod1 annotated rdmans.io/devices=$d1 starts" \
	podman "${both[@]}" run -d --name c1 --network ns:/var/run/netns/pod1 \
	--annotation "rdmans.io/devices=$d1" --annotation rdmans.io/nccl-profile=roce \
	-e GREETING=grüß "$IMG" sleep 1000000
vm_check "  $d1 is in pod1" vm_expect_eq pod1 "$(rt_where "$d1")"
env1=$(environ c1)
echo "$env1" | sed 's/^/# c1 \/proc\/1\/environ: /'
gid=$(rt_gid_in c1 "$d1" 10.56.0.2)
vm_check "  inside, a RoCE v2 GID of $d1 holds 10.56.0.2 (index $gid)" test -n "$gid"
vm_check "  PID 1's environment: NCCL_IB_HCA is =$d1" vm_expect_eq "=$d1" "$(val "$env1" NCCL_IB_HCA)"
vm_check "  PID 1's environment: NCCL_IB_GID_INDEX is that GID's ($gid)" vm_expect_eq "$gid" "$(val "$env1" NCCL_IB_GID_INDEX)"
vm_check "  PID 1's environment: NCCL_SOCKET_IFNAME is net1" vm_expect_eq net1 "$(val "$env1" NCCL_SOCKET_IFNAME)"
conf=$(podman exec c1 grep '^NCCL_' /etc/nccl.conf | sort)
vm_check "  the same NCCL settings as nccl.conf (the createRuntime hook's)" vm_expect_eq \
	"$conf" "$(grep '^NCCL_' <<<"$env1" | sort)"
vm_check "  podman's own variables and the user's are still there, unchanged" vm_expect_eq \
	"container=podman GREETING=grüß" "container=$(val "$env1" container) GREETING=$(val "$env1" GREETING)"
# (the order of podman's own entries is its own: it builds them from a map)
vm_check "  the NCCL_* entries are together, one after the other (one insertion)" \
	bash -c 'grep -n "^NCCL_" <<<"$1" | cut -d: -f1 | awk "NR > 1 && \$1 != p + 1 { exit 1 } { p = \$1 }"' _ "$env1"
exec1=$(podman exec c1 env | grep '^NCCL_' | sort)
echo "$exec1" | sed 's/^/# c1 podman exec env: /'
vm_check "  podman exec: no NCCL_* in the environment (podman's own record), as the Baidu CCE guide complains" \
	vm_expect_eq "" "$exec1"
podman rm -f -t 0 c1 >/dev/null

# --- the user's own value wins -----------------------------------------------------------
rt_t "podman run -e NCCL_IB_HCA" vm_run_code 0 "a container with -e NCCL_IB_HCA=mine starts" \
	podman "${both[@]}" run -d --name c2 --network ns:/var/run/netns/pod1 \
	--annotation "rdmans.io/devices=$d1" -e NCCL_IB_HCA=mine "$IMG" sleep 1000000
env2=$(environ c2)
vm_check "  PID 1 has the user's NCCL_IB_HCA=mine, once" vm_expect_eq "mine" "$(val "$env2" NCCL_IB_HCA)"
vm_check "  ... and rdmans' NCCL_IB_GID_INDEX" vm_expect_eq "$gid" "$(val "$env2" NCCL_IB_GID_INDEX)"
podman rm -f -t 0 c2 >/dev/null
# the hook itself, on a config as podman gives it (jq would round the big integer): the log line
cfg='{"ociVersion":"1.0.2-dev","process":{"env":["PATH=/bin","NCCL_IB_HCA=mine"],"args":["sh"]},'
cfg+='"root":{"path":"/nonexistent"},"annotations":{"rdmans.io/devices":"'$d1'"},'
cfg+='"linux":{"namespaces":[{"type":"network","path":"/var/run/netns/pod1"}],'
cfg+='"resources":{"memory":{"swappiness":18446744073709551615}}},"x-new":{"f":0.1,"g":1e5,"s":"\u00e9\/"}}'
vm_run_code 0 "$HOOK --stage precreate on that config" sh -c 'printf %s "$1" | "$2" --stage precreate' _ "$cfg" "$HOOK"
vm_check "  it says the config's NCCL_IB_HCA wins" vm_expect_contains "$ERR" \
	"rdmans-hook: precreate: process.env sets NCCL_IB_HCA=mine already: it wins over rdmans' value =$d1"
# out = cfg with one insertion after "NCCL_IB_HCA=mine": NCCL_* entries, NCCL_IB_GID_INDEX=gid among them
vm_check "  stdout: the config byte for byte, NCCL_IB_GID_INDEX=$gid (and no NCCL_IB_HCA) added to process.env" \
	python3 -c 'import json, sys
cfg, out, gid = sys.argv[1:]
at = cfg.index("\"NCCL_IB_HCA=mine\"") + len("\"NCCL_IB_HCA=mine\"")
ins = out[at:len(out) - (len(cfg) - at)]
assert out[:at] == cfg[:at] and out[at + len(ins):] == cfg[at:], "not one insertion"
added = json.loads("[" + ins[1:] + "]")
assert ins[0] == "," and all(a.startswith("NCCL_") for a in added), added
assert "NCCL_IB_GID_INDEX=" + gid in added and not any(a.startswith("NCCL_IB_HCA=") for a in added), added
' "$cfg" "$OUT" "$gid"

# --- without the precreate directory: no environment (what the feature adds) -----------------
vm_run_code 0 "the createRuntime hook alone: the container starts" \
	podman run -d --name c3 --network ns:/var/run/netns/pod1 --annotation "rdmans.io/devices=$d1" "$IMG" sleep 1000000
vm_check "  PID 1's environment has no NCCL_*, nccl.conf has them" vm_expect_eq "|=$d1" \
	"$(environ c3 | grep '^NCCL_')|$(podman exec c3 sed -n 's/^NCCL_IB_HCA=//p' /etc/nccl.conf)"
podman rm -f -t 0 c3 >/dev/null

# --- a new netns: nothing to resolve ----------------------------------------------------------
vm_run_code 0 "--network none (a new netns, no path in the config), precreate hook only: starts" \
	podman --hooks-dir "$PRE_DIR" run --rm --network none --annotation rdmans.io/nccl-profile=roce \
	"$IMG" sh -c 'tr "\0" "\n" </proc/1/environ | grep -c "^NCCL_"; true'
vm_check "  PID 1's environment has no NCCL_*" vm_expect_eq 0 "$OUT"

# --- failures: the container is not created --------------------------------------------------
rc=0
err=$(podman --hooks-dir "$PRE_DIR" run --name c4 --network ns:/var/run/netns/pod2 \
	--annotation "rdmans.io/devices=$d2" --annotation rdmans.io/nccl-profile=nosuch "$IMG" true 2>&1) || rc=$?
echo "$err" | sed 's/^/# podman said: /'
vm_check "an unknown rdmans.io/nccl-profile fails the container at precreate (podman exits $rc)" test "$rc" -ne 0
vm_check "  podman names the precreate hook's failure" vm_expect_contains "$err" "rdmans-hook --stage precreate"
vm_check "  nothing moved: $d2 is still on the host" vm_expect_eq host "$(rt_where "$d2")"
state=$(podman inspect --format '{{.State.Status}}' c4 2>&1)
vm_check "  the runtime never got a config: c4 never ran (podman's state: $state)" \
	bash -c '[ "$1" = configured ] || [ "$1" = created ]' _ "$state"
podman rm -f -t 0 c4 >/dev/null 2>&1
vm_run_code 1 "input that is not an OCI config: exit 1" sh -c 'echo "{\"process\": [" | "$1" --stage precreate' _ "$HOOK"
vm_check "  nothing on stdout" vm_expect_eq "" "$OUT"
vm_check "  the message says what it wanted" vm_expect_contains "$ERR" \
	"rdmans-hook: precreate (podman gives the OCI config on stdin): the input is not an OCI config"
vm_run_code 1 "17 MiB on stdin: exit 1" sh -c 'head -c 17825792 /dev/zero | tr "\0" " " | "$1" --stage precreate' _ "$HOOK"
vm_check "  nothing on stdout, the bound named" vm_expect_eq "|larger than 16 MiB" "$OUT|$(grep -o 'larger than 16 MiB' <<<"$ERR")"
vm_done
