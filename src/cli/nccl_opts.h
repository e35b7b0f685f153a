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
 * The next argument of cli that is none of --profile NAME, --set NAME=VALUE,
 * --unset NAME, --config FILE, --cni-config FILE, --family, --nccl-version
 * (those, with their values, go into o). NULL at the end (*ret 0), or NULL
 * with *ret an exit code > 1 (usage or bad value, already printed).
 */
const char *nccl_opts_next(struct rn_cli *cli, struct nccl_opts *o, int *ret);

/* Reads the files into o->layers (the option layer last). */
int nccl_opts_load(struct nccl_opts *o, struct rn_error *err);

#endif
