/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The properties of rn_nccl_conf_merge(), checked on any input: by the unit
 * test (generated inputs) and by the fuzz target (libFuzzer's inputs).
 */
#ifndef RDMANS_MERGE_PROPS_H
#define RDMANS_MERGE_PROPS_H

#include <stddef.h>
#include <stdint.h>

#include "rdmans/nccl.h"

/*
 * Merges `existing` with res, then merges the result again, and checks:
 *  - no lost line: every line of `existing` outside rdmans' blocks (a line
 *    "# rdmans: begin" up to the next line "# rdmans: end" with no begin
 *    between) comes out after the block, in order, as it was or with
 *    "#rdmans-overridden:" added or taken away;
 *  - idempotence: the second merge gives the first one's text;
 *  - the output has exactly one block, at the top, and NCCL takes our value
 *    of every variable we set (the image's first one where a profile value
 *    yields to it) and no value of a variable we remove.
 * 0, or -1 with what broke in why.
 */
int merge_props_check(const struct rn_nccl_result *res, const char *existing, const char *header,
		      char *why, size_t why_len);

/*
 * A result made from bytes (the fuzz target's and the unit test's way to
 * vary what the merge is given): settings from a small set of names, each
 * from the profile or a stronger source, some removed variables. Consumes
 * bytes from *data. Free it with rn_nccl_result_free().
 */
int merge_props_result(const uint8_t **data, size_t *size, struct rn_nccl_result *res);

#endif
