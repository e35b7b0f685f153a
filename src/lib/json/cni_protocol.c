// SPDX-License-Identifier: Apache-2.0
/* The CNI protocol: environment, CNI_ARGS, versions, output, stdin (rdmans/cni_protocol.h). */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "rdmans/cleanup.h"
#include "rdmans/cni_protocol.h"
#include "rdmans/json_cleanup.h"
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

/* "0.3.0, 0.3.1, 0.4.0, 1.0.0 and 1.1.0": the versions from `oldest` on. */
static void version_list(int oldest, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < RN_ARRAY_SIZE(versions); i++) {
		if (versions[i].number < oldest)
			continue;
		n += (size_t)snprintf(buf + n, len - n, "%s%s",
				      !n				 ? ""
				      : i + 1 == RN_ARRAY_SIZE(versions) ? " and "
									 : ", ",
				      versions[i].name);
	}
}

int rn_cni_version_check(const char *version, int oldest, const char *plugin, struct rn_error *err)
{
	int number = rn_cni_version_parse(version);
	char list[128];

	if (number >= oldest)
		return number;
	version_list(oldest, list, sizeof(list));
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

/* ---- the skeleton ---- */

const char *rn_cni_json_type(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "an array";
	case JSON_STRING:
		return "a string";
	case JSON_INTEGER:
	case JSON_REAL:
		return "a number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "a boolean";
	default:
		return "null";
	}
}

int rn_cni_fail(struct rn_cni_failure *f, int code, const char *fmt, ...)
{
	va_list ap;

	if (f->code)
		return -1;
	f->code = code;
	va_start(ap, fmt);
	vsnprintf(f->msg, sizeof(f->msg), fmt, ap);
	va_end(ap);
	return -1;
}

int rn_cni_conf_decode(const char *text, size_t len, int oldest, const char *plugin,
		       json_t **ret_doc, const char **ret_version, int *ret_ver,
		       struct rn_cni_failure *f)
{
	_cleanup_json_ json_t *doc = NULL;
	struct rn_error err = { 0 };
	const char *version = "0.1.0"; /* libcni's reading of a configuration without one */
	json_error_t jerr;
	json_t *v;
	int ver;

	if (len == 0)
		return rn_cni_fail(f, CNI_ERR_DECODE,
				   "no network configuration on stdin (expected a JSON object)");
	doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!doc)
		return rn_cni_fail(f, CNI_ERR_DECODE,
				   "cannot decode the network configuration on stdin: %s (line %d, "
				   "column %d)",
				   jerr.text, jerr.line, jerr.column);
	if (!json_is_object(doc))
		return rn_cni_fail(f, CNI_ERR_DECODE,
				   "the network configuration must be a JSON object, not %s",
				   rn_cni_json_type(doc));
	v = json_object_get(doc, "cniVersion");
	if (v && (!json_is_string(v) || json_string_length(v) == 0))
		return rn_cni_fail(
			f, CNI_ERR_INVALID_CONFIG,
			"'cniVersion' must be a version string such as \"1.0.0\", not %s",
			json_is_string(v) ? "\"\"" : rn_cni_json_type(v));
	if (v)
		version = json_string_value(v);
	ver = rn_cni_version_check(version, oldest, plugin, &err);
	if (ver < 0)
		return v ? rn_cni_fail(f, CNI_ERR_INCOMPATIBLE, "%s", err.msg)
			 : rn_cni_fail(f, CNI_ERR_INCOMPATIBLE,
				       "the network configuration has no 'cniVersion', which "
				       "reads as 0.1.0: %s",
				       err.msg);
	*ret_doc = TAKE_PTR(doc);
	*ret_version = version;
	*ret_ver = ver;
	return 0;
}

static void about(const struct rn_cni_plugin *plugin)
{
	char list[128];

	version_list(plugin->oldest, list, sizeof(list));
	fprintf(stderr, "%s %s, a CNI plugin speaking CNI %s\n", plugin->name, RDMANS_VERSION,
		list);
}

static int read_config(struct rn_cni_call *call)
{
	struct rn_error err = { 0 };
	int r = rn_cni_read_input(STDIN_FILENO, RN_CNI_STDIN_MAX, "the network configuration",
				  &call->input, &call->input_len, &err);

	if (r == -EBADF) { /* no stdin at all: an empty configuration */
		call->input_len = 0;
		call->input = calloc(1, 1);
		return call->input ? 0 : rn_cni_fail(&call->fail, CNI_ERR_IO, "out of memory");
	}
	if (r < 0)
		return rn_cni_fail(&call->fail, r == -EFBIG ? CNI_ERR_DECODE : CNI_ERR_IO, "%s",
				   err.msg);
	while (call->input_len > 0 && strchr(" \t\r\n", call->input[call->input_len - 1]))
		call->input[--call->input_len] = '\0'; /* only white space reads as nothing */
	return 0;
}

/* ret_ran: whether the verb ran (a failure before it is the input's) */
static int dispatch(const struct rn_cni_plugin *plugin, void *data, struct rn_cni_call *call,
		    const char **ret_out_version, bool *ret_ran)
{
	static const char *const names[RN_CNI_VERBS] = {
		[RN_CNI_ADD] = "ADD",	    [RN_CNI_DEL] = "DEL", [RN_CNI_CHECK] = "CHECK",
		[RN_CNI_STATUS] = "STATUS", [RN_CNI_GC] = "GC",
	};
	const char *command = call->env.command;
	int (*fn)(struct rn_cni_call *, void *) = NULL;
	bool known = false;

	if (!command) {
		about(plugin);
		return rn_cni_fail(
			&call->fail, CNI_ERR_INVALID_ENV,
			"CNI_COMMAND is not set: %s is a CNI plugin, run by a container "
			"runtime with CNI_COMMAND=ADD|DEL|CHECK|STATUS|GC|VERSION and the "
			"network configuration on stdin (see %s(8))",
			plugin->name, plugin->name);
	}
	if (strcmp(command, "VERSION") == 0) {
		/* stdin is not read: VERSION needs nothing from it (as pkg/skel) */
		if (rn_cni_print_version(RN_CNI_VERSION_LATEST, plugin->oldest) < 0)
			return rn_cni_fail(&call->fail, CNI_ERR_IO, "cannot write to stdout");
		return 0;
	}
	for (size_t i = 0; i < RN_CNI_VERBS; i++)
		if (strcmp(command, names[i]) == 0) {
			known = true;
			fn = plugin->verbs[i];
		}
	if (!known)
		return rn_cni_fail(
			&call->fail, CNI_ERR_INVALID_ENV,
			"unknown CNI_COMMAND '%s' (ADD, DEL, CHECK, STATUS, GC or VERSION)",
			command);
	if (read_config(call) < 0 ||
	    rn_cni_conf_decode(call->input, call->input_len, plugin->oldest, plugin->name,
			       &call->doc, &call->version, &call->ver, &call->fail) < 0)
		return -1;
	*ret_out_version = call->version;
	if (strcmp(command, "CHECK") == 0 && call->ver < 40)
		return rn_cni_fail(
			&call->fail, CNI_ERR_INCOMPATIBLE,
			"CHECK needs cniVersion 0.4.0 or later (the configuration says %s)",
			call->version);
	if (plugin->prepare && plugin->prepare(call, data) < 0)
		return -1;
	if (!fn)
		return rn_cni_fail(&call->fail, CNI_ERR_INVALID_ENV, "%s does not implement %s",
				   plugin->name, command);
	*ret_ran = true;
	return fn(call, data);
}

int rn_cni_main(const struct rn_cni_plugin *plugin, void *data)
{
	struct rn_cni_call call = { 0 };
	const char *out_version = RN_CNI_VERSION_LATEST;
	const char *fired;
	bool ran = false;
	long writes;
	int r;

	(void)signal(SIGPIPE, SIG_IGN); /* a runtime that stops reading: EPIPE, not death */
	rn_cni_env_read(&call.env);
	r = dispatch(plugin, data, &call, &out_version, &ran);
	if (r < 0 && !ran && call.env.command && strcmp(call.env.command, "DEL") == 0 &&
	    plugin->del_refused)
		r = plugin->del_refused(&call, data);
	writes = rn_fault_io_count(&fired);
	if (writes >= 0 && getenv("RDMANS_FAULT_IO"))
		/* test builds: how many state/store writes this run made (tests/netns/io-faults.sh) */
		fprintf(stderr, "%s: fault injection: %s made %ld writes%s%s\n", plugin->name,
			call.env.command ? call.env.command : "-", writes,
			fired ? ", failed: " : "", fired ? fired : "");
	if (r < 0) {
		if (!call.fail.code)
			(void)rn_cni_fail(&call.fail, CNI_ERR_IO, "%s failed",
					  call.env.command ? call.env.command : "the call");
		if (plugin->log_failure)
			plugin->log_failure(&call, data);
		else
			fprintf(stderr, "%s: %s: %s%s%s\n", plugin->name,
				call.env.command ? call.env.command : "-", call.fail.msg,
				call.fail.details[0] ? ": " : "", call.fail.details);
		(void)rn_cni_print_error(out_version, call.fail.code, call.fail.msg,
					 call.fail.details);
	}
	if (call.doc)
		json_decref(call.doc);
	free_zeroed(call.input, call.input_len); /* it may hold an etcd password */
	return r < 0 ? 1 : 0;
}

void rn_cni_result_ip_version(json_t *ip, int ver, bool ipv6)
{
	if (ver < 100)
		json_object_set_new(ip, "version", json_string(ipv6 ? "6" : "4"));
}
