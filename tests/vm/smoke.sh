#!/bin/bash
# Guest script (run it with vm-run.sh): proves the VM has what the RDMA tests
# need: a real RDMA stack with soft-RoCE, the rdma tool, network namespaces,
# and the kernel's netns-mode rule (switching is refused while another
# network namespace exists). Output is TAP.
set -u # not -e: a failed check must not stop the others
# shellcheck source=guest-lib.sh
. "${RDMANS_VM_LIB:-$(dirname "$0")/guest-lib.sh}"

[ "${RDMANS_IN_VM:-}" = 1 ] || vm_fail "run me inside the VM: tests/vm/vm-run.sh $0"
vm_diag "kernel $(uname -r)"

if [ -n "${RDMANS_BUILD_DIR:-}" ]; then
	# The build tree must not be hidden by a guest mount (e.g. a tmpfs on /tmp).
	vm_check "build dir $RDMANS_BUILD_DIR is visible in the guest" \
		sh -c '[ -n "$(ls -A "$1")" ]' sh "$RDMANS_BUILD_DIR"
fi

vm_check "rdma modules load" vm_load_rdma || vm_fail "no RDMA stack"
vm_check "rdma_rxe is loaded" test -d /sys/module/rdma_rxe
vm_check "veth pair veth0/veth1" vm_veth veth0 veth1 || vm_fail "no veth"
vm_check "rdma link add rxe0 type rxe netdev veth0" \
	rdma link add rxe0 type rxe netdev veth0 || vm_fail "cannot create rxe0"

vm_check "rdma dev lists rxe0" rdma dev
vm_expect_contains "$VM_OUT" "rxe0" "rdma dev" || vm_not_ok "rdma dev output names rxe0"

vm_check "rdma link shows rxe0 on veth0" rdma link show rxe0/1
vm_expect_contains "$VM_OUT" "netdev veth0" "rdma link" || vm_not_ok "rdma link output names veth0"

vm_check "rdma system show works" rdma system show
vm_expect_contains "$VM_OUT" "netns shared" "rdma system show" ||
	vm_not_ok "netns mode starts shared"

gid_file=/sys/class/infiniband/rxe0/ports/1/gids/0
if gid=$(cat "$gid_file" 2>&1) && [ -n "$gid" ] &&
	[ "$gid" != 0000:0000:0000:0000:0000:0000:0000:0000 ]; then
	vm_ok "rxe0 port 1 GID 0 is set ($gid)"
else
	vm_not_ok "rxe0 port 1 GID 0 is set"
	vm_diag "$gid_file: ${gid:-}"
fi

vm_check "ibv_devinfo -l lists rxe0" ibv_devinfo -l
vm_expect_contains "$VM_OUT" "rxe0" "ibv_devinfo -l" || vm_not_ok "ibv_devinfo output names rxe0"
vm_check "uverbs char device exists" test -c /dev/infiniband/uverbs0

# With only init_net, the mode can be switched both ways.
vm_check "rdma system set netns exclusive (no other netns)" rdma system set netns exclusive
vm_check "rdma system show says exclusive" rdma system show
vm_expect_contains "$VM_OUT" "netns exclusive" "rdma system show" || vm_not_ok "mode is exclusive"
vm_check "rdma system set netns shared (no other netns)" rdma system set netns shared

vm_check "ip netns add x" ip netns add x
vm_check "ip netns exec x sees its own lo" ip netns exec x ip link show lo
vm_check "rdma system show inside netns x" ip netns exec x rdma system show

# Another netns exists: the kernel refuses the switch with EBUSY.
rc=0
out=$(rdma system set netns exclusive 2>&1) || rc=$?
if [ "$rc" != 0 ] && vm_expect_contains "$out" "Device or resource busy" "rdma system set"; then
	vm_ok "switching to exclusive with netns x present fails with EBUSY"
else
	vm_not_ok "switching to exclusive with netns x present fails with EBUSY"
	vm_diag "exit $rc: $out"
fi
vm_check "mode is still shared" rdma system show
vm_expect_contains "$VM_OUT" "netns shared" "rdma system show" || vm_not_ok "mode stayed shared"

# Once the namespace is gone (asynchronously), switching works again.
vm_check "ip netns del x" ip netns del x
switched=0
for _ in $(seq 50); do
	if rdma system set netns exclusive 2>/dev/null; then switched=1; break; fi
	sleep 0.1
done
if [ "$switched" = 1 ]; then
	vm_ok "switching works again after netns x is deleted"
	rdma system set netns shared || vm_diag "could not switch back to shared"
else
	vm_not_ok "switching works again after netns x is deleted"
fi

vm_check "rdma link delete rxe0" rdma link delete rxe0
vm_done
