// SPDX-License-Identifier: Apache-2.0
/*
 * The sysfs reader, PCI functions and how far apart two are, for GPU-NIC affinity (see sysfs.h).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rdmans/cleanup.h"
#include "rdmans/util.h"
#include "sysfs_private.h"
#include "rdmans/sysfs_pci.h"

/* bus/pci/devices/BDF's attributes and its path under devices/. */
static int pci_fn_read(const char *bdf, struct rn_sysfs_pci_fn *out, struct rn_error *err)
{
	_cleanup_free_ char *real = NULL, *root_real = NULL;
	char path[PATH_MAX], text[64];
	size_t rl;
	int r;

	memset(out, 0, sizeof(*out));
	out->numa = -1;
	(void)rn_strscpy(out->bdf, sizeof(out->bdf), bdf);
	r = rn_sysfs_path(path, sizeof(path), err, "bus/pci/devices/%s", bdf);
	if (r < 0)
		return r;
	real = realpath(path, NULL);
	root_real = realpath(rn_sysfs_root(), NULL);
	if (!real || !root_real)
		return rn_error_set(err, ENODEV, "PCI function %s not found in %s/bus/pci/devices",
				    bdf, rn_sysfs_root());
	rl = strlen(root_real);
	if (strncmp(real, root_real, rl) != 0 || strncmp(real + rl, "/devices/", 9) != 0 ||
	    rn_strscpy(out->path, sizeof(out->path), real + rl + 9) < 0)
		return rn_error_set(err, EINVAL, "PCI function %s is not under %s/devices", bdf,
				    rn_sysfs_root());
	if (rn_path(path, sizeof(path), "%s/vendor", real) == 0 &&
	    rn_read_line(path, text, sizeof(text)) == 0)
		out->vendor = (unsigned)strtoul(text, NULL, 16);
	if (rn_path(path, sizeof(path), "%s/device", real) == 0 &&
	    rn_read_line(path, text, sizeof(text)) == 0)
		out->device = (unsigned)strtoul(text, NULL, 16);
	if (rn_path(path, sizeof(path), "%s/driver", real) == 0) {
		char link[PATH_MAX];
		ssize_t n = readlink(path, link, sizeof(link) - 1);

		if (n > 0) {
			link[n] = '\0';
			(void)rn_strscpy(out->driver, sizeof(out->driver),
					 strrchr(link, '/') ? strrchr(link, '/') + 1 : link);
		}
	}
	if (rn_path(path, sizeof(path), "%s/class", real) == 0 &&
	    rn_read_line(path, text, sizeof(text)) == 0)
		out->pci_class = (unsigned)strtoul(text, NULL, 16);
	if (rn_path(path, sizeof(path), "%s/numa_node", real) == 0 &&
	    rn_read_line(path, text, sizeof(text)) == 0)
		out->numa = atoi(text);
	return 0;
}

int rn_sysfs_pci_get(const char *bdf, struct rn_sysfs_pci_fn *out, struct rn_error *err)
{
	int r = rn_name_check("PCI address", bdf, RN_BUS_ID_MAX - 1, err);

	if (r < 0)
		return r;
	return pci_fn_read(bdf, out, err);
}

static int read_pci_fn(const char *dir, const char *name, void *out, struct rn_error *err)
{
	(void)dir;
	(void)err;
	return pci_fn_read(name, out, NULL) == 0 ? 0 : 1; /* one that cannot be read is left out */
}

int rn_sysfs_pci_list(struct rn_sysfs_pci_fn **ret, size_t *ret_n, struct rn_error *err)
{
	void *v = NULL;
	int r = rn_sysfs_read_entries("bus/pci/devices", sizeof(**ret), read_pci_fn, &v, ret_n,
				      err);

	*ret = v;
	return r;
}

enum rn_pci_distance rn_sysfs_pci_distance(const struct rn_sysfs_pci_fn *a,
					   const struct rn_sysfs_pci_fn *b)
{
	const char *x = a->path, *y = b->path;
	size_t common = 0;

	/* count the leading path components both share: host bridge, root port, switch ports */
	for (;;) {
		size_t lx = strcspn(x, "/"), ly = strcspn(y, "/");

		if (lx != ly || strncmp(x, y, lx) != 0 || !x[lx] || !y[ly])
			break;
		common++;
		x += lx + 1;
		y += ly + 1;
	}
	if (common >= 3)
		return RN_PCI_SAME_SWITCH;
	if (common == 2)
		return RN_PCI_SAME_ROOT_PORT;
	if (common == 1 || a->numa < 0 || b->numa < 0 || a->numa == b->numa)
		return RN_PCI_SAME_NODE;
	return RN_PCI_CROSS_CPU;
}

const char *rn_pci_distance_name(enum rn_pci_distance d)
{
	static const char *const names[] = {
		[RN_PCI_SAME_SWITCH] = "same PCIe switch",
		[RN_PCI_SAME_ROOT_PORT] = "same root port",
		[RN_PCI_SAME_NODE] = "same NUMA node, through the CPU's root complex",
		[RN_PCI_CROSS_CPU] = "across the CPU interconnect (another NUMA node)",
	};

	return RN_NAME_OF(names, d, "?");
}
