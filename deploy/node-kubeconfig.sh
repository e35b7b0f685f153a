#!/bin/sh
# Run by the DaemonSet's ipam-kubeconfig container, as whereabouts does for its
# own plugin: rdma-netns-ipam runs on the host (the container runtime calls
# it), so its kubernetes store needs credentials there. This hands it the
# pod's ServiceAccount (rdmans, deploy/rbac.yaml), in the host's
# /etc/cni/net.d/rdma-netns-ipam.d/:
#   ca.crt                       the cluster's CA (0644)
#   token                        the ServiceAccount's token (0600)
#   rdma-netns-ipam.kubeconfig   the server, and ca.crt and token by their host
#                                paths (0644: it holds no secret)
#   rdma-netns-ipam.conf         with RDMANS_IPAM_FLAT_CONF=true: the flat file
#                                every NAD's rdma-netns-ipam (and the reconciler)
#                                merges, naming this store and kubeconfig; never
#                                over a file someone else wrote there
# Then, every RDMANS_TOKEN_CHECK_INTERVAL seconds, it copies the token (and
# the CA) again when kubelet has rotated it: the plugin reads tokenFile at
# each request, so the kubeconfig itself never changes. Every write is a
# temp file renamed in its directory: a plugin never reads half a file.
#
#   --once                        write (or refresh) once and exit
#   KUBERNETES_SERVICE_HOST/PORT  the API server (kubelet sets them in every pod)
#   RDMANS_SA_DIR                 the mounted ServiceAccount (default
#                                 /var/run/secrets/kubernetes.io/serviceaccount)
#   RDMANS_HOST_ROOT              where the host's / is mounted (default /host;
#                                 empty: run on the host itself)
#   RDMANS_KUBECONFIG_DIR         the directory, as the host names it (default
#                                 /etc/cni/net.d/rdma-netns-ipam.d)
#   RDMANS_TOKEN_CHECK_INTERVAL   seconds between checks (default 60)
#   RDMANS_IPAM_FLAT_CONF         true: write rdma-netns-ipam.conf too (default false)
set -u
me=node-kubeconfig
sa=${RDMANS_SA_DIR:-/var/run/secrets/kubernetes.io/serviceaccount}
host=${RDMANS_HOST_ROOT-/host}
dir=${RDMANS_KUBECONFIG_DIR:-/etc/cni/net.d/rdma-netns-ipam.d}
interval=${RDMANS_TOKEN_CHECK_INTERVAL:-60}
out=$host$dir
once=false

die() {
	echo "$me: error: $*" >&2
	exit 1
}

case "${1-}" in
--once) once=true ;;
'') ;;
*) die "usage: $0 [--once] (unknown argument '$1')" ;;
esac
[ $# -le 1 ] || die "usage: $0 [--once]"

[ -n "${KUBERNETES_SERVICE_HOST-}" ] ||
	die "KUBERNETES_SERVICE_HOST is not set: run this in a pod (kubelet sets it), or set it to the API server's address"
port=${KUBERNETES_SERVICE_PORT:-443}
case "$port" in '' | *[!0-9]*) die "KUBERNETES_SERVICE_PORT '$port' is not a port number" ;; esac
case "$interval" in '' | *[!0-9]*) interval=x ;; esac
if [ "$interval" = x ] || [ "$interval" -eq 0 ]; then
	die "RDMANS_TOKEN_CHECK_INTERVAL '${RDMANS_TOKEN_CHECK_INTERVAL-}' is not a positive number of seconds"
fi
case "$dir" in /*) ;; *) die "RDMANS_KUBECONFIG_DIR '$dir' is not an absolute path" ;; esac
# the kubeconfig quotes them: a quote, a backslash or a line break would end that early
nl='
'
for v in "$dir" "$KUBERNETES_SERVICE_HOST"; do
	case "$v" in *\"* | *\\* | *"$nl"*) die "'$v' has a quote, backslash or line break, which the kubeconfig cannot carry" ;; esac
done
server=$KUBERNETES_SERVICE_HOST
case "$server" in \[*) ;; *:*) server="[$server]" ;; esac
server=https://$server:$port

# check_source NAME: the ServiceAccount's NAME is a non-empty file we can read
check_source() {
	[ -e "$sa/$1" ] || {
		echo "$me: error: no $sa/$1: is the pod's ServiceAccount token mounted (serviceAccountName: rdmans, automountServiceAccountToken on)?" >&2
		return 1
	}
	if [ ! -r "$sa/$1" ] || [ ! -s "$sa/$1" ]; then
		echo "$me: error: $sa/$1 is empty or unreadable" >&2
		return 1
	fi
}

# put NAME MODE: stdin into $out/NAME, atomically; the temp file is mktemp's 0600,
# so a token is never readable by others, not even for a moment
put() {
	tmp=$(mktemp "$out/.$1.XXXXXX") || return 1
	if cat >"$tmp" && chmod "$2" "$tmp" && mv -f "$tmp" "$out/$1"; then
		return 0
	fi
	rm -f "$tmp"
	echo "$me: error: could not write $out/$1" >&2
	return 1
}

# copy_if_changed NAME MODE SOURCE CHANGED: $out/NAME gets SOURCE's content unless it
# has it already; one line when it did ("CHANGED: ..." when it replaced another)
copy_if_changed() {
	if [ ! -e "$out/$1" ]; then
		put "$1" "$2" <"$3" || return 1
		echo "$me: wrote $out/$1"
	elif ! cmp -s "$3" "$out/$1"; then
		put "$1" "$2" <"$3" || return 1
		echo "$me: $4: wrote $out/$1 again"
	fi
}

kubeconfig() {
	cat <<-EOF
		# written by rdmans' node-kubeconfig.sh (the DaemonSet's ipam-kubeconfig container):
		# ServiceAccount rdmans for rdma-netns-ipam's kubernetes store; the token file rotates
		apiVersion: v1
		kind: Config
		clusters:
		- name: kubernetes
		  cluster:
		    server: "$server"
		    certificate-authority: "$dir/ca.crt"
		users:
		- name: rdmans
		  user:
		    tokenFile: "$dir/token"
		contexts:
		- name: rdmans
		  context:
		    cluster: kubernetes
		    user: rdmans
		current-context: rdmans
	EOF
}

# node-uninstall.sh removes the file only while it is exactly this text: change both
flat_conf() {
	printf '{"store": "kubernetes", "kubernetes": {"kubeconfig": "%s/rdma-netns-ipam.kubeconfig"}}\n' "$dir"
}

# write_flat_conf: ours when absent or already ours; someone else's is left, once said
write_flat_conf() {
	[ "${RDMANS_IPAM_FLAT_CONF:-false}" = true ] || return 0
	new=$(mktemp "$out/.rdma-netns-ipam.conf.XXXXXX") || return 1
	flat_conf >"$new"
	if [ ! -e "$out/rdma-netns-ipam.conf" ]; then
		put rdma-netns-ipam.conf 0644 <"$new" && echo "$me: wrote $out/rdma-netns-ipam.conf"
	elif ! cmp -s "$new" "$out/rdma-netns-ipam.conf" && [ -z "${flat_said-}" ]; then
		echo "$me: $out/rdma-netns-ipam.conf is not ours (it is not what we write): left as it is" >&2
		flat_said=1
	fi
	r=$?
	rm -f "$new"
	return $r
}

# refresh: the CA and token when they changed, then the kubeconfig (which names them)
refresh() {
	check_source ca.crt && check_source token &&
		copy_if_changed ca.crt 0644 "$sa/ca.crt" "the cluster's CA changed ($sa/ca.crt)" &&
		copy_if_changed token 0600 "$sa/token" "the token rotated ($sa/token changed)" ||
		return 1
	new=$(mktemp "$out/.rdma-netns-ipam.kubeconfig.XXXXXX") || return 1
	kubeconfig >"$new" &&
		copy_if_changed rdma-netns-ipam.kubeconfig 0644 "$new" "the server or the paths changed"
	r=$?
	rm -f "$new"
	[ $r = 0 ] && write_flat_conf
}

[ -d "${out%/*}" ] || die "no directory ${out%/*}: mount the host's ${dir%/*} there (RDMANS_HOST_ROOT: $host)"
mkdir -p "$out" || die "cannot create $out"
# temp files a killed run left behind
rm -f "$out"/.ca.crt.* "$out"/.token.* "$out"/.rdma-netns-ipam.kubeconfig.* "$out"/.rdma-netns-ipam.conf.*
refresh || exit 1
$once && exit 0

# as PID 1 the shell ignores SIGTERM unless it traps it; sleep in the
# background so the trap runs at once, not after the sleep (which goes too)
trap 'kill $! 2>/dev/null; exit 0' TERM INT
echo "$me: server $server; checking $sa/token every ${interval}s"
while :; do
	sleep "$interval" &
	wait $!
	# a failed refresh keeps the host's token (valid until it expires): said, tried again
	refresh || echo "$me: refresh failed (above); trying again in ${interval}s" >&2
done
