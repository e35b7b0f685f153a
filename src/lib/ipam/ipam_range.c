// SPDX-License-Identifier: Apache-2.0
/*
 * Addresses and ranges for IPAM: parsing, 128-bit arithmetic (a /64 is an
 * ordinary range), excludes as merged spans, and the search from a hint.
 * Pure: no I/O, no allocation beyond the exclude list and probe results.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmans/cleanup.h"
#include "rdmans/ipam_range.h"

#define U128_MAX (~(rn_u128)0)

int rn_ip_parse(const char *text, struct rn_ip *ret)
{
	static const int families[] = { AF_INET, AF_INET6 };
	unsigned char b[16];

	if (!text || !*text)
		return -EINVAL;
	for (size_t f = 0; f < 2; f++) {
		int n = families[f] == AF_INET ? 4 : 16;
		rn_u128 v = 0;

		if (inet_pton(families[f], text, b) != 1)
			continue;
		for (int i = 0; i < n; i++)
			v = (v << 8) | b[i];
		ret->family = families[f];
		ret->v = v;
		return 0;
	}
	return -EINVAL;
}

const char *rn_ip_format(int family, rn_u128 v, char *buf, size_t len)
{
	unsigned char b[16];
	int n = family == AF_INET ? 4 : 16;

	for (int i = n - 1; i >= 0; i--) {
		b[i] = (unsigned char)(v & 0xff);
		v >>= 8;
	}
	if (!inet_ntop(family, b, buf, (socklen_t)len))
		snprintf(buf, len, "?");
	return buf;
}

int rn_cidr_parse(const char *text, struct rn_ip *ret_ip, unsigned *ret_prefix)
{
	char addr[RN_IP_STRLEN];
	const char *slash;
	unsigned long prefix;
	char *end;
	size_t len;

	if (!text)
		return -EINVAL;
	slash = strchr(text, '/');
	if (!slash)
		return -EINVAL;
	len = (size_t)(slash - text);
	if (len == 0 || len >= sizeof(addr))
		return -EINVAL;
	memcpy(addr, text, len);
	addr[len] = '\0';
	if (rn_ip_parse(addr, ret_ip) < 0)
		return -EINVAL;
	if (!isdigit((unsigned char)slash[1]))
		return -EINVAL;
	errno = 0;
	prefix = strtoul(slash + 1, &end, 10);
	if (errno || *end || prefix > rn_ip_bits(ret_ip->family) || strlen(slash + 1) > 3)
		return -EINVAL;
	*ret_prefix = (unsigned)prefix;
	return 0;
}

/* Mask of the host part of a family/prefix. */
static rn_u128 host_mask(int family, unsigned prefix)
{
	unsigned bits = rn_ip_bits(family), host = bits - prefix;

	if (host == 0)
		return 0;
	if (host >= 128)
		return U128_MAX;
	return ((rn_u128)1 << host) - 1;
}

static const char *family_name(int family)
{
	return family == AF_INET ? "IPv4" : "IPv6";
}

static int span_cmp(const void *a, const void *b)
{
	const struct rn_ipam_span *x = a, *y = b;

	return x->first < y->first ? -1 : x->first > y->first ? 1 : 0;
}

/* Parses one exclude entry ("10.0.0.0/28" or "10.0.0.7") into a span. */
static int parse_exclude(const struct rn_ipam_range *r, const char *text, struct rn_ipam_span *ret,
			 struct rn_error *err)
{
	struct rn_ip ip;
	unsigned prefix;

	if (rn_cidr_parse(text, &ip, &prefix) == 0) {
		rn_u128 hm = host_mask(ip.family, prefix);

		ret->first = ip.v & ~hm;
		ret->last = ret->first | hm;
	} else if (rn_ip_parse(text, &ip) == 0) {
		ret->first = ret->last = ip.v;
	} else {
		return rn_error_set(err, EINVAL,
				    "exclude entry '%s' is neither a CIDR (10.0.0.0/28) nor an "
				    "address",
				    text);
	}
	if (ip.family != r->family)
		return rn_error_set(err, EINVAL, "exclude entry '%s' is %s but range %s is %s",
				    text, family_name(ip.family), r->cidr, family_name(r->family));
	return 0;
}

static int parse_bound(const struct rn_ipam_range *r, const char *what, const char *text,
		       rn_u128 *ret, struct rn_error *err)
{
	struct rn_ip ip;

	if (rn_ip_parse(text, &ip) < 0)
		return rn_error_set(err, EINVAL, "%s '%s' is not an IP address", what, text);
	if (ip.family != r->family || !rn_ipam_range_in_subnet(r, ip.family, ip.v))
		return rn_error_set(err, EINVAL, "%s %s is outside range %s", what, text, r->cidr);
	*ret = ip.v;
	return 0;
}

#define RANGE_MIN_PREFIX 8

/*
 * A pod network is a unicast prefix of /8 or longer: "fd00::/0" (every
 * address there is), multicast and loopback are configuration mistakes.
 */
static int check_plausible(const char *text, int family, rn_u128 v, unsigned prefix,
			   struct rn_error *err)
{
	unsigned bits = rn_ip_bits(family);
	rn_u128 top8 = v >> (bits - 8);
	const char *what = NULL;

	if (prefix < RANGE_MIN_PREFIX)
		return rn_error_set(err, EINVAL,
				    "range '%s' spans %s of the %s address space (/%u); give the "
				    "pod network's own prefix, /%d or longer (e.g. %s)",
				    text, prefix == 0 ? "all" : "a large part",
				    rn_ip_bits(family) == 32 ? "IPv4" : "IPv6", prefix,
				    RANGE_MIN_PREFIX,
				    family == AF_INET ? "10.56.0.0/16" : "fd00:56::/64");
	if (family == AF_INET && top8 >= 224)
		what = top8 >= 240 ? "reserved (240.0.0.0/4)" : "multicast (224.0.0.0/4)";
	else if (family == AF_INET && top8 == 127)
		what = "loopback (127.0.0.0/8)";
	else if (family == AF_INET && top8 == 0)
		what = "'this network' (0.0.0.0/8)";
	else if (family == AF_INET6 && top8 == 0xff)
		what = "multicast (ff00::/8)";
	else if (family == AF_INET6 && prefix == 128 && v == 1)
		what = "loopback (::1)";
	if (what)
		return rn_error_set(err, EINVAL,
				    "range '%s' is %s: no pod interface can have such an address; "
				    "give the pod network's unicast prefix",
				    text, what);
	return 0;
}

int rn_ipam_range_init(struct rn_ipam_range *r, const struct rn_ipam_range_spec *spec,
		       struct rn_error *err)
{
	char first_text[RN_IP_STRLEN], netbuf[RN_IP_STRLEN];
	const char *cidr_text, *dash;
	struct rn_ip ip;
	unsigned prefix;
	rn_u128 hm;
	size_t n = 0;
	int ret;

	memset(r, 0, sizeof(*r));
	if (!spec->range || !*spec->range)
		return rn_error_set(err, EINVAL,
				    "range is missing (e.g. \"range\": \"10.56.0.0/16\")");
	dash = strchr(spec->range, '-');
	cidr_text = dash ? dash + 1 : spec->range;
	if (rn_cidr_parse(cidr_text, &ip, &prefix) < 0)
		return rn_error_set(err, EINVAL,
				    "range '%s' is not a CIDR (\"10.56.0.0/16\" or "
				    "\"10.56.0.10-10.56.0.200/16\")",
				    spec->range);
	ret = check_plausible(spec->range, ip.family, ip.v, prefix, err);
	if (ret < 0)
		return ret;
	hm = host_mask(ip.family, prefix);
	r->family = ip.family;
	r->prefix = prefix;
	r->net = ip.v & ~hm;
	r->last = r->net | hm;
	r->start = r->net;
	r->end = r->last;
	snprintf(r->cidr, sizeof(r->cidr), "%s/%u",
		 rn_ip_format(r->family, r->net, netbuf, sizeof(netbuf)), prefix);

	if (dash) {
		/* "a-b/nn": a starts the range, b (the CIDR's address) ends it */
		size_t len = (size_t)(dash - spec->range);

		if (len == 0 || len >= sizeof(first_text))
			return rn_error_set(err, EINVAL, "range '%s': no start address before '-'",
					    spec->range);
		memcpy(first_text, spec->range, len);
		first_text[len] = '\0';
		ret = parse_bound(r, "range start", first_text, &r->start, err);
		if (ret < 0)
			return ret;
		r->end = ip.v;
	}
	if (spec->range_start && *spec->range_start) {
		ret = parse_bound(r, "range_start", spec->range_start, &r->start, err);
		if (ret < 0)
			return ret;
	}
	if (spec->range_end && *spec->range_end) {
		ret = parse_bound(r, "range_end", spec->range_end, &r->end, err);
		if (ret < 0)
			return ret;
	}
	if (r->start > r->end) {
		char a[RN_IP_STRLEN], b[RN_IP_STRLEN];

		return rn_error_set(err, EINVAL, "range %s: start %s is after end %s", r->cidr,
				    rn_ip_format(r->family, r->start, a, sizeof(a)),
				    rn_ip_format(r->family, r->end, b, sizeof(b)));
	}
	if (spec->gateway && *spec->gateway) {
		struct rn_ip gw;

		if (rn_ip_parse(spec->gateway, &gw) < 0)
			return rn_error_set(err, EINVAL, "gateway '%s' is not an IP address",
					    spec->gateway);
		if (gw.family == r->family && rn_ipam_range_in_subnet(r, gw.family, gw.v)) {
			r->has_gateway = true;
			r->gateway = gw.v;
		}
	}
	if (spec->n_exclude) {
		r->exclude = calloc(spec->n_exclude, sizeof(*r->exclude));
		if (!r->exclude)
			return rn_error_set(err, ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < spec->n_exclude; i++) {
		struct rn_ipam_span s;

		ret = parse_exclude(r, spec->exclude[i], &s, err);
		if (ret < 0) {
			rn_ipam_range_free(r);
			return ret;
		}
		/* clip to [start, end]; an exclude outside the range excludes nothing */
		if (s.last < r->start || s.first > r->end)
			continue;
		if (s.first < r->start)
			s.first = r->start;
		if (s.last > r->end)
			s.last = r->end;
		r->exclude[n++] = s;
	}
	if (n > 1)
		qsort(r->exclude, n, sizeof(*r->exclude), span_cmp);
	/* merge overlapping and adjacent spans */
	r->n_exclude = 0;
	for (size_t i = 0; i < n; i++) {
		struct rn_ipam_span *prev = r->n_exclude ? &r->exclude[r->n_exclude - 1] : NULL;

		if (prev && (r->exclude[i].first <= prev->last ||
			     (prev->last != U128_MAX && r->exclude[i].first == prev->last + 1))) {
			if (r->exclude[i].last > prev->last)
				prev->last = r->exclude[i].last;
			continue;
		}
		r->exclude[r->n_exclude++] = r->exclude[i];
	}
	return 0;
}

void rn_ipam_range_free(struct rn_ipam_range *r)
{
	if (!r)
		return;
	free(r->exclude);
	r->exclude = NULL;
	r->n_exclude = 0;
}

bool rn_ipam_range_in_subnet(const struct rn_ipam_range *r, int family, rn_u128 a)
{
	return family == r->family && a >= r->net && a <= r->last;
}

/* The exclude span holding a, or NULL (binary search over merged spans). */
static const struct rn_ipam_span *excluded(const struct rn_ipam_range *r, rn_u128 a)
{
	size_t lo = 0, hi = r->n_exclude;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (a < r->exclude[mid].first)
			hi = mid;
		else if (a > r->exclude[mid].last)
			lo = mid + 1;
		else
			return &r->exclude[mid];
	}
	return NULL;
}

/* Network, IPv4 broadcast and gateway: never handed out. */
static bool special(const struct rn_ipam_range *r, rn_u128 a)
{
	if (r->has_gateway && a == r->gateway)
		return true;
	if (r->family == AF_INET && r->prefix <= 30)
		return a == r->net || a == r->last;
	if (r->family == AF_INET6 && r->prefix <= 126)
		return a == r->net; /* the subnet-router anycast address */
	return false;
}

bool rn_ipam_range_usable(const struct rn_ipam_range *r, rn_u128 a)
{
	return a >= r->start && a <= r->end && !excluded(r, a) && !special(r, a);
}

rn_u128 rn_ipam_range_count(const struct rn_ipam_range *r)
{
	rn_u128 total, gone = 0, points[3];
	size_t np = 0;

	if (r->end - r->start == U128_MAX)
		total = U128_MAX; /* ::/0: one short, close enough to "all" */
	else
		total = r->end - r->start + 1;
	for (size_t i = 0; i < r->n_exclude; i++) {
		/* saturating: a span of the whole space has 2^128 addresses (found by fuzzing) */
		rn_u128 span = r->exclude[i].last - r->exclude[i].first;

		if (span == U128_MAX || gone > U128_MAX - span - 1)
			gone = U128_MAX;
		else
			gone += span + 1;
	}
	if (r->has_gateway)
		points[np++] = r->gateway;
	if ((r->family == AF_INET && r->prefix <= 30) ||
	    (r->family == AF_INET6 && r->prefix <= 126))
		points[np++] = r->net;
	if (r->family == AF_INET && r->prefix <= 30)
		points[np++] = r->last;
	for (size_t i = 0; i < np; i++) {
		bool dup = false;

		for (size_t j = 0; j < i; j++)
			dup = dup || points[j] == points[i];
		if (!dup && points[i] >= r->start && points[i] <= r->end && !excluded(r, points[i]))
			gone++;
	}
	return gone >= total ? 0 : total - gone;
}

bool rn_ipam_range_next(const struct rn_ipam_range *r, rn_u128 a, rn_u128 *ret)
{
	int laps = 0;

	if (a < r->start || a > r->end)
		a = r->start;
	for (;;) {
		const struct rn_ipam_span *s = excluded(r, a);
		rn_u128 past;

		if (!s && !special(r, a)) {
			*ret = a;
			return true;
		}
		past = s ? s->last : a;
		if (past >= r->end) {
			if (++laps > 1)
				return false;
			a = r->start;
		} else {
			a = past + 1;
		}
	}
}

/* FNV-1a, 64 bits, with a chosen offset basis: two of them make 128 bits. */
static uint64_t fnv1a(const char *s, uint64_t h)
{
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ULL;
	}
	return h;
}

rn_u128 rn_ipam_range_hint(const struct rn_ipam_range *r, const char *key)
{
	rn_u128 h = ((rn_u128)fnv1a(key, 0xcbf29ce484222325ULL) << 64) |
		    fnv1a(key, 0x84222325cbf29ce4ULL);
	rn_u128 span = r->end - r->start;

	if (span == U128_MAX)
		return h;
	return r->start + h % (span + 1);
}

int rn_ipam_range_walk(const struct rn_ipam_range *r, rn_u128 from, size_t window,
		       const struct rn_ipam_walk_ops *ops, void *ctx, rn_u128 *ret)
{
	rn_u128 remaining = rn_ipam_range_count(r), a;
	/* after a lost race, the next try is a pseudo-random free address of the
	 * window, not the next one up, which every other loser would try too */
	uint64_t state = (uint64_t)from ^ (uint64_t)(from >> 64) ^ 0x9e3779b97f4a7c15ULL;

	if (window == 0)
		window = 1;
	if (remaining == 0 || !rn_ipam_range_next(r, from, &a))
		return -EADDRNOTAVAIL;
	while (remaining > 0) {
		_cleanup_free_ rn_u128 *taken = NULL, *freev = NULL;
		rn_u128 wlast, x = a;
		size_t n = 0, ti = 0, nfree = 0, i = 0;
		int ret_code;

		wlast = (r->end - a < (rn_u128)(window - 1)) ? r->end : a + (window - 1);
		if (ops->probe) {
			ret_code = ops->probe(ctx, a, wlast, &taken, &n);
			if (ret_code < 0)
				return ret_code;
		}
		freev = malloc(window * sizeof(*freev));
		if (!freev)
			return -ENOMEM;
		/* the usable addresses of the window nobody holds, ascending */
		for (;;) {
			rn_u128 y;

			while (ti < n && taken[ti] < x)
				ti++;
			if (!(ti < n && taken[ti] == x))
				freev[nfree++] = x;
			if (--remaining == 0 || x >= wlast)
				break;
			if (!rn_ipam_range_next(r, x + 1, &y) || y <= x || y > wlast)
				break;
			x = y;
		}
		/* the first one up from the window's start, then spread */
		while (nfree > 0) {
			x = freev[i];
			freev[i] = freev[--nfree];
			ret_code = ops->claim(ctx, x);
			if (ret_code == 0) {
				*ret = x;
				return 0;
			}
			if (ret_code != -EEXIST)
				return ret_code;
			if (nfree == 0)
				break;
			state = state * 6364136223846793005ULL + 1442695040888963407ULL;
			i = (size_t)((state >> 33) % nfree);
		}
		if (remaining == 0)
			break;
		if (!rn_ipam_range_next(r, wlast >= r->end ? r->start : wlast + 1, &a))
			break;
	}
	return -EADDRNOTAVAIL;
}
