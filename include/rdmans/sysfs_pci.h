/* SPDX-License-Identifier: Apache-2.0 */
/* PCI functions and their distances, for GPU-NIC affinity (sysfs_pci.c). */
/* sysfs.h first: it includes this header once its own types are there */
#include "rdmans/sysfs.h"

#ifndef RDMANS_SYSFS_PCI_H
#define RDMANS_SYSFS_PCI_H

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdmans/error.h"

/* ---- PCI topology (GPU-NIC affinity) ---- */

struct rn_sysfs_pci_fn {
	char bdf[RN_BUS_ID_MAX];
	unsigned vendor; /* 0x10de NVIDIA, 0x15b3 Mellanox, ... */
	unsigned device; /* the vendor's device ID: 0x101d ConnectX-6 Dx, ... */
	char driver[32]; /* the bound driver's name ("mlx5_core"), "" when none */
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
