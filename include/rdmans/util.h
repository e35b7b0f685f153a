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

/*
 * Opens path, relative to dirfd, with no symbolic link anywhere on the way
 * (-ELOOP) and nothing outside dirfd (-EXDEV, ".." or an absolute path):
 * openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS), as for the data and state
 * directories whose subdirectories nobody may redirect. O_CLOEXEC is added;
 * mode counts with O_CREAT only. Kernels without openat2 (before 5.6): the
 * path is walked a component at a time, refusing symlinks the same way.
 * Returns the fd or -errno (no message: the caller says what it was for).
 */
int rn_open_beneath(int dirfd, const char *path, int flags, mode_t mode);

/* Writes all of buf, retrying on EINTR and short writes; 0 or -errno. */
int rn_write_all(int fd, const char *buf, size_t len);

/* snprintf that reports truncation as -ENAMETOOLONG. */
int rn_path(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
