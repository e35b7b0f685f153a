// SPDX-License-Identifier: Apache-2.0
/*
 * rn_oci_config_add_env()'s and rn_oci_config_add_devices()'s properties, written apart from oci_config_json.c:
 * the documents are decoded whole here and compared as trees, and the bytes
 * are compared as bytes, so a mistake in the filter's own scan is not
 * repeated in the check.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oci-config-props.h"
#include "rdmans/cleanup.h"

#define FLAGS (JSON_DECODE_INT_AS_REAL | JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL)

/* what broke, in why; -1 */
#define broken(why, why_len, ...) (snprintf((why), (why_len), __VA_ARGS__), -1)

/* The first value of name in an env array, or NULL. */
static const char *env_value(json_t *env, const char *name)
{
	size_t n = strlen(name), i;
	json_t *v;

	json_array_foreach (env, i, v)
		if (json_string_length(v) > n && memcmp(json_string_value(v), name, n) == 0 &&
		    json_string_value(v)[n] == '=')
			return json_string_value(v) + n + 1;
	return NULL;
}

int oci_config_props_check(const char *in, size_t len, size_t max, struct rn_oci_env_add *add,
			   size_t n, char *why, size_t why_len)
{
	_cleanup_(rn_oci_config_freep) struct rn_oci_config *c = NULL, *c2 = NULL;
	_cleanup_free_ char *out = NULL, *out2 = NULL;
	json_auto_t *din = NULL, *dout = NULL, *want = NULL;
	struct rn_error err = { 0 };
	size_t olen = 0, olen2 = 0, pre = 0, suf = 0;
	json_t *pin, *pout, *ein;
	int r;

	r = rn_oci_config_parse(in, len, max, &c, &err);
	din = json_loadb(in, len, FLAGS, NULL);
	if (r < 0) {
		if (!err.msg[0])
			return broken(why, why_len, "refused (%d) without a message", r);
		if (r == -EFBIG)
			return len > max ? 1
					 : broken(why, why_len, "EFBIG for %zu <= %zu", len, max);
		if (din && json_is_object(din) && json_is_object(json_object_get(din, "process")) &&
		    json_is_array(json_object_get(json_object_get(din, "process"), "env")) &&
		    !json_object_get(din, "linux") && !json_object_get(din, "annotations") &&
		    !json_object_get(din, "root")) {
			size_t i;
			json_t *v;
			bool strings = true;

			json_array_foreach (json_object_get(json_object_get(din, "process"), "env"),
					    i, v)
				strings = strings && json_is_string(v);
			if (strings)
				return broken(why, why_len, "a well-formed config refused: %s",
					      err.msg);
		}
		return 1;
	}
	if (len > max)
		return broken(why, why_len, "%zu bytes accepted with max %zu", len, max);
	if (!din || !json_is_object(din))
		return broken(why, why_len, "accepted what jansson refuses");
	pin = json_object_get(din, "process");
	r = rn_oci_config_add_env(c, add, n, &out, &olen, &err);
	if (r < 0) {
		if (!err.msg[0])
			return broken(why, why_len, "add refused (%d) without a message", r);
		if (!pin)
			return 1; /* no process: refused, rightly */
		return broken(why, why_len, "add refused a config with a process: %s", err.msg);
	}
	if (!pin && (olen != len || memcmp(in, out, len) != 0))
		return broken(why, why_len, "added to a config without a process");
	if (!pin)
		return 0;

	/* bytes: one contiguous insertion */
	if (olen < len)
		return broken(why, why_len, "output shorter than input");
	while (pre < len && in[pre] == out[pre])
		pre++;
	while (suf < len - pre && in[len - 1 - suf] == out[olen - 1 - suf])
		suf++;
	if (pre + suf != len)
		return broken(why, why_len,
			      "output differs from input beyond one insertion (at %zu)", pre);

	/* the tree: process.env as expected, everything else equal */
	dout = json_loadb(out, olen, FLAGS, NULL);
	if (!dout)
		return broken(why, why_len, "output is not JSON: %s", out);
	pout = json_object_get(dout, "process");
	ein = json_object_get(pin, "env");
	want = ein ? json_deep_copy(ein) : json_array();
	for (size_t i = 0; i < n; i++) {
		const char *had = env_value(ein, add[i].name);

		if (had) {
			if (!add[i].kept || strcmp(add[i].kept, had) != 0)
				return broken(why, why_len, "%s: set to '%s', kept '%s'",
					      add[i].name, had,
					      add[i].kept ? add[i].kept : "(null)");
			continue;
		}
		if (add[i].kept)
			return broken(why, why_len, "%s: not set, yet kept", add[i].name);
		{
			size_t nl = strlen(add[i].name), vl = strlen(add[i].value);
			char *e = malloc(nl + vl + 2);

			if (!e)
				abort();
			sprintf(e, "%s=%s", add[i].name, add[i].value);
			json_array_append_new(want, json_stringn(e, nl + 1 + vl));
			free(e);
		}
	}
	if (json_array_size(want) == 0 && !ein) {
		if (json_object_get(pout, "env"))
			return broken(why, why_len, "an env appeared with nothing to add");
	} else if (!json_equal(json_object_get(pout, "env"), want)) {
		return broken(why, why_len, "process.env is not the input's plus the added");
	}
	json_object_del(pin, "env");
	json_object_del(pout, "env");
	if (!json_equal(din, dout))
		return broken(why, why_len, "something besides process.env changed");

	/* again: parses, and adds nothing */
	if (rn_oci_config_parse(out, olen, olen, &c2, &err) < 0)
		return broken(why, why_len, "output refused: %s", err.msg);
	{
		_cleanup_free_ struct rn_oci_env_add *again = calloc(n + 1, sizeof(*again));

		if (!again)
			abort();
		memcpy(again, add, n * sizeof(*again));
		if (rn_oci_config_add_env(c2, again, n, &out2, &olen2, &err) < 0)
			return broken(why, why_len, "second add refused: %s", err.msg);
	}
	if (olen2 != olen || memcmp(out, out2, olen) != 0)
		return broken(why, why_len, "adding again changed the output");
	return 0;
}

/* Removes the last k entries of the array at obj[key]; deletes the member when the input had none. */
static void pop_added(json_t *obj, const char *key, size_t k, bool had)
{
	json_t *a = json_object_get(obj, key);

	while (k-- && json_array_size(a))
		json_array_remove(a, json_array_size(a) - 1);
	if (!had)
		json_object_del(obj, key);
}

int oci_config_devices_check(const char *in, size_t len, size_t max, char *why, size_t why_len)
{
	_cleanup_(rn_oci_config_freep) struct rn_oci_config *c = NULL, *c2 = NULL;
	_cleanup_free_ char *out = NULL, *out2 = NULL;
	json_auto_t *din = NULL, *dout = NULL;
	struct rn_error err = { 0 };
	struct rn_oci_dev_add add[] = { { "/dev/infiniband/uverbs3", 231, 195, false },
					{ "/dev/infiniband/rdma_cm", 10, 122, false } };
	size_t olen = 0, olen2 = 0, j = 0, added = 0;
	json_t *lin, *lout, *rin, *rout;

	if (rn_oci_config_parse(in, len, max, &c, &err) < 0)
		return 1; /* refusals: oci_config_props_check() */
	if (rn_oci_config_add_devices(c, add, 2, &out, &olen, &err) < 0)
		return broken(why, why_len, "add_devices refused a parsed config: %s", err.msg);
	/* bytes: the input is a subsequence of the output (insertions only) */
	for (size_t i = 0; i < olen && j < len; i++)
		j += out[i] == in[j];
	if (j != len)
		return broken(why, why_len, "input byte %zu is not in the output in order", j);
	din = json_loadb(in, len, FLAGS, NULL);
	dout = json_loadb(out, olen, FLAGS, NULL);
	if (!din || !dout)
		return broken(why, why_len, "output is not JSON: %s", out);
	for (size_t i = 0; i < 2; i++)
		added += !add[i].kept;
	/* the tree: the input's once the added entries, and members made for them, are gone */
	lin = json_object_get(din, "linux");
	lout = json_object_get(dout, "linux");
	rin = json_object_get(lin, "resources");
	rout = json_object_get(lout, "resources");
	if (added && !json_is_object(lout))
		return broken(why, why_len, "no linux object after adding devices");
	if (added) {
		json_t *last =
			json_array_get(json_object_get(lout, "devices"),
				       json_array_size(json_object_get(lout, "devices")) - 1);
		json_t *rule =
			json_array_get(json_object_get(rout, "devices"),
				       json_array_size(json_object_get(rout, "devices")) - 1);

		if (strcmp(json_string_value(json_object_get(last, "path")) ?: "",
			   "/dev/infiniband/rdma_cm") != 0 ||
		    !json_is_true(json_object_get(rule, "allow")))
			return broken(why, why_len, "the last device or rule is not the added one");
		pop_added(rout, "devices", added, json_object_get(rin, "devices") != NULL);
		pop_added(lout, "devices", added, json_object_get(lin, "devices") != NULL);
		if (!rin)
			json_object_del(lout, "resources");
		if (!lin)
			json_object_del(dout, "linux");
	}
	if (!json_equal(din, dout))
		return broken(why, why_len, "something besides the added devices changed");
	/* again: parses, and adds nothing */
	if (rn_oci_config_parse(out, olen, olen, &c2, &err) < 0)
		return broken(why, why_len, "output refused: %s", err.msg);
	if (rn_oci_config_add_devices(c2, add, 2, &out2, &olen2, &err) < 0 || olen2 != olen ||
	    memcmp(out, out2, olen) != 0 || !add[0].kept || !add[1].kept)
		return broken(why, why_len, "adding the same devices again changed the output");
	return 0;
}
