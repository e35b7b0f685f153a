// SPDX-License-Identifier: Apache-2.0
/*
 * The text of IPAM records: "key=value" lines an operator can read with cat
 * or etcdctl, the same in both stores. Unknown keys are skipped so a newer
 * writer does not break an older reader.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rdmans/cleanup.h"
#include "rdmans/ipam_record.h"

/* set_field()'s sscanf widths */
_Static_assert(sizeof(((struct rn_ipam_held *)0)->pool) == 58, "pool width");
_Static_assert(sizeof(((struct rn_ipam_held *)0)->ip) == 46, "ip width");
_Static_assert(sizeof(((struct rn_ipam_held *)0)->range) == 50, "range width");

#define RECORD_HEADER "# rdma-netns-ipam address record\n"
#define ATTACHMENT_HEADER "# rdma-netns-ipam attachment record\n"

struct field {
	const char *key;
	char *value;
	size_t size;
};

static bool clean(const char *v)
{
	for (; *v; v++)
		if ((unsigned char)*v < 0x20 || *v == 0x7f)
			return false;
	return true;
}

/* A pool is one directory (local store) or key part (etcd): no '/', no ".", "..". */
static bool pool_name_ok(const char *pool)
{
	return pool[0] && pool[0] != '.' && !strchr(pool, '/') && clean(pool);
}

static int emit(FILE *f, const struct field *fields, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (!clean(fields[i].value))
			return -EINVAL;
		fprintf(f, "%s=%s\n", fields[i].key, fields[i].value);
	}
	return 0;
}

static int finish(FILE **f, char **buf, char **ret)
{
	if (fclose(*f) != 0) {
		*f = NULL;
		return -ENOMEM;
	}
	*f = NULL;
	*ret = TAKE_PTR(*buf);
	return 0;
}

/* A field whose key is its member's name. */
#define FIELD(x, member)                                                                           \
	{                                                                                          \
#member, (x)->member, sizeof((x)->member)                                          \
	}

/* Who holds it: the same keys, in the same order, in both kinds of record. */
#define OWNER_FIELDS(x)                                                                            \
	FIELD(x, network), FIELD(x, container_id), FIELD(x, ifname), FIELD(x, pod),                \
		FIELD(x, node), FIELD(x, time), FIELD(x, netns), FIELD(x, netns_ino)

#define RECORD_FIELDS(rec)                                                                         \
	{                                                                                          \
		FIELD(rec, ip), FIELD(rec, range), FIELD(rec, scope), FIELD(rec, pool),            \
			FIELD(rec, attachment), OWNER_FIELDS(rec)                                  \
	}

#define ATTACHMENT_FIELDS(att)                                                                     \
	{                                                                                          \
		{ "attachment", (att)->id, sizeof((att)->id) }, FIELD(att, scope),                 \
			OWNER_FIELDS(att)                                                          \
	}

/* The header line, the fields and then the addresses held (an attachment's). */
static int format_text(const char *header, const struct field *fields, size_t n_fields,
		       const struct rn_ipam_held *held, size_t n_held, char **ret)
{
	_cleanup_free_ char *buf = NULL;
	_cleanup_fclose_ FILE *f = NULL;
	size_t len = 0;
	int ret_code;

	f = open_memstream(&buf, &len);
	if (!f)
		return -ENOMEM;
	fputs(header, f);
	ret_code = emit(f, fields, n_fields);
	if (ret_code < 0)
		return ret_code;
	for (size_t i = 0; i < n_held; i++) {
		const struct rn_ipam_held *h = &held[i];

		if (!clean(h->pool) || !clean(h->ip) || !clean(h->range) || strchr(h->pool, ' '))
			return -EINVAL;
		fprintf(f, "address=%s %s %s\n", h->pool, h->ip, h->range);
	}
	return finish(&f, &buf, ret);
}

int rn_ipam_record_format(const struct rn_ipam_record *rec, char **ret)
{
	struct rn_ipam_record *r = (struct rn_ipam_record *)rec; /* fields are only read */
	const struct field fields[] = RECORD_FIELDS(r);

	return format_text(RECORD_HEADER, fields, RN_ARRAY_SIZE(fields), NULL, 0, ret);
}

int rn_ipam_attachment_format(const struct rn_ipam_attachment *att, char **ret)
{
	struct rn_ipam_attachment *a = (struct rn_ipam_attachment *)att;
	const struct field fields[] = ATTACHMENT_FIELDS(a);

	return format_text(ATTACHMENT_HEADER, fields, RN_ARRAY_SIZE(fields), att->held, att->n,
			   ret);
}

/*
 * Calls fn(key, value) for each "key=value" line; comments and blank lines
 * are skipped; a line without '=' is an error.
 */
static int each_line(const char *text,
		     int (*fn)(const char *key, size_t klen, const char *value, size_t vlen,
			       void *ctx),
		     void *ctx)
{
	const char *p = text;

	while (*p) {
		const char *nl = strchr(p, '\n'), *eq;
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		int r;

		if (len > 0 && p[0] != '#') {
			eq = memchr(p, '=', len);
			if (!eq)
				return -EBADMSG;
			r = fn(p, (size_t)(eq - p), eq + 1, len - (size_t)(eq - p) - 1, ctx);
			if (r < 0)
				return r;
		}
		p += len;
		if (*p == '\n')
			p++;
	}
	return 0;
}

struct fields_ctx {
	const struct field *fields;
	size_t n;
	struct rn_ipam_attachment *att; /* for address= lines */
};

static int set_field(const char *key, size_t klen, const char *value, size_t vlen, void *ctx)
{
	struct fields_ctx *c = ctx;

	if (c->att && klen == 7 && memcmp(key, "address", 7) == 0) {
		struct rn_ipam_held *h;
		char line[256];
		int n;

		if (c->att->n >= RN_IPAM_MAX_RANGES || vlen >= sizeof(line))
			return -EBADMSG;
		h = &c->att->held[c->att->n];
		memcpy(line, value, vlen);
		line[vlen] = '\0';
		/* pool, address, range: sizes from struct rn_ipam_held */
		n = sscanf(line, "%57s %45s %49s", h->pool, h->ip, h->range);
		if (n != 3 || !pool_name_ok(h->pool) || !clean(h->ip) || !clean(h->range))
			return -EBADMSG;
		c->att->n++;
		return 0;
	}
	for (size_t i = 0; i < c->n; i++) {
		if (strlen(c->fields[i].key) != klen || memcmp(c->fields[i].key, key, klen) != 0)
			continue;
		if (vlen >= c->fields[i].size)
			return -EBADMSG;
		memcpy(c->fields[i].value, value, vlen);
		c->fields[i].value[vlen] = '\0';
		/* what could not be written back (a control character) is damage, not data */
		if (strlen(c->fields[i].value) != vlen || !clean(c->fields[i].value))
			return -EBADMSG;
		return 0;
	}
	return 0; /* unknown key: skipped */
}

int rn_ipam_record_parse(const char *text, struct rn_ipam_record *ret, struct rn_error *err)
{
	memset(ret, 0, sizeof(*ret));
	{
		const struct field fields[] = RECORD_FIELDS(ret);
		struct fields_ctx c = { fields, RN_ARRAY_SIZE(fields), NULL };
		struct rn_ip ip;

		if (each_line(text, set_field, &c) < 0 || !ret->ip[0] || !ret->attachment[0] ||
		    !ret->scope[0] || !pool_name_ok(ret->pool) || rn_ip_parse(ret->ip, &ip) < 0)
			return rn_error_set(err, EBADMSG,
					    "not an address record (want ip=, attachment=, scope=, "
					    "pool= lines)");
	}
	return 0;
}

int rn_ipam_attachment_parse(const char *text, struct rn_ipam_attachment *ret, struct rn_error *err)
{
	memset(ret, 0, sizeof(*ret));
	{
		const struct field fields[] = ATTACHMENT_FIELDS(ret);
		struct fields_ctx c = { fields, RN_ARRAY_SIZE(fields), ret };

		if (each_line(text, set_field, &c) < 0 || !ret->id[0] || !ret->scope[0] ||
		    !ret->container_id[0])
			return rn_error_set(err, EBADMSG,
					    "not an attachment record (want attachment=, scope=, "
					    "container_id= lines)");
	}
	return 0;
}

/* The one layout of time= (RFC 3339, UTC): written by ADD, read by the reconciler. */
#define RECORD_TIME_FORMAT "%Y-%m-%dT%H:%M:%SZ"

void rn_ipam_record_time(long long t, char *buf, size_t len)
{
	time_t when = (time_t)t;
	struct tm tm;

	gmtime_r(&when, &tm);
	strftime(buf, len, RECORD_TIME_FORMAT, &tm);
}

bool rn_ipam_record_time_parse(const char *text, long long *ret)
{
	struct tm tm;
	const char *end;

	memset(&tm, 0, sizeof(tm));
	end = strptime(text, RECORD_TIME_FORMAT, &tm);
	if (!end || *end)
		return false;
	*ret = (long long)timegm(&tm);
	return true;
}
