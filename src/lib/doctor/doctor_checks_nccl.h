/* SPDX-License-Identifier: Apache-2.0 */
/* rdmans doctor's NCCL checks (doctor_checks_nccl.c), private to the checklist. */
#ifndef RDMANS_DOCTOR_CHECKS_NCCL_H
#define RDMANS_DOCTOR_CHECKS_NCCL_H

#include <stddef.h>

#include "doctor_checks_private.h"

/* nccl.conf, NCCL_NET, NCCL_IB_HCA, NCCL_IB_GID_INDEX, NCCL_SOCKET_IFNAME of the process. */
void rn_doctor_check_nccl(struct rn_doctor_ctx *x);
/* "NCCL_IB_HCA=mlx5_0 (environment)": a setting and where the process has it. */
void rn_doctor_var_desc(const struct rn_nccl_var *v, char *buf, size_t len);

#endif
