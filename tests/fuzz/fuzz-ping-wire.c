// SPDX-License-Identifier: Apache-2.0
/*
 * rdmans ping's hello, as a peer's CM private data brings it
 * (rn_ping_wire_decode, rdmans/ping.h): any bytes, any length. A refusal
 * is -EPROTO with a message; an accepted hello is within bounds (sizes,
 * counts, a buffer that holds the larger message and does not wrap), and
 * encoding it gives back the bytes it was read from (the two reserved bytes
 * aside), which decode to the same hello.
 */
#include <errno.h>

#include "fuzz.h"
#include "rdmans/ping.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rn_error err = { 0 };
	struct rn_ping_wire w, again;
	uint8_t buf[RN_PING_WIRE_LEN];
	int r = rn_ping_wire_decode(data, size, &w, &err);

	if (r < 0) {
		FUZZ_ASSERT(r == -EPROTO && err.code == EPROTO && err.msg[0], "refusal %d '%s'", r,
			    err.msg);
		return 0;
	}
	FUZZ_ASSERT(r == 0 && !rn_error_isset(&err), "accepted with an error set");
	FUZZ_ASSERT(size >= RN_PING_WIRE_LEN, "accepted %zu bytes", size);
	FUZZ_ASSERT(w.lat_size >= 1 && w.lat_size <= RN_PING_MAX_SIZE, "lat_size %u", w.lat_size);
	FUZZ_ASSERT(w.bw_size >= 1 && w.bw_size <= RN_PING_MAX_SIZE, "bw_size %u", w.bw_size);
	FUZZ_ASSERT(w.lat_count >= 1 && w.lat_count <= RN_PING_MAX_COUNT, "lat_count %u",
		    w.lat_count);
	FUZZ_ASSERT(w.bw_count >= 1 && w.bw_count <= RN_PING_MAX_COUNT, "bw_count %u", w.bw_count);
	FUZZ_ASSERT(w.len >= w.lat_size && w.len >= w.bw_size, "len %u", w.len);
	FUZZ_ASSERT(w.addr <= UINT64_MAX - w.len, "buffer wraps");
	rn_ping_wire_encode(&w, buf);
	FUZZ_ASSERT(memcmp(buf, data, 6) == 0 &&
			    memcmp(buf + 8, data + 8, RN_PING_WIRE_LEN - 8) == 0,
		    "encoding differs from the input");
	FUZZ_ASSERT(rn_ping_wire_decode(buf, sizeof(buf), &again, &err) == 0 &&
			    memcmp(&again, &w, sizeof(w)) == 0,
		    "the encoding decodes to another hello");
	return 0;
}
