// SPDX-License-Identifier: Apache-2.0
/*
 * rn_nccl_conf_merge()'s properties, written apart from nccl_conf.c: the
 * lines are split and the blocks found here again, on arrays, so that a
 * mistake in the merge's own scan is not repeated in the check.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "merge-props.h"
#include "rdmans/cleanup.h"
#include "rdmans/nccl.h"
#include "rdmans/nccl_conf.h"

#define BEGIN "# rdmans: begin"
#define END "# rdmans: end"
#define OV "#rdmans-overridden:"

struct text_lines {
	size_t n;
	char **v;
	char *buf;
};

static void tl_free(struct text_lines *t)
{
	free(t->v);
	free(t->buf);
	memset(t, 0, sizeof(*t));
}

/* Lines of s split at '\n'; a final newline ends the last line, it opens no empty one. */
static int tl_split(const char *s, struct text_lines *t)
{
	size_t n = 0;

	memset(t, 0, sizeof(*t));
	t->buf = strdup(s ? s : "");
	if (!t->buf)
		return -1;
	for (const char *p = t->buf; *p; p++)
		if (*p == '\n')
			n++;
	t->v = calloc(n + 2, sizeof(*t->v));
	if (!t->v)
		return -1;
	for (char *p = t->buf; *p;) {
		char *nl = strchr(p, '\n');

		t->v[t->n++] = p;
		if (!nl)
			break;
		*nl = '\0';
		p = nl + 1;
	}
	return 0;
}

static bool has_prefix(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* NCCL's reading of a line: not a comment, NAME before the first '='. */
static bool nccl_var(const char *line, const char *name, const char **value)
{
	size_t n = strlen(name);

	if (line[0] == '#' || strncmp(line, name, n) != 0 || line[n] != '=')
		return false;
	*value = line + n + 1;
	return true;
}

/* What NCCL takes for name from lines[from..]: the first value, NULL when none. */
static const char *nccl_value(const struct text_lines *t, size_t from, const char *name)
{
	const char *value;

	for (size_t i = from; i < t->n; i++)
		if (nccl_var(t->v[i], name, &value))
			return value;
	return NULL;
}

static void restore(const char *line, char *out, size_t len)
{
	const char *rest = line + strlen(OV);

	/* a variable line behind OV is put back, anything else stays as it is */
	if (has_prefix(line, OV) && rest[0] && rest[0] != '#' && strchr(rest, '=') &&
	    strchr(rest, '=') != rest && (size_t)(strchr(rest, '=') - rest) < RN_NCCL_NAME_MAX)
		snprintf(out, len, "%s", rest);
	else
		snprintf(out, len, "%s", line);
}

static int check_once(const struct rn_nccl_result *res, const char *in, const char *out, char *why,
		      size_t why_len)
{
	_cleanup_(tl_free) struct text_lines a = { 0 }, b = { 0 };
	const char **kept = NULL;
	size_t n_kept = 0, end = 0, k;
	int ret = -1;

	if (tl_split(in, &a) < 0 || tl_split(out, &b) < 0) {
		snprintf(why, why_len, "out of memory");
		return -1;
	}
	kept = calloc(a.n + 1, sizeof(*kept));
	if (!kept) {
		snprintf(why, why_len, "out of memory");
		return -1;
	}
	/* the lines that are not ours, found again */
	for (size_t i = 0; i < a.n; i++) {
		if (strcmp(a.v[i], BEGIN) == 0) {
			size_t j = i + 1;

			while (j < a.n && strcmp(a.v[j], BEGIN) != 0 && strcmp(a.v[j], END) != 0)
				j++;
			if (j < a.n && strcmp(a.v[j], END) == 0) {
				i = j;
				continue;
			}
		}
		kept[n_kept++] = a.v[i];
	}
	/* one block, at the top */
	if (b.n == 0 || strcmp(b.v[0], BEGIN) != 0) {
		snprintf(why, why_len, "the output does not start with the block");
		goto out;
	}
	for (end = 1; end < b.n && strcmp(b.v[end], END) != 0; end++)
		if (strcmp(b.v[end], BEGIN) == 0 || has_prefix(b.v[end], OV)) {
			snprintf(why, why_len, "line %zu of the block is \"%s\"", end + 1,
				 b.v[end]);
			goto out;
		}
	if (end == b.n) {
		snprintf(why, why_len, "the block has no end");
		goto out;
	}
	/* no lost line: the rest is the kept lines, in order */
	if (b.n - end - 1 != n_kept) {
		snprintf(why, why_len, "%zu lines of the input are not ours, %zu follow the block",
			 n_kept, b.n - end - 1);
		goto out;
	}
	for (k = 0; k < n_kept; k++) {
		const char *o = b.v[end + 1 + k], *i = kept[k];
		char ri[RN_NCCL_VALUE_MAX * 2 + 64], ro[RN_NCCL_VALUE_MAX * 2 + 64];

		if (strcmp(o, BEGIN) == 0 || strcmp(o, END) == 0) {
			snprintf(why, why_len, "a block marker comes out bare after the block");
			goto out;
		}
		if (strcmp(o, i) == 0 || (has_prefix(o, OV) && strcmp(o + strlen(OV), i) == 0) ||
		    (has_prefix(i, OV) && strcmp(i + strlen(OV), o) == 0))
			continue;
		restore(i, ri, sizeof(ri));
		restore(o, ro, sizeof(ro));
		if (strcmp(ri, ro) == 0)
			continue;
		snprintf(why, why_len, "line \"%.200s\" of the input came out as \"%.200s\"", i, o);
		goto out;
	}
	/* what NCCL reads */
	for (size_t s = 0; s < res->n; s++) {
		const struct rn_nccl_setting *set = &res->v[s];
		const char *want = set->value, *got = nccl_value(&b, 0, set->name);
		bool image_has = false;

		for (k = 0; k < n_kept && !image_has; k++) {
			char r[RN_NCCL_VALUE_MAX * 2 + 64];
			const char *v;

			restore(kept[k], r, sizeof(r));
			image_has = nccl_var(r, set->name, &v);
		}
		if (set->source == RN_NCCL_SRC_PROFILE && image_has)
			want = nccl_value(&b, end + 1, set->name);
		if (!got || !want || strcmp(got, want) != 0) {
			snprintf(why, why_len, "NCCL would read %s=%s, not %s", set->name,
				 got ? got : "(unset)", want ? want : "(the image's value)");
			goto out;
		}
	}
	for (size_t s = 0; s < res->n_unset; s++)
		if (nccl_value(&b, 0, res->unset[s].name)) {
			snprintf(why, why_len, "NCCL would read %s, which is removed",
				 res->unset[s].name);
			goto out;
		}
	ret = 0;
out:
	free(kept);
	return ret;
}

int merge_props_check(const struct rn_nccl_result *res, const char *existing, const char *header,
		      char *why, size_t why_len)
{
	_cleanup_free_ char *once = NULL, *twice = NULL;
	struct rn_error err = { 0 };

	if (rn_nccl_conf_merge(res, existing, header, &once, &err) < 0 ||
	    rn_nccl_conf_merge(res, once, header, &twice, &err) < 0) {
		snprintf(why, why_len, "merge failed: %s", err.msg);
		return -1;
	}
	if (strcmp(once, twice) != 0) {
		snprintf(why, why_len, "merging again changed the text");
		return -1;
	}
	return check_once(res, existing, once, why, why_len);
}

static const char *const names[] = {
	"NCCL_IB_HCA", "NCCL_IB_GID_INDEX",  "NCCL_DEBUG", "NCCL_IB_TIMEOUT",
	"A",	       "NCCL_SOCKET_IFNAME",
};

static uint8_t take(const uint8_t **data, size_t *size)
{
	uint8_t b = 0;

	if (*size) {
		b = **data;
		(*data)++;
		(*size)--;
	}
	return b;
}

int merge_props_result(const uint8_t **data, size_t *size, struct rn_nccl_result *res)
{
	size_t n_names = sizeof(names) / sizeof(names[0]);
	uint8_t pick = take(data, size), kind = take(data, size);

	memset(res, 0, sizeof(*res));
	res->v = calloc(n_names, sizeof(*res->v));
	res->unset = calloc(n_names, sizeof(*res->unset));
	if (!res->v || !res->unset)
		return -1;
	snprintf(res->profile, sizeof(res->profile), "roce");
	snprintf(res->profile_origin, sizeof(res->profile_origin), "a test");
	/* each name: left alone, set by the profile, set by a layer, or removed */
	for (size_t i = 0; i < n_names; i++) {
		unsigned how = ((unsigned)(pick >> (i % 4 * 2)) + (unsigned)(kind >> (i % 8))) % 4;
		struct rn_nccl_setting *s;

		if (how == 0)
			continue;
		s = how == 3 ? &res->unset[res->n_unset++] : &res->v[res->n++];
		snprintf(s->name, sizeof(s->name), "%s", names[i]);
		s->source = how == 1 ? RN_NCCL_SRC_PROFILE : RN_NCCL_SRC_ANNOTATION;
		snprintf(s->origin, sizeof(s->origin), "%s", how == 1 ? "profile roce" : "a layer");
		snprintf(s->value, sizeof(s->value), "v%u", (unsigned)i);
	}
	return 0;
}
