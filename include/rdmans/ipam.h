/* SPDX-License-Identifier: Apache-2.0 */
/*
 * IP address management for RDMA networks (the rdma-netns-ipam CNI plugin and
 * `rdmans ipam`). whereabouts' configuration, one record per address.
 *
 * Three layers:
 *  - addresses and ranges: parsing, 128-bit arithmetic, excludes, the search
 *    from a hint (pure, ipam_range.c);
 *  - records: the text each address and attachment is stored as
 *    (key=value lines an operator can read, ipam_record.c);
 *  - stores: "local" (one file per address under a data directory) and
 *    "etcd" (one key per address, created with a txn that compares
 *    create_revision to 0), behind rn_ipam_add/del/check/status/gc (ipam.c).
 *
 * An attachment is (pod namespace/name from CNI_ARGS, else container ID) +
 * ifname: a repeated ADD returns what it already holds; DEL releases only
 * what the caller's attachment holds.
 */
#ifndef RDMANS_IPAM_H
#define RDMANS_IPAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "rdmans/cleanup.h"
#include "rdmans/error.h"

typedef unsigned __int128 rn_u128;

#define RN_IP_STRLEN 46 /* INET6_ADDRSTRLEN */
#define RN_CIDR_STRLEN 50 /* address + "/128" */

#define RN_IPAM_PLUGIN_NAME "rdma-netns-ipam"
#define RN_IPAM_DEFAULT_DATA_DIR "/var/lib/cni/rdma-netns-ipam"
#define RN_IPAM_DEFAULT_ETCD_PREFIX "/rdma-netns-ipam"
/* The store's name for addresses of a config without network_name. */
#define RN_IPAM_DEFAULT_SCOPE "_default"
#define RN_IPAM_MAX_RANGES 16

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

/* ---- records ------------------------------------------------------------ */

#define RN_IPAM_ID_MAX 384
#define RN_IPAM_NAME_MAX 256

/* One address, as stored (key=value lines). */
struct rn_ipam_record {
	char ip[RN_IP_STRLEN];
	char range[RN_CIDR_STRLEN]; /* the subnet it was given from */
	char scope[RN_IPAM_NAME_MAX];
	char pool[RN_CIDR_STRLEN + 8];
	char attachment[RN_IPAM_ID_MAX];
	char network[RN_IPAM_NAME_MAX]; /* the CNI network's name */
	char container_id[RN_IPAM_NAME_MAX];
	char ifname[16];
	char pod[RN_IPAM_ID_MAX]; /* "namespace/name", or empty */
	char node[RN_IPAM_NAME_MAX];
	char time[32]; /* UTC, RFC 3339 */
	char netns[RN_IPAM_NAME_MAX]; /* CNI_NETNS at ADD, or empty (older records) */
	char netns_ino[24]; /* its inode number then, or empty */
};

struct rn_ipam_held {
	char pool[RN_CIDR_STRLEN + 8];
	char ip[RN_IP_STRLEN];
	char range[RN_CIDR_STRLEN];
};

/* An attachment (owner + ifname) and the addresses it holds. */
struct rn_ipam_attachment {
	char id[RN_IPAM_ID_MAX];
	char scope[RN_IPAM_NAME_MAX];
	char network[RN_IPAM_NAME_MAX];
	char container_id[RN_IPAM_NAME_MAX];
	char ifname[16];
	char pod[RN_IPAM_ID_MAX];
	char node[RN_IPAM_NAME_MAX];
	char time[32];
	char netns[RN_IPAM_NAME_MAX];
	char netns_ino[24];
	size_t n;
	struct rn_ipam_held held[RN_IPAM_MAX_RANGES];
};

/* Text forms; *ret is malloc'ed. Parsing refuses unknown layouts with -EBADMSG. */
int rn_ipam_record_format(const struct rn_ipam_record *rec, char **ret);
int rn_ipam_record_parse(const char *text, struct rn_ipam_record *ret, struct rn_error *err);
int rn_ipam_attachment_format(const struct rn_ipam_attachment *att, char **ret);
int rn_ipam_attachment_parse(const char *text, struct rn_ipam_attachment *ret,
			     struct rn_error *err);

/* ---- configuration ------------------------------------------------------ */

enum rn_ipam_store_kind {
	RN_IPAM_STORE_LOCAL,
	RN_IPAM_STORE_ETCD,
};

enum rn_ipam_log_level {
	RN_IPAM_LOG_ERROR,
	RN_IPAM_LOG_INFO,
	RN_IPAM_LOG_DEBUG,
};

struct rn_ipam_etcd {
	char **endpoints; /* "https://10.0.0.1:2379" */
	size_t n_endpoints;
	char *ca_file, *cert_file, *key_file;
	char *username;
	char *password; /* a secret: never in messages or logs */
	char *key_prefix;
	long timeout_ms; /* each request, at most */
	/* all requests of one store (one CNI call), at most; 0: no bound (rdmans) */
	long deadline_ms;
	/* where a user sets the user name and password, for messages (static text):
	 * the config keys, or rdmans's flags (RN_IPAM_CONFIG_CLI) */
	const char *user_settings;
};

struct rn_ipam_config {
	char *cni_version;
	char *network; /* the CNI network's "name" */
	char *network_name; /* whereabouts' network_name: a separate set of pools */
	char *scope; /* network_name, or RN_IPAM_DEFAULT_SCOPE */
	bool overlapping; /* enable_overlapping_ranges (default true) */
	struct rn_ipam_range ranges[RN_IPAM_MAX_RANGES];
	size_t n_ranges;
	char *routes_json; /* "routes" and "dns" as given, for the result */
	char *dns_json;
	char *log_file;
	enum rn_ipam_log_level log_level;
	char *flat_file; /* the configuration file merged in, if any */
	enum rn_ipam_store_kind store;
	char *data_dir;
	struct rn_ipam_etcd etcd;
	char *node;
};

/* Store settings only: DEL and GC must work whatever became of the ranges. */
#define RN_IPAM_CONFIG_STORE_ONLY 0x1u
/* The settings came from rdmans's --etcd-* flags: messages name the flags, not the keys. */
#define RN_IPAM_CONFIG_CLI 0x2u
/* The default bound on one CNI call's etcd requests (ipam.etcd.deadline_ms). */
#define RN_IPAM_ETCD_DEADLINE_MS 10000

/*
 * Parses a CNI network config (its "ipam" object), a conflist (the first
 * plugin with an "ipam" object) or a flat IPAM object, merges the first
 * configuration file found (configuration_path, then
 * {/etc/kubernetes/cni/net.d,/etc/cni/net.d,/host/etc/cni/net.d}/
 * {rdma-netns-ipam.d/rdma-netns-ipam.conf,whereabouts.d/whereabouts.conf},
 * under `root`, "" for /): keys given inline win. Errors: -EBADMSG (not
 * JSON), -EINVAL (a bad value, named in the message), -ENOENT/-EACCES (a file).
 */
int rn_ipam_config_parse(const char *json, const char *root, unsigned flags,
			 struct rn_ipam_config *ret, struct rn_error *err);
void rn_ipam_config_free(struct rn_ipam_config *c);

/* The pool (store directory/key part) a range's addresses live in. */
void rn_ipam_pool_name(const struct rn_ipam_config *c, const struct rn_ipam_range *r, char *buf,
		       size_t len);

/* ---- the store ---------------------------------------------------------- */

struct rn_ipam_store;

int rn_ipam_store_open(const struct rn_ipam_config *c, struct rn_ipam_store **ret,
		       struct rn_error *err);
void rn_ipam_store_close(struct rn_ipam_store *s);
RN_DEFINE_TRIVIAL_CLEANUP_FUNC(struct rn_ipam_store *, rn_ipam_store_close)
#define _cleanup_ipam_store_ _cleanup_(rn_ipam_store_closep)

/* Can the store be reached (and, for etcd, read with our credentials)? */
int rn_ipam_store_ping(struct rn_ipam_store *s, struct rn_error *err);

struct rn_ipam_owner {
	const char *container_id; /* CNI_CONTAINERID */
	const char *ifname; /* CNI_IFNAME */
	const char *pod_namespace; /* K8S_POD_NAMESPACE, optional */
	const char *pod_name; /* K8S_POD_NAME, optional */
	const char *netns; /* CNI_NETNS, optional: what `rdmans ipam reconcile` checks */
};

struct rn_ipam_lease_addr {
	struct rn_ip ip;
	unsigned prefix;
	size_t range; /* index into config ranges */
	bool has_gateway;
	rn_u128 gateway;
};

struct rn_ipam_lease {
	size_t n;
	struct rn_ipam_lease_addr addr[RN_IPAM_MAX_RANGES];
	bool existing; /* a repeated ADD: these were already held */
};

/* Attachment id for an owner ("ns/pod/ifname" or "containerid/ifname"); validates. */
int rn_ipam_attachment_id(const struct rn_ipam_owner *o, char *buf, size_t len,
			  struct rn_error *err);

/* One address from each range; the same ones again for a repeated ADD. -EADDRNOTAVAIL: a range is full. */
int rn_ipam_add(struct rn_ipam_store *s, const struct rn_ipam_config *c,
		const struct rn_ipam_owner *o, struct rn_ipam_lease *ret, struct rn_error *err);
/* Releases the caller's addresses; 0 when it holds none. *ret_released (optional) counts them. */
int rn_ipam_del(struct rn_ipam_store *s, const struct rn_ipam_config *c,
		const struct rn_ipam_owner *o, size_t *ret_released, struct rn_error *err);
/* 0 when the caller holds an address in every range (in *ret); -ENOENT otherwise, with why. */
int rn_ipam_check(struct rn_ipam_store *s, const struct rn_ipam_config *c,
		  const struct rn_ipam_owner *o, struct rn_ipam_lease *ret, struct rn_error *err);
/* 0 when ADD can be served: store reachable and a free address in every range; -EADDRNOTAVAIL when full. */
int rn_ipam_status(struct rn_ipam_store *s, const struct rn_ipam_config *c, struct rn_error *err);

struct rn_ipam_valid {
	const char *container_id;
	const char *ifname;
};
/*
 * CNI GC: releases the attachments of this node (c->node) and network
 * (c->network) in c->scope whose (container ID, ifname) is not in valid[],
 * and address records none of those attachments holds.
 */
int rn_ipam_gc(struct rn_ipam_store *s, const struct rn_ipam_config *c,
	       const struct rn_ipam_valid *valid, size_t n_valid, size_t *ret_released,
	       struct rn_error *err);

/* ---- operators ---------------------------------------------------------- */

struct rn_ipam_filter {
	const char *scope; /* NULL: every scope */
	const char *node; /* NULL: any */
	const char *network; /* CNI network name */
	const char *container_id; /* prefix match */
	const char *pod; /* "ns/name" */
	const char *ifname;
	const char *ip; /* exact */
};

/*
 * A stored entry that is not a readable record: garbage, truncated, empty,
 * a symlink, a directory, a record whose text names another address than
 * its key. A damaged address record still takes its address; a damaged
 * attachment is rebuilt from the address records naming it (ADD, DEL, gc).
 */
struct rn_ipam_damaged {
	bool attachment; /* an attachment record, else an address record */
	char scope[RN_IPAM_NAME_MAX];
	char pool[RN_CIDR_STRLEN + 8]; /* address records */
	char key[RN_IPAM_ID_MAX]; /* the address it takes, or the attachment id */
	bool takes_address; /* key is an address of the pool: no ADD gets it */
	char why[320];
	uint64_t version;
};

/*
 * Every address record matching f (NULL: all), sorted by scope, pool,
 * address; and, when ret_damaged is not NULL, every damaged entry (address
 * records and attachments) in f's scope, of f's address if given. Owner
 * filters (node, network, container, pod, ifname) cannot match a damaged
 * entry: with one of them, none is returned.
 */
int rn_ipam_list(struct rn_ipam_store *s, const struct rn_ipam_filter *f,
		 struct rn_ipam_record **ret, size_t *ret_n, struct rn_ipam_damaged **ret_damaged,
		 size_t *ret_n_damaged, struct rn_error *err);
/* The attachment holding rec (-ENOENT when none does). */
int rn_ipam_attachment_get(struct rn_ipam_store *s, const char *scope, const char *id,
			   struct rn_ipam_attachment *ret, struct rn_error *err);
/* Releases one address (and drops it from its attachment). */
int rn_ipam_release(struct rn_ipam_store *s, const struct rn_ipam_record *rec,
		    struct rn_error *err);
/*
 * Removes a damaged address record, judged again at removal and removed
 * only if it is still the same damaged entry (compare-and-delete): -EBUSY
 * when it is a readable record now, -ENOENT when it is gone.
 */
int rn_ipam_release_damaged(struct rn_ipam_store *s, const struct rn_ipam_damaged *d,
			    struct rn_error *err);

struct rn_ipam_repair_stats {
	size_t temp_files; /* crash leftovers removed (local store) */
	size_t orphans; /* address records no attachment holds */
	size_t empty; /* attachments holding nothing */
	size_t rebuilt; /* damaged attachments rewritten from their address records */
	size_t damaged; /* damaged address records left (rdmans ipam release --damaged) */
};
/* Removes what crashes and hand edits leave behind; dry_run counts only. */
int rn_ipam_repair(struct rn_ipam_store *s, bool dry_run, struct rn_ipam_repair_stats *ret,
		   struct rn_error *err);

/* ---- the reconciler ------------------------------------------------------- */

/* The default grace: longer than any CNI ADD runs (kubelet gives up after 4 minutes). */
#define RN_IPAM_RECONCILE_GRACE_S 300

struct rn_ipam_reconcile_opts {
	const char *node; /* this node: no other node's record is touched */
	long grace_s; /* a record younger than this (its own time=) is left alone; a time
			 * unreadable or further ahead of now than this never is */
	bool dry_run;
	long long now; /* seconds since the epoch; 0: the clock */
};

enum rn_ipam_verdict {
	RN_IPAM_RELEASED, /* netns gone, container not running, older than the grace */
	RN_IPAM_KEPT_YOUNG, /* netns gone, but within the grace period */
	RN_IPAM_KEPT_UNKNOWN, /* cannot be told from here (why says): never guessed */
	RN_IPAM_KEPT_RUNNING, /* netns path gone but its container still runs */
	RN_IPAM_CHANGED, /* changed since it was judged (a new ADD): left alone */
	RN_IPAM_DAMAGED, /* a damaged entry: reported, not guessed */
};

/* Called for each record acted on or reported (not for live ones); rec or d. */
typedef void (*rn_ipam_reconcile_fn)(void *ctx, enum rn_ipam_verdict v,
				     const struct rn_ipam_record *rec,
				     const struct rn_ipam_damaged *d, const char *why);

struct rn_ipam_reconcile_stats {
	size_t records, mine, alive, released, young, unknown, running, changed, damaged;
};

/*
 * Releases this node's address records whose attachment's network
 * namespace no longer exists (rn_netns_path_state()) and whose container
 * runs no process (where this process sees the host's PIDs), once they are
 * older than the grace period. Each release is a compare-and-delete of the
 * record exactly as judged (etcd: its mod_revision; local: its inode and
 * text, under the attachment's lock): an ADD that took the address
 * meanwhile keeps it.
 */
int rn_ipam_reconcile(struct rn_ipam_store *s, const struct rn_ipam_reconcile_opts *o,
		      rn_ipam_reconcile_fn fn, void *ctx, struct rn_ipam_reconcile_stats *ret,
		      struct rn_error *err);

#endif
