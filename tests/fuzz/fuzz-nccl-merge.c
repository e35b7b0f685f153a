// SPDX-License-Identifier: Apache-2.0
/*
 * nccl.conf merge: for any image file and any result,
 * no line of the image is lost and merging again changes nothing
 * (merge-props.c). Input: two bytes that shape the result, then the file.
 */
#include "fuzz.h"
#include "merge-props.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rn_nccl_result res;
	char why[1024] = "", *existing;

	if (merge_props_result(&data, &size, &res) < 0)
		abort();
	existing = fuzz_str(data, size);
	FUZZ_ASSERT(merge_props_check(&res, existing, "fuzz", why, sizeof(why)) == 0, "%s", why);
	free(existing);
	rn_nccl_result_free(&res);
	return 0;
}
