/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Prometheus text exposition format (version 0.0.4) for a scrape:
 * one HELP and TYPE line per metric family, its samples contiguous, label
 * values escaped (\\, \", \n) and made valid UTF-8.
 */
#ifndef RDMANS_PROM_H
#define RDMANS_PROM_H

#include <stddef.h>

#include "rdmans/counters.h"
#include "rdmans/error.h"

#define RN_PROM_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* A growable text buffer; free buf with free(). */
struct rn_buf {
	char *buf;
	size_t len, cap;
	int error; /* sticky: -ENOMEM once an append failed */
};

void rn_buf_free(struct rn_buf *b);
int rn_buf_append(struct rn_buf *b, const char *s, size_t n);
int rn_buf_printf(struct rn_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Appends a label value escaped: backslash, double quote, newline; invalid UTF-8 becomes U+FFFD. */
int rn_prom_escape_label(struct rn_buf *b, const char *value);
/* Appends HELP text escaped: backslash and newline. */
int rn_prom_escape_help(struct rn_buf *b, const char *text);

/*
 * Renders the scrape. Families (see the HELP lines for each):
 *   rdma_device_info, rdma_port_info, rdma_port_state, rdma_port_physical_state,
 *   rdma_port_rate_bytes_per_second, rdma_port_netdev_up, rdma_port_netdev_mtu_bytes
 *   (gauges); rdma_port_hw_stats_total, rdma_port_pma_total,
 *   rdma_device_hw_stats_total (counters, the counter's kernel name in
 *   label "counter"); rdma_up, rdma_netns_exclusive, rdmans_scrape_* (gauges).
 * Port samples carry device, port, netdev, netns, pod, pod_namespace, container.
 */
int rn_prom_render(const struct rn_scrape *s, struct rn_buf *out, struct rn_error *err);

#endif
