// SPDX-License-Identifier: Apache-2.0
/*
 * rdma-netns' own CNI_ARGS parser, reached by compiling its main.c here
 * (the parser is static there; its main() is renamed and never called).
 */
#include "cni-args.h"

int rdma_netns_main(int argc, char **argv);
#define main rdma_netns_main
#include "../../src/cni/main.c"
#undef main

int fuzz_cni_args_netns(const char *args, char *pod_ns, char *pod_name, size_t len)
{
	struct cni_ctx ctx;
	int r;

	memset(&ctx, 0, sizeof(ctx));
	r = parse_cni_args(&ctx, args);
	FUZZ_ASSERT(r == 0 || (ctx.code == CNI_ERR_INVALID_ENV && ctx.msg[0]),
		    "refused without code 4 and a message");
	FUZZ_ASSERT(strlen(ctx.pod_namespace) < sizeof(ctx.pod_namespace) &&
			    strlen(ctx.pod_name) < sizeof(ctx.pod_name) &&
			    strlen(ctx.pod_uid) < sizeof(ctx.pod_uid) &&
			    strlen(ctx.infra_id) < sizeof(ctx.infra_id),
		    "a field overran");
	if (r == 0)
		FUZZ_ASSERT(!strchr(ctx.pod_namespace, '\n') && !strchr(ctx.pod_name, '\n'),
			    "a pod name with a newline was taken");
	snprintf(pod_ns, len, "%s", ctx.pod_namespace);
	snprintf(pod_name, len, "%s", ctx.pod_name);
	return r;
}
