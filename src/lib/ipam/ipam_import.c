// SPDX-License-Identifier: Apache-2.0
/*
 * whereabouts' IPPools into our store. whereabouts keeps a network's
 * allocations in one object per range: spec.range ("10.10.0.0/16", its
 * address as written) and spec.allocations, keyed by the decimal offset of
 * each address from that address, each naming the container ("id"), the
 * pod ("podref", namespace/name) and, since 0.7, the interface ("ifname").
 * Read from whereabouts' pkg/api/.../ippool_types.go and
 * pkg/storage/kubernetes/ipam.go (toIPReservationList, IPAddOffset).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "rdmans/cleanup.h"
#include "rdmans/ipam_import.h"
#include "rdmans/json_cleanup.h"
#include "rdmans/util.h"

#define WHEREABOUTS_GROUP "whereabouts.cni.cncf.io/"

/* "12": the offset, digits only; -EINVAL for anything else or above 128 bits. */
static int parse_offset(const char *key, rn_u128 *ret)
{
	rn_u128 v = 0;

	if (!*key || strlen(key) > 39)
		return -EINVAL;
	for (const char *p = key; *p; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		if (v > (~(rn_u128)0 - (rn_u128)(*p - '0')) / 10)
			return -EINVAL;
		v = v * 10 + (rn_u128)(*p - '0');
	}
	*ret = v;
	return 0;
}

static const char *str_of(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

/* Copies src into dst, or says which field of which pool and key was too long. */
static int copy_field(char *dst, size_t len, const char *src, const char *what,
		      const struct rn_whereabouts_alloc *a, struct rn_error *err)
{
	if (rn_strscpy(dst, len, src) < 0 || strchr(src, '\n'))
		return rn_error_set(err, EINVAL,
				    "IPPool %s, allocation %s: %s is too long or has a newline",
				    a->pool, a->offset, what);
	return 0;
}

static int parse_allocation(const struct rn_whereabouts_alloc *pool, const struct rn_ip *base,
			    unsigned prefix, const char *key, json_t *v,
			    struct rn_whereabouts_alloc *a, struct rn_error *err)
{
	unsigned bits = rn_ip_bits(base->family);
	rn_u128 off, mask, max = bits == 128 ? ~(rn_u128)0 : ((rn_u128)1 << bits) - 1;
	const char *id, *podref, *ifname, *slash;
	int r;

	*a = *pool;
	if (rn_strscpy(a->offset, sizeof(a->offset), key) < 0 || parse_offset(key, &off) < 0)
		return rn_error_set(
			err, EINVAL,
			"IPPool %s: allocation key '%.40s' is not an offset (whereabouts "
			"writes decimal offsets from the range's address)",
			pool->pool, key);
	mask = prefix == 0 ? 0 : (max << (bits - prefix)) & max;
	if (off > max - base->v || ((base->v + off) & mask) != (base->v & mask))
		return rn_error_set(err, EINVAL, "IPPool %s: allocation %s is outside range %s",
				    pool->pool, key, pool->range);
	a->ip.family = base->family;
	a->ip.v = base->v + off;
	rn_ip_format(a->ip.family, a->ip.v, a->ip_text, sizeof(a->ip_text));
	if (!json_is_object(v))
		return rn_error_set(err, EINVAL, "IPPool %s, allocation %s: not an object",
				    pool->pool, key);
	id = str_of(v, "id");
	if (!id || !*id)
		return rn_error_set(err, EINVAL,
				    "IPPool %s, allocation %s (%s): no container id (\"id\")",
				    pool->pool, key, a->ip_text);
	r = copy_field(a->container_id, sizeof(a->container_id), id, "id", a, err);
	podref = str_of(v, "podref");
	if (r == 0 && podref && *podref) {
		slash = strchr(podref, '/');
		if (!slash || slash == podref || !slash[1] || strchr(slash + 1, '/'))
			return rn_error_set(err, EINVAL,
					    "IPPool %s, allocation %s (%s): podref '%.80s' is not "
					    "namespace/name",
					    pool->pool, key, a->ip_text, podref);
		if ((size_t)(slash - podref) >= sizeof(a->pod_namespace))
			return rn_error_set(err, EINVAL,
					    "IPPool %s, allocation %s: podref is too long",
					    pool->pool, key);
		memcpy(a->pod_namespace, podref, (size_t)(slash - podref));
		a->pod_namespace[slash - podref] = '\0';
		r = copy_field(a->pod_name, sizeof(a->pod_name), slash + 1, "podref", a, err);
	}
	ifname = str_of(v, "ifname");
	if (r == 0 && ifname && *ifname)
		r = copy_field(a->ifname, sizeof(a->ifname), ifname, "ifname", a, err);
	return r;
}

static int parse_pool(json_t *pool, struct rn_whereabouts_alloc **all, size_t *n,
		      struct rn_error *err)
{
	const char *api = str_of(pool, "apiVersion"), *kind = str_of(pool, "kind"), *range, *key;
	json_t *meta = json_object_get(pool, "metadata"), *spec = json_object_get(pool, "spec");
	json_t *allocs, *v;
	struct rn_whereabouts_alloc head = { 0 };
	struct rn_ip base;
	unsigned prefix;
	int r;

	if (!json_is_object(pool) || !api ||
	    strncmp(api, WHEREABOUTS_GROUP, strlen(WHEREABOUTS_GROUP)) != 0 || !kind ||
	    strcmp(kind, "IPPool") != 0)
		return rn_error_set(err, EINVAL,
				    "not a whereabouts IPPool (apiVersion %s..., kind IPPool): "
				    "give what 'kubectl get ippools.whereabouts.cni.cncf.io -A -o "
				    "json' prints",
				    WHEREABOUTS_GROUP);
	if (rn_strscpy(head.pool, sizeof(head.pool),
		       str_of(meta, "name") ? str_of(meta, "name") : "(no name)") < 0)
		return rn_error_set(err, EINVAL, "an IPPool's name is too long");
	range = str_of(spec, "range");
	if (!range || rn_strscpy(head.range, sizeof(head.range), range) < 0 ||
	    rn_cidr_parse(range, &base, &prefix) < 0)
		return rn_error_set(err, EINVAL,
				    "IPPool %s: spec.range '%.60s' is not an address/prefix",
				    head.pool, range ? range : "");
	allocs = json_object_get(spec, "allocations");
	if (!allocs)
		return 0;
	if (!json_is_object(allocs))
		return rn_error_set(err, EINVAL, "IPPool %s: spec.allocations is not an object",
				    head.pool);
	json_object_foreach (allocs, key, v) {
		struct rn_whereabouts_alloc *grown = realloc(*all, (*n + 1) * sizeof(**all));

		if (!grown)
			return rn_error_set(err, ENOMEM, "out of memory");
		*all = grown;
		r = parse_allocation(&head, &base, prefix, key, v, &grown[*n], err);
		if (r < 0)
			return r;
		(*n)++;
	}
	return 0;
}

int rn_whereabouts_parse(const char *text, size_t len, struct rn_whereabouts_alloc **ret,
			 size_t *ret_n, struct rn_error *err)
{
	_cleanup_json_ json_t *doc = NULL;
	_cleanup_free_ struct rn_whereabouts_alloc *all = NULL;
	json_error_t jerr;
	json_t *items, *item;
	size_t n = 0, i;
	int r = 0;

	doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!doc)
		return rn_error_set(err, EBADMSG, "not JSON (line %d: %s)", jerr.line, jerr.text);
	items = json_object_get(doc, "items");
	if (json_is_array(items)) {
		json_array_foreach (items, i, item) {
			r = parse_pool(item, &all, &n, err);
			if (r < 0)
				return r;
		}
	} else {
		r = parse_pool(doc, &all, &n, err);
		if (r < 0)
			return r;
	}
	/* two pools of one network may not hold one address twice */
	for (i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++)
			if (all[i].ip.family == all[j].ip.family && all[i].ip.v == all[j].ip.v &&
			    strcmp(all[i].pool, all[j].pool) != 0)
				return rn_error_set(
					err, EINVAL,
					"%s is allocated in IPPool %s and in %s: import "
					"them one network at a time",
					all[i].ip_text, all[i].pool, all[j].pool);
	*ret = TAKE_PTR(all);
	*ret_n = n;
	return 0;
}

static bool in_ranges(const struct rn_ipam_config *c, const struct rn_ip *ip)
{
	for (size_t k = 0; k < c->n_ranges; k++)
		if (c->ranges[k].family == ip->family && rn_ipam_range_usable(&c->ranges[k], ip->v))
			return true;
	return false;
}

/* Checked before anything is written: an input that cannot all be taken changes nothing. */
static int import_check(const struct rn_ipam_config *c, const struct rn_whereabouts_alloc *allocs,
			size_t n, const struct rn_import_opts *o, struct rn_error *err)
{
	if (c->n_ranges == 0)
		return rn_error_set(err, EINVAL,
				    "the configuration names no range: give the network's own "
				    "configuration (its NetworkAttachmentDefinition's config) with "
				    "--config");
	for (size_t i = 0; i < n; i++) {
		const struct rn_whereabouts_alloc *a = &allocs[i];

		if (!in_ranges(c, &a->ip))
			return rn_error_set(err, EINVAL,
					    "IPPool %s: %s (allocation %s) is in none of network "
					    "%s's ranges, or one they exclude: nothing imported",
					    a->pool, a->ip_text, a->offset,
					    c->network ? c->network : "(unnamed)");
		if (!a->ifname[0] && !o->ifname)
			return rn_error_set(err, EINVAL,
					    "IPPool %s: %s (allocation %s) names no interface "
					    "(whereabouts before 0.7): give the pods' interface "
					    "with --ifname; nothing imported",
					    a->pool, a->ip_text, a->offset);
	}
	return 0;
}

int rn_ipam_import(struct rn_ipam_store *s, const struct rn_ipam_config *c,
		   const struct rn_whereabouts_alloc *allocs, size_t n,
		   const struct rn_import_opts *o, rn_import_fn *fn, void *ctx, size_t *ret_refused,
		   struct rn_error *err)
{
	struct rn_ipam_config as_imported = *c;
	size_t refused = 0;
	int r;

	*ret_refused = 0;
	r = import_check(c, allocs, n, o, err);
	if (r < 0)
		return r;
	/* whereabouts records no node: a wrong one would let that node's reconciler judge them */
	as_imported.node = (char *)(o->node ? o->node : "");
	for (size_t i = 0; i < n; i++) {
		const struct rn_whereabouts_alloc *a = &allocs[i];
		struct rn_ipam_owner owner = {
			.container_id = a->container_id,
			.ifname = a->ifname[0] ? a->ifname : o->ifname,
			.pod_namespace = a->pod_namespace[0] ? a->pod_namespace : NULL,
			.pod_name = a->pod_name[0] ? a->pod_name : NULL,
		};
		struct rn_ipam_lease lease;
		struct rn_error one = { 0 };
		char id[RN_IPAM_ID_MAX];

		r = rn_ipam_attachment_id(&owner, id, sizeof(id), err);
		if (r < 0)
			return r;
		if (o->dry_run) {
			fn(ctx, a, id, RN_IMPORT_WOULD, NULL);
			continue;
		}
		r = rn_ipam_add_at(s, &as_imported, &owner, &a->ip, &lease, &one);
		if (r == -EEXIST) {
			fn(ctx, a, id, RN_IMPORT_REFUSED, one.msg);
			refused++;
			continue;
		}
		if (r < 0) {
			*ret_refused = refused;
			return rn_error_set(err, -r,
					    "importing %s of IPPool %s: %s (%zu of %zu done; "
					    "run the import again to take the rest)",
					    a->ip_text, a->pool, one.msg, i, n);
		}
		fn(ctx, a, id, lease.existing ? RN_IMPORT_HELD : RN_IMPORT_TAKEN, NULL);
	}
	*ret_refused = refused;
	return 0;
}
