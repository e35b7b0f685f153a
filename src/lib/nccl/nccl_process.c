// SPDX-License-Identifier: Apache-2.0
/*
 * A running process's NCCL settings (nccl_process.h), in NCCL's order
 * (src/misc/param.cc, initEnv): the environment; then $NCCL_CONF_FILE, else
 * ~/.nccl.conf with the home of the process's uid (getpwuid: its own
 * /etc/passwd, else $HOME); then /etc/nccl.conf. A file never replaces a
 * value set already. Every file is opened inside the process's root
 * (rootfs.c: RESOLVE_IN_ROOT), so a symlink in a container names a file of
 * the container, never one of the host.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rdmans/cleanup.h"
#include "rdmans/nccl_conf.h"
#include "rdmans/nccl_process.h"
#include "rdmans/proc.h"
#include "rdmans/rootfs.h"
#include "rdmans/util.h"

#define ENVIRON_MAX (4 * 1024 * 1024)
#define CONF_MAX (1024 * 1024)

static int var_add(struct rn_nccl_process *np, const char *name, size_t name_len, const char *value,
		   size_t value_len, const char *source)
{
	struct rn_nccl_var *v;

	if (name_len >= RN_NCCL_NAME_MAX)
		return 0;
	for (size_t i = 0; i < np->n; i++)
		if (strlen(np->v[i].name) == name_len &&
		    strncmp(np->v[i].name, name, name_len) == 0)
			return 0; /* set already: the environment, or an earlier file, wins */
	if (RN_GROW(np->v, NULL, np->n + 1) < 0)
		return -ENOMEM;
	v = &np->v[np->n++];
	memset(v, 0, sizeof(*v));
	memcpy(v->name, name, name_len);
	if (value_len >= sizeof(v->value))
		value_len = sizeof(v->value) - 1; /* NCCL reads at most 1023 bytes */
	memcpy(v->value, value, value_len);
	(void)rn_strscpy(v->source, sizeof(v->source), source);
	return 0;
}

const struct rn_nccl_var *rn_nccl_process_get(const struct rn_nccl_process *np, const char *name)
{
	for (size_t i = 0; i < np->n; i++)
		if (strcmp(np->v[i].name, name) == 0)
			return &np->v[i];
	return NULL;
}

void rn_nccl_process_free(struct rn_nccl_process *np)
{
	free(np->v);
	np->v = NULL;
	np->n = 0;
}

struct conf_read {
	struct rn_nccl_process *np;
	const char *source;
};

/* An NCCL_* line of an nccl.conf (rn_nccl_conf_each). */
static int conf_line(const char *name, size_t name_len, const char *value, size_t value_len,
		     void *arg)
{
	struct conf_read *c = arg;

	if (name_len < 5 || strncmp(name, "NCCL_", 5) != 0)
		return 0;
	return var_add(c->np, name, name_len, value, value_len, c->source);
}

/* A file that is absent is no error; one that cannot be read is said in conf_errors[slot]. */
static int read_conf(struct rn_nccl_process *np, int rootfd, const char *path, size_t slot)
{
	_cleanup_free_ char *text = NULL;
	struct rn_error err = { 0 };
	int r;

	r = rn_rootfs_read(rootfd, path, CONF_MAX, &text, &err);
	if (r == -ENOENT)
		return 0;
	if (r == -ENOMEM)
		return r;
	if (r == 0) {
		(void)rn_strscpy(np->conf_files[slot], sizeof(np->conf_files[slot]), path);
		r = rn_nccl_conf_each(text, conf_line, &(struct conf_read){ np, path });
		if (r == -ENOMEM)
			return r;
		if (r < 0)
			rn_error_set(&err, -r, "%s", strerror(-r));
	}
	if (r < 0)
		(void)rn_snprintf(np->conf_errors[slot], sizeof(np->conf_errors[slot]),
				  "cannot read %s: %s", path, err.msg);
	return 0;
}

/* A uid in decimal, the whole text: 0 and up. */
static bool parse_uid(const char *text, unsigned long *ret)
{
	char *end;

	if (!isdigit((unsigned char)*text))
		return false;
	errno = 0;
	*ret = strtoul(text, &end, 10);
	return errno == 0 && *end == '\0';
}

/* The home directory of uid as the process's /etc/passwd says, into buf. */
static bool home_of(int rootfd, unsigned long uid, char *buf, size_t len)
{
	_cleanup_free_ char *text = NULL;
	char *save = NULL;

	if (rn_rootfs_read(rootfd, "/etc/passwd", CONF_MAX, &text, NULL) < 0)
		return false;
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *field[7] = { 0 };
		size_t nf = 0;
		unsigned long v;

		field[nf++] = line;
		for (char *c = line; *c && nf < 7; c++)
			if (*c == ':') {
				*c = '\0';
				field[nf++] = c + 1;
			}
		if (nf == 7 && parse_uid(field[2], &v) && v == uid) {
			(void)rn_strscpy(buf, len, field[5]);
			return true;
		}
	}
	return false;
}

/* The real uid of a /proc/PID/status text ("Uid:\treal\teffective..."), or -1. */
static long status_uid(const char *status)
{
	char text[64];
	unsigned long uid;

	if (!status || !rn_proc_status_field(status, "Uid", text, sizeof(text)))
		return -1;
	text[strcspn(text, " \t")] = '\0';
	return parse_uid(text, &uid) && uid <= LONG_MAX ? (long)uid : -1;
}

int rn_nccl_process_read(struct rn_nccl_process *np, const char *proc_root, pid_t pid,
			 struct rn_error *err)
{
	_cleanup_free_ char *environ_text = NULL, *status = NULL;
	_cleanup_close_ int rootfd = -1;
	char path[PATH_MAX], home[PATH_MAX] = "";
	const struct rn_nccl_var *conf_file;
	size_t len = 0;
	long uid;
	int r;

	memset(np, 0, sizeof(*np));
	r = rn_proc_exists(proc_root, pid, err);
	if (r < 0)
		return r;
	(void)rn_path(path, sizeof(path), "%s/%d", proc_root, (int)pid);

	r = rn_proc_read(proc_root, pid, "environ", ENVIRON_MAX, &environ_text, &len);
	if (r == -ENOMEM)
		return rn_error_set(err, ENOMEM, "out of memory");
	if (r < 0) {
		(void)rn_snprintf(np->read_error, sizeof(np->read_error),
				  "cannot read %s/environ: %s (run as root)", path, strerror(-r));
	} else {
		for (size_t off = 0; off < len;) {
			const char *var = environ_text + off;
			size_t vlen = strnlen(var, len - off);
			const char *eq = memchr(var, '=', vlen);

			off += vlen + 1;
			if (!eq)
				continue;
			if (strncmp(var, "NCCL_", 5) == 0 &&
			    var_add(np, var, (size_t)(eq - var), eq + 1,
				    vlen - (size_t)(eq + 1 - var), "environment") < 0) {
				rn_nccl_process_free(np);
				return rn_error_set(err, ENOMEM, "out of memory");
			}
			if (strncmp(var, "HOME=", 5) == 0 && !home[0])
				(void)rn_strscpy(home, sizeof(home), eq + 1);
		}
	}

	rootfd = rn_proc_open_root(proc_root, pid, np->read_error, sizeof(np->read_error));
	if (rootfd < 0)
		return 0;
	conf_file = rn_nccl_process_get(np, "NCCL_CONF_FILE");
	if (conf_file && conf_file->value[0]) {
		(void)rn_strscpy(path, sizeof(path), conf_file->value);
	} else {
		(void)rn_proc_read(proc_root, pid, "status", 65536, &status, NULL);
		uid = status_uid(status);
		if (uid >= 0)
			(void)home_of(rootfd, (unsigned long)uid, home, sizeof(home));
		path[0] = '\0';
		if (home[0])
			(void)rn_path(path, sizeof(path), "%s/.nccl.conf", home);
	}
	if ((path[0] && read_conf(np, rootfd, path, 0) < 0) ||
	    read_conf(np, rootfd, "/etc/nccl.conf", 1) < 0) {
		rn_nccl_process_free(np);
		return rn_error_set(err, ENOMEM, "out of memory");
	}
	return 0;
}
