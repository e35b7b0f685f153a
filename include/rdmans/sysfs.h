/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sysfs discovery: RDMA device <-> netdev <-> PCI function or auxiliary
 * device, and the GID tables (the entries' helpers: gid.c). Every path is taken under rn_sysfs_root(),
 * "/sys" unless overridden, so unit tests run on fake trees.
 *
 * Note: once an RDMA device has moved into another netns it vanishes from
 * the host's sysfs; sysfs only tells about devices in the caller's netns.
 */
#ifndef RDMANS_SYSFS_H
#define RDMANS_SYSFS_H

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdmans/error.h"
#include "rdmans/gid.h"

#define RN_RDMA_NAME_MAX 64 /* IB_DEVICE_NAME_MAX */
#define RN_BUS_ID_MAX 64
#define RN_SYSFS_MAX_NETDEVS 8

/*
 * "/sys", or $RDMANS_SYSFS_ROOT, or what rn_sysfs_set_root() set (NULL
 * restores the default); on a thread that rn_sysfs_set_thread_root() gave a
 * root of its own (a sysfs instance made for another netns,
 * "/proc/self/fd/N"), that one until it is set back to NULL.
 */
const char *rn_sysfs_root(void);
void rn_sysfs_set_root(const char *root);
void rn_sysfs_set_thread_root(const char *root);

struct rn_gid_entry {
	char dev[RN_RDMA_NAME_MAX];
	uint32_t port;
	uint32_t index;
	uint8_t raw[16];
	char gid[40]; /* as sysfs prints it: "fe80:0000:...:a458" */
	enum rn_gid_type type;
	char netdev[IF_NAMESIZE]; /* "" when the entry has none */
	char ipv4[16]; /* "a.b.c.d" for an IPv4-mapped GID, else "" */
};

struct rn_gid_table {
	size_t n;
	struct rn_gid_entry *entries;
};

/*
 * Reads the non-empty GID entries of every port of `dev` (or of every device
 * when dev is NULL), sorted by device, port, index. Free with rn_gid_table_free().
 */
int rn_sysfs_gids(const char *dev, struct rn_gid_table *out, struct rn_error *err);
void rn_gid_table_free(struct rn_gid_table *t);

struct rn_sysfs_rdma_dev {
	char name[RN_RDMA_NAME_MAX];
	char parent_bus[16]; /* "pci", "auxiliary", or "" for a virtual device (rxe) */
	char parent_id[RN_BUS_ID_MAX]; /* "0000:3b:00.0", "ice.roce.0", or "" */
	/* the PCI function behind it (an auxiliary device's PCI parent), or "" */
	char pci_bdf[RN_BUS_ID_MAX];
	char node_guid[20]; /* "b696:91ff:feec:a458", as sysfs prints it */
	char link_layer[16]; /* link_layer of port 1: "Ethernet", "InfiniBand" */
	uint32_t nports;
	size_t n_netdevs;
	char netdevs[RN_SYSFS_MAX_NETDEVS][IF_NAMESIZE]; /* netdevs bound to its ports */
	/*
	 * More than RN_SYSFS_MAX_NETDEVS were found (a switchdev PF lists its
	 * representors): the ones bound through the GID table are kept first.
	 * rn_sysfs_rdma_by_netdev() always sees the full set.
	 */
	bool netdevs_truncated;
};

/*
 * Whether the kernel has RDMA at all: class/infiniband exists once ib_core
 * is loaded, even in a network namespace that holds no device. false when
 * it is absent (or the sysfs root cannot be read: nothing to tell from).
 */
bool rn_sysfs_rdma_loaded(void);

/* Every device under class/infiniband, sorted by name. Free *ret with free(). */
int rn_sysfs_rdma_list(struct rn_sysfs_rdma_dev **ret, size_t *ret_n, struct rn_error *err);
/* One device; -ENODEV with a message naming it when absent. */
int rn_sysfs_rdma_get(const char *name, struct rn_sysfs_rdma_dev *out, struct rn_error *err);

/*
 * RDMA devices that belong to a bus device: a PCI BDF ("0000:3b:00.0", also
 * its auxiliary children such as ice.roce.0) or an auxiliary id. Names are
 * written to names[0..max), *ret_n gets the count found (may exceed max).
 */
int rn_sysfs_rdma_by_bus_id(const char *bus_id, char (*names)[RN_RDMA_NAME_MAX], size_t max,
			    size_t *ret_n, struct rn_error *err);
/* RDMA devices whose ports are bound to netdev `ifname`. Same conventions. */
int rn_sysfs_rdma_by_netdev(const char *ifname, char (*names)[RN_RDMA_NAME_MAX], size_t max,
			    size_t *ret_n, struct rn_error *err);
/* Netdevs of a bus device (class net entries under it, and under its auxiliary children). */
int rn_sysfs_netdevs_by_bus_id(const char *bus_id, char (*names)[IF_NAMESIZE], size_t max,
			       size_t *ret_n, struct rn_error *err);
/* The PCI BDF behind netdev `ifname`; -ENOENT when it has none (veth, bridge). */
int rn_sysfs_netdev_pci(const char *ifname, char *bdf, size_t len, struct rn_error *err);

/* ---- per-port facts: the one reader of ports/P and of the bound netdev's class/net ---- */

/*
 * A netdev as ROOT/class/net/IF shows it. "Up" has two meanings and both are
 * here: admin_up is IFF_UP of `flags` (`ip link set up`), oper_up is
 * `operstate` "up" (RFC 2863: carrier and lower layers too). A file that
 * cannot be read leaves its field unknown.
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
	RN_PORT_NETDEV_CALLER, /* the caller named it (RDMA netlink's binding) */
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
 * Reads port `port` of RDMA device `dev` and its bound netdev. The one rule
 * for the bound netdev, in this order: `netdev` when the caller knows the
 * binding (RDMA netlink names it; "" or NULL: it does not), else the lowest
 * GID slot that names one, else rxe's DEV/parent, else the one netdev of the
 * device's parent when the device has one port and the parent one netdev
 * (IPoIB, or a RoCE port before its GIDs exist). Unreadable files leave
 * their fields unknown: never fails.
 */
void rn_sysfs_port_read(const char *dev, uint32_t port, const char *netdev,
			struct rn_sysfs_port *out);
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

/* ---- character devices and kernel modules ---- */

/* A character device of class/infiniband_verbs (uverbsN) or class/misc (rdma_cm). */
struct rn_sysfs_chardev {
	char name[40]; /* "uverbs0", "rdma_cm" */
	char ibdev[RN_RDMA_NAME_MAX]; /* the RDMA device a uverbs node serves; "" for rdma_cm */
	unsigned major, minor;
};

/*
 * The uverbs nodes of class/infiniband_verbs (none when ib_uverbs is not
 * loaded), in listing order; ones gone since the listing are left out.
 * Free *ret with free().
 */
int rn_sysfs_uverbs_list(struct rn_sysfs_chardev **ret, size_t *ret_n, struct rn_error *err);
/* class/misc/rdma_cm; -ENOENT saying how to load rdma_ucm when it is missing. */
int rn_sysfs_rdma_cm(struct rn_sysfs_chardev *out, struct rn_error *err);

/* Whether kernel module `name` is loaded (module/NAME exists). */
bool rn_sysfs_module_loaded(const char *name);
/* module/NAME/version into buf; -errno when unreadable. */
int rn_sysfs_module_version(const char *name, char *buf, size_t len);

/* ---- PCI topology (GPU-NIC affinity) ---- */

struct rn_sysfs_pci_fn {
	char bdf[RN_BUS_ID_MAX];
	unsigned vendor; /* 0x10de NVIDIA, 0x15b3 Mellanox, ... */
	unsigned pci_class; /* 0x030200 3D controller, 0x020000 Ethernet, 0x020700 InfiniBand */
	int numa; /* numa_node, -1 when unknown */
	char path[512]; /* under devices/: "pci0000:16/0000:16:02.0/0000:17:00.0/..." */
};

/* Every PCI function under bus/pci/devices (sorted). Free *ret with free(). */
int rn_sysfs_pci_list(struct rn_sysfs_pci_fn **ret, size_t *ret_n, struct rn_error *err);
int rn_sysfs_pci_get(const char *bdf, struct rn_sysfs_pci_fn *out, struct rn_error *err);

/*
 * How far apart two PCI functions are, by their paths: the components they
 * share are the host bridge, then the root port, then switch ports.
 */
enum rn_pci_distance {
	RN_PCI_SAME_SWITCH = 1, /* a PCIe switch below a common root port (PIX/PXB) */
	RN_PCI_SAME_ROOT_PORT, /* only the root port in common */
	RN_PCI_SAME_NODE, /* same host bridge or NUMA node: through the CPU (PHB/NODE) */
	RN_PCI_CROSS_CPU, /* other NUMA node: across the CPU interconnect (SYS) */
};
enum rn_pci_distance rn_sysfs_pci_distance(const struct rn_sysfs_pci_fn *a,
					   const struct rn_sysfs_pci_fn *b);
const char *rn_pci_distance_name(enum rn_pci_distance d);

#endif
