/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Network namespaces: open one by PID, name (/var/run/netns) or path, tell
 * two apart, and run work inside another one on a dedicated thread so the
 * calling thread never changes namespace.
 */
#ifndef RDMANS_NETNS_H
#define RDMANS_NETNS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "rdmans/error.h"

#define RN_NETNS_RUN_DIR "/var/run/netns"

/* Each returns an O_CLOEXEC fd of the netns, or a negative errno with err set. */
int rn_netns_open_pid(pid_t pid, struct rn_error *err);
int rn_netns_open_name(const char *name, struct rn_error *err);
int rn_netns_open_path(const char *path, struct rn_error *err);
/*
 * Path relative to dirfd (AT_FDCWD: the cwd). Never blocks and never opens
 * what is not a namespace: the path is inspected through O_PATH first, so a
 * FIFO, a device or a socket is refused (EMEDIUMTYPE) without being opened.
 */
int rn_netns_open_at(int dirfd, const char *path, struct rn_error *err);
int rn_netns_open_self(struct rn_error *err);
/* The initial netns, as PID 1 holds it. */
int rn_netns_open_host(struct rn_error *err);

/*
 * A target as users write it: "host" (PID 1's netns), a PID ("1234"), a path
 * ("/proc/1234/ns/net", "/var/run/netns/pod1": anything with a '/'), or a
 * name under /var/run/netns. *ret_desc (optional) gets a description for messages.
 */
int rn_netns_open_target(const char *target, char *ret_desc, size_t desc_len, struct rn_error *err);

struct rn_netns_id {
	dev_t dev;
	ino_t ino;
};

int rn_netns_id(int nsfd, struct rn_netns_id *ret, struct rn_error *err);
bool rn_netns_id_equal(const struct rn_netns_id *a, const struct rn_netns_id *b);
/* 1 when both fds refer to the same netns, 0 when not, negative errno on error. */
int rn_netns_same(int a, int b, struct rn_error *err);

typedef int (*rn_netns_fn)(void *arg, struct rn_error *err);

/*
 * Runs fn(arg, err) on a new thread that has joined the netns of nsfd; the
 * thread ends with fn, so the caller's thread never leaves its namespace.
 * Sockets fn opens belong to that netns. Returns what fn returned. When
 * nsfd is the calling thread's own netns, fn runs on the calling thread.
 */
int rn_netns_run(int nsfd, rn_netns_fn fn, void *arg, struct rn_error *err);

/*
 * Like rn_netns_run(), and the thread also gets a private mount namespace
 * with a fresh sysfs on /sys: net-tagged sysfs classes (net, infiniband in
 * exclusive mode) show the devices of the netns that mounted them.
 */
int rn_netns_run_sysfs(int nsfd, rn_netns_fn fn, void *arg, struct rn_error *err);

typedef int (*rn_netns_each_fn)(void *arg, size_t i, int enter_error, struct rn_error *err);

/*
 * Runs fn(arg, i, enter_error, err) for i = 0..n-1 on ONE new thread that
 * joins the netns of fds[i] before each call (enter_error is 0, or -errno
 * when it could not; fn decides what that means). Walking many namespaces
 * this way costs one thread, not one per namespace. Stops at the first
 * negative return of fn and returns it; the caller's thread never moves.
 */
int rn_netns_run_each(const int *fds, size_t n, rn_netns_each_fn fn, void *arg,
		      struct rn_error *err);

/*
 * A sysfs instance of the calling thread's netns that is mounted nowhere
 * (fsopen/fsmount): an fd of its root, read through "/proc/self/fd/FD/...".
 * Net-tagged classes (net, infiniband in exclusive mode) show the devices of
 * that netns. No mount namespace is copied or torn down. -ENOSYS before
 * Linux 5.2; needs CAP_SYS_ADMIN.
 */
int rn_netns_sysfs_fd(struct rn_error *err);

/*
 * sysfs shows the netns of whoever mounted it; netlink follows the caller.
 * After `nsenter -n` (a netns entered, the mount namespace kept), /sys is
 * another netns's view: reading it as "here" gives silently wrong answers.
 *
 * rn_netns_sysfs_is_own(): 1 when rn_sysfs_root() shows the calling thread's
 * netns, 0 when it shows another, negative errno when it cannot tell. As root
 * the answer is exact (a sysfs made for this netns shares the superblock of
 * every other mount of it); without CAP_SYS_ADMIN the netdevs of /sys/class/net
 * are checked against this netns's (rn_sysfs_netdevs_agree). A root set
 * by $RDMANS_SYSFS_ROOT or rn_sysfs_set_root() is taken as it is.
 */
int rn_netns_sysfs_is_own(struct rn_error *err);

/*
 * Runs fn(arg, err) where sysfs shows the calling thread's own netns: on this
 * thread when /sys does, else on a thread with a private mount namespace and
 * a fresh sysfs of this netns (as rn_netns_run_sysfs()). When neither can be
 * had (no CAP_SYS_ADMIN), refuses with -EXDEV and a message saying how to get
 * the answer (--netns from the host, or `ip netns exec`). Never a wrong view.
 */
int rn_netns_run_here_sysfs(rn_netns_fn fn, void *arg, struct rn_error *err);

struct rn_netns_entry {
	struct rn_netns_id id;
	pid_t pid; /* a process in it (lowest PID), 0 if only a name holds it */
	char name[NAME_MAX + 1]; /* name under /var/run/netns, or "" */
	char path[PATH_MAX]; /* a path that opens it */
	bool is_host; /* PID 1's netns */
};

/*
 * Every netns this host can reach: PID 1's first, then each one found
 * through /var/run/netns and /proc/PID/ns/net, once each.
 * Free *ret with free().
 */
int rn_netns_list(struct rn_netns_entry **ret, size_t *ret_n, struct rn_error *err);

enum rn_netns_state {
	RN_NETNS_ALIVE,
	RN_NETNS_GONE,
	RN_NETNS_UNKNOWN, /* cannot be told from here: never treated as gone */
};

/*
 * Does the netns a path (CNI_NETNS) named still exist? Nothing is opened,
 * so a FIFO or a stale mount never blocks. `ino` (0: unknown) is the inode
 * it had: the path naming another netns now (a reused PID or name) means
 * the old one is gone. A missing /proc/PID/... counts as gone only when
 * this process sees the host's PIDs, a missing /var/run/netns/NAME only
 * when its directory is visible. *why gets the reason, for logs.
 */
enum rn_netns_state rn_netns_path_state(const char *path, uint64_t ino, char *why, size_t len);
/* The inode of the netns at path (stat, nothing opened); -errno, -EMEDIUMTYPE if no netns. */
int rn_netns_path_ino(const char *path, uint64_t *ret);
/* Does this process see the host's PIDs (NSpid of /proc/self/status has one level)? */
bool rn_netns_host_pids(void);

#endif
