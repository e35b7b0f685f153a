// SPDX-License-Identifier: Apache-2.0
/*
 * The move-out state machine of rdmans/attach.h (rn_attach_move_out, and
 * rn_attach_move_in which it undoes), without root and without a kernel:
 * the link, RDMA, netns and clock calls attach.c makes are replaced at link
 * time (-Wl,--wrap=SYMBOL, tests/unit/meson.build) by a small fake kernel
 * below. That kernel keeps netdevs and RDMA devices per network namespace,
 * brings a moved netdev down as the real one does, refuses duplicate names
 * with EEXIST, hands the devices of a destroyed netns back to the host
 * later (netdevs possibly as "devN"), can fail any call, and has a clock
 * that only usleep() advances: no result here depends on timing.
 *
 * Phases of a DEL: from the live pod (RDMA devices, then netdevs), at home
 * (restore name, alias, up/down; wait for the kernel), the hunt in other
 * netns after the wait, -EAGAIN when something is still missing.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "rdmans/attach.h"
#include "rdmans/attach_home.h"
#include "rdmans/attach_plan.h"
#include "rdmans/attach_state.h"
#include "rdmans/cni_state.h"
#include "rdmans/discover.h"
#include "rdmans/link.h"
#include "rdmans/move.h"
#include "rdmans/netns.h"
#include "rdmans/rdma_nl.h"
#include "rdmans/util.h"
#include "test.h"

/*
 * A kernel call attach.c makes that the fake does not replace (a new one,
 * say) must not reach the host's netdevs: the test runs in a network
 * namespace of its own (as root; another user cannot change netdevs).
 */
__attribute__((constructor)) static void own_netns(void)
{
	if (geteuid() == 0 && unshare(CLONE_NEWNET) < 0) {
		printf("Bail out! unshare(CLONE_NEWNET): %s\n", strerror(errno));
		exit(1);
	}
}

/* ---- the fake kernel ---- */

enum { NS_NONE, NS_HOME, NS_POD, NS_OTHER, NS_LIMBO /* in transit from a destroyed netns */ };

static const char *const ns_path[] = { "", "fake:home", "fake:pod", "fake:other", "" };

struct fake_link {
	int ns; /* NS_NONE: deleted */
	int ifindex;
	char name[IF_NAMESIZE];
	char alias[256];
	char mac[18];
	char kind[32];
	bool up;
	bool loopback;
	long back_at; /* NS_LIMBO: comes home at this time (ms), < 0 never */
	char back_name[IF_NAMESIZE]; /* ... under this name */
};

struct fake_rdma {
	int ns;
	char name[RN_RDMA_NAME_MAX];
	long back_at;
};

#define MAX_LINKS 12
#define MAX_RDMA 4
#define MAX_STEPS 32

static struct {
	struct fake_link links[MAX_LINKS];
	struct fake_rdma rdma[MAX_RDMA];
	bool pod_alive;
	bool rdma_kernel;
	int cur; /* the netns of the calling thread */
	int fd_ns[1024];
	long clock_ms;
	unsigned changes; /* moves, renames, alias and up/down changes */
	/* one fault: call number `fail_nth` of `fail_op` returns -fail_errno (0: every call) */
	const char *fail_op;
	int fail_nth, fail_errno, fail_calls;
	bool fail_fired;
	/* the step callback: its log, and the step number that stops the run (0 none) */
	char steps[MAX_STEPS][128];
	int n_steps, stop_at_step;
} W;

static int fault(const char *op, struct rn_error *err)
{
	if (!W.fail_op || strcmp(op, W.fail_op) != 0)
		return 0;
	if (++W.fail_calls != W.fail_nth && W.fail_nth != 0)
		return 0;
	W.fail_fired = true;
	return rn_error_set(err, W.fail_errno, "fake kernel: %s failed", op);
}

static void fail_next(const char *op, int nth, int errnum)
{
	W.fail_op = op;
	W.fail_nth = nth;
	W.fail_errno = errnum;
	W.fail_calls = 0;
	W.fail_fired = false;
}

static int ns_of(int fd)
{
	return fd >= 0 && fd < (int)RN_ARRAY_SIZE(W.fd_ns) ? W.fd_ns[fd] : NS_NONE;
}

static int open_ns(int ns, struct rn_error *err)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fd >= (int)RN_ARRAY_SIZE(W.fd_ns))
		return rn_error_errno(err, errno, "test: cannot open /dev/null");
	W.fd_ns[fd] = ns;
	return fd;
}

static struct fake_link *link_named(int ns, const char *name)
{
	for (size_t i = 0; i < MAX_LINKS; i++)
		if (W.links[i].ns == ns && strcmp(W.links[i].name, name) == 0)
			return &W.links[i];
	return NULL;
}

static struct fake_link *link_index(int ns, int ifindex)
{
	for (size_t i = 0; i < MAX_LINKS; i++)
		if (W.links[i].ns == ns && W.links[i].ifindex == ifindex)
			return &W.links[i];
	return NULL;
}

static struct fake_rdma *rdma_named(const char *name)
{
	for (size_t i = 0; i < MAX_RDMA; i++)
		if (W.rdma[i].ns != NS_NONE && strcmp(W.rdma[i].name, name) == 0)
			return &W.rdma[i];
	return NULL;
}

static int fill(const struct fake_link *f, struct rn_link *out)
{
	memset(out, 0, sizeof(*out));
	out->ifindex = f->ifindex;
	(void)rn_strscpy(out->name, sizeof(out->name), f->name);
	(void)rn_strscpy(out->alias, sizeof(out->alias), f->alias);
	(void)rn_strscpy(out->mac, sizeof(out->mac), f->mac);
	(void)rn_strscpy(out->kind, sizeof(out->kind), f->kind);
	out->mtu = 1500;
	out->up = f->up;
	out->flags = (f->up ? IFF_UP : 0) | (f->loopback ? IFF_LOOPBACK : 0);
	return 0;
}

int __wrap_rn_netns_open_self(struct rn_error *err);
int __wrap_rn_netns_open_self(struct rn_error *err)
{
	int r = fault("netns_open_self", err);

	return r < 0 ? r : open_ns(W.cur, err);
}

int __wrap_rn_netns_open_path(const char *path, struct rn_error *err);
int __wrap_rn_netns_open_path(const char *path, struct rn_error *err)
{
	for (int ns = NS_HOME; ns <= NS_OTHER; ns++)
		if (strcmp(path, ns_path[ns]) == 0 && (ns != NS_POD || W.pod_alive))
			return open_ns(ns, err);
	return rn_error_set(err, ENOENT, "test: no netns at %s", path);
}

int __wrap_rn_netns_same(int a, int b, struct rn_error *err);
int __wrap_rn_netns_same(int a, int b, struct rn_error *err)
{
	if (ns_of(a) == NS_NONE || ns_of(b) == NS_NONE)
		return rn_error_set(err, EBADF, "test: not a netns fd");
	return ns_of(a) == ns_of(b);
}

int __wrap_rn_netns_run(int nsfd, rn_netns_fn fn, void *arg, struct rn_error *err);
int __wrap_rn_netns_run(int nsfd, rn_netns_fn fn, void *arg, struct rn_error *err)
{
	int prev = W.cur, r;

	if (ns_of(nsfd) == NS_NONE)
		return rn_error_set(err, EBADF, "test: not a netns fd");
	W.cur = ns_of(nsfd);
	r = fn(arg, err);
	W.cur = prev;
	return r;
}

int __wrap_rn_netns_id(int nsfd, struct rn_netns_id *ret, struct rn_error *err);
int __wrap_rn_netns_id(int nsfd, struct rn_netns_id *ret, struct rn_error *err)
{
	if (ns_of(nsfd) == NS_NONE)
		return rn_error_set(err, EBADF, "test: not a netns fd");
	*ret = (struct rn_netns_id){ .dev = 4, .ino = (ino_t)ns_of(nsfd) };
	return 0;
}

int __wrap_rn_netns_list(struct rn_netns_entry **ret, size_t *ret_n, struct rn_error *err);
int __wrap_rn_netns_list(struct rn_netns_entry **ret, size_t *ret_n, struct rn_error *err)
{
	struct rn_netns_entry *e = calloc(3, sizeof(*e));
	size_t n = 0;

	if (!e)
		return rn_error_set(err, ENOMEM, "test: out of memory");
	for (int ns = NS_HOME; ns <= NS_OTHER; ns++) {
		if (ns == NS_POD && !W.pod_alive)
			continue;
		e[n].id = (struct rn_netns_id){ .dev = 4, .ino = (ino_t)ns };
		(void)rn_strscpy(e[n].path, sizeof(e[n].path), ns_path[ns]);
		e[n++].is_host = ns == NS_HOME;
	}
	*ret = e;
	*ret_n = n;
	return 0;
}

int __wrap_rn_link_by_name(const char *name, struct rn_link *out, struct rn_error *err);
int __wrap_rn_link_by_name(const char *name, struct rn_link *out, struct rn_error *err)
{
	const struct fake_link *f;
	int r = fault("link_by_name", err);

	if (r < 0)
		return r;
	f = link_named(W.cur, name);
	if (!f)
		return rn_error_set(err, ENODEV, "test: no netdev %s", name);
	return fill(f, out);
}

int __wrap_rn_link_by_index(int ifindex, struct rn_link *out, struct rn_error *err);
int __wrap_rn_link_by_index(int ifindex, struct rn_link *out, struct rn_error *err)
{
	const struct fake_link *f;
	int r = fault("link_by_index", err);

	if (r < 0)
		return r;
	f = link_index(W.cur, ifindex);
	if (!f)
		return rn_error_set(err, ENODEV, "test: no netdev %d", ifindex);
	return fill(f, out);
}

int __wrap_rn_link_by_mac(const char *mac, struct rn_link *out, struct rn_error *err);
int __wrap_rn_link_by_mac(const char *mac, struct rn_link *out, struct rn_error *err)
{
	const struct fake_link *found = NULL;
	int r = fault("link_by_mac", err);

	if (r < 0)
		return r;
	for (size_t i = 0; i < MAX_LINKS; i++) {
		if (W.links[i].ns != W.cur || strcasecmp(W.links[i].mac, mac) != 0)
			continue;
		if (found)
			return rn_error_set(err, ENOTUNIQ, "test: several netdevs with MAC %s",
					    mac);
		found = &W.links[i];
	}
	if (!found)
		return rn_error_set(err, ENODEV, "test: no netdev with MAC %s", mac);
	return fill(found, out);
}

/* The netdev `op` changes: ifindex, named `name`, in the calling thread's netns. */
static int link_to_change(const char *op, int ifindex, const char *name, struct fake_link **ret,
			  struct rn_error *err)
{
	int r = fault(op, err);

	if (r < 0)
		return r;
	*ret = link_index(W.cur, ifindex);
	if (!*ret || strcmp((*ret)->name, name) != 0)
		return rn_error_set(err, ENODEV, "test: no netdev %s (%d) here for %s", name,
				    ifindex, op);
	return 0;
}

int __wrap_rn_link_move(int ifindex, const char *name, int nsfd, const char *new_name,
			struct rn_error *err);
int __wrap_rn_link_move(int ifindex, const char *name, int nsfd, const char *new_name,
			struct rn_error *err)
{
	struct fake_link *f;
	const char *final = new_name ? new_name : name;
	int r = link_to_change("link_move", ifindex, name, &f, err);

	if (r < 0)
		return r;
	if (ns_of(nsfd) == NS_NONE)
		return rn_error_set(err, EBADF, "test: not a netns fd");
	if (link_named(ns_of(nsfd), final))
		return rn_error_set(err, EEXIST, "test: %s exists there", final);
	f->ns = ns_of(nsfd);
	(void)rn_strscpy(f->name, sizeof(f->name), final);
	f->up = false; /* dev_change_net_namespace() closes the device */
	W.changes++;
	return 0;
}

/*
 * The move and, in the same request, the alias and up state. A fault of
 * "link_move_rest" is a kernel that moved and renamed, then refused the rest.
 */
int __wrap_rn_link_move_to(int ifindex, const char *name, int nsfd,
			   const struct rn_link_move_to *to, bool *ret_partial,
			   struct rn_error *err);
int __wrap_rn_link_move_to(int ifindex, const char *name, int nsfd,
			   const struct rn_link_move_to *to, bool *ret_partial,
			   struct rn_error *err)
{
	const char *final = to->name ? to->name : name;
	struct rn_error ignored = { 0 };
	struct fake_link *f;
	int r = __wrap_rn_link_move(ifindex, name, nsfd, to->name, err);

	*ret_partial = false;
	if (r < 0 || (!to->alias && !to->up))
		return r;
	f = link_named(ns_of(nsfd), final);
	if (fault("link_move_rest", &ignored) < 0) {
		*ret_partial = true;
		return 0;
	}
	if (to->alias)
		(void)rn_strscpy(f->alias, sizeof(f->alias), to->alias);
	f->up = to->up;
	return 0;
}

int __wrap_rn_link_rename(int ifindex, const char *name, const char *new_name,
			  struct rn_error *err);
int __wrap_rn_link_rename(int ifindex, const char *name, const char *new_name, struct rn_error *err)
{
	struct fake_link *f;
	int r = link_to_change("link_rename", ifindex, name, &f, err);

	if (r < 0)
		return r;
	if (f->up)
		return rn_error_set(err, EBUSY, "test: %s is up", name); /* as dev_change_name() */
	if (link_named(W.cur, new_name))
		return rn_error_set(err, EEXIST, "test: %s exists", new_name);
	(void)rn_strscpy(f->name, sizeof(f->name), new_name);
	W.changes++;
	return 0;
}

int __wrap_rn_link_set_alias(int ifindex, const char *name, const char *alias,
			     struct rn_error *err);
int __wrap_rn_link_set_alias(int ifindex, const char *name, const char *alias, struct rn_error *err)
{
	struct fake_link *f;
	int r = link_to_change("link_set_alias", ifindex, name, &f, err);

	if (r < 0)
		return r;
	(void)rn_strscpy(f->alias, sizeof(f->alias), alias);
	W.changes++;
	return 0;
}

int __wrap_rn_link_set_up(int ifindex, const char *name, bool up, struct rn_error *err);
int __wrap_rn_link_set_up(int ifindex, const char *name, bool up, struct rn_error *err)
{
	struct fake_link *f;
	int r = link_to_change("link_set_up", ifindex, name, &f, err);

	if (r < 0)
		return r;
	f->up = up;
	W.changes++;
	return 0;
}

static struct rn_rdma *const fake_rdma_sock = (struct rn_rdma *)&W;

int __wrap_rn_rdma_open(struct rn_rdma **ret, struct rn_error *err);
int __wrap_rn_rdma_open(struct rn_rdma **ret, struct rn_error *err)
{
	int r = fault("rdma_open", err);

	if (r < 0)
		return r;
	if (!W.rdma_kernel)
		return rn_error_set(err, EPROTONOSUPPORT, "test: no RDMA netlink");
	*ret = fake_rdma_sock;
	return 0;
}

void __wrap_rn_rdma_close(struct rn_rdma *rdma);
void __wrap_rn_rdma_close(struct rn_rdma *rdma)
{
	CHECK(rdma == fake_rdma_sock);
}

int __wrap_rn_rdma_netns_mode_get(struct rn_rdma *rdma, bool *exclusive, struct rn_error *err);
int __wrap_rn_rdma_netns_mode_get(struct rn_rdma *rdma, bool *exclusive, struct rn_error *err)
{
	(void)err;
	CHECK(rdma == fake_rdma_sock);
	*exclusive = true;
	return 0;
}

static int dump_ns(int ns, struct rn_rdma_devs *out, struct rn_error *err)
{
	memset(out, 0, sizeof(*out));
	out->devs = calloc(MAX_RDMA, sizeof(*out->devs));
	if (!out->devs)
		return rn_error_set(err, ENOMEM, "test: out of memory");
	for (size_t i = 0; i < MAX_RDMA; i++) {
		if (W.rdma[i].ns != ns)
			continue;
		out->devs[out->n].index = (uint32_t)i + 1;
		(void)rn_strscpy(out->devs[out->n++].name, RN_RDMA_NAME_MAX, W.rdma[i].name);
	}
	return 0;
}

int __wrap_rn_rdma_dev_dump(struct rn_rdma *rdma, struct rn_rdma_devs *out, struct rn_error *err);
int __wrap_rn_rdma_dev_dump(struct rn_rdma *rdma, struct rn_rdma_devs *out, struct rn_error *err)
{
	int r = fault("rdma_dev_dump", err);

	CHECK(rdma == fake_rdma_sock);
	return r < 0 ? r : dump_ns(W.cur, out, err);
}

int __wrap_rn_rdma_dump_in(int nsfd, struct rn_rdma_devs *out, struct rn_error *err);
int __wrap_rn_rdma_dump_in(int nsfd, struct rn_rdma_devs *out, struct rn_error *err)
{
	int r = fault("rdma_dump_in", err);

	if (r < 0)
		return r;
	if (!W.rdma_kernel)
		return rn_error_set(err, EPROTONOSUPPORT, "test: no RDMA netlink");
	return dump_ns(ns_of(nsfd), out, err);
}

/* In the calling thread's netns (W.cur), as the kernel's RDMA_NLDEV_CMD_SET with a netns fd. */
int __wrap_rn_rdma_dev_set_netns(struct rn_rdma *rdma, uint32_t index, const char *name, int nsfd,
				 struct rn_error *err);
int __wrap_rn_rdma_dev_set_netns(struct rn_rdma *rdma, uint32_t index, const char *name, int nsfd,
				 struct rn_error *err)
{
	struct fake_rdma *d = rdma_named(name);
	int r = fault("rdma_dev_set_netns", err);

	(void)index;
	CHECK(rdma == fake_rdma_sock);
	if (r < 0)
		return r;
	if (!d || d->ns != W.cur)
		return rn_error_set(err, ENODEV, "test: no RDMA device %s there", name);
	d->ns = ns_of(nsfd);
	W.changes++;
	return 0;
}

int __wrap_rn_discover_find(const char *name, struct rn_located_dev *out, bool *ret_exclusive,
			    struct rn_error *err);
int __wrap_rn_discover_find(const char *name, struct rn_located_dev *out, bool *ret_exclusive,
			    struct rn_error *err)
{
	const struct fake_rdma *d = rdma_named(name);
	int r = fault("discover_find", err);

	if (r < 0)
		return r;
	if (!d || d->ns == NS_LIMBO || (d->ns == NS_POD && !W.pod_alive))
		return rn_error_set(err, ENODEV, "test: RDMA device %s is nowhere", name);
	memset(out, 0, sizeof(*out));
	(void)rn_strscpy(out->dev.name, sizeof(out->dev.name), name);
	(void)rn_strscpy(out->netns.path, sizeof(out->netns.path), ns_path[d->ns]);
	if (ret_exclusive)
		*ret_exclusive = true;
	return 0;
}

/* The clock only moves when move_out sleeps; the kernel hands devices back meanwhile. */
int __real_clock_gettime(clockid_t clk, struct timespec *ts);
int __wrap_clock_gettime(clockid_t clk, struct timespec *ts);
int __wrap_clock_gettime(clockid_t clk, struct timespec *ts)
{
	if (clk != CLOCK_MONOTONIC)
		return __real_clock_gettime(clk, ts);
	ts->tv_sec = W.clock_ms / 1000;
	ts->tv_nsec = (W.clock_ms % 1000) * 1000000L;
	return 0;
}

int __wrap_usleep(useconds_t us);
int __wrap_usleep(useconds_t us)
{
	W.clock_ms += us / 1000;
	for (size_t i = 0; i < MAX_LINKS; i++) {
		struct fake_link *f = &W.links[i];

		if (f->ns != NS_LIMBO || f->back_at < 0 || f->back_at > W.clock_ms)
			continue;
		f->ns = NS_HOME;
		f->up = false; /* the kernel closes a netdev it moves */
		(void)rn_strscpy(f->name, sizeof(f->name), f->back_name);
	}
	for (size_t i = 0; i < MAX_RDMA; i++)
		if (W.rdma[i].ns == NS_LIMBO && W.rdma[i].back_at >= 0 &&
		    W.rdma[i].back_at <= W.clock_ms)
			W.rdma[i].ns = NS_HOME;
	return 0;
}

/* ---- the world the tests start from ---- */

#define MAC0 "02:00:00:00:00:a0"
#define MAC1 "02:00:00:00:00:a1"
#define MACV "02:00:00:00:00:b0"
#define TIMEOUT_MS 2000

static struct rn_attach_plan plan;

static struct fake_link *add_link(int ns, int ifindex, const char *name, const char *mac,
				  const char *kind, bool up)
{
	for (size_t i = 0; i < MAX_LINKS; i++) {
		struct fake_link *f = &W.links[i];

		if (f->ns != NS_NONE)
			continue;
		*f = (struct fake_link){ .ns = ns, .ifindex = ifindex, .up = up, .back_at = -1 };
		(void)rn_strscpy(f->name, sizeof(f->name), name);
		(void)rn_strscpy(f->mac, sizeof(f->mac), mac);
		(void)rn_strscpy(f->kind, sizeof(f->kind), kind);
		return f;
	}
	CHECK(!"too many fake links");
	return NULL;
}

static void add_rdma(int ns, const char *name)
{
	for (size_t i = 0; i < MAX_RDMA; i++)
		if (W.rdma[i].ns == NS_NONE) {
			W.rdma[i] = (struct fake_rdma){ .ns = ns, .back_at = -1 };
			(void)rn_strscpy(W.rdma[i].name, sizeof(W.rdma[i].name), name);
			return;
		}
	CHECK(!"too many fake RDMA devices");
}

static void plan_netdev(const char *name, const char *pod_name, const char *mac, const char *kind,
			int ifindex, bool was_up)
{
	struct rn_attach_netdev *nd = &plan.netdevs[plan.n_netdevs++];

	memset(nd, 0, sizeof(*nd));
	(void)rn_strscpy(nd->name, sizeof(nd->name), name);
	(void)rn_strscpy(nd->pod_name, sizeof(nd->pod_name), pod_name);
	(void)rn_strscpy(nd->mac, sizeof(nd->mac), mac);
	(void)rn_strscpy(nd->kind, sizeof(nd->kind), kind);
	nd->ifindex = ifindex;
	nd->was_up = was_up;
}

/*
 * The host before ADD: ens1f0 (up) and ens1f1 (down) are the two ports of
 * mlx5_0; ens1f0 goes in as net1, ens1f1 under its own name. Each netns has
 * its own lo.
 */
static void host_before_add(void)
{
	for (int fd = 0; fd < (int)RN_ARRAY_SIZE(W.fd_ns); fd++)
		if (W.fd_ns[fd] != NS_NONE)
			CHECK(!"a netns fd was left open");
	memset(&W, 0, sizeof(W));
	W.cur = NS_HOME;
	W.pod_alive = true;
	W.rdma_kernel = true;
	W.clock_ms = 1000000;
	add_link(NS_HOME, 1, "lo", "00:00:00:00:00:00", "", true)->loopback = true;
	add_link(NS_POD, 1, "lo", "00:00:00:00:00:00", "", true)->loopback = true;
	add_link(NS_OTHER, 1, "lo", "00:00:00:00:00:00", "", true)->loopback = true;
	add_link(NS_HOME, 11, "ens1f0", MAC0, "", true);
	add_link(NS_HOME, 12, "ens1f1", MAC1, "", false);
	add_rdma(NS_HOME, "mlx5_0");

	memset(&plan, 0, sizeof(plan));
	plan_netdev("ens1f0", "net1", MAC0, "", 11, true);
	plan_netdev("ens1f1", "ens1f1", MAC1, "", 12, false);
	plan.n_rdma = 1;
	(void)rn_strscpy(plan.rdma[0], RN_RDMA_NAME_MAX, "mlx5_0");
	plan.rdma_kernel = true;
	plan.exclusive = true;
}

static int step(void *arg, const char *what, struct rn_error *err)
{
	(void)arg;
	if (W.n_steps < MAX_STEPS)
		(void)rn_strscpy(W.steps[W.n_steps], sizeof(W.steps[0]), what);
	if (++W.n_steps == W.stop_at_step)
		return rn_error_set(err, EINTR, "stopped after: %s", what);
	return 0;
}

static void reset_steps(int stop_at)
{
	W.n_steps = 0;
	W.stop_at_step = stop_at;
}

/* Forgets the netns fds attach.c closed (its cleanup attributes); those left open are leaks. */
static void forget_closed_fds(void)
{
	for (int fd = 0; fd < (int)RN_ARRAY_SIZE(W.fd_ns); fd++)
		if (W.fd_ns[fd] != NS_NONE && fcntl(fd, F_GETFD) < 0)
			W.fd_ns[fd] = NS_NONE;
}

static int move_in(void)
{
	struct rn_error err = { 0 };
	int pod = open_ns(NS_POD, &err), r;
	bool up, remade;

	if (pod < 0)
		return pod;
	r = rn_attach_move_in(&plan, pod, true, &up, &remade, step, NULL, &err);
	close(pod);
	forget_closed_fds();
	CHECK(r < 0 || up);
	return r;
}

/* ADD as rdma-netns runs it: everything of the plan in the pod. */
static void attached(void)
{
	host_before_add();
	reset_steps(0);
	CHECK_INT(move_in(), 0);
	CHECK_INT(W.n_steps, 4);
	CHECK_INT(W.changes, 4);
	reset_steps(0);
	W.changes = 0;
}

static int move_out(const char *pod_path, struct rn_error *err)
{
	int r;

	rn_error_clear(err);
	r = rn_attach_move_out(&plan, pod_path, TIMEOUT_MS, step, NULL, err);
	forget_closed_fds();
	return r;
}

/* The host as before ADD, the pod with only its lo. */
static void check_home_as_before(void)
{
	const struct fake_link *f0 = link_named(NS_HOME, "ens1f0");
	const struct fake_link *f1 = link_named(NS_HOME, "ens1f1");
	const struct fake_rdma *d = rdma_named("mlx5_0");

	REQUIRE(f0 != NULL && f1 != NULL && d != NULL);
	CHECK_INT(f0->ifindex, 11);
	CHECK_STR(f0->alias, "");
	CHECK(f0->up);
	CHECK_INT(f1->ifindex, 12);
	CHECK_STR(f1->alias, "");
	CHECK(!f1->up);
	CHECK_INT(d->ns, NS_HOME);
	for (size_t i = 0; i < MAX_LINKS; i++)
		if (W.links[i].ns == NS_POD)
			CHECK_STR(W.links[i].name, "lo");
}

static void check_steps(const char *const *want, size_t n)
{
	CHECK_INT(W.n_steps, n);
	for (size_t i = 0; i < n && i < (size_t)W.n_steps; i++)
		CHECK_STR(W.steps[i], want[i]);
}

/* each netdev's move home restores its name, alias and up state in one request */
static const char *const full_del_steps[] = {
	"brought RDMA device mlx5_0 home",
	"brought netdev ens1f0 home",
	"brought netdev ens1f1 home",
};

/* ---- the tests ---- */

static void move_in_puts_the_plan_in_the_pod(void)
{
	const struct fake_link *net1;

	attached();
	net1 = link_named(NS_POD, "net1");
	REQUIRE(net1 != NULL);
	CHECK_INT(net1->ifindex, 11);
	CHECK_STR(net1->alias, "ens1f0"); /* its host name, for a DEL without state */
	CHECK(link_named(NS_POD, "ens1f1") != NULL);
	CHECK(link_named(NS_HOME, "ens1f0") == NULL);
	CHECK_INT(rdma_named("mlx5_0")->ns, NS_POD);
}

static int configure_net1(bool is_up)
{
	struct rn_error err = { 0 };
	int pod = open_ns(NS_POD, &err), r;

	if (pod < 0)
		return pod;
	r = rn_attach_configure(pod, "net1", is_up, NULL, 0, NULL, 0, step, NULL, &err);
	close(pod);
	forget_closed_fds();
	return r;
}

/* ADD's move brings the pod interface up; a kernel that refused that leaves it to configure. */
static void move_in_brings_the_pod_interface_up_or_configure_does(void)
{
	struct rn_error err = { 0 };
	static const char *const want[] = { "brought the pod interface up" };
	int pod;
	bool up = true, remade = true;

	attached();
	CHECK(link_named(NS_POD, "net1")->up);
	CHECK(!link_named(NS_POD, "ens1f1")->up); /* only the pod interface */
	/* up, no address, no route: nothing left to do in the pod */
	CHECK_INT(configure_net1(true), 0);
	CHECK_INT(W.n_steps, 0);
	CHECK_INT(W.changes, 0);

	host_before_add();
	reset_steps(0);
	pod = open_ns(NS_POD, &err);
	REQUIRE(pod >= 0);
	fail_next("link_move_rest", 1, EPERM);
	CHECK_INT(rn_attach_move_in(&plan, pod, true, &up, &remade, step, NULL, &err), 0);
	CHECK(!remade); /* only an IPoIB netdev is made anew */
	close(pod);
	forget_closed_fds();
	CHECK(W.fail_fired);
	CHECK(!up);
	CHECK(!link_named(NS_POD, "net1")->up);
	CHECK_STR(link_named(NS_POD, "net1")->alias, "ens1f0"); /* set before the move */
	reset_steps(0);
	CHECK_INT(configure_net1(up), 0);
	check_steps(want, RN_ARRAY_SIZE(want));
	CHECK(link_named(NS_POD, "net1")->up);
}

static void del_from_a_live_pod_brings_everything_home(void)
{
	struct rn_error err = { 0 };

	attached();
	CHECK_INT(move_out("fake:pod", &err), 0);
	CHECK_STR(err.msg, "");
	check_home_as_before();
	check_steps(full_del_steps, RN_ARRAY_SIZE(full_del_steps));
	/* 1 RDMA move, 2 netdev moves (ens1f0's alias cleared and brought up in its move) */
	CHECK_INT(W.changes, 3);
	CHECK_INT(W.clock_ms, 1000000); /* no waiting when the pod gave everything back */
}

/* A kernel that moved a netdev home but refused its alias or up state: restored at home. */
static void a_move_home_half_refused_is_finished_at_home(void)
{
	struct rn_error err = { 0 };
	static const char *const want[] = { "brought RDMA device mlx5_0 home",
					    "brought netdev ens1f0 home",
					    "brought netdev ens1f1 home",
					    "restored netdev ens1f0" };

	attached();
	fail_next("link_move_rest", 1, EPERM);
	CHECK_INT(move_out("fake:pod", &err), 0);
	CHECK_STR(err.msg, "");
	CHECK(W.fail_fired);
	check_steps(want, RN_ARRAY_SIZE(want));
	check_home_as_before();
	CHECK_INT(W.clock_ms, 1000000);
}

static void a_second_del_changes_nothing(void)
{
	struct rn_error err = { 0 };
	static const char *const want[] = { "restored netdev ens1f0", "restored netdev ens1f1" };

	attached();
	CHECK_INT(move_out("fake:pod", &err), 0);
	reset_steps(0);
	W.changes = 0;
	CHECK_INT(move_out("fake:pod", &err), 0);
	CHECK_INT(W.changes, 0);
	check_steps(want, RN_ARRAY_SIZE(want));
	check_home_as_before();
	/* and without a pod netns any more, or without one recorded */
	W.pod_alive = false;
	CHECK_INT(move_out("fake:pod", &err), 0);
	CHECK_INT(move_out(NULL, &err), 0);
	CHECK_INT(W.changes, 0);
	check_home_as_before();
}

/* A DEL stopped (killed, fault injection) after any step: the next DEL finishes it. */
static void a_del_stopped_after_any_step_is_finished_by_the_next(void)
{
	for (int k = 1; k <= (int)RN_ARRAY_SIZE(full_del_steps); k++) {
		struct rn_error err = { 0 };

		attached();
		reset_steps(k);
		CHECK_INT(move_out("fake:pod", &err), -EINTR);
		CHECK_CONTAINS(err.msg, full_del_steps[k - 1]);
		check_steps(full_del_steps, (size_t)k);
		reset_steps(0);
		CHECK_INT(move_out("fake:pod", &err), 0);
		check_home_as_before();
		/*
		 * What the first run did is not done twice: each netdev once, moved
		 * home (its restore in the same request) or found at home and restored.
		 */
		CHECK_INT(W.n_steps, 2);
	}
}

/* An ADD stopped after any of its steps is undone by a DEL: the host as before. */
static void an_add_stopped_after_any_step_is_undone(void)
{
	for (int k = 1; k <= 4; k++) {
		struct rn_error err = { 0 };

		host_before_add();
		reset_steps(k);
		CHECK_INT(move_in(), -EINTR);
		CHECK_INT(W.n_steps, k);
		reset_steps(0);
		CHECK_INT(move_out("fake:pod", &err), 0);
		CHECK_STR(err.msg, "");
		check_home_as_before();
	}
	/* and an ADD that failed in the kernel half-way (the second netdev's move) */
	host_before_add();
	fail_next("link_move", 2, EPERM);
	CHECK(move_in() < 0);
	CHECK(W.fail_fired);
	CHECK(link_named(NS_POD, "net1") != NULL);
	fail_next(NULL, 0, 0);
	{
		struct rn_error err = { 0 };

		CHECK_INT(move_out("fake:pod", &err), 0);
	}
	check_home_as_before();
}

struct kernel_fault {
	const char *op;
	int nth;
	bool pod_gone; /* the kernel hands ens1f0 back as dev7: the rename path */
	const char *msg;
};

/* Every kernel call of a DEL failing: a clear error, and the next DEL finishes. */
static void each_failing_kernel_call_is_an_error_the_next_del_repairs(void)
{
	static const struct kernel_fault faults[] = {
		{ "netns_open_self", 1, false, "netns_open_self failed" },
		{ "rdma_dev_dump", 1, false,
		  "cannot list the RDMA devices in the pod: fake kernel" },
		{ "rdma_dev_set_netns", 1, false,
		  "cannot bring RDMA device mlx5_0 home: fake kernel" },
		/* before entering the pod: are the host names free at home? */
		{ "link_by_name", 1, false, "cannot look for netdev ens1f0 on the host: fake" },
		{ "link_by_name", 2, false, "cannot look for netdev ens1f1 on the host: fake" },
		{ "link_by_name", 3, false, "cannot look for netdev net1 in the pod: fake kernel" },
		{ "link_move", 1, false, "link_move failed" },
		{ "link_move", 2, false, "link_move failed" },
		{ "rdma_open", 1, false, "rdma_open failed" },
		{ "rdma_open", 2, false, "rdma_open failed" },
		{ "rdma_dev_dump", 2, false, "rdma_dev_dump failed" },
		/* the pod gone: the kernel gave ens1f0 back as dev7, to be restored at home */
		{ "link_by_name", 1, true, "cannot look for netdev ens1f0 on the host: fake" },
		{ "link_set_alias", 1, true, "link_set_alias failed" },
		{ "link_set_up", 1, true, "link_set_up failed" },
		{ "link_by_mac", 1, true, "cannot look for netdev ens1f0 on the host: fake" },
		{ "link_rename", 1, true, "link_rename failed" },
	};

	for (size_t i = 0; i < RN_ARRAY_SIZE(faults); i++) {
		const struct kernel_fault *f = &faults[i];
		struct rn_error err = { 0 };
		int r;

		printf("# %s #%d%s\n", f->op, f->nth, f->pod_gone ? " (pod gone)" : "");
		attached();
		if (f->pod_gone) {
			struct fake_link *l = link_named(NS_POD, "net1");

			W.pod_alive = false;
			l->ns = NS_HOME;
			l->up = false;
			(void)rn_strscpy(l->name, sizeof(l->name), "dev7");
			link_named(NS_POD, "ens1f1")->ns = NS_HOME;
			rdma_named("mlx5_0")->ns = NS_HOME;
		}
		fail_next(f->op, f->nth, EPERM);
		r = move_out("fake:pod", &err);
		CHECK(W.fail_fired);
		CHECK_INT(r, -EPERM);
		CHECK_INT(err.code, EPERM);
		CHECK_CONTAINS(err.msg, f->msg);
		fail_next(NULL, 0, 0);
		CHECK_INT(move_out("fake:pod", &err), 0);
		CHECK_STR(err.msg, "");
		check_home_as_before();
	}
}

/* Records of a DEL that got half-way (read back from the state file). */
static void a_partly_moved_attachment_is_finished_from_its_records(void)
{
	_cleanup_cni_attachment_ struct rn_cni_attachment att = { 0 };
	struct rn_error err = { 0 };
	char tmpl[] = "/tmp/rn-attach-state.XXXXXX", cmd[64];
	const char *dir = mkdtemp(tmpl);
	struct fake_link *f0;
	static const char *const want[] = { "brought RDMA device mlx5_1 home",
					    "brought netdev ens1f1 home",
					    "restored netdev ens1f0" };

	attached();
	/* a second RDMA device of the plan, still in the pod */
	add_rdma(NS_POD, "mlx5_1");
	(void)rn_strscpy(plan.rdma[plan.n_rdma++], RN_RDMA_NAME_MAX, "mlx5_1");
	/* the first DEL brought mlx5_0 and ens1f0 home, then died before restoring ens1f0 */
	rdma_named("mlx5_0")->ns = NS_HOME;
	f0 = link_named(NS_POD, "net1");
	f0->ns = NS_HOME;
	f0->up = false; /* an older DEL: the move alone, alias and up state after it */
	(void)rn_strscpy(f0->name, sizeof(f0->name), "ens1f0");
	REQUIRE(dir != NULL);
	att.plan = plan;
	CHECK_INT(rn_cni_attachment_write(dir, "n:c:net1", &att, false, &err), 0);
	memset(&plan, 0, sizeof(plan));
	CHECK_INT(rn_cni_attachment_read(dir, "n:c:net1", &att, &err), 0);
	plan = att.plan;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	CHECK_INT(system(cmd), 0);
	REQUIRE(plan.n_rdma == 2 && plan.n_netdevs == 2);

	CHECK_INT(move_out("fake:pod", &err), 0);
	CHECK_STR(err.msg, "");
	check_steps(want, RN_ARRAY_SIZE(want));
	check_home_as_before();
	CHECK_STR(f0->alias, "");
	CHECK(f0->up);
	CHECK_INT(rdma_named("mlx5_1")->ns, NS_HOME);
}

/* An RDMA device the kernel refuses does not keep the others in the pod; each refusal is said. */
static void a_refused_rdma_device_does_not_keep_the_others_in_the_pod(void)
{
	struct rn_error err = { 0 };

	attached();
	add_rdma(NS_POD, "mlx5_1");
	(void)rn_strscpy(plan.rdma[plan.n_rdma++], RN_RDMA_NAME_MAX, "mlx5_1");
	fail_next("rdma_dev_set_netns", 1, EPERM);
	CHECK_INT(move_out("fake:pod", &err), -EPERM);
	CHECK(W.fail_fired);
	CHECK_STR(err.msg, "cannot bring RDMA device mlx5_0 home: fake kernel: rdma_dev_set_netns "
			   "failed");
	CHECK_INT(rdma_named("mlx5_0")->ns, NS_POD);
	CHECK_INT(rdma_named("mlx5_1")->ns, NS_HOME);

	/* every one refused: all of them in the message, the first one's code */
	rdma_named("mlx5_1")->ns = NS_POD;
	fail_next("rdma_dev_set_netns", 0, EPERM);
	CHECK_INT(move_out("fake:pod", &err), -EPERM);
	CHECK_STR(err.msg, "cannot bring RDMA device mlx5_0 home: fake kernel: rdma_dev_set_netns "
			   "failed; cannot bring RDMA device mlx5_1 home: fake kernel: "
			   "rdma_dev_set_netns failed");

	fail_next(NULL, 0, 0);
	CHECK_INT(move_out("fake:pod", &err), 0);
	CHECK_STR(err.msg, "");
	check_home_as_before();
	CHECK_INT(rdma_named("mlx5_1")->ns, NS_HOME);
}

/* The pod's netns is destroyed: the kernel hands devices back late, ens1f0 as dev7. */
static void a_destroyed_pod_is_waited_for_and_names_are_restored(void)
{
	struct rn_error err = { 0 };
	struct fake_link *f0, *veth;
	/* each netdev restored once, as it comes back; the veth is not waited for */
	static const char *const want[] = { "restored netdev ens1f1", "restored netdev ens1f0" };

	attached();
	veth = add_link(NS_POD, 20, "eth9", MACV, "veth", true);
	plan_netdev("veth-h", "eth9", MACV, "veth", 20, true);
	W.pod_alive = false;
	veth->ns = NS_NONE; /* a virtual netdev dies with its netns */
	f0 = link_named(NS_POD, "net1");
	f0->ns = NS_LIMBO;
	f0->back_at = W.clock_ms + 300;
	(void)rn_strscpy(f0->back_name, sizeof(f0->back_name), "dev7");
	link_named(NS_POD, "ens1f1")->ns = NS_LIMBO; /* keeps its name */
	link_named(NS_LIMBO, "ens1f1")->back_at = W.clock_ms + 100;
	(void)rn_strscpy(link_named(NS_LIMBO, "ens1f1")->back_name, IF_NAMESIZE, "ens1f1");
	rdma_named("mlx5_0")->ns = NS_LIMBO;
	rdma_named("mlx5_0")->back_at = W.clock_ms + 200;

	CHECK_INT(move_out("fake:pod", &err), 0);
	CHECK_STR(err.msg, "");
	check_home_as_before();
	CHECK(W.clock_ms >= 1000000 + 300);
	CHECK(W.clock_ms < 1000000 + TIMEOUT_MS); /* done when all was back, not at the timeout */
	CHECK(link_named(NS_HOME, "dev7") == NULL);
	check_steps(want, RN_ARRAY_SIZE(want));
}

/* A physical netdev that never comes back: -EAGAIN after the wait and the hunt. */
static void a_netdev_that_never_returns_is_eagain_and_a_later_del_finishes(void)
{
	struct rn_error err = { 0 };
	struct fake_link *f1;

	attached();
	W.pod_alive = false;
	link_named(NS_POD, "net1")->ns = NS_HOME;
	link_named(NS_HOME, "net1")->up = false;
	rdma_named("mlx5_0")->ns = NS_HOME;
	f1 = link_named(NS_POD, "ens1f1");
	f1->ns = NS_LIMBO; /* back_at < 0: not yet */
	CHECK_INT(move_out("fake:pod", &err), -EAGAIN);
	CHECK_CONTAINS(err.msg, "netdev ens1f1 (MAC " MAC1 ") has not come back to the host after "
				"2000 ms; try DEL again later");
	CHECK(W.clock_ms >= 1000000 + TIMEOUT_MS);
	CHECK(link_named(NS_HOME, "ens1f0") != NULL); /* what did come back is restored */
	f1->ns = NS_HOME;
	CHECK_INT(move_out("fake:pod", &err), 0);
	check_home_as_before();
}

/* What is neither in the pod nor at home is looked for in every other netns. */
static void the_hunt_brings_devices_home_from_other_netns(void)
{
	struct rn_error err = { 0 };

	attached();
	link_named(NS_POD, "ens1f1")->ns = NS_OTHER;
	rdma_named("mlx5_0")->ns = NS_OTHER;
	CHECK_INT(move_out("fake:pod", &err), 0);
	CHECK_STR(err.msg, "");
	check_home_as_before();
	CHECK(W.clock_ms >= 1000000 + TIMEOUT_MS); /* only after the wait */
	/* the other netns keeps its own lo */
	CHECK(link_named(NS_OTHER, "lo") != NULL);
}

/* An RDMA device nowhere: returned later when its pod is gone or it is unplugged. */
static void an_rdma_device_nowhere_to_be_seen(void)
{
	struct rn_error err = { 0 };

	attached();
	rdma_named("mlx5_0")->ns = NS_LIMBO; /* unplugged: rn_discover_find says ENODEV */
	CHECK_INT(move_out("fake:pod", &err), 0);
	CHECK(link_named(NS_HOME, "ens1f1") != NULL);

	/* a lookup that fails (not "absent") with the pod alive: try again later */
	attached();
	rdma_named("mlx5_0")->ns = NS_LIMBO;
	fail_next("discover_find", 1, EPERM);
	CHECK_INT(move_out("fake:pod", &err), -EAGAIN);
	CHECK(W.fail_fired);
	CHECK_CONTAINS(err.msg, "RDMA device mlx5_0 has not come back to the host after 2000 ms");
	fail_next(NULL, 0, 0);
	rdma_named("mlx5_0")->ns = NS_HOME;
	CHECK_INT(move_out("fake:pod", &err), 0);
	check_home_as_before();
}

/* The host took a name meanwhile: EEXIST naming both, nothing moved; a DEL after the fix works. */
static void a_name_taken_on_the_host_is_eexist(void)
{
	struct rn_error err = { 0 };
	struct fake_link *intruder;

	attached();
	intruder = add_link(NS_HOME, 30, "ens1f0", "02:00:00:00:00:ff", "", false);
	CHECK_INT(move_out("fake:pod", &err), -EEXIST);
	CHECK_CONTAINS(err.msg, "cannot bring netdev net1 home: the host has another netdev named "
				"ens1f0 now; rename that one and run DEL again");
	CHECK(link_named(NS_POD, "net1") != NULL);
	(void)rn_strscpy(intruder->name, sizeof(intruder->name), "other0");
	CHECK_INT(move_out("fake:pod", &err), 0);
	check_home_as_before();

	/* returned by the kernel as dev7 while the host has an ens1f0 of its own */
	attached();
	W.pod_alive = false;
	(void)rn_strscpy(link_named(NS_POD, "net1")->name, IF_NAMESIZE, "dev7");
	link_named(NS_POD, "dev7")->ns = NS_HOME;
	link_named(NS_HOME, "dev7")->up = false;
	link_named(NS_POD, "ens1f1")->ns = NS_HOME;
	rdma_named("mlx5_0")->ns = NS_HOME;
	intruder = add_link(NS_HOME, 30, "ens1f0", "02:00:00:00:00:ff", "", false);
	CHECK_INT(move_out("fake:pod", &err), -EEXIST);
	CHECK_CONTAINS(err.msg, "cannot rename netdev dev7 back to ens1f0: the host has another "
				"netdev named ens1f0 now");
	(void)rn_strscpy(intruder->name, sizeof(intruder->name), "other0");
	CHECK_INT(move_out("fake:pod", &err), 0);
	check_home_as_before();
}

/* Chained mode: a previous plugin owns the netdev; only the RDMA devices come home. */
static void chained_mode_moves_only_rdma_devices(void)
{
	struct rn_error err = { 0 };
	static const char *const want[] = { "brought RDMA device mlx5_0 home" };

	attached();
	plan.chained = true;
	CHECK_INT(move_out("fake:pod", &err), 0);
	check_steps(want, RN_ARRAY_SIZE(want));
	CHECK_INT(rdma_named("mlx5_0")->ns, NS_HOME);
	CHECK(link_named(NS_POD, "net1") != NULL);
	CHECK(link_named(NS_POD, "ens1f1") != NULL);
	CHECK_INT(W.changes, 1);
}

/* A kernel without RDMA netlink: the netdevs still come home, RDMA is not asked. */
static void no_rdma_netlink_still_brings_netdevs_home(void)
{
	struct rn_error err = { 0 };
	static const char *const want[] = { "brought netdev ens1f0 home",
					    "brought netdev ens1f1 home" };

	attached();
	plan.rdma_kernel = false;
	W.rdma_kernel = false;
	rdma_named("mlx5_0")->ns = NS_HOME;
	fail_next("rdma_dump_in", 1, EPERM);
	CHECK_INT(move_out("fake:pod", &err), 0);
	CHECK(!W.fail_fired);
	check_steps(want, RN_ARRAY_SIZE(want));
	check_home_as_before();
}

/* A veth gone from a live pod was deleted there: not waited for. A physical one is. */
static void a_virtual_netdev_deleted_in_a_live_pod_is_not_waited_for(void)
{
	struct rn_error err = { 0 };

	attached();
	plan_netdev("veth-h", "eth9", MACV, "veth", 20, true);
	CHECK_INT(move_out("fake:pod", &err), 0);
	CHECK_INT(W.clock_ms, 1000000);
	check_home_as_before();
}

RN_TEST_MAIN(T(move_in_puts_the_plan_in_the_pod),
	     T(move_in_brings_the_pod_interface_up_or_configure_does),
	     T(del_from_a_live_pod_brings_everything_home),
	     T(a_move_home_half_refused_is_finished_at_home), T(a_second_del_changes_nothing),
	     T(a_del_stopped_after_any_step_is_finished_by_the_next),
	     T(an_add_stopped_after_any_step_is_undone),
	     T(each_failing_kernel_call_is_an_error_the_next_del_repairs),
	     T(a_partly_moved_attachment_is_finished_from_its_records),
	     T(a_refused_rdma_device_does_not_keep_the_others_in_the_pod),
	     T(a_destroyed_pod_is_waited_for_and_names_are_restored),
	     T(a_netdev_that_never_returns_is_eagain_and_a_later_del_finishes),
	     T(the_hunt_brings_devices_home_from_other_netns), T(an_rdma_device_nowhere_to_be_seen),
	     T(a_name_taken_on_the_host_is_eexist), T(chained_mode_moves_only_rdma_devices),
	     T(no_rdma_netlink_still_brings_netdevs_home),
	     T(a_virtual_netdev_deleted_in_a_live_pod_is_not_waited_for))
