/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fake sysfs trees for unit tests, built at run time under a mkdtemp()
 * directory with the same relative symlinks the kernel creates:
 *
 *   class/infiniband/DEV -> ../../devices/pci0000:00/BDF/infiniband/DEV
 *   class/infiniband/DEV -> ../../devices/pci0000:00/BDF/AUX/infiniband/DEV
 *   class/infiniband/DEV -> ../../devices/virtual/infiniband/DEV
 *   DEV/device -> ../../../BDF (or ../../../AUX), BDF/subsystem -> ../../../bus/pci
 *   bus/pci/devices/BDF, bus/auxiliary/devices/AUX, class/net/IF (+ IF/device)
 *
 * Every helper aborts the test program on failure: a broken fixture is a
 * bug in the test, not a test result.
 */
#ifndef RDMANS_FAKESYS_H
#define RDMANS_FAKESYS_H

/* A new empty root (class/, bus/, devices/ skeleton). Free with fakesys_free(). */
char *fakesys_new(void);
/* Removes the tree and frees the path. Accepts NULL. */
void fakesys_free(char *root);

/* A new root that rn_sysfs_root() points at until fake_done() (for _cleanup_fake_). */
char *fake_start(void);
void fake_done(char **root);
#define _cleanup_fake_ __attribute__((cleanup(fake_done)))

/* A PCI function at devices/pci0000:00/BDF, linked from bus/pci/devices. Idempotent. */
void fakesys_add_pci(const char *root, const char *bdf);
/*
 * PCI topology: puts function bdf under `parents` ("pci0000:16/0000:16:02.0/
 * 0000:17:00.0", host bridge, root port, switch ports) with its vendor,
 * class and numa_node, and points bus/pci/devices/BDF there (an RDMA device
 * or netdev made on it before keeps its own links). Bridges get class 0x060400.
 */
void fakesys_place_pci(const char *root, const char *bdf, const char *parents, unsigned vendor,
		       unsigned pci_class, int numa);
/* An auxiliary device AUX under PCI function BDF (ice.roce.0, mlx5_core.sf.2). Idempotent. */
void fakesys_add_aux(const char *root, const char *bdf, const char *aux);
/* Makes vf_bdf virtual function number n of pf_bdf (PF/virtfnN, VF/physfn). */
void fakesys_add_vf(const char *root, const char *pf_bdf, const char *vf_bdf, unsigned n);

/* Netdevs: under a PCI function, under an auxiliary device, or virtual (veth, bridge). */
void fakesys_add_netdev_pci(const char *root, const char *ifname, const char *bdf);
void fakesys_add_netdev_aux(const char *root, const char *ifname, const char *bdf, const char *aux);
void fakesys_add_netdev_virtual(const char *root, const char *ifname);

/*
 * RDMA devices, each created with port 1 of the given link layer
 * ("Ethernet", "InfiniBand") in state "4: ACTIVE" and an empty GID table.
 * node_guid may be NULL (no node_guid file).
 */
void fakesys_add_rdma_pci(const char *root, const char *dev, const char *bdf, const char *node_guid,
			  const char *link_layer);
void fakesys_add_rdma_aux(const char *root, const char *dev, const char *bdf, const char *aux,
			  const char *node_guid, const char *link_layer);
/* A soft device (rxe, siw): no device link; parent_netdev (may be NULL) goes to DEV/parent. */
void fakesys_add_rdma_virtual(const char *root, const char *dev, const char *parent_netdev,
			      const char *node_guid, const char *link_layer);
/* Another port of an existing RDMA device. */
void fakesys_add_port(const char *root, const char *dev, unsigned port, const char *link_layer);

/*
 * GID slot idx of dev/port: gids/idx holds gid as sysfs prints it;
 * gid_attrs/types/idx and ndevs/idx hold type and ndev, or, when NULL, are
 * made unreadable (read() fails) as the kernel's are for empty slots.
 */
void fakesys_add_gid(const char *root, const char *dev, unsigned port, unsigned idx,
		     const char *gid, const char *type, const char *ndev);
/* Empty slots [from, to]: all-zero GID, unreadable types and ndevs. */
void fakesys_add_empty_gids(const char *root, const char *dev, unsigned port, unsigned from,
			    unsigned to);
/* A GID slot whose gids/idx itself cannot be read. */
void fakesys_add_unreadable_gid(const char *root, const char *dev, unsigned port, unsigned idx);

/* Makes ROOT/relpath a file that cannot be read (a directory: read() fails, as for root too). */
void fakesys_unreadable(const char *root, const char *relpath);

/* Writes ROOT/relpath (creating parent directories). */
void fakesys_write(const char *root, const char *relpath, const char *content);

#endif
