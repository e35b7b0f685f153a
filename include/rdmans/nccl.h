/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NCCL settings resolved from what a network namespace really holds.
 *
 * Three steps, each usable on its own:
 *   probe    what is in the netns: RDMA ports (state, link layer, bound
 *            netdev), the netdevs there and their IPv4 addresses, the GIDs;
 *   resolve  the NCCL variables, from a profile (the platforms' presets),
 *            what was probed, and override layers (config file, the CNI
 *            config's `nccl` block, container annotations, options); every
 *            value keeps where it came from, for --explain;
 *   render   env, sh, nccl.conf text (nccl_conf.c), merged with an image's
 *            own nccl.conf where there is one.
 *
 * Precedence, lowest first: profile, image's own nccl.conf (only when
 * merging), detected, config file, CNI config, annotations, command line.
 * Two exceptions keep the platforms' conventions: a profile's
 * NCCL_SOCKET_IFNAME beats the detected one (CCE and PAI use eth0, the pod
 * network, on purpose), and a profile's NCCL_IB_HCA and NCCL_IB_GID_INDEX
 * are only used where nothing was detected.
 */
#ifndef RDMANS_NCCL_H
#define RDMANS_NCCL_H

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdmans/cleanup.h"
#include "rdmans/error.h"
#include "rdmans/sysfs.h"
#include "rdmans/sysfs_gid.h"
#include "rdmans/sysfs_port.h"

struct rn_sysfs_pci_fn;

#define RN_NCCL_NAME_MAX 64
/* NCCL reads at most 1023 bytes of a value from nccl.conf (src/misc/param.cc). */
#define RN_NCCL_VALUE_MAX 1024
#define RN_NCCL_ORIGIN_MAX 256
#define RN_NCCL_DETAIL_MAX 512
#define RN_NCCL_PROFILE_MAX 32
#define RN_NCCL_MAX_ADDRS 8
#define RN_CIDR_MAX 64

/* ---- profiles: the presets of the source documents ---- */

struct rn_nccl_preset {
	const char *name;
	const char *value;
};

struct rn_nccl_profile {
	const char *name; /* "roce", "ib", "baidu-cce", "scnet", "alibaba-erdma" */
	const char *title; /* one line: what it is and where its values come from */
	const struct rn_nccl_preset *values;
	size_t n_values;
};

/* The i-th profile, NULL past the last. "auto" is not one: it picks one of these. */
const struct rn_nccl_profile *rn_nccl_profile_at(size_t i);
/* NULL when unknown. */
const struct rn_nccl_profile *rn_nccl_profile_find(const char *name);
/* 0, or -EINVAL naming the profiles there are ("auto" is accepted). */
int rn_nccl_profile_check(const char *name, struct rn_error *err);

/* ---- what a network namespace holds ---- */

struct rn_nccl_port {
	char dev[RN_RDMA_NAME_MAX];
	uint32_t port;
	char state[24]; /* "ACTIVE", "DOWN", ... as ports/P/state says, "" when unreadable */
	bool active;
	char link_layer[16]; /* "Ethernet", "InfiniBand" */
	struct rn_sysfs_netdev netdev; /* the bound netdev in this netns (port_netdev.h) */
	size_t n_ipv4;
	char ipv4[RN_NCCL_MAX_ADDRS][RN_CIDR_MAX]; /* its IPv4 addresses, "a.b.c.d/nn" */
	size_t n_ipv6;
	char ipv6[RN_NCCL_MAX_ADDRS][RN_CIDR_MAX]; /* its global IPv6 addresses, "x::y/nn" */
	char pci_bdf[RN_BUS_ID_MAX]; /* the device's PCI function, "" when it has none */
	bool iwarp; /* the device is an RNIC (node_type 4): Ethernet, but no RoCE */
};

struct rn_nccl_node {
	bool no_rdma; /* the kernel has no RDMA at all (rn_sysfs_rdma_loaded()) */
	size_t n_ports;
	struct rn_nccl_port *ports; /* sorted by device (natural order), then port */
	size_t n_netdevs;
	char (*netdevs)[IF_NAMESIZE]; /* every netdev in the netns */
	struct rn_gid_table gids;
};

/* ---- override layers ---- */

enum rn_nccl_source {
	RN_NCCL_SRC_PROFILE = 0,
	RN_NCCL_SRC_DETECTED,
	RN_NCCL_SRC_CONFIG, /* a config file (/etc/rdmans/nccl.json) */
	RN_NCCL_SRC_CNI, /* the CNI config's `nccl` block */
	RN_NCCL_SRC_ANNOTATION, /* container annotations */
	RN_NCCL_SRC_OPTION, /* the command line */
};

/* "profile", "detected", "config", "cni", "annotation", "option" */
const char *rn_nccl_source_name(enum rn_nccl_source source);

struct rn_nccl_kv {
	char name[RN_NCCL_NAME_MAX];
	char value[RN_NCCL_VALUE_MAX];
	bool unset; /* removes the variable (a JSON null) */
};

struct rn_nccl_layer {
	enum rn_nccl_source source;
	char origin[RN_NCCL_ORIGIN_MAX]; /* "/etc/rdmans/nccl.json", "rdmans.io/nccl", "--set" */
	char profile[RN_NCCL_PROFILE_MAX]; /* "" when the layer names none */
	char family[8]; /* "ipv4", "ipv6", "auto", or "" when the layer names none */
	char nccl_version[16]; /* "2.21.5": the NCCL the job runs, "" when not named */
	size_t n;
	struct rn_nccl_kv *kv;
};

void rn_nccl_layer_init(struct rn_nccl_layer *l, enum rn_nccl_source source, const char *origin);
void rn_nccl_layer_free(struct rn_nccl_layer *l);
static inline void rn_nccl_layer_freep(struct rn_nccl_layer *l)
{
	rn_nccl_layer_free(l);
}
#define _cleanup_nccl_layer_ _cleanup_(rn_nccl_layer_freep)

/*
 * Sets (value != NULL) or unsets (NULL) a variable; a later call for the same
 * name replaces the earlier one. Names are NCCL_[A-Z0-9_]+; values have no
 * newline or NUL and fit nccl.conf (< RN_NCCL_VALUE_MAX bytes).
 */
int rn_nccl_layer_set(struct rn_nccl_layer *l, const char *name, const char *value,
		      struct rn_error *err);
/* "NAME=VALUE" (the --set form); "NAME=" sets an empty value, "NAME" alone unsets. */
int rn_nccl_layer_set_arg(struct rn_nccl_layer *l, const char *arg, struct rn_error *err);
int rn_nccl_layer_set_profile(struct rn_nccl_layer *l, const char *profile, struct rn_error *err);
/* The address family of the RDMA traffic: "ipv4", "ipv6" or "auto" (the default: IPv4 if any). */
int rn_nccl_layer_set_family(struct rn_nccl_layer *l, const char *family, struct rn_error *err);
/* The version of the NCCL the job runs ("2.21.5"), when the image does not show it. */
int rn_nccl_layer_set_version(struct rn_nccl_layer *l, const char *version, struct rn_error *err);
bool rn_nccl_name_valid(const char *name);
/* "annotation rdmans.io/nccl", "config /etc/rdmans/nccl.json": source and origin, for messages. */
void rn_nccl_layer_label(const struct rn_nccl_layer *l, char *buf, size_t len);

/* ---- NCCL's own name lists (NCCL_IB_HCA, NCCL_SOCKET_IFNAME) ---- */

/*
 * As NCCL parses them (misc/utils.cc parseStringList, os/linux.cc): a
 * leading '^' excludes, THEN a leading '=' asks for exact names (so an exact
 * exclusion is "^="); entries "name[:port[:rail[:plane]]]" separated by ','.
 * Without '=' every entry matches as a prefix: mlx5_1 also takes mlx5_10.
 */
#define RN_NCCL_LIST_MAX 32

struct rn_nccl_list_entry {
	char name[RN_RDMA_NAME_MAX];
	long port; /* -1: any */
};

struct rn_nccl_list {
	bool exclude, exact;
	size_t n;
	struct rn_nccl_list_entry v[RN_NCCL_LIST_MAX];
};

void rn_nccl_list_parse(const char *value, struct rn_nccl_list *out);
/* Whether NCCL takes `name` (port -1 for a netdev): matchIfList() ^ exclude. */
bool rn_nccl_list_takes(const struct rn_nccl_list *l, const char *name, long port);
/* Whether entry i matches `name` on its own (exact or prefix, port aside). */
bool rn_nccl_list_entry_matches(const struct rn_nccl_list *l, size_t i, const char *name,
				long port);

/* ---- the NCCL version the job runs ---- */

/*
 * What rdmans writes depends on it (NCCL's net_ib GID selection):
 *  <= 2.20      NCCL_IB_GID_INDEX defaults to 0: the index must be written;
 *  2.21-2.26.1  -1 (automatic): the lowest RoCE v2 GID of NCCL_IB_ADDR_FAMILY
 *               inside NCCL_IB_ADDR_RANGE, but an unreadable GID type (an empty
 *               slot of a sparse table, as containers have) aborts the search;
 *  >= 2.26.2    automatic, empty slots skipped (NVIDIA/nccl#1538, #1573).
 */
enum rn_nccl_ver_class {
	RN_NCCL_VER_UNKNOWN = 0,
	RN_NCCL_VER_FIXED, /* <= 2.20 */
	RN_NCCL_VER_AUTO, /* 2.21 .. 2.26.1 */
	RN_NCCL_VER_AUTO_SPARSE, /* >= 2.26.2 */
};

struct rn_nccl_version {
	unsigned major, minor, patch; /* all 0: unknown */
	char where
		[RN_NCCL_ORIGIN_MAX]; /* "/usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5", "--nccl-version" */
};

/* "2.21.5" (also "2.21.5-1", "2.21.5+cuda12.4") -> 0, or -EINVAL. */
int rn_nccl_version_parse(const char *text, struct rn_nccl_version *out, struct rn_error *err);
enum rn_nccl_ver_class rn_nccl_version_class(const struct rn_nccl_version *v);
/* "NCCL <= 2.20 (GID index 0 unless NCCL_IB_GID_INDEX)", ..., for --explain. */
const char *rn_nccl_ver_class_desc(enum rn_nccl_ver_class c);

/* ---- resolve ---- */

struct rn_nccl_request {
	const struct rn_nccl_layer *layers; /* precedence by source; equal sources: later wins */
	size_t n_layers;
	/*
	 * Only values that do not depend on a pod's address or netdevs (CDI
	 * specs, written before any pod exists, whose env beats the pod's
	 * /etc/nccl.conf): profile values, NCCL_IB_ADDR_* for addr_range and
	 * the layers, less every rn_nccl_pod_dependent() name. The node, when
	 * given, only picks the "auto" profile.
	 */
	bool node_static;
	const char *addr_range; /* node_static: the pool's CIDR (IPv4 or IPv6), or NULL */
	/* the image's NCCL, as rn_nccl_version_find() saw it; NULL or all 0 when unknown */
	const struct rn_nccl_version *nccl_version;
	const char *nccl_version_note; /* why it is unknown ("no libnccl in ..."), or NULL */
	/*
	 * No usable RDMA port is fine (rdmans.io/nccl-conf: sockets): instead
	 * of -ENODEV, NCCL_IB_DISABLE=1, the profile's values less NCCL_IB_*,
	 * and a warning saying why NCCL runs over sockets. sockets_origin
	 * names who asked, for the settings' origin.
	 */
	bool sockets_ok;
	const char *sockets_origin;
	/*
	 * The container's GPUs (their PCI functions; n_gpus 0: none known):
	 * NCCL_IB_HCA keeps the RDMA device rn_rails_choose() gives each of
	 * them, nearest first, so two containers of one pod get their own rails.
	 */
	const struct rn_sysfs_pci_fn *gpus;
	size_t n_gpus;
};

struct rn_nccl_setting {
	char name[RN_NCCL_NAME_MAX];
	char value[RN_NCCL_VALUE_MAX];
	enum rn_nccl_source source;
	char origin
		[RN_NCCL_ORIGIN_MAX]; /* "profile scnet", "detected", "annotation rdmans.io/nccl" */
	char detail[RN_NCCL_DETAIL_MAX]; /* why this value, "" when the origin says it all */
	char replaced[RN_NCCL_DETAIL_MAX]; /* what it replaced: "profile scnet: 3", or "" */
};

enum rn_nccl_gid_status {
	RN_NCCL_GID_NA = 0, /* not RoCE: NCCL needs no GID index */
	RN_NCCL_GID_FOUND, /* the RoCE v2 GID of the netdev's address (of the chosen family) */
	RN_NCCL_GID_NO_ADDR, /* the netdev has no address of the chosen family */
	RN_NCCL_GID_NO_MATCH, /* it has one, but no RoCE v2 GID holds it (yet) */
};

struct rn_nccl_port_use {
	char dev[RN_RDMA_NAME_MAX];
	uint32_t port;
	bool used; /* in NCCL_IB_HCA */
	bool off_rail; /* usable, but not the device nearest to one of the container's GPUs */
	unsigned rail; /* 1, 2, ...: its rank among the container's rails; 0: no rail */
	char why_not[RN_NCCL_DETAIL_MAX]; /* when not used */
	enum rn_nccl_gid_status gid_status;
	int gid_index; /* RN_NCCL_GID_FOUND: the index */
	char gid_addr
		[RN_CIDR_MAX]; /* RN_NCCL_GID_FOUND: the address it holds, "a.b.c.d/nn", "x::y/nn" */
	char netdev[IF_NAMESIZE];
};

struct rn_nccl_result {
	char profile[RN_NCCL_PROFILE_MAX];
	char profile_origin
		[RN_NCCL_ORIGIN_MAX]; /* "auto: every port is Ethernet", "annotation ..." */
	int family; /* AF_INET or AF_INET6: the family of the RoCE addresses used */
	char family_why[RN_NCCL_DETAIL_MAX];
	struct rn_nccl_version version; /* the NCCL the settings are for (all 0: unknown) */
	enum rn_nccl_ver_class ver_class;
	char version_why[RN_NCCL_DETAIL_MAX]; /* where it was seen, or why it is unknown */
	size_t n;
	struct rn_nccl_setting
		*v; /* in a fixed order: IB_DISABLE, IB_HCA, GID, ADDR_*, SOCKET, rest */
	size_t n_unset;
	struct rn_nccl_setting *unset; /* removed by a layer: value = what it was */
	size_t n_ports;
	struct rn_nccl_port_use *ports;
	size_t n_warnings;
	char (*warnings)[RN_NCCL_DETAIL_MAX];
	bool sockets; /* no usable RDMA port, sockets allowed: NCCL_IB_DISABLE=1 */
	char rails[RN_NCCL_DETAIL_MAX]; /* each GPU's RDMA device, when the GPUs chose them */
};

void rn_nccl_result_free(struct rn_nccl_result *res);
static inline void rn_nccl_result_freep(struct rn_nccl_result *res)
{
	rn_nccl_result_free(res);
}
#define _cleanup_nccl_result_ _cleanup_(rn_nccl_result_freep)

/* The setting called name, or NULL. */
const struct rn_nccl_setting *rn_nccl_result_get(const struct rn_nccl_result *res,
						 const char *name);
/* Sets name=value from `origin`; a value it replaces is remembered for --explain. -ENOMEM. */
int rn_nccl_result_put(struct rn_nccl_result *res, const char *name, const char *value,
		       enum rn_nccl_source source, const char *origin, const char *detail);
/* Removes name; what it was goes to res->unset (with `origin` as the remover). -ENOMEM. */
int rn_nccl_result_drop(struct rn_nccl_result *res, const char *name, const char *origin,
			const char *detail);
/* Adds a warning. -ENOMEM. */
int rn_nccl_result_warn(struct rn_nccl_result *res, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Puts the settings in their fixed order (IB_DISABLE, IB_HCA, GID, ADDR_*, SOCKET, rest). */
void rn_nccl_result_sort(struct rn_nccl_result *res);

/*
 * "a.b.c.d/nn" or "x::y/nn" (no prefix: a host address) -> family, the
 * address as 16 bytes (IPv4 mapped), the prefix length; -EINVAL otherwise.
 */
int rn_nccl_cidr_parse(const char *cidr, int *family, uint8_t raw[16], int *plen);

#endif
