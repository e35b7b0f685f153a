// SPDX-License-Identifier: Apache-2.0
/* Soft RDMA devices (rxe, siw), as `rdma link add/delete` makes them. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "rdmans.h"
#include "rdmans/rdma_nl.h"

static int link_add(struct rn_cli *cli)
{
	_cleanup_rdma_ struct rn_rdma *rdma = NULL;
	struct rn_error err = { 0 };
	const char *name = rn_cli_next(cli);
	const char *kw1 = rn_cli_next(cli), *type = rn_cli_next(cli);
	const char *kw2 = rn_cli_next(cli), *netdev = rn_cli_next(cli);
	int r;

	if (!name || !kw1 || !type || !kw2 || !netdev || strcmp(kw1, "type") ||
	    strcmp(kw2, "netdev") || rn_cli_peek(cli))
		return rn_cli_usage("usage: rdmans link add NAME type rxe|siw netdev NETDEV");
	r = rn_rdma_open(&rdma, &err);
	if (r == 0)
		r = rn_rdma_link_add(rdma, name, type, netdev, &err);
	if (r < 0)
		return rn_cli_fail(&err);
	if (!cli->json)
		printf("added %s device %s on %s\n", type, name, netdev);
	return 0;
}

static int link_del(struct rn_cli *cli)
{
	_cleanup_rdma_ struct rn_rdma *rdma = NULL;
	struct rn_rdma_dev dev = { 0 };
	struct rn_error err = { 0 };
	const char *name = rn_cli_next(cli);
	int r;

	if (!name || rn_cli_peek(cli))
		return rn_cli_usage("usage: rdmans link del NAME");
	r = rn_rdma_open(&rdma, &err);
	if (r == 0)
		r = rn_rdma_dev_find(rdma, name, &dev, &err);
	if (r == 0)
		r = rn_rdma_link_del(rdma, dev.index, dev.name, &err);
	rn_rdma_dev_free(&dev);
	if (r < 0)
		return rn_cli_fail(&err);
	if (!cli->json)
		printf("deleted %s\n", name);
	return 0;
}

static int link_help(struct rn_cli *cli)
{
	return rn_cli_usage("usage: rdmans link add NAME type rxe|siw netdev NETDEV | "
			    "rdmans link del NAME");
}

int rn_cmd_link(struct rn_cli *cli)
{
	static const struct rn_cmd cmds[] = {
		{ "help", link_help },	{ "add", link_add }, { "del", link_del },
		{ "delete", link_del }, { NULL, NULL },
	};

	return rn_cli_dispatch(cli, cmds, "link");
}
