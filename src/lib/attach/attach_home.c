// SPDX-License-Identifier: Apache-2.0
/*
 * Bringing a plan's devices home from wherever they are
 * (rdmans/attach_home.h): from the pod, or after the kernel returns them
 * when the pod's netns is gone, whatever state a crash left.
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
#include "rdmans/attach_home.h"
#include "rdmans/discover.h"
#include "rdmans/link.h"
#include "rdmans/move.h"
#include "rdmans/netns.h"
#include "rdmans/rdma_nl.h"
#include "rdmans/sysfs.h"
#include "rdmans/util.h"
#include "attach_private.h"

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
	bool restored; /* and its alias and up state are as before the attach */
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

/*
 * One entry into a netns: look for the netdev there and send it home under
 * its host name, with its alias and up state as before the attach. Not the
 * home loop's (RDMA devices, by name): a netdev in the pod goes by another
 * name, the kernel may have renamed it "devN", so it is found by name, MAC
 * or ifindex, and a host name taken meanwhile must be seen before it moves.
 */
static int fetch_here(void *arg, struct rn_error *err)
{
	_cleanup_link_session_ bool link_session = rn_link_session_begin();
	struct fetch_job *f = arg;
	struct find_job job = { .nd = f->nd, .in_pod = true };
	struct rn_link_move_to to = { .alias = f->nd->alias, .up = f->nd->was_up };
	bool partial;
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
	if (strcmp(job.link.name, f->nd->name) != 0)
		to.name = f->nd->name;
	r = rn_link_move_to(job.link.ifindex, job.link.name, f->home_fd, &to, &partial, err);
	f->restored = r == 0 && !partial;
	return r;
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

static int rdma_home_step(void *arg, const char *dev, struct rn_error *err)
{
	struct out_pod_job *job = arg;

	return rn_attach_run_step(job->step, job->arg, err, "brought RDMA device %s home", dev);
}

/* In the pod: the plan's RDMA devices there, home (the home loop, on this thread). */
static int rdma_home_here(struct out_pod_job *job, struct rn_error *err)
{
	const struct rn_move_home h = { .names = job->plan->rdma,
					.n = job->plan->n_rdma,
					.home_nsfd = job->home_fd,
					.from_desc = "the pod",
					.name_each = true,
					.ret_home = job->os->rdma_home,
					.done = rdma_home_step,
					.arg = job };

	return rn_move_home_here(&h, err);
}

/*
 * One entry into the pod (one thread) for everything that leaves it: its
 * RDMA devices, then each netdev, a step after each move.
 */
static int out_pod_here(void *arg, struct rn_error *err)
{
	_cleanup_link_session_ bool link_session = rn_link_session_begin();
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
		r = rn_attach_run_step(job->step, job->arg, err, "brought netdev %s home",
				       f->nd->name);
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
	for (size_t i = 0; i < job.reached; i++) {
		os->netdev_seen_in_pod[i] = job.fetch[i].found;
		os->netdev_done[i] = job.fetch[i].restored; /* nothing left to do at home */
	}
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

		r = rn_attach_rdma_dump_here(&devs, &kernel, NULL, err);
		if (r < 0)
			return r;
		for (size_t i = 0; i < plan->n_rdma; i++) {
			if (!os->rdma_home[i])
				os->rdma_home[i] =
					rn_rdma_devs_get(&devs, plan->rdma[i], NULL) != NULL;
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
			r = rn_attach_run_step(step, arg, err, "restored netdev %s", nd->name);
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
			r = rn_move_dev(&(const struct rn_move_dev){ .rdma = plan->rdma[i],
								     .from_nsfd = fd,
								     .to_nsfd = home_fd },
					NULL, err);
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
		if (plan->chained && plan->n_netdevs && plan->netdevs[0].ipoib) {
			r = rn_attach_ipoib_back_to_pod(&plan->netdevs[0], pod, err);
			if (r == 0)
				r = rn_attach_run_step(step, arg, err,
						       "gave the IPoIB netdev back to the pod");
			if (r < 0)
				return r;
		}
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
