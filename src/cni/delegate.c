// SPDX-License-Identifier: Apache-2.0
/*
 * IPAM delegation as the CNI spec describes it: the plugin named by
 * ipam.type is looked up in CNI_PATH and executed with the same environment
 * (CNI_COMMAND possibly changed) and the network configuration on stdin;
 * its stdout is a result or an error document.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "delegate.h"
#include "result.h"
#include "rdmans/cleanup.h"
#include "rdmans/util.h"

extern char **environ;

#define DELEGATE_OUT_MAX (1024 * 1024)

static int find_plugin(struct cni_ctx *ctx, const char *type, char *path, size_t len)
{
	_cleanup_free_ char *dirs = NULL;
	char *save = NULL;

	if (!ctx->path || !*ctx->path)
		return cni_fail(ctx, CNI_ERR_INVALID_ENV,
				"CNI_PATH is not set: cannot find the IPAM plugin '%s'", type);
	dirs = strdup(ctx->path);
	if (!dirs)
		return cni_fail(ctx, RN_CNI_IPAM, "out of memory");
	for (char *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		struct stat st;

		if (!*d || rn_path(path, len, "%s/%s", d, type) < 0)
			continue;
		if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0)
			return 0;
	}
	return cni_fail(ctx, RN_CNI_IPAM,
			"IPAM plugin '%s' not found in CNI_PATH (%s); install it there or fix "
			"'ipam.type'",
			type, ctx->path);
}

/* environ with the CNI_* overrides; the strings of `extra` are owned by the caller. */
static char **build_env(const struct cni_delegate_env *env, char extra[5][PATH_MAX + 32])
{
	const char *names[] = { "CNI_COMMAND", "CNI_CONTAINERID", "CNI_IFNAME", "CNI_NETNS",
				"CNI_ARGS" };
	const char *values[] = { env->command, env->container_id, env->ifname, env->netns,
				 env->args };
	size_t n = 0, k = 0;
	char **out;

	while (environ[n])
		n++;
	out = calloc(n + RN_ARRAY_SIZE(names) + 1, sizeof(*out));
	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		bool replaced = false;

		for (size_t j = 0; j < RN_ARRAY_SIZE(names); j++) {
			size_t len = strlen(names[j]);

			if (values[j] && strncmp(environ[i], names[j], len) == 0 &&
			    environ[i][len] == '=')
				replaced = true;
		}
		if (!replaced)
			out[k++] = environ[i];
	}
	for (size_t j = 0; j < RN_ARRAY_SIZE(names); j++)
		if (values[j]) {
			snprintf(extra[j], PATH_MAX + 32, "%s=%s", names[j], values[j]);
			out[k++] = extra[j];
		}
	out[k] = NULL;
	return out;
}

/* Runs path with stdin `input`; *ret_out gets stdout (NUL-terminated), *ret_status the wait status. */
static int run_plugin(const char *path, char **envp, const char *input, size_t input_len,
		      char **ret_out, int *ret_status)
{
	_cleanup_close_ int in_r = -1, in_w = -1, out_r = -1, out_w = -1;
	_cleanup_free_ char *out = NULL;
	int fds[2], r;
	pid_t pid;

	*ret_out = NULL;
	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	in_r = fds[0];
	in_w = fds[1];
	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	out_r = fds[0];
	out_w = fds[1];
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		char *argv[] = { (char *)path, NULL };

		if (dup2(in_r, STDIN_FILENO) < 0 || dup2(out_w, STDOUT_FILENO) < 0)
			_exit(126);
		execve(path, argv, envp);
		_exit(127);
	}
	close(TAKE_FD(in_r));
	close(TAKE_FD(out_w));
	(void)rn_write_all(in_w, input,
			   input_len); /* a plugin that does not read is its business */
	close(TAKE_FD(in_w));
	r = rn_read_fd(out_r, DELEGATE_OUT_MAX, &out, NULL);
	close(TAKE_FD(out_r)); /* a plugin still writing gets EPIPE and ends */
	while (waitpid(pid, ret_status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (r < 0)
		return r;
	*ret_out = TAKE_PTR(out);
	return 0;
}

int cni_delegate(struct cni_ctx *ctx, const struct cni_delegate_env *env, const char *input,
		 json_t **ret_doc)
{
	const char *type = ctx->conf.ipam_type;
	char path[PATH_MAX], extra[5][PATH_MAX + 32];
	_cleanup_free_ char **envp = NULL;
	_cleanup_free_ char *out = NULL;
	_cleanup_json_ json_t *doc = NULL;
	size_t in_len = input ? strlen(input) : ctx->conf.raw_len;
	int status = 0, r;

	if (ret_doc)
		*ret_doc = NULL;
	if (find_plugin(ctx, type, path, sizeof(path)) < 0)
		return -1;
	envp = build_env(env, extra);
	if (!envp)
		return cni_fail(ctx, RN_CNI_IPAM, "out of memory");
	r = run_plugin(path, envp, input ? input : ctx->conf.raw, in_len, &out, &status);
	if (r == -EFBIG)
		return cni_fail(ctx, RN_CNI_IPAM,
				"IPAM plugin %s wrote more than %d bytes: not a CNI result", path,
				DELEGATE_OUT_MAX);
	if (r < 0)
		return cni_fail(ctx, RN_CNI_IPAM, "cannot run IPAM plugin %s: %s", path,
				strerror(-r));
	if (out[0])
		doc = json_loads(out, 0, NULL);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		json_t *code = doc ? json_object_get(doc, "code") : NULL;
		json_t *msg = doc ? json_object_get(doc, "msg") : NULL;
		json_t *details = doc ? json_object_get(doc, "details") : NULL;

		if (json_is_integer(code) && json_is_string(msg)) {
			r = cni_fail(ctx, (int)json_integer_value(code), "IPAM plugin %s: %s", type,
				     json_string_value(msg));
			if (json_is_string(details))
				snprintf(ctx->fail.details, sizeof(ctx->fail.details), "%s",
					 json_string_value(details));
			return r;
		}
		if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
			return cni_fail(ctx, RN_CNI_IPAM, "cannot execute IPAM plugin %s", path);
		return cni_fail(ctx, RN_CNI_IPAM,
				"IPAM plugin %s failed (%s %d) without an error document", type,
				WIFEXITED(status) ? "exit status" : "signal",
				WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	}
	if (ret_doc) {
		if (!doc)
			return cni_fail(ctx, RN_CNI_IPAM,
					"IPAM plugin %s printed no JSON result for %s", type,
					env->command);
		*ret_doc = TAKE_PTR(doc);
	}
	return 0;
}

int cni_delegate_check(struct cni_ctx *ctx)
{
	char path[PATH_MAX];

	return find_plugin(ctx, ctx->conf.ipam_type, path, sizeof(path));
}

bool cni_delegate_supports(struct cni_ctx *ctx, const char *version)
{
	struct cni_delegate_env env = { .command = "VERSION" };
	struct cni_ctx probe = *ctx; /* its failures stay out of ctx */
	_cleanup_json_ json_t *doc = NULL;
	char input[64];
	json_t *list, *v;
	size_t i;

	probe.fail.code = 0;
	snprintf(input, sizeof(input), "{\"cniVersion\":\"%s\"}", version);
	if (cni_delegate(&probe, &env, input, &doc) < 0)
		return false;
	list = json_object_get(doc, "supportedVersions");
	json_array_foreach (list, i, v) {
		if (json_is_string(v) && strcmp(json_string_value(v), version) == 0)
			return true;
	}
	return false;
}
