/* SPDX-License-Identifier: Apache-2.0 */
/* rdma-netns on the CNI skeleton (plugin.c). */
#ifndef RDMANS_CNI_PLUGIN_H
#define RDMANS_CNI_PLUGIN_H

/* The plugin's main, on the CNI skeleton (rn_cni_main). */
int cni_main(void);

#endif
