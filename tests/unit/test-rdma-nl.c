// SPDX-License-Identifier: Apache-2.0
/*
 * The RDMA device dump of rdma_nl.c against a fake nldev kernel: libmnl's
 * socket calls are replaced at link time (-Wl,--wrap, tests/unit/meson.build).
 * The fake answers a device dump as ib_enum_all_devs does: one device per
 * part, resuming by counting the devices visible now. So a device that
 * leaves between two parts makes the next one skipped, and one that
 * arrives makes one repeated; a schedule of such changes, keyed to the
 * parts sent, drives each test. No result depends on timing.
 */
#include <errno.h>
#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "rdmans/rdma_nl.h"
#include "rdmans/util.h"
#include "test.h"

/* ---- the fake kernel ---- */

#define MAX_DEVS 8
#define MAX_EVENTS 64

struct fake_dev {
	uint32_t index;
	const char *name;
	bool visible;
};

/* After the kernel has sent `after_parts` device parts in all, toggle device `dev`. */
struct fake_event {
	unsigned after_parts;
	int dev;
};

static struct {
	struct fake_dev devs[MAX_DEVS];
	int ndevs;
	struct fake_event events[MAX_EVENTS];
	int nevents, next_event;
	unsigned parts_sent; /* device parts of every dump so far */
	unsigned dumps; /* device dumps started */
	/* the request being answered */
	uint16_t cmd;
	uint32_t seq, dev_index;
	bool pending;
	unsigned start; /* cb->args[0] of the current device dump */
	bool port_sent;
} K;

static const unsigned PORTID = 4242;

static void fake_reset(void)
{
	memset(&K, 0, sizeof(K));
}

static int fake_add(uint32_t index, const char *name)
{
	K.devs[K.ndevs] = (struct fake_dev){ .index = index, .name = name, .visible = true };
	return K.ndevs++;
}

static void fake_toggle_after(unsigned parts, int dev)
{
	K.events[K.nevents++] = (struct fake_event){ .after_parts = parts, .dev = dev };
}

static void fake_apply_events(void)
{
	while (K.next_event < K.nevents && K.events[K.next_event].after_parts <= K.parts_sent) {
		struct fake_dev *d = &K.devs[K.events[K.next_event].dev];

		d->visible = !d->visible;
		K.next_event++;
	}
}

/* The visible device at position pos in index order, as the kernel's xarray walk finds it. */
static struct fake_dev *fake_nth_visible(unsigned pos)
{
	uint32_t last = 0;
	bool any = false;
	unsigned seen = 0;

	for (;;) {
		struct fake_dev *best = NULL;

		for (int i = 0; i < K.ndevs; i++)
			if (K.devs[i].visible && (!any || K.devs[i].index > last) &&
			    (!best || K.devs[i].index < best->index))
				best = &K.devs[i];
		if (!best)
			return NULL;
		if (seen++ == pos)
			return best;
		last = best->index;
		any = true;
	}
}

static void *put_attr(struct nlmsghdr *nlh, uint16_t type, const void *data, size_t len)
{
	struct nlattr *a = (struct nlattr *)((char *)nlh + NLMSG_ALIGN(nlh->nlmsg_len));

	a->nla_type = type;
	a->nla_len = (uint16_t)(NLA_HDRLEN + len);
	memcpy((char *)a + NLA_HDRLEN, data, len);
	nlh->nlmsg_len = NLMSG_ALIGN(nlh->nlmsg_len) + NLA_ALIGN(a->nla_len);
	return a;
}

static struct nlmsghdr *put_msg(void *buf, uint16_t type, uint16_t flags)
{
	struct nlmsghdr *nlh = buf;

	memset(nlh, 0, NLMSG_HDRLEN);
	nlh->nlmsg_len = NLMSG_HDRLEN;
	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = flags;
	nlh->nlmsg_seq = K.seq;
	nlh->nlmsg_pid = PORTID;
	return nlh;
}

static ssize_t put_done(void *buf)
{
	struct nlmsghdr *nlh = put_msg(buf, NLMSG_DONE, NLM_F_MULTI);
	int zero = 0;

	memcpy((char *)nlh + NLMSG_HDRLEN, &zero, sizeof(zero));
	nlh->nlmsg_len += sizeof(zero);
	K.pending = false;
	return nlh->nlmsg_len;
}

struct mnl_socket;
static int fake_socket;

/* the replacements, declared as libmnl declares the originals */
struct mnl_socket *__wrap_mnl_socket_open2(int bus, int flags);
int __wrap_mnl_socket_bind(struct mnl_socket *nl, unsigned groups, pid_t pid);
int __wrap_mnl_socket_setsockopt(const struct mnl_socket *nl, int type, void *buf, socklen_t len);
unsigned int __wrap_mnl_socket_get_portid(const struct mnl_socket *nl);
int __wrap_mnl_socket_close(struct mnl_socket *nl);
ssize_t __wrap_mnl_socket_sendto(const struct mnl_socket *nl, const void *buf, size_t len);
ssize_t __wrap_mnl_socket_recvfrom(const struct mnl_socket *nl, void *buf, size_t size);

struct mnl_socket *__wrap_mnl_socket_open2(int bus, int flags)
{
	(void)bus;
	(void)flags;
	return (struct mnl_socket *)&fake_socket;
}

int __wrap_mnl_socket_bind(struct mnl_socket *nl, unsigned groups, pid_t pid)
{
	(void)nl;
	(void)groups;
	(void)pid;
	return 0;
}

int __wrap_mnl_socket_setsockopt(const struct mnl_socket *nl, int type, void *buf, socklen_t len)
{
	(void)nl;
	(void)type;
	(void)buf;
	(void)len;
	return 0;
}

unsigned int __wrap_mnl_socket_get_portid(const struct mnl_socket *nl)
{
	(void)nl;
	return PORTID;
}

int __wrap_mnl_socket_close(struct mnl_socket *nl)
{
	(void)nl;
	return 0;
}

ssize_t __wrap_mnl_socket_sendto(const struct mnl_socket *nl, const void *buf, size_t len)
{
	const struct nlmsghdr *nlh = buf;
	const struct nlattr *a;

	(void)nl;
	K.cmd = (uint16_t)RDMA_NL_GET_OP(nlh->nlmsg_type);
	K.seq = nlh->nlmsg_seq;
	K.pending = true;
	K.start = 0;
	K.port_sent = false;
	K.dev_index = UINT32_MAX;
	for (a = (const struct nlattr *)((const char *)nlh + NLMSG_HDRLEN);
	     (const char *)a + NLA_HDRLEN <= (const char *)nlh + nlh->nlmsg_len;
	     a = (const struct nlattr *)((const char *)a + NLA_ALIGN(a->nla_len)))
		if (a->nla_type == RDMA_NLDEV_ATTR_DEV_INDEX)
			memcpy(&K.dev_index, (const char *)a + NLA_HDRLEN, sizeof(uint32_t));
	if (K.cmd == RDMA_NLDEV_CMD_GET)
		K.dumps++;
	return (ssize_t)len;
}

ssize_t __wrap_mnl_socket_recvfrom(const struct mnl_socket *nl, void *buf, size_t size)
{
	struct nlmsghdr *nlh;
	struct fake_dev *d;

	(void)nl;
	(void)size;
	if (!K.pending) {
		errno = EAGAIN; /* a reader that waits for more would hang on a real socket */
		return -1;
	}
	if (K.cmd == RDMA_NLDEV_CMD_PORT_GET) {
		uint32_t port = 1;

		if (K.port_sent)
			return put_done(buf);
		K.port_sent = true;
		nlh = put_msg(buf, RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_PORT_GET),
			      NLM_F_MULTI);
		put_attr(nlh, RDMA_NLDEV_ATTR_DEV_INDEX, &K.dev_index, sizeof(K.dev_index));
		put_attr(nlh, RDMA_NLDEV_ATTR_PORT_INDEX, &port, sizeof(port));
		return nlh->nlmsg_len;
	}
	/* RDMA_NLDEV_CMD_GET dump: one device per part, resumed by count */
	fake_apply_events();
	d = fake_nth_visible(K.start);
	if (!d)
		return put_done(buf);
	nlh = put_msg(buf, RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET), NLM_F_MULTI);
	put_attr(nlh, RDMA_NLDEV_ATTR_DEV_INDEX, &d->index, sizeof(d->index));
	put_attr(nlh, RDMA_NLDEV_ATTR_DEV_NAME, d->name, strlen(d->name) + 1);
	K.start++;
	K.parts_sent++;
	return nlh->nlmsg_len;
}

/* ---- tests ---- */

/* mlx5_0, mlx5_1, mlx5_2 at indexes 1, 4, 6; returns mlx5_1's slot. */
static int three_devices(void)
{
	int mid;

	fake_reset();
	fake_add(1, "mlx5_0");
	mid = fake_add(4, "mlx5_1");
	fake_add(6, "mlx5_2");
	return mid;
}

static char *names_of(const struct rn_rdma_devs *devs)
{
	static char buf[256];

	buf[0] = '\0';
	for (size_t i = 0; i < devs->n; i++) {
		if (i)
			strcat(buf, " ");
		strcat(buf, devs->devs[i].name);
	}
	return buf;
}

static void dump_quiet(void)
{
	_cleanup_rdma_ struct rn_rdma *rdma = NULL;
	_cleanup_rdma_devs_ struct rn_rdma_devs devs = { 0 };
	struct rn_error err = { 0 };

	three_devices();
	REQUIRE(rn_rdma_open(&rdma, &err) == 0);
	CHECK_INT(rn_rdma_dev_dump(rdma, &devs, &err), 0);
	CHECK_STR(names_of(&devs), "mlx5_0 mlx5_1 mlx5_2");
	REQUIRE(devs.n == 3);
	CHECK_INT(devs.devs[2].nports, 1);
	CHECK_INT(devs.devs[2].ports[0].index, 1);
	CHECK_INT(K.dumps, 2); /* two passes agree at once */
}

/* run 9 of the 10-run loop: mlx5_2 skipped because mlx5_1 left after it was sent */
static void dump_device_leaves_mid_dump(void)
{
	_cleanup_rdma_ struct rn_rdma *rdma = NULL;
	_cleanup_rdma_devs_ struct rn_rdma_devs devs = { 0 };
	struct rn_error err = { 0 };

	fake_toggle_after(2, three_devices()); /* leaves once mlx5_0 and mlx5_1 were sent */
	REQUIRE(rn_rdma_open(&rdma, &err) == 0);
	CHECK_INT(rn_rdma_dev_dump(rdma, &devs, &err), 0);
	CHECK_STR(names_of(&devs), "mlx5_0 mlx5_2");
	CHECK_INT(K.dumps, 3);
}

static void dump_device_arrives_mid_dump(void)
{
	_cleanup_rdma_ struct rn_rdma *rdma = NULL;
	_cleanup_rdma_devs_ struct rn_rdma_devs devs = { 0 };
	struct rn_error err = { 0 };
	int first;

	fake_reset();
	first = fake_add(0, "rxe0");
	fake_add(2, "mlx5_0");
	fake_add(3, "mlx5_1");
	K.devs[first].visible = false;
	fake_toggle_after(1, first); /* comes home once mlx5_0 was sent: mlx5_0 again */
	REQUIRE(rn_rdma_open(&rdma, &err) == 0);
	CHECK_INT(rn_rdma_dev_dump(rdma, &devs, &err), 0);
	CHECK_STR(names_of(&devs), "rxe0 mlx5_0 mlx5_1");
}

static void find_device_behind_one_that_leaves(void)
{
	_cleanup_rdma_ struct rn_rdma *rdma = NULL;
	struct rn_rdma_dev dev = { 0 };
	struct rn_error err = { 0 };

	fake_toggle_after(2, three_devices());
	REQUIRE(rn_rdma_open(&rdma, &err) == 0);
	CHECK_INT(rn_rdma_dev_find(rdma, "mlx5_2", &dev, &err), 0);
	CHECK_STR(dev.name, "mlx5_2");
	CHECK_INT(dev.index, 6);
	rn_rdma_dev_free(&dev);
}

/* Two passes that agree only by being equally wrong would need the same change twice. */
static void dump_never_settles(void)
{
	_cleanup_rdma_ struct rn_rdma *rdma = NULL;
	_cleanup_rdma_devs_ struct rn_rdma_devs devs = { 0 };
	struct rn_error err = { 0 };
	int flapping = three_devices();

	for (unsigned p = 1; p < MAX_EVENTS; p++)
		fake_toggle_after(p * 2, flapping); /* on the move during every pass */
	REQUIRE(rn_rdma_open(&rdma, &err) == 0);
	CHECK_INT(rn_rdma_dev_dump(rdma, &devs, &err), -EAGAIN);
	CHECK_CONTAINS(err.msg, "kept changing");
	CHECK_INT(devs.n, 0);
}

static void find_absent_is_enodev(void)
{
	_cleanup_rdma_ struct rn_rdma *rdma = NULL;
	struct rn_rdma_dev dev = { 0 };
	struct rn_error err = { 0 };

	fake_reset();
	fake_add(1, "mlx5_0");
	REQUIRE(rn_rdma_open(&rdma, &err) == 0);
	CHECK_INT(rn_rdma_dev_find(rdma, "mlx5_9", &dev, &err), -ENODEV);
	CHECK_CONTAINS(err.msg, "mlx5_9 not found");
}

/* The kernel names a port's netdev only to a socket in its netns: the one rule. */
static void port_binding_says_here_not_here_or_unknown(void)
{
	struct rn_rdma_port pa[2] = { { .index = 1, .ndev_index = 7, .ndev_name = "net1" },
				      { .index = 2, .ndev_index = 0 } };
	struct rn_rdma_dev d = { .name = "mlx5_0", .nports = 2, .ports = pa };
	struct rn_rdma_devs devs = { .n = 1, .devs = &d };
	const char *name = "x";

	CHECK_INT(rn_rdma_port_binding(&devs, "mlx5_0", 1, &name), RN_RDMA_BINDING_HERE);
	CHECK_STR(name, "net1");
	CHECK_INT(rn_rdma_port_binding(&devs, "mlx5_0", 2, &name), RN_RDMA_BINDING_NOT_HERE);
	CHECK(name == NULL);
	CHECK_INT(rn_rdma_port_binding(&devs, "mlx5_0", 3, &name), RN_RDMA_BINDING_UNKNOWN);
	CHECK_INT(rn_rdma_port_binding(&devs, "rxe0", 1, &name), RN_RDMA_BINDING_UNKNOWN);
	CHECK_INT(rn_rdma_port_binding(NULL, "mlx5_0", 1, &name), RN_RDMA_BINDING_UNKNOWN);
}

RN_TEST_MAIN(T(dump_quiet), T(dump_device_leaves_mid_dump), T(dump_device_arrives_mid_dump),
	     T(find_device_behind_one_that_leaves), T(dump_never_settles), T(find_absent_is_enodev),
	     T(port_binding_says_here_not_here_or_unknown))
