#!/bin/bash
# Installs what rdmans needs to build and test, from Debian 12's packages.
# Idempotent: installs only what is missing.
set -euo pipefail

packages=(
	# build
	gcc meson ninja-build pkg-config
	libmnl-dev libnl-3-dev libnl-route-3-dev libjansson-dev libibverbs-dev librdmacm-dev
	libmicrohttpd-dev # rdmans exporter's HTTP server
	libcurl4-openssl-dev # rdma-netns-ipam's etcd store (libcurl4 is dlopen()ed at run time)
	# tests: namespaces, containers, peers
	iproute2 util-linux jq bc python3-yaml runc containernetworking-plugins etcd-server etcd-client
	openssl # rdma-netns-ipam's TLS tests make their certificates
	# CDI spec validation (tests/cdi/validate.py)
	python3-jsonschema
	# promtool check metrics on the exporter's output (prometheus: ~96 MB installed)
	prometheus
	# vm suite: qemu, an initramfs, Debian's kernel (fetched by tests/vm/prepare.sh)
	qemu-system-x86 busybox-static cpio kmod rdma-core ibverbs-utils rdmacm-utils perftest
	# format check
	clang-format
	# fuzz targets (tests/fuzz, tools/fuzz.sh): clang and its libFuzzer runtime
	clang libclang-rt-14-dev
)

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "installing: ${missing[*]}"
	if [ "$(id -u)" != 0 ]; then
		echo "install-deps: run as root (apt-get install needs it)" >&2
		exit 1
	fi
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
