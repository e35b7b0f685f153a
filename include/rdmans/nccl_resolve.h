/* SPDX-License-Identifier: Apache-2.0 */
/* The NCCL resolver (nccl_resolve.c): a node and override layers in, NCCL settings out. */
#ifndef RDMANS_NCCL_RESOLVE_H
#define RDMANS_NCCL_RESOLVE_H

#include <stdbool.h>

#include "rdmans/error.h"
#include "rdmans/nccl.h"

/*
 * The settings for node (may be NULL with node_static). Fails with -ENODEV,
 * saying what was found and why it cannot be used, when the node has no
 * RDMA port NCCL could use (and node_static is not set).
 */
int rn_nccl_resolve(const struct rn_nccl_node *node, const struct rn_nccl_request *req,
		    struct rn_nccl_result *out, struct rn_error *err);

/*
 * NCCL_IB_HCA, NCCL_IB_GID_INDEX, NCCL_SOCKET_IFNAME: true only of the pod
 * that holds the devices (rdmans-hook resolves them per pod); a node-wide
 * value would be wrong for every other pod.
 */
bool rn_nccl_pod_dependent(const char *name);

#endif
