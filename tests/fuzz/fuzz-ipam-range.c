// SPDX-License-Identifier: Apache-2.0
/*
 * IPAM ranges and the address search. Input: newline-separated fields,
 * range, range_start, range_end, gateway, then excludes. For a range that
 * initialises: its bounds nest (subnet > [start, end]); next() and the
 * walk only ever give usable addresses; for small ranges the walk visits
 * every usable address exactly once (counted against usable() one by one
 * and against count()), then says -EADDRNOTAVAIL; with a few addresses reported
 * taken, it claims one that is not.
 */
#include <errno.h>

#include "fuzz.h"
#include "rdmans/ipam.h"

#define SMALL 4096
#define MAX_EXCLUDE 8

struct visit {
	const struct rn_ipam_range *r;
	rn_u128 seen[SMALL];
	size_t n, claims_before_yes;
	const rn_u128 *taken;
	size_t n_taken;
	bool overflow;
};

static int claim_none(void *ctx, rn_u128 a)
{
	struct visit *v = ctx;

	FUZZ_ASSERT(rn_ipam_range_usable(v->r, a), "the walk offered an unusable address");
	if (v->n == SMALL) {
		v->overflow = true;
		return -E2BIG;
	}
	v->seen[v->n++] = a;
	return -EEXIST;
}

static int probe_taken(void *ctx, rn_u128 first, rn_u128 last, rn_u128 **ret, size_t *ret_n)
{
	struct visit *v = ctx;
	rn_u128 *out = calloc(v->n_taken + 1, sizeof(*out));
	size_t n = 0;

	if (!out)
		return -ENOMEM;
	for (size_t i = 0; i < v->n_taken; i++)
		if (v->taken[i] >= first && v->taken[i] <= last &&
		    (n == 0 || out[n - 1] < v->taken[i]))
			out[n++] = v->taken[i];
	*ret = out;
	*ret_n = n;
	return 0;
}

static int claim_some(void *ctx, rn_u128 a)
{
	struct visit *v = ctx;

	FUZZ_ASSERT(rn_ipam_range_usable(v->r, a), "the walk offered an unusable address");
	for (size_t i = 0; i < v->n_taken; i++)
		FUZZ_ASSERT(v->taken[i] != a,
			    "the walk offered an address the probe said is taken");
	if (v->claims_before_yes == 0)
		return 0;
	v->claims_before_yes--;
	return -EEXIST;
}

static int cmp_u128(const void *a, const void *b)
{
	rn_u128 x = *(const rn_u128 *)a, y = *(const rn_u128 *)b;

	return x < y ? -1 : x > y;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *f[4 + MAX_EXCLUDE] = { 0 };
	const char *excl[MAX_EXCLUDE];
	struct rn_ipam_range_spec spec = { 0 };
	struct rn_ipam_range r;
	struct rn_error err = { 0 };
	size_t n = 0;
	rn_u128 a, count;
	bool any;

	while (n < 4 + MAX_EXCLUDE && (f[n] = fuzz_field(&data, &size, '\n')))
		n++;
	spec.range = f[0];
	spec.range_start = f[1] && *f[1] ? f[1] : NULL;
	spec.range_end = f[2] && *f[2] ? f[2] : NULL;
	spec.gateway = f[3] && *f[3] ? f[3] : NULL;
	for (size_t i = 4; i < n; i++)
		excl[spec.n_exclude++] = f[i];
	spec.exclude = excl;
	memset(&r, 0, sizeof(r));
	if (!spec.range || rn_ipam_range_init(&r, &spec, &err) < 0) {
		FUZZ_ASSERT(!spec.range || err.msg[0], "refused without a message");
		goto out;
	}
	FUZZ_ASSERT(r.net <= r.start && r.start <= r.end && r.end <= r.last, "bounds do not nest");
	count = rn_ipam_range_count(&r);
	any = rn_ipam_range_next(&r, rn_ipam_range_hint(&r, "fuzz"), &a);
	FUZZ_ASSERT(any == (count > 0), "next() and count() disagree");
	if (any)
		FUZZ_ASSERT(rn_ipam_range_usable(&r, a) && rn_ipam_range_in_subnet(&r, r.family, a),
			    "next() gave an unusable address");
	if (r.end - r.start < SMALL) {
		static struct visit v;
		rn_u128 usable = 0, got;
		struct rn_ipam_walk_ops ops = { .claim = claim_none };
		int rc;

		memset(&v, 0, sizeof(v));
		v.r = &r;
		for (rn_u128 x = r.start;; x++) {
			usable += rn_ipam_range_usable(&r, x);
			if (x == r.end)
				break;
		}
		FUZZ_ASSERT(usable == count, "count() says %llu, usable() %llu",
			    (unsigned long long)count, (unsigned long long)usable);
		rc = rn_ipam_range_walk(&r, r.start + (r.end - r.start) / 2, 7, &ops, &v, &got);
		FUZZ_ASSERT(!v.overflow, "the walk went on past every address");
		FUZZ_ASSERT(rc == -EADDRNOTAVAIL, "a walk where every claim loses ended with %d",
			    rc);
		FUZZ_ASSERT(v.n == usable, "the walk visited %zu of %llu usable addresses", v.n,
			    (unsigned long long)usable);
		qsort(v.seen, v.n, sizeof(v.seen[0]), cmp_u128);
		for (size_t i = 1; i < v.n; i++)
			FUZZ_ASSERT(v.seen[i] != v.seen[i - 1],
				    "the walk offered an address twice");
	}
	if (any) {
		/* a few taken addresses (every other one from the first), then a claim that wins */
		rn_u128 taken[4];
		struct visit *v = calloc(1, sizeof(*v));
		struct rn_ipam_walk_ops ops = { .probe = probe_taken, .claim = claim_some };
		rn_u128 got = 0;
		int rc;

		if (!v)
			abort();
		for (size_t i = 0; i < 4; i++)
			taken[i] = a + 2 * i <= r.end ? a + 2 * i : r.end;
		v->r = &r;
		v->taken = taken;
		v->n_taken = 4;
		v->claims_before_yes = 3;
		rc = rn_ipam_range_walk(&r, a, 16, &ops, v, &got);
		FUZZ_ASSERT(rc == 0 || rc == -EADDRNOTAVAIL, "walk: %d", rc);
		if (rc == 0)
			FUZZ_ASSERT(rn_ipam_range_usable(&r, got),
				    "the walk claimed an unusable address");
		free(v);
	}
	rn_ipam_range_free(&r);
out:
	for (size_t i = 0; i < n; i++)
		free(f[i]);
	return 0;
}
