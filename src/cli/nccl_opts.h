/* SPDX-License-Identifier: Apache-2.0 */
/* The NCCL override options `rdmans env` and `rdmans cdi generate` share. */
#ifndef RDMANS_CLI_NCCL_OPTS_H
#define RDMANS_CLI_NCCL_OPTS_H

#include "rdmans.h"
#include "rdmans/nccl.h"

struct nccl_opts {
	const char *config; /* --config FILE, or NULL: RN_NCCL_CONFIG when it exists */
	const char *cni_config; /* --cni-config FILE */
	struct rn_nccl_layer option; /* --profile, --set, --unset */
	struct rn_nccl_layer layers[3]; /* filled by nccl_opts_load() */
	size_t n_layers;
};

void nccl_opts_init(struct nccl_opts *o);
void nccl_opts_free(struct nccl_opts *o);

/*
 * Takes option `arg` (and its value from cli) when it is one of
 * --profile NAME, --set NAME=VALUE, --unset NAME, --config FILE,
 * --cni-config FILE. Returns 1 when taken, 0 when not ours, or an exit
 * code > 1 (usage or bad value, already printed).
 */
int nccl_opts_take(struct rn_cli *cli, const char *arg, struct nccl_opts *o);

/* Reads the files into o->layers (the option layer last). */
int nccl_opts_load(struct nccl_opts *o, struct rn_error *err);

#endif
