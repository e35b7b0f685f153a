// SPDX-License-Identifier: Apache-2.0
/* HTTP POST over libcurl for the etcd store (etcd_http.h). */
#include <curl/curl.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rdmans/cleanup.h"
#include "etcd_http.h"

#define MAX_BODY (64u * 1024 * 1024)

struct rn_http {
	CURL *curl;
	char errbuf[CURL_ERROR_SIZE];
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
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		char *grown;

		while (cap < b->len + n + 1)
			cap *= 2;
		grown = realloc(b->data, cap);
		if (!grown)
			return 0;
		b->data = grown;
		b->cap = cap;
	}
	memcpy(b->data + b->len, ptr, n);
	b->len += n;
	b->data[b->len] = '\0';
	return n;
}

static void curl_slist_freep(struct curl_slist **l)
{
	if (*l)
		curl_slist_free_all(*l);
}

int rn_http_open(const struct rn_http_tls *tls, long timeout_ms, struct rn_http **ret,
		 struct rn_error *err)
{
	struct rn_http *h;
	CURLcode rc;

	rc = curl_global_init(CURL_GLOBAL_DEFAULT);
	if (rc != CURLE_OK)
		return rn_error_set(err, EIO, "libcurl: %s", curl_easy_strerror(rc));
	h = calloc(1, sizeof(*h));
	if (!h) {
		curl_global_cleanup();
		return rn_error_set(err, ENOMEM, "out of memory");
	}
	h->curl = curl_easy_init();
	if (!h->curl) {
		free(h);
		curl_global_cleanup();
		return rn_error_set(err, ENOMEM, "libcurl: cannot create a handle");
	}
	curl_easy_setopt(h->curl, CURLOPT_ERRORBUFFER, h->errbuf);
	curl_easy_setopt(h->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h->curl, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(h->curl, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(h->curl, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms < 2000 ? timeout_ms : 2000L);
	/* no proxy: etcd is reached directly, whatever the environment says */
	curl_easy_setopt(h->curl, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(h->curl, CURLOPT_WRITEFUNCTION, on_data);
	if (tls) {
		if (tls->ca_file)
			curl_easy_setopt(h->curl, CURLOPT_CAINFO, tls->ca_file);
		if (tls->cert_file)
			curl_easy_setopt(h->curl, CURLOPT_SSLCERT, tls->cert_file);
		if (tls->key_file)
			curl_easy_setopt(h->curl, CURLOPT_SSLKEY, tls->key_file);
	}
	*ret = h;
	return 0;
}

void rn_http_close(struct rn_http *h)
{
	if (!h)
		return;
	curl_easy_cleanup(h->curl);
	free(h);
	curl_global_cleanup();
}

static int transport_errno(CURLcode rc)
{
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

int rn_http_post(struct rn_http *h, const char *url, const char *body, const char *authorization,
		 long *ret_status, char **ret_body, struct rn_error *err)
{
	__attribute__((cleanup(curl_slist_freep))) struct curl_slist *headers = NULL;
	_cleanup_free_ char *auth_header = NULL;
	struct buffer b = { 0 };
	CURLcode rc;

	headers = curl_slist_append(headers, "Content-Type: application/json");
	if (authorization && *authorization) {
		if (asprintf(&auth_header, "Authorization: %s", authorization) < 0) {
			auth_header = NULL;
			return rn_error_set(err, ENOMEM, "out of memory");
		}
		headers = curl_slist_append(headers, auth_header);
	}
	if (!headers)
		return rn_error_set(err, ENOMEM, "out of memory");
	h->errbuf[0] = '\0';
	curl_easy_setopt(h->curl, CURLOPT_URL, url);
	curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(h->curl, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(h->curl, CURLOPT_WRITEDATA, &b);
	rc = curl_easy_perform(h->curl);
	curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, NULL);
	if (auth_header)
		explicit_bzero(auth_header, strlen(auth_header));
	if (rc != CURLE_OK) {
		free(b.data);
		if (b.too_big)
			return rn_error_set(err, EMSGSIZE, "%s: answer larger than %u bytes", url,
					    MAX_BODY);
		return rn_error_set(err, transport_errno(rc), "%s: %s", url,
				    h->errbuf[0] ? h->errbuf : curl_easy_strerror(rc));
	}
	curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, ret_status);
	if (!b.data) {
		b.data = strdup("");
		if (!b.data)
			return rn_error_set(err, ENOMEM, "out of memory");
	}
	*ret_body = b.data;
	return 0;
}
