// SPDX-License-Identifier: Apache-2.0
/*
 * Two guards against silently wrong or hanging answers:
 *  - whose netns a sysfs tree shows: its class/net must be exactly the
 *    caller's netdevs (names and ifindexes), else "here" is another netns's
 *    view (nsenter -n keeps the host's /sys);
 *  - files users name are opened without ever blocking: a FIFO, a device,
 *    a socket, a directory are refused with their type, a huge file by size.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "fakesys.h"
#include "rdmans/netns.h"
#include "rdmans/sysfs.h"
#include "rdmans/sysfs_port.h"
#include "rdmans/util.h"
#include "test.h"

/*
 * The snapshot below and the netlink read it is compared with must see the
 * same netdevs: on the host, another suite's veths come and go in between
 * (tests run in parallel). A netns of our own holds only lo; as a user
 * without CAP_SYS_ADMIN, a user namespace gives one. Where neither can be
 * had, the host's is used, as before.
 */
static void private_netns(void)
{
	static bool done;

	if (done)
		return;
	done = true;
	if (unshare(CLONE_NEWNET) == 0 || unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0)
		return;
	fprintf(stderr, "# no private netns (%s): comparing against the host's netdevs\n",
		strerror(errno));
}

/* A fake class/net with this process's own netdevs, as its netns's sysfs shows them. */
static char *tree_of_here(void)
{
	private_netns();
	char *root = fakesys_new();
	struct if_nameindex *ifs = if_nameindex();

	for (struct if_nameindex *i = ifs; i && i->if_index; i++) {
		char rel[256], idx[32];

		snprintf(rel, sizeof(rel), "class/net/%s/ifindex", i->if_name);
		snprintf(idx, sizeof(idx), "%u", i->if_index);
		fakesys_write(root, rel, idx);
	}
	if_freenameindex(ifs);
	return root;
}

static void sysfs_of_this_netns_agrees(void)
{
	struct rn_error err = { 0 };
	char *root = tree_of_here();

	CHECK_INT(rn_sysfs_netdevs_agree(root, &err), 1);
	CHECK(!rn_error_isset(&err));
	fakesys_free(root);
}

static void sysfs_with_another_netdev_is_another_netns(void)
{
	struct rn_error err = { 0 };
	char *root = tree_of_here();

	/* the host's eth2 seen from a pod's netns, as under nsenter -n */
	fakesys_write(root, "class/net/rn-elsewhere0/ifindex", "4242");
	CHECK_INT(rn_sysfs_netdevs_agree(root, &err), 0);
	fakesys_free(root);
}

static void sysfs_missing_a_netdev_is_another_netns(void)
{
	struct rn_error err = { 0 };
	char *root = fakesys_new();

	/* only lo, as a pod's sysfs shows it; this netns has lo and more, or lo only */
	fakesys_write(root, "class/net/lo/ifindex", "1");
	if (if_nametoindex("lo") == 1) {
		struct if_nameindex *ifs = if_nameindex();
		size_t n = 0;

		for (struct if_nameindex *i = ifs; i && i->if_index; i++)
			n++;
		if_freenameindex(ifs);
		CHECK_INT(rn_sysfs_netdevs_agree(root, &err), n == 1);
	} else {
		CHECK_INT(rn_sysfs_netdevs_agree(root, &err), 0);
	}
	fakesys_free(root);
}

static void sysfs_with_a_different_ifindex_is_another_netns(void)
{
	struct rn_error err = { 0 };
	char *root = tree_of_here();

	/* same names, another numbering: lo is 1 in every netns, so renumber it */
	fakesys_write(root, "class/net/lo/ifindex", "7");
	CHECK_INT(rn_sysfs_netdevs_agree(root, &err), 0);
	fakesys_free(root);
}

static void sysfs_without_class_net_is_an_error(void)
{
	struct rn_error err = { 0 };
	char *root = fakesys_new();
	char path[4096];

	snprintf(path, sizeof(path), "%s/class/net", root);
	(void)rmdir(path);
	CHECK(rn_sysfs_netdevs_agree(root, &err) < 0);
	CHECK_CONTAINS(err.msg, "cannot list");
	fakesys_free(root);
}

/* ---- files users name ---- */

static char dir[] = "/tmp/rdmans-views-XXXXXX";
static bool dir_made;

static void remove_dir(void)
{
	const char *names[] = { "fifo", "sock", "big", "conf", "log" };
	char path[256];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		(void)unlink(path);
	}
	(void)rmdir(dir);
}

/* NAME in a directory of the file tests' own, made at the first use and removed at exit. */
static const char *in_dir(const char *name)
{
	static char path[256];

	if (!dir_made) {
		if (!mkdtemp(dir))
			abort();
		dir_made = true;
		atexit(remove_dir);
	}
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return path;
}

static void refused_as(const char *path, const char *type)
{
	struct rn_error err = { 0 };
	char *text = NULL;

	CHECK_INT(rn_read_regular(path, 4096, "config file", &text, NULL, &err), -EINVAL);
	CHECK(text == NULL);
	CHECK_CONTAINS(err.msg, "config file ");
	CHECK_CONTAINS(err.msg, type);
	CHECK_CONTAINS(err.msg, "not a regular file");
	rn_error_clear(&err);
	CHECK_INT(rn_open_regular(AT_FDCWD, path, O_WRONLY | O_APPEND | O_CREAT, 0600, "log_file",
				  &err),
		  -EINVAL);
	CHECK_CONTAINS(err.msg, type);
}

static void a_fifo_is_refused_without_blocking(void)
{
	const char *fifo = in_dir("fifo");

	/* no writer ever comes: a plain open() for reading would block forever */
	CHECK_INT(mkfifo(fifo, 0600), 0);
	refused_as(fifo, "is a FIFO");
}

static void a_character_device_is_refused(void)
{
	refused_as("/dev/null", "is a character device");
	refused_as("/dev/zero", "is a character device");
}

static void a_directory_is_refused(void)
{
	refused_as(dir, "is a directory");
}

static void a_socket_is_refused(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	const char *path = in_dir("sock");

	if (strlen(path) >= sizeof(sa.sun_path))
		abort();
	memcpy(sa.sun_path, path, strlen(path) + 1);
	CHECK(fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	refused_as(in_dir("sock"), "is a socket");
	close(fd);
}

static void a_huge_file_is_refused_by_size(void)
{
	struct rn_error err = { 0 };
	const char *big = in_dir("big");
	char *text = NULL;
	int fd = open(big, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);

	CHECK(fd >= 0 && ftruncate(fd, (off_t)1 << 30) == 0); /* sparse: 1 GiB */
	close(fd);
	CHECK_INT(rn_read_regular(big, 1 << 16, "config file", &text, NULL, &err), -EFBIG);
	CHECK_CONTAINS(err.msg, "is larger than 65536 bytes");
	CHECK(text == NULL);
}

static void a_regular_file_is_read_and_created(void)
{
	struct rn_error err = { 0 };
	const char *conf = in_dir("conf"), *log = in_dir("log");
	char *text = NULL;
	size_t len = 0;
	int fd = open(conf, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);

	CHECK(fd >= 0 && write(fd, "{\"a\":1}", 7) == 7);
	close(fd);
	CHECK_INT(rn_read_regular(conf, 4096, "config file", &text, &len, &err), 0);
	CHECK_STR(text, "{\"a\":1}");
	CHECK_INT(len, 7);
	free(text);
	fd = rn_open_regular(AT_FDCWD, log, O_WRONLY | O_APPEND | O_CREAT, 0600, "log_file", &err);
	CHECK(fd >= 0);
	/* O_NONBLOCK was only for the open */
	CHECK(fd >= 0 && !(fcntl(fd, F_GETFL) & O_NONBLOCK) && (fcntl(fd, F_GETFD) & FD_CLOEXEC));
	if (fd >= 0)
		close(fd);
	CHECK_INT(access(log, F_OK), 0);
}

static void a_missing_file_says_so(void)
{
	struct rn_error err = { 0 };
	char *text = NULL;

	CHECK_INT(rn_read_regular(in_dir("none"), 4096, "config file", &text, NULL, &err), -ENOENT);
	CHECK_CONTAINS(err.msg, "No such file");
}

/* ---- stdin that stays open: a whole document is enough ---- */

static bool complete(const char *text)
{
	return rn_json_complete(text, strlen(text));
}

static void json_complete_sees_a_whole_object(void)
{
	CHECK(complete("{}"));
	CHECK(complete("  \n{\"cniVersion\":\"1.0.0\",\"ipam\":{\"ranges\":[[{}]]}}"));
	CHECK(complete("[1,2,{\"a\":[]}]"));
	CHECK(complete("{\"a\":1}\n")); /* what follows is the strict parser's business */
}

static void json_complete_waits_for_the_rest(void)
{
	CHECK(!complete(""));
	CHECK(!complete("   "));
	CHECK(!complete("{"));
	CHECK(!complete("{\"a\":{\"b\":1}"));
	CHECK(!complete("[[]"));
	/* braces inside strings, escaped quotes */
	CHECK(!complete("{\"}\":\"}"));
	CHECK(complete("{\"}\":\"}\"}"));
	CHECK(!complete("{\"a\":\"\\\"}\""));
	CHECK(complete("{\"a\":\"\\\"}\"}"));
	CHECK(complete("{\"a\":\"\\\\\"}"));
}

static void json_complete_never_for_scalars(void)
{
	/* "12" may go on as "123": only an object or array ends itself */
	CHECK(!complete("12"));
	CHECK(!complete("\"text\""));
	CHECK(!complete("null"));
}

RN_TEST_MAIN(T(sysfs_of_this_netns_agrees), T(sysfs_with_another_netdev_is_another_netns),
	     T(sysfs_missing_a_netdev_is_another_netns),
	     T(sysfs_with_a_different_ifindex_is_another_netns),
	     T(sysfs_without_class_net_is_an_error), T(a_fifo_is_refused_without_blocking),
	     T(a_character_device_is_refused), T(a_directory_is_refused), T(a_socket_is_refused),
	     T(a_huge_file_is_refused_by_size), T(a_regular_file_is_read_and_created),
	     T(a_missing_file_says_so), T(json_complete_sees_a_whole_object),
	     T(json_complete_waits_for_the_rest), T(json_complete_never_for_scalars))
