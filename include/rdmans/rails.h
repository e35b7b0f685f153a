/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Rails: which RDMA device each of a container's GPUs should use, by PCIe
 * distance (rails.c). The distance is rn_sysfs_pci_distance()'s; this is the
 * one place that turns distances into choices, for rdmans dev gpus, the NCCL
 * resolver (NCCL_IB_HCA per container) and the gpu-aligned device request.
 */
#ifndef RDMANS_RAILS_H
#define RDMANS_RAILS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "rdmans/error.h"
#include "rdmans/sysfs.h"
#include "rdmans/sysfs_pci.h"

/* An RDMA device that may carry a rail; pci.bdf "" when it has no PCI function (rxe, siw). */
struct rn_rail_dev {
	char name[RN_RDMA_NAME_MAX];
	struct rn_sysfs_pci_fn pci;
};

/* One GPU's rail. */
struct rn_rail {
	size_t gpu; /* index into the GPUs given */
	size_t dev; /* index into the devices given */
	enum rn_pci_distance distance;
	bool shared; /* fewer devices than GPUs: another GPU has this device too */
};

/* The device of devs[] nearest to `gpu` (ties: the first), -1 when none has a PCI function. */
ssize_t rn_rails_nearest(const struct rn_sysfs_pci_fn *gpu, const struct rn_rail_dev *devs,
			 size_t n_devs, enum rn_pci_distance *ret_distance);

/*
 * One rail per GPU: the nearest pairs are taken first, each device by one GPU
 * while there are devices enough; past that, a GPU shares its nearest device.
 * PCIe distance is a tree's (the longest common path), so taking the nearest
 * free pair first is also the assignment with the least total distance.
 * out[] gets n_gpus rails in the order they rank: nearest first, then by GPU.
 * -ENODEV (with a message) when no device has a PCI function.
 */
int rn_rails_choose(const struct rn_sysfs_pci_fn *gpus, size_t n_gpus,
		    const struct rn_rail_dev *devs, size_t n_devs, struct rn_rail *out,
		    struct rn_error *err);

/* Reads the PCI function of each device (rn_sysfs_pci_get()); a device without one keeps bdf "". */
void rn_rails_dev_read(struct rn_rail_dev *dev, const char *name, const char *pci_bdf);

#endif
