/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The NCCL resolver's rules on a node (nccl_rules.c), in the order
 * rn_nccl_resolve() (nccl_resolve.c) runs them. Each reads the node and the
 * result so far and adds settings, warnings or the ports' verdicts to it;
 * they return 0 or -ENOMEM (the resolver says which resolution ran out).
 */
#ifndef RDMANS_NCCL_RULES_H
#define RDMANS_NCCL_RULES_H

#include <stdbool.h>
#include <stddef.h>

#include "rdmans/error.h"
#include "rdmans/nccl.h"

/* "roce", "ib" or "alibaba-erdma" for the "auto" profile, why into `why`. node may be NULL. */
const char *rn_nccl_rules_auto_profile(const struct rn_nccl_node *node, char *why, size_t len);
/* Decides, for every port of the node, whether NCCL can use it (res->ports, why_not). */
int rn_nccl_rules_ports(const struct rn_nccl_node *node, struct rn_nccl_result *res);
/*
 * -ENODEV with a message saying what was found and why none of it can be
 * used (no RDMA at all, no device here, or each port's why_not).
 */
int rn_nccl_rules_unusable(const struct rn_nccl_node *node, const struct rn_nccl_result *res,
			   struct rn_error *err);
/*
 * The family of the RoCE addresses (asked for by `asked`, else IPv4 when any
 * used RoCE netdev has one, else IPv6), and each used RoCE port's GID in it.
 */
void rn_nccl_rules_family(const struct rn_nccl_node *node, struct rn_nccl_result *res,
			  const struct rn_nccl_layer *asked);
/* NCCL_IB_GID_INDEX, or NCCL_IB_ADDR_FAMILY/RANGE when NCCL picks it per device. */
int rn_nccl_rules_gid(const struct rn_nccl_node *node, struct rn_nccl_result *res);
/* NCCL_IB_HCA: the used ports, exact names. */
/*
 * Of the usable ports, keeps those of the device nearest to each of the
 * container's GPUs (rn_rails_choose()), ranked; the others are off_rail.
 * Nothing changes without GPUs, or when no usable device has a PCI function
 * (a warning says so).
 */
int rn_nccl_rules_rails(const struct rn_nccl_node *node, const struct rn_sysfs_pci_fn *gpus,
			size_t n_gpus, struct rn_nccl_result *res);
/* NCCL_IB_HCA: the used ports, by rail rank when the GPUs chose them. */
int rn_nccl_rules_hca(const struct rn_nccl_node *node, struct rn_nccl_result *res);
/* NCCL_SOCKET_IFNAME (and _FAMILY) from the used ports' netdevs, unless a profile set it. */
int rn_nccl_rules_ifname(const struct rn_nccl_node *node, struct rn_nccl_result *res);
/* Whether an NCCL_SOCKET_IFNAME value takes a netdev of the node. */
bool rn_nccl_rules_ifname_matches(const struct rn_nccl_node *node, const char *value);
/* Warns about a layer's NCCL_IB_HCA entries that match nothing here, or more than meant. */
int rn_nccl_rules_check_hca(const struct rn_nccl_node *node, struct rn_nccl_result *res);

#endif
