# shellcheck shell=bash
# Helpers for the rdma-netns-ipam tests: the plugin, a scratch directory, and
# real etcd members (Debian's etcd-server) on loopback ports, killed on exit.
# Sources tests/lib/tap.sh unless its helpers are there already (bench and VM
# guests have them from tests/vm/guest-lib.sh).

# shellcheck source=../lib/tap.sh
declare -F vm_ok >/dev/null || . "${BASH_SOURCE[0]%/*}/../lib/tap.sh"
IPAM=${IPAM:-$RDMANS_BUILD_DIR/src/ipam/rdma-netns-ipam}
RDMANS=${RDMANS:-$RDMANS_BUILD_DIR/src/cli/rdmans}
[ -x "$IPAM" ] || vm_fail "no plugin at $IPAM (build first)"

IPAM_TMP=$(mktemp -d /tmp/rn-ipam-test.XXXXXX)
ETCD_PIDS=()
ETCD_CLIENT=()

ipam_cleanup() {
	local pid
	for pid in "${ETCD_PIDS[@]}"; do
		[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
	done
	for pid in "${ETCD_PIDS[@]}"; do
		[ -n "$pid" ] && wait "$pid" 2>/dev/null
	done
	rm -rf "$IPAM_TMP"
}
trap ipam_cleanup EXIT

# ipam_pods_setup PREFIX: the pods' namespaces are PREFIX-*; they, the cgroup a test
# may make (CGROUP_DIR) and its sleeping process (SLEEPER) go on exit, then ipam_cleanup
ipam_pods_setup() {
	NS_PREFIX=$1
	CGROUP_DIR=
	SLEEPER=
	trap ipam_pods_cleanup EXIT
}
ipam_pods_cleanup() {
	local n
	for n in $(ip netns list | awk '{print $1}' | grep "^$NS_PREFIX-"); do ip netns del "$n"; done
	[ -z "$SLEEPER" ] || kill "$SLEEPER" 2>/dev/null
	[ -z "$SLEEPER" ] || wait "$SLEEPER" 2>/dev/null
	[ -z "$CGROUP_DIR" ] || rmdir "$CGROUP_DIR" "${CGROUP_DIR%/*}" 2>/dev/null
	ipam_cleanup
}

# free_port: sets PORT to a TCP port nothing listens on (checked with ss),
# from a range that depends on our PID so parallel test files differ.
IPAM_NEXT_PORT=$((21000 + ($$ % 1000) * 10))
free_port() {
	while :; do
		PORT=$IPAM_NEXT_PORT
		IPAM_NEXT_PORT=$((IPAM_NEXT_PORT + 1))
		ss -Hltn "sport = :$PORT" 2>/dev/null | grep -q . || return 0
	done
}

# etcd_cluster N [EXTRA ETCD ARGS...]: starts N members of ${ETCD_BIN:-etcd} on
# loopback (plain HTTP unless the extra args say otherwise), waits until they serve, and sets
# ETCD_CLIENT[i] (client URLs) and ETCD_PIDS[i]. Data lives in tmpfs-backed
# $IPAM_TMP when /tmp is tmpfs, else on disk.
etcd_cluster() {
	local n=$1 i cluster="" scheme=${ETCD_SCHEME:-http} peers=() cports=()
	shift
	for ((i = 0; i < n; i++)); do
		free_port
		cports[i]=$PORT
		free_port
		peers[i]=$PORT
		cluster+="${cluster:+,}m$i=http://127.0.0.1:${peers[i]}"
	done
	for ((i = 0; i < n; i++)); do
		ETCD_CLIENT[i]=$scheme://127.0.0.1:${cports[i]}
		"${ETCD_BIN:-etcd}" --name "m$i" --data-dir "$IPAM_TMP/etcd-m$i" \
			--listen-client-urls "${ETCD_CLIENT[i]}" --advertise-client-urls "${ETCD_CLIENT[i]}" \
			--listen-peer-urls "http://127.0.0.1:${peers[i]}" \
			--initial-advertise-peer-urls "http://127.0.0.1:${peers[i]}" \
			--initial-cluster "$cluster" --initial-cluster-state new \
			--initial-cluster-token "rn-ipam-$$" "$@" >"$IPAM_TMP/etcd-m$i.log" 2>&1 &
		ETCD_PIDS[i]=$!
	done
	for ((i = 0; i < 100; i++)); do
		etcd_healthy "$n" && return 0
		sleep 0.1
	done
	vm_diag "etcd did not come up:"
	vm_diag "$(tail -5 "$IPAM_TMP"/etcd-m*.log)"
	vm_fail "etcd cluster of $n did not start"
}

# etcd_healthy N: every member answers /health with a leader.
etcd_healthy() {
	local i
	for ((i = 0; i < $1; i++)); do
		# shellcheck disable=SC2086
		curl -fsS --max-time 1 ${ETCD_CURL_OPTS:-} "${ETCD_CLIENT[i]}/health" 2>/dev/null |
			grep -q '"health":"true"' || return 1
	done
}

# etcdctl_ I ARGS...: etcdctl against member I (v3 API, TLS/auth from ETCDCTL_OPTS).
etcdctl_() {
	local i=$1
	shift
	# shellcheck disable=SC2086
	ETCDCTL_API=3 etcdctl --endpoints="${ETCD_CLIENT[i]}" ${ETCDCTL_OPTS:-} "$@"
}

# etcd_endpoints_json: ["url", ...] of every member.
etcd_endpoints_json() {
	local i out=""
	for i in "${!ETCD_CLIENT[@]}"; do
		out+="${out:+,}\"${ETCD_CLIENT[i]}\""
	done
	echo "[$out]"
}

# ipam_run CMD CONTAINER [IFNAME [POD]]: runs the plugin with $CONF on stdin;
# stdout in $IPAM_OUT, exit status returned.
ipam_run() {
	local cmd=$1 cid=$2 ifname=${3:-net1} pod=${4:-} args=""
	[ -z "$pod" ] || args="IgnoreUnknown=1;K8S_POD_NAMESPACE=${pod%/*};K8S_POD_NAME=${pod#*/}"
	IPAM_OUT=$(printf '%s' "$CONF" | CNI_COMMAND=$cmd CNI_CONTAINERID=$cid CNI_IFNAME=$ifname \
		CNI_NETNS=/var/run/netns/none CNI_PATH=/nonexistent CNI_ARGS=$args "$IPAM" 2>>"$IPAM_TMP/stderr")
}

# ipam_parallel_adds N POD_PREFIX: N ADDs with $CONF at once, as N kubelets
# would send them: containers par1..parN, pods ns/POD_PREFIX1..N. Each one's
# "EXIT-STATUS RESULT" in $IPAM_TMP/par.I; PAR_FAILS gets how many failed,
# PAR_ADDRS the addresses they got (CIDR), sorted, one a line.
ipam_parallel_adds() {
	local i jobs=()
	rm -f "$IPAM_TMP"/par.*
	for i in $(seq 1 "$1"); do
		(ipam_run ADD "par$i" net1 "ns/$2$i"; echo "$? $IPAM_OUT" >"$IPAM_TMP/par.$i") &
		jobs+=($!)
	done
	wait "${jobs[@]}"
	PAR_FAILS=$(cat "$IPAM_TMP"/par.* | grep -cv '^0 ')
	PAR_ADDRS=$(for i in "$IPAM_TMP"/par.*; do cut -d' ' -f2- "$i" | jq -r '.ips[0].address'; done | sort)
}

# ip_of: the first address of $IPAM_OUT (a 1.x result), without the prefix.
ip_of() {
	printf '%s' "$IPAM_OUT" | jq -r '.ips[0].address' | cut -d/ -f1
}
