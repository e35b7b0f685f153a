/* SPDX-License-Identifier: Apache-2.0 */
/* Which process runs a container: cgroup paths under /proc (container.c). */
#ifndef RDMANS_CONTAINER_H
#define RDMANS_CONTAINER_H

#include <stdbool.h>
#include <sys/types.h>

#include "rdmans/error.h"

/*
 * PID of the lowest process whose cgroup path names container `id` (a full
 * ID or a unique prefix of at least 6 characters). -ESRCH when none runs,
 * -ENOTUNIQ when processes of different network namespaces match.
 */
int rn_container_pid(const char *id, pid_t *ret_pid, struct rn_error *err);

/*
 * Every process's cgroup paths, read once (/proc/PID/cgroup), to ask of
 * many containers whether they still run: _has() is true when some
 * process's cgroup path names container `id` (the rule above).
 */
struct rn_cgroup_snapshot;
int rn_cgroup_snapshot_take(struct rn_cgroup_snapshot **ret, struct rn_error *err);
bool rn_cgroup_snapshot_has(const struct rn_cgroup_snapshot *s, const char *id);
void rn_cgroup_snapshot_free(struct rn_cgroup_snapshot *s);

#endif
