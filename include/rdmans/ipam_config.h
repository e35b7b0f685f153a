/* SPDX-License-Identifier: Apache-2.0 */
/* rdma-netns-ipam's configuration: whereabouts' keys, inline and from a flat file (ipam_config.c). */
#ifndef RDMANS_IPAM_CONFIG_H
#define RDMANS_IPAM_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "rdmans/error.h"
#include "rdmans/ipam_range.h"

#define RN_IPAM_PLUGIN_NAME "rdma-netns-ipam"
#define RN_IPAM_DEFAULT_DATA_DIR "/var/lib/cni/rdma-netns-ipam"
#define RN_IPAM_DEFAULT_ETCD_PREFIX "/rdma-netns-ipam"
/* The store's name for addresses of a config without network_name. */
#define RN_IPAM_DEFAULT_SCOPE "_default"

/* ---- configuration ------------------------------------------------------ */

enum rn_ipam_store_kind {
	RN_IPAM_STORE_LOCAL,
	RN_IPAM_STORE_ETCD,
	RN_IPAM_STORE_KUBERNETES,
};

enum rn_ipam_log_level {
	RN_IPAM_LOG_ERROR,
	RN_IPAM_LOG_INFO,
	RN_IPAM_LOG_DEBUG,
};

struct rn_ipam_etcd {
	char **endpoints; /* "https://10.0.0.1:2379" */
	size_t n_endpoints;
	char *ca_file, *cert_file, *key_file;
	char *username;
	char *password; /* a secret: never in messages or logs */
	char *key_prefix;
	long timeout_ms; /* each request, at most */
	/* all requests of one store (one CNI call), at most; 0: no bound (rdmans) */
	long deadline_ms;
	/* where a user sets the user name and password, for messages (static text):
	 * the config keys, or rdmans's flags (RN_IPAM_CONFIG_CLI) */
	const char *user_settings;
};

/* The kubernetes store: the cluster's API server, as a kubeconfig says. */
struct rn_ipam_kubernetes {
	char *kubeconfig; /* its path */
	long timeout_ms; /* each request, at most */
	long deadline_ms; /* all requests of one CNI call; 0: no bound (rdmans) */
};

struct rn_ipam_config {
	char *cni_version;
	char *network; /* the CNI network's "name" */
	char *network_name; /* whereabouts' network_name: a separate set of pools */
	char *scope; /* network_name, or RN_IPAM_DEFAULT_SCOPE */
	bool overlapping; /* enable_overlapping_ranges (default true) */
	struct rn_ipam_range ranges[RN_IPAM_MAX_RANGES];
	size_t n_ranges;
	char *routes_json; /* "routes" and "dns" as given, for the result */
	char *dns_json;
	char *log_file;
	enum rn_ipam_log_level log_level;
	char *flat_file; /* the configuration file merged in, if any */
	enum rn_ipam_store_kind store;
	char *data_dir;
	struct rn_ipam_etcd etcd;
	struct rn_ipam_kubernetes kubernetes;
	char *node;
};

/* Store settings only: DEL and GC must work whatever became of the ranges. */
#define RN_IPAM_CONFIG_STORE_ONLY 0x1u
/* The settings came from rdmans's --etcd-* flags: messages name the flags, not the keys. */
#define RN_IPAM_CONFIG_CLI 0x2u
/* The default bound on one CNI call's etcd requests (ipam.etcd.deadline_ms). */
#define RN_IPAM_ETCD_DEADLINE_MS 10000

/*
 * Parses a CNI network config (its "ipam" object), a conflist (the first
 * plugin with an "ipam" object) or a flat IPAM object, merges the first
 * configuration file found (configuration_path, then
 * {/etc/kubernetes/cni/net.d,/etc/cni/net.d,/host/etc/cni/net.d}/
 * {rdma-netns-ipam.d/rdma-netns-ipam.conf,whereabouts.d/whereabouts.conf},
 * under `root`, "" for /): keys given inline win. Errors: -EBADMSG (not
 * JSON), -EINVAL (a bad value, named in the message), -ENOENT/-EACCES (a file).
 */
int rn_ipam_config_parse(const char *json, const char *root, unsigned flags,
			 struct rn_ipam_config *ret, struct rn_error *err);
/*
 * The same from the configuration already decoded (jansson's json_t), as
 * the CNI skeleton hands it over: decoded once. -EBADMSG when not an object.
 */
struct json_t;
int rn_ipam_config_from_json(struct json_t *doc, const char *root, unsigned flags,
			     struct rn_ipam_config *ret, struct rn_error *err);
void rn_ipam_config_free(struct rn_ipam_config *c);

#endif
