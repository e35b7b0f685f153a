/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Error reporting for library code (after crun's design-docs/error_handling.md).
 *
 * A fallible function takes `struct rn_error *err` last and returns 0 or a
 * negative errno; it never prints or exits. Making the error is the return
 * statement:
 *
 *	return rn_error_set(err, ENODEV, "RDMA device %s not found", name);
 *
 * Callers add context with rn_error_wrap(), giving "outer: inner".
 * The message is stored inline, so there is nothing to free.
 */
#ifndef RDMANS_ERROR_H
#define RDMANS_ERROR_H

#include <stdbool.h>

#define RN_ERROR_MSG_MAX 1024

struct rn_error {
	int code; /* positive errno, 0 when no error was set */
	char msg[RN_ERROR_MSG_MAX];
};

/* Sets code and message, returns -errnum (so it can be returned directly). */
int rn_error_set(struct rn_error *err, int errnum, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Like rn_error_set() and appends ": strerror(errnum)". */
int rn_error_errno(struct rn_error *err, int errnum, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Prefixes context to an existing error: "context: previous message". Returns -err->code. */
int rn_error_wrap(struct rn_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

void rn_error_clear(struct rn_error *err);

static inline bool rn_error_isset(const struct rn_error *err)
{
	return err && err->code != 0;
}

#endif
