// SPDX-License-Identifier: Apache-2.0
/* A process's files under a proc root (proc.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "rdmans/cleanup.h"
#include "rdmans/proc.h"
#include "rdmans/util.h"

int rn_proc_exists(const char *proc_root, pid_t pid, struct rn_error *err)
{
	char path[PATH_MAX];

	if (rn_path(path, sizeof(path), "%s/%d", proc_root, (int)pid) < 0)
		return rn_error_set(err, ENAMETOOLONG, "path %s/%d is too long", proc_root,
				    (int)pid);
	if (access(path, F_OK) < 0)
		return rn_error_set(err, ESRCH, "no process with PID %d (has it exited?)",
				    (int)pid);
	return 0;
}

int rn_proc_read(const char *proc_root, pid_t pid, const char *name, size_t max, char **ret,
		 size_t *ret_len)
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

int rn_proc_open_root(const char *proc_root, pid_t pid, char *why, size_t why_len)
{
	char path[PATH_MAX];
	int fd, r;

	r = rn_path(path, sizeof(path), "%s/%d/root", proc_root, (int)pid);
	if (r < 0)
		fd = r;
	else if ((fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		fd = -errno;
	if (fd < 0 && !why[0])
		(void)rn_snprintf(why, why_len, "cannot open %s/%d/root: %s (run as root)",
				  proc_root, (int)pid, strerror(-fd));
	return fd;
}

const char *rn_proc_status_field(const char *text, const char *key, char *buf, size_t len)
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
