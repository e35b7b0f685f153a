#!/bin/bash
# Guest script: rails on a node with a real PCI topology (RDMANS_VM_QEMU_EXTRA
# from meson: two NUMA nodes, an expander host bridge on each, two PCI
# bridges under each host bridge, two e1000 NICs and one stand-in GPU under
# each bridge). A simhca HCA sits on each NIC, its PCI function its parent.
# sysfs shows each expander's own bridge above ours, so the paths read as
# host bridge, root port, switch: a GPU and the NICs of its bridge are "same
# PCIe switch", the other bridge of its node "same root port".
# The GPUs are qemu "edu" functions, named GPUs by a driver tree of this
# script's own (/proc/driver/nvidia/gpus, /dev/nvidiaN): the one fake part.
# A pod holds all eight netdevs (as host-device or SR-IOV CNI leaves them);
# runc containers of that pod, each with its own GPUs, get from rdmans-hook
# the RDMA devices nearest to those GPUs (rdmans.io/devices: gpu-aligned) and
# an NCCL_IB_HCA of their own.
set -u
. "$RDMANS_VM_LIB"
. "$(dirname "$0")/../netns/hook-lib.sh"
B=$RDMANS_BUILD_DIR
R=$B/src/cli/rdmans
HOOK=$B/src/hook/rdmans-hook

vm_load_rdma exclusive
vm_load_simhca
cg=/sys/fs/cgroup
mountpoint -q "$cg" || mount -t cgroup2 none "$cg" || vm_fail "cannot mount cgroup2 for runc"
tmp=$(mktemp -d /tmp/rdmans-rails.XXXXXX)
has_line() { printf '%s\n' "$1" | grep -qE "$2"; } # has_line TEXT REGEX

vm_pci_rails
vm_diag "NICs: ${ifname[*]} -> ${dev[*]}; GPUs: ${gpu[*]}"
gpus_out=$("$R" dev gpus 2>&1)
printf '%s\n' "$gpus_out" | sed 's/^/# /'
# the nearest NIC of GPU i is the first on its bridge: NICs 2i and 2i+1 share it
for i in 0 1 2 3; do
	vm_check "rdmans dev gpus: GPU ${gpu[i]} (NUMA $((i / 2))) is nearest to ${dev[2 * i]}, same PCIe switch" \
		has_line "$gpus_out" "^${gpu[i]} +$i .* $((i / 2)) +${dev[2 * i]} +same PCIe switch"
done

# The pod: every NIC's netdev with an address; the RDMA devices stay on the host.
ip netns add pod || vm_fail "netns"
ip -n pod link set lo up
for i in "${!ifname[@]}"; do
	if ! { ip link set "${ifname[i]}" netns pod && ip -n pod addr add "10.60.$i.2/24" dev "${ifname[i]}" &&
		ip -n pod link set "${ifname[i]}" up; }; then vm_fail "netdev ${ifname[i]} into the pod"; fi
done
# as CNI leaves a pod's interfaces: up, with carrier (the e1000 reports its link a moment later)
vm_check "the eight NICs are up: their RDMA ports are ACTIVE" \
	vm_poll 60 sh -c '[ "$(rdma link show | grep -c "state ACTIVE")" = 8 ]'
vm_check "the pod holds no RDMA device yet" sh -c "[ -z \"\$(ip netns exec pod rdma dev show)\" ]"

CAT='["sh","-c","cat /etc/nccl.conf"]'
gpu_devices() { # the linux.devices entries of /dev/nvidiaN for each N given
	local n out=""
	for n in "$@"; do
		out="$out${out:+,}{\"path\": \"/dev/nvidia$n\", \"type\": \"c\", \"major\": 195, \"minor\": $n, \"fileMode\": 438, \"uid\": 0, \"gid\": 0}"
	done
	echo "[$out]"
}
hca_line() { printf '%s\n' "$1" | grep '^NCCL_IB_HCA='; }
ctr() { # ctr ID WHAT JQ_FILTER: a runc container of the pod, run; its output in $HL_OUT
	hl_bundle "$tmp/$1" "$HOOK" /var/run/netns/pod "$CAT" "$3"
	if hl_run "$tmp/runc" "$tmp/$1" "$1"; then vm_ok "$2 runs"; else
		vm_not_ok "$2 runs"
		vm_diag "$HL_ERR"
	fi
}

# --- container A: GPUs 0 and 1 (NUMA node 0), gpu-aligned --------------------------------
ctr a "container A (GPUs 0, 1; gpu-aligned)" \
	".annotations = {\"rdmans.io/devices\": \"gpu-aligned\"} | .linux.devices = $(gpu_devices 0 1)"
vm_check "A: ${dev[0]} and ${dev[2]}, beside GPUs 0 and 1, moved into the pod" \
	sh -c "ip netns exec pod rdma dev show ${dev[0]} && ip netns exec pod rdma dev show ${dev[2]}"
vm_check "A: no other device moved" vm_expect_eq 2 "$(ip netns exec pod rdma dev show | wc -l)"
vm_check "A: NCCL_IB_HCA==${dev[0]},${dev[2]} (GPU 0's first)" vm_expect_eq "NCCL_IB_HCA==${dev[0]},${dev[2]}" "$(hca_line "$HL_OUT")"
vm_check "A: nccl.conf says which GPU chose which device" vm_expect_contains "$HL_OUT" \
	"GPU ${gpu[0]}: ${dev[0]} (same PCIe switch); GPU ${gpu[1]}: ${dev[2]} (same PCIe switch)"
vm_check "A: a GID index for them" has_line "$HL_OUT" '^NCCL_IB_GID_INDEX=[0-9]'
vm_check "A: the devices of other GPUs are not in its settings" sh -c "! printf '%s' \"\$1\" | grep -q '^NCCL_IB_HCA=.*${dev[4]}'" - "$HL_OUT"

# --- container B of the same pod: GPUs 3 and 2 (NUMA node 1), gpu-aligned -------------------
ctr b "container B (GPUs 3, 2; gpu-aligned)" \
	".annotations = {\"rdmans.io/devices\": \"gpu-aligned\"} | .linux.devices = $(gpu_devices 3 2)"
vm_check "B: ${dev[4]} and ${dev[6]} moved in too (4 in the pod)" \
	sh -c "ip netns exec pod rdma dev show ${dev[4]} && ip netns exec pod rdma dev show ${dev[6]} && [ \$(ip netns exec pod rdma dev show | wc -l) = 4 ]"
vm_check "B: NCCL_IB_HCA==${dev[4]},${dev[6]}: its own rails, not A's" vm_expect_eq "NCCL_IB_HCA==${dev[4]},${dev[6]}" "$(hca_line "$HL_OUT")"
vm_check "B: says so per GPU" vm_expect_contains "$HL_OUT" "GPU ${gpu[2]}: ${dev[4]} (same PCIe switch); GPU ${gpu[3]}: ${dev[6]} (same PCIe switch)"

# --- the pod's devices fixed: NVIDIA_VISIBLE_DEVICES narrows NCCL_IB_HCA to the nearest ----
ctr c "container C (NVIDIA_VISIBLE_DEVICES=1)" \
	".annotations = {\"rdmans.io/nccl-profile\": \"roce\"} | .process.env += [\"NVIDIA_VISIBLE_DEVICES=1\"]"
vm_check "C: NCCL_IB_HCA==${dev[2]}, the one of the pod's four beside GPU 1" vm_expect_eq "NCCL_IB_HCA==${dev[2]}" "$(hca_line "$HL_OUT")"
vm_check "C: nothing moved (still 4 in the pod)" vm_expect_eq 4 "$(ip netns exec pod rdma dev show | wc -l)"
hl_bundle "$tmp/d" "$HOOK" /var/run/netns/pod "$CAT" \
	".annotations = {\"rdmans.io/nccl-profile\": \"roce\"} | .process.env += [\"NVIDIA_VISIBLE_DEVICES=${uuid[3]},${uuid[0]}\"]"
hl_run "$tmp/runc" "$tmp/d" d || vm_diag "$HL_ERR"
vm_check "D (GPUs by UUID, 3 and 0): NCCL_IB_HCA==${dev[0]},${dev[6]}" vm_expect_eq "NCCL_IB_HCA==${dev[0]},${dev[6]}" "$(hca_line "$HL_OUT")"
hl_bundle "$tmp/e" "$HOOK" /var/run/netns/pod "$CAT" ".annotations = {\"rdmans.io/nccl-profile\": \"roce\"}"
hl_run "$tmp/runc" "$tmp/e" e || vm_diag "$HL_ERR"
vm_check "E (no GPU): every device of the pod" vm_expect_eq "NCCL_IB_HCA==${dev[0]},${dev[2]},${dev[4]},${dev[6]}" "$(hca_line "$HL_OUT")"
hl_bundle "$tmp/g" "$HOOK" /var/run/netns/pod "$CAT" \
	".annotations = {\"rdmans.io/nccl-profile\": \"roce\"} | .linux.devices = $(gpu_devices 2) | .process.env += [\"NVIDIA_VISIBLE_DEVICES=all\"]"
hl_run "$tmp/runc" "$tmp/g" g || vm_diag "$HL_ERR"
vm_check "G (/dev/nvidia2, and a CUDA image's NVIDIA_VISIBLE_DEVICES=all): NCCL_IB_HCA==${dev[4]}" \
	vm_expect_eq "NCCL_IB_HCA==${dev[4]}" "$(hca_line "$HL_OUT")"

out=$(ip netns exec pod "$R" env --device /dev/nvidia2 --explain 2>&1)
printf '%s\n' "$out" | grep -i "rail\|GPU\|NCCL_IB_HCA" | sed 's/^/# env: /'
vm_check "rdmans env --device /dev/nvidia2 agrees" vm_expect_contains "$out" $'\n'"NCCL_IB_HCA==${dev[4]}"$'\n'
vm_check "  --explain says why ${dev[0]} is left out" vm_expect_contains "$out" "not the nearest RDMA device of any of this container's GPUs"

# --- bad input changes nothing ---------------------------------------------------------------
hl_bundle "$tmp/f" "$HOOK" /var/run/netns/pod "$CAT" \
	".annotations = {\"rdmans.io/devices\": \"gpu-aligned\"} | .process.env += [\"NVIDIA_VISIBLE_DEVICES=7\"]"
if hl_run "$tmp/runc" "$tmp/f" f; then vm_not_ok "a gpu-aligned container naming GPU 7 (of 4) is refused"; else
	vm_ok "a gpu-aligned container naming GPU 7 (of 4) is refused"; fi
vm_diag "$HL_ERR"
vm_check "  the hook says which name and what the node has" vm_expect_contains "$HL_ERR" "NVIDIA_VISIBLE_DEVICES names GPU 7, but this node has 4 GPU(s)"
vm_check "  and nothing moved" vm_expect_eq 4 "$(ip netns exec pod rdma dev show | wc -l)"
rc=0
out=$("$R" env --netns pod --visible-devices 9 2>&1) || rc=$?
vm_check "rdmans env --visible-devices 9 is refused (exit $rc)" sh -c "[ $rc -ne 0 ]"
vm_check "  naming GPU 9" vm_expect_contains "$out" "names GPU 9, but this node has 4 GPU(s)"

# --- the pod goes away: the devices come home ------------------------------------------------
ip netns del pod
vm_check "deleting the pod returns the four HCAs to the host" vm_poll 60 sh -c \
	"rdma dev show ${dev[0]} && rdma dev show ${dev[2]} && rdma dev show ${dev[4]} && rdma dev show ${dev[6]}"
umount /proc/driver
vm_done
