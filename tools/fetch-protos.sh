#!/bin/bash
# The .proto files rdmans-nri and rdmans-device-plugin are built from, taken
# from Debian's packages, never copied by hand into this tree:
#   golang-github-containerd-nri-dev    pkg/api/api.proto (the NRI API)
#   golang-github-containerd-ttrpc-dev  request.proto, proto/status.proto (ttrpc)
#   golang-github-kubernetes-kubelet-dev  pkg/apis/deviceplugin/v1beta1/api.proto,
#                                         pkg/apis/podresources/v1/api.proto (kubelet)
# Debian 12 ships none (NRI 0.8 is what containerd 2.1 speaks), so they come
# from sid through a private apt dir (tools/sid-apt.sh), unpacked with dpkg-deb -x
# into $RDMANS_PROTO_CACHE (default /var/cache/rdmans-protos). Idempotent.
# Prints the directory that holds github.com/containerd/{nri,ttrpc} and k8s.io/kubelet.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
log() { echo "fetch-protos: $*" >&2; }
die() { echo "fetch-protos: error: $*" >&2; exit 1; }
need_root() { [ "$(id -u)" = 0 ] || die "$1 needs root"; }

dest=${RDMANS_PROTO_CACHE:-/var/cache/rdmans-protos}
src=$dest/root/usr/share/gocode/src
if [ -f "$src/github.com/containerd/nri/pkg/api/api.proto" ] &&
	[ -f "$src/github.com/containerd/ttrpc/request.proto" ] &&
	[ -f "$src/k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1/api.proto" ] &&
	[ -f "$src/k8s.io/kubelet/pkg/apis/podresources/v1/api.proto" ]; then
	echo "$src"
	exit 0
fi
# shellcheck source=tools/sid-apt.sh
. "$top/tools/sid-apt.sh"
SID=${RDMANS_VM_CACHE:-/var/cache/rdmans-vm}/current
mkdir -p "$SID" "$dest"
dl=$(mktemp -d)
trap 'rm -rf "$dl"' EXIT
sid_download "$dl" golang-github-containerd-nri-dev golang-github-containerd-ttrpc-dev \
	golang-github-kubernetes-kubelet-dev
rm -rf "$dest/root.new"
for deb in "$dl"/*.deb; do
	dpkg-deb -x "$deb" "$dest/root.new" || die "cannot unpack $deb"
done
[ -f "$dest/root.new/usr/share/gocode/src/github.com/containerd/nri/pkg/api/api.proto" ] ||
	die "golang-github-containerd-nri-dev has no pkg/api/api.proto"
[ -f "$dest/root.new/usr/share/gocode/src/k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1/api.proto" ] ||
	die "golang-github-kubernetes-kubelet-dev has no pkg/apis/deviceplugin/v1beta1/api.proto"
rm -rf "$dest/root"
mv "$dest/root.new" "$dest/root"
log "protos: $(ls "$dl" | tr '\n' ' ')unpacked in $dest/root"
echo "$src"
