/* SPDX-License-Identifier: Apache-2.0 */
/* Per-port facts, the one-pass read of every port, class/net and the counter sets (sysfs_port.c). */
/* sysfs.h first: it includes this header once its own types are there */
#include "rdmans/sysfs.h"

#ifndef RDMANS_SYSFS_PORT_H
#define RDMANS_SYSFS_PORT_H

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdmans/error.h"
#include "rdmans/sysfs_gid.h"

/* ---- per-port facts: the one reader of ports/P and of the bound netdev's class/net ---- */

/*
 * A netdev as ROOT/class/net/IF shows it; as a port's bound netdev (the
 * ports of doctor, the NCCL resolver and the exporter embed it), what the one
 * rule decided (rn_port_netdev_decide()). "Up" has two meanings and both are
 * here: admin_up is IFF_UP of `flags` (`ip link set up`), oper_up is
 * `operstate` "up" (RFC 2863: carrier and lower layers too). A file that
 * cannot be read leaves its field unknown; a netdev that is not here has
 * every field but its name unknown.
 */
struct rn_sysfs_netdev {
	char name[IF_NAMESIZE]; /* "" when none */
	bool here; /* class/net/IF exists: it is in this sysfs's netns */
	int ifindex; /* 0 unknown */
	int mtu; /* -1 unknown */
	int admin_up; /* IFF_UP in flags: 1, 0, -1 unknown */
	int oper_up; /* operstate is "up": 1, 0, -1 unknown */
	char operstate[16]; /* "up", "down", "lowerlayerdown", ...; "" unknown */
};

/* Where rn_sysfs_port.netdev comes from. */
enum rn_port_netdev_source {
	RN_PORT_NETDEV_NONE = 0,
	RN_PORT_NETDEV_NETLINK, /* RDMA netlink's binding (rn_port_netdev_decide()) */
	RN_PORT_NETDEV_GID, /* the lowest GID slot that names one (gid_attrs/ndevs/N) */
	RN_PORT_NETDEV_PARENT, /* rdma_rxe's DEV/parent */
	RN_PORT_NETDEV_DEVICE, /* the one netdev of a one-port device's parent (IPoIB's ib0) */
};

/* One port of an RDMA device as ROOT/class/infiniband/DEV/ports/P shows it. */
struct rn_sysfs_port {
	char dev[RN_RDMA_NAME_MAX];
	uint32_t port;
	uint8_t state; /* IB_PORT_* of "4: ACTIVE", 0 unknown */
	char state_name[24]; /* "ACTIVE", "DOWN", ... ("" unreadable) */
	uint8_t phys_state; /* of "5: LinkUp", 0 unknown */
	char link_layer[16]; /* "Ethernet", "InfiniBand", "" unreadable */
	char rate[64]; /* "100 Gb/sec (4X EDR)", "" unreadable */
	unsigned gid_tbl_len; /* slots in the GID table (gids/N entries) */
	enum rn_port_netdev_source netdev_source;
	struct rn_sysfs_netdev netdev; /* the bound netdev; name "" when none */
};

/* Reads class/net/IF of `ifname` ("" or NULL: nothing bound; every field unknown). */
void rn_sysfs_netdev_read(const char *ifname, struct rn_sysfs_netdev *out);
/*
 * Reads port `port` of RDMA device `dev` and its bound netdev as sysfs binds
 * it, in this order: the lowest GID slot that names one, else rxe's
 * DEV/parent, else the one netdev of the device's parent when the device has
 * one port and the parent one netdev (IPoIB, or a RoCE port before its GIDs
 * exist). RDMA netlink's word comes on top (rn_port_netdev_decide()).
 * Unreadable files leave their fields unknown: never fails.
 */
void rn_sysfs_port_read(const char *dev, uint32_t port, struct rn_sysfs_port *out);
/*
 * The port numbers of `dev` (ports/N), ascending. *ret is NULL when there
 * are none; free with free(). -ENOENT (no error set) when `dev` has no ports
 * directory (gone since it was listed), other failures -errno with a message.
 */
int rn_sysfs_port_list(const char *dev, uint32_t **ret, size_t *ret_n, struct rn_error *err);

/*
 * Every RDMA device, every port of them and the GID tables, each file read
 * once: the bindings of the ports come from the GID table read here (the
 * rule of rn_sysfs_port_read()), so the devices' netdev lists are not filled.
 */
struct rn_sysfs_rdma_facts {
	size_t n_devs;
	struct rn_sysfs_rdma_dev *devs; /* as rn_sysfs_rdma_list(), n_netdevs 0 */
	size_t n_ports;
	struct rn_sysfs_port *ports; /* by device (natural order), then port */
	struct rn_gid_table gids;
};

int rn_sysfs_rdma_facts_read(struct rn_sysfs_rdma_facts *out, struct rn_error *err);
void rn_sysfs_rdma_facts_free(struct rn_sysfs_rdma_facts *f);

/* Every netdev under class/net (none when it is absent), sorted. Free *ret with free(). */
int rn_sysfs_netdev_list(char (**ret)[IF_NAMESIZE], size_t *ret_n, struct rn_error *err);
/*
 * 1 when the netdevs under ROOT/class/net are exactly this thread's netns's
 * (names and ifindexes, both ways); 0 when not: the sysfs shows another netns.
 */
int rn_sysfs_netdevs_agree(const char *root, struct rn_error *err);

/* ---- counters (DEV/hw_counters, DEV/ports/P/hw_counters, DEV/ports/P/counters) ---- */

/* Called with each counter's name and value; a negative return stops the read with it. */
typedef int (*rn_sysfs_counter_fn)(const char *name, uint64_t value, void *ctx);
/*
 * Calls fn for every readable numeric file of set ("hw_counters", "counters")
 * of port `port` of `dev` (port 0: the device's own). An absent set has no
 * counters; files that fail to read (PMA counters without a MAD interface)
 * and "lifespan" are skipped.
 */
int rn_sysfs_counters_read(const char *dev, uint32_t port, const char *set, rn_sysfs_counter_fn fn,
			   void *ctx, struct rn_error *err);

#endif
