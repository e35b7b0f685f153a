#!/bin/bash
# deploy/Containerfile builds, as the README's first deployment step says,
# with no registry, for amd64 and for arm64: Debian 12 bases made here
# (mmdebstrap --variant=minbase, --arch=arm64 for the second, podman import
# --arch), one local manifest list docker.io/library/debian:12 (and :12-slim)
# holding both, as the registry's does, then `podman build --pull=never
# --platform linux/ARCH` of the same file and a manifest list of the two images.
# The amd64 image's installer (the DaemonSet's init container) installs into a
# host root with no libc and no library, where the CNI plugins answer VERSION;
# `rdmans --version` and one exporter scrape run from the image. The arm64
# image holds only AArch64 ELF files (read with readelf on this host), its node
# tree node-aarch64 with its loader, the amd64 image's labels, entrypoint and
# command, and under qemu-user (binfmt_misc, registered here when it is not)
# its rdmans runs and its installer installs node-aarch64 into a bare root.
# Root; podman with its own containers.conf and storage under
# /var/cache/rdmans-image (the base tarballs and layers are reused next time).
# Build times are printed as diagnostics ("# build amd64: N s").
set -u
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
. "$here/../node/node-lib.sh"
tap_fail_unless_root "podman, chroot"
for p in podman mmdebstrap arch-test qemu-aarch64-static readelf runc curl jq; do
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
	[ -z "${arm_root:-}" ] || pm image unmount "$tag-arm64" >/dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT

# --- qemu-user for arm64 -------------------------------------------------------------------
# The arm64 image's one RUN (apt-get in its debian:12-slim), mmdebstrap's
# arm64 base and the arm64 checks run arm64 code through binfmt_misc: mounted
# and qemu-aarch64 registered here when they are not (kernel state, gone at
# reboot), from qemu-user-static's own binfmt.d line, whose F flag opens the
# interpreter now, so that it also runs inside containers and chroots.
binfmt=/proc/sys/fs/binfmt_misc
if [ ! -e "$binfmt/qemu-aarch64" ]; then
	[ -e "$binfmt/register" ] || mount -t binfmt_misc binfmt_misc "$binfmt" ||
		vm_fail "cannot mount binfmt_misc on $binfmt"
	cat /usr/lib/binfmt.d/qemu-aarch64.conf >"$binfmt/register" ||
		vm_fail "cannot register qemu-aarch64 with binfmt_misc"
fi
vm_check "qemu-aarch64 is registered with binfmt_misc, enabled, with the F flag" bash -c \
	'grep -qx enabled "$1" && grep -q "^flags: .*F" "$1" || { cat "$1"; exit 1; }' _ "$binfmt/qemu-aarch64"

# --- Debian 12 bases, made here: one manifest list for both machines --------------------
# base ARCH TARBALL: localhost/rdmans-base:bookworm-ARCH, mmdebstrap'd once into TARBALL
base() {
	local arch=$1 tar=$2
	pm image exists "localhost/rdmans-base:bookworm-$arch" && return 0
	if [ ! -s "$tar" ]; then
		mmdebstrap --arch="$arch" --variant=minbase --format=tar bookworm "$tar.new" >"$tmp/mmdebstrap.log" 2>&1 ||
			{ vm_diag "$(tail -20 "$tmp/mmdebstrap.log")"; vm_fail "mmdebstrap --arch=$arch bookworm failed"; }
		mv "$tar.new" "$tar"
	fi
	pm import --arch "$arch" --os linux "$tar" "localhost/rdmans-base:bookworm-$arch" >/dev/null 2>&1 ||
		vm_fail "podman import of the Debian 12 $arch base failed"
}
t0=$SECONDS
base amd64 "$cache/bookworm-minbase.tar"
base arm64 "$cache/bookworm-minbase-arm64.tar"
vm_diag "bases: $((SECONDS - t0)) s"
# The Containerfile's FROM names resolve, per --platform, through a manifest
# list, as they do at docker.io; made again whenever it is not exactly the two
# bases (an older run's plain amd64 image named debian:12, a new base).
want=$(for a in amd64 arm64; do
	echo "linux/$a $(pm image inspect --format '{{.Digest}}' "localhost/rdmans-base:bookworm-$a")"
done)
list_of() { pm manifest inspect "$1" 2>/dev/null | jq -r '.manifests[] | "\(.platform.os)/\(.platform.architecture) \(.digest)"' | sort; }
if ! pm manifest exists docker.io/library/debian:12 || [ "$(list_of docker.io/library/debian:12)" != "$want" ]; then
	# a list goes with manifest rm (untag leaves its name); a plain image (an older
	# run's) loses that one name: podman 4.3's `manifest rm` of one deletes the
	# image, and `untag IMAGE` alone removes all its names (a base's among them)
	for n in docker.io/library/debian:12 docker.io/library/debian:12-slim; do
		if pm manifest exists "$n"; then pm manifest rm "$n"; else pm untag "$n" "$n"; fi >/dev/null 2>&1
	done
	pm manifest create docker.io/library/debian:12 >/dev/null &&
		pm manifest add docker.io/library/debian:12 containers-storage:localhost/rdmans-base:bookworm-amd64 >/dev/null &&
		pm manifest add docker.io/library/debian:12 containers-storage:localhost/rdmans-base:bookworm-arm64 >/dev/null ||
		vm_fail "podman manifest create docker.io/library/debian:12 failed"
fi
pm tag docker.io/library/debian:12 docker.io/library/debian:12-slim
vm_check "docker.io/library/debian:12 and :12-slim: one manifest list of the local linux/amd64 and linux/arm64 bases" \
	vm_expect_eq "$want" "$(list_of docker.io/library/debian:12-slim)"

# --- the images ----------------------------------------------------------------------------
# the last run's images go, their cached layers stay (the apt-get steps are the slow part).
# Debian 12's podman 4.3 sets TARGET* from --platform but no BUILDPLATFORM: given here,
# the build stage runs on this machine and cross-compiles for arm64 (deploy/Containerfile).
pm rmi -f "$tag" "$tag-arm64" >/dev/null 2>&1
pm manifest rm "$tag-list" >/dev/null 2>&1
# build ARCH TAG: podman build --platform linux/ARCH of deploy/Containerfile as TAG
build() {
	local t0=$SECONDS rc=0
	pm build --pull=never --network=host --platform "linux/$1" \
		--build-arg BUILDPLATFORM="linux/$(dpkg --print-architecture)" \
		-f "$src/deploy/Containerfile" -t "$2" "$src" >"$tmp/build-$1.log" 2>&1 || rc=$?
	vm_diag "build $1: $((SECONDS - t0)) s, $(grep -c -- '--> Using cache' "$tmp/build-$1.log") steps from the layer cache"
	if [ "$rc" = 0 ]; then
		vm_ok "podman build --pull=never --platform linux/$1 -f deploy/Containerfile . succeeds"
	else
		vm_not_ok "podman build --pull=never --platform linux/$1 -f deploy/Containerfile . succeeds"
		vm_diag "$(tail -30 "$tmp/build-$1.log")"
		vm_done
	fi
}
build amd64 "$tag"
build arm64 "$tag-arm64"
version=$(sed -n "s/^ *version : '\(.*\)',$/\1/p" "$src/meson.build")
for t in "$tag" "$tag-arm64"; do
	vm_diag "$t: $(pm image inspect "$t" --format '{{.Os}}/{{.Architecture}}, {{.Size}} bytes')"
done
out=$(pm run --rm "$tag" --version 2>&1)
vm_check "the image carries OCI labels: title, version (meson.build's), licenses" vm_expect_eq \
	"rdmans $version Apache-2.0" \
	"$(pm image inspect "$tag" --format '{{index .Labels "org.opencontainers.image.title"}} {{index .Labels "org.opencontainers.image.version"}} {{index .Labels "org.opencontainers.image.licenses"}}' 2>&1)"
vm_check "rdmans --version from the image" vm_expect_eq "rdmans $version" "$out"
out=$(pm run --rm --entrypoint /usr/sbin/rdmans-nri "$tag" --version 2>&1)
vm_check "the image holds rdmans-nri (the DaemonSet's nri container)" vm_expect_contains "$out" "rdmans-nri "
out=$(pm run --rm --entrypoint /usr/sbin/rdmans-device-plugin "$tag" --version 2>&1)
vm_check "the image holds rdmans-device-plugin (the DaemonSet's device-plugin container)" \
	vm_expect_contains "$out" "rdmans-device-plugin "

# --- the arm64 image -------------------------------------------------------------------------
inspect='{{.Os}}/{{.Architecture}} {{json .Labels}} {{json .Config.Entrypoint}} {{json .Config.Cmd}}'
vm_check "the arm64 image is linux/arm64 with the amd64 image's labels, entrypoint and command" vm_expect_eq \
	"$(pm image inspect "$tag" --format "$inspect" | sed 's|^linux/amd64 |linux/arm64 |')" \
	"$(pm image inspect "$tag-arm64" --format "$inspect" 2>&1)"
# its files as they are, read on this host (readelf reads any machine's ELF)
arm_root=$(pm image mount "$tag-arm64") || vm_fail "podman image mount $tag-arm64 failed"
# elf_machines DIR: "COUNT MACHINE" for the ELF files under DIR (readelf's "Machine:")
# (readelf passes over the files that are not ELF, saying so on stderr)
elf_machines() {
	find "$1" -xdev -type f -size +63c -print0 | xargs -0 readelf -h 2>/dev/null |
		sed -n 's/^ *Machine: *//p' | sort | uniq -c | sed 's/^ *//'
}
bins="usr/sbin/rdmans usr/sbin/rdmans-nri usr/sbin/rdmans-device-plugin usr/lib/rdmans/cni/rdma-netns usr/lib/rdmans/cni/rdma-netns-ipam"
out=$(for b in $bins; do echo "$b $(readelf -h "$arm_root/$b" 2>&1 | sed -n 's/^ *Machine: *//p')"; done)
vm_check "its rdmans, rdmans-nri, rdmans-device-plugin and CNI plugins are AArch64 ELF files" vm_expect_eq \
	"$(for b in $bins; do echo "$b AArch64"; done)" "$out"
out=$(elf_machines "$arm_root")
vm_check "every ELF file in it is AArch64, the Debian base's and libraries' too (none for x86-64)" bash -c \
	'[ "$(wc -l <<<"$1")" = 1 ] && [ "${1#* }" = AArch64 ] && [ "${1%% *}" -gt 100 ] || { echo "$1"; exit 1; }' _ "$out"
vm_diag "ELF files in the arm64 image: $out"
tree=$arm_root/usr/lib/rdmans/node-aarch64
out=$(cat "$tree/machine" 2>&1; ls "$arm_root/usr/lib/rdmans" 2>&1 | grep -E '^node(-[a-z0-9_]+)?$' | tr '\n' ' ')
vm_check "its node tree is /usr/lib/rdmans/node-aarch64 (machine aarch64), the only one" vm_expect_eq \
	"aarch64
node-aarch64 " "$out"
prefix=$(cat "$tree/prefix" 2>/dev/null)
out=$(for b in "$tree"/bin/*; do
	echo "${b##*/} $(readelf -h "$b" | sed -n 's/^ *Machine: *//p') $(node_elf_interp "$b")"
done; readelf -h "$tree"/lib-*/ld-linux-aarch64.so.1 2>&1 | sed -n 's/^ *Machine: *//p')
want_tree=$(for b in rdma-netns rdma-netns-ipam rdmans rdmans-hook; do
	echo "$b AArch64 $prefix/$(cd "$tree" && ls -d lib-*)/ld-linux-aarch64.so.1"
done; echo AArch64)
vm_check "... its binaries are AArch64, asking for the tree's own ld-linux-aarch64.so.1, which is there" \
	vm_expect_eq "$want_tree" "$out"
pm image unmount "$tag-arm64" >/dev/null 2>&1
arm_root=''
# and run, under qemu-user (binfmt_misc above)
out=$(pm run --rm --platform linux/arm64 "$tag-arm64" --version 2>&1)
vm_check "rdmans --version from the arm64 image (podman run --platform linux/arm64, qemu-user)" \
	vm_expect_eq "rdmans $version" "$out"
out=$(pm run --rm --platform linux/arm64 --entrypoint /bin/uname "$tag-arm64" -m 2>&1)
vm_check "... where uname -m says aarch64" vm_expect_eq aarch64 "$out"
# the two daemons the node tree does not carry: they run from the image only
for d in rdmans-nri rdmans-device-plugin; do
	out=$(pm run --rm --platform linux/arm64 --entrypoint "/usr/sbin/$d" "$tag-arm64" --version 2>&1)
	vm_check "$d --version from the arm64 image (its libraries: Debian's arm64 packages)" \
		vm_expect_eq "$d $version" "$out"
done
arm_host=$tmp/arm-host
node_root "$arm_host"
vm_check "the arm64 image's node-install.sh installs node-aarch64 into a bare host root" \
	pm run --rm --privileged --network=host --platform linux/arm64 -v "$arm_host:/host" \
	--entrypoint /usr/lib/rdmans/node-install.sh "$tag-arm64"
out=$(in_root "$arm_host" CNI_COMMAND=VERSION -- /opt/cni/bin/rdma-netns </dev/null 2>&1)
vm_check "... where its rdma-netns (AArch64, qemu-user) answers VERSION" vm_expect_eq 1.1.0 "$(jq -r .cniVersion <<<"$out" 2>&1)" "$out"

# --- one manifest list: both images ----------------------------------------------------------
want=$(for t in "$tag" "$tag-arm64"; do pm image inspect "$t" --format '{{.Os}}/{{.Architecture}} {{.Digest}}'; done | sort)
pm manifest create "$tag-list" >/dev/null &&
	pm manifest add "$tag-list" "containers-storage:$tag" >/dev/null &&
	pm manifest add "$tag-list" "containers-storage:$tag-arm64" >/dev/null
vm_check "a manifest list carries both images, linux/amd64 and linux/arm64" vm_expect_eq "$want" "$(list_of "$tag-list")"

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
