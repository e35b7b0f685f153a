/* SPDX-License-Identifier: Apache-2.0 */
/* A process's files under a proc root: /proc/PID/{status,environ,limits,...} (proc.c). */
#ifndef RDMANS_PROC_H
#define RDMANS_PROC_H

#include <stddef.h>
#include <sys/types.h>

#include "rdmans/error.h"

/* 0 when PROC_ROOT/PID is there; -ESRCH ("has it exited?") or -ENAMETOOLONG with err set. */
int rn_proc_exists(const char *proc_root, pid_t pid, struct rn_error *err);

/* Reads PROC_ROOT/PID/NAME (at most max bytes) into *ret, NUL-terminated: 0 or -errno. */
int rn_proc_read(const char *proc_root, pid_t pid, const char *name, size_t max, char **ret,
		 size_t *ret_len);

/*
 * An O_PATH fd of PROC_ROOT/PID/root (the process's root, for rootfs.c's
 * confined reads), or -errno; when it fails and *why is "", why says so.
 */
int rn_proc_open_root(const char *proc_root, pid_t pid, char *why, size_t why_len);

/* The value of "Key:\t..." in a /proc/PID/status text, into buf (cut to fit), or NULL. */
const char *rn_proc_status_field(const char *text, const char *key, char *buf, size_t len);

#endif
