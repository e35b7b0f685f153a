// SPDX-License-Identifier: Apache-2.0
/* IPAM configuration (whereabouts' keys, flat files, stores) and the record text. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rdmans/ipam.h"
#include "test.h"

static char root[64];

static void write_file(const char *rel, const char *text)
{
	char path[512], dir[512], *slash;
	FILE *f;

	snprintf(path, sizeof(path), "%s%s", root, rel);
	snprintf(dir, sizeof(dir), "%s", path);
	for (char *p = dir + strlen(root) + 1; (slash = strchr(p, '/')); p = slash + 1) {
		*slash = '\0';
		mkdir(dir, 0755);
		*slash = '/';
	}
	f = fopen(path, "w");
	CHECK(f != NULL);
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static void remove_tree(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	CHECK_INT(system(cmd), 0);
}

static void fresh_root(void)
{
	snprintf(root, sizeof(root), "/tmp/rn-ipam-config-XXXXXX");
	CHECK(mkdtemp(root) != NULL);
}

static int parse(const char *json, unsigned flags, struct rn_ipam_config *c, struct rn_error *err)
{
	return rn_ipam_config_parse(json, root, flags, c, err);
}

static void whereabouts_example_config_parses(void)
{
	struct rn_ipam_config c;
	struct rn_error err = { 0 };
	const char *conf =
		"{\"cniVersion\":\"0.3.1\",\"name\":\"rdma-net\",\"type\":\"host-device\","
		"\"ipam\":{\"type\":\"rdma-netns-ipam\",\"range\":\"10.100.100.0/24\","
		"\"exclude\":[\"10.100.100.0/28\"],\"gateway\":\"10.100.100.254\","
		"\"routes\":[{\"dst\":\"10.200.0.0/16\",\"gw\":\"10.100.100.254\"}],"
		"\"dns\":{\"nameservers\":[\"10.0.0.10\"]},\"log_level\":\"debug\","
		"\"log_file\":\"/var/log/ipam.log\"}}";

	fresh_root();
	CHECK_INT(parse(conf, 0, &c, &err), 0);
	CHECK_STR(c.cni_version, "0.3.1");
	CHECK_STR(c.network, "rdma-net");
	CHECK_STR(c.scope, RN_IPAM_DEFAULT_SCOPE);
	CHECK(c.overlapping);
	CHECK_INT(c.n_ranges, 1);
	CHECK_STR(c.ranges[0].cidr, "10.100.100.0/24");
	CHECK_INT(c.ranges[0].n_exclude, 1);
	CHECK(c.ranges[0].has_gateway);
	/* 256 - 16 excluded - broadcast - gateway */
	CHECK(rn_ipam_range_count(&c.ranges[0]) == 238);
	CHECK_STR(c.routes_json, "[{\"dst\":\"10.200.0.0/16\",\"gw\":\"10.100.100.254\"}]");
	CHECK_STR(c.dns_json, "{\"nameservers\":[\"10.0.0.10\"]}");
	CHECK_INT(c.log_level, RN_IPAM_LOG_DEBUG);
	CHECK_STR(c.log_file, "/var/log/ipam.log");
	CHECK_INT(c.store, RN_IPAM_STORE_LOCAL);
	CHECK_STR(c.data_dir, RN_IPAM_DEFAULT_DATA_DIR);
	CHECK(c.flat_file == NULL);
	CHECK(c.node != NULL && c.node[0]);
	rn_ipam_config_free(&c);
	remove_tree();
}

static void ip_ranges_give_dual_stack_and_the_gateway_goes_to_its_family(void)
{
	struct rn_ipam_config c;
	struct rn_error err = { 0 };
	const char *conf = "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"ipam\":{"
			   "\"gateway\":\"10.56.0.1\",\"ipRanges\":["
			   "{\"range\":\"10.56.0.10-10.56.0.99/24\",\"exclude\":[\"10.56.0.50\"]},"
			   "{\"range\":\"fd00:56::/64\",\"gateway\":\"fd00:56::1\"}]}}";

	fresh_root();
	CHECK_INT(parse(conf, 0, &c, &err), 0);
	CHECK_INT(c.n_ranges, 2);
	CHECK_INT(c.ranges[0].family, AF_INET);
	CHECK(c.ranges[0].has_gateway); /* inside 10.56.0.0/24 (though outside start..end) */
	CHECK(rn_ipam_range_count(&c.ranges[0]) == 89);
	CHECK_INT(c.ranges[1].family, AF_INET6);
	CHECK(c.ranges[1].has_gateway);
	rn_ipam_config_free(&c);
	remove_tree();
}

static void a_gateway_outside_every_range_is_refused(void)
{
	struct rn_ipam_config c;
	struct rn_error err = { 0 };

	fresh_root();
	CHECK_INT(parse("{\"ipam\":{\"range\":\"10.56.0.0/24\",\"gateway\":\"10.57.0.1\"}}", 0, &c,
			&err),
		  -EINVAL);
	CHECK_CONTAINS(err.msg, "ipam.gateway 10.57.0.1 is outside every range");
	remove_tree();
}

static void bad_values_name_their_key(void)
{
	struct rn_ipam_config c;
	struct rn_error err = { 0 };

	fresh_root();
	CHECK_INT(parse("not json", 0, &c, &err), -EBADMSG);
	CHECK_CONTAINS(err.msg, "not JSON");
	CHECK_INT(parse("[1]", 0, &c, &err), -EBADMSG);
	CHECK_INT(parse("{\"ipam\":{}}", 0, &c, &err), -EINVAL);
	CHECK_CONTAINS(err.msg, "no range: set ipam.range");
	CHECK_INT(parse("{\"ipam\":{\"range\":24}}", 0, &c, &err), -EINVAL);
	CHECK_STR(err.msg, "ipam.range must be a string");
	CHECK_INT(parse("{\"ipam\":{\"range\":\"10.0.0.0/8\",\"exclude\":\"10.0.0.0/9\"}}", 0, &c,
			&err),
		  -EINVAL);
	CHECK_STR(err.msg, "ipam.exclude must be a list of strings");
	CHECK_INT(parse("{\"ipam\":{\"ipRanges\":[{\"range\":\"10.0.0.0/8\"},{\"range\":\"x\"}]}}",
			0, &c, &err),
		  -EINVAL);
	CHECK_CONTAINS(err.msg, "ipam.ipRanges[1].range: range 'x' is not a CIDR");
	CHECK_INT(
		parse("{\"ipam\":{\"range\":\"10.0.0.0/8\",\"log_level\":\"loud\"}}", 0, &c, &err),
		-EINVAL);
	CHECK_CONTAINS(err.msg, "ipam.log_level 'loud' is unknown");
	CHECK_INT(
		parse("{\"ipam\":{\"range\":\"10.0.0.0/8\",\"enable_overlapping_ranges\":\"no\"}}",
		      0, &c, &err),
		-EINVAL);
	CHECK_INT(parse("{\"ipam\":{\"range\":\"10.0.0.0/8\",\"routes\":[{\"dst\":\"x\"}]}}", 0, &c,
			&err),
		  -EINVAL);
	CHECK_CONTAINS(err.msg, "ipam.routes[0] needs \"dst\" as a CIDR");
	CHECK_INT(parse("{\"ipam\":{\"range\":\"10.0.0.0/8\",\"dataDir\":\"relative\"}}", 0, &c,
			&err),
		  -EINVAL);
	CHECK_CONTAINS(err.msg, "must be an absolute path");
	CHECK_INT(parse("{\"ipam\":{\"range\":\"10.0.0.0/8\",\"network_name\":\"a/b\"}}", 0, &c,
			&err),
		  -EINVAL);
	CHECK_CONTAINS(err.msg, "must not contain '/'");
	CHECK_INT(parse("{\"ipam\":{\"range\":\"10.0.0.0/8\",\"store\":\"consul\"}}", 0, &c, &err),
		  -EINVAL);
	CHECK_CONTAINS(err.msg, "ipam.store 'consul' is unknown");
	remove_tree();
}

static void network_name_and_overlap_choose_the_pool(void)
{
	struct rn_ipam_config c;
	struct rn_error err = { 0 };
	char pool[64];

	fresh_root();
	CHECK_INT(parse("{\"ipam\":{\"range\":\"10.0.0.0/8\",\"network_name\":\"rdma-a\","
			"\"enable_overlapping_ranges\":false}}",
			0, &c, &err),
		  0);
	CHECK_STR(c.scope, "rdma-a");
	CHECK(!c.overlapping);
	rn_ipam_pool_name(&c, &c.ranges[0], pool, sizeof(pool));
	CHECK_STR(pool, "r-10.0.0.0_8");
	c.overlapping = true;
	rn_ipam_pool_name(&c, &c.ranges[0], pool, sizeof(pool));
	CHECK_STR(pool, "addr");
	rn_ipam_config_free(&c);
	remove_tree();
}

static void old_etcd_keys_select_the_etcd_store(void)
{
	struct rn_ipam_config c;
	struct rn_error err = { 0 };

	fresh_root();
	CHECK_INT(parse("{\"ipam\":{\"range\":\"10.0.0.0/8\",\"etcd_host\":\"10.0.0.1:2379, "
			"10.0.0.2:2379\",\"etcd_username\":\"cni\",\"etcd_password\":\"s3cret\"}}",
			0, &c, &err),
		  0);
	CHECK_INT(c.store, RN_IPAM_STORE_ETCD);
	CHECK_INT(c.etcd.n_endpoints, 2);
	CHECK_STR(c.etcd.endpoints[0], "http://10.0.0.1:2379");
	CHECK_STR(c.etcd.endpoints[1], "http://10.0.0.2:2379");
	CHECK_STR(c.etcd.username, "cni");
	CHECK_STR(c.etcd.password, "s3cret");
	CHECK_INT(c.etcd.timeout_ms, 5000);
	CHECK_INT(c.etcd.deadline_ms, RN_IPAM_ETCD_DEADLINE_MS);
	rn_ipam_config_free(&c);

	/* TLS files make a bare host:port https */
	CHECK_INT(parse("{\"ipam\":{\"range\":\"10.0.0.0/8\",\"etcd_host\":\"etcd:2379\","
			"\"etcd_ca_cert_file\":\"/ca.pem\",\"etcd_cert_file\":\"/c.pem\","
			"\"etcd_key_file\":\"/k.pem\"}}",
			0, &c, &err),
		  0);
	CHECK_STR(c.etcd.endpoints[0], "https://etcd:2379");
	CHECK_STR(c.etcd.ca_file, "/ca.pem");
	CHECK_STR(c.etcd.cert_file, "/c.pem");
	CHECK_STR(c.etcd.key_file, "/k.pem");
	rn_ipam_config_free(&c);
	remove_tree();
}

static void the_etcd_object_and_password_file(void)
{
	struct rn_ipam_config c;
	struct rn_error err = { 0 };
	char conf[512];

	fresh_root();
	write_file("/pw", "hunter2\n");
	snprintf(conf, sizeof(conf),
		 "{\"ipam\":{\"range\":\"10.0.0.0/8\",\"store\":\"etcd\",\"etcd\":{"
		 "\"endpoints\":[\"https://a:2379\",\"https://b:2379\"],\"username\":\"cni\","
		 "\"password_file\":\"%s/pw\",\"key_prefix\":\"/ipam\",\"timeout_ms\":1500,"
		 "\"deadline_ms\":4000}}}",
		 root);
	CHECK_INT(parse(conf, 0, &c, &err), 0);
	CHECK_INT(c.store, RN_IPAM_STORE_ETCD);
	CHECK_INT(c.etcd.n_endpoints, 2);
	CHECK_STR(c.etcd.password, "hunter2");
	CHECK_STR(c.etcd.key_prefix, "/ipam");
	CHECK_INT(c.etcd.timeout_ms, 1500);
	CHECK_INT(c.etcd.deadline_ms, 4000);
	rn_ipam_config_free(&c);
	remove_tree();
}

static void bad_etcd_settings_are_refused_without_echoing_secrets(void)
{
	struct rn_ipam_config c;
	struct rn_error err = { 0 };

	fresh_root();
	CHECK_INT(parse("{\"ipam\":{\"range\":\"10.0.0.0/8\",\"store\":\"etcd\"}}", 0, &c, &err),
		  -EINVAL);
	CHECK_CONTAINS(err.msg, "no endpoint is set");
	CHECK_INT(parse("{\"ipam\":{\"range\":\"10.0.0.0/8\",\"etcd\":{\"endpoints\":[\"a:1\"],"
			"\"password\":\"TopSecret99\"}}}",
			0, &c, &err),
		  -EINVAL);
	CHECK_STR(err.msg, "an etcd password is set but no etcd user name (ipam.etcd.username and "
			   "ipam.etcd.password_file (or password))");
	CHECK(!strstr(err.msg, "TopSecret99"));
	CHECK_INT(parse("{\"ipam\":{\"range\":\"10.0.0.0/99\",\"etcd_host\":\"a:1\","
			"\"etcd_username\":\"u\",\"etcd_password\":\"TopSecret99\"}}",
			0, &c, &err),
		  -EINVAL);
	CHECK(!strstr(err.msg, "TopSecret99"));
	CHECK_INT(parse("{\"ipam\":{\"range\":\"10.0.0.0/8\",\"etcd_host\":\"ftp://a:1\"}}", 0, &c,
			&err),
		  -EINVAL);
	CHECK_CONTAINS(err.msg, "must start with http:// or https://");
	CHECK_INT(parse("{\"ipam\":{\"range\":\"10.0.0.0/8\",\"etcd\":{\"endpoints\":[\"a:1\"],"
			"\"key_prefix\":\"ipam\"}}}",
			0, &c, &err),
		  -EINVAL);
	CHECK_CONTAINS(err.msg, "must start with '/'");
	CHECK_INT(parse("{\"ipam\":{\"range\":\"10.0.0.0/8\",\"etcd\":{\"endpoints\":[\"a:1\"],"
			"\"key_file\":\"/k\"}}}",
			0, &c, &err),
		  -EINVAL);
	CHECK_CONTAINS(err.msg, "no client certificate");
	remove_tree();
}

/* A password in an endpoint URL is refused and never shown. */
static void endpoints_with_a_password_are_refused_and_redacted(void)
{
	static const char *const configs[] = {
		"{\"ipam\":{\"range\":\"10.0.0.0/8\",\"etcd\":{\"endpoints\":"
		"[\"https://u:TopSecret99@etcd:2379\"]}}}",
		"{\"ipam\":{\"range\":\"10.0.0.0/8\",\"etcd\":{\"endpoints\":"
		"\"http://etcd:2379,http://u:TopSecret99@etcd2:2379/v3\"}}}",
		"{\"ipam\":{\"range\":\"10.0.0.0/8\",\"etcd_host\":\"u:TopSecret99@etcd:2379\"}}",
		"{\"ipam\":{\"range\":\"10.0.0.0/8\",\"etcd_host\":\"https://TopSecret99@etcd\"}}",
		"{\"ipam\":{\"range\":\"10.0.0.0/8\",\"etcd_host\":\"ftp://u:TopSecret99@etcd\"}}",
		"{\"ipam\":{\"range\":\"10.0.0.0/8\",\"etcd_host\":\"https://"
		"u:Top@Secret99@etcd\"}}",
	};
	struct rn_ipam_config c;

	fresh_root();
	for (size_t i = 0; i < sizeof(configs) / sizeof(configs[0]); i++) {
		struct rn_error err = { 0 };

		CHECK_INT(parse(configs[i], 0, &c, &err), -EINVAL);
		CHECK_CONTAINS(err.msg, "***@etcd");
		CHECK(!strstr(err.msg, "Secret99"));
		if (!strstr(configs[i], "ftp:"))
			CHECK_CONTAINS(err.msg, "ipam.etcd.password_file");
	}
	/* an '@' after the host is no password */
	{
		struct rn_error err = { 0 };

		CHECK_INT(parse("{\"ipam\":{\"range\":\"10.0.0.0/8\",\"etcd_host\":"
				"\"http://etcd:2379/x@y\"}}",
				0, &c, &err),
			  0);
		rn_ipam_config_free(&c);
	}
	remove_tree();
}

/* A FIFO named by the config (found by the fuzz target) is refused at once, not waited on. */
static void files_named_by_the_config_must_be_regular(void)
{
	struct rn_ipam_config c;
	char fifo[128], json[512];
	struct rn_error err = { 0 };

	fresh_root();
	snprintf(fifo, sizeof(fifo), "%s/fifo", root);
	CHECK_INT(mkfifo(fifo, 0600), 0);
	snprintf(json, sizeof(json),
		 "{\"ipam\":{\"range\":\"10.0.0.0/8\",\"configuration_path\":\"%s\"}}", fifo);
	CHECK_INT(parse(json, 0, &c, &err), -EINVAL);
	CHECK_CONTAINS(err.msg, "not a regular file");
	snprintf(json, sizeof(json),
		 "{\"ipam\":{\"range\":\"10.0.0.0/8\",\"etcd\":{\"endpoints\":[\"a:1\"],"
		 "\"username\":\"u\",\"password_file\":\"%s\"}}}",
		 fifo);
	CHECK_INT(parse(json, 0, &c, &err), -EINVAL);
	CHECK_CONTAINS(err.msg, "not a regular file");
	remove_tree();
}

static void whereabouts_kubernetes_datastore_picks_the_kubernetes_store(void)
{
	struct rn_ipam_config c;
	struct rn_error err = { 0 };

	fresh_root();
	CHECK_INT(parse("{\"ipam\":{\"range\":\"10.0.0.0/8\",\"datastore\":\"kubernetes\","
			"\"kubernetes\":{\"kubeconfig\":\"/etc/cni/net.d/whereabouts.d/"
			"k.kubeconfig\"}}}",
			0, &c, &err),
		  0);
	CHECK_INT(c.store, RN_IPAM_STORE_KUBERNETES);
	CHECK_STR(c.kubernetes.kubeconfig, "/etc/cni/net.d/whereabouts.d/k.kubeconfig");
	CHECK_INT(c.kubernetes.deadline_ms, RN_IPAM_ETCD_DEADLINE_MS);
	rn_ipam_config_free(&c);
	/* ours: store "kubernetes", and its request bounds */
	CHECK_INT(parse("{\"ipam\":{\"range\":\"10.0.0.0/8\",\"store\":\"kubernetes\","
			"\"kubernetes\":{\"kubeconfig\":\"/k\",\"timeout_ms\":700}}}",
			0, &c, &err),
		  0);
	CHECK_INT(c.store, RN_IPAM_STORE_KUBERNETES);
	CHECK_INT(c.kubernetes.timeout_ms, 700);
	rn_ipam_config_free(&c);
	/* never silently node-local: without a kubeconfig it is refused, saying what to set */
	CHECK_INT(parse("{\"ipam\":{\"range\":\"10.0.0.0/8\",\"datastore\":\"kubernetes\"}}", 0, &c,
			&err),
		  -EINVAL);
	CHECK_CONTAINS(err.msg, "ipam.kubernetes.kubeconfig");
	CHECK_INT(parse("{\"ipam\":{\"range\":\"10.0.0.0/8\",\"store\":\"kubernetes\","
			"\"kubernetes\":{\"kubeconfig\":\"k.kubeconfig\"}}}",
			0, &c, &err),
		  -EINVAL);
	CHECK_CONTAINS(err.msg, "must be an absolute path");
	/* an explicit store wins over the leftover whereabouts keys */
	CHECK_INT(parse("{\"ipam\":{\"range\":\"10.0.0.0/8\",\"store\":\"local\","
			"\"kubernetes\":{\"kubeconfig\":\"/k\"}}}",
			0, &c, &err),
		  0);
	CHECK_INT(c.store, RN_IPAM_STORE_LOCAL);
	rn_ipam_config_free(&c);
	remove_tree();
}

static void configuration_path_fills_what_the_inline_config_leaves_out(void)
{
	struct rn_ipam_config c;
	struct rn_error err = { 0 };
	char conf[512];

	fresh_root();
	write_file("/conf/flat.conf",
		   "{\"range\":\"10.9.0.0/16\",\"dataDir\":\"/var/x\","
		   "\"network_name\":\"from-file\",\"etcd\":{\"timeout_ms\":77}}");
	snprintf(conf, sizeof(conf),
		 "{\"name\":\"n\",\"ipam\":{\"configuration_path\":\"%s/conf/flat.conf\","
		 "\"network_name\":\"inline\"}}",
		 root);
	CHECK_INT(parse(conf, 0, &c, &err), 0);
	CHECK_STR(c.ranges[0].cidr, "10.9.0.0/16");
	CHECK_STR(c.data_dir, "/var/x");
	CHECK_STR(c.scope, "inline");
	CHECK_CONTAINS(c.flat_file, "/conf/flat.conf");
	rn_ipam_config_free(&c);

	snprintf(conf, sizeof(conf),
		 "{\"ipam\":{\"range\":\"10.0.0.0/8\",\"configuration_path\":\"%s/missing\"}}",
		 root);
	CHECK_INT(parse(conf, 0, &c, &err), -ENOENT);
	CHECK_CONTAINS(err.msg, "ipam.configuration_path");
	CHECK_CONTAINS(err.msg, "No such file");
	write_file("/conf/bad.conf", "{range");
	snprintf(conf, sizeof(conf), "{\"ipam\":{\"configuration_path\":\"%s/conf/bad.conf\"}}",
		 root);
	CHECK_INT(parse(conf, 0, &c, &err), -EINVAL);
	CHECK_CONTAINS(err.msg, "is not a JSON object");
	remove_tree();
}

static void flat_files_are_searched_where_whereabouts_looks(void)
{
	struct rn_ipam_config c;
	struct rn_error err = { 0 };

	fresh_root();
	write_file("/etc/cni/net.d/whereabouts.d/whereabouts.conf",
		   "{\"datastore\":\"etcd\",\"etcd_host\":\"etcd.kube-system:2379\","
		   "\"range\":\"10.7.0.0/16\"}");
	CHECK_INT(parse("{\"ipam\":{\"range\":\"10.1.0.0/16\"}}", 0, &c, &err), 0);
	CHECK_INT(c.store, RN_IPAM_STORE_ETCD);
	CHECK_STR(c.etcd.endpoints[0], "http://etcd.kube-system:2379");
	CHECK_STR(c.ranges[0].cidr, "10.1.0.0/16"); /* inline wins */
	CHECK_CONTAINS(c.flat_file, "/etc/cni/net.d/whereabouts.d/whereabouts.conf");
	rn_ipam_config_free(&c);

	/* our own file comes first in the same directory */
	write_file("/etc/cni/net.d/rdma-netns-ipam.d/rdma-netns-ipam.conf",
		   "{\"store\":\"local\",\"dataDir\":\"/srv/ipam\"}");
	CHECK_INT(parse("{\"ipam\":{\"range\":\"10.1.0.0/16\"}}", 0, &c, &err), 0);
	CHECK_INT(c.store, RN_IPAM_STORE_LOCAL);
	CHECK_STR(c.data_dir, "/srv/ipam");
	rn_ipam_config_free(&c);

	/* /etc/kubernetes/cni/net.d comes before /etc/cni/net.d */
	write_file("/etc/kubernetes/cni/net.d/whereabouts.d/whereabouts.conf",
		   "{\"dataDir\":\"/srv/k8s\"}");
	CHECK_INT(parse("{\"ipam\":{\"range\":\"10.1.0.0/16\"}}", 0, &c, &err), 0);
	CHECK_STR(c.data_dir, "/srv/k8s");
	rn_ipam_config_free(&c);
	remove_tree();
}

static void conflists_and_flat_objects_are_read_too(void)
{
	struct rn_ipam_config c;
	struct rn_error err = { 0 };

	fresh_root();
	CHECK_INT(parse("{\"cniVersion\":\"1.1.0\",\"name\":\"list\",\"plugins\":["
			"{\"type\":\"rdma-netns\",\"ipam\":{\"type\":\"rdma-netns-ipam\","
			"\"range\":\"10.3.0.0/16\"}},{\"type\":\"tuning\"}]}",
			0, &c, &err),
		  0);
	CHECK_STR(c.network, "list");
	CHECK_STR(c.cni_version, "1.1.0");
	CHECK_STR(c.ranges[0].cidr, "10.3.0.0/16");
	rn_ipam_config_free(&c);
	CHECK_INT(parse("{\"range\":\"10.4.0.0/16\",\"dataDir\":\"/d\"}", 0, &c, &err), 0);
	CHECK_STR(c.ranges[0].cidr, "10.4.0.0/16");
	CHECK_STR(c.network, "");
	rn_ipam_config_free(&c);
	remove_tree();
}

static void store_only_parsing_ignores_the_ranges(void)
{
	struct rn_ipam_config c;
	struct rn_error err = { 0 };

	/* DEL and GC must work after someone broke the range */
	fresh_root();
	CHECK_INT(parse("{\"name\":\"n\",\"ipam\":{\"range\":\"broken\",\"dataDir\":\"/d\"}}",
			RN_IPAM_CONFIG_STORE_ONLY, &c, &err),
		  0);
	CHECK_INT(c.n_ranges, 0);
	CHECK_STR(c.data_dir, "/d");
	rn_ipam_config_free(&c);
	remove_tree();
}

static void node_name_comes_from_the_config_then_nodename(void)
{
	struct rn_ipam_config c;
	struct rn_error err = { 0 };

	fresh_root();
	setenv("NODENAME", "env-node", 1);
	CHECK_INT(parse("{\"ipam\":{\"range\":\"10.0.0.0/8\"}}", 0, &c, &err), 0);
	CHECK_STR(c.node, "env-node");
	rn_ipam_config_free(&c);
	CHECK_INT(parse("{\"ipam\":{\"range\":\"10.0.0.0/8\",\"node_name\":\"cfg-node\"}}", 0, &c,
			&err),
		  0);
	CHECK_STR(c.node, "cfg-node");
	rn_ipam_config_free(&c);
	unsetenv("NODENAME");
	remove_tree();
}

static void records_round_trip_and_skip_unknown_keys(void)
{
	struct rn_ipam_record rec = { .ip = "10.56.0.7",
				      .range = "10.56.0.0/24",
				      .scope = "_default",
				      .pool = "addr",
				      .attachment = "ns/pod/net1",
				      .network = "rdma-a",
				      .container_id = "abc123",
				      .ifname = "net1",
				      .pod = "ns/pod",
				      .node = "worker-3",
				      .time = "2024-05-01T12:00:00Z" },
			      back;
	struct rn_ipam_attachment att = { .id = "ns/pod/net1",
					  .scope = "_default",
					  .network = "rdma-a",
					  .container_id = "abc123",
					  .ifname = "net1",
					  .node = "worker-3",
					  .n = 2,
					  .held = { { "addr", "10.56.0.7", "10.56.0.0/24" },
						    { "r-fd00::_64", "fd00::7", "fd00::/64" } } },
				  att_back;
	struct rn_error err = { 0 };
	char *text = NULL;

	CHECK_INT(rn_ipam_record_format(&rec, &text), 0);
	CHECK_CONTAINS(text, "ip=10.56.0.7\n");
	CHECK_CONTAINS(text, "node=worker-3\n");
	CHECK_CONTAINS(text, "container_id=abc123\n");
	CHECK_INT(rn_ipam_record_parse(text, &back, &err), 0);
	CHECK(memcmp(&rec, &back, sizeof(rec)) == 0);
	free(text);
	CHECK_INT(rn_ipam_record_parse("ip=10.0.0.1\nattachment=a/b\nscope=s\npool=addr\n"
				       "future_key=whatever\n",
				       &back, &err),
		  0);
	CHECK_STR(back.ip, "10.0.0.1");

	CHECK_INT(rn_ipam_attachment_format(&att, &text), 0);
	CHECK_CONTAINS(text, "address=addr 10.56.0.7 10.56.0.0/24\n");
	CHECK_INT(rn_ipam_attachment_parse(text, &att_back, &err), 0);
	CHECK(memcmp(&att, &att_back, sizeof(att)) == 0);
	free(text);
}

static void damaged_records_are_refused(void)
{
	struct rn_ipam_record rec = { 0 }, back;
	struct rn_ipam_attachment att;
	struct rn_error err = { 0 };
	char *text = NULL;

	CHECK_INT(rn_ipam_record_parse("garbage", &back, &err), -EBADMSG);
	CHECK_CONTAINS(err.msg, "not an address record");
	CHECK_INT(
		rn_ipam_record_parse("ip=10.0.0.300\nattachment=a\nscope=s\npool=p\n", &back, &err),
		-EBADMSG);
	CHECK_INT(rn_ipam_attachment_parse("attachment=a\n", &att, &err), -EBADMSG);
	CHECK_INT(rn_ipam_attachment_parse("attachment=a\nscope=s\ncontainer_id=c\naddress=x\n",
					   &att, &err),
		  -EBADMSG);
	/*
	 * What could not be written back is damage (fuzz-ipam-record): a control
	 * character in a value (a DEL rewriting the attachment would fail for
	 * ever), a pool that is not one directory name.
	 */
	CHECK_INT(rn_ipam_record_parse("ip=10.0.0.3\nattachment=a\nscope=s\npool=addr\n"
				       "network=rdma\tdual\n",
				       &back, &err),
		  -EBADMSG);
	CHECK_INT(rn_ipam_record_parse("ip=10.0.0.3\nattachment=a\nscope=s\npool=../x\n", &back,
				       &err),
		  -EBADMSG);
	CHECK_INT(rn_ipam_attachment_parse("attachment=a\nscope=s\ncontainer_id=c\n"
					   "address=../../etc 10.0.0.3 10.0.0.0/24\n",
					   &att, &err),
		  -EBADMSG);
	CHECK_INT(rn_ipam_attachment_parse("attachment=a\r\nscope=s\ncontainer_id=c\n", &att, &err),
		  -EBADMSG);
	CHECK_INT(rn_ipam_attachment_parse("attachment=a\nscope=s\ncontainer_id=c\n"
					   "address=addr 10.0.0.3 10.0.0.0/24\n",
					   &att, &err),
		  0);
	/* a value with a newline would forge a line: refused when writing */
	snprintf(rec.ip, sizeof(rec.ip), "10.0.0.1");
	snprintf(rec.pod, sizeof(rec.pod), "ns/pod\nnode=evil");
	CHECK_INT(rn_ipam_record_format(&rec, &text), -EINVAL);
	CHECK(text == NULL);
}

RN_TEST_MAIN(T(whereabouts_example_config_parses),
	     T(ip_ranges_give_dual_stack_and_the_gateway_goes_to_its_family),
	     T(a_gateway_outside_every_range_is_refused), T(bad_values_name_their_key),
	     T(network_name_and_overlap_choose_the_pool), T(old_etcd_keys_select_the_etcd_store),
	     T(the_etcd_object_and_password_file),
	     T(bad_etcd_settings_are_refused_without_echoing_secrets),
	     T(endpoints_with_a_password_are_refused_and_redacted),
	     T(files_named_by_the_config_must_be_regular),
	     T(whereabouts_kubernetes_datastore_picks_the_kubernetes_store),
	     T(configuration_path_fills_what_the_inline_config_leaves_out),
	     T(flat_files_are_searched_where_whereabouts_looks),
	     T(conflists_and_flat_objects_are_read_too), T(store_only_parsing_ignores_the_ranges),
	     T(node_name_comes_from_the_config_then_nodename),
	     T(records_round_trip_and_skip_unknown_keys), T(damaged_records_are_refused))
