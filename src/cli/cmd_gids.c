// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "rdmans.h"
#include "rdmans/cleanup.h"
#include "rdmans/netns.h"
#include "rdmans/sysfs.h"
#include "rdmans/sysfs_gid.h"
#include "rdmans/util.h"

struct gids_job {
	const char *dev;
	struct rn_gid_table *table;
};

static int read_gids(void *arg, struct rn_error *err)
{
	struct gids_job *job = arg;

	return rn_sysfs_gids(job->dev, job->table, err);
}

static void print_table(const struct rn_gid_table *t)
{
	printf("%-12s %-4s %-5s %-39s %-15s %-3s %s\n", "DEV", "PORT", "INDEX", "GID", "IPv4",
	       "VER", "NETDEV");
	for (size_t i = 0; i < t->n; i++) {
		const struct rn_gid_entry *e = &t->entries[i];

		printf("%-12s %-4u %-5u %-39s %-15s %-3s %s\n", e->dev, e->port, e->index, e->gid,
		       e->ipv4, rn_gid_type_version(e->type), e->netdev);
	}
}

static json_t *table_json(const struct rn_gid_table *t)
{
	json_t *doc = json_array();

	for (size_t i = 0; i < t->n; i++) {
		const struct rn_gid_entry *e = &t->entries[i];

		json_array_append_new(
			doc,
			json_pack("{s:s,s:i,s:i,s:s,s:o,s:s,s:s,s:o}", "dev", e->dev, "port",
				  (int)e->port, "index", (int)e->index, "gid", e->gid, "ipv4",
				  e->ipv4[0] ? json_string(e->ipv4) : json_null(), "type",
				  rn_gid_type_name(e->type), "ver", rn_gid_type_version(e->type),
				  "netdev", e->netdev[0] ? json_string(e->netdev) : json_null()));
	}
	return doc;
}

int rn_cmd_gids(struct rn_cli *cli)
{
	struct rn_gid_table table = { 0 };
	struct gids_job job = { .table = &table };
	struct rn_error err = { 0 };
	const char *target = NULL;
	int r;

	/* "rdmans gids show DEV" reads like the other objects */
	(void)rn_cli_flag(cli, "show");
	while (rn_cli_peek(cli)) {
		const char *a = rn_cli_next(cli);

		if (strcmp(a, "--netns") == 0 || strcmp(a, "-n") == 0) {
			target = rn_cli_next(cli);
			if (!target)
				return rn_cli_usage(
					"--netns needs a target: host, PID, name or path");
		} else if (a[0] == '-' || job.dev) {
			return rn_cli_usage("unexpected argument '%s' to 'gids'", a);
		} else {
			job.dev = a;
		}
	}
	if (job.dev && rn_name_check("RDMA device", job.dev, RN_RDMA_NAME_MAX - 1, &err) < 0)
		return rn_cli_fail(&err);
	if (target) {
		_cleanup_close_ int fd = rn_netns_open_target(target, NULL, 0, &err);

		if (fd < 0)
			return rn_cli_fail(&err);
		r = rn_netns_run_sysfs(fd, read_gids, &job, &err);
	} else {
		/* "here" is this process's netns, whoever mounted /sys (nsenter -n) */
		r = rn_netns_run_here_sysfs(read_gids, &job, &err);
	}
	if (r < 0)
		return rn_cli_fail(&err);
	if (cli->json)
		rn_cli_print_json(cli, table_json(&table));
	else
		print_table(&table);
	rn_gid_table_free(&table);
	return 0;
}
