/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The properties of rn_oci_config_add_env() (rdmans-hook's precreate
 * filter), checked on any input: by the unit test and by the fuzz target.
 */
#ifndef RDMANS_OCI_CONFIG_PROPS_H
#define RDMANS_OCI_CONFIG_PROPS_H

#include <stddef.h>

#include "rdmans/oci_config_json.h"

/*
 * Parses in[0..len) (at most max bytes) and adds `add`. A refusal must come
 * with a message, and only for input jansson refuses too, input over max, or
 * a config of the wrong shape. An accepted one must give:
 *  - the input with one contiguous insertion, byte for byte;
 *  - a document equal to the input's (decoded apart, here) once process.env
 *    is left out of both;
 *  - process.env: the input's, then "NAME=VALUE" for each add the input did
 *    not set, in order; each one it set has `kept` = its first value there;
 *  - output that parses again, and adding the same again adds nothing.
 * 1 when refused (rightly), 0 when accepted and every property holds, -1
 * with what broke in why.
 */
int oci_config_props_check(const char *in, size_t len, size_t max, struct rn_oci_env_add *add,
			   size_t n, char *why, size_t why_len);

/*
 * rn_oci_config_add_devices() with a uverbs node and rdma_cm on a config
 * that parses (1 when it does not): insertions only (the input is a
 * subsequence of the output); a document equal to the input's once the
 * added entries, and the members made for them, are left out; the added
 * node last in linux.devices and an allow rule last in its cgroup rules;
 * output that parses, and adding the same again adds nothing. 0 or -1 with
 * what broke in why.
 */
int oci_config_devices_check(const char *in, size_t len, size_t max, char *why, size_t why_len);

#endif
