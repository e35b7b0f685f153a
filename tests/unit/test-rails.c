// SPDX-License-Identifier: Apache-2.0
/*
 * Rails (rails.c): each GPU's RDMA device by PCIe distance, on an 8-GPU,
 * 8-NIC node (rails-topology.h) and on seeded random trees, where the choice
 * is checked against every possible assignment. No root, no sysfs.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rails-topology.h"
#include "rdmans/rails.h"
#include "test.h"

static struct rn_sysfs_pci_fn gpus[TOPO_N];
static struct rn_rail_dev nics[TOPO_N];

static void node(void)
{
	for (size_t s = 0; s < TOPO_N; s++) {
		topo_gpu(s, &gpus[s]);
		topo_nic(s, &nics[s]);
	}
}

static void each_gpu_gets_the_nic_below_its_switch(void)
{
	struct rn_rail rails[TOPO_N];
	struct rn_error err = { 0 };

	node();
	CHECK_INT(rn_sysfs_pci_distance(&gpus[0], &nics[0].pci), RN_PCI_SAME_SWITCH);
	CHECK_INT(rn_sysfs_pci_distance(&gpus[0], &nics[1].pci), RN_PCI_SAME_NODE);
	CHECK_INT(rn_sysfs_pci_distance(&gpus[0], &nics[4].pci), RN_PCI_CROSS_CPU);
	CHECK_INT(rn_rails_choose(gpus, TOPO_N, nics, TOPO_N, rails, &err), 0);
	for (size_t k = 0; k < TOPO_N; k++) {
		CHECK_INT(rails[k].gpu, k);
		CHECK_INT(rails[k].dev, k);
		CHECK_INT(rails[k].distance, RN_PCI_SAME_SWITCH);
		CHECK(!rails[k].shared);
	}
}

/* A container with GPUs 5 and 2 (in that order): their own NICs, nearest first, then by GPU. */
static void two_gpus_of_eight_get_their_own_nics(void)
{
	struct rn_sysfs_pci_fn mine[2];
	struct rn_rail rails[2];
	struct rn_error err = { 0 };

	node();
	mine[0] = gpus[5];
	mine[1] = gpus[2];
	CHECK_INT(rn_rails_choose(mine, 2, nics, TOPO_N, rails, &err), 0);
	CHECK_INT(rails[0].gpu, 0);
	CHECK_STR(nics[rails[0].dev].name, "mlx5_5");
	CHECK_INT(rails[1].gpu, 1);
	CHECK_STR(nics[rails[1].dev].name, "mlx5_2");
}

/* The pod holds NICs 0 and 1 only: GPU 0 takes its own, GPU 2 the other on its socket. */
static void a_taken_nic_goes_to_the_next_nearest(void)
{
	struct rn_sysfs_pci_fn mine[2] = { gpus[2], gpus[0] };
	struct rn_rail_dev two[2];
	struct rn_rail rails[2];
	struct rn_error err = { 0 };

	node();
	mine[0] = gpus[2];
	mine[1] = gpus[0];
	two[0] = nics[0];
	two[1] = nics[1];
	CHECK_INT(rn_rails_choose(mine, 2, two, 2, rails, &err), 0);
	/* ranked nearest first: GPU 0 (the second given) and mlx5_0 below its switch */
	CHECK_INT(rails[0].gpu, 1);
	CHECK_STR(two[rails[0].dev].name, "mlx5_0");
	CHECK_INT(rails[0].distance, RN_PCI_SAME_SWITCH);
	CHECK_INT(rails[1].gpu, 0);
	CHECK_STR(two[rails[1].dev].name, "mlx5_1");
	CHECK_INT(rails[1].distance, RN_PCI_SAME_NODE);
}

/* Four GPUs, two NICs (one per socket): each NIC serves the GPUs of its socket. */
static void fewer_nics_than_gpus_are_shared_by_socket(void)
{
	struct rn_sysfs_pci_fn mine[4];
	struct rn_rail_dev two[2];
	struct rn_rail rails[4];
	struct rn_error err = { 0 };
	size_t shared = 0;

	node();
	mine[0] = gpus[0];
	mine[1] = gpus[1];
	mine[2] = gpus[4];
	mine[3] = gpus[5];
	two[0] = nics[1];
	two[1] = nics[4];
	CHECK_INT(rn_rails_choose(mine, 4, two, 2, rails, &err), 0);
	for (size_t k = 0; k < 4; k++) {
		const char *want = rails[k].gpu < 2 ? "mlx5_1" : "mlx5_4";

		CHECK_STR(two[rails[k].dev].name, want);
		CHECK(rails[k].distance <= RN_PCI_SAME_NODE);
		shared += rails[k].shared;
	}
	CHECK_INT(shared, 2);
	/* the two unshared first: mlx5_1 below GPU 1's switch, mlx5_4 below GPU 4's */
	CHECK_INT(rails[0].distance, RN_PCI_SAME_SWITCH);
	CHECK_INT(rails[1].distance, RN_PCI_SAME_SWITCH);
	CHECK(rails[3].shared);
}

static void devices_without_a_pci_function_choose_nothing(void)
{
	struct rn_rail_dev soft[2] = { { .name = "rxe0" }, { .name = "siw0" } };
	struct rn_rail rails[1];
	struct rn_error err = { 0 };
	enum rn_pci_distance d;

	node();
	CHECK_INT(rn_rails_nearest(&gpus[0], soft, 2, &d), -1);
	CHECK_INT(rn_rails_choose(gpus, 1, soft, 2, rails, &err), -ENODEV);
	CHECK_CONTAINS(err.msg, "none of the 2 RDMA devices here has a PCI function");
	/* one with a PCI function among them is chosen */
	soft[1] = nics[3];
	CHECK_INT(rn_rails_choose(gpus, 1, soft, 2, rails, &err), 0);
	CHECK_INT(rails[0].dev, 1);
	CHECK_INT(rails[0].distance, RN_PCI_SAME_NODE);
}

/* ---- against every assignment, on random trees ---- */

static unsigned rnd(unsigned *state)
{
	*state = *state * 1103515245u + 12345u;
	return (*state >> 16) & 0x7fff;
}

/* A function at a random place of a small two-socket tree: socket, root port, switch, port. */
static void random_fn(unsigned *state, struct rn_sysfs_pci_fn *fn, size_t id)
{
	unsigned sock = rnd(state) % 2, port = rnd(state) % 2, sw = rnd(state) % 2;

	memset(fn, 0, sizeof(*fn));
	fn->numa = (int)sock;
	snprintf(fn->bdf, sizeof(fn->bdf), "0000:%02zx:00.0", id);
	snprintf(fn->path, sizeof(fn->path), "pci0000:%u0/0000:%u0:0%u.0/0000:%u%u:00.0/%.16s",
		 sock, sock, port, port, sw, fn->bdf);
}

static int total(const struct rn_sysfs_pci_fn *g, size_t ng, const struct rn_rail_dev *d,
		 const size_t *perm)
{
	int t = 0;

	for (size_t i = 0; i < ng; i++)
		t += (int)rn_sysfs_pci_distance(&g[i], &d[perm[i]].pci);
	return t;
}

/* The least total distance over every injective assignment of ng GPUs to nd >= ng devices. */
static int best_total(const struct rn_sysfs_pci_fn *g, size_t ng, const struct rn_rail_dev *d,
		      size_t nd, size_t *perm, bool *used, size_t at)
{
	int best = 1 << 30;

	if (at == ng)
		return total(g, ng, d, perm);
	for (size_t i = 0; i < nd; i++) {
		int t;

		if (used[i])
			continue;
		used[i] = true;
		perm[at] = i;
		t = best_total(g, ng, d, nd, perm, used, at + 1);
		best = t < best ? t : best;
		used[i] = false;
	}
	return best;
}

static void the_choice_has_the_least_total_distance(void)
{
	unsigned state = 42;
	size_t trials = 0;

	for (size_t t = 0; t < 300; t++) {
		struct rn_sysfs_pci_fn g[5];
		struct rn_rail_dev d[6];
		struct rn_rail rails[5];
		size_t perm[5], ng = 1 + rnd(&state) % 5, nd = ng + rnd(&state) % (7 - ng);
		bool used[6] = { false }, taken[6] = { false };
		struct rn_error err = { 0 };
		int got = 0;

		for (size_t i = 0; i < ng; i++)
			random_fn(&state, &g[i], i);
		for (size_t i = 0; i < nd; i++) {
			snprintf(d[i].name, sizeof(d[i].name), "mlx5_%zu", i);
			random_fn(&state, &d[i].pci, 0x40 + i);
		}
		REQUIRE(rn_rails_choose(g, ng, d, nd, rails, &err) == 0);
		for (size_t k = 0; k < ng; k++) {
			CHECK(!taken[rails[k].dev]); /* one device per GPU: there are enough */
			taken[rails[k].dev] = true;
			CHECK(rails[k].distance ==
			      rn_sysfs_pci_distance(&g[rails[k].gpu], &d[rails[k].dev].pci));
			CHECK(k == 0 || rails[k - 1].distance <= rails[k].distance);
			got += (int)rails[k].distance;
		}
		CHECK_INT(got, best_total(g, ng, d, nd, perm, used, 0));
		trials++;
	}
	CHECK_INT(trials, 300);
}

RN_TEST_MAIN(T(each_gpu_gets_the_nic_below_its_switch), T(two_gpus_of_eight_get_their_own_nics),
	     T(a_taken_nic_goes_to_the_next_nearest), T(fewer_nics_than_gpus_are_shared_by_socket),
	     T(devices_without_a_pci_function_choose_nothing),
	     T(the_choice_has_the_least_total_distance))
