/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Scope-bound cleanup for jansson values (cleanup.h's kin), for the modules
 * that use jansson: json_decref() when the variable leaves its scope.
 */
#ifndef RDMANS_JSON_CLEANUP_H
#define RDMANS_JSON_CLEANUP_H

#include <jansson.h>

#define _cleanup_json_ __attribute__((cleanup(json_decrefp)))

#endif
