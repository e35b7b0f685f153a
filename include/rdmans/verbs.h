/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What only the verbs interface tells (libibverbs, which stays inside
 * verbs.c): a port's active and maximum MTU. Acts in the netns (and sysfs)
 * of the calling thread, like the rest: wrap it in rn_netns_run_sysfs() to
 * ask about a device in another netns.
 */
#ifndef RDMANS_VERBS_H
#define RDMANS_VERBS_H

#include <stdint.h>

#include "rdmans/error.h"

/*
 * Active and maximum MTU of DEV/PORT in bytes (256..4096). -ENOENT when
 * libibverbs does not list the device (no user-space provider for its
 * driver, as for simhca; or not in this netns).
 */
int rn_verbs_port_mtu(const char *dev, uint32_t port, unsigned *ret_active, unsigned *ret_max,
		      struct rn_error *err);

/* IB MTU of a RoCE port whose netdev has MTU netdev_mtu (the kernel's iboe_get_mtu()); 0 below 256. */
unsigned rn_roce_mtu_for_netdev(unsigned netdev_mtu);

#endif
