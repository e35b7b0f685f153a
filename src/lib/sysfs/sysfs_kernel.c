// SPDX-License-Identifier: Apache-2.0
/*
 * The sysfs reader, the kernel's own objects: RDMA character devices and
 * modules (see sysfs.h); and, from procfs, the boot ID.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "rdmans/cleanup.h"
#include "rdmans/sysfs_kernel.h"
#include "rdmans/util.h"
#include "sysfs_private.h"

/* "231:192" -> major, minor */
static int parse_devno(const char *text, unsigned *major, unsigned *minor)
{
	char tail;

	return sscanf(text, "%u:%u%c", major, minor, &tail) == 2 ? 0 : -EINVAL;
}

/* uverbsN of class/infiniband_verbs: 0, or 1 when it is no uverbs node or gone since the listing. */
static int read_uverbs(const char *dir, const char *name, void *out, struct rn_error *err)
{
	struct rn_sysfs_chardev *c = out;
	char path[PATH_MAX], ibdev[RN_RDMA_NAME_MAX + 8], devno[32];

	if (strncmp(name, "uverbs", 6) != 0 || strlen(name) > 32)
		return 1;
	if (rn_path(path, sizeof(path), "%s/%s/ibdev", dir, name) < 0 ||
	    rn_read_line(path, ibdev, sizeof(ibdev)) < 0 ||
	    rn_name_check("RDMA device", ibdev, RN_RDMA_NAME_MAX - 1, NULL) < 0)
		return 1; /* gone since the listing */
	if (rn_path(path, sizeof(path), "%s/%s/dev", dir, name) < 0 ||
	    rn_read_line(path, devno, sizeof(devno)) < 0 ||
	    parse_devno(devno, &c->major, &c->minor) < 0)
		return rn_error_set(err, EIO,
				    "%s/%s/dev does not hold MAJOR:MINOR; is ib_uverbs loaded?",
				    dir, name);
	(void)rn_strscpy(c->name, sizeof(c->name), name);
	(void)rn_strscpy(c->ibdev, sizeof(c->ibdev), ibdev);
	return 0;
}

int rn_sysfs_uverbs_list(struct rn_sysfs_chardev **ret, size_t *ret_n, struct rn_error *err)
{
	/* none: ib_uverbs not loaded, or no device */
	void *v = NULL;
	int r = rn_sysfs_read_entries("class/infiniband_verbs", sizeof(**ret), read_uverbs, &v,
				      ret_n, err);

	*ret = v;
	return r;
}

int rn_sysfs_rdma_cm(struct rn_sysfs_chardev *out, struct rn_error *err)
{
	char path[PATH_MAX], devno[32];
	int r;

	memset(out, 0, sizeof(*out));
	r = rn_sysfs_path(path, sizeof(path), err, "class/misc/rdma_cm/dev");
	if (r < 0)
		return r;
	r = rn_read_line(path, devno, sizeof(devno));
	if (r == -ENOENT)
		return rn_error_set(err, ENOENT,
				    "no rdma_cm device (%s is missing): load rdma_ucm "
				    "('modprobe rdma_ucm') for RDMA CM in containers",
				    path);
	if (r < 0)
		return rn_error_errno(err, -r, "cannot read %s", path);
	if (parse_devno(devno, &out->major, &out->minor) < 0)
		return rn_error_set(err, EIO, "%s does not hold MAJOR:MINOR", path);
	(void)rn_strscpy(out->name, sizeof(out->name), "rdma_cm");
	return 0;
}

bool rn_sysfs_module_loaded(const char *name)
{
	char path[PATH_MAX];

	return rn_sysfs_path(path, sizeof(path), NULL, "module/%s", name) == 0 &&
	       rn_sysfs_exists(path);
}

int rn_sysfs_module_version(const char *name, char *buf, size_t len)
{
	char path[PATH_MAX];
	int r;

	r = rn_sysfs_path(path, sizeof(path), NULL, "module/%s/version", name);
	if (r < 0)
		return r;
	return rn_read_line(path, buf, len);
}

int rn_kernel_boot_id(char *buf, size_t len)
{
	return rn_read_line("/proc/sys/kernel/random/boot_id", buf, len);
}
