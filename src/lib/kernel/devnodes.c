// SPDX-License-Identifier: Apache-2.0
/* The device nodes of RDMA devices, from what sysfs.c reads of their character devices. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmans/cleanup.h"
#include "rdmans/devnodes.h"
#include "rdmans/sysfs.h"
#include "rdmans/sysfs_kernel.h"
#include "rdmans/util.h"

static int cmp_node(const void *a, const void *b)
{
	const struct rn_devnode *x = a, *y = b;

	return strverscmp(x->dev, y->dev);
}

/* The node of a character device sysfs names: /dev/infiniband/NAME. */
static void node_of(const struct rn_sysfs_chardev *c, struct rn_devnode *out)
{
	memset(out, 0, sizeof(*out));
	snprintf(out->path, sizeof(out->path), RN_DEV_INFINIBAND "/%s", c->name);
	(void)rn_strscpy(out->dev, sizeof(out->dev), c->ibdev);
	out->major = c->major;
	out->minor = c->minor;
}

int rn_devnodes_uverbs(struct rn_devnode **ret, size_t *ret_n, struct rn_error *err)
{
	_cleanup_free_ struct rn_sysfs_chardev *devs = NULL;
	_cleanup_free_ struct rn_devnode *v = NULL;
	size_t n = 0;
	int r;

	*ret = NULL;
	*ret_n = 0;
	r = rn_sysfs_uverbs_list(&devs, &n, err);
	if (r < 0 || n == 0)
		return r;
	v = calloc(n, sizeof(*v));
	if (!v)
		return rn_error_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++)
		node_of(&devs[i], &v[i]);
	if (n > 1)
		qsort(v, n, sizeof(*v), cmp_node);
	*ret = TAKE_PTR(v);
	*ret_n = n;
	return 0;
}

int rn_devnodes_rdma_cm(struct rn_devnode *out, struct rn_error *err)
{
	struct rn_sysfs_chardev c;
	int r;

	memset(out, 0, sizeof(*out));
	r = rn_sysfs_rdma_cm(&c, err);
	if (r < 0)
		return r;
	node_of(&c, out);
	return 0;
}
