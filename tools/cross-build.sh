#!/bin/bash
# Cross-builds every rdmans binary for another architecture with Debian 12's
# cross compiler and that architecture's -dev packages (multiarch), -Werror,
# then checks that each binary is an ELF for that machine. Tests are not run.
#
#   tools/cross-build.sh [ARCH]      ARCH: arm64 (the default)
#
# Installs what is missing (as root; dpkg --add-architecture, apt-get update
# once when needed). The build directory, build-cross-ARCH
# ($RDMANS_CROSS_BUILD), is kept: a second run only rebuilds what changed.
# Another architecture is one line in arch_row and its tools/cross/TRIPLET.ini.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
log() { echo "cross-build: $*" >&2; }
die() { echo "cross-build: error: $*" >&2; exit 1; }

# ARCH -> GNU triplet, readelf's "Machine:", the dynamic loader's file name
arch_row() {
	case $1 in
	arm64) echo "aarch64-linux-gnu AArch64 ld-linux-aarch64.so.1" ;;
	*) return 1 ;;
	esac
}

arch=${1:-arm64}
row=$(arch_row "$arch") || die "unknown ARCH '$arch' (known: arm64)"
read -r triplet machine loader <<<"$row"
cross_file=$top/tools/cross/$triplet.ini
[ -f "$cross_file" ] || die "no meson cross file $cross_file"
build=${RDMANS_CROSS_BUILD:-build-cross-$arch}
jobs=${RDMANS_CROSS_JOBS:-2}

# Native: the cross compiler and its libstdc++ (grpc's core is C++: linked
# from its archive, it needs libstdc++.so, which only the -cross package puts
# where the cross gcc looks), the code generator, the checks.
native=(gcc-"$triplet" libstdc++-12-dev-"$arch"-cross meson ninja-build protobuf-c-compiler
	file binutils patchelf)
# For ARCH, side by side with the native ones (all Multi-Arch: same; apt
# keeps both at one version, so installing them may upgrade native ones).
# pkgconf:ARCH is the TRIPLET-pkg-config the cross file names.
target=(libc6-dev pkgconf libmnl-dev libnl-3-dev libnl-route-3-dev libjansson-dev
	libibverbs-dev librdmacm-dev libmicrohttpd-dev libcurl4-openssl-dev
	libprotobuf-c-dev libgrpc-dev)

installed() { dpkg-query -W -f='${Status}\n' "$1" 2>/dev/null | grep -q '^install ok installed$'; }
missing=()
for p in "${native[@]}"; do installed "$p" || missing+=("$p"); done
for p in "${target[@]}"; do installed "$p:$arch" || missing+=("$p:$arch"); done
if [ ${#missing[@]} -gt 0 ]; then
	[ "$(id -u)" = 0 ] || die "missing packages, run as root to install them: ${missing[*]}"
	t0=$SECONDS
	updated=0
	if ! dpkg --print-foreign-architectures | grep -qx "$arch"; then
		log "dpkg --add-architecture $arch"
		dpkg --add-architecture "$arch"
		# no package list for ARCH yet
		apt-get update -qq >&2 || die "apt-get update failed"
		updated=1
	fi
	log "installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	if ! apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; then
		[ "$updated" = 1 ] && die "apt-get install failed"
		log "running apt-get update"
		apt-get update -qq >&2 || die "apt-get update failed"
		apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
			die "apt-get install ${missing[*]} failed"
	fi
	log "installed in $((SECONDS - t0)) s"
fi

# rdmans-nri's and rdmans-device-plugin's .proto files (cached after the first run)
protos=$(tools/fetch-protos.sh) || die "tools/fetch-protos.sh failed"

t0=$SECONDS
if [ ! -f "$build/build.ninja" ]; then
	# The release image's options (deploy/Containerfile) with -Werror; no
	# tests: they cannot run here, and simhca.ko is built for this kernel.
	rm -rf "$build"
	setup_log=$(mktemp /tmp/cross-setup.XXXXXX)
	meson setup "$build" --cross-file "$cross_file" --buildtype=release -Dwerror=true \
		-Dtests=false -Dnri=enabled -Ddevice_plugin=enabled -Dnri_proto_dir="$protos" -Dnode_bundle=true \
		>"$setup_log" 2>&1 || {
		tail -n 30 "$setup_log" >&2
		die "meson setup failed (whole log: $setup_log)"
	}
	rm -f "$setup_log"
fi
ninja -C "$build" -j "$jobs" >"$build/ninja.log" 2>&1 || {
	grep -E -B2 -A8 'error|FAILED' "$build/ninja.log" | tail -n 60 >&2
	die "$arch build failed (whole log: $build/ninja.log)"
}

bins=(src/cni/rdma-netns src/ipam/rdma-netns-ipam src/hook/rdmans-hook src/nri/rdmans-nri
	src/device-plugin/rdmans-device-plugin src/cli/rdmans)
bad=0
for b in "${bins[@]}"; do
	f=$build/$b
	if [ ! -f "$f" ]; then
		echo "cross-build: $b was not built" >&2 && bad=1 && continue
	fi
	m=$(readelf -h "$f" | sed -n 's/^ *Machine: *//p')
	interp=$(readelf -l "$f" | sed -n 's/.*Requesting program interpreter: \(.*\)]$/\1/p')
	if [ "$m" != "$machine" ] || [ "${interp##*/}" != "$loader" ]; then
		echo "cross-build: $b is not a $machine ELF with $loader: $(file -b "$f")" >&2
		bad=1 && continue
	fi
	printf '  %-22s %8s bytes  %s\n' "${b##*/}" "$(stat -c %s "$f")" "$(file -b "$f" | cut -d, -f1-2)"
done
[ "$bad" = 0 ] || die "$arch: some binaries are missing or for another machine"

# The node tree (deploy/node-bundle.sh: the binaries with this machine's loader
# and libraries), installed under the build directory only.
dest=$top/$build/destdir
[ "${build#/}" = "$build" ] || dest=$build/destdir
# installed again only when ninja rebuilt something (a few seconds otherwise)
if ! grep -q 'no work to do' "$build/ninja.log" || [ ! -f "$dest/.installed" ]; then
	rm -rf "$dest"
	DESTDIR=$dest meson install -C "$build" --no-rebuild >"$build/install.log" 2>&1 || {
		tail -n 20 "$build/install.log" >&2
		die "meson install (the node tree) failed (whole log: $build/install.log)"
	}
	touch "$dest/.installed"
fi
tree=$(echo "$dest"/usr/local/lib/rdmans/node-*)
if [ ! -f "$tree/machine" ] || [ ! -e "$(echo "$tree"/lib-*/"$loader")" ]; then
	die "no node tree with $loader under $dest/usr/local/lib/rdmans"
fi
log "$arch node tree: ${tree#"$top"/} ($(cat "$tree/machine"), $(du -sb "$tree" | cut -f1) bytes)"
log "$arch: ${#bins[@]} binaries, $machine ELF, built in $((SECONDS - t0)) s ($build)"
