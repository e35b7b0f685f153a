// SPDX-License-Identifier: Apache-2.0
/*
 * The exporter's walk over every network namespace, natively, on any
 * machine whose kernel has ib_core (no RDMA device or VM needed): list,
 * open, one thread joining each netns (RDMA netlink socket, device dump),
 * a sysfs instance (fsmount) read in every 8th; then rn_scrape_all() plus
 * the Prometheus text, as one scrape does, ITER times with the RSS and the
 * open fds before and after.
 *   bench/netns-walk [ROUNDS [ITER]]   (200, 10000; make the namespaces first,
 *   e.g. `for i in $(seq 64); do ip netns add walk$i; done`)
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>
#include "rdmans/netns.h"
#include "rdmans/rdma_nl.h"
#include "rdmans/counters.h"
#include "rdmans/prom.h"

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}
struct w {
	int nl_ok, nfs, fsok;
};
static int one(void *arg, size_t i, int enter, struct rn_error *err)
{
	struct w *w = arg;
	struct rn_rdma *r;
	struct rn_rdma_devs d = { 0 };
	if (enter < 0)
		return 0;
	if (rn_rdma_open(&r, NULL) == 0) {
		if (rn_rdma_dev_dump(r, &d, NULL) == 0)
			w->nl_ok++;
		rn_rdma_devs_free(&d);
		rn_rdma_close(r);
	}
	if (i % 8 == 1) {
		int fd = rn_netns_sysfs_fd(NULL);
		if (fd >= 0) {
			char p[64];
			snprintf(p, sizeof p, "/proc/self/fd/%d/class/net", fd);
			DIR *dd = opendir(p);
			struct dirent *de;
			int n = 0;
			while (dd && (de = readdir(dd)))
				n++;
			if (dd) {
				closedir(dd);
				w->fsok++;
			}
			close(fd);
		}
		w->nfs++;
	}
	return 0;
}
static int cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}
static void stats(const char *what, double *v, int n)
{
	qsort(v, n, sizeof(*v), cmpd);
	printf("%-44s min %.2f  median %.2f  p95 %.2f  max %.2f ms\n", what, v[0] * 1e3,
	       v[n / 2] * 1e3, v[(int)(n * 0.95)] * 1e3, v[n - 1] * 1e3);
}
static long rss_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char l[256];
	long v = -1;
	while (f && fgets(l, sizeof l, f))
		if (!strncmp(l, "VmRSS:", 6))
			v = atol(l + 6);
	if (f)
		fclose(f);
	return v;
}
static int nfds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;
	while (d && readdir(d))
		n++;
	if (d)
		closedir(d);
	return n - 3;
}
int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 200, loops = argc > 2 ? atoi(argv[2]) : 10000;
	double *walk = calloc(rounds, sizeof(double)), *full = calloc(rounds, sizeof(double));
	struct w w = { 0 };
	size_t n = 0;
	for (int r = 0; r < rounds; r++) {
		struct rn_netns_entry *nets;
		double t0 = now();
		rn_netns_list(&nets, &n, NULL);
		int *fds = calloc(n, sizeof(int));
		for (size_t i = 0; i < n; i++)
			fds[i] = open(nets[i].path, O_RDONLY | O_CLOEXEC);
		memset(&w, 0, sizeof(w));
		rn_netns_run_each(fds, n, one, &w, NULL);
		for (size_t i = 0; i < n; i++)
			if (fds[i] >= 0)
				close(fds[i]);
		free(fds);
		free(nets);
		walk[r] = now() - t0;
		struct rn_scrape s;
		struct rn_buf b = { 0 };
		t0 = now();
		rn_scrape_all(NULL, &s, NULL);
		rn_prom_render(&s, &b, NULL);
		full[r] = now() - t0;
		rn_scrape_free(&s);
		rn_buf_free(&b);
	}
	printf("namespaces %zu, netlink answered in %d, sysfs instances %d of %d\n", n, w.nl_ok,
	       w.fsok, w.nfs);
	stats("walk: list+open+setns+netlink (+8 sysfs)", walk, rounds);
	stats("rn_scrape_all + render (mode decides walk)", full, rounds);
	long r0 = rss_kib();
	int f0 = nfds();
	double t0 = now();
	for (int i = 0; i < loops; i++) {
		struct rn_scrape s;
		struct rn_buf b = { 0 };
		rn_scrape_all(NULL, &s, NULL);
		rn_prom_render(&s, &b, NULL);
		rn_scrape_free(&s);
		rn_buf_free(&b);
	}
	printf("%d scrapes+renders: %.2f ms each; RSS %ld -> %ld KiB, fds %d -> %d\n", loops,
	       (now() - t0) * 1e3 / loops, r0, rss_kib(), f0, nfds());
	return 0;
}
