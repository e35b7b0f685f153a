// SPDX-License-Identifier: Apache-2.0
/*
 * `rdmans doctor`: gather facts about a target (netns and process), then run
 * the checklist (doctor_checks.c) on them: the sysfs facts and the live run. See doctor.h.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "rdmans/cleanup.h"
#include "rdmans/counters.h"
#include "rdmans/devnodes.h"
#include "rdmans/doctor.h"
#include "rdmans/doctor_checks.h"
#include "rdmans/doctor_process.h"
#include "rdmans/nccl_conf.h"
#include "rdmans/nccl_node.h"
#include "rdmans/netns.h"
#include "rdmans/port_netdev.h"
#include "rdmans/rdma_nl.h"
#include "rdmans/rootfs.h"
#include "rdmans/sysfs.h"
#include "rdmans/sysfs_gid.h"
#include "rdmans/sysfs_kernel.h"
#include "rdmans/sysfs_pci.h"
#include "rdmans/sysfs_port.h"
#include "rdmans/util.h"
#include "rdmans/verbs.h"

#define MIB (1024ULL * 1024ULL)
/* Below this a finite RLIMIT_MEMLOCK fails NCCL outright; above it, large jobs still may. */
#define MEMLOCK_FAIL_BELOW (64 * MIB)
#define CAP_IPC_LOCK_BIT 14
#define ENVIRON_MAX (4 * 1024 * 1024)
#define CONF_MAX (1024 * 1024)

const char *rn_doctor_status_name(enum rn_doctor_status s)
{
	static const char *const names[] = {
		[RN_DOCTOR_PASS] = "PASS",
		[RN_DOCTOR_WARN] = "WARN",
		[RN_DOCTOR_FAIL] = "FAIL",
	};

	return RN_NAME_OF(names, s, "SKIP");
}

void rn_doctor_report_free(struct rn_doctor_report *r)
{
	if (!r)
		return;
	free(r->v);
	memset(r, 0, sizeof(*r));
}

int rn_doctor_report_add(struct rn_doctor_report *r, const struct rn_doctor_result *c,
			 struct rn_error *err)
{
	if (RN_GROW(r->v, NULL, r->n + 1) < 0)
		return rn_error_set(err, ENOMEM, "out of memory");
	r->v[r->n++] = *c;
	if (c->status > r->worst)
		r->worst = c->status;
	return 0;
}

void rn_doctor_facts_free(struct rn_doctor_facts *f)
{
	if (!f)
		return;
	free(f->ports);
	rn_gid_table_free(&f->gids);
	rn_nccl_node_free(&f->node);
	free(f->proc.nodes);
	rn_nccl_process_free(&f->proc.nccl);
	free(f->gpus);
	free(f->hcas);
	free(f->nics);
	memset(f, 0, sizeof(*f));
}

/* ---- netns facts from sysfs ---- */

/* uverbsN of each port's device (class/infiniband_verbs is not netns-tagged). */
static int read_uverbs(struct rn_doctor_facts *f, struct rn_error *err)
{
	_cleanup_free_ struct rn_devnode *nodes = NULL;
	size_t n = 0;
	int r = rn_devnodes_uverbs(&nodes, &n, err); /* none (no ib_uverbs) is 0 */

	if (r < 0)
		return r; /* not "no uverbs": the device-node checks would blame the wrong thing */
	for (size_t k = 0; k < n; k++)
		for (size_t i = 0; i < f->nports; i++) {
			struct rn_doctor_port *p = &f->ports[i];
			const char *base = strrchr(nodes[k].path, '/');

			if (strcmp(p->dev, nodes[k].dev) != 0 || !base)
				continue;
			(void)rn_strscpy(p->uverbs, sizeof(p->uverbs), base + 1);
			p->uverbs_major = nodes[k].major;
			p->uverbs_minor = nodes[k].minor;
		}
	return 0;
}

static void port_from_sysfs(struct rn_doctor_port *p, const struct rn_sysfs_port *sp)
{
	memset(p, 0, sizeof(*p));
	(void)rn_strscpy(p->dev, sizeof(p->dev), sp->dev);
	p->port = sp->port;
	(void)rn_strscpy(p->link_layer, sizeof(p->link_layer), sp->link_layer);
	p->state = sp->state;
	p->phys_state = sp->phys_state;
	p->gid_tbl_len = sp->gid_tbl_len;
	p->netdev = sp->netdev;
}

static bool is_gpu(const struct rn_sysfs_pci_fn *fn)
{
	/* NVIDIA, display controller class: VGA (0x0300) or 3D controller (0x0302) */
	return fn->vendor == 0x10de && (fn->pci_class >> 16) == 0x03;
}

/* GPUs, the PCI functions of the target's RDMA devices, and the machine's network functions. */
static int read_pci(struct rn_doctor_facts *f, const struct rn_sysfs_rdma_dev *devs, size_t n,
		    struct rn_error *err)
{
	_cleanup_free_ struct rn_sysfs_pci_fn *all = NULL;
	size_t nall = 0;
	int r;

	r = rn_sysfs_pci_list(&all, &nall, err);
	if (r < 0)
		return r;
	f->gpus = calloc(nall ? nall : 1, sizeof(*f->gpus));
	f->nics = calloc(nall ? nall : 1, sizeof(*f->nics));
	f->hcas = calloc(n ? n : 1, sizeof(*f->hcas));
	if (!f->gpus || !f->nics || !f->hcas)
		return rn_error_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < nall; i++) {
		if (is_gpu(&all[i]))
			f->gpus[f->ngpus++] = all[i];
		else if ((all[i].pci_class >> 16) == 0x02)
			f->nics[f->nnics++] = all[i];
	}
	for (size_t i = 0; i < n; i++) {
		struct rn_doctor_hca *h = &f->hcas[f->nhcas];

		if (!devs[i].pci_bdf[0] || rn_sysfs_pci_get(devs[i].pci_bdf, &h->pci, NULL) < 0)
			continue; /* a soft device (rxe) has no PCI function */
		(void)rn_strscpy(h->dev, sizeof(h->dev), devs[i].name);
		f->nhcas++;
	}
	return 0;
}

void rn_doctor_facts_gdr(struct rn_doctor_facts *f, const char *proc_root)
{
	struct rn_doctor_gdr *g = &f->gdr;
	char path[PATH_MAX], text[256];

	memset(g, 0, sizeof(*g));
	g->nvidia = rn_sysfs_module_loaded("nvidia");
	if (rn_sysfs_module_version("nvidia", g->nvidia_version, sizeof(g->nvidia_version)) < 0)
		g->nvidia_version[0] = '\0';
	g->peermem =
		rn_sysfs_module_loaded("nvidia_peermem") || rn_sysfs_module_loaded("nv_peer_mem");
	if (rn_path(path, sizeof(path), "%s/driver/nvidia/version", proc_root) == 0 &&
	    rn_read_line(path, text, sizeof(text)) == 0)
		g->open_module = strstr(text, "Open Kernel Module") != NULL;
	if (rn_path(path, sizeof(path), "%s/sys/kernel/osrelease", proc_root) == 0)
		(void)rn_read_line(path, g->kernel, sizeof(g->kernel));
}

/* The facts of every port (bound by then), their devices and GIDs; the GID table moves to f. */
static int facts_from(struct rn_doctor_facts *f, struct rn_sysfs_rdma_facts *sf,
		      struct rn_error *err)
{
	int r;

	f->ports = calloc(sf->n_ports ? sf->n_ports : 1, sizeof(*f->ports));
	if (!f->ports)
		return rn_error_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < sf->n_ports; i++) {
		struct rn_doctor_port *p = &f->ports[f->nports++];

		port_from_sysfs(p, &sf->ports[i]);
		for (size_t d = 0; d < sf->n_devs; d++)
			p->iwarp |= strcmp(sf->devs[d].name, p->dev) == 0 &&
				    sf->devs[d].node_type == RN_NODE_RNIC;
	}
	r = read_uverbs(f, err);
	if (r < 0)
		return r;
	r = read_pci(f, sf->devs, sf->n_devs, err);
	if (r < 0)
		return r;
	r = rn_nccl_node_from_facts(sf, &f->node, err);
	if (r < 0) {
		f->node_ok = false;
		(void)rn_strscpy(f->node_msg, sizeof(f->node_msg), err->msg);
		rn_error_clear(err);
	} else {
		f->node_ok = true;
	}
	f->gids = sf->gids;
	sf->gids = (struct rn_gid_table){ 0 };
	return 0;
}

int rn_doctor_facts_from_sysfs(struct rn_doctor_facts *f, struct rn_error *err)
{
	_cleanup_(rn_sysfs_rdma_facts_free) struct rn_sysfs_rdma_facts sf = { 0 };
	int r;

	/* every port and GID table read once: the checks and the resolver's node share it */
	r = rn_sysfs_rdma_facts_read(&sf, err);
	if (r < 0)
		return r;
	return facts_from(f, &sf, err);
}

int rn_doctor_facts_add_addr(struct rn_doctor_facts *f, const char *netdev, const char *cidr,
			     struct rn_error *err)
{
	for (size_t i = 0; i < f->nports; i++) {
		struct rn_doctor_port *p = &f->ports[i];
		bool dup = false;

		if (strcmp(p->netdev.name, netdev) != 0)
			continue;
		p->addrs_known = true;
		for (size_t a = 0; a < p->naddrs; a++)
			dup |= strcmp(p->addrs[a], cidr) == 0;
		if (dup || p->naddrs == RN_DOCTOR_MAX_ADDRS)
			continue;
		(void)rn_strscpy(p->addrs[p->naddrs++], sizeof(p->addrs[0]), cidr);
	}
	if (f->node_ok)
		return rn_nccl_node_add_addr(&f->node, netdev, cidr, err);
	return 0;
}

bool rn_doctor_port_ethernet(const struct rn_doctor_port *p)
{
	return strcmp(p->link_layer, "Ethernet") == 0;
}

/* ---- the live run ---- */

struct netns_job {
	struct rn_doctor_facts *f;
	bool rdma; /* RDMA netlink works */
};

/* In the target netns with its sysfs: sysfs facts, netlink's netdev binding, addresses, MTU. */
static int gather_netns(void *arg, struct rn_error *err)
{
	struct netns_job *job = arg;
	struct rn_doctor_facts *f = job->f;
	_cleanup_(rn_sysfs_rdma_facts_free) struct rn_sysfs_rdma_facts sf = { 0 };
	struct rn_error nl_err = { 0 };
	int r, nl = 0;

	r = rn_sysfs_rdma_facts_read(&sf, err);
	if (r < 0)
		return r;
	/*
	 * RDMA netlink works on the host: failing here is a fact, not a reason to
	 * guess (the NCCL resolver, which must answer, goes on without it). The
	 * checks still get sysfs's facts.
	 */
	if (job->rdma)
		nl = rn_port_netdev_decide_all(sf.ports, sf.n_ports, &nl_err);
	r = facts_from(f, &sf, err);
	if (r < 0)
		return r;
	if (nl < 0) {
		*err = nl_err;
		return rn_error_wrap(err, "RDMA netlink in the target network namespace");
	}
	for (size_t i = 0; i < f->nports; i++) {
		struct rn_doctor_port *p = &f->ports[i];
		char cidrs[RN_DOCTOR_MAX_ADDRS][64];
		size_t n = 0;

		/*
		 * A port sharing its netdev with one before got its addresses with that
		 * one. Unreadable addresses are a fact here (addrs_known stays false, the
		 * GID check passes the port over); the resolver, which needs them, fails.
		 */
		if (p->netdev.here && p->netdev.ifindex > 0 && !p->addrs_known &&
		    rn_port_netdev_addrs(p->netdev.name, cidrs, RN_DOCTOR_MAX_ADDRS, &n, NULL) ==
			    0) {
			p->addrs_known = true;
			for (size_t a = 0; a < n && a < RN_DOCTOR_MAX_ADDRS; a++) {
				r = rn_doctor_facts_add_addr(f, p->netdev.name, cidrs[a], err);
				if (r < 0)
					return r;
			}
		}
		if (rn_doctor_port_ethernet(p)) {
			struct rn_error merr = { 0 };

			if (rn_verbs_port_mtu(p->dev, p->port, &p->active_mtu, &p->max_mtu, &merr) <
			    0) {
				p->active_mtu = p->max_mtu = 0;
				(void)rn_strscpy(p->mtu_note, sizeof(p->mtu_note), merr.msg);
			}
		}
	}
	return 0;
}

int rn_doctor_run(const struct rn_doctor_target *t, struct rn_doctor_facts *f,
		  struct rn_doctor_report *out, struct rn_error *err)
{
	_cleanup_rdma_ struct rn_rdma *rdma = NULL;
	_cleanup_close_ int nsfd = -1, self = -1;
	struct rn_error e = { 0 };
	struct netns_job job = { .f = f };
	pid_t pid = t->pid;
	bool exclusive = false;
	int r, same;

	memset(f, 0, sizeof(*f));
	f->mode = -1;
	f->nccl_layers = t->nccl_layers;
	f->n_nccl_layers = t->n_nccl_layers;
	/* the target first: bad input fails before anything is gathered */
	if (t->pid > 0) {
		nsfd = rn_netns_open_pid(t->pid, err);
		snprintf(f->target, sizeof(f->target), "the netns of PID %d", (int)t->pid);
	} else if (t->netns) {
		nsfd = rn_netns_open_target(t->netns, f->target, sizeof(f->target), err);
	} else {
		nsfd = rn_netns_open_self(err);
		pid = getpid();
		snprintf(f->target, sizeof(f->target), "this process's netns");
	}
	if (nsfd < 0)
		return nsfd;
	{
		_cleanup_close_ int host = rn_netns_open_host(NULL);

		f->target_is_host = host >= 0 && rn_netns_same(nsfd, host, NULL) == 1;
	}

	/* system */
	r = rn_rdma_open(&rdma, &e);
	if (r == 0)
		r = rn_rdma_netns_mode_get(rdma, &exclusive, &e);
	if (r < 0) {
		f->rdma_nl = rdma ? 0 : r;
		(void)rn_strscpy(f->rdma_nl_msg, sizeof(f->rdma_nl_msg), e.msg);
	} else {
		f->mode = exclusive;
	}
	job.rdma = rdma != NULL;
	rn_error_clear(&e);
	r = rn_system_boot_config(t->config_root ? t->config_root : "", &f->boot, &e);
	f->boot_known = r == 0;
	if (r < 0)
		(void)rn_strscpy(f->boot_msg, sizeof(f->boot_msg), e.msg);

	/* the target netns */
	rn_error_clear(&e);
	self = rn_netns_open_self(NULL);
	same = self >= 0 ? rn_netns_same(nsfd, self, NULL) : 0;
	if (same == 1)
		r = rn_netns_run_here_sysfs(gather_netns, &job, &e); /* /sys may be another's */
	else
		r = rn_netns_run_sysfs(nsfd, gather_netns, &job, &e);
	if (r == -ENOMEM)
		return rn_error_set(err, ENOMEM, "out of memory");
	if (r < 0) {
		f->netns_error = r;
		(void)rn_strscpy(f->netns_msg, sizeof(f->netns_msg), e.msg);
	}

	{
		char proc[PATH_MAX];

		snprintf(proc, sizeof(proc), "%s/proc", t->config_root ? t->config_root : "");
		rn_doctor_facts_gdr(f, proc);
	}

	/* the target process */
	if (pid > 0) {
		r = rn_doctor_facts_process(f, "/proc", pid, err);
		if (r < 0)
			return r;
	}
	return rn_doctor_evaluate(f, out, err);
}
