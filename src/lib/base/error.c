// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "rdmans/error.h"
#include "rdmans/util.h"

/* An error must always carry a code; 0 would read as success. */
static int positive_errno(int errnum)
{
	if (errnum < 0)
		errnum = -errnum;
	return errnum ? errnum : EIO;
}

__attribute__((format(printf, 4, 0))) static int
error_vset(struct rn_error *err, int errnum, bool with_strerror, const char *fmt, va_list ap)
{
	size_t len;

	errnum = positive_errno(errnum);
	if (!err)
		return -errnum;
	err->code = errnum;
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	if (with_strerror) {
		len = strlen(err->msg);
		snprintf(err->msg + len, sizeof(err->msg) - len, ": %s", strerror(errnum));
	}
	return -errnum;
}

int rn_error_set(struct rn_error *err, int errnum, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = error_vset(err, errnum, false, fmt, ap);
	va_end(ap);
	return r;
}

int rn_error_errno(struct rn_error *err, int errnum, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = error_vset(err, errnum, true, fmt, ap);
	va_end(ap);
	return r;
}

int rn_error_wrap(struct rn_error *err, const char *fmt, ...)
{
	char prefix[RN_ERROR_MSG_MAX];
	char previous[RN_ERROR_MSG_MAX];
	size_t len;
	va_list ap;

	if (!err)
		return -EIO;
	if (!err->code)
		err->code = EIO;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	memcpy(previous, err->msg, sizeof(previous));
	len = strnlen(prefix, sizeof(err->msg) - 1);
	memcpy(err->msg, prefix, len);
	if (len + 2 < sizeof(err->msg)) {
		memcpy(err->msg + len, ": ", 2);
		len += 2;
	}
	(void)rn_strscpy(err->msg + len, sizeof(err->msg) - len, previous);
	return -err->code;
}

void rn_error_clear(struct rn_error *err)
{
	if (!err)
		return;
	err->code = 0;
	err->msg[0] = '\0';
}
