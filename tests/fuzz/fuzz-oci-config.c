// SPDX-License-Identifier: Apache-2.0
/*
 * rdmans-hook's precreate filter (rdmans/oci_config_json.h) on any input: a
 * refusal says why; an accepted config comes back as the input with one
 * insertion into process.env, equal to it everywhere else, the config's own
 * values winning, and nothing more added the second time
 * (oci-config-props.c); device nodes come back as insertions into
 * linux.devices and its cgroup rules, the same way. Input over 4 KiB must be refused as too big.
 */
#include "fuzz.h"
#include "oci-config-props.h"

#define FUZZ_CONFIG_MAX 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rn_oci_env_add add[] = {
		{ "NCCL_IB_HCA", "=mlx5_1", NULL },
		{ "NCCL_IB_GID_INDEX", "3", NULL },
		{ "NCCL_SOCKET_IFNAME", "net1", NULL },
		{ "NCCL_X", "a\"b\\c\t\xc3\xa9", NULL },
	};
	char why[512] = "";

	FUZZ_ASSERT(oci_config_props_check((const char *)data, size, FUZZ_CONFIG_MAX, add,
					   sizeof(add) / sizeof(add[0]), why, sizeof(why)) >= 0,
		    "%s", why);
	FUZZ_ASSERT(oci_config_devices_check((const char *)data, size, FUZZ_CONFIG_MAX, why,
					     sizeof(why)) >= 0,
		    "%s", why);
	return 0;
}
