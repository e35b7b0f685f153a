// SPDX-License-Identifier: Apache-2.0
/* State files and locks of the rdma-netns CNI plugin (format: rdmans/cni_state.h). */
#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "rdmans/cni_state.h"
#include "rdmans/gid.h"
#include "rdmans/util.h"

#define STATE_FILE_MAX (256 * 1024)
/* The keys outside the field tables below, for the reader and the writer */
#define KEY_FORMAT "format"
#define KEY_MODE "mode" /* "chained" or "main" */
#define KEY_BUS_ID "bus_id"
#define KEY_RDMA_KERNEL "rdma_kernel"
#define KEY_NETDEVS "netdevs"
#define KEY_NETDEV "netdev.%zu." /* its fields: netdev_fields */
#define KEY_IB_GID "ib_gid" /* after KEY_NETDEV */
#define KEY_RDMA "rdma"
#define KEY_RDMA_NAME "rdma.%zu.name"
#define KEY_SOFT_ROCE "soft_roce"
#define KEY_IP "ip.%zu"
#define NCCL_PREFIX "nccl." /* nccl.KEY: the network configuration's "nccl" block */

static const char *const phase_names[] = {
	[RN_CNI_PHASE_ADDING] = "adding",
	[RN_CNI_PHASE_READY] = "ready",
	[RN_CNI_PHASE_RELEASING] = "releasing",
};

/*
 * The keys, each spelled once, for the reader and the writer: the fields of
 * a struct in the order rdma-netns has always written them (files of every
 * version are rewritten byte for byte). A member's name is its key: the unit
 * test's fixtures (files of the writer before this struct) hold them to it.
 */
enum field_kind {
	FIELD_TEXT, /* a string, written when it holds something */
	FIELD_TEXT_ALWAYS, /* a string, written empty too */
	FIELD_PHASE,
	FIELD_SECONDS, /* a long long, written when not 0 */
	FIELD_INT, /* an int, atoi()'s reading */
	FIELD_FLAG, /* a bool, "1" when true */
};

struct field {
	const char *key;
	enum field_kind kind;
	size_t offset, size;
};

#define FIELD_OF(type, member, kind)                                                               \
	{                                                                                          \
#member, kind, offsetof(type, member), sizeof(((type *)0)->member)                 \
	}
#define ATT(member, kind) FIELD_OF(struct rn_cni_attachment, member, kind)
#define NETDEV(member, kind) FIELD_OF(struct rn_attach_netdev, member, kind)

/* Before the "nccl" block and the device section (soft_roce and ip.I come after them). */
static const struct field attachment_fields[] = {
	ATT(network, FIELD_TEXT),
	ATT(container_id, FIELD_TEXT),
	ATT(ifname, FIELD_TEXT),
	ATT(netns, FIELD_TEXT),
	ATT(phase, FIELD_PHASE),
	ATT(created, FIELD_SECONDS),
	ATT(boot_id, FIELD_TEXT),
	ATT(pod_namespace, FIELD_TEXT),
	ATT(pod_name, FIELD_TEXT),
	ATT(pod_uid, FIELD_TEXT),
	ATT(infra_container_id, FIELD_TEXT),
	ATT(ipam, FIELD_TEXT),
	ATT(devinfo, FIELD_TEXT),
};

/* netdev.I.KEY (and netdev.I.ib_gid after them, an IPoIB netdev's) */
static const struct field netdev_fields[] = {
	NETDEV(name, FIELD_TEXT_ALWAYS),
	NETDEV(pod_name, FIELD_TEXT_ALWAYS),
	NETDEV(mac, FIELD_TEXT_ALWAYS),
	NETDEV(ifindex, FIELD_INT),
	NETDEV(kind, FIELD_TEXT_ALWAYS),
	NETDEV(alias, FIELD_TEXT_ALWAYS),
	{ "up", FIELD_FLAG, offsetof(struct rn_attach_netdev, was_up), sizeof(bool) },
};

/*
 * The file as text: its keys and values in file order. Private: what they
 * mean is struct rn_cni_attachment, read and written below and nowhere else.
 */
struct kv {
	char *key;
	char *value;
	bool taken; /* a known key the reader took into the struct */
};

struct kv_list {
	size_t n;
	struct kv *v;
};

static void kv_list_free(struct kv_list *t)
{
	for (size_t i = 0; i < t->n; i++) {
		free(t->v[i].key);
		free(t->v[i].value);
	}
	free(t->v);
	t->v = NULL;
	t->n = 0;
}

static bool key_valid(const char *key)
{
	if (!key || !*key)
		return false;
	for (const char *p = key; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '_' && *p != '.' && *p != '-')
			return false;
	return true;
}

static struct kv *kv_find(const struct kv_list *t, const char *key)
{
	for (size_t i = 0; i < t->n; i++)
		if (strcmp(t->v[i].key, key) == 0)
			return &t->v[i];
	return NULL;
}

/* Sets key (a second line of a key replaces the first's value, in its place). */
static int kv_set(struct kv_list *t, const char *key, const char *value, struct rn_error *err)
{
	struct kv *kv;
	_cleanup_free_ char *copy = strdup(value);
	_cleanup_free_ char *kcopy = NULL;

	if (!copy)
		return rn_error_set(err, ENOMEM, "out of memory");
	kv = kv_find(t, key);
	if (kv) {
		free(kv->value);
		kv->value = TAKE_PTR(copy);
		return 0;
	}
	kcopy = strdup(key);
	if (!kcopy || RN_GROW(t->v, NULL, t->n + 1) < 0)
		return rn_error_set(err, ENOMEM, "out of memory");
	t->v[t->n++] = (struct kv){ .key = TAKE_PTR(kcopy), .value = TAKE_PTR(copy) };
	return 0;
}

/* The value of a known key ("PREFIX.I.FIELD" built from fmt), taken; NULL when absent. */
static const char *take(struct kv_list *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static const char *take(struct kv_list *t, const char *fmt, ...)
{
	char key[128];
	struct kv *kv;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(key, sizeof(key), fmt, ap);
	va_end(ap);
	kv = kv_find(t, key);
	if (!kv)
		return NULL;
	kv->taken = true;
	return kv->value;
}

static void settings_free(struct rn_cni_setting *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].key);
		free(v[i].value);
	}
	free(v);
}

static int settings_add(struct rn_cni_setting **v, size_t *n, const char *key, const char *value,
			struct rn_error *err)
{
	_cleanup_free_ char *k = strdup(key);
	_cleanup_free_ char *val = strdup(value);

	if (!k || !val || RN_GROW(*v, NULL, *n + 1) < 0)
		return rn_error_set(err, ENOMEM, "out of memory");
	(*v)[(*n)++] = (struct rn_cni_setting){ .key = TAKE_PTR(k), .value = TAKE_PTR(val) };
	return 0;
}

void rn_cni_attachment_free(struct rn_cni_attachment *att)
{
	if (!att)
		return;
	settings_free(att->nccl, att->n_nccl);
	settings_free(att->unknown, att->n_unknown);
	att->nccl = att->unknown = NULL;
	att->n_nccl = att->n_unknown = 0;
}

int rn_cni_attachment_add_nccl(struct rn_cni_attachment *att, const char *key, const char *value,
			       struct rn_error *err)
{
	return settings_add(&att->nccl, &att->n_nccl, key, value, err);
}

bool rn_cni_attachment_older_boot(const struct rn_cni_attachment *att, const char *this_boot)
{
	return att->boot_id[0] && this_boot && *this_boot && strcmp(att->boot_id, this_boot) != 0;
}

/* ---- directory ---- */

static int check_dir(const char *dir, struct rn_error *err)
{
	struct stat st;

	if (lstat(dir, &st) < 0)
		return rn_error_errno(err, errno, "cannot inspect state directory %s", dir);
	if (!S_ISDIR(st.st_mode))
		return rn_error_set(err, ENOTDIR,
				    "state directory %s is not a directory (a symlink or file "
				    "there is refused; remove it)",
				    dir);
	if (geteuid() == 0 && st.st_uid != 0)
		return rn_error_set(err, EPERM,
				    "state directory %s is not owned by root; fix with 'chown "
				    "root: %s'",
				    dir, dir);
	if (st.st_mode & (S_IWGRP | S_IWOTH))
		return rn_error_set(err, EPERM,
				    "state directory %s is writable by others; fix with 'chmod "
				    "700 %s'",
				    dir, dir);
	return 0;
}

/* DIR/locks as a directory fd; a symlink there (or a symlinked DIR) is refused. */
static int open_locks_dir(const char *dir, struct rn_error *err)
{
	_cleanup_close_ int dfd = open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int fd;

	if (dfd < 0)
		return rn_error_errno(err, errno,
				      "cannot open state directory %s (a symlink there is refused)",
				      dir);
	fd = rn_open_beneath(dfd, "locks", O_PATH | O_DIRECTORY, 0);
	if (fd == -ELOOP || fd == -ENOTDIR)
		return rn_error_set(err, ELOOP,
				    "%s/locks is not a directory (a symlink there is refused: "
				    "remove it, rdma-netns makes the directory)",
				    dir);
	if (fd < 0)
		return rn_error_errno(err, -fd, "cannot open %s/locks", dir);
	return fd;
}

int rn_cni_state_dir_init(const char *dir, struct rn_error *err)
{
	char locks[PATH_MAX];
	int r;

	if (!dir[0] || strlen(dir) >= PATH_MAX)
		return rn_error_set(err, EINVAL, "invalid state directory '%s'", dir);
	r = rn_mkdir_p(dir, 0755, 0700, err);
	if (r < 0)
		return r;
	r = check_dir(dir, err);
	if (r < 0)
		return r;
	if (rn_path(locks, sizeof(locks), "%s/locks", dir) < 0)
		return rn_error_set(err, ENAMETOOLONG, "state directory %s: path too long", dir);
	if (mkdir(locks, 0700) < 0 && errno != EEXIST)
		return rn_error_errno(err, errno, "cannot create %s", locks);
	r = open_locks_dir(dir, err);
	if (r < 0)
		return r;
	close(r);
	return 0;
}

/* ---- names ---- */

static uint64_t fnv1a(const char *a, const char *b, const char *c)
{
	const char *parts[] = { a, ":", b, ":", c };
	uint64_t h = 14695981039346656037ULL;

	for (size_t i = 0; i < RN_ARRAY_SIZE(parts); i++)
		for (const char *p = parts[i]; *p; p++) {
			h ^= (unsigned char)*p;
			h *= 1099511628211ULL;
		}
	return h;
}

int rn_cni_state_name(const char *network, const char *container_id, const char *ifname, char *buf,
		      size_t len, struct rn_error *err)
{
	int r;

	r = rn_cni_name_check("network name", network, RN_CNI_NAME_MAX, err);
	if (r < 0)
		return r;
	r = rn_cni_name_check("container ID", container_id, RN_CNI_NAME_MAX, err);
	if (r < 0)
		return r;
	r = rn_name_check("interface", ifname, 15, err);
	if (r < 0)
		return r;
	if (strchr(ifname, ':'))
		return rn_error_set(err, EINVAL, "interface name '%s' must not contain ':'",
				    ifname);
	if (strlen(network) + strlen(container_id) + strlen(ifname) + 2 <= 200) {
		if (rn_path(buf, len, "%s:%s:%s", network, container_id, ifname) < 0)
			return rn_error_set(err, ENAMETOOLONG, "state name buffer too small");
		return 0;
	}
	if (rn_path(buf, len, "%.80s:%.64s:~%016llx", network, container_id,
		    (unsigned long long)fnv1a(network, container_id, ifname)) < 0)
		return rn_error_set(err, ENAMETOOLONG, "state name buffer too small");
	return 0;
}

/* ---- files ---- */

static int state_path(const char *dir, const char *name, char *buf, size_t len,
		      struct rn_error *err)
{
	if (!name || !*name || strchr(name, '/') || name[0] == '.')
		return rn_error_set(err, EINVAL, "invalid state file name '%s'", name ? name : "");
	if (rn_path(buf, len, "%s/%s", dir, name) < 0)
		return rn_error_set(err, ENAMETOOLONG, "state file path too long: %s/%s", dir,
				    name);
	return 0;
}

static void unescape(char *s)
{
	char *w = s;

	for (char *p = s; *p; p++) {
		if (*p == '\\' && p[1]) {
			p++;
			*w++ = *p == 'n' ? '\n' : *p;
		} else {
			*w++ = *p;
		}
	}
	*w = '\0';
}

/* The file's lines as keys and values; -ENOENT (with a message) when there is none. */
static int read_text(const char *path, struct kv_list *out, struct rn_error *err)
{
	_cleanup_fclose_ FILE *f = NULL;
	_cleanup_free_ char *line = NULL;
	size_t cap = 0, total = 0;
	ssize_t n;
	int r;

	{
		/* a FIFO or a device in the state dir must not hang DEL */
		int fd = rn_open_regular(AT_FDCWD, path, O_RDONLY | O_NOFOLLOW, 0, "state file",
					 err);

		if (fd == -ENOENT)
			return rn_error_set(err, ENOENT, "no state file %s", path);
		if (fd < 0)
			return fd;
		f = fdopen(fd, "re");
		if (!f) {
			r = -errno;
			close(fd);
			return rn_error_errno(err, -r, "cannot open state file %s", path);
		}
	}
	while ((n = getline(&line, &cap, f)) > 0) {
		char *eq;

		total += (size_t)n;
		if (total > STATE_FILE_MAX)
			return rn_error_set(err, EFBIG, "state file %s is too large", path);
		if (line[n - 1] == '\n')
			line[--n] = '\0';
		if (n == 0 || line[0] == '#')
			continue;
		eq = strchr(line, '=');
		if (!eq)
			continue; /* not ours to judge: skip */
		*eq = '\0';
		unescape(eq + 1);
		if (!key_valid(line))
			continue;
		r = kv_set(out, line, eq + 1, err);
		if (r < 0)
			return r;
	}
	if (ferror(f))
		return rn_error_errno(err, EIO, "cannot read state file %s", path);
	return 0;
}

/* The text read into a struct: the first damaged value is the one err tells. */
struct reading {
	struct kv_list *text;
	const char *path;
	struct rn_error *err;
	int r; /* -EBADMSG once a value was found damaged */
};

static void damaged(struct reading *rd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void damaged(struct reading *rd, const char *fmt, ...)
{
	char what[512];
	va_list ap;

	if (rd->r < 0)
		return;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	rd->r = rn_error_set(rd->err, EBADMSG, "state file %s is damaged: %s", rd->path, what);
}

/* key's value into buf ("" when absent); one too long for buf is damage. */
static const char *text_field(struct reading *rd, const char *key, char *buf, size_t size)
{
	const char *v = take(rd->text, "%s", key);

	if (rn_strscpy(buf, size, v) < 0)
		damaged(rd, "'%s' is longer than %zu bytes", key, size - 1);
	return v;
}

#define TEXT_FIELD(rd, key, field) text_field((rd), (key), (field), sizeof(field))

/*
 * A count of the device section, as DEL would use it: damage when it is not
 * a number up to RN_ATTACH_MAX; the owner search reads what leads it, up to
 * RN_ATTACH_MAX, all the same (a damaged file may still claim its devices).
 */
static size_t device_count(struct reading *rd, const char *key)
{
	const char *v = take(rd->text, "%s", key);
	unsigned long n = 0;
	char *end = NULL;

	if (!v)
		return 0;
	if (isdigit((unsigned char)*v)) {
		errno = 0;
		n = strtoul(v, &end, 10);
	}
	if (!end || errno || *end || n > RN_ATTACH_MAX)
		damaged(rd, "state: bad value for '%s'", key);
	return n > RN_ATTACH_MAX ? RN_ATTACH_MAX : n;
}

static enum rn_cni_phase phase_of(const char *text)
{
	if (!text)
		return RN_CNI_PHASE_UNKNOWN;
	for (size_t i = 0; i < RN_ARRAY_SIZE(phase_names); i++)
		if (phase_names[i] && strcmp(text, phase_names[i]) == 0)
			return (enum rn_cni_phase)i;
	return RN_CNI_PHASE_UNKNOWN;
}

/* The fields of one struct at base; keys are PREFIX + the field's. */
static void read_fields(struct reading *rd, const char *prefix, const struct field *fields,
			size_t n, void *base)
{
	for (size_t i = 0; i < n; i++) {
		const struct field *f = &fields[i];
		char *at = (char *)base + f->offset;
		char key[64];
		const char *v;

		snprintf(key, sizeof(key), "%s%s", prefix, f->key);
		switch (f->kind) {
		case FIELD_TEXT:
		case FIELD_TEXT_ALWAYS:
			text_field(rd, key, at, f->size);
			break;
		case FIELD_PHASE:
			*(enum rn_cni_phase *)at = phase_of(take(rd->text, "%s", key));
			break;
		case FIELD_SECONDS:
			v = take(rd->text, "%s", key);
			*(long long *)at = v ? strtoll(v, NULL, 10) : 0;
			break;
		case FIELD_INT:
			v = take(rd->text, "%s", key);
			*(int *)at = v ? atoi(v) : 0;
			break;
		case FIELD_FLAG:
			v = take(rd->text, "%s", key);
			*(bool *)at = v && strcmp(v, "1") == 0;
			break;
		}
	}
}

static void read_netdev(struct reading *rd, size_t i, struct rn_attach_netdev *nd)
{
	char prefix[32];
	const char *v;

	snprintf(prefix, sizeof(prefix), KEY_NETDEV, i);
	read_fields(rd, prefix, netdev_fields, RN_ARRAY_SIZE(netdev_fields), nd);
	v = take(rd->text, "%s" KEY_IB_GID, prefix);
	if (v) {
		if (rn_gid_parse(v, nd->ib_gid, NULL) < 0)
			damaged(rd, "state: netdev %zu has a bad ib_gid", i);
		nd->ipoib = true;
	}
	if (rn_name_check("netdev", nd->name, IF_NAMESIZE - 1, NULL) < 0 ||
	    rn_name_check("netdev", nd->pod_name, IF_NAMESIZE - 1, NULL) < 0)
		damaged(rd, "state: netdev %zu has no valid name", i);
}

/* The device section: attach's plan. */
static void read_plan(struct reading *rd, struct rn_attach_plan *plan)
{
	const char *v = take(rd->text, KEY_MODE);

	plan->chained = v && strcmp(v, "chained") == 0;
	TEXT_FIELD(rd, KEY_BUS_ID, plan->bus_id);
	v = take(rd->text, KEY_RDMA_KERNEL);
	plan->rdma_kernel = !v || strcmp(v, "0") != 0;
	plan->exclusive = true;
	plan->n_netdevs = device_count(rd, KEY_NETDEVS);
	plan->n_rdma = device_count(rd, KEY_RDMA);
	for (size_t i = 0; i < plan->n_netdevs; i++)
		read_netdev(rd, i, &plan->netdevs[i]);
	for (size_t i = 0; i < plan->n_rdma; i++) {
		char key[32];

		snprintf(key, sizeof(key), KEY_RDMA_NAME, i);
		TEXT_FIELD(rd, key, plan->rdma[i]);
		if (rn_name_check("RDMA device", plan->rdma[i], RN_RDMA_NAME_MAX - 1, NULL) < 0)
			damaged(rd, "state: RDMA device %zu has no valid name", i);
	}
}

static int read_attachment(struct reading *rd, struct rn_cni_attachment *att)
{
	const char *v = take(rd->text, KEY_FORMAT);
	char format[16];
	int r;

	snprintf(format, sizeof(format), "%d", RN_CNI_STATE_FORMAT);
	if (v && strcmp(v, format) != 0)
		return rn_error_set(
			rd->err, EPROTONOSUPPORT,
			"state file %s has format %.32s, and this rdma-netns reads "
			"format %d only: a newer rdma-netns wrote it (run DEL with that "
			"one)",
			rd->path, v, RN_CNI_STATE_FORMAT);
	read_fields(rd, "", attachment_fields, RN_ARRAY_SIZE(attachment_fields), att);
	read_plan(rd, &att->plan);
	TEXT_FIELD(rd, KEY_SOFT_ROCE, att->soft_roce);
	for (; att->n_ips < RN_CNI_IPS_MAX; att->n_ips++) {
		char key[32];

		snprintf(key, sizeof(key), KEY_IP, att->n_ips);
		if (!TEXT_FIELD(rd, key, att->ips[att->n_ips]))
			break;
	}
	for (size_t i = 0; i < rd->text->n; i++) {
		struct kv *kv = &rd->text->v[i];

		if (kv->taken)
			continue;
		if (strncmp(kv->key, NCCL_PREFIX, strlen(NCCL_PREFIX)) == 0)
			r = rn_cni_attachment_add_nccl(att, kv->key + strlen(NCCL_PREFIX),
						       kv->value, rd->err);
		else
			r = settings_add(&att->unknown, &att->n_unknown, kv->key, kv->value,
					 rd->err);
		if (r < 0)
			return r;
	}
	return rd->r;
}

int rn_cni_attachment_read(const char *dir, const char *name, struct rn_cni_attachment *ret,
			   struct rn_error *err)
{
	_cleanup_(kv_list_free) struct kv_list text = { 0 };
	struct reading rd = { .text = &text, .err = err };
	char path[PATH_MAX];
	int r;

	memset(ret, 0, sizeof(*ret));
	r = state_path(dir, name, path, sizeof(path), err);
	if (r < 0)
		return r;
	r = read_text(path, &text, err);
	if (r < 0)
		return r;
	rd.path = path;
	return read_attachment(&rd, ret);
}

static void put(FILE *f, const char *key, const char *value)
{
	fprintf(f, "%s=", key);
	for (const char *p = value; *p; p++) {
		if (*p == '\\')
			fputs("\\\\", f);
		else if (*p == '\n')
			fputs("\\n", f);
		else
			fputc(*p, f);
	}
	fputc('\n', f);
}

static void putf(FILE *f, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void putf(FILE *f, const char *key, const char *fmt, ...)
{
	char value[64];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(value, sizeof(value), fmt, ap);
	va_end(ap);
	put(f, key, value);
}

/* A text field: written when it holds something. */
static void put_set(FILE *f, const char *key, const char *value)
{
	if (value[0])
		put(f, key, value);
}

/* The fields of one struct at base; keys are PREFIX + the field's. */
static void write_fields(FILE *f, const char *prefix, const struct field *fields, size_t n,
			 const void *base)
{
	for (size_t i = 0; i < n; i++) {
		const struct field *fl = &fields[i];
		const char *at = (const char *)base + fl->offset;
		const char *phase;
		char key[64];

		snprintf(key, sizeof(key), "%s%s", prefix, fl->key);
		switch (fl->kind) {
		case FIELD_TEXT:
			if (at[0])
				put(f, key, at);
			break;
		case FIELD_TEXT_ALWAYS:
			put(f, key, at);
			break;
		case FIELD_PHASE:
			phase = RN_NAME_OF(phase_names, *(const enum rn_cni_phase *)at, NULL);
			if (phase)
				put(f, key, phase);
			break;
		case FIELD_SECONDS:
			if (*(const long long *)at)
				putf(f, key, "%lld", *(const long long *)at);
			break;
		case FIELD_INT:
			putf(f, key, "%d", *(const int *)at);
			break;
		case FIELD_FLAG:
			putf(f, key, "%d", *(const bool *)at);
			break;
		}
	}
}

/* The device section (read_plan's keys), in the order ADD has always written them. */
static void write_plan(FILE *f, const struct rn_attach_plan *plan)
{
	char key[64];

	put(f, KEY_MODE, plan->chained ? "chained" : "main");
	put_set(f, KEY_BUS_ID, plan->bus_id);
	putf(f, KEY_RDMA_KERNEL, "%d", plan->rdma_kernel);
	putf(f, KEY_NETDEVS, "%zu", plan->n_netdevs);
	for (size_t i = 0; i < plan->n_netdevs && i < RN_ATTACH_MAX; i++) {
		const struct rn_attach_netdev *nd = &plan->netdevs[i];

		snprintf(key, sizeof(key), KEY_NETDEV, i);
		write_fields(f, key, netdev_fields, RN_ARRAY_SIZE(netdev_fields), nd);
		if (nd->ipoib) {
			char gid[INET6_ADDRSTRLEN];

			snprintf(key, sizeof(key), KEY_NETDEV KEY_IB_GID, i);
			put(f, key, inet_ntop(AF_INET6, nd->ib_gid, gid, sizeof(gid)));
		}
	}
	putf(f, KEY_RDMA, "%zu", plan->n_rdma);
	for (size_t i = 0; i < plan->n_rdma && i < RN_ATTACH_MAX; i++) {
		snprintf(key, sizeof(key), KEY_RDMA_NAME, i);
		put(f, key, plan->rdma[i]);
	}
}

/* Keys that come from outside the struct (nccl.*, a newer writer's) must read back as keys. */
static int check_keys(const struct rn_cni_attachment *att, struct rn_error *err)
{
	for (size_t i = 0; i < att->n_nccl; i++) {
		const char *k = att->nccl[i].key;

		/* "nccl." itself is a key: the part after it may be empty */
		if (*k && !key_valid(k))
			return rn_error_set(err, EINVAL, "invalid state key '" NCCL_PREFIX "%s'",
					    k);
	}
	for (size_t i = 0; i < att->n_unknown; i++)
		if (!key_valid(att->unknown[i].key))
			return rn_error_set(err, EINVAL, "invalid state key '%s'",
					    att->unknown[i].key);
	return 0;
}

/*
 * The text of att: keys in the order ADD sets them (an attachment's life
 * writes the same file over: the device section after the "nccl" block,
 * soft_roce and the addresses after the devices), the unknown ones last.
 */
static void write_attachment(FILE *f, const struct rn_cni_attachment *att)
{
	char key[32];

	fputs("# rdma-netns attachment state (format: include/rdmans/cni_state.h)\n", f);
	putf(f, KEY_FORMAT, "%d", RN_CNI_STATE_FORMAT);
	write_fields(f, "", attachment_fields, RN_ARRAY_SIZE(attachment_fields), att);
	for (size_t i = 0; i < att->n_nccl; i++) {
		fputs(NCCL_PREFIX, f);
		put(f, att->nccl[i].key, att->nccl[i].value);
	}
	write_plan(f, &att->plan);
	put_set(f, KEY_SOFT_ROCE, att->soft_roce);
	for (size_t i = 0; i < att->n_ips && i < RN_CNI_IPS_MAX; i++) {
		snprintf(key, sizeof(key), KEY_IP, i);
		put(f, key, att->ips[i]);
	}
	for (size_t i = 0; i < att->n_unknown; i++)
		put(f, att->unknown[i].key, att->unknown[i].value);
}

static int fsync_dir(const char *dir)
{
	_cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0 || fsync(fd) < 0)
		return -errno;
	return 0;
}

int rn_cni_attachment_write(const char *dir, const char *name, const struct rn_cni_attachment *att,
			    bool durable, struct rn_error *err)
{
	_cleanup_free_ char *text = NULL;
	char path[PATH_MAX];
	size_t len = 0;
	FILE *f;
	int r;

	r = state_path(dir, name, path, sizeof(path), err);
	if (r < 0)
		return r;
	r = check_keys(att, err);
	if (r < 0)
		return r;
	f = open_memstream(&text, &len);
	if (!f)
		return rn_error_set(err, ENOMEM, "out of memory");
	write_attachment(f, att);
	r = ferror(f) ? -1 : 0;
	if (fclose(f) != 0 || r < 0)
		return rn_error_set(err, ENOMEM, "out of memory");
	return rn_write_atomic(path, text, len, 0600, durable, "state file", err);
}

/* ".NAME.PID.tmp" of a writer killed before its rename: its PID is gone. */
static void remove_dead_tmps(const char *dir, const char *name)
{
	_cleanup_closedir_ DIR *d = opendir(dir);
	size_t n = strlen(name);
	struct dirent *de;

	while (d && (de = readdir(d))) {
		const char *p = de->d_name;
		char *end;
		long pid;

		if (p[0] != '.' || strncmp(p + 1, name, n) != 0 || p[n + 1] != '.')
			continue;
		errno = 0;
		pid = strtol(p + n + 2, &end, 10);
		if (errno || pid <= 0 || strcmp(end, ".tmp") != 0)
			continue;
		if (kill((pid_t)pid, 0) < 0 && errno == ESRCH)
			(void)unlinkat(dirfd(d), p, 0);
	}
}

static int state_remove(const char *dir, const char *name, bool durable, struct rn_error *err)
{
	char path[PATH_MAX];
	int r;

	r = state_path(dir, name, path, sizeof(path), err);
	if (r < 0)
		return r;
	if ((rn_fault_io("state file unlink") || unlink(path) < 0) && errno != ENOENT)
		return rn_error_errno(err, errno, "cannot remove state file %s", path);
	remove_dead_tmps(dir, name);
	if (durable)
		(void)fsync_dir(dir);
	return 0;
}

int rn_cni_state_remove(const char *dir, const char *name, struct rn_error *err)
{
	return state_remove(dir, name, true, err);
}

int rn_cni_state_remove_nosync(const char *dir, const char *name, struct rn_error *err)
{
	return state_remove(dir, name, false, err);
}

void rn_cni_state_names_free(char **names, size_t n)
{
	for (size_t i = 0; names && i < n; i++)
		free(names[i]);
	free(names);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int rn_cni_state_list(const char *dir, char ***ret_names, size_t *ret_n, struct rn_error *err)
{
	_cleanup_closedir_ DIR *d = NULL;
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;

	*ret_names = NULL;
	*ret_n = 0;
	d = opendir(dir);
	if (!d) {
		if (errno == ENOENT)
			return 0;
		return rn_error_errno(err, errno, "cannot list state directory %s", dir);
	}
	while ((de = readdir(d))) {
		char *copy;

		if (de->d_name[0] == '.' || strcmp(de->d_name, "locks") == 0)
			continue;
		if (de->d_type != DT_REG && de->d_type != DT_UNKNOWN)
			continue;
		if (RN_GROW(names, &cap, n + 1) < 0)
			goto oom;
		copy = strdup(de->d_name);
		if (!copy)
			goto oom;
		names[n++] = copy;
	}
	if (n > 1)
		qsort(names, n, sizeof(*names), cmp_str);
	*ret_names = names;
	*ret_n = n;
	return 0;
oom:
	rn_cni_state_names_free(names, n);
	return rn_error_set(err, ENOMEM, "out of memory listing %s", dir);
}

/* ---- locks ---- */

/* "KEY" as a lock file name: characters outside [A-Za-z0-9_.:-] become '_'. */
static int lock_name(const char *key, char *buf, size_t len, struct rn_error *err)
{
	size_t i;

	for (i = 0; key[i] && i < len - 6; i++) {
		char c = key[i];

		buf[i] = isalnum((unsigned char)c) || c == '_' || c == '.' || c == ':' || c == '-'
				 ? c
				 : '_';
	}
	buf[i] = '\0';
	if (i == 0 || buf[0] == '.')
		return rn_error_set(err, EINVAL, "invalid lock name '%s'", key);
	strcat(buf, ".lock");
	return 0;
}

/* Whether fd is still the file named `name` in locks (a releaser may have removed it). */
static bool still_named(int locks, const char *name, int fd)
{
	struct stat a, b;

	return fstat(fd, &a) == 0 && fstatat(locks, name, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
	       a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

int rn_cni_lock(const char *dir, const char *key, const char *what, int timeout_ms, int *ret_fd,
		struct rn_error *err)
{
	char name[128];
	_cleanup_close_ int locks = -1;
	struct timespec start, now;
	int r;

	*ret_fd = -1;
	r = lock_name(key, name, sizeof(name), err);
	if (r < 0)
		return r;
	locks = open_locks_dir(dir, err);
	if (locks < 0)
		return locks;
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		_cleanup_close_ int fd =
			rn_open_beneath(locks, name, O_RDWR | O_CREAT | O_NONBLOCK, 0600);
		long elapsed;

		if (fd < 0)
			return rn_error_errno(
				err, -fd, "cannot open lock %s/locks/%s%s", dir, name,
				fd == -ELOOP ? " (a symlink there is refused: remove it)" : "");
		for (;;) {
			if (flock(fd, LOCK_EX | LOCK_NB) == 0)
				break;
			if (errno != EWOULDBLOCK && errno != EINTR)
				return rn_error_errno(err, errno, "cannot lock %s/locks/%s", dir,
						      name);
			clock_gettime(CLOCK_MONOTONIC, &now);
			elapsed = (now.tv_sec - start.tv_sec) * 1000 +
				  (now.tv_nsec - start.tv_nsec) / 1000000;
			if (elapsed >= timeout_ms)
				return rn_error_set(
					err, EAGAIN,
					"%s is busy: another ADD or DEL has held it for "
					"%d ms; try again later",
					what, timeout_ms);
			usleep(5000);
		}
		/* the holder we waited for removed the file (rn_cni_unlock_remove): again */
		if (still_named(locks, name, fd)) {
			*ret_fd = TAKE_FD(fd);
			return 0;
		}
	}
}

void rn_cni_unlock_remove(const char *dir, const char *key, int fd)
{
	char name[128];
	_cleanup_close_ int locks = -1;

	if (fd < 0)
		return;
	if (lock_name(key, name, sizeof(name), NULL) == 0 &&
	    (locks = open_locks_dir(dir, NULL)) >= 0 && still_named(locks, name, fd))
		(void)unlinkat(locks, name, 0);
	close(fd);
}

int rn_cni_attachment_lock(const char *dir, const char *state_name, int timeout_ms, int *ret_fd,
			   struct rn_error *err)
{
	char key[300], what[300];

	snprintf(key, sizeof(key), "att:%s", state_name);
	snprintf(what, sizeof(what), "attachment %.250s", state_name);
	return rn_cni_lock(dir, key, what, timeout_ms, ret_fd, err);
}

void rn_cni_attachment_unlock(const char *dir, const char *state_name, int fd)
{
	char key[300];

	snprintf(key, sizeof(key), "att:%s", state_name);
	rn_cni_unlock_remove(dir, key, fd);
}
