// SPDX-License-Identifier: Apache-2.0
/*
 * The etcd IPAM store, over etcd's v3 JSON gateway (etcd >= 3.4: /v3/...).
 *
 *   PREFIX/SCOPE/POOL/4-0a380007          an address record (hex: keys sort by address)
 *   PREFIX/SCOPE/attachments/ID           an attachment
 *
 * An address is taken with one txn: compare the address key's
 * create_revision to 0 (absent) and the attachment's mod_revision to what was
 * read, then put both. Two nodes never get the same address, and no
 * lease or lock serialises ADDs: they collide only on the same address.
 *
 * Endpoints are tried in turn from one picked by PID; a member that does not
 * answer, or answers "no leader"/"leader changed", sends the request to the
 * next. Credentials: a token from /v3/auth/authenticate, renewed once when
 * etcd says it expired. Neither the password nor the token reaches an error.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rdmans/cleanup.h"
#include "rdmans/util.h"
#include "rdmans/json_cleanup.h"
#include "ipam_http.h"
#include "ipam_store.h"

#define ATT_DIR "attachments"
#define LIST_PAGE 1000
#define WINDOW 256

struct etcd_store {
	struct rn_ipam_store base;
	struct rn_http *http;
	char **endpoints;
	size_t n_endpoints;
	size_t current;
	char *prefix;
	char *username;
	char *password;
	char *token;
	bool authed;
	long timeout_ms; /* each request */
	long deadline_ms; /* all of them (one CNI call); 0: none */
	long deadline; /* rn_now_ms() when they must have ended; 0: none */
	const char *user_settings; /* static text: where users set them */
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

static void wipe_free(char *s)
{
	if (s) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}

/* For buffers that may hold the password (requests) or a token (answers). */
static void wipe_freep(char **s)
{
	wipe_free(*s);
}
#define _cleanup_wipe_ __attribute__((cleanup(wipe_freep)))

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
	rn_http_close(e->http);
	for (size_t i = 0; i < e->n_endpoints; i++)
		free(e->endpoints[i]);
	free(e->endpoints);
	free(e->prefix);
	free(e->username);
	wipe_free(e->password);
	wipe_free(e->token);
	free(e);
}

/* ---- base64 (keys and values travel base64-encoded) --------------------- */

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static char *b64_encode(const unsigned char *in, size_t len)
{
	char *out = malloc(4 * ((len + 2) / 3) + 1), *p = out;

	if (!out)
		return NULL;
	for (size_t i = 0; i < len; i += 3) {
		unsigned v = (unsigned)in[i] << 16;

		if (i + 1 < len)
			v |= (unsigned)in[i + 1] << 8;
		if (i + 2 < len)
			v |= in[i + 2];
		*p++ = b64[(v >> 18) & 63];
		*p++ = b64[(v >> 12) & 63];
		*p++ = i + 1 < len ? b64[(v >> 6) & 63] : '=';
		*p++ = i + 2 < len ? b64[v & 63] : '=';
	}
	*p = '\0';
	return out;
}

static json_t *b64_json(const char *s, size_t len)
{
	_cleanup_free_ char *enc = b64_encode((const unsigned char *)s, len);

	return enc ? json_string(enc) : NULL;
}

/* int64 fields come back as strings ("42"); zero fields are left out. */
static uint64_t json_u64(const json_t *j)
{
	if (json_is_string(j))
		return strtoull(json_string_value(j), NULL, 10);
	if (json_is_integer(j))
		return (uint64_t)json_integer_value(j);
	return 0;
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

/* ---- requests ------------------------------------------------------------ */

static bool retry_elsewhere(const char *msg, long code)
{
	/* gRPC Unavailable, or a member between leaders */
	return code == 14 || (msg && (strstr(msg, "leader changed") || strstr(msg, "no leader") ||
				      strstr(msg, "timed out") || strstr(msg, "not capable") ||
				      strstr(msg, "too many requests")));
}

static int authenticate(struct etcd_store *e, struct rn_error *err);

static int deadline_error(const struct etcd_store *e, const struct rn_error *last,
			  struct rn_error *err)
{
	return rn_error_set(err, ETIMEDOUT,
			    "etcd did not answer within this call's deadline of %ld ms "
			    "(ipam.etcd.deadline_ms; each request at most %ld ms, "
			    "ipam.etcd.timeout_ms)%s%s",
			    e->deadline_ms, e->timeout_ms, last->msg[0] ? ": last: " : "",
			    last->msg);
}

/*
 * POSTs body to path on the first endpoint that answers; *ret is the
 * parsed answer. Etcd's own errors come back as -EACCES (auth, permission)
 * or -EIO with etcd's message.
 */
static int request(struct etcd_store *e, const char *path, json_t *body, bool with_token,
		   json_t **ret, struct rn_error *err)
{
	_cleanup_wipe_ char *text = json_dumps(body, JSON_COMPACT);
	struct rn_error last = { 0 };
	bool reauthed = false, cut_by_deadline = false;
	size_t tries = e->n_endpoints * 2 + 2;

	if (!text)
		return rn_error_set(err, ENOMEM, "out of memory");
	if (with_token && e->username && !e->authed) {
		int r = authenticate(e, err);

		if (r < 0) {
			explicit_bzero(text, strlen(text));
			return r;
		}
	}
	for (size_t attempt = 0; attempt < tries; attempt++) {
		_cleanup_wipe_ char *answer = NULL;
		_cleanup_free_ char *url = NULL;
		_cleanup_json_ json_t *doc = NULL;
		const char *endpoint = e->endpoints[e->current % e->n_endpoints];
		const char *msg;
		json_error_t jerr;
		long status = 0, code, left = e->deadline ? e->deadline - rn_now_ms() : 0;
		int r;

		if (e->deadline && left <= 0) {
			explicit_bzero(text, strlen(text));
			return deadline_error(e, &last, err);
		}
		/* the last try may end on the deadline: then that is what the caller hears */
		cut_by_deadline = e->deadline && left <= e->timeout_ms;
		if (asprintf(&url, "%s%s", endpoint, path) < 0) {
			url = NULL;
			return rn_error_set(err, ENOMEM, "out of memory");
		}
		r = rn_http_request(e->http, "POST", url, text, with_token ? e->token : NULL, left,
				    &status, &answer, &last);
		if (r < 0) {
			/* this member is down or unreachable: the next one */
			e->current++;
			continue;
		}
		doc = json_loads(answer, 0, &jerr);
		if (status == 200 && json_is_object(doc) && !json_object_get(doc, "error")) {
			explicit_bzero(text, strlen(text));
			*ret = TAKE_PTR(doc);
			return 0;
		}
		msg = json_string_value(json_object_get(doc, "message"));
		if (!msg)
			msg = json_string_value(json_object_get(doc, "error"));
		code = (long)json_integer_value(json_object_get(doc, "code"));
		if (with_token && e->username && !reauthed && code == 16) {
			/* the token expired (or the member restarted): log in once more */
			reauthed = true;
			e->authed = false;
			r = authenticate(e, err);
			if (r < 0)
				return r;
			attempt--;
			continue;
		}
		if (retry_elsewhere(msg, code)) {
			rn_error_set(&last, EAGAIN, "etcd at %s: %s", endpoint, msg);
			e->current++;
			struct timespec ts = { 0, 20 * 1000 * 1000 * (long)(attempt + 1) };
			nanosleep(&ts, NULL);
			continue;
		}
		explicit_bzero(text, strlen(text));
		if (!doc && strstr(answer, "CommonName of client"))
			return rn_error_set(
				err, EACCES,
				"etcd at %s refuses a client certificate with a CommonName "
				"on its JSON gateway while auth is enabled: use a client "
				"certificate without CN and an etcd username/password",
				endpoint);
		if (msg && strstr(msg, "user name is empty"))
			return rn_error_set(
				err, EACCES,
				"etcd at %s has auth enabled: give a user name and password "
				"with %s",
				endpoint, e->user_settings);
		if (!doc) {
			/* not JSON: show etcd's first line, it is all there is to go on */
			size_t n = strcspn(answer, "\r\n");

			return rn_error_set(err, EIO, "etcd at %s: HTTP %ld: %.*s", endpoint,
					    status, (int)(n > 200 ? 200 : n), answer);
		}
		if (code == 7 || code == 16 || (msg && strstr(msg, "authentication failed")))
			return rn_error_set(err, EACCES,
					    "etcd at %s refused: %s (check the etcd "
					    "user, password and role)",
					    endpoint, msg ? msg : "permission denied");
		/* the NOSPACE alarm: etcd takes no put until someone frees space and disarms it */
		if (msg && strstr(msg, "database space exceeded"))
			return rn_error_set(
				err, ENOSPC,
				"etcd at %s: %s: its database is over its quota "
				"(--quota-backend-bytes): compact and defragment it, then "
				"disarm the alarm (etcdctl alarm disarm)",
				endpoint, msg);
		return rn_error_set(err, EIO, "etcd at %s: %s (HTTP %ld)", endpoint,
				    msg ? msg : "unexpected answer", status);
	}
	explicit_bzero(text, strlen(text));
	if (cut_by_deadline && last.code == ETIMEDOUT)
		return deadline_error(e, &last, err);
	if (last.code == EPROTO)
		return rn_error_set(err, EPROTO,
				    "no etcd endpoint could be reached over TLS: %s (check the CA, "
				    "certificate and key files)",
				    last.msg);
	return rn_error_set(err, last.code == ETIMEDOUT ? ETIMEDOUT : EHOSTUNREACH,
			    "no etcd endpoint answered (%zu tried, %zu requests of at most %ld ms "
			    "each, ipam.etcd.timeout_ms): %s",
			    e->n_endpoints, tries, e->timeout_ms,
			    last.msg[0] ? last.msg : "no answer");
}

static int authenticate(struct etcd_store *e, struct rn_error *err)
{
	_cleanup_json_ json_t *body = NULL, *ans = NULL;
	const char *token;
	int r;

	body = json_pack("{s:s,s:s}", "name", e->username, "password",
			 e->password ? e->password : "");
	if (!body)
		return rn_error_set(err, ENOMEM, "out of memory");
	r = request(e, "/v3/auth/authenticate", body, false, &ans, err);
	/* the password is in the body: scrub jansson's copy */
	{
		json_t *pw = json_object_get(body, "password");
		const char *v = json_string_value(pw);

		if (v)
			explicit_bzero((char *)v, strlen(v));
	}
	if (r < 0)
		return rn_error_wrap(err, "etcd login as '%s'", e->username);
	token = json_string_value(json_object_get(ans, "token"));
	if (!token)
		return rn_error_set(err, EACCES,
				    "etcd login as '%s' gave no token (is auth enabled on the "
				    "cluster?)",
				    e->username);
	wipe_free(e->token);
	e->token = strdup(token);
	explicit_bzero((char *)token, strlen(token));
	if (!e->token)
		return rn_error_set(err, ENOMEM, "out of memory");
	e->authed = true;
	return 0;
}

static json_t *range_body(const char *key, const char *end, size_t end_len, bool keys_only,
			  long limit)
{
	json_t *b = json_object();

	json_object_set_new(b, "key", b64_json(key, strlen(key)));
	if (end)
		json_object_set_new(b, "range_end", b64_json(end, end_len));
	if (keys_only)
		json_object_set_new(b, "keys_only", json_true());
	if (limit)
		json_object_set_new(b, "limit", json_integer(limit));
	return b;
}

/* Value and mod_revision of one key; -ENOENT when absent. */
/* The value and mod_revision of a range answer's first kv; -ENOENT when none. */
static int kv_value(const char *key, json_t *range_ans, char **ret_text, uint64_t *ret_version,
		    struct rn_error *err)
{
	json_t *kv = json_array_get(json_object_get(range_ans, "kvs"), 0);

	if (!kv)
		return -ENOENT;
	if (ret_version)
		*ret_version = json_u64(json_object_get(kv, "mod_revision"));
	if (ret_text) {
		const char *v = json_string_value(json_object_get(kv, "value"));

		if (rn_base64_decode(v ? v : "", ret_text, NULL) < 0)
			return rn_error_set(err, EBADMSG, "etcd key %s: value is not base64", key);
	}
	return 0;
}

static int get_one(struct etcd_store *e, const char *key, char **ret_text, uint64_t *ret_version,
		   struct rn_error *err)
{
	_cleanup_json_ json_t *body = range_body(key, NULL, 0, false, 0), *ans = NULL;
	int r;

	r = request(e, "/v3/kv/range", body, true, &ans, err);
	if (r < 0)
		return r;
	return kv_value(key, ans, ret_text, ret_version, err);
}

static int etcd_ping(struct rn_ipam_store *s, struct rn_error *err)
{
	struct etcd_store *e = to_etcd(s);
	_cleanup_json_ json_t *body = NULL, *ans = NULL;
	_cleanup_free_ char *key = NULL;

	/* a read under our prefix proves the endpoint, the login and the role */
	if (asprintf(&key, "%s/", e->prefix) < 0)
		return rn_error_set(err, ENOMEM, "out of memory");
	body = range_body(key, NULL, 0, true, 1);
	return request(e, "/v3/kv/range", body, true, &ans, err);
}

/* The addresses of family in [first, last] among a range answer's keys, ascending. */
static int kvs_taken(json_t *range_ans, int family, rn_u128 first, rn_u128 last,
		     rn_u128 **ret_taken, size_t *ret_n, struct rn_error *err)
{
	json_t *kvs = json_object_get(range_ans, "kvs"), *kv;
	_cleanup_free_ rn_u128 *taken = calloc(json_array_size(kvs) + 1, sizeof(*taken));
	size_t i, n = 0;

	if (!taken)
		return rn_error_set(err, ENOMEM, "out of memory");
	json_array_foreach (kvs, i, kv) {
		_cleanup_free_ char *key = NULL;
		const char *k = json_string_value(json_object_get(kv, "key"));
		int fam;
		rn_u128 v;

		if (!k || rn_base64_decode(k, &key, NULL) < 0)
			continue;
		if (parse_hex_key(key, &fam, &v) == 0 && fam == family && v >= first && v <= last)
			taken[n++] = v;
	}
	*ret_taken = TAKE_PTR(taken);
	*ret_n = n;
	return 0;
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
	_cleanup_json_ json_t *body = NULL, *ans = NULL;
	json_t *ops = json_array(), *responses;
	size_t n = 0;
	int r;

	body = json_pack("{s:o}", "success", ops);
	if (!body)
		return rn_error_set(err, ENOMEM, "out of memory");
	json_array_append_new(
		ops, json_pack("{s:o}", "request_range", range_body(key, NULL, 0, false, 0)));
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
		json_array_append_new(
			ops, json_pack("{s:o}", "request_range",
				       range_body(a->from, a->to, strlen(a->to) + 1, true, 0)));
		n++;
	}
	r = request(e, "/v3/kv/txn", body, true, &ans, err);
	if (r < 0)
		return r;
	responses = json_object_get(ans, "responses");
	if (json_array_size(responses) != n + 1)
		return rn_error_set(err, EBADMSG,
				    "etcd answered a read of %zu keys with %zu responses", n + 1,
				    json_array_size(responses));
	for (size_t i = 0; i < n; i++) {
		struct read_ahead *a = &e->ahead[i];

		r = kvs_taken(json_object_get(json_array_get(responses, i + 1), "response_range"),
			      a->family, a->first, a->last, &a->taken, &a->n, err);
		if (r < 0)
			return r;
	}
	return kv_value(key, json_object_get(json_array_get(responses, 0), "response_range"),
			ret_text, ret_version, err);
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
	_cleanup_json_ json_t *body = NULL, *ans = NULL;
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
	/* [from, to]: range_end is exclusive, so end just past `to`. Serializable:
	 * any member answers from its own copy; a stale answer only costs a failed
	 * claim, since the claim's txn compares against the leader's state. */
	body = range_body(from, to, strlen(to) + 1, true, 0);
	json_object_set_new(body, "serializable", json_true());
	r = request(e, "/v3/kv/range", body, true, &ans, err);
	if (r < 0)
		return r;
	return kvs_taken(ans, family, first, last, ret_taken, ret_n, err);
}

static json_t *compare_version(const char *key, uint64_t version)
{
	char rev[24];

	snprintf(rev, sizeof(rev), "%llu", (unsigned long long)version);
	if (version == 0)
		return json_pack("{s:s,s:o,s:s,s:s}", "target", "CREATE", "key",
				 b64_json(key, strlen(key)), "result", "EQUAL", "create_revision",
				 "0");
	return json_pack("{s:s,s:o,s:s,s:s}", "target", "MOD", "key", b64_json(key, strlen(key)),
			 "result", "EQUAL", "mod_revision", rev);
}

static json_t *op_put(const char *key, const char *value)
{
	return json_pack("{s:{s:o,s:o}}", "request_put", "key", b64_json(key, strlen(key)), "value",
			 b64_json(value, strlen(value)));
}

static json_t *op_delete(const char *key)
{
	return json_pack("{s:{s:o}}", "request_delete_range", "key", b64_json(key, strlen(key)));
}

static int etcd_claim(struct rn_ipam_store *s, const char *scope, const char *pool,
		      const struct rn_ip *ip, const char *rec_text, const char *id,
		      const char *att_text, uint64_t *att_version, struct rn_error *err)
{
	struct etcd_store *e = to_etcd(s);
	_cleanup_free_ char *akey = addr_key(e, scope, pool, ip->family, ip->v);
	_cleanup_free_ char *tkey = att_key(e, scope, id);
	_cleanup_json_ json_t *body = NULL, *ans = NULL;
	json_t *kv;
	uint64_t now;
	int r;

	if (!akey || !tkey)
		return rn_error_set(err, ENOMEM, "out of memory");
	body = json_pack("{s:[o,o],s:[o,o],s:[{s:o}]}", "compare", compare_version(akey, 0),
			 compare_version(tkey, *att_version), "success", op_put(akey, rec_text),
			 op_put(tkey, att_text), "failure", "request_range",
			 range_body(tkey, NULL, 0, true, 0));
	if (!body)
		return rn_error_set(err, ENOMEM, "out of memory");
	r = request(e, "/v3/kv/txn", body, true, &ans, err);
	if (r < 0)
		return r;
	if (json_is_true(json_object_get(ans, "succeeded"))) {
		*att_version =
			json_u64(json_object_get(json_object_get(ans, "header"), "revision"));
		return 0;
	}
	/* which compare failed? the attachment's revision tells */
	kv = json_array_get(
		json_object_get(
			json_object_get(json_array_get(json_object_get(ans, "responses"), 0),
					"response_range"),
			"kvs"),
		0);
	now = kv ? json_u64(json_object_get(kv, "mod_revision")) : 0;
	return now == *att_version ? -EEXIST : -ESTALE;
}

static int etcd_commit(struct rn_ipam_store *s, const char *scope, const struct rn_ipam_ref *refs,
		       size_t n, const char *id, uint64_t att_version, enum rn_ipam_att_op att_op,
		       const char *att_text, struct rn_error *err)
{
	struct etcd_store *e = to_etcd(s);
	_cleanup_json_ json_t *body = NULL, *ans = NULL;
	json_t *cmp = json_array(), *ops = json_array();
	int r;

	body = json_pack("{s:o,s:o}", "compare", cmp, "success", ops);
	if (!body)
		return rn_error_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ char *key =
			addr_key(e, scope, refs[i].pool, refs[i].ip.family, refs[i].ip.v);

		if (!key)
			return rn_error_set(err, ENOMEM, "out of memory");
		json_array_append_new(cmp, compare_version(key, refs[i].version));
		json_array_append_new(ops,
				      refs[i].text ? op_put(key, refs[i].text) : op_delete(key));
	}
	if (id) {
		_cleanup_free_ char *key = att_key(e, scope, id);

		if (!key)
			return rn_error_set(err, ENOMEM, "out of memory");
		json_array_append_new(cmp, compare_version(key, att_version));
		if (att_op == RN_IPAM_ATT_PUT)
			json_array_append_new(ops, op_put(key, att_text));
		else if (att_op == RN_IPAM_ATT_DELETE)
			json_array_append_new(ops, op_delete(key));
	}
	if (json_array_size(ops) == 0)
		return 0;
	r = request(e, "/v3/kv/txn", body, true, &ans, err);
	if (r < 0)
		return r;
	return json_is_true(json_object_get(ans, "succeeded")) ? 0 : -ESTALE;
}

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

/* Hands one listed key to fn: its pool and address (or attachment id) from the key. */
static int list_item(struct etcd_store *e, const char *key, const char *scope, bool is_att,
		     const char *value, uint64_t version, rn_ipam_list_fn fn, void *ctx)
{
	_cleanup_free_ char *text = NULL, *pool = NULL;
	const char *rest = key + strlen(e->prefix) + 1 + strlen(scope) + 1, *slash;
	struct rn_ipam_item it = { scope, NULL, rest, NULL, NULL, version };
	char ip[RN_IP_STRLEN];

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
	if (rn_base64_decode(value ? value : "", &text, NULL) < 0)
		it.why = "its value is not base64";
	it.text = text;
	return fn(ctx, &it);
}

static int etcd_list(struct rn_ipam_store *s, const char *scope, enum rn_ipam_kind kind,
		     rn_ipam_list_fn fn, void *ctx, struct rn_error *err)
{
	struct etcd_store *e = to_etcd(s);
	_cleanup_free_ char *from = NULL, *end = NULL;
	size_t from_len, end_len;

	if (asprintf(&from, "%s/%s%s", e->prefix, scope ? scope : "", scope ? "/" : "") < 0) {
		from = NULL;
		return rn_error_set(err, ENOMEM, "out of memory");
	}
	from_len = strlen(from);
	/* the prefix's range end: its last byte + 1 ('/' + 1 is '0') */
	end = strdup(from);
	if (!end)
		return rn_error_set(err, ENOMEM, "out of memory");
	end_len = strlen(end);
	end[end_len - 1]++;
	for (;;) {
		_cleanup_json_ json_t *body = json_object(), *ans = NULL;
		_cleanup_free_ char *last_key = NULL;
		size_t last_len = 0, i;
		json_t *kv;
		int r;

		if (!body)
			return rn_error_set(err, ENOMEM, "out of memory");
		json_object_set_new(body, "key", b64_json(from, from_len));
		json_object_set_new(body, "range_end", b64_json(end, end_len));
		json_object_set_new(body, "limit", json_integer(LIST_PAGE));
		r = request(e, "/v3/kv/range", body, true, &ans, err);
		if (r < 0)
			return r;
		json_array_foreach (json_object_get(ans, "kvs"), i, kv) {
			_cleanup_free_ char *key = NULL;
			const char *k = json_string_value(json_object_get(kv, "key"));
			const char *v = json_string_value(json_object_get(kv, "value"));
			char sc[RN_IPAM_NAME_MAX];
			size_t klen;
			bool is_att;

			if (!k || rn_base64_decode(k, &key, &klen) < 0)
				continue;
			free(last_key);
			last_key = malloc(klen + 1);
			if (!last_key)
				return rn_error_set(err, ENOMEM, "out of memory");
			memcpy(last_key, key, klen + 1);
			last_len = klen;
			if (!key_scope(e, key, sc, sizeof(sc), &is_att) ||
			    is_att != (kind == RN_IPAM_KIND_ATTACHMENT))
				continue;
			r = list_item(e, key, sc, is_att, v,
				      json_u64(json_object_get(kv, "mod_revision")), fn, ctx);
			if (r < 0)
				return r;
		}
		if (!json_is_true(json_object_get(ans, "more")) || !last_key)
			return 0;
		/* the next page starts at the smallest key after the last one: key + NUL */
		free(from);
		from = TAKE_PTR(last_key);
		from_len = last_len + 1;
	}
}

static int etcd_addr_drop(struct rn_ipam_store *s, const char *scope, const char *pool,
			  const struct rn_ip *ip, uint64_t version, struct rn_error *err)
{
	struct etcd_store *e = to_etcd(s);
	_cleanup_free_ char *key = addr_key(e, scope, pool, ip->family, ip->v);
	_cleanup_json_ json_t *body = NULL, *ans = NULL;
	int r;

	if (!key)
		return rn_error_set(err, ENOMEM, "out of memory");
	body = json_pack("{s:[o],s:[o]}", "compare", compare_version(key, version), "success",
			 op_delete(key));
	if (!body)
		return rn_error_set(err, ENOMEM, "out of memory");
	r = request(e, "/v3/kv/txn", body, true, &ans, err);
	if (r < 0)
		return r;
	return json_is_true(json_object_get(ans, "succeeded")) ? 0 : -ESTALE;
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
	struct rn_http_tls tls = { .ca_file = cfg->ca_file,
				   .cert_file = cfg->cert_file,
				   .key_file = cfg->key_file };
	struct etcd_store *e;
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
	e->endpoints = calloc(cfg->n_endpoints, sizeof(*e->endpoints));
	e->n_endpoints = cfg->n_endpoints;
	e->prefix = strdup(cfg->key_prefix ? cfg->key_prefix : RN_IPAM_DEFAULT_ETCD_PREFIX);
	e->user_settings =
		cfg->user_settings ? cfg->user_settings : "the etcd user name and password";
	if (cfg->username) {
		e->username = strdup(cfg->username);
		e->password = strdup(cfg->password ? cfg->password : "");
	}
	if (!e->endpoints || !e->prefix || (cfg->username && (!e->username || !e->password))) {
		etcd_close(&e->base);
		return rn_error_set(err, ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < cfg->n_endpoints; i++) {
		size_t len;

		e->endpoints[i] = strdup(cfg->endpoints[i]);
		if (!e->endpoints[i]) {
			etcd_close(&e->base);
			return rn_error_set(err, ENOMEM, "out of memory");
		}
		len = strlen(e->endpoints[i]);
		while (len > 0 && e->endpoints[i][len - 1] == '/')
			e->endpoints[i][--len] = '\0';
	}
	/* strip a trailing '/' from the prefix: keys are PREFIX/SCOPE/... */
	for (size_t len = strlen(e->prefix); len > 1 && e->prefix[len - 1] == '/';)
		e->prefix[--len] = '\0';
	/* spread the clients of a cluster over its members */
	e->current = (size_t)getpid() % e->n_endpoints;
	e->timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : 5000;
	e->deadline_ms = cfg->deadline_ms > 0 ? cfg->deadline_ms : 0;
	e->deadline = e->deadline_ms ? rn_now_ms() + e->deadline_ms : 0;
	r = rn_http_open(&tls, e->timeout_ms, &e->http, err);
	if (r < 0) {
		etcd_close(&e->base);
		return r;
	}
	*ret = &e->base;
	return 0;
}
