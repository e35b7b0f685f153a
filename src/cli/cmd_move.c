// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "rdmans.h"
#include "rdmans/container.h"
#include "rdmans/discover.h"
#include "rdmans/move.h"
#include "rdmans/netns.h"
#include "rdmans/util.h"

static int move_usage(void)
{
	return rn_cli_usage("usage: rdmans move DEV TARGET|--container ID [--with-netdev "
			    "[--netdev-name NAME]]  (TARGET: host, PID, netns name or path)");
}

int rn_cmd_move(struct rn_cli *cli)
{
	struct rn_move_request req = { 0 };
	struct rn_move_result res;
	struct rn_error err = { 0 };
	_cleanup_close_ int target_fd = -1;
	const char *target = NULL, *container = NULL;
	char desc[4200];
	int r;

	req.dev = rn_cli_next(cli);
	if (!req.dev || req.dev[0] == '-')
		return move_usage();
	while (rn_cli_peek(cli)) {
		const char *a = rn_cli_next(cli);

		if (strcmp(a, "--with-netdev") == 0) {
			req.with_netdev = true;
		} else if (strcmp(a, "--netdev-name") == 0) {
			req.netdev_name = rn_cli_next(cli);
			if (!req.netdev_name)
				return move_usage();
		} else if (strcmp(a, "--container") == 0) {
			container = rn_cli_next(cli);
			if (!container)
				return move_usage();
		} else if (a[0] == '-' || target) {
			return rn_cli_usage("unexpected argument '%s' to 'move'", a);
		} else {
			target = a;
		}
	}
	if (!target == !container)
		return rn_cli_usage("give either a TARGET or --container ID, not %s",
				    target ? "both" : "neither");
	if (req.netdev_name && !req.with_netdev)
		return rn_cli_usage("--netdev-name needs --with-netdev");
	if (rn_name_check("RDMA device", req.dev, RN_RDMA_NAME_MAX - 1, &err) < 0)
		return rn_cli_fail(&err);

	if (container) {
		pid_t pid;

		r = rn_container_pid(container, &pid, &err);
		if (r < 0)
			return rn_cli_fail(&err);
		snprintf(desc, sizeof(desc), "container %s (PID %d)", container, (int)pid);
		target_fd = rn_netns_open_pid(pid, &err);
	} else {
		target_fd = rn_netns_open_target(target, desc, sizeof(desc), &err);
	}
	if (target_fd < 0)
		return rn_cli_fail(&err);
	req.target_nsfd = target_fd;
	req.target_desc = desc;

	r = rn_move(&req, &res, &err);
	if (r < 0)
		return rn_cli_fail(&err);
	if (cli->json)
		return rn_cli_print_json(
			cli,
			json_pack("{s:s,s:s,s:s,s:o,s:o}", "dev", res.dev, "from", res.from_desc,
				  "to", desc, "netdev",
				  res.netdev[0] ? json_string(res.netdev) : json_null(),
				  "netdev_now",
				  res.netdev_now[0] ? json_string(res.netdev_now) : json_null()));
	printf("moved %s from %s to %s", res.dev, res.from_desc, desc);
	if (res.netdev[0])
		printf(" with netdev %s%s%s", res.netdev,
		       strcmp(res.netdev, res.netdev_now) ? " (now " : "",
		       strcmp(res.netdev, res.netdev_now) ? res.netdev_now : "");
	if (res.netdev[0] && strcmp(res.netdev, res.netdev_now))
		putchar(')');
	putchar('\n');
	return 0;
}
