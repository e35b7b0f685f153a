// SPDX-License-Identifier: Apache-2.0
/*
 * sysfs discovery on fake trees that reproduce the nodes of the source
 * documents: mlx5 with show_gids (the Baidu CCE guide), mlx5_bond_0 (the EPFL RunAI guide), irdma on
 * ice.roce.0 (the IIJ E810 walkthrough), eRDMA (the Alibaba PAI eRDMA guide), plus rxe and an InfiniBand port.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fakesys.h"
#include "rdmans/cleanup.h"
#include "rdmans/counters.h"
#include "rdmans/port_netdev.h"
#include "rdmans/sysfs.h"
#include "rdmans/sysfs_gid.h"
#include "rdmans/sysfs_port.h"
#include "test.h"

/* Stops the test (the goto target "out" runs the cleanups) after a failed check. */
#define REQUIRE_INT(a, b)                                                                          \
	do {                                                                                       \
		CHECK_INT(a, b);                                                                   \
		if (rn_test_failed)                                                                \
			goto out;                                                                  \
	} while (0)

#define ZERO_GID "0000:0000:0000:0000:0000:0000:0000:0000"

/* ---- the nodes of the vendors' guides (CCE, the E810 walkthrough, PAI) ---- */

/* The Baidu CCE guide, show_gids: mlx5_0 and mlx5_1, RoCE v2 + IPv4 at index 3. */
static void add_mlx5_cce(const char *root)
{
	fakesys_add_netdev_pci(root, "eth0", "0000:3b:00.0");
	fakesys_add_rdma_pci(root, "mlx5_0", "0000:3b:00.0", "f820:20ff:fe28:c769", "Ethernet");
	fakesys_add_gid(root, "mlx5_0", 1, 0, "fe80:0000:0000:0000:f820:20ff:fe28:c769",
			"IB/RoCE v1", "eth0");
	fakesys_add_gid(root, "mlx5_0", 1, 1, "fe80:0000:0000:0000:f820:20ff:fe28:c769", "RoCE v2",
			"eth0");
	fakesys_add_gid(root, "mlx5_0", 1, 2, "0000:0000:0000:0000:0000:ffff:0a00:3c03",
			"IB/RoCE v1", "eth0");
	fakesys_add_gid(root, "mlx5_0", 1, 3, "0000:0000:0000:0000:0000:ffff:0a00:3c03", "RoCE v2",
			"eth0");
	fakesys_add_empty_gids(root, "mlx5_0", 1, 4, 15);

	fakesys_add_netdev_pci(root, "eth1", "0000:3c:00.0");
	fakesys_add_rdma_pci(root, "mlx5_1", "0000:3c:00.0", "eaeb:d3ff:fecc:c920", "Ethernet");
	fakesys_add_gid(root, "mlx5_1", 1, 0, "fe80:0000:0000:0000:eaeb:d3ff:fecc:c920",
			"IB/RoCE v1", "eth1");
	fakesys_add_gid(root, "mlx5_1", 1, 1, "fe80:0000:0000:0000:eaeb:d3ff:fecc:c920", "RoCE v2",
			"eth1");
	fakesys_add_gid(root, "mlx5_1", 1, 2, "0000:0000:0000:0000:0000:ffff:190b:8002",
			"IB/RoCE v1", "eth1");
	fakesys_add_gid(root, "mlx5_1", 1, 3, "0000:0000:0000:0000:0000:ffff:190b:8002", "RoCE v2",
			"eth1");
	fakesys_add_empty_gids(root, "mlx5_1", 1, 4, 15);
}

/*
 * The IIJ E810 walkthrough: irdma0 on an E810 (ice) whose host netdev is ens192; GID[0]
 * fe80::b696:91ff:feec:a458 and GID[1] ::ffff:10.100.100.1, both RoCE v2,
 * gid_tbl_len 32. With aux_parent the ib_device hangs off ice.roce.0 (as
 * the brief's kernels do); without it, off the PCI function (older irdma).
 */
static void add_irdma_e810(const char *root, bool aux_parent)
{
	fakesys_add_netdev_pci(root, "ens192", "0000:2f:00.0");
	fakesys_add_aux(root, "0000:2f:00.0", "ice.roce.0");
	if (aux_parent)
		fakesys_add_rdma_aux(root, "irdma0", "0000:2f:00.0", "ice.roce.0",
				     "b696:91ff:feec:a458", "Ethernet");
	else
		fakesys_add_rdma_pci(root, "irdma0", "0000:2f:00.0", "b696:91ff:feec:a458",
				     "Ethernet");
	fakesys_add_gid(root, "irdma0", 1, 0, "fe80:0000:0000:0000:b696:91ff:feec:a458", "RoCE v2",
			"ens192");
	fakesys_add_gid(root, "irdma0", 1, 1, "0000:0000:0000:0000:0000:ffff:0a64:6401", "RoCE v2",
			"ens192");
	fakesys_add_empty_gids(root, "irdma0", 1, 2, 31);
}

/*
 * The Alibaba PAI eRDMA guide (eRDMA, NCCL_IB_GID_INDEX=1): erdma_0 is its own PCI function;
 * its netdev is a virtio-net interface on another function, so only the GID
 * table ties them together.
 */
static void add_erdma_pai(const char *root, const char *ifname)
{
	fakesys_add_netdev_pci(root, ifname, "0000:00:05.0");
	fakesys_add_rdma_pci(root, "erdma_0", "0000:00:06.0", "0216:3eff:fe0c:1a2b", "Ethernet");
	fakesys_add_gid(root, "erdma_0", 1, 0, "fe80:0000:0000:0000:0216:3eff:fe0c:1a2b", "RoCE v2",
			ifname);
	fakesys_add_gid(root, "erdma_0", 1, 1, "0000:0000:0000:0000:0000:ffff:ac10:000a", "RoCE v2",
			ifname);
	fakesys_add_empty_gids(root, "erdma_0", 1, 2, 3);
}

/* Soft-RoCE on a veth: devices/virtual/infiniband/rxe0, DEV/parent = veth0. */
static void add_rxe(const char *root)
{
	fakesys_add_netdev_virtual(root, "veth0");
	fakesys_add_rdma_virtual(root, "rxe0", "veth0", "a0b3:ccff:fed5:e6f7", "Ethernet");
	fakesys_add_gid(root, "rxe0", 1, 0, "fe80:0000:0000:0000:a0b3:ccff:fed5:e6f7", "IB/RoCE v1",
			"veth0");
	fakesys_add_gid(root, "rxe0", 1, 1, "fe80:0000:0000:0000:a0b3:ccff:fed5:e6f7", "RoCE v2",
			"veth0");
	fakesys_add_gid(root, "rxe0", 1, 2, "0000:0000:0000:0000:0000:ffff:c0a8:6402", "IB/RoCE v1",
			"veth0");
	fakesys_add_gid(root, "rxe0", 1, 3, "0000:0000:0000:0000:0000:ffff:c0a8:6402", "RoCE v2",
			"veth0");
	fakesys_add_empty_gids(root, "rxe0", 1, 4, 7);
}

/* An InfiniBand HCA: types say "IB/RoCE v1", ndevs cannot be read, IPoIB ib0 on the PCI function. */
static void add_ib(const char *root)
{
	fakesys_add_netdev_pci(root, "ib0", "0000:86:00.0");
	fakesys_add_rdma_pci(root, "mlx5_4", "0000:86:00.0", "0c42:a103:00f3:1a2b", "InfiniBand");
	fakesys_add_gid(root, "mlx5_4", 1, 0, "fe80:0000:0000:0000:0c42:a103:00f3:1a2b",
			"IB/RoCE v1", NULL);
	fakesys_add_empty_gids(root, "mlx5_4", 1, 1, 3);
}

/* Everything above on one node. */
static void add_mixed_node(const char *root)
{
	add_mlx5_cce(root);
	add_irdma_e810(root, true);
	add_erdma_pai(root, "enp0s5");
	add_rxe(root);
	add_ib(root);
	fakesys_add_netdev_virtual(root, "docker0");
}

static const struct rn_gid_entry *find_roce_v2_ipv4(const struct rn_gid_table *t, const char *dev)
{
	for (size_t i = 0; i < t->n; i++)
		if (strcmp(t->entries[i].dev, dev) == 0 && t->entries[i].type == RN_GID_ROCE_V2 &&
		    t->entries[i].ipv4[0])
			return &t->entries[i];
	return NULL;
}

/* Index of dev's first RoCE v2 IPv4 entry, -1 when it has none. */
static long v2_ipv4_index(const struct rn_gid_table *t, const char *dev)
{
	const struct rn_gid_entry *e = find_roce_v2_ipv4(t, dev);

	return e ? (long)e->index : -1;
}

/* ---- root ---- */

static void root_is_sys_unless_env_or_override_says_otherwise(void)
{
	rn_sysfs_set_root(NULL);
	unsetenv("RDMANS_SYSFS_ROOT");
	CHECK_STR(rn_sysfs_root(), "/sys");
	setenv("RDMANS_SYSFS_ROOT", "/tmp/from-env", 1);
	CHECK_STR(rn_sysfs_root(), "/tmp/from-env");
	rn_sysfs_set_root("/tmp/from-call");
	CHECK_STR(rn_sysfs_root(), "/tmp/from-call");
	rn_sysfs_set_root(NULL);
	CHECK_STR(rn_sysfs_root(), "/tmp/from-env");
	setenv("RDMANS_SYSFS_ROOT", "", 1);
	CHECK_STR(rn_sysfs_root(), "/sys");
	unsetenv("RDMANS_SYSFS_ROOT");
	CHECK_STR(rn_sysfs_root(), "/sys");
}

static void missing_root_is_an_error_naming_it(void)
{
	static const char missing[] = "/nonexistent/rdmans-fakesys-missing";
	_cleanup_free_ struct rn_sysfs_rdma_dev *devs = NULL;
	_cleanup_(rn_gid_table_free) struct rn_gid_table t = { 0 };
	struct rn_sysfs_rdma_dev dev;
	struct rn_error err = { 0 };
	char names[2][RN_RDMA_NAME_MAX];
	char nets[2][IF_NAMESIZE];
	char bdf[RN_BUS_ID_MAX];
	size_t n = 99;

	rn_sysfs_set_root(missing);
	CHECK_INT(rn_sysfs_rdma_list(&devs, &n, &err), -ENOENT);
	CHECK_INT(err.code, ENOENT);
	CHECK_CONTAINS(err.msg, missing);
	CHECK_CONTAINS(err.msg, "RDMANS_SYSFS_ROOT");
	CHECK(devs == NULL);
	CHECK_INT(n, 0);
	rn_error_clear(&err);
	CHECK_INT(rn_sysfs_gids(NULL, &t, &err), -ENOENT);
	CHECK_CONTAINS(err.msg, missing);
	CHECK_INT(t.n, 0);
	CHECK_INT(rn_sysfs_gids("mlx5_0", &t, &err), -ENOENT);
	CHECK_INT(rn_sysfs_rdma_get("mlx5_0", &dev, &err), -ENOENT);
	CHECK_INT(rn_sysfs_rdma_by_bus_id("0000:3b:00.0", names, 2, &n, &err), -ENOENT);
	CHECK_INT(rn_sysfs_rdma_by_netdev("eth0", names, 2, &n, &err), -ENOENT);
	CHECK_INT(rn_sysfs_netdevs_by_bus_id("0000:3b:00.0", nets, 2, &n, &err), -ENOENT);
	CHECK_INT(rn_sysfs_netdev_pci("eth0", bdf, sizeof(bdf), &err), -ENOENT);
	CHECK_CONTAINS(err.msg, missing);
	rn_sysfs_set_root(NULL);
}

static void node_without_rdma_lists_nothing(void)
{
	_cleanup_fake_ char *root = fake_start();
	_cleanup_free_ struct rn_sysfs_rdma_dev *devs = NULL;
	_cleanup_(rn_gid_table_free) struct rn_gid_table t = { 0 };
	struct rn_error err = { 0 };
	char path[4096];
	size_t n = 99;

	/* class/infiniband exists but is empty (ib_core loaded, no driver) */
	CHECK_INT(rn_sysfs_rdma_list(&devs, &n, &err), 0);
	CHECK_INT(n, 0);
	CHECK(devs == NULL);
	CHECK_INT(rn_sysfs_gids(NULL, &t, &err), 0);
	CHECK_INT(t.n, 0);

	/* no class/infiniband at all (ib_core not loaded) */
	snprintf(path, sizeof(path), "%s/class/infiniband", root);
	CHECK_INT(rmdir(path), 0);
	n = 99;
	CHECK_INT(rn_sysfs_rdma_list(&devs, &n, &err), 0);
	CHECK_INT(n, 0);
	CHECK_INT(rn_sysfs_gids(NULL, &t, &err), 0);
	CHECK_INT(t.n, 0);
	CHECK(!rn_error_isset(&err));
}

/* ---- GID tables ---- */

static void mlx5_gid_table_reads_like_show_gids(void)
{
	static const struct {
		uint32_t index;
		const char *gid, *ipv4, *ver, *netdev;
	} rows[] = {
		{ 0, "fe80:0000:0000:0000:f820:20ff:fe28:c769", "", "v1", "eth0" },
		{ 1, "fe80:0000:0000:0000:f820:20ff:fe28:c769", "", "v2", "eth0" },
		{ 2, "0000:0000:0000:0000:0000:ffff:0a00:3c03", "10.0.60.3", "v1", "eth0" },
		{ 3, "0000:0000:0000:0000:0000:ffff:0a00:3c03", "10.0.60.3", "v2", "eth0" },
	};
	static const uint8_t raw3[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 60, 3 };
	_cleanup_fake_ char *root = fake_start();
	_cleanup_(rn_gid_table_free) struct rn_gid_table t = { 0 };
	struct rn_error err = { 0 };

	add_mlx5_cce(root);
	REQUIRE_INT(rn_sysfs_gids("mlx5_0", &t, &err), 0);
	/* 16 slots, 12 of them empty */
	REQUIRE_INT(t.n, 4);
	for (size_t i = 0; i < 4; i++) {
		const struct rn_gid_entry *e = &t.entries[i];

		CHECK_STR(e->dev, "mlx5_0");
		CHECK_INT(e->port, 1);
		CHECK_INT(e->index, rows[i].index);
		CHECK_STR(e->gid, rows[i].gid);
		CHECK_STR(e->ipv4, rows[i].ipv4);
		CHECK_STR(rn_gid_type_version(e->type), rows[i].ver);
		CHECK_STR(e->netdev, rows[i].netdev);
	}
	CHECK(memcmp(t.entries[3].raw, raw3, 16) == 0);
out:;
}

static void mlx5_roce_v2_ipv4_gid_is_index_3(void)
{
	_cleanup_fake_ char *root = fake_start();
	_cleanup_(rn_gid_table_free) struct rn_gid_table t = { 0 };
	const struct rn_gid_entry *e;
	struct rn_error err = { 0 };

	add_mlx5_cce(root);
	REQUIRE_INT(rn_sysfs_gids(NULL, &t, &err), 0);
	REQUIRE_INT(t.n, 8);
	e = find_roce_v2_ipv4(&t, "mlx5_0");
	CHECK(e != NULL);
	if (e) {
		CHECK_INT(e->index, 3);
		CHECK_STR(e->ipv4, "10.0.60.3");
		CHECK_STR(e->netdev, "eth0");
	}
	e = find_roce_v2_ipv4(&t, "mlx5_1");
	CHECK(e != NULL);
	if (e) {
		CHECK_INT(e->index, 3);
		CHECK_STR(e->ipv4, "25.11.128.2");
		CHECK_STR(e->netdev, "eth1");
	}
out:;
}

static void irdma_roce_v2_ipv4_gid_is_index_1(void)
{
	_cleanup_fake_ char *root = fake_start();
	_cleanup_(rn_gid_table_free) struct rn_gid_table t = { 0 };
	const struct rn_gid_entry *e;
	struct rn_error err = { 0 };

	add_irdma_e810(root, true);
	REQUIRE_INT(rn_sysfs_gids("irdma0", &t, &err), 0);
	/* gid_tbl_len 32, two filled */
	REQUIRE_INT(t.n, 2);
	CHECK_INT(t.entries[0].index, 0);
	CHECK_STR(t.entries[0].gid, "fe80:0000:0000:0000:b696:91ff:feec:a458");
	CHECK_INT(t.entries[0].type, RN_GID_ROCE_V2);
	CHECK_STR(t.entries[0].ipv4, "");
	CHECK_INT(t.entries[1].index, 1);
	CHECK_STR(t.entries[1].gid, "0000:0000:0000:0000:0000:ffff:0a64:6401");
	CHECK_INT(t.entries[1].type, RN_GID_ROCE_V2);
	CHECK_STR(t.entries[1].ipv4, "10.100.100.1");
	CHECK_STR(t.entries[1].netdev, "ens192");
	e = find_roce_v2_ipv4(&t, "irdma0");
	CHECK(e == &t.entries[1]);
out:;
}

static void infiniband_port_gids_are_ib_and_have_no_netdev(void)
{
	_cleanup_fake_ char *root = fake_start();
	_cleanup_(rn_gid_table_free) struct rn_gid_table t = { 0 };
	struct rn_error err = { 0 };

	add_ib(root);
	REQUIRE_INT(rn_sysfs_gids("mlx5_4", &t, &err), 0);
	REQUIRE_INT(t.n, 1);
	CHECK_INT(t.entries[0].type, RN_GID_IB);
	CHECK_STR(rn_gid_type_version(t.entries[0].type), "IB");
	CHECK_STR(t.entries[0].gid, "fe80:0000:0000:0000:0c42:a103:00f3:1a2b");
	CHECK_STR(t.entries[0].netdev, "");
	CHECK_STR(t.entries[0].ipv4, "");
	CHECK(find_roce_v2_ipv4(&t, "mlx5_4") == NULL);
out:;
}

static void unreadable_slots_are_empty_not_errors(void)
{
	_cleanup_fake_ char *root = fake_start();
	_cleanup_(rn_gid_table_free) struct rn_gid_table t = { 0 };
	struct rn_error err = { 0 };

	fakesys_add_netdev_pci(root, "eth0", "0000:3b:00.0");
	fakesys_add_rdma_pci(root, "mlx5_0", "0000:3b:00.0", NULL, "Ethernet");
	fakesys_add_empty_gids(root, "mlx5_0", 1, 0, 1);
	fakesys_add_unreadable_gid(root, "mlx5_0", 1, 2);
	/* a filled slot whose type and ndev cannot be read (seen on old kernels) */
	fakesys_add_gid(root, "mlx5_0", 1, 3, "0000:0000:0000:0000:0000:ffff:0a00:3c03", NULL,
			NULL);
	fakesys_add_gid(root, "mlx5_0", 1, 4, "0000:0000:0000:0000:0000:ffff:0a00:3c03", "RoCE v2",
			"eth0");
	fakesys_add_empty_gids(root, "mlx5_0", 1, 5, 63);

	REQUIRE_INT(rn_sysfs_gids("mlx5_0", &t, &err), 0);
	CHECK(!rn_error_isset(&err));
	REQUIRE_INT(t.n, 2);
	CHECK_INT(t.entries[0].index, 3);
	CHECK_INT(t.entries[0].type, RN_GID_UNKNOWN);
	CHECK_STR(t.entries[0].netdev, "");
	CHECK_STR(t.entries[0].ipv4, "10.0.60.3");
	CHECK_INT(t.entries[1].index, 4);
	CHECK_INT(t.entries[1].type, RN_GID_ROCE_V2);
	CHECK_STR(t.entries[1].netdev, "eth0");
out:;
}

static void malformed_gid_is_an_error_naming_the_file(void)
{
	_cleanup_fake_ char *root = fake_start();
	_cleanup_(rn_gid_table_free) struct rn_gid_table t = { 0 };
	struct rn_error err = { 0 };

	fakesys_add_rdma_pci(root, "mlx5_0", "0000:3b:00.0", NULL, "Ethernet");
	fakesys_add_gid(root, "mlx5_0", 1, 0, "not-a-gid", "RoCE v2", "eth0");
	CHECK_INT(rn_sysfs_gids("mlx5_0", &t, &err), -EINVAL);
	CHECK_CONTAINS(err.msg, "/class/infiniband/mlx5_0/ports/1/gids/0: ");
	CHECK_CONTAINS(err.msg, "'not-a-gid' is not a GID");
	CHECK_INT(t.n, 0);
	CHECK(t.entries == NULL);
}

static void gids_sort_by_device_port_and_index(void)
{
	_cleanup_fake_ char *root = fake_start();
	_cleanup_(rn_gid_table_free) struct rn_gid_table t = { 0 };
	struct rn_error err = { 0 };
	static const struct {
		const char *dev;
		uint32_t port, index;
	} want[] = {
		{ "mlx4_0", 1, 0 },  { "mlx4_0", 2, 0 }, { "mlx4_0", 2, 2 },
		{ "mlx4_0", 2, 10 }, { "mlx5_2", 1, 0 }, { "mlx5_10", 1, 1 },
	};

	/* created out of order; "10" < "2" and "mlx5_10" < "mlx5_2" as plain strings */
	fakesys_add_rdma_pci(root, "mlx5_10", "0000:0a:00.0", NULL, "Ethernet");
	fakesys_add_gid(root, "mlx5_10", 1, 1, "fe80::10", "RoCE v2", NULL);
	fakesys_add_rdma_pci(root, "mlx5_2", "0000:02:00.0", NULL, "Ethernet");
	fakesys_add_gid(root, "mlx5_2", 1, 0, "fe80::2", "RoCE v2", NULL);
	fakesys_add_rdma_pci(root, "mlx4_0", "0000:04:00.0", NULL, "InfiniBand");
	fakesys_add_port(root, "mlx4_0", 2, "Ethernet");
	fakesys_add_gid(root, "mlx4_0", 2, 10, "fe80::4:2:10", "RoCE v2", NULL);
	fakesys_add_gid(root, "mlx4_0", 2, 2, "fe80::4:2:2", "IB/RoCE v1", NULL);
	fakesys_add_gid(root, "mlx4_0", 2, 0, "fe80::4:2:0", "IB/RoCE v1", NULL);
	fakesys_add_gid(root, "mlx4_0", 1, 0, "fe80::4:1:0", "IB/RoCE v1", NULL);

	REQUIRE_INT(rn_sysfs_gids(NULL, &t, &err), 0);
	REQUIRE_INT(t.n, RN_ARRAY_SIZE(want));
	for (size_t i = 0; i < t.n; i++) {
		CHECK_STR(t.entries[i].dev, want[i].dev);
		CHECK_INT(t.entries[i].port, want[i].port);
		CHECK_INT(t.entries[i].index, want[i].index);
	}
	/* the same "IB/RoCE v1" is IB on the IB port and RoCE v1 on the Ethernet port */
	CHECK_INT(t.entries[0].type, RN_GID_IB);
	CHECK_INT(t.entries[1].type, RN_GID_ROCE_V1);
	/* written compressed, read back in the sysfs form */
	CHECK_STR(t.entries[3].gid, "fe80:0000:0000:0000:0000:0004:0002:0010");
out:;
}

static void gids_of_unknown_device_is_enodev_naming_it(void)
{
	_cleanup_fake_ char *root = fake_start();
	_cleanup_(rn_gid_table_free) struct rn_gid_table t = { 0 };
	struct rn_error err = { 0 };

	add_mlx5_cce(root);
	CHECK_INT(rn_sysfs_gids("mlx5_9", &t, &err), -ENODEV);
	CHECK_INT(err.code, ENODEV);
	CHECK_CONTAINS(err.msg, "RDMA device mlx5_9 not found");
	CHECK_CONTAINS(err.msg, root);
	CHECK_INT(t.n, 0);
	CHECK_INT(rn_sysfs_gids("../net", &t, &err), -EINVAL);
	CHECK_CONTAINS(err.msg, "'../net'");
}

/* ---- devices ---- */

static void irdma_on_auxiliary_bus_belongs_to_its_pci_function(void)
{
	_cleanup_fake_ char *root = fake_start();
	struct rn_sysfs_rdma_dev d;
	struct rn_error err = { 0 };

	add_irdma_e810(root, true);
	REQUIRE_INT(rn_sysfs_rdma_get("irdma0", &d, &err), 0);
	CHECK_STR(d.name, "irdma0");
	CHECK_STR(d.parent_bus, "auxiliary");
	CHECK_STR(d.parent_id, "ice.roce.0");
	CHECK_STR(d.pci_bdf, "0000:2f:00.0");
	CHECK_STR(d.node_guid, "b696:91ff:feec:a458");
	CHECK_STR(d.link_layer, "Ethernet");
	CHECK_INT(d.node_type, RN_NODE_CA);
	CHECK_INT(d.nports, 1);
	REQUIRE_INT(d.n_netdevs, 1);
	CHECK_STR(d.netdevs[0], "ens192");
	CHECK(!d.netdevs_truncated);
	/* the E810 switched to iWARP (devlink's roce/iwarp parameter): an RNIC */
	fakesys_write(root, "class/infiniband/irdma0/node_type", "4: RNIC");
	REQUIRE_INT(rn_sysfs_rdma_get("irdma0", &d, &err), 0);
	CHECK_INT(d.node_type, RN_NODE_RNIC);
out:;
}

static void irdma_parented_to_pci_reads_as_pci(void)
{
	_cleanup_fake_ char *root = fake_start();
	struct rn_sysfs_rdma_dev d;
	struct rn_error err = { 0 };
	char names[2][RN_RDMA_NAME_MAX];
	size_t n = 99;

	/* older irdma: ibdev.dev.parent is the PCI device, ice.roce.0 still exists */
	add_irdma_e810(root, false);
	REQUIRE_INT(rn_sysfs_rdma_get("irdma0", &d, &err), 0);
	CHECK_STR(d.parent_bus, "pci");
	CHECK_STR(d.parent_id, "0000:2f:00.0");
	CHECK_STR(d.pci_bdf, "0000:2f:00.0");
	REQUIRE_INT(d.n_netdevs, 1);
	CHECK_STR(d.netdevs[0], "ens192");
	CHECK_INT(rn_sysfs_rdma_by_bus_id("0000:2f:00.0", names, 2, &n, &err), 0);
	REQUIRE_INT(n, 1);
	CHECK_STR(names[0], "irdma0");
	/* sysfs does not tie irdma0 to ice.roce.0 here: no guessing from names */
	CHECK_INT(rn_sysfs_rdma_by_bus_id("ice.roce.0", names, 2, &n, &err), 0);
	CHECK_INT(n, 0);
out:;
}

static void erdma_finds_its_netdev_through_the_gid_table(void)
{
	_cleanup_fake_ char *root = fake_start();
	_cleanup_(rn_gid_table_free) struct rn_gid_table t = { 0 };
	struct rn_sysfs_rdma_dev d;
	struct rn_error err = { 0 };
	const struct rn_gid_entry *e;
	char names[2][RN_RDMA_NAME_MAX];
	char nets[2][IF_NAMESIZE];
	char bdf[RN_BUS_ID_MAX];
	size_t n = 99;

	add_erdma_pai(root, "eth0");
	REQUIRE_INT(rn_sysfs_rdma_get("erdma_0", &d, &err), 0);
	CHECK_STR(d.parent_bus, "pci");
	CHECK_STR(d.pci_bdf, "0000:00:06.0");
	REQUIRE_INT(d.n_netdevs, 1);
	CHECK_STR(d.netdevs[0], "eth0");

	CHECK_INT(rn_sysfs_rdma_by_netdev("eth0", names, 2, &n, &err), 0);
	REQUIRE_INT(n, 1);
	CHECK_STR(names[0], "erdma_0");
	/* the netdev sits on another PCI function than the RDMA device */
	CHECK_INT(rn_sysfs_netdev_pci("eth0", bdf, sizeof(bdf), &err), 0);
	CHECK_STR(bdf, "0000:00:05.0");
	CHECK_INT(rn_sysfs_netdevs_by_bus_id("0000:00:06.0", nets, 2, &n, &err), 0);
	CHECK_INT(n, 0);

	/* NCCL_IB_GID_INDEX=1 of the Alibaba PAI eRDMA guide */
	REQUIRE_INT(rn_sysfs_gids("erdma_0", &t, &err), 0);
	REQUIRE_INT(t.n, 2);
	e = find_roce_v2_ipv4(&t, "erdma_0");
	CHECK(e != NULL);
	if (e) {
		CHECK_INT(e->index, 1);
		CHECK_STR(e->ipv4, "172.16.0.10");
		CHECK_STR(e->netdev, "eth0");
	}
out:;
}

static void rxe_is_virtual_and_bound_to_its_veth(void)
{
	_cleanup_fake_ char *root = fake_start();
	_cleanup_(rn_gid_table_free) struct rn_gid_table t = { 0 };
	struct rn_sysfs_rdma_dev d;
	struct rn_error err = { 0 };
	char names[2][RN_RDMA_NAME_MAX];
	char bdf[RN_BUS_ID_MAX] = "junk";
	size_t n = 99;

	add_rxe(root);
	REQUIRE_INT(rn_sysfs_rdma_get("rxe0", &d, &err), 0);
	CHECK_STR(d.parent_bus, "");
	CHECK_STR(d.parent_id, "");
	CHECK_STR(d.pci_bdf, "");
	CHECK_STR(d.node_guid, "a0b3:ccff:fed5:e6f7");
	CHECK_STR(d.link_layer, "Ethernet");
	REQUIRE_INT(d.n_netdevs, 1);
	CHECK_STR(d.netdevs[0], "veth0");

	CHECK_INT(rn_sysfs_rdma_by_netdev("veth0", names, 2, &n, &err), 0);
	REQUIRE_INT(n, 1);
	CHECK_STR(names[0], "rxe0");

	CHECK_INT(rn_sysfs_netdev_pci("veth0", bdf, sizeof(bdf), &err), -ENOENT);
	CHECK_INT(err.code, ENOENT);
	CHECK_CONTAINS(err.msg, "netdev veth0 has no parent device");
	CHECK_STR(bdf, "");

	REQUIRE_INT(rn_sysfs_gids("rxe0", &t, &err), 0);
	REQUIRE_INT(t.n, 4);
	CHECK_INT(v2_ipv4_index(&t, "rxe0"), 3);
	CHECK_STR(t.entries[3].ipv4, "192.168.100.2");
out:;
}

static void rxe_without_gids_is_bound_through_its_parent_attribute(void)
{
	_cleanup_fake_ char *root = fake_start();
	struct rn_sysfs_rdma_dev d;
	struct rn_error err = { 0 };

	/* veth1 is down: no GID entries, but rxe's "parent" attribute names it */
	fakesys_add_netdev_virtual(root, "veth1");
	fakesys_add_rdma_virtual(root, "rxe1", "veth1", NULL, "Ethernet");
	/* a parent naming a netdev that is not here is ignored */
	fakesys_add_rdma_virtual(root, "rxe2", "gone0", NULL, "Ethernet");
	REQUIRE_INT(rn_sysfs_rdma_get("rxe1", &d, &err), 0);
	CHECK_STR(d.node_guid, "");
	REQUIRE_INT(d.n_netdevs, 1);
	CHECK_STR(d.netdevs[0], "veth1");
	REQUIRE_INT(rn_sysfs_rdma_get("rxe2", &d, &err), 0);
	CHECK_INT(d.n_netdevs, 0);
out:;
}

static void bond_device_has_the_bond_and_its_pci_netdev(void)
{
	_cleanup_fake_ char *root = fake_start();
	_cleanup_(rn_gid_table_free) struct rn_gid_table t = { 0 };
	struct rn_sysfs_rdma_dev d;
	struct rn_error err = { 0 };
	char names[2][RN_RDMA_NAME_MAX];
	size_t n = 99;

	/* The EPFL RunAI guide: mlx5_bond_0, the GID table bound to bond0, the PF netdev on the PCI function */
	fakesys_add_netdev_pci(root, "ens1f0np0", "0000:3b:00.0");
	fakesys_add_netdev_virtual(root, "bond0");
	fakesys_add_rdma_pci(root, "mlx5_bond_0", "0000:3b:00.0", NULL, "Ethernet");
	fakesys_add_gid(root, "mlx5_bond_0", 1, 0, "fe80::1", "IB/RoCE v1", "bond0");
	fakesys_add_gid(root, "mlx5_bond_0", 1, 1, "fe80::1", "RoCE v2", "bond0");
	fakesys_add_gid(root, "mlx5_bond_0", 1, 2, "::ffff:10.1.2.3", "IB/RoCE v1", "bond0");
	fakesys_add_gid(root, "mlx5_bond_0", 1, 3, "::ffff:10.1.2.3", "RoCE v2", "bond0");
	fakesys_add_empty_gids(root, "mlx5_bond_0", 1, 4, 9);

	REQUIRE_INT(rn_sysfs_rdma_get("mlx5_bond_0", &d, &err), 0);
	REQUIRE_INT(d.n_netdevs, 2);
	CHECK_STR(d.netdevs[0], "bond0");
	CHECK_STR(d.netdevs[1], "ens1f0np0");
	CHECK_INT(rn_sysfs_rdma_by_netdev("bond0", names, 2, &n, &err), 0);
	REQUIRE_INT(n, 1);
	CHECK_STR(names[0], "mlx5_bond_0");
	CHECK_INT(rn_sysfs_rdma_by_netdev("ens1f0np0", names, 2, &n, &err), 0);
	REQUIRE_INT(n, 1);
	CHECK_STR(names[0], "mlx5_bond_0");
	REQUIRE_INT(rn_sysfs_gids("mlx5_bond_0", &t, &err), 0);
	CHECK_INT(v2_ipv4_index(&t, "mlx5_bond_0"), 3);
out:;
}

static void infiniband_device_reads_its_link_layer_and_ipoib_netdev(void)
{
	_cleanup_fake_ char *root = fake_start();
	struct rn_sysfs_rdma_dev d;
	struct rn_error err = { 0 };

	add_ib(root);
	fakesys_add_port(root, "mlx5_4", 2, "Ethernet");
	REQUIRE_INT(rn_sysfs_rdma_get("mlx5_4", &d, &err), 0);
	CHECK_STR(d.parent_bus, "pci");
	CHECK_STR(d.link_layer, "InfiniBand");
	CHECK_INT(d.nports, 2);
	REQUIRE_INT(d.n_netdevs, 1);
	CHECK_STR(d.netdevs[0], "ib0");
out:;
}

static void get_unknown_device_is_enodev_naming_it(void)
{
	_cleanup_fake_ char *root = fake_start();
	struct rn_sysfs_rdma_dev d;
	struct rn_error err = { 0 };

	add_mlx5_cce(root);
	CHECK_INT(rn_sysfs_rdma_get("mlx5_9", &d, &err), -ENODEV);
	CHECK_INT(err.code, ENODEV);
	CHECK_CONTAINS(err.msg, "RDMA device mlx5_9 not found in ");
	CHECK_CONTAINS(err.msg, "another network namespace");
	CHECK_INT(rn_sysfs_rdma_get("", &d, &err), -EINVAL);
	CHECK_INT(rn_sysfs_rdma_get("mlx5_0/..", &d, &err), -EINVAL);
}

static void mixed_node_lists_every_device_in_natural_order(void)
{
	static const struct {
		const char *name, *bus, *parent, *bdf, *link_layer, *netdev;
	} want[] = {
		{ "erdma_0", "pci", "0000:00:06.0", "0000:00:06.0", "Ethernet", "enp0s5" },
		{ "irdma0", "auxiliary", "ice.roce.0", "0000:2f:00.0", "Ethernet", "ens192" },
		{ "mlx5_0", "pci", "0000:3b:00.0", "0000:3b:00.0", "Ethernet", "eth0" },
		{ "mlx5_1", "pci", "0000:3c:00.0", "0000:3c:00.0", "Ethernet", "eth1" },
		{ "mlx5_4", "pci", "0000:86:00.0", "0000:86:00.0", "InfiniBand", "ib0" },
		{ "rxe0", "", "", "", "Ethernet", "veth0" },
	};
	_cleanup_fake_ char *root = fake_start();
	_cleanup_free_ struct rn_sysfs_rdma_dev *devs = NULL;
	_cleanup_(rn_gid_table_free) struct rn_gid_table t = { 0 };
	struct rn_error err = { 0 };
	size_t n = 0;

	add_mixed_node(root);
	REQUIRE_INT(rn_sysfs_rdma_list(&devs, &n, &err), 0);
	REQUIRE_INT(n, RN_ARRAY_SIZE(want));
	for (size_t i = 0; i < n; i++) {
		CHECK_STR(devs[i].name, want[i].name);
		CHECK_STR(devs[i].parent_bus, want[i].bus);
		CHECK_STR(devs[i].parent_id, want[i].parent);
		CHECK_STR(devs[i].pci_bdf, want[i].bdf);
		CHECK_STR(devs[i].link_layer, want[i].link_layer);
		CHECK_INT(devs[i].nports, 1);
		CHECK_INT(devs[i].n_netdevs, 1);
		CHECK_STR(devs[i].netdevs[0], want[i].netdev);
	}

	/* 2 erdma + 2 irdma + 4 + 4 mlx5 + 1 IB + 4 rxe */
	REQUIRE_INT(rn_sysfs_gids(NULL, &t, &err), 0);
	REQUIRE_INT(t.n, 17);
	CHECK_STR(t.entries[0].dev, "erdma_0");
	CHECK_STR(t.entries[2].dev, "irdma0");
	CHECK_STR(t.entries[4].dev, "mlx5_0");
	CHECK_STR(t.entries[12].dev, "mlx5_4");
	CHECK_STR(t.entries[16].dev, "rxe0");
	CHECK_INT(t.entries[16].index, 3);
out:;
}

static void by_bus_id_finds_devices_of_a_pci_function_or_auxiliary_device(void)
{
	_cleanup_fake_ char *root = fake_start();
	struct rn_error err = { 0 };
	char names[4][RN_RDMA_NAME_MAX];
	size_t n = 99;

	add_mixed_node(root);
	CHECK_INT(rn_sysfs_rdma_by_bus_id("0000:3b:00.0", names, 4, &n, &err), 0);
	REQUIRE_INT(n, 1);
	CHECK_STR(names[0], "mlx5_0");
	/* an auxiliary child's device is found from its PCI function (rdma-cni misses it) */
	CHECK_INT(rn_sysfs_rdma_by_bus_id("0000:2f:00.0", names, 4, &n, &err), 0);
	REQUIRE_INT(n, 1);
	CHECK_STR(names[0], "irdma0");
	CHECK_INT(rn_sysfs_rdma_by_bus_id("ice.roce.0", names, 4, &n, &err), 0);
	REQUIRE_INT(n, 1);
	CHECK_STR(names[0], "irdma0");
	/* a PCI function without RDMA (erdma's virtio-net) is no error */
	CHECK_INT(rn_sysfs_rdma_by_bus_id("0000:00:05.0", names, 4, &n, &err), 0);
	CHECK_INT(n, 0);
	CHECK(!rn_error_isset(&err));
out:;
}

static void by_bus_id_of_unknown_bus_device_is_enodev_naming_it(void)
{
	_cleanup_fake_ char *root = fake_start();
	struct rn_error err = { 0 };
	char names[4][RN_RDMA_NAME_MAX];
	size_t n = 99;

	add_mixed_node(root);
	CHECK_INT(rn_sysfs_rdma_by_bus_id("0000:99:00.0", names, 4, &n, &err), -ENODEV);
	CHECK_INT(n, 0);
	CHECK_CONTAINS(err.msg, "no PCI or auxiliary device 0000:99:00.0");
	CHECK_INT(rn_sysfs_rdma_by_bus_id("0000:3b:00.0/..", names, 4, &n, &err), -EINVAL);
	CHECK_INT(rn_sysfs_rdma_by_bus_id("", names, 4, &n, &err), -EINVAL);
}

static void by_bus_id_reports_every_device_of_a_function_beyond_max(void)
{
	_cleanup_fake_ char *root = fake_start();
	struct rn_error err = { 0 };
	char names[1][RN_RDMA_NAME_MAX];
	size_t n = 99;

	/* one PCI function, two RDMA devices (its own and a sub-function's) */
	fakesys_add_rdma_pci(root, "mlx5_0", "0000:3b:00.0", NULL, "Ethernet");
	fakesys_add_rdma_aux(root, "mlx5_2", "0000:3b:00.0", "mlx5_core.sf.2", NULL, "Ethernet");
	CHECK_INT(rn_sysfs_rdma_by_bus_id("0000:3b:00.0", names, 1, &n, &err), 0);
	CHECK_INT(n, 2);
	CHECK_STR(names[0], "mlx5_0");
	CHECK_INT(rn_sysfs_rdma_by_bus_id("0000:3b:00.0", NULL, 0, &n, &err), 0);
	CHECK_INT(n, 2);
	CHECK_INT(rn_sysfs_rdma_by_bus_id("mlx5_core.sf.2", names, 1, &n, &err), 0);
	CHECK_INT(n, 1);
	CHECK_STR(names[0], "mlx5_2");
}

static void by_netdev_finds_devices_bound_to_a_netdev(void)
{
	_cleanup_fake_ char *root = fake_start();
	struct rn_error err = { 0 };
	char names[4][RN_RDMA_NAME_MAX];
	size_t n = 99;

	add_mixed_node(root);
	CHECK_INT(rn_sysfs_rdma_by_netdev("eth1", names, 4, &n, &err), 0);
	REQUIRE_INT(n, 1);
	CHECK_STR(names[0], "mlx5_1");
	CHECK_INT(rn_sysfs_rdma_by_netdev("ens192", names, 4, &n, &err), 0);
	REQUIRE_INT(n, 1);
	CHECK_STR(names[0], "irdma0");
	CHECK_INT(rn_sysfs_rdma_by_netdev("ib0", names, 4, &n, &err), 0);
	REQUIRE_INT(n, 1);
	CHECK_STR(names[0], "mlx5_4");
	CHECK_INT(rn_sysfs_rdma_by_netdev("enp0s5", names, 4, &n, &err), 0);
	REQUIRE_INT(n, 1);
	CHECK_STR(names[0], "erdma_0");
	/* a netdev with no RDMA device is no error */
	CHECK_INT(rn_sysfs_rdma_by_netdev("docker0", names, 4, &n, &err), 0);
	CHECK_INT(n, 0);
	CHECK(!rn_error_isset(&err));
	CHECK_INT(rn_sysfs_rdma_by_netdev("nosuch0", names, 4, &n, &err), -ENODEV);
	CHECK_CONTAINS(err.msg, "netdev nosuch0 not found");
	CHECK_INT(rn_sysfs_rdma_by_netdev("a-name-far-too-long", names, 4, &n, &err), -EINVAL);
out:;
}

static void netdevs_by_bus_id_include_auxiliary_children_but_not_vfs(void)
{
	_cleanup_fake_ char *root = fake_start();
	struct rn_error err = { 0 };
	char nets[4][IF_NAMESIZE];
	size_t n = 99;

	fakesys_add_netdev_pci(root, "ens1f10", "0000:3b:00.0");
	fakesys_add_netdev_pci(root, "ens1f2", "0000:3b:00.0");
	fakesys_add_netdev_pci(root, "ens1f0", "0000:3b:00.0");
	fakesys_add_netdev_aux(root, "ens1f0s2", "0000:3b:00.0", "mlx5_core.sf.2");
	fakesys_add_vf(root, "0000:3b:00.0", "0000:3b:00.2", 0);
	fakesys_add_netdev_pci(root, "ens1f0v0", "0000:3b:00.2");

	CHECK_INT(rn_sysfs_netdevs_by_bus_id("0000:3b:00.0", nets, 4, &n, &err), 0);
	REQUIRE_INT(n, 4);
	CHECK_STR(nets[0], "ens1f0");
	CHECK_STR(nets[1], "ens1f0s2");
	CHECK_STR(nets[2], "ens1f2");
	CHECK_STR(nets[3], "ens1f10");
	CHECK_INT(rn_sysfs_netdevs_by_bus_id("0000:3b:00.2", nets, 4, &n, &err), 0);
	REQUIRE_INT(n, 1);
	CHECK_STR(nets[0], "ens1f0v0");
	CHECK_INT(rn_sysfs_netdevs_by_bus_id("mlx5_core.sf.2", nets, 4, &n, &err), 0);
	REQUIRE_INT(n, 1);
	CHECK_STR(nets[0], "ens1f0s2");
	/* count beyond max */
	CHECK_INT(rn_sysfs_netdevs_by_bus_id("0000:3b:00.0", nets, 1, &n, &err), 0);
	CHECK_INT(n, 4);
	CHECK_STR(nets[0], "ens1f0");
	CHECK_INT(rn_sysfs_netdevs_by_bus_id("0000:d8:00.0", nets, 4, &n, &err), -ENODEV);
	CHECK_CONTAINS(err.msg, "0000:d8:00.0");
out:;
}

static void netdev_pci_gives_the_function_behind_a_netdev(void)
{
	_cleanup_fake_ char *root = fake_start();
	struct rn_error err = { 0 };
	char bdf[RN_BUS_ID_MAX];
	char small[8];

	add_mixed_node(root);
	fakesys_add_netdev_aux(root, "ens1f0s2", "0000:3b:00.0", "mlx5_core.sf.2");
	CHECK_INT(rn_sysfs_netdev_pci("eth0", bdf, sizeof(bdf), &err), 0);
	CHECK_STR(bdf, "0000:3b:00.0");
	CHECK_INT(rn_sysfs_netdev_pci("ens192", bdf, sizeof(bdf), &err), 0);
	CHECK_STR(bdf, "0000:2f:00.0");
	/* a sub-function's netdev belongs to the PCI function of its auxiliary device */
	CHECK_INT(rn_sysfs_netdev_pci("ens1f0s2", bdf, sizeof(bdf), &err), 0);
	CHECK_STR(bdf, "0000:3b:00.0");
	CHECK_INT(rn_sysfs_netdev_pci("docker0", bdf, sizeof(bdf), &err), -ENOENT);
	CHECK_CONTAINS(err.msg, "docker0");
	CHECK_INT(rn_sysfs_netdev_pci("nosuch0", bdf, sizeof(bdf), &err), -ENODEV);
	CHECK_CONTAINS(err.msg, "netdev nosuch0 not found");
	CHECK_INT(rn_sysfs_netdev_pci("eth0", small, sizeof(small), &err), -ERANGE);
	CHECK_CONTAINS(err.msg, "0000:3b:00.0");
}

static void many_netdevs_keep_the_gid_bound_ones(void)
{
	_cleanup_fake_ char *root = fake_start();
	struct rn_sysfs_rdma_dev d;
	struct rn_error err = { 0 };
	char names[2][RN_RDMA_NAME_MAX];
	char ifname[32];
	size_t n = 99;

	/* a switchdev PF: ten representors under the PCI function, the GID table on vlan100 */
	for (int i = 0; i < 10; i++) {
		snprintf(ifname, sizeof(ifname), "pf0vf%d", i);
		fakesys_add_netdev_pci(root, ifname, "0000:3b:00.0");
	}
	fakesys_add_netdev_virtual(root, "vlan100");
	fakesys_add_rdma_pci(root, "mlx5_0", "0000:3b:00.0", NULL, "Ethernet");
	fakesys_add_gid(root, "mlx5_0", 1, 0, "fe80::1", "RoCE v2", "vlan100");

	REQUIRE_INT(rn_sysfs_rdma_get("mlx5_0", &d, &err), 0);
	REQUIRE_INT(d.n_netdevs, RN_SYSFS_MAX_NETDEVS);
	CHECK(d.netdevs_truncated);
	for (int i = 0; i < 7; i++) {
		snprintf(ifname, sizeof(ifname), "pf0vf%d", i);
		CHECK_STR(d.netdevs[i], ifname);
	}
	CHECK_STR(d.netdevs[7], "vlan100");
	/* lookups see past the truncation */
	CHECK_INT(rn_sysfs_rdma_by_netdev("pf0vf9", names, 2, &n, &err), 0);
	REQUIRE_INT(n, 1);
	CHECK_STR(names[0], "mlx5_0");
out:;
}

/* ---- per-port facts (rn_sysfs_port_read) ---- */

/* class/net/IF attributes as the kernel writes them: flags in hex, operstate a word. */
static void set_netdev_attrs(const char *root, const char *ifname, const char *flags,
			     const char *operstate, const char *mtu)
{
	char rel[256];

	snprintf(rel, sizeof(rel), "class/net/%s/flags", ifname);
	fakesys_write(root, rel, flags);
	snprintf(rel, sizeof(rel), "class/net/%s/operstate", ifname);
	fakesys_write(root, rel, operstate);
	snprintf(rel, sizeof(rel), "class/net/%s/mtu", ifname);
	fakesys_write(root, rel, mtu);
}

/* The netdev facts that can be unknown: its MTU and both meanings of up. */
static void check_netdev(const struct rn_sysfs_netdev *nd, int mtu, int admin_up, int oper_up,
			 const char *operstate)
{
	CHECK_INT(nd->mtu, mtu);
	CHECK_INT(nd->admin_up, admin_up);
	CHECK_INT(nd->oper_up, oper_up);
	CHECK_STR(nd->operstate, operstate);
}

static void port_reads_state_link_layer_rate_gid_table_and_bound_netdev(void)
{
	_cleanup_fake_ char *root = fake_start();
	struct rn_sysfs_port p;

	add_mlx5_cce(root);
	fakesys_write(root, "class/infiniband/mlx5_0/ports/1/rate", "100 Gb/sec (4X EDR)");
	set_netdev_attrs(root, "eth0", "0x1003", "up", "9000");
	rn_sysfs_port_read("mlx5_0", 1, &p);
	CHECK_STR(p.dev, "mlx5_0");
	CHECK_INT(p.port, 1);
	CHECK_INT(p.state, 4);
	CHECK_STR(p.state_name, "ACTIVE");
	CHECK_INT(p.phys_state, 5);
	CHECK_STR(p.link_layer, "Ethernet");
	CHECK_STR(p.rate, "100 Gb/sec (4X EDR)");
	CHECK_INT(p.gid_tbl_len, 16);
	CHECK_INT(p.netdev_source, RN_PORT_NETDEV_GID);
	CHECK_STR(p.netdev.name, "eth0");
	CHECK(p.netdev.here);
	CHECK_INT(p.netdev.ifindex, 2);
	check_netdev(&p.netdev, 9000, 1, 1, "up");
}

static void admin_up_is_iff_up_and_oper_up_is_operstate_read_apart(void)
{
	_cleanup_fake_ char *root = fake_start();
	struct rn_sysfs_port p;

	add_mlx5_cce(root);
	/* set up, no carrier: IFF_UP in flags, operstate down */
	set_netdev_attrs(root, "eth0", "0x1003", "down", "1500");
	rn_sysfs_port_read("mlx5_0", 1, &p);
	CHECK_STR(p.netdev.name, "eth0");
	check_netdev(&p.netdev, 1500, 1, 0, "down");
	/* the reverse: flags without IFF_UP (0x1002), operstate up */
	set_netdev_attrs(root, "eth1", "0x1002", "up", "4200");
	rn_sysfs_port_read("mlx5_1", 1, &p);
	CHECK_STR(p.netdev.name, "eth1");
	check_netdev(&p.netdev, 4200, 0, 1, "up");
	/* neither: operstate is a word other than "up" */
	set_netdev_attrs(root, "eth1", "0x1002", "lowerlayerdown", "4200");
	rn_sysfs_port_read("mlx5_1", 1, &p);
	check_netdev(&p.netdev, 4200, 0, 0, "lowerlayerdown");
}

static void port_without_netdev_has_every_netdev_fact_unknown(void)
{
	_cleanup_fake_ char *root = fake_start();
	struct rn_sysfs_port p;

	/* InfiniBand: ndevs cannot be read, no DEV/parent, no netdev on its PCI function */
	fakesys_add_rdma_pci(root, "mlx5_4", "0000:86:00.0", NULL, "InfiniBand");
	fakesys_add_empty_gids(root, "mlx5_4", 1, 0, 3);
	rn_sysfs_port_read("mlx5_4", 1, &p);
	CHECK_STR(p.link_layer, "InfiniBand");
	CHECK_INT(p.state, 4);
	CHECK_INT(p.gid_tbl_len, 4);
	CHECK_INT(p.netdev_source, RN_PORT_NETDEV_NONE);
	CHECK_STR(p.netdev.name, "");
	CHECK(!p.netdev.here);
	CHECK_INT(p.netdev.ifindex, 0);
	check_netdev(&p.netdev, -1, -1, -1, "");
}

/* A fake tree's ports are not the kernel's: RDMA netlink is not asked, sysfs's binding stands. */
static void netlink_has_no_say_on_a_fake_tree(void)
{
	_cleanup_fake_ char *root = fake_start();
	struct rn_error err = { 0 };
	struct rn_sysfs_port p;

	add_mlx5_cce(root);
	set_netdev_attrs(root, "eth0", "0x1003", "up", "9000");
	rn_sysfs_port_read("mlx5_0", 1, &p);
	CHECK_INT(rn_port_netdev_decide_all(&p, 1, &err), 0);
	CHECK_STR(err.msg, "");
	CHECK_INT(p.netdev_source, RN_PORT_NETDEV_GID);
	CHECK_STR(p.netdev.name, "eth0");
	CHECK(p.netdev.here);
	check_netdev(&p.netdev, 9000, 1, 1, "up");
}

static void named_netdev_that_is_not_here_is_bound_but_unknown(void)
{
	_cleanup_fake_ char *root = fake_start();
	struct rn_sysfs_port p;
	struct rn_sysfs_netdev nd;

	add_mlx5_cce(root);
	set_netdev_attrs(root, "eth0", "0x1003", "up", "9000");
	/* RDMA netlink's binding wins over the GID table's */
	rn_sysfs_port_read("mlx5_0", 1, &p);
	rn_port_netdev_decide(&p, RN_RDMA_BINDING_HERE, "net1");
	CHECK_INT(p.netdev_source, RN_PORT_NETDEV_NETLINK);
	CHECK_STR(p.netdev.name, "net1");
	CHECK(!p.netdev.here);
	check_netdev(&p.netdev, -1, -1, -1, "");
	/* bound to no netdev here: the GID table's name stays, class/net's eth0 is another one */
	rn_sysfs_port_read("mlx5_0", 1, &p);
	rn_port_netdev_decide(&p, RN_RDMA_BINDING_NOT_HERE, NULL);
	CHECK_INT(p.netdev_source, RN_PORT_NETDEV_GID);
	CHECK_STR(p.netdev.name, "eth0");
	CHECK(!p.netdev.here);
	CHECK_INT(p.netdev.ifindex, 0);
	check_netdev(&p.netdev, -1, -1, -1, "");
	/* netlink does not list the port: sysfs's binding stands */
	rn_sysfs_port_read("mlx5_0", 1, &p);
	rn_port_netdev_decide(&p, RN_RDMA_BINDING_UNKNOWN, NULL);
	CHECK_STR(p.netdev.name, "eth0");
	CHECK(p.netdev.here);
	/* rxe whose parent netdev has gone: bound through DEV/parent, not here */
	fakesys_add_rdma_virtual(root, "rxe2", "gone0", NULL, "Ethernet");
	rn_sysfs_port_read("rxe2", 1, &p);
	CHECK_INT(p.netdev_source, RN_PORT_NETDEV_PARENT);
	CHECK_STR(p.netdev.name, "gone0");
	CHECK(!p.netdev.here);
	CHECK_INT(p.netdev.ifindex, 0);
	/* rxe whose parent is here */
	fakesys_add_netdev_virtual(root, "veth1");
	fakesys_add_rdma_virtual(root, "rxe1", "veth1", NULL, "Ethernet");
	rn_sysfs_port_read("rxe1", 1, &p);
	CHECK_INT(p.netdev_source, RN_PORT_NETDEV_PARENT);
	CHECK(p.netdev.here);
	CHECK_INT(p.netdev.ifindex, 2);
	rn_sysfs_netdev_read("", &nd);
	CHECK_STR(nd.name, "");
	CHECK(!nd.here);
	check_netdev(&nd, -1, -1, -1, "");
	rn_sysfs_netdev_read(NULL, &nd);
	CHECK_STR(nd.name, "");
	check_netdev(&nd, -1, -1, -1, "");
}

static void unreadable_or_malformed_files_leave_their_facts_unknown(void)
{
	_cleanup_fake_ char *root = fake_start();
	struct rn_sysfs_port p;

	add_mlx5_cce(root);
	fakesys_unreadable(root, "class/infiniband/mlx5_0/ports/1/state");
	fakesys_unreadable(root, "class/infiniband/mlx5_0/ports/1/phys_state");
	fakesys_unreadable(root, "class/infiniband/mlx5_0/ports/1/link_layer");
	fakesys_unreadable(root, "class/infiniband/mlx5_0/ports/1/rate");
	fakesys_unreadable(root, "class/net/eth0/flags");
	fakesys_unreadable(root, "class/net/eth0/operstate");
	fakesys_unreadable(root, "class/net/eth0/mtu");
	fakesys_unreadable(root, "class/net/eth0/ifindex");
	rn_sysfs_port_read("mlx5_0", 1, &p);
	CHECK_INT(p.state, 0);
	CHECK_STR(p.state_name, "");
	CHECK_INT(p.phys_state, 0);
	CHECK_STR(p.link_layer, "");
	CHECK_STR(p.rate, "");
	CHECK_STR(p.netdev.name, "eth0"); /* the GID table still binds it */
	CHECK(p.netdev.here);
	CHECK_INT(p.netdev.ifindex, 0);
	check_netdev(&p.netdev, -1, -1, -1, "");

	/* malformed: no "N:" before the state name, flags not hex, a negative MTU */
	fakesys_write(root, "class/infiniband/mlx5_1/ports/1/state", "ACTIVE");
	fakesys_write(root, "class/infiniband/mlx5_1/ports/1/phys_state", "LinkUp");
	set_netdev_attrs(root, "eth1", "up", "up", "-1");
	fakesys_write(root, "class/net/eth1/ifindex", "x");
	rn_sysfs_port_read("mlx5_1", 1, &p);
	CHECK_INT(p.state, 0);
	CHECK_STR(p.state_name, "ACTIVE");
	CHECK_INT(p.phys_state, 0);
	CHECK_INT(p.netdev.admin_up, -1);
	CHECK_INT(p.netdev.oper_up, 1);
	CHECK_INT(p.netdev.mtu, -1);
	CHECK_INT(p.netdev.ifindex, 0);

	/* a port that is not there: nothing known, nothing bound */
	rn_sysfs_port_read("mlx5_0", 7, &p);
	CHECK_INT(p.state, 0);
	CHECK_STR(p.link_layer, "");
	CHECK_INT(p.gid_tbl_len, 0);
	CHECK_INT(p.netdev_source, RN_PORT_NETDEV_NONE);
}

static void lowest_gid_slot_naming_a_netdev_binds_the_port(void)
{
	_cleanup_fake_ char *root = fake_start();
	struct rn_sysfs_port p;

	fakesys_add_netdev_pci(root, "eth0", "0000:3b:00.0");
	fakesys_add_netdev_virtual(root, "vlan7");
	fakesys_add_rdma_pci(root, "mlx5_0", "0000:3b:00.0", NULL, "Ethernet");
	fakesys_add_empty_gids(root, "mlx5_0", 1, 0, 1);
	fakesys_add_gid(root, "mlx5_0", 1, 2, "fe80:0000:0000:0000:0000:0000:0000:0007", "RoCE v2",
			"bad/name"); /* not a netdev name: skipped */
	fakesys_add_gid(root, "mlx5_0", 1, 10, "fe80:0000:0000:0000:0000:0000:0000:0001", "RoCE v2",
			"eth0");
	fakesys_add_gid(root, "mlx5_0", 1, 9, "fe80:0000:0000:0000:0000:0000:0000:0002", "RoCE v2",
			"vlan7");
	rn_sysfs_port_read("mlx5_0", 1, &p);
	CHECK_INT(p.netdev_source, RN_PORT_NETDEV_GID);
	CHECK_STR(p.netdev.name, "vlan7"); /* slot 9 before slot 10, in number order */
	CHECK(p.netdev.here);
}

static void port_list_is_numeric_ascending_and_enoent_for_a_gone_device(void)
{
	_cleanup_fake_ char *root = fake_start();
	_cleanup_free_ uint32_t *ports = NULL;
	struct rn_error err = { 0 };
	size_t n = 99;

	add_ib(root);
	fakesys_add_port(root, "mlx5_4", 10, "InfiniBand");
	fakesys_add_port(root, "mlx5_4", 2, "InfiniBand");
	fakesys_unreadable(root, "class/infiniband/mlx5_4/ports/x1"); /* not a port */
	fakesys_unreadable(root, "class/infiniband/mlx5_4/ports/0"); /* ports count from 1 */
	REQUIRE_INT(rn_sysfs_port_list("mlx5_4", &ports, &n, &err), 0);
	REQUIRE_INT(n, 3);
	CHECK_INT(ports[0], 1);
	CHECK_INT(ports[1], 2);
	CHECK_INT(ports[2], 10);
	free(ports);
	ports = NULL;
	CHECK_INT(rn_sysfs_port_list("mlx5_9", &ports, &n, &err), -ENOENT);
	CHECK_INT(n, 0);
	CHECK(ports == NULL);
	CHECK(!rn_error_isset(&err));
out:;
}

/* One rule binds a netdev to a port, whoever asks (doctor, the exporter, the NCCL resolver). */
static void bound_netdev_is_lowest_gid_slot_then_rxe_parent_then_devices_only_one(void)
{
	_cleanup_fake_ char *root = fake_start();
	struct rn_sysfs_port p;

	/* IPoIB: IB GIDs name no netdev, so the one netdev of the PCI function binds */
	add_ib(root);
	rn_sysfs_port_read("mlx5_4", 1, &p);
	CHECK_INT(p.netdev_source, RN_PORT_NETDEV_DEVICE);
	CHECK_STR(p.netdev.name, "ib0");
	CHECK(p.netdev.here);
	/* RDMA netlink has no say on an IB port: its IPoIB netdev is sysfs's, per netns */
	rn_port_netdev_decide(&p, RN_RDMA_BINDING_HERE, "ib7");
	CHECK_INT(p.netdev_source, RN_PORT_NETDEV_DEVICE);
	CHECK_STR(p.netdev.name, "ib0");
	rn_port_netdev_decide(&p, RN_RDMA_BINDING_NOT_HERE, NULL);
	CHECK(p.netdev.here);
	/* a port that is not there binds nothing */
	rn_sysfs_port_read("mlx5_4", 2, &p);
	CHECK_INT(p.netdev_source, RN_PORT_NETDEV_NONE);
	/* two netdevs on the function: which one is not sysfs's to guess */
	fakesys_add_netdev_pci(root, "ib1", "0000:86:00.0");
	rn_sysfs_port_read("mlx5_4", 1, &p);
	CHECK_INT(p.netdev_source, RN_PORT_NETDEV_NONE);
	CHECK_STR(p.netdev.name, "");
	/* two ports and one netdev: not for either port */
	fakesys_add_netdev_pci(root, "ib2", "0000:87:00.0");
	fakesys_add_rdma_pci(root, "mlx5_5", "0000:87:00.0", NULL, "InfiniBand");
	fakesys_add_port(root, "mlx5_5", 2, "InfiniBand");
	rn_sysfs_port_read("mlx5_5", 1, &p);
	CHECK_INT(p.netdev_source, RN_PORT_NETDEV_NONE);
	rn_sysfs_port_read("mlx5_5", 2, &p);
	CHECK_INT(p.netdev_source, RN_PORT_NETDEV_NONE);
	/* RoCE: the GID table's netdev before the function's (a VLAN on the port) */
	fakesys_add_netdev_pci(root, "eth9", "0000:88:00.0");
	fakesys_add_netdev_virtual(root, "vlan9");
	fakesys_add_rdma_pci(root, "mlx5_6", "0000:88:00.0", NULL, "Ethernet");
	fakesys_add_gid(root, "mlx5_6", 1, 0, "fe80:0000:0000:0000:0000:0000:0000:0009", "RoCE v2",
			"vlan9");
	rn_sysfs_port_read("mlx5_6", 1, &p);
	CHECK_INT(p.netdev_source, RN_PORT_NETDEV_GID);
	CHECK_STR(p.netdev.name, "vlan9");
}

/* The one-pass read (doctor's) binds and reads every port as rn_sysfs_port_read() does. */
static void facts_read_once_agree_with_port_read_for_every_port(void)
{
	_cleanup_fake_ char *root = fake_start();
	_cleanup_(rn_sysfs_rdma_facts_free) struct rn_sysfs_rdma_facts f = { 0 };
	struct rn_error err = { 0 };

	add_mixed_node(root);
	add_ib(root);
	set_netdev_attrs(root, "eth0", "0x1003", "down", "1500"); /* admin up, no carrier */
	REQUIRE_INT(rn_sysfs_rdma_facts_read(&f, &err), 0);
	REQUIRE(f.n_ports >= 5);
	CHECK(f.gids.n > 0);
	for (size_t i = 0; i < f.n_ports; i++) {
		struct rn_sysfs_port p;

		rn_sysfs_port_read(f.ports[i].dev, f.ports[i].port, &p);
		CHECK_STR(f.ports[i].netdev.name, p.netdev.name);
		CHECK_INT(f.ports[i].netdev_source, p.netdev_source);
		CHECK_INT(f.ports[i].netdev.admin_up, p.netdev.admin_up);
		CHECK_INT(f.ports[i].netdev.oper_up, p.netdev.oper_up);
		CHECK_INT(f.ports[i].state, p.state);
		CHECK_INT(f.ports[i].gid_tbl_len, p.gid_tbl_len);
		if (strcmp(p.netdev.name, "eth0") == 0)
			check_netdev(&f.ports[i].netdev, 1500, 1, 0, "down");
		if (i > 0)
			CHECK(strverscmp(f.ports[i - 1].dev, f.ports[i].dev) <= 0);
	}
	for (size_t i = 0; i < f.n_devs; i++)
		CHECK_INT(f.devs[i].n_netdevs, 0); /* the ports say what is bound */
out:;
}

struct root_seen {
	char root[PATH_MAX];
};

static void *read_root(void *arg)
{
	struct root_seen *seen = arg;

	snprintf(seen->root, sizeof(seen->root), "%s", rn_sysfs_root());
	return NULL;
}

static void thread_root_is_seen_by_its_thread_only(void)
{
	_cleanup_fake_ char *root = fake_start();
	_cleanup_fake_ char *other = fakesys_new();
	struct root_seen seen = { "" };
	struct rn_sysfs_port p;
	pthread_t t;

	add_mlx5_cce(root);
	add_ib(other);
	rn_sysfs_set_thread_root(other);
	CHECK_STR(rn_sysfs_root(), other);
	REQUIRE_INT(pthread_create(&t, NULL, read_root, &seen), 0);
	CHECK_INT(pthread_join(t, NULL), 0);
	CHECK_STR(seen.root, root); /* another thread still sees the process's root */
	rn_sysfs_port_read("mlx5_4", 1, &p);
	CHECK_STR(p.link_layer, "InfiniBand");
	rn_sysfs_set_thread_root(NULL);
	CHECK_STR(rn_sysfs_root(), root);
	rn_sysfs_port_read("mlx5_4", 1, &p);
	CHECK_STR(p.link_layer, "");
out:
	rn_sysfs_set_thread_root(NULL);
}

RN_TEST_MAIN(T(root_is_sys_unless_env_or_override_says_otherwise),
	     T(missing_root_is_an_error_naming_it), T(node_without_rdma_lists_nothing),
	     T(mlx5_gid_table_reads_like_show_gids), T(mlx5_roce_v2_ipv4_gid_is_index_3),
	     T(irdma_roce_v2_ipv4_gid_is_index_1),
	     T(infiniband_port_gids_are_ib_and_have_no_netdev),
	     T(unreadable_slots_are_empty_not_errors), T(malformed_gid_is_an_error_naming_the_file),
	     T(gids_sort_by_device_port_and_index), T(gids_of_unknown_device_is_enodev_naming_it),
	     T(irdma_on_auxiliary_bus_belongs_to_its_pci_function),
	     T(irdma_parented_to_pci_reads_as_pci), T(erdma_finds_its_netdev_through_the_gid_table),
	     T(rxe_is_virtual_and_bound_to_its_veth),
	     T(rxe_without_gids_is_bound_through_its_parent_attribute),
	     T(bond_device_has_the_bond_and_its_pci_netdev),
	     T(infiniband_device_reads_its_link_layer_and_ipoib_netdev),
	     T(get_unknown_device_is_enodev_naming_it),
	     T(mixed_node_lists_every_device_in_natural_order),
	     T(by_bus_id_finds_devices_of_a_pci_function_or_auxiliary_device),
	     T(by_bus_id_of_unknown_bus_device_is_enodev_naming_it),
	     T(by_bus_id_reports_every_device_of_a_function_beyond_max),
	     T(by_netdev_finds_devices_bound_to_a_netdev),
	     T(netdevs_by_bus_id_include_auxiliary_children_but_not_vfs),
	     T(netdev_pci_gives_the_function_behind_a_netdev),
	     T(many_netdevs_keep_the_gid_bound_ones),
	     T(port_reads_state_link_layer_rate_gid_table_and_bound_netdev),
	     T(admin_up_is_iff_up_and_oper_up_is_operstate_read_apart),
	     T(bound_netdev_is_lowest_gid_slot_then_rxe_parent_then_devices_only_one),
	     T(facts_read_once_agree_with_port_read_for_every_port),
	     T(port_without_netdev_has_every_netdev_fact_unknown),
	     T(netlink_has_no_say_on_a_fake_tree),
	     T(named_netdev_that_is_not_here_is_bound_but_unknown),
	     T(unreadable_or_malformed_files_leave_their_facts_unknown),
	     T(lowest_gid_slot_naming_a_netdev_binds_the_port),
	     T(port_list_is_numeric_ascending_and_enoent_for_a_gone_device),
	     T(thread_root_is_seen_by_its_thread_only))
