// SPDX-License-Identifier: Apache-2.0
/*
 * Writing into a container's rootfs from the host: an image's symlinks are
 * followed inside the rootfs, never out of it. And the device nodes a CDI
 * spec lists, from fake sysfs trees.
 */
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fakesys.h"
#include "rdmans/cleanup.h"
#include "rdmans/devnodes.h"
#include "rdmans/rootfs.h"
#include "test.h"

/* A scratch directory holding rootfs/ (the container's) and outside/ (the host's). */
struct scratch {
	char top[64];
	char rootfs[128];
	char outside[128];
	int rootfd;
};

static void scratch_new(struct scratch *s)
{
	struct rn_error err = { 0 };

	snprintf(s->top, sizeof(s->top), "/tmp/rdmans-rootfs-XXXXXX");
	if (!mkdtemp(s->top))
		abort();
	snprintf(s->rootfs, sizeof(s->rootfs), "%s/rootfs", s->top);
	snprintf(s->outside, sizeof(s->outside), "%s/outside", s->top);
	if (mkdir(s->rootfs, 0755) < 0 || mkdir(s->outside, 0755) < 0)
		abort();
	s->rootfd = rn_rootfs_open(s->rootfs, &err);
	if (s->rootfd < 0)
		abort();
}

static void scratch_free(struct scratch *s)
{
	char cmd[512];

	close(s->rootfd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", s->top);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", s->top);
}

#define _cleanup_scratch_ _cleanup_(scratch_free)

static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void sh(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	if (system(cmd) != 0) {
		printf("# fixture failed: %s\n", cmd);
		abort();
	}
}

static char *slurp(const char *path)
{
	static char buf[4096];
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static bool dir_is_empty(const char *path)
{
	_cleanup_closedir_ DIR *d = opendir(path);
	struct dirent *de;

	if (!d)
		return false;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			return false;
	return true;
}

static void write_creates_missing_directories(void)
{
	_cleanup_scratch_ struct scratch s;
	struct rn_error err = { 0 };
	char path[512];
	struct stat st;

	scratch_new(&s);
	REQUIRE(rn_rootfs_write(s.rootfd, "/etc/profile.d/rdmans-nccl.sh", "x=1\n", 0644, &err) ==
		0);
	snprintf(path, sizeof(path), "%s/etc/profile.d/rdmans-nccl.sh", s.rootfs);
	CHECK_STR(slurp(path), "x=1\n");
	CHECK_INT(stat(path, &st), 0);
	CHECK_INT(st.st_mode & 07777, 0644);
	snprintf(path, sizeof(path), "%s/etc/profile.d", s.rootfs);
	CHECK_INT(stat(path, &st), 0);
	CHECK_INT(st.st_mode & 07777, 0755);
	/* and replaces it whole the next time, leaving no temporary file */
	REQUIRE(rn_rootfs_write(s.rootfd, "/etc/profile.d/rdmans-nccl.sh", "y=2\n", 0644, &err) ==
		0);
	snprintf(path, sizeof(path), "%s/etc/profile.d/rdmans-nccl.sh", s.rootfs);
	CHECK_STR(slurp(path), "y=2\n");
	snprintf(path, sizeof(path), "%s/etc/profile.d", s.rootfs);
	sh("test \"$(ls -A '%s' | wc -l)\" = 1", path);
}

/* /etc -> /<host dir>: the write lands in rootfs/<host dir>, where the container will look. */
static void absolute_etc_symlink_is_followed_inside_the_rootfs(void)
{
	_cleanup_scratch_ struct scratch s;
	struct rn_error err = { 0 };
	char link[512], inside[2 * PATH_MAX];

	scratch_new(&s);
	snprintf(link, sizeof(link), "%s/etc", s.rootfs);
	CHECK_INT(symlink(s.outside, link), 0);
	snprintf(inside, sizeof(inside), "%s%s", s.rootfs, s.outside);
	sh("mkdir -p '%s'", inside);
	REQUIRE(rn_rootfs_write(s.rootfd, "/etc/nccl.conf", "NCCL_IB_HCA=irdma0\n", 0644, &err) ==
		0);
	CHECK(dir_is_empty(s.outside));
	strcat(inside, "/nccl.conf");
	CHECK_STR(slurp(inside), "NCCL_IB_HCA=irdma0\n");
}

static void dotdot_symlink_stops_at_the_rootfs(void)
{
	_cleanup_scratch_ struct scratch s;
	struct rn_error err = { 0 };
	char link[512], target[512], inside[512];

	scratch_new(&s);
	snprintf(link, sizeof(link), "%s/etc", s.rootfs);
	snprintf(target, sizeof(target), "../../../../../../../../..%s", s.outside);
	CHECK_INT(symlink(target, link), 0);
	snprintf(inside, sizeof(inside), "%s%s", s.rootfs, s.outside);
	sh("mkdir -p '%s'", inside);
	REQUIRE(rn_rootfs_write(s.rootfd, "/etc/nccl.conf", "A\n", 0644, &err) == 0);
	CHECK(dir_is_empty(s.outside));
	snprintf(inside, sizeof(inside), "%s%s/nccl.conf", s.rootfs, s.outside);
	CHECK_STR(slurp(inside), "A\n");
}

static void symlink_to_a_directory_the_image_lacks_is_refused(void)
{
	_cleanup_scratch_ struct scratch s;
	struct rn_error err = { 0 };
	char link[512], target[512];

	scratch_new(&s);
	snprintf(link, sizeof(link), "%s/etc", s.rootfs);
	snprintf(target, sizeof(target), "%s/sub", s.outside);
	CHECK_INT(symlink(target, link), 0);
	CHECK_INT(rn_rootfs_write(s.rootfd, "/etc/nccl.conf", "A\n", 0644, &err), -ENOENT);
	CHECK_CONTAINS(err.msg, "it is a symlink to a directory the image does not have");
	CHECK(dir_is_empty(s.outside));
}

static void symlink_at_the_file_is_replaced_not_followed(void)
{
	_cleanup_scratch_ struct scratch s;
	struct rn_error err = { 0 };
	char victim[512], link[512];
	struct stat st;

	scratch_new(&s);
	snprintf(victim, sizeof(victim), "%s/victim", s.outside);
	sh("echo keep > '%s'", victim);
	snprintf(link, sizeof(link), "%s/etc", s.rootfs);
	sh("mkdir '%s'", link);
	snprintf(link, sizeof(link), "%s/etc/nccl.conf", s.rootfs);
	sh("ln -s '%s' '%s'", victim, link);
	REQUIRE(rn_rootfs_write(s.rootfd, "/etc/nccl.conf", "NEW\n", 0644, &err) == 0);
	CHECK_STR(slurp(victim), "keep\n");
	CHECK_INT(lstat(link, &st), 0);
	CHECK(S_ISREG(st.st_mode));
	CHECK_STR(slurp(link), "NEW\n");
}

static void read_resolves_inside_the_rootfs(void)
{
	_cleanup_scratch_ struct scratch s;
	_cleanup_free_ char *text = NULL;
	struct rn_error err = { 0 };
	char victim[512], link[512];

	scratch_new(&s);
	snprintf(victim, sizeof(victim), "%s/secret", s.outside);
	sh("echo host-secret > '%s'", victim);
	snprintf(link, sizeof(link), "%s/etc", s.rootfs);
	sh("mkdir '%s'", link);
	snprintf(link, sizeof(link), "%s/etc/nccl.conf", s.rootfs);
	sh("ln -s '%s' '%s'", victim, link);
	CHECK_INT(rn_rootfs_read(s.rootfd, "/etc/nccl.conf", 4096, &text, &err), -ENOENT);
	CHECK(!text);
	/* the image's own file is read */
	sh("rm '%s' && echo NCCL_DEBUG=WARN > '%s'", link, link);
	CHECK_INT(rn_rootfs_read(s.rootfd, "/etc/nccl.conf", 4096, &text, &err), 0);
	CHECK_STR(text, "NCCL_DEBUG=WARN\n");
	free(text);
	text = NULL;
	CHECK_INT(rn_rootfs_read(s.rootfd, "/etc/nccl.conf", 4, &text, &err), -EFBIG);
	CHECK_CONTAINS(err.msg, "larger than 4 bytes");
	CHECK_INT(rn_rootfs_read(s.rootfd, "etc/nccl.conf", 4096, &text, &err), -EINVAL);
}

static void directory_in_the_way_is_a_clear_error(void)
{
	_cleanup_scratch_ struct scratch s;
	struct rn_error err = { 0 };
	char dir[512];

	scratch_new(&s);
	snprintf(dir, sizeof(dir), "%s/etc/nccl.conf", s.rootfs);
	sh("mkdir -p '%s'", dir);
	CHECK_INT(rn_rootfs_write(s.rootfd, "/etc/nccl.conf", "A\n", 0644, &err), -EISDIR);
	CHECK_CONTAINS(err.msg, "cannot write /etc/nccl.conf in the container: it is a directory");
	snprintf(dir, sizeof(dir), "%s/etc", s.rootfs);
	sh("test \"$(ls -A '%s')\" = nccl.conf", dir);
	CHECK_INT(rn_rootfs_write(s.rootfd, "/etc/", "A\n", 0644, &err), -EINVAL);
}

/* ---- device nodes ---- */

static void uverbs_nodes_sorted_by_device(void)
{
	_cleanup_(fake_done) char *root = fakesys_new();
	_cleanup_free_ struct rn_devnode *v = NULL;
	struct rn_devnode cm;
	struct rn_error err = { 0 };
	size_t n = 0;

	rn_sysfs_set_root(root);
	CHECK_INT(rn_devnodes_uverbs(&v, &n, &err), 0);
	CHECK_INT(n, 0); /* ib_uverbs not loaded: nothing, no error */
	fakesys_write(root, "class/infiniband_verbs/uverbs0/ibdev", "mlx5_10");
	fakesys_write(root, "class/infiniband_verbs/uverbs0/dev", "231:192");
	fakesys_write(root, "class/infiniband_verbs/uverbs1/ibdev", "mlx5_2");
	fakesys_write(root, "class/infiniband_verbs/uverbs1/dev", "231:193");
	fakesys_write(root, "class/infiniband_verbs/abi_version", "6");
	CHECK_INT(rn_devnodes_uverbs(&v, &n, &err), 0);
	REQUIRE(n == 2);
	CHECK_STR(v[0].dev, "mlx5_2");
	CHECK_STR(v[0].path, "/dev/infiniband/uverbs1");
	CHECK_INT(v[0].major, 231);
	CHECK_INT(v[0].minor, 193);
	CHECK_STR(v[1].dev, "mlx5_10");
	CHECK_STR(v[1].path, "/dev/infiniband/uverbs0");

	CHECK_INT(rn_devnodes_rdma_cm(&cm, &err), -ENOENT);
	CHECK_CONTAINS(err.msg, "modprobe rdma_ucm");
	fakesys_write(root, "class/misc/rdma_cm/dev", "10:58");
	CHECK_INT(rn_devnodes_rdma_cm(&cm, &err), 0);
	CHECK_STR(cm.path, "/dev/infiniband/rdma_cm");
	CHECK_INT(cm.major, 10);
	CHECK_INT(cm.minor, 58);

	free(v);
	v = NULL;
	fakesys_write(root, "class/infiniband_verbs/uverbs1/dev", "garbage");
	CHECK_INT(rn_devnodes_uverbs(&v, &n, &err), -EIO);
	CHECK_CONTAINS(err.msg, "uverbs1/dev does not hold MAJOR:MINOR");
}

RN_TEST_MAIN(T(write_creates_missing_directories),
	     T(absolute_etc_symlink_is_followed_inside_the_rootfs),
	     T(dotdot_symlink_stops_at_the_rootfs),
	     T(symlink_to_a_directory_the_image_lacks_is_refused),
	     T(symlink_at_the_file_is_replaced_not_followed), T(read_resolves_inside_the_rootfs),
	     T(directory_in_the_way_is_a_clear_error), T(uverbs_nodes_sorted_by_device))
