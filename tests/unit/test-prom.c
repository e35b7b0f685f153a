// SPDX-License-Identifier: Apache-2.0
/*
 * The exporter's Prometheus text: escaping, typing, one block per family,
 * and counters read from fake sysfs trees (the IIJ E810 walkthrough's irdma hw_counters, rxe).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fakesys.h"
#include "rdmans/cleanup.h"
#include "rdmans/counters.h"
#include "rdmans/prom.h"
#include "test.h"

static char *escaped_label(const char *value)
{
	struct rn_buf b = { 0 };

	rn_prom_escape_label(&b, value);
	return b.buf ? b.buf : strdup("");
}

static char *escaped_help(const char *value)
{
	struct rn_buf b = { 0 };

	rn_prom_escape_help(&b, value);
	return b.buf ? b.buf : strdup("");
}

static void label_values_escape_backslash_quote_newline(void)
{
	_cleanup_free_ char *a = escaped_label("pod \"a\"\\b\nc");
	_cleanup_free_ char *b = escaped_label("plain-name_0");

	CHECK_STR(a, "pod \\\"a\\\"\\\\b\\nc");
	CHECK_STR(b, "plain-name_0");
}

static void help_text_escapes_backslash_and_newline_but_not_quotes(void)
{
	_cleanup_free_ char *a = escaped_help("a \"b\" \\ c\nd");

	CHECK_STR(a, "a \"b\" \\\\ c\\nd");
}

static void invalid_utf8_becomes_replacement_character(void)
{
	/* a lone continuation byte, an overlong '/', a surrogate, then valid UTF-8 */
	_cleanup_free_ char *a = escaped_label("x\x80y\xc0\xafz\xed\xa0\x80w\xc3\xa9");

	CHECK_STR(a, "x\xef\xbf\xbdy\xef\xbf\xbd\xef\xbf\xbdz\xef\xbf\xbd\xef\xbf\xbd\xef\xbf"
		     "\xbdw\xc3\xa9");
}

/* A scrape with one device in a pod netns whose name needs escaping. */
static void build_scrape(struct rn_scrape *s)
{
	struct rn_dev_metrics *d;
	struct rn_port_metrics *p;

	memset(s, 0, sizeof(*s));
	s->rdma = true;
	s->exclusive = true;
	s->nns = 2;
	s->ns = calloc(2, sizeof(*s->ns));
	snprintf(s->ns[0].label, sizeof(s->ns[0].label), "host");
	snprintf(s->ns[1].label, sizeof(s->ns[1].label), "cni-\"x\"\\1");
	snprintf(s->ns[1].pod, sizeof(s->ns[1].pod), "gpu-pod0");
	snprintf(s->ns[1].pod_namespace, sizeof(s->ns[1].pod_namespace), "default");
	snprintf(s->ns[1].container, sizeof(s->ns[1].container), "4f3c2a1b");
	s->ndevs = 2;
	s->devs = calloc(2, sizeof(*s->devs));
	d = &s->devs[0];
	snprintf(d->name, sizeof(d->name), "irdma0");
	snprintf(d->fw, sizeof(d->fw), "1.52");
	snprintf(d->protocol, sizeof(d->protocol), "roce");
	d->node_guid = 0xb69691fffeeca458ULL;
	d->ns = 1;
	rn_counters_set(&d->hw, "cnpHandled", 7);
	d->nports = 1;
	d->ports = calloc(1, sizeof(*d->ports));
	p = &d->ports[0];
	p->port = 1;
	p->state = 4;
	p->phys_state = 5;
	snprintf(p->netdev.name, sizeof(p->netdev.name), "net1");
	snprintf(p->link_layer, sizeof(p->link_layer), "Ethernet");
	snprintf(p->rate, sizeof(p->rate), "25 Gb/sec (1X EDR)");
	p->rate_bps = 25000000000ULL;
	p->netdev.mtu = 9000;
	p->netdev.oper_up = 1;
	rn_counters_set(&p->hw, "iwInRdmaWrites", 141075419);
	rn_counters_set(&p->hw, "ip4InOctets", 18446744073709551615ULL);
	rn_counters_set(&p->pma, "port_xmit_data", 12);
	/* a second device on the host: the same counters join the first's families */
	d = &s->devs[1];
	snprintf(d->name, sizeof(d->name), "irdma1");
	d->ns = 0;
	rn_counters_set(&d->hw, "lifespan", 10);
	d->nports = 1;
	d->ports = calloc(1, sizeof(*d->ports));
	p = &d->ports[0];
	p->port = 1;
	rn_counters_set(&p->hw, "iwInRdmaWrites", 5);
	rn_counters_set(&p->hw, "rx-odd.name", 1);
	rn_counters_set(&p->pma, "port_rcv_data", 3);
	rn_counters_set(&p->pma, "port_xmit_data", 1);
	rn_counters_set(&p->pma, "symbol_error", 2);
	rn_counters_set(&p->pma, "port_xmit_discards", 6);
}

/* Count of lines of text starting with prefix. */
static size_t count_lines(const char *text, const char *prefix)
{
	size_t n = 0, len = strlen(prefix);

	for (const char *l = text; l && *l;) {
		if (strncmp(l, prefix, len) == 0)
			n++;
		l = strchr(l, '\n');
		if (l)
			l++;
	}
	return n;
}

static void counters_are_typed_counter_and_end_in_total(void)
{
	_cleanup_scrape_ struct rn_scrape s;
	struct rn_buf out = { 0 };
	struct rn_error err = { 0 };

	build_scrape(&s);
	CHECK_INT(rn_prom_render(&s, &out, &err), 0);
	CHECK_CONTAINS(out.buf, "# TYPE rdmans_port_hw_iw_in_rdma_writes_total counter\n");
	CHECK_CONTAINS(out.buf, "# TYPE rdmans_port_transmitted_bytes_total counter\n");
	CHECK_CONTAINS(out.buf, "# TYPE rdmans_device_hw_cnp_handled_total counter\n");
	CHECK_CONTAINS(out.buf, "# TYPE rdmans_port_state gauge\n");
	CHECK_CONTAINS(out.buf, "# TYPE rdmans_port_rate_bytes_per_second gauge\n");
	CHECK_CONTAINS(out.buf, "# TYPE rdmans_port_netdev_mtu_bytes gauge\n");
	/* one prefix: nothing but rdmans_ */
	CHECK_INT(count_lines(out.buf, "# TYPE rdmans_"), count_lines(out.buf, "# TYPE "));
	/* every counter family's name ends in _total, no gauge's does */
	for (const char *l = out.buf; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		char name[128], type[16];

		if (sscanf(l, "# TYPE %127s %15s", name, type) != 2)
			continue;
		if (strcmp(type, "counter") == 0)
			CHECK(strlen(name) > 6 && strcmp(name + strlen(name) - 6, "_total") == 0);
		else
			CHECK(!strstr(name, "_total"));
	}
	rn_buf_free(&out);
}

static void samples_carry_every_label_escaped(void)
{
	_cleanup_scrape_ struct rn_scrape s;
	struct rn_buf out = { 0 };
	struct rn_error err = { 0 };

	build_scrape(&s);
	CHECK_INT(rn_prom_render(&s, &out, &err), 0);
	CHECK_CONTAINS(out.buf,
		       "rdmans_port_hw_iw_in_rdma_writes_total{device=\"irdma0\",port=\"1\",netdev="
		       "\"net1\","
		       "netns=\"cni-\\\"x\\\"\\\\1\",pod=\"gpu-pod0\",namespace=\"default\","
		       "container=\"4f3c2a1b\"} 141075419\n");
	/* the full 64-bit range, printed exactly */
	CHECK_CONTAINS(out.buf, "rdmans_port_hw_ip4_in_octets_total{device=\"irdma0\"");
	CHECK_CONTAINS(out.buf, "} 18446744073709551615\n");
	CHECK_CONTAINS(out.buf,
		       "rdmans_device_hw_cnp_handled_total{device=\"irdma0\",netns=\"cni-");
	CHECK_CONTAINS(out.buf, "rdmans_port_rate_bytes_per_second{device=\"irdma0\",port=\"1\"");
	CHECK_CONTAINS(out.buf, "} 3125000000\n");
	CHECK_CONTAINS(out.buf, "node_guid=\"b696:91ff:feec:a458\"");
	CHECK_CONTAINS(out.buf, "rdmans_netns_exclusive 1\n");
	CHECK_CONTAINS(out.buf, "rdmans_up 1\n");
	rn_buf_free(&out);
}

static void one_metric_per_counter_data_in_bytes(void)
{
	_cleanup_scrape_ struct rn_scrape s;
	struct rn_buf out = { 0 };
	struct rn_error err = { 0 };

	build_scrape(&s);
	CHECK_INT(rn_prom_render(&s, &out, &err), 0);
	/* the PMA's 4-octet words, as bytes: 12 and 1 words */
	CHECK_CONTAINS(out.buf, "rdmans_port_transmitted_bytes_total{device=\"irdma0\"");
	CHECK_CONTAINS(out.buf, "container=\"4f3c2a1b\"} 48\n");
	CHECK_CONTAINS(out.buf,
		       "rdmans_port_transmitted_bytes_total{device=\"irdma1\",port=\"1\","
		       "netdev=\"\",netns=\"host\",pod=\"\",namespace=\"\",container=\"\"} 4\n");
	CHECK_CONTAINS(out.buf, "rdmans_port_received_bytes_total{device=\"irdma1\"");
	CHECK_CONTAINS(out.buf, "container=\"\"} 12\n");
	/* other PMA counters by their kernel name, "port_" dropped */
	CHECK_CONTAINS(out.buf, "\nrdmans_port_symbol_error_total{device=\"irdma1\"");
	CHECK_CONTAINS(out.buf, "\nrdmans_port_xmit_discards_total{device=\"irdma1\"");
	/* both devices' samples in one family, a name made a metric name */
	CHECK_INT(count_lines(out.buf, "rdmans_port_hw_iw_in_rdma_writes_total{"), 2);
	CHECK_INT(count_lines(out.buf, "# TYPE rdmans_port_hw_iw_in_rdma_writes_total "), 1);
	CHECK_INT(count_lines(out.buf, "rdmans_port_hw_rx_odd_name_total{device=\"irdma1\""), 1);
	/* no counter name in a label, no setting as a counter */
	CHECK(!strstr(out.buf, "counter=\""));
	CHECK(!strstr(out.buf, "lifespan"));
	rn_buf_free(&out);
}

static void each_family_appears_once_with_its_samples_together(void)
{
	_cleanup_scrape_ struct rn_scrape s;
	struct rn_buf out = { 0 };
	struct rn_error err = { 0 };
	char seen[64][128];
	size_t nseen = 0;
	char current[128] = "";

	build_scrape(&s);
	CHECK_INT(rn_prom_render(&s, &out, &err), 0);
	CHECK_INT(count_lines(out.buf, "# HELP "), count_lines(out.buf, "# TYPE "));
	for (const char *l = out.buf; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		char name[128];

		if (sscanf(l, "# TYPE %127s", name) == 1) {
			for (size_t i = 0; i < nseen; i++)
				CHECK(strcmp(seen[i], name) != 0);
			if (nseen < 64)
				snprintf(seen[nseen++], sizeof(seen[0]), "%s", name);
			snprintf(current, sizeof(current), "%s", name);
			continue;
		}
		if (*l == '#')
			continue;
		/* a sample belongs to the family announced last */
		CHECK(strncmp(l, current, strlen(current)) == 0 &&
		      (l[strlen(current)] == '{' || l[strlen(current)] == ' '));
	}
	CHECK(nseen > 10);
	rn_buf_free(&out);
}

static void failed_namespaces_are_reported(void)
{
	_cleanup_scrape_ struct rn_scrape s;
	struct rn_buf out = { 0 };
	struct rn_error err = { 0 };

	build_scrape(&s);
	s.ns[1].failed = true;
	s.ns[1].error_code = EACCES;
	snprintf(s.ns[1].error, sizeof(s.ns[1].error), "cannot enter \"it\"");
	s.ns[0].failed = true;
	s.ns[0].error_code = EIO;
	s.ns_failed = 2;
	CHECK_INT(rn_prom_render(&s, &out, &err), 0);
	CHECK_CONTAINS(out.buf, "rdmans_scrape_namespace_errors 2\n");
	/* a reason from a fixed few words; the free text is not a label */
	CHECK_CONTAINS(out.buf, "rdmans_scrape_netns_failed{netns=\"cni-\\\"x\\\"\\\\1\","
				"reason=\"permission\"} 1\n");
	CHECK_CONTAINS(out.buf, "rdmans_scrape_netns_failed{netns=\"host\",reason=\"other\"} 1\n");
	CHECK(!strstr(out.buf, "cannot enter"));
	rn_buf_free(&out);
}

static void no_rdma_renders_only_the_exporter_gauges(void)
{
	struct rn_scrape s = { 0 };
	struct rn_buf out = { 0 };
	struct rn_error err = { 0 };

	s.nns = 0;
	CHECK_INT(rn_prom_render(&s, &out, &err), 0);
	CHECK_CONTAINS(out.buf, "rdmans_up 0\n");
	CHECK(!strstr(out.buf, "rdmans_netns_exclusive"));
	CHECK(!strstr(out.buf, "rdmans_port"));
	rn_buf_free(&out);
}

/* ---- counters from sysfs ---- */

/* The IIJ E810 walkthrough: irdma0 on ice.roce.0, port 1 bound to ens192, some of its hw_counters. */
static void add_irdma(const char *root)
{
	fakesys_add_netdev_pci(root, "ens192", "0000:0b:00.0");
	fakesys_add_rdma_aux(root, "irdma0", "0000:0b:00.0", "ice.roce.0", "b696:91ff:feec:a458",
			     "Ethernet");
	fakesys_add_gid(root, "irdma0", 1, 0, "fe80:0000:0000:0000:b696:91ff:feec:a458", "RoCE v2",
			"ens192");
	fakesys_write(root, "class/infiniband/irdma0/ports/1/rate", "25 Gb/sec (1X EDR)");
	fakesys_write(root, "class/infiniband/irdma0/ports/1/hw_counters/iwInRdmaReads", "23");
	fakesys_write(root, "class/infiniband/irdma0/ports/1/hw_counters/iwInRdmaWrites",
		      "141075419");
	fakesys_write(root, "class/infiniband/irdma0/ports/1/hw_counters/lifespan", "10");
	fakesys_write(root, "class/infiniband/irdma0/ports/1/hw_counters/RxECNMrkd", "0");
	/* a counter that cannot be read (a directory here) is skipped, not an error */
	fakesys_write(root, "class/infiniband/irdma0/ports/1/counters/port_rcv_data/x", "0");
	fakesys_write(root, "class/infiniband/irdma0/ports/1/counters/port_xmit_data", "77");
	fakesys_write(root, "class/infiniband/irdma0/ports/1/counters/garbage", "12abc");
	fakesys_write(root, "class/net/ens192/mtu", "9000");
	fakesys_write(root, "class/net/ens192/operstate", "up");
}

static void sysfs_counters_of_a_port_are_read_by_name(void)
{
	_cleanup_fake_ char *root = fake_start();
	_cleanup_scrape_ struct rn_scrape s = { 0 };
	struct rn_error err = { 0 };
	const struct rn_port_metrics *p;

	add_irdma(root);
	CHECK_INT(rn_scrape_sysfs(&s, "host", &err), 0);
	CHECK_STR(err.msg, "");
	CHECK_INT(s.ndevs, 1);
	if (s.ndevs != 1)
		return;
	CHECK_STR(s.devs[0].name, "irdma0");
	CHECK_INT(s.devs[0].nports, 1);
	p = &s.devs[0].ports[0];
	CHECK_INT(p->state, 4);
	CHECK_STR(p->netdev.name, "ens192");
	CHECK_INT(p->netdev.mtu, 9000);
	CHECK_INT(p->netdev.oper_up, 1);
	CHECK_INT(p->rate_bps, 25000000000ULL);
	CHECK_INT(p->hw.n, 3); /* lifespan is a setting, not a counter */
	CHECK(rn_counters_find(&p->hw, "lifespan") == NULL);
	CHECK(rn_counters_find(&p->hw, "iwInRdmaWrites") &&
	      rn_counters_find(&p->hw, "iwInRdmaWrites")->value == 141075419);
	/* sorted by name */
	CHECK_STR(p->hw.v[0].name, "RxECNMrkd");
	CHECK_INT(p->pma.n, 1);
	CHECK_STR(p->pma.v[0].name, "port_xmit_data");
}

static void netlink_values_win_and_sysfs_adds_the_rest(void)
{
	_cleanup_fake_ char *root = fake_start();
	struct rn_port_metrics pm = { .port = 1 };
	struct rn_error err = { 0 };

	add_irdma(root);
	/* as the netlink statistics would have put them first */
	CHECK_INT(rn_counters_set(&pm.hw, "iwInRdmaWrites", 141075500), 0);
	CHECK_INT(rn_counters_set(&pm.hw, "optional_only_in_netlink", 5), 0);
	CHECK_INT(rn_port_metrics_read_sysfs("irdma0", &pm, &err), 0);
	CHECK_INT(pm.hw.n, 4);
	CHECK(rn_counters_find(&pm.hw, "iwInRdmaWrites")->value == 141075500);
	CHECK(rn_counters_find(&pm.hw, "iwInRdmaReads")->value == 23);
	CHECK(rn_counters_find(&pm.hw, "optional_only_in_netlink")->value == 5);
	rn_counters_free(&pm.hw);
	rn_counters_free(&pm.pma);
}

static void rxe_netdev_comes_from_its_parent(void)
{
	_cleanup_fake_ char *root = fake_start();
	_cleanup_scrape_ struct rn_scrape s = { 0 };
	struct rn_error err = { 0 };

	fakesys_add_netdev_virtual(root, "veth0");
	fakesys_add_rdma_virtual(root, "rxe0", "veth0", NULL, "Ethernet");
	fakesys_write(root, "class/infiniband/rxe0/ports/1/hw_counters/sent_pkts", "10");
	fakesys_write(root, "class/infiniband/rxe0/ports/1/hw_counters/rcvd_pkts", "9");
	fakesys_write(root, "class/net/veth0/operstate", "lowerlayerdown");
	CHECK_INT(rn_scrape_sysfs(&s, "host", &err), 0);
	CHECK_INT(s.ndevs, 1);
	if (s.ndevs != 1)
		return;
	CHECK_STR(s.devs[0].ports[0].netdev.name, "veth0");
	CHECK_INT(s.devs[0].ports[0].netdev.oper_up, 0);
	CHECK_INT(s.devs[0].ports[0].hw.n, 2);
}

/* rdmans_port_netdev_up is operstate, not IFF_UP: set up without carrier is 0, the reverse 1 */
static void netdev_up_follows_operstate_not_iff_up(void)
{
	_cleanup_fake_ char *root = fake_start();
	struct rn_port_metrics pm = { .port = 1 };
	struct rn_error err = { 0 };

	add_irdma(root);
	fakesys_write(root, "class/net/ens192/flags", "0x1003");
	fakesys_write(root, "class/net/ens192/operstate", "down");
	CHECK_INT(rn_port_metrics_read_sysfs("irdma0", &pm, &err), 0);
	CHECK_STR(pm.netdev.name, "ens192");
	CHECK_INT(pm.netdev.oper_up, 0);
	rn_counters_free(&pm.hw);
	rn_counters_free(&pm.pma);
	memset(&pm, 0, sizeof(pm));
	pm.port = 1;
	fakesys_write(root, "class/net/ens192/flags", "0x1002");
	fakesys_write(root, "class/net/ens192/operstate", "up");
	CHECK_INT(rn_port_metrics_read_sysfs("irdma0", &pm, &err), 0);
	CHECK_INT(pm.netdev.oper_up, 1);
	CHECK_INT(pm.netdev.mtu, 9000);
	rn_counters_free(&pm.hw);
	rn_counters_free(&pm.pma);
	/* no operstate to read: unknown, and the family leaves the sample out */
	memset(&pm, 0, sizeof(pm));
	pm.port = 1;
	fakesys_unreadable(root, "class/net/ens192/operstate");
	CHECK_INT(rn_port_metrics_read_sysfs("irdma0", &pm, &err), 0);
	CHECK_INT(pm.netdev.oper_up, -1);
	rn_counters_free(&pm.hw);
	rn_counters_free(&pm.pma);
}

static void a_missing_sysfs_root_is_an_error(void)
{
	_cleanup_scrape_ struct rn_scrape s = { 0 };
	struct rn_error err = { 0 };

	rn_sysfs_set_root("/nonexistent/rdmans-sysfs");
	CHECK(rn_scrape_sysfs(&s, "host", &err) < 0);
	CHECK_CONTAINS(err.msg, "/nonexistent/rdmans-sysfs");
	rn_sysfs_set_root(NULL);
}

RN_TEST_MAIN(T(label_values_escape_backslash_quote_newline),
	     T(help_text_escapes_backslash_and_newline_but_not_quotes),
	     T(invalid_utf8_becomes_replacement_character),
	     T(counters_are_typed_counter_and_end_in_total), T(samples_carry_every_label_escaped),
	     T(each_family_appears_once_with_its_samples_together),
	     T(failed_namespaces_are_reported), T(one_metric_per_counter_data_in_bytes),
	     T(no_rdma_renders_only_the_exporter_gauges),
	     T(sysfs_counters_of_a_port_are_read_by_name),
	     T(netlink_values_win_and_sysfs_adds_the_rest), T(rxe_netdev_comes_from_its_parent),
	     T(netdev_up_follows_operstate_not_iff_up), T(a_missing_sysfs_root_is_an_error))
