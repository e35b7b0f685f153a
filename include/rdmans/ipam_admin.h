/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The operators' commands over an IPAM store (rdmans ipam ls, show, release,
 * gc; ipam_admin.c): what is stored, damaged entries included, and the
 * release and repair of what a crash, a hand edit or a lost DEL left.
 */
#ifndef RDMANS_IPAM_ADMIN_H
#define RDMANS_IPAM_ADMIN_H

#include <stdbool.h>
#include <stddef.h>

#include "rdmans/error.h"
#include "rdmans/ipam.h"

struct rn_ipam_filter {
	const char *scope; /* NULL: every scope */
	const char *node; /* NULL: any */
	const char *network; /* CNI network name */
	const char *container_id; /* prefix match */
	const char *pod; /* "ns/name" */
	const char *ifname;
	const char *ip; /* exact */
};

/*
 * Every address record matching f (NULL: all), sorted by scope, pool,
 * address; and, when ret_damaged is not NULL, every damaged entry (address
 * records and attachments) in f's scope, of f's address if given. Owner
 * filters (node, network, container, pod, ifname) cannot match a damaged
 * entry: with one of them, none is returned.
 */
int rn_ipam_list(struct rn_ipam_store *s, const struct rn_ipam_filter *f,
		 struct rn_ipam_record **ret, size_t *ret_n, struct rn_ipam_damaged **ret_damaged,
		 size_t *ret_n_damaged, struct rn_error *err);
/* The attachment holding rec (-ENOENT when none does). */
int rn_ipam_attachment_get(struct rn_ipam_store *s, const char *scope, const char *id,
			   struct rn_ipam_attachment *ret, struct rn_error *err);
/* Releases one address (and drops it from its attachment). */
int rn_ipam_release(struct rn_ipam_store *s, const struct rn_ipam_record *rec,
		    struct rn_error *err);
/*
 * Removes a damaged address record, judged again at removal and removed
 * only if it is still the same damaged entry (compare-and-delete): -EBUSY
 * when it is a readable record now, -ENOENT when it is gone.
 */
int rn_ipam_release_damaged(struct rn_ipam_store *s, const struct rn_ipam_damaged *d,
			    struct rn_error *err);

struct rn_ipam_repair_stats {
	size_t temp_files; /* crash leftovers removed (local store) */
	size_t orphans; /* address records no attachment holds */
	size_t empty; /* attachments holding nothing */
	size_t rebuilt; /* damaged attachments rewritten from their address records */
	size_t damaged; /* damaged address records left (rdmans ipam release --damaged) */
};
/* Removes what crashes and hand edits leave behind; dry_run counts only. */
int rn_ipam_repair(struct rn_ipam_store *s, bool dry_run, struct rn_ipam_repair_stats *ret,
		   struct rn_error *err);

#endif
