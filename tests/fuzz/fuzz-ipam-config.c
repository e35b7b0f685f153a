// SPDX-License-Identifier: Apache-2.0
/*
 * rdma-netns-ipam's configuration (a network config, a conflist or a flat
 * object; whereabouts' keys): a refusal says why; what is accepted has
 * ranges whose bounds nest, a store, and a scope. The flat-file search runs
 * under an empty scratch root. First byte: flags (store-only parsing).
 */
#include <stdbool.h>

#include "fuzz.h"
#include "rdmans/ipam.h"

/* "scheme://user:pw@host/...": a password in the URL, which the parser must refuse. */
static bool has_userinfo(const char *url)
{
	const char *a = strstr(url, "://");

	a = a ? a + 3 : url;
	return memchr(a, '@', strcspn(a, "/?#")) != NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rn_ipam_config c;
	struct rn_error err = { 0 };
	unsigned flags;
	char *json;
	int r;

	if (size < 1)
		return 0;
	flags = data[0] & 1 ? RN_IPAM_CONFIG_STORE_ONLY : 0;
	json = fuzz_str(data + 1, size - 1);
	memset(&c, 0, sizeof(c));
	r = rn_ipam_config_parse(json, fuzz_scratch_dir(), flags, &c, &err);
	if (r < 0) {
		FUZZ_ASSERT(err.msg[0], "refused (%d) without a message", r);
	} else {
		FUZZ_ASSERT(flags || c.n_ranges > 0, "accepted without a range");
		FUZZ_ASSERT(c.n_ranges <= RN_IPAM_MAX_RANGES, "too many ranges");
		for (size_t i = 0; i < c.n_ranges; i++) {
			const struct rn_ipam_range *rg = &c.ranges[i];

			FUZZ_ASSERT(rg->net <= rg->start && rg->start <= rg->end &&
					    rg->end <= rg->last,
				    "range %zu: bounds do not nest", i);
		}
		FUZZ_ASSERT(c.scope && c.data_dir, "no scope or data dir");
		FUZZ_ASSERT(c.store != RN_IPAM_STORE_ETCD || c.etcd.n_endpoints > 0,
			    "etcd store without endpoints");
		FUZZ_ASSERT(c.store != RN_IPAM_STORE_KUBERNETES ||
				    (c.kubernetes.kubeconfig && c.kubernetes.kubeconfig[0] == '/'),
			    "kubernetes store without an absolute kubeconfig");
		for (size_t i = 0; i < c.etcd.n_endpoints; i++)
			FUZZ_ASSERT(!has_userinfo(c.etcd.endpoints[i]),
				    "an endpoint with a password was accepted: %s",
				    c.etcd.endpoints[i]);
		rn_ipam_config_free(&c);
	}
	free(json);
	return 0;
}
