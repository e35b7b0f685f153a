// SPDX-License-Identifier: Apache-2.0
/*
 * The GPU reader (gpu.c) on any text: the driver's information file, and a
 * container's NVIDIA_VISIBLE_DEVICES and CDI name (the second half of the
 * input, after the first NUL) against a node of 4 GPUs. A refusal says why;
 * what is accepted has an address, a UUID GPU-..., a minor of 0-255, and
 * selects only GPUs the node has.
 */
#include <stdio.h>
#include <string.h>

#include "fuzz.h"
#include "rdmans/gpu.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct rn_gpu node[4] = {
		{ "0000:18:00.0", 0, "GPU-a", "" },
		{ "0000:2a:00.0", 3, "GPU-b", "" },
		{ "0000:9a:00.0", 2, "GPU-c", "" },
		{ "0000:bb:00.0", 1, "GPU-d", "" },
	};
	char *text = fuzz_field(&data, &size, 0), *second = fuzz_field(&data, &size, 0);
	struct rn_gpu g;
	struct rn_error err = { 0 };
	bool sel[RN_GPU_MAX];
	int r;

	if (!text)
		text = fuzz_str(data, 0);

	r = rn_gpu_parse_information(text, &g, &err);
	if (r < 0) {
		FUZZ_ASSERT(err.msg[0], "refused (%d) without a message", r);
	} else {
		FUZZ_ASSERT(g.bdf[0] && strncmp(g.uuid, "GPU-", 4) == 0 && g.minor <= 255,
			    "accepted without address, UUID or minor");
	}
	{
		char cdi_name[128];
		const char *cdi[1] = { cdi_name };
		struct rn_gpu_request req = { NULL, 0, text, cdi, 1 };

		snprintf(cdi_name, sizeof(cdi_name), "nvidia.com/gpu=%.100s", second ? second : "");
		err = (struct rn_error){ 0 };
		r = rn_gpu_select(node, 4, &req, sel, &err);
		if (r < 0)
			FUZZ_ASSERT(err.msg[0], "selection refused (%d) without a message", r);
	}
	free(text);
	free(second);
	return 0;
}
