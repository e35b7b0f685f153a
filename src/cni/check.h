/* SPDX-License-Identifier: Apache-2.0 */
/* rdma-netns CHECK and STATUS (check.c): 0, or -1 with ctx's failure set. */
#ifndef RDMANS_CNI_CHECK_H
#define RDMANS_CNI_CHECK_H

#include "cni.h"

int cni_cmd_check(struct cni_ctx *ctx);
int cni_cmd_status(struct cni_ctx *ctx);

#endif
