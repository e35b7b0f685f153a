// SPDX-License-Identifier: Apache-2.0
/* Results and errors in the caller's CNI version; failures and their codes. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "result.h"

static int code_for_errno(int e)
{
	switch (e) {
	case ENODEV:
		return RN_CNI_NO_DEVICE;
	case EEXIST:
		return RN_CNI_EXISTS;
	case EAGAIN:
		return CNI_ERR_TRY_AGAIN;
	case ETIMEDOUT:
		return RN_CNI_NO_GID;
	case EINVAL:
	case ENAMETOOLONG:
	case ENOTUNIQ:
	case E2BIG:
		return CNI_ERR_INVALID_CONFIG;
	case ENOSPC:
	case EROFS:
	case EFBIG:
	case ENOTDIR:
		return CNI_ERR_IO;
	default:
		return RN_CNI_KERNEL;
	}
}

int cni_fail_lib(struct cni_ctx *ctx, int code, const struct rn_error *err)
{
	return cni_fail(ctx, code ? code : code_for_errno(err->code), "%s", err->msg);
}

/* The caller's cniVersion, the latest when the configuration did not say. */
static const char *cni_out_version(const struct cni_ctx *ctx)
{
	return ctx->conf.version ? ctx->conf.version : RN_CNI_VERSION_LATEST;
}

void cni_ipam_result_free(struct cni_ipam_result *res)
{
	if (res->dns)
		json_decref(res->dns);
	memset(res, 0, sizeof(*res));
}

static int copy_field(struct cni_ctx *ctx, json_t *obj, const char *key, const char *where,
		      char *buf, size_t len, bool required)
{
	json_t *v = json_object_get(obj, key);

	buf[0] = '\0';
	if (!v || json_is_null(v)) {
		if (required)
			return cni_fail(ctx, RN_CNI_IPAM, "IPAM result: %s has no '%s'", where,
					key);
		return 0;
	}
	if (!json_is_string(v) || json_string_length(v) >= len)
		return cni_fail(ctx, RN_CNI_IPAM, "IPAM result: %s.%s is not a short string", where,
				key);
	snprintf(buf, len, "%s", json_string_value(v));
	return 0;
}

int cni_ipam_result_parse(struct cni_ctx *ctx, json_t *doc, struct cni_ipam_result *out)
{
	json_t *ips, *routes, *dns, *item;
	size_t i;

	memset(out, 0, sizeof(*out));
	if (!json_is_object(doc))
		return cni_fail(ctx, RN_CNI_IPAM, "the IPAM plugin returned no result object");
	ips = json_object_get(doc, "ips");
	routes = json_object_get(doc, "routes");
	dns = json_object_get(doc, "dns");
	if (ips && !json_is_array(ips))
		return cni_fail(ctx, RN_CNI_IPAM, "IPAM result: 'ips' is not an array");
	if (routes && !json_is_array(routes))
		return cni_fail(ctx, RN_CNI_IPAM, "IPAM result: 'routes' is not an array");
	json_array_foreach (ips, i, item) {
		struct rn_attach_ip *ip;

		if (out->n_ips == RN_ARRAY_SIZE(out->ips))
			return cni_fail(ctx, RN_CNI_IPAM, "IPAM result: too many addresses");
		ip = &out->ips[out->n_ips];
		if (!json_is_object(item))
			return cni_fail(ctx, RN_CNI_IPAM, "IPAM result: ips[%zu] is not an object",
					i);
		if (copy_field(ctx, item, "address", "ips[]", ip->cidr, sizeof(ip->cidr), true) <
			    0 ||
		    copy_field(ctx, item, "gateway", "ips[]", ip->gateway, sizeof(ip->gateway),
			       false) < 0)
			return -1;
		if (!strchr(ip->cidr, '/'))
			return cni_fail(ctx, RN_CNI_IPAM,
					"IPAM result: address %s has no prefix length", ip->cidr);
		out->n_ips++;
	}
	json_array_foreach (routes, i, item) {
		struct rn_attach_route *rt;

		if (out->n_routes == RN_ARRAY_SIZE(out->routes))
			return cni_fail(ctx, RN_CNI_IPAM, "IPAM result: too many routes");
		rt = &out->routes[out->n_routes];
		if (!json_is_object(item))
			return cni_fail(ctx, RN_CNI_IPAM,
					"IPAM result: routes[%zu] is not an object", i);
		if (copy_field(ctx, item, "dst", "routes[]", rt->dst, sizeof(rt->dst), true) < 0 ||
		    copy_field(ctx, item, "gw", "routes[]", rt->gw, sizeof(rt->gw), false) < 0)
			return -1;
		out->n_routes++;
	}
	if (dns && json_is_object(dns))
		out->dns = json_incref(dns);
	return 0;
}

static json_t *iface_json(const struct cni_ctx *ctx, const struct rn_attach_plan *plan, size_t i)
{
	const struct rn_attach_netdev *nd = &plan->netdevs[i];
	json_t *o = json_pack("{s:s,s:s,s:s}", "name", nd->pod_name, "mac", nd->mac, "sandbox",
			      ctx->netns);

	/* 1.1.0: the PCI function behind the pod interface */
	if (o && i == 0 && ctx->conf.ver >= 110 && plan->bus_id[0] && strchr(plan->bus_id, ':'))
		json_object_set_new(o, "pciID", json_string(plan->bus_id));
	return o;
}

json_t *cni_result_main(const struct cni_ctx *ctx, const struct rn_attach_plan *plan,
			const struct cni_ipam_result *ipam)
{
	json_t *doc = json_pack("{s:s,s:[],s:[]}", "cniVersion", cni_out_version(ctx), "interfaces",
				"ips");
	json_t *ifaces, *ips, *routes;

	if (!doc)
		return NULL;
	ifaces = json_object_get(doc, "interfaces");
	ips = json_object_get(doc, "ips");
	for (size_t i = 0; i < plan->n_netdevs; i++)
		json_array_append_new(ifaces, iface_json(ctx, plan, i));
	for (size_t i = 0; ipam && i < ipam->n_ips; i++) {
		const struct rn_attach_ip *ip = &ipam->ips[i];
		json_t *o = json_pack("{s:s,s:i}", "address", ip->cidr, "interface", 0);

		if (ip->gateway[0])
			json_object_set_new(o, "gateway", json_string(ip->gateway));
		rn_cni_result_ip_version(o, ctx->conf.ver, strchr(ip->cidr, ':') != NULL);
		json_array_append_new(ips, o);
	}
	if (ipam && ipam->n_routes) {
		routes = json_array();
		for (size_t i = 0; i < ipam->n_routes; i++) {
			json_t *o = json_pack("{s:s}", "dst", ipam->routes[i].dst);

			if (ipam->routes[i].gw[0])
				json_object_set_new(o, "gw", json_string(ipam->routes[i].gw));
			json_array_append_new(routes, o);
		}
		json_object_set_new(doc, "routes", routes);
	}
	json_object_set_new(doc, "dns",
			    ipam && ipam->dns ? json_deep_copy(ipam->dns) : json_object());
	return doc;
}

json_t *cni_result_chained(const struct cni_ctx *ctx)
{
	json_t *doc = json_deep_copy(ctx->conf.prev_result);

	if (doc)
		json_object_set_new(doc, "cniVersion", json_string(cni_out_version(ctx)));
	return doc;
}
