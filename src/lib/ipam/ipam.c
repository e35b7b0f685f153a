// SPDX-License-Identifier: Apache-2.0
/*
 * The CNI verbs over a store (ipam_store.h): ADD, DEL, CHECK, STATUS and GC
 * for rdma-netns-ipam. The operators' commands are ipam_admin.c, the
 * reconciler ipam_reconcile.c; the steps all of them take, ipam_common.c.
 *
 * The address record is the truth: an address is held by an attachment when
 * its record names that attachment. The attachment record is the index that
 * makes a repeated ADD and a DEL cost the same at any pool fill; whatever it
 * lists is checked against the address records before it is trusted.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rdmans/cleanup.h"
#include "rdmans/netns.h"
#include "rdmans/util.h"
#include "ipam_common.h"

int rn_ipam_store_open(const struct rn_ipam_config *c, struct rn_ipam_store **ret,
		       struct rn_error *err)
{
	switch (c->store) {
	case RN_IPAM_STORE_LOCAL:
		return rn_ipam_store_local_open(c, ret, err);
	case RN_IPAM_STORE_ETCD:
		return rn_ipam_store_etcd_open(c, ret, err);
	case RN_IPAM_STORE_KUBERNETES:
		return rn_ipam_store_k8s_open(c, ret, err);
	}
	return rn_error_set(err, EINVAL, "unknown IPAM store");
}

void rn_ipam_store_close(struct rn_ipam_store *s)
{
	if (s)
		s->ops->close(s);
}

int rn_ipam_store_ping(struct rn_ipam_store *s, struct rn_error *err)
{
	return s->ops->ping(s, err);
}

void rn_ipam_pool_name(const struct rn_ipam_config *c, const struct rn_ipam_range *r, char *buf,
		       size_t len)
{
	char net[RN_IP_STRLEN];

	if (c->overlapping)
		snprintf(buf, len, "addr");
	else
		snprintf(buf, len, "r-%s_%u", rn_ip_format(r->family, r->net, net, sizeof(net)),
			 r->prefix);
}

static const char *u128_text(rn_u128 v, char *buf, size_t len)
{
	char tmp[48];
	size_t n = 0;

	do {
		tmp[n++] = (char)('0' + (int)(v % 10));
		v /= 10;
	} while (v && n < sizeof(tmp));
	for (size_t i = 0; i < n && i + 1 < len; i++)
		buf[i] = tmp[n - 1 - i];
	buf[n < len ? n : len - 1] = '\0';
	return buf;
}

static bool has_pod(const struct rn_ipam_owner *o)
{
	return o->pod_namespace && *o->pod_namespace && o->pod_name && *o->pod_name;
}

int rn_ipam_attachment_id(const struct rn_ipam_owner *o, char *buf, size_t len,
			  struct rn_error *err)
{
	int r;

	r = rn_cni_name_check("container ID", o->container_id, RN_IPAM_NAME_MAX - 1, err);
	if (r < 0)
		return r;
	r = rn_name_check("interface", o->ifname, 15, err);
	if (r < 0)
		return r;
	if (has_pod(o)) {
		/* Kubernetes names (at most 253 bytes), kept from ids' '/' and from ".." */
		r = rn_name_check("pod namespace", o->pod_namespace, 253, err);
		if (r == 0)
			r = rn_name_check("pod", o->pod_name, 253, err);
		if (r < 0)
			return r;
		r = rn_path(buf, len, "%s/%s/%s", o->pod_namespace, o->pod_name, o->ifname);
	} else {
		r = rn_path(buf, len, "%s/%s", o->container_id, o->ifname);
	}
	if (r < 0)
		return rn_error_set(err, ENAMETOOLONG, "attachment id for %s is too long",
				    o->container_id);
	return 0;
}

/* An attachment record as the owner's next write will store it. */
static void fill_attachment(struct rn_ipam_attachment *a, const struct rn_ipam_config *c,
			    const struct rn_ipam_owner *o, const char *id)
{
	memset(a, 0, sizeof(*a));
	rn_strscpy(a->id, sizeof(a->id), id);
	rn_strscpy(a->scope, sizeof(a->scope), c->scope);
	rn_strscpy(a->network, sizeof(a->network), c->network);
	rn_strscpy(a->container_id, sizeof(a->container_id), o->container_id);
	rn_strscpy(a->ifname, sizeof(a->ifname), o->ifname);
	if (has_pod(o))
		snprintf(a->pod, sizeof(a->pod), "%s/%s", o->pod_namespace, o->pod_name);
	rn_strscpy(a->node, sizeof(a->node), c->node);
	rn_ipam_record_time((long long)time(NULL), a->time, sizeof(a->time));
	if (o->netns && o->netns[0] == '/') {
		uint64_t ino;

		if (rn_strscpy(a->netns, sizeof(a->netns), o->netns) < 0)
			a->netns[0] = '\0'; /* too long to record: none, as in older records */
		else if (rn_netns_path_ino(o->netns, &ino) == 0)
			snprintf(a->netns_ino, sizeof(a->netns_ino), "%llu",
				 (unsigned long long)ino);
	}
}

static void fill_record(struct rn_ipam_record *r, const struct rn_ipam_attachment *a,
			const struct rn_ipam_held *h)
{
	memset(r, 0, sizeof(*r));
	rn_strscpy(r->ip, sizeof(r->ip), h->ip);
	rn_strscpy(r->range, sizeof(r->range), h->range);
	rn_strscpy(r->scope, sizeof(r->scope), a->scope);
	rn_strscpy(r->pool, sizeof(r->pool), h->pool);
	rn_strscpy(r->attachment, sizeof(r->attachment), a->id);
	rn_strscpy(r->network, sizeof(r->network), a->network);
	rn_strscpy(r->container_id, sizeof(r->container_id), a->container_id);
	rn_strscpy(r->ifname, sizeof(r->ifname), a->ifname);
	rn_strscpy(r->pod, sizeof(r->pod), a->pod);
	rn_strscpy(r->node, sizeof(r->node), a->node);
	rn_strscpy(r->time, sizeof(r->time), a->time);
	rn_strscpy(r->netns, sizeof(r->netns), a->netns);
	rn_strscpy(r->netns_ino, sizeof(r->netns_ino), a->netns_ino);
}

struct claim_ctx {
	struct rn_ipam_store *s;
	const struct rn_ipam_config *c;
	const struct rn_ipam_range *range;
	const char *pool;
	struct rn_ipam_attachment *att;
	uint64_t *att_version;
	struct rn_error *err;
	bool *attempted; /* a claim was tried: the local store wrote the attachment */
};

static int walk_probe(void *ctx, rn_u128 first, rn_u128 last, rn_u128 **ret, size_t *n)
{
	struct claim_ctx *cc = ctx;

	return cc->s->ops->probe(cc->s, cc->c->scope, cc->pool, cc->range->family, first, last, ret,
				 n, cc->err);
}

static int walk_claim(void *ctx, rn_u128 a)
{
	struct claim_ctx *cc = ctx;
	struct rn_ipam_held *h = &cc->att->held[cc->att->n];
	_cleanup_free_ char *rec_text = NULL, *att_text = NULL;
	struct rn_ipam_record rec;
	struct rn_ip ip = { cc->range->family, a };
	int r;

	memset(h, 0, sizeof(*h));
	rn_strscpy(h->pool, sizeof(h->pool), cc->pool);
	rn_ip_format(ip.family, a, h->ip, sizeof(h->ip));
	rn_strscpy(h->range, sizeof(h->range), cc->range->cidr);
	fill_record(&rec, cc->att, h);
	cc->att->n++;
	r = rn_ipam_attachment_format(cc->att, &att_text);
	if (r == 0)
		r = rn_ipam_record_format(&rec, &rec_text);
	if (r < 0) {
		cc->att->n--;
		return rn_error_set(cc->err, EINVAL,
				    "record for %s has characters a record cannot "
				    "hold",
				    h->ip);
	}
	*cc->attempted = true;
	r = cc->s->ops->claim(cc->s, cc->c->scope, cc->pool, &ip, rec_text, cc->att->id, att_text,
			      cc->att_version, cc->err);
	if (r < 0)
		cc->att->n--;
	return r;
}

/* Does the attachment metadata differ from what the owner would store now? */
static bool owner_changed(const struct rn_ipam_record *rec, const struct rn_ipam_attachment *att)
{
	return strcmp(rec->container_id, att->container_id) || strcmp(rec->node, att->node) ||
	       strcmp(rec->network, att->network) || strcmp(rec->pod, att->pod) ||
	       strcmp(rec->ifname, att->ifname) || strcmp(rec->netns, att->netns) ||
	       strcmp(rec->netns_ino, att->netns_ino);
}

static void lease_add(struct rn_ipam_lease *lease, const struct rn_ipam_config *c, size_t k,
		      const struct rn_ip *ip)
{
	struct rn_ipam_lease_addr *l = &lease->addr[lease->n++];

	l->ip = *ip;
	l->prefix = c->ranges[k].prefix;
	l->range = k;
	l->has_gateway = c->ranges[k].has_gateway;
	l->gateway = c->ranges[k].gateway;
}

/* A failed undo goes into the message of the failure that called for it. */
static void undo_failed(struct rn_error *err, const char *id, const struct rn_error *undo)
{
	char first[RN_ERROR_MSG_MAX / 2];

	if (!err)
		return;
	snprintf(first, sizeof(first), "%.500s", err->msg);
	snprintf(err->msg, sizeof(err->msg),
		 "%.480s; undoing this ADD's claims failed too (%.360s): run DEL for attachment "
		 "%.60s to release them",
		 first, undo->msg, id);
}

/*
 * One ADD's plan: what the attachment held (prev, checked against the
 * address records), what each configured range keeps of it (match) and
 * what it claims anew.
 */
struct add_plan {
	struct rn_ipam_attachment prev, att;
	struct rn_ipam_held_state st[RN_IPAM_MAX_RANGES]; /* of prev.held[] */
	char pools[RN_IPAM_MAX_RANGES][RN_CIDR_STRLEN + 8]; /* of c->ranges[] */
	int match[RN_IPAM_MAX_RANGES]; /* the prev.held[] a range keeps, or -1 */
	bool used[RN_IPAM_MAX_RANGES]; /* prev.held[i] is kept by a range */
	struct rn_ip claimed_ip[RN_IPAM_MAX_RANGES];
	uint64_t claimed_version[RN_IPAM_MAX_RANGES];
	size_t n_matched, n_claimed;
	uint64_t att_version;
	bool have_prev, rebuilt, attempted;
	const struct rn_ip *want; /* rn_ipam_add_at: this address, in the range holding it */
	char want_text[RN_IP_STRLEN];
	bool skipped[RN_IPAM_MAX_RANGES]; /* a range add_at leaves as it was */
};

/* Match: reads what the attachment holds; each range keeps an address of it that is still ours. */
static int add_match(struct rn_ipam_store *s, const struct rn_ipam_config *c,
		     const struct rn_ipam_owner *o, const char *id, struct add_plan *p,
		     struct rn_error *err)
{
	int r;

	memset(p, 0, sizeof(*p));
	r = rn_ipam_load_attachment(s, c->scope, id, &p->prev, &p->att_version, err);
	if (r == -EBADMSG) {
		/* damaged: what the address records naming it say is the truth */
		rn_error_clear(err);
		r = rn_ipam_rebuild_attachment(s, c->scope, id, o->container_id, &p->prev, err);
		p->rebuilt = r == 0;
	}
	if (r < 0 && r != -ENOENT)
		return r;
	p->have_prev = r == 0;
	for (size_t i = 0; i < p->prev.n; i++) {
		r = rn_ipam_verify_held(s, c->scope, id, &p->prev.held[i], &p->st[i], err);
		if (r < 0)
			return r;
	}
	fill_attachment(&p->att, c, o, id);
	for (size_t k = 0; k < c->n_ranges; k++) {
		rn_ipam_pool_name(c, &c->ranges[k], p->pools[k], sizeof(p->pools[k]));
		p->match[k] = -1;
		for (size_t i = 0; i < p->prev.n; i++) {
			const struct rn_ipam_held_state *st = &p->st[i];

			if (!p->used[i] && st->ours && st->ip.family == c->ranges[k].family &&
			    strcmp(p->prev.held[i].pool, p->pools[k]) == 0 &&
			    rn_ipam_range_usable(&c->ranges[k], st->ip.v)) {
				p->match[k] = (int)i;
				p->used[i] = true;
				p->att.held[p->att.n++] = p->prev.held[i];
				break;
			}
		}
	}
	p->n_matched = p->att.n;
	return 0;
}

/* Undo: this ADD's claims are released; the attachment goes back to what it kept. */
static void add_undo(struct rn_ipam_store *s, const struct rn_ipam_config *c, const char *id,
		     struct add_plan *p, struct rn_error *err)
{
	struct rn_ipam_ref refs[RN_IPAM_MAX_RANGES];
	struct rn_error undo_err = { 0 };
	_cleanup_free_ char *att_text = NULL;
	int u = 0;

	for (size_t i = 0; i < p->n_claimed; i++)
		refs[i] = (struct rn_ipam_ref){ p->att.held[p->n_matched + i].pool,
						p->claimed_ip[i], NULL, p->claimed_version[i] };
	p->att.n = p->n_matched;
	if (p->n_matched && rn_ipam_attachment_format(&p->att, &att_text) < 0)
		u = rn_error_set(&undo_err, ENOMEM, "out of memory");
	if (u == 0)
		u = s->ops->commit(s, c->scope, refs, p->n_claimed, id, p->att_version,
				   p->n_matched ? RN_IPAM_ATT_PUT : RN_IPAM_ATT_DELETE, att_text,
				   &undo_err);
	if (u < 0)
		undo_failed(err, id, &undo_err);
}

static bool wanted_in(const struct rn_ipam_range *r, const struct rn_ip *want)
{
	return want->family == r->family && rn_ipam_range_usable(r, want->v);
}

/* The error for a wanted address another attachment holds: which one, where it can be told. */
static void taken_by(struct rn_ipam_store *s, const struct rn_ipam_config *c,
		     const struct add_plan *p, size_t k, struct rn_error *err)
{
	_cleanup_free_ char *text = NULL;
	struct rn_ipam_record rec;
	struct rn_error ignored = { 0 };
	uint64_t version;
	const char *holder = "another attachment";

	if (s->ops->addr_get(s, c->scope, p->pools[k], p->want, &text, &version, &ignored) == 0 &&
	    rn_ipam_record_parse(text, &rec, &ignored) == 0)
		holder = rec.attachment;
	rn_error_set(err, EEXIST, "%s in range %s is already held by %s", p->want_text,
		     c->ranges[k].cidr, holder);
}

/*
 * Claim: a range without an address is searched from this attachment's hint;
 * rn_ipam_add_at claims its one address and leaves the other ranges as they are.
 */
static int add_claim(struct rn_ipam_store *s, const struct rn_ipam_config *c, const char *id,
		     struct add_plan *p, struct rn_error *err)
{
	for (size_t k = 0; k < c->n_ranges; k++) {
		struct claim_ctx cc = { s,
					c,
					&c->ranges[k],
					p->pools[k],
					&p->att,
					&p->att_version,
					err,
					&p->attempted };
		const struct rn_ipam_walk_ops ops = { walk_probe, walk_claim };
		rn_u128 got;
		int r;

		if (p->want && !wanted_in(&c->ranges[k], p->want)) {
			p->skipped[k] = p->match[k] < 0;
			continue;
		}
		if (p->want && p->match[k] >= 0 &&
		    (p->st[p->match[k]].ip.family != p->want->family ||
		     p->st[p->match[k]].ip.v != p->want->v))
			return rn_error_set(err, EEXIST,
					    "attachment %s already holds %s in range %s, not %s "
					    "(release it first with 'rdmans ipam release')",
					    id, p->prev.held[p->match[k]].ip, c->ranges[k].cidr,
					    p->want_text);
		if (p->match[k] >= 0)
			continue;
		if (p->want) {
			got = p->want->v;
			r = walk_claim(&cc, got);
			if (r == -EEXIST)
				taken_by(s, c, p, k, err);
		} else {
			r = rn_ipam_range_walk(&c->ranges[k], rn_ipam_range_hint(&c->ranges[k], id),
					       s->window, &ops, &cc, &got);
		}
		if (r == 0) {
			p->claimed_ip[p->n_claimed].family = c->ranges[k].family;
			p->claimed_ip[p->n_claimed].v = got;
			p->claimed_version[p->n_claimed++] = p->att_version;
			continue;
		}
		if (r == -EADDRNOTAVAIL) {
			char count[48];

			rn_error_set(
				err, EADDRNOTAVAIL,
				"no free address in range %s: all %s usable addresses are "
				"taken (list them with 'rdmans ipam ls'; release stale ones or "
				"widen the range)",
				c->ranges[k].cidr,
				u128_text(rn_ipam_range_count(&c->ranges[k]), count,
					  sizeof(count)));
		}
		/*
		 * -ESTALE: the attachment changed under us; the caller runs this
		 * again from what it holds now (our claims included), no undo.
		 */
		if (r == -ESTALE)
			return r;
		if (p->n_claimed > 0 || p->attempted)
			add_undo(s, c, id, p, err);
		return r;
	}
	return 0;
}

/* Rewrite: addresses kept from before carry the new owner details; stale ones go. */
static int add_rewrite(struct rn_ipam_store *s, const struct rn_ipam_config *c, const char *id,
		       const struct add_plan *p, struct rn_error *err)
{
	const struct rn_ipam_attachment *prev = &p->prev, *att = &p->att;
	struct rn_ipam_ref refs[2 * RN_IPAM_MAX_RANGES];
	char *texts[RN_IPAM_MAX_RANGES] = { 0 };
	_cleanup_free_ char *att_text = NULL;
	size_t n_refs = 0;
	bool rewrite = false;
	int r = 0;

	for (size_t k = 0; k < c->n_ranges; k++) {
		struct rn_ipam_record rec;
		int i = p->match[k];

		if (i < 0 || !owner_changed(&p->st[i].rec, att))
			continue;
		fill_record(&rec, att, &prev->held[i]);
		r = rn_ipam_record_format(&rec, &texts[n_refs]);
		if (r < 0)
			goto out;
		refs[n_refs] = (struct rn_ipam_ref){ prev->held[i].pool, p->st[i].ip, texts[n_refs],
						     p->st[i].version };
		n_refs++;
		rewrite = true;
	}
	for (size_t i = 0; i < prev->n; i++) {
		if (p->st[i].ours && !p->used[i]) {
			refs[n_refs++] = (struct rn_ipam_ref){ prev->held[i].pool, p->st[i].ip,
							       NULL, p->st[i].version };
			rewrite = true;
		}
	}
	if (p->n_claimed == 0 && p->have_prev &&
	    (p->rebuilt || prev->n != att->n || strcmp(prev->container_id, att->container_id) ||
	     strcmp(prev->node, att->node) || strcmp(prev->network, att->network) ||
	     strcmp(prev->pod, att->pod) || strcmp(prev->netns, att->netns) ||
	     strcmp(prev->netns_ino, att->netns_ino)))
		rewrite = true;
	if (rewrite) {
		r = rn_ipam_attachment_format(att, &att_text);
		if (r == 0)
			r = s->ops->commit(s, c->scope, refs, n_refs, id, p->att_version,
					   RN_IPAM_ATT_PUT, att_text, err);
	}
out:
	for (size_t i = 0; i < RN_IPAM_MAX_RANGES; i++)
		free(texts[i]);
	return r;
}

/* The lease, in range order. */
static void add_lease(const struct rn_ipam_config *c, const struct add_plan *p,
		      struct rn_ipam_lease *lease)
{
	size_t next_claim = 0;

	for (size_t k = 0; k < c->n_ranges; k++) {
		if (p->skipped[k])
			continue;
		if (p->match[k] >= 0)
			lease_add(lease, c, k, &p->st[p->match[k]].ip);
		else
			lease_add(lease, c, k, &p->claimed_ip[next_claim++]);
	}
	lease->existing = p->n_claimed == 0;
}

/* One try of an ADD or DEL of attachment id; -ESTALE: it changed meanwhile, try again. */
typedef int attachment_try(struct rn_ipam_store *s, const struct rn_ipam_config *c,
			   const struct rn_ipam_owner *o, const char *id, void *ret,
			   struct rn_error *err);

/*
 * Runs try on the owner's attachment under its lock, again while it reports
 * -ESTALE (at most RN_IPAM_MAX_RETRIES times); then EAGAIN, "kept changing" and what
 * while says.
 */
static int attachment_locked(struct rn_ipam_store *s, const struct rn_ipam_config *c,
			     const struct rn_ipam_owner *o, attachment_try *try, void *ret,
			     const char *while_, struct rn_error *err)
{
	char id[RN_IPAM_ID_MAX];
	int token, r;

	r = rn_ipam_attachment_id(o, id, sizeof(id), err);
	if (r < 0)
		return r;
	r = rn_ipam_lock_attachment(s, c->scope, id, &token, err);
	if (r < 0)
		return r;
	for (int i = 0; i < RN_IPAM_MAX_RETRIES; i++) {
		r = try(s, c, o, id, ret, err);
		if (r != -ESTALE)
			break;
	}
	rn_ipam_unlock_attachment(s, token);
	if (r == -ESTALE)
		return rn_error_set(err, EAGAIN, "attachment %s kept changing%s; try again", id,
				    while_);
	return r;
}

/* What one ADD asks: the lease to fill, and for rn_ipam_add_at the address it wants. */
struct add_call {
	struct rn_ipam_lease *lease;
	const struct rn_ip *want;
};

static int add_once(struct rn_ipam_store *s, const struct rn_ipam_config *c,
		    const struct rn_ipam_owner *o, const char *id, void *ret, struct rn_error *err)
{
	struct add_call *call = ret;
	struct add_plan p;
	int r;

	memset(call->lease, 0, sizeof(*call->lease));
	r = add_match(s, c, o, id, &p, err);
	if (r == 0 && call->want) {
		p.want = call->want;
		rn_ip_format(call->want->family, call->want->v, p.want_text, sizeof(p.want_text));
	}
	if (r == 0)
		r = add_claim(s, c, id, &p, err);
	if (r == 0)
		r = add_rewrite(s, c, id, &p, err);
	if (r < 0)
		return r;
	add_lease(c, &p, call->lease);
	return 0;
}

static int add_call(struct rn_ipam_store *s, const struct rn_ipam_config *c,
		    const struct rn_ipam_owner *o, struct add_call *call, struct rn_error *err)
{
	if (c->n_ranges == 0)
		return rn_error_set(err, EINVAL,
				    "no range configured (set ipam.range or ipam.ipRanges)");
	int r;

	s->read_ahead = call->want ? NULL : c;
	r = attachment_locked(s, c, o, add_once, call, " while it was being stored", err);
	s->read_ahead = NULL;
	return r;
}

int rn_ipam_add(struct rn_ipam_store *s, const struct rn_ipam_config *c,
		const struct rn_ipam_owner *o, struct rn_ipam_lease *ret, struct rn_error *err)
{
	struct add_call call = { ret, NULL };

	return add_call(s, c, o, &call, err);
}

int rn_ipam_add_at(struct rn_ipam_store *s, const struct rn_ipam_config *c,
		   const struct rn_ipam_owner *o, const struct rn_ip *want,
		   struct rn_ipam_lease *ret, struct rn_error *err)
{
	struct add_call call = { ret, want };
	char text[RN_IP_STRLEN];
	size_t k;

	for (k = 0; k < c->n_ranges && !wanted_in(&c->ranges[k], want); k++)
		;
	if (k == c->n_ranges) {
		rn_ip_format(want->family, want->v, text, sizeof(text));
		return rn_error_set(
			err, ERANGE,
			"%s is in none of this network's ranges (or is one they exclude)", text);
	}
	return add_call(s, c, o, &call, err);
}

/* Releases what the attachment (at version) holds, and the attachment. */
static int release_attachment(struct rn_ipam_store *s, const char *scope, const char *id,
			      const struct rn_ipam_attachment *att, uint64_t version,
			      size_t *released, struct rn_error *err)
{
	struct rn_ipam_ref refs[RN_IPAM_MAX_RANGES];
	struct rn_ipam_held_state st[RN_IPAM_MAX_RANGES];
	size_t n = 0;
	int r;

	for (size_t i = 0; i < att->n; i++) {
		r = rn_ipam_verify_held(s, scope, id, &att->held[i], &st[i], err);
		if (r < 0)
			return r;
		if (st[i].ours)
			refs[n++] = (struct rn_ipam_ref){ att->held[i].pool, st[i].ip, NULL,
							  st[i].version };
		/*
		 * a damaged record at an address this attachment lists: its own,
		 * damaged, so DEL leaves nothing; removed only while it is still
		 * what was read (compare-and-delete)
		 */
		if (st[i].damaged) {
			r = s->ops->addr_drop(s, scope, att->held[i].pool, &st[i].ip, st[i].version,
					      err);
			if (r < 0 && r != -ENOENT)
				return r;
			rn_error_clear(err);
		}
	}
	r = s->ops->commit(s, scope, refs, n, id, version, RN_IPAM_ATT_DELETE, NULL, err);
	if (r == 0 && released)
		*released += n;
	return r;
}

static int del_once(struct rn_ipam_store *s, const struct rn_ipam_config *c,
		    const struct rn_ipam_owner *o, const char *id, void *ret, struct rn_error *err)
{
	size_t *released = ret;
	struct rn_ipam_attachment att;
	uint64_t version;
	int r;

	*released = 0;
	r = rn_ipam_load_attachment(s, c->scope, id, &att, &version, err);
	if (r == -ENOENT)
		return 0; /* nothing held: DEL succeeds */
	if (r == -EBADMSG) {
		/* damaged: the address records naming it say what it held */
		rn_error_clear(err);
		r = rn_ipam_rebuild_attachment(s, c->scope, id, o->container_id, &att, err);
		if (r < 0)
			return r;
		if (att.n > 0 && strcmp(att.container_id, o->container_id) != 0) {
			/* a newer sandbox's addresses: its attachment is written back, kept */
			_cleanup_free_ char *text = NULL;

			if (rn_ipam_attachment_format(&att, &text) < 0)
				return rn_error_set(err, EINVAL, "attachment %s cannot be rebuilt",
						    id);
			return s->ops->commit(s, c->scope, NULL, 0, id, version, RN_IPAM_ATT_PUT,
					      text, err);
		}
		return release_attachment(s, c->scope, id, &att, version, released, err);
	}
	if (r < 0)
		return r;
	if (strcmp(att.container_id, o->container_id) != 0)
		return 0; /* held by a newer sandbox of the same pod: not ours to release */
	return release_attachment(s, c->scope, id, &att, version, released, err);
}

int rn_ipam_del(struct rn_ipam_store *s, const struct rn_ipam_config *c,
		const struct rn_ipam_owner *o, size_t *ret_released, struct rn_error *err)
{
	size_t released = 0;
	int r = attachment_locked(s, c, o, del_once, &released, "", err);

	if (r == 0 && ret_released)
		*ret_released = released;
	return r;
}

int rn_ipam_check(struct rn_ipam_store *s, const struct rn_ipam_config *c,
		  const struct rn_ipam_owner *o, struct rn_ipam_lease *ret, struct rn_error *err)
{
	struct rn_ipam_attachment att;
	char id[RN_IPAM_ID_MAX];
	uint64_t version;
	int r;

	memset(ret, 0, sizeof(*ret));
	r = rn_ipam_attachment_id(o, id, sizeof(id), err);
	if (r < 0)
		return r;
	r = rn_ipam_load_attachment(s, c->scope, id, &att, &version, err);
	if (r == -ENOENT)
		return rn_error_set(err, ENOENT,
				    "container %s (%s) holds no address in scope %s: ADD it again",
				    o->container_id, o->ifname, c->scope);
	if (r < 0)
		return r;
	if (strcmp(att.container_id, o->container_id) != 0)
		return rn_error_set(err, ENOENT,
				    "the addresses of %s are held by container %s, not %s", id,
				    att.container_id, o->container_id);
	for (size_t k = 0; k < c->n_ranges; k++) {
		char pool[RN_CIDR_STRLEN + 8];
		bool found = false;

		rn_ipam_pool_name(c, &c->ranges[k], pool, sizeof(pool));
		for (size_t i = 0; i < att.n && !found; i++) {
			struct rn_ipam_held_state st;

			if (strcmp(att.held[i].pool, pool) != 0)
				continue;
			r = rn_ipam_verify_held(s, c->scope, id, &att.held[i], &st, err);
			if (r < 0)
				return r;
			if (!st.ours || st.ip.family != c->ranges[k].family ||
			    !rn_ipam_range_usable(&c->ranges[k], st.ip.v))
				continue;
			if (strcmp(st.rec.container_id, o->container_id) != 0)
				return rn_error_set(
					err, ENOENT,
					"address %s is recorded for container %s, not %s",
					att.held[i].ip, st.rec.container_id, o->container_id);
			lease_add(ret, c, k, &st.ip);
			found = true;
		}
		if (!found)
			return rn_error_set(err, ENOENT,
					    "container %s (%s) holds no address in range %s",
					    o->container_id, o->ifname, c->ranges[k].cidr);
	}
	ret->existing = true;
	return 0;
}

static int free_found(void *ctx, rn_u128 a)
{
	return 0;
}

int rn_ipam_status(struct rn_ipam_store *s, const struct rn_ipam_config *c, struct rn_error *err)
{
	int r = s->ops->ping(s, err);

	if (r < 0)
		return r;
	for (size_t k = 0; k < c->n_ranges; k++) {
		struct rn_ipam_attachment none = { 0 };
		uint64_t v = 0;
		bool attempted = false;
		struct claim_ctx cc = { s, c, &c->ranges[k], NULL, &none, &v, err, &attempted };
		const struct rn_ipam_walk_ops ops = { walk_probe, free_found };
		char pool[RN_CIDR_STRLEN + 8], count[48];
		rn_u128 got;

		rn_ipam_pool_name(c, &c->ranges[k], pool, sizeof(pool));
		cc.pool = pool;
		r = rn_ipam_range_walk(&c->ranges[k], rn_ipam_range_hint(&c->ranges[k], "status"),
				       s->window, &ops, &cc, &got);
		if (r == -EADDRNOTAVAIL)
			return rn_error_set(
				err, EADDRNOTAVAIL,
				"range %s is exhausted: all %s usable addresses are taken",
				c->ranges[k].cidr,
				u128_text(rn_ipam_range_count(&c->ranges[k]), count,
					  sizeof(count)));
		if (r < 0)
			return r;
	}
	return 0;
}

/* Releases an attachment found by a listing, if it still is what was listed. */
static int release_listed_attachment(struct rn_ipam_store *s, const struct rn_ipam_attachment *a,
				     size_t *released, struct rn_error *err)
{
	struct rn_ipam_attachment now;
	uint64_t version;
	int token, r;

	r = rn_ipam_lock_attachment(s, a->scope, a->id, &token, err);
	if (r < 0)
		return r;
	for (int i = 0; i < RN_IPAM_MAX_RETRIES; i++) {
		r = rn_ipam_load_attachment(s, a->scope, a->id, &now, &version, err);
		if (r == -ENOENT) {
			r = 0;
			break;
		}
		if (r < 0 || strcmp(now.container_id, a->container_id) != 0) {
			r = r < 0 ? r : 0; /* re-ADDed by another container meanwhile */
			break;
		}
		r = release_attachment(s, a->scope, a->id, &now, version, released, err);
		if (r != -ESTALE)
			break;
	}
	rn_ipam_unlock_attachment(s, token);
	return r;
}

int rn_ipam_gc(struct rn_ipam_store *s, const struct rn_ipam_config *c,
	       const struct rn_ipam_valid *valid, size_t n_valid, size_t *ret_released,
	       struct rn_error *err)
{
	struct rn_ipam_collect atts = { .kind = RN_IPAM_KIND_ATTACHMENT };
	struct rn_ipam_collect addrs = { .kind = RN_IPAM_KIND_ADDRESS };
	size_t released = 0, swept;
	int r;

	if (s->ops->sweep) {
		r = s->ops->sweep(s, false, &swept, err);
		if (r < 0)
			return r;
	}
	r = rn_ipam_collect_all(s, c->scope, &atts, err);
	for (size_t i = 0; r == 0 && i < atts.n; i++) {
		const struct rn_ipam_attachment *a = (struct rn_ipam_attachment *)atts.items + i;
		bool keep = false;

		if (strcmp(a->node, c->node) || strcmp(a->network, c->network))
			continue;
		for (size_t v = 0; v < n_valid && !keep; v++)
			keep = strcmp(valid[v].container_id, a->container_id) == 0 &&
			       strcmp(valid[v].ifname, a->ifname) == 0;
		if (!keep)
			r = release_listed_attachment(s, a, &released, err);
	}
	/* address records of this node and network that no attachment holds */
	if (r == 0)
		r = rn_ipam_collect_all(s, c->scope, &addrs, err);
	for (size_t i = 0; r == 0 && i < addrs.n; i++) {
		const struct rn_ipam_record *rec = (struct rn_ipam_record *)addrs.items + i;
		struct rn_ipam_release_want w = { rec, true, NULL, 0 };
		bool gone;

		if (strcmp(rec->node, c->node) || strcmp(rec->network, c->network))
			continue;
		r = rn_ipam_release_locked(s, &w, false, &gone, err);
		released += gone;
	}
	rn_ipam_collect_free(&atts);
	rn_ipam_collect_free(&addrs);
	if (r == 0 && ret_released)
		*ret_released = released;
	return r;
}

/* A damaged attachment: rewritten from the records naming it, or removed when none does. */
