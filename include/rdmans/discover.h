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
#include "rdmans/rdma.h"

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
 * PID of the lowest process whose cgroup path names container `id` (a full
 * ID or a unique prefix of at least 6 characters). -ESRCH when none runs,
 * -ENOTUNIQ when processes of different network namespaces match.
 */
int rn_container_pid(const char *id, pid_t *ret_pid, struct rn_error *err);

/*
 * Every process's cgroup paths, read once (/proc/PID/cgroup), to ask of
 * many containers whether they still run: _has() is true when some
 * process's cgroup path names container `id` (the rule above).
 */
struct rn_cgroup_snapshot;
int rn_cgroup_snapshot_take(struct rn_cgroup_snapshot **ret, struct rn_error *err);
bool rn_cgroup_snapshot_has(const struct rn_cgroup_snapshot *s, const char *id);
void rn_cgroup_snapshot_free(struct rn_cgroup_snapshot *s);

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
