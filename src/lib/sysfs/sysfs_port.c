// SPDX-License-Identifier: Apache-2.0
/*
 * The sysfs reader, the per-port facts (one reader of ports/P and of the bound netdev's class/net,
 * sysfs's bound-netdev rule), the one-pass read of every port, class/net, the counter sets (see sysfs.h).
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
#include "rdmans/sysfs_gid.h"
#include "rdmans/util.h"
#include "sysfs_private.h"
#include "rdmans/sysfs_port.h"

/* A small non-negative int attribute (ifindex, mtu) of ROOT/class/net/IF; -1 when unreadable. */
static int netdev_int(const char *ifname, const char *name)
{
	char path[PATH_MAX], text[64];
	uint32_t v;

	if (rn_sysfs_path(path, sizeof(path), NULL, "class/net/%s/%s", ifname, name) < 0 ||
	    rn_read_line(path, text, sizeof(text)) < 0 || rn_sysfs_parse_u32(text, &v) < 0 ||
	    v > INT_MAX)
		return -1;
	return (int)v;
}

/* IFF_UP of ROOT/class/net/IF/flags ("0x1003"): 1, 0, -1 when unreadable. */
static int netdev_admin_up(const char *ifname)
{
	char path[PATH_MAX], text[64];
	unsigned long long v;
	char *end;

	if (rn_sysfs_path(path, sizeof(path), NULL, "class/net/%s/flags", ifname) < 0 ||
	    rn_read_line(path, text, sizeof(text)) < 0 || !isxdigit((unsigned char)text[0]))
		return -1;
	errno = 0;
	v = strtoull(text, &end, 16);
	if (errno || *end)
		return -1;
	return (v & IFF_UP) != 0;
}

void rn_sysfs_netdev_read(const char *ifname, struct rn_sysfs_netdev *out)
{
	char path[PATH_MAX], text[64];
	int r;

	memset(out, 0, sizeof(*out));
	out->mtu = out->admin_up = out->oper_up = -1;
	if (!ifname || !*ifname)
		return;
	(void)rn_strscpy(out->name, sizeof(out->name), ifname);
	out->here = rn_sysfs_path(path, sizeof(path), NULL, "class/net/%s", ifname) == 0 &&
		    rn_sysfs_exists(path);
	r = netdev_int(ifname, "ifindex");
	out->ifindex = r > 0 ? r : 0;
	out->mtu = netdev_int(ifname, "mtu");
	out->admin_up = netdev_admin_up(ifname);
	if (rn_sysfs_path(path, sizeof(path), NULL, "class/net/%s/operstate", ifname) == 0 &&
	    rn_read_line(path, text, sizeof(text)) == 0) {
		out->oper_up = strcmp(text, "up") == 0;
		(void)rn_strscpy(out->operstate, sizeof(out->operstate), text);
	}
}

/* ROOT/class/infiniband/DEV/ports/PORT/NAME into buf; -errno when unreadable. */
static int port_attr(const char *dev, uint32_t port, const char *name, char *buf, size_t len)
{
	char path[PATH_MAX];
	int r;

	r = rn_sysfs_path(path, sizeof(path), NULL, "class/infiniband/%s/ports/%" PRIu32 "/%s", dev,
			  port, name);
	if (r < 0)
		return r;
	return rn_read_line(path, buf, len);
}

/* "4: ACTIVE" -> 4 ("N:" only, else 0) and the name after the colon (or the whole text). */
static uint8_t parse_port_state(const char *text, char *name, size_t len)
{
	const char *colon = strchr(text, ':');
	const char *rest = colon ? colon + 1 : text;
	unsigned long v;
	char *end;

	while (*rest == ' ')
		rest++;
	if (name)
		(void)rn_strscpy(name, len, rest);
	errno = 0;
	v = strtoul(text, &end, 10);
	if (errno || end == text || *end != ':' || v > 255)
		return 0;
	return (uint8_t)v;
}

/* Entries of a directory whose names start with a digit. */
static unsigned count_numeric(const char *path)
{
	_cleanup_closedir_ DIR *d = opendir(path);
	struct dirent *de;
	unsigned n = 0;

	while (d && (de = readdir(d)))
		n += de->d_name[0] >= '0' && de->d_name[0] <= '9';
	return n;
}

/* The lowest GID slot of dev/port that names a netdev, in a table read before. */
static bool gid_table_binding(const struct rn_gid_table *gids, const char *dev, uint32_t port,
			      char *buf, size_t len)
{
	for (size_t i = 0; i < gids->n; i++) {
		const struct rn_gid_entry *e = &gids->entries[i];

		if (e->port == port && strcmp(e->dev, dev) == 0 &&
		    rn_name_check("netdev", e->netdev, IF_NAMESIZE - 1, NULL) == 0)
			return rn_strscpy(buf, len, e->netdev) >= 0; /* sorted: lowest first */
	}
	return false;
}

/* The lowest GID slot of dev/port that names a netdev, read from gid_attrs/ndevs. */
static bool gid_dir_binding(const char *dev, uint32_t port, char *buf, size_t len)
{
	_cleanup_(rn_sysfs_strv_free) struct strv gid = { 0 };
	char path[PATH_MAX];

	return rn_sysfs_path(path, sizeof(path), NULL,
			     "class/infiniband/%s/ports/%" PRIu32 "/gid_attrs/ndevs", dev,
			     port) == 0 &&
	       rn_sysfs_gid_ndevs(path, 1, &gid) == 0 && gid.n == 1 &&
	       rn_strscpy(buf, len, gid.v[0]) >= 0;
}

/*
 * The one netdev of the parent of `dev` when `port` is the device's only port
 * and the parent has one netdev: IPoIB's ib0 (its GIDs name no netdev), a RoCE port
 * before its GIDs exist.
 */
static bool device_only_netdev(const char *dev, uint32_t port, char *buf, size_t len)
{
	_cleanup_free_ struct rdma_info *info = calloc(1, sizeof(*info));
	_cleanup_(rn_sysfs_strv_free) struct strv ports = { 0 };
	_cleanup_(rn_sysfs_strv_free) struct strv nets = { 0 };
	uint32_t only;

	return info && rn_sysfs_rdma_dir(dev, info->dir, sizeof(info->dir), NULL) == 0 &&
	       rn_sysfs_rdma_parent(info, NULL) == 0 && info->netdir[0] &&
	       rn_sysfs_list_sub(info->dir, "ports", true, &ports, NULL) == 0 && ports.n == 1 &&
	       rn_sysfs_parse_u32(ports.v[0], &only) == 0 && only == port &&
	       rn_sysfs_list_sub(info->netdir, "net", false, &nets, NULL) == 0 && nets.n == 1 &&
	       rn_strscpy(buf, len, nets.v[0]) >= 0;
}

/* rn_sysfs_port_read(), the GID binding from `gids` when given, else from gid_attrs/ndevs. */
static void port_read(const char *dev, uint32_t port, const struct rn_gid_table *gids,
		      struct rn_sysfs_port *out)
{
	char path[PATH_MAX], text[128], bound[IF_NAMESIZE] = "";

	memset(out, 0, sizeof(*out));
	(void)rn_strscpy(out->dev, sizeof(out->dev), dev);
	out->port = port;
	if (port_attr(dev, port, "state", text, sizeof(text)) == 0)
		out->state = parse_port_state(text, out->state_name, sizeof(out->state_name));
	if (port_attr(dev, port, "phys_state", text, sizeof(text)) == 0)
		out->phys_state = parse_port_state(text, NULL, 0);
	if (port_attr(dev, port, "link_layer", text, sizeof(text)) == 0)
		(void)rn_strscpy(out->link_layer, sizeof(out->link_layer), text);
	if (port_attr(dev, port, "rate", text, sizeof(text)) == 0)
		(void)rn_strscpy(out->rate, sizeof(out->rate), text);
	if (rn_sysfs_path(path, sizeof(path), NULL, "class/infiniband/%s/ports/%" PRIu32 "/gids",
			  dev, port) == 0)
		out->gid_tbl_len = count_numeric(path);

	/* sysfs's binding (sysfs_port.h); RDMA netlink's comes on top (port_netdev.h) */
	if (gids ? gid_table_binding(gids, dev, port, bound, sizeof(bound))
		 : gid_dir_binding(dev, port, bound, sizeof(bound))) {
		out->netdev_source = RN_PORT_NETDEV_GID;
	} else if (rn_sysfs_path(path, sizeof(path), NULL, "class/infiniband/%s", dev) == 0 &&
		   rn_sysfs_rxe_parent(path, bound, sizeof(bound))) {
		out->netdev_source = RN_PORT_NETDEV_PARENT;
	} else if (device_only_netdev(dev, port, bound, sizeof(bound))) {
		out->netdev_source = RN_PORT_NETDEV_DEVICE;
	}
	rn_sysfs_netdev_read(bound, &out->netdev);
}

void rn_sysfs_port_read(const char *dev, uint32_t port, struct rn_sysfs_port *out)
{
	port_read(dev, port, NULL, out);
}

int rn_sysfs_port_list(const char *dev, uint32_t **ret, size_t *ret_n, struct rn_error *err)
{
	_cleanup_(rn_sysfs_strv_free) struct strv names = { 0 };
	_cleanup_free_ uint32_t *v = NULL;
	char path[PATH_MAX];
	size_t n = 0;
	int r;

	*ret = NULL;
	*ret_n = 0;
	r = rn_sysfs_path(path, sizeof(path), err, "class/infiniband/%s", dev);
	if (r < 0)
		return r;
	r = rn_sysfs_list_sub(path, "ports", true, &names, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < names.n; i++) {
		uint32_t port;

		if (rn_sysfs_parse_u32(names.v[i], &port) < 0 || port == 0)
			continue;
		if (RN_GROW(v, NULL, n + 1) < 0)
			return rn_error_set(err, ENOMEM, "out of memory listing the ports of %s",
					    dev);
		v[n++] = port; /* list_dir sorts numeric names in natural order: ascending */
	}
	*ret = TAKE_PTR(v);
	*ret_n = n;
	return 0;
}

void rn_sysfs_rdma_facts_free(struct rn_sysfs_rdma_facts *f)
{
	if (!f)
		return;
	free(f->devs);
	free(f->ports);
	rn_gid_table_free(&f->gids);
	memset(f, 0, sizeof(*f));
}

/* Appends every port of devs[i] to f, bound through the GID table read before. */
static int facts_add_ports(struct rn_sysfs_rdma_facts *f, const char *dev, struct rn_error *err)
{
	_cleanup_free_ uint32_t *ports = NULL;
	size_t n = 0;
	int r;

	r = rn_sysfs_port_list(dev, &ports, &n, err);
	if (r == -ENOENT)
		return 0; /* moved away since the listing */
	if (r < 0)
		return r;
	if (RN_GROW(f->ports, NULL, f->n_ports + n) < 0)
		return rn_error_set(err, ENOMEM, "out of memory reading the ports of %s", dev);
	for (size_t i = 0; i < n; i++)
		port_read(dev, ports[i], &f->gids, &f->ports[f->n_ports++]);
	return 0;
}

int rn_sysfs_rdma_facts_read(struct rn_sysfs_rdma_facts *out, struct rn_error *err)
{
	_cleanup_(rn_sysfs_rdma_facts_free) struct rn_sysfs_rdma_facts f = { 0 };
	int r;

	memset(out, 0, sizeof(*out));
	r = rn_sysfs_rdma_list_with(false, &f.devs, &f.n_devs, err);
	if (r < 0)
		return r;
	r = rn_sysfs_gids(NULL, &f.gids, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < f.n_devs; i++) {
		r = facts_add_ports(&f, f.devs[i].name, err);
		if (r < 0)
			return r;
	}
	*out = f;
	memset(&f, 0, sizeof(f));
	return 0;
}

static int read_netdev_name(const char *dir, const char *name, void *out, struct rn_error *err)
{
	(void)dir;
	(void)err;
	return rn_strscpy(out, IF_NAMESIZE, name) >= 0 ? 0 : 1;
}

int rn_sysfs_netdev_list(char (**ret)[IF_NAMESIZE], size_t *ret_n, struct rn_error *err)
{
	void *v = NULL;
	int r = rn_sysfs_read_entries("class/net", sizeof(**ret), read_netdev_name, &v, ret_n, err);

	*ret = v;
	return r;
}

/* ---- counters ---- */

static int parse_u64(const char *s, uint64_t *ret)
{
	unsigned long long v;
	char *end;

	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end)
		return -EINVAL;
	*ret = v;
	return 0;
}

int rn_sysfs_counters_read(const char *dev, uint32_t port, const char *set, rn_sysfs_counter_fn fn,
			   void *ctx, struct rn_error *err)
{
	_cleanup_closedir_ DIR *d = NULL;
	char dir[PATH_MAX];
	struct dirent *de;
	int dfd, r;

	r = port ? rn_sysfs_path(dir, sizeof(dir), err, "class/infiniband/%s/ports/%" PRIu32 "/%s",
				 dev, port, set)
		 : rn_sysfs_path(dir, sizeof(dir), err, "class/infiniband/%s/%s", dev, set);
	if (r < 0)
		return r;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		if (errno == ENOENT || errno == ENOTDIR)
			return 0;
		return rn_error_errno(err, errno, "cannot open %s", dir);
	}
	d = fdopendir(dfd);
	if (!d) {
		int e = errno;

		close(dfd);
		return rn_error_errno(err, e, "cannot list %s", dir);
	}
	while ((de = readdir(d))) {
		_cleanup_close_ int fd = -1;
		char text[64];
		uint64_t v;
		ssize_t n;

		if (de->d_name[0] == '.' || strcmp(de->d_name, "lifespan") == 0)
			continue;
		fd = openat(dirfd(d), de->d_name, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		if (fd < 0)
			continue;
		n = read(fd, text, sizeof(text) - 1);
		if (n <= 0)
			continue; /* PMA counters fail to read without a MAD interface */
		text[n] = '\0';
		while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == ' '))
			text[--n] = '\0';
		if (parse_u64(text, &v) < 0)
			continue;
		r = fn(de->d_name, v, ctx);
		if (r < 0)
			return rn_error_set(err, -r, "out of memory reading %s", dir);
	}
	return 0;
}

int rn_sysfs_netdevs_agree(const char *root, struct rn_error *err)
{
	_cleanup_closedir_ DIR *d = NULL;
	struct if_nameindex *ifs;
	struct dirent *de;
	char dir[PATH_MAX], path[PATH_MAX], text[32];
	size_t in_sysfs = 0, here = 0;
	bool agree = true;

	if (rn_path(dir, sizeof(dir), "%s/class/net", root) < 0)
		return rn_error_set(err, ENAMETOOLONG, "sysfs root %s is too long", root);
	d = opendir(dir);
	if (!d)
		return rn_error_errno(err, errno, "cannot list %s", dir);
	while (agree && (de = readdir(d))) {
		char *end;
		unsigned long idx;

		if (de->d_name[0] == '.')
			continue;
		in_sysfs++;
		if (rn_path(path, sizeof(path), "%s/%s/ifindex", dir, de->d_name) < 0 ||
		    rn_read_line(path, text, sizeof(text)) < 0) {
			agree = false;
			break;
		}
		errno = 0;
		idx = strtoul(text, &end, 10);
		/* if_nametoindex() asks this thread's netns */
		agree = !errno && end != text && !*end && idx == if_nametoindex(de->d_name);
	}
	ifs = if_nameindex();
	if (!ifs)
		return rn_error_errno(err, errno,
				      "cannot list the netdevs of this network namespace");
	for (struct if_nameindex *i = ifs; i->if_index; i++)
		here++;
	if_freenameindex(ifs);
	return agree && here == in_sysfs;
}
