/* SPDX-License-Identifier: Apache-2.0 */
/* rdmans doctor: the checklist, run on facts with no I/O (doctor_checks.c). */
#ifndef RDMANS_DOCTOR_CHECKS_H
#define RDMANS_DOCTOR_CHECKS_H

#include <sys/types.h>

#include "rdmans/doctor.h"
#include "rdmans/error.h"

/* Runs the checklist on the facts. */
int rn_doctor_evaluate(const struct rn_doctor_facts *f, struct rn_doctor_report *out,
		       struct rn_error *err);

#endif
