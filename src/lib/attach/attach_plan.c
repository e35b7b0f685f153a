// SPDX-License-Identifier: Apache-2.0
/*
 * What a selection means (rdmans/attach_plan.h): the netdevs and RDMA
 * devices to attach, resolved on the host (main mode) or in the pod
 * (chained mode), before anything changes.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "rdmans/attach.h"
#include "rdmans/attach_plan.h"
#include "rdmans/discover.h"
#include "rdmans/link.h"
#include "rdmans/netns.h"
#include "rdmans/rdma_nl.h"
#include "rdmans/sysfs.h"
#include "rdmans/sysfs_gid.h"
#include "rdmans/util.h"
#include "attach_private.h"

bool rn_attach_plan_has_rdma(const struct rn_attach_plan *plan, const char *name)
{
	for (size_t i = 0; i < plan->n_rdma; i++)
		if (strcmp(plan->rdma[i], name) == 0)
			return true;
	return false;
}

static int plan_add_rdma(struct rn_attach_plan *plan, const char *name, struct rn_error *err)
{
	if (rn_attach_plan_has_rdma(plan, name))
		return 0;
	if (plan->n_rdma == RN_ATTACH_MAX)
		return rn_error_set(err, E2BIG, "more than %d RDMA devices selected",
				    RN_ATTACH_MAX);
	(void)rn_strscpy(plan->rdma[plan->n_rdma++], RN_RDMA_NAME_MAX, name);
	return 0;
}

/* names[0..n) (at most RN_ATTACH_MAX of them), as plan_add_rdma() each. */
static int plan_add_rdma_names(struct rn_attach_plan *plan, char (*names)[RN_RDMA_NAME_MAX],
			       size_t n, struct rn_error *err)
{
	for (size_t i = 0; i < n && i < RN_ATTACH_MAX; i++) {
		int r = plan_add_rdma(plan, names[i], err);

		if (r < 0)
			return r;
	}
	return 0;
}

static void fill_netdev(struct rn_attach_netdev *nd, const struct rn_link *l)
{
	memset(nd, 0, sizeof(*nd));
	(void)rn_strscpy(nd->name, sizeof(nd->name), l->name);
	(void)rn_strscpy(nd->pod_name, sizeof(nd->pod_name), l->name);
	(void)rn_strscpy(nd->mac, sizeof(nd->mac), l->mac);
	(void)rn_strscpy(nd->kind, sizeof(nd->kind), l->kind);
	(void)rn_strscpy(nd->alias, sizeof(nd->alias), l->alias);
	nd->ifindex = l->ifindex;
	nd->was_up = l->up;
	nd->ipoib = l->ipoib;
	memcpy(nd->ib_gid, l->ib_gid, sizeof(nd->ib_gid));
}

static int plan_add_netdev(struct rn_attach_plan *plan, const struct rn_link *l,
			   struct rn_error *err)
{
	for (size_t i = 0; i < plan->n_netdevs; i++)
		if (plan->netdevs[i].ifindex == l->ifindex)
			return 0;
	if (plan->n_netdevs == RN_ATTACH_MAX)
		return rn_error_set(err, E2BIG,
				    "more than %d netdevs belong to the selected device",
				    RN_ATTACH_MAX);
	fill_netdev(&plan->netdevs[plan->n_netdevs++], l);
	return 0;
}

/* The host's netdev named `name` (or, NULL, the one of ifindex) into the plan. */
static int plan_add_netdev_at(struct rn_attach_plan *plan, const char *name, int ifindex,
			      struct rn_error *err)
{
	struct rn_link l;
	int r;

	r = name ? rn_link_by_name(name, &l, err) : rn_link_by_index(ifindex, &l, err);
	if (r < 0)
		return r;
	return plan_add_netdev(plan, &l, err);
}

/* RDMA devices with a port bound to netdev ifindex (RDMA netlink). */
static int add_rdma_bound_to(struct rn_attach_plan *plan, const struct rn_rdma_devs *devs,
			     int ifindex, struct rn_error *err)
{
	for (size_t i = 0; i < devs->n; i++)
		for (size_t p = 0; p < devs->devs[i].nports; p++)
			if ((int)devs->devs[i].ports[p].ndev_index == ifindex) {
				int r = plan_add_rdma(plan, devs->devs[i].name, err);

				if (r < 0)
					return r;
				break;
			}
	return 0;
}

/* Netdevs bound to the ports of the plan's RDMA devices (RDMA netlink). */
static int add_netdevs_bound(struct rn_attach_plan *plan, const struct rn_rdma_devs *devs,
			     struct rn_error *err)
{
	for (size_t i = 0; i < plan->n_rdma; i++) {
		const struct rn_rdma_dev *d = rn_rdma_devs_get(devs, plan->rdma[i], NULL);

		for (size_t p = 0; d && p < d->nports; p++) {
			int r;

			if (!d->ports[p].ndev_index)
				continue;
			r = plan_add_netdev_at(plan, NULL, (int)d->ports[p].ndev_index, err);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

/* The same netdev, seen by the same RDMA netlink dump: sysfs would tell the same. */
static bool same_view(const struct rn_attach_plan *prev, const struct rn_attach_plan *plan)
{
	const struct rn_attach_netdev *a = &prev->netdevs[0], *b = &plan->netdevs[0];

	return prev->n_netdevs > 0 && plan->n_netdevs > 0 && a->ifindex == b->ifindex &&
	       strcmp(a->name, b->name) == 0 && strcmp(a->mac, b->mac) == 0 &&
	       prev->rdma_view == plan->rdma_view;
}

/* RDMA devices of netdevs[0]: bound by netlink, else tied by sysfs (or as prev was). */
static int add_rdma_of_netdev(struct rn_attach_plan *plan, const struct rn_rdma_devs *devs,
			      bool kernel, const struct rn_attach_plan *prev, struct rn_error *err)
{
	char names[RN_ATTACH_MAX][RN_RDMA_NAME_MAX];
	size_t n = 0;
	int r;

	r = add_rdma_bound_to(plan, devs, plan->netdevs[0].ifindex, err);
	if (r < 0 || plan->n_rdma > 0 || !kernel)
		return r; /* no RDMA netlink: no ib_core, so no RDMA device in sysfs either */
	plan->sysfs_walked = true;
	/* only a walk that found nothing is taken over: the digest does not cover a tie's files */
	if (prev && prev->sysfs_walked && prev->n_rdma == 0 && same_view(prev, plan))
		return 0;
	r = rn_sysfs_rdma_by_netdev(plan->netdevs[0].name, names, RN_ATTACH_MAX, &n, err);
	if (r == -ENODEV || r == -ENOENT) {
		rn_error_clear(err);
		return 0;
	}
	if (r < 0)
		return r;
	return plan_add_rdma_names(plan, names, n, err);
}

enum sel_kind { SEL_NETDEV, SEL_HWADDR, SEL_RDMA, SEL_BUS };

static const char *const sel_key[] = { "device", "hwaddr", "rdmaDevice", "deviceID" };

static int resolve_one(enum sel_kind kind, const char *value, const struct rn_rdma_devs *devs,
		       bool kernel, const struct rn_attach_plan *prev, struct rn_attach_plan *plan,
		       struct rn_error *err)
{
	struct rn_link l;
	int r;

	switch (kind) {
	case SEL_NETDEV:
		r = rn_link_by_name(value, &l, err);
		if (r == -ENODEV)
			return rn_error_set(
				err, ENODEV,
				"netdev %s not found on the host ('ip link' lists them)", value);
		if (r < 0)
			return r;
		break;
	case SEL_HWADDR:
		r = rn_link_by_mac(value, &l, err);
		if (r < 0)
			return r;
		break;
	case SEL_RDMA: {
		struct rn_sysfs_rdma_dev sd;

		r = rn_name_check("RDMA device", value, RN_RDMA_NAME_MAX - 1, err);
		if (r < 0)
			return r;
		if (!rn_rdma_devs_get(devs, value, NULL) && rn_sysfs_rdma_get(value, &sd, NULL) < 0)
			return rn_error_set(err, ENODEV,
					    "RDMA device %s not found on the host ('rdmans dev' "
					    "lists them)",
					    value);
		r = plan_add_rdma(plan, value, err);
		if (r == 0)
			r = add_netdevs_bound(plan, devs, err);
		if (r < 0)
			return r;
		if (plan->n_netdevs == 0 && rn_sysfs_rdma_get(value, &sd, NULL) == 0)
			for (size_t i = 0; r == 0 && i < sd.n_netdevs; i++)
				r = plan_add_netdev_at(plan, sd.netdevs[i], 0, err);
		if (r < 0)
			return r;
		if (plan->n_netdevs == 0)
			return rn_error_set(err, ENODEV,
					    "RDMA device %s has no netdev bound to its ports; "
					    "rdma-netns moves a netdev with it (not a RoCE "
					    "device?)",
					    value);
		return 0;
	}
	case SEL_BUS: {
		char rnames[RN_ATTACH_MAX][RN_RDMA_NAME_MAX];
		char nnames[RN_ATTACH_MAX][IF_NAMESIZE];
		size_t rn = 0, nn = 0;

		r = rn_sysfs_rdma_by_bus_id(value, rnames, RN_ATTACH_MAX, &rn, err);
		if (r < 0)
			return r;
		r = rn_sysfs_netdevs_by_bus_id(value, nnames, RN_ATTACH_MAX, &nn, err);
		if (r < 0)
			return r;
		if (rn > RN_ATTACH_MAX || nn > RN_ATTACH_MAX)
			return rn_error_set(err, E2BIG,
					    "device %s has more than %d RDMA devices or netdevs",
					    value, RN_ATTACH_MAX);
		r = plan_add_rdma_names(plan, rnames, rn, err);
		if (r < 0)
			return r;
		/* Netdevs bound to those RDMA devices' ports first (they name the pod interface). */
		r = add_netdevs_bound(plan, devs, err);
		if (r < 0)
			return r;
		if (plan->n_netdevs == 0)
			for (size_t i = 0; i < nn; i++) {
				r = plan_add_netdev_at(plan, nnames[i], 0, err);
				if (r < 0)
					return r;
			}
		/* A function whose RDMA device sits elsewhere: the ones bound to its netdevs. */
		for (size_t i = 0; r == 0 && i < plan->n_netdevs; i++)
			r = add_rdma_bound_to(plan, devs, plan->netdevs[i].ifindex, err);
		if (r < 0)
			return r;
		if (plan->n_netdevs == 0)
			return rn_error_set(
				err, ENODEV, "device %s has no netdev on the host%s", value,
				rn ? "" : " and no RDMA device (moved into a pod already?)");
		(void)rn_strscpy(plan->bus_id, sizeof(plan->bus_id), value);
		return 0;
	}
	default:
		return rn_error_set(err, EINVAL, "unknown selection");
	}
	/* a netdev l: it, the RDMA devices bound to it, the other netdevs of their ports */
	r = plan_add_netdev(plan, &l, err);
	if (r == 0)
		r = add_rdma_of_netdev(plan, devs, kernel, prev, err);
	if (r == 0)
		r = add_netdevs_bound(plan, devs, err);
	return r;
}

int rn_attach_check_movable(const struct rn_attach_plan *plan, struct rn_error *err)
{
	for (size_t i = 0; !plan->chained && i < plan->n_netdevs; i++) {
		const struct rn_attach_netdev *nd = &plan->netdevs[i];
		struct rn_link l;
		bool immutable = false;
		int r;

		r = rn_link_by_index_movable(nd->ifindex, &l, &immutable, err);
		if (r < 0)
			return r;
		if (immutable)
			return rn_error_set(
				err, EOPNOTSUPP,
				"netdev %s cannot leave the host's network namespace (%s); "
				"select the physical netdev or the RDMA device to move",
				nd->name,
				l.flags & IFF_LOOPBACK ? "every namespace has its own loopback"
						       : "its driver marks it netns-local, as for "
							 "bridges and fallback tunnels");
	}
	return 0;
}

/* Two resolutions agree when they name the same first netdev. */
static bool plans_agree(const struct rn_attach_plan *a, const struct rn_attach_plan *b)
{
	return a->n_netdevs && b->n_netdevs && a->netdevs[0].ifindex == b->netdevs[0].ifindex;
}

/* FNV-1a over what the plan is resolved from: device names and their ports' netdevs. */
static uint64_t rdma_view(const struct rn_rdma_devs *devs)
{
	uint64_t h = 14695981039346656037ULL;
	const unsigned char *p;

#define MIX(ptr, len)                                                                              \
	for (p = (const unsigned char *)(ptr); p < (const unsigned char *)(ptr) + (len); p++) {    \
		h ^= *p;                                                                           \
		h *= 1099511628211ULL;                                                             \
	}
	MIX(&devs->n, sizeof(devs->n));
	for (size_t i = 0; i < devs->n; i++) {
		const struct rn_rdma_dev *d = &devs->devs[i];

		MIX(d->name, strlen(d->name) + 1);
		MIX(&d->index, sizeof(d->index));
		MIX(&d->nports, sizeof(d->nports));
		for (size_t k = 0; k < d->nports; k++)
			MIX(&d->ports[k].ndev_index, sizeof(d->ports[k].ndev_index));
	}
#undef MIX
	return h;
}

static int resolve_main(const struct rn_attach_select *sel, const char *ifname,
			const struct rn_attach_plan *prev, struct rn_attach_plan *plan,
			struct rn_error *err)
{
	_cleanup_rdma_devs_ struct rn_rdma_devs devs = { 0 };
	const char *values[] = { sel->netdev, sel->hwaddr, sel->rdma_dev, sel->bus_id };
	struct rn_attach_plan *first = plan, other;
	int first_kind = -1;
	bool kernel = false, exclusive = false;
	int r;

	memset(plan, 0, sizeof(*plan));
	r = rn_name_check("interface", ifname, IF_NAMESIZE - 1, err);
	if (r < 0)
		return r;
	r = rn_attach_rdma_dump_here(&devs, &kernel, &exclusive, err);
	if (r < 0)
		return r;
	for (int k = SEL_NETDEV; k <= SEL_BUS; k++) {
		struct rn_attach_plan *p = first_kind < 0 ? first : &other;

		if (!values[k])
			continue;
		memset(p, 0, sizeof(*p));
		p->rdma_view = rdma_view(&devs);
		r = resolve_one((enum sel_kind)k, values[k], &devs, kernel,
				first_kind < 0 ? prev : NULL, p, err);
		if (r < 0)
			return r;
		if (first_kind < 0) {
			first_kind = k;
			continue;
		}
		if (!plans_agree(first, p))
			return rn_error_set(err, EINVAL,
					    "'%s' %s and '%s' %s do not name the same device (%s "
					    "vs %s); give one of them",
					    sel_key[first_kind], values[first_kind], sel_key[k],
					    values[k], first->netdevs[0].name,
					    p->n_netdevs ? p->netdevs[0].name : "no netdev");
	}
	if (first_kind < 0)
		return rn_error_set(err, EINVAL,
				    "no device selected: set one of 'device', 'hwaddr', "
				    "'rdmaDevice', 'deviceID' or 'pciBusID' (Multus passes "
				    "'runtimeConfig.deviceID' from the device plugin)");
	plan->rdma_kernel = kernel;
	plan->exclusive = exclusive;
	(void)rn_strscpy(plan->netdevs[0].pod_name, IF_NAMESIZE, ifname);
	if (!plan->bus_id[0]) {
		char bdf[RN_BUS_ID_MAX];

		/* a netdev's PCI function is its for life: the same netdev as prev's has prev's */
		if (prev && same_view(prev, plan))
			(void)rn_strscpy(plan->bus_id, sizeof(plan->bus_id), prev->bus_id);
		else if (rn_sysfs_netdev_pci(plan->netdevs[0].name, bdf, sizeof(bdf), NULL) == 0)
			(void)rn_strscpy(plan->bus_id, sizeof(plan->bus_id), bdf);
	}
	return 0;
}

int rn_attach_resolve(const struct rn_attach_select *sel, const char *ifname,
		      struct rn_attach_plan *plan, struct rn_error *err)
{
	return resolve_main(sel, ifname, NULL, plan, err);
}

int rn_attach_resolve_again(const struct rn_attach_select *sel, const char *ifname,
			    const struct rn_attach_plan *prev, struct rn_attach_plan *plan,
			    struct rn_error *err)
{
	return resolve_main(sel, ifname, prev, plan, err);
}

/* ---- chained mode ---- */

struct pod_probe {
	const char *ifname;
	struct rn_link link;
	char bdf[RN_BUS_ID_MAX];
};

static int pod_probe_here(void *arg, struct rn_error *err)
{
	struct pod_probe *p = arg;
	int r;

	r = rn_link_by_name(p->ifname, &p->link, err);
	if (r < 0)
		return r;
	if (rn_sysfs_netdev_pci(p->ifname, p->bdf, sizeof(p->bdf), NULL) < 0)
		p->bdf[0] = '\0';
	return 0;
}

/* The RDMA device whose port has GID 0 `gid`: an IPoIB netdev's, on the host. */
static int add_rdma_of_ib_gid(struct rn_attach_plan *plan, const uint8_t gid[16],
			      struct rn_error *err)
{
	struct rn_gid_table t = { 0 };
	int r;

	r = rn_sysfs_gids(NULL, &t, err);
	if (r < 0)
		return r;
	for (size_t i = 0; r == 0 && i < t.n; i++)
		if (t.entries[i].index == 0 && memcmp(t.entries[i].raw, gid, 16) == 0)
			r = plan_add_rdma(plan, t.entries[i].dev, err);
	rn_gid_table_free(&t);
	return r;
}

int rn_attach_resolve_chained(int pod_nsfd, const char *ifname,
			      const struct rn_attach_select *hints, struct rn_attach_plan *plan,
			      struct rn_error *err)
{
	_cleanup_rdma_devs_ struct rn_rdma_devs devs = { 0 };
	struct pod_probe probe = { .ifname = ifname };
	struct rn_attach_netdev *nd;
	const char *bus = NULL;
	bool kernel = false, exclusive = false;
	int r;

	memset(plan, 0, sizeof(*plan));
	plan->chained = true;
	if (hints->netdev || hints->hwaddr)
		return rn_error_set(err, EINVAL,
				    "'device' and 'hwaddr' select a netdev on the host; in "
				    "chained mode the previous plugin chose it already (use "
				    "'rdmaDevice' or 'deviceID' to name the RDMA device)");
	r = rn_name_check("interface", ifname, IF_NAMESIZE - 1, err);
	if (r < 0)
		return r;
	r = rn_netns_run_sysfs(pod_nsfd, pod_probe_here, &probe, err);
	if (r == -ENODEV)
		return rn_error_set(err, ENODEV,
				    "the previous plugin left no netdev named %s in the pod",
				    ifname);
	if (r < 0)
		return r;
	nd = &plan->netdevs[0];
	fill_netdev(nd, &probe.link);
	plan->n_netdevs = 1;
	/* host-device keeps the host name in the alias */
	if (probe.link.alias[0] &&
	    rn_name_check("netdev", probe.link.alias, IF_NAMESIZE - 1, NULL) == 0)
		(void)rn_strscpy(nd->name, sizeof(nd->name), probe.link.alias);
	nd->alias[0] = '\0';

	r = rn_attach_rdma_dump_here(&devs, &kernel, &exclusive, err);
	if (r < 0)
		return r;
	plan->rdma_kernel = kernel;
	plan->exclusive = exclusive;
	if (hints->rdma_dev) {
		struct rn_sysfs_rdma_dev sd;

		r = rn_name_check("RDMA device", hints->rdma_dev, RN_RDMA_NAME_MAX - 1, err);
		if (r < 0)
			return r;
		if (!rn_rdma_devs_get(&devs, hints->rdma_dev, NULL) &&
		    rn_sysfs_rdma_get(hints->rdma_dev, &sd, NULL) < 0)
			return rn_error_set(err, ENODEV, "RDMA device %s not found on the host",
					    hints->rdma_dev);
		r = plan_add_rdma(plan, hints->rdma_dev, err);
		if (r < 0)
			return r;
	}
	bus = hints->bus_id ? hints->bus_id : probe.bdf[0] ? probe.bdf : NULL;
	if (bus) {
		char names[RN_ATTACH_MAX][RN_RDMA_NAME_MAX];
		size_t n = 0;

		(void)rn_strscpy(plan->bus_id, sizeof(plan->bus_id), bus);
		if (!hints->rdma_dev && !nd->ipoib) {
			r = rn_sysfs_rdma_by_bus_id(bus, names, RN_ATTACH_MAX, &n, err);
			if (r == 0)
				r = plan_add_rdma_names(plan, names, n, err);
			if (r < 0)
				return r;
		}
	}
	/* an IPoIB netdev names its port exactly (a function may have two) */
	if (!hints->rdma_dev && nd->ipoib) {
		r = add_rdma_of_ib_gid(plan, nd->ib_gid, err);
		if (r < 0)
			return r;
	}
	return 0;
}
