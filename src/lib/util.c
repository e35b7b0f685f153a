// SPDX-License-Identifier: Apache-2.0
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rdmans/cleanup.h"
#include "rdmans/util.h"

int rn_name_check(const char *what, const char *name, size_t max_len, struct rn_error *err)
{
	size_t len;

	if (!name || !*name)
		return rn_error_set(err, EINVAL, "%s name is empty", what);
	len = strlen(name);
	if (len > max_len)
		return rn_error_set(err, EINVAL,
				    "%s name '%s' is too long (%zu bytes, at most %zu)", what, name,
				    len, max_len);
	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || strstr(name, ".."))
		return rn_error_set(err, EINVAL, "%s name '%s' must not contain '..'", what, name);
	for (const char *p = name; *p; p++) {
		if (*p == '/')
			return rn_error_set(err, EINVAL, "%s name '%s' must not contain '/'", what,
					    name);
		if (isspace((unsigned char)*p) || !isprint((unsigned char)*p))
			return rn_error_set(
				err, EINVAL,
				"%s name '%s' must not contain spaces or control characters", what,
				name);
	}
	return 0;
}

int rn_parse_pid(const char *text, pid_t *ret)
{
	char *end;
	long v;

	if (!text || !*text || !isdigit((unsigned char)*text))
		return -EINVAL;
	errno = 0;
	v = strtol(text, &end, 10);
	if (errno || *end || v <= 0 || v > INT_MAX)
		return -EINVAL;
	*ret = (pid_t)v;
	return 0;
}

int rn_read_line(const char *path, char *buf, size_t len)
{
	_cleanup_close_ int fd = -1;
	ssize_t n;

	if (len == 0)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	return 0;
}

int rn_path(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	if ((size_t)n >= len)
		return -ENAMETOOLONG;
	return 0;
}

int rn_write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

void rn_strappend(char *buf, size_t len, const char *fmt, ...)
{
	size_t used = strnlen(buf, len);
	va_list ap;

	if (used + 1 >= len)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + used, len - used, fmt, ap);
	va_end(ap);
}
