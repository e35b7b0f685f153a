// SPDX-License-Identifier: Apache-2.0
/*
 * The rdma-netns state files (format: rdmans/cni_state.h) and the plan kept
 * in them, in a scratch directory: names, escapes, atomic writes, listing,
 * ownership and per-device locks.
 */
#include <errno.h>
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
#include "rdmans/cni_state.h"
#include "rdmans/sysfs.h"
#include "rdmans/sysfs_kernel.h"
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

static void values_round_trip_with_escapes(void)
{
	struct rn_error err = { 0 };
	struct rn_cni_state st = { 0 }, back = { 0 };
	char path[128];
	struct stat sb;

	make_dir();
	CHECK_INT(rn_cni_state_dir_init(dir, &err), 0);
	CHECK_INT(stat(dir, &sb), 0);
	CHECK_INT(sb.st_mode & 0777, 0700);
	CHECK_INT(rn_cni_state_set(&st, "pod_name", "gpu-pod0", &err), 0);
	CHECK_INT(rn_cni_state_set(&st, "netdev.0.alias", "two\nlines \\ and = signs", &err), 0);
	CHECK_INT(rn_cni_state_setf(&st, &err, "rdma", "%d", 2), 0);
	CHECK_INT(rn_cni_state_set(&st, "pod_name", "gpu-pod1", &err), 0); /* replaces */
	CHECK_INT(rn_cni_state_set(&st, "bad key", "x", &err), -EINVAL);
	CHECK_INT(st.n, 3);
	CHECK_INT(rn_cni_state_write(dir, "net:c1:net1", &st, &err), 0);
	snprintf(path, sizeof(path), "%s/net:c1:net1", dir);
	CHECK_INT(stat(path, &sb), 0);
	CHECK_INT(sb.st_mode & 0777, 0600);
	CHECK_INT(rn_cni_state_read(dir, "net:c1:net1", &back, &err), 0);
	CHECK_STR(rn_cni_state_get(&back, "pod_name"), "gpu-pod1");
	CHECK_STR(rn_cni_state_get(&back, "netdev.0.alias"), "two\nlines \\ and = signs");
	CHECK_STR(rn_cni_state_geti(&back, "netdev", 0, "alias"), "two\nlines \\ and = signs");
	CHECK(rn_cni_state_get(&back, "absent") == NULL);
	{
		unsigned long v = 0;

		CHECK_INT(rn_cni_state_get_uint(&back, "rdma", &v), 0);
		CHECK_INT(v, 2);
		CHECK_INT(rn_cni_state_get_uint(&back, "pod_name", &v), -EINVAL);
		CHECK_INT(rn_cni_state_get_uint(&back, "absent", &v), -ENOENT);
	}
	rn_cni_state_free(&back);
	/* without the fsyncs: replaced whole, same mode, no temporary file left */
	CHECK_INT(rn_cni_state_set(&st, "phase", "ready", &err), 0);
	CHECK_INT(rn_cni_state_write_nosync(dir, "net:c1:net1", &st, &err), 0);
	CHECK_INT(stat(path, &sb), 0);
	CHECK_INT(sb.st_mode & 0777, 0600);
	CHECK_INT(rn_cni_state_read(dir, "net:c1:net1", &back, &err), 0);
	CHECK_STR(rn_cni_state_get(&back, "phase"), "ready");
	CHECK_STR(rn_cni_state_get(&back, "pod_name"), "gpu-pod1");
	CHECK_INT(back.n, 4);
	{
		char tmp[160];

		snprintf(tmp, sizeof(tmp), "%s/.net:c1:net1.%d.tmp", dir, (int)getpid());
		CHECK_INT(stat(tmp, &sb), -1);
	}
	rn_cni_state_free(&st);
	rn_cni_state_free(&back);
	CHECK_INT(rn_cni_state_read(dir, "net:c9:net1", &back, &err), -ENOENT);
	CHECK_INT(rn_cni_state_read(dir, "../etc", &back, &err), -EINVAL);
	remove_dir();
}

static void readers_skip_comments_and_unknown_lines(void)
{
	struct rn_error err = { 0 };
	struct rn_cni_state st = { 0 };
	char path[128];
	FILE *f;

	make_dir();
	CHECK_INT(rn_cni_state_dir_init(dir, &err), 0);
	snprintf(path, sizeof(path), "%s/n:c:i", dir);
	f = fopen(path, "w");
	CHECK(f != NULL);
	if (f) {
		fputs("# comment\nformat=1\nno equals sign\n=empty key\nfuture_key=kept\n", f);
		fclose(f);
	}
	CHECK_INT(rn_cni_state_read(dir, "n:c:i", &st, &err), 0);
	CHECK_INT(st.n, 2);
	CHECK_STR(rn_cni_state_get(&st, "future_key"), "kept");
	rn_cni_state_free(&st);
	remove_dir();
}

static void list_shows_state_files_only(void)
{
	struct rn_error err = { 0 };
	struct rn_cni_state st = { 0 };
	char **names = NULL;
	size_t n = 0;

	make_dir();
	CHECK_INT(rn_cni_state_dir_init(dir, &err), 0);
	CHECK_INT(rn_cni_state_set(&st, "format", "1", &err), 0);
	CHECK_INT(rn_cni_state_write(dir, "b:c2:net1", &st, &err), 0);
	CHECK_INT(rn_cni_state_write(dir, "a:c1:net1", &st, &err), 0);
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
	rn_cni_state_free(&st);
	remove_dir();
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

static void a_plan_survives_the_state_file(void)
{
	struct rn_error err = { 0 };
	struct rn_cni_state st = { 0 }, back = { 0 };
	struct rn_attach_plan p = sample_plan(), q;

	make_dir();
	CHECK_INT(rn_cni_state_dir_init(dir, &err), 0);
	CHECK_INT(rn_attach_plan_save(&p, &st, &err), 0);
	CHECK_INT(rn_cni_state_write(dir, "n:c:net1", &st, &err), 0);
	CHECK_INT(rn_cni_state_read(dir, "n:c:net1", &back, &err), 0);
	CHECK_INT(rn_attach_plan_load(&back, &q, &err), 0);
	CHECK(!q.chained);
	CHECK_INT(q.n_netdevs, 2);
	CHECK_STR(q.netdevs[0].name, "ens1f0");
	CHECK_STR(q.netdevs[0].pod_name, "net1");
	CHECK_STR(q.netdevs[0].alias, "uplink");
	CHECK_INT(q.netdevs[0].ifindex, 7);
	CHECK(q.netdevs[0].was_up);
	CHECK_STR(q.netdevs[1].kind, "veth");
	CHECK(!q.netdevs[1].was_up);
	CHECK_INT(q.n_rdma, 2);
	CHECK_STR(q.rdma[1], "mlx5_1");
	CHECK_STR(q.bus_id, "0000:3b:00.0");
	CHECK(q.rdma_kernel);
	CHECK(!q.netdevs[0].ipoib);
	rn_cni_state_free(&back);

	/* an IPoIB netdev keeps its port's GID: DEL finds the one the kernel makes anew by it */
	p.netdevs[1].ipoib = true;
	for (size_t k = 0; k < 16; k++)
		p.netdevs[1].ib_gid[k] = (uint8_t)(0xf0 + k);
	rn_cni_state_free(&st);
	CHECK_INT(rn_attach_plan_save(&p, &st, &err), 0);
	CHECK_STR(rn_cni_state_get(&st, "netdev.1.ib_gid"),
		  "f0f1:f2f3:f4f5:f6f7:f8f9:fafb:fcfd:feff");
	CHECK_INT(rn_attach_plan_load(&st, &q, &err), 0);
	CHECK(q.netdevs[1].ipoib && !q.netdevs[0].ipoib);
	CHECK(memcmp(q.netdevs[1].ib_gid, p.netdevs[1].ib_gid, 16) == 0);
	CHECK_INT(rn_cni_state_set(&st, "netdev.1.ib_gid", "f0f1::f2::f3", &err), 0);
	CHECK_INT(rn_attach_plan_load(&st, &q, &err), -EINVAL);
	CHECK_INT(rn_cni_state_set(&st, "netdev.1.ib_gid", "fe80::z", &err), 0);
	CHECK_INT(rn_attach_plan_load(&st, &q, &err), -EINVAL);
	p.netdevs[1].ipoib = false;
	rn_cni_state_free(&st);
	CHECK_INT(rn_attach_plan_save(&p, &st, &err), 0);

	/* a damaged file is an error, not a guess */
	CHECK_INT(rn_cni_state_set(&st, "rdma.1.name", "../mlx5_1", &err), 0);
	CHECK_INT(rn_attach_plan_load(&st, &q, &err), -EINVAL);
	CHECK_INT(rn_cni_state_set(&st, "rdma", "99", &err), 0);
	CHECK_INT(rn_attach_plan_load(&st, &q, &err), -EINVAL);
	rn_cni_state_free(&st);
	remove_dir();
}

static void owners_are_found_by_device_mac_and_selection(void)
{
	struct rn_error err = { 0 };
	struct rn_cni_state st = { 0 }, owner = { 0 };
	struct rn_attach_plan p = sample_plan(), other = { 0 };
	struct rn_attach_select sel = { 0 };
	char name[256];

	make_dir();
	CHECK_INT(rn_cni_state_dir_init(dir, &err), 0);
	CHECK_INT(rn_attach_plan_save(&p, &st, &err), 0);
	CHECK_INT(rn_cni_state_set(&st, "pod_name", "gpu-pod0", &err), 0);
	CHECK_INT(rn_cni_state_write(dir, "n:c1:net1", &st, &err), 0);

	other.n_rdma = 1;
	snprintf(other.rdma[0], sizeof(other.rdma[0]), "mlx5_1");
	CHECK_INT(rn_attach_find_owner(dir, "n:c2:net1", &other, NULL, name, sizeof(name), &owner,
				       &err),
		  1);
	CHECK_STR(name, "n:c1:net1");
	CHECK_STR(rn_cni_state_get(&owner, "pod_name"), "gpu-pod0");
	rn_cni_state_free(&owner);
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
	/* a state file that cannot be read may be the owner: an error naming it, not a skip */
	snprintf(name, sizeof(name), "truncate -s 300K '%s/n:c9:net1'", dir); /* over the limit */
	CHECK_INT(system(name), 0);
	CHECK(rn_attach_find_owner(dir, "x", NULL, &sel, NULL, 0, NULL, &err) < 0);
	CHECK(strstr(err.msg, "cannot tell whether another pod holds the device") != NULL);
	CHECK(strstr(err.msg, "n:c9:net1") != NULL);
	rn_cni_state_free(&st);
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
	struct rn_cni_state st = { 0 }, back = { 0 };
	struct rn_attach_plan p = sample_plan();
	struct rn_attach_select sel = { .netdev = "ens1f0" };
	char boot[64];

	CHECK_INT(rn_kernel_boot_id(boot, sizeof(boot)), 0);
	CHECK_INT(strlen(boot), 36);
	make_dir();
	CHECK_INT(rn_cni_state_dir_init(dir, &err), 0);
	CHECK_INT(rn_attach_plan_save(&p, &st, &err), 0);
	/* none recorded (a file from before boot_id): this boot's, it claims */
	CHECK(!rn_cni_state_older_boot(&st, boot));
	CHECK_INT(rn_cni_state_write(dir, "n:c1:net1", &st, &err), 0);
	CHECK_INT(rn_attach_find_owner(dir, "x", NULL, &sel, NULL, 0, NULL, &err), 1);
	/* this boot's: it claims */
	CHECK_INT(rn_cni_state_set(&st, "boot_id", boot, &err), 0);
	CHECK(!rn_cni_state_older_boot(&st, boot));
	CHECK_INT(rn_cni_state_write(dir, "n:c1:net1", &st, &err), 0);
	CHECK_INT(rn_attach_find_owner(dir, "x", NULL, &sel, NULL, 0, NULL, &err), 1);
	/* another boot's: it claims nothing */
	CHECK_INT(rn_cni_state_set(&st, "boot_id", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", &err),
		  0);
	CHECK(rn_cni_state_older_boot(&st, boot));
	CHECK(!rn_cni_state_older_boot(&st, "")); /* this boot's unknown: it may be */
	CHECK_INT(rn_cni_state_write(dir, "n:c1:net1", &st, &err), 0);
	CHECK_INT(rn_attach_find_owner(dir, "x", &p, &sel, NULL, 0, NULL, &err), 0);
	/* removed without the fsync, as any removal: gone */
	CHECK_INT(rn_cni_state_remove_nosync(dir, "n:c1:net1", &err), 0);
	CHECK_INT(rn_cni_state_read(dir, "n:c1:net1", &back, &err), -ENOENT);
	rn_cni_state_free(&st);
	remove_dir();
}

RN_TEST_MAIN(T(names_follow_the_cni_rules), T(long_names_are_hashed_and_stay_distinct),
	     T(values_round_trip_with_escapes), T(readers_skip_comments_and_unknown_lines),
	     T(list_shows_state_files_only), T(a_world_writable_state_dir_is_refused),
	     T(a_plan_survives_the_state_file), T(owners_are_found_by_device_mac_and_selection),
	     T(a_file_of_an_older_boot_claims_no_device),
	     T(a_held_device_lock_times_out_with_a_clear_error))
