/* SPDX-License-Identifier: Apache-2.0 */
/* rdmans doctor's GPU checks (doctor_checks_gpu.c), private to the checklist. */
#ifndef RDMANS_DOCTOR_CHECKS_GPU_H
#define RDMANS_DOCTOR_CHECKS_GPU_H

#include "doctor_checks_private.h"

/* The nearest RDMA device of each GPU (PCI path), and whether NCCL takes it. */
void rn_doctor_check_gpu_nic(struct rn_doctor_ctx *x);
/* GPUDirect RDMA: nvidia_peermem, or dma-buf with the open kernel modules. */
void rn_doctor_check_gpudirect(struct rn_doctor_ctx *x);

#endif
