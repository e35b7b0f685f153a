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
 * In librdmans-json (jansson, front ends only), with the skeleton both
 * plugins run (rn_cni_main).
 * The plugins map the negative errnos to the CNI codes below; the messages
 * name what to fix.
 */
#ifndef RDMANS_CNI_PROTOCOL_H
#define RDMANS_CNI_PROTOCOL_H

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

/*
 * An entry of a result's "ips": below 1.0.0 it carries "version" ("4" or
 * "6"), from 1.0.0 on it does not (the spec dropped the field).
 */
void rn_cni_result_ip_version(struct json_t *ip, int ver, bool ipv6);

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

/* ---- the skeleton both plugins run (pkg/skel's PluginMain) ---- */

/* The failure a CNI call reports: a spec or plugin code, the message and details. */
struct rn_cni_failure {
	int code;
	char msg[RN_ERROR_MSG_MAX];
	char details[RN_ERROR_MSG_MAX];
};

/* "an object", "a string", ... for messages that say what a JSON value is not. */
const char *rn_cni_json_type(const json_t *v);

/* Records a failure unless one is recorded already (the first is the cause); returns -1. */
int rn_cni_fail(struct rn_cni_failure *f, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * A network configuration decoded by the one rule both plugins follow: one
 * JSON object, duplicate keys refused; its cniVersion a string, read as
 * 0.1.0 when absent (libcni's ConfigDecoder), and not older than `oldest`.
 * *ret_doc (json_decref() it), *ret_version (inside the document, or the
 * literal "0.1.0") and *ret_ver are set on success; -1 with f set (code 6,
 * 7 or 1) otherwise.
 */
int rn_cni_conf_decode(const char *text, size_t len, int oldest, const char *plugin,
		       json_t **ret_doc, const char **ret_version, int *ret_ver,
		       struct rn_cni_failure *f);

/* One call, as the skeleton hands it to a plugin's verbs. */
struct rn_cni_call {
	struct rn_cni_env env; /* env.command is set */
	char *input; /* stdin, NUL-terminated, trailing white space dropped */
	size_t input_len;
	json_t *doc; /* the configuration, a JSON object */
	const char *version; /* its cniVersion ("0.1.0" when it names none) */
	int ver; /* that version's number */
	struct rn_cni_failure fail; /* what the verb reports; code 0: none */
};

/* The verbs a plugin implements, in the order of rn_cni_plugin.verbs. */
enum rn_cni_verb { RN_CNI_ADD, RN_CNI_DEL, RN_CNI_CHECK, RN_CNI_STATUS, RN_CNI_GC, RN_CNI_VERBS };

/*
 * A plugin: its name, the oldest CNI version it speaks and its verbs. Each
 * verb returns 0, or -1 with call->fail set. VERSION is the skeleton's.
 */
struct rn_cni_plugin {
	const char *name;
	int oldest;
	/* after the skeleton's checks, before any verb but VERSION: the plugin's own reading */
	int (*prepare)(struct rn_cni_call *call, void *data);
	/* ADD, DEL, CHECK, STATUS, GC (enum rn_cni_verb) */
	int (*verbs[RN_CNI_VERBS])(struct rn_cni_call *call, void *data);
	/*
	 * DEL whose input ADD refuses (the failure in call->fail): 0 when no ADD
	 * can have stored anything under it (DEL then succeeds, as the runtime's
	 * DEL after a refused ADD must), -1 to keep the failure. NULL: keep it.
	 */
	int (*del_refused)(struct rn_cni_call *call, void *data);
	/* the failure's line for the plugin's log; NULL: "NAME: COMMAND: MSG" on stderr */
	void (*log_failure)(struct rn_cni_call *call, void *data);
};

/* The largest configuration a plugin reads from stdin. */
#define RN_CNI_STDIN_MAX (4 * 1024 * 1024)

/*
 * The plugin's main: reads the CNI environment and stdin, dispatches
 * CNI_COMMAND, answers VERSION, applies the protocol's rules (no or an
 * unknown CNI_COMMAND: code 4; stdin over RN_CNI_STDIN_MAX: code 6, a read
 * error 5; the configuration by rn_cni_conf_decode; CHECK needs 0.4.0), and
 * prints the failure as a CNI error document in the caller's version (the
 * latest when that version is refused). Front-end code: it writes stdout
 * and stderr. Returns the exit status.
 */
int rn_cni_main(const struct rn_cni_plugin *plugin, void *data);

#endif
