// SPDX-License-Identifier: Apache-2.0
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rdmans/cleanup.h"
#include "rdmans/system.h"
#include "rdmans/proc.h"
#include "rdmans/util.h"

/* Searched as kmod does: a file name in an earlier directory hides the same name in later ones. */
static const char *const modprobe_dirs[] = {
	"/etc/modprobe.d", "/run/modprobe.d",	  "/usr/local/lib/modprobe.d",
	"/lib/modprobe.d", "/usr/lib/modprobe.d",
};

const char *rn_boot_mode_name(enum rn_boot_mode mode)
{
	static const char *const names[] = {
		[RN_BOOT_SHARED] = "shared",
		[RN_BOOT_EXCLUSIVE] = "exclusive",
	};

	return RN_NAME_OF(names, mode, "shared (default)");
}

/* "0"/"n"/"N" is exclusive (ib_devices_shared_netns = false); "1"/"y"/"Y" shared. */
static enum rn_boot_mode parse_bool_mode(const char *v)
{
	if (!strcmp(v, "0") || !strcasecmp(v, "n") || !strcasecmp(v, "false"))
		return RN_BOOT_EXCLUSIVE;
	if (!strcmp(v, "1") || !strcasecmp(v, "y") || !strcasecmp(v, "true"))
		return RN_BOOT_SHARED;
	return RN_BOOT_DEFAULT;
}

/* Finds netns_mode=V among whitespace-separated words; returns the mode or DEFAULT. */
static enum rn_boot_mode scan_words(char *words, const char *key)
{
	enum rn_boot_mode mode = RN_BOOT_DEFAULT;
	size_t klen = strlen(key);
	char *save = NULL;

	for (char *w = strtok_r(words, " \t\n", &save); w; w = strtok_r(NULL, " \t\n", &save))
		if (strncmp(w, key, klen) == 0 && w[klen] == '=')
			mode = parse_bool_mode(w + klen + 1);
	return mode;
}

static enum rn_boot_mode scan_modprobe_file(const char *path)
{
	int fd = rn_open_regular(AT_FDCWD, path, O_RDONLY, 0, NULL, NULL); /* a FIFO: skipped */
	_cleanup_fclose_ FILE *f = fd >= 0 ? fdopen(fd, "re") : NULL;
	enum rn_boot_mode mode = RN_BOOT_DEFAULT;
	char line[4096];

	if (!f) {
		if (fd >= 0)
			close(fd);
		return RN_BOOT_DEFAULT;
	}
	while (fgets(line, sizeof(line), f)) {
		char *save = NULL, *cmd, *module, *rest;
		enum rn_boot_mode m;

		cmd = strtok_r(line, " \t\n", &save);
		if (!cmd || strcmp(cmd, "options") != 0)
			continue;
		module = strtok_r(NULL, " \t\n", &save);
		if (!module || (strcmp(module, "ib_core") && strcmp(module, "ib-core")))
			continue;
		rest = strtok_r(NULL, "\n", &save);
		if (!rest)
			continue;
		m = scan_words(rest, "netns_mode");
		if (m != RN_BOOT_DEFAULT)
			mode = m;
	}
	return mode;
}

struct conf_file {
	char name[NAME_MAX + 1];
	char path[PATH_MAX];
};

static int cmp_conf(const void *a, const void *b)
{
	return strcmp(((const struct conf_file *)a)->name, ((const struct conf_file *)b)->name);
}

int rn_system_boot_config(const char *root, struct rn_boot_config *out, struct rn_error *err)
{
	_cleanup_free_ struct conf_file *files = NULL;
	size_t n = 0, cap = 0;
	char path[PATH_MAX];
	_cleanup_free_ char *cmdline = NULL;

	memset(out, 0, sizeof(*out));
	/* The kernel command line wins: it is the only way when ib_core is built in. */
	/* bounded, never blocking: a FIFO or /dev/zero there is skipped */
	if (rn_path(path, sizeof(path), "%s/proc/cmdline", root) == 0 &&
	    rn_read_regular(path, 1u << 16, NULL, &cmdline, NULL, NULL) == 0) {
		if (*cmdline) {
			enum rn_boot_mode m = scan_words(cmdline, "ib_core.netns_mode");

			if (m != RN_BOOT_DEFAULT) {
				out->mode = m;
				snprintf(out->source, sizeof(out->source), "/proc/cmdline");
				return 0;
			}
		}
	}

	for (size_t d = 0; d < RN_ARRAY_SIZE(modprobe_dirs); d++) {
		_cleanup_closedir_ DIR *dir = NULL;
		struct dirent *de;

		if (rn_path(path, sizeof(path), "%s%s", root, modprobe_dirs[d]) < 0)
			continue;
		dir = opendir(path);
		while (dir && (de = readdir(dir))) {
			size_t len = strlen(de->d_name);
			bool hidden = false;

			if (len < 6 || strcmp(de->d_name + len - 5, ".conf") != 0)
				continue;
			for (size_t i = 0; i < n; i++)
				hidden |= strcmp(files[i].name, de->d_name) == 0;
			if (hidden)
				continue;
			if (RN_GROW(files, &cap, n + 1) < 0)
				return rn_error_set(err, ENOMEM, "out of memory");
			snprintf(files[n].name, sizeof(files[n].name), "%s", de->d_name);
			if (rn_path(files[n].path, sizeof(files[n].path), "%s/%s", path,
				    de->d_name) < 0)
				continue;
			n++;
		}
	}
	/* modprobe reads the files in name order; the last option seen wins. */
	if (n > 1)
		qsort(files, n, sizeof(*files), cmp_conf);
	for (size_t i = 0; i < n; i++) {
		enum rn_boot_mode m = scan_modprobe_file(files[i].path);

		if (m != RN_BOOT_DEFAULT) {
			out->mode = m;
			/* report the path as seen on the system, without the test root */
			snprintf(out->source, sizeof(out->source), "%s",
				 files[i].path + strlen(root));
		}
	}
	return 0;
}

int rn_system_persist_netns_mode(const char *root, bool exclusive, char *ret_path, size_t len,
				 struct rn_error *err)
{
	char dir[PATH_MAX], path[PATH_MAX];
	char text[256];
	int n, r;

	if (rn_path(dir, sizeof(dir), "%s/etc/modprobe.d", root) < 0 ||
	    rn_path(path, sizeof(path), "%s%s", root, RN_MODPROBE_CONF) < 0)
		return rn_error_set(err, ENAMETOOLONG, "path too long under %s", root);
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return rn_error_errno(err, errno, "cannot create %s", dir);
	n = snprintf(text, sizeof(text),
		     "# Written by 'rdmans system set netns %s --persist'.\n"
		     "# RDMA devices belong to one network namespace at a time (exclusive mode).\n"
		     "options ib_core netns_mode=%d\n",
		     exclusive ? "exclusive" : "shared", exclusive ? 0 : 1);
	r = rn_write_atomic(path, text, (size_t)n, 0644, true, "modprobe.d file", err);
	if (r < 0)
		return r;
	if (ret_path)
		snprintf(ret_path, len, "%s", path);
	return 0;
}

int rn_system_refuse_shared(const char *dev, struct rn_error *err)
{
	return rn_error_set(err, EOPNOTSUPP,
			    "cannot move RDMA device %s: the RDMA subsystem is in shared netns "
			    "mode, where every namespace sees every device. Switch with "
			    "'rdmans system set netns exclusive' while no other network namespace "
			    "exists, or run 'rdmans system set netns exclusive --persist' and "
			    "reboot the node",
			    dev);
}

/* comm is cut to 15 bytes: "k8s-rdma-shared-dp" reads "k8s-rdma-shared" */
static const char *const shared_consumers[] = { "k8s-rdma-shared" };

int rn_system_shared_consumers(const char *proc_root, char *buf, size_t len, struct rn_error *err)
{
	_cleanup_closedir_ DIR *d = NULL;
	const char *root = proc_root ? proc_root : "/proc";
	struct dirent *de;
	size_t used = 0;

	if (len)
		buf[0] = '\0';
	d = opendir(root);
	if (!d)
		return rn_error_errno(err, errno, "cannot list the processes in %s", root);
	while ((de = readdir(d))) {
		_cleanup_free_ char *comm = NULL;
		char *end;
		long pid = strtol(de->d_name, &end, 10);
		size_t n;

		if (*end || pid <= 0 || rn_proc_read(root, (pid_t)pid, "comm", 64, &comm, &n) < 0)
			continue; /* not a process, or gone meanwhile */
		comm[strcspn(comm, "\n")] = '\0';
		for (size_t i = 0; i < RN_ARRAY_SIZE(shared_consumers); i++) {
			int w;

			if (strcmp(comm, shared_consumers[i]) != 0 || used >= len)
				continue;
			w = snprintf(buf + used, len - used, "%s%s (PID %ld)", used ? ", " : "",
				     comm, pid);
			used = w < 0 ? used : used + (size_t)w;
		}
	}
	return 0;
}
