// SPDX-License-Identifier: Apache-2.0
/* The kubeconfig reader of the kubernetes store: what tools write is read, the rest refused by line. */
#include <errno.h>
#include <stdlib.h>

#include "rdmans/ipam_kubeconfig.h"
#include "test.h"

/* what whereabouts' installer writes (a ServiceAccount's token file), with kubectl's habits */
static const char whereabouts_yaml[] =
	"# Kubeconfig file for the plugin\n"
	"---\n"
	"apiVersion: v1\n"
	"kind: Config\n"
	"clusters:\n"
	"- name: local\n"
	"  cluster:\n"
	"    server: https://[fd00::1]:443/   # trailing slash dropped\n"
	"    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==\n"
	"users:\n"
	"  - name: rdmans\n"
	"    user:\n"
	"      tokenFile: \"token\"\n"
	"contexts:\n"
	"- name: 'rdmans-context'\n"
	"  context:\n"
	"    cluster: local\n"
	"    user: rdmans\n"
	"current-context: rdmans-context\n";

static void whereabouts_style_yaml_is_read(void)
{
	struct rn_kubeconfig k;
	struct rn_error err = { 0 };

	REQUIRE(rn_kubeconfig_parse(whereabouts_yaml, "k", "/etc/cni/net.d/x.d", &k, &err) == 0);
	CHECK_STR(k.server, "https://[fd00::1]:443");
	CHECK_STR(k.ca_pem, "-----BEGIN CERTIFICATE-----\n");
	CHECK(k.ca_file == NULL);
	/* relative paths start at the kubeconfig's directory, as kubectl takes them */
	CHECK_STR(k.token_file, "/etc/cni/net.d/x.d/token");
	CHECK(k.token == NULL && k.cert_file == NULL && k.cert_pem == NULL);
	rn_kubeconfig_free(&k);
}

static void json_with_client_certificate_files(void)
{
	struct rn_kubeconfig k;
	struct rn_error err = { 0 };

	REQUIRE(rn_kubeconfig_parse(
			"{\"clusters\":[{\"name\":\"c\",\"cluster\":{\"server\":\"https://h:6443\","
			"\"certificate-authority\":\"/ca.crt\"}}],"
			"\"users\":[{\"name\":\"u\",\"user\":{\"client-certificate\":\"/u.crt\","
			"\"client-key\":\"/u.key\",\"token\":\"t0k\"}}],"
			"\"contexts\":[{\"name\":\"x\",\"context\":{\"cluster\":\"c\",\"user\":"
			"\"u\"}}]}",
			"k", NULL, &k, &err) == 0);
	CHECK_STR(k.server, "https://h:6443");
	CHECK_STR(k.ca_file, "/ca.crt");
	CHECK_STR(k.cert_file, "/u.crt");
	CHECK_STR(k.key_file, "/u.key");
	CHECK_STR(k.token, "t0k");
	rn_kubeconfig_free(&k);
}

static void the_current_context_picks_cluster_and_user(void)
{
	struct rn_kubeconfig k;
	struct rn_error err = { 0 };

	REQUIRE(rn_kubeconfig_parse("clusters:\n"
				    "- name: a\n  cluster:\n    server: https://a\n"
				    "- name: b\n  cluster:\n    server: https://b\n"
				    "contexts:\n"
				    "- name: one\n  context: {}\n"
				    "- name: two\n  context:\n    cluster: b\n"
				    "current-context: two\n",
				    "k", NULL, &k, &err) == 0);
	CHECK_STR(k.server, "https://b");
	rn_kubeconfig_free(&k);
	/* two contexts and no current one: which is meant cannot be told */
	CHECK_INT(rn_kubeconfig_parse("clusters: []\ncontexts:\n- name: a\n- name: b\n", "k", NULL,
				      &k, &err),
		  -EINVAL);
	CHECK_CONTAINS(err.msg, "no current-context");
}

/* Each refusal names what to do, or the line it is on. */
static void what_is_not_read_is_refused_by_line(void)
{
	static const struct {
		const char *text, *says;
	} cases[] = {
		{ "a: 1\nb: &x 2\n", "line 2: anchors" },
		{ "a:\n\tb: 1\n", "line 2: a tab" },
		{ "a: [1, 2]\n", "line 1: flow collections" },
		{ "a: |\n  x\n", "line 1: block scalars" },
		{ "a: 1\n---\nb: 2\n", "line 2: a second document" },
		{ "a: 1\na: 2\n", "line 2: a key given twice" },
		{ "a: 1\n   b: 2\n", "line 2: unexpected indentation" },
		{ "a: \"open\n", "line 1: a quoted scalar is not closed" },
		{ "clusters:\n- name: c\n  cluster:\n    server: https://c\n"
		  "users:\n- name: u\n  user:\n    exec:\n      command: aws\n"
		  "contexts:\n- name: x\n  context:\n    cluster: c\n    user: u\n",
		  "by exec are not supported" },
		{ "clusters:\n- name: c\n  cluster:\n    server: https://c\n"
		  "    insecure-skip-tls-verify: true\n"
		  "contexts:\n- name: x\n  context:\n    cluster: c\n",
		  "insecure-skip-tls-verify is not supported" },
		{ "clusters:\n- name: c\n  cluster:\n    server: https://c\n"
		  "    certificate-authority: ca.crt\n"
		  "contexts:\n- name: x\n  context:\n    cluster: c\n",
		  "is relative" },
		{ "clusters:\n- name: c\n  cluster:\n    server: https://c\n"
		  "users:\n- name: u\n  user:\n    client-certificate: /u.crt\n"
		  "contexts:\n- name: x\n  context:\n    cluster: c\n    user: u\n",
		  "without its key" },
		{ "contexts:\n- name: x\n  context:\n    cluster: gone\n",
		  "cluster 'gone' is not" },
		{ "", "it is empty" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct rn_kubeconfig k;
		struct rn_error err = { 0 };
		int r = rn_kubeconfig_parse(cases[i].text, "k", NULL, &k, &err);

		CHECK(r == -EBADMSG || r == -EINVAL);
		CHECK_CONTAINS(err.msg, cases[i].says);
	}
}

RN_TEST_MAIN(T(whereabouts_style_yaml_is_read), T(json_with_client_certificate_files),
	     T(the_current_context_picks_cluster_and_user), T(what_is_not_read_is_refused_by_line))
