/* SPDX-License-Identifier: Apache-2.0 */
/* A port's bound netdev in this network namespace, decided in one place, and its addresses (port_netdev.c). */
#ifndef RDMANS_PORT_NETDEV_H
#define RDMANS_PORT_NETDEV_H

#include <stddef.h>

#include "rdmans/error.h"
#include "rdmans/rdma_nl.h"
#include "rdmans/sysfs_port.h"

/* Marks a bound netdev not in this netns: its name stays, every other fact is unknown. */
void rn_port_netdev_not_here(struct rn_sysfs_netdev *nd);
/*
 * The one rule for the netdev bound to port p in this thread's netns. p
 * comes with sysfs's binding (rn_sysfs_port_read(): GID table, rxe's parent,
 * the device's one netdev); RDMA netlink's word on the port (`binding`,
 * rn_rdma_port_binding()) decides where it has one:
 *   HERE      bound to `name`, a netdev of this netns: it replaces sysfs's;
 *   NOT_HERE  bound to no netdev of this netns (another netns's, or none):
 *             sysfs's name stays, not here, its facts unknown (a netdev of
 *             that name here is another one: two pods' soft-RoCE net1);
 *   UNKNOWN   netlink does not list the port: sysfs's binding stands.
 * Netlink has no say on an InfiniBand port: no IB port is bound to a netdev,
 * its IPoIB netdev is sysfs's, made per netns.
 */
void rn_port_netdev_decide(struct rn_sysfs_port *p, enum rn_rdma_binding binding, const char *name);
/*
 * rn_port_netdev_decide() on every port of ports[], with RDMA netlink's word
 * from one dump in this thread's netns. On a sysfs that is not the kernel's
 * (rn_sysfs_root() is not /sys: tests' fake trees) netlink's devices are not
 * the tree's: the ports keep sysfs's binding, and netlink is not asked.
 * -errno (err set) when netlink cannot be asked; the ports keep sysfs's binding.
 */
int rn_port_netdev_decide_all(struct rn_sysfs_port *ports, size_t n, struct rn_error *err);

/*
 * The addresses of the bound netdev `name`, asked of this netns (rtnetlink):
 * IPv4 and IPv6, link-local too, as "a.b.c.d/nn" or "x::y/nn"; up to max in
 * cidrs, *ret_n the total. -ENODEV (err set) when no netdev of that name is
 * here (gone since sysfs listed it).
 */
int rn_port_netdev_addrs(const char *name, char (*cidrs)[64], size_t max, size_t *ret_n,
			 struct rn_error *err);

#endif
