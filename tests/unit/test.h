/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A minimal TAP producer for the unit suite (meson runs these with
 * protocol: 'tap'). Each TEST() is one test point; CHECK*() failures are
 * reported with file:line and mark the point "not ok".
 */
#ifndef RDMANS_TEST_H
#define RDMANS_TEST_H

#include <stdio.h>
#include <string.h>

struct rn_test {
	const char *name;
	void (*fn)(void);
};

extern int rn_test_failed;
/* Set by a test that could not run what it is about: its line says "# SKIP reason", never a plain ok. */
extern const char *rn_test_skip_reason;

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			printf("# %s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond);          \
			rn_test_failed = 1;                                                        \
		}                                                                                  \
	} while (0)

/* CHECK, and leave the test function when it failed (what follows depends on it). */
#define REQUIRE(cond)                                                                              \
	do {                                                                                       \
		CHECK(cond);                                                                       \
		if (rn_test_failed)                                                                \
			return;                                                                    \
	} while (0)

#define CHECK_INT(a, b)                                                                            \
	do {                                                                                       \
		long long _a = (long long)(a), _b = (long long)(b);                                \
		if (_a != _b) {                                                                    \
			printf("# %s:%d: %s == %lld, expected %lld\n", __FILE__, __LINE__, #a, _a, \
			       _b);                                                                \
			rn_test_failed = 1;                                                        \
		}                                                                                  \
	} while (0)

#define CHECK_STR(a, b)                                                                            \
	do {                                                                                       \
		const char *_a = (a), *_b = (b);                                                   \
		if (!_a || !_b || strcmp(_a, _b) != 0) {                                           \
			printf("# %s:%d: %s == \"%s\", expected \"%s\"\n", __FILE__, __LINE__, #a, \
			       _a ? _a : "(null)", _b ? _b : "(null)");                            \
			rn_test_failed = 1;                                                        \
		}                                                                                  \
	} while (0)

#define CHECK_CONTAINS(hay, needle)                                                                \
	do {                                                                                       \
		const char *_h = (hay), *_n = (needle);                                            \
		if (!_h || !strstr(_h, _n)) {                                                      \
			printf("# %s:%d: \"%s\" does not contain \"%s\"\n", __FILE__, __LINE__,    \
			       _h ? _h : "(null)", _n);                                            \
			rn_test_failed = 1;                                                        \
		}                                                                                  \
	} while (0)

/* Runs the table; returns the process exit status (0 only when every test passed). */
int rn_test_main(const struct rn_test *tests, size_t n);

#define RN_TEST_MAIN(...)                                                                          \
	int main(void)                                                                             \
	{                                                                                          \
		static const struct rn_test tests[] = { __VA_ARGS__ };                             \
		return rn_test_main(tests, sizeof(tests) / sizeof(tests[0]));                      \
	}

#define T(fn)                                                                                      \
	{                                                                                          \
#fn, fn                                                                            \
	}

#endif
