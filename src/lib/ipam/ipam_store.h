/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Private: what an IPAM store does for ipam*.c. Three stores implement it:
 * ipam_store_local.c (files, flock stripes, rename(RENAME_NOREPLACE)),
 * ipam_store_etcd.c (keys, txns that compare revisions) and
 * ipam_store_k8s.c (custom resources, resourceVersion preconditions).
 *
 * Keys: an address record lives at (scope, pool, address), an attachment at
 * (scope, attachment id). A version is what a later write compares against:
 * etcd's mod_revision, 0 for "absent"; the local store, which serialises
 * work on an attachment with a lock instead, reports 1 for a present
 * attachment and the inode number for an address record (what its
 * compare-and-delete checks).
 */
#ifndef RDMANS_IPAM_STORE_H
#define RDMANS_IPAM_STORE_H

#include <stdint.h>

#include "rdmans/ipam.h"

struct rn_ipam_ref {
	const char *pool;
	struct rn_ip ip;
	const char *text; /* update(): the new record */
	uint64_t version; /* what it must still be */
};

enum rn_ipam_att_op {
	RN_IPAM_ATT_KEEP, /* compare only */
	RN_IPAM_ATT_PUT, /* replace with the given text */
	RN_IPAM_ATT_DELETE, /* remove */
};

enum rn_ipam_kind {
	RN_IPAM_KIND_ADDRESS,
	RN_IPAM_KIND_ATTACHMENT,
};

/*
 * One stored entry, as a listing finds it. `key` is where it is stored: the
 * address its key names ("10.56.0.7", or the raw key when that is no
 * address) for address records, the attachment id for attachments. An
 * entry that cannot be read as text (a symlink, a directory) comes with
 * text NULL and `why`; it still takes its key.
 */
struct rn_ipam_item {
	const char *scope;
	const char *pool; /* address records */
	const char *key;
	const char *text;
	const char *why;
	uint64_t version;
};

typedef int (*rn_ipam_list_fn)(void *ctx, const struct rn_ipam_item *it);

struct rn_ipam_store_ops {
	void (*close)(struct rn_ipam_store *s);
	int (*ping)(struct rn_ipam_store *s, struct rn_error *err);
	/* Serialises work on one attachment across processes; NULL where versions do it. */
	int (*lock)(struct rn_ipam_store *s, const char *scope, const char *id, int *ret_token,
		    struct rn_error *err);
	void (*unlock)(struct rn_ipam_store *s, int token);
	/* -ENOENT when absent. *ret_text is malloc'ed. */
	int (*att_get)(struct rn_ipam_store *s, const char *scope, const char *id, char **ret_text,
		       uint64_t *ret_version, struct rn_error *err);
	/*
	 * -ENOENT when absent; -EBADMSG (no text, *ret_version set) when the
	 * key holds something that is not a readable record (a symlink, a
	 * directory, a FIFO).
	 */
	int (*addr_get)(struct rn_ipam_store *s, const char *scope, const char *pool,
			const struct rn_ip *ip, char **ret_text, uint64_t *ret_version,
			struct rn_error *err);
	/*
	 * Removes an address key only if it still is what was read at version
	 * (compare-and-delete); -ESTALE when it changed, -ENOENT when gone.
	 */
	int (*addr_drop)(struct rn_ipam_store *s, const char *scope, const char *pool,
			 const struct rn_ip *ip, uint64_t version, struct rn_error *err);
	/* The taken addresses of [first, last] in a pool, sorted ascending, malloc'ed. */
	int (*probe)(struct rn_ipam_store *s, const char *scope, const char *pool, int family,
		     rn_u128 first, rn_u128 last, rn_u128 **ret_taken, size_t *ret_n,
		     struct rn_error *err);
	/*
	 * Creates the address record if it is absent and stores the attachment
	 * (which lists it), if the attachment is still at *att_version; updates
	 * *att_version. -EEXIST: the address is taken; -ESTALE: the attachment changed.
	 */
	int (*claim)(struct rn_ipam_store *s, const char *scope, const char *pool,
		     const struct rn_ip *ip, const char *rec_text, const char *id,
		     const char *att_text, uint64_t *att_version, struct rn_error *err);
	/*
	 * Rewrites (text != NULL) or deletes (text == NULL) the address records
	 * in refs, each still at its version, and applies att_op to the
	 * attachment `id` (NULL: none) still at att_version. All or nothing
	 * where the store can (etcd); -ESTALE when something changed.
	 */
	int (*commit)(struct rn_ipam_store *s, const char *scope, const struct rn_ipam_ref *refs,
		      size_t n, const char *id, uint64_t att_version, enum rn_ipam_att_op att_op,
		      const char *att_text, struct rn_error *err);
	/* Calls fn for every record of a kind in scope (NULL: every scope). */
	int (*list)(struct rn_ipam_store *s, const char *scope, enum rn_ipam_kind kind,
		    rn_ipam_list_fn fn, void *ctx, struct rn_error *err);
	/* Removes (or counts) what crashed writers left behind; NULL when nothing can be. */
	int (*sweep)(struct rn_ipam_store *s, bool dry_run, size_t *ret_n, struct rn_error *err);
};

struct rn_ipam_store {
	const struct rn_ipam_store_ops *ops;
	size_t window; /* addresses per probe */
	/*
	 * Set by rn_ipam_add() while it runs: the ranges it will search. A
	 * store may read each range's first probe window (from the
	 * attachment's hint) together with the attachment, in one request,
	 * and answer that probe from it (etcd: one read and one txn per ADD).
	 */
	const struct rn_ipam_config *read_ahead;
};

int rn_ipam_store_local_open(const struct rn_ipam_config *c, struct rn_ipam_store **ret,
			     struct rn_error *err);
int rn_ipam_store_etcd_open(const struct rn_ipam_config *c, struct rn_ipam_store **ret,
			    struct rn_error *err);
int rn_ipam_store_k8s_open(const struct rn_ipam_config *c, struct rn_ipam_store **ret,
			   struct rn_error *err);

#endif
