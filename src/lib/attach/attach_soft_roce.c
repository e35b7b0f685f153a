// SPDX-License-Identifier: Apache-2.0
/*
 * Soft-RoCE pods (rdmans/attach_soft_roce.h): an rxe device made on the
 * pod's netdev inside the pod, and deleted with it.
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
#include "rdmans/attach_soft_roce.h"
#include "rdmans/discover.h"
#include "rdmans/link.h"
#include "rdmans/netns.h"
#include "rdmans/rdma_nl.h"
#include "rdmans/sysfs.h"
#include "rdmans/util.h"
#include "attach_private.h"

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
