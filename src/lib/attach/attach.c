// SPDX-License-Identifier: Apache-2.0
/*
 * Attaching a plan's devices to a pod (rdmans/attach.h): moving them in,
 * configuring the pod interface, waiting for its RoCE GIDs, CHECK. The plan
 * is made in attach_plan.c, undone in attach_home.c. Builds on rn_link_*
 * (rtnetlink), rn_rdma_* (RDMA netlink), rn_sysfs_* and rn_netns_run().
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
#include "rdmans/sysfs_gid.h"
#include "rdmans/util.h"
#include "attach_private.h"

/* ---- what the attach files share (attach_private.h) ---- */

/* Tells the caller's step function what was just changed ("moved netdev eth1"). */
__attribute__((format(printf, 4, 5))) int
rn_attach_run_step(rn_attach_step_fn step, void *arg, struct rn_error *err, const char *fmt, ...)
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

/* The RDMA devices of this netns; no RDMA netlink is an empty list, not an error. */
int rn_attach_rdma_dump_here(struct rn_rdma_devs *devs, bool *kernel, bool *exclusive,
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

/* ---- moving in ---- */

/*
 * The plan's RDMA devices into the pod, a step after each. Each goes alone,
 * its netdev after all of them (rn_attach_move_in): a plan's netdevs and
 * RDMA devices are not pairs (one netdev may carry the ports of several
 * devices, an IPoIB one is made anew by the kernel, a chained plan moves
 * none), and a failure is undone by rn_attach_move_out(), not here: CNI DEL
 * brings home whatever the state file says moved.
 */
static int move_rdma_devs(const struct rn_attach_plan *plan, int home_fd, int pod_nsfd,
			  rn_attach_step_fn step, void *arg, struct rn_error *err)
{
	for (size_t i = 0; i < plan->n_rdma; i++) {
		const struct rn_move_dev m = { .rdma = plan->rdma[i],
					       .from_nsfd = home_fd,
					       .to_nsfd = pod_nsfd };
		int r;

		r = rn_move_dev(&m, NULL, err);
		if (r < 0)
			return r;
		r = rn_attach_run_step(step, arg, err, "moved RDMA device %s", plan->rdma[i]);
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

struct ipoib_probe {
	const struct rn_attach_netdev *nd;
	struct rn_link link;
	bool found;
	bool up;
};

static int ipoib_probe_here(void *arg, struct rn_error *err)
{
	struct ipoib_probe *p = arg;
	struct rn_error none = { 0 };
	int r;

	r = rn_link_by_ib_gid(p->nd->ib_gid, &p->link, &none);
	p->found = r == 0;
	if (r < 0 && r != -ENODEV)
		return rn_error_set(err, -r, "%s", none.msg);
	return 0;
}

/* In the pod (the kernel made it there): its pod name and up state. */
static int ipoib_name_here(void *arg, struct rn_error *err)
{
	struct ipoib_probe *p = arg;
	int r = 0;

	if (strcmp(p->link.name, p->nd->pod_name) != 0)
		r = rn_link_rename(p->link.ifindex, p->link.name, p->nd->pod_name, err);
	if (r == 0 && p->up)
		r = rn_link_set_up(p->link.ifindex, p->nd->pod_name, true, err);
	return r;
}

/*
 * An IPoIB netdev does not travel: moving its RDMA device made ib_ipoib
 * remove it and add a new one, in the device's new netns (since Linux 6.17)
 * or in the host's (before). Either way the new one goes to the pod, named.
 */
static int ipoib_follow(const struct rn_attach_netdev *nd, int pod_nsfd, bool up, bool *ret_up,
			bool *ret_remade, struct rn_error *err)
{
	struct ipoib_probe p = { .nd = nd, .up = up };
	int r;

	r = rn_netns_run(pod_nsfd, ipoib_probe_here, &p, err);
	if (r < 0)
		return r;
	/* unchanged only when a previous plugin's one stayed (no device of its port moved) */
	*ret_remade =
		!p.found || p.link.ifindex != nd->ifindex || strcmp(p.link.name, nd->pod_name) != 0;
	if (p.found) {
		r = rn_netns_run(pod_nsfd, ipoib_name_here, &p, err);
		if (r < 0)
			return rn_error_wrap(err, "cannot name the pod's IPoIB netdev %s",
					     p.link.name);
		*ret_up = up;
		return 0;
	}
	r = ipoib_probe_here(&p, err);
	if (r < 0)
		return r;
	if (!p.found)
		return rn_error_set(err, ENODEV,
				    "the kernel made no new IPoIB netdev for %s after its RDMA "
				    "device moved, neither in the pod nor on the host (was "
				    "ib_ipoib unloaded?)",
				    nd->name);
	{
		/*
		 * Not the mover's: this netdev is not the one that was on the
		 * host, the kernel made it, and it was just found here by its GID.
		 */
		const struct rn_link_move_to to = {
			.name = strcmp(p.link.name, nd->pod_name) ? nd->pod_name : NULL, .up = up
		};
		bool partial;

		r = rn_link_move_to(p.link.ifindex, p.link.name, pod_nsfd, &to, &partial, err);
		if (r < 0)
			return r;
		*ret_up = up && !partial;
	}
	return 0;
}

int rn_attach_ipoib_back_to_pod(const struct rn_attach_netdev *nd, int pod_nsfd,
				struct rn_error *err)
{
	struct ipoib_probe p = { .nd = nd };
	/*
	 * Not the mover's: the kernel made this netdev on the host when the
	 * RDMA device came home; it is found by its GID and goes alone.
	 * A host name the previous plugin kept (host-device) goes in the alias.
	 */
	const struct rn_link_move_to to = {
		.name = nd->pod_name,
		.alias = strcmp(nd->name, nd->pod_name) != 0 ? nd->name : NULL,
	};
	bool partial;
	int r;

	r = ipoib_probe_here(&p, err);
	if (r < 0 || !p.found)
		return r; /* none on the host: the previous plugin's DEL finds nothing to do */
	r = rn_link_move_to(p.link.ifindex, p.link.name, pod_nsfd, &to, &partial, err);
	return r < 0 ? rn_error_wrap(err, "cannot give the IPoIB netdev %s back to the pod",
				     p.link.name)
		     : 0;
}

int rn_attach_move_in(const struct rn_attach_plan *plan, int pod_nsfd, bool up, bool *ret_up,
		      bool *ret_remade, rn_attach_step_fn step, void *arg, struct rn_error *err)
{
	_cleanup_close_ int home = -1;
	int r;

	*ret_up = *ret_remade = false;
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
	r = move_rdma_devs(plan, home, pod_nsfd, step, arg, err);
	if (r < 0)
		return r;
	if (plan->chained)
		return plan->netdevs[0].ipoib && plan->n_rdma
			       ? ipoib_follow(&plan->netdevs[0], pod_nsfd, true, ret_up, ret_remade,
					      err)
			       : 0;
	for (size_t i = 0; i < plan->n_netdevs; i++) {
		const struct rn_attach_netdev *nd = &plan->netdevs[i];
		const struct rn_link_move_to to = {
			.name = strcmp(nd->name, nd->pod_name) ? nd->pod_name : NULL,
			.up = up && i == 0,
		};
		bool partial = false, now_up;

		if (nd->ipoib) {
			bool remade;

			r = ipoib_follow(nd, pod_nsfd, to.up, &now_up, &remade, err);
		} else {
			/* the pod was just looked at for pod_name (above): no probe */
			const struct rn_move_dev m = { .from_nsfd = home,
						       .to_nsfd = pod_nsfd,
						       .netdev_ifindex = nd->ifindex,
						       .netdev = nd->name,
						       .netdev_to = to };

			if (to.name) {
				/* Remembered by the netdev itself, as host-device does. */
				r = rn_link_set_alias(nd->ifindex, nd->name, nd->name, err);
				if (r < 0)
					return r;
				r = rn_attach_run_step(step, arg, err, "set the alias of %s",
						       nd->name);
				if (r < 0)
					return r;
			}
			r = rn_move_dev(&m, &partial, err);
			now_up = to.up && !partial;
		}
		if (r < 0)
			return r;
		if (i == 0)
			*ret_up = now_up;
		r = rn_attach_run_step(step, arg, err, "moved %snetdev %s",
				       nd->ipoib ? "IPoIB " : "", nd->name);
		if (r < 0)
			return r;
	}
	return 0;
}

/* ---- configuring the pod interface ---- */

struct conf_job {
	const char *ifname;
	bool is_up;
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
	_cleanup_link_session_ bool link_session = rn_link_session_begin();
	struct conf_job *job = arg;
	struct rn_link l;
	int r;

	r = rn_link_by_name(job->ifname, &l, err);
	if (r < 0)
		return r;
	if (!job->is_up) {
		r = rn_link_set_up(l.ifindex, l.name, true, err);
		if (r < 0)
			return r;
		r = rn_attach_run_step(job->step, job->arg, err, "brought the pod interface up");
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < job->n_ips; i++) {
		r = rn_link_addr_add(l.ifindex, l.name, job->ips[i].cidr, err);
		if (r < 0)
			return r;
		r = rn_attach_run_step(job->step, job->arg, err, "added address %s",
				       job->ips[i].cidr);
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
		r = rn_attach_run_step(job->step, job->arg, err, "added route %s", rt->dst);
		if (r < 0)
			return r;
	}
	return 0;
}

int rn_attach_configure(int pod_nsfd, const char *ifname, bool is_up,
			const struct rn_attach_ip *ips, size_t n_ips,
			const struct rn_attach_route *routes, size_t n_routes,
			rn_attach_step_fn step, void *arg, struct rn_error *err)
{
	struct conf_job job = { .ifname = ifname,
				.is_up = is_up,
				.ips = ips,
				.n_ips = n_ips,
				.routes = routes,
				.n_routes = n_routes,
				.step = step,
				.arg = arg };

	if (is_up && n_ips == 0 && n_routes == 0)
		return 0;
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
	r = rn_attach_rdma_dump_here(&devs, &kernel, NULL, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < p->plan->n_rdma; i++) {
		const struct rn_rdma_dev *d = rn_rdma_devs_get(&devs, p->plan->rdma[i], NULL);
		struct rn_sysfs_rdma_dev sd;
		bool bound = false;

		for (size_t k = 0; d && k < d->nports; k++)
			bound |= (int)d->ports[k].ndev_index == l.ifindex;
		/* an iWARP port is Ethernet too, but has no RoCE GID to wait for */
		if (!bound || rn_sysfs_rdma_get(d->name, &sd, NULL) < 0 ||
		    strcmp(sd.link_layer, "Ethernet") != 0 || sd.node_type == RN_NODE_RNIC)
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
	_cleanup_link_session_ bool link_session = rn_link_session_begin();
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
	r = rn_attach_rdma_dump_here(&devs, &kernel, NULL, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < plan->n_rdma; i++)
		if (!rn_rdma_devs_get(&devs, plan->rdma[i], NULL))
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
