#!/bin/bash
# Debian's kubectl (sid's package, kubectl 1.36 with kustomize 5 built in) for
# the manifest checks: `kubectl kustomize` of deploy/ and its overlays. Debian 12
# ships kubectl 1.20 (kustomize 2), too old for components, and the package name
# kubectl may be taken on a host by another vendor's. Taken from sid through a
# private apt dir (tools/sid-apt.sh), unpacked with dpkg-deb -x into
# $RDMANS_KUBECTL_CACHE (default /var/cache/rdmans-kubectl), never installed.
# Idempotent. Prints the kubectl binary's path.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
log() { echo "kubectl.sh: $*" >&2; }
die() { echo "kubectl.sh: error: $*" >&2; exit 1; }
need_root() { [ "$(id -u)" = 0 ] || die "$1 needs root"; }

dest=${RDMANS_KUBECTL_CACHE:-/var/cache/rdmans-kubectl}
bin=$dest/root/usr/bin/kubectl
if [ -x "$bin" ] && "$bin" version --client >/dev/null 2>&1; then
	echo "$bin"
	exit 0
fi
need_root "fetching sid's kubectl"
# shellcheck source=tools/sid-apt.sh
. "$top/tools/sid-apt.sh"
SID=${RDMANS_VM_CACHE:-/var/cache/rdmans-vm}/current
mkdir -p "$SID" "$dest"
dl=$(mktemp -d)
trap 'rm -rf "$dl"' EXIT
sid_download "$dl" kubectl
rm -rf "$dest/root.new"
dpkg-deb -x "$dl"/kubectl_*.deb "$dest/root.new" || die "cannot unpack sid's kubectl"
"$dest/root.new/usr/bin/kubectl" version --client >/dev/null 2>&1 ||
	die "sid's kubectl does not run on this host"
rm -rf "$dest/root"
mv "$dest/root.new" "$dest/root"
log "$("$bin" version --client | tr '\n' ' ')in $dest/root"
echo "$bin"
