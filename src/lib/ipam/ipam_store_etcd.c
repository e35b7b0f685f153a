// SPDX-License-Identifier: Apache-2.0
/*
 * The etcd IPAM store, over the etcd client (etcd_client.c: its v3 JSON
 * gateway, the endpoints, the deadline and the login).
 *
 *   PREFIX/SCOPE/POOL/4-0a380007          an address record (hex: keys sort by address)
 *   PREFIX/SCOPE/attachments/ID           an attachment
 *
 * An address is taken with one txn: compare the address key's
 * create_revision to 0 (absent) and the attachment's mod_revision to what was
 * read, then put both. Two nodes never get the same address, and no
 * lease or lock serialises ADDs: they collide only on the same address.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmans/cleanup.h"
#include "rdmans/etcd_client.h"
#include "rdmans/util.h"
#include "ipam_store.h"

#define ATT_DIR "attachments"
#define LIST_PAGE 1000
#define WINDOW 256

struct etcd_store {
	struct rn_ipam_store base;
	struct rn_etcd *etcd;
	char *prefix;
	/* probe windows read with the attachment (etcd_att_get), each answered once */
	struct read_ahead {
		char *from, *to; /* the window's first and last address keys */
		int family;
		rn_u128 first, last;
		rn_u128 *taken;
		size_t n;
	} ahead[RN_IPAM_MAX_RANGES];
};

static struct etcd_store *to_etcd(struct rn_ipam_store *s)
{
	return (struct etcd_store *)s;
}

static void ahead_clear(struct etcd_store *e)
{
	for (size_t i = 0; i < RN_IPAM_MAX_RANGES; i++) {
		free(e->ahead[i].from);
		free(e->ahead[i].to);
		free(e->ahead[i].taken);
		memset(&e->ahead[i], 0, sizeof(e->ahead[i]));
	}
}

static void etcd_close(struct rn_ipam_store *s)
{
	struct etcd_store *e = to_etcd(s);

	ahead_clear(e);
	rn_etcd_close(e->etcd);
	free(e->prefix);
	free(e);
}

static void etcd_freep(struct etcd_store **e)
{
	if (*e)
		etcd_close(&(*e)->base);
}

/* ---- keys --------------------------------------------------------------- */

static char *addr_key(struct etcd_store *e, const char *scope, const char *pool, int family,
		      rn_u128 v)
{
	char hex[40];
	char *key;

	if (family == AF_INET)
		snprintf(hex, sizeof(hex), "4-%08x", (unsigned)v);
	else
		snprintf(hex, sizeof(hex), "6-%016llx%016llx", (unsigned long long)(v >> 64),
			 (unsigned long long)v);
	if (asprintf(&key, "%s/%s/%s/%s", e->prefix, scope, pool, hex) < 0)
		return NULL;
	return key;
}

static char *att_key(struct etcd_store *e, const char *scope, const char *id)
{
	char *key;

	if (asprintf(&key, "%s/%s/" ATT_DIR "/%s", e->prefix, scope, id) < 0)
		return NULL;
	return key;
}

static int parse_hex_key(const char *key, int *family, rn_u128 *v)
{
	const char *p = strrchr(key, '/');
	rn_u128 x = 0;
	size_t n;

	if (!p)
		return -EINVAL;
	p++;
	if (p[0] == '4' && p[1] == '-')
		*family = AF_INET, n = 8;
	else if (p[0] == '6' && p[1] == '-')
		*family = AF_INET6, n = 32;
	else
		return -EINVAL;
	p += 2;
	if (strlen(p) != n)
		return -EINVAL;
	for (; *p; p++) {
		int d = (*p >= '0' && *p <= '9')   ? *p - '0'
			: (*p >= 'a' && *p <= 'f') ? *p - 'a' + 10
						   : -1;
		if (d < 0)
			return -EINVAL;
		x = (x << 4) | (unsigned)d;
	}
	*v = x;
	return 0;
}

/* ---- reads --------------------------------------------------------------- */

/* The value and mod_revision of a range's first kv; -ENOENT when none. */
static int kv_value(const char *key, struct rn_etcd_kvs *kvs, char **ret_text,
		    uint64_t *ret_version, struct rn_error *err)
{
	struct rn_etcd_kv *kv = kvs->n > 0 ? &kvs->kv[0] : NULL;

	if (!kv)
		return -ENOENT;
	if (ret_version)
		*ret_version = kv->mod_revision;
	if (ret_text) {
		if (!kv->value)
			return rn_error_set(err, EBADMSG, "etcd key %s: value is not base64", key);
		*ret_text = TAKE_PTR(kv->value);
	}
	return 0;
}

/* Value and mod_revision of one key; -ENOENT when absent. */
static int get_one(struct etcd_store *e, const char *key, char **ret_text, uint64_t *ret_version,
		   struct rn_error *err)
{
	_cleanup_etcd_kvs_ struct rn_etcd_kvs kvs = { 0 };
	int r;

	r = rn_etcd_range(e->etcd, &(struct rn_etcd_range){ .key = key }, &kvs, err);
	if (r < 0)
		return r;
	return kv_value(key, &kvs, ret_text, ret_version, err);
}

static int etcd_ping(struct rn_ipam_store *s, struct rn_error *err)
{
	struct etcd_store *e = to_etcd(s);
	_cleanup_etcd_kvs_ struct rn_etcd_kvs kvs = { 0 };
	_cleanup_free_ char *key = NULL;

	/* a read under our prefix proves the endpoint, the login and the role */
	if (asprintf(&key, "%s/", e->prefix) < 0)
		return rn_error_set(err, ENOMEM, "out of memory");
	return rn_etcd_range(e->etcd,
			     &(struct rn_etcd_range){ .key = key, .keys_only = true, .limit = 1 },
			     &kvs, err);
}

/* The addresses of family in [first, last] among a range's keys, ascending. */
static int kvs_taken(const struct rn_etcd_kvs *kvs, int family, rn_u128 first, rn_u128 last,
		     rn_u128 **ret_taken, size_t *ret_n, struct rn_error *err)
{
	_cleanup_free_ rn_u128 *taken = calloc(kvs->n + 1, sizeof(*taken));
	size_t n = 0;

	if (!taken)
		return rn_error_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < kvs->n; i++) {
		int fam;
		rn_u128 v;

		if (kvs->kv[i].key && parse_hex_key(kvs->kv[i].key, &fam, &v) == 0 &&
		    fam == family && v >= first && v <= last)
			taken[n++] = v;
	}
	*ret_taken = TAKE_PTR(taken);
	*ret_n = n;
	return 0;
}

/* The keys of a window of addresses: [from, to] (range_end is exclusive, so end just past to). */
static struct rn_etcd_range window_range(const char *from, const char *to)
{
	return (struct rn_etcd_range){
		.key = from, .end = to, .end_len = strlen(to) + 1, .keys_only = true
	};
}

/*
 * The attachment and, in the same read-only txn (one request), the first
 * probe window of each range rn_ipam_add() will search: the window
 * rn_ipam_range_walk() starts with, from the attachment's hint. A txn of
 * ranges alone is a linearizable read (no write, nothing in the raft log).
 */
static int att_get_ahead(struct etcd_store *e, const struct rn_ipam_config *c, const char *scope,
			 const char *id, const char *key, char **ret_text, uint64_t *ret_version,
			 struct rn_error *err)
{
	_cleanup_(rn_etcd_txn_freep) struct rn_etcd_txn *t = rn_etcd_txn_new();
	_cleanup_etcd_txn_result_ struct rn_etcd_txn_result res = { 0 };
	struct rn_etcd_range window;
	size_t n = 0;
	int r;

	rn_etcd_txn_range(t, RN_ETCD_SUCCESS, &(struct rn_etcd_range){ .key = key });
	for (size_t k = 0; k < c->n_ranges && k < RN_IPAM_MAX_RANGES; k++) {
		const struct rn_ipam_range *rg = &c->ranges[k];
		struct read_ahead *a = &e->ahead[n];
		char pool[RN_CIDR_STRLEN + 8];

		if (!rn_ipam_range_next(rg, rn_ipam_range_hint(rg, id), &a->first))
			continue;
		a->last = (rg->end - a->first < (rn_u128)(e->base.window - 1))
				  ? rg->end
				  : a->first + (e->base.window - 1);
		a->family = rg->family;
		rn_ipam_pool_name(c, rg, pool, sizeof(pool));
		a->from = addr_key(e, scope, pool, rg->family, a->first);
		a->to = addr_key(e, scope, pool, rg->family, a->last);
		if (!a->from || !a->to)
			return rn_error_set(err, ENOMEM, "out of memory");
		window = window_range(a->from, a->to);
		rn_etcd_txn_range(t, RN_ETCD_SUCCESS, &window);
		n++;
	}
	r = rn_etcd_txn_run(e->etcd, t, &res, err);
	if (r < 0)
		return r;
	if (res.n != n + 1)
		return rn_error_set(err, EBADMSG,
				    "etcd answered a read of %zu keys with %zu responses", n + 1,
				    res.n);
	for (size_t i = 0; i < n; i++) {
		struct read_ahead *a = &e->ahead[i];

		r = kvs_taken(&res.ranges[i + 1], a->family, a->first, a->last, &a->taken, &a->n,
			      err);
		if (r < 0)
			return r;
	}
	return kv_value(key, &res.ranges[0], ret_text, ret_version, err);
}

static int etcd_att_get(struct rn_ipam_store *s, const char *scope, const char *id, char **ret_text,
			uint64_t *ret_version, struct rn_error *err)
{
	struct etcd_store *e = to_etcd(s);
	_cleanup_free_ char *key = att_key(e, scope, id);
	int r;

	if (!key)
		return rn_error_set(err, ENOMEM, "out of memory");
	ahead_clear(e); /* what an earlier try read ahead is old now */
	if (s->read_ahead && s->read_ahead->n_ranges > 0 && s->read_ahead->scope &&
	    strcmp(s->read_ahead->scope, scope) == 0) {
		r = att_get_ahead(e, s->read_ahead, scope, id, key, ret_text, ret_version, err);
		if (r < 0 && r != -ENOENT)
			ahead_clear(e);
		return r;
	}
	return get_one(e, key, ret_text, ret_version, err);
}

static int etcd_addr_get(struct rn_ipam_store *s, const char *scope, const char *pool,
			 const struct rn_ip *ip, char **ret_text, uint64_t *ret_version,
			 struct rn_error *err)
{
	struct etcd_store *e = to_etcd(s);
	_cleanup_free_ char *key = addr_key(e, scope, pool, ip->family, ip->v);

	if (!key)
		return rn_error_set(err, ENOMEM, "out of memory");
	return get_one(e, key, ret_text, ret_version, err);
}

static int etcd_probe(struct rn_ipam_store *s, const char *scope, const char *pool, int family,
		      rn_u128 first, rn_u128 last, rn_u128 **ret_taken, size_t *ret_n,
		      struct rn_error *err)
{
	struct etcd_store *e = to_etcd(s);
	_cleanup_free_ char *from = addr_key(e, scope, pool, family, first);
	_cleanup_free_ char *to = addr_key(e, scope, pool, family, last);
	_cleanup_etcd_kvs_ struct rn_etcd_kvs kvs = { 0 };
	struct rn_etcd_range q;
	int r;

	*ret_taken = NULL;
	*ret_n = 0;
	if (!from || !to)
		return rn_error_set(err, ENOMEM, "out of memory");
	/* read with the attachment (att_get_ahead): answered once, from that read, within its ADD */
	for (size_t i = 0; s->read_ahead && i < RN_IPAM_MAX_RANGES; i++) {
		struct read_ahead *a = &e->ahead[i];

		if (a->from && a->family == family && a->first == first && a->last == last &&
		    strcmp(a->from, from) == 0 && strcmp(a->to, to) == 0) {
			*ret_taken = TAKE_PTR(a->taken);
			*ret_n = a->n;
			free(a->from);
			free(a->to);
			memset(a, 0, sizeof(*a));
			if (!*ret_taken) {
				*ret_taken = calloc(1, sizeof(**ret_taken));
				if (!*ret_taken)
					return rn_error_set(err, ENOMEM, "out of memory");
			}
			return 0;
		}
	}
	/* Serializable: any member answers from its own copy; a stale answer only
	 * costs a failed claim, since the claim's txn compares against the leader's state. */
	q = window_range(from, to);
	q.serializable = true;
	r = rn_etcd_range(e->etcd, &q, &kvs, err);
	if (r < 0)
		return r;
	return kvs_taken(&kvs, family, first, last, ret_taken, ret_n, err);
}

/* ---- writes -------------------------------------------------------------- */

static int etcd_claim(struct rn_ipam_store *s, const char *scope, const char *pool,
		      const struct rn_ip *ip, const char *rec_text, const char *id,
		      const char *att_text, uint64_t *att_version, struct rn_error *err)
{
	struct etcd_store *e = to_etcd(s);
	_cleanup_free_ char *akey = addr_key(e, scope, pool, ip->family, ip->v);
	_cleanup_free_ char *tkey = att_key(e, scope, id);
	_cleanup_(rn_etcd_txn_freep) struct rn_etcd_txn *t = rn_etcd_txn_new();
	_cleanup_etcd_txn_result_ struct rn_etcd_txn_result res = { 0 };
	uint64_t now;
	int r;

	if (!akey || !tkey)
		return rn_error_set(err, ENOMEM, "out of memory");
	rn_etcd_txn_compare(t, akey, 0);
	rn_etcd_txn_compare(t, tkey, *att_version);
	rn_etcd_txn_put(t, RN_ETCD_SUCCESS, akey, rec_text);
	rn_etcd_txn_put(t, RN_ETCD_SUCCESS, tkey, att_text);
	rn_etcd_txn_range(t, RN_ETCD_FAILURE,
			  &(struct rn_etcd_range){ .key = tkey, .keys_only = true });
	r = rn_etcd_txn_run(e->etcd, t, &res, err);
	if (r < 0)
		return r;
	if (res.succeeded) {
		*att_version = res.revision;
		return 0;
	}
	/* which compare failed? the attachment's revision tells */
	now = res.n > 0 && res.ranges[0].n > 0 ? res.ranges[0].kv[0].mod_revision : 0;
	return now == *att_version ? -EEXIST : -ESTALE;
}

static int etcd_commit(struct rn_ipam_store *s, const char *scope, const struct rn_ipam_ref *refs,
		       size_t n, const char *id, uint64_t att_version, enum rn_ipam_att_op att_op,
		       const char *att_text, struct rn_error *err)
{
	struct etcd_store *e = to_etcd(s);
	_cleanup_(rn_etcd_txn_freep) struct rn_etcd_txn *t = rn_etcd_txn_new();
	_cleanup_etcd_txn_result_ struct rn_etcd_txn_result res = { 0 };
	size_t ops = 0;
	int r;

	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ char *key =
			addr_key(e, scope, refs[i].pool, refs[i].ip.family, refs[i].ip.v);

		if (!key)
			return rn_error_set(err, ENOMEM, "out of memory");
		rn_etcd_txn_compare(t, key, refs[i].version);
		if (refs[i].text)
			rn_etcd_txn_put(t, RN_ETCD_SUCCESS, key, refs[i].text);
		else
			rn_etcd_txn_delete(t, RN_ETCD_SUCCESS, key);
		ops++;
	}
	if (id) {
		_cleanup_free_ char *key = att_key(e, scope, id);

		if (!key)
			return rn_error_set(err, ENOMEM, "out of memory");
		rn_etcd_txn_compare(t, key, att_version);
		if (att_op == RN_IPAM_ATT_PUT)
			rn_etcd_txn_put(t, RN_ETCD_SUCCESS, key, att_text);
		else if (att_op == RN_IPAM_ATT_DELETE)
			rn_etcd_txn_delete(t, RN_ETCD_SUCCESS, key);
		if (att_op == RN_IPAM_ATT_PUT || att_op == RN_IPAM_ATT_DELETE)
			ops++;
	}
	if (ops == 0)
		return 0;
	r = rn_etcd_txn_run(e->etcd, t, &res, err);
	if (r < 0)
		return r;
	return res.succeeded ? 0 : -ESTALE;
}

static int etcd_addr_drop(struct rn_ipam_store *s, const char *scope, const char *pool,
			  const struct rn_ip *ip, uint64_t version, struct rn_error *err)
{
	struct etcd_store *e = to_etcd(s);
	_cleanup_free_ char *key = addr_key(e, scope, pool, ip->family, ip->v);
	_cleanup_(rn_etcd_txn_freep) struct rn_etcd_txn *t = rn_etcd_txn_new();
	_cleanup_etcd_txn_result_ struct rn_etcd_txn_result res = { 0 };
	int r;

	if (!key)
		return rn_error_set(err, ENOMEM, "out of memory");
	rn_etcd_txn_compare(t, key, version);
	rn_etcd_txn_delete(t, RN_ETCD_SUCCESS, key);
	r = rn_etcd_txn_run(e->etcd, t, &res, err);
	if (r < 0)
		return r;
	return res.succeeded ? 0 : -ESTALE;
}

/* ---- listing ------------------------------------------------------------- */

/* The scope a key belongs to (the component after the prefix). */
static bool key_scope(const struct etcd_store *e, const char *key, char *scope, size_t len,
		      bool *is_att)
{
	size_t plen = strlen(e->prefix);
	const char *p, *slash;

	if (strncmp(key, e->prefix, plen) != 0 || key[plen] != '/')
		return false;
	p = key + plen + 1;
	slash = strchr(p, '/');
	if (!slash || (size_t)(slash - p) >= len)
		return false;
	memcpy(scope, p, (size_t)(slash - p));
	scope[slash - p] = '\0';
	*is_att = strncmp(slash + 1, ATT_DIR "/", strlen(ATT_DIR) + 1) == 0;
	return true;
}

struct list_ctx {
	struct etcd_store *e;
	enum rn_ipam_kind kind;
	rn_ipam_list_fn fn;
	void *ctx;
};

/* Hands one listed key of the kind asked for to fn: its pool and address (or attachment id) from the key. */
static int list_item(void *ctx, const struct rn_etcd_kv *kv)
{
	const struct list_ctx *l = ctx;
	_cleanup_free_ char *pool = NULL;
	const char *key = kv->key, *rest, *slash;
	char scope[RN_IPAM_NAME_MAX];
	struct rn_ipam_item it = { scope, NULL, NULL, NULL, NULL, kv->mod_revision };
	char ip[RN_IP_STRLEN];
	bool is_att;

	if (!key_scope(l->e, key, scope, sizeof(scope), &is_att) ||
	    is_att != (l->kind == RN_IPAM_KIND_ATTACHMENT))
		return 0;
	rest = key + strlen(l->e->prefix) + 1 + strlen(scope) + 1;
	it.key = rest;
	if (is_att) {
		it.key = rest + strlen(ATT_DIR) + 1;
	} else {
		rn_u128 v;
		int fam;

		slash = strchr(rest, '/');
		if (!slash || strchr(slash + 1, '/')) {
			it.why = "its key is not PREFIX/SCOPE/POOL/ADDRESS";
		} else {
			pool = strndup(rest, (size_t)(slash - rest));
			if (!pool)
				return -ENOMEM;
			it.pool = pool;
			it.key = slash + 1;
			if (parse_hex_key(key, &fam, &v) == 0)
				it.key = rn_ip_format(fam, v, ip, sizeof(ip));
			else
				it.why = "its key names no address";
		}
	}
	if (!kv->value)
		it.why = "its value is not base64";
	it.text = kv->value;
	return l->fn(l->ctx, &it);
}

static int etcd_list(struct rn_ipam_store *s, const char *scope, enum rn_ipam_kind kind,
		     rn_ipam_list_fn fn, void *ctx, struct rn_error *err)
{
	struct etcd_store *e = to_etcd(s);
	struct list_ctx l = { e, kind, fn, ctx };
	_cleanup_free_ char *from = NULL;

	if (asprintf(&from, "%s/%s%s", e->prefix, scope ? scope : "", scope ? "/" : "") < 0) {
		from = NULL;
		return rn_error_set(err, ENOMEM, "out of memory");
	}
	return rn_etcd_range_each(
		e->etcd, &(struct rn_etcd_range){ .key = from, .prefix = true, .limit = LIST_PAGE },
		list_item, &l, err);
}

static const struct rn_ipam_store_ops etcd_ops = {
	.close = etcd_close,
	.ping = etcd_ping,
	.att_get = etcd_att_get,
	.addr_get = etcd_addr_get,
	.addr_drop = etcd_addr_drop,
	.probe = etcd_probe,
	.claim = etcd_claim,
	.commit = etcd_commit,
	.list = etcd_list,
};

int rn_ipam_store_etcd_open(const struct rn_ipam_config *c, struct rn_ipam_store **ret,
			    struct rn_error *err)
{
	const struct rn_ipam_etcd *cfg = &c->etcd;
	const struct rn_etcd_options o = {
		.endpoints = cfg->endpoints,
		.n_endpoints = cfg->n_endpoints,
		.ca_file = cfg->ca_file,
		.cert_file = cfg->cert_file,
		.key_file = cfg->key_file,
		.username = cfg->username,
		.password = cfg->password,
		.timeout_ms = cfg->timeout_ms,
		.deadline_ms = cfg->deadline_ms,
		.user_settings = cfg->user_settings,
		.timeout_setting = "ipam.etcd.timeout_ms",
		.deadline_setting = "ipam.etcd.deadline_ms",
	};
	_cleanup_(etcd_freep) struct etcd_store *e = NULL;
	int r;

	if (cfg->n_endpoints == 0)
		return rn_error_set(
			err, EINVAL,
			"store 'etcd' needs endpoints (ipam.etcd.endpoints or etcd_host)");
	e = calloc(1, sizeof(*e));
	if (!e)
		return rn_error_set(err, ENOMEM, "out of memory");
	e->base.ops = &etcd_ops;
	e->base.window = WINDOW;
	e->prefix = strdup(cfg->key_prefix ? cfg->key_prefix : RN_IPAM_DEFAULT_ETCD_PREFIX);
	if (!e->prefix)
		return rn_error_set(err, ENOMEM, "out of memory");
	/* strip a trailing '/' from the prefix: keys are PREFIX/SCOPE/... */
	for (size_t len = strlen(e->prefix); len > 1 && e->prefix[len - 1] == '/';)
		e->prefix[--len] = '\0';
	r = rn_etcd_open(&o, &e->etcd, err);
	if (r < 0)
		return r;
	*ret = &TAKE_PTR(e)->base;
	return 0;
}
