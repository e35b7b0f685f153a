// SPDX-License-Identifier: Apache-2.0
/* The pure GID helpers: sysfs text -> bytes, IPv4-mapped GIDs, GID types. */
#include <errno.h>
#include <string.h>

#include "rdmans/sysfs.h"
#include "test.h"

static const uint8_t irdma_link_local[16] = { 0xfe, 0x80, 0,	0,    0,    0,	  0,	0,
					      0xb6, 0x96, 0x91, 0xff, 0xfe, 0xec, 0xa4, 0x58 };
static const uint8_t irdma_ipv4[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 100, 100, 1 };

static void gid_parse_reads_the_sysfs_form(void)
{
	struct rn_error err = { 0 };
	uint8_t raw[16];

	CHECK_INT(rn_gid_parse("fe80:0000:0000:0000:b696:91ff:feec:a458", raw, &err), 0);
	CHECK(memcmp(raw, irdma_link_local, 16) == 0);
	CHECK_INT(rn_gid_parse("0000:0000:0000:0000:0000:ffff:0a64:6401", raw, &err), 0);
	CHECK(memcmp(raw, irdma_ipv4, 16) == 0);
	CHECK(!rn_error_isset(&err));
}

static void gid_parse_reads_the_ibv_devinfo_form(void)
{
	/* ibv_devinfo -v prints "GID[  1]: ::ffff:10.100.100.1, RoCE v2" (the IIJ E810 walkthrough) */
	uint8_t raw[16];

	CHECK_INT(rn_gid_parse("fe80::b696:91ff:feec:a458", raw, NULL), 0);
	CHECK(memcmp(raw, irdma_link_local, 16) == 0);
	CHECK_INT(rn_gid_parse("::ffff:10.100.100.1", raw, NULL), 0);
	CHECK(memcmp(raw, irdma_ipv4, 16) == 0);
}

static void gid_parse_rejects_what_is_not_a_gid(void)
{
	struct rn_error err = { 0 };
	uint8_t raw[16];

	CHECK_INT(rn_gid_parse("10.100.100.1", raw, &err), -EINVAL);
	CHECK_INT(err.code, EINVAL);
	CHECK_CONTAINS(err.msg, "'10.100.100.1' is not a GID");
	rn_error_clear(&err);
	CHECK_INT(rn_gid_parse("fe80:0000:0000:0000:b696:91ff:feec:a458:0001", raw, &err), -EINVAL);
	CHECK_INT(rn_gid_parse("fe80::zz", raw, &err), -EINVAL);
	CHECK_INT(rn_gid_parse("", raw, &err), -EINVAL);
	CHECK_CONTAINS(err.msg, "GID is empty");
	CHECK_INT(rn_gid_parse(NULL, raw, &err), -EINVAL);
}

static void gid_ipv4_reads_the_address_of_a_mapped_gid(void)
{
	/* show_gids rows of the Baidu CCE guide: 0000:...:ffff:0a00:3c03 is 10.0.60.3 */
	char buf[16];
	uint8_t raw[16];

	CHECK_INT(rn_gid_parse("0000:0000:0000:0000:0000:ffff:0a00:3c03", raw, NULL), 0);
	CHECK(rn_gid_ipv4(raw, buf, sizeof(buf)));
	CHECK_STR(buf, "10.0.60.3");
	CHECK_INT(rn_gid_parse("0000:0000:0000:0000:0000:ffff:190b:80e2", raw, NULL), 0);
	CHECK(rn_gid_ipv4(raw, buf, sizeof(buf)));
	CHECK_STR(buf, "25.11.128.226");
	CHECK(rn_gid_ipv4(irdma_ipv4, buf, sizeof(buf)));
	CHECK_STR(buf, "10.100.100.1");
	CHECK_INT(rn_gid_parse("::ffff:255.255.255.255", raw, NULL), 0);
	CHECK(rn_gid_ipv4(raw, buf, sizeof(buf)));
	CHECK_STR(buf, "255.255.255.255");
}

static void gid_ipv4_is_false_for_other_gids(void)
{
	char buf[16] = "junk";
	uint8_t raw[16];

	CHECK(!rn_gid_ipv4(irdma_link_local, buf, sizeof(buf)));
	CHECK_STR(buf, "");
	/* the deprecated IPv4-compatible form (no ffff) is not a RoCE IPv4 GID */
	CHECK_INT(rn_gid_parse("::10.0.60.3", raw, NULL), 0);
	CHECK(!rn_gid_ipv4(raw, buf, sizeof(buf)));
	/* ::ffff:0:a.b.c.d (IPv4-translated) neither */
	CHECK_INT(rn_gid_parse("::ffff:0:a00:3c03", raw, NULL), 0);
	CHECK(!rn_gid_ipv4(raw, buf, sizeof(buf)));
	memset(raw, 0, sizeof(raw));
	CHECK(!rn_gid_ipv4(raw, buf, sizeof(buf)));
}

static void gid_ipv4_is_false_when_the_buffer_is_too_small(void)
{
	char buf[8];

	CHECK(!rn_gid_ipv4(irdma_ipv4, buf, sizeof(buf)));
	CHECK_STR(buf, "");
	CHECK(!rn_gid_ipv4(irdma_ipv4, buf, 0));
}

static void gid_is_zero_marks_empty_slots_only(void)
{
	uint8_t raw[16] = { 0 };

	CHECK(rn_gid_is_zero(raw));
	raw[15] = 1;
	CHECK(!rn_gid_is_zero(raw));
	raw[15] = 0;
	raw[0] = 0x80;
	CHECK(!rn_gid_is_zero(raw));
	CHECK(!rn_gid_is_zero(irdma_ipv4));
}

static void gid_type_comes_from_the_type_file_and_the_link_layer(void)
{
	CHECK_INT(rn_gid_type_from_sysfs("RoCE v2", "Ethernet"), RN_GID_ROCE_V2);
	CHECK_INT(rn_gid_type_from_sysfs("IB/RoCE v1", "Ethernet"), RN_GID_ROCE_V1);
	CHECK_INT(rn_gid_type_from_sysfs("IB/RoCE v1", "InfiniBand"), RN_GID_IB);
	CHECK_INT(rn_gid_type_from_sysfs("RoCE v1", "Ethernet"), RN_GID_ROCE_V1);
	/* a v2 GID says what it is whatever the link layer */
	CHECK_INT(rn_gid_type_from_sysfs("RoCE v2", NULL), RN_GID_ROCE_V2);
}

static void gid_type_is_unknown_when_it_cannot_be_told(void)
{
	/* an IB port whose type file cannot be read is still IB */
	CHECK_INT(rn_gid_type_from_sysfs(NULL, "InfiniBand"), RN_GID_IB);
	CHECK_INT(rn_gid_type_from_sysfs("", "InfiniBand"), RN_GID_IB);
	/* on Ethernet an unreadable type could be v1 or v2 */
	CHECK_INT(rn_gid_type_from_sysfs(NULL, "Ethernet"), RN_GID_UNKNOWN);
	CHECK_INT(rn_gid_type_from_sysfs("", "Ethernet"), RN_GID_UNKNOWN);
	/* "IB/RoCE v1" needs the link layer to be told apart */
	CHECK_INT(rn_gid_type_from_sysfs("IB/RoCE v1", NULL), RN_GID_UNKNOWN);
	CHECK_INT(rn_gid_type_from_sysfs("IB/RoCE v1", "Unknown"), RN_GID_UNKNOWN);
	CHECK_INT(rn_gid_type_from_sysfs("roce v2", "Ethernet"), RN_GID_UNKNOWN);
	CHECK_INT(rn_gid_type_from_sysfs("RoCE v3", "Ethernet"), RN_GID_UNKNOWN);
}

static void gid_type_names_and_show_gids_versions(void)
{
	CHECK_STR(rn_gid_type_name(RN_GID_IB), "IB");
	CHECK_STR(rn_gid_type_name(RN_GID_ROCE_V1), "RoCE v1");
	CHECK_STR(rn_gid_type_name(RN_GID_ROCE_V2), "RoCE v2");
	CHECK_STR(rn_gid_type_name(RN_GID_UNKNOWN), "?");
	CHECK_STR(rn_gid_type_name((enum rn_gid_type)42), "?");
	CHECK_STR(rn_gid_type_version(RN_GID_IB), "IB");
	CHECK_STR(rn_gid_type_version(RN_GID_ROCE_V1), "v1");
	CHECK_STR(rn_gid_type_version(RN_GID_ROCE_V2), "v2");
	CHECK_STR(rn_gid_type_version(RN_GID_UNKNOWN), "?");
	CHECK_STR(rn_gid_type_version((enum rn_gid_type)42), "?");
}

RN_TEST_MAIN(T(gid_parse_reads_the_sysfs_form), T(gid_parse_reads_the_ibv_devinfo_form),
	     T(gid_parse_rejects_what_is_not_a_gid), T(gid_ipv4_reads_the_address_of_a_mapped_gid),
	     T(gid_ipv4_is_false_for_other_gids), T(gid_ipv4_is_false_when_the_buffer_is_too_small),
	     T(gid_is_zero_marks_empty_slots_only),
	     T(gid_type_comes_from_the_type_file_and_the_link_layer),
	     T(gid_type_is_unknown_when_it_cannot_be_told),
	     T(gid_type_names_and_show_gids_versions))
