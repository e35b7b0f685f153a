// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmans.h"
#include "rdmans/sysfs_pci.h"
#include "rdmans/gpu.h"
#include "rdmans/rails.h"
#include "rdmans/discover.h"
#include "rdmans/rdma_nl.h"
#include "rdmans/util.h"

static const char *node_type_name(uint8_t t)
{
	static const char *const names[] = { "unknown", "ca",	 "switch",    "router",
					     "rnic",	"usnic", "usnic_udp", "unspecified" };

	return t < RN_ARRAY_SIZE(names) ? names[t] : "unknown";
}

/* As iproute2 prints GUIDs: four groups of 16 bits, most significant first. */
static void format_guid(uint64_t guid, char *buf, size_t len)
{
	snprintf(buf, len, "%04x:%04x:%04x:%04x", (unsigned)(guid >> 48) & 0xffff,
		 (unsigned)(guid >> 32) & 0xffff, (unsigned)(guid >> 16) & 0xffff,
		 (unsigned)guid & 0xffff);
}

static json_t *netns_json(const struct rn_netns_entry *ns)
{
	return json_pack("{s:b,s:o,s:o,s:s}", "host", ns->is_host, "name",
			 ns->name[0] ? json_string(ns->name) : json_null(), "pid",
			 ns->pid ? json_integer(ns->pid) : json_null(), "path", ns->path);
}

static json_t *dev_json(const struct rn_rdma_dev *d, const struct rn_netns_entry *ns)
{
	char guid[24], sys_guid[24];
	json_t *ports = json_array();
	json_t *o;

	format_guid(d->node_guid, guid, sizeof(guid));
	format_guid(d->sys_image_guid, sys_guid, sizeof(sys_guid));
	for (size_t i = 0; i < d->nports; i++) {
		const struct rn_rdma_port *p = &d->ports[i];

		json_array_append_new(
			ports,
			json_pack("{s:i,s:s,s:s,s:o,s:o}", "port", (int)p->index, "state",
				  rn_rdma_port_state_name(p->state), "physical_state",
				  rn_rdma_port_phys_state_name(p->phys_state), "netdev",
				  p->ndev_name[0] ? json_string(p->ndev_name) : json_null(),
				  "netdev_index",
				  p->ndev_index ? json_integer(p->ndev_index) : json_null()));
	}
	o = json_pack("{s:i,s:s,s:s,s:o,s:s,s:s,s:s,s:o}", "ifindex", (int)d->index, "ifname",
		      d->name, "node_type", node_type_name(d->node_type), "protocol",
		      d->protocol[0] ? json_string(d->protocol) : json_null(), "fw", d->fw,
		      "node_guid", guid, "sys_image_guid", sys_guid, "ports", ports);
	if (ns)
		json_object_set_new(o, "netns", netns_json(ns));
	return o;
}

static void dev_print(const struct rn_rdma_dev *d, const struct rn_netns_entry *ns)
{
	char guid[24];

	format_guid(d->node_guid, guid, sizeof(guid));
	printf("%u: %s: %s node_guid %s", d->index, d->name,
	       d->protocol[0] ? d->protocol : node_type_name(d->node_type), guid);
	if (d->fw[0])
		printf(" fw %s", d->fw);
	if (ns) {
		if (ns->is_host)
			printf(" netns host");
		else if (ns->name[0])
			printf(" netns %s", ns->name);
		else
			printf(" netns %s", ns->path);
		if (!ns->is_host && ns->pid)
			printf(" (pid %d)", (int)ns->pid);
	}
	putchar('\n');
	for (size_t i = 0; i < d->nports; i++) {
		const struct rn_rdma_port *p = &d->ports[i];

		printf("    port %u %s %s", p->index, rn_rdma_port_state_name(p->state),
		       rn_rdma_port_phys_state_name(p->phys_state));
		if (p->ndev_name[0])
			printf(" netdev %s", p->ndev_name);
		putchar('\n');
	}
}

static int dev_show(struct rn_cli *cli)
{
	_cleanup_located_devs_ struct rn_located_devs all = { 0 };
	_cleanup_rdma_devs_ struct rn_rdma_devs devs = { 0 };
	_cleanup_rdma_ struct rn_rdma *rdma = NULL;
	struct rn_error err = { 0 };
	const char *name = NULL;
	bool all_netns = false;
	size_t shown = 0;
	json_t *doc = NULL;
	int r;

	while (rn_cli_peek(cli)) {
		const char *a = rn_cli_next(cli);

		if (strcmp(a, "--all-netns") == 0 || strcmp(a, "-a") == 0)
			all_netns = true;
		else if (a[0] == '-' || name)
			return rn_cli_usage("unexpected argument '%s' to 'dev show'", a);
		else
			name = a;
	}
	if (name) {
		r = rn_name_check("RDMA device", name, RN_RDMA_NAME_MAX - 1, &err);
		if (r < 0)
			return rn_cli_fail(&err);
	}
	if (all_netns) {
		r = rn_discover_all(&all, &err);
	} else {
		r = rn_rdma_open(&rdma, &err);
		if (r == 0)
			r = rn_rdma_dev_dump(rdma, &devs, &err);
	}
	if (r < 0)
		return rn_cli_fail(&err);

	if (cli->json)
		doc = json_array();
	if (all_netns) {
		for (size_t i = 0; i < all.n; i++) {
			if (name && strcmp(all.v[i].dev.name, name) != 0)
				continue;
			shown++;
			if (doc)
				json_array_append_new(doc,
						      dev_json(&all.v[i].dev, &all.v[i].netns));
			else
				dev_print(&all.v[i].dev, &all.v[i].netns);
		}
	} else {
		for (size_t i = 0; i < devs.n; i++) {
			if (name && strcmp(devs.devs[i].name, name) != 0)
				continue;
			shown++;
			if (doc)
				json_array_append_new(doc, dev_json(&devs.devs[i], NULL));
			else
				dev_print(&devs.devs[i], NULL);
		}
	}
	if (name && shown == 0) {
		json_decref(doc);
		rn_error_set(&err, ENODEV,
			     all_netns ? "RDMA device %s not found in any network namespace"
				       : "RDMA device %s not found in this network namespace "
					 "('rdmans dev --all-netns' looks in the others)",
			     name);
		return rn_cli_fail(&err);
	}
	if (doc)
		rn_cli_print_json(cli, doc);
	return 0;
}

static int dev_rename_here(struct rn_rdma *rdma, const char *name, const char *new_name,
			   struct rn_error *err)
{
	struct rn_rdma_dev dev = { 0 };
	int r;

	r = rn_rdma_dev_find(rdma, name, &dev, err);
	if (r < 0)
		return r;
	r = rn_rdma_dev_rename(rdma, dev.index, dev.name, new_name, err);
	rn_rdma_dev_free(&dev);
	return r;
}

static int dev_set(struct rn_cli *cli)
{
	_cleanup_rdma_ struct rn_rdma *rdma = NULL;
	struct rn_error err = { 0 };
	const char *name = rn_cli_next(cli);
	const char *attr = rn_cli_next(cli);
	const char *value = rn_cli_next(cli);
	int r;

	if (!name || !attr || !value || strcmp(attr, "name") != 0 || rn_cli_peek(cli))
		return rn_cli_usage("usage: rdmans dev set DEV name NEWNAME");
	r = rn_name_check("RDMA device", name, RN_RDMA_NAME_MAX - 1, &err);
	if (r == 0)
		r = rn_name_check("RDMA device", value, RN_RDMA_NAME_MAX - 1, &err);
	if (r < 0)
		return rn_cli_fail(&err);
	r = rn_rdma_open(&rdma, &err);
	if (r == 0)
		r = dev_rename_here(rdma, name, value, &err);
	if (r < 0)
		return rn_cli_fail(&err);
	if (cli->json)
		return rn_cli_print_json(cli, json_pack("{s:s,s:s}", "old", name, "new", value));
	printf("renamed %s to %s\n", name, value);
	return 0;
}

static const char *const gpus_usage =
	"usage: rdmans dev gpus [--visible-devices LIST] [--device /dev/nvidiaN]... "
	"[--cdi nvidia.com/gpu=X]...";

void rn_cli_gpus_init(struct rn_cli_gpus *g)
{
	memset(g, 0, sizeof(*g));
	g->req.devnodes = g->nodes;
	g->req.cdi = g->cdi;
}

int rn_cli_gpus_option(struct rn_cli *cli, const char *arg, struct rn_cli_gpus *g)
{
	const char *v;

	if (strcmp(arg, "--visible-devices") != 0 && strcmp(arg, "--device") != 0 &&
	    strcmp(arg, "--cdi") != 0)
		return 0;
	v = rn_cli_next(cli);
	if (!v || !*v)
		return rn_cli_usage("%s needs a value", arg);
	if (strcmp(arg, "--visible-devices") == 0)
		g->req.visible_devices = v;
	else if (strcmp(arg, "--device") == 0 && g->req.n_devnodes < RN_CLI_GPU_ARGS_MAX)
		g->nodes[g->req.n_devnodes++] = v;
	else if (strcmp(arg, "--cdi") == 0 && g->req.n_cdi < RN_CLI_GPU_ARGS_MAX)
		g->cdi[g->req.n_cdi++] = v;
	else
		return rn_cli_usage("more than %d %s options", RN_CLI_GPU_ARGS_MAX, arg);
	g->named = true;
	return 1;
}

/* The RDMA devices of this netns with their PCI functions, for rn_rails_nearest(). */
static int rail_devs(struct rn_rail_dev **ret, size_t *ret_n, struct rn_error *err)
{
	_cleanup_free_ struct rn_sysfs_rdma_dev *devs = NULL;
	size_t n = 0;
	int r = rn_sysfs_rdma_list(&devs, &n, err);

	*ret = NULL;
	*ret_n = 0;
	if (r < 0)
		return r;
	*ret = calloc(n ? n : 1, sizeof(**ret));
	if (!*ret)
		return rn_error_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++)
		rn_rails_dev_read(&(*ret)[i], devs[i].name, devs[i].pci_bdf);
	*ret_n = n;
	return 0;
}

/*
 * The node's NVIDIA GPUs (the driver's files), each with its nearest RDMA
 * device by PCIe distance; with a container's share named as its runtime
 * names it (NVIDIA_VISIBLE_DEVICES, device nodes, CDI), only those.
 */
static int dev_gpus(struct rn_cli *cli)
{
	_cleanup_free_ struct rn_gpu *gpus = NULL;
	_cleanup_free_ struct rn_rail_dev *devs = NULL;
	struct rn_cli_gpus g;
	struct rn_error err = { 0 };
	bool sel[RN_GPU_MAX];
	size_t n = 0, ndevs = 0;
	json_t *out = NULL;
	const char *arg;
	int r;

	rn_cli_gpus_init(&g);
	while ((arg = rn_cli_next(cli))) {
		r = rn_cli_gpus_option(cli, arg, &g);
		if (r != 1)
			return r ? r
				 : rn_cli_usage("unexpected argument '%s'; %s", arg, gpus_usage);
	}
	r = rn_gpu_list(NULL, &gpus, &n, &err);
	if (r == 0)
		r = rail_devs(&devs, &ndevs, &err);
	if (r == 0 && g.named)
		r = rn_gpu_select(gpus, n, &g.req, sel, &err);
	if (r < 0)
		return rn_cli_fail(&err);
	out = cli->json ? json_array() : NULL;
	if (!out)
		printf("%-14s %-5s %-42s %-5s %-12s %s\n", "GPU", "MINOR", "UUID", "NUMA",
		       "NEAREST RDMA", "DISTANCE");
	for (size_t i = 0; i < n; i++) {
		struct rn_sysfs_pci_fn gpu;
		enum rn_pci_distance best = RN_PCI_CROSS_CPU;
		const char *near = NULL;
		struct rn_error ignored = { 0 };
		bool have_gpu;
		ssize_t at;

		if (g.named && !sel[i])
			continue;
		have_gpu = rn_sysfs_pci_get(gpus[i].bdf, &gpu, &ignored) == 0;
		at = have_gpu ? rn_rails_nearest(&gpu, devs, ndevs, &best) : -1;
		near = at >= 0 ? devs[at].name : NULL;
		if (out) {
			json_array_append_new(
				out,
				json_pack("{s:s,s:i,s:s,s:s,s:i,s:s?,s:s?}", "bdf", gpus[i].bdf,
					  "minor", (int)gpus[i].minor, "uuid", gpus[i].uuid,
					  "model", gpus[i].model, "numa", have_gpu ? gpu.numa : -1,
					  "nearest_rdma", near, "distance",
					  near ? rn_pci_distance_name(best) : NULL));
			continue;
		}
		printf("%-14s %-5u %-42s %-5d %-12s %s\n", gpus[i].bdf, gpus[i].minor, gpus[i].uuid,
		       have_gpu ? gpu.numa : -1, near ? near : "-",
		       near ? rn_pci_distance_name(best) : "-");
	}
	return out ? rn_cli_print_json(cli, out) : 0;
}

int rn_cmd_dev(struct rn_cli *cli)
{
	static const struct rn_cmd cmds[] = {
		{ "show", dev_show }, { "list", dev_show }, { "set", dev_set },
		{ "gpus", dev_gpus }, { NULL, NULL },
	};

	return rn_cli_dispatch(cli, cmds, "dev");
}
