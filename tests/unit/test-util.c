// SPDX-License-Identifier: Apache-2.0
/* Name checks and strict PID parsing: what reaches paths and netlink. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "rdmans/util.h"
#include "test.h"

static void name_check_accepts_real_device_names(void)
{
	struct rn_error err = { 0 };

	CHECK_INT(rn_name_check("RDMA device", "mlx5_0", 63, &err), 0);
	CHECK_INT(rn_name_check("RDMA device", "mlx5_bond_0", 63, &err), 0);
	CHECK_INT(rn_name_check("RDMA device", "irdma0", 63, &err), 0);
	CHECK_INT(rn_name_check("RDMA device", "erdma_0", 63, &err), 0);
	CHECK_INT(rn_name_check("netdev", "ens1f0np0", 15, &err), 0);
	CHECK_INT(rn_name_check("netdev", "eth0.100", 15, &err), 0);
	CHECK_INT(rn_name_check("bus device", "0000:3b:00.0", 63, &err), 0);
	CHECK_INT(rn_name_check("bus device", "ice.roce.0", 63, &err), 0);
	CHECK(!rn_error_isset(&err));
}

static void name_check_refuses_empty_names(void)
{
	struct rn_error err = { 0 };

	CHECK_INT(rn_name_check("netdev", "", 15, &err), -EINVAL);
	CHECK_INT(err.code, EINVAL);
	CHECK_STR(err.msg, "netdev name is empty");
	CHECK_INT(rn_name_check("netdev", NULL, 15, &err), -EINVAL);
}

static void name_check_refuses_path_tricks(void)
{
	struct rn_error err = { 0 };

	CHECK_INT(rn_name_check("RDMA device", "..", 63, &err), -EINVAL);
	CHECK_CONTAINS(err.msg, "'..'");
	CHECK_INT(rn_name_check("RDMA device", ".", 63, &err), -EINVAL);
	CHECK_INT(rn_name_check("RDMA device", "a..b", 63, &err), -EINVAL);
	CHECK_INT(rn_name_check("RDMA device", "../../etc", 63, &err), -EINVAL);
	rn_error_clear(&err);
	CHECK_INT(rn_name_check("RDMA device", "mlx5_0/ports", 63, &err), -EINVAL);
	CHECK_STR(err.msg, "RDMA device name 'mlx5_0/ports' must not contain '/'");
}

static void name_check_refuses_spaces_and_control_characters(void)
{
	struct rn_error err = { 0 };

	CHECK_INT(rn_name_check("netdev", "eth 0", 15, &err), -EINVAL);
	CHECK_CONTAINS(err.msg, "spaces or control characters");
	CHECK_INT(rn_name_check("netdev", "eth0\n", 15, &err), -EINVAL);
	CHECK_INT(rn_name_check("netdev", "eth\t0", 15, &err), -EINVAL);
	CHECK_INT(rn_name_check("netdev", "eth\x01", 15, &err), -EINVAL);
}

static void name_check_refuses_names_over_the_limit(void)
{
	struct rn_error err = { 0 };

	/* IFNAMSIZ is 16: 15 bytes fit, 16 do not */
	CHECK_INT(rn_name_check("netdev", "abcdefghijklmno", 15, &err), 0);
	CHECK_INT(rn_name_check("netdev", "abcdefghijklmnop", 15, &err), -EINVAL);
	CHECK_STR(err.msg, "netdev name 'abcdefghijklmnop' is too long (16 bytes, at most 15)");
}

static void name_check_works_without_an_error_object(void)
{
	CHECK_INT(rn_name_check("netdev", "", 15, NULL), -EINVAL);
	CHECK_INT(rn_name_check("netdev", "eth0", 15, NULL), 0);
}

static void parse_pid_reads_plain_decimal(void)
{
	pid_t pid = 0;

	CHECK_INT(rn_parse_pid("1", &pid), 0);
	CHECK_INT(pid, 1);
	CHECK_INT(rn_parse_pid("18999", &pid), 0);
	CHECK_INT(pid, 18999);
	CHECK_INT(rn_parse_pid("2147483647", &pid), 0);
	CHECK_INT(pid, 2147483647);
}

static void parse_pid_refuses_anything_else(void)
{
	pid_t pid = 77;

	CHECK_INT(rn_parse_pid("", &pid), -EINVAL);
	CHECK_INT(rn_parse_pid(NULL, &pid), -EINVAL);
	CHECK_INT(rn_parse_pid("0", &pid), -EINVAL);
	CHECK_INT(rn_parse_pid("-1", &pid), -EINVAL);
	CHECK_INT(rn_parse_pid("+5", &pid), -EINVAL);
	CHECK_INT(rn_parse_pid(" 5", &pid), -EINVAL);
	CHECK_INT(rn_parse_pid("5 ", &pid), -EINVAL);
	CHECK_INT(rn_parse_pid("5\n", &pid), -EINVAL);
	CHECK_INT(rn_parse_pid("12ab", &pid), -EINVAL);
	CHECK_INT(rn_parse_pid("0x10", &pid), -EINVAL);
	CHECK_INT(rn_parse_pid("2147483648", &pid), -EINVAL);
	CHECK_INT(rn_parse_pid("99999999999999999999", &pid), -EINVAL);
	/* a refused parse leaves the output alone */
	CHECK_INT(pid, 77);
}

static void open_beneath_refuses_symlinks_on_the_way_and_escapes(void)
{
	char dir[] = "/tmp/rn-beneath-XXXXXX", path[128], cmd[160];
	int dfd, fd;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/real", dir);
	CHECK(mkdir(path, 0700) == 0);
	snprintf(path, sizeof(path), "%s/real/f", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	CHECK(fd >= 0);
	close(fd);
	snprintf(path, sizeof(path), "%s/link", dir);
	CHECK(symlink("real", path) == 0);
	snprintf(path, sizeof(path), "%s/flink", dir);
	CHECK(symlink("real/f", path) == 0);
	dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	CHECK(dfd >= 0);

	fd = rn_open_beneath(dfd, "real/f", O_RDONLY, 0);
	CHECK(fd >= 0);
	close(fd);
	CHECK_INT(rn_open_beneath(dfd, "link/f", O_RDONLY, 0), -ELOOP);
	CHECK_INT(rn_open_beneath(dfd, "link/new", O_WRONLY | O_CREAT, 0600), -ELOOP);
	CHECK_INT(rn_open_beneath(dfd, "flink", O_RDONLY, 0), -ELOOP);
	CHECK_INT(rn_open_beneath(dfd, "../etc/passwd", O_RDONLY, 0), -EXDEV);
	CHECK_INT(rn_open_beneath(dfd, "/etc/passwd", O_RDONLY, 0), -EXDEV);
	CHECK_INT(rn_open_beneath(dfd, "real/none", O_RDONLY, 0), -ENOENT);
	/* nothing was created through the link */
	snprintf(path, sizeof(path), "%s/real/new", dir);
	CHECK(access(path, F_OK) < 0);
	close(dfd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	CHECK_INT(system(cmd), 0);
}

RN_TEST_MAIN(T(name_check_accepts_real_device_names), T(name_check_refuses_empty_names),
	     T(name_check_refuses_path_tricks), T(name_check_refuses_spaces_and_control_characters),
	     T(name_check_refuses_names_over_the_limit),
	     T(name_check_works_without_an_error_object), T(parse_pid_reads_plain_decimal),
	     T(parse_pid_refuses_anything_else),
	     T(open_beneath_refuses_symlinks_on_the_way_and_escapes))
