// SPDX-License-Identifier: Apache-2.0
/*
 * The rdma-netns state files (format: rdmans/cni_state.h), their one reader
 * and one writer, in a scratch directory: names, the bytes every rdma-netns
 * has written (fixtures/cni-state: written by the writer before the struct),
 * escapes, atomic writes, damaged files, listing, ownership and per-device
 * locks.
 */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rdmans/attach.h"
#include "rdmans/attach_plan.h"
#include "rdmans/attach_state.h"
#include "rdmans/cleanup.h"
#include "rdmans/cni_state.h"
#include "rdmans/sysfs.h"
#include "rdmans/sysfs_kernel.h"
#include "rdmans/util.h"
#include "test.h"

static char dir[64];

static void make_dir(void)
{
	char tmpl[] = "/tmp/rn-cni-state.XXXXXX";
	char *d = mkdtemp(tmpl);

	CHECK(d != NULL);
	snprintf(dir, sizeof(dir), "%s/state", d ? d : "/nonexistent");
}

static void remove_dir(void)
{
	char cmd[160];

	snprintf(cmd, sizeof(cmd), "rm -rf '%.*s'", (int)(strlen(dir) - 6), dir);
	CHECK(system(cmd) == 0);
}

/* The bytes of a file (free() them); "" when it cannot be read. */
static char *slurp(const char *path)
{
	struct rn_error err = { 0 };
	char *text = NULL;

	if (rn_read_regular(path, 1 << 20, "file", &text, NULL, &err) < 0) {
		CHECK_STR(err.msg, "");
		return strdup("");
	}
	return text;
}

static char *fixture(const char *name)
{
	const char *fixtures = getenv("RDMANS_FIXTURES");
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/cni-state/%s", fixtures ? fixtures : "fixtures", name);
	return slurp(path);
}

static char *state_text(const char *name)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return slurp(path);
}

static void put_file(const char *name, const char *text)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	REQUIRE(f != NULL);
	fputs(text, f);
	fclose(f);
}

static void names_follow_the_cni_rules(void)
{
	struct rn_error err = { 0 };
	char name[256];

	CHECK_INT(rn_cni_state_name("rdma-net", "3f2a9c", "net1", name, sizeof(name), &err), 0);
	CHECK_STR(name, "rdma-net:3f2a9c:net1");
	CHECK_INT(rn_cni_state_name("a/b", "c", "net1", name, sizeof(name), &err), -EINVAL);
	CHECK_CONTAINS(err.msg, "network name 'a/b' may only contain");
	CHECK_INT(rn_cni_state_name("net", "../x", "net1", name, sizeof(name), &err), -EINVAL);
	CHECK_CONTAINS(err.msg, "container ID '../x' must start with a letter or a digit");
	CHECK_INT(rn_cni_state_name("net", "c1", "..", name, sizeof(name), &err), -EINVAL);
	CHECK_INT(rn_cni_state_name("net", "c1", "a:b", name, sizeof(name), &err), -EINVAL);
	CHECK_CONTAINS(err.msg, "must not contain ':'");
	CHECK_INT(rn_cni_state_name("net", "c1", "abcdefghijklmnop", name, sizeof(name), &err),
		  -EINVAL);
}

static void long_names_are_hashed_and_stay_distinct(void)
{
	struct rn_error err = { 0 };
	char a[256], b[256], net[180];

	memset(net, 'n', sizeof(net) - 1);
	net[sizeof(net) - 1] = '\0';
	CHECK_INT(rn_cni_state_name(net, "0123456789abcdef0123456789abcdef", "net1", a, sizeof(a),
				    &err),
		  0);
	CHECK_INT(rn_cni_state_name(net, "0123456789abcdef0123456789abcdef", "net2", b, sizeof(b),
				    &err),
		  0);
	CHECK(strlen(a) < 200);
	CHECK(strcmp(a, b) != 0);
	CHECK(strstr(a, ":~") != NULL);
}

static void a_world_writable_state_dir_is_refused(void)
{
	struct rn_error err = { 0 };

	make_dir();
	CHECK_INT(rn_cni_state_dir_init(dir, &err), 0);
	CHECK_INT(chmod(dir, 0777), 0);
	CHECK_INT(rn_cni_state_dir_init(dir, &err), -EPERM);
	CHECK_CONTAINS(err.msg, "writable by others");
	remove_dir();
}

static struct rn_attach_plan sample_plan(void)
{
	struct rn_attach_plan p = { 0 };

	p.n_netdevs = 2;
	snprintf(p.netdevs[0].name, sizeof(p.netdevs[0].name), "ens1f0");
	snprintf(p.netdevs[0].pod_name, sizeof(p.netdevs[0].pod_name), "net1");
	snprintf(p.netdevs[0].mac, sizeof(p.netdevs[0].mac), "b4:96:91:ec:a4:58");
	snprintf(p.netdevs[0].alias, sizeof(p.netdevs[0].alias), "uplink");
	p.netdevs[0].ifindex = 7;
	p.netdevs[0].was_up = true;
	snprintf(p.netdevs[1].name, sizeof(p.netdevs[1].name), "ens1f1");
	snprintf(p.netdevs[1].pod_name, sizeof(p.netdevs[1].pod_name), "ens1f1");
	snprintf(p.netdevs[1].mac, sizeof(p.netdevs[1].mac), "b4:96:91:ec:a4:59");
	snprintf(p.netdevs[1].kind, sizeof(p.netdevs[1].kind), "veth");
	p.netdevs[1].ifindex = 8;
	p.n_rdma = 2;
	snprintf(p.rdma[0], sizeof(p.rdma[0]), "mlx5_0");
	snprintf(p.rdma[1], sizeof(p.rdma[1]), "mlx5_1");
	snprintf(p.bus_id, sizeof(p.bus_id), "0000:3b:00.0");
	p.rdma_kernel = true;
	return p;
}

/* What fixtures/cni-state/full holds: every key ADD writes. */
static void full_attachment(struct rn_cni_attachment *att)
{
	struct rn_error err = { 0 };
	struct rn_attach_netdev *nd;

	memset(att, 0, sizeof(*att));
	snprintf(att->network, sizeof(att->network), "rdma-net");
	snprintf(att->container_id, sizeof(att->container_id), "3f2a9c0d1e");
	snprintf(att->ifname, sizeof(att->ifname), "net1");
	snprintf(att->netns, sizeof(att->netns), "/var/run/netns/pod1");
	att->phase = RN_CNI_PHASE_READY;
	att->created = 1764400000;
	snprintf(att->boot_id, sizeof(att->boot_id), "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0");
	snprintf(att->pod_namespace, sizeof(att->pod_namespace), "ml");
	snprintf(att->pod_name, sizeof(att->pod_name), "gpu-pod0");
	snprintf(att->pod_uid, sizeof(att->pod_uid), "6a1b2c3d");
	snprintf(att->infra_container_id, sizeof(att->infra_container_id), "9e8d7c");
	snprintf(att->ipam, sizeof(att->ipam), "host-local");
	snprintf(att->devinfo, sizeof(att->devinfo),
		 "/var/run/k8s.cni.cncf.io/devinfo/rdma-net-3f2a9c0d1e-net1.json");
	CHECK_INT(rn_cni_attachment_add_nccl(att, "NCCL_IB_HCA", "mlx5_0", &err), 0);
	CHECK_INT(rn_cni_attachment_add_nccl(att, "NCCL_NET_GDR_LEVEL", "5", &err), 0);
	CHECK_INT(rn_cni_attachment_add_nccl(att, "NCCL_RATIO", "0.5", &err), 0);
	CHECK_INT(rn_cni_attachment_add_nccl(att, "NCCL_IB_DISABLE", "0", &err), 0);
	att->plan = sample_plan();
	snprintf(att->plan.netdevs[0].alias, sizeof(att->plan.netdevs[0].alias),
		 "two\nlines \\ and = signs");
	nd = &att->plan.netdevs[1];
	snprintf(nd->name, sizeof(nd->name), "ib0");
	snprintf(nd->pod_name, sizeof(nd->pod_name), "ib0");
	snprintf(nd->mac, sizeof(nd->mac), "80:00:01:08");
	snprintf(nd->kind, sizeof(nd->kind), "ipoib");
	nd->ipoib = true;
	for (size_t k = 0; k < 16; k++)
		nd->ib_gid[k] = (uint8_t)(0xf0 + k);
	att->plan.exclusive = true; /* as the reader has it */
	snprintf(att->soft_roce, sizeof(att->soft_roce), "rxe3f2a9c0d1e_net1");
	att->n_ips = 2;
	snprintf(att->ips[0], sizeof(att->ips[0]), "10.56.0.5/24");
	snprintf(att->ips[1], sizeof(att->ips[1]), "fd00::5/64");
}

static void same_plan(const struct rn_attach_plan *a, const struct rn_attach_plan *b)
{
	CHECK(a->chained == b->chained);
	CHECK_STR(a->bus_id, b->bus_id);
	CHECK(a->rdma_kernel == b->rdma_kernel);
	CHECK(a->exclusive == b->exclusive);
	REQUIRE(a->n_netdevs == b->n_netdevs && a->n_rdma == b->n_rdma);
	for (size_t i = 0; i < a->n_netdevs; i++) {
		const struct rn_attach_netdev *x = &a->netdevs[i], *y = &b->netdevs[i];

		CHECK_STR(x->name, y->name);
		CHECK_STR(x->pod_name, y->pod_name);
		CHECK_STR(x->mac, y->mac);
		CHECK_STR(x->kind, y->kind);
		CHECK_STR(x->alias, y->alias);
		CHECK_INT(x->ifindex, y->ifindex);
		CHECK(x->was_up == y->was_up);
		CHECK(x->ipoib == y->ipoib);
		CHECK(memcmp(x->ib_gid, y->ib_gid, 16) == 0);
	}
	for (size_t i = 0; i < a->n_rdma; i++)
		CHECK_STR(a->rdma[i], b->rdma[i]);
}

static void same_attachment(const struct rn_cni_attachment *a, const struct rn_cni_attachment *b)
{
	CHECK_STR(a->network, b->network);
	CHECK_STR(a->container_id, b->container_id);
	CHECK_STR(a->ifname, b->ifname);
	CHECK_STR(a->netns, b->netns);
	CHECK_INT(a->phase, b->phase);
	CHECK_INT(a->created, b->created);
	CHECK_STR(a->boot_id, b->boot_id);
	CHECK_STR(a->pod_namespace, b->pod_namespace);
	CHECK_STR(a->pod_name, b->pod_name);
	CHECK_STR(a->pod_uid, b->pod_uid);
	CHECK_STR(a->infra_container_id, b->infra_container_id);
	CHECK_STR(a->ipam, b->ipam);
	CHECK_STR(a->devinfo, b->devinfo);
	same_plan(&a->plan, &b->plan);
	CHECK_STR(a->soft_roce, b->soft_roce);
	REQUIRE(a->n_ips == b->n_ips && a->n_nccl == b->n_nccl && a->n_unknown == b->n_unknown);
	for (size_t i = 0; i < a->n_ips; i++)
		CHECK_STR(a->ips[i], b->ips[i]);
	for (size_t i = 0; i < a->n_nccl; i++) {
		CHECK_STR(a->nccl[i].key, b->nccl[i].key);
		CHECK_STR(a->nccl[i].value, b->nccl[i].value);
	}
	for (size_t i = 0; i < a->n_unknown; i++) {
		CHECK_STR(a->unknown[i].key, b->unknown[i].key);
		CHECK_STR(a->unknown[i].value, b->unknown[i].value);
	}
}

/* Nodes upgrade with the files an older rdma-netns wrote: the same bytes, both ways. */
static void the_writer_writes_the_bytes_rdma_netns_has_always_written(void)
{
	struct rn_error err = { 0 };
	_cleanup_cni_attachment_ struct rn_cni_attachment att = { 0 };
	_cleanup_cni_attachment_ struct rn_cni_attachment back = { 0 };
	_cleanup_free_ char *full = fixture("full");
	_cleanup_free_ char *releasing = fixture("full-releasing");
	_cleanup_free_ char *least = fixture("least");
	char *text;

	make_dir();
	CHECK_INT(rn_cni_state_dir_init(dir, &err), 0);
	full_attachment(&att);
	CHECK_INT(rn_cni_attachment_write(dir, "full", &att, true, &err), 0);
	text = state_text("full");
	CHECK_STR(text, full);
	free(text);

	/* read as the struct it was made from; DEL's rewrite as the old one made it */
	put_file("old", full);
	CHECK_INT(rn_cni_attachment_read(dir, "old", &back, &err), 0);
	same_attachment(&back, &att);
	back.phase = RN_CNI_PHASE_RELEASING;
	CHECK_INT(rn_cni_attachment_write(dir, "old", &back, false, &err), 0);
	text = state_text("old");
	CHECK_STR(text, releasing);
	free(text);
	rn_cni_attachment_free(&back);

	/* the fewest keys: chained, no pod, no IPAM, no boot ID (an older rdma-netns) */
	put_file("least", least);
	CHECK_INT(rn_cni_attachment_read(dir, "least", &back, &err), 0);
	CHECK(back.plan.chained && !back.plan.rdma_kernel);
	CHECK_INT(back.plan.n_netdevs, 1);
	CHECK_STR(back.plan.netdevs[0].kind, "veth");
	CHECK_INT(back.phase, RN_CNI_PHASE_ADDING);
	CHECK_STR(back.boot_id, "");
	CHECK_STR(back.pod_name, "");
	CHECK_INT(rn_cni_attachment_write(dir, "least", &back, true, &err), 0);
	text = state_text("least");
	CHECK_STR(text, least);
	free(text);
	remove_dir();
}

static void values_round_trip_with_escapes_and_atomic_writes(void)
{
	struct rn_error err = { 0 };
	_cleanup_cni_attachment_ struct rn_cni_attachment att = { 0 };
	_cleanup_cni_attachment_ struct rn_cni_attachment back = { 0 };
	char path[128];
	struct stat sb;

	make_dir();
	CHECK_INT(rn_cni_state_dir_init(dir, &err), 0);
	CHECK_INT(stat(dir, &sb), 0);
	CHECK_INT(sb.st_mode & 0777, 0700);
	full_attachment(&att);
	snprintf(att.pod_name, sizeof(att.pod_name), "a\\b\nc=d\\n");
	CHECK_INT(rn_cni_attachment_add_nccl(&att, "NCCL_SOCKET_IFNAME", "=eth\\0\n", &err), 0);
	CHECK_INT(rn_cni_attachment_write(dir, "net:c1:net1", &att, true, &err), 0);
	snprintf(path, sizeof(path), "%s/net:c1:net1", dir);
	CHECK_INT(stat(path, &sb), 0);
	CHECK_INT(sb.st_mode & 0777, 0600);
	CHECK_INT(rn_cni_attachment_read(dir, "net:c1:net1", &back, &err), 0);
	same_attachment(&back, &att);
	rn_cni_attachment_free(&back);
	/* without the fsyncs: replaced whole, same mode, no temporary file left */
	att.phase = RN_CNI_PHASE_RELEASING;
	CHECK_INT(rn_cni_attachment_write(dir, "net:c1:net1", &att, false, &err), 0);
	CHECK_INT(stat(path, &sb), 0);
	CHECK_INT(sb.st_mode & 0777, 0600);
	CHECK_INT(rn_cni_attachment_read(dir, "net:c1:net1", &back, &err), 0);
	CHECK_INT(back.phase, RN_CNI_PHASE_RELEASING);
	{
		char tmp[160];

		snprintf(tmp, sizeof(tmp), "%s/.net:c1:net1.%d.tmp", dir, (int)getpid());
		CHECK_INT(stat(tmp, &sb), -1);
	}
	rn_cni_attachment_free(&back);
	CHECK_INT(rn_cni_attachment_read(dir, "net:c9:net1", &back, &err), -ENOENT);
	CHECK_CONTAINS(err.msg, "no state file");
	CHECK_INT(rn_cni_attachment_read(dir, "../etc", &back, &err), -EINVAL);
	CHECK_INT(rn_cni_attachment_write(dir, "../etc", &att, true, &err), -EINVAL);
	remove_dir();
}

/* Readers ignore what they do not know; a rewrite keeps it for the writer that does. */
static void unknown_keys_are_kept_and_comments_skipped(void)
{
	struct rn_error err = { 0 };
	_cleanup_cni_attachment_ struct rn_cni_attachment att = { 0 };
	_cleanup_free_ char *text = NULL;

	make_dir();
	CHECK_INT(rn_cni_state_dir_init(dir, &err), 0);
	put_file("n:c:i", "# comment\nformat=1\nno equals sign\n=empty key\nfuture_key=kept\n"
			  "phase=sleeping\nnetwork=n\nip.0=10.0.0.1/8\nip.2=10.0.0.3/8\n"
			  "netdev.0.name=beyond-the-count\nbad key=x\n");
	CHECK_INT(rn_cni_attachment_read(dir, "n:c:i", &att, &err), 0);
	CHECK_STR(att.network, "n");
	CHECK_INT(att.phase, RN_CNI_PHASE_UNKNOWN); /* not ready */
	CHECK_INT(att.n_ips, 1); /* the addresses up to the first gap */
	CHECK_INT(att.plan.n_netdevs, 0);
	CHECK(att.plan.rdma_kernel && !att.plan.chained);
	REQUIRE(att.n_unknown == 3);
	CHECK_STR(att.unknown[0].key, "future_key");
	CHECK_STR(att.unknown[0].value, "kept");
	CHECK_STR(att.unknown[1].key, "ip.2");
	CHECK_STR(att.unknown[2].key, "netdev.0.name");
	CHECK_INT(rn_cni_attachment_write(dir, "n:c:i", &att, false, &err), 0);
	text = state_text("n:c:i");
	CHECK_CONTAINS(text, "ip.0=10.0.0.1/8\nfuture_key=kept\nip.2=10.0.0.3/8\n"
			     "netdev.0.name=beyond-the-count\n");
	remove_dir();
}

/* A damaged value is an error naming the file and the key; what reads is still there. */
static void damaged_files_are_refused_with_the_file_and_the_key(void)
{
	static const struct {
		const char *line, *msg;
	} damaged[] = {
		{ "netdevs=9", "state: bad value for 'netdevs'" },
		{ "rdma=two", "state: bad value for 'rdma'" },
		{ "rdma.1.name=../mlx5_1", "state: RDMA device 1 has no valid name" },
		{ "netdev.0.name=", "state: netdev 0 has no valid name" },
		{ "netdev.1.ib_gid=f0f1::f2::f3", "state: netdev 1 has a bad ib_gid" },
		{ "netdev.1.ib_gid=fe80::z", "state: netdev 1 has a bad ib_gid" },
		{ "ifname=abcdefghijklmnopq", "'ifname' is longer than 15 bytes" },
		{ "ip.1=10.56.0.5/24-and-then-a-great-many-more-bytes-than-any-address-has",
		  "'ip.1' is longer than 63 bytes" },
	};
	struct rn_error err = { 0 };
	_cleanup_free_ char *full = fixture("full");
	char want[256];

	make_dir();
	CHECK_INT(rn_cni_state_dir_init(dir, &err), 0);
	for (size_t i = 0; i < RN_ARRAY_SIZE(damaged); i++) {
		_cleanup_cni_attachment_ struct rn_cni_attachment att = { 0 };
		_cleanup_free_ char *text = NULL;

		/* a later line of a key replaces the earlier */
		CHECK(asprintf(&text, "%s%s\n", full, damaged[i].line) > 0);
		put_file("n:c:net1", text);
		CHECK_INT(rn_cni_attachment_read(dir, "n:c:net1", &att, &err), -EBADMSG);
		snprintf(want, sizeof(want), "state file %s/n:c:net1 is damaged: %s", dir,
			 damaged[i].msg);
		CHECK_STR(err.msg, want);
		/* who it is, and the devices it may claim */
		CHECK_STR(att.container_id, "3f2a9c0d1e");
		CHECK_STR(att.pod_name, "gpu-pod0");
		CHECK(att.plan.n_netdevs <= RN_ATTACH_MAX && att.plan.n_rdma <= RN_ATTACH_MAX);
		CHECK_STR(att.plan.netdevs[0].mac, "b4:96:91:ec:a4:58");
	}
	{
		_cleanup_cni_attachment_ struct rn_cni_attachment att = { 0 };

		put_file("n:c:net2", "format=2\nnetwork=n\n");
		CHECK_INT(rn_cni_attachment_read(dir, "n:c:net2", &att, &err), -EPROTONOSUPPORT);
		CHECK_CONTAINS(err.msg, "/n:c:net2 has format 2");
		CHECK_CONTAINS(err.msg, "a newer rdma-netns wrote it");
	}
	remove_dir();
}

/* The writer refuses what would not read back as written. */
static void keys_that_would_not_read_back_are_refused(void)
{
	struct rn_error err = { 0 };
	_cleanup_cni_attachment_ struct rn_cni_attachment att = { 0 };
	_cleanup_cni_attachment_ struct rn_cni_attachment back = { 0 };

	make_dir();
	CHECK_INT(rn_cni_state_dir_init(dir, &err), 0);
	CHECK_INT(rn_cni_attachment_add_nccl(&att, "NCCL IB", "x", &err), 0);
	CHECK_INT(rn_cni_attachment_write(dir, "n:c:net1", &att, true, &err), -EINVAL);
	CHECK_STR(err.msg, "invalid state key 'nccl.NCCL IB'");
	CHECK_INT(rn_cni_attachment_read(dir, "n:c:net1", &back, &err),
		  -ENOENT); /* nothing written */
	remove_dir();
}

static void list_shows_state_files_only(void)
{
	struct rn_error err = { 0 };
	struct rn_cni_attachment att = { 0 };
	char **names = NULL;
	size_t n = 0;

	make_dir();
	CHECK_INT(rn_cni_state_dir_init(dir, &err), 0);
	CHECK_INT(rn_cni_attachment_write(dir, "b:c2:net1", &att, true, &err), 0);
	CHECK_INT(rn_cni_attachment_write(dir, "a:c1:net1", &att, true, &err), 0);
	CHECK_INT(rn_cni_state_list(dir, &names, &n, &err), 0);
	CHECK_INT(n, 2); /* not locks/, not temporary files */
	if (n == 2) {
		CHECK_STR(names[0], "a:c1:net1");
		CHECK_STR(names[1], "b:c2:net1");
	}
	rn_cni_state_names_free(names, n);
	CHECK_INT(rn_cni_state_remove(dir, "a:c1:net1", &err), 0);
	CHECK_INT(rn_cni_state_remove(dir, "a:c1:net1", &err), 0); /* twice is fine */
	CHECK_INT(rn_cni_state_list(dir, &names, &n, &err), 0);
	CHECK_INT(n, 1);
	rn_cni_state_names_free(names, n);
	remove_dir();
}

static void owners_are_found_by_device_mac_and_selection(void)
{
	struct rn_error err = { 0 };
	_cleanup_cni_attachment_ struct rn_cni_attachment att = { 0 };
	_cleanup_cni_attachment_ struct rn_cni_attachment owner = { 0 };
	struct rn_attach_plan other = { 0 };
	struct rn_attach_select sel = { 0 };
	char name[256];

	make_dir();
	CHECK_INT(rn_cni_state_dir_init(dir, &err), 0);
	att.plan = sample_plan();
	snprintf(att.pod_name, sizeof(att.pod_name), "gpu-pod0");
	CHECK_INT(rn_cni_attachment_write(dir, "n:c1:net1", &att, true, &err), 0);

	other.n_rdma = 1;
	snprintf(other.rdma[0], sizeof(other.rdma[0]), "mlx5_1");
	CHECK_INT(rn_attach_find_owner(dir, "n:c2:net1", &other, NULL, name, sizeof(name), &owner,
				       &err),
		  1);
	CHECK_STR(name, "n:c1:net1");
	CHECK_STR(owner.pod_name, "gpu-pod0");
	/* its own state file is not another owner */
	CHECK_INT(rn_attach_find_owner(dir, "n:c1:net1", &other, NULL, NULL, 0, NULL, &err), 0);
	sel.netdev = "ens1f0";
	CHECK_INT(rn_attach_find_owner(dir, "x", NULL, &sel, NULL, 0, NULL, &err), 1);
	sel.netdev = NULL;
	sel.hwaddr = "B4:96:91:EC:A4:59";
	CHECK_INT(rn_attach_find_owner(dir, "x", NULL, &sel, NULL, 0, NULL, &err), 1);
	sel.hwaddr = NULL;
	sel.bus_id = "0000:3b:00.0";
	CHECK_INT(rn_attach_find_owner(dir, "x", NULL, &sel, NULL, 0, NULL, &err), 1);
	sel.bus_id = "0000:3b:00.1";
	CHECK_INT(rn_attach_find_owner(dir, "x", NULL, &sel, NULL, 0, NULL, &err), 0);
	/* damaged devices still claim what they name: another pod may hold them */
	put_file("n:c1:net1", "rdma=1\nrdma.0.name=mlx5_1\nnetdevs=1\nnetdev.0.name=../x\n");
	CHECK_INT(rn_attach_find_owner(dir, "x", &other, NULL, NULL, 0, NULL, &err), 1);
	/* a state file that cannot be read may be the owner: an error naming it, not a skip */
	snprintf(name, sizeof(name), "truncate -s 300K '%s/n:c9:net1'", dir); /* over the limit */
	CHECK_INT(system(name), 0);
	CHECK(rn_attach_find_owner(dir, "x", NULL, &sel, NULL, 0, NULL, &err) < 0);
	CHECK(strstr(err.msg, "cannot tell whether another pod holds the device") != NULL);
	CHECK(strstr(err.msg, "n:c9:net1") != NULL);
	remove_dir();
}

/* A DEL running beside the owner search: its file is listed, then gone when read. */
static bool list_a_vanished_file;

int __real_rn_cni_state_list(const char *state_dir, char ***ret_names, size_t *ret_n,
			     struct rn_error *err);
int __wrap_rn_cni_state_list(const char *state_dir, char ***ret_names, size_t *ret_n,
			     struct rn_error *err);
int __wrap_rn_cni_state_list(const char *state_dir, char ***ret_names, size_t *ret_n,
			     struct rn_error *err)
{
	char **names;
	int r = __real_rn_cni_state_list(state_dir, ret_names, ret_n, err);

	if (r < 0 || !list_a_vanished_file)
		return r;
	names = realloc(*ret_names, (*ret_n + 1) * sizeof(*names));
	if (!names)
		return -ENOMEM;
	names[*ret_n] = strdup("zz:gone:net1"); /* sorted last: the loop ends on it */
	if (!names[*ret_n]) {
		*ret_names = names;
		return -ENOMEM;
	}
	*ret_names = names;
	(*ret_n)++;
	return 0;
}

static void a_file_removed_during_the_owner_search_is_passed_over(void)
{
	struct rn_error err = { 0 };
	_cleanup_cni_attachment_ struct rn_cni_attachment att = { 0 };
	struct rn_attach_plan other = { 0 };

	make_dir();
	CHECK_INT(rn_cni_state_dir_init(dir, &err), 0);
	att.plan = sample_plan();
	CHECK_INT(rn_cni_attachment_write(dir, "n:c1:net1", &att, true, &err), 0);
	other.n_rdma = 1;
	snprintf(other.rdma[0], sizeof(other.rdma[0]), "mlx5_9"); /* nobody's */
	list_a_vanished_file = true;
	CHECK_INT(rn_attach_find_owner(dir, "x", &other, NULL, NULL, 0, NULL, &err), 0);
	snprintf(other.rdma[0], sizeof(other.rdma[0]), "mlx5_1"); /* n:c1:net1's */
	CHECK_INT(rn_attach_find_owner(dir, "x", &other, NULL, NULL, 0, NULL, &err), 1);
	list_a_vanished_file = false;
	remove_dir();
}

static void a_held_device_lock_times_out_with_a_clear_error(void)
{
	struct rn_error err = { 0 };
	struct rn_attach_plan p = sample_plan(), q = { 0 };
	int fds[2 * RN_ATTACH_MAX], fd2 = -1;
	size_t n = 0;

	make_dir();
	CHECK_INT(rn_cni_state_dir_init(dir, &err), 0);
	CHECK_INT(rn_attach_lock(dir, &p, 1000, fds, &n, &err), 0);
	CHECK_INT(n, 4); /* 2 RDMA devices, 2 MACs */
	CHECK_INT(rn_cni_lock(dir, "rdma:mlx5_0", "device rdma:mlx5_0", 50, &fd2, &err), -EAGAIN);
	CHECK_CONTAINS(err.msg, "device rdma:mlx5_0 is busy");
	CHECK_INT(fd2, -1);
	q.n_rdma = 1;
	snprintf(q.rdma[0], sizeof(q.rdma[0]), "mlx5_1");
	CHECK(rn_attach_locks_cover(&p, &q));
	snprintf(q.rdma[0], sizeof(q.rdma[0]), "mlx5_9");
	CHECK(!rn_attach_locks_cover(&p, &q));
	rn_attach_unlock(fds, n);
	CHECK_INT(rn_cni_lock(dir, "rdma:mlx5_0", "device rdma:mlx5_0", 50, &fd2, &err), 0);
	close(fd2);
	remove_dir();
}

/* A file of an older boot claims nothing: the reboot undid its ADD. */
static void a_file_of_an_older_boot_claims_no_device(void)
{
	struct rn_error err = { 0 };
	_cleanup_cni_attachment_ struct rn_cni_attachment att = { 0 };
	_cleanup_cni_attachment_ struct rn_cni_attachment back = { 0 };
	struct rn_attach_select sel = { .netdev = "ens1f0" };
	char boot[64];

	CHECK_INT(rn_kernel_boot_id(boot, sizeof(boot)), 0);
	CHECK_INT(strlen(boot), 36);
	make_dir();
	CHECK_INT(rn_cni_state_dir_init(dir, &err), 0);
	att.plan = sample_plan();
	/* none recorded (a file from before boot_id): this boot's, it claims */
	CHECK(!rn_cni_attachment_older_boot(&att, boot));
	CHECK_INT(rn_cni_attachment_write(dir, "n:c1:net1", &att, true, &err), 0);
	CHECK_INT(rn_attach_find_owner(dir, "x", NULL, &sel, NULL, 0, NULL, &err), 1);
	/* this boot's: it claims */
	snprintf(att.boot_id, sizeof(att.boot_id), "%s", boot);
	CHECK(!rn_cni_attachment_older_boot(&att, boot));
	CHECK_INT(rn_cni_attachment_write(dir, "n:c1:net1", &att, true, &err), 0);
	CHECK_INT(rn_attach_find_owner(dir, "x", NULL, &sel, NULL, 0, NULL, &err), 1);
	/* another boot's: it claims nothing */
	snprintf(att.boot_id, sizeof(att.boot_id), "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0");
	CHECK(rn_cni_attachment_older_boot(&att, boot));
	CHECK(!rn_cni_attachment_older_boot(&att, "")); /* this boot's unknown: it may be */
	CHECK_INT(rn_cni_attachment_write(dir, "n:c1:net1", &att, true, &err), 0);
	CHECK_INT(rn_attach_find_owner(dir, "x", &att.plan, &sel, NULL, 0, NULL, &err), 0);
	/* removed without the fsync, as any removal: gone */
	CHECK_INT(rn_cni_state_remove_nosync(dir, "n:c1:net1", &err), 0);
	CHECK_INT(rn_cni_attachment_read(dir, "n:c1:net1", &back, &err), -ENOENT);
	remove_dir();
}

RN_TEST_MAIN(T(names_follow_the_cni_rules), T(long_names_are_hashed_and_stay_distinct),
	     T(the_writer_writes_the_bytes_rdma_netns_has_always_written),
	     T(values_round_trip_with_escapes_and_atomic_writes),
	     T(unknown_keys_are_kept_and_comments_skipped),
	     T(damaged_files_are_refused_with_the_file_and_the_key),
	     T(keys_that_would_not_read_back_are_refused), T(list_shows_state_files_only),
	     T(a_world_writable_state_dir_is_refused),
	     T(owners_are_found_by_device_mac_and_selection),
	     T(a_file_of_an_older_boot_claims_no_device),
	     T(a_file_removed_during_the_owner_search_is_passed_over),
	     T(a_held_device_lock_times_out_with_a_clear_error))
