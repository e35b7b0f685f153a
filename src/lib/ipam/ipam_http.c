// SPDX-License-Identifier: Apache-2.0
/*
 * HTTP over libcurl for the IPAM stores that talk to a server (ipam_http.h):
 * etcd's JSON gateway and the Kubernetes API.
 *
 * libcurl is loaded with dlopen() the first time such a store is used:
 * linked in, its 30-odd dependencies (TLS, Kerberos, LDAP, ...) cost every
 * exec of the plugin about 20 ms of dynamic relocation, local store or not.
 */
#include <curl/curl.h>
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "rdmans/cleanup.h"
#include "rdmans/util.h"
#include "ipam_http.h"

#define MAX_BODY (64u * 1024 * 1024)
#define LIBCURL "libcurl.so.4"

/* The libcurl entry points used here, resolved once. */
static struct {
	void *handle;
	CURLcode (*global_init)(long flags);
	void (*global_cleanup)(void);
	CURL *(*easy_init)(void);
	CURLcode (*easy_setopt)(CURL *curl, CURLoption option, ...);
	CURLcode (*easy_perform)(CURL *curl);
	void (*easy_cleanup)(CURL *curl);
	CURLcode (*easy_getinfo)(CURL *curl, CURLINFO info, ...);
	const char *(*easy_strerror)(CURLcode code);
	struct curl_slist *(*slist_append)(struct curl_slist *list, const char *s);
	void (*slist_free_all)(struct curl_slist *list);
} lc;

static int load_libcurl(struct rn_error *err)
{
	static const struct {
		const char *name;
		size_t off;
	} syms[] = {
		{ "curl_global_init", offsetof(__typeof__(lc), global_init) },
		{ "curl_global_cleanup", offsetof(__typeof__(lc), global_cleanup) },
		{ "curl_easy_init", offsetof(__typeof__(lc), easy_init) },
		{ "curl_easy_setopt", offsetof(__typeof__(lc), easy_setopt) },
		{ "curl_easy_perform", offsetof(__typeof__(lc), easy_perform) },
		{ "curl_easy_cleanup", offsetof(__typeof__(lc), easy_cleanup) },
		{ "curl_easy_getinfo", offsetof(__typeof__(lc), easy_getinfo) },
		{ "curl_easy_strerror", offsetof(__typeof__(lc), easy_strerror) },
		{ "curl_slist_append", offsetof(__typeof__(lc), slist_append) },
		{ "curl_slist_free_all", offsetof(__typeof__(lc), slist_free_all) },
	};
	void *h;

	if (lc.handle)
		return 0;
	h = dlopen(LIBCURL, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return rn_error_set(err, ENOPKG,
				    "the etcd and kubernetes stores need libcurl (" LIBCURL "): "
				    "%s (install libcurl4)",
				    dlerror());
	for (size_t i = 0; i < RN_ARRAY_SIZE(syms); i++) {
		void *f = dlsym(h, syms[i].name);

		if (!f) {
			dlclose(h);
			return rn_error_set(err, ENOPKG, LIBCURL " has no %s", syms[i].name);
		}
		memcpy((char *)&lc + syms[i].off, &f, sizeof(f));
	}
	lc.handle = h;
	return 0;
}

struct rn_http {
	CURL *curl;
	char errbuf[CURL_ERROR_SIZE];
	bool client_cert; /* a client certificate is configured */
	const char *cert_settings; /* where it is set, for messages (static text) */
	long timeout_ms; /* each request, at most */
	long connect_timeout_ms; /* each connection, at most */
};

struct buffer {
	char *data;
	size_t len, cap;
	bool too_big;
};

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *ctx)
{
	struct buffer *b = ctx;
	size_t n = size * nmemb;

	if (b->len + n + 1 > MAX_BODY) {
		b->too_big = true;
		return 0;
	}
	if (RN_GROW(b->data, &b->cap, b->len + n + 1) < 0)
		return 0;
	memcpy(b->data + b->len, ptr, n);
	b->len += n;
	b->data[b->len] = '\0';
	return n;
}

/* PEM text handed to libcurl, which copies it (CURL_BLOB_COPY) */
static void set_blob(CURL *curl, CURLoption opt, const char *pem)
{
	struct curl_blob blob = { (void *)pem, strlen(pem), CURL_BLOB_COPY };

	lc.easy_setopt(curl, opt, &blob);
}

static void curl_slist_freep(struct curl_slist **l)
{
	if (*l)
		lc.slist_free_all(*l);
}

int rn_http_open(const struct rn_http_tls *tls, long timeout_ms, struct rn_http **ret,
		 struct rn_error *err)
{
	struct rn_http *h;
	CURLcode rc;
	int r;

	/* libcurl opens these itself, blocking: a FIFO or a device must not reach it */
	if (tls) {
		const char *files[][2] = { { tls->ca_file, "ca_file" },
					   { tls->cert_file, "cert_file" },
					   { tls->key_file, "key_file" } };

		for (size_t i = 0; i < 3; i++) {
			r = files[i][0] ? rn_check_regular(files[i][0], files[i][1], err) : 0;
			if (r < 0)
				return r;
		}
	}
	r = load_libcurl(err);
	if (r < 0)
		return r;
	rc = lc.global_init(CURL_GLOBAL_DEFAULT);
	if (rc != CURLE_OK)
		return rn_error_set(err, EIO, "libcurl: %s", lc.easy_strerror(rc));
	h = calloc(1, sizeof(*h));
	if (!h) {
		lc.global_cleanup();
		return rn_error_set(err, ENOMEM, "out of memory");
	}
	h->curl = lc.easy_init();
	if (!h->curl) {
		free(h);
		lc.global_cleanup();
		return rn_error_set(err, ENOMEM, "libcurl: cannot create a handle");
	}
	lc.easy_setopt(h->curl, CURLOPT_ERRORBUFFER, h->errbuf);
	lc.easy_setopt(h->curl, CURLOPT_NOSIGNAL, 1L);
	lc.easy_setopt(h->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	lc.easy_setopt(h->curl, CURLOPT_FOLLOWLOCATION, 0L);
	h->timeout_ms = timeout_ms;
	h->connect_timeout_ms = tls && tls->connect_timeout_ms > 0 ? tls->connect_timeout_ms : 2000;
	/* no proxy: etcd is reached directly, whatever the environment says */
	lc.easy_setopt(h->curl, CURLOPT_NOPROXY, "*");
	lc.easy_setopt(h->curl, CURLOPT_WRITEFUNCTION, on_data);
	if (tls) {
		if (tls->ca_pem)
			set_blob(h->curl, CURLOPT_CAINFO_BLOB, tls->ca_pem);
		else if (tls->ca_file)
			lc.easy_setopt(h->curl, CURLOPT_CAINFO, tls->ca_file);
		if (tls->cert_pem)
			set_blob(h->curl, CURLOPT_SSLCERT_BLOB, tls->cert_pem);
		else if (tls->cert_file)
			lc.easy_setopt(h->curl, CURLOPT_SSLCERT, tls->cert_file);
		h->client_cert = tls->cert_file != NULL || tls->cert_pem != NULL;
		if (tls->key_pem)
			set_blob(h->curl, CURLOPT_SSLKEY_BLOB, tls->key_pem);
		else if (tls->key_file)
			lc.easy_setopt(h->curl, CURLOPT_SSLKEY, tls->key_file);
		h->cert_settings = tls->cert_settings;
	}
	*ret = h;
	return 0;
}

void rn_http_close(struct rn_http *h)
{
	if (!h)
		return;
	lc.easy_cleanup(h->curl);
	free(h);
	lc.global_cleanup();
}

static int transport_errno(CURLcode rc, const char *msg)
{
	/* a TLS alert (bad certificate) may only show up on the first read */
	if (msg && (strstr(msg, "SSL") || strstr(msg, "TLS") || strstr(msg, "certificate")))
		return EPROTO;
	switch (rc) {
	case CURLE_COULDNT_CONNECT:
		return ECONNREFUSED;
	case CURLE_OPERATION_TIMEDOUT:
		return ETIMEDOUT;
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
		return EHOSTUNREACH;
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_ISSUER_ERROR:
	case CURLE_SSL_CRL_BADFILE:
		return EPROTO;
	default:
		return EIO;
	}
}

/*
 * A server that wants a client certificate and gets none (or refuses ours)
 * closes the connection. Under TLS 1.2 that fails the handshake; under TLS
 * 1.3 the client has finished its handshake by then and sees, depending on
 * timing, the alert on its first read, a reset on its first write, or a
 * socket already gone ("getpeername() failed ... not connected"), and on
 * an HTTP/2 connection any of those as an HTTP/2 error. Over
 * https, each of those is said to be TLS, with what to check.
 */
static bool tls_closed(const char *url, CURLcode rc, const char *msg)
{
	if (strncmp(url, "https://", 8) != 0)
		return false;
	switch (rc) {
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_HTTP2: /* the same, on an HTTP/2 connection (ALPN h2) */
	case CURLE_HTTP2_STREAM:
		return true;
	case CURLE_SSL_CONNECT_ERROR:
		return strstr(msg, "alert") != NULL;
	default:
		return false;
	}
}

static int transport_error(const struct rn_http *h, const char *url, CURLcode rc,
			   struct rn_error *err)
{
	const char *msg = h->errbuf[0] ? h->errbuf : lc.easy_strerror(rc);

	const char *where = h->cert_settings ? h->cert_settings : "cert_file and key_file";

	if (tls_closed(url, rc, msg) && h->client_cert)
		return rn_error_set(err, EPROTO,
				    "%s: the server ended the TLS connection (%s): it may refuse "
				    "our client certificate (check %s, and that the server trusts "
				    "their CA)",
				    url, msg, where);
	if (tls_closed(url, rc, msg))
		return rn_error_set(
			err, EPROTO,
			"%s: the server ended the TLS connection (%s): a server that "
			"wants a client certificate does that when none is given (set %s)",
			url, msg, where);
	return rn_error_set(err, transport_errno(rc, msg), "%s: %s", url, msg);
}

int rn_http_request(struct rn_http *h, const char *method, const char *url, const char *body,
		    const char *authorization, long timeout_ms, long *ret_status, char **ret_body,
		    struct rn_error *err)
{
	__attribute__((cleanup(curl_slist_freep))) struct curl_slist *headers = NULL;
	_cleanup_free_ char *auth_header = NULL;
	struct buffer b = { 0 };
	CURLcode rc;

	headers = lc.slist_append(headers, "Accept: application/json");
	if (headers && body)
		headers = lc.slist_append(headers, "Content-Type: application/json");
	if (headers && authorization && *authorization) {
		if (asprintf(&auth_header, "Authorization: %s", authorization) < 0) {
			auth_header = NULL;
			return rn_error_set(err, ENOMEM, "out of memory");
		}
		headers = lc.slist_append(headers, auth_header);
	}
	if (!headers)
		return rn_error_set(err, ENOMEM, "out of memory");
	h->errbuf[0] = '\0';
	lc.easy_setopt(h->curl, CURLOPT_URL, url);
	lc.easy_setopt(h->curl, CURLOPT_HTTPHEADER, headers);
	/* a body goes as POSTFIELDS; the method is said apart (GET and DELETE may carry one too) */
	lc.easy_setopt(h->curl, CURLOPT_HTTPGET, 1L);
	if (body)
		lc.easy_setopt(h->curl, CURLOPT_POSTFIELDS, body);
	lc.easy_setopt(h->curl, CURLOPT_CUSTOMREQUEST,
		       strcmp(method, body ? "POST" : "GET") ? method : NULL);
	lc.easy_setopt(h->curl, CURLOPT_WRITEDATA, &b);
	if (timeout_ms <= 0 || timeout_ms > h->timeout_ms)
		timeout_ms = h->timeout_ms;
	lc.easy_setopt(h->curl, CURLOPT_TIMEOUT_MS, timeout_ms);
	lc.easy_setopt(h->curl, CURLOPT_CONNECTTIMEOUT_MS,
		       timeout_ms < h->connect_timeout_ms ? timeout_ms : h->connect_timeout_ms);
	rc = lc.easy_perform(h->curl);
	lc.easy_setopt(h->curl, CURLOPT_HTTPHEADER, NULL);
	if (auth_header)
		explicit_bzero(auth_header, strlen(auth_header));
	if (rc != CURLE_OK) {
		free(b.data);
		if (b.too_big)
			return rn_error_set(err, EMSGSIZE, "%s: answer larger than %u bytes", url,
					    MAX_BODY);
		return transport_error(h, url, rc, err);
	}
	lc.easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, ret_status);
	if (!b.data) {
		b.data = strdup("");
		if (!b.data)
			return rn_error_set(err, ENOMEM, "out of memory");
	}
	*ret_body = b.data;
	return 0;
}
