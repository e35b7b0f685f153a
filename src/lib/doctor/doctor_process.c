// SPDX-License-Identifier: Apache-2.0
/* rdmans doctor: the facts of the target process, from PROC/PID and its mount namespace (doctor_process.h). */
#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "rdmans/cleanup.h"
#include "rdmans/counters.h"
#include "rdmans/devnodes.h"
#include "rdmans/doctor.h"
#include "rdmans/doctor_process.h"
#include "rdmans/link.h"
#include "rdmans/nccl_process.h"
#include "rdmans/netns.h"
#include "rdmans/proc.h"
#include "rdmans/rdma_nl.h"
#include "rdmans/rootfs.h"
#include "rdmans/util.h"
#include "rdmans/verbs.h"

#define MIB (1024ULL * 1024ULL)
/* Below this a finite RLIMIT_MEMLOCK fails NCCL outright; above it, large jobs still may. */
#define MEMLOCK_FAIL_BELOW (64 * MIB)
#define CAP_IPC_LOCK_BIT 14

static bool parse_uint(const char *s, unsigned long long *ret, int base)
{
	char *end;

	if (!*s || *s == '-' || isspace((unsigned char)*s))
		return false;
	errno = 0;
	*ret = strtoull(s, &end, base);
	return errno == 0 && *end == '\0';
}

/* ---- process facts ---- */

/* "Max locked memory   8388608   8388608   bytes" */
static bool parse_limits(char *text, uint64_t *soft, uint64_t *hard)
{
	char *line = strstr(text, "Max locked memory");
	char s[32], h[32];
	unsigned long long v;

	if (!line || sscanf(line + strlen("Max locked memory"), "%31s %31s", s, h) != 2)
		return false;
	if (strcmp(s, "unlimited") == 0)
		*soft = RN_DOCTOR_UNLIMITED;
	else if (parse_uint(s, &v, 10))
		*soft = v;
	else
		return false;
	if (strcmp(h, "unlimited") == 0)
		*hard = RN_DOCTOR_UNLIMITED;
	else if (parse_uint(h, &v, 10))
		*hard = v;
	else
		return false;
	return true;
}

static enum rn_doctor_node_state node_state(int rootfd, const struct rn_doctor_port *p)
{
	_cleanup_close_ int fd = -1;
	char path[64];
	struct stat st;

	if (!p->uverbs[0])
		return RN_DOCTOR_NODE_UNKNOWN;
	snprintf(path, sizeof(path), "/dev/infiniband/%s", p->uverbs);
	fd = rn_rootfs_openat(rootfd, path, O_PATH);
	if (fd < 0 || fstat(fd, &st) < 0)
		return RN_DOCTOR_NODE_MISSING;
	if (!S_ISCHR(st.st_mode))
		return RN_DOCTOR_NODE_NOT_CHR;
	if (major(st.st_rdev) != p->uverbs_major || minor(st.st_rdev) != p->uverbs_minor)
		return RN_DOCTOR_NODE_WRONG_DEV;
	return RN_DOCTOR_NODE_OK;
}

int rn_doctor_facts_process(struct rn_doctor_facts *f, const char *proc_root, pid_t pid,
			    struct rn_error *err)
{
	struct rn_doctor_process *p = &f->proc;
	_cleanup_free_ char *limits = NULL, *status = NULL, *comm = NULL;
	_cleanup_close_ int rootfd = -1;
	char path[PATH_MAX], buf[128];
	size_t len = 0;
	int r;

	f->have_process = true;
	p->pid = pid;
	p->cap_ipc_lock = -1;
	r = rn_proc_exists(proc_root, pid, err);
	if (r < 0)
		return r;
	(void)rn_path(path, sizeof(path), "%s/%d", proc_root, (int)pid);

	if (rn_proc_read(proc_root, pid, "comm", 4096, &comm, &len) == 0) {
		comm[strcspn(comm, "\n")] = '\0';
		(void)rn_strscpy(p->comm, sizeof(p->comm), comm);
	}
	r = rn_proc_read(proc_root, pid, "limits", 65536, &limits, &len);
	if (r == 0)
		p->memlock_known = parse_limits(limits, &p->memlock_soft, &p->memlock_hard);
	if (!p->memlock_known)
		(void)rn_snprintf(p->read_error, sizeof(p->read_error), "cannot read %s/limits%s%s",
				  path, r < 0 ? ": " : "",
				  r < 0 ? strerror(-r) : " (no 'Max locked memory' line)");
	if (rn_proc_read(proc_root, pid, "status", 65536, &status, &len) == 0 &&
	    rn_proc_status_field(status, "CapEff", buf, sizeof(buf))) {
		unsigned long long caps;

		if (parse_uint(buf, &caps, 16))
			p->cap_ipc_lock = (caps >> CAP_IPC_LOCK_BIT) & 1;
	}

	r = rn_nccl_process_read(&p->nccl, proc_root, pid, err);
	if (r < 0)
		return r;
	if (!p->read_error[0])
		(void)rn_strscpy(p->read_error, sizeof(p->read_error), p->nccl.read_error);

	rootfd = rn_proc_open_root(proc_root, pid, p->read_error, sizeof(p->read_error));
	if (rootfd >= 0) {
		_cleanup_close_ int dfd = rn_rootfs_openat(rootfd, "/dev/infiniband", O_PATH);
		_cleanup_close_ int cm =
			rn_rootfs_openat(rootfd, "/dev/infiniband/rdma_cm", O_PATH);

		p->devdir = dfd >= 0;
		p->rdma_cm = cm >= 0;
		if (f->nports) {
			p->nodes = calloc(f->nports, sizeof(*p->nodes));
			if (!p->nodes)
				return rn_error_set(err, ENOMEM, "out of memory");
			for (size_t i = 0; i < f->nports; i++)
				p->nodes[i] = node_state(rootfd, &f->ports[i]);
		}
	}
	return 0;
}
