// SPDX-License-Identifier: Apache-2.0
/* An OCI config, read, and given back with variables or device nodes added (rdmans/oci_config_json.h). */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmans/oci_config_json.h"
#include "rdmans/util.h"

#define NO_POS SIZE_MAX

struct rn_oci_config {
	char *text; /* the input, as it came */
	size_t len;
	json_t *doc; /* read with integers as reals: for looking, never written back */
	/* where an insertion goes (byte offsets into text) */
	size_t process_close; /* the '}' of process, NO_POS when there is no process */
	bool process_empty;
	size_t env_close; /* the ']' of process.env, NO_POS when there is no env */
	bool env_empty;
	size_t top_close; /* the document's '}' */
	bool top_empty;
	size_t linux_close, devices_close, resources_close, rules_close; /* linux, linux.devices,
	 * linux.resources, linux.resources.devices; NO_POS when absent */
	bool linux_empty, devices_empty, resources_empty, rules_empty;
};

void rn_oci_config_free(struct rn_oci_config *c)
{
	if (!c)
		return;
	free(c->text);
	if (c->doc)
		json_decref(c->doc);
	free(c);
}

/* ---- where things are in the text (already accepted by jansson, so well-formed) ---- */

static size_t skip_ws(const char *t, size_t len, size_t i)
{
	while (i < len && (t[i] == ' ' || t[i] == '\t' || t[i] == '\n' || t[i] == '\r'))
		i++;
	return i;
}

/* Whether the JSON string t[s..e) (quotes included) is `key`; escapes decoded. */
static bool key_is(const char *t, size_t s, size_t e, const char *key)
{
	size_t n = strlen(key);
	json_auto_t *k = NULL;

	if (!memchr(t + s, '\\', e - s))
		return e - s == n + 2 && memcmp(t + s + 1, key, n) == 0;
	k = json_loadb(t + s, e - s, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	return json_is_string(k) && json_string_length(k) == n &&
	       memcmp(json_string_value(k), key, n) == 0;
}

/*
 * The object at t[obj] ('{'): the offset of the value of `key` (NO_POS when
 * absent), the offset of its closing '}' and whether it has no member.
 */
static size_t find_member(const char *t, size_t len, size_t obj, const char *key, size_t *ret_close,
			  bool *ret_empty)
{
	size_t i = skip_ws(t, len, obj + 1), found = NO_POS;

	*ret_empty = i < len && t[i] == '}';
	while (i < len && t[i] != '}') {
		size_t ke = rn_json_value_end(t, len, i), vs, ve;

		if (ke == NO_POS)
			break;
		vs = skip_ws(t, len, skip_ws(t, len, ke) + 1); /* past ':' */
		ve = rn_json_value_end(t, len, vs);
		if (ve == NO_POS)
			break;
		if (key_is(t, i, ke, key))
			found = vs;
		i = skip_ws(t, len, ve);
		if (i < len && t[i] == ',')
			i = skip_ws(t, len, i + 1);
	}
	*ret_close = i < len ? i : NO_POS;
	return found;
}

/* The array whose value starts at t[at] ('['): its ']' and whether it is empty. */
static size_t array_close(const char *t, size_t len, size_t at, bool *ret_empty)
{
	size_t end = rn_json_value_end(t, len, at);

	if (end == NO_POS || t[end - 1] != ']')
		return NO_POS;
	*ret_empty = t[skip_ws(t, len, at + 1)] == ']';
	return end - 1;
}

/* linux, linux.devices, linux.resources and its devices (the device cgroup's rules). */
static int locate_linux(struct rn_oci_config *c, size_t top, struct rn_error *err)
{
	size_t lx, devs, res, rules, ignore;
	bool empty;

	c->linux_close = c->devices_close = c->resources_close = c->rules_close = NO_POS;
	lx = find_member(c->text, c->len, top, "linux", &ignore, &empty);
	if (lx == NO_POS)
		return 0;
	devs = find_member(c->text, c->len, lx, "devices", &c->linux_close, &c->linux_empty);
	res = find_member(c->text, c->len, lx, "resources", &ignore, &empty);
	if (c->linux_close == NO_POS)
		return rn_error_set(err, EINVAL, "the OCI config's \"linux\" does not end");
	if (devs != NO_POS &&
	    (c->devices_close = array_close(c->text, c->len, devs, &c->devices_empty)) == NO_POS)
		return rn_error_set(err, EINVAL, "the OCI config's linux.devices does not end");
	if (res == NO_POS)
		return 0;
	rules = find_member(c->text, c->len, res, "devices", &c->resources_close,
			    &c->resources_empty);
	if (c->resources_close == NO_POS)
		return rn_error_set(err, EINVAL, "the OCI config's linux.resources does not end");
	if (rules != NO_POS &&
	    (c->rules_close = array_close(c->text, c->len, rules, &c->rules_empty)) == NO_POS)
		return rn_error_set(err, EINVAL,
				    "the OCI config's linux.resources.devices does not end");
	return 0;
}

static int locate(struct rn_oci_config *c, struct rn_error *err)
{
	size_t top = skip_ws(c->text, c->len, 0), process, env;
	int r;

	c->process_close = c->env_close = NO_POS;
	process = find_member(c->text, c->len, top, "process", &c->top_close, &c->top_empty);
	if (c->top_close == NO_POS)
		return rn_error_set(err, EINVAL, "the OCI config does not end");
	r = locate_linux(c, top, err);
	if (r < 0 || process == NO_POS)
		return r;
	env = find_member(c->text, c->len, process, "env", &c->process_close, &c->process_empty);
	if (c->process_close == NO_POS)
		return rn_error_set(err, EINVAL, "the OCI config's \"process\" does not end");
	if (env != NO_POS &&
	    (c->env_close = array_close(c->text, c->len, env, &c->env_empty)) == NO_POS)
		return rn_error_set(err, EINVAL, "the OCI config's process.env does not end");
	return 0;
}

/* ---- reading ---- */

static int check_shape(json_t *doc, struct rn_error *err)
{
	json_t *process = json_object_get(doc, "process");
	json_t *env = json_object_get(process, "env");
	json_t *linux_ = json_object_get(doc, "linux");
	json_t *ns = json_object_get(linux_, "namespaces");
	json_t *ann = json_object_get(doc, "annotations");
	json_t *root = json_object_get(doc, "root");
	json_t *devs = json_object_get(linux_, "devices");
	json_t *res = json_object_get(linux_, "resources");
	json_t *v;
	size_t i;

	if (process && !json_is_object(process))
		return rn_error_set(err, EINVAL, "the OCI config's \"process\" is not an object");
	if (env && !json_is_array(env))
		return rn_error_set(err, EINVAL, "the OCI config's process.env is not an array");
	json_array_foreach (env, i, v)
		if (!json_is_string(v))
			return rn_error_set(err, EINVAL,
					    "the OCI config's process.env[%zu] is not a string", i);
	if (linux_ && !json_is_object(linux_))
		return rn_error_set(err, EINVAL, "the OCI config's \"linux\" is not an object");
	if (ns && !json_is_array(ns))
		return rn_error_set(err, EINVAL,
				    "the OCI config's linux.namespaces is not an array");
	json_array_foreach (ns, i, v) {
		json_t *type = json_object_get(v, "type"), *path = json_object_get(v, "path");

		if (!json_is_object(v) || !json_is_string(type) || (path && !json_is_string(path)))
			return rn_error_set(err, EINVAL,
					    "the OCI config's linux.namespaces[%zu] is not "
					    "{\"type\": STRING, \"path\": STRING}",
					    i);
	}
	if (devs && !json_is_array(devs))
		return rn_error_set(err, EINVAL, "the OCI config's linux.devices is not an array");
	json_array_foreach (devs, i, v)
		if (!json_is_object(v) || !json_is_string(json_object_get(v, "path")))
			return rn_error_set(err, EINVAL,
					    "the OCI config's linux.devices[%zu] is not an object "
					    "with a \"path\" string",
					    i);
	if (res && !json_is_object(res))
		return rn_error_set(err, EINVAL,
				    "the OCI config's linux.resources is not an object");
	if (json_object_get(res, "devices") && !json_is_array(json_object_get(res, "devices")))
		return rn_error_set(err, EINVAL,
				    "the OCI config's linux.resources.devices is not an array");
	if (ann && !json_is_object(ann))
		return rn_error_set(err, EINVAL,
				    "the OCI config's \"annotations\" is not an object");
	if (root && !json_is_object(root))
		return rn_error_set(err, EINVAL, "the OCI config's \"root\" is not an object");
	return 0;
}

int rn_oci_config_parse(const char *text, size_t len, size_t max, struct rn_oci_config **ret,
			struct rn_error *err)
{
	_cleanup_(rn_oci_config_freep) struct rn_oci_config *c = NULL;
	json_error_t jerr;
	int r;

	*ret = NULL;
	if (len > max)
		return rn_error_set(err, EFBIG,
				    "the OCI config is %zu bytes, more than the %zu bytes "
				    "rdmans-hook takes",
				    len, max);
	c = calloc(1, sizeof(*c));
	if (!c)
		return rn_error_set(err, ENOMEM, "out of memory");
	c->text = malloc(len + 1);
	if (!c->text)
		return rn_error_set(err, ENOMEM, "out of memory");
	memcpy(c->text, text, len);
	c->text[len] = '\0';
	c->len = len;
	/* integers as reals: an integer beyond 64 bits is valid JSON, and never written back */
	c->doc = json_loadb(c->text, len,
			    JSON_DECODE_INT_AS_REAL | JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL,
			    &jerr);
	if (!json_is_object(c->doc)) {
		char where[64] = "";

		if (!c->doc)
			snprintf(where, sizeof(where), " at line %d column %d", jerr.line,
				 jerr.column);
		return rn_error_set(err, EINVAL,
				    "the input is not an OCI config (the runtime's config.json, "
				    "one JSON object)%s: %s",
				    where, c->doc ? "another JSON value" : jerr.text);
	}
	r = check_shape(c->doc, err);
	if (r < 0)
		return r;
	r = locate(c, err);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(c);
	return 0;
}

const char *rn_oci_config_annotation(const struct rn_oci_config *c, const char *key)
{
	json_t *v = json_object_get(json_object_get(c->doc, "annotations"), key);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

const char *rn_oci_config_root(const struct rn_oci_config *c, bool *ret_readonly)
{
	json_t *root = json_object_get(c->doc, "root");
	json_t *path = json_object_get(root, "path");

	if (ret_readonly)
		*ret_readonly = json_is_true(json_object_get(root, "readonly"));
	return json_is_string(path) ? json_string_value(path) : "";
}

enum rn_oci_netns rn_oci_config_netns(const struct rn_oci_config *c, const char **ret_path)
{
	json_t *ns = json_object_get(json_object_get(c->doc, "linux"), "namespaces");
	json_t *v;
	size_t i;

	*ret_path = NULL;
	json_array_foreach (ns, i, v) {
		json_t *path = json_object_get(v, "path");

		if (strcmp(json_string_value(json_object_get(v, "type")), "network") != 0)
			continue;
		if (!json_is_string(path) || !json_string_value(path)[0])
			return RN_OCI_NETNS_NEW;
		*ret_path = json_string_value(path);
		return RN_OCI_NETNS_PATH;
	}
	return RN_OCI_NETNS_NONE;
}

const struct json_t *rn_oci_config_doc(const struct rn_oci_config *c)
{
	return c->doc;
}

const char *rn_oci_config_env_get(const struct rn_oci_config *c, const char *name)
{
	json_t *env = json_object_get(json_object_get(c->doc, "process"), "env");
	size_t n = strlen(name), i;
	json_t *v;

	json_array_foreach (env, i, v) {
		const char *s = json_string_value(v);

		if (json_string_length(v) > n && memcmp(s, name, n) == 0 && s[n] == '=')
			return s + n + 1;
	}
	return NULL;
}

/* ---- writing ---- */

/* Appends `"NAME=VALUE"` (JSON-escaped) to *buf. */
static int append_entry(char **buf, size_t *len, const char *name, const char *value,
			struct rn_error *err)
{
	size_t nl = strlen(name), vl = strlen(value);
	_cleanup_free_ char *entry = NULL, *quoted = NULL;
	json_auto_t *s = NULL;
	char *grown;
	size_t ql;

	if (nl == 0 || strchr(name, '='))
		return rn_error_set(err, EINVAL,
				    "'%s' cannot be an environment variable's name (empty, or "
				    "with '=')",
				    name);
	entry = malloc(nl + vl + 2);
	if (!entry)
		return rn_error_set(err, ENOMEM, "out of memory");
	memcpy(entry, name, nl);
	entry[nl] = '=';
	memcpy(entry + nl + 1, value, vl + 1);
	s = json_stringn(entry, nl + 1 + vl);
	if (!s)
		return rn_error_set(err, EINVAL, "the value of %s is not UTF-8", name);
	quoted = json_dumps(s, JSON_ENCODE_ANY | JSON_COMPACT);
	if (!quoted)
		return rn_error_set(err, ENOMEM, "out of memory");
	ql = strlen(quoted);
	grown = realloc(*buf, *len + ql + 2);
	if (!grown)
		return rn_error_set(err, ENOMEM, "out of memory");
	*buf = grown;
	if (*len)
		(*buf)[(*len)++] = ',';
	memcpy(*buf + *len, quoted, ql + 1);
	*len += ql;
	return 0;
}

/* Pieces of text to insert at byte offsets of the input (ascending, NO_POS: none). */
struct insertion {
	size_t at;
	const char *pre, *body, *post;
};

/* The input with each insertion made, every other byte as it came. */
static int splice(const struct rn_oci_config *c, const struct insertion *ins, size_t n, char **ret,
		  size_t *ret_len, struct rn_error *err)
{
	size_t total = c->len, olen = 0, from = 0;
	_cleanup_free_ char *out = NULL;

	for (size_t i = 0; i < n; i++)
		if (ins[i].at != NO_POS)
			total += strlen(ins[i].pre) + strlen(ins[i].body) + strlen(ins[i].post);
	out = malloc(total + 1);
	if (!out)
		return rn_error_set(err, ENOMEM, "out of memory");
#define PUT(p, l)                                                                                  \
	do {                                                                                       \
		memcpy(out + olen, (p), (l));                                                      \
		olen += (l);                                                                       \
	} while (0)
	for (size_t i = 0; i < n; i++) {
		if (ins[i].at == NO_POS)
			continue;
		PUT(c->text + from, ins[i].at - from);
		PUT(ins[i].pre, strlen(ins[i].pre));
		PUT(ins[i].body, strlen(ins[i].body));
		PUT(ins[i].post, strlen(ins[i].post));
		from = ins[i].at;
	}
	PUT(c->text + from, c->len - from);
#undef PUT
	out[olen] = '\0';
	*ret = TAKE_PTR(out);
	*ret_len = olen;
	return 0;
}

int rn_oci_config_add_env(const struct rn_oci_config *c, struct rn_oci_env_add *add, size_t n,
			  char **ret, size_t *ret_len, struct rn_error *err)
{
	_cleanup_free_ char *entries = NULL;
	struct insertion ins = { NO_POS, "", "", "" };
	size_t elen = 0;
	int r;

	*ret = NULL;
	*ret_len = 0;
	for (size_t i = 0; i < n; i++) {
		add[i].kept = rn_oci_config_env_get(c, add[i].name);
		if (add[i].kept)
			continue;
		r = append_entry(&entries, &elen, add[i].name, add[i].value, err);
		if (r < 0)
			return r;
	}
	if (elen && c->process_close == NO_POS)
		return rn_error_set(err, EINVAL,
				    "the OCI config has no \"process\": there is no process to "
				    "give an environment to");
	if (elen && c->env_close != NO_POS) {
		ins.at = c->env_close;
		ins.pre = c->env_empty ? "" : ",";
	} else if (elen) {
		ins.at = c->process_close;
		ins.pre = c->process_empty ? "\"env\":[" : ",\"env\":[";
		ins.post = "]";
	}
	ins.body = elen ? entries : "";
	return splice(c, &ins, 1, ret, ret_len, err);
}

static bool has_device(const struct rn_oci_config *c, const char *path)
{
	json_t *devs = json_object_get(json_object_get(c->doc, "linux"), "devices");
	size_t i;
	json_t *v;

	json_array_foreach (devs, i, v)
		if (strcmp(json_string_value(json_object_get(v, "path")), path) == 0)
			return true;
	return false;
}

/* Appends text to *buf (",text" when *buf has something). */
static int append_text(char **buf, size_t *len, const char *text, struct rn_error *err)
{
	size_t tl = strlen(text);
	char *grown = realloc(*buf, *len + tl + 2);

	if (!grown)
		return rn_error_set(err, ENOMEM, "out of memory");
	*buf = grown;
	if (*len)
		(*buf)[(*len)++] = ',';
	memcpy(*buf + *len, text, tl + 1);
	*len += tl;
	return 0;
}

static int cmp_insertion(const void *a, const void *b)
{
	const struct insertion *x = a, *y = b;

	return x->at < y->at ? -1 : x->at > y->at;
}

int rn_oci_config_add_devices(const struct rn_oci_config *c, struct rn_oci_dev_add *add, size_t n,
			      char **ret, size_t *ret_len, struct rn_error *err)
{
	_cleanup_free_ char *nodes = NULL, *rules = NULL, *linux_ = NULL, *arr = NULL,
			    *rules_arr = NULL, *res = NULL, *members = NULL;
	struct insertion ins[3];
	size_t nl = 0, rl = 0, ml = 0, k = 0;
	char one[PATH_MAX + 256];
	int r = 0;

	*ret = NULL;
	*ret_len = 0;
	for (size_t i = 0; i < n; i++) {
		json_auto_t *path = json_string(add[i].path);
		_cleanup_free_ char *quoted = NULL;

		add[i].kept = has_device(c, add[i].path);
		if (add[i].kept)
			continue;
		quoted = path ? json_dumps(path, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
		if (!quoted || add[i].path[0] != '/' || strlen(add[i].path) >= PATH_MAX)
			return rn_error_set(err, EINVAL, "'%s' cannot be a device node's path",
					    add[i].path);
		/* fileMode 020666: a character device, read-write for all, as podman's --device */
		snprintf(one, sizeof(one),
			 "{\"path\":%s,\"type\":\"c\",\"major\":%u,\"minor\":%u,"
			 "\"fileMode\":8630,\"uid\":0,\"gid\":0}",
			 quoted, add[i].major, add[i].minor);
		r = append_text(&nodes, &nl, one, err);
		snprintf(one, sizeof(one),
			 "{\"allow\":true,\"type\":\"c\",\"major\":%u,\"minor\":%u,"
			 "\"access\":\"rwm\"}",
			 add[i].major, add[i].minor);
		if (r == 0)
			r = append_text(&rules, &rl, one, err);
		if (r < 0)
			return r;
	}
	if (nl == 0)
		return splice(c, ins, 0, ret, ret_len, err);
	/* the nodes go to linux.devices; the device cgroup rules that let them be
	 * opened go after the runtime's own (deny all first: the last match wins) */
	if (asprintf(&arr, "\"devices\":[%s]", nodes) < 0 ||
	    asprintf(&rules_arr, "\"devices\":[%s]", rules) < 0 ||
	    asprintf(&res, "\"resources\":{%s}", rules_arr) < 0)
		return rn_error_set(err, ENOMEM, "out of memory");
	if (c->linux_close == NO_POS) {
		if (asprintf(&linux_, "\"linux\":{%s,%s}", arr, res) < 0)
			return rn_error_set(err, ENOMEM, "out of memory");
		ins[k++] = (struct insertion){ c->top_close, c->top_empty ? "" : ",", linux_, "" };
		return splice(c, ins, k, ret, ret_len, err);
	}
	if (c->devices_close != NO_POS)
		ins[k++] = (struct insertion){ c->devices_close, c->devices_empty ? "" : ",", nodes,
					       "" };
	else
		r = append_text(&members, &ml, arr, err);
	if (c->rules_close != NO_POS)
		ins[k++] =
			(struct insertion){ c->rules_close, c->rules_empty ? "" : ",", rules, "" };
	else if (c->resources_close != NO_POS)
		ins[k++] = (struct insertion){ c->resources_close, c->resources_empty ? "" : ",",
					       rules_arr, "" };
	else if (r == 0)
		r = append_text(&members, &ml, res, err);
	if (r < 0)
		return r;
	if (ml)
		ins[k++] = (struct insertion){ c->linux_close, c->linux_empty ? "" : ",", members,
					       "" };
	qsort(ins, k, sizeof(*ins), cmp_insertion);
	return splice(c, ins, k, ret, ret_len, err);
}
