/* SPDX-License-Identifier: Apache-2.0 */
/* The node the NCCL resolver works on, probed from a network namespace (nccl_node.c). */
#ifndef RDMANS_NCCL_NODE_H
#define RDMANS_NCCL_NODE_H

#include "rdmans/cleanup.h"
#include "rdmans/error.h"
#include "rdmans/nccl.h"
#include "rdmans/sysfs.h"
#include "rdmans/sysfs_port.h"

void rn_nccl_node_free(struct rn_nccl_node *node);
static inline void rn_nccl_node_freep(struct rn_nccl_node *node)
{
	rn_nccl_node_free(node);
}
#define _cleanup_nccl_node_ _cleanup_(rn_nccl_node_freep)

/*
 * Reads devices, ports, bound netdevs, GIDs and class/net under
 * rn_sysfs_root(). Addresses are not in sysfs: rn_nccl_probe() adds them,
 * tests use rn_nccl_node_add_addr().
 */
int rn_nccl_node_from_sysfs(struct rn_nccl_node *out, struct rn_error *err);
/* The same from facts read before (doctor's), plus class/net; the GID table is copied. */
int rn_nccl_node_from_facts(const struct rn_sysfs_rdma_facts *sf, struct rn_nccl_node *out,
			    struct rn_error *err);
/*
 * Records address `cidr` ("a.b.c.d/nn", "x::y/nn"; no prefix: a host
 * address) on every port bound to netdev. IPv6 link-local addresses
 * (fe80::/10) are skipped: no routed fabric reaches them.
 */
int rn_nccl_node_add_addr(struct rn_nccl_node *node, const char *netdev, const char *cidr,
			  struct rn_error *err);
/*
 * The whole picture of the netns of nsfd: sysfs (a fresh mount, as seen from
 * inside), the bound netdevs by the one rule (rn_port_netdev_decide_all():
 * RDMA netlink's word where it answers, else sysfs's binding) and their
 * addresses (rtnetlink). nsfd < 0:
 * the caller's netns and /sys as it is mounted (no root needed).
 */
int rn_nccl_probe(int nsfd, struct rn_nccl_node *out, struct rn_error *err);

#endif
