/* SPDX-License-Identifier: Apache-2.0 */
#ifndef RDMANS_UTIL_H
#define RDMANS_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "rdmans/error.h"

/*
 * Device and interface names come from users and configs and end up in
 * paths and netlink messages: refuse empty names, "/", "..", whitespace,
 * and names longer than max_len (bytes, without the NUL).
 */
int rn_name_check(const char *what, const char *name, size_t max_len, struct rn_error *err);

/* Strict decimal parse of a whole string; -EINVAL otherwise. */
int rn_parse_pid(const char *text, pid_t *ret);

/* Reads a small sysfs/proc file into buf, stripping the trailing newline. */
int rn_read_line(const char *path, char *buf, size_t len);

/* Writes all of buf, retrying on EINTR and short writes; 0 or -errno. */
int rn_write_all(int fd, const char *buf, size_t len);

/* Appends to the string in buf (a message), cutting it short silently when full. */
void rn_strappend(char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* snprintf that reports truncation as -ENAMETOOLONG. */
int rn_path(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
