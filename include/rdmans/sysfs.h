/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sysfs discovery, the only reader of sysfs (like systemd's sd-device): RDMA
 * device <-> netdev <-> PCI function or auxiliary device here (sysfs.c);
 * GID tables (sysfs_gid.h), ports and counters (sysfs_port.h), character
 * devices and modules (sysfs_kernel.h), PCI topology (sysfs_pci.h). Every path is taken under
 * rn_sysfs_root(), "/sys" unless overridden, so unit tests run on fake trees.
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

/* DEV/node_type, as the kernel's enum rdma_node_type numbers it. */
#define RN_NODE_CA 1
#define RN_NODE_RNIC 4 /* iWARP: irdma in iWARP mode, siw, cxgb4 */

struct rn_sysfs_rdma_dev {
	char name[RN_RDMA_NAME_MAX];
	char parent_bus[16]; /* "pci", "auxiliary", or "" for a virtual device (rxe) */
	char parent_id[RN_BUS_ID_MAX]; /* "0000:3b:00.0", "ice.roce.0", or "" */
	/* the PCI function behind it (an auxiliary device's PCI parent), or "" */
	char pci_bdf[RN_BUS_ID_MAX];
	char node_guid[20]; /* "b696:91ff:feec:a458", as sysfs prints it */
	char link_layer[16]; /* link_layer of port 1: "Ethernet", "InfiniBand" */
	unsigned node_type; /* RN_NODE_CA, RN_NODE_RNIC (iWARP), ...; 0 unknown */
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

#endif
