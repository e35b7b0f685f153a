// SPDX-License-Identifier: Apache-2.0
/*
 * Resolved NCCL settings as text: env lines, a sh script, nccl.conf, and
 * nccl.conf merged with an image's own.
 *
 * nccl.conf as NCCL reads it (src/misc/param.cc, setEnvFile): a line starting
 * with '#' is skipped; otherwise NAME is everything before the first '=' and
 * VALUE everything after it up to the newline (no trimming, no quotes, at
 * most 1023 bytes); setenv(NAME, VALUE, 0): the environment wins, and the
 * first occurrence of a name wins over later ones.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmans/cleanup.h"
#include "rdmans/nccl.h"

#define BLOCK_BEGIN "# rdmans: begin"
#define BLOCK_END "# rdmans: end"
#define OVERRIDDEN "#rdmans-overridden:"

/* A memory stream; *buf gets the text once it is closed. */
struct text {
	FILE *f;
	char *buf;
	size_t len;
};

static int text_open(struct text *t)
{
	memset(t, 0, sizeof(*t));
	t->f = open_memstream(&t->buf, &t->len);
	return t->f ? 0 : -ENOMEM;
}

static int text_close(struct text *t, char **ret)
{
	bool bad = ferror(t->f);

	if (fclose(t->f) != 0)
		bad = true;
	t->f = NULL;
	if (bad) {
		free(t->buf);
		t->buf = NULL;
		return -ENOMEM;
	}
	*ret = t->buf;
	t->buf = NULL;
	return 0;
}

static void explain_ports(FILE *f, const struct rn_nccl_result *res)
{
	for (size_t i = 0; i < res->n_ports; i++) {
		const struct rn_nccl_port_use *u = &res->ports[i];

		fprintf(f, "# %s port %u: ", u->dev, u->port);
		if (!u->used) {
			fprintf(f, "not used: %s\n", u->why_not);
			continue;
		}
		fprintf(f, "used");
		if (u->netdev[0])
			fprintf(f, ", netdev %s", u->netdev);
		switch (u->gid_status) {
		case RN_NCCL_GID_FOUND:
			fprintf(f, ", RoCE v2 GID %d holds %s", u->gid_index, u->gid_addr);
			break;
		case RN_NCCL_GID_NO_ADDR:
			fprintf(f, ", no %s address", res->family == AF_INET6 ? "IPv6" : "IPv4");
			break;
		case RN_NCCL_GID_NO_MATCH:
			fprintf(f, ", no RoCE v2 GID for its address");
			break;
		case RN_NCCL_GID_NA:
			break;
		}
		fputc('\n', f);
	}
}

static void explain_setting(FILE *f, const struct rn_nccl_setting *s)
{
	fprintf(f, "# %s: %s", s->name, s->origin);
	if (s->detail[0])
		fprintf(f, ": %s", s->detail);
	if (s->replaced[0])
		fprintf(f, " (replaces %s)", s->replaced);
	fputc('\n', f);
}

static void explain_head(FILE *f, const struct rn_nccl_result *res)
{
	fprintf(f, "# profile %s (%s)\n", res->profile, res->profile_origin);
	if (res->version.major)
		fprintf(f, "# NCCL %u.%u.%u, %s: %s\n", res->version.major, res->version.minor,
			res->version.patch, res->version_why,
			rn_nccl_ver_class_desc(res->ver_class));
	else
		fprintf(f, "# NCCL version unknown (%s): %s\n", res->version_why,
			rn_nccl_ver_class_desc(res->ver_class));
	if (res->family_why[0])
		fprintf(f, "# address family %s: %s\n", res->family == AF_INET6 ? "IPv6" : "IPv4",
			res->family_why);
	explain_ports(f, res);
	for (size_t i = 0; i < res->n_warnings; i++)
		fprintf(f, "# warning: %s\n", res->warnings[i]);
	for (size_t i = 0; i < res->n_unset; i++)
		fprintf(f, "# %s: removed by %s (was %s)\n", res->unset[i].name,
			res->unset[i].origin, res->unset[i].replaced);
}

/* 'value' for sh, with ' written as '\'' */
static void sh_quote(FILE *f, const char *value)
{
	fputc('\'', f);
	for (const char *p = value; *p; p++) {
		if (*p == '\'')
			fputs("'\\''", f);
		else
			fputc(*p, f);
	}
	fputc('\'', f);
}

static int check_values(const struct rn_nccl_result *res, struct rn_error *err)
{
	for (size_t i = 0; i < res->n; i++)
		if (strpbrk(res->v[i].value, "\n\r"))
			return rn_error_set(err, EINVAL,
					    "value of %s (%s) spans several lines: it cannot be "
					    "written to a file",
					    res->v[i].name, res->v[i].origin);
	return 0;
}

int rn_nccl_render(const struct rn_nccl_result *res, enum rn_nccl_format fmt, bool explain,
		   char **ret, struct rn_error *err)
{
	struct text t;
	int r;

	*ret = NULL;
	r = check_values(res, err);
	if (r < 0)
		return r;
	if (text_open(&t) < 0)
		return rn_error_set(err, ENOMEM, "out of memory");
	if (fmt == RN_NCCL_FMT_SH)
		fprintf(t.f, "# NCCL settings from rdmans; variables already set in the "
			     "environment are left alone.\n");
	if (explain)
		explain_head(t.f, res);
	for (size_t i = 0; i < res->n; i++) {
		const struct rn_nccl_setting *s = &res->v[i];

		if (explain)
			explain_setting(t.f, s);
		if (fmt == RN_NCCL_FMT_SH) {
			fprintf(t.f, "if [ -z \"${%s+x}\" ]; then %s=", s->name, s->name);
			sh_quote(t.f, s->value);
			fprintf(t.f, "; export %s; fi\n", s->name);
		} else {
			fprintf(t.f, "%s=%s\n", s->name, s->value);
		}
	}
	if (text_close(&t, ret) < 0)
		return rn_error_set(err, ENOMEM, "out of memory");
	return 0;
}

/* ---- merging with an existing nccl.conf ---- */

struct line {
	char *text; /* without the newline */
	char name[RN_NCCL_NAME_MAX]; /* the variable it sets, "" for comments and the like */
	bool first; /* the first line setting `name` (the one NCCL takes) */
};

struct lines {
	size_t n;
	struct line *v;
};

static void lines_free(struct lines *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].text);
	free(l->v);
	l->n = 0;
	l->v = NULL;
}

static int lines_add(struct lines *l, const char *text, size_t len)
{
	struct line *v = realloc(l->v, (l->n + 1) * sizeof(*v));
	struct line *ln;
	const char *eq;

	if (!v)
		return -ENOMEM;
	l->v = v;
	ln = &l->v[l->n];
	memset(ln, 0, sizeof(*ln));
	ln->text = strndup(text, len);
	if (!ln->text)
		return -ENOMEM;
	l->n++;
	eq = memchr(ln->text, '=', len);
	if (ln->text[0] != '#' && eq && (size_t)(eq - ln->text) < sizeof(ln->name)) {
		memcpy(ln->name, ln->text, (size_t)(eq - ln->text));
		ln->name[eq - ln->text] = '\0';
		ln->first = true;
		for (size_t i = 0; i + 1 < l->n; i++)
			if (strcmp(l->v[i].name, ln->name) == 0)
				ln->first = false;
	}
	return 0;
}

/* The lines of `existing` outside rdmans' block, overridden lines restored. */
static int parse_existing(const char *existing, struct lines *out)
{
	bool in_block = false;
	const char *p = existing;
	int r;

	while (p && *p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);

		if (len >= strlen(BLOCK_BEGIN) && strncmp(p, BLOCK_BEGIN, strlen(BLOCK_BEGIN)) == 0)
			in_block = true;
		else if (in_block && len >= strlen(BLOCK_END) &&
			 strncmp(p, BLOCK_END, strlen(BLOCK_END)) == 0)
			in_block = false;
		else if (!in_block) {
			if (len >= strlen(OVERRIDDEN) &&
			    strncmp(p, OVERRIDDEN, strlen(OVERRIDDEN)) == 0)
				r = lines_add(out, p + strlen(OVERRIDDEN),
					      len - strlen(OVERRIDDEN));
			else
				r = lines_add(out, p, len);
			if (r < 0)
				return r;
		}
		p = nl ? nl + 1 : NULL;
	}
	return 0;
}

static const struct line *image_value(const struct lines *l, const char *name)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i].first && strcmp(l->v[i].name, name) == 0)
			return &l->v[i];
	return NULL;
}

/* A setting of ours that the image's value beats: profile values only. */
static bool yields(const struct rn_nccl_setting *s, const struct lines *image)
{
	return s->source == RN_NCCL_SRC_PROFILE && image_value(image, s->name);
}

static bool overrides(const struct rn_nccl_result *res, const struct lines *image, const char *name)
{
	const struct rn_nccl_setting *s = rn_nccl_result_get(res, name);

	if (s)
		return !yields(s, image);
	for (size_t i = 0; i < res->n_unset; i++)
		if (strcmp(res->unset[i].name, name) == 0)
			return true;
	return false;
}

int rn_nccl_conf_merge(const struct rn_nccl_result *res, const char *existing, const char *header,
		       char **ret, struct rn_error *err)
{
	_cleanup_(lines_free) struct lines image = { 0 };
	struct text t;
	int r;

	*ret = NULL;
	r = check_values(res, err);
	if (r < 0)
		return r;
	if (parse_existing(existing, &image) < 0 || text_open(&t) < 0)
		return rn_error_set(err, ENOMEM, "out of memory");

	fprintf(t.f, "%s: %s\n", BLOCK_BEGIN,
		header && *header ? header : "NCCL settings resolved by rdmans");
	fprintf(t.f, "# This block is rewritten on every run; lines below it are kept. Variables "
		     "set in the environment win over this file.\n");
	explain_head(t.f, res);
	for (size_t i = 0; i < res->n; i++) {
		const struct rn_nccl_setting *s = &res->v[i];
		const struct line *img = image_value(&image, s->name);

		if (yields(s, &image)) {
			fprintf(t.f, "# %s: the image's own value is kept (%s would set %s)\n",
				s->name, s->origin, s->value);
			continue;
		}
		explain_setting(t.f, s);
		if (img)
			fprintf(t.f, "# %s: overrides the image's %s\n", s->name, img->text);
		fprintf(t.f, "%s=%s\n", s->name, s->value);
	}
	fprintf(t.f, "%s\n", BLOCK_END);
	for (size_t i = 0; i < image.n; i++) {
		const struct line *ln = &image.v[i];

		if (ln->name[0] && overrides(res, &image, ln->name))
			fprintf(t.f, "%s%s\n", OVERRIDDEN, ln->text);
		else
			fprintf(t.f, "%s\n", ln->text);
	}
	if (text_close(&t, ret) < 0)
		return rn_error_set(err, ENOMEM, "out of memory");
	return 0;
}
