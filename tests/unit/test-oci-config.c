// SPDX-License-Identifier: Apache-2.0
/*
 * rdmans-hook's precreate filter (rdmans/oci_config_json.h): the OCI config
 * comes back with the NCCL variables added to process.env and every other
 * byte as it came; a variable the config sets already wins; bad or huge
 * input is refused with a message. Every accepted case is also checked
 * against the fuzz target's properties (tests/fuzz/oci-config-props.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "oci-config-props.h"
#include "rdmans/oci_config_json.h"
#include "test.h"

#define MAX (1u << 20)

static struct rn_oci_env_add nccl[] = {
	{ "NCCL_IB_HCA", "=mlx5_1", NULL },
	{ "NCCL_IB_GID_INDEX", "3", NULL },
	{ "NCCL_SOCKET_IFNAME", "net1", NULL },
};

/* text with nccl added; NULL when refused (err says why) */
static char *filter(const char *text, struct rn_error *err)
{
	_cleanup_(rn_oci_config_freep) struct rn_oci_config *c = NULL;
	char *out = NULL;
	size_t len = 0;

	if (rn_oci_config_parse(text, strlen(text), MAX, &c, err) < 0)
		return NULL;
	if (rn_oci_config_add_env(c, nccl, RN_ARRAY_SIZE(nccl), &out, &len, err) < 0)
		return NULL;
	if (strlen(out) != len) {
		free(out);
		return NULL;
	}
	return out;
}

static void check_props(const char *text)
{
	struct rn_oci_env_add add[RN_ARRAY_SIZE(nccl)];
	char why[512] = "";

	memcpy(add, nccl, sizeof(add));
	if (oci_config_props_check(text, strlen(text), MAX, add, RN_ARRAY_SIZE(add), why,
				   sizeof(why)) < 0 ||
	    oci_config_devices_check(text, strlen(text), MAX, why, sizeof(why)) < 0) {
		printf("# property broken: %s\n# input: %s\n", why, text);
		rn_test_failed = 1;
	}
}

/* What podman 4.3 writes, cut down, with what a re-encoder would change. */
static const char podman_like[] =
	"{\"ociVersion\":\"1.0.2-dev\",\"process\":{\"user\":{\"uid\":0,\"gid\":0},"
	"\"args\":[\"sh\",\"-c\",\"cat /proc/1/environ\"],"
	"\"env\":[\"PATH=/usr/local/sbin:/usr/bin\",\"TERM=xterm\",\"container=podman\"],"
	"\"cwd\":\"/\",\"capabilities\":{\"bounding\":[\"CAP_CHOWN\"]},"
	"\"rlimits\":[{\"type\":\"RLIMIT_NOFILE\",\"hard\":1048576,\"soft\":1048576}],"
	"\"oomScoreAdj\":0},"
	"\"root\":{\"path\":\"/var/lib/containers/storage/overlay/0a1b/merged\"},"
	"\"hostname\":\"c0ffee\",\"mounts\":[{\"destination\":\"/proc\",\"type\":\"proc\","
	"\"source\":\"proc\",\"options\":[\"nosuid\",\"noexec\",\"nodev\"]}],"
	"\"annotations\":{\"rdmans.io/devices\":\"irdma0\",\"io.podman.annotations.autoremove\":"
	"\"TRUE\"},"
	"\"linux\":{\"resources\":{\"memory\":{\"swappiness\":18446744073709551615},"
	"\"cpu\":{\"quota\":-1,\"period\":100000,\"shares\":1024}},"
	"\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"network\",\"path\":"
	"\"/run/netns/cni-5f3e\"},{\"type\":\"ipc\"}],"
	"\"seccomp\":{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"defaultErrnoRet\":38},"
	"\"maskedPaths\":[\"/proc/acpi\"]},"
	"\"x-future\":{\"ratio\":0.1,\"big\":1e5,\"neg\":-0.0,\"esc\":\"caf\\u00e9 \\/ \\\"q\\\"\","
	"\"huge\":123456789012345678901234567890}}";

static void precreate_adds_the_variables_and_keeps_every_other_byte(void)
{
	struct rn_error err = { 0 };
	_cleanup_free_ char *out = filter(podman_like, &err);
	const char *env_end =
		strstr(podman_like, "\"container=podman\"") + strlen("\"container=podman\"");
	size_t at = (size_t)(env_end - podman_like);
	const char *added = ",\"NCCL_IB_HCA==mlx5_1\",\"NCCL_IB_GID_INDEX=3\","
			    "\"NCCL_SOCKET_IFNAME=net1\"";

	REQUIRE(out != NULL);
	/* exactly: the input up to the end of process.env's last entry, ours, the rest */
	CHECK(strncmp(out, podman_like, at) == 0);
	CHECK(strncmp(out + at, added, strlen(added)) == 0);
	CHECK_STR(out + at + strlen(added), podman_like + at);
	/* what a decode and encode would have lost is still there as it was */
	CHECK_CONTAINS(out, "\"swappiness\":18446744073709551615");
	CHECK_CONTAINS(out, "\"ratio\":0.1,\"big\":1e5,\"neg\":-0.0");
	CHECK_CONTAINS(out, "\"huge\":123456789012345678901234567890");
	CHECK_CONTAINS(out, "caf\\u00e9 \\/ \\\"q\\\"");
	check_props(podman_like);
}

static void precreate_a_variable_the_config_sets_wins_and_is_reported(void)
{
	const char *text = "{\"process\":{\"env\":[\"NCCL_IB_HCA=mine\",\"NCCL_IB_HCA=second\","
			   "\"NCCL_SOCKET_IFNAME=\",\"NCCL_IB_GID_INDEXX=9\"]}}";
	struct rn_oci_env_add add[RN_ARRAY_SIZE(nccl)];
	_cleanup_(rn_oci_config_freep) struct rn_oci_config *c = NULL;
	_cleanup_free_ char *out = NULL;
	struct rn_error err = { 0 };
	size_t len;

	memcpy(add, nccl, sizeof(add));
	REQUIRE(rn_oci_config_parse(text, strlen(text), MAX, &c, &err) == 0);
	REQUIRE(rn_oci_config_add_env(c, add, RN_ARRAY_SIZE(add), &out, &len, &err) == 0);
	/* the first entry is what getenv() returns; an empty value is a value */
	CHECK_STR(add[0].kept, "mine");
	CHECK_STR(add[2].kept, "");
	/* NCCL_IB_GID_INDEXX is another variable */
	CHECK(add[1].kept == NULL);
	CHECK_STR(out, "{\"process\":{\"env\":[\"NCCL_IB_HCA=mine\",\"NCCL_IB_HCA=second\","
		       "\"NCCL_SOCKET_IFNAME=\",\"NCCL_IB_GID_INDEXX=9\","
		       "\"NCCL_IB_GID_INDEX=3\"]}}");
	check_props(text);
}

static void precreate_a_process_without_env_gets_one(void)
{
	const struct {
		const char *in, *out;
	} cases[] = {
		{ "{\"process\":{}}", "{\"process\":{\"env\":[\"NCCL_IB_HCA==mlx5_1\","
				      "\"NCCL_IB_GID_INDEX=3\",\"NCCL_SOCKET_IFNAME=net1\"]}}" },
		{ "{ \"process\" : { \"cwd\" : \"/\" } }",
		  "{ \"process\" : { \"cwd\" : \"/\" ,\"env\":[\"NCCL_IB_HCA==mlx5_1\","
		  "\"NCCL_IB_GID_INDEX=3\",\"NCCL_SOCKET_IFNAME=net1\"]} }" },
		{ "{\"process\":{\"env\":[ ]}}",
		  "{\"process\":{\"env\":[ \"NCCL_IB_HCA==mlx5_1\",\"NCCL_IB_GID_INDEX=3\","
		  "\"NCCL_SOCKET_IFNAME=net1\"]}}" },
		/* a key written with an escape is the same key */
		{ "{\"proc\\u0065ss\":{\"\\u0065nv\":[\"A=1\"]}}",
		  "{\"proc\\u0065ss\":{\"\\u0065nv\":[\"A=1\",\"NCCL_IB_HCA==mlx5_1\","
		  "\"NCCL_IB_GID_INDEX=3\",\"NCCL_SOCKET_IFNAME=net1\"]}}" },
		/* "env" deeper down is not process.env */
		{ "{\"x\":{\"env\":[]},\"process\":{\"args\":[{\"env\":[]}]}}",
		  "{\"x\":{\"env\":[]},\"process\":{\"args\":[{\"env\":[]}],\"env\":["
		  "\"NCCL_IB_HCA==mlx5_1\",\"NCCL_IB_GID_INDEX=3\",\"NCCL_SOCKET_IFNAME=net1\"]}"
		  "}" },
	};

	for (size_t i = 0; i < RN_ARRAY_SIZE(cases); i++) {
		struct rn_error err = { 0 };
		_cleanup_free_ char *out = filter(cases[i].in, &err);

		CHECK_STR(out, cases[i].out);
		check_props(cases[i].in);
	}
}

static void precreate_values_are_escaped_as_json(void)
{
	const char *text = "{\"process\":{\"env\":[]}}";
	struct rn_oci_env_add add[] = { { "NCCL_X", "a\"b\\c\td", NULL } };
	_cleanup_(rn_oci_config_freep) struct rn_oci_config *c = NULL;
	_cleanup_free_ char *out = NULL;
	struct rn_error err = { 0 };
	size_t len;

	REQUIRE(rn_oci_config_parse(text, strlen(text), MAX, &c, &err) == 0);
	REQUIRE(rn_oci_config_add_env(c, add, 1, &out, &len, &err) == 0);
	CHECK_STR(out, "{\"process\":{\"env\":[\"NCCL_X=a\\\"b\\\\c\\td\"]}}");
	add[0].name = "BAD=NAME";
	rn_oci_config_free(c);
	c = NULL;
	REQUIRE(rn_oci_config_parse(text, strlen(text), MAX, &c, &err) == 0);
	free(out);
	out = NULL;
	CHECK_INT(rn_oci_config_add_env(c, add, 1, &out, &len, &err), -EINVAL);
	CHECK(out == NULL);
	CHECK_CONTAINS(err.msg, "'BAD=NAME' cannot be an environment variable's name");
}

static void precreate_reads_the_network_namespace_annotations_and_root(void)
{
	const struct {
		const char *text;
		enum rn_oci_netns want;
		const char *path;
	} cases[] = {
		{ podman_like, RN_OCI_NETNS_PATH, "/run/netns/cni-5f3e" },
		{ "{\"linux\":{\"namespaces\":[{\"type\":\"network\"}]}}", RN_OCI_NETNS_NEW, NULL },
		{ "{\"linux\":{\"namespaces\":[{\"type\":\"network\",\"path\":\"\"}]}}",
		  RN_OCI_NETNS_NEW, NULL },
		{ "{\"linux\":{\"namespaces\":[{\"type\":\"pid\"}]}}", RN_OCI_NETNS_NONE, NULL },
		{ "{}", RN_OCI_NETNS_NONE, NULL },
	};

	for (size_t i = 0; i < RN_ARRAY_SIZE(cases); i++) {
		_cleanup_(rn_oci_config_freep) struct rn_oci_config *c = NULL;
		struct rn_error err = { 0 };
		const char *path = "unset";

		REQUIRE(rn_oci_config_parse(cases[i].text, strlen(cases[i].text), MAX, &c, &err) ==
			0);
		CHECK_INT(rn_oci_config_netns(c, &path), cases[i].want);
		if (cases[i].path)
			CHECK_STR(path, cases[i].path);
		else
			CHECK(path == NULL);
	}
	{
		_cleanup_(rn_oci_config_freep) struct rn_oci_config *c = NULL;
		struct rn_error err = { 0 };
		bool ro = true;

		REQUIRE(rn_oci_config_parse(podman_like, strlen(podman_like), MAX, &c, &err) == 0);
		CHECK_STR(rn_oci_config_annotation(c, "rdmans.io/devices"), "irdma0");
		CHECK(rn_oci_config_annotation(c, "rdmans.io/nccl") == NULL);
		CHECK_STR(rn_oci_config_root(c, &ro),
			  "/var/lib/containers/storage/overlay/0a1b/merged");
		CHECK(!ro);
	}
}

static void precreate_bad_input_is_refused_with_a_message(void)
{
	/* { input, what the message says } */
	static const char *const cases[][2] = {
		{ "", "the input is not an OCI config" },
		{ "not json", "the input is not an OCI config" },
		{ "[1,2]", "one JSON object): another JSON value" },
		{ "{\"process\":{\"env\":[\"A=1\"]}", "the input is not an OCI config" },
		{ "{\"process\":{},\"process\":{}}", "duplicate object key" },
		{ "{\"process\":{\"env\":[],\"env\":[]}}", "duplicate object key" },
		{ "{\"process\":[]}", "\"process\" is not an object" },
		{ "{\"process\":{\"env\":\"A=1\"}}", "process.env is not an array" },
		{ "{\"process\":{\"env\":[\"A=1\",2]}}", "process.env[1] is not a string" },
		{ "{\"linux\":{\"namespaces\":{}}}", "linux.namespaces is not an array" },
		{ "{\"linux\":{\"namespaces\":[{\"type\":\"network\",\"path\":1}]}}",
		  "linux.namespaces[0] is not" },
		{ "{\"annotations\":[]}", "\"annotations\" is not an object" },
		{ "{\"a\":\"\xff\"}", "the input is not an OCI config" },
		{ "{\"a\":1e999}", "the input is not an OCI config" },
	};

	for (size_t i = 0; i < RN_ARRAY_SIZE(cases); i++) {
		_cleanup_(rn_oci_config_freep) struct rn_oci_config *c = NULL;
		struct rn_error err = { 0 };

		CHECK_INT(rn_oci_config_parse(cases[i][0], strlen(cases[i][0]), MAX, &c, &err),
			  -EINVAL);
		CHECK(c == NULL);
		CHECK_CONTAINS(err.msg, cases[i][1]);
	}
}

static void precreate_huge_input_is_refused_before_it_is_read(void)
{
	_cleanup_(rn_oci_config_freep) struct rn_oci_config *c = NULL;
	struct rn_error err = { 0 };
	const char *text = "{\"process\":{\"env\":[]}}";

	CHECK_INT(rn_oci_config_parse(text, strlen(text), strlen(text) - 1, &c, &err), -EFBIG);
	CHECK(c == NULL);
	CHECK_CONTAINS(err.msg, "more than the 21 bytes rdmans-hook takes");
	CHECK_INT(rn_oci_config_parse(text, strlen(text), strlen(text), &c, &err), 0);
}

static void precreate_a_config_without_process_gets_nothing_added(void)
{
	_cleanup_(rn_oci_config_freep) struct rn_oci_config *c = NULL;
	struct rn_error err = { 0 };
	char *out = (char *)"x";
	size_t len = 1;

	REQUIRE(rn_oci_config_parse("{\"root\":{}}", 11, MAX, &c, &err) == 0);
	CHECK_INT(rn_oci_config_add_env(c, nccl, RN_ARRAY_SIZE(nccl), &out, &len, &err), -EINVAL);
	CHECK(out == NULL && len == 0);
	CHECK_CONTAINS(err.msg, "has no \"process\"");
	/* nothing to add (a container not ours): it goes back as it came */
	CHECK_INT(rn_oci_config_add_env(c, nccl, 0, &out, &len, &err), 0);
	CHECK_STR(out, "{\"root\":{}}");
	free(out);
}

/* text with a uverbs node and rdma_cm added; NULL when refused (err says why) */
static char *with_nodes(const char *text, struct rn_oci_dev_add *add, struct rn_error *err)
{
	_cleanup_(rn_oci_config_freep) struct rn_oci_config *c = NULL;
	char *out = NULL;
	size_t len = 0;

	if (rn_oci_config_parse(text, strlen(text), MAX, &c, err) < 0 ||
	    rn_oci_config_add_devices(c, add, 2, &out, &len, err) < 0)
		return NULL;
	CHECK_INT(strlen(out), len);
	return out;
}

#define NODE_U                                                                                     \
	"{\"path\":\"/dev/infiniband/uverbs3\",\"type\":\"c\",\"major\":231,\"minor\":195,"        \
	"\"fileMode\":8630,\"uid\":0,\"gid\":0}"
#define NODE_CM                                                                                    \
	"{\"path\":\"/dev/infiniband/rdma_cm\",\"type\":\"c\",\"major\":10,\"minor\":122,"         \
	"\"fileMode\":8630,\"uid\":0,\"gid\":0}"
#define RULE_U "{\"allow\":true,\"type\":\"c\",\"major\":231,\"minor\":195,\"access\":\"rwm\"}"
#define RULE_CM "{\"allow\":true,\"type\":\"c\",\"major\":10,\"minor\":122,\"access\":\"rwm\"}"

static void precreate_device_nodes_join_linux_devices_and_the_cgroup_rules(void)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		/* podman's shape: both arrays there, the deny-all rule first */
		{ "{\"linux\": {\"devices\": [{\"path\": \"/dev/fuse\"}],\n \"resources\": "
		  "{\"devices\": [{\"allow\": false, \"access\": \"rwm\"}]}}}",
		  "{\"linux\": {\"devices\": [{\"path\": \"/dev/fuse\"}," NODE_U "," NODE_CM "],\n "
		  "\"resources\": {\"devices\": [{\"allow\": false, \"access\": \"rwm\"}," RULE_U
		  "," RULE_CM "]}}}" },
		/* empty arrays */
		{ "{\"linux\":{\"devices\":[ ],\"resources\":{\"devices\":[]}}}",
		  "{\"linux\":{\"devices\":[ " NODE_U "," NODE_CM
		  "],\"resources\":{\"devices\":[" RULE_U "," RULE_CM "]}}}" },
		/* resources without devices, no linux.devices */
		{ "{\"linux\":{\"resources\":{\"pids\":{\"limit\":5}}}}",
		  "{\"linux\":{\"resources\":{\"pids\":{\"limit\":5},\"devices\":[" RULE_U
		  "," RULE_CM "]},\"devices\":[" NODE_U "," NODE_CM "]}}" },
		/* an empty linux */
		{ "{\"linux\":{}}", "{\"linux\":{\"devices\":[" NODE_U "," NODE_CM
				    "],\"resources\":{\"devices\":[" RULE_U "," RULE_CM "]}}}" },
		/* no linux at all */
		{ "{\"root\":{}}", "{\"root\":{},\"linux\":{\"devices\":[" NODE_U "," NODE_CM
				   "],\"resources\":{\"devices\":[" RULE_U "," RULE_CM "]}}}" },
	};

	for (size_t i = 0; i < RN_ARRAY_SIZE(cases); i++) {
		struct rn_oci_dev_add add[] = { { "/dev/infiniband/uverbs3", 231, 195, true },
						{ "/dev/infiniband/rdma_cm", 10, 122, true } };
		struct rn_error err = { 0 };
		_cleanup_free_ char *out = with_nodes(cases[i].in, add, &err);

		CHECK_STR(out ? out : err.msg, cases[i].out);
		CHECK(!add[0].kept && !add[1].kept);
		check_props(cases[i].in);
	}
}

static void precreate_a_node_the_config_has_is_kept_and_a_bad_path_refused(void)
{
	static const char in[] = "{\"linux\":{\"devices\":[{\"path\":\"/dev/infiniband/rdma_cm\","
				 "\"type\":\"c\",\"major\":10,\"minor\":122}]}}";
	struct rn_oci_dev_add add[] = { { "/dev/infiniband/uverbs3", 231, 195, false },
					{ "/dev/infiniband/rdma_cm", 10, 122, false } };
	struct rn_error err = { 0 };
	_cleanup_free_ char *out = with_nodes(in, add, &err), *bad = NULL;

	CHECK_STR(out ? out : err.msg,
		  "{\"linux\":{\"devices\":[{\"path\":\"/dev/infiniband/rdma_cm\",\"type\":\"c\","
		  "\"major\":10,\"minor\":122}," NODE_U "],\"resources\":{\"devices\":[" RULE_U
		  "]}}}");
	CHECK(!add[0].kept && add[1].kept);
	add[0].path = "infiniband/uverbs3";
	bad = with_nodes("{}", add, &err);
	CHECK(bad == NULL);
	CHECK_CONTAINS(err.msg, "cannot be a device node's path");
	err = (struct rn_error){ 0 };
	CHECK(with_nodes("{\"linux\":{\"devices\":{}}}", add, &err) == NULL);
	CHECK_CONTAINS(err.msg, "linux.devices is not an array");
}

/* Each prefix, and each one-byte change, of the podman-like config: refused, or every property holds. */
static void precreate_properties_hold_on_cut_and_changed_configs(void)
{
	size_t len = strlen(podman_like);
	_cleanup_free_ char *buf = malloc(len + 1);
	static const char bytes[] = "{}[],:\"\\ 0a-e.";
	size_t failures = 0;

	REQUIRE(buf != NULL);
	for (size_t i = 0; i <= len && failures < 5; i++) {
		struct rn_oci_env_add add[RN_ARRAY_SIZE(nccl)];
		char why[512] = "";

		memcpy(add, nccl, sizeof(add));
		memcpy(buf, podman_like, i);
		buf[i] = '\0';
		if (oci_config_props_check(buf, i, MAX, add, RN_ARRAY_SIZE(add), why, sizeof(why)) <
			    0 ||
		    oci_config_devices_check(buf, i, MAX, why, sizeof(why)) < 0) {
			printf("# prefix %zu: %s\n", i, why);
			failures++;
		}
		for (size_t b = 0; i < len && b < sizeof(bytes) - 1; b++) {
			memcpy(buf, podman_like, len + 1);
			buf[i] = bytes[b];
			memcpy(add, nccl, sizeof(add));
			if (oci_config_props_check(buf, len, MAX, add, RN_ARRAY_SIZE(add), why,
						   sizeof(why)) < 0 ||
			    oci_config_devices_check(buf, len, MAX, why, sizeof(why)) < 0) {
				printf("# byte %zu = '%c': %s\n", i, bytes[b], why);
				failures++;
			}
		}
	}
	CHECK_INT(failures, 0);
}

RN_TEST_MAIN(T(precreate_adds_the_variables_and_keeps_every_other_byte),
	     T(precreate_a_variable_the_config_sets_wins_and_is_reported),
	     T(precreate_a_process_without_env_gets_one), T(precreate_values_are_escaped_as_json),
	     T(precreate_reads_the_network_namespace_annotations_and_root),
	     T(precreate_bad_input_is_refused_with_a_message),
	     T(precreate_huge_input_is_refused_before_it_is_read),
	     T(precreate_a_config_without_process_gets_nothing_added),
	     T(precreate_properties_hold_on_cut_and_changed_configs),
	     T(precreate_device_nodes_join_linux_devices_and_the_cgroup_rules),
	     T(precreate_a_node_the_config_has_is_kept_and_a_bad_path_refused))
