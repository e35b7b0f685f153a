/* SPDX-License-Identifier: Apache-2.0 */
/* The kernel's own objects: RDMA character devices, modules, the boot ID (sysfs_kernel.c). */
/* sysfs.h first: it includes this header once its own types are there */
#include "rdmans/sysfs.h"

#ifndef RDMANS_SYSFS_KERNEL_H
#define RDMANS_SYSFS_KERNEL_H

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdmans/error.h"

/* A character device of class/infiniband_verbs (uverbsN) or class/misc (rdma_cm). */
struct rn_sysfs_chardev {
	char name[40]; /* "uverbs0", "rdma_cm" */
	char ibdev[RN_RDMA_NAME_MAX]; /* the RDMA device a uverbs node serves; "" for rdma_cm */
	unsigned major, minor;
};

/*
 * The uverbs nodes of class/infiniband_verbs (none when ib_uverbs is not
 * loaded), in listing order; ones gone since the listing are left out.
 * Free *ret with free().
 */
int rn_sysfs_uverbs_list(struct rn_sysfs_chardev **ret, size_t *ret_n, struct rn_error *err);
/* class/misc/rdma_cm; -ENOENT saying how to load rdma_ucm when it is missing. */
int rn_sysfs_rdma_cm(struct rn_sysfs_chardev *out, struct rn_error *err);

/* Whether kernel module `name` is loaded (module/NAME exists). */
bool rn_sysfs_module_loaded(const char *name);
/* module/NAME/version into buf; -errno when unreadable. */
int rn_sysfs_module_version(const char *name, char *buf, size_t len);

/* This boot's ID (/proc/sys/kernel/random/boot_id, a UUID: 37 bytes); -errno when unreadable. */
int rn_kernel_boot_id(char *buf, size_t len);

#endif
