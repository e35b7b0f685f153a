// SPDX-License-Identifier: Apache-2.0
/*
 * CNI_ARGS ("K8S_POD_NAMESPACE=ns;K8S_POD_NAME=n;IgnoreUnknown=1") as both
 * plugins read it (rn_cni_args_parse, rdmans/cni_protocol.h): no overrun, a
 * refusal is EINVAL with a message, and the parser agrees with the spec's
 * reading done here the plain way: pairs split at ';', a key up to the
 * first '=', the last value of a key wins. rdma-netns records the pod in
 * its state, rdma-netns-ipam in its address records; GC and `rdmans ipam`
 * join them, so both must read the same pod from the same text.
 */
#include <errno.h>

#include "fuzz.h"
#include "rdmans/cni_protocol.h"

static const struct {
	const char *key;
	size_t size;
} keys[] = {
	{ "K8S_POD_NAMESPACE", 256 },
	{ "K8S_POD_NAME", 256 },
	{ "K8S_POD_UID", 128 },
	{ "K8S_POD_INFRA_CONTAINER_ID", 128 },
};

/* What the parser must do with args: 0 and the last value of each key, or -EINVAL. */
static int expect(const char *args, char values[4][8200])
{
	char *copy = strdup(args), *pair, *rest;
	int r = 0;

	if (!copy)
		abort();
	for (size_t k = 0; k < 4; k++)
		values[k][0] = '\0';
	for (rest = copy; (pair = strsep(&rest, ";"));) {
		char *eq = strchr(pair, '=');

		if (!*pair)
			continue;
		if (!eq || eq == pair) {
			r = -EINVAL;
			break;
		}
		*eq = '\0';
		for (size_t k = 0; k < 4; k++) {
			if (strcmp(pair, keys[k].key) != 0)
				continue;
			if (strlen(eq + 1) >= keys[k].size || strchr(eq + 1, '\n')) {
				r = -EINVAL;
				goto out;
			}
			snprintf(values[k], sizeof(values[k]), "%s", eq + 1);
		}
	}
out:
	free(copy);
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char want[4][8200];
	char *args = fuzz_str(data, size);
	struct rn_cni_args got;
	struct rn_error err = { 0 };
	int r = rn_cni_args_parse(args, &got, &err);
	const char *fields[4] = { got.pod_namespace, got.pod_name, got.pod_uid, got.infra_id };
	int w = expect(args, want);

	FUZZ_ASSERT(r == 0 || (r == -EINVAL && err.code == EINVAL && err.msg[0]),
		    "refused with %d without EINVAL and a message", r);
	FUZZ_ASSERT(r == w, "\"%s\": the parser says %d, the spec's reading %d", args, r, w);
	for (size_t k = 0; r == 0 && k < 4; k++) {
		FUZZ_ASSERT(strlen(fields[k]) < keys[k].size, "%s overran", keys[k].key);
		FUZZ_ASSERT(!strchr(fields[k], '\n'), "%s with a newline was taken", keys[k].key);
		FUZZ_ASSERT(strcmp(fields[k], want[k]) == 0, "\"%s\": %s read as '%s', not '%s'",
			    args, keys[k].key, fields[k], want[k]);
	}
	free(args);
	return 0;
}
