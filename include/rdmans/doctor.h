/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `rdmans doctor`: the manual checks operators run before NCCL over RDMA, as one checklist.
 *
 * Two steps: gather facts (RDMA netlink, sysfs and rtnetlink of the target
 * netns, /proc of the target process), then evaluate the checklist on them.
 * The checklist is data (doctor.c's `checks` table); each check gives
 * PASS/WARN/FAIL (or SKIP when it does not apply) with a message and the fix.
 * Evaluation does no I/O, so tests run it on facts read from fake trees.
 */
#ifndef RDMANS_DOCTOR_H
#define RDMANS_DOCTOR_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "rdmans/cleanup.h"
#include "rdmans/error.h"
#include "rdmans/nccl.h"
#include "rdmans/nccl_process.h"
#include "rdmans/sysfs.h"
#include "rdmans/sysfs_pci.h"
#include "rdmans/sysfs_port.h"
#include "rdmans/system.h"

enum rn_doctor_status {
	RN_DOCTOR_SKIP = 0, /* does not apply (no target process, no RDMA) */
	RN_DOCTOR_PASS,
	RN_DOCTOR_WARN,
	RN_DOCTOR_FAIL,
};

/* "SKIP", "PASS", "WARN", "FAIL" */
const char *rn_doctor_status_name(enum rn_doctor_status s);

struct rn_doctor_result {
	const char *id; /* the check: "netns-mode", "port-state", "nccl-gid-index", ... */
	const char *title; /* what it checks, one line */
	char subject[96]; /* "irdma0/1", "PID 1234", "" for the system */
	enum rn_doctor_status status;
	char message[1024];
	char fix[768]; /* "" when there is nothing to do */
};

struct rn_doctor_report {
	size_t n;
	struct rn_doctor_result *v;
	enum rn_doctor_status worst;
};

void rn_doctor_report_free(struct rn_doctor_report *r);
static inline void rn_doctor_report_freep(struct rn_doctor_report *r)
{
	rn_doctor_report_free(r);
}
#define _cleanup_doctor_report_ _cleanup_(rn_doctor_report_freep)

/* ---- facts ---- */

#define RN_DOCTOR_MAX_ADDRS 16
#define RN_DOCTOR_UNLIMITED UINT64_MAX

struct rn_doctor_port {
	char dev[RN_RDMA_NAME_MAX];
	uint32_t port;
	char link_layer[16]; /* "Ethernet", "InfiniBand" */
	bool iwarp; /* its device is an RNIC: Ethernet, but no RoCE GIDs */
	uint8_t state; /* IB_PORT_*, 0 unknown */
	uint8_t phys_state;
	struct rn_sysfs_netdev netdev; /* the bound netdev in the target netns (port_netdev.h) */
	unsigned active_mtu, max_mtu; /* IB MTU in bytes, 0 unknown */
	char mtu_note[256]; /* why active_mtu is unknown */
	size_t naddrs;
	char addrs[RN_DOCTOR_MAX_ADDRS][64]; /* the netdev's addresses, "a.b.c.d/nn", "x::y/nn" */
	bool addrs_known; /* read (rtnetlink), or given by a test */
	unsigned gid_tbl_len; /* slots in the GID table (gids/N files) */
	char uverbs[32]; /* "uverbs0", "" when none found */
	unsigned uverbs_major, uverbs_minor;
};

enum rn_doctor_node_state {
	RN_DOCTOR_NODE_UNKNOWN = 0, /* device has no uverbs */
	RN_DOCTOR_NODE_OK,
	RN_DOCTOR_NODE_MISSING,
	RN_DOCTOR_NODE_NOT_CHR, /* exists, but not a character device */
	RN_DOCTOR_NODE_WRONG_DEV, /* a character device with other numbers */
};

struct rn_doctor_process {
	pid_t pid;
	char comm[64];
	bool memlock_known;
	uint64_t memlock_soft, memlock_hard; /* bytes, RN_DOCTOR_UNLIMITED */
	int cap_ipc_lock; /* 1, 0, -1 unknown */
	char read_error[256]; /* what could not be read about it */
	bool devdir; /* /dev/infiniband exists in its mount namespace */
	bool rdma_cm; /* /dev/infiniband/rdma_cm there */
	/* per port (same order as facts.ports): its device's uverbs node */
	enum rn_doctor_node_state *nodes;
	/* effective NCCL_* settings: environment first, then nccl.conf files */
	struct rn_nccl_process nccl;
};

/* An RDMA device of the target with its PCI function (GPU-NIC affinity). */
struct rn_doctor_hca {
	char dev[RN_RDMA_NAME_MAX];
	struct rn_sysfs_pci_fn pci;
};

/* GPUDirect RDMA readiness: what the kernel and the NVIDIA driver offer. */
struct rn_doctor_gdr {
	bool nvidia; /* the nvidia module is loaded */
	char nvidia_version[32]; /* /sys/module/nvidia/version */
	bool open_module; /* "Open Kernel Module" in /proc/driver/nvidia/version */
	bool peermem; /* nvidia_peermem (or the older nv_peer_mem) loaded */
	char kernel[64]; /* the kernel release */
};

struct rn_doctor_facts {
	/* system */
	int rdma_nl; /* 0, or -errno of opening RDMA netlink */
	char rdma_nl_msg[512];
	int mode; /* 1 exclusive, 0 shared, -1 unknown */
	bool boot_known;
	struct rn_boot_config boot;
	char boot_msg[256];
	/* the target netns */
	char target[PATH_MAX + 64]; /* "netns 'pod1'", "the netns of PID 42" */
	bool target_is_host;
	int netns_error; /* reading it failed: -errno, message in netns_msg */
	char netns_msg[512];
	size_t nports;
	struct rn_doctor_port *ports;
	struct rn_gid_table gids;
	struct rn_nccl_node node; /* for the resolver */
	bool node_ok;
	char node_msg[512];
	/* GPUs (NVIDIA, display/3D class) on the PCI bus, the target's RDMA devices' functions,
	 * and the network functions of the machine (candidates not in the target) */
	size_t ngpus;
	struct rn_sysfs_pci_fn *gpus;
	size_t nhcas;
	struct rn_doctor_hca *hcas;
	size_t nnics;
	struct rn_sysfs_pci_fn *nics;
	struct rn_doctor_gdr gdr;
	/* the target process */
	bool have_process;
	struct rn_doctor_process proc;
	/* override layers for the resolver, as `rdmans env` takes them (not owned) */
	const struct rn_nccl_layer *nccl_layers;
	size_t n_nccl_layers;
};

void rn_doctor_facts_free(struct rn_doctor_facts *f);
static inline void rn_doctor_facts_freep(struct rn_doctor_facts *f)
{
	rn_doctor_facts_free(f);
}
#define _cleanup_doctor_facts_ _cleanup_(rn_doctor_facts_freep)

/*
 * The target netns part from sysfs (rn_sysfs_root(), as the caller's mount
 * namespace shows it): devices, ports, states, bound netdevs (the one rule of
 * rn_sysfs_port_read()), their class/net attributes, GID tables, uverbs
 * nodes, and the resolver's node, every port and GID table read once
 * (rn_sysfs_rdma_facts_read()). Addresses are not in sysfs:
 * rn_doctor_facts_add_addr().
 */
int rn_doctor_facts_from_sysfs(struct rn_doctor_facts *f, struct rn_error *err);
/*
 * GPUDirect RDMA facts: modules under rn_sysfs_root()/module, the driver's
 * PROC/driver/nvidia/version and PROC/sys/kernel/osrelease (proc_root: "/proc").
 */
void rn_doctor_facts_gdr(struct rn_doctor_facts *f, const char *proc_root);
/* Records address cidr ("a.b.c.d/nn" or "x::y/nn") of netdev (ports and the resolver's node). */
int rn_doctor_facts_add_addr(struct rn_doctor_facts *f, const char *netdev, const char *cidr,
			     struct rn_error *err);

/*
 * Appends a check made outside the checklist (`doctor --peer`: rdmans ping,
 * whose library the core does not link) and keeps `worst` right. -ENOMEM.
 */
int rn_doctor_report_add(struct rn_doctor_report *r, const struct rn_doctor_result *c,
			 struct rn_error *err);

/* ---- the whole run ---- */

struct rn_doctor_target {
	const char *netns; /* as rn_netns_open_target() takes it; NULL: see pid */
	pid_t pid; /* the process to check (its netns too); 0 with netns NULL: the caller */
	const char *config_root; /* prefix of /etc/modprobe.d and /proc/cmdline, "" normally */
	/* the NCCL resolver's override layers (config file, CNI config, options), as `rdmans env` */
	const struct rn_nccl_layer *nccl_layers;
	size_t n_nccl_layers;
};

/* Whether the port's link layer is Ethernet (RoCE). */
bool rn_doctor_port_ethernet(const struct rn_doctor_port *p);

/* Gathers the facts of the target (joining its netns as needed) and evaluates them. */
int rn_doctor_run(const struct rn_doctor_target *t, struct rn_doctor_facts *facts,
		  struct rn_doctor_report *out, struct rn_error *err);

#endif
