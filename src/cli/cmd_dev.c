// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "rdmans.h"
#include "rdmans/sysfs_pci.h"
#include "rdmans/gpu.h"
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

#define GPU_ARGS_MAX 64

static const char *const gpus_usage =
	"usage: rdmans dev gpus [--visible-devices LIST] [--device /dev/nvidiaN]... "
	"[--cdi nvidia.com/gpu=X]...";

/*
 * The node's NVIDIA GPUs (the driver's files), each with its nearest RDMA
 * device by PCIe distance; with a container's share named as its runtime
 * names it (NVIDIA_VISIBLE_DEVICES, device nodes, CDI), only those.
 */
static int dev_gpus(struct rn_cli *cli)
{
	_cleanup_free_ struct rn_gpu *gpus = NULL;
	_cleanup_free_ struct rn_sysfs_rdma_dev *devs = NULL;
	const char *nodes[GPU_ARGS_MAX], *cdi[GPU_ARGS_MAX], *arg;
	struct rn_gpu_request req = { nodes, 0, NULL, cdi, 0 };
	struct rn_error err = { 0 };
	bool sel[RN_GPU_MAX], named = false;
	size_t n = 0, ndevs = 0;
	json_t *out = cli->json ? json_array() : NULL;
	int r;

	while ((arg = rn_cli_next(cli))) {
		const char *v = rn_cli_next(cli);

		if (!v || !*v)
			return rn_cli_usage("%s needs a value; %s", arg, gpus_usage);
		if (strcmp(arg, "--visible-devices") == 0)
			req.visible_devices = v;
		else if (strcmp(arg, "--device") == 0 && req.n_devnodes < GPU_ARGS_MAX)
			nodes[req.n_devnodes++] = v;
		else if (strcmp(arg, "--cdi") == 0 && req.n_cdi < GPU_ARGS_MAX)
			cdi[req.n_cdi++] = v;
		else
			return rn_cli_usage("unexpected argument '%s'; %s", arg, gpus_usage);
		named = true;
	}
	r = rn_gpu_list(NULL, &gpus, &n, &err);
	if (r == 0)
		r = rn_sysfs_rdma_list(&devs, &ndevs, &err);
	if (r == 0 && named)
		r = rn_gpu_select(gpus, n, &req, sel, &err);
	if (r < 0) {
		json_decref(out);
		return rn_cli_fail(&err);
	}
	if (!out)
		printf("%-14s %-5s %-42s %-5s %-12s %s\n", "GPU", "MINOR", "UUID", "NUMA",
		       "NEAREST RDMA", "DISTANCE");
	for (size_t i = 0; i < n; i++) {
		struct rn_sysfs_pci_fn gpu, nic;
		enum rn_pci_distance best = RN_PCI_CROSS_CPU;
		const char *near = NULL;
		struct rn_error ignored = { 0 };
		bool have_gpu;

		if (named && !sel[i])
			continue;
		have_gpu = rn_sysfs_pci_get(gpus[i].bdf, &gpu, &ignored) == 0;
		for (size_t d = 0; have_gpu && d < ndevs; d++) {
			enum rn_pci_distance dist;

			if (!devs[d].pci_bdf[0] ||
			    rn_sysfs_pci_get(devs[d].pci_bdf, &nic, &ignored) < 0)
				continue;
			dist = rn_sysfs_pci_distance(&gpu, &nic);
			if (!near || dist < best) {
				near = devs[d].name;
				best = dist;
			}
		}
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
