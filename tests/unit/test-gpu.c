// SPDX-License-Identifier: Apache-2.0
/*
 * The GPU reader (gpu.c) on a fake /proc/driver/nvidia tree, its files as the
 * driver 580 writes them on an H200 (the real one's text, one address and UUID
 * changed per GPU), and a container's GPUs from its device nodes,
 * NVIDIA_VISIBLE_DEVICES and CDI names. No root.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "rdmans/gpu.h"
#include "test.h"

static char proc[64];

static void add_gpu(const char *bdf, unsigned minor, const char *uuid)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/driver/nvidia/gpus/%s", proc, bdf);
	REQUIRE(system(NULL) != 0);
	{
		char cmd[320];

		snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", path);
		REQUIRE(system(cmd) == 0);
	}
	strncat(path, "/information", sizeof(path) - strlen(path) - 1);
	f = fopen(path, "w");
	REQUIRE(f != NULL);
	fprintf(f,
		"Model: \t\t NVIDIA H200\nIRQ:   \t\t 41\nGPU UUID: \t %s\nVideo BIOS: \t "
		"96.00.a5.00.1a\nBus Type: \t PCIe\nDMA Size: \t 52 bits\nDMA Mask: \t "
		"0xfffffffffffff\nBus Location: \t %s\nDevice Minor: \t %u\nGPU Firmware: \t "
		"580.159.04\nGPU Excluded:\t No\n",
		uuid, bdf, minor);
	fclose(f);
}

/* A node of 4 GPUs whose minors are not in address order (as after a hot-plug). */
static void node(struct rn_gpu **g, size_t *n)
{
	struct rn_error err = { 0 };

	*g = NULL;
	*n = 0;

	snprintf(proc, sizeof(proc), "/tmp/rn-gpu-XXXXXX");
	REQUIRE(mkdtemp(proc) != NULL);
	add_gpu("0000:9a:00.0", 2, "GPU-cccccccc-0000-0000-0000-000000000003");
	add_gpu("0000:18:00.0", 0, "GPU-aaaaaaaa-0000-0000-0000-000000000001");
	add_gpu("0000:bb:00.0", 1, "GPU-dddddddd-0000-0000-0000-000000000004");
	add_gpu("0000:2a:00.0", 3, "GPU-bbbbbbbb-0000-0000-0000-000000000002");
	CHECK_INT(rn_gpu_list(proc, g, n, &err), 0);
}

static void done(struct rn_gpu *g)
{
	char cmd[128];

	free(g);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", proc);
	CHECK_INT(system(cmd), 0);
}

static void the_driver_files_give_address_minor_uuid_in_address_order(void)
{
	size_t n = 0;
	struct rn_gpu *g;

	node(&g, &n);

	REQUIRE(n == 4);
	CHECK_STR(g[0].bdf, "0000:18:00.0");
	CHECK_INT(g[0].minor, 0);
	CHECK_STR(g[0].uuid, "GPU-aaaaaaaa-0000-0000-0000-000000000001");
	CHECK_STR(g[0].model, "NVIDIA H200");
	CHECK_STR(g[1].bdf, "0000:2a:00.0");
	CHECK_INT(g[1].minor, 3);
	CHECK_STR(g[3].bdf, "0000:bb:00.0");
	done(g);
}

static void no_driver_is_no_gpu(void)
{
	struct rn_gpu *g = (struct rn_gpu *)1;
	struct rn_error err = { 0 };
	size_t n = 9;

	CHECK_INT(rn_gpu_list("/nonexistent-proc", &g, &n, &err), 0);
	CHECK(g == NULL && n == 0);
}

static const char *selected(const struct rn_gpu *g, size_t n, const bool *sel)
{
	static char buf[256];

	buf[0] = '\0';
	for (size_t i = 0; i < n; i++)
		if (sel[i])
			snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%s%s",
				 buf[0] ? " " : "", g[i].bdf);
	return buf;
}

static void a_container_names_its_gpus_three_ways(void)
{
	size_t n = 0;
	struct rn_gpu *g;

	node(&g, &n);
	bool sel[RN_GPU_MAX];
	struct rn_error err = { 0 };
	const char *nodes[] = { "/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia3",
				"/dev/nvidia-caps/nvidia-cap1" };
	const char *cdi[] = { "rdmans.io/rdma=mlx5_0",
			      "nvidia.com/gpu=GPU-dddddddd-0000-0000-0000-000000000004" };
	struct rn_gpu_request by_node = { nodes, 4, NULL, NULL, 0 };
	struct rn_gpu_request by_env = { NULL, 0, "2, GPU-aaaaaaaa-0000-0000-0000-000000000001",
					 NULL, 0 };
	struct rn_gpu_request by_cdi = { NULL, 0, NULL, cdi, 2 };
	struct rn_gpu_request all = { NULL, 0, "all", NULL, 0 };
	struct rn_gpu_request none = { nodes, 2, "void", NULL, 0 };
	struct rn_gpu_request image_all = { nodes, 4, "all", cdi, 2 };

	/* /dev/nvidia3 is minor 3: the GPU at 2a (its control and UVM nodes name none) */
	CHECK_INT(rn_gpu_select(g, n, &by_node, sel, &err), 0);
	CHECK_STR(selected(g, n, sel), "0000:2a:00.0");
	/* index 2 in address order is 9a, whatever its minor; the UUID is 18's */
	CHECK_INT(rn_gpu_select(g, n, &by_env, sel, &err), 0);
	CHECK_STR(selected(g, n, sel), "0000:18:00.0 0000:9a:00.0");
	CHECK_INT(rn_gpu_select(g, n, &by_cdi, sel, &err), 0);
	CHECK_STR(selected(g, n, sel), "0000:bb:00.0");
	CHECK_INT(rn_gpu_select(g, n, &all, sel, &err), 0);
	CHECK_STR(selected(g, n, sel), "0000:18:00.0 0000:2a:00.0 0000:9a:00.0 0000:bb:00.0");
	CHECK_INT(rn_gpu_select(g, n, &none, sel, &err), 0);
	CHECK_STR(selected(g, n, sel), "");
	/* an image's NVIDIA_VISIBLE_DEVICES=all beside the node CDI gave it: the node decides */
	CHECK_INT(rn_gpu_select(g, n, &image_all, sel, &err), 0);
	CHECK_STR(selected(g, n, sel), "0000:2a:00.0");
	done(g);
}

static void names_that_are_no_gpu_here_are_refused(void)
{
	size_t n = 0;
	struct rn_gpu *g;

	node(&g, &n);
	bool sel[RN_GPU_MAX];
	struct rn_error err = { 0 };
	struct rn_gpu_request past = { NULL, 0, "0,4", NULL, 0 };
	struct rn_gpu_request mig = { NULL, 0, "MIG-aaaaaaaa-0000-0000-0000-000000000009", NULL,
				      0 };
	const char *cdi[] = { "nvidia.com/gpu=GPU-ffffffff" };
	struct rn_gpu_request unknown = { NULL, 0, NULL, cdi, 1 };

	CHECK_INT(rn_gpu_select(g, n, &past, sel, &err), -EINVAL);
	CHECK_CONTAINS(err.msg, "NVIDIA_VISIBLE_DEVICES names GPU 4, but this node has 4 GPU(s)");
	CHECK_INT(rn_gpu_select(g, n, &mig, sel, &err), -EINVAL);
	CHECK_CONTAINS(err.msg, "a MIG slice has no PCI function of its own");
	CHECK_INT(rn_gpu_select(g, n, &unknown, sel, &err), -EINVAL);
	CHECK_CONTAINS(err.msg, "CDI device nvidia.com/gpu names 'GPU-ffffffff', which is no GPU");
	done(g);
}

static void information_without_its_fields_is_refused(void)
{
	struct rn_gpu g;
	struct rn_error err = { 0 };

	CHECK_INT(rn_gpu_parse_information("Model: \t X\nDevice Minor: 0\nGPU UUID: GPU-1\n", &g,
					   &err),
		  -EINVAL);
	CHECK_CONTAINS(err.msg, "no 'Bus Location:'");
	CHECK_INT(rn_gpu_parse_information("Bus Location: 0000:01:00.0\nDevice Minor: 256\n"
					   "GPU UUID: GPU-1\n",
					   &g, &err),
		  -EINVAL);
	CHECK_CONTAINS(err.msg, "GPU 0000:01:00.0: no 'Device Minor:' of 0-255");
	CHECK_INT(rn_gpu_parse_information("Bus Location: 0000:01:00.0\nDevice Minor: 7\n"
					   "GPU UUID: \tGPU-12 \n",
					   &g, &err),
		  0);
	CHECK_STR(g.uuid, "GPU-12");
	CHECK_INT(g.minor, 7);
}

RN_TEST_MAIN(T(the_driver_files_give_address_minor_uuid_in_address_order), T(no_driver_is_no_gpu),
	     T(a_container_names_its_gpus_three_ways), T(names_that_are_no_gpu_here_are_refused),
	     T(information_without_its_fields_is_refused))
