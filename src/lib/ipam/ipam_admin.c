// SPDX-License-Identifier: Apache-2.0
/*
 * The operators' commands over a store (rdmans ipam ls, show, release, gc):
 * listing with the damaged entries, releasing one address or one damaged
 * record, and the repair of what crashes and hand edits leave behind. Each
 * change is made only while the entry is still what was read.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmans/cleanup.h"
#include "rdmans/ipam_admin.h"
#include "rdmans/util.h"
#include "ipam_common.h"

/* A filter field lets a value through when it is unset (NULL) or equal; a container ID by prefix. */
static bool field_passes(const char *want, const char *have)
{
	return !want || strcmp(want, have) == 0;
}

static bool prefix_passes(const char *prefix, const char *have)
{
	return !prefix || strncmp(prefix, have, strlen(prefix)) == 0;
}

static bool owner_filter(const struct rn_ipam_filter *f)
{
	return f && (f->node || f->network || f->container_id || f->pod || f->ifname);
}

static bool match_filter(const struct rn_ipam_filter *f, const struct rn_ipam_record *r)
{
	return !f ||
	       (field_passes(f->scope, r->scope) && field_passes(f->node, r->node) &&
		field_passes(f->network, r->network) &&
		prefix_passes(f->container_id, r->container_id) && field_passes(f->pod, r->pod) &&
		field_passes(f->ifname, r->ifname) && (!f->ip || rn_ipam_same_ip(f->ip, r->ip)));
}

static int record_cmp(const void *x, const void *y)
{
	const struct rn_ipam_record *a = x, *b = y;
	struct rn_ip ia = { 0 }, ib = { 0 };
	int c = strcmp(a->scope, b->scope);

	if (c)
		return c;
	c = strcmp(a->pool, b->pool);
	if (c)
		return c;
	(void)rn_ip_parse(a->ip, &ia);
	(void)rn_ip_parse(b->ip, &ib);
	if (ia.family != ib.family)
		return ia.family < ib.family ? -1 : 1;
	return ia.v < ib.v ? -1 : ia.v > ib.v ? 1 : 0;
}

/* Keeps the damaged entries of c that f lets through; appends them to *out. */
static int take_damaged(struct rn_ipam_collect *c, const struct rn_ipam_filter *f,
			struct rn_ipam_damaged **out, size_t *n_out)
{
	for (size_t i = 0; i < c->n_damaged; i++) {
		const struct rn_ipam_damaged *d = &c->damaged[i];

		if (owner_filter(f) || (f && !field_passes(f->scope, d->scope)) ||
		    (f && f->ip && (d->attachment || !rn_ipam_same_ip(f->ip, d->key))))
			continue;
		if (RN_GROW(*out, NULL, *n_out + 1) < 0)
			return -ENOMEM;
		(*out)[(*n_out)++] = *d;
	}
	return 0;
}

int rn_ipam_list(struct rn_ipam_store *s, const struct rn_ipam_filter *f,
		 struct rn_ipam_record **ret, size_t *ret_n, struct rn_ipam_damaged **ret_damaged,
		 size_t *ret_n_damaged, struct rn_error *err)
{
	struct rn_ipam_collect c = { .kind = RN_IPAM_KIND_ADDRESS };
	struct rn_ipam_collect atts = { .kind = RN_IPAM_KIND_ATTACHMENT };
	struct rn_ipam_damaged *damaged = NULL;
	struct rn_ipam_record *recs;
	size_t n = 0, n_damaged = 0;
	int r;

	r = rn_ipam_collect_all(s, f ? f->scope : NULL, &c, err);
	if (r == 0 && ret_damaged)
		r = take_damaged(&c, f, &damaged, &n_damaged);
	/* attachments only for what is damaged among them */
	if (r == 0 && ret_damaged && !owner_filter(f) && !(f && f->ip))
		r = rn_ipam_collect_all(s, f ? f->scope : NULL, &atts, err);
	if (r == 0 && ret_damaged)
		r = take_damaged(&atts, f, &damaged, &n_damaged);
	rn_ipam_collect_free(&atts);
	if (r < 0) {
		free(damaged);
		rn_ipam_collect_free(&c);
		return r == -ENOMEM ? rn_error_set(err, ENOMEM, "out of memory") : r;
	}
	recs = c.items;
	for (size_t i = 0; i < c.n; i++)
		if (match_filter(f, &recs[i]))
			recs[n++] = recs[i];
	if (n > 1)
		qsort(recs, n, sizeof(*recs), record_cmp);
	c.items = NULL;
	rn_ipam_collect_free(&c);
	*ret = recs;
	*ret_n = n;
	if (ret_damaged) {
		*ret_damaged = damaged;
		*ret_n_damaged = n_damaged;
	}
	return 0;
}

int rn_ipam_attachment_get(struct rn_ipam_store *s, const char *scope, const char *id,
			   struct rn_ipam_attachment *ret, struct rn_error *err)
{
	uint64_t version;
	int r = rn_ipam_load_attachment(s, scope, id, ret, &version, err);

	if (r == -ENOENT)
		return rn_error_set(err, ENOENT, "no attachment %s in scope %s", id, scope);
	return r;
}

int rn_ipam_release(struct rn_ipam_store *s, const struct rn_ipam_record *rec, struct rn_error *err)
{
	struct rn_ipam_release_want w = { rec, false, NULL, 0 };
	bool released;
	int r = rn_ipam_release_locked(s, &w, false, &released, err);

	if (r == 0 && !released)
		return rn_error_set(err, ENOENT, "address %s is no longer held by %s", rec->ip,
				    rec->attachment);
	return r;
}

int rn_ipam_release_damaged(struct rn_ipam_store *s, const struct rn_ipam_damaged *d,
			    struct rn_error *err)
{
	struct rn_ip ip;
	int r = -ESTALE;

	if (d->attachment || !d->takes_address || rn_ip_parse(d->key, &ip) < 0)
		return rn_error_set(err, EINVAL,
				    "%s in scope %s is not an address record: 'rdmans ipam gc' "
				    "rebuilds damaged attachments",
				    d->key, d->scope);
	for (int i = 0; i < RN_IPAM_MAX_RETRIES && r == -ESTALE; i++) {
		_cleanup_free_ char *text = NULL;
		struct rn_ipam_record rec;
		struct rn_ipam_item it = { d->scope, d->pool, d->key, NULL, NULL, 0 };
		char why[1024];

		r = s->ops->addr_get(s, d->scope, d->pool, &ip, &text, &it.version, err);
		if (r == -ENOENT)
			return rn_error_set(err, ENOENT, "%s in scope %s is no longer stored",
					    d->key, d->scope);
		if (r < 0 && r != -EBADMSG)
			return r;
		rn_error_clear(err);
		if (r == 0 && rn_ipam_record_parse(text, &rec, NULL) == 0) {
			rn_ipam_misplaced(&it, &rec, why, sizeof(why));
			if (!why[0])
				return rn_error_set(err, EBUSY,
						    "%s in scope %s is a readable record now (held "
						    "by %s, container %s): not removed",
						    d->key, d->scope, rec.attachment,
						    rec.container_id);
		}
		r = s->ops->addr_drop(s, d->scope, d->pool, &ip, it.version, err);
	}
	if (r == -ESTALE)
		return rn_error_set(err, EAGAIN, "%s kept changing; try again", d->key);
	if (r == -ENOENT)
		return rn_error_set(err, ENOENT, "%s in scope %s is no longer stored", d->key,
				    d->scope);
	return r;
}

/* A damaged attachment: rewritten from the records naming it, or removed when none does. */
static int rebuild_damaged(struct rn_ipam_store *s, const struct rn_ipam_damaged *d, bool dry_run,
			   bool *done, struct rn_error *err)
{
	_cleanup_free_ char *text = NULL, *now_text = NULL;
	struct rn_ipam_attachment att, now;
	uint64_t version = 0;
	int token, r;

	*done = false;
	r = rn_ipam_lock_attachment(s, d->scope, d->key, &token, err);
	if (r < 0)
		return r;
	r = s->ops->att_get(s, d->scope, d->key, &now_text, &version, err);
	if (r == -ENOENT || (r == 0 && rn_ipam_attachment_parse(now_text, &now, NULL) == 0)) {
		r = 0; /* gone, or readable again (a new ADD): nothing to do */
		goto out;
	}
	if (r < 0 && r != -EBADMSG)
		goto out;
	rn_error_clear(err);
	r = rn_ipam_rebuild_attachment(s, d->scope, d->key, "", &att, err);
	if (r < 0)
		goto out;
	*done = true;
	if (dry_run)
		goto out;
	if (att.n == 0)
		r = s->ops->commit(s, d->scope, NULL, 0, d->key, version, RN_IPAM_ATT_DELETE, NULL,
				   err);
	else if (rn_ipam_attachment_format(&att, &text) == 0)
		r = s->ops->commit(s, d->scope, NULL, 0, d->key, version, RN_IPAM_ATT_PUT, text,
				   err);
	else
		r = rn_error_set(err, EINVAL, "attachment %s cannot be rebuilt", d->key);
	if (r == -ESTALE) {
		*done = false;
		r = 0; /* rewritten meanwhile: the next run sees it */
	}
out:
	rn_ipam_unlock_attachment(s, token);
	return r;
}

int rn_ipam_repair(struct rn_ipam_store *s, bool dry_run, struct rn_ipam_repair_stats *ret,
		   struct rn_error *err)
{
	struct rn_ipam_collect atts = { .kind = RN_IPAM_KIND_ATTACHMENT };
	struct rn_ipam_collect addrs = { .kind = RN_IPAM_KIND_ADDRESS };
	struct rn_ipam_collect damaged_atts = { .kind = RN_IPAM_KIND_ATTACHMENT };
	int r = 0;

	memset(ret, 0, sizeof(*ret));
	if (s->ops->sweep)
		r = s->ops->sweep(s, dry_run, &ret->temp_files, err);
	/* damaged attachments first: rebuilt, the orphan pass then sees what they hold */
	if (r == 0)
		r = rn_ipam_collect_all(s, NULL, &damaged_atts, err);
	for (size_t i = 0; r == 0 && i < damaged_atts.n_damaged; i++) {
		bool done;

		if (damaged_atts.damaged[i].key[0] == '(')
			continue;
		r = rebuild_damaged(s, &damaged_atts.damaged[i], dry_run, &done, err);
		ret->rebuilt += done;
	}
	if (r == 0)
		r = rn_ipam_collect_all(s, NULL, &addrs, err);
	ret->damaged = addrs.n_damaged;
	for (size_t i = 0; r == 0 && i < addrs.n; i++) {
		const struct rn_ipam_record *rec = (struct rn_ipam_record *)addrs.items + i;
		struct rn_ipam_release_want w = { rec, true, NULL, 0 };
		bool gone;

		r = rn_ipam_release_locked(s, &w, dry_run, &gone, err);
		ret->orphans += gone;
	}
	if (r == 0)
		r = rn_ipam_collect_all(s, NULL, &atts, err);
	for (size_t i = 0; r == 0 && i < atts.n; i++) {
		const struct rn_ipam_attachment *a = (struct rn_ipam_attachment *)atts.items + i;
		struct rn_ipam_attachment now;
		uint64_t version;
		bool any = false;
		int token;

		r = rn_ipam_lock_attachment(s, a->scope, a->id, &token, err);
		if (r < 0)
			break;
		r = rn_ipam_load_attachment(s, a->scope, a->id, &now, &version, err);
		for (size_t h = 0; r == 0 && h < now.n && !any; h++) {
			struct rn_ipam_held_state st;

			r = rn_ipam_verify_held(s, a->scope, a->id, &now.held[h], &st, err);
			any = st.ours;
		}
		if (r == 0 && !any) {
			ret->empty++;
			if (!dry_run)
				r = s->ops->commit(s, a->scope, NULL, 0, a->id, version,
						   RN_IPAM_ATT_DELETE, NULL, err);
		}
		if (r == -ENOENT || r == -EBADMSG || r == -ESTALE) {
			rn_error_clear(err);
			r = 0;
		}
		rn_ipam_unlock_attachment(s, token);
	}
	rn_ipam_collect_free(&atts);
	rn_ipam_collect_free(&addrs);
	rn_ipam_collect_free(&damaged_atts);
	return r;
}
