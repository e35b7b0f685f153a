// SPDX-License-Identifier: Apache-2.0
/*
 * The sysfs reader, GID tables: every non-empty slot of every port, with its type and netdev (see sysfs.h).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rdmans/cleanup.h"
#include "rdmans/util.h"
#include "sysfs_private.h"
#include "rdmans/sysfs_gid.h"

void rn_gid_table_free(struct rn_gid_table *t)
{
	if (!t)
		return;
	free(t->entries);
	t->entries = NULL;
	t->n = 0;
}

static int gid_append(struct rn_gid_table *t, size_t *cap, struct rn_gid_entry **ret)
{
	if (RN_GROW(t->entries, cap, t->n + 1) < 0)
		return -ENOMEM;
	*ret = &t->entries[t->n++];
	memset(*ret, 0, sizeof(**ret));
	return 0;
}

static int cmp_gid_entry(const void *a, const void *b)
{
	const struct rn_gid_entry *x = a, *y = b;
	int c = strverscmp(x->dev, y->dev);

	if (c)
		return c;
	if (x->port != y->port)
		return x->port < y->port ? -1 : 1;
	if (x->index != y->index)
		return x->index < y->index ? -1 : 1;
	return 0;
}

static void gid_format(const uint8_t raw[16], char buf[40])
{
	int n = 0;

	for (int i = 0; i < 16; i += 2)
		n += snprintf(buf + n, (size_t)(40 - n), "%s%02x%02x", i ? ":" : "", raw[i],
			      raw[i + 1]);
}

static int gids_of_port(const char *dev, const char *dir, const char *port, struct rn_gid_table *t,
			size_t *cap, struct rn_error *err)
{
	_cleanup_(rn_sysfs_strv_free) struct strv idx = { 0 };
	char path[PATH_MAX], link_layer[32], text[128], type[32];
	uint32_t port_num;
	int r;

	if (rn_sysfs_parse_u32(port, &port_num) < 0)
		return 0;
	if (rn_path(path, sizeof(path), "%s/ports/%s/link_layer", dir, port) < 0 ||
	    rn_read_line(path, link_layer, sizeof(link_layer)) < 0)
		link_layer[0] = '\0';

	r = rn_path(path, sizeof(path), "%s/ports/%s/gids", dir, port);
	if (r < 0)
		return rn_error_set(err, -r, "path under %s is too long", dir);
	r = rn_sysfs_list_dir(path, true, &idx);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return rn_error_errno(err, -r, "cannot list %s", path);

	for (size_t i = 0; i < idx.n; i++) {
		struct rn_gid_entry *e;
		uint8_t raw[16];
		uint32_t index;

		if (rn_sysfs_parse_u32(idx.v[i], &index) < 0)
			continue;
		r = rn_path(path, sizeof(path), "%s/ports/%s/gids/%s", dir, port, idx.v[i]);
		if (r < 0)
			return rn_error_set(err, -r, "path under %s is too long", dir);
		if (rn_read_line(path, text, sizeof(text)) < 0)
			continue; /* unreadable slot: empty */
		r = rn_gid_parse(text, raw, err);
		if (r < 0)
			return rn_error_wrap(err, "%s", path);
		if (rn_gid_is_zero(raw))
			continue;

		r = gid_append(t, cap, &e);
		if (r < 0)
			return rn_error_set(err, ENOMEM, "out of memory reading GIDs of %s", dev);
		(void)rn_strscpy(e->dev, sizeof(e->dev), dev);
		e->port = port_num;
		e->index = index;
		memcpy(e->raw, raw, sizeof(raw));
		gid_format(raw, e->gid);
		(void)rn_gid_ipv4(raw, e->ipv4, sizeof(e->ipv4));

		if (rn_path(path, sizeof(path), "%s/ports/%s/gid_attrs/types/%s", dir, port,
			    idx.v[i]) < 0 ||
		    rn_read_line(path, type, sizeof(type)) < 0)
			type[0] = '\0';
		e->type = rn_gid_type_from_sysfs(type, link_layer);

		if (rn_path(path, sizeof(path), "%s/ports/%s/gid_attrs/ndevs/%s", dir, port,
			    idx.v[i]) < 0 ||
		    rn_read_line(path, text, sizeof(text)) < 0 ||
		    rn_strscpy(e->netdev, sizeof(e->netdev), text) < 0)
			e->netdev[0] = '\0';
	}
	return 0;
}

int rn_sysfs_gids(const char *dev, struct rn_gid_table *out, struct rn_error *err)
{
	_cleanup_(rn_gid_table_free) struct rn_gid_table t = { 0 };
	_cleanup_(rn_sysfs_strv_free) struct strv names = { 0 };
	char dir[PATH_MAX];
	size_t cap = 0;
	int r;

	out->n = 0;
	out->entries = NULL;
	if (dev) {
		r = rn_sysfs_check_root(err);
		if (r < 0)
			return r;
		r = rn_sysfs_rdma_dir(dev, dir, sizeof(dir), err);
		if (r < 0)
			return r;
		r = rn_sysfs_strv_add(&names, dev);
		if (r < 0)
			return rn_error_set(err, ENOMEM, "out of memory");
	} else {
		r = rn_sysfs_rdma_names(&names, err);
		if (r < 0)
			return r;
	}

	for (size_t i = 0; i < names.n; i++) {
		_cleanup_(rn_sysfs_strv_free) struct strv ports = { 0 };

		r = rn_sysfs_path(dir, sizeof(dir), err, "class/infiniband/%s", names.v[i]);
		if (r < 0)
			return r;
		r = rn_sysfs_list_sub(dir, "ports", true, &ports, err);
		if (r == -ENOENT)
			continue;
		if (r < 0)
			return r;
		for (size_t p = 0; p < ports.n; p++) {
			r = gids_of_port(names.v[i], dir, ports.v[p], &t, &cap, err);
			if (r < 0)
				return r;
		}
	}
	if (t.n > 1)
		qsort(t.entries, t.n, sizeof(*t.entries), cmp_gid_entry);
	*out = t;
	t = (struct rn_gid_table){ 0 };
	return 0;
}
