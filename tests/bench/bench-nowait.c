/* SPDX-License-Identifier: MIT */
/*
 * bench-nowait: what uid 65534's exact bitmap of a root-owned 0644 file
 * costs where mincore hides the file and RWF_NOWAIT misses are clean (6.1:
 * run it in the guest, tests/vm/run.sh BUILDDIR bench:nowait), against
 * page-by-page probing of the same file and against root's mincore pass.
 *
 * A 256 MiB file with 64 cached runs, in two layouts: "half" (runs of 512
 * pages, 50% cached) and "sparse" (runs of 64 pages, 6%). For each, as uid
 * 65534 in a child process:
 *   lib:     pc_residency() (io_uring, or preadv2 where a seccomp filter
 *            takes io_uring_setup away: ENOSYS); its second call, the first
 *            also runs the one-time detection (reported apart)
 *   pages:   one 1-byte RWF_NOWAIT read per page through the same prober
 *            (pc_prober_probe(), 256 pages a call)
 * and as root: pc_residency(PC_RES_FORCE_MINCORE). Output, the medians of
 * PC_BENCH_NOWAIT_ROUNDS (default 5) rounds:
 *   case=<layout>-<source>-vs-pages ratio=<lib / pages>
 *   case=<layout>-<source>-vs-root-mincore ratio=<lib / root's mincore>
 * and '#' lines with the seconds. Every answer is checked against root's
 * mincore taken right before: a wrong bitmap is exit status 1. Where a
 * miss is not clean (6.12+, destructive) uid 65534 gets UNKNOWN without
 * PC_RES_ALLOW_PERTURB: the bench says so and measures nothing (exit 0).
 * Needs root (exit 77 otherwise).
 *
 * Environment: PC_BENCH_DIR (default /var/tmp), PC_BENCH_NOWAIT_ROUNDS.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench-util.h"
#include "pagecache/pagecache.h"

#define FILE_PAGES 65536 /* 256 MiB of 4 KiB pages */
#define RUNS 64
#define MAX_ROUNDS 21
#define NOBODY 65534

static const char *file_path;
static long ps;

static void die(const char *what)
{
	fprintf(stderr, "bench-nowait: %s: %s\n", what, strerror(errno));
	exit(1);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), bench_cmp_double);
	return v[n / 2];
}

/* Root's mincore of the whole file through a fresh mapping: the truth. */
static void truth(unsigned char *vec)
{
	int fd = open(file_path, O_RDONLY | O_CLOEXEC);
	void *map;

	if (fd < 0)
		die("open");
	map = mmap(NULL, (size_t)FILE_PAGES * (size_t)ps, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		die("mmap");
	if (mincore(map, (size_t)FILE_PAGES * (size_t)ps, vec) < 0)
		die("mincore");
	munmap(map, (size_t)FILE_PAGES * (size_t)ps);
	close(fd);
}

/* Evict the file, then read the runs in through a POSIX_FADV_RANDOM fd
 * (each read brings in its own range and leaves no readahead mark). */
static void set_layout(uint64_t run_pages, uint64_t stride)
{
	char *buf = malloc((size_t)run_pages * (size_t)ps);
	int fd = open(file_path, O_RDONLY | O_CLOEXEC);

	if (!buf || fd < 0)
		die("layout");
	if (posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) ||
	    posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM))
		die("posix_fadvise");
	for (uint64_t r = 0; r < RUNS; r++) {
		off_t off = (off_t)(r * stride * (uint64_t)ps);

		if (pread(fd, buf, (size_t)run_pages * (size_t)ps, off) !=
		    (ssize_t)(run_pages * (uint64_t)ps))
			die("pread");
	}
	close(fd);
	free(buf);
}

/* io_uring_setup(2) fails with ENOSYS from now on, in this process. */
static void no_io_uring(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
		die("seccomp");
}

struct timing {
	int status;       /* 0 ok, 1 wrong answer, 2 not exact here */
	int source;
	double first, lib, pages;
};

/* In a child, as uid 65534: the library's bitmap and page-by-page probes,
 * each checked against want. */
static void measure_as_nobody(const unsigned char *want, int preadv2_only, struct timing *out)
{
	static uint64_t pages[256];
	uint8_t hit[256];
	struct pc_residency *r = NULL;
	struct pc_prober *p = NULL;
	double t0;
	int fd;

	memset(out, 0, sizeof(*out));
	if (preadv2_only)
		no_io_uring();
	if (setgroups(0, NULL) < 0 || setgid(NOBODY) < 0 || setuid(NOBODY) < 0)
		die("setuid");
	fd = open(file_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		die("open as uid 65534");
	/* the first call also runs the one-time detection (a scratch file,
	 * synced, evicted and watched for about 100 ms): timed apart */
	t0 = bench_now();
	if (pc_residency(fd, 0, 0, 0, &r) < 0)
		die("pc_residency");
	out->first = bench_now() - t0;
	pc_residency_free(r);
	r = NULL;
	t0 = bench_now();
	if (pc_residency(fd, 0, 0, 0, &r) < 0)
		die("pc_residency");
	out->lib = bench_now() - t0;
	if (pc_residency_quality(r) != PC_QUALITY_EXACT) {
		out->status = 2;
		return;
	}
	out->source = pc_residency_source(r);
	for (uint64_t i = 0; i < FILE_PAGES; i++)
		if (pc_residency_test(r, i) != (want[i] & 1))
			out->status = 1;
	pc_residency_free(r);
	if (pc_prober_new(0, &p) < 0)
		die("pc_prober_new");
	t0 = bench_now();
	for (uint64_t i = 0; i < FILE_PAGES; i += 256) {
		for (int k = 0; k < 256; k++)
			pages[k] = i + (uint64_t)k;
		if (pc_prober_probe(p, fd, pages, 256, hit) != 256)
			die("pc_prober_probe");
		for (int k = 0; k < 256; k++)
			if (hit[k] != (want[i + (uint64_t)k] & 1))
				out->status = 1;
	}
	out->pages = bench_now() - t0;
	pc_prober_free(p);
	close(fd);
}

static int run_child(const unsigned char *want, int preadv2_only, struct timing *t)
{
	int pfd[2], status;
	pid_t pid;

	if (pipe(pfd) < 0)
		die("pipe");
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		struct timing mine;

		close(pfd[0]);
		measure_as_nobody(want, preadv2_only, &mine);
		if (write(pfd[1], &mine, sizeof(mine)) != (ssize_t)sizeof(mine))
			_exit(1);
		_exit(0);
	}
	close(pfd[1]);
	if (read(pfd[0], t, sizeof(*t)) != (ssize_t)sizeof(*t))
		t->status = 1;
	close(pfd[0]);
	waitpid(pid, &status, 0);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static double root_mincore(void)
{
	struct pc_residency *r = NULL;
	int fd = open(file_path, O_RDONLY | O_CLOEXEC);
	double t0;

	if (fd < 0)
		die("open");
	t0 = bench_now();
	if (pc_residency(fd, 0, 0, PC_RES_FORCE_MINCORE, &r) < 0)
		die("pc_residency(FORCE_MINCORE)");
	t0 = bench_now() - t0;
	pc_residency_free(r);
	close(fd);
	return t0;
}

int main(void)
{
	static const struct {
		const char *name;
		uint64_t run_pages, stride;
	} layouts[] = { { "half", 512, 1024 }, { "sparse", 64, 1024 } };
	const char *env = getenv("PC_BENCH_NOWAIT_ROUNDS");
	int rounds = env ? atoi(env) : 5, failed = 0;
	unsigned char *want;
	char *buf;
	int fd;

	if (geteuid() != 0) {
		printf("SKIP: bench-nowait needs root (the truth is root's mincore)\n");
		return 77;
	}
	if (rounds < 1 || rounds > MAX_ROUNDS)
		rounds = 5;
	ps = sysconf(_SC_PAGESIZE);
	/* 0755: uid 65534 reaches the file */
	file_path = bench_scratch("pc-bench-nowait", "file", 0755);
	if (!file_path)
		die("a scratch directory in PC_BENCH_DIR");
	fd = open(file_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	buf = malloc(1 << 20);
	want = malloc(FILE_PAGES);
	if (fd < 0 || !buf || !want)
		die("create");
	memset(buf, 'n', 1 << 20);
	for (int i = 0; i < 256; i++)
		if (write(fd, buf, 1 << 20) != 1 << 20)
			die("write");
	if (fsync(fd) < 0)
		die("fsync");
	close(fd);
	free(buf);

	for (size_t l = 0; l < sizeof(layouts) / sizeof(layouts[0]); l++) {
		for (int preadv2_only = 0; preadv2_only < 2; preadv2_only++) {
			double lib[MAX_ROUNDS], pages[MAX_ROUNDS], root[MAX_ROUNDS], first[MAX_ROUNDS];
			const char *source = preadv2_only ? "preadv2" : "io_uring";
			struct timing t = { 0 };
			double ml, mp, mr;

			for (int i = 0; i < rounds; i++) {
				set_layout(layouts[l].run_pages, layouts[l].stride);
				truth(want);
				if (run_child(want, preadv2_only, &t) < 0 || t.status == 1) {
					printf("# %s-%s: the answer differs from root's mincore\n",
					       layouts[l].name, source);
					failed = 1;
					break;
				}
				if (t.status == 2) {
					printf("# %s: uid 65534 gets no exact answer here (RWF_NOWAIT "
					       "misses are not clean): nothing to measure\n",
					       layouts[l].name);
					return failed;
				}
				lib[i] = t.lib;
				first[i] = t.first;
				pages[i] = t.pages;
				root[i] = root_mincore();
			}
			if (failed)
				continue;
			if (t.source != (preadv2_only ? PC_SOURCE_PREADV2 : PC_SOURCE_IO_URING))
				printf("# %s-%s: the library answered through %s\n", layouts[l].name,
				       source, pc_source_name(t.source));
			ml = median(lib, rounds);
			mp = median(pages, rounds);
			mr = median(root, rounds);
			printf("# %s-%s: library %.4f s (its first call, with detection, %.4f s), "
			       "page by page %.4f s, root's mincore %.4f s\n",
			       layouts[l].name, source, ml, median(first, rounds), mp, mr);
			printf("case=%s-%s-vs-pages ratio=%.3f\n", layouts[l].name, source, ml / mp);
			printf("case=%s-%s-vs-root-mincore ratio=%.3f\n", layouts[l].name, source,
			       ml / mr);
			fflush(stdout);
		}
	}
	free(want);
	return failed;
}
