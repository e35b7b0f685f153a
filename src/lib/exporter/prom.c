// SPDX-License-Identifier: Apache-2.0
/*
 * Prometheus text format 0.0.4 (prometheus/docs content/docs/instrumenting/
 * exposition_formats.md): "# HELP name text", "# TYPE name counter|gauge",
 * then `name{label="value",...} number` lines; a family appears once.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmans/prom.h"
#include "rdmans/rdma_nl.h"
#include "rdmans/util.h"

/* ---- buffer ---- */

void rn_buf_free(struct rn_buf *b)
{
	if (!b)
		return;
	free(b->buf);
	memset(b, 0, sizeof(*b));
}

static int buf_reserve(struct rn_buf *b, size_t more)
{
	if (b->error)
		return b->error;
	if (RN_GROW(b->buf, &b->cap, b->len + more + 1) < 0)
		return b->error = -ENOMEM;
	return 0;
}

int rn_buf_append(struct rn_buf *b, const char *s, size_t n)
{
	int r = buf_reserve(b, n);

	if (r < 0)
		return r;
	memcpy(b->buf + b->len, s, n);
	b->len += n;
	b->buf[b->len] = '\0';
	return 0;
}

int rn_buf_printf(struct rn_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n, r;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return b->error = -EINVAL;
	r = buf_reserve(b, (size_t)n);
	if (r < 0)
		return r;
	va_start(ap, fmt);
	vsnprintf(b->buf + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

static int buf_puts(struct rn_buf *b, const char *s)
{
	return rn_buf_append(b, s, strlen(s));
}

/* ---- escaping ---- */

/* Length of the valid UTF-8 sequence at s (1..4), 0 when it is not one. */
static size_t utf8_len(const unsigned char *s)
{
	unsigned char c = s[0];
	size_t n;
	uint32_t cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, cp = c & 0x07;
	else
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	/* overlong forms, surrogates, beyond U+10FFFF */
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

static int escape(struct rn_buf *b, const char *value, bool quote)
{
	const unsigned char *s = (const unsigned char *)value;
	int r = 0;

	while (*s && r == 0) {
		size_t n = utf8_len(s);

		if (n == 0) {
			r = buf_puts(b, "\xef\xbf\xbd"); /* U+FFFD */
			s++;
		} else if (*s == '\\') {
			r = buf_puts(b, "\\\\");
			s++;
		} else if (*s == '\n') {
			r = buf_puts(b, "\\n");
			s++;
		} else if (*s == '"' && quote) {
			r = buf_puts(b, "\\\"");
			s++;
		} else {
			r = rn_buf_append(b, (const char *)s, n);
			s += n;
		}
	}
	return r;
}

int rn_prom_escape_label(struct rn_buf *b, const char *value)
{
	return escape(b, value, true);
}

int rn_prom_escape_help(struct rn_buf *b, const char *text)
{
	return escape(b, text, false);
}

/* ---- families ---- */

static void family(struct rn_buf *b, const char *name, const char *type, const char *help)
{
	rn_buf_printf(b, "# HELP %s ", name);
	rn_prom_escape_help(b, help);
	rn_buf_printf(b, "\n# TYPE %s %s\n", name, type);
}

struct label {
	const char *name;
	const char *value;
};

static void sample_start(struct rn_buf *b, const char *name, const struct label *labels, size_t n)
{
	buf_puts(b, name);
	if (n == 0)
		return;
	buf_puts(b, "{");
	for (size_t i = 0; i < n; i++) {
		rn_buf_printf(b, "%s%s=\"", i ? "," : "", labels[i].name);
		rn_prom_escape_label(b, labels[i].value ? labels[i].value : "");
		buf_puts(b, "\"");
	}
	buf_puts(b, "}");
}

static void sample_u64(struct rn_buf *b, const char *name, const struct label *labels, size_t n,
		       uint64_t value)
{
	sample_start(b, name, labels, n);
	rn_buf_printf(b, " %" PRIu64 "\n", value);
}

static void sample_double(struct rn_buf *b, const char *name, const struct label *labels, size_t n,
			  double value)
{
	sample_start(b, name, labels, n);
	/* whole numbers (rates, MTUs, states) exactly; fractions with 9 digits */
	if (value >= 0 && value < 9007199254740992.0 && value == (double)(uint64_t)value)
		rn_buf_printf(b, " %" PRIu64 "\n", (uint64_t)value);
	else
		rn_buf_printf(b, " %.9g\n", value);
}

#define DEV_LABELS 5
#define PORT_LABELS 7
#define MAX_LABELS 10

/* netns, pod, namespace (kube-state-metrics' name for it), container: into l[0..3] */
static void ns_labels(const struct rn_ns_metrics *ns, struct label *l)
{
	l[0] = (struct label){ "netns", ns->label };
	l[1] = (struct label){ "pod", ns->pod };
	l[2] = (struct label){ "namespace", ns->pod_namespace };
	l[3] = (struct label){ "container", ns->container };
}

/* device, netns, pod, namespace, container */
static size_t dev_labels(const struct rn_scrape *s, const struct rn_dev_metrics *d, struct label *l)
{
	l[0] = (struct label){ "device", d->name };
	ns_labels(&s->ns[d->ns], l + 1);
	return DEV_LABELS;
}

/* device, port, netdev, netns, pod, namespace, container */
static size_t port_labels(const struct rn_scrape *s, const struct rn_dev_metrics *d,
			  const struct rn_port_metrics *p, char *portbuf, size_t portlen,
			  struct label *l)
{
	snprintf(portbuf, portlen, "%u", p->port);
	l[0] = (struct label){ "device", d->name };
	l[1] = (struct label){ "port", portbuf };
	l[2] = (struct label){ "netdev", p->netdev.name };
	ns_labels(&s->ns[d->ns], l + 3);
	return PORT_LABELS;
}

enum port_gauge {
	G_STATE,
	G_PHYS_STATE,
	G_RATE,
	G_NETDEV_UP,
	G_NETDEV_MTU,
};

static const struct {
	const char *name;
	const char *help;
} port_gauges[] = {
	[G_STATE] = { "rdmans_port_state",
		      "Logical port state: 1 DOWN, 2 INIT, 3 ARMED, 4 ACTIVE, 5 ACTIVE_DEFER." },
	[G_PHYS_STATE] = { "rdmans_port_physical_state",
			   "Physical port state: 1 SLEEP, 2 POLLING, 3 DISABLED, 4 TRAINING, 5 "
			   "LINK_UP, 6 LINK_ERROR_RECOVERY, 7 PHY_TEST." },
	[G_RATE] = { "rdmans_port_rate_bytes_per_second",
		     "Port data rate (sysfs ports/P/rate) in bytes per second." },
	[G_NETDEV_UP] = { "rdmans_port_netdev_up",
			  "1 when the netdev bound to the port is operationally up, else 0." },
	[G_NETDEV_MTU] = { "rdmans_port_netdev_mtu_bytes", "MTU of the netdev bound to the port." },
};

/* Whether port p has gauge g, and its value. */
static bool port_gauge_value(const struct rn_port_metrics *p, enum port_gauge g, double *v)
{
	switch (g) {
	case G_STATE:
		*v = p->state;
		return p->state != 0;
	case G_PHYS_STATE:
		*v = p->phys_state;
		return p->phys_state != 0;
	case G_RATE:
		*v = (double)p->rate_bps / 8.0;
		return p->rate_bps != 0;
	case G_NETDEV_UP:
		*v = p->netdev.oper_up;
		return p->netdev.name[0] && p->netdev.oper_up >= 0;
	case G_NETDEV_MTU:
		*v = p->netdev.mtu;
		return p->netdev.name[0] && p->netdev.mtu >= 0;
	}
	return false;
}

static void render_port_gauges(const struct rn_scrape *s, struct rn_buf *b)
{
	for (size_t g = 0; g < RN_ARRAY_SIZE(port_gauges); g++) {
		bool any = false;

		for (size_t i = 0; i < s->ndevs; i++) {
			const struct rn_dev_metrics *d = &s->devs[i];

			for (size_t p = 0; p < d->nports; p++) {
				struct label l[MAX_LABELS];
				char port[16];
				size_t n;
				double v;

				if (!port_gauge_value(&d->ports[p], (enum port_gauge)g, &v))
					continue;
				if (!any)
					family(b, port_gauges[g].name, "gauge",
					       port_gauges[g].help);
				any = true;
				n = port_labels(s, d, &d->ports[p], port, sizeof(port), l);
				sample_double(b, port_gauges[g].name, l, n, v);
			}
		}
	}
}

static void render_info(const struct rn_scrape *s, struct rn_buf *b)
{
	if (s->ndevs == 0)
		return;
	family(b, "rdmans_device_info", "gauge",
	       "RDMA device, always 1; its firmware, node GUID and protocol as labels.");
	for (size_t i = 0; i < s->ndevs; i++) {
		const struct rn_dev_metrics *d = &s->devs[i];
		struct label l[MAX_LABELS];
		char guid[24];
		size_t n = dev_labels(s, d, l);

		snprintf(guid, sizeof(guid), "%04x:%04x:%04x:%04x",
			 (unsigned)(d->node_guid >> 48) & 0xffff,
			 (unsigned)(d->node_guid >> 32) & 0xffff,
			 (unsigned)(d->node_guid >> 16) & 0xffff, (unsigned)d->node_guid & 0xffff);
		l[n++] = (struct label){ "fw", d->fw };
		l[n++] = (struct label){ "node_guid", guid };
		l[n++] = (struct label){ "protocol", d->protocol };
		sample_u64(b, "rdmans_device_info", l, n, 1);
	}
	family(b, "rdmans_port_info", "gauge",
	       "RDMA port, always 1; its link layer and rate text as labels.");
	for (size_t i = 0; i < s->ndevs; i++) {
		const struct rn_dev_metrics *d = &s->devs[i];

		for (size_t p = 0; p < d->nports; p++) {
			const struct rn_port_metrics *pm = &d->ports[p];
			struct label l[MAX_LABELS];
			char port[16];
			size_t n = port_labels(s, d, pm, port, sizeof(port), l);

			l[n++] = (struct label){ "link_layer", pm->link_layer };
			l[n++] = (struct label){ "rate", pm->rate };
			sample_u64(b, "rdmans_port_info", l, n, 1);
		}
	}
}

/*
 * One metric per counter, as node_exporter's infiniband collector names
 * them: a sum over a label of counter names means nothing. The kernel's
 * name makes the metric's, with the two data counters in bytes (the PMA
 * counts 4-octet words, IBA 16.1.3.5).
 */
enum counter_kind { C_PORT_PMA, C_PORT_HW, C_DEV_HW };

static const struct {
	const char *kernel;
	const char *metric;
	unsigned scale;
	const char *help;
} pma_known[] = {
	{ "port_xmit_data", "rdmans_port_transmitted_bytes_total", 4,
	  "Bytes transmitted on the port (sysfs counters/port_xmit_data, in 4-octet words, "
	  "times 4)." },
	{ "port_rcv_data", "rdmans_port_received_bytes_total", 4,
	  "Bytes received on the port (sysfs counters/port_rcv_data, in 4-octet words, times "
	  "4)." },
	{ "port_xmit_packets", "rdmans_port_transmitted_packets_total", 1,
	  "Packets transmitted on the port (sysfs counters/port_xmit_packets)." },
	{ "port_rcv_packets", "rdmans_port_received_packets_total", 1,
	  "Packets received on the port (sysfs counters/port_rcv_packets)." },
};

/* Not counters: a hw_counters setting (the update interval, ms). */
static bool not_a_counter(const char *kernel)
{
	return strcmp(kernel, "lifespan") == 0;
}

/* The PMA counter with a name and unit of its own, or NULL. */
static int pma_known_index(enum counter_kind k, const char *kernel)
{
	for (size_t i = 0; k == C_PORT_PMA && i < RN_ARRAY_SIZE(pma_known); i++)
		if (strcmp(kernel, pma_known[i].kernel) == 0)
			return (int)i;
	return -1;
}

/* A family's HELP text: once per family, never per sample. */
static void counter_help(enum counter_kind k, const char *kernel, char *help, size_t len)
{
	static const char *const where[] = { [C_PORT_PMA] = "port PMA counter (sysfs counters/",
					     [C_PORT_HW] = "port hardware counter (RDMA netlink "
							   "statistics, sysfs hw_counters/",
					     [C_DEV_HW] = "device-wide hardware counter (sysfs "
							  "DEV/hw_counters/" };
	int i = pma_known_index(k, kernel);

	if (i >= 0)
		rn_strscpy(help, len, pma_known[i].help);
	else
		snprintf(help, len, "The %s%s).", where[k], kernel);
}

/* The metric for kernel counter `kernel` of a kind into buf, and its scale; false when not exported. */
static bool counter_metric(enum counter_kind k, const char *kernel, char *buf, size_t len,
			   unsigned *scale)
{
	static const char *const prefix[] = { [C_PORT_PMA] = "rdmans_port_",
					      [C_PORT_HW] = "rdmans_port_hw_",
					      [C_DEV_HW] = "rdmans_device_hw_" };
	const char *name = kernel;
	int known = pma_known_index(k, kernel);
	size_t n;

	if (not_a_counter(kernel))
		return false;
	*scale = 1;
	if (known >= 0) {
		rn_strscpy(buf, len, pma_known[known].metric);
		*scale = pma_known[known].scale;
		return true;
	}
	if (k == C_PORT_PMA && strncmp(name, "port_", 5) == 0)
		name += 5;
	snprintf(buf, len, "%s", prefix[k]);
	n = strlen(buf);
	/*
	 * snake_case, as promtool asks: "cnpHandled" cnp_handled, "RxECNMrkd"
	 * rx_ecn_mrkd, "ip4InOctets" ip4_in_octets; what is not [a-zA-Z0-9] is '_'
	 */
	for (const char *c = name; *c && n + 8 < len; c++) {
		bool upper = *c >= 'A' && *c <= 'Z', lower = *c >= 'a' && *c <= 'z',
		     digit = *c >= '0' && *c <= '9';
		bool after_word = c > name && ((c[-1] >= 'a' && c[-1] <= 'z') ||
					       (c[-1] >= '0' && c[-1] <= '9'));
		bool acronym_end =
			c > name && c[-1] >= 'A' && c[-1] <= 'Z' && c[1] >= 'a' && c[1] <= 'z';

		if (upper && (after_word || acronym_end) && buf[n - 1] != '_')
			buf[n++] = '_';
		buf[n++] = upper ? (char)(*c - 'A' + 'a') : lower || digit ? *c : '_';
	}
	buf[n] = '\0';
	rn_strscpy(buf + n, len - n, "_total");
	return true;
}

static const struct rn_counters *counters_of(const struct rn_dev_metrics *d, size_t p,
					     enum counter_kind k)
{
	return k == C_DEV_HW ? &d->hw : k == C_PORT_HW ? &d->ports[p].hw : &d->ports[p].pma;
}

/* One sample to be: a kernel counter of a device (and port), under its metric's name. */
struct counter_sample {
	char metric[96];
	enum counter_kind kind;
	size_t dev, port, order; /* order: the scrape's, kept among equal names */
	const struct rn_counter *c;
	unsigned scale;
};

/* By metric, then device and port: a family's samples together, a port's twins adjacent. */
static int by_metric(const void *x, const void *y)
{
	const struct counter_sample *a = x, *b = y;
	int r = strcmp(a->metric, b->metric);

	if (r)
		return r;
	if (a->dev != b->dev)
		return a->dev < b->dev ? -1 : 1;
	if (a->port != b->port)
		return a->port < b->port ? -1 : 1;
	return a->order < b->order ? -1 : a->order > b->order;
}

/* Every exported counter sample, grouped by metric name (one family each). */
static int gather_counters(const struct rn_scrape *s, struct counter_sample **ret, size_t *ret_n)
{
	struct counter_sample *all = NULL;
	size_t n = 0, cap = 0;

	for (enum counter_kind k = C_PORT_PMA; k <= C_DEV_HW; k++)
		for (size_t i = 0; i < s->ndevs; i++) {
			size_t nports = k == C_DEV_HW ? 1 : s->devs[i].nports;

			for (size_t p = 0; p < nports; p++) {
				const struct rn_counters *c = counters_of(&s->devs[i], p, k);

				for (size_t j = 0; j < c->n; j++) {
					struct counter_sample *e;

					if (RN_GROW(all, &cap, n + 1) < 0) {
						free(all);
						return -ENOMEM;
					}
					e = &all[n];
					if (!counter_metric(k, c->v[j].name, e->metric,
							    sizeof(e->metric), &e->scale))
						continue;
					e->kind = k;
					e->dev = i;
					e->port = p;
					e->order = n;
					e->c = &c->v[j];
					n++;
				}
			}
		}
	if (n)
		qsort(all, n, sizeof(*all), by_metric);
	*ret = all;
	*ret_n = n;
	return 0;
}

static void render_counters(const struct rn_scrape *s, struct rn_buf *b)
{
	struct counter_sample *all = NULL;
	size_t n = 0;

	if (gather_counters(s, &all, &n) < 0) {
		b->error = -ENOMEM;
		return;
	}
	for (size_t i = 0; i < n; i++) {
		const struct counter_sample *e = &all[i];
		const struct rn_dev_metrics *d = &s->devs[e->dev];
		struct label l[MAX_LABELS];
		char port[16];
		size_t nl;
		bool same_metric = i > 0 && strcmp(all[i - 1].metric, e->metric) == 0;

		if (!same_metric) {
			char help[160];

			counter_help(e->kind, e->c->name, help, sizeof(help));
			family(b, e->metric, "counter", help);
		}
		/* two kernel names one metric name on one port ("cnpSent", "cnp_sent"): the first */
		else if (all[i - 1].dev == e->dev && all[i - 1].port == e->port)
			continue;
		nl = e->kind == C_DEV_HW
			     ? dev_labels(s, d, l)
			     : port_labels(s, d, &d->ports[e->port], port, sizeof(port), l);
		sample_u64(b, e->metric, l, nl, e->c->value * e->scale);
	}
	free(all);
}

static void render_self(const struct rn_scrape *s, struct rn_buf *b)
{
	family(b, "rdmans_up", "gauge", "1 when the kernel has RDMA netlink (ib_core), else 0.");
	sample_u64(b, "rdmans_up", NULL, 0, s->rdma);
	if (s->rdma) {
		family(b, "rdmans_netns_exclusive", "gauge",
		       "1 when ib_core is in exclusive netns mode (devices can move into pods).");
		sample_u64(b, "rdmans_netns_exclusive", NULL, 0, s->exclusive);
	}
	family(b, "rdmans_scrape_duration_seconds", "gauge",
	       "How long reading every namespace took.");
	sample_double(b, "rdmans_scrape_duration_seconds", NULL, 0, s->seconds);
	family(b, "rdmans_scrape_namespaces", "gauge", "Network namespaces read in this scrape.");
	sample_u64(b, "rdmans_scrape_namespaces", NULL, 0, s->nns);
	family(b, "rdmans_scrape_namespace_errors", "gauge",
	       "Network namespaces that could not be read in this scrape.");
	sample_u64(b, "rdmans_scrape_namespace_errors", NULL, 0, s->ns_failed);
	if (s->ns_failed) {
		family(b, "rdmans_scrape_netns_failed", "gauge",
		       "1 for each network namespace that could not be read; reason: gone, "
		       "permission or other (the message is in the exporter's log).");
		for (size_t i = 0; i < s->nns; i++) {
			struct label l[2] = { { "netns", s->ns[i].label },
					      { "reason", rn_scrape_failure_reason(&s->ns[i]) } };

			if (s->ns[i].failed)
				sample_u64(b, "rdmans_scrape_netns_failed", l, 2, 1);
		}
	}
}

int rn_prom_render(const struct rn_scrape *s, struct rn_buf *out, struct rn_error *err)
{
	render_info(s, out);
	render_port_gauges(s, out);
	render_counters(s, out);
	render_self(s, out);
	if (out->error)
		return rn_error_set(err, -out->error, "out of memory rendering metrics");
	return 0;
}
