// SPDX-License-Identifier: Apache-2.0
/* State files and locks of the rdma-netns CNI plugin (format: rdmans/cni_state.h). */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "rdmans/cni_state.h"
#include "rdmans/util.h"

#define STATE_FILE_MAX (256 * 1024)

void rn_cni_state_free(struct rn_cni_state *st)
{
	if (!st)
		return;
	for (size_t i = 0; i < st->n; i++) {
		free(st->v[i].key);
		free(st->v[i].value);
	}
	free(st->v);
	st->v = NULL;
	st->n = 0;
}

static bool key_valid(const char *key)
{
	if (!key || !*key)
		return false;
	for (const char *p = key; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '_' && *p != '.' && *p != '-')
			return false;
	return true;
}

static struct rn_kv *state_find(const struct rn_cni_state *st, const char *key)
{
	for (size_t i = 0; i < st->n; i++)
		if (strcmp(st->v[i].key, key) == 0)
			return &st->v[i];
	return NULL;
}

int rn_cni_state_set(struct rn_cni_state *st, const char *key, const char *value,
		     struct rn_error *err)
{
	struct rn_kv *kv;
	_cleanup_free_ char *copy = NULL;
	_cleanup_free_ char *kcopy = NULL;

	if (!key_valid(key))
		return rn_error_set(err, EINVAL, "invalid state key '%s'", key ? key : "");
	copy = strdup(value ? value : "");
	if (!copy)
		return rn_error_set(err, ENOMEM, "out of memory");
	kv = state_find(st, key);
	if (kv) {
		free(kv->value);
		kv->value = TAKE_PTR(copy);
		return 0;
	}
	kcopy = strdup(key);
	if (!kcopy || RN_GROW(st->v, NULL, st->n + 1) < 0)
		return rn_error_set(err, ENOMEM, "out of memory");
	st->v[st->n].key = TAKE_PTR(kcopy);
	st->v[st->n].value = TAKE_PTR(copy);
	st->n++;
	return 0;
}

int rn_cni_state_setf(struct rn_cni_state *st, struct rn_error *err, const char *key,
		      const char *fmt, ...)
{
	_cleanup_free_ char *value = RN_FORMAT_ARGS(fmt);

	if (!value)
		return rn_error_set(err, ENOMEM, "out of memory");
	return rn_cni_state_set(st, key, value, err);
}

const char *rn_cni_state_get(const struct rn_cni_state *st, const char *key)
{
	const struct rn_kv *kv = state_find(st, key);

	return kv ? kv->value : NULL;
}

const char *rn_cni_state_geti(const struct rn_cni_state *st, const char *key, size_t i,
			      const char *field)
{
	char full[256];

	if (field)
		snprintf(full, sizeof(full), "%s.%zu.%s", key, i, field);
	else
		snprintf(full, sizeof(full), "%s.%zu", key, i);
	return rn_cni_state_get(st, full);
}

int rn_cni_state_get_uint(const struct rn_cni_state *st, const char *key, unsigned long *ret)
{
	const char *v = rn_cni_state_get(st, key);
	char *end;

	if (!v)
		return -ENOENT;
	if (!isdigit((unsigned char)*v))
		return -EINVAL;
	errno = 0;
	*ret = strtoul(v, &end, 10);
	if (errno || *end)
		return -EINVAL;
	return 0;
}

/* ---- directory ---- */

static int check_dir(const char *dir, struct rn_error *err)
{
	struct stat st;

	if (lstat(dir, &st) < 0)
		return rn_error_errno(err, errno, "cannot inspect state directory %s", dir);
	if (!S_ISDIR(st.st_mode))
		return rn_error_set(err, ENOTDIR,
				    "state directory %s is not a directory (a symlink or file "
				    "there is refused; remove it)",
				    dir);
	if (geteuid() == 0 && st.st_uid != 0)
		return rn_error_set(err, EPERM,
				    "state directory %s is not owned by root; fix with 'chown "
				    "root: %s'",
				    dir, dir);
	if (st.st_mode & (S_IWGRP | S_IWOTH))
		return rn_error_set(err, EPERM,
				    "state directory %s is writable by others; fix with 'chmod "
				    "700 %s'",
				    dir, dir);
	return 0;
}

/* DIR/locks as a directory fd; a symlink there (or a symlinked DIR) is refused. */
static int open_locks_dir(const char *dir, struct rn_error *err)
{
	_cleanup_close_ int dfd = open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int fd;

	if (dfd < 0)
		return rn_error_errno(err, errno,
				      "cannot open state directory %s (a symlink there is refused)",
				      dir);
	fd = rn_open_beneath(dfd, "locks", O_PATH | O_DIRECTORY, 0);
	if (fd == -ELOOP || fd == -ENOTDIR)
		return rn_error_set(err, ELOOP,
				    "%s/locks is not a directory (a symlink there is refused: "
				    "remove it, rdma-netns makes the directory)",
				    dir);
	if (fd < 0)
		return rn_error_errno(err, -fd, "cannot open %s/locks", dir);
	return fd;
}

int rn_cni_state_dir_init(const char *dir, struct rn_error *err)
{
	char locks[PATH_MAX];
	int r;

	if (!dir[0] || strlen(dir) >= PATH_MAX)
		return rn_error_set(err, EINVAL, "invalid state directory '%s'", dir);
	r = rn_mkdir_p(dir, 0755, 0700, err);
	if (r < 0)
		return r;
	r = check_dir(dir, err);
	if (r < 0)
		return r;
	if (rn_path(locks, sizeof(locks), "%s/locks", dir) < 0)
		return rn_error_set(err, ENAMETOOLONG, "state directory %s: path too long", dir);
	if (mkdir(locks, 0700) < 0 && errno != EEXIST)
		return rn_error_errno(err, errno, "cannot create %s", locks);
	r = open_locks_dir(dir, err);
	if (r < 0)
		return r;
	close(r);
	return 0;
}

/* ---- names ---- */

/* What the state file's name can hold; the CNI spec sets no bound. */
#define CNI_NAME_MAX 1024

static uint64_t fnv1a(const char *a, const char *b, const char *c)
{
	const char *parts[] = { a, ":", b, ":", c };
	uint64_t h = 14695981039346656037ULL;

	for (size_t i = 0; i < RN_ARRAY_SIZE(parts); i++)
		for (const char *p = parts[i]; *p; p++) {
			h ^= (unsigned char)*p;
			h *= 1099511628211ULL;
		}
	return h;
}

int rn_cni_state_name(const char *network, const char *container_id, const char *ifname, char *buf,
		      size_t len, struct rn_error *err)
{
	int r;

	r = rn_cni_name_check("network name", network, CNI_NAME_MAX, err);
	if (r < 0)
		return r;
	r = rn_cni_name_check("container ID", container_id, CNI_NAME_MAX, err);
	if (r < 0)
		return r;
	r = rn_name_check("interface", ifname, 15, err);
	if (r < 0)
		return r;
	if (strchr(ifname, ':'))
		return rn_error_set(err, EINVAL, "interface name '%s' must not contain ':'",
				    ifname);
	if (strlen(network) + strlen(container_id) + strlen(ifname) + 2 <= 200) {
		if (rn_path(buf, len, "%s:%s:%s", network, container_id, ifname) < 0)
			return rn_error_set(err, ENAMETOOLONG, "state name buffer too small");
		return 0;
	}
	if (rn_path(buf, len, "%.80s:%.64s:~%016llx", network, container_id,
		    (unsigned long long)fnv1a(network, container_id, ifname)) < 0)
		return rn_error_set(err, ENAMETOOLONG, "state name buffer too small");
	return 0;
}

/* ---- files ---- */

static int state_path(const char *dir, const char *name, char *buf, size_t len,
		      struct rn_error *err)
{
	if (!name || !*name || strchr(name, '/') || name[0] == '.')
		return rn_error_set(err, EINVAL, "invalid state file name '%s'", name ? name : "");
	if (rn_path(buf, len, "%s/%s", dir, name) < 0)
		return rn_error_set(err, ENAMETOOLONG, "state file path too long: %s/%s", dir,
				    name);
	return 0;
}

static void unescape(char *s)
{
	char *w = s;

	for (char *p = s; *p; p++) {
		if (*p == '\\' && p[1]) {
			p++;
			*w++ = *p == 'n' ? '\n' : *p;
		} else {
			*w++ = *p;
		}
	}
	*w = '\0';
}

int rn_cni_state_read(const char *dir, const char *name, struct rn_cni_state *out,
		      struct rn_error *err)
{
	char path[PATH_MAX];
	_cleanup_fclose_ FILE *f = NULL;
	_cleanup_free_ char *line = NULL;
	size_t cap = 0, total = 0;
	ssize_t n;
	int r;

	memset(out, 0, sizeof(*out));
	r = state_path(dir, name, path, sizeof(path), err);
	if (r < 0)
		return r;
	{
		/* a FIFO or a device in the state dir must not hang DEL */
		int fd = rn_open_regular(AT_FDCWD, path, O_RDONLY | O_NOFOLLOW, 0, "state file",
					 err);

		if (fd == -ENOENT)
			return rn_error_set(err, ENOENT, "no state file %s", path);
		if (fd < 0)
			return fd;
		f = fdopen(fd, "re");
		if (!f) {
			r = -errno;
			close(fd);
			return rn_error_errno(err, -r, "cannot open state file %s", path);
		}
	}
	while ((n = getline(&line, &cap, f)) > 0) {
		char *eq;

		total += (size_t)n;
		if (total > STATE_FILE_MAX) {
			rn_cni_state_free(out);
			return rn_error_set(err, EFBIG, "state file %s is too large", path);
		}
		if (line[n - 1] == '\n')
			line[--n] = '\0';
		if (n == 0 || line[0] == '#')
			continue;
		eq = strchr(line, '=');
		if (!eq)
			continue; /* not ours to judge: skip */
		*eq = '\0';
		unescape(eq + 1);
		if (!key_valid(line))
			continue;
		r = rn_cni_state_set(out, line, eq + 1, err);
		if (r < 0) {
			rn_cni_state_free(out);
			return r;
		}
	}
	if (ferror(f)) {
		rn_cni_state_free(out);
		return rn_error_errno(err, EIO, "cannot read state file %s", path);
	}
	return 0;
}

static int write_escaped(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\') {
			if (fputs("\\\\", f) < 0)
				return -1;
		} else if (*s == '\n') {
			if (fputs("\\n", f) < 0)
				return -1;
		} else if (fputc(*s, f) == EOF) {
			return -1;
		}
	}
	return 0;
}

static int fsync_dir(const char *dir)
{
	_cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0 || fsync(fd) < 0)
		return -errno;
	return 0;
}

static int state_write(const char *dir, const char *name, const struct rn_cni_state *st,
		       bool durable, struct rn_error *err)
{
	_cleanup_free_ char *text = NULL;
	char path[PATH_MAX];
	size_t len = 0;
	FILE *f;
	int r;

	r = state_path(dir, name, path, sizeof(path), err);
	if (r < 0)
		return r;
	f = open_memstream(&text, &len);
	if (!f)
		return rn_error_set(err, ENOMEM, "out of memory");
	r = fputs("# rdma-netns attachment state (format: include/rdmans/cni_state.h)\n", f) < 0
		    ? -1
		    : 0;
	for (size_t i = 0; r == 0 && i < st->n; i++) {
		if (fprintf(f, "%s=", st->v[i].key) < 0 || write_escaped(f, st->v[i].value) < 0 ||
		    fputc('\n', f) == EOF)
			r = -1;
	}
	if (fclose(f) != 0 || r < 0)
		return rn_error_set(err, ENOMEM, "out of memory");
	return rn_write_atomic(path, text, len, 0600, durable, "state file", err);
}

int rn_cni_state_write(const char *dir, const char *name, const struct rn_cni_state *st,
		       struct rn_error *err)
{
	return state_write(dir, name, st, true, err);
}

int rn_cni_state_write_nosync(const char *dir, const char *name, const struct rn_cni_state *st,
			      struct rn_error *err)
{
	return state_write(dir, name, st, false, err);
}

/* ".NAME.PID.tmp" of a writer killed before its rename: its PID is gone. */
static void remove_dead_tmps(const char *dir, const char *name)
{
	_cleanup_closedir_ DIR *d = opendir(dir);
	size_t n = strlen(name);
	struct dirent *de;

	while (d && (de = readdir(d))) {
		const char *p = de->d_name;
		char *end;
		long pid;

		if (p[0] != '.' || strncmp(p + 1, name, n) != 0 || p[n + 1] != '.')
			continue;
		errno = 0;
		pid = strtol(p + n + 2, &end, 10);
		if (errno || pid <= 0 || strcmp(end, ".tmp") != 0)
			continue;
		if (kill((pid_t)pid, 0) < 0 && errno == ESRCH)
			(void)unlinkat(dirfd(d), p, 0);
	}
}

static int state_remove(const char *dir, const char *name, bool durable, struct rn_error *err)
{
	char path[PATH_MAX];
	int r;

	r = state_path(dir, name, path, sizeof(path), err);
	if (r < 0)
		return r;
	if ((rn_fault_io("state file unlink") || unlink(path) < 0) && errno != ENOENT)
		return rn_error_errno(err, errno, "cannot remove state file %s", path);
	remove_dead_tmps(dir, name);
	if (durable)
		(void)fsync_dir(dir);
	return 0;
}

int rn_cni_state_remove(const char *dir, const char *name, struct rn_error *err)
{
	return state_remove(dir, name, true, err);
}

int rn_cni_state_remove_nosync(const char *dir, const char *name, struct rn_error *err)
{
	return state_remove(dir, name, false, err);
}

bool rn_cni_state_older_boot(const struct rn_cni_state *st, const char *this_boot)
{
	const char *boot = rn_cni_state_get(st, "boot_id");

	return boot && this_boot && *this_boot && strcmp(boot, this_boot) != 0;
}

void rn_cni_state_names_free(char **names, size_t n)
{
	for (size_t i = 0; names && i < n; i++)
		free(names[i]);
	free(names);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int rn_cni_state_list(const char *dir, char ***ret_names, size_t *ret_n, struct rn_error *err)
{
	_cleanup_closedir_ DIR *d = NULL;
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;

	*ret_names = NULL;
	*ret_n = 0;
	d = opendir(dir);
	if (!d) {
		if (errno == ENOENT)
			return 0;
		return rn_error_errno(err, errno, "cannot list state directory %s", dir);
	}
	while ((de = readdir(d))) {
		char *copy;

		if (de->d_name[0] == '.' || strcmp(de->d_name, "locks") == 0)
			continue;
		if (de->d_type != DT_REG && de->d_type != DT_UNKNOWN)
			continue;
		if (RN_GROW(names, &cap, n + 1) < 0)
			goto oom;
		copy = strdup(de->d_name);
		if (!copy)
			goto oom;
		names[n++] = copy;
	}
	if (n > 1)
		qsort(names, n, sizeof(*names), cmp_str);
	*ret_names = names;
	*ret_n = n;
	return 0;
oom:
	rn_cni_state_names_free(names, n);
	return rn_error_set(err, ENOMEM, "out of memory listing %s", dir);
}

/* ---- locks ---- */

/* "KEY" as a lock file name: characters outside [A-Za-z0-9_.:-] become '_'. */
static int lock_name(const char *key, char *buf, size_t len, struct rn_error *err)
{
	size_t i;

	for (i = 0; key[i] && i < len - 6; i++) {
		char c = key[i];

		buf[i] = isalnum((unsigned char)c) || c == '_' || c == '.' || c == ':' || c == '-'
				 ? c
				 : '_';
	}
	buf[i] = '\0';
	if (i == 0 || buf[0] == '.')
		return rn_error_set(err, EINVAL, "invalid lock name '%s'", key);
	strcat(buf, ".lock");
	return 0;
}

/* Whether fd is still the file named `name` in locks (a releaser may have removed it). */
static bool still_named(int locks, const char *name, int fd)
{
	struct stat a, b;

	return fstat(fd, &a) == 0 && fstatat(locks, name, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
	       a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

int rn_cni_lock(const char *dir, const char *key, const char *what, int timeout_ms, int *ret_fd,
		struct rn_error *err)
{
	char name[128];
	_cleanup_close_ int locks = -1;
	struct timespec start, now;
	int r;

	*ret_fd = -1;
	r = lock_name(key, name, sizeof(name), err);
	if (r < 0)
		return r;
	locks = open_locks_dir(dir, err);
	if (locks < 0)
		return locks;
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		_cleanup_close_ int fd =
			rn_open_beneath(locks, name, O_RDWR | O_CREAT | O_NONBLOCK, 0600);
		long elapsed;

		if (fd < 0)
			return rn_error_errno(
				err, -fd, "cannot open lock %s/locks/%s%s", dir, name,
				fd == -ELOOP ? " (a symlink there is refused: remove it)" : "");
		for (;;) {
			if (flock(fd, LOCK_EX | LOCK_NB) == 0)
				break;
			if (errno != EWOULDBLOCK && errno != EINTR)
				return rn_error_errno(err, errno, "cannot lock %s/locks/%s", dir,
						      name);
			clock_gettime(CLOCK_MONOTONIC, &now);
			elapsed = (now.tv_sec - start.tv_sec) * 1000 +
				  (now.tv_nsec - start.tv_nsec) / 1000000;
			if (elapsed >= timeout_ms)
				return rn_error_set(
					err, EAGAIN,
					"%s is busy: another ADD or DEL has held it for "
					"%d ms; try again later",
					what, timeout_ms);
			usleep(5000);
		}
		/* the holder we waited for removed the file (rn_cni_unlock_remove): again */
		if (still_named(locks, name, fd)) {
			*ret_fd = TAKE_FD(fd);
			return 0;
		}
	}
}

void rn_cni_unlock_remove(const char *dir, const char *key, int fd)
{
	char name[128];
	_cleanup_close_ int locks = -1;

	if (fd < 0)
		return;
	if (lock_name(key, name, sizeof(name), NULL) == 0 &&
	    (locks = open_locks_dir(dir, NULL)) >= 0 && still_named(locks, name, fd))
		(void)unlinkat(locks, name, 0);
	close(fd);
}

int rn_cni_attachment_lock(const char *dir, const char *state_name, int timeout_ms, int *ret_fd,
			   struct rn_error *err)
{
	char key[300], what[300];

	snprintf(key, sizeof(key), "att:%s", state_name);
	snprintf(what, sizeof(what), "attachment %.250s", state_name);
	return rn_cni_lock(dir, key, what, timeout_ms, ret_fd, err);
}

void rn_cni_attachment_unlock(const char *dir, const char *state_name, int fd)
{
	char key[300];

	snprintf(key, sizeof(key), "att:%s", state_name);
	rn_cni_unlock_remove(dir, key, fd);
}
