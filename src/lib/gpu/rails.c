// SPDX-License-Identifier: Apache-2.0
/* Rails: GPUs to RDMA devices by PCIe distance (rails.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rdmans/cleanup.h"
#include "rdmans/rails.h"
#include "rdmans/util.h"

ssize_t rn_rails_nearest(const struct rn_sysfs_pci_fn *gpu, const struct rn_rail_dev *devs,
			 size_t n_devs, enum rn_pci_distance *ret_distance)
{
	enum rn_pci_distance best = RN_PCI_CROSS_CPU;
	ssize_t at = -1;

	for (size_t i = 0; i < n_devs; i++) {
		enum rn_pci_distance d;

		if (!devs[i].pci.bdf[0])
			continue;
		d = rn_sysfs_pci_distance(gpu, &devs[i].pci);
		if (at < 0 || d < best) {
			at = (ssize_t)i;
			best = d;
		}
	}
	if (ret_distance)
		*ret_distance = best;
	return at;
}

static int by_rank(const void *a, const void *b)
{
	const struct rn_rail *x = a, *y = b;

	if (x->distance != y->distance)
		return x->distance < y->distance ? -1 : 1;
	if (x->shared != y->shared)
		return x->shared ? 1 : -1;
	return x->gpu < y->gpu ? -1 : x->gpu > y->gpu;
}

int rn_rails_choose(const struct rn_sysfs_pci_fn *gpus, size_t n_gpus,
		    const struct rn_rail_dev *devs, size_t n_devs, struct rn_rail *out,
		    struct rn_error *err)
{
	_cleanup_free_ bool *gpu_done = calloc(n_gpus ? n_gpus : 1, sizeof(bool));
	_cleanup_free_ bool *dev_taken = calloc(n_devs ? n_devs : 1, sizeof(bool));
	size_t done = 0;

	if (!gpu_done || !dev_taken)
		return rn_error_set(err, ENOMEM, "out of memory choosing rails");
	if (n_gpus && rn_rails_nearest(&gpus[0], devs, n_devs, NULL) < 0)
		return rn_error_set(err, ENODEV,
				    "none of the %zu RDMA devices here has a PCI function, so "
				    "none is nearer to a GPU than another",
				    n_devs);
	/* distance classes are few: take every free pair of the nearest class first */
	for (int d = RN_PCI_SAME_SWITCH; d <= RN_PCI_CROSS_CPU && done < n_gpus; d++)
		for (size_t g = 0; g < n_gpus; g++)
			for (size_t i = 0; !gpu_done[g] && i < n_devs; i++) {
				if (dev_taken[i] || !devs[i].pci.bdf[0] ||
				    (int)rn_sysfs_pci_distance(&gpus[g], &devs[i].pci) != d)
					continue;
				out[done++] =
					(struct rn_rail){ g, i, (enum rn_pci_distance)d, false };
				gpu_done[g] = dev_taken[i] = true;
			}
	for (size_t g = 0; g < n_gpus; g++) {
		enum rn_pci_distance d;
		ssize_t i;

		if (gpu_done[g])
			continue;
		i = rn_rails_nearest(&gpus[g], devs, n_devs, &d);
		out[done++] = (struct rn_rail){ g, (size_t)i, d, true };
	}
	qsort(out, done, sizeof(*out), by_rank);
	return 0;
}

void rn_rails_dev_read(struct rn_rail_dev *dev, const char *name, const char *pci_bdf)
{
	struct rn_error ignored = { 0 };

	memset(dev, 0, sizeof(*dev));
	(void)rn_strscpy(dev->name, sizeof(dev->name), name);
	if (!pci_bdf || !pci_bdf[0] || rn_sysfs_pci_get(pci_bdf, &dev->pci, &ignored) < 0)
		dev->pci.bdf[0] = '\0';
}
