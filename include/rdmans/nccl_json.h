/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The `nccl` block, the one JSON form for NCCL overrides wherever they come
 * from: a config file (/etc/rdmans/nccl.json, the block at its top level),
 * a CNI network config (its own "nccl" key, or one of its plugins'), and
 * the rdmans.io/nccl container annotation:
 *
 *   { "profile": "scnet", "family": "ipv6", "nccl_version": "2.21.5",
 *     "env": { "NCCL_IB_TIMEOUT": 23, "NCCL_IB_TC": null } }
 *
 * "profile" names one of rn_nccl_profile_at() or "auto"; "family" the
 * address family of the RDMA traffic ("ipv4", "ipv6", "auto": IPv4 when the
 * netdevs have IPv4 addresses, the default on dual-stack pods);
 * "nccl_version" the NCCL the job runs when the image does not show it; "env" sets
 * variables (strings or integers) or, with null, removes them. Anything else
 * is an error naming the file and the key, so typos do not go unnoticed.
 * jansson stays inside nccl_json.c (librdmans-json, linked by the front ends).
 */
#ifndef RDMANS_NCCL_JSON_H
#define RDMANS_NCCL_JSON_H

#include <stdbool.h>

#include "rdmans/nccl.h"

/* The config file read when none is named (under $RDMANS_CONFIG_ROOT in tests). */
#define RN_NCCL_CONFIG "/etc/rdmans/nccl.json"

/* Parses a block (JSON text) into l, whose origin names it in messages. */
int rn_nccl_layer_from_json(struct rn_nccl_layer *l, const char *text, struct rn_error *err);

/*
 * Reads a file: a config file (cni = false: the block is the whole file) or a
 * CNI config or conflist (cni = true: the block under "nccl"; none is no
 * error, the layer stays empty). -ENOENT with a message when it is missing.
 */
int rn_nccl_layer_from_file(struct rn_nccl_layer *l, const char *path, bool cni,
			    struct rn_error *err);

#endif
