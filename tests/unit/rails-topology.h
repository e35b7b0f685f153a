/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An 8-GPU, 8-NIC node modelled on NVIDIA's DGX H100: GPUs 0-3 on NUMA node 0
 * and 4-7 on node 1 (its nvidia-smi topo -m), at the PCI buses its GPUs have
 * (1b, 43, 51, 9b, c2, ca, da, e2), each with one ConnectX-7 below the same
 * PCIe switch. Used by test-rails.c and bench/rails.c as PCI functions
 * (paths and NUMA nodes), which is all rails.c reads.
 */
#ifndef RDMANS_TEST_RAILS_TOPOLOGY_H
#define RDMANS_TEST_RAILS_TOPOLOGY_H

#include <stdio.h>
#include <string.h>

#include "rdmans/rails.h"

#define TOPO_N 8

/* Switch s (0-7): root port on socket s / 4; GPU s and NIC s below it. */
static inline void topo_gpu(size_t s, struct rn_sysfs_pci_fn *out)
{
	static const char *const bus[TOPO_N] = { "1b", "43", "51", "9b", "c2", "ca", "da", "e2" };
	const char *host = s < 4 ? "pci0000:00" : "pci0000:80";

	memset(out, 0, sizeof(*out));
	out->numa = s < 4 ? 0 : 1;
	snprintf(out->bdf, sizeof(out->bdf), "0000:%s:00.0", bus[s]);
	snprintf(out->path, sizeof(out->path),
		 "%s/0000:%s:0%zu.0/0000:%zx:00.0/0000:%zx:00.0/%.16s", host, s < 4 ? "00" : "80",
		 1 + s % 4, 0x10 + s * 0x10, 0x11 + s * 0x10, out->bdf);
}

static inline void topo_nic(size_t s, struct rn_rail_dev *out)
{
	const char *host = s < 4 ? "pci0000:00" : "pci0000:80";

	memset(out, 0, sizeof(*out));
	snprintf(out->name, sizeof(out->name), "mlx5_%zu", s);
	out->pci.numa = s < 4 ? 0 : 1;
	snprintf(out->pci.bdf, sizeof(out->pci.bdf), "0000:%zx:00.0", 0x12 + s * 0x10);
	snprintf(out->pci.path, sizeof(out->pci.path),
		 "%s/0000:%s:0%zu.0/0000:%zx:00.0/0000:%zx:01.0/%.16s", host, s < 4 ? "00" : "80",
		 1 + s % 4, 0x10 + s * 0x10, 0x11 + s * 0x10, out->pci.bdf);
}

#endif
