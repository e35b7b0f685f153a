// SPDX-License-Identifier: Apache-2.0
/* rdmans: the command line front end. Thin: parse, call the library, render. */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "rdmans.h"

const char *rn_cli_next(struct rn_cli *cli)
{
	if (cli->argc <= 0)
		return NULL;
	cli->argc--;
	return *cli->argv++;
}

const char *rn_cli_peek(const struct rn_cli *cli)
{
	return cli->argc > 0 ? cli->argv[0] : NULL;
}

bool rn_cli_flag(struct rn_cli *cli, const char *flag)
{
	const char *next = rn_cli_peek(cli);

	if (!next || strcmp(next, flag) != 0)
		return false;
	rn_cli_next(cli);
	return true;
}

int rn_cli_dispatch(struct rn_cli *cli, const struct rn_cmd *cmds, const char *object)
{
	const char *verb = rn_cli_peek(cli);

	if (!verb || verb[0] == '-')
		return cmds[0].fn(cli);
	for (const struct rn_cmd *c = cmds; c->name; c++) {
		if (strcmp(c->name, verb) == 0) {
			rn_cli_next(cli);
			return c->fn(cli);
		}
	}
	return rn_cli_usage("unknown command '%s %s' (try 'rdmans help')", object, verb);
}

static int exit_code_for(int code)
{
	switch (code) {
	case ENODEV:
		return RN_EXIT_NO_DEVICE;
	case ESRCH:
		return RN_EXIT_NO_PROCESS;
	case ENOENT:
		return RN_EXIT_NO_NETNS;
	case EMEDIUMTYPE:
		return RN_EXIT_NOT_NETNS;
	case EINVAL:
	case ENAMETOOLONG:
	case ENOTUNIQ:
		return RN_EXIT_BAD_NAME;
	case EALREADY:
		return RN_EXIT_ALREADY;
	case EPROTONOSUPPORT:
		return RN_EXIT_NO_RDMA;
	case EPERM:
	case EACCES:
		return RN_EXIT_PERMISSION;
	case EBUSY:
		return RN_EXIT_BUSY;
	case EOPNOTSUPP:
		return RN_EXIT_UNSUPPORTED;
	case EEXIST:
		return RN_EXIT_EXISTS;
	default:
		return RN_EXIT_FAILURE;
	}
}

int rn_cli_fail(const struct rn_error *err)
{
	fprintf(stderr, "rdmans: %s\n", err->msg[0] ? err->msg : strerror(err->code));
	return exit_code_for(err->code);
}

int rn_cli_usage(const char *fmt, ...)
{
	va_list ap;

	fputs("rdmans: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return RN_EXIT_USAGE;
}

int rn_cli_print_json(const struct rn_cli *cli, json_t *doc)
{
	_cleanup_json_ json_t *owned = doc;
	size_t flags = JSON_PRESERVE_ORDER | (cli->pretty ? JSON_INDENT(2) : JSON_COMPACT);

	json_dumpf(owned, stdout, flags);
	fputc('\n', stdout);
	return 0;
}

/* Each object's usage lines: `rdmans OBJECT --help` prints its own, `rdmans help` all. */
static const struct {
	const char *object;
	const char *text;
} usages[] = {
	{ "system",
	  "  system [show]                       netns mode now and at next boot\n"
	  "  system set netns exclusive|shared [--persist] [--force]\n"
	  "  system nfd                           Node Feature Discovery feature lines\n" },
	{ "dev",
	  "  dev [show [DEV]] [--all-netns]       RDMA devices, ports, bound netdevs\n"
	  "  dev set DEV name NEWNAME             rename an RDMA device\n"
	  "  dev gpus [--visible-devices L] [--device /dev/nvidiaN] [--cdi nvidia.com/gpu=X]\n"
	  "        NVIDIA GPUs (a container's share) and the nearest RDMA device of each\n" },
	{ "gids", "  gids [DEV] [--netns TARGET]          GID table (DEV PORT INDEX GID IPv4 VER "
		  "NETDEV)\n" },
	{ "move", "  move DEV TARGET [--with-netdev [--netdev-name NAME]]\n"
		  "  move DEV --container ID [--with-netdev [--netdev-name NAME]]\n"
		  "        TARGET: host | PID | netns name | netns path\n" },
	{ "link", "  link add NAME type rxe|siw netdev NETDEV   create a soft RDMA device\n"
		  "  link del NAME                        delete a soft RDMA device\n" },
	{ "doctor",
	  "  doctor [--netns TARGET | --pid PID] check RDMA, netns mode, ports, GIDs, "
	  "limits, NCCL\n"
	  "        [--peer ADDR]                  ... and RDMA traffic to an 'rdmans ping "
	  "--server'\n" },
	{ "exporter",
	  "  exporter [--listen ADDR:PORT] [--once]  Prometheus metrics of every netns\n" },
	{ "env", "  env [--netns TARGET] [--format env|sh|nccl-conf|json] [--explain]  NCCL "
		 "settings\n"
		 "  env ... --device /dev/nvidiaN        NCCL_IB_HCA of the devices nearest a "
		 "container's GPUs\n"
		 "  env profiles                         the platforms' NCCL presets\n" },
	{ "cdi",
	  "  cdi generate [--addr-range CIDR] [--output FILE]  CDI spec (rdmans.io/rdma)\n" },
	{ "ipam", "  ipam [ls|show ADDRESS|release ...|gc [--dry-run]|reconcile [--grace S] "
		  "[--dry-run]]\n"
		  "        addresses held by rdma-netns-ipam (rdma-netns-ipam(8))\n"
		  "  ipam import IPPOOLS.json --config CONF [--ifname IF] [--node N] [--dry-run]\n"
		  "        whereabouts' IPPool allocations into the store CONF names\n" },
	{ "ping", "  ping --server [--netns T | --pid P] [--device D] [--once]   RDMA ping server\n"
		  "  ping ADDRESS [--netns T | --pid P] [--device D] [--gid-index N] [--count N] "
		  "[--size B]\n"
		  "        RC connection (librdmacm), SEND/WRITE latency, WRITE bandwidth\n" },
};

static void usage_of(FILE *out, const char *object)
{
	fputs("Usage: rdmans [-j] [-p] OBJECT [COMMAND] [ARGS]\n\n", out);
	for (size_t i = 0; i < sizeof(usages) / sizeof(usages[0]); i++)
		if (!object || strcmp(object, usages[i].object) == 0)
			fputs(usages[i].text, out);
	fputs("\nOptions: -j/--json JSON output, -p/--pretty indented JSON, -V/--version, "
	      "-h/--help\n"
	      "See rdmans(8).\n",
	      out);
}

static void usage(FILE *out)
{
	usage_of(out, NULL);
}

/* -h or --help among an object's arguments (before a "--"): that object's usage, exit 0. */
static bool asks_help(const struct rn_cli *cli)
{
	for (int i = 0; i < cli->argc; i++) {
		if (strcmp(cli->argv[i], "--") == 0)
			return false;
		if (strcmp(cli->argv[i], "-h") == 0 || strcmp(cli->argv[i], "--help") == 0)
			return true;
	}
	return false;
}

static int cmd_help(struct rn_cli *cli)
{
	usage(stdout);
	return 0;
}

static int cmd_version(struct rn_cli *cli)
{
	printf("rdmans %s\n", RDMANS_VERSION);
	return 0;
}

static const struct rn_cmd objects[] = {
	{ "help", cmd_help },	     { "system", rn_cmd_system },
	{ "dev", rn_cmd_dev },	     { "gids", rn_cmd_gids },
	{ "move", rn_cmd_move },     { "link", rn_cmd_link },
	{ "doctor", rn_cmd_doctor }, { "exporter", rn_cmd_exporter },
	{ "env", rn_cmd_env },	     { "cdi", rn_cmd_cdi },
	{ "version", cmd_version },  { "ipam", rn_cmd_ipam },
	{ "ping", rn_cmd_ping },     { NULL, NULL },
};

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "pretty", no_argument, NULL, 'p' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct rn_cli cli = { 0 };
	const char *object;
	int c;

	/* '+': stop at the first non-option, so subcommands own the rest */
	while ((c = getopt_long(argc, argv, "+jpVh", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			cli.json = true;
			break;
		case 'p':
			cli.json = cli.pretty = true;
			break;
		case 'V':
			return cmd_version(&cli);
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return RN_EXIT_USAGE;
		}
	}
	cli.argc = argc - optind;
	cli.argv = argv + optind;
	object = rn_cli_next(&cli);
	if (!object) {
		usage(stderr);
		return RN_EXIT_USAGE;
	}
	for (const struct rn_cmd *o = objects; o->name; o++) {
		if (strcmp(o->name, object) != 0)
			continue;
		if (o->fn != cmd_help && o->fn != cmd_version && asks_help(&cli)) {
			usage_of(stdout, object);
			return 0;
		}
		return o->fn(&cli);
	}
	return rn_cli_usage("unknown object '%s' (try 'rdmans help')", object);
}
