/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rdmans-hook (src/hook), a static library under a thin main.c that the
 * fuzzers link too: hook.c is the hook's run (devices, settings, files),
 * state.c reads its input (the OCI state on stdin, the bundle's
 * config.json, the annotations and the device list).
 */
#ifndef RDMANS_HOOK_H
#define RDMANS_HOOK_H

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "rdmans/devnodes.h"
#include "rdmans/error.h"
#include "rdmans/oci_config_json.h"
#include "rdmans/pod_ask.h"

#define MAX_STATE_BYTES (1 << 20)
#define MAX_CONFIG_BYTES (16 << 20) /* config.json, also the precreate stage's stdin */
#define MAX_NCCL_CONF_BYTES (1 << 20)
#define NCCL_CONF "/etc/nccl.conf"
#define PROFILE_SCRIPT "/etc/profile.d/rdmans-nccl.sh"
/* podman pods on netavark (no CNI plugin of ours): an rxe device on NETDEV, hook.c */
#define ANN_SOFT_ROCE "rdmans.io/soft-roce"

struct hook {
	/* from the command line */
	struct rn_pod_sources sources; /* --config, --cni-config, --profile */
	struct rn_pod_ask ask; /* --device/--all and the rdmans.io annotations */
	/* from the state and config.json */
	char id[256];
	pid_t pid;
	char bundle[PATH_MAX];
	char rootfs[PATH_MAX];
	bool readonly;
	bool sandbox; /* a pod's infra container: devices yes, files no */
	json_t *state, *config_json;
	struct rn_oci_config *oci; /* --stage precreate: the config on stdin */
	const char *soft_roce; /* rdmans.io/soft-roce: the pod's netdev, or NULL */
	char soft_roce_node[64]; /* the soft-RoCE device's uverbs node */
	struct rn_devnode rdma_cm;
	char ns_desc[PATH_MAX + 16]; /* the container's netns, for messages */
};

/* The hook's main: the options, the stage, the work; the exit status (0, 1, or 2 for usage). */
int hook_main(int argc, char **argv);

void hook_free(struct hook *h);
/* An annotation of the state (or config.json), or of the precreate config; NULL when absent. */
const char *hook_annotation(const struct hook *h, const char *key);
/* The OCI state on stdin: id, pid > 0, an absolute bundle. -EINVAL saying what is wrong. */
int hook_parse_state(struct hook *h, const char *text, struct rn_error *err);
/* The bundle's config.json: the rootfs and whether it is read-only. */
int hook_read_config(struct hook *h, struct rn_error *err);

#endif
