/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Private: HTTP POST for the etcd store, over libcurl (which stays in
 * etcd_http.c). One connection cache per handle; TLS with a CA, a client
 * certificate and key. Nothing here logs, and no header value (the
 * etcd auth token) ever reaches an error message.
 */
#ifndef RDMANS_ETCD_HTTP_H
#define RDMANS_ETCD_HTTP_H

#include "rdmans/error.h"

struct rn_http;

struct rn_http_tls {
	const char *ca_file;
	const char *cert_file;
	const char *key_file;
};

int rn_http_open(const struct rn_http_tls *tls, long timeout_ms, struct rn_http **ret,
		 struct rn_error *err);
void rn_http_close(struct rn_http *h);

/*
 * POSTs a JSON body, taking at most timeout_ms (0, or more than
 * rn_http_open()'s: that one). Transport failures return a negative errno
 * with err naming the URL (-ECONNREFUSED, -ETIMEDOUT, -EHOSTUNREACH,
 * -EPROTO for TLS, -EIO); an HTTP answer returns 0 with its status and body
 * (malloc'ed).
 */
int rn_http_post(struct rn_http *h, const char *url, const char *body, const char *authorization,
		 long timeout_ms, long *ret_status, char **ret_body, struct rn_error *err);

#endif
