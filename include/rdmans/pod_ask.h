/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a pod asks of rdmans through its annotations (or a hook's command
 * line), and doing it in the pod's netns: move the RDMA devices it names
 * into it, then resolve the NCCL settings from what the netns holds. One
 * place for rdmans-hook and rdmans-nri, so that both front ends read the
 * same annotations the same way.
 */
#ifndef RDMANS_POD_ASK_H
#define RDMANS_POD_ASK_H

#include <stdbool.h>
#include <stddef.h>

#include "rdmans/error.h"
#include "rdmans/gpu.h"
#include "rdmans/nccl.h"
#include "rdmans/sysfs.h"
#include "rdmans/sysfs_pci.h"

#define RN_ANN_DEVICES "rdmans.io/devices"
#define RN_ANN_NCCL "rdmans.io/nccl"
#define RN_ANN_PROFILE "rdmans.io/nccl-profile"
#define RN_ANN_CONF "rdmans.io/nccl-conf"

#define RN_POD_MAX_DEVICES 64
#define RN_POD_MAX_LAYERS 8

struct rn_pod_ask {
	char *devices[RN_POD_MAX_DEVICES]; /* named devices, deduplicated */
	size_t n_devices;
	bool all; /* "all": the devices the pod's network attachment gave it */
	/* "gpu-aligned": the devices nearest to this container's GPUs (rails.h) */
	bool gpu_aligned;
	/* the container's GPUs (rn_pod_ask_gpus()); malloc'ed */
	struct rn_sysfs_pci_fn *gpus;
	size_t n_gpus;
	char gpus_note[RN_NCCL_DETAIL_MAX]; /* why its GPUs are unknown, "" when known */
	/* annotation values, borrowed from the caller */
	const char *nccl, *profile, *conf;
};

void rn_pod_ask_free(struct rn_pod_ask *a);

/* "irdma0,irdma1[,all][,gpu-aligned]" (from: where it came from, for messages). */
int rn_pod_ask_add_devices(struct rn_pod_ask *a, const char *list, const char *from,
			   struct rn_error *err);

/* Reads the rdmans.io/ annotations through get(key, ctx) (NULL: not set) and checks them. */
typedef const char *(*rn_annotation_fn)(const char *key, void *ctx);
int rn_pod_ask_from_annotations(struct rn_pod_ask *a, rn_annotation_fn get, void *ctx,
				struct rn_error *err);

/* Does it ask for anything: devices, or NCCL settings? */
bool rn_pod_ask_any(const struct rn_pod_ask *a);
/* Does it ask for devices to be moved in: named ones, "all" or "gpu-aligned"? */
bool rn_pod_ask_moves(const struct rn_pod_ask *a);
/* rdmans.io/nccl-conf: off / sockets */
bool rn_pod_ask_conf_off(const struct rn_pod_ask *a);
bool rn_pod_ask_sockets(const struct rn_pod_ask *a);

/*
 * The container's GPUs, as its runtime gives them (gpu.h): their PCI
 * functions go to a->gpus. A node without NVIDIA's driver, or a container
 * without GPUs, has none. A name that is no GPU of this node fails only a
 * gpu-aligned request; otherwise gpus_note says why NCCL_IB_HCA is not
 * narrowed to the GPUs.
 */
int rn_pod_ask_gpus(struct rn_pod_ask *a, const struct rn_gpu_request *req, struct rn_error *err);

/*
 * Moves the devices asked for into the netns nsfd (ns_desc names it in
 * messages), unless they are there already; "all" adds the pod's own
 * (rn_discover_pod()); "gpu-aligned" adds, of the devices in the pod and on
 * the host, the one nearest to each of the container's GPUs (rn_rails_choose()).
 * Never takes a device from another pod's netns. The
 * names moved go to moved[] (up to max; NULL: not wanted), their number to
 * *n_moved.
 */
int rn_pod_ask_move(struct rn_pod_ask *a, int nsfd, const char *ns_desc,
		    char (*moved)[RN_RDMA_NAME_MAX], size_t max, size_t *n_moved,
		    struct rn_error *err);

/* Where the settings come from besides the annotations. */
struct rn_pod_sources {
	const char *config; /* the node's nccl.json; NULL: RN_NCCL_CONFIG if it exists */
	const char *cni_config; /* a CNI conflist's nccl block, or NULL */
	const char *profile; /* the node's choice (--profile), or NULL */
};

/* The override layers, lowest first: node file, CNI config, node profile, annotations. */
int rn_pod_ask_layers(const struct rn_pod_ask *a, const struct rn_pod_sources *src,
		      struct rn_nccl_layer layers[RN_POD_MAX_LAYERS], size_t *n,
		      struct rn_error *err);

/*
 * Probes the netns and resolves. Right after a move the kernel re-registers
 * the device and refills its GID table: it waits up to patience_ms for every
 * device asked for to show and every used RoCE port to have its GID.
 * version/version_note: the NCCL the settings are for (zero/NULL: unknown).
 */
int rn_pod_ask_resolve(const struct rn_pod_ask *a, int nsfd, const struct rn_nccl_layer *layers,
		       size_t n_layers, const struct rn_nccl_version *version,
		       const char *version_note, int patience_ms, struct rn_nccl_result *out,
		       struct rn_error *err);

#endif
