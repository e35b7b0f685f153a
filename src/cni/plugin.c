// SPDX-License-Identifier: Apache-2.0
/*
 * rdma-netns on the CNI skeleton (rn_cni_main, rdmans/cni_protocol.h): the
 * configuration and environment read into one cni_ctx, the verbs of
 * add.c, del.c and check.c, their failure handed back to the skeleton.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "add.h"
#include "check.h"
#include "conf.h"
#include "del.h"
#include "fault.h"
#include "plugin.h"
#include "result.h"
#include "rdmans/link.h"
#include "rdmans/util.h"

/* ---- the verbs, on the skeleton's call (rdmans/cni_protocol.h) ---- */

static struct cni_ctx ctx; /* large: off the stack */

/* ctx as the call's environment says; the directories from ours */
static void ctx_from_call(const struct rn_cni_call *call)
{
	const char *dir;

	ctx.command = call->env.command;
	ctx.container_id = call->env.container_id;
	ctx.netns = call->env.netns;
	ctx.ifname = call->env.ifname;
	ctx.path = call->env.path;
	dir = getenv("RDMA_NETNS_STATE_DIR");
	snprintf(ctx.state_dir, sizeof(ctx.state_dir), "%s", dir && *dir ? dir : RN_CNI_STATE_DIR);
	dir = getenv("RDMA_NETNS_DEVINFO_DIR");
	snprintf(ctx.devinfo_dir, sizeof(ctx.devinfo_dir), "%s",
		 dir && *dir ? dir : "/var/run/k8s.cni.cncf.io/devinfo");
}

/* ctx's failure, the one the skeleton prints */
static int to_call(struct rn_cni_call *call, int r)
{
	if (r < 0) {
		if (!ctx.fail.code)
			cni_fail(&ctx, RN_CNI_KERNEL, "%s failed", ctx.command);
		call->fail = ctx.fail;
	}
	return r < 0 ? -1 : 0;
}

static int check_env(const struct rn_cni_env *env)
{
	struct rn_error err = { 0 };
	bool add_like = !strcmp(ctx.command, "ADD") || !strcmp(ctx.command, "CHECK");
	bool del = !strcmp(ctx.command, "DEL");

	if (add_like || del) {
		if (rn_cni_env_require(env, add_like, "rdma-netns", &err) < 0)
			return cni_fail(&ctx, CNI_ERR_INVALID_ENV, "%s", err.msg);
		if (rn_cni_state_name("x", ctx.container_id, ctx.ifname, (char[256]){ 0 }, 256,
				      &err) < 0)
			return cni_fail(&ctx, CNI_ERR_INVALID_ENV, "CNI_CONTAINERID/CNI_IFNAME: %s",
					err.msg);
		if (ctx.netns && ctx.netns[0] != '/')
			return cni_fail(&ctx, CNI_ERR_INVALID_ENV,
					"CNI_NETNS must be an absolute path, not '%s'", ctx.netns);
	}
	if (rn_cni_args_parse(env->args, &ctx.args, &err) < 0)
		return cni_fail(&ctx, CNI_ERR_INVALID_ENV, "%s", err.msg);
	return 0;
}

static int prepare(struct rn_cni_call *call, void *data)
{
	(void)data;
	ctx_from_call(call);
	return to_call(call, cni_conf_parse_doc(&ctx, call->doc, call->input, call->input_len,
						call->version, call->ver) < 0 ||
					     check_env(&call->env) < 0
				     ? -1
				     : 0);
}

static int del_refused(struct rn_cni_call *call, void *data)
{
	(void)data;
	ctx_from_call(call);
	if (!ctx.fail.code) /* the skeleton's refusal, in ctx for cni_del_refused */
		ctx.fail = call->fail;
	return cni_del_refused(&ctx);
}

#define VERB(name, fn)                                                                             \
	static int name(struct rn_cni_call *call, void *data)                                      \
	{                                                                                          \
		(void)data;                                                                        \
		return to_call(call, fn(&ctx));                                                    \
	}
VERB(add, cni_cmd_add)
VERB(del, cni_cmd_del)
VERB(check, cni_cmd_check)
VERB(status, cni_cmd_status)
VERB(gc, cni_cmd_gc)

static const struct rn_cni_plugin rdma_netns = {
	.name = "rdma-netns",
	.oldest = CNI_OLDEST,
	.prepare = prepare,
	.verbs = { add, del, check, status, gc },
	.del_refused = del_refused,
};

int cni_main(void)
{
	/* This thread stays in the host's netns (rn_netns_run enters others in threads). */
	_cleanup_link_session_ bool link_session = rn_link_session_begin();
	int r;

	cni_fault_init();
	r = rn_cni_main(&rdma_netns, NULL);
	cni_fault_report(ctx.command ? ctx.command : "-");
	cni_conf_free(&ctx.conf);
	return r;
}
