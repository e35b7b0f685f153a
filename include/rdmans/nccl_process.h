/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A running process's NCCL settings, read as NCCL in that process reads them
 * (nccl_process.c): its environment, then NCCL_CONF_FILE or ~/.nccl.conf,
 * then /etc/nccl.conf, each file inside the process's own root.
 */
#ifndef RDMANS_NCCL_PROCESS_H
#define RDMANS_NCCL_PROCESS_H

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

#include "rdmans/error.h"
#include "rdmans/nccl.h"

struct rn_nccl_var {
	char name[RN_NCCL_NAME_MAX];
	char value[RN_NCCL_VALUE_MAX];
	char source[PATH_MAX]; /* "environment", or the nccl.conf path inside the process's root */
};

struct rn_nccl_process {
	size_t n;
	struct rn_nccl_var *v; /* the environment's first, then each file's, first one wins */
	char conf_files[2][PATH_MAX]; /* nccl.conf files read ("" none): the user's, /etc's */
	char conf_errors[2][PATH_MAX + 256]; /* why one that exists could not be read ("") */
	char read_error[256]; /* its environment or root could not be read ("" when both were) */
};

/*
 * Reads PROC_ROOT/PID's settings into np (zeroed first). What cannot be read
 * (not root, a file that is no regular file) is said in np's read_error and
 * conf_errors, not returned: NCCL would skip it too. -ESRCH when there is no
 * such process; -ENOMEM.
 */
int rn_nccl_process_read(struct rn_nccl_process *np, const char *proc_root, pid_t pid,
			 struct rn_error *err);

/* The effective value of NCCL variable `name`, or NULL when the process has none. */
const struct rn_nccl_var *rn_nccl_process_get(const struct rn_nccl_process *np, const char *name);

void rn_nccl_process_free(struct rn_nccl_process *np);

#endif
