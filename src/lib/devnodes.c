// SPDX-License-Identifier: Apache-2.0
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmans/cleanup.h"
#include "rdmans/devnodes.h"
#include "rdmans/util.h"

/* "231:192" -> major, minor */
static int parse_dev(const char *text, unsigned int *major, unsigned int *minor)
{
	char tail;

	if (sscanf(text, "%u:%u%c", major, minor, &tail) != 2)
		return -EINVAL;
	return 0;
}

static int cmp_node(const void *a, const void *b)
{
	const struct rn_devnode *x = a, *y = b;

	return strverscmp(x->dev, y->dev);
}

int rn_devnodes_uverbs(struct rn_devnode **ret, size_t *ret_n, struct rn_error *err)
{
	_cleanup_closedir_ DIR *d = NULL;
	_cleanup_free_ struct rn_devnode *v = NULL;
	char dir[PATH_MAX];
	struct dirent *de;
	size_t n = 0;

	*ret = NULL;
	*ret_n = 0;
	if (rn_path(dir, sizeof(dir), "%s/class/infiniband_verbs", rn_sysfs_root()) < 0)
		return rn_error_set(err, ENAMETOOLONG, "sysfs root %s is too long",
				    rn_sysfs_root());
	d = opendir(dir);
	if (!d) {
		if (errno == ENOENT)
			return 0; /* ib_uverbs not loaded, or no device */
		return rn_error_errno(err, errno, "cannot list %s", dir);
	}
	while ((de = readdir(d))) {
		char path[PATH_MAX], ibdev[RN_RDMA_NAME_MAX + 8], devno[32];
		struct rn_devnode *node;

		if (strncmp(de->d_name, "uverbs", 6) != 0 || strlen(de->d_name) > 32)
			continue;
		if (rn_path(path, sizeof(path), "%s/%s/ibdev", dir, de->d_name) < 0 ||
		    rn_read_line(path, ibdev, sizeof(ibdev)) < 0 ||
		    rn_name_check("RDMA device", ibdev, RN_RDMA_NAME_MAX - 1, NULL) < 0)
			continue; /* gone since the listing */
		if (RN_GROW(v, NULL, n + 1) < 0)
			return rn_error_set(err, ENOMEM, "out of memory");
		node = &v[n];
		memset(node, 0, sizeof(*node));
		if (rn_path(path, sizeof(path), "%s/%s/dev", dir, de->d_name) < 0 ||
		    rn_read_line(path, devno, sizeof(devno)) < 0 ||
		    parse_dev(devno, &node->major, &node->minor) < 0)
			return rn_error_set(err, EIO,
					    "%s/%s/dev does not hold MAJOR:MINOR; is ib_uverbs "
					    "loaded?",
					    dir, de->d_name);
		snprintf(node->path, sizeof(node->path), RN_DEV_INFINIBAND "/%s", de->d_name);
		memcpy(node->dev, ibdev, strlen(ibdev) + 1);
		n++;
	}
	if (n > 1)
		qsort(v, n, sizeof(*v), cmp_node);
	*ret = TAKE_PTR(v);
	*ret_n = n;
	return 0;
}

int rn_devnodes_rdma_cm(struct rn_devnode *out, struct rn_error *err)
{
	char path[PATH_MAX], devno[32];
	int r;

	memset(out, 0, sizeof(*out));
	if (rn_path(path, sizeof(path), "%s/class/misc/rdma_cm/dev", rn_sysfs_root()) < 0)
		return rn_error_set(err, ENAMETOOLONG, "sysfs root %s is too long",
				    rn_sysfs_root());
	r = rn_read_line(path, devno, sizeof(devno));
	if (r == -ENOENT)
		return rn_error_set(err, ENOENT,
				    "no rdma_cm device (%s is missing): load rdma_ucm "
				    "('modprobe rdma_ucm') for RDMA CM in containers",
				    path);
	if (r < 0)
		return rn_error_errno(err, -r, "cannot read %s", path);
	if (parse_dev(devno, &out->major, &out->minor) < 0)
		return rn_error_set(err, EIO, "%s does not hold MAJOR:MINOR", path);
	snprintf(out->path, sizeof(out->path), RN_DEV_INFINIBAND "/rdma_cm");
	return 0;
}
