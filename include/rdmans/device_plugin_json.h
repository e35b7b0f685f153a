/* SPDX-License-Identifier: Apache-2.0 */
/* rdmans-device-plugin's configuration file, a JSON object (device_plugin_json.c). */
#ifndef RDMANS_DEVICE_PLUGIN_JSON_H
#define RDMANS_DEVICE_PLUGIN_JSON_H

#include <stddef.h>

#include "rdmans/device_plugin.h"
#include "rdmans/error.h"

/* One pool holding every RDMA device, rdmans.io/rdma, answered with CDI devices. */
void rn_dp_config_default(struct rn_dp_config *cfg);
/* text[0..len) into *cfg (the defaults, then what it sets); -EINVAL with the key at fault. */
int rn_dp_config_parse(const char *text, size_t len, struct rn_dp_config *cfg,
		       struct rn_error *err);

#endif
