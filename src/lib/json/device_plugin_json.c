// SPDX-License-Identifier: Apache-2.0
/*
 * rdmans-device-plugin's configuration file (JSON):
 *
 *	{ "resourcePrefix": "rdmans.io", "cdiKind": "rdmans.io/rdma",
 *	  "pools": [ { "name": "rail", "selectors": { "names": ["mlx5_*"],
 *	      "vendors": ["15b3"], "devices": ["101d"], "drivers": ["mlx5_core"],
 *	      "linkLayers": ["Ethernet"], "netdevs": ["ens*"] } } ] }
 *
 * Every key is optional; an unknown key is an error, so that a typo never
 * silently widens a pool.
 */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "rdmans/device_plugin_json.h"
#include "rdmans/json_cleanup.h"
#include "rdmans/util.h"

void rn_dp_config_default(struct rn_dp_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->n_pools = 1;
	(void)rn_strscpy(cfg->pools[0].name, sizeof(cfg->pools[0].name), RN_DP_DEFAULT_POOL);
	(void)rn_snprintf(cfg->pools[0].resource, sizeof(cfg->pools[0].resource), "%s/%s",
			  RN_DP_DEFAULT_PREFIX, RN_DP_DEFAULT_POOL);
	(void)rn_strscpy(cfg->cdi_kind, sizeof(cfg->cdi_kind), RN_DP_DEFAULT_CDI_KIND);
	cfg->strategies = RN_DP_CDI_CRI;
}

static int unknown_keys(json_t *obj, const char *const *known, const char *where,
			struct rn_error *err)
{
	const char *key;
	json_t *v;

	json_object_foreach (obj, key, v) {
		bool ok = false;

		for (size_t i = 0; known[i] && !ok; i++)
			ok = !strcmp(key, known[i]);
		if (!ok)
			return rn_error_set(err, EINVAL, "%s: unknown key '%s'", where, key);
	}
	return 0;
}

static int get_string(json_t *obj, const char *key, const char *where, char *buf, size_t len,
		      struct rn_error *err)
{
	json_t *v = json_object_get(obj, key);

	if (!v)
		return 0;
	if (!json_is_string(v) || !json_string_length(v))
		return rn_error_set(err, EINVAL, "%s: '%s' must be a non-empty string", where, key);
	if (rn_strscpy(buf, len, json_string_value(v)) < 0)
		return rn_error_set(err, EINVAL, "%s: '%s' is longer than %zu characters", where,
				    key, len - 1);
	return 0;
}

/* A list of strings into `out` (n entries of `width` bytes). */
static int get_strings(json_t *sel, const char *key, const char *where, char *out, size_t width,
		       size_t *ret_n, struct rn_error *err)
{
	json_t *arr = json_object_get(sel, key), *v;
	size_t i;

	*ret_n = 0;
	if (!arr)
		return 0;
	if (!json_is_array(arr))
		return rn_error_set(err, EINVAL, "%s: '%s' must be a list of strings", where, key);
	if (json_array_size(arr) > RN_DP_MAX_MATCH)
		return rn_error_set(err, EINVAL, "%s: '%s' has more than %d entries", where, key,
				    RN_DP_MAX_MATCH);
	json_array_foreach (arr, i, v) {
		if (!json_is_string(v) || !json_string_length(v))
			return rn_error_set(err, EINVAL, "%s: '%s'[%zu] must be a non-empty string",
					    where, key, i);
		if (rn_strscpy(out + i * width, width, json_string_value(v)) < 0)
			return rn_error_set(err, EINVAL,
					    "%s: '%s'[%zu] is longer than %zu characters", where,
					    key, i, width - 1);
	}
	*ret_n = json_array_size(arr);
	return 0;
}

/* Hex IDs ("15b3" or "0x15b3") of 1-4 digits. */
static int get_hex_ids(json_t *sel, const char *key, const char *where, unsigned *out,
		       size_t *ret_n, struct rn_error *err)
{
	char text[RN_DP_MAX_MATCH][8];
	size_t n;
	int r;

	if ((r = get_strings(sel, key, where, &text[0][0], sizeof(text[0]), &n, err)) < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		const char *p = text[i] + (!strncasecmp(text[i], "0x", 2) ? 2 : 0);
		char *end;

		out[i] = (unsigned)strtoul(p, &end, 16);
		if (!*p || *end || strlen(p) > 4)
			return rn_error_set(err, EINVAL,
					    "%s: '%s'[%zu] = '%s' is not a PCI ID (4 hex digits, "
					    "such as 15b3)",
					    where, key, i, text[i]);
	}
	*ret_n = n;
	return 0;
}

static int pool_read(json_t *p, size_t index, const char *prefix, struct rn_dp_pool *out,
		     struct rn_error *err)
{
	static const char *const pool_keys[] = { "name", "selectors", NULL };
	static const char *const sel_keys[] = { "names",      "vendors", "devices", "drivers",
						"linkLayers", "netdevs", NULL };
	struct rn_dp_selector *s = &out->sel;
	char where[96];
	json_t *sel;
	int r;

	(void)rn_snprintf(where, sizeof(where), "pools[%zu]", index);
	if (!json_is_object(p))
		return rn_error_set(err, EINVAL, "%s must be an object", where);
	if ((r = unknown_keys(p, pool_keys, where, err)) < 0 ||
	    (r = get_string(p, "name", where, out->name, sizeof(out->name), err)) < 0)
		return r;
	if (!out->name[0])
		return rn_error_set(err, EINVAL, "%s has no 'name' (the resource is %s/NAME)",
				    where, prefix);
	for (const char *c = out->name; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		      (*c >= '0' && *c <= '9') || *c == '-' || *c == '_' || *c == '.'))
			return rn_error_set(err, EINVAL,
					    "%s: name '%s' may hold only letters, digits, '-', "
					    "'_' and '.' (it names a Kubernetes resource)",
					    where, out->name);
	if (rn_snprintf(out->resource, sizeof(out->resource), "%s/%s", prefix, out->name) < 0)
		return rn_error_set(err, EINVAL, "%s: resource %s/%s is too long", where, prefix,
				    out->name);
	sel = json_object_get(p, "selectors");
	if (!sel)
		return 0;
	(void)rn_snprintf(where, sizeof(where), "pools[%zu].selectors", index);
	if (!json_is_object(sel))
		return rn_error_set(err, EINVAL, "%s must be an object", where);
	if ((r = unknown_keys(sel, sel_keys, where, err)) < 0 ||
	    (r = get_strings(sel, "names", where, &s->names[0][0], sizeof(s->names[0]), &s->n_names,
			     err)) < 0 ||
	    (r = get_hex_ids(sel, "vendors", where, s->vendors, &s->n_vendors, err)) < 0 ||
	    (r = get_hex_ids(sel, "devices", where, s->devices, &s->n_devices, err)) < 0 ||
	    (r = get_strings(sel, "drivers", where, &s->drivers[0][0], sizeof(s->drivers[0]),
			     &s->n_drivers, err)) < 0 ||
	    (r = get_strings(sel, "linkLayers", where, &s->link_layers[0][0],
			     sizeof(s->link_layers[0]), &s->n_link_layers, err)) < 0 ||
	    (r = get_strings(sel, "netdevs", where, &s->netdevs[0][0], sizeof(s->netdevs[0]),
			     &s->n_netdevs, err)) < 0)
		return r;
	return 0;
}

int rn_dp_config_parse(const char *text, size_t len, struct rn_dp_config *cfg, struct rn_error *err)
{
	static const char *const keys[] = { "resourcePrefix", "cdiKind", "pools", NULL };
	char prefix[64] = RN_DP_DEFAULT_PREFIX;
	_cleanup_json_ json_t *root = NULL;
	json_error_t jerr;
	json_t *pools, *p;
	size_t i;
	int r;

	rn_dp_config_default(cfg);
	root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return rn_error_set(err, EINVAL, "not JSON: %s (line %d, column %d)", jerr.text,
				    jerr.line, jerr.column);
	if (!json_is_object(root))
		return rn_error_set(err, EINVAL, "the configuration must be a JSON object");
	if ((r = unknown_keys(root, keys, "the configuration", err)) < 0 ||
	    (r = get_string(root, "resourcePrefix", "the configuration", prefix, sizeof(prefix),
			    err)) < 0 ||
	    (r = get_string(root, "cdiKind", "the configuration", cfg->cdi_kind,
			    sizeof(cfg->cdi_kind), err)) < 0)
		return r;
	if (!strchr(cfg->cdi_kind, '/'))
		return rn_error_set(err, EINVAL, "cdiKind '%s' is not VENDOR/CLASS", cfg->cdi_kind);
	(void)rn_snprintf(cfg->pools[0].resource, sizeof(cfg->pools[0].resource), "%s/%s", prefix,
			  cfg->pools[0].name);
	pools = json_object_get(root, "pools");
	if (!pools)
		return 0;
	if (!json_is_array(pools) || json_array_size(pools) == 0)
		return rn_error_set(err, EINVAL, "'pools' must be a list of at least one pool");
	if (json_array_size(pools) > RN_DP_MAX_POOLS)
		return rn_error_set(err, EINVAL, "more than %d pools", RN_DP_MAX_POOLS);
	memset(cfg->pools, 0, sizeof(cfg->pools));
	json_array_foreach (pools, i, p) {
		if ((r = pool_read(p, i, prefix, &cfg->pools[i], err)) < 0)
			return r;
		for (size_t j = 0; j < i; j++)
			if (!strcmp(cfg->pools[j].name, cfg->pools[i].name))
				return rn_error_set(err, EINVAL,
						    "pools[%zu] and pools[%zu] are both "
						    "named '%s'",
						    j, i, cfg->pools[i].name);
	}
	cfg->n_pools = json_array_size(pools);
	return 0;
}
