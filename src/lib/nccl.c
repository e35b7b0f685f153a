// SPDX-License-Identifier: Apache-2.0
/*
 * The NCCL resolver: profiles, probing a netns, override layers, and the
 * rules that turn them into NCCL variables with their provenance.
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
#include "rdmans/util.h"

/* ---- small helpers ---- */

static void scopy(char *dst, size_t len, const char *src)
{
	size_t n = strnlen(src, len - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
}

/* snprintf that truncates silently (messages and explanations). */
static void bprintf(char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void bprintf(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
}

/* Appends to a message buffer, truncating silently. */
static void bappend(char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void bappend(char *buf, size_t len, const char *fmt, ...)
{
	size_t used = strnlen(buf, len);
	va_list ap;

	if (used + 1 >= len)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + used, len - used, fmt, ap);
	va_end(ap);
}

static int grow(void **v, size_t n, size_t size)
{
	void *p = realloc(*v, (n + 1) * size);

	if (!p)
		return -ENOMEM;
	*v = p;
	return 0;
}

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
	PROFILE("baidu-cce", "Baidu AI Cloud CCE (doc 000): timeout 22, 8 QPs per connection, eth0",
		baidu_values),
	PROFILE("scnet", "Scnet (doc 001): traffic class 136, timeout 22, 8 QPs per connection",
		scnet_values),
	PROFILE("alibaba-erdma",
		"Alibaba Cloud PAI eRDMA (doc 004): 8 QPs per connection, 16 channels, no net "
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
		bappend(list, sizeof(list), ", %s", profiles[i].name);
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

/* ---- the node ---- */

void rn_nccl_node_free(struct rn_nccl_node *node)
{
	if (!node)
		return;
	free(node->ports);
	free(node->netdevs);
	rn_gid_table_free(&node->gids);
	memset(node, 0, sizeof(*node));
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* The numeric entries of DIR (port numbers), sorted. -errno of the open. */
static int list_ports(const char *dir, uint32_t **ret, size_t *ret_n)
{
	_cleanup_closedir_ DIR *d = NULL;
	_cleanup_free_ uint32_t *v = NULL;
	struct dirent *de;
	size_t n = 0;

	d = opendir(dir);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		unsigned long p;

		if (!all_digits(de->d_name))
			continue;
		p = strtoul(de->d_name, NULL, 10);
		if (p == 0 || p > UINT32_MAX)
			continue;
		if (grow((void **)&v, n, sizeof(*v)) < 0)
			return -ENOMEM;
		v[n++] = (uint32_t)p;
	}
	if (n > 1)
		qsort(v, n, sizeof(*v), cmp_u32);
	*ret = TAKE_PTR(v);
	*ret_n = n;
	return 0;
}

/* "4: ACTIVE" -> "ACTIVE", active = (4). */
static void parse_state(const char *text, char *state, size_t len, bool *active)
{
	const char *colon = strchr(text, ':');
	const char *name = colon ? colon + 1 : text;

	while (*name == ' ')
		name++;
	scopy(state, len, name);
	*active = atoi(text) == 4 || strcmp(name, "ACTIVE") == 0;
}

/* The netdev of the port's GID entries (the lowest index that names one). */
static const char *gid_netdev(const struct rn_gid_table *t, const char *dev, uint32_t port)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->entries[i].port == port && t->entries[i].netdev[0] &&
		    strcmp(t->entries[i].dev, dev) == 0)
			return t->entries[i].netdev;
	return NULL;
}

static bool netdev_listed(const struct rn_nccl_node *node, const char *name)
{
	for (size_t i = 0; i < node->n_netdevs; i++)
		if (strcmp(node->netdevs[i], name) == 0)
			return true;
	return false;
}

static int read_netdevs(struct rn_nccl_node *node, struct rn_error *err)
{
	_cleanup_closedir_ DIR *d = NULL;
	char path[PATH_MAX];
	struct dirent *de;

	if (rn_path(path, sizeof(path), "%s/class/net", rn_sysfs_root()) < 0)
		return rn_error_set(err, ENAMETOOLONG, "sysfs root %s is too long",
				    rn_sysfs_root());
	d = opendir(path);
	if (!d) {
		if (errno == ENOENT)
			return 0;
		return rn_error_errno(err, errno, "cannot list %s", path);
	}
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || strlen(de->d_name) >= IF_NAMESIZE)
			continue;
		if (grow((void **)&node->netdevs, node->n_netdevs, sizeof(*node->netdevs)) < 0)
			return rn_error_set(err, ENOMEM, "out of memory");
		scopy(node->netdevs[node->n_netdevs++], IF_NAMESIZE, de->d_name);
	}
	return 0;
}

static int cmp_port(const void *a, const void *b)
{
	const struct rn_nccl_port *x = a, *y = b;
	int c = strverscmp(x->dev, y->dev);

	if (c)
		return c;
	return x->port < y->port ? -1 : x->port > y->port;
}

int rn_nccl_node_from_sysfs(struct rn_nccl_node *out, struct rn_error *err)
{
	_cleanup_nccl_node_ struct rn_nccl_node node = { 0 };
	_cleanup_free_ struct rn_sysfs_rdma_dev *devs = NULL;
	size_t n_devs = 0;
	int r;

	memset(out, 0, sizeof(*out));
	r = rn_sysfs_rdma_list(&devs, &n_devs, err);
	if (r < 0)
		return r;
	r = rn_sysfs_gids(NULL, &node.gids, err);
	if (r < 0)
		return r;
	r = read_netdevs(&node, err);
	if (r < 0)
		return r;

	for (size_t i = 0; i < n_devs; i++) {
		const struct rn_sysfs_rdma_dev *d = &devs[i];
		_cleanup_free_ uint32_t *ports = NULL;
		char dir[PATH_MAX], path[PATH_MAX], text[64];
		size_t n_ports = 0;

		if (rn_path(dir, sizeof(dir), "%s/class/infiniband/%s/ports", rn_sysfs_root(),
			    d->name) < 0)
			return rn_error_set(err, ENAMETOOLONG, "path of %s is too long", d->name);
		r = list_ports(dir, &ports, &n_ports);
		if (r == -ENOENT)
			continue; /* moved away since the listing */
		if (r < 0)
			return rn_error_errno(err, -r, "cannot list %s", dir);
		for (size_t p = 0; p < n_ports; p++) {
			struct rn_nccl_port *port;
			const char *ndev;

			if (grow((void **)&node.ports, node.n_ports, sizeof(*node.ports)) < 0)
				return rn_error_set(err, ENOMEM, "out of memory");
			port = &node.ports[node.n_ports++];
			memset(port, 0, sizeof(*port));
			scopy(port->dev, sizeof(port->dev), d->name);
			port->port = ports[p];
			if (rn_path(path, sizeof(path), "%s/%u/state", dir, ports[p]) == 0 &&
			    rn_read_line(path, text, sizeof(text)) == 0)
				parse_state(text, port->state, sizeof(port->state), &port->active);
			if (rn_path(path, sizeof(path), "%s/%u/link_layer", dir, ports[p]) == 0 &&
			    rn_read_line(path, text, sizeof(text)) == 0)
				scopy(port->link_layer, sizeof(port->link_layer), text);

			/*
			 * RoCE: the netdev of the port's GIDs. Otherwise (IPoIB,
			 * rxe before GIDs exist) the device's only netdev.
			 */
			ndev = gid_netdev(&node.gids, d->name, ports[p]);
			if (!ndev && d->n_netdevs == 1 && n_ports == 1)
				ndev = d->netdevs[0];
			if (ndev) {
				scopy(port->netdev, sizeof(port->netdev), ndev);
				port->netdev_here = netdev_listed(&node, ndev);
			}
		}
	}
	if (node.n_ports > 1)
		qsort(node.ports, node.n_ports, sizeof(*node.ports), cmp_port);
	*out = node;
	memset(&node, 0, sizeof(node));
	return 0;
}

int rn_nccl_node_add_addr(struct rn_nccl_node *node, const char *netdev, const char *cidr,
			  struct rn_error *err)
{
	struct in_addr a;
	char ip[RN_CIDR_MAX];
	const char *slash = strchr(cidr, '/');
	size_t len = slash ? (size_t)(slash - cidr) : strlen(cidr);
	char *end;
	long plen;

	if (!slash || len >= sizeof(ip))
		return rn_error_set(err, EINVAL, "'%s' is not an IPv4 address/prefix", cidr);
	memcpy(ip, cidr, len);
	ip[len] = '\0';
	errno = 0;
	plen = strtol(slash + 1, &end, 10);
	if (inet_pton(AF_INET, ip, &a) != 1 || errno || *end || end == slash + 1 || plen < 0 ||
	    plen > 32)
		return rn_error_set(err, EINVAL, "'%s' is not an IPv4 address/prefix", cidr);
	for (size_t i = 0; i < node->n_ports; i++) {
		struct rn_nccl_port *p = &node->ports[i];

		if (strcmp(p->netdev, netdev) != 0 || p->n_ipv4 >= RN_NCCL_MAX_ADDRS)
			continue;
		scopy(p->ipv4[p->n_ipv4++], RN_CIDR_MAX, cidr);
	}
	return 0;
}

struct probe_job {
	struct rn_nccl_node *node;
};

static int probe_here(void *arg, struct rn_error *err)
{
	struct probe_job *job = arg;
	struct rn_nccl_node *node = job->node;
	int r;

	r = rn_nccl_node_from_sysfs(node, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < node->n_ports; i++) {
		struct rn_nccl_port *p = &node->ports[i];
		char cidrs[RN_NCCL_MAX_ADDRS][64];
		struct rn_link link;
		bool seen = false;
		size_t n = 0;

		if (!p->netdev_here)
			continue;
		for (size_t j = 0; j < i; j++)
			seen = seen || strcmp(node->ports[j].netdev, p->netdev) == 0;
		if (seen)
			continue; /* its addresses went to every port bound to it */
		r = rn_link_by_name(p->netdev, &link, err);
		if (r == -ENODEV) {
			/* listed by sysfs, gone since: treat as absent */
			rn_error_clear(err);
			p->netdev_here = false;
			continue;
		}
		if (r < 0)
			return r;
		r = rn_link_addr_list(link.ifindex, AF_INET, cidrs, RN_NCCL_MAX_ADDRS, &n, err);
		if (r < 0)
			return r;
		for (size_t a = 0; a < n && a < RN_NCCL_MAX_ADDRS; a++) {
			r = rn_nccl_node_add_addr(node, p->netdev, cidrs[a], err);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

int rn_nccl_probe(int nsfd, struct rn_nccl_node *out, struct rn_error *err)
{
	struct probe_job job = { .node = out };
	int r;

	memset(out, 0, sizeof(*out));
	r = nsfd < 0 ? rn_netns_run_here_sysfs(probe_here, &job, err)
		     : rn_netns_run_sysfs(nsfd, probe_here, &job, err);
	if (r < 0)
		rn_nccl_node_free(out);
	return r;
}

/* ---- layers ---- */

void rn_nccl_layer_init(struct rn_nccl_layer *l, enum rn_nccl_source source, const char *origin)
{
	memset(l, 0, sizeof(*l));
	l->source = source;
	scopy(l->origin, sizeof(l->origin), origin ? origin : "");
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
		bprintf(buf, len, "the command line");
	else
		bprintf(buf, len, "%s%s%s", rn_nccl_source_name(l->source), l->origin[0] ? " " : "",
			l->origin);
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
		if (grow((void **)&l->kv, l->n, sizeof(*l->kv)) < 0)
			return rn_error_set(err, ENOMEM, "out of memory");
		kv = &l->kv[l->n++];
	}
	memset(kv, 0, sizeof(*kv));
	scopy(kv->name, sizeof(kv->name), name);
	if (value)
		scopy(kv->value, sizeof(kv->value), value);
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
	scopy(l->profile, sizeof(l->profile), profile);
	return 0;
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

	if (grow((void **)&res->warnings, res->n_warnings, sizeof(*res->warnings)) < 0)
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
			bprintf(replaced, sizeof(replaced), "%s: %s", s->origin, s->value);
		else if (s->replaced[0])
			scopy(replaced, sizeof(replaced), s->replaced);
	} else {
		if (grow((void **)&res->v, res->n, sizeof(*res->v)) < 0)
			return -ENOMEM;
		s = &res->v[res->n++];
	}
	memset(s, 0, sizeof(*s));
	scopy(s->name, sizeof(s->name), name);
	scopy(s->value, sizeof(s->value), value);
	s->source = source;
	scopy(s->origin, sizeof(s->origin), origin);
	scopy(s->detail, sizeof(s->detail), detail ? detail : "");
	scopy(s->replaced, sizeof(s->replaced), replaced);
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
	if (grow((void **)&res->unset, res->n_unset, sizeof(*res->unset)) < 0)
		return -ENOMEM;
	u = &res->unset[res->n_unset++];
	*u = *s;
	bprintf(u->replaced, sizeof(u->replaced), "%s: %s", s->origin, s->value);
	scopy(u->origin, sizeof(u->origin), origin);
	scopy(u->detail, sizeof(u->detail), detail ? detail : "");
	*s = res->v[--res->n];
	return 0;
}

static const char *const key_order[] = {
	"NCCL_IB_DISABLE",     "NCCL_IB_HCA",	     "NCCL_IB_GID_INDEX",
	"NCCL_IB_ADDR_FAMILY", "NCCL_IB_ADDR_RANGE", "NCCL_IB_ROCE_VERSION_NUM",
	"NCCL_SOCKET_IFNAME",
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

/* "a.b.c.d/nn" -> host-order address and prefix. */
static bool parse_cidr4(const char *cidr, uint32_t *addr, int *plen)
{
	char ip[RN_CIDR_MAX];
	const char *slash = strchr(cidr, '/');
	struct in_addr a;
	size_t len;

	if (!slash)
		return false;
	len = (size_t)(slash - cidr);
	if (len >= sizeof(ip))
		return false;
	memcpy(ip, cidr, len);
	ip[len] = '\0';
	if (inet_pton(AF_INET, ip, &a) != 1)
		return false;
	*addr = ntohl(a.s_addr);
	*plen = atoi(slash + 1);
	return *plen >= 0 && *plen <= 32;
}

/* The RoCE v2 GID entry of dev/port holding one of the port's IPv4 addresses. */
static void find_gid(const struct rn_nccl_node *node, const struct rn_nccl_port *p,
		     struct rn_nccl_port_use *u)
{
	if (p->n_ipv4 == 0) {
		u->gid_status = RN_NCCL_GID_NO_ADDR;
		return;
	}
	u->gid_status = RN_NCCL_GID_NO_MATCH;
	for (size_t a = 0; a < p->n_ipv4; a++) {
		char ip[RN_CIDR_MAX];
		const char *slash = strchr(p->ipv4[a], '/');
		size_t len = slash ? (size_t)(slash - p->ipv4[a]) : strlen(p->ipv4[a]);

		memcpy(ip, p->ipv4[a], len);
		ip[len] = '\0';
		for (size_t i = 0; i < node->gids.n; i++) {
			const struct rn_gid_entry *e = &node->gids.entries[i];

			if (e->port != p->port || e->type != RN_GID_ROCE_V2 ||
			    strcmp(e->dev, p->dev) != 0 || strcmp(e->ipv4, ip) != 0)
				continue;
			if (e->netdev[0] && p->netdev[0] && strcmp(e->netdev, p->netdev) != 0)
				continue;
			u->gid_status = RN_NCCL_GID_FOUND;
			u->gid_index = (int)e->index;
			scopy(u->gid_ipv4, sizeof(u->gid_ipv4), p->ipv4[a]);
			return; /* entries are sorted by index: the lowest wins */
		}
	}
}

/* Decides, for every port, whether NCCL can use it, and finds its GID. */
static int analyse_ports(const struct rn_nccl_node *node, struct rn_nccl_result *res)
{
	res->ports = calloc(node->n_ports ? node->n_ports : 1, sizeof(*res->ports));
	if (!res->ports)
		return -ENOMEM;
	res->n_ports = node->n_ports;
	for (size_t i = 0; i < node->n_ports; i++) {
		const struct rn_nccl_port *p = &node->ports[i];
		struct rn_nccl_port_use *u = &res->ports[i];

		scopy(u->dev, sizeof(u->dev), p->dev);
		u->port = p->port;
		scopy(u->netdev, sizeof(u->netdev), p->netdev);
		u->gid_index = -1;
		if (!p->active) {
			bprintf(u->why_not, sizeof(u->why_not), "port state is %s, not ACTIVE",
				p->state[0] ? p->state : "unknown");
			continue;
		}
		if (is_ethernet(p)) {
			if (!p->netdev[0]) {
				bprintf(u->why_not, sizeof(u->why_not),
					"RoCE port with no netdev bound to it");
				continue;
			}
			if (!p->netdev_here) {
				bprintf(u->why_not, sizeof(u->why_not),
					"its netdev %s is not in this network namespace (move it "
					"too: 'rdmans move %s TARGET --with-netdev', or give it to "
					"the pod through CNI)",
					p->netdev, p->dev);
				continue;
			}
			find_gid(node, p, u);
		} else if (!is_ib(p) && p->link_layer[0]) {
			bprintf(u->why_not, sizeof(u->why_not), "link layer '%s' is unknown",
				p->link_layer);
			continue;
		}
		u->used = true;
	}
	return 0;
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

/* True when `name` is a strict prefix of another device's name in the node. */
static bool prefix_of_other(const struct rn_nccl_node *node, const char *name)
{
	size_t len = strlen(name);

	for (size_t i = 0; i < node->n_ports; i++)
		if (strncmp(node->ports[i].dev, name, len) == 0 && node->ports[i].dev[len])
			return true;
	return false;
}

static int detect_hca(const struct rn_nccl_node *node, struct rn_nccl_result *res)
{
	char value[RN_NCCL_VALUE_MAX] = "", detail[RN_NCCL_DETAIL_MAX] = "";
	bool exact = false;
	const char *last = "";

	for (size_t i = 0; i < res->n_ports; i++) {
		const struct rn_nccl_port_use *u = &res->ports[i];
		const struct rn_nccl_port *p = &node->ports[i];
		size_t used, all;

		if (!u->used)
			continue;
		dev_port_counts(res, u->dev, &used, &all);
		if (all > 1)
			bappend(value, sizeof(value), "%s%s:%u", value[0] ? "," : "", u->dev,
				u->port);
		else if (strcmp(last, u->dev) != 0)
			bappend(value, sizeof(value), "%s%s", value[0] ? "," : "", u->dev);
		last = u->dev;
		exact = exact || prefix_of_other(node, u->dev);
		bappend(detail, sizeof(detail), "%s%s port %u %s (%s%s%s)", detail[0] ? "; " : "",
			u->dev, u->port, p->state, p->link_layer[0] ? p->link_layer : "?",
			p->netdev[0] ? ", " : "", p->netdev);
	}
	if (exact) {
		/* NCCL matches names as prefixes: mlx5_1 would also take mlx5_10. */
		char tmp[RN_NCCL_VALUE_MAX];

		bprintf(tmp, sizeof(tmp), "=%s", value);
		scopy(value, sizeof(value), tmp);
		bappend(detail, sizeof(detail),
			"; '=' asks for exact names (another device's name starts with one of "
			"these)");
	}
	return put(res, "NCCL_IB_HCA", value, RN_NCCL_SRC_DETECTED, "detected", detail);
}

/* The smallest CIDR holding every network in nets[]. */
static void cover_cidr(const uint32_t *nets, const int *plens, size_t n, char *buf, size_t len)
{
	uint32_t base = nets[0];
	int plen = plens[0];
	struct in_addr a;
	char ip[INET_ADDRSTRLEN];

	for (size_t i = 1; i < n; i++) {
		int common = 0;

		while (common < 32 && common < plen && common < plens[i] &&
		       ((base ^ nets[i]) & (0x80000000u >> common)) == 0)
			common++;
		if (common < plen)
			plen = common;
	}
	base = plen ? base & (0xffffffffu << (32 - plen)) : 0;
	a.s_addr = htonl(base);
	inet_ntop(AF_INET, &a, ip, sizeof(ip));
	bprintf(buf, len, "%s/%d", ip, plen);
}

static int detect_gid(const struct rn_nccl_node *node, struct rn_nccl_result *res)
{
	char detail[RN_NCCL_DETAIL_MAX] = "", differ[RN_NCCL_DETAIL_MAX] = "";
	uint32_t nets[64];
	int plens[64];
	size_t n_found = 0, n_roce = 0;
	int index = -1;
	bool agree = true;
	int r;

	for (size_t i = 0; i < res->n_ports; i++) {
		const struct rn_nccl_port_use *u = &res->ports[i];
		const struct rn_nccl_port *p = &node->ports[i];

		if (!u->used || !is_ethernet(p))
			continue;
		n_roce++;
		if (u->gid_status == RN_NCCL_GID_NO_ADDR) {
			r = warn(res,
				 "%s port %u: its netdev %s has no IPv4 address, so there is no "
				 "RoCE v2 GID to choose; give %s an address (CNI IPAM) or set "
				 "NCCL_IB_GID_INDEX yourself",
				 u->dev, u->port, p->netdev, p->netdev);
			if (r < 0)
				return r;
			continue;
		}
		if (u->gid_status == RN_NCCL_GID_NO_MATCH) {
			r = warn(res,
				 "%s port %u: no RoCE v2 GID holds the address of %s (%s); the "
				 "kernel may not have updated the GID table yet ('rdmans gids %s' "
				 "shows it)",
				 u->dev, u->port, p->netdev, p->ipv4[0], u->dev);
			if (r < 0)
				return r;
			continue;
		}
		if (index >= 0 && index != u->gid_index)
			agree = false;
		if (index < 0)
			index = u->gid_index;
		bappend(detail, sizeof(detail), "%sRoCE v2 GID %d of %s port %u holds %s (%s)",
			detail[0] ? "; " : "", u->gid_index, u->dev, u->port, u->gid_ipv4,
			p->netdev);
		bappend(differ, sizeof(differ), "%s%s:%u %d", differ[0] ? ", " : "", u->dev,
			u->port, u->gid_index);
		if (n_found < RN_ARRAY_SIZE(nets) &&
		    parse_cidr4(u->gid_ipv4, &nets[n_found], &plens[n_found]))
			n_found++;
	}
	if (n_roce == 0)
		return 0;
	if (index < 0)
		return 0; /* warned above; a profile's guess, if any, stays */
	if (agree) {
		char v[16];

		bprintf(v, sizeof(v), "%d", index);
		return put(res, "NCCL_IB_GID_INDEX", v, RN_NCCL_SRC_DETECTED, "detected", detail);
	}

	/* Devices disagree: one index cannot be right for all; NCCL >= 2.21 picks per device. */
	{
		char range[RN_CIDR_MAX];

		cover_cidr(nets, plens, n_found, range, sizeof(range));
		r = warn(res,
			 "the RoCE v2 GID index differs between devices (%s): one "
			 "NCCL_IB_GID_INDEX cannot be right for all, so NCCL_IB_ADDR_FAMILY, "
			 "NCCL_IB_ADDR_RANGE and NCCL_IB_ROCE_VERSION_NUM are set instead (NCCL "
			 ">= 2.21 picks the GID per device); older NCCL needs the devices split "
			 "between jobs",
			 differ);
		if (r == 0)
			r = drop(res, "NCCL_IB_GID_INDEX", "detected",
				 "the GID index differs between devices");
		if (r == 0)
			r = put(res, "NCCL_IB_ADDR_FAMILY", "AF_INET", RN_NCCL_SRC_DETECTED,
				"detected", "the pod's RDMA addresses are IPv4");
		if (r == 0)
			r = put(res, "NCCL_IB_ADDR_RANGE", range, RN_NCCL_SRC_DETECTED, "detected",
				detail);
		if (r == 0)
			r = put(res, "NCCL_IB_ROCE_VERSION_NUM", "2", RN_NCCL_SRC_DETECTED,
				"detected", "RoCE v2 GIDs");
		return r;
	}
}

/* Does an NCCL_SOCKET_IFNAME value ("eth", "=net1", "eth0,eth1", "^docker") match a netdev here? */
static bool ifname_matches(const struct rn_nccl_node *node, const char *value)
{
	bool exact = value[0] == '=';
	const char *list = value + exact;

	if (list[0] == '^')
		return true; /* an exclusion list leaves the choice to NCCL */
	while (*list) {
		size_t len = strcspn(list, ",");

		for (size_t i = 0; i < node->n_netdevs; i++)
			if (strncmp(node->netdevs[i], list, len) == 0 &&
			    (!exact || node->netdevs[i][len] == '\0'))
				return true;
		list += len + (list[len] == ',');
	}
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
	const char *pick = NULL, *dev = NULL;
	char value[IF_NAMESIZE + 2];

	for (size_t i = 0; i < res->n_ports && !pick; i++) {
		const struct rn_nccl_port *p = &node->ports[i];

		if (res->ports[i].used && p->netdev_here && p->n_ipv4 > 0) {
			pick = p->netdev;
			dev = p->dev;
		}
	}
	/* A profile's interface stays: the platforms use the pod network on purpose. */
	if (s || !pick)
		return 0;
	bprintf(detail, sizeof(detail), "the netdev of %s, which has an IPv4 address", dev);
	/* NCCL matches interface names as prefixes: net1 would also take net10 */
	bprintf(value, sizeof(value), "%s%s", netdev_prefix_of_other(node, pick) ? "=" : "", pick);
	return put(res, "NCCL_SOCKET_IFNAME", value, RN_NCCL_SRC_DETECTED, "detected", detail);
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
		bprintf(why, len, "auto: every active port is on an eRDMA device");
		return "alibaba-erdma";
	}
	if (ib && !eth) {
		bprintf(why, len, "auto: every active port is InfiniBand");
		return "ib";
	}
	if (eth)
		bprintf(why, len, "auto: %s",
			ib ? "Ethernet and InfiniBand ports" : "every active port is Ethernet");
	else
		bprintf(why, len, "auto: no active port to tell, RoCE assumed");
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

	if (node->n_ports == 0)
		return rn_error_set(err, ENODEV,
				    "no RDMA device in this network namespace: NCCL would fall "
				    "back to sockets ('rdmans dev --all-netns' shows where the "
				    "devices are; 'rdmans move DEV TARGET' brings one here)");
	bprintf(msg, sizeof(msg), "no RDMA port here that NCCL could use:");
	for (size_t i = 0; i < res->n_ports; i++)
		bappend(msg, sizeof(msg), "%s %s port %u: %s", i ? ";" : "", res->ports[i].dev,
			res->ports[i].port, res->ports[i].why_not);
	return rn_error_set(err, ENODEV, "%s", msg);
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

	bprintf(origin, sizeof(origin), "profile %s", prof->name);
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
	const struct rn_nccl_profile *prof;
	const char *profile = NULL;
	size_t n = req->n_layers;
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
	scopy(res.profile, sizeof(res.profile), prof->name);

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
		if (!any)
			return describe_unusable(node, &res, err);
		for (size_t i = 0; i < res.n_ports; i++) {
			if (res.ports[i].used || !res.ports[i].why_not[0])
				continue;
			r = warn(&res, "%s port %u is left out: %s", res.ports[i].dev,
				 res.ports[i].port, res.ports[i].why_not);
			if (r < 0)
				goto oom;
		}
		r = put(&res, "NCCL_IB_DISABLE", "0", RN_NCCL_SRC_DETECTED, "detected",
			"RDMA ports are here");
		if (r == 0)
			r = detect_hca(node, &res);
		if (r == 0)
			r = detect_gid(node, &res);
		if (r == 0)
			r = detect_ifname(node, &res);
		if (r < 0)
			goto oom;
	} else if (req->addr_range) {
		uint32_t a;
		int plen;

		if (!parse_cidr4(req->addr_range, &a, &plen))
			return rn_error_set(err, EINVAL,
					    "address range '%s' is not an IPv4 CIDR (a.b.c.d/nn)",
					    req->addr_range);
		r = put(&res, "NCCL_IB_ADDR_FAMILY", "AF_INET", RN_NCCL_SRC_OPTION, "--addr-range",
			"the pool is IPv4");
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
	}
	if (res.n > 1)
		qsort(res.v, res.n, sizeof(*res.v), cmp_setting);
	*out = res;
	memset(&res, 0, sizeof(res));
	return 0;
oom:
	return rn_error_set(err, ENOMEM, "out of memory resolving NCCL settings");
}
