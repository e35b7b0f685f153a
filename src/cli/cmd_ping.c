// SPDX-License-Identifier: Apache-2.0
/*
 * rdmans ping: RDMA traffic between two netns through librdmacm (the
 * library's ping module), with the device and GID index NCCL would use.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "nccl_opts.h"
#include "rdmans.h"
#include "rdmans/cleanup.h"
#include "rdmans/nccl.h"
#include "rdmans/nccl_json.h"
#include "rdmans/nccl_node.h"
#include "rdmans/nccl_process.h"
#include "rdmans/nccl_resolve.h"
#include "rdmans/nccl_rules.h"
#include "rdmans/netns.h"
#include "rdmans/ping.h"
#include "rdmans/util.h"

static int ping_usage(void)
{
	return rn_cli_usage(
		"usage: rdmans ping --server [--netns TARGET | --pid PID] [--device DEV] "
		"[--gid-index N] [--port N] [--once] [--idle SECONDS] [--timeout SECONDS]; rdmans "
		"ping ADDRESS "
		"[--netns TARGET | --pid PID] [--device DEV] [--gid-index N] [--port N] [--count "
		"N] [--size BYTES] [--lat-size BYTES] [--bw-count N] [--timeout SECONDS] [the NCCL "
		"options of 'rdmans env']");
}

int rn_ping_exit_code(int code)
{
	switch (code) {
	case ECONNREFUSED:
	case EHOSTUNREACH:
	case ENETUNREACH:
	case ETIMEDOUT:
	case ECONNRESET:
		return RN_EXIT_NO_PEER;
	case ENOMEM:
		return RN_EXIT_MEMLOCK;
	case EADDRNOTAVAIL:
		return RN_EXIT_BAD_GID;
	default:
		return -1;
	}
}

static int ping_fail(const struct rn_error *err)
{
	int code = rn_ping_exit_code(err->code);

	if (code < 0)
		return rn_cli_fail(err);
	fprintf(stderr, "rdmans: %s\n", err->msg);
	return code;
}

/*
 * The device and GID index NCCL would use in the target: NCCL_IB_HCA and
 * NCCL_IB_GID_INDEX of the process (PID, or this one: its environment and
 * nccl.conf files, read as doctor reads them), else resolved as `rdmans env`
 * does.
 */
int rn_ping_nccl_default(struct rn_ping_target *t, struct rn_error *err)
{
	_cleanup_nccl_node_ struct rn_nccl_node node = { 0 };
	_cleanup_nccl_result_ struct rn_nccl_result res = { 0 };
	_cleanup_(rn_nccl_process_free) struct rn_nccl_process proc = { 0 };
	struct rn_nccl_request req = { 0 };
	struct rn_nccl_list list;
	char hca[1024] = "", gid[32] = "", whose[48] = "the";
	const struct rn_nccl_var *hv = NULL, *gv = NULL;
	const struct rn_nccl_setting *s;
	int r;

	if (!t->netns) {
		r = rn_nccl_process_read(&proc, "/proc", t->pid ? t->pid : getpid(), err);
		if (r < 0)
			return r;
		hv = rn_nccl_process_get(&proc, "NCCL_IB_HCA");
		gv = rn_nccl_process_get(&proc, "NCCL_IB_GID_INDEX");
	}
	if (hv) {
		(void)rn_strscpy(hca, sizeof(hca), hv->value);
		if (gv)
			(void)rn_strscpy(gid, sizeof(gid), gv->value);
		if (t->pid)
			(void)rn_snprintf(whose, sizeof(whose), "PID %d's", (int)t->pid);
		if (!strcmp(hv->source, "environment"))
			(void)rn_snprintf(t->why, sizeof(t->why), "NCCL_IB_HCA%s of %s environment",
					  gv ? ", NCCL_IB_GID_INDEX" : "", whose);
		else
			(void)rn_snprintf(t->why, sizeof(t->why), "NCCL_IB_HCA%s of %s%s%s%s",
					  gv ? ", NCCL_IB_GID_INDEX" : "", hv->source,
					  t->pid ? " in " : "", t->pid ? whose : "",
					  t->pid ? " root" : "");
	} else {
		r = rn_nccl_probe(t->nsfd, &node, err);
		if (r == 0) {
			req.layers = t->layers;
			req.n_layers = t->n_layers;
			r = rn_nccl_resolve(&node, &req, &res, err);
		}
		if (r < 0)
			return r;
		s = rn_nccl_result_get(&res, "NCCL_IB_HCA");
		if (s)
			(void)rn_strscpy(hca, sizeof(hca), s->value);
		s = rn_nccl_result_get(&res, "NCCL_IB_GID_INDEX");
		if (s)
			(void)rn_strscpy(gid, sizeof(gid), s->value);
		snprintf(t->why, sizeof(t->why), "resolved as 'rdmans env' does");
	}
	rn_nccl_list_parse(hca, &list);
	if (list.exclude || list.n == 0)
		return rn_error_set(err, ENODEV,
				    "NCCL_IB_HCA '%s' (%s) names no device to ping from: give "
				    "--device",
				    hca, t->why);
	(void)rn_strscpy(t->dev, sizeof(t->dev), list.v[0].name);
	t->port = list.v[0].port > 0 ? (unsigned)list.v[0].port : 1;
	t->gid_index = -1;
	if (gid[0]) {
		char *end;
		long v = strtol(gid, &end, 10);

		if (*end || v < 0 || v > 65535)
			return rn_error_set(err, EADDRNOTAVAIL,
					    "NCCL_IB_GID_INDEX '%s' (%s) is not a GID index", gid,
					    t->why);
		t->gid_index = (int)v;
	}
	return 0;
}

struct job {
	struct rn_ping_opts *o;
	struct rn_ping_result *res;
	bool json;
};

static void print_client(const struct rn_ping_result *res, const char *why)
{
	printf("rdmans ping %s: %s port %u, GID index ", res->peer, res->dev, res->port);
	if (res->gid_index >= 0)
		printf("%d", res->gid_index);
	else
		printf("(rdma_cm's choice)");
	printf(" (%s), from %s\n", why, res->local);
	printf("SEND ping-pong        %8u B x %-7u latency p50 %.2f us, p99 %.2f us\n",
	       res->w.lat_size, res->w.lat_count, res->send.p50_us, res->send.p99_us);
	printf("RDMA WRITE ping-pong  %8u B x %-7u latency p50 %.2f us, p99 %.2f us\n",
	       res->w.lat_size, res->w.lat_count, res->write.p50_us, res->write.p99_us);
	printf("RDMA WRITE stream     %8u B x %-7u bandwidth %.2f MiB/s (%.3f Gbit/s)\n",
	       res->w.bw_size, res->w.bw_count, res->bw_mib_s, res->bw_gbit_s);
	printf("(latency: half a round trip, as ib_send_lat/ib_write_lat report it)\n");
}

json_t *rn_ping_result_json(const struct rn_ping_result *res, const char *why)
{
	return json_pack("{s:s,s:s,s:s,s:i,s:o,s:s,s:{s:i,s:i,s:f,s:f},s:{s:i,s:i,s:f,s:f},"
			 "s:{s:i,s:i,s:f,s:f}}",
			 "peer", res->peer, "local", res->local, "device", res->dev, "port",
			 (int)res->port, "gid_index",
			 res->gid_index >= 0 ? json_integer(res->gid_index) : json_null(),
			 "chosen_by", why, "send", "size", (int)res->w.lat_size, "count",
			 (int)res->w.lat_count, "p50_us", res->send.p50_us, "p99_us",
			 res->send.p99_us, "write", "size", (int)res->w.lat_size, "count",
			 (int)res->w.lat_count, "p50_us", res->write.p50_us, "p99_us",
			 res->write.p99_us, "bandwidth", "size", (int)res->w.bw_size, "count",
			 (int)res->w.bw_count, "mib_s", res->bw_mib_s, "gbit_s", res->bw_gbit_s);
}

static void served(void *arg, const struct rn_ping_result *res, int r, const struct rn_error *err)
{
	const struct job *j = arg;

	if (r < 0)
		fprintf(stderr, "rdmans: ping server: %s\n", err->msg);
	else if (j->json)
		printf("{\"client\":\"%s\",\"device\":\"%s\",\"local\":\"%s\",\"served\":%u}\n",
		       res->peer, res->dev, res->local, res->clients);
	else
		printf("rdmans ping --server: served %s on %s (%s), %u so far\n", res->peer,
		       res->dev, res->local, res->clients);
	fflush(stdout);
}

static int run_job(void *arg, struct rn_error *err)
{
	struct job *j = arg;

	if (j->o->server)
		return rn_ping_server(j->o, j->res, err);
	return rn_ping_client(j->o, j->res, err);
}

int rn_ping_run(struct rn_ping_target *t, struct rn_ping_opts *o, struct rn_ping_result *res,
		struct rn_error *err)
{
	struct job j = { .o = o, .res = res, .json = t->json };
	int r;

	o->served = served;
	o->arg = &j;
	if (!o->dev && o->gid_index < 0 && !t->no_default) {
		r = rn_ping_nccl_default(t, err);
		if (r < 0)
			return rn_error_wrap(err, "the device NCCL would use");
		o->dev = t->dev;
		o->port = t->port;
		/* the server takes any address of that device; the client's source is the GID */
		if (!o->server)
			o->gid_index = t->gid_index;
	} else {
		snprintf(t->why, sizeof(t->why), "%s",
			 o->dev || o->gid_index >= 0 ? "given" : "rdma_cm's choice");
	}
	if (t->nsfd >= 0)
		return rn_netns_run(t->nsfd, run_job, &j, err);
	return run_job(&j, err);
}

static int parse_u32(const char *opt, const char *v, uint32_t min, uint32_t max, uint32_t *ret)
{
	char *end;
	unsigned long x;

	if (!v)
		return rn_cli_usage("%s needs a value", opt);
	errno = 0;
	x = strtoul(v, &end, 10);
	if (errno || *end || !*v || v[0] == '-' || x < min || x > max)
		return rn_cli_usage("%s takes a number from %u to %u, not '%s'", opt, min, max, v);
	*ret = (uint32_t)x;
	return 0;
}

/* The options that take a bounded number into a uint32_t of the options (times scale). */
static const struct number_option {
	const char *name;
	uint32_t min, max, scale;
	size_t offset; /* of the uint32_t in struct rn_ping_opts */
} number_options[] = {
	{ "--count", 1, RN_PING_MAX_COUNT, 1, offsetof(struct rn_ping_opts, lat_count) },
	{ "--bw-count", 1, RN_PING_MAX_COUNT, 1, offsetof(struct rn_ping_opts, bw_count) },
	{ "--size", 1, RN_PING_MAX_SIZE, 1, offsetof(struct rn_ping_opts, bw_size) },
	{ "--lat-size", 1, RN_PING_MAX_SIZE, 1, offsetof(struct rn_ping_opts, lat_size) },
	{ "--timeout", 1, 3600, 1000, offsetof(struct rn_ping_opts, timeout_ms) }, /* seconds */
	{ "--idle", 1, 86400, 1000, offsetof(struct rn_ping_opts, idle_ms) }, /* seconds */
};

static const struct number_option *number_option(const char *name)
{
	for (size_t i = 0; i < RN_ARRAY_SIZE(number_options); i++)
		if (strcmp(name, number_options[i].name) == 0)
			return &number_options[i];
	return NULL;
}

/* timeout_ms and idle_ms are unsigned: the same type as uint32_t here */
_Static_assert(sizeof(unsigned) == sizeof(uint32_t), "unsigned is 32 bits");

static uint32_t *num_target(const struct number_option *n, struct rn_ping_opts *o)
{
	return (uint32_t *)((char *)o + n->offset);
}

int rn_cmd_ping(struct rn_cli *cli)
{
	_cleanup_(nccl_opts_free) struct nccl_opts nopts;
	_cleanup_close_ int nsfd = -1;
	struct rn_ping_opts o = { .gid_index = -1 };
	struct rn_ping_target t = { .nsfd = -1, .json = cli->json };
	struct rn_ping_result res;
	struct rn_error err = { 0 };
	const char *a, *netns = NULL, *pid_arg = NULL;
	uint32_t v;
	const struct number_option *num;
	int r;

	nccl_opts_init(&nopts);
	while ((a = nccl_opts_next(cli, &nopts, &r))) {
		const char *val = NULL;

		if (strcmp(a, "--server") == 0) {
			o.server = true;
			continue;
		}
		if (strcmp(a, "--once") == 0) {
			o.once = true;
			continue;
		}
		if (strcmp(a, "-j") == 0 || strcmp(a, "--json") == 0) {
			cli->json = t.json = true;
			continue;
		}
		if (a[0] != '-') {
			if (o.peer)
				return ping_usage();
			o.peer = a;
			continue;
		}
		val = rn_cli_next(cli);
		if (!val)
			return rn_cli_usage("%s needs a value", a);
		if (strcmp(a, "--netns") == 0 || strcmp(a, "-n") == 0) {
			netns = val;
		} else if (strcmp(a, "--pid") == 0) {
			pid_arg = val;
		} else if (strcmp(a, "--device") == 0 || strcmp(a, "-d") == 0) {
			o.dev = val;
		} else if (strcmp(a, "--gid-index") == 0) {
			if ((r = parse_u32(a, val, 0, 65535, &v)))
				return r;
			o.gid_index = (int)v;
		} else if (strcmp(a, "--port") == 0) {
			if ((r = parse_u32(a, val, 1, 65535, &v)))
				return r;
			o.tcp_port = (uint16_t)v;
		} else if ((num = number_option(a))) {
			if ((r = parse_u32(a, val, num->min, num->max, &v)))
				return r;
			*num_target(num, &o) = v * num->scale;
		} else {
			return ping_usage();
		}
	}
	if (r)
		return r;
	if (o.server == (o.peer != NULL))
		return ping_usage();
	if (netns && pid_arg)
		return rn_cli_usage("give --netns or --pid, not both");
	if (pid_arg && rn_parse_pid(pid_arg, &t.pid) < 0)
		return rn_cli_usage("--pid needs a process ID, not '%s'", pid_arg);
	/* the client's GID: the RoCE v2 entry of the peer's family, unless --family says */
	if (o.peer && strchr(o.peer, ':') && !nopts.option.family[0] &&
	    rn_nccl_layer_set_family(&nopts.option, "ipv6", &err) < 0)
		return rn_cli_fail(&err);
	r = nccl_opts_load(&nopts, &err);
	if (r < 0)
		return rn_cli_fail(&err);
	t.layers = nopts.layers;
	t.n_layers = nopts.n_layers;
	t.netns = netns;
	if (netns)
		nsfd = rn_netns_open_target(netns, NULL, 0, &err);
	else if (t.pid)
		nsfd = rn_netns_open_pid(t.pid, &err);
	if ((netns || t.pid) && nsfd < 0)
		return rn_cli_fail(&err);
	t.nsfd = nsfd;

	r = rn_ping_run(&t, &o, &res, &err);
	if (r < 0)
		return ping_fail(&err);
	if (o.server)
		return 0;
	if (cli->json)
		return rn_cli_print_json(cli, rn_ping_result_json(&res, t.why));
	print_client(&res, t.why);
	return 0;
}
