// SPDX-License-Identifier: Apache-2.0
#include "test.h"

int rn_test_failed;
const char *rn_test_skip_reason;

int rn_test_main(const struct rn_test *tests, size_t n)
{
	int failures = 0;

	printf("1..%zu\n", n);
	for (size_t i = 0; i < n; i++) {
		rn_test_failed = 0;
		rn_test_skip_reason = NULL;
		tests[i].fn();
		printf("%s %zu - %s", rn_test_failed ? "not ok" : "ok", i + 1, tests[i].name);
		if (rn_test_skip_reason && !rn_test_failed)
			printf(" # SKIP %s", rn_test_skip_reason);
		putchar('\n');
		failures += rn_test_failed;
		fflush(stdout);
	}
	return failures ? 1 : 0;
}
