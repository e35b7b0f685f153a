// SPDX-License-Identifier: Apache-2.0
/*
 * rdmans ping's wire (the hello each side puts in the CM private data) and
 * the nccl.conf lookup that picks its default device and GID index.
 */
#include <errno.h>
#include <string.h>

#include "rdmans/nccl.h"
#include "rdmans/nccl_conf.h"
#include "rdmans/ping.h"
#include "test.h"

static const struct rn_ping_wire good = {
	.lat_size = 64,
	.lat_count = 1000,
	.bw_size = 65536,
	.bw_count = 500,
	.addr = 0x7f0012345000ull,
	.rkey = 0xdeadbeef,
	.len = 65536,
};

static void wire_round_trips(void)
{
	uint8_t buf[RN_PING_WIRE_LEN + 16];
	struct rn_ping_wire w;
	struct rn_error err = { 0 };

	memset(buf, 0, sizeof(buf));
	rn_ping_wire_encode(&good, buf);
	REQUIRE(rn_ping_wire_decode(buf, RN_PING_WIRE_LEN, &w, &err) == 0);
	CHECK(memcmp(&w, &good, sizeof(w)) == 0);
	/* rdma_cm pads private data: trailing bytes are ignored */
	REQUIRE(rn_ping_wire_decode(buf, sizeof(buf), &w, &err) == 0);
	CHECK(memcmp(&w, &good, sizeof(w)) == 0);
	CHECK(!rn_error_isset(&err));
}

static void wire_is_big_endian_with_the_magic_first(void)
{
	uint8_t buf[RN_PING_WIRE_LEN];

	rn_ping_wire_encode(&good, buf);
	CHECK(memcmp(buf, "RNP1", 4) == 0);
	CHECK_INT(buf[5], RN_PING_WIRE_VERSION);
	CHECK_INT(buf[32], 0xde);
	CHECK_INT(buf[35], 0xef);
}

static int decode_modified(size_t off, uint32_t value_be_byte, size_t len, struct rn_error *err)
{
	uint8_t buf[RN_PING_WIRE_LEN];
	struct rn_ping_wire w;

	rn_ping_wire_encode(&good, buf);
	if (off < sizeof(buf))
		buf[off] = (uint8_t)value_be_byte;
	rn_error_clear(err);
	return rn_ping_wire_decode(buf, len, &w, err);
}

static void wire_refuses_what_is_not_a_hello(void)
{
	struct rn_error err = { 0 };
	struct rn_ping_wire w;

	CHECK_INT(rn_ping_wire_decode(NULL, 0, &w, &err), -EPROTO);
	CHECK(strstr(err.msg, "0 bytes") != NULL);
	CHECK_INT(decode_modified(99, 0, RN_PING_WIRE_LEN - 1, &err), -EPROTO);
	CHECK(strstr(err.msg, "39 bytes") != NULL);
	CHECK_INT(decode_modified(0, 'X', RN_PING_WIRE_LEN, &err), -EPROTO);
	CHECK(strstr(err.msg, "magic") != NULL);
	CHECK_INT(decode_modified(5, 2, RN_PING_WIRE_LEN, &err), -EPROTO);
	CHECK(strstr(err.msg, "version 2") != NULL);
}

static void wire_refuses_sizes_and_counts_out_of_bounds(void)
{
	struct rn_error err = { 0 };

	/* lat_size 0 */
	CHECK_INT(decode_modified(11, 0, RN_PING_WIRE_LEN, &err), -EPROTO);
	CHECK(strstr(err.msg, "sizes") != NULL);
	/* bw_size 2^24 + 65536 > RN_PING_MAX_SIZE */
	CHECK_INT(decode_modified(16, 1, RN_PING_WIRE_LEN, &err), -EPROTO);
	CHECK(strstr(err.msg, "sizes") != NULL);
	/* lat_count 0x010003e8 > RN_PING_MAX_COUNT */
	CHECK_INT(decode_modified(12, 1, RN_PING_WIRE_LEN, &err), -EPROTO);
	CHECK(strstr(err.msg, "counts") != NULL);
	{ /* bw_count 0 */
		uint8_t buf[RN_PING_WIRE_LEN];
		struct rn_ping_wire w = good;

		w.bw_count = 0;
		rn_ping_wire_encode(&w, buf);
		CHECK_INT(rn_ping_wire_decode(buf, sizeof(buf), &w, &err), -EPROTO);
		CHECK(strstr(err.msg, "counts") != NULL);
		w = good;
		w.lat_count = 0;
		rn_ping_wire_encode(&w, buf);
		CHECK_INT(rn_ping_wire_decode(buf, sizeof(buf), &w, &err), -EPROTO);
		CHECK(strstr(err.msg, "counts") != NULL);
	}
}

static void wire_refuses_a_buffer_that_does_not_fit(void)
{
	uint8_t buf[RN_PING_WIRE_LEN];
	struct rn_ping_wire w = good;
	struct rn_error err = { 0 };

	w.len = 64; /* smaller than the bandwidth writes */
	rn_ping_wire_encode(&w, buf);
	CHECK_INT(rn_ping_wire_decode(buf, sizeof(buf), &w, &err), -EPROTO);
	CHECK(strstr(err.msg, "buffer has 64 bytes") != NULL);
	w = good;
	w.addr = UINT64_MAX - 100; /* addr + len wraps */
	rn_ping_wire_encode(&w, buf);
	CHECK_INT(rn_ping_wire_decode(buf, sizeof(buf), &w, &err), -EPROTO);
	CHECK(strstr(err.msg, "wraps") != NULL);
}

static void nccl_conf_value_reads_as_nccl_does(void)
{
	const char *conf = "# NCCL_IB_HCA=commented\n"
			   "NCCL_IB_HCA_X=no\n"
			   "NCCL_IB_HCA==rxeB:1\n"
			   "NCCL_IB_GID_INDEX=3\n"
			   "NCCL_IB_HCA=second\n"
			   "NCCL_SOCKET_IFNAME==b0";
	char v[64];

	REQUIRE(rn_nccl_conf_value(conf, "NCCL_IB_HCA", v, sizeof(v)));
	CHECK_STR(v, "=rxeB:1"); /* the first line wins, nothing is trimmed */
	REQUIRE(rn_nccl_conf_value(conf, "NCCL_IB_GID_INDEX", v, sizeof(v)));
	CHECK_STR(v, "3");
	REQUIRE(rn_nccl_conf_value(conf, "NCCL_SOCKET_IFNAME", v, sizeof(v)));
	CHECK_STR(v, "=b0"); /* the last line, without a newline */
	CHECK(!rn_nccl_conf_value(conf, "NCCL_IB", v, sizeof(v)));
	CHECK(!rn_nccl_conf_value(conf, "NCCL_NET", v, sizeof(v)));
	CHECK(!rn_nccl_conf_value("", "NCCL_IB_HCA", v, sizeof(v)));
	CHECK(!rn_nccl_conf_value(conf, "NCCL_IB_HCA", v, 4)); /* does not fit: none */
}

RN_TEST_MAIN(T(wire_round_trips), T(wire_is_big_endian_with_the_magic_first),
	     T(wire_refuses_what_is_not_a_hello), T(wire_refuses_sizes_and_counts_out_of_bounds),
	     T(wire_refuses_a_buffer_that_does_not_fit), T(nccl_conf_value_reads_as_nccl_does))
