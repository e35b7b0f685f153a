// SPDX-License-Identifier: Apache-2.0
/*
 * The only module that uses libnl. Each call opens a route socket in the
 * netns of the calling thread, or takes the thread's session socket
 * (rn_link_session_begin), made there too: a thread in a session stays in
 * its netns.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/route.h>
#include <netlink/route/nexthop.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "rdmans/cleanup.h"
#include "rdmans/link.h"
#include "rdmans/netns.h"
#include "rdmans/sysfs.h"
#include "rdmans/util.h"

#ifndef IFF_LOWER_UP
#define IFF_LOWER_UP 0x10000 /* linux/if.h; clashes with net/if.h when both are included */
#endif
/* linux/if_link.h of kernel 6.15 (u8); older headers lack it */
#define RN_IFLA_NETNS_IMMUTABLE 67

RN_DEFINE_TRIVIAL_CLEANUP_FUNC(struct rtnl_link *, rtnl_link_put)
RN_DEFINE_TRIVIAL_CLEANUP_FUNC(struct nl_cache *, nl_cache_free)
RN_DEFINE_TRIVIAL_CLEANUP_FUNC(struct rtnl_addr *, rtnl_addr_put)
RN_DEFINE_TRIVIAL_CLEANUP_FUNC(struct nl_addr *, nl_addr_put)
RN_DEFINE_TRIVIAL_CLEANUP_FUNC(struct rtnl_route *, rtnl_route_put)
/*
 * This thread's session (rn_link_session_begin): the socket its calls share
 * while open, made on first use; poisoned by a failed call (a failed request
 * may leave messages queued), which the next call replaces.
 */
static __thread bool session_open;
static __thread bool session_poisoned;
static __thread struct nl_sock *session_sk;

/*
 * A call's socket: freed at the end of the call unless it is the session's.
 * No call holding the session's socket makes another rn_link_* call: that
 * one could replace a poisoned socket under it.
 */
static void sock_release(struct nl_sock **sk)
{
	if (*sk && *sk != session_sk)
		nl_socket_free(*sk);
}
#define _cleanup_sock_ _cleanup_(sock_release)
#define _cleanup_link_ _cleanup_(rtnl_link_putp)
#define _cleanup_cache_ _cleanup_(nl_cache_freep)
#define _cleanup_addr_ _cleanup_(rtnl_addr_putp)
#define _cleanup_nladdr_ _cleanup_(nl_addr_putp)
#define _cleanup_route_ _cleanup_(rtnl_route_putp)

/* libnl speaks NLE_*; the rest of rdmans speaks errno. */
static int nle_to_errno(int nle)
{
	switch (nle < 0 ? -nle : nle) {
	case NLE_EXIST:
		return EEXIST;
	case NLE_NODEV:
		return ENODEV;
	case NLE_OBJ_NOTFOUND:
		return ENOENT;
	case NLE_PERM:
		return EPERM;
	case NLE_BUSY:
		return EBUSY;
	case NLE_NOMEM:
		return ENOMEM;
	case NLE_AGAIN:
		return EAGAIN;
	case NLE_RANGE:
		return ERANGE;
	case NLE_OPNOTSUPP:
		return EOPNOTSUPP;
	case NLE_NOADDR:
		return EADDRNOTAVAIL;
	case NLE_INVAL:
	case NLE_MSG_TOOSHORT:
		return EINVAL;
	default:
		return EIO;
	}
}

static int nl_fail(struct rn_error *err, int nle, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int nl_fail(struct rn_error *err, int nle, const char *fmt, ...)
{
	char what[512];
	va_list ap;

	session_poisoned = session_open;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return rn_error_set(err, nle_to_errno(nle), "%s: %s", what, nl_geterror(nle));
}

/* A socket of the call's own, for calls that change its callbacks or acks. */
static int private_sock(struct nl_sock **ret, struct rn_error *err)
{
	_cleanup_sock_ struct nl_sock *sk = nl_socket_alloc();
	int r;

	if (!sk)
		return rn_error_set(err, ENOMEM, "out of memory");
	r = nl_connect(sk, NETLINK_ROUTE);
	if (r < 0)
		return rn_error_set(err, nle_to_errno(r), "cannot open a route netlink socket: %s",
				    nl_geterror(r));
	*ret = TAKE_PTR(sk);
	return 0;
}

/* The session's socket when a session is open, else one of the call's own. */
static int route_sock(struct nl_sock **ret, struct rn_error *err)
{
	int r;

	if (!session_open)
		return private_sock(ret, err);
	if (session_sk && session_poisoned) {
		nl_socket_free(session_sk);
		session_sk = NULL;
	}
	session_poisoned = false;
	if (!session_sk) {
		r = private_sock(&session_sk, err);
		if (r < 0)
			return r;
	}
	*ret = session_sk;
	return 0;
}

bool rn_link_session_begin(void)
{
	if (session_open)
		return false;
	session_open = true;
	return true;
}

void rn_link_session_end(void)
{
	nl_socket_free(session_sk);
	session_sk = NULL;
	session_open = false;
	session_poisoned = false;
}

static void fill_link(struct rtnl_link *l, struct rn_link *out)
{
	struct nl_addr *mac = rtnl_link_get_addr(l);
	const char *s;

	memset(out, 0, sizeof(*out));
	out->ifindex = rtnl_link_get_ifindex(l);
	snprintf(out->name, sizeof(out->name), "%s", rtnl_link_get_name(l) ?: "");
	s = rtnl_link_get_ifalias(l);
	snprintf(out->alias, sizeof(out->alias), "%s", s ?: "");
	s = rtnl_link_get_type(l);
	snprintf(out->kind, sizeof(out->kind), "%s", s ?: "");
	if (mac && nl_addr_get_len(mac) == 6) {
		const unsigned char *m = nl_addr_get_binary_addr(mac);

		snprintf(out->mac, sizeof(out->mac), "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1],
			 m[2], m[3], m[4], m[5]);
	}
	/* IPoIB: 4 bytes of flags and QP number, then the port's GID */
	if (mac && rtnl_link_get_arptype(l) == ARPHRD_INFINIBAND && nl_addr_get_len(mac) == 20) {
		out->ipoib = true;
		memcpy(out->ib_gid, (const unsigned char *)nl_addr_get_binary_addr(mac) + 4, 16);
	}
	out->mtu = rtnl_link_get_mtu(l);
	out->flags = rtnl_link_get_flags(l);
	out->up = out->flags & IFF_UP;
	out->carrier = out->flags & IFF_LOWER_UP;
}

int rn_link_by_name(const char *name, struct rn_link *out, struct rn_error *err)
{
	_cleanup_sock_ struct nl_sock *sk = NULL;
	_cleanup_link_ struct rtnl_link *l = NULL;
	int r;

	r = rn_name_check("netdev", name, IF_NAMESIZE - 1, err);
	if (r < 0)
		return r;
	r = route_sock(&sk, err);
	if (r < 0)
		return r;
	r = rtnl_link_get_kernel(sk, 0, name, &l);
	if (r < 0) {
		if (r == -NLE_NODEV || r == -NLE_OBJ_NOTFOUND)
			return rn_error_set(err, ENODEV,
					    "netdev %s not found in this network namespace", name);
		return nl_fail(err, r, "cannot look up netdev %s", name);
	}
	fill_link(l, out);
	return 0;
}

int rn_link_by_index(int ifindex, struct rn_link *out, struct rn_error *err)
{
	_cleanup_sock_ struct nl_sock *sk = NULL;
	_cleanup_link_ struct rtnl_link *l = NULL;
	int r;

	if (ifindex <= 0)
		return rn_error_set(err, ENODEV, "invalid interface index %d", ifindex);
	r = route_sock(&sk, err);
	if (r < 0)
		return r;
	r = rtnl_link_get_kernel(sk, ifindex, NULL, &l);
	if (r < 0) {
		if (r == -NLE_NODEV || r == -NLE_OBJ_NOTFOUND)
			return rn_error_set(err, ENODEV,
					    "no netdev with index %d in this network namespace",
					    ifindex);
		return nl_fail(err, r, "cannot look up netdev with index %d", ifindex);
	}
	fill_link(l, out);
	return 0;
}

/* Every netdev of this netns, in a cache that lives as long as the socket. */
static int link_cache(struct nl_sock **sk, struct nl_cache **cache, struct rn_error *err)
{
	int r = route_sock(sk, err);

	if (r < 0)
		return r;
	r = rtnl_link_alloc_cache(*sk, AF_UNSPEC, cache);
	if (r < 0)
		return nl_fail(err, r, "cannot list netdevs");
	return 0;
}

int rn_link_by_mac(const char *mac, struct rn_link *out, struct rn_error *err)
{
	_cleanup_sock_ struct nl_sock *sk = NULL;
	_cleanup_cache_ struct nl_cache *cache = NULL;
	struct nl_object *obj;
	size_t found = 0;
	int r;

	if (!mac || strlen(mac) != 17)
		return rn_error_set(err, EINVAL, "'%s' is not a MAC address (aa:bb:cc:dd:ee:ff)",
				    mac ? mac : "");
	r = link_cache(&sk, &cache, err);
	if (r < 0)
		return r;
	for (obj = nl_cache_get_first(cache); obj; obj = nl_cache_get_next(obj)) {
		struct rn_link l;

		fill_link((struct rtnl_link *)obj, &l);
		if (strcasecmp(l.mac, mac) != 0)
			continue;
		/* VLANs and macvlans may share the MAC: prefer the first, report the clash. */
		if (found++ == 0)
			*out = l;
	}
	if (found == 0)
		return rn_error_set(err, ENODEV, "no netdev with MAC %s in this network namespace",
				    mac);
	if (found > 1)
		return rn_error_set(err, ENOTUNIQ,
				    "%zu netdevs have MAC %s; select the netdev by name instead",
				    found, mac);
	return 0;
}

int rn_link_by_ib_gid(const uint8_t gid[16], struct rn_link *out, struct rn_error *err)
{
	_cleanup_sock_ struct nl_sock *sk = NULL;
	_cleanup_cache_ struct nl_cache *cache = NULL;
	struct nl_object *obj;
	int r;

	r = link_cache(&sk, &cache, err);
	if (r < 0)
		return r;
	for (obj = nl_cache_get_first(cache); obj; obj = nl_cache_get_next(obj)) {
		struct rtnl_link *rl = (struct rtnl_link *)obj;
		struct rn_link l;

		fill_link(rl, &l);
		/* P_Key children share the GID; their link is the parent, the parent's is itself */
		if (l.ipoib && memcmp(l.ib_gid, gid, 16) == 0 &&
		    (rtnl_link_get_link(rl) == 0 || rtnl_link_get_link(rl) == l.ifindex)) {
			*out = l;
			return 0;
		}
	}
	return rn_error_set(err, ENODEV, "no IPoIB netdev of that port in this network namespace");
}

int rn_link_by_bus_id(const char *bus_id, struct rn_link *out, struct rn_error *err)
{
	char names[4][IF_NAMESIZE];
	size_t n = 0;
	int r;

	r = rn_sysfs_netdevs_by_bus_id(bus_id, names, RN_ARRAY_SIZE(names), &n, err);
	if (r < 0)
		return r;
	if (n == 0)
		return rn_error_set(err, ENODEV,
				    "device %s has no netdev in this network namespace (moved "
				    "already, or bound to a driver without one?)",
				    bus_id);
	if (n > 1)
		return rn_error_set(err, ENOTUNIQ,
				    "device %s has %zu netdevs (%s, %s, ...); select one by name",
				    bus_id, n, names[0], names[1]);
	return rn_link_by_name(names[0], out, err);
}

static int link_change(int ifindex, const char *name, struct rtnl_link *changes, const char *what,
		       struct rn_error *err)
{
	_cleanup_sock_ struct nl_sock *sk = NULL;
	_cleanup_link_ struct rtnl_link *orig = NULL;
	int r;

	r = route_sock(&sk, err);
	if (r < 0)
		return r;
	orig = rtnl_link_alloc();
	if (!orig)
		return rn_error_set(err, ENOMEM, "out of memory");
	rtnl_link_set_ifindex(orig, ifindex);
	r = rtnl_link_change(sk, orig, changes, 0);
	if (r < 0)
		return nl_fail(err, r, "cannot %s netdev %s", what, name);
	return 0;
}

/* ---- netns-local netdevs ---- */

struct immutable_probe {
	bool seen;
	bool immutable;
	struct rn_link *link; /* filled from the same answer when not NULL */
	bool got_link;
};

static void immutable_fill(struct nl_object *obj, void *arg)
{
	struct immutable_probe *p = arg;

	fill_link((struct rtnl_link *)obj, p->link);
	p->got_link = true;
}

static int immutable_cb(struct nl_msg *msg, void *arg)
{
	struct immutable_probe *p = arg;
	struct nlattr *tb[RN_IFLA_NETNS_IMMUTABLE + 1];

	if (nlmsg_parse(nlmsg_hdr(msg), sizeof(struct ifinfomsg), tb, RN_IFLA_NETNS_IMMUTABLE,
			NULL) < 0)
		return NL_SKIP;
	if (tb[RN_IFLA_NETNS_IMMUTABLE] && nla_len(tb[RN_IFLA_NETNS_IMMUTABLE]) >= 1) {
		p->seen = true;
		p->immutable = nla_get_u8(tb[RN_IFLA_NETNS_IMMUTABLE]) != 0;
	}
	if (p->link && nlmsg_hdr(msg)->nlmsg_type == RTM_NEWLINK)
		(void)nl_msg_parse(msg, immutable_fill, p);
	return NL_OK;
}

/*
 * IFLA_NETNS_IMMUTABLE of RTM_GETLINK (libnl's link object does not keep
 * it), and with p->link set the link itself, from the same answer.
 */
static int netlink_immutable(int ifindex, const char *name, struct immutable_probe *p,
			     struct rn_error *err)
{
	_cleanup_sock_ struct nl_sock *sk = NULL;
	struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC, .ifi_index = ifindex };
	int r;

	r = private_sock(&sk, err);
	if (r < 0)
		return r;
	nl_socket_disable_auto_ack(sk);
	r = nl_socket_modify_cb(sk, NL_CB_VALID, NL_CB_CUSTOM, immutable_cb, p);
	if (r == 0)
		r = nl_send_simple(sk, RTM_GETLINK, 0, &ifi, sizeof(ifi));
	if (r >= 0)
		r = nl_recvmsgs_default(sk);
	if (r < 0) {
		if (p->link && (r == -NLE_NODEV || r == -NLE_OBJ_NOTFOUND))
			return rn_error_set(err, ENODEV,
					    "no netdev with index %d in this network namespace",
					    ifindex);
		return nl_fail(err, r, "cannot look up netdev %s", name);
	}
	return 0;
}

static int ethtool_call(int fd, const char *name, void *data)
{
	struct ifreq ifr = { 0 };

	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	ifr.ifr_data = data;
	return ioctl(fd, SIOCETHTOOL, &ifr) < 0 ? -errno : 0;
}

/* The ethtool feature "netns-local" (kernels before 6.12); *ret_known false when absent. */
static int ethtool_netns_local(const struct rn_link *l, bool *ret_known, bool *ret,
			       struct rn_error *err)
{
	_cleanup_close_ int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	_cleanup_free_ struct ethtool_sset_info *info = NULL;
	_cleanup_free_ struct ethtool_gstrings *names = NULL;
	_cleanup_free_ struct ethtool_gfeatures *feats = NULL;
	uint32_t n, idx, blocks;
	int r;

	*ret_known = *ret = false;
	if (fd < 0)
		return rn_error_errno(err, errno, "cannot open a socket for ethtool");
	info = calloc(1, sizeof(*info) + sizeof(uint32_t));
	if (!info)
		return rn_error_set(err, ENOMEM, "out of memory");
	info->cmd = ETHTOOL_GSSET_INFO;
	info->sset_mask = 1ULL << ETH_SS_FEATURES;
	r = ethtool_call(fd, l->name, info);
	if (r == -EOPNOTSUPP)
		return 0;
	if (r < 0)
		return rn_error_errno(err, -r, "cannot read the features of netdev %s", l->name);
	if (!(info->sset_mask & (1ULL << ETH_SS_FEATURES)) || info->data[0] == 0 ||
	    info->data[0] > 4096)
		return 0;
	n = info->data[0];
	names = calloc(1, sizeof(*names) + (size_t)n * ETH_GSTRING_LEN);
	blocks = (n + 31) / 32;
	feats = calloc(1, sizeof(*feats) + blocks * sizeof(feats->features[0]));
	if (!names || !feats)
		return rn_error_set(err, ENOMEM, "out of memory");
	names->cmd = ETHTOOL_GSTRINGS;
	names->string_set = ETH_SS_FEATURES;
	names->len = n;
	r = ethtool_call(fd, l->name, names);
	if (r < 0)
		return rn_error_errno(err, -r, "cannot read the feature names of netdev %s",
				      l->name);
	for (idx = 0; idx < n && idx < names->len; idx++)
		if (strncmp((const char *)names->data + (size_t)idx * ETH_GSTRING_LEN,
			    "netns-local", ETH_GSTRING_LEN) == 0)
			break;
	if (idx == n || idx >= names->len)
		return 0;
	feats->cmd = ETHTOOL_GFEATURES;
	feats->size = blocks;
	r = ethtool_call(fd, l->name, feats);
	if (r < 0)
		return rn_error_errno(err, -r, "cannot read the features of netdev %s", l->name);
	*ret_known = true;
	*ret = feats->features[idx / 32].active & (1U << (idx % 32));
	return 0;
}

int rn_link_netns_immutable(const struct rn_link *l, bool *ret, struct rn_error *err)
{
	struct immutable_probe p = { 0 };
	bool known = false;
	int r;

	*ret = false;
	if (l->flags & IFF_LOOPBACK) {
		*ret = true;
		return 0;
	}
	r = netlink_immutable(l->ifindex, l->name, &p, err);
	if (r < 0)
		return r;
	if (p.seen) {
		*ret = p.immutable;
		return 0;
	}
	return ethtool_netns_local(l, &known, ret, err);
}

int rn_link_by_index_movable(int ifindex, struct rn_link *out, bool *ret_immutable,
			     struct rn_error *err)
{
	char what[32];
	struct immutable_probe p = { .link = out };
	bool known = false;
	int r;

	*ret_immutable = false;
	if (ifindex <= 0)
		return rn_error_set(err, ENODEV, "invalid interface index %d", ifindex);
	snprintf(what, sizeof(what), "with index %d", ifindex);
	r = netlink_immutable(ifindex, what, &p, err);
	if (r < 0)
		return r;
	if (!p.got_link)
		return rn_error_set(err, ENODEV,
				    "no netdev with index %d in this network namespace", ifindex);
	if (out->flags & IFF_LOOPBACK)
		*ret_immutable = true;
	else if (p.seen)
		*ret_immutable = p.immutable;
	else
		return ethtool_netns_local(out, &known, ret_immutable, err);
	return 0;
}

struct name_probe {
	const char *name;
	bool found;
	int ifindex;
};

static int probe_name_here(void *arg, struct rn_error *err)
{
	struct name_probe *p = arg;
	struct rn_link l;
	struct rn_error ignored = { 0 };

	p->found = rn_link_by_name(p->name, &l, &ignored) == 0;
	p->ifindex = p->found ? l.ifindex : 0;
	return 0;
}

struct move_back {
	const char *name_there;
	const char *name_home;
	int home_fd;
};

static int move_back_here(void *arg, struct rn_error *err)
{
	struct move_back *mb = arg;
	struct rn_link l;
	int r;

	r = rn_link_by_name(mb->name_there, &l, err);
	if (r < 0)
		return r;
	return rn_link_move(l.ifindex, l.name, mb->home_fd, mb->name_home, err);
}

/* Whether the netdev that left as ifindex is in nsfd's netns under `name` (same ifindex). */
static bool arrived_as(int nsfd, int ifindex, const char *name)
{
	struct name_probe probe = { .name = name };
	struct rn_error ignored = { 0 };

	return rn_netns_run(nsfd, probe_name_here, &probe, &ignored) == 0 && probe.found &&
	       probe.ifindex == ifindex;
}

static int link_move(int ifindex, const char *name, int nsfd, const struct rn_link_move_to *to,
		     bool probe_first, bool *ret_partial, struct rn_error *err)
{
	_cleanup_link_ struct rtnl_link *changes = rtnl_link_alloc();
	const char *final_name = to->name ? to->name : name;
	struct name_probe probe = { .name = final_name };
	struct rn_link still_here;
	struct rn_error ignored = { 0 };
	int r;

	if (ret_partial)
		*ret_partial = false;
	if (!changes)
		return rn_error_set(err, ENOMEM, "out of memory");
	if (to->name) {
		r = rn_name_check("netdev", to->name, IF_NAMESIZE - 1, err);
		if (r < 0)
			return r;
		rtnl_link_set_name(changes, to->name);
	}
	/*
	 * The kernel moves first and renames after: a clash on the new name
	 * fails the rename with the netdev already moved. Check first (unless
	 * the caller just did, rn_link_move_to).
	 */
	if (probe_first) {
		r = rn_netns_run(nsfd, probe_name_here, &probe, err);
		if (r < 0)
			return r;
		if (probe.found)
			return rn_error_set(err, EEXIST,
					    "cannot move netdev %s: the target network namespace "
					    "already has a netdev named %s",
					    name, probe.name);
	}
	if (to->alias)
		rtnl_link_set_ifalias(changes, to->alias);
	if (to->up)
		rtnl_link_set_flags(changes, IFF_UP);
	rtnl_link_set_ns_fd(changes, nsfd);
	r = link_change(ifindex, name, changes, "move", err);
	if (r < 0 && rn_link_by_index(ifindex, &still_here, &ignored) < 0) {
		/* Moved and renamed, then the alias or the up state refused: the caller sets them. */
		if (ret_partial && (to->alias || to->up) && arrived_as(nsfd, ifindex, final_name)) {
			rn_error_clear(err);
			*ret_partial = true;
			return 0;
		}
		/* Half done (moved, not renamed): bring it back under its old name. */
		_cleanup_close_ int home = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
		struct move_back mb = { .name_there = name, .name_home = name, .home_fd = home };

		if (home < 0 || rn_netns_run(nsfd, move_back_here, &mb, &ignored) < 0)
			rn_error_wrap(err,
				      "netdev %s was left in the target namespace under its "
				      "old name; move it back with 'ip link set'",
				      name);
	} else if (r == -EINVAL) {
		/* dev_change_net_namespace() says EINVAL for a netns-local netdev */
		char why[RN_ERROR_MSG_MAX / 2];

		snprintf(why, sizeof(why), "%.500s", err ? err->msg : "");
		return rn_error_set(err, EOPNOTSUPP,
				    "the kernel refuses to move netdev %s to another network "
				    "namespace (%s): a loopback, bridge or other netns-local "
				    "netdev cannot move; select the physical netdev",
				    name, why);
	}
	return r;
}

int rn_link_move(int ifindex, const char *name, int nsfd, const char *new_name,
		 struct rn_error *err)
{
	const struct rn_link_move_to to = { .name = new_name };

	return link_move(ifindex, name, nsfd, &to, true, NULL, err);
}

int rn_link_move_to(int ifindex, const char *name, int nsfd, const struct rn_link_move_to *to,
		    bool *ret_partial, struct rn_error *err)
{
	return link_move(ifindex, name, nsfd, to, false, ret_partial, err);
}

int rn_link_rename(int ifindex, const char *name, const char *new_name, struct rn_error *err)
{
	_cleanup_link_ struct rtnl_link *changes = rtnl_link_alloc();
	int r;

	if (!changes)
		return rn_error_set(err, ENOMEM, "out of memory");
	r = rn_name_check("netdev", new_name, IF_NAMESIZE - 1, err);
	if (r < 0)
		return r;
	rtnl_link_set_name(changes, new_name);
	return link_change(ifindex, name, changes, "rename", err);
}

int rn_link_set_alias(int ifindex, const char *name, const char *alias, struct rn_error *err)
{
	_cleanup_link_ struct rtnl_link *changes = rtnl_link_alloc();

	if (!changes)
		return rn_error_set(err, ENOMEM, "out of memory");
	rtnl_link_set_ifalias(changes, alias);
	return link_change(ifindex, name, changes, "set the alias of", err);
}

int rn_link_set_up(int ifindex, const char *name, bool up, struct rn_error *err)
{
	_cleanup_link_ struct rtnl_link *changes = rtnl_link_alloc();

	if (!changes)
		return rn_error_set(err, ENOMEM, "out of memory");
	if (up)
		rtnl_link_set_flags(changes, IFF_UP);
	else
		rtnl_link_unset_flags(changes, IFF_UP);
	return link_change(ifindex, name, changes, up ? "bring up" : "bring down", err);
}

static int parse_cidr(const char *cidr, struct nl_addr **ret, struct rn_error *err)
{
	int r;

	if (!cidr || !strchr(cidr, '/'))
		return rn_error_set(err, EINVAL,
				    "'%s' is not an address with a prefix length "
				    "(a.b.c.d/nn or x::y/nn)",
				    cidr ? cidr : "");
	r = nl_addr_parse(cidr, AF_UNSPEC, ret);
	if (r < 0)
		return rn_error_set(err, EINVAL, "'%s' is not a valid address: %s", cidr,
				    nl_geterror(r));
	return 0;
}

static int addr_change(int ifindex, const char *name, const char *cidr, bool add,
		       struct rn_error *err)
{
	_cleanup_sock_ struct nl_sock *sk = NULL;
	_cleanup_addr_ struct rtnl_addr *a = NULL;
	_cleanup_nladdr_ struct nl_addr *local = NULL;
	int r;

	r = parse_cidr(cidr, &local, err);
	if (r < 0)
		return r;
	r = route_sock(&sk, err);
	if (r < 0)
		return r;
	a = rtnl_addr_alloc();
	if (!a)
		return rn_error_set(err, ENOMEM, "out of memory");
	rtnl_addr_set_ifindex(a, ifindex);
	r = rtnl_addr_set_local(a, local);
	if (r < 0)
		return nl_fail(err, r, "invalid address %s", cidr);
	r = add ? rtnl_addr_add(sk, a, 0) : rtnl_addr_delete(sk, a, 0);
	if (r < 0)
		return nl_fail(err, r, "cannot %s address %s %s %s", add ? "add" : "remove", cidr,
			       add ? "to" : "from", name);
	return 0;
}

int rn_link_addr_add(int ifindex, const char *name, const char *cidr, struct rn_error *err)
{
	return addr_change(ifindex, name, cidr, true, err);
}

int rn_link_addr_del(int ifindex, const char *name, const char *cidr, struct rn_error *err)
{
	return addr_change(ifindex, name, cidr, false, err);
}

int rn_link_addr_list(int ifindex, int family, char (*cidrs)[64], size_t max, size_t *ret_n,
		      struct rn_error *err)
{
	_cleanup_sock_ struct nl_sock *sk = NULL;
	_cleanup_cache_ struct nl_cache *cache = NULL;
	struct nl_object *obj;
	size_t n = 0;
	int r;

	r = route_sock(&sk, err);
	if (r < 0)
		return r;
	r = rtnl_addr_alloc_cache(sk, &cache);
	if (r < 0)
		return nl_fail(err, r, "cannot list addresses");
	for (obj = nl_cache_get_first(cache); obj; obj = nl_cache_get_next(obj)) {
		struct rtnl_addr *a = (struct rtnl_addr *)obj;

		if (rtnl_addr_get_ifindex(a) != ifindex)
			continue;
		if (family != AF_UNSPEC && rtnl_addr_get_family(a) != family)
			continue;
		if (n < max)
			nl_addr2str(rtnl_addr_get_local(a), cidrs[n], sizeof(cidrs[n]));
		n++;
	}
	*ret_n = n;
	return 0;
}

int rn_link_route_add(int ifindex, const char *name, const char *dst, const char *gw,
		      struct rn_error *err)
{
	_cleanup_sock_ struct nl_sock *sk = NULL;
	_cleanup_route_ struct rtnl_route *route = NULL;
	_cleanup_nladdr_ struct nl_addr *dst_addr = NULL;
	_cleanup_nladdr_ struct nl_addr *gw_addr = NULL;
	struct rtnl_nexthop *nh;
	int family;
	int r;

	if (gw && nl_addr_parse(gw, AF_UNSPEC, &gw_addr) < 0)
		return rn_error_set(err, EINVAL, "'%s' is not a valid gateway address", gw);
	family = gw_addr ? nl_addr_get_family(gw_addr) : AF_INET;
	if (!dst || strcmp(dst, "default") == 0) {
		r = nl_addr_parse(family == AF_INET6 ? "::/0" : "0.0.0.0/0", family, &dst_addr);
	} else {
		r = parse_cidr(dst, &dst_addr, err);
		if (r < 0)
			return r;
	}
	if (r < 0)
		return rn_error_set(err, EINVAL, "invalid route destination");
	r = route_sock(&sk, err);
	if (r < 0)
		return r;
	route = rtnl_route_alloc();
	nh = rtnl_route_nh_alloc();
	if (!route || !nh) {
		if (nh)
			rtnl_route_nh_free(nh);
		return rn_error_set(err, ENOMEM, "out of memory");
	}
	rtnl_route_set_family(route, nl_addr_get_family(dst_addr));
	rtnl_route_set_dst(route, dst_addr);
	rtnl_route_nh_set_ifindex(nh, ifindex);
	if (gw_addr)
		rtnl_route_nh_set_gateway(nh, gw_addr);
	else
		rtnl_route_set_scope(route, RT_SCOPE_LINK);
	rtnl_route_add_nexthop(route, nh); /* route owns nh now */
	r = rtnl_route_add(sk, route, NLM_F_CREATE | NLM_F_EXCL);
	if (r < 0)
		return nl_fail(err, r, "cannot add route to %s via %s", dst ? dst : "default",
			       gw ? gw : name);
	return 0;
}

/* The default route of the main table in cache that comes after after (NULL: the first). */
static struct rtnl_route *next_default_route(struct nl_cache *cache, struct rtnl_route *after)
{
	struct nl_object *obj =
		after ? nl_cache_get_next((struct nl_object *)after) : nl_cache_get_first(cache);

	for (; obj; obj = nl_cache_get_next(obj)) {
		struct rtnl_route *route = (struct rtnl_route *)obj;
		struct nl_addr *dst = rtnl_route_get_dst(route);

		if (rtnl_route_get_table(route) == RT_TABLE_MAIN &&
		    (!dst || nl_addr_get_prefixlen(dst) == 0))
			return route;
	}
	return NULL;
}

int rn_link_default_route_ifindex(int *ret_ifindex, struct rn_error *err)
{
	_cleanup_sock_ struct nl_sock *sk = NULL;
	_cleanup_cache_ struct nl_cache *cache = NULL;
	struct rtnl_route *route;
	int r;

	*ret_ifindex = 0;
	r = route_sock(&sk, err);
	if (r < 0)
		return r;
	r = rtnl_route_alloc_cache(sk, AF_INET, 0, &cache);
	if (r < 0)
		return nl_fail(err, r, "cannot list routes");
	for (route = next_default_route(cache, NULL); route;
	     route = next_default_route(cache, route)) {
		if (rtnl_route_get_nnexthops(route) > 0) {
			*ret_ifindex = rtnl_route_nh_get_ifindex(rtnl_route_nexthop_n(route, 0));
			return 0;
		}
	}
	return 0;
}

struct default_probe {
	int ifindex;
	bool found;
};

static int default_route_cb(struct nl_msg *msg, void *arg)
{
	struct default_probe *p = arg;
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	struct rtmsg *rtm = nlmsg_data(nlh);
	struct nlattr *tb[RTA_MAX + 1];
	uint32_t table;

	if (nlh->nlmsg_type != RTM_NEWROUTE ||
	    nlmsg_parse(nlh, sizeof(*rtm), tb, RTA_MAX, NULL) < 0 || rtm->rtm_dst_len != 0)
		return NL_SKIP;
	table = tb[RTA_TABLE] ? nla_get_u32(tb[RTA_TABLE]) : rtm->rtm_table;
	if (table != RT_TABLE_MAIN)
		return NL_SKIP;
	if (tb[RTA_OIF] && (int)nla_get_u32(tb[RTA_OIF]) == p->ifindex)
		p->found = true;
	if (tb[RTA_MULTIPATH]) {
		struct rtnexthop *nh = nla_data(tb[RTA_MULTIPATH]);
		int left = nla_len(tb[RTA_MULTIPATH]);

		while (left >= (int)sizeof(*nh) && nh->rtnh_len >= sizeof(*nh) &&
		       nh->rtnh_len <= left) {
			if (nh->rtnh_ifindex == p->ifindex)
				p->found = true;
			left -= RTNH_ALIGN(nh->rtnh_len);
			nh = RTNH_NEXT(nh);
		}
	}
	return NL_OK;
}

/*
 * Does a default route of the main table go through ifindex? One dump of
 * family's routes, which the kernel filters (strict checking, 4.20+) to
 * the main table's routes through ifindex: a node's full routing table is
 * walked in the kernel, not copied out. Kernels that do not filter send
 * every route; the callback tells them apart either way.
 */
static int default_route_in(struct nl_sock *sk, int family, int ifindex, bool *ret,
			    struct rn_error *err)
{
	struct rtmsg rtm = { .rtm_family = (unsigned char)family, .rtm_table = RT_TABLE_MAIN };
	struct default_probe p = { .ifindex = ifindex };
	struct nl_msg *msg;
	int r;

	msg = nlmsg_alloc_simple(RTM_GETROUTE, NLM_F_DUMP);
	if (!msg)
		return rn_error_set(err, ENOMEM, "out of memory");
	r = nlmsg_append(msg, &rtm, sizeof(rtm), NLMSG_ALIGNTO);
	if (r == 0)
		r = nla_put_u32(msg, RTA_OIF, (uint32_t)ifindex);
	if (r == 0)
		r = nl_socket_modify_cb(sk, NL_CB_VALID, NL_CB_CUSTOM, default_route_cb, &p);
	if (r == 0)
		r = nl_send_auto(sk, msg);
	nlmsg_free(msg);
	if (r >= 0)
		r = nl_recvmsgs_default(sk);
	/*
	 * The filter is checked before the dump: a netns whose main table was
	 * never made (no address yet) answers ENOENT, a netdev gone ENODEV. The
	 * full dump said "no default route" for both.
	 */
	if (r == -NLE_OBJ_NOTFOUND || r == -NLE_NODEV)
		return 0;
	if (r < 0)
		return nl_fail(err, r, "cannot list routes");
	if (p.found)
		*ret = true;
	return 0;
}

int rn_link_has_default_route(int ifindex, bool *ret, struct rn_error *err)
{
	_cleanup_sock_ struct nl_sock *sk = NULL;
	int r;

	*ret = false;
	r = private_sock(&sk, err);
	if (r < 0)
		return r;
	nl_socket_disable_auto_ack(sk);
	/* best effort: a kernel without it (before 4.20) dumps everything */
	(void)setsockopt(nl_socket_get_fd(sk), SOL_NETLINK, NETLINK_GET_STRICT_CHK, &(int){ 1 },
			 sizeof(int));
	r = default_route_in(sk, AF_INET, ifindex, ret, err);
	if (r < 0)
		return r;
	return default_route_in(sk, AF_INET6, ifindex, ret, err);
}
