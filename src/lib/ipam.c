// SPDX-License-Identifier: Apache-2.0
/*
 * IPAM operations over a store (ipam_store.h): ADD, DEL, CHECK, STATUS, GC
 * for the CNI plugin, list/release/repair for operators.
 *
 * The address record is the truth: an address is held by an attachment when
 * its record names that attachment. The attachment record is the index that
 * makes a repeated ADD and a DEL cost the same at any pool fill; whatever it
 * lists is checked against the address records before it is trusted.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rdmans/cleanup.h"
#include "rdmans/container.h"
#include "rdmans/discover.h"
#include "rdmans/netns.h"
#include "rdmans/util.h"
#include "ipam_store.h"

#define MAX_RETRIES 16

int rn_ipam_store_open(const struct rn_ipam_config *c, struct rn_ipam_store **ret,
		       struct rn_error *err)
{
	switch (c->store) {
	case RN_IPAM_STORE_LOCAL:
		return rn_ipam_store_local_open(c, ret, err);
	case RN_IPAM_STORE_ETCD:
		return rn_ipam_store_etcd_open(c, ret, err);
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

static void now_utc(char *buf, size_t len)
{
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Printable, no spaces and no '/': what may go into ids and records. */
static int check_token(const char *what, const char *v, size_t max, struct rn_error *err)
{
	if (!v || !*v)
		return rn_error_set(err, EINVAL, "%s is empty", what);
	if (strlen(v) > max)
		return rn_error_set(err, EINVAL, "%s '%.64s...' is too long (at most %zu bytes)",
				    what, v, max);
	for (const char *p = v; *p; p++)
		if ((unsigned char)*p <= ' ' || *p == 0x7f || *p == '/')
			return rn_error_set(err, EINVAL,
					    "%s '%s' must not contain '/', spaces or control "
					    "characters",
					    what, v);
	return 0;
}

static int check_container_id(const char *id, struct rn_error *err)
{
	if (!id || !*id)
		return rn_error_set(err, EINVAL, "container ID (CNI_CONTAINERID) is empty");
	if (strlen(id) >= RN_IPAM_NAME_MAX)
		return rn_error_set(err, EINVAL, "container ID is too long (at most %d bytes)",
				    RN_IPAM_NAME_MAX - 1);
	/* CNI: alphanumerics, '_', '-', '.'; starting with an alphanumeric */
	for (const char *p = id; *p; p++) {
		bool alnum = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
			     (*p >= '0' && *p <= '9');

		if (!alnum && (p == id || (*p != '_' && *p != '-' && *p != '.')))
			return rn_error_set(err, EINVAL,
					    "container ID '%s' may hold only letters, digits, "
					    "'_', '-' and '.'",
					    id);
	}
	return 0;
}

static bool has_pod(const struct rn_ipam_owner *o)
{
	return o->pod_namespace && *o->pod_namespace && o->pod_name && *o->pod_name;
}

int rn_ipam_attachment_id(const struct rn_ipam_owner *o, char *buf, size_t len,
			  struct rn_error *err)
{
	int r;

	r = check_container_id(o->container_id, err);
	if (r < 0)
		return r;
	r = rn_name_check("interface", o->ifname, 15, err);
	if (r < 0)
		return r;
	if (has_pod(o)) {
		r = check_token("pod namespace", o->pod_namespace, 253, err);
		if (r == 0)
			r = check_token("pod name", o->pod_name, 253, err);
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

static int lock_att(struct rn_ipam_store *s, const char *scope, const char *id, int *token,
		    struct rn_error *err)
{
	*token = -1;
	return s->ops->lock ? s->ops->lock(s, scope, id, token, err) : 0;
}

static void unlock_att(struct rn_ipam_store *s, int token)
{
	if (s->ops->unlock && token >= 0)
		s->ops->unlock(s, token);
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
	now_utc(a->time, sizeof(a->time));
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

static bool same_ip(const char *x, const char *y);

/* What the store says about one address an attachment lists. */
struct held_state {
	bool ours; /* its record names this attachment */
	bool damaged; /* its key holds something that is no record (version: what was read) */
	struct rn_ip ip;
	uint64_t version;
	struct rn_ipam_record rec;
};

static int verify_held(struct rn_ipam_store *s, const char *scope, const char *id,
		       const struct rn_ipam_held *h, struct held_state *st, struct rn_error *err)
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
	if (rn_ipam_record_parse(text, &st->rec, NULL) < 0 || !same_ip(st->rec.ip, h->ip)) {
		st->damaged = true;
		return 0; /* damaged: not provably ours */
	}
	st->ours = strcmp(st->rec.attachment, id) == 0 && strcmp(st->rec.scope, scope) == 0 &&
		   strcmp(st->rec.pool, h->pool) == 0;
	return 0;
}

static int rebuild_attachment(struct rn_ipam_store *s, const char *scope, const char *id,
			      const char *container, struct rn_ipam_attachment *att,
			      struct rn_error *err);

/* Reads and checks the attachment; -ENOENT when there is none. */
static int load_attachment(struct rn_ipam_store *s, const char *scope, const char *id,
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
	struct held_state st[RN_IPAM_MAX_RANGES]; /* of prev.held[] */
	char pools[RN_IPAM_MAX_RANGES][RN_CIDR_STRLEN + 8]; /* of c->ranges[] */
	int match[RN_IPAM_MAX_RANGES]; /* the prev.held[] a range keeps, or -1 */
	bool used[RN_IPAM_MAX_RANGES]; /* prev.held[i] is kept by a range */
	struct rn_ip claimed_ip[RN_IPAM_MAX_RANGES];
	uint64_t claimed_version[RN_IPAM_MAX_RANGES];
	size_t n_matched, n_claimed;
	uint64_t att_version;
	bool have_prev, rebuilt, attempted;
};

/* Match: reads what the attachment holds; each range keeps an address of it that is still ours. */
static int add_match(struct rn_ipam_store *s, const struct rn_ipam_config *c,
		     const struct rn_ipam_owner *o, const char *id, struct add_plan *p,
		     struct rn_error *err)
{
	int r;

	memset(p, 0, sizeof(*p));
	r = load_attachment(s, c->scope, id, &p->prev, &p->att_version, err);
	if (r == -EBADMSG) {
		/* damaged: what the address records naming it say is the truth */
		rn_error_clear(err);
		r = rebuild_attachment(s, c->scope, id, o->container_id, &p->prev, err);
		p->rebuilt = r == 0;
	}
	if (r < 0 && r != -ENOENT)
		return r;
	p->have_prev = r == 0;
	for (size_t i = 0; i < p->prev.n; i++) {
		r = verify_held(s, c->scope, id, &p->prev.held[i], &p->st[i], err);
		if (r < 0)
			return r;
	}
	fill_attachment(&p->att, c, o, id);
	for (size_t k = 0; k < c->n_ranges; k++) {
		rn_ipam_pool_name(c, &c->ranges[k], p->pools[k], sizeof(p->pools[k]));
		p->match[k] = -1;
		for (size_t i = 0; i < p->prev.n; i++) {
			const struct held_state *st = &p->st[i];

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

/* Claim: a range without an address is searched from this attachment's hint. */
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

		if (p->match[k] >= 0)
			continue;
		r = rn_ipam_range_walk(&c->ranges[k], rn_ipam_range_hint(&c->ranges[k], id),
				       s->window, &ops, &cc, &got);
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
 * -ESTALE (at most MAX_RETRIES times); then EAGAIN, "kept changing" and what
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
	r = lock_att(s, c->scope, id, &token, err);
	if (r < 0)
		return r;
	for (int i = 0; i < MAX_RETRIES; i++) {
		r = try(s, c, o, id, ret, err);
		if (r != -ESTALE)
			break;
	}
	unlock_att(s, token);
	if (r == -ESTALE)
		return rn_error_set(err, EAGAIN, "attachment %s kept changing%s; try again", id,
				    while_);
	return r;
}

static int add_once(struct rn_ipam_store *s, const struct rn_ipam_config *c,
		    const struct rn_ipam_owner *o, const char *id, void *ret, struct rn_error *err)
{
	struct rn_ipam_lease *lease = ret;
	struct add_plan p;
	int r;

	memset(lease, 0, sizeof(*lease));
	r = add_match(s, c, o, id, &p, err);
	if (r == 0)
		r = add_claim(s, c, id, &p, err);
	if (r == 0)
		r = add_rewrite(s, c, id, &p, err);
	if (r < 0)
		return r;
	add_lease(c, &p, lease);
	return 0;
}

int rn_ipam_add(struct rn_ipam_store *s, const struct rn_ipam_config *c,
		const struct rn_ipam_owner *o, struct rn_ipam_lease *ret, struct rn_error *err)
{
	if (c->n_ranges == 0)
		return rn_error_set(err, EINVAL,
				    "no range configured (set ipam.range or ipam.ipRanges)");
	int r;

	s->read_ahead = c;
	r = attachment_locked(s, c, o, add_once, ret, " while it was being stored", err);
	s->read_ahead = NULL;
	return r;
}

/* Releases what the attachment (at version) holds, and the attachment. */
static int release_attachment(struct rn_ipam_store *s, const char *scope, const char *id,
			      const struct rn_ipam_attachment *att, uint64_t version,
			      size_t *released, struct rn_error *err)
{
	struct rn_ipam_ref refs[RN_IPAM_MAX_RANGES];
	struct held_state st[RN_IPAM_MAX_RANGES];
	size_t n = 0;
	int r;

	for (size_t i = 0; i < att->n; i++) {
		r = verify_held(s, scope, id, &att->held[i], &st[i], err);
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
	r = load_attachment(s, c->scope, id, &att, &version, err);
	if (r == -ENOENT)
		return 0; /* nothing held: DEL succeeds */
	if (r == -EBADMSG) {
		/* damaged: the address records naming it say what it held */
		rn_error_clear(err);
		r = rebuild_attachment(s, c->scope, id, o->container_id, &att, err);
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
	r = load_attachment(s, c->scope, id, &att, &version, err);
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
			struct held_state st;

			if (strcmp(att.held[i].pool, pool) != 0)
				continue;
			r = verify_held(s, c->scope, id, &att.held[i], &st, err);
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

/* ---- listing ------------------------------------------------------------- */

struct collect {
	enum rn_ipam_kind kind;
	void *items; /* struct rn_ipam_record[] or struct rn_ipam_attachment[] */
	uint64_t *versions;
	char **texts; /* when keep_text */
	size_t n, cap;
	bool keep_text;
	struct rn_ipam_damaged *damaged;
	size_t n_damaged, cap_damaged;
};

static int add_damaged(struct collect *c, const struct rn_ipam_item *it, const char *why)
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
static void misplaced(const struct rn_ipam_item *it, const struct rn_ipam_record *rec, char *why,
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
	struct collect *c = ctx;
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
		misplaced(it, slot, why, sizeof(why));
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

static int collect_all(struct rn_ipam_store *s, const char *scope, struct collect *c,
		       struct rn_error *err)
{
	int r = s->ops->list(s, scope, c->kind, collect_fn, c, err);

	if (r == -ENOMEM)
		return rn_error_set(err, ENOMEM, "out of memory");
	return r;
}

static void collect_free(struct collect *c)
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
 * of the container the first one names. -ENOENT when none names it.
 */
static int rebuild_attachment(struct rn_ipam_store *s, const char *scope, const char *id,
			      const char *container, struct rn_ipam_attachment *att,
			      struct rn_error *err)
{
	struct collect addrs = { .kind = RN_IPAM_KIND_ADDRESS };
	const struct rn_ipam_record *recs, *pick = NULL;
	int r;

	memset(att, 0, sizeof(*att));
	rn_strscpy(att->id, sizeof(att->id), id);
	rn_strscpy(att->scope, sizeof(att->scope), scope);
	r = collect_all(s, scope, &addrs, err);
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
	collect_free(&addrs);
	return r;
}

static bool prefix_of(const char *prefix, const char *s)
{
	return strncmp(prefix, s, strlen(prefix)) == 0;
}

static bool same_ip(const char *x, const char *y)
{
	struct rn_ip a, b;

	return rn_ip_parse(x, &a) == 0 && rn_ip_parse(y, &b) == 0 && a.family == b.family &&
	       a.v == b.v;
}

static bool owner_filter(const struct rn_ipam_filter *f)
{
	return f && (f->node || f->network || f->container_id || f->pod || f->ifname);
}

static bool match_filter(const struct rn_ipam_filter *f, const struct rn_ipam_record *r)
{
	if (!f)
		return true;
	if (f->scope && strcmp(f->scope, r->scope))
		return false;
	if (f->node && strcmp(f->node, r->node))
		return false;
	if (f->network && strcmp(f->network, r->network))
		return false;
	if (f->container_id && !prefix_of(f->container_id, r->container_id))
		return false;
	if (f->pod && strcmp(f->pod, r->pod))
		return false;
	if (f->ifname && strcmp(f->ifname, r->ifname))
		return false;
	if (f->ip && !same_ip(f->ip, r->ip))
		return false;
	return true;
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
static int take_damaged(struct collect *c, const struct rn_ipam_filter *f,
			struct rn_ipam_damaged **out, size_t *n_out)
{
	for (size_t i = 0; i < c->n_damaged; i++) {
		const struct rn_ipam_damaged *d = &c->damaged[i];

		if (owner_filter(f) || (f && f->scope && strcmp(f->scope, d->scope)) ||
		    (f && f->ip && (d->attachment || !same_ip(f->ip, d->key))))
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
	struct collect c = { .kind = RN_IPAM_KIND_ADDRESS };
	struct collect atts = { .kind = RN_IPAM_KIND_ATTACHMENT };
	struct rn_ipam_damaged *damaged = NULL;
	struct rn_ipam_record *recs;
	size_t n = 0, n_damaged = 0;
	int r;

	r = collect_all(s, f ? f->scope : NULL, &c, err);
	if (r == 0 && ret_damaged)
		r = take_damaged(&c, f, &damaged, &n_damaged);
	/* attachments only for what is damaged among them */
	if (r == 0 && ret_damaged && !owner_filter(f) && !(f && f->ip))
		r = collect_all(s, f ? f->scope : NULL, &atts, err);
	if (r == 0 && ret_damaged)
		r = take_damaged(&atts, f, &damaged, &n_damaged);
	collect_free(&atts);
	if (r < 0) {
		free(damaged);
		collect_free(&c);
		return r == -ENOMEM ? rn_error_set(err, ENOMEM, "out of memory") : r;
	}
	recs = c.items;
	for (size_t i = 0; i < c.n; i++)
		if (match_filter(f, &recs[i]))
			recs[n++] = recs[i];
	if (n > 1)
		qsort(recs, n, sizeof(*recs), record_cmp);
	c.items = NULL;
	collect_free(&c);
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
	int r = load_attachment(s, scope, id, ret, &version, err);

	if (r == -ENOENT)
		return rn_error_set(err, ENOENT, "no attachment %s in scope %s", id, scope);
	return r;
}

static bool lists(const struct rn_ipam_attachment *att, const char *pool, const struct rn_ip *ip)
{
	for (size_t i = 0; i < att->n; i++) {
		struct rn_ip h;

		if (strcmp(att->held[i].pool, pool) == 0 && rn_ip_parse(att->held[i].ip, &h) == 0 &&
		    h.family == ip->family && h.v == ip->v)
			return true;
	}
	return false;
}

/* What must still hold for a release to go ahead. */
struct release_want {
	const struct rn_ipam_record *rec; /* same attachment and container */
	bool only_orphan; /* only when no attachment lists it */
	const char *text; /* exactly this text at this version (the reconciler) */
	uint64_t version;
};

/*
 * Releases one address record if it still is what `w` says; *released
 * tells whether it did (or, dry_run, would have).
 */
static int release_one(struct rn_ipam_store *s, const struct release_want *w, bool dry_run,
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
	r = load_attachment(s, want->scope, want->attachment, &att, &att_version, err);
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

		for (size_t i = 0; i < att.n; i++) {
			struct rn_ip h;

			if (strcmp(att.held[i].pool, want->pool) == 0 &&
			    rn_ip_parse(att.held[i].ip, &h) == 0 && h.family == ref.ip.family &&
			    h.v == ref.ip.v)
				continue;
			att.held[n++] = att.held[i];
		}
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

static int release_locked(struct rn_ipam_store *s, const struct release_want *w, bool dry_run,
			  bool *released, struct rn_error *err)
{
	int token, r;

	r = lock_att(s, w->rec->scope, w->rec->attachment, &token, err);
	if (r < 0)
		return r;
	for (int i = 0; i < MAX_RETRIES; i++) {
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
	unlock_att(s, token);
	if (r == -ESTALE)
		return rn_error_set(err, EAGAIN, "address %s kept changing; try again", w->rec->ip);
	return r;
}

int rn_ipam_release(struct rn_ipam_store *s, const struct rn_ipam_record *rec, struct rn_error *err)
{
	struct release_want w = { rec, false, NULL, 0 };
	bool released;
	int r = release_locked(s, &w, false, &released, err);

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
	for (int i = 0; i < MAX_RETRIES && r == -ESTALE; i++) {
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
			misplaced(&it, &rec, why, sizeof(why));
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

/* Releases an attachment found by a listing, if it still is what was listed. */
static int release_listed_attachment(struct rn_ipam_store *s, const struct rn_ipam_attachment *a,
				     size_t *released, struct rn_error *err)
{
	struct rn_ipam_attachment now;
	uint64_t version;
	int token, r;

	r = lock_att(s, a->scope, a->id, &token, err);
	if (r < 0)
		return r;
	for (int i = 0; i < MAX_RETRIES; i++) {
		r = load_attachment(s, a->scope, a->id, &now, &version, err);
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
	unlock_att(s, token);
	return r;
}

int rn_ipam_gc(struct rn_ipam_store *s, const struct rn_ipam_config *c,
	       const struct rn_ipam_valid *valid, size_t n_valid, size_t *ret_released,
	       struct rn_error *err)
{
	struct collect atts = { .kind = RN_IPAM_KIND_ATTACHMENT };
	struct collect addrs = { .kind = RN_IPAM_KIND_ADDRESS };
	size_t released = 0, swept;
	int r;

	if (s->ops->sweep) {
		r = s->ops->sweep(s, false, &swept, err);
		if (r < 0)
			return r;
	}
	r = collect_all(s, c->scope, &atts, err);
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
		r = collect_all(s, c->scope, &addrs, err);
	for (size_t i = 0; r == 0 && i < addrs.n; i++) {
		const struct rn_ipam_record *rec = (struct rn_ipam_record *)addrs.items + i;
		struct release_want w = { rec, true, NULL, 0 };
		bool gone;

		if (strcmp(rec->node, c->node) || strcmp(rec->network, c->network))
			continue;
		r = release_locked(s, &w, false, &gone, err);
		released += gone;
	}
	collect_free(&atts);
	collect_free(&addrs);
	if (r == 0 && ret_released)
		*ret_released = released;
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
	r = lock_att(s, d->scope, d->key, &token, err);
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
	r = rebuild_attachment(s, d->scope, d->key, "", &att, err);
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
	unlock_att(s, token);
	return r;
}

int rn_ipam_repair(struct rn_ipam_store *s, bool dry_run, struct rn_ipam_repair_stats *ret,
		   struct rn_error *err)
{
	struct collect atts = { .kind = RN_IPAM_KIND_ATTACHMENT };
	struct collect addrs = { .kind = RN_IPAM_KIND_ADDRESS };
	struct collect damaged_atts = { .kind = RN_IPAM_KIND_ATTACHMENT };
	int r = 0;

	memset(ret, 0, sizeof(*ret));
	if (s->ops->sweep)
		r = s->ops->sweep(s, dry_run, &ret->temp_files, err);
	/* damaged attachments first: rebuilt, the orphan pass then sees what they hold */
	if (r == 0)
		r = collect_all(s, NULL, &damaged_atts, err);
	for (size_t i = 0; r == 0 && i < damaged_atts.n_damaged; i++) {
		bool done;

		if (damaged_atts.damaged[i].key[0] == '(')
			continue;
		r = rebuild_damaged(s, &damaged_atts.damaged[i], dry_run, &done, err);
		ret->rebuilt += done;
	}
	if (r == 0)
		r = collect_all(s, NULL, &addrs, err);
	ret->damaged = addrs.n_damaged;
	for (size_t i = 0; r == 0 && i < addrs.n; i++) {
		const struct rn_ipam_record *rec = (struct rn_ipam_record *)addrs.items + i;
		struct release_want w = { rec, true, NULL, 0 };
		bool gone;

		r = release_locked(s, &w, dry_run, &gone, err);
		ret->orphans += gone;
	}
	if (r == 0)
		r = collect_all(s, NULL, &atts, err);
	for (size_t i = 0; r == 0 && i < atts.n; i++) {
		const struct rn_ipam_attachment *a = (struct rn_ipam_attachment *)atts.items + i;
		struct rn_ipam_attachment now;
		uint64_t version;
		bool any = false;
		int token;

		r = lock_att(s, a->scope, a->id, &token, err);
		if (r < 0)
			break;
		r = load_attachment(s, a->scope, a->id, &now, &version, err);
		for (size_t h = 0; r == 0 && h < now.n && !any; h++) {
			struct held_state st;

			r = verify_held(s, a->scope, a->id, &now.held[h], &st, err);
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
		unlock_att(s, token);
	}
	collect_free(&atts);
	collect_free(&addrs);
	collect_free(&damaged_atts);
	return r;
}

/* ---- the reconciler ------------------------------------------------------ */

/* "2026-11-23T08:56:46Z" -> seconds since the epoch (negative before 1970); false when unreadable. */
static bool parse_time(const char *text, long long *ret)
{
	struct tm tm;
	const char *end;

	memset(&tm, 0, sizeof(tm));
	end = strptime(text, "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (!end || *end)
		return false;
	*ret = (long long)timegm(&tm);
	return true;
}

/*
 * How old a record is, for the grace: false (age_text says why) when its
 * time cannot show an ADD still in flight: unreadable, or further ahead of
 * this clock than the grace (the clock stepped back, or the record was
 * edited or damaged). Such a time never holds an address: the record is
 * judged as one older than the grace. A time ahead by less than the grace
 * (clocks a little apart) counts as young until the clock passes it by the
 * grace.
 */
static bool record_age(const struct rn_ipam_record *rec, long long now, long grace_s,
		       long long *ret_age, char *age_text, size_t len)
{
	long long t;

	if (!parse_time(rec->time, &t)) {
		snprintf(age_text, len, "its time '%s' is unreadable, so it cannot be young",
			 rec->time);
		return false;
	}
	*ret_age = now - t;
	if (t > now && t - now > grace_s) {
		snprintf(age_text, len,
			 "its time %s is %llds ahead of this clock (stepped back, or the record "
			 "was edited), so it cannot be young",
			 rec->time, t - now);
		return false;
	}
	if (t > now)
		snprintf(age_text, len, "record time %s is %llds ahead of this clock", rec->time,
			 t - now);
	else
		snprintf(age_text, len, "record %llds old", now - t);
	return true;
}

/*
 * The grace of a record written before records had a netns= (an upgrade
 * from an older rdma-netns-ipam): its container alone tells whether the pod
 * lives, so it must be long past any ADD in flight.
 */
static long legacy_grace(long grace_s)
{
	long g = grace_s > LONG_MAX / 12 ? LONG_MAX : grace_s * 12;

	return g < 3600 ? 3600 : g;
}

/* Whether the process test can be trusted here: some record of this node names a running container. */
static bool containers_seen(const struct collect *addrs, const char *node,
			    const struct rn_cgroup_snapshot *cgroups)
{
	for (size_t i = 0; i < addrs->n; i++) {
		const struct rn_ipam_record *rec = (struct rn_ipam_record *)addrs->items + i;

		if (strcmp(rec->node, node) == 0 &&
		    rn_cgroup_snapshot_has(cgroups, rec->container_id))
			return true;
	}
	return false;
}

int rn_ipam_reconcile(struct rn_ipam_store *s, const struct rn_ipam_reconcile_opts *o,
		      rn_ipam_reconcile_fn fn, void *ctx, struct rn_ipam_reconcile_stats *ret,
		      struct rn_error *err)
{
	struct collect addrs = { .kind = RN_IPAM_KIND_ADDRESS, .keep_text = true };
	struct collect atts = { .kind = RN_IPAM_KIND_ATTACHMENT };
	struct rn_cgroup_snapshot *cgroups = NULL;
	bool host_pids = rn_netns_host_pids(), snapped = false, seen = false;
	long long now = o->now ? o->now : (long long)time(NULL);
	int r;

	memset(ret, 0, sizeof(*ret));
	if (!o->node || !*o->node)
		return rn_error_set(err, EINVAL, "the reconciler needs this node's name");
	r = collect_all(s, NULL, &addrs, err);
	if (r == 0)
		r = collect_all(s, NULL, &atts, err);
	for (size_t i = 0; r == 0 && i < addrs.n_damaged + atts.n_damaged; i++) {
		const struct rn_ipam_damaged *d = i < addrs.n_damaged
							  ? &addrs.damaged[i]
							  : &atts.damaged[i - addrs.n_damaged];

		ret->damaged++;
		fn(ctx, RN_IPAM_DAMAGED, NULL, d, d->why);
	}
	ret->records = addrs.n;
	for (size_t i = 0; r == 0 && i < addrs.n; i++) {
		const struct rn_ipam_record *rec = (struct rn_ipam_record *)addrs.items + i;
		struct release_want w = { rec, false, addrs.texts[i], addrs.versions[i] };
		unsigned long long ino = 0;
		char why[PATH_MAX + 200], age_text[RN_IPAM_NAME_MAX + 128];
		char full[sizeof(why) + sizeof(age_text) + 2 * RN_IPAM_NAME_MAX + 64];
		enum rn_netns_state state;
		long long age = 0;
		long grace = o->grace_s;
		bool gone, legacy;

		if (strcmp(rec->node, o->node) != 0)
			continue;
		ret->mine++;
		if (rec->netns_ino[0])
			ino = strtoull(rec->netns_ino, NULL, 10);
		state = rn_netns_path_state(rec->netns[0] ? rec->netns : NULL, ino, why,
					    sizeof(why));
		if (state == RN_NETNS_ALIVE) {
			ret->alive++;
			continue;
		}
		/* no netns= (written by an older version): judged by its container alone */
		legacy = state == RN_NETNS_UNKNOWN && !rec->netns[0] && host_pids;
		if (state == RN_NETNS_UNKNOWN && !legacy) {
			ret->unknown++;
			fn(ctx, RN_IPAM_KEPT_UNKNOWN, rec, NULL, why);
			continue;
		}
		if (host_pids && !snapped) {
			snapped = true;
			r = rn_cgroup_snapshot_take(&cgroups, err);
			if (r < 0)
				break;
			seen = containers_seen(&addrs, o->node, cgroups);
		}
		if (legacy && !seen) {
			ret->unknown++;
			snprintf(full, sizeof(full),
				 "%s (a record from before netns= was recorded), and no container "
				 "of this node's records is seen running here, so whether its "
				 "container runs cannot be told",
				 why);
			fn(ctx, RN_IPAM_KEPT_UNKNOWN, rec, NULL, full);
			continue;
		}
		if (legacy) {
			grace = legacy_grace(o->grace_s);
			rn_strappend(why, sizeof(why),
				     " (a record from before netns= was recorded: judged by its "
				     "container alone, with a grace of %lds)",
				     grace);
		}
		if (rn_cgroup_snapshot_has(cgroups, rec->container_id)) {
			ret->running++;
			snprintf(full, sizeof(full), "%s, but container %s still runs", why,
				 rec->container_id);
			fn(ctx, RN_IPAM_KEPT_RUNNING, rec, NULL, full);
			continue;
		}
		if (record_age(rec, now, grace, &age, age_text, sizeof(age_text)) && age < grace) {
			ret->young++;
			snprintf(full, sizeof(full), "%s; %s, grace %lds", why, age_text, grace);
			fn(ctx, RN_IPAM_KEPT_YOUNG, rec, NULL, full);
			continue;
		}
		r = release_locked(s, &w, o->dry_run, &gone, err);
		if (r < 0)
			break;
		snprintf(full, sizeof(full), "%s; container %s not running; %s", why,
			 rec->container_id, age_text);
		if (gone) {
			ret->released++;
			fn(ctx, RN_IPAM_RELEASED, rec, NULL, full);
		} else {
			ret->changed++;
			fn(ctx, RN_IPAM_CHANGED, rec, NULL,
			   "changed since it was read: left alone");
		}
	}
	rn_cgroup_snapshot_free(cgroups);
	collect_free(&addrs);
	collect_free(&atts);
	return r;
}
