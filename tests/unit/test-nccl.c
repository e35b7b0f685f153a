// SPDX-License-Identifier: Apache-2.0
/*
 * The NCCL resolver on fake sysfs trees built from the source documents'
 * GID tables: mlx5 with RoCE v2 + IPv4 at index 3 (the Baidu CCE guide's show_gids),
 * irdma at index 1 (the IIJ E810 walkthrough), eRDMA (the Alibaba PAI eRDMA guide), InfiniBand, and a mixed node
 * where the indices differ. Addresses come from rtnetlink in real use; here
 * the tests add them with rn_nccl_node_add_addr().
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fakesys.h"
#include "merge-props.h"
#include "rdmans/cleanup.h"
#include "rdmans/gid.h"
#include "rdmans/nccl.h"
#include "rdmans/nccl_conf.h"
#include "rdmans/nccl_json.h"
#include "rdmans/nccl_node.h"
#include "rdmans/nccl_resolve.h"
#include "rdmans/nccl_rules.h"
#include "rdmans/nccl_version.h"
#include "rdmans/rootfs.h"
#include "rdmans/sysfs_pci.h"
#include "rdmans/util.h"
#include "test.h"

/* ---- the nodes of the documents, as a pod sees them ---- */

/* The Baidu CCE guide show_gids, one rail: mlx5_N on ethN, RoCE v2 + IPv4 at index 3. */
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

/* The IIJ E810 walkthrough: irdma0 on ice.roce.0, bound to the pod's net1; GID[1] = ::ffff:10.100.100.1, RoCE v2. */
static void add_irdma_e810(const char *root)
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

/* The Alibaba PAI eRDMA guide: erdma_0 bound to eth0 (172.16.0.10), RoCE v2 + IPv4 at index 1. */
static void add_erdma_pai(const char *root)
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

/* resolve() with one layer, l, that says NCCL is `version` (--nccl-version). */
static int resolve_for(const struct rn_nccl_node *node, struct rn_nccl_layer *l,
		       const char *version, struct rn_nccl_result *res, struct rn_error *err)
{
	int r;

	rn_nccl_layer_init(l, RN_NCCL_SRC_OPTION, "--nccl-version");
	r = rn_nccl_layer_set_version(l, version, err);
	if (r < 0) {
		printf("# rn_nccl_layer_set_version(%s): %s\n", version, err->msg);
		return r;
	}
	return resolve(node, l, 1, res, err);
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

	add_irdma_e810(root);
	add_ib(root);
	fakesys_add_netdev_virtual(root, "lo");
	load(&node);
	REQUIRE(node.n_ports == 2);
	CHECK_STR(node.ports[0].dev, "irdma0");
	CHECK_INT(node.ports[0].port, 1);
	CHECK_STR(node.ports[0].state, "ACTIVE");
	CHECK(node.ports[0].active);
	CHECK_STR(node.ports[0].link_layer, "Ethernet");
	CHECK_STR(node.ports[0].netdev.name, "net1");
	CHECK(node.ports[0].netdev.here);
	CHECK_STR(node.ports[1].dev, "mlx5_4");
	CHECK_STR(node.ports[1].link_layer, "InfiniBand");
	CHECK_STR(node.ports[1].netdev.name, "ib0"); /* the IPoIB netdev of its PCI function */
	CHECK_INT(node.n_netdevs, 3);
	CHECK_INT(node.gids.n, 3);
}

static void addresses_go_to_every_port_of_the_netdev(void)
{
	_cleanup_fake_ char *root = fake_start();
	_cleanup_nccl_node_ struct rn_nccl_node node = { 0 };
	struct rn_error err = { 0 };

	add_irdma_e810(root);
	load(&node);
	addr(&node, "net1", "10.100.100.1/24");
	addr(&node, "other", "10.1.1.1/24");
	REQUIRE(node.n_ports == 1);
	CHECK_INT(node.ports[0].n_ipv4, 1);
	CHECK_STR(node.ports[0].ipv4[0], "10.100.100.1/24");
	CHECK_INT(rn_nccl_node_add_addr(&node, "net1", "10.100.300.1/24", &err), -EINVAL);
	CHECK_INT(rn_nccl_node_add_addr(&node, "net1", "10.100.100.1/33", &err), -EINVAL);
	CHECK_INT(rn_nccl_node_add_addr(&node, "net1", "fd00::1/129", &err), -EINVAL);
	CHECK_INT(rn_nccl_node_add_addr(&node, "net1", "/24", &err), -EINVAL);
	CHECK_CONTAINS(err.msg, "is not an IPv4 or IPv6 address/prefix");
	CHECK_INT(node.ports[0].n_ipv4, 1);
	/* a host address (rtnetlink prints /32 and /128 without the prefix) */
	addr(&node, "net1", "10.100.100.7");
	CHECK_INT(node.ports[0].n_ipv4, 2);
	/* IPv6: global ones kept, link-local ones (fe80::/10) skipped */
	addr(&node, "net1", "fe80::b696:91ff:feec:a458/64");
	addr(&node, "net1", "fd00:100::1/64");
	addr(&node, "net1", "2001:db8::5");
	REQUIRE(node.ports[0].n_ipv6 == 2);
	CHECK_STR(node.ports[0].ipv6[0], "fd00:100::1/64");
	CHECK_STR(node.ports[0].ipv6[1], "2001:db8::5");
}

/* ---- the documents' nodes ---- */

static void irdma_e810_gets_gid_index_1(void)
{
	_cleanup_fake_ char *root = fake_start();
	_cleanup_nccl_node_ struct rn_nccl_node node = { 0 };
	_cleanup_nccl_result_ struct rn_nccl_result res = { 0 };
	struct rn_error err = { 0 };

	add_irdma_e810(root);
	load(&node);
	addr(&node, "net1", "10.100.100.1/24");
	REQUIRE(resolve(&node, NULL, 0, &res, &err) == 0);
	CHECK_STR(res.profile, "roce");
	CHECK_CONTAINS(res.profile_origin, "auto");
	CHECK_STR(value(&res, "NCCL_IB_HCA"), "=irdma0");
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

static void mlx5_rails_get_gid_index_3(void)
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
		  "=mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7,mlx5_8");
	CHECK_STR(value(&res, "NCCL_IB_GID_INDEX"), "3");
	/* CCE's eth0 (the pod network) stays: the profile's interface beats detection */
	CHECK_STR(value(&res, "NCCL_SOCKET_IFNAME"), "eth0");
	CHECK_STR(origin(&res, "NCCL_SOCKET_IFNAME"), "profile baidu-cce");
	CHECK_STR(value(&res, "NCCL_IB_TIMEOUT"), "22");
	CHECK_STR(value(&res, "NCCL_IB_QPS_PER_CONNECTION"), "8");
	CHECK_INT(res.n_warnings, 0);
}

static void mlx5_pod_with_one_rail(void)
{
	_cleanup_fake_ char *root = fake_start();
	_cleanup_nccl_node_ struct rn_nccl_node node = { 0 };
	_cleanup_nccl_result_ struct rn_nccl_result res = { 0 };
	struct rn_error err = { 0 };

	add_mlx5_rail(root, 1, "190b:8002", "eaeb:d3ff:fecc:c920");
	load(&node);
	addr(&node, "eth1", "25.11.128.2/27");
	REQUIRE(resolve(&node, NULL, 0, &res, &err) == 0);
	CHECK_STR(value(&res, "NCCL_IB_HCA"), "=mlx5_1");
	CHECK_STR(value(&res, "NCCL_IB_GID_INDEX"), "3");
	CHECK_STR(value(&res, "NCCL_SOCKET_IFNAME"), "eth1");
}

static void erdma_picks_the_pai_profile(void)
{
	_cleanup_fake_ char *root = fake_start();
	_cleanup_nccl_node_ struct rn_nccl_node node = { 0 };
	_cleanup_nccl_result_ struct rn_nccl_result res = { 0 };
	struct rn_error err = { 0 };

	add_erdma_pai(root);
	load(&node);
	addr(&node, "eth0", "172.16.0.10/24");
	REQUIRE(resolve(&node, NULL, 0, &res, &err) == 0);
	CHECK_STR(res.profile, "alibaba-erdma");
	CHECK_CONTAINS(res.profile_origin, "eRDMA");
	CHECK_STR(value(&res, "NCCL_IB_HCA"), "=erdma_0");
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
	CHECK_STR(value(&res, "NCCL_IB_HCA"), "=mlx5_4");
	CHECK(!value(&res, "NCCL_IB_GID_INDEX"));
	CHECK(!value(&res, "NCCL_IB_ADDR_FAMILY"));
	CHECK_STR(value(&res, "NCCL_SOCKET_IFNAME"), "ib0");
	/* an IPoIB address is no RoCE address: the family only says there is nothing to choose */
	CHECK_CONTAINS(res.family_why, "no RoCE port in use");
	REQUIRE(res.n_ports == 1);
	CHECK_INT(res.ports[0].gid_status, RN_NCCL_GID_NA);
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
	CHECK_STR(value(&res, "NCCL_IB_HCA"), "=mlx4_0:1,mlx4_0:2");
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

/* ---- the oracle: NCCL's GID selection, as NCCL's source has it ---- */

/*
 * NCCL's rule, written here from its source and docs (net_ib.cc /
 * net_ib/connect.cc ncclIbGetGidIndex, ncclUpdateGidIndex), independent of
 * rdmans' own code: given the settings rdmans wrote and the NCCL version
 * class, which GID index NCCL uses on dev/port of a fake tree. It reads the
 * tree's files as NCCL does (gids/N through ibv_query_gid: an empty slot is
 * all zeroes; gid_attrs/types/N read by NCCL itself). Returns the index, or
 * -2 when that NCCL stops with an error (2.21-2.26.1 on an unreadable type).
 */
#define ORACLE_ABORT (-2)

struct oracle_gid {
	uint8_t raw[16];
	int ver; /* 1, 2, or -1: the type file cannot be read */
};

static bool oracle_read(const char *root, const char *dev, unsigned port, const char *what,
			unsigned idx, char *buf, size_t len)
{
	char path[4096];
	FILE *f;
	bool ok;

	snprintf(path, sizeof(path), "%s/class/infiniband/%s/ports/%u/%s/%u", root, dev, port, what,
		 idx);
	f = fopen(path, "re");
	if (!f)
		return false;
	ok = fgets(buf, (int)len, f) != NULL;
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return ok;
}

/* The slots of the table: gids/0 .. gids/N-1 (gid_tbl_len). */
static size_t oracle_table(const char *root, const char *dev, unsigned port, struct oracle_gid *t,
			   size_t max)
{
	size_t n = 0;

	for (; n < max; n++) {
		char path[4096], text[128];
		struct in6_addr a;

		snprintf(path, sizeof(path), "%s/class/infiniband/%s/ports/%u/gids/%zu", root, dev,
			 port, n);
		if (access(path, F_OK) != 0)
			break;
		memset(&t[n], 0, sizeof(t[n]));
		if (oracle_read(root, dev, port, "gids", (unsigned)n, text, sizeof(text)) &&
		    inet_pton(AF_INET6, text, &a) == 1)
			memcpy(t[n].raw, a.s6_addr, 16);
		t[n].ver = -1;
		if (oracle_read(root, dev, port, "gid_attrs/types", (unsigned)n, text,
				sizeof(text)))
			t[n].ver = strncmp(text, "RoCE v2", 7) == 0 ? 2
				   : strstr(text, "v1")		    ? 1
								    : -1;
	}
	return n;
}

static int oracle_family(const uint8_t *g)
{
	static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return memcmp(g, mapped, 12) == 0 ? AF_INET : AF_INET6;
}

static bool oracle_valid(const uint8_t *g)
{
	static const uint8_t zero[16];
	static const uint8_t fe80[4] = { 0xfe, 0x80, 0, 0 };
	bool w0_fe80 = memcmp(g, fe80, 4) == 0;
	bool trailer_zero = memcmp(g + 4, zero, 12) == 0;
	bool configured = !(memcmp(g, zero, 4) == 0 && trailer_zero) && !(w0_fe80 && trailer_zero);
	bool link_local = w0_fe80 && memcmp(g + 4, zero, 4) == 0;

	return configured && !link_local;
}

static bool oracle_in_range(int af, const uint8_t *prefix, int plen, const uint8_t *g)
{
	const uint8_t *a = af == AF_INET ? g + 12 : g;

	for (int b = 0; b < plen; b++)
		if (((prefix[b / 8] ^ a[b / 8]) & (0x80 >> (b % 8))) != 0)
			return false;
	return true;
}

static const char *oracle_env(const struct rn_nccl_result *res, const char *name)
{
	const struct rn_nccl_setting *s = rn_nccl_result_get(res, name);

	return s ? s->value : NULL;
}

static int oracle_gid_index(const char *root, const char *dev, unsigned port,
			    const struct rn_nccl_result *res, enum rn_nccl_ver_class cls)
{
	struct oracle_gid t[64];
	size_t n = oracle_table(root, dev, port, t, 64);
	const char *gi = oracle_env(res, "NCCL_IB_GID_INDEX");
	const char *fam = oracle_env(res, "NCCL_IB_ADDR_FAMILY");
	const char *range = oracle_env(res, "NCCL_IB_ADDR_RANGE");
	const char *ver = oracle_env(res, "NCCL_IB_ROCE_VERSION_NUM");
	int af = fam && strcmp(fam, "AF_INET6") == 0 ? AF_INET6 : AF_INET;
	int want_ver = ver ? atoi(ver) : 2, plen = 0, cur = 0;
	uint8_t prefix[16] = { 0 };

	if (gi)
		return (int)strtol(gi, NULL, 0);
	if (cls == RN_NCCL_VER_FIXED)
		return 0;
	if (range && strchr(range, '/')) {
		char ip[64];

		snprintf(ip, sizeof(ip), "%.*s", (int)(strchr(range, '/') - range), range);
		if (inet_pton(af, ip, prefix) == 1)
			plen = atoi(strchr(range, '/') + 1);
	}
	for (size_t c = 1; c < n; c++) {
		const uint8_t *g = t[cur].raw, *k = t[c].raw;
		bool match = oracle_in_range(af, prefix, plen, k);

		if (oracle_family(k) != oracle_family(g) && oracle_family(k) == af && match) {
			cur = (int)c;
			continue;
		}
		if (oracle_family(k) != af || !oracle_valid(k) || !match)
			continue;
		if (cls == RN_NCCL_VER_AUTO && (t[cur].ver < 0 || t[c].ver < 0))
			return ORACLE_ABORT; /* ncclIbRoceGetVersionNum fails: no connection */
		if ((t[cur].ver != t[c].ver || !oracle_valid(g)) && t[c].ver == want_ver)
			cur = (int)c;
	}
	return cur;
}

/* NCCL_IB_HCA as NCCL reads it: '^' first, then '=', entries name[:port]. */
static bool oracle_hca_takes(const char *value, const char *dev, unsigned port)
{
	char buf[1024], *save = NULL;
	bool not = false, exact = false, match = false;

	if (!value)
		return true;
	if (*value == '^')
		not = true, value++;
	if (*value == '=')
		exact = true, value++;
	snprintf(buf, sizeof(buf), "%s", value);
	for (char *e = strtok_r(buf, ",", &save); e && !match; e = strtok_r(NULL, ",", &save)) {
		char *colon = strchr(e, ':');
		int p = -1;

		if (colon) {
			*colon = '\0';
			p = atoi(colon + 1);
		}
		match = (exact ? strcmp(dev, e) == 0 : strncmp(dev, e, strlen(e)) == 0) &&
			(p == -1 || p == (int)port);
	}
	return match != not ;
}

/*
 * For every RoCE port NCCL takes (by NCCL_IB_HCA), the GID NCCL picks with
 * the settings of res is RoCE v2 and holds one of the addresses of family
 * `family` the port's netdev has. At least `min_ports` ports must be taken.
 */
static void oracle_check(const char *root, const struct rn_nccl_node *node,
			 const struct rn_nccl_result *res, enum rn_nccl_ver_class cls, int family,
			 size_t min_ports)
{
	const char *hca = oracle_env(res, "NCCL_IB_HCA");
	size_t taken = 0;

	for (size_t i = 0; i < node->n_ports; i++) {
		const struct rn_nccl_port *p = &node->ports[i];
		struct oracle_gid t[64];
		size_t n, naddr = family == AF_INET6 ? p->n_ipv6 : p->n_ipv4;
		bool holds = false;
		int idx;

		if (strcmp(p->link_layer, "Ethernet") != 0 || !p->active ||
		    !oracle_hca_takes(hca, p->dev, p->port))
			continue;
		taken++;
		idx = oracle_gid_index(root, p->dev, p->port, res, cls);
		n = oracle_table(root, p->dev, p->port, t, 64);
		if (idx < 0 || (size_t)idx >= n) {
			printf("# oracle: %s port %u, NCCL class %d: GID index %d (table of "
			       "%zu)%s\n",
			       p->dev, p->port, (int)cls, idx, n,
			       idx == ORACLE_ABORT ? ": NCCL aborts" : "");
			CHECK(idx >= 0 && (size_t)idx < n);
			continue;
		}
		for (size_t a = 0; a < naddr; a++) {
			const char *cidr = family == AF_INET6 ? p->ipv6[a] : p->ipv4[a];
			uint8_t want[16] = { 0 };
			char ip[64];

			snprintf(ip, sizeof(ip), "%.*s", (int)strcspn(cidr, "/"), cidr);
			if (family == AF_INET) {
				want[10] = want[11] = 0xff;
				CHECK(inet_pton(AF_INET, ip, want + 12) == 1);
			} else {
				CHECK(inet_pton(AF_INET6, ip, want) == 1);
			}
			holds = holds || memcmp(want, t[idx].raw, 16) == 0;
		}
		if (t[idx].ver != 2 || !holds)
			printf("# oracle: %s port %u, NCCL class %d: GID %d is v%d and %s the "
			       "pod's "
			       "%s address\n",
			       p->dev, p->port, (int)cls, idx, t[idx].ver,
			       holds ? "holds" : "does not hold",
			       family == AF_INET6 ? "IPv6" : "IPv4");
		CHECK(t[idx].ver == 2);
		CHECK(holds);
	}
	if (taken < min_ports)
		printf("# oracle: NCCL_IB_HCA=%s takes %zu RoCE ports, expected at least %zu\n",
		       hca ? hca : "(unset)", taken, min_ports);
	CHECK(taken >= min_ports);
}

/* The versions of each class the tests run with, and "unknown" (no version given). */
static const char *const versions[] = { NULL,	  "2.18.5", "2.20.5", "2.21.5",
					"2.26.1", "2.26.2", "2.28.3" };

/*
 * Resolves node for every NCCL version (given as a layer, as a config file
 * or --nccl-version does) plus `extra` layer settings, and runs the oracle:
 * for a known version with that version's class, for an unknown one with
 * every class (what rdmans writes must be right for all of them).
 */
static void oracle_all_versions(const char *root, const struct rn_nccl_node *node,
				const char *family_choice, int family, size_t min_ports)
{
	for (size_t v = 0; v < RN_ARRAY_SIZE(versions); v++) {
		_cleanup_nccl_result_ struct rn_nccl_result res = { 0 };
		_cleanup_nccl_layer_ struct rn_nccl_layer l = { 0 };
		struct rn_nccl_version nv = { 0 };
		struct rn_error err = { 0 };

		rn_nccl_layer_init(&l, RN_NCCL_SRC_OPTION, "--nccl-version");
		if (versions[v])
			CHECK_INT(rn_nccl_layer_set_version(&l, versions[v], &err), 0);
		if (family_choice)
			CHECK_INT(rn_nccl_layer_set_family(&l, family_choice, &err), 0);
		REQUIRE(resolve(node, &l, 1, &res, &err) == 0);
		CHECK_INT(res.family, family);
		if (versions[v]) {
			CHECK(rn_nccl_version_parse(versions[v], &nv, &err) == 0);
			CHECK_INT(res.ver_class, rn_nccl_version_class(&nv));
			oracle_check(root, node, &res, res.ver_class, family, min_ports);
		} else {
			CHECK_INT(res.ver_class, RN_NCCL_VER_UNKNOWN);
			for (int c = RN_NCCL_VER_FIXED; c <= RN_NCCL_VER_AUTO_SPARSE; c++)
				oracle_check(root, node, &res, (enum rn_nccl_ver_class)c, family,
					     min_ports);
		}
		if (rn_test_failed) {
			printf("# with NCCL %s\n", versions[v] ? versions[v] : "unknown");
			return;
		}
	}
}

/* ---- IPv6, dual-stack, sparse tables, NCCL versions: checked against the oracle ---- */

/* A RoCE device dev on netdev ifname (PCI bdf), no GIDs yet. */
static void add_roce(const char *root, const char *dev, const char *ifname, const char *bdf)
{
	fakesys_add_netdev_pci(root, ifname, bdf);
	fakesys_add_rdma_pci(root, dev, bdf, "eaeb:d3ff:fecc:c900", "Ethernet");
}

/* The kernel's pair for one address: RoCE v1 at idx, RoCE v2 at idx + 1. */
static void add_pair(const char *root, const char *dev, unsigned idx, const char *gid,
		     const char *ndev)
{
	fakesys_add_gid(root, dev, 1, idx, gid, "IB/RoCE v1", ndev);
	fakesys_add_gid(root, dev, 1, idx + 1, gid, "RoCE v2", ndev);
}

#define LL "fe80:0000:0000:0000:e8eb:d3ff:fecc:c900"
#define V6(x) "fd00:0100:0000:0000:0000:0000:0000:" x
#define V4(x) "0000:0000:0000:0000:0000:ffff:" x

static void ipv6_only_pod_gets_the_v2_gid_of_its_global_address(void)
{
	_cleanup_fake_ char *root = fake_start();
	_cleanup_nccl_node_ struct rn_nccl_node node = { 0 };
	_cleanup_nccl_result_ struct rn_nccl_result res = { 0 };
	_cleanup_free_ char *conf = NULL;
	struct rn_error err = { 0 };

	add_roce(root, "mlx5_0", "eth0", "0000:3b:00.0");
	add_pair(root, "mlx5_0", 0, LL, "eth0");
	add_pair(root, "mlx5_0", 2, V6("0010"), "eth0");
	fakesys_add_empty_gids(root, "mlx5_0", 1, 4, 15);
	load(&node);
	addr(&node, "eth0", "fe80::e8eb:d3ff:fecc:c900/64");
	addr(&node, "eth0", "fd00:100::10/64");
	REQUIRE(resolve(&node, NULL, 0, &res, &err) == 0);
	CHECK_INT(res.family, AF_INET6);
	CHECK_CONTAINS(res.family_why, "IPv6-only");
	CHECK_STR(value(&res, "NCCL_IB_HCA"), "=mlx5_0");
	/* the global address, never the link-local one at 0/1 */
	CHECK_STR(value(&res, "NCCL_IB_GID_INDEX"), "3");
	CHECK_STR(value(&res, "NCCL_IB_ADDR_FAMILY"), "AF_INET6");
	CHECK_STR(value(&res, "NCCL_SOCKET_IFNAME"), "eth0");
	CHECK_STR(value(&res, "NCCL_SOCKET_FAMILY"), "AF_INET6");
	CHECK_INT(res.n_warnings, 0);
	REQUIRE(res.n_ports == 1);
	CHECK_STR(res.ports[0].gid_addr, "fd00:100::10/64");
	REQUIRE(rn_nccl_render(&res, RN_NCCL_FMT_CONF, true, &conf, &err) == 0);
	CHECK_CONTAINS(conf, "# address family IPv6: IPv6-only");
	CHECK_CONTAINS(conf, "# mlx5_0 port 1: used, netdev eth0, RoCE v2 GID 3 holds "
			     "fd00:100::10/64\n");
	CHECK_CONTAINS(conf, "# NCCL version unknown (no image to look in): settings that are "
			     "right for every version");
	oracle_all_versions(root, &node, NULL, AF_INET6, 1);
}

/* Before any address is there: NCCL >= 2.21 is at least told to look for IPv6. */
static void ipv6_gid_not_there_yet_still_sets_the_family(void)
{
	_cleanup_fake_ char *root = fake_start();
	_cleanup_nccl_node_ struct rn_nccl_node node = { 0 };
	_cleanup_nccl_result_ struct rn_nccl_result res = { 0 };
	struct rn_error err = { 0 };

	add_roce(root, "mlx5_0", "eth0", "0000:3b:00.0");
	add_pair(root, "mlx5_0", 0, LL, "eth0");
	load(&node);
	addr(&node, "eth0", "fd00:100::10/64");
	REQUIRE(resolve(&node, NULL, 0, &res, &err) == 0);
	CHECK(!value(&res, "NCCL_IB_GID_INDEX"));
	CHECK_STR(value(&res, "NCCL_IB_ADDR_FAMILY"), "AF_INET6");
	CHECK(warned(&res, "no RoCE v2 GID holds the address of eth0 (fd00:100::10/64)"));
}

static void dual_stack_pod_defaults_to_ipv4_and_a_key_chooses_ipv6(void)
{
	_cleanup_fake_ char *root = fake_start();
	_cleanup_nccl_node_ struct rn_nccl_node node = { 0 };
	_cleanup_nccl_result_ struct rn_nccl_result res = { 0 }, res6 = { 0 };
	_cleanup_nccl_layer_ struct rn_nccl_layer annot = { 0 }, bad = { 0 };
	struct rn_error err = { 0 };

	add_roce(root, "mlx5_0", "eth0", "0000:3b:00.0");
	add_pair(root, "mlx5_0", 0, LL, "eth0");
	add_pair(root, "mlx5_0", 2, V4("0a00:000a"), "eth0");
	add_pair(root, "mlx5_0", 4, V6("0010"), "eth0");
	fakesys_add_empty_gids(root, "mlx5_0", 1, 6, 15);
	load(&node);
	addr(&node, "eth0", "10.0.0.10/24");
	addr(&node, "eth0", "fd00:100::10/64");
	REQUIRE(resolve(&node, NULL, 0, &res, &err) == 0);
	CHECK_INT(res.family, AF_INET);
	CHECK_CONTAINS(res.family_why, "dual-stack: IPv4, NCCL's default family");
	CHECK_STR(value(&res, "NCCL_IB_GID_INDEX"), "3");
	CHECK(!value(&res, "NCCL_IB_ADDR_FAMILY"));
	CHECK(!value(&res, "NCCL_SOCKET_FAMILY"));
	oracle_all_versions(root, &node, NULL, AF_INET, 1);
	oracle_all_versions(root, &node, "auto", AF_INET, 1);

	/* the nccl block's "family" key (annotation rdmans.io/nccl, config file, CNI config) */
	rn_nccl_layer_init(&annot, RN_NCCL_SRC_ANNOTATION, "rdmans.io/nccl");
	REQUIRE(rn_nccl_layer_from_json(&annot, "{\"family\": \"ipv6\"}", &err) == 0);
	REQUIRE(resolve(&node, &annot, 1, &res6, &err) == 0);
	CHECK_INT(res6.family, AF_INET6);
	CHECK_STR(res6.family_why, "annotation rdmans.io/nccl asks for IPv6");
	CHECK_STR(value(&res6, "NCCL_IB_GID_INDEX"), "5");
	CHECK_STR(value(&res6, "NCCL_IB_ADDR_FAMILY"), "AF_INET6");
	CHECK_STR(value(&res6, "NCCL_SOCKET_FAMILY"), "AF_INET6");
	oracle_all_versions(root, &node, "ipv6", AF_INET6, 1);

	rn_nccl_layer_init(&bad, RN_NCCL_SRC_ANNOTATION, "rdmans.io/nccl");
	CHECK_INT(rn_nccl_layer_from_json(&bad, "{\"family\": \"inet6\"}", &err), -EINVAL);
	CHECK_CONTAINS(err.msg, "address family 'inet6' is not ipv4, ipv6 or auto");
	CHECK_INT(rn_nccl_layer_from_json(&bad, "{\"family\": 6}", &err), -EINVAL);
	CHECK_STR(bad.family, "");
}

/* irdma0 at index 1 and mlx5_0 at index 3: one index is right only for NCCL < 2.21's subset. */
static void mixed_node_gid_indices_depend_on_the_nccl_version(void)
{
	_cleanup_fake_ char *root = fake_start();
	_cleanup_nccl_node_ struct rn_nccl_node node = { 0 };
	_cleanup_nccl_result_ struct rn_nccl_result res = { 0 }, res21 = { 0 }, res18 = { 0 };
	_cleanup_nccl_layer_ struct rn_nccl_layer l21 = { 0 }, l18 = { 0 };
	struct rn_error err = { 0 };

	add_irdma_e810(root);
	add_mlx5_rail(root, 0, "0a64:6402", "f820:20ff:fe28:c769");
	load(&node);
	addr(&node, "net1", "10.100.100.1/24");
	addr(&node, "eth0", "10.100.100.2/24");

	/* unknown version: right for every NCCL, so one index and the ports that have it */
	REQUIRE(resolve(&node, NULL, 0, &res, &err) == 0);
	CHECK_STR(value(&res, "NCCL_IB_HCA"), "=irdma0");
	CHECK_STR(value(&res, "NCCL_IB_GID_INDEX"), "1");
	CHECK(!value(&res, "NCCL_IB_ADDR_RANGE"));
	CHECK(warned(&res, "GID index differs between devices (irdma0:1 1, mlx5_0:1 3)"));
	CHECK(warned(&res, "\"nccl_version\" in the nccl block or --nccl-version"));
	REQUIRE(res.n_ports == 2);
	CHECK(!res.ports[1].used);
	CHECK_CONTAINS(res.ports[1].why_not, "its RoCE v2 GID index is 3, not 1");

	/* NCCL 2.21: it picks per device; every port is used */
	rn_nccl_layer_init(&l21, RN_NCCL_SRC_CONFIG, "/etc/rdmans/nccl.json");
	REQUIRE(rn_nccl_layer_from_json(&l21, "{\"nccl_version\": \"2.21.5\"}", &err) == 0);
	REQUIRE(resolve(&node, &l21, 1, &res21, &err) == 0);
	CHECK_STR(value(&res21, "NCCL_IB_HCA"), "=irdma0,mlx5_0");
	CHECK(!value(&res21, "NCCL_IB_GID_INDEX"));
	CHECK_STR(value(&res21, "NCCL_IB_ADDR_FAMILY"), "AF_INET");
	CHECK_STR(value(&res21, "NCCL_IB_ADDR_RANGE"), "10.100.100.0/30");
	CHECK_STR(value(&res21, "NCCL_IB_ROCE_VERSION_NUM"), "2");
	CHECK_INT(res21.n_warnings, 0);
	CHECK_CONTAINS(res21.version_why, "named by config /etc/rdmans/nccl.json");

	/* NCCL 2.18: no selection of its own */
	REQUIRE(resolve_for(&node, &l18, "2.18.5", &res18, &err) == 0);
	CHECK_STR(value(&res18, "NCCL_IB_GID_INDEX"), "1");
	CHECK(warned(&res18, "NCCL 2.18.5 takes one NCCL_IB_GID_INDEX for every device"));

	oracle_all_versions(root, &node, NULL, AF_INET, 1);
}

static void disagreeing_devices_on_two_subnets_get_a_covering_range(void)
{
	_cleanup_fake_ char *root = fake_start();
	_cleanup_nccl_node_ struct rn_nccl_node node = { 0 };
	_cleanup_nccl_result_ struct rn_nccl_result res = { 0 };
	_cleanup_nccl_layer_ struct rn_nccl_layer l = { 0 };
	struct rn_error err = { 0 };

	add_irdma_e810(root);
	add_mlx5_rail(root, 0, "0a64:6502", "f820:20ff:fe28:c769");
	load(&node);
	addr(&node, "net1", "10.100.100.1/24");
	addr(&node, "eth0", "10.100.101.2/24");
	REQUIRE(resolve_for(&node, &l, "2.28.3", &res, &err) == 0);
	CHECK_STR(value(&res, "NCCL_IB_ADDR_RANGE"), "10.100.100.0/23");
	oracle_all_versions(root, &node, NULL, AF_INET, 1);
}

/* Two IPv6 devices at different indices; mlx5_1's table also holds another pod's address. */
static void mixed_ipv6_devices_get_an_ipv6_range(void)
{
	_cleanup_fake_ char *root = fake_start();
	_cleanup_nccl_node_ struct rn_nccl_node node = { 0 };
	_cleanup_nccl_result_ struct rn_nccl_result res = { 0 };
	_cleanup_nccl_layer_ struct rn_nccl_layer l = { 0 };
	struct rn_error err = { 0 };

	add_roce(root, "mlx5_0", "eth0", "0000:3b:00.0");
	add_pair(root, "mlx5_0", 0, LL, "eth0");
	add_pair(root, "mlx5_0", 2, V6("0010"), "eth0");
	add_roce(root, "mlx5_1", "eth1", "0000:3c:00.0");
	add_pair(root, "mlx5_1", 0, LL, "eth1");
	add_pair(root, "mlx5_1", 2, "fd00:0900:0000:0000:0000:0000:0000:0009", "eth1v");
	add_pair(root, "mlx5_1", 4, V6("0020"), "eth1");
	fakesys_add_empty_gids(root, "mlx5_1", 1, 6, 7);
	load(&node);
	addr(&node, "eth0", "fd00:100::10/64");
	addr(&node, "eth1", "fd00:100::20/64");
	REQUIRE(resolve_for(&node, &l, "2.26.2", &res, &err) == 0);
	CHECK_STR(value(&res, "NCCL_IB_HCA"), "=mlx5_0,mlx5_1");
	CHECK(!value(&res, "NCCL_IB_GID_INDEX"));
	CHECK_STR(value(&res, "NCCL_IB_ADDR_FAMILY"), "AF_INET6");
	CHECK_STR(value(&res, "NCCL_IB_ADDR_RANGE"), "fd00:100::/122");
	oracle_all_versions(root, &node, NULL, AF_INET6, 1);
}

/* NVIDIA/nccl#1587's table: the pod's GIDs start at 6, slots 0-5 are empty. */
static void sparse_table_ipv4(void)
{
	_cleanup_fake_ char *root = fake_start();
	_cleanup_nccl_node_ struct rn_nccl_node node = { 0 };
	_cleanup_nccl_result_ struct rn_nccl_result res = { 0 }, res2 = { 0 };
	_cleanup_nccl_layer_ struct rn_nccl_layer l = { 0 };
	struct rn_error err = { 0 };

	add_roce(root, "mlx5_0", "net1", "0000:3b:00.0");
	fakesys_add_empty_gids(root, "mlx5_0", 1, 0, 5);
	add_pair(root, "mlx5_0", 6, V4("0b00:0401"), "net1");
	add_pair(root, "mlx5_0", 8, LL, "net1");
	fakesys_add_empty_gids(root, "mlx5_0", 1, 10, 15);
	add_roce(root, "mlx5_1", "net2", "0000:3c:00.0");
	fakesys_add_empty_gids(root, "mlx5_1", 1, 0, 1);
	add_pair(root, "mlx5_1", 2, V4("0b00:0402"), "net2");
	fakesys_add_empty_gids(root, "mlx5_1", 1, 4, 15);
	load(&node);
	addr(&node, "net1", "11.0.4.1/24");
	addr(&node, "net2", "11.0.4.2/24");
	REQUIRE(resolve(&node, NULL, 0, &res, &err) == 0);
	oracle_all_versions(root, &node, NULL, AF_INET, 1);
	/* IPv4: even NCCL 2.21 gets through (its search never reads an empty slot's type) */
	REQUIRE(resolve_for(&node, &l, "2.21.5", &res2, &err) == 0);
	CHECK_STR(value(&res2, "NCCL_IB_HCA"), "=mlx5_0,mlx5_1");
	CHECK_STR(value(&res2, "NCCL_IB_ADDR_RANGE"), "11.0.4.0/30");
	oracle_check(root, &node, &res2, RN_NCCL_VER_AUTO, AF_INET, 2);
}

/* IPv6 and a table whose slot 0 is empty: NCCL 2.21-2.26.1 stops its search there. */
static void sparse_table_ipv6_needs_2_26_2_for_automatic_selection(void)
{
	_cleanup_fake_ char *root = fake_start();
	_cleanup_nccl_node_ struct rn_nccl_node node = { 0 };
	_cleanup_nccl_result_ struct rn_nccl_result r21 = { 0 }, r26 = { 0 };
	_cleanup_nccl_layer_ struct rn_nccl_layer l21 = { 0 }, l26 = { 0 };
	struct rn_error err = { 0 };

	add_roce(root, "mlx5_0", "net1", "0000:3b:00.0");
	fakesys_add_empty_gids(root, "mlx5_0", 1, 0, 3);
	add_pair(root, "mlx5_0", 4, V6("0010"), "net1");
	add_pair(root, "mlx5_0", 6, LL, "net1");
	add_roce(root, "mlx5_1", "net2", "0000:3c:00.0");
	add_pair(root, "mlx5_1", 0, LL, "net2");
	add_pair(root, "mlx5_1", 2, V6("0020"), "net2");
	fakesys_add_empty_gids(root, "mlx5_1", 1, 4, 7);
	load(&node);
	addr(&node, "net1", "fd00:100::10/64");
	addr(&node, "net2", "fd00:100::20/64");

	REQUIRE(resolve_for(&node, &l21, "2.26.1", &r21, &err) == 0);
	CHECK_STR(value(&r21, "NCCL_IB_GID_INDEX"), "5");
	CHECK_STR(value(&r21, "NCCL_IB_HCA"), "=mlx5_0");
	CHECK(warned(&r21, "NCCL 2.26.1 stops its GID search with an error on the empty slot 0 "
			   "of mlx5_0 port 1's sparse GID table"));
	/* what rdmans would have written for 2.26.2 makes 2.26.1 fail: the oracle says so */
	REQUIRE(resolve_for(&node, &l26, "2.26.2", &r26, &err) == 0);
	CHECK_STR(value(&r26, "NCCL_IB_HCA"), "=mlx5_0,mlx5_1");
	CHECK(!value(&r26, "NCCL_IB_GID_INDEX"));
	CHECK_INT(oracle_gid_index(root, "mlx5_0", 1, &r26, RN_NCCL_VER_AUTO), ORACLE_ABORT);
	CHECK_INT(oracle_gid_index(root, "mlx5_0", 1, &r26, RN_NCCL_VER_AUTO_SPARSE), 5);
	oracle_all_versions(root, &node, NULL, AF_INET6, 1);
}

/*
 * A shared device: another pod's address (10.0.0.7, macvlan eth0v) sits in
 * the table before ours and inside the covering range: NCCL's own selection
 * would take it, so one index and the devices that have it.
 */
static void range_holding_another_pods_gid_first_is_not_used(void)
{
	_cleanup_fake_ char *root = fake_start();
	_cleanup_nccl_node_ struct rn_nccl_node node = { 0 };
	_cleanup_nccl_result_ struct rn_nccl_result res = { 0 };
	_cleanup_nccl_layer_ struct rn_nccl_layer l = { 0 };
	struct rn_error err = { 0 };

	add_roce(root, "mlx5_0", "eth0", "0000:3b:00.0");
	add_pair(root, "mlx5_0", 0, LL, "eth0");
	add_pair(root, "mlx5_0", 2, V4("0a00:0007"), "eth0v");
	add_pair(root, "mlx5_0", 4, V4("0a00:0005"), "eth0");
	fakesys_add_netdev_pci(root, "net1", "0000:2f:00.0");
	fakesys_add_rdma_pci(root, "rxe_x", "0000:2f:00.0", NULL, "Ethernet");
	add_pair(root, "rxe_x", 0, V4("0a00:0006"), "net1");
	load(&node);
	addr(&node, "eth0", "10.0.0.5/24");
	addr(&node, "net1", "10.0.0.6/24");
	REQUIRE(resolve_for(&node, &l, "2.28.3", &res, &err) == 0);
	CHECK(warned(&res, "RoCE v2 GID 3 of mlx5_0 port 1 (10.0.0.7 of eth0v) is inside "
			   "10.0.0.4/30 and comes before the pod's own"));
	CHECK(!value(&res, "NCCL_IB_ADDR_RANGE"));
	oracle_all_versions(root, &node, NULL, AF_INET, 1);
}

static void version_parse_and_classes(void)
{
	static const struct {
		const char *text;
		enum rn_nccl_ver_class cls;
	} ok[] = {
		{ "2.18.5", RN_NCCL_VER_FIXED },
		{ "2.20.5-1", RN_NCCL_VER_FIXED },
		{ "2.21.5", RN_NCCL_VER_AUTO },
		{ "2.26.1", RN_NCCL_VER_AUTO },
		{ "2.26.2", RN_NCCL_VER_AUTO_SPARSE },
		{ "2.28.3+cuda12.9", RN_NCCL_VER_AUTO_SPARSE },
		{ "2.30.7", RN_NCCL_VER_AUTO_SPARSE },
	};
	static const char *const bad[] = { "", "2.21", "3.0.0", "2.21.x", "2.21.5a", "v2.21.5" };
	struct rn_nccl_version v;
	struct rn_error err = { 0 };

	for (size_t i = 0; i < RN_ARRAY_SIZE(ok); i++) {
		CHECK_INT(rn_nccl_version_parse(ok[i].text, &v, &err), 0);
		CHECK_INT(rn_nccl_version_class(&v), ok[i].cls);
	}
	for (size_t i = 0; i < RN_ARRAY_SIZE(bad); i++)
		CHECK_INT(rn_nccl_version_parse(bad[i], &v, &err), -EINVAL);
	CHECK_CONTAINS(err.msg, "'v2.21.5' is not an NCCL version");
	memset(&v, 0, sizeof(v));
	CHECK_INT(rn_nccl_version_class(&v), RN_NCCL_VER_UNKNOWN);
	CHECK_INT(rn_nccl_version_class(NULL), RN_NCCL_VER_UNKNOWN);
}

static void put_file(const char *root, const char *rel, const char *content, size_t len)
{
	char path[4096], cmd[4200];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\"", path);
	REQUIRE(system(cmd) == 0);
	f = fopen(path, "we");
	REQUIRE(f);
	fwrite(content, 1, len, f);
	fclose(f);
}

/* A root filesystem with NCCL where images put it: file names, pip's wheel, LD_LIBRARY_PATH. */
static void version_found_in_an_image(void)
{
	static char lib[8192];
	_cleanup_fake_ char *root = fake_start();
	struct rn_nccl_version v;
	struct rn_error err = { 0 };
	char path[4096], cmd[4200];
	size_t n = 0;
	int fd;

	/* an ELF-ish blob with NCCL's banner (and a decoy without a version) inside */
	memset(lib, 'x', sizeof(lib));
	memcpy(lib, "\177ELF", 4);
	memcpy(lib + 1000, "NCCL version %s", 15);
	memcpy(lib + 5000, "NCCL version 2.26.2+cuda12.2", 28);
	fd = rn_rootfs_open(root, &err);
	REQUIRE(fd >= 0);
	/* a FIFO where the library would be is never opened for reading (it would block) */
	put_file(root, "usr/local/cuda/lib64/.keep", "", 0);
	snprintf(path, sizeof(path), "%s/usr/local/cuda/lib64/libnccl.so.2", root);
	REQUIRE(mkfifo(path, 0644) == 0);
	CHECK_INT(rn_nccl_version_find(fd, NULL, &v, &n, &err), -ENOENT);
	CHECK_CONTAINS(err.msg, "no libnccl in the image");
	CHECK_INT(v.major, 0);

	/* pip's nvidia-nccl-cu12: libnccl.so.2 only; the banner inside tells */
	put_file(root, "usr/local/lib/python3.10/dist-packages/nvidia/nccl/lib/libnccl.so.2", lib,
		 sizeof(lib));
	REQUIRE(rn_nccl_version_find(fd, NULL, &v, &n, &err) == 0);
	CHECK_INT(n, 1);
	CHECK_INT(v.minor, 26);
	CHECK_INT(v.patch, 2);
	CHECK_STR(v.where, "/usr/local/lib/python3.10/dist-packages/nvidia/nccl/lib/libnccl.so.2");

	/* a distribution package: the version in the name; the oldest of the two wins */
	put_file(root, "usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5", "x", 1);
	snprintf(cmd, sizeof(cmd),
		 "ln -s libnccl.so.2.21.5 '%s/usr/lib/x86_64-linux-gnu/libnccl.so.2'", root);
	REQUIRE(system(cmd) == 0);
	REQUIRE(rn_nccl_version_find(fd, NULL, &v, &n, &err) == 0);
	CHECK_INT(n, 2);
	CHECK_INT(v.minor, 21);
	CHECK_CONTAINS(v.where, "/usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5 (the oldest; also "
				"2.26.2 in /usr/local/lib/python3.10");

	/* LD_LIBRARY_PATH of the container; a symlink out of the image stays inside it */
	put_file(root, "opt/nccl-2.18/lib/libnccl.so.2.18.3", "x", 1);
	snprintf(path, sizeof(path), "%s/opt/escape", root);
	CHECK(symlink("/usr/lib/x86_64-linux-gnu", path) == 0);
	REQUIRE(rn_nccl_version_find(fd, "/opt/nccl-2.18/lib:relative:/opt/escape", &v, &n, &err) ==
		0);
	CHECK_INT(v.minor, 18);
	/* 4: /opt/escape -> /usr/lib/x86_64-linux-gnu was followed inside the image */
	CHECK_INT(n, 4);
	close(fd);
}

static void static_mode_takes_an_ipv6_pool(void)
{
	_cleanup_nccl_result_ struct rn_nccl_result res = { 0 };
	struct rn_nccl_request req = { .node_static = true, .addr_range = "fd00:100::/64" };
	struct rn_error err = { 0 };

	REQUIRE(rn_nccl_resolve(NULL, &req, &res, &err) == 0);
	CHECK_STR(value(&res, "NCCL_IB_ADDR_FAMILY"), "AF_INET6");
	CHECK_STR(value(&res, "NCCL_IB_ADDR_RANGE"), "fd00:100::/64");
}

/* ---- exact names: '=' and '^=' as NCCL reads them ---- */

static void nccl_lists_parse_exclusion_before_exact(void)
{
	struct rn_nccl_list l;

	rn_nccl_list_parse("^=mlx5_1,mlx5_2:2", &l);
	CHECK(l.exclude);
	CHECK(l.exact);
	REQUIRE(l.n == 2);
	CHECK_STR(l.v[1].name, "mlx5_2");
	CHECK_INT(l.v[1].port, 2);
	CHECK(!rn_nccl_list_takes(&l, "mlx5_1", 1));
	CHECK(rn_nccl_list_takes(&l, "mlx5_10", 1));
	CHECK(rn_nccl_list_takes(&l, "mlx5_2", 1));
	CHECK(!rn_nccl_list_takes(&l, "mlx5_2", 2));
	/* "=^" is no exclusion: an exact name "^mlx5_1" */
	rn_nccl_list_parse("=^mlx5_1", &l);
	CHECK(!l.exclude);
	CHECK(!rn_nccl_list_takes(&l, "mlx5_1", 1));
	/* prefixes without '=' */
	rn_nccl_list_parse("mlx5_1", &l);
	CHECK(rn_nccl_list_takes(&l, "mlx5_10", 1));
	rn_nccl_list_parse("^mlx5_1", &l);
	CHECK(!rn_nccl_list_takes(&l, "mlx5_10", 1));
	CHECK(rn_nccl_list_takes(&l, "mlx5_2", 1));
}

static void hca_values_from_layers_are_checked_against_the_devices(void)
{
	static const struct {
		const char *value, *warning; /* NULL: no warning about NCCL_IB_HCA */
	} cases[] = {
		{ "=mlx5_1", NULL },
		{ "^=mlx5_1", NULL },
		{ "mlx5_1",
		  "NCCL matches 'mlx5_1' as a prefix, so it also takes mlx5_10; start the "
		  "value with '='" },
		{ "=mlx5_9", "entry 'mlx5_9' matches no RDMA device" },
		{ "^mlx5_1", "selects no RDMA port NCCL could use here" },
		{ "^mlx5", "selects no RDMA port NCCL could use here" },
	};
	_cleanup_fake_ char *root = fake_start();
	_cleanup_nccl_node_ struct rn_nccl_node node = { 0 };

	add_mlx5_rail(root, 1, "0a00:0001", "eaeb:d3ff:fecc:c901");
	add_mlx5_rail(root, 10, "0a00:0a01", "eaeb:d3ff:fecc:c90a");
	load(&node);
	addr(&node, "eth1", "10.0.0.1/24");
	addr(&node, "eth10", "10.0.10.1/24");
	for (size_t i = 0; i < RN_ARRAY_SIZE(cases); i++) {
		_cleanup_nccl_result_ struct rn_nccl_result res = { 0 };
		_cleanup_nccl_layer_ struct rn_nccl_layer l = { 0 };
		struct rn_error err = { 0 };
		bool any = false;

		rn_nccl_layer_init(&l, RN_NCCL_SRC_ANNOTATION, "rdmans.io/nccl");
		CHECK_INT(rn_nccl_layer_set(&l, "NCCL_IB_HCA", cases[i].value, &err), 0);
		REQUIRE(resolve(&node, &l, 1, &res, &err) == 0);
		CHECK_STR(value(&res, "NCCL_IB_HCA"), cases[i].value);
		for (size_t w = 0; w < res.n_warnings; w++)
			any = any || strstr(res.warnings[w], "NCCL_IB_HCA=");
		if (cases[i].warning)
			CHECK(warned(&res, cases[i].warning));
		else
			CHECK(!any);
		if (rn_test_failed)
			printf("# NCCL_IB_HCA=%s\n", cases[i].value);
	}
}

static void socket_ifname_exclusions_follow_nccls_order(void)
{
	_cleanup_fake_ char *root = fake_start();
	_cleanup_nccl_node_ struct rn_nccl_node node = { 0 };

	add_mlx5_rail(root, 1, "0a00:0001", "eaeb:d3ff:fecc:c901");
	load(&node);
	addr(&node, "eth1", "10.0.0.1/24");
	for (int i = 0; i < 3; i++) {
		static const char *const v[] = { "^=eth1", "=^eth1", "^eth" };
		_cleanup_nccl_result_ struct rn_nccl_result res = { 0 };
		_cleanup_nccl_layer_ struct rn_nccl_layer l = { 0 };
		struct rn_error err = { 0 };

		rn_nccl_layer_init(&l, RN_NCCL_SRC_OPTION, "--set");
		CHECK_INT(rn_nccl_layer_set(&l, "NCCL_SOCKET_IFNAME", v[i], &err), 0);
		REQUIRE(resolve(&node, &l, 1, &res, &err) == 0);
		/* every one leaves no interface: eth1 is the only netdev */
		CHECK(warned(&res, "matches no netdev in this network namespace"));
	}
}

/* ---- ports NCCL cannot use ---- */

static void down_ports_and_missing_netdevs_are_left_out(void)
{
	_cleanup_fake_ char *root = fake_start();
	_cleanup_nccl_node_ struct rn_nccl_node node = { 0 };
	_cleanup_nccl_result_ struct rn_nccl_result res = { 0 };
	struct rn_error err = { 0 };
	char path[4096];

	add_irdma_e810(root);
	add_mlx5_rail(root, 0, "0a64:6402", "f820:20ff:fe28:c769");
	/* eth0 stays on the host: only the RDMA device came into the pod */
	snprintf(path, sizeof(path), "rm -f '%s/class/net/eth0'", root);
	CHECK_INT(system(path), 0);
	load(&node);
	addr(&node, "net1", "10.100.100.1/24");
	REQUIRE(resolve(&node, NULL, 0, &res, &err) == 0);
	CHECK_STR(value(&res, "NCCL_IB_HCA"), "=irdma0");
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

	add_irdma_e810(root);
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

/* A kernel without RDMA says so; sockets_ok writes NCCL over sockets instead */
static void kernel_without_rdma_is_named_and_sockets_can_be_allowed(void)
{
	_cleanup_fake_ char *root = fake_start();
	_cleanup_nccl_node_ struct rn_nccl_node node = { 0 };
	_cleanup_nccl_result_ struct rn_nccl_result res = { 0 };
	struct rn_nccl_layer l;
	struct rn_nccl_request req = {
		.layers = &l, .n_layers = 1, .sockets_ok = true, .sockets_origin = "annotation x"
	};
	struct rn_error err = { 0 };
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/class/infiniband", root);
	CHECK_INT(rmdir(path), 0);
	fakesys_add_netdev_virtual(root, "eth0");
	load(&node);
	CHECK(node.no_rdma);
	CHECK_INT(resolve(&node, NULL, 0, &res, &err), -ENODEV);
	CHECK_CONTAINS(err.msg, "this node's kernel has no RDMA");
	CHECK(!strstr(err.msg, "all-netns"));
	rn_nccl_layer_init(&l, RN_NCCL_SRC_ANNOTATION, "annotation p");
	CHECK_INT(rn_nccl_layer_set_profile(&l, "baidu-cce", &err), 0);
	CHECK_INT(rn_nccl_resolve(&node, &req, &res, &err), 0);
	CHECK(res.sockets);
	CHECK_STR(rn_nccl_result_get(&res, "NCCL_IB_DISABLE")->value, "1");
	CHECK_STR(rn_nccl_result_get(&res, "NCCL_SOCKET_IFNAME")->value, "eth0");
	CHECK(!rn_nccl_result_get(&res, "NCCL_IB_TIMEOUT"));
	CHECK(!rn_nccl_result_get(&res, "NCCL_IB_QPS_PER_CONNECTION"));
	CHECK_INT(res.n_warnings, 1);
	CHECK_CONTAINS(res.warnings[0], "NCCL runs over sockets, slower than RDMA (annotation x): "
					"this node's kernel has no RDMA");
	rn_nccl_layer_free(&l);
}

static void netdev_without_address_gets_no_gid_and_a_warning(void)
{
	_cleanup_fake_ char *root = fake_start();
	_cleanup_nccl_node_ struct rn_nccl_node node = { 0 };
	_cleanup_nccl_result_ struct rn_nccl_result res = { 0 };
	struct rn_error err = { 0 };

	add_irdma_e810(root);
	load(&node);
	REQUIRE(resolve(&node, NULL, 0, &res, &err) == 0);
	CHECK_STR(value(&res, "NCCL_IB_HCA"), "=irdma0");
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

	add_irdma_e810(root);
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

	add_irdma_e810(root);
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
	CHECK_STR(value(&res, "NCCL_IB_HCA"), "=irdma0");
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

	add_irdma_e810(root);
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

	add_irdma_e810(root);
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

	add_irdma_e810(root);
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
	CHECK_CONTAINS(err.msg, "address range '10.100.100.0' is not a CIDR");
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

	add_irdma_e810(root);
	load(&node);
	addr(&node, "net1", "10.100.100.1/24");
	rn_nccl_layer_init(&l, RN_NCCL_SRC_OPTION, "--set");
	CHECK_INT(rn_nccl_layer_set(&l, "NCCL_TOPO_FILE", "/opt/it's here/topo.xml", &err), 0);
	REQUIRE(resolve(&node, &l, 1, &res, &err) == 0);
	REQUIRE(rn_nccl_render(&res, RN_NCCL_FMT_ENV, false, &env, &err) == 0);
	CHECK_STR(env, "NCCL_IB_DISABLE=0\nNCCL_IB_HCA==irdma0\nNCCL_IB_GID_INDEX=1\n"
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
			     "holds 10.100.100.1/24 (net1); an explicit index is right for every "
			     "NCCL version\nNCCL_IB_GID_INDEX=1\n");
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

	add_irdma_e810(root);
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
	CHECK_STR(out, "7 =irdma0\nnet1\n");
}

/* ---- merging with an image's nccl.conf ---- */

static void resolve_irdma_e810(struct rn_nccl_result *res, const char *profile)
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

	add_irdma_e810(root);
	resolve_irdma_e810(&res, "baidu-cce");
	REQUIRE(rn_nccl_conf_merge(&res, image, "written by a test", &conf, &err) == 0);
	CHECK_CONTAINS(conf, "# rdmans: begin\n# written by a test\n");
	/* the image's timeout beats the profile's 22 */
	CHECK_CONTAINS(conf, "# NCCL_IB_TIMEOUT: the image's own value is kept (profile baidu-cce "
			     "would set 22)\n");
	CHECK(!strstr(conf, "NCCL_IB_TIMEOUT=22"));
	CHECK_CONTAINS(conf, "\nNCCL_IB_TIMEOUT=18\n");
	/* detection beats the image's HCA: both of its lines are commented out */
	CHECK_CONTAINS(conf, "# NCCL_IB_HCA: overrides the image's NCCL_IB_HCA=mlx5\n"
			     "NCCL_IB_HCA==irdma0\n");
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

	add_irdma_e810(root);
	resolve_irdma_e810(&res, NULL);
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

/* Damaged rdmans blocks in an image's nccl.conf: a line that only starts like a marker, an unterminated block. */
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

	add_irdma_e810(root);
	resolve_irdma_e810(&res, NULL);
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

/*
 * Four rails, each RDMA device below a PCIe switch with one GPU (two
 * switches per socket): a container's GPUs narrow NCCL_IB_HCA to theirs.
 */
static void place_gpu_rails(const char *root, struct rn_sysfs_pci_fn gpu[4])
{
	for (unsigned n = 0; n < 4; n++) {
		char sw[128], nic_parent[160], gpu_parent[160], nic[32], bdf[32];
		struct rn_error err = { 0 };

		snprintf(sw, sizeof(sw), "pci0000:%s/0000:%s:0%u.0/0000:%x0:00.0",
			 n < 2 ? "00" : "80", n < 2 ? "00" : "80", 1 + n % 2, 1 + n);
		snprintf(nic_parent, sizeof(nic_parent), "%s/0000:%x1:01.0", sw, 1 + n);
		snprintf(gpu_parent, sizeof(gpu_parent), "%s/0000:%x1:00.0", sw, 1 + n);
		snprintf(nic, sizeof(nic), "0000:%02x:00.0", 0x3b + n);
		snprintf(bdf, sizeof(bdf), "0000:%x2:00.0", 1 + n);
		fakesys_place_pci(root, nic, nic_parent, 0x15b3, 0x020000, n < 2 ? 0 : 1);
		fakesys_place_pci(root, bdf, gpu_parent, 0x10de, 0x030200, n < 2 ? 0 : 1);
		CHECK_INT(rn_sysfs_pci_get(bdf, &gpu[n], &err), 0);
	}
}

static void a_containers_gpus_choose_its_rails(void)
{
	_cleanup_fake_ char *root = fake_start();
	_cleanup_nccl_node_ struct rn_nccl_node node = { 0 };
	_cleanup_nccl_result_ struct rn_nccl_result res = { 0 };
	_cleanup_nccl_layer_ struct rn_nccl_layer option = { 0 };
	struct rn_nccl_request req = { 0 };
	struct rn_error err = { 0 };
	struct rn_sysfs_pci_fn gpu[4], mine[2];
	const struct rn_nccl_setting *hca;

	for (unsigned i = 0; i < 4; i++) {
		char hex[16], guid[32];

		snprintf(hex, sizeof(hex), "0a00:%02x02", i);
		snprintf(guid, sizeof(guid), "eaeb:d3ff:fecc:c9%02x", i);
		add_mlx5_rail(root, i, hex, guid);
	}
	place_gpu_rails(root, gpu);
	load(&node);
	for (unsigned i = 0; i < 4; i++) {
		char ifname[16], cidr[32];

		snprintf(ifname, sizeof(ifname), "eth%u", i);
		snprintf(cidr, sizeof(cidr), "10.0.%u.2/24", i);
		addr(&node, ifname, cidr);
	}
	CHECK_STR(node.ports[2].pci_bdf, "0000:3d:00.0");

	/* GPUs 3 and 0, in that order: their own devices, nearest first, then in GPU order */
	mine[0] = gpu[3];
	mine[1] = gpu[0];
	req.gpus = mine;
	req.n_gpus = 2;
	REQUIRE(rn_nccl_resolve(&node, &req, &res, &err) == 0);
	CHECK_STR(value(&res, "NCCL_IB_HCA"), "=mlx5_3,mlx5_0");
	CHECK_STR(value(&res, "NCCL_IB_GID_INDEX"), "3");
	hca = rn_nccl_result_get(&res, "NCCL_IB_HCA");
	REQUIRE(hca != NULL);
	CHECK_CONTAINS(hca->detail, "nearest to this container's GPUs first: GPU 0000:42:00.0: "
				    "mlx5_3 (same PCIe switch); GPU 0000:12:00.0: mlx5_0 (same "
				    "PCIe switch)");
	CHECK(!res.ports[1].used && res.ports[1].off_rail);
	CHECK_CONTAINS(res.ports[1].why_not,
		       "not the nearest RDMA device of any of this container's GPUs");
	CHECK(res.ports[0].used && res.ports[0].rail == 2 && res.ports[3].rail == 1);
	CHECK_INT(res.n_warnings, 0); /* the other rails are no fault of the pod */

	/* no GPUs: every usable port, as before */
	rn_nccl_result_free(&res);
	req.n_gpus = 0;
	REQUIRE(rn_nccl_resolve(&node, &req, &res, &err) == 0);
	CHECK_STR(value(&res, "NCCL_IB_HCA"), "=mlx5_0,mlx5_1,mlx5_2,mlx5_3");

	/* a layer's NCCL_IB_HCA still wins over the GPUs' choice */
	rn_nccl_result_free(&res);
	rn_nccl_layer_init(&option, RN_NCCL_SRC_OPTION, "--set");
	REQUIRE(rn_nccl_layer_set(&option, "NCCL_IB_HCA", "=mlx5_1", &err) == 0);
	req.layers = &option;
	req.n_layers = 1;
	req.n_gpus = 2;
	REQUIRE(rn_nccl_resolve(&node, &req, &res, &err) == 0);
	CHECK_STR(value(&res, "NCCL_IB_HCA"), "=mlx5_1");
}

/* Devices without a PCI function (soft-RoCE): nothing to choose by, said in a warning. */
static void gpus_cannot_choose_among_soft_devices(void)
{
	_cleanup_fake_ char *root = fake_start();
	_cleanup_nccl_node_ struct rn_nccl_node node = { 0 };
	_cleanup_nccl_result_ struct rn_nccl_result res = { 0 };
	struct rn_nccl_request req = { 0 };
	struct rn_error err = { 0 };
	struct rn_sysfs_pci_fn gpu;

	fakesys_add_netdev_virtual(root, "net1");
	fakesys_add_rdma_virtual(root, "rxe0", "net1", "0000:0000:0000:0001", "Ethernet");
	fakesys_add_gid(root, "rxe0", 1, 1, "0000:0000:0000:0000:0000:ffff:0a00:0002", "RoCE v2",
			"net1");
	fakesys_place_pci(root, "0000:12:00.0", "pci0000:00/0000:00:01.0", 0x10de, 0x030200, 0);
	REQUIRE(rn_sysfs_pci_get("0000:12:00.0", &gpu, &err) == 0);
	load(&node);
	addr(&node, "net1", "10.0.0.2/24");
	req.gpus = &gpu;
	req.n_gpus = 1;
	REQUIRE(rn_nccl_resolve(&node, &req, &res, &err) == 0);
	CHECK_STR(value(&res, "NCCL_IB_HCA"), "=rxe0");
	REQUIRE(res.n_warnings == 1);
	CHECK_CONTAINS(res.warnings[0], "NCCL_IB_HCA is not narrowed to the RDMA devices near this "
					"container's 1 GPUs: none of the 1 RDMA devices here has a "
					"PCI function");
}

/*
 * irdma in iWARP mode (the E810's other protocol; node_type "4: RNIC"): its
 * port is Ethernet with a netdev, but NCCL cannot use it, and says why.
 */
static void iwarp_devices_are_left_out_saying_why(void)
{
	_cleanup_fake_ char *root = fake_start();
	_cleanup_nccl_node_ struct rn_nccl_node node = { 0 };
	_cleanup_nccl_result_ struct rn_nccl_result res = { 0 };
	struct rn_nccl_request sockets = { .sockets_ok = true, .sockets_origin = "test" };
	struct rn_error err = { 0 };

	add_irdma_e810(root);
	fakesys_write(root, "class/infiniband/irdma0/node_type", "4: RNIC");
	load(&node);
	addr(&node, "net1", "10.100.100.1/24");
	REQUIRE(node.n_ports == 1);
	CHECK(node.ports[0].iwarp);
	CHECK_INT(resolve(&node, NULL, 0, &res, &err), -ENODEV);
	CHECK_CONTAINS(err.msg, "irdma0 port 1");
	CHECK_CONTAINS(err.msg, "iWARP device: NCCL's IB transport connects its queue pairs "
				"without a connection manager, which iWARP requires (rdma_cm)");
	/* sockets allowed: NCCL over sockets, with the reason */
	rn_nccl_result_free(&res);
	REQUIRE(rn_nccl_resolve(&node, &sockets, &res, &err) == 0);
	CHECK_STR(value(&res, "NCCL_IB_DISABLE"), "1");
	CHECK(warned(&res, "iWARP device"));

	/* beside a RoCE device: only that one */
	rn_nccl_result_free(&res);
	rn_nccl_node_free(&node);
	add_mlx5_rail(root, 0, "0a64:6402", "f820:20ff:fe28:c769");
	load(&node);
	addr(&node, "net1", "10.100.100.1/24");
	addr(&node, "eth0", "10.100.100.2/24");
	REQUIRE(resolve(&node, NULL, 0, &res, &err) == 0);
	CHECK_STR(value(&res, "NCCL_IB_HCA"), "=mlx5_0");
	CHECK(warned(&res, "irdma0 port 1 is left out: iWARP device"));
}

RN_TEST_MAIN(
	T(sysfs_gives_ports_netdevs_and_state), T(addresses_go_to_every_port_of_the_netdev),
	T(irdma_e810_gets_gid_index_1), T(mlx5_rails_get_gid_index_3), T(mlx5_pod_with_one_rail),
	T(erdma_picks_the_pai_profile), T(infiniband_needs_no_gid_index),
	T(ipv6_only_pod_gets_the_v2_gid_of_its_global_address),
	T(ipv6_gid_not_there_yet_still_sets_the_family),
	T(dual_stack_pod_defaults_to_ipv4_and_a_key_chooses_ipv6),
	T(mixed_node_gid_indices_depend_on_the_nccl_version),
	T(disagreeing_devices_on_two_subnets_get_a_covering_range),
	T(mixed_ipv6_devices_get_an_ipv6_range), T(sparse_table_ipv4),
	T(sparse_table_ipv6_needs_2_26_2_for_automatic_selection),
	T(range_holding_another_pods_gid_first_is_not_used), T(version_parse_and_classes),
	T(version_found_in_an_image), T(static_mode_takes_an_ipv6_pool),
	T(nccl_lists_parse_exclusion_before_exact),
	T(hca_values_from_layers_are_checked_against_the_devices),
	T(socket_ifname_exclusions_follow_nccls_order), T(multi_port_device_is_listed_as_dev_port),
	T(names_that_prefix_others_use_the_exact_form),
	T(down_ports_and_missing_netdevs_are_left_out), T(no_usable_port_is_an_error_saying_why),
	T(empty_netns_is_an_error_naming_the_fix),
	T(kernel_without_rdma_is_named_and_sockets_can_be_allowed),
	T(netdev_without_address_gets_no_gid_and_a_warning),
	T(address_not_yet_in_gid_table_is_a_warning), T(roce_v1_entry_is_not_taken),
	T(scnet_profile_values_and_detection), T(layers_apply_in_precedence_order),
	T(unset_removes_a_profile_value_and_says_so), T(overriding_the_detected_gid_index_warns),
	T(bad_layer_input_is_refused_and_changes_nothing),
	T(static_mode_leaves_pod_values_to_the_hook), T(renders_env_sh_and_conf),
	T(sh_format_leaves_the_environment_alone),
	T(merge_keeps_image_values_over_profile_ones_only),
	T(merging_again_changes_nothing_and_restores_what_is_no_longer_set),
	T(merge_keeps_lines_that_only_look_like_ours), T(merge_header_and_origins_stay_one_line),
	T(merge_never_loses_a_line_and_is_idempotent), T(nccl_block_sets_profile_and_env),
	T(nccl_block_errors_name_the_source_and_the_key),
	T(cni_conflist_block_comes_from_its_plugin), T(a_containers_gpus_choose_its_rails),
	T(gpus_cannot_choose_among_soft_devices), T(iwarp_devices_are_left_out_saying_why))
