/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where RDMA devices are: devices that moved into another netns vanish from
 * the host's sysfs and netlink, so each netns is asked in turn.
 */
#ifndef RDMANS_DISCOVER_H
#define RDMANS_DISCOVER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "rdmans/error.h"
#include "rdmans/netns.h"
#include "rdmans/rdma_nl.h"

struct rn_located_dev {
	struct rn_rdma_dev dev; /* owns dev.ports */
	struct rn_netns_entry netns;
};

struct rn_located_devs {
	size_t n;
	struct rn_located_dev *v;
	bool exclusive; /* netns mode when listed; in shared mode every device is listed once, in the host */
};

void rn_located_devs_free(struct rn_located_devs *devs);
static inline void rn_located_devs_freep(struct rn_located_devs *devs)
{
	rn_located_devs_free(devs);
}
#define _cleanup_located_devs_ _cleanup_(rn_located_devs_freep)

/*
 * In the caller's netns: opens RDMA netlink, reads the netns mode when
 * exclusive is not NULL, and dumps the devices into *out; the socket is left
 * open in *ret for more requests (statistics). Nothing is kept on failure.
 */
int rn_rdma_open_dump(struct rn_rdma **ret, bool *exclusive, struct rn_rdma_devs *out,
		      struct rn_error *err);

/* Dumps the devices of the netns of nsfd (a thread joins it for the dump). */
int rn_rdma_dump_in(int nsfd, struct rn_rdma_devs *out, struct rn_error *err);

/* Every device in every netns reachable through rn_netns_list(). */
int rn_discover_all(struct rn_located_devs *out, struct rn_error *err);

/*
 * Finds device `name`: in the caller's netns first, then in every other.
 * out->netns.path opens the netns holding it. -ENODEV when it is nowhere.
 * *ret_exclusive (optional) gets the netns mode. Free out->dev with rn_rdma_dev_free().
 */
int rn_discover_find(const char *name, struct rn_located_dev *out, bool *ret_exclusive,
		     struct rn_error *err);

/*
 * The RDMA devices a pod's network attachment gave it (what rdmans.io/rdma=all
 * means for a pod): those in the netns of pod_nsfd, then those still in the
 * caller's netns that belong to the PCI function of a netdev in the pod (a
 * netdev that host-device or the SR-IOV plugin moved without its RDMA
 * device). Never a device of another pod, nor one whose netdev stayed
 * outside. names[0..*ret_in_pod) are already in the pod.
 */
int rn_discover_pod(int pod_nsfd, char (*names)[RN_RDMA_NAME_MAX], size_t max, size_t *ret_n,
		    size_t *ret_in_pod, struct rn_error *err);

#endif
