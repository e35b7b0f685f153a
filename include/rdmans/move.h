/* SPDX-License-Identifier: Apache-2.0 */
/* Moving an RDMA device (and its netdev) between network namespaces (move.c). */
#ifndef RDMANS_MOVE_H
#define RDMANS_MOVE_H

#include <limits.h>
#include <net/if.h>
#include <stdbool.h>

#include "rdmans/error.h"
#include "rdmans/rdma_nl.h"

struct rn_move_request {
	const char *dev; /* RDMA device name */
	int target_nsfd;
	const char *target_desc; /* for messages: "netns 'pod1'", "the netns of PID 42" */
	bool with_netdev; /* take the netdev bound to port 1 along */
	const char *netdev_name; /* new name of that netdev in the target, NULL keeps it */
	bool host_only; /* a device in another netns is another pod's: -EBUSY, never taken */
};

struct rn_move_result {
	char dev[RN_RDMA_NAME_MAX];
	char from_desc[PATH_MAX]; /* where it was: "host" or the netns path */
	char netdev[IF_NAMESIZE]; /* netdev taken along (name before the move), or "" */
	char netdev_now[IF_NAMESIZE]; /* its name in the target */
};

/*
 * Moves an RDMA device (and optionally its netdev) from whichever netns
 * holds it into the target. Checks first, changes after: nothing moves when
 * the device is unknown, already there, or the mode is shared. The RDMA
 * device moves first; when its netdev then fails to follow, the device is
 * moved back. -EALREADY when it is in the target; with host_only, -EBUSY
 * when it is in any other netns than the host's.
 */
int rn_move(const struct rn_move_request *req, struct rn_move_result *res, struct rn_error *err);

/*
 * Moves RDMA device `name`, known to be in the netns of from_nsfd, into the
 * netns of to_nsfd (no discovery, no mode check: the kernel refuses in
 * shared mode). -ENODEV when from_nsfd does not hold it.
 */
int rn_move_rdma_dev(const char *name, int from_nsfd, int to_nsfd, struct rn_error *err);

#endif
