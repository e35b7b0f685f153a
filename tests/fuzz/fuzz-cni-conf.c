// SPDX-License-Identifier: Apache-2.0
/*
 * rdma-netns' network configuration (stdin) and its prevResult: parsed as
 * the plugin parses them for each CNI command; a refusal always says why,
 * and a prevResult that parses is passed on as JSON again.
 */
#include "conf.h"
#include "result.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const commands[] = { "ADD", "DEL", "CHECK", "STATUS", "GC", "VERSION" };
	struct cni_ctx ctx;
	char *raw;
	int r;

	if (size < 1)
		return 0;
	memset(&ctx, 0, sizeof(ctx));
	ctx.command = commands[data[0] % 6];
	ctx.container_id = "c0ffee";
	ctx.ifname = "net1";
	ctx.netns = "/var/run/netns/none";
	raw = fuzz_str(data + 1, size - 1);
	r = cni_conf_parse(&ctx, raw, size - 1);
	FUZZ_ASSERT(r == 0 || (ctx.fail.code > 0 && ctx.fail.msg[0]),
		    "a refusal without a code or message");
	if (r == 0 && ctx.conf.prev_result) {
		struct cni_ipam_result res;
		json_t *out;

		memset(&res, 0, sizeof(res));
		(void)cni_ipam_result_parse(&ctx, ctx.conf.prev_result, &res);
		cni_ipam_result_free(&res);
		out = cni_result_chained(&ctx);
		if (out) {
			char *text = json_dumps(out, JSON_COMPACT);

			FUZZ_ASSERT(text, "prevResult cannot be written back");
			free(text);
			json_decref(out);
		}
	}
	/* the IPAM result parser also reads what a delegate prints: the same text */
	if (r == 0 && ctx.conf.root) {
		struct cni_ipam_result res;

		memset(&res, 0, sizeof(res));
		(void)cni_ipam_result_parse(&ctx, ctx.conf.root, &res);
		cni_ipam_result_free(&res);
	}
	cni_conf_free(&ctx.conf);
	free(raw);
	return 0;
}
