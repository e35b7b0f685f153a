/* SPDX-License-Identifier: Apache-2.0 */
/* rdma-netns DEL and GC (del.c): 0, or -1 with ctx's failure set. */
#ifndef RDMANS_CNI_DEL_H
#define RDMANS_CNI_DEL_H

#include <stdbool.h>

#include "cni.h"
#include "rdmans/cni_state.h"

int cni_cmd_del(struct cni_ctx *ctx);
int cni_cmd_gc(struct cni_ctx *ctx);

/*
 * DEL of one attachment from its state (also GC and ADD's rollback), one
 * that reads whole (not damaged):
 * devices home, IPAM DEL (call_ipam), device-info file and state removed.
 * take_locks: take the device locks (ADD's rollback holds them already).
 * container_id/ifname: the IPAM DEL's, NULL for the caller's.
 */
int cni_teardown(struct cni_ctx *ctx, const char *state_name, struct rn_cni_attachment *att,
		 bool call_ipam, bool take_locks, const char *container_id, const char *ifname);

/*
 * DEL with input that ADD refuses (a bad CNI_IFNAME, CNI_CONTAINERID,
 * CNI_NETNS, CNI_ARGS, network name or config), the failure recorded in
 * ctx: 0 (DEL succeeds, a note on stderr) when no state file is this DEL's
 * (none names its container and interface), as the runtime's DEL after a
 * refused ADD must; -1 keeps the refusal.
 */
int cni_del_refused(struct cni_ctx *ctx);

#endif
