/* SPDX-License-Identifier: Apache-2.0 */
/* The two CNI_ARGS parsers (rdma-netns, rdma-netns-ipam), for fuzz-cni-args. */
#ifndef RDMANS_FUZZ_CNI_ARGS_H
#define RDMANS_FUZZ_CNI_ARGS_H

#include "fuzz.h"

/* 0 or a negative value; the pod's namespace and name as the parser took them. */
int fuzz_cni_args_netns(const char *args, char *pod_ns, char *pod_name, size_t len);
int fuzz_cni_args_ipam(const char *args, char *pod_ns, char *pod_name, size_t len);

#endif
