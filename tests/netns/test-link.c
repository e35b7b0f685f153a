// SPDX-License-Identifier: Apache-2.0
/*
 * The link and netns modules against the host kernel: real namespaces and
 * veths (root). Each test builds its own namespaces and removes them.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../unit/test.h"
#include "rdmans/cleanup.h"
#include "rdmans/link.h"
#include "rdmans/netns.h"

static void sh(const char *cmd)
{
	int r = system(cmd);

	if (r != 0) {
		printf("# command failed (%d): %s\n", r, cmd);
		rn_test_failed = 1;
	}
}

static void sh_quiet(const char *cmd)
{
	char buf[512];

	snprintf(buf, sizeof(buf), "%s >/dev/null 2>&1", cmd);
	(void)!system(buf);
}

static void setup_pair(void)
{
	sh_quiet("ip netns del rnt-a");
	sh_quiet("ip netns del rnt-b");
	sh_quiet("ip link del rnt-veth0");
	sh("ip netns add rnt-a");
	sh("ip netns add rnt-b");
	sh("ip link add rnt-veth0 type veth peer name rnt-veth1");
}

static void teardown_pair(void)
{
	sh_quiet("ip link del rnt-veth0");
	sh_quiet("ip netns del rnt-a");
	sh_quiet("ip netns del rnt-b");
}

struct lookup_job {
	const char *name;
	struct rn_link link;
	int ret;
};

static int lookup_here(void *arg, struct rn_error *err)
{
	struct lookup_job *job = arg;

	job->ret = rn_link_by_name(job->name, &job->link, err);
	return job->ret;
}

static void test_open_target_forms(void)
{
	struct rn_error err = { 0 };
	char desc[256];
	_cleanup_close_ int by_name = -1, by_path = -1, by_host = -1, self = -1, by_pid = -1;

	setup_pair();
	by_name = rn_netns_open_target("rnt-a", desc, sizeof(desc), &err);
	CHECK(by_name >= 0);
	CHECK_STR(desc, "netns 'rnt-a'");
	by_path = rn_netns_open_target("/var/run/netns/rnt-a", NULL, 0, &err);
	CHECK(by_path >= 0);
	CHECK_INT(rn_netns_same(by_name, by_path, &err), 1);
	by_host = rn_netns_open_target("host", desc, sizeof(desc), &err);
	by_pid = rn_netns_open_target("1", NULL, 0, &err);
	/* PID 1 may be out of reach in a sandbox; "host" then stands for our own netns */
	if (by_pid < 0)
		by_pid = rn_netns_open_self(&err);
	self = rn_netns_open_self(&err);
	CHECK(by_host >= 0 && by_pid >= 0 && self >= 0);
	CHECK_INT(rn_netns_same(by_host, self, &err), 1);
	CHECK_INT(rn_netns_same(by_host, by_name, &err), 0);
	teardown_pair();
}

static void test_open_target_errors(void)
{
	struct rn_error err = { 0 };

	CHECK_INT(rn_netns_open_target("rnt-nosuch", NULL, 0, &err), -ENOENT);
	CHECK_CONTAINS(err.msg, "no network namespace named 'rnt-nosuch'");
	CHECK_INT(rn_netns_open_target("999999999", NULL, 0, &err), -ESRCH);
	CHECK_CONTAINS(err.msg, "no process with PID 999999999");
	CHECK_INT(rn_netns_open_target("/etc/hostname", NULL, 0, &err), -EMEDIUMTYPE);
	CHECK_CONTAINS(err.msg, "/etc/hostname is not a network namespace");
	CHECK_INT(rn_netns_open_target("/proc/self/ns/uts", NULL, 0, &err), -EMEDIUMTYPE);
	CHECK_CONTAINS(err.msg, "not a network namespace");
	CHECK_INT(rn_netns_open_target("..", NULL, 0, &err), -EINVAL);
	CHECK_CONTAINS(err.msg, "must not contain '..'");
	CHECK_INT(rn_netns_open_target("../x", NULL, 0, &err), -ENOENT);
	CHECK_INT(rn_netns_open_target("/nonexistent/ns", NULL, 0, &err), -ENOENT);
}

static void test_run_leaves_caller_in_place(void)
{
	struct rn_error err = { 0 };
	_cleanup_close_ int a = -1, before = -1, after = -1;
	struct lookup_job job = { .name = "rnt-veth1" };

	setup_pair();
	sh("ip link set rnt-veth1 netns rnt-a");
	a = rn_netns_open_name("rnt-a", &err);
	before = rn_netns_open_self(&err);
	CHECK_INT(rn_netns_run(a, lookup_here, &job, &err), 0);
	CHECK_STR(job.link.name, "rnt-veth1");
	after = rn_netns_open_self(&err);
	CHECK_INT(rn_netns_same(before, after, &err), 1);
	/* and the caller still does not see it */
	CHECK_INT(rn_link_by_name("rnt-veth1", &job.link, &err), -ENODEV);
	CHECK_CONTAINS(err.msg, "netdev rnt-veth1 not found");
	teardown_pair();
}

struct move_job {
	int ifindex;
	const char *name;
	const char *new_name;
	int nsfd;
};

static int bring_up_here(void *arg, struct rn_error *err)
{
	struct lookup_job *job = arg;

	return rn_link_set_up(job->link.ifindex, job->link.name, true, err);
}

static int move_here(void *arg, struct rn_error *err)
{
	struct move_job *job = arg;

	return rn_link_move(job->ifindex, job->name, job->nsfd, job->new_name, err);
}

static void test_move_and_rename_in_one_step(void)
{
	struct rn_error err = { 0 };
	_cleanup_close_ int a = -1, b = -1;
	struct rn_link l;
	struct lookup_job look = { 0 };

	setup_pair();
	a = rn_netns_open_name("rnt-a", &err);
	b = rn_netns_open_name("rnt-b", &err);
	CHECK_INT(rn_link_by_name("rnt-veth1", &l, &err), 0);
	CHECK_INT(rn_link_set_alias(l.ifindex, l.name, "rnt-veth1", &err), 0);
	CHECK_INT(rn_link_move(l.ifindex, l.name, a, "net1", &err), 0);
	CHECK_INT(rn_link_by_name("rnt-veth1", &l, &err), -ENODEV);
	look.name = "net1";
	CHECK_INT(rn_netns_run(a, lookup_here, &look, &err), 0);
	CHECK_STR(look.link.alias, "rnt-veth1");
	/* from a to b, keeping its name, then back home under the original one */
	{
		struct move_job mv = { look.link.ifindex, "net1", NULL, b };

		CHECK_INT(rn_netns_run(a, move_here, &mv, &err), 0);
	}
	CHECK_INT(rn_netns_run(a, lookup_here, &look, &err), -ENODEV);
	CHECK_INT(rn_netns_run(b, lookup_here, &look, &err), 0);
	{
		_cleanup_close_ int self = rn_netns_open_self(&err);
		struct move_job mv = { look.link.ifindex, "net1", "rnt-veth1", self };

		CHECK_INT(rn_netns_run(b, move_here, &mv, &err), 0);
	}
	CHECK_INT(rn_link_by_name("rnt-veth1", &l, &err), 0);
	teardown_pair();
}

static void test_move_name_clash_changes_nothing(void)
{
	struct rn_error err = { 0 };
	_cleanup_close_ int a = -1;
	struct rn_link l;

	setup_pair();
	sh("ip -n rnt-a link add net1 type veth peer name net1p");
	a = rn_netns_open_name("rnt-a", &err);
	CHECK_INT(rn_link_by_name("rnt-veth1", &l, &err), 0);
	CHECK_INT(rn_link_move(l.ifindex, l.name, a, "net1", &err), -EEXIST);
	CHECK_CONTAINS(err.msg, "already has a netdev named net1");
	/* still here, same name */
	CHECK_INT(rn_link_by_name("rnt-veth1", &l, &err), 0);
	teardown_pair();
}

struct move_to_job {
	const char *name;
	struct rn_link_move_to to;
	int nsfd;
	bool partial;
	int udp_port; /* hold this UDP port here first (fd in udp_fd) */
	int udp_fd;
};

static int move_to_here(void *arg, struct rn_error *err)
{
	struct move_to_job *job = arg;
	struct rn_link l;
	int r;

	r = rn_link_by_name(job->name, &l, err);
	if (r < 0)
		return r;
	return rn_link_move_to(l.ifindex, l.name, job->nsfd, &job->to, &job->partial, err);
}

static void test_move_to_sets_alias_and_up_in_the_move(void)
{
	struct rn_error err = { 0 };
	_cleanup_close_ int a = -1, self = -1;
	struct rn_link l;
	struct lookup_job look = { .name = "net1" };
	bool partial = true;

	setup_pair();
	a = rn_netns_open_name("rnt-a", &err);
	self = rn_netns_open_self(&err);
	CHECK_INT(rn_link_by_name("rnt-veth1", &l, &err), 0);
	CHECK(!l.up);
	{
		const struct rn_link_move_to to = { .name = "net1",
						    .alias = "rnt-veth1",
						    .up = true };

		CHECK_INT(rn_link_move_to(l.ifindex, l.name, a, &to, &partial, &err), 0);
		CHECK_STR(err.msg, "");
		CHECK(!partial);
	}
	CHECK_INT(rn_netns_run(a, lookup_here, &look, &err), 0);
	CHECK_STR(look.link.alias, "rnt-veth1");
	CHECK(look.link.up);
	/* home: its name back, the alias cleared, down as it was */
	{
		struct move_to_job mv = { .name = "net1",
					  .to = { .name = "rnt-veth1", .alias = "" },
					  .nsfd = self,
					  .partial = true };

		CHECK_INT(rn_netns_run(a, move_to_here, &mv, &err), 0);
		CHECK(!mv.partial);
	}
	CHECK_INT(rn_link_by_name("rnt-veth1", &l, &err), 0);
	CHECK_STR(l.alias, "");
	CHECK(!l.up);
	teardown_pair();
}

static int hold_udp_port_here(void *arg, struct rn_error *err)
{
	struct move_to_job *job = arg;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(job->udp_port) };

	job->udp_fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (job->udp_fd < 0 || bind(job->udp_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return rn_error_errno(err, errno, "test: cannot hold UDP port %d", job->udp_port);
	return 0;
}

/*
 * A kernel that moves and renames, then refuses the up state: a vxlan whose
 * UDP port is taken in its own netns cannot open. That is no error here
 * (partial): the caller brings it up itself and reports the kernel's reason.
 */
static void test_move_to_half_refused_is_partial(void)
{
	struct rn_error err = { 0 };
	_cleanup_close_ int a = -1, b = -1;
	struct move_to_job mv = { .name = "rnt-vx",
				  .to = { .name = "net1", .alias = "rnt-vx", .up = true },
				  .udp_port = 47891,
				  .udp_fd = -1 };
	struct lookup_job look = { .name = "net1" };

	setup_pair();
	sh("ip -n rnt-a link add rnt-vx type vxlan id 5 dstport 47891");
	a = rn_netns_open_name("rnt-a", &err);
	b = rn_netns_open_name("rnt-b", &err);
	mv.nsfd = b;
	CHECK_INT(rn_netns_run(a, hold_udp_port_here, &mv, &err), 0);
	CHECK_INT(rn_netns_run(a, move_to_here, &mv, &err), 0);
	CHECK_STR(err.msg, "");
	CHECK(mv.partial);
	CHECK_INT(rn_netns_run(b, lookup_here, &look, &err), 0);
	CHECK(!look.link.up);
	/* the caller's own try says why */
	CHECK(rn_netns_run(b, bring_up_here, &look, &err) < 0); /* libnl says EEXIST */
	CHECK_CONTAINS(err.msg, "cannot bring up netdev net1");
	/* without the port held, the same move is whole */
	close(mv.udp_fd);
	{
		struct move_to_job back = { .name = "net1",
					    .to = { .name = "rnt-vx", .up = true },
					    .nsfd = a,
					    .partial = true };

		CHECK_INT(rn_netns_run(b, move_to_here, &back, &err), 0);
		CHECK(!back.partial);
	}
	look.name = "rnt-vx";
	CHECK_INT(rn_netns_run(a, lookup_here, &look, &err), 0);
	CHECK(look.link.up);
	teardown_pair();
}

static void test_addresses_routes_up(void)
{
	struct rn_error err = { 0 };
	char cidrs[8][64];
	size_t n = 0;
	struct rn_link l;
	int def = -1;

	setup_pair();
	CHECK_INT(rn_link_by_name("rnt-veth0", &l, &err), 0);
	CHECK(!l.up);
	CHECK_INT(rn_link_set_up(l.ifindex, l.name, true, &err), 0);
	CHECK_INT(rn_link_by_name("rnt-veth0", &l, &err), 0);
	CHECK(l.up);
	CHECK_STR(l.kind, "veth");
	CHECK_INT(strlen(l.mac), 17);
	CHECK_INT(rn_link_addr_add(l.ifindex, l.name, "10.77.0.2/24", &err), 0);
	CHECK_INT(rn_link_addr_add(l.ifindex, l.name, "fd00:77::2/64", &err), 0);
	CHECK_INT(rn_link_addr_list(l.ifindex, AF_INET, cidrs, 8, &n, &err), 0);
	CHECK_INT(n, 1);
	CHECK_STR(cidrs[0], "10.77.0.2/24");
	CHECK_INT(rn_link_addr_add(l.ifindex, l.name, "10.77.0.2", &err), -EINVAL);
	CHECK_CONTAINS(err.msg, "not an address with a prefix length");
	CHECK_INT(rn_link_route_add(l.ifindex, l.name, "10.78.0.0/16", "10.77.0.1", &err), 0);
	CHECK_INT(rn_link_route_add(l.ifindex, l.name, "10.78.0.0/16", "10.77.0.1", &err), -EEXIST);
	CHECK_INT(rn_link_addr_del(l.ifindex, l.name, "10.77.0.2/24", &err), 0);
	CHECK_INT(rn_link_addr_list(l.ifindex, AF_INET, cidrs, 8, &n, &err), 0);
	CHECK_INT(n, 0);
	CHECK_INT(rn_link_by_mac(l.mac, &l, &err), 0);
	CHECK_STR(l.name, "rnt-veth0");
	CHECK_INT(rn_link_by_mac("02:00:00:00:00:99", &l, &err), -ENODEV);
	CHECK_INT(rn_link_default_route_ifindex(&def, &err), 0);
	CHECK(def >= 0);
	teardown_pair();
}

static int open_fds(void)
{
	_cleanup_closedir_ DIR *d = opendir("/proc/self/fd");
	int n = 0;

	while (d && readdir(d))
		n++;
	return n;
}

static void test_session_one_socket_per_thread(void)
{
	struct rn_error err = { 0 };
	_cleanup_close_ int a = -1;
	struct lookup_job job = { .name = "rnt-veth1" };
	struct rn_link l;
	int base;

	setup_pair();
	sh("ip link set rnt-veth1 netns rnt-a");
	a = rn_netns_open_name("rnt-a", &err);
	base = open_fds();
	{
		_cleanup_link_session_ bool outer = rn_link_session_begin();

		CHECK(outer);
		CHECK_INT(open_fds(), base); /* made on first use */
		CHECK_INT(rn_link_by_name("rnt-veth0", &l, &err), 0);
		CHECK_INT(open_fds(), base + 1);
		{
			_cleanup_link_session_ bool inner = rn_link_session_begin();

			CHECK(!inner); /* the outer session goes on past this scope */
			CHECK_INT(rn_link_set_up(l.ifindex, l.name, true, &err), 0);
			CHECK_INT(rn_link_addr_add(l.ifindex, l.name, "10.79.0.2/24", &err), 0);
		}
		CHECK_INT(rn_link_route_add(l.ifindex, l.name, "10.80.0.0/16", "10.79.0.1", &err),
			  0);
		CHECK_INT(open_fds(), base + 1);
		/* a refused request: the next call gets a fresh socket, the old one closed */
		CHECK_INT(rn_link_route_add(l.ifindex, l.name, "10.80.0.0/16", "10.79.0.1", &err),
			  -EEXIST);
		CHECK_INT(rn_link_by_name("rnt-veth0", &l, &err), 0);
		CHECK(l.up);
		CHECK_INT(open_fds(), base + 1);
		/* "not there" is an answer, not a failure of the socket */
		CHECK_INT(rn_link_by_name("rnt-veth1", &l, &err), -ENODEV);
		CHECK_INT(rn_link_by_name("rnt-veth0", &l, &err), 0);
		CHECK_INT(open_fds(), base + 1);
		/* another thread, in another netns, uses a socket of its own there */
		CHECK_INT(rn_netns_run(a, lookup_here, &job, &err), 0);
		CHECK_STR(job.link.name, "rnt-veth1");
		CHECK_INT(open_fds(), base + 1);
	}
	CHECK_INT(open_fds(), base);
	/* without a session: a socket per call, none left open */
	CHECK_INT(rn_link_by_name("rnt-veth0", &l, &err), 0);
	CHECK_INT(open_fds(), base);
	teardown_pair();
}

static void test_netns_list_finds_named_and_pid_namespaces(void)
{
	struct rn_error err = { 0 };
	_cleanup_free_ struct rn_netns_entry *v = NULL;
	size_t n = 0;
	bool found_a = false;

	setup_pair();
	CHECK_INT(rn_netns_list(&v, &n, &err), 0);
	CHECK(n >= 2);
	if (n < 2)
		return;
	CHECK(v[0].is_host);
	CHECK(v[0].pid > 0);
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i].name, "rnt-a") == 0)
			found_a = !v[i].is_host;
	CHECK(found_a);
	teardown_pair();
}

int main(void)
{
	static const struct rn_test tests[] = {
		T(test_open_target_forms),
		T(test_open_target_errors),
		T(test_run_leaves_caller_in_place),
		T(test_move_and_rename_in_one_step),
		T(test_move_name_clash_changes_nothing),
		T(test_move_to_sets_alias_and_up_in_the_move),
		T(test_move_to_half_refused_is_partial),
		T(test_addresses_routes_up),
		T(test_session_one_socket_per_thread),
		T(test_netns_list_finds_named_and_pid_namespaces),
	};

	if (geteuid() != 0) {
		printf("1..0 # SKIP the netns suite needs root\n");
		return 77;
	}
	return rn_test_main(tests, RN_ARRAY_SIZE(tests));
}
