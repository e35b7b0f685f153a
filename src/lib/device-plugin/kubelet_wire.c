// SPDX-License-Identifier: Apache-2.0
/*
 * kubelet's gRPC APIs over grpc's C core: one completion queue serves every
 * DevicePlugin server of the process; each call is a small state machine
 * whose tags come back on that queue. Client calls (Register,
 * PodResources.List) run on a queue of their own and wait for their answer.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/slice.h>
#include <grpc/support/time.h>

#include "deviceplugin.pb-c.h"
#include "podresources.pb-c.h"
#include "rdmans/cleanup.h"
#include "rdmans/kubelet_wire.h"

#define DP_SERVICE "/v1beta1.DevicePlugin/"
#define MAX_MESSAGE (4u << 20) /* gRPC's default limit */
#define STOP_DRAIN_MS 10000 /* how long a stopping server waits for its calls */

/* ---- Allocate's answer, built by the caller ---- */

static int dup_pair(struct rn_kw_pair *v, size_t *n, const char *what, const char *key,
		    const char *value, struct rn_error *err)
{
	if (*n >= RN_KW_MAX_PAIRS)
		return rn_error_set(err, E2BIG, "more than %d %s in one container's answer",
				    RN_KW_MAX_PAIRS, what);
	v[*n].key = strdup(key);
	v[*n].value = strdup(value);
	if (!v[*n].key || !v[*n].value) {
		free(v[*n].key);
		free(v[*n].value);
		return rn_error_set(err, ENOMEM, "out of memory");
	}
	(*n)++;
	return 0;
}

int rn_kw_alloc_env(struct rn_kw_alloc *a, const char *key, const char *value, struct rn_error *err)
{
	return dup_pair(a->envs, &a->n_envs, "environment variables", key, value, err);
}

int rn_kw_alloc_annotation(struct rn_kw_alloc *a, const char *key, const char *value,
			   struct rn_error *err)
{
	return dup_pair(a->annotations, &a->n_annotations, "annotations", key, value, err);
}

int rn_kw_alloc_device(struct rn_kw_alloc *a, const char *path, const char *permissions,
		       struct rn_error *err)
{
	struct rn_kw_device_spec *d;

	if (a->n_devices >= RN_ARRAY_SIZE(a->devices))
		return rn_error_set(err, E2BIG,
				    "more than %zu device nodes in one container's answer",
				    RN_ARRAY_SIZE(a->devices));
	d = &a->devices[a->n_devices];
	d->container_path = strdup(path);
	d->host_path = strdup(path);
	d->permissions = strdup(permissions);
	if (!d->container_path || !d->host_path || !d->permissions) {
		free(d->container_path);
		free(d->host_path);
		free(d->permissions);
		return rn_error_set(err, ENOMEM, "out of memory");
	}
	a->n_devices++;
	return 0;
}

int rn_kw_alloc_cdi(struct rn_kw_alloc *a, const char *name, struct rn_error *err)
{
	if (a->n_cdi >= RN_KW_MAX_IDS)
		return rn_error_set(err, E2BIG,
				    "more than %d CDI devices in one container's answer",
				    RN_KW_MAX_IDS);
	if (!(a->cdi[a->n_cdi] = strdup(name)))
		return rn_error_set(err, ENOMEM, "out of memory");
	a->n_cdi++;
	return 0;
}

void rn_kw_alloc_clear(struct rn_kw_alloc *a)
{
	for (size_t i = 0; i < a->n_envs; i++) {
		free(a->envs[i].key);
		free(a->envs[i].value);
	}
	for (size_t i = 0; i < a->n_annotations; i++) {
		free(a->annotations[i].key);
		free(a->annotations[i].value);
	}
	for (size_t i = 0; i < a->n_devices; i++) {
		free(a->devices[i].container_path);
		free(a->devices[i].host_path);
		free(a->devices[i].permissions);
	}
	for (size_t i = 0; i < a->n_cdi; i++)
		free(a->cdi[i]);
	a->n_envs = a->n_annotations = a->n_devices = a->n_cdi = 0;
}

/* ---- messages <-> byte buffers ---- */

static grpc_byte_buffer *pack_message(const ProtobufCMessage *m)
{
	size_t len = protobuf_c_message_get_packed_size(m);
	grpc_slice s = grpc_slice_malloc(len);
	grpc_byte_buffer *bb;

	protobuf_c_message_pack(m, GRPC_SLICE_START_PTR(s));
	bb = grpc_raw_byte_buffer_create(&s, 1);
	grpc_slice_unref(s);
	return bb;
}

/* NULL when bb holds no valid message of `desc` (or is NULL: the peer sent none). */
static ProtobufCMessage *unpack_message(const ProtobufCMessageDescriptor *desc,
					grpc_byte_buffer *bb)
{
	grpc_byte_buffer_reader r;
	ProtobufCMessage *m;
	grpc_slice s;

	if (!bb || !grpc_byte_buffer_reader_init(&r, bb))
		return NULL;
	s = grpc_byte_buffer_reader_readall(&r);
	grpc_byte_buffer_reader_destroy(&r);
	m = GRPC_SLICE_LENGTH(s) > MAX_MESSAGE
		    ? NULL
		    : protobuf_c_message_unpack(desc, NULL, GRPC_SLICE_LENGTH(s),
						GRPC_SLICE_START_PTR(s));
	grpc_slice_unref(s);
	return m;
}

static void message_freep(ProtobufCMessage **m)
{
	if (*m)
		protobuf_c_message_free_unpacked(*m, NULL);
}

static gpr_timespec deadline_ms(int ms)
{
	return gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
			    gpr_time_from_millis(ms < 0 ? 0 : ms, GPR_TIMESPAN));
}

static void init_grpc_once(void)
{
	/* grpc_init() is reference counted; rdmans never tears gRPC down. */
	static int done;

	if (!done) {
		grpc_init();
		done = 1;
	}
}

/* ---- the server side ---- */

enum call_method {
	M_UNKNOWN,
	M_OPTIONS,
	M_LIST_AND_WATCH,
	M_PREFERRED,
	M_ALLOCATE,
	M_PRE_START,
};

enum tag_kind {
	T_NEW, /* a call arrived (grpc_server_request_call) */
	T_RECV, /* its request message is in */
	T_SEND, /* a ListAndWatch answer went out */
	T_CLOSE, /* the client is gone (RECV_CLOSE_ON_SERVER) */
	T_DONE, /* a unary call's answer and status went out */
	T_SHUTDOWN, /* the server has shut down */
};

struct kw_call;
struct kw_tag {
	enum tag_kind kind;
	struct kw_call *call;
	struct rn_kw_server *srv; /* T_SHUTDOWN */
};

struct kw_call {
	struct rn_kw_server *srv;
	grpc_call *call;
	grpc_call_details details;
	grpc_metadata_array md;
	grpc_byte_buffer *recv, *send;
	grpc_slice status_details;
	bool have_status_details;
	enum call_method method;
	int cancelled;
	unsigned ops; /* batches in flight */
	bool closed; /* no more sends: the client is gone or the answer went out */
	bool sending;
	uint64_t sent_gen;
	struct kw_call *next; /* on srv->streams */
	struct kw_tag t_new, t_recv, t_send, t_close, t_done;
};

struct rn_kw_device_list {
	size_t n;
	char **ids;
	struct rn_kw_device *v;
};

struct rn_kw_server {
	struct rn_kw_loop *loop;
	grpc_server *server;
	char *path;
	const struct rn_kw_ops *ops;
	void *ctx;
	bool preferred;
	bool shutting_down, shut_down;
	bool abandoned; /* stopped, but its calls did not all come back */
	uint64_t gen; /* bumped by each publish */
	grpc_byte_buffer *list; /* the current ListAndWatchResponse */
	struct kw_call *streams;
	struct kw_call *waiting; /* the call slot handed to grpc_server_request_call */
	unsigned live_calls;
	struct kw_tag t_shutdown;
	struct rn_kw_server *next; /* on loop->servers */
};

struct rn_kw_loop {
	grpc_completion_queue *cq;
	struct rn_kw_server *servers;
};

static void call_free(struct kw_call *c)
{
	struct rn_kw_server *srv = c->srv;

	for (struct kw_call **p = &srv->streams; *p; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			break;
		}
	if (c->call)
		grpc_call_unref(c->call);
	grpc_call_details_destroy(&c->details);
	grpc_metadata_array_destroy(&c->md);
	if (c->recv)
		grpc_byte_buffer_destroy(c->recv);
	if (c->send)
		grpc_byte_buffer_destroy(c->send);
	if (c->have_status_details)
		grpc_slice_unref(c->status_details);
	srv->live_calls--;
	free(c);
}

static int start_batch(struct kw_call *c, const grpc_op *ops, size_t n, struct kw_tag *tag)
{
	if (grpc_call_start_batch(c->call, ops, n, tag, NULL) != GRPC_CALL_OK)
		return -EIO;
	c->ops++;
	return 0;
}

/* Offers a new call slot to the server; every arriving call takes one. */
static int request_call(struct rn_kw_server *srv)
{
	struct kw_call *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->srv = srv;
	grpc_call_details_init(&c->details);
	grpc_metadata_array_init(&c->md);
	c->t_new = (struct kw_tag){ T_NEW, c, NULL };
	c->t_recv = (struct kw_tag){ T_RECV, c, NULL };
	c->t_send = (struct kw_tag){ T_SEND, c, NULL };
	c->t_close = (struct kw_tag){ T_CLOSE, c, NULL };
	c->t_done = (struct kw_tag){ T_DONE, c, NULL };
	srv->live_calls++;
	c->ops = 1; /* the request itself comes back as T_NEW */
	if (grpc_server_request_call(srv->server, &c->call, &c->details, &c->md, srv->loop->cq,
				     srv->loop->cq, &c->t_new) != GRPC_CALL_OK) {
		call_free(c);
		return -EIO;
	}
	srv->waiting = c;
	return 0;
}

static enum call_method method_of(grpc_slice method)
{
	static const struct {
		const char *name;
		enum call_method m;
	} names[] = {
		{ DP_SERVICE "GetDevicePluginOptions", M_OPTIONS },
		{ DP_SERVICE "ListAndWatch", M_LIST_AND_WATCH },
		{ DP_SERVICE "GetPreferredAllocation", M_PREFERRED },
		{ DP_SERVICE "Allocate", M_ALLOCATE },
		{ DP_SERVICE "PreStartContainer", M_PRE_START },
	};
	size_t len = GRPC_SLICE_LENGTH(method);

	for (size_t i = 0; i < RN_ARRAY_SIZE(names); i++)
		if (strlen(names[i].name) == len &&
		    !memcmp(names[i].name, GRPC_SLICE_START_PTR(method), len))
			return names[i].m;
	return M_UNKNOWN;
}

/* The answer (or, answer NULL, the status) of a unary call, then its end. */
static void finish_unary(struct kw_call *c, const ProtobufCMessage *answer, grpc_status_code code,
			 const char *message)
{
	grpc_op ops[4];
	size_t n = 0;

	memset(ops, 0, sizeof(ops));
	ops[n++].op = GRPC_OP_SEND_INITIAL_METADATA;
	if (answer) {
		c->send = pack_message(answer);
		ops[n].op = GRPC_OP_SEND_MESSAGE;
		ops[n++].data.send_message.send_message = c->send;
	}
	ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
	ops[n].data.send_status_from_server.status = answer ? GRPC_STATUS_OK : code;
	if (!answer) {
		c->status_details = grpc_slice_from_copied_string(message);
		c->have_status_details = true;
		ops[n].data.send_status_from_server.status_details = &c->status_details;
	}
	n++;
	ops[n].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
	ops[n++].data.recv_close_on_server.cancelled = &c->cancelled;
	c->closed = true;
	(void)start_batch(c, ops, n, &c->t_done);
}

static grpc_status_code status_of(int r)
{
	return r == -EINVAL   ? GRPC_STATUS_INVALID_ARGUMENT
	       : r == -ENOENT ? GRPC_STATUS_NOT_FOUND
			      : GRPC_STATUS_UNKNOWN;
}

static void answer_options(struct kw_call *c)
{
	V1beta1__DevicePluginOptions o = V1BETA1__DEVICE_PLUGIN_OPTIONS__INIT;

	o.get_preferred_allocation_available = c->srv->preferred;
	finish_unary(c, &o.base, GRPC_STATUS_OK, NULL);
}

static void answer_pre_start(struct kw_call *c)
{
	V1beta1__PreStartContainerResponse o = V1BETA1__PRE_START_CONTAINER_RESPONSE__INIT;

	finish_unary(c, &o.base, GRPC_STATUS_OK, NULL);
}

static void answer_preferred(struct kw_call *c)
{
	_cleanup_(message_freep) ProtobufCMessage *m =
		unpack_message(&v1beta1__preferred_allocation_request__descriptor, c->recv);
	V1beta1__PreferredAllocationRequest *req = (V1beta1__PreferredAllocationRequest *)m;
	V1beta1__PreferredAllocationResponse resp = V1BETA1__PREFERRED_ALLOCATION_RESPONSE__INIT;
	_cleanup_free_ V1beta1__ContainerPreferredAllocationResponse *cr = NULL;
	_cleanup_free_ V1beta1__ContainerPreferredAllocationResponse **crp = NULL;
	_cleanup_free_ const char **ids = NULL;
	struct rn_error err = { 0 };
	size_t used = 0;
	int r;

	if (!req) {
		finish_unary(
			c, NULL, GRPC_STATUS_INVALID_ARGUMENT,
			"GetPreferredAllocation: the request is not a PreferredAllocationRequest");
		return;
	}
	cr = calloc(req->n_container_requests + 1, sizeof(*cr));
	crp = calloc(req->n_container_requests + 1, sizeof(*crp));
	for (size_t i = 0; i < req->n_container_requests; i++)
		used += req->container_requests[i]->n_available_deviceids;
	ids = calloc(used + 1, sizeof(*ids));
	if (!cr || !crp || !ids) {
		finish_unary(c, NULL, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
		return;
	}
	used = 0;
	for (size_t i = 0; i < req->n_container_requests; i++) {
		const V1beta1__ContainerPreferredAllocationRequest *q = req->container_requests[i];
		struct rn_kw_preferred_request p = {
			.available = (const char *const *)q->available_deviceids,
			.n_available = q->n_available_deviceids,
			.must_include = (const char *const *)q->must_include_deviceids,
			.n_must_include = q->n_must_include_deviceids,
			.size = q->allocation_size > 0 ? (size_t)q->allocation_size : 0,
		};
		size_t n = 0;

		r = c->srv->ops->preferred(c->srv->ctx, &p, ids + used, &n, &err);
		if (r < 0) {
			finish_unary(c, NULL, status_of(r), err.msg);
			return;
		}
		v1beta1__container_preferred_allocation_response__init(&cr[i]);
		cr[i].n_deviceids = n;
		cr[i].deviceids = (char **)(ids + used);
		crp[i] = &cr[i];
		used += n;
	}
	resp.n_container_responses = req->n_container_requests;
	resp.container_responses = crp;
	finish_unary(c, &resp.base, GRPC_STATUS_OK, NULL);
}

static void alloc_clearp(struct rn_kw_alloc **a)
{
	if (*a) {
		rn_kw_alloc_clear(*a);
		free(*a);
	}
}

/* One container's answer as the message; everything points into `a`. */
struct alloc_msg {
	V1beta1__ContainerAllocateResponse resp;
	V1beta1__ContainerAllocateResponse__EnvsEntry envs[RN_KW_MAX_PAIRS], *envp[RN_KW_MAX_PAIRS];
	V1beta1__ContainerAllocateResponse__AnnotationsEntry ann[RN_KW_MAX_PAIRS],
		*annp[RN_KW_MAX_PAIRS];
	V1beta1__DeviceSpec dev[2 * RN_KW_MAX_IDS + 1], *devp[2 * RN_KW_MAX_IDS + 1];
	V1beta1__CDIDevice cdi[RN_KW_MAX_IDS], *cdip[RN_KW_MAX_IDS];
};

static void alloc_message(struct alloc_msg *m, const struct rn_kw_alloc *a)
{
	v1beta1__container_allocate_response__init(&m->resp);
	for (size_t i = 0; i < a->n_envs; i++) {
		v1beta1__container_allocate_response__envs_entry__init(&m->envs[i]);
		m->envs[i].key = a->envs[i].key;
		m->envs[i].value = a->envs[i].value;
		m->envp[i] = &m->envs[i];
	}
	for (size_t i = 0; i < a->n_annotations; i++) {
		v1beta1__container_allocate_response__annotations_entry__init(&m->ann[i]);
		m->ann[i].key = a->annotations[i].key;
		m->ann[i].value = a->annotations[i].value;
		m->annp[i] = &m->ann[i];
	}
	for (size_t i = 0; i < a->n_devices; i++) {
		v1beta1__device_spec__init(&m->dev[i]);
		m->dev[i].container_path = a->devices[i].container_path;
		m->dev[i].host_path = a->devices[i].host_path;
		m->dev[i].permissions = a->devices[i].permissions;
		m->devp[i] = &m->dev[i];
	}
	for (size_t i = 0; i < a->n_cdi; i++) {
		v1beta1__cdidevice__init(&m->cdi[i]);
		m->cdi[i].name = a->cdi[i];
		m->cdip[i] = &m->cdi[i];
	}
	m->resp.n_envs = a->n_envs;
	m->resp.envs = m->envp;
	m->resp.n_annotations = a->n_annotations;
	m->resp.annotations = m->annp;
	m->resp.n_devices = a->n_devices;
	m->resp.devices = m->devp;
	m->resp.n_cdi_devices = a->n_cdi;
	m->resp.cdi_devices = m->cdip;
}

struct alloc_all {
	size_t n;
	struct rn_kw_alloc **a;
	struct alloc_msg **m;
};

static void alloc_all_free(struct alloc_all *x)
{
	for (size_t i = 0; i < x->n; i++) {
		alloc_clearp(&x->a[i]);
		free(x->m[i]);
	}
	free(x->a);
	free(x->m);
}

static void answer_allocate(struct kw_call *c)
{
	_cleanup_(message_freep) ProtobufCMessage *m =
		unpack_message(&v1beta1__allocate_request__descriptor, c->recv);
	V1beta1__AllocateRequest *req = (V1beta1__AllocateRequest *)m;
	V1beta1__AllocateResponse resp = V1BETA1__ALLOCATE_RESPONSE__INIT;
	_cleanup_free_ V1beta1__ContainerAllocateResponse **crp = NULL;
	_cleanup_(alloc_all_free) struct alloc_all all = { 0 };
	struct rn_error err = { 0 };
	int r;

	if (!req) {
		finish_unary(c, NULL, GRPC_STATUS_INVALID_ARGUMENT,
			     "Allocate: the request is not an AllocateRequest");
		return;
	}
	crp = calloc(req->n_container_requests + 1, sizeof(*crp));
	all.a = calloc(req->n_container_requests + 1, sizeof(*all.a));
	all.m = calloc(req->n_container_requests + 1, sizeof(*all.m));
	if (!crp || !all.a || !all.m) {
		finish_unary(c, NULL, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
		return;
	}
	for (size_t i = 0; i < req->n_container_requests; i++) {
		const V1beta1__ContainerAllocateRequest *q = req->container_requests[i];

		all.a[i] = calloc(1, sizeof(**all.a));
		all.m[i] = calloc(1, sizeof(**all.m));
		all.n = i + 1;
		if (!all.a[i] || !all.m[i]) {
			finish_unary(c, NULL, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
			return;
		}
		r = c->srv->ops->allocate(c->srv->ctx, (const char *const *)q->devices_ids,
					  q->n_devices_ids, all.a[i], &err);
		if (r < 0) {
			finish_unary(c, NULL, status_of(r), err.msg);
			return;
		}
		alloc_message(all.m[i], all.a[i]);
		crp[i] = &all.m[i]->resp;
	}
	resp.n_container_responses = req->n_container_requests;
	resp.container_responses = crp;
	finish_unary(c, &resp.base, GRPC_STATUS_OK, NULL);
}

static grpc_byte_buffer *list_message(const struct rn_kw_device *devices, size_t n)
{
	V1beta1__ListAndWatchResponse resp = V1BETA1__LIST_AND_WATCH_RESPONSE__INIT;
	_cleanup_free_ V1beta1__Device *dev = calloc(n + 1, sizeof(*dev));
	_cleanup_free_ V1beta1__Device **devp = calloc(n + 1, sizeof(*devp));
	_cleanup_free_ V1beta1__TopologyInfo *topo = calloc(n + 1, sizeof(*topo));
	_cleanup_free_ V1beta1__NUMANode *node = calloc(n + 1, sizeof(*node));
	_cleanup_free_ V1beta1__NUMANode **nodep = calloc(n + 1, sizeof(*nodep));

	if (!dev || !devp || !topo || !node || !nodep)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		v1beta1__device__init(&dev[i]);
		dev[i].id = (char *)devices[i].id;
		dev[i].health = devices[i].healthy ? "Healthy" : "Unhealthy";
		if (devices[i].numa >= 0) {
			v1beta1__topology_info__init(&topo[i]);
			v1beta1__numanode__init(&node[i]);
			node[i].id = devices[i].numa;
			nodep[i] = &node[i];
			topo[i].n_nodes = 1;
			topo[i].nodes = &nodep[i];
			dev[i].topology = &topo[i];
		}
		devp[i] = &dev[i];
	}
	resp.n_devices = n;
	resp.devices = devp;
	return pack_message(&resp.base);
}

/* Sends the current list on a ListAndWatch stream, unless a send is in flight. */
static void stream_send(struct kw_call *c)
{
	grpc_op ops[2];
	size_t n = 0;

	if (c->closed || c->sending || c->sent_gen == c->srv->gen)
		return;
	memset(ops, 0, sizeof(ops));
	if (c->sent_gen == 0)
		ops[n++].op = GRPC_OP_SEND_INITIAL_METADATA;
	if (c->send)
		grpc_byte_buffer_destroy(c->send);
	c->send = grpc_byte_buffer_copy(c->srv->list);
	ops[n].op = GRPC_OP_SEND_MESSAGE;
	ops[n++].data.send_message.send_message = c->send;
	if (start_batch(c, ops, n, &c->t_send) == 0) {
		c->sending = true;
		c->sent_gen = c->srv->gen;
	} else {
		c->closed = true;
	}
}

static void start_stream(struct kw_call *c)
{
	grpc_op op;

	memset(&op, 0, sizeof(op));
	op.op = GRPC_OP_RECV_CLOSE_ON_SERVER;
	op.data.recv_close_on_server.cancelled = &c->cancelled;
	if (start_batch(c, &op, 1, &c->t_close) < 0) {
		c->closed = true;
		return;
	}
	c->next = c->srv->streams;
	c->srv->streams = c;
	stream_send(c);
}

static void on_recv(struct kw_call *c, bool ok)
{
	if (!ok) {
		c->closed = true;
		return;
	}
	switch (c->method) {
	case M_OPTIONS:
		answer_options(c);
		break;
	case M_LIST_AND_WATCH:
		start_stream(c);
		break;
	case M_PREFERRED:
		if (!c->srv->preferred)
			finish_unary(c, NULL, GRPC_STATUS_UNIMPLEMENTED,
				     "GetPreferredAllocation is not offered by this plugin");
		else
			answer_preferred(c);
		break;
	case M_ALLOCATE:
		answer_allocate(c);
		break;
	case M_PRE_START:
		answer_pre_start(c);
		break;
	case M_UNKNOWN:
		finish_unary(c, NULL, GRPC_STATUS_UNIMPLEMENTED, "no such method in DevicePlugin");
		break;
	}
}

static void on_new(struct kw_call *c, bool ok)
{
	struct rn_kw_server *srv = c->srv;
	grpc_op op;

	if (srv->waiting == c)
		srv->waiting = NULL;
	if (!ok) {
		/* the server is shutting down: no call came */
		c->closed = true;
		return;
	}
	if (!srv->shutting_down)
		(void)request_call(srv);
	c->method = method_of(c->details.method);
	memset(&op, 0, sizeof(op));
	op.op = GRPC_OP_RECV_MESSAGE;
	op.data.recv_message.recv_message = &c->recv;
	if (start_batch(c, &op, 1, &c->t_recv) < 0)
		c->closed = true;
}

static void server_destroy(struct rn_kw_server *srv)
{
	struct rn_kw_loop *loop = srv->loop;

	for (struct rn_kw_server **p = &loop->servers; *p; p = &(*p)->next)
		if (*p == srv) {
			*p = srv->next;
			break;
		}
	grpc_server_destroy(srv->server);
	if (srv->list)
		grpc_byte_buffer_destroy(srv->list);
	(void)unlink(srv->path);
	free(srv->path);
	free(srv);
}

static void on_event(grpc_event ev)
{
	struct kw_tag *t = ev.tag;
	struct kw_call *c = t->call;
	bool ok = ev.success;

	if (t->kind == T_SHUTDOWN) {
		t->srv->shut_down = true;
		return;
	}
	c->ops--;
	switch (t->kind) {
	case T_NEW:
		on_new(c, ok);
		break;
	case T_RECV:
		on_recv(c, ok);
		break;
	case T_SEND:
		c->sending = false;
		if (!ok)
			c->closed = true;
		else
			stream_send(c);
		break;
	case T_CLOSE:
		c->closed = true;
		break;
	case T_DONE:
	case T_SHUTDOWN:
		break;
	}
	if (c->ops == 0 && c->closed)
		call_free(c);
}

int rn_kw_loop_new(struct rn_kw_loop **ret, struct rn_error *err)
{
	struct rn_kw_loop *loop;

	init_grpc_once();
	if (!(loop = calloc(1, sizeof(*loop))))
		return rn_error_set(err, ENOMEM, "out of memory");
	if (!(loop->cq = grpc_completion_queue_create_for_next(NULL))) {
		free(loop);
		return rn_error_set(err, ENOMEM, "cannot make a gRPC completion queue");
	}
	*ret = loop;
	return 0;
}

int rn_kw_loop_run(struct rn_kw_loop *loop, int timeout_ms, struct rn_error *err)
{
	gpr_timespec until = deadline_ms(timeout_ms);

	for (;;) {
		grpc_event ev = grpc_completion_queue_next(loop->cq, until, NULL);

		if (ev.type == GRPC_QUEUE_TIMEOUT)
			return 0;
		if (ev.type == GRPC_QUEUE_SHUTDOWN)
			return rn_error_set(err, ESHUTDOWN, "the gRPC completion queue shut down");
		on_event(ev);
		/* after the first event, take only what is ready */
		until = gpr_time_0(GPR_CLOCK_MONOTONIC);
	}
}

int rn_kw_server_start(struct rn_kw_loop *loop, const char *path, const struct rn_kw_ops *ops,
		       void *ctx, bool preferred, const struct rn_kw_device *devices, size_t n,
		       struct rn_kw_server **ret, struct rn_error *err)
{
	_cleanup_free_ char *addr = NULL;
	grpc_server_credentials *creds;
	struct rn_kw_server *srv;
	int r;

	if (strlen(path) >= 108)
		return rn_error_set(err, ENAMETOOLONG,
				    "socket path %s is longer than a unix socket allows (107); "
				    "choose a shorter --plugin-dir",
				    path);
	if (unlink(path) < 0 && errno != ENOENT)
		return rn_error_errno(err, errno, "cannot remove the old socket %s", path);
	if (asprintf(&addr, "unix:%s", path) < 0)
		return rn_error_set(err, ENOMEM, "out of memory");
	if (!(srv = calloc(1, sizeof(*srv))) || !(srv->path = strdup(path))) {
		free(srv);
		return rn_error_set(err, ENOMEM, "out of memory");
	}
	srv->loop = loop;
	srv->ops = ops;
	srv->ctx = ctx;
	srv->preferred = preferred;
	srv->t_shutdown = (struct kw_tag){ T_SHUTDOWN, NULL, srv };
	srv->server = grpc_server_create(NULL, NULL);
	grpc_server_register_completion_queue(srv->server, loop->cq, NULL);
	creds = grpc_insecure_server_credentials_create();
	r = grpc_server_add_http2_port(srv->server, addr, creds);
	grpc_server_credentials_release(creds);
	if (!r) {
		grpc_server_destroy(srv->server);
		free(srv->path);
		free(srv);
		return rn_error_set(err, EADDRNOTAVAIL,
				    "cannot listen on %s: is its directory there and writable?",
				    path);
	}
	srv->next = loop->servers;
	loop->servers = srv;
	grpc_server_start(srv->server);
	if ((r = rn_kw_server_publish(srv, devices, n, err)) < 0 || (r = request_call(srv)) < 0) {
		rn_kw_server_stop(srv);
		return r == -ENOMEM ? rn_error_set(err, ENOMEM, "out of memory")
				    : rn_error_set(err, -r, "cannot serve on %s", path);
	}
	*ret = srv;
	return 0;
}

int rn_kw_server_publish(struct rn_kw_server *srv, const struct rn_kw_device *devices, size_t n,
			 struct rn_error *err)
{
	grpc_byte_buffer *bb = list_message(devices, n);

	if (!bb)
		return rn_error_set(err, ENOMEM, "out of memory");
	if (srv->list)
		grpc_byte_buffer_destroy(srv->list);
	srv->list = bb;
	srv->gen++;
	for (struct kw_call *c = srv->streams; c; c = c->next)
		stream_send(c);
	return 0;
}

size_t rn_kw_server_streams(const struct rn_kw_server *srv)
{
	size_t n = 0;

	for (const struct kw_call *c = srv->streams; c; c = c->next)
		n += !c->closed;
	return n;
}

void rn_kw_server_stop(struct rn_kw_server *srv)
{
	if (!srv)
		return;
	srv->shutting_down = true;
	grpc_server_shutdown_and_notify(srv->server, srv->loop->cq, &srv->t_shutdown);
	grpc_server_cancel_all_calls(srv->server);
	/*
	 * Every call of this server, and the shutdown, come back before it is
	 * freed. Bounded: a call that never comes back leaves the server
	 * allocated (gRPC forbids destroying it before its shutdown tag), but
	 * never hangs the caller, who is stopping.
	 */
	gpr_timespec until = deadline_ms(STOP_DRAIN_MS);

	while (!srv->shut_down || srv->live_calls > 0) {
		grpc_event ev = grpc_completion_queue_next(srv->loop->cq, until, NULL);

		if (ev.type != GRPC_OP_COMPLETE)
			break;
		on_event(ev);
	}
	if (!srv->shut_down || srv->live_calls > 0) {
		(void)unlink(srv->path);
		srv->abandoned = true;
		return;
	}
	server_destroy(srv);
}

void rn_kw_loop_free(struct rn_kw_loop *loop)
{
	bool abandoned = false;

	if (!loop)
		return;
	for (struct rn_kw_server *srv = loop->servers, *next; srv; srv = next) {
		next = srv->next;
		if (!srv->abandoned)
			rn_kw_server_stop(srv);
	}
	for (struct rn_kw_server *srv = loop->servers; srv; srv = srv->next)
		abandoned |= srv->abandoned;
	if (abandoned)
		return; /* its queue still serves what was abandoned: left as it is */
	grpc_completion_queue_shutdown(loop->cq);
	while (grpc_completion_queue_next(loop->cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL)
		       .type != GRPC_QUEUE_SHUTDOWN)
		;
	grpc_completion_queue_destroy(loop->cq);
	free(loop);
}

/* ---- the client side ---- */

struct unary_result {
	grpc_byte_buffer *answer;
	grpc_status_code status;
	grpc_slice details;
};

/* One unary call on unix socket `path`, waiting at most timeout_ms. */
static int call_unary(const char *path, const char *method, const ProtobufCMessage *request,
		      int timeout_ms, struct unary_result *out, struct rn_error *err)
{
	_cleanup_free_ char *target = NULL;
	grpc_channel_credentials *creds;
	grpc_completion_queue *cq;
	grpc_metadata_array md_in, trailing;
	grpc_byte_buffer *req;
	grpc_channel *ch;
	grpc_call *call;
	grpc_op ops[6];
	grpc_event ev;
	int r = 0;

	init_grpc_once();
	if (asprintf(&target, "unix:%s", path) < 0)
		return rn_error_set(err, ENOMEM, "out of memory");
	creds = grpc_insecure_credentials_create();
	ch = grpc_channel_create(target, creds, NULL);
	grpc_channel_credentials_release(creds);
	cq = grpc_completion_queue_create_for_pluck(NULL);
	call = grpc_channel_create_call(ch, NULL, GRPC_PROPAGATE_DEFAULTS, cq,
					grpc_slice_from_static_string(method), NULL,
					deadline_ms(timeout_ms), NULL);
	req = pack_message(request);
	grpc_metadata_array_init(&md_in);
	grpc_metadata_array_init(&trailing);
	out->answer = NULL;
	out->details = grpc_empty_slice();
	memset(ops, 0, sizeof(ops));
	ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
	ops[1].op = GRPC_OP_SEND_MESSAGE;
	ops[1].data.send_message.send_message = req;
	ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
	ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
	ops[3].data.recv_initial_metadata.recv_initial_metadata = &md_in;
	ops[4].op = GRPC_OP_RECV_MESSAGE;
	ops[4].data.recv_message.recv_message = &out->answer;
	ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
	ops[5].data.recv_status_on_client.trailing_metadata = &trailing;
	ops[5].data.recv_status_on_client.status = &out->status;
	ops[5].data.recv_status_on_client.status_details = &out->details;
	if (grpc_call_start_batch(call, ops, RN_ARRAY_SIZE(ops), call, NULL) != GRPC_CALL_OK) {
		r = rn_error_set(err, EIO, "cannot start the gRPC call %s on %s", method, path);
	} else {
		/* the call's own deadline ends it; this wait only outlasts that */
		ev = grpc_completion_queue_pluck(cq, call, deadline_ms(timeout_ms + 5000), NULL);
		if (ev.type != GRPC_OP_COMPLETE || !ev.success)
			r = rn_error_set(err, ETIMEDOUT, "the gRPC call %s on %s did not complete",
					 method, path);
	}
	if (r < 0) {
		grpc_call_cancel(call, NULL);
		(void)grpc_completion_queue_pluck(cq, call, gpr_inf_future(GPR_CLOCK_MONOTONIC),
						  NULL);
	}
	grpc_byte_buffer_destroy(req);
	grpc_metadata_array_destroy(&md_in);
	grpc_metadata_array_destroy(&trailing);
	grpc_call_unref(call);
	grpc_completion_queue_shutdown(cq);
	while (grpc_completion_queue_pluck(cq, NULL, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL)
		       .type != GRPC_QUEUE_SHUTDOWN)
		;
	grpc_completion_queue_destroy(cq);
	grpc_channel_destroy(ch);
	if (r < 0) {
		if (out->answer)
			grpc_byte_buffer_destroy(out->answer);
		grpc_slice_unref(out->details);
		out->answer = NULL;
	}
	return r;
}

static void unary_result_clear(struct unary_result *u)
{
	if (u->answer)
		grpc_byte_buffer_destroy(u->answer);
	grpc_slice_unref(u->details);
	u->answer = NULL;
}

/* A non-OK status as an error naming the call, the socket and kubelet's words. */
static int status_error(const struct unary_result *u, const char *what, const char *path,
			struct rn_error *err)
{
	int len = (int)GRPC_SLICE_LENGTH(u->details);
	int code = u->status == GRPC_STATUS_UNAVAILABLE		? ECONNREFUSED
		   : u->status == GRPC_STATUS_DEADLINE_EXCEEDED ? ETIMEDOUT
		   : u->status == GRPC_STATUS_UNIMPLEMENTED	? EOPNOTSUPP
								: EPROTO;

	return rn_error_set(err, code, "%s on %s failed (gRPC status %d): %.*s%s", what, path,
			    (int)u->status, len, (const char *)GRPC_SLICE_START_PTR(u->details),
			    u->status == GRPC_STATUS_UNAVAILABLE
				    ? " (is kubelet running, and is this its socket?)"
				    : "");
}

int rn_kw_register(const char *kubelet_sock, const char *endpoint, const char *resource,
		   bool preferred, int timeout_ms, struct rn_error *err)
{
	V1beta1__RegisterRequest req = V1BETA1__REGISTER_REQUEST__INIT;
	V1beta1__DevicePluginOptions opts = V1BETA1__DEVICE_PLUGIN_OPTIONS__INIT;
	struct unary_result u;
	int r;

	req.version = RN_KW_API_VERSION;
	req.endpoint = (char *)endpoint;
	req.resource_name = (char *)resource;
	opts.get_preferred_allocation_available = preferred;
	req.options = &opts;
	if ((r = call_unary(kubelet_sock, "/v1beta1.Registration/Register", &req.base, timeout_ms,
			    &u, err)) < 0)
		return rn_error_wrap(err, "registering %s with kubelet", resource);
	r = u.status == GRPC_STATUS_OK
		    ? 0
		    : status_error(&u, "Registration.Register", kubelet_sock, err);
	if (r < 0)
		rn_error_wrap(err, "registering %s with kubelet", resource);
	unary_result_clear(&u);
	return r;
}

void rn_kw_ids_free(char **ids, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(ids[i]);
	free(ids);
}

static int append_id(char ***ids, size_t *n, const char *id, struct rn_error *err)
{
	char **v = realloc(*ids, (*n + 1) * sizeof(**ids));

	if (!v)
		return rn_error_set(err, ENOMEM, "out of memory");
	*ids = v;
	if (!(v[*n] = strdup(id)))
		return rn_error_set(err, ENOMEM, "out of memory");
	(*n)++;
	return 0;
}

int rn_kw_pod_devices(const char *socket, const char *pod_namespace, const char *pod_name,
		      const char *resource_prefix, int timeout_ms, char ***ret_ids, size_t *ret_n,
		      struct rn_error *err)
{
	V1__ListPodResourcesRequest req = V1__LIST_POD_RESOURCES_REQUEST__INIT;
	_cleanup_(message_freep) ProtobufCMessage *m = NULL;
	const V1__ListPodResourcesResponse *resp;
	struct unary_result u;
	char **ids = NULL;
	size_t n = 0;
	int r;

	if ((r = call_unary(socket, "/v1.PodResourcesLister/List", &req.base, timeout_ms, &u,
			    err)) < 0)
		return rn_error_wrap(err, "asking kubelet which devices pod %s/%s holds",
				     pod_namespace, pod_name);
	if (u.status != GRPC_STATUS_OK) {
		r = status_error(&u, "PodResourcesLister.List", socket, err);
		unary_result_clear(&u);
		return rn_error_wrap(err, "asking kubelet which devices pod %s/%s holds",
				     pod_namespace, pod_name);
	}
	m = unpack_message(&v1__list_pod_resources_response__descriptor, u.answer);
	unary_result_clear(&u);
	if (!(resp = (const V1__ListPodResourcesResponse *)m))
		return rn_error_set(err, EPROTO,
				    "kubelet's PodResources answer on %s is not a "
				    "ListPodResourcesResponse",
				    socket);
	for (size_t i = 0; i < resp->n_pod_resources; i++) {
		const V1__PodResources *p = resp->pod_resources[i];

		if (!p->name || !p->namespace_ || strcmp(p->name, pod_name) ||
		    strcmp(p->namespace_, pod_namespace))
			continue;
		for (size_t c = 0; c < p->n_containers; c++)
			for (size_t d = 0; d < p->containers[c]->n_devices; d++) {
				const V1__ContainerDevices *cd = p->containers[c]->devices[d];

				if (!cd->resource_name ||
				    strncmp(cd->resource_name, resource_prefix,
					    strlen(resource_prefix)))
					continue;
				for (size_t k = 0; k < cd->n_device_ids; k++)
					if ((r = append_id(&ids, &n, cd->device_ids[k], err)) < 0) {
						rn_kw_ids_free(ids, n);
						return r;
					}
			}
	}
	*ret_ids = ids;
	*ret_n = n;
	return 0;
}
