// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rdmans/cleanup.h"
#include "rdmans/discover.h"
#include "rdmans/move.h"
#include "rdmans/nccl.h"
#include "rdmans/nccl_json.h"
#include "rdmans/nccl_node.h"
#include "rdmans/nccl_resolve.h"
#include "rdmans/nccl_rules.h"
#include "rdmans/netns.h"
#include "rdmans/pod_ask.h"
#include "rdmans/rails.h"
#include "rdmans/rdma_nl.h"
#include "rdmans/util.h"

void rn_pod_ask_free(struct rn_pod_ask *a)
{
	for (size_t i = 0; i < a->n_devices; i++)
		free(a->devices[i]);
	a->n_devices = 0;
	free(a->gpus);
	a->gpus = NULL;
	a->n_gpus = 0;
}

int rn_pod_ask_add_devices(struct rn_pod_ask *a, const char *list, const char *from,
			   struct rn_error *err)
{
	_cleanup_free_ char *copy = strdup(list);
	char *save = NULL;

	if (!copy)
		return rn_error_set(err, ENOMEM, "out of memory");
	for (char *t = strtok_r(copy, ", ", &save); t; t = strtok_r(NULL, ", ", &save)) {
		bool dup = false;
		int r;

		if (strcmp(t, "all") == 0) {
			a->all = true;
			continue;
		}
		if (strcmp(t, "gpu-aligned") == 0) {
			a->gpu_aligned = true;
			continue;
		}
		r = rn_name_check("RDMA device", t, RN_RDMA_NAME_MAX - 1, err);
		if (r < 0)
			return rn_error_wrap(err, "%s", from);
		for (size_t i = 0; i < a->n_devices; i++)
			dup = dup || strcmp(a->devices[i], t) == 0;
		if (dup)
			continue;
		if (a->n_devices == RN_POD_MAX_DEVICES)
			return rn_error_set(err, E2BIG, "%s: more than %d RDMA devices", from,
					    RN_POD_MAX_DEVICES);
		a->devices[a->n_devices] = strdup(t);
		if (!a->devices[a->n_devices])
			return rn_error_set(err, ENOMEM, "out of memory");
		a->n_devices++;
	}
	return 0;
}

int rn_pod_ask_from_annotations(struct rn_pod_ask *a, rn_annotation_fn get, void *ctx,
				struct rn_error *err)
{
	const char *devices = get(RN_ANN_DEVICES, ctx);

	a->nccl = get(RN_ANN_NCCL, ctx);
	a->profile = get(RN_ANN_PROFILE, ctx);
	a->conf = get(RN_ANN_CONF, ctx);
	if (devices && rn_pod_ask_add_devices(a, devices, "annotation " RN_ANN_DEVICES, err) < 0)
		return -err->code;
	if (a->conf && strcmp(a->conf, "off") != 0 && strcmp(a->conf, "on") != 0 &&
	    strcmp(a->conf, "sockets") != 0)
		return rn_error_set(err, EINVAL,
				    "annotation " RN_ANN_CONF
				    " must be \"on\", \"off\" or \"sockets\", not \"%.64s\"",
				    a->conf);
	return 0;
}

bool rn_pod_ask_any(const struct rn_pod_ask *a)
{
	return a->n_devices || a->all || a->gpu_aligned || a->nccl || a->profile;
}

bool rn_pod_ask_moves(const struct rn_pod_ask *a)
{
	return a->n_devices || a->all || a->gpu_aligned;
}

bool rn_pod_ask_conf_off(const struct rn_pod_ask *a)
{
	return a->conf && strcmp(a->conf, "off") == 0;
}

bool rn_pod_ask_sockets(const struct rn_pod_ask *a)
{
	return a->conf && strcmp(a->conf, "sockets") == 0;
}

/* ---- devices ---- */

/* "all": the devices the pod's network attachment gave it join a->devices. */
static int add_pod_devices(struct rn_pod_ask *a, int nsfd, struct rn_error *err)
{
	char names[RN_POD_MAX_DEVICES][RN_RDMA_NAME_MAX];
	size_t n = 0, in_pod = 0;
	int r;

	r = rn_discover_pod(nsfd, names, RN_POD_MAX_DEVICES, &n, &in_pod, err);
	if (r < 0)
		return rn_error_wrap(err, "rdmans.io/rdma=all");
	if (n == 0 && a->n_devices == 0)
		return rn_error_set(
			err, ENODEV,
			"rdmans.io/rdma=all asks for the pod's RDMA devices, but its network "
			"namespace holds none and none of its netdevs has one on the host: its "
			"network attachment gave it no RDMA (attach a network of type rdma-netns, "
			"or host-device/SR-IOV on an RDMA NIC; or name the device: "
			"rdmans.io/rdma=DEV)");
	for (size_t i = 0; i < n; i++) {
		r = rn_pod_ask_add_devices(a, names[i], "rdmans.io/rdma=all", err);
		if (r < 0)
			return r;
	}
	return 0;
}

int rn_pod_ask_gpus(struct rn_pod_ask *a, const struct rn_gpu_request *req, struct rn_error *err)
{
	_cleanup_free_ struct rn_gpu *gpus = NULL;
	bool sel[RN_GPU_MAX] = { false };
	size_t n = 0;
	int r;

	free(a->gpus);
	a->gpus = NULL;
	a->n_gpus = 0;
	a->gpus_note[0] = '\0';
	r = rn_gpu_list(NULL, &gpus, &n, err);
	if (r == 0 && n)
		r = rn_gpu_select(gpus, n, req, sel, err);
	if (r < 0) {
		if (a->gpu_aligned)
			return rn_error_wrap(err, "annotation " RN_ANN_DEVICES ": gpu-aligned");
		(void)rn_snprintf(a->gpus_note, sizeof(a->gpus_note), "%s", err->msg);
		rn_error_clear(err);
		return 0;
	}
	a->gpus = calloc(n ? n : 1, sizeof(*a->gpus));
	if (!a->gpus)
		return rn_error_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		if (!sel[i])
			continue;
		r = rn_sysfs_pci_get(gpus[i].bdf, &a->gpus[a->n_gpus], err);
		if (r < 0)
			return rn_error_wrap(err, "GPU %s (/dev/nvidia%u) of the NVIDIA driver",
					     gpus[i].bdf, gpus[i].minor);
		a->n_gpus++;
	}
	return 0;
}

struct pod_rail_devs {
	struct rn_rail_dev *devs;
	size_t n, max;
};

/* The RDMA devices this sysfs shows, with their PCI functions (run in a netns, or here). */
static int collect_rail_devs(void *arg, struct rn_error *err)
{
	struct pod_rail_devs *c = arg;
	_cleanup_free_ struct rn_sysfs_rdma_dev *devs = NULL;
	size_t n = 0;
	int r = rn_sysfs_rdma_list(&devs, &n, err);

	for (size_t i = 0; r == 0 && i < n && c->n < c->max; i++)
		rn_rails_dev_read(&c->devs[c->n++], devs[i].name, devs[i].pci_bdf);
	return r;
}

/* gpu-aligned: the device nearest to each GPU, of the pod's and the host's, joins a->devices. */
static int add_gpu_aligned(struct rn_pod_ask *a, int nsfd, struct rn_error *err)
{
	/* (on the heap: a device's PCI path makes each entry most of a kilobyte) */
	_cleanup_free_ struct rn_rail_dev *devs = NULL;
	_cleanup_free_ struct rn_rail *rails = NULL;
	struct pod_rail_devs c = { NULL, 0, 2 * RN_POD_MAX_DEVICES };
	int r;

	/* a container without GPUs (the pod's sandbox, a sidecar) brings no rail */
	if (!a->n_gpus)
		return 0;
	c.devs = devs = calloc(c.max, sizeof(*devs));
	if (!devs)
		return rn_error_set(err, ENOMEM, "out of memory");
	r = rn_netns_run_sysfs(nsfd, collect_rail_devs, &c, err);
	if (r == 0)
		r = rn_netns_run_here_sysfs(collect_rail_devs, &c, err);
	if (r < 0)
		return rn_error_wrap(err, "gpu-aligned");
	rails = calloc(a->n_gpus, sizeof(*rails));
	if (!rails)
		return rn_error_set(err, ENOMEM, "out of memory");
	r = rn_rails_choose(a->gpus, a->n_gpus, devs, c.n, rails, err);
	if (r < 0)
		return rn_error_wrap(err, "annotation " RN_ANN_DEVICES ": gpu-aligned");
	for (size_t k = 0; k < a->n_gpus; k++) {
		r = rn_pod_ask_add_devices(a, devs[rails[k].dev].name, "gpu-aligned", err);
		if (r < 0)
			return r;
	}
	return 0;
}

int rn_pod_ask_move(struct rn_pod_ask *a, int nsfd, const char *ns_desc,
		    char (*moved)[RN_RDMA_NAME_MAX], size_t max, size_t *n_moved,
		    struct rn_error *err)
{
	_cleanup_rdma_devs_ struct rn_rdma_devs here = { 0 };
	int r;

	*n_moved = 0;
	if (a->all) {
		r = add_pod_devices(a, nsfd, err);
		if (r < 0)
			return r;
	}
	if (a->gpu_aligned) {
		r = add_gpu_aligned(a, nsfd, err);
		if (r < 0)
			return r;
	}
	r = rn_rdma_dump_in(nsfd, &here, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < a->n_devices; i++) {
		struct rn_move_request req = { .dev = a->devices[i],
					       .target_nsfd = nsfd,
					       .target_desc = ns_desc,
					       .host_only = true };
		struct rn_move_result res;

		if (rn_rdma_devs_get(&here, a->devices[i], NULL))
			continue; /* moved by an earlier container of the pod, or a restart */
		r = rn_move(&req, &res, err);
		if (r == -EALREADY) {
			rn_error_clear(err);
			continue;
		}
		if (r < 0)
			return r;
		if (moved && *n_moved < max)
			snprintf(moved[*n_moved], RN_RDMA_NAME_MAX, "%s", a->devices[i]);
		(*n_moved)++;
	}
	return 0;
}

/* ---- settings ---- */

int rn_pod_ask_layers(const struct rn_pod_ask *a, const struct rn_pod_sources *src,
		      struct rn_nccl_layer layers[RN_POD_MAX_LAYERS], size_t *n,
		      struct rn_error *err)
{
	char path[PATH_MAX];
	int r;

	*n = 0;
	snprintf(path, sizeof(path), "%s%s", src->config ? "" : rn_config_root(),
		 src->config ? src->config : RN_NCCL_CONFIG);
	if (src->config || access(path, F_OK) == 0) {
		rn_nccl_layer_init(&layers[*n], RN_NCCL_SRC_CONFIG, path);
		r = rn_nccl_layer_from_file(&layers[(*n)++], path, false, err);
		if (r < 0)
			return r;
	}
	if (src->cni_config) {
		rn_nccl_layer_init(&layers[*n], RN_NCCL_SRC_CNI, src->cni_config);
		r = rn_nccl_layer_from_file(&layers[(*n)++], src->cni_config, true, err);
		if (r < 0)
			return r;
	}
	if (src->profile) {
		/* the node's choice (hooks.d, CDI spec): a pod's annotations beat it */
		rn_nccl_layer_init(&layers[*n], RN_NCCL_SRC_CONFIG, "--profile");
		r = rn_nccl_layer_set_profile(&layers[(*n)++], src->profile, err);
		if (r < 0)
			return r;
	}
	if (a->nccl) {
		rn_nccl_layer_init(&layers[*n], RN_NCCL_SRC_ANNOTATION, RN_ANN_NCCL);
		r = rn_nccl_layer_from_json(&layers[(*n)++], a->nccl, err);
		if (r < 0)
			return r;
	}
	if (a->profile) {
		rn_nccl_layer_init(&layers[*n], RN_NCCL_SRC_ANNOTATION, RN_ANN_PROFILE);
		r = rn_nccl_layer_set_profile(&layers[(*n)++], a->profile, err);
		if (r < 0)
			return r;
	}
	return 0;
}

static bool settled(const struct rn_pod_ask *a, const struct rn_nccl_node *node,
		    const struct rn_nccl_result *res)
{
	/* every device asked for is seen, and no used RoCE port is waiting for its GID */
	for (size_t d = 0; d < a->n_devices; d++) {
		bool seen = false;

		for (size_t i = 0; i < node->n_ports; i++)
			seen = seen || strcmp(node->ports[i].dev, a->devices[d]) == 0;
		if (!seen)
			return false;
	}
	for (size_t i = 0; i < res->n_ports; i++)
		if (res->ports[i].used && res->ports[i].gid_status == RN_NCCL_GID_NO_MATCH)
			return false;
	return true;
}

int rn_pod_ask_resolve(const struct rn_pod_ask *a, int nsfd, const struct rn_nccl_layer *layers,
		       size_t n_layers, const struct rn_nccl_version *version,
		       const char *version_note, int patience_ms, struct rn_nccl_result *out,
		       struct rn_error *err)
{
	struct rn_nccl_request req = { .layers = layers, .n_layers = n_layers };
	long deadline = rn_now_ms() + patience_ms;
	int r;

	req.nccl_version = version;
	req.nccl_version_note = version_note;
	req.sockets_ok = rn_pod_ask_sockets(a);
	req.sockets_origin = "annotation " RN_ANN_CONF;
	req.gpus = a->gpus;
	req.n_gpus = a->n_gpus;

	for (;;) {
		_cleanup_nccl_node_ struct rn_nccl_node node = { 0 };

		rn_nccl_result_free(out);
		rn_error_clear(err);
		r = rn_nccl_probe(nsfd, &node, err);
		if (r == 0)
			r = rn_nccl_resolve(&node, &req, out, err);
		if (r < 0 && r != -ENODEV)
			return r;
		if (r == 0 && settled(a, &node, out)) {
			if (a->gpus_note[0] &&
			    rn_nccl_result_warn(out,
						"NCCL_IB_HCA is not narrowed to the container's "
						"GPUs: %s",
						a->gpus_note) < 0)
				return rn_error_set(err, ENOMEM, "out of memory");
			return 0;
		}
		if (rn_now_ms() >= deadline)
			break;
		usleep(50 * 1000);
	}
	if (r == -ENODEV)
		rn_strappend(err->msg, sizeof(err->msg),
			     ". Set the annotation " RN_ANN_CONF
			     ": \"sockets\" to start it with NCCL over sockets "
			     "(NCCL_IB_DISABLE=1 and the profile's other settings), or \"off\" "
			     "to write no NCCL settings");
	return r;
}
