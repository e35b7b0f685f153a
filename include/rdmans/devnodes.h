/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The character devices a container needs to use RDMA devices, which no
 * network namespace move carries along: /dev/infiniband/uverbsN (one per
 * RDMA device, ib_uverbs) and /dev/infiniband/rdma_cm (rdma_ucm). Read from
 * sysfs under rn_sysfs_root(); class/infiniband_verbs is not tagged by
 * network namespace, so devices that moved into pods are listed too.
 */
#ifndef RDMANS_DEVNODES_H
#define RDMANS_DEVNODES_H

#include <limits.h>
#include <stddef.h>

#include "rdmans/error.h"
#include "rdmans/sysfs.h"

#define RN_DEV_INFINIBAND "/dev/infiniband"

struct rn_devnode {
	char path[64]; /* "/dev/infiniband/uverbs0" */
	char dev[RN_RDMA_NAME_MAX]; /* the RDMA device it serves, "" for rdma_cm */
	unsigned int major, minor;
};

/* Every uverbs node, sorted by RDMA device name (natural order). Free *ret with free(). */
int rn_devnodes_uverbs(struct rn_devnode **ret, size_t *ret_n, struct rn_error *err);
/* /dev/infiniband/rdma_cm; -ENOENT with a message when rdma_ucm is not loaded. */
int rn_devnodes_rdma_cm(struct rn_devnode *out, struct rn_error *err);

#endif
