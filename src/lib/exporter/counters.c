// SPDX-License-Identifier: Apache-2.0
/*
 * Counters and link state of every RDMA port in every netns (see counters.h).
 *
 * A scrape walks the namespaces once, on one thread that joins each in
 * turn (rn_netns_run_each): there it dumps the devices, ports and netlink
 * statistics over one RDMA netlink socket; only a namespace that holds
 * devices gets a sysfs instance (fsmount, attached nowhere) for the sysfs
 * part. Nothing is kept between scrapes.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "rdmans/cleanup.h"
#include "rdmans/cni_state.h"
#include "rdmans/counters.h"
#include "rdmans/discover.h"
#include "rdmans/port_netdev.h"
#include "rdmans/rdma_nl.h"
#include "rdmans/sysfs.h"
#include "rdmans/sysfs_port.h"
#include "rdmans/util.h"

/* ---- counter lists ---- */

void rn_counters_free(struct rn_counters *c)
{
	if (!c)
		return;
	free(c->v);
	c->v = NULL;
	c->n = c->cap = 0;
}

const struct rn_counter *rn_counters_find(const struct rn_counters *c, const char *name)
{
	for (size_t i = 0; i < c->n; i++)
		if (strcmp(c->v[i].name, name) == 0)
			return &c->v[i];
	return NULL;
}

static int counters_append(struct rn_counters *c, const char *name, uint64_t value)
{
	struct rn_counter *e;

	if (strlen(name) >= sizeof(e->name))
		return 0; /* no kernel counter name is that long; skip rather than truncate */
	if (RN_GROW(c->v, &c->cap, c->n + 1) < 0)
		return -ENOMEM;
	e = &c->v[c->n++];
	memcpy(e->name, name, strlen(name) + 1);
	e->value = value;
	return 0;
}

int rn_counters_set(struct rn_counters *c, const char *name, uint64_t value)
{
	struct rn_counter *e = (struct rn_counter *)rn_counters_find(c, name);

	if (e) {
		e->value = value;
		return 0;
	}
	return counters_append(c, name, value);
}

int rn_counters_add_new(struct rn_counters *c, const char *name, uint64_t value)
{
	if (rn_counters_find(c, name))
		return 0;
	return counters_append(c, name, value);
}

static int cmp_counter(const void *a, const void *b)
{
	return strcmp(((const struct rn_counter *)a)->name, ((const struct rn_counter *)b)->name);
}

void rn_counters_sort(struct rn_counters *c)
{
	if (c->n > 1)
		qsort(c->v, c->n, sizeof(*c->v), cmp_counter);
}

/* ---- sysfs ---- */

static int add_counter(const char *name, uint64_t value, void *ctx)
{
	return rn_counters_add_new(ctx, name, value);
}

int rn_counters_read_sysfs(const char *dev, uint32_t port, const char *set, struct rn_counters *c,
			   struct rn_error *err)
{
	return rn_sysfs_counters_read(dev, port, set, add_counter, c, err);
}

/* "100 Gb/sec (4X EDR)", "25 Gb/sec (1X EDR)", "2.5 Gb/sec (1X SDR)" -> bits per second. */
static uint64_t parse_rate(const char *text)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(text, &end);
	if (errno || end == text || v < 0)
		return 0;
	while (*end == ' ')
		end++;
	if (strncmp(end, "Gb/sec", 6) == 0)
		return (uint64_t)(v * 1e9 + 0.5);
	if (strncmp(end, "Mb/sec", 6) == 0)
		return (uint64_t)(v * 1e6 + 0.5);
	return 0;
}

int rn_port_metrics_read_sysfs(const char *dev, struct rn_port_metrics *pm, struct rn_error *err)
{
	struct rn_sysfs_port f;
	int r;

	pm->netdev.mtu = -1;
	pm->netdev.oper_up = -1;
	r = rn_counters_read_sysfs(dev, pm->port, "hw_counters", &pm->hw, err);
	if (r < 0)
		return r;
	r = rn_counters_read_sysfs(dev, pm->port, "counters", &pm->pma, err);
	if (r < 0)
		return r;

	/* netlink's state and netdev binding, when it gave them, win over sysfs's */
	rn_sysfs_port_read(dev, pm->port, &f);
	rn_port_netdev_decide(&f, pm->netdev_binding, pm->netdev.name);
	(void)rn_strscpy(pm->rate, sizeof(pm->rate), f.rate);
	pm->rate_bps = parse_rate(f.rate);
	(void)rn_strscpy(pm->link_layer, sizeof(pm->link_layer), f.link_layer);
	if (!pm->state)
		pm->state = f.state;
	if (!pm->phys_state)
		pm->phys_state = f.phys_state;
	pm->netdev = f.netdev;
	return 0;
}

/* ---- the scrape ---- */

const char *rn_scrape_failure_reason(const struct rn_ns_metrics *m)
{
	switch (m->error_code) {
	case ENOENT:
	case ESRCH:
	case EINVAL: /* a netns file that is no netns any more */
		return "gone";
	case EPERM:
	case EACCES:
		return "permission";
	default:
		return "other";
	}
}

void rn_scrape_free(struct rn_scrape *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->ndevs; i++) {
		struct rn_dev_metrics *d = &s->devs[i];

		for (size_t p = 0; p < d->nports; p++) {
			rn_counters_free(&d->ports[p].hw);
			rn_counters_free(&d->ports[p].pma);
		}
		free(d->ports);
		rn_counters_free(&d->hw);
	}
	free(s->devs);
	free(s->ns);
	memset(s, 0, sizeof(*s));
}

static struct rn_ns_metrics *scrape_add_ns(struct rn_scrape *s)
{
	if (RN_GROW(s->ns, NULL, s->nns + 1) < 0)
		return NULL;
	memset(&s->ns[s->nns], 0, sizeof(*s->ns));
	return &s->ns[s->nns++];
}

static struct rn_dev_metrics *scrape_add_dev(struct rn_scrape *s)
{
	if (RN_GROW(s->devs, NULL, s->ndevs + 1) < 0)
		return NULL;
	memset(&s->devs[s->ndevs], 0, sizeof(*s->devs));
	return &s->devs[s->ndevs++];
}

/* Reads the sysfs part of devices [first, s->ndevs) in the caller's mount namespace. */
static int read_sysfs_of(struct rn_scrape *s, size_t first, struct rn_error *err)
{
	for (size_t i = first; i < s->ndevs; i++) {
		struct rn_dev_metrics *d = &s->devs[i];
		int r;

		r = rn_counters_read_sysfs(d->name, 0, "hw_counters", &d->hw, err);
		if (r < 0)
			return r;
		rn_counters_sort(&d->hw);
		for (size_t p = 0; p < d->nports; p++) {
			r = rn_port_metrics_read_sysfs(d->name, &d->ports[p], err);
			if (r < 0)
				return r;
			rn_counters_sort(&d->ports[p].hw);
			rn_counters_sort(&d->ports[p].pma);
		}
	}
	return 0;
}

static int list_ports_sysfs(const char *dev, struct rn_dev_metrics *d, struct rn_error *err)
{
	_cleanup_free_ uint32_t *ports = NULL;
	size_t n = 0;
	int r;

	r = rn_sysfs_port_list(dev, &ports, &n, err);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	if (RN_GROW(d->ports, NULL, d->nports + n) < 0)
		return rn_error_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		memset(&d->ports[d->nports], 0, sizeof(*d->ports));
		d->ports[d->nports++].port = ports[i];
	}
	return 0;
}

/* "b696:91ff:feec:a458" (sysfs node_guid) -> 0xb69691fffeeca458; 0 when malformed. */
static uint64_t parse_guid(const char *text)
{
	unsigned a, b, c, d;
	char tail;

	if (sscanf(text, "%4x:%4x:%4x:%4x%c", &a, &b, &c, &d, &tail) != 4)
		return 0;
	return ((uint64_t)a << 48) | ((uint64_t)b << 32) | ((uint64_t)c << 16) | d;
}

int rn_scrape_sysfs(struct rn_scrape *out, const char *ns_label, struct rn_error *err)
{
	_cleanup_free_ struct rn_sysfs_rdma_dev *devs = NULL;
	struct rn_ns_metrics *ns;
	size_t n = 0, first = out->ndevs, nsi;
	int r;

	r = rn_sysfs_rdma_list(&devs, &n, err);
	if (r < 0)
		return r;
	ns = scrape_add_ns(out);
	if (!ns)
		return rn_error_set(err, ENOMEM, "out of memory");
	snprintf(ns->label, sizeof(ns->label), "%s", ns_label);
	nsi = out->nns - 1;
	for (size_t i = 0; i < n; i++) {
		struct rn_dev_metrics *d = scrape_add_dev(out);

		if (!d)
			return rn_error_set(err, ENOMEM, "out of memory");
		snprintf(d->name, sizeof(d->name), "%s", devs[i].name);
		d->ns = nsi;
		d->node_guid = parse_guid(devs[i].node_guid);
		r = list_ports_sysfs(devs[i].name, d, err);
		if (r < 0)
			return r;
	}
	return read_sysfs_of(out, first, err);
}

/* Pod labels of a netns, from the CNI plugin's state files. */
struct cni_label {
	struct rn_netns_id id;
	char pod[256];
	char pod_namespace[256];
	char container[128];
};

struct cni_labels {
	size_t n;
	struct cni_label *v;
};

/*
 * Reads every state file of dir once per scrape; each attachment names its
 * netns by path (CNI_NETNS), which is matched by identity (device and
 * inode), not by name. Unreadable files and vanished namespaces are skipped.
 */
static int cni_labels_load(const char *dir, struct cni_labels *out)
{
	char **names = NULL;
	size_t n = 0;
	int r = 0;

	if (!dir || !*dir || rn_cni_state_list(dir, &names, &n, NULL) < 0)
		return 0;
	for (size_t i = 0; i < n && r == 0; i++) {
		_cleanup_cni_attachment_ struct rn_cni_attachment att = { 0 };
		struct cni_label *l;
		struct stat sb;
		int rr = rn_cni_attachment_read(dir, names[i], &att, NULL);

		/* damaged devices do not hide whose pod it is */
		if (rr < 0 && rr != -EBADMSG)
			continue;
		if (!att.netns[0] || stat(att.netns, &sb) < 0)
			continue;
		if (RN_GROW(out->v, NULL, out->n + 1) < 0) {
			r = -ENOMEM;
			break;
		}
		l = &out->v[out->n++];
		memset(l, 0, sizeof(*l));
		l->id.dev = sb.st_dev;
		l->id.ino = sb.st_ino;
		(void)rn_strscpy(l->pod, sizeof(l->pod), att.pod_name);
		(void)rn_strscpy(l->pod_namespace, sizeof(l->pod_namespace), att.pod_namespace);
		(void)rn_strscpy(l->container, sizeof(l->container), att.container_id);
	}
	rn_cni_state_names_free(names, n);
	return r;
}

static void cni_labels_free(struct cni_labels *l)
{
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

static void cni_label_ns(const struct cni_labels *labels, const struct rn_netns_entry *e,
			 struct rn_ns_metrics *m)
{
	for (size_t i = 0; i < labels->n; i++) {
		if (!rn_netns_id_equal(&labels->v[i].id, &e->id))
			continue;
		(void)rn_strscpy(m->pod, sizeof(m->pod), labels->v[i].pod);
		(void)rn_strscpy(m->pod_namespace, sizeof(m->pod_namespace),
				 labels->v[i].pod_namespace);
		(void)rn_strscpy(m->container, sizeof(m->container), labels->v[i].container);
		return;
	}
}

static double now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- every namespace ---- */

/* In the netns: devices, ports and netlink statistics, over one socket. */
static int scrape_netlink(struct rn_scrape *s, size_t nsi, bool read_mode, struct rn_error *err)
{
	_cleanup_rdma_devs_ struct rn_rdma_devs devs = { 0 };
	_cleanup_rdma_ struct rn_rdma *rdma = NULL;
	int r;

	r = rn_rdma_open_dump(&rdma, read_mode ? &s->exclusive : NULL, &devs, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < devs.n; i++) {
		const struct rn_rdma_dev *src = &devs.devs[i];
		struct rn_dev_metrics *d = scrape_add_dev(s);

		if (!d)
			return rn_error_set(err, ENOMEM, "out of memory");
		snprintf(d->name, sizeof(d->name), "%s", src->name);
		(void)rn_strscpy(d->fw, sizeof(d->fw), src->fw);
		(void)rn_strscpy(d->protocol, sizeof(d->protocol), src->protocol);
		d->index = src->index;
		d->node_guid = src->node_guid;
		d->ns = nsi;
		if (src->nports) {
			d->ports = calloc(src->nports, sizeof(*d->ports));
			if (!d->ports)
				return rn_error_set(err, ENOMEM, "out of memory");
		}
		for (size_t p = 0; p < src->nports; p++) {
			struct rn_port_metrics *pm = &d->ports[d->nports++];
			_cleanup_(rn_rdma_stats_free) struct rn_rdma_stats st = { 0 };

			pm->port = src->ports[p].index;
			pm->state = src->ports[p].state;
			pm->phys_state = src->ports[p].phys_state;
			const char *bound;

			/*
			 * The scrape's own dump, kept for the rule: the port's sysfs is read
			 * later, through another root (rn_port_metrics_read_sysfs()).
			 */
			pm->netdev_binding =
				rn_rdma_port_binding(&devs, src->name, pm->port, &bound);
			if (pm->netdev_binding == RN_RDMA_BINDING_HERE)
				(void)rn_strscpy(pm->netdev.name, sizeof(pm->netdev.name), bound);
			r = rn_rdma_stat_get(rdma, d->index, pm->port, &st, err);
			if (r == -EOPNOTSUPP)
				continue;
			if (r < 0)
				return r;
			for (size_t k = 0; k < st.n; k++) {
				r = rn_counters_set(&pm->hw, st.v[k].name, st.v[k].value);
				if (r < 0)
					return rn_error_set(err, ENOMEM, "out of memory");
			}
		}
	}
	return 0;
}

struct sysfs_job {
	struct rn_scrape *s;
	size_t first;
};

static int sysfs_job(void *arg, struct rn_error *err)
{
	struct sysfs_job *job = arg;

	return read_sysfs_of(job->s, job->first, err);
}

/* The sysfs part of devices [first, ndevs) of the netns this thread is in. */
static int scrape_sysfs_here(struct rn_scrape *s, size_t first, int nsfd, bool self,
			     struct rn_error *err)
{
	struct sysfs_job job = { .s = s, .first = first };
	_cleanup_close_ int mnt = -1;
	char root[64];
	int r;

	if (self)
		return read_sysfs_of(s, first, err); /* our own /sys shows this netns */
	mnt = rn_netns_sysfs_fd(err);
	if (mnt < 0) {
		/* no fsmount(): a thread with a private mount namespace and sysfs */
		rn_error_clear(err);
		return rn_netns_run_sysfs(nsfd, sysfs_job, &job, err);
	}
	snprintf(root, sizeof(root), "/proc/self/fd/%d", mnt);
	rn_sysfs_set_thread_root(root);
	r = read_sysfs_of(s, first, err);
	rn_sysfs_set_thread_root(NULL);
	return r;
}

/* Drops the devices a failed namespace added. */
static void scrape_truncate(struct rn_scrape *s, size_t ndevs)
{
	while (s->ndevs > ndevs) {
		struct rn_dev_metrics *d = &s->devs[--s->ndevs];

		for (size_t p = 0; p < d->nports; p++) {
			rn_counters_free(&d->ports[p].hw);
			rn_counters_free(&d->ports[p].pma);
		}
		free(d->ports);
		rn_counters_free(&d->hw);
	}
}

static void ns_label(const struct rn_netns_entry *e, struct rn_ns_metrics *m)
{
	if (e->is_host)
		snprintf(m->label, sizeof(m->label), "host");
	else if (e->name[0])
		snprintf(m->label, sizeof(m->label), "%s", e->name);
	else
		snprintf(m->label, sizeof(m->label), "net:[%llu]", (unsigned long long)e->id.ino);
	m->pid = e->pid;
}

struct walk {
	struct rn_scrape *s;
	const struct rn_netns_entry *nets;
	const int *fds;
	const int *open_errors;
	const struct cni_labels *labels;
	struct rn_netns_id self;
	bool have_self;
};

/*
 * One namespace, on the walking thread (joined to it when enter == 0).
 * Errors are recorded on the namespace; only running out of memory stops the walk.
 */
static int scrape_one(void *arg, size_t i, int enter, struct rn_error *unused)
{
	struct walk *w = arg;
	struct rn_scrape *s = w->s;
	const struct rn_netns_entry *e = &w->nets[i];
	struct rn_error err = { 0 };
	size_t first = s->ndevs, nsi = s->nns;
	struct rn_ns_metrics *m;
	int r;

	/* In shared mode every netns shows the same devices: the host's list is all. */
	if (!e->is_host && (!s->rdma || !s->exclusive))
		return 0;
	m = scrape_add_ns(s);
	if (!m)
		return -ENOMEM;
	ns_label(e, m);
	cni_label_ns(w->labels, e, m);
	if (w->fds[i] < 0) {
		r = rn_error_set(&err, -w->open_errors[i], "cannot open %s: %s", e->path,
				 strerror(-w->open_errors[i]));
		goto failed;
	}
	if (enter < 0) {
		r = rn_error_errno(&err, -enter, "cannot enter %s", e->path);
		goto failed;
	}
	r = scrape_netlink(s, nsi, e->is_host, &err);
	if (r < 0) {
		if (r == -ENOMEM)
			return r;
		if (e->is_host && r == -EPROTONOSUPPORT) {
			s->rdma = false;
			(void)rn_strscpy(s->rdma_error, sizeof(s->rdma_error), err.msg);
			return 0;
		}
		goto failed;
	}
	if (e->is_host)
		s->rdma = true;
	if (s->ndevs == first)
		return 0; /* nothing here: no sysfs to read */
	r = scrape_sysfs_here(s, first, w->fds[i],
			      w->have_self && rn_netns_id_equal(&w->self, &e->id), &err);
	if (r == -ENOMEM)
		return r;
	if (r < 0)
		goto failed;
	return 0;
failed:
	scrape_truncate(s, first);
	m = &s->ns[nsi];
	m->failed = true;
	m->error_code = -r;
	(void)rn_strscpy(m->error, sizeof(m->error), err.msg[0] ? err.msg : strerror(-r));
	s->ns_failed++;
	return 0;
}

/*
 * Lists the namespaces and opens each: named ones relative to the open
 * /var/run/netns (one walk of its symlink, not one per netns). A netns may
 * vanish meanwhile: its open error is recorded, it is marked failed later
 * and the rest goes on; setns() refuses anything that is not one.
 */
static int open_nets(struct rn_netns_entry **ret, size_t *ret_n, int **ret_fds, int **ret_errors,
		     struct rn_error *err)
{
	_cleanup_free_ struct rn_netns_entry *nets = NULL;
	_cleanup_free_ int *fds = NULL, *errors = NULL;
	_cleanup_close_ int run_dir = -1;
	size_t n = 0;
	int r;

	r = rn_netns_list(&nets, &n, err);
	if (r < 0)
		return r;
	fds = calloc(n ? n : 1, sizeof(*fds));
	errors = calloc(n ? n : 1, sizeof(*errors));
	if (!fds || !errors)
		return rn_error_set(err, ENOMEM, "out of memory while scraping RDMA counters");
	run_dir = open(RN_NETNS_RUN_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	for (size_t i = 0; i < n; i++) {
		if (run_dir >= 0 && nets[i].name[0] && !nets[i].is_host)
			fds[i] = rn_netns_open_at(run_dir, nets[i].name, NULL);
		else
			fds[i] = rn_netns_open_path(nets[i].path, NULL);
		errors[i] = fds[i] < 0 ? fds[i] : 0;
	}
	*ret = TAKE_PTR(nets);
	*ret_n = n;
	*ret_fds = TAKE_PTR(fds);
	*ret_errors = TAKE_PTR(errors);
	return 0;
}

int rn_scrape_all(const struct rn_scrape_options *opts, struct rn_scrape *out, struct rn_error *err)
{
	_cleanup_free_ struct rn_netns_entry *nets = NULL;
	_cleanup_(cni_labels_free) struct cni_labels labels = { 0 };
	_cleanup_free_ int *fds = NULL, *open_errors = NULL;
	_cleanup_close_ int self_fd = -1;
	struct walk w = { .s = out };
	double t0 = now_seconds();
	size_t n_nets = 0;
	int r;

	memset(out, 0, sizeof(*out));
	if (cni_labels_load(opts && opts->cni_state_dir ? opts->cni_state_dir : RN_CNI_STATE_DIR,
			    &labels) < 0)
		return rn_error_set(err, ENOMEM, "out of memory while scraping RDMA counters");
	r = open_nets(&nets, &n_nets, &fds, &open_errors, err); /* closed below */
	if (r < 0)
		return r;
	self_fd = rn_netns_open_self(NULL);
	/* our own /sys stands for our netns only when it shows it (not after nsenter -n) */
	w.have_self = self_fd >= 0 && rn_netns_id(self_fd, &w.self, NULL) == 0 &&
		      rn_netns_sysfs_is_own(NULL) == 1;
	w.nets = nets;
	w.fds = fds;
	w.open_errors = open_errors;
	w.labels = &labels;
	r = rn_netns_run_each(fds, n_nets, scrape_one, &w, err);
	for (size_t i = 0; i < n_nets; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	if (r < 0) {
		rn_scrape_free(out);
		if (rn_error_isset(err))
			return r;
		return rn_error_set(err, -r, "out of memory while scraping RDMA counters");
	}
	out->seconds = now_seconds() - t0;
	return 0;
}
