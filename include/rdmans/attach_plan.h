/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a selection means: the netdevs and RDMA devices a pod gets (a plan),
 * resolved before anything changes. Nothing here prints; every function
 * returns 0 or a negative errno with err set.
 */
#ifndef RDMANS_ATTACH_PLAN_H
#define RDMANS_ATTACH_PLAN_H

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
	bool ipoib; /* re-made by the kernel when its RDMA device moves: found by ib_gid after */
	uint8_t ib_gid[16];
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

/* Whether the plan holds RDMA device `name`. */
bool rn_attach_plan_has_rdma(const struct rn_attach_plan *plan, const char *name);

#endif
