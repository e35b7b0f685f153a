// SPDX-License-Identifier: Apache-2.0
/*
 * The etcd store against any answers: ipam_http.c is replaced here by a
 * fake whose requests return the input's answers in turn (then "connection
 * refused"), so etcd_client.c, ipam_store_etcd.c and ipam.c run ADD,
 * CHECK, DEL, GC, STATUS and the operators' list and repair on whatever an
 * etcd (or something posing as one) says. An address handed out is always a usable
 * one of its range.
 *
 * Input: answers separated by a NUL byte; an answer's first byte picks the
 * outcome (a transport error, or HTTP 200/400/401/403/404/500/503), the
 * rest is its body. The input's first byte picks the config (with or
 * without a user) and the commands.
 */
#include <errno.h>
#include <time.h>

#include "../../src/lib/ipam/ipam_http.h"
#include "fuzz.h"
#include "rdmans/ipam.h"
#include "rdmans/ipam_admin.h"

static struct {
	const uint8_t *data;
	size_t size;
	size_t posts;
} feed;

struct rn_http {
	int unused;
};

int rn_http_open(const struct rn_http_tls *tls, long timeout_ms, struct rn_http **ret,
		 struct rn_error *err)
{
	*ret = calloc(1, sizeof(**ret));
	return *ret ? 0 : rn_error_set(err, ENOMEM, "out of memory");
}

void rn_http_close(struct rn_http *h)
{
	free(h);
}

int rn_http_request(struct rn_http *h, const char *method, const char *url, const char *body,
		    const char *authorization, long timeout_ms, long *ret_status, char **ret_body,
		    struct rn_error *err)
{
	static const long status[] = { 200, 200, 200, 200, 400, 401, 403, 404, 500, 503 };
	const uint8_t *end;
	size_t n;
	uint8_t kind;

	FUZZ_ASSERT(++feed.posts < 100000, "more than 100000 requests for one input");
	if (feed.size == 0)
		return rn_error_set(err, ECONNREFUSED, "%s: connection refused (fuzz)", url);
	end = memchr(feed.data, 0, feed.size);
	n = end ? (size_t)(end - feed.data) : feed.size;
	kind = n ? feed.data[0] : 0;
	*ret_body = fuzz_str(n ? feed.data + 1 : feed.data, n ? n - 1 : 0);
	feed.data += n + (end ? 1 : 0);
	feed.size -= n + (end ? 1 : 0);
	if (kind % 16 >= 10) {
		free(*ret_body);
		*ret_body = NULL;
		return rn_error_set(err, kind % 16 == 10 ? EPROTO : ETIMEDOUT, "%s: fuzz", url);
	}
	*ret_status = status[kind % 16];
	return 0;
}

/* The etcd client waits between retries; here that is time lost. */
int nanosleep(const struct timespec *req, struct timespec *rem)
{
	return 0;
}

static struct rn_ipam_config configs[2];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static const char *const json[] = {
		"{\"cniVersion\":\"1.0.0\",\"name\":\"net\",\"ipam\":{\"type\":\"rdma-netns-ipam\","
		"\"ipRanges\":[{\"range\":\"10.9.0.0/29\"},{\"range\":\"fd00:9::/125\"}],"
		"\"store\":\"etcd\",\"node_name\":\"n1\",\"etcd\":{\"endpoints\":"
		"[\"http://etcd-a.invalid:2379\",\"http://etcd-b.invalid:2379\"]}}}",
		"{\"cniVersion\":\"1.0.0\",\"name\":\"net\",\"ipam\":{\"type\":\"rdma-netns-ipam\","
		"\"range\":\"10.9.0.0/30\",\"gateway\":\"10.9.0.1\",\"store\":\"etcd\","
		"\"node_name\":\"n1\",\"etcd\":{\"endpoints\":[\"http://etcd.invalid:2379\"],"
		"\"username\":\"cni\",\"password\":\"pw\",\"key_prefix\":\"/x\"}}}",
	};
	for (size_t i = 0; i < 2; i++) {
		struct rn_error err = { 0 };

		if (rn_ipam_config_parse(json[i], fuzz_scratch_dir(), 0, &configs[i], &err) < 0) {
			fprintf(stderr, "fuzz-etcd-response: config %zu: %s\n", i, err.msg);
			abort();
		}
	}
	return 0;
}

static void check_lease(const struct rn_ipam_config *c, const struct rn_ipam_lease *l)
{
	FUZZ_ASSERT(l->n == c->n_ranges, "a lease of %zu addresses for %zu ranges", l->n,
		    c->n_ranges);
	for (size_t i = 0; i < l->n; i++) {
		const struct rn_ipam_lease_addr *a = &l->addr[i];

		FUZZ_ASSERT(a->range < c->n_ranges, "range index %zu", a->range);
		FUZZ_ASSERT(a->ip.family == c->ranges[a->range].family &&
				    rn_ipam_range_usable(&c->ranges[a->range], a->ip.v),
			    "address %zu is not a usable one of its range", i);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct rn_ipam_config *c;
	struct rn_ipam_owner o = { "c0ffee", "net1", "ns", "pod", "/var/run/netns/p" };
	struct rn_ipam_store *s = NULL;
	struct rn_error err = { 0 };
	uint8_t pick;

	if (size < 1)
		return 0;
	pick = data[0];
	feed.data = data + 1;
	feed.size = size - 1;
	feed.posts = 0;
	c = &configs[pick & 1];
	if (rn_ipam_store_open(c, &s, &err) < 0) {
		FUZZ_ASSERT(err.msg[0], "open refused without a message");
		return 0;
	}
	if (pick & 2) {
		struct rn_ipam_lease l = { 0 };

		if (rn_ipam_add(s, c, &o, &l, &err) == 0)
			check_lease(c, &l);
		else
			FUZZ_ASSERT(err.msg[0], "ADD failed without a message");
	}
	if (pick & 4) {
		struct rn_ipam_lease l = { 0 };

		memset(&err, 0, sizeof(err));
		if (rn_ipam_check(s, c, &o, &l, &err) == 0)
			check_lease(c, &l);
	}
	if (pick & 8) {
		size_t released = 0;

		memset(&err, 0, sizeof(err));
		(void)rn_ipam_del(s, c, &o, &released, &err);
	}
	if (pick & 16) {
		struct rn_ipam_record *recs = NULL;
		struct rn_ipam_damaged *bad = NULL;
		size_t n = 0, n_bad = 0;

		memset(&err, 0, sizeof(err));
		if (rn_ipam_list(s, NULL, &recs, &n, &bad, &n_bad, &err) == 0) {
			free(recs);
			free(bad);
		}
	}
	if (pick & 32) {
		struct rn_ipam_valid valid = { "other", "net1" };
		size_t released = 0;

		memset(&err, 0, sizeof(err));
		(void)rn_ipam_gc(s, c, &valid, 1, &released, &err);
	}
	if (pick & 64) {
		memset(&err, 0, sizeof(err));
		(void)rn_ipam_status(s, c, &err);
	}
	if (pick & 128) {
		struct rn_ipam_repair_stats stats;

		memset(&err, 0, sizeof(err));
		memset(&stats, 0, sizeof(stats));
		(void)rn_ipam_repair(s, false, &stats, &err);
	}
	rn_ipam_store_close(s);
	return 0;
}
