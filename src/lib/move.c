// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <string.h>

#include "rdmans/discover.h"
#include "rdmans/link.h"

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

/* Undo of the netdev half: find it by its new name in the target and send it home. */
static int return_netdev_here(void *arg, struct rn_error *err)
{
	struct move_job *job = arg;
	struct rn_link link;
	int r;

	r = rn_link_by_name(job->netdev_new, &link, err);
	if (r < 0)
		return r;
	return rn_link_move(link.ifindex, link.name, job->nsfd, job->netdev_old, err);
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
		r = rn_error_set(err, EOPNOTSUPP,
				 "cannot move RDMA device %s: the RDMA subsystem is in shared netns "
				 "mode, where every namespace sees every device. Switch with "
				 "'rdmans system set netns exclusive' (add --persist when "
				 "namespaces exist already)",
				 loc.dev.name);
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
		job.nsfd = req->target_nsfd;
		r = rn_netns_run(source_fd, move_netdev_here, &job, err);
		if (r < 0) {
			r = rn_error_wrap(err, "RDMA device %s not moved", loc.dev.name);
			goto out;
		}
		snprintf(res->netdev, sizeof(res->netdev), "%s", job.netdev_old);
		snprintf(res->netdev_now, sizeof(res->netdev_now), "%s", job.netdev_new);
	}

	job.nsfd = req->target_nsfd;
	r = rn_netns_run(source_fd, move_rdma_here, &job, err);
	if (r < 0 && req->with_netdev) {
		struct rn_error undo = { 0 };

		job.nsfd = source_fd;
		if (rn_netns_run(req->target_nsfd, return_netdev_here, &job, &undo) < 0) {
			char first[RN_ERROR_MSG_MAX];

			snprintf(first, sizeof(first), "%s", err->msg);
			rn_error_set(err, -r,
				     "%s; moving netdev %s back from %s failed too (%s): move it "
				     "back by hand with 'ip link set'",
				     first, job.netdev_new, req->target_desc, undo.msg);
		}
		res->netdev[0] = res->netdev_now[0] = '\0';
	}
out:
	rn_rdma_dev_free(&loc.dev);
	return r < 0 ? r : 0;
}
