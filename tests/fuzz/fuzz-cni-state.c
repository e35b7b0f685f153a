// SPDX-License-Identifier: Apache-2.0
/*
 * rdma-netns' state files (one per attachment, key=value lines) and the
 * attachment plan stored in them. What reads is written and read back to
 * the same keys and values; a plan that loads is saved and loads again to
 * the same plan. The input is written to a file in a scratch directory.
 */
#include <fcntl.h>
#include <unistd.h>

#include "fuzz.h"
#include "rdmans/attach.h"
#include "rdmans/attach_state.h"
#include "rdmans/cni_state.h"

static void write_input(const char *path, const uint8_t *data, size_t size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size) || close(fd) < 0)
		abort();
}

static bool same_state(const struct rn_cni_state *a, const struct rn_cni_state *b)
{
	if (a->n != b->n)
		return false;
	for (size_t i = 0; i < a->n; i++) {
		const char *v = rn_cni_state_get(b, a->v[i].key);

		if (!v || strcmp(v, a->v[i].value) != 0)
			return false;
	}
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *dir = fuzz_scratch_dir();
	struct rn_cni_state st = { 0 }, again = { 0 }, saved = { 0 };
	struct rn_attach_plan plan, plan2;
	struct rn_error err = { 0 };
	char path[128];

	snprintf(path, sizeof(path), "%s/in", dir);
	write_input(path, data, size);
	if (rn_cni_state_read(dir, "in", &st, &err) < 0) {
		FUZZ_ASSERT(err.msg[0], "refused without a message");
		return 0;
	}
	if (rn_cni_state_write(dir, "out", &st, &err) == 0) {
		FUZZ_ASSERT(rn_cni_state_read(dir, "out", &again, &err) == 0,
			    "a written state does not read: %s", err.msg);
		FUZZ_ASSERT(same_state(&st, &again), "the state changed through a write");
	}
	memset(&plan, 0, sizeof(plan));
	if (rn_attach_plan_load(&st, &plan, &err) == 0) {
		FUZZ_ASSERT(plan.n_netdevs <= RN_ATTACH_MAX && plan.n_rdma <= RN_ATTACH_MAX,
			    "plan too large");
		FUZZ_ASSERT(rn_attach_plan_save(&plan, &saved, &err) == 0,
			    "a loaded plan cannot be saved: %s", err.msg);
		memset(&plan2, 0, sizeof(plan2));
		FUZZ_ASSERT(rn_attach_plan_load(&saved, &plan2, &err) == 0,
			    "a saved plan does not load: %s", err.msg);
		FUZZ_ASSERT(plan2.n_netdevs == plan.n_netdevs && plan2.n_rdma == plan.n_rdma &&
				    plan2.chained == plan.chained &&
				    strcmp(plan2.bus_id, plan.bus_id) == 0,
			    "the plan changed through save and load");
		for (size_t i = 0; i < plan.n_rdma; i++)
			FUZZ_ASSERT(strcmp(plan.rdma[i], plan2.rdma[i]) == 0,
				    "RDMA device %zu changed", i);
	}
	rn_cni_state_free(&st);
	rn_cni_state_free(&again);
	rn_cni_state_free(&saved);
	return 0;
}
