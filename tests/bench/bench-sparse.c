/* SPDX-License-Identifier: MIT */
/*
 * bench-sparse: pc_residency() on a sparse 1 TiB file (ftruncate, no data)
 * with nothing of it cached, with and without PC_RES_COUNT_ONLY (issue 7:
 * bounded memory, one bit per page plus a fixed window, and a time in
 * milliseconds).
 *
 * Environment:
 *   PC_BENCH_DIR            where the file goes (default /var/tmp); a fresh
 *                           directory is made in it and removed at exit
 *   PC_BENCH_SPARSE_ROUNDS  timed calls per case after the first (default 9)
 *   PC_BENCH_SPARSE_GIB     the file's size in GiB (default 1024)
 *
 * Each case runs in a child process of its own, so that its peak RSS
 * (getrusage ru_maxrss) is its own; the first call of a process also runs
 * the library's one-time detection and is reported apart ("first"). Output:
 *   case=<name> files=1 seconds=<median> files_per_s=<1/median> peak_rss_mib=<m>
 * and '#' lines with the details. Exit status 1 when a median reaches
 * 100 ms, when the calls grow the peak RSS by more than the bitmap (one bit
 * per page; none with PC_RES_COUNT_ONLY) plus 16 MiB, or when the answer is
 * wrong (pages other than size / page size, or resident pages in a file
 * that has none).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench-util.h"
#include "pagecache/pagecache.h"

#define MIB (UINT64_C(1) << 20)
#define GIB (UINT64_C(1) << 30)
#define MAX_ROUNDS 101
#define LIMIT_SECONDS 0.1
#define SLACK_BYTES (16 * MIB) /* the window, the result, libc's arenas */

static const char *file_path;

/* The peak RSS of this process so far, in bytes. */
static uint64_t peak_rss(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru) < 0)
		return 0;
	return (uint64_t)ru.ru_maxrss * 1024;
}

static uint64_t env_u64(const char *name, uint64_t def, uint64_t min, uint64_t max)
{
	const char *s = getenv(name);
	char *end;
	unsigned long long v;

	if (!s || !*s)
		return def;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v < min || v > max) {
		fprintf(stderr, "bench-sparse: %s must be %llu to %llu\n", name,
			(unsigned long long)min, (unsigned long long)max);
		exit(2);
	}
	return v;
}

/* One call, checked; its time in seconds, or a negative value after a message. */
static double one_call(int fd, unsigned int flags, uint64_t want_pages)
{
	struct pc_residency *r = NULL;
	double t0, t1;
	int ret;

	t0 = bench_now();
	ret = pc_residency(fd, 0, 0, flags, &r);
	t1 = bench_now();
	if (ret < 0) {
		fprintf(stderr, "bench-sparse: pc_residency: %s\n", strerror(-ret));
		return -1;
	}
	if (pc_residency_npages(r) != want_pages ||
	    (pc_residency_quality(r) != PC_QUALITY_UNKNOWN && pc_residency_resident(r) != 0)) {
		fprintf(stderr, "bench-sparse: wrong answer: %llu of %llu pages resident (%s, %s); "
			"want 0 of %llu\n",
			(unsigned long long)pc_residency_resident(r),
			(unsigned long long)pc_residency_npages(r),
			pc_quality_name(pc_residency_quality(r)),
			pc_source_name(pc_residency_source(r)),
			(unsigned long long)want_pages);
		pc_residency_free(r);
		return -1;
	}
	pc_residency_free(r);
	return t1 - t0;
}

/* A child's work: the calls of one case, its lines, exit status 0 or 1. */
static int run_case(const char *name, int fd, unsigned int flags, uint64_t npages,
		    unsigned int rounds)
{
	double t[MAX_ROUNDS], first, median;
	uint64_t base, peak, allowed;
	struct pc_residency *r = NULL;
	int status = 0, ret;

	/* nothing of it in the cache (there is nothing to cache, but say so) */
	ret = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	if (ret)
		fprintf(stderr, "bench-sparse: posix_fadvise: %s\n", strerror(ret));
	base = peak_rss();
	first = one_call(fd, flags, npages);
	if (first < 0)
		return 1;
	for (unsigned int i = 0; i < rounds; i++) {
		t[i] = one_call(fd, flags, npages);
		if (t[i] < 0)
			return 1;
	}
	peak = peak_rss();
	qsort(t, rounds, sizeof(t[0]), bench_cmp_double);
	median = rounds % 2 ? t[rounds / 2] : (t[rounds / 2 - 1] + t[rounds / 2]) / 2;
	allowed = SLACK_BYTES + ((flags & PC_RES_COUNT_ONLY) ? 0 : (npages + 7) / 8);

	/* the source and quality, from one more (untimed) call */
	if (pc_residency(fd, 0, 0, flags, &r) == 0)
		printf("# %s: quality=%s source=%s resident=%llu of %llu pages\n", name,
		       pc_quality_name(pc_residency_quality(r)),
		       pc_source_name(pc_residency_source(r)),
		       (unsigned long long)pc_residency_resident(r),
		       (unsigned long long)pc_residency_npages(r));
	pc_residency_free(r);
	printf("# %s: first call %.3f ms (with the one-time detection); %u more: "
	       "min %.3f ms, median %.3f ms, max %.3f ms\n", name, first * 1e3, rounds,
	       t[0] * 1e3, median * 1e3, t[rounds - 1] * 1e3);
	printf("# %s: peak RSS %.1f MiB, %.1f MiB before the first call: grew %.1f MiB "
	       "(allowed %.1f MiB: %s%.0f MiB)\n", name, (double)peak / MIB,
	       (double)base / MIB, (double)(peak - base) / MIB, (double)allowed / MIB,
	       (flags & PC_RES_COUNT_ONLY) ? "no bitmap + " : "the bitmap + ",
	       (double)SLACK_BYTES / MIB);
	printf("case=%s files=1 seconds=%.6f files_per_s=%.1f peak_rss_mib=%.1f\n", name,
	       median, median > 0 ? 1 / median : 0.0, (double)peak / MIB);
	if (median >= LIMIT_SECONDS) {
		printf("# %s: FAILED: median %.3f ms, wanted < %.0f ms\n", name, median * 1e3,
		       LIMIT_SECONDS * 1e3);
		status = 1;
	}
	if (peak - base > allowed) {
		printf("# %s: FAILED: the calls grew the peak RSS by %.1f MiB, allowed %.1f MiB\n",
		       name, (double)(peak - base) / MIB, (double)allowed / MIB);
		status = 1;
	}
	fflush(stdout);
	return status;
}

int main(void)
{
	static const struct {
		const char *name;
		unsigned int flags;
	} cases[] = {
		{ "sparse_evicted", 0 },
		{ "sparse_evicted_count", PC_RES_COUNT_ONLY },
	};
	uint64_t size, npages, ps;
	unsigned int rounds;
	int fd, status = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	rounds = (unsigned int)env_u64("PC_BENCH_SPARSE_ROUNDS", 9, 1, MAX_ROUNDS);
	size = env_u64("PC_BENCH_SPARSE_GIB", 1024, 1, 16 * 1024) * GIB;
	ps = (uint64_t)pc_page_size();
	npages = size / ps;
	file_path = bench_scratch("pc-bench-sparse", "sparse", 0700);
	if (!file_path) {
		fprintf(stderr, "bench-sparse: a scratch directory in PC_BENCH_DIR: %s\n",
			strerror(errno));
		return 1;
	}
	fd = open(file_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		fprintf(stderr, "bench-sparse: %s: %s\n", file_path, strerror(errno));
		return 1;
	}
	if (ftruncate(fd, (off_t)size) < 0) {
		fprintf(stderr, "bench-sparse: ftruncate %s to %llu GiB: %s\n", file_path,
			(unsigned long long)(size / GIB), strerror(errno));
		return 1;
	}
	printf("# bench-sparse: libpagecache %s, %s: %llu GiB sparse, %llu pages of %llu "
	       "bytes, bitmap %.1f MiB, %u rounds\n", pc_version(), file_path,
	       (unsigned long long)(size / GIB), (unsigned long long)npages,
	       (unsigned long long)ps, (double)((npages + 7) / 8) / MIB, rounds);
	fflush(stdout);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		pid_t pid = fork();
		int ws;

		if (pid < 0) {
			fprintf(stderr, "bench-sparse: fork: %s\n", strerror(errno));
			return 1;
		}
		if (pid == 0)
			_exit(run_case(cases[i].name, fd, cases[i].flags, npages, rounds));
		if (waitpid(pid, &ws, 0) < 0 || !WIFEXITED(ws) || WEXITSTATUS(ws) != 0)
			status = 1;
	}
	close(fd);
	return status;
}
