// SPDX-License-Identifier: Apache-2.0
/*
 * ADD. Checks first, changes after; every change after the state file is
 * written is undone by the same teardown DEL runs, when a later step fails.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "add.h"
#include "del.h"
#include "delegate.h"
#include "devinfo.h"
#include "fault.h"
#include "result.h"
#include "rdmans/attach.h"
#include "rdmans/attach_plan.h"
#include "rdmans/attach_soft_roce.h"
#include "rdmans/attach_state.h"
#include "rdmans/cleanup.h"
#include "rdmans/cni_state.h"
#include "rdmans/link.h"
#include "rdmans/netns.h"
#include "rdmans/sysfs.h"
#include "rdmans/sysfs_kernel.h"
#include "rdmans/system.h"
#include "rdmans/util.h"

#define LOCK_TIMEOUT_MS 60000

struct add_job {
	struct cni_ctx *ctx;
	char name[256]; /* state file */
	struct rn_attach_plan plan;
	int locks[2 * RN_ATTACH_MAX];
	size_t n_locks;
	int pod;
	struct rn_cni_attachment att; /* its state file, as last written */
	struct cni_ipam_result ipam;
	bool state_written;
	bool ipam_added; /* the IPAM plugin's ADD succeeded: its DEL undoes it */
};

/*
 * "pod default/gpu-pod0 (container 3f2a..., net1 on network rdma-net)"; only
 * what the runtime told: podman passes K8S_POD_NAME without a namespace
 * ("pod c1 (container ...)").
 */
static void describe_owner(const struct rn_cni_attachment *att, char *buf, size_t len)
{
	const char *cid = att->container_id[0] ? att->container_id : "?";
	const char *ifname = att->ifname[0] ? att->ifname : "?";
	const char *net = att->network[0] ? att->network : "?";
	const char *ns = att->pod_namespace;

	/* cut to len as snprintf would (rn_strappend: gcc cannot know a name's length here) */
	buf[0] = '\0';
	if (att->pod_name[0])
		rn_strappend(buf, len, "pod %s%s%s (container %.12s, %s on network %s)", ns,
			     ns[0] ? "/" : "", att->pod_name, cid, ifname, net);
	else
		rn_strappend(buf, len, "container %.12s (%s on network %s)", cid, ifname, net);
}

/* -1 (failure set) when another attachment claims the plan's devices or the selection. */
static int check_owner(struct add_job *job, const struct rn_attach_plan *plan,
		       const struct rn_attach_select *sel, const struct rn_error *cause)
{
	struct cni_ctx *ctx = job->ctx;
	_cleanup_cni_attachment_ struct rn_cni_attachment owner = { 0 };
	struct rn_error err = { 0 };
	char who[600];
	int r;

	r = rn_attach_find_owner(ctx->state_dir, job->name, plan, sel, NULL, 0, &owner, &err);
	if (r < 0)
		return cni_fail_lib(ctx, CNI_ERR_IO, &err);
	if (r == 0) {
		if (cause)
			return cni_fail_lib(ctx, 0, cause);
		return 0;
	}
	describe_owner(&owner, who, sizeof(who));
	return cni_fail(ctx, RN_CNI_IN_USE,
			"the selected device belongs to %s; one device serves one pod at a time",
			who);
}

static int check_policy(struct add_job *job, const struct rn_attach_plan *plan)
{
	struct cni_ctx *ctx = job->ctx;
	const struct cni_conf *c = &ctx->conf;
	struct rn_error err = { 0 };

	/* test builds: RDMA_NETNS_FAULT_SKIP=movable, as on a kernel that tells nothing */
	if (!cni_fault_skip("movable") && rn_attach_check_movable(plan, &err) < 0)
		return cni_fail_lib(ctx, 0, &err);
	for (size_t i = 0; !plan->chained && i < plan->n_netdevs; i++) {
		bool def = false;

		if (rn_link_has_default_route(plan->netdevs[i].ifindex, &def, &err) < 0)
			return cni_fail_lib(ctx, 0, &err);
		if (def && !c->allow_default_route)
			return cni_fail(ctx, RN_CNI_MANAGEMENT,
					"netdev %s carries the host's default route (the node's "
					"management interface?); refusing to move it into a pod. "
					"Set \"allowDefaultRoute\": true if that is really meant",
					plan->netdevs[i].name);
	}
	if (c->soft_roce) {
		if (plan->n_rdma > 0)
			return cni_fail(ctx, CNI_ERR_INVALID_CONFIG,
					"netdev %s has RDMA device %s: softRoce is for netdevs "
					"without one (drop \"softRoce\" to move the real device)",
					plan->netdevs[0].name, plan->rdma[0]);
		if (plan->exclusive)
			return cni_fail(
				ctx, RN_CNI_SOFT_ROCE,
				"softRoce needs shared RDMA netns mode: in exclusive mode "
				"an rxe device made inside a pod lands in the host's netns, "
				"out of the pod's sight (this node runs exclusive mode for "
				"real RDMA devices: use them, or a node in shared mode)");
		return 0;
	}
	if (plan->n_rdma == 0 && c->require_rdma) {
		if (!plan->rdma_kernel)
			return cni_fail(ctx, RN_CNI_NO_RDMA,
					"netdev %s has no RDMA device: this kernel has no RDMA "
					"netlink (ib_core not loaded?). Set \"requireRdma\": false "
					"to attach netdevs without RDMA",
					plan->netdevs[0].name);
		return cni_fail(ctx, RN_CNI_NO_RDMA,
				"netdev %s has no RDMA device bound to it%s; refusing to attach it "
				"without RDMA. Name the RDMA device ('rdmaDevice', 'deviceID') or "
				"set \"requireRdma\": false",
				plan->netdevs[0].name,
				plan->chained ? " that rdma-netns can find (no PCI function)" : "");
	}
	if (plan->n_rdma > 0 && !plan->exclusive) {
		struct rn_error shared = { 0 };

		rn_system_refuse_shared(plan->rdma[0], &shared);
		return cni_fail(ctx, RN_CNI_SHARED_MODE, "%s", shared.msg);
	}
	return 0;
}

/*
 * -1 (failure set) when this attachment's state file exists: an earlier ADD,
 * or a racing ADD of the same container and interface that got the device
 * first (its state file is written before anything moves).
 */
static int check_not_added(struct add_job *job)
{
	struct cni_ctx *ctx = job->ctx;
	_cleanup_cni_attachment_ struct rn_cni_attachment old = { 0 };
	struct rn_error err = { 0 };
	int r;

	r = rn_cni_attachment_read(ctx->state_dir, job->name, &old, &err);
	if (r == 0 || r == -EBADMSG)
		return cni_fail(ctx, RN_CNI_EXISTS,
				"container %s already has %s on network %s (ADD twice?); DEL it "
				"first",
				ctx->container_id, ctx->ifname, ctx->conf.name);
	if (r != -ENOENT)
		return cni_fail_lib(ctx, CNI_ERR_IO, &err);
	return 0;
}

/* prev: the resolution before the locks, whose sysfs findings may be taken over */
static int resolve(struct add_job *job, const struct rn_attach_plan *prev,
		   struct rn_attach_plan *plan)
{
	struct cni_ctx *ctx = job->ctx;
	struct rn_error err = { 0 };
	int r;

	if (ctx->conf.prev_result)
		r = rn_attach_resolve_chained(job->pod, ctx->ifname, &ctx->conf.sel, plan, &err);
	else
		r = rn_attach_resolve_again(&ctx->conf.sel, ctx->ifname, prev, plan, &err);
	if (r == -ENODEV) {
		/* gone: into this very attachment (a racing ADD), another one, or away */
		if (check_not_added(job) == 0)
			(void)check_owner(job, NULL, &ctx->conf.sel, &err); /* "in use" or err */
		return -1;
	}
	if (r < 0)
		return cni_fail_lib(ctx, 0, &err);
	return 0;
}

/* Resolve, lock what it names, resolve again under the locks (it may have moved meanwhile). */
static int resolve_and_lock(struct add_job *job)
{
	struct cni_ctx *ctx = job->ctx;
	struct rn_attach_plan first, again;
	struct rn_error err = { 0 };

	/* the policy is checked under the locks only: before them, a racing ADD may move the
	 * device away between two lookups, and "gone" must be told as "in use" (101) */
	if (resolve(job, NULL, &first) < 0)
		return -1;
	for (int attempt = 0; attempt < 4; attempt++) {
		if (rn_attach_lock(ctx->state_dir, &first, LOCK_TIMEOUT_MS, job->locks,
				   &job->n_locks, &err) < 0)
			return cni_fail_lib(ctx, CNI_ERR_TRY_AGAIN, &err);
		if (resolve(job, &first, &again) < 0)
			return -1;
		if (rn_attach_locks_cover(&first, &again)) {
			job->plan = again;
			if (check_not_added(job) < 0 ||
			    check_owner(job, &job->plan, NULL, NULL) < 0 ||
			    check_policy(job, &job->plan) < 0)
				return -1;
			return 0;
		}
		rn_attach_unlock(job->locks, job->n_locks);
		job->n_locks = 0;
		first = again;
	}
	return cni_fail(ctx, CNI_ERR_TRY_AGAIN,
			"the selected device kept changing while rdma-netns tried to lock it; try "
			"again");
}

/* value into a field of the state; -ENAMETOOLONG (err set) when it does not fit */
static int state_copy(char *field, size_t size, const char *what, const char *value,
		      struct rn_error *err)
{
	if (rn_strscpy(field, size, value) < 0)
		return rn_error_set(err, ENAMETOOLONG,
				    "%s '%.64s...' is too long for the state file", what, value);
	return 0;
}

#define STATE_COPY(field, what, value) state_copy((field), sizeof(field), (what), (value), &err)

static int state_init(struct add_job *job, const char *devinfo)
{
	struct cni_ctx *ctx = job->ctx;
	struct rn_cni_attachment *att = &job->att;
	struct rn_error err = { 0 };
	char boot_id[64];
	const char *key;
	json_t *v;
	int r = 0;

	if (STATE_COPY(att->network, "network name", ctx->conf.name) < 0 ||
	    STATE_COPY(att->container_id, "container ID", ctx->container_id) < 0 ||
	    STATE_COPY(att->ifname, "interface name", ctx->ifname) < 0 ||
	    STATE_COPY(att->netns, "CNI_NETNS", ctx->netns) < 0 ||
	    STATE_COPY(att->pod_namespace, "K8S_POD_NAMESPACE", ctx->args.pod_namespace) < 0 ||
	    STATE_COPY(att->pod_name, "K8S_POD_NAME", ctx->args.pod_name) < 0 ||
	    STATE_COPY(att->pod_uid, "K8S_POD_UID", ctx->args.pod_uid) < 0 ||
	    STATE_COPY(att->infra_container_id, "K8S_POD_INFRA_CONTAINER_ID", ctx->args.infra_id) <
		    0 ||
	    STATE_COPY(att->ipam, "ipam.type", ctx->conf.ipam_type) < 0 ||
	    STATE_COPY(att->devinfo, "device-info path", devinfo) < 0)
		return cni_fail_lib(ctx, CNI_ERR_IO, &err);
	att->phase = RN_CNI_PHASE_ADDING;
	att->created = (long long)time(NULL);
	if (rn_kernel_boot_id(boot_id, sizeof(boot_id)) == 0)
		(void)rn_strscpy(att->boot_id, sizeof(att->boot_id), boot_id);
	json_object_foreach (ctx->conf.nccl, key, v) {
		char value[64];

		if (json_is_string(v))
			r = rn_cni_attachment_add_nccl(att, key, json_string_value(v), &err);
		else {
			if (json_is_integer(v))
				snprintf(value, sizeof(value), "%lld",
					 (long long)json_integer_value(v));
			else if (json_is_real(v))
				snprintf(value, sizeof(value), "%g", json_real_value(v));
			else
				snprintf(value, sizeof(value), "%d", json_is_true(v) ? 1 : 0);
			r = rn_cni_attachment_add_nccl(att, key, value, &err);
		}
		if (r < 0)
			return cni_fail_lib(ctx, CNI_ERR_IO, &err);
	}
	att->plan = job->plan;
	return 0;
}

/*
 * Crash safety of the state file, and why it is fsync'ed only with IPAM.
 *
 * A process that dies at any step (kill -9, OOM; tests/netns/cni-faults.sh
 * kills after each one) loses nothing: the kernel keeps the page cache, and
 * the rename makes the file whole or absent, never half. fsync adds nothing
 * there; it only matters when the machine itself stops (power loss, kernel
 * crash). Then every change an ADD made to the kernel is gone with it:
 * namespaces, moves, names, aliases, addresses; physical netdevs and RDMA
 * devices come back in the host's netns under their boot names. A state
 * file of such an ADD, lost, empty or whole, describes nothing that still
 * exists: DEL without one succeeds and still calls the IPAM plugin's DEL
 * (del.c), DEL with an empty one has nothing to bring home, and one from an
 * older boot is what DEL and GC clear either way.
 * What does outlive a reboot is an IPAM allocation (the IPAM plugin keeps
 * it on disk or in etcd). Its state file must be on disk before the IPAM
 * ADD, so that GC finds and releases what no runtime will DEL; and the
 * "ready" rewrite too, lest a power loss leave it empty. DEL's removal is
 * not fsync'ed: the file records its boot (boot_id), so one that a power
 * loss brought back claims no device (rn_attach_find_owner) and its DEL or
 * GC releases only the lease.
 * Without IPAM, an ADD does no fsync (host-device, the reference plugin,
 * keeps no state at all): two file and two directory fsyncs were 2-6 ms of
 * a 45 ms ADD+DEL on a loaded disk.
 */
static bool state_durable(const struct add_job *job)
{
	return !job->ctx->conf.prev_result && job->ctx->conf.ipam_type;
}

static int state_write(struct add_job *job, const char *what)
{
	struct rn_error err = { 0 };
	int r;

	r = rn_cni_attachment_write(job->ctx->state_dir, job->name, &job->att, state_durable(job),
				    &err);
	if (r < 0)
		return cni_fail_lib(job->ctx, CNI_ERR_IO, &err);
	job->state_written = true;
	cni_fault_point(what);
	return 0;
}

/* After a failure: undo everything (as DEL would), keep the first message. */
static void rollback(struct add_job *job)
{
	struct cni_ctx *ctx = job->ctx;
	int code = ctx->fail.code;
	char first[sizeof(ctx->fail.msg)];

	if (!job->state_written)
		return;
	snprintf(first, sizeof(first), "%s", ctx->fail.msg);
	ctx->fail.code = 0;
	ctx->fail.msg[0] = '\0';
	/* the device locks are held here already */
	if (cni_teardown(ctx, job->name, &job->att, job->ipam_added, false, NULL, NULL) < 0) {
		char second[sizeof(ctx->fail.msg)];

		snprintf(second, sizeof(second), "%s", ctx->fail.msg);
		snprintf(ctx->fail.msg, sizeof(ctx->fail.msg),
			 "%.480s; undoing the ADD failed too (%.460s): run DEL for this container",
			 first, second);
	} else {
		snprintf(ctx->fail.msg, sizeof(ctx->fail.msg),
			 "%.900s (everything ADD changed was undone)", first);
	}
	ctx->fail.code = code;
}

static const char *pod_iface_in(json_t *prev, const char *ifname, int *ret_index)
{
	json_t *ifaces = json_object_get(prev, "interfaces"), *it;
	size_t i;

	*ret_index = -1;
	json_array_foreach (ifaces, i, it) {
		json_t *name = json_object_get(it, "name");

		if (json_is_string(name) && strcmp(json_string_value(name), ifname) == 0) {
			*ret_index = (int)i;
			return json_string_value(name);
		}
	}
	return NULL;
}

/* Addresses of the pod interface: ours (main mode) or prevResult's (chained). */
static size_t pod_addrs(struct add_job *job, const char **addrs, size_t max)
{
	struct cni_ctx *ctx = job->ctx;
	size_t n = 0;

	if (!ctx->conf.prev_result) {
		for (size_t i = 0; i < job->ipam.n_ips && n < max; i++)
			addrs[n++] = job->ipam.ips[i].cidr;
	} else {
		json_t *ips = json_object_get(ctx->conf.prev_result, "ips"), *ip;
		int mine;
		size_t i;

		(void)pod_iface_in(ctx->conf.prev_result, ctx->ifname, &mine);
		json_array_foreach (ips, i, ip) {
			json_t *a = json_object_get(ip, "address");
			json_t *idx = json_object_get(ip, "interface");

			if (!json_is_string(a) || n == max)
				continue;
			if (json_is_integer(idx) && json_integer_value(idx) != mine)
				continue;
			addrs[n++] = json_string_value(a);
		}
	}
	return n;
}

/*
 * Chained mode on InfiniBand: the IPoIB netdev the previous plugin set up
 * was made anew when its RDMA device moved. Its addresses (prevResult's for
 * this interface) and, when this interface is prevResult's only one, its
 * routes, go on the new one.
 */
static int readdress_prev(struct add_job *job, bool up, struct rn_error *err)
{
	struct cni_ctx *ctx = job->ctx;
	_cleanup_json_ json_t *mine = json_deep_copy(ctx->conf.prev_result);
	json_t *ips, *ip, *kept;
	_cleanup_(cni_ipam_result_free) struct cni_ipam_result prev = { 0 };
	int index;
	size_t i;

	if (!mine || !(kept = json_array()))
		return rn_error_set(err, ENOMEM, "out of memory");
	(void)pod_iface_in(mine, ctx->ifname, &index);
	ips = json_object_get(mine, "ips");
	json_array_foreach (ips, i, ip) {
		json_t *idx = json_object_get(ip, "interface");

		if (!json_is_integer(idx) || json_integer_value(idx) == index)
			(void)json_array_append(kept, ip);
	}
	(void)json_object_set_new(mine, "ips", kept);
	if (json_array_size(json_object_get(mine, "interfaces")) > 1)
		(void)json_object_del(mine, "routes");
	if (cni_ipam_result_parse(ctx, mine, &prev) < 0)
		return rn_error_set(err, EINVAL, "prevResult, to set up %s again: %s", ctx->ifname,
				    ctx->fail.msg);
	return rn_attach_configure(job->pod, ctx->ifname, up, prev.ips, prev.n_ips, prev.routes,
				   prev.n_routes, cni_step, NULL, err);
}

/*
 * A kernel operation on what was checked already: the kernel's EINVAL is a
 * refusal (109), not an invalid configuration (7).
 */
static int kernel_fail(struct cni_ctx *ctx, const struct rn_error *err)
{
	return cni_fail_lib(ctx, err->code == EINVAL ? RN_CNI_KERNEL : 0, err);
}

/*
 * softRoce: an rxe device on the pod's netdev, made inside the pod. Its name
 * goes to the state first, so that DEL and a rollback delete it; it joins
 * the plan (after the state recorded what moves) so that the GID wait and
 * the result cover it.
 */
static int soft_roce_add(struct add_job *job)
{
	struct cni_ctx *ctx = job->ctx;
	struct rn_error err = { 0 };
	char name[RN_RDMA_NAME_MAX];

	if (rn_attach_soft_roce_name(ctx->container_id, ctx->ifname, name, sizeof(name), &err) <
		    0 ||
	    STATE_COPY(job->att.soft_roce, "soft-RoCE device name", name) < 0)
		return cni_fail_lib(ctx, CNI_ERR_INVALID_CONFIG, &err);
	if (state_write(job, "recorded the soft-RoCE device") < 0)
		return -1;
	if (rn_attach_soft_roce_add(job->pod, name, ctx->ifname, &err) < 0)
		return cni_fail_lib(ctx, err.code == EOPNOTSUPP ? RN_CNI_SOFT_ROCE : RN_CNI_KERNEL,
				    &err);
	cni_fault_point("created the soft-RoCE device");
	if (job->plan.n_rdma < RN_ATTACH_MAX)
		(void)rn_strscpy(job->plan.rdma[job->plan.n_rdma++], RN_RDMA_NAME_MAX, name);
	return 0;
}

static int add_steps(struct add_job *job)
{
	struct cni_ctx *ctx = job->ctx;
	struct rn_error err = { 0 };
	const char *addrs[RN_CNI_IPS_MAX];
	char devinfo[PATH_MAX];
	size_t n_addrs;
	bool up, remade;
	int r;

	if (cni_devinfo_path(ctx, devinfo, sizeof(devinfo)) < 0)
		return -1;
	if (resolve_and_lock(job) < 0)
		return -1;
	if (state_init(job, job->plan.n_rdma ? devinfo : NULL) < 0 ||
	    state_write(job, "wrote the state file") < 0)
		return -1;

	if (!ctx->conf.prev_result && ctx->conf.ipam_type) {
		struct cni_delegate_env env = { .command = "ADD" };
		_cleanup_json_ json_t *doc = NULL;

		if (cni_delegate(ctx, &env, NULL, &doc) < 0)
			return -1;
		job->ipam_added = true;
		if (cni_ipam_result_parse(ctx, doc, &job->ipam) < 0)
			return -1;
		cni_fault_point("IPAM ADD");
	}
	r = rn_attach_move_in(&job->plan, job->pod, !ctx->conf.prev_result, &up, &remade, cni_step,
			      NULL, &err);
	if (r < 0)
		return kernel_fail(ctx, &err);
	if (ctx->conf.prev_result && remade) {
		r = readdress_prev(job, up, &err);
		if (r < 0)
			return kernel_fail(ctx, &err);
	}
	if (!ctx->conf.prev_result) {
		r = rn_attach_configure(job->pod, ctx->ifname, up, job->ipam.ips, job->ipam.n_ips,
					job->ipam.routes, job->ipam.n_routes, cni_step, NULL, &err);
		if (r < 0)
			return kernel_fail(ctx, &err);
	}
	n_addrs = pod_addrs(job, addrs, RN_ARRAY_SIZE(addrs));
	if (ctx->conf.soft_roce && soft_roce_add(job) < 0)
		return -1;
	r = rn_attach_wait_gids(job->pod, &job->plan, addrs, n_addrs, ctx->conf.gid_timeout_ms,
				&err);
	if (r < 0)
		return cni_fail_lib(ctx, 0, &err);
	if (job->plan.n_rdma) {
		if (cni_devinfo_write(ctx, devinfo, &job->plan) < 0)
			return -1;
		cni_fault_point("wrote the device-info file");
	}
	for (job->att.n_ips = 0; job->att.n_ips < n_addrs; job->att.n_ips++)
		if (STATE_COPY(job->att.ips[job->att.n_ips], "address", addrs[job->att.n_ips]) < 0)
			return cni_fail_lib(ctx, CNI_ERR_IO, &err);
	job->att.phase = RN_CNI_PHASE_READY;
	return state_write(job, "marked the state ready");
}

int cni_cmd_add(struct cni_ctx *ctx)
{
	static struct add_job job; /* large */
	struct rn_error err = { 0 };
	_cleanup_close_ int pod = -1;
	_cleanup_close_ int self = -1;
	int att_lock = -1;
	int mine, r;

	memset(&job, 0, sizeof(job));
	job.ctx = ctx;
	job.pod = -1;
	if (rn_cni_state_name(ctx->conf.name, ctx->container_id, ctx->ifname, job.name,
			      sizeof(job.name), &err) < 0)
		return cni_fail(ctx, CNI_ERR_INVALID_CONFIG, "%s", err.msg);
	if (ctx->conf.prev_result) {
		if (ctx->conf.ipam_type)
			return cni_fail(ctx, CNI_ERR_INVALID_CONFIG,
					"'ipam' is for main mode: after a previous plugin "
					"(prevResult present) the addresses are its business");
		if (!pod_iface_in(ctx->conf.prev_result, ctx->ifname, &mine))
			return cni_fail(ctx, CNI_ERR_INVALID_CONFIG,
					"prevResult has no interface named %s: rdma-netns chained "
					"after another plugin needs the interface it created",
					ctx->ifname);
	}
	pod = rn_netns_open_path(ctx->netns, &err);
	if (pod < 0)
		return cni_fail(ctx, CNI_ERR_INVALID_ENV, "CNI_NETNS: %s", err.msg);
	job.pod = pod;
	self = rn_netns_open_self(&err);
	if (self < 0)
		return cni_fail_lib(ctx, 0, &err);
	r = rn_netns_same(pod, self, &err);
	if (r < 0)
		return cni_fail_lib(ctx, 0, &err);
	if (r == 1)
		return cni_fail(ctx, CNI_ERR_INVALID_ENV,
				"CNI_NETNS %s is the host's own network namespace, not a pod's",
				ctx->netns);
	if (!ctx->conf.prev_result && ctx->conf.ipam_type && cni_delegate_check(ctx) < 0)
		return -1;
	if (rn_cni_state_dir_init(ctx->state_dir, &err) < 0)
		return cni_fail_lib(ctx, CNI_ERR_IO, &err);
	/* no DEL (or other ADD) of this attachment runs until this one is done */
	if (rn_cni_attachment_lock(ctx->state_dir, job.name, LOCK_TIMEOUT_MS, &att_lock, &err) < 0)
		return cni_fail_lib(ctx, CNI_ERR_TRY_AGAIN, &err);
	if (check_not_added(&job) < 0) {
		rn_cni_attachment_unlock(ctx->state_dir, job.name, att_lock);
		return -1;
	}

	r = add_steps(&job);
	if (r < 0) {
		rollback(&job);
	} else {
		r = rn_cni_print(ctx->conf.prev_result
					 ? cni_result_chained(ctx)
					 : cni_result_main(ctx, &job.plan, &job.ipam));
	}
	if (r < 0 && !ctx->fail.code)
		cni_fail(ctx, CNI_ERR_IO, "cannot write the result to stdout");
	rn_attach_unlock(job.locks, job.n_locks);
	rn_cni_attachment_unlock(ctx->state_dir, job.name, att_lock);
	rn_cni_attachment_free(&job.att);
	cni_ipam_result_free(&job.ipam);
	return r;
}
