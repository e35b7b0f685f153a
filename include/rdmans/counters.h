/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Counters and link state of every RDMA port in every network namespace:
 * what `rdmans exporter` serves. Sources, per port:
 *   - RDMA netlink statistics (RDMA_NLDEV_CMD_STAT_GET), read through a
 *     socket opened in the port's netns;
 *   - sysfs ports/P/hw_counters (the same hw_stats; names netlink lacks are
 *     added), ports/P/counters (the IB PMA counters), ports/P/rate, and the
 *     device-wide DEV/hw_counters;
 *   - the port's facts (rn_sysfs_port_read()) and its bound netdev's, decided
 *     by the one rule (rn_port_netdev_decide()).
 * sysfs is read under rn_sysfs_root(); for another netns, through a sysfs
 * instance made for it and mounted nowhere (rn_netns_sysfs_fd(); without
 * fsmount(), rn_netns_run_sysfs()), since devices that moved into a pod are
 * invisible to the host's sysfs.
 */
#ifndef RDMANS_COUNTERS_H
#define RDMANS_COUNTERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "rdmans/cleanup.h"
#include "rdmans/error.h"
#include "rdmans/netns.h"
#include "rdmans/rdma_nl.h"
#include "rdmans/sysfs.h"
#include "rdmans/sysfs_port.h"

struct rn_counter {
	char name[64];
	uint64_t value;
};

/* A growable list of named counters; names are unique within one list. */
struct rn_counters {
	size_t n, cap;
	struct rn_counter *v;
};

void rn_counters_free(struct rn_counters *c);
/* Adds name=value, or replaces the value when name is there already. */
int rn_counters_set(struct rn_counters *c, const char *name, uint64_t value);
/* Adds name=value only when name is not there yet. */
int rn_counters_add_new(struct rn_counters *c, const char *name, uint64_t value);
const struct rn_counter *rn_counters_find(const struct rn_counters *c, const char *name);
/* Sorts by name (the renderer's order). */
void rn_counters_sort(struct rn_counters *c);

/*
 * Reads counter set `set` ("hw_counters", "counters") of port `port` of
 * `dev` (port 0: the device's own) into *c, without replacing names already
 * there (rn_sysfs_counters_read(): a missing set is an empty one, unreadable
 * files are skipped).
 */
int rn_counters_read_sysfs(const char *dev, uint32_t port, const char *set, struct rn_counters *c,
			   struct rn_error *err);

struct rn_port_metrics {
	uint32_t port;
	uint8_t state; /* IB_PORT_*, 0 unknown */
	uint8_t phys_state;
	/* RDMA netlink's word on the bound netdev (rn_rdma_port_binding()), UNKNOWN when none */
	enum rn_rdma_binding netdev_binding;
	/*
	 * The bound netdev (port_netdev.h): its name, "" when none, its mtu (-1
	 * unknown) and oper_up (operstate "up", the exporter's
	 * rdmans_port_netdev_up: 1, 0; -1 unknown). Netlink's name (HERE) until
	 * the sysfs read.
	 */
	struct rn_sysfs_netdev netdev;
	char link_layer[16];
	char rate[64]; /* sysfs text: "100 Gb/sec (4X EDR)" */
	uint64_t rate_bps; /* bits per second, 0 unknown */
	struct rn_counters hw; /* netlink statistics and sysfs hw_counters */
	struct rn_counters pma; /* sysfs counters/ */
};

struct rn_dev_metrics {
	char name[RN_RDMA_NAME_MAX];
	uint32_t index;
	char fw[64];
	char protocol[16];
	uint64_t node_guid;
	size_t ns; /* index into rn_scrape.ns */
	struct rn_counters hw; /* device-wide DEV/hw_counters */
	size_t nports;
	struct rn_port_metrics *ports;
};

struct rn_ns_metrics {
	char label[NAME_MAX + 32]; /* "host", the /var/run/netns name, or "net:[INODE]" */
	pid_t pid; /* a process in it, 0 if none */
	char pod[256]; /* from the CNI plugin's state, "" when unknown */
	char pod_namespace[256];
	char container[128];
	bool failed; /* it could not be read (it may have vanished meanwhile) */
	int error_code; /* errno */
	char error[256];
};

struct rn_scrape {
	size_t nns;
	struct rn_ns_metrics *ns;
	size_t ndevs;
	struct rn_dev_metrics *devs;
	bool exclusive; /* ib_core netns mode */
	bool rdma; /* the kernel has RDMA netlink */
	char rdma_error[256]; /* why not, when !rdma */
	unsigned ns_failed; /* namespaces that could not be read */
	double seconds; /* how long the scrape took */
};

/* A failed namespace's reason in a few fixed words (a label): gone, permission, other. */
const char *rn_scrape_failure_reason(const struct rn_ns_metrics *m);
void rn_scrape_free(struct rn_scrape *s);
static inline void rn_scrape_freep(struct rn_scrape *s)
{
	rn_scrape_free(s);
}
#define _cleanup_scrape_ _cleanup_(rn_scrape_freep)

/*
 * Fills the sysfs part of a port (counters, rate, link layer, netdev MTU
 * and state) of device `dev`, read under rn_sysfs_root() in the caller's
 * mount namespace. pm->port must be set, and pm->netdev_binding with
 * pm->netdev.name when RDMA netlink gave them: the bound netdev is then
 * decided by the one rule (rn_port_netdev_decide()) and its facts read.
 */
int rn_port_metrics_read_sysfs(const char *dev, struct rn_port_metrics *pm, struct rn_error *err);

/*
 * Devices and ports as the caller's sysfs shows them (no netlink): each
 * device of class/infiniband with its ports, states and counters, tagged
 * with namespace `ns` (appended to out->ns). For hosts and tests where
 * netlink is not there; rn_scrape_all() uses netlink for the device list.
 */
int rn_scrape_sysfs(struct rn_scrape *out, const char *ns_label, struct rn_error *err);

struct rn_scrape_options {
	/* The CNI plugin's state (cni_state.h), for pod labels: NULL RN_CNI_STATE_DIR, "" none. */
	const char *cni_state_dir;
};

/*
 * Every port of every device in every network namespace reachable through
 * rn_netns_list() (in shared mode: the host's list, which is all). A
 * namespace that fails to read is marked failed and skipped. A kernel
 * without RDMA netlink is no error: out->rdma is false and the list empty.
 * opts may be NULL.
 */
int rn_scrape_all(const struct rn_scrape_options *opts, struct rn_scrape *out,
		  struct rn_error *err);

#endif
