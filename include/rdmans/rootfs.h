/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Files inside a container's root filesystem, written from the host before
 * the container starts (an OCI hook runs before pivot_root, when
 * /proc/PID/root is still the host's root).
 *
 * Every path is resolved with openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS)
 * against the rootfs directory: "/" and ".." stop at the rootfs, an image's
 * absolute symlink (/etc -> /somewhere) is followed inside it, as the
 * container itself will see it, and /proc magic links are refused. Nothing
 * an image holds can make these functions touch a file outside its rootfs.
 */
#ifndef RDMANS_ROOTFS_H
#define RDMANS_ROOTFS_H

#include <stddef.h>
#include <sys/types.h>

#include "rdmans/error.h"

/* An O_PATH directory fd of the rootfs at host path `path`. */
int rn_rootfs_open(const char *path, struct rn_error *err);

/*
 * Opens `path` inside the root (flags as open(2), without O_CREAT): an fd,
 * or -errno. For readers that walk directories (rn_nccl_version_find()).
 */
int rn_rootfs_openat(int rootfd, const char *path, int flags);

/*
 * Reads `path` (absolute, inside the root) into *ret, NUL-terminated.
 * -ENOENT (and err set) when it does not exist; -EFBIG when over max bytes.
 */
int rn_rootfs_read(int rootfd, const char *path, size_t max, char **ret, struct rn_error *err);

/*
 * Replaces `path` (absolute, inside the root) with content: a temporary file
 * in the same directory, renamed over it, so readers see the old file or the
 * new one. Missing parent directories are created (0755). A symlink at
 * `path` itself is replaced, not followed. -EROFS with a message saying so
 * when the filesystem is read-only.
 */
int rn_rootfs_write(int rootfd, const char *path, const char *content, mode_t mode,
		    struct rn_error *err);

#endif
