/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Attaching devices to a pod (the core of the rdma-netns CNI plugin): what
 * a selection means (netdevs + RDMA devices), moving them into the pod's
 * netns, configuring the pod interface, waiting for its RoCE GIDs, and
 * bringing everything home again, from whatever state a crash left.
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

#include "rdmans/cni_state.h"
#include "rdmans/error.h"
#include "rdmans/sysfs.h"

#define RN_ATTACH_MAX 8

/* What a network configuration selects; any combination that agrees. */
struct rn_attach_select {
	const char *netdev; /* "device": a netdev name on the host */
	const char *hwaddr; /* MAC of the netdev */
	const char *rdma_dev; /* "rdmaDevice": irdma0, mlx5_3 */
	const char *bus_id; /* "deviceID"/"pciBusID": PCI BDF or auxiliary id */
};

struct rn_attach_netdev {
	char name[IF_NAMESIZE]; /* its name on the host (restored at detach) */
	char pod_name[IF_NAMESIZE]; /* its name in the pod */
	char mac[18];
	char kind[32]; /* "" for a physical netdev */
	char alias[256]; /* IFLA_IFALIAS on the host before the attach */
	int ifindex; /* on the host when resolved */
	bool was_up;
};

struct rn_attach_plan {
	bool chained; /* netdevs[0] was put in the pod by a previous plugin: only RDMA devices move */
	size_t n_netdevs; /* netdevs[0] is the one named CNI_IFNAME in the pod */
	struct rn_attach_netdev netdevs[RN_ATTACH_MAX];
	size_t n_rdma;
	char rdma[RN_ATTACH_MAX][RN_RDMA_NAME_MAX];
	char bus_id[RN_BUS_ID_MAX]; /* PCI BDF (or auxiliary id) behind it, "" when none */
	bool rdma_kernel; /* the kernel has RDMA netlink */
	bool exclusive; /* RDMA netns mode is exclusive */
	/* what rn_attach_resolve_again() may take over (not saved with the plan) */
	bool sysfs_walked; /* rdma[] is what sysfs tied to netdevs[0] */
	uint64_t rdma_view; /* a digest of the RDMA netlink dump it resolved from */
};

/*
 * Main mode: resolves the selection on the host. netdevs[0] (renamed to
 * ifname in the pod) is the selected netdev, or for an RDMA device or bus
 * id the netdev bound to its first port; the other netdevs bound to the
 * same RDMA devices' ports follow under their own names. RDMA devices are
 * those whose ports are bound to the netdevs (RDMA netlink), else those
 * sysfs ties to them. -ENODEV when the selection names nothing here.
 */
int rn_attach_resolve(const struct rn_attach_select *sel, const char *ifname,
		      struct rn_attach_plan *plan, struct rn_error *err);
/*
 * rn_attach_resolve() again, after prev (of the same selection): what sysfs
 * told prev (the RDMA devices tied to a netdev no RDMA port is bound to, the
 * PCI function) is taken over when the netdev and the RDMA netlink dump are
 * the same as prev's, instead of walking sysfs again.
 */
int rn_attach_resolve_again(const struct rn_attach_select *sel, const char *ifname,
			    const struct rn_attach_plan *prev, struct rn_attach_plan *plan,
			    struct rn_error *err);

/*
 * -EOPNOTSUPP when a netdev of the (main mode) plan can never leave the
 * host's network namespace: a loopback or a netns-local netdev
 * (rn_link_netns_immutable). Run it before anything changes.
 */
int rn_attach_check_movable(const struct rn_attach_plan *plan, struct rn_error *err);

/*
 * Chained mode: netdev `ifname` is in the pod already. The RDMA devices are
 * the hints' (rdma_dev, bus_id) or those of the netdev's PCI function.
 * -ENODEV when the netdev is not in the pod.
 */
int rn_attach_resolve_chained(int pod_nsfd, const char *ifname,
			      const struct rn_attach_select *hints, struct rn_attach_plan *plan,
			      struct rn_error *err);

/* Called after each change (for progress records and fault injection); non-zero stops. */
typedef int (*rn_attach_step_fn)(void *arg, const char *what, struct rn_error *err);

/*
 * Moves the plan's RDMA devices, then (main mode) its netdevs, into the
 * pod; netdevs[0] is renamed in the same step and keeps its host name in
 * its alias. Checks the pod for clashing names before changing anything.
 * On failure it stops where it is: undo with rn_attach_move_out().
 */
int rn_attach_move_in(const struct rn_attach_plan *plan, int pod_nsfd, rn_attach_step_fn step,
		      void *arg, struct rn_error *err);

struct rn_attach_ip {
	char cidr[64]; /* "10.0.0.5/24" */
	char gateway[64]; /* "" when none */
};

struct rn_attach_route {
	char dst[64]; /* "0.0.0.0/0", "10.1.0.0/16" */
	char gw[64]; /* "" for the gateway of the address of the same family, or on-link */
};

/* In the pod: brings `ifname` up, adds the addresses, then the routes. */
int rn_attach_configure(int pod_nsfd, const char *ifname, const struct rn_attach_ip *ips,
			size_t n_ips, const struct rn_attach_route *routes, size_t n_routes,
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

/*
 * Brings the plan's devices home from wherever they are, idempotently: from
 * the pod when its netns (path pod_netns, may be NULL or gone) still exists;
 * else waits up to timeout_ms for the kernel to return them (a destroyed
 * netns hands physical netdevs and RDMA devices back to init_net
 * asynchronously, netdevs possibly renamed "devN"); then restores netdev
 * names, aliases and up/down. Virtual netdevs (veth, ...) die with their
 * netns: gone is fine for them. An RDMA device found nowhere after the wait
 * when the pod netns is gone counts as returned later by the kernel (it
 * keeps its name). -EAGAIN when a physical netdev has not come back.
 */
int rn_attach_move_out(const struct rn_attach_plan *plan, const char *pod_netns, int timeout_ms,
		       rn_attach_step_fn step, void *arg, struct rn_error *err);

/* Whether the plan holds RDMA device `name`. */
bool rn_attach_plan_has_rdma(const struct rn_attach_plan *plan, const char *name);

/* ---- soft-RoCE pods (rdma-netns "softRoce") ---- */

/*
 * The name of a pod's rxe device: "rxe" + the first 12 characters of the
 * container ID + "_" + ifname (unique on the node: in shared mode every
 * netns sees every RDMA device, so names are global).
 */
int rn_attach_soft_roce_name(const char *container_id, const char *ifname, char *buf, size_t len,
			     struct rn_error *err);

/*
 * Creates rxe device `name` on `netdev` inside the pod's netns (nsfd),
 * where its RoCE socket then lives. Refused (-EOPNOTSUPP, nothing left
 * behind) in exclusive mode, where an rxe made in a pod lands in init_net,
 * and on kernels whose rdma_rxe has one socket for every netns (before the
 * per-netns sockets, rxe_ns: its traffic cannot reach another pod).
 */
int rn_attach_soft_roce_add(int nsfd, const char *name, const char *netdev, struct rn_error *err);

/* Deletes rxe device `name` (0 when it is gone already: its netns died with it). */
int rn_attach_soft_roce_del(const char *name, struct rn_error *err);

/* The plan on disk, the owner search and the device locks: attach_state.h. */
#include "rdmans/attach_state.h"

#endif
