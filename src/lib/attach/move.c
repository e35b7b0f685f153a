// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <string.h>

#include "rdmans/discover.h"
#include "rdmans/link.h"
#include "rdmans/move.h"
#include "rdmans/system.h"

struct move_job {
	const struct rn_located_dev *loc;
	const char *netdev_old;
	const char *netdev_new;
	int netdev_ifindex;
	int nsfd; /* where to send the device or netdev */
};

static int move_rdma_here(void *arg, struct rn_error *err)
{
	struct move_job *job = arg;
	_cleanup_rdma_ struct rn_rdma *rdma = NULL;
	int r;

	r = rn_rdma_open(&rdma, err);
	if (r < 0)
		return r;
	return rn_rdma_dev_set_netns(rdma, job->loc->dev.index, job->loc->dev.name, job->nsfd, err);
}

static int move_netdev_here(void *arg, struct rn_error *err)
{
	struct move_job *job = arg;

	return rn_link_move(job->netdev_ifindex, job->netdev_old, job->nsfd, job->netdev_new, err);
}

/* Undo of the RDMA half: from inside the target, send the device back to its source. */
static int return_rdma_here(void *arg, struct rn_error *err)
{
	struct move_job *job = arg;
	_cleanup_rdma_ struct rn_rdma *rdma = NULL;
	struct rn_rdma_dev dev = { 0 };
	int r;

	r = rn_rdma_open(&rdma, err);
	if (r == 0)
		r = rn_rdma_dev_find(rdma, job->loc->dev.name, &dev, err);
	if (r == 0)
		r = rn_rdma_dev_set_netns(rdma, dev.index, dev.name, job->nsfd, err);
	rn_rdma_dev_free(&dev);
	return r;
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
	struct move_job job = { .loc = &loc };
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
		job.netdev_ifindex = (int)port->ndev_index;
		job.netdev_old = port->ndev_name;
		job.netdev_new = req->netdev_name ? req->netdev_name : port->ndev_name;
	}

	/*
	 * The RDMA device goes first: a driver that cannot change namespace
	 * refuses before anything moved (and rxe, for one, would unregister its
	 * device if its netdev left first).
	 */
	job.nsfd = req->target_nsfd;
	r = rn_netns_run(source_fd, move_rdma_here, &job, err);
	if (r < 0 || !req->with_netdev)
		goto out;

	r = rn_netns_run(source_fd, move_netdev_here, &job, err);
	if (r < 0) {
		struct rn_error undo = { 0 };
		char first[RN_ERROR_MSG_MAX];

		snprintf(first, sizeof(first), "%s", err->msg);
		job.nsfd = source_fd;
		if (rn_netns_run(req->target_nsfd, return_rdma_here, &job, &undo) < 0)
			rn_error_set(err, -r,
				     "%s; RDMA device %s stayed in %s and moving it back failed "
				     "(%s): run 'rdmans move %s host'",
				     first, loc.dev.name, req->target_desc, undo.msg, loc.dev.name);
		else
			rn_error_set(err, -r, "%s; RDMA device %s was moved back to %s", first,
				     loc.dev.name, res->from_desc);
		goto out;
	}
	snprintf(res->netdev, sizeof(res->netdev), "%s", job.netdev_old);
	snprintf(res->netdev_now, sizeof(res->netdev_now), "%s", job.netdev_new);
out:
	rn_rdma_dev_free(&loc.dev);
	return r < 0 ? r : 0;
}

struct named_move {
	const char *name;
	int nsfd;
};

static int move_named_here(void *arg, struct rn_error *err)
{
	struct named_move *job = arg;
	_cleanup_rdma_ struct rn_rdma *rdma = NULL;
	struct rn_rdma_dev dev = { 0 };
	int r;

	r = rn_rdma_open(&rdma, err);
	if (r == 0)
		r = rn_rdma_dev_find(rdma, job->name, &dev, err);
	if (r == 0)
		r = rn_rdma_dev_set_netns(rdma, dev.index, dev.name, job->nsfd, err);
	rn_rdma_dev_free(&dev);
	return r;
}

int rn_move_rdma_dev(const char *name, int from_nsfd, int to_nsfd, struct rn_error *err)
{
	struct named_move job = { .name = name, .nsfd = to_nsfd };

	return rn_netns_run(from_nsfd, move_named_here, &job, err);
}
