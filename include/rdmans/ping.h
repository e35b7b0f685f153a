/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `rdmans ping`: an RC connection through librdmacm (address and route
 * resolution by rdma_cm, as NCCL's peers reach each other), then SEND and
 * RDMA WRITE ping-pong (latency) and a stream of RDMA WRITEs (bandwidth).
 * librdmacm is used here only (src/lib/ping/ping.c, its own static library,
 * linked into the CLI alone).
 *
 * Every step is bounded: rdma_cm events are read from the event channel's
 * fd after poll() with a timeout, completions are polled against a
 * deadline. Failures come back as a negative errno with a message naming
 * the cause: ECONNREFUSED (nothing listens), EHOSTUNREACH (no route, no
 * answer), ETIMEDOUT (a silent peer), ENODEV (no device node, no verbs
 * provider, a device that cannot reach the peer), ENOMEM (locked memory),
 * EADDRNOTAVAIL (a GID index that names no usable address), EPROTO (the
 * peer's answer is not ours).
 *
 * Acts in the netns of the calling thread: run it under rn_netns_run() for
 * another one.
 */
#ifndef RDMANS_PING_H
#define RDMANS_PING_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdmans/error.h"
#include "rdmans/ping_wire.h"

#define RN_PING_PORT 18515

/* ---- a run ---- */

struct rn_ping_stats {
	double p50_us, p99_us; /* half a round trip, as perftest's *_lat report */
};

struct rn_ping_result {
	char dev[64]; /* the device rdma_cm used */
	unsigned port;
	int gid_index; /* as given, -1 none */
	char local[INET6_ADDRSTRLEN + 8], peer[INET6_ADDRSTRLEN + 8];
	struct rn_ping_wire w; /* what was run */
	struct rn_ping_stats send, write;
	double bw_mib_s; /* MiB/s of the RDMA WRITE stream, as ib_write_bw's MB/sec */
	double bw_gbit_s;
	unsigned clients; /* server: clients served */
};

struct rn_ping_opts {
	bool server;
	const char *peer; /* client: the server's address (IPv4 or IPv6 literal) */
	const char *dev; /* the RDMA device to use, NULL: whatever rdma_cm picks */
	int gid_index; /* -1: none; else its address is the source (client) or bound (server) */
	unsigned port; /* RDMA port of dev (1 when 0) */
	uint16_t tcp_port; /* rdma_cm port space TCP: the service port (RN_PING_PORT when 0) */
	uint32_t lat_size, lat_count, bw_size, bw_count; /* client; 0: defaults */
	unsigned timeout_ms; /* each step (resolution, connection, a completion); 0: 3000 */
	bool once; /* server: return after one client */
	unsigned idle_ms; /* server: give up waiting for a client after this (0: never) */
	/* server: called after each client with its result (r 0) or failure (r < 0, err) */
	void (*served)(void *arg, const struct rn_ping_result *res, int r,
		       const struct rn_error *err);
	void *arg;
};

/* The source (client) or bound (server) address of GID index idx of dev/port, as text. */
int rn_ping_gid_addr(const char *dev, unsigned port, int idx, char *buf, size_t len,
		     struct rn_error *err);

/* Connects to o->peer and measures; fills res. */
int rn_ping_client(const struct rn_ping_opts *o, struct rn_ping_result *res, struct rn_error *err);

/* Serves clients one at a time (o->once: one); res: the last one's. */
int rn_ping_server(const struct rn_ping_opts *o, struct rn_ping_result *res, struct rn_error *err);

#endif
