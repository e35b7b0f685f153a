/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rdma-netns: the CNI plugin front end. The library does the work
 * (rdmans/attach.h, rdmans/cni_state.h); this reads the CNI environment and
 * configuration, delegates IPAM, and writes results and errors in the
 * caller's CNI version.
 *
 * This header: the codes and the context every part of it works on. Each
 * X.c declares what it defines in X.h (conf, result, delegate, devinfo,
 * add, del, check, plugin, fault); main.c is the executable's one call.
 */
#ifndef RDMANS_CNI_H
#define RDMANS_CNI_H

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "rdmans/attach.h"
#include "rdmans/cni_protocol.h"
#include "rdmans/cni_state.h"
#include "rdmans/error.h"
#include "rdmans/json_cleanup.h"

/* Plugin-specific codes (100+), documented in rdma-netns(8). */
enum {
	RN_CNI_NO_DEVICE = 100, /* the selected device is not on the host */
	RN_CNI_IN_USE = 101, /* the device belongs to another attachment */
	RN_CNI_SHARED_MODE = 102, /* RDMA netns mode is shared */
	RN_CNI_NO_RDMA = 103, /* no RDMA device behind the netdev (requireRdma) */
	RN_CNI_MANAGEMENT = 104, /* the netdev carries the host's default route */
	RN_CNI_EXISTS = 105, /* the attachment or the pod interface name exists already */
	RN_CNI_NO_GID = 106, /* the RoCE v2 GID of the pod address did not appear */
	RN_CNI_CHECK_FAILED = 107, /* CHECK: the attachment is not as ADD left it */
	RN_CNI_IPAM = 108, /* the IPAM plugin could not be run or answered nonsense */
	RN_CNI_KERNEL = 109, /* a kernel operation failed */
	RN_CNI_SOFT_ROCE = 110, /* softRoce cannot work here (exclusive mode, an old rxe) */
};

/* The oldest CNI version rdma-netns speaks (0.3.0; rdmans/cni_protocol.h numbers them). */
#define CNI_OLDEST 30

struct cni_conf {
	json_t *root; /* owns everything below */
	const char *raw; /* stdin as read, for delegates */
	size_t raw_len;
	const char *version; /* "1.1.0"; NULL before the configuration is read */
	int ver; /* 30, 31, 40, 100, 110 (rn_cni_version_parse) */
	const char *name;
	const char *type;
	struct rn_attach_select sel;
	bool require_rdma;
	bool allow_default_route;
	bool soft_roce; /* create an rxe device on the pod's netdev, in the pod */
	int gid_timeout_ms;
	int return_timeout_ms;
	json_t *ipam; /* object or NULL */
	const char *ipam_type;
	json_t *prev_result; /* object or NULL */
	json_t *nccl; /* object or NULL */
	const char *devinfo_file; /* runtimeConfig.CNIDeviceInfoFile */
	json_t *valid_attachments; /* GC: array or NULL */
};

struct cni_ctx {
	const char *command;
	const char *container_id;
	const char *netns;
	const char *ifname;
	const char *path; /* CNI_PATH */
	struct rn_cni_args args; /* the pod, from CNI_ARGS */
	struct cni_conf conf;
	char state_dir[PATH_MAX];
	char devinfo_dir[PATH_MAX];
	struct rn_cni_failure fail; /* the failure to report: the first one recorded */
};

/* Records ctx's failure unless one is recorded already (the first is the cause); returns -1. */
#define cni_fail(ctx, code, ...) rn_cni_fail(&(ctx)->fail, (code), __VA_ARGS__)

#endif
