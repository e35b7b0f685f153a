// SPDX-License-Identifier: Apache-2.0
/*
 * rdmans ipam: what rdma-netns-ipam holds, for operators.
 *
 *   rdmans ipam [ls] [FILTERS] [STORE]         address records
 *   rdmans ipam show ADDRESS [STORE]           one record and its attachment
 *   rdmans ipam release ADDRESS | FILTERS [STORE]
 *   rdmans ipam release --damaged [ADDRESS] [STORE]   damaged address records
 *   rdmans ipam gc [--dry-run] [STORE]         crash leftovers, orphans, damaged attachments
 *   rdmans ipam reconcile [--grace SECONDS] [--node NODE] [--dry-run] [STORE]
 *                                              this node's records of dead pods
 *   rdmans ipam import IPPOOLS.json --config CONF [--ifname IF] [--node NODE] [--dry-run]
 *                                              whereabouts' allocations, kept
 *
 * STORE: --config FILE (a CNI network config, conflist or flat IPAM file),
 * --data-dir DIR, or --etcd URL[,URL] with --etcd-ca/-cert/-key/-user/
 * -password-file/-prefix. Without any, the flat files rdma-netns-ipam reads
 * (rdma-netns-ipam(8)) and then the local store in its default directory.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rdmans.h"
#include "rdmans/cleanup.h"
#include "rdmans/util.h"
#include "rdmans/ipam.h"
#include "rdmans/ipam_admin.h"
#include "rdmans/ipam_import.h"
#include "rdmans/ipam_reconcile.h"

struct ipam_opts {
	const char *config;
	const char *data_dir;
	const char *etcd, *etcd_ca, *etcd_cert, *etcd_key, *etcd_user, *etcd_password_file,
		*etcd_prefix;
	struct rn_ipam_filter filter;
	bool dry_run, damaged;
	const char *grace;
	const char *address;
};

/* What a command takes besides the store options. */
enum {
	OPT_FILTERS = 1 << 0, /* --node, --network, --pod, --container, --ifname */
	OPT_ADDRESS = 1 << 1, /* a positional ADDRESS */
	OPT_DRY_RUN = 1 << 2,
	OPT_DAMAGED = 1 << 3,
	OPT_GRACE = 1 << 4,
	OPT_NODE = 1 << 5, /* --node alone */
	OPT_IFNAME = 1 << 6, /* --ifname alone */
};

/* Parses options; a leftover non-option goes to o->address (when allowed). */
static int parse_opts(struct rn_cli *cli, struct ipam_opts *o, unsigned allow, const char *usage)
{
	bool filters = allow & OPT_FILTERS, address = allow & OPT_ADDRESS;
	static const struct {
		const char *flag;
		size_t off;
		bool filter;
	} table[] = {
		{ "--config", offsetof(struct ipam_opts, config), false },
		{ "--data-dir", offsetof(struct ipam_opts, data_dir), false },
		{ "--etcd", offsetof(struct ipam_opts, etcd), false },
		{ "--etcd-ca", offsetof(struct ipam_opts, etcd_ca), false },
		{ "--etcd-cert", offsetof(struct ipam_opts, etcd_cert), false },
		{ "--etcd-key", offsetof(struct ipam_opts, etcd_key), false },
		{ "--etcd-user", offsetof(struct ipam_opts, etcd_user), false },
		{ "--etcd-password-file", offsetof(struct ipam_opts, etcd_password_file), false },
		{ "--etcd-prefix", offsetof(struct ipam_opts, etcd_prefix), false },
		{ "--scope", offsetof(struct ipam_opts, filter.scope), false },
		{ "--node", offsetof(struct ipam_opts, filter.node), true },
		{ "--network", offsetof(struct ipam_opts, filter.network), true },
		{ "--container", offsetof(struct ipam_opts, filter.container_id), true },
		{ "--pod", offsetof(struct ipam_opts, filter.pod), true },
		{ "--ifname", offsetof(struct ipam_opts, filter.ifname), true },
	};
	const char *arg;

	while ((arg = rn_cli_next(cli))) {
		bool found = false;

		if (strcmp(arg, "--dry-run") == 0 && (allow & OPT_DRY_RUN)) {
			o->dry_run = true;
			continue;
		}
		if (strcmp(arg, "--damaged") == 0 && (allow & OPT_DAMAGED)) {
			o->damaged = true;
			continue;
		}
		if (strcmp(arg, "--grace") == 0 && (allow & OPT_GRACE)) {
			o->grace = rn_cli_next(cli);
			if (!o->grace || !*o->grace)
				return rn_cli_usage("--grace needs a value; %s", usage);
			continue;
		}
		for (size_t i = 0; i < RN_ARRAY_SIZE(table) && !found; i++) {
			const char *value;

			if (strcmp(arg, table[i].flag) != 0)
				continue;
			if (table[i].filter && !filters &&
			    !((allow & OPT_NODE) && strcmp(arg, "--node") == 0) &&
			    !((allow & OPT_IFNAME) && strcmp(arg, "--ifname") == 0))
				return rn_cli_usage("%s does not take %s; %s", "this command", arg,
						    usage);
			value = rn_cli_next(cli);
			if (!value || !*value)
				return rn_cli_usage("%s needs a value; %s", arg, usage);
			*(const char **)((char *)o + table[i].off) = value;
			found = true;
		}
		if (found)
			continue;
		if (arg[0] != '-' && address && !o->address) {
			o->address = arg;
			continue;
		}
		return rn_cli_usage("unexpected argument '%s'; %s", arg, usage);
	}
	if (o->config && (o->data_dir || o->etcd))
		return rn_cli_usage("--config and --data-dir/--etcd: give one of them");
	if (o->data_dir && o->etcd)
		return rn_cli_usage("--data-dir and --etcd: give one of them");
	return 0;
}

/*
 * The store settings, through the same parser as the plugin's; with
 * `ranges`, the network's ranges too (then --config must name them).
 */
static int load_config(const struct ipam_opts *o, bool ranges, struct rn_ipam_config *c,
		       struct rn_error *err)
{
	_cleanup_json_ json_t *doc = NULL;
	int r;

	if (o->config) {
		_cleanup_free_ char *raw = NULL;
		json_error_t jerr;
		size_t len = 0;

		r = rn_read_regular(o->config, 1u << 20, "--config", &raw, &len, err);
		if (r < 0)
			return r;
		doc = json_loadb(raw, len, 0, &jerr);
		if (!doc)
			return rn_error_set(err, EINVAL, "--config %s: %s", o->config, jerr.text);
	} else {
		doc = json_object();
		if (o->data_dir) {
			json_object_set_new(doc, "store", json_string("local"));
			json_object_set_new(doc, "dataDir", json_string(o->data_dir));
		}
		if (o->etcd) {
			json_t *etcd = json_object();

			json_object_set_new(doc, "store", json_string("etcd"));
			json_object_set_new(etcd, "endpoints", json_string(o->etcd));
			if (o->etcd_ca)
				json_object_set_new(etcd, "ca_file", json_string(o->etcd_ca));
			if (o->etcd_cert)
				json_object_set_new(etcd, "cert_file", json_string(o->etcd_cert));
			if (o->etcd_key)
				json_object_set_new(etcd, "key_file", json_string(o->etcd_key));
			if (o->etcd_user)
				json_object_set_new(etcd, "username", json_string(o->etcd_user));
			if (o->etcd_password_file)
				json_object_set_new(etcd, "password_file",
						    json_string(o->etcd_password_file));
			if (o->etcd_prefix)
				json_object_set_new(etcd, "key_prefix",
						    json_string(o->etcd_prefix));
			json_object_set_new(doc, "etcd", etcd);
		}
	}
	r = rn_ipam_config_from_json(doc, rn_config_root(),
				     (ranges ? 0 : RN_IPAM_CONFIG_STORE_ONLY) |
					     (o->config ? 0 : RN_IPAM_CONFIG_CLI),
				     c, err);
	/* no runtime's deadline over rdmans (a reconcile pass may take long): each request's only */
	c->etcd.deadline_ms = 0;
	c->kubernetes.deadline_ms = 0;
	return r;
}

/* The store a command works on, with the configuration that named it; closed as one. */
struct opened {
	struct rn_ipam_config c;
	struct rn_ipam_store *s;
};

static void opened_close(struct opened *x)
{
	rn_ipam_store_close(x->s);
	rn_ipam_config_free(&x->c);
}

static int open_with(const struct ipam_opts *o, bool ranges, struct opened *ret,
		     struct rn_error *err)
{
	int r = load_config(o, ranges, &ret->c, err);

	if (r == 0)
		r = rn_ipam_store_open(&ret->c, &ret->s, err);
	return r;
}

static int open_from(const struct ipam_opts *o, struct opened *ret, struct rn_error *err)
{
	return open_with(o, false, ret, err);
}

static json_t *record_json(const struct rn_ipam_record *r)
{
	return json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s}", "address", r->ip,
			 "range", r->range, "scope", r->scope, "pool", r->pool, "attachment",
			 r->attachment, "network", r->network, "container_id", r->container_id,
			 "ifname", r->ifname, "pod", r->pod, "node", r->node, "time", r->time,
			 "netns", r->netns);
}

/* A damaged entry: where it is and why; "address" only when it takes one. */
static json_t *damaged_json(const struct rn_ipam_damaged *d)
{
	json_t *o = json_pack("{s:s,s:s,s:s}", "scope", d->scope,
			      d->attachment ? "attachment" : "key", d->key, "damaged", d->why);

	if (!d->attachment)
		json_object_set_new(o, "pool", json_string(d->pool));
	if (d->takes_address)
		json_object_set_new(o, "address", json_string(d->key));
	return o;
}

static void print_damaged(const struct rn_ipam_damaged *d, size_t n)
{
	for (size_t i = 0; i < n; i++)
		printf("%-10s %-28s DAMAGED %s %s: %s\n", d[i].scope, d[i].key,
		       d[i].attachment ? "attachment" : "address record",
		       d[i].attachment	    ? "('rdmans ipam gc' rebuilds it)"
		       : d[i].takes_address ? "(its address stays taken; 'rdmans ipam release "
					      "--damaged' frees it)"
					    : "(takes no address)",
		       d[i].why);
}

static void print_table(const struct rn_ipam_record *recs, size_t n)
{
	printf("%-10s %-28s %-18s %-14s %-30s %-8s %-14s %s\n", "SCOPE", "ADDRESS", "RANGE", "NODE",
	       "POD", "IFNAME", "CONTAINER", "SINCE");
	for (size_t i = 0; i < n; i++)
		printf("%-10s %-28s %-18s %-14s %-30s %-8s %-14.12s %s\n", recs[i].scope,
		       recs[i].ip, recs[i].range, recs[i].node, recs[i].pod[0] ? recs[i].pod : "-",
		       recs[i].ifname, recs[i].container_id, recs[i].time);
}

/*
 * Records holding ADDRESS (in o->filter.scope if given), and the damaged
 * ones taking it (bad: optional); -ENXIO when there is neither.
 */
static int find_address(struct rn_ipam_store *s, struct ipam_opts *o, struct rn_ipam_record **recs,
			size_t *n, struct rn_ipam_damaged **bad, size_t *n_bad,
			struct rn_error *err)
{
	struct rn_ipam_damaged *none = NULL;
	size_t n_none = 0;
	struct rn_ip ip;
	int r;

	if (rn_ip_parse(o->address, &ip) < 0)
		return rn_error_set(err, EINVAL, "'%s' is not an IP address", o->address);
	o->filter.ip = o->address;
	r = rn_ipam_list(s, &o->filter, recs, n, bad ? bad : &none, bad ? n_bad : &n_none, err);
	if (r < 0)
		return r;
	n_none = bad ? *n_bad : n_none;
	free(none);
	if (*n == 0 && n_none == 0)
		return rn_error_set(err, ENXIO, "no record holds %s%s%s (see 'rdmans ipam ls')",
				    o->address, o->filter.scope ? " in scope " : "",
				    o->filter.scope ? o->filter.scope : "");
	if (*n == 0 && !bad)
		return rn_error_set(err, ENXIO,
				    "no readable record holds %s, but a damaged one takes it: see "
				    "'rdmans ipam show %s'",
				    o->address, o->address);
	return 0;
}

/* What ls, show and release read, with the store they read it from. */
struct found {
	struct opened store;
	struct rn_ipam_record *recs;
	struct rn_ipam_damaged *bad;
	size_t n, n_bad;
};

static void found_free(struct found *f)
{
	free(f->recs);
	free(f->bad);
	opened_close(&f->store);
}

/*
 * Opens the store o names and reads the records o asks for into f (the
 * damaged ones too when want_bad): those holding o->address (find_address()),
 * or those o->filter lets through. With --damaged, ADDRESS only filters.
 */
static int find(struct ipam_opts *o, bool want_bad, struct found *f, struct rn_error *err)
{
	int r = open_from(o, &f->store, err);

	if (r == 0 && o->address && !o->damaged) {
		r = find_address(f->store.s, o, &f->recs, &f->n, want_bad ? &f->bad : NULL,
				 want_bad ? &f->n_bad : NULL, err);
	} else if (r == 0) {
		struct rn_ip ip;

		if (o->address && rn_ip_parse(o->address, &ip) < 0)
			r = rn_error_set(err, EINVAL, "'%s' is not an IP address", o->address);
		o->filter.ip = o->address;
		if (r == 0)
			r = rn_ipam_list(f->store.s, &o->filter, &f->recs, &f->n,
					 want_bad ? &f->bad : NULL, want_bad ? &f->n_bad : NULL,
					 err);
	}
	return r;
}

static const char *const ls_usage = "usage: rdmans ipam ls [--node N] [--network NAME] "
				    "[--pod NS/NAME] [--container ID] [--ifname IF] [--scope S] "
				    "[--config FILE | --data-dir DIR | --etcd URLS ...]";

static int ipam_ls(struct rn_cli *cli)
{
	_cleanup_(found_free) struct found f = { 0 };
	struct ipam_opts o = { 0 };
	struct rn_error err = { 0 };
	int r;

	r = parse_opts(cli, &o, OPT_FILTERS, ls_usage);
	if (r)
		return r;
	if (find(&o, true, &f, &err) < 0)
		return rn_cli_fail(&err);
	if (cli->json) {
		json_t *list = json_array();

		for (size_t i = 0; i < f.n; i++)
			json_array_append_new(list, record_json(&f.recs[i]));
		for (size_t i = 0; i < f.n_bad; i++)
			json_array_append_new(list, damaged_json(&f.bad[i]));
		return rn_cli_print_json(cli, list);
	}
	print_table(f.recs, f.n);
	print_damaged(f.bad, f.n_bad);
	return 0;
}

static int ipam_show(struct rn_cli *cli)
{
	_cleanup_(found_free) struct found f = { 0 };
	struct ipam_opts o = { 0 };
	struct rn_error err = { 0 };
	int r;

	r = parse_opts(cli, &o, OPT_ADDRESS,
		       "usage: rdmans ipam show ADDRESS [--scope S] [--config FILE | ...]");
	if (r)
		return r;
	if (!o.address)
		return rn_cli_usage("usage: rdmans ipam show ADDRESS [--scope S]");
	if (find(&o, true, &f, &err) < 0)
		return rn_cli_fail(&err);
	if (cli->json) {
		json_t *list = json_array();

		for (size_t i = 0; i < f.n; i++) {
			struct rn_ipam_attachment att;
			struct rn_error aerr = { 0 };
			json_t *rec = record_json(&f.recs[i]), *held = json_array();

			if (rn_ipam_attachment_get(f.store.s, f.recs[i].scope, f.recs[i].attachment,
						   &att, &aerr) == 0)
				for (size_t h = 0; h < att.n; h++)
					json_array_append_new(held, json_string(att.held[h].ip));
			json_object_set_new(rec, "attachment_holds", held);
			json_array_append_new(list, rec);
		}
		for (size_t i = 0; i < f.n_bad; i++)
			json_array_append_new(list, damaged_json(&f.bad[i]));
		return rn_cli_print_json(cli, list);
	}
	for (size_t i = 0; i < f.n_bad; i++)
		printf("%saddress:      %s\nscope:        %s\npool:         %s\n"
		       "DAMAGED:      %s\n"
		       "fix:          the address stays taken while this is stored; if no pod uses "
		       "%s, 'rdmans ipam release --damaged %s --scope %s' removes it (only while "
		       "it is still damaged)\n",
		       i ? "\n" : "", f.bad[i].key, f.bad[i].scope, f.bad[i].pool, f.bad[i].why,
		       f.bad[i].key, f.bad[i].key, f.bad[i].scope);
	if (f.n_bad && f.n)
		printf("\n");
	for (size_t i = 0; i < f.n; i++) {
		const struct rn_ipam_record *rec = &f.recs[i];
		struct rn_ipam_attachment att;
		struct rn_error aerr = { 0 };

		printf("%saddress:      %s\nrange:        %s\nscope:        %s\npool:         %s\n"
		       "network:      %s\nnode:         %s\npod:          %s\nifname:       %s\n"
		       "container:    %s\nattachment:   %s\nsince:        %s\n",
		       i ? "\n" : "", rec->ip, rec->range, rec->scope, rec->pool, rec->network,
		       rec->node, rec->pod[0] ? rec->pod : "-", rec->ifname, rec->container_id,
		       rec->attachment, rec->time);
		if (rn_ipam_attachment_get(f.store.s, rec->scope, rec->attachment, &att, &aerr) ==
		    0) {
			printf("holds:       ");
			for (size_t h = 0; h < att.n; h++)
				printf(" %s", att.held[h].ip);
			printf("\n");
		} else {
			printf("holds:        (no attachment record: 'rdmans ipam gc' releases "
			       "it)\n");
		}
	}
	return 0;
}

static const char *const release_usage =
	"usage: rdmans ipam release ADDRESS [--scope S] | --container ID | --pod NS/NAME | "
	"--node NODE [--ifname IF] [--network NAME] | --damaged [ADDRESS] [--scope S] "
	"[--config FILE | --data-dir DIR | --etcd ...]";

/*
 * Releases the n address records recs[] or (recs NULL) the n damaged ones
 * bad[] in turn, saying so (a line each; {"released": [...]} with -j).
 */
static int release_each(struct rn_cli *cli, struct rn_ipam_store *s,
			const struct rn_ipam_record *recs, const struct rn_ipam_damaged *bad,
			size_t n)
{
	struct rn_error err = { 0 };
	json_t *done = json_array();

	for (size_t i = 0; i < n; i++) {
		const char *key = recs ? recs[i].ip : bad[i].key;
		int r = recs ? rn_ipam_release(s, &recs[i], &err)
			     : rn_ipam_release_damaged(s, &bad[i], &err);

		if (r < 0) {
			json_decref(done);
			return rn_cli_fail(&err);
		}
		json_array_append_new(done, json_string(key));
		if (cli->json)
			continue;
		if (recs)
			printf("released %s (%s%s %s, node %s)\n", key,
			       recs[i].pod[0] ? "pod " : "container ",
			       recs[i].pod[0] ? recs[i].pod : recs[i].container_id, recs[i].ifname,
			       recs[i].node);
		else
			printf("removed the damaged record of %s in scope %s (%s)\n", key,
			       bad[i].scope, bad[i].why);
	}
	if (cli->json)
		return rn_cli_print_json(cli, json_pack("{s:o}", "released", done));
	json_decref(done);
	return 0;
}

/* release --damaged [ADDRESS]: damaged address records, each only while still damaged. */
static int release_damaged(struct rn_cli *cli, struct ipam_opts *o)
{
	_cleanup_(found_free) struct found f = { 0 };
	struct rn_error err = { 0 };
	size_t k = 0;

	if (o->filter.node || o->filter.network || o->filter.container_id || o->filter.pod ||
	    o->filter.ifname)
		return rn_cli_usage("--damaged takes only ADDRESS and --scope: a damaged record "
				    "names no owner");
	if (find(o, true, &f, &err) < 0)
		return rn_cli_fail(&err);
	for (size_t i = 0; i < f.n_bad; i++)
		if (f.bad[i].takes_address)
			f.bad[k++] = f.bad[i];
	if (k == 0) {
		rn_error_set(&err, ENXIO, "no damaged address record%s%s (see 'rdmans ipam ls')",
			     o->address ? " takes " : "", o->address ? o->address : "");
		return rn_cli_fail(&err);
	}
	if (o->address && k > 1) {
		rn_error_set(&err, ENOTUNIQ,
			     "%zu damaged records take %s (scopes or pools): add --scope", k,
			     o->address);
		return rn_cli_fail(&err);
	}
	return release_each(cli, f.store.s, NULL, f.bad, k);
}

static int ipam_release(struct rn_cli *cli)
{
	_cleanup_(found_free) struct found f = { 0 };
	struct ipam_opts o = { 0 };
	struct rn_error err = { 0 };
	int r;

	r = parse_opts(cli, &o, OPT_FILTERS | OPT_ADDRESS | OPT_DAMAGED, release_usage);
	if (r)
		return r;
	if (o.damaged)
		return release_damaged(cli, &o);
	if (!o.address && !o.filter.container_id && !o.filter.pod && !o.filter.node)
		return rn_cli_usage("%s", release_usage);
	r = find(&o, false, &f, &err);
	if (r == 0 && o.address && f.n > 1)
		r = rn_error_set(&err, ENOTUNIQ,
				 "%s is held in %zu scopes or pools: add --scope "
				 "(see 'rdmans ipam show %s')",
				 o.address, f.n, o.address);
	else if (r == 0 && !o.address && f.n == 0)
		r = rn_error_set(&err, ENXIO, "no record matches (see 'rdmans ipam ls')");
	if (r < 0)
		return rn_cli_fail(&err);
	return release_each(cli, f.store.s, f.recs, NULL, f.n);
}

static int ipam_gc(struct rn_cli *cli)
{
	_cleanup_(opened_close) struct opened store = { 0 };
	struct ipam_opts o = { 0 };
	struct rn_ipam_repair_stats st;
	struct rn_error err = { 0 };
	int r;

	r = parse_opts(cli, &o, OPT_DRY_RUN,
		       "usage: rdmans ipam gc [--dry-run] [--config FILE | --data-dir DIR | "
		       "--etcd URLS ...]");
	if (r)
		return r;
	r = open_from(&o, &store, &err);
	if (r == 0)
		r = rn_ipam_repair(store.s, o.dry_run, &st, &err);
	if (r < 0)
		return rn_cli_fail(&err);
	if (cli->json)
		return rn_cli_print_json(cli, json_pack("{s:b,s:I,s:I,s:I,s:I,s:I}", "dry_run",
							o.dry_run, "temp_files",
							(json_int_t)st.temp_files, "orphans",
							(json_int_t)st.orphans, "empty_attachments",
							(json_int_t)st.empty, "rebuilt_attachments",
							(json_int_t)st.rebuilt, "damaged_records",
							(json_int_t)st.damaged));
	printf("%s %zu temp file(s) of crashed writers, %zu address record(s) no attachment "
	       "holds, %zu attachment(s) holding nothing; %s %zu damaged attachment(s) from "
	       "their address records\n",
	       o.dry_run ? "would remove" : "removed", st.temp_files, st.orphans, st.empty,
	       o.dry_run ? "would rebuild" : "rebuilt", st.rebuilt);
	if (st.damaged)
		printf("%zu damaged address record(s) still take their address: see 'rdmans ipam "
		       "ls', then 'rdmans ipam release --damaged ADDRESS'\n",
		       st.damaged);
	return 0;
}

struct reconcile_out {
	struct rn_cli *cli;
	bool dry_run;
	json_t *events; /* -j */
};

static const char *verdict_name(enum rn_ipam_verdict v, bool dry_run)
{
	switch (v) {
	case RN_IPAM_RELEASED:
		return dry_run ? "would release" : "released";
	case RN_IPAM_KEPT_YOUNG:
		return "kept (grace)";
	case RN_IPAM_KEPT_UNKNOWN:
		return "kept (cannot tell)";
	case RN_IPAM_KEPT_RUNNING:
		return "kept (container runs)";
	case RN_IPAM_CHANGED:
		return "kept (changed)";
	case RN_IPAM_DAMAGED:
		return "damaged";
	}
	return "?";
}

/* One line per record acted on or reported: when, what, the address, the pod, why. */
static void reconcile_event(void *ctx, enum rn_ipam_verdict v, const struct rn_ipam_record *rec,
			    const struct rn_ipam_damaged *d, const char *why)
{
	struct reconcile_out *out = ctx;
	char when[32];

	if (out->events) {
		json_t *e = rec ? record_json(rec) : damaged_json(d);

		json_object_set_new(e, "verdict", json_string(verdict_name(v, out->dry_run)));
		json_object_set_new(e, "why", json_string(why));
		json_array_append_new(out->events, e);
		return;
	}
	rn_ipam_record_time((long long)time(NULL), when, sizeof(when));
	if (rec)
		printf("%s %s %s (pod %s, ifname %s, container %.12s, node %s, scope %s): %s\n",
		       when, verdict_name(v, out->dry_run), rec->ip, rec->pod[0] ? rec->pod : "-",
		       rec->ifname, rec->container_id, rec->node, rec->scope, why);
	else
		printf("%s damaged %s %s in scope %s: %s (%s)\n", when,
		       d->attachment ? "attachment" : "address record", d->key, d->scope, why,
		       d->attachment ? "'rdmans ipam gc' rebuilds it"
				     : "see 'rdmans ipam show', 'rdmans ipam release --damaged'");
	fflush(stdout);
}

static const char *const reconcile_usage =
	"usage: rdmans ipam reconcile [--grace SECONDS] [--node NODE] [--dry-run] "
	"[--config FILE | --data-dir DIR | --etcd URLS ...]";

static int ipam_reconcile(struct rn_cli *cli)
{
	_cleanup_(opened_close) struct opened store = { 0 };
	struct ipam_opts o = { 0 };
	struct rn_ipam_reconcile_stats st;
	struct rn_ipam_reconcile_opts ro = { 0 };
	struct reconcile_out out = { cli, false, NULL };
	struct rn_error err = { 0 };
	int r;

	r = parse_opts(cli, &o, OPT_DRY_RUN | OPT_GRACE | OPT_NODE, reconcile_usage);
	if (r)
		return r;
	ro.grace_s = RN_IPAM_RECONCILE_GRACE_S;
	if (o.grace) {
		char *end;
		long v;

		errno = 0;
		v = strtol(o.grace, &end, 10);
		if (errno || *end || end == o.grace || v < 0 || v > 10L * 365 * 86400)
			return rn_cli_usage("--grace takes whole seconds (0 or more), not '%s'; %s",
					    o.grace, reconcile_usage);
		ro.grace_s = v;
	}
	ro.dry_run = o.dry_run;
	out.dry_run = o.dry_run;
	if (cli->json)
		out.events = json_array();
	r = open_from(&o, &store, &err);
	ro.node = o.filter.node ? o.filter.node : store.c.node;
	if (r == 0)
		r = rn_ipam_reconcile(store.s, &ro, reconcile_event, &out, &st, &err);
	if (r < 0) {
		json_decref(out.events);
		return rn_cli_fail(&err);
	}
	if (cli->json)
		return rn_cli_print_json(
			cli, json_pack("{s:b,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:o}", "dry_run",
				       o.dry_run, "grace_s", (json_int_t)ro.grace_s, "records",
				       (json_int_t)st.records, "this_node", (json_int_t)st.mine,
				       "alive", (json_int_t)st.alive, "released",
				       (json_int_t)st.released, "in_grace", (json_int_t)st.young,
				       "unknown", (json_int_t)st.unknown + st.running, "changed",
				       (json_int_t)st.changed, "damaged", (json_int_t)st.damaged,
				       "events", out.events));
	printf("reconcile: %zu record(s), %zu of this node: %zu alive, %zu %s, %zu within the "
	       "%lds grace, %zu undecidable, %zu changed meanwhile; %zu damaged\n",
	       st.records, st.mine, st.alive, st.released, o.dry_run ? "to release" : "released",
	       st.young, ro.grace_s, st.unknown + st.running, st.changed, st.damaged);
	return 0;
}

static const char *import_outcome_name(enum rn_import_outcome v)
{
	switch (v) {
	case RN_IMPORT_TAKEN:
		return "imported";
	case RN_IMPORT_HELD:
		return "already held";
	case RN_IMPORT_REFUSED:
		return "refused";
	case RN_IMPORT_WOULD:
		return "would import";
	}
	return "?";
}

struct import_out {
	json_t *events; /* -j */
	size_t counts[RN_IMPORT_WOULD + 1];
};

static void import_event(void *ctx, const struct rn_whereabouts_alloc *a, const char *attachment,
			 enum rn_import_outcome v, const char *why)
{
	struct import_out *out = ctx;

	out->counts[v]++;
	if (out->events) {
		json_array_append_new(out->events,
				      json_pack("{s:s,s:s,s:s,s:s,s:s,s:s?}", "address", a->ip_text,
						"ippool", a->pool, "attachment", attachment,
						"container_id", a->container_id, "outcome",
						import_outcome_name(v), "why", why));
		return;
	}
	printf("%-13s %-28s %s (IPPool %s, container %.12s)%s%s\n", import_outcome_name(v),
	       a->ip_text, attachment, a->pool, a->container_id, why ? ": " : "", why ? why : "");
}

static const char *const import_usage =
	"usage: rdmans ipam import IPPOOLS.json --config NETWORK-CONFIG [--ifname IF] "
	"[--node NODE] [--dry-run]";

/*
 * whereabouts' IPPools (kubectl get ippools.whereabouts.cni.cncf.io -A -o
 * json) into the store the network's config names: its pods keep their addresses.
 */
static int ipam_import(struct rn_cli *cli)
{
	_cleanup_(opened_close) struct opened store = { 0 };
	_cleanup_free_ struct rn_whereabouts_alloc *allocs = NULL;
	_cleanup_free_ char *text = NULL;
	struct ipam_opts o = { 0 };
	struct import_out out = { 0 };
	struct rn_import_opts io = { 0 };
	struct rn_error err = { 0 };
	size_t len = 0, n = 0, refused = 0;
	int r;

	r = parse_opts(cli, &o, OPT_ADDRESS | OPT_DRY_RUN | OPT_NODE | OPT_IFNAME, import_usage);
	if (r)
		return r;
	if (!o.address)
		return rn_cli_usage("which IPPools? %s", import_usage);
	if (!o.config)
		return rn_cli_usage("--config names the network the addresses are for (its "
				    "ranges and store); %s",
				    import_usage);
	io.ifname = o.filter.ifname;
	io.node = o.filter.node;
	io.dry_run = o.dry_run;
	r = rn_read_regular(o.address, 64u << 20, "IPPools file", &text, &len, &err);
	if (r == 0)
		r = rn_whereabouts_parse(text, len, &allocs, &n, &err);
	if (r == 0)
		r = open_with(&o, true, &store, &err);
	if (r < 0)
		return rn_cli_fail(&err);
	if (cli->json)
		out.events = json_array();
	r = rn_ipam_import(store.s, &store.c, allocs, n, &io, import_event, &out, &refused, &err);
	if (r < 0) {
		json_decref(out.events);
		return rn_cli_fail(&err);
	}
	if (cli->json)
		rn_cli_print_json(cli,
				  json_pack("{s:b,s:I,s:I,s:I,s:I,s:o}", "dry_run", o.dry_run,
					    "allocations", (json_int_t)n, "imported",
					    (json_int_t)out.counts[RN_IMPORT_TAKEN], "already_held",
					    (json_int_t)out.counts[RN_IMPORT_HELD], "refused",
					    (json_int_t)refused, "events", out.events));
	else
		printf("import: %zu allocation(s): %zu %s, %zu already held, %zu refused\n", n,
		       out.counts[o.dry_run ? RN_IMPORT_WOULD : RN_IMPORT_TAKEN],
		       o.dry_run ? "to import" : "imported", out.counts[RN_IMPORT_HELD], refused);
	if (refused) {
		rn_error_set(&err, EEXIST,
			     "%zu allocation(s) refused (listed above): their addresses are held "
			     "by other attachments in this store",
			     refused);
		return rn_cli_fail(&err);
	}
	return 0;
}

static int ipam_help(struct rn_cli *cli)
{
	return rn_cli_usage("usage: rdmans ipam [ls|show ADDRESS|release ...|gc [--dry-run]|"
			    "reconcile [--grace S] [--dry-run]|import IPPOOLS.json --config CONF] "
			    "(see rdmans(8) and rdma-netns-ipam(8))");
}

int rn_cmd_ipam(struct rn_cli *cli)
{
	static const struct rn_cmd cmds[] = {
		{ "ls", ipam_ls },	     { "list", ipam_ls },   { "show", ipam_show },
		{ "release", ipam_release }, { "gc", ipam_gc },	    { "reconcile", ipam_reconcile },
		{ "import", ipam_import },   { "help", ipam_help }, { NULL, NULL },
	};

	return rn_cli_dispatch(cli, cmds, "ipam");
}
