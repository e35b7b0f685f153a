// SPDX-License-Identifier: Apache-2.0
/*
 * rdmans-hook: an OCI hook (createRuntime; prestart on older runtimes).
 *
 * The runtime gives the container's state on stdin ({ociVersion, id, status,
 * pid, bundle, annotations}); the bundle's config.json names the rootfs.
 * When the annotations (or --device/--all, from a CDI spec) ask for it, the hook
 *  1. moves the RDMA devices asked for into the container's netns, unless
 *     they are there already (several containers of a pod, restarts);
 *     "all" is the pod's own devices: those in its netns, and those whose
 *     netdev's PCI function has a netdev there (rn_discover_pod());
 *  2. resolves the NCCL settings from what the netns now holds;
 *  3. writes /etc/nccl.conf (merged with the image's own) and
 *     /etc/profile.d/rdmans-nccl.sh through the rootfs, every path resolved
 *     inside it (openat2 RESOLVE_IN_ROOT): at this stage /proc/PID/root is
 *     still the host's root, and an image's symlinks must not lead there.
 * With rdmans.io/soft-roce: NETDEV (podman pods on netavark, which runs no
 * CNI plugin of ours) the precreate stage first makes an rxe device on the
 * pod's NETDEV inside the pod (shared RDMA netns mode, a kernel whose rxe
 * keeps its sockets per netns) and adds its device nodes to the config, so
 * that the runtime creates them and lets them open; the device goes with
 * NETDEV when the pod's network is torn down. The createRuntime stage finds
 * it there (every container of the pod, restarts) and writes nccl.conf.
 * Without such annotations it does nothing. It refuses a container that
 * shares the host's netns. Any failure is one line on stderr and exit 1,
 * which makes the runtime fail the container's creation.
 *
 * With --stage precreate (podman's extension stage, oci-hooks(5)) the
 * runtime gives the OCI config itself on stdin and takes what the hook
 * prints as the config to run: the hook moves the devices asked for into
 * the netns the config names (linux.namespaces, type network, path), resolves
 * the settings there and prints the config with them added to process.env,
 * so that PID 1 has them in its environment (rn_oci_config_add_env(): one
 * insertion, every other byte as it came; a variable the config sets
 * already wins). Nothing is printed unless the whole config is ready.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include "config.h"
#include "hook.h"
#include "rdmans/attach.h"
#include "rdmans/attach_soft_roce.h"
#include "rdmans/cleanup.h"
#include "rdmans/cni_protocol.h"
#include "rdmans/discover.h"
#include "rdmans/nccl.h"
#include "rdmans/nccl_conf.h"
#include "rdmans/nccl_json.h"
#include "rdmans/nccl_version.h"
#include "rdmans/netns.h"
#include "rdmans/oci_config_json.h"
#include "rdmans/rootfs.h"
#include "rdmans/util.h"

/* One line on stderr, naming the stage or the container when known, and the
 * same line to syslog: crun (1.28) and podman's precreate stage drop a hook's
 * stderr and say only "error executing hook", so the node's log (journald on
 * /dev/log) is where a user finds the cause. */
static void say(const struct hook *h, int priority, const char *what, const char *msg)
{
	char line[2048];

	if (h->oci)
		snprintf(line, sizeof(line), "precreate: %s%s", what, msg);
	else if (h->id[0])
		snprintf(line, sizeof(line), "container %s: %s%s", h->id, what, msg);
	else
		snprintf(line, sizeof(line), "%s%s", what, msg);
	fprintf(stderr, "rdmans-hook: %s\n", line);
	openlog("rdmans-hook", LOG_PID, LOG_DAEMON);
	syslog(priority, "%s", line);
	closelog();
}

static int fail(const struct hook *h, const char *msg)
{
	say(h, LOG_ERR, "", msg);
	return 1;
}

static int fail_err(const struct hook *h, const struct rn_error *err)
{
	return fail(h, err->msg[0] ? err->msg : strerror(err->code));
}

/* ---- settings ---- */

/* The image's LD_LIBRARY_PATH (config.json process.env), or NULL. */
static const char *image_ld_library_path(const struct hook *h)
{
	json_t *env = json_object_get(json_object_get(h->config_json, "process"), "env");
	size_t i;
	json_t *v;

	if (h->oci)
		return rn_oci_config_env_get(h->oci, "LD_LIBRARY_PATH");
	json_array_foreach (env, i, v)
		if (json_is_string(v) && strncmp(json_string_value(v), "LD_LIBRARY_PATH=", 16) == 0)
			return json_string_value(v) + 16;
	return NULL;
}

/* The NCCL the image holds (what to write depends on its version), or a note why unknown. */
static void image_nccl(const struct hook *h, struct rn_nccl_version *v, char *note, size_t len)
{
	struct rn_error err = { 0 };
	_cleanup_close_ int rootfd = rn_rootfs_open(h->rootfs, &err);

	if (rootfd < 0 || rn_nccl_version_find(rootfd, image_ld_library_path(h), v, NULL, &err) < 0)
		snprintf(note, len, "%.400s", err.msg);
}

static int resolve(struct hook *h, int nsfd, const struct rn_nccl_layer *layers, size_t n,
		   int patience_ms, struct rn_nccl_result *out, struct rn_error *err)
{
	char note[RN_NCCL_DETAIL_MAX] = "";
	struct rn_nccl_version version = { 0 };

	image_nccl(h, &version, note, sizeof(note));
	return rn_pod_ask_resolve(&h->ask, nsfd, layers, n, &version, note[0] ? note : NULL,
				  patience_ms, out, err);
}

#define MAX_GPU_NAMES 64

/*
 * The container's GPUs as its config gives them (the NVIDIA Container
 * Toolkit's three ways): /dev/nvidiaN in linux.devices, NVIDIA_VISIBLE_DEVICES
 * in process.env, and CDI names in the cdi.k8s.io/ annotations.
 */
static int container_gpus(struct hook *h, struct rn_error *err)
{
	const json_t *doc = h->oci ? (const json_t *)rn_oci_config_doc(h->oci) : h->config_json;
	json_t *devices = json_object_get(json_object_get(doc, "linux"), "devices");
	json_t *env = json_object_get(json_object_get(doc, "process"), "env");
	json_t *annotations = json_object_get(doc, "annotations"), *v;
	const char *nodes[MAX_GPU_NAMES], *cdi[MAX_GPU_NAMES], *key;
	struct rn_gpu_request req = { nodes, 0, NULL, cdi, 0 };
	char lists[MAX_GPU_NAMES][256];
	size_t i, n_lists = 0;

	json_array_foreach (devices, i, v) {
		const char *path = json_string_value(json_object_get(v, "path"));

		if (path && strncmp(path, "/dev/nvidia", 11) == 0 && req.n_devnodes < MAX_GPU_NAMES)
			nodes[req.n_devnodes++] = path;
	}
	json_array_foreach (env, i, v)
		if (json_is_string(v) &&
		    strncmp(json_string_value(v), "NVIDIA_VISIBLE_DEVICES=", 23) == 0)
			req.visible_devices = json_string_value(v) + 23;
	json_object_foreach (annotations, key, v) {
		char *save = NULL;

		if (strncmp(key, "cdi.k8s.io/", 11) != 0 || !json_is_string(v) ||
		    n_lists == MAX_GPU_NAMES)
			continue;
		(void)rn_snprintf(lists[n_lists], sizeof(lists[n_lists]), "%s",
				  json_string_value(v));
		for (char *t = strtok_r(lists[n_lists++], ",", &save);
		     t && req.n_cdi < MAX_GPU_NAMES; t = strtok_r(NULL, ",", &save))
			if (strncmp(t, "nvidia.com/gpu=", 15) == 0)
				cdi[req.n_cdi++] = t;
	}
	return rn_pod_ask_gpus(&h->ask, &req, err);
}

static const char *annotation_of(const char *key, void *hook)
{
	return hook_annotation(hook, key);
}

/* Before anything changes: a container whose files cannot be written is refused untouched. */
static int check_writable(const struct hook *h, struct rn_error *err)
{
	if (h->readonly)
		return rn_error_set(
			err, EROFS,
			"its root filesystem is read-only (root.readonly in config.json), so "
			"rdmans-hook cannot write " NCCL_CONF
			" there; NCCL in it would run without the resolved settings. Set the "
			"annotation " RN_ANN_CONF
			": \"off\" to start it anyway (then give NCCL its "
			"settings through the environment: 'rdmans env --netns PID' prints them)");
	return 0;
}

static int write_files(struct hook *h, const struct rn_nccl_result *res, struct rn_error *err)
{
	_cleanup_free_ char *existing = NULL, *conf = NULL, *sh = NULL;
	_cleanup_close_ int rootfd = -1;
	char header[512];
	int r;

	rootfd = rn_rootfs_open(h->rootfs, err);
	if (rootfd < 0)
		return rootfd;
	r = rn_rootfs_read(rootfd, NCCL_CONF, MAX_NCCL_CONF_BYTES, &existing, err);
	if (r < 0 && r != -ENOENT)
		return r;
	rn_error_clear(err);
	snprintf(header, sizeof(header), "written by rdmans-hook for container %.200s", h->id);
	r = rn_nccl_conf_merge(res, existing, header, &conf, err);
	if (r == 0)
		r = rn_nccl_render(res, RN_NCCL_FMT_SH, false, &sh, err);
	if (r == 0)
		r = rn_rootfs_write(rootfd, NCCL_CONF, conf, 0644, err);
	if (r == 0)
		r = rn_rootfs_write(rootfd, PROFILE_SCRIPT, sh, 0644, err);
	if (r == -EROFS)
		rn_error_wrap(err, "set the annotation " RN_ANN_CONF
				   ": \"off\" to start it without the file");
	return r;
}

/* ---- precreate ---- */

/* --stage precreate: the config on stdin, and what the hook needs of it. */
static int read_precreate(struct hook *h, struct rn_error *err)
{
	_cleanup_free_ char *input = NULL;
	size_t len = 0;
	bool readonly = false;
	const char *root;
	int r;

	r = rn_cni_read_input(STDIN_FILENO, MAX_CONFIG_BYTES, "the OCI config", &input, &len, err);
	if (r == 0)
		r = rn_oci_config_parse(input, len, MAX_CONFIG_BYTES, &h->oci, err);
	if (r < 0)
		return rn_error_wrap(err, "precreate (podman gives the OCI config on stdin)");
	root = rn_oci_config_root(h->oci, &readonly);
	h->readonly = readonly;
	if ((size_t)snprintf(h->rootfs, sizeof(h->rootfs), "%s", root) >= sizeof(h->rootfs))
		return rn_error_set(err, ENAMETOOLONG, "root.path in the OCI config is too long");
	return 0;
}

/*
 * Prints the config with res's settings added to process.env (res NULL: as it
 * came); a setting the config has already is left to it, and said. Nothing
 * reaches stdout unless the whole config is ready.
 */
static int precreate_print(const struct hook *h, const struct rn_nccl_result *res,
			   struct rn_error *err)
{
	size_t n = res ? res->n : 0, len = 0;
	_cleanup_free_ struct rn_oci_env_add *add = calloc(n + 1, sizeof(*add));
	_cleanup_free_ char *out = NULL;
	int r;

	if (!add)
		return rn_error_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		add[i].name = res->v[i].name;
		add[i].value = res->v[i].value;
	}
	r = rn_oci_config_add_env(h->oci, add, n, &out, &len, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++)
		if (add[i].kept)
			fprintf(stderr,
				"rdmans-hook: precreate: process.env sets %s=%s already: it wins "
				"over rdmans' value %s (%s)\n",
				add[i].name, add[i].kept, add[i].value, res->v[i].origin);
	r = rn_write_all(STDOUT_FILENO, out, len);
	if (r < 0)
		return rn_error_errno(err, -r, "cannot write the OCI config to stdout");
	return 0;
}

/*
 * The container's netns: the PID's (createRuntime, prestart) or the path in
 * the config (precreate). 0 with *ret_nsfd -1 when the config asks for a new,
 * empty one: nothing is there yet to resolve.
 */
static int open_netns(struct hook *h, int *ret_nsfd, struct rn_error *err)
{
	const char *path = NULL;

	*ret_nsfd = -1;
	if (!h->oci) {
		snprintf(h->ns_desc, sizeof(h->ns_desc), "the netns of PID %d", (int)h->pid);
		*ret_nsfd = rn_netns_open_pid(h->pid, err);
		return *ret_nsfd < 0 ? *ret_nsfd : 0;
	}
	switch (rn_oci_config_netns(h->oci, &path)) {
	case RN_OCI_NETNS_NEW:
		return 0;
	case RN_OCI_NETNS_PATH:
		snprintf(h->ns_desc, sizeof(h->ns_desc), "netns %s", path);
		*ret_nsfd = rn_netns_open_path(path, err);
		return *ret_nsfd < 0 ? *ret_nsfd : 0;
	case RN_OCI_NETNS_NONE:
	default:
		/* no network namespace of its own: the runtime's, the host's */
		snprintf(h->ns_desc, sizeof(h->ns_desc), "the host's netns");
		*ret_nsfd = rn_netns_open_host(err);
		return *ret_nsfd < 0 ? *ret_nsfd : 0;
	}
}

/* ---- soft-RoCE ---- */

/*
 * rdmans.io/soft-roce: NETDEV. The rxe device's name follows the pod's netns
 * (its inode), so every container of the pod finds the same one. Precreate
 * makes it when it is not there and adds its device nodes to the config
 * (nodes); createRuntime only finds it: the nodes a container gets are fixed
 * before that stage. It joins the devices asked for (in the netns already:
 * no move).
 */
static int soft_roce(struct hook *h, int nsfd, bool precreate, struct rn_oci_dev_add nodes[2],
		     size_t *n_nodes, struct rn_error *err)
{
	_cleanup_rdma_ struct rn_rdma *rdma = NULL;
	_cleanup_free_ struct rn_devnode *uverbs = NULL;
	struct rn_rdma_dev dev = { 0 };
	char name[RN_RDMA_NAME_MAX], ino[32];
	size_t n = 0;
	struct stat st;
	int r;

	*n_nodes = 0;
	r = rn_name_check("netdev", h->soft_roce, 15, err);
	if (r < 0)
		return rn_error_wrap(err, "annotation " ANN_SOFT_ROCE);
	if (fstat(nsfd, &st) < 0)
		return rn_error_errno(err, errno, "cannot stat %s", h->ns_desc);
	snprintf(ino, sizeof(ino), "%" PRIuMAX, (uintmax_t)st.st_ino);
	r = rn_attach_soft_roce_name(ino, h->soft_roce, name, sizeof(name), err);
	if (r == 0)
		r = rn_rdma_open(&rdma, err);
	if (r < 0)
		return r;
	r = rn_rdma_dev_find(rdma, name, &dev, err);
	rn_rdma_dev_free(&dev);
	if (r == -ENODEV && !precreate)
		return rn_error_set(
			err, ENODEV,
			"annotation " ANN_SOFT_ROCE ": no rxe device %s on %s in %s: the "
			"precreate stage makes it and gives the container its device nodes, and "
			"podman runs it only when told where rdmans-hook's precreate JSON is "
			"(hooks_dir in containers.conf, or --hooks-dir; rdmans-hook(8), "
			"PRECREATE)",
			name, h->soft_roce, h->ns_desc);
	if (r == -ENODEV) {
		rn_error_clear(err);
		r = rn_attach_soft_roce_add(nsfd, name, h->soft_roce, err);
		if (r < 0)
			return rn_error_wrap(err, "annotation " ANN_SOFT_ROCE ": %s", h->soft_roce);
	}
	if (r < 0)
		return r;
	r = rn_pod_ask_add_devices(&h->ask, name, "annotation " ANN_SOFT_ROCE, err);
	if (r < 0 || !precreate)
		return r;
	r = rn_devnodes_uverbs(&uverbs, &n, err);
	for (size_t i = 0; r == 0 && i < n; i++) {
		if (strcmp(uverbs[i].dev, name) != 0)
			continue;
		snprintf(h->soft_roce_node, sizeof(h->soft_roce_node), "%s", uverbs[i].path);
		nodes[(*n_nodes)++] = (struct rn_oci_dev_add){ h->soft_roce_node, uverbs[i].major,
							       uverbs[i].minor, false };
		break;
	}
	if (r == 0 && *n_nodes == 0)
		return rn_error_set(err, ENODEV,
				    "rxe device %s has no uverbs device node (is ib_uverbs "
				    "loaded?)",
				    name);
	if (r == 0)
		r = rn_devnodes_rdma_cm(&h->rdma_cm, err);
	if (r < 0)
		return r;
	nodes[(*n_nodes)++] = (struct rn_oci_dev_add){ h->rdma_cm.path, h->rdma_cm.major,
						       h->rdma_cm.minor, false };
	return 0;
}

/* precreate: h->oci becomes the config with nodes[0..n) added to it. */
static int precreate_add_devices(struct hook *h, struct rn_oci_dev_add *nodes, size_t n,
				 struct rn_error *err)
{
	_cleanup_free_ char *text = NULL;
	struct rn_oci_config *next = NULL;
	size_t len = 0;
	int r;

	r = rn_oci_config_add_devices(h->oci, nodes, n, &text, &len, err);
	if (r == 0)
		r = rn_oci_config_parse(text, len, MAX_CONFIG_BYTES + 4096 * n, &next, err);
	if (r < 0)
		return r;
	rn_oci_config_free(h->oci);
	h->oci = next;
	return 0;
}

/* ---- main ---- */

static void usage(FILE *out)
{
	fputs("Usage: rdmans-hook [--stage createRuntime|prestart|precreate] [--device DEV]... "
	      "[--all] [--profile NAME] [--config FILE] [--cni-config FILE]\n"
	      "An OCI hook (createRuntime or prestart): reads the container's state on stdin.\n"
	      "--stage precreate (podman): reads the OCI config on stdin and prints it with the "
	      "NCCL settings in process.env.\n"
	      "Annotations: " RN_ANN_DEVICES ": DEV[,DEV...]|all  " RN_ANN_NCCL
	      ": {\"profile\":..., "
	      "\"env\":{...}}\n"
	      "             " RN_ANN_PROFILE ": NAME  " RN_ANN_CONF
	      ": on|off|sockets  " ANN_SOFT_ROCE ": NETDEV\n"
	      "See rdmans-hook(8).\n",
	      out);
}

static int run(struct hook *h, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "device", required_argument, NULL, 'd' },
		{ "all", no_argument, NULL, 'a' },
		{ "profile", required_argument, NULL, 'p' },
		{ "config", required_argument, NULL, 'c' },
		{ "cni-config", required_argument, NULL, 'n' },
		{ "stage", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct rn_nccl_layer layers[RN_POD_MAX_LAYERS];
	size_t n_layers = 0;
	_cleanup_nccl_result_ struct rn_nccl_result res = { 0 };
	_cleanup_free_ char *input = NULL;
	size_t input_len = 0;
	_cleanup_close_ int nsfd = -1, hostfd = -1;
	struct rn_error err = { 0 };
	struct rn_oci_dev_add nodes[2];
	size_t n_moved = 0, n_nodes = 0;
	bool files, precreate = false;
	int c, r;

	while ((c = getopt_long(argc, argv, "d:ap:c:n:s:hV", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			if (rn_pod_ask_add_devices(&h->ask, optarg, "--device", &err) < 0)
				return fail_err(h, &err);
			break;
		case 'a':
			h->ask.all = true;
			break;
		case 'p':
			if (rn_nccl_profile_check(optarg, &err) < 0)
				return fail_err(h, &err);
			h->sources.profile = optarg;
			break;
		case 'c':
			h->sources.config = optarg;
			break;
		case 'n':
			h->sources.cni_config = optarg;
			break;
		case 's':
			precreate = strcmp(optarg, "precreate") == 0;
			if (!precreate && strcmp(optarg, "createRuntime") != 0 &&
			    strcmp(optarg, "prestart") != 0)
				return fail(h,
					    "--stage takes createRuntime, prestart or precreate");
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("rdmans-hook %s\n", RDMANS_VERSION);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc)
		return fail(h,
			    "unexpected argument (the state comes on stdin; see rdmans-hook(8))");

	if (precreate)
		r = read_precreate(h, &err);
	else if ((r = rn_cni_read_input(STDIN_FILENO, MAX_STATE_BYTES, "the OCI state", &input,
					&input_len, &err)) == 0 &&
		 (r = hook_parse_state(h, input, &err)) == 0)
		r = hook_read_config(h, &err);
	if (r < 0)
		return fail_err(h, &err);

	h->sandbox =
		(hook_annotation(h, "io.kubernetes.cri-o.ContainerType") &&
		 strcmp(hook_annotation(h, "io.kubernetes.cri-o.ContainerType"), "sandbox") == 0) ||
		(hook_annotation(h, "io.kubernetes.cri.container-type") &&
		 strcmp(hook_annotation(h, "io.kubernetes.cri.container-type"), "sandbox") == 0);
	if (rn_pod_ask_from_annotations(&h->ask, annotation_of, h, &err) < 0)
		return fail_err(h, &err);
	files = !h->sandbox && !rn_pod_ask_conf_off(&h->ask);
	h->soft_roce = hook_annotation(h, ANN_SOFT_ROCE);

	/* Nothing asked for: not our container (precreate: the config goes back as it came). */
	if (!rn_pod_ask_any(&h->ask) && !h->soft_roce)
		return precreate && precreate_print(h, NULL, &err) < 0 ? fail_err(h, &err) : 0;

	if (open_netns(h, &nsfd, &err) < 0)
		return fail_err(h, &err);
	if (nsfd < 0) {
		/* precreate, and the runtime makes the netns later: createRuntime does the work */
		fprintf(stderr,
			"rdmans-hook: precreate: the OCI config asks for a new network "
			"namespace, which does not exist yet: no NCCL settings in process.env "
			"(the createRuntime hook writes them to /etc/nccl.conf)\n");
		return precreate_print(h, NULL, &err) < 0 ? fail_err(h, &err) : 0;
	}
	hostfd = rn_netns_open_host(&err);
	if (hostfd < 0)
		return fail_err(h, &err);
	r = rn_netns_same(nsfd, hostfd, &err);
	if (r < 0)
		return fail_err(h, &err);
	if (r == 1)
		return fail(h, "it shares the host's network namespace (hostNetwork, or no "
			       "network namespace in its config.json): rdmans-hook neither moves "
			       "RDMA devices into it nor writes NCCL settings for it; remove the "
			       "rdmans.io annotations or give it a network namespace");

	r = rn_pod_ask_layers(&h->ask, &h->sources, layers, &n_layers, &err);
	if (r == 0 && !h->sandbox)
		r = container_gpus(h, &err);
	if (r == 0 && files)
		r = check_writable(h, &err);
	if (r == 0 && h->soft_roce)
		r = soft_roce(h, nsfd, precreate, nodes, &n_nodes, &err);
	if (r == 0 && n_nodes)
		r = precreate_add_devices(h, nodes, n_nodes, &err);
	if (r == 0 && rn_pod_ask_moves(&h->ask))
		r = rn_pod_ask_move(&h->ask, nsfd, h->ns_desc, NULL, 0, &n_moved, &err);
	/* a device that came in, or was made, fills its GID table from the netdev's addresses */
	if (r == 0 && !h->sandbox && (files || precreate))
		r = resolve(h, nsfd, layers, n_layers, n_moved || h->soft_roce ? 3000 : 0, &res,
			    &err);
	if (r == 0 && precreate)
		r = precreate_print(h, h->sandbox ? NULL : &res, &err);
	else if (r == 0 && files)
		r = write_files(h, &res, &err);
	for (size_t i = 0; r == 0 && files && res.sockets && i < res.n_warnings; i++)
		say(h, LOG_WARNING, "warning: ", res.warnings[i]);
	for (size_t i = 0; i < n_layers; i++)
		rn_nccl_layer_free(&layers[i]);
	if (r < 0)
		return fail_err(h, &err);
	return 0;
}

int hook_main(int argc, char **argv)
{
	struct hook h = { 0 };
	int rc = run(&h, argc, argv);

	hook_free(&h);
	return rc;
}
