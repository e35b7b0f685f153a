// SPDX-License-Identifier: Apache-2.0
/*
 * cni-conf-check: runs a network configuration (stdin) through the plugins'
 * own parsers, those rdma-netns and rdma-netns-ipam run on ADD:
 * cni_conf_parse (src/cni/conf.c) when its type is rdma-netns, and
 * rn_ipam_config_parse when its ipam type is rdma-netns-ipam (no config file
 * merged: the root is an empty directory). Prints "ok" or the parser's
 * message; exit 0 or 1. Used by tests/unit/manifests.py on every
 * NetworkAttachmentDefinition and config in examples/, deploy/, cni-conf/.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "rdmans/ipam.h"

int main(int argc, char **argv)
{
	static struct cni_ctx ctx;
	static char buf[1024 * 1024];
	const char *empty_root = argc > 1 ? argv[1] : "/nonexistent";
	size_t len = fread(buf, 1, sizeof(buf) - 1, stdin);
	json_t *root, *ipam;
	const char *type, *ipam_type = NULL;

	buf[len] = '\0';
	ctx.command = "ADD"; /* the strictest: ADD needs everything the others do */
	root = json_loads(buf, 0, NULL);
	type = json_string_value(json_object_get(root, "type"));
	ipam = json_object_get(root, "ipam");
	if (ipam)
		ipam_type = json_string_value(json_object_get(ipam, "type"));
	if (type && strcmp(type, "rdma-netns") == 0) {
		int r = cni_conf_parse(&ctx, buf, len);

		cni_conf_free(&ctx.conf);
		if (r < 0) {
			printf("rdma-netns: %s\n", ctx.fail.msg);
			json_decref(root);
			return 1;
		}
	}
	if (ipam_type && strcmp(ipam_type, "rdma-netns-ipam") == 0) {
		struct rn_ipam_config cfg;
		struct rn_error err = { 0 };

		if (rn_ipam_config_parse(buf, empty_root, 0, &cfg, &err) < 0) {
			printf("rdma-netns-ipam: %s\n", err.msg);
			json_decref(root);
			return 1;
		}
		rn_ipam_config_free(&cfg);
	}
	json_decref(root);
	puts("ok");
	return 0;
}
