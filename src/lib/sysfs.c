// SPDX-License-Identifier: Apache-2.0
/*
 * sysfs discovery of RDMA devices, their parent bus devices, their netdevs
 * and their GID tables. Every path is taken under rn_sysfs_root().
 *
 * Layout relied on (see the kernel's drivers/infiniband/core/sysfs.c):
 *   class/infiniband/DEV -> ../../devices/.../PARENT/infiniband/DEV
 *   DEV/device           -> the parent bus device (absent for rxe/siw)
 *   PARENT/subsystem     -> .../bus/pci or .../bus/auxiliary
 *   DEV/ports/P/{link_layer,gids/I,gid_attrs/types/I,gid_attrs/ndevs/I}
 *   class/net/IF/device  -> the netdev's parent bus device
 * Reading gid_attrs/types/I or ndevs/I of an empty GID slot fails (EINVAL)
 * on real kernels: such read errors mean "empty", never a failure.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rdmans/cleanup.h"
#include "rdmans/sysfs.h"
#include "rdmans/util.h"

static char root_override[PATH_MAX];
static bool root_overridden;
static __thread const char *thread_root;

const char *rn_sysfs_root(void)
{
	const char *env;

	if (thread_root)
		return thread_root;
	if (root_overridden)
		return root_override;
	env = secure_getenv("RDMANS_SYSFS_ROOT");
	if (env && *env)
		return env;
	return "/sys";
}

void rn_sysfs_set_root(const char *root)
{
	size_t len;

	if (!root) {
		root_overridden = false;
		root_override[0] = '\0';
		return;
	}
	len = strnlen(root, sizeof(root_override) - 1);
	memcpy(root_override, root, len);
	root_override[len] = '\0';
	root_overridden = true;
}

void rn_sysfs_set_thread_root(const char *root)
{
	thread_root = root;
}

/* ---- small helpers ---- */

/* A growable, deduplicated list of strings. */
struct strv {
	char **v;
	size_t n;
	size_t cap;
};

static void strv_free(struct strv *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	s->v = NULL;
	s->n = s->cap = 0;
}

static bool strv_contains(const struct strv *s, const char *str)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->v[i], str) == 0)
			return true;
	return false;
}

static int strv_add(struct strv *s, const char *str)
{
	_cleanup_free_ char *copy = NULL;

	if (strv_contains(s, str))
		return 0;
	if (RN_GROW(s->v, &s->cap, s->n + 1) < 0)
		return -ENOMEM;
	copy = strdup(str);
	if (!copy)
		return -ENOMEM;
	s->v[s->n++] = TAKE_PTR(copy);
	return 0;
}

/* Natural order, so that mlx5_2 sorts before mlx5_10 and 9 before 10. */
static int cmp_natural(const void *a, const void *b)
{
	return strverscmp(*(char *const *)a, *(char *const *)b);
}

/* Sorts the entries from index start on. */
static void strv_sort_from(struct strv *s, size_t start)
{
	if (s->n > start + 1)
		qsort(s->v + start, s->n - start, sizeof(*s->v), cmp_natural);
}

static void strv_sort(struct strv *s)
{
	strv_sort_from(s, 0);
}

static bool is_uint(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

static int parse_u32(const char *s, uint32_t *ret)
{
	unsigned long v;
	char *end;

	if (!is_uint(s))
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v > UINT32_MAX)
		return -EINVAL;
	*ret = (uint32_t)v;
	return 0;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* ROOT/<fmt...> into buf. */
static int sys_path(char *buf, size_t len, struct rn_error *err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int sys_path(char *buf, size_t len, struct rn_error *err, const char *fmt, ...)
{
	const char *root = rn_sysfs_root();
	va_list ap;
	int n, m;

	n = snprintf(buf, len, "%s/", root);
	if (n < 0 || (size_t)n >= len)
		return rn_error_set(err, ENAMETOOLONG, "sysfs root %s is too long", root);
	va_start(ap, fmt);
	m = vsnprintf(buf + n, len - (size_t)n, fmt, ap);
	va_end(ap);
	if (m < 0 || (size_t)m >= len - (size_t)n)
		return rn_error_set(err, ENAMETOOLONG, "path under %s is too long", root);
	return 0;
}

static int check_root(struct rn_error *err)
{
	const char *root = rn_sysfs_root();
	struct stat st;

	if (stat(root, &st) < 0)
		return rn_error_errno(err, errno,
				      "sysfs root %s is not accessible (check RDMANS_SYSFS_ROOT)",
				      root);
	if (!S_ISDIR(st.st_mode))
		return rn_error_set(err, ENOTDIR, "sysfs root %s is not a directory", root);
	return 0;
}

static bool path_exists(const char *path)
{
	return access(path, F_OK) == 0;
}

/*
 * Appends the entries of a directory (not "." and ".."; only decimal names
 * when numeric) to out, the appended ones in natural order. Returns -errno
 * of the open, so callers can tell "absent" (-ENOENT) from failures.
 */
static int list_dir(const char *path, bool numeric, struct strv *out)
{
	_cleanup_close_ int fd = -1;
	_cleanup_closedir_ DIR *d = NULL;
	size_t start = out->n;
	struct dirent *de;
	int r;

	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d)
		return -errno;
	TAKE_FD(fd); /* owned by d now */
	for (;;) {
		errno = 0;
		de = readdir(d);
		if (!de) {
			if (errno)
				return -errno;
			break;
		}
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (numeric && !is_uint(de->d_name))
			continue;
		r = strv_add(out, de->d_name);
		if (r < 0)
			return r;
	}
	strv_sort_from(out, start);
	return 0;
}

/*
 * list_dir() of DIR/SUB, with a message when that fails; -ENOENT (no
 * message) when it does not exist.
 */
static int list_sub(const char *dir, const char *sub, bool numeric, struct strv *out,
		    struct rn_error *err)
{
	char path[PATH_MAX];
	int r;

	r = rn_path(path, sizeof(path), "%s/%s", dir, sub);
	if (r < 0)
		return rn_error_set(err, -r, "path %s/%s is too long", dir, sub);
	r = list_dir(path, numeric, out);
	if (r < 0 && r != -ENOENT)
		return rn_error_errno(err, -r, "cannot list %s", path);
	return r;
}

/* Basename of DIR/subsystem's target ("pci", "auxiliary", "net", ...). */
static int subsystem_of(const char *dir, char *buf, size_t len)
{
	char path[PATH_MAX], target[PATH_MAX];
	ssize_t n;
	int r;

	r = rn_path(path, sizeof(path), "%s/subsystem", dir);
	if (r < 0)
		return r;
	n = readlink(path, target, sizeof(target) - 1);
	if (n < 0)
		return -errno;
	target[n] = '\0';
	return rn_strscpy(buf, len, base_name(target)) >= 0 ? 0 : -ENAMETOOLONG;
}

static bool subsystem_is(const char *dir, const char *bus)
{
	char sub[64];

	return subsystem_of(dir, sub, sizeof(sub)) == 0 && strcmp(sub, bus) == 0;
}

/* Cuts the last component off a resolved path ("/a/b/c" -> "/a/b"). */
static void dir_name(char *path)
{
	char *slash = strrchr(path, '/');

	if (slash && slash != path)
		*slash = '\0';
}

/* ---- RDMA devices ---- */

struct rdma_info {
	struct rn_sysfs_rdma_dev pub;
	char dir[PATH_MAX]; /* ROOT/class/infiniband/DEV */
	char netdir[PATH_MAX]; /* the PCI (or other parent) device whose net/ to read, or "" */
};

/* ROOT/class/infiniband/NAME, or -ENODEV naming the device. */
static int rdma_dir(const char *name, char *buf, size_t len, struct rn_error *err)
{
	int r;

	r = rn_name_check("RDMA device", name, RN_RDMA_NAME_MAX - 1, err);
	if (r < 0)
		return r;
	r = sys_path(buf, len, err, "class/infiniband/%s", name);
	if (r < 0)
		return r;
	if (access(buf, F_OK) < 0) {
		if (errno == ENOENT)
			return rn_error_set(
				err, ENODEV,
				"RDMA device %s not found in %s/class/infiniband "
				"(driver not loaded, or device in another network namespace?)",
				name, rn_sysfs_root());
		return rn_error_errno(err, errno, "cannot access %s", buf);
	}
	return 0;
}

/* Fills parent_bus, parent_id, pci_bdf and netdir from DEV/device. */
static int rdma_parent(struct rdma_info *info, struct rn_error *err)
{
	struct rn_sysfs_rdma_dev *d = &info->pub;
	_cleanup_free_ char *real = NULL;
	char path[PATH_MAX];
	char pci[PATH_MAX];
	int r;

	r = rn_path(path, sizeof(path), "%s/device", info->dir);
	if (r < 0)
		return rn_error_set(err, -r, "path %s/device is too long", info->dir);
	real = realpath(path, NULL);
	if (!real) {
		if (errno == ENOENT)
			return 0; /* a virtual device (rxe, siw) has no parent */
		return rn_error_errno(err, errno, "cannot resolve %s", path);
	}
	(void)rn_strscpy(d->parent_id, sizeof(d->parent_id), base_name(real));
	if (subsystem_of(real, d->parent_bus, sizeof(d->parent_bus)) < 0)
		d->parent_bus[0] = '\0';
	(void)rn_strscpy(info->netdir, sizeof(info->netdir), real);

	if (strcmp(d->parent_bus, "pci") == 0) {
		(void)rn_strscpy(d->pci_bdf, sizeof(d->pci_bdf), d->parent_id);
	} else if (strcmp(d->parent_bus, "auxiliary") == 0) {
		/* ice.roce.0 and mlx5_core.rdma.0 live in their PCI function's directory. */
		(void)rn_strscpy(pci, sizeof(pci), real);
		dir_name(pci);
		if (subsystem_is(pci, "pci")) {
			(void)rn_strscpy(d->pci_bdf, sizeof(d->pci_bdf), base_name(pci));
			(void)rn_strscpy(info->netdir, sizeof(info->netdir), pci);
		}
	}
	return 0;
}

/*
 * The netdevs that the readable slots of dir (a port's gid_attrs/ndevs) name,
 * lowest slot first, at most limit of them (0: all). Empty slots fail to
 * read (EINVAL): nothing bound there. An absent dir names none.
 */
static int gid_ndevs(const char *dir, size_t limit, struct strv *out)
{
	_cleanup_(strv_free) struct strv idx = { 0 };
	char file[PATH_MAX], value[64];
	size_t found = 0;
	int r;

	r = list_dir(dir, true, &idx);
	if (r < 0)
		return r == -ENOENT ? 0 : r;
	for (size_t i = 0; i < idx.n && (limit == 0 || found < limit); i++) {
		if (rn_path(file, sizeof(file), "%s/%s", dir, idx.v[i]) < 0 ||
		    rn_read_line(file, value, sizeof(value)) < 0 ||
		    rn_name_check("netdev", value, IF_NAMESIZE - 1, NULL) < 0)
			continue;
		r = strv_add(out, value);
		if (r < 0)
			return r;
		found++;
	}
	return 0;
}

/* The netdev rdma_rxe runs on, from DEVDIR/parent; false when there is none. */
static bool rxe_parent(const char *devdir, char *buf, size_t len)
{
	char path[PATH_MAX], value[64];

	return rn_path(path, sizeof(path), "%s/parent", devdir) == 0 &&
	       rn_read_line(path, value, sizeof(value)) == 0 &&
	       rn_name_check("netdev", value, IF_NAMESIZE - 1, NULL) == 0 &&
	       rn_strscpy(buf, len, value) >= 0;
}

/*
 * Every netdev tied to the device: the ndevs of its GID entries, rxe's
 * "parent" attribute, and the class net entries of its parent device (for an
 * auxiliary parent, of the PCI function it belongs to). Ones bound through
 * the GID table come first in *out; the caller sorts.
 */
static int rdma_collect_netdevs(const struct rdma_info *info, struct strv *out,
				struct rn_error *err)
{
	_cleanup_(strv_free) struct strv ports = { 0 };
	char path[PATH_MAX], parent[IF_NAMESIZE];
	int r;

	r = list_sub(info->dir, "ports", true, &ports, err);
	if (r < 0 && r != -ENOENT)
		return r;

	for (size_t p = 0; p < ports.n; p++) {
		r = rn_path(path, sizeof(path), "%s/ports/%s/gid_attrs/ndevs", info->dir,
			    ports.v[p]);
		if (r < 0)
			return rn_error_set(err, -r, "path under %s is too long", info->dir);
		r = gid_ndevs(path, 0, out);
		if (r < 0)
			return rn_error_errno(err, -r, "cannot read %s", path);
	}

	if (rxe_parent(info->dir, parent, sizeof(parent)) &&
	    sys_path(path, sizeof(path), NULL, "class/net/%s", parent) == 0 && path_exists(path)) {
		r = strv_add(out, parent);
		if (r < 0)
			return rn_error_errno(err, -r, "reading %s/parent", info->dir);
	}

	if (info->netdir[0]) {
		r = list_sub(info->netdir, "net", false, out, err);
		if (r < 0 && r != -ENOENT)
			return r;
	}
	return 0;
}

static int rdma_fill_netdevs(struct rdma_info *info, struct rn_error *err)
{
	struct rn_sysfs_rdma_dev *d = &info->pub;
	_cleanup_(strv_free) struct strv all = { 0 };
	struct strv keep = { 0 };
	int r;

	r = rdma_collect_netdevs(info, &all, err);
	if (r < 0)
		return r;
	/*
	 * The GID-bound ones come first, then the parent's in natural order:
	 * when there are more than fit, the bound ones are kept.
	 */
	keep.v = all.v;
	keep.n = all.n < RN_SYSFS_MAX_NETDEVS ? all.n : RN_SYSFS_MAX_NETDEVS;
	d->netdevs_truncated = all.n > RN_SYSFS_MAX_NETDEVS;
	strv_sort(&keep);
	for (size_t i = 0; i < keep.n; i++)
		(void)rn_strscpy(d->netdevs[i], sizeof(d->netdevs[i]), keep.v[i]);
	d->n_netdevs = keep.n;
	return 0;
}

static int rdma_fill(const char *name, struct rdma_info *info, bool with_netdevs,
		     struct rn_error *err)
{
	struct rn_sysfs_rdma_dev *d = &info->pub;
	_cleanup_(strv_free) struct strv ports = { 0 };
	char path[PATH_MAX];
	int r;

	memset(info, 0, sizeof(*info));
	r = rdma_dir(name, info->dir, sizeof(info->dir), err);
	if (r < 0)
		return r;
	(void)rn_strscpy(d->name, sizeof(d->name), name);

	r = rdma_parent(info, err);
	if (r < 0)
		return r;

	if (rn_path(path, sizeof(path), "%s/node_guid", info->dir) == 0 &&
	    rn_read_line(path, d->node_guid, sizeof(d->node_guid)) < 0)
		d->node_guid[0] = '\0';

	r = list_sub(info->dir, "ports", true, &ports, err);
	if (r < 0 && r != -ENOENT)
		return r;
	d->nports = (uint32_t)ports.n;
	/* The first port (ports sort numerically): port 1 on every HCA. */
	if (ports.n > 0 &&
	    (rn_path(path, sizeof(path), "%s/ports/%s/link_layer", info->dir, ports.v[0]) < 0 ||
	     rn_read_line(path, d->link_layer, sizeof(d->link_layer)) < 0))
		d->link_layer[0] = '\0';

	if (with_netdevs)
		return rdma_fill_netdevs(info, err);
	return 0;
}

bool rn_sysfs_rdma_loaded(void)
{
	char path[PATH_MAX];

	return sys_path(path, sizeof(path), NULL, "class/infiniband") == 0 &&
	       access(path, F_OK) == 0;
}

/* Names under class/infiniband; an absent directory is an empty list. */
static int rdma_names(struct strv *out, struct rn_error *err)
{
	char path[PATH_MAX];
	int r;

	r = check_root(err);
	if (r < 0)
		return r;
	r = sys_path(path, sizeof(path), err, "class/infiniband");
	if (r < 0)
		return r;
	r = list_dir(path, false, out);
	if (r == -ENOENT)
		return 0; /* no RDMA driver loaded */
	if (r < 0)
		return rn_error_errno(err, -r, "cannot list %s", path);
	return 0;
}

/* Every device under class/infiniband, with its netdev list or not. */
static int rdma_list(bool with_netdevs, struct rn_sysfs_rdma_dev **ret, size_t *ret_n,
		     struct rn_error *err)
{
	_cleanup_(strv_free) struct strv names = { 0 };
	_cleanup_free_ struct rn_sysfs_rdma_dev *devs = NULL;
	_cleanup_free_ struct rdma_info *info = NULL;
	size_t n = 0;
	int r;

	*ret = NULL;
	*ret_n = 0;
	r = rdma_names(&names, err);
	if (r < 0)
		return r;
	if (names.n == 0)
		return 0;
	devs = calloc(names.n, sizeof(*devs));
	info = malloc(sizeof(*info));
	if (!devs || !info)
		return rn_error_set(err, ENOMEM, "out of memory listing RDMA devices");
	for (size_t i = 0; i < names.n; i++) {
		r = rdma_fill(names.v[i], info, with_netdevs, err);
		if (r == -ENODEV)
			continue; /* gone (moved to another netns) since the listing */
		if (r < 0)
			return r;
		devs[n++] = info->pub;
	}
	rn_error_clear(err);
	*ret = TAKE_PTR(devs);
	*ret_n = n;
	return 0;
}

int rn_sysfs_rdma_list(struct rn_sysfs_rdma_dev **ret, size_t *ret_n, struct rn_error *err)
{
	return rdma_list(true, ret, ret_n, err);
}

int rn_sysfs_rdma_get(const char *name, struct rn_sysfs_rdma_dev *out, struct rn_error *err)
{
	_cleanup_free_ struct rdma_info *info = NULL;
	int r;

	r = check_root(err);
	if (r < 0)
		return r;
	info = malloc(sizeof(*info));
	if (!info)
		return rn_error_set(err, ENOMEM, "out of memory");
	r = rdma_fill(name, info, true, err);
	if (r < 0)
		return r;
	*out = info->pub;
	return 0;
}

/* Writes name as the next of up to max results; the count goes on. */
static void put_rdma_name(char (*names)[RN_RDMA_NAME_MAX], size_t max, size_t *n, const char *name)
{
	if (names && *n < max)
		(void)rn_strscpy(names[*n], RN_RDMA_NAME_MAX, name);
	(*n)++;
}

/* ROOT/bus/pci/devices/ID or ROOT/bus/auxiliary/devices/ID; -ENODEV when neither exists. */
static int bus_device_dir(const char *bus_id, char *buf, size_t len, struct rn_error *err)
{
	static const char *const buses[] = { "pci", "auxiliary" };
	int r;

	for (size_t i = 0; i < RN_ARRAY_SIZE(buses); i++) {
		r = sys_path(buf, len, err, "bus/%s/devices/%s", buses[i], bus_id);
		if (r < 0)
			return r;
		if (path_exists(buf))
			return 0;
	}
	return rn_error_set(err, ENODEV,
			    "no PCI or auxiliary device %s under %s/bus (expected a PCI address "
			    "such as 0000:3b:00.0 or an auxiliary id such as mlx5_core.sf.2)",
			    bus_id, rn_sysfs_root());
}

/* What rn_sysfs_rdma_by_*() look RDMA devices up by. */
struct rdma_key {
	const char *what; /* for rn_name_check() */
	size_t max_len;
	/* whether the device (netdevs not filled) has the key: 1, 0, or -errno */
	int (*match)(const struct rdma_info *info, const char *key, struct rn_error *err);
	/* when no device has it: 0 if the key itself exists, else -ENODEV saying so */
	int (*exists)(const char *key, struct rn_error *err);
};

static int rdma_find(const struct rdma_key *k, const char *key, char (*names)[RN_RDMA_NAME_MAX],
		     size_t max, size_t *ret_n, struct rn_error *err)
{
	_cleanup_(strv_free) struct strv all = { 0 };
	_cleanup_free_ struct rdma_info *info = NULL;
	size_t n = 0;
	int r;

	*ret_n = 0;
	r = rn_name_check(k->what, key, k->max_len, err);
	if (r < 0)
		return r;
	r = rdma_names(&all, err);
	if (r < 0)
		return r;
	info = malloc(sizeof(*info));
	if (!info)
		return rn_error_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < all.n; i++) {
		r = rdma_fill(all.v[i], info, false, err);
		if (r == -ENODEV)
			continue;
		if (r < 0)
			return r;
		r = k->match(info, key, err);
		if (r < 0)
			return r;
		if (r > 0)
			put_rdma_name(names, max, &n, info->pub.name);
	}
	rn_error_clear(err);
	if (n == 0) {
		r = k->exists(key, err);
		if (r < 0)
			return r;
	}
	*ret_n = n;
	return 0;
}

static int match_bus_id(const struct rdma_info *info, const char *bus_id, struct rn_error *err)
{
	(void)err;
	return strcmp(info->pub.parent_id, bus_id) == 0 || strcmp(info->pub.pci_bdf, bus_id) == 0;
}

static int bus_id_exists(const char *bus_id, struct rn_error *err)
{
	char path[PATH_MAX];

	return bus_device_dir(bus_id, path, sizeof(path), err);
}

static int match_netdev(const struct rdma_info *info, const char *ifname, struct rn_error *err)
{
	_cleanup_(strv_free) struct strv nets = { 0 };
	int r;

	r = rdma_collect_netdevs(info, &nets, err);
	if (r < 0)
		return r;
	return strv_contains(&nets, ifname);
}

static int netdev_exists(const char *ifname, struct rn_error *err)
{
	char path[PATH_MAX];
	int r;

	r = sys_path(path, sizeof(path), err, "class/net/%s", ifname);
	if (r < 0)
		return r;
	if (!path_exists(path))
		return rn_error_set(
			err, ENODEV,
			"netdev %s not found in %s/class/net (wrong name, or in another "
			"network namespace?)",
			ifname, rn_sysfs_root());
	return 0;
}

int rn_sysfs_rdma_by_bus_id(const char *bus_id, char (*names)[RN_RDMA_NAME_MAX], size_t max,
			    size_t *ret_n, struct rn_error *err)
{
	static const struct rdma_key k = { "bus device", RN_BUS_ID_MAX - 1, match_bus_id,
					   bus_id_exists };

	return rdma_find(&k, bus_id, names, max, ret_n, err);
}

int rn_sysfs_rdma_by_netdev(const char *ifname, char (*names)[RN_RDMA_NAME_MAX], size_t max,
			    size_t *ret_n, struct rn_error *err)
{
	static const struct rdma_key k = { "netdev", IF_NAMESIZE - 1, match_netdev, netdev_exists };

	return rdma_find(&k, ifname, names, max, ret_n, err);
}

int rn_sysfs_netdevs_by_bus_id(const char *bus_id, char (*names)[IF_NAMESIZE], size_t max,
			       size_t *ret_n, struct rn_error *err)
{
	_cleanup_(strv_free) struct strv nets = { 0 };
	_cleanup_(strv_free) struct strv children = { 0 };
	char dir[PATH_MAX];
	int r;

	*ret_n = 0;
	r = rn_name_check("bus device", bus_id, RN_BUS_ID_MAX - 1, err);
	if (r < 0)
		return r;
	r = check_root(err);
	if (r < 0)
		return r;
	r = bus_device_dir(bus_id, dir, sizeof(dir), err);
	if (r < 0)
		return r;

	r = list_sub(dir, "net", false, &nets, err);
	if (r < 0 && r != -ENOENT)
		return r;

	/* Auxiliary children (mlx5_core.eth.0, ice.roce.0) may own netdevs too. */
	r = list_dir(dir, false, &children);
	if (r < 0)
		return rn_error_errno(err, -r, "cannot list %s", dir);
	for (size_t i = 0; i < children.n; i++) {
		char child[PATH_MAX];

		if (rn_path(child, sizeof(child), "%s/%s", dir, children.v[i]) < 0)
			continue;
		if (!subsystem_is(child, "auxiliary"))
			continue;
		r = list_sub(child, "net", false, &nets, err);
		if (r < 0 && r != -ENOENT)
			return r;
	}

	strv_sort(&nets);
	for (size_t i = 0; i < nets.n && names && i < max; i++)
		(void)rn_strscpy(names[i], IF_NAMESIZE, nets.v[i]);
	*ret_n = nets.n;
	return 0;
}

int rn_sysfs_netdev_pci(const char *ifname, char *bdf, size_t len, struct rn_error *err)
{
	_cleanup_free_ char *real = NULL;
	char path[PATH_MAX], bus[64];
	const char *found = NULL;
	int r;

	if (bdf && len)
		bdf[0] = '\0';
	r = rn_name_check("netdev", ifname, IF_NAMESIZE - 1, err);
	if (r < 0)
		return r;
	r = check_root(err);
	if (r < 0)
		return r;
	r = netdev_exists(ifname, err);
	if (r < 0)
		return r;
	r = sys_path(path, sizeof(path), err, "class/net/%s/device", ifname);
	if (r < 0)
		return r;
	real = realpath(path, NULL);
	if (!real) {
		if (errno == ENOENT)
			return rn_error_set(err, ENOENT,
					    "netdev %s has no parent device (a virtual interface "
					    "such as veth, bridge or bond?)",
					    ifname);
		return rn_error_errno(err, errno, "cannot resolve %s", path);
	}
	if (subsystem_of(real, bus, sizeof(bus)) < 0)
		bus[0] = '\0';
	if (strcmp(bus, "pci") == 0) {
		found = base_name(real);
	} else if (strcmp(bus, "auxiliary") == 0) {
		/* A sub-function netdev (mlx5_core.sf.N) belongs to its PCI function. */
		dir_name(real);
		if (subsystem_is(real, "pci"))
			found = base_name(real);
	}
	if (!found)
		return rn_error_set(
			err, ENOENT,
			"netdev %s is not on a PCI device (its parent %s is on bus '%s')", ifname,
			base_name(real), bus[0] ? bus : "?");
	if (!bdf || strlen(found) >= len)
		return rn_error_set(err, ERANGE, "buffer too small for PCI address %s of netdev %s",
				    found, ifname);
	(void)rn_strscpy(bdf, len, found);
	return 0;
}

/* ---- GID tables ---- */

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
	_cleanup_(strv_free) struct strv idx = { 0 };
	char path[PATH_MAX], link_layer[32], text[128], type[32];
	uint32_t port_num;
	int r;

	if (parse_u32(port, &port_num) < 0)
		return 0;
	if (rn_path(path, sizeof(path), "%s/ports/%s/link_layer", dir, port) < 0 ||
	    rn_read_line(path, link_layer, sizeof(link_layer)) < 0)
		link_layer[0] = '\0';

	r = rn_path(path, sizeof(path), "%s/ports/%s/gids", dir, port);
	if (r < 0)
		return rn_error_set(err, -r, "path under %s is too long", dir);
	r = list_dir(path, true, &idx);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return rn_error_errno(err, -r, "cannot list %s", path);

	for (size_t i = 0; i < idx.n; i++) {
		struct rn_gid_entry *e;
		uint8_t raw[16];
		uint32_t index;

		if (parse_u32(idx.v[i], &index) < 0)
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
	_cleanup_(strv_free) struct strv names = { 0 };
	char dir[PATH_MAX];
	size_t cap = 0;
	int r;

	out->n = 0;
	out->entries = NULL;
	if (dev) {
		r = check_root(err);
		if (r < 0)
			return r;
		r = rdma_dir(dev, dir, sizeof(dir), err);
		if (r < 0)
			return r;
		r = strv_add(&names, dev);
		if (r < 0)
			return rn_error_set(err, ENOMEM, "out of memory");
	} else {
		r = rdma_names(&names, err);
		if (r < 0)
			return r;
	}

	for (size_t i = 0; i < names.n; i++) {
		_cleanup_(strv_free) struct strv ports = { 0 };

		r = sys_path(dir, sizeof(dir), err, "class/infiniband/%s", names.v[i]);
		if (r < 0)
			return r;
		r = list_sub(dir, "ports", true, &ports, err);
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

/* ---- per-port facts ---- */

/* A small non-negative int attribute (ifindex, mtu) of ROOT/class/net/IF; -1 when unreadable. */
static int netdev_int(const char *ifname, const char *name)
{
	char path[PATH_MAX], text[64];
	uint32_t v;

	if (sys_path(path, sizeof(path), NULL, "class/net/%s/%s", ifname, name) < 0 ||
	    rn_read_line(path, text, sizeof(text)) < 0 || parse_u32(text, &v) < 0 || v > INT_MAX)
		return -1;
	return (int)v;
}

/* IFF_UP of ROOT/class/net/IF/flags ("0x1003"): 1, 0, -1 when unreadable. */
static int netdev_admin_up(const char *ifname)
{
	char path[PATH_MAX], text[64];
	unsigned long long v;
	char *end;

	if (sys_path(path, sizeof(path), NULL, "class/net/%s/flags", ifname) < 0 ||
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
	out->here = sys_path(path, sizeof(path), NULL, "class/net/%s", ifname) == 0 &&
		    path_exists(path);
	r = netdev_int(ifname, "ifindex");
	out->ifindex = r > 0 ? r : 0;
	out->mtu = netdev_int(ifname, "mtu");
	out->admin_up = netdev_admin_up(ifname);
	if (sys_path(path, sizeof(path), NULL, "class/net/%s/operstate", ifname) == 0 &&
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

	r = sys_path(path, sizeof(path), NULL, "class/infiniband/%s/ports/%" PRIu32 "/%s", dev,
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
	_cleanup_(strv_free) struct strv gid = { 0 };
	char path[PATH_MAX];

	return sys_path(path, sizeof(path), NULL,
			"class/infiniband/%s/ports/%" PRIu32 "/gid_attrs/ndevs", dev, port) == 0 &&
	       gid_ndevs(path, 1, &gid) == 0 && gid.n == 1 && rn_strscpy(buf, len, gid.v[0]) >= 0;
}

/*
 * The one netdev of the parent of `dev` when `port` is the device's only port
 * and the parent has one netdev: IPoIB's ib0 (its GIDs name no netdev), a RoCE port
 * before its GIDs exist.
 */
static bool device_only_netdev(const char *dev, uint32_t port, char *buf, size_t len)
{
	_cleanup_free_ struct rdma_info *info = calloc(1, sizeof(*info));
	_cleanup_(strv_free) struct strv ports = { 0 };
	_cleanup_(strv_free) struct strv nets = { 0 };
	uint32_t only;

	return info && rdma_dir(dev, info->dir, sizeof(info->dir), NULL) == 0 &&
	       rdma_parent(info, NULL) == 0 && info->netdir[0] &&
	       list_sub(info->dir, "ports", true, &ports, NULL) == 0 && ports.n == 1 &&
	       parse_u32(ports.v[0], &only) == 0 && only == port &&
	       list_sub(info->netdir, "net", false, &nets, NULL) == 0 && nets.n == 1 &&
	       rn_strscpy(buf, len, nets.v[0]) >= 0;
}

/* rn_sysfs_port_read(), the GID binding from `gids` when given, else from gid_attrs/ndevs. */
static void port_read(const char *dev, uint32_t port, const char *netdev,
		      const struct rn_gid_table *gids, struct rn_sysfs_port *out)
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
	if (sys_path(path, sizeof(path), NULL, "class/infiniband/%s/ports/%" PRIu32 "/gids", dev,
		     port) == 0)
		out->gid_tbl_len = count_numeric(path);

	/* the one rule for the bound netdev (sysfs.h) */
	if (netdev && *netdev) {
		(void)rn_strscpy(bound, sizeof(bound), netdev);
		out->netdev_source = RN_PORT_NETDEV_CALLER;
	} else if (gids ? gid_table_binding(gids, dev, port, bound, sizeof(bound))
			: gid_dir_binding(dev, port, bound, sizeof(bound))) {
		out->netdev_source = RN_PORT_NETDEV_GID;
	} else if (sys_path(path, sizeof(path), NULL, "class/infiniband/%s", dev) == 0 &&
		   rxe_parent(path, bound, sizeof(bound))) {
		out->netdev_source = RN_PORT_NETDEV_PARENT;
	} else if (device_only_netdev(dev, port, bound, sizeof(bound))) {
		out->netdev_source = RN_PORT_NETDEV_DEVICE;
	}
	rn_sysfs_netdev_read(bound, &out->netdev);
}

void rn_sysfs_port_read(const char *dev, uint32_t port, const char *netdev,
			struct rn_sysfs_port *out)
{
	port_read(dev, port, netdev, NULL, out);
}

int rn_sysfs_port_list(const char *dev, uint32_t **ret, size_t *ret_n, struct rn_error *err)
{
	_cleanup_(strv_free) struct strv names = { 0 };
	_cleanup_free_ uint32_t *v = NULL;
	char path[PATH_MAX];
	size_t n = 0;
	int r;

	*ret = NULL;
	*ret_n = 0;
	r = sys_path(path, sizeof(path), err, "class/infiniband/%s", dev);
	if (r < 0)
		return r;
	r = list_sub(path, "ports", true, &names, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < names.n; i++) {
		uint32_t port;

		if (parse_u32(names.v[i], &port) < 0 || port == 0)
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
		port_read(dev, ports[i], NULL, &f->gids, &f->ports[f->n_ports++]);
	return 0;
}

int rn_sysfs_rdma_facts_read(struct rn_sysfs_rdma_facts *out, struct rn_error *err)
{
	_cleanup_(rn_sysfs_rdma_facts_free) struct rn_sysfs_rdma_facts f = { 0 };
	int r;

	memset(out, 0, sizeof(*out));
	r = rdma_list(false, &f.devs, &f.n_devs, err);
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

int rn_sysfs_netdev_list(char (**ret)[IF_NAMESIZE], size_t *ret_n, struct rn_error *err)
{
	_cleanup_(strv_free) struct strv names = { 0 };
	_cleanup_free_ char(*v)[IF_NAMESIZE] = NULL;
	char path[PATH_MAX];
	size_t n = 0;
	int r;

	*ret = NULL;
	*ret_n = 0;
	r = sys_path(path, sizeof(path), err, "class/net");
	if (r < 0)
		return r;
	r = list_dir(path, false, &names);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return rn_error_errno(err, -r, "cannot list %s", path);
	v = calloc(names.n ? names.n : 1, sizeof(*v));
	if (!v)
		return rn_error_set(err, ENOMEM, "out of memory listing %s", path);
	for (size_t i = 0; i < names.n; i++)
		if (rn_strscpy(v[n], sizeof(v[n]), names.v[i]) >= 0)
			n++;
	*ret = TAKE_PTR(v);
	*ret_n = n;
	return 0;
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

	r = port ? sys_path(dir, sizeof(dir), err, "class/infiniband/%s/ports/%" PRIu32 "/%s", dev,
			    port, set)
		 : sys_path(dir, sizeof(dir), err, "class/infiniband/%s/%s", dev, set);
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

/* ---- character devices and kernel modules ---- */

/* "231:192" -> major, minor */
static int parse_devno(const char *text, unsigned *major, unsigned *minor)
{
	char tail;

	return sscanf(text, "%u:%u%c", major, minor, &tail) == 2 ? 0 : -EINVAL;
}

int rn_sysfs_uverbs_list(struct rn_sysfs_chardev **ret, size_t *ret_n, struct rn_error *err)
{
	_cleanup_(strv_free) struct strv names = { 0 };
	_cleanup_free_ struct rn_sysfs_chardev *v = NULL;
	char dir[PATH_MAX];
	size_t n = 0;
	int r;

	*ret = NULL;
	*ret_n = 0;
	r = sys_path(dir, sizeof(dir), err, "class/infiniband_verbs");
	if (r < 0)
		return r;
	r = list_dir(dir, false, &names);
	if (r == -ENOENT)
		return 0; /* ib_uverbs not loaded, or no device */
	if (r < 0)
		return rn_error_errno(err, -r, "cannot list %s", dir);
	for (size_t i = 0; i < names.n; i++) {
		char path[PATH_MAX], ibdev[RN_RDMA_NAME_MAX + 8], devno[32];
		struct rn_sysfs_chardev *c;

		if (strncmp(names.v[i], "uverbs", 6) != 0 || strlen(names.v[i]) > 32)
			continue;
		if (rn_path(path, sizeof(path), "%s/%s/ibdev", dir, names.v[i]) < 0 ||
		    rn_read_line(path, ibdev, sizeof(ibdev)) < 0 ||
		    rn_name_check("RDMA device", ibdev, RN_RDMA_NAME_MAX - 1, NULL) < 0)
			continue; /* gone since the listing */
		if (RN_GROW(v, NULL, n + 1) < 0)
			return rn_error_set(err, ENOMEM, "out of memory");
		c = &v[n];
		memset(c, 0, sizeof(*c));
		if (rn_path(path, sizeof(path), "%s/%s/dev", dir, names.v[i]) < 0 ||
		    rn_read_line(path, devno, sizeof(devno)) < 0 ||
		    parse_devno(devno, &c->major, &c->minor) < 0)
			return rn_error_set(err, EIO,
					    "%s/%s/dev does not hold MAJOR:MINOR; is ib_uverbs "
					    "loaded?",
					    dir, names.v[i]);
		(void)rn_strscpy(c->name, sizeof(c->name), names.v[i]);
		(void)rn_strscpy(c->ibdev, sizeof(c->ibdev), ibdev);
		n++;
	}
	*ret = TAKE_PTR(v);
	*ret_n = n;
	return 0;
}

int rn_sysfs_rdma_cm(struct rn_sysfs_chardev *out, struct rn_error *err)
{
	char path[PATH_MAX], devno[32];
	int r;

	memset(out, 0, sizeof(*out));
	r = sys_path(path, sizeof(path), err, "class/misc/rdma_cm/dev");
	if (r < 0)
		return r;
	r = rn_read_line(path, devno, sizeof(devno));
	if (r == -ENOENT)
		return rn_error_set(err, ENOENT,
				    "no rdma_cm device (%s is missing): load rdma_ucm "
				    "('modprobe rdma_ucm') for RDMA CM in containers",
				    path);
	if (r < 0)
		return rn_error_errno(err, -r, "cannot read %s", path);
	if (parse_devno(devno, &out->major, &out->minor) < 0)
		return rn_error_set(err, EIO, "%s does not hold MAJOR:MINOR", path);
	(void)rn_strscpy(out->name, sizeof(out->name), "rdma_cm");
	return 0;
}

bool rn_sysfs_module_loaded(const char *name)
{
	char path[PATH_MAX];

	return sys_path(path, sizeof(path), NULL, "module/%s", name) == 0 && path_exists(path);
}

int rn_sysfs_module_version(const char *name, char *buf, size_t len)
{
	char path[PATH_MAX];
	int r;

	r = sys_path(path, sizeof(path), NULL, "module/%s/version", name);
	if (r < 0)
		return r;
	return rn_read_line(path, buf, len);
}

/* ---- PCI topology ---- */

/* bus/pci/devices/BDF's attributes and its path under devices/. */
static int pci_fn_read(const char *bdf, struct rn_sysfs_pci_fn *out, struct rn_error *err)
{
	_cleanup_free_ char *real = NULL, *root_real = NULL;
	char path[PATH_MAX], text[64];
	size_t rl;
	int r;

	memset(out, 0, sizeof(*out));
	out->numa = -1;
	(void)rn_strscpy(out->bdf, sizeof(out->bdf), bdf);
	r = sys_path(path, sizeof(path), err, "bus/pci/devices/%s", bdf);
	if (r < 0)
		return r;
	real = realpath(path, NULL);
	root_real = realpath(rn_sysfs_root(), NULL);
	if (!real || !root_real)
		return rn_error_set(err, ENODEV, "PCI function %s not found in %s/bus/pci/devices",
				    bdf, rn_sysfs_root());
	rl = strlen(root_real);
	if (strncmp(real, root_real, rl) != 0 || strncmp(real + rl, "/devices/", 9) != 0 ||
	    rn_strscpy(out->path, sizeof(out->path), real + rl + 9) < 0)
		return rn_error_set(err, EINVAL, "PCI function %s is not under %s/devices", bdf,
				    rn_sysfs_root());
	if (rn_path(path, sizeof(path), "%s/vendor", real) == 0 &&
	    rn_read_line(path, text, sizeof(text)) == 0)
		out->vendor = (unsigned)strtoul(text, NULL, 16);
	if (rn_path(path, sizeof(path), "%s/class", real) == 0 &&
	    rn_read_line(path, text, sizeof(text)) == 0)
		out->pci_class = (unsigned)strtoul(text, NULL, 16);
	if (rn_path(path, sizeof(path), "%s/numa_node", real) == 0 &&
	    rn_read_line(path, text, sizeof(text)) == 0)
		out->numa = atoi(text);
	return 0;
}

int rn_sysfs_pci_get(const char *bdf, struct rn_sysfs_pci_fn *out, struct rn_error *err)
{
	int r = rn_name_check("PCI address", bdf, RN_BUS_ID_MAX - 1, err);

	if (r < 0)
		return r;
	return pci_fn_read(bdf, out, err);
}

int rn_sysfs_pci_list(struct rn_sysfs_pci_fn **ret, size_t *ret_n, struct rn_error *err)
{
	_cleanup_(strv_free) struct strv names = { 0 };
	_cleanup_free_ struct rn_sysfs_pci_fn *v = NULL;
	char path[PATH_MAX];
	size_t n = 0;
	int r;

	*ret = NULL;
	*ret_n = 0;
	r = sys_path(path, sizeof(path), err, "bus/pci/devices");
	if (r < 0)
		return r;
	r = list_dir(path, false, &names);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return rn_error_errno(err, -r, "cannot list %s", path);
	v = calloc(names.n ? names.n : 1, sizeof(*v));
	if (!v)
		return rn_error_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < names.n; i++)
		if (pci_fn_read(names.v[i], &v[n], NULL) == 0)
			n++;
	*ret = TAKE_PTR(v);
	*ret_n = n;
	return 0;
}

enum rn_pci_distance rn_sysfs_pci_distance(const struct rn_sysfs_pci_fn *a,
					   const struct rn_sysfs_pci_fn *b)
{
	const char *x = a->path, *y = b->path;
	size_t common = 0;

	/* count the leading path components both share: host bridge, root port, switch ports */
	for (;;) {
		size_t lx = strcspn(x, "/"), ly = strcspn(y, "/");

		if (lx != ly || strncmp(x, y, lx) != 0 || !x[lx] || !y[ly])
			break;
		common++;
		x += lx + 1;
		y += ly + 1;
	}
	if (common >= 3)
		return RN_PCI_SAME_SWITCH;
	if (common == 2)
		return RN_PCI_SAME_ROOT_PORT;
	if (common == 1 || a->numa < 0 || b->numa < 0 || a->numa == b->numa)
		return RN_PCI_SAME_NODE;
	return RN_PCI_CROSS_CPU;
}

const char *rn_pci_distance_name(enum rn_pci_distance d)
{
	switch (d) {
	case RN_PCI_SAME_SWITCH:
		return "same PCIe switch";
	case RN_PCI_SAME_ROOT_PORT:
		return "same root port";
	case RN_PCI_SAME_NODE:
		return "same NUMA node, through the CPU's root complex";
	case RN_PCI_CROSS_CPU:
		return "across the CPU interconnect (another NUMA node)";
	}
	return "?";
}
