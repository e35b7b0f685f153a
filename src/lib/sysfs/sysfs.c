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
#include "sysfs_private.h"

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

void rn_sysfs_strv_free(struct strv *s)
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

int rn_sysfs_strv_add(struct strv *s, const char *str)
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

int rn_sysfs_parse_u32(const char *s, uint32_t *ret)
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
int rn_sysfs_path(char *buf, size_t len, struct rn_error *err, const char *fmt, ...)
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

int rn_sysfs_check_root(struct rn_error *err)
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

bool rn_sysfs_exists(const char *path)
{
	return access(path, F_OK) == 0;
}

/*
 * Appends the entries of a directory (not "." and ".."; only decimal names
 * when numeric) to out, the appended ones in natural order. Returns -errno
 * of the open, so callers can tell "absent" (-ENOENT) from failures.
 */
int rn_sysfs_list_dir(const char *path, bool numeric, struct strv *out)
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
		r = rn_sysfs_strv_add(out, de->d_name);
		if (r < 0)
			return r;
	}
	strv_sort_from(out, start);
	return 0;
}

/*
 * rn_sysfs_list_dir() of DIR/SUB, with a message when that fails; -ENOENT (no
 * message) when it does not exist.
 */
int rn_sysfs_list_sub(const char *dir, const char *sub, bool numeric, struct strv *out,
		      struct rn_error *err)
{
	char path[PATH_MAX];
	int r;

	r = rn_path(path, sizeof(path), "%s/%s", dir, sub);
	if (r < 0)
		return rn_error_set(err, -r, "path %s/%s is too long", dir, sub);
	r = rn_sysfs_list_dir(path, numeric, out);
	if (r < 0 && r != -ENOENT)
		return rn_error_errno(err, -r, "cannot list %s", path);
	return r;
}

/*
 * rn_sysfs_list_dir() of ROOT/rel (its path into path[len]), with a message when that
 * fails; an absent directory is an empty one (its driver is not loaded).
 */
int rn_sysfs_list_root_dir(const char *rel, char *path, size_t len, struct strv *out,
			   struct rn_error *err)
{
	int r;

	r = rn_sysfs_path(path, len, err, "%s", rel);
	if (r < 0)
		return r;
	r = rn_sysfs_list_dir(path, false, out);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return rn_error_errno(err, -r, "cannot list %s", path);
	return 0;
}

int rn_sysfs_read_entries(const char *rel, size_t size, rn_sysfs_entry_fn read_one, void **ret,
			  size_t *ret_n, struct rn_error *err)
{
	_cleanup_(rn_sysfs_strv_free) struct strv names = { 0 };
	_cleanup_free_ char *v = NULL;
	char dir[PATH_MAX];
	size_t n = 0;
	int r;

	*ret = NULL;
	*ret_n = 0;
	r = rn_sysfs_list_root_dir(rel, dir, sizeof(dir), &names, err);
	if (r < 0 || names.n == 0)
		return r;
	v = calloc(names.n, size);
	if (!v)
		return rn_error_set(err, ENOMEM, "out of memory listing %s", dir);
	for (size_t i = 0; i < names.n; i++) {
		r = read_one(dir, names.v[i], v + n * size, err);
		if (r < 0)
			return r;
		if (r == 0)
			n++;
		else
			memset(v + n * size, 0, size); /* refused: the next one takes its place */
	}
	*ret = TAKE_PTR(v);
	*ret_n = n;
	return 0;
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

/* ROOT/class/infiniband/NAME, or -ENODEV naming the device. */
int rn_sysfs_rdma_dir(const char *name, char *buf, size_t len, struct rn_error *err)
{
	int r;

	r = rn_name_check("RDMA device", name, RN_RDMA_NAME_MAX - 1, err);
	if (r < 0)
		return r;
	r = rn_sysfs_path(buf, len, err, "class/infiniband/%s", name);
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
int rn_sysfs_rdma_parent(struct rdma_info *info, struct rn_error *err)
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
int rn_sysfs_gid_ndevs(const char *dir, size_t limit, struct strv *out)
{
	_cleanup_(rn_sysfs_strv_free) struct strv idx = { 0 };
	char file[PATH_MAX], value[64];
	size_t found = 0;
	int r;

	r = rn_sysfs_list_dir(dir, true, &idx);
	if (r < 0)
		return r == -ENOENT ? 0 : r;
	for (size_t i = 0; i < idx.n && (limit == 0 || found < limit); i++) {
		if (rn_path(file, sizeof(file), "%s/%s", dir, idx.v[i]) < 0 ||
		    rn_read_line(file, value, sizeof(value)) < 0 ||
		    rn_name_check("netdev", value, IF_NAMESIZE - 1, NULL) < 0)
			continue;
		r = rn_sysfs_strv_add(out, value);
		if (r < 0)
			return r;
		found++;
	}
	return 0;
}

/* The netdev rdma_rxe runs on, from DEVDIR/parent; false when there is none. */
bool rn_sysfs_rxe_parent(const char *devdir, char *buf, size_t len)
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
	_cleanup_(rn_sysfs_strv_free) struct strv ports = { 0 };
	char path[PATH_MAX], parent[IF_NAMESIZE];
	int r;

	r = rn_sysfs_list_sub(info->dir, "ports", true, &ports, err);
	if (r < 0 && r != -ENOENT)
		return r;

	for (size_t p = 0; p < ports.n; p++) {
		r = rn_path(path, sizeof(path), "%s/ports/%s/gid_attrs/ndevs", info->dir,
			    ports.v[p]);
		if (r < 0)
			return rn_error_set(err, -r, "path under %s is too long", info->dir);
		r = rn_sysfs_gid_ndevs(path, 0, out);
		if (r < 0)
			return rn_error_errno(err, -r, "cannot read %s", path);
	}

	if (rn_sysfs_rxe_parent(info->dir, parent, sizeof(parent)) &&
	    rn_sysfs_path(path, sizeof(path), NULL, "class/net/%s", parent) == 0 &&
	    rn_sysfs_exists(path)) {
		r = rn_sysfs_strv_add(out, parent);
		if (r < 0)
			return rn_error_errno(err, -r, "reading %s/parent", info->dir);
	}

	if (info->netdir[0]) {
		r = rn_sysfs_list_sub(info->netdir, "net", false, out, err);
		if (r < 0 && r != -ENOENT)
			return r;
	}
	return 0;
}

static int rdma_fill_netdevs(struct rdma_info *info, struct rn_error *err)
{
	struct rn_sysfs_rdma_dev *d = &info->pub;
	_cleanup_(rn_sysfs_strv_free) struct strv all = { 0 };
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
	_cleanup_(rn_sysfs_strv_free) struct strv ports = { 0 };
	char path[PATH_MAX];
	int r;

	memset(info, 0, sizeof(*info));
	r = rn_sysfs_rdma_dir(name, info->dir, sizeof(info->dir), err);
	if (r < 0)
		return r;
	(void)rn_strscpy(d->name, sizeof(d->name), name);

	r = rn_sysfs_rdma_parent(info, err);
	if (r < 0)
		return r;

	if (rn_path(path, sizeof(path), "%s/node_guid", info->dir) == 0 &&
	    rn_read_line(path, d->node_guid, sizeof(d->node_guid)) < 0)
		d->node_guid[0] = '\0';
	/* "1: CA", "4: RNIC" (ib_verbs.h enum rdma_node_type); unreadable: 0 */
	{
		char type[32] = "";

		if (rn_path(path, sizeof(path), "%s/node_type", info->dir) == 0 &&
		    rn_read_line(path, type, sizeof(type)) == 0)
			d->node_type = (unsigned)strtoul(type, NULL, 10);
	}

	r = rn_sysfs_list_sub(info->dir, "ports", true, &ports, err);
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

	return rn_sysfs_path(path, sizeof(path), NULL, "class/infiniband") == 0 &&
	       access(path, F_OK) == 0;
}

/* Names under class/infiniband; an absent directory is an empty list. */
int rn_sysfs_rdma_names(struct strv *out, struct rn_error *err)
{
	char path[PATH_MAX];
	int r;

	r = rn_sysfs_check_root(err);
	if (r < 0)
		return r;
	return rn_sysfs_list_root_dir("class/infiniband", path, sizeof(path), out, err);
}

/* Every device under class/infiniband, with its netdev list or not. */
int rn_sysfs_rdma_list_with(bool with_netdevs, struct rn_sysfs_rdma_dev **ret, size_t *ret_n,
			    struct rn_error *err)
{
	_cleanup_(rn_sysfs_strv_free) struct strv names = { 0 };
	_cleanup_free_ struct rn_sysfs_rdma_dev *devs = NULL;
	_cleanup_free_ struct rdma_info *info = NULL;
	size_t n = 0;
	int r;

	*ret = NULL;
	*ret_n = 0;
	r = rn_sysfs_rdma_names(&names, err);
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
	return rn_sysfs_rdma_list_with(true, ret, ret_n, err);
}

int rn_sysfs_rdma_get(const char *name, struct rn_sysfs_rdma_dev *out, struct rn_error *err)
{
	_cleanup_free_ struct rdma_info *info = NULL;
	int r;

	r = rn_sysfs_check_root(err);
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
		r = rn_sysfs_path(buf, len, err, "bus/%s/devices/%s", buses[i], bus_id);
		if (r < 0)
			return r;
		if (rn_sysfs_exists(buf))
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
	_cleanup_(rn_sysfs_strv_free) struct strv all = { 0 };
	_cleanup_free_ struct rdma_info *info = NULL;
	size_t n = 0;
	int r;

	*ret_n = 0;
	r = rn_name_check(k->what, key, k->max_len, err);
	if (r < 0)
		return r;
	r = rn_sysfs_rdma_names(&all, err);
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
	_cleanup_(rn_sysfs_strv_free) struct strv nets = { 0 };
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

	r = rn_sysfs_path(path, sizeof(path), err, "class/net/%s", ifname);
	if (r < 0)
		return r;
	if (!rn_sysfs_exists(path))
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
	_cleanup_(rn_sysfs_strv_free) struct strv nets = { 0 };
	_cleanup_(rn_sysfs_strv_free) struct strv children = { 0 };
	char dir[PATH_MAX];
	int r;

	*ret_n = 0;
	r = rn_name_check("bus device", bus_id, RN_BUS_ID_MAX - 1, err);
	if (r < 0)
		return r;
	r = rn_sysfs_check_root(err);
	if (r < 0)
		return r;
	r = bus_device_dir(bus_id, dir, sizeof(dir), err);
	if (r < 0)
		return r;

	r = rn_sysfs_list_sub(dir, "net", false, &nets, err);
	if (r < 0 && r != -ENOENT)
		return r;

	/* Auxiliary children (mlx5_core.eth.0, ice.roce.0) may own netdevs too. */
	r = rn_sysfs_list_dir(dir, false, &children);
	if (r < 0)
		return rn_error_errno(err, -r, "cannot list %s", dir);
	for (size_t i = 0; i < children.n; i++) {
		char child[PATH_MAX];

		if (rn_path(child, sizeof(child), "%s/%s", dir, children.v[i]) < 0)
			continue;
		if (!subsystem_is(child, "auxiliary"))
			continue;
		r = rn_sysfs_list_sub(child, "net", false, &nets, err);
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
	r = rn_sysfs_check_root(err);
	if (r < 0)
		return r;
	r = netdev_exists(ifname, err);
	if (r < 0)
		return r;
	r = rn_sysfs_path(path, sizeof(path), err, "class/net/%s/device", ifname);
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
