/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Private: HTTP for the clients of a server (etcd_client.c: etcd's JSON
 * gateway; ipam_store_k8s.c: the Kubernetes API), over libcurl, which stays
 * in ipam_http.c.
 * One connection cache per handle; TLS with a CA, a client certificate and
 * key, from files or from PEM text in memory (a kubeconfig's *-data).
 * Nothing here logs, and no header value (an etcd token, a bearer token)
 * ever reaches an error message.
 */
#ifndef RDMANS_IPAM_HTTP_H
#define RDMANS_IPAM_HTTP_H

#include <stddef.h>

#include "rdmans/error.h"

struct rn_http;

struct rn_http_tls {
	const char *ca_file;
	const char *cert_file;
	const char *key_file;
	/* PEM text, used instead of the matching file when set (libcurl copies it) */
	const char *ca_pem;
	const char *cert_pem;
	const char *key_pem;
	/* a human name for the settings, for messages ("cert_file and key_file") */
	const char *cert_settings;
	/*
	 * how long a connection (TLS included) may take: 0 is 2000 ms, for a
	 * cluster of members where the next one is better than waiting; one
	 * server under load may need the whole request's time
	 */
	long connect_timeout_ms;
};

int rn_http_open(const struct rn_http_tls *tls, long timeout_ms, struct rn_http **ret,
		 struct rn_error *err);
void rn_http_close(struct rn_http *h);

/*
 * One request: method ("GET", "POST", "PUT", "DELETE"), a JSON body or
 * NULL, an Authorization header value or NULL, taking at most timeout_ms
 * (0, or more than rn_http_open()'s: that one). Transport failures return a
 * negative errno with err naming the URL (-ECONNREFUSED, -ETIMEDOUT,
 * -EHOSTUNREACH, -EPROTO for TLS, -EIO); an HTTP answer returns 0 with its
 * status and body (malloc'ed).
 */
int rn_http_request(struct rn_http *h, const char *method, const char *url, const char *body,
		    const char *authorization, long timeout_ms, long *ret_status, char **ret_body,
		    struct rn_error *err);

#endif
