/* SPDX-License-Identifier: Apache-2.0 */
/* Bringing a plan's devices home ("home" is the calling thread's netns). */
#include "rdmans/attach.h"

#ifndef RDMANS_ATTACH_HOME_H
#define RDMANS_ATTACH_HOME_H

/*
 * Brings the plan's devices home from wherever they are, idempotently: from
 * the pod when its netns (path pod_netns, may be NULL or gone) still exists;
 * else waits up to timeout_ms for the kernel to return them (a destroyed
 * netns hands physical netdevs and RDMA devices back to init_net
 * asynchronously, netdevs possibly renamed "devN"); then restores netdev
 * names, aliases and up/down. Virtual netdevs (veth, ...) die with their
 * netns: gone is fine for them. An RDMA device found nowhere after the wait
 * when the pod netns is gone counts as returned later by the kernel (it
 * keeps its name). -EAGAIN when a physical netdev has not come back. An
 * RDMA device the kernel refuses to take from the pod does not keep the
 * others there: every refusal is in the message (rn_move_home()).
 */
int rn_attach_move_out(const struct rn_attach_plan *plan, const char *pod_netns, int timeout_ms,
		       rn_attach_step_fn step, void *arg, struct rn_error *err);

#endif
