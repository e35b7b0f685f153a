// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmans.h"
#include "rdmans/rdma_nl.h"
#include "rdmans/system.h"
#include "rdmans/util.h"

static int system_show(struct rn_cli *cli)
{
	_cleanup_rdma_ struct rn_rdma *rdma = NULL;
	struct rn_boot_config boot;
	struct rn_error err = { 0 }, now_err = { 0 };
	bool exclusive = false;
	int r;

	if (rn_cli_peek(cli))
		return rn_cli_usage("'system show' takes no arguments");
	r = rn_system_boot_config(rn_config_root(), &boot, &err);
	if (r < 0)
		return rn_cli_fail(&err);
	r = rn_rdma_open(&rdma, &now_err);
	if (r == 0)
		r = rn_rdma_netns_mode_get(rdma, &exclusive, &now_err);

	if (cli->json) {
		json_t *doc = json_pack(
			"{s:o,s:{s:s,s:o}}", "netns_mode",
			r < 0 ? json_null() : json_string(exclusive ? "exclusive" : "shared"),
			"boot", "netns_mode", rn_boot_mode_name(boot.mode), "source",
			boot.source[0] ? json_string(boot.source) : json_null());
		rn_cli_print_json(cli, doc);
	} else {
		printf("netns mode now:      %s\n", r < 0	? "unknown"
						    : exclusive ? "exclusive"
								: "shared");
		printf("netns mode at boot:  %s%s%s%s\n", rn_boot_mode_name(boot.mode),
		       boot.source[0] ? " (" : "", boot.source, boot.source[0] ? ")" : "");
	}
	if (r < 0)
		return rn_cli_fail(&now_err);
	return 0;
}

static int system_set(struct rn_cli *cli)
{
	_cleanup_rdma_ struct rn_rdma *rdma = NULL;
	struct rn_error err = { 0 };
	char written[4096] = "";
	const char *what, *mode;
	bool exclusive, persist = false, force = false;
	int r;

	what = rn_cli_next(cli);
	mode = rn_cli_next(cli);
	if (!what || strcmp(what, "netns") != 0 || !mode)
		return rn_cli_usage(
			"usage: rdmans system set netns exclusive|shared [--persist] [--force]");
	if (strcmp(mode, "exclusive") == 0)
		exclusive = true;
	else if (strcmp(mode, "shared") == 0)
		exclusive = false;
	else
		return rn_cli_usage("netns mode must be 'exclusive' or 'shared', not '%s'", mode);
	for (const char *a; (a = rn_cli_peek(cli));) {
		if (rn_cli_flag(cli, "--persist"))
			persist = true;
		else if (rn_cli_flag(cli, "--force"))
			force = true;
		else
			return rn_cli_usage("unexpected argument '%s'", a);
	}
	if (exclusive && !force) {
		char who[512];

		r = rn_system_shared_consumers(NULL, who, sizeof(who), &err);
		if (r < 0)
			return rn_cli_fail(&err);
		if (who[0]) {
			rn_error_set(
				&err, EBUSY,
				"not switching to exclusive mode: %s runs on this node and needs "
				"shared mode (k8s-rdma-shared-dev-plugin gives every pod the same "
				"RDMA devices, which exclusive mode forbids: its pods would lose "
				"them). Move its workloads and remove it first, or pass --force",
				who);
			return rn_cli_fail(&err);
		}
	}

	if (persist) {
		r = rn_system_persist_netns_mode(rn_config_root(), exclusive, written,
						 sizeof(written), &err);
		if (r < 0)
			return rn_cli_fail(&err);
	}
	r = rn_rdma_open(&rdma, &err);
	if (r == 0)
		r = rn_rdma_netns_mode_set(rdma, exclusive, &err);

	if (r < 0 && persist && (err.code == EBUSY || err.code == EPROTONOSUPPORT)) {
		/* The boot default is written: that is what --persist promises. */
		if (cli->json)
			return rn_cli_print_json(cli, json_pack("{s:s,s:b,s:s,s:s}", "netns_mode",
								mode, "applied_now", 0, "persisted",
								written, "reason", err.msg));
		printf("wrote %s: ib_core starts in %s mode from now on.\n", written, mode);
		printf("not applied now: %s\n", err.msg);
		printf("next step: reboot the node, or reload ib_core while no RDMA device is in "
		       "use; if ib_core loads from the initramfs, run 'update-initramfs -u' "
		       "first.\n");
		return 0;
	}
	if (r < 0)
		return rn_cli_fail(&err);
	if (cli->json)
		return rn_cli_print_json(
			cli, json_pack("{s:s,s:b,s:o}", "netns_mode", mode, "applied_now", 1,
				       "persisted", persist ? json_string(written) : json_null()));
	printf("netns mode is now %s%s%s\n", mode, persist ? "; persisted in " : "",
	       persist ? written : "");
	return 0;
}

/*
 * What the node is ready for, as Node Feature Discovery's local source reads
 * a file in features.d: one KEY=VALUE a line, in a sub-namespace of
 * feature.node.kubernetes.io (allowed by every NFD without flags).
 */
#define NFD_NS "rdmans.feature.node.kubernetes.io/"

static int system_nfd(struct rn_cli *cli)
{
	_cleanup_rdma_ struct rn_rdma *rdma = NULL;
	_cleanup_rdma_devs_ struct rn_rdma_devs devs = { 0 };
	struct rn_boot_config boot;
	struct rn_error err = { 0 };
	bool exclusive = false, now;

	if (rn_cli_peek(cli))
		return rn_cli_usage("'system nfd' takes no arguments");
	if (rn_system_boot_config(rn_config_root(), &boot, &err) < 0)
		return rn_cli_fail(&err);
	/* no RDMA netlink: no mode now, no device; the file still says so */
	now = rn_rdma_open(&rdma, &err) == 0 &&
	      rn_rdma_netns_mode_get(rdma, &exclusive, &err) == 0 &&
	      rn_rdma_dev_dump(rdma, &devs, &err) == 0;
	/* node-uninstall.sh knows the file by this first line */
	printf("# written by rdmans system nfd (the rdmans DaemonSet's installer)\n");
	if (now)
		printf(NFD_NS "netns-mode=%s\n", exclusive ? "exclusive" : "shared");
	printf(NFD_NS "netns-mode-next-boot=%s\n",
	       boot.mode == RN_BOOT_EXCLUSIVE ? "exclusive" : "shared");
	printf(NFD_NS "rdma-devices=%zu\n", now ? devs.n : 0);
	return 0;
}

int rn_cmd_system(struct rn_cli *cli)
{
	static const struct rn_cmd cmds[] = {
		{ "show", system_show },
		{ "set", system_set },
		{ "nfd", system_nfd },
		{ NULL, NULL },
	};

	return rn_cli_dispatch(cli, cmds, "system");
}
