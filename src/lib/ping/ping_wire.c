// SPDX-License-Identifier: Apache-2.0
/*
 * rdmans ping's hello: what each side puts in the CM request's and accept's
 * private data. Pure bytes, no librdmacm: the fuzz target and the unit test
 * read it without a device.
 */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "rdmans/ping_wire.h"

static void put32(uint8_t *p, uint32_t v)
{
	v = htobe32(v);
	memcpy(p, &v, 4);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return be32toh(v);
}

void rn_ping_wire_encode(const struct rn_ping_wire *w, uint8_t buf[RN_PING_WIRE_LEN])
{
	uint64_t a = htobe64(w->addr);

	memset(buf, 0, RN_PING_WIRE_LEN);
	put32(buf, RN_PING_WIRE_MAGIC);
	buf[4] = 0;
	buf[5] = RN_PING_WIRE_VERSION;
	put32(buf + 8, w->lat_size);
	put32(buf + 12, w->lat_count);
	put32(buf + 16, w->bw_size);
	put32(buf + 20, w->bw_count);
	memcpy(buf + 24, &a, 8);
	put32(buf + 32, w->rkey);
	put32(buf + 36, w->len);
}

int rn_ping_wire_decode(const void *buf, size_t len, struct rn_ping_wire *out, struct rn_error *err)
{
	const uint8_t *p = buf;
	struct rn_ping_wire w;
	uint64_t a;
	unsigned version;

	if (!buf || len < RN_PING_WIRE_LEN)
		return rn_error_set(err, EPROTO,
				    "the peer's hello has %zu bytes, not %d: not rdmans ping", len,
				    RN_PING_WIRE_LEN);
	if (get32(p) != RN_PING_WIRE_MAGIC)
		return rn_error_set(err, EPROTO,
				    "the peer's hello does not start with rdmans ping's magic "
				    "(another program listens on that port?)");
	version = (unsigned)p[4] << 8 | p[5];
	if (version != RN_PING_WIRE_VERSION)
		return rn_error_set(err, EPROTO,
				    "the peer speaks rdmans ping version %u, this one %d: run the "
				    "same rdmans on both sides",
				    version, RN_PING_WIRE_VERSION);
	w.lat_size = get32(p + 8);
	w.lat_count = get32(p + 12);
	w.bw_size = get32(p + 16);
	w.bw_count = get32(p + 20);
	memcpy(&a, p + 24, 8);
	w.addr = be64toh(a);
	w.rkey = get32(p + 32);
	w.len = get32(p + 36);
	if (w.lat_size < 1 || w.lat_size > RN_PING_MAX_SIZE || w.bw_size < 1 ||
	    w.bw_size > RN_PING_MAX_SIZE)
		return rn_error_set(err, EPROTO,
				    "the peer's message sizes (%u, %u) are outside 1..%u bytes",
				    w.lat_size, w.bw_size, RN_PING_MAX_SIZE);
	if (w.lat_count < 1 || w.lat_count > RN_PING_MAX_COUNT || w.bw_count < 1 ||
	    w.bw_count > RN_PING_MAX_COUNT)
		return rn_error_set(err, EPROTO, "the peer's counts (%u, %u) are outside 1..%u",
				    w.lat_count, w.bw_count, RN_PING_MAX_COUNT);
	if (w.len != (w.lat_size > w.bw_size ? w.lat_size : w.bw_size))
		return rn_error_set(err, EPROTO,
				    "the peer's buffer has %u bytes, its messages need %u", w.len,
				    w.lat_size > w.bw_size ? w.lat_size : w.bw_size);
	if (w.addr > UINT64_MAX - w.len)
		return rn_error_set(err, EPROTO, "the peer's buffer address wraps around");
	*out = w;
	return 0;
}
