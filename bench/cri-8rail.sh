#!/bin/bash
# One pod with 8 rails, through CRI as kubelet makes it (current world: sid's
# kernel, containerd 2.x; tests/vm/prepare.sh): RunPodSandbox, then
# StopPodSandbox + RemovePodSandbox, of the same pod with
#   rdma-netns x8      8 attachments of the shipped conflist (rdma-netns-ipam),
#                      each moving a netdev and its simhca RDMA device
#   rdma-netns+hl x8   the same with host-local as IPAM (host-device's)
#   host-device x8     8 host-device attachments (host-local), the same netdevs
# interleaved in rounds (containerd's per-runtime-handler cni_conf_dir with
# cni_max_conf_num = 8 gives the pod its 8 networks). Prints ms (median,
# mean) and the ratios; the goal is rdma-netns x8 / host-device x8 <= 1.2.
# TCG emulation: absolute figures are the VM's, the ratio is what carries.
#   bench/cri-8rail.sh [ROUNDS]     (default 5)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bench_release_build cri-8rail.sh all tests/vm/simhca-current.ko
RDMANS_VM_WORLD=current RDMANS_BUILD_DIR=$build RDMANS_SIMHCA_KO=$build/tests/vm/simhca-current.ko \
	TEST_BENCH_ROUNDS=${1:-5} RDMANS_VM_TIMEOUT=${RDMANS_VM_TIMEOUT:-1800} \
	tests/vm/vm-run.sh bench/cri-8rail-guest.sh
