/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rdma-netns: the CNI plugin front end. The library does the work
 * (rdmans/attach.h, rdmans/cni_state.h); this reads the CNI environment and
 * configuration, delegates IPAM, and writes results and errors in the
 * caller's CNI version.
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
	/* the failure to report */
	int code;
	char msg[RN_ERROR_MSG_MAX];
	char details[RN_ERROR_MSG_MAX];
};

/* Records the failure (first one wins unless `force`); returns -1. */
int cni_fail(struct cni_ctx *ctx, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A library error, with a CNI code chosen from its errno unless `code` is not 0. */
int cni_fail_lib(struct cni_ctx *ctx, int code, const struct rn_error *err);

/*
 * conf.c: the network configuration, decoded by rn_cni_conf_decode (doc,
 * its version): ours read and checked. -1 with ctx's failure set.
 */
int cni_conf_parse_doc(struct cni_ctx *ctx, json_t *doc, const char *raw, size_t len,
		       const char *version, int ver);
/* The same from the text (rn_cni_conf_decode first), for the tools and fuzzers. */
int cni_conf_parse(struct cni_ctx *ctx, const char *raw, size_t len);
void cni_conf_free(struct cni_conf *conf);

/* result.c */
struct cni_ipam_result {
	size_t n_ips;
	struct rn_attach_ip ips[16];
	size_t n_routes;
	struct rn_attach_route routes[32];
	json_t *dns; /* object or NULL (owned) */
};
void cni_ipam_result_free(struct cni_ipam_result *res);
int cni_ipam_result_parse(struct cni_ctx *ctx, json_t *doc, struct cni_ipam_result *out);
/* The result of a main-mode ADD in the caller's version. */
json_t *cni_result_main(const struct cni_ctx *ctx, const struct rn_attach_plan *plan,
			const struct cni_ipam_result *ipam);
/* prevResult passed on (chained mode), with the caller's cniVersion. */
json_t *cni_result_chained(const struct cni_ctx *ctx);
/* The caller's cniVersion, the latest when the configuration did not say. */
const char *cni_out_version(const struct cni_ctx *ctx);
/* Writes ctx's failure as a CNI error document to stdout. */
void cni_print_error(const struct cni_ctx *ctx);

/* delegate.c: IPAM delegation by the spec (exec ipam.type from CNI_PATH). */
struct cni_delegate_env {
	const char *command; /* CNI_COMMAND for the delegate */
	const char *container_id; /* NULL: as ours */
	const char *ifname;
	const char *netns;
	const char *args; /* CNI_ARGS */
};
/*
 * Runs the IPAM plugin with stdin `input` (the config as received unless
 * given). ret_doc (optional) gets its parsed stdout. Its error is copied
 * into ctx (its code, "IPAM plugin TYPE: its message").
 */
int cni_delegate(struct cni_ctx *ctx, const struct cni_delegate_env *env, const char *input,
		 json_t **ret_doc);
/* -1 (failure set) when CNI_PATH has no IPAM plugin of that type. */
int cni_delegate_check(struct cni_ctx *ctx);
/* Whether the IPAM plugin lists `version` among its supported versions. */
bool cni_delegate_supports(struct cni_ctx *ctx, const char *version);

/* devinfo.c: the Network Plumbing WG device-info file for Multus. */
int cni_devinfo_path(struct cni_ctx *ctx, char *buf, size_t len);
int cni_devinfo_write(struct cni_ctx *ctx, const char *path, const struct rn_attach_plan *plan);
int cni_devinfo_remove(struct cni_ctx *ctx, const char *path);

/* The commands. Each returns 0 or -1 with ctx's failure set. */
int cni_cmd_add(struct cni_ctx *ctx);
int cni_cmd_del(struct cni_ctx *ctx);
int cni_cmd_check(struct cni_ctx *ctx);
int cni_cmd_status(struct cni_ctx *ctx);
int cni_cmd_gc(struct cni_ctx *ctx);

/*
 * del.c: DEL of one attachment from its state (also GC and ADD's rollback):
 * devices home, IPAM DEL (call_ipam), device-info file and state removed.
 * take_locks: take the device locks (ADD's rollback holds them already).
 * container_id/ifname: the IPAM DEL's, NULL for the caller's.
 */
int cni_teardown(struct cni_ctx *ctx, const char *state_name, struct rn_cni_state *st,
		 bool call_ipam, bool take_locks, const char *container_id, const char *ifname);

/*
 * DEL with input that ADD refuses (a bad CNI_IFNAME, CNI_CONTAINERID,
 * CNI_NETNS, CNI_ARGS, network name or config), the failure recorded in
 * ctx: 0 (DEL succeeds, a note on stderr) when no state file is this DEL's
 * (none names its container and interface), as the runtime's DEL after a
 * refused ADD must; -1 keeps the refusal.
 */
int cni_del_refused(struct cni_ctx *ctx);

/* plugin.c: the plugin's main, on the CNI skeleton (rn_cni_main). */
int cni_main(void);

/* fault.c: fault injection (test builds, meson -Dfault_injection=true). */
void cni_fault_init(void);
/* How many steps `command` made, on stderr (RDMA_NETNS_FAULT_STEP set). */
void cni_fault_report(const char *command);
void cni_fault_point(const char *what);
/* Whether RDMA_NETNS_FAULT_SKIP names check `what` (test builds; always false otherwise). */
bool cni_fault_skip(const char *what);
int cni_step(void *arg, const char *what, struct rn_error *err);

#endif
