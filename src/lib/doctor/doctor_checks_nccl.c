// SPDX-License-Identifier: Apache-2.0
/* rdmans doctor's NCCL checks: the target's NCCL settings vs what rdmans env resolves. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmans/doctor.h"
#include "rdmans/nccl_process.h"
#include "rdmans/sysfs_gid.h"
#include "rdmans/util.h"
#include "doctor_checks_private.h"
#include "doctor_checks_nccl.h"

static const struct rn_nccl_port_use *nccl_use(const struct rn_doctor_ctx *x,
					       const struct rn_doctor_port *p)
{
	if (!x->nccl)
		return NULL;
	for (size_t i = 0; i < x->nccl->n_ports; i++)
		if (strcmp(x->nccl->ports[i].dev, p->dev) == 0 && x->nccl->ports[i].port == p->port)
			return &x->nccl->ports[i];
	return NULL;
}

static const char *resolved(const struct rn_doctor_ctx *x, const char *name)
{
	const struct rn_nccl_setting *s = x->nccl ? rn_nccl_result_get(x->nccl, name) : NULL;

	return s ? s->value : NULL;
}

void rn_doctor_var_desc(const struct rn_nccl_var *v, char *buf, size_t len)
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

static void check_nccl_net(struct rn_doctor_ctx *x)
{
	const struct rn_doctor_process *p = &x->f->proc;
	const struct rn_nccl_var *dis = rn_nccl_process_get(&p->nccl, "NCCL_IB_DISABLE");
	const struct rn_nccl_var *net = rn_nccl_process_get(&p->nccl, "NCCL_NET");
	struct rn_doctor_result *res;
	char subj[128], desc[RN_NCCL_VALUE_MAX + PATH_MAX + 64];
	long long v;

	x->id = "nccl-net";
	x->title = "NCCL uses its IB/RoCE transport";
	rn_doctor_pid_subject(p, subj, sizeof(subj));
	if (dis && nccl_int(dis->value, &v) && v != 0) {
		rn_doctor_var_desc(dis, desc, sizeof(desc));
		res = rn_doctor_emit(x, subj, RN_DOCTOR_FAIL, "%s: NCCL will not use RDMA", desc);
		rn_doctor_fix(res, "remove NCCL_IB_DISABLE or set it to 0");
		return;
	}
	if (net && strcasecmp(net->value, "IB") != 0) {
		rn_doctor_var_desc(net, desc, sizeof(desc));
		res = rn_doctor_emit(x, subj, RN_DOCTOR_FAIL,
				     "%s: NCCL will not use its IB/RoCE transport", desc);
		rn_doctor_fix(res, "remove NCCL_NET or set it to IB");
		return;
	}
	rn_doctor_emit(x, subj, RN_DOCTOR_PASS, "NCCL_IB_DISABLE and NCCL_NET leave RDMA on");
}

/*
 * The process's setting `name` for the check x->id, the process into subj;
 * NULL when it has none, after a PASS saying what NCCL does then (`unset`)
 * and what rdmans env resolves.
 */
static const struct rn_nccl_var *process_var(struct rn_doctor_ctx *x, const char *name,
					     const char *unset, char *subj, size_t len)
{
	const struct rn_nccl_var *v = rn_nccl_process_get(&x->f->proc.nccl, name);
	const char *want = resolved(x, name);

	rn_doctor_pid_subject(&x->f->proc, subj, len);
	if (!v)
		rn_doctor_emit(x, subj, RN_DOCTOR_PASS, "%s not set: %s%s%s%s%s", name, unset,
			       want ? "; rdmans env: " : "", want ? name : "", want ? "=" : "",
			       want ? want : "");
	return v;
}

static void check_nccl_hca(struct rn_doctor_ctx *x)
{
	const struct rn_doctor_facts *f = x->f;
	const char *want = resolved(x, "NCCL_IB_HCA");
	const struct rn_nccl_var *hca;
	char subj[128], desc[RN_NCCL_VALUE_MAX + PATH_MAX + 64], took[512] = "", unused[512] = "";
	size_t ntook = 0, ntook_used = 0, nunused = 0, off_t = 0, off_u = 0;
	struct rn_doctor_result *res;
	struct rn_nccl_list l;

	x->id = "nccl-hca";
	x->title = "NCCL_IB_HCA vs what rdmans env resolves";
	hca = process_var(x, "NCCL_IB_HCA", "NCCL uses every active port", subj, sizeof(subj));
	if (!hca)
		return;
	rn_doctor_var_desc(hca, desc, sizeof(desc));
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
		res = rn_doctor_emit(
			x, subj, RN_DOCTOR_FAIL,
			"%s selects no RDMA port in %s: NCCL falls back to TCP sockets", desc,
			f->target);
		if (want)
			rn_doctor_fix(res, "set NCCL_IB_HCA=%s ('rdmans env' for the target)",
				      want);
		else
			rn_doctor_fix(res, "name devices that are in %s ('rdmans dev')", f->target);
		return;
	}
	if (x->nccl && ntook_used == 0) {
		res = rn_doctor_emit(x, subj, RN_DOCTOR_FAIL,
				     "%s selects only ports rdmans env would not use: %s", desc,
				     unused);
		rn_doctor_fix(res, "set NCCL_IB_HCA=%s ('rdmans env' for the target)",
			      want ? want : "");
		return;
	}
	if (nunused) {
		res = rn_doctor_emit(x, subj, RN_DOCTOR_WARN, "%s selects %s; not usable: %s", desc,
				     took, unused);
		rn_doctor_fix(res, "set NCCL_IB_HCA=%s ('rdmans env' for the target)",
			      want ? want : "");
		return;
	}
	rn_doctor_emit(x, subj, RN_DOCTOR_PASS, "%s selects %s%s%s", desc, took,
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

static void check_nccl_gid(struct rn_doctor_ctx *x)
{
	const struct rn_doctor_facts *f = x->f;
	const struct rn_nccl_var *gid = rn_nccl_process_get(&f->proc.nccl, "NCCL_IB_GID_INDEX");
	const struct rn_nccl_var *hca = rn_nccl_process_get(&f->proc.nccl, "NCCL_IB_HCA");
	const char *want = resolved(x, "NCCL_IB_GID_INDEX");
	char subj[128], desc[RN_NCCL_VALUE_MAX + PATH_MAX + 64], wrong[768] = "", right[256] = "";
	size_t nwrong = 0, nright = 0, ncheck = 0, off_w = 0, off_r = 0;
	struct rn_doctor_result *res;
	struct rn_nccl_list l;
	long long index;

	x->id = "nccl-gid-index";
	x->title = "NCCL_IB_GID_INDEX vs the RoCE v2 GID of the interface address";
	rn_doctor_pid_subject(&f->proc, subj, sizeof(subj));
	if (!x->nccl) {
		rn_doctor_emit(x, subj, gid ? RN_DOCTOR_WARN : RN_DOCTOR_SKIP,
			       "rdmans env resolves nothing to compare with: %s", x->nccl_msg);
		return;
	}
	if (!gid) {
		if (!want) {
			rn_doctor_emit(x, subj, RN_DOCTOR_PASS, "no GID index needed here");
			return;
		}
		res = rn_doctor_emit(
			x, subj, RN_DOCTOR_WARN,
			"NCCL_IB_GID_INDEX not set: NCCL >= 2.21 picks the RoCE v2 GID of an "
			"address of NCCL_IB_ADDR_FAMILY (IPv4 unless set) itself, older NCCL "
			"uses GID index 0; rdmans env: NCCL_IB_GID_INDEX=%s",
			want);
		rn_doctor_fix(res,
			      "set NCCL_IB_GID_INDEX=%s in the container's environment or "
			      "/etc/nccl.conf ('rdmans env')",
			      want);
		return;
	}
	rn_doctor_var_desc(gid, desc, sizeof(desc));
	if (!nccl_int(gid->value, &index)) {
		res = rn_doctor_emit(x, subj, RN_DOCTOR_FAIL,
				     "%s is not a number: NCCL ignores it and uses its default",
				     desc);
		rn_doctor_fix(res, "set NCCL_IB_GID_INDEX=%s", want ? want : "N (a number)");
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
		res = rn_doctor_emit(x, subj, RN_DOCTOR_FAIL, "%s is wrong: %s", desc, wrong);
		rn_doctor_fix(res, "set NCCL_IB_GID_INDEX=%s ('rdmans env' for the target)",
			      want ? want : "to the index above");
		return;
	}
	if (ncheck == 0) {
		rn_doctor_emit(
			x, subj, RN_DOCTOR_WARN,
			"%s: no port it applies to has a RoCE v2 GID of its address to compare "
			"with (see the gid check)",
			desc);
		return;
	}
	rn_doctor_emit(x, subj, RN_DOCTOR_PASS, "%s is the RoCE v2 GID of the %s address on %s",
		       desc, x->nccl->family == AF_INET6 ? "IPv6" : "IPv4", right);
}

static void check_nccl_ifname(struct rn_doctor_ctx *x)
{
	const struct rn_doctor_facts *f = x->f;
	const char *want = resolved(x, "NCCL_SOCKET_IFNAME");
	const struct rn_nccl_var *ifn;
	char subj[128], desc[RN_NCCL_VALUE_MAX + PATH_MAX + 64], took[512] = "";
	struct rn_doctor_result *res;
	size_t ntook = 0, off = 0;
	struct rn_nccl_list l;

	x->id = "nccl-socket-ifname";
	x->title = "NCCL_SOCKET_IFNAME names a netdev of the target";
	ifn = process_var(x, "NCCL_SOCKET_IFNAME", "NCCL picks an interface itself", subj,
			  sizeof(subj));
	if (!ifn)
		return;
	rn_doctor_var_desc(ifn, desc, sizeof(desc));
	if (!f->node_ok) {
		rn_doctor_emit(x, subj, RN_DOCTOR_SKIP, "%s: the netdevs of %s are unknown (%s)",
			       desc, f->target, f->node_msg);
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
		res = rn_doctor_emit(
			x, subj, RN_DOCTOR_FAIL,
			"%s matches no netdev in %s: NCCL's bootstrap finds no interface", desc,
			f->target);
		rn_doctor_fix(res, "set NCCL_SOCKET_IFNAME=%s ('rdmans env' for the target)",
			      want ? want : "to a netdev of the target ('ip link')");
		return;
	}
	rn_doctor_emit(x, subj, RN_DOCTOR_PASS, "%s matches %s%s%s", desc, took,
		       want ? "; rdmans env: NCCL_SOCKET_IFNAME=" : "", want ? want : "");
}

/* Only when one could not be read: NCCL skips such a file without a word. */
static void check_nccl_conf(struct rn_doctor_ctx *x)
{
	const struct rn_doctor_process *p = &x->f->proc;
	struct rn_doctor_result *res;
	char subj[128];

	x->id = "nccl-conf";
	x->title = "the nccl.conf files NCCL reads";
	rn_doctor_pid_subject(p, subj, sizeof(subj));
	for (size_t i = 0; i < RN_ARRAY_SIZE(p->nccl.conf_errors); i++) {
		if (!p->nccl.conf_errors[i][0])
			continue;
		res = rn_doctor_emit(x, subj, RN_DOCTOR_WARN,
				     "%s; NCCL skips it, the settings below leave it out",
				     p->nccl.conf_errors[i]);
		rn_doctor_fix(res, "make it a readable regular file (or remove it)");
	}
}

void rn_doctor_check_nccl(struct rn_doctor_ctx *x)
{
	if (rn_doctor_no_process(x))
		return;
	check_nccl_conf(x);
	check_nccl_net(x);
	check_nccl_hca(x);
	check_nccl_gid(x);
	check_nccl_ifname(x);
}
