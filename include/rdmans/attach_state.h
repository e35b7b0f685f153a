/* SPDX-License-Identifier: Apache-2.0 */
/* The owner of a device among rdma-netns's state files, and the device locks (attach_state.c). */
#ifndef RDMANS_ATTACH_STATE_H
#define RDMANS_ATTACH_STATE_H

#include <stdbool.h>
#include <stddef.h>

#include "rdmans/attach.h"
#include "rdmans/cni_state.h"
#include "rdmans/error.h"

/*
 * Finds the state file in dir (other than `self`) that claims a device of
 * the plan (RDMA device name, netdev MAC) or of the selection (netdev name,
 * MAC, RDMA device, bus id). 1 and its name/state when found, 0 when none;
 * a state file that cannot be read is an error (it may be the owner), one
 * whose devices are damaged claims those it names. A file of an older boot
 * claims nothing (rn_cni_attachment_older_boot()).
 */
int rn_attach_find_owner(const char *dir, const char *self, const struct rn_attach_plan *plan,
			 const struct rn_attach_select *sel, char *ret_name, size_t len,
			 struct rn_cni_attachment *ret_att, struct rn_error *err);

/*
 * Takes the per-device locks of the plan (dir/locks/rdma:NAME, and in main
 * mode dir/locks/mac:MAC of each netdev) in a fixed order. fds gets up to
 * 2 * RN_ATTACH_MAX.
 */
int rn_attach_lock(const char *dir, const struct rn_attach_plan *plan, int timeout_ms, int *fds,
		   size_t *ret_n, struct rn_error *err);
/* True when every lock `plan` needs is among those `locked` took. */
bool rn_attach_locks_cover(const struct rn_attach_plan *locked, const struct rn_attach_plan *plan);
void rn_attach_unlock(int *fds, size_t n);

#endif
