// SPDX-License-Identifier: Apache-2.0
/*
 * Container ID -> PID through /proc/PID/cgroup, so no runtime CLI (crictl,
 * docker, runc) is needed: every runtime puts the ID in the cgroup path
 * (".../cri-containerd-ID.scope", "/docker/ID", ".../crio-ID.scope").
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "rdmans/cleanup.h"
#include "rdmans/container.h"
#include "rdmans/discover.h"
#include "rdmans/util.h"

#define CONTAINER_ID_MIN 6

static bool cgroup_names(pid_t pid, const char *id)
{
	char path[64], line[4096];
	_cleanup_fclose_ FILE *f = NULL;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		char *p = strstr(line, id);

		/* the ID must start a path component or follow a runtime prefix's '-' */
		for (; p; p = strstr(p + 1, id))
			if (p[-1] == '/' || p[-1] == '-' || p[-1] == ':')
				return true;
	}
	return false;
}

int rn_container_pid(const char *id, pid_t *ret_pid, struct rn_error *err)
{
	_cleanup_closedir_ DIR *dir = NULL;
	struct rn_netns_id first_ns = { 0 };
	pid_t best = 0;
	struct dirent *de;
	size_t len;
	int r;

	r = rn_name_check("container ID", id, 128, err);
	if (r < 0)
		return r;
	len = strlen(id);
	for (size_t i = 0; i < len; i++)
		if (!isalnum((unsigned char)id[i]) && id[i] != '-' && id[i] != '_')
			return rn_error_set(err, EINVAL,
					    "container ID '%s' may hold only letters, digits, '-' "
					    "and '_'",
					    id);
	if (len < CONTAINER_ID_MIN)
		return rn_error_set(err, EINVAL,
				    "container ID '%s' is too short: give at least %d characters",
				    id, CONTAINER_ID_MIN);
	dir = opendir("/proc");
	if (!dir)
		return rn_error_errno(err, errno, "cannot list /proc");
	while ((de = readdir(dir))) {
		char nspath[64];
		struct stat st;
		struct rn_netns_id ns;
		pid_t pid;

		if (rn_parse_pid(de->d_name, &pid) < 0 || !cgroup_names(pid, id))
			continue;
		snprintf(nspath, sizeof(nspath), "/proc/%d/ns/net", (int)pid);
		if (stat(nspath, &st) < 0)
			continue;
		ns.dev = st.st_dev;
		ns.ino = st.st_ino;
		if (best && !rn_netns_id_equal(&ns, &first_ns))
			return rn_error_set(
				err, ENOTUNIQ,
				"container ID '%s' matches processes in different "
				"network namespaces (PIDs %d and %d); give more of the ID",
				id, (int)best, (int)pid);
		if (!best || pid < best) {
			best = pid;
			first_ns = ns;
		}
	}
	if (!best)
		return rn_error_set(err, ESRCH,
				    "no running process belongs to container '%s' (checked "
				    "/proc/*/cgroup); is it running?",
				    id);
	*ret_pid = best;
	return 0;
}

/* The cgroup lines of every process, read once: one buffer, lines '\n'-separated. */
struct rn_cgroup_snapshot {
	char *text;
	size_t len, cap;
};

void rn_cgroup_snapshot_free(struct rn_cgroup_snapshot *s)
{
	if (s) {
		free(s->text);
		free(s);
	}
}

int rn_cgroup_snapshot_take(struct rn_cgroup_snapshot **ret, struct rn_error *err)
{
	_cleanup_closedir_ DIR *dir = NULL;
	struct rn_cgroup_snapshot *s = calloc(1, sizeof(*s));
	struct dirent *de;

	if (!s)
		return rn_error_set(err, ENOMEM, "out of memory");
	dir = opendir("/proc");
	if (!dir) {
		rn_cgroup_snapshot_free(s);
		return rn_error_errno(err, errno, "cannot list /proc");
	}
	while ((de = readdir(dir))) {
		char path[64], line[4096];
		_cleanup_fclose_ FILE *f = NULL;
		pid_t pid;

		if (rn_parse_pid(de->d_name, &pid) < 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
		f = fopen(path, "re");
		while (f && fgets(line, sizeof(line), f)) {
			size_t n = strlen(line);

			if (RN_GROW(s->text, &s->cap, s->len + n + 2) < 0) {
				rn_cgroup_snapshot_free(s);
				return rn_error_set(err, ENOMEM, "out of memory");
			}
			memcpy(s->text + s->len, line, n + 1);
			s->len += n;
		}
	}
	*ret = s;
	return 0;
}

bool rn_cgroup_snapshot_has(const struct rn_cgroup_snapshot *s, const char *id)
{
	if (!s || !s->text || !id || strlen(id) < CONTAINER_ID_MIN)
		return false;
	/* the same rule as cgroup_names(): the ID starts a component or follows '-' or ':' */
	for (const char *p = strstr(s->text, id); p; p = strstr(p + 1, id))
		if (p > s->text && (p[-1] == '/' || p[-1] == '-' || p[-1] == ':'))
			return true;
	return false;
}
