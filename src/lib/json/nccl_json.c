// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "rdmans/cleanup.h"
#include "rdmans/util.h"
#include "rdmans/nccl_json.h"

/* "annotation rdmans.io/nccl", for messages (a static buffer: one message at a time). */
static const char *origin_of(const struct rn_nccl_layer *l)
{
	static __thread char label[RN_NCCL_ORIGIN_MAX + 16];

	rn_nccl_layer_label(l, label, sizeof(label));
	return label;
}

static int parse_block(struct rn_nccl_layer *l, json_t *block, struct rn_error *err)
{
	const char *key;
	json_t *value;
	int r;

	if (!json_is_object(block))
		return rn_error_set(err, EINVAL,
				    "%s: the nccl block must be a JSON object ({\"profile\": ..., "
				    "\"env\": {...}})",
				    origin_of(l));
	json_object_foreach (block, key, value) {
		if (strcmp(key, "profile") == 0) {
			if (!json_is_string(value))
				return rn_error_set(err, EINVAL, "%s: \"profile\" must be a string",
						    origin_of(l));
			r = rn_nccl_layer_set_profile(l, json_string_value(value), err);
			if (r < 0)
				return r;
		} else if (strcmp(key, "family") == 0 || strcmp(key, "nccl_version") == 0) {
			bool fam = strcmp(key, "family") == 0;

			if (!json_is_string(value))
				return rn_error_set(err, EINVAL, "%s: \"%s\" must be a string%s",
						    origin_of(l), key,
						    fam ? " (\"ipv4\", \"ipv6\" or \"auto\")"
							: " (\"2.21.5\")");
			r = fam ? rn_nccl_layer_set_family(l, json_string_value(value), err)
				: rn_nccl_layer_set_version(l, json_string_value(value), err);
			if (r < 0)
				return r;
		} else if (strcmp(key, "env") == 0) {
			const char *name;
			json_t *v;

			if (!json_is_object(value))
				return rn_error_set(
					err, EINVAL,
					"%s: \"env\" must be an object of NCCL variables",
					origin_of(l));
			json_object_foreach (value, name, v) {
				char num[32];
				const char *text;

				if (json_is_null(v)) {
					text = NULL;
				} else if (json_is_string(v)) {
					text = json_string_value(v);
				} else if (json_is_integer(v)) {
					snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT,
						 json_integer_value(v));
					text = num;
				} else {
					return rn_error_set(
						err, EINVAL,
						"%s: env %s must be a string, an integer "
						"or null (to remove it)",
						origin_of(l), name);
				}
				r = rn_nccl_layer_set(l, name, text, err);
				if (r < 0)
					return r;
			}
		} else {
			return rn_error_set(err, EINVAL,
					    "%s: unknown key \"%s\" in the nccl block (known: "
					    "\"profile\", \"family\", \"nccl_version\", \"env\")",
					    origin_of(l), key);
		}
	}
	return 0;
}

int rn_nccl_layer_from_json(struct rn_nccl_layer *l, const char *text, struct rn_error *err)
{
	json_auto_t *doc = NULL;
	json_error_t jerr;

	doc = json_loads(text ? text : "", JSON_REJECT_DUPLICATES, &jerr);
	if (!doc)
		return rn_error_set(err, EINVAL, "%s: not valid JSON: %s (line %d, column %d)",
				    origin_of(l), jerr.text, jerr.line, jerr.column);
	return parse_block(l, doc, err);
}

int rn_nccl_layer_from_file(struct rn_nccl_layer *l, const char *path, bool cni,
			    struct rn_error *err)
{
	json_auto_t *doc = NULL;
	json_t *block, *plugins, *p;
	json_error_t jerr;
	size_t i;

	{
		/* a FIFO, a device or a huge file named here must not hang the caller */
		_cleanup_free_ char *text = NULL;
		size_t len = 0;
		int r = rn_read_regular(path, 1u << 20, NULL, &text, &len, err);

		if (r == -ENOENT)
			return rn_error_set(err, ENOENT, "%s does not exist", path);
		if (r < 0)
			return r;
		doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	}
	if (!doc) {
		if (jerr.line == -1)
			return rn_error_set(err, EIO, "cannot read %s: %s", path, jerr.text);
		return rn_error_set(err, EINVAL, "%s is not valid JSON: %s (line %d, column %d)",
				    path, jerr.text, jerr.line, jerr.column);
	}
	if (!cni)
		return parse_block(l, doc, err);
	if (!json_is_object(doc))
		return rn_error_set(err, EINVAL, "%s is not a CNI network config (not an object)",
				    path);
	block = json_object_get(doc, "nccl");
	plugins = json_object_get(doc, "plugins");
	if (!block && json_is_array(plugins)) {
		json_array_foreach (plugins, i, p) {
			block = json_object_get(p, "nccl");
			if (block)
				break;
		}
	}
	if (!block)
		return 0;
	return parse_block(l, block, err);
}
