// SPDX-License-Identifier: Apache-2.0
/* rdma-netns's fault injection (meson -Dfault_injection=true; never in a release build). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fault.h"

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

void cni_fault_init(void)
{
	const char *v = getenv("RDMA_NETNS_FAULT_STEP");

	if (v && *v)
		fault_at = strtol(v, NULL, 10);
}

void cni_fault_report(const char *command)
{
	if (fault_at >= 0)
		fprintf(stderr, "rdma-netns: fault injection: %s made %ld steps\n", command,
			fault_n);
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

void cni_fault_init(void)
{
}

void cni_fault_report(const char *command)
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
