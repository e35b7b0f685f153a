// SPDX-License-Identifier: Apache-2.0
/*
 * Rails on an 8-GPU, 8-NIC node (tests/unit/rails-topology.h, modelled on
 * DGX H100): for containers of 1, 2, 4 and 8 GPUs, every subset of the
 * node's GPUs, the rails rn_rails_choose() gives (gpu-aligned: chosen from
 * all eight) against the best possible (every assignment tried) and against
 * a pod given as many devices without regard to its GPUs (the first k by
 * name, each GPU then on the nearest of them, as NCCL would pick), and the
 * time one choice takes. Then with the pod's devices fixed at four (0, 2, 4,
 * 6): the choice against the best. Prints tables; asserts nothing.
 *   build-bench/bench/rails [ROUNDS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../tests/unit/rails-topology.h"
#include "rdmans/rails.h"

static struct rn_sysfs_pci_fn gpus[TOPO_N];
static struct rn_rail_dev nics[TOPO_N];

static int dist(const struct rn_sysfs_pci_fn *g, const struct rn_rail_dev *d)
{
	return (int)rn_sysfs_pci_distance(g, &d->pci);
}

/* Least total distance: injective while devices last (then the nearest, as rails.c shares). */
static int best(const struct rn_sysfs_pci_fn *g, size_t ng, const struct rn_rail_dev *d, size_t nd,
		bool *used, size_t at)
{
	int b = 1 << 30;

	if (at == ng)
		return 0;
	for (size_t i = 0; i < nd; i++) {
		int t;

		if (used[i] && ng <= nd)
			continue;
		used[i] = true;
		t = dist(&g[at], &d[i]) + best(g, ng, d, nd, used, at + 1);
		used[i] = false;
		b = t < b ? t : b;
	}
	return b;
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* GPU g on the nearest of the first k devices: a pod given k devices by name */
static int by_name(const struct rn_sysfs_pci_fn *g, const struct rn_rail_dev *d, size_t k)
{
	int b = 1 << 30;

	for (size_t i = 0; i < k; i++)
		b = dist(g, &d[i]) < b ? dist(g, &d[i]) : b;
	return b;
}

static void run(size_t k, const struct rn_rail_dev *devs, size_t nd, unsigned rounds)
{
	size_t subsets = 0, optimal = 0, near_rr = 0, near_got = 0, gpus_all = 0;
	long got_sum = 0, best_sum = 0, rr_sum = 0;
	double t_sum = 0;

	for (unsigned mask = 0; mask < (1u << TOPO_N); mask++) {
		struct rn_sysfs_pci_fn g[TOPO_N];
		struct rn_rail rails[TOPO_N];
		struct rn_error err = { 0 };
		bool used[TOPO_N] = { false };
		size_t ng = 0;
		int got = 0, b, rr = 0;
		double t0;

		if ((size_t)__builtin_popcount(mask) != k)
			continue;
		for (size_t s = 0; s < TOPO_N; s++)
			if (mask & (1u << s))
				g[ng++] = gpus[s];
		t0 = now_ns();
		for (unsigned r = 0; r < rounds; r++)
			if (rn_rails_choose(g, ng, devs, nd, rails, &err) < 0)
				exit(1);
		t_sum += (now_ns() - t0) / rounds;
		for (size_t i = 0; i < ng; i++) {
			got += (int)rails[i].distance;
			near_got += rails[i].distance <= RN_PCI_SAME_ROOT_PORT;
			rr += by_name(&g[i], devs, k < nd ? k : nd);
			near_rr += by_name(&g[i], devs, k < nd ? k : nd) <= RN_PCI_SAME_ROOT_PORT;
		}
		b = best(g, ng, devs, nd, used, 0);
		optimal += got == b;
		got_sum += got;
		best_sum += b;
		rr_sum += rr;
		gpus_all += ng;
		subsets++;
	}
	if (nd == TOPO_N)
		printf("| %zu | %zu | %zu/%zu | %.2f | %.2f | %.2f | %zu/%zu | %zu/%zu | %.0f |\n",
		       k, subsets, optimal, subsets, (double)got_sum / (double)gpus_all,
		       (double)best_sum / (double)gpus_all, (double)rr_sum / (double)gpus_all,
		       near_got, gpus_all, near_rr, gpus_all, t_sum / (double)subsets);
	else
		printf("| %zu | %zu | %zu/%zu | %.2f | %.2f | %zu/%zu | %.0f |\n", k, subsets,
		       optimal, subsets, (double)got_sum / (double)gpus_all,
		       (double)best_sum / (double)gpus_all, near_got, gpus_all,
		       t_sum / (double)subsets);
}

int main(int argc, char **argv)
{
	unsigned rounds = argc > 1 ? (unsigned)atoi(argv[1]) : 2000;
	struct rn_rail_dev half[TOPO_N / 2];

	for (size_t s = 0; s < TOPO_N; s++) {
		topo_gpu(s, &gpus[s]);
		topo_nic(s, &nics[s]);
	}
	for (size_t s = 0; s < TOPO_N / 2; s++)
		half[s] = nics[2 * s];
	printf("distance per GPU: 1 same PCIe switch, 2 same root port, 3 same NUMA node, 4 across "
	       "the CPU interconnect\n\n");
	printf("gpu-aligned (chosen from the node's 8):\n\n");
	printf("| GPUs per container | containers (GPU subsets) | choice = best possible | mean "
	       "distance, chosen | best | k devices by name | GPUs on their switch or root port, "
	       "chosen | k devices by name | ns per choice |\n");
	printf("|---|---|---|---|---|---|---|---|---|\n");
	for (size_t k = 1; k <= TOPO_N; k *= 2)
		run(k, nics, TOPO_N, rounds);
	printf("\nthe pod's devices fixed (mlx5_0, 2, 4, 6), NCCL_IB_HCA narrowed per "
	       "container:\n\n");
	printf("| GPUs per container | containers | choice = best possible | mean distance, chosen "
	       "| best | GPUs on their switch or root port | ns per choice |\n");
	printf("|---|---|---|---|---|---|---|\n");
	for (size_t k = 1; k <= TOPO_N; k *= 2)
		run(k, half, TOPO_N / 2, rounds);
	return 0;
}
