// SPDX-License-Identifier: Apache-2.0
/*
 * rdmans cdi generate: a CDI spec (kind rdmans.io/rdma) with one device per
 * RDMA device and "all". Each carries the device's /dev/infiniband/uverbsN
 * and a createRuntime hook running rdmans-hook, which moves the device into
 * the pod's netns and writes the address-dependent values (GID index) into
 * /etc/nccl.conf; the spec's env carries the values known before any pod
 * exists. containerd (no hooks.d) gets the move and PID 1's env this way.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nccl_opts.h"
#include "rdmans.h"
#include "rdmans/cleanup.h"
#include "rdmans/devnodes.h"
#include "rdmans/nccl.h"
#include "rdmans/rootfs.h"

#ifndef RDMANS_HOOK_PATH
#define RDMANS_HOOK_PATH "/usr/libexec/rdmans/rdmans-hook"
#endif

/* The spec version declared: hooks, deviceNodes and env are all v0.3.0 features. */
#define CDI_VERSION "0.6.0"
#define CDI_KIND "rdmans.io/rdma"

static int cdi_usage(void)
{
	return rn_cli_usage("usage: rdmans cdi generate [--profile NAME] [--set NAME=VALUE]... "
			    "[--unset NAME]... [--config FILE] [--cni-config FILE] [--addr-range "
			    "CIDR] [--hook PATH] [--output FILE]");
}

static json_t *node_json(const struct rn_devnode *n)
{
	return json_pack("{s:s,s:s,s:i,s:i,s:s}", "path", n->path, "type", "c", "major",
			 (int)n->major, "minor", (int)n->minor, "permissions", "rw");
}

/* The hook resolves with what this command was given: the same profile and files. */
struct hook_args {
	const char *path;
	const char *profile, *config, *cni_config;
};

static json_t *hook_json(const struct hook_args *h, const struct rn_devnode *nodes, size_t n,
			 const char *only)
{
	json_t *args = json_array();

	json_array_append_new(args, json_string("rdmans-hook"));
	if (h->profile) {
		json_array_append_new(args, json_string("--profile"));
		json_array_append_new(args, json_string(h->profile));
	}
	if (h->config) {
		json_array_append_new(args, json_string("--config"));
		json_array_append_new(args, json_string(h->config));
	}
	if (h->cni_config) {
		json_array_append_new(args, json_string("--cni-config"));
		json_array_append_new(args, json_string(h->cni_config));
	}
	for (size_t i = 0; i < n; i++) {
		if (only && strcmp(nodes[i].dev, only) != 0)
			continue;
		json_array_append_new(args, json_string("--device"));
		json_array_append_new(args, json_string(nodes[i].dev));
	}
	return json_pack("{s:s,s:s,s:o}", "hookName", "createRuntime", "path", h->path, "args",
			 args);
}

/* NCCL_IB_HCA for "all": every device, always exact names (NCCL takes prefixes otherwise). */
static json_t *all_hca_env(const struct rn_devnode *nodes, size_t n)
{
	char value[RN_NCCL_VALUE_MAX] = "";
	size_t used = 0;

	for (size_t i = 0; i < n; i++) {
		used += (size_t)snprintf(value + used,
					 used < sizeof(value) ? sizeof(value) - used : 0, "%s%s",
					 i ? "," : "", nodes[i].dev);
	}
	if (used >= sizeof(value))
		return NULL;
	return json_pack("s++", "NCCL_IB_HCA=", "=", value);
}

static int write_output(const char *output, const char *text, struct rn_error *err)
{
	char abs[PATH_MAX + 1], cwd[PATH_MAX];
	_cleanup_close_ int rootfd = -1;

	if (output[0] != '/') {
		if (!getcwd(cwd, sizeof(cwd)))
			return rn_error_errno(err, errno, "cannot find the current directory");
		if ((size_t)snprintf(abs, sizeof(abs), "%s/%s", cwd, output) >= sizeof(abs))
			return rn_error_set(err, ENAMETOOLONG, "output path %s is too long",
					    output);
	} else {
		snprintf(abs, sizeof(abs), "%s", output);
	}
	rootfd = rn_rootfs_open("/", err);
	if (rootfd < 0)
		return rootfd;
	return rn_rootfs_write(rootfd, abs, text, 0644, err);
}

static int cdi_generate(struct rn_cli *cli)
{
	_cleanup_(nccl_opts_free) struct nccl_opts opts;
	_cleanup_nccl_node_ struct rn_nccl_node node = { 0 };
	_cleanup_nccl_result_ struct rn_nccl_result res = { 0 };
	_cleanup_free_ struct rn_devnode *nodes = NULL;
	_cleanup_json_ json_t *spec = NULL;
	_cleanup_free_ char *text = NULL;
	struct rn_nccl_request req = { .node_static = true };
	struct hook_args hargs = { 0 };
	struct rn_devnode cm;
	struct rn_error err = { 0 };
	const char *hook = RDMANS_HOOK_PATH, *output = NULL;
	json_t *env, *edits, *devices, *all_nodes, *all_env;
	size_t n = 0;
	bool have_cm;
	int r;

	nccl_opts_init(&opts);
	while (rn_cli_peek(cli)) {
		const char *a = rn_cli_next(cli);

		r = nccl_opts_take(cli, a, &opts);
		if (r > 1)
			return r;
		if (r == 1)
			continue;
		if (strcmp(a, "--addr-range") == 0) {
			req.addr_range = rn_cli_next(cli);
			if (!req.addr_range)
				return cdi_usage();
		} else if (strcmp(a, "--hook") == 0) {
			hook = rn_cli_next(cli);
			if (!hook)
				return cdi_usage();
			if (hook[0] != '/')
				return rn_cli_usage("--hook needs an absolute path (CDI requires "
						    "one), not '%s'",
						    hook);
		} else if (strcmp(a, "--output") == 0 || strcmp(a, "-o") == 0) {
			output = rn_cli_next(cli);
			if (!output)
				return cdi_usage();
		} else {
			return rn_cli_usage("unexpected argument '%s' to 'cdi generate'", a);
		}
	}
	hargs.config = opts.config;
	hargs.cni_config = opts.cni_config;
	if ((hargs.config && hargs.config[0] != '/') ||
	    (hargs.cni_config && hargs.cni_config[0] != '/'))
		return rn_cli_usage("--config and --cni-config need absolute paths here: the hook "
				    "reads them too");
	r = nccl_opts_load(&opts, &err);
	if (r < 0)
		return rn_cli_fail(&err);
	hargs.path = hook;
	/* the command line's layer is the last one */
	if (opts.layers[opts.n_layers - 1].profile[0])
		hargs.profile = opts.layers[opts.n_layers - 1].profile;

	/* The host's view only picks the "auto" profile: devices in pods are not seen there. */
	if (rn_nccl_node_from_sysfs(&node, &err) < 0)
		rn_nccl_node_free(&node);
	req.layers = opts.layers;
	req.n_layers = opts.n_layers;
	r = rn_nccl_resolve(&node, &req, &res, &err);
	if (r < 0)
		return rn_cli_fail(&err);

	r = rn_devnodes_uverbs(&nodes, &n, &err);
	if (r < 0)
		return rn_cli_fail(&err);
	if (n == 0) {
		rn_error_set(&err, ENODEV,
			     "no RDMA device has a /dev/infiniband/uverbs node ('modprobe "
			     "ib_uverbs'; 'rdmans dev --all-netns' lists the devices)");
		return rn_cli_fail(&err);
	}
	have_cm = rn_devnodes_rdma_cm(&cm, &err) == 0;
	if (!have_cm)
		fprintf(stderr, "rdmans: warning: %s\n", err.msg);

	env = json_array();
	for (size_t i = 0; i < res.n; i++)
		json_array_append_new(env, json_pack("s++", res.v[i].name, "=", res.v[i].value));
	edits = json_pack("{s:o}", "env", env);
	if (have_cm)
		json_object_set_new(edits, "deviceNodes", json_pack("[o]", node_json(&cm)));

	devices = json_array();
	all_nodes = json_array();
	for (size_t i = 0; i < n; i++) {
		json_array_append_new(all_nodes, node_json(&nodes[i]));
		json_array_append_new(
			devices, json_pack("{s:s,s:{s:[o],s:[o]}}", "name", nodes[i].dev,
					   "containerEdits", "deviceNodes", node_json(&nodes[i]),
					   "hooks", hook_json(&hargs, nodes, n, nodes[i].dev)));
	}
	all_env = all_hca_env(nodes, n);
	if (!all_env) {
		json_decref(all_nodes);
		json_decref(devices);
		json_decref(edits);
		rn_error_set(&err, E2BIG, "the list of RDMA devices does not fit NCCL_IB_HCA");
		return rn_cli_fail(&err);
	}
	json_array_append_new(devices,
			      json_pack("{s:s,s:{s:[o],s:o,s:[o]}}", "name", "all",
					"containerEdits", "env", all_env, "deviceNodes", all_nodes,
					"hooks", hook_json(&hargs, nodes, n, NULL)));
	spec = json_pack("{s:s,s:s,s:o,s:o}", "cdiVersion", CDI_VERSION, "kind", CDI_KIND,
			 "containerEdits", edits, "devices", devices);
	if (!spec) {
		rn_error_set(&err, ENOMEM, "cannot build the CDI spec");
		return rn_cli_fail(&err);
	}
	for (size_t i = 0; i < res.n_warnings; i++)
		fprintf(stderr, "rdmans: warning: %s\n", res.warnings[i]);
	text = json_dumps(spec, JSON_PRESERVE_ORDER | JSON_INDENT(2));
	if (!text) {
		rn_error_set(&err, ENOMEM, "cannot print the CDI spec");
		return rn_cli_fail(&err);
	}
	if (!output) {
		puts(text);
		return 0;
	}
	{
		size_t len = strlen(text);
		_cleanup_free_ char *withnl = malloc(len + 2);

		if (!withnl) {
			rn_error_set(&err, ENOMEM, "out of memory");
			return rn_cli_fail(&err);
		}
		memcpy(withnl, text, len);
		memcpy(withnl + len, "\n", 2);
		if (write_output(output, withnl, &err) < 0)
			return rn_cli_fail(&err);
	}
	fprintf(stderr, "rdmans: wrote %s: %zu device%s and \"all\" (kind %s)\n", output, n,
		n == 1 ? "" : "s", CDI_KIND);
	return 0;
}

int rn_cmd_cdi(struct rn_cli *cli)
{
	static const struct rn_cmd cmds[] = {
		{ "generate", cdi_generate },
		{ NULL, NULL },
	};

	if (!rn_cli_peek(cli))
		return cdi_usage();
	return rn_cli_dispatch(cli, cmds, "cdi");
}
