// SPDX-License-Identifier: Apache-2.0
/*
 * rdmans-device-plugin's decisions. Device IDs are the PCI address behind
 * the device (through an auxiliary device, as mlx5 and irdma register), as
 * sriov-network-device-plugin uses, else the auxiliary device's ID, so that
 * Multus's deviceID and rdma-netns's selection take them as they are. A device moved into a pod vanishes from the host's sysfs in
 * exclusive mode; it stays listed, since kubelet counts it as allocated.
 */
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmans/cleanup.h"
#include "rdmans/counters.h"
#include "rdmans/device_plugin.h"
#include "rdmans/devnodes.h"
#include "rdmans/rdma_nl.h"
#include "rdmans/sysfs.h"
#include "rdmans/sysfs_pci.h"
#include "rdmans/sysfs_port.h"
#include "rdmans/util.h"

#define IB_PORT_ACTIVE 4

int rn_dp_strategies_parse(const char *text, unsigned *ret, struct rn_error *err)
{
	static const struct {
		const char *name;
		unsigned bit;
	} names[] = {
		{ "cdi-cri", RN_DP_CDI_CRI },
		{ "cdi-annotations", RN_DP_CDI_ANNOTATIONS },
		{ "device-specs", RN_DP_DEVICE_SPECS },
	};
	unsigned bits = 0;
	const char *p = text;

	while (p && *p) {
		size_t len = strcspn(p, ",");
		unsigned bit = 0;

		for (size_t i = 0; i < RN_ARRAY_SIZE(names); i++)
			if (strlen(names[i].name) == len && !strncmp(names[i].name, p, len))
				bit = names[i].bit;
		if (!bit)
			return rn_error_set(err, EINVAL,
					    "unknown device list strategy '%.*s' in '%s': use "
					    "cdi-cri, cdi-annotations or device-specs, "
					    "comma-separated",
					    (int)len, p, text);
		bits |= bit;
		p += len + (p[len] == ',');
	}
	if (!bits)
		return rn_error_set(err, EINVAL,
				    "no device list strategy given: use cdi-cri, cdi-annotations "
				    "or device-specs, comma-separated");
	*ret = bits;
	return 0;
}

void rn_dp_inventory_free(struct rn_dp_inventory *inv)
{
	free(inv->v);
	memset(inv, 0, sizeof(*inv));
}

/* ---- pools ---- */

static bool any_glob(const char (*pat)[IF_NAMESIZE], size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (fnmatch(pat[i], s, 0) == 0)
			return true;
	return false;
}

static bool matches(const struct rn_dp_selector *sel, const struct rn_sysfs_rdma_dev *d,
		    const struct rn_sysfs_pci_fn *pci)
{
	bool ok;
	size_t i;

	if (sel->n_names) {
		for (ok = false, i = 0; i < sel->n_names && !ok; i++)
			ok = fnmatch(sel->names[i], d->name, 0) == 0;
		if (!ok)
			return false;
	}
	if (sel->n_vendors) {
		for (ok = false, i = 0; i < sel->n_vendors && !ok; i++)
			ok = pci->bdf[0] && pci->vendor == sel->vendors[i];
		if (!ok)
			return false;
	}
	if (sel->n_devices) {
		for (ok = false, i = 0; i < sel->n_devices && !ok; i++)
			ok = pci->bdf[0] && pci->device == sel->devices[i];
		if (!ok)
			return false;
	}
	if (sel->n_drivers) {
		for (ok = false, i = 0; i < sel->n_drivers && !ok; i++)
			ok = pci->driver[0] && !strcmp(pci->driver, sel->drivers[i]);
		if (!ok)
			return false;
	}
	if (sel->n_link_layers) {
		for (ok = false, i = 0; i < sel->n_link_layers && !ok; i++)
			ok = !strcasecmp(d->link_layer, sel->link_layers[i]);
		if (!ok)
			return false;
	}
	if (sel->n_netdevs) {
		for (ok = false, i = 0; i < d->n_netdevs && !ok; i++)
			ok = any_glob(sel->netdevs, sel->n_netdevs, d->netdevs[i]);
		if (!ok)
			return false;
	}
	return true;
}

/* The first pool that selects the device: a device is in one pool only. */
static int pool_of(const struct rn_dp_config *cfg, const struct rn_sysfs_rdma_dev *d,
		   const struct rn_sysfs_pci_fn *pci)
{
	for (size_t i = 0; i < cfg->n_pools; i++)
		if (matches(&cfg->pools[i].sel, d, pci))
			return (int)i;
	return -1;
}

/* ---- scanning ---- */

static bool any_port_active(const char *dev)
{
	_cleanup_free_ uint32_t *ports = NULL;
	struct rn_error err = { 0 };
	struct rn_sysfs_port p;
	size_t n = 0;

	if (rn_sysfs_port_list(dev, &ports, &n, &err) < 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		rn_sysfs_port_read(dev, ports[i], &p);
		if (p.state == IB_PORT_ACTIVE)
			return true;
	}
	return false;
}

static struct rn_dp_device *find_id(struct rn_dp_inventory *inv, const char *id)
{
	for (size_t i = 0; i < inv->n; i++)
		if (!strcmp(inv->v[i].id, id))
			return &inv->v[i];
	return NULL;
}

static int by_id(const void *a, const void *b)
{
	return strcmp(((const struct rn_dp_device *)a)->id, ((const struct rn_dp_device *)b)->id);
}

/* The netns mode; false when RDMA netlink cannot be asked (no ib_core). */
static bool read_mode(bool *exclusive)
{
	struct rn_error err = { 0 };
	struct rn_rdma *rdma = NULL;
	bool ok;

	if (rn_rdma_open(&rdma, &err) < 0)
		return false;
	ok = rn_rdma_netns_mode_get(rdma, exclusive, &err) == 0;
	rn_rdma_close(rdma);
	return ok;
}

static void set_health(struct rn_dp_device *d, const struct rn_dp_inventory *inv)
{
	d->why[0] = '\0';
	if (!inv->have_mode)
		(void)rn_strscpy(d->why, sizeof(d->why),
				 "the RDMA netns mode cannot be read (is ib_core loaded?)");
	else if (!inv->exclusive)
		(void)rn_strscpy(d->why, sizeof(d->why),
				 "the node is in shared RDMA netns mode: a pod cannot own the "
				 "device ('rdmans system set netns exclusive --persist', then "
				 "reboot)");
	else if (d->here && !d->port_up)
		(void)rn_snprintf(d->why, sizeof(d->why), "no port of %s is ACTIVE", d->name);
	d->healthy = d->why[0] == '\0';
}

int rn_dp_scan(const struct rn_dp_config *cfg, struct rn_dp_inventory *inv, bool *ret_changed,
	       struct rn_error *err)
{
	_cleanup_free_ struct rn_sysfs_rdma_dev *devs = NULL;
	_cleanup_free_ struct rn_dp_device *old = NULL;
	size_t n = 0, n_old = inv->n;
	bool changed = false, exclusive = false, have_mode;
	int r;

	have_mode = read_mode(&exclusive);
	if (rn_sysfs_rdma_loaded()) {
		r = rn_sysfs_rdma_list(&devs, &n, err);
		if (r < 0)
			return rn_error_wrap(err, "listing the node's RDMA devices");
	}
	old = inv->v;
	inv->v = calloc(n + n_old + 1, sizeof(*inv->v));
	if (!inv->v) {
		inv->v = TAKE_PTR(old);
		return rn_error_set(err, ENOMEM, "out of memory");
	}
	inv->n = 0;
	changed = have_mode != inv->have_mode || exclusive != inv->exclusive;
	inv->have_mode = have_mode;
	inv->exclusive = exclusive;
	for (size_t i = 0; i < n; i++) {
		struct rn_dp_device *d = &inv->v[inv->n];
		/* the PCI function (an auxiliary device's parent: mlx5_core.rdma.N, ice.roce.N) */
		const char *id = devs[i].pci_bdf[0]	? devs[i].pci_bdf
				 : devs[i].parent_id[0] ? devs[i].parent_id
							: devs[i].name;

		if (find_id(inv, id))
			continue; /* two RDMA devices of one bus device: the first speaks for it */
		(void)rn_strscpy(d->id, sizeof(d->id), id);
		(void)rn_strscpy(d->name, sizeof(d->name), devs[i].name);
		d->pci.numa = -1;
		if (devs[i].pci_bdf[0]) {
			struct rn_error perr = { 0 };

			if (rn_sysfs_pci_get(devs[i].pci_bdf, &d->pci, &perr) < 0) {
				memset(&d->pci, 0, sizeof(d->pci));
				d->pci.numa = -1;
			}
		}
		d->pool = pool_of(cfg, &devs[i], &d->pci);
		d->here = true;
		d->port_up = any_port_active(d->name);
		set_health(d, inv);
		inv->n++;
	}
	/* devices that left: in a pod's netns (exclusive mode), so still the node's */
	for (size_t i = 0; i < n_old; i++) {
		struct rn_dp_device *d = find_id(inv, old[i].id);

		if (d) {
			changed |= d->healthy != old[i].healthy || d->pool != old[i].pool;
			continue;
		}
		if (!exclusive)
			continue; /* shared mode shows every device: this one is gone */
		inv->v[inv->n] = old[i];
		inv->v[inv->n].here = false;
		set_health(&inv->v[inv->n], inv);
		changed |= inv->v[inv->n].healthy != old[i].healthy;
		inv->n++;
	}
	changed |= inv->n != n_old;
	for (size_t i = 0; !changed && i < inv->n; i++) {
		bool seen = false;

		for (size_t j = 0; j < n_old && !seen; j++)
			seen = !strcmp(old[j].id, inv->v[i].id);
		changed = !seen;
	}
	qsort(inv->v, inv->n, sizeof(*inv->v), by_id);
	*ret_changed = changed;
	return 0;
}

int rn_dp_pool_devices(const struct rn_dp_inventory *inv, int pool, struct rn_kw_device **ret,
		       size_t *ret_n, struct rn_error *err)
{
	struct rn_kw_device *v = calloc(inv->n + 1, sizeof(*v));
	size_t n = 0;

	if (!v)
		return rn_error_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < inv->n; i++) {
		if (inv->v[i].pool != pool)
			continue;
		v[n].id = inv->v[i].id;
		v[n].healthy = inv->v[i].healthy;
		v[n].numa = inv->v[i].pci.numa;
		n++;
	}
	*ret = v;
	*ret_n = n;
	return 0;
}

/* ---- choices ---- */

static const struct rn_dp_device *find_const(const struct rn_dp_inventory *inv, const char *id)
{
	return find_id((struct rn_dp_inventory *)inv, id);
}

/* PCIe distance between two devices; devices with no PCI function are across the CPU. */
static int distance(const struct rn_dp_device *a, const struct rn_dp_device *b)
{
	if (!a || !b || !a->pci.bdf[0] || !b->pci.bdf[0])
		return RN_PCI_CROSS_CPU + 1;
	return (int)rn_sysfs_pci_distance(&a->pci, &b->pci);
}

static int numa_of(const struct rn_dp_inventory *inv, const char *id)
{
	const struct rn_dp_device *d = find_const(inv, id);

	return d ? d->pci.numa : -1;
}

static bool chosen(const char **ids, size_t n, const char *id)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(ids[i], id))
			return true;
	return false;
}

int rn_dp_preferred(const struct rn_dp_inventory *inv, const struct rn_kw_preferred_request *req,
		    const char **ret_ids, size_t *ret_n, struct rn_error *err)
{
	size_t n = 0, want = req->size;
	int numa = -1;

	if (want > req->n_available)
		return rn_error_set(err, EINVAL,
				    "kubelet asks for %zu devices out of %zu available", want,
				    req->n_available);
	for (size_t i = 0; i < req->n_must_include && n < want; i++)
		if (!chosen(ret_ids, n, req->must_include[i]))
			ret_ids[n++] = req->must_include[i];
	if (n > 0) {
		numa = numa_of(inv, ret_ids[0]);
	} else if (want > 0) {
		/* the NUMA node that fits the request most tightly keeps larger ones whole */
		size_t best_count = 0;

		for (size_t i = 0; i < req->n_available; i++) {
			int node = numa_of(inv, req->available[i]);
			size_t count = 0;

			if (node < 0)
				continue;
			for (size_t j = 0; j < req->n_available; j++)
				count += numa_of(inv, req->available[j]) == node;
			if (count >= want && (best_count == 0 || count < best_count ||
					      (count == best_count && node < numa))) {
				best_count = count;
				numa = node;
			}
		}
	}
	while (n < want) {
		const char *best = NULL;
		int best_key = 0;

		for (size_t i = 0; i < req->n_available; i++) {
			const char *id = req->available[i];
			const struct rn_dp_device *d = find_const(inv, id);
			int key, near = RN_PCI_CROSS_CPU + 1;

			if (chosen(ret_ids, n, id))
				continue;
			for (size_t j = 0; j < n; j++) {
				int dist = distance(d, find_const(inv, ret_ids[j]));

				near = dist < near ? dist : near;
			}
			/* off the chosen NUMA node first, then PCIe distance, then the ID */
			key = (numa >= 0 && numa_of(inv, id) != numa) * 16 + near;
			if (!best || key < best_key || (key == best_key && strcmp(id, best) < 0)) {
				best = id;
				best_key = key;
			}
		}
		if (!best)
			break;
		ret_ids[n++] = best;
	}
	*ret_n = n;
	return 0;
}

/*
 * A CDI annotation key, "cdi.k8s.io/" and a name part of at most 63 of
 * a-z, 0-9, '-', '_', '.' (the first device names it: keys differ per container).
 */
static void annotation_key(char *buf, size_t len, const char *id)
{
	static const char prefix[] = "cdi.k8s.io/rdmans-device-plugin_";
	size_t o = sizeof(prefix) - 1, max = sizeof("cdi.k8s.io/") - 1 + 63;

	memcpy(buf, prefix, o);
	for (const char *p = id; *p && o + 1 < len && o < max; p++) {
		char c = *p >= 'A' && *p <= 'Z' ? (char)(*p - 'A' + 'a') : *p;
		bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
			  c == '_' || c == '.';

		buf[o++] = ok ? c : '-';
	}
	buf[o] = '\0';
}

static int append_list(char *buf, size_t len, const char *sep, const char *item,
		       struct rn_error *err)
{
	size_t o = strlen(buf);

	if (rn_snprintf(buf + o, len - o, "%s%s", o ? sep : "", item) < 0)
		return rn_error_set(err, E2BIG, "the list of allocated devices is too long");
	return 0;
}

int rn_dp_allocate(const struct rn_dp_config *cfg, const struct rn_dp_inventory *inv,
		   const char *const *ids, size_t n, struct rn_kw_alloc *out, struct rn_error *err)
{
	_cleanup_free_ struct rn_devnode *nodes = NULL;
	const struct rn_dp_device *devs[RN_KW_MAX_IDS];
	char hca[4096] = "", cdi_list[8192] = "", name[4200], key[128];
	size_t n_nodes = 0;
	int r;

	if (n == 0)
		return rn_error_set(err, EINVAL, "Allocate names no device");
	if (n > RN_KW_MAX_IDS)
		return rn_error_set(err, EINVAL, "Allocate names %zu devices; at most %d", n,
				    RN_KW_MAX_IDS);
	for (size_t i = 0; i < n; i++) {
		if (!(devs[i] = find_const(inv, ids[i])))
			return rn_error_set(err, EINVAL,
					    "device %s is not one this plugin lists (kubelet and "
					    "the plugin disagree: restart the plugin)",
					    ids[i]);
		if ((r = append_list(hca, sizeof(hca), ",", devs[i]->name, err)) < 0)
			return r;
		if (rn_snprintf(name, sizeof(name), "%s=%s", cfg->cdi_kind, devs[i]->name) < 0)
			return rn_error_set(err, E2BIG, "CDI name of %s is too long",
					    devs[i]->name);
		if ((r = append_list(cdi_list, sizeof(cdi_list), ",", name, err)) < 0)
			return r;
		if ((cfg->strategies & RN_DP_CDI_CRI) && (r = rn_kw_alloc_cdi(out, name, err)) < 0)
			return r;
	}
	if (cfg->strategies & RN_DP_CDI_ANNOTATIONS) {
		annotation_key(key, sizeof(key), ids[0]);
		if ((r = rn_kw_alloc_annotation(out, key, cdi_list, err)) < 0)
			return r;
	}
	if (cfg->strategies & RN_DP_DEVICE_SPECS) {
		struct rn_devnode cm;
		size_t found = 0;

		if ((r = rn_devnodes_uverbs(&nodes, &n_nodes, err)) < 0)
			return rn_error_wrap(err, "device nodes for Allocate");
		for (size_t i = 0; i < n; i++)
			for (size_t j = 0; j < n_nodes; j++)
				if (!strcmp(nodes[j].dev, devs[i]->name)) {
					if ((r = rn_kw_alloc_device(out, nodes[j].path, "rw",
								    err)) < 0)
						return r;
					found++;
				}
		if (found < n)
			return rn_error_set(err, ENODEV,
					    "no uverbs node for some of %s: is ib_uverbs loaded, "
					    "and are the devices still on the host?",
					    hca);
		if (rn_devnodes_rdma_cm(&cm, err) == 0 &&
		    (r = rn_kw_alloc_device(out, cm.path, "rw", err)) < 0)
			return r;
		rn_error_clear(err); /* no rdma_ucm: verbs work without rdma_cm */
	}
	/* '=' asks NCCL for these names exactly, not every name they prefix */
	if (rn_snprintf(name, sizeof(name), "=%s", hca) < 0)
		return rn_error_set(err, E2BIG, "NCCL_IB_HCA for %s is too long", hca);
	return rn_kw_alloc_env(out, "NCCL_IB_HCA", name, err);
}

int rn_dp_names_of_ids(const char *const *ids, size_t n, char *names, size_t len,
		       struct rn_error *err)
{
	char found[4][RN_RDMA_NAME_MAX];
	size_t o = 0;
	int r;

	if (len)
		names[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		size_t k = 0;

		r = rn_sysfs_rdma_by_bus_id(ids[i], found, RN_ARRAY_SIZE(found), &k, err);
		if (r < 0 && r != -ENOENT && r != -ENODEV)
			return r;
		rn_error_clear(err);
		/* no bus device of that ID here: the ID is the RDMA device's name (rxe, siw) */
		if (rn_snprintf(names + o, len - o, "%s%s", o ? "," : "",
				r == 0 && k > 0 ? found[0] : ids[i]) < 0)
			return rn_error_set(err, E2BIG,
					    "the devices kubelet allocated do not fit "
					    "in %zu bytes",
					    len);
		o = strlen(names);
	}
	return 0;
}
