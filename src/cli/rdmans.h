/* SPDX-License-Identifier: Apache-2.0 */
#ifndef RDMANS_CLI_H
#define RDMANS_CLI_H

#include <jansson.h>
#include <stdbool.h>

#include "rdmans/error.h"
#include "rdmans/gpu.h"
#include "rdmans/json_cleanup.h"

/* Exit codes: one per kind of failure, documented in rdmans(8). */
enum rn_exit {
	RN_EXIT_OK = 0,
	RN_EXIT_FAILURE = 1,
	RN_EXIT_USAGE = 2,
	RN_EXIT_NO_DEVICE = 3,
	RN_EXIT_NO_PROCESS = 4,
	RN_EXIT_NO_NETNS = 5,
	RN_EXIT_NOT_NETNS = 6,
	RN_EXIT_BAD_NAME = 7,
	RN_EXIT_ALREADY = 8,
	RN_EXIT_NO_RDMA = 9,
	RN_EXIT_PERMISSION = 10,
	RN_EXIT_BUSY = 11,
	RN_EXIT_UNSUPPORTED = 12,
	RN_EXIT_EXISTS = 13,
	RN_EXIT_NO_PEER = 14, /* ping: refused, unreachable, silent */
	RN_EXIT_MEMLOCK = 15, /* ping: locked memory too low to register the buffers */
	RN_EXIT_BAD_GID = 16, /* ping: the GID index names no usable address */
};

struct rn_cli {
	bool json;
	bool pretty;
	int argc;
	char **argv;
};

struct rn_cmd {
	const char *name;
	int (*fn)(struct rn_cli *cli);
};

/* Runs the entry of `cmds` named by the next argument (the first entry when there is none). */
int rn_cli_dispatch(struct rn_cli *cli, const struct rn_cmd *cmds, const char *object);

/* Next argument, shifting it off; NULL when none is left. */
const char *rn_cli_next(struct rn_cli *cli);
const char *rn_cli_peek(const struct rn_cli *cli);
/* True (and shifts) when the next argument is `flag`. */
bool rn_cli_flag(struct rn_cli *cli, const char *flag);

/* Prints "rdmans: MSG" to stderr and returns the exit code for err. */
int rn_cli_fail(const struct rn_error *err);
int rn_cli_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Prints a JSON document (and takes it); returns 0. */
int rn_cli_print_json(const struct rn_cli *cli, json_t *doc);

/* A container's GPUs as its runtime names them: --visible-devices, --device, --cdi. */
#define RN_CLI_GPU_ARGS_MAX 64
struct rn_cli_gpus {
	const char *nodes[RN_CLI_GPU_ARGS_MAX], *cdi[RN_CLI_GPU_ARGS_MAX];
	struct rn_gpu_request req; /* points into the arrays above */
	bool named;
};
void rn_cli_gpus_init(struct rn_cli_gpus *g);
/*
 * Takes `arg` and its value from cli when it is one of the three options:
 * 1 taken, 0 not one of them, or an exit code > 1 (usage, printed).
 */
int rn_cli_gpus_option(struct rn_cli *cli, const char *arg, struct rn_cli_gpus *g);

int rn_cmd_system(struct rn_cli *cli);
int rn_cmd_dev(struct rn_cli *cli);
int rn_cmd_gids(struct rn_cli *cli);
int rn_cmd_move(struct rn_cli *cli);
int rn_cmd_link(struct rn_cli *cli);
int rn_cmd_doctor(struct rn_cli *cli);
int rn_cmd_exporter(struct rn_cli *cli);
int rn_cmd_env(struct rn_cli *cli);
int rn_cmd_cdi(struct rn_cli *cli);
int rn_cmd_ipam(struct rn_cli *cli);
int rn_cmd_ping(struct rn_cli *cli);

/* ---- rdmans ping, also run by `doctor --peer` ---- */
#include "rdmans/nccl.h"
#include "rdmans/ping.h"

struct rn_ping_target {
	int nsfd; /* -1: the caller's netns */
	const char *netns; /* as given (--netns), NULL */
	pid_t pid; /* --pid, 0 */
	const struct rn_nccl_layer *layers; /* `rdmans env`'s overrides */
	size_t n_layers;
	bool json;
	bool no_default; /* do not look up NCCL's device */
	/* what NCCL would use, and why */
	char dev[64];
	unsigned port;
	int gid_index;
	char why[512];
};

/* NCCL's device and GID index in the target (its environment/nccl.conf, else resolved). */
int rn_ping_nccl_default(struct rn_ping_target *t, struct rn_error *err);
/* Runs o in t (NCCL's device unless o names one). */
int rn_ping_run(struct rn_ping_target *t, struct rn_ping_opts *o, struct rn_ping_result *res,
		struct rn_error *err);
json_t *rn_ping_result_json(const struct rn_ping_result *res, const char *why);
/* The exit code for a ping failure (14, 15, 16), -1 for the others. */
int rn_ping_exit_code(int code);

#endif
