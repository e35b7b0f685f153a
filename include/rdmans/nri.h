/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rdmans-nri's work: an NRI plugin session on one connection. It registers,
 * subscribes to RunPodSandbox, StopPodSandbox, RemovePodSandbox and
 * CreateContainer, and answers:
 *  - RunPodSandbox: a pod whose annotations name RDMA devices
 *    (rdmans.io/devices) gets them moved into its netns, unless they are
 *    there already (a CNI attachment moved them); what it moved is recorded
 *    in state_dir, one file per pod;
 *  - CreateContainer: a container of a pod with rdmans.io annotations gets
 *    the NCCL settings resolved in the pod's netns as env (a variable the
 *    container sets already wins), and the device nodes of the pod's RDMA
 *    devices (uverbs, rdma_cm);
 *  - StopPodSandbox, RemovePodSandbox: the devices it moved go home.
 * A pod without rdmans.io annotations is left as it came.
 */
#ifndef RDMANS_NRI_H
#define RDMANS_NRI_H

#include <stdint.h>

#include "rdmans/error.h"
#include "rdmans/pod_ask.h"

#define RN_NRI_SOCKET "/var/run/nri/nri.sock"
#define RN_NRI_STATE_DIR "/run/rdmans/nri"

struct rn_nri_options {
	const char *name, *idx; /* "rdmans-nri", "50" */
	const char *state_dir; /* NULL: RN_NRI_STATE_DIR */
	struct rn_pod_sources sources; /* the node's NCCL settings, as the hook's */
	/*
	 * The RDMA devices kubelet allocated to pod NAMESPACE/NAME (a device
	 * plugin's resources, from kubelet's PodResources API): moved at
	 * RunPodSandbox as rdmans.io/devices would be, and their NCCL settings
	 * given to each container. NULL: none asked. names: "irdma0,irdma1" or "";
	 * -ENOENT: kubelet is not there (no socket), which is not an error.
	 */
	int (*pod_devices)(void *ctx, const char *pod_namespace, const char *pod_name, char *names,
			   size_t len, struct rn_error *err);
	void *pod_devices_ctx;
	/* the library never prints: each event and failure is one line to log() */
	void (*log)(void *ctx, int priority, const char *line);
	void *log_ctx;
};

/* A connected socket to the runtime's NRI socket (SOCK_CLOEXEC). */
int rn_nri_connect(const char *path, struct rn_error *err);

/*
 * One session on fd: registers, then answers the runtime until it closes
 * the connection (0) or the stream breaks (< 0). The registration must be
 * answered within reg_timeout_ms.
 */
int rn_nri_serve(int fd, const struct rn_nri_options *o, int reg_timeout_ms, struct rn_error *err);

#endif
