// SPDX-License-Identifier: Apache-2.0
/* The network configuration on stdin: decoded, type-checked, validated. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "conf.h"
#include "result.h"
#include "rdmans/util.h"

void cni_conf_free(struct cni_conf *conf)
{
	if (conf->root)
		json_decref(conf->root);
	memset(conf, 0, sizeof(*conf));
}

/* Keys of ours, and the runtime's and the spec's that we accept. */
static const char *const known_keys[] = {
	"cniVersion",
	"name",
	"type",
	"ipam",
	"dns",
	"args",
	"runtimeConfig",
	"capabilities",
	"prevResult",
	"device",
	"hwaddr",
	"rdmaDevice",
	"deviceID",
	"pciBusID",
	"requireRdma",
	"allowDefaultRoute",
	"softRoce",
	"gidTimeout",
	"returnTimeout",
	"nccl",
	"cniVersions",
	"cni.dev/valid-attachments",
	"cni.dev/attachments",
};

/* Lower case, without '_', '-', '.', '/' and a trailing 's': "rdma_devices" ~ "rdmaDevice". */
static void normalize(const char *in, char *out, size_t len)
{
	size_t n = 0;

	for (; *in && n + 1 < len; in++)
		if (*in != '_' && *in != '-' && *in != '.' && *in != '/')
			out[n++] = (char)tolower((unsigned char)*in);
	if (n > 1 && out[n - 1] == 's')
		n--;
	out[n] = '\0';
}

static int check_keys(struct cni_ctx *ctx, json_t *root)
{
	const char *key;
	json_t *value;

	json_object_foreach (root, key, value) {
		char a[128], b[128];
		bool known = false;

		for (size_t i = 0; i < RN_ARRAY_SIZE(known_keys) && !known; i++)
			known = strcmp(key, known_keys[i]) == 0;
		if (known)
			continue;
		if (strcmp(key, "kernelpath") == 0)
			return cni_fail(ctx, CNI_ERR_UNSUPPORTED_FIELD,
					"'kernelpath' is not supported by rdma-netns; select the "
					"device with 'device', 'hwaddr', 'rdmaDevice' or "
					"'deviceID'");
		normalize(key, a, sizeof(a));
		for (size_t i = 0; i < RN_ARRAY_SIZE(known_keys); i++) {
			normalize(known_keys[i], b, sizeof(b));
			if (strcmp(a, b) == 0)
				return cni_fail(
					ctx, CNI_ERR_UNSUPPORTED_FIELD,
					"unknown key '%s' in the network configuration (did "
					"you mean '%s'?)",
					key, known_keys[i]);
		}
	}
	return 0;
}

/* A string member (NULL when absent); -1 with the failure set on a wrong type or "". */
static int get_string(struct cni_ctx *ctx, json_t *obj, const char *key, const char *where,
		      const char **ret)
{
	json_t *v = json_object_get(obj, key);

	*ret = NULL;
	if (!v)
		return 0;
	if (!json_is_string(v))
		return cni_fail(ctx, CNI_ERR_INVALID_CONFIG, "'%s%s' must be a string, not %s",
				where, key, rn_cni_json_type(v));
	if (json_string_length(v) == 0)
		return cni_fail(ctx, CNI_ERR_INVALID_CONFIG, "'%s%s' must not be empty", where,
				key);
	if (strlen(json_string_value(v)) != json_string_length(v))
		return cni_fail(ctx, CNI_ERR_INVALID_CONFIG, "'%s%s' contains a NUL character",
				where, key);
	*ret = json_string_value(v);
	return 0;
}

static int get_bool(struct cni_ctx *ctx, json_t *obj, const char *key, bool *ret)
{
	json_t *v = json_object_get(obj, key);

	if (!v)
		return 0;
	if (!json_is_boolean(v))
		return cni_fail(ctx, CNI_ERR_INVALID_CONFIG, "'%s' must be true or false, not %s",
				key, rn_cni_json_type(v));
	*ret = json_is_true(v);
	return 0;
}

static int get_seconds(struct cni_ctx *ctx, json_t *obj, const char *key, int *ret_ms)
{
	json_t *v = json_object_get(obj, key);
	double s;

	if (!v)
		return 0;
	if (!json_is_number(v))
		return cni_fail(ctx, CNI_ERR_INVALID_CONFIG,
				"'%s' must be a number of seconds, not %s", key,
				rn_cni_json_type(v));
	s = json_number_value(v);
	if (s < 0 || s > 600)
		return cni_fail(ctx, CNI_ERR_INVALID_CONFIG,
				"'%s' must be between 0 and 600 seconds, not %g", key, s);
	*ret_ms = (int)(s * 1000);
	return 0;
}

static int get_object(struct cni_ctx *ctx, json_t *obj, const char *key, const char *where,
		      json_t **ret)
{
	json_t *v = json_object_get(obj, key);

	*ret = NULL;
	if (!v)
		return 0;
	if (!json_is_object(v))
		return cni_fail(ctx, CNI_ERR_INVALID_CONFIG, "'%s%s' must be an object, not %s",
				where, key, rn_cni_json_type(v));
	*ret = v;
	return 0;
}

static int check_name(struct cni_ctx *ctx, const char *key, const char *value, size_t max)
{
	struct rn_error err = { 0 };

	if (value && rn_name_check(key, value, max, &err) < 0)
		return cni_fail(ctx, CNI_ERR_INVALID_CONFIG, "'%s': %s", key, err.msg);
	return 0;
}

static int check_mac(struct cni_ctx *ctx, const char *mac)
{
	if (!mac)
		return 0;
	for (size_t i = 0; i < 17; i++) {
		char c = mac[i];

		if (i % 3 == 2 ? c != ':' : !isxdigit((unsigned char)c))
			goto bad;
	}
	if (mac[17] == '\0')
		return 0;
bad:
	return cni_fail(ctx, CNI_ERR_INVALID_CONFIG,
			"'hwaddr' %s is not a MAC address (aa:bb:cc:dd:ee:ff)", mac);
}

static int parse_nccl(struct cni_ctx *ctx, json_t *nccl)
{
	const char *key;
	json_t *v;

	json_object_foreach (nccl, key, v) {
		for (const char *p = key; *p; p++)
			if (!isalnum((unsigned char)*p) && *p != '_')
				return cni_fail(ctx, CNI_ERR_INVALID_CONFIG,
						"'nccl' key '%s' may only contain letters, digits "
						"and '_' (NCCL_IB_HCA, NCCL_SOCKET_IFNAME, ...)",
						key);
		if (!*key)
			return cni_fail(ctx, CNI_ERR_INVALID_CONFIG, "'nccl' has an empty key");
		if (!json_is_string(v) && !json_is_number(v) && !json_is_boolean(v))
			return cni_fail(ctx, CNI_ERR_INVALID_CONFIG,
					"'nccl.%s' must be a string, number or boolean, not %s",
					key, rn_cni_json_type(v));
		if (json_is_string(v) && strchr(json_string_value(v), '\n'))
			return cni_fail(ctx, CNI_ERR_INVALID_CONFIG, "'nccl.%s' must be one line",
					key);
	}
	return 0;
}

static int parse_attachments(struct cni_ctx *ctx, json_t *root)
{
	static const char *const keys[] = { "cni.dev/valid-attachments", "cni.dev/attachments" };
	json_t *a, *item;
	size_t i;

	for (size_t k = 0; k < RN_ARRAY_SIZE(keys); k++) {
		a = json_object_get(root, keys[k]);
		if (!a)
			continue;
		if (!json_is_array(a))
			return cni_fail(ctx, CNI_ERR_INVALID_CONFIG,
					"'%s' must be an array, not %s", keys[k],
					rn_cni_json_type(a));
		json_array_foreach (a, i, item) {
			if (!json_is_object(item) ||
			    !json_is_string(json_object_get(item, "containerID")) ||
			    !json_is_string(json_object_get(item, "ifname")))
				return cni_fail(ctx, CNI_ERR_INVALID_CONFIG,
						"'%s'[%zu] must be an object with string members "
						"'containerID' and 'ifname'",
						keys[k], i);
		}
		if (!ctx->conf.valid_attachments)
			ctx->conf.valid_attachments = a;
		else
			json_array_extend(ctx->conf.valid_attachments, a);
	}
	return 0;
}

/* Phase 1: the decoded document (rn_cni_conf_decode: one object, its cniVersion); the defaults. */
static void conf_init(struct cni_ctx *ctx, json_t *doc, const char *raw, size_t len,
		      const char *version, int ver)
{
	struct cni_conf *c = &ctx->conf;

	memset(c, 0, sizeof(*c));
	c->root = json_incref(doc);
	c->raw = raw;
	c->raw_len = len;
	c->version = version;
	c->ver = ver;
	c->require_rdma = true;
	c->gid_timeout_ms = 10000;
	c->return_timeout_ms = 10000;
}

/* Phase 3: no misspelt keys; the network's name and type. */
static int conf_identity(struct cni_ctx *ctx)
{
	struct cni_conf *c = &ctx->conf;

	if (check_keys(ctx, c->root) < 0)
		return -1;
	if (get_string(ctx, c->root, "name", "", &c->name) < 0 ||
	    get_string(ctx, c->root, "type", "", &c->type) < 0)
		return -1;
	if (!c->name)
		return cni_fail(ctx, CNI_ERR_INVALID_CONFIG,
				"the network configuration has no 'name'");
	return 0;
}

/* Phase 4: the device to attach (device, hwaddr, rdmaDevice, one bus id) and the devinfo file. */
static int conf_select(struct cni_ctx *ctx)
{
	struct cni_conf *c = &ctx->conf;
	const char *rc_device = NULL, *device_id = NULL, *pci_bus = NULL;
	json_t *rc = NULL;

	if (get_string(ctx, c->root, "device", "", &c->sel.netdev) < 0 ||
	    get_string(ctx, c->root, "hwaddr", "", &c->sel.hwaddr) < 0 ||
	    get_string(ctx, c->root, "rdmaDevice", "", &c->sel.rdma_dev) < 0 ||
	    get_string(ctx, c->root, "deviceID", "", &device_id) < 0 ||
	    get_string(ctx, c->root, "pciBusID", "", &pci_bus) < 0)
		return -1;
	if (get_object(ctx, c->root, "runtimeConfig", "", &rc) < 0)
		return -1;
	if (rc &&
	    (get_string(ctx, rc, "deviceID", "runtimeConfig.", &rc_device) < 0 ||
	     get_string(ctx, rc, "CNIDeviceInfoFile", "runtimeConfig.", &c->devinfo_file) < 0))
		return -1;
	/* deviceID (Multus), pciBusID (host-device), runtimeConfig.deviceID: one bus device. */
	c->sel.bus_id = device_id ? device_id : pci_bus ? pci_bus : rc_device;
	if ((device_id && pci_bus && strcmp(device_id, pci_bus)) ||
	    (c->sel.bus_id && rc_device && strcmp(c->sel.bus_id, rc_device)))
		return cni_fail(
			ctx, CNI_ERR_INVALID_CONFIG,
			"'deviceID', 'pciBusID' and 'runtimeConfig.deviceID' name different "
			"devices (%s, %s, %s); give one",
			device_id ? device_id : "-", pci_bus ? pci_bus : "-",
			rc_device ? rc_device : "-");
	if (check_name(ctx, "device", c->sel.netdev, 15) < 0 ||
	    check_name(ctx, "rdmaDevice", c->sel.rdma_dev, 63) < 0 ||
	    check_name(ctx, "deviceID", c->sel.bus_id, 63) < 0 || check_mac(ctx, c->sel.hwaddr) < 0)
		return -1;
	return 0;
}

/* Phase 5: the switches and timeouts. */
static int conf_options(struct cni_ctx *ctx)
{
	struct cni_conf *c = &ctx->conf;

	if (get_bool(ctx, c->root, "requireRdma", &c->require_rdma) < 0 ||
	    get_bool(ctx, c->root, "allowDefaultRoute", &c->allow_default_route) < 0 ||
	    get_bool(ctx, c->root, "softRoce", &c->soft_roce) < 0 ||
	    get_seconds(ctx, c->root, "gidTimeout", &c->gid_timeout_ms) < 0 ||
	    get_seconds(ctx, c->root, "returnTimeout", &c->return_timeout_ms) < 0)
		return -1;
	return 0;
}

/* Phase 6: the blocks: ipam, prevResult, nccl, the devinfo path, GC's attachments. */
static int conf_blocks(struct cni_ctx *ctx)
{
	struct cni_conf *c = &ctx->conf;

	if (get_object(ctx, c->root, "ipam", "", &c->ipam) < 0)
		return -1;
	if (c->ipam && json_object_size(c->ipam) > 0) {
		if (get_string(ctx, c->ipam, "type", "ipam.", &c->ipam_type) < 0)
			return -1;
		if (!c->ipam_type)
			return cni_fail(ctx, CNI_ERR_INVALID_CONFIG,
					"'ipam' has no 'type' (rdma-netns-ipam, whereabouts, "
					"host-local, static, ...)");
		if (check_name(ctx, "ipam.type", c->ipam_type, NAME_MAX) < 0)
			return -1;
	}
	if (get_object(ctx, c->root, "prevResult", "", &c->prev_result) < 0)
		return -1;
	if (get_object(ctx, c->root, "nccl", "", &c->nccl) < 0)
		return -1;
	if (c->nccl && parse_nccl(ctx, c->nccl) < 0)
		return -1;
	if (c->devinfo_file) {
		if (c->devinfo_file[0] != '/' || strstr(c->devinfo_file, ".."))
			return cni_fail(
				ctx, CNI_ERR_INVALID_CONFIG,
				"'runtimeConfig.CNIDeviceInfoFile' must be an absolute path "
				"without '..', not %s",
				c->devinfo_file);
	}
	return parse_attachments(ctx, c->root);
}

int cni_conf_parse_doc(struct cni_ctx *ctx, json_t *doc, const char *raw, size_t len,
		       const char *version, int ver)
{
	conf_init(ctx, doc, raw, len, version, ver);
	if (conf_identity(ctx) < 0 || conf_select(ctx) < 0 || conf_options(ctx) < 0 ||
	    conf_blocks(ctx) < 0)
		return -1;
	return 0;
}

int cni_conf_parse(struct cni_ctx *ctx, const char *raw, size_t len)
{
	_cleanup_json_ json_t *doc = NULL;
	struct rn_cni_failure f = { 0 };
	const char *version;
	int ver;

	if (rn_cni_conf_decode(raw, len, CNI_OLDEST, "rdma-netns", &doc, &version, &ver, &f) < 0)
		return cni_fail(ctx, f.code, "%s", f.msg);
	return cni_conf_parse_doc(ctx, doc, raw, len, version, ver);
}
