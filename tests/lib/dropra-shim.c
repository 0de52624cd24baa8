/* SPDX-License-Identifier: MIT */
/*
 * LD_PRELOAD shim for test-snapshot-cli.py: a readahead(2) that drops the
 * first call on a file whose path ends in $PC_SHIM_DROP_NAME, returning 0
 * and reading nothing, as the kernel does when it cannot allocate the
 * pages (readahead gives up silently under memory pressure). Those pages
 * never arrive: restore must see that none is on its way and read them
 * again. With $PC_SHIM_DROP_FROM (bytes), the first call at or past that
 * offset is dropped instead. Every other call goes through unchanged.
 *
 * With $PC_SHIM_EVICT_BELOW (bytes), the first cachestat(2) on that file
 * that starts at offset 0 and covers at least that many bytes but less
 * than the whole file first drops the file's first page with
 * POSIX_FADV_DONTNEED, as reclaim could between two polls. Given more
 * than pc_warm()'s window (64 MiB, its cachestat of a batch from 0 covers
 * at most that), the call is restore's check that the pages below a
 * poll's memo are still there.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NR_CACHESTAT 451

static int dropped; /* calls dropped so far (at most one) */
static int evicted; /* pages dropped before a cachestat (at most one) */

/* Whether fd's path ends in $PC_SHIM_DROP_NAME; its path in path. */
static int is_victim(int fd, char *path, size_t size)
{
	const char *name = getenv("PC_SHIM_DROP_NAME");
	char proc[64];
	ssize_t n;
	size_t len;

	if (!name)
		return 0;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	n = readlink(proc, path, size - 1);
	if (n <= 0)
		return 0;
	path[n] = '\0';
	len = strlen(name);
	return (size_t)n >= len && strcmp(path + n - len, name) == 0;
}

/* glibc's syscall(): the number and up to six arguments, as longs */
long syscall(long nr, ...)
{
	long (*real)(long, ...) = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
	const char *below = getenv("PC_SHIM_EVICT_BELOW");
	struct range {
		uint64_t off, len;
	} *r;
	char path[4096];
	struct stat st;
	long a[6];
	va_list ap;

	va_start(ap, nr);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	r = (struct range *)a[1]; /* read only for cachestat's number */
	if (nr == NR_CACHESTAT && below && r && !__atomic_load_n(&evicted, __ATOMIC_RELAXED) &&
	    r->off == 0 && r->len >= strtoull(below, NULL, 10) &&
	    fstat((int)a[0], &st) == 0 && r->len < (uint64_t)st.st_size &&
	    is_victim((int)a[0], path, sizeof(path)) &&
	    !__atomic_exchange_n(&evicted, 1, __ATOMIC_RELAXED)) {
		posix_fadvise((int)a[0], 0, 4096, POSIX_FADV_DONTNEED);
		fprintf(stderr, "dropra-shim: evicted the first page of %s before cachestat(0, %llu)\n",
			path, (unsigned long long)r->len);
	}
	return real(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

ssize_t readahead(int fd, off64_t offset, size_t count)
{
	ssize_t (*real)(int, off64_t, size_t) =
		(ssize_t (*)(int, off64_t, size_t))dlsym(RTLD_NEXT, "readahead");
	const char *from = getenv("PC_SHIM_DROP_FROM");
	char path[4096];

	if (!__atomic_load_n(&dropped, __ATOMIC_RELAXED) &&
	    (!from || offset >= (off64_t)strtoll(from, NULL, 10)) &&
	    is_victim(fd, path, sizeof(path)) &&
	    !__atomic_exchange_n(&dropped, 1, __ATOMIC_RELAXED)) {
		fprintf(stderr, "dropra-shim: dropped readahead(%s, %lld, %zu)\n", path,
			(long long)offset, count);
		return 0;
	}
	return real(fd, offset, count);
}
