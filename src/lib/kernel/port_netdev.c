// SPDX-License-Identifier: Apache-2.0
/*
 * A port's bound netdev in this network namespace: sysfs's binding, corrected
 * by RDMA netlink in one place, and the bound netdev's addresses (see port_netdev.h).
 */
#include <net/if.h>
#include <string.h>
#include <sys/socket.h>

#include "rdmans/cleanup.h"
#include "rdmans/link.h"
#include "rdmans/port_netdev.h"
#include "rdmans/rdma_nl.h"
#include "rdmans/sysfs.h"
#include "rdmans/sysfs_port.h"
#include "rdmans/util.h"

void rn_port_netdev_not_here(struct rn_sysfs_netdev *nd)
{
	char name[IF_NAMESIZE];

	(void)rn_strscpy(name, sizeof(name), nd->name);
	rn_sysfs_netdev_read(NULL, nd);
	(void)rn_strscpy(nd->name, sizeof(nd->name), name);
}

void rn_port_netdev_decide(struct rn_sysfs_port *p, enum rn_rdma_binding binding, const char *name)
{
	char bound[IF_NAMESIZE];

	if (strcmp(p->link_layer, "InfiniBand") == 0)
		return; /* its IPoIB netdev is sysfs's, per netns */
	switch (binding) {
	case RN_RDMA_BINDING_HERE:
		(void)rn_strscpy(bound, sizeof(bound), name);
		rn_sysfs_netdev_read(bound, &p->netdev);
		p->netdev_source = RN_PORT_NETDEV_NETLINK;
		break;
	case RN_RDMA_BINDING_NOT_HERE:
		/* the name says where the port is bound; class/net's facts of that name are another's */
		rn_port_netdev_not_here(&p->netdev);
		break;
	case RN_RDMA_BINDING_UNKNOWN:
		break;
	}
}

int rn_port_netdev_decide_all(struct rn_sysfs_port *ports, size_t n, struct rn_error *err)
{
	_cleanup_rdma_devs_ struct rn_rdma_devs devs = { 0 };
	_cleanup_rdma_ struct rn_rdma *rdma = NULL;
	int r;

	if (strcmp(rn_sysfs_root(), "/sys") != 0)
		return 0;
	r = rn_rdma_open(&rdma, err);
	if (r == 0)
		r = rn_rdma_dev_dump(rdma, &devs, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		const char *name;
		enum rn_rdma_binding b =
			rn_rdma_port_binding(&devs, ports[i].dev, ports[i].port, &name);

		rn_port_netdev_decide(&ports[i], b, name);
	}
	return 0;
}

int rn_port_netdev_addrs(const char *name, char (*cidrs)[64], size_t max, size_t *ret_n,
			 struct rn_error *err)
{
	struct rn_link link;
	int r;

	*ret_n = 0;
	r = rn_link_by_name(name, &link, err);
	if (r < 0)
		return r;
	return rn_link_addr_list(link.ifindex, AF_UNSPEC, cidrs, max, ret_n, err);
}
