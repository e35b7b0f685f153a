// SPDX-License-Identifier: Apache-2.0
/*
 * rdmans-device-plugin's decisions on a fake node: 8 RDMA NICs on 2 NUMA
 * nodes, two PCIe switches per node. The netns mode comes from a link-time
 * fake of RDMA netlink (--wrap), so health is tested in both modes.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fakesys.h"
#include "rdmans/device_plugin.h"
#include "rdmans/device_plugin_json.h"
#include "rdmans/rdma_nl.h"
#include "test.h"

static bool fake_exclusive = true;
static struct rn_rdma *const fake_rdma = (struct rn_rdma *)0x1;

int __wrap_rn_rdma_open(struct rn_rdma **ret, struct rn_error *err);
int __wrap_rn_rdma_open(struct rn_rdma **ret, struct rn_error *err)
{
	(void)err;
	*ret = fake_rdma;
	return 0;
}

void __wrap_rn_rdma_close(struct rn_rdma *rdma);
void __wrap_rn_rdma_close(struct rn_rdma *rdma)
{
	CHECK(rdma == fake_rdma);
}

int __wrap_rn_rdma_netns_mode_get(struct rn_rdma *rdma, bool *exclusive, struct rn_error *err);
int __wrap_rn_rdma_netns_mode_get(struct rn_rdma *rdma, bool *exclusive, struct rn_error *err)
{
	(void)err;
	CHECK(rdma == fake_rdma);
	*exclusive = fake_exclusive;
	return 0;
}

/* Each node: a host bridge, two root ports; a switch under the first with two NICs. */
#define N0A "pci0000:16/0000:16:02.0/0000:17:00.0"
#define N0B "pci0000:16/0000:16:03.0/0000:30:00.0"
#define N1A "pci0000:ae/0000:ae:02.0/0000:af:00.0"
#define N1B "pci0000:ae/0000:ae:03.0/0000:c0:00.0"

static const struct {
	const char *dev, *bdf, *parents;
	int numa;
} nics[] = {
	{ "mlx5_0", "0000:19:00.0", N0A "/0000:18:08.0", 0 },
	{ "mlx5_1", "0000:1a:00.0", N0A "/0000:18:10.0", 0 },
	{ "mlx5_2", "0000:32:00.0", N0B "/0000:31:08.0", 0 },
	{ "mlx5_3", "0000:33:00.0", N0B "/0000:31:10.0", 0 },
	{ "mlx5_4", "0000:b1:00.0", N1A "/0000:b0:08.0", 1 },
	{ "mlx5_5", "0000:b2:00.0", N1A "/0000:b0:10.0", 1 },
	{ "mlx5_6", "0000:c2:00.0", N1B "/0000:c1:08.0", 1 },
	{ "mlx5_7", "0000:c3:00.0", N1B "/0000:c1:10.0", 1 },
};

static void add_node(const char *root)
{
	for (size_t i = 0; i < sizeof(nics) / sizeof(nics[0]); i++) {
		fakesys_add_rdma_pci(root, nics[i].dev, nics[i].bdf, NULL, "Ethernet");
		fakesys_place_pci(root, nics[i].bdf, nics[i].parents, 0x15b3, 0x020000,
				  nics[i].numa);
	}
}

static void scanned(struct rn_dp_inventory *inv, const struct rn_dp_config *cfg)
{
	struct rn_error err = { 0 };
	bool changed = false;

	CHECK_INT(rn_dp_scan(cfg, inv, &changed, &err), 0);
	if (err.code)
		printf("# %s\n", err.msg);
}

/* The node in a fake root, scanned with the default pool in the given netns mode. */
static void node_scanned(const char *root, struct rn_dp_inventory *inv, struct rn_dp_config *cfg,
			 bool exclusive)
{
	rn_dp_config_default(cfg);
	add_node(root);
	fake_exclusive = exclusive;
	scanned(inv, cfg);
}

static const struct rn_dp_device *by_name(const struct rn_dp_inventory *inv, const char *name)
{
	for (size_t i = 0; i < inv->n; i++)
		if (!strcmp(inv->v[i].name, name))
			return &inv->v[i];
	return NULL;
}

static void scan_lists_every_device_by_its_pci_address_with_its_numa_node(void)
{
	_cleanup_fake_ char *root = fake_start();
	struct rn_dp_inventory inv = { 0 };
	struct rn_dp_config cfg;

	node_scanned(root, &inv, &cfg, true);
	REQUIRE(inv.n == 8);
	for (size_t i = 0; i < 8; i++) {
		const struct rn_dp_device *d = by_name(&inv, nics[i].dev);

		REQUIRE(d);
		CHECK_STR(d->id, nics[i].bdf);
		CHECK_INT(d->pci.numa, nics[i].numa);
		CHECK_INT(d->pool, 0);
		CHECK(d->healthy);
	}
	CHECK_STR(cfg.pools[0].resource, "rdmans.io/rdma");
	rn_dp_inventory_free(&inv);
}

/* irdma and mlx5 register on an auxiliary device of the PCI function: the ID is still the PCI address */
static void an_auxiliary_device_is_listed_by_its_pci_function(void)
{
	_cleanup_fake_ char *root = fake_start();
	struct rn_dp_inventory inv = { 0 };
	struct rn_dp_config cfg;
	const struct rn_dp_device *d;
	char names[64];
	const char *ids[] = { "0000:3b:00.0" };
	struct rn_error err = { 0 };

	fakesys_add_rdma_aux(root, "irdma0", "0000:3b:00.0", "ice.roce.0", NULL, "Ethernet");
	node_scanned(root, &inv, &cfg, true);
	d = by_name(&inv, "irdma0");
	REQUIRE(d);
	CHECK_STR(d->id, "0000:3b:00.0");
	/* and back: what kubelet's PodResources lists is that device */
	CHECK_INT(rn_dp_names_of_ids(ids, 1, names, sizeof(names), &err), 0);
	CHECK_STR(names, "irdma0");
	rn_dp_inventory_free(&inv);
}

static void shared_mode_makes_every_device_unhealthy_and_says_why(void)
{
	_cleanup_fake_ char *root = fake_start();
	struct rn_dp_inventory inv = { 0 };
	struct rn_dp_config cfg;
	struct rn_error err = { 0 };
	bool changed = false;

	node_scanned(root, &inv, &cfg, false);
	REQUIRE(inv.n == 8);
	for (size_t i = 0; i < inv.n; i++) {
		CHECK(!inv.v[i].healthy);
		CHECK_CONTAINS(inv.v[i].why, "shared RDMA netns mode");
	}
	fake_exclusive = true;
	CHECK_INT(rn_dp_scan(&cfg, &inv, &changed, &err), 0);
	CHECK(changed);
	for (size_t i = 0; i < inv.n; i++)
		CHECK(inv.v[i].healthy);
	CHECK_INT(rn_dp_scan(&cfg, &inv, &changed, &err), 0);
	CHECK(!changed);
	rn_dp_inventory_free(&inv);
}

static void a_port_that_is_not_active_makes_its_device_unhealthy(void)
{
	_cleanup_fake_ char *root = fake_start();
	const struct rn_dp_device *d;
	struct rn_dp_inventory inv = { 0 };
	struct rn_dp_config cfg;
	struct rn_error err = { 0 };
	bool changed = false;

	node_scanned(root, &inv, &cfg, true);
	fakesys_write(root, "class/infiniband/mlx5_2/ports/1/state", "1: DOWN");
	CHECK_INT(rn_dp_scan(&cfg, &inv, &changed, &err), 0);
	CHECK(changed);
	d = by_name(&inv, "mlx5_2");
	REQUIRE(d);
	CHECK(!d->healthy);
	CHECK_CONTAINS(d->why, "no port of mlx5_2 is ACTIVE");
	CHECK(by_name(&inv, "mlx5_3")->healthy);
	rn_dp_inventory_free(&inv);
}

static void remove_dev(const char *root, const char *dev)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/class/infiniband/%s", root, dev);
	CHECK_INT(unlink(path), 0);
}

static void a_device_that_left_stays_listed_in_exclusive_mode_only(void)
{
	_cleanup_fake_ char *root = fake_start();
	struct rn_dp_inventory inv = { 0 };
	struct rn_dp_config cfg;
	struct rn_error err = { 0 };
	bool changed = true;

	node_scanned(root, &inv, &cfg, true);
	remove_dev(root, "mlx5_3");
	CHECK_INT(rn_dp_scan(&cfg, &inv, &changed, &err), 0);
	CHECK(!changed); /* nothing kubelet sees changed */
	REQUIRE(inv.n == 8);
	REQUIRE(by_name(&inv, "mlx5_3"));
	CHECK(!by_name(&inv, "mlx5_3")->here);
	CHECK(by_name(&inv, "mlx5_3")->healthy);
	/* shared mode shows every device in every netns: one that is not here is gone */
	fake_exclusive = false;
	CHECK_INT(rn_dp_scan(&cfg, &inv, &changed, &err), 0);
	CHECK(changed);
	CHECK_INT(inv.n, 7);
	CHECK(!by_name(&inv, "mlx5_3"));
	rn_dp_inventory_free(&inv);
}

static void prefer(const struct rn_dp_inventory *inv, const char *available, const char *must,
		   size_t size, const char *want)
{
	const char *avail[16], *mustv[16], *ret[16];
	char a[512], m[512], got[512] = "";
	struct rn_kw_preferred_request req = { .available = avail, .must_include = mustv };
	struct rn_error err = { 0 };
	size_t n = 0;

	snprintf(a, sizeof(a), "%s", available);
	snprintf(m, sizeof(m), "%s", must);
	for (char *t = strtok(a, ","); t; t = strtok(NULL, ","))
		avail[req.n_available++] = t;
	for (char *t = strtok(m, ","); t; t = strtok(NULL, ","))
		mustv[req.n_must_include++] = t;
	req.size = size;
	CHECK_INT(rn_dp_preferred(inv, &req, ret, &n, &err), 0);
	for (size_t i = 0; i < n; i++)
		snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s", i ? "," : "",
			 ret[i]);
	CHECK_STR(got, want);
}

#define ALL8                                                                                       \
	"0000:19:00.0,0000:1a:00.0,0000:32:00.0,0000:33:00.0,0000:b1:00.0,0000:b2:00.0,"           \
	"0000:c2:00.0,0000:c3:00.0"

static void preferred_keeps_a_request_on_one_numa_node_and_close_on_pcie(void)
{
	_cleanup_fake_ char *root = fake_start();
	struct rn_dp_inventory inv = { 0 };
	struct rn_dp_config cfg;

	node_scanned(root, &inv, &cfg, true);
	/* 4 of 8: one NUMA node, the switch pair first */
	prefer(&inv, ALL8, "", 4, "0000:19:00.0,0000:1a:00.0,0000:32:00.0,0000:33:00.0");
	/* 2 with must_include on node 1: its switch neighbour */
	prefer(&inv, ALL8, "0000:b2:00.0", 2, "0000:b2:00.0,0000:b1:00.0");
	prefer(&inv, ALL8, "0000:c2:00.0", 2, "0000:c2:00.0,0000:c3:00.0");
	/* the node that fits most tightly: node 0 has one left, node 1 three */
	prefer(&inv, "0000:19:00.0,0000:b1:00.0,0000:b2:00.0,0000:c2:00.0", "", 2,
	       "0000:b1:00.0,0000:b2:00.0");
	/* two left on node 0 fit 2 more tightly than node 1's four */
	prefer(&inv,
	       "0000:32:00.0,0000:33:00.0,0000:b1:00.0,0000:b2:00.0,0000:c2:00.0,0000:c3:00.0", "",
	       2, "0000:32:00.0,0000:33:00.0");
	/* no node fits: by PCIe distance from the first */
	prefer(&inv, "0000:19:00.0,0000:b1:00.0,0000:1a:00.0", "", 3,
	       "0000:19:00.0,0000:1a:00.0,0000:b1:00.0");
	rn_dp_inventory_free(&inv);
}

static void allocate_answers_cdi_names_and_nccl_ib_hca(void)
{
	_cleanup_fake_ char *root = fake_start();
	struct rn_dp_inventory inv = { 0 };
	struct rn_kw_alloc a = { 0 };
	struct rn_dp_config cfg;
	struct rn_error err = { 0 };
	const char *ids[] = { "0000:b2:00.0", "0000:b1:00.0" };
	const char *bad[] = { "0000:99:00.0" };

	node_scanned(root, &inv, &cfg, true);
	CHECK_INT(rn_dp_allocate(&cfg, &inv, ids, 2, &a, &err), 0);
	REQUIRE(a.n_cdi == 2);
	CHECK_STR(a.cdi[0], "rdmans.io/rdma=mlx5_5");
	CHECK_STR(a.cdi[1], "rdmans.io/rdma=mlx5_4");
	REQUIRE(a.n_envs == 1);
	CHECK_STR(a.envs[0].key, "NCCL_IB_HCA");
	CHECK_STR(a.envs[0].value, "=mlx5_5,mlx5_4");
	CHECK_INT(a.n_annotations, 0);
	rn_kw_alloc_clear(&a);
	cfg.strategies = RN_DP_CDI_ANNOTATIONS;
	CHECK_INT(rn_dp_allocate(&cfg, &inv, ids, 2, &a, &err), 0);
	CHECK_INT(a.n_cdi, 0);
	REQUIRE(a.n_annotations == 1);
	CHECK_STR(a.annotations[0].key, "cdi.k8s.io/rdmans-device-plugin_0000-b2-00.0");
	CHECK_STR(a.annotations[0].value, "rdmans.io/rdma=mlx5_5,rdmans.io/rdma=mlx5_4");
	rn_kw_alloc_clear(&a);
	CHECK_INT(rn_dp_allocate(&cfg, &inv, bad, 1, &a, &err), -EINVAL);
	CHECK_CONTAINS(err.msg, "device 0000:99:00.0 is not one this plugin lists");
	CHECK_INT(a.n_annotations + a.n_envs + a.n_cdi, 0);
	rn_kw_alloc_clear(&a);
	rn_dp_inventory_free(&inv);
}

static void strategies_parse(void)
{
	struct rn_error err = { 0 };
	unsigned s = 0;

	CHECK_INT(rn_dp_strategies_parse("cdi-cri,device-specs", &s, &err), 0);
	CHECK_INT(s, RN_DP_CDI_CRI | RN_DP_DEVICE_SPECS);
	s = 7;
	CHECK_INT(rn_dp_strategies_parse("cdi", &s, &err), -EINVAL);
	CHECK_CONTAINS(err.msg, "unknown device list strategy 'cdi'");
	CHECK_INT(s, 7);
	CHECK_INT(rn_dp_strategies_parse("", &s, &err), -EINVAL);
}

static int parse(const char *text, struct rn_dp_config *cfg, struct rn_error *err)
{
	return rn_dp_config_parse(text, strlen(text), cfg, err);
}

static void pools_select_by_name_vendor_device_link_layer(void)
{
	_cleanup_fake_ char *root = fake_start();
	struct rn_dp_inventory inv = { 0 };
	struct rn_dp_config cfg;
	struct rn_error err = { 0 };

	add_node(root);
	fakesys_write(root, "bus/pci/devices/0000:c3:00.0/device", "0x1021");
	REQUIRE(parse("{\"resourcePrefix\": \"example.com\", \"pools\": ["
		      "{\"name\": \"cx7\", \"selectors\": {\"devices\": [\"1021\"]}},"
		      "{\"name\": \"left\", \"selectors\": {\"names\": [\"mlx5_[0-3]\"],"
		      " \"vendors\": [\"0x15b3\"], \"linkLayers\": [\"Ethernet\"]}},"
		      "{\"name\": \"ib\", \"selectors\": {\"linkLayers\": [\"InfiniBand\"]}}]}",
		      &cfg, &err) == 0);
	CHECK_INT(cfg.n_pools, 3);
	CHECK_STR(cfg.pools[0].resource, "example.com/cx7");
	scanned(&inv, &cfg);
	CHECK_INT(by_name(&inv, "mlx5_7")->pool, 0);
	CHECK_INT(by_name(&inv, "mlx5_0")->pool, 1);
	CHECK_INT(by_name(&inv, "mlx5_3")->pool, 1);
	CHECK_INT(by_name(&inv, "mlx5_4")->pool, -1);
	rn_dp_inventory_free(&inv);
}

static void config_errors_name_the_key(void)
{
	static const struct {
		const char *text, *msg;
	} bad[] = {
		{ "[]", "must be a JSON object" },
		{ "{\"pool\": []}", "unknown key 'pool'" },
		{ "{\"pools\": []}", "at least one pool" },
		{ "{\"pools\": [{}]}", "pools[0] has no 'name'" },
		{ "{\"pools\": [{\"name\": \"a/b\"}]}", "may hold only letters" },
		{ "{\"pools\": [{\"name\": \"a\"}, {\"name\": \"a\"}]}", "both named 'a'" },
		{ "{\"pools\": [{\"name\": \"a\", \"selectors\": {\"vendors\": [\"mlx\"]}}]}",
		  "'vendors'[0] = 'mlx' is not a PCI ID" },
		{ "{\"pools\": [{\"name\": \"a\", \"selectors\": {\"names\": \"x\"}}]}",
		  "'names' must be a list of strings" },
		{ "{\"cdiKind\": \"rdma\"}", "cdiKind 'rdma' is not VENDOR/CLASS" },
		{ "{\"pools\": [}", "not JSON" },
	};
	struct rn_dp_config cfg;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct rn_error err = { 0 };

		CHECK_INT(parse(bad[i].text, &cfg, &err), -EINVAL);
		CHECK_CONTAINS(err.msg, bad[i].msg);
	}
}

RN_TEST_MAIN(T(scan_lists_every_device_by_its_pci_address_with_its_numa_node),
	     T(an_auxiliary_device_is_listed_by_its_pci_function),
	     T(shared_mode_makes_every_device_unhealthy_and_says_why),
	     T(a_port_that_is_not_active_makes_its_device_unhealthy),
	     T(a_device_that_left_stays_listed_in_exclusive_mode_only),
	     T(preferred_keeps_a_request_on_one_numa_node_and_close_on_pcie),
	     T(allocate_answers_cdi_names_and_nccl_ib_hca), T(strategies_parse),
	     T(pools_select_by_name_vendor_device_link_layer), T(config_errors_name_the_key))
