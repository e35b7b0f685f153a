/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rdmans-device-plugin's decisions (device_plugin.c): which RDMA devices
 * each pool (one kubelet resource) holds, whether each is healthy, which
 * devices to prefer for a container, and what Allocate gives it. No gRPC
 * here: kubelet_wire.h carries the answers.
 */
#ifndef RDMANS_DEVICE_PLUGIN_H
#define RDMANS_DEVICE_PLUGIN_H

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>

#include "rdmans/error.h"
#include "rdmans/kubelet_wire.h"
#include "rdmans/sysfs.h"
#include "rdmans/sysfs_pci.h"

#define RN_DP_MAX_POOLS 16
#define RN_DP_MAX_MATCH 16 /* entries in one selector list */
#define RN_DP_DEFAULT_PREFIX "rdmans.io"
#define RN_DP_DEFAULT_POOL "rdma"
#define RN_DP_DEFAULT_CDI_KIND "rdmans.io/rdma" /* what `rdmans cdi generate` writes */

/* A pool's selector: every list that is not empty must match (one entry of it). */
struct rn_dp_selector {
	size_t n_names, n_vendors, n_devices, n_drivers, n_link_layers, n_netdevs;
	char names[RN_DP_MAX_MATCH][RN_RDMA_NAME_MAX]; /* fnmatch(3) patterns of the RDMA name */
	unsigned vendors[RN_DP_MAX_MATCH]; /* PCI vendor IDs */
	unsigned devices[RN_DP_MAX_MATCH]; /* PCI device IDs */
	char drivers[RN_DP_MAX_MATCH][32]; /* the PCI function's driver */
	char link_layers[RN_DP_MAX_MATCH][16]; /* "Ethernet", "InfiniBand" */
	char netdevs[RN_DP_MAX_MATCH][IF_NAMESIZE]; /* fnmatch(3) patterns of a bound netdev */
};

struct rn_dp_pool {
	char name[64];
	char resource[128]; /* "rdmans.io/NAME" */
	struct rn_dp_selector sel;
};

/* What Allocate answers with; several may be asked for at once. */
enum rn_dp_strategy {
	RN_DP_CDI_CRI = 1 << 0, /* CDIDevices (kubelet 1.28+) */
	RN_DP_CDI_ANNOTATIONS = 1 << 1, /* cdi.k8s.io/ annotations (older kubelets) */
	RN_DP_DEVICE_SPECS = 1 << 2, /* uverbs and rdma_cm DeviceSpecs (no CDI) */
};

struct rn_dp_config {
	size_t n_pools;
	struct rn_dp_pool pools[RN_DP_MAX_POOLS];
	char cdi_kind[64];
	unsigned strategies;
};

/* "cdi-cri,cdi-annotations,device-specs" (any of them) into cfg->strategies. */
int rn_dp_strategies_parse(const char *text, unsigned *ret, struct rn_error *err);

/* A device as the plugin knows it; it stays known while it is in a pod's netns. */
struct rn_dp_device {
	char id[RN_BUS_ID_MAX]; /* the PCI address behind it, else the auxiliary ID, else the name */
	char name[RN_RDMA_NAME_MAX];
	int pool; /* index into the config's pools, -1 for none */
	struct rn_sysfs_pci_fn pci; /* bdf "" when no PCI function is behind it */
	bool here; /* in this netns at the last scan; else in a pod's */
	bool port_up; /* a port was ACTIVE when it was last here */
	bool healthy;
	char why[160]; /* why it is not healthy */
};

struct rn_dp_inventory {
	size_t n;
	struct rn_dp_device *v;
	bool exclusive;
	bool have_mode; /* the netns mode was read */
};
void rn_dp_inventory_free(struct rn_dp_inventory *inv);

/*
 * Looks at the devices in the caller's netns and the netns mode, and
 * updates inv: new devices are added, devices that moved away stay (with
 * the health they had), a port that is not ACTIVE or shared netns mode
 * makes a device Unhealthy. *ret_changed tells whether anything kubelet
 * sees (the list, a health) changed.
 */
int rn_dp_scan(const struct rn_dp_config *cfg, struct rn_dp_inventory *inv, bool *ret_changed,
	       struct rn_error *err);

/* Pool `pool`'s devices as ListAndWatch sends them; *ret points into inv (free the array). */
int rn_dp_pool_devices(const struct rn_dp_inventory *inv, int pool, struct rn_kw_device **ret,
		       size_t *ret_n, struct rn_error *err);

/*
 * GetPreferredAllocation: must_include first, then one NUMA node if the
 * rest fits on one (the fullest that fits least loosely), then the devices
 * closest on PCIe to those already chosen. ret_ids points into req.
 */
int rn_dp_preferred(const struct rn_dp_inventory *inv, const struct rn_kw_preferred_request *req,
		    const char **ret_ids, size_t *ret_n, struct rn_error *err);

/*
 * Allocate for one container: by cfg->strategies, CDI names (KIND=NAME),
 * a cdi.k8s.io annotation, device nodes; always NCCL_IB_HCA naming exactly
 * these devices (the container's own environment wins over nccl.conf and
 * over rdmans-nri's). An ID the plugin does not know is -EINVAL.
 */
int rn_dp_allocate(const struct rn_dp_config *cfg, const struct rn_dp_inventory *inv,
		   const char *const *ids, size_t n, struct rn_kw_alloc *out, struct rn_error *err);

/*
 * The RDMA devices behind device IDs as this plugin gives them (kubelet's
 * PodResources lists them): "mlx5_0,mlx5_3" into names. An ID with no bus
 * device here is taken as the device's own name.
 */
int rn_dp_names_of_ids(const char *const *ids, size_t n, char *names, size_t len,
		       struct rn_error *err);

#endif
