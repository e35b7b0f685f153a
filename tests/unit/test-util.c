// SPDX-License-Identifier: Apache-2.0
/* Name checks, strict PID parsing, the bounded string copy: what reaches paths and netlink. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rdmans/cleanup.h"
#include "rdmans/nccl_conf.h"
#include "rdmans/rootfs.h"
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
	/* not "must not contain '..'", which "." does not */
	CHECK_STR(err.msg, "RDMA device name '.' is not allowed: it names a directory");
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

static void cni_name_check_follows_the_cni_rule_for_ids_and_network_names(void)
{
	struct rn_error err = { 0 };

	CHECK_INT(rn_cni_name_check("container ID", "a1b2-c3_d4.e5", 255, &err), 0);
	CHECK_INT(rn_cni_name_check("container ID", "", 255, &err), -EINVAL);
	CHECK_STR(err.msg, "container ID is empty");
	CHECK_INT(rn_cni_name_check("container ID", "-abc", 255, &err), -EINVAL);
	CHECK_STR(err.msg, "container ID '-abc' must start with a letter or a digit");
	CHECK_INT(rn_cni_name_check("network name", "a/b", 255, &err), -EINVAL);
	CHECK_STR(err.msg, "network name 'a/b' may only contain letters, digits, '_', '.' and '-'");
	CHECK_INT(rn_cni_name_check("container ID", "abcd", 4, &err), 0);
	CHECK_INT(rn_cni_name_check("container ID", "abcde", 4, &err), -EINVAL);
	CHECK_STR(err.msg, "container ID 'abcde' is too long (5 bytes, at most 4)");
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

/* The checks of rn_open_beneath() in a scratch directory; 0 when all hold. */
static int beneath_checks(void)
{
	char dir[] = "/tmp/rn-beneath-XXXXXX", path[128], cmd[160];
	int dfd, fd, bad = 0;

	if (!mkdtemp(dir))
		return 1;
	snprintf(path, sizeof(path), "%s/real", dir);
	bad |= mkdir(path, 0700) != 0;
	snprintf(path, sizeof(path), "%s/real/f", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	bad |= fd < 0;
	close(fd);
	snprintf(path, sizeof(path), "%s/link", dir);
	bad |= symlink("real", path) != 0;
	snprintf(path, sizeof(path), "%s/flink", dir);
	bad |= symlink("real/f", path) != 0;
	dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	bad |= dfd < 0;

	fd = rn_open_beneath(dfd, "real/f", O_RDONLY, 0);
	bad |= fd < 0;
	close(fd);
	fd = rn_open_beneath(dfd, "real", O_PATH | O_DIRECTORY, 0);
	bad |= fd < 0;
	close(fd);
	bad |= rn_open_beneath(dfd, "link/f", O_RDONLY, 0) != -ELOOP;
	bad |= rn_open_beneath(dfd, "link/new", O_WRONLY | O_CREAT, 0600) != -ELOOP;
	bad |= rn_open_beneath(dfd, "flink", O_RDONLY, 0) != -ELOOP;
	bad |= rn_open_beneath(dfd, "../etc/passwd", O_RDONLY, 0) != -EXDEV;
	bad |= rn_open_beneath(dfd, "/etc/passwd", O_RDONLY, 0) != -EXDEV;
	bad |= rn_open_beneath(dfd, "real/none", O_RDONLY, 0) != -ENOENT;
	/* nothing was created through the link */
	snprintf(path, sizeof(path), "%s/real/new", dir);
	bad |= access(path, F_OK) == 0;
	close(dfd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	bad |= system(cmd) != 0;
	return bad;
}

static void open_beneath_refuses_symlinks_on_the_way_and_escapes(void)
{
	CHECK_INT(beneath_checks(), 0);
}

/*
 * Runs checks() in a child where openat2 fails with ENOSYS, as on kernels
 * before 5.6; its exit status (0: every check held).
 */
static int without_openat2(int (*checks)(void))
{
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat2, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(filter) / sizeof(filter[0]), .filter = filter };
	int status = -1;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
		    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
			_exit(2);
		_exit(syscall(SYS_openat2, AT_FDCWD, ".", NULL, 0) == -1 && errno == ENOSYS
			      ? checks()
			      : 3);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/* Kernels before 5.6 have no openat2: the component walk must refuse the same. */
static void open_beneath_without_openat2_refuses_the_same(void)
{
	CHECK_INT(without_openat2(beneath_checks), 0);
}

static void strscpy_copies_what_fits_and_says_when_it_cut(void)
{
	char buf[6];

	memset(buf, 'x', sizeof(buf));
	CHECK_INT(rn_strscpy(buf, sizeof(buf), "mlx5"), 4);
	CHECK_STR(buf, "mlx5");
	CHECK_INT(rn_strscpy(buf, sizeof(buf), "mlx5_"), 5);
	CHECK_STR(buf, "mlx5_");
	CHECK_INT(rn_strscpy(buf, sizeof(buf), "mlx5_0"), -E2BIG);
	CHECK_STR(buf, "mlx5_");
	CHECK_INT(rn_strscpy(buf, sizeof(buf), NULL), 0);
	CHECK_STR(buf, "");
	CHECK_INT(rn_strscpy(buf, 1, "a"), -E2BIG);
	CHECK_STR(buf, "");
	buf[0] = 'q';
	CHECK_INT(rn_strscpy(buf, 0, "a"), -E2BIG);
	CHECK_INT(buf[0], 'q');
}

static void snprintf_says_when_it_cut_and_shows_it(void)
{
	char buf[8];

	CHECK_INT(rn_snprintf(buf, sizeof(buf), "%s%d", "mlx", 5), 4);
	CHECK_STR(buf, "mlx5");
	CHECK_INT(rn_snprintf(buf, sizeof(buf), "%s", "1234567"), 7);
	CHECK_STR(buf, "1234567");
	CHECK_INT(rn_snprintf(buf, sizeof(buf), "%s", "12345678"), -E2BIG);
	CHECK_STR(buf, "1234...");
	CHECK_INT(rn_snprintf(buf, 3, "%s", "abc"), -E2BIG);
	CHECK_STR(buf, "ab");
}

/* In a scratch root, "esc" -> "/etc": 0 when rn_rootfs_openat() of "esc/passwd" gives `expect`. */
static int in_root_check(int expect)
{
	char dir[] = "/tmp/rn-inroot-XXXXXX", path[128], cmd[160];
	int dfd, fd, bad = 0;

	if (!mkdtemp(dir))
		return 1;
	snprintf(path, sizeof(path), "%s/esc", dir);
	bad |= symlink("/etc", path) != 0;
	dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	bad |= dfd < 0;
	fd = rn_rootfs_openat(dfd, "esc/passwd", O_RDONLY);
	bad |= fd != expect;
	if (fd >= 0)
		close(fd);
	close(dfd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	bad |= system(cmd) != 0;
	return bad;
}

static void open_in_root_resolves_inside_the_root(void)
{
	/* /etc inside the scratch root has no passwd: the host's is never reached */
	CHECK_INT(in_root_check(-ENOENT), 0);
}

static int in_root_refused(void)
{
	return in_root_check(-ENOSYS);
}

/* Without openat2 a path inside a container's root cannot be confined: it is refused. */
static void open_in_root_without_openat2_is_refused_not_unconfined(void)
{
	CHECK_INT(without_openat2(in_root_refused), 0);
}

struct conf_seen {
	char text[4096];
	size_t n;
};

static int conf_collect(const char *name, size_t name_len, const char *value, size_t value_len,
			void *arg)
{
	struct conf_seen *s = arg;

	s->n += (size_t)snprintf(s->text + s->n, sizeof(s->text) - s->n, "[%.*s|%zu]",
				 (int)name_len, name, value_len);
	return strncmp(name, "STOP", name_len) == 0 ? 7 : 0;
}

static void nccl_conf_lines_are_read_as_nccl_reads_them(void)
{
	char text[2200];
	struct conf_seen seen = { 0 };
	char value[16];

	snprintf(text, sizeof(text),
		 "#NCCL_A=1\nNCCL_B=x=y\nNOEQ\n\nNCCL_C=%01500d\nSTOP=1\nAFTER=2\n", 0);
	CHECK_INT(rn_nccl_conf_each(text, conf_collect, &seen), 7);
	/* comments and lines without '=' skipped; the name to the first '='; 1023 bytes at most */
	CHECK_STR(seen.text, "[NCCL_B|3][NCCL_C|1023][STOP|1]");
	CHECK(rn_nccl_conf_value(text, "NCCL_B", value, sizeof(value)));
	CHECK_STR(value, "x=y");
	CHECK(!rn_nccl_conf_value(text, "NCCL_A", value, sizeof(value)));
	CHECK(!rn_nccl_conf_value(text, "NCCL_C", value, sizeof(value))); /* never returned cut */
}

static void grow_doubles_with_a_cap_and_is_exact_without(void)
{
	uint32_t *v = NULL;
	size_t cap = 0;

	CHECK_INT(RN_GROW(v, &cap, 1), 0);
	CHECK(v != NULL);
	CHECK_INT((int)cap, 8);
	v[7] = 7;
	CHECK_INT(RN_GROW(v, &cap, 8), 0);
	CHECK_INT((int)cap, 8);
	CHECK_INT(RN_GROW(v, &cap, 9), 0);
	CHECK_INT((int)cap, 16);
	CHECK_INT((int)v[7], 7);
	CHECK_INT(RN_GROW(v, &cap, 100), 0);
	CHECK_INT((int)cap, 100);
	v[99] = 99;
	CHECK_INT(RN_GROW(v, NULL, 101), 0);
	v[100] = 100;
	CHECK_INT((int)v[99], 99);
	/* an absurd count is refused and leaves the array as it was */
	CHECK_INT(RN_GROW(v, &cap, SIZE_MAX / 2), -ENOMEM);
	CHECK_INT((int)cap, 100);
	CHECK_INT((int)v[7], 7);
	free(v);
}

__attribute__((format(printf, 1, 2))) static char *format_args(const char *fmt, ...)
{
	return RN_FORMAT_ARGS(fmt);
}

static void format_args_formats_the_callers_own_arguments(void)
{
	char big[10000];
	char *s;

	s = format_args("%s port %u: %d%%", "mlx5_0", 1u, -3);
	CHECK_STR(s, "mlx5_0 port 1: -3%");
	free(s);
	s = format_args("%s", "");
	CHECK_STR(s, "");
	free(s);
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	s = format_args("%s!", big);
	CHECK(s != NULL);
	CHECK_INT((int)strlen(s), (int)sizeof(big));
	CHECK_INT(s[sizeof(big) - 1], '!');
	free(s);
}

static void json_value_end_skips_one_value_whatever_it_holds(void)
{
	/* { text, start, expected end (SIZE_MAX: text ends first) } */
	static const struct {
		const char *text;
		size_t at, end;
	} cases[] = {
		{ "{\"a\":[1,{\"b\":\"}]\"}]} tail", 0, 20 },
		{ "\"x\\\"y\" ,", 0, 6 },
		{ "\"\\\\\"]", 0, 4 },
		{ "[\"]\"] ", 0, 5 },
		{ "18446744073709551615,", 0, 20 },
		{ "-0.1e5}", 0, 6 },
		{ "true]", 0, 4 },
		{ "{\"a\":1} ", 5, 6 },
		{ "{\"a\":[1,2}", 0, SIZE_MAX },
		{ "\"abc", 0, SIZE_MAX },
		{ "\"ab\\", 0, SIZE_MAX },
		{ "", 0, SIZE_MAX },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t end = rn_json_value_end(cases[i].text, strlen(cases[i].text), cases[i].at);

		if (end != cases[i].end) {
			printf("# '%s' from %zu: %zu, expected %zu\n", cases[i].text, cases[i].at,
			       end, cases[i].end);
			rn_test_failed = 1;
		}
	}
}

static void mkdir_p_makes_each_missing_directory_with_its_mode(void)
{
	char dir[] = "/tmp/rdmans-mkdir-XXXXXX", path[256], cmd[300];
	struct rn_error err = { 0 };
	mode_t mask = umask(0);
	struct stat st;

	umask(mask);
	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/a/b/c", dir);
	CHECK_INT(rn_mkdir_p(path, 0755, 0700, &err), 0);
	CHECK(stat(path, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 0777) == (0700 & ~mask));
	snprintf(path, sizeof(path), "%s/a/b", dir);
	CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == (0755 & ~mask));
	/* there already: nothing to do */
	snprintf(path, sizeof(path), "%s/a/b/c", dir);
	CHECK_INT(rn_mkdir_p(path, 0755, 0700, &err), 0);
	/* a file on the way: the error names the component, not the whole path */
	snprintf(path, sizeof(path), "%s/file", dir);
	CHECK(close(open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600)) == 0);
	snprintf(path, sizeof(path), "%s/file/x/y", dir);
	CHECK_INT(rn_mkdir_p(path, 0755, 0700, &err), -ENOTDIR);
	snprintf(path, sizeof(path), "%s/file/x", dir);
	CHECK_CONTAINS(err.msg, path);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	CHECK(system(cmd) == 0);
}

static void write_atomic_replaces_the_file_and_leaves_no_temporary(void)
{
	char dir[] = "/tmp/rdmans-atomic-XXXXXX", path[256], cmd[300];
	_cleanup_free_ char *text = NULL;
	struct rn_error err = { 0 };
	struct stat st;
	int n = 0;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/state", dir);
	CHECK_INT(rn_write_atomic(path, "old\n", 4, 0600, true, "state file", &err), 0);
	CHECK_INT(rn_write_atomic(path, "new", 3, 0600, false, "state file", &err), 0);
	CHECK_INT(rn_read_regular(path, 64, NULL, &text, NULL, &err), 0);
	CHECK_STR(text, "new");
	CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
	{
		_cleanup_closedir_ DIR *d = opendir(dir);

		while (d && readdir(d))
			n++;
	}
	CHECK_INT(n, 3); /* ".", ".." and the file: no temporary left */
	/* a directory that is not there: an error naming the file, nothing made */
	snprintf(path, sizeof(path), "%s/none/state", dir);
	CHECK_INT(rn_write_atomic(path, "x", 1, 0600, false, "state file", &err), -ENOENT);
	CHECK_CONTAINS(err.msg, "cannot create state file");
	snprintf(path, sizeof(path), "%s/none", dir);
	CHECK(access(path, F_OK) != 0);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	CHECK(system(cmd) == 0);
}

RN_TEST_MAIN(T(name_check_accepts_real_device_names), T(name_check_refuses_empty_names),
	     T(name_check_refuses_path_tricks), T(name_check_refuses_spaces_and_control_characters),
	     T(name_check_refuses_names_over_the_limit),
	     T(name_check_works_without_an_error_object),
	     T(cni_name_check_follows_the_cni_rule_for_ids_and_network_names),
	     T(parse_pid_reads_plain_decimal), T(parse_pid_refuses_anything_else),
	     T(open_beneath_refuses_symlinks_on_the_way_and_escapes),
	     T(open_beneath_without_openat2_refuses_the_same),
	     T(strscpy_copies_what_fits_and_says_when_it_cut),
	     T(snprintf_says_when_it_cut_and_shows_it), T(open_in_root_resolves_inside_the_root),
	     T(open_in_root_without_openat2_is_refused_not_unconfined),
	     T(nccl_conf_lines_are_read_as_nccl_reads_them),
	     T(grow_doubles_with_a_cap_and_is_exact_without),
	     T(format_args_formats_the_callers_own_arguments),
	     T(json_value_end_skips_one_value_whatever_it_holds),
	     T(mkdir_p_makes_each_missing_directory_with_its_mode),
	     T(write_atomic_replaces_the_file_and_leaves_no_temporary))
