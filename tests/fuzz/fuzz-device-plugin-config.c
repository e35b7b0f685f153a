// SPDX-License-Identifier: Apache-2.0
/*
 * rdmans-device-plugin's configuration file: a refusal says why; what is
 * accepted has one to RN_DP_MAX_POOLS pools, each a named resource
 * PREFIX/NAME with no two names alike, and a CDI kind VENDOR/CLASS.
 */
#include "fuzz.h"
#include "rdmans/device_plugin_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rn_dp_config cfg;
	struct rn_error err = { 0 };
	int r = rn_dp_config_parse((const char *)data, size, &cfg, &err);

	if (r < 0) {
		FUZZ_ASSERT(err.msg[0], "refused (%d) without a message", r);
		return 0;
	}
	FUZZ_ASSERT(cfg.n_pools >= 1 && cfg.n_pools <= RN_DP_MAX_POOLS, "%zu pools", cfg.n_pools);
	FUZZ_ASSERT(strchr(cfg.cdi_kind, '/'), "CDI kind '%s'", cfg.cdi_kind);
	for (size_t i = 0; i < cfg.n_pools; i++) {
		const char *slash = strrchr(cfg.pools[i].resource, '/');

		FUZZ_ASSERT(cfg.pools[i].name[0], "pool %zu has no name", i);
		FUZZ_ASSERT(slash && !strcmp(slash + 1, cfg.pools[i].name), "resource '%s' of '%s'",
			    cfg.pools[i].resource, cfg.pools[i].name);
		for (size_t j = 0; j < i; j++)
			FUZZ_ASSERT(strcmp(cfg.pools[i].name, cfg.pools[j].name), "two pools '%s'",
				    cfg.pools[i].name);
	}
	return 0;
}
