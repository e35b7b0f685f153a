// SPDX-License-Identifier: Apache-2.0
/*
 * IPAM over the local store, in a scratch directory: allocation,
 * idempotency, exhaustion, DEL of only one's own records, CHECK, STATUS,
 * GC, listing, release, repair. No root needed.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ipam_store.h" /* src/lib/ipam: a store whose commit fails, for the undo test */
#include "rdmans/ipam.h"
#include "rdmans/ipam_admin.h"
#include "rdmans/ipam_import.h"
#include "test.h"

static char dir[64];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/rn-ipam-local-XXXXXX");
	CHECK(mkdtemp(dir) != NULL);
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	CHECK_INT(system(cmd), 0);
}

/* A config with dataDir in the scratch directory; ipam_extra is spliced into "ipam". */
static void config(struct rn_ipam_config *c, const char *name, const char *ipam_extra)
{
	char json[2048];
	struct rn_error err = { 0 };
	int r;

	snprintf(json, sizeof(json),
		 "{\"cniVersion\":\"1.0.0\",\"name\":\"%s\",\"ipam\":{\"type\":\"rdma-netns-ipam\","
		 "\"dataDir\":\"%s/store\",\"node_name\":\"node-a\",%s}}",
		 name, dir, ipam_extra);
	r = rn_ipam_config_parse(json, dir, 0, c, &err);
	if (r < 0)
		printf("# config: %s\n", err.msg);
	CHECK_INT(r, 0);
}

static struct rn_ipam_store *open_store(const struct rn_ipam_config *c)
{
	struct rn_ipam_store *s = NULL;
	struct rn_error err = { 0 };

	CHECK_INT(rn_ipam_store_open(c, &s, &err), 0);
	return s;
}

static const char *addr_of(const struct rn_ipam_lease *l, size_t i)
{
	static char buf[4][RN_IP_STRLEN];
	static int k;

	k = (k + 1) % 4;
	if (i >= l->n)
		return "(none)";
	return rn_ip_format(l->addr[i].ip.family, l->addr[i].ip.v, buf[k], sizeof(buf[k]));
}

static struct rn_ipam_owner pod(const char *cid, const char *name)
{
	return (struct rn_ipam_owner){ cid, "net1", "team-a", name, NULL };
}

static int count_files(const char *rel)
{
	char path[256];
	DIR *d;
	struct dirent *e;
	int n = 0;

	snprintf(path, sizeof(path), "%s/store/%s", dir, rel);
	d = opendir(path);
	if (!d)
		return 0;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static char *read_all(const char *rel)
{
	static char buf[4096];
	char path[1024];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/store/%s", dir, rel);
	f = fopen(path, "r");
	if (!f)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static void add_gives_an_address_and_an_operator_readable_record(void)
{
	struct rn_ipam_config c;
	struct rn_ipam_store *s;
	struct rn_ipam_lease l;
	struct rn_ipam_owner o = pod("c0ffee", "trainer-0");
	struct rn_error err = { 0 };
	char rel[128];
	const char *text;

	setup();
	config(&c, "rdma-a", "\"range\":\"10.56.0.0/24\",\"gateway\":\"10.56.0.1\"");
	s = open_store(&c);
	CHECK_INT(rn_ipam_add(s, &c, &o, &l, &err), 0);
	CHECK_INT(l.n, 1);
	CHECK(!l.existing);
	CHECK_INT(l.addr[0].prefix, 24);
	CHECK(l.addr[0].has_gateway);
	CHECK(rn_ipam_range_usable(&c.ranges[0], l.addr[0].ip.v));
	snprintf(rel, sizeof(rel), "_default/addr/%s", addr_of(&l, 0));
	text = read_all(rel);
	CHECK(text != NULL);
	CHECK_CONTAINS(text, "attachment=team-a/trainer-0/net1\n");
	CHECK_CONTAINS(text, "container_id=c0ffee\n");
	CHECK_CONTAINS(text, "pod=team-a/trainer-0\n");
	CHECK_CONTAINS(text, "node=node-a\n");
	CHECK_CONTAINS(text, "network=rdma-a\n");
	CHECK_CONTAINS(text, "ifname=net1\n");
	CHECK_CONTAINS(text, "time=20");
	text = read_all("_default/attachments/team-a%2Ftrainer-0%2Fnet1");
	CHECK(text != NULL);
	CHECK_CONTAINS(text, "address=addr ");
	CHECK_INT(count_files(".tmp"), 0);
	rn_ipam_store_close(s);
	rn_ipam_config_free(&c);
	teardown();
}

static void the_netns_is_recorded_and_a_path_too_long_for_a_record_is_left_out(void)
{
	struct rn_ipam_config c;
	struct rn_ipam_store *s;
	struct rn_ipam_lease l;
	char longns[RN_IPAM_NAME_MAX + 40], rel[128];
	struct rn_ipam_owner o = { "n1", "net1", NULL, NULL, "/proc/self/ns/net" };
	struct rn_ipam_owner far = { "n2", "net1", NULL, NULL, longns };
	struct rn_error err = { 0 };
	const char *text;

	longns[0] = '/';
	memset(longns + 1, 'a', sizeof(longns) - 2);
	longns[sizeof(longns) - 1] = '\0';
	setup();
	config(&c, "rdma-a", "\"range\":\"10.56.0.0/24\"");
	s = open_store(&c);
	CHECK_INT(rn_ipam_add(s, &c, &o, &l, &err), 0);
	snprintf(rel, sizeof(rel), "_default/addr/%s", addr_of(&l, 0));
	text = read_all(rel);
	CHECK(text != NULL);
	CHECK_CONTAINS(text, "netns=/proc/self/ns/net\n");
	CHECK(strstr(text, "netns_ino=") && isdigit((unsigned char)strstr(text, "netns_ino=")[10]));
	/* a path that does not fit a record: none is recorded, the ADD still succeeds */
	CHECK_INT(rn_ipam_add(s, &c, &far, &l, &err), 0);
	snprintf(rel, sizeof(rel), "_default/addr/%s", addr_of(&l, 0));
	text = read_all(rel);
	CHECK(text != NULL);
	CHECK_CONTAINS(text, "container_id=n2\n");
	CHECK_CONTAINS(text, "netns=\n");
	CHECK_CONTAINS(text, "netns_ino=\n");
	rn_ipam_store_close(s);
	rn_ipam_config_free(&c);
	teardown();
}

static void a_repeated_add_returns_the_same_address(void)
{
	struct rn_ipam_config c;
	struct rn_ipam_store *s;
	struct rn_ipam_lease a, b, other;
	struct rn_ipam_owner o = pod("c1", "p"), o2 = { "c1", "net2", "team-a", "p", NULL };
	struct rn_ipam_owner bare = { "c9", "net1", NULL, NULL, NULL };
	struct rn_error err = { 0 };

	setup();
	config(&c, "rdma-a", "\"range\":\"10.56.0.0/24\"");
	s = open_store(&c);
	CHECK_INT(rn_ipam_add(s, &c, &o, &a, &err), 0);
	CHECK_INT(rn_ipam_add(s, &c, &o, &b, &err), 0);
	CHECK(b.existing);
	CHECK_STR(addr_of(&b, 0), addr_of(&a, 0));
	/* another interface of the same pod is another attachment */
	CHECK_INT(rn_ipam_add(s, &c, &o2, &other, &err), 0);
	CHECK(strcmp(addr_of(&other, 0), addr_of(&a, 0)) != 0);
	/* without pod details the container ID is the owner */
	CHECK_INT(rn_ipam_add(s, &c, &bare, &b, &err), 0);
	CHECK(read_all("_default/attachments/c9%2Fnet1") != NULL);
	CHECK_INT(rn_ipam_add(s, &c, &bare, &other, &err), 0);
	CHECK(other.existing);
	CHECK_STR(addr_of(&other, 0), addr_of(&b, 0));
	CHECK_INT(count_files("_default/addr"), 3);
	rn_ipam_store_close(s);
	rn_ipam_config_free(&c);
	teardown();
}

static void a_new_sandbox_of_the_pod_takes_its_address_over(void)
{
	struct rn_ipam_config c;
	struct rn_ipam_store *s;
	struct rn_ipam_lease a, b;
	struct rn_ipam_owner old = pod("sandbox1", "p"), fresh = pod("sandbox2", "p");
	struct rn_error err = { 0 };
	size_t released = 99;
	char rel[128];

	setup();
	config(&c, "rdma-a", "\"range\":\"10.56.0.0/24\"");
	s = open_store(&c);
	CHECK_INT(rn_ipam_add(s, &c, &old, &a, &err), 0);
	CHECK_INT(rn_ipam_add(s, &c, &fresh, &b, &err), 0);
	CHECK(b.existing);
	CHECK_STR(addr_of(&b, 0), addr_of(&a, 0));
	snprintf(rel, sizeof(rel), "_default/addr/%s", addr_of(&a, 0));
	CHECK_CONTAINS(read_all(rel), "container_id=sandbox2\n");
	/* the old sandbox's late DEL releases nothing: the record is not its own any more */
	CHECK_INT(rn_ipam_del(s, &c, &old, &released, &err), 0);
	CHECK_INT(released, 0);
	CHECK(read_all(rel) != NULL);
	CHECK_INT(rn_ipam_del(s, &c, &fresh, &released, &err), 0);
	CHECK_INT(released, 1);
	CHECK(read_all(rel) == NULL);
	CHECK_INT(count_files("_default/attachments"), 0);
	rn_ipam_store_close(s);
	rn_ipam_config_free(&c);
	teardown();
}

static void del_succeeds_when_nothing_is_held_and_only_frees_its_own(void)
{
	struct rn_ipam_config c;
	struct rn_ipam_store *s;
	struct rn_ipam_lease a, b;
	struct rn_ipam_owner x = pod("cx", "x"), y = pod("cy", "y");
	struct rn_error err = { 0 };
	size_t released = 99;

	setup();
	config(&c, "rdma-a", "\"range\":\"10.56.0.0/24\"");
	s = open_store(&c);
	CHECK_INT(rn_ipam_del(s, &c, &x, &released, &err), 0);
	CHECK_INT(released, 0);
	CHECK_INT(rn_ipam_add(s, &c, &x, &a, &err), 0);
	CHECK_INT(rn_ipam_add(s, &c, &y, &b, &err), 0);
	CHECK_INT(rn_ipam_del(s, &c, &x, &released, &err), 0);
	CHECK_INT(released, 1);
	CHECK_INT(rn_ipam_del(s, &c, &x, &released, &err), 0); /* a second DEL */
	CHECK_INT(released, 0);
	CHECK_INT(count_files("_default/addr"), 1);
	CHECK_INT(rn_ipam_check(s, &c, &y, &b, &err), 0);
	rn_ipam_store_close(s);
	rn_ipam_config_free(&c);
	teardown();
}

static void the_first_add_after_the_last_free_address_fails_clearly(void)
{
	struct rn_ipam_config c;
	struct rn_ipam_store *s;
	struct rn_ipam_lease l;
	struct rn_error err = { 0 };
	char seen[8][RN_IP_STRLEN];
	size_t released;

	setup();
	/* a /29 with a gateway: .2-.6 are the five usable addresses */
	config(&c, "rdma-a", "\"range\":\"10.56.0.0/29\",\"gateway\":\"10.56.0.1\"");
	s = open_store(&c);
	for (int i = 0; i < 5; i++) {
		char cid[16];
		struct rn_ipam_owner o = { cid, "net1", NULL, NULL, NULL };

		snprintf(cid, sizeof(cid), "c%d", i);
		CHECK_INT(rn_ipam_add(s, &c, &o, &l, &err), 0);
		snprintf(seen[i], sizeof(seen[i]), "%s", addr_of(&l, 0));
		for (int j = 0; j < i; j++)
			CHECK(strcmp(seen[i], seen[j]) != 0);
		CHECK(strcmp(seen[i], "10.56.0.1") != 0);
	}
	{
		struct rn_ipam_owner late = { "c5", "net1", NULL, NULL, NULL };

		CHECK_INT(rn_ipam_add(s, &c, &late, &l, &err), -EADDRNOTAVAIL);
		CHECK_STR(err.msg, "no free address in range 10.56.0.0/29: all 5 usable addresses "
				   "are taken (list them with 'rdmans ipam ls'; release stale ones "
				   "or widen the range)");
		/* the failed ADD leaves nothing behind */
		CHECK(read_all("_default/attachments/c5%2Fnet1") == NULL);
		CHECK_INT(count_files("_default/addr"), 5);
		CHECK_INT(count_files(".tmp"), 0);
		CHECK_INT(rn_ipam_status(s, &c, &err), -EADDRNOTAVAIL);
		CHECK_CONTAINS(err.msg, "range 10.56.0.0/29 is exhausted");
		/* freeing one makes room, for exactly that address */
		{
			struct rn_ipam_owner c2 = { "c2", "net1", NULL, NULL, NULL };

			CHECK_INT(rn_ipam_del(s, &c, &c2, &released, &err), 0);
		}
		CHECK_INT(rn_ipam_status(s, &c, &err), 0);
		CHECK_INT(rn_ipam_add(s, &c, &late, &l, &err), 0);
		CHECK_STR(addr_of(&l, 0), seen[2]);
	}
	rn_ipam_store_close(s);
	rn_ipam_config_free(&c);
	teardown();
}

static void dual_stack_gets_one_address_per_range_or_none(void)
{
	struct rn_ipam_config c;
	struct rn_ipam_store *s;
	struct rn_ipam_lease l;
	struct rn_ipam_owner a = pod("ca", "a"), b = pod("cb", "b"), z = pod("cz", "z");
	struct rn_error err = { 0 };

	setup();
	/* the IPv6 range has room for two */
	config(&c, "rdma-a",
	       "\"ipRanges\":[{\"range\":\"10.56.0.0/24\"},{\"range\":\"fd00:56::/126\","
	       "\"exclude\":[\"fd00:56::3\"]}]");
	s = open_store(&c);
	CHECK_INT(rn_ipam_add(s, &c, &a, &l, &err), 0);
	CHECK_INT(l.n, 2);
	CHECK_INT(l.addr[0].ip.family, AF_INET);
	CHECK_INT(l.addr[1].ip.family, AF_INET6);
	CHECK_INT(l.addr[1].prefix, 126);
	CHECK_INT(rn_ipam_add(s, &c, &b, &l, &err), 0);
	CHECK_INT(count_files("_default/addr"), 4);
	/* the third finds IPv4 room but no IPv6: its IPv4 claim is undone */
	CHECK_INT(rn_ipam_add(s, &c, &z, &l, &err), -EADDRNOTAVAIL);
	CHECK_CONTAINS(err.msg, "fd00:56::/126");
	CHECK_INT(count_files("_default/addr"), 4);
	CHECK(read_all("_default/attachments/team-a%2Fz%2Fnet1") == NULL);
	rn_ipam_store_close(s);
	rn_ipam_config_free(&c);
	teardown();
}

static void overlapping_ranges_share_addresses_unless_disabled(void)
{
	struct rn_ipam_config wide, narrow, solo;
	struct rn_ipam_store *s;
	struct rn_ipam_lease l1, l2, l3;
	struct rn_error err = { 0 };
	struct rn_ipam_owner a = pod("ca", "a"), b = pod("cb", "b");

	setup();
	/* two networks whose ranges overlap on .4-.6: never the same address (default) */
	config(&wide, "net-wide", "\"range\":\"10.56.0.0/29\"");
	config(&narrow, "net-narrow", "\"range\":\"10.56.0.4-10.56.0.6/29\"");
	config(&solo, "net-solo",
	       "\"range\":\"10.56.0.4-10.56.0.6/29\",\"enable_overlapping_ranges\":false");
	s = open_store(&wide);
	for (int i = 0; i < 6; i++) {
		char cid[8];
		struct rn_ipam_owner o = { cid, "net1", NULL, NULL, NULL };

		snprintf(cid, sizeof(cid), "w%d", i);
		CHECK_INT(rn_ipam_add(s, &wide, &o, &l1, &err), 0);
	}
	/* the wide network took all six, so the narrow one (same pool) has none left */
	CHECK_INT(rn_ipam_add(s, &narrow, &a, &l2, &err), -EADDRNOTAVAIL);
	/* overlap disabled: its own pool, so the same addresses again */
	CHECK_INT(rn_ipam_add(s, &solo, &b, &l3, &err), 0);
	CHECK(l3.addr[0].ip.v >= narrow.ranges[0].start && l3.addr[0].ip.v <= narrow.ranges[0].end);
	CHECK_INT(count_files("_default/r-10.56.0.0_29"), 1);
	rn_ipam_store_close(s);
	rn_ipam_config_free(&wide);
	rn_ipam_config_free(&narrow);
	rn_ipam_config_free(&solo);
	teardown();
}

static void network_name_separates_the_pools(void)
{
	struct rn_ipam_config one, two;
	struct rn_ipam_store *s;
	struct rn_ipam_lease l1, l2;
	struct rn_error err = { 0 };
	struct rn_ipam_owner a = pod("ca", "a"), b = pod("cb", "b");

	setup();
	config(&one, "n1", "\"range\":\"10.56.0.4/32\",\"network_name\":\"tenant-1\"");
	config(&two, "n2", "\"range\":\"10.56.0.4/32\",\"network_name\":\"tenant-2\"");
	s = open_store(&one);
	CHECK_INT(rn_ipam_add(s, &one, &a, &l1, &err), 0);
	CHECK_INT(rn_ipam_add(s, &two, &b, &l2, &err), 0);
	CHECK_STR(addr_of(&l1, 0), "10.56.0.4");
	CHECK_STR(addr_of(&l2, 0), "10.56.0.4");
	CHECK(read_all("tenant-1/addr/10.56.0.4") != NULL);
	CHECK(read_all("tenant-2/addr/10.56.0.4") != NULL);
	rn_ipam_store_close(s);
	rn_ipam_config_free(&one);
	rn_ipam_config_free(&two);
	teardown();
}

static void ipv6_slash_64_and_excludes_are_honoured(void)
{
	struct rn_ipam_config c, ex;
	struct rn_ipam_store *s;
	struct rn_ipam_lease l;
	struct rn_error err = { 0 };

	setup();
	config(&c, "v6", "\"range\":\"fd00:1:2:3::/64\"");
	config(&ex, "ex",
	       "\"range\":\"10.9.0.0/28\",\"exclude\":[\"10.9.0.0/29\",\"10.9.0.8/30\","
	       "\"10.9.0.12\"]");
	s = open_store(&c);
	for (int i = 0; i < 20; i++) {
		char cid[8];
		struct rn_ipam_owner o = { cid, "net1", NULL, NULL, NULL };

		snprintf(cid, sizeof(cid), "v%d", i);
		CHECK_INT(rn_ipam_add(s, &c, &o, &l, &err), 0);
		CHECK(rn_ipam_range_in_subnet(&c.ranges[0], AF_INET6, l.addr[0].ip.v));
		CHECK(l.addr[0].ip.v != c.ranges[0].net);
		CHECK_INT(l.addr[0].prefix, 64);
	}
	/* only .13 and .14 are left by the excludes (.15 is the broadcast) */
	for (int i = 0; i < 2; i++) {
		char cid[8];
		struct rn_ipam_owner o = { cid, "net1", NULL, NULL, NULL };

		snprintf(cid, sizeof(cid), "e%d", i);
		CHECK_INT(rn_ipam_add(s, &ex, &o, &l, &err), 0);
		CHECK(strcmp(addr_of(&l, 0), "10.9.0.13") == 0 ||
		      strcmp(addr_of(&l, 0), "10.9.0.14") == 0);
	}
	{
		struct rn_ipam_owner o = { "e9", "net1", NULL, NULL, NULL };

		CHECK_INT(rn_ipam_add(s, &ex, &o, &l, &err), -EADDRNOTAVAIL);
	}
	rn_ipam_store_close(s);
	rn_ipam_config_free(&c);
	rn_ipam_config_free(&ex);
	teardown();
}

static void check_confirms_the_record_and_explains_a_miss(void)
{
	struct rn_ipam_config c;
	struct rn_ipam_store *s;
	struct rn_ipam_lease a, got;
	struct rn_ipam_owner o = pod("c1", "p"), stranger = pod("c2", "p");
	struct rn_error err = { 0 };

	setup();
	config(&c, "rdma-a", "\"range\":\"10.56.0.0/24\"");
	s = open_store(&c);
	CHECK_INT(rn_ipam_check(s, &c, &o, &got, &err), -ENOENT);
	CHECK_CONTAINS(err.msg, "holds no address");
	CHECK_INT(rn_ipam_add(s, &c, &o, &a, &err), 0);
	CHECK_INT(rn_ipam_check(s, &c, &o, &got, &err), 0);
	CHECK_STR(addr_of(&got, 0), addr_of(&a, 0));
	CHECK_INT(rn_ipam_check(s, &c, &stranger, &got, &err), -ENOENT);
	CHECK_CONTAINS(err.msg, "held by container c1, not c2");
	/* a record that lost its file is a failed CHECK, not a crash */
	{
		char path[256];

		snprintf(path, sizeof(path), "%s/store/_default/addr/%s", dir, addr_of(&a, 0));
		CHECK_INT(unlink(path), 0);
	}
	CHECK_INT(rn_ipam_check(s, &c, &o, &got, &err), -ENOENT);
	CHECK_CONTAINS(err.msg, "holds no address in range 10.56.0.0/24");
	/* and a repeated ADD heals it */
	CHECK_INT(rn_ipam_add(s, &c, &o, &a, &err), 0);
	CHECK_INT(rn_ipam_check(s, &c, &o, &got, &err), 0);
	rn_ipam_store_close(s);
	rn_ipam_config_free(&c);
	teardown();
}

static void bad_owner_input_changes_nothing(void)
{
	struct rn_ipam_config c;
	struct rn_ipam_store *s;
	struct rn_ipam_lease l;
	struct rn_ipam_owner slash = { "abc/../x", "net1", NULL, NULL, NULL };
	struct rn_ipam_owner longif = { "abc", "a-very-long-ifname", NULL, NULL, NULL };
	struct rn_ipam_owner spacepod = { "abc", "net1", "team a", "p", NULL };
	struct rn_error err = { 0 };

	setup();
	config(&c, "rdma-a", "\"range\":\"10.56.0.0/24\"");
	s = open_store(&c);
	CHECK_INT(rn_ipam_add(s, &c, &slash, &l, &err), -EINVAL);
	CHECK_CONTAINS(err.msg, "container ID 'abc/../x' may only contain");
	CHECK_INT(rn_ipam_add(s, &c, &longif, &l, &err), -EINVAL);
	CHECK_CONTAINS(err.msg, "too long");
	CHECK_INT(rn_ipam_add(s, &c, &spacepod, &l, &err), -EINVAL);
	CHECK_CONTAINS(err.msg, "pod namespace name 'team a'");
	CHECK_INT(rn_ipam_del(s, &c, &slash, NULL, &err), -EINVAL);
	CHECK_INT(count_files("_default/addr"), 0);
	CHECK_INT(count_files("_default/attachments"), 0);
	rn_ipam_store_close(s);
	rn_ipam_config_free(&c);
	teardown();
}

static void status_reports_an_unusable_data_directory(void)
{
	struct rn_ipam_config c;
	struct rn_ipam_store *s;
	struct rn_error err = { 0 };
	char json[512], file[128];
	FILE *f;

	setup();
	snprintf(file, sizeof(file), "%s/plainfile", dir);
	f = fopen(file, "w");
	CHECK(f != NULL);
	if (f)
		fclose(f);
	snprintf(json, sizeof(json),
		 "{\"name\":\"n\",\"ipam\":{\"range\":\"10.0.0.0/24\",\"dataDir\":\"%s/sub\"}}",
		 file);
	CHECK_INT(rn_ipam_config_parse(json, dir, 0, &c, &err), 0);
	s = open_store(&c);
	CHECK(rn_ipam_status(s, &c, &err) < 0);
	CHECK_CONTAINS(err.msg, "plainfile/sub: Not a directory");
	CHECK_CONTAINS(err.msg, "set ipam.dataDir to a writable directory");
	rn_ipam_store_close(s);
	rn_ipam_config_free(&c);
	teardown();
}

static void gc_releases_this_nodes_stale_attachments_only(void)
{
	struct rn_ipam_config c, other_node, other_net;
	struct rn_ipam_store *s;
	struct rn_ipam_lease l;
	struct rn_ipam_owner keep = { "keep1", "net1", NULL, NULL, NULL };
	struct rn_ipam_owner stale = { "stale1", "net1", NULL, NULL, NULL };
	struct rn_ipam_owner theirs = { "theirs1", "net1", NULL, NULL, NULL };
	struct rn_ipam_owner mine_other_net = { "net2c", "net1", NULL, NULL, NULL };
	struct rn_ipam_valid valid[] = { { "keep1", "net1" } };
	struct rn_error err = { 0 };
	size_t released = 0;
	char json[1024];

	setup();
	config(&c, "rdma-a", "\"range\":\"10.56.0.0/24\"");
	config(&other_net, "rdma-b", "\"range\":\"10.56.0.0/24\"");
	snprintf(json, sizeof(json),
		 "{\"name\":\"rdma-a\",\"ipam\":{\"range\":\"10.56.0.0/24\",\"dataDir\":\"%s/"
		 "store\","
		 "\"node_name\":\"node-b\"}}",
		 dir);
	CHECK_INT(rn_ipam_config_parse(json, dir, 0, &other_node, &err), 0);
	s = open_store(&c);
	CHECK_INT(rn_ipam_add(s, &c, &keep, &l, &err), 0);
	CHECK_INT(rn_ipam_add(s, &c, &stale, &l, &err), 0);
	CHECK_INT(rn_ipam_add(s, &other_node, &theirs, &l, &err), 0);
	CHECK_INT(rn_ipam_add(s, &other_net, &mine_other_net, &l, &err), 0);
	/* an address record nobody's attachment holds (a hand copy, a crash elsewhere) */
	{
		char path[256];
		FILE *f;

		snprintf(path, sizeof(path), "%s/store/_default/addr/10.56.0.250", dir);
		f = fopen(path, "w");
		CHECK(f != NULL);
		if (f) {
			fputs("ip=10.56.0.250\nrange=10.56.0.0/24\nscope=_default\npool=addr\n"
			      "attachment=ghost/net1\nnetwork=rdma-a\ncontainer_id=ghost\n"
			      "ifname=net1\nnode=node-a\n",
			      f);
			fclose(f);
		}
	}
	CHECK_INT(count_files("_default/addr"), 5);
	CHECK_INT(rn_ipam_gc(s, &c, valid, 1, &released, &err), 0);
	CHECK_INT(released, 2); /* stale1 and the ghost */
	CHECK_INT(count_files("_default/addr"), 3);
	CHECK_INT(rn_ipam_check(s, &c, &keep, &l, &err), 0);
	CHECK_INT(rn_ipam_check(s, &other_node, &theirs, &l, &err), 0);
	CHECK_INT(rn_ipam_check(s, &other_net, &mine_other_net, &l, &err), 0);
	CHECK_INT(rn_ipam_check(s, &c, &stale, &l, &err), -ENOENT);
	rn_ipam_store_close(s);
	rn_ipam_config_free(&c);
	rn_ipam_config_free(&other_node);
	rn_ipam_config_free(&other_net);
	teardown();
}

static void list_filters_and_release_drops_one_address(void)
{
	struct rn_ipam_config c;
	struct rn_ipam_store *s;
	struct rn_ipam_lease l;
	struct rn_ipam_owner a = pod("ca", "a"), b = pod("cb", "b");
	struct rn_ipam_record *recs = NULL;
	struct rn_ipam_filter f = { .pod = "team-a/a" };
	struct rn_error err = { 0 };
	size_t n = 0;

	setup();
	config(&c, "rdma-a",
	       "\"ipRanges\":[{\"range\":\"10.56.0.0/24\"},{\"range\":\"fd00::/120\"}]");
	s = open_store(&c);
	CHECK_INT(rn_ipam_add(s, &c, &a, &l, &err), 0);
	CHECK_INT(rn_ipam_add(s, &c, &b, &l, &err), 0);
	CHECK_INT(rn_ipam_list(s, NULL, &recs, &n, NULL, NULL, &err), 0);
	CHECK_INT(n, 4);
	/* sorted: IPv4 before IPv6 within the pool */
	CHECK(strchr(recs[0].ip, '.') && strchr(recs[3].ip, ':'));
	free(recs);
	CHECK_INT(rn_ipam_list(s, &f, &recs, &n, NULL, NULL, &err), 0);
	CHECK_INT(n, 2);
	CHECK_STR(recs[0].pod, "team-a/a");
	/* release the IPv4 one: the attachment keeps the IPv6 one */
	CHECK_INT(rn_ipam_release(s, &recs[0], &err), 0);
	CHECK_INT(rn_ipam_release(s, &recs[0], &err), -ENOENT);
	CHECK_CONTAINS(err.msg, "is no longer held");
	{
		struct rn_ipam_attachment att;

		CHECK_INT(rn_ipam_attachment_get(s, "_default", "team-a/a/net1", &att, &err), 0);
		CHECK_INT(att.n, 1);
		CHECK(strchr(att.held[0].ip, ':') != NULL);
	}
	CHECK_INT(rn_ipam_release(s, &recs[1], &err), 0);
	CHECK(read_all("_default/attachments/team-a%2Fa%2Fnet1") == NULL);
	free(recs);
	rn_ipam_store_close(s);
	rn_ipam_config_free(&c);
	teardown();
}

static void repair_sweeps_crash_leftovers(void)
{
	struct rn_ipam_config c;
	struct rn_ipam_store *s;
	struct rn_ipam_lease l;
	struct rn_ipam_owner a = pod("ca", "a");
	struct rn_ipam_repair_stats st;
	struct rn_error err = { 0 };
	char path[256];
	FILE *f;

	setup();
	config(&c, "rdma-a", "\"range\":\"10.56.0.0/24\"");
	s = open_store(&c);
	CHECK_INT(rn_ipam_add(s, &c, &a, &l, &err), 0);
	/* a temp file of a writer killed mid-write (PID 2^22+1 does not run) */
	snprintf(path, sizeof(path), "%s/store/.tmp/4194305.0.deadbeef", dir);
	f = fopen(path, "w");
	CHECK(f != NULL);
	if (f)
		fclose(f);
	/* a temp file of a live writer (us) is left alone */
	snprintf(path, sizeof(path), "%s/store/.tmp/%d.7.cafe", dir, (int)getpid());
	f = fopen(path, "w");
	if (f)
		fclose(f);
	/* an attachment holding nothing */
	snprintf(path, sizeof(path), "%s/store/_default/attachments/empty%%2Fnet1", dir);
	f = fopen(path, "w");
	if (f) {
		fputs("attachment=empty/net1\nscope=_default\ncontainer_id=empty\n", f);
		fclose(f);
	}
	CHECK_INT(rn_ipam_repair(s, true, &st, &err), 0);
	CHECK_INT(st.temp_files, 1);
	CHECK_INT(st.empty, 1);
	CHECK_INT(st.orphans, 0);
	CHECK_INT(count_files(".tmp"), 2); /* dry run: nothing removed */
	CHECK_INT(rn_ipam_repair(s, false, &st, &err), 0);
	CHECK_INT(count_files(".tmp"), 1);
	CHECK_INT(count_files("_default/attachments"), 1);
	CHECK_INT(rn_ipam_check(s, &c, &a, &l, &err), 0);
	rn_ipam_store_close(s);
	rn_ipam_config_free(&c);
	teardown();
}

static void put(const char *rel, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/store/%s", dir, rel);
	(void)unlink(path);
	f = fopen(path, "w");
	CHECK(f != NULL);
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static void a_damaged_attachment_is_rebuilt_by_add_and_released_by_del(void)
{
	struct rn_ipam_config c;
	struct rn_ipam_store *s;
	struct rn_ipam_lease l;
	struct rn_ipam_owner a = pod("ca", "a");
	struct rn_error err = { 0 };
	char first[RN_IP_STRLEN], rel[128];

	setup();
	config(&c, "rdma-a", "\"range\":\"10.56.0.0/24\"");
	s = open_store(&c);
	CHECK_INT(rn_ipam_add(s, &c, &a, &l, &err), 0);
	snprintf(first, sizeof(first), "%s", addr_of(&l, 0));
	put("_default/attachments/team-a%2Fa%2Fnet1", "this is not a record");
	/* a re-ADD of the pod: its address, read back from the address records */
	CHECK_INT(rn_ipam_add(s, &c, &a, &l, &err), 0);
	CHECK_STR(addr_of(&l, 0), first);
	CHECK_CONTAINS(read_all("_default/attachments/team-a%2Fa%2Fnet1"), first);
	/* truncated, then DEL: the address goes with it */
	put("_default/attachments/team-a%2Fa%2Fnet1", "attachment=team-a/a/ne");
	CHECK_INT(rn_ipam_del(s, &c, &a, NULL, &err), 0);
	snprintf(rel, sizeof(rel), "_default/addr/%s", first);
	CHECK(read_all(rel) == NULL);
	CHECK(read_all("_default/attachments/team-a%2Fa%2Fnet1") == NULL);
	CHECK_INT(rn_ipam_del(s, &c, &a, NULL, &err), 0);
	rn_ipam_store_close(s);
	rn_ipam_config_free(&c);
	teardown();
}

static void del_removes_its_own_damaged_address_record(void)
{
	struct rn_ipam_config c;
	struct rn_ipam_store *s;
	struct rn_ipam_lease l;
	struct rn_ipam_owner a = pod("ca", "a");
	struct rn_error err = { 0 };
	char rel[128];

	setup();
	config(&c, "rdma-a", "\"range\":\"10.56.0.0/24\"");
	s = open_store(&c);
	CHECK_INT(rn_ipam_add(s, &c, &a, &l, &err), 0);
	snprintf(rel, sizeof(rel), "_default/addr/%s", addr_of(&l, 0));
	put(rel, "ip=10.56.0.");
	CHECK_INT(rn_ipam_del(s, &c, &a, NULL, &err), 0);
	CHECK(read_all(rel) == NULL);
	CHECK_INT(count_files("_default/attachments"), 0);
	rn_ipam_store_close(s);
	rn_ipam_config_free(&c);
	teardown();
}

static void gc_rebuilds_a_damaged_attachment_and_keeps_its_addresses(void)
{
	struct rn_ipam_config c;
	struct rn_ipam_store *s;
	struct rn_ipam_lease l;
	struct rn_ipam_owner a = pod("ca", "a");
	struct rn_ipam_repair_stats st;
	struct rn_error err = { 0 };

	setup();
	config(&c, "rdma-a", "\"range\":\"10.56.0.0/24\"");
	s = open_store(&c);
	CHECK_INT(rn_ipam_add(s, &c, &a, &l, &err), 0);
	put("_default/attachments/team-a%2Fa%2Fnet1", "");
	CHECK_INT(rn_ipam_repair(s, false, &st, &err), 0);
	CHECK_INT(st.rebuilt, 1);
	CHECK_INT(st.orphans, 0);
	CHECK_INT(rn_ipam_check(s, &c, &a, &l, &err), 0);
	rn_ipam_store_close(s);
	rn_ipam_config_free(&c);
	teardown();
}

static void damaged_address_records_are_listed_and_removed_only_while_damaged(void)
{
	struct rn_ipam_config c;
	struct rn_ipam_store *s;
	struct rn_ipam_lease l;
	struct rn_ipam_owner a = pod("ca", "a");
	struct rn_ipam_record *recs = NULL;
	struct rn_ipam_damaged *bad = NULL;
	struct rn_ipam_filter f = { .ip = "10.56.0.5" };
	struct rn_error err = { 0 };
	char path[512], valid[4096];
	size_t n = 0, n_bad = 0;

	setup();
	config(&c, "rdma-a", "\"range\":\"10.56.0.0/29\"");
	s = open_store(&c);
	CHECK_INT(rn_ipam_add(s, &c, &a, &l, &err), 0);
	snprintf(path, sizeof(path), "_default/addr/%s", addr_of(&l, 0));
	snprintf(valid, sizeof(valid), "%s", read_all(path));
	/* the five other addresses: garbage, empty, truncated, a symlink, a directory */
	for (int i = 1, k = 0; i <= 6; i++) {
		char rel[128], target[512];

		snprintf(rel, sizeof(rel), "_default/addr/10.56.0.%d", i);
		if (strcmp(rel, path) == 0)
			continue;
		switch (k++) {
		case 0:
			put(rel, "\x01\x02garbage");
			break;
		case 1:
			put(rel, "");
			break;
		case 2:
			put(rel, "# rdma-netns-ipam address record\nip=10.56.0.");
			break;
		case 3:
			snprintf(target, sizeof(target), "%s/store/%s", dir, rel);
			CHECK_INT(symlink("/etc/passwd", target), 0);
			break;
		default:
			snprintf(target, sizeof(target), "%s/store/%s", dir, rel);
			CHECK_INT(mkdir(target, 0700), 0);
		}
	}
	CHECK_INT(rn_ipam_list(s, NULL, &recs, &n, &bad, &n_bad, &err), 0);
	CHECK_INT(n, 1);
	CHECK_INT(n_bad, 5);
	for (size_t i = 0; i < n_bad; i++) {
		CHECK(bad[i].takes_address);
		CHECK(bad[i].why[0] != '\0');
	}
	free(recs);
	free(bad);
	/* they take their addresses: the range is full */
	{
		struct rn_ipam_owner b = pod("cb", "b");

		CHECK_INT(rn_ipam_add(s, &c, &b, &l, &err), -EADDRNOTAVAIL);
	}
	/* 10.56.0.5 (or whichever is damaged there) goes; then nothing is left to remove */
	if (strcmp(addr_of(&l, 0), "10.56.0.5") == 0 ||
	    strcmp(path, "_default/addr/10.56.0.5") == 0)
		f.ip = "10.56.0.6";
	CHECK_INT(rn_ipam_list(s, &f, &recs, &n, &bad, &n_bad, &err), 0);
	CHECK_INT(n_bad, 1);
	CHECK_INT(rn_ipam_release_damaged(s, &bad[0], &err), 0);
	CHECK_INT(rn_ipam_release_damaged(s, &bad[0], &err), -ENOENT);
	free(recs);
	free(bad);
	/* one repaired by hand between listing and removal: left alone */
	f.ip = strcmp(f.ip, "10.56.0.6") == 0 ? "10.56.0.4" : "10.56.0.6";
	if (strcmp(path + strlen("_default/addr/"), f.ip) == 0)
		f.ip = "10.56.0.3";
	CHECK_INT(rn_ipam_list(s, &f, &recs, &n, &bad, &n_bad, &err), 0);
	CHECK_INT(n_bad, 1);
	{
		char rel[128], fixed[4096], *p;

		snprintf(rel, sizeof(rel), "_default/addr/%s", f.ip);
		snprintf(path, sizeof(path), "%s/store/%s", dir, rel);
		(void)rmdir(path);
		(void)unlink(path);
		/* the valid record, moved to this address */
		snprintf(fixed, sizeof(fixed), "%s", valid);
		p = strstr(fixed, "ip=");
		snprintf(p, sizeof(fixed) - (size_t)(p - fixed), "ip=%s\n%s", f.ip,
			 strchr(strstr(valid, "ip="), '\n') + 1);
		put(rel, fixed);
		CHECK_INT(rn_ipam_release_damaged(s, &bad[0], &err), -EBUSY);
		CHECK(read_all(rel) != NULL);
	}
	free(recs);
	free(bad);
	rn_ipam_store_close(s);
	rn_ipam_config_free(&c);
	teardown();
}

static int commit_fails(struct rn_ipam_store *s, const char *scope, const struct rn_ipam_ref *refs,
			size_t n, const char *id, uint64_t att_version, enum rn_ipam_att_op att_op,
			const char *att_text, struct rn_error *err)
{
	return rn_error_set(err, EIO, "injected: the store refused the write");
}

static void a_failed_undo_of_an_add_reaches_the_message(void)
{
	struct rn_ipam_config c;
	struct rn_ipam_store *s;
	const struct rn_ipam_store_ops *real;
	struct rn_ipam_store_ops failing;
	struct rn_ipam_lease l;
	struct rn_ipam_owner a = pod("ca", "a"), b = pod("cb", "b"), z = pod("cz", "z");
	struct rn_error err = { 0 };
	size_t released = 0;

	setup();
	config(&c, "rdma-a",
	       "\"ipRanges\":[{\"range\":\"10.56.0.0/24\"},{\"range\":\"fd00:56::/126\","
	       "\"exclude\":[\"fd00:56::3\"]}]");
	s = open_store(&c);
	CHECK_INT(rn_ipam_add(s, &c, &a, &l, &err), 0);
	CHECK_INT(rn_ipam_add(s, &c, &b, &l, &err), 0);
	/* z claims an IPv4 address, finds no IPv6 one, and its undo cannot write */
	real = s->ops;
	failing = *real;
	failing.commit = commit_fails;
	s->ops = &failing;
	CHECK_INT(rn_ipam_add(s, &c, &z, &l, &err), -EADDRNOTAVAIL);
	CHECK_CONTAINS(err.msg, "fd00:56::/126");
	CHECK_CONTAINS(err.msg, "undoing this ADD's claims failed too (injected");
	CHECK_CONTAINS(err.msg, "run DEL");
	CHECK_INT(count_files("_default/addr"), 5);
	/* and DEL, as the message says, releases what the undo could not */
	s->ops = real;
	CHECK_INT(rn_ipam_del(s, &c, &z, &released, &err), 0);
	CHECK_INT((int)released, 1);
	CHECK_INT(count_files("_default/addr"), 4);
	rn_ipam_store_close(s);
	rn_ipam_config_free(&c);
	teardown();
}

static void add_at_takes_the_wanted_address_or_says_who_holds_it(void)
{
	struct rn_ipam_config c;
	struct rn_ipam_store *s;
	struct rn_ipam_lease l;
	struct rn_ipam_owner a = pod("ca", "a"), b = pod("cb", "b");
	struct rn_error err = { 0 };
	struct rn_ip want, other, outside;

	setup();
	config(&c, "rdma-a",
	       "\"ipRanges\":[{\"range\":\"10.56.0.0/24\"},{\"range\":\"fd00:56::/120\"}]");
	s = open_store(&c);
	REQUIRE(rn_ip_parse("10.56.0.77", &want) == 0);
	REQUIRE(rn_ip_parse("10.56.0.78", &other) == 0);
	REQUIRE(rn_ip_parse("10.57.0.1", &outside) == 0);
	CHECK_INT(rn_ipam_add_at(s, &c, &a, &want, &l, &err), 0);
	/* the other range is left as it was: nothing claimed there */
	CHECK_INT(l.n, 1);
	CHECK_STR(addr_of(&l, 0), "10.56.0.77");
	CHECK(!l.existing);
	CHECK_INT(count_files("_default/addr"), 1);
	CHECK_INT(rn_ipam_add_at(s, &c, &a, &want, &l, &err), 0);
	CHECK(l.existing);
	/* a plain ADD of the same attachment keeps it and fills the other range */
	CHECK_INT(rn_ipam_add(s, &c, &a, &l, &err), 0);
	CHECK_INT(l.n, 2);
	CHECK_STR(addr_of(&l, 0), "10.56.0.77");
	CHECK_INT(rn_ipam_add_at(s, &c, &b, &want, &l, &err), -EEXIST);
	CHECK_CONTAINS(err.msg,
		       "10.56.0.77 in range 10.56.0.0/24 is already held by team-a/a/net1");
	CHECK_INT(rn_ipam_add_at(s, &c, &a, &other, &l, &err), -EEXIST);
	CHECK_CONTAINS(err.msg, "already holds 10.56.0.77 in range 10.56.0.0/24, not 10.56.0.78");
	CHECK_INT(rn_ipam_add_at(s, &c, &b, &outside, &l, &err), -ERANGE);
	CHECK_CONTAINS(err.msg, "10.57.0.1 is in none of this network's ranges");
	/* b's refused claims left nothing behind */
	CHECK_INT(count_files("_default/addr"), 2);
	CHECK(read_all("_default/attachments/team-a%2Fb%2Fnet1") == NULL);
	rn_ipam_store_close(s);
	rn_ipam_config_free(&c);
	teardown();
}

struct import_seen {
	char lines[8][160];
	size_t n;
};

static void import_seen(void *ctx, const struct rn_whereabouts_alloc *a, const char *attachment,
			enum rn_import_outcome outcome, const char *why)
{
	struct import_seen *seen = ctx;

	(void)why;
	if (seen->n < 8)
		snprintf(seen->lines[seen->n++], sizeof(seen->lines[0]), "%s %s %d", a->ip_text,
			 attachment, (int)outcome);
}

static void whereabouts_ippools_are_imported_for_their_pods(void)
{
	static const char pools[] =
		"{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[{\"apiVersion\":"
		"\"whereabouts.cni.cncf.io/v1alpha1\",\"kind\":\"IPPool\",\"metadata\":{\"name\":"
		"\"p\"},\"spec\":{\"range\":\"10.56.0.5/24\",\"allocations\":{\"0\":{\"id\":\"c0\","
		"\"podref\":\"team-a/x\",\"ifname\":\"net1\"},\"3\":{\"id\":\"c3\"}}}}]}";
	struct rn_whereabouts_alloc *allocs = NULL;
	struct rn_import_opts io = { 0 };
	struct import_seen seen = { 0 };
	struct rn_ipam_config c;
	struct rn_ipam_store *s;
	struct rn_ipam_lease l;
	struct rn_ipam_owner x = pod("c0", "x");
	struct rn_error err = { 0 };
	size_t n = 0, refused = 9;

	setup();
	config(&c, "rdma-a", "\"range\":\"10.56.0.0/24\"");
	s = open_store(&c);
	CHECK_INT(rn_whereabouts_parse(pools, sizeof(pools) - 1, &allocs, &n, &err), 0);
	REQUIRE(n == 2);
	/* offsets count from the range's address as written (whereabouts' net.ParseCIDR) */
	CHECK_STR(allocs[0].ip_text, "10.56.0.5");
	CHECK_STR(allocs[1].ip_text, "10.56.0.8");
	CHECK_STR(allocs[1].pod_name, "");
	/* c3 names no pod and no interface: refused as a whole until --ifname */
	CHECK_INT(rn_ipam_import(s, &c, allocs, n, &io, import_seen, &seen, &refused, &err),
		  -EINVAL);
	CHECK_CONTAINS(err.msg, "10.56.0.8 (allocation 3) names no interface");
	CHECK_INT((int)seen.n, 0);
	CHECK_INT(count_files("_default/addr"), 0);
	io.ifname = "net9";
	CHECK_INT(rn_ipam_import(s, &c, allocs, n, &io, import_seen, &seen, &refused, &err), 0);
	CHECK_INT((int)refused, 0);
	REQUIRE(seen.n == 2);
	CHECK_STR(seen.lines[0], "10.56.0.5 team-a/x/net1 0");
	CHECK_STR(seen.lines[1], "10.56.0.8 c3/net9 0");
	/* the records carry no node: no node's reconciler or GC judges them */
	CHECK_CONTAINS(read_all("_default/addr/10.56.0.5"), "node=\n");
	/* the pod's own repeated ADD finds its imported address */
	CHECK_INT(rn_ipam_add(s, &c, &x, &l, &err), 0);
	CHECK_STR(addr_of(&l, 0), "10.56.0.5");
	CHECK(l.existing);
	rn_ipam_store_close(s);
	rn_ipam_config_free(&c);
	free(allocs);
	teardown();
}

static void bad_ippools_are_refused_by_pool_and_key(void)
{
	static const struct {
		const char *json, *says;
	} bad[] = {
		{ "{\"kind\":\"IPPool\"}", "not a whereabouts IPPool" },
		{ "{\"apiVersion\":\"whereabouts.cni.cncf.io/v1alpha1\",\"kind\":\"IPPool\","
		  "\"metadata\":{\"name\":\"p\"},\"spec\":{\"range\":\"10.0.0.0/33\"}}",
		  "IPPool p: spec.range '10.0.0.0/33' is not an address/prefix" },
		{ "{\"apiVersion\":\"whereabouts.cni.cncf.io/v1alpha1\",\"kind\":\"IPPool\","
		  "\"metadata\":{\"name\":\"p\"},\"spec\":{\"range\":\"10.0.0.0/"
		  "30\",\"allocations\":"
		  "{\"4\":{\"id\":\"c\"}}}}",
		  "IPPool p: allocation 4 is outside range 10.0.0.0/30" },
		{ "{\"apiVersion\":\"whereabouts.cni.cncf.io/v1alpha1\",\"kind\":\"IPPool\","
		  "\"metadata\":{\"name\":\"p\"},\"spec\":{\"range\":\"10.0.0.0/"
		  "30\",\"allocations\":"
		  "{\"-1\":{\"id\":\"c\"}}}}",
		  "allocation key '-1' is not an offset" },
		{ "{\"apiVersion\":\"whereabouts.cni.cncf.io/v1alpha1\",\"kind\":\"IPPool\","
		  "\"metadata\":{\"name\":\"p\"},\"spec\":{\"range\":\"10.0.0.0/"
		  "30\",\"allocations\":"
		  "{\"1\":{\"podref\":\"a/b\"}}}}",
		  "IPPool p, allocation 1 (10.0.0.1): no container id" },
		{ "{\"apiVersion\":\"whereabouts.cni.cncf.io/v1alpha1\",\"kind\":\"IPPool\","
		  "\"metadata\":{\"name\":\"p\"},\"spec\":{\"range\":\"10.0.0.0/"
		  "30\",\"allocations\":"
		  "{\"1\":{\"id\":\"c\",\"podref\":\"nons\"}}}}",
		  "podref 'nons' is not namespace/name" },
		{ "{\"items\":[{\"apiVersion\":\"whereabouts.cni.cncf.io/"
		  "v1alpha1\",\"kind\":\"IPPool\","
		  "\"metadata\":{\"name\":\"p\"},\"spec\":{\"range\":\"10.0.0.0/"
		  "30\",\"allocations\":"
		  "{\"1\":{\"id\":\"c\"}}}},{\"apiVersion\":\"whereabouts.cni.cncf.io/v1alpha1\","
		  "\"kind\":\"IPPool\",\"metadata\":{\"name\":\"q\"},\"spec\":{\"range\":\"10.0.0."
		  "0/29\","
		  "\"allocations\":{\"1\":{\"id\":\"d\"}}}}]}",
		  "10.0.0.1 is allocated in IPPool p and in q" },
	};

	for (size_t i = 0; i < RN_ARRAY_SIZE(bad); i++) {
		struct rn_whereabouts_alloc *a = NULL;
		struct rn_error err = { 0 };
		size_t n = 0;

		CHECK(rn_whereabouts_parse(bad[i].json, strlen(bad[i].json), &a, &n, &err) < 0);
		CHECK_CONTAINS(err.msg, bad[i].says);
		CHECK(a == NULL && n == 0);
	}
}

RN_TEST_MAIN(T(add_gives_an_address_and_an_operator_readable_record),
	     T(the_netns_is_recorded_and_a_path_too_long_for_a_record_is_left_out),
	     T(a_repeated_add_returns_the_same_address),
	     T(a_new_sandbox_of_the_pod_takes_its_address_over),
	     T(del_succeeds_when_nothing_is_held_and_only_frees_its_own),
	     T(the_first_add_after_the_last_free_address_fails_clearly),
	     T(dual_stack_gets_one_address_per_range_or_none),
	     T(overlapping_ranges_share_addresses_unless_disabled),
	     T(network_name_separates_the_pools), T(ipv6_slash_64_and_excludes_are_honoured),
	     T(check_confirms_the_record_and_explains_a_miss), T(bad_owner_input_changes_nothing),
	     T(status_reports_an_unusable_data_directory),
	     T(gc_releases_this_nodes_stale_attachments_only),
	     T(list_filters_and_release_drops_one_address), T(repair_sweeps_crash_leftovers),
	     T(a_damaged_attachment_is_rebuilt_by_add_and_released_by_del),
	     T(gc_rebuilds_a_damaged_attachment_and_keeps_its_addresses),
	     T(del_removes_its_own_damaged_address_record),
	     T(damaged_address_records_are_listed_and_removed_only_while_damaged),
	     T(a_failed_undo_of_an_add_reaches_the_message),
	     T(add_at_takes_the_wanted_address_or_says_who_holds_it),
	     T(whereabouts_ippools_are_imported_for_their_pods),
	     T(bad_ippools_are_refused_by_pool_and_key))
