// SPDX-License-Identifier: Apache-2.0
/*
 * The NCCL resolver: profiles, override layers, and the rules that turn a
 * node (nccl_node.c probes it) into NCCL variables with their provenance.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rdmans/cleanup.h"
#include "rdmans/link.h"
#include "rdmans/nccl.h"
#include "rdmans/netns.h"
#include "rdmans/rdma_nl.h"
#include "rdmans/sysfs.h"
#include "rdmans/util.h"

/* ---- profiles ---- */

static const struct rn_nccl_preset roce_values[] = {
	{ "NCCL_IB_DISABLE", "0" },
};

static const struct rn_nccl_preset ib_values[] = {
	{ "NCCL_IB_DISABLE", "0" },
};

/* Doc 000: what CCE injects into PID 1 (HCA and GID index are detected). */
static const struct rn_nccl_preset baidu_values[] = {
	{ "NCCL_IB_DISABLE", "0" },
	{ "NCCL_SOCKET_IFNAME", "eth0" },
	{ "NCCL_IB_TIMEOUT", "22" },
	{ "NCCL_IB_QPS_PER_CONNECTION", "8" },
};

/* Doc 001: Scnet's preset table (NCCL_DEBUG=INFO left out: logging is the job's choice). */
static const struct rn_nccl_preset scnet_values[] = {
	{ "NCCL_IB_DISABLE", "0" },
	{ "NCCL_IB_HCA", "mlx5" },
	{ "NCCL_IB_GID_INDEX", "3" },
	{ "NCCL_SOCKET_IFNAME", "eth" },
	{ "NCCL_IB_TC", "136" },
	{ "NCCL_IB_TIMEOUT", "22" },
	{ "NCCL_IB_QPS_PER_CONNECTION", "8" },
};

/* Doc 004: PAI's eRDMA variables (NCCL >= 2.19). */
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
	switch (source) {
	case RN_NCCL_SRC_PROFILE:
		return "profile";
	case RN_NCCL_SRC_DETECTED:
		return "detected";
	case RN_NCCL_SRC_CONFIG:
		return "config";
	case RN_NCCL_SRC_CNI:
		return "cni";
	case RN_NCCL_SRC_ANNOTATION:
		return "annotation";
	case RN_NCCL_SRC_OPTION:
		return "option";
	}
	return "?";
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
	switch (c) {
	case RN_NCCL_VER_FIXED:
		return "NCCL <= 2.20 uses GID index 0 unless NCCL_IB_GID_INDEX names one";
	case RN_NCCL_VER_AUTO:
		return "NCCL 2.21-2.26.1 picks the RoCE v2 GID of NCCL_IB_ADDR_FAMILY in "
		       "NCCL_IB_ADDR_RANGE itself, but aborts on an empty slot of a sparse GID "
		       "table";
	case RN_NCCL_VER_AUTO_SPARSE:
		return "NCCL >= 2.26.2 picks the RoCE v2 GID of NCCL_IB_ADDR_FAMILY in "
		       "NCCL_IB_ADDR_RANGE itself, sparse GID tables included";
	case RN_NCCL_VER_UNKNOWN:
		break;
	}
	return "settings that are right for every version (NCCL <= 2.20 uses GID index 0 "
	       "unless NCCL_IB_GID_INDEX names one)";
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

static int warn(struct rn_nccl_result *res, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int warn(struct rn_nccl_result *res, const char *fmt, ...)
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

/* Sets name=value from `origin`; a value it replaces is remembered for --explain. */
static int put(struct rn_nccl_result *res, const char *name, const char *value,
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

/* Removes name; what it was goes to res->unset (with `origin` as the remover). */
static int drop(struct rn_nccl_result *res, const char *name, const char *origin,
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

/* ---- detection ---- */

static bool is_ethernet(const struct rn_nccl_port *p)
{
	return strcmp(p->link_layer, "Ethernet") == 0;
}

static bool is_ib(const struct rn_nccl_port *p)
{
	return strcmp(p->link_layer, "InfiniBand") == 0;
}

static const char *family_name(int family)
{
	return family == AF_INET6 ? "IPv6" : "IPv4";
}

static size_t port_naddrs(const struct rn_nccl_port *p, int family)
{
	return family == AF_INET6 ? p->n_ipv6 : p->n_ipv4;
}

static const char *port_addr(const struct rn_nccl_port *p, int family, size_t i)
{
	return family == AF_INET6 ? p->ipv6[i] : p->ipv4[i];
}

/* Whether raw is one of the port's addresses of `family`. */
static bool port_holds(const struct rn_nccl_port *p, int family, const uint8_t raw[16],
		       const char **ret_cidr)
{
	for (size_t a = 0; a < port_naddrs(p, family); a++) {
		uint8_t mine[16];
		int fam, plen;

		if (rn_nccl_cidr_parse(port_addr(p, family, a), &fam, mine, &plen) == 0 &&
		    memcmp(mine, raw, 16) == 0) {
			if (ret_cidr)
				*ret_cidr = port_addr(p, family, a);
			return true;
		}
	}
	return false;
}

/* The lowest-index RoCE v2 GID of dev/port holding one of the port's addresses of `family`. */
static void find_gid(const struct rn_nccl_node *node, const struct rn_nccl_port *p,
		     struct rn_nccl_port_use *u, int family)
{
	if (port_naddrs(p, family) == 0) {
		u->gid_status = RN_NCCL_GID_NO_ADDR;
		return;
	}
	u->gid_status = RN_NCCL_GID_NO_MATCH;
	for (size_t i = 0; i < node->gids.n; i++) {
		const struct rn_gid_entry *e = &node->gids.entries[i];
		const char *cidr = NULL;

		if (e->port != p->port || e->type != RN_GID_ROCE_V2 || strcmp(e->dev, p->dev) != 0)
			continue;
		if (e->netdev[0] && p->netdev[0] && strcmp(e->netdev, p->netdev) != 0)
			continue;
		if (!port_holds(p, family, e->raw, &cidr))
			continue;
		u->gid_status = RN_NCCL_GID_FOUND;
		u->gid_index = (int)e->index;
		(void)rn_strscpy(u->gid_addr, sizeof(u->gid_addr), cidr);
		return; /* entries are sorted by index: the lowest wins */
	}
}

/* Decides, for every port, whether NCCL can use it. */
static int analyse_ports(const struct rn_nccl_node *node, struct rn_nccl_result *res)
{
	res->ports = calloc(node->n_ports ? node->n_ports : 1, sizeof(*res->ports));
	if (!res->ports)
		return -ENOMEM;
	res->n_ports = node->n_ports;
	for (size_t i = 0; i < node->n_ports; i++) {
		const struct rn_nccl_port *p = &node->ports[i];
		struct rn_nccl_port_use *u = &res->ports[i];

		(void)rn_strscpy(u->dev, sizeof(u->dev), p->dev);
		u->port = p->port;
		(void)rn_strscpy(u->netdev, sizeof(u->netdev), p->netdev);
		u->gid_index = -1;
		if (!p->active) {
			(void)rn_snprintf(u->why_not, sizeof(u->why_not),
					  "port state is %s, not ACTIVE",
					  p->state[0] ? p->state : "unknown");
			continue;
		}
		if (is_ethernet(p)) {
			if (!p->netdev[0]) {
				(void)rn_snprintf(u->why_not, sizeof(u->why_not),
						  "RoCE port with no netdev bound to it");
				continue;
			}
			if (!p->netdev_here) {
				(void)rn_snprintf(
					u->why_not, sizeof(u->why_not),
					"its netdev %s is not in this network namespace (move it "
					"too: 'rdmans move %s TARGET --with-netdev', or give it to "
					"the pod through CNI)",
					p->netdev, p->dev);
				continue;
			}
		} else if (!is_ib(p) && p->link_layer[0]) {
			(void)rn_snprintf(u->why_not, sizeof(u->why_not),
					  "link layer '%s' is unknown", p->link_layer);
			continue;
		}
		u->used = true;
	}
	return 0;
}

/*
 * The family of the RoCE addresses: asked for by a layer, else IPv4 when any
 * used RoCE netdev has an IPv4 address (NCCL's own default), else IPv6.
 */
static void choose_family(const struct rn_nccl_node *node, struct rn_nccl_result *res,
			  const struct rn_nccl_layer *asked)
{
	size_t v4 = 0, v6 = 0;

	for (size_t i = 0; i < res->n_ports; i++) {
		if (!res->ports[i].used || !is_ethernet(&node->ports[i]))
			continue;
		v4 += node->ports[i].n_ipv4 > 0;
		v6 += node->ports[i].n_ipv6 > 0;
	}
	if (asked && strcmp(asked->family, "auto") != 0) {
		char label[RN_NCCL_ORIGIN_MAX + 16];

		rn_nccl_layer_label(asked, label, sizeof(label));
		res->family = strcmp(asked->family, "ipv6") == 0 ? AF_INET6 : AF_INET;
		(void)rn_snprintf(res->family_why, sizeof(res->family_why), "%s asks for %s", label,
				  family_name(res->family));
	} else if (v4) {
		res->family = AF_INET;
		(void)rn_snprintf(
			res->family_why, sizeof(res->family_why), "%s",
			v6 ? "dual-stack: IPv4, NCCL's default family (\"family\": \"ipv6\" in the "
			     "nccl block, or --family ipv6, chooses IPv6)"
			   : "the RDMA netdevs have IPv4 addresses");
	} else if (v6) {
		res->family = AF_INET6;
		(void)rn_snprintf(
			res->family_why, sizeof(res->family_why),
			"IPv6-only: the RDMA netdevs have global IPv6 addresses and no IPv4 one");
	} else {
		res->family = AF_INET;
		(void)rn_snprintf(res->family_why, sizeof(res->family_why),
				  "no address on the RDMA netdevs yet: IPv4 assumed");
	}
	for (size_t i = 0; i < res->n_ports; i++)
		if (res->ports[i].used && is_ethernet(&node->ports[i]))
			find_gid(node, &node->ports[i], &res->ports[i], res->family);
}

/* How many used ports device `dev` has, and how many ports in all. */
static void dev_port_counts(const struct rn_nccl_result *res, const char *dev, size_t *used,
			    size_t *all)
{
	*used = *all = 0;
	for (size_t i = 0; i < res->n_ports; i++) {
		if (strcmp(res->ports[i].dev, dev) != 0)
			continue;
		(*all)++;
		if (res->ports[i].used)
			(*used)++;
	}
}

static int detect_hca(const struct rn_nccl_node *node, struct rn_nccl_result *res)
{
	char value[RN_NCCL_VALUE_MAX] = "=", detail[RN_NCCL_DETAIL_MAX] = "";
	const char *last = "";

	for (size_t i = 0; i < res->n_ports; i++) {
		const struct rn_nccl_port_use *u = &res->ports[i];
		const struct rn_nccl_port *p = &node->ports[i];
		size_t used, all;

		if (!u->used)
			continue;
		dev_port_counts(res, u->dev, &used, &all);
		if (all > 1)
			rn_strappend(value, sizeof(value), "%s%s:%u", value[1] ? "," : "", u->dev,
				     u->port);
		else if (strcmp(last, u->dev) != 0)
			rn_strappend(value, sizeof(value), "%s%s", value[1] ? "," : "", u->dev);
		last = u->dev;
		rn_strappend(detail, sizeof(detail), "%s%s port %u %s (%s%s%s)",
			     detail[0] ? "; " : "", u->dev, u->port, p->state,
			     p->link_layer[0] ? p->link_layer : "?", p->netdev[0] ? ", " : "",
			     p->netdev);
	}
	/* NCCL matches names as prefixes unless the list starts with '=': mlx5_1 takes mlx5_10 */
	rn_strappend(detail, sizeof(detail), "; '=': exact names, as NCCL's documentation advises");
	return put(res, "NCCL_IB_HCA", value, RN_NCCL_SRC_DETECTED, "detected", detail);
}

/* The smallest CIDR holding every address in raw[] (GID form: IPv4-mapped for IPv4). */
static void cover_cidr(const uint8_t (*raw)[16], size_t n, int family, char *buf, size_t len)
{
	uint8_t base[16];
	int plen = 128;
	char ip[INET6_ADDRSTRLEN];

	memcpy(base, raw[0], 16);
	for (size_t i = 1; i < n; i++) {
		int common = 0;

		while (common < plen &&
		       ((base[common / 8] ^ raw[i][common / 8]) & (0x80 >> (common % 8))) == 0)
			common++;
		plen = common;
	}
	for (int b = plen; b < 128; b++)
		base[b / 8] &= (uint8_t) ~(0x80 >> (b % 8));
	if (family == AF_INET) {
		plen = plen > 96 ? plen - 96 : 0;
		inet_ntop(AF_INET, base + 12, ip, sizeof(ip));
	} else {
		inet_ntop(AF_INET6, base, ip, sizeof(ip));
	}
	(void)rn_snprintf(buf, len, "%s/%d", ip, plen);
}

/* Whether raw lies inside the CIDR (GID form) base/plen (in bits of the 128). */
static bool in_range(const uint8_t raw[16], const uint8_t base[16], int plen)
{
	for (int b = 0; b < plen; b++)
		if (((raw[b / 8] ^ base[b / 8]) & (0x80 >> (b % 8))) != 0)
			return false;
	return true;
}

/* Whether dev/port has a GID in slot 0 (a sparse table starts later). */
static bool slot0_filled(const struct rn_nccl_node *node, const char *dev, uint32_t port)
{
	for (size_t i = 0; i < node->gids.n; i++)
		if (node->gids.entries[i].index == 0 && node->gids.entries[i].port == port &&
		    strcmp(node->gids.entries[i].dev, dev) == 0)
			return true;
	return false;
}

/*
 * Why NCCL's own selection (NCCL_IB_ADDR_FAMILY + NCCL_IB_ADDR_RANGE) would
 * not give every used port its GID, into why; "" when it would.
 */
static void why_not_auto(const struct rn_nccl_node *node, const struct rn_nccl_result *res,
			 const char *range, char *why, size_t len)
{
	char ver[32];
	uint8_t base[16];
	int fam, plen;

	why[0] = '\0';
	(void)rn_snprintf(ver, sizeof(ver), "%u.%u.%u", res->version.major, res->version.minor,
			  res->version.patch);
	if (res->ver_class == RN_NCCL_VER_UNKNOWN) {
		(void)rn_snprintf(why, len,
				  "the job's NCCL version is unknown, and NCCL <= 2.20 takes one "
				  "NCCL_IB_GID_INDEX for every device");
		return;
	}
	if (res->ver_class == RN_NCCL_VER_FIXED) {
		(void)rn_snprintf(
			why, len,
			"NCCL %s takes one NCCL_IB_GID_INDEX for every device (no selection of its "
			"own before 2.21)",
			ver);
		return;
	}
	if (rn_nccl_cidr_parse(range, &fam, base, &plen) < 0)
		return;
	if (fam == AF_INET)
		plen += 96;
	for (size_t i = 0; i < res->n_ports; i++) {
		const struct rn_nccl_port_use *u = &res->ports[i];
		const struct rn_nccl_port *p = &node->ports[i];

		if (!u->used || u->gid_status != RN_NCCL_GID_FOUND)
			continue;
		if (res->ver_class == RN_NCCL_VER_AUTO && res->family == AF_INET6 &&
		    !slot0_filled(node, p->dev, p->port)) {
			(void)rn_snprintf(
				why, len,
				"NCCL %s stops its GID search with an error on the empty slot 0 of "
				"%s port %u's sparse GID table (fixed in 2.26.2, NVIDIA/nccl#1573)",
				ver, p->dev, p->port);
			return;
		}
		for (size_t g = 0; g < node->gids.n; g++) {
			const struct rn_gid_entry *e = &node->gids.entries[g];

			if (e->port != p->port || strcmp(e->dev, p->dev) != 0 ||
			    e->type != RN_GID_ROCE_V2 || (int)e->index >= u->gid_index)
				continue;
			if (!in_range(e->raw, base, plen) ||
			    port_holds(p, res->family, e->raw, NULL))
				continue;
			(void)rn_snprintf(
				why, len,
				"RoCE v2 GID %u of %s port %u (%s%s%s) is inside %s and comes "
				"before the pod's own: NCCL would take it",
				e->index, p->dev, p->port, e->ipv4[0] ? e->ipv4 : e->gid,
				e->netdev[0] ? " of " : "", e->netdev, range);
			return;
		}
	}
}

static int detect_gid(const struct rn_nccl_node *node, struct rn_nccl_result *res)
{
	char detail[RN_NCCL_DETAIL_MAX] = "", differ[RN_NCCL_DETAIL_MAX] = "";
	char why[RN_NCCL_DETAIL_MAX], range[RN_CIDR_MAX + 8], v[16];
	uint8_t raws[64][16];
	size_t n_found = 0, n_roce = 0, best_n = 0;
	int index = -1, best = -1;
	bool agree = true;
	int r;

	for (size_t i = 0; i < res->n_ports; i++) {
		const struct rn_nccl_port_use *u = &res->ports[i];
		const struct rn_nccl_port *p = &node->ports[i];
		int fam, plen;

		if (!u->used || !is_ethernet(p))
			continue;
		n_roce++;
		if (u->gid_status == RN_NCCL_GID_NO_ADDR) {
			r = warn(
				res,
				"%s port %u: its netdev %s has no %s address, so there is no "
				"RoCE v2 GID to choose; give %s an address (CNI IPAM)%s or set "
				"NCCL_IB_GID_INDEX yourself",
				u->dev, u->port, p->netdev, family_name(res->family), p->netdev,
				port_naddrs(p, res->family == AF_INET ? AF_INET6 : AF_INET)
					? ", choose the other family (\"family\" in the nccl block)"
					: "");
			if (r < 0)
				return r;
			continue;
		}
		if (u->gid_status == RN_NCCL_GID_NO_MATCH) {
			r = warn(res,
				 "%s port %u: no RoCE v2 GID holds the address of %s (%s); the "
				 "kernel may not have updated the GID table yet ('rdmans gids %s' "
				 "shows it)",
				 u->dev, u->port, p->netdev, port_addr(p, res->family, 0), u->dev);
			if (r < 0)
				return r;
			continue;
		}
		if (index >= 0 && index != u->gid_index)
			agree = false;
		if (index < 0)
			index = u->gid_index;
		rn_strappend(detail, sizeof(detail), "%sRoCE v2 GID %d of %s port %u holds %s (%s)",
			     detail[0] ? "; " : "", u->gid_index, u->dev, u->port, u->gid_addr,
			     p->netdev);
		rn_strappend(differ, sizeof(differ), "%s%s:%u %d", differ[0] ? ", " : "", u->dev,
			     u->port, u->gid_index);
		if (n_found < RN_ARRAY_SIZE(raws) &&
		    rn_nccl_cidr_parse(u->gid_addr, &fam, raws[n_found], &plen) == 0)
			n_found++;
	}
	if (n_roce == 0)
		return 0;
	if (index < 0) {
		/* warned above; NCCL >= 2.21 still finds the GID once the address is there */
		if (res->family == AF_INET6)
			return put(
				res, "NCCL_IB_ADDR_FAMILY", "AF_INET6", RN_NCCL_SRC_DETECTED,
				"detected",
				"IPv6 RDMA addresses: NCCL >= 2.21 looks for an IPv6 RoCE v2 GID "
				"(its default family is IPv4)");
		return 0; /* a profile's guess, if any, stays */
	}

	if (!agree) {
		cover_cidr((const uint8_t(*)[16])raws, n_found, res->family, range, sizeof(range));
		why_not_auto(node, res, range, why, sizeof(why));
		if (!why[0]) {
			/* NCCL picks the GID per device: one index cannot be right for all */
			rn_strappend(detail, sizeof(detail), "; %s",
				     rn_nccl_ver_class_desc(res->ver_class));
			r = drop(res, "NCCL_IB_GID_INDEX", "detected",
				 "the GID index differs between devices: NCCL picks it per device");
			if (r == 0)
				r = put(res, "NCCL_IB_ADDR_FAMILY",
					res->family == AF_INET6 ? "AF_INET6" : "AF_INET",
					RN_NCCL_SRC_DETECTED, "detected", res->family_why);
			if (r == 0)
				r = put(res, "NCCL_IB_ADDR_RANGE", range, RN_NCCL_SRC_DETECTED,
					"detected", detail);
			if (r == 0)
				r = put(res, "NCCL_IB_ROCE_VERSION_NUM", "2", RN_NCCL_SRC_DETECTED,
					"detected", "RoCE v2 GIDs");
			return r;
		}
		/* one index for all: the largest group of ports that share one */
		for (size_t i = 0; i < res->n_ports; i++) {
			size_t n = 0;

			if (!res->ports[i].used || res->ports[i].gid_status != RN_NCCL_GID_FOUND)
				continue;
			for (size_t j = 0; j < res->n_ports; j++)
				n += res->ports[j].used &&
				     res->ports[j].gid_status == RN_NCCL_GID_FOUND &&
				     res->ports[j].gid_index == res->ports[i].gid_index;
			if (n > best_n) {
				best_n = n;
				best = res->ports[i].gid_index;
			}
		}
		detail[0] = '\0';
		for (size_t i = 0; i < res->n_ports; i++) {
			struct rn_nccl_port_use *u = &res->ports[i];

			if (!u->used || u->gid_status != RN_NCCL_GID_FOUND)
				continue;
			if (u->gid_index == best) {
				rn_strappend(detail, sizeof(detail),
					     "%sRoCE v2 GID %d of %s port %u holds %s (%s)",
					     detail[0] ? "; " : "", u->gid_index, u->dev, u->port,
					     u->gid_addr, u->netdev);
				continue;
			}
			u->used = false;
			(void)rn_snprintf(u->why_not, sizeof(u->why_not),
					  "its RoCE v2 GID index is %d, not %d: %s", u->gid_index,
					  best, why);
		}
		r = warn(res,
			 "the RoCE v2 GID index differs between devices (%s), and %s: "
			 "NCCL_IB_GID_INDEX=%d, and only the ports with that index are used%s",
			 differ, why, best,
			 res->ver_class == RN_NCCL_VER_UNKNOWN
				 ? " (if the job's NCCL is >= 2.21, name it: \"nccl_version\" in "
				   "the nccl block or --nccl-version, and every port is used)"
				 : "");
		if (r < 0)
			return r;
		index = best;
	} else {
		rn_strappend(detail, sizeof(detail),
			     "; an explicit index is right for every NCCL version");
	}
	(void)rn_snprintf(v, sizeof(v), "%d", index);
	r = put(res, "NCCL_IB_GID_INDEX", v, RN_NCCL_SRC_DETECTED, "detected", detail);
	if (r == 0 && res->family == AF_INET6)
		r = put(res, "NCCL_IB_ADDR_FAMILY", "AF_INET6", RN_NCCL_SRC_DETECTED, "detected",
			"IPv6 RDMA addresses: NCCL_IB_GID_INDEX decides; without it NCCL >= 2.21 "
			"would look for an IPv4 GID (its default family)");
	return r;
}

/* Whether an NCCL_SOCKET_IFNAME value ("eth", "=net1", "^docker", "^=lo") takes a netdev here. */
static bool ifname_matches(const struct rn_nccl_node *node, const char *value)
{
	struct rn_nccl_list l;

	rn_nccl_list_parse(value, &l);
	for (size_t i = 0; i < node->n_netdevs; i++)
		if (rn_nccl_list_takes(&l, node->netdevs[i], -1))
			return true;
	return false;
}

/* True when a netdev here other than `name` starts with `name`. */
static bool netdev_prefix_of_other(const struct rn_nccl_node *node, const char *name)
{
	size_t len = strlen(name);

	for (size_t i = 0; i < node->n_netdevs; i++)
		if (strncmp(node->netdevs[i], name, len) == 0 && node->netdevs[i][len])
			return true;
	return false;
}

static int detect_ifname(const struct rn_nccl_node *node, struct rn_nccl_result *res)
{
	const struct rn_nccl_setting *s = rn_nccl_result_get(res, "NCCL_SOCKET_IFNAME");
	char detail[RN_NCCL_DETAIL_MAX];
	const struct rn_nccl_port *pick = NULL;
	char value[IF_NAMESIZE + 2];
	int r;

	/* the first used port's netdev with an address of the family, else with any */
	for (int pass = 0; pass < 2 && !pick; pass++) {
		for (size_t i = 0; i < res->n_ports && !pick; i++) {
			const struct rn_nccl_port *p = &node->ports[i];

			if (!res->ports[i].used || !p->netdev_here)
				continue;
			if (pass == 0 ? port_naddrs(p, res->family) > 0 : p->n_ipv4 + p->n_ipv6 > 0)
				pick = p;
		}
	}
	/* A profile's interface stays: the platforms use the pod network on purpose. */
	if (s || !pick)
		return 0;
	(void)rn_snprintf(detail, sizeof(detail), "the netdev of %s, which has %s address",
			  pick->dev, pick->n_ipv4 ? "an IPv4" : "an IPv6");
	/* NCCL matches interface names as prefixes: net1 would also take net10 */
	(void)rn_snprintf(value, sizeof(value), "%s%s",
			  netdev_prefix_of_other(node, pick->netdev) ? "=" : "", pick->netdev);
	r = put(res, "NCCL_SOCKET_IFNAME", value, RN_NCCL_SRC_DETECTED, "detected", detail);
	if (r == 0 && (pick->n_ipv4 == 0 || res->family == AF_INET6) && pick->n_ipv6 > 0) {
		(void)rn_snprintf(detail, sizeof(detail), "%s",
				  pick->n_ipv4 == 0
					  ? "bootstrap goes over IPv6: the interface has no IPv4 "
					    "address"
					  : "IPv6 chosen: bootstrap over IPv6 too");
		r = put(res, "NCCL_SOCKET_FAMILY", "AF_INET6", RN_NCCL_SRC_DETECTED, "detected",
			detail);
	}
	return r;
}

/* Warns about NCCL_IB_HCA entries (from a layer) that match nothing here, or more than meant. */
static int check_hca(const struct rn_nccl_node *node, struct rn_nccl_result *res)
{
	const struct rn_nccl_setting *s = rn_nccl_result_get(res, "NCCL_IB_HCA");
	bool any_usable = false;
	struct rn_nccl_list l;
	int r;

	if (!s || s->source == RN_NCCL_SRC_DETECTED)
		return 0;
	rn_nccl_list_parse(s->value, &l);
	for (size_t e = 0; e < l.n; e++) {
		char also[RN_NCCL_DETAIL_MAX] = "";
		size_t hits = 0;

		for (size_t i = 0; i < node->n_ports; i++) {
			const struct rn_nccl_port *p = &node->ports[i];

			if (!rn_nccl_list_entry_matches(&l, e, p->dev, p->port))
				continue;
			hits++;
			if (strcmp(p->dev, l.v[e].name) != 0 && !strstr(also, p->dev))
				rn_strappend(also, sizeof(also), "%s%s", also[0] ? ", " : "",
					     p->dev);
		}
		if (hits == 0)
			r = warn(res,
				 "NCCL_IB_HCA=%s (%s): entry '%s' matches no RDMA device in this "
				 "network namespace ('rdmans dev' lists them)",
				 s->value, s->origin, l.v[e].name);
		else if (also[0])
			r = warn(res,
				 "NCCL_IB_HCA=%s (%s): NCCL matches '%s' as a prefix, so it also "
				 "takes %s; start the value with '=' (exact names%s)",
				 s->value, s->origin, l.v[e].name, also,
				 l.exclude ? ", '^=' to exclude exactly" : "");
		else
			r = 0;
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < res->n_ports; i++)
		if (res->ports[i].used &&
		    rn_nccl_list_takes(&l, node->ports[i].dev, node->ports[i].port))
			any_usable = true;
	if (!any_usable &&
	    warn(res,
		 "NCCL_IB_HCA=%s (%s) selects no RDMA port NCCL could use here: NCCL falls back "
		 "to sockets",
		 s->value, s->origin) < 0)
		return -ENOMEM;
	return 0;
}

/* ---- resolve ---- */

static const char *pick_auto(const struct rn_nccl_node *node, char *why, size_t len)
{
	size_t eth = 0, ib = 0, erdma = 0;

	for (size_t i = 0; node && i < node->n_ports; i++) {
		const struct rn_nccl_port *p = &node->ports[i];

		if (!p->active)
			continue;
		eth += is_ethernet(p);
		ib += is_ib(p);
		erdma += strncmp(p->dev, "erdma", 5) == 0;
	}
	if (erdma && erdma == eth + ib) {
		(void)rn_snprintf(why, len, "auto: every active port is on an eRDMA device");
		return "alibaba-erdma";
	}
	if (ib && !eth) {
		(void)rn_snprintf(why, len, "auto: every active port is InfiniBand");
		return "ib";
	}
	if (eth)
		(void)rn_snprintf(why, len, "auto: %s",
				  ib ? "Ethernet and InfiniBand ports"
				     : "every active port is Ethernet");
	else
		(void)rn_snprintf(why, len, "auto: no active port to tell, RoCE assumed");
	return "roce";
}

/* Layers in precedence order (stable for equal sources). */
static int cmp_layer_ptr(const void *a, const void *b)
{
	const struct rn_nccl_layer *x = *(const struct rn_nccl_layer *const *)a;
	const struct rn_nccl_layer *y = *(const struct rn_nccl_layer *const *)b;

	if (x->source != y->source)
		return x->source < y->source ? -1 : 1;
	return x < y ? -1 : x > y;
}

static int describe_unusable(const struct rn_nccl_node *node, const struct rn_nccl_result *res,
			     struct rn_error *err)
{
	char msg[RN_ERROR_MSG_MAX];

	if (node->n_ports == 0 && node->no_rdma)
		return rn_error_set(
			err, ENODEV,
			"this node's kernel has no RDMA (no RDMA driver loaded: /sys/class/"
			"infiniband is absent), so there is no RDMA device "
			"to use: NCCL would fall back to sockets");
	if (node->n_ports == 0)
		return rn_error_set(err, ENODEV,
				    "no RDMA device in this network namespace: NCCL would fall "
				    "back to sockets ('rdmans dev --all-netns' shows where the "
				    "devices are; 'rdmans move DEV TARGET' brings one here)");
	(void)rn_snprintf(msg, sizeof(msg), "no RDMA port here that NCCL could use:");
	for (size_t i = 0; i < res->n_ports; i++)
		rn_strappend(msg, sizeof(msg), "%s %s port %u: %s", i ? ";" : "", res->ports[i].dev,
			     res->ports[i].port, res->ports[i].why_not);
	return rn_error_set(err, ENODEV, "%s", msg);
}

/* No usable RDMA port, and sockets are fine: NCCL_IB_DISABLE=1, no NCCL_IB_* of the profile. */
static int resolve_sockets(const struct rn_nccl_node *node, const struct rn_nccl_request *req,
			   struct rn_nccl_result *res)
{
	const char *origin = req->sockets_origin ? req->sockets_origin : "sockets allowed";
	struct rn_error why = { 0 };
	int r;

	(void)describe_unusable(node, res, &why);
	res->sockets = true;
	r = warn(res, "NCCL runs over sockets, slower than RDMA (%s): %s", origin, why.msg);
	for (size_t i = res->n; r == 0 && i-- > 0;)
		if (strncmp(res->v[i].name, "NCCL_IB_", 8) == 0 &&
		    strcmp(res->v[i].name, "NCCL_IB_DISABLE") != 0)
			r = drop(res, res->v[i].name, origin, "RDMA is off");
	if (r == 0)
		r = put(res, "NCCL_IB_DISABLE", "1", RN_NCCL_SRC_DETECTED, origin,
			"no usable RDMA port here: NCCL over sockets");
	return r;
}

bool rn_nccl_pod_dependent(const char *name)
{
	static const char *const per_pod[] = { "NCCL_IB_HCA", "NCCL_IB_GID_INDEX",
					       "NCCL_SOCKET_IFNAME" };

	for (size_t i = 0; i < RN_ARRAY_SIZE(per_pod); i++)
		if (strcmp(per_pod[i], name) == 0)
			return true;
	return false;
}

static int apply_profile(const struct rn_nccl_profile *prof, const struct rn_nccl_request *req,
			 struct rn_nccl_result *res)
{
	char origin[RN_NCCL_ORIGIN_MAX];
	int r;

	(void)rn_snprintf(origin, sizeof(origin), "profile %s", prof->name);
	for (size_t i = 0; i < prof->n_values; i++) {
		const struct rn_nccl_preset *p = &prof->values[i];

		if (req->node_static && rn_nccl_pod_dependent(p->name))
			continue; /* they depend on the pod: rdmans-hook writes them */
		r = put(res, p->name, p->value, RN_NCCL_SRC_PROFILE, origin, NULL);
		if (r < 0)
			return r;
	}
	return 0;
}

static int apply_layer(const struct rn_nccl_layer *l, struct rn_nccl_result *res)
{
	char origin[RN_NCCL_ORIGIN_MAX];
	int r;

	rn_nccl_layer_label(l, origin, sizeof(origin));
	for (size_t i = 0; i < l->n; i++) {
		const struct rn_nccl_kv *kv = &l->kv[i];
		const struct rn_nccl_setting *was = rn_nccl_result_get(res, kv->name);

		if (kv->unset) {
			r = drop(res, kv->name, origin, NULL);
		} else {
			if (strcmp(kv->name, "NCCL_IB_GID_INDEX") == 0 && was &&
			    was->source == RN_NCCL_SRC_DETECTED && strcmp(was->value, kv->value)) {
				r = warn(res,
					 "NCCL_IB_GID_INDEX=%s from %s overrides the detected %s "
					 "(%s)",
					 kv->value, origin, was->value, was->detail);
				if (r < 0)
					return r;
			}
			r = put(res, kv->name, kv->value, l->source, origin, NULL);
		}
		if (r < 0)
			return r;
	}
	return 0;
}

int rn_nccl_resolve(const struct rn_nccl_node *node, const struct rn_nccl_request *req,
		    struct rn_nccl_result *out, struct rn_error *err)
{
	_cleanup_nccl_result_ struct rn_nccl_result res = { 0 };
	_cleanup_free_ const struct rn_nccl_layer **order = NULL;
	const struct rn_nccl_layer *version_layer = NULL, *family_layer = NULL;
	const struct rn_nccl_profile *prof;
	const char *profile = NULL;
	size_t n = req->n_layers;
	bool sockets = false;
	int r;

	memset(out, 0, sizeof(*out));
	if (!node && !req->node_static)
		return rn_error_set(err, EINVAL, "nothing to resolve NCCL settings from");
	order = calloc(n ? n : 1, sizeof(*order));
	if (!order)
		return rn_error_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++)
		order[i] = &req->layers[i];
	if (n > 1)
		qsort(order, n, sizeof(*order), cmp_layer_ptr);

	/* The profile: named by the strongest layer that names one, else auto. */
	for (size_t i = n; i-- > 0 && !profile;) {
		if (order[i]->profile[0] && strcmp(order[i]->profile, "auto") != 0) {
			profile = order[i]->profile;
			rn_nccl_layer_label(order[i], res.profile_origin,
					    sizeof(res.profile_origin));
		} else if (order[i]->profile[0]) {
			break; /* "auto" asked for explicitly */
		}
	}
	if (!profile)
		profile = pick_auto(node, res.profile_origin, sizeof(res.profile_origin));
	prof = rn_nccl_profile_find(profile);
	if (!prof)
		return rn_nccl_profile_check(profile, err);
	(void)rn_strscpy(res.profile, sizeof(res.profile), prof->name);

	/* The NCCL version: named by the strongest layer, else what the image showed. */
	for (size_t i = n; i-- > 0 && !version_layer;)
		if (order[i]->nccl_version[0])
			version_layer = order[i];
	for (size_t i = n; i-- > 0 && !family_layer;)
		if (order[i]->family[0])
			family_layer = order[i];
	if (version_layer) {
		char label[RN_NCCL_ORIGIN_MAX + 16];

		r = rn_nccl_version_parse(version_layer->nccl_version, &res.version, err);
		if (r < 0)
			return r;
		rn_nccl_layer_label(version_layer, label, sizeof(label));
		(void)rn_strscpy(res.version.where, sizeof(res.version.where), label);
		(void)rn_snprintf(res.version_why, sizeof(res.version_why), "named by %s", label);
	} else if (req->nccl_version && req->nccl_version->major) {
		res.version = *req->nccl_version;
		(void)rn_snprintf(res.version_why, sizeof(res.version_why), "seen in the image: %s",
				  req->nccl_version->where);
	} else {
		(void)rn_snprintf(res.version_why, sizeof(res.version_why), "%s",
				  req->nccl_version_note ? req->nccl_version_note
							 : "no image to look in");
	}
	res.ver_class = rn_nccl_version_class(&res.version);

	r = apply_profile(prof, req, &res);
	if (r < 0)
		goto oom;

	if (!req->node_static) {
		bool any = false;

		r = analyse_ports(node, &res);
		if (r < 0)
			goto oom;
		for (size_t i = 0; i < res.n_ports; i++)
			any = any || res.ports[i].used;
		if (!any && !req->sockets_ok)
			return describe_unusable(node, &res, err);
		sockets = !any;
	}
	if (sockets) {
		r = resolve_sockets(node, req, &res);
		if (r < 0)
			goto oom;
	} else if (!req->node_static) {
		for (size_t i = 0; i < res.n_ports; i++) {
			if (res.ports[i].used || !res.ports[i].why_not[0])
				continue;
			r = warn(&res, "%s port %u is left out: %s", res.ports[i].dev,
				 res.ports[i].port, res.ports[i].why_not);
			if (r < 0)
				goto oom;
		}
		choose_family(node, &res, family_layer);
		r = put(&res, "NCCL_IB_DISABLE", "0", RN_NCCL_SRC_DETECTED, "detected",
			"RDMA ports are here");
		/* the GID first: with one index for all, it may leave ports out of the HCA list */
		if (r == 0)
			r = detect_gid(node, &res);
		if (r == 0)
			r = detect_hca(node, &res);
		if (r == 0)
			r = detect_ifname(node, &res);
		if (r < 0)
			goto oom;
	} else if (req->addr_range) {
		uint8_t raw[16];
		int fam, plen;
		const char *af;

		if (!strchr(req->addr_range, '/') ||
		    rn_nccl_cidr_parse(req->addr_range, &fam, raw, &plen) < 0)
			return rn_error_set(
				err, EINVAL,
				"address range '%s' is not a CIDR (a.b.c.d/nn or x::y/nn)",
				req->addr_range);
		res.family = fam;
		af = fam == AF_INET6 ? "AF_INET6" : "AF_INET";
		r = put(&res, "NCCL_IB_ADDR_FAMILY", af, RN_NCCL_SRC_OPTION, "--addr-range",
			fam == AF_INET6 ? "the pool is IPv6" : "the pool is IPv4");
		if (r == 0)
			r = put(&res, "NCCL_IB_ADDR_RANGE", req->addr_range, RN_NCCL_SRC_OPTION,
				"--addr-range",
				"NCCL >= 2.21 picks the GID in this range per device");
		if (r == 0)
			r = put(&res, "NCCL_IB_ROCE_VERSION_NUM", "2", RN_NCCL_SRC_OPTION,
				"--addr-range", "RoCE v2 GIDs");
		if (r < 0)
			goto oom;
	}

	for (size_t i = 0; i < n; i++) {
		r = apply_layer(order[i], &res);
		if (r < 0)
			goto oom;
	}
	for (size_t i = res.n; req->node_static && i-- > 0;) {
		if (rn_nccl_pod_dependent(res.v[i].name) &&
		    drop(&res, res.v[i].name, "node-static",
			 "depends on the pod: rdmans-hook writes it per pod") < 0)
			goto oom;
	}
	if (!req->node_static) {
		const struct rn_nccl_setting *s = rn_nccl_result_get(&res, "NCCL_SOCKET_IFNAME");

		if (s && !ifname_matches(node, s->value) &&
		    warn(&res,
			 "NCCL_SOCKET_IFNAME=%s (%s) matches no netdev in this network namespace: "
			 "NCCL's bootstrap will fail",
			 s->value, s->origin) < 0)
			goto oom;
		if (!sockets && check_hca(node, &res) < 0)
			goto oom;
	}
	if (res.n > 1)
		qsort(res.v, res.n, sizeof(*res.v), cmp_setting);
	*out = res;
	memset(&res, 0, sizeof(res));
	return 0;
oom:
	return rn_error_set(err, ENOMEM, "out of memory resolving NCCL settings");
}
