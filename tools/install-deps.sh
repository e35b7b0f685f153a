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
	protobuf-c-compiler libprotobuf-c-dev # rdmans-nri's NRI messages (tools/fetch-protos.sh)
	libgrpc-dev # rdmans-device-plugin's gRPC (grpc's C core), kubelet's messages as above
	libstdc++-12-dev # grpc's core is C++: linking it from its archives needs libstdc++.so
	# tests: namespaces, containers, peers
	iproute2 util-linux jq bc python3-yaml runc strace containernetworking-plugins etcd-server etcd-client
	openssl # rdma-netns-ipam's TLS tests make their certificates
	# kubelet's side of the device plugin and PodResources APIs (tests/vm/kubelet.py)
	python3-grpcio python3-grpc-tools python3-protobuf
	# CDI spec validation (tests/cdi/validate.py)
	python3-jsonschema
	# promtool check metrics on the exporter's output (prometheus: ~96 MB installed)
	prometheus
	# runtime suite: the container runtimes that drive rdmans in the VM (tests/runtime)
	podman containerd
	# vm suite: qemu, an initramfs, Debian's kernel (fetched by tests/vm/prepare.sh)
	qemu-system-x86 busybox-static cpio kmod rdma-core ibverbs-utils rdmacm-utils perftest
	# format check
	clang-format
	# node suite: the node tree (deploy/node-bundle.sh) and a busybox-only host root
	patchelf
	# image suite: deploy/Containerfile from local Debian 12 bases (tests/image/image.sh), for
	# amd64 and arm64: the arm64 base and the arm64 image's apt-get run under qemu-user
	# (binfmt_misc; the test registers qemu-aarch64), mmdebstrap checks that with arch-test
	podman mmdebstrap qemu-user-static arch-test
	# fuzz targets (tests/fuzz, tools/fuzz.sh): clang and its libFuzzer runtime
	clang libclang-rt-14-dev
)
# manifests: Kubernetes' schemas come from npm (kubernetes-models); any node >= 14 does
command -v npm >/dev/null || packages+=(nodejs npm)

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

# Kubernetes' OpenAPI schemas for tests/unit/manifests.py (k8s-validate.js), in a
# cache directory, not in git: kubernetes-models 4.x runs on Debian 12's node 18.
npm_dir=${RDMANS_NPM_DIR:-/var/cache/rdmans-npm}
npm_pkgs=(kubernetes-models@4.5.1 @kubernetes-models/validate@4.0.0)
if ! grep -qs '"version": "4.5.1"' "$npm_dir/node_modules/kubernetes-models/package.json"; then
	echo "installing into $npm_dir: ${npm_pkgs[*]}"
	mkdir -p "$npm_dir"
	npm install --prefix "$npm_dir" --no-audit --no-fund --loglevel=error "${npm_pkgs[@]}" >/dev/null
fi

# The NRI and ttrpc .proto files rdmans-nri is generated from: Debian's
# golang-github-containerd-{nri,ttrpc}-dev, from sid (Debian 12 has neither).
"$(dirname "$0")/fetch-protos.sh" >/dev/null
# The manifest checks' `kubectl kustomize`: sid's kubectl (kustomize 5), unpacked,
# never installed (tools/kubectl.sh; Debian 12's kubectl 1.20 predates components).
"$(dirname "$0")/kubectl.sh" >/dev/null
