/* SPDX-License-Identifier: Apache-2.0 */
/* What attach.c lends the other attach files (attach_plan.c, attach_home.c). */
#ifndef RDMANS_ATTACH_PRIVATE_H
#define RDMANS_ATTACH_PRIVATE_H

#include <stdbool.h>

#include "rdmans/attach.h"
#include "rdmans/attach_plan.h"
#include "rdmans/error.h"
#include "rdmans/rdma_nl.h"

/* Tells the caller's step function what was just changed ("moved netdev eth1"). */
__attribute__((format(printf, 4, 5))) int
rn_attach_run_step(rn_attach_step_fn step, void *arg, struct rn_error *err, const char *fmt, ...);
/* The RDMA devices of this netns; no RDMA netlink is an empty list, not an error. */
int rn_attach_rdma_dump_here(struct rn_rdma_devs *devs, bool *kernel, bool *exclusive,
			     struct rn_error *err);
/*
 * Chained mode, at DEL: the IPoIB netdev the kernel made anew on the host
 * when nd's RDMA device came home goes back into the pod as the previous
 * plugin left it (its pod name, its host name in the alias), so that the
 * previous plugin's DEL, which runs next, finds it and takes it home.
 */
int rn_attach_ipoib_back_to_pod(const struct rn_attach_netdev *nd, int pod_nsfd,
				struct rn_error *err);

#endif
