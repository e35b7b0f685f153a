/* SPDX-License-Identifier: Apache-2.0 */
#ifndef RDMANS_UTIL_H
#define RDMANS_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "rdmans/error.h"

/*
 * Device and interface names come from users and configs and end up in
 * paths and netlink messages: refuse empty names, "/", "..", whitespace,
 * and names longer than max_len (bytes, without the NUL).
 */
int rn_name_check(const char *what, const char *name, size_t max_len, struct rn_error *err);

/*
 * The CNI spec's rule for network names and container IDs: letters, digits,
 * '_', '.' and '-', starting with a letter or a digit; at most max_len bytes.
 */
int rn_cni_name_check(const char *what, const char *name, size_t max_len, struct rn_error *err);

/* Strict decimal parse of a whole string; -EINVAL otherwise. */
int rn_parse_pid(const char *text, pid_t *ret);

/* Reads a small sysfs/proc file into buf, stripping the trailing newline. */
int rn_read_line(const char *path, char *buf, size_t len);

/*
 * The one openat2() wrapper: path resolved under dirfd as `resolve` says
 * (RESOLVE_BENEATH, RESOLVE_IN_ROOT, ...), O_CLOEXEC added, mode counted
 * with O_CREAT/O_TMPFILE only, retried on EAGAIN and EINTR. The fd, or
 * -errno: -ENOSYS before Linux 5.6, which the caller refuses or answers
 * with a walk as confined (never with a plain openat()).
 */
int rn_openat2(int dirfd, const char *path, int flags, mode_t mode, uint64_t resolve);

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

/*
 * Opens a file that a user, a config or an image names (config files, log
 * files, --merge files), relative to dirfd (AT_FDCWD: the cwd), without
 * ever blocking: what is not a regular file is refused with EINVAL and a
 * message naming its type ("`what` PATH is a FIFO, not a regular file"),
 * looked at with fstatat() first so a device is not even opened; the open
 * itself adds O_NONBLOCK | O_NOCTTY | O_CLOEXEC (a swap in between still
 * cannot block) and O_NONBLOCK is cleared once the file is known regular.
 * Returns the fd or a negative errno with err set.
 */
int rn_open_regular(int dirfd, const char *path, int flags, mode_t mode, const char *what,
		    struct rn_error *err);

/*
 * 0 when path (symlinks followed) / fd is a regular file; -EINVAL naming its
 * type otherwise, or -errno when it cannot be looked at. For files another
 * library opens itself (libcurl's TLS files) and fds opened elsewhere.
 */
int rn_check_regular(const char *path, const char *what, struct rn_error *err);
int rn_check_regular_fd(int fd, const char *path, const char *what, struct rn_error *err);

/*
 * Reads all of a regular file (rn_open_regular()) of at most max bytes into
 * a NUL-terminated buffer (free() it); -EFBIG beyond max. ret_len optional.
 */
int rn_read_regular(const char *path, size_t max, const char *what, char **ret, size_t *ret_len,
		    struct rn_error *err);

/*
 * Standard base64 (RFC 4648, '=' padding optional) to a NUL-terminated
 * buffer (free() it); *ret_len (optional) excludes the NUL. -EBADMSG on a
 * character outside the alphabet, -ENOMEM.
 */
int rn_base64_decode(const char *in, char **ret, size_t *ret_len);

/* Reads fd to its end, at most max bytes, NUL-terminated (free() it): 0, -EFBIG beyond max, -errno. */
int rn_read_fd(int fd, size_t max, char **ret, size_t *ret_len);

/*
 * Whether buf[0..len) holds one whole JSON object or array (leading
 * whitespace allowed; strings and escapes skipped). Readers of stdin stop
 * there, so a writer that never closes its end cannot hang them; what they
 * read is still parsed strictly.
 */
bool rn_json_complete(const char *buf, size_t len);
/*
 * The index just past the JSON value that starts at buf[i] (an object, array
 * or string: its closing character; a number or literal: the next
 * delimiter), or SIZE_MAX when buf ends first. Validates nothing: for text
 * a strict parser has already accepted, or to tell that a value is whole.
 */
size_t rn_json_value_end(const char *buf, size_t len, size_t i);

/*
 * Errno injection for tests (meson -Dfault_injection=true; a release build
 * always says false). Called before each write of the IPAM local store and
 * of the CNI state (data, fsync, rename, unlink, mkdir): with
 * RDMANS_FAULT_IO=N:ERRNO (ENOSPC, EIO, EROFS, EDQUOT or a number) in the
 * environment, the Nth call of the process sets errno to ERRNO and returns
 * true, and the caller fails as if the system call had. rn_fault_io_count()
 * says how many calls were made (-1: not a test build) and, in *ret_fired
 * (optional), what the injected one was about (NULL: none fired).
 */
bool rn_fault_io(const char *what);
long rn_fault_io_count(const char **ret_fired);

/* Milliseconds on the monotonic clock, for deadlines. */
long rn_now_ms(void);

/* Writes all of buf, retrying on EINTR and short writes; 0 or -errno. */
int rn_write_all(int fd, const char *buf, size_t len);

/*
 * mkdir -p: each missing directory of PATH, the last one with mode, those
 * above it with parent_mode. 0, or -errno with err (optional) naming the
 * directory that could not be made.
 */
int rn_mkdir_p(const char *path, mode_t parent_mode, mode_t mode, struct rn_error *err);

/*
 * Replaces PATH with LEN bytes of CONTENT so that a reader sees the old file
 * or the new one, never a part: a temporary ".NAME.PID.tmp" beside it, then
 * rename(2). durable: fsync'ed first, and the directory after. WHAT names the
 * file in messages ("state file"). 0, or -errno with err set and nothing left
 * behind.
 */
int rn_write_atomic(const char *path, const char *content, size_t len, mode_t mode, bool durable,
		    const char *what, struct rn_error *err);

/*
 * Bounded string copy (the kernel's and systemd's strscpy): copies what fits
 * of src (NULL: "") into dst of len bytes, always NUL-terminated when len > 0.
 * Returns the length copied, or -E2BIG when src was cut short (or len is 0).
 */
ssize_t rn_strscpy(char *dst, size_t len, const char *src);

/*
 * Grows the array *p of size-byte elements to hold at least need of them
 * (systemd's GREEDY_REALLOC). With cap, *cap counts what is allocated and
 * grows by doubling (at least 8); without (NULL), exactly need are
 * allocated. 0, or -ENOMEM with *p (and *cap) unchanged. RN_GROW(p, cap,
 * need) takes the element size from p.
 */
int rn_grow(void **p, size_t *cap, size_t need, size_t size);
#define RN_GROW(p, cap, need) rn_grow((void **)&(p), (cap), (need), sizeof(*(p)))

/*
 * The formatter for text that is shown (messages, values): the length
 * written, or -E2BIG when it was cut short, and then it ends in "..." so a
 * reader sees that it was (len >= 4).
 */
ssize_t rn_snprintf(char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Appends to the string in buf (a message), cutting it short silently when full. */
void rn_strappend(char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * vasprintf() as an expression: the new string (free() it), or NULL when out
 * of memory. RN_FORMAT_ARGS(fmt), in a printf-like function whose last named
 * argument is fmt, formats its own arguments so (va_start()/va_end() inside).
 */
char *rn_vasprintf(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));
#define RN_FORMAT_ARGS(fmt)                                                                        \
	({                                                                                         \
		va_list _ap_;                                                                      \
		char *_s_;                                                                         \
		va_start(_ap_, fmt);                                                               \
		_s_ = rn_vasprintf((fmt), _ap_);                                                   \
		va_end(_ap_);                                                                      \
		_s_;                                                                               \
	})

/* snprintf that reports truncation as -ENAMETOOLONG. */
int rn_path(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Where node-wide config files are looked up: $RDMANS_CONFIG_ROOT (a scratch
 * tree, for tests; ignored in setuid/setcap runs) prefixed to their absolute
 * paths, "" (the real /) when unset. */
const char *rn_config_root(void);

/*
 * The name of enum value v in table, an array of names by designated
 * initializer ([RN_X] = "x"), or fallback where it has none: one lookup
 * for every enum's names (systemd's string tables), not a switch each.
 */
static inline const char *rn_name_of(const char *const *table, size_t n, size_t v,
				     const char *fallback)
{
	return v < n && table[v] ? table[v] : fallback;
}
#define RN_NAME_OF(table, v, fallback)                                                             \
	rn_name_of(table, sizeof(table) / sizeof((table)[0]), (size_t)(v), fallback)

#endif
