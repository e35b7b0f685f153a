/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An OCI runtime config (config.json) as a podman precreate hook gets it on
 * stdin and gives it back on stdout (containers/common pkg/hooks/exec
 * runtimeconfigfilter.go; oci-hooks(5), stage "precreate"), with variables
 * added to process.env and nothing else changed.
 *
 * "Nothing else" is byte for byte: the output is the input with one
 * contiguous insertion, either new entries before the closing ']' of
 * process.env or a new "env" member before the closing '}' of process.
 * The document is never decoded and encoded again, so integers beyond 64 bits,
 * floats ("0.1", "1e5"), escapes ("\u00e9", "\/"), key order, whitespace and
 * fields no spec knows yet all come back exactly as they came.
 *
 * Parsing is strict: one JSON object (RFC 8259; jansson reads it, integers as
 * reals so none is too big), no key twice in an object, at most `max` bytes;
 * "process" an object, process.env an array of strings, linux.namespaces an
 * array of objects, linux.devices an array of objects with a "path" string,
 * linux.resources an object, its "devices" an array. Anything else is refused with a message; the caller
 * writes nothing then.
 *
 * In librdmans-json (jansson).
 */
#ifndef RDMANS_OCI_CONFIG_JSON_H
#define RDMANS_OCI_CONFIG_JSON_H

#include <stdbool.h>
#include <stddef.h>

#include "rdmans/cleanup.h"
#include "rdmans/error.h"

/* What the config says of the container's network namespace. */
enum rn_oci_netns {
	RN_OCI_NETNS_NONE = 0, /* no "network" entry: the runtime's own (the host's) netns */
	RN_OCI_NETNS_NEW, /* an entry without a path: the runtime creates an empty one */
	RN_OCI_NETNS_PATH, /* an entry with a path: an existing netns (a pod's) */
};

struct rn_oci_config;

/* Parses text[0..len); -EFBIG when len > max, -EINVAL saying what is wrong. */
int rn_oci_config_parse(const char *text, size_t len, size_t max, struct rn_oci_config **ret,
			struct rn_error *err);
void rn_oci_config_free(struct rn_oci_config *c);
RN_DEFINE_TRIVIAL_CLEANUP_FUNC(struct rn_oci_config *, rn_oci_config_free)
#define _cleanup_oci_config_ _cleanup_(rn_oci_config_freep)

/* The parsed document (jansson's), for reading only. */
struct json_t;
const struct json_t *rn_oci_config_doc(const struct rn_oci_config *c);

/* annotations[key] when it is a string, else NULL. */
const char *rn_oci_config_annotation(const struct rn_oci_config *c, const char *key);
/* root.path ("" when none) and root.readonly. */
const char *rn_oci_config_root(const struct rn_oci_config *c, bool *ret_readonly);
/* The network namespace; *ret_path gets the path for RN_OCI_NETNS_PATH, else NULL. */
enum rn_oci_netns rn_oci_config_netns(const struct rn_oci_config *c, const char **ret_path);
/*
 * The value process.env gives `name`, or NULL when it sets none. With the
 * name twice, the first entry: runc passes every entry on in order and
 * getenv() (glibc's, Go's) takes the first. "NAME=" sets an empty value,
 * which counts as set.
 */
const char *rn_oci_config_env_get(const struct rn_oci_config *c, const char *name);

struct rn_oci_env_add {
	const char *name, *value; /* in */
	const char *kept; /* out: the value process.env already gives it (it wins), or NULL */
};

/*
 * The config with each of add[0..n) that process.env does not set already
 * appended to it as "NAME=VALUE" (in that order), the rest byte for byte as
 * parsed. The ones already set are left as they are and get `kept`. *ret
 * (malloc'd, NUL-terminated) and *ret_len; with nothing to add, a copy of the
 * input (also when it has no "process"). -EINVAL when there is something to
 * add and the config has no "process" (no process to give an environment
 * to), or a name or value cannot be an environment entry.
 */
int rn_oci_config_add_env(const struct rn_oci_config *c, struct rn_oci_env_add *add, size_t n,
			  char **ret, size_t *ret_len, struct rn_error *err);

struct rn_oci_dev_add {
	const char *path; /* in: the node's path in the container */
	unsigned int major, minor; /* in: a character device's numbers */
	bool kept; /* out: linux.devices has that path already (left as it is) */
};

/*
 * The config with each of add[0..n) that linux.devices does not have yet
 * appended to it (a character device, mode 0666, root's) and a device cgroup
 * rule allowing it ("rwm") appended to linux.resources.devices, after the
 * rules there: what podman's --device gives a container. Members missing on
 * the way (linux, linux.devices, linux.resources, its devices) are added.
 * The rest byte for byte as parsed, as for rn_oci_config_add_env(); with
 * nothing to add, a copy of the input. -EINVAL for a path that is not
 * absolute.
 */
int rn_oci_config_add_devices(const struct rn_oci_config *c, struct rn_oci_dev_add *add, size_t n,
			      char **ret, size_t *ret_len, struct rn_error *err);

#endif
