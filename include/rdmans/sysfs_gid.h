/* SPDX-License-Identifier: Apache-2.0 */
/* The GID tables, as the sysfs reader reads them (sysfs_gid.c; the entries' helpers: gid.h). */
/* sysfs.h first: it includes this header once its own types are there */
#include "rdmans/sysfs.h"

#ifndef RDMANS_SYSFS_GID_H
#define RDMANS_SYSFS_GID_H

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdmans/error.h"
#include "rdmans/gid.h"

struct rn_gid_entry {
	char dev[RN_RDMA_NAME_MAX];
	uint32_t port;
	uint32_t index;
	uint8_t raw[16];
	char gid[40]; /* as sysfs prints it: "fe80:0000:...:a458" */
	enum rn_gid_type type;
	char netdev[IF_NAMESIZE]; /* "" when the entry has none */
	char ipv4[16]; /* "a.b.c.d" for an IPv4-mapped GID, else "" */
};

struct rn_gid_table {
	size_t n;
	struct rn_gid_entry *entries;
};

/*
 * Reads the non-empty GID entries of every port of `dev` (or of every device
 * when dev is NULL), sorted by device, port, index. Free with rn_gid_table_free().
 */
int rn_sysfs_gids(const char *dev, struct rn_gid_table *out, struct rn_error *err);
void rn_gid_table_free(struct rn_gid_table *t);

#endif
