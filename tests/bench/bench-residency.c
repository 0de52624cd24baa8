/* SPDX-License-Identifier: MIT */
/*
 * bench-residency: pc_residency() against one plain mmap+mincore pass over
 * the same file, and the io_uring prober against a preadv2(RWF_NOWAIT) loop.
 *
 * Environment:
 *   PC_BENCH_DIR          where the test file goes (default: a fresh
 *                         directory under /var/tmp, removed at exit)
 *   PC_BENCH_MB           file size in MiB (default 4096; 256 for quick runs)
 *   PC_BENCH_ROUNDS       rounds per case, medians reported (default 9)
 *   PC_BENCH_PROBE_PAGES  pages per prober pass (default 16384)
 *   PC_BENCH_CASES        comma-separated subset of the cases to run
 *
 * Each case sets its residency pattern up right before it is measured (idle
 * caches fade under background reclaim, doc/kernels.md section 7); the two sides
 * run alternated in one process, the order swapped every round. Output: one
 * line per case,
 *   case=<name> ratio=<x> ours_ns_per_page=<n> mincore_ns_per_page=<n>
 *   case=prober_<name> ratio=<x> ours_ns_per_page=<n> preadv2_ns_per_page=<n>
 * (ratio = ours / theirs, medians), plus detail lines starting with '#'.
 *
 * Correctness is checked on the way: each round takes an untimed mincore
 * snapshot before and after the timed pair; a page where pc_residency's
 * bitmap disagrees with the timed mincore pass while all three mincore
 * views agree is an error (exit status 1); a disagreement on a page whose
 * state changed during the round is drift, reported but allowed.
 * Exit status 77 when the directory is on tmpfs (eviction does not work).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "pagecache/pagecache.h"

#ifndef RWF_NOWAIT
#define RWF_NOWAIT 0x00000008
#endif

#define MIB (UINT64_C(1) << 20)
#define IO_CHUNK (8 * MIB)
#define MAX_ROUNDS 101

/* Targets from issue 3 (ours / mincore); the lead's to reach, printed here. */
struct bench_case {
	const char *name;
	unsigned int flags;
	double target;
};

static const struct bench_case cases[] = {
	{ "cached", 0, 0.6 },
	{ "count_cached", PC_RES_COUNT_ONLY, 0.6 },
	{ "evicted", 0, 0.05 },
	{ "alt64k", 0, 1.1 },
	{ "altpage", 0, 1.1 },
};

static const char *const prober_cases[] = { "cached", "altpage" };

/* Cleaned up at exit and on SIGINT/SIGTERM/SIGHUP: a 4 GiB leftover hurts. */
static char file_path[4200];
static char dir_path[4000];
static int own_dir;

static uint64_t ps;        /* page size */
static uint64_t file_size; /* bytes */
static uint64_t npages;
static unsigned int rounds = 9;
static uint64_t probe_pages = 16384;
static const char *case_filter;
static char *io_buf;       /* IO_CHUNK bytes for writing and reading the file */
static int failures;

static void cleanup(void)
{
	if (file_path[0])
		unlink(file_path);
	if (own_dir && dir_path[0])
		rmdir(dir_path);
}

static void on_signal(int sig)
{
	cleanup(); /* unlink and rmdir are async-signal-safe */
	signal(sig, SIG_DFL);
	raise(sig);
}

static void __attribute__((noreturn, format(printf, 1, 2))) die(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "bench-residency: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(1);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CPU time of this thread: other load on the machine does not inflate it. */
static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A timed section: wall-clock ns returned by timer_stop(), CPU ns in *cpu. */
struct timer {
	uint64_t wall, cpu;
};

static struct timer timer_start(void)
{
	struct timer t;

	t.cpu = cpu_ns();
	t.wall = now_ns();
	return t;
}

static uint64_t timer_stop(struct timer t, uint64_t *cpu)
{
	uint64_t wall = now_ns();

	if (cpu)
		*cpu = cpu_ns() - t.cpu;
	return wall - t.wall;
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
	if (errno || *end || v < min || v > max)
		die("%s=%s: expected an integer in %llu..%llu", name, s,
		    (unsigned long long)min, (unsigned long long)max);
	return v;
}

static int case_wanted(const char *name)
{
	size_t len = strlen(name);
	const char *p = case_filter;

	if (!p || !*p)
		return 1;
	while (*p) {
		const char *comma = strchr(p, ',');
		size_t n = comma ? (size_t)(comma - p) : strlen(p);

		if (n == len && strncmp(p, name, n) == 0)
			return 1;
		p += n + (comma != NULL);
	}
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t median(const uint64_t *v, unsigned int n)
{
	uint64_t s[MAX_ROUNDS];

	memcpy(s, v, n * sizeof(*v));
	qsort(s, n, sizeof(*s), cmp_u64);
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/*
 * Three views that other load on the machine disturbs less than the ratio
 * of medians: the median of each round's own ratio (both sides ran back to
 * back), the ratio of the fastest rounds, and the ratio of median thread
 * CPU times (time spent preempted is left out). On the detail line.
 */
static void print_spread(const uint64_t *ours, const uint64_t *theirs,
			 const uint64_t *ours_cpu, const uint64_t *theirs_cpu)
{
	double r[MAX_ROUNDS];
	uint64_t min_o = UINT64_MAX, min_t = UINT64_MAX;

	for (unsigned int i = 0; i < rounds; i++) {
		r[i] = (double)ours[i] / (double)(theirs[i] ? theirs[i] : 1);
		min_o = ours[i] < min_o ? ours[i] : min_o;
		min_t = theirs[i] < min_t ? theirs[i] : min_t;
	}
	qsort(r, rounds, sizeof(*r), cmp_double);
	printf(" paired_ratio_median=%.3f min_ratio=%.3f cpu_ratio=%.3f",
	       rounds % 2 ? r[rounds / 2] : (r[rounds / 2 - 1] + r[rounds / 2]) / 2,
	       (double)min_o / (double)(min_t ? min_t : 1),
	       (double)median(ours_cpu, rounds) / (double)(median(theirs_cpu, rounds) ?: 1));
}

/* Other load skews wall-clock numbers: say how much there was. */
static void print_loadavg(const char *when)
{
	char buf[128] = "";
	FILE *f = fopen("/proc/loadavg", "re");

	if (f) {
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = '\0';
		fclose(f);
	}
	buf[strcspn(buf, "\n")] = '\0';
	printf("# loadavg %s: %s (%ld cpus online)\n", when, buf[0] ? buf : "unknown",
	       sysconf(_SC_NPROCESSORS_ONLN));
}

/* ---- the file and its residency patterns -------------------------------- */

static void make_dir(void)
{
	const char *env = getenv("PC_BENCH_DIR");
	struct statfs sfs;

	if (env && *env) {
		if (strlen(env) >= sizeof(dir_path))
			die("PC_BENCH_DIR is too long");
		snprintf(dir_path, sizeof(dir_path), "%s", env);
	} else {
		snprintf(dir_path, sizeof(dir_path), "/var/tmp/pc-bench-XXXXXX");
		if (!mkdtemp(dir_path))
			die("mkdtemp %s: %s", dir_path, strerror(errno));
		own_dir = 1;
	}
	if (statfs(dir_path, &sfs) < 0)
		die("statfs %s: %s", dir_path, strerror(errno));
	if (sfs.f_type == TMPFS_MAGIC) {
		printf("SKIP: %s is on tmpfs: eviction does not work there\n", dir_path);
		cleanup();
		exit(77);
	}
}

/* The test file: real data (no holes), fsync'ed. Returns an O_RDONLY fd. */
static int make_file(void)
{
	uint64_t t0 = now_ns();
	int fd, rfd;

	snprintf(file_path, sizeof(file_path), "%s/bench-residency.%ld", dir_path, (long)getpid());
	fd = open(file_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0) {
		file_path[0] = '\0';
		die("create in %s: %s", dir_path, strerror(errno));
	}
	for (uint64_t off = 0; off < file_size; off += IO_CHUNK) {
		size_t n = file_size - off < IO_CHUNK ? (size_t)(file_size - off) : IO_CHUNK;
		uint64_t *w = (uint64_t *)io_buf;

		/* every 8 bytes differ between chunks: nothing compresses to a hole */
		for (size_t i = 0; i < n / sizeof(*w); i++)
			w[i] = (off + i * 8) * UINT64_C(0x9e3779b97f4a7c15) | 1;
		for (size_t done = 0; done < n;) {
			ssize_t r = pwrite(fd, io_buf + done, n - done, (off_t)(off + done));

			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0)
				die("write %s: %s", file_path, r < 0 ? strerror(errno) : "short");
			done += (size_t)r;
		}
	}
	if (fsync(fd) < 0)
		die("fsync %s: %s", file_path, strerror(errno));
	close(fd);
	rfd = open(file_path, O_RDONLY | O_CLOEXEC);
	if (rfd < 0)
		die("open %s: %s", file_path, strerror(errno));
	printf("# created %s: %llu MiB in %.1f s\n", file_path,
	       (unsigned long long)(file_size / MIB), (double)(now_ns() - t0) / 1e9);
	return rfd;
}

static void evict(int fd, uint64_t off, uint64_t len)
{
	int err;

	if (fdatasync(fd) < 0)
		die("fdatasync: %s", strerror(errno));
	err = posix_fadvise(fd, (off_t)off, (off_t)len, POSIX_FADV_DONTNEED);
	if (err)
		die("fadvise DONTNEED: %s", strerror(err));
}

static void read_fully(int fd, uint64_t off, size_t len)
{
	while (len) {
		ssize_t r = pread(fd, io_buf, len < IO_CHUNK ? len : IO_CHUNK, (off_t)off);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			die("read: %s", strerror(errno));
		if (r == 0)
			break;
		off += (uint64_t)r;
		len -= (size_t)r;
	}
}

/* Everything cached, in the large folios read() brings. */
static void set_cached(void)
{
	int fd = open(file_path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		die("open %s: %s", file_path, strerror(errno));
	evict(fd, 0, 0);
	read_fully(fd, 0, (size_t)file_size);
	close(fd);
}

static void set_evicted(void)
{
	int fd = open(file_path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		die("open %s: %s", file_path, strerror(errno));
	evict(fd, 0, 0);
	close(fd);
}

/*
 * Evict pages [0, limit) until mincore shows none of them. Folios still
 * under read I/O (the readahead a NOWAIT miss started a moment ago) are
 * locked and survive DONTNEED, then turn up after the pattern is built.
 */
static void evict_settled(int fd, uint64_t limit)
{
	unsigned char *vec = malloc((size_t)limit);
	void *map;

	if (!vec)
		die("out of memory");
	for (int tries = 0;; tries++) {
		uint64_t left = 0;

		evict(fd, 0, limit == npages ? 0 : limit * ps);
		map = mmap(NULL, (size_t)(limit * ps), PROT_READ, MAP_SHARED, fd, 0);
		if (map == MAP_FAILED)
			die("mmap: %s", strerror(errno));
		if (mincore(map, (size_t)(limit * ps), vec) < 0)
			die("mincore: %s", strerror(errno));
		munmap(map, (size_t)(limit * ps));
		for (uint64_t i = 0; i < limit; i++)
			left += vec[i] & 1;
		if (!left)
			break;
		if (tries == 1000)
			die("%llu pages stay resident after eviction", (unsigned long long)left);
		usleep(1000);
	}
	free(vec);
}

/* Within pages [0, limit): evict, then read the first run_pages of every
 * 2 * run_pages through a POSIX_FADV_RANDOM fd, so only those come in. */
static void set_alternating(uint64_t run_pages, uint64_t limit)
{
	int fd = open(file_path, O_RDONLY | O_CLOEXEC);
	int err;

	if (fd < 0)
		die("open %s: %s", file_path, strerror(errno));
	evict_settled(fd, limit);
	err = posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
	if (err)
		die("fadvise RANDOM: %s", strerror(err));
	for (uint64_t p = 0; p < limit; p += 2 * run_pages) {
		uint64_t n = limit - p < run_pages ? limit - p : run_pages;

		read_fully(fd, p * ps, (size_t)(n * ps));
	}
	close(fd);
}

static void set_pattern(const char *name)
{
	if (strcmp(name, "cached") == 0 || strcmp(name, "count_cached") == 0)
		set_cached();
	else if (strcmp(name, "evicted") == 0)
		set_evicted();
	else if (strcmp(name, "alt64k") == 0)
		set_alternating(65536 / ps ? 65536 / ps : 1, npages);
	else if (strcmp(name, "altpage") == 0)
		set_alternating(1, npages);
	else
		die("unknown case %s", name);
}

/* ---- the two sides --------------------------------------------------------- */

/* One plain mmap+mincore pass over [first, first + n), as a user writes it.
 * Returns the elapsed ns (CPU ns in *cpu); vec (allocated and touched by
 * the caller) gets the kernel's bytes. */
static uint64_t mincore_pass(int fd, uint64_t first, uint64_t n, unsigned char *vec,
			     uint64_t *cpu)
{
	struct timer t = timer_start();
	void *map = mmap(NULL, (size_t)(n * ps), PROT_READ, MAP_SHARED, fd, (off_t)(first * ps));

	if (map == MAP_FAILED)
		die("mmap: %s", strerror(errno));
	if (mincore(map, (size_t)(n * ps), vec) < 0)
		die("mincore: %s", strerror(errno));
	munmap(map, (size_t)(n * ps));
	return timer_stop(t, cpu);
}

static uint64_t count_vec(const unsigned char *vec, uint64_t n)
{
	uint64_t c = 0;

	for (uint64_t i = 0; i < n; i++)
		c += vec[i] & 1;
	return c;
}

static uint64_t ours_pass(int fd, unsigned int flags, struct pc_residency **out, uint64_t *cpu)
{
	struct timer t = timer_start();
	int ret = pc_residency(fd, 0, 0, flags, out);
	uint64_t wall = timer_stop(t, cpu);

	if (ret < 0)
		die("pc_residency: %s", strerror(-ret));
	return wall;
}

/* pc_residency's bitmap as a byte vector, through the runs iterator. */
static void ours_to_vec(const struct pc_residency *r, unsigned char *vec)
{
	uint64_t first = pc_residency_first_page(r), from = first, total = 0;
	struct pc_run run;
	int ret;

	memset(vec, 0, (size_t)npages);
	while ((ret = pc_residency_next_run(r, from, &run)) > 0) {
		memset(vec + (run.page - first), 1, (size_t)run.npages);
		total += run.npages;
		from = run.page + run.npages;
	}
	if (ret < 0)
		die("pc_residency_next_run: %s", strerror(-ret));
	if (total != pc_residency_resident(r)) {
		printf("# ERROR: runs cover %llu pages, resident says %llu\n",
		       (unsigned long long)total, (unsigned long long)pc_residency_resident(r));
		failures++;
	}
}

struct round_check {
	uint64_t errors;  /* disagreements on pages that stayed put */
	uint64_t drift;   /* disagreements on pages that changed during the round */
	uint64_t unstable;/* pages whose state changed during the round */
};

static void run_case(int fd, const struct bench_case *c, unsigned char *before,
		     unsigned char *mvec, unsigned char *after, unsigned char *ovec)
{
	uint64_t ours_ns[MAX_ROUNDS], mc_ns[MAX_ROUNDS], ours_cpu[MAX_ROUNDS], mc_cpu[MAX_ROUNDS];
	struct round_check total = { 0, 0, 0 };
	uint64_t res_first = 0, res_last = 0, setup_ns;
	int source = -1, quality = -1;
	double ratio;

	setup_ns = now_ns();
	set_pattern(c->name);
	setup_ns = now_ns() - setup_ns;
	for (unsigned int i = 0; i < rounds; i++) {
		struct pc_residency *r = NULL;
		uint64_t mcount, ocount;

		mincore_pass(fd, 0, npages, before, NULL);
		if (i % 2 == 0) {
			ours_ns[i] = ours_pass(fd, c->flags, &r, &ours_cpu[i]);
			mc_ns[i] = mincore_pass(fd, 0, npages, mvec, &mc_cpu[i]);
		} else {
			mc_ns[i] = mincore_pass(fd, 0, npages, mvec, &mc_cpu[i]);
			ours_ns[i] = ours_pass(fd, c->flags, &r, &ours_cpu[i]);
		}
		mincore_pass(fd, 0, npages, after, NULL);

		mcount = count_vec(mvec, npages);
		ocount = pc_residency_resident(r);
		if (i == 0)
			res_first = mcount;
		res_last = mcount;
		source = pc_residency_source(r);
		quality = pc_residency_quality(r);
		if (quality != PC_QUALITY_EXACT || pc_residency_npages(r) != npages) {
			printf("# ERROR: case=%s round=%u quality=%s npages=%llu (file %llu)\n",
			       c->name, i, pc_quality_name(quality),
			       (unsigned long long)pc_residency_npages(r),
			       (unsigned long long)npages);
			failures++;
		}
		if (c->flags & PC_RES_COUNT_ONLY) {
			/* counts only: compare with the timed pass, drift if the
			 * page states moved during the round */
			uint64_t moved = 0;

			for (uint64_t p = 0; p < npages; p++)
				moved += (before[p] & 1) != (mvec[p] & 1) ||
					 (after[p] & 1) != (mvec[p] & 1);
			total.unstable += moved;
			if (ocount != mcount) {
				uint64_t d = ocount > mcount ? ocount - mcount : mcount - ocount;

				if (!moved)
					total.errors += d;
				else
					total.drift += d;
			}
		} else {
			ours_to_vec(r, ovec);
			for (uint64_t p = 0; p < npages; p++) {
				unsigned char m = mvec[p] & 1;
				int moved = (before[p] & 1) != m || (after[p] & 1) != m;

				total.unstable += moved;
				if (ovec[p] != m) {
					if (moved)
						total.drift++;
					else
						total.errors++;
				}
			}
			if (ocount != mcount && !total.errors && !total.drift) {
				printf("# ERROR: case=%s round=%u resident=%llu but bitmap agrees with mincore=%llu\n",
				       c->name, i, (unsigned long long)ocount,
				       (unsigned long long)mcount);
				failures++;
			}
		}
		pc_residency_free(r);
	}
	ratio = (double)median(ours_ns, rounds) / (double)median(mc_ns, rounds);
	printf("case=%s ratio=%.3f ours_ns_per_page=%.3f mincore_ns_per_page=%.3f\n",
	       c->name, ratio, (double)median(ours_ns, rounds) / (double)npages,
	       (double)median(mc_ns, rounds) / (double)npages);
	printf("# case=%s target<=%.2f %s source=%s setup=%.1fs resident=%llu..%llu/%llu "
	       "ours_ms=[", c->name, c->target, ratio <= c->target ? "met" : "MISSED",
	       pc_source_name(source), (double)setup_ns / 1e9,
	       (unsigned long long)res_first, (unsigned long long)res_last,
	       (unsigned long long)npages);
	for (unsigned int i = 0; i < rounds; i++)
		printf("%s%.3f", i ? " " : "", (double)ours_ns[i] / 1e6);
	printf("] mincore_ms=[");
	for (unsigned int i = 0; i < rounds; i++)
		printf("%s%.3f", i ? " " : "", (double)mc_ns[i] / 1e6);
	printf("]");
	print_spread(ours_ns, mc_ns, ours_cpu, mc_cpu);
	printf(" errors=%llu drift=%llu unstable=%llu\n", (unsigned long long)total.errors,
	       (unsigned long long)total.drift, (unsigned long long)total.unstable);
	if (total.errors) {
		printf("# ERROR: case=%s: %llu pages where pc_residency disagreed with a stable mincore\n",
		       c->name, (unsigned long long)total.errors);
		failures++;
	}
	fflush(stdout);
}

/* ---- the prober -------------------------------------------------------------- */

static uint64_t preadv2_pass(int fd, const uint64_t *pages, size_t n, uint8_t *resident,
			     uint64_t *cpu)
{
	struct timer t = timer_start();
	char sink;

	for (size_t i = 0; i < n; i++) {
		struct iovec iov = { .iov_base = &sink, .iov_len = 1 };
		ssize_t r;

		do
			r = preadv2(fd, &iov, 1, (off_t)(pages[i] * ps), RWF_NOWAIT);
		while (r < 0 && errno == EINTR);
		if (r < 0 && errno != EAGAIN)
			die("preadv2 RWF_NOWAIT: %s", strerror(errno));
		resident[i] = r > 0;
	}
	return timer_stop(t, cpu);
}

static uint64_t prober_pass(struct pc_prober *p, int fd, const uint64_t *pages, size_t n,
			    uint8_t *resident, uint64_t *cpu)
{
	struct timer t = timer_start();
	ssize_t ret = pc_prober_probe(p, fd, pages, n, resident);
	uint64_t wall = timer_stop(t, cpu);

	if (ret < 0)
		die("pc_prober_probe: %s", strerror((int)-ret));
	if ((size_t)ret != n)
		die("pc_prober_probe answered %zd of %zu", ret, n);
	return wall;
}

/* Probe results against the mincore snapshot taken just before (pages
 * listed in descending order from n - 1, so pages[i] = n - 1 - i): hits
 * on pages mincore did not show, and misses on pages it did. */
static void probe_mismatches(const uint8_t *resident, const unsigned char *vec, size_t n,
			     uint64_t *false_hits, uint64_t *false_misses)
{
	for (size_t i = 0; i < n; i++) {
		int m = vec[n - 1 - i] & 1;

		*false_hits += resident[i] && !m;
		*false_misses += !resident[i] && m;
	}
}

static void run_prober_case(const char *name, unsigned char *vec)
{
	uint64_t ours_ns[MAX_ROUNDS], theirs_ns[MAX_ROUNDS], hits_ours = 0, hits_theirs = 0;
	uint64_t ours_cpu[MAX_ROUNDS], theirs_cpu[MAX_ROUNDS];
	uint64_t fhit[2] = { 0, 0 }, fmiss[2] = { 0, 0 };
	int partial = strcmp(name, "cached") != 0;
	size_t n = (size_t)(probe_pages < npages ? probe_pages : npages);
	uint64_t *pages = malloc(n * sizeof(*pages));
	uint8_t *res = malloc(n);
	struct pc_prober *p;
	double ratio;
	int fd, err, ret;

	if (!pages || !res)
		die("out of memory");
	ret = pc_prober_new(0, &p);
	if (ret < 0)
		die("pc_prober_new: %s", strerror(-ret));
	/* Highest page first, as pc_residency probes: readahead from a miss
	 * goes forward, so each answer is still true when it is taken. */
	for (size_t i = 0; i < n; i++)
		pages[i] = n - 1 - i;
	fd = open(file_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		die("open %s: %s", file_path, strerror(errno));
	err = posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
	if (err)
		die("fadvise RANDOM: %s", strerror(err));
	if (!partial)
		set_cached();
	for (unsigned int i = 0; i < rounds; i++) {
		for (int side = 0; side < 2; side++) {
			int ours = (side == 0) == (i % 2 == 0);
			uint64_t hits = 0;

			/* A NOWAIT miss starts readahead here: every pass
			 * gets a fresh pattern. */
			if (partial)
				set_alternating(1, n);
			mincore_pass(fd, 0, n, vec, NULL);
			if (ours)
				ours_ns[i] = prober_pass(p, fd, pages, n, res, &ours_cpu[i]);
			else
				theirs_ns[i] = preadv2_pass(fd, pages, n, res, &theirs_cpu[i]);
			probe_mismatches(res, vec, n, &fhit[!ours], &fmiss[!ours]);
			for (size_t k = 0; k < n; k++)
				hits += res[k];
			if (ours)
				hits_ours += hits;
			else
				hits_theirs += hits;
		}
	}
	ratio = (double)median(ours_ns, rounds) / (double)median(theirs_ns, rounds);
	printf("case=prober_%s ratio=%.3f ours_ns_per_page=%.3f preadv2_ns_per_page=%.3f\n",
	       name, ratio, (double)median(ours_ns, rounds) / (double)n,
	       (double)median(theirs_ns, rounds) / (double)n);
	printf("# case=prober_%s", name);
	print_spread(ours_ns, theirs_ns, ours_cpu, theirs_cpu);
	printf(" source=%s pages=%zu passes=%u hits_per_pass ours=%.1f "
	       "preadv2=%.1f vs_mincore: false_hits ours=%llu preadv2=%llu "
	       "false_misses ours=%llu preadv2=%llu\n",
	       pc_source_name(pc_prober_source(p)), n, rounds, (double)hits_ours / rounds,
	       (double)hits_theirs / rounds, (unsigned long long)fhit[0],
	       (unsigned long long)fhit[1], (unsigned long long)fmiss[0],
	       (unsigned long long)fmiss[1]);
	/*
	 * Both are samples, not proof: a NOWAIT read misses on a locked folio,
	 * and on a destructive kernel the readahead a miss starts can finish
	 * before the read looks again, turning the miss into a hit (seen here
	 * with preadv2, ~0.1% of misses). More than 1% is not that.
	 */
	if (fhit[0] + fmiss[0] > n * rounds / 100 || fhit[1] + fmiss[1] > n * rounds / 100) {
		printf("# ERROR: case=prober_%s: probes disagree with mincore\n", name);
		failures++;
	}
	fflush(stdout);
	close(fd);
	pc_prober_free(p);
	free(pages);
	free(res);
}

int main(void)
{
	unsigned char *before, *mvec, *after, *ovec;
	struct pc_residency *warm = NULL;
	int fd, dirfd, ret;

	setvbuf(stdout, NULL, _IOLBF, 0);
	ps = (uint64_t)sysconf(_SC_PAGESIZE);
	file_size = env_u64("PC_BENCH_MB", 4096, 4, UINT64_C(1) << 24) * MIB;
	npages = file_size / ps;
	rounds = (unsigned int)env_u64("PC_BENCH_ROUNDS", 9, 1, MAX_ROUNDS);
	probe_pages = env_u64("PC_BENCH_PROBE_PAGES", 16384, 1, UINT64_C(1) << 24);
	case_filter = getenv("PC_BENCH_CASES");
	io_buf = malloc(IO_CHUNK);
	/* the vectors are allocated and touched outside every timing */
	before = malloc((size_t)npages);
	mvec = malloc((size_t)npages);
	after = malloc((size_t)npages);
	ovec = malloc((size_t)npages);
	if (!io_buf || !before || !mvec || !after || !ovec)
		die("out of memory");
	memset(before, 0, (size_t)npages);
	memset(mvec, 0, (size_t)npages);
	memset(after, 0, (size_t)npages);
	memset(ovec, 0, (size_t)npages);

	make_dir();
	atexit(cleanup);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);
	fd = make_file();

	/* Detection runs once per process: not part of any measurement. */
	ret = pc_residency(fd, 0, 0, 0, &warm);
	if (ret < 0)
		die("pc_residency: %s", strerror(-ret));
	pc_residency_free(warm);
	printf("# libpagecache %s: file=%s size=%llu MiB pages=%llu page_size=%llu rounds=%u\n",
	       pc_version(), file_path, (unsigned long long)(file_size / MIB),
	       (unsigned long long)npages, (unsigned long long)ps, rounds);
	dirfd = open(dir_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	printf("# detected: mincore=%s cachestat=%s nowait=%s io_uring=%d\n",
	       pc_mincore_mode_name(pc_detect_mincore()),
	       pc_cachestat_mode_name(pc_detect_cachestat()),
	       dirfd < 0 ? "unknown" : pc_nowait_mode_name(pc_detect_nowait(dirfd)),
	       pc_detect_io_uring());
	if (dirfd >= 0)
		close(dirfd);

	print_loadavg("before");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (case_wanted(cases[i].name))
			run_case(fd, &cases[i], before, mvec, after, ovec);
	for (size_t i = 0; i < sizeof(prober_cases) / sizeof(prober_cases[0]); i++) {
		char full[64];

		snprintf(full, sizeof(full), "prober_%s", prober_cases[i]);
		if (case_wanted(full))
			run_prober_case(prober_cases[i], before);
	}

	print_loadavg("after");
	close(fd);
	free(io_buf);
	free(before);
	free(mvec);
	free(after);
	free(ovec);
	if (failures)
		printf("# %d correctness failure(s)\n", failures);
	return failures ? 1 : 0;
}
