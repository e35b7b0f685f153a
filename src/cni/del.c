// SPDX-License-Identifier: Apache-2.0
/*
 * DEL and GC. DEL succeeds when things are gone already: no state, no
 * netns, a second DEL. Devices a destroyed netns gave back to the host are
 * waited for and get their names back.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "del.h"
#include "delegate.h"
#include "devinfo.h"
#include "fault.h"
#include "result.h"
#include "rdmans/attach.h"
#include "rdmans/attach_home.h"
#include "rdmans/attach_plan.h"
#include "rdmans/attach_soft_roce.h"
#include "rdmans/attach_state.h"
#include "rdmans/cleanup.h"
#include "rdmans/cni_state.h"
#include "rdmans/sysfs.h"
#include "rdmans/sysfs_kernel.h"

#define LOCK_TIMEOUT_MS 60000
#define GC_GRACE_S 300 /* an ADD younger than this may still be running */

int cni_teardown(struct cni_ctx *ctx, const char *state_name, struct rn_cni_attachment *att,
		 bool call_ipam, bool take_locks, const char *container_id, const char *ifname)
{
	const struct rn_attach_plan *plan = &att->plan;
	struct rn_error err = { 0 };
	int locks[2 * RN_ATTACH_MAX];
	size_t n_locks = 0;
	char this_boot[64] = "";
	bool older_boot;
	int r = -1;

	if (take_locks &&
	    rn_attach_lock(ctx->state_dir, plan, LOCK_TIMEOUT_MS, locks, &n_locks, &err) < 0)
		return cni_fail_lib(ctx, CNI_ERR_TRY_AGAIN, &err);
	/*
	 * An attachment of an older boot: the reboot brought its devices home,
	 * and a pod of this boot may hold them now (its file claims nothing).
	 * Only its IPAM allocation and its file are left to undo.
	 */
	(void)rn_kernel_boot_id(this_boot, sizeof(this_boot));
	older_boot = rn_cni_attachment_older_boot(att, this_boot);
	/* softRoce: the pod's rxe device goes before its netdev leaves (gone with a dead netns) */
	if (!older_boot && att->soft_roce[0] && rn_attach_soft_roce_del(att->soft_roce, &err) < 0) {
		cni_fail_lib(ctx, RN_CNI_KERNEL, &err);
		goto out;
	}
	if (!older_boot &&
	    rn_attach_move_out(plan, att->netns[0] ? att->netns : NULL, ctx->conf.return_timeout_ms,
			       cni_step, NULL, &err) < 0) {
		cni_fail_lib(ctx, 0, &err);
		goto out;
	}
	if (call_ipam && ctx->conf.ipam_type) {
		struct cni_delegate_env env = { .command = "DEL",
						.container_id = container_id,
						.ifname = ifname };
		char args[700];

		/*
		 * The devices are home: should the release fail (a read-only or
		 * full IPAM store), the state says that only it is left, for the
		 * retry, CHECK and the operator.
		 */
		if (att->phase != RN_CNI_PHASE_RELEASING) {
			att->phase = RN_CNI_PHASE_RELEASING;
			if (rn_cni_attachment_write(ctx->state_dir, state_name, att, true, &err) <
			    0) {
				cni_fail(ctx, CNI_ERR_IO,
					 "the devices are back on the host, but the state file "
					 "cannot say so: %s",
					 err.msg);
				goto out;
			}
			cni_fault_point("state says releasing");
		}

		if (container_id) {
			/* another attachment's (GC): its pod, as its ADD had it in CNI_ARGS */
			const char *ns = att->pod_namespace;
			const char *pod = att->pod_name;
			const char *uid = att->pod_uid;

			snprintf(args, sizeof(args), "IgnoreUnknown=1%s%.256s%s%.256s%s%.128s",
				 ns[0] ? ";K8S_POD_NAMESPACE=" : "", ns,
				 pod[0] ? ";K8S_POD_NAME=" : "", pod, uid[0] ? ";K8S_POD_UID=" : "",
				 uid);
			env.args = args;
		}

		if (cni_delegate(ctx, &env, NULL, NULL) < 0)
			goto out;
		cni_fault_point("IPAM DEL");
	}
	if (att->devinfo[0] && cni_devinfo_remove(ctx, att->devinfo) < 0)
		goto out;
	/* a file that records its boot, brought back by a power loss, claims nothing */
	if ((att->boot_id[0] ? rn_cni_state_remove_nosync(ctx->state_dir, state_name, &err)
			     : rn_cni_state_remove(ctx->state_dir, state_name, &err)) < 0) {
		cni_fail_lib(ctx, CNI_ERR_IO, &err);
		goto out;
	}
	cni_fault_point("removed the state file");
	r = 0;
out:
	rn_attach_unlock(locks, n_locks);
	return r;
}

static int del_locked(struct cni_ctx *ctx, const char *name)
{
	_cleanup_cni_attachment_ struct rn_cni_attachment att = { 0 };
	struct rn_error err = { 0 };
	int r;

	r = rn_cni_attachment_read(ctx->state_dir, name, &att, &err);
	if (r == -ENOENT) {
		/*
		 * Nothing of ours is left (a second DEL, or ADD never got that
		 * far, or was killed writing its first state file: that temp
		 * file goes): release the address anyway, the IPAM plugin's
		 * DEL is idempotent. No ADD of this attachment runs meanwhile
		 * (the attachment lock), so the address is not one it just got.
		 */
		if (rn_cni_state_remove(ctx->state_dir, name, &err) < 0)
			return cni_fail_lib(ctx, CNI_ERR_IO, &err);
		if (ctx->conf.ipam_type) {
			struct cni_delegate_env env = { .command = "DEL" };

			return cni_delegate(ctx, &env, NULL, NULL);
		}
		return 0;
	}
	if (r == -EBADMSG)
		return cni_fail(ctx, CNI_ERR_IO, "%s", err.msg);
	if (r < 0)
		return cni_fail_lib(ctx, CNI_ERR_IO, &err);
	return cni_teardown(ctx, name, &att, !att.plan.chained, true, NULL, NULL);
}

int cni_cmd_del(struct cni_ctx *ctx)
{
	struct rn_error err = { 0 };
	char name[256];
	int lock = -1, r;

	if (rn_cni_state_name(ctx->conf.name, ctx->container_id, ctx->ifname, name, sizeof(name),
			      &err) < 0) {
		cni_fail(ctx, CNI_ERR_INVALID_CONFIG, "%s", err.msg);
		return cni_del_refused(ctx);
	}
	if (rn_cni_state_dir_init(ctx->state_dir, &err) < 0)
		return cni_fail_lib(ctx, CNI_ERR_IO, &err);
	if (rn_cni_attachment_lock(ctx->state_dir, name, LOCK_TIMEOUT_MS, &lock, &err) < 0)
		return cni_fail_lib(ctx, CNI_ERR_TRY_AGAIN, &err);
	r = del_locked(ctx, name);
	rn_cni_attachment_unlock(ctx->state_dir, name, lock);
	return r;
}

int cni_del_refused(struct cni_ctx *ctx)
{
	char **names = NULL;
	size_t n = 0;
	bool ours = false;

	if (ctx->container_id && ctx->ifname &&
	    rn_cni_state_list(ctx->state_dir, &names, &n, NULL) < 0)
		return -1; /* cannot tell: the refusal stands */
	for (size_t i = 0; i < n && !ours; i++) {
		_cleanup_cni_attachment_ struct rn_cni_attachment att = { 0 };
		int r = rn_cni_attachment_read(ctx->state_dir, names[i], &att, NULL);

		if (r < 0 && r != -EBADMSG) {
			ours = true; /* unreadable: it could be */
			continue;
		}
		ours = !att.container_id[0] || !att.ifname[0] ||
		       (strcmp(att.container_id, ctx->container_id) == 0 &&
			strcmp(att.ifname, ctx->ifname) == 0);
	}
	rn_cni_state_names_free(names, n);
	if (ours)
		return -1;
	fprintf(stderr, "rdma-netns: DEL: nothing to undo (no ADD takes this input: %s)\n",
		ctx->fail.msg);
	return 0;
}

static bool attachment_valid(json_t *valid, const char *cid, const char *ifname)
{
	json_t *item;
	size_t i;

	json_array_foreach (valid, i, item) {
		const char *c = json_string_value(json_object_get(item, "containerID"));
		const char *f = json_string_value(json_object_get(item, "ifname"));

		if (c && f && strcmp(c, cid) == 0 && strcmp(f, ifname) == 0)
			return true;
	}
	return false;
}

/* Under the attachment's lock, from its state as it is then (a DEL may have run meanwhile);
 * cid and ifname are the caller's copy of the attachment's. */
static int gc_one(struct cni_ctx *ctx, const char *name, bool call_ipam, const char *cid,
		  const char *ifname)
{
	_cleanup_cni_attachment_ struct rn_cni_attachment att = { 0 };
	struct rn_error err = { 0 };
	int lock = -1, r;

	if (rn_cni_attachment_lock(ctx->state_dir, name, LOCK_TIMEOUT_MS, &lock, &err) < 0)
		return cni_fail_lib(ctx, CNI_ERR_TRY_AGAIN, &err);
	r = rn_cni_attachment_read(ctx->state_dir, name, &att, &err);
	if (r == 0)
		r = cni_teardown(ctx, name, &att, call_ipam, true, cid, ifname);
	else if (r == -ENOENT)
		r = 0;
	else if (r == -EBADMSG)
		r = cni_fail(ctx, CNI_ERR_IO, "%s", err.msg);
	else
		r = cni_fail_lib(ctx, CNI_ERR_IO, &err);
	rn_cni_attachment_unlock(ctx->state_dir, name, lock);
	return r;
}

int cni_cmd_gc(struct cni_ctx *ctx)
{
	char **names = NULL;
	size_t n = 0;
	struct rn_error err = { 0 };
	bool ipam_gc = false;
	int failed = 0;

	if (rn_cni_state_list(ctx->state_dir, &names, &n, &err) < 0)
		return cni_fail_lib(ctx, CNI_ERR_IO, &err);
	if (ctx->conf.ipam_type)
		ipam_gc = cni_delegate_supports(ctx, "1.1.0");
	for (size_t i = 0; i < n; i++) {
		_cleanup_cni_attachment_ struct rn_cni_attachment att = { 0 };
		int r = rn_cni_attachment_read(ctx->state_dir, names[i], &att, NULL);

		/* a damaged one is gc_one's to refuse, with the reason */
		if (r < 0 && r != -EBADMSG)
			continue;
		if (!att.network[0] || !att.container_id[0] || !att.ifname[0] ||
		    strcmp(att.network, ctx->conf.name) != 0)
			continue;
		if (attachment_valid(ctx->conf.valid_attachments, att.container_id, att.ifname))
			continue;
		if (att.phase == RN_CNI_PHASE_ADDING && att.created &&
		    time(NULL) - att.created < GC_GRACE_S)
			continue; /* an ADD may still be running */
		if (gc_one(ctx, names[i], !ipam_gc && !att.plan.chained, att.container_id,
			   att.ifname) < 0)
			failed = 1;
	}
	rn_cni_state_names_free(names, n);
	if (ipam_gc) {
		struct cni_delegate_env env = { .command = "GC" };

		if (cni_delegate(ctx, &env, NULL, NULL) < 0)
			failed = 1;
	}
	return failed ? -1 : 0;
}
