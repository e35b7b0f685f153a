// SPDX-License-Identifier: Apache-2.0
/*
 * The only module that speaks RDMA netlink, and the only user of libmnl.
 * nldev messages carry no family header: attributes follow the nlmsghdr.
 */
#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "rdmans/rdma_nl.h"
#include "rdmans/util.h"

#ifndef NETLINK_EXT_ACK
#define NETLINK_EXT_ACK 11
#endif
#ifndef SOL_NETLINK
#define SOL_NETLINK 270
#endif

#define RDMA_BUF_SIZE (64 * 1024)

struct rn_rdma {
	struct mnl_socket *nl;
	unsigned int portid;
	unsigned int seq;
	char buf[RDMA_BUF_SIZE];
};

int rn_rdma_open(struct rn_rdma **ret, struct rn_error *err)
{
	_cleanup_rdma_ struct rn_rdma *rdma = NULL;
	int one = 1;

	rdma = calloc(1, sizeof(*rdma));
	if (!rdma)
		return rn_error_set(err, ENOMEM, "out of memory");
	rdma->nl = mnl_socket_open2(NETLINK_RDMA, SOCK_CLOEXEC);
	if (!rdma->nl) {
		int e = errno;

		if (e == EPROTONOSUPPORT || e == EAFNOSUPPORT)
			return rn_error_set(err, EPROTONOSUPPORT,
					    "this kernel has no RDMA netlink: load ib_core "
					    "('modprobe ib_core') or boot a kernel built with "
					    "CONFIG_INFINIBAND");
		return rn_error_errno(err, e, "cannot open an RDMA netlink socket");
	}
	if (mnl_socket_bind(rdma->nl, 0, MNL_SOCKET_AUTOPID) < 0)
		return rn_error_errno(err, errno, "cannot bind the RDMA netlink socket");
	/* Older kernels lack extended acks; messages then carry only errno. */
	(void)mnl_socket_setsockopt(rdma->nl, NETLINK_EXT_ACK, &one, sizeof(one));
	rdma->portid = mnl_socket_get_portid(rdma->nl);
	rdma->seq = 1;
	*ret = TAKE_PTR(rdma);
	return 0;
}

void rn_rdma_close(struct rn_rdma *rdma)
{
	if (!rdma)
		return;
	if (rdma->nl)
		mnl_socket_close(rdma->nl);
	free(rdma);
}

static struct nlmsghdr *msg_prepare(struct rn_rdma *rdma, uint32_t cmd, uint16_t flags)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(rdma->buf);

	nlh->nlmsg_type = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, cmd);
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | flags;
	nlh->nlmsg_seq = ++rdma->seq;
	return nlh;
}

/* The kernel's extended-ack text (NLMSGERR_ATTR_MSG), when it sent one. */
static const char *ext_ack_msg(const struct nlmsghdr *nlh)
{
	const struct nlmsgerr *e = mnl_nlmsg_get_payload(nlh);
	const struct nlattr *attr;
	size_t off = sizeof(*e);

	if (!(nlh->nlmsg_flags & NLM_F_ACK_TLVS))
		return NULL;
	if (!(nlh->nlmsg_flags & NLM_F_CAPPED))
		off += e->msg.nlmsg_len - sizeof(struct nlmsghdr);
	if (mnl_nlmsg_get_payload_len(nlh) < off)
		return NULL;
	mnl_attr_for_each_payload((void *)((const char *)e + off),
				  mnl_nlmsg_get_payload_len(nlh) - off)
	{
		if (mnl_attr_get_type(attr) == NLMSGERR_ATTR_MSG &&
		    mnl_attr_validate(attr, MNL_TYPE_NUL_STRING) == 0)
			return mnl_attr_get_str(attr);
	}
	return NULL;
}

typedef int (*msg_cb)(const struct nlmsghdr *nlh, void *data);

/*
 * Sends the message in rdma->buf and reads replies until the ack (or
 * NLMSG_DONE of a dump), handing data messages to cb. On a kernel error,
 * returns -errno and leaves the kernel's text in ack_text.
 */
static int msg_exchange(struct rn_rdma *rdma, struct nlmsghdr *nlh, msg_cb cb, void *data,
			char *ack_text, size_t ack_len, struct rn_error *err)
{
	unsigned int seq = nlh->nlmsg_seq;
	bool dump = (nlh->nlmsg_flags & NLM_F_DUMP) == NLM_F_DUMP;

	if (ack_text && ack_len)
		ack_text[0] = '\0';
	if (mnl_socket_sendto(rdma->nl, nlh, nlh->nlmsg_len) < 0)
		return rn_error_errno(err, errno, "cannot send RDMA netlink request");
	for (;;) {
		ssize_t n = mnl_socket_recvfrom(rdma->nl, rdma->buf, sizeof(rdma->buf));
		const struct nlmsghdr *m;
		int len;

		if (n < 0)
			return rn_error_errno(err, errno, "cannot read RDMA netlink reply");
		len = (int)n;
		for (m = (const struct nlmsghdr *)rdma->buf; mnl_nlmsg_ok(m, len);
		     m = mnl_nlmsg_next(m, &len)) {
			if (m->nlmsg_seq != seq || m->nlmsg_pid != rdma->portid)
				continue;
			if (m->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = mnl_nlmsg_get_payload(m);
				const char *text;

				if (e->error == 0)
					return 0;
				text = ext_ack_msg(m);
				if (text && ack_text)
					snprintf(ack_text, ack_len, "%s", text);
				return e->error;
			}
			if (m->nlmsg_type == NLMSG_DONE) {
				const int *status = mnl_nlmsg_get_payload(m);

				if (!dump)
					continue;
				/* a dump that failed to start reports its errno here */
				if (mnl_nlmsg_get_payload_len(m) >= sizeof(int) && *status < 0)
					return *status;
				return 0;
			}
			if (cb) {
				int r = cb(m, data);

				if (r < 0)
					return r;
			}
		}
	}
}

/* "; the kernel says: ..." suffix for messages, or "". */
static const char *kernel_says(const char *ack, char *buf, size_t len)
{
	if (!ack || !*ack)
		return "";
	snprintf(buf, len, " (kernel: %s)", ack);
	return buf;
}

struct attr_table {
	const struct nlattr *tb[RDMA_NLDEV_ATTR_MAX];
};

/* Validates the attributes we use; unknown ones are skipped so newer kernels do not break us. */
static int attr_cb(const struct nlattr *attr, void *data)
{
	struct attr_table *t = data;
	int type = mnl_attr_get_type(attr);
	enum mnl_attr_data_type kind;

	if (type < 0 || type >= RDMA_NLDEV_ATTR_MAX)
		return MNL_CB_OK;
	switch (type) {
	case RDMA_NLDEV_ATTR_DEV_INDEX:
	case RDMA_NLDEV_ATTR_PORT_INDEX:
	case RDMA_NLDEV_ATTR_NDEV_INDEX:
		kind = MNL_TYPE_U32;
		break;
	case RDMA_NLDEV_ATTR_NODE_GUID:
	case RDMA_NLDEV_ATTR_SYS_IMAGE_GUID:
		kind = MNL_TYPE_U64;
		break;
	case RDMA_NLDEV_ATTR_PORT_STATE:
	case RDMA_NLDEV_ATTR_PORT_PHYS_STATE:
	case RDMA_NLDEV_ATTR_DEV_NODE_TYPE:
	case RDMA_NLDEV_SYS_ATTR_NETNS_MODE:
		kind = MNL_TYPE_U8;
		break;
	case RDMA_NLDEV_ATTR_DEV_NAME:
	case RDMA_NLDEV_ATTR_FW_VERSION:
	case RDMA_NLDEV_ATTR_NDEV_NAME:
	case RDMA_NLDEV_ATTR_DEV_PROTOCOL:
		kind = MNL_TYPE_NUL_STRING;
		break;
	default:
		return MNL_CB_OK;
	}
	if (mnl_attr_validate(attr, kind) < 0)
		return MNL_CB_OK;
	t->tb[type] = attr;
	return MNL_CB_OK;
}

static void parse_attrs(const struct nlmsghdr *nlh, struct attr_table *t)
{
	memset(t, 0, sizeof(*t));
	mnl_attr_parse(nlh, 0, attr_cb, t);
}

static void copy_str(char *dst, size_t len, const struct nlattr *attr)
{
	snprintf(dst, len, "%s", attr ? mnl_attr_get_str(attr) : "");
}

struct dev_collect {
	struct rn_rdma_devs *out;
	size_t cap;
};

static int dev_dump_cb(const struct nlmsghdr *nlh, void *data)
{
	struct dev_collect *c = data;
	struct attr_table t;
	struct rn_rdma_dev *d;

	parse_attrs(nlh, &t);
	if (!t.tb[RDMA_NLDEV_ATTR_DEV_INDEX] || !t.tb[RDMA_NLDEV_ATTR_DEV_NAME])
		return 0;
	if (RN_GROW(c->out->devs, &c->cap, c->out->n + 1) < 0)
		return -ENOMEM;
	d = &c->out->devs[c->out->n++];
	memset(d, 0, sizeof(*d));
	d->index = mnl_attr_get_u32(t.tb[RDMA_NLDEV_ATTR_DEV_INDEX]);
	copy_str(d->name, sizeof(d->name), t.tb[RDMA_NLDEV_ATTR_DEV_NAME]);
	copy_str(d->fw, sizeof(d->fw), t.tb[RDMA_NLDEV_ATTR_FW_VERSION]);
	copy_str(d->protocol, sizeof(d->protocol), t.tb[RDMA_NLDEV_ATTR_DEV_PROTOCOL]);
	if (t.tb[RDMA_NLDEV_ATTR_NODE_GUID])
		d->node_guid = mnl_attr_get_u64(t.tb[RDMA_NLDEV_ATTR_NODE_GUID]);
	if (t.tb[RDMA_NLDEV_ATTR_SYS_IMAGE_GUID])
		d->sys_image_guid = mnl_attr_get_u64(t.tb[RDMA_NLDEV_ATTR_SYS_IMAGE_GUID]);
	if (t.tb[RDMA_NLDEV_ATTR_DEV_NODE_TYPE])
		d->node_type = mnl_attr_get_u8(t.tb[RDMA_NLDEV_ATTR_DEV_NODE_TYPE]);
	return 0;
}

static struct rn_rdma_dev *devs_by_index(struct rn_rdma_devs *devs, uint32_t index)
{
	for (size_t i = 0; i < devs->n; i++)
		if (devs->devs[i].index == index)
			return &devs->devs[i];
	return NULL;
}

static int port_dump_cb(const struct nlmsghdr *nlh, void *data)
{
	struct rn_rdma_devs *devs = data;
	struct rn_rdma_port *p;
	struct rn_rdma_dev *d;
	struct attr_table t;

	parse_attrs(nlh, &t);
	if (!t.tb[RDMA_NLDEV_ATTR_DEV_INDEX] || !t.tb[RDMA_NLDEV_ATTR_PORT_INDEX])
		return 0;
	d = devs_by_index(devs, mnl_attr_get_u32(t.tb[RDMA_NLDEV_ATTR_DEV_INDEX]));
	if (!d)
		return 0; /* registered between the two dumps */
	if (RN_GROW(d->ports, NULL, d->nports + 1) < 0)
		return -ENOMEM;
	p = &d->ports[d->nports++];
	memset(p, 0, sizeof(*p));
	p->index = mnl_attr_get_u32(t.tb[RDMA_NLDEV_ATTR_PORT_INDEX]);
	if (t.tb[RDMA_NLDEV_ATTR_PORT_STATE])
		p->state = mnl_attr_get_u8(t.tb[RDMA_NLDEV_ATTR_PORT_STATE]);
	if (t.tb[RDMA_NLDEV_ATTR_PORT_PHYS_STATE])
		p->phys_state = mnl_attr_get_u8(t.tb[RDMA_NLDEV_ATTR_PORT_PHYS_STATE]);
	if (t.tb[RDMA_NLDEV_ATTR_NDEV_INDEX])
		p->ndev_index = mnl_attr_get_u32(t.tb[RDMA_NLDEV_ATTR_NDEV_INDEX]);
	copy_str(p->ndev_name, sizeof(p->ndev_name), t.tb[RDMA_NLDEV_ATTR_NDEV_NAME]);
	return 0;
}

static int cmp_dev_index(const void *a, const void *b)
{
	const struct rn_rdma_dev *x = a, *y = b;

	return x->index < y->index ? -1 : x->index > y->index;
}

static int cmp_port_index(const void *a, const void *b)
{
	const struct rn_rdma_port *x = a, *y = b;

	return x->index < y->index ? -1 : x->index > y->index;
}

static bool same_devs(const struct rn_rdma_devs *a, const struct rn_rdma_devs *b)
{
	if (a->n != b->n)
		return false;
	for (size_t i = 0; i < a->n; i++)
		if (a->devs[i].index != b->devs[i].index ||
		    strcmp(a->devs[i].name, b->devs[i].name) != 0)
			return false;
	return true;
}

/* One pass of the device dump, sorted by index; no ports yet. */
static int dev_list_once(struct rn_rdma *rdma, struct rn_rdma_devs *out, char *ack, size_t ack_len,
			 struct rn_error *err)
{
	struct dev_collect c = { .out = out, .cap = 0 };
	struct nlmsghdr *nlh;
	int r;

	memset(out, 0, sizeof(*out));
	nlh = msg_prepare(rdma, RDMA_NLDEV_CMD_GET, NLM_F_DUMP);
	r = msg_exchange(rdma, nlh, dev_dump_cb, &c, ack, ack_len, err);
	if (r < 0) {
		rn_rdma_devs_free(out);
		return r;
	}
	if (out->n > 1)
		qsort(out->devs, out->n, sizeof(*out->devs), cmp_dev_index);
	return 0;
}

/*
 * The kernel sends one device per part of a dump and resumes by counting
 * the devices this netns sees (ib_enum_all_devs): a device that leaves
 * between two parts (moved to a pod, or briefly unregistered while it
 * moves) makes the next one skipped, one that arrives makes one repeated.
 * A list is trusted once two passes in a row agree: a pass that skipped a
 * device saw a change, and the next one sees the set after it.
 */
#define DEV_LIST_PASSES 16

static int dev_list_stable(struct rn_rdma *rdma, struct rn_rdma_devs *out, char *ack,
			   size_t ack_len, struct rn_error *err)
{
	_cleanup_rdma_devs_ struct rn_rdma_devs prev = { 0 };
	int r;

	r = dev_list_once(rdma, &prev, ack, ack_len, err);
	if (r < 0)
		return r;
	for (int pass = 1; pass < DEV_LIST_PASSES; pass++) {
		r = dev_list_once(rdma, out, ack, ack_len, err);
		if (r < 0)
			return r;
		if (same_devs(&prev, out))
			return 0;
		rn_rdma_devs_free(&prev);
		prev = *out;
		memset(out, 0, sizeof(*out));
	}
	return rn_error_set(err, EAGAIN,
			    "the RDMA devices of this network namespace kept changing while being "
			    "listed (%d passes disagreed); try again once devices stop moving",
			    DEV_LIST_PASSES);
}

int rn_rdma_dev_dump(struct rn_rdma *rdma, struct rn_rdma_devs *out, struct rn_error *err)
{
	char ack[256], says[300];
	struct nlmsghdr *nlh;
	int r;

	memset(out, 0, sizeof(*out));
	r = dev_list_stable(rdma, out, ack, sizeof(ack), err);
	if (r < 0)
		goto fail;
	/* The kernel dumps ports one device at a time (DEV_INDEX is required). */
	for (size_t i = 0; i < out->n; i++) {
		nlh = msg_prepare(rdma, RDMA_NLDEV_CMD_PORT_GET, NLM_F_DUMP);
		mnl_attr_put_u32(nlh, RDMA_NLDEV_ATTR_DEV_INDEX, out->devs[i].index);
		r = msg_exchange(rdma, nlh, port_dump_cb, out, ack, sizeof(ack), err);
		if (r == -ENODEV || r == -EINVAL)
			continue; /* unregistered since the device dump */
		if (r < 0)
			goto fail;
		if (out->devs[i].nports > 1)
			qsort(out->devs[i].ports, out->devs[i].nports, sizeof(struct rn_rdma_port),
			      cmp_port_index);
	}
	return 0;
fail:
	rn_rdma_devs_free(out);
	if (rn_error_isset(err))
		return r;
	return rn_error_errno(err, r, "cannot list RDMA devices%s",
			      kernel_says(ack, says, sizeof(says)));
}

void rn_rdma_dev_free(struct rn_rdma_dev *dev)
{
	if (!dev)
		return;
	free(dev->ports);
	dev->ports = NULL;
	dev->nports = 0;
}

void rn_rdma_devs_free(struct rn_rdma_devs *devs)
{
	if (!devs)
		return;
	for (size_t i = 0; i < devs->n; i++)
		rn_rdma_dev_free(&devs->devs[i]);
	free(devs->devs);
	devs->devs = NULL;
	devs->n = 0;
}

enum rn_rdma_binding rn_rdma_port_binding(const struct rn_rdma_devs *devs, const char *dev,
					  uint32_t port, const char **ret_name)
{
	*ret_name = NULL;
	for (size_t d = 0; devs && d < devs->n; d++) {
		if (strcmp(devs->devs[d].name, dev) != 0)
			continue;
		for (size_t k = 0; k < devs->devs[d].nports; k++) {
			const struct rn_rdma_port *p = &devs->devs[d].ports[k];

			if (p->index != port)
				continue;
			if (p->ndev_index == 0 || !p->ndev_name[0])
				return RN_RDMA_BINDING_NOT_HERE;
			*ret_name = p->ndev_name;
			return RN_RDMA_BINDING_HERE;
		}
	}
	return RN_RDMA_BINDING_UNKNOWN;
}

int rn_rdma_dev_find(struct rn_rdma *rdma, const char *name, struct rn_rdma_dev *out,
		     struct rn_error *err)
{
	_cleanup_rdma_devs_ struct rn_rdma_devs devs = { 0 };
	const struct rn_rdma_dev *d;
	size_t i;
	int r;

	r = rn_name_check("RDMA device", name, RN_RDMA_NAME_MAX - 1, err);
	if (r < 0)
		return r;
	r = rn_rdma_dev_dump(rdma, &devs, err);
	if (r < 0)
		return r;
	d = rn_rdma_devs_get(&devs, name, err);
	if (!d)
		return -ENODEV;
	i = (size_t)(d - devs.devs);
	*out = devs.devs[i];
	/* ownership of the ports array moves to out */
	devs.devs[i].ports = NULL;
	devs.devs[i].nports = 0;
	return 0;
}

const struct rn_rdma_dev *rn_rdma_devs_get(const struct rn_rdma_devs *devs, const char *name,
					   struct rn_error *err)
{
	for (size_t i = 0; i < devs->n; i++)
		if (strcmp(devs->devs[i].name, name) == 0)
			return &devs->devs[i];
	rn_error_set(err, ENODEV,
		     "RDMA device %s not found in this network namespace ('rdmans dev "
		     "--all-netns' finds devices that moved into other namespaces)",
		     name);
	return NULL;
}

const char *rn_rdma_port_state_name(uint8_t state)
{
	static const char *const names[] = { "NOP",   "DOWN",	"INIT",
					     "ARMED", "ACTIVE", "ACTIVE_DEFER" };

	return state < RN_ARRAY_SIZE(names) ? names[state] : "UNKNOWN";
}

const char *rn_rdma_port_phys_state_name(uint8_t phys_state)
{
	static const char *const names[] = { "NOP",
					     "SLEEP",
					     "POLLING",
					     "DISABLED",
					     "TRAINING",
					     "LINK_UP",
					     "LINK_ERROR_RECOVERY",
					     "PHY_TEST" };

	return phys_state < RN_ARRAY_SIZE(names) ? names[phys_state] : "UNKNOWN";
}

static int sys_get_cb(const struct nlmsghdr *nlh, void *data)
{
	struct attr_table t;
	int *mode = data;

	parse_attrs(nlh, &t);
	if (t.tb[RDMA_NLDEV_SYS_ATTR_NETNS_MODE])
		*mode = mnl_attr_get_u8(t.tb[RDMA_NLDEV_SYS_ATTR_NETNS_MODE]);
	return 0;
}

int rn_rdma_netns_mode_get(struct rn_rdma *rdma, bool *exclusive, struct rn_error *err)
{
	char ack[256], says[300];
	struct nlmsghdr *nlh;
	int mode = -1;
	int r;

	nlh = msg_prepare(rdma, RDMA_NLDEV_CMD_SYS_GET, 0);
	r = msg_exchange(rdma, nlh, sys_get_cb, &mode, ack, sizeof(ack), err);
	if (r < 0)
		return rn_error_isset(err)
			       ? r
			       : rn_error_errno(err, r, "cannot read the RDMA netns mode%s",
						kernel_says(ack, says, sizeof(says)));
	if (mode < 0)
		return rn_error_set(err, EPROTO, "the kernel did not report the RDMA netns mode");
	*exclusive = mode == 0;
	return 0;
}

int rn_rdma_netns_mode_set(struct rn_rdma *rdma, bool exclusive, struct rn_error *err)
{
	const char *want = exclusive ? "exclusive" : "shared";
	char ack[256], says[300];
	struct nlmsghdr *nlh;
	int r;

	nlh = msg_prepare(rdma, RDMA_NLDEV_CMD_SYS_SET, 0);
	mnl_attr_put_u8(nlh, RDMA_NLDEV_SYS_ATTR_NETNS_MODE, exclusive ? 0 : 1);
	r = msg_exchange(rdma, nlh, NULL, NULL, ack, sizeof(ack), err);
	if (r == -EBUSY)
		return rn_error_set(
			err, EBUSY,
			"cannot switch the RDMA netns mode to %s now: the kernel allows "
			"it only while no network namespace besides the host's exists, "
			"and some do (containers, 'ip netns'). Make it the boot default "
			"with 'rdmans system set netns %s --persist', then reboot or "
			"reload ib_core",
			want, want);
	if (r == -EPERM || r == -EACCES)
		return rn_error_set(err, -r,
				    "cannot switch the RDMA netns mode to %s: "
				    "permission denied (needs CAP_NET_ADMIN; run as root)",
				    want);
	if (r < 0)
		return rn_error_isset(err)
			       ? r
			       : rn_error_errno(err, r, "cannot switch the RDMA netns mode to %s%s",
						want, kernel_says(ack, says, sizeof(says)));
	return 0;
}

int rn_rdma_dev_set_netns(struct rn_rdma *rdma, uint32_t index, const char *name, int nsfd,
			  struct rn_error *err)
{
	char ack[256], says[300];
	struct nlmsghdr *nlh;
	int r;

	/* DEV_NAME must stay out of this message: with it the kernel takes the rename path. */
	nlh = msg_prepare(rdma, RDMA_NLDEV_CMD_SET, 0);
	mnl_attr_put_u32(nlh, RDMA_NLDEV_ATTR_DEV_INDEX, index);
	mnl_attr_put_u32(nlh, RDMA_NLDEV_NET_NS_FD, (uint32_t)nsfd);
	r = msg_exchange(rdma, nlh, NULL, NULL, ack, sizeof(ack), err);
	if (r >= 0)
		return 0;
	if (rn_error_isset(err))
		return r;
	kernel_says(ack, says, sizeof(says));
	switch (-r) {
	case EOPNOTSUPP: {
		struct rn_error mode_err = { 0 };
		bool exclusive;

		/* The kernel gives one answer to both causes; the mode tells them apart. */
		if (rn_rdma_netns_mode_get(rdma, &exclusive, &mode_err) == 0 && exclusive)
			return rn_error_set(
				err, EOPNOTSUPP,
				"cannot move RDMA device %s: its driver cannot change network "
				"namespace (the kernel refuses in exclusive mode: Operation not "
				"supported). Soft devices (rxe, siw) never can, and a soft device "
				"made inside a pod's namespace is registered in the host's: give "
				"the pod a hardware RDMA device (soft devices serve pods in shared "
				"netns mode: rdma-netns \"softRoce\")%s",
				name, ack[0] ? says : "");
		return rn_error_set(err, EOPNOTSUPP,
				    "cannot move RDMA device %s: either the RDMA subsystem is in "
				    "shared netns mode ('rdmans system' tells; 'rdmans system set "
				    "netns exclusive') or this driver cannot change network "
				    "namespace (soft devices such as rxe and siw cannot)%s",
				    name, ack[0] ? says : "");
	}
	case EPERM:
	case EACCES:
		return rn_error_set(err, EPERM,
				    "cannot move RDMA device %s: permission denied (needs "
				    "CAP_NET_ADMIN over the target namespace; run as root)%s",
				    name, ack[0] ? says : "");
	case ENODEV:
	case EINVAL:
		return rn_error_set(err, -r,
				    "cannot move RDMA device %s: the kernel does not see it from "
				    "this network namespace or the target is invalid%s",
				    name, ack[0] ? says : "");
	default:
		return rn_error_errno(err, r, "cannot move RDMA device %s%s", name,
				      ack[0] ? says : "");
	}
}

int rn_rdma_dev_rename(struct rn_rdma *rdma, uint32_t index, const char *old_name,
		       const char *new_name, struct rn_error *err)
{
	char ack[256], says[300];
	struct nlmsghdr *nlh;
	int r;

	r = rn_name_check("RDMA device", new_name, RN_RDMA_NAME_MAX - 1, err);
	if (r < 0)
		return r;
	nlh = msg_prepare(rdma, RDMA_NLDEV_CMD_SET, 0);
	mnl_attr_put_u32(nlh, RDMA_NLDEV_ATTR_DEV_INDEX, index);
	mnl_attr_put_strz(nlh, RDMA_NLDEV_ATTR_DEV_NAME, new_name);
	r = msg_exchange(rdma, nlh, NULL, NULL, ack, sizeof(ack), err);
	if (r == -EEXIST)
		return rn_error_set(err, EEXIST,
				    "cannot rename RDMA device %s to %s: that name is taken (RDMA "
				    "device names are unique across all namespaces)",
				    old_name, new_name);
	if (r < 0)
		return rn_error_isset(err)
			       ? r
			       : rn_error_errno(err, r, "cannot rename RDMA device %s to %s%s",
						old_name, new_name,
						kernel_says(ack, says, sizeof(says)));
	return 0;
}

int rn_rdma_link_add(struct rn_rdma *rdma, const char *name, const char *type, const char *netdev,
		     struct rn_error *err)
{
	char ack[256], says[300];
	struct nlmsghdr *nlh;
	int r;

	r = rn_name_check("RDMA device", name, RN_RDMA_NAME_MAX - 1, err);
	if (r < 0)
		return r;
	r = rn_name_check("link type", type, 31, err);
	if (r < 0)
		return r;
	r = rn_name_check("netdev", netdev, IF_NAMESIZE - 1, err);
	if (r < 0)
		return r;
	/* No NLM_F_CREATE/EXCL: in RDMA netlink those bits read as a dump request. */
	nlh = msg_prepare(rdma, RDMA_NLDEV_CMD_NEWLINK, 0);
	mnl_attr_put_strz(nlh, RDMA_NLDEV_ATTR_DEV_NAME, name);
	mnl_attr_put_strz(nlh, RDMA_NLDEV_ATTR_LINK_TYPE, type);
	mnl_attr_put_strz(nlh, RDMA_NLDEV_ATTR_NDEV_NAME, netdev);
	r = msg_exchange(rdma, nlh, NULL, NULL, ack, sizeof(ack), err);
	if (r == -EINVAL && !ack[0])
		return rn_error_set(err, EINVAL,
				    "cannot add %s device %s on netdev %s: unknown link type or "
				    "netdev (is the %s driver loaded? 'modprobe rdma_%s')",
				    type, name, netdev, type, type);
	if (r < 0)
		return rn_error_isset(err)
			       ? r
			       : rn_error_errno(err, r, "cannot add %s device %s on netdev %s%s",
						type, name, netdev,
						kernel_says(ack, says, sizeof(says)));
	return 0;
}

int rn_rdma_link_del(struct rn_rdma *rdma, uint32_t index, const char *name, struct rn_error *err)
{
	char ack[256], says[300];
	struct nlmsghdr *nlh;
	int r;

	nlh = msg_prepare(rdma, RDMA_NLDEV_CMD_DELLINK, 0);
	mnl_attr_put_u32(nlh, RDMA_NLDEV_ATTR_DEV_INDEX, index);
	r = msg_exchange(rdma, nlh, NULL, NULL, ack, sizeof(ack), err);
	if (r == -EINVAL && !ack[0])
		return rn_error_set(err, EINVAL,
				    "cannot delete RDMA device %s: only soft devices (rxe, siw) "
				    "can be deleted",
				    name);
	if (r < 0)
		return rn_error_isset(err)
			       ? r
			       : rn_error_errno(err, r, "cannot delete RDMA device %s%s", name,
						kernel_says(ack, says, sizeof(says)));
	return 0;
}

/* ---- statistics ---- */

struct stat_collect {
	struct rn_rdma_stats *out;
	size_t cap;
	int error;
};

static int stat_add(struct stat_collect *c, const char *name, uint64_t value)
{
	struct rn_rdma_stat *s;

	if (RN_GROW(c->out->v, &c->cap, c->out->n + 1) < 0)
		return -ENOMEM;
	s = &c->out->v[c->out->n++];
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->value = value;
	return 0;
}

/* One RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY: { ENTRY_NAME string, ENTRY_VALUE u64 }. */
static int stat_entry(const struct nlattr *entry, struct stat_collect *c)
{
	const struct nlattr *attr, *name = NULL, *value = NULL;

	mnl_attr_for_each_nested (attr, entry) {
		int type = mnl_attr_get_type(attr);

		if (type == RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME &&
		    mnl_attr_validate(attr, MNL_TYPE_NUL_STRING) == 0)
			name = attr;
		else if (type == RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE &&
			 mnl_attr_validate(attr, MNL_TYPE_U64) == 0)
			value = attr;
	}
	if (!name || !value)
		return 0;
	return stat_add(c, mnl_attr_get_str(name), mnl_attr_get_u64(value));
}

static int stat_get_cb(const struct nlmsghdr *nlh, void *data)
{
	struct stat_collect *c = data;
	const struct nlattr *attr;

	mnl_attr_for_each (attr, nlh, 0) {
		const struct nlattr *entry;

		if (mnl_attr_get_type(attr) != RDMA_NLDEV_ATTR_STAT_HWCOUNTERS ||
		    mnl_attr_validate(attr, MNL_TYPE_NESTED) < 0)
			continue;
		mnl_attr_for_each_nested (entry, attr) {
			int r;

			if (mnl_attr_get_type(entry) != RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY ||
			    mnl_attr_validate(entry, MNL_TYPE_NESTED) < 0)
				continue;
			r = stat_entry(entry, c);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

void rn_rdma_stats_free(struct rn_rdma_stats *stats)
{
	if (!stats)
		return;
	free(stats->v);
	stats->v = NULL;
	stats->n = 0;
}

int rn_rdma_stat_get(struct rn_rdma *rdma, uint32_t dev_index, uint32_t port,
		     struct rn_rdma_stats *out, struct rn_error *err)
{
	struct stat_collect c = { .out = out };
	char ack[256], says[300];
	struct nlmsghdr *nlh;
	int r;

	memset(out, 0, sizeof(*out));
	nlh = msg_prepare(rdma, RDMA_NLDEV_CMD_STAT_GET, 0);
	mnl_attr_put_u32(nlh, RDMA_NLDEV_ATTR_DEV_INDEX, dev_index);
	mnl_attr_put_u32(nlh, RDMA_NLDEV_ATTR_PORT_INDEX, port);
	r = msg_exchange(rdma, nlh, stat_get_cb, &c, ack, sizeof(ack), err);
	if (r >= 0)
		return 0;
	rn_rdma_stats_free(out);
	if (rn_error_isset(err))
		return r;
	/* No hw_stats on that port (or the device left): the kernel says EINVAL. */
	if (r == -EINVAL || r == -EOPNOTSUPP || r == -ENODEV)
		return -EOPNOTSUPP;
	return rn_error_errno(err, r, "cannot read the statistics of RDMA device %u port %u%s",
			      dev_index, port, kernel_says(ack, says, sizeof(says)));
}
