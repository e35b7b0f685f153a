// SPDX-License-Identifier: Apache-2.0
/*
 * The local IPAM store: one file per address, no server.
 *
 *   DATADIR/SCOPE/POOL/ADDRESS            an address record ("10.56.0.7")
 *   DATADIR/SCOPE/attachments/ID          an attachment ('/' in ID written %2F)
 *   DATADIR/.tmp/PID.N.RANDOM             a record being written
 *   DATADIR/.locks/0..63                  flock stripes, one per attachment hash
 *   DATADIR/.quarantine/                  what a compare-and-delete could not put back
 *
 * A record is written to .tmp, fsync'ed, then renamed into place: with
 * RENAME_NOREPLACE to create an address (fails if it exists: two processes
 * never get the same address), plainly to replace an attachment. The
 * directory is fsync'ed after each rename. A crash leaves either the old
 * file, the new one, or a stray temp file (swept by GC), never half a record.
 *
 * An ADD stores the attachment listing the address it is about to take
 * before it takes it, so a crash between the two never leaves an address
 * nobody's attachment points to.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rdmans/cleanup.h"
#include "rdmans/util.h"
#include "ipam_store.h"

#define N_STRIPES 64
#define ATT_DIR "attachments"
#define TMP_DIR ".tmp"
#define LOCK_DIR ".locks"
#define QUARANTINE_DIR ".quarantine"
#define MAX_RECORD (64 * 1024)

struct local_store {
	struct rn_ipam_store base;
	char *path;
	int dirfd; /* -1 until the data directory exists */
	int lockfd[N_STRIPES];
	unsigned counter;
};

static struct local_store *to_local(struct rn_ipam_store *s)
{
	return (struct local_store *)s;
}

static void local_close(struct rn_ipam_store *s)
{
	struct local_store *l = to_local(s);

	for (int i = 0; i < N_STRIPES; i++)
		if (l->lockfd[i] >= 0)
			(void)close(l->lockfd[i]);
	if (l->dirfd >= 0)
		(void)close(l->dirfd);
	free(l->path);
	free(l);
}

/* Opens the data directory, creating it when `create`. */
static int data_dir(struct local_store *l, bool create, struct rn_error *err)
{
	int r;

	if (l->dirfd >= 0)
		return 0;
	l->dirfd = open(l->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (l->dirfd >= 0)
		return 0;
	if (errno != ENOENT || !create) {
		int saved = errno;

		rn_error_errno(err, saved, "IPAM data directory %s", l->path);
		if (saved != ENOENT)
			rn_error_wrap(err, "set ipam.dataDir to a writable directory");
		return -saved;
	}
	r = rn_mkdir_p(l->path, 0750, 0750, NULL);
	if (r < 0)
		return rn_error_errno(err, -r,
				      "cannot create IPAM data directory %s (set ipam.dataDir to a "
				      "writable directory)",
				      l->path);
	l->dirfd = open(l->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (l->dirfd < 0)
		return rn_error_errno(err, errno, "IPAM data directory %s", l->path);
	return 0;
}

static void parent_of(const char *rel, char *buf, size_t len)
{
	const char *slash = strrchr(rel, '/');
	size_t n = slash ? (size_t)(slash - rel) : 0;

	if (n >= len)
		n = len - 1;
	memcpy(buf, rel, n);
	buf[n] = '\0';
	if (n == 0)
		snprintf(buf, len, ".");
}

/* A symlink on the way to rel: refused, the store reads and writes real directories only. */
static int symlink_refused(struct local_store *l, const char *rel, struct rn_error *err)
{
	return rn_error_set(
		err, ELOOP,
		"IPAM data directory %s: %s is, or lies under, a symbolic link; refused "
		"(records live in real directories only: remove the link, "
		"rdma-netns-ipam makes the directory)",
		l->path, rel);
}

/* The parent directory of rel, reached without a symlink on the way. */
static int check_parent(struct local_store *l, const char *rel, struct rn_error *err)
{
	char parent[PATH_MAX];
	int fd;

	parent_of(rel, parent, sizeof(parent));
	fd = rn_open_beneath(l->dirfd, parent, O_PATH | O_DIRECTORY, 0);
	if (fd == -ELOOP)
		return symlink_refused(l, parent, err);
	if (fd < 0)
		return fd == -ENOENT
			       ? -ENOENT
			       : rn_error_errno(err, -fd, "cannot open %s/%s", l->path, parent);
	close(fd);
	return 0;
}

/* mkdir -p of a path relative to the data directory; no component may be a symlink. */
static int ensure_dir(struct local_store *l, const char *rel, struct rn_error *err)
{
	char buf[PATH_MAX];
	int r;

	r = data_dir(l, true, err);
	if (r < 0)
		return r;
	if (rn_path(buf, sizeof(buf), "%s", rel) < 0)
		return rn_error_set(err, ENAMETOOLONG, "path %s/%s is too long", l->path, rel);
	for (char *p = buf;; p++) {
		bool last = *p == '\0';
		int fd;

		if (!last && *p != '/')
			continue;
		*p = '\0';
		/* the parents were checked on the way here: mkdirat makes no link */
		if ((rn_fault_io("IPAM store mkdir") || mkdirat(l->dirfd, buf, 0750) < 0) &&
		    errno != EEXIST)
			return rn_error_errno(err, errno, "cannot create %s/%s", l->path, buf);
		fd = rn_open_beneath(l->dirfd, buf, O_PATH | O_DIRECTORY, 0);
		if (fd == -ELOOP || fd == -ENOTDIR)
			return symlink_refused(l, buf, err);
		if (fd < 0)
			return rn_error_errno(err, -fd, "cannot open %s/%s", l->path, buf);
		close(fd);
		if (last)
			return 0;
		*p = '/';
	}
}

static int fsync_dir(struct local_store *l, const char *rel, struct rn_error *err)
{
	_cleanup_close_ int fd = rn_open_beneath(l->dirfd, rel, O_RDONLY | O_DIRECTORY, 0);

	if (fd == -ELOOP)
		return symlink_refused(l, rel, err);
	if (fd < 0)
		return rn_error_errno(err, -fd, "cannot sync directory %s/%s", l->path, rel);
	if (rn_fault_io("IPAM store directory fsync") || fsync(fd) < 0)
		return rn_error_errno(err, errno, "cannot sync directory %s/%s", l->path, rel);
	return 0;
}

/* File name for an attachment id: '%' and '/' percent-encoded. */
static int att_path(const char *scope, const char *id, char *buf, size_t len)
{
	size_t n;

	if (rn_path(buf, len, "%s/" ATT_DIR "/", scope) < 0)
		return -ENAMETOOLONG;
	n = strlen(buf);
	for (const char *p = id; *p; p++) {
		if (n + 4 >= len)
			return -ENAMETOOLONG;
		if (*p == '/' || *p == '%') {
			snprintf(buf + n, len - n, "%%%02X", (unsigned char)*p);
			n += 3;
		} else {
			buf[n++] = *p;
		}
	}
	buf[n] = '\0';
	return 0;
}

static int addr_path(const char *scope, const char *pool, int family, rn_u128 v, char *buf,
		     size_t len)
{
	char ip[RN_IP_STRLEN];

	return rn_path(buf, len, "%s/%s/%s", scope, pool, rn_ip_format(family, v, ip, sizeof(ip)));
}

/* What sits at rel when it is not a regular file, for messages. */
static const char *kind_of(mode_t mode)
{
	return S_ISLNK(mode)	? "a symbolic link"
	       : S_ISDIR(mode)	? "a directory"
	       : S_ISFIFO(mode) ? "a FIFO"
	       : S_ISSOCK(mode) ? "a socket"
				: "a device node";
}

/*
 * Reads the record at rel; *ret_ino (optional) gets its inode number.
 * -ENOENT when absent; -EBADMSG (err says what it is, *ret_ino set) when
 * rel is no regular file: a symlink is never followed and a FIFO never
 * waited on.
 */
static int read_text(struct local_store *l, const char *rel, char **ret, uint64_t *ret_ino,
		     struct rn_error *err)
{
	_cleanup_free_ char *buf = NULL;
	_cleanup_close_ int fd = -1;
	struct stat st;
	size_t len = 0;

	if (l->dirfd < 0 && data_dir(l, false, NULL) < 0)
		return -ENOENT;
	/*
	 * O_NONBLOCK: a FIFO planted as a record reads as damaged, never blocks.
	 * No symlink on the way (a linked pool or attachments directory is
	 * refused); the record itself a symlink is a damaged record.
	 */
	fd = rn_open_beneath(l->dirfd, rel, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0);
	if (fd < 0) {
		int r = check_parent(l, rel, err);

		if (r < 0)
			return r;
		errno = -fd;
	}
	if (fd < 0 && errno != ENOENT && fstatat(l->dirfd, rel, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    !S_ISREG(st.st_mode)) {
		if (ret_ino)
			*ret_ino = st.st_ino;
		return rn_error_set(err, EBADMSG, "%s/%s is %s, not a record", l->path, rel,
				    kind_of(st.st_mode));
	}
	if (fd < 0) {
		if (errno == ENOENT)
			return -ENOENT;
		return rn_error_errno(err, errno, "cannot open %s/%s", l->path, rel);
	}
	if (fstat(fd, &st) < 0)
		return rn_error_errno(err, errno, "cannot stat %s/%s", l->path, rel);
	if (ret_ino)
		*ret_ino = st.st_ino;
	if (!S_ISREG(st.st_mode))
		return rn_error_set(err, EBADMSG, "%s/%s is %s, not a record", l->path, rel,
				    kind_of(st.st_mode));
	buf = malloc(MAX_RECORD + 1);
	if (!buf)
		return rn_error_set(err, ENOMEM, "out of memory");
	while (len < MAX_RECORD) {
		ssize_t n = read(fd, buf + len, MAX_RECORD - len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return rn_error_errno(err, errno, "cannot read %s/%s", l->path, rel);
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	*ret = TAKE_PTR(buf);
	return 0;
}

/* Writes text to a new fsync'ed temp file; its name (relative) goes to tmp. */
static int write_tmp(struct local_store *l, const char *text, char *tmp, size_t len,
		     struct rn_error *err)
{
	_cleanup_close_ int fd = -1;
	size_t off = 0, total = strlen(text);
	unsigned rnd = 0;
	int r;

	r = ensure_dir(l, TMP_DIR, err);
	if (r < 0)
		return r;
	(void)!getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK);
	if (rn_path(tmp, len, TMP_DIR "/%d.%u.%08x", (int)getpid(), l->counter++, rnd) < 0)
		return rn_error_set(err, ENAMETOOLONG, "temp path too long");
	fd = rn_open_beneath(l->dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL, 0640);
	if (fd == -ELOOP)
		return symlink_refused(l, tmp, err);
	if (fd == -EEXIST) /* never -EEXIST: a claim reads that as "address taken" */
		return rn_error_set(err, EIO, "cannot create %s/%s: a file of that name exists",
				    l->path, tmp);
	if (fd < 0)
		return rn_error_errno(err, -fd, "cannot create %s/%s", l->path, tmp);
	while (off < total) {
		ssize_t n =
			rn_fault_io("IPAM store write") ? -1 : write(fd, text + off, total - off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			r = rn_error_errno(err, errno, "cannot write %s/%s", l->path, tmp);
			(void)unlinkat(l->dirfd, tmp, 0);
			return r;
		}
		off += (size_t)n;
	}
	if (rn_fault_io("IPAM store fsync") || fsync(fd) < 0) {
		r = rn_error_errno(err, errno, "cannot sync %s/%s", l->path, tmp);
		(void)unlinkat(l->dirfd, tmp, 0);
		return r;
	}
	return 0;
}

/*
 * Puts text at rel: replacing what is there, or (noreplace) only if nothing
 * is (-EEXIST otherwise). The file is fsync'ed before the rename (no half
 * record after a power loss); the parent directory is created, and fsync'ed
 * by the caller (sync_parents()), once for all the renames of an operation.
 */
static int put_file(struct local_store *l, const char *rel, const char *text, bool noreplace,
		    struct rn_error *err)
{
	char tmp[PATH_MAX], parent[PATH_MAX];
	int r;

	parent_of(rel, parent, sizeof(parent));
	r = ensure_dir(l, parent, err);
	if (r < 0)
		return r;
	r = write_tmp(l, text, tmp, sizeof(tmp), err);
	if (r < 0)
		return r;
	if (rn_fault_io("IPAM store rename")) {
		r = -1;
	} else if (noreplace) {
		r = renameat2(l->dirfd, tmp, l->dirfd, rel, RENAME_NOREPLACE);
		if (r < 0 && (errno == EINVAL || errno == ENOSYS)) {
			/* a filesystem without RENAME_NOREPLACE: link() also refuses to replace */
			r = linkat(l->dirfd, tmp, l->dirfd, rel, 0);
			if (r == 0 || errno == EEXIST) {
				int saved = errno;

				(void)unlinkat(l->dirfd, tmp, 0);
				errno = saved;
			}
		}
	} else {
		r = renameat(l->dirfd, tmp, l->dirfd, rel);
	}
	if (r < 0) {
		int saved = errno;

		(void)unlinkat(l->dirfd, tmp, 0);
		if (saved == EEXIST)
			return -EEXIST;
		return rn_error_errno(err, saved, "cannot create %s/%s", l->path, rel);
	}
	return 0;
}

/* The directories an operation renamed or unlinked in, fsync'ed once at its end. */
struct parents {
	char dir[2 * RN_IPAM_MAX_RANGES + 2][PATH_MAX / 8];
	size_t n;
};

static void note_parent(struct parents *p, const char *rel)
{
	char dir[PATH_MAX];

	parent_of(rel, dir, sizeof(dir));
	for (size_t i = 0; i < p->n; i++)
		if (strcmp(p->dir[i], dir) == 0)
			return;
	if (p->n < RN_ARRAY_SIZE(p->dir) && strlen(dir) < sizeof(p->dir[0]))
		snprintf(p->dir[p->n++], sizeof(p->dir[0]), "%s", dir);
}

static int sync_parents(struct local_store *l, const struct parents *p, struct rn_error *err)
{
	for (size_t i = 0; i < p->n; i++) {
		int r = fsync_dir(l, p->dir[i], err);

		if (r < 0 && r != -ENOENT)
			return r;
	}
	return 0;
}

static int remove_file(struct local_store *l, const char *rel, struct rn_error *err)
{
	int r = check_parent(l, rel, err);

	if (r < 0)
		return r == -ENOENT ? 0 : r;
	if ((rn_fault_io("IPAM store unlink") || unlinkat(l->dirfd, rel, 0) < 0) && errno != ENOENT)
		return rn_error_errno(err, errno, "cannot remove %s/%s", l->path, rel);
	return 0;
}

static int local_ping(struct rn_ipam_store *s, struct rn_error *err)
{
	struct local_store *l = to_local(s);
	int r = data_dir(l, true, err);

	if (r < 0)
		return r;
	if (faccessat(l->dirfd, ".", W_OK, AT_EACCESS) < 0)
		return rn_error_errno(err, errno, "IPAM data directory %s is not writable",
				      l->path);
	return 0;
}

static int local_lock(struct rn_ipam_store *s, const char *scope, const char *id, int *ret_token,
		      struct rn_error *err)
{
	struct local_store *l = to_local(s);
	uint32_t h = 2166136261u;
	char rel[64];
	int stripe, r;

	for (const char *p = scope; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	for (const char *p = id; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	stripe = (int)(h % N_STRIPES);
	if (l->lockfd[stripe] < 0) {
		r = ensure_dir(l, LOCK_DIR, err);
		if (r < 0)
			return r;
		snprintf(rel, sizeof(rel), LOCK_DIR "/%d", stripe);
		int fd = rn_open_beneath(l->dirfd, rel, O_RDWR | O_CREAT, 0600);

		if (fd == -ELOOP)
			return symlink_refused(l, rel, err);
		if (fd < 0)
			return rn_error_errno(err, -fd, "cannot open lock %s/%s", l->path, rel);
		l->lockfd[stripe] = fd;
	}
	while (flock(l->lockfd[stripe], LOCK_EX) < 0) {
		if (errno != EINTR)
			return rn_error_errno(err, errno, "cannot lock %s/" LOCK_DIR "/%d", l->path,
					      stripe);
	}
	*ret_token = stripe;
	return 0;
}

static void local_unlock(struct rn_ipam_store *s, int token)
{
	struct local_store *l = to_local(s);

	if (token >= 0 && token < N_STRIPES && l->lockfd[token] >= 0)
		(void)flock(l->lockfd[token], LOCK_UN);
}

static int local_att_get(struct rn_ipam_store *s, const char *scope, const char *id,
			 char **ret_text, uint64_t *ret_version, struct rn_error *err)
{
	char rel[PATH_MAX];
	int r;

	if (att_path(scope, id, rel, sizeof(rel)) < 0)
		return rn_error_set(err, ENAMETOOLONG, "attachment id '%s' is too long", id);
	r = read_text(to_local(s), rel, ret_text, NULL, err);
	if ((r == 0 || r == -EBADMSG) && ret_version)
		*ret_version = 1;
	return r;
}

static int local_addr_get(struct rn_ipam_store *s, const char *scope, const char *pool,
			  const struct rn_ip *ip, char **ret_text, uint64_t *ret_version,
			  struct rn_error *err)
{
	char rel[PATH_MAX];
	int r;

	uint64_t ino = 0;

	if (addr_path(scope, pool, ip->family, ip->v, rel, sizeof(rel)) < 0)
		return rn_error_set(err, ENAMETOOLONG, "pool path too long");
	r = read_text(to_local(s), rel, ret_text, &ino, err);
	if ((r == 0 || r == -EBADMSG) && ret_version)
		*ret_version = ino ? ino : 1;
	return r;
}

/*
 * Compare-and-delete without a server: the entry is moved aside (nobody
 * else can reach it there), checked to be the inode that was judged, and
 * removed; anything else goes back where it was. While it is aside the
 * address looks free: only a record that was replaced in that instant, and
 * then claimed by an ADD, cannot go back; it is kept in .quarantine and
 * the error names it.
 */
static int local_addr_drop(struct rn_ipam_store *s, const char *scope, const char *pool,
			   const struct rn_ip *ip, uint64_t version, struct rn_error *err)
{
	struct local_store *l = to_local(s);
	char rel[PATH_MAX], aside[PATH_MAX], parent[PATH_MAX];
	struct stat st;
	int r;

	if (addr_path(scope, pool, ip->family, ip->v, rel, sizeof(rel)) < 0)
		return rn_error_set(err, ENAMETOOLONG, "pool path too long");
	r = ensure_dir(l, QUARANTINE_DIR, err);
	if (r == 0)
		r = check_parent(l, rel, err);
	if (r < 0)
		return r;
	if (rn_path(aside, sizeof(aside), QUARANTINE_DIR "/%d.%u.%s", (int)getpid(), l->counter++,
		    strrchr(rel, '/') + 1) < 0)
		return rn_error_set(err, ENAMETOOLONG, "path too long");
	if (renameat2(l->dirfd, rel, l->dirfd, aside, RENAME_NOREPLACE) < 0) {
		if (errno == ENOENT)
			return -ENOENT;
		return rn_error_errno(err, errno, "cannot move %s/%s aside", l->path, rel);
	}
	if (fstatat(l->dirfd, aside, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_ino == version) {
		/* a directory someone made at the address: only an empty one goes */
		r = unlinkat(l->dirfd, aside, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0);
		if (r < 0) {
			int saved = errno;

			(void)renameat2(l->dirfd, aside, l->dirfd, rel, RENAME_NOREPLACE);
			return rn_error_errno(err, saved, "cannot remove %s/%s", l->path, rel);
		}
		parent_of(rel, parent, sizeof(parent));
		return fsync_dir(l, parent, err);
	}
	if (renameat2(l->dirfd, aside, l->dirfd, rel, RENAME_NOREPLACE) < 0)
		return rn_error_errno(err, errno,
				      "%s/%s changed while it was being removed and the address "
				      "was taken meanwhile; what was there is kept in %s/%s",
				      l->path, rel, l->path, aside);
	return -ESTALE;
}

static int local_probe(struct rn_ipam_store *s, const char *scope, const char *pool, int family,
		       rn_u128 first, rn_u128 last, rn_u128 **ret_taken, size_t *ret_n,
		       struct rn_error *err)
{
	struct local_store *l = to_local(s);
	_cleanup_free_ rn_u128 *taken = NULL;
	size_t n = 0, cap = 0;
	char rel[PATH_MAX];

	*ret_taken = NULL;
	*ret_n = 0;
	if (l->dirfd < 0 && data_dir(l, false, NULL) < 0)
		return 0;
	for (rn_u128 a = first;; a++) {
		if (addr_path(scope, pool, family, a, rel, sizeof(rel)) < 0)
			return rn_error_set(err, ENAMETOOLONG, "pool path too long");
		if (faccessat(l->dirfd, rel, F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
			if (RN_GROW(taken, &cap, n + 1) < 0)
				return rn_error_set(err, ENOMEM, "out of memory");
			taken[n++] = a;
		} else if (errno != ENOENT) {
			return rn_error_errno(err, errno, "cannot check %s/%s", l->path, rel);
		}
		if (a == last)
			break;
	}
	*ret_taken = TAKE_PTR(taken);
	*ret_n = n;
	return 0;
}

static int local_claim(struct rn_ipam_store *s, const char *scope, const char *pool,
		       const struct rn_ip *ip, const char *rec_text, const char *id,
		       const char *att_text, uint64_t *att_version, struct rn_error *err)
{
	struct local_store *l = to_local(s);
	char rel[PATH_MAX];
	int r;

	struct parents dirs = { .n = 0 };

	/*
	 * The attachment first: it must point at the address before the address
	 * exists (a writer killed between the two renames leaves an attachment
	 * listing an address it does not hold, which is checked and dropped,
	 * never an address nobody's attachment lists). The directories are
	 * fsync'ed after both renames: a power loss in between can at worst
	 * leave an address record without its attachment, which GC releases.
	 */
	if (att_path(scope, id, rel, sizeof(rel)) < 0)
		return rn_error_set(err, ENAMETOOLONG, "attachment id '%s' is too long", id);
	r = put_file(l, rel, att_text, false, err);
	if (r < 0)
		return r;
	note_parent(&dirs, rel);
	*att_version = 1;
	if (addr_path(scope, pool, ip->family, ip->v, rel, sizeof(rel)) < 0)
		return rn_error_set(err, ENAMETOOLONG, "pool path too long");
	r = put_file(l, rel, rec_text, true, err);
	if (r < 0)
		return r;
	note_parent(&dirs, rel);
	r = sync_parents(l, &dirs, err);
	if (r < 0) {
		/* a failed claim leaves no address: the caller's undo sees to the attachment */
		struct rn_error undo = { 0 };

		if (remove_file(l, rel, &undo) < 0 && err)
			rn_strappend(err->msg, sizeof(err->msg),
				     "; undo failed, the record stays: %s", undo.msg);
	}
	return r;
}

static int local_commit(struct rn_ipam_store *s, const char *scope, const struct rn_ipam_ref *refs,
			size_t n, const char *id, uint64_t att_version, enum rn_ipam_att_op att_op,
			const char *att_text, struct rn_error *err)
{
	struct local_store *l = to_local(s);
	struct parents dirs = { .n = 0 };
	char rel[PATH_MAX];
	int r;

	r = data_dir(l, true, err);
	if (r < 0)
		return r;
	/* address records first, the attachment last: a crash in between leaves
	 * the attachment, and DEL again finishes the job */
	for (size_t i = 0; i < n; i++) {
		if (addr_path(scope, refs[i].pool, refs[i].ip.family, refs[i].ip.v, rel,
			      sizeof(rel)) < 0)
			return rn_error_set(err, ENAMETOOLONG, "pool path too long");
		if (refs[i].text)
			r = put_file(l, rel, refs[i].text, false, err);
		else
			r = remove_file(l, rel, err);
		if (r < 0)
			return r;
		note_parent(&dirs, rel);
	}
	if (id && att_op != RN_IPAM_ATT_KEEP) {
		if (att_path(scope, id, rel, sizeof(rel)) < 0)
			return rn_error_set(err, ENAMETOOLONG, "attachment id '%s' is too long",
					    id);
		if (att_op == RN_IPAM_ATT_PUT)
			r = put_file(l, rel, att_text, false, err);
		else
			r = remove_file(l, rel, err);
		if (r < 0)
			return r;
		note_parent(&dirs, rel);
	}
	return sync_parents(l, &dirs, err);
}

static bool hidden(const char *name)
{
	return name[0] == '.';
}

/* An attachment id from its file name ('%XX' decoded); false when malformed. */
static bool att_id_of(const char *name, char *buf, size_t len)
{
	size_t n = 0;

	for (const char *p = name; *p; p++) {
		unsigned v;

		if (n + 1 >= len)
			return false;
		if (*p == '%') {
			if (sscanf(p + 1, "%2x", &v) != 1 || !p[1] || !p[2])
				return false;
			buf[n++] = (char)v;
			p += 2;
		} else {
			buf[n++] = *p;
		}
	}
	buf[n] = '\0';
	return true;
}

/*
 * Opens rel (below the data directory) to be read: 0 with *ret NULL when it
 * is not there (or, with notdir_empty, is no directory: nothing in it).
 */
static int open_dir(struct local_store *l, const char *rel, bool notdir_empty, DIR **ret,
		    struct rn_error *err)
{
	int fd;

	*ret = NULL;
	fd = rn_open_beneath(l->dirfd, rel, O_RDONLY | O_DIRECTORY, 0);
	if (fd == -ELOOP)
		return symlink_refused(l, rel, err);
	if (fd == -ENOENT || (fd == -ENOTDIR && notdir_empty))
		return 0;
	if (fd < 0)
		return rn_error_errno(err, -fd, "cannot open %s/%s", l->path, rel);
	*ret = fdopendir(fd);
	if (!*ret) {
		(void)close(fd);
		return rn_error_errno(err, errno, "cannot read %s/%s", l->path, rel);
	}
	return 0;
}

/*
 * Calls fn(l, name, ctx) for each visible entry of rel (relative to the data
 * directory), only its subdirectories when dirs_only. A rel that is missing
 * (or, when not dirs_only, no directory) has no entries.
 */
static int each_entry(struct local_store *l, const char *rel, bool dirs_only,
		      int (*fn)(struct local_store *l, const char *name, void *ctx), void *ctx,
		      struct rn_error *err)
{
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *e;
	int r;

	r = open_dir(l, rel, !dirs_only, &d, err);
	if (r < 0 || !d)
		return r;
	while ((e = readdir(d))) {
		if (hidden(e->d_name) ||
		    (dirs_only && e->d_type != DT_DIR && e->d_type != DT_UNKNOWN))
			continue;
		r = fn(l, e->d_name, ctx);
		if (r < 0)
			return r;
	}
	return 0;
}

struct list_ctx {
	enum rn_ipam_kind kind;
	rn_ipam_list_fn fn;
	void *ctx;
	struct rn_error *err;
	const char *scope;
	const char *rel; /* the directory listed */
	const char *pool; /* of address records; NULL: attachments */
};

/*
 * Passes one entry of c->rel on to c->fn: address records when c->pool is
 * set, attachments otherwise. An entry that is no regular file is passed on
 * without text: it still takes its name.
 */
static int list_entry(struct local_store *l, const char *name, void *ctx)
{
	struct list_ctx *c = ctx;
	_cleanup_free_ char *text = NULL;
	char path[PATH_MAX], id[RN_IPAM_ID_MAX];
	struct rn_error rerr = { 0 };
	struct rn_ipam_item it = { c->scope, c->pool, name, NULL, NULL, 0 };
	int r;

	if (rn_path(path, sizeof(path), "%s/%s", c->rel, name) < 0)
		return 0;
	if (!c->pool) {
		if (att_id_of(name, id, sizeof(id)))
			it.key = id;
		else
			it.why = "its file name is not an attachment id";
	}
	r = read_text(l, path, &text, &it.version, &rerr);
	if (r == -ENOENT)
		return 0; /* released meanwhile */
	if (r == -EBADMSG)
		it.why = rerr.msg;
	else if (r < 0)
		return rn_error_set(c->err, -r, "%s", rerr.msg);
	it.text = text;
	return c->fn(c->ctx, &it);
}

static int list_pool(struct local_store *l, const char *pool, void *ctx)
{
	struct list_ctx *c = ctx;
	char rel[PATH_MAX];

	if (strcmp(pool, ATT_DIR) == 0)
		return 0;
	if (rn_path(rel, sizeof(rel), "%s/%s", c->scope, pool) < 0)
		return 0;
	c->rel = rel;
	c->pool = pool;
	return each_entry(l, rel, false, list_entry, c, c->err);
}

static int list_scope(struct local_store *l, const char *scope, void *ctx)
{
	struct list_ctx *c = ctx;
	char rel[PATH_MAX];

	c->scope = scope;
	if (c->kind == RN_IPAM_KIND_ATTACHMENT) {
		if (rn_path(rel, sizeof(rel), "%s/" ATT_DIR, scope) < 0)
			return 0;
		c->rel = rel;
		c->pool = NULL;
		return each_entry(l, rel, false, list_entry, c, c->err);
	}
	return each_entry(l, scope, true, list_pool, c, c->err);
}

static int local_list(struct rn_ipam_store *s, const char *scope, enum rn_ipam_kind kind,
		      rn_ipam_list_fn fn, void *ctx, struct rn_error *err)
{
	struct local_store *l = to_local(s);
	struct list_ctx c = { kind, fn, ctx, err, NULL, NULL, NULL };

	if (l->dirfd < 0 && data_dir(l, false, NULL) < 0)
		return 0; /* no data directory: nothing stored yet */
	if (scope)
		return list_scope(l, scope, &c);
	return each_entry(l, ".", true, list_scope, &c, err);
}

static int local_sweep(struct rn_ipam_store *s, bool dry_run, size_t *ret_n, struct rn_error *err)
{
	struct local_store *l = to_local(s);
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *e;
	int r;

	*ret_n = 0;
	if (l->dirfd < 0 && data_dir(l, false, NULL) < 0)
		return 0;
	r = open_dir(l, TMP_DIR, false, &d, err);
	if (r < 0 || !d)
		return r;
	while ((e = readdir(d))) {
		char pidtext[16];
		const char *dot;
		pid_t pid;

		if (hidden(e->d_name))
			continue;
		dot = strchr(e->d_name, '.');
		if (!dot || (size_t)(dot - e->d_name) >= sizeof(pidtext))
			continue;
		memcpy(pidtext, e->d_name, (size_t)(dot - e->d_name));
		pidtext[dot - e->d_name] = '\0';
		/* a writer that is still alive owns its file */
		if (rn_parse_pid(pidtext, &pid) == 0 && (kill(pid, 0) == 0 || errno != ESRCH))
			continue;
		if (!dry_run && unlinkat(dirfd(d), e->d_name, 0) < 0 && errno != ENOENT)
			return rn_error_errno(err, errno, "cannot remove %s/" TMP_DIR "/%s",
					      l->path, e->d_name);
		(*ret_n)++;
	}
	return 0;
}

static const struct rn_ipam_store_ops local_ops = {
	.close = local_close,
	.ping = local_ping,
	.lock = local_lock,
	.unlock = local_unlock,
	.att_get = local_att_get,
	.addr_get = local_addr_get,
	.addr_drop = local_addr_drop,
	.probe = local_probe,
	.claim = local_claim,
	.commit = local_commit,
	.list = local_list,
	.sweep = local_sweep,
};

int rn_ipam_store_local_open(const struct rn_ipam_config *c, struct rn_ipam_store **ret,
			     struct rn_error *err)
{
	struct local_store *l;
	const char *path = c->data_dir && *c->data_dir ? c->data_dir : RN_IPAM_DEFAULT_DATA_DIR;

	if (path[0] != '/')
		return rn_error_set(err, EINVAL, "dataDir '%s' must be an absolute path", path);
	l = calloc(1, sizeof(*l));
	if (!l)
		return rn_error_set(err, ENOMEM, "out of memory");
	l->base.ops = &local_ops;
	l->base.window = 1; /* a probe is one faccessat(): no point reading ahead */
	l->dirfd = -1;
	for (int i = 0; i < N_STRIPES; i++)
		l->lockfd[i] = -1;
	l->path = strdup(path);
	if (!l->path) {
		free(l);
		return rn_error_set(err, ENOMEM, "out of memory");
	}
	*ret = &l->base;
	return 0;
}
