// SPDX-License-Identifier: Apache-2.0
/*
 * Which NCCL a container image holds: libnccl.so.2.X.Y in its library
 * directories, or, for a libnccl.so.2 without the version in its name (pip's
 * nvidia-nccl wheels), the "NCCL version X.Y.Z" banner NCCL carries in its
 * read-only data. Every path is opened inside the image's root
 * (rn_rootfs_openat: RESOLVE_IN_ROOT), so an image's symlinks stay inside it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rdmans/cleanup.h"
#include "rdmans/nccl.h"
#include "rdmans/nccl_version.h"
#include "rdmans/rootfs.h"
#include "rdmans/util.h"

/* NCCL's library with its device code is a few hundred MiB; nothing real is larger. */
#define MAX_LIB_BYTES (2ull << 30)
#define BANNER "NCCL version "

static const char *const lib_dirs[] = {
	"/usr/lib/x86_64-linux-gnu",
	"/usr/lib/aarch64-linux-gnu",
	"/usr/lib64",
	"/usr/lib",
	"/usr/local/lib",
	"/usr/local/nccl/lib",
	"/opt/nccl/lib",
	"/usr/local/cuda/lib64",
	"/opt/conda/lib",
};

/* Where pip puts nvidia-nccl-cu1X: PREFIX/pythonX.Y/{site,dist}-packages/nvidia/nccl/lib. */
static const char *const python_prefixes[] = {
	"/usr/local/lib",
	"/usr/lib",
	"/opt/conda/lib",
};

struct found {
	struct rn_nccl_version oldest;
	size_t n;
	char others[RN_NCCL_ORIGIN_MAX];
};

#define note rn_strappend

static int cmp_version(const struct rn_nccl_version *a, const struct rn_nccl_version *b)
{
	if (a->minor != b->minor)
		return a->minor < b->minor ? -1 : 1;
	if (a->patch != b->patch)
		return a->patch < b->patch ? -1 : 1;
	return 0;
}

static void add(struct found *f, const struct rn_nccl_version *v, const char *path)
{
	struct rn_nccl_version c = *v;

	if (f->n && (strcmp(f->oldest.where, path) == 0 || strstr(f->others, path)))
		return; /* the same file through LD_LIBRARY_PATH and a default directory */
	snprintf(c.where, sizeof(c.where), "%s", path);
	f->n++;
	if (f->n == 1) {
		f->oldest = c;
		return;
	}
	if (cmp_version(&c, &f->oldest) < 0) {
		note(f->others, sizeof(f->others), "%s%u.%u.%u in %s", f->others[0] ? ", " : "",
		     f->oldest.major, f->oldest.minor, f->oldest.patch, f->oldest.where);
		f->oldest = c;
	} else {
		note(f->others, sizeof(f->others), "%s%u.%u.%u in %s", f->others[0] ? ", " : "",
		     c.major, c.minor, c.patch, path);
	}
}

/* The version in NCCL's banner inside the library at path; -ENOENT when none. */
static int banner_version(int rootfd, const char *path, struct rn_nccl_version *v)
{
	_cleanup_close_ int probe = rn_rootfs_openat(rootfd, path, O_PATH);
	_cleanup_close_ int fd = -1;
	const char *p, *end;
	struct stat st;
	void *map;
	int r = -ENOENT;

	/* only a regular file is opened for reading: an image's FIFO or device node never is */
	if (probe < 0)
		return probe;
	if (fstat(probe, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -ENOENT;
	fd = rn_rootfs_openat(rootfd, path, O_RDONLY | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode) || st.st_size < 64 ||
	    (unsigned long long)st.st_size > MAX_LIB_BYTES)
		return -ENOENT;
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED)
		return -errno;
	p = map;
	end = p + st.st_size;
	while (p < end) {
		const char *hit = memmem(p, (size_t)(end - p), BANNER "2.", strlen(BANNER) + 2);
		char text[32];
		size_t n = 0;

		if (!hit)
			break;
		hit += strlen(BANNER);
		while (hit + n < end && n + 1 < sizeof(text) &&
		       (hit[n] == '.' || (hit[n] >= '0' && hit[n] <= '9')))
			n++;
		memcpy(text, hit, n);
		text[n] = '\0';
		if (rn_nccl_version_parse(text, v, NULL) == 0) {
			r = 0;
			break;
		}
		p = hit;
	}
	munmap(map, (size_t)st.st_size);
	return r;
}

/* A directory of the image, opened inside its root; NULL when absent. */
static DIR *open_dir(int rootfd, const char *dir)
{
	int fd = rn_rootfs_openat(rootfd, dir, O_RDONLY | O_DIRECTORY);
	DIR *d;

	if (fd < 0)
		return NULL;
	d = fdopendir(fd);
	if (!d)
		close(fd);
	return d;
}

/* Looks in one directory of the image. */
static void scan_dir(int rootfd, const char *dir, struct found *f)
{
	_cleanup_closedir_ DIR *d = NULL;
	char plain[PATH_MAX] = "";
	bool versioned = false;
	struct dirent *de;

	d = open_dir(rootfd, dir);
	if (!d)
		return;
	while ((de = readdir(d))) {
		struct rn_nccl_version v;
		char path[PATH_MAX];

		if (strncmp(de->d_name, "libnccl.so", 10) != 0)
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= sizeof(path))
			continue;
		if (strncmp(de->d_name, "libnccl.so.2.", 13) == 0 &&
		    rn_nccl_version_parse(de->d_name + 11, &v, NULL) == 0) {
			add(f, &v, path);
			versioned = true;
		} else if (strcmp(de->d_name, "libnccl.so.2") == 0 ||
			   (!plain[0] && strcmp(de->d_name, "libnccl.so") == 0)) {
			snprintf(plain, sizeof(plain), "%s", path);
		}
	}
	if (!versioned && plain[0]) {
		struct rn_nccl_version v;

		if (banner_version(rootfd, plain, &v) == 0)
			add(f, &v, plain);
	}
}

/* PREFIX/python3*\/{site,dist}-packages/nvidia/nccl/lib */
static void scan_python(int rootfd, const char *prefix, struct found *f)
{
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *de;

	d = open_dir(rootfd, prefix);
	if (!d)
		return;
	while ((de = readdir(d))) {
		static const char *const kinds[] = { "site-packages", "dist-packages" };

		if (strncmp(de->d_name, "python3", 7) != 0)
			continue;
		for (size_t k = 0; k < RN_ARRAY_SIZE(kinds); k++) {
			char dir[PATH_MAX];

			if ((size_t)snprintf(dir, sizeof(dir), "%s/%s/%s/nvidia/nccl/lib", prefix,
					     de->d_name, kinds[k]) < sizeof(dir))
				scan_dir(rootfd, dir, f);
		}
	}
}

int rn_nccl_version_find(int rootfd, const char *ld_library_path, struct rn_nccl_version *out,
			 size_t *ret_n, struct rn_error *err)
{
	struct found f = { 0 };

	memset(out, 0, sizeof(*out));
	if (ret_n)
		*ret_n = 0;
	if (ld_library_path) {
		char copy[4096], *save = NULL;

		snprintf(copy, sizeof(copy), "%s", ld_library_path);
		for (char *dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save))
			if (dir[0] == '/')
				scan_dir(rootfd, dir, &f);
	}
	for (size_t i = 0; i < RN_ARRAY_SIZE(lib_dirs); i++)
		scan_dir(rootfd, lib_dirs[i], &f);
	for (size_t i = 0; i < RN_ARRAY_SIZE(python_prefixes); i++)
		scan_python(rootfd, python_prefixes[i], &f);
	if (f.n == 0)
		return rn_error_set(
			err, ENOENT,
			"no libnccl in the image (looked in LD_LIBRARY_PATH, "
			"/usr/lib*, /usr/local/lib, /usr/local/cuda/lib64, /opt/conda/lib "
			"and pip's nvidia/nccl/lib)");
	*out = f.oldest;
	if (f.others[0]) {
		out->where[0] = '\0';
		note(out->where, sizeof(out->where), "%s (the oldest; also ", f.oldest.where);
		note(out->where, sizeof(out->where), "%s)", f.others);
	}
	if (ret_n)
		*ret_n = f.n;
	return 0;
}
