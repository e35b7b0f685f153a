/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NVIDIA GPUs as their driver lists them, and which of them a container has
 * (gpu.c). The driver's own files are the one source: for each GPU,
 * /proc/driver/nvidia/gpus/BDF/information gives its PCI address, the minor
 * of its /dev/nvidiaN node and its UUID. A container names its GPUs in the
 * three ways the NVIDIA Container Toolkit gives them: device nodes in its OCI
 * spec, NVIDIA_VISIBLE_DEVICES, and CDI names (nvidia.com/gpu=...).
 */
#ifndef RDMANS_GPU_H
#define RDMANS_GPU_H

#include <stdbool.h>
#include <stddef.h>

#include "rdmans/error.h"

#define RN_GPU_MAX 64

struct rn_gpu {
	char bdf[32]; /* "0000:18:00.0" */
	unsigned minor; /* /dev/nvidiaMINOR */
	char uuid[80]; /* "GPU-2bf3339b-..." */
	char model[64]; /* "NVIDIA H200" */
};

/* One information file; -EINVAL (naming the field) when it lacks the address, minor or UUID. */
int rn_gpu_parse_information(const char *text, struct rn_gpu *out, struct rn_error *err);

/*
 * Every GPU under PROC/driver/nvidia/gpus (proc_root NULL: /proc), sorted by
 * PCI address, which is NVML's index order (NVIDIA_VISIBLE_DEVICES=0 is the
 * first). No NVIDIA driver: 0 with *ret_n 0. *ret is malloc'ed.
 */
int rn_gpu_list(const char *proc_root, struct rn_gpu **ret, size_t *ret_n, struct rn_error *err);

/* What a container was given; any part may be empty. */
struct rn_gpu_request {
	const char *const *devnodes; /* its OCI spec's linux.devices paths */
	size_t n_devnodes;
	const char *visible_devices; /* NVIDIA_VISIBLE_DEVICES, NULL when unset */
	const char *const *cdi; /* its CDI device names */
	size_t n_cdi;
};

/*
 * The container's GPUs: ret_sel[i] is true for each of gpus[i] it has. When
 * its device nodes name GPUs, those are its GPUs (a CDI device or the
 * runtime made them; NVIDIA_VISIBLE_DEVICES may be an image's "all");
 * otherwise the union of NVIDIA_VISIBLE_DEVICES and the CDI names. A
 * name that is no GPU of this node (an index past the last, an unknown
 * UUID, a MIG device) is -EINVAL saying which and what the node has.
 */
int rn_gpu_select(const struct rn_gpu *gpus, size_t n, const struct rn_gpu_request *req,
		  bool *ret_sel, struct rn_error *err);

#endif
