// SPDX-License-Identifier: Apache-2.0
/*
 * rdma-netns-ipam's CNI_ARGS parser, reached by compiling its main.c here
 * (the parser is static there; its main() is renamed and never called).
 */
#include "cni-args.h"

int rdma_netns_ipam_main(void);
#define main rdma_netns_ipam_main
#include "../../src/ipam/main.c"
#undef main

int fuzz_cni_args_ipam(const char *args, char *pod_ns, char *pod_name, size_t len)
{
	struct plugin p;
	int r;

	memset(&p, 0, sizeof(p));
	r = parse_cni_args(&p, args);
	FUZZ_ASSERT(r == 0 || r == -EINVAL, "refused with %d", r);
	FUZZ_ASSERT(strlen(p.pod_namespace) < sizeof(p.pod_namespace) &&
			    strlen(p.pod_name) < sizeof(p.pod_name),
		    "a field overran");
	snprintf(pod_ns, len, "%s", p.pod_namespace);
	snprintf(pod_name, len, "%s", p.pod_name);
	return r;
}
