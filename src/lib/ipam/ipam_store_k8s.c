// SPDX-License-Identifier: Apache-2.0
/*
 * The kubernetes IPAM store: one custom resource per address, through the
 * cluster's own API server (ipam_store.h). Nothing to deploy beyond the CRD
 * (deploy/rdmaaddress-crd.yaml) and a ClusterRole limited to it.
 *
 *   /apis/rdmans.io/v1alpha1/rdmaaddresses/NAME     an address record
 *
 * NAME is the address ("10.56.0.7", IPv6 as 32 hex digits) and a hash of
 * its scope and pool: taking an address is a create, and 409 AlreadyExists
 * means another holder has it, so the search moves on. There is no
 * pool-wide object or lock: two ADDs collide only on the same address.
 * spec.record holds the record text every store keeps (the truth); spec's
 * other fields and the attachment label are copies for kubectl and for the
 * one lookup below.
 *
 * There are no attachment objects: the API server has no transaction over
 * two objects, and the address records already say who holds them. An
 * attachment is what one list by its label (a hash of scope and id) finds,
 * of the container that wrote last; that list also answers the checks of
 * what it holds. So an ADD is 2 requests (the list, the create), a
 * repeated ADD or a CHECK 1, a DEL 1 + one delete per address. Every write
 * of a record carries its resourceVersion (replace, delete preconditions):
 * a DEL removes a record only while it is the one it read, so a DEL racing
 * a new ADD of the same pod never takes the new sandbox's address.
 *
 * The search has no probe: object names cannot be read by range, so each
 * candidate costs one create. Versions are resourceVersions; an attachment
 * reads as version 1 and its own writes are the records'.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rdmans/cleanup.h"
#include "rdmans/ipam_kubeconfig.h"
#include "rdmans/ipam_record.h"
#include "rdmans/json_cleanup.h"
#include "rdmans/util.h"
#include "ipam_http.h"
#include "ipam_store.h"

#define GROUP "rdmans.io"
#define VERSION "v1alpha1"
#define PLURAL "rdmaaddresses"
#define RESOURCE PLURAL "." GROUP
#define ATT_LABEL GROUP "/attachment"
#define LIST_PAGE 500
#define WINDOW 32
#define CRD_HINT "kubectl apply -f deploy/rdmaaddress-crd.yaml"
#define RBAC_HINT "deploy/rbac.yaml's ClusterRole rdmans-ipam"

/* an object a list found, kept to answer addr_get without a request */
struct seen {
	char *name, *text;
	uint64_t version;
};

struct k8s_store {
	struct rn_ipam_store base;
	struct rn_http *http;
	struct rn_kubeconfig kc;
	char *kubeconfig; /* its path, for messages */
	char *url; /* SERVER/apis/GROUP/VERSION/PLURAL */
	long timeout_ms, deadline_ms, deadline;
	struct seen *seen;
	size_t n_seen, cap_seen;
};

static struct k8s_store *to_k8s(struct rn_ipam_store *s)
{
	return (struct k8s_store *)s;
}

static void seen_clear(struct k8s_store *k)
{
	for (size_t i = 0; i < k->n_seen; i++) {
		free(k->seen[i].name);
		free(k->seen[i].text);
	}
	k->n_seen = 0;
}

static void k8s_close(struct rn_ipam_store *s)
{
	struct k8s_store *k = to_k8s(s);

	seen_clear(k);
	free(k->seen);
	rn_http_close(k->http);
	rn_kubeconfig_free(&k->kc);
	free(k->kubeconfig);
	free(k->url);
	free(k);
}

/* ---- names ----------------------------------------------------------------- */

/* FNV-1a, 64 bits: a name's and a label's hash of strings (a collision only costs an address) */
static uint64_t hash2(const char *a, const char *b)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (const char *s = a;; s++) {
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
		if (!*s)
			break;
	}
	for (const char *s = b; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h;
}

static void obj_name(const char *scope, const char *pool, const struct rn_ip *ip, char *buf,
		     size_t len)
{
	unsigned long long h = (unsigned long long)hash2(scope, pool);

	if (ip->family == AF_INET)
		snprintf(buf, len, "%u.%u.%u.%u-%016llx", (unsigned)(ip->v >> 24) & 255,
			 (unsigned)(ip->v >> 16) & 255, (unsigned)(ip->v >> 8) & 255,
			 (unsigned)ip->v & 255, h);
	else
		snprintf(buf, len, "%016llx%016llx-%016llx", (unsigned long long)(ip->v >> 64),
			 (unsigned long long)ip->v, h);
}

static void att_label(const char *scope, const char *id, char *buf, size_t len)
{
	snprintf(buf, len, "%016llx", (unsigned long long)hash2(scope, id));
}

/* ---- requests ---------------------------------------------------------------- */

static void wipe_freep(char **s)
{
	if (*s) {
		explicit_bzero(*s, strlen(*s));
		free(*s);
	}
}

/* "Bearer TOKEN": the kubeconfig's token, or its tokenFile read now (it rotates). */
static int authorization(struct k8s_store *k, char **ret, struct rn_error *err)
{
	__attribute__((cleanup(wipe_freep))) char *text = NULL;
	const char *token = k->kc.token;
	size_t n;
	int r;

	*ret = NULL;
	if (!token && k->kc.token_file) {
		r = rn_read_regular(k->kc.token_file, RN_KUBECONFIG_MAX, "token file", &text, NULL,
				    err);
		if (r < 0)
			return rn_error_wrap(err, "kubeconfig %s", k->kubeconfig);
		for (n = strlen(text); n > 0 && strchr(" \t\r\n", text[n - 1]); n--)
			text[n - 1] = '\0';
		token = text;
	}
	if (!token)
		return 0;
	if (asprintf(ret, "Bearer %s", token) < 0) {
		*ret = NULL;
		return rn_error_set(err, ENOMEM, "out of memory");
	}
	return 0;
}

/* A 404 for an object: its Status names it (a resource type not served does not). */
static bool missing_object(json_t *doc)
{
	return json_string_value(json_object_get(json_object_get(doc, "details"), "name")) != NULL;
}

static const char *verb_of(const char *method, bool collection)
{
	if (strcmp(method, "GET") == 0)
		return collection ? "list" : "get";
	if (strcmp(method, "POST") == 0)
		return "create";
	if (strcmp(method, "PUT") == 0)
		return "update";
	return "delete";
}

/*
 * One request to path under the resource's URL ("" the collection, "/NAME"
 * an object, "?..." a list). 2xx: 0 and the answer. The API's own refusals:
 * -ENOENT (no such object), -EEXIST (AlreadyExists), -ESTALE (Conflict: a
 * precondition failed), -EACCES (401, 403, naming verb and resource),
 * -ENOTSUP (the CRD is not there), -EIO with the server's message.
 */
static int request(struct k8s_store *k, const char *method, const char *path, json_t *body,
		   json_t **ret, struct rn_error *err)
{
	__attribute__((cleanup(wipe_freep))) char *auth = NULL;
	_cleanup_free_ char *url = NULL, *text = NULL, *answer = NULL;
	_cleanup_json_ json_t *doc = NULL;
	bool collection = path[0] != '/';
	const char *msg, *reason;
	char last_msg[RN_ERROR_MSG_MAX / 2] = "";
	bool last_transport = false;
	long status = 0;
	int r;

	if (ret)
		*ret = NULL;
	if (body) {
		text = json_dumps(body, JSON_COMPACT);
		if (!text)
			return rn_error_set(err, ENOMEM, "out of memory");
	}
	if (asprintf(&url, "%s%s", k->url, path) < 0) {
		url = NULL;
		return rn_error_set(err, ENOMEM, "out of memory");
	}
	for (int attempt = 1;; attempt++) {
		long left = k->deadline ? k->deadline - rn_now_ms() : 0;
		struct rn_error last = { 0 };
		bool again;

		if (k->deadline && left <= 0 && last_transport)
			return rn_error_set(
				err, EHOSTUNREACH,
				"the Kubernetes API server at %s is unreachable (kubeconfig "
				"%s), tried for this call's deadline of %ld ms "
				"(ipam.kubernetes.deadline_ms): last: %s",
				k->kc.server, k->kubeconfig, k->deadline_ms, last_msg);
		if (k->deadline && left <= 0)
			return rn_error_set(
				err, ETIMEDOUT,
				"the Kubernetes API server at %s did not answer within "
				"this call's deadline of %ld ms (ipam.kubernetes.deadline_ms)"
				"%s%s",
				k->kc.server, k->deadline_ms, last_msg[0] ? ": last: " : "",
				last_msg);
		r = authorization(k, &auth, err);
		if (r < 0)
			return r;
		free(answer);
		answer = NULL;
		json_decref(doc);
		doc = NULL;
		r = rn_http_request(k->http, method, url, text, auth, left, &status, &answer,
				    &last);
		wipe_freep(&auth);
		auth = NULL;
		if (r == 0)
			doc = json_loads(answer, 0, NULL);
		/*
		 * Within a CNI call's deadline, what a restarting or overloaded server
		 * says is tried again: a refused connection (the request never went),
		 * any failure of a read (a stream cut under load among them), and the
		 * answers of a server not ready yet (503, 429, and 404 for the resource
		 * itself before its CRD is served).
		 */
		again = r == -ECONNREFUSED || (r < 0 && strcmp(method, "GET") == 0) ||
			(r == 0 && (status == 503 || status == 429 ||
				    (status == 404 && !missing_object(doc))));
		/* without a deadline (rdmans), a few tries: each one is bounded */
		if (again && (k->deadline || attempt < 3)) {
			struct timespec ts = { 0, 200 * 1000 * 1000 };

			last_transport = r < 0;
			snprintf(last_msg, sizeof(last_msg), "%.300s",
				 r < 0 ? last.msg
				       : (status == 404 ? "HTTP 404" : "HTTP 503 or 429"));
			nanosleep(&ts, NULL);
			continue;
		}
		if (r < 0)
			/* whatever the transport said, the cure is the server coming back */
			return rn_error_set(
				err, r == -ETIMEDOUT ? ETIMEDOUT : EHOSTUNREACH,
				"the Kubernetes API server at %s is unreachable (kubeconfig "
				"%s): %s",
				k->kc.server, k->kubeconfig, last.msg);
		break;
	}
	if (status >= 200 && status < 300) {
		if (!json_is_object(doc))
			return rn_error_set(err, EBADMSG,
					    "the Kubernetes API server at %s answered %s %s with "
					    "something that is not a JSON object",
					    k->kc.server, method, path);
		if (ret)
			*ret = TAKE_PTR(doc);
		return 0;
	}
	msg = json_string_value(json_object_get(doc, "message"));
	reason = json_string_value(json_object_get(doc, "reason"));
	if (!msg) {
		size_t n = strcspn(answer, "\r\n");

		msg = n ? answer : "no message";
		answer[n > 200 ? 200 : n] = '\0';
	}
	switch (status) {
	case 401:
		return rn_error_set(
			err, EACCES,
			"the Kubernetes API server at %s does not accept our "
			"credentials (401 Unauthorized): check the token, token file or "
			"client certificate of kubeconfig %s",
			k->kc.server, k->kubeconfig);
	case 403:
		return rn_error_set(err, EACCES,
				    "the Kubernetes API server at %s denies %s on %s (403 "
				    "Forbidden: %s): grant it to the kubeconfig's user (%s)",
				    k->kc.server, verb_of(method, collection), RESOURCE, msg,
				    RBAC_HINT);
	case 404:
		/* a missing object's Status names it; a missing resource type does not */
		if (json_string_value(json_object_get(json_object_get(doc, "details"), "name")))
			return -ENOENT;
		return rn_error_set(err, ENOTSUP,
				    "the Kubernetes API server at %s does not serve %s/%s: install "
				    "the CRD (%s)",
				    k->kc.server, RESOURCE, VERSION, CRD_HINT);
	case 409:
		if (reason && strcmp(reason, "AlreadyExists") == 0)
			return -EEXIST;
		return -ESTALE;
	default:
		return rn_error_set(err, status == 422 ? EINVAL : EIO,
				    "the Kubernetes API server at %s: %s %s: HTTP %ld %s: %s",
				    k->kc.server, method, path, status, reason ? reason : "", msg);
	}
}

/* ---- objects ------------------------------------------------------------------- */

static uint64_t rv_of(json_t *obj)
{
	const char *rv = json_string_value(
		json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));

	return rv ? strtoull(rv, NULL, 10) : 0;
}

static const char *spec_str(json_t *obj, const char *key)
{
	return json_string_value(json_object_get(json_object_get(obj, "spec"), key));
}

/* The object for a record's text, at version (0: a new one). */
static json_t *record_object(const char *scope, const char *pool, const struct rn_ip *ip,
			     const char *text, uint64_t version, struct rn_error *err)
{
	struct rn_ipam_record rec;
	char name[96], label[24], ipbuf[RN_IP_STRLEN], rv[24];
	json_t *meta, *o;

	if (rn_ipam_record_parse(text, &rec, err) < 0)
		return NULL;
	obj_name(scope, pool, ip, name, sizeof(name));
	att_label(scope, rec.attachment, label, sizeof(label));
	meta = json_pack("{s:s,s:{s:s}}", "name", name, "labels", ATT_LABEL, label);
	if (meta && version) {
		snprintf(rv, sizeof(rv), "%llu", (unsigned long long)version);
		json_object_set_new(meta, "resourceVersion", json_string(rv));
	}
	o = json_pack("{s:s,s:s,s:o,s:{s:s,s:s,s:s,s:s,s:s,s:s,s:s}}", "apiVersion",
		      GROUP "/" VERSION, "kind", "RdmaAddress", "metadata", meta, "spec", "address",
		      rn_ip_format(ip->family, ip->v, ipbuf, sizeof(ipbuf)), "scope", scope, "pool",
		      pool, "attachment", rec.attachment, "pod", rec.pod, "node", rec.node,
		      "record", text);
	if (!o)
		rn_error_set(err, ENOMEM, "a record of %s cannot be made an object", rec.ip);
	return o;
}

static json_t *delete_options(uint64_t version)
{
	char rv[24];

	snprintf(rv, sizeof(rv), "%llu", (unsigned long long)version);
	return json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "v1", "kind", "DeleteOptions",
			 "preconditions", "resourceVersion", rv);
}

/* Deletes an object while it is at version: 0, -ENOENT (gone), -ESTALE (changed). */
static int delete_at(struct k8s_store *k, const char *name, uint64_t version, struct rn_error *err)
{
	_cleanup_json_ json_t *body = delete_options(version);
	_cleanup_free_ char *path = NULL;

	if (!body || asprintf(&path, "/%s", name) < 0)
		return rn_error_set(err, ENOMEM, "out of memory");
	return request(k, "DELETE", path, body, NULL, err);
}

/* ---- the store ------------------------------------------------------------------ */

static int k8s_ping(struct rn_ipam_store *s, struct rn_error *err)
{
	_cleanup_json_ json_t *ans = NULL;

	/* a list proves the server, the credentials, the role and the CRD */
	return request(to_k8s(s), "GET", "?limit=1", NULL, &ans, err);
}

struct owned {
	struct rn_ipam_record rec;
	uint64_t version;
};

/*
 * The attachment `id` as its records say: those of the container that
 * wrote last (the highest resourceVersion). -ENOENT when none.
 */
static int attachment_of(const struct owned *o, size_t n, const char *scope, const char *id,
			 char **ret_text)
{
	struct rn_ipam_attachment att;
	const struct owned *last = NULL;

	for (size_t i = 0; i < n; i++)
		if (strcmp(o[i].rec.attachment, id) == 0 && strcmp(o[i].rec.scope, scope) == 0 &&
		    (!last || o[i].version > last->version))
			last = &o[i];
	if (!last)
		return -ENOENT;
	memset(&att, 0, sizeof(att));
	rn_strscpy(att.id, sizeof(att.id), id);
	rn_strscpy(att.scope, sizeof(att.scope), scope);
	rn_strscpy(att.network, sizeof(att.network), last->rec.network);
	rn_strscpy(att.container_id, sizeof(att.container_id), last->rec.container_id);
	rn_strscpy(att.ifname, sizeof(att.ifname), last->rec.ifname);
	rn_strscpy(att.pod, sizeof(att.pod), last->rec.pod);
	rn_strscpy(att.node, sizeof(att.node), last->rec.node);
	rn_strscpy(att.time, sizeof(att.time), last->rec.time);
	rn_strscpy(att.netns, sizeof(att.netns), last->rec.netns);
	rn_strscpy(att.netns_ino, sizeof(att.netns_ino), last->rec.netns_ino);
	for (size_t i = 0; i < n && att.n < RN_IPAM_MAX_RANGES; i++) {
		const struct rn_ipam_record *r = &o[i].rec;
		struct rn_ipam_held *h = &att.held[att.n];

		if (strcmp(r->attachment, id) || strcmp(r->scope, scope) ||
		    strcmp(r->container_id, last->rec.container_id))
			continue;
		rn_strscpy(h->pool, sizeof(h->pool), r->pool);
		rn_strscpy(h->ip, sizeof(h->ip), r->ip);
		rn_strscpy(h->range, sizeof(h->range), r->range);
		att.n++;
	}
	return rn_ipam_attachment_format(&att, ret_text) < 0 ? -EINVAL : 0;
}

static int k8s_att_get(struct rn_ipam_store *s, const char *scope, const char *id, char **ret_text,
		       uint64_t *ret_version, struct rn_error *err)
{
	struct k8s_store *k = to_k8s(s);
	_cleanup_json_ json_t *ans = NULL;
	_cleanup_free_ struct owned *o = NULL;
	_cleanup_free_ char *path = NULL;
	char label[24];
	json_t *items, *it;
	size_t i, n = 0;
	int r;

	seen_clear(k); /* what an earlier try read is old now */
	att_label(scope, id, label, sizeof(label));
	if (asprintf(&path, "?labelSelector=%s%%3D%s", ATT_LABEL, label) < 0) {
		path = NULL;
		return rn_error_set(err, ENOMEM, "out of memory");
	}
	r = request(k, "GET", path, NULL, &ans, err);
	if (r < 0)
		return r;
	items = json_object_get(ans, "items");
	o = calloc(json_array_size(items) + 1, sizeof(*o));
	if (!o)
		return rn_error_set(err, ENOMEM, "out of memory");
	json_array_foreach (items, i, it) {
		const char *text = spec_str(it, "record");
		const char *name =
			json_string_value(json_object_get(json_object_get(it, "metadata"), "name"));
		struct seen *sn;

		if (!text || !name || rn_ipam_record_parse(text, &o[n].rec, NULL) < 0)
			continue; /* damaged: what it holds cannot be told; ls shows it */
		o[n].version = rv_of(it);
		if (RN_GROW(k->seen, &k->cap_seen, k->n_seen + 1) < 0)
			return rn_error_set(err, ENOMEM, "out of memory");
		sn = &k->seen[k->n_seen];
		sn->name = strdup(name);
		sn->text = strdup(text);
		sn->version = o[n].version;
		if (!sn->name || !sn->text) {
			free(sn->name);
			free(sn->text);
			return rn_error_set(err, ENOMEM, "out of memory");
		}
		k->n_seen++;
		n++;
	}
	*ret_version = 1;
	r = attachment_of(o, n, scope, id, ret_text);
	if (r == -EINVAL)
		return rn_error_set(err, EINVAL, "attachment %s cannot be written as a record", id);
	return r;
}

static int k8s_addr_get(struct rn_ipam_store *s, const char *scope, const char *pool,
			const struct rn_ip *ip, char **ret_text, uint64_t *ret_version,
			struct rn_error *err)
{
	struct k8s_store *k = to_k8s(s);
	_cleanup_json_ json_t *ans = NULL;
	char name[96], path[100];
	const char *text;
	int r;

	obj_name(scope, pool, ip, name, sizeof(name));
	/* read by the attachment's list just before: answered once from it */
	for (size_t i = 0; i < k->n_seen; i++) {
		struct seen *sn = &k->seen[i];

		if (strcmp(sn->name, name) == 0) {
			*ret_text = TAKE_PTR(sn->text);
			*ret_version = sn->version;
			free(sn->name);
			k->seen[i] = k->seen[--k->n_seen];
			return 0;
		}
	}
	snprintf(path, sizeof(path), "/%s", name);
	r = request(k, "GET", path, NULL, &ans, err);
	if (r < 0)
		return r;
	*ret_version = rv_of(ans);
	text = spec_str(ans, "record");
	if (!text)
		return -EBADMSG;
	*ret_text = strdup(text);
	return *ret_text ? 0 : rn_error_set(err, ENOMEM, "out of memory");
}

static int k8s_addr_drop(struct rn_ipam_store *s, const char *scope, const char *pool,
			 const struct rn_ip *ip, uint64_t version, struct rn_error *err)
{
	char name[96];

	obj_name(scope, pool, ip, name, sizeof(name));
	return delete_at(to_k8s(s), name, version, err);
}

static int k8s_probe(struct rn_ipam_store *s, const char *scope, const char *pool, int family,
		     rn_u128 first, rn_u128 last, rn_u128 **ret_taken, size_t *ret_n,
		     struct rn_error *err)
{
	/* names cannot be read by range: the create of each candidate is its probe */
	*ret_n = 0;
	*ret_taken = calloc(1, sizeof(**ret_taken));
	return *ret_taken ? 0 : rn_error_set(err, ENOMEM, "out of memory");
}

static int k8s_claim(struct rn_ipam_store *s, const char *scope, const char *pool,
		     const struct rn_ip *ip, const char *rec_text, const char *id,
		     const char *att_text, uint64_t *att_version, struct rn_error *err)
{
	_cleanup_json_ json_t *obj = record_object(scope, pool, ip, rec_text, 0, err), *ans = NULL;
	int r;

	if (!obj)
		return -err->code;
	r = request(to_k8s(s), "POST", "", obj, &ans, err);
	if (r < 0)
		return r;
	/* what this ADD's undo compares against: the record's own version */
	*att_version = rv_of(ans);
	return 0;
}

static int k8s_commit(struct rn_ipam_store *s, const char *scope, const struct rn_ipam_ref *refs,
		      size_t n, const char *id, uint64_t att_version, enum rn_ipam_att_op att_op,
		      const char *att_text, struct rn_error *err)
{
	struct k8s_store *k = to_k8s(s);

	/* record by record, each on its own precondition; the attachment is what they say */
	for (size_t i = 0; i < n; i++) {
		char name[96], path[100];
		int r;

		obj_name(scope, refs[i].pool, &refs[i].ip, name, sizeof(name));
		if (refs[i].text) {
			_cleanup_json_ json_t *obj =
				record_object(scope, refs[i].pool, &refs[i].ip, refs[i].text,
					      refs[i].version, err);

			if (!obj)
				return -err->code;
			snprintf(path, sizeof(path), "/%s", name);
			r = request(k, "PUT", path, obj, NULL, err);
		} else {
			r = delete_at(k, name, refs[i].version, err);
		}
		/* gone or changed since it was read: the caller reads again */
		if (r == -ENOENT || r == -ESTALE)
			return -ESTALE;
		if (r < 0)
			return r;
	}
	return 0;
}

/* Appends "%XX" escapes of what a query value may not hold as is. */
static char *query_escape(const char *s)
{
	char *out = malloc(strlen(s) * 3 + 1), *o = out;

	if (!out)
		return NULL;
	for (; *s; s++) {
		if ((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
		    (*s >= '0' && *s <= '9') || strchr("-_.~", *s))
			*o++ = *s;
		else
			o += sprintf(o, "%%%02X", (unsigned char)*s);
	}
	*o = '\0';
	return out;
}

/* Every object, page by page, to fn. */
static int list_all(struct k8s_store *k, int (*fn)(void *ctx, json_t *obj), void *ctx,
		    struct rn_error *err)
{
	_cleanup_free_ char *cont = NULL;

	for (;;) {
		_cleanup_json_ json_t *ans = NULL;
		_cleanup_free_ char *path = NULL, *esc = cont ? query_escape(cont) : NULL;
		const char *next;
		json_t *it;
		size_t i;
		int r;

		if ((cont && !esc) || asprintf(&path, "?limit=%d%s%s", LIST_PAGE,
					       esc ? "&continue=" : "", esc ? esc : "") < 0) {
			path = NULL;
			return rn_error_set(err, ENOMEM, "out of memory");
		}
		r = request(k, "GET", path, NULL, &ans, err);
		if (r < 0)
			return r;
		json_array_foreach (json_object_get(ans, "items"), i, it) {
			r = fn(ctx, it);
			if (r < 0)
				return r == -ENOMEM ? rn_error_set(err, ENOMEM, "out of memory")
						    : r;
		}
		next = json_string_value(
			json_object_get(json_object_get(ans, "metadata"), "continue"));
		free(cont);
		cont = next && *next ? strdup(next) : NULL;
		if (!next || !*next)
			return 0;
		if (!cont)
			return rn_error_set(err, ENOMEM, "out of memory");
	}
}

struct list_ctx {
	const char *scope;
	rn_ipam_list_fn fn;
	void *ctx;
	/* attachments: the records, gathered */
	struct owned *o;
	size_t n, cap;
};

static int list_address(void *ctx, json_t *obj)
{
	struct list_ctx *lc = ctx;
	const char *scope = spec_str(obj, "scope"), *pool = spec_str(obj, "pool");
	const char *addr = spec_str(obj, "address"), *text = spec_str(obj, "record");
	const char *name =
		json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
	struct rn_ipam_item it = { scope, pool, addr, text, NULL, rv_of(obj) };
	struct rn_ip ip;
	char want[96];

	if (!name)
		return 0;
	if (lc->scope && (!scope || strcmp(scope, lc->scope)))
		return 0;
	if (!scope || !pool || !addr || !text) {
		it.scope = scope ? scope : "?";
		it.key = name;
		it.text = NULL;
		it.why = "its spec lacks scope, pool, address or record";
		return lc->fn(lc->ctx, &it);
	}
	if (rn_ip_parse(addr, &ip) < 0) {
		it.why = "its spec.address is not an address";
		return lc->fn(lc->ctx, &it);
	}
	obj_name(scope, pool, &ip, want, sizeof(want));
	if (strcmp(want, name) != 0)
		it.why = "its name is not the one its scope, pool and address make";
	return lc->fn(lc->ctx, &it);
}

static int gather_record(void *ctx, json_t *obj)
{
	struct list_ctx *lc = ctx;
	const char *text = spec_str(obj, "record");
	struct owned *o;

	if (RN_GROW(lc->o, &lc->cap, lc->n + 1) < 0)
		return -ENOMEM;
	o = &lc->o[lc->n];
	if (!text || rn_ipam_record_parse(text, &o->rec, NULL) < 0 ||
	    (lc->scope && strcmp(o->rec.scope, lc->scope)))
		return 0;
	o->version = rv_of(obj);
	lc->n++;
	return 0;
}

static int by_attachment(const void *x, const void *y)
{
	const struct owned *a = x, *b = y;
	int c = strcmp(a->rec.scope, b->rec.scope);

	return c ? c : strcmp(a->rec.attachment, b->rec.attachment);
}

static int k8s_list(struct rn_ipam_store *s, const char *scope, enum rn_ipam_kind kind,
		    rn_ipam_list_fn fn, void *ctx, struct rn_error *err)
{
	struct list_ctx lc = { scope, fn, ctx, NULL, 0, 0 };
	int r;

	if (kind == RN_IPAM_KIND_ADDRESS)
		return list_all(to_k8s(s), list_address, &lc, err);
	/* attachments are what their records say: one per scope and id, each group read once */
	r = list_all(to_k8s(s), gather_record, &lc, err);
	if (r == 0 && lc.n > 1)
		qsort(lc.o, lc.n, sizeof(*lc.o), by_attachment);
	for (size_t i = 0, end; r == 0 && i < lc.n; i = end) {
		_cleanup_free_ char *text = NULL;

		for (end = i + 1; end < lc.n && by_attachment(&lc.o[i], &lc.o[end]) == 0; end++)
			;
		r = attachment_of(lc.o + i, end - i, lc.o[i].rec.scope, lc.o[i].rec.attachment,
				  &text);
		if (r == 0) {
			struct rn_ipam_item it = {
				lc.o[i].rec.scope, NULL, lc.o[i].rec.attachment, text, NULL, 1
			};

			r = fn(ctx, &it);
			if (r == -ENOMEM)
				r = rn_error_set(err, ENOMEM, "out of memory");
		} else {
			r = 0; /* an attachment no record format can hold: its records show it */
		}
	}
	free(lc.o);
	return r;
}

static const struct rn_ipam_store_ops k8s_ops = {
	.close = k8s_close,
	.ping = k8s_ping,
	.att_get = k8s_att_get,
	.addr_get = k8s_addr_get,
	.addr_drop = k8s_addr_drop,
	.probe = k8s_probe,
	.claim = k8s_claim,
	.commit = k8s_commit,
	.list = k8s_list,
};

int rn_ipam_store_k8s_open(const struct rn_ipam_config *c, struct rn_ipam_store **ret,
			   struct rn_error *err)
{
	const struct rn_ipam_kubernetes *cfg = &c->kubernetes;
	struct k8s_store *k;
	int r;

	if (!cfg->kubeconfig)
		return rn_error_set(err, EINVAL,
				    "store 'kubernetes' needs a kubeconfig (ipam.kubernetes."
				    "kubeconfig)");
	k = calloc(1, sizeof(*k));
	if (!k)
		return rn_error_set(err, ENOMEM, "out of memory");
	k->base.ops = &k8s_ops;
	k->base.window = WINDOW;
	k->kubeconfig = strdup(cfg->kubeconfig);
	if (!k->kubeconfig) {
		k8s_close(&k->base);
		return rn_error_set(err, ENOMEM, "out of memory");
	}
	r = rn_kubeconfig_load(cfg->kubeconfig, &k->kc, err);
	if (r < 0) {
		k8s_close(&k->base);
		return r;
	}
	if (asprintf(&k->url, "%s/apis/" GROUP "/" VERSION "/" PLURAL, k->kc.server) < 0) {
		k->url = NULL;
		k8s_close(&k->base);
		return rn_error_set(err, ENOMEM, "out of memory");
	}
	k->timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : 5000;
	k->deadline_ms = cfg->deadline_ms > 0 ? cfg->deadline_ms : 0;
	k->deadline = k->deadline_ms ? rn_now_ms() + k->deadline_ms : 0;
	{
		struct rn_http_tls tls = {
			.ca_file = k->kc.ca_file,
			.cert_file = k->kc.cert_file,
			.key_file = k->kc.key_file,
			.ca_pem = k->kc.ca_pem,
			.cert_pem = k->kc.cert_pem,
			.key_pem = k->kc.key_pem,
			.cert_settings = "the kubeconfig's client-certificate and client-key",
			/* one server: a slow handshake is still worth the wait */
			.connect_timeout_ms = k->timeout_ms,
		};

		r = rn_http_open(&tls, k->timeout_ms, &k->http, err);
	}
	if (r < 0) {
		k8s_close(&k->base);
		return rn_error_wrap(err, "kubeconfig %s", cfg->kubeconfig);
	}
	*ret = &k->base;
	return 0;
}
