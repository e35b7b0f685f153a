/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A kubeconfig, read for rdma-netns-ipam's kubernetes store
 * (ipam_kubeconfig.c): the current context's server, CA, client certificate
 * and key, and bearer token (inline or a file read again at each request).
 *
 * A kubeconfig is JSON or YAML. JSON is read whole. YAML is read in the
 * subset tools write (kubectl, whereabouts' and our DaemonSet's templates):
 * block mappings and sequences by indentation, plain, single- and
 * double-quoted scalars, comments, `---`. Anchors, aliases, tags, block
 * scalars (| >), flow collections other than [] and {}, and several
 * documents are refused with the line they are on. So are user
 * credentials given by `exec` or `auth-provider` plugins, and
 * insecure-skip-tls-verify.
 */
#ifndef RDMANS_IPAM_KUBECONFIG_H
#define RDMANS_IPAM_KUBECONFIG_H

#include <stddef.h>

#include "rdmans/error.h"

struct rn_kubeconfig {
	char *server; /* "https://10.0.0.1:6443", no trailing '/' */
	/* file paths are absolute (a relative one is taken from the kubeconfig's directory) */
	char *ca_file, *ca_pem;
	char *cert_file, *cert_pem;
	char *key_file, *key_pem; /* key_pem: a secret */
	char *token; /* a secret: never in messages */
	char *token_file;
};

/* Most a kubeconfig (or a token file) may hold. */
#define RN_KUBECONFIG_MAX (1024 * 1024)

/*
 * Parses kubeconfig text; `dir` is where relative file paths start from
 * (NULL: they are refused), `name` names it in messages. -EBADMSG: not
 * JSON nor the YAML subset; -EINVAL: a value missing or unsupported.
 */
int rn_kubeconfig_parse(const char *text, const char *name, const char *dir,
			struct rn_kubeconfig *ret, struct rn_error *err);
/* Reads and parses the file at path. */
int rn_kubeconfig_load(const char *path, struct rn_kubeconfig *ret, struct rn_error *err);
void rn_kubeconfig_free(struct rn_kubeconfig *k);

/*
 * The YAML subset above as a JSON tree (a jansson json_t *, every scalar a
 * string); *ret_line is the line of the first error. -EBADMSG on error.
 */
struct json_t;
int rn_kubeconfig_yaml(const char *text, struct json_t **ret, size_t *ret_line,
		       struct rn_error *err);

#endif
