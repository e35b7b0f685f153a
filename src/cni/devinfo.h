/* SPDX-License-Identifier: Apache-2.0 */
/* rdma-netns: the Network Plumbing WG device-info file for Multus (devinfo.c). */
#ifndef RDMANS_CNI_DEVINFO_H
#define RDMANS_CNI_DEVINFO_H

#include <stddef.h>

#include "cni.h"
#include "rdmans/attach.h"

int cni_devinfo_path(struct cni_ctx *ctx, char *buf, size_t len);
int cni_devinfo_write(struct cni_ctx *ctx, const char *path, const struct rn_attach_plan *plan);
int cni_devinfo_remove(struct cni_ctx *ctx, const char *path);

#endif
