// SPDX-License-Identifier: Apache-2.0
/*
 * An etcd v3 client over its JSON gateway: keys and values travel
 * base64-encoded, int64 fields come back as strings, and every request is
 * a POST of a JSON body (include/rdmans/etcd_client.h says what it does).
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rdmans/cleanup.h"
#include "rdmans/etcd_client.h"
#include "rdmans/json_cleanup.h"
#include "rdmans/util.h"
#include "ipam_http.h"

struct rn_etcd {
	struct rn_http *http;
	char **endpoints;
	size_t n_endpoints;
	size_t current;
	char *username;
	char *password;
	char *token;
	bool authed;
	long timeout_ms; /* each request */
	long deadline_ms; /* all of them; 0: none */
	long deadline; /* rn_now_ms() when they must have ended; 0: none */
	/* static text: where users set them */
	const char *user_settings;
	const char *timeout_setting;
	const char *deadline_setting;
};

struct rn_etcd_txn {
	json_t *body;
	bool broken; /* a step ran out of memory */
};

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

void rn_etcd_close(struct rn_etcd *e)
{
	if (!e)
		return;
	rn_http_close(e->http);
	for (size_t i = 0; i < e->n_endpoints; i++)
		free(e->endpoints[i]);
	free(e->endpoints);
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

/* ---- requests ------------------------------------------------------------ */

static bool retry_elsewhere(const char *msg, long code)
{
	/* gRPC Unavailable, or a member between leaders */
	return code == 14 || (msg && (strstr(msg, "leader changed") || strstr(msg, "no leader") ||
				      strstr(msg, "timed out") || strstr(msg, "not capable") ||
				      strstr(msg, "too many requests")));
}

static int authenticate(struct rn_etcd *e, struct rn_error *err);

static int deadline_error(const struct rn_etcd *e, const struct rn_error *last,
			  struct rn_error *err)
{
	return rn_error_set(err, ETIMEDOUT,
			    "etcd did not answer within this call's deadline of %ld ms "
			    "(%s; each request at most %ld ms, %s)%s%s",
			    e->deadline_ms, e->deadline_setting, e->timeout_ms, e->timeout_setting,
			    last->msg[0] ? ": last: " : "", last->msg);
}

/*
 * POSTs body to path on the first endpoint that answers; *ret is the
 * parsed answer. Etcd's own errors come back as -EACCES (auth, permission)
 * or -EIO with etcd's message.
 */
static int request(struct rn_etcd *e, const char *path, json_t *body, bool with_token, json_t **ret,
		   struct rn_error *err)
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
			    "each, %s): %s",
			    e->n_endpoints, tries, e->timeout_ms, e->timeout_setting,
			    last.msg[0] ? last.msg : "no answer");
}

static int authenticate(struct rn_etcd *e, struct rn_error *err)
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

/* ---- ranges -------------------------------------------------------------- */

/*
 * The end of the range of keys that start with key (etcd's prefix end): its
 * last byte below 0xff plus one, cut there; "\0" (every key) when none is.
 */
static char *prefix_end(const char *key, size_t key_len, size_t *ret_len)
{
	char *end = malloc(key_len + 1);

	if (!end)
		return NULL;
	memcpy(end, key, key_len);
	for (size_t i = key_len; i > 0; i--) {
		if ((unsigned char)end[i - 1] < 0xff) {
			end[i - 1]++;
			end[i] = '\0';
			*ret_len = i;
			return end;
		}
	}
	end[0] = '\0';
	*ret_len = 1;
	return end;
}

static int json_set(json_t *o, const char *field, json_t *v)
{
	return v ? json_object_set_new(o, field, v) : -1;
}

/* A RangeRequest; NULL when out of memory. */
static json_t *range_json(const struct rn_etcd_range *q)
{
	size_t key_len = q->key_len ? q->key_len : strlen(q->key), end_len = 0;
	_cleanup_json_ json_t *b = json_object();
	_cleanup_free_ char *end = NULL;

	if (!b || json_set(b, "key", b64_json(q->key, key_len)) < 0)
		return NULL;
	if (q->prefix) {
		end = prefix_end(q->key, key_len, &end_len);
		if (!end || json_set(b, "range_end", b64_json(end, end_len)) < 0)
			return NULL;
	} else if (q->end) {
		end_len = q->end_len ? q->end_len : strlen(q->end);
		if (json_set(b, "range_end", b64_json(q->end, end_len)) < 0)
			return NULL;
	}
	if (q->keys_only && json_set(b, "keys_only", json_true()) < 0)
		return NULL;
	if (q->limit && json_set(b, "limit", json_integer(q->limit)) < 0)
		return NULL;
	if (q->serializable && json_set(b, "serializable", json_true()) < 0)
		return NULL;
	return TAKE_PTR(b);
}

void rn_etcd_kvs_clear(struct rn_etcd_kvs *kvs)
{
	for (size_t i = 0; i < kvs->n; i++) {
		free(kvs->kv[i].key);
		free(kvs->kv[i].value);
	}
	free(kvs->kv);
	*kvs = (struct rn_etcd_kvs){ 0 };
}

/* A key or value: NULL when etcd's is not base64. */
static int decode(const char *in, char **ret, size_t *ret_len, struct rn_error *err)
{
	int r = rn_base64_decode(in, ret, ret_len);

	if (r == -ENOMEM)
		return rn_error_set(err, ENOMEM, "out of memory");
	if (r < 0) {
		*ret = NULL;
		*ret_len = 0;
	}
	return 0;
}

/* A RangeResponse's kvs, decoded. */
static int parse_kvs(const json_t *range_ans, struct rn_etcd_kvs *ret, struct rn_error *err)
{
	_cleanup_etcd_kvs_ struct rn_etcd_kvs kvs = { 0 };
	json_t *list = json_object_get(range_ans, "kvs"), *kv;
	size_t i;

	kvs.more = json_is_true(json_object_get(range_ans, "more"));
	if (json_array_size(list) > 0) {
		kvs.kv = calloc(json_array_size(list), sizeof(*kvs.kv));
		if (!kvs.kv)
			return rn_error_set(err, ENOMEM, "out of memory");
	}
	json_array_foreach (list, i, kv) {
		struct rn_etcd_kv *out = &kvs.kv[kvs.n++];
		const char *k = json_string_value(json_object_get(kv, "key"));
		const char *v = json_string_value(json_object_get(kv, "value"));
		int r;

		out->mod_revision = json_u64(json_object_get(kv, "mod_revision"));
		r = k ? decode(k, &out->key, &out->key_len, err) : 0;
		if (r >= 0)
			r = decode(v ? v : "", &out->value, &out->value_len, err);
		if (r < 0)
			return r;
	}
	*ret = kvs;
	kvs = (struct rn_etcd_kvs){ 0 };
	return 0;
}

int rn_etcd_range(struct rn_etcd *e, const struct rn_etcd_range *q, struct rn_etcd_kvs *ret,
		  struct rn_error *err)
{
	_cleanup_json_ json_t *body = range_json(q), *ans = NULL;
	int r;

	*ret = (struct rn_etcd_kvs){ 0 };
	if (!body)
		return rn_error_set(err, ENOMEM, "out of memory");
	r = request(e, "/v3/kv/range", body, true, &ans, err);
	if (r < 0)
		return r;
	return parse_kvs(ans, ret, err);
}

int rn_etcd_range_each(struct rn_etcd *e, const struct rn_etcd_range *q, rn_etcd_kv_fn fn,
		       void *ctx, struct rn_error *err)
{
	struct rn_etcd_range page = *q;
	_cleanup_free_ char *end = NULL, *from = NULL;

	if (q->prefix) {
		end = prefix_end(q->key, q->key_len ? q->key_len : strlen(q->key), &page.end_len);
		if (!end)
			return rn_error_set(err, ENOMEM, "out of memory");
		page.end = end;
		page.prefix = false;
	}
	for (;;) {
		_cleanup_etcd_kvs_ struct rn_etcd_kvs kvs = { 0 };
		const struct rn_etcd_kv *last = NULL;
		int r;

		r = rn_etcd_range(e, &page, &kvs, err);
		if (r < 0)
			return r;
		for (size_t i = 0; i < kvs.n; i++) {
			if (!kvs.kv[i].key)
				continue;
			last = &kvs.kv[i];
			r = fn(ctx, last);
			if (r < 0)
				return r;
		}
		if (!kvs.more || !last)
			return 0;
		/* the next page starts at the smallest key after the last one: key + NUL */
		free(from);
		from = malloc(last->key_len + 1);
		if (!from)
			return rn_error_set(err, ENOMEM, "out of memory");
		memcpy(from, last->key, last->key_len + 1);
		page.key = from;
		page.key_len = last->key_len + 1;
	}
}

/* ---- transactions -------------------------------------------------------- */

struct rn_etcd_txn *rn_etcd_txn_new(void)
{
	struct rn_etcd_txn *t = calloc(1, sizeof(*t));

	if (t && !(t->body = json_object())) {
		free(t);
		return NULL;
	}
	return t;
}

void rn_etcd_txn_free(struct rn_etcd_txn *t)
{
	if (t) {
		json_decref(t->body);
		free(t);
	}
}

/* Appends item (taken; NULL: out of memory) to the body's list field. */
static void txn_add(struct rn_etcd_txn *t, const char *field, json_t *item)
{
	json_t *list;

	if (!t) {
		json_decref(item);
		return;
	}
	list = json_object_get(t->body, field);
	if (!list && json_set(t->body, field, list = json_array()) < 0)
		list = NULL;
	if (!item || !list || json_array_append_new(list, item) < 0) {
		if (!list)
			json_decref(item);
		t->broken = true;
	}
}

static const char *branch(enum rn_etcd_branch b)
{
	return b == RN_ETCD_FAILURE ? "failure" : "success";
}

void rn_etcd_txn_compare(struct rn_etcd_txn *t, const char *key, uint64_t mod_revision)
{
	char rev[24];

	snprintf(rev, sizeof(rev), "%llu", (unsigned long long)mod_revision);
	if (mod_revision == 0)
		txn_add(t, "compare",
			json_pack("{s:s,s:o,s:s,s:s}", "target", "CREATE", "key",
				  b64_json(key, strlen(key)), "result", "EQUAL", "create_revision",
				  "0"));
	else
		txn_add(t, "compare",
			json_pack("{s:s,s:o,s:s,s:s}", "target", "MOD", "key",
				  b64_json(key, strlen(key)), "result", "EQUAL", "mod_revision",
				  rev));
}

void rn_etcd_txn_put(struct rn_etcd_txn *t, enum rn_etcd_branch b, const char *key,
		     const char *value)
{
	txn_add(t, branch(b),
		json_pack("{s:{s:o,s:o}}", "request_put", "key", b64_json(key, strlen(key)),
			  "value", b64_json(value, strlen(value))));
}

void rn_etcd_txn_delete(struct rn_etcd_txn *t, enum rn_etcd_branch b, const char *key)
{
	txn_add(t, branch(b),
		json_pack("{s:{s:o}}", "request_delete_range", "key", b64_json(key, strlen(key))));
}

void rn_etcd_txn_range(struct rn_etcd_txn *t, enum rn_etcd_branch b, const struct rn_etcd_range *q)
{
	txn_add(t, branch(b), json_pack("{s:o}", "request_range", range_json(q)));
}

void rn_etcd_txn_result_clear(struct rn_etcd_txn_result *res)
{
	for (size_t i = 0; i < res->n; i++)
		rn_etcd_kvs_clear(&res->ranges[i]);
	free(res->ranges);
	*res = (struct rn_etcd_txn_result){ 0 };
}

int rn_etcd_txn_run(struct rn_etcd *e, const struct rn_etcd_txn *t, struct rn_etcd_txn_result *ret,
		    struct rn_error *err)
{
	_cleanup_etcd_txn_result_ struct rn_etcd_txn_result res = { 0 };
	_cleanup_json_ json_t *ans = NULL;
	json_t *responses, *resp;
	size_t i;
	int r;

	*ret = (struct rn_etcd_txn_result){ 0 };
	if (!t || t->broken)
		return rn_error_set(err, ENOMEM, "out of memory");
	r = request(e, "/v3/kv/txn", t->body, true, &ans, err);
	if (r < 0)
		return r;
	res.succeeded = json_is_true(json_object_get(ans, "succeeded"));
	res.revision = json_u64(json_object_get(json_object_get(ans, "header"), "revision"));
	responses = json_object_get(ans, "responses");
	if (json_array_size(responses) > 0) {
		res.ranges = calloc(json_array_size(responses), sizeof(*res.ranges));
		if (!res.ranges)
			return rn_error_set(err, ENOMEM, "out of memory");
	}
	json_array_foreach (responses, i, resp) {
		r = parse_kvs(json_object_get(resp, "response_range"), &res.ranges[i], err);
		if (r < 0)
			return r;
		res.n++;
	}
	*ret = res;
	res = (struct rn_etcd_txn_result){ 0 };
	return 0;
}

/* ---- the client ---------------------------------------------------------- */

int rn_etcd_open(const struct rn_etcd_options *o, struct rn_etcd **ret, struct rn_error *err)
{
	struct rn_http_tls tls = { .ca_file = o->ca_file,
				   .cert_file = o->cert_file,
				   .key_file = o->key_file };
	_cleanup_(rn_etcd_closep) struct rn_etcd *e = NULL;
	int r;

	if (o->n_endpoints == 0)
		return rn_error_set(err, EINVAL, "etcd needs at least one endpoint");
	e = calloc(1, sizeof(*e));
	if (!e)
		return rn_error_set(err, ENOMEM, "out of memory");
	e->endpoints = calloc(o->n_endpoints, sizeof(*e->endpoints));
	if (!e->endpoints)
		return rn_error_set(err, ENOMEM, "out of memory");
	e->n_endpoints = o->n_endpoints;
	e->user_settings = o->user_settings ? o->user_settings : "the etcd user name and password";
	e->timeout_setting = o->timeout_setting ? o->timeout_setting : "timeout_ms";
	e->deadline_setting = o->deadline_setting ? o->deadline_setting : "deadline_ms";
	if (o->username) {
		e->username = strdup(o->username);
		e->password = strdup(o->password ? o->password : "");
		if (!e->username || !e->password)
			return rn_error_set(err, ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < o->n_endpoints; i++) {
		size_t len;

		e->endpoints[i] = strdup(o->endpoints[i]);
		if (!e->endpoints[i])
			return rn_error_set(err, ENOMEM, "out of memory");
		len = strlen(e->endpoints[i]);
		while (len > 0 && e->endpoints[i][len - 1] == '/')
			e->endpoints[i][--len] = '\0';
	}
	/* spread the clients of a cluster over its members */
	e->current = (size_t)getpid() % e->n_endpoints;
	e->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 5000;
	e->deadline_ms = o->deadline_ms > 0 ? o->deadline_ms : 0;
	e->deadline = e->deadline_ms ? rn_now_ms() + e->deadline_ms : 0;
	r = rn_http_open(&tls, e->timeout_ms, &e->http, err);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(e);
	return 0;
}
