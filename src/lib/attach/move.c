// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "rdmans/discover.h"
#include "rdmans/link.h"
#include "rdmans/move.h"
#include "rdmans/netns.h"
#include "rdmans/rdma_nl.h"
#include "rdmans/system.h"
#include "rdmans/util.h"

/* ---- the home loop ---- */

/* One failure of the home loop into err: the first as it is, each later one after "; ". */
static void collect_failure(const struct rn_move_home *h, const char *dev, const struct rn_error *e,
			    int *first, struct rn_error *err)
{
	if (*first == 0) {
		*first = e->code ? e->code : EIO;
		if (!err)
			return;
		*err = *e;
		if (h->name_each)
			rn_error_wrap(err, "cannot bring RDMA device %s home", dev);
		return;
	}
	if (!err)
		return;
	if (h->name_each)
		rn_strappend(err->msg, sizeof(err->msg), "; cannot bring RDMA device %s home: %s",
			     dev, e->msg);
	else
		rn_strappend(err->msg, sizeof(err->msg), "; %s", e->msg);
}

int rn_move_home_here(const struct rn_move_home *h, struct rn_error *err)
{
	_cleanup_rdma_ struct rn_rdma *rdma = NULL;
	_cleanup_rdma_devs_ struct rn_rdma_devs devs = { 0 };
	int first = 0, r;

	if (h->n == 0)
		return 0; /* nothing to bring: no netlink socket, no dump */
	r = rn_rdma_open(&rdma, err);
	if (r == 0)
		r = rn_rdma_dev_dump(rdma, &devs, err);
	if (r < 0) {
		if (h->from_desc && err)
			(void)rn_error_wrap(err, "cannot list the RDMA devices in %s",
					    h->from_desc);
		return r;
	}
	for (size_t i = 0; i < h->n; i++) {
		struct rn_error e = { 0 }, done_err = { 0 };
		const struct rn_rdma_dev *d = rn_rdma_devs_get(&devs, h->names[i], &e);

		if (!d && !h->all_there)
			continue; /* not there (any more) */
		if (d)
			r = rn_rdma_dev_set_netns(rdma, d->index, d->name, h->home_nsfd, &e);
		else
			r = -e.code;
		if (r < 0) {
			collect_failure(h, h->names[i], &e, &first, err);
			continue;
		}
		if (h->ret_home)
			h->ret_home[i] = true;
		r = h->done ? h->done(h->arg, h->names[i], &done_err) : 0;
		if (r < 0) {
			/* the failures collected so far stay in the message */
			if (first && err)
				rn_strappend(err->msg, sizeof(err->msg), "; %s", done_err.msg);
			else if (err)
				*err = done_err;
			return first ? -first : r;
		}
	}
	return first ? -first : 0;
}

static int move_home_job(void *arg, struct rn_error *err)
{
	return rn_move_home_here(arg, err);
}

int rn_move_home(int from_nsfd, const struct rn_move_home *h, struct rn_error *err)
{
	return rn_netns_run(from_nsfd, move_home_job, (void *)h, err);
}

/* ---- the mover ---- */

struct netdev_job {
	const struct rn_move_dev *m;
	bool *ret_partial;
};

static int move_netdev_here(void *arg, struct rn_error *err)
{
	struct netdev_job *job = arg;
	const struct rn_move_dev *m = job->m;

	if (m->netdev_probe)
		return rn_link_move(m->netdev_ifindex, m->netdev, m->to_nsfd, m->netdev_to.name,
				    err);
	return rn_link_move_to(m->netdev_ifindex, m->netdev, m->to_nsfd, &m->netdev_to,
			       job->ret_partial, err);
}

int rn_move_dev(const struct rn_move_dev *m, bool *ret_partial, struct rn_error *err)
{
	char rdma[1][RN_RDMA_NAME_MAX];
	/* the RDMA half is the home loop's step, with the target as its "home" */
	const struct rn_move_home there = {
		.names = rdma, .n = 1, .home_nsfd = m->to_nsfd, .all_there = true
	};
	const struct rn_move_home back = {
		.names = rdma, .n = 1, .home_nsfd = m->from_nsfd, .all_there = true
	};
	struct netdev_job job = { .m = m, .ret_partial = ret_partial };
	struct rn_error undo = { 0 };
	char first[RN_ERROR_MSG_MAX];
	int r;

	if (ret_partial)
		*ret_partial = false;
	if (m->rdma) {
		if (rn_strscpy(rdma[0], sizeof(rdma[0]), m->rdma) < 0)
			return rn_error_set(err, ENAMETOOLONG, "RDMA device name %s is too long",
					    m->rdma);
		r = rn_move_home(m->from_nsfd, &there, err);
		if (r < 0)
			return r;
	}
	if (!m->netdev_ifindex)
		return 0;
	r = rn_netns_run(m->from_nsfd, move_netdev_here, &job, err);
	if (r >= 0 || !m->undo || !m->rdma)
		return r;
	snprintf(first, sizeof(first), "%s", err ? err->msg : "");
	if (rn_move_home(m->to_nsfd, &back, &undo) < 0)
		return rn_error_set(err, -r,
				    "%s; RDMA device %s stayed in %s and moving it back failed "
				    "(%s): run 'rdmans move %s host'",
				    first, m->rdma, m->to_desc, undo.msg, m->rdma);
	return rn_error_set(err, -r, "%s; RDMA device %s was moved back to %s", first, m->rdma,
			    m->from_desc);
}

static void describe_netns(const struct rn_netns_entry *ns, char *buf, size_t len)
{
	if (ns->is_host)
		snprintf(buf, len, "host");
	else if (ns->name[0])
		snprintf(buf, len, "netns '%s'", ns->name);
	else if (ns->pid)
		snprintf(buf, len, "the netns of PID %d", (int)ns->pid);
	else
		snprintf(buf, len, "%s", ns->path);
}

int rn_move(const struct rn_move_request *req, struct rn_move_result *res, struct rn_error *err)
{
	struct rn_located_dev loc = { 0 };
	_cleanup_close_ int source_fd = -1;
	const char *netdev_old = NULL, *netdev_new = NULL;
	int netdev_ifindex = 0;
	struct rn_move_dev mv;
	const struct rn_rdma_port *port;
	bool exclusive = false;
	int r;

	memset(res, 0, sizeof(*res));
	r = rn_discover_find(req->dev, &loc, &exclusive, err);
	if (r < 0)
		return r;
	snprintf(res->dev, sizeof(res->dev), "%s", loc.dev.name);
	describe_netns(&loc.netns, res->from_desc, sizeof(res->from_desc));

	if (!exclusive) {
		r = rn_system_refuse_shared(loc.dev.name, err);
		goto out;
	}
	source_fd = loc.netns.is_host ? rn_netns_open_host(err)
				      : rn_netns_open_path(loc.netns.path, err);
	if (source_fd < 0) {
		r = rn_error_wrap(err, "cannot open the namespace holding RDMA device %s",
				  loc.dev.name);
		goto out;
	}
	r = rn_netns_same(source_fd, req->target_nsfd, err);
	if (r < 0)
		goto out;
	if (r == 1) {
		r = rn_error_set(err, EALREADY, "RDMA device %s is already in %s; nothing to do",
				 loc.dev.name, req->target_desc);
		goto out;
	}
	if (req->host_only && !loc.netns.is_host) {
		r = rn_error_set(err, EBUSY,
				 "RDMA device %s is in another pod's network namespace (%s%s): it "
				 "is not taken from there",
				 loc.dev.name, loc.netns.name[0] ? "netns " : "",
				 loc.netns.name[0] ? loc.netns.name : loc.netns.path);
		goto out;
	}

	if (req->with_netdev) {
		port = loc.dev.nports ? &loc.dev.ports[0] : NULL;
		if (!port || !port->ndev_index || !port->ndev_name[0]) {
			r = rn_error_set(err, ENODEV,
					 "RDMA device %s has no netdev bound to port 1 in %s; move "
					 "it without --with-netdev",
					 loc.dev.name, res->from_desc);
			goto out;
		}
		netdev_ifindex = (int)port->ndev_index;
		netdev_old = port->ndev_name;
		netdev_new = req->netdev_name ? req->netdev_name : port->ndev_name;
	}

	mv = (struct rn_move_dev){ .rdma = loc.dev.name,
				   .from_nsfd = source_fd,
				   .to_nsfd = req->target_nsfd,
				   .netdev_ifindex = netdev_ifindex,
				   .netdev = netdev_old,
				   .netdev_to = { .name = netdev_new },
				   .netdev_probe = true,
				   .undo = true,
				   .from_desc = res->from_desc,
				   .to_desc = req->target_desc };
	r = rn_move_dev(&mv, NULL, err);
	if (r < 0 || !req->with_netdev)
		goto out;
	snprintf(res->netdev, sizeof(res->netdev), "%s", netdev_old);
	snprintf(res->netdev_now, sizeof(res->netdev_now), "%s", netdev_new);
out:
	rn_rdma_dev_free(&loc.dev);
	return r < 0 ? r : 0;
}
