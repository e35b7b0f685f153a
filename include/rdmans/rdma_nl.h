/* SPDX-License-Identifier: Apache-2.0 */
/*
 * RDMA netlink client (NETLINK_RDMA, the nldev client). The socket belongs
 * to the netns of the thread that opened it: in exclusive mode it sees only
 * the devices of that netns. Use rn_netns_run() to talk to another netns.
 */
#ifndef RDMANS_RDMA_NL_H
#define RDMANS_RDMA_NL_H

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdmans/cleanup.h"
#include "rdmans/error.h"
#include "rdmans/sysfs.h"

struct rn_rdma;

/* -EPROTONOSUPPORT with an explanation when the kernel has no RDMA netlink. */
int rn_rdma_open(struct rn_rdma **ret, struct rn_error *err);
void rn_rdma_close(struct rn_rdma *rdma);

RN_DEFINE_TRIVIAL_CLEANUP_FUNC(struct rn_rdma *, rn_rdma_close)
#define _cleanup_rdma_ _cleanup_(rn_rdma_closep)

struct rn_rdma_port {
	uint32_t index;
	uint8_t state; /* IB_PORT_*: 1 DOWN, 2 INIT, 3 ARMED, 4 ACTIVE, 5 ACTIVE_DEFER */
	uint8_t phys_state; /* 1 SLEEP, 2 POLLING, 3 DISABLED, 4 TRAINING, 5 LINK_UP, ... */
	uint32_t ndev_index; /* 0 when no netdev is bound */
	char ndev_name[IF_NAMESIZE];
};

struct rn_rdma_dev {
	uint32_t index;
	char name[RN_RDMA_NAME_MAX];
	uint64_t node_guid;
	uint64_t sys_image_guid;
	char fw[64];
	uint8_t node_type;
	char protocol[16]; /* "roce", "ib", "iw", "" when the kernel does not say */
	size_t nports;
	struct rn_rdma_port *ports;
};

struct rn_rdma_devs {
	size_t n;
	struct rn_rdma_dev *devs;
};

void rn_rdma_devs_free(struct rn_rdma_devs *devs);
static inline void rn_rdma_devs_freep(struct rn_rdma_devs *devs)
{
	rn_rdma_devs_free(devs);
}
#define _cleanup_rdma_devs_ _cleanup_(rn_rdma_devs_freep)

/* Every device visible to the socket, with its ports, sorted by index. */
int rn_rdma_dev_dump(struct rn_rdma *rdma, struct rn_rdma_devs *out, struct rn_error *err);
/* One device by name (-ENODEV with a message naming it). *out must be freed with rn_rdma_dev_free(). */
int rn_rdma_dev_find(struct rn_rdma *rdma, const char *name, struct rn_rdma_dev *out,
		     struct rn_error *err);
/* The device named `name` in devs; NULL with -ENODEV in err (may be NULL) when none. */
const struct rn_rdma_dev *rn_rdma_devs_get(const struct rn_rdma_devs *devs, const char *name,
					   struct rn_error *err);
void rn_rdma_dev_free(struct rn_rdma_dev *dev);

/*
 * The one rule for what RDMA netlink says of a port's netdev: the kernel
 * names it only to a socket in the netdev's own netns, so a dump taken in a
 * netns says the port is bound to *ret_name there (HERE), to no netdev there
 * (NOT_HERE: another netns's, or none), or does not list the port (UNKNOWN:
 * sysfs decides, rn_sysfs_port_read()).
 */
enum rn_rdma_binding {
	RN_RDMA_BINDING_UNKNOWN,
	RN_RDMA_BINDING_HERE,
	RN_RDMA_BINDING_NOT_HERE,
};
enum rn_rdma_binding rn_rdma_port_binding(const struct rn_rdma_devs *devs, const char *dev,
					  uint32_t port, const char **ret_name);

const char *rn_rdma_port_state_name(uint8_t state);
const char *rn_rdma_port_phys_state_name(uint8_t phys_state);

/* exclusive = true when devices are bound to one netns (netns_mode=0). */
int rn_rdma_netns_mode_get(struct rn_rdma *rdma, bool *exclusive, struct rn_error *err);
int rn_rdma_netns_mode_set(struct rn_rdma *rdma, bool exclusive, struct rn_error *err);

/* Moves device `index` into the netns of nsfd. The socket must see the device. */
int rn_rdma_dev_set_netns(struct rn_rdma *rdma, uint32_t index, const char *name, int nsfd,
			  struct rn_error *err);
int rn_rdma_dev_rename(struct rn_rdma *rdma, uint32_t index, const char *old_name,
		       const char *new_name, struct rn_error *err);

/* Soft devices: `rdma link add NAME type TYPE netdev NETDEV` and its delete. */
int rn_rdma_link_add(struct rn_rdma *rdma, const char *name, const char *type, const char *netdev,
		     struct rn_error *err);
int rn_rdma_link_del(struct rn_rdma *rdma, uint32_t index, const char *name, struct rn_error *err);

/* Port statistics (RDMA_NLDEV_CMD_STAT_GET, `rdma statistic show link DEV/PORT`). */
struct rn_rdma_stat {
	char name[64];
	uint64_t value;
};

struct rn_rdma_stats {
	size_t n;
	struct rn_rdma_stat *v;
};

/*
 * The hardware counters of one port, as the kernel sums them (its hw_stats
 * plus those of bound QP counters). -EOPNOTSUPP, with err left clear, when
 * the device keeps none (no get_hw_stats, as for simhca). Free with rn_rdma_stats_free().
 */
int rn_rdma_stat_get(struct rn_rdma *rdma, uint32_t dev_index, uint32_t port,
		     struct rn_rdma_stats *out, struct rn_error *err);
void rn_rdma_stats_free(struct rn_rdma_stats *stats);

#endif
