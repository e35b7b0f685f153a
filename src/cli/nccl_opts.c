// SPDX-License-Identifier: Apache-2.0
/* The NCCL override options the CLI verbs share: env, cdi generate, doctor, ping (nccl_opts.h). */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nccl_opts.h"
#include "rdmans.h"
#include "rdmans/cleanup.h"
#include "rdmans/container.h"
#include "rdmans/discover.h"
#include "rdmans/nccl.h"
#include "rdmans/nccl_json.h"
#include "rdmans/netns.h"
#include "rdmans/util.h"

void nccl_opts_init(struct nccl_opts *o)
{
	memset(o, 0, sizeof(*o));
	rn_nccl_layer_init(&o->option, RN_NCCL_SRC_OPTION, "");
}

void nccl_opts_free(struct nccl_opts *o)
{
	rn_nccl_layer_free(&o->option);
	for (size_t i = 0; i < o->n_layers; i++)
		rn_nccl_layer_free(&o->layers[i]);
	o->n_layers = 0;
}

/* 1 when arg (and its value) was taken into o, 0 when it is not ours, or an exit code > 1. */
static int nccl_opts_take(struct rn_cli *cli, const char *arg, struct nccl_opts *o)
{
	struct rn_error err = { 0 };
	const char *v;
	int r;

	if (strcmp(arg, "--profile") && strcmp(arg, "--set") && strcmp(arg, "--unset") &&
	    strcmp(arg, "--config") && strcmp(arg, "--cni-config") && strcmp(arg, "--family") &&
	    strcmp(arg, "--nccl-version"))
		return 0;
	v = rn_cli_next(cli);
	if (!v)
		return rn_cli_usage("%s needs a value", arg);
	if (strcmp(arg, "--config") == 0) {
		o->config = v;
		return 1;
	}
	if (strcmp(arg, "--cni-config") == 0) {
		o->cni_config = v;
		return 1;
	}
	if (strcmp(arg, "--profile") == 0)
		r = rn_nccl_layer_set_profile(&o->option, v, &err);
	else if (strcmp(arg, "--family") == 0)
		r = rn_nccl_layer_set_family(&o->option, v, &err);
	else if (strcmp(arg, "--nccl-version") == 0)
		r = rn_nccl_layer_set_version(&o->option, v, &err);
	else if (strcmp(arg, "--unset") == 0)
		r = strchr(v, '=') ? rn_error_set(&err, EINVAL, "--unset takes a NAME, not %s", v)
				   : rn_nccl_layer_set_arg(&o->option, v, &err);
	else
		r = !strchr(v, '=') ? rn_error_set(&err, EINVAL,
						   "--set takes NAME=VALUE (--unset NAME removes "
						   "one), not %s",
						   v)
				    : rn_nccl_layer_set_arg(&o->option, v, &err);
	if (r < 0)
		return rn_cli_usage("%s", err.msg);
	return 1;
}

const char *nccl_opts_next(struct rn_cli *cli, struct nccl_opts *o, int *ret)
{
	const char *a;

	*ret = 0;
	while ((a = rn_cli_next(cli))) {
		int r = nccl_opts_take(cli, a, o);

		if (r == 0)
			return a;
		if (r > 1) {
			*ret = r;
			return NULL;
		}
	}
	return NULL;
}

int nccl_opts_load(struct nccl_opts *o, struct rn_error *err)
{
	char path[4096];
	int r;

	/* a named config file must exist; the default one is optional */
	snprintf(path, sizeof(path), "%s%s", o->config ? "" : rn_config_root(),
		 o->config ? o->config : RN_NCCL_CONFIG);
	if (o->config || access(path, F_OK) == 0) {
		rn_nccl_layer_init(&o->layers[o->n_layers], RN_NCCL_SRC_CONFIG, path);
		r = rn_nccl_layer_from_file(&o->layers[o->n_layers++], path, false, err);
		if (r < 0)
			return r;
	}
	if (o->cni_config) {
		rn_nccl_layer_init(&o->layers[o->n_layers], RN_NCCL_SRC_CNI, o->cni_config);
		r = rn_nccl_layer_from_file(&o->layers[o->n_layers++], o->cni_config, true, err);
		if (r < 0)
			return r;
	}
	o->layers[o->n_layers++] = o->option;
	memset(&o->option, 0, sizeof(o->option));
	return 0;
}

/* ---- rdmans env ---- */
