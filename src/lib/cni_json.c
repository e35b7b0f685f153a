// SPDX-License-Identifier: Apache-2.0
/* The CNI protocol: environment, CNI_ARGS, versions, output, stdin (rdmans/cni_json.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rdmans/cleanup.h"
#include "rdmans/cni_json.h"
#include "rdmans/util.h"

/* ---- environment ---- */

static const char *env(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

void rn_cni_env_read(struct rn_cni_env *ret)
{
	ret->command = env("CNI_COMMAND");
	ret->container_id = env("CNI_CONTAINERID");
	ret->netns = env("CNI_NETNS");
	ret->ifname = env("CNI_IFNAME");
	ret->args = env("CNI_ARGS");
	ret->path = env("CNI_PATH");
}

int rn_cni_env_require(const struct rn_cni_env *env, bool netns, const char *plugin,
		       struct rn_error *err)
{
	const struct {
		const char *name, *value;
		bool needed;
	} vars[] = {
		{ "CNI_CONTAINERID", env->container_id, true },
		{ "CNI_IFNAME", env->ifname, true },
		{ "CNI_NETNS", env->netns, netns },
	};

	for (size_t i = 0; i < RN_ARRAY_SIZE(vars); i++)
		if (vars[i].needed && !vars[i].value)
			return rn_error_set(err, EINVAL,
					    "%s is not set: %s is a CNI plugin, run by a "
					    "container runtime (CNI_COMMAND=%s needs %s)",
					    vars[i].name, plugin, env->command ? env->command : "",
					    vars[i].name);
	return 0;
}

/* ---- CNI_ARGS ---- */

int rn_cni_args_parse(const char *args, struct rn_cni_args *ret, struct rn_error *err)
{
	const struct {
		const char *key;
		char *dst;
		size_t size;
	} known[] = {
		{ "K8S_POD_NAMESPACE", ret->pod_namespace, sizeof(ret->pod_namespace) },
		{ "K8S_POD_NAME", ret->pod_name, sizeof(ret->pod_name) },
		{ "K8S_POD_UID", ret->pod_uid, sizeof(ret->pod_uid) },
		{ "K8S_POD_INFRA_CONTAINER_ID", ret->infra_id, sizeof(ret->infra_id) },
	};

	memset(ret, 0, sizeof(*ret));
	for (const char *kv = args; kv && *kv;) {
		size_t len = strcspn(kv, ";"), klen;
		const char *eq = memchr(kv, '=', len), *value;

		if (len == 0) { /* ";;": an empty pair */
			kv++;
			continue;
		}
		if (!eq || eq == kv)
			return rn_error_set(err, EINVAL,
					    "CNI_ARGS is malformed at '%.*s' (expected "
					    "KEY=VALUE;KEY=VALUE)",
					    (int)(len > 256 ? 256 : len), kv);
		klen = (size_t)(eq - kv);
		value = eq + 1;
		for (size_t i = 0; i < RN_ARRAY_SIZE(known); i++) {
			size_t vlen = len - klen - 1;

			if (strlen(known[i].key) != klen || memcmp(kv, known[i].key, klen) != 0)
				continue;
			if (vlen >= known[i].size || memchr(value, '\n', vlen))
				return rn_error_set(err, EINVAL,
						    "CNI_ARGS: %s is too long or not one line (at "
						    "most %zu bytes)",
						    known[i].key, known[i].size - 1);
			memcpy(known[i].dst, value, vlen);
			known[i].dst[vlen] = '\0';
		}
		kv += len + (kv[len] == ';');
	}
	return 0;
}

/* ---- versions ---- */

static const struct {
	const char *name;
	int number;
} versions[] = {
	{ "0.1.0", 10 },
	{ "0.2.0", 20 },
	{ "0.3.0", 30 },
	{ "0.3.1", 31 },
	{ "0.4.0", 40 },
	{ "1.0.0", 100 },
	{ RN_CNI_VERSION_LATEST, 110 },
};

int rn_cni_version_parse(const char *version)
{
	for (size_t i = 0; version && i < RN_ARRAY_SIZE(versions); i++)
		if (strcmp(version, versions[i].name) == 0)
			return versions[i].number;
	return -1;
}

int rn_cni_version_check(const char *version, int oldest, const char *plugin, struct rn_error *err)
{
	int number = rn_cni_version_parse(version);
	char list[128] = "";
	size_t n = 0;

	if (number >= oldest)
		return number;
	for (size_t i = 0; i < RN_ARRAY_SIZE(versions); i++) {
		if (versions[i].number < oldest)
			continue;
		n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s",
				      !n				 ? ""
				      : i + 1 == RN_ARRAY_SIZE(versions) ? " and "
									 : ", ",
				      versions[i].name);
	}
	return rn_error_set(err, EPROTONOSUPPORT,
			    "CNI version %.64s is not supported by %s (it supports %s)",
			    version ? version : "(none)", plugin, list);
}

/* ---- output ---- */

int rn_cni_print(json_t *doc)
{
	int r;

	if (!doc)
		return -1;
	r = json_dumpf(doc, stdout, JSON_COMPACT | JSON_ENSURE_ASCII);
	json_decref(doc);
	if (r == 0)
		putchar('\n');
	return fflush(stdout) == 0 && r == 0 ? 0 : -1;
}

int rn_cni_print_version(const char *version, int oldest)
{
	json_t *doc = json_pack("{s:s,s:[]}", "cniVersion", version, "supportedVersions");
	json_t *list = json_object_get(doc, "supportedVersions");

	for (size_t i = 0; list && i < RN_ARRAY_SIZE(versions); i++)
		if (versions[i].number >= oldest)
			json_array_append_new(list, json_string(versions[i].name));
	return rn_cni_print(doc);
}

int rn_cni_print_error(const char *version, int code, const char *msg, const char *details)
{
	json_t *doc = json_pack("{s:s,s:i,s:s}", "cniVersion", version, "code", code, "msg", msg);

	if (doc && details && *details)
		json_object_set_new(doc, "details", json_string(details));
	return rn_cni_print(doc);
}

/* ---- input ---- */

static void free_zeroed(char *buf, size_t len)
{
	if (buf)
		explicit_bzero(buf, len);
	free(buf);
}

int rn_cni_read_input(int fd, size_t max, const char *what, char **ret, size_t *ret_len,
		      struct rn_error *err)
{
	char *buf = NULL;
	size_t len = 0, cap = 0; /* buf holds cap + 1 bytes (the NUL) */
	int r;

	for (;;) {
		ssize_t n;

		if (len == cap) {
			size_t grown = cap ? cap * 2 : 16384;
			char *p;

			if (grown > max + 1)
				grown = max + 1;
			p = malloc(grown + 1);
			if (!p) {
				r = rn_error_set(err, ENOMEM, "out of memory");
				goto fail;
			}
			if (len)
				memcpy(p, buf, len);
			free_zeroed(buf, len);
			buf = p;
			cap = grown;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = rn_error_errno(err, errno, "cannot read %s on stdin", what);
			goto fail;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > max) {
			r = max % (1024 * 1024) == 0
				    ? rn_error_set(err, EFBIG, "%s on stdin is larger than %zu MiB",
						   what, max / (1024 * 1024))
				    : rn_error_set(err, EFBIG,
						   "%s on stdin is larger than %zu bytes", what,
						   max);
			goto fail;
		}
		if (rn_json_complete(buf, len))
			break; /* a runtime that keeps stdin open cannot hang us */
	}
	buf[len] = '\0';
	*ret = buf;
	*ret_len = len;
	return 0;
fail:
	free_zeroed(buf, len);
	return r;
}
