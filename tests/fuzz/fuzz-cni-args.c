// SPDX-License-Identifier: Apache-2.0
/*
 * CNI_ARGS ("K8S_POD_NAMESPACE=ns;K8S_POD_NAME=n;IgnoreUnknown=1") as both
 * plugins read it: no overrun, refusals with the right code, and where both
 * take the text, they agree on the pod (rdma-netns records it in its state,
 * rdma-netns-ipam in its address records; GC and `rdmans ipam` join them).
 */
#include "cni-args.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *args = fuzz_str(data, size);
	char ns1[512], name1[512], ns2[512], name2[512];
	int r1 = fuzz_cni_args_netns(args, ns1, name1, sizeof(ns1));
	int r2 = fuzz_cni_args_ipam(args, ns2, name2, sizeof(ns2));

	if (r1 == 0 && r2 == 0)
		FUZZ_ASSERT(strcmp(ns1, ns2) == 0 && strcmp(name1, name2) == 0,
			    "the plugins read pod %s/%s and %s/%s from \"%s\"", ns1, name1, ns2,
			    name2, args);
	free(args);
	return 0;
}
