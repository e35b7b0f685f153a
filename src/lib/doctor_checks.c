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
#include "rdmans/netns.h"
#include "rdmans/rdma_nl.h"
#include "rdmans/rootfs.h"
#include "rdmans/util.h"
#include "rdmans/verbs.h"

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

struct ctx {
	const struct rn_doctor_facts *f;
	struct rn_doctor_report *r;
	const char *id;
	const char *title;
	int error;
	const struct rn_nccl_result *nccl; /* NULL when the resolver found nothing */
	const char *nccl_msg;
};

static struct rn_doctor_result *emit(struct ctx *x, const char *subject,
				     enum rn_doctor_status status, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static struct rn_doctor_result *emit(struct ctx *x, const char *subject,
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

static void fix(struct rn_doctor_result *res, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void fix(struct rn_doctor_result *res, const char *fmt, ...)
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

static void check_netlink(struct ctx *x)
{
	struct rn_doctor_result *res;

	if (x->f->rdma_nl == 0) {
		emit(x, NULL, RN_DOCTOR_PASS,
		     "the kernel answers RDMA netlink (ib_core is loaded)");
		return;
	}
	res = emit(x, NULL, RN_DOCTOR_FAIL, "%s",
		   x->f->rdma_nl_msg[0] ? x->f->rdma_nl_msg : "no RDMA netlink");
	fix(res, "load the RDMA core and the HCA's driver ('modprobe ib_core ib_uverbs rdma_ucm', "
		 "then mlx5_ib, irdma, ...), or boot a kernel built with CONFIG_INFINIBAND");
}

static void check_mode_now(struct ctx *x)
{
	const struct rn_doctor_facts *f = x->f;
	struct rn_doctor_result *res;

	if (f->rdma_nl < 0) {
		emit(x, NULL, RN_DOCTOR_SKIP, "no RDMA netlink");
		return;
	}
	if (f->mode == 1) {
		emit(x, NULL, RN_DOCTOR_PASS,
		     "exclusive: each RDMA device belongs to one network namespace");
		return;
	}
	if (f->mode < 0) {
		emit(x, NULL, RN_DOCTOR_WARN, "the kernel did not report the netns mode");
		return;
	}
	res = emit(x, NULL, RN_DOCTOR_FAIL,
		   "shared: every network namespace sees every RDMA device, and no device can be "
		   "moved into a pod");
	if (f->boot_known && f->boot.mode == RN_BOOT_EXCLUSIVE)
		fix(res,
		    "the next boot is set to exclusive (%s): reboot, or reload ib_core while no "
		    "RDMA device is in use",
		    f->boot.source);
	else
		fix(res, "'rdmans system set netns exclusive' (works only while no other netns "
			 "exists); on a node with pods: 'rdmans system set netns exclusive "
			 "--persist', then reboot");
}

static void check_mode_boot(struct ctx *x)
{
	const struct rn_doctor_facts *f = x->f;
	const char *src = f->boot.source[0] ? f->boot.source : "nothing configured";
	struct rn_doctor_result *res;

	if (!f->boot_known) {
		emit(x, NULL, RN_DOCTOR_WARN, "cannot tell: %s", f->boot_msg);
		return;
	}
	if (f->boot.mode == RN_BOOT_EXCLUSIVE) {
		emit(x, NULL, RN_DOCTOR_PASS, "exclusive (%s)", src);
		return;
	}
	if (f->mode == 1)
		res = emit(x, NULL, RN_DOCTOR_WARN,
			   "exclusive now, but ib_core starts %s at the next boot (%s): pods "
			   "cannot get devices after a reboot",
			   rn_boot_mode_name(f->boot.mode), src);
	else
		res = emit(x, NULL, RN_DOCTOR_FAIL, "%s at the next boot too (%s)",
			   rn_boot_mode_name(f->boot.mode), src);
	fix(res, "'rdmans system set netns exclusive --persist' (writes %s)", RN_MODPROBE_CONF);
}

static void check_devices(struct ctx *x)
{
	const struct rn_doctor_facts *f = x->f;
	struct rn_doctor_result *res;
	char list[768] = "";
	size_t ndev = 0, off = 0;

	if (f->netns_error < 0) {
		res = emit(x, NULL, RN_DOCTOR_FAIL, "cannot read %s: %s", f->target, f->netns_msg);
		fix(res, "run as root; check that the target still exists");
		return;
	}
	for (size_t i = 0; i < f->nports; i++) {
		const struct rn_doctor_port *p = &f->ports[i];
		int n;

		if (i > 0 && strcmp(f->ports[i - 1].dev, p->dev) == 0)
			continue;
		ndev++;
		n = snprintf(list + off, sizeof(list) - off, "%s%s (%s)", off ? ", " : "", p->dev,
			     p->link_layer[0] ? p->link_layer : "?");
		if (n > 0 && (size_t)n < sizeof(list) - off)
			off += (size_t)n;
	}
	if (ndev > 0) {
		emit(x, NULL, RN_DOCTOR_PASS, "%zu in %s: %s", ndev, f->target, list);
		return;
	}
	res = emit(x, NULL, RN_DOCTOR_FAIL, "no RDMA device in %s", f->target);
	if (f->target_is_host)
		fix(res, "load the HCA's driver (mlx5_ib, irdma, bnxt_re, erdma, ...), or create "
			 "a soft device: 'rdmans link add rxe0 type rxe netdev NETDEV'");
	else
		fix(res, "move one in: 'rdmans move DEV TARGET --with-netdev' (the CNI plugin "
			 "rdma-netns does it at pod creation)");
}

static void check_port_state(struct ctx *x)
{
	for (size_t i = 0; i < x->f->nports; i++) {
		const struct rn_doctor_port *p = &x->f->ports[i];
		struct rn_doctor_result *res;
		char subj[96];

		port_subject(p, subj, sizeof(subj));
		if (p->state == 4) {
			emit(x, subj, RN_DOCTOR_PASS, "ACTIVE (%s)",
			     rn_rdma_port_phys_state_name(p->phys_state));
			continue;
		}
		if (p->state == 0) {
			emit(x, subj, RN_DOCTOR_WARN, "port state unreadable");
			continue;
		}
		res = emit(x, subj, RN_DOCTOR_FAIL, "port is %s (physical state %s)",
			   rn_rdma_port_state_name(p->state),
			   rn_rdma_port_phys_state_name(p->phys_state));
		if (!rn_doctor_port_ethernet(p))
			fix(res, "%s",
			    p->state == 2 ? "no subnet manager configured the port: start "
					    "opensm or check the fabric's SM"
					  : "check the cable and the switch port");
		else if (p->netdev[0] && p->netdev_here && !p->netdev_admin_up)
			fix(res, "bring its netdev up: 'ip link set %s up' (in %s)", p->netdev,
			    x->f->target);
		else if (p->netdev[0] && p->netdev_here && !p->netdev_oper_up)
			fix(res,
			    "netdev %s is up but has no carrier: check the cable, the switch "
			    "port, or the veth peer",
			    p->netdev);
		else
			fix(res, "check the link of the netdev bound to it (cable, switch port)");
	}
}

static void check_netdev(struct ctx *x)
{
	for (size_t i = 0; i < x->f->nports; i++) {
		const struct rn_doctor_port *p = &x->f->ports[i];
		struct rn_doctor_result *res;
		char subj[96];

		if (!rn_doctor_port_ethernet(p))
			continue;
		port_subject(p, subj, sizeof(subj));
		if (!p->netdev[0] || !p->netdev_here) {
			if (p->netdev[0])
				res = emit(x, subj, RN_DOCTOR_FAIL,
					   "its netdev %s is not in %s (the RDMA device moved "
					   "without it?)",
					   p->netdev, x->f->target);
			else
				res = emit(x, subj, RN_DOCTOR_FAIL,
					   "no netdev bound to the port in %s: RoCE needs one",
					   x->f->target);
			fix(res,
			    "move the device together with its netdev: 'rdmans move %s TARGET "
			    "--with-netdev'",
			    p->dev);
			continue;
		}
		if (!p->netdev_admin_up) {
			res = emit(x, subj, RN_DOCTOR_FAIL, "netdev %s is down", p->netdev);
			fix(res, "'ip link set %s up' (in %s)", p->netdev, x->f->target);
			continue;
		}
		if (!p->netdev_oper_up) {
			res = emit(x, subj, RN_DOCTOR_FAIL,
				   "netdev %s is up but not running (no carrier)", p->netdev);
			fix(res, "check the cable, the switch port, or the veth peer of %s",
			    p->netdev);
			continue;
		}
		emit(x, subj, RN_DOCTOR_PASS, "netdev %s is up", p->netdev);
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

static void check_gid(struct ctx *x)
{
	for (size_t i = 0; i < x->f->nports; i++) {
		const struct rn_doctor_port *p = &x->f->ports[i];
		char subj[96], found[512] = "", missing[512] = "";
		size_t nfound = 0, nmissing = 0, off_f = 0, off_m = 0;
		struct rn_doctor_result *res;

		if (!rn_doctor_port_ethernet(p) || !p->netdev[0] || !p->netdev_here ||
		    !p->addrs_known)
			continue;
		port_subject(p, subj, sizeof(subj));
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
			res = emit(x, subj, RN_DOCTOR_FAIL,
				   "netdev %s has no IP address: RoCE v2 GIDs are made from the "
				   "netdev's addresses",
				   p->netdev);
			fix(res,
			    "give %s an address (in a pod the CNI IPAM does; by hand: 'ip "
			    "addr add ADDR/LEN dev %s')",
			    p->netdev, p->netdev);
			continue;
		}
		if (nmissing == 0) {
			emit(x, subj, RN_DOCTOR_PASS, "RoCE v2: %s", found);
			continue;
		}
		if (p->gid_tbl_len && gids_of_port(x->f, p) >= p->gid_tbl_len) {
			res = emit(x, subj, RN_DOCTOR_FAIL,
				   "no RoCE v2 GID for %s of %s: the GID table is full (%zu of "
				   "%u entries)%s%s",
				   missing, p->netdev, gids_of_port(x->f, p), p->gid_tbl_len,
				   nfound ? "; found: " : "", found);
			fix(res,
			    "each address takes two GID slots (RoCE v1 and v2): remove "
			    "addresses from %s, or use fewer",
			    p->netdev);
		} else {
			res = emit(x, subj, RN_DOCTOR_FAIL, "no RoCE v2 GID for %s of %s%s%s",
				   missing, p->netdev, nfound ? "; found: " : "", found);
			fix(res,
			    "the kernel adds GIDs for the addresses of the netdev bound to the "
			    "port: check 'rdmans gids %s' and 'rdma link show %s/%u', and look "
			    "again a second after an address change",
			    p->dev, p->dev, p->port);
		}
	}
}

static void check_mtu(struct ctx *x)
{
	for (size_t i = 0; i < x->f->nports; i++) {
		const struct rn_doctor_port *p = &x->f->ports[i];
		struct rn_doctor_result *res;
		unsigned allowed;
		char subj[96];

		if (!rn_doctor_port_ethernet(p) || !p->netdev_here || p->netdev_mtu < 0)
			continue;
		port_subject(p, subj, sizeof(subj));
		allowed = rn_roce_mtu_for_netdev((unsigned)p->netdev_mtu);
		if (!p->active_mtu) {
			if (allowed >= 4096) {
				emit(x, subj, RN_DOCTOR_PASS,
				     "netdev %s MTU %d allows RoCE MTU 4096 (active MTU not "
				     "read: %s)",
				     p->netdev, p->netdev_mtu, p->mtu_note[0] ? p->mtu_note : "?");
				continue;
			}
			res = emit(
				x, subj, RN_DOCTOR_WARN,
				"netdev %s MTU %d limits RoCE to MTU %u (active MTU not read: %s)",
				p->netdev, p->netdev_mtu, allowed,
				p->mtu_note[0] ? p->mtu_note : "?");
			fix(res, "for RoCE MTU 4096 set the netdev MTU to 4200 or more (9000 on "
				 "jumbo-frame fabrics), on the switch ports too");
			continue;
		}
		if (p->active_mtu >= p->max_mtu || p->active_mtu >= 4096) {
			emit(x, subj, RN_DOCTOR_PASS,
			     "active MTU %u (port maximum %u), netdev %s MTU %d", p->active_mtu,
			     p->max_mtu, p->netdev, p->netdev_mtu);
			continue;
		}
		if (allowed > p->active_mtu) {
			res = emit(x, subj, RN_DOCTOR_WARN,
				   "active MTU %u is below what netdev %s MTU %d allows (%u): the "
				   "port did not follow the netdev's MTU",
				   p->active_mtu, p->netdev, p->netdev_mtu, allowed);
			fix(res,
			    "set the MTU again ('ip link set %s mtu %d') or reload the "
			    "driver; check the port's maximum (%u)",
			    p->netdev, p->netdev_mtu, p->max_mtu);
			continue;
		}
		res = emit(x, subj, RN_DOCTOR_WARN,
			   "active MTU %u, limited by netdev %s MTU %d (the port can do %u)",
			   p->active_mtu, p->netdev, p->netdev_mtu, p->max_mtu);
		fix(res,
		    "set the netdev MTU to %u or more for RoCE MTU %u (9000 on jumbo-frame "
		    "fabrics), on the switch ports too",
		    p->max_mtu + 104, p->max_mtu);
	}
}

static const char *pid_subject(const struct rn_doctor_process *p, char *buf, size_t len)
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

static bool no_process(struct ctx *x)
{
	if (x->f->have_process)
		return false;
	emit(x, NULL, RN_DOCTOR_SKIP,
	     "no target process: 'rdmans doctor --pid PID' checks a process (its limits, "
	     "device nodes and NCCL settings)");
	return true;
}

static void check_memlock(struct ctx *x)
{
	const struct rn_doctor_process *p = &x->f->proc;
	struct rn_doctor_result *res;
	char subj[128], soft[32], hard[32];

	if (no_process(x))
		return;
	pid_subject(p, subj, sizeof(subj));
	if (!p->memlock_known) {
		emit(x, subj, RN_DOCTOR_WARN, "%s", p->read_error);
		return;
	}
	format_bytes(p->memlock_soft, soft, sizeof(soft));
	format_bytes(p->memlock_hard, hard, sizeof(hard));
	if (p->memlock_soft == RN_DOCTOR_UNLIMITED) {
		emit(x, subj, RN_DOCTOR_PASS, "RLIMIT_MEMLOCK unlimited");
		return;
	}
	if (p->cap_ipc_lock == 1) {
		emit(x, subj, RN_DOCTOR_PASS,
		     "RLIMIT_MEMLOCK %s, but the process has CAP_IPC_LOCK, which lifts the limit "
		     "for memory registration",
		     soft);
		return;
	}
	res = emit(x, subj, p->memlock_soft < MEMLOCK_FAIL_BELOW ? RN_DOCTOR_FAIL : RN_DOCTOR_WARN,
		   "RLIMIT_MEMLOCK %s (hard %s) and no CAP_IPC_LOCK: memory registration "
		   "(ibv_reg_mr) fails once %s are pinned; NCCL pins buffers per channel and peer",
		   soft, hard, soft);
	fix(res, "start it with an unlimited memlock limit: 'ulimit -l unlimited' in its "
		 "entrypoint (hard limit permitting), LimitMEMLOCK=infinity for a systemd unit, "
		 "the runtime's default ulimits (memlock=-1), or grant CAP_IPC_LOCK (Kubernetes: "
		 "securityContext.capabilities.add: [IPC_LOCK])");
}

static void check_dev_nodes(struct ctx *x)
{
	const struct rn_doctor_facts *f = x->f;
	const struct rn_doctor_process *p = &f->proc;
	char subj[128], ok[512] = "", bad[512] = "";
	size_t off_ok = 0, off_bad = 0, nbad = 0, nok = 0;
	struct rn_doctor_result *res;
	bool no_uverbs = false;

	if (no_process(x))
		return;
	pid_subject(p, subj, sizeof(subj));
	if (f->nports == 0) {
		emit(x, subj, RN_DOCTOR_SKIP, "no RDMA device in %s", f->target);
		return;
	}
	if (!p->devdir) {
		res = emit(x, subj, RN_DOCTOR_FAIL,
			   "/dev/infiniband does not exist in the process's mount namespace: "
			   "verbs cannot open any device");
		fix(res, "give the container the device nodes: the RDMA device plugin or a CDI "
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
		res = emit(x, subj, RN_DOCTOR_FAIL, "%s%s%s", bad, nok ? "; present: " : "", ok);
		if (no_uverbs)
			fix(res, "load ib_uverbs ('modprobe ib_uverbs'); then give the container "
				 "/dev/infiniband/uverbsN of its devices (device plugin, CDI "
				 "deviceNodes, --device)");
		else
			fix(res, "give the container the uverbs nodes of its devices (device "
				 "plugin, CDI deviceNodes, --device /dev/infiniband/uverbsN)");
		return;
	}
	if (!p->rdma_cm) {
		res = emit(x, subj, RN_DOCTOR_WARN,
			   "%s; but no /dev/infiniband/rdma_cm (rping, perftest -R and UCX need "
			   "it; NCCL does not)",
			   ok);
		fix(res, "add /dev/infiniband/rdma_cm to the container's device nodes "
			 "('modprobe rdma_ucm' on the host)");
		return;
	}
	emit(x, subj, RN_DOCTOR_PASS, "%s; /dev/infiniband/rdma_cm", ok);
}

/* ---- NCCL ---- */

static const struct rn_nccl_port_use *nccl_use(const struct ctx *x, const struct rn_doctor_port *p)
{
	if (!x->nccl)
		return NULL;
	for (size_t i = 0; i < x->nccl->n_ports; i++)
		if (strcmp(x->nccl->ports[i].dev, p->dev) == 0 && x->nccl->ports[i].port == p->port)
			return &x->nccl->ports[i];
	return NULL;
}

static const char *resolved(const struct ctx *x, const char *name)
{
	const struct rn_nccl_setting *s = x->nccl ? rn_nccl_result_get(x->nccl, name) : NULL;

	return s ? s->value : NULL;
}

static void var_desc(const struct rn_doctor_nccl_var *v, char *buf, size_t len)
{
	(void)rn_snprintf(buf, len, "%s=%s (%s)", v->name, v->value, v->source);
}

/* NCCL's ncclLoadParam(): strtoll(value, &end, 0) must take the whole value. */
static bool nccl_int(const char *value, long long *ret)
{
	char *end;

	if (!*value)
		return false;
	errno = 0;
	*ret = strtoll(value, &end, 0);
	return errno == 0 && *end == '\0';
}

static void check_nccl_net(struct ctx *x)
{
	const struct rn_doctor_process *p = &x->f->proc;
	const struct rn_doctor_nccl_var *dis = rn_doctor_process_nccl(p, "NCCL_IB_DISABLE");
	const struct rn_doctor_nccl_var *net = rn_doctor_process_nccl(p, "NCCL_NET");
	struct rn_doctor_result *res;
	char subj[128], desc[RN_NCCL_VALUE_MAX + PATH_MAX + 64];
	long long v;

	x->id = "nccl-net";
	x->title = "NCCL uses its IB/RoCE transport";
	pid_subject(p, subj, sizeof(subj));
	if (dis && nccl_int(dis->value, &v) && v != 0) {
		var_desc(dis, desc, sizeof(desc));
		res = emit(x, subj, RN_DOCTOR_FAIL, "%s: NCCL will not use RDMA", desc);
		fix(res, "remove NCCL_IB_DISABLE or set it to 0");
		return;
	}
	if (net && strcasecmp(net->value, "IB") != 0) {
		var_desc(net, desc, sizeof(desc));
		res = emit(x, subj, RN_DOCTOR_FAIL, "%s: NCCL will not use its IB/RoCE transport",
			   desc);
		fix(res, "remove NCCL_NET or set it to IB");
		return;
	}
	emit(x, subj, RN_DOCTOR_PASS, "NCCL_IB_DISABLE and NCCL_NET leave RDMA on");
}

static void check_nccl_hca(struct ctx *x)
{
	const struct rn_doctor_facts *f = x->f;
	const struct rn_doctor_nccl_var *hca = rn_doctor_process_nccl(&f->proc, "NCCL_IB_HCA");
	const char *want = resolved(x, "NCCL_IB_HCA");
	char subj[128], desc[RN_NCCL_VALUE_MAX + PATH_MAX + 64], took[512] = "", unused[512] = "";
	size_t ntook = 0, ntook_used = 0, nunused = 0, off_t = 0, off_u = 0;
	struct rn_doctor_result *res;
	struct rn_nccl_list l;

	x->id = "nccl-hca";
	x->title = "NCCL_IB_HCA vs what rdmans env resolves";
	pid_subject(&f->proc, subj, sizeof(subj));
	if (!hca) {
		emit(x, subj, RN_DOCTOR_PASS,
		     "NCCL_IB_HCA not set: NCCL uses every active port%s%s",
		     want ? "; rdmans env: NCCL_IB_HCA=" : "", want ? want : "");
		return;
	}
	var_desc(hca, desc, sizeof(desc));
	rn_nccl_list_parse(hca->value, &l);
	for (size_t i = 0; i < f->nports; i++) {
		const struct rn_doctor_port *p = &f->ports[i];
		const struct rn_nccl_port_use *u = nccl_use(x, p);
		int n;

		if (!rn_nccl_list_takes(&l, p->dev, p->port))
			continue;
		ntook++;
		n = snprintf(took + off_t, sizeof(took) - off_t, "%s%s:%u", off_t ? "," : "",
			     p->dev, p->port);
		if (n > 0 && (size_t)n < sizeof(took) - off_t)
			off_t += (size_t)n;
		if (!x->nccl || (u && u->used)) {
			ntook_used++;
			continue;
		}
		nunused++;
		n = snprintf(unused + off_u, sizeof(unused) - off_u, "%s%s:%u (%s)",
			     off_u ? "; " : "", p->dev, p->port,
			     u && u->why_not[0] ? u->why_not : "not usable");
		if (n > 0 && (size_t)n < sizeof(unused) - off_u)
			off_u += (size_t)n;
	}
	if (ntook == 0) {
		res = emit(x, subj, RN_DOCTOR_FAIL,
			   "%s selects no RDMA port in %s: NCCL falls back to TCP sockets", desc,
			   f->target);
		if (want)
			fix(res, "set NCCL_IB_HCA=%s ('rdmans env' for the target)", want);
		else
			fix(res, "name devices that are in %s ('rdmans dev')", f->target);
		return;
	}
	if (x->nccl && ntook_used == 0) {
		res = emit(x, subj, RN_DOCTOR_FAIL,
			   "%s selects only ports rdmans env would not use: %s", desc, unused);
		fix(res, "set NCCL_IB_HCA=%s ('rdmans env' for the target)", want ? want : "");
		return;
	}
	if (nunused) {
		res = emit(x, subj, RN_DOCTOR_WARN, "%s selects %s; not usable: %s", desc, took,
			   unused);
		fix(res, "set NCCL_IB_HCA=%s ('rdmans env' for the target)", want ? want : "");
		return;
	}
	emit(x, subj, RN_DOCTOR_PASS, "%s selects %s%s%s", desc, took,
	     want ? "; rdmans env: NCCL_IB_HCA=" : "", want ? want : "");
}

/* What GID slot `index` of a port holds, for messages. */
static void gid_slot_desc(const struct rn_doctor_facts *f, const struct rn_doctor_port *p,
			  long long index, char *buf, size_t len)
{
	for (size_t i = 0; i < f->gids.n; i++) {
		const struct rn_gid_entry *e = &f->gids.entries[i];

		if (strcmp(e->dev, p->dev) != 0 || e->port != p->port || e->index != index)
			continue;
		snprintf(buf, len, "index %lld holds %s %s%s%s", index, rn_gid_type_name(e->type),
			 e->ipv4[0] ? e->ipv4 : e->gid, e->netdev[0] ? " of " : "", e->netdev);
		return;
	}
	if (p->gid_tbl_len && index >= p->gid_tbl_len)
		snprintf(buf, len, "index %lld is beyond its table of %u", index, p->gid_tbl_len);
	else
		snprintf(buf, len, "index %lld is empty", index);
}

static void check_nccl_gid(struct ctx *x)
{
	const struct rn_doctor_facts *f = x->f;
	const struct rn_doctor_nccl_var *gid =
		rn_doctor_process_nccl(&f->proc, "NCCL_IB_GID_INDEX");
	const struct rn_doctor_nccl_var *hca = rn_doctor_process_nccl(&f->proc, "NCCL_IB_HCA");
	const char *want = resolved(x, "NCCL_IB_GID_INDEX");
	char subj[128], desc[RN_NCCL_VALUE_MAX + PATH_MAX + 64], wrong[768] = "", right[256] = "";
	size_t nwrong = 0, nright = 0, ncheck = 0, off_w = 0, off_r = 0;
	struct rn_doctor_result *res;
	struct rn_nccl_list l;
	long long index;

	x->id = "nccl-gid-index";
	x->title = "NCCL_IB_GID_INDEX vs the RoCE v2 GID of the interface address";
	pid_subject(&f->proc, subj, sizeof(subj));
	if (!x->nccl) {
		emit(x, subj, gid ? RN_DOCTOR_WARN : RN_DOCTOR_SKIP,
		     "rdmans env resolves nothing to compare with: %s", x->nccl_msg);
		return;
	}
	if (!gid) {
		if (!want) {
			emit(x, subj, RN_DOCTOR_PASS, "no GID index needed here");
			return;
		}
		res = emit(x, subj, RN_DOCTOR_WARN,
			   "NCCL_IB_GID_INDEX not set: NCCL >= 2.21 picks the RoCE v2 GID of an "
			   "address of NCCL_IB_ADDR_FAMILY (IPv4 unless set) itself, older NCCL "
			   "uses GID index 0; rdmans env: NCCL_IB_GID_INDEX=%s",
			   want);
		fix(res,
		    "set NCCL_IB_GID_INDEX=%s in the container's environment or "
		    "/etc/nccl.conf ('rdmans env')",
		    want);
		return;
	}
	var_desc(gid, desc, sizeof(desc));
	if (!nccl_int(gid->value, &index)) {
		res = emit(x, subj, RN_DOCTOR_FAIL,
			   "%s is not a number: NCCL ignores it and uses its default", desc);
		fix(res, "set NCCL_IB_GID_INDEX=%s", want ? want : "N (a number)");
		return;
	}
	if (hca)
		rn_nccl_list_parse(hca->value, &l);
	for (size_t i = 0; i < f->nports; i++) {
		const struct rn_doctor_port *p = &f->ports[i];
		const struct rn_nccl_port_use *u = nccl_use(x, p);
		char slot[256];
		int n;

		if (!rn_doctor_port_ethernet(p) || !u || u->gid_status != RN_NCCL_GID_FOUND)
			continue;
		if (hca ? !rn_nccl_list_takes(&l, p->dev, p->port) : !u->used)
			continue;
		ncheck++;
		if (u->gid_index == index) {
			n = snprintf(right + off_r, sizeof(right) - off_r, "%s%s/%u",
				     off_r ? ", " : "", p->dev, p->port);
			if (n > 0 && (size_t)n < sizeof(right) - off_r)
				off_r += (size_t)n;
			nright++;
			continue;
		}
		gid_slot_desc(f, p, index, slot, sizeof(slot));
		n = snprintf(wrong + off_w, sizeof(wrong) - off_w,
			     "%son %s/%u %s, the RoCE v2 GID of %s is index %d", off_w ? "; " : "",
			     p->dev, p->port, slot, u->gid_addr, u->gid_index);
		if (n > 0 && (size_t)n < sizeof(wrong) - off_w)
			off_w += (size_t)n;
		nwrong++;
	}
	if (nwrong) {
		res = emit(x, subj, RN_DOCTOR_FAIL, "%s is wrong: %s", desc, wrong);
		fix(res, "set NCCL_IB_GID_INDEX=%s ('rdmans env' for the target)",
		    want ? want : "to the index above");
		return;
	}
	if (ncheck == 0) {
		emit(x, subj, RN_DOCTOR_WARN,
		     "%s: no port it applies to has a RoCE v2 GID of its address to compare "
		     "with (see the gid check)",
		     desc);
		return;
	}
	emit(x, subj, RN_DOCTOR_PASS, "%s is the RoCE v2 GID of the %s address on %s", desc,
	     x->nccl->family == AF_INET6 ? "IPv6" : "IPv4", right);
}

static void check_nccl_ifname(struct ctx *x)
{
	const struct rn_doctor_facts *f = x->f;
	const struct rn_doctor_nccl_var *ifn =
		rn_doctor_process_nccl(&f->proc, "NCCL_SOCKET_IFNAME");
	const char *want = resolved(x, "NCCL_SOCKET_IFNAME");
	char subj[128], desc[RN_NCCL_VALUE_MAX + PATH_MAX + 64], took[512] = "";
	struct rn_doctor_result *res;
	size_t ntook = 0, off = 0;
	struct rn_nccl_list l;

	x->id = "nccl-socket-ifname";
	x->title = "NCCL_SOCKET_IFNAME names a netdev of the target";
	pid_subject(&f->proc, subj, sizeof(subj));
	if (!ifn) {
		emit(x, subj, RN_DOCTOR_PASS,
		     "NCCL_SOCKET_IFNAME not set: NCCL picks an interface itself%s%s",
		     want ? "; rdmans env: NCCL_SOCKET_IFNAME=" : "", want ? want : "");
		return;
	}
	var_desc(ifn, desc, sizeof(desc));
	if (!f->node_ok) {
		emit(x, subj, RN_DOCTOR_SKIP, "%s: the netdevs of %s are unknown (%s)", desc,
		     f->target, f->node_msg);
		return;
	}
	rn_nccl_list_parse(ifn->value, &l);
	for (size_t i = 0; i < f->node.n_netdevs; i++) {
		int n;

		if (!rn_nccl_list_takes(&l, f->node.netdevs[i], -1))
			continue;
		n = snprintf(took + off, sizeof(took) - off, "%s%s", off ? "," : "",
			     f->node.netdevs[i]);
		if (n > 0 && (size_t)n < sizeof(took) - off)
			off += (size_t)n;
		ntook++;
	}
	if (ntook == 0) {
		res = emit(x, subj, RN_DOCTOR_FAIL,
			   "%s matches no netdev in %s: NCCL's bootstrap finds no interface", desc,
			   f->target);
		fix(res, "set NCCL_SOCKET_IFNAME=%s ('rdmans env' for the target)",
		    want ? want : "to a netdev of the target ('ip link')");
		return;
	}
	emit(x, subj, RN_DOCTOR_PASS, "%s matches %s%s%s", desc, took,
	     want ? "; rdmans env: NCCL_SOCKET_IFNAME=" : "", want ? want : "");
}

/* Only when one could not be read: NCCL skips such a file without a word. */
static void check_nccl_conf(struct ctx *x)
{
	const struct rn_doctor_process *p = &x->f->proc;
	struct rn_doctor_result *res;
	char subj[128];

	x->id = "nccl-conf";
	x->title = "the nccl.conf files NCCL reads";
	pid_subject(p, subj, sizeof(subj));
	for (size_t i = 0; i < RN_ARRAY_SIZE(p->conf_errors); i++) {
		if (!p->conf_errors[i][0])
			continue;
		res = emit(x, subj, RN_DOCTOR_WARN,
			   "%s; NCCL skips it, the settings below leave it out", p->conf_errors[i]);
		fix(res, "make it a readable regular file (or remove it)");
	}
}

static void check_nccl(struct ctx *x)
{
	if (no_process(x))
		return;
	check_nccl_conf(x);
	check_nccl_net(x);
	check_nccl_hca(x);
	check_nccl_gid(x);
	check_nccl_ifname(x);
}

/* ---- GPUs: the nearest RDMA device, GPUDirect RDMA ---- */

/* Whether NCCL takes RDMA device dev: the process's NCCL_IB_HCA, else what rdmans env uses. */
static bool hca_in_use(const struct ctx *x, const struct rn_nccl_list *l, const char *dev)
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

static void check_gpu_nic(struct ctx *x)
{
	const struct rn_doctor_facts *f = x->f;
	const struct rn_doctor_nccl_var *hca =
		f->have_process ? rn_doctor_process_nccl(&f->proc, "NCCL_IB_HCA") : NULL;
	char which[RN_NCCL_VALUE_MAX + PATH_MAX + 64];
	struct rn_nccl_list l;

	if (f->ngpus == 0) {
		emit(x, NULL, RN_DOCTOR_SKIP, "no NVIDIA GPU on the PCI bus");
		return;
	}
	if (hca) {
		rn_nccl_list_parse(hca->value, &l);
		var_desc(hca, which, sizeof(which));
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
			emit(x, subj, RN_DOCTOR_PASS, "nearest RDMA device in use: %s (%s), %s",
			     used->dev, used->pci.bdf, rn_pci_distance_name(du));
			continue;
		}
		if (used)
			res = emit(
				x, subj, RN_DOCTOR_WARN,
				"%s leave it without a near RDMA device: the nearest in use, %s "
				"(%s), is %s; NCCL uses GPUDirect RDMA by default only through a "
				"PCIe switch or root port (NCCL_NET_GDR_LEVEL), so its traffic "
				"goes through host memory",
				which, used->dev, used->pci.bdf, rn_pci_distance_name(du));
		else if (f->nhcas == 0)
			res = emit(x, subj, RN_DOCTOR_WARN,
				   "no RDMA device on a PCI function in %s: NCCL has no RDMA path "
				   "from this GPU",
				   f->target);
		else
			res = emit(x, subj, RN_DOCTOR_WARN,
				   "%s name no RDMA device for it: NCCL has no RDMA path from this "
				   "GPU",
				   which);
		if (any && da <= RN_PCI_SAME_ROOT_PORT && any != used)
			fix(res, "add %s (%s, %s) to NCCL_IB_HCA", any->dev, any->pci.bdf,
			    rn_pci_distance_name(da));
		else if (nic && dn <= RN_PCI_SAME_ROOT_PORT)
			fix(res,
			    "give the pod the RDMA device of PCI function %s (%s to the GPU): "
			    "'rdmans dev --all-netns' shows where it is",
			    nic->bdf, rn_pci_distance_name(dn));
		else if (nic)
			fix(res,
			    "no RDMA device or network function is near it on this machine (the "
			    "nearest network function, %s, is %s): run the job on GPUs near its "
			    "RDMA devices",
			    nic->bdf, rn_pci_distance_name(dn));
		else
			fix(res,
			    "this machine has no network function near it: run the job on GPUs "
			    "near its RDMA devices");
	}
}

static void check_gpudirect(struct ctx *x)
{
	const struct rn_doctor_gdr *g = &x->f->gdr;
	struct rn_doctor_result *res;
	unsigned kmaj = 0, kmin = 0;
	bool kernel_ok, driver_ok;

	if (x->f->ngpus == 0) {
		emit(x, NULL, RN_DOCTOR_SKIP, "no NVIDIA GPU on the PCI bus");
		return;
	}
	if (!g->nvidia) {
		res = emit(x, NULL, RN_DOCTOR_WARN,
			   "%zu NVIDIA GPU(s) on the PCI bus, but the nvidia kernel module is not "
			   "loaded",
			   x->f->ngpus);
		fix(res, "load the NVIDIA driver ('modprobe nvidia'), then check again");
		return;
	}
	if (g->peermem) {
		emit(x, NULL, RN_DOCTOR_PASS,
		     "nvidia_peermem is loaded: RDMA devices can reach GPU memory (driver %s)",
		     g->nvidia_version[0] ? g->nvidia_version : "?");
		return;
	}
	(void)sscanf(g->kernel, "%u.%u", &kmaj, &kmin);
	kernel_ok = kmaj > 5 || (kmaj == 5 && kmin >= 12);
	driver_ok = atoi(g->nvidia_version) >= 515;
	if (g->open_module && driver_ok && kernel_ok) {
		emit(x, NULL, RN_DOCTOR_PASS,
		     "dma-buf: the NVIDIA open kernel module %s on kernel %s lets RDMA devices "
		     "register GPU memory without nvidia_peermem (NCCL uses it: "
		     "NCCL_DMABUF_ENABLE)",
		     g->nvidia_version, g->kernel);
		return;
	}
	res = emit(x, NULL, RN_DOCTOR_WARN,
		   "no GPUDirect RDMA: nvidia_peermem is not loaded, and dma-buf needs%s%s%s "
		   "(have: the %s module, driver %s, kernel %s); NCCL then copies through host "
		   "memory",
		   !g->open_module ? " the open kernel module" : "",
		   !driver_ok ? " driver >= 515" : "", !kernel_ok ? " kernel >= 5.12" : "",
		   g->open_module ? "open" : "proprietary",
		   g->nvidia_version[0] ? g->nvidia_version : "?", g->kernel[0] ? g->kernel : "?");
	fix(res,
	    "'modprobe nvidia_peermem' (it ships with the NVIDIA driver and needs ib_core), or use "
	    "the NVIDIA open kernel modules (driver >= 515) on a kernel >= 5.12 for dma-buf");
}

static const struct check {
	const char *id;
	const char *title;
	void (*run)(struct ctx *x);
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
	{ "nccl", "NCCL settings of the process vs what rdmans env resolves", check_nccl },
	{ "gpu-nic", "the nearest RDMA device of each GPU (PCI path)", check_gpu_nic },
	{ "gpudirect", "GPUDirect RDMA: nvidia_peermem or dma-buf", check_gpudirect },
};

int rn_doctor_evaluate(const struct rn_doctor_facts *f, struct rn_doctor_report *out,
		       struct rn_error *err)
{
	_cleanup_nccl_result_ struct rn_nccl_result nccl = { 0 };
	struct rn_error nerr = { 0 };
	struct ctx x = { .f = f, .r = out };
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
