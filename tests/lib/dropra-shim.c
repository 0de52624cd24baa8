/* SPDX-License-Identifier: MIT */
/*
 * LD_PRELOAD shim for test-snapshot-cli.py: a readahead(2) that drops the
 * first call on a file whose path ends in $PC_SHIM_DROP_NAME, returning 0
 * and reading nothing, as the kernel does when it cannot allocate the
 * pages (readahead gives up silently under memory pressure). Those pages
 * never arrive: restore must see that none is on its way and read them
 * again. With $PC_SHIM_DROP_FROM (bytes), the first call at or past that
 * offset is dropped instead. Every other call goes through unchanged.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int dropped; /* calls dropped so far (at most one) */

ssize_t readahead(int fd, off64_t offset, size_t count)
{
	ssize_t (*real)(int, off64_t, size_t) =
		(ssize_t (*)(int, off64_t, size_t))dlsym(RTLD_NEXT, "readahead");
	const char *name = getenv("PC_SHIM_DROP_NAME");
	const char *from = getenv("PC_SHIM_DROP_FROM");
	char proc[64], path[4096];
	ssize_t n;

	if (name && !__atomic_load_n(&dropped, __ATOMIC_RELAXED) &&
	    (!from || offset >= (off64_t)strtoll(from, NULL, 10))) {
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
		n = readlink(proc, path, sizeof(path) - 1);
		if (n > 0) {
			size_t len = strlen(name);

			path[n] = '\0';
			if ((size_t)n >= len && strcmp(path + n - len, name) == 0 &&
			    !__atomic_exchange_n(&dropped, 1, __ATOMIC_RELAXED)) {
				fprintf(stderr, "dropra-shim: dropped readahead(%s, %lld, %zu)\n",
					path, (long long)offset, count);
				return 0;
			}
		}
	}
	return real(fd, offset, count);
}
