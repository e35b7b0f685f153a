# shellcheck shell=bash
# Helpers for the runtime suite's guest scripts (tests/runtime/*.sh, run by
# tests/vm/vm-run.sh): rdmans installed the way a user installs it, podman and
# containerd from Debian set up as tests/../notes say they need, and a busybox
# image built here (no registry is reachable). Source it; it sources guest-lib.sh
# and tests/netns/hook-lib.sh.
#
#   rt_setup            the RDMA modules (exclusive mode), simhca, rt_install,
#                       rt_podman (runtime $RDMANS_PODMAN_RUNTIME, runc by default),
#                       rt_image: what every script here starts with
#   rt_install          meson install of the build tree (its own prefix, the
#                       default /usr/local in tools/test.sh); sets R (the
#                       installed rdmans), HOOK, HOOK_JSON (the JSON podman reads),
#                       HOOK_PRE_JSON (the precreate one, in its own directory).
#                       In the current world (no meson of the build's version
#                       there) each file of meson-info/intro-installed.json is
#                       copied where meson install puts it
#   rt_podman [RUNTIME] containers.conf (CNI backend on podman 4, netavark on 5),
#                       storage on a tmpfs, no CNI config but ours; RUNTIME runc
#                       (the default) or crun
#   rt_image            the busybox image $IMG in podman's store
#   rt_rdma_image NAME [noprovider]  an image with rdmans as installed, rping,
#                       ib_write_bw, ibv_devinfo, their libraries and (unless
#                       noprovider) soft-RoCE's verbs provider, in podman's store
#   rt_t NAME CMD...    runs CMD, prints "# NAME: Ns" (the suite reports durations)
#   rt_gid_in CTR DEV IPV4  (podman) the RoCE v2 GID index of IPV4 in DEV's table,
#                       read inside container CTR; "" when none
#   rt_pod NS HOSTSIDE ADDR PATTERN  a pod's netns NS (a CNI plugin's work): its net1
#                       (a veth from HOSTSIDE) has ADDR and a simhca HCA named by
#                       PATTERN is bound to it; prints the HCA
#   rt_where DEV        "host", or the netns that holds RDMA device DEV
#   rt_snap NETDEV      everything a container may change on the node: RDMA devices
#                       and where they are, NETDEV and its IPv4 addresses, rdma-netns
#                       state and device-info files, leases
#   rt_world            "WORLD: kernel K, RUNTIME VERSION..." for the TAP log
#   rt_syslog           a syslog daemon (busybox syslogd) on /dev/log, into $RT_SYSLOG,
#                       as journald is on a node; rt_setup starts it
#   rt_hook_said        after vm_run_code: what the user is shown of the hook's
#                       failure, and the node's log since the run began: podman's
#                       error (runc passes the hook's stderr on; crun 1.28 drops it)
#                       and the syslog lines written meanwhile
#   rt_pause_image NAME the sandbox ("pause") image: the busybox image, sleeping
#   cri_containerd CONF start containerd with its CRI plugin as a node runs it
#                       (config CONF), wait for CRI; CTRD is its pid
#   cri_start           the CRI client (cri.py) as a coprocess
#   cri METHOD ARG...   one CRI call; the answer's "ok" value in $CRI_OUT, or
#                       non-zero with the error in $CRI_OUT; ARG "json:V" is JSON
#   rt_here NAME CMD... vm_check in this shell (CMD's variables, $CRI_OUT, stay)
. "$RDMANS_VM_LIB"
. "$(dirname "$RDMANS_VM_LIB")/../netns/hook-lib.sh"

B=$RDMANS_BUILD_DIR
IMG=localhost/rdmans-busybox:1
# podman's default hooks dirs (pkg/hooks DefaultDir, OverrideDir)
HOOKS_DIRS="/usr/share/containers/oci/hooks.d /etc/containers/oci/hooks.d"

rt_t() {
	local name=$1 t0=$SECONDS rc=0
	shift
	"$@" || rc=$?
	echo "# duration: $name: $((SECONDS - t0))s"
	return "$rc"
}

rt_install() {
	local inst
	if [ "${RDMANS_VM_WORLD:-today}" = current ]; then
		inst=$(cat "$B/meson-info/intro-installed.json") || vm_fail "no $B/meson-info/intro-installed.json"
		jq -r 'to_entries[] | "\(.key)\t\(.value)"' <<<"$inst" | while IFS=$'\t' read -r from to; do
			mkdir -p "$(dirname "$to")" && cp -a "$from" "$to" || exit 1
		done || vm_fail "copying the installed files of $B failed"
	else
		meson install -C "$B" --no-rebuild --quiet >/tmp/rt-install.log 2>&1 ||
			vm_fail "meson install -C $B failed: $(tail -n 5 /tmp/rt-install.log)"
		inst=$(meson introspect "$B" --installed) || vm_fail "meson introspect --installed failed"
	fi
	R=$(jq -r --arg s "$B/src/cli/rdmans" '.[$s]' <<<"$inst")
	HOOK=$(jq -r --arg s "$B/src/hook/rdmans-hook" '.[$s]' <<<"$inst")
	HOOK_JSON=$(jq -r --arg s "$B/hooks/rdmans-hook.json" '.[$s]' <<<"$inst")
	HOOK_PRE_JSON=$(jq -r --arg s "$B/hooks/rdmans-hook-precreate.json" '.[$s]' <<<"$inst")
	NRI=$(jq -r --arg s "$B/src/nri/rdmans-nri" '.[$s] // empty' <<<"$inst")
	CNI_INSTALLED=$(dirname "$(jq -r --arg s "$B/src/cni/rdma-netns" '.[$s]' <<<"$inst")")
	[ -x "$R" ] && [ -x "$HOOK" ] || vm_fail "meson install left no rdmans ($R) or rdmans-hook ($HOOK)"
}

rt_podman() {
	local backend=cni
	mkdir -p /etc/containers /var/lib/containers /etc/cni/net.d
	# podman's overlay driver cannot sit on the guest's overlay root; a tmpfs is fine
	mountpoint -q /var/lib/containers || mount -t tmpfs tmpfs /var/lib/containers
	# podman 5 has no CNI backend
	case "$(podman --version)" in *" "[0-4].*) ;; *) backend=netavark ;; esac
	# test-machine.md: CNI backend; cgroupfs and file events (no systemd in the
	# guest); runc needs default_ulimits here ("error setting rlimit type 7")
	cat >/etc/containers/containers.conf <<CONF
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]
[network]
network_backend = "$backend"
[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
runtime = "${1:-runc}"
CONF
	# the host's podman package left its bridge network here; the node has ours only
	rm -f /etc/cni/net.d/*
}

rt_image() { # rt_image [NAME [CMD-JSON]]: a busybox image (default $IMG), CMD-JSON its command
	local dir change=()
	[ -z "${2:-}" ] || change=(--change "CMD $2")
	dir=$(mktemp -d /tmp/rt-rootfs.XXXXXX)
	hl_rootfs "$dir" && mkdir -p "$dir/etc" "$dir/run"
	tar -C "$dir" -c . | podman import --quiet "${change[@]}" - "${1:-$IMG}" >/dev/null ||
		vm_fail "podman import of the busybox image ${1:-$IMG} failed"
	rm -rf "$dir"
}

# The image: busybox, rdmans as installed, rping, ib_write_bw, ibv_devinfo, the
# libraries they load and libibverbs' providers (dlopen()ed: ldd does not name them).
# The tree is made once per guest and each library copied once, in one cp: a
# process start costs 50-150 ms under TCG, and a copy per library per binary
# made this 55 s of a test's time.
RT_RDMA_TREE=
rt_rdma_image() { # rt_rdma_image NAME [noprovider]
	local bins=("$R" /usr/bin/rping /usr/bin/ib_write_bw /usr/bin/ibv_devinfo) libs prov=()
	if [ -z "$RT_RDMA_TREE" ]; then
		local dir
		dir=$(mktemp -d /tmp/rt-rdma.XXXXXX)
		hl_rootfs "$dir/base" && mkdir -p "$dir/base/etc" "$dir/base/run" "$dir/base/usr/bin" &&
			cp "${bins[@]}" "$dir/base/usr/bin/" || return 1
		# ldd of several files heads each list with "FILE:"; the libraries are the indented lines
		libs=$(ldd "${bins[@]}" | awk '/^\t/ && $3 ~ /^\// { print $3 } /^\t/ && $1 ~ /^\// { print $1 }' | sort -u)
		[ -n "$libs" ] || return 1
		# shellcheck disable=SC2086 # one path per word
		cp -L --parents $libs "$dir/base/" || return 1
		# soft-RoCE's provider, as an image for rxe pods would ship it
		mkdir -p "$dir/prov/usr/lib/x86_64-linux-gnu/libibverbs" "$dir/prov/etc/libibverbs.d" &&
			cp /usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav*.so "$dir/prov/usr/lib/x86_64-linux-gnu/libibverbs/" &&
			cp /etc/libibverbs.d/rxe.driver "$dir/prov/etc/libibverbs.d/" || return 1
		RT_RDMA_TREE=$dir
	fi
	[ "${2:-}" = noprovider ] || prov=(-C "$RT_RDMA_TREE/prov" usr/lib/x86_64-linux-gnu/libibverbs etc/libibverbs.d)
	tar -c -C "$RT_RDMA_TREE/base" . "${prov[@]}" | podman import --quiet - "$1" >/dev/null
}

# The in-container script: index of the RoCE v2 GID holding ::ffff:IPV4 in DEV's port 1.
# shellcheck disable=SC2016 # expanded by the container's sh
RT_GID_SCRIPT='d=/sys/class/infiniband/$1/ports/1; for f in $d/gids/*; do
	i=${f##*/}; [ "$(cat $f)" = "0000:0000:0000:0000:0000:ffff:$2" ] || continue
	[ "$(cat $d/gid_attrs/types/$i 2>/dev/null)" = "RoCE v2" ] && echo $i; done'

rt_gid_hex() { # a.b.c.d -> "0a38:0002" as sysfs prints the tail of an IPv4-mapped GID
	local IFS=.
	# shellcheck disable=SC2086
	set -- $1
	printf '%02x%02x:%02x%02x' "$1" "$2" "$3" "$4"
}

rt_gid_in() {
	podman exec "$1" sh -c "$RT_GID_SCRIPT" _ "$2" "$(rt_gid_hex "$3")" 2>/dev/null
}

RT_SYSLOG=/tmp/rt-syslog
rt_syslog() {
	[ -S /dev/log ] && return 0
	: >"$RT_SYSLOG"
	busybox syslogd -n -O "$RT_SYSLOG" &
	vm_poll 60 test -S /dev/log || vm_fail "busybox syslogd made no /dev/log"
}

rt_hook_said() {
	echo "$ERR"
	echo "# syslog:"
	tail -n +"$((${RT_SYSLOG_MARK:-0} + 1))" "$RT_SYSLOG"
}

# vm_run_code with the syslog marked first, for rt_hook_said
rt_run_code() {
	RT_SYSLOG_MARK=$(wc -l <"$RT_SYSLOG")
	vm_run_code "$@"
}

rt_setup() {
	rt_syslog
	vm_load_rdma exclusive
	vm_load_simhca
	modprobe rdma_ucm 2>/dev/null
	rt_t "meson install" rt_install
	rt_podman "${RDMANS_PODMAN_RUNTIME:-runc}"
	rt_t "podman import" rt_image
	vm_diag "$(rt_world); $(podman --version), OCI runtime $("${RDMANS_PODMAN_RUNTIME:-runc}" --version | head -n 1)"
}

rt_snap() {
	"$R" dev --all-netns
	ip -o link show "$1" 2>&1 | sed 's/ qlen.*//' | vm_link_view
	ip -o -4 addr show "$1" 2>&1 # (IPv6 link-local comes and goes with DAD: not ours)
	find /var/lib/cni/rdma-netns /var/run/k8s.cni.cncf.io -type f ! -path '*/locks/*' 2>/dev/null | sort
	"$R" ipam ls 2>&1
}

rt_world() {
	echo "${RDMANS_VM_WORLD:-today}: kernel $(uname -r), $(. /etc/os-release && echo "$PRETTY_NAME")"
}

# --- containerd through CRI, as kubelet drives it (current world) -------------------------
CRI_OUT=
RT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

rt_pause_image() { # the sandbox ("pause") image NAME: the busybox image, sleeping
	rt_image "$1" '["/bin/sleep", "2147483647"]'
}

# cri_images IMAGE...: podman's images into containerd's k8s.io namespace (CRI's),
# all in one docker archive (uncompressed layers, one podman and one ctr run:
# under TCG each start and each gzip pass costs seconds)
cri_images() {
	podman save --quiet --multi-image-archive --format docker-archive -o /tmp/img.tar "$@" &&
		ctr -n k8s.io images import /tmp/img.tar >/dev/null || vm_fail "podman save | ctr images import of $*"
	rm -f /tmp/img.tar
}

cri_containerd() {
	mkdir -p /var/lib/containerd /run/containerd /var/log/pods
	# its overlayfs snapshotter cannot sit on the guest's overlay root; a tmpfs is fine
	mountpoint -q /var/lib/containerd || mount -t tmpfs tmpfs /var/lib/containerd
	containerd --config "$1" >>/tmp/containerd.log 2>&1 &
	CTRD=$!
	vm_poll 120 sh -c 'ctr version && ctr plugins ls | grep -q "io.containerd.grpc.v1 *cri *.*ok"' ||
		vm_fail "containerd's CRI plugin did not start: $(tail -n 5 /tmp/containerd.log)"
}

# cri_ready: after a (re)start, until the CRI service answers (containerd's CRI
# plugin reports ok before its server is initialized: "server is not initialized yet")
cri_ready() {
	vm_poll 300 cri pods || vm_diag "CRI after the start: $CRI_OUT"
}

cri_start() {
	coproc CRI { exec python3 "$RT_DIR/cri.py" 2>>/tmp/cri.err; }
}

rt_here() {
	local name=$1 rc=0
	shift
	CRI_OUT= # what CMD's CRI calls answered, never an earlier one's
	"$@" || rc=$?
	if [ "$rc" = 0 ]; then
		vm_ok "$name"
	else
		vm_not_ok "$name"
		vm_diag "command: $* (exit $rc)${CRI_OUT:+; CRI: $CRI_OUT}"
	fi
	return "$rc"
}

cri() {
	local req
	# (jq --args would still take an argument like "-c" for its own option)
	req=$(printf '%s\0' "$@" | jq -Rsc 'split("\u0000")[:-1] |
		map(if startswith("json:") then .[5:] | fromjson else . end)') ||
		{ CRI_OUT="bad arguments: $*"; return 2; }
	[ -n "${CRI_PID:-}" ] || { CRI_OUT="the CRI client is not running: $(tail -n 3 /tmp/cri.err)"; return 2; }
	echo "$req" >&"${CRI[1]}"
	# the client answers every request (its gRPC calls have deadlines); never wait forever
	if ! IFS= read -r -t 600 CRI_OUT <&"${CRI[0]}"; then
		CRI_OUT="no answer from the CRI client: $(tail -n 3 /tmp/cri.err)"
		return 2
	fi
	if jq -e 'has("ok")' <<<"$CRI_OUT" >/dev/null 2>&1; then
		CRI_OUT=$(jq -c '.ok' <<<"$CRI_OUT")
		return 0
	fi
	CRI_OUT=$(jq -r '.error // .' <<<"$CRI_OUT")
	return 1
}

rt_pod() { # rt_pod NS HOSTSIDE ADDR PATTERN: a netns whose net1 has ADDR, an HCA bound to it; prints the HCA
	ip netns add "$1" && ip link add "$2" type veth peer name "$2p" && ip link set "$2" up &&
		ip link set "$2p" netns "$1" && ip -n "$1" link set "$2p" name net1 &&
		ip -n "$1" addr add "$3" dev net1 && ip -n "$1" link set net1 up && ip -n "$1" link set lo up &&
		ip netns exec "$1" sh -c '. "$RDMANS_VM_LIB"; vm_simhca_new "$1" net1' _ "$4"
}

rt_where() { # rt_where DEV: "host", or the netns holding it
	rdma dev show "$1" >/dev/null 2>&1 && { echo host; return; }
	local ns
	for ns in $(ip netns list | cut -d' ' -f1); do
		ip netns exec "$ns" rdma dev show "$1" >/dev/null 2>&1 && { echo "$ns"; return; }
	done
	echo nowhere
}
