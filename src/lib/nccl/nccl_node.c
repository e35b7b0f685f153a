// SPDX-License-Identifier: Apache-2.0
/*
 * The node the NCCL resolver works on (nccl_node.h): a network namespace's
 * RDMA ports, bound netdevs, GIDs (sysfs) and addresses (rtnetlink).
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
#include "rdmans/nccl.h"
#include "rdmans/nccl_node.h"
#include "rdmans/netns.h"
#include "rdmans/port_netdev.h"
#include "rdmans/sysfs.h"
#include "rdmans/sysfs_gid.h"
#include "rdmans/sysfs_port.h"
#include "rdmans/util.h"

void rn_nccl_node_free(struct rn_nccl_node *node)
{
	if (!node)
		return;
	free(node->ports);
	free(node->netdevs);
	rn_gid_table_free(&node->gids);
	memset(node, 0, sizeof(*node));
}

/* The resolver's view of one port: its state and its bound netdev (port_netdev.h). */
static void port_from_sysfs(struct rn_nccl_port *port, const struct rn_sysfs_port *sp)
{
	memset(port, 0, sizeof(*port));
	(void)rn_strscpy(port->dev, sizeof(port->dev), sp->dev);
	port->port = sp->port;
	(void)rn_strscpy(port->state, sizeof(port->state), sp->state_name);
	port->active = sp->state == 4 /* IB_PORT_ACTIVE */ || strcmp(sp->state_name, "ACTIVE") == 0;
	(void)rn_strscpy(port->link_layer, sizeof(port->link_layer), sp->link_layer);
	port->netdev = sp->netdev;
}

int rn_nccl_node_from_facts(const struct rn_sysfs_rdma_facts *sf, struct rn_nccl_node *out,
			    struct rn_error *err)
{
	_cleanup_nccl_node_ struct rn_nccl_node node = { 0 };
	int r;

	memset(out, 0, sizeof(*out));
	node.no_rdma = sf->n_devs == 0 && !rn_sysfs_rdma_loaded();
	if (sf->gids.n) {
		node.gids.entries = calloc(sf->gids.n, sizeof(*node.gids.entries));
		if (!node.gids.entries)
			return rn_error_set(err, ENOMEM, "out of memory");
		memcpy(node.gids.entries, sf->gids.entries,
		       sf->gids.n * sizeof(*node.gids.entries));
		node.gids.n = sf->gids.n;
	}
	r = rn_sysfs_netdev_list(&node.netdevs, &node.n_netdevs, err);
	if (r < 0)
		return r;
	node.ports = calloc(sf->n_ports ? sf->n_ports : 1, sizeof(*node.ports));
	if (!node.ports)
		return rn_error_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < sf->n_ports; i++) { /* sysfs sorts them as the resolver wants */
		struct rn_nccl_port *p = &node.ports[node.n_ports++];

		port_from_sysfs(p, &sf->ports[i]);
		for (size_t d = 0; d < sf->n_devs; d++)
			if (strcmp(sf->devs[d].name, p->dev) == 0) {
				(void)rn_strscpy(p->pci_bdf, sizeof(p->pci_bdf),
						 sf->devs[d].pci_bdf);
				p->iwarp = sf->devs[d].node_type == RN_NODE_RNIC;
			}
	}
	*out = node;
	memset(&node, 0, sizeof(node));
	return 0;
}

int rn_nccl_node_from_sysfs(struct rn_nccl_node *out, struct rn_error *err)
{
	_cleanup_(rn_sysfs_rdma_facts_free) struct rn_sysfs_rdma_facts sf = { 0 };
	int r;

	memset(out, 0, sizeof(*out));
	r = rn_sysfs_rdma_facts_read(&sf, err);
	if (r < 0)
		return r;
	return rn_nccl_node_from_facts(&sf, out, err);
}

/*
 * "a.b.c.d/nn" or "x::y/nn" (no "/nn": a host address) -> family, the
 * address as a GID holds it (IPv4-mapped for IPv4) and the prefix length.
 */

static bool is_link_local6(const uint8_t raw[16])
{
	return raw[0] == 0xfe && (raw[1] & 0xc0) == 0x80;
}

int rn_nccl_node_add_addr(struct rn_nccl_node *node, const char *netdev, const char *cidr,
			  struct rn_error *err)
{
	uint8_t raw[16];
	int family, plen;

	if (rn_nccl_cidr_parse(cidr, &family, raw, &plen) < 0)
		return rn_error_set(
			err, EINVAL,
			"'%s' is not an IPv4 or IPv6 address/prefix (a.b.c.d/nn, x::y/nn)", cidr);
	if (family == AF_INET6 && is_link_local6(raw))
		return 0;
	for (size_t i = 0; i < node->n_ports; i++) {
		struct rn_nccl_port *p = &node->ports[i];

		if (strcmp(p->netdev.name, netdev) != 0)
			continue;
		if (family == AF_INET && p->n_ipv4 < RN_NCCL_MAX_ADDRS)
			(void)rn_strscpy(p->ipv4[p->n_ipv4++], RN_CIDR_MAX, cidr);
		else if (family == AF_INET6 && p->n_ipv6 < RN_NCCL_MAX_ADDRS)
			(void)rn_strscpy(p->ipv6[p->n_ipv6++], RN_CIDR_MAX, cidr);
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
	_cleanup_(rn_sysfs_rdma_facts_free) struct rn_sysfs_rdma_facts sf = { 0 };
	struct rn_error nl_err = { 0 };
	int r;

	r = rn_sysfs_rdma_facts_read(&sf, err);
	if (r < 0)
		return r;
	/* without RDMA netlink sysfs's binding stands: the resolver must answer (doctor reports it) */
	(void)rn_port_netdev_decide_all(sf.ports, sf.n_ports, &nl_err);
	r = rn_nccl_node_from_facts(&sf, node, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < node->n_ports; i++) {
		struct rn_nccl_port *p = &node->ports[i];
		char cidrs[2 * RN_NCCL_MAX_ADDRS][64]; /* IPv4, IPv6 global and link-local */
		bool seen = false;
		size_t n = 0;

		if (!p->netdev.here)
			continue;
		for (size_t j = 0; j < i; j++)
			seen = seen || (node->ports[j].netdev.here &&
					strcmp(node->ports[j].netdev.name, p->netdev.name) == 0);
		if (seen)
			continue; /* its addresses went to every port bound to it */
		r = rn_port_netdev_addrs(p->netdev.name, cidrs, RN_ARRAY_SIZE(cidrs), &n, err);
		if (r == -ENODEV) {
			/* listed by sysfs, gone since: treat as absent */
			rn_error_clear(err);
			rn_port_netdev_not_here(&p->netdev);
			continue;
		}
		if (r < 0)
			return r;
		for (size_t a = 0; a < n && a < RN_ARRAY_SIZE(cidrs); a++) {
			r = rn_nccl_node_add_addr(node, p->netdev.name, cidrs[a], err);
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
