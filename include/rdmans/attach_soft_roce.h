/* SPDX-License-Identifier: Apache-2.0 */
/* Soft-RoCE pods (rdma-netns "softRoce"): an rxe device on the pod's netdev, inside the pod. */
#ifndef RDMANS_ATTACH_SOFT_ROCE_H
#define RDMANS_ATTACH_SOFT_ROCE_H

#include <stddef.h>

#include "rdmans/error.h"

/*
 * The name of a pod's rxe device: "rxe" + the first 12 characters of the
 * container ID + "_" + ifname (unique on the node: in shared mode every
 * netns sees every RDMA device, so names are global).
 */
int rn_attach_soft_roce_name(const char *container_id, const char *ifname, char *buf, size_t len,
			     struct rn_error *err);

/*
 * Creates rxe device `name` on `netdev` inside the pod's netns (nsfd),
 * where its RoCE socket then lives. Refused (-EOPNOTSUPP, nothing left
 * behind) in exclusive mode, where an rxe made in a pod lands in init_net,
 * and on kernels whose rdma_rxe has one socket for every netns (before the
 * per-netns sockets, rxe_ns: its traffic cannot reach another pod).
 */
int rn_attach_soft_roce_add(int nsfd, const char *name, const char *netdev, struct rn_error *err);

/* Deletes rxe device `name` (0 when it is gone already: its netns died with it). */
int rn_attach_soft_roce_del(const char *name, struct rn_error *err);

#endif
