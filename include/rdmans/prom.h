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
 * Renders the scrape, every name prefixed rdmans_ (see the HELP lines):
 *   rdmans_device_info, rdmans_port_info, rdmans_port_state,
 *   rdmans_port_physical_state, rdmans_port_rate_bytes_per_second,
 *   rdmans_port_netdev_up, rdmans_port_netdev_mtu_bytes (gauges);
 *   one counter per kernel counter: rdmans_port_transmitted_bytes_total and
 *   rdmans_port_received_bytes_total (PMA data, in bytes),
 *   rdmans_port_transmitted/received_packets_total, rdmans_port_NAME_total
 *   (the other PMA counters, "port_" dropped), rdmans_port_hw_NAME_total,
 *   rdmans_device_hw_NAME_total; rdmans_up, rdmans_netns_exclusive,
 *   rdmans_scrape_* (gauges).
 * Port samples carry device, port, netdev, netns, pod, namespace, container.
 */
int rn_prom_render(const struct rn_scrape *s, struct rn_buf *out, struct rn_error *err);

#endif
