// SPDX-License-Identifier: Apache-2.0
/*
 * The NCCL resolver's rules on a node (nccl_rules.h): which ports NCCL can
 * use, the address family, the GID index or range, NCCL_IB_HCA,
 * NCCL_SOCKET_IFNAME, and the checks of values layers set.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmans/nccl_rules.h"
#include "rdmans/rails.h"
#include "rdmans/sysfs_gid.h"
#include "rdmans/util.h"

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
		if (e->netdev[0] && p->netdev.name[0] && strcmp(e->netdev, p->netdev.name) != 0)
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
int rn_nccl_rules_ports(const struct rn_nccl_node *node, struct rn_nccl_result *res)
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
		(void)rn_strscpy(u->netdev, sizeof(u->netdev), p->netdev.name);
		u->gid_index = -1;
		if (!p->active) {
			(void)rn_snprintf(u->why_not, sizeof(u->why_not),
					  "port state is %s, not ACTIVE",
					  p->state[0] ? p->state : "unknown");
			continue;
		}
		if (p->iwarp) {
			/*
			 * NCCL's net_ib brings its QPs up with ibv_modify_qp and
			 * no connection manager; an iWARP QP is connected only
			 * through the iWARP CM (rdma_cm).
			 */
			(void)rn_snprintf(
				u->why_not, sizeof(u->why_not),
				"iWARP device: NCCL's IB transport connects its queue pairs "
				"without a connection manager, which iWARP requires (rdma_cm); "
				"NCCL cannot use it (its traffic goes over sockets, or another "
				"device)");
			continue;
		}
		if (is_ethernet(p)) {
			if (!p->netdev.name[0]) {
				(void)rn_snprintf(u->why_not, sizeof(u->why_not),
						  "RoCE port with no netdev bound to it");
				continue;
			}
			if (!p->netdev.here) {
				(void)rn_snprintf(
					u->why_not, sizeof(u->why_not),
					"its netdev %s is not in this network namespace (move it "
					"too: 'rdmans move %s TARGET --with-netdev', or give it to "
					"the pod through CNI)",
					p->netdev.name, p->dev);
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
void rn_nccl_rules_family(const struct rn_nccl_node *node, struct rn_nccl_result *res,
			  const struct rn_nccl_layer *asked)
{
	size_t v4 = 0, v6 = 0, roce = 0;

	for (size_t i = 0; i < res->n_ports; i++) {
		if (!res->ports[i].used || !is_ethernet(&node->ports[i]))
			continue;
		roce++;
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
		(void)rn_snprintf(res->family_why, sizeof(res->family_why), "%s",
				  roce ? "no address on the RDMA netdevs yet: IPv4 assumed"
				       : "no RoCE port in use, so no GID to choose: IPv4 assumed");
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

int rn_nccl_rules_rails(const struct rn_nccl_node *node, const struct rn_sysfs_pci_fn *gpus,
			size_t n_gpus, struct rn_nccl_result *res)
{
	_cleanup_free_ struct rn_rail_dev *devs = NULL;
	_cleanup_free_ struct rn_rail *rails = NULL;
	struct rn_error err = { 0 };
	size_t n = 0;

	if (!n_gpus || !res->n_ports)
		return 0;
	devs = calloc(res->n_ports, sizeof(*devs));
	rails = calloc(n_gpus, sizeof(*rails));
	if (!devs || !rails)
		return -ENOMEM;
	for (size_t i = 0; i < res->n_ports; i++) {
		bool seen = false;

		for (size_t j = 0; j < n; j++)
			seen = seen || strcmp(devs[j].name, res->ports[i].dev) == 0;
		if (res->ports[i].used && !seen)
			rn_rails_dev_read(&devs[n++], res->ports[i].dev, node->ports[i].pci_bdf);
	}
	if (!n)
		return 0;
	if (rn_rails_choose(gpus, n_gpus, devs, n, rails, &err) < 0)
		return rn_nccl_result_warn(res,
					   "NCCL_IB_HCA is not narrowed to the RDMA devices near "
					   "this container's %zu GPUs: %s",
					   n_gpus, err.msg);
	for (size_t k = 0; k < n_gpus; k++) {
		const struct rn_rail_dev *d = &devs[rails[k].dev];

		rn_strappend(res->rails, sizeof(res->rails), "%sGPU %s: %s (%s%s)",
			     res->rails[0] ? "; " : "", gpus[rails[k].gpu].bdf, d->name,
			     rn_pci_distance_name(rails[k].distance),
			     rails[k].shared ? ", shared: fewer RDMA devices than GPUs" : "");
		for (size_t i = 0; i < res->n_ports; i++)
			if (res->ports[i].used && !res->ports[i].rail &&
			    strcmp(res->ports[i].dev, d->name) == 0)
				res->ports[i].rail = (unsigned)k + 1;
	}
	for (size_t i = 0; i < res->n_ports; i++) {
		struct rn_nccl_port_use *u = &res->ports[i];

		if (!u->used || u->rail)
			continue;
		u->used = false;
		u->off_rail = true;
		(void)rn_snprintf(u->why_not, sizeof(u->why_not),
				  "not the nearest RDMA device of any of this container's GPUs "
				  "(%s)",
				  res->rails);
	}
	return 0;
}

/* The next used port by rail rank (then position) after the one at `prev` (SIZE_MAX: first). */
static size_t next_used(const struct rn_nccl_result *res, size_t prev)
{
	size_t best = SIZE_MAX;

	for (size_t i = 0; i < res->n_ports; i++) {
		const struct rn_nccl_port_use *u = &res->ports[i];
		bool after_prev, before_best;

		if (!u->used)
			continue;
		after_prev = prev == SIZE_MAX || u->rail > res->ports[prev].rail ||
			     (u->rail == res->ports[prev].rail && i > prev);
		before_best = best == SIZE_MAX || u->rail < res->ports[best].rail;
		if (after_prev && before_best)
			best = i;
	}
	return best;
}

int rn_nccl_rules_hca(const struct rn_nccl_node *node, struct rn_nccl_result *res)
{
	char value[RN_NCCL_VALUE_MAX] = "=", detail[RN_NCCL_DETAIL_MAX] = "";
	const char *last = "";

	for (size_t i = next_used(res, SIZE_MAX); i != SIZE_MAX; i = next_used(res, i)) {
		const struct rn_nccl_port_use *u = &res->ports[i];
		const struct rn_nccl_port *p = &node->ports[i];
		size_t used, all;

		dev_port_counts(res, u->dev, &used, &all);
		if (all > 1)
			rn_strappend(value, sizeof(value), "%s%s:%u", value[1] ? "," : "", u->dev,
				     u->port);
		else if (strcmp(last, u->dev) != 0)
			rn_strappend(value, sizeof(value), "%s%s", value[1] ? "," : "", u->dev);
		last = u->dev;
		rn_strappend(detail, sizeof(detail), "%s%s port %u %s (%s%s%s)",
			     detail[0] ? "; " : "", u->dev, u->port, p->state,
			     p->link_layer[0] ? p->link_layer : "?", p->netdev.name[0] ? ", " : "",
			     p->netdev.name);
	}
	if (res->rails[0])
		rn_strappend(detail, sizeof(detail), "; nearest to this container's GPUs first: %s",
			     res->rails);
	/* NCCL matches names as prefixes unless the list starts with '=': mlx5_1 takes mlx5_10 */
	rn_strappend(detail, sizeof(detail), "; '=': exact names, as NCCL's documentation advises");
	return rn_nccl_result_put(res, "NCCL_IB_HCA", value, RN_NCCL_SRC_DETECTED, "detected",
				  detail);
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

/* What the used RoCE ports' GIDs say (gid_survey()). */
struct gid_survey {
	size_t n_roce; /* used RoCE ports */
	int index; /* the first GID index found, -1 none */
	bool agree; /* every port found has that index */
	char detail[RN_NCCL_DETAIL_MAX]; /* "RoCE v2 GID 3 of mlx5_0 port 1 holds ..." */
	char differ[RN_NCCL_DETAIL_MAX]; /* "mlx5_0:1 3, mlx5_1:1 5" */
	size_t n_found;
	uint8_t raws[64][16]; /* the addresses found, GID form */
};

/* Warns about a used RoCE port whose GID cannot be chosen: no address, or no GID holds it. */
static int warn_no_gid(const struct rn_nccl_port *p, const struct rn_nccl_port_use *u,
		       struct rn_nccl_result *res)
{
	int other = res->family == AF_INET ? AF_INET6 : AF_INET;

	if (u->gid_status == RN_NCCL_GID_NO_ADDR)
		return rn_nccl_result_warn(
			res,
			"%s port %u: its netdev %s has no %s address, so there is no RoCE v2 GID "
			"to choose; give %s an address (CNI IPAM)%s or set NCCL_IB_GID_INDEX "
			"yourself",
			u->dev, u->port, p->netdev.name, family_name(res->family), p->netdev.name,
			port_naddrs(p, other)
				? ", choose the other family (\"family\" in the nccl block)"
				: "");
	return rn_nccl_result_warn(
		res,
		"%s port %u: no RoCE v2 GID holds the address of %s (%s); the "
		"kernel may not have updated the GID table yet ('rdmans gids %s' "
		"shows it)",
		u->dev, u->port, p->netdev.name, port_addr(p, res->family, 0), u->dev);
}

/* Gathers the GIDs of the used RoCE ports, warning about those that have none. */
static int gid_survey(const struct rn_nccl_node *node, struct rn_nccl_result *res,
		      struct gid_survey *s)
{
	memset(s, 0, sizeof(*s));
	s->index = -1;
	s->agree = true;
	for (size_t i = 0; i < res->n_ports; i++) {
		const struct rn_nccl_port_use *u = &res->ports[i];
		const struct rn_nccl_port *p = &node->ports[i];
		int fam, plen, r;

		if (!u->used || !is_ethernet(p))
			continue;
		s->n_roce++;
		if (u->gid_status != RN_NCCL_GID_FOUND) {
			r = warn_no_gid(p, u, res);
			if (r < 0)
				return r;
			continue;
		}
		if (s->index >= 0 && s->index != u->gid_index)
			s->agree = false;
		if (s->index < 0)
			s->index = u->gid_index;
		rn_strappend(s->detail, sizeof(s->detail),
			     "%sRoCE v2 GID %d of %s port %u holds %s (%s)",
			     s->detail[0] ? "; " : "", u->gid_index, u->dev, u->port, u->gid_addr,
			     p->netdev.name);
		rn_strappend(s->differ, sizeof(s->differ), "%s%s:%u %d", s->differ[0] ? ", " : "",
			     u->dev, u->port, u->gid_index);
		if (s->n_found < RN_ARRAY_SIZE(s->raws) &&
		    rn_nccl_cidr_parse(u->gid_addr, &fam, s->raws[s->n_found], &plen) == 0)
			s->n_found++;
	}
	return 0;
}

/* No used RoCE port has its GID yet (warned): NCCL >= 2.21 still finds it once it is there. */
static int gid_none_found(struct rn_nccl_result *res)
{
	if (res->family != AF_INET6)
		return 0; /* a profile's guess, if any, stays */
	return rn_nccl_result_put(res, "NCCL_IB_ADDR_FAMILY", "AF_INET6", RN_NCCL_SRC_DETECTED,
				  "detected",
				  "IPv6 RDMA addresses: NCCL >= 2.21 looks for an IPv6 RoCE v2 GID "
				  "(its default family is IPv4)");
}

/* The indexes differ and NCCL picks the GID per device: its family and range, no index. */
static int gid_per_device(struct rn_nccl_result *res, struct gid_survey *s, const char *range)
{
	int r;

	rn_strappend(s->detail, sizeof(s->detail), "; %s", rn_nccl_ver_class_desc(res->ver_class));
	r = rn_nccl_result_drop(res, "NCCL_IB_GID_INDEX", "detected",
				"the GID index differs between devices: NCCL picks it per device");
	if (r == 0)
		r = rn_nccl_result_put(res, "NCCL_IB_ADDR_FAMILY",
				       res->family == AF_INET6 ? "AF_INET6" : "AF_INET",
				       RN_NCCL_SRC_DETECTED, "detected", res->family_why);
	if (r == 0)
		r = rn_nccl_result_put(res, "NCCL_IB_ADDR_RANGE", range, RN_NCCL_SRC_DETECTED,
				       "detected", s->detail);
	if (r == 0)
		r = rn_nccl_result_put(res, "NCCL_IB_ROCE_VERSION_NUM", "2", RN_NCCL_SRC_DETECTED,
				       "detected", "RoCE v2 GIDs");
	return r;
}

/* The GID index most used ports share (the first of equals). */
static int most_shared_index(const struct rn_nccl_result *res)
{
	size_t best_n = 0;
	int best = -1;

	for (size_t i = 0; i < res->n_ports; i++) {
		size_t n = 0;

		if (!res->ports[i].used || res->ports[i].gid_status != RN_NCCL_GID_FOUND)
			continue;
		for (size_t j = 0; j < res->n_ports; j++)
			n += res->ports[j].used && res->ports[j].gid_status == RN_NCCL_GID_FOUND &&
			     res->ports[j].gid_index == res->ports[i].gid_index;
		if (n > best_n) {
			best_n = n;
			best = res->ports[i].gid_index;
		}
	}
	return best;
}

/*
 * The indexes differ and NCCL takes one for every device (`why`): the one
 * most ports share, the other ports left out. Returns that index or -ENOMEM.
 */
static int gid_one_index(struct rn_nccl_result *res, struct gid_survey *s, const char *why)
{
	int best = most_shared_index(res);
	int r;

	s->detail[0] = '\0';
	for (size_t i = 0; i < res->n_ports; i++) {
		struct rn_nccl_port_use *u = &res->ports[i];

		if (!u->used || u->gid_status != RN_NCCL_GID_FOUND)
			continue;
		if (u->gid_index == best) {
			rn_strappend(s->detail, sizeof(s->detail),
				     "%sRoCE v2 GID %d of %s port %u holds %s (%s)",
				     s->detail[0] ? "; " : "", u->gid_index, u->dev, u->port,
				     u->gid_addr, u->netdev);
			continue;
		}
		u->used = false;
		(void)rn_snprintf(u->why_not, sizeof(u->why_not),
				  "its RoCE v2 GID index is %d, not %d: %s", u->gid_index, best,
				  why);
	}
	r = rn_nccl_result_warn(
		res,
		"the RoCE v2 GID index differs between devices (%s), and %s: "
		"NCCL_IB_GID_INDEX=%d, and only the ports with that index are used%s",
		s->differ, why, best,
		res->ver_class == RN_NCCL_VER_UNKNOWN
			? " (if the job's NCCL is >= 2.21, name it: \"nccl_version\" in the nccl "
			  "block or --nccl-version, and every port is used)"
			: "");
	return r < 0 ? r : best;
}

int rn_nccl_rules_gid(const struct rn_nccl_node *node, struct rn_nccl_result *res)
{
	char why[RN_NCCL_DETAIL_MAX], range[RN_CIDR_MAX + 8], v[16];
	struct gid_survey s;
	int index, r;

	r = gid_survey(node, res, &s);
	if (r < 0 || s.n_roce == 0)
		return r;
	if (s.index < 0)
		return gid_none_found(res);
	index = s.index;
	if (!s.agree) {
		cover_cidr((const uint8_t(*)[16])s.raws, s.n_found, res->family, range,
			   sizeof(range));
		why_not_auto(node, res, range, why, sizeof(why));
		if (!why[0]) /* NCCL picks the GID per device: one index cannot be right for all */
			return gid_per_device(res, &s, range);
		index = gid_one_index(res, &s, why);
		if (index < 0)
			return index;
	} else {
		rn_strappend(s.detail, sizeof(s.detail),
			     "; an explicit index is right for every NCCL version");
	}
	(void)rn_snprintf(v, sizeof(v), "%d", index);
	r = rn_nccl_result_put(res, "NCCL_IB_GID_INDEX", v, RN_NCCL_SRC_DETECTED, "detected",
			       s.detail);
	if (r == 0 && res->family == AF_INET6)
		r = rn_nccl_result_put(
			res, "NCCL_IB_ADDR_FAMILY", "AF_INET6", RN_NCCL_SRC_DETECTED, "detected",
			"IPv6 RDMA addresses: NCCL_IB_GID_INDEX decides; without it NCCL >= 2.21 "
			"would look for an IPv4 GID (its default family)");
	return r;
}

/* Whether an NCCL_SOCKET_IFNAME value ("eth", "=net1", "^docker", "^=lo") takes a netdev here. */
bool rn_nccl_rules_ifname_matches(const struct rn_nccl_node *node, const char *value)
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

int rn_nccl_rules_ifname(const struct rn_nccl_node *node, struct rn_nccl_result *res)
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

			if (!res->ports[i].used || !p->netdev.here)
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
			  netdev_prefix_of_other(node, pick->netdev.name) ? "=" : "",
			  pick->netdev.name);
	r = rn_nccl_result_put(res, "NCCL_SOCKET_IFNAME", value, RN_NCCL_SRC_DETECTED, "detected",
			       detail);
	if (r == 0 && (pick->n_ipv4 == 0 || res->family == AF_INET6) && pick->n_ipv6 > 0) {
		(void)rn_snprintf(detail, sizeof(detail), "%s",
				  pick->n_ipv4 == 0
					  ? "bootstrap goes over IPv6: the interface has no IPv4 "
					    "address"
					  : "IPv6 chosen: bootstrap over IPv6 too");
		r = rn_nccl_result_put(res, "NCCL_SOCKET_FAMILY", "AF_INET6", RN_NCCL_SRC_DETECTED,
				       "detected", detail);
	}
	return r;
}

/* Warns about NCCL_IB_HCA entries (from a layer) that match nothing here, or more than meant. */
int rn_nccl_rules_check_hca(const struct rn_nccl_node *node, struct rn_nccl_result *res)
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
			r = rn_nccl_result_warn(
				res,
				"NCCL_IB_HCA=%s (%s): entry '%s' matches no RDMA device in this "
				"network namespace ('rdmans dev' lists them)",
				s->value, s->origin, l.v[e].name);
		else if (also[0])
			r = rn_nccl_result_warn(
				res,
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
	    rn_nccl_result_warn(
		    res,
		    "NCCL_IB_HCA=%s (%s) selects no RDMA port NCCL could use here: NCCL falls back "
		    "to sockets",
		    s->value, s->origin) < 0)
		return -ENOMEM;
	return 0;
}

const char *rn_nccl_rules_auto_profile(const struct rn_nccl_node *node, char *why, size_t len)
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

int rn_nccl_rules_unusable(const struct rn_nccl_node *node, const struct rn_nccl_result *res,
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
