// SPDX-License-Identifier: Apache-2.0
/*
 * A kubeconfig for the kubernetes store (ipam_kubeconfig.h): JSON, or the
 * YAML subset tools write, read into a JSON tree, then the current
 * context's cluster and user taken from it. A config parser, so jansson
 * lives here too; the store sees struct rn_kubeconfig.
 *
 * Why a subset and not libyaml: a kubeconfig written by kubectl or by a
 * DaemonSet's template uses block mappings, block sequences and plain or
 * quoted scalars only, and the plugin runs on hosts whose libraries are
 * not ours (the node tree carries what it links). What falls outside is
 * refused with its line, never guessed at.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmans/cleanup.h"
#include "rdmans/ipam_kubeconfig.h"
#include "rdmans/json_cleanup.h"
#include "rdmans/util.h"

#define MAX_DEPTH 32

/* ---- the YAML subset ------------------------------------------------------ */

struct yline {
	size_t no; /* 1-based */
	size_t indent;
	char *text; /* after the indentation, comment and trailing blanks cut */
};

struct yaml {
	struct yline *l;
	size_t n, i;
	int depth;
	size_t *err_line;
	struct rn_error *err;
};

static int yerr(struct yaml *y, size_t no, const char *what)
{
	*y->err_line = no;
	return rn_error_set(y->err, EBADMSG, "line %zu: %s", no, what);
}

/* Cuts a comment (" #..." outside quotes) and trailing blanks. */
static void cut_comment(char *s)
{
	char quote = 0;
	size_t n;

	for (char *p = s; *p; p++) {
		if (quote) {
			if (*p == '\\' && quote == '"' && p[1])
				p++;
			else if (*p == quote)
				quote = 0;
		} else if ((*p == '"' || *p == '\'') && (p == s || p[-1] == ' ')) {
			quote = *p;
		} else if (*p == '#' && (p == s || p[-1] == ' ' || p[-1] == '\t')) {
			*p = '\0';
			break;
		}
	}
	n = strlen(s);
	while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
		s[--n] = '\0';
}

static int split_lines(struct yaml *y, char *text)
{
	size_t no = 0, cap = 0;
	bool content = false;

	for (char *line = text, *next; line; line = next) {
		size_t indent = 0;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		no++;
		while (line[indent] == ' ')
			indent++;
		if (line[indent] == '\t')
			return yerr(y, no, "a tab in the indentation (YAML indents with spaces)");
		cut_comment(line + indent);
		if (!line[indent])
			continue;
		if (strcmp(line, "---") == 0 && indent == 0) {
			if (content)
				return yerr(y, no, "a second document ('---'): one is read");
			continue;
		}
		if (strcmp(line, "...") == 0 && indent == 0)
			break;
		if (strncmp(line, "%", 1) == 0)
			return yerr(y, no, "a YAML directive ('%...') is not read");
		if (RN_GROW(y->l, &cap, y->n + 1) < 0)
			return rn_error_set(y->err, ENOMEM, "out of memory");
		y->l[y->n++] = (struct yline){ no, indent, line + indent };
		content = true;
	}
	return 0;
}

static bool seq_item(const char *t)
{
	return t[0] == '-' && (t[1] == ' ' || t[1] == '\0');
}

/* A quoted scalar at s; *end after its closing quote. NULL (and err) when unreadable. */
static json_t *quoted(struct yaml *y, size_t no, const char *s, const char **end)
{
	_cleanup_free_ char *out = malloc(strlen(s) + 1);
	char q = *s, *o = out;
	const char *p = s + 1;
	json_t *j;

	if (!out) {
		rn_error_set(y->err, ENOMEM, "out of memory");
		return NULL;
	}
	for (;; p++) {
		if (!*p) {
			yerr(y, no, "a quoted scalar is not closed on its line");
			return NULL;
		}
		if (q == '\'' && *p == '\'') {
			if (p[1] != '\'')
				break;
			*o++ = *++p;
		} else if (q == '"' && *p == '"') {
			break;
		} else if (q == '"' && *p == '\\') {
			static const char from[] = "\"\\/nt", to[] = "\"\\/\n\t";
			const char *k = p[1] ? strchr(from, p[1]) : NULL;

			if (!k) {
				yerr(y, no,
				     "an escape other than \\\" \\\\ \\/ \\n \\t is not read");
				return NULL;
			}
			*o++ = to[k - from];
			p++;
		} else {
			*o++ = *p;
		}
	}
	*o = '\0';
	*end = p + 1;
	j = json_string(out);
	if (!j)
		yerr(y, no, "a scalar that is not UTF-8");
	return j;
}

/* The value after "key: " or "- ". */
static json_t *scalar(struct yaml *y, size_t no, const char *v)
{
	const char *end;
	json_t *j;

	if (*v == '"' || *v == '\'') {
		j = quoted(y, no, v, &end);
		if (j && *end) {
			json_decref(j);
			yerr(y, no, "text after a quoted scalar");
			return NULL;
		}
		return j;
	}
	if (strcmp(v, "[]") == 0)
		return json_array();
	if (strcmp(v, "{}") == 0)
		return json_object();
	if (strchr("[{", *v)) {
		yerr(y, no, "flow collections ([...], {...}) are not read: write them as blocks");
		return NULL;
	}
	if (strchr("|>", *v)) {
		yerr(y, no, "block scalars (| >) are not read: write the value on one line");
		return NULL;
	}
	if (strchr("&*!", *v)) {
		yerr(y, no, "anchors, aliases and tags (& * !) are not read");
		return NULL;
	}
	j = json_string(v);
	if (!j)
		yerr(y, no, "a scalar that is not UTF-8");
	return j;
}

/*
 * Splits "key: value" (or "key:"); *ret_value points into t, "" when none.
 * 0 with *ret_key NULL when t is no key.
 */
static int key_of(struct yaml *y, size_t no, char *t, json_t **ret_key, char **ret_value)
{
	char *p;

	*ret_key = NULL;
	if (*t == '"' || *t == '\'') {
		const char *end;
		json_t *k = quoted(y, no, t, &end);

		if (!k)
			return -EBADMSG;
		if (*end != ':' || (end[1] && end[1] != ' ')) {
			json_decref(k);
			return 0;
		}
		*ret_key = k;
		p = (char *)end;
	} else {
		for (p = t; *p; p++)
			if (*p == ':' && (p[1] == ' ' || p[1] == '\0'))
				break;
		if (!*p || p == t)
			return 0;
		*p = '\0';
		*ret_key = json_string(t);
		if (!*ret_key)
			return yerr(y, no, "a key that is not UTF-8");
	}
	p++;
	while (*p == ' ')
		p++;
	*ret_value = p;
	return 0;
}

static json_t *block(struct yaml *y, size_t indent);

/* The block under a line (deeper than indent), or "" when none. */
static json_t *under(struct yaml *y, size_t indent, bool seq_same_indent)
{
	if (y->i < y->n && y->l[y->i].indent > indent)
		return block(y, y->l[y->i].indent);
	/* "key:" then "- item" at the key's own indentation: YAML allows it */
	if (seq_same_indent && y->i < y->n && y->l[y->i].indent == indent &&
	    seq_item(y->l[y->i].text))
		return block(y, indent);
	return json_string("");
}

static json_t *sequence(struct yaml *y, size_t indent)
{
	_cleanup_json_ json_t *arr = json_array();

	if (!arr)
		return NULL;
	while (y->i < y->n && y->l[y->i].indent == indent && seq_item(y->l[y->i].text)) {
		struct yline *l = &y->l[y->i];
		char *rest = l->text + 1;
		json_t *item;

		while (*rest == ' ')
			rest++;
		if (!*rest) {
			y->i++;
			item = under(y, indent, false);
		} else {
			/* the item's content is a block that starts at its column */
			l->indent += (size_t)(rest - l->text);
			l->text = rest;
			item = block(y, l->indent);
		}
		if (!item || json_array_append_new(arr, item) < 0)
			return NULL;
	}
	return TAKE_PTR(arr);
}

static json_t *mapping(struct yaml *y, size_t indent)
{
	_cleanup_json_ json_t *obj = json_object();

	if (!obj)
		return NULL;
	while (y->i < y->n && y->l[y->i].indent == indent) {
		struct yline *l = &y->l[y->i];
		_cleanup_json_ json_t *key = NULL;
		char *value;
		json_t *v;

		if (seq_item(l->text)) {
			yerr(y, l->no, "a sequence item where a mapping key was expected");
			return NULL;
		}
		if (key_of(y, l->no, l->text, &key, &value) < 0)
			return NULL;
		if (!key) {
			yerr(y, l->no, "expected 'key: value'");
			return NULL;
		}
		if (json_object_get(obj, json_string_value(key))) {
			yerr(y, l->no, "a key given twice");
			return NULL;
		}
		y->i++;
		v = *value ? scalar(y, l->no, value) : under(y, indent, true);
		if (!v || json_object_set_new(obj, json_string_value(key), v) < 0)
			return NULL;
	}
	return TAKE_PTR(obj);
}

/* The block at y->i, whose lines are at indent. */
static json_t *block(struct yaml *y, size_t indent)
{
	struct yline *l = &y->l[y->i];
	json_t *j;
	json_t *key = NULL;
	char *value, *copy;

	if (++y->depth > MAX_DEPTH) {
		yerr(y, l->no, "nested too deep");
		return NULL;
	}
	if (seq_item(l->text)) {
		j = sequence(y, indent);
	} else {
		/* a mapping if its first line is a key, else one scalar line */
		copy = strdup(l->text);
		if (!copy) {
			rn_error_set(y->err, ENOMEM, "out of memory");
			return NULL;
		}
		if (key_of(y, l->no, copy, &key, &value) < 0) {
			free(copy);
			return NULL;
		}
		free(copy);
		if (key) {
			json_decref(key);
			j = mapping(y, indent);
		} else {
			j = scalar(y, l->no, l->text);
			y->i++;
		}
	}
	y->depth--;
	if (j && y->i < y->n && y->l[y->i].indent > indent) {
		json_decref(j);
		yerr(y, y->l[y->i].no, "unexpected indentation");
		return NULL;
	}
	return j;
}

int rn_kubeconfig_yaml(const char *text, json_t **ret, size_t *ret_line, struct rn_error *err)
{
	_cleanup_free_ char *copy = strdup(text);
	_cleanup_free_ struct yline *lines = NULL;
	size_t line = 0;
	struct yaml y = { .err_line = &line, .err = err };
	json_t *j;
	int r;

	*ret_line = 0;
	if (!copy)
		return rn_error_set(err, ENOMEM, "out of memory");
	r = split_lines(&y, copy);
	lines = y.l;
	if (r < 0) {
		*ret_line = line;
		return r;
	}
	if (y.n == 0)
		return rn_error_set(err, EBADMSG, "it is empty");
	if (y.l[0].indent != 0)
		return yerr(&y, y.l[0].no, "the document does not start at column 1");
	j = block(&y, 0);
	if (j && y.i < y.n) {
		json_decref(j);
		j = NULL;
		yerr(&y, y.l[y.i].no, "unexpected indentation");
	}
	*ret_line = line;
	if (!j)
		return err && err->code ? -err->code : -EBADMSG;
	*ret = j;
	return 0;
}

/* ---- the kubeconfig's meaning ------------------------------------------------ */

void rn_kubeconfig_free(struct rn_kubeconfig *k)
{
	if (!k)
		return;
	free(k->server);
	free(k->ca_file);
	free(k->ca_pem);
	free(k->cert_file);
	free(k->cert_pem);
	free(k->key_file);
	if (k->key_pem) {
		explicit_bzero(k->key_pem, strlen(k->key_pem));
		free(k->key_pem);
	}
	if (k->token) {
		explicit_bzero(k->token, strlen(k->token));
		free(k->token);
	}
	free(k->token_file);
	memset(k, 0, sizeof(*k));
}

/* The "name": N entry of a list (clusters, users, contexts), its `field` object. */
static json_t *named(json_t *doc, const char *list, const char *name, const char *field)
{
	json_t *arr = json_object_get(doc, list), *e;
	size_t i;

	json_array_foreach (arr, i, e) {
		const char *n = json_string_value(json_object_get(e, "name"));

		if (n && strcmp(n, name) == 0)
			return json_object_get(e, field);
	}
	return NULL;
}

static const char *str(json_t *obj, const char *key)
{
	const char *s = json_string_value(json_object_get(obj, key));

	return s && *s ? s : NULL;
}

/* A file setting: absolute as given, or from the kubeconfig's directory. */
static int set_path(const char *name, const char *dir, const char *key, const char *v, char **dst,
		    struct rn_error *err)
{
	if (!v)
		return 0;
	if (v[0] == '/')
		*dst = strdup(v);
	else if (!dir)
		return rn_error_set(err, EINVAL,
				    "%s: %s '%s' is relative, and there is no "
				    "kubeconfig directory to take it from",
				    name, key, v);
	else if (asprintf(dst, "%s/%s", dir, v) < 0)
		*dst = NULL;
	return *dst ? 0 : rn_error_set(err, ENOMEM, "out of memory");
}

/* A *-data setting: base64 of PEM text. */
static int set_data(const char *name, const char *key, const char *v, char **dst,
		    struct rn_error *err)
{
	size_t len;
	int r;

	if (!v)
		return 0;
	r = rn_base64_decode(v, dst, &len);
	if (r == -ENOMEM)
		return rn_error_set(err, ENOMEM, "out of memory");
	if (r < 0 || len == 0 || strlen(*dst) != len) {
		free(*dst);
		*dst = NULL;
		return rn_error_set(err, EINVAL, "%s: %s is not base64 of PEM text", name, key);
	}
	return 0;
}

static int take_cluster(json_t *cluster, const char *name, const char *dir, struct rn_kubeconfig *k,
			struct rn_error *err)
{
	json_t *insecure = json_object_get(cluster, "insecure-skip-tls-verify");
	const char *server = str(cluster, "server");
	size_t len;
	int r;

	if (!server)
		return rn_error_set(err, EINVAL, "%s: the cluster has no server", name);
	if (strncmp(server, "https://", 8) != 0 && strncmp(server, "http://", 7) != 0)
		return rn_error_set(err, EINVAL, "%s: server '%s' must start with https://", name,
				    server);
	if (json_is_true(insecure) ||
	    (json_is_string(insecure) && strcmp(json_string_value(insecure), "true") == 0))
		return rn_error_set(err, EINVAL,
				    "%s: insecure-skip-tls-verify is not supported: give the "
				    "cluster's certificate-authority",
				    name);
	k->server = strdup(server);
	if (!k->server)
		return rn_error_set(err, ENOMEM, "out of memory");
	for (len = strlen(k->server); len > 8 && k->server[len - 1] == '/';)
		k->server[--len] = '\0';
	r = set_data(name, "certificate-authority-data", str(cluster, "certificate-authority-data"),
		     &k->ca_pem, err);
	if (r == 0 && !k->ca_pem)
		r = set_path(name, dir, "certificate-authority",
			     str(cluster, "certificate-authority"), &k->ca_file, err);
	return r;
}

static int take_user(json_t *user, const char *name, const char *dir, struct rn_kubeconfig *k,
		     struct rn_error *err)
{
	static const char *const plugins[] = { "exec", "auth-provider", "username" };
	int r;

	for (size_t i = 0; i < RN_ARRAY_SIZE(plugins); i++) {
		json_t *p = json_object_get(user, plugins[i]);

		if (p && !(json_is_string(p) && !*json_string_value(p)) && !json_is_null(p))
			return rn_error_set(err, EINVAL,
					    "%s: user credentials by %s are not supported: give a "
					    "client certificate and key, a token or a tokenFile",
					    name, plugins[i]);
	}
	r = set_data(name, "client-certificate-data", str(user, "client-certificate-data"),
		     &k->cert_pem, err);
	if (r == 0 && !k->cert_pem)
		r = set_path(name, dir, "client-certificate", str(user, "client-certificate"),
			     &k->cert_file, err);
	if (r == 0)
		r = set_data(name, "client-key-data", str(user, "client-key-data"), &k->key_pem,
			     err);
	if (r == 0 && !k->key_pem)
		r = set_path(name, dir, "client-key", str(user, "client-key"), &k->key_file, err);
	if (r == 0 && str(user, "token")) {
		k->token = strdup(str(user, "token"));
		if (!k->token)
			r = rn_error_set(err, ENOMEM, "out of memory");
	}
	if (r == 0 && !k->token)
		r = set_path(name, dir, "tokenFile", str(user, "tokenFile"), &k->token_file, err);
	if (r < 0)
		return r;
	if ((k->cert_pem || k->cert_file) != (k->key_pem || k->key_file))
		return rn_error_set(err, EINVAL,
				    "%s: the user has a client certificate without its key, or a "
				    "key without its certificate",
				    name);
	return 0;
}

static int from_tree(json_t *doc, const char *name, const char *dir, struct rn_kubeconfig *k,
		     struct rn_error *err)
{
	const char *ctx_name = str(doc, "current-context"), *cluster_name, *user_name;
	json_t *ctx, *cluster, *user;
	int r;

	if (!json_is_object(doc))
		return rn_error_set(err, EBADMSG, "%s is not a kubeconfig (no mapping at its top)",
				    name);
	if (!ctx_name) {
		/* no current-context: its only context, as a kubeconfig written for one client has */
		json_t *ctxs = json_object_get(doc, "contexts");

		if (json_array_size(ctxs) != 1)
			return rn_error_set(err, EINVAL,
					    "%s has no current-context (and not exactly one "
					    "context)",
					    name);
		ctx_name = json_string_value(json_object_get(json_array_get(ctxs, 0), "name"));
		if (!ctx_name)
			return rn_error_set(err, EINVAL, "%s: its context has no name", name);
	}
	ctx = named(doc, "contexts", ctx_name, "context");
	if (!json_is_object(ctx))
		return rn_error_set(err, EINVAL, "%s: context '%s' is not among its contexts", name,
				    ctx_name);
	cluster_name = str(ctx, "cluster");
	user_name = str(ctx, "user");
	if (!cluster_name)
		return rn_error_set(err, EINVAL, "%s: context '%s' names no cluster", name,
				    ctx_name);
	cluster = named(doc, "clusters", cluster_name, "cluster");
	if (!json_is_object(cluster))
		return rn_error_set(err, EINVAL, "%s: cluster '%s' is not among its clusters", name,
				    cluster_name);
	r = take_cluster(cluster, name, dir, k, err);
	if (r < 0 || !user_name)
		return r;
	user = named(doc, "users", user_name, "user");
	if (!json_is_object(user))
		return rn_error_set(err, EINVAL, "%s: user '%s' is not among its users", name,
				    user_name);
	return take_user(user, name, dir, k, err);
}

int rn_kubeconfig_parse(const char *text, const char *name, const char *dir,
			struct rn_kubeconfig *ret, struct rn_error *err)
{
	_cleanup_json_ json_t *doc = NULL;
	const char *p = text;
	int r;

	memset(ret, 0, sizeof(*ret));
	while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')
		p++;
	if (*p == '{') {
		json_error_t jerr;

		doc = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
		if (!doc)
			return rn_error_set(err, EBADMSG, "%s: line %d: %s", name, jerr.line,
					    jerr.text);
	} else {
		size_t line;

		r = rn_kubeconfig_yaml(text, &doc, &line, err);
		if (r < 0)
			return rn_error_wrap(err, "%s (JSON, or YAML in the subset kubectl writes)",
					     name);
	}
	r = from_tree(doc, name, dir, ret, err);
	if (r < 0)
		rn_kubeconfig_free(ret);
	return r;
}

int rn_kubeconfig_load(const char *path, struct rn_kubeconfig *ret, struct rn_error *err)
{
	_cleanup_free_ char *text = NULL, *dir = strdup(path);
	char *slash;
	int r;

	memset(ret, 0, sizeof(*ret));
	if (!dir)
		return rn_error_set(err, ENOMEM, "out of memory");
	r = rn_read_regular(path, RN_KUBECONFIG_MAX, "kubeconfig", &text, NULL, err);
	if (r < 0)
		return r;
	slash = strrchr(dir, '/');
	if (slash)
		*(slash == dir ? slash + 1 : slash) = '\0';
	r = rn_kubeconfig_parse(text, path, slash ? dir : ".", ret, err);
	explicit_bzero(text, strlen(text));
	return r;
}
