// SPDX-License-Identifier: Apache-2.0
/*
 * The NCCL resolver on fake sysfs trees built from the source documents'
 * GID tables: mlx5 with RoCE v2 + IPv4 at index 3 (doc 000's show_gids),
 * irdma at index 1 (doc 003), eRDMA (doc 004), InfiniBand, and a mixed node
 * where the indices differ. Addresses come from rtnetlink in real use; here
 * the tests add them with rn_nccl_node_add_addr().
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fakesys.h"
#include "merge-props.h"
#include "rdmans/cleanup.h"
#include "rdmans/nccl.h"
#include "rdmans/nccl_json.h"
#include "test.h"

#define REQUIRE(cond)                                                                              \
	do {                                                                                       \
		CHECK(cond);                                                                       \
		if (rn_test_failed)                                                                \
			return;                                                                    \
	} while (0)

/* ---- the nodes of the documents, as a pod sees them ---- */

/* Doc 000 show_gids, one rail: mlx5_N on ethN, RoCE v2 + IPv4 at index 3. */
static void add_mlx5_rail(const char *root, unsigned n, const char *ipv4_hex, const char *guid)
{
	char dev[32], ifname[16], bdf[32], gid[64];

	snprintf(dev, sizeof(dev), "mlx5_%u", n);
	snprintf(ifname, sizeof(ifname), "eth%u", n);
	snprintf(bdf, sizeof(bdf), "0000:%02x:00.0", 0x3b + n);
	fakesys_add_netdev_pci(root, ifname, bdf);
	fakesys_add_rdma_pci(root, dev, bdf, guid, "Ethernet");
	snprintf(gid, sizeof(gid), "fe80:0000:0000:0000:%s", guid);
	fakesys_add_gid(root, dev, 1, 0, gid, "IB/RoCE v1", ifname);
	fakesys_add_gid(root, dev, 1, 1, gid, "RoCE v2", ifname);
	snprintf(gid, sizeof(gid), "0000:0000:0000:0000:0000:ffff:%s", ipv4_hex);
	fakesys_add_gid(root, dev, 1, 2, gid, "IB/RoCE v1", ifname);
	fakesys_add_gid(root, dev, 1, 3, gid, "RoCE v2", ifname);
	fakesys_add_empty_gids(root, dev, 1, 4, 15);
}

/* Doc 003: irdma0 on ice.roce.0, bound to the pod's net1; GID[1] = ::ffff:10.100.100.1, RoCE v2. */
static void add_irdma_doc003(const char *root)
{
	fakesys_add_netdev_pci(root, "net1", "0000:2f:00.0");
	fakesys_add_aux(root, "0000:2f:00.0", "ice.roce.0");
	fakesys_add_rdma_aux(root, "irdma0", "0000:2f:00.0", "ice.roce.0", "b696:91ff:feec:a458",
			     "Ethernet");
	fakesys_add_gid(root, "irdma0", 1, 0, "fe80:0000:0000:0000:b696:91ff:feec:a458", "RoCE v2",
			"net1");
	fakesys_add_gid(root, "irdma0", 1, 1, "0000:0000:0000:0000:0000:ffff:0a64:6401", "RoCE v2",
			"net1");
	fakesys_add_empty_gids(root, "irdma0", 1, 2, 31);
}

/* Doc 004: erdma_0 bound to eth0 (172.16.0.10), RoCE v2 + IPv4 at index 1. */
static void add_erdma_doc004(const char *root)
{
	fakesys_add_netdev_pci(root, "eth0", "0000:00:05.0");
	fakesys_add_rdma_pci(root, "erdma_0", "0000:00:06.0", "0216:3eff:fe0c:1a2b", "Ethernet");
	fakesys_add_gid(root, "erdma_0", 1, 0, "fe80:0000:0000:0000:0216:3eff:fe0c:1a2b", "RoCE v2",
			"eth0");
	fakesys_add_gid(root, "erdma_0", 1, 1, "0000:0000:0000:0000:0000:ffff:ac10:000a", "RoCE v2",
			"eth0");
	fakesys_add_empty_gids(root, "erdma_0", 1, 2, 3);
}

/* An InfiniBand HCA with IPoIB ib0 on its PCI function. */
static void add_ib(const char *root)
{
	fakesys_add_netdev_pci(root, "ib0", "0000:86:00.0");
	fakesys_add_rdma_pci(root, "mlx5_4", "0000:86:00.0", "0c42:a103:00f3:1a2b", "InfiniBand");
	fakesys_add_gid(root, "mlx5_4", 1, 0, "fe80:0000:0000:0000:0c42:a103:00f3:1a2b",
			"IB/RoCE v1", NULL);
	fakesys_add_empty_gids(root, "mlx5_4", 1, 1, 3);
}

static void load(struct rn_nccl_node *node)
{
	struct rn_error err = { 0 };
	int r = rn_nccl_node_from_sysfs(node, &err);

	if (r < 0)
		printf("# rn_nccl_node_from_sysfs: %s\n", err.msg);
	CHECK_INT(r, 0);
}

static void addr(struct rn_nccl_node *node, const char *netdev, const char *cidr)
{
	struct rn_error err = { 0 };

	CHECK_INT(rn_nccl_node_add_addr(node, netdev, cidr, &err), 0);
}

static int resolve(const struct rn_nccl_node *node, const struct rn_nccl_layer *layers, size_t n,
		   struct rn_nccl_result *res, struct rn_error *err)
{
	struct rn_nccl_request req = { .layers = layers, .n_layers = n };

	return rn_nccl_resolve(node, &req, res, err);
}

static const char *value(const struct rn_nccl_result *res, const char *name)
{
	const struct rn_nccl_setting *s = rn_nccl_result_get(res, name);

	return s ? s->value : NULL;
}

static const char *origin(const struct rn_nccl_result *res, const char *name)
{
	const struct rn_nccl_setting *s = rn_nccl_result_get(res, name);

	return s ? s->origin : NULL;
}

static bool warned(const struct rn_nccl_result *res, const char *needle)
{
	for (size_t i = 0; i < res->n_warnings; i++)
		if (strstr(res->warnings[i], needle))
			return true;
	return false;
}

/* ---- probing sysfs ---- */

static void sysfs_gives_ports_netdevs_and_state(void)
{
	_cleanup_fake_ char *root = fake_start();
	_cleanup_nccl_node_ struct rn_nccl_node node = { 0 };

	add_irdma_doc003(root);
	add_ib(root);
	fakesys_add_netdev_virtual(root, "lo");
	load(&node);
	REQUIRE(node.n_ports == 2);
	CHECK_STR(node.ports[0].dev, "irdma0");
	CHECK_INT(node.ports[0].port, 1);
	CHECK_STR(node.ports[0].state, "ACTIVE");
	CHECK(node.ports[0].active);
	CHECK_STR(node.ports[0].link_layer, "Ethernet");
	CHECK_STR(node.ports[0].netdev, "net1");
	CHECK(node.ports[0].netdev_here);
	CHECK_STR(node.ports[1].dev, "mlx5_4");
	CHECK_STR(node.ports[1].link_layer, "InfiniBand");
	CHECK_STR(node.ports[1].netdev, "ib0"); /* the IPoIB netdev of its PCI function */
	CHECK_INT(node.n_netdevs, 3);
	CHECK_INT(node.gids.n, 3);
}

static void addresses_go_to_every_port_of_the_netdev(void)
{
	_cleanup_fake_ char *root = fake_start();
	_cleanup_nccl_node_ struct rn_nccl_node node = { 0 };
	struct rn_error err = { 0 };

	add_irdma_doc003(root);
	load(&node);
	addr(&node, "net1", "10.100.100.1/24");
	addr(&node, "other", "10.1.1.1/24");
	REQUIRE(node.n_ports == 1);
	CHECK_INT(node.ports[0].n_ipv4, 1);
	CHECK_STR(node.ports[0].ipv4[0], "10.100.100.1/24");
	CHECK_INT(rn_nccl_node_add_addr(&node, "net1", "10.100.100.1", &err), -EINVAL);
	CHECK_INT(rn_nccl_node_add_addr(&node, "net1", "10.100.300.1/24", &err), -EINVAL);
	CHECK_INT(rn_nccl_node_add_addr(&node, "net1", "10.100.100.1/33", &err), -EINVAL);
	CHECK_CONTAINS(err.msg, "is not an IPv4 address/prefix");
	CHECK_INT(node.ports[0].n_ipv4, 1);
}

/* ---- the documents' nodes ---- */

static void doc003_irdma_gets_gid_index_1(void)
{
	_cleanup_fake_ char *root = fake_start();
	_cleanup_nccl_node_ struct rn_nccl_node node = { 0 };
	_cleanup_nccl_result_ struct rn_nccl_result res = { 0 };
	struct rn_error err = { 0 };

	add_irdma_doc003(root);
	load(&node);
	addr(&node, "net1", "10.100.100.1/24");
	REQUIRE(resolve(&node, NULL, 0, &res, &err) == 0);
	CHECK_STR(res.profile, "roce");
	CHECK_CONTAINS(res.profile_origin, "auto");
	CHECK_STR(value(&res, "NCCL_IB_HCA"), "irdma0");
	CHECK_STR(value(&res, "NCCL_IB_GID_INDEX"), "1");
	CHECK_STR(value(&res, "NCCL_SOCKET_IFNAME"), "net1");
	CHECK_STR(value(&res, "NCCL_IB_DISABLE"), "0");
	CHECK(!value(&res, "NCCL_IB_ADDR_RANGE"));
	CHECK_STR(origin(&res, "NCCL_IB_GID_INDEX"), "detected");
	CHECK_CONTAINS(rn_nccl_result_get(&res, "NCCL_IB_GID_INDEX")->detail,
		       "RoCE v2 GID 1 of irdma0 port 1 holds 10.100.100.1/24 (net1)");
	CHECK_INT(res.n_warnings, 0);
	REQUIRE(res.n_ports == 1);
	CHECK(res.ports[0].used);
	CHECK_INT(res.ports[0].gid_status, RN_NCCL_GID_FOUND);
	CHECK_INT(res.ports[0].gid_index, 1);
	/* fixed order: IB_DISABLE, IB_HCA, GID_INDEX, SOCKET_IFNAME */
	REQUIRE(res.n == 4);
	CHECK_STR(res.v[0].name, "NCCL_IB_DISABLE");
	CHECK_STR(res.v[1].name, "NCCL_IB_HCA");
	CHECK_STR(res.v[2].name, "NCCL_IB_GID_INDEX");
	CHECK_STR(res.v[3].name, "NCCL_SOCKET_IFNAME");
}

static void doc000_mlx5_rails_get_gid_index_3(void)
{
	static const char *const hex[] = { "0a00:3c03", "190b:8002", "190b:8022",
					   "190b:8042", "190b:8062", "190b:8082",
					   "190b:80a2", "190b:80c2", "190b:80e2" };
	static const char *const ips[] = { "10.0.60.3/24",     "25.11.128.2/27",
					   "25.11.128.34/27",  "25.11.128.66/27",
					   "25.11.128.98/27",  "25.11.128.130/27",
					   "25.11.128.162/27", "25.11.128.194/27",
					   "25.11.128.226/27" };
	_cleanup_fake_ char *root = fake_start();
	_cleanup_nccl_node_ struct rn_nccl_node node = { 0 };
	_cleanup_nccl_result_ struct rn_nccl_result res = { 0 };
	struct rn_error err = { 0 };
	_cleanup_nccl_layer_ struct rn_nccl_layer annot = { 0 };

	for (unsigned i = 0; i < 9; i++) {
		char guid[32];

		snprintf(guid, sizeof(guid), "eaeb:d3ff:fecc:c9%02x", i);
		add_mlx5_rail(root, i, hex[i], guid);
	}
	load(&node);
	for (unsigned i = 0; i < 9; i++) {
		char ifname[16];

		snprintf(ifname, sizeof(ifname), "eth%u", i);
		addr(&node, ifname, ips[i]);
	}
	rn_nccl_layer_init(&annot, RN_NCCL_SRC_ANNOTATION, "rdmans.io/nccl");
	REQUIRE(rn_nccl_layer_set_profile(&annot, "baidu-cce", &err) == 0);
	REQUIRE(resolve(&node, &annot, 1, &res, &err) == 0);
	CHECK_STR(res.profile, "baidu-cce");
	CHECK_STR(value(&res, "NCCL_IB_HCA"),
		  "mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7,mlx5_8");
	CHECK_STR(value(&res, "NCCL_IB_GID_INDEX"), "3");
	/* CCE's eth0 (the pod network) stays: the profile's interface beats detection */
	CHECK_STR(value(&res, "NCCL_SOCKET_IFNAME"), "eth0");
	CHECK_STR(origin(&res, "NCCL_SOCKET_IFNAME"), "profile baidu-cce");
	CHECK_STR(value(&res, "NCCL_IB_TIMEOUT"), "22");
	CHECK_STR(value(&res, "NCCL_IB_QPS_PER_CONNECTION"), "8");
	CHECK_INT(res.n_warnings, 0);
}

static void doc000_pod_with_one_rail(void)
{
	_cleanup_fake_ char *root = fake_start();
	_cleanup_nccl_node_ struct rn_nccl_node node = { 0 };
	_cleanup_nccl_result_ struct rn_nccl_result res = { 0 };
	struct rn_error err = { 0 };

	add_mlx5_rail(root, 1, "190b:8002", "eaeb:d3ff:fecc:c920");
	load(&node);
	addr(&node, "eth1", "25.11.128.2/27");
	REQUIRE(resolve(&node, NULL, 0, &res, &err) == 0);
	CHECK_STR(value(&res, "NCCL_IB_HCA"), "mlx5_1");
	CHECK_STR(value(&res, "NCCL_IB_GID_INDEX"), "3");
	CHECK_STR(value(&res, "NCCL_SOCKET_IFNAME"), "eth1");
}

static void doc004_erdma_picks_the_pai_profile(void)
{
	_cleanup_fake_ char *root = fake_start();
	_cleanup_nccl_node_ struct rn_nccl_node node = { 0 };
	_cleanup_nccl_result_ struct rn_nccl_result res = { 0 };
	struct rn_error err = { 0 };

	add_erdma_doc004(root);
	load(&node);
	addr(&node, "eth0", "172.16.0.10/24");
	REQUIRE(resolve(&node, NULL, 0, &res, &err) == 0);
	CHECK_STR(res.profile, "alibaba-erdma");
	CHECK_CONTAINS(res.profile_origin, "eRDMA");
	CHECK_STR(value(&res, "NCCL_IB_HCA"), "erdma_0");
	CHECK_STR(origin(&res, "NCCL_IB_HCA"), "detected");
	/* detection replaced the profile's prefix guess "erdma" */
	CHECK_STR(rn_nccl_result_get(&res, "NCCL_IB_HCA")->replaced,
		  "profile alibaba-erdma: erdma");
	CHECK_STR(value(&res, "NCCL_IB_GID_INDEX"), "1");
	CHECK_STR(value(&res, "NCCL_SOCKET_IFNAME"), "eth0");
	CHECK_STR(value(&res, "NCCL_MIN_NCHANNELS"), "16");
	CHECK_STR(value(&res, "NCCL_NET_PLUGIN"), "none");
	CHECK_STR(value(&res, "NCCL_IB_QPS_PER_CONNECTION"), "8");
}

static void infiniband_needs_no_gid_index(void)
{
	_cleanup_fake_ char *root = fake_start();
	_cleanup_nccl_node_ struct rn_nccl_node node = { 0 };
	_cleanup_nccl_result_ struct rn_nccl_result res = { 0 };
	struct rn_error err = { 0 };

	add_ib(root);
	load(&node);
	addr(&node, "ib0", "192.168.50.4/24");
	REQUIRE(resolve(&node, NULL, 0, &res, &err) == 0);
	CHECK_STR(res.profile, "ib");
	CHECK_STR(value(&res, "NCCL_IB_HCA"), "mlx5_4");
	CHECK(!value(&res, "NCCL_IB_GID_INDEX"));
	CHECK(!value(&res, "NCCL_IB_ADDR_FAMILY"));
	CHECK_STR(value(&res, "NCCL_SOCKET_IFNAME"), "ib0");
	REQUIRE(res.n_ports == 1);
	CHECK_INT(res.ports[0].gid_status, RN_NCCL_GID_NA);
}

/* mlx5 at index 3 and irdma at index 1 in one pod: the NCCL >= 2.21 form, and a warning. */
static void mixed_node_gid_indices_disagree(void)
{
	_cleanup_fake_ char *root = fake_start();
	_cleanup_nccl_node_ struct rn_nccl_node node = { 0 };
	_cleanup_nccl_result_ struct rn_nccl_result res = { 0 };
	struct rn_error err = { 0 };

	add_irdma_doc003(root);
	add_mlx5_rail(root, 0, "0a64:6402", "f820:20ff:fe28:c769");
	load(&node);
	addr(&node, "net1", "10.100.100.1/24");
	addr(&node, "eth0", "10.100.100.2/24");
	REQUIRE(resolve(&node, NULL, 0, &res, &err) == 0);
	CHECK_STR(value(&res, "NCCL_IB_HCA"), "irdma0,mlx5_0");
	CHECK(!value(&res, "NCCL_IB_GID_INDEX"));
	CHECK_STR(value(&res, "NCCL_IB_ADDR_FAMILY"), "AF_INET");
	CHECK_STR(value(&res, "NCCL_IB_ADDR_RANGE"), "10.100.100.0/24");
	CHECK_STR(value(&res, "NCCL_IB_ROCE_VERSION_NUM"), "2");
	CHECK(warned(&res, "GID index differs between devices (irdma0:1 1, mlx5_0:1 3)"));
	CHECK(warned(&res, "NCCL >= 2.21"));
	REQUIRE(res.n_ports == 2);
	CHECK_INT(res.ports[0].gid_index, 1);
	CHECK_INT(res.ports[1].gid_index, 3);
}

static void disagreeing_devices_on_two_subnets_get_a_covering_range(void)
{
	_cleanup_fake_ char *root = fake_start();
	_cleanup_nccl_node_ struct rn_nccl_node node = { 0 };
	_cleanup_nccl_result_ struct rn_nccl_result res = { 0 };
	struct rn_error err = { 0 };

	add_irdma_doc003(root);
	add_mlx5_rail(root, 0, "0a64:6502", "f820:20ff:fe28:c769");
	load(&node);
	addr(&node, "net1", "10.100.100.1/24");
	addr(&node, "eth0", "10.100.101.2/24");
	REQUIRE(resolve(&node, NULL, 0, &res, &err) == 0);
	CHECK_STR(value(&res, "NCCL_IB_ADDR_RANGE"), "10.100.100.0/23");
}

static void multi_port_device_is_listed_as_dev_port(void)
{
	_cleanup_fake_ char *root = fake_start();
	_cleanup_nccl_node_ struct rn_nccl_node node = { 0 };
	_cleanup_nccl_result_ struct rn_nccl_result res = { 0 };
	struct rn_error err = { 0 };

	fakesys_add_netdev_pci(root, "ib0", "0000:81:00.0");
	fakesys_add_rdma_pci(root, "mlx4_0", "0000:81:00.0", "0002:c903:0010:1a2b", "InfiniBand");
	fakesys_add_port(root, "mlx4_0", 2, "InfiniBand");
	load(&node);
	REQUIRE(resolve(&node, NULL, 0, &res, &err) == 0);
	CHECK_STR(value(&res, "NCCL_IB_HCA"), "mlx4_0:1,mlx4_0:2");
}

static void names_that_prefix_others_use_the_exact_form(void)
{
	_cleanup_fake_ char *root = fake_start();
	_cleanup_nccl_node_ struct rn_nccl_node node = { 0 };
	_cleanup_nccl_result_ struct rn_nccl_result res = { 0 };
	struct rn_error err = { 0 };

	add_mlx5_rail(root, 1, "0a00:0001", "eaeb:d3ff:fecc:c901");
	add_mlx5_rail(root, 10, "0a00:0a01", "eaeb:d3ff:fecc:c90a");
	fakesys_write(root, "class/infiniband/mlx5_10/ports/1/state", "1: DOWN");
	load(&node);
	addr(&node, "eth1", "10.0.0.1/24");
	addr(&node, "eth10", "10.0.10.1/24");
	REQUIRE(resolve(&node, NULL, 0, &res, &err) == 0);
	/* mlx5_1 alone would also match mlx5_10, whose port is down */
	CHECK_STR(value(&res, "NCCL_IB_HCA"), "=mlx5_1");
	CHECK_STR(value(&res, "NCCL_SOCKET_IFNAME"), "=eth1");
	CHECK(warned(&res, "mlx5_10 port 1 is left out: port state is DOWN, not ACTIVE"));
}

/* ---- ports NCCL cannot use ---- */

static void down_ports_and_missing_netdevs_are_left_out(void)
{
	_cleanup_fake_ char *root = fake_start();
	_cleanup_nccl_node_ struct rn_nccl_node node = { 0 };
	_cleanup_nccl_result_ struct rn_nccl_result res = { 0 };
	struct rn_error err = { 0 };
	char path[4096];

	add_irdma_doc003(root);
	add_mlx5_rail(root, 0, "0a64:6402", "f820:20ff:fe28:c769");
	/* eth0 stays on the host: only the RDMA device came into the pod */
	snprintf(path, sizeof(path), "rm -f '%s/class/net/eth0'", root);
	CHECK_INT(system(path), 0);
	load(&node);
	addr(&node, "net1", "10.100.100.1/24");
	REQUIRE(resolve(&node, NULL, 0, &res, &err) == 0);
	CHECK_STR(value(&res, "NCCL_IB_HCA"), "irdma0");
	CHECK_STR(value(&res, "NCCL_IB_GID_INDEX"), "1");
	CHECK(warned(&res, "mlx5_0 port 1 is left out: its netdev eth0 is not in this network "
			   "namespace"));
}

static void no_usable_port_is_an_error_saying_why(void)
{
	_cleanup_fake_ char *root = fake_start();
	_cleanup_nccl_node_ struct rn_nccl_node node = { 0 };
	_cleanup_nccl_result_ struct rn_nccl_result res = { 0 };
	struct rn_error err = { 0 };

	add_irdma_doc003(root);
	fakesys_write(root, "class/infiniband/irdma0/ports/1/state", "1: DOWN");
	load(&node);
	CHECK_INT(resolve(&node, NULL, 0, &res, &err), -ENODEV);
	CHECK_CONTAINS(err.msg, "no RDMA port here that NCCL could use: irdma0 port 1: port "
				"state is DOWN");
	CHECK_INT(res.n, 0);
}

static void empty_netns_is_an_error_naming_the_fix(void)
{
	_cleanup_fake_ char *root = fake_start();
	_cleanup_nccl_node_ struct rn_nccl_node node = { 0 };
	_cleanup_nccl_result_ struct rn_nccl_result res = { 0 };
	struct rn_error err = { 0 };

	fakesys_add_netdev_virtual(root, "eth0");
	load(&node);
	CHECK_INT(node.n_ports, 0);
	CHECK_INT(resolve(&node, NULL, 0, &res, &err), -ENODEV);
	CHECK_CONTAINS(err.msg, "no RDMA device in this network namespace");
	CHECK_CONTAINS(err.msg, "rdmans move");
}

static void netdev_without_address_gets_no_gid_and_a_warning(void)
{
	_cleanup_fake_ char *root = fake_start();
	_cleanup_nccl_node_ struct rn_nccl_node node = { 0 };
	_cleanup_nccl_result_ struct rn_nccl_result res = { 0 };
	struct rn_error err = { 0 };

	add_irdma_doc003(root);
	load(&node);
	REQUIRE(resolve(&node, NULL, 0, &res, &err) == 0);
	CHECK_STR(value(&res, "NCCL_IB_HCA"), "irdma0");
	CHECK(!value(&res, "NCCL_IB_GID_INDEX"));
	CHECK(!value(&res, "NCCL_SOCKET_IFNAME"));
	CHECK(warned(&res, "its netdev net1 has no IPv4 address"));
}

static void address_not_yet_in_gid_table_is_a_warning(void)
{
	_cleanup_fake_ char *root = fake_start();
	_cleanup_nccl_node_ struct rn_nccl_node node = { 0 };
	_cleanup_nccl_result_ struct rn_nccl_result res = { 0 };
	struct rn_error err = { 0 };

	add_irdma_doc003(root);
	load(&node);
	addr(&node, "net1", "10.100.100.9/24");
	REQUIRE(resolve(&node, NULL, 0, &res, &err) == 0);
	CHECK(!value(&res, "NCCL_IB_GID_INDEX"));
	CHECK(warned(&res, "no RoCE v2 GID holds the address of net1 (10.100.100.9/24)"));
	REQUIRE(res.n_ports == 1);
	CHECK_INT(res.ports[0].gid_status, RN_NCCL_GID_NO_MATCH);
}

/* A RoCE v1 GID holding the address is not the one: NCCL needs the v2 entry. */
static void roce_v1_entry_is_not_taken(void)
{
	_cleanup_fake_ char *root = fake_start();
	_cleanup_nccl_node_ struct rn_nccl_node node = { 0 };
	_cleanup_nccl_result_ struct rn_nccl_result res = { 0 };
	struct rn_error err = { 0 };

	fakesys_add_netdev_pci(root, "eth2", "0000:3d:00.0");
	fakesys_add_rdma_pci(root, "mlx5_2", "0000:3d:00.0", "eaeb:d3ff:fecc:c921", "Ethernet");
	fakesys_add_gid(root, "mlx5_2", 1, 0, "fe80:0000:0000:0000:eaeb:d3ff:fecc:c921",
			"IB/RoCE v1", "eth2");
	fakesys_add_gid(root, "mlx5_2", 1, 2, "0000:0000:0000:0000:0000:ffff:190b:8022",
			"IB/RoCE v1", "eth2");
	fakesys_add_gid(root, "mlx5_2", 1, 5, "0000:0000:0000:0000:0000:ffff:190b:8022", "RoCE v2",
			"eth2");
	load(&node);
	addr(&node, "eth2", "25.11.128.34/27");
	REQUIRE(resolve(&node, NULL, 0, &res, &err) == 0);
	CHECK_STR(value(&res, "NCCL_IB_GID_INDEX"), "5");
}

/* ---- profiles and layers ---- */

static void scnet_profile_values_and_detection(void)
{
	_cleanup_fake_ char *root = fake_start();
	_cleanup_nccl_node_ struct rn_nccl_node node = { 0 };
	_cleanup_nccl_result_ struct rn_nccl_result res = { 0 };
	_cleanup_nccl_layer_ struct rn_nccl_layer cfg = { 0 };
	struct rn_error err = { 0 };

	add_irdma_doc003(root);
	load(&node);
	addr(&node, "net1", "10.100.100.1/24");
	rn_nccl_layer_init(&cfg, RN_NCCL_SRC_CONFIG, "/etc/rdmans/nccl.json");
	REQUIRE(rn_nccl_layer_set_profile(&cfg, "scnet", &err) == 0);
	REQUIRE(resolve(&node, &cfg, 1, &res, &err) == 0);
	CHECK_STR(res.profile, "scnet");
	CHECK_STR(res.profile_origin, "config /etc/rdmans/nccl.json");
	CHECK_STR(value(&res, "NCCL_IB_TC"), "136");
	CHECK_STR(value(&res, "NCCL_IB_TIMEOUT"), "22");
	/* the preset's static guesses lose to what is really there */
	CHECK_STR(value(&res, "NCCL_IB_GID_INDEX"), "1");
	CHECK_STR(rn_nccl_result_get(&res, "NCCL_IB_GID_INDEX")->replaced, "profile scnet: 3");
	CHECK_STR(value(&res, "NCCL_IB_HCA"), "irdma0");
	/* its interface prefix "eth" stays, and matches nothing here: said so */
	CHECK_STR(value(&res, "NCCL_SOCKET_IFNAME"), "eth");
	CHECK(warned(&res, "NCCL_SOCKET_IFNAME=eth (profile scnet) matches no netdev"));
	CHECK(!value(&res, "NCCL_DEBUG"));
}

static void layers_apply_in_precedence_order(void)
{
	_cleanup_fake_ char *root = fake_start();
	_cleanup_nccl_node_ struct rn_nccl_node node = { 0 };
	_cleanup_nccl_result_ struct rn_nccl_result res = { 0 };
	struct rn_nccl_layer l[3];
	struct rn_error err = { 0 };

	add_irdma_doc003(root);
	load(&node);
	addr(&node, "net1", "10.100.100.1/24");
	/* given out of order: the annotation first, the config file last */
	rn_nccl_layer_init(&l[0], RN_NCCL_SRC_ANNOTATION, "rdmans.io/nccl");
	rn_nccl_layer_init(&l[1], RN_NCCL_SRC_CNI, "/etc/cni/net.d/rdma.conflist");
	rn_nccl_layer_init(&l[2], RN_NCCL_SRC_CONFIG, "/etc/rdmans/nccl.json");
	CHECK_INT(rn_nccl_layer_set(&l[2], "NCCL_IB_TIMEOUT", "20", &err), 0);
	CHECK_INT(rn_nccl_layer_set_profile(&l[2], "scnet", &err), 0);
	CHECK_INT(rn_nccl_layer_set(&l[1], "NCCL_IB_TIMEOUT", "21", &err), 0);
	CHECK_INT(rn_nccl_layer_set_profile(&l[1], "baidu-cce", &err), 0);
	CHECK_INT(rn_nccl_layer_set(&l[0], "NCCL_IB_TIMEOUT", "23", &err), 0);
	CHECK_INT(rn_nccl_layer_set(&l[0], "NCCL_IB_TC", NULL, &err), 0);
	CHECK_INT(rn_nccl_layer_set_arg(&l[0], "NCCL_IB_SL=3", &err), 0);
	REQUIRE(resolve(&node, l, 3, &res, &err) == 0);
	CHECK_STR(res.profile, "baidu-cce"); /* the CNI config beats the config file */
	CHECK_STR(value(&res, "NCCL_IB_TIMEOUT"), "23");
	CHECK_STR(origin(&res, "NCCL_IB_TIMEOUT"), "annotation rdmans.io/nccl");
	CHECK_STR(rn_nccl_result_get(&res, "NCCL_IB_TIMEOUT")->replaced,
		  "cni /etc/cni/net.d/rdma.conflist: 21");
	CHECK_STR(value(&res, "NCCL_IB_SL"), "3");
	CHECK(!value(&res, "NCCL_IB_TC")); /* baidu-cce has none: nothing to remove */
	CHECK_INT(res.n_unset, 0);
	for (int i = 0; i < 3; i++)
		rn_nccl_layer_free(&l[i]);
}

static void unset_removes_a_profile_value_and_says_so(void)
{
	_cleanup_fake_ char *root = fake_start();
	_cleanup_nccl_node_ struct rn_nccl_node node = { 0 };
	_cleanup_nccl_result_ struct rn_nccl_result res = { 0 };
	_cleanup_nccl_layer_ struct rn_nccl_layer l = { 0 };
	struct rn_error err = { 0 };

	add_irdma_doc003(root);
	load(&node);
	addr(&node, "net1", "10.100.100.1/24");
	rn_nccl_layer_init(&l, RN_NCCL_SRC_OPTION, "--set");
	CHECK_INT(rn_nccl_layer_set_profile(&l, "scnet", &err), 0);
	CHECK_INT(rn_nccl_layer_set_arg(&l, "NCCL_IB_TC", &err), 0);
	CHECK_INT(rn_nccl_layer_set_arg(&l, "NCCL_SOCKET_IFNAME=net1", &err), 0);
	REQUIRE(resolve(&node, &l, 1, &res, &err) == 0);
	CHECK(!value(&res, "NCCL_IB_TC"));
	REQUIRE(res.n_unset == 1);
	CHECK_STR(res.unset[0].name, "NCCL_IB_TC");
	CHECK_STR(res.unset[0].replaced, "profile scnet: 136");
	CHECK_STR(res.unset[0].origin, "option --set");
	CHECK_STR(value(&res, "NCCL_SOCKET_IFNAME"), "net1");
	CHECK(!warned(&res, "matches no netdev"));
}

static void overriding_the_detected_gid_index_warns(void)
{
	_cleanup_fake_ char *root = fake_start();
	_cleanup_nccl_node_ struct rn_nccl_node node = { 0 };
	_cleanup_nccl_result_ struct rn_nccl_result res = { 0 };
	_cleanup_nccl_layer_ struct rn_nccl_layer l = { 0 };
	struct rn_error err = { 0 };

	add_irdma_doc003(root);
	load(&node);
	addr(&node, "net1", "10.100.100.1/24");
	rn_nccl_layer_init(&l, RN_NCCL_SRC_ANNOTATION, "rdmans.io/nccl");
	CHECK_INT(rn_nccl_layer_set(&l, "NCCL_IB_GID_INDEX", "3", &err), 0);
	REQUIRE(resolve(&node, &l, 1, &res, &err) == 0);
	CHECK_STR(value(&res, "NCCL_IB_GID_INDEX"), "3");
	CHECK(warned(&res, "NCCL_IB_GID_INDEX=3 from annotation rdmans.io/nccl overrides the "
			   "detected 1"));
}

static void bad_layer_input_is_refused_and_changes_nothing(void)
{
	_cleanup_nccl_layer_ struct rn_nccl_layer l = { 0 };
	struct rn_error err = { 0 };
	char big[RN_NCCL_VALUE_MAX + 8];

	rn_nccl_layer_init(&l, RN_NCCL_SRC_ANNOTATION, "rdmans.io/nccl");
	CHECK_INT(rn_nccl_layer_set(&l, "LD_PRELOAD", "/tmp/x.so", &err), -EINVAL);
	CHECK_CONTAINS(err.msg, "annotation rdmans.io/nccl: 'LD_PRELOAD' is not an NCCL variable");
	CHECK_INT(rn_nccl_layer_set(&l, "NCCL_", "1", &err), -EINVAL);
	CHECK_INT(rn_nccl_layer_set(&l, "nccl_ib_hca", "1", &err), -EINVAL);
	CHECK_INT(rn_nccl_layer_set(&l, "NCCL_IB_HCA", "a\nNCCL_X=1", &err), -EINVAL);
	CHECK_CONTAINS(err.msg, "must be one line");
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	CHECK_INT(rn_nccl_layer_set(&l, "NCCL_IB_HCA", big, &err), -EINVAL);
	CHECK_INT(rn_nccl_layer_set_profile(&l, "azure", &err), -EINVAL);
	CHECK_CONTAINS(err.msg,
		       "unknown NCCL profile 'azure' (profiles: auto, roce, ib, baidu-cce, "
		       "scnet, alibaba-erdma)");
	CHECK_INT(rn_nccl_layer_set_arg(&l, "=1", &err), -EINVAL);
	CHECK_INT(l.n, 0);
	CHECK_STR(l.profile, "");
}

static void static_mode_leaves_pod_values_to_the_hook(void)
{
	_cleanup_nccl_result_ struct rn_nccl_result res = { 0 };
	_cleanup_nccl_layer_ struct rn_nccl_layer l = { 0 };
	struct rn_nccl_request req = { .node_static = true, .addr_range = "10.100.100.0/24" };
	struct rn_error err = { 0 };

	rn_nccl_layer_init(&l, RN_NCCL_SRC_OPTION, "--profile");
	CHECK_INT(rn_nccl_layer_set_profile(&l, "scnet", &err), 0);
	req.layers = &l;
	req.n_layers = 1;
	REQUIRE(rn_nccl_resolve(NULL, &req, &res, &err) == 0);
	CHECK(!value(&res, "NCCL_IB_HCA"));
	CHECK(!value(&res, "NCCL_IB_GID_INDEX"));
	CHECK_STR(value(&res, "NCCL_IB_TC"), "136");
	/* the interface is the pod's too: env would beat the hook's nccl.conf */
	CHECK(!value(&res, "NCCL_SOCKET_IFNAME"));
	CHECK_STR(value(&res, "NCCL_IB_ADDR_FAMILY"), "AF_INET");
	CHECK_STR(value(&res, "NCCL_IB_ADDR_RANGE"), "10.100.100.0/24");
	CHECK_STR(value(&res, "NCCL_IB_ROCE_VERSION_NUM"), "2");
	rn_nccl_result_free(&res);
	/* a layer's HCA (a config file) is the hook's as well */
	CHECK_INT(rn_nccl_layer_set(&l, "NCCL_IB_HCA", "=mlx5_1", &err), 0);
	REQUIRE(rn_nccl_resolve(NULL, &req, &res, &err) == 0);
	CHECK(!value(&res, "NCCL_IB_HCA"));
	CHECK(rn_nccl_pod_dependent("NCCL_IB_GID_INDEX") && !rn_nccl_pod_dependent("NCCL_IB_TC"));
	rn_nccl_result_free(&res);
	req.addr_range = "10.100.100.0";
	CHECK_INT(rn_nccl_resolve(NULL, &req, &res, &err), -EINVAL);
	CHECK_CONTAINS(err.msg, "address range '10.100.100.0' is not an IPv4 CIDR");
}

/* ---- rendering ---- */

static void renders_env_sh_and_conf(void)
{
	_cleanup_fake_ char *root = fake_start();
	_cleanup_nccl_node_ struct rn_nccl_node node = { 0 };
	_cleanup_nccl_result_ struct rn_nccl_result res = { 0 };
	_cleanup_nccl_layer_ struct rn_nccl_layer l = { 0 };
	_cleanup_free_ char *env = NULL, *sh = NULL, *conf = NULL;
	struct rn_error err = { 0 };

	add_irdma_doc003(root);
	load(&node);
	addr(&node, "net1", "10.100.100.1/24");
	rn_nccl_layer_init(&l, RN_NCCL_SRC_OPTION, "--set");
	CHECK_INT(rn_nccl_layer_set(&l, "NCCL_TOPO_FILE", "/opt/it's here/topo.xml", &err), 0);
	REQUIRE(resolve(&node, &l, 1, &res, &err) == 0);
	REQUIRE(rn_nccl_render(&res, RN_NCCL_FMT_ENV, false, &env, &err) == 0);
	CHECK_STR(env, "NCCL_IB_DISABLE=0\nNCCL_IB_HCA=irdma0\nNCCL_IB_GID_INDEX=1\n"
		       "NCCL_SOCKET_IFNAME=net1\nNCCL_TOPO_FILE=/opt/it's here/topo.xml\n");
	REQUIRE(rn_nccl_render(&res, RN_NCCL_FMT_SH, false, &sh, &err) == 0);
	CHECK_CONTAINS(sh, "if [ -z \"${NCCL_IB_GID_INDEX+x}\" ]; then NCCL_IB_GID_INDEX='1'; "
			   "export NCCL_IB_GID_INDEX; fi\n");
	CHECK_CONTAINS(sh, "NCCL_TOPO_FILE='/opt/it'\\''s here/topo.xml'");
	REQUIRE(rn_nccl_render(&res, RN_NCCL_FMT_CONF, true, &conf, &err) == 0);
	CHECK_CONTAINS(conf, "# profile roce (auto: every active port is Ethernet)\n");
	CHECK_CONTAINS(conf, "# irdma0 port 1: used, netdev net1, RoCE v2 GID 1 holds "
			     "10.100.100.1/24\n");
	CHECK_CONTAINS(conf, "# NCCL_IB_GID_INDEX: detected: RoCE v2 GID 1 of irdma0 port 1 "
			     "holds 10.100.100.1/24 (net1)\nNCCL_IB_GID_INDEX=1\n");
}

/* Runs a shell on the sh format and prints what it exported: env values win. */
static void sh_format_leaves_the_environment_alone(void)
{
	_cleanup_fake_ char *root = fake_start();
	_cleanup_nccl_node_ struct rn_nccl_node node = { 0 };
	_cleanup_nccl_result_ struct rn_nccl_result res = { 0 };
	_cleanup_free_ char *sh = NULL;
	struct rn_error err = { 0 };
	char script[] = "/tmp/rdmans-test-sh-XXXXXX", cmd[256], out[256] = "";
	FILE *f, *p;
	int fd;

	add_irdma_doc003(root);
	load(&node);
	addr(&node, "net1", "10.100.100.1/24");
	REQUIRE(resolve(&node, NULL, 0, &res, &err) == 0);
	REQUIRE(rn_nccl_render(&res, RN_NCCL_FMT_SH, true, &sh, &err) == 0);
	fd = mkstemp(script);
	REQUIRE(fd >= 0);
	f = fdopen(fd, "w");
	fputs(sh, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd),
		 "env -i NCCL_IB_GID_INDEX=7 sh -c '. %s; echo \"$NCCL_IB_GID_INDEX "
		 "$NCCL_IB_HCA\"; sh -c \"echo \\$NCCL_SOCKET_IFNAME\"'",
		 script);
	p = popen(cmd, "r");
	REQUIRE(p);
	CHECK(fread(out, 1, sizeof(out) - 1, p) > 0);
	CHECK_INT(pclose(p), 0);
	unlink(script);
	CHECK_STR(out, "7 irdma0\nnet1\n");
}

/* ---- merging with an image's nccl.conf ---- */

static void resolve_doc003(struct rn_nccl_result *res, const char *profile)
{
	_cleanup_nccl_node_ struct rn_nccl_node node = { 0 };
	_cleanup_nccl_layer_ struct rn_nccl_layer l = { 0 };
	struct rn_error err = { 0 };

	load(&node);
	addr(&node, "net1", "10.100.100.1/24");
	rn_nccl_layer_init(&l, RN_NCCL_SRC_ANNOTATION, "rdmans.io/nccl");
	if (profile)
		CHECK_INT(rn_nccl_layer_set_profile(&l, profile, &err), 0);
	CHECK_INT(resolve(&node, &l, 1, res, &err), 0);
}

static void merge_keeps_image_values_over_profile_ones_only(void)
{
	static const char image[] = "# site defaults\n"
				    "NCCL_DEBUG=WARN\n"
				    "NCCL_IB_TIMEOUT=18\n"
				    "NCCL_IB_HCA=mlx5\n"
				    "NCCL_IB_HCA=mlx5_9\n";
	_cleanup_fake_ char *root = fake_start();
	_cleanup_nccl_result_ struct rn_nccl_result res = { 0 };
	_cleanup_free_ char *conf = NULL;
	struct rn_error err = { 0 };

	add_irdma_doc003(root);
	resolve_doc003(&res, "baidu-cce");
	REQUIRE(rn_nccl_conf_merge(&res, image, "written by a test", &conf, &err) == 0);
	CHECK_CONTAINS(conf, "# rdmans: begin\n# written by a test\n");
	/* the image's timeout beats the profile's 22 */
	CHECK_CONTAINS(conf, "# NCCL_IB_TIMEOUT: the image's own value is kept (profile baidu-cce "
			     "would set 22)\n");
	CHECK(!strstr(conf, "NCCL_IB_TIMEOUT=22"));
	CHECK_CONTAINS(conf, "\nNCCL_IB_TIMEOUT=18\n");
	/* detection beats the image's HCA: both of its lines are commented out */
	CHECK_CONTAINS(conf, "# NCCL_IB_HCA: overrides the image's NCCL_IB_HCA=mlx5\n"
			     "NCCL_IB_HCA=irdma0\n");
	CHECK_CONTAINS(conf, "\n#rdmans-overridden:NCCL_IB_HCA=mlx5\n"
			     "#rdmans-overridden:NCCL_IB_HCA=mlx5_9\n");
	CHECK_CONTAINS(conf, "# rdmans: end\n# site defaults\nNCCL_DEBUG=WARN\n");
	CHECK_CONTAINS(conf, "NCCL_IB_QPS_PER_CONNECTION=8\n");
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

static void merging_again_changes_nothing_and_restores_what_is_no_longer_set(void)
{
	static const char image[] = "NCCL_IB_HCA=mlx5\nNCCL_DEBUG=WARN\n";
	_cleanup_fake_ char *root = fake_start();
	_cleanup_nccl_result_ struct rn_nccl_result res = { 0 }, res2 = { 0 };
	_cleanup_free_ char *once = NULL, *twice = NULL, *later = NULL;
	struct rn_error err = { 0 };

	add_irdma_doc003(root);
	resolve_doc003(&res, NULL);
	REQUIRE(rn_nccl_conf_merge(&res, image, NULL, &once, &err) == 0);
	REQUIRE(rn_nccl_conf_merge(&res, once, NULL, &twice, &err) == 0);
	CHECK_STR(twice, once);
	CHECK_INT(count(twice, "# rdmans: begin"), 1);
	CHECK_INT(count(twice, "NCCL_DEBUG=WARN"), 1);

	/* a later run that no longer sets NCCL_IB_HCA gives the image its line back */
	{
		_cleanup_nccl_node_ struct rn_nccl_node node = { 0 };
		_cleanup_nccl_layer_ struct rn_nccl_layer l = { 0 };

		load(&node);
		addr(&node, "net1", "10.100.100.1/24");
		rn_nccl_layer_init(&l, RN_NCCL_SRC_OPTION, "--set");
		CHECK_INT(rn_nccl_layer_set(&l, "NCCL_IB_HCA", NULL, &err), 0);
		REQUIRE(resolve(&node, &l, 1, &res2, &err) == 0);
	}
	REQUIRE(rn_nccl_conf_merge(&res2, once, NULL, &later, &err) == 0);
	/* removed by an explicit layer: the image's line stays commented out */
	CHECK_CONTAINS(later, "#rdmans-overridden:NCCL_IB_HCA=mlx5\n");
	rn_nccl_result_free(&res2);
	{
		_cleanup_nccl_node_ struct rn_nccl_node node = { 0 };
		_cleanup_nccl_layer_ struct rn_nccl_layer l = { 0 };

		/* the device left: a profile-only result, nothing detected */
		struct rn_nccl_request req = { .node_static = true };

		rn_nccl_layer_init(&l, RN_NCCL_SRC_OPTION, "--profile");
		CHECK_INT(rn_nccl_layer_set_profile(&l, "roce", &err), 0);
		req.layers = &l;
		req.n_layers = 1;
		REQUIRE(rn_nccl_resolve(NULL, &req, &res2, &err) == 0);
	}
	free(later);
	later = NULL;
	REQUIRE(rn_nccl_conf_merge(&res2, once, NULL, &later, &err) == 0);
	CHECK(!strstr(later, "#rdmans-overridden"));
	CHECK_CONTAINS(later, "# rdmans: end\nNCCL_IB_HCA=mlx5\nNCCL_DEBUG=WARN\n");
	CHECK_INT(count(later, "NCCL_IB_HCA="), 1);
}

/* The inputs (issue 12, item 4): a line that only starts like a marker, an unterminated block. */
static void merge_keeps_lines_that_only_look_like_ours(void)
{
	static const struct {
		const char *image, *kept;
	} cases[] = {
		{ "NCCL_DEBUG=INFO\n# rdmans: begin of my notes\nNCCL_P2P_LEVEL=NVL\n",
		  "# rdmans: end\nNCCL_DEBUG=INFO\n# rdmans: begin of my "
		  "notes\nNCCL_P2P_LEVEL=NVL\n" },
		{ "NCCL_DEBUG=INFO\n# rdmans: begin\nNCCL_P2P_LEVEL=NVL\n",
		  "# rdmans: end\nNCCL_DEBUG=INFO\n#rdmans-overridden:# rdmans: begin\n"
		  "NCCL_P2P_LEVEL=NVL\n" },
		{ "#rdmans-overridden:# rdmans: begin\nNCCL_P2P_LEVEL=NVL\n",
		  "# rdmans: end\n#rdmans-overridden:# rdmans: begin\nNCCL_P2P_LEVEL=NVL\n" },
		/* removing the inner block must not make a block of the outer lines */
		{ "# rdmans: begin\nNCCL_A=1\n# rdmans: begin\nNCCL_B=2\n# rdmans: end\n"
		  "# rdmans: end\nNCCL_C=3",
		  "# rdmans: end\n#rdmans-overridden:# rdmans: begin\nNCCL_A=1\n"
		  "#rdmans-overridden:# rdmans: end\nNCCL_C=3\n" },
		{ "#rdmans-overridden:hello\n", "# rdmans: end\n#rdmans-overridden:hello\n" },
	};
	_cleanup_fake_ char *root = fake_start();
	_cleanup_nccl_result_ struct rn_nccl_result res = { 0 };

	add_irdma_doc003(root);
	resolve_doc003(&res, NULL);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		_cleanup_free_ char *once = NULL, *twice = NULL;
		struct rn_error err = { 0 };
		char why[512] = "";

		REQUIRE(rn_nccl_conf_merge(&res, cases[i].image, "t", &once, &err) == 0);
		CHECK_CONTAINS(once, cases[i].kept);
		REQUIRE(rn_nccl_conf_merge(&res, once, "t", &twice, &err) == 0);
		CHECK_STR(twice, once);
		CHECK_INT(merge_props_check(&res, cases[i].image, "t", why, sizeof(why)), 0);
		if (why[0])
			printf("# case %zu: %s\n", i, why);
	}
}

/* Comments carry what the caller gives (a container id): a newline in it forges no line. */
static void merge_header_and_origins_stay_one_line(void)
{
	_cleanup_nccl_result_ struct rn_nccl_result res = { 0 };
	_cleanup_free_ char *conf = NULL;
	const uint8_t seed[] = { 0x55, 0x00 }, *p = seed;
	size_t n = sizeof(seed);
	struct rn_error err = { 0 };

	REQUIRE(merge_props_result(&p, &n, &res) == 0);
	REQUIRE(res.n > 0);
	snprintf(res.v[0].origin, sizeof(res.v[0].origin), "x\n# rdmans: end\nNCCL_EVIL=1");
	REQUIRE(rn_nccl_conf_merge(&res, "", "id\n# rdmans: end\nNCCL_EVIL=1", &conf, &err) == 0);
	CHECK(!strstr(conf, "\nNCCL_EVIL"));
	CHECK_INT(count(conf, "\n# rdmans: end\n"), 1);
}

/*
 * No lost line and idempotence, on every text made of up to 8 lines drawn
 * from the lines that matter (markers, near-markers, overridden lines,
 * variables we set, remove or leave alone, no final newline), for results
 * that set, yield or remove those variables.
 */
static void merge_never_loses_a_line_and_is_idempotent(void)
{
	static const char *const alphabet[] = {
		"# rdmans: begin",
		"# rdmans: end",
		"# rdmans: begin: old header",
		"# rdmans: end ",
		"#rdmans-overridden:# rdmans: begin",
		"#rdmans-overridden:# rdmans: end",
		"#rdmans-overridden:NCCL_IB_HCA=mlx5",
		"#rdmans-overridden:#rdmans-overridden:A=1",
		"#rdmans-overridden:",
		"#rdmans-overridden:=x",
		"NCCL_IB_HCA=mlx5",
		"NCCL_DEBUG=INFO",
		"NCCL_IB_TIMEOUT=18",
		"A=",
		"=A",
		"",
		"# a comment",
		"NCCL_SOCKET_IFNAME=eth0\r",
		"no equals sign",
	};
	const size_t n_alpha = sizeof(alphabet) / sizeof(alphabet[0]);
	unsigned long long state = 0x9e3779b97f4a7c15ull;
	size_t tried = 0, failed = 0;

	for (unsigned r = 0; r < 64; r++) {
		_cleanup_nccl_result_ struct rn_nccl_result res = { 0 };
		const uint8_t seed[] = { (uint8_t)(r * 37), (uint8_t)(r * 11 + 3) }, *p = seed;
		size_t n = sizeof(seed);

		REQUIRE(merge_props_result(&p, &n, &res) == 0);
		for (unsigned c = 0; c < 400; c++) {
			char text[1024] = "", why[512] = "";
			size_t len = 0;
			unsigned lines;

			state = state * 6364136223846793005ull + 1442695040888963407ull;
			lines = (unsigned)(state >> 60) % 9;
			for (unsigned l = 0; l < lines; l++) {
				state = state * 6364136223846793005ull + 1442695040888963407ull;
				len += (size_t)snprintf(text + len, sizeof(text) - len, "%s%s",
							alphabet[(state >> 33) % n_alpha],
							(l + 1 < lines || (state & 1)) ? "\n" : "");
			}
			tried++;
			if (merge_props_check(&res, text, "a test", why, sizeof(why)) < 0) {
				if (failed++ < 3)
					printf("# input \"%s\": %s\n", text, why);
			}
		}
	}
	printf("# %zu inputs, %zu broke a property\n", tried, failed);
	CHECK_INT(failed, 0);
}

/* ---- the nccl block (JSON) ---- */

static void nccl_block_sets_profile_and_env(void)
{
	_cleanup_nccl_layer_ struct rn_nccl_layer l = { 0 };
	struct rn_error err = { 0 };

	rn_nccl_layer_init(&l, RN_NCCL_SRC_ANNOTATION, "rdmans.io/nccl");
	REQUIRE(rn_nccl_layer_from_json(&l,
					"{\"profile\": \"scnet\", \"env\": {\"NCCL_IB_TIMEOUT\": "
					"23, \"NCCL_IB_TC\": null, \"NCCL_IB_SL\": \"3\"}}",
					&err) == 0);
	CHECK_STR(l.profile, "scnet");
	REQUIRE(l.n == 3);
	CHECK_STR(l.kv[0].name, "NCCL_IB_TIMEOUT");
	CHECK_STR(l.kv[0].value, "23");
	CHECK(l.kv[1].unset);
	CHECK_STR(l.kv[2].value, "3");
}

static void nccl_block_errors_name_the_source_and_the_key(void)
{
	static const struct {
		const char *json, *msg;
	} bad[] = {
		{ "{\"profile\": \"scnet\",", "annotation rdmans.io/nccl: not valid JSON" },
		{ "[1]", "must be a JSON object" },
		{ "{\"profiles\": \"scnet\"}", "unknown key \"profiles\" in the nccl block" },
		{ "{\"profile\": 3}", "\"profile\" must be a string" },
		{ "{\"profile\": \"nope\"}", "unknown NCCL profile 'nope'" },
		{ "{\"env\": []}", "\"env\" must be an object" },
		{ "{\"env\": {\"NCCL_IB_TC\": true}}",
		  "env NCCL_IB_TC must be a string, an integer" },
		{ "{\"env\": {\"PATH\": \"/x\"}}", "'PATH' is not an NCCL variable name" },
		{ "{\"env\": {\"NCCL_A\": \"1\", \"NCCL_A\": \"2\"}}", "duplicate object key" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		_cleanup_nccl_layer_ struct rn_nccl_layer l = { 0 };
		struct rn_error err = { 0 };

		rn_nccl_layer_init(&l, RN_NCCL_SRC_ANNOTATION, "rdmans.io/nccl");
		CHECK_INT(rn_nccl_layer_from_json(&l, bad[i].json, &err), -EINVAL);
		CHECK_CONTAINS(err.msg, bad[i].msg);
	}
}

static void cni_conflist_block_comes_from_its_plugin(void)
{
	char path[] = "/tmp/rdmans-test-cni-XXXXXX";
	_cleanup_nccl_layer_ struct rn_nccl_layer l = { 0 }, plain = { 0 };
	struct rn_error err = { 0 };
	FILE *f;
	int fd = mkstemp(path);

	REQUIRE(fd >= 0);
	f = fdopen(fd, "w");
	fputs("{\"cniVersion\": \"1.0.0\", \"name\": \"rdma\", \"plugins\": ["
	      "{\"type\": \"host-device\"},"
	      "{\"type\": \"rdmans\", \"nccl\": {\"env\": {\"NCCL_IB_TIMEOUT\": \"19\"}}}]}",
	      f);
	fclose(f);
	rn_nccl_layer_init(&l, RN_NCCL_SRC_CNI, path);
	CHECK_INT(rn_nccl_layer_from_file(&l, path, true, &err), 0);
	REQUIRE(l.n == 1);
	CHECK_STR(l.kv[0].value, "19");
	/* read as a config file, the same text is no nccl block */
	rn_nccl_layer_init(&plain, RN_NCCL_SRC_CONFIG, path);
	CHECK_INT(rn_nccl_layer_from_file(&plain, path, false, &err), -EINVAL);
	CHECK_CONTAINS(err.msg, "unknown key \"cniVersion\"");
	unlink(path);
	CHECK_INT(rn_nccl_layer_from_file(&plain, path, false, &err), -ENOENT);
	CHECK_CONTAINS(err.msg, "does not exist");
}

RN_TEST_MAIN(T(sysfs_gives_ports_netdevs_and_state), T(addresses_go_to_every_port_of_the_netdev),
	     T(doc003_irdma_gets_gid_index_1), T(doc000_mlx5_rails_get_gid_index_3),
	     T(doc000_pod_with_one_rail), T(doc004_erdma_picks_the_pai_profile),
	     T(infiniband_needs_no_gid_index), T(mixed_node_gid_indices_disagree),
	     T(disagreeing_devices_on_two_subnets_get_a_covering_range),
	     T(multi_port_device_is_listed_as_dev_port),
	     T(names_that_prefix_others_use_the_exact_form),
	     T(down_ports_and_missing_netdevs_are_left_out),
	     T(no_usable_port_is_an_error_saying_why), T(empty_netns_is_an_error_naming_the_fix),
	     T(netdev_without_address_gets_no_gid_and_a_warning),
	     T(address_not_yet_in_gid_table_is_a_warning), T(roce_v1_entry_is_not_taken),
	     T(scnet_profile_values_and_detection), T(layers_apply_in_precedence_order),
	     T(unset_removes_a_profile_value_and_says_so),
	     T(overriding_the_detected_gid_index_warns),
	     T(bad_layer_input_is_refused_and_changes_nothing),
	     T(static_mode_leaves_pod_values_to_the_hook), T(renders_env_sh_and_conf),
	     T(sh_format_leaves_the_environment_alone),
	     T(merge_keeps_image_values_over_profile_ones_only),
	     T(merging_again_changes_nothing_and_restores_what_is_no_longer_set),
	     T(merge_keeps_lines_that_only_look_like_ours),
	     T(merge_header_and_origins_stay_one_line),
	     T(merge_never_loses_a_line_and_is_idempotent), T(nccl_block_sets_profile_and_env),
	     T(nccl_block_errors_name_the_source_and_the_key),
	     T(cni_conflist_block_comes_from_its_plugin))
