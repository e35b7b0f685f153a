// SPDX-License-Identifier: Apache-2.0
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/nsfs.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "rdmans/cleanup.h"
#include "rdmans/netns.h"
#include "rdmans/sysfs.h"
#include "rdmans/sysfs_port.h"
#include "rdmans/util.h"

#ifndef NSFS_MAGIC
#define NSFS_MAGIC 0x6e736673
#endif

/* A netns file is on nsfs and says CLONE_NEWNET when asked its type. */
static int check_is_netns(int fd, const char *what, struct rn_error *err)
{
	struct statfs sfs;
	int type;

	if (fstatfs(fd, &sfs) < 0)
		return rn_error_errno(err, errno, "cannot inspect %s", what);
	if (sfs.f_type != NSFS_MAGIC)
		return rn_error_set(err, EMEDIUMTYPE,
				    "%s is not a network namespace (expected /proc/PID/ns/net, "
				    "/var/run/netns/NAME or a bind mount of one)",
				    what);
	type = ioctl(fd, NS_GET_NSTYPE);
	if (type >= 0 && type != CLONE_NEWNET)
		return rn_error_set(err, EMEDIUMTYPE,
				    "%s is a namespace but not a network namespace", what);
	return 0;
}

int rn_netns_open_at(int dirfd, const char *path, struct rn_error *err)
{
	_cleanup_close_ int pfd = -1, fd = -1;
	struct stat a, b;
	struct statfs sfs;
	int r;

	if (!path || !*path)
		return rn_error_set(err, EINVAL, "network namespace path is empty");
	/*
	 * O_PATH first: a FIFO, a device or a socket is looked at, never opened
	 * (opening a FIFO for reading blocks until a writer comes; a device's
	 * open may act). Only an nsfs file is then opened for real.
	 */
	pfd = openat(dirfd, path, O_PATH | O_CLOEXEC);
	if (pfd < 0) {
		if (errno == ENOENT)
			return rn_error_set(err, ENOENT, "network namespace path %s does not exist",
					    path);
		return rn_error_errno(err, errno, "cannot open network namespace %s", path);
	}
	if (fstatfs(pfd, &sfs) < 0)
		return rn_error_errno(err, errno, "cannot inspect %s", path);
	if (sfs.f_type != NSFS_MAGIC)
		return check_is_netns(pfd, path, err);
	/* O_NONBLOCK | O_NOCTTY: should it have been swapped meanwhile, still no wait */
	fd = openat(dirfd, path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return rn_error_errno(err, errno, "cannot open network namespace %s", path);
	if (fstat(pfd, &a) < 0 || fstat(fd, &b) < 0)
		return rn_error_errno(err, errno, "cannot inspect %s", path);
	if (a.st_dev != b.st_dev || a.st_ino != b.st_ino)
		return rn_error_set(err, EAGAIN,
				    "network namespace path %s changed while it was opened", path);
	r = check_is_netns(fd, path, err);
	if (r < 0)
		return r;
	return TAKE_FD(fd);
}

int rn_netns_open_path(const char *path, struct rn_error *err)
{
	return rn_netns_open_at(AT_FDCWD, path, err);
}

int rn_netns_open_pid(pid_t pid, struct rn_error *err)
{
	char path[64];
	_cleanup_close_ int fd = -1;

	if (pid <= 0)
		return rn_error_set(err, ESRCH, "invalid PID %d", (int)pid);
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return rn_error_set(err, ESRCH,
					    "no process with PID %d (has the container exited?)",
					    (int)pid);
		if (errno == EACCES || errno == EPERM)
			return rn_error_errno(err, errno,
					      "cannot open the network namespace of PID %d "
					      "(run as root)",
					      (int)pid);
		return rn_error_errno(err, errno, "cannot open %s", path);
	}
	return TAKE_FD(fd);
}

int rn_netns_open_name(const char *name, struct rn_error *err)
{
	char path[PATH_MAX];
	int r;

	r = rn_name_check("network namespace", name, NAME_MAX, err);
	if (r < 0)
		return r;
	r = rn_path(path, sizeof(path), "%s/%s", RN_NETNS_RUN_DIR, name);
	if (r < 0)
		return rn_error_set(err, r, "network namespace name %s is too long", name);
	if (access(path, F_OK) < 0 && errno == ENOENT)
		return rn_error_set(err, ENOENT,
				    "no network namespace named '%s' in %s ('ip netns list' shows "
				    "the names; use a PID or a path for others)",
				    name, RN_NETNS_RUN_DIR);
	return rn_netns_open_path(path, err);
}

int rn_netns_open_self(struct rn_error *err)
{
	return rn_netns_open_path("/proc/thread-self/ns/net", err);
}

/*
 * PID 1's netns is the host's. Where PID 1 cannot be inspected (a sandbox
 * whose init is outside our reach), the caller's netns stands in for it.
 */
static const char *host_netns_path(void)
{
	return access("/proc/1/ns/net", F_OK) == 0 || (errno != EACCES && errno != EPERM)
		       ? "/proc/1/ns/net"
		       : "/proc/self/ns/net";
}

int rn_netns_open_host(struct rn_error *err)
{
	return rn_netns_open_path(host_netns_path(), err);
}

int rn_netns_open_target(const char *target, char *ret_desc, size_t desc_len, struct rn_error *err)
{
	char desc[PATH_MAX + 32];
	pid_t pid;
	int fd;

	if (!target || !*target)
		return rn_error_set(err, EINVAL, "no target network namespace given");
	if (strcmp(target, "host") == 0) {
		snprintf(desc, sizeof(desc), "the host netns");
		fd = rn_netns_open_host(err);
	} else if (rn_parse_pid(target, &pid) == 0) {
		snprintf(desc, sizeof(desc), "the netns of PID %d", (int)pid);
		fd = rn_netns_open_pid(pid, err);
	} else if (strchr(target, '/')) {
		snprintf(desc, sizeof(desc), "netns %s", target);
		fd = rn_netns_open_path(target, err);
	} else {
		snprintf(desc, sizeof(desc), "netns '%s'", target);
		fd = rn_netns_open_name(target, err);
	}
	if (fd >= 0 && ret_desc && desc_len)
		snprintf(ret_desc, desc_len, "%s", desc);
	return fd;
}

int rn_netns_id(int nsfd, struct rn_netns_id *ret, struct rn_error *err)
{
	struct stat st;

	if (fstat(nsfd, &st) < 0)
		return rn_error_errno(err, errno, "cannot stat network namespace fd");
	ret->dev = st.st_dev;
	ret->ino = st.st_ino;
	return 0;
}

bool rn_netns_id_equal(const struct rn_netns_id *a, const struct rn_netns_id *b)
{
	return a->dev == b->dev && a->ino == b->ino;
}

int rn_netns_same(int a, int b, struct rn_error *err)
{
	struct rn_netns_id ia, ib;
	int r;

	r = rn_netns_id(a, &ia, err);
	if (r < 0)
		return r;
	r = rn_netns_id(b, &ib, err);
	if (r < 0)
		return r;
	return rn_netns_id_equal(&ia, &ib);
}

struct netns_job {
	int nsfd;
	bool own_sysfs;
	rn_netns_fn fn;
	void *arg;
	struct rn_error *err;
	int ret;
	bool entered; /* fn ran: an error is fn's, not the setup's */
};

static void *netns_thread(void *data)
{
	struct netns_job *job = data;

	/* This thread alone joins the netns (and mount ns) and ends with the work. */
	if (job->own_sysfs &&
	    (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)) {
		job->ret = rn_error_errno(job->err, errno,
					  "cannot create a private mount namespace (run as root)");
		return NULL;
	}
	if (setns(job->nsfd, CLONE_NEWNET) < 0) {
		job->ret = rn_error_errno(job->err, errno,
					  "cannot enter network namespace (needs CAP_SYS_ADMIN; "
					  "run as root)");
		return NULL;
	}
	if (job->own_sysfs) {
		(void)umount2("/sys", MNT_DETACH);
		if (mount("sysfs", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0) {
			job->ret = rn_error_errno(job->err, errno,
						  "cannot mount sysfs for the target netns");
			return NULL;
		}
	}
	job->entered = true;
	job->ret = job->fn(job->arg, job->err);
	return NULL;
}

/* nsfd is the calling thread's own netns (1), another (0); -errno when it cannot tell. */
static int netns_is_mine(int nsfd)
{
	struct stat mine, other;

	if (stat("/proc/thread-self/ns/net", &mine) < 0 || fstat(nsfd, &other) < 0)
		return -errno;
	return mine.st_dev == other.st_dev && mine.st_ino == other.st_ino;
}

static int run_job(struct netns_job *job)
{
	pthread_t thread;
	int r;

	/*
	 * Already there (a move from the home netns, say): setns would change
	 * nothing, so the work runs here, without a thread. sysfs work still
	 * gets its own thread: it needs a private mount namespace.
	 */
	if (!job->own_sysfs && netns_is_mine(job->nsfd) == 1) {
		job->entered = true;
		return job->fn(job->arg, job->err);
	}
	r = pthread_create(&thread, NULL, netns_thread, job);
	if (r != 0)
		return rn_error_errno(job->err, r,
				      "cannot start a thread to enter a network namespace");
	r = pthread_join(thread, NULL);
	if (r != 0)
		return rn_error_errno(job->err, r, "cannot join the network namespace thread");
	return job->ret;
}

int rn_netns_run(int nsfd, rn_netns_fn fn, void *arg, struct rn_error *err)
{
	struct netns_job job = { .nsfd = nsfd, .fn = fn, .arg = arg, .err = err };

	return run_job(&job);
}

int rn_netns_run_sysfs(int nsfd, rn_netns_fn fn, void *arg, struct rn_error *err)
{
	struct netns_job job = {
		.nsfd = nsfd, .own_sysfs = true, .fn = fn, .arg = arg, .err = err
	};

	return run_job(&job);
}

struct netns_set {
	struct rn_netns_entry *v;
	size_t n, cap;
};

static struct rn_netns_entry *netns_set_find(struct netns_set *set, const struct rn_netns_id *id)
{
	for (size_t i = 0; i < set->n; i++)
		if (rn_netns_id_equal(&set->v[i].id, id))
			return &set->v[i];
	return NULL;
}

static struct rn_netns_entry *netns_set_add(struct netns_set *set, const struct rn_netns_id *id)
{
	struct rn_netns_entry *e = netns_set_find(set, id);

	if (e)
		return e;
	if (RN_GROW(set->v, &set->cap, set->n + 1) < 0)
		return NULL;
	e = &set->v[set->n++];
	memset(e, 0, sizeof(*e));
	e->id = *id;
	return e;
}

static int stat_netns(const char *path, struct rn_netns_id *id)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return -errno;
	id->dev = st.st_dev;
	id->ino = st.st_ino;
	return 0;
}

int rn_netns_list(struct rn_netns_entry **ret, size_t *ret_n, struct rn_error *err)
{
	struct netns_set set = { 0 };
	_cleanup_closedir_ DIR *dir = NULL;
	struct rn_netns_id id;
	struct rn_netns_entry *e;
	struct dirent *de;
	char path[PATH_MAX];
	dev_t nsfs_dev;
	int r;

	r = stat_netns(host_netns_path(), &id);
	if (r < 0)
		return rn_error_errno(err, r, "cannot read the host netns (%s)", host_netns_path());
	nsfs_dev = id.dev; /* nsfs is one superblock: every netns file has its st_dev */
	e = netns_set_add(&set, &id);
	if (!e)
		goto oom;
	e->is_host = true;
	e->pid = strcmp(host_netns_path(), "/proc/1/ns/net") == 0 ? 1 : getpid();
	snprintf(e->path, sizeof(e->path), "%s", host_netns_path());

	dir = opendir(RN_NETNS_RUN_DIR);
	while (dir && (de = readdir(dir))) {
		if (de->d_name[0] == '.')
			continue;
		struct stat st;

		/* relative to the open directory: /var/run is a symlink, walked once */
		if (rn_path(path, sizeof(path), "%s/%s", RN_NETNS_RUN_DIR, de->d_name) < 0 ||
		    fstatat(dirfd(dir), de->d_name, &st, 0) < 0 || st.st_dev != nsfs_dev)
			continue; /* gone, or not a netns (a stray file, a FIFO) */
		id.dev = st.st_dev;
		id.ino = st.st_ino;
		e = netns_set_add(&set, &id);
		if (!e)
			goto oom;
		if (!e->name[0]) {
			snprintf(e->name, sizeof(e->name), "%s", de->d_name);
			if (!e->is_host)
				snprintf(e->path, sizeof(e->path), "%s", path);
		}
	}
	if (dir) {
		closedir(dir);
		dir = NULL;
	}

	dir = opendir("/proc");
	if (!dir) {
		r = rn_error_errno(err, errno, "cannot list /proc");
		goto fail;
	}
	while ((de = readdir(dir))) {
		pid_t pid;

		if (rn_parse_pid(de->d_name, &pid) < 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
		if (stat_netns(path, &id) < 0)
			continue; /* exited, or a kernel thread */
		e = netns_set_add(&set, &id);
		if (!e)
			goto oom;
		if (e->pid == 0 || pid < e->pid) {
			e->pid = pid;
			if (!e->name[0])
				snprintf(e->path, sizeof(e->path), "%s", path);
		}
	}
	*ret = set.v;
	*ret_n = set.n;
	return 0;
oom:
	r = rn_error_set(err, ENOMEM, "out of memory listing network namespaces");
fail:
	free(set.v);
	return r;
}

struct each_job {
	const int *fds;
	size_t n;
	rn_netns_each_fn fn;
	void *arg;
	struct rn_error *err;
	int ret;
};

static void *each_thread(void *data)
{
	struct each_job *job = data;

	/* This thread moves from netns to netns and ends with the walk. */
	for (size_t i = 0; i < job->n; i++) {
		int enter = setns(job->fds[i], CLONE_NEWNET) < 0 ? -errno : 0;
		int r = job->fn(job->arg, i, enter, job->err);

		if (r < 0) {
			job->ret = r;
			break;
		}
	}
	return NULL;
}

int rn_netns_run_each(const int *fds, size_t n, rn_netns_each_fn fn, void *arg,
		      struct rn_error *err)
{
	struct each_job job = { .fds = fds, .n = n, .fn = fn, .arg = arg, .err = err };
	pthread_t thread;
	int r;

	if (n == 0)
		return 0;
	r = pthread_create(&thread, NULL, each_thread, &job);
	if (r != 0)
		return rn_error_errno(err, r, "cannot start a thread to enter network namespaces");
	r = pthread_join(thread, NULL);
	if (r != 0)
		return rn_error_errno(err, r, "cannot join the network namespace thread");
	return job.ret;
}

#ifndef FSOPEN_CLOEXEC
#define FSOPEN_CLOEXEC 0x00000001
#endif
#ifndef FSMOUNT_CLOEXEC
#define FSMOUNT_CLOEXEC 0x00000001
#endif
#ifndef FSCONFIG_CMD_CREATE
#define FSCONFIG_CMD_CREATE 6
#endif
#ifndef MOUNT_ATTR_RDONLY
#define MOUNT_ATTR_RDONLY 0x00000001
#define MOUNT_ATTR_NOSUID 0x00000002
#define MOUNT_ATTR_NODEV 0x00000004
#define MOUNT_ATTR_NOEXEC 0x00000008
#endif

int rn_netns_sysfs_fd(struct rn_error *err)
{
#if defined(SYS_fsopen) && defined(SYS_fsconfig) && defined(SYS_fsmount)
	_cleanup_close_ int fs = -1;
	int mnt;

	/* sysfs takes the netns of the calling thread when the context is made */
	fs = (int)syscall(SYS_fsopen, "sysfs", FSOPEN_CLOEXEC);
	if (fs < 0)
		return rn_error_errno(err, errno,
				      "cannot open a sysfs context (needs Linux >= 5.2 "
				      "and CAP_SYS_ADMIN)");
	if (syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
		return rn_error_errno(err, errno, "cannot create a sysfs instance");
	mnt = (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC,
			   MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
				   MOUNT_ATTR_NOEXEC);
	if (mnt < 0)
		return rn_error_errno(err, errno, "cannot make a sysfs mount");
	return mnt;
#else
	return rn_error_set(err, ENOSYS, "this system has no fsopen()/fsmount()");
#endif
}

/* Does this process see the host's PIDs (the initial PID namespace)? */
bool rn_netns_host_pids(void)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/self/status", "re");
	char line[256];

	while (f && fgets(line, sizeof(line), f)) {
		if (strncmp(line, "NSpid:", 6) != 0)
			continue;
		/* one PID per level: one level is the initial namespace */
		return strchr(line + 7, '\t') == NULL && strchr(line + 7, ' ') == NULL;
	}
	return false;
}

enum rn_netns_state rn_netns_path_state(const char *path, uint64_t ino, char *why, size_t len)
{
	char dir[PATH_MAX];
	struct statfs sfs;
	struct stat st;
	const char *slash;
	int pid_end = 0;

	if (!path || path[0] != '/') {
		snprintf(why, len, "no namespace path recorded");
		return RN_NETNS_UNKNOWN;
	}
	if (stat(path, &st) == 0) {
		if (statfs(path, &sfs) < 0 || sfs.f_type != NSFS_MAGIC) {
			snprintf(why, len,
				 "%s exists but is not a namespace here (is the runtime's netns "
				 "directory mounted with HostToContainer propagation?)",
				 path);
			return RN_NETNS_UNKNOWN;
		}
		if (ino && (uint64_t)st.st_ino != ino) {
			snprintf(why, len, "%s is now another namespace (inode %llu, was %llu)",
				 path, (unsigned long long)st.st_ino, (unsigned long long)ino);
			return RN_NETNS_GONE;
		}
		snprintf(why, len, "%s exists", path);
		return RN_NETNS_ALIVE;
	}
	if (errno != ENOENT) {
		snprintf(why, len, "cannot check %s: %s", path, strerror(errno));
		return RN_NETNS_UNKNOWN;
	}
	if (sscanf(path, "/proc/%*[0-9]%n", &pid_end) >= 0 && pid_end > 6 && path[pid_end] == '/') {
		if (!rn_netns_host_pids()) {
			snprintf(why, len,
				 "%s is gone, but this process does not see the host's PIDs", path);
			return RN_NETNS_UNKNOWN;
		}
		snprintf(why, len, "process %.*s has exited (%s is gone)", pid_end - 6, path + 6,
			 path);
		return RN_NETNS_GONE;
	}
	slash = strrchr(path, '/');
	snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		snprintf(why, len, "%s is gone, but so is %s: not visible here?", path, dir);
		return RN_NETNS_UNKNOWN;
	}
	snprintf(why, len, "%s no longer exists", path);
	return RN_NETNS_GONE;
}

int rn_netns_path_ino(const char *path, uint64_t *ret)
{
	struct statfs sfs;
	struct stat st;

	if (!path || stat(path, &st) < 0)
		return -errno;
	if (statfs(path, &sfs) < 0 || sfs.f_type != NSFS_MAGIC)
		return -EMEDIUMTYPE;
	*ret = st.st_ino;
	return 0;
}

int rn_netns_sysfs_is_own(struct rn_error *err)
{
	const char *root = rn_sysfs_root();
	_cleanup_close_ int mnt = -1;
	struct stat a, b;

	if (strcmp(root, "/sys") != 0)
		return 1; /* a tree the caller chose */
	/* sysfs keeps one superblock per netns: a new mount of ours has /sys's st_dev iff /sys is ours */
	mnt = rn_netns_sysfs_fd(NULL);
	if (mnt < 0)
		return rn_sysfs_netdevs_agree(root, err);
	if (stat(root, &a) < 0)
		return rn_error_errno(err, errno, "cannot inspect %s", root);
	if (fstat(mnt, &b) < 0)
		return rn_error_errno(err, errno,
				      "cannot inspect a sysfs of this network namespace");
	return a.st_dev == b.st_dev;
}

int rn_netns_run_here_sysfs(rn_netns_fn fn, void *arg, struct rn_error *err)
{
	struct rn_error why = { 0 };
	_cleanup_close_ int self = -1;
	struct netns_job job = { .own_sysfs = true, .fn = fn, .arg = arg, .err = err };
	int r;

	r = rn_netns_sysfs_is_own(&why);
	if (r == 1)
		return fn(arg, err);
	self = rn_netns_open_self(err);
	if (self < 0)
		return self;
	job.nsfd = self;
	r = run_job(&job);
	if (r < 0 && !job.entered) {
		char setup[RN_ERROR_MSG_MAX];

		snprintf(setup, sizeof(setup), "%s", err->msg);
		return rn_error_set(err, EXDEV,
				    "%s shows another network namespace than this process's "
				    "(entered with 'nsenter -n' alone?), and a sysfs of this one "
				    "cannot be mounted (%s): run rdmans from the host with --netns "
				    "TARGET (a PID, a name or a path), or enter the netns with "
				    "'ip netns exec NAME', which mounts its sysfs",
				    rn_sysfs_root(), why.msg[0] ? why.msg : setup);
	}
	return r;
}
