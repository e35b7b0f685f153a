// SPDX-License-Identifier: Apache-2.0
/*
 * The steps over a store that the CNI verbs, the operators' commands and the
 * reconciler share (ipam_common.h): an attachment's lock, its reading, what
 * it holds checked against the address records, its rebuilding; listings;
 * the release of one address that goes ahead only while it is as judged.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmans/cleanup.h"
#include "rdmans/util.h"
#include "ipam_common.h"

int rn_ipam_lock_attachment(struct rn_ipam_store *s, const char *scope, const char *id, int *token,
			    struct rn_error *err)
{
	*token = -1;
	return s->ops->lock ? s->ops->lock(s, scope, id, token, err) : 0;
}

void rn_ipam_unlock_attachment(struct rn_ipam_store *s, int token)
{
	if (s->ops->unlock && token >= 0)
		s->ops->unlock(s, token);
}

int rn_ipam_verify_held(struct rn_ipam_store *s, const char *scope, const char *id,
			const struct rn_ipam_held *h, struct rn_ipam_held_state *st,
			struct rn_error *err)
{
	_cleanup_free_ char *text = NULL;
	int r;

	memset(st, 0, sizeof(*st));
	if (rn_ip_parse(h->ip, &st->ip) < 0)
		return 0;
	r = s->ops->addr_get(s, scope, h->pool, &st->ip, &text, &st->version, err);
	if (r == -ENOENT || r == -EBADMSG) {
		st->damaged = r == -EBADMSG;
		rn_error_clear(err); /* absent, or damaged: not provably ours */
		return 0;
	}
	if (r < 0)
		return r;
	if (rn_ipam_record_parse(text, &st->rec, NULL) < 0 || !rn_ipam_same_ip(st->rec.ip, h->ip)) {
		st->damaged = true;
		return 0; /* damaged: not provably ours */
	}
	st->ours = strcmp(st->rec.attachment, id) == 0 && strcmp(st->rec.scope, scope) == 0 &&
		   strcmp(st->rec.pool, h->pool) == 0;
	return 0;
}

/* Reads and checks the attachment; -ENOENT when there is none. */
int rn_ipam_load_attachment(struct rn_ipam_store *s, const char *scope, const char *id,
			    struct rn_ipam_attachment *att, uint64_t *version, struct rn_error *err)
{
	_cleanup_free_ char *text = NULL;
	int r;

	*version = 0;
	r = s->ops->att_get(s, scope, id, &text, version, err);
	if (r < 0)
		return r;
	r = rn_ipam_attachment_parse(text, att, err);
	if (r == 0 && (strcmp(att->id, id) || strcmp(att->scope, scope)))
		r = rn_error_set(err, EBADMSG, "it says attachment=%s scope=%s", att->id,
				 att->scope);
	if (r < 0)
		return rn_error_wrap(err, "attachment %s in scope %s", id, scope);
	return 0;
}

/* ---- listing ------------------------------------------------------------- */

static int add_damaged(struct rn_ipam_collect *c, const struct rn_ipam_item *it, const char *why)
{
	struct rn_ipam_damaged *d;
	struct rn_ip ip;

	if (RN_GROW(c->damaged, &c->cap_damaged, c->n_damaged + 1) < 0)
		return -ENOMEM;
	d = &c->damaged[c->n_damaged++];
	memset(d, 0, sizeof(*d));
	d->attachment = c->kind == RN_IPAM_KIND_ATTACHMENT;
	rn_strscpy(d->scope, sizeof(d->scope), it->scope);
	rn_strscpy(d->pool, sizeof(d->pool), it->pool ? it->pool : "");
	if (rn_strscpy(d->key, sizeof(d->key), it->key) < 0)
		rn_strscpy(d->key, sizeof(d->key), "(name too long)");
	d->takes_address = !d->attachment && it->pool && rn_ip_parse(d->key, &ip) == 0;
	snprintf(d->why, sizeof(d->why), "%s", why);
	d->version = it->version;
	return 0;
}

/* Why a readable address record does not belong where it is stored ("" when it does). */
void rn_ipam_misplaced(const struct rn_ipam_item *it, const struct rn_ipam_record *rec, char *why,
		       size_t len)
{
	struct rn_ip a, b;

	why[0] = '\0';
	if (rn_ip_parse(it->key, &a) < 0 || rn_ip_parse(rec->ip, &b) < 0 || a.family != b.family ||
	    a.v != b.v)
		snprintf(why, len, "it says ip=%s but is stored as %s", rec->ip, it->key);
	else if (strcmp(rec->scope, it->scope) || strcmp(rec->pool, it->pool ? it->pool : ""))
		snprintf(why, len, "it says scope=%s pool=%s but is stored in %s/%s", rec->scope,
			 rec->pool, it->scope, it->pool ? it->pool : "");
}

static int collect_fn(void *ctx, const struct rn_ipam_item *it)
{
	struct rn_ipam_collect *c = ctx;
	size_t size = c->kind == RN_IPAM_KIND_ADDRESS ? sizeof(struct rn_ipam_record)
						      : sizeof(struct rn_ipam_attachment);
	struct rn_error perr = { 0 };
	char why[1024];
	void *slot;
	int r;

	if (c->n == c->cap) {
		size_t cap = c->cap, vcap = c->cap, tcap = c->cap;

		if (rn_grow(&c->items, &cap, c->n + 1, size) < 0 ||
		    RN_GROW(c->versions, &vcap, c->n + 1) < 0 ||
		    (c->keep_text && RN_GROW(c->texts, &tcap, c->n + 1) < 0))
			return -ENOMEM;
		c->cap = cap;
	}
	if (it->why || !it->text)
		return add_damaged(c, it, it->why ? it->why : "unreadable");
	slot = (char *)c->items + c->n * size;
	if (c->kind == RN_IPAM_KIND_ADDRESS)
		r = rn_ipam_record_parse(it->text, slot, &perr);
	else
		r = rn_ipam_attachment_parse(it->text, slot, &perr);
	if (r < 0)
		return add_damaged(c, it, it->text[0] ? perr.msg : "it is empty");
	if (c->kind == RN_IPAM_KIND_ADDRESS) {
		rn_ipam_misplaced(it, slot, why, sizeof(why));
		if (why[0])
			return add_damaged(c, it, why);
	} else if (strcmp(((struct rn_ipam_attachment *)slot)->id, it->key) ||
		   strcmp(((struct rn_ipam_attachment *)slot)->scope, it->scope)) {
		snprintf(why, sizeof(why), "it says attachment=%s but is stored as %s",
			 ((struct rn_ipam_attachment *)slot)->id, it->key);
		return add_damaged(c, it, why);
	}
	if (c->keep_text) {
		c->texts[c->n] = strdup(it->text);
		if (!c->texts[c->n])
			return -ENOMEM;
	}
	c->versions[c->n++] = it->version;
	return 0;
}

int rn_ipam_collect_all(struct rn_ipam_store *s, const char *scope, struct rn_ipam_collect *c,
			struct rn_error *err)
{
	int r = s->ops->list(s, scope, c->kind, collect_fn, c, err);

	if (r == -ENOMEM)
		return rn_error_set(err, ENOMEM, "out of memory");
	return r;
}

void rn_ipam_collect_free(struct rn_ipam_collect *c)
{
	if (c->texts)
		for (size_t i = 0; i < c->n; i++)
			free(c->texts[i]);
	free(c->texts);
	free(c->items);
	free(c->versions);
	free(c->damaged);
}

/*
 * An attachment rebuilt from the address records naming it, for one whose
 * own record is damaged: the records of `container` if any names it, else
 * of the container the first one names; att->n is 0 when none names it.
 */
int rn_ipam_rebuild_attachment(struct rn_ipam_store *s, const char *scope, const char *id,
			       const char *container, struct rn_ipam_attachment *att,
			       struct rn_error *err)
{
	struct rn_ipam_collect addrs = { .kind = RN_IPAM_KIND_ADDRESS };
	const struct rn_ipam_record *recs, *pick = NULL;
	int r;

	memset(att, 0, sizeof(*att));
	rn_strscpy(att->id, sizeof(att->id), id);
	rn_strscpy(att->scope, sizeof(att->scope), scope);
	r = rn_ipam_collect_all(s, scope, &addrs, err);
	recs = addrs.items;
	for (size_t i = 0; r == 0 && i < addrs.n; i++)
		if (strcmp(recs[i].attachment, id) == 0 &&
		    (!pick || (strcmp(pick->container_id, container) &&
			       !strcmp(recs[i].container_id, container))))
			pick = &recs[i];
	for (size_t i = 0; r == 0 && pick && i < addrs.n; i++) {
		struct rn_ipam_held *h = &att->held[att->n];

		if (strcmp(recs[i].attachment, id) ||
		    strcmp(recs[i].container_id, pick->container_id) ||
		    att->n >= RN_IPAM_MAX_RANGES)
			continue;
		rn_strscpy(h->pool, sizeof(h->pool), recs[i].pool);
		rn_strscpy(h->ip, sizeof(h->ip), recs[i].ip);
		rn_strscpy(h->range, sizeof(h->range), recs[i].range);
		att->n++;
	}
	if (r == 0 && pick) {
		rn_strscpy(att->network, sizeof(att->network), pick->network);
		rn_strscpy(att->container_id, sizeof(att->container_id), pick->container_id);
		rn_strscpy(att->ifname, sizeof(att->ifname), pick->ifname);
		rn_strscpy(att->pod, sizeof(att->pod), pick->pod);
		rn_strscpy(att->node, sizeof(att->node), pick->node);
		rn_strscpy(att->time, sizeof(att->time), pick->time);
		rn_strscpy(att->netns, sizeof(att->netns), pick->netns);
		rn_strscpy(att->netns_ino, sizeof(att->netns_ino), pick->netns_ino);
	} else if (r == 0) {
		rn_strscpy(att->container_id, sizeof(att->container_id), container);
	}
	rn_ipam_collect_free(&addrs);
	return r;
}

bool rn_ipam_same_ip(const char *x, const char *y)
{
	struct rn_ip a, b;

	return rn_ip_parse(x, &a) == 0 && rn_ip_parse(y, &b) == 0 && a.family == b.family &&
	       a.v == b.v;
}

static bool held_is(const struct rn_ipam_held *h, const char *pool, const struct rn_ip *ip)
{
	struct rn_ip a;

	return strcmp(h->pool, pool) == 0 && rn_ip_parse(h->ip, &a) == 0 &&
	       a.family == ip->family && a.v == ip->v;
}

static bool lists(const struct rn_ipam_attachment *att, const char *pool, const struct rn_ip *ip)
{
	for (size_t i = 0; i < att->n; i++)
		if (held_is(&att->held[i], pool, ip))
			return true;
	return false;
}

/*
 * Releases one address record if it still is what `w` says; *released
 * tells whether it did (or, dry_run, would have).
 */
static int release_one(struct rn_ipam_store *s, const struct rn_ipam_release_want *w, bool dry_run,
		       bool *released, struct rn_error *err)
{
	const struct rn_ipam_record *want = w->rec;
	_cleanup_free_ char *text = NULL, *att_text = NULL;
	struct rn_ipam_attachment att;
	struct rn_ipam_record rec;
	struct rn_ipam_ref ref;
	uint64_t version, att_version;
	bool have_att;
	int r;

	*released = false;
	if (rn_ip_parse(want->ip, &ref.ip) < 0)
		return rn_error_set(err, EINVAL, "'%s' is not an address", want->ip);
	r = s->ops->addr_get(s, want->scope, want->pool, &ref.ip, &text, &version, err);
	if (r == -ENOENT || r == -EBADMSG) {
		rn_error_clear(err);
		return 0;
	}
	if (r < 0)
		return r;
	if (w->text && (version != w->version || strcmp(text, w->text)))
		return 0; /* changed since it was judged */
	if (rn_ipam_record_parse(text, &rec, NULL) < 0 ||
	    strcmp(rec.attachment, want->attachment) ||
	    strcmp(rec.container_id, want->container_id))
		return 0; /* changed meanwhile: not the record asked for */
	r = rn_ipam_load_attachment(s, want->scope, want->attachment, &att, &att_version, err);
	if (r == -EBADMSG && w->only_orphan) {
		/* its attachment is damaged: what it held cannot be told, so it stays */
		rn_error_clear(err);
		return 0;
	}
	if (r < 0 && r != -ENOENT && r != -EBADMSG)
		return r;
	rn_error_clear(err);
	have_att = r == 0 && lists(&att, want->pool, &ref.ip);
	if (w->only_orphan && have_att)
		return 0;
	*released = true;
	if (dry_run)
		return 0;
	ref.pool = want->pool;
	ref.text = NULL;
	ref.version = version;
	if (!have_att)
		return s->ops->commit(s, want->scope, &ref, 1, r == 0 ? want->attachment : NULL,
				      att_version, RN_IPAM_ATT_KEEP, NULL, err);
	/* drop it from the attachment too; an attachment left empty goes */
	{
		size_t n = 0;

		for (size_t i = 0; i < att.n; i++)
			if (!held_is(&att.held[i], want->pool, &ref.ip))
				att.held[n++] = att.held[i];
		att.n = n;
	}
	if (att.n == 0)
		return s->ops->commit(s, want->scope, &ref, 1, want->attachment, att_version,
				      RN_IPAM_ATT_DELETE, NULL, err);
	r = rn_ipam_attachment_format(&att, &att_text);
	if (r < 0)
		return rn_error_set(err, EINVAL, "attachment %s cannot be written back",
				    want->attachment);
	return s->ops->commit(s, want->scope, &ref, 1, want->attachment, att_version,
			      RN_IPAM_ATT_PUT, att_text, err);
}

int rn_ipam_release_locked(struct rn_ipam_store *s, const struct rn_ipam_release_want *w,
			   bool dry_run, bool *released, struct rn_error *err)
{
	int token, r;

	r = rn_ipam_lock_attachment(s, w->rec->scope, w->rec->attachment, &token, err);
	if (r < 0)
		return r;
	for (int i = 0; i < RN_IPAM_MAX_RETRIES; i++) {
		r = release_one(s, w, dry_run, released, err);
		if (r != -ESTALE)
			break;
		/* the reconciler's judgement holds for that exact revision only */
		if (w->text) {
			*released = false;
			r = 0;
			break;
		}
	}
	rn_ipam_unlock_attachment(s, token);
	if (r == -ESTALE)
		return rn_error_set(err, EAGAIN, "address %s kept changing; try again", w->rec->ip);
	return r;
}
