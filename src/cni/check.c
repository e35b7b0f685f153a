// SPDX-License-Identifier: Apache-2.0
/* CHECK (the attachment is as ADD left it) and STATUS (ADD can be served). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "delegate.h"
#include "result.h"
#include "rdmans/attach.h"
#include "rdmans/attach_plan.h"
#include "rdmans/cleanup.h"
#include "rdmans/cni_state.h"
#include "rdmans/netns.h"
#include "rdmans/rdma_nl.h"

int cni_cmd_check(struct cni_ctx *ctx)
{
	_cleanup_cni_attachment_ struct rn_cni_attachment att = { 0 };
	struct rn_error err = { 0 };
	const char *addrs[RN_CNI_IPS_MAX];
	_cleanup_close_ int pod = -1;
	char name[256];
	int r;

	if (rn_cni_state_name(ctx->conf.name, ctx->container_id, ctx->ifname, name, sizeof(name),
			      &err) < 0)
		return cni_fail(ctx, CNI_ERR_INVALID_CONFIG, "%s", err.msg);
	r = rn_cni_attachment_read(ctx->state_dir, name, &att, &err);
	if (r == -ENOENT)
		return cni_fail(ctx, RN_CNI_CHECK_FAILED,
				"container %s has no %s on network %s (no ADD, or DEL removed it)",
				ctx->container_id, ctx->ifname, ctx->conf.name);
	/* damaged devices are told after the phase, which says more */
	if (r < 0 && r != -EBADMSG)
		return cni_fail_lib(ctx, CNI_ERR_IO, &err);
	if (att.phase == RN_CNI_PHASE_RELEASING)
		return cni_fail(ctx, RN_CNI_CHECK_FAILED,
				"a DEL of %s for container %s brought the devices home but did not "
				"release the address; DEL it again",
				ctx->ifname, ctx->container_id);
	if (att.phase != RN_CNI_PHASE_READY)
		return cni_fail(ctx, RN_CNI_CHECK_FAILED,
				"the ADD of %s for container %s did not finish; DEL it",
				ctx->ifname, ctx->container_id);
	if (r == -EBADMSG)
		return cni_fail(ctx, CNI_ERR_IO, "%s", err.msg);
	pod = rn_netns_open_path(att.netns[0] ? att.netns : NULL, &err);
	if (pod < 0)
		return cni_fail(ctx, RN_CNI_CHECK_FAILED, "the pod's network namespace is gone: %s",
				err.msg);
	for (size_t i = 0; i < att.n_ips; i++)
		addrs[i] = att.ips[i];
	if (rn_attach_verify(pod, &att.plan, addrs, att.n_ips, &err) < 0)
		return cni_fail(ctx, RN_CNI_CHECK_FAILED, "%s", err.msg);
	if (ctx->conf.ipam_type && !att.plan.chained) {
		struct cni_delegate_env env = { .command = "CHECK" };

		return cni_delegate(ctx, &env, NULL, NULL);
	}
	return 0;
}

int cni_cmd_status(struct cni_ctx *ctx)
{
	_cleanup_rdma_ struct rn_rdma *rdma = NULL;
	struct rn_error err = { 0 };
	bool exclusive = false;
	int r;

	if (rn_cni_state_dir_init(ctx->state_dir, &err) < 0)
		return cni_fail(ctx, CNI_ERR_NOT_AVAILABLE, "cannot use the state directory: %s",
				err.msg);
	r = rn_rdma_open(&rdma, &err);
	if (r == 0)
		r = rn_rdma_netns_mode_get(rdma, &exclusive, &err);
	if (r == -EPROTONOSUPPORT) {
		if (ctx->conf.require_rdma)
			return cni_fail(ctx, CNI_ERR_NOT_AVAILABLE,
					"this node has no RDMA: %s. Networks without RDMA need "
					"\"requireRdma\": false",
					err.msg);
	} else if (r < 0) {
		return cni_fail(ctx, CNI_ERR_NOT_AVAILABLE, "cannot read the RDMA netns mode: %s",
				err.msg);
	} else if (ctx->conf.soft_roce) {
		if (exclusive)
			return cni_fail(
				ctx, CNI_ERR_NOT_AVAILABLE,
				"softRoce needs shared RDMA netns mode: in exclusive mode "
				"an rxe device made inside a pod lands in the host's netns");
	} else if (!exclusive) {
		return cni_fail(ctx, CNI_ERR_NOT_AVAILABLE,
				"the RDMA subsystem is in shared netns mode: RDMA devices cannot "
				"move into pods. Run 'rdmans system set netns exclusive --persist' "
				"and reboot the node");
	}
	/* STATUS exists for 1.1.0 configurations only: an IPAM plugin that knows
	 * it (host-local 1.9) refuses it for an older one, as the runtime would */
	if (ctx->conf.ipam_type && !ctx->conf.prev_result && ctx->conf.ver >= 110 &&
	    cni_delegate_supports(ctx, "1.1.0")) {
		struct cni_delegate_env env = { .command = "STATUS" };

		return cni_delegate(ctx, &env, NULL, NULL);
	}
	return 0;
}
