/* SPDX-License-Identifier: Apache-2.0 */
/* rdma-netns: IPAM delegation by the spec, ipam.type exec'ed from CNI_PATH (delegate.c). */
#ifndef RDMANS_CNI_DELEGATE_H
#define RDMANS_CNI_DELEGATE_H

#include <jansson.h>
#include <stdbool.h>

#include "cni.h"

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

#endif
