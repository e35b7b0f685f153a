/* SPDX-License-Identifier: Apache-2.0 */
/* A process's files under a proc root: /proc/PID/{status,environ,limits,...} (proc.c). */
#ifndef RDMANS_PROC_H
#define RDMANS_PROC_H

#include <stddef.h>
#include <sys/types.h>

/* Reads PROC_ROOT/PID/NAME (at most max bytes) into *ret, NUL-terminated: 0 or -errno. */
int rn_proc_read(const char *proc_root, pid_t pid, const char *name, size_t max, char **ret,
		 size_t *ret_len);

/* The value of "Key:\t..." in a /proc/PID/status text, into buf (cut to fit), or NULL. */
const char *rn_proc_status_field(const char *text, const char *key, char *buf, size_t len);

#endif
