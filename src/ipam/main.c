// SPDX-License-Identifier: Apache-2.0
/*
 * rdma-netns-ipam: the CNI IPAM plugin. Reads the CNI environment and the
 * network configuration, calls the library (rdmans/ipam.h), and writes the
 * result or the error in the caller's CNI version. Logs go to ipam.log_file
 * (or stderr), never the configuration itself: it may hold etcd credentials.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "rdmans/cleanup.h"
#include "rdmans/cni_protocol.h"
#include "rdmans/util.h"
#include "rdmans/ipam.h"
#include "rdmans/json_cleanup.h"

/* Ours (100+), documented in rdma-netns-ipam(8). */
enum {
	IPAM_EXHAUSTED = 100, /* no free address left in a range */
	IPAM_DENIED = 101, /* the store refused our credentials or role */
	IPAM_CHECK_FAILED = 102, /* CHECK: the addresses are not held as ADD left them */
};

/* The oldest CNI version rdma-netns-ipam speaks: 0.1.0 (rdmans/cni_protocol.h numbers them). */
#define IPAM_OLDEST 10

struct plugin {
	struct rn_cni_call *call; /* the environment, the configuration, its version */
	struct rn_cni_args args; /* the pod, from CNI_ARGS */
	struct rn_ipam_config cfg;
	bool have_cfg;
	bool env_refused; /* the CNI environment (not the configuration) was refused */
	struct rn_ipam_store *store;
	FILE *log;
	enum rn_ipam_log_level log_level;
};

/* ---- logging: one line per event, never the configuration ---------------- */

static void logf_(struct plugin *p, enum rn_ipam_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void logf_(struct plugin *p, enum rn_ipam_log_level level, const char *fmt, ...)
{
	static const char *const names[] = { "error", "info", "debug" };
	FILE *out = p->log ? p->log : stderr;
	const struct rn_cni_env *env = &p->call->env;
	char when[40];
	struct timespec ts;
	struct tm tm;
	va_list ap;

	if (level > p->log_level)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	fprintf(out, "%s.%03ldZ [%s] %s %s", when, ts.tv_nsec / 1000000, names[level],
		env->command ? env->command : "-", env->container_id ? env->container_id : "-");
	if (env->ifname)
		fprintf(out, "/%s", env->ifname);
	fputs(": ", out);
	va_start(ap, fmt);
	vfprintf(out, fmt, ap);
	va_end(ap);
	fputc('\n', out);
	fflush(out);
}

/*
 * ipam.log_file, appended to; 0, or -1 with *why set when it cannot be
 * opened (the command then fails: a log that silently goes nowhere helps
 * nobody). Never a FIFO or a device (O_NONBLOCK: no wait for a reader).
 */
static int open_log(struct plugin *p, char *why, size_t len)
{
	struct rn_error err = { 0 };
	int fd;

	p->log_level = p->cfg.log_level;
	if (!p->cfg.log_file)
		return 0;
	/* never blocks: a FIFO, a device or a symlink as log_file is refused */
	fd = rn_open_regular(AT_FDCWD, p->cfg.log_file, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW,
			     0640, "ipam.log_file", &err);
	if (fd >= 0 && !(p->log = fdopen(fd, "a"))) {
		rn_error_errno(&err, errno, "cannot use ipam.log_file %s", p->cfg.log_file);
		close(fd);
		fd = -1;
	}
	if (fd < 0) {
		snprintf(why, len, "%s", err.msg);
		return -1;
	}
	return 0;
}

/* ---- output ---------------------------------------------------------------- */

static const char *out_version(const struct plugin *p)
{
	return p->call->version;
}

/* The failure the skeleton reports (and logs: log_failure()); returns -1. */
static int fail(struct plugin *p, int code, const char *msg, const char *details)
{
	struct rn_cni_failure *f = &p->call->fail;

	(void)rn_cni_fail(f, code, "%s", msg);
	snprintf(f->details, sizeof(f->details), "%s", details ? details : "");
	return -1;
}

/* The CNI code for a library error. */
static int code_for(const struct rn_error *err)
{
	switch (err->code) {
	case EADDRNOTAVAIL: /* a range is full; ENOSPC is a full disk: I/O */
		return IPAM_EXHAUSTED;
	case EACCES:
	case EPERM:
		return IPAM_DENIED;
	case EHOSTUNREACH:
	case ECONNREFUSED:
	case ETIMEDOUT:
	case EAGAIN:
		return CNI_ERR_TRY_AGAIN;
	case EINVAL:
		return CNI_ERR_INVALID_CONFIG;
	case EBADMSG:
		return CNI_ERR_DECODE;
	default:
		return CNI_ERR_IO;
	}
}

static int fail_err(struct plugin *p, const char *what, const struct rn_error *err)
{
	return fail(p, code_for(err), what, err->msg);
}

static json_t *ip_json(const struct rn_ipam_lease_addr *a)
{
	char ip[RN_IP_STRLEN], cidr[RN_CIDR_STRLEN + 4];

	snprintf(cidr, sizeof(cidr), "%s/%u", rn_ip_format(a->ip.family, a->ip.v, ip, sizeof(ip)),
		 a->prefix);
	return json_string(cidr);
}

static json_t *gateway_json(const struct rn_ipam_lease_addr *a)
{
	char gw[RN_IP_STRLEN];

	return json_string(rn_ip_format(a->ip.family, a->gateway, gw, sizeof(gw)));
}

/* Result in the caller's version: 0.1/0.2 (ip4/ip6), 0.3/0.4 (ips with version), 1.x. */
static int print_result(struct plugin *p, const struct rn_ipam_lease *lease)
{
	json_t *doc = json_pack("{s:s}", "cniVersion", out_version(p));
	_cleanup_json_ json_t *routes = NULL, *dns = NULL;
	bool legacy = p->call->ver < 30;

	if (p->cfg.routes_json)
		routes = json_loads(p->cfg.routes_json, 0, NULL);
	if (p->cfg.dns_json)
		dns = json_loads(p->cfg.dns_json, 0, NULL);
	if (legacy) {
		bool seen4 = false, seen6 = false;

		for (size_t i = 0; i < lease->n; i++) {
			const struct rn_ipam_lease_addr *a = &lease->addr[i];
			bool v4 = a->ip.family == AF_INET;
			json_t *o, *r = json_array(), *rt;
			size_t k;

			if ((v4 && seen4) || (!v4 && seen6))
				continue; /* cmd_add() refused such configs before allocating */
			seen4 = seen4 || v4;
			seen6 = seen6 || !v4;
			o = json_pack("{s:o}", "ip", ip_json(a));
			if (a->has_gateway)
				json_object_set_new(o, "gateway", gateway_json(a));
			json_array_foreach (routes, k, rt) {
				struct rn_ip dst;
				unsigned prefix;

				if (rn_cidr_parse(json_string_value(json_object_get(rt, "dst")),
						  &dst, &prefix) == 0 &&
				    dst.family == a->ip.family)
					json_array_append(r, rt);
			}
			if (json_array_size(r))
				json_object_set_new(o, "routes", r);
			else
				json_decref(r);
			json_object_set_new(doc, v4 ? "ip4" : "ip6", o);
		}
	} else {
		json_t *ips = json_array();

		for (size_t i = 0; i < lease->n; i++) {
			const struct rn_ipam_lease_addr *a = &lease->addr[i];
			json_t *o = json_object();

			rn_cni_result_ip_version(o, p->call->ver, a->ip.family != AF_INET);
			json_object_set_new(o, "address", ip_json(a));
			if (a->has_gateway)
				json_object_set_new(o, "gateway", gateway_json(a));
			json_array_append_new(ips, o);
		}
		json_object_set_new(doc, "ips", ips);
		if (routes)
			json_object_set(doc, "routes", routes);
	}
	if (dns)
		json_object_set(doc, "dns", dns);
	(void)rn_cni_print(doc);
	return 0;
}

/* ---- input ----------------------------------------------------------------- */

static void owner_of(const struct plugin *p, struct rn_ipam_owner *o)
{
	o->container_id = p->call->env.container_id;
	o->ifname = p->call->env.ifname;
	o->pod_namespace = p->args.pod_namespace;
	o->pod_name = p->args.pod_name;
	o->netns = p->call->env.netns; /* recorded for `rdmans ipam reconcile` */
}

static void log_lease(struct plugin *p, const char *verb, const struct rn_ipam_lease *l)
{
	char line[1024] = "";
	size_t n = 0;

	for (size_t i = 0; i < l->n && n < sizeof(line) - 64; i++) {
		char ip[RN_IP_STRLEN];

		n += (size_t)snprintf(
			line + n, sizeof(line) - n, "%s%s/%u", i ? " " : "",
			rn_ip_format(l->addr[i].ip.family, l->addr[i].ip.v, ip, sizeof(ip)),
			l->addr[i].prefix);
	}
	/* what the runtime said: podman passes K8S_POD_NAME alone */
	logf_(p, RN_IPAM_LOG_INFO, "%s %s (%s %s%s%s, node %s, store %s)", verb, line,
	      p->args.pod_name[0] ? "pod" : "container",
	      p->args.pod_name[0] && p->args.pod_namespace[0] ? p->args.pod_namespace : "",
	      p->args.pod_name[0] && p->args.pod_namespace[0] ? "/" : "",
	      p->args.pod_name[0]	  ? p->args.pod_name
	      : p->call->env.container_id ? p->call->env.container_id
					  : "?",
	      p->cfg.node,
	      p->cfg.store == RN_IPAM_STORE_ETCD	 ? "etcd"
	      : p->cfg.store == RN_IPAM_STORE_KUBERNETES ? "kubernetes"
							 : "local");
}

/* What the configuration says, minus anything secret. */
static void log_config(struct plugin *p)
{
	if (p->log_level < RN_IPAM_LOG_DEBUG)
		return;
	logf_(p, RN_IPAM_LOG_DEBUG, "network '%s' scope '%s' overlapping %s, %zu range(s)%s%s",
	      p->cfg.network, p->cfg.scope, p->cfg.overlapping ? "on" : "off", p->cfg.n_ranges,
	      p->cfg.flat_file ? ", defaults from " : "", p->cfg.flat_file ? p->cfg.flat_file : "");
	for (size_t i = 0; i < p->cfg.n_ranges; i++) {
		char a[RN_IP_STRLEN], b[RN_IP_STRLEN];
		const struct rn_ipam_range *r = &p->cfg.ranges[i];

		logf_(p, RN_IPAM_LOG_DEBUG, "range %s: %s - %s, %zu exclude span(s)%s", r->cidr,
		      rn_ip_format(r->family, r->start, a, sizeof(a)),
		      rn_ip_format(r->family, r->end, b, sizeof(b)), r->n_exclude,
		      r->has_gateway ? ", gateway reserved" : "");
	}
	if (p->cfg.store == RN_IPAM_STORE_ETCD)
		logf_(p, RN_IPAM_LOG_DEBUG,
		      "store etcd: %zu endpoint(s), first %s, prefix %s, TLS %s, user %s",
		      p->cfg.etcd.n_endpoints, p->cfg.etcd.endpoints[0],
		      p->cfg.etcd.key_prefix ? p->cfg.etcd.key_prefix : RN_IPAM_DEFAULT_ETCD_PREFIX,
		      p->cfg.etcd.ca_file || p->cfg.etcd.cert_file ? "on" : "off",
		      p->cfg.etcd.username ? p->cfg.etcd.username : "(none)");
	else if (p->cfg.store == RN_IPAM_STORE_KUBERNETES)
		logf_(p, RN_IPAM_LOG_DEBUG, "store kubernetes: kubeconfig %s",
		      p->cfg.kubernetes.kubeconfig);
	else
		logf_(p, RN_IPAM_LOG_DEBUG, "store local: %s", p->cfg.data_dir);
}

/* ---- commands -------------------------------------------------------------- */

static struct plugin *plugin_of(struct rn_cni_call *call, void *data)
{
	struct plugin *p = data;

	p->call = call;
	return p;
}

static int cmd_add(struct rn_cni_call *call, void *data)
{
	struct plugin *p = plugin_of(call, data);
	struct rn_ipam_owner o;
	struct rn_ipam_lease lease;
	struct rn_error err = { 0 };
	size_t v4 = 0, v6 = 0;

	/* refused before anything is allocated: a result that cannot be written holds nothing */
	for (size_t i = 0; i < p->cfg.n_ranges; i++) {
		if (p->cfg.ranges[i].family == AF_INET)
			v4++;
		else
			v6++;
	}
	if (p->call->ver < 30 && (v4 > 1 || v6 > 1))
		return fail(p, CNI_ERR_INCOMPATIBLE,
			    "CNI version 0.2.0 and older carry one address per family",
			    "use cniVersion 0.3.0 or later with several ranges of one family");
	owner_of(p, &o);
	if (rn_ipam_add(p->store, &p->cfg, &o, &lease, &err) < 0)
		return fail_err(p, "address allocation failed", &err);
	log_lease(p, lease.existing ? "holds" : "allocated", &lease);
	return print_result(p, &lease);
}

static int cmd_del(struct rn_cni_call *call, void *data)
{
	struct plugin *p = plugin_of(call, data);
	struct rn_ipam_owner o;
	struct rn_error err = { 0 };
	size_t released = 0;

	owner_of(p, &o);
	if (rn_ipam_del(p->store, &p->cfg, &o, &released, &err) < 0)
		return fail_err(p, "address release failed", &err);
	logf_(p, RN_IPAM_LOG_INFO, "released %zu address(es)", released);
	return 0;
}

/* Is "a.b.c.d/nn" among prevResult's ips? */
static bool in_prev_result(json_t *prev, const struct rn_ipam_lease_addr *a)
{
	json_t *ips = json_object_get(prev, "ips"), *ip;
	size_t i;

	json_array_foreach (ips, i, ip) {
		struct rn_ip got;
		unsigned prefix;

		if (rn_cidr_parse(json_string_value(json_object_get(ip, "address")), &got,
				  &prefix) == 0 &&
		    got.family == a->ip.family && got.v == a->ip.v && prefix == a->prefix)
			return true;
	}
	return false;
}

static int cmd_check(struct rn_cni_call *call, void *data)
{
	struct plugin *p = plugin_of(call, data);
	json_t *prev = json_object_get(call->doc, "prevResult");
	struct rn_ipam_lease lease;
	struct rn_ipam_owner o;
	struct rn_error err = { 0 };

	owner_of(p, &o);
	if (rn_ipam_check(p->store, &p->cfg, &o, &lease, &err) < 0)
		return fail(p, err.code == ENOENT ? IPAM_CHECK_FAILED : code_for(&err),
			    "CHECK failed", err.msg);
	if (json_is_object(prev)) {
		for (size_t i = 0; i < lease.n; i++) {
			if (!in_prev_result(prev, &lease.addr[i])) {
				char ip[RN_IP_STRLEN], msg[256];

				snprintf(msg, sizeof(msg),
					 "address %s/%u is held but missing from prevResult",
					 rn_ip_format(lease.addr[i].ip.family, lease.addr[i].ip.v,
						      ip, sizeof(ip)),
					 lease.addr[i].prefix);
				return fail(p, IPAM_CHECK_FAILED, "CHECK failed", msg);
			}
		}
	}
	log_lease(p, "holds", &lease);
	return 0;
}

static int cmd_status(struct rn_cni_call *call, void *data)
{
	struct plugin *p = plugin_of(call, data);
	struct rn_error err = { 0 };

	if (rn_ipam_status(p->store, &p->cfg, &err) < 0)
		return fail(p, CNI_ERR_NOT_AVAILABLE, "rdma-netns-ipam cannot serve ADD", err.msg);
	logf_(p, RN_IPAM_LOG_DEBUG, "STATUS ok");
	return 0;
}

static int cmd_gc(struct rn_cni_call *call, void *data)
{
	struct plugin *p = plugin_of(call, data);
	json_t *list = json_object_get(p->call->doc, "cni.dev/valid-attachments"), *item;
	_cleanup_free_ struct rn_ipam_valid *valid = NULL;
	struct rn_error err = { 0 };
	size_t released = 0, i;

	if (!list)
		list = json_object_get(p->call->doc, "cni.dev/attachments");
	if (!json_is_array(list))
		return fail(p, CNI_ERR_INVALID_CONFIG, "GC needs the valid attachments",
			    "the configuration has no \"cni.dev/valid-attachments\" list");
	valid = calloc(json_array_size(list) + 1, sizeof(*valid));
	if (!valid)
		return fail(p, CNI_ERR_IO, "out of memory", NULL);
	json_array_foreach (list, i, item) {
		valid[i].container_id = json_string_value(json_object_get(item, "containerID"));
		valid[i].ifname = json_string_value(json_object_get(item, "ifname"));
		if (!valid[i].container_id || !valid[i].ifname)
			return fail(p, CNI_ERR_INVALID_CONFIG, "GC: bad valid-attachments entry",
				    "each entry needs \"containerID\" and \"ifname\" strings");
	}
	if (rn_ipam_gc(p->store, &p->cfg, valid, json_array_size(list), &released, &err) < 0)
		return fail_err(p, "GC failed", &err);
	logf_(p, RN_IPAM_LOG_INFO, "released %zu address(es) of node %s, network %s", released,
	      p->cfg.node, p->cfg.network);
	return 0;
}

/* ---- the skeleton's hooks (rdmans/cni_protocol.h) --------------------------------- */

/* The configuration (DEL and GC read only its store), the log, the environment, the store. */
static int prepare(struct rn_cni_call *call, void *data)
{
	struct plugin *p = plugin_of(call, data);
	const char *command = call->env.command;
	bool store_only = strcmp(command, "DEL") == 0 || strcmp(command, "GC") == 0;
	struct rn_error err = { 0 };
	char why[PATH_MAX + 128];

	/* the skeleton's decoding (rn_cni_conf_decode), not a second one */
	if (rn_ipam_config_from_json(call->doc, rn_config_root(),
				     store_only ? RN_IPAM_CONFIG_STORE_ONLY : 0, &p->cfg, &err) < 0)
		return fail(p, err.code == EBADMSG ? CNI_ERR_DECODE : CNI_ERR_INVALID_CONFIG,
			    "invalid IPAM configuration", err.msg);
	p->have_cfg = true;
	if (open_log(p, why, sizeof(why)) < 0)
		return fail(p, CNI_ERR_INVALID_CONFIG, why,
			    "point ipam.log_file at a writable regular file, or remove it to log "
			    "to stderr");
	log_config(p);

	if (strcmp(command, "ADD") == 0 || strcmp(command, "CHECK") == 0 ||
	    strcmp(command, "DEL") == 0) {
		struct rn_ipam_owner o;
		char id[RN_IPAM_ID_MAX];

		p->env_refused = true;
		if (rn_cni_env_require(&call->env, false, RN_IPAM_PLUGIN_NAME, &err) < 0)
			return fail(p, CNI_ERR_INVALID_ENV, err.msg, NULL);
		if (rn_cni_args_parse(call->env.args, &p->args, &err) < 0)
			return fail(p, CNI_ERR_INVALID_ENV, "CNI_ARGS is not K=V;K=V", err.msg);
		owner_of(p, &o);
		if (rn_ipam_attachment_id(&o, id, sizeof(id), &err) < 0)
			return fail(p, CNI_ERR_INVALID_ENV, "invalid CNI environment", err.msg);
		p->env_refused = false;
	}
	if (rn_ipam_store_open(&p->cfg, &p->store, &err) < 0)
		return fail_err(p, "cannot open the IPAM store", &err);
	return 0;
}

/*
 * DEL with an environment ADD refuses: no ADD stored anything under it, so
 * there is nothing to release, and the runtime's DEL must not fail forever.
 * A configuration that cannot be read may have changed since ADD: that
 * refusal stands.
 */
static int del_refused(struct rn_cni_call *call, void *data)
{
	struct plugin *p = plugin_of(call, data);

	if (!p->env_refused)
		return -1;
	logf_(p, RN_IPAM_LOG_INFO,
	      "DEL: nothing to release (no ADD takes this environment: %s%s%s)", call->fail.msg,
	      call->fail.details[0] ? ": " : "", call->fail.details);
	return 0;
}

static void log_failure(struct rn_cni_call *call, void *data)
{
	struct plugin *p = plugin_of(call, data);

	logf_(p, RN_IPAM_LOG_ERROR, "%s (code %d)%s%s", call->fail.msg, call->fail.code,
	      call->fail.details[0] ? ": " : "", call->fail.details);
}

static const struct rn_cni_plugin rdma_netns_ipam = {
	.name = RN_IPAM_PLUGIN_NAME,
	.oldest = IPAM_OLDEST,
	.prepare = prepare,
	.verbs = { cmd_add, cmd_del, cmd_check, cmd_status, cmd_gc },
	.del_refused = del_refused,
	.log_failure = log_failure,
};

int main(void)
{
	struct plugin p = { .log_level = RN_IPAM_LOG_ERROR };
	int r = rn_cni_main(&rdma_netns_ipam, &p);

	if (p.store)
		rn_ipam_store_close(p.store);
	if (p.have_cfg)
		rn_ipam_config_free(&p.cfg);
	if (p.log)
		fclose(p.log);
	return r;
}
