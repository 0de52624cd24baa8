/* SPDX-License-Identifier: MIT */
/*
 * LD_PRELOAD shim for test-snapshot-cli.py: a readahead(2) that drops the
 * first call on a file whose path ends in $PC_SHIM_DROP_NAME, returning 0
 * and reading nothing, as the kernel does when it cannot allocate the
 * pages (readahead gives up silently under memory pressure). Those pages
 * never arrive: restore must see that none is on its way and read them
 * again. With $PC_SHIM_DROP_FROM (bytes), the first call at or past that
 * offset is dropped instead. Every other call goes through unchanged.
 * With $PC_SHIM_DEFER set, the call is not dropped but put off until the
 * next nanosleep() (restore's first sleep between two polls), which then
 * waits until its pages are up to date (5 s at most): the first poll finds
 * them missing, the next one finds them there.
 *
 * With $PC_SHIM_EVICT_BELOW set as well, the first cachestat(2) on that
 * file after the put-off call went out that starts at offset 0 and covers
 * less than the whole file first drops the file's first page with
 * POSIX_FADV_DONTNEED, as reclaim could between two polls. That is
 * restore's check that the pages below a poll's memo are still there: its
 * eviction watch's cachestat of the head of a file comes while it warms,
 * before the first sleep, and the pages its polls ask cachestat about are
 * missing ones, never the first page of a file up to date.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define NR_CACHESTAT 451

static int dropped; /* calls dropped so far (at most one) */
static int deferred_fd = -1; /* a dup of the put-off call's fd, or -1 */
static off64_t deferred_off;
static size_t deferred_count;
static int evicted; /* pages dropped before a cachestat (at most one) */
static int issued; /* the put-off call went out */

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

/* Whether the pages of fd in [off, off + len) are all up to date in the
 * page cache (off a multiple of the page size, len at most 4 MiB). */
static int all_resident(int fd, off64_t off, size_t len)
{
	unsigned char vec[1024];
	size_t n = (len + 4095) / 4096;
	int all = 1;
	void *m;

	if (n > sizeof(vec))
		return 0;
	m = mmap(NULL, len, PROT_NONE, MAP_SHARED, fd, off);
	if (m == MAP_FAILED)
		return 0;
	if (mincore(m, len, vec) < 0)
		all = 0;
	for (size_t i = 0; all && i < n; i++)
		all = vec[i] & 1;
	munmap(m, len);
	return all;
}

/* glibc's syscall(): the number and up to six arguments, as longs */
long syscall(long nr, ...)
{
	long (*real)(long, ...) = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
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
	if (nr == NR_CACHESTAT && getenv("PC_SHIM_EVICT_BELOW") && r &&
	    __atomic_load_n(&issued, __ATOMIC_ACQUIRE) &&
	    !__atomic_load_n(&evicted, __ATOMIC_RELAXED) && r->off == 0 &&
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
		if (getenv("PC_SHIM_DEFER")) {
			/* restore's warming runs on one thread for one file */
			deferred_off = offset;
			deferred_count = count;
			__atomic_store_n(&deferred_fd, dup(fd), __ATOMIC_RELEASE);
			fprintf(stderr, "dropra-shim: put off readahead(%s, %lld, %zu)\n", path,
				(long long)offset, count);
			return 0;
		}
		fprintf(stderr, "dropra-shim: dropped readahead(%s, %lld, %zu)\n", path,
			(long long)offset, count);
		return 0;
	}
	return real(fd, offset, count);
}

int nanosleep(const struct timespec *req, struct timespec *rem)
{
	int (*real)(const struct timespec *, struct timespec *) =
		(int (*)(const struct timespec *, struct timespec *))dlsym(RTLD_NEXT, "nanosleep");
	ssize_t (*real_ra)(int, off64_t, size_t) =
		(ssize_t (*)(int, off64_t, size_t))dlsym(RTLD_NEXT, "readahead");
	int fd = __atomic_exchange_n(&deferred_fd, -1, __ATOMIC_ACQ_REL);

	if (fd >= 0) {
		struct timespec tick = { 0, 1000000 };

		real_ra(fd, deferred_off, deferred_count);
		for (int i = 0; i < 5000 && !all_resident(fd, deferred_off, deferred_count); i++)
			real(&tick, NULL);
		close(fd);
		__atomic_store_n(&issued, 1, __ATOMIC_RELEASE);
		fprintf(stderr, "dropra-shim: readahead(%lld, %zu) issued at last\n",
			(long long)deferred_off, deferred_count);
	}
	return real(req, rem);
}
