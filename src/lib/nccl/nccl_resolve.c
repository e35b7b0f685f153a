// SPDX-License-Identifier: Apache-2.0
/*
 * The NCCL resolver (nccl_resolve.h): the profile, the version, the node's
 * rules (nccl_rules.c) or node_static's pool, then the layers in precedence.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmans/cleanup.h"
#include "rdmans/nccl_resolve.h"
#include "rdmans/nccl_rules.h"
#include "rdmans/util.h"

/* Layers in precedence order (stable for equal sources). */
static int cmp_layer_ptr(const void *a, const void *b)
{
	const struct rn_nccl_layer *x = *(const struct rn_nccl_layer *const *)a;
	const struct rn_nccl_layer *y = *(const struct rn_nccl_layer *const *)b;

	if (x->source != y->source)
		return x->source < y->source ? -1 : 1;
	return x < y ? -1 : x > y;
}

/* No usable RDMA port, and sockets are fine: NCCL_IB_DISABLE=1, no NCCL_IB_* of the profile. */
static int resolve_sockets(const struct rn_nccl_node *node, const struct rn_nccl_request *req,
			   struct rn_nccl_result *res)
{
	const char *origin = req->sockets_origin ? req->sockets_origin : "sockets allowed";
	struct rn_error why = { 0 };
	int r;

	(void)rn_nccl_rules_unusable(node, res, &why);
	res->sockets = true;
	r = rn_nccl_result_warn(res, "NCCL runs over sockets, slower than RDMA (%s): %s", origin,
				why.msg);
	for (size_t i = res->n; r == 0 && i-- > 0;)
		if (strncmp(res->v[i].name, "NCCL_IB_", 8) == 0 &&
		    strcmp(res->v[i].name, "NCCL_IB_DISABLE") != 0)
			r = rn_nccl_result_drop(res, res->v[i].name, origin, "RDMA is off");
	if (r == 0)
		r = rn_nccl_result_put(res, "NCCL_IB_DISABLE", "1", RN_NCCL_SRC_DETECTED, origin,
				       "no usable RDMA port here: NCCL over sockets");
	return r;
}

bool rn_nccl_pod_dependent(const char *name)
{
	static const char *const per_pod[] = { "NCCL_IB_HCA", "NCCL_IB_GID_INDEX",
					       "NCCL_SOCKET_IFNAME" };

	for (size_t i = 0; i < RN_ARRAY_SIZE(per_pod); i++)
		if (strcmp(per_pod[i], name) == 0)
			return true;
	return false;
}

static int apply_profile(const struct rn_nccl_profile *prof, const struct rn_nccl_request *req,
			 struct rn_nccl_result *res)
{
	char origin[RN_NCCL_ORIGIN_MAX];
	int r;

	(void)rn_snprintf(origin, sizeof(origin), "profile %s", prof->name);
	for (size_t i = 0; i < prof->n_values; i++) {
		const struct rn_nccl_preset *p = &prof->values[i];

		if (req->node_static && rn_nccl_pod_dependent(p->name))
			continue; /* they depend on the pod: rdmans-hook writes them */
		r = rn_nccl_result_put(res, p->name, p->value, RN_NCCL_SRC_PROFILE, origin, NULL);
		if (r < 0)
			return r;
	}
	return 0;
}

static int apply_layer(const struct rn_nccl_layer *l, struct rn_nccl_result *res)
{
	char origin[RN_NCCL_ORIGIN_MAX];
	int r;

	rn_nccl_layer_label(l, origin, sizeof(origin));
	for (size_t i = 0; i < l->n; i++) {
		const struct rn_nccl_kv *kv = &l->kv[i];
		const struct rn_nccl_setting *was = rn_nccl_result_get(res, kv->name);

		if (kv->unset) {
			r = rn_nccl_result_drop(res, kv->name, origin, NULL);
		} else {
			if (strcmp(kv->name, "NCCL_IB_GID_INDEX") == 0 && was &&
			    was->source == RN_NCCL_SRC_DETECTED && strcmp(was->value, kv->value)) {
				r = rn_nccl_result_warn(
					res,
					"NCCL_IB_GID_INDEX=%s from %s overrides the detected %s "
					"(%s)",
					kv->value, origin, was->value, was->detail);
				if (r < 0)
					return r;
			}
			r = rn_nccl_result_put(res, kv->name, kv->value, l->source, origin, NULL);
		}
		if (r < 0)
			return r;
	}
	return 0;
}

static int out_of_memory(struct rn_error *err)
{
	return rn_error_set(err, ENOMEM, "out of memory resolving NCCL settings");
}

/* The request's layers, weakest first: by source, equal sources in their given order. */
static int order_layers(const struct rn_nccl_request *req, const struct rn_nccl_layer ***ret,
			struct rn_error *err)
{
	const struct rn_nccl_layer **order =
		calloc(req->n_layers ? req->n_layers : 1, sizeof(*order));

	if (!order)
		return out_of_memory(err);
	for (size_t i = 0; i < req->n_layers; i++)
		order[i] = &req->layers[i];
	if (req->n_layers > 1)
		qsort(order, req->n_layers, sizeof(*order), cmp_layer_ptr);
	*ret = order;
	return 0;
}

/* The strongest layer whose char array at `offset` is set ("" is unset), or NULL. */
static const struct rn_nccl_layer *strongest_at(const struct rn_nccl_layer **order, size_t n,
						size_t offset)
{
	for (size_t i = n; i-- > 0;)
		if (((const char *)order[i])[offset])
			return order[i];
	return NULL;
}

#define STRONGEST_SETTING(order, n, field)                                                         \
	strongest_at(order, n, offsetof(struct rn_nccl_layer, field))

/* The profile: named by the strongest layer that names one, else auto (from the node). */
static int choose_profile(const struct rn_nccl_node *node, const struct rn_nccl_layer **order,
			  size_t n, struct rn_nccl_result *res, const struct rn_nccl_profile **ret,
			  struct rn_error *err)
{
	const struct rn_nccl_layer *named = STRONGEST_SETTING(order, n, profile);
	const char *profile;

	if (named && strcmp(named->profile, "auto") != 0) {
		profile = named->profile;
		rn_nccl_layer_label(named, res->profile_origin, sizeof(res->profile_origin));
	} else {
		profile = rn_nccl_rules_auto_profile(node, res->profile_origin,
						     sizeof(res->profile_origin));
	}
	*ret = rn_nccl_profile_find(profile);
	if (!*ret)
		return rn_nccl_profile_check(profile, err);
	(void)rn_strscpy(res->profile, sizeof(res->profile), (*ret)->name);
	return 0;
}

/* The NCCL version: named by the strongest layer, else what the image showed. */
static int choose_version(const struct rn_nccl_layer **order, size_t n,
			  const struct rn_nccl_request *req, struct rn_nccl_result *res,
			  struct rn_error *err)
{
	const struct rn_nccl_layer *named = STRONGEST_SETTING(order, n, nccl_version);

	if (named) {
		char label[RN_NCCL_ORIGIN_MAX + 16];
		int r = rn_nccl_version_parse(named->nccl_version, &res->version, err);

		if (r < 0)
			return r;
		rn_nccl_layer_label(named, label, sizeof(label));
		(void)rn_strscpy(res->version.where, sizeof(res->version.where), label);
		(void)rn_snprintf(res->version_why, sizeof(res->version_why), "named by %s", label);
	} else if (req->nccl_version && req->nccl_version->major) {
		res->version = *req->nccl_version;
		(void)rn_snprintf(res->version_why, sizeof(res->version_why),
				  "seen in the image: %s", req->nccl_version->where);
	} else {
		(void)rn_snprintf(res->version_why, sizeof(res->version_why), "%s",
				  req->nccl_version_note ? req->nccl_version_note
							 : "no image to look in");
	}
	res->ver_class = rn_nccl_version_class(&res->version);
	return 0;
}

/* RDMA ports are here: the rules, the GID first (one index for all may leave ports out). */
static int resolve_rdma(const struct rn_nccl_node *node, const struct rn_nccl_layer *family_layer,
			struct rn_nccl_result *res)
{
	int r = 0;

	for (size_t i = 0; r == 0 && i < res->n_ports; i++)
		if (!res->ports[i].used && !res->ports[i].off_rail && res->ports[i].why_not[0])
			r = rn_nccl_result_warn(res, "%s port %u is left out: %s",
						res->ports[i].dev, res->ports[i].port,
						res->ports[i].why_not);
	if (r < 0)
		return r;
	rn_nccl_rules_family(node, res, family_layer);
	r = rn_nccl_result_put(res, "NCCL_IB_DISABLE", "0", RN_NCCL_SRC_DETECTED, "detected",
			       "RDMA ports are here");
	if (r == 0)
		r = rn_nccl_rules_gid(node, res);
	if (r == 0)
		r = rn_nccl_rules_hca(node, res);
	if (r == 0)
		r = rn_nccl_rules_ifname(node, res);
	return r;
}

/* The pod's node: its usable ports decide, or sockets when none is and that is allowed. */
static int resolve_node(const struct rn_nccl_node *node, const struct rn_nccl_request *req,
			const struct rn_nccl_layer *family_layer, struct rn_nccl_result *res,
			struct rn_error *err)
{
	bool any = false;

	if (rn_nccl_rules_ports(node, res) < 0 ||
	    rn_nccl_rules_rails(node, req->gpus, req->n_gpus, res) < 0)
		return out_of_memory(err);
	for (size_t i = 0; i < res->n_ports; i++)
		any = any || res->ports[i].used;
	if (!any && !req->sockets_ok)
		return rn_nccl_rules_unusable(node, res, err);
	if ((any ? resolve_rdma(node, family_layer, res) : resolve_sockets(node, req, res)) < 0)
		return out_of_memory(err);
	return 0;
}

/* node_static with the pool's CIDR: NCCL (>= 2.21) picks each device's GID in it. */
static int resolve_addr_range(const char *range, struct rn_nccl_result *res, struct rn_error *err)
{
	uint8_t raw[16];
	int fam, plen, r;

	if (!strchr(range, '/') || rn_nccl_cidr_parse(range, &fam, raw, &plen) < 0)
		return rn_error_set(err, EINVAL,
				    "address range '%s' is not a CIDR (a.b.c.d/nn or x::y/nn)",
				    range);
	res->family = fam;
	r = rn_nccl_result_put(res, "NCCL_IB_ADDR_FAMILY", fam == AF_INET6 ? "AF_INET6" : "AF_INET",
			       RN_NCCL_SRC_OPTION, "--addr-range",
			       fam == AF_INET6 ? "the pool is IPv6" : "the pool is IPv4");
	if (r == 0)
		r = rn_nccl_result_put(res, "NCCL_IB_ADDR_RANGE", range, RN_NCCL_SRC_OPTION,
				       "--addr-range",
				       "NCCL >= 2.21 picks the GID in this range per device");
	if (r == 0)
		r = rn_nccl_result_put(res, "NCCL_IB_ROCE_VERSION_NUM", "2", RN_NCCL_SRC_OPTION,
				       "--addr-range", "RoCE v2 GIDs");
	return r < 0 ? out_of_memory(err) : 0;
}

/* node_static: what a layer set that depends on the pod goes again (rdmans-hook writes it). */
static int drop_pod_dependent(struct rn_nccl_result *res)
{
	for (size_t i = res->n; i-- > 0;)
		if (rn_nccl_pod_dependent(res->v[i].name) &&
		    rn_nccl_result_drop(res, res->v[i].name, "node-static",
					"depends on the pod: rdmans-hook writes it per pod") < 0)
			return -ENOMEM;
	return 0;
}

/* What the layers set, checked against the node: an interface or HCA list that takes nothing. */
static int check_layers(const struct rn_nccl_node *node, struct rn_nccl_result *res)
{
	const struct rn_nccl_setting *s = rn_nccl_result_get(res, "NCCL_SOCKET_IFNAME");

	if (s && !rn_nccl_rules_ifname_matches(node, s->value) &&
	    rn_nccl_result_warn(res,
				"NCCL_SOCKET_IFNAME=%s (%s) matches no netdev in this network "
				"namespace: NCCL's bootstrap will fail",
				s->value, s->origin) < 0)
		return -ENOMEM;
	if (!res->sockets && rn_nccl_rules_check_hca(node, res) < 0)
		return -ENOMEM;
	return 0;
}

int rn_nccl_resolve(const struct rn_nccl_node *node, const struct rn_nccl_request *req,
		    struct rn_nccl_result *out, struct rn_error *err)
{
	_cleanup_nccl_result_ struct rn_nccl_result res = { 0 };
	_cleanup_free_ const struct rn_nccl_layer **order = NULL;
	const struct rn_nccl_profile *prof;
	size_t n = req->n_layers;
	int r;

	memset(out, 0, sizeof(*out));
	if (!node && !req->node_static)
		return rn_error_set(err, EINVAL, "nothing to resolve NCCL settings from");
	r = order_layers(req, &order, err);
	if (r == 0)
		r = choose_profile(node, order, n, &res, &prof, err);
	if (r == 0)
		r = choose_version(order, n, req, &res, err);
	if (r < 0)
		return r;
	if (apply_profile(prof, req, &res) < 0)
		return out_of_memory(err);

	if (!req->node_static)
		r = resolve_node(node, req, STRONGEST_SETTING(order, n, family), &res, err);
	else if (req->addr_range)
		r = resolve_addr_range(req->addr_range, &res, err);
	if (r < 0)
		return r;

	for (size_t i = 0; i < n; i++)
		if (apply_layer(order[i], &res) < 0)
			return out_of_memory(err);
	if ((req->node_static ? drop_pod_dependent(&res) : check_layers(node, &res)) < 0)
		return out_of_memory(err);
	rn_nccl_result_sort(&res);
	*out = res;
	memset(&res, 0, sizeof(res));
	return 0;
}
