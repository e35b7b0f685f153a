/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Keeping pods' addresses when a network switches from whereabouts
 * (ipam_import.c): whereabouts' IPPool objects, as `kubectl get ippools -o
 * json` prints them, read into allocations, and each taken in our store by
 * the attachment the pod's next DEL or CHECK names.
 */
#ifndef RDMANS_IPAM_IMPORT_H
#define RDMANS_IPAM_IMPORT_H

#include <stdbool.h>
#include <stddef.h>

#include "rdmans/error.h"
#include "rdmans/ipam.h"
#include "rdmans/ipam_config.h"
#include "rdmans/ipam_range.h"
#include "rdmans/ipam_record.h"

/* One entry of an IPPool's spec.allocations. */
struct rn_whereabouts_alloc {
	char pool[RN_IPAM_NAME_MAX]; /* the IPPool's metadata.name */
	char range[RN_CIDR_STRLEN]; /* its spec.range */
	char offset[24]; /* the key: an offset from the range's address */
	struct rn_ip ip;
	char ip_text[RN_IP_STRLEN];
	char container_id[RN_IPAM_NAME_MAX]; /* "id" */
	char pod_namespace[RN_IPAM_NAME_MAX]; /* "podref": namespace/name, or empty */
	char pod_name[RN_IPAM_NAME_MAX];
	char ifname[16]; /* "ifname", or empty (whereabouts before 0.7 wrote none) */
};

/*
 * Parses an IPPool, an IPPoolList or a List of IPPools (JSON). Refuses the
 * whole text, naming the pool and key, when anything is not whereabouts'
 * format: a range that is no CIDR, an offset outside it, a missing id.
 * *ret is malloc'ed (NULL with *ret_n 0 when the pools allocate nothing).
 */
int rn_whereabouts_parse(const char *text, size_t len, struct rn_whereabouts_alloc **ret,
			 size_t *ret_n, struct rn_error *err);

enum rn_import_outcome {
	RN_IMPORT_TAKEN, /* now held by the pod's attachment */
	RN_IMPORT_HELD, /* that attachment already held it */
	RN_IMPORT_REFUSED, /* held by another, or the attachment holds another address */
	RN_IMPORT_WOULD, /* dry run */
};

struct rn_import_opts {
	const char *ifname; /* for allocations without one; NULL: refuse them */
	const char *node; /* the records' node; NULL: none (no node's reconciler judges them) */
	bool dry_run;
};

typedef void rn_import_fn(void *ctx, const struct rn_whereabouts_alloc *a, const char *attachment,
			  enum rn_import_outcome outcome, const char *why);

/*
 * Takes each allocation in s for c's network. Every allocation is checked
 * first (an address in one of c's ranges, an interface name): if one
 * fails, nothing is written. Then each is taken in turn; one held by
 * another attachment is reported (fn) and counted in *ret_refused, the
 * rest go on. A store error stops it: what was taken stays (an import run
 * again takes the rest; those already taken report RN_IMPORT_HELD).
 */
int rn_ipam_import(struct rn_ipam_store *s, const struct rn_ipam_config *c,
		   const struct rn_whereabouts_alloc *allocs, size_t n,
		   const struct rn_import_opts *o, rn_import_fn *fn, void *ctx, size_t *ret_refused,
		   struct rn_error *err);

#endif
