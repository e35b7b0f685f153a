// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fakesys.h"
#include "rdmans/sysfs.h"

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "fakesys: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	abort();
}

static void fmt_path(char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void fmt_path(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= len)
		die("path too long");
}

/* mkdir -p, from the deepest existing directory down. */
static void mkdirs(const char *path)
{
	char parent[PATH_MAX];
	char *slash;

	if (mkdir(path, 0755) == 0 || errno == EEXIST)
		return;
	if (errno != ENOENT)
		die("mkdir %s: %s", path, strerror(errno));
	fmt_path(parent, sizeof(parent), "%s", path);
	slash = strrchr(parent, '/');
	if (!slash || slash == parent)
		die("mkdir %s: %s", path, strerror(ENOENT));
	*slash = '\0';
	mkdirs(parent);
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		die("mkdir %s: %s", path, strerror(errno));
}

static void parent_dirs(const char *path)
{
	char tmp[PATH_MAX];
	char *slash;

	fmt_path(tmp, sizeof(tmp), "%s", path);
	slash = strrchr(tmp, '/');
	if (slash && slash != tmp) {
		*slash = '\0';
		mkdirs(tmp);
	}
}

/* ln -s target ROOT/rel (replacing nothing: an existing link is left alone). */
static void link_at(const char *root, const char *target, const char *rel)
{
	char path[PATH_MAX];

	fmt_path(path, sizeof(path), "%s/%s", root, rel);
	parent_dirs(path);
	if (symlink(target, path) < 0 && errno != EEXIST)
		die("symlink %s -> %s: %s", path, target, strerror(errno));
}

void fakesys_write(const char *root, const char *relpath, const char *content)
{
	char path[PATH_MAX];
	size_t len = strlen(content);
	int fd;

	fmt_path(path, sizeof(path), "%s/%s", root, relpath);
	parent_dirs(path);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		die("open %s: %s", path, strerror(errno));
	/* sysfs attributes end in a newline */
	if (write(fd, content, len) != (ssize_t)len || write(fd, "\n", 1) != 1)
		die("write %s: %s", path, strerror(errno));
	close(fd);
}

/*
 * A path that open()s but whose read() fails (EISDIR): stands in for the
 * kernel's EINVAL on gid_attrs of empty slots, and works when run as root.
 */
void fakesys_unreadable(const char *root, const char *relpath)
{
	char path[PATH_MAX];

	fmt_path(path, sizeof(path), "%s/%s", root, relpath);
	/* a file written there before (fakesys_add_port's state) goes */
	if (unlink(path) < 0 && errno != ENOENT && errno != EISDIR)
		die("unlink %s: %s", path, strerror(errno));
	mkdirs(path);
}

char *fakesys_new(void)
{
	static const char *const dirs[] = {
		"class/infiniband",	      "class/net",	    "bus/pci/devices",
		"bus/auxiliary/devices",      "devices/pci0000:00", "devices/virtual/net",
		"devices/virtual/infiniband",
	};
	const char *tmpdir = getenv("TMPDIR");
	char tmpl[PATH_MAX];
	char *root;

	fmt_path(tmpl, sizeof(tmpl), "%s/rdmans-fakesys-XXXXXX",
		 tmpdir && *tmpdir ? tmpdir : "/tmp");
	if (!mkdtemp(tmpl))
		die("mkdtemp %s: %s", tmpl, strerror(errno));
	root = strdup(tmpl);
	if (!root)
		die("out of memory");
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		char path[PATH_MAX];

		fmt_path(path, sizeof(path), "%s/%s", root, dirs[i]);
		mkdirs(path);
	}
	return root;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		return rmdir(path) < 0 ? -1 : 0;
	return unlink(path) < 0 ? -1 : 0;
}

void fakesys_free(char *root)
{
	if (!root)
		return;
	if (nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS) < 0)
		fprintf(stderr, "fakesys: cannot remove %s: %s\n", root, strerror(errno));
	free(root);
}

void fakesys_add_pci(const char *root, const char *bdf)
{
	char rel[PATH_MAX], target[PATH_MAX];

	fmt_path(rel, sizeof(rel), "%s/devices/pci0000:00/%s", root, bdf);
	mkdirs(rel);
	fmt_path(rel, sizeof(rel), "devices/pci0000:00/%s/subsystem", bdf);
	link_at(root, "../../../bus/pci", rel);
	fmt_path(rel, sizeof(rel), "bus/pci/devices/%s", bdf);
	fmt_path(target, sizeof(target), "../../../devices/pci0000:00/%s", bdf);
	link_at(root, target, rel);
}

void fakesys_place_pci(const char *root, const char *bdf, const char *parents, unsigned vendor,
		       unsigned pci_class, int numa)
{
	char rel[PATH_MAX], target[PATH_MAX], text[32], walk[PATH_MAX];
	size_t len = strlen(parents);

	/* the bridges on the way: pci0000:16, then root port, switch ports */
	fmt_path(walk, sizeof(walk), "%s", parents);
	for (size_t i = 0; i <= len; i++) {
		const char *last;

		if (walk[i] != '/' && walk[i] != '\0')
			continue;
		walk[i] = '\0';
		last = strrchr(walk, '/');
		last = last ? last + 1 : walk;
		if (strncmp(last, "pci", 3) != 0) {
			fmt_path(rel, sizeof(rel), "devices/%s/class", walk);
			fakesys_write(root, rel, "0x060400");
		}
		if (i < len)
			walk[i] = '/';
	}
	fmt_path(rel, sizeof(rel), "devices/%s/%s/vendor", parents, bdf);
	snprintf(text, sizeof(text), "0x%04x", vendor);
	fakesys_write(root, rel, text);
	fmt_path(rel, sizeof(rel), "devices/%s/%s/class", parents, bdf);
	snprintf(text, sizeof(text), "0x%06x", pci_class);
	fakesys_write(root, rel, text);
	fmt_path(rel, sizeof(rel), "devices/%s/%s/numa_node", parents, bdf);
	snprintf(text, sizeof(text), "%d", numa);
	fakesys_write(root, rel, text);
	fmt_path(rel, sizeof(rel), "%s/bus/pci/devices/%s", root, bdf);
	(void)unlink(rel);
	fmt_path(rel, sizeof(rel), "bus/pci/devices/%s", bdf);
	fmt_path(target, sizeof(target), "../../../devices/%s/%s", parents, bdf);
	link_at(root, target, rel);
}

void fakesys_add_aux(const char *root, const char *bdf, const char *aux)
{
	char rel[PATH_MAX], target[PATH_MAX];

	fakesys_add_pci(root, bdf);
	fmt_path(rel, sizeof(rel), "%s/devices/pci0000:00/%s/%s", root, bdf, aux);
	mkdirs(rel);
	fmt_path(rel, sizeof(rel), "devices/pci0000:00/%s/%s/subsystem", bdf, aux);
	link_at(root, "../../../../bus/auxiliary", rel);
	fmt_path(rel, sizeof(rel), "bus/auxiliary/devices/%s", aux);
	fmt_path(target, sizeof(target), "../../../devices/pci0000:00/%s/%s", bdf, aux);
	link_at(root, target, rel);
}

void fakesys_add_vf(const char *root, const char *pf_bdf, const char *vf_bdf, unsigned n)
{
	char rel[PATH_MAX], target[PATH_MAX];

	fakesys_add_pci(root, pf_bdf);
	fakesys_add_pci(root, vf_bdf);
	fmt_path(rel, sizeof(rel), "devices/pci0000:00/%s/virtfn%u", pf_bdf, n);
	fmt_path(target, sizeof(target), "../%s", vf_bdf);
	link_at(root, target, rel);
	fmt_path(rel, sizeof(rel), "devices/pci0000:00/%s/physfn", vf_bdf);
	fmt_path(target, sizeof(target), "../%s", pf_bdf);
	link_at(root, target, rel);
}

/* A netdev directory at devices/DEVREL/net/IF whose device link is parent_link. */
static void add_netdev(const char *root, const char *ifname, const char *devrel,
		       const char *parent_link, const char *subsystem_link)
{
	char rel[PATH_MAX], target[PATH_MAX];

	fmt_path(rel, sizeof(rel), "%s/devices/%s/net/%s", root, devrel, ifname);
	mkdirs(rel);
	fmt_path(rel, sizeof(rel), "devices/%s/net/%s/subsystem", devrel, ifname);
	link_at(root, subsystem_link, rel);
	if (parent_link) {
		fmt_path(rel, sizeof(rel), "devices/%s/net/%s/device", devrel, ifname);
		link_at(root, parent_link, rel);
	}
	fmt_path(rel, sizeof(rel), "devices/%s/net/%s/ifindex", devrel, ifname);
	fakesys_write(root, rel, "2");
	fmt_path(rel, sizeof(rel), "class/net/%s", ifname);
	fmt_path(target, sizeof(target), "../../devices/%s/net/%s", devrel, ifname);
	link_at(root, target, rel);
}

void fakesys_add_netdev_pci(const char *root, const char *ifname, const char *bdf)
{
	char devrel[PATH_MAX], parent[PATH_MAX];

	fakesys_add_pci(root, bdf);
	fmt_path(devrel, sizeof(devrel), "pci0000:00/%s", bdf);
	fmt_path(parent, sizeof(parent), "../../../%s", bdf);
	add_netdev(root, ifname, devrel, parent, "../../../../../class/net");
}

void fakesys_add_netdev_aux(const char *root, const char *ifname, const char *bdf, const char *aux)
{
	char devrel[PATH_MAX], parent[PATH_MAX];

	fakesys_add_aux(root, bdf, aux);
	fmt_path(devrel, sizeof(devrel), "pci0000:00/%s/%s", bdf, aux);
	fmt_path(parent, sizeof(parent), "../../../%s", aux);
	add_netdev(root, ifname, devrel, parent, "../../../../../../class/net");
}

void fakesys_add_netdev_virtual(const char *root, const char *ifname)
{
	add_netdev(root, ifname, "virtual", NULL, "../../../../class/net");
}

void fakesys_add_port(const char *root, const char *dev, unsigned port, const char *link_layer)
{
	char rel[PATH_MAX];

	fmt_path(rel, sizeof(rel), "class/infiniband/%s/ports/%u/link_layer", dev, port);
	fakesys_write(root, rel, link_layer);
	fmt_path(rel, sizeof(rel), "class/infiniband/%s/ports/%u/state", dev, port);
	fakesys_write(root, rel, "4: ACTIVE");
	fmt_path(rel, sizeof(rel), "class/infiniband/%s/ports/%u/phys_state", dev, port);
	fakesys_write(root, rel, "5: LinkUp");
	fmt_path(rel, sizeof(rel), "%s/class/infiniband/%s/ports/%u/gids", root, dev, port);
	mkdirs(rel);
	fmt_path(rel, sizeof(rel), "%s/class/infiniband/%s/ports/%u/gid_attrs/types", root, dev,
		 port);
	mkdirs(rel);
	fmt_path(rel, sizeof(rel), "%s/class/infiniband/%s/ports/%u/gid_attrs/ndevs", root, dev,
		 port);
	mkdirs(rel);
}

/* devices/DEVREL/infiniband/DEV, class link, device link, attributes and port 1. */
static void add_rdma(const char *root, const char *dev, const char *devrel, const char *parent_link,
		     const char *node_guid, const char *link_layer)
{
	char rel[PATH_MAX], target[PATH_MAX];

	fmt_path(rel, sizeof(rel), "%s/devices/%s/infiniband/%s", root, devrel, dev);
	mkdirs(rel);
	fmt_path(rel, sizeof(rel), "class/infiniband/%s", dev);
	fmt_path(target, sizeof(target), "../../devices/%s/infiniband/%s", devrel, dev);
	link_at(root, target, rel);
	if (parent_link) {
		fmt_path(rel, sizeof(rel), "devices/%s/infiniband/%s/device", devrel, dev);
		link_at(root, parent_link, rel);
	}
	if (node_guid) {
		fmt_path(rel, sizeof(rel), "class/infiniband/%s/node_guid", dev);
		fakesys_write(root, rel, node_guid);
	}
	fmt_path(rel, sizeof(rel), "class/infiniband/%s/node_type", dev);
	fakesys_write(root, rel, "1: CA");
	fakesys_add_port(root, dev, 1, link_layer);
}

void fakesys_add_rdma_pci(const char *root, const char *dev, const char *bdf, const char *node_guid,
			  const char *link_layer)
{
	char devrel[PATH_MAX], parent[PATH_MAX];

	fakesys_add_pci(root, bdf);
	fmt_path(devrel, sizeof(devrel), "pci0000:00/%s", bdf);
	fmt_path(parent, sizeof(parent), "../../../%s", bdf);
	add_rdma(root, dev, devrel, parent, node_guid, link_layer);
}

void fakesys_add_rdma_aux(const char *root, const char *dev, const char *bdf, const char *aux,
			  const char *node_guid, const char *link_layer)
{
	char devrel[PATH_MAX], parent[PATH_MAX];

	fakesys_add_aux(root, bdf, aux);
	fmt_path(devrel, sizeof(devrel), "pci0000:00/%s/%s", bdf, aux);
	fmt_path(parent, sizeof(parent), "../../../%s", aux);
	add_rdma(root, dev, devrel, parent, node_guid, link_layer);
}

void fakesys_add_rdma_virtual(const char *root, const char *dev, const char *parent_netdev,
			      const char *node_guid, const char *link_layer)
{
	char rel[PATH_MAX];

	add_rdma(root, dev, "virtual", NULL, node_guid, link_layer);
	if (parent_netdev) {
		fmt_path(rel, sizeof(rel), "class/infiniband/%s/parent", dev);
		fakesys_write(root, rel, parent_netdev);
	}
}

void fakesys_add_gid(const char *root, const char *dev, unsigned port, unsigned idx,
		     const char *gid, const char *type, const char *ndev)
{
	char rel[PATH_MAX];

	fmt_path(rel, sizeof(rel), "class/infiniband/%s/ports/%u/gids/%u", dev, port, idx);
	fakesys_write(root, rel, gid);
	fmt_path(rel, sizeof(rel), "class/infiniband/%s/ports/%u/gid_attrs/types/%u", dev, port,
		 idx);
	if (type)
		fakesys_write(root, rel, type);
	else
		fakesys_unreadable(root, rel);
	fmt_path(rel, sizeof(rel), "class/infiniband/%s/ports/%u/gid_attrs/ndevs/%u", dev, port,
		 idx);
	if (ndev)
		fakesys_write(root, rel, ndev);
	else
		fakesys_unreadable(root, rel);
}

void fakesys_add_empty_gids(const char *root, const char *dev, unsigned port, unsigned from,
			    unsigned to)
{
	for (unsigned i = from; i <= to; i++)
		fakesys_add_gid(root, dev, port, i, "0000:0000:0000:0000:0000:0000:0000:0000", NULL,
				NULL);
}

void fakesys_add_unreadable_gid(const char *root, const char *dev, unsigned port, unsigned idx)
{
	char rel[PATH_MAX];

	fmt_path(rel, sizeof(rel), "class/infiniband/%s/ports/%u/gids/%u", dev, port, idx);
	fakesys_unreadable(root, rel);
	fmt_path(rel, sizeof(rel), "class/infiniband/%s/ports/%u/gid_attrs/types/%u", dev, port,
		 idx);
	fakesys_unreadable(root, rel);
	fmt_path(rel, sizeof(rel), "class/infiniband/%s/ports/%u/gid_attrs/ndevs/%u", dev, port,
		 idx);
	fakesys_unreadable(root, rel);
}

char *fake_start(void)
{
	char *root = fakesys_new();

	rn_sysfs_set_root(root);
	return root;
}

void fake_done(char **root)
{
	rn_sysfs_set_root(NULL);
	fakesys_free(*root);
}
