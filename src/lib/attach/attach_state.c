// SPDX-License-Identifier: Apache-2.0
/*
 * The owner of a device among the state files, and the per-device lock
 * files (attach_state.h). A plan's keys in the state file are cni_state.c's,
 * as every key is: the file has one reader and one writer, and the plan is a
 * field of the struct they fill.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "rdmans/attach.h"
#include "rdmans/attach_state.h"
#include "rdmans/cni_state.h"
#include "rdmans/sysfs_kernel.h"
#include "rdmans/util.h"

/* ---- ownership and locks ---- */

/* The devices of a damaged file count too, as far as it reads (rn_cni_attachment_read()). */
static bool state_claims(const struct rn_cni_attachment *att, const struct rn_attach_plan *plan,
			 const struct rn_attach_select *sel)
{
	const struct rn_attach_plan *held = &att->plan;

	for (size_t i = 0; i < held->n_netdevs && i < RN_ATTACH_MAX; i++) {
		const char *mac = held->netdevs[i].mac;
		const char *name = held->netdevs[i].name;

		for (size_t k = 0; *mac && plan && k < plan->n_netdevs; k++)
			if (strcasecmp(mac, plan->netdevs[k].mac) == 0)
				return true;
		if (sel && sel->hwaddr && strcasecmp(mac, sel->hwaddr) == 0)
			return true;
		if (sel && sel->netdev && strcmp(name, sel->netdev) == 0)
			return true;
	}
	for (size_t i = 0; i < held->n_rdma && i < RN_ATTACH_MAX; i++) {
		const char *name = held->rdma[i];

		if (plan && rn_attach_plan_has_rdma(plan, name))
			return true;
		if (sel && sel->rdma_dev && strcmp(name, sel->rdma_dev) == 0)
			return true;
	}
	return sel && sel->bus_id && strcmp(held->bus_id, sel->bus_id) == 0;
}

int rn_attach_find_owner(const char *dir, const char *self, const struct rn_attach_plan *plan,
			 const struct rn_attach_select *sel, char *ret_name, size_t len,
			 struct rn_cni_attachment *ret_att, struct rn_error *err)
{
	struct rn_error rerr = { 0 };
	char **names = NULL, this_boot[64] = "";
	size_t n = 0;
	int r, found = 0;

	r = rn_cni_state_list(dir, &names, &n, err);
	if (r < 0)
		return r;
	(void)rn_kernel_boot_id(this_boot, sizeof(this_boot));
	for (size_t i = 0; i < n && !found; i++) {
		_cleanup_cni_attachment_ struct rn_cni_attachment att = { 0 };

		if (self && strcmp(names[i], self) == 0)
			continue;
		r = rn_cni_attachment_read(dir, names[i], &att, &rerr);
		if (r == -ENOENT) {
			r = 0; /* a DEL removed it meanwhile */
			continue;
		}
		if (r < 0 && r != -EBADMSG) {
			/* it may claim the device: taking it could take another pod's */
			r = rn_error_set(
				err, -r,
				"cannot tell whether another pod holds the device: %s (DEL of "
				"that attachment removes it; remove it by hand only when no "
				"pod uses it)",
				rerr.msg);
			break;
		}
		r = 0;
		/* a reboot undid what a file of an older boot describes */
		if (rn_cni_attachment_older_boot(&att, this_boot) || !state_claims(&att, plan, sel))
			continue;
		found = 1;
		if (ret_name)
			(void)rn_strscpy(ret_name, len, names[i]);
		if (ret_att) {
			*ret_att = att;
			att = (struct rn_cni_attachment){ 0 };
		}
	}
	rn_cni_state_names_free(names, n);
	return r < 0 ? r : found;
}

struct lock_keys {
	size_t n;
	char v[2 * RN_ATTACH_MAX][96];
};

static int cmp_key(const void *a, const void *b)
{
	return strcmp(a, b);
}

static void lock_keys_of(const struct rn_attach_plan *plan, struct lock_keys *k)
{
	k->n = 0;
	for (size_t i = 0; i < plan->n_rdma; i++)
		snprintf(k->v[k->n++], sizeof(k->v[0]), "rdma:%s", plan->rdma[i]);
	/* chained: the netdev is the previous plugin's (and a new MAC per pod: no lock file each) */
	for (size_t i = 0; !plan->chained && i < plan->n_netdevs; i++) {
		char mac[18];

		(void)rn_strscpy(mac, sizeof(mac), plan->netdevs[i].mac);
		for (char *p = mac; *p; p++)
			if (*p >= 'A' && *p <= 'F')
				*p = (char)(*p - 'A' + 'a');
		snprintf(k->v[k->n++], sizeof(k->v[0]), "mac:%s", mac[0] ? mac : "none");
	}
	qsort(k->v, k->n, sizeof(k->v[0]), cmp_key);
}

int rn_attach_lock(const char *dir, const struct rn_attach_plan *plan, int timeout_ms, int *fds,
		   size_t *ret_n, struct rn_error *err)
{
	struct lock_keys k;
	int r;

	*ret_n = 0;
	lock_keys_of(plan, &k);
	for (size_t i = 0; i < k.n; i++) {
		char what[160];

		if (i > 0 && strcmp(k.v[i], k.v[i - 1]) == 0)
			continue;
		snprintf(what, sizeof(what), "device %s", k.v[i]);
		r = rn_cni_lock(dir, k.v[i], what, timeout_ms, &fds[*ret_n], err);
		if (r < 0) {
			rn_attach_unlock(fds, *ret_n);
			*ret_n = 0;
			return r;
		}
		(*ret_n)++;
	}
	return 0;
}

bool rn_attach_locks_cover(const struct rn_attach_plan *locked, const struct rn_attach_plan *plan)
{
	struct lock_keys have, need;

	lock_keys_of(locked, &have);
	lock_keys_of(plan, &need);
	for (size_t i = 0; i < need.n; i++) {
		bool found = false;

		for (size_t k = 0; k < have.n && !found; k++)
			found = strcmp(need.v[i], have.v[k]) == 0;
		if (!found)
			return false;
	}
	return true;
}

void rn_attach_unlock(int *fds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (fds[i] >= 0) {
			close(fds[i]);
			fds[i] = -1;
		}
}
