/* SPDX-License-Identifier: Apache-2.0 */
/* rdma-netns's fault injection (fault.c; test builds, meson -Dfault_injection=true). */
#ifndef RDMANS_CNI_FAULT_H
#define RDMANS_CNI_FAULT_H

#include <stdbool.h>

#include "rdmans/error.h"

void cni_fault_init(void);
/* How many steps `command` made, on stderr (RDMA_NETNS_FAULT_STEP set). */
void cni_fault_report(const char *command);
void cni_fault_point(const char *what);
/* Whether RDMA_NETNS_FAULT_SKIP names check `what` (test builds; always false otherwise). */
bool cni_fault_skip(const char *what);
int cni_step(void *arg, const char *what, struct rn_error *err);

#endif
