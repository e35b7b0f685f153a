// SPDX-License-Identifier: Apache-2.0
/*
 * rdmans-hook's input: the OCI state on stdin and the annotations it
 * carries (devices, the nccl block, the profile, nccl-conf), parsed by the
 * hook's own readers (src/hook/state.c, in the hook's static library;
 * config.json, netns and files are left out). A refusal says why; an
 * accepted state has an id, a pid > 0 and an absolute bundle.
 */
#include "fuzz.h"
#include "hook.h"
#include "rdmans/nccl.h"
#include "rdmans/nccl_json.h"
#include "rdmans/rdma_nl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hook h;
	struct rn_error err = { 0 };
	char *text = fuzz_str(data, size);
	const char *v;

	memset(&h, 0, sizeof(h));
	if (hook_parse_state(&h, text, &err) < 0) {
		FUZZ_ASSERT(err.msg[0], "refused without a message");
		goto out;
	}
	FUZZ_ASSERT(h.pid > 0 && h.bundle[0] == '/', "accepted pid %d bundle '%s'", (int)h.pid,
		    h.bundle);
	v = hook_annotation(&h, RN_ANN_DEVICES);
	if (v && rn_pod_ask_add_devices(&h.ask, v, "annotation " RN_ANN_DEVICES, &err) == 0) {
		FUZZ_ASSERT(h.ask.n_devices <= RN_POD_MAX_DEVICES, "too many devices");
		for (size_t i = 0; i < h.ask.n_devices; i++)
			FUZZ_ASSERT(h.ask.devices[i][0] && !strpbrk(h.ask.devices[i], "/, \n") &&
					    strlen(h.ask.devices[i]) < RN_RDMA_NAME_MAX,
				    "device name '%s' taken", h.ask.devices[i]);
	}
	v = hook_annotation(&h, RN_ANN_NCCL);
	if (v) {
		struct rn_nccl_layer l;

		rn_nccl_layer_init(&l, RN_NCCL_SRC_ANNOTATION, RN_ANN_NCCL);
		if (rn_nccl_layer_from_json(&l, v, &err) == 0)
			for (size_t i = 0; i < l.n; i++)
				FUZZ_ASSERT(rn_nccl_name_valid(l.kv[i].name) &&
						    !strpbrk(l.kv[i].value, "\n\r"),
					    "nccl block: %s taken", l.kv[i].name);
		rn_nccl_layer_free(&l);
	}
	v = hook_annotation(&h, RN_ANN_PROFILE);
	if (v) {
		struct rn_nccl_layer l;

		rn_nccl_layer_init(&l, RN_NCCL_SRC_ANNOTATION, RN_ANN_PROFILE);
		(void)rn_nccl_layer_set_profile(&l, v, &err);
		rn_nccl_layer_free(&l);
	}
out:
	hook_free(&h);
	free(text);
	return 0;
}
