/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the checklist's files share (doctor_checks.c defines it): the run's
 * context and how a check reports. Private to src/lib/doctor_checks*.c.
 */
#ifndef RDMANS_DOCTOR_CHECKS_PRIVATE_H
#define RDMANS_DOCTOR_CHECKS_PRIVATE_H

#include <stdbool.h>
#include <stddef.h>

#include "rdmans/doctor.h"

struct rn_doctor_ctx {
	const struct rn_doctor_facts *f;
	struct rn_doctor_report *r;
	const char *id;
	const char *title;
	int error;
	const struct rn_nccl_result *nccl; /* NULL when the resolver found nothing */
	const char *nccl_msg;
};

/* Appends a result of the running check (a static sink when out of memory: x->error says so). */
struct rn_doctor_result *rn_doctor_emit(struct rn_doctor_ctx *x, const char *subject,
					enum rn_doctor_status status, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Sets the result's fix. */
void rn_doctor_fix(struct rn_doctor_result *res, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* "PID 42 (python3)" */
const char *rn_doctor_pid_subject(const struct rn_doctor_process *p, char *buf, size_t len);
/* Without a target process, emits SKIP saying how to give one, and is true. */
bool rn_doctor_no_process(struct rn_doctor_ctx *x);

#endif
