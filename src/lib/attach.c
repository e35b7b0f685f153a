// SPDX-License-Identifier: Apache-2.0
/*
 * Attaching netdevs and RDMA devices to a pod and bringing them home
 * (rdmans/attach.h). Builds on rn_link_* (rtnetlink), rn_rdma_* (RDMA
 * netlink), rn_sysfs_* and rn_netns_run().
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
#include "rdmans/discover.h"
#include "rdmans/link.h"
#include "rdmans/move.h"
#include "rdmans/netns.h"
#include "rdmans/rdma_nl.h"
#include "rdmans/sysfs.h"
#include "rdmans/util.h"

/* ---- small helpers ---- */

/* Tells the caller's step function what was just changed ("moved netdev eth1"). */
__attribute__((format(printf, 4, 5))) static int
run_step(rn_attach_step_fn step, void *arg, struct rn_error *err, const char *fmt, ...)
{
	char what[128];
	va_list ap;

	if (!step)
		return 0;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return step(arg, what, err);
}

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

/* The RDMA devices of this netns; no RDMA netlink is an empty list, not an error. */
static int home_rdma_dump(struct rn_rdma_devs *devs, bool *kernel, bool *exclusive,
			  struct rn_error *err)
{
	_cleanup_rdma_ struct rn_rdma *rdma = NULL;
	int r;

	memset(devs, 0, sizeof(*devs));
	*kernel = false;
	if (exclusive)
		*exclusive = false;
	r = rn_rdma_open_dump(&rdma, exclusive, devs, err);
	if (r == -EPROTONOSUPPORT) {
		rn_error_clear(err);
		return 0;
	}
	*kernel = r == 0;
	return r;
}

static const struct rn_rdma_dev *devs_find(const struct rn_rdma_devs *devs, const char *name)
{
	for (size_t i = 0; i < devs->n; i++)
		if (strcmp(devs->devs[i].name, name) == 0)
			return &devs->devs[i];
	return NULL;
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
		const struct rn_rdma_dev *d = devs_find(devs, plan->rdma[i]);

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
	if (prev && prev->sysfs_walked && same_view(prev, plan))
		return plan_add_rdma_names(plan, (char(*)[RN_RDMA_NAME_MAX])prev->rdma,
					   prev->n_rdma, err);
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
		if (!devs_find(devs, value) && rn_sysfs_rdma_get(value, &sd, NULL) < 0)
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
	r = home_rdma_dump(&devs, &kernel, &exclusive, err);
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

	r = home_rdma_dump(&devs, &kernel, &exclusive, err);
	if (r < 0)
		return r;
	plan->rdma_kernel = kernel;
	plan->exclusive = exclusive;
	if (hints->rdma_dev) {
		struct rn_sysfs_rdma_dev sd;

		r = rn_name_check("RDMA device", hints->rdma_dev, RN_RDMA_NAME_MAX - 1, err);
		if (r < 0)
			return r;
		if (!devs_find(&devs, hints->rdma_dev) &&
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
		if (!hints->rdma_dev) {
			r = rn_sysfs_rdma_by_bus_id(bus, names, RN_ATTACH_MAX, &n, err);
			if (r == 0)
				r = plan_add_rdma_names(plan, names, n, err);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

/* ---- moving in ---- */

/*
 * The plan's RDMA devices from one netns to the other, a step after each:
 * into the pod (in_pod NULL), or home, those of them in_pod lists (moved[i]
 * tells which went).
 */
static int move_rdma_devs(const struct rn_attach_plan *plan, int from_fd, int to_fd,
			  const struct rn_rdma_devs *in_pod, bool *moved, rn_attach_step_fn step,
			  void *arg, struct rn_error *err)
{
	for (size_t i = 0; i < plan->n_rdma; i++) {
		int r;

		if (in_pod && !devs_find(in_pod, plan->rdma[i]))
			continue;
		r = rn_move_rdma_dev(plan->rdma[i], from_fd, to_fd, err);
		if (r < 0 && in_pod)
			return rn_error_wrap(err, "cannot bring RDMA device %s home",
					     plan->rdma[i]);
		if (r < 0)
			return r;
		if (moved)
			moved[i] = true;
		r = run_step(step, arg, err,
			     in_pod ? "brought RDMA device %s home" : "moved RDMA device %s",
			     plan->rdma[i]);
		if (r < 0)
			return r;
	}
	return 0;
}

struct name_probe {
	const char *name;
	struct rn_link link;
	bool found;
};

static int name_probe_here(void *arg, struct rn_error *err)
{
	struct name_probe *p = arg;

	p->found = rn_link_by_name(p->name, &p->link, NULL) == 0;
	return 0;
}

int rn_attach_move_in(const struct rn_attach_plan *plan, int pod_nsfd, rn_attach_step_fn step,
		      void *arg, struct rn_error *err)
{
	_cleanup_close_ int home = -1;
	int r;

	home = rn_netns_open_self(err);
	if (home < 0)
		return home;
	r = rn_netns_same(home, pod_nsfd, err);
	if (r < 0)
		return r;
	if (r == 1)
		return rn_error_set(err, EINVAL,
				    "the pod's network namespace is the host's own; refusing to "
				    "move devices into it");
	if (!plan->chained) {
		for (size_t i = 0; i < plan->n_netdevs; i++) {
			struct name_probe p = { .name = plan->netdevs[i].pod_name };

			r = rn_netns_run(pod_nsfd, name_probe_here, &p, err);
			if (r < 0)
				return r;
			if (p.found)
				return rn_error_set(err, EEXIST,
						    "the pod already has a netdev named %s; choose "
						    "another interface name",
						    p.name);
		}
	}
	/* RDMA devices first: a driver that cannot change netns refuses before a netdev moved. */
	r = move_rdma_devs(plan, home, pod_nsfd, NULL, NULL, step, arg, err);
	if (r < 0)
		return r;
	if (plan->chained)
		return 0;
	for (size_t i = 0; i < plan->n_netdevs; i++) {
		const struct rn_attach_netdev *nd = &plan->netdevs[i];

		if (strcmp(nd->name, nd->pod_name) != 0) {
			/* Remembered by the netdev itself, as host-device does. */
			r = rn_link_set_alias(nd->ifindex, nd->name, nd->name, err);
			if (r < 0)
				return r;
			r = run_step(step, arg, err, "set the alias of %s", nd->name);
			if (r < 0)
				return r;
		}
		/* the pod was just looked at for pod_name (above) */
		r = rn_link_move_unchecked(nd->ifindex, nd->name, pod_nsfd,
					   strcmp(nd->name, nd->pod_name) ? nd->pod_name : NULL,
					   err);
		if (r < 0)
			return r;
		r = run_step(step, arg, err, "moved netdev %s", nd->name);
		if (r < 0)
			return r;
	}
	return 0;
}

/* ---- configuring the pod interface ---- */

struct conf_job {
	const char *ifname;
	const struct rn_attach_ip *ips;
	size_t n_ips;
	const struct rn_attach_route *routes;
	size_t n_routes;
	rn_attach_step_fn step;
	void *arg;
};

static int family_of(const char *addr)
{
	return strchr(addr, ':') ? AF_INET6 : AF_INET;
}

static int configure_here(void *arg, struct rn_error *err)
{
	struct conf_job *job = arg;
	struct rn_link l;
	int r;

	r = rn_link_by_name(job->ifname, &l, err);
	if (r < 0)
		return r;
	r = rn_link_set_up(l.ifindex, l.name, true, err);
	if (r < 0)
		return r;
	r = run_step(job->step, job->arg, err, "brought the pod interface up");
	if (r < 0)
		return r;
	for (size_t i = 0; i < job->n_ips; i++) {
		r = rn_link_addr_add(l.ifindex, l.name, job->ips[i].cidr, err);
		if (r < 0)
			return r;
		r = run_step(job->step, job->arg, err, "added address %s", job->ips[i].cidr);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < job->n_routes; i++) {
		const struct rn_attach_route *rt = &job->routes[i];
		const char *gw = rt->gw[0] ? rt->gw : NULL;

		for (size_t k = 0; !gw && k < job->n_ips; k++)
			if (job->ips[k].gateway[0] &&
			    family_of(job->ips[k].gateway) == family_of(rt->dst))
				gw = job->ips[k].gateway;
		r = rn_link_route_add(l.ifindex, l.name, rt->dst, gw, err);
		if (r == -EEXIST) {
			rn_error_clear(err);
			r = 0;
		}
		if (r < 0)
			return r;
		r = run_step(job->step, job->arg, err, "added route %s", rt->dst);
		if (r < 0)
			return r;
	}
	return 0;
}

int rn_attach_configure(int pod_nsfd, const char *ifname, const struct rn_attach_ip *ips,
			size_t n_ips, const struct rn_attach_route *routes, size_t n_routes,
			rn_attach_step_fn step, void *arg, struct rn_error *err)
{
	struct conf_job job = { .ifname = ifname,
				.ips = ips,
				.n_ips = n_ips,
				.routes = routes,
				.n_routes = n_routes,
				.step = step,
				.arg = arg };

	return rn_netns_run(pod_nsfd, configure_here, &job, err);
}

/* ---- GIDs ---- */

struct gid_addr {
	uint8_t raw[16];
	char text[64];
};

static int parse_gid_addrs(const char *const *addrs, size_t n, struct gid_addr *out,
			   struct rn_error *err)
{
	for (size_t i = 0; i < n; i++) {
		char ip[64];
		char *slash;

		(void)rn_strscpy(ip, sizeof(ip), addrs[i]);
		slash = strchr(ip, '/');
		if (slash)
			*slash = '\0';
		(void)rn_strscpy(out[i].text, sizeof(out[i].text), ip);
		memset(out[i].raw, 0, 16);
		if (strchr(ip, ':')) {
			if (inet_pton(AF_INET6, ip, out[i].raw) != 1)
				return rn_error_set(err, EINVAL, "'%s' is not an IP address",
						    addrs[i]);
		} else {
			out[i].raw[10] = out[i].raw[11] = 0xff;
			if (inet_pton(AF_INET, ip, out[i].raw + 12) != 1)
				return rn_error_set(err, EINVAL, "'%s' is not an IP address",
						    addrs[i]);
		}
	}
	return 0;
}

struct gid_job {
	char devs[RN_ATTACH_MAX][RN_RDMA_NAME_MAX];
	size_t n_devs;
	const struct gid_addr *addrs;
	size_t n_addrs;
	char missing[256]; /* "irdma0: 10.0.0.5", "" when all present */
};

static int gid_probe_here(void *arg, struct rn_error *err)
{
	struct gid_job *job = arg;

	job->missing[0] = '\0';
	for (size_t d = 0; d < job->n_devs; d++) {
		struct rn_gid_table t = { 0 };
		int r;

		r = rn_sysfs_gids(job->devs[d], &t, err);
		if (r < 0)
			return r;
		for (size_t a = 0; a < job->n_addrs && !job->missing[0]; a++) {
			bool found = false;

			for (size_t i = 0; i < t.n && !found; i++)
				found = t.entries[i].type == RN_GID_ROCE_V2 &&
					memcmp(t.entries[i].raw, job->addrs[a].raw, 16) == 0;
			if (!found)
				snprintf(job->missing, sizeof(job->missing), "%s: %s", job->devs[d],
					 job->addrs[a].text);
		}
		rn_gid_table_free(&t);
		if (job->missing[0])
			return 0;
	}
	return 0;
}

struct roce_probe {
	const struct rn_attach_plan *plan;
	struct gid_job *job;
};

/* In the pod: the plan's RDMA devices bound to netdevs[0] with an Ethernet link layer. */
static int roce_probe_here(void *arg, struct rn_error *err)
{
	struct roce_probe *p = arg;
	_cleanup_rdma_devs_ struct rn_rdma_devs devs = { 0 };
	struct rn_link l;
	bool kernel;
	int r;

	r = rn_link_by_name(p->plan->netdevs[0].pod_name, &l, err);
	if (r < 0)
		return r;
	r = home_rdma_dump(&devs, &kernel, NULL, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < p->plan->n_rdma; i++) {
		const struct rn_rdma_dev *d = devs_find(&devs, p->plan->rdma[i]);
		struct rn_sysfs_rdma_dev sd;
		bool bound = false;

		for (size_t k = 0; d && k < d->nports; k++)
			bound |= (int)d->ports[k].ndev_index == l.ifindex;
		if (!bound || rn_sysfs_rdma_get(d->name, &sd, NULL) < 0 ||
		    strcmp(sd.link_layer, "Ethernet") != 0)
			continue;
		(void)rn_strscpy(p->job->devs[p->job->n_devs++], RN_RDMA_NAME_MAX, d->name);
	}
	return 0;
}

struct gid_wait {
	struct roce_probe probe;
	long deadline;
};

/* In the pod (one thread and one sysfs for the whole wait): until every GID is there, or the deadline. */
static int gid_wait_here(void *arg, struct rn_error *err)
{
	struct gid_wait *w = arg;
	struct gid_job *job = w->probe.job;
	unsigned int pause_us = 2000;
	int r;

	r = roce_probe_here(&w->probe, err);
	if (r < 0 || job->n_devs == 0)
		return r; /* InfiniBand, or no device bound to the pod interface */
	for (;;) {
		r = gid_probe_here(job, err);
		if (r < 0 || !job->missing[0] || rn_now_ms() >= w->deadline)
			return r;
		usleep(pause_us);
		if (pause_us < 50000)
			pause_us *= 2;
	}
}

static int gid_check(int pod_nsfd, const struct rn_attach_plan *plan, const char *const *addrs,
		     size_t n_addrs, int timeout_ms, struct rn_error *err)
{
	_cleanup_free_ struct gid_addr *parsed = NULL;
	struct gid_job job = { 0 };
	struct gid_wait w = { .probe = { .plan = plan, .job = &job },
			      .deadline = rn_now_ms() + timeout_ms };
	int r;

	if (plan->n_rdma == 0 || n_addrs == 0 || plan->n_netdevs == 0)
		return 0;
	parsed = calloc(n_addrs, sizeof(*parsed));
	if (!parsed)
		return rn_error_set(err, ENOMEM, "out of memory");
	r = parse_gid_addrs(addrs, n_addrs, parsed, err);
	if (r < 0)
		return r;
	job.addrs = parsed;
	job.n_addrs = n_addrs;
	r = rn_netns_run_sysfs(pod_nsfd, gid_wait_here, &w, err);
	if (r < 0 || !job.missing[0])
		return r;
	return rn_error_set(err, ETIMEDOUT,
			    "no RoCE v2 GID for the pod address on RDMA device %s after %d ms "
			    "(is the port up? 'rdmans gids --netns' shows the table)",
			    job.missing, timeout_ms);
}

int rn_attach_wait_gids(int pod_nsfd, const struct rn_attach_plan *plan, const char *const *addrs,
			size_t n_addrs, int timeout_ms, struct rn_error *err)
{
	return gid_check(pod_nsfd, plan, addrs, n_addrs, timeout_ms, err);
}

/* ---- CHECK ---- */

struct verify_job {
	const struct rn_attach_plan *plan;
	const char *const *addrs;
	size_t n_addrs;
};

static bool same_cidr(const char *a, const char *b)
{
	unsigned char ra[16], rb[16];
	char x[64], y[64];
	char *sa, *sb;
	int fa, fb;

	(void)rn_strscpy(x, sizeof(x), a);
	(void)rn_strscpy(y, sizeof(y), b);
	sa = strchr(x, '/');
	sb = strchr(y, '/');
	if (!sa || !sb || strcmp(sa, sb) != 0)
		return false;
	*sa = *sb = '\0';
	fa = family_of(x);
	fb = family_of(y);
	return fa == fb && inet_pton(fa, x, ra) == 1 && inet_pton(fb, y, rb) == 1 &&
	       memcmp(ra, rb, fa == AF_INET ? 4 : 16) == 0;
}

static int verify_here(void *arg, struct rn_error *err)
{
	struct verify_job *job = arg;
	const struct rn_attach_plan *plan = job->plan;
	_cleanup_rdma_devs_ struct rn_rdma_devs devs = { 0 };
	char cidrs[32][64];
	struct rn_link l;
	size_t n = 0;
	bool kernel;
	int r;

	for (size_t i = 0; i < plan->n_netdevs; i++) {
		const struct rn_attach_netdev *nd = &plan->netdevs[i];

		r = rn_link_by_name(nd->pod_name, &l, err);
		if (r < 0)
			return rn_error_set(err, ENODEV, "netdev %s is no longer in the pod",
					    nd->pod_name);
		if (nd->mac[0] && strcasecmp(l.mac, nd->mac) != 0)
			return rn_error_set(
				err, ENODEV,
				"the pod's %s is not the netdev attached at ADD (MAC %s, "
				"expected %s)",
				nd->pod_name, l.mac, nd->mac);
		if (i > 0 || plan->chained)
			continue;
		if (!l.up)
			return rn_error_set(err, ENETDOWN, "netdev %s in the pod is down",
					    nd->pod_name);
		r = rn_link_addr_list(l.ifindex, AF_UNSPEC, cidrs, RN_ARRAY_SIZE(cidrs), &n, err);
		if (r < 0)
			return r;
		for (size_t a = 0; a < job->n_addrs; a++) {
			bool found = false;

			for (size_t k = 0; k < n && k < RN_ARRAY_SIZE(cidrs) && !found; k++)
				found = same_cidr(cidrs[k], job->addrs[a]);
			if (!found)
				return rn_error_set(err, EADDRNOTAVAIL,
						    "address %s is no longer on %s in the pod",
						    job->addrs[a], nd->pod_name);
		}
	}
	if (plan->n_rdma == 0)
		return 0;
	r = home_rdma_dump(&devs, &kernel, NULL, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < plan->n_rdma; i++)
		if (!devs_find(&devs, plan->rdma[i]))
			return rn_error_set(err, ENODEV, "RDMA device %s is no longer in the pod",
					    plan->rdma[i]);
	return 0;
}

int rn_attach_verify(int pod_nsfd, const struct rn_attach_plan *plan, const char *const *addrs,
		     size_t n_addrs, struct rn_error *err)
{
	struct verify_job job = { .plan = plan, .addrs = addrs, .n_addrs = n_addrs };
	int r;

	r = rn_netns_run(pod_nsfd, verify_here, &job, err);
	if (r < 0)
		return r;
	return gid_check(pod_nsfd, plan, addrs, n_addrs, 0, err);
}

/* ---- bringing everything home ---- */

struct find_job {
	const struct rn_attach_netdev *nd;
	bool in_pod; /* look for pod_name first */
	struct rn_link link;
	bool found;
};

/* A MAC that tells netdevs apart: loopbacks and some virtual netdevs have none. */
static bool mac_known(const char *mac)
{
	return mac[0] && strcmp(mac, "00:00:00:00:00:00") != 0;
}

/* The netdev of nd; outside the host never a loopback: every netns has its own, none moves. */
static bool find_match(const struct find_job *job, const struct rn_link *l)
{
	const struct rn_attach_netdev *nd = job->nd;

	if (job->in_pod && (l->flags & IFF_LOOPBACK))
		return false;
	return !mac_known(nd->mac) || strcasecmp(l->mac, nd->mac) == 0;
}

/*
 * By its name (pod or host) with a matching MAC, else by MAC, else by
 * ifindex with the MAC. Not found is job->found false; a failed lookup
 * (EPERM, ENOBUFS...) is an error, never "absent".
 */
static int find_here(void *arg, struct rn_error *err)
{
	struct find_job *job = arg;
	const struct rn_attach_netdev *nd = job->nd;
	const char *names[] = { job->in_pod ? nd->pod_name : nd->name,
				job->in_pod ? nd->name : nd->pod_name };
	struct rn_link l;
	int r;

	job->found = false;
	for (size_t i = 0; i < RN_ARRAY_SIZE(names); i++) {
		r = rn_link_by_name(names[i], &l, err);
		if (r == -ENODEV) {
			rn_error_clear(err);
			continue;
		}
		if (r < 0)
			return r;
		if (find_match(job, &l)) {
			job->link = l;
			job->found = true;
			return 0;
		}
	}
	if (!mac_known(nd->mac))
		return 0; /* neither a MAC nor an ifindex can say it is ours */
	r = rn_link_by_mac(nd->mac, &l, err);
	if (r == 0 && find_match(job, &l)) {
		job->link = l;
		job->found = true;
		return 0;
	}
	if (r == -ENODEV || r == -ENOTUNIQ)
		rn_error_clear(err); /* several: a name or the ifindex must tell */
	else if (r < 0)
		return r;
	if (nd->ifindex <= 0)
		return 0;
	r = rn_link_by_index(nd->ifindex, &l, err);
	if (r == -ENODEV) {
		rn_error_clear(err);
		return 0;
	}
	if (r < 0)
		return r;
	if (find_match(job, &l)) {
		job->link = l;
		job->found = true;
	}
	return 0;
}

struct fetch_job {
	const struct rn_attach_netdev *nd;
	int home_fd;
	bool home_taken; /* the home netns has a netdev named nd->name (fetch_home_probe) */
	bool found; /* in the netns entered (as link); sent home unless an error says otherwise */
	struct rn_link link;
};

/*
 * Before entering a netns to fetch nd, in the home netns (the caller's): is
 * its host name taken there? The kernel moves first and renames after, so a
 * clash must be seen before the move; asked here, it costs no thread.
 */
static int fetch_home_probe(struct fetch_job *f, struct rn_error *err)
{
	struct rn_link l;
	int r = rn_link_by_name(f->nd->name, &l, err);

	if (r == -ENODEV) {
		rn_error_clear(err);
		return 0;
	}
	if (r < 0)
		return r;
	f->home_taken = true;
	return 0;
}

/* One entry into a netns: look for the netdev there and send it home under its host name. */
static int fetch_here(void *arg, struct rn_error *err)
{
	struct fetch_job *f = arg;
	struct find_job job = { .nd = f->nd, .in_pod = true };
	int r;

	r = find_here(&job, err);
	if (r < 0 || !job.found)
		return r;
	f->found = true;
	f->link = job.link;
	if (f->home_taken)
		return rn_error_set(err, EEXIST,
				    "cannot move netdev %s: the target network namespace already "
				    "has a netdev named %s",
				    job.link.name, f->nd->name);
	return rn_link_move_unchecked(job.link.ifindex, job.link.name, f->home_fd,
				      strcmp(job.link.name, f->nd->name) ? f->nd->name : NULL, err);
}

/* At home: its host name, alias and up/down as before the attach. */
static int netdev_restore(const struct rn_attach_netdev *nd, const struct rn_link *found,
			  struct rn_error *err)
{
	struct rn_link l = *found;
	int r;

	if (strcmp(l.name, nd->name) != 0) {
		struct rn_link other;

		if (rn_link_by_name(nd->name, &other, NULL) == 0 && other.ifindex != l.ifindex)
			return rn_error_set(
				err, EEXIST,
				"cannot rename netdev %s back to %s: the host has another "
				"netdev named %s now; rename that one and run DEL again",
				l.name, nd->name, nd->name);
		r = rn_link_rename(l.ifindex, l.name, nd->name, err);
		if (r < 0)
			return r;
		(void)rn_strscpy(l.name, sizeof(l.name), nd->name);
	}
	if (strcmp(l.alias, nd->alias) != 0) {
		r = rn_link_set_alias(l.ifindex, l.name, nd->alias, err);
		if (r < 0)
			return r;
	}
	if (l.up != nd->was_up) {
		r = rn_link_set_up(l.ifindex, l.name, nd->was_up, err);
		if (r < 0)
			return r;
	}
	return 0;
}

static bool is_physical(const struct rn_attach_netdev *nd)
{
	return nd->kind[0] == '\0';
}

struct out_state {
	bool rdma_home[RN_ATTACH_MAX];
	bool netdev_done[RN_ATTACH_MAX];
	bool netdev_seen_in_pod[RN_ATTACH_MAX];
};

struct out_pod_job {
	const struct rn_attach_plan *plan;
	int home_fd;
	struct out_state *os;
	rn_attach_step_fn step;
	void *arg;
	struct fetch_job fetch[RN_ATTACH_MAX];
	size_t reached; /* netdevs looked for; the last one's error (if any) is the job's */
	bool rdma_failed; /* the error is the RDMA devices' */
};

/* In the pod: the plan's RDMA devices there, home; one socket, one dump. */
static int rdma_home_here(struct out_pod_job *job, struct rn_error *err)
{
	const struct rn_attach_plan *plan = job->plan;
	_cleanup_rdma_ struct rn_rdma *rdma = NULL;
	_cleanup_rdma_devs_ struct rn_rdma_devs devs = { 0 };
	int r;

	r = rn_rdma_open(&rdma, err);
	if (r == 0)
		r = rn_rdma_dev_dump(rdma, &devs, err);
	if (r < 0)
		return rn_error_wrap(err, "cannot list the RDMA devices in the pod");
	for (size_t i = 0; i < plan->n_rdma; i++) {
		const struct rn_rdma_dev *d = devs_find(&devs, plan->rdma[i]);

		if (!d)
			continue;
		r = rn_rdma_dev_set_netns(rdma, d->index, d->name, job->home_fd, err);
		if (r < 0)
			return rn_error_wrap(err, "cannot bring RDMA device %s home",
					     plan->rdma[i]);
		job->os->rdma_home[i] = true;
		r = run_step(job->step, job->arg, err, "brought RDMA device %s home",
			     plan->rdma[i]);
		if (r < 0)
			return r;
	}
	return 0;
}

/*
 * One entry into the pod (one thread) for everything that leaves it: its
 * RDMA devices, then each netdev, a step after each move.
 */
static int out_pod_here(void *arg, struct rn_error *err)
{
	struct out_pod_job *job = arg;
	const struct rn_attach_plan *plan = job->plan;
	int r;

	if (plan->n_rdma > 0 && plan->rdma_kernel) {
		r = rdma_home_here(job, err);
		if (r < 0) {
			job->rdma_failed = true;
			return r;
		}
	}
	for (size_t i = 0; !plan->chained && i < plan->n_netdevs; i++) {
		struct fetch_job *f = &job->fetch[i];

		job->reached = i + 1;
		r = fetch_here(f, err);
		if (r < 0)
			return r;
		if (!f->found)
			continue;
		r = run_step(job->step, job->arg, err, "brought netdev %s home", f->nd->name);
		if (r < 0)
			return r;
	}
	return 0;
}

static int out_from_pod(const struct rn_attach_plan *plan, int pod_fd, int home_fd,
			struct out_state *os, rn_attach_step_fn step, void *arg,
			struct rn_error *err)
{
	struct out_pod_job job = {
		.plan = plan, .home_fd = home_fd, .os = os, .step = step, .arg = arg
	};
	int r;

	/* the host names, asked at home first (the kernel moves before it renames) */
	for (size_t i = 0; !plan->chained && i < plan->n_netdevs; i++) {
		job.fetch[i] = (struct fetch_job){ .nd = &plan->netdevs[i], .home_fd = home_fd };
		r = fetch_home_probe(&job.fetch[i], err);
		if (r < 0)
			return rn_error_wrap(err, "cannot look for netdev %s on the host",
					     plan->netdevs[i].name);
	}
	r = rn_netns_run(pod_fd, out_pod_here, &job, err);
	for (size_t i = 0; i < job.reached; i++)
		os->netdev_seen_in_pod[i] = job.fetch[i].found;
	if (r >= 0 || job.rdma_failed || job.reached == 0)
		return r;
	{
		const struct fetch_job *f = &job.fetch[job.reached - 1];
		const struct rn_attach_netdev *nd = f->nd;

		if (!f->found)
			return rn_error_wrap(err, "cannot look for netdev %s in the pod",
					     nd->pod_name);
		if (r == -EEXIST)
			return rn_error_set(
				err, EEXIST,
				"cannot bring netdev %s home: the host has another netdev named "
				"%s now; rename that one and run DEL again",
				f->link.name, nd->name);
	}
	return r;
}

/* One pass at home; *ret_pending gets what is still missing. */
static int out_at_home(const struct rn_attach_plan *plan, bool pod_alive, struct out_state *os,
		       size_t *ret_pending, rn_attach_step_fn step, void *arg, struct rn_error *err)
{
	size_t pending = 0;
	int r;

	if (plan->n_rdma > 0 && plan->rdma_kernel) {
		_cleanup_rdma_devs_ struct rn_rdma_devs devs = { 0 };
		bool kernel;

		r = home_rdma_dump(&devs, &kernel, NULL, err);
		if (r < 0)
			return r;
		for (size_t i = 0; i < plan->n_rdma; i++) {
			if (!os->rdma_home[i])
				os->rdma_home[i] = devs_find(&devs, plan->rdma[i]) != NULL;
			pending += !os->rdma_home[i];
		}
	}
	for (size_t i = 0; !plan->chained && i < plan->n_netdevs; i++) {
		const struct rn_attach_netdev *nd = &plan->netdevs[i];
		struct find_job job = { .nd = nd };

		if (os->netdev_done[i])
			continue;
		r = find_here(&job, err);
		if (r < 0)
			return rn_error_wrap(err, "cannot look for netdev %s on the host",
					     nd->name);
		if (job.found) {
			r = netdev_restore(nd, &job.link, err);
			if (r < 0)
				return r;
			os->netdev_done[i] = true;
			r = run_step(step, arg, err, "restored netdev %s", nd->name);
			if (r < 0)
				return r;
			continue;
		}
		/* A virtual netdev not in a live pod died with its netns (or was deleted). */
		if (!is_physical(nd) && (!pod_alive || !os->netdev_seen_in_pod[i])) {
			os->netdev_done[i] = true;
			continue;
		}
		pending++;
	}
	*ret_pending = pending;
	return 0;
}

/* After the wait: look for what is still missing in every other netns. */
static int out_hunt(const struct rn_attach_plan *plan, int home_fd, bool pod_alive,
		    struct out_state *os, struct rn_error *err)
{
	_cleanup_free_ struct rn_netns_entry *nets = NULL;
	struct rn_netns_id home_id;
	size_t n_nets = 0;
	int r;

	for (size_t i = 0; plan->rdma_kernel && i < plan->n_rdma; i++) {
		struct rn_located_dev loc = { 0 };
		_cleanup_close_ int fd = -1;

		if (os->rdma_home[i])
			continue;
		r = rn_discover_find(plan->rdma[i], &loc, NULL, NULL);
		if (r < 0) {
			/* Nowhere to be seen: in transit from a dying netns, or unplugged. */
			os->rdma_home[i] = !pod_alive || r == -ENODEV;
			continue;
		}
		fd = rn_netns_open_path(loc.netns.path, NULL);
		rn_rdma_dev_free(&loc.dev);
		if (fd < 0)
			continue;
		r = rn_netns_same(fd, home_fd, err);
		if (r == 0)
			r = rn_move_rdma_dev(plan->rdma[i], fd, home_fd, err);
		if (r < 0)
			return rn_error_wrap(err, "cannot bring RDMA device %s home",
					     plan->rdma[i]);
		os->rdma_home[i] = true;
	}

	if (plan->chained)
		return 0;
	r = rn_netns_id(home_fd, &home_id, err);
	if (r < 0)
		return r;
	r = rn_netns_list(&nets, &n_nets, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < plan->n_netdevs; i++) {
		struct fetch_job f = { .nd = &plan->netdevs[i], .home_fd = home_fd };

		if (os->netdev_done[i])
			continue;
		r = fetch_home_probe(&f, err);
		if (r < 0)
			return r;
		for (size_t k = 0; k < n_nets && !f.found; k++) {
			_cleanup_close_ int fd = -1;

			if (rn_netns_id_equal(&nets[k].id, &home_id))
				continue;
			fd = rn_netns_open_path(nets[k].path, NULL);
			if (fd < 0)
				continue;
			r = rn_netns_run(fd, fetch_here, &f, err);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

int rn_attach_move_out(const struct rn_attach_plan *plan, const char *pod_netns, int timeout_ms,
		       rn_attach_step_fn step, void *arg, struct rn_error *err)
{
	_cleanup_close_ int home = -1;
	_cleanup_close_ int pod = -1;
	struct out_state os = { 0 };
	long deadline = rn_now_ms() + timeout_ms;
	size_t pending = 0;
	bool pod_alive = false;
	bool hunted = false;
	int r;

	home = rn_netns_open_self(err);
	if (home < 0)
		return home;
	if (pod_netns && *pod_netns) {
		pod = rn_netns_open_path(pod_netns, NULL);
		if (pod >= 0 && rn_netns_same(pod, home, NULL) == 0)
			pod_alive = true;
	}
	if (pod_alive) {
		r = out_from_pod(plan, pod, home, &os, step, arg, err);
		if (r < 0)
			return r;
	}
	for (;;) {
		r = out_at_home(plan, pod_alive, &os, &pending, step, arg, err);
		if (r < 0)
			return r;
		if (pending == 0)
			return 0;
		if (rn_now_ms() >= deadline) {
			if (hunted)
				break;
			r = out_hunt(plan, home, pod_alive, &os, err);
			if (r < 0)
				return r;
			hunted = true;
			continue;
		}
		usleep(20000);
	}
	for (size_t i = 0; plan->rdma_kernel && i < plan->n_rdma; i++)
		if (!os.rdma_home[i])
			return rn_error_set(err, EAGAIN,
					    "RDMA device %s has not come back to the host after %d "
					    "ms; try DEL again later",
					    plan->rdma[i], timeout_ms);
	for (size_t i = 0; i < plan->n_netdevs; i++)
		if (!os.netdev_done[i])
			return rn_error_set(
				err, EAGAIN,
				"netdev %s (MAC %s) has not come back to the host after "
				"%d ms; try DEL again later",
				plan->netdevs[i].name, plan->netdevs[i].mac, timeout_ms);
	return 0;
}

/* ---- soft-RoCE pods ---- */

int rn_attach_soft_roce_name(const char *container_id, const char *ifname, char *buf, size_t len,
			     struct rn_error *err)
{
	char id[13];
	size_t n = 0;

	for (const char *c = container_id; *c && n < 12; c++)
		if ((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'z') ||
		    (*c >= 'A' && *c <= 'Z'))
			id[n++] = *c;
	id[n] = 0;
	if (n == 0)
		return rn_error_set(err, EINVAL, "container ID '%s' has no letter or digit",
				    container_id);
	if (snprintf(buf, len, "rxe%s_%s", id, ifname) >= (int)len || strlen(buf) >= 64)
		return rn_error_set(err, ENAMETOOLONG, "rxe device name for %s/%s is too long",
				    container_id, ifname);
	return 0;
}

/*
 * Does this kernel's rdma_rxe keep its RoCE sockets per netns? Its symbols
 * say (rxe_ns.c, loaded with the module): 1 yes, 0 no, -errno unknown.
 */
static int rxe_per_netns(void)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/kallsyms", "re");
	char line[512];

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, " rxe_ns_pernet_sk4") || strstr(line, " rxe_namespace_init"))
			return 1;
	return 0;
}

struct soft_roce_job {
	const char *name, *netdev;
};

static int soft_roce_add_here(void *arg, struct rn_error *err)
{
	struct soft_roce_job *j = arg;
	_cleanup_rdma_ struct rn_rdma *rdma = NULL;
	bool exclusive = false;
	int r;

	r = rn_rdma_open(&rdma, err);
	if (r == 0)
		r = rn_rdma_netns_mode_get(rdma, &exclusive, err);
	if (r < 0)
		return r;
	if (exclusive)
		return rn_error_set(
			err, EOPNOTSUPP,
			"softRoce needs shared RDMA netns mode: in exclusive mode an "
			"rxe device made inside a pod lands in the host's netns, out of "
			"the pod's sight");
	return rn_rdma_link_add(rdma, j->name, "rxe", j->netdev, err);
}

int rn_attach_soft_roce_add(int nsfd, const char *name, const char *netdev, struct rn_error *err)
{
	struct soft_roce_job j = { .name = name, .netdev = netdev };
	struct rn_error ignore = { 0 };
	int r = rn_netns_run(nsfd, soft_roce_add_here, &j, err);

	if (r < 0)
		return r;
	/* the module is loaded now (link add loads it): its symbols tell */
	r = rxe_per_netns();
	if (r == 1)
		return 0;
	(void)rn_attach_soft_roce_del(name, &ignore);
	if (r == 0)
		return rn_error_set(
			err, EOPNOTSUPP,
			"softRoce needs a kernel whose rdma_rxe keeps a RoCE socket per "
			"netns (rxe_ns; seen in Debian's 7.2, not in 6.1): this kernel's "
			"rxe (%s) sends every pod's traffic from the host's netns, so "
			"pods could not reach each other",
			"no rxe_ns symbols in /proc/kallsyms");
	return rn_error_errno(err, -r,
			      "cannot tell whether rdma_rxe keeps a socket per netns "
			      "(/proc/kallsyms)");
}

int rn_attach_soft_roce_del(const char *name, struct rn_error *err)
{
	_cleanup_rdma_ struct rn_rdma *rdma = NULL;
	struct rn_rdma_dev dev = { 0 };
	int r;

	r = rn_rdma_open(&rdma, err);
	if (r < 0)
		return r;
	r = rn_rdma_dev_find(rdma, name, &dev, err);
	if (r == -ENODEV) {
		rn_error_clear(err);
		return 0;
	}
	if (r == 0)
		r = rn_rdma_link_del(rdma, dev.index, dev.name, err);
	rn_rdma_dev_free(&dev);
	return r;
}
