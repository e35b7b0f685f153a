/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The reconciler (rdmans ipam reconcile; ipam_reconcile.c): this node's
 * addresses whose pod is gone, released once no ADD can still be in flight.
 */
#ifndef RDMANS_IPAM_RECONCILE_H
#define RDMANS_IPAM_RECONCILE_H

#include <stdbool.h>
#include <stddef.h>

#include "rdmans/error.h"
#include "rdmans/ipam.h"

/* The default grace: longer than any CNI ADD runs (kubelet gives up after 4 minutes). */
#define RN_IPAM_RECONCILE_GRACE_S 300

struct rn_ipam_reconcile_opts {
	const char *node; /* this node: no other node's record is touched */
	long grace_s; /* a record younger than this (its own time=) is left alone; a time
			 * unreadable or further ahead of now than this never is */
	bool dry_run;
	long long now; /* seconds since the epoch; 0: the clock */
};

enum rn_ipam_verdict {
	RN_IPAM_RELEASED, /* netns gone, container not running, older than the grace */
	RN_IPAM_KEPT_YOUNG, /* netns gone, but within the grace period */
	RN_IPAM_KEPT_UNKNOWN, /* cannot be told from here (why says): never guessed */
	RN_IPAM_KEPT_RUNNING, /* netns path gone but its container still runs */
	RN_IPAM_CHANGED, /* changed since it was judged (a new ADD): left alone */
	RN_IPAM_DAMAGED, /* a damaged entry: reported, not guessed */
};

/* Called for each record acted on or reported (not for live ones); rec or d. */
typedef void (*rn_ipam_reconcile_fn)(void *ctx, enum rn_ipam_verdict v,
				     const struct rn_ipam_record *rec,
				     const struct rn_ipam_damaged *d, const char *why);

struct rn_ipam_reconcile_stats {
	size_t records, mine, alive, released, young, unknown, running, changed, damaged;
};

/*
 * Releases this node's address records whose attachment's network
 * namespace no longer exists (rn_netns_path_state()) and whose container
 * runs no process (where this process sees the host's PIDs), once they are
 * older than the grace period. Each release is a compare-and-delete of the
 * record exactly as judged (etcd: its mod_revision; local: its inode and
 * text, under the attachment's lock): an ADD that took the address
 * meanwhile keeps it.
 */
int rn_ipam_reconcile(struct rn_ipam_store *s, const struct rn_ipam_reconcile_opts *o,
		      rn_ipam_reconcile_fn fn, void *ctx, struct rn_ipam_reconcile_stats *ret,
		      struct rn_error *err);

#endif
