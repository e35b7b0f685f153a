// SPDX-License-Identifier: Apache-2.0
/*
 * An attachment's plan in its state file, the owner of a device among the
 * state files, and the per-device lock files (attach_state.h): what rdma-netns
 * keeps on disk about attach.c's plans.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "rdmans/attach.h"
#include "rdmans/attach_state.h"
#include "rdmans/cni_state.h"
#include "rdmans/discover.h"
#include "rdmans/gid.h"
#include "rdmans/link.h"
#include "rdmans/move.h"
#include "rdmans/netns.h"
#include "rdmans/rdma_nl.h"
#include "rdmans/sysfs.h"
#include "rdmans/sysfs_kernel.h"
#include "rdmans/util.h"

/* ---- state ---- */

int rn_attach_plan_save(const struct rn_attach_plan *plan, struct rn_cni_state *st,
			struct rn_error *err)
{
	char key[64];
	int r;

#define SET(k, ...)                                                                                \
	do {                                                                                       \
		r = rn_cni_state_setf(st, err, k, __VA_ARGS__);                                    \
		if (r < 0)                                                                         \
			return r;                                                                  \
	} while (0)
/* "PREFIX.I.FIELD" */
#define SETI(prefix, field, ...)                                                                   \
	do {                                                                                       \
		snprintf(key, sizeof(key), "%s.%zu.%s", prefix, i, field);                         \
		SET(key, __VA_ARGS__);                                                             \
	} while (0)

	SET("mode", "%s", plan->chained ? "chained" : "main");
	if (plan->bus_id[0])
		SET("bus_id", "%s", plan->bus_id);
	SET("rdma_kernel", "%d", plan->rdma_kernel);
	SET("netdevs", "%zu", plan->n_netdevs);
	for (size_t i = 0; i < plan->n_netdevs; i++) {
		const struct rn_attach_netdev *nd = &plan->netdevs[i];

		SETI("netdev", "name", "%s", nd->name);
		SETI("netdev", "pod_name", "%s", nd->pod_name);
		SETI("netdev", "mac", "%s", nd->mac);
		SETI("netdev", "ifindex", "%d", nd->ifindex);
		SETI("netdev", "kind", "%s", nd->kind);
		SETI("netdev", "alias", "%s", nd->alias);
		SETI("netdev", "up", "%d", nd->was_up);
		if (nd->ipoib) {
			char gid[INET6_ADDRSTRLEN];

			SETI("netdev", "ib_gid", "%s",
			     inet_ntop(AF_INET6, nd->ib_gid, gid, sizeof(gid)));
		}
	}
	SET("rdma", "%zu", plan->n_rdma);
	for (size_t i = 0; i < plan->n_rdma; i++)
		SETI("rdma", "name", "%s", plan->rdma[i]);
#undef SETI
#undef SET
	return 0;
}

static int load_count(const struct rn_cni_state *st, const char *key, size_t *ret,
		      struct rn_error *err)
{
	unsigned long v = 0;
	int r = rn_cni_state_get_uint(st, key, &v);

	if (r == -ENOENT) {
		*ret = 0;
		return 0;
	}
	if (r < 0 || v > RN_ATTACH_MAX)
		return rn_error_set(err, EINVAL, "state: bad value for '%s'", key);
	*ret = v;
	return 0;
}

int rn_attach_plan_load(const struct rn_cni_state *st, struct rn_attach_plan *plan,
			struct rn_error *err)
{
	const char *mode = rn_cni_state_get(st, "mode");
	const char *v;
	int r;

	memset(plan, 0, sizeof(*plan));
	plan->chained = mode && strcmp(mode, "chained") == 0;
	(void)rn_strscpy(plan->bus_id, sizeof(plan->bus_id), rn_cni_state_get(st, "bus_id"));
	v = rn_cni_state_get(st, "rdma_kernel");
	plan->rdma_kernel = !v || strcmp(v, "0") != 0;
	plan->exclusive = true;
	r = load_count(st, "netdevs", &plan->n_netdevs, err);
	if (r < 0)
		return r;
	r = load_count(st, "rdma", &plan->n_rdma, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < plan->n_netdevs; i++) {
		struct rn_attach_netdev *nd = &plan->netdevs[i];

		(void)rn_strscpy(nd->name, sizeof(nd->name),
				 rn_cni_state_geti(st, "netdev", i, "name"));
		(void)rn_strscpy(nd->pod_name, sizeof(nd->pod_name),
				 rn_cni_state_geti(st, "netdev", i, "pod_name"));
		(void)rn_strscpy(nd->mac, sizeof(nd->mac),
				 rn_cni_state_geti(st, "netdev", i, "mac"));
		(void)rn_strscpy(nd->kind, sizeof(nd->kind),
				 rn_cni_state_geti(st, "netdev", i, "kind"));
		(void)rn_strscpy(nd->alias, sizeof(nd->alias),
				 rn_cni_state_geti(st, "netdev", i, "alias"));
		v = rn_cni_state_geti(st, "netdev", i, "ifindex");
		nd->ifindex = v ? atoi(v) : 0;
		v = rn_cni_state_geti(st, "netdev", i, "up");
		nd->was_up = v && strcmp(v, "1") == 0;
		v = rn_cni_state_geti(st, "netdev", i, "ib_gid");
		if (v) {
			if (rn_gid_parse(v, nd->ib_gid, NULL) < 0)
				return rn_error_set(err, EINVAL,
						    "state: netdev %zu has a bad ib_gid", i);
			nd->ipoib = true;
		}
		if (rn_name_check("netdev", nd->name, IF_NAMESIZE - 1, NULL) < 0 ||
		    rn_name_check("netdev", nd->pod_name, IF_NAMESIZE - 1, NULL) < 0)
			return rn_error_set(err, EINVAL, "state: netdev %zu has no valid name", i);
	}
	for (size_t i = 0; i < plan->n_rdma; i++) {
		(void)rn_strscpy(plan->rdma[i], RN_RDMA_NAME_MAX,
				 rn_cni_state_geti(st, "rdma", i, "name"));
		if (rn_name_check("RDMA device", plan->rdma[i], RN_RDMA_NAME_MAX - 1, NULL) < 0)
			return rn_error_set(err, EINVAL, "state: RDMA device %zu has no valid name",
					    i);
	}
	return 0;
}

/* ---- ownership and locks ---- */

static bool state_claims(const struct rn_cni_state *st, const struct rn_attach_plan *plan,
			 const struct rn_attach_select *sel)
{
	unsigned long n_nd = 0, n_rd = 0;
	const char *bus = rn_cni_state_get(st, "bus_id");

	(void)rn_cni_state_get_uint(st, "netdevs", &n_nd);
	(void)rn_cni_state_get_uint(st, "rdma", &n_rd);
	for (size_t i = 0; i < n_nd && i < RN_ATTACH_MAX; i++) {
		const char *mac = rn_cni_state_geti(st, "netdev", i, "mac");
		const char *name = rn_cni_state_geti(st, "netdev", i, "name");

		for (size_t k = 0; mac && *mac && plan && k < plan->n_netdevs; k++)
			if (strcasecmp(mac, plan->netdevs[k].mac) == 0)
				return true;
		if (sel && sel->hwaddr && mac && strcasecmp(mac, sel->hwaddr) == 0)
			return true;
		if (sel && sel->netdev && name && strcmp(name, sel->netdev) == 0)
			return true;
	}
	for (size_t i = 0; i < n_rd && i < RN_ATTACH_MAX; i++) {
		const char *name = rn_cni_state_geti(st, "rdma", i, "name");

		if (!name)
			continue;
		if (plan && rn_attach_plan_has_rdma(plan, name))
			return true;
		if (sel && sel->rdma_dev && strcmp(name, sel->rdma_dev) == 0)
			return true;
	}
	return sel && sel->bus_id && bus && strcmp(bus, sel->bus_id) == 0;
}

int rn_attach_find_owner(const char *dir, const char *self, const struct rn_attach_plan *plan,
			 const struct rn_attach_select *sel, char *ret_name, size_t len,
			 struct rn_cni_state *ret_state, struct rn_error *err)
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
		_cleanup_cni_state_ struct rn_cni_state st = { 0 };

		if (self && strcmp(names[i], self) == 0)
			continue;
		r = rn_cni_state_read(dir, names[i], &st, &rerr);
		if (r == -ENOENT)
			continue; /* a DEL removed it meanwhile */
		if (r < 0) {
			/* it may claim the device: taking it could take another pod's */
			r = rn_error_set(
				err, -r,
				"cannot tell whether another pod holds the device: %s (DEL of "
				"that attachment removes it; remove it by hand only when no "
				"pod uses it)",
				rerr.msg);
			break;
		}
		/* a reboot undid what a file of an older boot describes */
		if (rn_cni_state_older_boot(&st, this_boot) || !state_claims(&st, plan, sel))
			continue;
		found = 1;
		if (ret_name)
			(void)rn_strscpy(ret_name, len, names[i]);
		if (ret_state) {
			*ret_state = st;
			st = (struct rn_cni_state){ 0 };
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
