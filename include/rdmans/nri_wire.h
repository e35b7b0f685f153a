/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NRI's wire, for rdmans-nri: one unix socket carries a multiplexer (frames:
 * u32 BE connection id, u32 BE length, payload); connection 1 carries the
 * runtime's calls to the plugin, connection 2 the plugin's calls to the
 * runtime. Each connection is a ttrpc byte stream (10-byte header: u32 BE
 * length, u32 BE stream id, u8 type, u8 flags), whose payloads are protobuf
 * messages of ttrpc (Request, Response) and of the NRI API. protobuf-c is
 * used here only: callers see plain C.
 */
#ifndef RDMANS_NRI_WIRE_H
#define RDMANS_NRI_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdmans/error.h"

#define RN_NRI_CONN_PLUGIN 1u /* the runtime calls the plugin (we serve) */
#define RN_NRI_CONN_RUNTIME 2u /* the plugin calls the runtime (we are the client) */
#define RN_TTRPC_HEADER 10u
#define RN_TTRPC_MAX (4u << 20) /* ttrpc's largest message */
#define RN_TTRPC_REQUEST 1
#define RN_TTRPC_RESPONSE 2

/* NRI events (api.proto enum Event); a plugin subscribes with 1 << (event - 1). */
enum rn_nri_event {
	RN_NRI_EV_RUN_POD_SANDBOX = 1,
	RN_NRI_EV_STOP_POD_SANDBOX = 2,
	RN_NRI_EV_REMOVE_POD_SANDBOX = 3,
	RN_NRI_EV_CREATE_CONTAINER = 4,
};
#define RN_NRI_EVENT_BIT(e) (1 << ((e)-1))

/* ---- the multiplexed byte streams ---- */

struct rn_nri_stream {
	uint8_t *buf;
	size_t len, cap;
};

struct rn_nri_demux {
	uint8_t frame_hdr[8];
	size_t hdr_have; /* bytes of the current frame header seen */
	uint32_t frame_conn; /* the current frame's connection, */
	size_t frame_left; /* and what of its payload is still to come */
	struct rn_nri_stream conn[2]; /* connections 1 and 2 */
	size_t consumed[2]; /* of each stream, handed out by rn_nri_demux_next() */
};

struct rn_ttrpc_msg {
	uint32_t conn, stream_id;
	uint8_t type, flags;
	const uint8_t *payload; /* valid until the next rn_nri_demux_* call */
	size_t len;
};

void rn_nri_demux_free(struct rn_nri_demux *d);
/* Bytes read from the socket. Fails on a connection id other than 1 or 2, or a frame over the limit. */
int rn_nri_demux_feed(struct rn_nri_demux *d, const uint8_t *buf, size_t len, struct rn_error *err);
/* 1 and *out: a whole ttrpc message; 0: none yet; < 0: a malformed stream. */
int rn_nri_demux_next(struct rn_nri_demux *d, struct rn_ttrpc_msg *out, struct rn_error *err);

/* Mux frame + ttrpc header + payload in one buffer, for one write(). Free *ret with free(). */
int rn_nri_frame(uint32_t conn, uint32_t stream_id, uint8_t type, const uint8_t *payload,
		 size_t len, uint8_t **ret, size_t *ret_len, struct rn_error *err);

/* ---- calls from the runtime (connection 1) ---- */

enum rn_nri_method {
	RN_NRI_UNKNOWN = 0,
	RN_NRI_CONFIGURE,
	RN_NRI_SYNCHRONIZE,
	RN_NRI_SHUTDOWN,
	RN_NRI_CREATE_CONTAINER,
	RN_NRI_UPDATE_CONTAINER,
	RN_NRI_STOP_CONTAINER,
	RN_NRI_STATE_CHANGE,
};

struct rn_nri_call {
	enum rn_nri_method method;
	char name[128]; /* "Service/Method", for messages */
	int event; /* RN_NRI_STATE_CHANGE: enum rn_nri_event */
	/* Configure */
	int64_t request_timeout_ms;
	const char *runtime_name, *runtime_version;
	/* Synchronize */
	bool more;
	/* the pod and the container, when the call names them ("" when not) */
	const char *pod_id, *pod_name, *pod_namespace;
	const char *pod_netns; /* the sandbox's network namespace path, or NULL */
	uint32_t pod_pid;
	const char *ctr_id, *ctr_name;
	void *priv; /* the decoded messages, which the strings above point into */
};

/* Decodes a ttrpc Request payload. Unknown methods decode (method RN_NRI_UNKNOWN). */
int rn_nri_call_decode(const uint8_t *payload, size_t len, struct rn_nri_call *out,
		       struct rn_error *err);
void rn_nri_call_free(struct rn_nri_call *c);
/* The container's annotation key, else the pod's; NULL when neither has it. */
const char *rn_nri_call_annotation(const struct rn_nri_call *c, const char *key);
/* The container's environment value of name, or NULL. */
const char *rn_nri_call_env(const struct rn_nri_call *c, const char *name);
/* The paths of the container's device nodes (linux.devices), up to max; their number. */
size_t rn_nri_call_devices(const struct rn_nri_call *c, const char **paths, size_t max);

/* ---- our answers (ttrpc Response payloads; free *ret with free()) ---- */

struct rn_nri_env {
	const char *name, *value;
};

struct rn_nri_device {
	char path[64];
	uint32_t major, minor;
};

struct rn_nri_adjust {
	const struct rn_nri_env *env;
	size_t n_env;
	const struct rn_nri_device *devices;
	size_t n_devices;
};

/* ConfigureResponse{events} */
int rn_nri_reply_configure(int32_t events, uint8_t **ret, size_t *ret_len, struct rn_error *err);
/* SynchronizeResponse{more} */
int rn_nri_reply_synchronize(bool more, uint8_t **ret, size_t *ret_len, struct rn_error *err);
/* An empty message: Empty, UpdateContainerResponse, StopContainerResponse. */
int rn_nri_reply_empty(uint8_t **ret, size_t *ret_len, struct rn_error *err);
/* CreateContainerResponse{adjust: env, linux.devices} */
int rn_nri_reply_create(const struct rn_nri_adjust *adj, uint8_t **ret, size_t *ret_len,
			struct rn_error *err);
/* A failed call: gRPC status code and message (the runtime shows the message). */
int rn_nri_reply_error(int code, const char *msg, uint8_t **ret, size_t *ret_len,
		       struct rn_error *err);

/* ---- our call to the runtime (connection 2) ---- */

/* ttrpc Request for Runtime.RegisterPlugin{name, idx}. */
int rn_nri_request_register(const char *name, const char *idx, int64_t timeout_ns, uint8_t **ret,
			    size_t *ret_len, struct rn_error *err);
/* A ttrpc Response: 0 when its status is OK, else -EPROTO with the runtime's code and message. */
int rn_nri_response_check(const uint8_t *payload, size_t len, const char *what,
			  struct rn_error *err);

#define RN_GRPC_UNKNOWN 2
#define RN_GRPC_INVALID_ARGUMENT 3
#define RN_GRPC_FAILED_PRECONDITION 9
#define RN_GRPC_UNIMPLEMENTED 12
#define RN_GRPC_INTERNAL 13

#endif
