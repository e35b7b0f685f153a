// SPDX-License-Identifier: Apache-2.0
/*
 * rdmans doctor [--netns TARGET | --pid PID] [--peer ADDR] [-j]: the checklist
 * (and rdmans ping to ADDR), and the worst result as exit code.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl_opts.h"
#include "rdmans.h"
#include "rdmans/cleanup.h"
#include "rdmans/doctor.h"
#include "rdmans/netns.h"
#include "rdmans/util.h"

/* Exit codes of a doctor run that completed; rdmans(8) lists them. */
#define RN_EXIT_DOCTOR_WARN 20
#define RN_EXIT_DOCTOR_FAIL 21

static void print_text(const struct rn_doctor_facts *f, const struct rn_doctor_report *r)
{
	size_t count[4] = { 0 };

	printf("target: %s", f->target);
	if (f->have_process)
		printf(", process %d%s%s%s", (int)f->proc.pid, f->proc.comm[0] ? " (" : "",
		       f->proc.comm, f->proc.comm[0] ? ")" : "");
	putchar('\n');
	for (size_t i = 0; i < r->n; i++) {
		const struct rn_doctor_result *c = &r->v[i];

		count[c->status]++;
		printf("%-4s  %-18s %s%s%s\n", rn_doctor_status_name(c->status), c->id, c->subject,
		       c->subject[0] ? ": " : "", c->message);
		if (c->fix[0] && c->status != RN_DOCTOR_PASS)
			printf("      %-18s fix: %s\n", "", c->fix);
	}
	printf("%zu PASS, %zu WARN, %zu FAIL, %zu SKIP\n", count[RN_DOCTOR_PASS],
	       count[RN_DOCTOR_WARN], count[RN_DOCTOR_FAIL], count[RN_DOCTOR_SKIP]);
}

static json_t *report_json(const struct rn_doctor_facts *f, const struct rn_doctor_report *r)
{
	json_t *checks = json_array();

	for (size_t i = 0; i < r->n; i++) {
		const struct rn_doctor_result *c = &r->v[i];

		json_array_append_new(
			checks,
			json_pack("{s:s,s:s,s:o,s:s,s:s,s:o}", "id", c->id, "title", c->title,
				  "subject", c->subject[0] ? json_string(c->subject) : json_null(),
				  "status", rn_doctor_status_name(c->status), "message", c->message,
				  "fix", c->fix[0] ? json_string(c->fix) : json_null()));
	}
	return json_pack("{s:s,s:o,s:s,s:o}", "target", f->target, "pid",
			 f->have_process ? json_integer(f->proc.pid) : json_null(), "worst",
			 rn_doctor_status_name(r->worst), "checks", checks);
}

/*
 * --peer ADDR: rdmans ping from the target to ADDR (a short run) as one
 * more check. Here and not in doctor.c: the core does not link librdmacm.
 */
static int check_peer(const struct rn_doctor_target *dt, const char *peer,
		      struct rn_doctor_report *report, struct rn_error *err)
{
	_cleanup_close_ int nsfd = -1;
	struct rn_ping_target t = { .nsfd = -1,
				    .netns = dt->netns,
				    .pid = dt->pid,
				    .layers = dt->nccl_layers,
				    .n_layers = dt->n_nccl_layers };
	struct rn_ping_opts o = {
		.peer = peer, .gid_index = -1, .lat_count = 100, .bw_count = 100
	};
	struct rn_ping_result res;
	struct rn_doctor_result c = { .id = "rdma-ping",
				      .title = "RDMA traffic to --peer (rdmans ping)" };
	struct rn_error perr = { 0 };
	int r;

	snprintf(c.subject, sizeof(c.subject), "%.80s", peer);
	if (dt->netns)
		nsfd = rn_netns_open_target(dt->netns, NULL, 0, err);
	else if (dt->pid)
		nsfd = rn_netns_open_pid(dt->pid, err);
	if ((dt->netns || dt->pid) && nsfd < 0)
		return -err->code;
	t.nsfd = nsfd;
	r = rn_ping_run(&t, &o, &res, &perr);
	if (r < 0) {
		c.status = RN_DOCTOR_FAIL;
		snprintf(c.message, sizeof(c.message), "%s", perr.msg);
		snprintf(c.fix, sizeof(c.fix), "%s",
			 r == -ECONNREFUSED ? "run 'rdmans ping --server' at the peer"
			 : r == -ENOMEM	    ? "raise the memlock limit of the pod"
					    : "see the message; 'rdmans ping' shows the same");
	} else {
		c.status = RN_DOCTOR_PASS;
		snprintf(c.message, sizeof(c.message),
			 "%s port %u, GID index %d (%s): SEND latency p50 %.1f us, RDMA WRITE "
			 "%.1f MiB/s",
			 res.dev, res.port, res.gid_index, t.why, res.send.p50_us, res.bw_mib_s);
	}
	return rn_doctor_report_add(report, &c, err);
}

int rn_cmd_doctor(struct rn_cli *cli)
{
	_cleanup_doctor_facts_ struct rn_doctor_facts facts = { 0 };
	_cleanup_doctor_report_ struct rn_doctor_report report = { 0 };
	_cleanup_(nccl_opts_free) struct nccl_opts opts;
	struct rn_doctor_target t = { .config_root = rn_config_root() };
	struct rn_error err = { 0 };
	const char *pid_arg = NULL, *peer = NULL, *a;
	int r;

	nccl_opts_init(&opts);
	/* --profile, --set, --unset, --config, --cni-config: as `rdmans env` resolves */
	while ((a = nccl_opts_next(cli, &opts, &r))) {
		if (strcmp(a, "--netns") == 0 || strcmp(a, "-n") == 0) {
			t.netns = rn_cli_next(cli);
			if (!t.netns)
				return rn_cli_usage(
					"--netns needs a target: host, PID, name or path");
		} else if (strcmp(a, "--pid") == 0) {
			pid_arg = rn_cli_next(cli);
			if (!pid_arg)
				return rn_cli_usage("--pid needs a process ID");
		} else if (strcmp(a, "--peer") == 0) {
			peer = rn_cli_next(cli);
			if (!peer)
				return rn_cli_usage("--peer needs the address of an 'rdmans ping "
						    "--server'");
		} else if (strcmp(a, "-j") == 0 || strcmp(a, "--json") == 0) {
			cli->json = true;
		} else {
			return rn_cli_usage(
				"unexpected argument '%s' to 'doctor' (usage: rdmans "
				"doctor [--netns TARGET | --pid PID] [--peer ADDR] [-j] [the NCCL "
				"options of 'rdmans env': --profile, --set, --unset, "
				"--config, --cni-config])",
				a);
		}
	}
	if (r)
		return r;
	if (t.netns && pid_arg)
		return rn_cli_usage("give --netns or --pid, not both (--pid checks the process "
				    "and its netns)");
	if (pid_arg && rn_parse_pid(pid_arg, &t.pid) < 0)
		return rn_cli_usage("--pid needs a process ID (a positive number), not '%s'",
				    pid_arg);

	r = nccl_opts_load(&opts, &err);
	if (r < 0)
		return rn_cli_fail(&err);
	t.nccl_layers = opts.layers;
	t.n_nccl_layers = opts.n_layers;
	r = rn_doctor_run(&t, &facts, &report, &err);
	if (r < 0)
		return rn_cli_fail(&err);
	if (peer && check_peer(&t, peer, &report, &err) < 0)
		return rn_cli_fail(&err);
	if (cli->json)
		rn_cli_print_json(cli, report_json(&facts, &report));
	else
		print_text(&facts, &report);
	switch (report.worst) {
	case RN_DOCTOR_FAIL:
		return RN_EXIT_DOCTOR_FAIL;
	case RN_DOCTOR_WARN:
		return RN_EXIT_DOCTOR_WARN;
	default:
		return RN_EXIT_OK;
	}
}
