// SPDX-License-Identifier: Apache-2.0
/* The only user of libibverbs. */
#include <errno.h>
#include <infiniband/verbs.h>
#include <string.h>

#include "rdmans/verbs.h"

static unsigned mtu_bytes(enum ibv_mtu mtu)
{
	switch (mtu) {
	case IBV_MTU_256:
		return 256;
	case IBV_MTU_512:
		return 512;
	case IBV_MTU_1024:
		return 1024;
	case IBV_MTU_2048:
		return 2048;
	case IBV_MTU_4096:
		return 4096;
	}
	return 0;
}

int rn_verbs_port_mtu(const char *dev, uint32_t port, unsigned *ret_active, unsigned *ret_max,
		      struct rn_error *err)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	struct ibv_port_attr attr;
	int n = 0, r;

	list = ibv_get_device_list(&n);
	if (!list)
		return rn_error_errno(err, errno, "cannot list verbs devices");
	for (int i = 0; i < n; i++) {
		if (strcmp(ibv_get_device_name(list[i]), dev) != 0)
			continue;
		ctx = ibv_open_device(list[i]);
		if (!ctx) {
			r = errno ? errno : ENODEV;
			ibv_free_device_list(list);
			return rn_error_errno(err, r,
					      "cannot open RDMA device %s through verbs (is "
					      "/dev/infiniband there and ib_uverbs loaded?)",
					      dev);
		}
		break;
	}
	ibv_free_device_list(list);
	if (!ctx)
		return rn_error_set(err, ENOENT,
				    "libibverbs does not list RDMA device %s (no user-space "
				    "provider for its driver?)",
				    dev);
	memset(&attr, 0, sizeof(attr));
	r = ibv_query_port(ctx, (uint8_t)port, &attr);
	ibv_close_device(ctx);
	if (r != 0)
		return rn_error_errno(err, r, "cannot query port %u of RDMA device %s", port, dev);
	*ret_active = mtu_bytes(attr.active_mtu);
	*ret_max = mtu_bytes(attr.max_mtu);
	return 0;
}

unsigned rn_roce_mtu_for_netdev(unsigned netdev_mtu)
{
	/* GRH 40 + UDP 8 + BTH 12 + XRC ext 4 + atomic ext 28 + ICRC 4 (include/rdma/ib_addr.h) */
	const unsigned overhead = 40 + 8 + 12 + 4 + 28 + 4;
	unsigned mtu;

	if (netdev_mtu <= overhead)
		return 0;
	mtu = netdev_mtu - overhead;
	if (mtu >= 4096)
		return 4096;
	if (mtu >= 2048)
		return 2048;
	if (mtu >= 1024)
		return 1024;
	if (mtu >= 512)
		return 512;
	if (mtu >= 256)
		return 256;
	return 0;
}
