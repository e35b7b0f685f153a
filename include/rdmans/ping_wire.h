/* SPDX-License-Identifier: Apache-2.0 */
/* rdmans ping's hello, in the private data of the CM request and its accept. */
#ifndef RDMANS_PING_WIRE_H
#define RDMANS_PING_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "rdmans/error.h"

#define RN_PING_MAX_SIZE (16u << 20) /* bytes of one message */
#define RN_PING_MAX_COUNT 1000000u /* round trips or writes */

#define RN_PING_WIRE_MAGIC 0x524e5031u /* "RNP1" */
#define RN_PING_WIRE_VERSION 1
#define RN_PING_WIRE_LEN 40 /* fits a RoCE/IB REQ's 56 bytes of private data */

struct rn_ping_wire {
	uint32_t lat_size; /* bytes of each latency message */
	uint32_t lat_count; /* round trips of each latency test */
	uint32_t bw_size; /* bytes of each bandwidth write */
	uint32_t bw_count; /* bandwidth writes */
	uint64_t addr; /* the sender's buffer that the other side writes into */
	uint32_t rkey;
	uint32_t len; /* its length: max(lat_size, bw_size) */
};

/* Encodes w into buf (RN_PING_WIRE_LEN bytes, big-endian). */
void rn_ping_wire_encode(const struct rn_ping_wire *w, uint8_t buf[RN_PING_WIRE_LEN]);
/*
 * Decodes and checks what a peer sent (len may be more than
 * RN_PING_WIRE_LEN: rdma_cm pads private data). -EPROTO with the reason
 * when it is short, not ours, of another version, or out of bounds (sizes
 * 1..RN_PING_MAX_SIZE, counts 1..RN_PING_MAX_COUNT, len = the larger size).
 */
int rn_ping_wire_decode(const void *buf, size_t len, struct rn_ping_wire *out,
			struct rn_error *err);

#endif
