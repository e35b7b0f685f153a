// SPDX-License-Identifier: Apache-2.0
/*
 * The only user of librdmacm (rdmans ping). It also includes libibverbs'
 * header: rdma_cm hands out verbs objects (id->verbs, rdma_create_qp() on
 * an ibv_pd) and the data path (ibv_post_send, ibv_poll_cq) is made of
 * inline functions of infiniband/verbs.h, so the connection and its data
 * path stay in this one file (tests/unit/layout.py says the same).
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <net/if.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "rdmans/cleanup.h"
#include "rdmans/ping.h"
#include "rdmans/sysfs.h"
#include "rdmans/util.h"

#define QDEPTH 64
#define DEFAULT_TIMEOUT_MS 3000
#define RESOLVE_TRY_MS 1000
#define RDMA_CM_NODE "/dev/infiniband/rdma_cm"

enum { WR_SEND = 1, WR_RECV, WR_WRITE };

/* ---- diagnosis ---- */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static size_t count_dir(const char *path, const char *prefix)
{
	_cleanup_closedir_ DIR *d = opendir(path);
	struct dirent *e;
	size_t n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' && strncmp(e->d_name, prefix, strlen(prefix)) == 0)
			n++;
	return n;
}

/*
 * Why libibverbs (and so rdma_cm) has no device: no device node, no
 * provider for the kernel's devices, or no RDMA device at all.
 */
static int no_device(const char *what, struct rn_error *err)
{
	_cleanup_free_ struct rn_sysfs_rdma_dev *devs = NULL;
	struct ibv_device **list;
	size_t kernel = 0;
	int n = 0;

	if (access(RDMA_CM_NODE, F_OK) != 0)
		return rn_error_set(err, ENODEV,
				    "%s: no " RDMA_CM_NODE " here (a container needs the device "
				    "node: CDI rdmans.io/rdma, or --device " RDMA_CM_NODE
				    "; on the host: modprobe rdma_ucm)",
				    what);
	if (rn_sysfs_rdma_list(&devs, &kernel, NULL) < 0 || kernel == 0)
		return rn_error_set(err, ENODEV,
				    "%s: this netns sees no RDMA device (/sys/class/infiniband is "
				    "empty; 'rdmans dev --all-netns' shows where they are)",
				    what);
	list = ibv_get_device_list(&n);
	if (list)
		ibv_free_device_list(list);
	if (n > 0)
		return rn_error_set(err, ENODEV, "%s: no RDMA device can reach the address", what);
	if (count_dir("/dev/infiniband", "uverbs") == 0)
		return rn_error_set(err, ENODEV,
				    "%s: the kernel has %zu RDMA device(s) but there is no "
				    "/dev/infiniband/uverbsN here (a container needs the device "
				    "nodes: CDI rdmans.io/rdma; on the host: modprobe ib_uverbs)",
				    what, kernel);
	return rn_error_set(err, ENODEV,
			    "%s: the kernel has %zu RDMA device(s) and their device nodes, but "
			    "libibverbs lists none: no verbs provider for their driver (install "
			    "ibverbs-providers or rdma-core in the image; IBV_SHOW_WARNINGS=1 "
			    "says which driver is missing)",
			    what, kernel);
}

/*
 * ENOMEM from a verbs object is almost always RLIMIT_MEMLOCK; so is EPERM
 * with a limit of 0 (the kernel's can_do_mlock(): no CAP_IPC_LOCK, no limit).
 */
static int verbs_fail(int e, const char *what, const char *dev, size_t bytes, struct rn_error *err)
{
	struct rlimit rl;

	if ((e == ENOMEM || e == EPERM) && getrlimit(RLIMIT_MEMLOCK, &rl) == 0 &&
	    rl.rlim_cur != RLIM_INFINITY && (e == ENOMEM || rl.rlim_cur == 0))
		return rn_error_set(err, ENOMEM,
				    "cannot %s on %s (%zu bytes): locked memory is limited to %llu "
				    "bytes (RLIMIT_MEMLOCK; raise it: ulimit -l unlimited, "
				    "LimitMEMLOCK=infinity, or the container runtime's memlock "
				    "ulimit)",
				    what, dev, bytes, (unsigned long long)rl.rlim_cur);
	return rn_error_errno(err, e ? e : EIO, "cannot %s on %s", what, dev);
}

/* ---- addresses ---- */

static int parse_addr(const char *text, uint16_t port, struct sockaddr_storage *ss,
		      struct rn_error *err)
{
	struct sockaddr_in *in = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
	char host[INET6_ADDRSTRLEN + 1];
	const char *pct = strchr(text, '%');

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, text, &in->sin_addr) == 1) {
		in->sin_family = AF_INET;
		in->sin_port = htons(port);
		return 0;
	}
	if (rn_strscpy(host, sizeof(host), text) < 0)
		return rn_error_set(err, EINVAL, "'%s' is not an IPv4 or IPv6 address", text);
	if (pct)
		host[pct - text] = 0;
	if (inet_pton(AF_INET6, host, &in6->sin6_addr) != 1)
		return rn_error_set(err, EINVAL,
				    "'%s' is not an IPv4 or IPv6 address (rdmans ping takes "
				    "addresses, not names)",
				    text);
	in6->sin6_family = AF_INET6;
	in6->sin6_port = htons(port);
	if (pct && !(in6->sin6_scope_id = if_nametoindex(pct + 1)))
		return rn_error_set(err, ENODEV, "no interface '%s' for %s", pct + 1, text);
	return 0;
}

static void addr_text(const struct sockaddr *sa, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN] = "?";

	if (sa && sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, a, sizeof(a));
	else if (sa && sa->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, a, sizeof(a));
	snprintf(buf, len, "%s", a);
}

static int open_dev(const char *dev, struct ibv_context **ret, struct rn_error *err)
{
	struct ibv_device **list;
	int n = 0;

	list = ibv_get_device_list(&n);
	if (!list)
		return no_device("cannot list RDMA devices", err);
	*ret = NULL;
	for (int i = 0; i < n && !*ret; i++)
		if (strcmp(ibv_get_device_name(list[i]), dev) == 0) {
			*ret = ibv_open_device(list[i]);
			if (!*ret) {
				int e = errno ? errno : ENODEV;

				ibv_free_device_list(list);
				return rn_error_errno(err, e, "cannot open RDMA device %s", dev);
			}
		}
	ibv_free_device_list(list);
	if (*ret)
		return 0;
	if (n == 0)
		return no_device(dev, err);
	return rn_error_set(err, ENODEV,
			    "libibverbs does not list RDMA device %s here ('rdmans dev' lists "
			    "this netns's)",
			    dev);
}

int rn_ping_gid_addr(const char *dev, unsigned port, int idx, char *buf, size_t len,
		     struct rn_error *err)
{
	struct ibv_context *ctx = NULL;
	struct ibv_gid_entry e;
	char gid[INET6_ADDRSTRLEN];
	static const uint8_t v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	int r;

	r = open_dev(dev, &ctx, err);
	if (r < 0)
		return r;
	memset(&e, 0, sizeof(e));
	r = ibv_query_gid_ex(ctx, (uint32_t)port, (uint32_t)idx, &e, 0);
	ibv_close_device(ctx);
	if (r != 0)
		return rn_error_set(err, EADDRNOTAVAIL,
				    "GID index %d of %s port %u is empty or out of the table: "
				    "NCCL_IB_GID_INDEX (or --gid-index) names the wrong entry "
				    "('rdmans gids' lists them)",
				    idx, dev, port);
	inet_ntop(AF_INET6, e.gid.raw, gid, sizeof(gid));
	if (e.gid_type != IBV_GID_TYPE_ROCE_V2)
		return rn_error_set(
			err, EADDRNOTAVAIL,
			"GID index %d of %s port %u (%s) is not a RoCE v2 GID: NCCL and "
			"rdma_cm connect through RoCE v2; name the RoCE v2 entry of the "
			"same address ('rdmans gids')",
			idx, dev, port, gid);
	if (memcmp(e.gid.raw, v4mapped, 12) == 0) {
		if (!inet_ntop(AF_INET, e.gid.raw + 12, buf, (socklen_t)len))
			return rn_error_errno(err, errno, "GID %s", gid);
		return 0;
	}
	if (e.gid.raw[0] == 0xfe && (e.gid.raw[1] & 0xc0) == 0x80)
		return rn_error_set(err, EADDRNOTAVAIL,
				    "GID index %d of %s port %u is the link-local %s: NCCL needs "
				    "the GID of the pod's routable address ('rdmans gids')",
				    idx, dev, port, gid);
	if (rn_strscpy(buf, len, gid) < 0)
		return rn_error_set(err, ENAMETOOLONG, "GID %s", gid);
	return 0;
}

/* ---- one connection ---- */

struct cm_ev {
	enum rdma_cm_event_type type;
	int status;
	struct rdma_cm_id *id;
	uint8_t data[256];
	size_t len;
};

struct ping {
	const struct rn_ping_opts *o;
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen, *listen4, *id; /* listen4: 0.0.0.0 beside [::] */
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	bool qp;
	uint8_t *buf; /* [0, len): recv; [len, 2len): send; [2len, 3len): written by the peer */
	size_t len;
	struct rn_ping_wire mine, theirs;
	uint64_t sends, recvs, writes; /* completions so far */
	const char *peer; /* for messages */
	unsigned timeout_ms;
};

static void conn_close(struct ping *p)
{
	if (p->qp)
		rdma_destroy_qp(p->id);
	p->qp = false;
	if (p->mr)
		ibv_dereg_mr(p->mr);
	p->mr = NULL;
	if (p->cq)
		ibv_destroy_cq(p->cq);
	p->cq = NULL;
	if (p->pd)
		ibv_dealloc_pd(p->pd);
	p->pd = NULL;
	if (p->id)
		rdma_destroy_id(p->id);
	p->id = NULL;
	free(p->buf);
	p->buf = NULL;
	p->sends = p->recvs = p->writes = 0;
}

static void ping_free(struct ping *p)
{
	conn_close(p);
	if (p->listen)
		rdma_destroy_id(p->listen);
	if (p->listen4)
		rdma_destroy_id(p->listen4);
	if (p->ch)
		rdma_destroy_event_channel(p->ch);
}

static const char *event_name(enum rdma_cm_event_type t)
{
	return rdma_event_str(t);
}

/* Next CM event within timeout_ms (-1: none), copied and acknowledged. */
static int next_event(struct ping *p, int timeout_ms, struct cm_ev *out, const char *step,
		      struct rn_error *err)
{
	struct pollfd pfd = { .fd = p->ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;
	uint64_t deadline = now_ns() + (uint64_t)(timeout_ms < 0 ? 0 : timeout_ms) * 1000000u;

	for (;;) {
		int left = timeout_ms < 0 ? -1 : (int)((deadline - now_ns()) / 1000000u);
		int r;

		if (timeout_ms >= 0 && now_ns() >= deadline)
			left = 0;
		r = poll(&pfd, 1, left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return rn_error_errno(err, errno, "%s: poll", step);
		if (r == 0)
			return rn_error_set(err, ETIMEDOUT, "%s: no answer from %s within %.1f s",
					    step, p->peer, timeout_ms / 1000.0);
		if (rdma_get_cm_event(p->ch, &ev) != 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			return rn_error_errno(err, errno, "%s: rdma_get_cm_event", step);
		}
		break;
	}
	out->type = ev->event;
	out->status = ev->status;
	out->id = ev->id;
	out->len = 0;
	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST || ev->event == RDMA_CM_EVENT_ESTABLISHED ||
	    ev->event == RDMA_CM_EVENT_REJECTED) {
		out->len = ev->param.conn.private_data_len;
		if (out->len > sizeof(out->data))
			out->len = sizeof(out->data);
		if (ev->param.conn.private_data && out->len)
			memcpy(out->data, ev->param.conn.private_data, out->len);
		else
			out->len = 0;
	}
	rdma_ack_cm_event(ev);
	return 0;
}

/* The failure an event other than the awaited one names. */
static int event_error(struct ping *p, struct cm_ev *ev, const char *step, struct rn_error *err)
{
	switch (ev->type) {
	case RDMA_CM_EVENT_ADDR_ERROR:
		if (ev->status == -ENODEV)
			return no_device(step, err);
		return rn_error_set(err, EHOSTUNREACH,
				    "%s: %s is unreachable: no RDMA device here has a route to it, "
				    "or no host answered its neighbour lookup (%s)",
				    step, p->peer, strerror(-ev->status));
	case RDMA_CM_EVENT_ROUTE_ERROR:
		return rn_error_set(err, EHOSTUNREACH, "%s: no RDMA route to %s (%s)", step,
				    p->peer, strerror(-ev->status));
	case RDMA_CM_EVENT_UNREACHABLE:
		return rn_error_set(err, EHOSTUNREACH,
				    "%s: %s is unreachable over RDMA: its address answers but no "
				    "RDMA device there answered the connection request (its "
				    "device or GID is not on that address, or RoCE packets are "
				    "dropped)",
				    step, p->peer);
	case RDMA_CM_EVENT_REJECTED:
		if (ev->len > 0 && ev->len < sizeof(ev->data) && ev->data[0] == '!') {
			ev->data[ev->len] = 0;
			return rn_error_set(err, ECONNREFUSED, "%s: the server at %s refused: %s",
					    step, p->peer, (const char *)ev->data + 1);
		}
		return rn_error_set(err, ECONNREFUSED,
				    "%s: %s rejected the connection: nothing listens on port %u "
				    "there (start 'rdmans ping --server' on it; status %d)",
				    step, p->peer, p->o->tcp_port ? p->o->tcp_port : RN_PING_PORT,
				    ev->status);
	case RDMA_CM_EVENT_CONNECT_ERROR:
		return rn_error_set(err, ECONNRESET, "%s: the connection to %s failed (%s)", step,
				    p->peer, strerror(ev->status < 0 ? -ev->status : EIO));
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_TIMEWAIT_EXIT:
		return rn_error_set(err, ECONNRESET, "%s: %s disconnected", step, p->peer);
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		return rn_error_set(err, ENODEV, "%s: the RDMA device went away", step);
	default:
		return rn_error_set(err, EPROTO, "%s: unexpected rdma_cm event %s (status %d)",
				    step, event_name(ev->type), ev->status);
	}
}

/* Waits for `want`; any other event is the failure it names. */
static int expect_event(struct ping *p, enum rdma_cm_event_type want, const char *step,
			struct cm_ev *ev, struct rn_error *err)
{
	int r = next_event(p, (int)p->timeout_ms + 500, ev, step, err);

	if (r < 0)
		return r;
	return ev->type == want ? 0 : event_error(p, ev, step, err);
}

static int make_channel(struct ping *p, struct rn_error *err)
{
	int fl;

	if (access(RDMA_CM_NODE, F_OK) != 0)
		return no_device("cannot use rdma_cm", err);
	p->ch = rdma_create_event_channel();
	if (!p->ch) {
		if (errno == ENODEV || errno == ENOENT || errno == ENXIO)
			return no_device("cannot use rdma_cm", err);
		return rn_error_errno(err, errno, "cannot open " RDMA_CM_NODE);
	}
	fl = fcntl(p->ch->fd, F_GETFL);
	if (fl < 0 || fcntl(p->ch->fd, F_SETFL, fl | O_NONBLOCK) < 0 ||
	    fcntl(p->ch->fd, F_SETFD, FD_CLOEXEC) < 0)
		return rn_error_errno(err, errno, "rdma_cm event channel");
	return 0;
}

/* PD, CQ, QP and the registered buffer on id's device, sized for w. */
static int make_qp(struct ping *p, struct rdma_cm_id *id, const struct rn_ping_wire *w,
		   struct rn_error *err)
{
	struct ibv_qp_init_attr qa;
	const char *dev;

	if (!id->verbs)
		return no_device("rdma_cm found no verbs device", err);
	dev = ibv_get_device_name(id->verbs->device);
	if (p->o->dev && strcmp(dev, p->o->dev) != 0)
		return rn_error_set(err, ENODEV,
				    "rdma_cm reaches %s through %s, not %s: the address belongs to "
				    "another device (give the GID index of %s's own address)",
				    p->peer, dev, p->o->dev, p->o->dev);
	p->len = w->lat_size > w->bw_size ? w->lat_size : w->bw_size;
	p->buf = calloc(3, p->len);
	if (!p->buf)
		return rn_error_set(err, ENOMEM, "out of memory");
	p->pd = ibv_alloc_pd(id->verbs);
	if (!p->pd)
		return verbs_fail(errno, "allocate a protection domain", dev, 0, err);
	p->cq = ibv_create_cq(id->verbs, 2 * QDEPTH + 8, NULL, NULL, 0);
	if (!p->cq)
		return verbs_fail(errno, "create a completion queue", dev, 0, err);
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = qa.recv_cq = p->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = QDEPTH;
	qa.cap.max_recv_wr = QDEPTH;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	if (rdma_create_qp(id, p->pd, &qa) != 0)
		return verbs_fail(errno, "create an RC queue pair", dev, 0, err);
	p->qp = true;
	p->mr = ibv_reg_mr(p->pd, p->buf, 3 * p->len,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!p->mr)
		return verbs_fail(errno, "register the ping buffer", dev, 3 * p->len, err);
	p->mine = *w;
	p->mine.addr = (uint64_t)(uintptr_t)(p->buf + 2 * p->len);
	p->mine.rkey = p->mr->rkey;
	p->mine.len = (uint32_t)p->len;
	return 0;
}

static int post_recv(struct ping *p, struct rn_error *err)
{
	struct ibv_sge sge = { .addr = (uintptr_t)p->buf,
			       .length = (uint32_t)p->len,
			       .lkey = p->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = WR_RECV, .sg_list = &sge, .num_sge = 1 }, *bad;
	int r = ibv_post_recv(p->id->qp, &wr, &bad);

	return r ? rn_error_errno(err, r, "ibv_post_recv") : 0;
}

static int post(struct ping *p, enum ibv_wr_opcode op, uint32_t len, struct rn_error *err)
{
	struct ibv_sge sge = { .addr = (uintptr_t)(p->buf + p->len),
			       .length = len,
			       .lkey = p->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = op == IBV_WR_SEND ? WR_SEND : WR_WRITE,
				  .sg_list = &sge,
				  .num_sge = 1,
				  .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED },
			   *bad;
	int r;

	if (op == IBV_WR_RDMA_WRITE) {
		wr.wr.rdma.remote_addr = p->theirs.addr;
		wr.wr.rdma.rkey = p->theirs.rkey;
	}
	r = ibv_post_send(p->id->qp, &wr, &bad);
	return r ? rn_error_errno(err, r, "ibv_post_send") : 0;
}

/* Polls the CQ until *counter reaches target or the deadline passes. */
static int wait_count(struct ping *p, const uint64_t *counter, uint64_t target, uint64_t deadline,
		      const char *step, struct rn_error *err)
{
	struct ibv_wc wc[16];
	unsigned spins = 0;

	while (*counter < target) {
		int n = ibv_poll_cq(p->cq, 16, wc);

		if (n < 0)
			return rn_error_set(err, EIO, "%s: ibv_poll_cq failed", step);
		for (int i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS) {
				int e = wc[i].status == IBV_WC_RETRY_EXC_ERR ||
							wc[i].status == IBV_WC_RNR_RETRY_EXC_ERR
						? ECONNRESET
						: EIO;

				return rn_error_set(err, e,
						    "%s: a work request failed: %s (%s stopped "
						    "answering?)",
						    step, ibv_wc_status_str(wc[i].status), p->peer);
			}
			if (wc[i].wr_id == WR_SEND)
				p->sends++;
			else if (wc[i].wr_id == WR_RECV)
				p->recvs++;
			else
				p->writes++;
		}
		if (n == 0 && (++spins & 1023) == 0 && now_ns() > deadline)
			return rn_error_set(err, ETIMEDOUT, "%s: %s went silent for %.1f s", step,
					    p->peer, p->timeout_ms / 1000.0);
	}
	return 0;
}

static uint64_t deadline_in(const struct ping *p)
{
	return now_ns() + (uint64_t)p->timeout_ms * 1000000u;
}

/* Waits until the last byte of the buffer the peer writes into is `seq`. */
static int wait_byte(struct ping *p, uint8_t seq, const char *step, struct rn_error *err)
{
	/* the peer writes lat_size bytes at the start: their last byte is the one to watch */
	volatile uint8_t *b = p->buf + 2 * p->len + p->mine.lat_size - 1;
	uint64_t deadline = deadline_in(p);
	unsigned spins = 0;

	while (*b != seq)
		if ((++spins & 4095) == 0 && now_ns() > deadline)
			return rn_error_set(err, ETIMEDOUT, "%s: %s went silent for %.1f s", step,
					    p->peer, p->timeout_ms / 1000.0);
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void stats(uint64_t *rtt, size_t n, struct rn_ping_stats *s)
{
	qsort(rtt, n, sizeof(*rtt), cmp_u64);
	s->p50_us = rtt[(n - 1) * 50 / 100] / 2000.0;
	s->p99_us = rtt[(n - 1) * 99 / 100] / 2000.0;
}

/* The client's side of the three tests. */
static int client_run(struct ping *p, struct rn_ping_result *res, struct rn_error *err)
{
	const struct rn_ping_wire *w = &p->mine;
	_cleanup_free_ uint64_t *rtt = calloc(w->lat_count, sizeof(uint64_t));
	uint64_t t0, posted = 0;
	int r;

	if (!rtt)
		return rn_error_set(err, ENOMEM, "out of memory");
	/* 1. SEND ping-pong: the server echoes each message */
	for (uint32_t i = 0; i < w->lat_count; i++) {
		t0 = now_ns();
		r = post_recv(p, err);
		if (r == 0)
			r = post(p, IBV_WR_SEND, w->lat_size, err);
		if (r == 0)
			r = wait_count(p, &p->recvs, i + 1u, deadline_in(p), "SEND ping-pong", err);
		if (r == 0)
			r = wait_count(p, &p->sends, i + 1u, deadline_in(p), "SEND ping-pong", err);
		if (r < 0)
			return r;
		rtt[i] = now_ns() - t0;
	}
	stats(rtt, w->lat_count, &res->send);
	/* 2. RDMA WRITE ping-pong: each side writes the other's buffer, the last byte says which */
	for (uint32_t i = 0; i < w->lat_count; i++) {
		uint8_t seq = (uint8_t)(i % 255 + 1);

		t0 = now_ns();
		p->buf[p->len + w->lat_size - 1] = seq;
		r = post(p, IBV_WR_RDMA_WRITE, w->lat_size, err);
		if (r == 0)
			r = wait_byte(p, seq, "RDMA WRITE ping-pong", err);
		if (r == 0)
			r = wait_count(p, &p->writes, i + 1u, deadline_in(p),
				       "RDMA WRITE ping-pong", err);
		if (r < 0)
			return r;
		rtt[i] = now_ns() - t0;
	}
	stats(rtt, w->lat_count, &res->write);
	/* 3. bandwidth: bw_count RDMA WRITEs, QDEPTH in flight */
	t0 = now_ns();
	p->writes = 0;
	while (p->writes < w->bw_count) {
		while (posted < w->bw_count && posted - p->writes < QDEPTH) {
			r = post(p, IBV_WR_RDMA_WRITE, w->bw_size, err);
			if (r < 0)
				return r;
			posted++;
		}
		r = wait_count(p, &p->writes, p->writes + 1, deadline_in(p), "RDMA WRITE stream",
			       err);
		if (r < 0)
			return r;
	}
	t0 = now_ns() - t0;
	res->bw_mib_s = (double)w->bw_count * w->bw_size / (1 << 20) / (t0 / 1e9);
	res->bw_gbit_s = (double)w->bw_count * w->bw_size * 8 / t0;
	/* 4. done: one SEND the server answers */
	r = post_recv(p, err);
	if (r == 0)
		r = post(p, IBV_WR_SEND, 1, err);
	if (r == 0)
		r = wait_count(p, &p->recvs, w->lat_count + 1u, deadline_in(p), "end", err);
	return r;
}

static int server_run(struct ping *p, struct rn_error *err)
{
	const struct rn_ping_wire *w = &p->mine;
	uint64_t bw_ms;
	int r;

	/* one receive was posted before the accept */
	for (uint32_t i = 0; i < w->lat_count; i++) {
		r = wait_count(p, &p->recvs, i + 1u, deadline_in(p), "SEND ping-pong", err);
		if (r == 0)
			r = post_recv(p, err);
		if (r == 0)
			r = post(p, IBV_WR_SEND, w->lat_size, err);
		if (r == 0)
			r = wait_count(p, &p->sends, i + 1u, deadline_in(p), "SEND ping-pong", err);
		if (r < 0)
			return r;
	}
	for (uint32_t i = 0; i < w->lat_count; i++) {
		uint8_t seq = (uint8_t)(i % 255 + 1);

		r = wait_byte(p, seq, "RDMA WRITE ping-pong", err);
		p->buf[p->len + w->lat_size - 1] = seq;
		if (r == 0)
			r = post(p, IBV_WR_RDMA_WRITE, w->lat_size, err);
		if (r == 0)
			r = wait_count(p, &p->writes, i + 1u, deadline_in(p),
				       "RDMA WRITE ping-pong", err);
		if (r < 0)
			return r;
	}
	/*
	 * The stream needs nothing from us: wait for its end as long as 1 MiB/s
	 * takes, but never more than 10 minutes, whatever the hello asked for
	 * (the server serves one client at a time).
	 */
	bw_ms = (uint64_t)w->bw_count * w->bw_size / (1u << 20) * 1000u;
	if (bw_ms > 600000u)
		bw_ms = 600000u;
	r = wait_count(p, &p->recvs, w->lat_count + 1u, deadline_in(p) + bw_ms * 1000000u,
		       "RDMA WRITE stream", err);
	if (r == 0)
		r = post(p, IBV_WR_SEND, 1, err);
	if (r == 0)
		r = wait_count(p, &p->sends, w->lat_count + 1u, deadline_in(p), "end", err);
	return r;
}

static void fill_result(const struct ping *p, struct rdma_cm_id *id, struct rn_ping_result *res)
{
	res->w = p->mine;
	res->port = id->port_num;
	res->gid_index = p->o->gid_index;
	if (id->verbs)
		snprintf(res->dev, sizeof(res->dev), "%s", ibv_get_device_name(id->verbs->device));
	addr_text(rdma_get_local_addr(id), res->local, sizeof(res->local));
	addr_text(rdma_get_peer_addr(id), res->peer, sizeof(res->peer));
}

static void disconnect(struct ping *p)
{
	struct cm_ev ev;
	struct rn_error ignore = { 0 };

	if (!p->id || rdma_disconnect(p->id) != 0)
		return;
	/* DISCONNECTED comes within the CM's timeout; do not wait for more than a second */
	(void)next_event(p, 1000, &ev, "disconnect", &ignore);
}

/* The address to bind or to resolve from: GID index gid_index of dev, or NULL. */
static int source_addr(const struct rn_ping_opts *o, uint16_t port, struct sockaddr_storage *ss,
		       bool *have, struct rn_error *err)
{
	char a[INET6_ADDRSTRLEN + 1];
	int r;

	*have = false;
	if (o->gid_index < 0)
		return 0;
	if (!o->dev)
		return rn_error_set(err, EINVAL, "a GID index needs a device (--device)");
	r = rn_ping_gid_addr(o->dev, o->port ? o->port : 1, o->gid_index, a, sizeof(a), err);
	if (r < 0)
		return r;
	r = parse_addr(a, port, ss, err);
	*have = r == 0;
	return r;
}

static void defaults(const struct rn_ping_opts *o, struct rn_ping_wire *w)
{
	memset(w, 0, sizeof(*w));
	w->lat_size = o->lat_size ? o->lat_size : 64;
	w->lat_count = o->lat_count ? o->lat_count : 1000;
	w->bw_size = o->bw_size ? o->bw_size : 65536;
	w->bw_count = o->bw_count ? o->bw_count : 1000;
	w->len = w->lat_size > w->bw_size ? w->lat_size : w->bw_size;
}

/*
 * rdma_resolve_addr, asked again each RESOLVE_TRY_MS until the timeout. The
 * kernel looks at a pending neighbour again only when a neighbour update
 * reaches it or at the request's own deadline (drivers/infiniband/core/addr.c);
 * soft-RoCE pods on 7.2 were seen to miss the update, so that one 30 s request
 * waited out its 30 s for a peer whose ARP answer had come at once.
 */
static int resolve_addr(struct ping *p, struct sockaddr *src, struct sockaddr *dst,
			struct rn_error *err)
{
	const char *step = "resolving the address";
	uint64_t deadline = now_ns() + (uint64_t)p->timeout_ms * 1000000u;

	for (;;) {
		uint64_t now = now_ns();
		unsigned left = now < deadline ? (unsigned)((deadline - now) / 1000000u) : 0;
		unsigned try_ms = left < RESOLVE_TRY_MS ? left : RESOLVE_TRY_MS;
		struct cm_ev ev;
		int r;

		if (rdma_resolve_addr(p->id, src, dst, try_ms ? (int)try_ms : 1) != 0) {
			if (errno == ENODEV)
				return no_device(step, err);
			if (errno == EADDRNOTAVAIL)
				return rn_error_set(err, EADDRNOTAVAIL,
						    "the source address (GID index %d of %s) is "
						    "not an address of this netns",
						    p->o->gid_index, p->o->dev ? p->o->dev : "?");
			return rn_error_set(err, errno == ENETUNREACH ? EHOSTUNREACH : errno,
					    "cannot resolve %s: %s", p->peer, strerror(errno));
		}
		/* the kernel answers within try_ms; a loaded machine may hand it over late */
		r = next_event(p, (int)(left > try_ms ? left : try_ms) + 500, &ev, step, err);
		if (r < 0)
			return r;
		if (ev.type == RDMA_CM_EVENT_ADDR_RESOLVED)
			return 0;
		if (ev.type != RDMA_CM_EVENT_ADDR_ERROR || ev.status != -ETIMEDOUT ||
		    now_ns() >= deadline)
			return event_error(p, &ev, step, err);
	}
}

int rn_ping_client(const struct rn_ping_opts *o, struct rn_ping_result *res, struct rn_error *err)
{
	_cleanup_(ping_free) struct ping p = { .o = o, .peer = o->peer };
	struct sockaddr_storage dst, src;
	struct rdma_conn_param cp;
	uint8_t hello[RN_PING_WIRE_LEN];
	struct rn_ping_wire w;
	struct cm_ev ev;
	bool have_src;
	uint16_t port = o->tcp_port ? o->tcp_port : RN_PING_PORT;
	int r;

	memset(res, 0, sizeof(*res));
	p.timeout_ms = o->timeout_ms ? o->timeout_ms : DEFAULT_TIMEOUT_MS;
	defaults(o, &w);
	if (w.lat_size > RN_PING_MAX_SIZE || w.bw_size > RN_PING_MAX_SIZE ||
	    w.lat_count > RN_PING_MAX_COUNT || w.bw_count > RN_PING_MAX_COUNT)
		return rn_error_set(err, EINVAL, "sizes go up to %u bytes, counts up to %u",
				    RN_PING_MAX_SIZE, RN_PING_MAX_COUNT);
	r = parse_addr(o->peer, port, &dst, err);
	if (r < 0)
		return r;
	r = source_addr(o, 0, &src, &have_src, err);
	if (r < 0)
		return r;
	if (have_src && src.ss_family != dst.ss_family)
		return rn_error_set(err, EADDRNOTAVAIL,
				    "GID index %d of %s is an %s address, the peer %s is %s: name "
				    "the GID index of the %s address",
				    o->gid_index, o->dev,
				    src.ss_family == AF_INET ? "IPv4" : "IPv6", o->peer,
				    dst.ss_family == AF_INET ? "IPv4" : "IPv6",
				    dst.ss_family == AF_INET ? "IPv4" : "IPv6");
	r = make_channel(&p, err);
	if (r < 0)
		return r;
	if (rdma_create_id(p.ch, &p.id, NULL, RDMA_PS_TCP) != 0)
		return errno == ENODEV ? no_device("rdma_create_id", err)
				       : rn_error_errno(err, errno, "rdma_create_id");
	r = resolve_addr(&p, have_src ? (struct sockaddr *)&src : NULL, (struct sockaddr *)&dst,
			 err);
	if (r < 0)
		return r;
	if (rdma_resolve_route(p.id, (int)p.timeout_ms) != 0)
		return rn_error_errno(err, errno, "rdma_resolve_route to %s", o->peer);
	r = expect_event(&p, RDMA_CM_EVENT_ROUTE_RESOLVED, "resolving the route", &ev, err);
	if (r < 0)
		return r;
	r = make_qp(&p, p.id, &w, err);
	if (r < 0)
		return r;
	rn_ping_wire_encode(&p.mine, hello);
	memset(&cp, 0, sizeof(cp));
	cp.private_data = hello;
	cp.private_data_len = sizeof(hello);
	cp.responder_resources = cp.initiator_depth = 1;
	cp.retry_count = 7;
	cp.rnr_retry_count = 7;
	if (rdma_connect(p.id, &cp) != 0)
		return rn_error_errno(err, errno, "rdma_connect to %s", o->peer);
	r = expect_event(&p, RDMA_CM_EVENT_ESTABLISHED, "connecting", &ev, err);
	if (r < 0)
		return r;
	r = rn_ping_wire_decode(ev.data, ev.len, &p.theirs, err);
	if (r < 0)
		return rn_error_wrap(err, "%s", o->peer);
	if (p.theirs.lat_size != w.lat_size || p.theirs.bw_size != w.bw_size ||
	    p.theirs.lat_count != w.lat_count || p.theirs.bw_count != w.bw_count)
		return rn_error_set(err, EPROTO, "%s answered for another test than it was asked",
				    o->peer);
	fill_result(&p, p.id, res);
	r = client_run(&p, res, err);
	disconnect(&p);
	return r;
}

static void reject(struct rdma_cm_id *id, const char *why)
{
	char msg[56];

	snprintf(msg, sizeof(msg), "!%s", why);
	(void)rdma_reject(id, msg, (uint8_t)(strlen(msg) + 1));
}

/* One client, from its CONNECT_REQUEST to its disconnect. */
static int serve_one(struct ping *p, struct cm_ev *req, struct rn_ping_result *res,
		     struct rn_error *err)
{
	struct rdma_conn_param cp;
	uint8_t reply[RN_PING_WIRE_LEN];
	struct rn_ping_wire w;
	struct cm_ev ev;
	char peer[INET6_ADDRSTRLEN + 8];
	int r;

	p->id = req->id;
	addr_text(rdma_get_peer_addr(p->id), peer, sizeof(peer));
	p->peer = peer;
	r = rn_ping_wire_decode(req->data, req->len, &w, err);
	if (r < 0) {
		reject(p->id, "not an rdmans ping hello of this version");
		return rn_error_wrap(err, "client %s", peer);
	}
	r = make_qp(p, p->id, &w, err);
	if (r < 0) {
		reject(p->id, "the server cannot set up its side");
		return rn_error_wrap(err, "client %s", peer);
	}
	p->theirs = w;
	r = post_recv(p, err);
	if (r < 0)
		return r;
	rn_ping_wire_encode(&p->mine, reply);
	memset(&cp, 0, sizeof(cp));
	cp.private_data = reply;
	cp.private_data_len = sizeof(reply);
	cp.responder_resources = cp.initiator_depth = 1;
	cp.rnr_retry_count = 7;
	if (rdma_accept(p->id, &cp) != 0)
		return rn_error_errno(err, errno, "rdma_accept of %s", peer);
	r = expect_event(p, RDMA_CM_EVENT_ESTABLISHED, "accepting", &ev, err);
	if (r < 0)
		return r;
	fill_result(p, p->id, res);
	r = server_run(p, err);
	if (r == 0)
		(void)next_event(p, (int)p->timeout_ms, &ev, "disconnect", err);
	rn_error_clear(err);
	return r;
}

/* A listening id on ss; afonly keeps a wildcard to its own family. */
static int listen_on(struct ping *p, struct rdma_cm_id **id, struct sockaddr_storage *ss,
		     bool afonly, uint16_t port, struct rn_error *err)
{
	int one = 1;

	if (rdma_create_id(p->ch, id, NULL, RDMA_PS_TCP) != 0)
		return errno == ENODEV ? no_device("rdma_create_id", err)
				       : rn_error_errno(err, errno, "rdma_create_id");
	if (afonly &&
	    rdma_set_option(*id, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, &one, sizeof(one)) != 0)
		return rn_error_errno(err, errno, "rdma_set_option AFONLY");
	if (rdma_bind_addr(*id, (struct sockaddr *)ss) != 0) {
		int e = errno;

		if (e == ENODEV)
			return no_device("binding the address", err);
		return rn_error_errno(err, e, "cannot bind port %u%s", port,
				      e == EADDRINUSE ? " (another server listens there)" : "");
	}
	if (rdma_listen(*id, 4) != 0)
		return rn_error_errno(err, errno, "rdma_listen");
	return 0;
}

int rn_ping_server(const struct rn_ping_opts *o, struct rn_ping_result *res, struct rn_error *err)
{
	_cleanup_(ping_free) struct ping p = { .o = o, .peer = "the client" };
	struct sockaddr_storage ss;
	bool have;
	uint16_t port = o->tcp_port ? o->tcp_port : RN_PING_PORT;
	unsigned served = 0;
	int r;

	memset(res, 0, sizeof(*res));
	p.timeout_ms = o->timeout_ms ? o->timeout_ms : DEFAULT_TIMEOUT_MS;
	r = source_addr(o, port, &ss, &have, err);
	if (r < 0)
		return r;
	r = make_channel(&p, err);
	if (r < 0)
		return r;
	if (have) {
		r = listen_on(&p, &p.listen, &ss, false, port, err);
	} else {
		/*
		 * One wildcard per family: an iWARP device listens with kernel
		 * TCP sockets, where [::] on it takes no IPv4 client.
		 */
		struct sockaddr_in6 any6 = { .sin6_family = AF_INET6, .sin6_port = htons(port) };
		struct sockaddr_in any4 = { .sin_family = AF_INET, .sin_port = htons(port) };

		memset(&ss, 0, sizeof(ss));
		memcpy(&ss, &any6, sizeof(any6));
		r = listen_on(&p, &p.listen, &ss, true, port, err);
		if (r == 0) {
			memset(&ss, 0, sizeof(ss));
			memcpy(&ss, &any4, sizeof(any4));
			r = listen_on(&p, &p.listen4, &ss, true, port, err);
		}
	}
	if (r < 0)
		return r;
	for (;;) {
		struct cm_ev ev;
		struct rn_error one = { 0 };

		p.peer = "the client";
		r = next_event(&p, o->idle_ms ? (int)o->idle_ms : -1, &ev, "waiting for a client",
			       err);
		if (r < 0)
			return r;
		if (ev.type != RDMA_CM_EVENT_CONNECT_REQUEST)
			continue;
		r = serve_one(&p, &ev, res, &one);
		conn_close(&p);
		if (r == 0)
			res->clients = ++served;
		if (o->served)
			o->served(o->arg, res, r, &one);
		if (o->once) {
			if (r < 0) {
				*err = one;
				return r;
			}
			return 0;
		}
	}
}
