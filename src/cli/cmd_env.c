// SPDX-License-Identifier: Apache-2.0
/*
 * rdmans env: the NCCL settings for what a network namespace really holds,
 * as env lines, a sh script, nccl.conf or JSON; --explain says where each
 * value came from.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nccl_opts.h"
#include "rdmans.h"
#include "rdmans/pod_ask.h"
#include "rdmans/cleanup.h"
#include "rdmans/container.h"
#include "rdmans/discover.h"
#include "rdmans/nccl.h"
#include "rdmans/nccl_conf.h"
#include "rdmans/nccl_json.h"
#include "rdmans/nccl_node.h"
#include "rdmans/nccl_resolve.h"
#include "rdmans/nccl_rules.h"
#include "rdmans/nccl_version.h"
#include "rdmans/netns.h"
#include "rdmans/rootfs.h"
#include "rdmans/util.h"

static int env_usage(void)
{
	return rn_cli_usage(
		"usage: rdmans env [--netns TARGET | --container ID] [--format "
		"env|sh|nccl-conf|json] [--explain] [--profile NAME] [--set NAME=VALUE]... "
		"[--unset NAME]... [--family ipv4|ipv6|auto] [--nccl-version X.Y.Z] [--config "
		"FILE] "
		"[--cni-config FILE] [--merge NCCL_CONF] [--visible-devices LIST] "
		"[--device /dev/nvidiaN]... [--cdi nvidia.com/gpu=X]...; "
		"rdmans env profiles");
}

static json_t *jstr_or_null(const char *s)
{
	return s && *s ? json_string(s) : json_null();
}

static json_t *version_json(const struct rn_nccl_result *res)
{
	char v[32];

	if (!res->version.major)
		return json_null();
	snprintf(v, sizeof(v), "%u.%u.%u", res->version.major, res->version.minor,
		 res->version.patch);
	return json_string(v);
}

/*
 * The NCCL of the image the settings are for: the container's root
 * (/proc/PID/root) with --container, ours when run inside the pod itself;
 * with --netns there is no image to look at.
 */
static void find_version(pid_t pid, bool netns_only, struct rn_nccl_version *v, char *note,
			 size_t len)
{
	struct rn_error err = { 0 };
	char root[64] = "/";
	_cleanup_close_ int fd = -1;

	if (netns_only) {
		snprintf(note, len,
			 "not looked for: --netns names no image ('rdmans env --container ID' "
			 "looks in the container's, or give --nccl-version)");
		return;
	}
	if (pid > 0)
		snprintf(root, sizeof(root), "/proc/%d/root", (int)pid);
	fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 ||
	    rn_nccl_version_find(fd, pid > 0 ? NULL : getenv("LD_LIBRARY_PATH"), v, NULL, &err) < 0)
		snprintf(note, len, "%.400s", fd < 0 ? strerror(errno) : err.msg);
}

static json_t *result_json(const struct rn_nccl_result *res, const char *where)
{
	json_t *ports = json_array(), *settings = json_array(), *unset = json_array();
	json_t *warnings = json_array(), *env = json_object();

	for (size_t i = 0; i < res->n_ports; i++) {
		const struct rn_nccl_port_use *u = &res->ports[i];
		bool gid = u->gid_status == RN_NCCL_GID_FOUND;

		json_array_append_new(
			ports, json_pack("{s:s,s:i,s:b,s:o,s:o,s:o,s:o}", "dev", u->dev, "port",
					 (int)u->port, "used", u->used, "why_not",
					 jstr_or_null(u->used ? NULL : u->why_not), "netdev",
					 jstr_or_null(u->netdev), "gid_index",
					 gid ? json_integer(u->gid_index) : json_null(),
					 "gid_address", jstr_or_null(gid ? u->gid_addr : NULL)));
	}
	for (size_t i = 0; i < res->n; i++) {
		const struct rn_nccl_setting *s = &res->v[i];

		json_array_append_new(
			settings, json_pack("{s:s,s:s,s:s,s:s,s:o,s:o}", "name", s->name, "value",
					    s->value, "source", rn_nccl_source_name(s->source),
					    "origin", s->origin, "detail", jstr_or_null(s->detail),
					    "replaces", jstr_or_null(s->replaced)));
		json_object_set_new(env, s->name, json_string(s->value));
	}
	for (size_t i = 0; i < res->n_unset; i++)
		json_array_append_new(unset, json_pack("{s:s,s:s,s:s}", "name", res->unset[i].name,
						       "by", res->unset[i].origin, "was",
						       res->unset[i].replaced));
	for (size_t i = 0; i < res->n_warnings; i++)
		json_array_append_new(warnings, json_string(res->warnings[i]));
	return json_pack("{s:s,s:{s:s,s:s},s:{s:s,s:s},s:{s:o,s:s,s:s},s:o,s:o,s:o,s:o,s:o}",
			 "netns", where, "profile", "name", res->profile, "origin",
			 res->profile_origin, "family", "name",
			 res->family == AF_INET6 ? "ipv6" : "ipv4", "why", res->family_why,
			 "nccl_version", "version", version_json(res), "why", res->version_why,
			 "rule", rn_nccl_ver_class_desc(res->ver_class), "ports", ports, "settings",
			 settings, "unset", unset, "warnings", warnings, "env", env);
}

static int list_profiles(struct rn_cli *cli)
{
	const struct rn_nccl_profile *p;
	json_t *doc = json_array();

	for (size_t i = 0; (p = rn_nccl_profile_at(i)); i++) {
		json_t *env = json_object();

		if (!cli->json)
			printf("%s%s\n", i ? "\n" : "", p->name);
		if (!cli->json)
			printf("  %s\n", p->title);
		for (size_t j = 0; j < p->n_values; j++) {
			json_object_set_new(env, p->values[j].name,
					    json_string(p->values[j].value));
			if (!cli->json)
				printf("  %s=%s\n", p->values[j].name, p->values[j].value);
		}
		json_array_append_new(doc, json_pack("{s:s,s:s,s:o}", "name", p->name, "title",
						     p->title, "env", env));
	}
	if (cli->json)
		return rn_cli_print_json(cli, doc);
	json_decref(doc);
	return 0;
}

static int read_host_file(const char *path, char **ret, struct rn_error *err)
{
	return rn_read_regular(path, 1u << 20, "--merge file", ret, NULL, err);
}

int rn_cmd_env(struct rn_cli *cli)
{
	_cleanup_(nccl_opts_free) struct nccl_opts opts;
	_cleanup_nccl_node_ struct rn_nccl_node node = { 0 };
	_cleanup_nccl_result_ struct rn_nccl_result res = { 0 };
	_cleanup_free_ char *text = NULL, *existing = NULL;
	_cleanup_close_ int nsfd = -1;
	struct rn_nccl_request req = { 0 };
	_cleanup_(rn_pod_ask_free) struct rn_pod_ask ask = { 0 };
	struct rn_cli_gpus gpus;
	struct rn_error err = { 0 };
	const char *target = NULL, *container = NULL, *format = NULL, *merge = NULL, *a;
	enum rn_nccl_format fmt = RN_NCCL_FMT_ENV;
	bool explain = false, json = cli->json;
	char where[4200] = "the caller's netns", version_note[RN_NCCL_DETAIL_MAX] = "";
	struct rn_nccl_version version = { 0 };
	pid_t pid = 0;
	int r;

	nccl_opts_init(&opts);
	rn_cli_gpus_init(&gpus);
	if (rn_cli_flag(cli, "profiles"))
		return list_profiles(cli);
	(void)rn_cli_flag(cli, "show");
	while ((a = nccl_opts_next(cli, &opts, &r))) {
		if (strcmp(a, "--netns") == 0 || strcmp(a, "-n") == 0) {
			target = rn_cli_next(cli);
			if (!target)
				return env_usage();
		} else if (strcmp(a, "--container") == 0) {
			container = rn_cli_next(cli);
			if (!container)
				return env_usage();
		} else if (strcmp(a, "--format") == 0 || strcmp(a, "-f") == 0) {
			format = rn_cli_next(cli);
			if (!format)
				return env_usage();
		} else if (strcmp(a, "--merge") == 0) {
			merge = rn_cli_next(cli);
			if (!merge)
				return env_usage();
		} else if (strcmp(a, "--explain") == 0) {
			explain = true;
		} else if ((r = rn_cli_gpus_option(cli, a, &gpus)) != 0) {
			if (r != 1)
				return r;
			r = 0;
		} else {
			return rn_cli_usage("unexpected argument '%s' to 'env' (try 'rdmans help')",
					    a);
		}
	}
	if (r)
		return r;
	if (target && container)
		return rn_cli_usage("give --netns or --container, not both");
	if (format) {
		if (strcmp(format, "env") == 0)
			fmt = RN_NCCL_FMT_ENV;
		else if (strcmp(format, "sh") == 0)
			fmt = RN_NCCL_FMT_SH;
		else if (strcmp(format, "nccl-conf") == 0)
			fmt = RN_NCCL_FMT_CONF;
		else if (strcmp(format, "json") == 0)
			json = true;
		else
			return rn_cli_usage("--format must be env, sh, nccl-conf or json, not '%s'",
					    format);
		if (json && strcmp(format, "json") != 0)
			return rn_cli_usage("-j and --format %s do not go together", format);
	}
	if (merge && (json || fmt != RN_NCCL_FMT_CONF))
		return rn_cli_usage("--merge goes with --format nccl-conf");

	r = nccl_opts_load(&opts, &err);
	if (r < 0)
		return rn_cli_fail(&err);
	if (merge && read_host_file(merge, &existing, &err) < 0)
		return rn_cli_fail(&err);

	if (container) {
		r = rn_container_pid(container, &pid, &err);
		if (r < 0)
			return rn_cli_fail(&err);
		snprintf(where, sizeof(where), "the netns of container %s (PID %d)", container,
			 (int)pid);
		nsfd = rn_netns_open_pid(pid, &err);
	} else if (target) {
		nsfd = rn_netns_open_target(target, where, sizeof(where), &err);
	}
	if ((target || container) && nsfd < 0)
		return rn_cli_fail(&err);

	/* a container's GPUs narrow NCCL_IB_HCA to their nearest devices, as rdmans-hook does */
	ask.gpu_aligned = gpus.named;
	if (gpus.named && rn_pod_ask_gpus(&ask, &gpus.req, &err) < 0)
		return rn_cli_fail(&err);
	find_version(pid, target != NULL, &version, version_note, sizeof(version_note));
	r = rn_nccl_probe(nsfd, &node, &err);
	if (r == 0) {
		req.layers = opts.layers;
		req.n_layers = opts.n_layers;
		req.nccl_version = &version;
		req.nccl_version_note = version_note[0] ? version_note : NULL;
		req.gpus = ask.gpus;
		req.n_gpus = ask.n_gpus;
		r = rn_nccl_resolve(&node, &req, &res, &err);
	}
	if (r < 0) {
		rn_error_wrap(&err, "%s", where);
		return rn_cli_fail(&err);
	}

	if (json)
		return rn_cli_print_json(cli, result_json(&res, where));
	if (!explain)
		for (size_t i = 0; i < res.n_warnings; i++)
			fprintf(stderr, "rdmans: warning: %s\n", res.warnings[i]);
	if (merge)
		r = rn_nccl_conf_merge(&res, existing, "rdmans env --merge", &text, &err);
	else
		r = rn_nccl_render(&res, fmt, explain, &text, &err);
	if (r < 0)
		return rn_cli_fail(&err);
	fputs(text, stdout);
	return 0;
}
