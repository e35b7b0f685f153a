/* SPDX-License-Identifier: Apache-2.0 */
/* rdma-netns ADD (add.c): 0, or -1 with ctx's failure set. */
#ifndef RDMANS_CNI_ADD_H
#define RDMANS_CNI_ADD_H

#include "cni.h"

int cni_cmd_add(struct cni_ctx *ctx);

#endif
