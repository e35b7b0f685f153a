/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers for the libFuzzer targets of tests/fuzz (built with -Dfuzz=true,
 * clang only; tools/fuzz.sh TARGET SECONDS runs one). A broken property
 * aborts, so libFuzzer keeps the input as a crash.
 */
#ifndef RDMANS_FUZZ_H
#define RDMANS_FUZZ_H

#include <ftw.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define FUZZ_ASSERT(cond, ...)                                                                     \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: property broken: %s: ", __FILE__, __LINE__,        \
				#cond);                                                            \
			fprintf(stderr, __VA_ARGS__);                                              \
			fputc('\n', stderr);                                                       \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

/* data as a NUL-terminated string (cut at its first NUL); free() it. */
static inline char *fuzz_str(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (!s)
		abort();
	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

/* The next field of data, up to a byte `sep` (not included); NULL when none is left. */
static inline char *fuzz_field(const uint8_t **data, size_t *size, uint8_t sep)
{
	const uint8_t *end;
	size_t n;
	char *s;

	if (*size == 0)
		return NULL;
	end = memchr(*data, sep, *size);
	n = end ? (size_t)(end - *data) : *size;
	s = fuzz_str(*data, n);
	*data += n + (end ? 1 : 0);
	*size -= n + (end ? 1 : 0);
	return s;
}

static inline int fuzz_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)remove(path);
	return 0;
}

static char fuzz_scratch[64];

static inline void fuzz_scratch_remove(void)
{
	(void)nftw(fuzz_scratch, fuzz_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* A scratch directory of this process (in /dev/shm when there is one), made once, removed at exit. */
static inline const char *fuzz_scratch_dir(void)
{
	char *dir = fuzz_scratch;

	if (!dir[0]) {
		snprintf(dir, sizeof(fuzz_scratch), "/dev/shm/rdmans-fuzz-XXXXXX");
		if (!mkdtemp(dir)) {
			snprintf(dir, sizeof(fuzz_scratch), "/tmp/rdmans-fuzz-XXXXXX");
			if (!mkdtemp(dir))
				abort();
		}
		atexit(fuzz_scratch_remove);
	}
	return dir;
}

#endif
