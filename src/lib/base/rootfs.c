// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rdmans/cleanup.h"
#include "rdmans/rootfs.h"
#include "rdmans/util.h"

#define IN_ROOT (RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS)

static int openat2_in_root(int rootfd, const char *path, int flags, mode_t mode)
{
	return rn_openat2(rootfd, path, flags, mode, IN_ROOT);
}

int rn_rootfs_open(const char *path, struct rn_error *err)
{
	int fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return rn_error_errno(err, errno, "cannot open the container's root filesystem %s",
				      path);
	return fd;
}

int rn_rootfs_openat(int rootfd, const char *path, int flags)
{
	return openat2_in_root(rootfd, path, flags & ~O_CREAT, 0);
}

static int check_path(const char *path, struct rn_error *err)
{
	if (!path || path[0] != '/' || strstr(path, "/../") || strlen(path) >= PATH_MAX)
		return rn_error_set(err, EINVAL,
				    "'%s' is not an absolute path inside the container",
				    path ? path : "");
	return 0;
}

int rn_rootfs_read(int rootfd, const char *path, size_t max, char **ret, struct rn_error *err)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *buf = NULL;
	int r;

	*ret = NULL;
	r = check_path(path, err);
	if (r < 0)
		return r;
	fd = openat2_in_root(rootfd, path, O_RDONLY | O_NOCTTY | O_NONBLOCK, 0);
	if (fd < 0)
		return rn_error_errno(err, -fd, "cannot open %s in the container", path);
	/* a FIFO would read as empty, a device as anything: say what it is */
	r = rn_check_regular_fd(fd, path, "the container's", err);
	if (r < 0)
		return r;
	r = rn_read_fd(fd, max, &buf, NULL);
	if (r == -EFBIG)
		return rn_error_set(err, EFBIG, "%s in the container is larger than %zu bytes",
				    path, max);
	if (r == -ENOMEM)
		return rn_error_set(err, ENOMEM, "out of memory");
	if (r < 0)
		return rn_error_errno(err, -r, "cannot read %s in the container", path);
	*ret = TAKE_PTR(buf);
	return 0;
}

/* An O_PATH fd of directory `dir` (absolute) inside the root, created (0755) where missing. */
static int open_dir_p(int rootfd, const char *dir, struct rn_error *err)
{
	char prefix[PATH_MAX];
	_cleanup_close_ int parent = -1;
	const char *p = dir;
	int fd;

	fd = openat2_in_root(rootfd, dir, O_PATH | O_DIRECTORY, 0);
	if (fd >= 0 || fd != -ENOENT)
		return fd < 0 ? rn_error_errno(err, -fd, "cannot open %s in the container", dir)
			      : fd;

	/* Walk down from the root, creating what is missing. */
	parent = openat2_in_root(rootfd, "/", O_PATH | O_DIRECTORY, 0);
	if (parent < 0)
		return rn_error_errno(err, -parent, "cannot open the container's root");
	while (*p) {
		const char *start, *end;
		char name[NAME_MAX + 1];
		int next;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		start = p;
		end = strchrnul(start, '/');
		if ((size_t)(end - start) > NAME_MAX)
			return rn_error_set(err, ENAMETOOLONG, "a component of %s is too long",
					    dir);
		memcpy(name, start, (size_t)(end - start));
		name[end - start] = '\0';
		memcpy(prefix, dir, (size_t)(end - dir));
		prefix[end - dir] = '\0';
		p = end;

		next = openat2_in_root(rootfd, prefix, O_PATH | O_DIRECTORY, 0);
		if (next == -ENOENT) {
			if (mkdirat(parent, name, 0755) < 0 && errno != EEXIST)
				return rn_error_errno(err, errno,
						      "cannot create %s in the container", prefix);
			next = openat2_in_root(rootfd, prefix, O_PATH | O_DIRECTORY, 0);
			if (next == -ENOENT)
				return rn_error_set(
					err, ENOENT,
					"cannot create %s in the container: it is a symlink "
					"to a directory the image does not have",
					prefix);
		}
		if (next < 0)
			return rn_error_errno(err, -next, "cannot open %s in the container",
					      prefix);
		rn_closep(&parent);
		parent = next;
	}
	return TAKE_FD(parent);
}

static int fail_write(struct rn_error *err, int errnum, const char *path)
{
	if (errnum == EROFS)
		return rn_error_set(err, EROFS,
				    "the container's root filesystem is read-only: cannot write "
				    "%s",
				    path);
	return rn_error_errno(err, errnum, "cannot write %s in the container", path);
}

int rn_rootfs_write(int rootfd, const char *path, const char *content, mode_t mode,
		    struct rn_error *err)
{
	char dir[PATH_MAX], tmp[NAME_MAX + 1];
	_cleanup_close_ int dirfd = -1, fd = -1;
	const char *base;
	int r;

	r = check_path(path, err);
	if (r < 0)
		return r;
	base = strrchr(path, '/') + 1;
	if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
		return rn_error_set(err, EINVAL, "'%s' does not name a file", path);
	memcpy(dir, path, (size_t)(base - path));
	dir[base - path] = '\0';
	if (strlen(base) + 16 > NAME_MAX)
		return rn_error_set(err, ENAMETOOLONG, "file name of %s is too long", path);

	dirfd = open_dir_p(rootfd, dir, err);
	if (dirfd < 0)
		return dirfd == -EROFS ? fail_write(err, EROFS, path) : dirfd;

	for (int attempt = 0; fd < 0; attempt++) {
		snprintf(tmp, sizeof(tmp), ".%s.rdmans-%d-%d", base, (int)getpid(), attempt);
		fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
		if (fd < 0 && (errno != EEXIST || attempt > 100))
			return fail_write(err, errno, path);
	}
	r = rn_write_all(fd, content, strlen(content));
	if (r == 0 && fchmod(fd, mode) < 0)
		r = -errno;
	if (r == 0 && close(TAKE_FD(fd)) < 0)
		r = -errno;
	if (r == 0 && renameat(dirfd, tmp, dirfd, base) < 0)
		r = -errno;
	if (r < 0) {
		(void)unlinkat(dirfd, tmp, 0);
		if (r == -EISDIR)
			return rn_error_set(err, EISDIR,
					    "cannot write %s in the container: it is a directory",
					    path);
		return fail_write(err, -r, path);
	}
	return 0;
}
