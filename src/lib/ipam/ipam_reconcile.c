// SPDX-License-Identifier: Apache-2.0
/*
 * The reconciler (rdmans ipam reconcile): releases this node's addresses
 * whose pod is gone, judged by its network namespace, its container's
 * processes and the record's age; never a record it cannot judge.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rdmans/container.h"
#include "rdmans/ipam_reconcile.h"
#include "rdmans/netns.h"
#include "rdmans/util.h"
#include "ipam_common.h"

/*
 * How old a record is, for the grace: false (age_text says why) when its
 * time cannot show an ADD still in flight: unreadable, or further ahead of
 * this clock than the grace (the clock stepped back, or the record was
 * edited or damaged). Such a time never holds an address: the record is
 * judged as one older than the grace. A time ahead by less than the grace
 * (clocks a little apart) counts as young until the clock passes it by the
 * grace.
 */
static bool record_age(const struct rn_ipam_record *rec, long long now, long grace_s,
		       long long *ret_age, char *age_text, size_t len)
{
	long long t;

	if (!rn_ipam_record_time_parse(rec->time, &t)) {
		snprintf(age_text, len, "its time '%s' is unreadable, so it cannot be young",
			 rec->time);
		return false;
	}
	*ret_age = now - t;
	if (t > now && t - now > grace_s) {
		snprintf(age_text, len,
			 "its time %s is %llds ahead of this clock (stepped back, or the record "
			 "was edited), so it cannot be young",
			 rec->time, t - now);
		return false;
	}
	if (t > now)
		snprintf(age_text, len, "record time %s is %llds ahead of this clock", rec->time,
			 t - now);
	else
		snprintf(age_text, len, "record %llds old", now - t);
	return true;
}

/*
 * The grace of a record written before records had a netns= (an upgrade
 * from an older rdma-netns-ipam): its container alone tells whether the pod
 * lives, so it must be long past any ADD in flight.
 */
static long legacy_grace(long grace_s)
{
	long g = grace_s > LONG_MAX / 12 ? LONG_MAX : grace_s * 12;

	return g < 3600 ? 3600 : g;
}

/* Whether the process test can be trusted here: some record of this node names a running container. */
static bool containers_seen(const struct rn_ipam_collect *addrs, const char *node,
			    const struct rn_cgroup_snapshot *cgroups)
{
	for (size_t i = 0; i < addrs->n; i++) {
		const struct rn_ipam_record *rec = (struct rn_ipam_record *)addrs->items + i;

		if (strcmp(rec->node, node) == 0 &&
		    rn_cgroup_snapshot_has(cgroups, rec->container_id))
			return true;
	}
	return false;
}

int rn_ipam_reconcile(struct rn_ipam_store *s, const struct rn_ipam_reconcile_opts *o,
		      rn_ipam_reconcile_fn fn, void *ctx, struct rn_ipam_reconcile_stats *ret,
		      struct rn_error *err)
{
	struct rn_ipam_collect addrs = { .kind = RN_IPAM_KIND_ADDRESS, .keep_text = true };
	struct rn_ipam_collect atts = { .kind = RN_IPAM_KIND_ATTACHMENT };
	struct rn_cgroup_snapshot *cgroups = NULL;
	bool host_pids = rn_netns_host_pids(), snapped = false, seen = false;
	long long now = o->now ? o->now : (long long)time(NULL);
	int r;

	memset(ret, 0, sizeof(*ret));
	if (!o->node || !*o->node)
		return rn_error_set(err, EINVAL, "the reconciler needs this node's name");
	r = rn_ipam_collect_all(s, NULL, &addrs, err);
	if (r == 0)
		r = rn_ipam_collect_all(s, NULL, &atts, err);
	for (size_t i = 0; r == 0 && i < addrs.n_damaged + atts.n_damaged; i++) {
		const struct rn_ipam_damaged *d = i < addrs.n_damaged
							  ? &addrs.damaged[i]
							  : &atts.damaged[i - addrs.n_damaged];

		ret->damaged++;
		fn(ctx, RN_IPAM_DAMAGED, NULL, d, d->why);
	}
	ret->records = addrs.n;
	for (size_t i = 0; r == 0 && i < addrs.n; i++) {
		const struct rn_ipam_record *rec = (struct rn_ipam_record *)addrs.items + i;
		struct rn_ipam_release_want w = { rec, false, addrs.texts[i], addrs.versions[i] };
		unsigned long long ino = 0;
		char why[PATH_MAX + 200], age_text[RN_IPAM_NAME_MAX + 128];
		char full[sizeof(why) + sizeof(age_text) + 2 * RN_IPAM_NAME_MAX + 64];
		enum rn_netns_state state;
		long long age = 0;
		long grace = o->grace_s;
		bool gone, legacy;

		if (strcmp(rec->node, o->node) != 0)
			continue;
		ret->mine++;
		if (rec->netns_ino[0])
			ino = strtoull(rec->netns_ino, NULL, 10);
		state = rn_netns_path_state(rec->netns[0] ? rec->netns : NULL, ino, why,
					    sizeof(why));
		if (state == RN_NETNS_ALIVE) {
			ret->alive++;
			continue;
		}
		/* no netns= (written by an older version): judged by its container alone */
		legacy = state == RN_NETNS_UNKNOWN && !rec->netns[0] && host_pids;
		if (state == RN_NETNS_UNKNOWN && !legacy) {
			ret->unknown++;
			fn(ctx, RN_IPAM_KEPT_UNKNOWN, rec, NULL, why);
			continue;
		}
		if (host_pids && !snapped) {
			snapped = true;
			r = rn_cgroup_snapshot_take(&cgroups, err);
			if (r < 0)
				break;
			seen = containers_seen(&addrs, o->node, cgroups);
		}
		if (legacy && !seen) {
			ret->unknown++;
			snprintf(full, sizeof(full),
				 "%s (a record from before netns= was recorded), and no container "
				 "of this node's records is seen running here, so whether its "
				 "container runs cannot be told",
				 why);
			fn(ctx, RN_IPAM_KEPT_UNKNOWN, rec, NULL, full);
			continue;
		}
		if (legacy) {
			grace = legacy_grace(o->grace_s);
			rn_strappend(why, sizeof(why),
				     " (a record from before netns= was recorded: judged by its "
				     "container alone, with a grace of %lds)",
				     grace);
		}
		if (rn_cgroup_snapshot_has(cgroups, rec->container_id)) {
			ret->running++;
			snprintf(full, sizeof(full), "%s, but container %s still runs", why,
				 rec->container_id);
			fn(ctx, RN_IPAM_KEPT_RUNNING, rec, NULL, full);
			continue;
		}
		if (record_age(rec, now, grace, &age, age_text, sizeof(age_text)) && age < grace) {
			ret->young++;
			snprintf(full, sizeof(full), "%s; %s, grace %lds", why, age_text, grace);
			fn(ctx, RN_IPAM_KEPT_YOUNG, rec, NULL, full);
			continue;
		}
		r = rn_ipam_release_locked(s, &w, o->dry_run, &gone, err);
		if (r < 0)
			break;
		snprintf(full, sizeof(full), "%s; container %s not running; %s", why,
			 rec->container_id, age_text);
		if (gone) {
			ret->released++;
			fn(ctx, RN_IPAM_RELEASED, rec, NULL, full);
		} else {
			ret->changed++;
			fn(ctx, RN_IPAM_CHANGED, rec, NULL,
			   "changed since it was read: left alone");
		}
	}
	rn_cgroup_snapshot_free(cgroups);
	rn_ipam_collect_free(&addrs);
	rn_ipam_collect_free(&atts);
	return r;
}
