/* SPDX-License-Identifier: Apache-2.0 */
/* rdmans doctor: the target process's facts (doctor_process.c). */
#ifndef RDMANS_DOCTOR_PROCESS_H
#define RDMANS_DOCTOR_PROCESS_H

#include <sys/types.h>

#include "rdmans/doctor.h"
#include "rdmans/error.h"

/*
 * The process part, from PROC/PID/{limits,status,environ,comm} and files in
 * its mount namespace (PROC/PID/root: /dev/infiniband, its nccl.conf files).
 * Call after the netns part (the device nodes are those of its devices).
 */
int rn_doctor_facts_process(struct rn_doctor_facts *f, const char *proc_root, pid_t pid,
			    struct rn_error *err);

#endif
