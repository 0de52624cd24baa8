/* SPDX-License-Identifier: MIT */
/*
 * fuzz-path-check: pc_snapshot_path_check() on arbitrary bytes (a
 * NUL-terminated copy of the input: the string ends at its first NUL),
 * compared with an independent reading of its contract: -EINVAL when
 * empty or absolute, -ENAMETOOLONG past PC_SNAPSHOT_PATH_MAX bytes,
 * -EINVAL when any '/'-separated component is "..", else 0.
 */
#include <errno.h>
#include <string.h>

#include "pagecache/pagecache.h"
#include "fuzz.h"

static int expected(const char *s)
{
	size_t len = strlen(s), start = 0;

	if (len == 0 || s[0] == '/')
		return -EINVAL;
	if (len > PC_SNAPSHOT_PATH_MAX)
		return -ENAMETOOLONG;
	for (size_t i = 0; i <= len; i++) {
		if (i < len && s[i] != '/')
			continue;
		if (i - start == 2 && s[start] == '.' && s[start + 1] == '.')
			return -EINVAL;
		start = i + 1;
	}
	return 0;
}

int pc_fuzz_path_check(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	int ret;

	FUZZ_CHECK(s);
	if (size)
		memcpy(s, data, size);
	s[size] = '\0';
	ret = pc_snapshot_path_check(s);
	if (ret != expected(s)) {
		fprintf(stderr, "pc_snapshot_path_check: %d, expected %d\n", ret, expected(s));
		FUZZ_CHECK(ret == expected(s));
	}
	free(s);
	return ret;
}

#ifndef PC_FUZZ_REPLAY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	pc_fuzz_path_check(data, size);
	return 0;
}
#endif
