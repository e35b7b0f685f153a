// SPDX-License-Identifier: Apache-2.0
/*
 * Pure GID helpers: parsing sysfs GID text, the IPv4-mapped form RoCE uses
 * for IPv4 addresses, and the GID type strings of gid_attrs/types/N.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "rdmans/gid.h"
#include "rdmans/sysfs.h"
#include "rdmans/cleanup.h"

int rn_gid_parse(const char *text, uint8_t raw[16], struct rn_error *err)
{
	struct in6_addr a;

	if (!text || !*text)
		return rn_error_set(err, EINVAL, "GID is empty");
	/* The sysfs form (8 groups of 4 hex digits) is a valid inet_pton() form. */
	if (inet_pton(AF_INET6, text, &a) != 1)
		return rn_error_set(err, EINVAL,
				    "'%s' is not a GID (expected an IPv6-style address such as "
				    "fe80:0000:0000:0000:b696:91ff:feec:a458)",
				    text);
	memcpy(raw, a.s6_addr, 16);
	return 0;
}

bool rn_gid_ipv4(const uint8_t raw[16], char *buf, size_t len)
{
	static const uint8_t prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	if (!buf || len == 0)
		return false;
	buf[0] = '\0';
	if (memcmp(raw, prefix, sizeof(prefix)) != 0)
		return false;
	if (!inet_ntop(AF_INET, raw + 12, buf, (socklen_t)len)) {
		buf[0] = '\0';
		return false;
	}
	return true;
}

bool rn_gid_is_zero(const uint8_t raw[16])
{
	for (size_t i = 0; i < 16; i++)
		if (raw[i])
			return false;
	return true;
}

enum rn_gid_type rn_gid_type_from_sysfs(const char *type, const char *link_layer)
{
	bool ib = link_layer && strcmp(link_layer, "InfiniBand") == 0;
	bool eth = link_layer && strcmp(link_layer, "Ethernet") == 0;

	if (!type || !*type)
		/* IB ports on older kernels have no readable type: the link layer decides. */
		return ib ? RN_GID_IB : RN_GID_UNKNOWN;
	if (strcmp(type, "RoCE v2") == 0)
		return RN_GID_ROCE_V2;
	if (strcmp(type, "RoCE v1") == 0)
		return RN_GID_ROCE_V1;
	if (strcmp(type, "IB/RoCE v1") == 0) {
		/* The kernel prints IB and RoCE v1 GIDs alike; only the link layer tells them apart. */
		if (ib)
			return RN_GID_IB;
		if (eth)
			return RN_GID_ROCE_V1;
	}
	return RN_GID_UNKNOWN;
}

/* Each GID type's name and its short form ("v2"), one row a type. */
static const struct {
	const char *name, *version;
} gid_types[] = {
	[RN_GID_IB] = { "IB", "IB" },
	[RN_GID_ROCE_V1] = { "RoCE v1", "v1" },
	[RN_GID_ROCE_V2] = { "RoCE v2", "v2" },
};

const char *rn_gid_type_name(enum rn_gid_type type)
{
	return (size_t)type < RN_ARRAY_SIZE(gid_types) && gid_types[type].name
		       ? gid_types[type].name
		       : "?";
}

const char *rn_gid_type_version(enum rn_gid_type type)
{
	return (size_t)type < RN_ARRAY_SIZE(gid_types) && gid_types[type].version
		       ? gid_types[type].version
		       : "?";
}
