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
 * With $PC_SHIM_EVICT_BELOW set as well, the first pc_cachestat() call on
 * that file after the put-off call went out that starts at offset 0 and
 * covers less than the whole file first drops the file's first page with
 * POSIX_FADV_DONTNEED, as reclaim could between two polls. That is
 * restore's check that the pages below a poll's memo are still there: the
 * library's own cachestat calls (pc_warm()'s) do not go through the
 * exported pc_cachestat(); restore's eviction watch asks about the head
 * of a file while it warms, before the first sleep; and the pages its
 * polls ask about are missing ones, never the first page of a file up to
 * date. The page's eviction is checked (mincore) before it is reported.
 *
 * Restore reads small files through a map of them (its jobs_do_chunk()):
 * the victim's runs mapped with MAP_FIXED, then one madvise(MADV_WILLNEED)
 * over many files. The shim notes where the victim's runs are mapped, and
 * the first such madvise that covers them goes through for the rest of
 * its range only: the victim's pages there are dropped, as above. mmap
 * and madvise go to the kernel by syscall(2) (no dlsym(), which may
 * allocate, and so map, itself).
 *
 * With $PC_SHIM_MAP_FAIL, the victim's first MAP_FIXED mapping fails the
 * way 6.18 fails one whose file refuses it (sysfs, FUSE with direct_io):
 * ENODEV, and the range it was to replace left unmapped. With the value
 * "taken", another mapping (a page holding a magic number, as if another
 * thread's malloc got there first) then sits at the start of that hole;
 * at exit the shim says whether it is still there, intact.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <pagecache/pagecache.h>

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
 * page cache (off a multiple of the page size). */
static int all_resident(int fd, off64_t off, size_t len)
{
	unsigned char vec[1024];

	while (len) {
		size_t step = len < sizeof(vec) * 4096 ? len : sizeof(vec) * 4096;
		void *m = mmap(NULL, step, PROT_NONE, MAP_SHARED, fd, off);
		int all;

		if (m == MAP_FAILED)
			return 0;
		all = mincore(m, step, vec) == 0;
		for (size_t i = 0; all && i < (step + 4095) / 4096; i++)
			all = vec[i] & 1;
		munmap(m, step);
		if (!all)
			return 0;
		off += (off64_t)step;
		len -= step;
	}
	return 1;
}

int pc_cachestat(int fd, uint64_t offset, uint64_t length, struct pc_cachestat *out)
{
	int (*real)(int, uint64_t, uint64_t, struct pc_cachestat *) =
		(int (*)(int, uint64_t, uint64_t, struct pc_cachestat *))dlsym(RTLD_NEXT,
										"pc_cachestat");
	char path[4096];
	struct stat st;

	if (getenv("PC_SHIM_EVICT_BELOW") && __atomic_load_n(&issued, __ATOMIC_ACQUIRE) &&
	    !__atomic_load_n(&evicted, __ATOMIC_RELAXED) && offset == 0 && length &&
	    fstat(fd, &st) == 0 && length < (uint64_t)st.st_size &&
	    is_victim(fd, path, sizeof(path)) &&
	    !__atomic_exchange_n(&evicted, 1, __ATOMIC_RELAXED)) {
		posix_fadvise(fd, 0, 4096, POSIX_FADV_DONTNEED);
		/* a large folio over the first page stays: nothing evicted */
		if (all_resident(fd, 0, 4096))
			fprintf(stderr, "dropra-shim: could not evict the first page of %s\n", path);
		else
			fprintf(stderr, "dropra-shim: evicted the first page of %s before "
				"pc_cachestat(0, %llu)\n", path, (unsigned long long)length);
	}
	return real(fd, offset, length, out);
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
		int dfd = getenv("PC_SHIM_DEFER") ? dup(fd) : -1;

		if (dfd >= 0) {
			/* restore's warming runs on one thread for one file */
			deferred_off = offset;
			deferred_count = count;
			__atomic_store_n(&deferred_fd, dfd, __ATOMIC_RELEASE);
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

/* The victim's runs as restore mapped them with MAP_FIXED (the first 8). */
#define VICTIM_MAPS 8
static uintptr_t victim_lo[VICTIM_MAPS], victim_hi[VICTIM_MAPS];
static int victim_maps;
static int victim_ready[VICTIM_MAPS];
static int map_failed;
static uint64_t *sentinel;

#define SENTINEL_MAGIC UINT64_C(0x70636d6170686f6c)

/* At exit: whether the mapping put in the hole is there, intact. */
__attribute__((destructor)) static void sentinel_check(void)
{
	unsigned char vec;

	if (!sentinel)
		return;
	if (mincore(sentinel, 4096, &vec) < 0)
		fprintf(stderr, "dropra-shim: the mapping in the hole is gone\n");
	else if (*sentinel != SENTINEL_MAGIC)
		fprintf(stderr, "dropra-shim: the mapping in the hole was replaced\n");
	else
		fprintf(stderr, "dropra-shim: the mapping in the hole is intact\n");
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	const char *fail = getenv("PC_SHIM_MAP_FAIL");
	char path[4096];
	long ret;

	if (fail && fd >= 0 && (flags & MAP_FIXED) && !(flags & MAP_FIXED_NOREPLACE) &&
	    is_victim(fd, path, sizeof(path)) &&
	    !__atomic_exchange_n(&map_failed, 1, __ATOMIC_RELAXED)) {
		syscall(SYS_munmap, addr, len);
		if (strcmp(fail, "taken") == 0) {
			ret = syscall(SYS_mmap, addr, 4096, PROT_READ | PROT_WRITE,
				      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
			if (ret != -1) {
				sentinel = (uint64_t *)ret;
				*sentinel = SENTINEL_MAGIC;
			}
		}
		fprintf(stderr, "dropra-shim: refused mmap(%s) with ENODEV, its range unmapped%s\n",
			path, sentinel ? ", another mapping there" : "");
		errno = ENODEV;
		return MAP_FAILED;
	}
	ret = syscall(SYS_mmap, addr, len, prot, flags, fd, off);
	if (ret == -1)
		return MAP_FAILED; /* errno set */
	if (fd >= 0 && (flags & MAP_FIXED) && is_victim(fd, path, sizeof(path))) {
		int i = __atomic_fetch_add(&victim_maps, 1, __ATOMIC_RELAXED);

		if (i < VICTIM_MAPS) {
			victim_lo[i] = (uintptr_t)ret;
			victim_hi[i] = (uintptr_t)ret + len;
			__atomic_store_n(&victim_ready[i], 1, __ATOMIC_RELEASE);
		}
	}
	return (void *)ret;
}

int madvise(void *addr, size_t len, int advice)
{
	uintptr_t lo = (uintptr_t)addr, hi = lo + len, at = lo;
	int n = __atomic_load_n(&victim_maps, __ATOMIC_RELAXED), hit = 0, ret = 0;

	if (advice != MADV_WILLNEED || __atomic_load_n(&dropped, __ATOMIC_RELAXED))
		return (int)syscall(SYS_madvise, addr, len, advice);
	n = n < VICTIM_MAPS ? n : VICTIM_MAPS;
	for (int i = 0; i < n; i++)
		if (__atomic_load_n(&victim_ready[i], __ATOMIC_ACQUIRE))
			hit |= victim_lo[i] < hi && victim_hi[i] > lo;
	if (!hit || __atomic_exchange_n(&dropped, 1, __ATOMIC_RELAXED))
		return (int)syscall(SYS_madvise, addr, len, advice);
	/* the range in pieces around the victim's runs (in address order:
	 * restore maps a file's runs one after the other) */
	for (int i = 0; i < n; i++) {
		if (!__atomic_load_n(&victim_ready[i], __ATOMIC_ACQUIRE) ||
		    victim_hi[i] <= lo || victim_lo[i] >= hi)
			continue;
		if (victim_lo[i] > at && syscall(SYS_madvise, (void *)at, victim_lo[i] - at,
						 advice) < 0)
			ret = -1;
		fprintf(stderr, "dropra-shim: dropped madvise(%#lx, %zu) of the victim's run\n",
			(unsigned long)victim_lo[i], (size_t)(victim_hi[i] - victim_lo[i]));
		at = victim_hi[i] > at ? victim_hi[i] : at;
	}
	if (at < hi && syscall(SYS_madvise, (void *)at, hi - at, advice) < 0)
		ret = -1;
	return ret;
}
