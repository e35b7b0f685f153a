/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ib_core's netns mode at the next boot: the module option netns_mode from
 * the kernel command line or modprobe.d, and writing it there.
 * `root` prefixes every path ("" on a real system; a temp dir in tests).
 */
#ifndef RDMANS_SYSTEM_H
#define RDMANS_SYSTEM_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "rdmans/error.h"

#define RN_MODPROBE_CONF "/etc/modprobe.d/rdmans-ib_core.conf"

enum rn_boot_mode {
	RN_BOOT_DEFAULT = 0, /* nothing configured: ib_core starts shared */
	RN_BOOT_SHARED,
	RN_BOOT_EXCLUSIVE,
};

struct rn_boot_config {
	enum rn_boot_mode mode;
	char source
		[PATH_MAX]; /* the file (or "/proc/cmdline") that decided it, "" for the default */
};

int rn_system_boot_config(const char *root, struct rn_boot_config *out, struct rn_error *err);
const char *rn_boot_mode_name(enum rn_boot_mode mode);

/* Writes RN_MODPROBE_CONF under root atomically; ret_path gets the file written. */
int rn_system_persist_netns_mode(const char *root, bool exclusive, char *ret_path, size_t len,
				 struct rn_error *err);

/*
 * Processes that need shared netns mode, whose RDMA stops working in
 * exclusive mode: k8s-rdma-shared-dev-plugin (NVIDIA network-operator's
 * shared RDMA device plugin, binary k8s-rdma-shared-dp) hands every pod the
 * same devices. Scans PROC_ROOT (NULL: /proc); 0 with "" when none, else 0
 * with "NAME (PID N)[, ...]" in buf, cut to fit; -errno when /proc cannot be read.
 */
int rn_system_shared_consumers(const char *proc_root, char *buf, size_t len, struct rn_error *err);

/*
 * The one refusal of an RDMA device move in shared netns mode, as `rdmans
 * move` and rdma-netns ADD say it: -EOPNOTSUPP with what to do.
 */
int rn_system_refuse_shared(const char *dev, struct rn_error *err);

#endif
