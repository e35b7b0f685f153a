/* SPDX-License-Identifier: Apache-2.0 */
/* Addresses and ranges: parsing, 128-bit arithmetic, excludes, the search from a hint (pure, ipam_range.c). */
#ifndef RDMANS_IPAM_RANGE_H
#define RDMANS_IPAM_RANGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "rdmans/error.h"

typedef unsigned __int128 rn_u128;

#define RN_IP_STRLEN 46 /* INET6_ADDRSTRLEN */
#define RN_CIDR_STRLEN 50 /* address + "/128" */
#define RN_IPAM_MAX_RANGES 16 /* in a configuration, held by an attachment */

/* ---- addresses ---------------------------------------------------------- */

/* An IPv4 address lives in the low 32 bits of v. */
struct rn_ip {
	int family; /* AF_INET or AF_INET6 */
	rn_u128 v;
};

/* "10.0.0.1", "2001:db8::1"; -EINVAL otherwise. */
int rn_ip_parse(const char *text, struct rn_ip *ret);
/* Canonical text (inet_ntop); buf needs RN_IP_STRLEN bytes. Returns buf. */
const char *rn_ip_format(int family, rn_u128 v, char *buf, size_t len);
/* "10.0.0.5/24": the address as written (host bits kept) and the prefix. */
int rn_cidr_parse(const char *text, struct rn_ip *ret_ip, unsigned *ret_prefix);
static inline unsigned rn_ip_bits(int family)
{
	return family == AF_INET ? 32 : 128;
}

/* ---- ranges ------------------------------------------------------------- */

struct rn_ipam_span {
	rn_u128 first, last; /* inclusive */
};

struct rn_ipam_range {
	int family;
	unsigned prefix;
	rn_u128 net; /* first address of the subnet */
	rn_u128 last; /* last address of the subnet (IPv4: broadcast) */
	rn_u128 start; /* allocatable bounds, inclusive, inside the subnet */
	rn_u128 end;
	bool has_gateway; /* a gateway inside this subnet: never handed out */
	rn_u128 gateway;
	struct rn_ipam_span *exclude; /* sorted, merged, clipped to [start, end] */
	size_t n_exclude;
	char cidr[RN_CIDR_STRLEN]; /* canonical subnet, "10.56.0.0/24" */
};

/* What a user writes for one range (whereabouts' keys). */
struct rn_ipam_range_spec {
	const char *range; /* "10.56.0.0/24" or "10.56.0.10-10.56.0.200/24" */
	const char *range_start; /* optional, overrides the start of the a-b form */
	const char *range_end; /* optional */
	const char *gateway; /* optional; applies when inside the subnet */
	const char *const *exclude; /* CIDRs or single addresses */
	size_t n_exclude;
};

int rn_ipam_range_init(struct rn_ipam_range *r, const struct rn_ipam_range_spec *spec,
		       struct rn_error *err);
void rn_ipam_range_free(struct rn_ipam_range *r);

bool rn_ipam_range_in_subnet(const struct rn_ipam_range *r, int family, rn_u128 a);
/*
 * May a pod get a? Inside [start, end], not excluded, not the gateway, not
 * the network address (except /31, /32, /127, /128) nor the IPv4 broadcast.
 */
bool rn_ipam_range_usable(const struct rn_ipam_range *r, rn_u128 a);
/* Number of usable addresses (saturates at the largest rn_u128). */
rn_u128 rn_ipam_range_count(const struct rn_ipam_range *r);
/* The first usable address at or after a, wrapping from end to start. */
bool rn_ipam_range_next(const struct rn_ipam_range *r, rn_u128 a, rn_u128 *ret);
/* Where the search for `key` starts: a hash of key spread over [start, end]. */
rn_u128 rn_ipam_range_hint(const struct rn_ipam_range *r, const char *key);

/*
 * The search: visits every usable address once, window by window from the
 * first usable address at or after `from`, wrapping. For each window of up
 * to `window` addresses, probe() (optional) reports which are taken (sorted
 * ascending, a malloc'ed array the walk frees); the other usable addresses
 * are offered to claim(): the lowest first, then, after a lost race, the
 * rest in a pseudo-random order (seeded by `from`) so that concurrent
 * losers spread out. claim() returns 0 (claimed: the walk ends, *ret = it),
 * -EEXIST (taken meanwhile: go on) or another negative errno (the walk ends
 * with it). Returns -EADDRNOTAVAIL when every usable address was taken: an
 * errno no store I/O gives, so a full disk (-ENOSPC from claim()) is never
 * read as a full range.
 * Cost grows with the addresses visited, not with the pool's fill as a whole.
 */
struct rn_ipam_walk_ops {
	int (*probe)(void *ctx, rn_u128 first, rn_u128 last, rn_u128 **ret_taken, size_t *ret_n);
	int (*claim)(void *ctx, rn_u128 a);
};
int rn_ipam_range_walk(const struct rn_ipam_range *r, rn_u128 from, size_t window,
		       const struct rn_ipam_walk_ops *ops, void *ctx, rn_u128 *ret);

#endif
