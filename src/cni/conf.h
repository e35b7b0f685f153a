/* SPDX-License-Identifier: Apache-2.0 */
/* rdma-netns: its network configuration, read and checked (conf.c). */
#ifndef RDMANS_CNI_CONF_H
#define RDMANS_CNI_CONF_H

#include "cni.h"

/*
 * The network configuration, decoded by rn_cni_conf_decode (doc,
 * its version): ours read and checked. -1 with ctx's failure set.
 */
int cni_conf_parse_doc(struct cni_ctx *ctx, json_t *doc, const char *raw, size_t len,
		       const char *version, int ver);
/* The same from the text (rn_cni_conf_decode first), for the tools and fuzzers. */
int cni_conf_parse(struct cni_ctx *ctx, const char *raw, size_t len);
void cni_conf_free(struct cni_conf *conf);

#endif
