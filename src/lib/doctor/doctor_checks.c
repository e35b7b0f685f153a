// SPDX-License-Identifier: Apache-2.0
/* rdmans doctor: the checklist, evaluated on the facts with no I/O (doctor_checks.h). */
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
#include "rdmans/link.h"
#include "rdmans/nccl_conf.h"
#include "rdmans/nccl_resolve.h"
#include "rdmans/nccl_rules.h"
#include "rdmans/netns.h"
#include "rdmans/rdma_nl.h"
#include "rdmans/rootfs.h"
#include "rdmans/sysfs_gid.h"
#include "rdmans/util.h"
#include "rdmans/verbs.h"
#include "doctor_checks_gpu.h"
#include "doctor_checks_nccl.h"
#include "doctor_checks_private.h"

#define MIB (1024ULL * 1024ULL)
/* Below this a finite RLIMIT_MEMLOCK fails NCCL outright; above it, large jobs still may. */
#define MEMLOCK_FAIL_BELOW (64 * MIB)
#define CAP_IPC_LOCK_BIT 14
#define ENVIRON_MAX (4 * 1024 * 1024)
#define CONF_MAX (1024 * 1024)

static bool is_ipv4_cidr(const char *cidr)
{
	return strchr(cidr, '.') && !strchr(cidr, ':');
}

/* ---- the checklist ---- */

struct rn_doctor_result *rn_doctor_emit(struct rn_doctor_ctx *x, const char *subject,
					enum rn_doctor_status status, const char *fmt, ...)
{
	static struct rn_doctor_result sink;
	struct rn_doctor_result *res;
	va_list ap;

	if (RN_GROW(x->r->v, NULL, x->r->n + 1) < 0) {
		x->error = -ENOMEM;
		return &sink;
	}
	res = &x->r->v[x->r->n++];
	memset(res, 0, sizeof(*res));
	res->id = x->id;
	res->title = x->title;
	(void)rn_strscpy(res->subject, sizeof(res->subject), subject ? subject : "");
	res->status = status;
	va_start(ap, fmt);
	vsnprintf(res->message, sizeof(res->message), fmt, ap);
	va_end(ap);
	if (status > x->r->worst)
		x->r->worst = status;
	return res;
}

void rn_doctor_fix(struct rn_doctor_result *res, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(res->fix, sizeof(res->fix), fmt, ap);
	va_end(ap);
}

static const char *port_subject(const struct rn_doctor_port *p, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%u", p->dev, p->port);
	return buf;
}

static void check_netlink(struct rn_doctor_ctx *x)
{
	struct rn_doctor_result *res;

	if (x->f->rdma_nl == 0) {
		rn_doctor_emit(x, NULL, RN_DOCTOR_PASS,
			       "the kernel answers RDMA netlink (ib_core is loaded)");
		return;
	}
	res = rn_doctor_emit(x, NULL, RN_DOCTOR_FAIL, "%s",
			     x->f->rdma_nl_msg[0] ? x->f->rdma_nl_msg : "no RDMA netlink");
	rn_doctor_fix(
		res,
		"load the RDMA core and the HCA's driver ('modprobe ib_core ib_uverbs rdma_ucm', "
		"then mlx5_ib, irdma, ...), or boot a kernel built with CONFIG_INFINIBAND");
}

static void check_mode_now(struct rn_doctor_ctx *x)
{
	const struct rn_doctor_facts *f = x->f;
	struct rn_doctor_result *res;

	if (f->rdma_nl < 0) {
		rn_doctor_emit(x, NULL, RN_DOCTOR_SKIP, "no RDMA netlink");
		return;
	}
	if (f->mode == 1) {
		rn_doctor_emit(x, NULL, RN_DOCTOR_PASS,
			       "exclusive: each RDMA device belongs to one network namespace");
		return;
	}
	if (f->mode < 0) {
		rn_doctor_emit(x, NULL, RN_DOCTOR_WARN, "the kernel did not report the netns mode");
		return;
	}
	res = rn_doctor_emit(
		x, NULL, RN_DOCTOR_FAIL,
		"shared: every network namespace sees every RDMA device, and no device can be "
		"moved into a pod");
	if (f->boot_known && f->boot.mode == RN_BOOT_EXCLUSIVE)
		rn_doctor_fix(res,
			      "the next boot is set to exclusive (%s): reboot, or reload ib_core "
			      "while no "
			      "RDMA device is in use",
			      f->boot.source);
	else
		rn_doctor_fix(
			res, "'rdmans system set netns exclusive' (works only while no other netns "
			     "exists); on a node with pods: 'rdmans system set netns exclusive "
			     "--persist', then reboot");
}

static void check_mode_boot(struct rn_doctor_ctx *x)
{
	const struct rn_doctor_facts *f = x->f;
	const char *src = f->boot.source[0] ? f->boot.source : "nothing configured";
	struct rn_doctor_result *res;

	if (!f->boot_known) {
		rn_doctor_emit(x, NULL, RN_DOCTOR_WARN, "cannot tell: %s", f->boot_msg);
		return;
	}
	if (f->boot.mode == RN_BOOT_EXCLUSIVE) {
		rn_doctor_emit(x, NULL, RN_DOCTOR_PASS, "exclusive (%s)", src);
		return;
	}
	if (f->mode == 1)
		res = rn_doctor_emit(
			x, NULL, RN_DOCTOR_WARN,
			"exclusive now, but ib_core starts %s at the next boot (%s): pods "
			"cannot get devices after a reboot",
			rn_boot_mode_name(f->boot.mode), src);
	else
		res = rn_doctor_emit(x, NULL, RN_DOCTOR_FAIL, "%s at the next boot too (%s)",
				     rn_boot_mode_name(f->boot.mode), src);
	rn_doctor_fix(res, "'rdmans system set netns exclusive --persist' (writes %s)",
		      RN_MODPROBE_CONF);
}

static void check_devices(struct rn_doctor_ctx *x)
{
	const struct rn_doctor_facts *f = x->f;
	struct rn_doctor_result *res;
	char list[768] = "";
	size_t ndev = 0, off = 0;

	if (f->netns_error < 0) {
		res = rn_doctor_emit(x, NULL, RN_DOCTOR_FAIL, "cannot read %s: %s", f->target,
				     f->netns_msg);
		rn_doctor_fix(res, "run as root; check that the target still exists");
		return;
	}
	for (size_t i = 0; i < f->nports; i++) {
		const struct rn_doctor_port *p = &f->ports[i];
		int n;

		if (i > 0 && strcmp(f->ports[i - 1].dev, p->dev) == 0)
			continue;
		ndev++;
		n = snprintf(list + off, sizeof(list) - off, "%s%s (%s)", off ? ", " : "", p->dev,
			     p->iwarp		? "iWARP"
			     : p->link_layer[0] ? p->link_layer
						: "?");
		if (n > 0 && (size_t)n < sizeof(list) - off)
			off += (size_t)n;
	}
	if (ndev > 0) {
		rn_doctor_emit(x, NULL, RN_DOCTOR_PASS, "%zu in %s: %s", ndev, f->target, list);
		return;
	}
	res = rn_doctor_emit(x, NULL, RN_DOCTOR_FAIL, "no RDMA device in %s", f->target);
	if (f->target_is_host)
		rn_doctor_fix(
			res,
			"load the HCA's driver (mlx5_ib, irdma, bnxt_re, erdma, ...), or create "
			"a soft device: 'rdmans link add rxe0 type rxe netdev NETDEV'");
	else
		rn_doctor_fix(res,
			      "move one in: 'rdmans move DEV TARGET --with-netdev' (the CNI plugin "
			      "rdma-netns does it at pod creation)");
}

static void check_port_state(struct rn_doctor_ctx *x)
{
	for (size_t i = 0; i < x->f->nports; i++) {
		const struct rn_doctor_port *p = &x->f->ports[i];
		struct rn_doctor_result *res;
		char subj[96];

		port_subject(p, subj, sizeof(subj));
		if (p->state == 4) {
			rn_doctor_emit(x, subj, RN_DOCTOR_PASS, "ACTIVE (%s)",
				       rn_rdma_port_phys_state_name(p->phys_state));
			continue;
		}
		if (p->state == 0) {
			rn_doctor_emit(x, subj, RN_DOCTOR_WARN, "port state unreadable");
			continue;
		}
		res = rn_doctor_emit(x, subj, RN_DOCTOR_FAIL, "port is %s (physical state %s)",
				     rn_rdma_port_state_name(p->state),
				     rn_rdma_port_phys_state_name(p->phys_state));
		if (!rn_doctor_port_ethernet(p))
			rn_doctor_fix(res, "%s",
				      p->state == 2
					      ? "no subnet manager configured the port: start "
						"opensm or check the fabric's SM"
					      : "check the cable and the switch port");
		else if (p->netdev.name[0] && p->netdev.here && p->netdev.admin_up != 1)
			rn_doctor_fix(res, "bring its netdev up: 'ip link set %s up' (in %s)",
				      p->netdev.name, x->f->target);
		else if (p->netdev.name[0] && p->netdev.here && p->netdev.oper_up != 1)
			rn_doctor_fix(
				res,
				"netdev %s is up but has no carrier: check the cable, the switch "
				"port, or the veth peer",
				p->netdev.name);
		else
			rn_doctor_fix(
				res,
				"check the link of the netdev bound to it (cable, switch port)");
	}
}

static void check_netdev(struct rn_doctor_ctx *x)
{
	for (size_t i = 0; i < x->f->nports; i++) {
		const struct rn_doctor_port *p = &x->f->ports[i];
		struct rn_doctor_result *res;
		char subj[96];

		if (!rn_doctor_port_ethernet(p))
			continue;
		port_subject(p, subj, sizeof(subj));
		if (!p->netdev.name[0] || !p->netdev.here) {
			if (p->netdev.name[0])
				res = rn_doctor_emit(
					x, subj, RN_DOCTOR_FAIL,
					"its netdev %s is not in %s (the RDMA device moved "
					"without it?)",
					p->netdev.name, x->f->target);
			else
				res = rn_doctor_emit(
					x, subj, RN_DOCTOR_FAIL,
					"no netdev bound to the port in %s: %s needs one",
					x->f->target, p->iwarp ? "iWARP" : "RoCE");
			rn_doctor_fix(
				res,
				"move the device together with its netdev: 'rdmans move %s TARGET "
				"--with-netdev'",
				p->dev);
			continue;
		}
		if (p->netdev.admin_up != 1) {
			res = rn_doctor_emit(x, subj, RN_DOCTOR_FAIL, "netdev %s is down",
					     p->netdev.name);
			rn_doctor_fix(res, "'ip link set %s up' (in %s)", p->netdev.name,
				      x->f->target);
			continue;
		}
		if (p->netdev.oper_up != 1) {
			res = rn_doctor_emit(x, subj, RN_DOCTOR_FAIL,
					     "netdev %s is up but not running (no carrier)",
					     p->netdev.name);
			rn_doctor_fix(res,
				      "check the cable, the switch port, or the veth peer of %s",
				      p->netdev.name);
			continue;
		}
		rn_doctor_emit(x, subj, RN_DOCTOR_PASS, "netdev %s is up", p->netdev.name);
	}
}

/* The address of a CIDR without its prefix length. */
static void cidr_addr(const char *cidr, char *buf, size_t len)
{
	(void)rn_strscpy(buf, len, cidr);
	buf[strcspn(buf, "/")] = '\0';
}

static const struct rn_gid_entry *gid_for(const struct rn_doctor_facts *f,
					  const struct rn_doctor_port *p, const char *cidr)
{
	char addr[64];
	uint8_t raw[16];
	bool v4 = is_ipv4_cidr(cidr);

	cidr_addr(cidr, addr, sizeof(addr));
	if (!v4 && inet_pton(AF_INET6, addr, raw) != 1)
		return NULL;
	for (size_t i = 0; i < f->gids.n; i++) {
		const struct rn_gid_entry *e = &f->gids.entries[i];

		if (strcmp(e->dev, p->dev) != 0 || e->port != p->port || e->type != RN_GID_ROCE_V2)
			continue;
		if (v4 ? strcmp(e->ipv4, addr) == 0 : memcmp(e->raw, raw, 16) == 0)
			return e;
	}
	return NULL;
}

static bool is_link_local6(const char *cidr)
{
	return strncasecmp(cidr, "fe80:", 5) == 0;
}

static size_t gids_of_port(const struct rn_doctor_facts *f, const struct rn_doctor_port *p)
{
	size_t n = 0;

	for (size_t i = 0; i < f->gids.n; i++)
		n += strcmp(f->gids.entries[i].dev, p->dev) == 0 &&
		     f->gids.entries[i].port == p->port;
	return n;
}

static void check_gid(struct rn_doctor_ctx *x)
{
	for (size_t i = 0; i < x->f->nports; i++) {
		const struct rn_doctor_port *p = &x->f->ports[i];
		char subj[96], found[512] = "", missing[512] = "";
		size_t nfound = 0, nmissing = 0, off_f = 0, off_m = 0;
		struct rn_doctor_result *res;

		if (!rn_doctor_port_ethernet(p) || !p->netdev.name[0] || !p->netdev.here ||
		    !p->addrs_known)
			continue;
		port_subject(p, subj, sizeof(subj));
		if (p->iwarp) {
			rn_doctor_emit(
				x, subj, RN_DOCTOR_SKIP,
				"iWARP device: its GID is the netdev's MAC, there is no RoCE "
				"v2 GID to find (and NCCL cannot use iWARP)");
			continue;
		}
		for (size_t a = 0; a < p->naddrs; a++) {
			const struct rn_gid_entry *e;
			char addr[64];
			int n;

			if (is_link_local6(p->addrs[a]))
				continue;
			cidr_addr(p->addrs[a], addr, sizeof(addr));
			e = gid_for(x->f, p, p->addrs[a]);
			if (e) {
				n = snprintf(found + off_f, sizeof(found) - off_f,
					     "%s%s at GID index %u", nfound ? ", " : "", addr,
					     e->index);
				if (n > 0 && (size_t)n < sizeof(found) - off_f)
					off_f += (size_t)n;
				nfound++;
			} else {
				n = snprintf(missing + off_m, sizeof(missing) - off_m, "%s%s",
					     nmissing ? ", " : "", addr);
				if (n > 0 && (size_t)n < sizeof(missing) - off_m)
					off_m += (size_t)n;
				nmissing++;
			}
		}
		if (nfound + nmissing == 0) {
			res = rn_doctor_emit(
				x, subj, RN_DOCTOR_FAIL,
				"netdev %s has no IP address: RoCE v2 GIDs are made from the "
				"netdev's addresses",
				p->netdev.name);
			rn_doctor_fix(
				res,
				"give %s an address (in a pod the CNI IPAM does; by hand: 'ip "
				"addr add ADDR/LEN dev %s')",
				p->netdev.name, p->netdev.name);
			continue;
		}
		if (nmissing == 0) {
			rn_doctor_emit(x, subj, RN_DOCTOR_PASS, "RoCE v2: %s", found);
			continue;
		}
		if (p->gid_tbl_len && gids_of_port(x->f, p) >= p->gid_tbl_len) {
			res = rn_doctor_emit(
				x, subj, RN_DOCTOR_FAIL,
				"no RoCE v2 GID for %s of %s: the GID table is full (%zu of "
				"%u entries)%s%s",
				missing, p->netdev.name, gids_of_port(x->f, p), p->gid_tbl_len,
				nfound ? "; found: " : "", found);
			rn_doctor_fix(res,
				      "each address takes two GID slots (RoCE v1 and v2): remove "
				      "addresses from %s, or use fewer",
				      p->netdev.name);
		} else {
			res = rn_doctor_emit(x, subj, RN_DOCTOR_FAIL,
					     "no RoCE v2 GID for %s of %s%s%s", missing,
					     p->netdev.name, nfound ? "; found: " : "", found);
			rn_doctor_fix(
				res,
				"the kernel adds GIDs for the addresses of the netdev bound to the "
				"port: check 'rdmans gids %s' and 'rdma link show %s/%u', and look "
				"again a second after an address change",
				p->dev, p->dev, p->port);
		}
	}
}

static void check_mtu(struct rn_doctor_ctx *x)
{
	for (size_t i = 0; i < x->f->nports; i++) {
		const struct rn_doctor_port *p = &x->f->ports[i];
		struct rn_doctor_result *res;
		unsigned allowed;
		char subj[96];

		if (!rn_doctor_port_ethernet(p) || !p->netdev.here || p->netdev.mtu < 0)
			continue;
		port_subject(p, subj, sizeof(subj));
		if (p->iwarp) {
			/* iWARP runs over TCP: segments follow the netdev's MTU, there is no RoCE MTU */
			rn_doctor_emit(
				x, subj, RN_DOCTOR_SKIP,
				"iWARP device: its traffic is TCP, sized by netdev %s MTU %d; "
				"no RoCE MTU to compare",
				p->netdev.name, p->netdev.mtu);
			continue;
		}
		allowed = rn_roce_mtu_for_netdev((unsigned)p->netdev.mtu);
		if (!p->active_mtu) {
			if (allowed >= 4096) {
				rn_doctor_emit(
					x, subj, RN_DOCTOR_PASS,
					"netdev %s MTU %d allows RoCE MTU 4096 (active MTU not "
					"read: %s)",
					p->netdev.name, p->netdev.mtu,
					p->mtu_note[0] ? p->mtu_note : "?");
				continue;
			}
			res = rn_doctor_emit(
				x, subj, RN_DOCTOR_WARN,
				"netdev %s MTU %d limits RoCE to MTU %u (active MTU not read: %s)",
				p->netdev.name, p->netdev.mtu, allowed,
				p->mtu_note[0] ? p->mtu_note : "?");
			rn_doctor_fix(
				res,
				"for RoCE MTU 4096 set the netdev MTU to 4200 or more (9000 on "
				"jumbo-frame fabrics), on the switch ports too");
			continue;
		}
		if (p->active_mtu >= p->max_mtu || p->active_mtu >= 4096) {
			rn_doctor_emit(x, subj, RN_DOCTOR_PASS,
				       "active MTU %u (port maximum %u), netdev %s MTU %d",
				       p->active_mtu, p->max_mtu, p->netdev.name, p->netdev.mtu);
			continue;
		}
		if (allowed > p->active_mtu) {
			res = rn_doctor_emit(
				x, subj, RN_DOCTOR_WARN,
				"active MTU %u is below what netdev %s MTU %d allows (%u): the "
				"port did not follow the netdev's MTU",
				p->active_mtu, p->netdev.name, p->netdev.mtu, allowed);
			rn_doctor_fix(res,
				      "set the MTU again ('ip link set %s mtu %d') or reload the "
				      "driver; check the port's maximum (%u)",
				      p->netdev.name, p->netdev.mtu, p->max_mtu);
			continue;
		}
		res = rn_doctor_emit(
			x, subj, RN_DOCTOR_WARN,
			"active MTU %u, limited by netdev %s MTU %d (the port can do %u)",
			p->active_mtu, p->netdev.name, p->netdev.mtu, p->max_mtu);
		rn_doctor_fix(
			res,
			"set the netdev MTU to %u or more for RoCE MTU %u (9000 on jumbo-frame "
			"fabrics), on the switch ports too",
			p->max_mtu + 104, p->max_mtu);
	}
}

const char *rn_doctor_pid_subject(const struct rn_doctor_process *p, char *buf, size_t len)
{
	if (p->comm[0])
		snprintf(buf, len, "PID %d (%s)", (int)p->pid, p->comm);
	else
		snprintf(buf, len, "PID %d", (int)p->pid);
	return buf;
}

static void format_bytes(uint64_t v, char *buf, size_t len)
{
	if (v == RN_DOCTOR_UNLIMITED)
		snprintf(buf, len, "unlimited");
	else if (v >= MIB && v % MIB == 0)
		snprintf(buf, len, "%" PRIu64 " MiB", (uint64_t)(v / MIB));
	else if (v >= 1024 && v % 1024 == 0)
		snprintf(buf, len, "%" PRIu64 " KiB", (uint64_t)(v / 1024));
	else
		snprintf(buf, len, "%" PRIu64 " bytes", v);
}

bool rn_doctor_no_process(struct rn_doctor_ctx *x)
{
	if (x->f->have_process)
		return false;
	rn_doctor_emit(x, NULL, RN_DOCTOR_SKIP,
		       "no target process: 'rdmans doctor --pid PID' checks a process (its limits, "
		       "device nodes and NCCL settings)");
	return true;
}

static void check_memlock(struct rn_doctor_ctx *x)
{
	const struct rn_doctor_process *p = &x->f->proc;
	struct rn_doctor_result *res;
	char subj[128], soft[32], hard[32];

	if (rn_doctor_no_process(x))
		return;
	rn_doctor_pid_subject(p, subj, sizeof(subj));
	if (!p->memlock_known) {
		rn_doctor_emit(x, subj, RN_DOCTOR_WARN, "%s", p->read_error);
		return;
	}
	format_bytes(p->memlock_soft, soft, sizeof(soft));
	format_bytes(p->memlock_hard, hard, sizeof(hard));
	if (p->memlock_soft == RN_DOCTOR_UNLIMITED) {
		rn_doctor_emit(x, subj, RN_DOCTOR_PASS, "RLIMIT_MEMLOCK unlimited");
		return;
	}
	if (p->cap_ipc_lock == 1) {
		rn_doctor_emit(x, subj, RN_DOCTOR_PASS,
			       "RLIMIT_MEMLOCK %s, but the process has CAP_IPC_LOCK, which lifts "
			       "the limit "
			       "for memory registration",
			       soft);
		return;
	}
	res = rn_doctor_emit(
		x, subj, p->memlock_soft < MEMLOCK_FAIL_BELOW ? RN_DOCTOR_FAIL : RN_DOCTOR_WARN,
		"RLIMIT_MEMLOCK %s (hard %s) and no CAP_IPC_LOCK: memory registration "
		"(ibv_reg_mr) fails once %s are pinned; NCCL pins buffers per channel and peer",
		soft, hard, soft);
	rn_doctor_fix(
		res,
		"start it with an unlimited memlock limit: 'ulimit -l unlimited' in its "
		"entrypoint (hard limit permitting), LimitMEMLOCK=infinity for a systemd unit, "
		"the runtime's default ulimits (memlock=-1), or grant CAP_IPC_LOCK (Kubernetes: "
		"securityContext.capabilities.add: [IPC_LOCK])");
}

static void check_dev_nodes(struct rn_doctor_ctx *x)
{
	const struct rn_doctor_facts *f = x->f;
	const struct rn_doctor_process *p = &f->proc;
	char subj[128], ok[512] = "", bad[512] = "";
	size_t off_ok = 0, off_bad = 0, nbad = 0, nok = 0;
	struct rn_doctor_result *res;
	bool no_uverbs = false;

	if (rn_doctor_no_process(x))
		return;
	rn_doctor_pid_subject(p, subj, sizeof(subj));
	if (f->nports == 0) {
		rn_doctor_emit(x, subj, RN_DOCTOR_SKIP, "no RDMA device in %s", f->target);
		return;
	}
	if (!p->devdir) {
		res = rn_doctor_emit(
			x, subj, RN_DOCTOR_FAIL,
			"/dev/infiniband does not exist in the process's mount namespace: "
			"verbs cannot open any device");
		rn_doctor_fix(
			res, "give the container the device nodes: the RDMA device plugin or a CDI "
			     "spec's deviceNodes (/dev/infiniband/uverbsN, rdma_cm), or --device "
			     "/dev/infiniband/uverbsN for docker/podman");
		return;
	}
	for (size_t i = 0; i < f->nports; i++) {
		const struct rn_doctor_port *pt = &f->ports[i];
		const char *what = NULL;
		char *buf;
		size_t *off, len;
		int n;

		if (i > 0 && strcmp(f->ports[i - 1].dev, pt->dev) == 0)
			continue; /* one node per device */
		switch (p->nodes ? p->nodes[i] : RN_DOCTOR_NODE_UNKNOWN) {
		case RN_DOCTOR_NODE_OK:
			what = "";
			break;
		case RN_DOCTOR_NODE_MISSING:
			what = " missing";
			break;
		case RN_DOCTOR_NODE_NOT_CHR:
			what = " is not a character device";
			break;
		case RN_DOCTOR_NODE_WRONG_DEV:
			what = " is another device";
			break;
		default:
			no_uverbs = true;
			what = NULL;
			break;
		}
		if (!what) {
			n = snprintf(bad + off_bad, sizeof(bad) - off_bad,
				     "%s%s has no uverbs device", nbad ? "; " : "", pt->dev);
			if (n > 0 && (size_t)n < sizeof(bad) - off_bad)
				off_bad += (size_t)n;
			nbad++;
			continue;
		}
		if (!*what) {
			buf = ok, off = &off_ok, len = sizeof(ok), nok++;
		} else {
			buf = bad, off = &off_bad, len = sizeof(bad), nbad++;
		}
		n = snprintf(buf + *off, len - *off, "%s/dev/infiniband/%s (%u:%u, %s)%s",
			     *off ? "; " : "", pt->uverbs, pt->uverbs_major, pt->uverbs_minor,
			     pt->dev, what);
		if (n > 0 && (size_t)n < len - *off)
			*off += (size_t)n;
	}
	if (nbad) {
		res = rn_doctor_emit(x, subj, RN_DOCTOR_FAIL, "%s%s%s", bad,
				     nok ? "; present: " : "", ok);
		if (no_uverbs)
			rn_doctor_fix(
				res,
				"load ib_uverbs ('modprobe ib_uverbs'); then give the container "
				"/dev/infiniband/uverbsN of its devices (device plugin, CDI "
				"deviceNodes, --device)");
		else
			rn_doctor_fix(res,
				      "give the container the uverbs nodes of its devices (device "
				      "plugin, CDI deviceNodes, --device /dev/infiniband/uverbsN)");
		return;
	}
	if (!p->rdma_cm) {
		res = rn_doctor_emit(
			x, subj, RN_DOCTOR_WARN,
			"%s; but no /dev/infiniband/rdma_cm (rping, perftest -R and UCX need "
			"it; NCCL does not)",
			ok);
		rn_doctor_fix(res, "add /dev/infiniband/rdma_cm to the container's device nodes "
				   "('modprobe rdma_ucm' on the host)");
		return;
	}
	rn_doctor_emit(x, subj, RN_DOCTOR_PASS, "%s; /dev/infiniband/rdma_cm", ok);
}

static const struct check {
	const char *id;
	const char *title;
	void (*run)(struct rn_doctor_ctx *x);
} checks[] = {
	{ "rdma-netlink", "RDMA netlink present (ib_core loaded)", check_netlink },
	{ "netns-mode", "ib_core netns mode now", check_mode_now },
	{ "netns-mode-boot", "ib_core netns mode at the next boot", check_mode_boot },
	{ "devices", "RDMA devices in the target netns", check_devices },
	{ "port-state", "port state", check_port_state },
	{ "netdev", "netdev bound to the port, present and up", check_netdev },
	{ "gid", "RoCE v2 GID for each address of the netdev", check_gid },
	{ "mtu", "active MTU vs netdev MTU", check_mtu },
	{ "memlock", "RLIMIT_MEMLOCK and CAP_IPC_LOCK of the process", check_memlock },
	{ "dev-nodes", "/dev/infiniband in the process's mount namespace", check_dev_nodes },
	{ "nccl", "NCCL settings of the process vs what rdmans env resolves",
	  rn_doctor_check_nccl },
	{ "gpu-nic", "the nearest RDMA device of each GPU (PCI path)", rn_doctor_check_gpu_nic },
	{ "gpudirect", "GPUDirect RDMA: nvidia_peermem or dma-buf", rn_doctor_check_gpudirect },
};

int rn_doctor_evaluate(const struct rn_doctor_facts *f, struct rn_doctor_report *out,
		       struct rn_error *err)
{
	_cleanup_nccl_result_ struct rn_nccl_result nccl = { 0 };
	struct rn_error nerr = { 0 };
	struct rn_doctor_ctx x = { .f = f, .r = out };
	struct rn_nccl_request req = { .layers = f->nccl_layers, .n_layers = f->n_nccl_layers };

	memset(out, 0, sizeof(*out));
	if (f->node_ok && f->nports > 0 && rn_nccl_resolve(&f->node, &req, &nccl, &nerr) == 0)
		x.nccl = &nccl;
	else
		x.nccl_msg = !f->node_ok ? f->node_msg : nerr.msg[0] ? nerr.msg : "no RDMA device";
	for (size_t i = 0; i < RN_ARRAY_SIZE(checks); i++) {
		x.id = checks[i].id;
		x.title = checks[i].title;
		checks[i].run(&x);
		if (x.error < 0) {
			rn_doctor_report_free(out);
			return rn_error_set(err, -x.error, "out of memory running the checks");
		}
	}
	return 0;
}
