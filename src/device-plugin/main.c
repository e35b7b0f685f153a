// SPDX-License-Identifier: Apache-2.0
/*
 * rdmans-device-plugin: the kubelet device plugin (API v1beta1). One
 * resource per pool (rdmans.io/rdma by default), each served on its own
 * socket in the plugin directory and registered with kubelet there. A
 * kubelet restart re-creates kubelet.sock and removes the plugins'
 * sockets: both are watched, and the plugin serves and registers again.
 * See rdmans-device-plugin(8).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "config.h"
#include "rdmans/cleanup.h"
#include "rdmans/device_plugin.h"
#include "rdmans/device_plugin_json.h"
#include "rdmans/kubelet_wire.h"
#include "rdmans/util.h"

#define DEFAULT_PLUGIN_DIR "/var/lib/kubelet/device-plugins"
#define KUBELET_SOCK "kubelet.sock"
/*
 * kubelet answers Register once it has dialled back and asked for the
 * options; the registration runs on its own thread, so a long deadline
 * holds nothing up, and a slow node (or an emulated one) still registers
 */
#define REGISTER_TIMEOUT_MS 90000
#define DEFAULT_POLL_MS 1000
#define MAX_CONFIG (1 << 20)

struct pool_state {
	struct plugin *p;
	size_t index;
	char path[PATH_MAX];
	struct rn_kw_server *srv;
	bool registered;
	/* a registration runs on its own thread: kubelet calls back before it answers */
	pthread_t thread;
	bool thread_running;
	atomic_int thread_done; /* 1: ok, -1: failed */
	struct rn_error reg_err;
};

struct plugin {
	char dir[PATH_MAX];
	char kubelet_sock[PATH_MAX];
	struct rn_dp_config cfg;
	struct rn_dp_inventory inv;
	struct rn_kw_loop *loop;
	struct pool_state pools[RN_DP_MAX_POOLS];
	bool say_register_failure[RN_DP_MAX_POOLS];
};

static volatile sig_atomic_t stopping;

static void on_signal(int sig)
{
	(void)sig;
	stopping = 1;
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("rdmans-device-plugin: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static void usage(FILE *out)
{
	fputs("Usage: rdmans-device-plugin [--plugin-dir DIR] [--config FILE]\n"
	      "                            [--device-list-strategy LIST] [--poll-ms N]\n"
	      "The kubelet device plugin of rdmans: RDMA devices as the resource rdmans.io/rdma\n"
	      "(or the pools of --config), Healthy while a port is ACTIVE and the node is in\n"
	      "exclusive netns mode, with their NUMA node; Allocate answers with CDI devices.\n"
	      "LIST: cdi-cri (default), cdi-annotations, device-specs, comma-separated.\n"
	      "Default plugin directory " DEFAULT_PLUGIN_DIR ". See rdmans-device-plugin(8).\n",
	      out);
}

static int op_preferred(void *ctx, const struct rn_kw_preferred_request *req, const char **ret,
			size_t *ret_n, struct rn_error *err)
{
	struct pool_state *ps = ctx;

	return rn_dp_preferred(&ps->p->inv, req, ret, ret_n, err);
}

static int op_allocate(void *ctx, const char *const *ids, size_t n, struct rn_kw_alloc *out,
		       struct rn_error *err)
{
	struct pool_state *ps = ctx;
	int r = rn_dp_allocate(&ps->p->cfg, &ps->p->inv, ids, n, out, err);

	if (r < 0)
		say("%s: Allocate of %zu device%s refused: %s",
		    ps->p->cfg.pools[ps->index].resource, n, n == 1 ? "" : "s", err->msg);
	else
		say("%s: Allocate %s (%zu device%s)", ps->p->cfg.pools[ps->index].resource,
		    out->n_envs ? out->envs[out->n_envs - 1].value : "", n, n == 1 ? "" : "s");
	return r;
}

static const struct rn_kw_ops ops = { .preferred = op_preferred, .allocate = op_allocate };

static int pool_publish(struct pool_state *ps, struct rn_error *err)
{
	_cleanup_free_ struct rn_kw_device *devs = NULL;
	size_t n = 0;
	int r = rn_dp_pool_devices(&ps->p->inv, (int)ps->index, &devs, &n, err);

	if (r == 0)
		r = rn_kw_server_publish(ps->srv, devs, n, err);
	return r;
}

static int pool_serve(struct pool_state *ps, struct rn_error *err)
{
	_cleanup_free_ struct rn_kw_device *devs = NULL;
	size_t n = 0;
	int r = rn_dp_pool_devices(&ps->p->inv, (int)ps->index, &devs, &n, err);

	if (r == 0)
		r = rn_kw_server_start(ps->p->loop, ps->path, &ops, ps, true, devs, n, &ps->srv,
				       err);
	return r;
}

static void *register_thread(void *arg)
{
	struct pool_state *ps = arg;
	const char *endpoint = strrchr(ps->path, '/') + 1;

	rn_error_clear(&ps->reg_err);
	atomic_store(&ps->thread_done, rn_kw_register(ps->p->kubelet_sock, endpoint,
						      ps->p->cfg.pools[ps->index].resource, true,
						      REGISTER_TIMEOUT_MS, &ps->reg_err) == 0
					       ? 1
					       : -1);
	return NULL;
}

/* Starts a registration, or takes the result of the one that ended. */
static void pool_register_step(struct pool_state *ps)
{
	const char *resource = ps->p->cfg.pools[ps->index].resource;
	int done;

	if (ps->thread_running) {
		if (!(done = atomic_load(&ps->thread_done)))
			return;
		pthread_join(ps->thread, NULL);
		ps->thread_running = false;
		if (done > 0) {
			ps->registered = true;
			ps->p->say_register_failure[ps->index] = true;
			say("%s: registered with kubelet (%s), serving %s", resource,
			    ps->p->kubelet_sock, ps->path);
		} else if (ps->p->say_register_failure[ps->index]) {
			/* said once until it works: kubelet may come up much later */
			ps->p->say_register_failure[ps->index] = false;
			say("%s: %s; trying again while kubelet.sock is there", resource,
			    ps->reg_err.msg);
		}
		return;
	}
	if (ps->registered || access(ps->p->kubelet_sock, F_OK) < 0)
		return;
	atomic_store(&ps->thread_done, 0);
	if (pthread_create(&ps->thread, NULL, register_thread, ps) == 0)
		ps->thread_running = true;
}

/* kubelet.sock re-created: kubelet restarted and forgot us; our socket removed: serve again. */
static void watch_dir(struct plugin *p, int ino)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t len;

	while ((len = read(ino, buf, sizeof(buf))) > 0) {
		for (char *q = buf; q < buf + len;) {
			const struct inotify_event *ev = (const struct inotify_event *)q;

			q += sizeof(*ev) + ev->len;
			if (!ev->len)
				continue;
			for (size_t i = 0; i < p->cfg.n_pools; i++) {
				struct pool_state *ps = &p->pools[i];
				struct rn_error err = { 0 };

				if (!strcmp(ev->name, KUBELET_SOCK) && (ev->mask & IN_CREATE)) {
					if (ps->registered)
						say("%s: kubelet.sock was made anew (kubelet "
						    "restarted): registering again",
						    p->cfg.pools[i].resource);
					ps->registered = false;
				} else if (!strcmp(ev->name, strrchr(ps->path, '/') + 1) &&
					   (ev->mask & IN_DELETE) && ps->srv) {
					say("%s: %s was removed: serving it again",
					    p->cfg.pools[i].resource, ps->path);
					rn_kw_server_stop(ps->srv);
					ps->srv = NULL;
					ps->registered = false;
					if (pool_serve(ps, &err) < 0)
						say("%s: %s", p->cfg.pools[i].resource, err.msg);
				}
			}
		}
	}
}

static void log_changes(const struct plugin *p, const struct rn_dp_inventory *before)
{
	for (size_t i = 0; i < p->inv.n; i++) {
		const struct rn_dp_device *d = &p->inv.v[i];
		const struct rn_dp_device *was = NULL;

		for (size_t j = 0; j < before->n && !was; j++)
			if (!strcmp(before->v[j].id, d->id))
				was = &before->v[j];
		if (d->pool < 0)
			continue;
		if (!was || was->healthy != d->healthy)
			say("%s: %s (%s) %s%s%s%s", p->cfg.pools[d->pool].resource, d->id, d->name,
			    d->healthy ? "Healthy" : "Unhealthy", d->why[0] ? ": " : "", d->why,
			    d->here ? "" : " (in a pod's netns)");
	}
}

static int scan(struct plugin *p, bool *changed, struct rn_error *err)
{
	struct rn_dp_inventory before = { 0 };
	int r;

	before.v = malloc((p->inv.n + 1) * sizeof(*before.v));
	if (!before.v)
		return rn_error_set(err, ENOMEM, "out of memory");
	if (p->inv.n) /* the first scan has no inventory yet: v is NULL */
		memcpy(before.v, p->inv.v, p->inv.n * sizeof(*before.v));
	before.n = p->inv.n;
	r = rn_dp_scan(&p->cfg, &p->inv, changed, err);
	if (r == 0 && *changed)
		log_changes(p, &before);
	free(before.v);
	return r;
}

static int load_config(const char *path, struct rn_dp_config *cfg, struct rn_error *err)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	int r;

	if (!path) {
		rn_dp_config_default(cfg);
		return 0;
	}
	if ((r = rn_read_regular(path, MAX_CONFIG, "configuration", &text, &len, err)) < 0)
		return r;
	if ((r = rn_dp_config_parse(text, len, cfg, err)) < 0)
		return rn_error_wrap(err, "%s", path);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "plugin-dir", required_argument, NULL, 'd' },
		{ "config", required_argument, NULL, 'c' },
		{ "device-list-strategy", required_argument, NULL, 's' },
		{ "poll-ms", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	static struct plugin p;
	const char *dir = DEFAULT_PLUGIN_DIR, *config = NULL, *strategy = NULL;
	struct rn_error err = { 0 };
	_cleanup_close_ int ino = -1;
	struct sigaction sa = { .sa_handler = on_signal };
	long poll_ms = DEFAULT_POLL_MS;
	bool changed;
	char *end;
	int c, r;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			dir = optarg;
			break;
		case 'c':
			config = optarg;
			break;
		case 's':
			strategy = optarg;
			break;
		case 'p':
			errno = 0;
			poll_ms = strtol(optarg, &end, 10);
			if (errno || *end || poll_ms < 10 || poll_ms > 60000) {
				say("error: --poll-ms takes 10 to 60000 (milliseconds), not '%s'",
				    optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("rdmans-device-plugin %s\n", RDMANS_VERSION);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		say("error: unexpected argument '%s'", argv[optind]);
		usage(stderr);
		return 2;
	}
	if (load_config(config, &p.cfg, &err) < 0 ||
	    (strategy && rn_dp_strategies_parse(strategy, &p.cfg.strategies, &err) < 0)) {
		say("error: %s", err.msg);
		return 2;
	}
	if (rn_strscpy(p.dir, sizeof(p.dir), dir) < 0 ||
	    rn_snprintf(p.kubelet_sock, sizeof(p.kubelet_sock), "%s/%s", dir, KUBELET_SOCK) < 0) {
		say("error: --plugin-dir %s is too long", dir);
		return 2;
	}
	ino = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (ino < 0 || inotify_add_watch(ino, dir, IN_CREATE | IN_DELETE | IN_MOVED_TO) < 0) {
		say("error: cannot watch the plugin directory %s: %m (is it there? kubelet makes "
		    "it; --plugin-dir names another)",
		    dir);
		return 1;
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (scan(&p, &changed, &err) < 0) {
		say("error: %s", err.msg);
		return 1;
	}
	if (rn_kw_loop_new(&p.loop, &err) < 0) {
		say("error: %s", err.msg);
		return 1;
	}
	for (size_t i = 0; i < p.cfg.n_pools; i++) {
		struct pool_state *ps = &p.pools[i];

		ps->p = &p;
		ps->index = i;
		p.say_register_failure[i] = true;
		if (rn_snprintf(ps->path, sizeof(ps->path), "%s/rdmans-%s.sock", dir,
				p.cfg.pools[i].name) < 0 ||
		    pool_serve(ps, &err) < 0) {
			say("error: %s: %s", p.cfg.pools[i].resource,
			    rn_error_isset(&err) ? err.msg : "socket path too long");
			rn_kw_loop_free(p.loop);
			return 1;
		}
	}
	r = 0;
	while (!stopping) {
		for (size_t i = 0; i < p.cfg.n_pools; i++)
			pool_register_step(&p.pools[i]);
		if (rn_kw_loop_run(p.loop, (int)poll_ms, &err) < 0) {
			say("error: %s", err.msg);
			r = 1;
			break;
		}
		watch_dir(&p, ino);
		if (scan(&p, &changed, &err) < 0) {
			say("%s", err.msg);
			rn_error_clear(&err);
			continue;
		}
		for (size_t i = 0; changed && i < p.cfg.n_pools; i++)
			if (p.pools[i].srv && pool_publish(&p.pools[i], &err) < 0) {
				say("%s: %s", p.cfg.pools[i].resource, err.msg);
				rn_error_clear(&err);
			}
	}
	for (size_t i = 0; i < p.cfg.n_pools; i++)
		if (p.pools[i].thread_running)
			pthread_join(p.pools[i].thread, NULL);
	rn_kw_loop_free(p.loop);
	rn_dp_inventory_free(&p.inv);
	say("stopped");
	return r;
}
