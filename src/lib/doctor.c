// SPDX-License-Identifier: Apache-2.0
/*
 * `rdmans doctor`: gather facts about a target (netns and process), then run
 * the checklist (the `checks` table below) on them. See doctor.h.
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

const char *rn_doctor_status_name(enum rn_doctor_status s)
{
	switch (s) {
	case RN_DOCTOR_PASS:
		return "PASS";
	case RN_DOCTOR_WARN:
		return "WARN";
	case RN_DOCTOR_FAIL:
		return "FAIL";
	default:
		return "SKIP";
	}
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
	free(f->proc.nccl);
	free(f->gpus);
	free(f->hcas);
	free(f->nics);
	memset(f, 0, sizeof(*f));
}

/* ---- netns facts from sysfs ---- */

static int sysfs_file(char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* ROOT/<fmt...> */
static int sysfs_file(char *buf, size_t len, const char *fmt, ...)
{
	char rel[PATH_MAX];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(rel, sizeof(rel), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(rel))
		return -ENAMETOOLONG;
	return rn_path(buf, len, "%s/%s", rn_sysfs_root(), rel);
}

static bool parse_uint(const char *s, unsigned long long *ret, int base)
{
	char *end;

	if (!*s || *s == '-' || isspace((unsigned char)*s))
		return false;
	errno = 0;
	*ret = strtoull(s, &end, base);
	return errno == 0 && *end == '\0';
}

/* The bound netdev's facts, as the checks use them: up is IFF_UP, running is operstate up. */
static void set_netdev(struct rn_doctor_port *p, const struct rn_sysfs_netdev *nd)
{
	(void)rn_strscpy(p->netdev, sizeof(p->netdev), nd->name);
	p->netdev_here = nd->name[0] && nd->here;
	p->netdev_ifindex = p->netdev_here ? nd->ifindex : 0;
	p->netdev_mtu = p->netdev_here ? nd->mtu : -1;
	p->netdev_up = p->netdev_here && nd->admin_up == 1;
	p->netdev_running = p->netdev_here && nd->oper_up == 1;
}

/* uverbsN of each port's device (class/infiniband_verbs is not netns-tagged). */
static void read_uverbs(struct rn_doctor_facts *f)
{
	_cleanup_free_ struct rn_devnode *nodes = NULL;
	size_t n = 0;

	if (rn_devnodes_uverbs(&nodes, &n, NULL) < 0)
		return;
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
}

static int add_port(struct rn_doctor_facts *f, const char *dev, uint32_t port, struct rn_error *err)
{
	struct rn_doctor_port *p;
	struct rn_sysfs_port sp;

	if (RN_GROW(f->ports, NULL, f->nports + 1) < 0)
		return rn_error_set(err, ENOMEM, "out of memory");
	p = &f->ports[f->nports++];
	memset(p, 0, sizeof(*p));
	rn_sysfs_port_read(dev, port, NULL, &sp);
	(void)rn_strscpy(p->dev, sizeof(p->dev), dev);
	p->port = port;
	(void)rn_strscpy(p->link_layer, sizeof(p->link_layer), sp.link_layer);
	p->state = sp.state;
	p->phys_state = sp.phys_state;
	p->gid_tbl_len = sp.gid_tbl_len;
	set_netdev(p, &sp.netdev);
	return 0;
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
	if (sysfs_file(path, sizeof(path), "module/nvidia") == 0)
		g->nvidia = access(path, F_OK) == 0;
	if (sysfs_file(path, sizeof(path), "module/nvidia/version") == 0)
		(void)rn_read_line(path, g->nvidia_version, sizeof(g->nvidia_version));
	if (sysfs_file(path, sizeof(path), "module/nvidia_peermem") == 0 && access(path, F_OK) == 0)
		g->peermem = true;
	if (sysfs_file(path, sizeof(path), "module/nv_peer_mem") == 0 && access(path, F_OK) == 0)
		g->peermem = true;
	if (rn_path(path, sizeof(path), "%s/driver/nvidia/version", proc_root) == 0 &&
	    rn_read_line(path, text, sizeof(text)) == 0)
		g->open_module = strstr(text, "Open Kernel Module") != NULL;
	if (rn_path(path, sizeof(path), "%s/sys/kernel/osrelease", proc_root) == 0)
		(void)rn_read_line(path, g->kernel, sizeof(g->kernel));
}

int rn_doctor_facts_from_sysfs(struct rn_doctor_facts *f, struct rn_error *err)
{
	_cleanup_free_ struct rn_sysfs_rdma_dev *devs = NULL;
	size_t n = 0;
	int r;

	r = rn_sysfs_rdma_list(&devs, &n, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		/* ports are numbered 1..nports */
		for (uint32_t p = 1; p <= devs[i].nports; p++) {
			r = add_port(f, devs[i].name, p, err);
			if (r < 0)
				return r;
		}
	}
	read_uverbs(f);
	r = read_pci(f, devs, n, err);
	if (r < 0)
		return r;
	r = rn_sysfs_gids(NULL, &f->gids, err);
	if (r < 0)
		return r;
	r = rn_nccl_node_from_sysfs(&f->node, err);
	if (r < 0) {
		f->node_ok = false;
		(void)rn_strscpy(f->node_msg, sizeof(f->node_msg), err->msg);
		rn_error_clear(err);
	} else {
		f->node_ok = true;
	}
	return 0;
}

static bool is_ipv4_cidr(const char *cidr)
{
	return strchr(cidr, '.') && !strchr(cidr, ':');
}

int rn_doctor_facts_add_addr(struct rn_doctor_facts *f, const char *netdev, const char *cidr,
			     struct rn_error *err)
{
	for (size_t i = 0; i < f->nports; i++) {
		struct rn_doctor_port *p = &f->ports[i];
		bool dup = false;

		if (strcmp(p->netdev, netdev) != 0)
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

/* ---- process facts ---- */

static int read_proc_file(const char *proc_root, pid_t pid, const char *name, size_t max,
			  char **ret, size_t *ret_len)
{
	_cleanup_close_ int fd = -1;
	char path[PATH_MAX];
	int r;

	r = rn_path(path, sizeof(path), "%s/%d/%s", proc_root, (int)pid, name);
	if (r < 0)
		return r;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	return rn_read_fd(fd, max, ret, ret_len);
}

/* "Max locked memory   8388608   8388608   bytes" */
static bool parse_limits(char *text, uint64_t *soft, uint64_t *hard)
{
	char *line = strstr(text, "Max locked memory");
	char s[32], h[32];
	unsigned long long v;

	if (!line || sscanf(line + strlen("Max locked memory"), "%31s %31s", s, h) != 2)
		return false;
	if (strcmp(s, "unlimited") == 0)
		*soft = RN_DOCTOR_UNLIMITED;
	else if (parse_uint(s, &v, 10))
		*soft = v;
	else
		return false;
	if (strcmp(h, "unlimited") == 0)
		*hard = RN_DOCTOR_UNLIMITED;
	else if (parse_uint(h, &v, 10))
		*hard = v;
	else
		return false;
	return true;
}

/* The value of "Key:\t..." in /proc/PID/status, or NULL. */
static const char *status_field(const char *text, const char *key, char *buf, size_t len)
{
	size_t klen = strlen(key);

	for (const char *line = text; line && *line;) {
		const char *nl = strchr(line, '\n');

		if (strncmp(line, key, klen) == 0 && line[klen] == ':') {
			const char *v = line + klen + 1;
			size_t n;

			while (*v == ' ' || *v == '\t')
				v++;
			n = nl ? (size_t)(nl - v) : strlen(v);
			if (n >= len)
				n = len - 1;
			memcpy(buf, v, n);
			buf[n] = '\0';
			return buf;
		}
		line = nl ? nl + 1 : NULL;
	}
	return NULL;
}

static int nccl_add(struct rn_doctor_process *p, const char *name, size_t name_len,
		    const char *value, const char *source)
{
	struct rn_doctor_nccl_var *v;

	if (name_len >= RN_NCCL_NAME_MAX)
		return 0;
	for (size_t i = 0; i < p->nnccl; i++)
		if (strlen(p->nccl[i].name) == name_len &&
		    strncmp(p->nccl[i].name, name, name_len) == 0)
			return 0; /* set already: the environment, or an earlier file, wins */
	if (RN_GROW(p->nccl, NULL, p->nnccl + 1) < 0)
		return -ENOMEM;
	v = &p->nccl[p->nnccl++];
	memcpy(v->name, name, name_len);
	v->name[name_len] = '\0';
	(void)rn_strscpy(v->value, sizeof(v->value), value);
	(void)rn_strscpy(v->source, sizeof(v->source), source);
	return 0;
}

static const char *nccl_get(const struct rn_doctor_process *p, const char *name)
{
	for (size_t i = 0; i < p->nnccl; i++)
		if (strcmp(p->nccl[i].name, name) == 0)
			return p->nccl[i].value;
	return NULL;
}

static const struct rn_doctor_nccl_var *nccl_var(const struct rn_doctor_process *p,
						 const char *name)
{
	for (size_t i = 0; i < p->nnccl; i++)
		if (strcmp(p->nccl[i].name, name) == 0)
			return &p->nccl[i];
	return NULL;
}

struct conf_read {
	struct rn_doctor_process *p;
	const char *source;
};

/* An NCCL_* line of an nccl.conf (rn_nccl_conf_each); a variable set already is not replaced. */
static int conf_line(const char *name, size_t name_len, const char *value, size_t value_len,
		     void *arg)
{
	struct conf_read *c = arg;
	char v[1024];

	if (name_len < 5 || strncmp(name, "NCCL_", 5) != 0)
		return 0;
	memcpy(v, value, value_len); /* at most 1023 */
	v[value_len] = '\0';
	return nccl_add(c->p, name, name_len, v, c->source);
}

/* A file that is absent is no error; one that cannot be read is (the nccl-conf check says so). */
static void read_conf(struct rn_doctor_process *p, int rootfd, const char *path, size_t slot)
{
	_cleanup_free_ char *text = NULL;
	struct rn_error err = { 0 };
	int r;

	r = rn_rootfs_read(rootfd, path, CONF_MAX, &text, &err);
	if (r == -ENOENT)
		return;
	if (r == 0) {
		(void)rn_strscpy(p->conf_files[slot], sizeof(p->conf_files[slot]), path);
		r = rn_nccl_conf_each(text, conf_line, &(struct conf_read){ p, path });
		if (r < 0)
			rn_error_set(&err, -r, "%s", strerror(-r));
	}
	if (r < 0)
		(void)rn_snprintf(p->conf_errors[slot], sizeof(p->conf_errors[slot]),
				  "cannot read %s: %s", path, err.msg);
}

/* The home directory of uid as the target's /etc/passwd says, into buf. */
static bool home_of(int rootfd, unsigned long uid, char *buf, size_t len)
{
	_cleanup_free_ char *text = NULL;
	char *save = NULL;

	if (rn_rootfs_read(rootfd, "/etc/passwd", CONF_MAX, &text, NULL) < 0)
		return false;
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *field[7] = { 0 };
		size_t nf = 0;
		unsigned long long v;

		field[nf++] = line;
		for (char *c = line; *c && nf < 7; c++)
			if (*c == ':') {
				*c = '\0';
				field[nf++] = c + 1;
			}
		if (nf == 7 && parse_uint(field[2], &v, 10) && v == uid) {
			(void)rn_strscpy(buf, len, field[5]);
			return true;
		}
	}
	return false;
}

static enum rn_doctor_node_state node_state(int rootfd, const struct rn_doctor_port *p)
{
	_cleanup_close_ int fd = -1;
	char path[64];
	struct stat st;

	if (!p->uverbs[0])
		return RN_DOCTOR_NODE_UNKNOWN;
	snprintf(path, sizeof(path), "/dev/infiniband/%s", p->uverbs);
	fd = rn_rootfs_openat(rootfd, path, O_PATH);
	if (fd < 0 || fstat(fd, &st) < 0)
		return RN_DOCTOR_NODE_MISSING;
	if (!S_ISCHR(st.st_mode))
		return RN_DOCTOR_NODE_NOT_CHR;
	if (major(st.st_rdev) != p->uverbs_major || minor(st.st_rdev) != p->uverbs_minor)
		return RN_DOCTOR_NODE_WRONG_DEV;
	return RN_DOCTOR_NODE_OK;
}

int rn_doctor_facts_process(struct rn_doctor_facts *f, const char *proc_root, pid_t pid,
			    struct rn_error *err)
{
	struct rn_doctor_process *p = &f->proc;
	_cleanup_free_ char *limits = NULL, *status = NULL, *environ_text = NULL, *comm = NULL;
	_cleanup_close_ int rootfd = -1;
	char path[PATH_MAX], buf[128], home[PATH_MAX] = "";
	const char *conf_file = NULL;
	size_t len = 0;
	int r;

	f->have_process = true;
	p->pid = pid;
	p->cap_ipc_lock = -1;
	r = rn_path(path, sizeof(path), "%s/%d", proc_root, (int)pid);
	if (r < 0)
		return rn_error_set(err, ENAMETOOLONG, "path %s/%d is too long", proc_root,
				    (int)pid);
	if (access(path, F_OK) < 0)
		return rn_error_set(err, ESRCH, "no process with PID %d (has it exited?)",
				    (int)pid);

	if (read_proc_file(proc_root, pid, "comm", 4096, &comm, &len) == 0) {
		comm[strcspn(comm, "\n")] = '\0';
		(void)rn_strscpy(p->comm, sizeof(p->comm), comm);
	}
	r = read_proc_file(proc_root, pid, "limits", 65536, &limits, &len);
	if (r == 0)
		p->memlock_known = parse_limits(limits, &p->memlock_soft, &p->memlock_hard);
	if (!p->memlock_known)
		(void)rn_snprintf(p->read_error, sizeof(p->read_error), "cannot read %s/limits%s%s",
				  path, r < 0 ? ": " : "",
				  r < 0 ? strerror(-r) : " (no 'Max locked memory' line)");
	if (read_proc_file(proc_root, pid, "status", 65536, &status, &len) == 0 &&
	    status_field(status, "CapEff", buf, sizeof(buf))) {
		unsigned long long caps;

		if (parse_uint(buf, &caps, 16))
			p->cap_ipc_lock = (caps >> CAP_IPC_LOCK_BIT) & 1;
	}

	r = read_proc_file(proc_root, pid, "environ", ENVIRON_MAX, &environ_text, &len);
	if (r < 0 && r != -ENOMEM) {
		if (!p->read_error[0])
			(void)rn_snprintf(p->read_error, sizeof(p->read_error),
					  "cannot read %s/environ: %s (run as root)", path,
					  strerror(-r));
	} else if (r == -ENOMEM) {
		return rn_error_set(err, ENOMEM, "out of memory");
	} else {
		for (size_t off = 0; off < len;) {
			const char *var = environ_text + off;
			size_t vlen = strnlen(var, len - off);
			const char *eq = memchr(var, '=', vlen);

			off += vlen + 1;
			if (!eq)
				continue;
			if (strncmp(var, "NCCL_", 5) == 0 &&
			    nccl_add(p, var, (size_t)(eq - var), eq + 1, "environment") < 0)
				return rn_error_set(err, ENOMEM, "out of memory");
			if (strncmp(var, "HOME=", 5) == 0 && !home[0])
				(void)rn_strscpy(home, sizeof(home), eq + 1);
		}
	}

	r = rn_path(path, sizeof(path), "%s/%d/root", proc_root, (int)pid);
	if (r == 0)
		rootfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0) {
		if (!p->read_error[0])
			(void)rn_snprintf(p->read_error, sizeof(p->read_error),
					  "cannot open %s: %s (run as root)", path,
					  strerror(errno));
	} else {
		_cleanup_close_ int dfd = rn_rootfs_openat(rootfd, "/dev/infiniband", O_PATH);
		_cleanup_close_ int cm =
			rn_rootfs_openat(rootfd, "/dev/infiniband/rdma_cm", O_PATH);
		char uid_text[64];
		unsigned long long uid;

		p->devdir = dfd >= 0;
		p->rdma_cm = cm >= 0;
		if (f->nports) {
			p->nodes = calloc(f->nports, sizeof(*p->nodes));
			if (!p->nodes)
				return rn_error_set(err, ENOMEM, "out of memory");
			for (size_t i = 0; i < f->nports; i++)
				p->nodes[i] = node_state(rootfd, &f->ports[i]);
		}
		/* NCCL: $NCCL_CONF_FILE, else ~/.nccl.conf (getpwuid(getuid())); then /etc/nccl.conf */
		conf_file = nccl_get(p, "NCCL_CONF_FILE");
		if (conf_file && *conf_file) {
			(void)rn_strscpy(path, sizeof(path), conf_file);
		} else {
			if (status && status_field(status, "Uid", uid_text, sizeof(uid_text))) {
				uid_text[strcspn(uid_text, " \t")] = '\0';
				if (parse_uint(uid_text, &uid, 10))
					(void)home_of(rootfd, (unsigned long)uid, home,
						      sizeof(home));
			}
			path[0] = '\0';
			if (home[0])
				(void)rn_path(path, sizeof(path), "%s/.nccl.conf", home);
		}
		if (path[0])
			read_conf(p, rootfd, path, 0);
		read_conf(p, rootfd, "/etc/nccl.conf", 1);
	}
	return 0;
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

static bool is_ethernet(const struct rn_doctor_port *p)
{
	return strcmp(p->link_layer, "Ethernet") == 0;
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
		if (!is_ethernet(p))
			fix(res, "%s",
			    p->state == 2 ? "no subnet manager configured the port: start "
					    "opensm or check the fabric's SM"
					  : "check the cable and the switch port");
		else if (p->netdev[0] && p->netdev_here && !p->netdev_up)
			fix(res, "bring its netdev up: 'ip link set %s up' (in %s)", p->netdev,
			    x->f->target);
		else if (p->netdev[0] && p->netdev_here && !p->netdev_running)
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

		if (!is_ethernet(p))
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
		if (!p->netdev_up) {
			res = emit(x, subj, RN_DOCTOR_FAIL, "netdev %s is down", p->netdev);
			fix(res, "'ip link set %s up' (in %s)", p->netdev, x->f->target);
			continue;
		}
		if (!p->netdev_running) {
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

		if (!is_ethernet(p) || !p->netdev[0] || !p->netdev_here || !p->addrs_known)
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

		if (!is_ethernet(p) || !p->netdev_here || p->netdev_mtu < 0)
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
	const struct rn_doctor_nccl_var *dis = nccl_var(p, "NCCL_IB_DISABLE");
	const struct rn_doctor_nccl_var *net = nccl_var(p, "NCCL_NET");
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
	const struct rn_doctor_nccl_var *hca = nccl_var(&f->proc, "NCCL_IB_HCA");
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
	const struct rn_doctor_nccl_var *gid = nccl_var(&f->proc, "NCCL_IB_GID_INDEX");
	const struct rn_doctor_nccl_var *hca = nccl_var(&f->proc, "NCCL_IB_HCA");
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

		if (!is_ethernet(p) || !u || u->gid_status != RN_NCCL_GID_FOUND)
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
	const struct rn_doctor_nccl_var *ifn = nccl_var(&f->proc, "NCCL_SOCKET_IFNAME");
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
		f->have_process ? nccl_var(&f->proc, "NCCL_IB_HCA") : NULL;
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
	_cleanup_rdma_devs_ struct rn_rdma_devs devs = { 0 };
	_cleanup_rdma_ struct rn_rdma *rdma = NULL;
	int r;

	r = rn_doctor_facts_from_sysfs(f, err);
	if (r < 0)
		return r;
	if (job->rdma && rn_rdma_open(&rdma, NULL) == 0 &&
	    rn_rdma_dev_dump(rdma, &devs, NULL) == 0) {
		for (size_t i = 0; i < f->nports; i++) {
			struct rn_doctor_port *p = &f->ports[i];

			for (size_t d = 0; d < devs.n; d++) {
				if (strcmp(devs.devs[d].name, p->dev) != 0)
					continue;
				for (size_t k = 0; k < devs.devs[d].nports; k++) {
					const struct rn_rdma_port *np = &devs.devs[d].ports[k];

					if (np->index != p->port)
						continue;
					if (np->ndev_name[0]) {
						struct rn_sysfs_netdev nd;

						rn_sysfs_netdev_read(np->ndev_name, &nd);
						set_netdev(p, &nd);
					} else {
						/* netlink names the netdev only in its own netns */
						p->netdev_here = false;
					}
				}
			}
		}
	}
	for (size_t i = 0; i < f->nports; i++) {
		struct rn_doctor_port *p = &f->ports[i];
		char cidrs[RN_DOCTOR_MAX_ADDRS][64];
		size_t n = 0;

		if (p->netdev_here && p->netdev_ifindex > 0 && !p->addrs_known &&
		    rn_link_addr_list(p->netdev_ifindex, AF_UNSPEC, cidrs, RN_DOCTOR_MAX_ADDRS, &n,
				      NULL) == 0) {
			p->addrs_known = true;
			for (size_t a = 0; a < n && a < RN_DOCTOR_MAX_ADDRS; a++) {
				r = rn_doctor_facts_add_addr(f, p->netdev, cidrs[a], err);
				if (r < 0)
					return r;
			}
		}
		if (is_ethernet(p)) {
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
