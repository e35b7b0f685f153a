// SPDX-License-Identifier: Apache-2.0
/*
 * rdmans exporter [--listen ADDR:PORT] [--cni-state-dir DIR] [--once]
 *
 * Serves the RDMA counters of every namespace (rn_scrape_all) on /metrics in
 * the Prometheus text format, through libmicrohttpd (one polling thread on
 * epoll, so scrapes never overlap and thousands of slow clients cannot take
 * every slot). Each request scrapes afresh; nothing is cached.
 */
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include "rdmans.h"
#include "rdmans/counters.h"
#include "rdmans/prom.h"

#define DEFAULT_LISTEN ":9877"

#if MHD_VERSION < 0x00097002
typedef int rn_mhd_result;
#else
typedef enum MHD_Result rn_mhd_result;
#endif

struct exporter {
	struct rn_scrape_options opts;
};

/* Scrapes and renders into out; a failed scrape is an error. */
static int scrape_render(const struct exporter *ex, struct rn_buf *out, struct rn_error *err)
{
	_cleanup_scrape_ struct rn_scrape s = { 0 };
	int r;

	r = rn_scrape_all(&ex->opts, &s, err);
	if (r < 0)
		return r;
	/* the metric says which netns and a reason word; the message goes here */
	for (size_t i = 0; i < s.nns; i++)
		if (s.ns[i].failed)
			fprintf(stderr, "rdmans exporter: netns %s not read (%s): %s\n",
				s.ns[i].label, rn_scrape_failure_reason(&s.ns[i]), s.ns[i].error);
	return rn_prom_render(&s, out, err);
}

static rn_mhd_result respond(struct MHD_Connection *c, unsigned status, char *body, size_t len,
			     const char *type)
{
	struct MHD_Response *resp;
	rn_mhd_result ret;

	resp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	/* what else the client sent on this connection cannot be trusted */
	if (status == MHD_HTTP_BAD_REQUEST)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
	ret = MHD_queue_response(c, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static rn_mhd_result respond_text(struct MHD_Connection *c, unsigned status, const char *text)
{
	char *body = strdup(text);

	if (!body)
		return MHD_NO;
	return respond(c, status, body, strlen(body), "text/plain; charset=utf-8");
}

/*
 * A NUL byte in the request line ("GET /metrics\0/x HTTP/1.1"). libmicrohttpd
 * 1.0 refuses such a line itself. Before 1.0 it hands each part of the line
 * as a C string, so the part holding the NUL arrives cut short: the path as
 * "/metrics", the method "GET\0X" as "GET". The API has no length for them,
 * but parse_initial_message_line (connection.c, 0.9.x) leaves every part in
 * the one line buffer: the method at its start, ended by a NUL over the first
 * space; then only spaces up to the target; the target ended by a NUL over
 * the last space; then the version, which must be exactly "HTTP/d.d". So the
 * line was whole only if the method and the target each end where MHD put
 * its NUL. The target's end is taken in the URI log callback, before MHD
 * splits off the query and unescapes the path in place.
 */
static char line_whole, line_cut;

#if MHD_VERSION < 0x01000000
static void *target_end(void *cls, const char *uri, struct MHD_Connection *c)
{
	(void)cls;
	(void)c;
	return uri ? (char *)(uintptr_t)(uri + strlen(uri)) : NULL;
}

static bool request_line_whole(const char *method, const char *url, const char *end,
			       const char *version)
{
	const char *p = method + strlen(method) + 1;

	if (!end || end + 1 != version || (uintptr_t)p > (uintptr_t)url ||
	    (uintptr_t)url > (uintptr_t)end)
		return false;
	for (; p < url; p++)
		if (*p != ' ')
			return false;
	return true;
}
#else
static bool request_line_whole(const char *method, const char *url, const char *end,
			       const char *version)
{
	(void)method;
	(void)url;
	(void)end;
	(void)version;
	return true;
}
#endif

static rn_mhd_result handle(void *cls, struct MHD_Connection *c, const char *url,
			    const char *method, const char *version, const char *upload_data,
			    size_t *upload_data_size, void **con_cls)
{
	const struct exporter *ex = cls;
	struct rn_buf out = { 0 };
	struct rn_error err = { 0 };

	/*
	 * The first call only announces the request: answering then makes
	 * libmicrohttpd close the connection instead of keeping it alive.
	 */
	if (*con_cls != &line_whole && *con_cls != &line_cut) {
		*con_cls = request_line_whole(method, url, *con_cls, version) ? &line_whole
									      : &line_cut;
		return MHD_YES;
	}
	/*
	 * A body (POST, PUT) is read to its end before the answer: answered
	 * earlier, libmicrohttpd closes the connection without sending it.
	 * The idle timeout and the memory limit bound what a client can send.
	 */
	if (*upload_data_size) {
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (*con_cls == &line_cut)
		return respond_text(c, MHD_HTTP_BAD_REQUEST,
				    "bad request: the request line holds a NUL byte\n");
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
		return respond_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD\n");
	if (strcmp(url, "/") == 0)
		return respond_text(c, MHD_HTTP_OK,
				    "rdmans exporter: RDMA counters of every namespace on "
				    "/metrics\n");
	if (strcmp(url, "/metrics") != 0)
		return respond_text(c, MHD_HTTP_NOT_FOUND,
				    "not found: the metrics are on /metrics\n");
	if (scrape_render(ex, &out, &err) < 0) {
		char msg[RN_ERROR_MSG_MAX + 32];

		rn_buf_free(&out);
		snprintf(msg, sizeof(msg), "scrape failed: %s\n", err.msg);
		return respond_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, msg);
	}
	/* libmicrohttpd frees the body with free() */
	return respond(c, MHD_HTTP_OK, out.buf, out.len, RN_PROM_CONTENT_TYPE);
}

/*
 * "%00" unescaped would cut the path short ("/metrics%00/x" read as
 * "/metrics"): a path holding one is left escaped, so it names nothing (404).
 * A raw NUL byte is refused before this (request_line_whole).
 */
static size_t unescape(void *cls, struct MHD_Connection *c, char *s)
{
	(void)cls;
	(void)c;
	if (strstr(s, "%00"))
		return strlen(s);
	return MHD_http_unescape(s);
}

struct listen_addr {
	struct sockaddr_storage ss;
	socklen_t len;
	bool any; /* ":PORT": every address */
	unsigned port;
};

/* "ADDR:PORT", "[V6ADDR]:PORT", ":PORT" or "PORT"; ADDR numeric (or localhost). */
static int parse_listen(const char *text, struct listen_addr *out)
{
	struct addrinfo hints = { .ai_flags = AI_PASSIVE | AI_NUMERICHOST,
				  .ai_socktype = SOCK_STREAM };
	struct addrinfo *res = NULL;
	char host[256] = "";
	const char *port_text;
	unsigned long port;
	char *end;

	memset(out, 0, sizeof(*out));
	if (text[0] == '[') {
		const char *close = strchr(text, ']');

		if (!close || close[1] != ':' || (size_t)(close - text - 1) >= sizeof(host))
			return -EINVAL;
		memcpy(host, text + 1, (size_t)(close - text - 1));
		host[close - text - 1] = '\0';
		port_text = close + 2;
	} else {
		const char *colon = strrchr(text, ':');

		if (colon && strchr(text, ':') != colon)
			return -EINVAL; /* a bare IPv6 address needs brackets */
		if (colon) {
			if ((size_t)(colon - text) >= sizeof(host))
				return -EINVAL;
			memcpy(host, text, (size_t)(colon - text));
			host[colon - text] = '\0';
			port_text = colon + 1;
		} else {
			port_text = text;
		}
	}
	if (!*port_text || *port_text < '0' || *port_text > '9')
		return -EINVAL;
	errno = 0;
	port = strtoul(port_text, &end, 10);
	if (errno || *end || port > 65535)
		return -EINVAL;
	out->port = (unsigned)port;
	if (!host[0] || strcmp(host, "*") == 0) {
		out->any = true;
		return 0;
	}
	/* numeric only: a daemon must not wait on DNS to start */
	if (strcmp(host, "localhost") == 0)
		snprintf(host, sizeof(host), "127.0.0.1");
	if (getaddrinfo(host, NULL, &hints, &res) != 0 || !res)
		return -EADDRNOTAVAIL;
	memcpy(&out->ss, res->ai_addr, res->ai_addrlen);
	out->len = res->ai_addrlen;
	freeaddrinfo(res);
	if (out->ss.ss_family == AF_INET)
		((struct sockaddr_in *)&out->ss)->sin_port = htons((uint16_t)port);
	else if (out->ss.ss_family == AF_INET6)
		((struct sockaddr_in6 *)&out->ss)->sin6_port = htons((uint16_t)port);
	else
		return -EADDRNOTAVAIL;
	return 0;
}

/*
 * How many clients it serves at once. Slow clients (a header line every few
 * seconds never trips the idle timeout) must not be able to take every slot:
 * thousands of slots (each a small memory pool and one fd, the fd limit
 * raised to fit), one address gets a quarter of them, and the polling thread
 * uses epoll, so thousands of sockets cost nothing while idle.
 */
#define MAX_CONNECTIONS 8192u
#define CONNECTION_MEMORY (16u * 1024)
#define IDLE_TIMEOUT_S 30u

struct limits {
	unsigned total, per_ip;
};

static struct limits connection_limits(void)
{
	struct rlimit rl;
	rlim_t want = MAX_CONNECTIONS + 64, have = 1024;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		have = rl.rlim_cur;
		if (rl.rlim_cur < want && rl.rlim_max > rl.rlim_cur) {
			rl.rlim_cur = rl.rlim_max < want ? rl.rlim_max : want;
			if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
				have = rl.rlim_cur;
		}
	}
	struct limits l = { .total = have > 64 + 16 ? (unsigned)(have - 64) : 16 };

	if (l.total > MAX_CONNECTIONS)
		l.total = MAX_CONNECTIONS;
	l.per_ip = l.total / 4 > 16 ? l.total / 4 : l.total;
	return l;
}

static struct MHD_Daemon *start(const struct listen_addr *la, struct exporter *ex,
				const struct limits *l)
{
	unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG;
	struct sockaddr_in6 any6 = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_ANY_INIT };
	struct sockaddr_in any4 = { .sin_family = AF_INET, .sin_addr.s_addr = INADDR_ANY };
	const struct sockaddr *sa = (const struct sockaddr *)&la->ss;
	struct MHD_Daemon *d;

#if MHD_VERSION < 0x01000000
#define URI_LOG_OPTION , MHD_OPTION_URI_LOG_CALLBACK, target_end, NULL
#else
#define URI_LOG_OPTION
#endif
#define LIMIT_OPTIONS                                                                              \
	MHD_OPTION_CONNECTION_TIMEOUT, IDLE_TIMEOUT_S, MHD_OPTION_CONNECTION_LIMIT, l->total,      \
		MHD_OPTION_PER_IP_CONNECTION_LIMIT, l->per_ip, MHD_OPTION_CONNECTION_MEMORY_LIMIT, \
		(size_t)CONNECTION_MEMORY, MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024u,                  \
		MHD_OPTION_UNESCAPE_CALLBACK, unescape, NULL URI_LOG_OPTION
	if (la->any) {
		any6.sin6_port = htons((uint16_t)la->port);
		d = MHD_start_daemon(flags | MHD_USE_DUAL_STACK, (uint16_t)la->port, NULL, NULL,
				     handle, ex, MHD_OPTION_SOCK_ADDR, &any6, LIMIT_OPTIONS,
				     MHD_OPTION_END);
		if (d)
			return d;
		/* no IPv6 on this host: every IPv4 address */
		any4.sin_port = htons((uint16_t)la->port);
		sa = (const struct sockaddr *)&any4;
	} else if (la->ss.ss_family == AF_INET6) {
		flags |= MHD_USE_IPv6;
	}
	return MHD_start_daemon(flags, (uint16_t)la->port, NULL, NULL, handle, ex,
				MHD_OPTION_SOCK_ADDR, sa, LIMIT_OPTIONS, MHD_OPTION_END);
#undef LIMIT_OPTIONS
#undef URI_LOG_OPTION
}

static int run_once(const struct exporter *ex)
{
	struct rn_buf out = { 0 };
	struct rn_error err = { 0 };
	int r;

	r = scrape_render(ex, &out, &err);
	if (r < 0) {
		rn_buf_free(&out);
		return rn_cli_fail(&err);
	}
	fwrite(out.buf, 1, out.len, stdout);
	rn_buf_free(&out);
	return fflush(stdout) == 0 ? 0 : RN_EXIT_FAILURE;
}

int rn_cmd_exporter(struct rn_cli *cli)
{
	struct exporter ex = { 0 };
	const char *listen = DEFAULT_LISTEN;
	struct listen_addr la;
	struct limits limits;
	struct MHD_Daemon *d;
	const union MHD_DaemonInfo *info;
	sigset_t set;
	bool once = false;
	int sig = 0, r;

	while (rn_cli_peek(cli)) {
		const char *a = rn_cli_next(cli);

		if (strcmp(a, "--listen") == 0 || strcmp(a, "-l") == 0) {
			listen = rn_cli_next(cli);
			if (!listen)
				return rn_cli_usage("--listen needs ADDR:PORT (e.g. :9877, "
						    "127.0.0.1:9877, [::1]:9877)");
		} else if (strcmp(a, "--cni-state-dir") == 0) {
			ex.opts.cni_state_dir = rn_cli_next(cli);
			if (!ex.opts.cni_state_dir)
				return rn_cli_usage("--cni-state-dir needs a directory");
		} else if (strcmp(a, "--once") == 0) {
			once = true;
		} else {
			return rn_cli_usage("unexpected argument '%s' to 'exporter' (usage: rdmans "
					    "exporter [--listen ADDR:PORT] [--cni-state-dir DIR] "
					    "[--once])",
					    a);
		}
	}
	if (once)
		return run_once(&ex);

	r = parse_listen(listen, &la);
	if (r == -EADDRNOTAVAIL)
		return rn_cli_usage("--listen %s: not an address (give a numeric IPv4 or IPv6 "
				    "address, localhost, or none for every address)",
				    listen);
	if (r < 0)
		return rn_cli_usage("--listen %s: expected ADDR:PORT, [IPV6]:PORT, :PORT or PORT "
				    "with PORT 0-65535",
				    listen);
	/* The daemon's thread inherits this mask; the signals come to sigwait() here. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	limits = connection_limits();
	d = start(&la, &ex, &limits);
	if (!d) {
		fprintf(stderr,
			"rdmans: cannot listen on %s (address in use, or not an address of this "
			"host?)\n",
			listen);
		return RN_EXIT_FAILURE;
	}
	info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	fprintf(stderr,
		"rdmans exporter: serving /metrics on %s (port %u; up to %u connections, %u per "
		"address)\n",
		listen, info ? (unsigned)info->port : la.port, limits.total, limits.per_ip);
	fflush(stderr);
	sigwait(&set, &sig);
	MHD_stop_daemon(d);
	return 0;
}
