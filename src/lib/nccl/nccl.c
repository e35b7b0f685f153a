// SPDX-License-Identifier: Apache-2.0
/*
 * The NCCL resolver's vocabulary: profiles, override layers, NCCL versions,
 * NCCL's name lists, and the result with its provenance. The rules that read
 * a node are nccl_rules.c, their order and the modes nccl_resolve.c.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmans/cleanup.h"
#include "rdmans/nccl.h"
#include "rdmans/sysfs.h"
#include "rdmans/util.h"

/* ---- profiles ---- */

static const struct rn_nccl_preset roce_values[] = {
	{ "NCCL_IB_DISABLE", "0" },
};

static const struct rn_nccl_preset ib_values[] = {
	{ "NCCL_IB_DISABLE", "0" },
};

/* Baidu CCE: what it injects into PID 1 (HCA and GID index are detected). */
static const struct rn_nccl_preset baidu_values[] = {
	{ "NCCL_IB_DISABLE", "0" },
	{ "NCCL_SOCKET_IFNAME", "eth0" },
	{ "NCCL_IB_TIMEOUT", "22" },
	{ "NCCL_IB_QPS_PER_CONNECTION", "8" },
};

/* Scnet's preset table (NCCL_DEBUG=INFO left out: logging is the job's choice). */
static const struct rn_nccl_preset scnet_values[] = {
	{ "NCCL_IB_DISABLE", "0" },
	{ "NCCL_IB_HCA", "mlx5" },
	{ "NCCL_IB_GID_INDEX", "3" },
	{ "NCCL_SOCKET_IFNAME", "eth" },
	{ "NCCL_IB_TC", "136" },
	{ "NCCL_IB_TIMEOUT", "22" },
	{ "NCCL_IB_QPS_PER_CONNECTION", "8" },
};

/* Alibaba PAI's eRDMA variables (NCCL >= 2.19). */
static const struct rn_nccl_preset erdma_values[] = {
	{ "NCCL_IB_DISABLE", "0" },
	{ "NCCL_IB_HCA", "erdma" },
	{ "NCCL_IB_GID_INDEX", "1" },
	{ "NCCL_SOCKET_IFNAME", "eth0" },
	{ "NCCL_IB_QPS_PER_CONNECTION", "8" },
	{ "NCCL_MIN_NCHANNELS", "16" },
	{ "NCCL_NET_PLUGIN", "none" },
};

#define PROFILE(n, t, v)                                                                           \
	{                                                                                          \
		n, t, v, RN_ARRAY_SIZE(v)                                                          \
	}

static const struct rn_nccl_profile profiles[] = {
	PROFILE("roce", "generic RoCE: devices, GID index and interface all detected", roce_values),
	PROFILE("ib", "InfiniBand: devices detected, no GID index", ib_values),
	PROFILE("baidu-cce", "Baidu AI Cloud CCE: timeout 22, 8 QPs per connection, eth0",
		baidu_values),
	PROFILE("scnet", "Scnet: traffic class 136, timeout 22, 8 QPs per connection",
		scnet_values),
	PROFILE("alibaba-erdma",
		"Alibaba Cloud PAI eRDMA: 8 QPs per connection, 16 channels, no net "
		"plugin",
		erdma_values),
};

const struct rn_nccl_profile *rn_nccl_profile_at(size_t i)
{
	return i < RN_ARRAY_SIZE(profiles) ? &profiles[i] : NULL;
}

const struct rn_nccl_profile *rn_nccl_profile_find(const char *name)
{
	for (size_t i = 0; name && i < RN_ARRAY_SIZE(profiles); i++)
		if (strcmp(profiles[i].name, name) == 0)
			return &profiles[i];
	return NULL;
}

int rn_nccl_profile_check(const char *name, struct rn_error *err)
{
	char list[256] = "auto";

	if (name && (strcmp(name, "auto") == 0 || rn_nccl_profile_find(name)))
		return 0;
	for (size_t i = 0; i < RN_ARRAY_SIZE(profiles); i++)
		rn_strappend(list, sizeof(list), ", %s", profiles[i].name);
	return rn_error_set(err, EINVAL, "unknown NCCL profile '%s' (profiles: %s)",
			    name ? name : "", list);
}

const char *rn_nccl_source_name(enum rn_nccl_source source)
{
	static const char *const names[] = {
		[RN_NCCL_SRC_PROFILE] = "profile",	 [RN_NCCL_SRC_DETECTED] = "detected",
		[RN_NCCL_SRC_CONFIG] = "config",	 [RN_NCCL_SRC_CNI] = "cni",
		[RN_NCCL_SRC_ANNOTATION] = "annotation", [RN_NCCL_SRC_OPTION] = "option",
	};

	return RN_NAME_OF(names, source, "?");
}

int rn_nccl_cidr_parse(const char *cidr, int *family, uint8_t raw[16], int *plen)
{
	char ip[RN_CIDR_MAX];
	const char *slash = strchr(cidr, '/');
	size_t len = slash ? (size_t)(slash - cidr) : strlen(cidr);
	struct in_addr a4;
	struct in6_addr a6;
	int max;
	char *end;
	long l;

	if (len == 0 || len >= sizeof(ip))
		return -EINVAL;
	memcpy(ip, cidr, len);
	ip[len] = '\0';
	if (inet_pton(AF_INET, ip, &a4) == 1) {
		*family = AF_INET;
		memset(raw, 0, 16);
		raw[10] = raw[11] = 0xff;
		memcpy(raw + 12, &a4, 4);
		max = 32;
	} else if (inet_pton(AF_INET6, ip, &a6) == 1) {
		*family = AF_INET6;
		memcpy(raw, a6.s6_addr, 16);
		max = 128;
	} else {
		return -EINVAL;
	}
	if (!slash) {
		*plen = max;
		return 0;
	}
	errno = 0;
	l = strtol(slash + 1, &end, 10);
	if (errno || *end || end == slash + 1 || l < 0 || l > max)
		return -EINVAL;
	*plen = (int)l;
	return 0;
}

/* ---- layers ---- */

void rn_nccl_layer_init(struct rn_nccl_layer *l, enum rn_nccl_source source, const char *origin)
{
	memset(l, 0, sizeof(*l));
	l->source = source;
	(void)rn_strscpy(l->origin, sizeof(l->origin), origin ? origin : "");
}

void rn_nccl_layer_free(struct rn_nccl_layer *l)
{
	if (!l)
		return;
	free(l->kv);
	l->kv = NULL;
	l->n = 0;
}

void rn_nccl_layer_label(const struct rn_nccl_layer *l, char *buf, size_t len)
{
	if (!l->origin[0] && l->source == RN_NCCL_SRC_OPTION)
		(void)rn_snprintf(buf, len, "the command line");
	else
		(void)rn_snprintf(buf, len, "%s%s%s", rn_nccl_source_name(l->source),
				  l->origin[0] ? " " : "", l->origin);
}

bool rn_nccl_name_valid(const char *name)
{
	size_t len;

	if (!name || strncmp(name, "NCCL_", 5) != 0)
		return false;
	len = strlen(name);
	if (len == 5 || len >= RN_NCCL_NAME_MAX)
		return false;
	for (const char *p = name; *p; p++)
		if (!(isupper((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '_'))
			return false;
	return true;
}

int rn_nccl_layer_set(struct rn_nccl_layer *l, const char *name, const char *value,
		      struct rn_error *err)
{
	struct rn_nccl_kv *kv = NULL;
	char label[RN_NCCL_ORIGIN_MAX + 16];

	rn_nccl_layer_label(l, label, sizeof(label));
	if (!rn_nccl_name_valid(name))
		return rn_error_set(err, EINVAL,
				    "%s: '%s' is not an NCCL variable name (NCCL_ followed by "
				    "A-Z, 0-9 or _)",
				    label, name ? name : "");
	if (value && (strlen(value) >= RN_NCCL_VALUE_MAX || strpbrk(value, "\n\r")))
		return rn_error_set(err, EINVAL,
				    "%s: value of %s must be one line shorter than %d bytes", label,
				    name, RN_NCCL_VALUE_MAX);
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->kv[i].name, name) == 0)
			kv = &l->kv[i];
	if (!kv) {
		if (RN_GROW(l->kv, NULL, l->n + 1) < 0)
			return rn_error_set(err, ENOMEM, "out of memory");
		kv = &l->kv[l->n++];
	}
	memset(kv, 0, sizeof(*kv));
	(void)rn_strscpy(kv->name, sizeof(kv->name), name);
	if (value)
		(void)rn_strscpy(kv->value, sizeof(kv->value), value);
	kv->unset = !value;
	return 0;
}

int rn_nccl_layer_set_arg(struct rn_nccl_layer *l, const char *arg, struct rn_error *err)
{
	const char *eq = strchr(arg, '=');
	char name[RN_NCCL_NAME_MAX];
	size_t len = eq ? (size_t)(eq - arg) : strlen(arg);

	if (len >= sizeof(name))
		return rn_error_set(err, EINVAL, "'%s' is not NAME=VALUE with an NCCL_ name", arg);
	memcpy(name, arg, len);
	name[len] = '\0';
	return rn_nccl_layer_set(l, name, eq ? eq + 1 : NULL, err);
}

int rn_nccl_layer_set_profile(struct rn_nccl_layer *l, const char *profile, struct rn_error *err)
{
	char label[RN_NCCL_ORIGIN_MAX + 16];
	int r = rn_nccl_profile_check(profile, err);

	rn_nccl_layer_label(l, label, sizeof(label));
	if (r < 0)
		return rn_error_wrap(err, "%s", label);
	(void)rn_strscpy(l->profile, sizeof(l->profile), profile);
	return 0;
}

int rn_nccl_layer_set_family(struct rn_nccl_layer *l, const char *family, struct rn_error *err)
{
	char label[RN_NCCL_ORIGIN_MAX + 16];

	rn_nccl_layer_label(l, label, sizeof(label));
	if (!family || (strcmp(family, "ipv4") && strcmp(family, "ipv6") && strcmp(family, "auto")))
		return rn_error_set(err, EINVAL,
				    "%s: address family '%s' is not ipv4, ipv6 or auto (auto: IPv4 "
				    "when the RDMA netdevs have IPv4 addresses, else IPv6)",
				    label, family ? family : "");
	(void)rn_strscpy(l->family, sizeof(l->family), family);
	return 0;
}

int rn_nccl_layer_set_version(struct rn_nccl_layer *l, const char *version, struct rn_error *err)
{
	char label[RN_NCCL_ORIGIN_MAX + 16];
	struct rn_nccl_version v;
	int r;

	rn_nccl_layer_label(l, label, sizeof(label));
	r = rn_nccl_version_parse(version, &v, err);
	if (r < 0)
		return rn_error_wrap(err, "%s", label);
	(void)rn_snprintf(l->nccl_version, sizeof(l->nccl_version), "%u.%u.%u", v.major, v.minor,
			  v.patch);
	return 0;
}

/* ---- NCCL versions ---- */

int rn_nccl_version_parse(const char *text, struct rn_nccl_version *out, struct rn_error *err)
{
	unsigned v[3] = { 0, 0, 0 };
	const char *p = text;

	memset(out, 0, sizeof(*out));
	for (int i = 0; i < 3; i++) {
		char *end;
		unsigned long n;

		if (!p || !isdigit((unsigned char)*p))
			goto bad;
		errno = 0;
		n = strtoul(p, &end, 10);
		if (errno || n > 9999 || end - p > 4)
			goto bad;
		v[i] = (unsigned)n;
		p = end;
		if (i < 2) {
			if (*p != '.')
				goto bad;
			p++;
		}
	}
	/* NCCL's own suffixes: "2.21.5-1" (packages), "2.21.5+cuda12.4" (its banner) */
	if (*p && *p != '-' && *p != '+')
		goto bad;
	if (v[0] != 2)
		goto bad;
	out->major = v[0];
	out->minor = v[1];
	out->patch = v[2];
	return 0;
bad:
	return rn_error_set(err, EINVAL, "'%s' is not an NCCL version (2.MINOR.PATCH, e.g. 2.21.5)",
			    text ? text : "");
}

enum rn_nccl_ver_class rn_nccl_version_class(const struct rn_nccl_version *v)
{
	if (!v || v->major == 0)
		return RN_NCCL_VER_UNKNOWN;
	if (v->minor <= 20)
		return RN_NCCL_VER_FIXED;
	if (v->minor < 26 || (v->minor == 26 && v->patch < 2))
		return RN_NCCL_VER_AUTO;
	return RN_NCCL_VER_AUTO_SPARSE;
}

const char *rn_nccl_ver_class_desc(enum rn_nccl_ver_class c)
{
	static const char *const descs[] = {
		[RN_NCCL_VER_FIXED] =
			"NCCL <= 2.20 uses GID index 0 unless NCCL_IB_GID_INDEX names "
			"one",
		[RN_NCCL_VER_AUTO] =
			"NCCL 2.21-2.26.1 picks the RoCE v2 GID of NCCL_IB_ADDR_FAMILY "
			"in NCCL_IB_ADDR_RANGE itself, but aborts on an empty slot of a "
			"sparse GID table",
		[RN_NCCL_VER_AUTO_SPARSE] =
			"NCCL >= 2.26.2 picks the RoCE v2 GID of "
			"NCCL_IB_ADDR_FAMILY in NCCL_IB_ADDR_RANGE itself, sparse "
			"GID tables included",
	};

	return RN_NAME_OF(descs, c,
			  "settings that are right for every version (NCCL <= 2.20 uses GID index "
			  "0 unless NCCL_IB_GID_INDEX names one)");
}

/* ---- NCCL's name lists ---- */

void rn_nccl_list_parse(const char *value, struct rn_nccl_list *l)
{
	char buf[RN_NCCL_VALUE_MAX], *save = NULL;

	memset(l, 0, sizeof(*l));
	if (*value == '^') {
		l->exclude = true;
		value++;
	}
	if (*value == '=') {
		l->exact = true;
		value++;
	}
	(void)rn_strscpy(buf, sizeof(buf), value);
	for (char *tok = strtok_r(buf, ",", &save); tok && l->n < RN_ARRAY_SIZE(l->v);
	     tok = strtok_r(NULL, ",", &save)) {
		struct rn_nccl_list_entry *e = &l->v[l->n];
		char *colon = strchr(tok, ':');

		e->port = -1;
		if (colon) {
			*colon = '\0';
			if (colon[1] && colon[1] != ':')
				e->port = atol(colon + 1);
		}
		if (!tok[0])
			continue; /* NCCL skips an entry with no name */
		(void)rn_strscpy(e->name, sizeof(e->name), tok);
		l->n++;
	}
}

bool rn_nccl_list_entry_matches(const struct rn_nccl_list *l, size_t i, const char *name, long port)
{
	const struct rn_nccl_list_entry *e = &l->v[i];
	bool name_ok = l->exact ? strcmp(name, e->name) == 0
				: strncmp(name, e->name, strlen(e->name)) == 0;

	return name_ok && (e->port == -1 || port == -1 || e->port == port);
}

bool rn_nccl_list_takes(const struct rn_nccl_list *l, const char *name, long port)
{
	bool match = l->n == 0; /* NCCL: no entry at all matches everything */

	for (size_t i = 0; i < l->n && !match; i++)
		match = rn_nccl_list_entry_matches(l, i, name, port);
	return match != l->exclude;
}

/* ---- the result ---- */

void rn_nccl_result_free(struct rn_nccl_result *res)
{
	if (!res)
		return;
	free(res->v);
	free(res->unset);
	free(res->ports);
	free(res->warnings);
	memset(res, 0, sizeof(*res));
}

const struct rn_nccl_setting *rn_nccl_result_get(const struct rn_nccl_result *res, const char *name)
{
	for (size_t i = 0; i < res->n; i++)
		if (strcmp(res->v[i].name, name) == 0)
			return &res->v[i];
	return NULL;
}

int rn_nccl_result_warn(struct rn_nccl_result *res, const char *fmt, ...)
{
	va_list ap;

	if (RN_GROW(res->warnings, NULL, res->n_warnings + 1) < 0)
		return -ENOMEM;
	va_start(ap, fmt);
	vsnprintf(res->warnings[res->n_warnings++], RN_NCCL_DETAIL_MAX, fmt, ap);
	va_end(ap);
	return 0;
}

static struct rn_nccl_setting *find_setting(struct rn_nccl_result *res, const char *name)
{
	return (struct rn_nccl_setting *)rn_nccl_result_get(res, name);
}

int rn_nccl_result_put(struct rn_nccl_result *res, const char *name, const char *value,
		       enum rn_nccl_source source, const char *origin, const char *detail)
{
	struct rn_nccl_setting *s = find_setting(res, name);
	char replaced[RN_NCCL_DETAIL_MAX] = "";

	if (s) {
		if (strcmp(s->value, value) != 0)
			(void)rn_snprintf(replaced, sizeof(replaced), "%s: %s", s->origin,
					  s->value);
		else if (s->replaced[0])
			(void)rn_strscpy(replaced, sizeof(replaced), s->replaced);
	} else {
		if (RN_GROW(res->v, NULL, res->n + 1) < 0)
			return -ENOMEM;
		s = &res->v[res->n++];
	}
	memset(s, 0, sizeof(*s));
	(void)rn_strscpy(s->name, sizeof(s->name), name);
	(void)rn_strscpy(s->value, sizeof(s->value), value);
	s->source = source;
	(void)rn_strscpy(s->origin, sizeof(s->origin), origin);
	(void)rn_strscpy(s->detail, sizeof(s->detail), detail ? detail : "");
	(void)rn_strscpy(s->replaced, sizeof(s->replaced), replaced);
	return 0;
}

int rn_nccl_result_drop(struct rn_nccl_result *res, const char *name, const char *origin,
			const char *detail)
{
	struct rn_nccl_setting *s = find_setting(res, name);
	struct rn_nccl_setting *u;

	if (!s)
		return 0;
	if (RN_GROW(res->unset, NULL, res->n_unset + 1) < 0)
		return -ENOMEM;
	u = &res->unset[res->n_unset++];
	*u = *s;
	(void)rn_snprintf(u->replaced, sizeof(u->replaced), "%s: %s", s->origin, s->value);
	(void)rn_strscpy(u->origin, sizeof(u->origin), origin);
	(void)rn_strscpy(u->detail, sizeof(u->detail), detail ? detail : "");
	*s = res->v[--res->n];
	return 0;
}

static const char *const key_order[] = {
	"NCCL_IB_DISABLE",     "NCCL_IB_HCA",	     "NCCL_IB_GID_INDEX",
	"NCCL_IB_ADDR_FAMILY", "NCCL_IB_ADDR_RANGE", "NCCL_IB_ROCE_VERSION_NUM",
	"NCCL_SOCKET_IFNAME",  "NCCL_SOCKET_FAMILY",
};

static size_t key_rank(const char *name)
{
	for (size_t i = 0; i < RN_ARRAY_SIZE(key_order); i++)
		if (strcmp(key_order[i], name) == 0)
			return i;
	return RN_ARRAY_SIZE(key_order);
}

static int cmp_setting(const void *a, const void *b)
{
	const struct rn_nccl_setting *x = a, *y = b;
	size_t rx = key_rank(x->name), ry = key_rank(y->name);

	if (rx != ry)
		return rx < ry ? -1 : 1;
	return strcmp(x->name, y->name);
}

void rn_nccl_result_sort(struct rn_nccl_result *res)
{
	if (res->n > 1)
		qsort(res->v, res->n, sizeof(*res->v), cmp_setting);
}
