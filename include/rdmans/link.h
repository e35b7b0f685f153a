/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Netdev operations (rtnetlink through libnl-route-3, which stays inside
 * link.c). Every call acts in the netns of the calling thread: wrap it in
 * rn_netns_run() to act elsewhere.
 */
#ifndef RDMANS_LINK_H
#define RDMANS_LINK_H

#include <net/if.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include "rdmans/cleanup.h"
#include "rdmans/error.h"

struct rn_link {
	int ifindex;
	char name[IF_NAMESIZE];
	char alias[256];
	char mac[18]; /* "aa:bb:cc:dd:ee:ff" or "" */
	char kind[32]; /* "veth", "macvlan", "" for a physical netdev */
	unsigned int mtu;
	unsigned int flags; /* IFF_* */
	bool up; /* IFF_UP set */
	bool carrier; /* IFF_LOWER_UP set */
	bool ipoib; /* an IPoIB netdev: its hardware address ends in its port's GID */
	uint8_t ib_gid[16]; /* that GID (GID 0 of the port), when ipoib */
};

/*
 * A session: until rn_link_session_end(), this thread's calls share one route
 * netlink socket (one per netns instead of one per call). The thread must
 * stay in its netns while the session is open. false when one is open
 * already: the outer one goes on, and this caller must not end it
 * (_cleanup_link_session_ does both).
 */
bool rn_link_session_begin(void);
void rn_link_session_end(void);
static inline void rn_link_session_endp(const bool *began)
{
	if (*began)
		rn_link_session_end();
}
/* "unused": a session is held for its scope, never read (clang warns otherwise) */
#define _cleanup_link_session_ _cleanup_(rn_link_session_endp) __attribute__((unused))

int rn_link_by_name(const char *name, struct rn_link *out, struct rn_error *err);
int rn_link_by_index(int ifindex, struct rn_link *out, struct rn_error *err);
/* Case-insensitive MAC match; -ENODEV when none, -ENOTUNIQ when several. */
int rn_link_by_mac(const char *mac, struct rn_link *out, struct rn_error *err);
/* The netdev of a PCI function or auxiliary device (sysfs); -ENOTUNIQ when it has several. */
/*
 * The IPoIB netdev of the InfiniBand port whose GID 0 is gid, in this netns:
 * the kernel makes a new one whenever its RDMA device changes netns.
 */
int rn_link_by_ib_gid(const uint8_t gid[16], struct rn_link *out, struct rn_error *err);
int rn_link_by_bus_id(const char *bus_id, struct rn_link *out, struct rn_error *err);

/*
 * Whether netdev l can never leave its network namespace: a loopback, or a
 * netdev its driver marks netns-local (bridges, the fallback tunnels tunl0,
 * gre0, sit0...). Read from IFLA_NETNS_IMMUTABLE (kernel 6.15+), else from
 * the ethtool feature "netns-local" (before 6.12); kernels in between tell
 * neither (*ret false) and refuse the move itself (rn_link_move: -EOPNOTSUPP).
 */
int rn_link_netns_immutable(const struct rn_link *l, bool *ret, struct rn_error *err);
/* rn_link_by_index() and rn_link_netns_immutable() in one RTM_GETLINK. */
int rn_link_by_index_movable(int ifindex, struct rn_link *out, bool *ret_immutable,
			     struct rn_error *err);

/*
 * Moves netdev `ifindex` into the netns of nsfd and, when new_name is not
 * NULL, renames it in the same RTM_NEWLINK so it never shows up under a
 * clashing name there. A netdev the kernel will not let go (netns-local)
 * gives -EOPNOTSUPP.
 */
int rn_link_move(int ifindex, const char *name, int nsfd, const char *new_name,
		 struct rn_error *err);
/*
 * What a move also sets, in the same RTM_NEWLINK. The kernel moves the
 * netdev first and applies the rest in the target netns, so nothing is
 * left to do there (no thread, no socket).
 */
struct rn_link_move_to {
	const char *name; /* rename it there; NULL keeps its name */
	const char *alias; /* NULL leaves the alias; "" clears it */
	bool up; /* bring it up there */
};
/*
 * rn_link_move() for a caller that has just checked that the target netns
 * has no netdev of the final name (no look there first, no thread), with
 * the alias and up state of `to`. A kernel that moved and renamed the
 * netdev but refused the alias or the up state gives 0 with *ret_partial
 * true: the caller sets those itself, and gets the kernel's own error for
 * them. Otherwise *ret_partial is false.
 */
int rn_link_move_to(int ifindex, const char *name, int nsfd, const struct rn_link_move_to *to,
		    bool *ret_partial, struct rn_error *err);
int rn_link_rename(int ifindex, const char *name, const char *new_name, struct rn_error *err);
int rn_link_set_alias(int ifindex, const char *name, const char *alias, struct rn_error *err);
int rn_link_set_up(int ifindex, const char *name, bool up, struct rn_error *err);

/* Addresses as "a.b.c.d/nn" or "x::y/nn". */
int rn_link_addr_add(int ifindex, const char *name, const char *cidr, struct rn_error *err);
int rn_link_addr_del(int ifindex, const char *name, const char *cidr, struct rn_error *err);
/* family: AF_INET, AF_INET6 or AF_UNSPEC. Writes up to max CIDR strings, *ret_n gets the total. */
int rn_link_addr_list(int ifindex, int family, char (*cidrs)[64], size_t max, size_t *ret_n,
		      struct rn_error *err);

/* dst "default" or a CIDR; gw may be NULL for an on-link route. */
int rn_link_route_add(int ifindex, const char *name, const char *dst, const char *gw,
		      struct rn_error *err);
/* ifindex of the IPv4 default route's device, 0 when there is none. */
int rn_link_default_route_ifindex(int *ret_ifindex, struct rn_error *err);
/* Whether netdev ifindex carries a default route (IPv4 or IPv6, main table, any nexthop). */
int rn_link_has_default_route(int ifindex, bool *ret, struct rn_error *err);

#endif
