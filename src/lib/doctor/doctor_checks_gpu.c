// SPDX-License-Identifier: Apache-2.0
/* rdmans doctor's GPU checks: the nearest RDMA device of each GPU, GPUDirect RDMA. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmans/doctor.h"
#include "rdmans/nccl_process.h"
#include "rdmans/sysfs_pci.h"
#include "rdmans/util.h"
#include "doctor_checks_private.h"
#include "doctor_checks_gpu.h"
#include "doctor_checks_nccl.h"

/* Whether NCCL takes RDMA device dev: the process's NCCL_IB_HCA, else what rdmans env uses. */
static bool hca_in_use(const struct rn_doctor_ctx *x, const struct rn_nccl_list *l, const char *dev)
{
	if (l)
		return rn_nccl_list_takes(l, dev, -1);
	if (x->nccl) {
		for (size_t i = 0; i < x->nccl->n_ports; i++)
			if (x->nccl->ports[i].used && strcmp(x->nccl->ports[i].dev, dev) == 0)
				return true;
		return false;
	}
	return true;
}

void rn_doctor_check_gpu_nic(struct rn_doctor_ctx *x)
{
	const struct rn_doctor_facts *f = x->f;
	const struct rn_nccl_var *hca =
		f->have_process ? rn_nccl_process_get(&f->proc.nccl, "NCCL_IB_HCA") : NULL;
	char which[RN_NCCL_VALUE_MAX + PATH_MAX + 64];
	struct rn_nccl_list l;

	if (f->ngpus == 0) {
		rn_doctor_emit(x, NULL, RN_DOCTOR_SKIP, "no NVIDIA GPU on the PCI bus");
		return;
	}
	if (hca) {
		rn_nccl_list_parse(hca->value, &l);
		rn_doctor_var_desc(hca, which, sizeof(which));
	} else if (x->nccl && rn_nccl_result_get(x->nccl, "NCCL_IB_HCA")) {
		(void)rn_snprintf(which, sizeof(which), "NCCL_IB_HCA=%s (rdmans env)",
				  rn_nccl_result_get(x->nccl, "NCCL_IB_HCA")->value);
	} else {
		(void)rn_snprintf(which, sizeof(which), "the RDMA devices of %s", f->target);
	}
	for (size_t g = 0; g < f->ngpus; g++) {
		const struct rn_sysfs_pci_fn *gpu = &f->gpus[g];
		const struct rn_doctor_hca *used = NULL, *any = NULL;
		const struct rn_sysfs_pci_fn *nic = NULL;
		enum rn_pci_distance du = RN_PCI_CROSS_CPU, da = RN_PCI_CROSS_CPU,
				     dn = RN_PCI_CROSS_CPU;
		struct rn_doctor_result *res;
		char subj[96];

		(void)rn_snprintf(subj, sizeof(subj), "GPU %s", gpu->bdf);
		for (size_t i = 0; i < f->nhcas; i++) {
			const struct rn_doctor_hca *h = &f->hcas[i];
			enum rn_pci_distance d = rn_sysfs_pci_distance(gpu, &h->pci);

			if (!any || d < da) {
				any = h;
				da = d;
			}
			if (hca_in_use(x, hca ? &l : NULL, h->dev) && (!used || d < du)) {
				used = h;
				du = d;
			}
		}
		for (size_t i = 0; i < f->nnics; i++) {
			enum rn_pci_distance d = rn_sysfs_pci_distance(gpu, &f->nics[i]);
			bool mine = false;

			for (size_t h = 0; h < f->nhcas; h++)
				mine = mine || strcmp(f->hcas[h].pci.bdf, f->nics[i].bdf) == 0;
			if (!mine && (!nic || d < dn)) {
				nic = &f->nics[i];
				dn = d;
			}
		}
		if (used && du <= RN_PCI_SAME_ROOT_PORT) {
			rn_doctor_emit(x, subj, RN_DOCTOR_PASS,
				       "nearest RDMA device in use: %s (%s), %s", used->dev,
				       used->pci.bdf, rn_pci_distance_name(du));
			continue;
		}
		if (used)
			res = rn_doctor_emit(
				x, subj, RN_DOCTOR_WARN,
				"%s leave it without a near RDMA device: the nearest in use, %s "
				"(%s), is %s; NCCL uses GPUDirect RDMA by default only through a "
				"PCIe switch or root port (NCCL_NET_GDR_LEVEL), so its traffic "
				"goes through host memory",
				which, used->dev, used->pci.bdf, rn_pci_distance_name(du));
		else if (f->nhcas == 0)
			res = rn_doctor_emit(
				x, subj, RN_DOCTOR_WARN,
				"no RDMA device on a PCI function in %s: NCCL has no RDMA path "
				"from this GPU",
				f->target);
		else
			res = rn_doctor_emit(
				x, subj, RN_DOCTOR_WARN,
				"%s name no RDMA device for it: NCCL has no RDMA path from this "
				"GPU",
				which);
		if (any && da <= RN_PCI_SAME_ROOT_PORT && any != used)
			rn_doctor_fix(res, "add %s (%s, %s) to NCCL_IB_HCA", any->dev, any->pci.bdf,
				      rn_pci_distance_name(da));
		else if (nic && dn <= RN_PCI_SAME_ROOT_PORT)
			rn_doctor_fix(
				res,
				"give the pod the RDMA device of PCI function %s (%s to the GPU): "
				"'rdmans dev --all-netns' shows where it is",
				nic->bdf, rn_pci_distance_name(dn));
		else if (nic)
			rn_doctor_fix(res,
				      "no RDMA device or network function is near it on this "
				      "machine (the "
				      "nearest network function, %s, is %s): run the job on GPUs "
				      "near its "
				      "RDMA devices",
				      nic->bdf, rn_pci_distance_name(dn));
		else
			rn_doctor_fix(
				res,
				"this machine has no network function near it: run the job on GPUs "
				"near its RDMA devices");
	}
}

void rn_doctor_check_gpudirect(struct rn_doctor_ctx *x)
{
	const struct rn_doctor_gdr *g = &x->f->gdr;
	struct rn_doctor_result *res;
	unsigned kmaj = 0, kmin = 0;
	bool kernel_ok, driver_ok;

	if (x->f->ngpus == 0) {
		rn_doctor_emit(x, NULL, RN_DOCTOR_SKIP, "no NVIDIA GPU on the PCI bus");
		return;
	}
	if (!g->nvidia) {
		res = rn_doctor_emit(
			x, NULL, RN_DOCTOR_WARN,
			"%zu NVIDIA GPU(s) on the PCI bus, but the nvidia kernel module is not "
			"loaded",
			x->f->ngpus);
		rn_doctor_fix(res, "load the NVIDIA driver ('modprobe nvidia'), then check again");
		return;
	}
	if (g->peermem) {
		rn_doctor_emit(
			x, NULL, RN_DOCTOR_PASS,
			"nvidia_peermem is loaded: RDMA devices can reach GPU memory (driver %s)",
			g->nvidia_version[0] ? g->nvidia_version : "?");
		return;
	}
	(void)sscanf(g->kernel, "%u.%u", &kmaj, &kmin);
	kernel_ok = kmaj > 5 || (kmaj == 5 && kmin >= 12);
	driver_ok = atoi(g->nvidia_version) >= 515;
	if (g->open_module && driver_ok && kernel_ok) {
		rn_doctor_emit(
			x, NULL, RN_DOCTOR_PASS,
			"dma-buf: the NVIDIA open kernel module %s on kernel %s lets RDMA devices "
			"register GPU memory without nvidia_peermem (NCCL uses it: "
			"NCCL_DMABUF_ENABLE)",
			g->nvidia_version, g->kernel);
		return;
	}
	res = rn_doctor_emit(
		x, NULL, RN_DOCTOR_WARN,
		"no GPUDirect RDMA: nvidia_peermem is not loaded, and dma-buf needs%s%s%s "
		"(have: the %s module, driver %s, kernel %s); NCCL then copies through host "
		"memory",
		!g->open_module ? " the open kernel module" : "",
		!driver_ok ? " driver >= 515" : "", !kernel_ok ? " kernel >= 5.12" : "",
		g->open_module ? "open" : "proprietary",
		g->nvidia_version[0] ? g->nvidia_version : "?", g->kernel[0] ? g->kernel : "?");
	rn_doctor_fix(
		res,
		"'modprobe nvidia_peermem' (it ships with the NVIDIA driver and needs ib_core), or "
		"use "
		"the NVIDIA open kernel modules (driver >= 515) on a kernel >= 5.12 for dma-buf");
}
