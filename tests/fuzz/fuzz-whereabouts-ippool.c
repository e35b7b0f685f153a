// SPDX-License-Identifier: Apache-2.0
/*
 * whereabouts' IPPools as `rdmans ipam import` reads them (ipam_import.c) on
 * any text. A refusal says why; every accepted allocation has a container
 * id, an address inside its pool's range and of its family, a podref split
 * into namespace and name (both or neither) and fields without newlines
 * (records are key=value lines).
 */
#include <string.h>

#include "fuzz.h"
#include "rdmans/ipam_import.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rn_whereabouts_alloc *a = NULL;
	struct rn_error err = { 0 };
	size_t n = 0;
	int r;

	r = rn_whereabouts_parse((const char *)data, size, &a, &n, &err);
	if (r < 0) {
		FUZZ_ASSERT(err.msg[0], "refused (%d) without a message", r);
		FUZZ_ASSERT(!a && n == 0, "refused, yet allocations came back");
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		struct rn_ip base;
		unsigned prefix, bits;
		rn_u128 mask, max;

		FUZZ_ASSERT(a[i].container_id[0], "allocation %s without a container id",
			    a[i].offset);
		FUZZ_ASSERT(rn_cidr_parse(a[i].range, &base, &prefix) == 0, "range '%s' kept",
			    a[i].range);
		FUZZ_ASSERT(base.family == a[i].ip.family, "%s is not of %s's family", a[i].ip_text,
			    a[i].range);
		bits = rn_ip_bits(base.family);
		max = bits == 128 ? ~(rn_u128)0 : ((rn_u128)1 << bits) - 1;
		mask = prefix == 0 ? 0 : (max << (bits - prefix)) & max;
		FUZZ_ASSERT(a[i].ip.v <= max && (a[i].ip.v & mask) == (base.v & mask),
			    "%s is outside %s", a[i].ip_text, a[i].range);
		FUZZ_ASSERT(!a[i].pod_namespace[0] == !a[i].pod_name[0],
			    "a podref half split: '%s' '%s'", a[i].pod_namespace, a[i].pod_name);
		FUZZ_ASSERT(!strchr(a[i].container_id, '\n') && !strchr(a[i].pod_name, '\n') &&
				    !strchr(a[i].pod_namespace, '\n') && !strchr(a[i].ifname, '\n'),
			    "a newline in allocation %s", a[i].offset);
	}
	free(a);
	return 0;
}
