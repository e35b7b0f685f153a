/* SPDX-License-Identifier: Apache-2.0 */
/* NCCL settings as text: env, sh, nccl.conf, merged with an image's own (nccl_conf.c). */
#ifndef RDMANS_NCCL_CONF_H
#define RDMANS_NCCL_CONF_H

#include <stdbool.h>
#include <stddef.h>

#include "rdmans/error.h"
#include "rdmans/nccl.h"

enum rn_nccl_format {
	RN_NCCL_FMT_ENV, /* NAME=VALUE lines (env files, `env`) */
	RN_NCCL_FMT_SH, /* a POSIX sh script that sets what the environment does not set already */
	RN_NCCL_FMT_CONF, /* nccl.conf: NAME=VALUE, comments on lines of their own */
};

/*
 * The settings as text in *ret (malloc'd). explain adds comment lines: the
 * ports, the profile, each value's origin, warnings. Fails with -EINVAL when a
 * value cannot be written in that format (a newline; an env file value
 * with quotes or spaces is written raw, as env files take it).
 */
int rn_nccl_render(const struct rn_nccl_result *res, enum rn_nccl_format fmt, bool explain,
		   char **ret, struct rn_error *err);

/*
 * nccl.conf text merged with `existing` (an image's own /etc/nccl.conf, or
 * one written by an earlier run; NULL or "" when none):
 *  - rdmans' block (from a line that is exactly "# rdmans: begin" to the next
 *    line that is exactly "# rdmans: end", no begin line between) is
 *    rewritten at the top; every other line is kept, in order;
 *  - an existing value wins over a profile value, loses to everything else;
 *    a line that loses is kept as a comment ("#rdmans-overridden:LINE") and
 *    comes back when a later run no longer sets that variable; a stray
 *    marker line is kept behind the same prefix, so it can never pair with
 *    a later marker;
 *  - every variable we set is read by NCCL with our value.
 * Merging its own output again gives the same text (tests/fuzz/merge-props.c
 * checks both properties on any input).
 * header: one comment line for the top of the block (newlines become spaces).
 */
int rn_nccl_conf_merge(const struct rn_nccl_result *res, const char *existing, const char *header,
		       char **ret, struct rn_error *err);

/*
 * Each line of an nccl.conf text as NCCL reads it (src/misc/param.cc
 * setEnvFile): lines starting with '#' and lines without '=' are skipped,
 * the name runs to the first '=', the value is the rest of the line, cut at
 * 1023 bytes, nothing trimmed. fn's non-zero return stops the walk and is
 * returned; 0 otherwise. The one reader of nccl.conf text.
 */
typedef int (*rn_nccl_conf_line_fn)(const char *name, size_t name_len, const char *value,
				    size_t value_len, void *arg);
int rn_nccl_conf_each(const char *text, rn_nccl_conf_line_fn fn, void *arg);

/*
 * The value NCCL reads for `name` from an nccl.conf text (the first line
 * NAME=..., cut at 1023 bytes), into buf. false when it sets none.
 */
bool rn_nccl_conf_value(const char *text, const char *name, char *buf, size_t len);

#endif
