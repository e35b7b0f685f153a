// SPDX-License-Identifier: Apache-2.0
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "rdmans/cleanup.h"
#include "rdmans/util.h"

/* Given and not longer than max_len; `noun` follows `what` in the messages (" name", or ""). */
static int name_present(const char *what, const char *noun, const char *name, size_t max_len,
			struct rn_error *err)
{
	size_t len;

	if (!name || !*name)
		return rn_error_set(err, EINVAL, "%s%s is empty", what, noun);
	len = strlen(name);
	if (len > max_len)
		return rn_error_set(err, EINVAL, "%s%s '%s' is too long (%zu bytes, at most %zu)",
				    what, noun, name, len, max_len);
	return 0;
}

int rn_name_check(const char *what, const char *name, size_t max_len, struct rn_error *err)
{
	int r = name_present(what, " name", name, max_len, err);

	if (r < 0)
		return r;
	if (strcmp(name, ".") == 0)
		return rn_error_set(err, EINVAL, "%s name '.' is not allowed: it names a directory",
				    what);
	if (strstr(name, ".."))
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

int rn_cni_name_check(const char *what, const char *name, size_t max_len, struct rn_error *err)
{
	int r = name_present(what, "", name, max_len, err);

	if (r < 0)
		return r;
	if (!isalnum((unsigned char)name[0]))
		return rn_error_set(err, EINVAL, "%s '%s' must start with a letter or a digit",
				    what, name);
	for (const char *p = name; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '_' && *p != '.' && *p != '-')
			return rn_error_set(err, EINVAL,
					    "%s '%s' may only contain letters, digits, '_', '.' "
					    "and '-'",
					    what, name);
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
	fd = open(path,
		  O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY); /* sysfs, proc: never blocks */
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

/* ---- errno injection (test builds: meson -Dfault_injection=true) ---- */

#ifdef RDMANS_FAULT_INJECTION
static long fault_io_n, fault_io_at = -1;
static int fault_io_errno;
static const char *fault_io_what;

static void fault_io_init(void)
{
	static const struct {
		const char *name;
		int e;
	} names[] = {
		{ "ENOSPC", ENOSPC }, { "EIO", EIO }, { "EROFS", EROFS }, { "EDQUOT", EDQUOT }
	};
	const char *v = getenv("RDMANS_FAULT_IO"), *colon;

	fault_io_at = 0;
	if (!v || !(colon = strchr(v, ':')))
		return;
	fault_io_at = strtol(v, NULL, 10);
	for (size_t i = 0; i < RN_ARRAY_SIZE(names); i++)
		if (strcmp(colon + 1, names[i].name) == 0)
			fault_io_errno = names[i].e;
	if (!fault_io_errno)
		fault_io_errno = (int)strtol(colon + 1, NULL, 10);
}

bool rn_fault_io(const char *what)
{
	if (fault_io_at < 0)
		fault_io_init();
	if (++fault_io_n != fault_io_at || fault_io_errno <= 0)
		return false;
	fault_io_what = what;
	errno = fault_io_errno;
	return true;
}

long rn_fault_io_count(const char **ret_fired)
{
	if (ret_fired)
		*ret_fired = fault_io_what;
	return fault_io_n;
}
#else
bool rn_fault_io(const char *what)
{
	(void)what;
	return false;
}

long rn_fault_io_count(const char **ret_fired)
{
	if (ret_fired)
		*ret_fired = NULL;
	return -1;
}
#endif

long rn_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
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

/* -errno of the failed mkdir of dir, said in err when there is one. */
static int mkdir_failed(const char *dir, struct rn_error *err)
{
	int e = errno;

	if (err)
		rn_error_errno(err, e, "cannot create directory %s", dir);
	return -e;
}

int rn_mkdir_p(const char *path, mode_t parent_mode, mode_t mode, struct rn_error *err)
{
	char buf[PATH_MAX];

	/* the common case: there already, or only the last one missing */
	if (mkdir(path, mode) == 0 || errno == EEXIST)
		return 0;
	if (errno != ENOENT)
		return mkdir_failed(path, err);
	if (rn_path(buf, sizeof(buf), "%s", path) < 0) {
		errno = ENAMETOOLONG;
		return mkdir_failed(path, err);
	}
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, parent_mode) < 0 && errno != EEXIST)
			return mkdir_failed(buf, err);
		*p = '/';
	}
	if (mkdir(path, mode) == 0 || errno == EEXIST)
		return 0;
	return mkdir_failed(path, err);
}

int rn_write_atomic(const char *path, const char *content, size_t len, mode_t mode, bool durable,
		    const char *what, struct rn_error *err)
{
	char dir[PATH_MAX], tmp[PATH_MAX];
	const char *base = strrchr(path, '/');
	_cleanup_close_ int fd = -1;
	int r, e;

	if (!base || rn_path(dir, sizeof(dir), "%.*s", (int)(base - path), path) < 0 ||
	    rn_path(tmp, sizeof(tmp), "%s/.%s.%d.tmp", dir, base + 1, (int)getpid()) < 0)
		return rn_error_set(err, ENAMETOOLONG, "%s path %s is too long or not absolute",
				    what, path);
	if (!dir[0]) /* a file in / */
		(void)rn_strscpy(dir, sizeof(dir), "/");
	fd = rn_fault_io("atomic write: create")
		     ? -1
		     : open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
	if (fd < 0)
		return rn_error_errno(err, errno, "cannot create %s %s", what, tmp);
	r = rn_fault_io("atomic write: write") ? -errno : rn_write_all(fd, content, len);
	if (r == 0 && durable && (rn_fault_io("atomic write: fsync") || fsync(fd) < 0))
		r = -errno;
	e = -r;
	if (r == 0 && close(TAKE_FD(fd)) < 0) {
		r = -1;
		e = errno;
	}
	if (r < 0) {
		(void)unlink(tmp);
		return rn_error_errno(err, e, "cannot write %s %s", what, tmp);
	}
	if (rn_fault_io("atomic write: rename") || rename(tmp, path) < 0) {
		e = errno;
		(void)unlink(tmp);
		return rn_error_errno(err, e, "cannot rename %s to %s", tmp, path);
	}
	if (durable) {
		_cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		if (dfd >= 0)
			(void)fsync(
				dfd); /* the rename is done: a failed fsync here loses nothing */
	}
	return 0;
}

static const char *file_type(mode_t m)
{
	if (S_ISDIR(m))
		return "a directory";
	if (S_ISFIFO(m))
		return "a FIFO";
	if (S_ISSOCK(m))
		return "a socket";
	if (S_ISCHR(m))
		return "a character device";
	if (S_ISBLK(m))
		return "a block device";
	if (S_ISLNK(m))
		return "a symbolic link";
	return "not a regular file";
}

static int not_regular(const char *what, const char *path, mode_t m, struct rn_error *err)
{
	return rn_error_set(err, EINVAL, "%s%s%s is %s, not a regular file", what ? what : "",
			    what ? " " : "", path, file_type(m));
}

int rn_check_regular(const char *path, const char *what, struct rn_error *err)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return rn_error_errno(err, errno, "cannot open %s%s%s", what ? what : "",
				      what ? " " : "", path);
	return S_ISREG(st.st_mode) ? 0 : not_regular(what, path, st.st_mode, err);
}

int rn_check_regular_fd(int fd, const char *path, const char *what, struct rn_error *err)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return rn_error_errno(err, errno, "cannot inspect %s", path);
	return S_ISREG(st.st_mode) ? 0 : not_regular(what, path, st.st_mode, err);
}

int rn_open_regular(int dirfd, const char *path, int flags, mode_t mode, const char *what,
		    struct rn_error *err)
{
	_cleanup_close_ int fd = -1;
	struct stat st;
	int fl, r;

	if (!path || !*path)
		return rn_error_set(err, EINVAL, "%s path is empty", what ? what : "file");
	/* stat first: a FIFO, a socket, a device is never opened */
	if (fstatat(dirfd, path, &st, (flags & O_NOFOLLOW) ? AT_SYMLINK_NOFOLLOW : 0) == 0 &&
	    !S_ISREG(st.st_mode))
		return not_regular(what, path, st.st_mode, err);
	fd = openat(dirfd, path, flags | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, mode);
	if (fd < 0)
		return rn_error_errno(err, errno, "cannot open %s%s%s", what ? what : "",
				      what ? " " : "", path);
	r = rn_check_regular_fd(fd, path, what, err);
	if (r < 0)
		return r;
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0)
		return rn_error_errno(err, errno, "cannot set up %s", path);
	return TAKE_FD(fd);
}

int rn_read_regular(const char *path, size_t max, const char *what, char **ret, size_t *ret_len,
		    struct rn_error *err)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;

	int r;

	fd = rn_open_regular(AT_FDCWD, path, O_RDONLY, 0, what, err);
	if (fd < 0)
		return fd;
	r = rn_read_fd(fd, max, &buf, &len);
	if (r == -EFBIG)
		return rn_error_set(err, EFBIG, "%s%s%s is larger than %zu bytes", what ? what : "",
				    what ? " " : "", path, max);
	if (r < 0)
		return rn_error_errno(err, -r, "cannot read %s", path);
	*ret = TAKE_PTR(buf);
	if (ret_len)
		*ret_len = len;
	return 0;
}

int rn_read_fd(int fd, size_t max, char **ret, size_t *ret_len)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0, cap = 0;

	for (;;) {
		ssize_t n;

		/* grows as it reads: max is a limit, not a size */
		if (RN_GROW(buf, &cap, len + 4096 + 1) < 0)
			return -ENOMEM;
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > max)
			return -EFBIG;
	}
	buf[len] = '\0';
	*ret = TAKE_PTR(buf);
	if (ret_len)
		*ret_len = len;
	return 0;
}

size_t rn_json_value_end(const char *buf, size_t len, size_t i)
{
	size_t depth = 0;
	bool in_string = false;

	if (i >= len)
		return SIZE_MAX;
	if (buf[i] != '{' && buf[i] != '[' && buf[i] != '"') {
		/* a number, true, false, null: up to the next delimiter */
		while (i < len && !strchr(",:]} \t\n\r", buf[i]))
			i++;
		return i;
	}
	for (; i < len; i++) {
		char c = buf[i];

		if (in_string) {
			if (c == '\\')
				i++; /* the escaped character, whatever it is */
			else if (c == '"' && depth == 0)
				return i + 1;
			else if (c == '"')
				in_string = false;
		} else if (c == '"') {
			in_string = true;
		} else if (c == '{' || c == '[') {
			depth++;
		} else if (c == '}' || c == ']') {
			if (depth == 0 || --depth == 0)
				return i + 1;
		}
	}
	return SIZE_MAX;
}

bool rn_json_complete(const char *buf, size_t len)
{
	size_t i = 0;

	while (i < len && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\n' || buf[i] == '\r'))
		i++;
	if (i == len || (buf[i] != '{' && buf[i] != '['))
		return false;
	return rn_json_value_end(buf, len, i) != SIZE_MAX;
}

/* rn_open_beneath() without openat2: one component at a time, never through a symlink. */
static int walk_beneath(int dirfd, const char *path, int flags, mode_t mode)
{
	_cleanup_free_ char *copy = strdup(path);
	_cleanup_close_ int cur = -1;
	char *comp, *next;
	int at = dirfd;

	if (!copy)
		return -ENOMEM;
	for (comp = copy; comp; comp = next) {
		struct stat st;
		int fd;

		next = strchr(comp, '/');
		if (next)
			*next++ = '\0';
		if (!*comp || strcmp(comp, ".") == 0) {
			if (next)
				continue;
			comp = (char *)".";
		}
		if (strcmp(comp, "..") == 0)
			return -EXDEV;
		if (!next) {
			fd = openat(at, comp, flags | O_NOFOLLOW | O_CLOEXEC, mode);
			if (fd < 0)
				return errno == ELOOP || errno == EMLINK ? -ELOOP : -errno;
			return fd;
		}
		if (fstatat(at, comp, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
			return -ELOOP;
		fd = openat(at, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		if (cur >= 0)
			close(cur);
		cur = fd;
		at = cur;
	}
	return -EINVAL;
}

int rn_openat2(int dirfd, const char *path, int flags, mode_t mode, uint64_t resolve)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC),
		.mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
		.resolve = resolve,
	};
	long fd;

	do /* EAGAIN: a rename raced the lookup (RESOLVE_IN_ROOT, RESOLVE_BENEATH) */
		fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
	while (fd < 0 && (errno == EAGAIN || errno == EINTR));
	return fd < 0 ? -errno : (int)fd;
}

int rn_open_beneath(int dirfd, const char *path, int flags, mode_t mode)
{
	int fd;

	if (!path || !*path)
		return -EINVAL;
	fd = rn_openat2(dirfd, path, flags, mode, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS);
	if (fd != -ENOSYS)
		return fd;
	if (path[0] == '/')
		return -EXDEV;
	return walk_beneath(dirfd, path, flags, mode);
}

int rn_grow(void **p, size_t *cap, size_t need, size_t size)
{
	size_t n = need;
	void *v;

	if (cap) {
		if (need <= *cap)
			return 0;
		if (*cap <= SIZE_MAX / 2 && n < *cap * 2)
			n = *cap * 2;
		if (n < 8)
			n = 8;
	}
	if (size && n > SIZE_MAX / size)
		return -ENOMEM;
	v = realloc(*p, n * size > 0 ? n * size : 1);
	if (!v)
		return -ENOMEM;
	*p = v;
	if (cap)
		*cap = n;
	return 0;
}

ssize_t rn_strscpy(char *dst, size_t len, const char *src)
{
	size_t n;

	if (len == 0)
		return -E2BIG;
	if (!src)
		src = "";
	n = strnlen(src, len);
	if (n == len) {
		memcpy(dst, src, len - 1);
		dst[len - 1] = '\0';
		return -E2BIG;
	}
	memcpy(dst, src, n + 1);
	return (ssize_t)n;
}

ssize_t rn_snprintf(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (len == 0)
		return -E2BIG;
	va_start(ap, fmt);
	n = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	if (n < 0) {
		buf[0] = '\0';
		return -EINVAL;
	}
	if ((size_t)n < len)
		return n;
	if (len >= 4)
		memcpy(buf + len - 4, "...", 4);
	return -E2BIG;
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

char *rn_vasprintf(const char *fmt, va_list ap)
{
	char *s;

	if (vasprintf(&s, fmt, ap) < 0)
		return NULL; /* s is undefined after a failure */
	return s;
}

const char *rn_config_root(void)
{
	const char *root = secure_getenv("RDMANS_CONFIG_ROOT");

	return root ? root : "";
}

static int base64_value(char c)
{
	static const char digits[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const char *p = c ? strchr(digits, c) : NULL;

	return p ? (int)(p - digits) : -1;
}

int rn_base64_decode(const char *in, char **ret, size_t *ret_len)
{
	size_t len = strlen(in), n = 0;
	_cleanup_free_ char *out = malloc(len / 4 * 3 + 4);
	unsigned v = 0;
	int bits = 0;

	if (!out)
		return -ENOMEM;
	for (size_t i = 0; i < len; i++) {
		int d;

		if (in[i] == '=')
			break;
		d = base64_value(in[i]);
		if (d < 0)
			return -EBADMSG;
		v = (v << 6) | (unsigned)d;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[n++] = (char)((v >> bits) & 0xff);
		}
	}
	out[n] = '\0';
	if (ret_len)
		*ret_len = n;
	*ret = TAKE_PTR(out);
	return 0;
}
