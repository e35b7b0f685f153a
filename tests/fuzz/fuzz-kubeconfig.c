// SPDX-License-Identifier: Apache-2.0
/*
 * The kubernetes store's kubeconfig reader (ipam_kubeconfig.c) on any text:
 * JSON or the YAML subset. A refusal says why; what is accepted names an
 * http(s) server without a trailing '/', absolute file paths (relative ones
 * start at the kubeconfig's directory, "/k" here), and a client certificate
 * only with its key.
 */
#include <jansson.h>

#include "fuzz.h"
#include "rdmans/ipam_kubeconfig.h"

static void absolute(const char *path, const char *what)
{
	FUZZ_ASSERT(!path || path[0] == '/', "%s '%s' is not absolute", what, path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rn_kubeconfig k;
	struct rn_error err = { 0 };
	char *text = fuzz_str(data, size);
	json_t *tree = NULL;
	size_t line;
	int r;

	r = rn_kubeconfig_yaml(text, &tree, &line, &err);
	if (r < 0)
		FUZZ_ASSERT(err.msg[0], "YAML refused (%d) without a message", r);
	else
		FUZZ_ASSERT(tree, "YAML accepted without a tree");
	json_decref(tree);
	err = (struct rn_error){ 0 };
	r = rn_kubeconfig_parse(text, "k", "/k", &k, &err);
	if (r < 0) {
		FUZZ_ASSERT(err.msg[0], "refused (%d) without a message", r);
	} else {
		size_t n = strlen(k.server);

		FUZZ_ASSERT(!strncmp(k.server, "https://", 8) || !strncmp(k.server, "http://", 7),
			    "server '%s' is not http(s)", k.server);
		FUZZ_ASSERT(n <= 8 || k.server[n - 1] != '/', "server '%s' ends in '/'", k.server);
		absolute(k.ca_file, "ca_file");
		absolute(k.cert_file, "cert_file");
		absolute(k.key_file, "key_file");
		absolute(k.token_file, "token_file");
		FUZZ_ASSERT(!(k.cert_file || k.cert_pem) == !(k.key_file || k.key_pem),
			    "a client certificate without its key, or the reverse");
		rn_kubeconfig_free(&k);
	}
	free(text);
	return 0;
}
