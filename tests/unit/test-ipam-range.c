// SPDX-License-Identifier: Apache-2.0
/* IPAM ranges: every form whereabouts accepts, excludes, IPv6 /64 and /120, the search. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rdmans/ipam.h"
#include "test.h"

static rn_u128 ip4(const char *s)
{
	struct rn_ip ip = { 0 };

	CHECK_INT(rn_ip_parse(s, &ip), 0);
	CHECK_INT(ip.family, AF_INET);
	return ip.v;
}

static rn_u128 ip6(const char *s)
{
	struct rn_ip ip = { 0 };

	CHECK_INT(rn_ip_parse(s, &ip), 0);
	CHECK_INT(ip.family, AF_INET6);
	return ip.v;
}

static int init(struct rn_ipam_range *r, const char *range, struct rn_error *err)
{
	struct rn_ipam_range_spec spec = { .range = range };

	return rn_ipam_range_init(r, &spec, err);
}

static const char *fmt(const struct rn_ipam_range *r, rn_u128 v)
{
	static char buf[4][RN_IP_STRLEN];
	static int i;

	i = (i + 1) % 4;
	return rn_ip_format(r->family, v, buf[i], sizeof(buf[i]));
}

static void ip_parse_and_format_round_trip(void)
{
	struct rn_ip ip;
	char buf[RN_IP_STRLEN];

	CHECK_INT(rn_ip_parse("10.56.0.7", &ip), 0);
	CHECK(ip.v == 0x0a380007);
	CHECK_STR(rn_ip_format(AF_INET, ip.v, buf, sizeof(buf)), "10.56.0.7");
	CHECK_INT(rn_ip_parse("2001:db8::1", &ip), 0);
	CHECK_INT(ip.family, AF_INET6);
	CHECK(ip.v == (((rn_u128)0x20010db8 << 96) | 1));
	CHECK_STR(rn_ip_format(AF_INET6, ip.v, buf, sizeof(buf)), "2001:db8::1");
	CHECK_STR(rn_ip_format(AF_INET6, ~(rn_u128)0, buf, sizeof(buf)),
		  "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff");
}

static void ip_parse_refuses_garbage(void)
{
	struct rn_ip ip;

	CHECK_INT(rn_ip_parse("", &ip), -EINVAL);
	CHECK_INT(rn_ip_parse(NULL, &ip), -EINVAL);
	CHECK_INT(rn_ip_parse("10.0.0.256", &ip), -EINVAL);
	CHECK_INT(rn_ip_parse("10.0.0", &ip), -EINVAL);
	CHECK_INT(rn_ip_parse("10.0.0.1/24", &ip), -EINVAL);
	CHECK_INT(rn_ip_parse("2001:db8::g", &ip), -EINVAL);
	CHECK_INT(rn_ip_parse(" 10.0.0.1", &ip), -EINVAL);
}

static void cidr_parse_keeps_host_bits_and_checks_the_prefix(void)
{
	struct rn_ip ip;
	unsigned prefix;

	CHECK_INT(rn_cidr_parse("10.56.0.77/24", &ip, &prefix), 0);
	CHECK(ip.v == ip4("10.56.0.77"));
	CHECK_INT(prefix, 24);
	CHECK_INT(rn_cidr_parse("2001:db8::/64", &ip, &prefix), 0);
	CHECK_INT(prefix, 64);
	CHECK_INT(rn_cidr_parse("10.0.0.0/33", &ip, &prefix), -EINVAL);
	CHECK_INT(rn_cidr_parse("2001:db8::/129", &ip, &prefix), -EINVAL);
	CHECK_INT(rn_cidr_parse("10.0.0.0/", &ip, &prefix), -EINVAL);
	CHECK_INT(rn_cidr_parse("10.0.0.0/2a", &ip, &prefix), -EINVAL);
	CHECK_INT(rn_cidr_parse("10.0.0.0/-1", &ip, &prefix), -EINVAL);
	CHECK_INT(rn_cidr_parse("10.0.0.0", &ip, &prefix), -EINVAL);
	CHECK_INT(rn_cidr_parse("/24", &ip, &prefix), -EINVAL);
}

static void plain_cidr_range_spans_the_subnet_minus_network_and_broadcast(void)
{
	struct rn_ipam_range r;
	struct rn_error err = { 0 };

	CHECK_INT(init(&r, "10.56.0.0/24", &err), 0);
	CHECK_STR(r.cidr, "10.56.0.0/24");
	CHECK_STR(fmt(&r, r.start), "10.56.0.0");
	CHECK_STR(fmt(&r, r.end), "10.56.0.255");
	CHECK(rn_ipam_range_count(&r) == 254);
	CHECK(!rn_ipam_range_usable(&r, ip4("10.56.0.0")));
	CHECK(!rn_ipam_range_usable(&r, ip4("10.56.0.255")));
	CHECK(rn_ipam_range_usable(&r, ip4("10.56.0.1")));
	CHECK(rn_ipam_range_usable(&r, ip4("10.56.0.254")));
	CHECK(!rn_ipam_range_usable(&r, ip4("10.56.1.1")));
	rn_ipam_range_free(&r);
}

static void range_with_host_bits_starts_at_the_network_like_whereabouts(void)
{
	struct rn_ipam_range r;
	struct rn_error err = { 0 };

	CHECK_INT(init(&r, "10.56.0.77/24", &err), 0);
	CHECK_STR(r.cidr, "10.56.0.0/24");
	CHECK_STR(fmt(&r, r.start), "10.56.0.0");
	rn_ipam_range_free(&r);
}

static void dash_form_sets_start_and_end(void)
{
	struct rn_ipam_range r;
	struct rn_error err = { 0 };

	CHECK_INT(init(&r, "10.56.0.10-10.56.0.20/24", &err), 0);
	CHECK_STR(r.cidr, "10.56.0.0/24");
	CHECK_STR(fmt(&r, r.start), "10.56.0.10");
	CHECK_STR(fmt(&r, r.end), "10.56.0.20");
	CHECK(rn_ipam_range_count(&r) == 11);
	CHECK(!rn_ipam_range_usable(&r, ip4("10.56.0.9")));
	CHECK(!rn_ipam_range_usable(&r, ip4("10.56.0.21")));
	rn_ipam_range_free(&r);

	CHECK_INT(init(&r, "2001:db8::100-2001:db8::1ff/64", &err), 0);
	CHECK_STR(r.cidr, "2001:db8::/64");
	CHECK(rn_ipam_range_count(&r) == 256);
	rn_ipam_range_free(&r);
}

static void range_start_and_end_keys_override(void)
{
	struct rn_ipam_range_spec spec = { .range = "10.56.0.0/16",
					   .range_start = "10.56.1.0",
					   .range_end = "10.56.1.99" };
	struct rn_ipam_range r;
	struct rn_error err = { 0 };

	CHECK_INT(rn_ipam_range_init(&r, &spec, &err), 0);
	CHECK_STR(fmt(&r, r.start), "10.56.1.0");
	CHECK_STR(fmt(&r, r.end), "10.56.1.99");
	CHECK(rn_ipam_range_count(&r) == 100);
	rn_ipam_range_free(&r);
}

static void bad_ranges_say_what_is_wrong(void)
{
	struct rn_ipam_range_spec spec = { .range = "10.56.0.0/24", .range_start = "10.57.0.1" };
	struct rn_ipam_range r;
	struct rn_error err = { 0 };

	CHECK_INT(init(&r, NULL, &err), -EINVAL);
	CHECK_CONTAINS(err.msg, "range is missing");
	CHECK_INT(init(&r, "10.56.0.0", &err), -EINVAL);
	CHECK_CONTAINS(err.msg, "range '10.56.0.0' is not a CIDR");
	CHECK_INT(init(&r, "10.56.0.0/40", &err), -EINVAL);
	CHECK_INT(init(&r, "10.57.0.1-10.56.0.20/24", &err), -EINVAL);
	CHECK_STR(err.msg, "range start 10.57.0.1 is outside range 10.56.0.0/24");
	CHECK_INT(init(&r, "10.56.0.30-10.56.0.20/24", &err), -EINVAL);
	CHECK_STR(err.msg, "range 10.56.0.0/24: start 10.56.0.30 is after end 10.56.0.20");
	CHECK_INT(init(&r, "-10.56.0.20/24", &err), -EINVAL);
	CHECK_INT(init(&r, "2001:db8::1-10.56.0.20/24", &err), -EINVAL);
	CHECK_CONTAINS(err.msg, "outside range 10.56.0.0/24");
	CHECK_INT(rn_ipam_range_init(&r, &spec, &err), -EINVAL);
	CHECK_STR(err.msg, "range_start 10.57.0.1 is outside range 10.56.0.0/24");
	spec.range_start = "nope";
	CHECK_INT(rn_ipam_range_init(&r, &spec, &err), -EINVAL);
	CHECK_STR(err.msg, "range_start 'nope' is not an IP address");
	spec.range_start = NULL;
	spec.gateway = "10.56.0.300";
	CHECK_INT(rn_ipam_range_init(&r, &spec, &err), -EINVAL);
	CHECK_STR(err.msg, "gateway '10.56.0.300' is not an IP address");
}

static void gateway_is_never_usable(void)
{
	struct rn_ipam_range_spec spec = { .range = "10.56.0.0/29", .gateway = "10.56.0.1" };
	struct rn_ipam_range r;
	struct rn_error err = { 0 };

	CHECK_INT(rn_ipam_range_init(&r, &spec, &err), 0);
	CHECK(r.has_gateway);
	CHECK(!rn_ipam_range_usable(&r, ip4("10.56.0.1")));
	CHECK(rn_ipam_range_count(&r) == 5);
	rn_ipam_range_free(&r);

	/* a gateway of another subnet (dual-stack: the other family's) is not this range's */
	spec.gateway = "10.99.0.1";
	CHECK_INT(rn_ipam_range_init(&r, &spec, &err), 0);
	CHECK(!r.has_gateway);
	CHECK(rn_ipam_range_count(&r) == 6);
	rn_ipam_range_free(&r);
}

static void excludes_are_merged_and_honoured(void)
{
	const char *ex[] = { "10.56.0.0/28", "10.56.0.8/29", "10.56.0.16",
			     "10.56.0.17",   "10.57.0.0/16", "10.56.0.100/30" };
	struct rn_ipam_range_spec spec = { .range = "10.56.0.0/24", .exclude = ex, .n_exclude = 6 };
	struct rn_ipam_range r;
	struct rn_error err = { 0 };
	rn_u128 next;

	CHECK_INT(rn_ipam_range_init(&r, &spec, &err), 0);
	/* 0/28 holds 8/29; .16 and .17 merge with it (adjacent); 10.57/16 is outside */
	CHECK_INT(r.n_exclude, 2);
	CHECK_STR(fmt(&r, r.exclude[0].first), "10.56.0.0");
	CHECK_STR(fmt(&r, r.exclude[0].last), "10.56.0.17");
	CHECK_STR(fmt(&r, r.exclude[1].first), "10.56.0.100");
	CHECK_STR(fmt(&r, r.exclude[1].last), "10.56.0.103");
	/* 256 - 18 - 4 - broadcast */
	CHECK(rn_ipam_range_count(&r) == 233);
	CHECK(!rn_ipam_range_usable(&r, ip4("10.56.0.17")));
	CHECK(rn_ipam_range_usable(&r, ip4("10.56.0.18")));
	CHECK(rn_ipam_range_next(&r, ip4("10.56.0.3"), &next));
	CHECK_STR(fmt(&r, next), "10.56.0.18");
	CHECK(rn_ipam_range_next(&r, ip4("10.56.0.100"), &next));
	CHECK_STR(fmt(&r, next), "10.56.0.104");
	/* from the broadcast address it wraps to the first usable */
	CHECK(rn_ipam_range_next(&r, ip4("10.56.0.255"), &next));
	CHECK_STR(fmt(&r, next), "10.56.0.18");
	rn_ipam_range_free(&r);
}

static void bad_excludes_are_refused(void)
{
	const char *ex[] = { "2001:db8::/64" };
	const char *junk[] = { "10.56.0.0/33" };
	struct rn_ipam_range_spec spec = { .range = "10.56.0.0/24", .exclude = ex, .n_exclude = 1 };
	struct rn_ipam_range r;
	struct rn_error err = { 0 };

	CHECK_INT(rn_ipam_range_init(&r, &spec, &err), -EINVAL);
	CHECK_STR(err.msg, "exclude entry '2001:db8::/64' is IPv6 but range 10.56.0.0/24 is IPv4");
	spec.exclude = junk;
	CHECK_INT(rn_ipam_range_init(&r, &spec, &err), -EINVAL);
	CHECK_CONTAINS(err.msg, "exclude entry '10.56.0.0/33' is neither a CIDR");
}

static void point_to_point_prefixes_use_every_address(void)
{
	struct rn_ipam_range r;
	struct rn_error err = { 0 };

	CHECK_INT(init(&r, "10.56.0.0/31", &err), 0);
	CHECK(rn_ipam_range_count(&r) == 2);
	CHECK(rn_ipam_range_usable(&r, ip4("10.56.0.0")));
	rn_ipam_range_free(&r);
	CHECK_INT(init(&r, "10.56.0.9/32", &err), 0);
	CHECK(rn_ipam_range_count(&r) == 1);
	CHECK(rn_ipam_range_usable(&r, ip4("10.56.0.9")));
	rn_ipam_range_free(&r);
	CHECK_INT(init(&r, "2001:db8::/127", &err), 0);
	CHECK(rn_ipam_range_count(&r) == 2);
	rn_ipam_range_free(&r);
}

static void ipv6_slash_64_is_an_ordinary_range(void)
{
	struct rn_ipam_range r;
	struct rn_error err = { 0 };
	rn_u128 net = ip6("2001:db8:1:2::"), hint, next;

	CHECK_INT(init(&r, "2001:db8:1:2::/64", &err), 0);
	CHECK(r.net == net);
	CHECK(r.last == (net | (((rn_u128)1 << 64) - 1)));
	/* 2^64 addresses minus the subnet-router anycast (network) address */
	CHECK(rn_ipam_range_count(&r) == ((rn_u128)1 << 64) - 1);
	CHECK(!rn_ipam_range_usable(&r, net));
	CHECK(rn_ipam_range_usable(&r, net + 1));
	CHECK(rn_ipam_range_usable(&r, r.last)); /* IPv6 has no broadcast */
	hint = rn_ipam_range_hint(&r, "default/pod-a/net1");
	CHECK(hint >= r.start && hint <= r.end);
	/* the hint reaches above 2^32 offsets: the whole /64 is addressable */
	CHECK((hint - net) > 0xffffffffu);
	CHECK(rn_ipam_range_next(&r, r.last, &next));
	CHECK(next == r.last);
	CHECK(rn_ipam_range_next(&r, net, &next));
	CHECK(next == net + 1);
	rn_ipam_range_free(&r);
}

static void ipv6_slash_120_has_255_usable_addresses(void)
{
	struct rn_ipam_range r;
	struct rn_error err = { 0 };

	CHECK_INT(init(&r, "fd00:10:56::/120", &err), 0);
	CHECK_STR(r.cidr, "fd00:10:56::/120");
	CHECK(rn_ipam_range_count(&r) == 255);
	CHECK_STR(fmt(&r, r.end), "fd00:10:56::ff");
	rn_ipam_range_free(&r);
}

static void the_largest_ipv6_range_does_not_overflow(void)
{
	struct rn_ipam_range r;
	struct rn_error err = { 0 };
	rn_u128 hint;

	CHECK_INT(init(&r, "fd00::/8", &err), 0);
	CHECK(r.start == (rn_u128)0xfd << 120 && r.end == ((rn_u128)0xfe << 120) - 1);
	CHECK(rn_ipam_range_count(&r) == ((rn_u128)1 << 120) - 1);
	hint = rn_ipam_range_hint(&r, "x");
	CHECK(hint > r.start && hint <= r.end);
	rn_ipam_range_free(&r);
}

static void absurd_ranges_are_refused_with_the_reason(void)
{
	static const struct {
		const char *range, *needle;
	} bad[] = {
		{ "fd00::/0", "spans all of the IPv6 address space (/0)" },
		{ "::/0", "spans all of the IPv6 address space" },
		{ "0.0.0.0/0", "spans all of the IPv4 address space" },
		{ "10.0.0.0/7", "spans a large part of the IPv4 address space (/7)" },
		{ "fc00::/7", "/8 or longer" },
		{ "224.0.0.0/24", "multicast (224.0.0.0/4)" },
		{ "240.1.0.0/16", "reserved (240.0.0.0/4)" },
		{ "127.0.0.0/8", "loopback" },
		{ "0.1.0.0/16", "'this network'" },
		{ "ff02::/64", "multicast (ff00::/8)" },
		{ "10.56.0.1-10.56.0.9/0", "spans all of the IPv4 address space" },
	};
	struct rn_ipam_range r;
	struct rn_error err = { 0 };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK_INT(init(&r, bad[i].range, &err), -EINVAL);
		CHECK_CONTAINS(err.msg, bad[i].needle);
		CHECK_CONTAINS(err.msg, bad[i].range);
	}
	/* the edges that are fine */
	CHECK_INT(init(&r, "10.0.0.0/8", &err), 0);
	CHECK_INT(init(&r, "223.255.255.0/24", &err), 0);
	CHECK_INT(init(&r, "fd00:56::/64", &err), 0);
}

static void hints_depend_on_the_key(void)
{
	struct rn_ipam_range r;
	struct rn_error err = { 0 };
	size_t distinct = 0;
	rn_u128 seen[32];

	CHECK_INT(init(&r, "10.56.0.0/16", &err), 0);
	CHECK(rn_ipam_range_hint(&r, "ns/a/net1") == rn_ipam_range_hint(&r, "ns/a/net1"));
	for (int i = 0; i < 32; i++) {
		char key[32];
		rn_u128 h;
		bool dup = false;

		snprintf(key, sizeof(key), "ns/pod-%d/net1", i);
		h = rn_ipam_range_hint(&r, key);
		CHECK(h >= r.start && h <= r.end);
		for (size_t j = 0; j < distinct; j++)
			dup = dup || seen[j] == h;
		if (!dup)
			seen[distinct++] = h;
	}
	/* 32 keys over 65536 addresses: collisions are possible but not many */
	CHECK(distinct >= 30);
	rn_ipam_range_free(&r);
}

/* A fake store for the search: a set of taken addresses and a log of calls. */
struct fake {
	rn_u128 taken[1024];
	size_t n_taken;
	rn_u128 race; /* claim() says -EEXIST for this one (taken meanwhile) */
	int fail_at; /* claim() number that fails with -EIO, 0: none */
	size_t claims, probes;
	rn_u128 claimed[1024];
	bool want_all; /* claim() refuses everything, to count visits */
};

static bool is_taken(const struct fake *f, rn_u128 a)
{
	for (size_t i = 0; i < f->n_taken; i++)
		if (f->taken[i] == a)
			return true;
	return false;
}

static int fake_probe(void *ctx, rn_u128 first, rn_u128 last, rn_u128 **ret, size_t *n)
{
	struct fake *f = ctx;
	rn_u128 *list = calloc(f->n_taken + 1, sizeof(*list));
	size_t k = 0;

	f->probes++;
	for (rn_u128 a = first;; a++) {
		if (is_taken(f, a))
			list[k++] = a;
		if (a == last)
			break;
	}
	*ret = list;
	*n = k;
	return 0;
}

static int fake_claim(void *ctx, rn_u128 a)
{
	struct fake *f = ctx;

	CHECK(!is_taken(f, a)); /* the walk never offers a probed-taken address */
	if (f->claims < 1024)
		f->claimed[f->claims] = a;
	f->claims++;
	if (f->fail_at && (int)f->claims == f->fail_at)
		return -EIO;
	if (f->want_all || a == f->race)
		return -EEXIST;
	return 0;
}

static const struct rn_ipam_walk_ops fake_ops = { fake_probe, fake_claim };

static void walk_starts_at_the_hint_not_the_first_address(void)
{
	struct rn_ipam_range r;
	struct rn_error err = { 0 };
	struct fake f = { 0 };
	rn_u128 got;

	CHECK_INT(init(&r, "10.56.0.0/24", &err), 0);
	CHECK_INT(rn_ipam_range_walk(&r, ip4("10.56.0.200"), 1, &fake_ops, &f, &got), 0);
	CHECK_STR(fmt(&r, got), "10.56.0.200");
	CHECK_INT(f.claims, 1);
	/* taken ones are skipped without a claim; the walk goes on from the hint */
	f = (struct fake){ .taken = { ip4("10.56.0.200"), ip4("10.56.0.201") }, .n_taken = 2 };
	CHECK_INT(rn_ipam_range_walk(&r, ip4("10.56.0.200"), 16, &fake_ops, &f, &got), 0);
	CHECK_STR(fmt(&r, got), "10.56.0.202");
	CHECK_INT(f.claims, 1);
	CHECK_INT(f.probes, 1);
	rn_ipam_range_free(&r);
}

static void walk_goes_on_when_a_claim_loses_a_race(void)
{
	struct rn_ipam_range r;
	struct rn_error err = { 0 };
	struct fake f = { 0 };
	rn_u128 got;

	CHECK_INT(init(&r, "10.56.0.0/24", &err), 0);
	f.race = ip4("10.56.0.50");
	CHECK_INT(rn_ipam_range_walk(&r, ip4("10.56.0.50"), 1, &fake_ops, &f, &got), 0);
	CHECK_STR(fmt(&r, got), "10.56.0.51");
	CHECK_INT(f.claims, 2);
	rn_ipam_range_free(&r);
}

static void walk_wraps_and_visits_every_usable_address_once(void)
{
	const char *ex[] = { "10.56.0.8/30" };
	struct rn_ipam_range_spec spec = {
		.range = "10.56.0.0/27", .gateway = "10.56.0.1", .exclude = ex, .n_exclude = 1
	};
	struct rn_ipam_range r;
	struct rn_error err = { 0 };
	rn_u128 got;

	CHECK_INT(rn_ipam_range_init(&r, &spec, &err), 0);
	/* 32 - network - broadcast - gateway - 4 excluded */
	CHECK(rn_ipam_range_count(&r) == 25);
	for (size_t window = 1; window <= 64; window *= 4) {
		struct fake f = { .want_all = true };

		CHECK_INT(rn_ipam_range_walk(&r, ip4("10.56.0.20"), window, &fake_ops, &f, &got),
			  -EADDRNOTAVAIL);
		CHECK_INT(f.claims, 25);
		CHECK_STR(fmt(&r, f.claimed[0]), "10.56.0.20");
		if (window == 1) {
			/* one address per window: strictly in order, wrapping */
			CHECK_STR(fmt(&r, f.claimed[10]), "10.56.0.30");
			CHECK_STR(fmt(&r, f.claimed[11]), "10.56.0.2"); /* past .31, .0, .1 */
			CHECK_STR(fmt(&r, f.claimed[24]), "10.56.0.19");
		}
		for (size_t i = 0; i < 25; i++) {
			CHECK(rn_ipam_range_usable(&r, f.claimed[i]));
			for (size_t j = 0; j < i; j++)
				CHECK(f.claimed[i] != f.claimed[j]);
		}
	}
	rn_ipam_range_free(&r);
}

static void losers_of_a_race_spread_over_the_window(void)
{
	struct rn_ipam_range r;
	struct rn_error err = { 0 };
	rn_u128 second[8];
	size_t distinct = 0;

	/* eight walks from different hints in one window lose their first race:
	 * their second tries are not all the same address */
	CHECK_INT(init(&r, "10.56.0.0/24", &err), 0);
	for (int k = 0; k < 8; k++) {
		struct fake f = { .race = ip4("10.56.0.10") };
		rn_u128 got;
		bool dup = false;

		/* hints below .10 with .0-.9 taken: the first try is .10, which is lost */
		for (int t = 0; t < 10; t++)
			f.taken[f.n_taken++] = ip4("10.56.0.0") + (rn_u128)t;
		CHECK_INT(rn_ipam_range_walk(&r, ip4("10.56.0.1") + (rn_u128)k, 256, &fake_ops, &f,
					     &got),
			  0);
		CHECK_STR(fmt(&r, f.claimed[0]), "10.56.0.10");
		second[k] = got;
		for (int j = 0; j < k; j++)
			dup = dup || second[j] == got;
		distinct += !dup;
	}
	CHECK(distinct >= 6);
	rn_ipam_range_free(&r);
}

static void walk_reports_a_full_range(void)
{
	struct rn_ipam_range r;
	struct rn_error err = { 0 };
	struct fake f = { 0 };
	rn_u128 got;

	CHECK_INT(init(&r, "10.56.0.0/29", &err), 0);
	for (int i = 1; i <= 6; i++)
		f.taken[f.n_taken++] = ip4("10.56.0.0") + (rn_u128)i;
	CHECK_INT(rn_ipam_range_walk(&r, ip4("10.56.0.3"), 1, &fake_ops, &f, &got), -EADDRNOTAVAIL);
	CHECK_INT(f.claims, 0);
	CHECK_INT(rn_ipam_range_walk(&r, ip4("10.56.0.3"), 256, &fake_ops, &f, &got),
		  -EADDRNOTAVAIL);
	/* the last free address is found from any hint */
	f.n_taken = 5;
	CHECK_INT(rn_ipam_range_walk(&r, ip4("10.56.0.1"), 1, &fake_ops, &f, &got), 0);
	CHECK_STR(fmt(&r, got), "10.56.0.6");
	rn_ipam_range_free(&r);
}

static void walk_stops_on_a_store_error(void)
{
	struct rn_ipam_range r;
	struct rn_error err = { 0 };
	struct fake f = { .want_all = true, .fail_at = 3 };
	rn_u128 got;

	CHECK_INT(init(&r, "10.56.0.0/24", &err), 0);
	CHECK_INT(rn_ipam_range_walk(&r, ip4("10.56.0.1"), 8, &fake_ops, &f, &got), -EIO);
	CHECK_INT(f.claims, 3);
	rn_ipam_range_free(&r);
}

static void walk_jumps_over_a_large_exclude(void)
{
	/* a /9 excluded from a /8: the search does not step through 8 million addresses */
	const char *ex[] = { "10.0.0.0/9" };
	struct rn_ipam_range_spec spec = { .range = "10.0.0.0/8", .exclude = ex, .n_exclude = 1 };
	struct rn_ipam_range r;
	struct rn_error err = { 0 };
	struct fake f = { 0 };
	rn_u128 got;

	CHECK_INT(rn_ipam_range_init(&r, &spec, &err), 0);
	CHECK_INT(rn_ipam_range_walk(&r, ip4("10.0.0.1"), 1, &fake_ops, &f, &got), 0);
	CHECK_STR(fmt(&r, got), "10.128.0.0");
	CHECK_INT(f.probes, 1);
	rn_ipam_range_free(&r);
}

static void walk_in_a_slash_64_finds_an_address_near_the_hint(void)
{
	struct rn_ipam_range r;
	struct rn_error err = { 0 };
	struct fake f = { 0 };
	rn_u128 got, hint;

	CHECK_INT(init(&r, "2001:db8::/64", &err), 0);
	hint = rn_ipam_range_hint(&r, "ns/pod/net1");
	f.taken[f.n_taken++] = hint;
	CHECK_INT(rn_ipam_range_walk(&r, hint, 256, &fake_ops, &f, &got), 0);
	CHECK(got == hint + 1 || (hint == r.end && got == r.start + 1));
	rn_ipam_range_free(&r);
}

RN_TEST_MAIN(T(ip_parse_and_format_round_trip), T(ip_parse_refuses_garbage),
	     T(cidr_parse_keeps_host_bits_and_checks_the_prefix),
	     T(plain_cidr_range_spans_the_subnet_minus_network_and_broadcast),
	     T(range_with_host_bits_starts_at_the_network_like_whereabouts),
	     T(dash_form_sets_start_and_end), T(range_start_and_end_keys_override),
	     T(bad_ranges_say_what_is_wrong), T(gateway_is_never_usable),
	     T(excludes_are_merged_and_honoured), T(bad_excludes_are_refused),
	     T(point_to_point_prefixes_use_every_address), T(ipv6_slash_64_is_an_ordinary_range),
	     T(ipv6_slash_120_has_255_usable_addresses),
	     T(the_largest_ipv6_range_does_not_overflow),
	     T(absurd_ranges_are_refused_with_the_reason), T(hints_depend_on_the_key),
	     T(walk_starts_at_the_hint_not_the_first_address),
	     T(walk_goes_on_when_a_claim_loses_a_race),
	     T(walk_wraps_and_visits_every_usable_address_once),
	     T(losers_of_a_race_spread_over_the_window), T(walk_reports_a_full_range),
	     T(walk_stops_on_a_store_error), T(walk_jumps_over_a_large_exclude),
	     T(walk_in_a_slash_64_finds_an_address_near_the_hint))
