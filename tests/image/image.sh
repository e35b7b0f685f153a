#!/bin/bash
# deploy/Containerfile builds, as the README's first deployment step says,
# with no registry: a Debian 12 base made here (mmdebstrap --variant=minbase,
# podman import as docker.io/library/debian:12 and :12-slim), then
# `podman build --pull=never`. The image's installer (the DaemonSet's init
# container) installs into a host root with no libc and no library, where the
# CNI plugins answer VERSION; `rdmans --version` and one exporter scrape run
# from the image. Root; podman with its own containers.conf and storage under
# /var/cache/rdmans-image (the base tarball and layers are reused next time).
set -u
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
. "$here/../node/node-lib.sh"
tap_fail_unless_root "podman, chroot"
for p in podman mmdebstrap runc curl jq; do
	command -v "$p" >/dev/null || vm_fail "$p is not installed (tools/install-deps.sh)"
done
cache=${RDMANS_IMAGE_CACHE:-/var/cache/rdmans-image}
tag=localhost/rdmans:test
tmp=$(mktemp -d /tmp/rnimg.XXXXXX)
root=$tmp/host
mkdir -p "$cache/storage" "$cache/run"

# podman on this kind of machine (tests/../test-machine notes): runc, cgroupfs,
# no journald, rlimits it may set, CNI networking; storage of our own.
cat >"$tmp/containers.conf" <<'EOF'
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
[network]
network_backend = "cni"
EOF
cat >"$tmp/storage.conf" <<EOF
[storage]
driver = "overlay"
graphroot = "$cache/storage"
runroot = "$cache/run"
EOF
export CONTAINERS_CONF=$tmp/containers.conf CONTAINERS_STORAGE_CONF=$tmp/storage.conf
pm() { podman --events-backend file "$@"; }
cleanup() {
	pm rm -f rnimg-exporter >/dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT

# --- a Debian 12 base, made here ------------------------------------------------------------
if ! pm image exists docker.io/library/debian:12; then
	if [ ! -s "$cache/bookworm-minbase.tar" ]; then
		mmdebstrap --variant=minbase --format=tar bookworm "$cache/bookworm-minbase.tar.new" >"$tmp/mmdebstrap.log" 2>&1 ||
			{ vm_diag "$(tail -20 "$tmp/mmdebstrap.log")"; vm_fail "mmdebstrap bookworm failed"; }
		mv "$cache/bookworm-minbase.tar.new" "$cache/bookworm-minbase.tar"
	fi
	pm import "$cache/bookworm-minbase.tar" docker.io/library/debian:12 >/dev/null 2>&1 ||
		vm_fail "podman import of the Debian 12 base failed"
fi
pm tag docker.io/library/debian:12 docker.io/library/debian:12-slim
vm_check "a local Debian 12 base is docker.io/library/debian:12 and :12-slim" \
	pm image exists docker.io/library/debian:12-slim

# --- the image ---------------------------------------------------------------------------
# the last run's image goes, its cached layers stay (the apt-get steps are the slow part)
pm rmi -f "$tag" >/dev/null 2>&1
rc=0
pm build --pull=never --network=host -f "$src/deploy/Containerfile" -t "$tag" "$src" >"$tmp/build.log" 2>&1 || rc=$?
if [ "$rc" = 0 ]; then
	vm_ok "podman build --pull=never -f deploy/Containerfile . succeeds"
else
	vm_not_ok "podman build --pull=never -f deploy/Containerfile . succeeds"
	vm_diag "$(tail -30 "$tmp/build.log")"
	vm_done
fi
out=$(pm run --rm "$tag" --version 2>&1)
vm_check "the image carries OCI labels: title, version (meson.build's), licenses" vm_expect_eq \
	"rdmans $(sed -n "s/^ *version : '\(.*\)',$/\1/p" "$src/meson.build") Apache-2.0" \
	"$(pm image inspect "$tag" --format '{{index .Labels "org.opencontainers.image.title"}} {{index .Labels "org.opencontainers.image.version"}} {{index .Labels "org.opencontainers.image.licenses"}}' 2>&1)"
vm_check "rdmans --version from the image" vm_expect_eq "rdmans $(sed -n "s/^ *version : '\(.*\)',$/\1/p" "$src/meson.build")" "$out"
out=$(pm run --rm --entrypoint /usr/sbin/rdmans-nri "$tag" --version 2>&1)
vm_check "the image holds rdmans-nri (the DaemonSet's nri container)" vm_expect_contains "$out" "rdmans-nri "
out=$(pm run --rm --entrypoint /usr/sbin/rdmans-device-plugin "$tag" --version 2>&1)
vm_check "the image holds rdmans-device-plugin (the DaemonSet's device-plugin container)" \
	vm_expect_contains "$out" "rdmans-device-plugin "

# --- the installer, as the DaemonSet's init container runs it ------------------------------
node_root "$root"
mkdir -p "$root/etc/containers/oci/hooks.d"
vm_check "the image's node-install.sh installs into a bare host root" \
	pm run --rm --privileged --network=host -v "$root:/host" --entrypoint /usr/lib/rdmans/node-install.sh "$tag"
out=$(in_root "$root" CNI_COMMAND=VERSION -- /opt/cni/bin/rdma-netns </dev/null 2>&1)
vm_check "rdma-netns from the image answers VERSION on the bare host" vm_expect_eq 1.1.0 "$(jq -r .cniVersion <<<"$out" 2>&1)" "$out"
out=$(in_root "$root" CNI_COMMAND=VERSION -- /opt/cni/bin/rdma-netns-ipam </dev/null 2>&1)
vm_check "rdma-netns-ipam from the image answers VERSION on the bare host" vm_expect_eq 1.1.0 "$(jq -r .cniVersion <<<"$out" 2>&1)" "$out"
out=$(in_root "$root" -- /opt/rdmans/bin/rdmans --version 2>&1)
vm_check "the installed rdmans runs on the bare host" vm_expect_contains "$out" "rdmans "
vm_check "the hooks.d JSON names the installed hook" grep -q '"path": "/opt/rdmans/bin/rdmans-hook"' \
	"$root/etc/containers/oci/hooks.d/rdmans-hook.json"
# and uninstall.yaml's init container: the image's node-uninstall.sh (dash) takes it all away again
vm_check "the image's node-uninstall.sh removes what node-install.sh wrote" \
	pm run --rm --privileged --network=host -v "$root:/host" --entrypoint /usr/lib/rdmans/node-uninstall.sh "$tag"
vm_check "... the node tree, the CNI plugins, the hooks.d JSON" bash -c \
	'[ ! -e "$1/opt/rdmans" ] && [ ! -e "$1/opt/cni/bin/rdma-netns" ] && [ ! -e "$1/opt/cni/bin/rdma-netns-ipam" ] &&
	[ ! -e "$1/etc/containers/oci/hooks.d/rdmans-hook.json" ] || { find "$1/opt" "$1/etc"; exit 1; }' _ "$root"

# --- one exporter scrape, as the DaemonSet's main container serves it -----------------------
port=$((22000 + $$ % 1000))
while ss -Hltn "sport = :$port" | grep -q .; do port=$((port + 1)); done
pm run -d --name rnimg-exporter --privileged --network=host --pid=host "$tag" \
	exporter --listen "127.0.0.1:$port" >/dev/null || vm_fail "podman run of the exporter failed"
vm_poll 30 curl -fsS -o /dev/null "http://127.0.0.1:$port/metrics" 2>/dev/null
out=$(curl -fsS "http://127.0.0.1:$port/metrics" 2>&1)
vm_check "the image's exporter serves Prometheus text on /metrics" vm_expect_contains "$out" "# TYPE rdmans_"
[ -n "$out" ] || vm_diag "$(pm logs rnimg-exporter 2>&1 | tail -5)"
vm_done
