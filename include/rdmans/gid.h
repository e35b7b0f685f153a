/* SPDX-License-Identifier: Apache-2.0 */
/* GIDs: their text forms, types and IPv4 mapping (gid.c); the tables come from sysfs.h. */
#ifndef RDMANS_GID_H
#define RDMANS_GID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdmans/error.h"

enum rn_gid_type {
	RN_GID_UNKNOWN = 0,
	RN_GID_IB,
	RN_GID_ROCE_V1,
	RN_GID_ROCE_V2,
};

/* Parses "fe80:0000:0000:0000:b696:91ff:feec:a458" (the sysfs form) or any inet_pton() IPv6 form. */
int rn_gid_parse(const char *text, uint8_t raw[16], struct rn_error *err);
/* Writes the IPv4 address of an IPv4-mapped GID (::ffff:a.b.c.d); returns false otherwise. */
bool rn_gid_ipv4(const uint8_t raw[16], char *buf, size_t len);
/* A GID that is all zeroes is an empty slot in the table. */
bool rn_gid_is_zero(const uint8_t raw[16]);
/* From gid_attrs/types/N ("IB/RoCE v1", "RoCE v2") and the port's link_layer ("InfiniBand", "Ethernet"). */
enum rn_gid_type rn_gid_type_from_sysfs(const char *type, const char *link_layer);
/* "IB", "RoCE v1", "RoCE v2", "?" (for tables like show_gids' VER column use rn_gid_type_version()). */
const char *rn_gid_type_name(enum rn_gid_type type);
/* "v1", "v2", "IB", "?" as show_gids prints it. */
const char *rn_gid_type_version(enum rn_gid_type type);

#endif
