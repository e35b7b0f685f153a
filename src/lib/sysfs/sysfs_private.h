/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the files of the sysfs reader share (sysfs.c defines it): paths under
 * rn_sysfs_root(), directory listings, the RDMA device lookups. Private to
 * src/lib/sysfs*.c, the only code that spells a sysfs path.
 */
#ifndef RDMANS_SYSFS_PRIVATE_H
#define RDMANS_SYSFS_PRIVATE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdmans/error.h"
#include "rdmans/sysfs.h"

/* A growable, deduplicated list of strings. */
struct strv {
	char **v;
	size_t n;
	size_t cap;
};

void rn_sysfs_strv_free(struct strv *s);
int rn_sysfs_strv_add(struct strv *s, const char *str);

struct rdma_info {
	struct rn_sysfs_rdma_dev pub;
	char dir[PATH_MAX]; /* ROOT/class/infiniband/DEV */
	char netdir[PATH_MAX]; /* the PCI (or other parent) device whose net/ to read, or "" */
};

int rn_sysfs_parse_u32(const char *s, uint32_t *ret);
/* ROOT/<fmt...> into buf. */
int rn_sysfs_path(char *buf, size_t len, struct rn_error *err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
int rn_sysfs_check_root(struct rn_error *err);
bool rn_sysfs_exists(const char *path);
int rn_sysfs_list_dir(const char *path, bool numeric, struct strv *out);
int rn_sysfs_list_sub(const char *dir, const char *sub, bool numeric, struct strv *out,
		      struct rn_error *err);
int rn_sysfs_list_root_dir(const char *rel, char *path, size_t len, struct strv *out,
			   struct rn_error *err);
int rn_sysfs_rdma_dir(const char *name, char *buf, size_t len, struct rn_error *err);
int rn_sysfs_rdma_parent(struct rdma_info *info, struct rn_error *err);
int rn_sysfs_gid_ndevs(const char *dir, size_t limit, struct strv *out);
bool rn_sysfs_rxe_parent(const char *devdir, char *buf, size_t len);
int rn_sysfs_rdma_names(struct strv *out, struct rn_error *err);
int rn_sysfs_rdma_list_with(bool with_netdevs, struct rn_sysfs_rdma_dev **ret, size_t *ret_n,
			    struct rn_error *err);

/* Reads entry `name` of directory `dir` into out: 0, 1 to leave it out, or -errno (err set). */
typedef int (*rn_sysfs_entry_fn)(const char *dir, const char *name, void *out,
				 struct rn_error *err);
/*
 * Reads each entry of ROOT/rel (in natural order; an absent directory has
 * none) with read_one into a new array of elements of `size` bytes, *ret
 * (NULL when empty; free()), the ones kept counted in *ret_n.
 */
int rn_sysfs_read_entries(const char *rel, size_t size, rn_sysfs_entry_fn read_one, void **ret,
			  size_t *ret_n, struct rn_error *err);

#endif
