// SPDX-License-Identifier: Apache-2.0
/*
 * rdmans cdi generate: a CDI spec (kind rdmans.io/rdma) with one device per
 * RDMA device and "all". Each carries the device's /dev/infiniband/uverbsN
 * and a createRuntime hook running rdmans-hook, which moves the device into
 * the pod's netns and writes the pod-dependent values (HCA, GID index,
 * interface) into /etc/nccl.conf. "all" is the pod's own devices: the hook
 * takes those its network attachment gave it (rdmans-hook --all), never
 * another pod's or one whose netdev stayed on the host. The spec's env
 * carries only what is true for every pod on the node: NCCL lets the
 * environment beat /etc/nccl.conf. containerd (no hooks.d) gets the move
 * and PID 1's env this way.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "nccl_opts.h"
#include "rdmans.h"
#include "rdmans/cleanup.h"
#include "rdmans/devnodes.h"
#include "rdmans/gid.h"
#include "rdmans/nccl.h"
#include "rdmans/nccl_node.h"
#include "rdmans/nccl_resolve.h"
#include "rdmans/nccl_rules.h"
#include "rdmans/rootfs.h"

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

/* The hook for one device, or (dev NULL) for "all": the pod's own devices. */
static json_t *hook_json(const struct hook_args *h, const char *dev)
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
	json_array_append_new(args, json_string(dev ? "--device" : "--all"));
	if (dev)
		json_array_append_new(args, json_string(dev));
	return json_pack("{s:s,s:s,s:o}", "hookName", "createRuntime", "path", h->path, "args",
			 args);
}

/* every deviceNodes array of the spec's edits (top level and each device) */
static bool any_node_has(json_t *spec, const char *key)
{
	json_t *dev, *node;
	size_t i, j;

	json_array_foreach (json_object_get(json_object_get(spec, "containerEdits"), "deviceNodes"),
			    j, node)
		if (json_object_get(node, key))
			return true;
	json_array_foreach (json_object_get(spec, "devices"), i, dev)
		json_array_foreach (
			json_object_get(json_object_get(dev, "containerEdits"), "deviceNodes"), j,
			node)
			if (json_object_get(node, key))
				return true;
	return false;
}

static bool any_edit_has(json_t *spec, const char *key)
{
	json_t *dev;
	size_t i;

	if (json_object_get(json_object_get(spec, "containerEdits"), key))
		return true;
	json_array_foreach (json_object_get(spec, "devices"), i, dev)
		if (json_object_get(json_object_get(dev, "containerEdits"), key))
			return true;
	return false;
}

static bool any_mount_typed(json_t *spec)
{
	json_t *dev, *m;
	size_t i, j;

	json_array_foreach (json_object_get(json_object_get(spec, "containerEdits"), "mounts"), j,
			    m)
		if (json_object_get(m, "type"))
			return true;
	json_array_foreach (json_object_get(spec, "devices"), i, dev)
		json_array_foreach (
			json_object_get(json_object_get(dev, "containerEdits"), "mounts"), j, m)
			if (json_object_get(m, "type"))
				return true;
	return false;
}

/*
 * The lowest cdiVersion whose features the spec uses, as the CDI library
 * computes it (container-device-interface pkg/cdi/version.go,
 * MinimumRequiredVersion): a runtime refuses a version newer than its CDI
 * library knows (podman 4.3 and containerd 1.7 ship 0.5.x: up to 0.5.0),
 * so the spec says no more than it needs. 0.3.0 is the earliest the library
 * accepts; hooks, deviceNodes and env are all 0.3.0 features.
 */
static const char *cdi_min_version(json_t *spec)
{
	const char *kind = json_string_value(json_object_get(spec, "kind"));
	const char *class = kind ? strchr(kind, '/') : NULL;
	json_t *dev;
	size_t i;
	bool digit_name = false,
	     annotations = json_object_size(json_object_get(spec, "annotations"));

	json_array_foreach (json_object_get(spec, "devices"), i, dev) {
		const char *name = json_string_value(json_object_get(dev, "name"));

		digit_name = digit_name || (name && name[0] >= '0' && name[0] <= '9');
		annotations = annotations || json_object_size(json_object_get(dev, "annotations"));
	}
	if (any_edit_has(spec, "netDevices"))
		return "1.1.0";
	if (any_edit_has(spec, "intelRdt") || any_edit_has(spec, "additionalGids"))
		return "0.7.0";
	if (annotations || (class && strchr(class + 1, '.')))
		return "0.6.0";
	if (digit_name || any_node_has(spec, "hostPath"))
		return "0.5.0";
	if (any_mount_typed(spec))
		return "0.4.0";
	return "0.3.0";
}

/* Writes text and a newline to output (relative: to the current directory). */
static int write_output(const char *output, const char *text, struct rn_error *err)
{
	char abs[PATH_MAX + 1], cwd[PATH_MAX];
	_cleanup_close_ int rootfd = -1;
	_cleanup_free_ char *withnl = NULL;

	if (output[0] != '/') {
		if (!getcwd(cwd, sizeof(cwd)))
			return rn_error_errno(err, errno, "cannot find the current directory");
		if ((size_t)snprintf(abs, sizeof(abs), "%s/%s", cwd, output) >= sizeof(abs))
			return rn_error_set(err, ENAMETOOLONG, "output path %s is too long",
					    output);
	} else {
		snprintf(abs, sizeof(abs), "%s", output);
	}
	if (asprintf(&withnl, "%s\n", text) < 0) {
		withnl = NULL;
		return rn_error_set(err, ENOMEM, "out of memory");
	}
	rootfd = rn_rootfs_open("/", err);
	if (rootfd < 0)
		return rootfd;
	return rn_rootfs_write(rootfd, abs, withnl, 0644, err);
}

/*
 * The command line: the NCCL options into opts (their files loaded), the
 * rest into req, h and *output. 0, or the exit code (already printed).
 */
static int cdi_options(struct rn_cli *cli, struct nccl_opts *opts, struct rn_nccl_request *req,
		       struct hook_args *h, const char **output)
{
	struct rn_error err = { 0 };
	const char *a;
	int r;

	h->path = RDMANS_HOOK_PATH;
	while ((a = nccl_opts_next(cli, opts, &r))) {
		if (strcmp(a, "--addr-range") == 0) {
			req->addr_range = rn_cli_next(cli);
			if (!req->addr_range)
				return cdi_usage();
		} else if (strcmp(a, "--hook") == 0) {
			h->path = rn_cli_next(cli);
			if (!h->path)
				return cdi_usage();
			if (h->path[0] != '/')
				return rn_cli_usage("--hook needs an absolute path (CDI requires "
						    "one), not '%s'",
						    h->path);
		} else if (strcmp(a, "--output") == 0 || strcmp(a, "-o") == 0) {
			*output = rn_cli_next(cli);
			if (!*output)
				return cdi_usage();
		} else {
			return rn_cli_usage("unexpected argument '%s' to 'cdi generate'", a);
		}
	}
	if (r)
		return r;
	h->config = opts->config;
	h->cni_config = opts->cni_config;
	if ((h->config && h->config[0] != '/') || (h->cni_config && h->cni_config[0] != '/'))
		return rn_cli_usage("--config and --cni-config need absolute paths here: the hook "
				    "reads them too");
	for (size_t i = 0; i < opts->option.n; i++)
		if (!opts->option.kv[i].unset && rn_nccl_pod_dependent(opts->option.kv[i].name))
			return rn_cli_usage(
				"--set %s: its value depends on the pod, and a CDI spec's env "
				"would beat every pod's own /etc/nccl.conf; put it in --config "
				"FILE (rdmans-hook reads it per pod) or in the pod's "
				"rdmans.io/nccl "
				"annotation",
				opts->option.kv[i].name);
	r = nccl_opts_load(opts, &err);
	if (r < 0)
		return rn_cli_fail(&err);
	/* the command line's layer is the last one */
	if (opts->layers[opts->n_layers - 1].profile[0])
		h->profile = opts->layers[opts->n_layers - 1].profile;
	req->layers = opts->layers;
	req->n_layers = opts->n_layers;
	return 0;
}

/* The spec: the node-wide env, one device per uverbs node and "all"; NULL when out of memory. */
static json_t *cdi_spec(const struct rn_nccl_result *res, const struct rn_devnode *nodes, size_t n,
			const struct rn_devnode *cm, const struct hook_args *h)
{
	json_t *env, *edits, *devices, *all_nodes, *spec;

	env = json_array();
	for (size_t i = 0; i < res->n; i++)
		json_array_append_new(env, json_pack("s++", res->v[i].name, "=", res->v[i].value));
	edits = json_pack("{s:o}", "env", env);
	if (cm)
		json_object_set_new(edits, "deviceNodes", json_pack("[o]", node_json(cm)));

	devices = json_array();
	all_nodes = json_array();
	for (size_t i = 0; i < n; i++) {
		json_array_append_new(all_nodes, node_json(&nodes[i]));
		json_array_append_new(devices, json_pack("{s:s,s:{s:[o],s:[o]}}", "name",
							 nodes[i].dev, "containerEdits",
							 "deviceNodes", node_json(&nodes[i]),
							 "hooks", hook_json(h, nodes[i].dev)));
	}
	/*
	 * "all": the spec is written before any pod exists, so it lists every
	 * node; in exclusive mode the kernel opens a uverbs node only for a
	 * process in its device's netns, so a pod can use the nodes of the
	 * devices its hook gave it and no other.
	 */
	json_array_append_new(devices,
			      json_pack("{s:s,s:{s:o,s:[o]}}", "name", "all", "containerEdits",
					"deviceNodes", all_nodes, "hooks", hook_json(h, NULL)));
	spec = json_pack("{s:s,s:s,s:o,s:o}", "cdiVersion", "", "kind", CDI_KIND, "containerEdits",
			 edits, "devices", devices);
	if (spec)
		json_object_set_new(spec, "cdiVersion", json_string(cdi_min_version(spec)));
	return spec;
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
	const char *output = NULL;
	size_t n = 0;
	bool have_cm;
	int r;

	nccl_opts_init(&opts);
	r = cdi_options(cli, &opts, &req, &hargs, &output);
	if (r)
		return r;

	/* The host's view only picks the "auto" profile: devices in pods are not seen there. */
	if (rn_nccl_node_from_sysfs(&node, &err) < 0)
		rn_nccl_node_free(&node);
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

	spec = cdi_spec(&res, nodes, n, have_cm ? &cm : NULL, &hargs);
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
	if (write_output(output, text, &err) < 0)
		return rn_cli_fail(&err);
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
