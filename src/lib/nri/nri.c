// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <syslog.h>
#include <unistd.h>

#include "rdmans/cleanup.h"
#include "rdmans/devnodes.h"
#include "rdmans/discover.h"
#include "rdmans/move.h"
#include "rdmans/netns.h"
#include "rdmans/nri.h"
#include "rdmans/nri_wire.h"
#include "rdmans/util.h"

#define REGISTER_STREAM 1u
#define MAX_DEVNODES (RN_POD_MAX_DEVICES + 1)

struct session {
	int fd;
	const struct rn_nri_options *o;
	int64_t request_timeout_ms;
	bool registered;
};

static void say(const struct session *s, int priority, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void say(const struct session *s, int priority, const char *fmt, ...)
{
	char line[2048];
	va_list ap;

	if (!s->o->log)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	s->o->log(s->o->log_ctx, priority, line);
}

int rn_nri_connect(const char *path, struct rn_error *err)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	_cleanup_close_ int fd = -1;

	if (strlen(path) >= sizeof(sa.sun_path))
		return rn_error_set(err, ENAMETOOLONG, "NRI socket path '%s' is too long", path);
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return rn_error_errno(err, errno, "cannot create a unix socket");
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return rn_error_errno(err, errno,
				      "cannot connect to the NRI socket %s (is NRI enabled in the "
				      "runtime? containerd >= 2.0 and CRI-O >= 1.30 enable it by "
				      "default)",
				      path);
	return TAKE_FD(fd);
}

static int send_frame(struct session *s, uint32_t conn, uint32_t stream, uint8_t type,
		      const uint8_t *payload, size_t len, struct rn_error *err)
{
	_cleanup_free_ uint8_t *frame = NULL;
	size_t frame_len = 0;
	int r = rn_nri_frame(conn, stream, type, payload, len, &frame, &frame_len, err);

	if (r < 0)
		return r;
	r = rn_write_all(s->fd, (const char *)frame, frame_len);
	if (r < 0)
		return rn_error_errno(err, -r, "cannot write to the NRI socket");
	return 0;
}

/* ---- the pod and its netns ---- */

static const char *annotation_of(const char *key, void *call)
{
	return rn_nri_call_annotation(call, key);
}

static int open_pod_netns(const struct rn_nri_call *c, char *desc, size_t len, struct rn_error *err)
{
	if (c->pod_netns) {
		snprintf(desc, len, "netns %s", c->pod_netns);
		return rn_netns_open_path(c->pod_netns, err);
	}
	if (c->pod_pid > 0) {
		snprintf(desc, len, "the netns of PID %u", c->pod_pid);
		return rn_netns_open_pid((pid_t)c->pod_pid, err);
	}
	return rn_error_set(err, ENOENT,
			    "the runtime names no network namespace for pod %s/%s (no network "
			    "namespace path, no PID): is it a hostNetwork pod?",
			    c->pod_namespace, c->pod_name);
}

static int state_path(const struct session *s, const struct rn_nri_call *c, char *buf, size_t len,
		      struct rn_error *err)
{
	int r = rn_name_check("pod sandbox ID", c->pod_id, 255, err);

	if (r < 0)
		return r;
	return rn_path(buf, len, "%s/%s", s->o->state_dir ? s->o->state_dir : RN_NRI_STATE_DIR,
		       c->pod_id) < 0
		       ? rn_error_set(err, ENAMETOOLONG, "state path too long")
		       : 0;
}

/*
 * What this plugin moved into a pod, so that Stop/RemovePodSandbox take back
 * those and nothing a CNI plugin put there. Replaced whole, so a reader never
 * sees half of one; not fsync'ed: if the record is
 * lost, the kernel still returns the devices when the pod's netns goes.
 */
static int record_moved(const struct session *s, const struct rn_nri_call *c, const char *netns,
			char (*names)[RN_RDMA_NAME_MAX], size_t n, struct rn_error *err)
{
	char path[PATH_MAX], text[PATH_MAX + RN_POD_MAX_DEVICES * RN_RDMA_NAME_MAX + 16] = "";
	const char *dir = s->o->state_dir ? s->o->state_dir : RN_NRI_STATE_DIR;
	int r = state_path(s, c, path, sizeof(path), err);

	if (r < 0)
		return r;
	/* /run/rdmans/nri: /run is a tmpfs, made anew at boot */
	r = rn_mkdir_p(dir, 0755, 0700, err);
	if (r < 0)
		return r;
	rn_strappend(text, sizeof(text), "netns %s\n", netns);
	for (size_t i = 0; i < n; i++)
		rn_strappend(text, sizeof(text), "%s\n", names[i]);
	return rn_write_atomic(path, text, strlen(text), 0600, false, "record", err);
}

/*
 * Records of pods whose netns is gone: the kernel took their devices home
 * with it. containerd (2.1) sends no Stop/RemovePodSandbox for pods that
 * were there before it restarted, so their records end here.
 */
static void forget_gone_pods(struct session *s)
{
	const char *dir = s->o->state_dir ? s->o->state_dir : RN_NRI_STATE_DIR;
	_cleanup_closedir_ DIR *d = opendir(dir);
	struct dirent *e;

	while (d && (e = readdir(d))) {
		char path[PATH_MAX], line[PATH_MAX + 8];

		if (e->d_name[0] == '.' ||
		    rn_path(path, sizeof(path), "%s/%s", dir, e->d_name) < 0 ||
		    rn_read_line(path, line, sizeof(line)) < 0 ||
		    strncmp(line, "netns /", 7) != 0 || access(line + 6, F_OK) == 0 ||
		    errno != ENOENT)
			continue;
		if (unlink(path) == 0)
			say(s, LOG_INFO, "pod %s: its netns %s is gone: record dropped", e->d_name,
			    line + 6);
	}
}

/* Devices of the pod in nsfd back to the host's netns (the home loop); one not there is skipped. */
static int take_home(struct session *s, const struct rn_nri_call *c, int nsfd,
		     char (*names)[RN_RDMA_NAME_MAX], size_t n, struct rn_error *err)
{
	_cleanup_close_ int hostfd = rn_netns_open_host(err);
	bool home[RN_POD_MAX_DEVICES] = { false };
	const struct rn_move_home h = {
		.names = names, .n = n, .home_nsfd = hostfd, .ret_home = home
	};
	int r;

	if (hostfd < 0)
		return hostfd;
	if (n > RN_POD_MAX_DEVICES)
		return rn_error_set(err, E2BIG, "more than %d RDMA devices to take home",
				    RN_POD_MAX_DEVICES);
	r = rn_move_home(nsfd, &h, err);
	/* said here, not in the pod's netns thread the loop runs on */
	for (size_t i = 0; i < n; i++)
		if (home[i])
			say(s, LOG_INFO, "pod %s/%s: RDMA device %s is back in the host's netns",
			    c->pod_namespace, c->pod_name, names[i]);
	return r;
}

/*
 * The devices this plugin moved into the pod at RunPodSandbox, from its
 * record, as "mlx5_0,mlx5_1" into names; false when it moved none.
 */
static bool recorded_devices(const struct session *s, const struct rn_nri_call *c, char *names,
			     size_t len)
{
	_cleanup_free_ char *text = NULL;
	struct rn_error err = { 0 };
	char path[PATH_MAX], *save = NULL;

	names[0] = '\0';
	if (state_path(s, c, path, sizeof(path), &err) < 0 ||
	    rn_read_regular(path, 1 << 16, NULL, &text, NULL, &err) < 0)
		return false;
	for (char *t = strtok_r(text, "\n", &save); t; t = strtok_r(NULL, "\n", &save))
		if (strncmp(t, "netns ", 6) != 0)
			rn_strappend(names, len, "%s%s", names[0] ? "," : "", t);
	return names[0] != '\0';
}

/*
 * What the pod asks: its rdmans.io annotations, and the devices kubelet
 * allocated to it. A kubelet that does not answer is logged, not fatal: the
 * pod still starts with what its annotations ask. At CreateContainer the
 * devices moved at RunPodSandbox are what kubelet allocated: the record says
 * so without asking kubelet again within the runtime's request timeout.
 */
static int pod_ask(struct session *s, const struct rn_nri_call *c, bool at_create,
		   struct rn_pod_ask *ask, struct rn_error *err)
{
	struct rn_error kerr = { 0 };
	char names[1024] = "";
	int r = rn_pod_ask_from_annotations(ask, annotation_of, (void *)c, err);

	if (r < 0 || !s->o->pod_devices || !c->pod_namespace || !c->pod_name)
		return r;
	if (at_create && recorded_devices(s, c, names, sizeof(names)))
		return rn_pod_ask_add_devices(ask, names, "rdmans-nri's record of the pod", err);
	r = s->o->pod_devices(s->o->pod_devices_ctx, c->pod_namespace, c->pod_name, names,
			      sizeof(names), &kerr);
	if (r < 0) {
		if (r != -ENOENT)
			say(s, LOG_WARNING, "pod %s/%s: %s", c->pod_namespace, c->pod_name,
			    kerr.msg);
		return 0;
	}
	return names[0] ? rn_pod_ask_add_devices(ask, names, "kubelet's allocation", err) : 0;
}

static int run_pod(struct session *s, const struct rn_nri_call *c, struct rn_error *err)
{
	struct rn_pod_ask ask = { 0 };
	char desc[PATH_MAX + 32], moved[RN_POD_MAX_DEVICES][RN_RDMA_NAME_MAX];
	_cleanup_close_ int nsfd = -1;
	size_t n_moved = 0;
	int r;

	forget_gone_pods(s);
	r = pod_ask(s, c, false, &ask, err);
	if (r == 0 && rn_pod_ask_moves(&ask)) {
		nsfd = open_pod_netns(c, desc, sizeof(desc), err);
		r = nsfd < 0 ? nsfd : 0;
		if (r == 0)
			r = rn_pod_ask_move(&ask, nsfd, desc, moved, RN_POD_MAX_DEVICES, &n_moved,
					    err);
		if (n_moved) {
			int r2 = record_moved(s, c, c->pod_netns ? c->pod_netns : desc, moved,
					      n_moved, err);

			r = r < 0 ? r : r2;
		}
		for (size_t i = 0; i < n_moved; i++)
			say(s, LOG_INFO, "pod %s/%s: moved RDMA device %s into %s",
			    c->pod_namespace, c->pod_name, moved[i], desc);
	}
	if (r < 0 && n_moved) {
		/* the pod fails: what this call moved goes home, and its record with it */
		struct rn_error undo = { 0 };
		char path[PATH_MAX];

		if (take_home(s, c, nsfd, moved, n_moved, &undo) < 0)
			rn_strappend(err->msg, sizeof(err->msg),
				     "; taking the moved devices home failed too: %s", undo.msg);
		else if (state_path(s, c, path, sizeof(path), &undo) == 0)
			unlink(path);
	}
	rn_pod_ask_free(&ask);
	return r;
}

/* The devices this plugin moved into the pod go back to the host's netns. */
static int release_pod(struct session *s, const struct rn_nri_call *c, bool remove_record,
		       struct rn_error *err)
{
	char path[PATH_MAX], desc[PATH_MAX + 32];
	_cleanup_free_ char *text = NULL;
	_cleanup_close_ int nsfd = -1;
	size_t len = 0;
	char *save = NULL;
	int r;

	if (state_path(s, c, path, sizeof(path), err) < 0) {
		rn_error_clear(err); /* not an ID we could have recorded */
		return 0;
	}
	r = rn_read_regular(path, 1 << 16, "rdmans-nri's record", &text, &len, err);
	if (r == -ENOENT) {
		rn_error_clear(err);
		return 0; /* it moved nothing into this pod */
	}
	if (r < 0)
		return r;
	nsfd = open_pod_netns(c, desc, sizeof(desc), err);
	if (nsfd < 0) {
		/* the netns is gone: the kernel took its RDMA devices home already */
		say(s, LOG_INFO, "pod %s/%s: its netns is gone (%s): nothing to take back",
		    c->pod_namespace, c->pod_name, err->msg);
		rn_error_clear(err);
	} else {
		char names[RN_POD_MAX_DEVICES][RN_RDMA_NAME_MAX];
		size_t n = 0;

		for (char *t = strtok_r(text, "\n", &save); t && n < RN_POD_MAX_DEVICES;
		     t = strtok_r(NULL, "\n", &save))
			if (strncmp(t, "netns ", 6) != 0)
				snprintf(names[n++], RN_RDMA_NAME_MAX, "%s", t);
		r = take_home(s, c, nsfd, names, n, err);
		if (r < 0)
			return r;
	}
	if (remove_record && unlink(path) < 0 && errno != ENOENT)
		return rn_error_errno(err, errno, "cannot remove %s", path);
	return 0;
}

/* ---- CreateContainer ---- */

static int pod_devnodes(int nsfd, struct rn_nri_device *out, size_t max, size_t *n,
			struct rn_error *err)
{
	_cleanup_rdma_devs_ struct rn_rdma_devs here = { 0 };
	_cleanup_free_ struct rn_devnode *nodes = NULL;
	struct rn_devnode cm;
	size_t n_nodes = 0;
	int r;

	*n = 0;
	r = rn_rdma_dump_in(nsfd, &here, err);
	if (r == 0)
		r = rn_devnodes_uverbs(&nodes, &n_nodes, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n_nodes && *n < max; i++)
		for (size_t j = 0; j < here.n; j++)
			if (strcmp(nodes[i].dev, here.devs[j].name) == 0) {
				snprintf(out[*n].path, sizeof(out[*n].path), "%s", nodes[i].path);
				out[*n].major = nodes[i].major;
				out[(*n)++].minor = nodes[i].minor;
			}
	if (*n && *n < max && rn_devnodes_rdma_cm(&cm, err) == 0) {
		snprintf(out[*n].path, sizeof(out[*n].path), "%s", cm.path);
		out[*n].major = cm.major;
		out[(*n)++].minor = cm.minor;
	}
	rn_error_clear(err); /* no rdma_ucm: verbs work without rdma_cm */
	return 0;
}

#define MAX_CTR_DEVICES 128

/* The container's GPUs, as the runtime gives them: its device nodes and NVIDIA_VISIBLE_DEVICES. */
static int container_gpus(const struct rn_nri_call *c, struct rn_pod_ask *ask, struct rn_error *err)
{
	const char *paths[MAX_CTR_DEVICES];
	struct rn_gpu_request req = { paths, 0, NULL, NULL, 0 };

	/* (CDI devices are in linux.devices already: containerd injects them into the spec first) */
	req.n_devnodes = rn_nri_call_devices(c, paths, MAX_CTR_DEVICES);
	req.visible_devices = rn_nri_call_env(c, "NVIDIA_VISIBLE_DEVICES");
	return rn_pod_ask_gpus(ask, &req, err);
}

/* gpu-aligned: the container's rails come into the pod, and join the pod's record. */
static int move_gpu_aligned(struct session *s, const struct rn_nri_call *c, struct rn_pod_ask *ask,
			    int nsfd, const char *desc, struct rn_error *err)
{
	char moved[RN_POD_MAX_DEVICES][RN_RDMA_NAME_MAX], all[RN_POD_MAX_DEVICES][RN_RDMA_NAME_MAX];
	char names[1024], *save = NULL;
	size_t n_moved = 0, n_all = 0;
	int r = rn_pod_ask_move(ask, nsfd, desc, moved, RN_POD_MAX_DEVICES, &n_moved, err);

	if (r == 0 && n_moved) {
		if (recorded_devices(s, c, names, sizeof(names)))
			for (char *t = strtok_r(names, ",", &save); t && n_all < RN_POD_MAX_DEVICES;
			     t = strtok_r(NULL, ",", &save))
				(void)rn_strscpy(all[n_all++], RN_RDMA_NAME_MAX, t);
		for (size_t i = 0; i < n_moved && n_all < RN_POD_MAX_DEVICES; i++)
			memcpy(all[n_all++], moved[i], RN_RDMA_NAME_MAX);
		r = record_moved(s, c, c->pod_netns ? c->pod_netns : desc, all, n_all, err);
	}
	for (size_t i = 0; i < n_moved; i++)
		say(s, LOG_INFO,
		    "container %s of pod %s/%s: moved RDMA device %s into %s (gpu-aligned)",
		    c->ctr_name, c->pod_namespace, c->pod_name, moved[i], desc);
	if (r < 0 && n_moved) {
		struct rn_error undo = { 0 };

		/* the container fails: what this call moved goes home (the record keeps the rest, unchanged) */
		if (take_home(s, c, nsfd, moved, n_moved, &undo) < 0)
			rn_strappend(err->msg, sizeof(err->msg),
				     "; taking the moved devices home failed too: %s", undo.msg);
	}
	return r;
}

static int create_container(struct session *s, const struct rn_nri_call *c, uint8_t **reply,
			    size_t *reply_len, struct rn_error *err)
{
	struct rn_pod_ask ask = { 0 };
	struct rn_nccl_layer layers[RN_POD_MAX_LAYERS];
	size_t n_layers = 0, n_env = 0, n_devs = 0;
	_cleanup_nccl_result_ struct rn_nccl_result res = { 0 };
	_cleanup_free_ struct rn_nri_env *env = NULL;
	struct rn_nri_device devs[MAX_DEVNODES];
	char desc[PATH_MAX + 32];
	_cleanup_close_ int nsfd = -1;
	int64_t patience;
	long start = rn_now_ms();
	int r;

	r = pod_ask(s, c, true, &ask, err);
	if (r < 0 || !rn_pod_ask_any(&ask)) {
		rn_pod_ask_free(&ask);
		return r < 0 ? r
			     : rn_nri_reply_create(&(struct rn_nri_adjust){ 0 }, reply, reply_len,
						   err);
	}
	nsfd = open_pod_netns(c, desc, sizeof(desc), err);
	r = nsfd < 0 ? nsfd : 0;
	if (r == 0)
		r = container_gpus(c, &ask, err);
	if (r == 0 && ask.gpu_aligned)
		r = move_gpu_aligned(s, c, &ask, nsfd, desc, err);
	if (r == 0)
		r = pod_devnodes(nsfd, devs, MAX_DEVNODES, &n_devs, err);
	if (r == 0 && !rn_pod_ask_conf_off(&ask)) {
		/* leave the runtime time to answer within its own request timeout */
		patience = s->request_timeout_ms > 0 ? s->request_timeout_ms - 500 : 1500;
		patience = patience > 1500 ? 1500 : patience;
		patience -= rn_now_ms() - start; /* what this call took so far */
		patience = patience < 0 ? 0 : patience;
		r = rn_pod_ask_layers(&ask, &s->o->sources, layers, &n_layers, err);
		if (r == 0)
			r = rn_pod_ask_resolve(&ask, nsfd, layers, n_layers, NULL,
					       "NRI sees the container before its image is "
					       "mounted",
					       (int)patience, &res, err);
		for (size_t i = 0; i < n_layers; i++)
			rn_nccl_layer_free(&layers[i]);
	}
	if (r == 0 && res.n) {
		env = calloc(res.n, sizeof(*env));
		if (!env)
			r = rn_error_set(err, ENOMEM, "out of memory");
	}
	for (size_t i = 0; r == 0 && i < res.n; i++) {
		const char *kept = rn_nri_call_env(c, res.v[i].name);

		if (kept) {
			say(s, LOG_INFO,
			    "container %s of pod %s/%s sets %s=%s already: it wins over rdmans' "
			    "value %s (%s)",
			    c->ctr_name, c->pod_namespace, c->pod_name, res.v[i].name, kept,
			    res.v[i].value, res.v[i].origin);
			continue;
		}
		env[n_env].name = res.v[i].name;
		env[n_env++].value = res.v[i].value;
	}
	if (r == 0) {
		r = rn_nri_reply_create(
			&(struct rn_nri_adjust){
				.env = env, .n_env = n_env, .devices = devs, .n_devices = n_devs },
			reply, reply_len, err);
		say(s, LOG_INFO,
		    "container %s of pod %s/%s: %zu NCCL settings, %zu device nodes (%ld ms)",
		    c->ctr_name, c->pod_namespace, c->pod_name, n_env, n_devs, rn_now_ms() - start);
	}
	rn_pod_ask_free(&ask);
	return r;
}

/* ---- the session ---- */

static int answer(struct session *s, const struct rn_ttrpc_msg *m, struct rn_error *err)
{
	struct rn_nri_call c;
	struct rn_error call_err = { 0 };
	_cleanup_free_ uint8_t *reply = NULL;
	size_t reply_len = 0;
	int r;
	const int32_t events = RN_NRI_EVENT_BIT(RN_NRI_EV_RUN_POD_SANDBOX) |
			       RN_NRI_EVENT_BIT(RN_NRI_EV_STOP_POD_SANDBOX) |
			       RN_NRI_EVENT_BIT(RN_NRI_EV_REMOVE_POD_SANDBOX) |
			       RN_NRI_EVENT_BIT(RN_NRI_EV_CREATE_CONTAINER);

	r = rn_nri_call_decode(m->payload, m->len, &c, &call_err);
	if (r == 0) {
		switch (c.method) {
		case RN_NRI_CONFIGURE:
			s->request_timeout_ms = c.request_timeout_ms;
			say(s, LOG_INFO, "configured by %s %s (request timeout %lld ms)",
			    c.runtime_name, c.runtime_version, (long long)c.request_timeout_ms);
			r = rn_nri_reply_configure(events, &reply, &reply_len, &call_err);
			break;
		case RN_NRI_SYNCHRONIZE:
			forget_gone_pods(s);
			r = rn_nri_reply_synchronize(c.more, &reply, &reply_len, &call_err);
			break;
		case RN_NRI_CREATE_CONTAINER:
			r = create_container(s, &c, &reply, &reply_len, &call_err);
			break;
		case RN_NRI_STATE_CHANGE:
			if (c.event == RN_NRI_EV_RUN_POD_SANDBOX)
				r = run_pod(s, &c, &call_err);
			else if (c.event == RN_NRI_EV_STOP_POD_SANDBOX ||
				 c.event == RN_NRI_EV_REMOVE_POD_SANDBOX)
				r = release_pod(s, &c, c.event == RN_NRI_EV_REMOVE_POD_SANDBOX,
						&call_err);
			if (r == 0)
				r = rn_nri_reply_empty(&reply, &reply_len, &call_err);
			break;
		case RN_NRI_SHUTDOWN:
		case RN_NRI_UPDATE_CONTAINER:
		case RN_NRI_STOP_CONTAINER:
			r = rn_nri_reply_empty(&reply, &reply_len, &call_err);
			break;
		case RN_NRI_UNKNOWN:
		default:
			r = rn_nri_reply_error(RN_GRPC_UNIMPLEMENTED,
					       "rdmans-nri does not serve this call", &reply,
					       &reply_len, &call_err);
			break;
		}
	}
	if (r < 0) {
		char msg[RN_ERROR_MSG_MAX + 256];

		snprintf(msg, sizeof(msg), "rdmans-nri: %s%s%s%s%s: %s", c.name,
			 c.pod_name && c.pod_name[0] ? " pod " : "",
			 c.pod_namespace ? c.pod_namespace : "",
			 c.pod_name && c.pod_name[0] ? "/" : "", c.pod_name ? c.pod_name : "",
			 call_err.msg[0] ? call_err.msg : strerror(call_err.code));
		say(s, LOG_ERR, "%s", msg + strlen("rdmans-nri: "));
		free(reply);
		reply = NULL;
		r = rn_nri_reply_error(RN_GRPC_UNKNOWN, msg, &reply, &reply_len, err);
	}
	rn_nri_call_free(&c);
	if (r < 0)
		return r;
	return send_frame(s, RN_NRI_CONN_PLUGIN, m->stream_id, RN_TTRPC_RESPONSE, reply, reply_len,
			  err);
}

static int handle(struct session *s, const struct rn_ttrpc_msg *m, struct rn_error *err)
{
	if (m->conn == RN_NRI_CONN_RUNTIME) {
		int r;

		if (m->type != RN_TTRPC_RESPONSE || m->stream_id != REGISTER_STREAM)
			return 0; /* we sent one request; anything else is not ours */
		r = rn_nri_response_check(m->payload, m->len, "RegisterPlugin", err);
		if (r < 0)
			return r;
		s->registered = true;
		say(s, LOG_INFO, "registered as %s-%s", s->o->idx, s->o->name);
		return 0;
	}
	if (m->type != RN_TTRPC_REQUEST)
		return 0;
	return answer(s, m, err);
}

int rn_nri_serve(int fd, const struct rn_nri_options *o, int reg_timeout_ms, struct rn_error *err)
{
	struct session s = { .fd = fd, .o = o };
	struct rn_nri_demux d = { 0 };
	_cleanup_free_ uint8_t *req = NULL;
	size_t req_len = 0;
	long deadline = rn_now_ms() + reg_timeout_ms;
	int r;

	r = rn_nri_request_register(o->name, o->idx, (int64_t)reg_timeout_ms * 1000000, &req,
				    &req_len, err);
	if (r == 0)
		r = send_frame(&s, RN_NRI_CONN_RUNTIME, REGISTER_STREAM, RN_TTRPC_REQUEST, req,
			       req_len, err);
	while (r == 0) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		uint8_t buf[65536];
		struct rn_ttrpc_msg m;
		long left = deadline - rn_now_ms();
		ssize_t n;

		if (!s.registered && left <= 0) {
			r = rn_error_set(err, ETIMEDOUT,
					 "the runtime did not answer RegisterPlugin within %d ms",
					 reg_timeout_ms);
			break;
		}
		n = poll(&pfd, 1, s.registered ? -1 : (int)left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = rn_error_errno(err, errno, "poll on the NRI socket");
			break;
		}
		if (n == 0)
			continue;
		n = read(fd, buf, sizeof(buf));
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0) {
			r = rn_error_errno(err, errno, "cannot read the NRI socket");
			break;
		}
		if (n == 0) {
			say(&s, LOG_INFO, "the runtime closed the NRI connection");
			break;
		}
		r = rn_nri_demux_feed(&d, buf, (size_t)n, err);
		while (r == 0 && (r = rn_nri_demux_next(&d, &m, err)) == 1)
			r = handle(&s, &m, err);
	}
	rn_nri_demux_free(&d);
	return r < 0 ? r : 0;
}
