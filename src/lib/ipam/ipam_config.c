// SPDX-License-Identifier: Apache-2.0
/*
 * IPAM configuration: whereabouts' keys (range, range_start, range_end,
 * exclude, gateway, routes, dns, ipRanges, network_name,
 * enable_overlapping_ranges, log_file, log_level, configuration_path, the
 * old etcd_* keys) plus store, dataDir, etcd {...} and node_name. A config
 * parser, so jansson lives here; the rest of the library sees our types.
 */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rdmans/cleanup.h"
#include "rdmans/ipam_config.h"
#include "rdmans/util.h"
#include "rdmans/json_cleanup.h"

#define MAX_FILE (1024 * 1024)

/* Flat files, searched in this order after configuration_path (whereabouts' list + ours). */
static const char *const flat_files[] = {
	"/etc/kubernetes/cni/net.d/rdma-netns-ipam.d/rdma-netns-ipam.conf",
	"/etc/kubernetes/cni/net.d/whereabouts.d/whereabouts.conf",
	"/etc/cni/net.d/rdma-netns-ipam.d/rdma-netns-ipam.conf",
	"/etc/cni/net.d/whereabouts.d/whereabouts.conf",
	"/host/etc/cni/net.d/rdma-netns-ipam.d/rdma-netns-ipam.conf",
	"/host/etc/cni/net.d/whereabouts.d/whereabouts.conf",
};

void rn_ipam_config_free(struct rn_ipam_config *c)
{
	if (!c)
		return;
	free(c->cni_version);
	free(c->network);
	free(c->network_name);
	free(c->scope);
	for (size_t i = 0; i < c->n_ranges; i++)
		rn_ipam_range_free(&c->ranges[i]);
	free(c->routes_json);
	free(c->dns_json);
	free(c->log_file);
	free(c->flat_file);
	free(c->data_dir);
	for (size_t i = 0; i < c->etcd.n_endpoints; i++)
		free(c->etcd.endpoints[i]);
	free(c->etcd.endpoints);
	free(c->etcd.ca_file);
	free(c->etcd.cert_file);
	free(c->etcd.key_file);
	free(c->etcd.username);
	if (c->etcd.password) {
		explicit_bzero(c->etcd.password, strlen(c->etcd.password));
		free(c->etcd.password);
	}
	free(c->etcd.key_prefix);
	free(c->kubernetes.kubeconfig);
	free(c->node);
	memset(c, 0, sizeof(*c));
}

static int read_file(const char *path, char **ret, struct rn_error *err)
{
	return rn_read_regular(path, MAX_FILE, NULL, ret, NULL, err);
}

/* A string member, or NULL; -EINVAL (with err) when present but not a string. */
static int get_str(json_t *obj, const char *where, const char *key, const char **ret,
		   struct rn_error *err)
{
	json_t *v = json_object_get(obj, key);

	*ret = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return rn_error_set(err, EINVAL, "%s%s must be a string", where, key);
	*ret = json_string_value(v);
	return 0;
}

static int dup_str(json_t *obj, const char *where, const char *key, char **ret,
		   struct rn_error *err)
{
	const char *v;
	int r = get_str(obj, where, key, &v, err);

	if (r < 0 || !v || !*v)
		return r;
	free(*ret);
	*ret = strdup(v);
	return *ret ? 0 : rn_error_set(err, ENOMEM, "out of memory");
}

/* Fills keys missing from dst with src's; objects one level deep (etcd: {...}). */
static void merge_missing(json_t *dst, json_t *src)
{
	const char *key;
	json_t *v;

	json_object_foreach (src, key, v) {
		json_t *mine = json_object_get(dst, key);

		if (!mine)
			json_object_set(dst, key, v);
		else if (json_is_object(mine) && json_is_object(v))
			json_object_update_missing(mine, v);
	}
}

/* configuration_path, else the first flat file that exists; merged into ipam. */
static int merge_flat_file(json_t *ipam, const char *root, char **ret_path, struct rn_error *err)
{
	_cleanup_json_ json_t *flat = NULL;
	_cleanup_free_ char *text = NULL;
	char path[PATH_MAX] = "";
	const char *explicit_path;
	json_error_t jerr;
	int r;

	r = get_str(ipam, "ipam.", "configuration_path", &explicit_path, err);
	if (r < 0)
		return r;
	if (explicit_path && *explicit_path) {
		if (access(explicit_path, R_OK) < 0)
			return rn_error_errno(err, errno, "ipam.configuration_path %s",
					      explicit_path);
		snprintf(path, sizeof(path), "%s", explicit_path);
	} else {
		for (size_t i = 0; i < RN_ARRAY_SIZE(flat_files); i++) {
			char p[PATH_MAX];

			if (rn_path(p, sizeof(p), "%s%s", root ? root : "", flat_files[i]) < 0)
				continue;
			if (access(p, F_OK) == 0) {
				snprintf(path, sizeof(path), "%s", p);
				break;
			}
		}
	}
	if (!path[0])
		return 0;
	r = read_file(path, &text, err);
	if (r < 0)
		return r;
	flat = json_loads(text, 0, &jerr);
	if (!flat || !json_is_object(flat))
		return rn_error_set(err, EINVAL,
				    "configuration file %s is not a JSON object: %s "
				    "(line %d)",
				    path, flat ? "not an object" : jerr.text, jerr.line);
	/* a flat file may hold the ipam object itself or a whole network config */
	if (json_is_object(json_object_get(flat, "ipam")))
		merge_missing(ipam, json_object_get(flat, "ipam"));
	else
		merge_missing(ipam, flat);
	*ret_path = strdup(path);
	return *ret_path ? 0 : rn_error_set(err, ENOMEM, "out of memory");
}

/* Strings of an array member, borrowed from the JSON. */
static int get_str_array(json_t *obj, const char *where, const char *key, const char ***ret,
			 size_t *ret_n, struct rn_error *err)
{
	json_t *a = json_object_get(obj, key), *v;
	const char **list;
	size_t i;

	*ret = NULL;
	*ret_n = 0;
	if (!a || json_is_null(a))
		return 0;
	if (!json_is_array(a))
		return rn_error_set(err, EINVAL, "%s%s must be a list of strings", where, key);
	list = calloc(json_array_size(a) + 1, sizeof(*list));
	if (!list)
		return rn_error_set(err, ENOMEM, "out of memory");
	json_array_foreach (a, i, v) {
		if (!json_is_string(v)) {
			free(list);
			return rn_error_set(err, EINVAL, "%s%s[%zu] must be a string", where, key,
					    i);
		}
		list[i] = json_string_value(v);
	}
	*ret = list;
	*ret_n = json_array_size(a);
	return 0;
}

static int add_range(struct rn_ipam_config *c, json_t *obj, const char *where,
		     const char *default_gateway, bool top, struct rn_error *err)
{
	struct rn_ipam_range_spec spec = { 0 };
	_cleanup_free_ const char **exclude = NULL;
	int r;

	if (c->n_ranges >= RN_IPAM_MAX_RANGES)
		return rn_error_set(err, EINVAL, "too many ranges (at most %d)",
				    RN_IPAM_MAX_RANGES);
	r = get_str(obj, where, "range", &spec.range, err);
	if (r == 0)
		r = get_str(obj, where, "range_start", &spec.range_start, err);
	if (r == 0)
		r = get_str(obj, where, "range_end", &spec.range_end, err);
	if (r == 0 && !top)
		r = get_str(obj, where, "gateway", &spec.gateway, err);
	if (r == 0)
		r = get_str_array(obj, where, "exclude", &exclude, &spec.n_exclude, err);
	if (r < 0)
		return r;
	if (!spec.gateway)
		spec.gateway = default_gateway;
	spec.exclude = exclude;
	r = rn_ipam_range_init(&c->ranges[c->n_ranges], &spec, err);
	if (r < 0)
		return rn_error_wrap(err, "%srange", where);
	c->n_ranges++;
	return 0;
}

static int parse_ranges(struct rn_ipam_config *c, json_t *ipam, struct rn_error *err)
{
	const char *range = NULL, *gateway = NULL;
	json_t *list, *item;
	size_t i;
	int r;

	r = get_str(ipam, "ipam.", "range", &range, err);
	if (r == 0)
		r = get_str(ipam, "ipam.", "gateway", &gateway, err);
	if (r < 0)
		return r;
	if (gateway && *gateway) {
		struct rn_ip gw;

		if (rn_ip_parse(gateway, &gw) < 0)
			return rn_error_set(err, EINVAL, "ipam.gateway '%s' is not an IP address",
					    gateway);
	}
	if (range && *range) {
		r = add_range(c, ipam, "ipam.", gateway, true, err);
		if (r < 0)
			return r;
	}
	list = json_object_get(ipam, "ipRanges");
	if (list && !json_is_null(list) && !json_is_array(list))
		return rn_error_set(err, EINVAL, "ipam.ipRanges must be a list of objects");
	json_array_foreach (list, i, item) {
		char where[48];

		snprintf(where, sizeof(where), "ipam.ipRanges[%zu].", i);
		if (!json_is_object(item))
			return rn_error_set(err, EINVAL, "%s must be an object", where);
		r = add_range(c, item, where, gateway, false, err);
		if (r < 0)
			return r;
	}
	if (c->n_ranges == 0)
		return rn_error_set(err, EINVAL,
				    "no range: set ipam.range (\"10.56.0.0/16\") or ipam.ipRanges");
	if (gateway && *gateway) {
		bool inside = false;

		for (size_t k = 0; k < c->n_ranges; k++)
			inside = inside || c->ranges[k].has_gateway;
		if (!inside)
			return rn_error_set(
				err, EINVAL,
				"ipam.gateway %s is outside every range (a gateway must "
				"be on the pods' subnet)",
				gateway);
	}
	return 0;
}

static int parse_routes_dns(struct rn_ipam_config *c, json_t *ipam, struct rn_error *err)
{
	json_t *routes = json_object_get(ipam, "routes"), *dns = json_object_get(ipam, "dns"), *rt;
	size_t i;

	if (routes && !json_is_null(routes)) {
		if (!json_is_array(routes))
			return rn_error_set(err, EINVAL, "ipam.routes must be a list");
		json_array_foreach (routes, i, rt) {
			const char *dst = json_string_value(json_object_get(rt, "dst"));
			const char *gw = json_string_value(json_object_get(rt, "gw"));
			struct rn_ip ip;
			unsigned prefix;

			if (!json_is_object(rt) || !dst || rn_cidr_parse(dst, &ip, &prefix) < 0)
				return rn_error_set(err, EINVAL,
						    "ipam.routes[%zu] needs \"dst\" as a CIDR "
						    "(\"0.0.0.0/0\")",
						    i);
			if (json_object_get(rt, "gw") && (!gw || rn_ip_parse(gw, &ip) < 0))
				return rn_error_set(err, EINVAL,
						    "ipam.routes[%zu].gw is not an IP address", i);
		}
		c->routes_json = json_dumps(routes, JSON_COMPACT);
		if (!c->routes_json)
			return rn_error_set(err, ENOMEM, "out of memory");
	}
	if (dns && !json_is_null(dns)) {
		if (!json_is_object(dns))
			return rn_error_set(err, EINVAL, "ipam.dns must be an object");
		c->dns_json = json_dumps(dns, JSON_COMPACT);
		if (!c->dns_json)
			return rn_error_set(err, ENOMEM, "out of memory");
	}
	return 0;
}

/*
 * Where the userinfo ("user:password@") of the URL text[0..len) is: *at and
 * *n (0 when none). The authority runs from after "://" (or the start) to
 * the first '/', '?' or '#'; its last '@' ends the userinfo.
 */
static void endpoint_userinfo(const char *text, size_t len, size_t *at, size_t *n)
{
	const char *scheme = memmem(text, len, "://", 3);
	size_t start = scheme ? (size_t)(scheme - text) + 3 : 0, end = start;

	*at = start;
	*n = 0;
	while (end < len && !strchr("/?#", text[end]))
		end++;
	for (size_t i = end; i > start; i--)
		if (text[i - 1] == '@') {
			*n = i - start;
			return;
		}
}

/* The endpoint for a message: its userinfo, if any, as "***@". */
static void endpoint_redacted(const char *text, size_t len, char *buf, size_t size)
{
	size_t at, n;

	endpoint_userinfo(text, len, &at, &n);
	if (n == 0)
		snprintf(buf, size, "%.*s", (int)len, text);
	else
		snprintf(buf, size, "%.*s***@%.*s", (int)at, text, (int)(len - at - n),
			 text + at + n);
}

static int add_endpoint(struct rn_ipam_config *c, const char *text, size_t len, bool tls,
			struct rn_error *err)
{
	char shown[256];
	char *ep;
	size_t at, n;

	if (!text)
		return 0;
	while (len > 0 && (*text == ' ' || *text == '\t'))
		text++, len--;
	while (len > 0 && (text[len - 1] == ' ' || text[len - 1] == '\t'))
		len--;
	if (len == 0)
		return 0;
	/* a password in a URL ends up in logs and error messages: refused, never shown */
	endpoint_redacted(text, len, shown, sizeof(shown));
	endpoint_userinfo(text, len, &at, &n);
	if (n)
		return rn_error_set(err, EINVAL,
				    "etcd endpoint '%s' carries a user name or password: give them "
				    "with %s, and the endpoint without them",
				    shown, c->etcd.user_settings);
	if (memmem(text, len, "://", 3)) {
		if (strncmp(text, "http://", 7) != 0 && strncmp(text, "https://", 8) != 0)
			return rn_error_set(err, EINVAL,
					    "etcd endpoint '%s' must start with http:// or "
					    "https://",
					    shown);
		if (asprintf(&ep, "%.*s", (int)len, text) < 0)
			return rn_error_set(err, ENOMEM, "out of memory");
	} else if (asprintf(&ep, "%s://%.*s", tls ? "https" : "http", (int)len, text) < 0) {
		return rn_error_set(err, ENOMEM, "out of memory");
	}
	if (RN_GROW(c->etcd.endpoints, NULL, c->etcd.n_endpoints + 1) < 0) {
		free(ep);
		return rn_error_set(err, ENOMEM, "out of memory");
	}
	c->etcd.endpoints[c->etcd.n_endpoints++] = ep;
	return 0;
}

static int parse_endpoints(struct rn_ipam_config *c, json_t *v, const char *where, bool tls,
			   struct rn_error *err)
{
	json_t *item;
	size_t i;
	int r;

	if (json_is_string(v)) {
		const char *s = json_string_value(v);

		while (*s) {
			const char *comma = strchr(s, ',');
			size_t len = comma ? (size_t)(comma - s) : strlen(s);

			r = add_endpoint(c, s, len, tls, err);
			if (r < 0)
				return r;
			s += len + (comma ? 1 : 0);
		}
		return 0;
	}
	if (!json_is_array(v))
		return rn_error_set(err, EINVAL, "%s must be a list of URLs", where);
	json_array_foreach (v, i, item) {
		if (!json_is_string(item))
			return rn_error_set(err, EINVAL, "%s[%zu] must be a string", where, i);
		r = add_endpoint(c, json_string_value(item), strlen(json_string_value(item)), tls,
				 err);
		if (r < 0)
			return r;
	}
	return 0;
}

/* A string key and the config field its value goes to (strdup()ed; empty: left as it is). */
struct str_key {
	const char *key;
	char **to;
};

static int dup_keys(json_t *obj, const char *where, const struct str_key *keys, size_t n,
		    struct rn_error *err)
{
	for (size_t i = 0; i < n; i++) {
		int r = dup_str(obj, where, keys[i].key, keys[i].to, err);

		if (r < 0)
			return r;
	}
	return 0;
}

/* The etcd credentials: the old whereabouts keys first, then etcd {...} on top. */
static int parse_etcd_auth(struct rn_ipam_config *c, json_t *ipam, json_t *etcd,
			   struct rn_error *err)
{
	_cleanup_free_ char *password_file = NULL;
	const struct str_key whereabouts_keys[] = {
		{ "etcd_username", &c->etcd.username },	   { "etcd_password", &c->etcd.password },
		{ "etcd_key_file", &c->etcd.key_file },	   { "etcd_cert_file", &c->etcd.cert_file },
		{ "etcd_ca_cert_file", &c->etcd.ca_file },
	};
	const struct str_key etcd_keys[] = {
		{ "username", &c->etcd.username },     { "password", &c->etcd.password },
		{ "password_file", &password_file },   { "key_file", &c->etcd.key_file },
		{ "cert_file", &c->etcd.cert_file },   { "ca_file", &c->etcd.ca_file },
		{ "key_prefix", &c->etcd.key_prefix },
	};
	int r;

	r = dup_keys(ipam, "ipam.", whereabouts_keys, RN_ARRAY_SIZE(whereabouts_keys), err);
	if (r == 0 && etcd)
		r = dup_keys(etcd, "ipam.etcd.", etcd_keys, RN_ARRAY_SIZE(etcd_keys), err);
	if (r < 0)
		return r;
	if (password_file) {
		_cleanup_free_ char *pw = NULL;
		size_t len;

		r = read_file(password_file, &pw, err);
		if (r < 0)
			return rn_error_wrap(err, "ipam.etcd.password_file");
		len = strlen(pw);
		while (len > 0 && (pw[len - 1] == '\n' || pw[len - 1] == '\r'))
			pw[--len] = '\0';
		if (c->etcd.password) {
			explicit_bzero(c->etcd.password, strlen(c->etcd.password));
			free(c->etcd.password);
		}
		c->etcd.password = TAKE_PTR(pw);
	}
	if (c->etcd.password && !c->etcd.username)
		return rn_error_set(err, EINVAL,
				    "an etcd password is set but no etcd user name (%s)",
				    c->etcd.user_settings);
	if (c->etcd.key_file && !c->etcd.cert_file)
		return rn_error_set(err, EINVAL,
				    "an etcd client key is set but no client certificate "
				    "(cert_file / etcd_cert_file)");
	return 0;
}

/* Where etcd is (etcd_host; etcd.endpoints instead), how long to wait, under which prefix. */
static int parse_etcd_endpoints(struct rn_ipam_config *c, json_t *ipam, json_t *etcd,
				struct rn_error *err)
{
	json_t *host = json_object_get(ipam, "etcd_host");
	json_t *eps = etcd ? json_object_get(etcd, "endpoints") : NULL;
	json_t *timeout = etcd ? json_object_get(etcd, "timeout_ms") : NULL;
	json_t *deadline = etcd ? json_object_get(etcd, "deadline_ms") : NULL;
	bool tls = c->etcd.ca_file || c->etcd.cert_file;
	int r;

	if (host && !json_is_null(host)) {
		r = parse_endpoints(c, host, "ipam.etcd_host", tls, err);
		if (r < 0)
			return r;
	}
	if (eps && !json_is_null(eps)) {
		/* etcd.endpoints replaces etcd_host */
		for (size_t i = 0; i < c->etcd.n_endpoints; i++)
			free(c->etcd.endpoints[i]);
		c->etcd.n_endpoints = 0;
		r = parse_endpoints(c, eps, "ipam.etcd.endpoints", tls, err);
		if (r < 0)
			return r;
	}
	c->etcd.timeout_ms = 5000;
	if (timeout && !json_is_null(timeout)) {
		if (!json_is_integer(timeout) || json_integer_value(timeout) <= 0 ||
		    json_integer_value(timeout) > 600000)
			return rn_error_set(err, EINVAL,
					    "ipam.etcd.timeout_ms must be a number of milliseconds "
					    "(1..600000)");
		c->etcd.timeout_ms = (long)json_integer_value(timeout);
	}
	c->etcd.deadline_ms = RN_IPAM_ETCD_DEADLINE_MS;
	if (deadline && !json_is_null(deadline)) {
		if (!json_is_integer(deadline) || json_integer_value(deadline) < 0 ||
		    json_integer_value(deadline) > 3600000)
			return rn_error_set(
				err, EINVAL,
				"ipam.etcd.deadline_ms must be a number of milliseconds "
				"(1..3600000, or 0 for no bound)");
		c->etcd.deadline_ms = (long)json_integer_value(deadline);
	}
	if (c->etcd.key_prefix && c->etcd.key_prefix[0] != '/')
		return rn_error_set(err, EINVAL, "ipam.etcd.key_prefix '%s' must start with '/'",
				    c->etcd.key_prefix);
	return 0;
}

/* Which store: ipam.store, else what the endpoints and whereabouts' datastore say. */
static int parse_store_kind(struct rn_ipam_config *c, const char *store, const char *datastore,
			    struct rn_error *err)
{
	if (store && *store) {
		if (strcmp(store, "local") == 0)
			c->store = RN_IPAM_STORE_LOCAL;
		else if (strcmp(store, "etcd") == 0)
			c->store = RN_IPAM_STORE_ETCD;
		else if (strcmp(store, "kubernetes") == 0)
			c->store = RN_IPAM_STORE_KUBERNETES;
		else
			return rn_error_set(
				err, EINVAL,
				"ipam.store '%s' is unknown: use \"local\" (this node), "
				"\"kubernetes\" or \"etcd\" (cluster-wide)",
				store);
	} else if (c->etcd.n_endpoints || (datastore && strcmp(datastore, "etcd") == 0)) {
		c->store = RN_IPAM_STORE_ETCD;
	} else if ((datastore && strcmp(datastore, "kubernetes") == 0) ||
		   c->kubernetes.kubeconfig) {
		/* whereabouts' default datastore: its kubernetes.kubeconfig says where */
		c->store = RN_IPAM_STORE_KUBERNETES;
	} else {
		c->store = RN_IPAM_STORE_LOCAL;
	}
	if (c->store == RN_IPAM_STORE_ETCD && c->etcd.n_endpoints == 0)
		return rn_error_set(err, EINVAL,
				    "ipam.store is \"etcd\" but no endpoint is set (ipam.etcd."
				    "endpoints: [\"https://10.0.0.1:2379\"], or etcd_host)");
	if (c->store == RN_IPAM_STORE_KUBERNETES && !c->kubernetes.kubeconfig)
		return rn_error_set(err, EINVAL,
				    "the kubernetes store needs a kubeconfig: set ipam.kubernetes."
				    "kubeconfig to its path (the DaemonSet writes "
				    "/etc/cni/net.d/rdma-netns-ipam.d/rdma-netns-ipam.kubeconfig)");
	return 0;
}

/* The kubernetes store's settings: ipam.kubernetes {kubeconfig, timeout_ms, deadline_ms}. */
static int parse_kubernetes(struct rn_ipam_config *c, json_t *k8s, struct rn_error *err)
{
	const struct str_key keys[] = { { "kubeconfig", &c->kubernetes.kubeconfig } };
	json_t *timeout = json_object_get(k8s, "timeout_ms");
	json_t *deadline = json_object_get(k8s, "deadline_ms");
	int r;

	c->kubernetes.timeout_ms = 5000;
	c->kubernetes.deadline_ms = RN_IPAM_ETCD_DEADLINE_MS;
	if (!k8s)
		return 0;
	r = dup_keys(k8s, "ipam.kubernetes.", keys, RN_ARRAY_SIZE(keys), err);
	if (r < 0)
		return r;
	if (c->kubernetes.kubeconfig && c->kubernetes.kubeconfig[0] != '/')
		return rn_error_set(err, EINVAL,
				    "ipam.kubernetes.kubeconfig '%s' must be an absolute path",
				    c->kubernetes.kubeconfig);
	if (timeout && !json_is_null(timeout)) {
		if (!json_is_integer(timeout) || json_integer_value(timeout) <= 0 ||
		    json_integer_value(timeout) > 600000)
			return rn_error_set(err, EINVAL,
					    "ipam.kubernetes.timeout_ms must be a number of "
					    "milliseconds (1 to 600000)");
		c->kubernetes.timeout_ms = (long)json_integer_value(timeout);
	}
	if (deadline && !json_is_null(deadline)) {
		if (!json_is_integer(deadline) || json_integer_value(deadline) < 0 ||
		    json_integer_value(deadline) > 600000)
			return rn_error_set(err, EINVAL,
					    "ipam.kubernetes.deadline_ms must be a number of "
					    "milliseconds (0, no bound, to 600000)");
		c->kubernetes.deadline_ms = (long)json_integer_value(deadline);
	}
	return 0;
}

/* The local store's directory: ipam.dataDir (or data_dir), absolute. */
static int parse_data_dir(struct rn_ipam_config *c, json_t *ipam, struct rn_error *err)
{
	int r;

	r = dup_str(ipam, "ipam.", "dataDir", &c->data_dir, err);
	if (r == 0 && !c->data_dir)
		r = dup_str(ipam, "ipam.", "data_dir", &c->data_dir, err);
	if (r < 0)
		return r;
	if (!c->data_dir) {
		c->data_dir = strdup(RN_IPAM_DEFAULT_DATA_DIR);
		if (!c->data_dir)
			return rn_error_set(err, ENOMEM, "out of memory");
	}
	if (c->data_dir[0] != '/')
		return rn_error_set(err, EINVAL, "ipam.dataDir '%s' must be an absolute path",
				    c->data_dir);
	return 0;
}

static int parse_store(struct rn_ipam_config *c, json_t *ipam, struct rn_error *err)
{
	json_t *etcd = json_object_get(ipam, "etcd");
	json_t *k8s = json_object_get(ipam, "kubernetes");
	const char *store, *datastore;
	int r;

	r = get_str(ipam, "ipam.", "store", &store, err);
	if (r == 0)
		r = get_str(ipam, "ipam.", "datastore", &datastore, err);
	if (r < 0)
		return r;
	if (etcd && !json_is_null(etcd) && !json_is_object(etcd))
		return rn_error_set(err, EINVAL, "ipam.etcd must be an object");
	if (!json_is_object(etcd))
		etcd = NULL;
	if (k8s && !json_is_null(k8s) && !json_is_object(k8s))
		return rn_error_set(err, EINVAL, "ipam.kubernetes must be an object");
	if (!json_is_object(k8s))
		k8s = NULL;
	r = parse_etcd_auth(c, ipam, etcd, err);
	if (r == 0)
		r = parse_etcd_endpoints(c, ipam, etcd, err);
	if (r == 0)
		r = parse_kubernetes(c, k8s, err);
	if (r == 0)
		r = parse_store_kind(c, store, datastore, err);
	if (r == 0)
		r = parse_data_dir(c, ipam, err);
	return r;
}

static int parse_misc(struct rn_ipam_config *c, json_t *ipam, struct rn_error *err)
{
	const char *level = NULL, *node = NULL;
	json_t *overlap = json_object_get(ipam, "enable_overlapping_ranges");
	int r;

	r = dup_str(ipam, "ipam.", "network_name", &c->network_name, err);
	if (r == 0)
		r = dup_str(ipam, "ipam.", "log_file", &c->log_file, err);
	if (r == 0)
		r = get_str(ipam, "ipam.", "log_level", &level, err);
	if (r == 0)
		r = get_str(ipam, "ipam.", "node_name", &node, err);
	if (r < 0)
		return r;
	if (c->network_name) {
		r = rn_name_check("ipam.network_name", c->network_name, 200, err);
		if (r < 0)
			return r;
		if (c->network_name[0] == '.')
			return rn_error_set(err, EINVAL,
					    "ipam.network_name '%s' must not start "
					    "with '.'",
					    c->network_name);
	}
	c->scope = strdup(c->network_name ? c->network_name : RN_IPAM_DEFAULT_SCOPE);
	if (!c->scope)
		return rn_error_set(err, ENOMEM, "out of memory");

	c->overlapping = true;
	if (overlap && !json_is_null(overlap)) {
		if (!json_is_boolean(overlap))
			return rn_error_set(err, EINVAL,
					    "ipam.enable_overlapping_ranges must be true or false");
		c->overlapping = json_is_true(overlap);
	}

	c->log_level = RN_IPAM_LOG_ERROR;
	if (level && *level) {
		if (strcmp(level, "debug") == 0)
			c->log_level = RN_IPAM_LOG_DEBUG;
		else if (strcmp(level, "verbose") == 0 || strcmp(level, "info") == 0)
			c->log_level = RN_IPAM_LOG_INFO;
		else if (strcmp(level, "error") == 0 || strcmp(level, "panic") == 0)
			c->log_level = RN_IPAM_LOG_ERROR;
		else
			return rn_error_set(err, EINVAL,
					    "ipam.log_level '%s' is unknown: use debug, verbose or "
					    "error",
					    level);
	}

	if (!node || !*node)
		node = secure_getenv("NODENAME");
	if (node && *node) {
		c->node = strdup(node);
	} else {
		char host[256] = "";

		if (gethostname(host, sizeof(host) - 1) < 0 || !host[0])
			snprintf(host, sizeof(host), "unknown");
		c->node = strdup(host);
	}
	if (!c->node)
		return rn_error_set(err, ENOMEM, "out of memory");
	for (const char *p = c->node; *p; p++)
		if ((unsigned char)*p <= ' ' || *p == 0x7f)
			return rn_error_set(err, EINVAL,
					    "node name '%s' has spaces or control "
					    "characters",
					    c->node);
	return 0;
}

/* The ipam object of a network config, a conflist, or the document itself. */
static json_t *find_ipam(json_t *doc, json_t **ret_net)
{
	json_t *plugins = json_object_get(doc, "plugins"), *p, *fallback = NULL;
	size_t i;

	*ret_net = doc;
	if (json_is_object(json_object_get(doc, "ipam")))
		return json_object_get(doc, "ipam");
	if (json_is_array(plugins)) {
		json_array_foreach (plugins, i, p) {
			json_t *ipam = json_object_get(p, "ipam");
			const char *type = json_string_value(json_object_get(ipam, "type"));

			if (!json_is_object(ipam))
				continue;
			if (type && strcmp(type, RN_IPAM_PLUGIN_NAME) == 0)
				return ipam;
			if (!fallback)
				fallback = ipam;
		}
		if (fallback)
			return fallback;
	}
	return doc;
}

int rn_ipam_config_from_json(json_t *doc, const char *root, unsigned flags,
			     struct rn_ipam_config *ret, struct rn_error *err)
{
	_cleanup_json_ json_t *ipam = NULL;
	struct rn_ipam_config c = { 0 };
	json_t *net;
	int r;

	memset(ret, 0, sizeof(*ret));
	c.etcd.user_settings =
		(flags & RN_IPAM_CONFIG_CLI)
			? "--etcd-user and --etcd-password-file"
			: "ipam.etcd.username and ipam.etcd.password_file (or password)";
	if (!json_is_object(doc))
		return rn_error_set(err, EBADMSG, "the network configuration is not a JSON object");
	/* a copy: the flat file's keys are merged into it */
	ipam = json_deep_copy(find_ipam(doc, &net));
	if (!ipam)
		return rn_error_set(err, ENOMEM, "out of memory");

	r = dup_str(net, "", "cniVersion", &c.cni_version, err);
	if (r == 0)
		r = dup_str(net, "", "name", &c.network, err);
	if (r == 0 && !c.network)
		c.network = strdup("");
	if (r == 0 && !c.network)
		r = rn_error_set(err, ENOMEM, "out of memory");
	if (r == 0)
		r = merge_flat_file(ipam, root, &c.flat_file, err);
	if (r == 0)
		r = parse_misc(&c, ipam, err);
	if (r == 0)
		r = parse_store(&c, ipam, err);
	if (r == 0 && !(flags & RN_IPAM_CONFIG_STORE_ONLY))
		r = parse_ranges(&c, ipam, err);
	if (r == 0 && !(flags & RN_IPAM_CONFIG_STORE_ONLY))
		r = parse_routes_dns(&c, ipam, err);
	/* jansson's copy of a password in the document: scrub it */
	{
		json_t *e = json_object_get(ipam, "etcd");
		const char *pw = json_string_value(json_object_get(ipam, "etcd_password"));

		if (pw)
			explicit_bzero((char *)pw, strlen(pw));
		pw = json_string_value(json_object_get(e, "password"));
		if (pw)
			explicit_bzero((char *)pw, strlen(pw));
	}
	if (r < 0) {
		rn_ipam_config_free(&c);
		return r;
	}
	*ret = c;
	return 0;
}

int rn_ipam_config_parse(const char *json, const char *root, unsigned flags,
			 struct rn_ipam_config *ret, struct rn_error *err)
{
	_cleanup_json_ json_t *doc = NULL;
	json_error_t jerr;

	memset(ret, 0, sizeof(*ret));
	doc = json_loads(json ? json : "", 0, &jerr);
	if (!doc)
		return rn_error_set(err, EBADMSG,
				    "the network configuration is not JSON: %s (line "
				    "%d, column %d)",
				    jerr.text, jerr.line, jerr.column);
	return rn_ipam_config_from_json(doc, root, flags, ret, err);
}
