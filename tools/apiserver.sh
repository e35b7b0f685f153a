#!/bin/bash
# A real Kubernetes API server for the tests of rdma-netns-ipam's kubernetes
# store, built from Debian's packages and cached: fast when it is already there.
#
# Debian sid ships k8s.io/apiextensions-apiserver (golang-k8s-apiextensions-
# apiserver-dev) with its main package and every dependency: the custom-resource
# server kube-apiserver itself runs, over etcd. It is built with sid's Go in a
# sid root made by mmdebstrap (never installed on the host), as a static binary
# (CGO_ENABLED=0) so that it runs on this Debian 12 host; sid's etcd comes from
# the same root (Debian 12's etcd 3.4 is older than what Kubernetes 1.36 wants).
# The cold build takes about 10 minutes on 2 cores (most of it `go build`).
#
# Layout ($RDMANS_APISERVER_CACHE, default /var/cache/rdmans-apiserver):
#   $CACHE/bin/apiextensions-apiserver   static
#   $CACHE/bin/etcd                      from the sid root (run through its loader if dynamic)
#   $CACHE/root/                         the sid root (kept for etcd's libraries)
#   $CACHE/stamp                         what was built, from which package versions
# Prints the bin directory on stdout, nothing else.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
log() { echo "apiserver.sh: $*" >&2; }
die() { echo "apiserver.sh: error: $*" >&2; exit 1; }
need_root() { [ "$(id -u)" = 0 ] || die "$1 needs root"; }

CACHE=${RDMANS_APISERVER_CACHE:-/var/cache/rdmans-apiserver}
pkgs="golang-go golang-k8s-apiextensions-apiserver-dev etcd-server ca-certificates"
# bump when the build below changes
FORMAT=1

ready() { [ -x "$CACHE/bin/apiextensions-apiserver" ] && [ -x "$CACHE/bin/etcd" ] &&
	[ "$(head -n 1 "$CACHE/stamp" 2>/dev/null)" = "format $FORMAT: $pkgs" ]; }
if ready; then
	echo "$CACHE/bin"
	exit 0
fi
need_root "building the API server"
mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
flock 9
if ready; then
	echo "$CACHE/bin"
	exit 0
fi
command -v mmdebstrap >/dev/null || die "mmdebstrap is missing (tools/install-deps.sh installs it)"
# sid_mirror
# shellcheck source=tools/sid-apt.sh
. "$top/tools/sid-apt.sh"
start=$(date +%s)
root=$CACHE/root
rm -rf "$CACHE/root.new" "$CACHE/bin.new"
log "making a sid root with $pkgs (mmdebstrap)"
# shellcheck disable=SC2086
mmdebstrap --quiet --variant=minbase --aptopt='Acquire::Check-Valid-Until "false"' \
	--include="$(echo $pkgs | tr ' ' ',')" sid "$CACHE/root.new" \
	"deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $(sid_mirror) sid main" >&2 ||
	die "mmdebstrap of the sid root failed"
made=$(date +%s)
log "sid root made in $((made - start)) s; go build of apiextensions-apiserver (about 10 min on 2 cores)"
# /proc for the Go toolchain, in a mount namespace of its own so nothing is left mounted
unshare -m --propagation private sh -c '
	mount -t proc proc "$1/proc" &&
	chroot "$1" env GO111MODULE=off GOPATH=/usr/share/gocode GOCACHE=/tmp/gocache \
		GOFLAGS=-mod=mod CGO_ENABLED=0 HOME=/tmp PATH=/usr/lib/go/bin:/usr/bin:/bin \
		go build -o /tmp/apiextensions-apiserver k8s.io/apiextensions-apiserver' sh "$CACHE/root.new" >&2 ||
	die "go build of k8s.io/apiextensions-apiserver failed"
built=$(date +%s)
rm -rf "$CACHE/root.new/tmp/gocache"
mkdir -p "$CACHE/bin.new"
mv "$CACHE/root.new/tmp/apiextensions-apiserver" "$CACHE/bin.new/"
# etcd: the binary itself when static, else a wrapper that runs it with the root's loader
if file -L "$CACHE/root.new/usr/bin/etcd" 2>/dev/null | grep -q 'statically linked'; then
	cp "$CACHE/root.new/usr/bin/etcd" "$CACHE/bin.new/etcd"
else
	cat >"$CACHE/bin.new/etcd" <<EOF
#!/bin/sh
# sid's etcd, dynamically linked: run with the sid root's own loader and libraries
exec $root/lib64/ld-linux-x86-64.so.2 --library-path $root/lib/x86_64-linux-gnu:$root/usr/lib/x86_64-linux-gnu $root/usr/bin/etcd "\$@"
EOF
	chmod +x "$CACHE/bin.new/etcd"
fi
rm -rf "$root" "$CACHE/bin"
mv "$CACHE/root.new" "$root"
mv "$CACHE/bin.new" "$CACHE/bin"
{
	echo "format $FORMAT: $pkgs"
	chroot "$root" dpkg-query -W golang-go golang-k8s-apiextensions-apiserver-dev etcd-server
	echo "cold build: mmdebstrap $((made - start)) s, go build $((built - made)) s"
} >"$CACHE/stamp"
log "built in $((built - start)) s ($(tail -n 1 "$CACHE/stamp"))"
"$CACHE/bin/apiextensions-apiserver" --help >/dev/null 2>&1 || die "the built apiextensions-apiserver does not run on this host"
"$CACHE/bin/etcd" --version >/dev/null 2>&1 || die "sid's etcd does not run on this host"
echo "$CACHE/bin"
