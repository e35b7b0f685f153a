// SPDX-License-Identifier: Apache-2.0
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmans/cleanup.h"
#include "rdmans/discover.h"
#include "rdmans/sysfs.h"
#include "rdmans/sysfs_port.h"
#include "rdmans/util.h"

struct dump_job {
	struct rn_rdma_devs *out;
	bool *exclusive; /* optional: also read the mode */
};

int rn_rdma_open_dump(struct rn_rdma **ret, bool *exclusive, struct rn_rdma_devs *out,
		      struct rn_error *err)
{
	_cleanup_rdma_ struct rn_rdma *rdma = NULL;
	int r;

	r = rn_rdma_open(&rdma, err);
	if (r < 0)
		return r;
	if (exclusive) {
		r = rn_rdma_netns_mode_get(rdma, exclusive, err);
		if (r < 0)
			return r;
	}
	r = rn_rdma_dev_dump(rdma, out, err);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(rdma);
	return 0;
}

static int dump_here(void *arg, struct rn_error *err)
{
	struct dump_job *job = arg;
	_cleanup_rdma_ struct rn_rdma *rdma = NULL;

	return rn_rdma_open_dump(&rdma, job->exclusive, job->out, err);
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
	if (devs->n == 0)
		return 0;
	if (RN_GROW(out->v, NULL, out->n + devs->n) < 0)
		return rn_error_set(err, ENOMEM, "out of memory");
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

/* ---- a pod's own devices ---- */

struct pod_buses {
	size_t n;
	char bdf[RN_SYSFS_MAX_NETDEVS * 4][RN_BUS_ID_MAX];
};

/* In the pod's netns, with its own sysfs: the PCI functions of its netdevs. */
static int pod_buses_here(void *arg, struct rn_error *err)
{
	struct pod_buses *b = arg;
	_cleanup_free_ char(*nets)[IF_NAMESIZE] = NULL;
	size_t n = 0;
	int r;

	r = rn_sysfs_netdev_list(&nets, &n, err);
	if (r < 0)
		return rn_error_wrap(err, "in the pod's network namespace");
	for (size_t k = 0; k < n && b->n < RN_ARRAY_SIZE(b->bdf); k++) {
		bool dup = false;

		if (rn_sysfs_netdev_pci(nets[k], b->bdf[b->n], sizeof(b->bdf[b->n]), NULL) < 0)
			continue;
		for (size_t i = 0; i < b->n; i++)
			dup = dup || strcmp(b->bdf[i], b->bdf[b->n]) == 0;
		if (!dup)
			b->n++;
	}
	return 0;
}

static bool have_name(char (*names)[RN_RDMA_NAME_MAX], size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(names[i], name) == 0)
			return true;
	return false;
}

int rn_discover_pod(int pod_nsfd, char (*names)[RN_RDMA_NAME_MAX], size_t max, size_t *ret_n,
		    size_t *ret_in_pod, struct rn_error *err)
{
	_cleanup_rdma_devs_ struct rn_rdma_devs devs = { 0 };
	_cleanup_free_ struct pod_buses *buses = calloc(1, sizeof(*buses));
	size_t n = 0;
	int r;

	*ret_n = *ret_in_pod = 0;
	if (!buses)
		return rn_error_set(err, ENOMEM, "out of memory");
	r = rn_rdma_dump_in(pod_nsfd, &devs, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < devs.n; i++) {
		if (n == max)
			return rn_error_set(err, E2BIG, "the pod holds more than %zu RDMA devices",
					    max);
		snprintf(names[n++], RN_RDMA_NAME_MAX, "%s", devs.devs[i].name);
	}
	*ret_in_pod = n;
	r = rn_netns_run_sysfs(pod_nsfd, pod_buses_here, buses, err);
	if (r < 0)
		return r;
	for (size_t b = 0; b < buses->n; b++) {
		char found[8][RN_RDMA_NAME_MAX];
		size_t nf = 0;

		r = rn_sysfs_rdma_by_bus_id(buses->bdf[b], found, RN_ARRAY_SIZE(found), &nf, err);
		if (r < 0)
			return r;
		for (size_t i = 0; i < nf && i < RN_ARRAY_SIZE(found); i++) {
			if (have_name(names, n, found[i]))
				continue;
			if (n == max)
				return rn_error_set(
					err, E2BIG,
					"the pod's netdevs have more than %zu RDMA devices", max);
			/* the precision: aarch64's gcc -O3 loses i's bound and warns
			 * that found[i] may be 511 bytes long (-Wformat-truncation) */
			snprintf(names[n++], RN_RDMA_NAME_MAX, "%.*s", RN_RDMA_NAME_MAX - 1,
				 found[i]);
		}
	}
	*ret_n = n;
	return 0;
}
