/* SPDX-License-Identifier: Apache-2.0 */
/*
 * IP address management for RDMA networks (the rdma-netns-ipam CNI plugin and
 * `rdmans ipam`). whereabouts' configuration, one record per address.
 *
 * Three layers, a header each (this one: the stores and the CNI verbs, ipam.c):
 *  - addresses and ranges: parsing, 128-bit arithmetic, excludes, the search
 *    from a hint (pure, ipam_range.c);
 *  - records: the text each address and attachment is stored as
 *    (key=value lines an operator can read, ipam_record.c);
 *  - stores: "local" (one file per address under a data directory) and
 *    "etcd" (one key per address, created with a txn that compares
 *    create_revision to 0), behind rn_ipam_add/del/check/status/gc (ipam.c).
 *
 * Over the same stores: the operators' commands (rdmans/ipam_admin.h) and
 * the reconciler (rdmans/ipam_reconcile.h).
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
#include "rdmans/ipam_config.h"
#include "rdmans/ipam_range.h"
#include "rdmans/ipam_record.h"

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
/*
 * The same for one wanted address (an import keeping a pod's address): the
 * range holding it gets it, the other ranges keep what the attachment holds.
 * -EEXIST: another attachment holds it, or this one holds another address
 * there; -ERANGE: no range has it.
 */
int rn_ipam_add_at(struct rn_ipam_store *s, const struct rn_ipam_config *c,
		   const struct rn_ipam_owner *o, const struct rn_ip *want,
		   struct rn_ipam_lease *ret, struct rn_error *err);
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

/* ---- damaged entries ------------------------------------------------------ */

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

#endif
