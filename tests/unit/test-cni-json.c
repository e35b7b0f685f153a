// SPDX-License-Identifier: Apache-2.0
/*
 * The CNI protocol module both plugins use (rdmans/cni_protocol.h): CNI_ARGS,
 * the version table, the documents on stdout, the CNI_* environment and the
 * bounded read of stdin.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rdmans/cni_protocol.h"
#include "test.h"

/* ---- CNI_ARGS ---- */

static void args_empty_pairs_and_nothing_are_no_arguments(void)
{
	const char *empty[] = { NULL, "", ";", ";;;" };
	struct rn_cni_args a;
	struct rn_error err = { 0 };

	for (size_t i = 0; i < sizeof(empty) / sizeof(empty[0]); i++) {
		memset(&a, 'x', sizeof(a));
		CHECK_INT(rn_cni_args_parse(empty[i], &a, &err), 0);
		CHECK_STR(a.pod_namespace, "");
		CHECK_STR(a.pod_name, "");
		CHECK_STR(a.pod_uid, "");
		CHECK_STR(a.infra_id, "");
	}
	CHECK_INT(rn_cni_args_parse(";K8S_POD_NAME=a;;K8S_POD_NAMESPACE=b;", &a, &err), 0);
	CHECK_STR(a.pod_name, "a");
	CHECK_STR(a.pod_namespace, "b");
}

static void args_give_the_pod_and_ignore_other_keys(void)
{
	struct rn_cni_args a;
	struct rn_error err = { 0 };

	CHECK_INT(rn_cni_args_parse("IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=pod-a;"
				    "K8S_POD_UID=0a1b;K8S_POD_INFRA_CONTAINER_ID=c0ffee;Other=x",
				    &a, &err),
		  0);
	CHECK_STR(a.pod_namespace, "default");
	CHECK_STR(a.pod_name, "pod-a");
	CHECK_STR(a.pod_uid, "0a1b");
	CHECK_STR(a.infra_id, "c0ffee");
	/* IgnoreUnknown is not needed: unknown keys are ignored either way (podman sends none) */
	CHECK_INT(rn_cni_args_parse("K8S_POD_NAME=p;SomethingNew=1", &a, &err), 0);
	CHECK_STR(a.pod_name, "p");
	CHECK_STR(a.pod_namespace, "");
	/* a key is matched whole: a prefix of a known key is another key */
	CHECK_INT(rn_cni_args_parse("K8S_POD=x;K8S_POD_NAMESPACEX=y", &a, &err), 0);
	CHECK_STR(a.pod_name, "");
	CHECK_STR(a.pod_namespace, "");
}

static void args_duplicate_key_keeps_the_last_value(void)
{
	struct rn_cni_args a;
	struct rn_error err = { 0 };

	CHECK_INT(rn_cni_args_parse("K8S_POD_NAME=first;K8S_POD_NAME=second", &a, &err), 0);
	CHECK_STR(a.pod_name, "second");
	CHECK_INT(rn_cni_args_parse("K8S_POD_NAME=long-first-name;K8S_POD_NAME=s", &a, &err), 0);
	CHECK_STR(a.pod_name, "s");
}

static void args_value_is_everything_after_the_first_equals(void)
{
	struct rn_cni_args a;
	struct rn_error err = { 0 };

	CHECK_INT(rn_cni_args_parse("K8S_POD_NAME=a=b=c", &a, &err), 0);
	CHECK_STR(a.pod_name, "a=b=c");
	CHECK_INT(rn_cni_args_parse("K8S_POD_NAME=", &a, &err), 0);
	CHECK_STR(a.pod_name, "");
}

static void args_pair_without_equals_or_key_is_refused(void)
{
	const char *bad[] = { "K8S_POD_NAME", "=x", "K8S_POD_NAME=a;junk", "a=b;=;c=d" };
	struct rn_cni_args a;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct rn_error err = { 0 };

		CHECK_INT(rn_cni_args_parse(bad[i], &a, &err), -EINVAL);
		CHECK_INT(err.code, EINVAL);
		CHECK_CONTAINS(err.msg, "CNI_ARGS is malformed at '");
		CHECK_CONTAINS(err.msg, "(expected KEY=VALUE;KEY=VALUE)");
	}
	{
		struct rn_error err = { 0 };

		CHECK_INT(rn_cni_args_parse("K8S_POD_NAME=a;junk;K8S_POD_NAMESPACE=b", &a, &err),
			  -EINVAL);
		CHECK_CONTAINS(err.msg, "malformed at 'junk'");
	}
}

static void args_over_long_or_multiline_value_is_refused(void)
{
	char args[600];
	struct rn_cni_args a;
	struct rn_error err = { 0 };

	/* K8S_POD_NAME holds 255 bytes, K8S_POD_UID 127 */
	snprintf(args, sizeof(args), "K8S_POD_NAME=%0255d", 0);
	CHECK_INT(rn_cni_args_parse(args, &a, &err), 0);
	CHECK_INT(strlen(a.pod_name), 255);
	snprintf(args, sizeof(args), "K8S_POD_NAME=%0256d", 0);
	CHECK_INT(rn_cni_args_parse(args, &a, &err), -EINVAL);
	CHECK_CONTAINS(err.msg, "CNI_ARGS: K8S_POD_NAME is too long or not one line (at most 255");
	snprintf(args, sizeof(args), "K8S_POD_UID=%0127d", 0);
	CHECK_INT(rn_cni_args_parse(args, &a, &err), 0);
	snprintf(args, sizeof(args), "K8S_POD_UID=%0128d", 0);
	CHECK_INT(rn_cni_args_parse(args, &a, &err), -EINVAL);
	CHECK_CONTAINS(err.msg, "K8S_POD_UID is too long");
	CHECK_INT(rn_cni_args_parse("K8S_POD_NAMESPACE=a\nb", &a, &err), -EINVAL);
	CHECK_CONTAINS(err.msg, "K8S_POD_NAMESPACE is too long or not one line");
	/* a key nobody reads may hold anything */
	snprintf(args, sizeof(args), "Other=%0500d;More=a\nb;K8S_POD_NAME=p", 0);
	CHECK_INT(rn_cni_args_parse(args, &a, &err), 0);
	CHECK_STR(a.pod_name, "p");
}

/* ---- versions ---- */

static void version_table_numbers_every_version(void)
{
	const char *names[] = { "0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0" };
	const int numbers[] = { 10, 20, 30, 31, 40, 100, 110 };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		CHECK_INT(rn_cni_version_parse(names[i]), numbers[i]);
	CHECK_INT(rn_cni_version_parse(RN_CNI_VERSION_LATEST), 110);
	CHECK_INT(rn_cni_version_parse("1.2.0"), -1);
	CHECK_INT(rn_cni_version_parse("1.0"), -1);
	CHECK_INT(rn_cni_version_parse(""), -1);
	CHECK_INT(rn_cni_version_parse(NULL), -1);
}

static void version_check_refuses_older_than_the_plugin_and_lists_its_own(void)
{
	struct rn_error err = { 0 };

	CHECK_INT(rn_cni_version_check("0.3.0", 30, "rdma-netns", &err), 30);
	CHECK_INT(rn_cni_version_check("1.1.0", 30, "rdma-netns", &err), 110);
	CHECK_INT(rn_cni_version_check("0.2.0", 30, "rdma-netns", &err), -EPROTONOSUPPORT);
	CHECK_STR(err.msg, "CNI version 0.2.0 is not supported by rdma-netns (it supports 0.3.0, "
			   "0.3.1, 0.4.0, 1.0.0 and 1.1.0)");
	CHECK_INT(rn_cni_version_check("0.1.0", 10, "rdma-netns-ipam", &err), 10);
	CHECK_INT(rn_cni_version_check("2.0.0", 10, "rdma-netns-ipam", &err), -EPROTONOSUPPORT);
	CHECK_STR(err.msg, "CNI version 2.0.0 is not supported by rdma-netns-ipam (it supports "
			   "0.1.0, 0.2.0, 0.3.0, 0.3.1, 0.4.0, 1.0.0 and 1.1.0)");
	CHECK_INT(rn_cni_version_check(NULL, 10, "p", &err), -EPROTONOSUPPORT);
	CHECK_CONTAINS(err.msg, "CNI version (none) is not supported by p");
}

/* ---- output ---- */

/* Whether the last capture() ended in a newline (cut off from buf). */
static bool captured_newline;

/* What fn(arg) writes to stdout, in buf without its final newline; its return value. */
static int capture(int (*fn)(const void *arg), const void *arg, char *buf, size_t len)
{
	int fd = memfd_create("stdout", MFD_CLOEXEC), saved = dup(STDOUT_FILENO), r;
	ssize_t n;

	if (fd < 0 || saved < 0)
		abort();
	fflush(stdout);
	dup2(fd, STDOUT_FILENO);
	r = fn(arg);
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	n = pread(fd, buf, len - 1, 0);
	buf[n > 0 ? n : 0] = '\0';
	captured_newline = n > 0 && buf[n - 1] == '\n';
	if (captured_newline)
		buf[n - 1] = '\0';
	close(fd);
	return r;
}

struct error_doc {
	const char *version, *msg, *details;
	int code;
};

static int print_error(const void *arg)
{
	const struct error_doc *e = arg;

	return rn_cni_print_error(e->version, e->code, e->msg, e->details);
}

static void error_document_has_code_msg_and_details(void)
{
	char out[512];

	CHECK_INT(capture(print_error,
			  &(struct error_doc){ "1.0.0", "CNI_ARGS is not K=V;K=V", "why", 4 }, out,
			  sizeof(out)),
		  0);
	CHECK_STR(out, "{\"cniVersion\":\"1.0.0\",\"code\":4,\"msg\":\"CNI_ARGS is not "
		       "K=V;K=V\",\"details\":\"why\"}");
	CHECK(captured_newline); /* one document, one line */
	/* no details: no key (NULL or "") */
	capture(print_error, &(struct error_doc){ "0.4.0", "m", NULL, 107 }, out, sizeof(out));
	CHECK_STR(out, "{\"cniVersion\":\"0.4.0\",\"code\":107,\"msg\":\"m\"}");
	capture(print_error, &(struct error_doc){ "0.4.0", "m", "", 7 }, out, sizeof(out));
	CHECK_STR(out, "{\"cniVersion\":\"0.4.0\",\"code\":7,\"msg\":\"m\"}");
	/* one line whatever the message holds: quotes, newlines, non-ASCII escaped */
	capture(print_error, &(struct error_doc){ "1.1.0", "a \"b\"\nc \xc3\xa9", NULL, 5 }, out,
		sizeof(out));
	CHECK_STR(out, "{\"cniVersion\":\"1.1.0\",\"code\":5,\"msg\":\"a \\\"b\\\"\\nc \\u00E9\"}");
}

static int print_version(const void *arg)
{
	return rn_cni_print_version(arg, *(const char *)arg == '0' ? 10 : 30);
}

static void version_document_lists_the_plugins_versions(void)
{
	char out[512];

	CHECK_INT(capture(print_version, "1.0.0", out, sizeof(out)), 0);
	CHECK_STR(out, "{\"cniVersion\":\"1.0.0\",\"supportedVersions\":[\"0.3.0\",\"0.3.1\","
		       "\"0.4.0\",\"1.0.0\",\"1.1.0\"]}");
	CHECK(captured_newline);
	CHECK_INT(capture(print_version, "0.2.0", out, sizeof(out)), 0);
	CHECK_STR(out, "{\"cniVersion\":\"0.2.0\",\"supportedVersions\":[\"0.1.0\",\"0.2.0\","
		       "\"0.3.0\",\"0.3.1\",\"0.4.0\",\"1.0.0\",\"1.1.0\"]}");
}

static int print_nothing(const void *arg)
{
	(void)arg;
	return rn_cni_print(NULL);
}

static void print_of_no_document_fails(void)
{
	char out[64];

	CHECK_INT(capture(print_nothing, NULL, out, sizeof(out)), -1);
	CHECK_STR(out, "");
}

/* ---- environment ---- */

static void env_empty_variable_reads_as_unset(void)
{
	struct rn_cni_env e;
	struct rn_error err = { 0 };

	setenv("CNI_COMMAND", "ADD", 1);
	setenv("CNI_CONTAINERID", "c1", 1);
	setenv("CNI_NETNS", "", 1);
	setenv("CNI_IFNAME", "net1", 1);
	setenv("CNI_ARGS", "K8S_POD_NAME=p", 1);
	unsetenv("CNI_PATH");
	rn_cni_env_read(&e);
	CHECK_STR(e.command, "ADD");
	CHECK_STR(e.container_id, "c1");
	CHECK(e.netns == NULL);
	CHECK_STR(e.ifname, "net1");
	CHECK_STR(e.args, "K8S_POD_NAME=p");
	CHECK(e.path == NULL);
	/* DEL needs no netns; ADD does */
	CHECK_INT(rn_cni_env_require(&e, false, "rdma-netns", &err), 0);
	CHECK_INT(rn_cni_env_require(&e, true, "rdma-netns", &err), -EINVAL);
	CHECK_STR(err.msg, "CNI_NETNS is not set: rdma-netns is a CNI plugin, run by a container "
			   "runtime (CNI_COMMAND=ADD needs CNI_NETNS)");
	e.container_id = NULL;
	CHECK_INT(rn_cni_env_require(&e, false, "rdma-netns-ipam", &err), -EINVAL);
	CHECK_CONTAINS(err.msg, "CNI_CONTAINERID is not set: rdma-netns-ipam is a CNI plugin");
	unsetenv("CNI_COMMAND");
	unsetenv("CNI_CONTAINERID");
	unsetenv("CNI_NETNS");
	unsetenv("CNI_IFNAME");
	unsetenv("CNI_ARGS");
}

/* ---- stdin ---- */

/* A memfd holding n bytes: text, then filler up to n. */
static int input_of(const char *text, size_t n)
{
	int fd = memfd_create("stdin", MFD_CLOEXEC);
	char *buf = malloc(n ? n : 1);

	if (fd < 0 || !buf)
		abort();
	memset(buf, ' ', n);
	memcpy(buf, text, strlen(text) < n ? strlen(text) : n);
	if (n && write(fd, buf, n) != (ssize_t)n)
		abort();
	free(buf);
	lseek(fd, 0, SEEK_SET);
	return fd;
}

static void read_input_stops_at_the_whole_document_with_the_pipe_open(void)
{
	int p[2];
	char *text = NULL;
	size_t len = 0;
	struct rn_error err = { 0 };
	const char doc[] = "{\"cniVersion\":\"1.0.0\",\"name\":\"n\"}\n";

	REQUIRE(pipe2(p, O_CLOEXEC) == 0);
	REQUIRE(write(p[1], doc, strlen(doc)) == (ssize_t)strlen(doc));
	/* p[1] stays open: a reader that waited for EOF would never return */
	CHECK_INT(rn_cni_read_input(p[0], 1024, "the network configuration", &text, &len, &err), 0);
	CHECK(text && strcmp(text, doc) == 0);
	CHECK_INT(len, strlen(doc));
	free(text);
	close(p[0]);
	close(p[1]);
}

static void read_input_takes_max_bytes_and_refuses_one_more(void)
{
	char *text = NULL;
	size_t len = 0;
	struct rn_error err = { 0 };
	int fd;

	/* not JSON: read to EOF, across the buffer's growth (16 KiB, 32 KiB, ...) */
	fd = input_of("x", 40000);
	CHECK_INT(rn_cni_read_input(fd, 40000, "the network configuration", &text, &len, &err), 0);
	CHECK_INT(len, 40000);
	CHECK(text && text[0] == 'x' && text[39999] == ' ' && text[40000] == '\0');
	free(text);
	close(fd);

	fd = input_of("x", 40001);
	CHECK_INT(rn_cni_read_input(fd, 40000, "the network configuration", &text, &len, &err),
		  -EFBIG);
	CHECK_STR(err.msg, "the network configuration on stdin is larger than 40000 bytes");
	close(fd);

	fd = input_of("x", 1024 * 1024 + 1);
	CHECK_INT(rn_cni_read_input(fd, 1024 * 1024, "the OCI state", &text, &len, &err), -EFBIG);
	CHECK_STR(err.msg, "the OCI state on stdin is larger than 1 MiB");
	close(fd);
}

static void read_input_empty_and_closed(void)
{
	char *text = NULL;
	size_t len = 1;
	struct rn_error err = { 0 };
	int fd = input_of("", 0);

	CHECK_INT(rn_cni_read_input(fd, 100, "the network configuration", &text, &len, &err), 0);
	CHECK_STR(text, "");
	CHECK_INT(len, 0);
	free(text);
	close(fd);
	/* no stdin at all: the caller decides (rdma-netns reads it as an empty configuration) */
	CHECK_INT(rn_cni_read_input(-1, 100, "the network configuration", &text, &len, &err),
		  -EBADF);
	CHECK_CONTAINS(err.msg, "cannot read the network configuration on stdin");
}

RN_TEST_MAIN(T(args_empty_pairs_and_nothing_are_no_arguments),
	     T(args_give_the_pod_and_ignore_other_keys), T(args_duplicate_key_keeps_the_last_value),
	     T(args_value_is_everything_after_the_first_equals),
	     T(args_pair_without_equals_or_key_is_refused),
	     T(args_over_long_or_multiline_value_is_refused),
	     T(version_table_numbers_every_version),
	     T(version_check_refuses_older_than_the_plugin_and_lists_its_own),
	     T(error_document_has_code_msg_and_details),
	     T(version_document_lists_the_plugins_versions), T(print_of_no_document_fails),
	     T(env_empty_variable_reads_as_unset),
	     T(read_input_stops_at_the_whole_document_with_the_pipe_open),
	     T(read_input_takes_max_bytes_and_refuses_one_more), T(read_input_empty_and_closed))
