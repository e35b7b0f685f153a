/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Attaching devices to a pod (the core of the rdma-netns CNI plugin):
 * moving a plan's netdevs and RDMA devices (attach_plan.h) into the pod's
 * netns, configuring the pod interface, waiting for its RoCE GIDs, CHECK.
 * attach_home.h brings everything home again.
 *
 * "Home" is the netns of the calling thread (the host's, for a CNI plugin).
 * Nothing here prints; every function returns 0 or a negative errno with
 * err set.
 */
#ifndef RDMANS_ATTACH_H
#define RDMANS_ATTACH_H

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>

#include "rdmans/attach_plan.h"
#include "rdmans/error.h"

/* Called after each change (for progress records and fault injection); non-zero stops. */
typedef int (*rn_attach_step_fn)(void *arg, const char *what, struct rn_error *err);

/*
 * Moves the plan's RDMA devices, then (main mode) its netdevs, into the
 * pod; netdevs[0] is renamed in the same step, keeps its host name in its
 * alias and, with `up`, is brought up there too. *ret_up says whether it is
 * up (false: the kernel refused; rn_attach_configure() tries again and
 * says why). Checks the pod for clashing names before changing anything.
 * An IPoIB netdev is made anew by the kernel when its RDMA device moves: it
 * is found again (main and chained mode) and *ret_remade says so (chained
 * mode: the previous plugin's addresses went with the old one).
 * On failure it stops where it is: undo with rn_attach_move_out().
 */
int rn_attach_move_in(const struct rn_attach_plan *plan, int pod_nsfd, bool up, bool *ret_up,
		      bool *ret_remade, rn_attach_step_fn step, void *arg, struct rn_error *err);

struct rn_attach_ip {
	char cidr[64]; /* "10.0.0.5/24" */
	char gateway[64]; /* "" when none */
};

struct rn_attach_route {
	char dst[64]; /* "0.0.0.0/0", "10.1.0.0/16" */
	char gw[64]; /* "" for the gateway of the address of the same family, or on-link */
};

/*
 * In the pod: brings `ifname` up (unless is_up: rn_attach_move_in() did),
 * adds the addresses, then the routes. Nothing to do is no entry into the pod.
 */
int rn_attach_configure(int pod_nsfd, const char *ifname, bool is_up,
			const struct rn_attach_ip *ips, size_t n_ips,
			const struct rn_attach_route *routes, size_t n_routes,
			rn_attach_step_fn step, void *arg, struct rn_error *err);

/*
 * Waits until every RoCE RDMA device of the plan bound to netdevs[0] in the
 * pod has a RoCE v2 GID for each address ("10.0.0.5" or "10.0.0.5/24").
 * -ETIMEDOUT naming the first missing one after timeout_ms.
 */
int rn_attach_wait_gids(int pod_nsfd, const struct rn_attach_plan *plan, const char *const *addrs,
			size_t n_addrs, int timeout_ms, struct rn_error *err);

/* CHECK: netdevs, RDMA devices, addresses and GIDs are where the plan put them. */
int rn_attach_verify(int pod_nsfd, const struct rn_attach_plan *plan, const char *const *addrs,
		     size_t n_addrs, struct rn_error *err);

#endif
