/* SPDX-License-Identifier: Apache-2.0 */
/* The NCCL an image holds: its library found and its version read (nccl_version.c). */
#ifndef RDMANS_NCCL_VERSION_H
#define RDMANS_NCCL_VERSION_H

#include <stddef.h>

#include "rdmans/error.h"
#include "rdmans/nccl.h"

/*
 * Finds the NCCL library of a root filesystem (rootfd from rn_rootfs_open(),
 * or an O_PATH fd of "/" or /proc/PID/root): libnccl.so.2.X.Y in the usual
 * library directories, pip's nvidia/nccl/lib and conda's, and the
 * directories of `ld_library_path` (the container's LD_LIBRARY_PATH, may be
 * NULL); a libnccl.so.2 without the version in its name is read for NCCL's
 * "NCCL version X.Y.Z" string. Several: the oldest wins (the settings must
 * suit it), *ret_n says how many. -ENOENT (err says where it looked) when
 * there is none.
 */
int rn_nccl_version_find(int rootfd, const char *ld_library_path, struct rn_nccl_version *out,
			 size_t *ret_n, struct rn_error *err);

#endif
