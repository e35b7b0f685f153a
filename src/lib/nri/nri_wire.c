// SPDX-License-Identifier: Apache-2.0
/*
 * NRI's wire: the multiplexer, ttrpc's framing, and the protobuf messages
 * (protobuf-c, generated at build time from Debian's .proto files). Built
 * with -Ulinux: the NRI messages have a field called `linux`.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.pb-c.h"
#include "proto/status.pb-c.h"
#include "request.pb-c.h"
#include "rdmans/nri_wire.h"

#define MUX_HEADER 8u
#define STREAM_LIMIT (2 * (RN_TTRPC_HEADER + RN_TTRPC_MAX))
#define PLUGIN_SERVICE "nri.pkg.api.v1alpha1.Plugin"
#define RUNTIME_SERVICE "nri.pkg.api.v1alpha1.Runtime"
#define STATUS_MESSAGE_FIELD 2 /* google.rpc.Status.message */

typedef Nri__Pkg__Api__V1alpha1__PodSandbox Pod;
typedef Nri__Pkg__Api__V1alpha1__Container Ctr;

static uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

/* ---- the multiplexed byte streams ---- */

void rn_nri_demux_free(struct rn_nri_demux *d)
{
	for (size_t i = 0; i < 2; i++)
		free(d->conn[i].buf);
	memset(d, 0, sizeof(*d));
}

static int stream_append(struct rn_nri_demux *d, size_t idx, const uint8_t *p, size_t n,
			 struct rn_error *err)
{
	struct rn_nri_stream *s = &d->conn[idx];

	if (d->consumed[idx]) {
		memmove(s->buf, s->buf + d->consumed[idx], s->len - d->consumed[idx]);
		s->len -= d->consumed[idx];
		d->consumed[idx] = 0;
	}
	if (s->len + n > STREAM_LIMIT)
		return rn_error_set(err, EMSGSIZE,
				    "NRI connection %zu: more than %u bytes of unread ttrpc data: "
				    "the runtime sent a message over ttrpc's limit",
				    idx + 1, STREAM_LIMIT);
	if (s->len + n > s->cap) {
		size_t cap = s->cap ? s->cap : 4096;
		uint8_t *b;

		while (cap < s->len + n)
			cap *= 2;
		b = realloc(s->buf, cap);
		if (!b)
			return rn_error_set(err, ENOMEM, "out of memory");
		s->buf = b;
		s->cap = cap;
	}
	memcpy(s->buf + s->len, p, n);
	s->len += n;
	return 0;
}

int rn_nri_demux_feed(struct rn_nri_demux *d, const uint8_t *buf, size_t len, struct rn_error *err)
{
	while (len) {
		size_t n;
		int r;

		if (d->frame_left == 0) {
			n = MUX_HEADER - d->hdr_have;
			n = n < len ? n : len;
			memcpy(d->frame_hdr + d->hdr_have, buf, n);
			d->hdr_have += n;
			buf += n;
			len -= n;
			if (d->hdr_have < MUX_HEADER)
				break;
			d->hdr_have = 0;
			d->frame_conn = get_be32(d->frame_hdr);
			d->frame_left = get_be32(d->frame_hdr + 4);
			if (d->frame_conn != RN_NRI_CONN_PLUGIN &&
			    d->frame_conn != RN_NRI_CONN_RUNTIME)
				return rn_error_set(
					err, EPROTO,
					"NRI mux frame for connection %u: only 1 "
					"(plugin service) and 2 (runtime service) exist",
					d->frame_conn);
			if (d->frame_left > RN_TTRPC_HEADER + RN_TTRPC_MAX)
				return rn_error_set(
					err, EMSGSIZE,
					"NRI mux frame of %zu bytes: over the limit of %u",
					d->frame_left, RN_TTRPC_HEADER + RN_TTRPC_MAX);
			continue;
		}
		n = d->frame_left < len ? d->frame_left : len;
		r = stream_append(d, d->frame_conn - 1, buf, n, err);
		if (r < 0)
			return r;
		d->frame_left -= n;
		buf += n;
		len -= n;
	}
	return 0;
}

int rn_nri_demux_next(struct rn_nri_demux *d, struct rn_ttrpc_msg *out, struct rn_error *err)
{
	for (size_t i = 0; i < 2; i++) {
		const uint8_t *p;
		size_t avail = d->conn[i].len - d->consumed[i];
		uint32_t mlen;

		if (avail < RN_TTRPC_HEADER)
			continue; /* (also: nothing came on it yet, buf is NULL) */
		p = d->conn[i].buf + d->consumed[i];
		mlen = get_be32(p);
		if (mlen > RN_TTRPC_MAX)
			return rn_error_set(err, EMSGSIZE,
					    "ttrpc message of %u bytes on NRI connection %zu: over "
					    "ttrpc's limit of %u",
					    mlen, i + 1, RN_TTRPC_MAX);
		if (avail < RN_TTRPC_HEADER + mlen)
			continue;
		out->conn = (uint32_t)i + 1;
		out->stream_id = get_be32(p + 4);
		out->type = p[8];
		out->flags = p[9];
		out->payload = p + RN_TTRPC_HEADER;
		out->len = mlen;
		d->consumed[i] += RN_TTRPC_HEADER + mlen;
		return 1;
	}
	return 0;
}

int rn_nri_frame(uint32_t conn, uint32_t stream_id, uint8_t type, const uint8_t *payload,
		 size_t len, uint8_t **ret, size_t *ret_len, struct rn_error *err)
{
	uint8_t *b;

	if (len > RN_TTRPC_MAX)
		return rn_error_set(err, EMSGSIZE, "ttrpc message of %zu bytes: over the limit",
				    len);
	b = malloc(MUX_HEADER + RN_TTRPC_HEADER + len);
	if (!b)
		return rn_error_set(err, ENOMEM, "out of memory");
	put_be32(b, conn);
	put_be32(b + 4, RN_TTRPC_HEADER + (uint32_t)len);
	put_be32(b + 8, (uint32_t)len);
	put_be32(b + 12, stream_id);
	b[16] = type;
	b[17] = 0;
	if (len)
		memcpy(b + MUX_HEADER + RN_TTRPC_HEADER, payload, len);
	*ret = b;
	*ret_len = MUX_HEADER + RN_TTRPC_HEADER + len;
	return 0;
}

/* ---- calls from the runtime ---- */

struct call_priv {
	Ttrpc__Request *req;
	ProtobufCMessage *msg;
	const Pod *pod;
	const Ctr *ctr;
};

static const char *str(const char *s)
{
	return s ? s : "";
}

static void set_pod_ctr(struct rn_nri_call *c, struct call_priv *p, const Pod *pod, const Ctr *ctr)
{
	p->pod = pod;
	p->ctr = ctr;
	c->pod_id = str(pod ? pod->id : NULL);
	c->pod_name = str(pod ? pod->name : NULL);
	c->pod_namespace = str(pod ? pod->namespace_ : NULL);
	c->pod_pid = pod ? pod->pid : 0;
	c->ctr_id = str(ctr ? ctr->id : NULL);
	c->ctr_name = str(ctr ? ctr->name : NULL);
	c->pod_netns = NULL;
	if (!pod || !pod->linux)
		return;
	for (size_t i = 0; i < pod->linux->n_namespaces; i++) {
		const Nri__Pkg__Api__V1alpha1__LinuxNamespace *ns = pod->linux->namespaces[i];

		if (ns && ns->type && strcmp(ns->type, "network") == 0 && ns->path && ns->path[0])
			c->pod_netns = ns->path;
	}
}

int rn_nri_call_decode(const uint8_t *payload, size_t len, struct rn_nri_call *out,
		       struct rn_error *err)
{
	struct call_priv *p;
	const char *method;
	ProtobufCMessage *m = NULL;

	memset(out, 0, sizeof(*out));
	p = calloc(1, sizeof(*p));
	if (!p)
		return rn_error_set(err, ENOMEM, "out of memory");
	out->priv = p;
	set_pod_ctr(out, p, NULL, NULL);
	p->req = ttrpc__request__unpack(NULL, len, payload);
	if (!p->req)
		return rn_error_set(
			err, EPROTO,
			"a ttrpc request of %zu bytes that is not a ttrpc Request message", len);
	method = str(p->req->method);
	snprintf(out->name, sizeof(out->name), "%.60s/%.60s", str(p->req->service), method);
	if (strcmp(str(p->req->service), PLUGIN_SERVICE) != 0)
		return 0;

	const uint8_t *in = p->req->payload.data;
	size_t in_len = p->req->payload.len;

	if (strcmp(method, "Configure") == 0) {
		Nri__Pkg__Api__V1alpha1__ConfigureRequest *q =
			nri__pkg__api__v1alpha1__configure_request__unpack(NULL, in_len, in);

		m = (ProtobufCMessage *)q;
		if (q) {
			out->method = RN_NRI_CONFIGURE;
			out->request_timeout_ms = q->request_timeout;
			out->runtime_name = str(q->runtime_name);
			out->runtime_version = str(q->runtime_version);
		}
	} else if (strcmp(method, "Synchronize") == 0) {
		Nri__Pkg__Api__V1alpha1__SynchronizeRequest *q =
			nri__pkg__api__v1alpha1__synchronize_request__unpack(NULL, in_len, in);

		m = (ProtobufCMessage *)q;
		if (q) {
			out->method = RN_NRI_SYNCHRONIZE;
			out->more = q->more;
		}
	} else if (strcmp(method, "Shutdown") == 0) {
		out->method = RN_NRI_SHUTDOWN;
		return 0;
	} else if (strcmp(method, "CreateContainer") == 0) {
		Nri__Pkg__Api__V1alpha1__CreateContainerRequest *q =
			nri__pkg__api__v1alpha1__create_container_request__unpack(NULL, in_len, in);

		m = (ProtobufCMessage *)q;
		if (q) {
			out->method = RN_NRI_CREATE_CONTAINER;
			set_pod_ctr(out, p, q->pod, q->container);
		}
	} else if (strcmp(method, "UpdateContainer") == 0) {
		Nri__Pkg__Api__V1alpha1__UpdateContainerRequest *q =
			nri__pkg__api__v1alpha1__update_container_request__unpack(NULL, in_len, in);

		m = (ProtobufCMessage *)q;
		if (q) {
			out->method = RN_NRI_UPDATE_CONTAINER;
			set_pod_ctr(out, p, q->pod, q->container);
		}
	} else if (strcmp(method, "StopContainer") == 0) {
		Nri__Pkg__Api__V1alpha1__StopContainerRequest *q =
			nri__pkg__api__v1alpha1__stop_container_request__unpack(NULL, in_len, in);

		m = (ProtobufCMessage *)q;
		if (q) {
			out->method = RN_NRI_STOP_CONTAINER;
			set_pod_ctr(out, p, q->pod, q->container);
		}
	} else if (strcmp(method, "StateChange") == 0) {
		Nri__Pkg__Api__V1alpha1__StateChangeEvent *q =
			nri__pkg__api__v1alpha1__state_change_event__unpack(NULL, in_len, in);

		m = (ProtobufCMessage *)q;
		if (q) {
			out->method = RN_NRI_STATE_CHANGE;
			out->event = q->event;
			set_pod_ctr(out, p, q->pod, q->container);
		}
	} else {
		return 0;
	}
	if (!m) {
		out->method = RN_NRI_UNKNOWN;
		return rn_error_set(err, EPROTO,
				    "%s: the request's payload (%zu bytes) does not decode",
				    out->name, in_len);
	}
	p->msg = m;
	return 0;
}

void rn_nri_call_free(struct rn_nri_call *c)
{
	struct call_priv *p = c->priv;

	if (p) {
		if (p->msg)
			protobuf_c_message_free_unpacked(p->msg, NULL);
		if (p->req)
			ttrpc__request__free_unpacked(p->req, NULL);
		free(p);
	}
	memset(c, 0, sizeof(*c));
}

const char *rn_nri_call_annotation(const struct rn_nri_call *c, const char *key)
{
	const struct call_priv *p = c->priv;

	if (!p)
		return NULL;
	if (p->ctr)
		for (size_t i = 0; i < p->ctr->n_annotations; i++)
			if (p->ctr->annotations[i]->key &&
			    strcmp(p->ctr->annotations[i]->key, key) == 0)
				return str(p->ctr->annotations[i]->value);
	if (p->pod)
		for (size_t i = 0; i < p->pod->n_annotations; i++)
			if (p->pod->annotations[i]->key &&
			    strcmp(p->pod->annotations[i]->key, key) == 0)
				return str(p->pod->annotations[i]->value);
	return NULL;
}

const char *rn_nri_call_env(const struct rn_nri_call *c, const char *name)
{
	const struct call_priv *p = c->priv;
	size_t n = strlen(name);

	if (!p || !p->ctr)
		return NULL;
	for (size_t i = 0; i < p->ctr->n_env; i++) {
		const char *e = p->ctr->env[i];

		if (e && strncmp(e, name, n) == 0 && e[n] == '=')
			return e + n + 1;
	}
	return NULL;
}

size_t rn_nri_call_devices(const struct rn_nri_call *c, const char **paths, size_t max)
{
	const struct call_priv *p = c->priv;
	size_t n = 0;

	if (!p || !p->ctr || !p->ctr->linux)
		return 0;
	for (size_t i = 0; i < p->ctr->linux->n_devices && n < max; i++)
		if (p->ctr->linux->devices[i] && p->ctr->linux->devices[i]->path)
			paths[n++] = p->ctr->linux->devices[i]->path;
	return n;
}

/* ---- answers ---- */

static int pack(const ProtobufCMessage *m, uint8_t **ret, size_t *ret_len, struct rn_error *err)
{
	size_t n = protobuf_c_message_get_packed_size(m);
	uint8_t *b = malloc(n ? n : 1);

	if (!b)
		return rn_error_set(err, ENOMEM, "out of memory");
	*ret_len = protobuf_c_message_pack(m, b);
	*ret = b;
	return 0;
}

/* A ttrpc Response carrying inner (NULL: an empty payload) with status code (0: OK) and msg. */
static int respond(const ProtobufCMessage *inner, int code, const char *msg, uint8_t **ret,
		   size_t *ret_len, struct rn_error *err)
{
	Ttrpc__Response resp = TTRPC__RESPONSE__INIT;
	Status status = STATUS__INIT;
	ProtobufCMessageUnknownField text;
	uint8_t *payload = NULL, *field = NULL;
	size_t payload_len = 0;
	int r;

	if (inner) {
		r = pack(inner, &payload, &payload_len, err);
		if (r < 0)
			return r;
	}
	/*
	 * ttrpc's Response.status is a google.rpc.Status; Debian's ttrpc ships
	 * a Status with its code only, so the message goes as the unknown
	 * field 2, where google.rpc.Status keeps it (protobuf-c keeps an
	 * unknown field's length prefix in its data).
	 */
	status.code = code;
	if (msg && msg[0]) {
		size_t len = strnlen(msg, RN_TTRPC_MAX / 2), n = 0;

		field = malloc(len + 10);
		if (!field) {
			free(payload);
			return rn_error_set(err, ENOMEM, "out of memory");
		}
		for (size_t v = len;; v >>= 7) {
			field[n++] = (v & 0x7f) | (v >> 7 ? 0x80 : 0);
			if (!(v >> 7))
				break;
		}
		memcpy(field + n, msg, len);
		text.tag = STATUS_MESSAGE_FIELD;
		text.wire_type = PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED;
		text.len = n + len;
		text.data = field;
		status.base.n_unknown_fields = 1;
		status.base.unknown_fields = &text;
	}
	resp.status = &status;
	resp.payload.data = payload;
	resp.payload.len = payload_len;
	r = pack(&resp.base, ret, ret_len, err);
	free(payload);
	free(field);
	return r;
}

int rn_nri_reply_configure(int32_t events, uint8_t **ret, size_t *ret_len, struct rn_error *err)
{
	Nri__Pkg__Api__V1alpha1__ConfigureResponse m =
		NRI__PKG__API__V1ALPHA1__CONFIGURE_RESPONSE__INIT;

	m.events = events;
	return respond(&m.base, 0, NULL, ret, ret_len, err);
}

int rn_nri_reply_synchronize(bool more, uint8_t **ret, size_t *ret_len, struct rn_error *err)
{
	Nri__Pkg__Api__V1alpha1__SynchronizeResponse m =
		NRI__PKG__API__V1ALPHA1__SYNCHRONIZE_RESPONSE__INIT;

	m.more = more;
	return respond(&m.base, 0, NULL, ret, ret_len, err);
}

int rn_nri_reply_empty(uint8_t **ret, size_t *ret_len, struct rn_error *err)
{
	return respond(NULL, 0, NULL, ret, ret_len, err);
}

int rn_nri_reply_error(int code, const char *msg, uint8_t **ret, size_t *ret_len,
		       struct rn_error *err)
{
	return respond(NULL, code, msg, ret, ret_len, err);
}

int rn_nri_reply_create(const struct rn_nri_adjust *adj, uint8_t **ret, size_t *ret_len,
			struct rn_error *err)
{
	Nri__Pkg__Api__V1alpha1__CreateContainerResponse m =
		NRI__PKG__API__V1ALPHA1__CREATE_CONTAINER_RESPONSE__INIT;
	Nri__Pkg__Api__V1alpha1__ContainerAdjustment adjust =
		NRI__PKG__API__V1ALPHA1__CONTAINER_ADJUSTMENT__INIT;
	Nri__Pkg__Api__V1alpha1__LinuxContainerAdjustment linux_adj =
		NRI__PKG__API__V1ALPHA1__LINUX_CONTAINER_ADJUSTMENT__INIT;
	Nri__Pkg__Api__V1alpha1__OptionalFileMode mode =
		NRI__PKG__API__V1ALPHA1__OPTIONAL_FILE_MODE__INIT;
	Nri__Pkg__Api__V1alpha1__KeyValue *kv = NULL, **kvp = NULL;
	Nri__Pkg__Api__V1alpha1__LinuxDevice *dev = NULL, **devp = NULL;
	int r = -ENOMEM;

	kv = calloc(adj->n_env + 1, sizeof(*kv));
	kvp = calloc(adj->n_env + 1, sizeof(*kvp));
	dev = calloc(adj->n_devices + 1, sizeof(*dev));
	devp = calloc(adj->n_devices + 1, sizeof(*devp));
	if (!kv || !kvp || !dev || !devp) {
		rn_error_set(err, ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < adj->n_env; i++) {
		nri__pkg__api__v1alpha1__key_value__init(&kv[i]);
		kv[i].key = (char *)adj->env[i].name;
		kv[i].value = (char *)adj->env[i].value;
		kvp[i] = &kv[i];
	}
	mode.value = 0666;
	for (size_t i = 0; i < adj->n_devices; i++) {
		nri__pkg__api__v1alpha1__linux_device__init(&dev[i]);
		dev[i].path = (char *)adj->devices[i].path;
		dev[i].type = (char *)"c";
		dev[i].major = adj->devices[i].major;
		dev[i].minor = adj->devices[i].minor;
		dev[i].file_mode = &mode;
		devp[i] = &dev[i];
	}
	adjust.n_env = adj->n_env;
	adjust.env = kvp;
	if (adj->n_devices) {
		linux_adj.n_devices = adj->n_devices;
		linux_adj.devices = devp;
		adjust.linux = &linux_adj;
	}
	m.adjust = &adjust;
	r = respond(&m.base, 0, NULL, ret, ret_len, err);
out:
	free(kv);
	free(kvp);
	free(dev);
	free(devp);
	return r;
}

/* ---- our call to the runtime ---- */

int rn_nri_request_register(const char *name, const char *idx, int64_t timeout_ns, uint8_t **ret,
			    size_t *ret_len, struct rn_error *err)
{
	Nri__Pkg__Api__V1alpha1__RegisterPluginRequest reg =
		NRI__PKG__API__V1ALPHA1__REGISTER_PLUGIN_REQUEST__INIT;
	Ttrpc__Request req = TTRPC__REQUEST__INIT;
	uint8_t *payload = NULL;
	size_t payload_len = 0;
	int r;

	reg.plugin_name = (char *)name;
	reg.plugin_idx = (char *)idx;
	r = pack(&reg.base, &payload, &payload_len, err);
	if (r < 0)
		return r;
	req.service = (char *)RUNTIME_SERVICE;
	req.method = (char *)"RegisterPlugin";
	req.payload.data = payload;
	req.payload.len = payload_len;
	req.timeout_nano = timeout_ns;
	r = pack(&req.base, ret, ret_len, err);
	free(payload);
	return r;
}

int rn_nri_response_check(const uint8_t *payload, size_t len, const char *what,
			  struct rn_error *err)
{
	Ttrpc__Response *resp = ttrpc__response__unpack(NULL, len, payload);
	char msg[512] = "";
	int code;

	if (!resp)
		return rn_error_set(err, EPROTO, "%s: the runtime's answer is not a ttrpc Response",
				    what);
	code = resp->status ? resp->status->code : 0;
	if (code && resp->status) {
		const ProtobufCMessage *s = &resp->status->base;

		for (size_t i = 0; i < s->n_unknown_fields; i++) {
			const ProtobufCMessageUnknownField *f = &s->unknown_fields[i];
			size_t at = 0;

			if (f->tag != STATUS_MESSAGE_FIELD ||
			    f->wire_type != PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED)
				continue;
			/* the data starts with the length (a varint): the text follows it */
			while (at < f->len && at < 10 && (f->data[at] & 0x80))
				at++;
			at++;
			if (at <= f->len)
				snprintf(msg, sizeof(msg), "%.*s",
					 (int)(f->len - at < 500 ? f->len - at : 500),
					 (const char *)f->data + at);
		}
	}
	ttrpc__response__free_unpacked(resp, NULL);
	if (code)
		return rn_error_set(err, EPROTO, "%s: the runtime refused it (code %d%s%s)", what,
				    code, msg[0] ? ": " : "", msg);
	return 0;
}
