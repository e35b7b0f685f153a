/* SPDX-License-Identifier: Apache-2.0 */
/* Moving an RDMA device (and its netdev) between network namespaces (move.c). */
#ifndef RDMANS_MOVE_H
#define RDMANS_MOVE_H

#include <limits.h>
#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>

#include "rdmans/error.h"
#include "rdmans/link.h"
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
 * The one mover: RDMA device `rdma`, found by name in the netns of
 * from_nsfd, goes to the netns of to_nsfd and, when netdev_ifindex is set,
 * netdev `netdev` of from_nsfd after it. The RDMA device goes first: a
 * driver that cannot change namespace refuses before anything moved (and
 * rxe, for one, would unregister its device if its netdev left first).
 * No discovery, no mode check (the kernel refuses in shared mode); -ENODEV
 * when from_nsfd does not hold the RDMA device.
 */
struct rn_move_dev {
	const char *rdma; /* NULL: the netdev alone */
	int from_nsfd;
	int to_nsfd;
	int netdev_ifindex; /* 0: no netdev */
	const char *netdev; /* its name in from_nsfd */
	struct rn_link_move_to netdev_to; /* its name, alias and up state in to_nsfd */
	/* look in to_nsfd for a netdev of the final name first (rn_link_move) */
	bool netdev_probe;
	/*
	 * A netdev that fails to follow sends the RDMA device back (the home
	 * loop, from to_nsfd to from_nsfd); the message says how that went,
	 * with these descriptions ("host", "netns 'pod1'").
	 */
	bool undo;
	const char *from_desc;
	const char *to_desc;
};

/* *ret_partial (may be NULL): as rn_link_move_to's, for the netdev. */
int rn_move_dev(const struct rn_move_dev *m, bool *ret_partial, struct rn_error *err);

/* Called after each RDMA device the home loop brought home; non-zero stops the loop. */
typedef int (*rn_move_home_fn)(void *arg, const char *dev, struct rn_error *err);

/* What the home loop brings home: RDMA devices by name, and where home is. */
struct rn_move_home {
	const char (*names)[RN_RDMA_NAME_MAX];
	size_t n;
	int home_nsfd;
	const char *from_desc; /* for "cannot list the RDMA devices in the pod" */
	/* a device not there is a failure (an undo), else skipped: not there (any more) */
	bool all_there;
	/* each failure reads "cannot bring RDMA device X home: ..." (else the kernel's words) */
	bool name_each;
	bool *ret_home; /* n flags, may be NULL: which of names went home */
	rn_move_home_fn done;
	void *arg;
};

/*
 * The one home loop, in the netns that holds the devices (one socket, one
 * dump): each of h->names found there goes to h->home_nsfd. A failure does
 * not stop it: every one goes into err, "; " between them, and the first
 * one's code is returned. Only h->done stops it.
 */
int rn_move_home_here(const struct rn_move_home *h, struct rn_error *err);
/* rn_move_home_here() in the netns of from_nsfd. */
int rn_move_home(int from_nsfd, const struct rn_move_home *h, struct rn_error *err);

#endif
