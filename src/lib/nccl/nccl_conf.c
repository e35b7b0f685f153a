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
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmans/cleanup.h"
#include "rdmans/nccl.h"
#include "rdmans/nccl_conf.h"
#include "rdmans/util.h"

#define BLOCK_BEGIN "# rdmans: begin"
#define BLOCK_END "# rdmans: end"
#define OVERRIDDEN "#rdmans-overridden:"

/* A memory stream; *buf gets the text once it is closed. */
struct text {
	FILE *f;
	char *buf;
	size_t len;
	bool failed;
};

static int text_open(struct text *t)
{
	memset(t, 0, sizeof(*t));
	t->f = open_memstream(&t->buf, &t->len);
	return t->f ? 0 : -ENOMEM;
}

static int text_close(struct text *t, char **ret)
{
	bool bad = t->failed || ferror(t->f);

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

/*
 * Part of a comment line: printf, with any newline or carriage return in
 * what the arguments bring (a path, a device name, a container id) made a
 * space, so that one comment stays one line and cannot forge a line of its
 * own (a variable, a block marker).
 */
__attribute__((format(printf, 2, 3))) static void emit(struct text *t, const char *fmt, ...)
{
	_cleanup_free_ char *s = RN_FORMAT_ARGS(fmt);

	if (!s) {
		t->failed = true; /* text_close() reports it */
		return;
	}
	for (char *p = s; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	fputs(s, t->f);
}

static void explain_ports(struct text *t, const struct rn_nccl_result *res)
{
	for (size_t i = 0; i < res->n_ports; i++) {
		const struct rn_nccl_port_use *u = &res->ports[i];

		emit(t, "# %s port %u: ", u->dev, u->port);
		if (!u->used) {
			emit(t, "not used: %s", u->why_not);
			fputc('\n', t->f);
			continue;
		}
		emit(t, "used");
		if (u->netdev[0])
			emit(t, ", netdev %s", u->netdev);
		switch (u->gid_status) {
		case RN_NCCL_GID_FOUND:
			emit(t, ", RoCE v2 GID %d holds %s", u->gid_index, u->gid_addr);
			break;
		case RN_NCCL_GID_NO_ADDR:
			emit(t, ", no %s address", res->family == AF_INET6 ? "IPv6" : "IPv4");
			break;
		case RN_NCCL_GID_NO_MATCH:
			emit(t, ", no RoCE v2 GID for its address");
			break;
		case RN_NCCL_GID_NA:
			break;
		}
		fputc('\n', t->f);
	}
}

static void explain_setting(struct text *t, const struct rn_nccl_setting *s)
{
	emit(t, "# %s: %s", s->name, s->origin);
	if (s->detail[0])
		emit(t, ": %s", s->detail);
	if (s->replaced[0])
		emit(t, " (replaces %s)", s->replaced);
	fputc('\n', t->f);
}

static void explain_head(struct text *t, const struct rn_nccl_result *res)
{
	emit(t, "# profile %s (%s)", res->profile, res->profile_origin);
	fputc('\n', t->f);
	if (res->version.major)
		emit(t, "# NCCL %u.%u.%u, %s: %s", res->version.major, res->version.minor,
		     res->version.patch, res->version_why, rn_nccl_ver_class_desc(res->ver_class));
	else
		emit(t, "# NCCL version unknown (%s): %s", res->version_why,
		     rn_nccl_ver_class_desc(res->ver_class));
	fputc('\n', t->f);
	if (res->family_why[0]) {
		emit(t, "# address family %s: %s", res->family == AF_INET6 ? "IPv6" : "IPv4",
		     res->family_why);
		fputc('\n', t->f);
	}
	explain_ports(t, res);
	for (size_t i = 0; i < res->n_warnings; i++) {
		emit(t, "# warning: %s", res->warnings[i]);
		fputc('\n', t->f);
	}
	for (size_t i = 0; i < res->n_unset; i++) {
		emit(t, "# %s: removed by %s (was %s)", res->unset[i].name, res->unset[i].origin,
		     res->unset[i].replaced);
		fputc('\n', t->f);
	}
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
		explain_head(&t, res);
	for (size_t i = 0; i < res->n; i++) {
		const struct rn_nccl_setting *s = &res->v[i];

		if (explain)
			explain_setting(&t, s);
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

/*
 * ---- merging with an existing nccl.conf ----
 *
 * rdmans' block is the lines from a line that is exactly BLOCK_BEGIN to the
 * next line that is exactly BLOCK_END, with no other BLOCK_BEGIN line between
 * them. Everything else is the image's and is kept, in order:
 *  - a marker line outside a block (a begin without its end, an end without
 *    its begin) is kept behind OVERRIDDEN, so that it can never pair with a
 *    marker of a later run and make a block of the image's lines;
 *  - OVERRIDDEN followed by a variable line (NAME=VALUE) is that line, put
 *    back (and commented out again when we still set NAME); OVERRIDDEN
 *    followed by anything else is kept as it is.
 * So merging is idempotent, and a line of the image is never lost: it comes
 * out as it was, or with OVERRIDDEN added or taken away.
 */

struct line {
	const char *text; /* in `existing`, without the newline */
	size_t len;
	char name[RN_NCCL_NAME_MAX]; /* the variable it sets, "" for comments and the like */
	bool escape; /* a stray block marker: written behind OVERRIDDEN */
};

struct lines {
	size_t n, cap;
	struct line *v;
};

static void lines_free(struct lines *l)
{
	free(l->v);
	l->n = l->cap = 0;
	l->v = NULL;
}

static bool line_is(const char *p, size_t len, const char *what)
{
	return len == strlen(what) && memcmp(p, what, len) == 0;
}

/*
 * A line NCCL takes as a variable (not a comment, NAME before the first '='):
 * its NAME in name (when it fits).
 */
static bool var_name(const char *p, size_t len, char name[RN_NCCL_NAME_MAX])
{
	const char *eq = memchr(p, '=', len);

	if (len == 0 || p[0] == '#' || !eq || eq == p || (size_t)(eq - p) >= RN_NCCL_NAME_MAX)
		return false;
	memcpy(name, p, (size_t)(eq - p));
	name[eq - p] = '\0';
	return true;
}

static int lines_add(struct lines *l, const char *p, size_t len)
{
	struct line *ln;
	size_t olen = strlen(OVERRIDDEN);

	if (RN_GROW(l->v, &l->cap, l->n + 1) < 0)
		return -ENOMEM;
	ln = &l->v[l->n++];
	memset(ln, 0, sizeof(*ln));
	ln->text = p;
	ln->len = len;
	if (line_is(p, len, BLOCK_BEGIN) || line_is(p, len, BLOCK_END)) {
		ln->escape = true;
	} else if (len > olen && memcmp(p, OVERRIDDEN, olen) == 0 &&
		   var_name(p + olen, len - olen, ln->name)) {
		ln->text = p + olen;
		ln->len = len - olen;
	} else if (!var_name(p, len, ln->name)) {
		ln->name[0] = '\0';
	}
	return 0;
}

static const char *next_line(const char *p, const char *end, size_t *len)
{
	const char *nl = memchr(p, '\n', (size_t)(end - p));

	*len = nl ? (size_t)(nl - p) : (size_t)(end - p);
	return nl ? nl + 1 : end;
}

/*
 * After a begin line: the end of the block (past its end line) when the next
 * marker line is an end, NULL otherwise.
 */
static const char *block_after(const char *p, const char *end)
{
	while (p < end) {
		size_t len;
		const char *next = next_line(p, end, &len);

		if (line_is(p, len, BLOCK_BEGIN))
			return NULL;
		if (line_is(p, len, BLOCK_END))
			return next;
		p = next;
	}
	return NULL;
}

/* The lines of `existing` outside rdmans' blocks. */
static int parse_existing(const char *existing, struct lines *out)
{
	const char *p = existing ? existing : "", *end = p + strlen(p);

	while (p < end) {
		size_t len;
		const char *next = next_line(p, end, &len);

		if (line_is(p, len, BLOCK_BEGIN)) {
			const char *block_end = block_after(next, end);

			if (block_end) {
				p = block_end;
				continue;
			}
		}
		if (lines_add(out, p, len) < 0)
			return -ENOMEM;
		p = next;
	}
	return 0;
}

/* The image's first line setting name (the one NCCL takes), or NULL. */
static const struct line *image_value(const struct lines *l, const char *name)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->v[i].name, name) == 0)
			return &l->v[i];
	return NULL;
}

int rn_nccl_conf_merge(const struct rn_nccl_result *res, const char *existing, const char *header,
		       char **ret, struct rn_error *err)
{
	_cleanup_(lines_free) struct lines image = { 0 };
	_cleanup_free_ bool *yields = NULL;
	struct text t;
	int r;

	*ret = NULL;
	r = check_values(res, err);
	if (r < 0)
		return r;
	yields = calloc(res->n + 1, sizeof(*yields));
	if (!yields || parse_existing(existing, &image) < 0 || text_open(&t) < 0)
		return rn_error_set(err, ENOMEM, "out of memory");

	fprintf(t.f, "%s\n", BLOCK_BEGIN);
	emit(&t, "# %s", header && *header ? header : "NCCL settings resolved by rdmans");
	fprintf(t.f, "\n# This block is rewritten on every run; lines below it are kept. Variables "
		     "set in the environment win over this file.\n");
	explain_head(&t, res);
	for (size_t i = 0; i < res->n; i++) {
		const struct rn_nccl_setting *s = &res->v[i];
		const struct line *img = image_value(&image, s->name);

		/* an image's value beats a profile value only */
		if (img && s->source == RN_NCCL_SRC_PROFILE) {
			yields[i] = true;
			emit(&t, "# %s: the image's own value is kept (%s would set %s)", s->name,
			     s->origin, s->value);
			fputc('\n', t.f);
			continue;
		}
		explain_setting(&t, s);
		if (img) {
			emit(&t, "# %s: overrides the image's %.*s", s->name, (int)img->len,
			     img->text);
			fputc('\n', t.f);
		}
		fprintf(t.f, "%s=%s\n", s->name, s->value);
	}
	fprintf(t.f, "%s\n", BLOCK_END);
	for (size_t i = 0; i < image.n; i++) {
		const struct line *ln = &image.v[i];
		bool ours = false;

		for (size_t j = 0; ln->name[0] && j < res->n && !ours; j++)
			ours = !yields[j] && strcmp(res->v[j].name, ln->name) == 0;
		for (size_t j = 0; ln->name[0] && j < res->n_unset && !ours; j++)
			ours = strcmp(res->unset[j].name, ln->name) == 0;
		if (ours || ln->escape)
			fputs(OVERRIDDEN, t.f);
		fwrite(ln->text, 1, ln->len, t.f);
		fputc('\n', t.f);
	}
	if (text_close(&t, ret) < 0)
		return rn_error_set(err, ENOMEM, "out of memory");
	return 0;
}

int rn_nccl_conf_each(const char *text, rn_nccl_conf_line_fn fn, void *arg)
{
	for (const char *line = text; line && *line;) {
		const char *end = strchrnul(line, '\n');
		const char *eq = memchr(line, '=', (size_t)(end - line));

		if (line[0] != '#' && eq) {
			size_t v = (size_t)(end - eq - 1);
			int r = fn(line, (size_t)(eq - line), eq + 1, v > 1023 ? 1023 : v, arg);

			if (r != 0)
				return r;
		}
		line = *end ? end + 1 : NULL;
	}
	return 0;
}

struct conf_lookup {
	const char *name;
	char *buf;
	size_t len;
	bool found;
};

static int conf_lookup_line(const char *name, size_t name_len, const char *value, size_t value_len,
			    void *arg)
{
	struct conf_lookup *l = arg;

	if (name_len != strlen(l->name) || strncmp(name, l->name, name_len) != 0)
		return 0;
	if (value_len < l->len) { /* a value that does not fit is not returned cut */
		memcpy(l->buf, value, value_len);
		l->buf[value_len] = '\0';
		l->found = true;
	}
	return 1; /* NCCL reads the first line of a name */
}

bool rn_nccl_conf_value(const char *text, const char *name, char *buf, size_t len)
{
	struct conf_lookup l = { .name = name, .buf = buf, .len = len };

	(void)rn_nccl_conf_each(text, conf_lookup_line, &l);
	return l.found;
}
