// SPDX-License-Identifier: Apache-2.0
/*
 * rdmans-nri: the NRI plugin (containerd >= 2.0, CRI-O >= 1.30). Runs as a
 * daemon that connects to the runtime's NRI socket and connects again when
 * the runtime restarts, or is started by the runtime from /opt/nri/plugins
 * with the connection in NRI_PLUGIN_SOCKET (then it ends with it). The work
 * is rn_nri_serve(); see rdmans-nri(8).
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "config.h"
#include "rdmans/cleanup.h"
#include "rdmans/nccl.h"
#include "rdmans/nri.h"
#include "rdmans/util.h"
#if RDMANS_POD_RESOURCES
#include "rdmans/device_plugin.h"
#include "rdmans/kubelet_wire.h"
#endif

#define REGISTRATION_TIMEOUT_MS 5000
#define POD_RESOURCES_SOCKET "/var/lib/kubelet/pod-resources/kubelet.sock"
/* within the runtime's 2 s for one NRI request */
#define POD_RESOURCES_TIMEOUT_MS 1000
#define RECONNECT_MS 1000

/*
 * stderr (a DaemonSet's log) and syslog: containerd does not keep the
 * stderr of the plugins it starts from /opt/nri/plugins.
 */
static void log_line(void *ctx, int priority, const char *line)
{
	(void)ctx;
	fprintf(stderr, "rdmans-nri: %s%s\n", priority <= LOG_ERR ? "error: " : "", line);
	openlog("rdmans-nri", LOG_PID, LOG_DAEMON);
	syslog(priority, "%s", line);
	closelog();
}

#if RDMANS_POD_RESOURCES
/* The pod's devices of rdmans-device-plugin's resources (rdmans.io/...), from kubelet. */
static int kubelet_pod_devices(void *ctx, const char *pod_namespace, const char *pod_name,
			       char *names, size_t len, struct rn_error *err)
{
	const char *sock = ctx;
	char **ids = NULL;
	size_t n = 0;
	int r;

	if (access(sock, F_OK) < 0)
		return -ENOENT;
	r = rn_kw_pod_devices(sock, pod_namespace, pod_name, RN_DP_DEFAULT_PREFIX "/",
			      POD_RESOURCES_TIMEOUT_MS, &ids, &n, err);
	if (r == 0)
		r = rn_dp_names_of_ids((const char *const *)ids, n, names, len, err);
	rn_kw_ids_free(ids, n);
	return r;
}
#endif

static void usage(FILE *out)
{
	fputs("Usage: rdmans-nri [--socket PATH] [--name NAME] [--idx NN] [--state-dir DIR]\n"
	      "                  [--config FILE] [--profile NAME] [--pod-resources SOCKET] "
	      "[--once]\n"
	      "An NRI plugin: NCCL settings in the environment of containers of pods with\n"
	      "rdmans.io annotations, their RDMA device nodes, and the RDMA devices that\n"
	      "rdmans.io/devices names moved into the pod. Default socket " RN_NRI_SOCKET ".\n"
	      "Pods holding rdmans-device-plugin's devices (kubelet's PodResources socket,\n"
	      "default " POD_RESOURCES_SOCKET "; '' for none) get those moved.\n"
	      "Started by the runtime (NRI_PLUGIN_SOCKET set): serves that connection.\n"
	      "See rdmans-nri(8).\n",
	      out);
}

/* A number of 0-99, as NRI's plugin index is. */
static bool idx_ok(const char *s)
{
	return s && s[0] >= '0' && s[0] <= '9' &&
	       (s[1] == '\0' || (s[1] >= '0' && s[1] <= '9' && s[2] == '\0'));
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "name", required_argument, NULL, 'n' },
		{ "idx", required_argument, NULL, 'i' },
		{ "state-dir", required_argument, NULL, 'd' },
		{ "config", required_argument, NULL, 'c' },
		{ "profile", required_argument, NULL, 'p' },
		{ "once", no_argument, NULL, 'o' },
		{ "pod-resources", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct rn_nri_options o = { .name = "rdmans-nri", .idx = "50", .log = log_line };
	const char *socket_path = RN_NRI_SOCKET, *given = getenv("NRI_PLUGIN_SOCKET");
	struct rn_error err = { 0 };
	bool once = false, down_said = false;
	const char *pod_resources = POD_RESOURCES_SOCKET;
	int c;

	while ((c = getopt_long(argc, argv, "s:n:i:d:c:p:ohV", opts, NULL)) != -1) {
		switch (c) {
		case 'r':
			pod_resources = optarg;
			break;
		case 's':
			socket_path = optarg;
			break;
		case 'n':
			o.name = optarg;
			break;
		case 'i':
			o.idx = optarg;
			break;
		case 'd':
			o.state_dir = optarg;
			break;
		case 'c':
			o.sources.config = optarg;
			break;
		case 'p':
			if (rn_nccl_profile_check(optarg, &err) < 0) {
				log_line(NULL, LOG_ERR, err.msg);
				return 2;
			}
			o.sources.profile = optarg;
			break;
		case 'o':
			once = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("rdmans-nri %s\n", RDMANS_VERSION);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}
	/*
	 * A runtime that gives up on a request closes the connection: the reply
	 * must fail with EPIPE and the plugin connect again, not die of SIGPIPE.
	 */
	signal(SIGPIPE, SIG_IGN);
#if RDMANS_POD_RESOURCES
	if (pod_resources[0]) {
		o.pod_devices = kubelet_pod_devices;
		o.pod_devices_ctx = (void *)pod_resources;
	}
#else
	if (pod_resources != (const char *)POD_RESOURCES_SOCKET && pod_resources[0]) {
		fprintf(stderr, "rdmans-nri: error: --pod-resources: built without grpc "
				"(-Ddevice_plugin=disabled)\n");
		return 2;
	}
#endif
	if (given) {
		/* pre-installed: the runtime started us with the connection */
		int fd;

		if (rn_parse_pid(given, &fd) < 0) {
			fprintf(stderr,
				"rdmans-nri: error: NRI_PLUGIN_SOCKET=%s is not a file "
				"descriptor number\n",
				given);
			return 2;
		}
		if (getenv("NRI_PLUGIN_NAME"))
			o.name = getenv("NRI_PLUGIN_NAME");
		if (getenv("NRI_PLUGIN_IDX"))
			o.idx = getenv("NRI_PLUGIN_IDX");
		once = true;
		socket_path = NULL;
		if (!idx_ok(o.idx)) {
			fprintf(stderr, "rdmans-nri: error: plugin index '%s' is not 0-99\n",
				o.idx);
			return 2;
		}
		if (rn_nri_serve(fd, &o, REGISTRATION_TIMEOUT_MS, &err) < 0) {
			log_line(NULL, LOG_ERR, err.msg);
			return 1;
		}
		return 0;
	}
	if (!idx_ok(o.idx)) {
		fprintf(stderr,
			"rdmans-nri: error: --idx '%s' is not 0-99 (NRI orders plugins by "
			"a two-digit index)\n",
			o.idx);
		return 2;
	}
	for (;;) {
		_cleanup_close_ int fd = rn_nri_connect(socket_path, &err);
		int r;

		if (fd < 0) {
			if (once) {
				log_line(NULL, LOG_ERR, err.msg);
				return 1;
			}
			if (!down_said)
				log_line(NULL, LOG_WARNING, err.msg);
			down_said = true;
			rn_error_clear(&err);
			usleep(RECONNECT_MS * 1000);
			continue;
		}
		down_said = false;
		r = rn_nri_serve(fd, &o, REGISTRATION_TIMEOUT_MS, &err);
		if (r < 0)
			log_line(NULL, LOG_ERR, err.msg);
		rn_error_clear(&err);
		if (once)
			return r < 0 ? 1 : 0;
		usleep(RECONNECT_MS * 1000);
	}
}
