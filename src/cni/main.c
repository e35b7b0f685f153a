// SPDX-License-Identifier: Apache-2.0
/*
 * rdma-netns: a CNI plugin that moves a netdev and its RDMA devices into a
 * pod (main mode) or the RDMA devices behind the interface a previous
 * plugin created (chained mode), and brings them back on DEL. See
 * rdma-netns(8).
 *
 * The runtime calls it with CNI_* in the environment and the network
 * configuration on stdin; it answers on stdout.
 */
#include "plugin.h"

int main(void)
{
	return cni_main();
}
