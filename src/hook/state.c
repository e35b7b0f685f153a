// SPDX-License-Identifier: Apache-2.0
/* rdmans-hook's input: the OCI state, the bundle's config.json, the annotations (hook.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hook.h"
#include "rdmans/cleanup.h"
#include "rdmans/rdma_nl.h"
#include "rdmans/util.h"

void hook_free(struct hook *h)
{
	rn_pod_ask_free(&h->ask);
	if (h->state)
		json_decref(h->state);
	if (h->config_json)
		json_decref(h->config_json);
	rn_oci_config_free(h->oci);
}

const char *hook_annotation(const struct hook *h, const char *key)
{
	json_t *v;

	if (h->oci)
		return rn_oci_config_annotation(h->oci, key);
	v = json_object_get(json_object_get(h->state, "annotations"), key);
	if (!v)
		v = json_object_get(json_object_get(h->config_json, "annotations"), key);
	return json_is_string(v) ? json_string_value(v) : NULL;
}

int hook_parse_state(struct hook *h, const char *text, struct rn_error *err)
{
	json_error_t jerr;
	json_t *id, *pid, *bundle, *ann;

	h->state = json_loads(text, 0, &jerr);
	if (!h->state || !json_is_object(h->state))
		return rn_error_set(err, EINVAL,
				    "the input on stdin is not an OCI state (expected the "
				    "runtime's JSON {ociVersion, id, pid, bundle, ...}; %s%s)",
				    h->state ? "got something else" : "parse error: ",
				    h->state ? "" : jerr.text);
	id = json_object_get(h->state, "id");
	pid = json_object_get(h->state, "pid");
	bundle = json_object_get(h->state, "bundle");
	ann = json_object_get(h->state, "annotations");
	if (json_is_string(id))
		snprintf(h->id, sizeof(h->id), "%s", json_string_value(id));
	if (!json_is_string(id) || !json_is_string(bundle) || !json_is_integer(pid))
		return rn_error_set(err, EINVAL,
				    "the OCI state on stdin lacks %s (rdmans-hook runs as a "
				    "createRuntime or prestart hook, where the runtime passes "
				    "them)",
				    !json_is_string(id)	      ? "\"id\""
				    : !json_is_string(bundle) ? "\"bundle\""
							      : "a numeric \"pid\"");
	if (json_integer_value(pid) <= 0 || json_integer_value(pid) > INT_MAX)
		return rn_error_set(err, EINVAL,
				    "the OCI state says pid %" JSON_INTEGER_FORMAT
				    ": the container has no process yet (run rdmans-hook at "
				    "createRuntime or prestart, not earlier)",
				    json_integer_value(pid));
	if (ann && !json_is_object(ann))
		return rn_error_set(err, EINVAL,
				    "\"annotations\" in the OCI state is not an object");
	h->pid = (pid_t)json_integer_value(pid);
	if ((size_t)snprintf(h->bundle, sizeof(h->bundle), "%s", json_string_value(bundle)) >=
		    sizeof(h->bundle) ||
	    h->bundle[0] != '/')
		return rn_error_set(err, EINVAL,
				    "bundle '%s' in the OCI state is not an absolute path",
				    json_string_value(bundle));
	return 0;
}

int hook_read_config(struct hook *h, struct rn_error *err)
{
	char path[PATH_MAX + 16];
	json_error_t jerr;
	json_t *root, *rpath, *ro;

	snprintf(path, sizeof(path), "%s/config.json", h->bundle);
	{
		_cleanup_free_ char *text = NULL;
		size_t len = 0;
		int r = rn_read_regular(path, MAX_CONFIG_BYTES, "the bundle's", &text, &len, err);

		if (r < 0)
			return r;
		h->config_json = json_loadb(text, len, 0, &jerr);
	}
	if (!h->config_json)
		return rn_error_set(err, EINVAL, "cannot read the bundle's %s: %s", path,
				    jerr.text);
	root = json_object_get(h->config_json, "root");
	rpath = json_object_get(root, "path");
	ro = json_object_get(root, "readonly");
	if (!json_is_string(rpath) || !json_string_value(rpath)[0])
		return rn_error_set(err, EINVAL, "%s has no root.path", path);
	h->readonly = json_is_true(ro);
	if (json_string_value(rpath)[0] == '/')
		snprintf(h->rootfs, sizeof(h->rootfs), "%s", json_string_value(rpath));
	else if ((size_t)snprintf(h->rootfs, sizeof(h->rootfs), "%s/%s", h->bundle,
				  json_string_value(rpath)) >= sizeof(h->rootfs))
		return rn_error_set(err, ENAMETOOLONG, "the rootfs path is too long");
	return 0;
}
