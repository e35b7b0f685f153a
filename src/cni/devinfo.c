// SPDX-License-Identifier: Apache-2.0
/*
 * The Network Plumbing WG device-info file (device-info-spec 1.1.0) that
 * Multus copies into the pod's network-status annotation:
 *   {"type":"pci","version":"1.1.0","pci":{"pci-address":"0000:3b:00.0","rdma-device":"irdma0"}}
 * Written to runtimeConfig.CNIDeviceInfoFile when Multus gives one (it must
 * lie under the devinfo directory), else where Multus would look for it:
 *   /var/run/k8s.cni.cncf.io/devinfo/cni/NETWORK-CONTAINERID_IFNAME
 * A file that is there already (Multus copies the device plugin's) is
 * updated, keeping what it says.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "devinfo.h"
#include "result.h"
#include "rdmans/cleanup.h"
#include "rdmans/util.h"

int cni_devinfo_path(struct cni_ctx *ctx, char *buf, size_t len)
{
	const char *given = ctx->conf.devinfo_file;
	size_t base = strlen(ctx->devinfo_dir);

	if (given) {
		if (strncmp(given, ctx->devinfo_dir, base) != 0 || given[base] != '/')
			return cni_fail(ctx, CNI_ERR_INVALID_CONFIG,
					"'runtimeConfig.CNIDeviceInfoFile' %s is outside %s; "
					"refusing to write there",
					given, ctx->devinfo_dir);
		if (rn_path(buf, len, "%s", given) < 0)
			return cni_fail(ctx, CNI_ERR_INVALID_CONFIG,
					"'runtimeConfig.CNIDeviceInfoFile' is too long");
		return 0;
	}
	if (rn_path(buf, len, "%s/cni/%s-%s_%s", ctx->devinfo_dir, ctx->conf.name,
		    ctx->container_id, ctx->ifname) < 0)
		return cni_fail(ctx, CNI_ERR_INVALID_CONFIG, "device-info path too long");
	return 0;
}

int cni_devinfo_write(struct cni_ctx *ctx, const char *path, const struct rn_attach_plan *plan)
{
	_cleanup_json_ json_t *doc = NULL;
	_cleanup_free_ char *out = NULL;
	char dir[PATH_MAX], names[RN_ATTACH_MAX * RN_RDMA_NAME_MAX], *slash;
	struct rn_error err = { 0 };
	json_t *pci;
	size_t n = 0;

	{
		_cleanup_free_ char *text = NULL;
		size_t len = 0;

		/* a FIFO or a huge file must not hang ADD */
		if (rn_read_regular(path, 1u << 20, NULL, &text, &len, NULL) == 0)
			doc = json_loadb(text, len, 0, NULL);
	}
	if (!json_is_object(doc)) {
		if (doc)
			json_decref(doc);
		doc = json_object();
	}
	pci = json_object_get(doc, "pci");
	if (!json_is_object(pci)) {
		pci = json_object();
		json_object_set_new(doc, "pci", pci);
	}
	json_object_set_new(doc, "type", json_string("pci"));
	json_object_set_new(doc, "version", json_string("1.1.0"));
	if (plan->bus_id[0] && strchr(plan->bus_id, ':') &&
	    !json_is_string(json_object_get(pci, "pci-address")))
		json_object_set_new(pci, "pci-address", json_string(plan->bus_id));
	names[0] = '\0';
	for (size_t i = 0; i < plan->n_rdma; i++)
		n += (size_t)snprintf(names + n, sizeof(names) - n, "%s%s", i ? "," : "",
				      plan->rdma[i]);
	if (plan->n_rdma)
		json_object_set_new(pci, "rdma-device", json_string(names));

	if (rn_path(dir, sizeof(dir), "%s", path) < 0 || !(slash = strrchr(dir, '/')))
		return cni_fail(ctx, CNI_ERR_IO, "device-info file %s: not an absolute path", path);
	*slash = '\0';
	out = json_dumps(doc, JSON_COMPACT);
	if (!out)
		return cni_fail(ctx, CNI_ERR_IO, "out of memory");
	if ((dir[0] && rn_mkdir_p(dir, 0755, 0755, &err) < 0) ||
	    rn_write_atomic(path, out, strlen(out), 0644, false, "device-info file", &err) < 0)
		return cni_fail(ctx, CNI_ERR_IO, "%s", err.msg);
	return 0;
}

int cni_devinfo_remove(struct cni_ctx *ctx, const char *path)
{
	if (unlink(path) < 0 && errno != ENOENT)
		return cni_fail(ctx, CNI_ERR_IO, "cannot remove device-info file %s: %s", path,
				strerror(errno));
	return 0;
}
