/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CNI protocol (containernetworking/cni SPEC.md), one module for both
 * plugins (rdma-netns, rdma-netns-ipam), as Go plugins share pkg/skel:
 *
 *   - the CNI_* environment, an empty variable read as unset;
 *   - CNI_ARGS ("K8S_POD_NAMESPACE=ns;K8S_POD_NAME=n;IgnoreUnknown=1");
 *   - the one table of CNI versions and the checks against it;
 *   - result, VERSION and error documents on stdout;
 *   - the bounded read of a JSON document on stdin (also the OCI hook's
 *     state), which a runtime that keeps the pipe open cannot hang.
 *
 * In librdmans-json (jansson, front ends only; "_json" names that library).
 * The plugins map the negative errnos to the CNI codes below; the messages
 * name what to fix.
 */
#ifndef RDMANS_CNI_JSON_H
#define RDMANS_CNI_JSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "rdmans/error.h"

/* Error codes from the CNI spec (100 and above are each plugin's own). */
enum {
	CNI_ERR_INCOMPATIBLE = 1,
	CNI_ERR_UNSUPPORTED_FIELD = 2,
	CNI_ERR_UNKNOWN_CONTAINER = 3,
	CNI_ERR_INVALID_ENV = 4,
	CNI_ERR_IO = 5,
	CNI_ERR_DECODE = 6,
	CNI_ERR_INVALID_CONFIG = 7,
	CNI_ERR_TRY_AGAIN = 11,
	CNI_ERR_NOT_AVAILABLE = 50,
	CNI_ERR_LIMITED = 51,
};

/* ---- environment ---- */

struct rn_cni_env {
	const char *command; /* CNI_COMMAND */
	const char *container_id; /* CNI_CONTAINERID */
	const char *netns; /* CNI_NETNS */
	const char *ifname; /* CNI_IFNAME */
	const char *args; /* CNI_ARGS */
	const char *path; /* CNI_PATH */
};

/* Reads CNI_*; a variable that is unset or empty is NULL. */
void rn_cni_env_read(struct rn_cni_env *ret);

/*
 * What ADD, CHECK and DEL need: CNI_CONTAINERID and CNI_IFNAME, and
 * CNI_NETNS when `netns` is set. -EINVAL naming the missing variable and
 * `plugin`, the CNI plugin that needs it.
 */
int rn_cni_env_require(const struct rn_cni_env *env, bool netns, const char *plugin,
		       struct rn_error *err);

/* ---- CNI_ARGS ---- */

/* The keys of CNI_ARGS that the plugins record; "" when absent. */
struct rn_cni_args {
	char pod_namespace[256]; /* K8S_POD_NAMESPACE */
	char pod_name[256]; /* K8S_POD_NAME */
	char pod_uid[128]; /* K8S_POD_UID */
	char infra_id[128]; /* K8S_POD_INFRA_CONTAINER_ID */
};

/*
 * Parses "KEY=VALUE;KEY=VALUE" (NULL or "" is no arguments). Empty pairs
 * (";;") are skipped; other keys, IgnoreUnknown among them, are ignored; a
 * key given twice keeps its last value. -EINVAL for a pair without '=' or
 * with an empty key, and for a value of a key above that does not fit or is
 * not one line. `ret` is cleared first.
 */
int rn_cni_args_parse(const char *args, struct rn_cni_args *ret, struct rn_error *err);

/* ---- versions ---- */

/*
 * Versions as numbers: 10, 20, 30, 31, 40, 100, 110 for 0.1.0 ... 1.1.0.
 * Each plugin says the oldest it speaks; the newest is the same for all.
 */
#define RN_CNI_VERSION_LATEST "1.1.0"

/* The number of a version the table knows ("0.4.0" -> 40), or -1. */
int rn_cni_version_parse(const char *version);

/*
 * The number of `version` when it is in the table and not older than
 * `oldest`; -EPROTONOSUPPORT otherwise, the message listing what `plugin`
 * supports.
 */
int rn_cni_version_check(const char *version, int oldest, const char *plugin, struct rn_error *err);

/* ---- output (stdout) ---- */

/* Writes doc as one line and takes it; 0, or -1 when it cannot be written. */
int rn_cni_print(json_t *doc);

/* The VERSION answer: cniVersion `version`, the versions from `oldest` on. */
int rn_cni_print_version(const char *version, int oldest);

/* An error document {cniVersion, code, msg[, details]}; details NULL or "" is left out. */
int rn_cni_print_error(const char *version, int code, const char *msg, const char *details);

/* ---- input ---- */

/*
 * Reads one JSON document (a CNI configuration, an OCI state) from fd, at
 * most `max` bytes: it stops at EOF or as soon as the bytes read are one
 * whole object or array (rn_json_complete), so a writer that keeps the pipe
 * open cannot hang the reader. *ret gets the text, NUL-terminated (free()
 * it), *ret_len its length. -EFBIG when more than `max` bytes come
 * ("WHAT on stdin is larger than ..."), -errno when read() fails. A buffer
 * given up on the way is zeroed first: the text may hold a password.
 */
int rn_cni_read_input(int fd, size_t max, const char *what, char **ret, size_t *ret_len,
		      struct rn_error *err);

#endif
