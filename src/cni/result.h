/* SPDX-License-Identifier: Apache-2.0 */
/* rdma-netns: failures and their codes, the IPAM result read, results written (result.c). */
#ifndef RDMANS_CNI_RESULT_H
#define RDMANS_CNI_RESULT_H

#include <jansson.h>
#include <stddef.h>

#include "cni.h"
#include "rdmans/attach.h"
#include "rdmans/error.h"

/* A library error, with a CNI code chosen from its errno unless `code` is not 0. */
int cni_fail_lib(struct cni_ctx *ctx, int code, const struct rn_error *err);

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

#endif
