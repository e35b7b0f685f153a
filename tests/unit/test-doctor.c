// SPDX-License-Identifier: Apache-2.0
/*
 * `rdmans doctor`'s checklist on facts read from fake trees: the IIJ E810 walkthrough's
 * irdma0 inside a pod (netdev net1, 10.100.100.1 at RoCE v2 GID index 1),
 * a fake /proc/PID (limits, status, environ, its root with /dev/infiniband,
 * /etc/nccl.conf, /etc/passwd), and the resolver of `rdmans env`.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "fakesys.h"
#include "rdmans/cleanup.h"
#include "rdmans/doctor.h"
#include "rdmans/doctor_checks.h"
#include "rdmans/doctor_process.h"
#include "rdmans/sysfs_pci.h"
#include "test.h"

#define PID 4242

struct fixture {
	char *sys;
	char *proc;
	struct rn_doctor_facts f;
	struct rn_doctor_report r;
};

static void fixture_done(struct fixture *x)
{
	rn_doctor_report_free(&x->r);
	rn_doctor_facts_free(&x->f);
	rn_sysfs_set_root(NULL);
	fakesys_free(x->sys);
	fakesys_free(x->proc);
}

#define _cleanup_fixture_ _cleanup_(fixture_done)

/* Writes exactly len bytes to ROOT/rel (fakesys_write adds a newline; environ must not have one). */
static void write_raw(const char *root, const char *rel, const char *data, size_t len)
{
	char path[4096];
	int fd;

	fakesys_write(root, rel, "");
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0 || write(fd, data, len) != (ssize_t)len)
		abort();
	close(fd);
}

/* Replaces directory ROOT/rel by a regular file; 0 or -1. */
static int rename_into_file(const char *root, const char *rel)
{
	char path[4096], cmd[8300];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' && : > '%s'", path, path);
	return system(cmd) == 0 ? 0 : -1;
}

/* The IIJ E810 walkthrough's irdma0 as the pod sees it: its netdev renamed net1, 10.100.100.1 at index 1. */
static void add_pod_irdma(const char *root)
{
	fakesys_add_netdev_pci(root, "net1", "0000:2f:00.0");
	fakesys_add_rdma_aux(root, "irdma0", "0000:2f:00.0", "ice.roce.0", "b696:91ff:feec:a458",
			     "Ethernet");
	fakesys_add_gid(root, "irdma0", 1, 0, "fe80:0000:0000:0000:b696:91ff:feec:a458", "RoCE v2",
			"net1");
	fakesys_add_gid(root, "irdma0", 1, 1, "0000:0000:0000:0000:0000:ffff:0a64:6401", "RoCE v2",
			"net1");
	fakesys_add_empty_gids(root, "irdma0", 1, 2, 31);
	fakesys_write(root, "class/net/net1/mtu", "9000");
	fakesys_write(root, "class/net/net1/flags", "0x1003");
	fakesys_write(root, "class/net/net1/operstate", "up");
	fakesys_write(root, "class/infiniband_verbs/uverbs0/ibdev", "irdma0");
	fakesys_write(root, "class/infiniband_verbs/uverbs0/dev", "231:192");
}

/* A healthy system in exclusive mode, the pod's sysfs read, its address known. */
static void setup(struct fixture *x)
{
	memset(x, 0, sizeof(*x));
	x->sys = fakesys_new();
	x->proc = fakesys_new();
	rn_sysfs_set_root(x->sys);
	add_pod_irdma(x->sys);
	x->f.mode = 1;
	x->f.boot_known = true;
	x->f.boot.mode = RN_BOOT_EXCLUSIVE;
	snprintf(x->f.boot.source, sizeof(x->f.boot.source), "/etc/modprobe.d/rdmans.conf");
	snprintf(x->f.target, sizeof(x->f.target), "netns 'pod1'");
}

static int gather(struct fixture *x)
{
	struct rn_error err = { 0 };
	int r = rn_doctor_facts_from_sysfs(&x->f, &err);

	if (r < 0) {
		printf("# facts: %s\n", err.msg);
		return r;
	}
	return rn_doctor_facts_add_addr(&x->f, "net1", "10.100.100.1/24", &err);
}

/* A process PID with memlock limit `memlock` ("unlimited" or bytes), CapEff caps, environ env. */
static void add_process(struct fixture *x, const char *memlock, const char *capeff, const char *env,
			size_t env_len)
{
	char text[1024];

	snprintf(text, sizeof(text),
		 "Limit                     Soft Limit           Hard Limit           Units\n"
		 "Max open files            1048576              1048576              files\n"
		 "Max locked memory         %-20s %-20s bytes\n"
		 "Max address space         unlimited            unlimited            bytes",
		 memlock, memlock);
	fakesys_write(x->proc, "4242/limits", text);
	snprintf(text, sizeof(text),
		 "Name:\ttorchrun\nUmask:\t0022\nState:\tS (sleeping)\nUid:\t0\t0\t0\t0\n"
		 "CapInh:\t0000000000000000\nCapPrm:\t%s\nCapEff:\t%s\n",
		 capeff, capeff);
	fakesys_write(x->proc, "4242/status", text);
	fakesys_write(x->proc, "4242/comm", "torchrun");
	write_raw(x->proc, "4242/environ", env, env_len);
	fakesys_write(x->proc, "4242/root/etc/passwd",
		      "root:x:0:0:root:/root:/bin/bash\nuser:x:1000:1000::/home/user:/bin/sh");
}

/* The uverbs node of irdma0 (231:192) in the process's root: a real one needs root. */
static bool add_uverbs_node(struct fixture *x, unsigned major, unsigned minor)
{
	char path[4096];

	fakesys_write(x->proc, "4242/root/dev/infiniband/.keep", "");
	snprintf(path, sizeof(path), "%s/4242/root/dev/infiniband/uverbs0", x->proc);
	if (mknod(path, S_IFCHR | 0600, makedev(major, minor)) == 0)
		return true;
	printf("# mknod %s: %s (character devices need root)\n", path, strerror(errno));
	return false;
}

static int process(struct fixture *x)
{
	struct rn_error err = { 0 };
	int r = rn_doctor_facts_process(&x->f, x->proc, PID, &err);

	if (r < 0)
		printf("# process: %s\n", err.msg);
	return r;
}

static int evaluate(struct fixture *x)
{
	struct rn_error err = { 0 };
	int r;

	rn_doctor_report_free(&x->r);
	r = rn_doctor_evaluate(&x->f, &x->r, &err);
	if (r < 0)
		printf("# evaluate: %s\n", err.msg);
	return r;
}

/* The first result of check `id` (for subject, when not NULL); a dummy FAIL-less SKIP when none. */
static const struct rn_doctor_result *result(const struct fixture *x, const char *id,
					     const char *subject)
{
	static struct rn_doctor_result none = { .id = "none", .message = "(no such result)" };

	for (size_t i = 0; i < x->r.n; i++)
		if (strcmp(x->r.v[i].id, id) == 0 &&
		    (!subject || strcmp(x->r.v[i].subject, subject) == 0))
			return &x->r.v[i];
	printf("# no result for %s %s\n", id, subject ? subject : "");
	return &none;
}

#define CHECK_STATUS(res, want)                                                                    \
	do {                                                                                       \
		const struct rn_doctor_result *_r = (res);                                         \
		if (_r->status != (want)) {                                                        \
			printf("# %s:%d: %s is %s, expected %s: %s\n", __FILE__, __LINE__, _r->id, \
			       rn_doctor_status_name(_r->status), rn_doctor_status_name(want),     \
			       _r->message);                                                       \
			rn_test_failed = 1;                                                        \
		}                                                                                  \
	} while (0)

/* ---- system and netns ---- */

/* A uverbs listing that fails is an error of the facts, never "no uverbs device". */
static void uverbs_that_cannot_be_listed_is_an_error(void)
{
	_cleanup_fixture_ struct fixture x;
	struct rn_error err = { 0 };

	setup(&x);
	/* class/infiniband_verbs a file: opendir() fails with ENOTDIR */
	CHECK_INT(rename_into_file(x.sys, "class/infiniband_verbs"), 0);
	CHECK(rn_doctor_facts_from_sysfs(&x.f, &err) < 0);
	CHECK_CONTAINS(err.msg, "cannot list");
}

static void healthy_pod_passes_every_netns_check(void)
{
	_cleanup_fixture_ struct fixture x;

	setup(&x);
	CHECK_INT(gather(&x), 0);
	CHECK_INT(evaluate(&x), 0);
	CHECK_STATUS(result(&x, "rdma-netlink", NULL), RN_DOCTOR_PASS);
	CHECK_STATUS(result(&x, "netns-mode", NULL), RN_DOCTOR_PASS);
	CHECK_STATUS(result(&x, "netns-mode-boot", NULL), RN_DOCTOR_PASS);
	CHECK_STATUS(result(&x, "devices", NULL), RN_DOCTOR_PASS);
	CHECK_CONTAINS(result(&x, "devices", NULL)->message, "irdma0 (Ethernet)");
	CHECK_STATUS(result(&x, "port-state", "irdma0/1"), RN_DOCTOR_PASS);
	CHECK_STATUS(result(&x, "netdev", "irdma0/1"), RN_DOCTOR_PASS);
	CHECK_STATUS(result(&x, "gid", "irdma0/1"), RN_DOCTOR_PASS);
	CHECK_CONTAINS(result(&x, "gid", "irdma0/1")->message, "10.100.100.1 at GID index 1");
	CHECK_STATUS(result(&x, "mtu", "irdma0/1"), RN_DOCTOR_PASS);
	/* without a process the process checks do not apply */
	CHECK_STATUS(result(&x, "memlock", NULL), RN_DOCTOR_SKIP);
	CHECK_CONTAINS(result(&x, "memlock", NULL)->message, "--pid");
	CHECK_INT(x.r.worst, RN_DOCTOR_PASS);
}

static void shared_mode_fails_with_the_fix(void)
{
	_cleanup_fixture_ struct fixture x;

	setup(&x);
	CHECK_INT(gather(&x), 0);
	x.f.mode = 0;
	x.f.boot.mode = RN_BOOT_DEFAULT;
	x.f.boot.source[0] = '\0';
	CHECK_INT(evaluate(&x), 0);
	CHECK_STATUS(result(&x, "netns-mode", NULL), RN_DOCTOR_FAIL);
	CHECK_CONTAINS(result(&x, "netns-mode", NULL)->fix, "--persist");
	CHECK_STATUS(result(&x, "netns-mode-boot", NULL), RN_DOCTOR_FAIL);
	CHECK_INT(x.r.worst, RN_DOCTOR_FAIL);
}

static void exclusive_now_but_not_at_boot_warns(void)
{
	_cleanup_fixture_ struct fixture x;
	struct rn_error err = { 0 };

	setup(&x);
	CHECK_INT(gather(&x), 0);
	/* a modprobe.d file that says shared, read as the system does */
	fakesys_write(x.proc, "etc/modprobe.d/ib.conf", "options ib_core netns_mode=1");
	CHECK_INT(rn_system_boot_config(x.proc, &x.f.boot, &err), 0);
	CHECK_INT(evaluate(&x), 0);
	CHECK_STATUS(result(&x, "netns-mode-boot", NULL), RN_DOCTOR_WARN);
	CHECK_CONTAINS(result(&x, "netns-mode-boot", NULL)->message, "/etc/modprobe.d/ib.conf");
	CHECK_CONTAINS(result(&x, "netns-mode-boot", NULL)->fix,
		       "rdmans system set netns exclusive --persist");
	CHECK_INT(x.r.worst, RN_DOCTOR_WARN);
}

static void shared_mode_with_exclusive_boot_says_reboot(void)
{
	_cleanup_fixture_ struct fixture x;

	setup(&x);
	CHECK_INT(gather(&x), 0);
	x.f.mode = 0;
	CHECK_INT(evaluate(&x), 0);
	CHECK_STATUS(result(&x, "netns-mode", NULL), RN_DOCTOR_FAIL);
	CHECK_CONTAINS(result(&x, "netns-mode", NULL)->fix, "reboot");
	CHECK_STATUS(result(&x, "netns-mode-boot", NULL), RN_DOCTOR_PASS);
}

static void no_rdma_netlink_fails_and_skips_the_mode(void)
{
	_cleanup_fixture_ struct fixture x;

	setup(&x);
	x.f.rdma_nl = -EPROTONOSUPPORT;
	snprintf(x.f.rdma_nl_msg, sizeof(x.f.rdma_nl_msg), "this kernel has no RDMA netlink");
	x.f.mode = -1;
	CHECK_INT(evaluate(&x), 0);
	CHECK_STATUS(result(&x, "rdma-netlink", NULL), RN_DOCTOR_FAIL);
	CHECK_CONTAINS(result(&x, "rdma-netlink", NULL)->fix, "modprobe ib_core");
	CHECK_STATUS(result(&x, "netns-mode", NULL), RN_DOCTOR_SKIP);
	CHECK_STATUS(result(&x, "devices", NULL), RN_DOCTOR_FAIL);
}

static void empty_pod_netns_fails_and_says_move(void)
{
	_cleanup_fixture_ struct fixture x;

	setup(&x);
	rn_sysfs_set_root(x.proc); /* a tree without RDMA devices */
	CHECK_INT(rn_doctor_facts_from_sysfs(&x.f, &(struct rn_error){ 0 }), 0);
	CHECK_INT(evaluate(&x), 0);
	CHECK_STATUS(result(&x, "devices", NULL), RN_DOCTOR_FAIL);
	CHECK_CONTAINS(result(&x, "devices", NULL)->message, "no RDMA device in netns 'pod1'");
	CHECK_CONTAINS(result(&x, "devices", NULL)->fix, "--with-netdev");
}

static void down_port_and_down_netdev_fail_with_ip_link_set_up(void)
{
	_cleanup_fixture_ struct fixture x;

	setup(&x);
	fakesys_write(x.sys, "class/infiniband/irdma0/ports/1/state", "1: DOWN");
	fakesys_write(x.sys, "class/infiniband/irdma0/ports/1/phys_state", "3: Disabled");
	fakesys_write(x.sys, "class/net/net1/flags", "0x1002");
	fakesys_write(x.sys, "class/net/net1/operstate", "down");
	CHECK_INT(gather(&x), 0);
	CHECK_INT(evaluate(&x), 0);
	CHECK_STATUS(result(&x, "port-state", "irdma0/1"), RN_DOCTOR_FAIL);
	CHECK_CONTAINS(result(&x, "port-state", "irdma0/1")->message, "DOWN");
	CHECK_CONTAINS(result(&x, "port-state", "irdma0/1")->fix, "ip link set net1 up");
	CHECK_STATUS(result(&x, "netdev", "irdma0/1"), RN_DOCTOR_FAIL);
	CHECK_CONTAINS(result(&x, "netdev", "irdma0/1")->message, "net1 is down");
}

static void netdev_up_without_carrier_fails(void)
{
	_cleanup_fixture_ struct fixture x;

	setup(&x);
	fakesys_write(x.sys, "class/net/net1/operstate", "lowerlayerdown");
	CHECK_INT(gather(&x), 0);
	CHECK_INT(evaluate(&x), 0);
	CHECK_STATUS(result(&x, "netdev", "irdma0/1"), RN_DOCTOR_FAIL);
	CHECK_CONTAINS(result(&x, "netdev", "irdma0/1")->message, "no carrier");
}

/* doctor's "up" is IFF_UP (flags), its "running" operstate: they are read apart */
static void netdev_set_down_fails_as_down_even_with_operstate_up(void)
{
	_cleanup_fixture_ struct fixture x;

	setup(&x);
	fakesys_write(x.sys, "class/net/net1/flags", "0x1002");
	fakesys_write(x.sys, "class/net/net1/operstate", "up");
	CHECK_INT(gather(&x), 0);
	CHECK(x.f.nports == 1 && x.f.ports[0].netdev.admin_up != 1 &&
	      x.f.ports[0].netdev.oper_up == 1);
	CHECK_INT(evaluate(&x), 0);
	CHECK_STATUS(result(&x, "netdev", "irdma0/1"), RN_DOCTOR_FAIL);
	CHECK_CONTAINS(result(&x, "netdev", "irdma0/1")->message, "net1 is down");
	CHECK_CONTAINS(result(&x, "netdev", "irdma0/1")->fix, "ip link set net1 up");
}

static void netdev_left_behind_fails_and_says_with_netdev(void)
{
	_cleanup_fixture_ struct fixture x;

	setup(&x);
	/* the GID table names ens192, but the pod has no such netdev */
	fakesys_add_rdma_pci(x.sys, "mlx5_0", "0000:3b:00.0", NULL, "Ethernet");
	fakesys_add_gid(x.sys, "mlx5_0", 1, 0, "fe80:0000:0000:0000:f820:20ff:fe28:c769",
			"IB/RoCE v1", "ens192");
	CHECK_INT(gather(&x), 0);
	CHECK_INT(evaluate(&x), 0);
	CHECK_STATUS(result(&x, "netdev", "mlx5_0/1"), RN_DOCTOR_FAIL);
	CHECK_CONTAINS(result(&x, "netdev", "mlx5_0/1")->message, "ens192 is not in netns 'pod1'");
	CHECK_CONTAINS(result(&x, "netdev", "mlx5_0/1")->fix, "rdmans move mlx5_0 TARGET "
							      "--with-netdev");
	/* irdma0 is still fine */
	CHECK_STATUS(result(&x, "netdev", "irdma0/1"), RN_DOCTOR_PASS);
}

static void address_without_gid_fails(void)
{
	_cleanup_fixture_ struct fixture x;

	setup(&x);
	CHECK_INT(gather(&x), 0);
	CHECK_INT(
		rn_doctor_facts_add_addr(&x.f, "net1", "10.100.100.9/24", &(struct rn_error){ 0 }),
		0);
	CHECK_INT(evaluate(&x), 0);
	CHECK_STATUS(result(&x, "gid", "irdma0/1"), RN_DOCTOR_FAIL);
	CHECK_CONTAINS(result(&x, "gid", "irdma0/1")->message, "no RoCE v2 GID for 10.100.100.9");
	CHECK_CONTAINS(result(&x, "gid", "irdma0/1")->message, "10.100.100.1 at GID index 1");
	CHECK_CONTAINS(result(&x, "gid", "irdma0/1")->fix, "rdmans gids irdma0");
}

/* The E810 in iWARP mode: no RoCE v2 GID to look for, and the check says why instead of failing. */
static void iwarp_port_skips_the_gid_check(void)
{
	_cleanup_fixture_ struct fixture x;

	setup(&x);
	fakesys_write(x.sys, "class/infiniband/irdma0/node_type", "4: RNIC");
	CHECK_INT(gather(&x), 0);
	CHECK_INT(
		rn_doctor_facts_add_addr(&x.f, "net1", "10.100.100.9/24", &(struct rn_error){ 0 }),
		0);
	CHECK_INT(evaluate(&x), 0);
	CHECK_STATUS(result(&x, "gid", "irdma0/1"), RN_DOCTOR_SKIP);
	CHECK_CONTAINS(result(&x, "gid", "irdma0/1")->message, "iWARP device");
	/* its traffic is TCP: no RoCE MTU to hold the netdev's against */
	CHECK_STATUS(result(&x, "mtu", "irdma0/1"), RN_DOCTOR_SKIP);
	CHECK_CONTAINS(result(&x, "mtu", "irdma0/1")->message, "TCP");
	CHECK_CONTAINS(result(&x, "devices", NULL)->message, "irdma0 (iWARP)");
}

static void full_gid_table_is_named_as_the_cause(void)
{
	_cleanup_fixture_ struct fixture x;

	memset(&x, 0, sizeof(x));
	x.sys = fakesys_new();
	x.proc = fakesys_new();
	rn_sysfs_set_root(x.sys);
	x.f.mode = 1;
	x.f.boot_known = true;
	x.f.boot.mode = RN_BOOT_EXCLUSIVE;
	/* a 4-slot table: fe80 (v1, v2) and 10.100.100.1 (v1, v2) fill it */
	fakesys_add_netdev_virtual(x.sys, "net1");
	fakesys_add_rdma_virtual(x.sys, "rxe0", "net1", NULL, "Ethernet");
	fakesys_add_gid(x.sys, "rxe0", 1, 0, "fe80:0000:0000:0000:b696:91ff:feec:a458",
			"IB/RoCE v1", "net1");
	fakesys_add_gid(x.sys, "rxe0", 1, 1, "fe80:0000:0000:0000:b696:91ff:feec:a458", "RoCE v2",
			"net1");
	fakesys_add_gid(x.sys, "rxe0", 1, 2, "0000:0000:0000:0000:0000:ffff:0a64:6401",
			"IB/RoCE v1", "net1");
	fakesys_add_gid(x.sys, "rxe0", 1, 3, "0000:0000:0000:0000:0000:ffff:0a64:6401", "RoCE v2",
			"net1");
	fakesys_write(x.sys, "class/net/net1/mtu", "1500");
	fakesys_write(x.sys, "class/net/net1/flags", "0x1003");
	fakesys_write(x.sys, "class/net/net1/operstate", "up");
	CHECK_INT(gather(&x), 0);
	CHECK_INT(
		rn_doctor_facts_add_addr(&x.f, "net1", "10.100.100.2/24", &(struct rn_error){ 0 }),
		0);
	CHECK_INT(evaluate(&x), 0);
	CHECK_STATUS(result(&x, "gid", "rxe0/1"), RN_DOCTOR_FAIL);
	CHECK_CONTAINS(result(&x, "gid", "rxe0/1")->message, "GID table is full (4 of 4 entries)");
	/* MTU 1500 limits RoCE to 1024 */
	CHECK_STATUS(result(&x, "mtu", "rxe0/1"), RN_DOCTOR_WARN);
	CHECK_CONTAINS(result(&x, "mtu", "rxe0/1")->message, "limits RoCE to MTU 1024");
}

static void netdev_without_address_fails(void)
{
	_cleanup_fixture_ struct fixture x;

	setup(&x);
	CHECK_INT(rn_doctor_facts_from_sysfs(&x.f, &(struct rn_error){ 0 }), 0);
	x.f.ports[0].addrs_known = true; /* read, and there were none */
	CHECK_INT(evaluate(&x), 0);
	CHECK_STATUS(result(&x, "gid", "irdma0/1"), RN_DOCTOR_FAIL);
	CHECK_CONTAINS(result(&x, "gid", "irdma0/1")->message, "net1 has no IP address");
}

static void active_mtu_checks(void)
{
	_cleanup_fixture_ struct fixture x;

	setup(&x);
	CHECK_INT(gather(&x), 0);
	x.f.ports[0].active_mtu = 1024;
	x.f.ports[0].max_mtu = 4096;
	x.f.ports[0].netdev.mtu = 1500;
	CHECK_INT(evaluate(&x), 0);
	CHECK_STATUS(result(&x, "mtu", "irdma0/1"), RN_DOCTOR_WARN);
	CHECK_CONTAINS(result(&x, "mtu", "irdma0/1")->message, "limited by netdev net1 MTU 1500");
	CHECK_CONTAINS(result(&x, "mtu", "irdma0/1")->fix, "4200");

	x.f.ports[0].netdev.mtu = 9000; /* the netdev allows 4096, the port stayed at 1024 */
	CHECK_INT(evaluate(&x), 0);
	CHECK_STATUS(result(&x, "mtu", "irdma0/1"), RN_DOCTOR_WARN);
	CHECK_CONTAINS(result(&x, "mtu", "irdma0/1")->message, "did not follow");

	x.f.ports[0].active_mtu = 4096;
	CHECK_INT(evaluate(&x), 0);
	CHECK_STATUS(result(&x, "mtu", "irdma0/1"), RN_DOCTOR_PASS);
}

/* ---- the process ---- */

#define ENV(s) s, sizeof(s) - 1

static void memlock_limits(void)
{
	static const struct {
		const char *limit, *capeff;
		enum rn_doctor_status want;
		const char *says;
	} cases[] = {
		{ "unlimited", "0000000000000000", RN_DOCTOR_PASS, "unlimited" },
		{ "8388608", "0000000000000000", RN_DOCTOR_FAIL, "RLIMIT_MEMLOCK 8 MiB" },
		{ "8388608", "0000000000004000", RN_DOCTOR_PASS, "CAP_IPC_LOCK" },
		{ "134217728", "0000000000000000", RN_DOCTOR_WARN, "128 MiB" },
		{ "65536", "000001ffffffbfff", RN_DOCTOR_FAIL, "64 KiB" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		_cleanup_fixture_ struct fixture x;

		setup(&x);
		CHECK_INT(gather(&x), 0);
		add_process(&x, cases[i].limit, cases[i].capeff, ENV("PATH=/bin\0"));
		CHECK_INT(process(&x), 0);
		CHECK_INT(evaluate(&x), 0);
		CHECK_STATUS(result(&x, "memlock", NULL), cases[i].want);
		CHECK_CONTAINS(result(&x, "memlock", NULL)->message, cases[i].says);
		CHECK_STR(result(&x, "memlock", NULL)->subject, "PID 4242 (torchrun)");
		if (cases[i].want == RN_DOCTOR_FAIL)
			CHECK_CONTAINS(result(&x, "memlock", NULL)->fix, "ulimit -l unlimited");
	}
}

static void device_nodes_in_the_process_root(void)
{
	_cleanup_fixture_ struct fixture x;

	setup(&x);
	CHECK_INT(gather(&x), 0);
	add_process(&x, "unlimited", "0", ENV("A=b\0"));
	/* no /dev/infiniband at all */
	CHECK_INT(process(&x), 0);
	CHECK_INT(evaluate(&x), 0);
	CHECK_STATUS(result(&x, "dev-nodes", NULL), RN_DOCTOR_FAIL);
	CHECK_CONTAINS(result(&x, "dev-nodes", NULL)->message, "/dev/infiniband does not exist");
	CHECK_CONTAINS(result(&x, "dev-nodes", NULL)->fix, "deviceNodes");

	/* a regular file where the node should be */
	rn_doctor_facts_free(&x.f);
	memset(&x.f, 0, sizeof(x.f));
	x.f.mode = 1;
	CHECK_INT(gather(&x), 0);
	fakesys_write(x.proc, "4242/root/dev/infiniband/uverbs0", "not a device");
	CHECK_INT(process(&x), 0);
	CHECK_INT(evaluate(&x), 0);
	CHECK_STATUS(result(&x, "dev-nodes", NULL), RN_DOCTOR_FAIL);
	CHECK_CONTAINS(result(&x, "dev-nodes", NULL)->message,
		       "/dev/infiniband/uverbs0 (231:192, irdma0) is not a character device");
}

static void device_node_numbers_must_match(void)
{
	_cleanup_fixture_ struct fixture x;

	setup(&x);
	CHECK_INT(gather(&x), 0);
	add_process(&x, "unlimited", "0", ENV("A=b\0"));
	if (!add_uverbs_node(&x, 231, 193)) {
		rn_test_skip_reason = "making a character device needs root";
		return;
	}
	CHECK_INT(process(&x), 0);
	CHECK_INT(evaluate(&x), 0);
	CHECK_STATUS(result(&x, "dev-nodes", NULL), RN_DOCTOR_FAIL);
	CHECK_CONTAINS(result(&x, "dev-nodes", NULL)->message, "is another device");
}

static void device_nodes_present_pass_and_rdma_cm_is_a_warning(void)
{
	_cleanup_fixture_ struct fixture x;
	char path[4096];

	setup(&x);
	CHECK_INT(gather(&x), 0);
	add_process(&x, "unlimited", "0", ENV("A=b\0"));
	if (!add_uverbs_node(&x, 231, 192)) {
		rn_test_skip_reason = "making a character device needs root";
		return;
	}
	CHECK_INT(process(&x), 0);
	CHECK_INT(evaluate(&x), 0);
	CHECK_STATUS(result(&x, "dev-nodes", NULL), RN_DOCTOR_WARN);
	CHECK_CONTAINS(result(&x, "dev-nodes", NULL)->message, "no /dev/infiniband/rdma_cm");

	snprintf(path, sizeof(path), "%s/4242/root/dev/infiniband/rdma_cm", x.proc);
	CHECK(mknod(path, S_IFCHR | 0600, makedev(10, 122)) == 0);
	rn_doctor_facts_free(&x.f);
	memset(&x.f, 0, sizeof(x.f));
	x.f.mode = 1;
	x.f.boot_known = true;
	x.f.boot.mode = RN_BOOT_EXCLUSIVE;
	CHECK_INT(gather(&x), 0);
	CHECK_INT(process(&x), 0);
	CHECK_INT(evaluate(&x), 0);
	CHECK_STATUS(result(&x, "dev-nodes", NULL), RN_DOCTOR_PASS);
	CHECK_CONTAINS(result(&x, "dev-nodes", NULL)->message, "uverbs0 (231:192, irdma0)");
}

static void a_vanished_process_is_an_error(void)
{
	_cleanup_fixture_ struct fixture x;
	struct rn_error err = { 0 };

	setup(&x);
	CHECK_INT(rn_doctor_facts_process(&x.f, x.proc, 999999, &err), -ESRCH);
	CHECK_CONTAINS(err.msg, "no process with PID 999999");
}

/* ---- NCCL ---- */

static void nccl(struct fixture *x, const char *env, size_t len)
{
	setup(x);
	CHECK_INT(gather(x), 0);
	add_process(x, "unlimited", "0", env, len);
	CHECK_INT(process(x), 0);
	CHECK_INT(evaluate(x), 0);
}

static void wrong_gid_index_in_the_environment_fails(void)
{
	_cleanup_fixture_ struct fixture x;

	nccl(&x, ENV("NCCL_IB_HCA=irdma0\0NCCL_IB_GID_INDEX=3\0NCCL_SOCKET_IFNAME=net1\0"));
	CHECK_STATUS(result(&x, "nccl-gid-index", NULL), RN_DOCTOR_FAIL);
	CHECK_CONTAINS(result(&x, "nccl-gid-index", NULL)->message,
		       "NCCL_IB_GID_INDEX=3 (environment) is wrong: on irdma0/1 index 3 is empty, "
		       "the RoCE v2 GID of 10.100.100.1/24 is index 1");
	CHECK_CONTAINS(result(&x, "nccl-gid-index", NULL)->fix, "NCCL_IB_GID_INDEX=1");
	CHECK_STATUS(result(&x, "nccl-hca", NULL), RN_DOCTOR_PASS);
	CHECK_STATUS(result(&x, "nccl-socket-ifname", NULL), RN_DOCTOR_PASS);
	CHECK_INT(x.r.worst, RN_DOCTOR_FAIL);
}

static void gid_index_of_the_link_local_gid_is_wrong_too(void)
{
	_cleanup_fixture_ struct fixture x;

	nccl(&x, ENV("NCCL_IB_GID_INDEX=0\0"));
	CHECK_STATUS(result(&x, "nccl-gid-index", NULL), RN_DOCTOR_FAIL);
	CHECK_CONTAINS(result(&x, "nccl-gid-index", NULL)->message,
		       "index 0 holds RoCE v2 fe80:0000:0000:0000:b696:91ff:feec:a458 of net1");
}

static void right_gid_index_passes(void)
{
	_cleanup_fixture_ struct fixture x;

	nccl(&x, ENV("NCCL_IB_GID_INDEX=1\0NCCL_IB_HCA==irdma0:1\0"));
	CHECK_STATUS(result(&x, "nccl-gid-index", NULL), RN_DOCTOR_PASS);
	CHECK_STATUS(result(&x, "nccl-hca", NULL), RN_DOCTOR_PASS);
	CHECK_CONTAINS(result(&x, "nccl-hca", NULL)->message, "selects irdma0:1");
	CHECK_STATUS(result(&x, "nccl-net", NULL), RN_DOCTOR_PASS);
	CHECK_STATUS(result(&x, "nccl-socket-ifname", NULL), RN_DOCTOR_PASS);
}

static void unset_gid_index_warns_with_the_value(void)
{
	_cleanup_fixture_ struct fixture x;

	nccl(&x, ENV("PATH=/bin\0"));
	CHECK_STATUS(result(&x, "nccl-gid-index", NULL), RN_DOCTOR_WARN);
	CHECK_CONTAINS(result(&x, "nccl-gid-index", NULL)->fix, "NCCL_IB_GID_INDEX=1");
}

static void gid_index_that_is_not_a_number_fails(void)
{
	_cleanup_fixture_ struct fixture x;

	/* a CRLF nccl.conf leaves "1\r": NCCL's strtoll rejects it and uses its default */
	nccl(&x, ENV("NCCL_IB_GID_INDEX=1\r\0"));
	CHECK_STATUS(result(&x, "nccl-gid-index", NULL), RN_DOCTOR_FAIL);
	CHECK_CONTAINS(result(&x, "nccl-gid-index", NULL)->message, "is not a number");
}

static void hca_that_matches_nothing_here_fails(void)
{
	static const char *const values[] = { "mlx5", "^irdma", "=irdma", "irdma0:2" };

	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		_cleanup_fixture_ struct fixture x;
		char env[128];
		int n = snprintf(env, sizeof(env), "NCCL_IB_HCA=%s", values[i]);

		nccl(&x, env, (size_t)n + 1);
		CHECK_STATUS(result(&x, "nccl-hca", NULL), RN_DOCTOR_FAIL);
		CHECK_CONTAINS(result(&x, "nccl-hca", NULL)->message, "selects no RDMA port");
		CHECK_CONTAINS(result(&x, "nccl-hca", NULL)->fix, "NCCL_IB_HCA=");
	}
}

static void socket_ifname_must_match_a_netdev(void)
{
	_cleanup_fixture_ struct fixture x;

	nccl(&x, ENV("NCCL_SOCKET_IFNAME=eth\0"));
	CHECK_STATUS(result(&x, "nccl-socket-ifname", NULL), RN_DOCTOR_FAIL);
	CHECK_CONTAINS(result(&x, "nccl-socket-ifname", NULL)->message, "matches no netdev");
}

static void ib_disabled_fails(void)
{
	_cleanup_fixture_ struct fixture x;

	nccl(&x, ENV("NCCL_IB_DISABLE=1\0"));
	CHECK_STATUS(result(&x, "nccl-net", NULL), RN_DOCTOR_FAIL);
	CHECK_CONTAINS(result(&x, "nccl-net", NULL)->message, "NCCL will not use RDMA");
}

static void etc_nccl_conf_is_read_and_the_environment_wins(void)
{
	_cleanup_fixture_ struct fixture x;

	setup(&x);
	CHECK_INT(gather(&x), 0);
	add_process(&x, "unlimited", "0", ENV("NCCL_IB_HCA=irdma0\0"));
	fakesys_write(x.proc, "4242/root/etc/nccl.conf",
		      "# rdmans wrote this\n#NCCL_IB_GID_INDEX=9\nNCCL_IB_GID_INDEX=7\n"
		      "NCCL_IB_HCA=mlx5\nNCCL_IB_GID_INDEX=1\nNCCL_SOCKET_IFNAME=net1 ");
	CHECK_INT(process(&x), 0);
	CHECK_INT(evaluate(&x), 0);
	/* the first line of a file wins; the environment wins over files */
	CHECK_STATUS(result(&x, "nccl-gid-index", NULL), RN_DOCTOR_FAIL);
	CHECK_CONTAINS(result(&x, "nccl-gid-index", NULL)->message,
		       "NCCL_IB_GID_INDEX=7 (/etc/nccl.conf)");
	CHECK_STATUS(result(&x, "nccl-hca", NULL), RN_DOCTOR_PASS);
	CHECK_CONTAINS(result(&x, "nccl-hca", NULL)->message, "(environment)");
	/* nothing is trimmed, as NCCL trims nothing: "net1 " names no netdev */
	CHECK_STATUS(result(&x, "nccl-socket-ifname", NULL), RN_DOCTOR_FAIL);
	CHECK_STR(x.f.proc.nccl.conf_files[1], "/etc/nccl.conf");
}

static void user_nccl_conf_comes_before_etc(void)
{
	_cleanup_fixture_ struct fixture x;

	setup(&x);
	CHECK_INT(gather(&x), 0);
	add_process(&x, "unlimited", "0", ENV("HOME=/nowhere\0"));
	/* uid 0's home is /root in the image's /etc/passwd (NCCL asks getpwuid, not $HOME) */
	fakesys_write(x.proc, "4242/root/root/.nccl.conf", "NCCL_IB_GID_INDEX=1");
	fakesys_write(x.proc, "4242/root/etc/nccl.conf", "NCCL_IB_GID_INDEX=3");
	CHECK_INT(process(&x), 0);
	CHECK_INT(evaluate(&x), 0);
	CHECK_STATUS(result(&x, "nccl-gid-index", NULL), RN_DOCTOR_PASS);
	CHECK_CONTAINS(result(&x, "nccl-gid-index", NULL)->message, "(/root/.nccl.conf)");
}

static void nccl_conf_file_variable_replaces_the_user_file(void)
{
	_cleanup_fixture_ struct fixture x;

	setup(&x);
	CHECK_INT(gather(&x), 0);
	add_process(&x, "unlimited", "0", ENV("NCCL_CONF_FILE=/opt/job/nccl.conf\0"));
	fakesys_write(x.proc, "4242/root/root/.nccl.conf", "NCCL_IB_GID_INDEX=1");
	fakesys_write(x.proc, "4242/root/opt/job/nccl.conf", "NCCL_IB_GID_INDEX=2");
	CHECK_INT(process(&x), 0);
	CHECK_INT(evaluate(&x), 0);
	CHECK_STATUS(result(&x, "nccl-gid-index", NULL), RN_DOCTOR_FAIL);
	CHECK_CONTAINS(result(&x, "nccl-gid-index", NULL)->message, "(/opt/job/nccl.conf)");
}

static void conf_symlinks_stay_inside_the_container(void)
{
	_cleanup_fixture_ struct fixture x;
	char link[4096];

	setup(&x);
	CHECK_INT(gather(&x), 0);
	add_process(&x, "unlimited", "0", ENV("A=b\0"));
	/* an image's /etc/nccl.conf -> /etc/real.conf means ITS /etc/real.conf, not the host's */
	fakesys_write(x.proc, "4242/root/etc/real.conf", "NCCL_IB_GID_INDEX=1");
	snprintf(link, sizeof(link), "%s/4242/root/etc/nccl.conf", x.proc);
	CHECK(symlink("/etc/real.conf", link) == 0);
	CHECK_INT(process(&x), 0);
	CHECK_INT(evaluate(&x), 0);
	CHECK_STATUS(result(&x, "nccl-gid-index", NULL), RN_DOCTOR_PASS);
}

/* ---- GPUs: the nearest RDMA device, GPUDirect RDMA ---- */

#define SOCKET0 "pci0000:16/0000:16:02.0/0000:17:00.0"
#define SOCKET1 "pci0000:ae/0000:ae:02.0/0000:af:00.0"

/*
 * Two GPUs, one per socket, each under a PCIe switch (PEX: upstream port
 * 17:00.0 / af:00.0); the pod's irdma0 (2f:00.0) under GPU0's switch; a
 * Mellanox function (b2:00.0) under GPU1's switch that the pod does not have.
 */
static void add_gpu_topology(const char *root)
{
	fakesys_place_pci(root, "0000:19:00.0", SOCKET0 "/0000:18:08.0", 0x10de, 0x030200, 0);
	fakesys_place_pci(root, "0000:2f:00.0", SOCKET0 "/0000:18:10.0", 0x8086, 0x020000, 0);
	fakesys_place_pci(root, "0000:b1:00.0", SOCKET1 "/0000:b0:08.0", 0x10de, 0x030200, 1);
	fakesys_place_pci(root, "0000:b2:00.0", SOCKET1 "/0000:b0:10.0", 0x15b3, 0x020700, 1);
}

static void gdr(struct fixture *x, const char *driver, const char *kernel, bool peermem)
{
	if (driver) {
		/* the version is the driver line's last word */
		fakesys_write(x->sys, "module/nvidia/version", strrchr(driver, ' ') + 1);
		fakesys_write(x->proc, "driver/nvidia/version", driver);
	}
	if (peermem)
		fakesys_write(x->sys, "module/nvidia_peermem/refcnt", "0");
	fakesys_write(x->proc, "sys/kernel/osrelease", kernel);
	rn_doctor_facts_gdr(&x->f, x->proc);
}

static void pci_distance_by_path(void)
{
	struct rn_sysfs_pci_fn gpu = { .path = SOCKET0 "/0000:18:08.0/0000:19:00.0", .numa = 0 };
	struct rn_sysfs_pci_fn pix = { .path = SOCKET0 "/0000:18:08.0/0000:1a:00.0", .numa = 0 };
	struct rn_sysfs_pci_fn pxb = { .path = SOCKET0 "/0000:18:10.0/0000:2f:00.0", .numa = 0 };
	struct rn_sysfs_pci_fn port = { .path = "pci0000:16/0000:16:02.0/0000:17:00.1", .numa = 0 };
	struct rn_sysfs_pci_fn node = { .path = "pci0000:16/0000:16:03.0/0000:20:00.0", .numa = 0 };
	struct rn_sysfs_pci_fn bridge = { .path = "pci0000:3a/0000:3a:02.0/0000:3b:00.0",
					  .numa = 0 };
	struct rn_sysfs_pci_fn other = { .path = SOCKET1 "/0000:b0:10.0/0000:b2:00.0", .numa = 1 };
	struct rn_sysfs_pci_fn unknown = { .path = "pci0000:ae/0000:ae:03.0/0000:c0:00.0",
					   .numa = -1 };

	CHECK_INT(rn_sysfs_pci_distance(&gpu, &pix), RN_PCI_SAME_SWITCH);
	CHECK_INT(rn_sysfs_pci_distance(&gpu, &pxb), RN_PCI_SAME_SWITCH);
	CHECK_INT(rn_sysfs_pci_distance(&gpu, &port), RN_PCI_SAME_ROOT_PORT);
	CHECK_INT(rn_sysfs_pci_distance(&gpu, &node), RN_PCI_SAME_NODE);
	CHECK_INT(rn_sysfs_pci_distance(&gpu, &bridge), RN_PCI_SAME_NODE);
	CHECK_INT(rn_sysfs_pci_distance(&gpu, &other), RN_PCI_CROSS_CPU);
	CHECK_INT(rn_sysfs_pci_distance(&gpu, &unknown), RN_PCI_SAME_NODE);
	CHECK_STR(rn_pci_distance_name(RN_PCI_CROSS_CPU),
		  "across the CPU interconnect (another NUMA node)");
}

static void gpu_near_the_pods_hca_passes_and_the_other_warns(void)
{
	_cleanup_fixture_ struct fixture x;
	const struct rn_doctor_result *r;

	setup(&x);
	add_gpu_topology(x.sys);
	CHECK_INT(gather(&x), 0);
	CHECK_INT(x.f.ngpus, 2);
	REQUIRE(x.f.nhcas == 1);
	CHECK_STR(x.f.hcas[0].pci.bdf, "0000:2f:00.0");
	CHECK_INT(evaluate(&x), 0);
	r = result(&x, "gpu-nic", "GPU 0000:19:00.0");
	CHECK_STATUS(r, RN_DOCTOR_PASS);
	CHECK_CONTAINS(r->message, "nearest RDMA device in use: irdma0 (0000:2f:00.0), same PCIe "
				   "switch");
	r = result(&x, "gpu-nic", "GPU 0000:b1:00.0");
	CHECK_STATUS(r, RN_DOCTOR_WARN);
	CHECK_CONTAINS(r->message, "NCCL_IB_HCA==irdma0 (rdmans env) leave it without a near RDMA "
				   "device: the nearest in use, irdma0 (0000:2f:00.0), is across "
				   "the CPU interconnect");
	CHECK_CONTAINS(r->fix, "give the pod the RDMA device of PCI function 0000:b2:00.0 (same "
			       "PCIe switch to the GPU)");
}

/* The process names only a device far from GPU0: its own NCCL_IB_HCA is what counts. */
static void process_hca_list_decides_which_devices_count(void)
{
	_cleanup_fixture_ struct fixture x;
	const struct rn_doctor_result *r;

	setup(&x);
	add_gpu_topology(x.sys);
	CHECK_INT(gather(&x), 0);
	add_process(&x, "unlimited", "0000000000000000", ENV("NCCL_IB_HCA=^=irdma0\0"));
	CHECK_INT(process(&x), 0);
	CHECK_INT(evaluate(&x), 0);
	r = result(&x, "gpu-nic", "GPU 0000:19:00.0");
	CHECK_STATUS(r, RN_DOCTOR_WARN);
	CHECK_CONTAINS(r->message, "NCCL_IB_HCA=^=irdma0 (environment) name no RDMA device for it");
	CHECK_CONTAINS(r->fix, "add irdma0 (0000:2f:00.0, same PCIe switch) to NCCL_IB_HCA");
}

static void gpudirect_needs_peermem_or_dma_buf(void)
{
	static const struct {
		const char *driver, *kernel;
		bool peermem;
		enum rn_doctor_status want;
		const char *says;
	} cases[] = {
		{ "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05", "6.1.0-26-amd64",
		  true, RN_DOCTOR_PASS, "nvidia_peermem is loaded" },
		{ "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04",
		  "6.18.44-fc-v657-gpu", false, RN_DOCTOR_PASS,
		  "dma-buf: the NVIDIA open kernel module "
		  "580.159.04 on kernel 6.18.44" },
		{ "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05", "6.1.0-26-amd64",
		  false, RN_DOCTOR_WARN, "dma-buf needs the open kernel module" },
		{ "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.15",
		  "5.10.0-28-amd64", false, RN_DOCTOR_WARN, "kernel >= 5.12" },
		{ NULL, "6.1.0-26-amd64", false, RN_DOCTOR_WARN,
		  "the nvidia kernel module is not loaded" },
	};

	for (size_t i = 0; i < RN_ARRAY_SIZE(cases); i++) {
		_cleanup_fixture_ struct fixture x;
		const struct rn_doctor_result *r;

		setup(&x);
		add_gpu_topology(x.sys);
		CHECK_INT(gather(&x), 0);
		if (cases[i].driver)
			fakesys_write(x.sys, "module/nvidia/initstate", "live");
		gdr(&x, cases[i].driver, cases[i].kernel, cases[i].peermem);
		CHECK_INT(evaluate(&x), 0);
		r = result(&x, "gpudirect", NULL);
		CHECK_STATUS(r, cases[i].want);
		CHECK_CONTAINS(r->message, cases[i].says);
		if (cases[i].want == RN_DOCTOR_WARN && cases[i].driver)
			CHECK_CONTAINS(r->fix, "'modprobe nvidia_peermem'");
	}
}

static void no_gpu_skips_the_gpu_checks(void)
{
	_cleanup_fixture_ struct fixture x;

	setup(&x);
	CHECK_INT(gather(&x), 0);
	CHECK_INT(evaluate(&x), 0);
	CHECK_STATUS(result(&x, "gpu-nic", NULL), RN_DOCTOR_SKIP);
	CHECK_STATUS(result(&x, "gpudirect", NULL), RN_DOCTOR_SKIP);
}

/* The GPU machine's own sysfs (tests/unit/fixtures/h100-vm: one H100, no RDMA device). */
static void real_h100_machine(void)
{
	const char *dir = getenv("RDMANS_FIXTURES");
	struct rn_doctor_report rep = { 0 };
	struct rn_doctor_facts f = { 0 };
	struct rn_error err = { 0 };
	char sys[4096], proc[4096];
	bool gpu_seen = false, gdr_seen = false;

	REQUIRE(dir != NULL);
	snprintf(sys, sizeof(sys), "%s/h100-vm/sys", dir);
	snprintf(proc, sizeof(proc), "%s/h100-vm/proc", dir);
	rn_sysfs_set_root(sys);
	snprintf(f.target, sizeof(f.target), "the GPU machine");
	CHECK_INT(rn_doctor_facts_from_sysfs(&f, &err), 0);
	rn_doctor_facts_gdr(&f, proc);
	REQUIRE(f.ngpus == 1);
	CHECK_STR(f.gpus[0].bdf, "0000:00:06.0");
	CHECK_INT(f.gpus[0].pci_class, 0x030200);
	CHECK_INT(f.nhcas, 0);
	CHECK_INT(f.nnics, 1);
	CHECK(f.gdr.nvidia && f.gdr.open_module && !f.gdr.peermem);
	CHECK_INT(rn_doctor_evaluate(&f, &rep, &err), 0);
	for (size_t i = 0; i < rep.n; i++) {
		const struct rn_doctor_result *r = &rep.v[i];

		if (strcmp(r->id, "gpu-nic") == 0) {
			gpu_seen = true;
			CHECK_INT(r->status, RN_DOCTOR_WARN);
			CHECK_STR(r->subject, "GPU 0000:00:06.0");
			CHECK_CONTAINS(r->message, "no RDMA device on a PCI function in the GPU "
						   "machine");
			CHECK_CONTAINS(r->fix, "the nearest network function, 0000:00:03.0, is "
					       "same NUMA node");
		}
		if (strcmp(r->id, "gpudirect") == 0) {
			gdr_seen = true;
			CHECK_INT(r->status, RN_DOCTOR_PASS);
			CHECK_CONTAINS(r->message, "open kernel module 580.159.04 on kernel "
						   "6.18.44-fc-v657-gpu");
		}
	}
	CHECK(gpu_seen && gdr_seen);
	rn_doctor_report_free(&rep);
	rn_doctor_facts_free(&f);
	rn_sysfs_set_root(NULL);
}

static void an_unreadable_nccl_conf_is_a_warning(void)
{
	_cleanup_fixture_ struct fixture x;
	char dir[4096];

	setup(&x);
	CHECK_INT(gather(&x), 0);
	add_process(&x, "unlimited", "0", ENV("A=b\0"));
	/* NCCL skips an /etc/nccl.conf it cannot read: the doctor must not skip it silently */
	snprintf(dir, sizeof(dir), "%s/4242/root/etc/nccl.conf", x.proc);
	CHECK(mkdir(dir, 0755) == 0);
	CHECK_INT(process(&x), 0);
	CHECK_INT(evaluate(&x), 0);
	CHECK_STATUS(result(&x, "nccl-conf", NULL), RN_DOCTOR_WARN);
	CHECK_CONTAINS(result(&x, "nccl-conf", NULL)->message, "cannot read /etc/nccl.conf");
	CHECK_STR(x.f.proc.nccl.conf_files[1], "");
}

static void a_missing_nccl_conf_is_no_warning(void)
{
	_cleanup_fixture_ struct fixture x;

	setup(&x);
	CHECK_INT(gather(&x), 0);
	add_process(&x, "unlimited", "0", ENV("A=b\0"));
	CHECK_INT(process(&x), 0);
	CHECK_INT(evaluate(&x), 0);
	CHECK_STR(result(&x, "nccl-conf", NULL)->id, "none");
}

RN_TEST_MAIN(T(pci_distance_by_path), T(iwarp_port_skips_the_gid_check),
	     T(gpu_near_the_pods_hca_passes_and_the_other_warns),
	     T(process_hca_list_decides_which_devices_count), T(gpudirect_needs_peermem_or_dma_buf),
	     T(no_gpu_skips_the_gpu_checks), T(real_h100_machine),
	     T(healthy_pod_passes_every_netns_check), T(uverbs_that_cannot_be_listed_is_an_error),
	     T(shared_mode_fails_with_the_fix), T(exclusive_now_but_not_at_boot_warns),
	     T(shared_mode_with_exclusive_boot_says_reboot),
	     T(no_rdma_netlink_fails_and_skips_the_mode), T(empty_pod_netns_fails_and_says_move),
	     T(down_port_and_down_netdev_fail_with_ip_link_set_up),
	     T(netdev_up_without_carrier_fails),
	     T(netdev_set_down_fails_as_down_even_with_operstate_up),
	     T(netdev_left_behind_fails_and_says_with_netdev), T(address_without_gid_fails),
	     T(full_gid_table_is_named_as_the_cause), T(netdev_without_address_fails),
	     T(active_mtu_checks), T(memlock_limits), T(device_nodes_in_the_process_root),
	     T(device_node_numbers_must_match),
	     T(device_nodes_present_pass_and_rdma_cm_is_a_warning),
	     T(a_vanished_process_is_an_error), T(wrong_gid_index_in_the_environment_fails),
	     T(gid_index_of_the_link_local_gid_is_wrong_too), T(right_gid_index_passes),
	     T(unset_gid_index_warns_with_the_value), T(gid_index_that_is_not_a_number_fails),
	     T(hca_that_matches_nothing_here_fails), T(socket_ifname_must_match_a_netdev),
	     T(ib_disabled_fails), T(etc_nccl_conf_is_read_and_the_environment_wins),
	     T(user_nccl_conf_comes_before_etc), T(nccl_conf_file_variable_replaces_the_user_file),
	     T(conf_symlinks_stay_inside_the_container), T(an_unreadable_nccl_conf_is_a_warning),
	     T(a_missing_nccl_conf_is_no_warning))
