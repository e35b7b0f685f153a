// SPDX-License-Identifier: Apache-2.0
/*
 * IPAM address records and attachments (the store's files and etcd
 * values): what parses is written back to text that parses again, to a
 * record that is written the same way. First byte: record (even) or attachment (odd).
 */
#include "fuzz.h"
#include "rdmans/ipam.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rn_error err = { 0 };
	char *text, *once = NULL, *twice = NULL;

	if (size < 1)
		return 0;
	text = fuzz_str(data + 1, size - 1);
	if (data[0] % 2 == 0) {
		struct rn_ipam_record a, b;

		memset(&a, 0, sizeof(a));
		memset(&b, 0, sizeof(b));
		if (rn_ipam_record_parse(text, &a, &err) == 0) {
			FUZZ_ASSERT(a.pool[0] != '.' && !strchr(a.pool, '/'),
				    "pool '%s' is no directory name", a.pool);
			FUZZ_ASSERT(rn_ipam_record_format(&a, &once) == 0,
				    "a parsed record cannot be written");
			FUZZ_ASSERT(rn_ipam_record_parse(once, &b, &err) == 0,
				    "a written record does not parse: %s", err.msg);
			FUZZ_ASSERT(rn_ipam_record_format(&b, &twice) == 0 &&
					    strcmp(once, twice) == 0,
				    "writing again changed the text");
		} else {
			FUZZ_ASSERT(err.msg[0], "refused without a message");
		}
	} else {
		struct rn_ipam_attachment a, b;

		memset(&a, 0, sizeof(a));
		memset(&b, 0, sizeof(b));
		if (rn_ipam_attachment_parse(text, &a, &err) == 0) {
			FUZZ_ASSERT(a.n <= RN_IPAM_MAX_RANGES, "too many addresses");
			for (size_t i = 0; i < a.n; i++)
				FUZZ_ASSERT(a.held[i].pool[0] != '.' &&
						    !strchr(a.held[i].pool, '/'),
					    "pool '%s' is no directory name", a.held[i].pool);
			FUZZ_ASSERT(rn_ipam_attachment_format(&a, &once) == 0,
				    "a parsed attachment cannot be written");
			FUZZ_ASSERT(rn_ipam_attachment_parse(once, &b, &err) == 0,
				    "a written attachment does not parse: %s", err.msg);
			FUZZ_ASSERT(a.n == b.n, "the attachment lost addresses");
			FUZZ_ASSERT(rn_ipam_attachment_format(&b, &twice) == 0 &&
					    strcmp(once, twice) == 0,
				    "writing again changed the text");
		} else {
			FUZZ_ASSERT(err.msg[0], "refused without a message");
		}
	}
	free(once);
	free(twice);
	free(text);
	return 0;
}
