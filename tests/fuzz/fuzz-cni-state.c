// SPDX-License-Identifier: Apache-2.0
/*
 * rdma-netns' state files (one per attachment, key=value lines) through
 * their one reader and one writer. A refusal says why; a damaged file still
 * names no more devices than a plan holds; what reads is written, and that
 * reads back to the same attachment and writes to the same bytes. The input
 * is written to a file in a scratch directory.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "fuzz.h"
#include "rdmans/attach_plan.h"
#include "rdmans/cni_state.h"
#include "rdmans/util.h"

static void write_input(const char *path, const uint8_t *data, size_t size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size) || close(fd) < 0)
		abort();
}

static char *text_of(const char *dir, const char *name)
{
	struct rn_error err = { 0 };
	char path[128], *text = NULL;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FUZZ_ASSERT(rn_read_regular(path, 1 << 22, "state file", &text, NULL, &err) == 0,
		    "a written state file does not read: %s", err.msg);
	return text;
}

static bool bounded(const struct rn_cni_attachment *att)
{
	return att->plan.n_netdevs <= RN_ATTACH_MAX && att->plan.n_rdma <= RN_ATTACH_MAX &&
	       att->n_ips <= RN_CNI_IPS_MAX;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *dir = fuzz_scratch_dir();
	struct rn_cni_attachment att, again;
	struct rn_error err = { 0 };
	char path[128], *first, *second;
	int r;

	snprintf(path, sizeof(path), "%s/in", dir);
	write_input(path, data, size);
	r = rn_cni_attachment_read(dir, "in", &att, &err);
	if (r < 0) {
		FUZZ_ASSERT(err.msg[0], "refused without a message");
		FUZZ_ASSERT(bounded(&att), "a damaged file holds more than a plan can");
		FUZZ_ASSERT(r != -EBADMSG || strstr(err.msg, " is damaged: "),
			    "damage not told as such: %s", err.msg);
		rn_cni_attachment_free(&att);
		return 0;
	}
	FUZZ_ASSERT(bounded(&att), "a read file holds more than a plan can");
	FUZZ_ASSERT(rn_cni_attachment_write(dir, "out", &att, false, &err) == 0,
		    "what reads cannot be written: %s", err.msg);
	r = rn_cni_attachment_read(dir, "out", &again, &err);
	/* a file near the size limit may grow past it: a trailing '\' is written escaped */
	FUZZ_ASSERT(r == 0 || r == -EFBIG, "a written state does not read: %s", err.msg);
	if (r == 0) {
		FUZZ_ASSERT(again.plan.n_netdevs == att.plan.n_netdevs &&
				    again.plan.n_rdma == att.plan.n_rdma &&
				    again.plan.chained == att.plan.chained &&
				    strcmp(again.plan.bus_id, att.plan.bus_id) == 0 &&
				    again.n_ips == att.n_ips && again.n_nccl == att.n_nccl &&
				    again.n_unknown == att.n_unknown && again.phase == att.phase &&
				    strcmp(again.container_id, att.container_id) == 0,
			    "the attachment changed through a write");
		for (size_t i = 0; i < att.plan.n_rdma; i++)
			FUZZ_ASSERT(strcmp(att.plan.rdma[i], again.plan.rdma[i]) == 0,
				    "RDMA device %zu changed", i);
		FUZZ_ASSERT(rn_cni_attachment_write(dir, "again", &again, false, &err) == 0,
			    "what was written and read cannot be written: %s", err.msg);
		first = text_of(dir, "out");
		second = text_of(dir, "again");
		FUZZ_ASSERT(strcmp(first, second) == 0, "a second write changed the bytes");
		free(first);
		free(second);
	}
	rn_cni_attachment_free(&att);
	rn_cni_attachment_free(&again);
	return 0;
}
