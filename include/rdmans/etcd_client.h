/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An etcd v3 client over its JSON gateway (etcd >= 3.4: /v3/...), through
 * the HTTP transport (src/lib/ipam/ipam_http.c, the one user of libcurl): ranges,
 * transactions of compares and ops, and username/password auth. It knows
 * keys and values as bytes, nothing of what they mean.
 *
 * Endpoints are tried in turn from one picked by PID; a member that does not
 * answer, or answers "no leader"/"leader changed", sends the request to the
 * next, within each request's timeout and one deadline for all of them.
 * Credentials: a token from /v3/auth/authenticate, renewed once when etcd
 * says it expired. Neither the password nor the token reaches an error.
 * Nothing here logs.
 */
#ifndef RDMANS_ETCD_CLIENT_H
#define RDMANS_ETCD_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdmans/cleanup.h"
#include "rdmans/error.h"

struct rn_etcd;

struct rn_etcd_options {
	char *const *endpoints; /* "https://10.0.0.1:2379"; a trailing '/' is dropped */
	size_t n_endpoints;
	const char *ca_file, *cert_file, *key_file; /* TLS, each optional */
	const char *username; /* NULL: no auth */
	const char *password; /* a secret: never in messages */
	long timeout_ms; /* each request, at most; 0: 5000 */
	long deadline_ms; /* all requests from rn_etcd_open() on, at most; 0: no bound */
	/*
	 * for messages, where a user sets these (static text, kept by reference):
	 * the user name and password, timeout_ms and deadline_ms
	 */
	const char *user_settings;
	const char *timeout_setting;
	const char *deadline_setting;
};

int rn_etcd_open(const struct rn_etcd_options *o, struct rn_etcd **ret, struct rn_error *err);
void rn_etcd_close(struct rn_etcd *e);
RN_DEFINE_TRIVIAL_CLEANUP_FUNC(struct rn_etcd *, rn_etcd_close)

/* What a range reads: [key, end), one key, or every key that starts with key. */
struct rn_etcd_range {
	const char *key;
	size_t key_len; /* 0: strlen(key) */
	const char *end; /* exclusive; NULL: key alone (or the prefix's end) */
	size_t end_len; /* 0: strlen(end) */
	bool prefix; /* every key that starts with key (end unused) */
	bool keys_only;
	bool serializable; /* any member answers from its own copy */
	long limit; /* at most this many keys (a page); 0: all */
};

struct rn_etcd_kv {
	char *key; /* NUL-terminated; NULL when etcd's was not base64 */
	size_t key_len;
	char *value; /* NUL-terminated; "" with keys_only; NULL when etcd's was not base64 */
	size_t value_len;
	uint64_t mod_revision;
};

struct rn_etcd_kvs {
	struct rn_etcd_kv *kv;
	size_t n;
	bool more; /* the limit cut the answer short */
};

void rn_etcd_kvs_clear(struct rn_etcd_kvs *kvs);
#define _cleanup_etcd_kvs_ _cleanup_(rn_etcd_kvs_clear)

/*
 * One range request. Etcd's own errors come back as -EACCES (auth,
 * permission), -ENOSPC (its quota) or -EIO with etcd's message; a cluster
 * that does not answer as -EHOSTUNREACH, -ETIMEDOUT or -EPROTO (TLS).
 */
int rn_etcd_range(struct rn_etcd *e, const struct rn_etcd_range *q, struct rn_etcd_kvs *ret,
		  struct rn_error *err);

/*
 * Every key of q, page by page (q->limit keys a request): fn sees each key
 * that is base64 (the rest are passed over) and stops the walk with a
 * negative return, which is returned.
 */
typedef int (*rn_etcd_kv_fn)(void *ctx, const struct rn_etcd_kv *kv);
int rn_etcd_range_each(struct rn_etcd *e, const struct rn_etcd_range *q, rn_etcd_kv_fn fn,
		       void *ctx, struct rn_error *err);

/*
 * A transaction, built then run: if every compare holds, the success ops
 * run, else the failure ops. A step that runs out of memory (or a NULL txn
 * from rn_etcd_txn_new()) marks it, and rn_etcd_txn_run() says so.
 */
struct rn_etcd_txn;

enum rn_etcd_branch {
	RN_ETCD_SUCCESS,
	RN_ETCD_FAILURE,
};

struct rn_etcd_txn *rn_etcd_txn_new(void);
void rn_etcd_txn_free(struct rn_etcd_txn *t);
RN_DEFINE_TRIVIAL_CLEANUP_FUNC(struct rn_etcd_txn *, rn_etcd_txn_free)

/* key's mod_revision is mod_revision; 0: key is absent (its create_revision is 0) */
void rn_etcd_txn_compare(struct rn_etcd_txn *t, const char *key, uint64_t mod_revision);
void rn_etcd_txn_put(struct rn_etcd_txn *t, enum rn_etcd_branch b, const char *key,
		     const char *value);
void rn_etcd_txn_delete(struct rn_etcd_txn *t, enum rn_etcd_branch b, const char *key);
void rn_etcd_txn_range(struct rn_etcd_txn *t, enum rn_etcd_branch b, const struct rn_etcd_range *q);

struct rn_etcd_txn_result {
	bool succeeded; /* the compares held */
	uint64_t revision; /* the store's revision after it */
	struct rn_etcd_kvs
		*ranges; /* a response per op of the branch run; a put's or delete's is empty */
	size_t n;
};

void rn_etcd_txn_result_clear(struct rn_etcd_txn_result *res);
#define _cleanup_etcd_txn_result_ _cleanup_(rn_etcd_txn_result_clear)

/* Runs t (errors as rn_etcd_range()'s). */
int rn_etcd_txn_run(struct rn_etcd *e, const struct rn_etcd_txn *t, struct rn_etcd_txn_result *ret,
		    struct rn_error *err);

#endif
