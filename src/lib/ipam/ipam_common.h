/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Private to librdmans-ipam: the steps over a store (ipam_store.h) that the
 * CNI verbs (ipam.c), the operators' commands (ipam_admin.c) and the
 * reconciler (ipam_reconcile.c) share, one copy each (ipam_common.c).
 *
 * The address record is the truth: an address is held by an attachment when
 * its record names that attachment. Whatever an attachment lists is checked
 * against the address records (rn_ipam_verify_held) before it is trusted,
 * and a damaged attachment is rebuilt from the records naming it.
 */
#ifndef RDMANS_IPAM_COMMON_H
#define RDMANS_IPAM_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdmans/ipam.h"
#include "ipam_store.h"

/* How often a step that lost a race (-ESTALE) is tried again before EAGAIN. */
#define RN_IPAM_MAX_RETRIES 16

/* ---- one attachment ------------------------------------------------------ */

/* Takes the store's lock on attachment (scope, id); *token for the unlock (-1: none taken). */
int rn_ipam_lock_attachment(struct rn_ipam_store *s, const char *scope, const char *id, int *token,
			    struct rn_error *err);
void rn_ipam_unlock_attachment(struct rn_ipam_store *s, int token);

/* Reads and checks the attachment; -ENOENT when there is none, -EBADMSG when damaged. */
int rn_ipam_load_attachment(struct rn_ipam_store *s, const char *scope, const char *id,
			    struct rn_ipam_attachment *att, uint64_t *version,
			    struct rn_error *err);

/* What the store says about one address an attachment lists. */
struct rn_ipam_held_state {
	bool ours; /* its record names this attachment */
	bool damaged; /* its key holds something that is no record (version: what was read) */
	struct rn_ip ip;
	uint64_t version;
	struct rn_ipam_record rec;
};

/* Fills *st for h, listed by attachment (scope, id); fails only when the store does. */
int rn_ipam_verify_held(struct rn_ipam_store *s, const char *scope, const char *id,
			const struct rn_ipam_held *h, struct rn_ipam_held_state *st,
			struct rn_error *err);

/*
 * An attachment rebuilt from the address records naming it, for one whose
 * own record is damaged: the records of `container` if any names it, else
 * of the container the first one names. None names it: att->n is 0.
 */
int rn_ipam_rebuild_attachment(struct rn_ipam_store *s, const char *scope, const char *id,
			       const char *container, struct rn_ipam_attachment *att,
			       struct rn_error *err);

/* ---- listings ------------------------------------------------------------ */

/* Every entry of one kind in a scope, parsed; what cannot be read goes to damaged[]. */
struct rn_ipam_collect {
	enum rn_ipam_kind kind;
	void *items; /* struct rn_ipam_record[] or struct rn_ipam_attachment[] */
	uint64_t *versions;
	char **texts; /* when keep_text */
	size_t n, cap;
	bool keep_text;
	struct rn_ipam_damaged *damaged;
	size_t n_damaged, cap_damaged;
};

/* Lists scope (NULL: every scope) into c, whose kind (and keep_text) the caller set. */
int rn_ipam_collect_all(struct rn_ipam_store *s, const char *scope, struct rn_ipam_collect *c,
			struct rn_error *err);
void rn_ipam_collect_free(struct rn_ipam_collect *c);

/* Why a readable address record does not belong where it is stored ("" when it does). */
void rn_ipam_misplaced(const struct rn_ipam_item *it, const struct rn_ipam_record *rec, char *why,
		       size_t len);

/* Whether two address texts name the same address (false when either is none). */
bool rn_ipam_same_ip(const char *x, const char *y);

/* ---- releasing one address ----------------------------------------------- */

/* What must still hold for a release to go ahead. */
struct rn_ipam_release_want {
	const struct rn_ipam_record *rec; /* same attachment and container */
	bool only_orphan; /* only when no attachment lists it */
	const char *text; /* exactly this text at this version (the reconciler) */
	uint64_t version;
};

/*
 * Releases the address record w->rec names, under its attachment's lock, if
 * it still is what w says (and drops it from its attachment; an attachment
 * left empty goes). *released tells whether it did (or, dry_run, would have).
 */
int rn_ipam_release_locked(struct rn_ipam_store *s, const struct rn_ipam_release_want *w,
			   bool dry_run, bool *released, struct rn_error *err);

#endif
