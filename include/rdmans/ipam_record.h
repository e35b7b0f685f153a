/* SPDX-License-Identifier: Apache-2.0 */
/* The text each address and attachment is stored as: key=value lines an operator can read (ipam_record.c). */
#ifndef RDMANS_IPAM_RECORD_H
#define RDMANS_IPAM_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdmans/error.h"
#include "rdmans/ipam_range.h"

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

/* time=: t (seconds since the epoch) as "2026-11-23T08:56:46Z", UTC. */
void rn_ipam_record_time(long long t, char *buf, size_t len);
/* time= text -> seconds since the epoch (negative before 1970); false when unreadable. */
bool rn_ipam_record_time_parse(const char *text, long long *ret);

#endif
