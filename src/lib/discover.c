// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rdmans/discover.h"
#include "rdmans/util.h"

struct dump_job {
	struct rn_rdma_devs *out;
	bool *exclusive; /* optional: also read the mode */
};

static int dump_here(void *arg, struct rn_error *err)
{
	struct dump_job *job = arg;
	_cleanup_rdma_ struct rn_rdma *rdma = NULL;
	int r;

	r = rn_rdma_open(&rdma, err);
	if (r < 0)
		return r;
	if (job->exclusive) {
		r = rn_rdma_netns_mode_get(rdma, job->exclusive, err);
		if (r < 0)
			return r;
	}
	return rn_rdma_dev_dump(rdma, job->out, err);
}

int rn_rdma_dump_in(int nsfd, struct rn_rdma_devs *out, struct rn_error *err)
{
	struct dump_job job = { .out = out };

	return rn_netns_run(nsfd, dump_here, &job, err);
}

void rn_located_devs_free(struct rn_located_devs *devs)
{
	if (!devs)
		return;
	for (size_t i = 0; i < devs->n; i++)
		rn_rdma_dev_free(&devs->v[i].dev);
	free(devs->v);
	devs->v = NULL;
	devs->n = 0;
}

/* Moves every device of `devs` into `out`, tagged with `ns`. devs is left empty. */
static int append_devs(struct rn_located_devs *out, struct rn_rdma_devs *devs,
		       const struct rn_netns_entry *ns, struct rn_error *err)
{
	struct rn_located_dev *v;

	if (devs->n == 0)
		return 0;
	v = realloc(out->v, (out->n + devs->n) * sizeof(*v));
	if (!v)
		return rn_error_set(err, ENOMEM, "out of memory");
	out->v = v;
	for (size_t i = 0; i < devs->n; i++) {
		out->v[out->n].dev = devs->devs[i];
		out->v[out->n].netns = *ns;
		out->n++;
	}
	free(devs->devs);
	devs->devs = NULL;
	devs->n = 0;
	return 0;
}

int rn_discover_all(struct rn_located_devs *out, struct rn_error *err)
{
	_cleanup_free_ struct rn_netns_entry *nets = NULL;
	_cleanup_close_ int host_fd = -1;
	size_t n_nets = 0;
	int r;

	memset(out, 0, sizeof(*out));
	r = rn_netns_list(&nets, &n_nets, err);
	if (r < 0)
		return r;
	host_fd = rn_netns_open_host(err);
	if (host_fd < 0)
		return host_fd;

	for (size_t i = 0; i < n_nets; i++) {
		_cleanup_rdma_devs_ struct rn_rdma_devs devs = { 0 };
		struct dump_job job = { .out = &devs };
		_cleanup_close_ int fd = -1;
		struct rn_error ignored = { 0 };

		if (nets[i].is_host) {
			job.exclusive = &out->exclusive;
			r = rn_netns_run(host_fd, dump_here, &job, err);
			if (r < 0)
				goto fail;
		} else {
			/* In shared mode every netns shows the same devices: the host's list is all. */
			if (!out->exclusive)
				break;
			/* A netns may vanish while we walk: skip it rather than fail the listing. */
			fd = rn_netns_open_path(nets[i].path, &ignored);
			if (fd < 0)
				continue;
			if (rn_rdma_dump_in(fd, &devs, &ignored) < 0)
				continue;
		}
		r = append_devs(out, &devs, &nets[i], err);
		if (r < 0)
			goto fail;
	}
	return 0;
fail:
	rn_located_devs_free(out);
	return r;
}

int rn_discover_find(const char *name, struct rn_located_dev *out, bool *ret_exclusive,
		     struct rn_error *err)
{
	_cleanup_located_devs_ struct rn_located_devs all = { 0 };
	int r;

	r = rn_name_check("RDMA device", name, RN_RDMA_NAME_MAX - 1, err);
	if (r < 0)
		return r;
	r = rn_discover_all(&all, err);
	if (r < 0)
		return r;
	if (ret_exclusive)
		*ret_exclusive = all.exclusive;
	for (size_t i = 0; i < all.n; i++) {
		if (strcmp(all.v[i].dev.name, name) == 0) {
			*out = all.v[i];
			/* out owns the ports now */
			all.v[i].dev.ports = NULL;
			all.v[i].dev.nports = 0;
			return 0;
		}
	}
	return rn_error_set(err, ENODEV,
			    "RDMA device %s not found in any network namespace ('rdmans dev "
			    "--all-netns' lists the devices there are)",
			    name);
}
