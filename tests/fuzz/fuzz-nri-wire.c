// SPDX-License-Identifier: Apache-2.0
/*
 * rdmans-nri's wire (rdmans/nri_wire.h), as a runtime or anything on its
 * socket could send it: any bytes, split anywhere. Properties:
 *  - the demultiplexer hands out the same ttrpc messages on each connection whether the bytes
 *    come at once or one by one, and refuses (-EPROTO/-EMSGSIZE, with a
 *    message) either way or neither;
 *  - every message decodes as a call (a refusal is -EPROTO with a message),
 *    or as the runtime's answer to RegisterPlugin (0, or -EPROTO with a
 *    message); the annotations and env of a call can be read;
 *  - an answer to the call (an error carrying a message) encodes and reads
 *    back with that message.
 */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "rdmans/nri_wire.h"

#define MAX_MSGS 64

struct seen {
	size_t n;
	uint32_t conn[MAX_MSGS], stream[MAX_MSGS];
	size_t len[MAX_MSGS];
	int result;
};

static void check_call(const struct rn_ttrpc_msg *m)
{
	struct rn_error err = { 0 };
	struct rn_nri_call c;
	int r;

	if (m->conn == RN_NRI_CONN_RUNTIME) {
		r = rn_nri_response_check(m->payload, m->len, "RegisterPlugin", &err);
		FUZZ_ASSERT(r == 0 || (r == -EPROTO && err.msg[0]), "response check %d", r);
		return;
	}
	r = rn_nri_call_decode(m->payload, m->len, &c, &err);
	FUZZ_ASSERT(r == 0 || (r == -EPROTO && err.msg[0]), "decode %d '%s'", r, err.msg);
	if (r == 0) {
		uint8_t *reply = NULL;
		size_t len = 0;

		(void)rn_nri_call_annotation(&c, "rdmans.io/devices");
		(void)rn_nri_call_env(&c, "NCCL_IB_HCA");
		{
			const char *paths[8];
			size_t n = rn_nri_call_devices(&c, paths, 8);

			for (size_t i = 0; i < n; i++)
				(void)strlen(paths[i]);
		}
		FUZZ_ASSERT(c.pod_id && c.pod_name && c.pod_namespace && c.ctr_id && c.ctr_name,
			    "a NULL name");
		FUZZ_ASSERT(rn_nri_reply_error(RN_GRPC_UNKNOWN, c.name, &reply, &len, &err) == 0,
			    "encode");
		r = rn_nri_response_check(reply, len, "echo", &err);
		FUZZ_ASSERT(r == -EPROTO && strstr(err.msg, c.name), "message lost: '%s' / '%s'",
			    err.msg, c.name);
		free(reply);
	}
	rn_nri_call_free(&c);
}

static void run(const uint8_t *data, size_t size, size_t step, struct seen *s, bool decode)
{
	struct rn_nri_demux d = { 0 };
	struct rn_error err = { 0 };
	struct rn_ttrpc_msg m;

	memset(s, 0, sizeof(*s));
	for (size_t at = 0; at < size && s->result >= 0; at += step) {
		int r = rn_nri_demux_feed(&d, data + at, size - at < step ? size - at : step, &err);

		while (r == 0 && (r = rn_nri_demux_next(&d, &m, &err)) == 1) {
			if (s->n < MAX_MSGS) {
				s->conn[s->n] = m.conn;
				s->stream[s->n] = m.stream_id;
				s->len[s->n] = m.len;
			}
			s->n++;
			if (decode)
				check_call(&m);
			r = 0;
		}
		if (r < 0) {
			FUZZ_ASSERT((r == -EPROTO || r == -EMSGSIZE) && err.msg[0], "demux %d", r);
			s->result = r;
		}
	}
	rn_nri_demux_free(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct seen whole, bytes;

	run(data, size, size ? size : 1, &whole, true);
	run(data, size, 1, &bytes, false);
	FUZZ_ASSERT((whole.result < 0) == (bytes.result < 0), "result %d at once, %d byte by byte",
		    whole.result, bytes.result);
	/* each connection's messages in the same order (the two interleave as the bytes come) */
	if (whole.result == 0) {
		FUZZ_ASSERT(whole.n == bytes.n, "%zu messages at once, %zu byte by byte", whole.n,
			    bytes.n);
		for (uint32_t conn = 1; conn <= 2; conn++) {
			size_t i = 0, j = 0, n = whole.n < MAX_MSGS ? whole.n : MAX_MSGS;

			for (;;) {
				while (i < n && whole.conn[i] != conn)
					i++;
				while (j < n && bytes.conn[j] != conn)
					j++;
				if (i == n || j == n)
					break;
				FUZZ_ASSERT(whole.stream[i] == bytes.stream[j] &&
						    whole.len[i] == bytes.len[j],
					    "connection %u: message %zu/%zu differs", conn, i, j);
				i++;
				j++;
			}
		}
	}
	return 0;
}
