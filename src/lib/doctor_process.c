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
#include "rdmans/nccl_conf.h"
#include "rdmans/netns.h"
#include "rdmans/rdma_nl.h"
#include "rdmans/rootfs.h"
#include "rdmans/util.h"
#include "rdmans/verbs.h"

#define MIB (1024ULL * 1024ULL)
/* Below this a finite RLIMIT_MEMLOCK fails NCCL outright; above it, large jobs still may. */
#define MEMLOCK_FAIL_BELOW (64 * MIB)
#define CAP_IPC_LOCK_BIT 14
#define ENVIRON_MAX (4 * 1024 * 1024)
#define CONF_MAX (1024 * 1024)

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

static int read_proc_file(const char *proc_root, pid_t pid, const char *name, size_t max,
			  char **ret, size_t *ret_len)
{
	_cleanup_close_ int fd = -1;
	char path[PATH_MAX];
	int r;

	r = rn_path(path, sizeof(path), "%s/%d/%s", proc_root, (int)pid, name);
	if (r < 0)
		return r;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	return rn_read_fd(fd, max, ret, ret_len);
}

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

/* The value of "Key:\t..." in /proc/PID/status, or NULL. */
static const char *status_field(const char *text, const char *key, char *buf, size_t len)
{
	size_t klen = strlen(key);

	for (const char *line = text; line && *line;) {
		const char *nl = strchr(line, '\n');

		if (strncmp(line, key, klen) == 0 && line[klen] == ':') {
			const char *v = line + klen + 1;
			size_t n;

			while (*v == ' ' || *v == '\t')
				v++;
			n = nl ? (size_t)(nl - v) : strlen(v);
			if (n >= len)
				n = len - 1;
			memcpy(buf, v, n);
			buf[n] = '\0';
			return buf;
		}
		line = nl ? nl + 1 : NULL;
	}
	return NULL;
}

static int nccl_add(struct rn_doctor_process *p, const char *name, size_t name_len,
		    const char *value, const char *source)
{
	struct rn_doctor_nccl_var *v;

	if (name_len >= RN_NCCL_NAME_MAX)
		return 0;
	for (size_t i = 0; i < p->nnccl; i++)
		if (strlen(p->nccl[i].name) == name_len &&
		    strncmp(p->nccl[i].name, name, name_len) == 0)
			return 0; /* set already: the environment, or an earlier file, wins */
	if (RN_GROW(p->nccl, NULL, p->nnccl + 1) < 0)
		return -ENOMEM;
	v = &p->nccl[p->nnccl++];
	memcpy(v->name, name, name_len);
	v->name[name_len] = '\0';
	(void)rn_strscpy(v->value, sizeof(v->value), value);
	(void)rn_strscpy(v->source, sizeof(v->source), source);
	return 0;
}

static const char *nccl_get(const struct rn_doctor_process *p, const char *name)
{
	for (size_t i = 0; i < p->nnccl; i++)
		if (strcmp(p->nccl[i].name, name) == 0)
			return p->nccl[i].value;
	return NULL;
}

const struct rn_doctor_nccl_var *rn_doctor_process_nccl(const struct rn_doctor_process *p,
							const char *name)
{
	for (size_t i = 0; i < p->nnccl; i++)
		if (strcmp(p->nccl[i].name, name) == 0)
			return &p->nccl[i];
	return NULL;
}

struct conf_read {
	struct rn_doctor_process *p;
	const char *source;
};

/* An NCCL_* line of an nccl.conf (rn_nccl_conf_each); a variable set already is not replaced. */
static int conf_line(const char *name, size_t name_len, const char *value, size_t value_len,
		     void *arg)
{
	struct conf_read *c = arg;
	char v[1024];

	if (name_len < 5 || strncmp(name, "NCCL_", 5) != 0)
		return 0;
	memcpy(v, value, value_len); /* at most 1023 */
	v[value_len] = '\0';
	return nccl_add(c->p, name, name_len, v, c->source);
}

/* A file that is absent is no error; one that cannot be read is (the nccl-conf check says so). */
static void read_conf(struct rn_doctor_process *p, int rootfd, const char *path, size_t slot)
{
	_cleanup_free_ char *text = NULL;
	struct rn_error err = { 0 };
	int r;

	r = rn_rootfs_read(rootfd, path, CONF_MAX, &text, &err);
	if (r == -ENOENT)
		return;
	if (r == 0) {
		(void)rn_strscpy(p->conf_files[slot], sizeof(p->conf_files[slot]), path);
		r = rn_nccl_conf_each(text, conf_line, &(struct conf_read){ p, path });
		if (r < 0)
			rn_error_set(&err, -r, "%s", strerror(-r));
	}
	if (r < 0)
		(void)rn_snprintf(p->conf_errors[slot], sizeof(p->conf_errors[slot]),
				  "cannot read %s: %s", path, err.msg);
}

/* The home directory of uid as the target's /etc/passwd says, into buf. */
static bool home_of(int rootfd, unsigned long uid, char *buf, size_t len)
{
	_cleanup_free_ char *text = NULL;
	char *save = NULL;

	if (rn_rootfs_read(rootfd, "/etc/passwd", CONF_MAX, &text, NULL) < 0)
		return false;
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *field[7] = { 0 };
		size_t nf = 0;
		unsigned long long v;

		field[nf++] = line;
		for (char *c = line; *c && nf < 7; c++)
			if (*c == ':') {
				*c = '\0';
				field[nf++] = c + 1;
			}
		if (nf == 7 && parse_uint(field[2], &v, 10) && v == uid) {
			(void)rn_strscpy(buf, len, field[5]);
			return true;
		}
	}
	return false;
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
	_cleanup_free_ char *limits = NULL, *status = NULL, *environ_text = NULL, *comm = NULL;
	_cleanup_close_ int rootfd = -1;
	char path[PATH_MAX], buf[128], home[PATH_MAX] = "";
	const char *conf_file = NULL;
	size_t len = 0;
	int r;

	f->have_process = true;
	p->pid = pid;
	p->cap_ipc_lock = -1;
	r = rn_path(path, sizeof(path), "%s/%d", proc_root, (int)pid);
	if (r < 0)
		return rn_error_set(err, ENAMETOOLONG, "path %s/%d is too long", proc_root,
				    (int)pid);
	if (access(path, F_OK) < 0)
		return rn_error_set(err, ESRCH, "no process with PID %d (has it exited?)",
				    (int)pid);

	if (read_proc_file(proc_root, pid, "comm", 4096, &comm, &len) == 0) {
		comm[strcspn(comm, "\n")] = '\0';
		(void)rn_strscpy(p->comm, sizeof(p->comm), comm);
	}
	r = read_proc_file(proc_root, pid, "limits", 65536, &limits, &len);
	if (r == 0)
		p->memlock_known = parse_limits(limits, &p->memlock_soft, &p->memlock_hard);
	if (!p->memlock_known)
		(void)rn_snprintf(p->read_error, sizeof(p->read_error), "cannot read %s/limits%s%s",
				  path, r < 0 ? ": " : "",
				  r < 0 ? strerror(-r) : " (no 'Max locked memory' line)");
	if (read_proc_file(proc_root, pid, "status", 65536, &status, &len) == 0 &&
	    status_field(status, "CapEff", buf, sizeof(buf))) {
		unsigned long long caps;

		if (parse_uint(buf, &caps, 16))
			p->cap_ipc_lock = (caps >> CAP_IPC_LOCK_BIT) & 1;
	}

	r = read_proc_file(proc_root, pid, "environ", ENVIRON_MAX, &environ_text, &len);
	if (r < 0 && r != -ENOMEM) {
		if (!p->read_error[0])
			(void)rn_snprintf(p->read_error, sizeof(p->read_error),
					  "cannot read %s/environ: %s (run as root)", path,
					  strerror(-r));
	} else if (r == -ENOMEM) {
		return rn_error_set(err, ENOMEM, "out of memory");
	} else {
		for (size_t off = 0; off < len;) {
			const char *var = environ_text + off;
			size_t vlen = strnlen(var, len - off);
			const char *eq = memchr(var, '=', vlen);

			off += vlen + 1;
			if (!eq)
				continue;
			if (strncmp(var, "NCCL_", 5) == 0 &&
			    nccl_add(p, var, (size_t)(eq - var), eq + 1, "environment") < 0)
				return rn_error_set(err, ENOMEM, "out of memory");
			if (strncmp(var, "HOME=", 5) == 0 && !home[0])
				(void)rn_strscpy(home, sizeof(home), eq + 1);
		}
	}

	r = rn_path(path, sizeof(path), "%s/%d/root", proc_root, (int)pid);
	if (r == 0)
		rootfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0) {
		if (!p->read_error[0])
			(void)rn_snprintf(p->read_error, sizeof(p->read_error),
					  "cannot open %s: %s (run as root)", path,
					  strerror(errno));
	} else {
		_cleanup_close_ int dfd = rn_rootfs_openat(rootfd, "/dev/infiniband", O_PATH);
		_cleanup_close_ int cm =
			rn_rootfs_openat(rootfd, "/dev/infiniband/rdma_cm", O_PATH);
		char uid_text[64];
		unsigned long long uid;

		p->devdir = dfd >= 0;
		p->rdma_cm = cm >= 0;
		if (f->nports) {
			p->nodes = calloc(f->nports, sizeof(*p->nodes));
			if (!p->nodes)
				return rn_error_set(err, ENOMEM, "out of memory");
			for (size_t i = 0; i < f->nports; i++)
				p->nodes[i] = node_state(rootfd, &f->ports[i]);
		}
		/* NCCL: $NCCL_CONF_FILE, else ~/.nccl.conf (getpwuid(getuid())); then /etc/nccl.conf */
		conf_file = nccl_get(p, "NCCL_CONF_FILE");
		if (conf_file && *conf_file) {
			(void)rn_strscpy(path, sizeof(path), conf_file);
		} else {
			if (status && status_field(status, "Uid", uid_text, sizeof(uid_text))) {
				uid_text[strcspn(uid_text, " \t")] = '\0';
				if (parse_uint(uid_text, &uid, 10))
					(void)home_of(rootfd, (unsigned long)uid, home,
						      sizeof(home));
			}
			path[0] = '\0';
			if (home[0])
				(void)rn_path(path, sizeof(path), "%s/.nccl.conf", home);
		}
		if (path[0])
			read_conf(p, rootfd, path, 0);
		read_conf(p, rootfd, "/etc/nccl.conf", 1);
	}
	return 0;
}
