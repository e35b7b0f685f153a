# shellcheck shell=bash
# Runs CNI plugins the way a runtime (libcni) does: CNI_* in the
# environment, the network configuration on stdin, the result or error on
# stdout. Sources tests/lib/tap.sh unless its helpers are there already (VM
# guests have them from tests/vm/guest-lib.sh). Used by tests/netns/cni*.sh,
# tests/vm/cni.sh, tests/vm/acceptance.sh and bench/cni-*.sh.
#
#   CNI_BIN       directory with rdma-netns (and the other plugins) first in CNI_PATH
#   CNI_TMP       scratch directory the caller removes (stderr of each run)
#   cni_run CMD CONF [VAR=VALUE...]
#                 runs the plugin named by CONF's "type" with CNI_COMMAND=CMD and
#                 the default CNI_CONTAINERID/CNI_NETNS/CNI_IFNAME/CNI_ARGS from
#                 CNI_CID/CNI_NS/CNI_IF/CNI_ARGS_DEFAULT, overridden by VAR=VALUE
#                 (VAR= unsets it); sets OUT (stdout), ERR (stderr), RC.
#   cni_expect_ok NAME CMD CONF [VAR=VALUE...]
#   cni_expect_err NAME CODE NEEDLE CMD CONF [VAR=VALUE...]
#                 one TAP result: exit 0 / non-zero with a CNI error document of
#                 that code whose msg contains NEEDLE.
#   cni_list_add LIST / cni_list_del LIST
#                 a conflist ({"cniVersion","name","plugins":[...]}) as libcni runs
#                 it: ADD in order passing prevResult on, DEL in reverse with the
#                 cached result as prevResult (0.4.0+). Result in CNI_LIST_RESULT.
#   cni_netns_setup PREFIX [BINARY...]
#                 the netns tests' start: skipped unless root; PLUGIN (default
#                 $RDMA_NETNS, else the build's rdma-netns) and each BINARY must
#                 be executable; scratch tmp=/tmp/PREFIX.XXXXXX whose bin/ holds
#                 rdma-netns ($PLUGIN) and each BINARY under its own name; CNI_BIN,
#                 CNI_TMP, and the plugin's state and devinfo directories in tmp.
#   cni_vm_setup  the VM guests' start: R (the build's rdmans), PLUGIN (its
#                 rdma-netns), /tmp/cni/bin holding it as CNI_BIN, CNI_TMP=/tmp/cni,
#                 HL (a host-local data dir) and the plugin's state dir there.
#   cni_netns_snap PREFIX [HOST_LINK_RE]
#                 what a test may have changed in the kernel, to compare before and
#                 after: the host's netdevs named PREFIX* (or matching the ERE
#                 HOST_LINK_RE) and addresses of PREFIX*, then each netns named
#                 PREFIX*: its netdevs, addresses and routes
#   cni_netns_start PREFIX [BINARY...]
#                 cni_netns_setup, then cni_netns_clean of what a killed run left,
#                 and both again (plus removing $tmp) on exit
#   cni_veth_pod PREFIX [IPAM_JSON]
#                 a veth PREFIX0 (peer PREFIX0p) to move and a netns PREFIX-pod;
#                 CNI_NS and CNI_CID (PREFIX-c1) point at them; with IPAM_JSON,
#                 conf: rdma-netns moving PREFIX0 (network PREFIXnet) with that ipam
#   cni_scratch_files DIR...
#                 the files under those directories of $tmp that a test's DEL must
#                 have removed (locks and host-local's bookkeeping left out), sorted
#   cni_netns_clean PREFIX
#                 deletes every netns and every host netdev whose name starts
#                 with PREFIX (what a test made, or a killed run left)

# shellcheck source=../lib/tap.sh
declare -F vm_ok >/dev/null || . "${BASH_SOURCE[0]%/*}/../lib/tap.sh"

CNI_CID=${CNI_CID:-rnc-c1}
CNI_NS=${CNI_NS:-}
CNI_IF=${CNI_IF:-net1}
CNI_ARGS_DEFAULT=${CNI_ARGS_DEFAULT:-IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=pod-a}

cni_netns_setup() {
	local b
	tap_skip_unless_root
	PLUGIN=${RDMA_NETNS:-$RDMANS_BUILD_DIR/src/cni/rdma-netns}
	tap_require_exec "$PLUGIN" "${@:2}"
	tmp=$(mktemp -d "/tmp/$1.XXXXXX") || vm_fail "cannot make a scratch directory in /tmp"
	shift
	mkdir "$tmp/bin"
	ln -s "$PLUGIN" "$tmp/bin/rdma-netns"
	for b in "$@"; do ln -s "$b" "$tmp/bin/${b##*/}"; done
	CNI_BIN=$tmp/bin
	CNI_TMP=$tmp
	export RDMA_NETNS_STATE_DIR=$tmp/state RDMA_NETNS_DEVINFO_DIR=$tmp/devinfo
}

cni_vm_setup() {
	R=$RDMANS_BUILD_DIR/src/cli/rdmans
	PLUGIN=$RDMANS_BUILD_DIR/src/cni/rdma-netns
	[ -x "$PLUGIN" ] || vm_fail "no rdma-netns at $PLUGIN"
	mkdir -p /tmp/cni/bin
	ln -sf "$PLUGIN" /tmp/cni/bin/rdma-netns
	CNI_BIN=/tmp/cni/bin
	CNI_TMP=/tmp/cni
	HL=/tmp/cni/hl
	export RDMA_NETNS_STATE_DIR=/tmp/cni/state
}

# The fault tests take a snapshot after every kill (hundreds a run), so it
# starts few processes: one ip per namespace, whose -n (a namespace switch
# and a remount of /sys) cost more than the listing; the namespaces from
# /var/run/netns (what ip netns list reads), sorted by the glob.
cni_netns_snap() {
	local ns
	ip -o link | sed -En "s/^[0-9]+: ((${2:-$1}).*)/\1/p" | vm_link_view
	ip -o addr | sed -En "/^[0-9]+: $1/{/inet6 fe80/!p}"
	for ns in /var/run/netns/"$1"*; do
		[ -e "$ns" ] || continue
		ns=${ns##*/}
		echo "netns $ns"
		# links (without their index, as vm_link_view shows them), addresses, routes
		printf '%s\n' 'link show' 'addr show' 'route show' | ip -n "$ns" -o -batch - |
			sed -E "/^[0-9]+: [^ ]+: </{s/^[0-9]+: //; $VM_LINK_VIEW_SED}; /inet6 fe80/d"
	done
}

cni_netns_start() {
	cni_netns_setup "$@"
	cni_netns_clean "$1"
	# shellcheck disable=SC2064 # the prefix now
	trap "cni_netns_clean '$1'; rm -rf \"\$tmp\"" EXIT
}

cni_veth_pod() {
	ip link add "${1}0" type veth peer name "${1}0p"
	ip netns add "$1-pod"
	CNI_NS=/var/run/netns/$1-pod
	CNI_CID=$1-c1
	[ -z "${2:-}" ] || conf=$(jq -nc --arg p "$1" --argjson ipam "$2" '{cniVersion: "1.0.0",
		name: "\($p)net", type: "rdma-netns", device: "\($p)0", requireRdma: false, ipam: $ipam}')
}

cni_scratch_files() {
	(cd "$tmp" && find "$@" -type f ! -path 'state/locks/*' ! -path 'ri/.locks/*' \
		! -name 'last_reserved_ip*' ! -name lock 2>/dev/null | sort)
}

cni_netns_clean() {
	local ns l
	for ns in $(ip netns list 2>/dev/null | awk -v p="^$1" '$1 ~ p { print $1 }'); do ip netns del "$ns"; done
	for l in $(ip -o link 2>/dev/null | awk -F': ' -v p="^$1" '$2 ~ p { sub(/@.*/, "", $2); print $2 }'); do
		ip link del "$l" 2>/dev/null
	done
}

cni_run() {
	local cmd=$1 conf=$2 type='' plugin kv k errf=${CNI_TMP:-${TMPDIR:-/tmp}}/cni-err.$BASHPID
	shift 2
	# the first "type" is the plugin's (configs here put it before "ipam"); no jq: execs are dear in the VM
	[[ $conf =~ \"type\"[[:space:]]*:[[:space:]]*\"([^\"]+)\" ]] && type=${BASH_REMATCH[1]}
	[ -n "$type" ] || type=rdma-netns
	plugin=$CNI_BIN/$type
	[ -x "$plugin" ] || plugin=/usr/lib/cni/$type
	local -A e=([CNI_COMMAND]=$cmd [CNI_CONTAINERID]=$CNI_CID [CNI_NETNS]=$CNI_NS
		[CNI_IFNAME]=$CNI_IF [CNI_PATH]="$CNI_BIN:/usr/lib/cni" [CNI_ARGS]=$CNI_ARGS_DEFAULT)
	for kv in "$@"; do e[${kv%%=*}]=${kv#*=}; done
	# an empty value leaves the variable unset, as the spec treats it
	local -a args=(-u CNI_COMMAND -u CNI_CONTAINERID -u CNI_NETNS -u CNI_IFNAME -u CNI_PATH -u CNI_ARGS)
	for k in "${!e[@]}"; do [ -z "${e[$k]}" ] || args+=("$k=${e[$k]}"); done
	RC=0
	OUT=$(env "${args[@]}" "$plugin" <<<"$conf" 2>"$errf") || RC=$?
	ERR=$(<"$errf")
	return 0
}

cni_diag_run() {
	vm_diag "exit $RC; stdout: $OUT"
	[ -z "$ERR" ] || vm_diag "stderr: $ERR"
}

cni_expect_ok() {
	local name=$1
	shift
	cni_run "$@"
	if [ "$RC" = 0 ]; then
		vm_ok "$name"
	else
		vm_not_ok "$name"
		cni_diag_run
	fi
}

cni_expect_err() {
	local name=$1 code=$2 needle=$3 got msg
	shift 3
	cni_run "$@"
	got=
	msg=
	[ -z "$OUT" ] || read -r got msg <<<"$(jq -r '"\(.code // "") \(.msg // "")"' <<<"$OUT" 2>/dev/null)"
	if [ "$RC" != 0 ] && [ "$got" = "$code" ] && case "$msg" in *"$needle"*) true ;; *) false ;; esac; then
		vm_ok "$name"
	else
		vm_not_ok "$name"
		vm_diag "expected a CNI error with code $code and a msg containing '$needle'"
		cni_diag_run
	fi
}

# The config of plugin I of a conflist, as libcni builds it.
cni_list_conf() {
	local list=$1 i=$2 prev=${3:-}
	if [ -n "$prev" ]; then
		printf '%s' "$list" | jq -c --argjson i "$i" --argjson prev "$prev" \
			'.plugins[$i] + {cniVersion: .cniVersion, name: .name, prevResult: $prev}'
	else
		printf '%s' "$list" | jq -c --argjson i "$i" \
			'.plugins[$i] + {cniVersion: .cniVersion, name: .name}'
	fi
}

cni_list_add() {
	local list=$1 n i prev=
	shift
	n=$(printf '%s' "$list" | jq '.plugins | length')
	for ((i = 0; i < n; i++)); do
		cni_run ADD "$(cni_list_conf "$list" "$i" "$prev")" "$@"
		[ "$RC" = 0 ] || return 1
		prev=$(printf '%s' "$OUT" | jq -c .)
	done
	CNI_LIST_RESULT=$prev
	return 0
}

cni_list_del() {
	local list=$1 n i rc=0
	shift
	n=$(printf '%s' "$list" | jq '.plugins | length')
	for ((i = n - 1; i >= 0; i--)); do
		cni_run DEL "$(cni_list_conf "$list" "$i" "${CNI_LIST_RESULT:-}")" "$@"
		[ "$RC" = 0 ] || rc=1
	done
	return $rc
}
