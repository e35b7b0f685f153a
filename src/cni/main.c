// SPDX-License-Identifier: Apache-2.0
/*
 * rdma-netns: a CNI plugin that moves a netdev and its RDMA devices into a
 * pod (main mode) or the RDMA devices behind the interface a previous
 * plugin created (chained mode), and brings them back on DEL. See
 * rdma-netns(8).
 *
 * The runtime calls it with CNI_* in the environment and the network
 * configuration on stdin; it answers on stdout.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cni.h"
#include "rdmans/cleanup.h"
#include "rdmans/cni_json.h"
#include "rdmans/util.h"

#define STDIN_MAX (4 * 1024 * 1024)

/* ---- fault injection (meson -Dfault_injection=true; never in a release build) ---- */

#ifdef RDMA_NETNS_FAULT_INJECTION
static long fault_at = -1;
static long fault_n;

/*
 * RDMA_NETNS_FAULT_STEP=N kills the plugin (SIGKILL, no cleanup at all)
 * right after the Nth change it makes: the runtime then sees a plugin that
 * died half way, as after an OOM kill or a node hiccup.
 */
void cni_fault_point(const char *what)
{
	fault_n++;
	if (fault_n == fault_at) {
		fprintf(stderr, "rdma-netns: fault injection: killed after step %ld (%s)\n",
			fault_n, what);
		fflush(stderr);
		raise(SIGKILL);
	}
}

/*
 * RDMA_NETNS_FAULT_SKIP=movable skips the check that refuses netns-local
 * netdevs before anything changes: the kernel then refuses the move, as on
 * kernels that report neither IFLA_NETNS_IMMUTABLE nor the ethtool feature.
 */
bool cni_fault_skip(const char *what)
{
	const char *v = getenv("RDMA_NETNS_FAULT_SKIP");

	return v && strcmp(v, what) == 0;
}

static void fault_init(void)
{
	const char *v = getenv("RDMA_NETNS_FAULT_STEP");

	if (v && *v)
		fault_at = strtol(v, NULL, 10);
}

static void fault_report(const char *command)
{
	const char *fired;
	long writes = rn_fault_io_count(&fired);

	if (fault_at >= 0)
		fprintf(stderr, "rdma-netns: fault injection: %s made %ld steps\n", command,
			fault_n);
	if (getenv("RDMANS_FAULT_IO"))
		fprintf(stderr, "rdma-netns: fault injection: %s made %ld writes%s%s\n", command,
			writes, fired ? ", failed: " : "", fired ? fired : "");
}
#else
void cni_fault_point(const char *what)
{
	(void)what;
}

bool cni_fault_skip(const char *what)
{
	(void)what;
	return false;
}

static void fault_init(void)
{
}

static void fault_report(const char *command)
{
	(void)command;
}
#endif

int cni_step(void *arg, const char *what, struct rn_error *err)
{
	(void)arg;
	(void)err;
	cni_fault_point(what);
	return 0;
}

/* ---- environment ---- */

static int read_stdin(struct cni_ctx *ctx, char **ret, size_t *ret_len)
{
	struct rn_error err = { 0 };
	int r = rn_cni_read_input(STDIN_FILENO, STDIN_MAX, "the network configuration", ret,
				  ret_len, &err);

	if (r == -EBADF) { /* no stdin at all: an empty configuration */
		*ret_len = 0;
		*ret = calloc(1, 1);
		return *ret ? 0 : cni_fail(ctx, CNI_ERR_IO, "out of memory");
	}
	if (r < 0)
		return cni_fail(ctx, r == -EFBIG ? CNI_ERR_DECODE : CNI_ERR_IO, "%s", err.msg);
	return 0;
}

static int check_env(struct cni_ctx *ctx, const struct rn_cni_env *env)
{
	struct rn_error err = { 0 };
	bool add_like = !strcmp(ctx->command, "ADD") || !strcmp(ctx->command, "CHECK");
	bool del = !strcmp(ctx->command, "DEL");

	if (add_like || del) {
		if (rn_cni_env_require(env, add_like, "rdma-netns", &err) < 0)
			return cni_fail(ctx, CNI_ERR_INVALID_ENV, "%s", err.msg);
		if (rn_cni_state_name("x", ctx->container_id, ctx->ifname, (char[256]){ 0 }, 256,
				      &err) < 0)
			return cni_fail(ctx, CNI_ERR_INVALID_ENV, "CNI_CONTAINERID/CNI_IFNAME: %s",
					err.msg);
		if (ctx->netns && ctx->netns[0] != '/')
			return cni_fail(ctx, CNI_ERR_INVALID_ENV,
					"CNI_NETNS must be an absolute path, not '%s'", ctx->netns);
	}
	if (rn_cni_args_parse(env->args, &ctx->args, &err) < 0)
		return cni_fail(ctx, CNI_ERR_INVALID_ENV, "%s", err.msg);
	return 0;
}

/* ---- VERSION ---- */

static int cmd_version(struct cni_ctx *ctx)
{
	if (rn_cni_print_version(cni_out_version(ctx), CNI_OLDEST) < 0)
		return cni_fail(ctx, CNI_ERR_IO, "cannot write to stdout");
	return 0;
}

static const struct {
	const char *name;
	int (*fn)(struct cni_ctx *ctx);
} commands[] = {
	{ "ADD", cni_cmd_add },	      { "DEL", cni_cmd_del }, { "CHECK", cni_cmd_check },
	{ "STATUS", cni_cmd_status }, { "GC", cni_cmd_gc },   { "VERSION", cmd_version },
};

int main(int argc, char **argv)
{
	static struct cni_ctx ctx; /* large: keep it off the stack */
	_cleanup_free_ char *input = NULL;
	int (*fn)(struct cni_ctx *) = NULL;
	struct rn_cni_env env;
	const char *dir;
	size_t len = 0;
	int r = -1;

	(void)argv;
	(void)signal(SIGPIPE, SIG_IGN);
	fault_init();
	rn_cni_env_read(&env);
	if (argc > 1 && isatty(STDIN_FILENO) && !env.command) {
		fprintf(stderr, "rdma-netns: a CNI plugin; container runtimes run it with "
				"CNI_COMMAND=ADD|DEL|CHECK|STATUS|GC|VERSION and the network "
				"configuration on stdin (see rdma-netns(8))\n");
		return 2;
	}
	ctx.command = env.command;
	ctx.container_id = env.container_id;
	ctx.netns = env.netns;
	ctx.ifname = env.ifname;
	ctx.path = env.path;
	dir = getenv("RDMA_NETNS_STATE_DIR");
	snprintf(ctx.state_dir, sizeof(ctx.state_dir), "%s", dir && *dir ? dir : RN_CNI_STATE_DIR);
	dir = getenv("RDMA_NETNS_DEVINFO_DIR");
	snprintf(ctx.devinfo_dir, sizeof(ctx.devinfo_dir), "%s",
		 dir && *dir ? dir : "/var/run/k8s.cni.cncf.io/devinfo");

	if (!ctx.command) {
		ctx.command = "";
		cni_fail(&ctx, CNI_ERR_INVALID_ENV,
			 "CNI_COMMAND is not set: rdma-netns is a CNI plugin, run by a container "
			 "runtime with CNI_COMMAND=ADD|DEL|CHECK|STATUS|GC|VERSION");
		goto out;
	}
	for (size_t i = 0; i < RN_ARRAY_SIZE(commands); i++)
		if (strcmp(ctx.command, commands[i].name) == 0)
			fn = commands[i].fn;
	if (!fn) {
		cni_fail(&ctx, CNI_ERR_INVALID_ENV,
			 "unknown CNI_COMMAND '%s' (ADD, DEL, CHECK, STATUS, GC or VERSION)",
			 ctx.command);
		goto out;
	}
	if (read_stdin(&ctx, &input, &len) < 0)
		goto out;
	while (len > 0 && strchr(" \t\r\n", input[len - 1]))
		input[--len] = '\0'; /* only whitespace reads as nothing */
	if (strcmp(ctx.command, "VERSION") == 0 && len == 0) {
		r = fn(&ctx);
		goto out;
	}
	if (cni_conf_parse(&ctx, input, len) < 0 || check_env(&ctx, &env) < 0) {
		if (strcmp(ctx.command, "DEL") == 0)
			r = cni_del_refused(&ctx);
		goto out;
	}
	r = fn(&ctx);
out:
	fault_report(ctx.command);
	if (r < 0) {
		if (!ctx.code)
			cni_fail(&ctx, RN_CNI_KERNEL, "%s failed", ctx.command);
		fprintf(stderr, "rdma-netns: %s: %s\n", ctx.command, ctx.msg);
		cni_print_error(&ctx);
	}
	cni_conf_free(&ctx.conf);
	return r < 0 ? 1 : 0;
}
