/* SPDX-License-Identifier: MIT */
/*
 * bench-warm: pc_warm()'s strategies against plain readahead(2) in 2 MiB
 * chunks (doc/kernels.md section 7's fastest), on an evicted file; and on a file
 * where every other 64 KiB run is wanted, against happycache's method
 * (POSIX_FADV_WILLNEED on runs of at most 8 pages, one call each). This is
 * what picked PC_WARM_DEFAULT.
 *
 * Environment:
 *   PC_BENCH_DIR     where the test file goes (default: /var/tmp)
 *   PC_BENCH_MB      file size in MiB (default 1024)
 *   PC_BENCH_ROUNDS  rounds per case, medians reported (default 5)
 *
 * Each timing runs from the eviction until mincore shows 99.9% of the wanted
 * pages resident (readahead returns before the I/O lands; background reclaim
 * may take a few meanwhile, doc/kernels.md section 7). Output, one line per
 * case: case=<name> ratio=<ours/reference throughput> mb_s=<n> ref_mb_s=<n>
 * resident_pct=<n> (the worst round) call_ms=<time in pc_warm itself>. Exit status 77 on tmpfs, 1 when a case left wanted
 * pages out.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "pagecache/pagecache.h"

#define MIB (UINT64_C(1) << 20)
#define MAX_ROUNDS 51
#define SETTLE_NS (UINT64_C(30) * 1000000000)

static uint64_t ps, npages;
static int fd;
static char path[4096];
static unsigned char *vec;
static int failed;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + (uint64_t)ts.tv_nsec;
}

static void evict(void)
{
	fsync(fd);
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
}

/* Wanted pages resident out of the wanted, through a fresh mapping. */
static uint64_t resident_of(const struct pc_run *runs, size_t n, uint64_t *wanted)
{
	void *map = mmap(NULL, npages * ps, PROT_READ, MAP_SHARED, fd, 0);
	uint64_t in = 0;

	*wanted = 0;
	if (map == MAP_FAILED || mincore(map, npages * ps, vec) < 0) {
		perror("mincore");
		exit(1);
	}
	munmap(map, npages * ps);
	for (size_t i = 0; i < n; i++)
		for (uint64_t p = runs[i].page; p < runs[i].page + runs[i].npages; p++) {
			in += vec[p] & 1;
			(*wanted)++;
		}
	return in;
}

/* Returns the ns until every wanted page was resident (or SETTLE_NS). */
static uint64_t wait_all(uint64_t start, const struct pc_run *runs, size_t n, double *pct)
{
	uint64_t wanted, in;

	for (;;) {
		struct timespec ms = { 0, 1000000 };

		/* 99.9%: background reclaim may take a few pages meanwhile */
		in = resident_of(runs, n, &wanted);
		if (in * 1000 >= wanted * 999 || now_ns() - start > SETTLE_NS)
			break;
		nanosleep(&ms, NULL); /* do not starve the I/O of a CPU */
	}
	*pct = 100.0 * (double)in / (double)wanted;
	return now_ns() - start;
}

typedef void (*method)(const struct pc_run *runs, size_t n, const void *arg);

static void by_pc_warm(const struct pc_run *runs, size_t n, const void *arg)
{
	int64_t ret = pc_warm(fd, runs, n, arg, NULL);

	if (ret < 0) {
		fprintf(stderr, "pc_warm: %s\n", strerror((int)-ret));
		exit(1);
	}
}

static void by_readahead_2m(const struct pc_run *runs, size_t n, const void *arg)
{
	for (size_t i = 0; i < n; i++)
		for (uint64_t off = runs[i].page * ps; off < (runs[i].page + runs[i].npages) * ps;
		     off += 2 * MIB) {
			uint64_t end = (runs[i].page + runs[i].npages) * ps;

			readahead(fd, (off64_t)off, (size_t)(end - off < 2 * MIB ? end - off : 2 * MIB));
		}
}

static void by_happycache(const struct pc_run *runs, size_t n, const void *arg)
{
	for (size_t i = 0; i < n; i++)
		for (uint64_t p = runs[i].page; p < runs[i].page + runs[i].npages; p += 8) {
			uint64_t k = runs[i].page + runs[i].npages - p < 8 ? runs[i].page + runs[i].npages - p : 8;

			posix_fadvise(fd, (off_t)(p * ps), (off_t)(k * ps), POSIX_FADV_WILLNEED);
		}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static uint64_t median(uint64_t *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_u64);
	return v[n / 2];
}

static void bench(const char *name, const struct pc_run *runs, size_t n, method ours,
		  const void *arg, method ref, int rounds)
{
	uint64_t t_ours[MAX_ROUNDS], t_ref[MAX_ROUNDS], t_call[MAX_ROUNDS], bytes = 0;
	double pct = 100, worst = 100;

	for (size_t i = 0; i < n; i++)
		bytes += runs[i].npages * ps;
	for (int r = 0; r < rounds; r++) {
		for (int side = 0; side < 2; side++) {
			int mine = (side + r) % 2 == 0;
			uint64_t start;

			evict();
			start = now_ns();
			(mine ? ours : ref)(runs, n, mine ? arg : NULL);
			if (mine)
				t_call[r] = now_ns() - start;
			(mine ? t_ours : t_ref)[r] = wait_all(start, runs, n, &pct);
			if (mine && pct < worst)
				worst = pct;
		}
	}
	double mb = (double)bytes / MIB;
	double ours_s = (double)median(t_ours, rounds) / 1e9, ref_s = (double)median(t_ref, rounds) / 1e9;

	printf("case=%s ratio=%.3f mb_s=%.0f ref_mb_s=%.0f resident_pct=%.2f call_ms=%.1f\n",
	       name, ref_s / ours_s, mb / ours_s, mb / ref_s, worst,
	       (double)median(t_call, rounds) / 1e6);
	fflush(stdout);
	if (worst < 99.9)
		failed = 1;
}

int main(void)
{
	const char *dir = getenv("PC_BENCH_DIR");
	const char *mb_env = getenv("PC_BENCH_MB"), *rounds_env = getenv("PC_BENCH_ROUNDS");
	uint64_t mb = mb_env ? strtoull(mb_env, NULL, 10) : 1024;
	int rounds = rounds_env ? atoi(rounds_env) : 5;
	struct pc_warm_opts o = { .size = sizeof(o) };
	struct pc_run whole, *alt;
	struct statfs sfs;
	char *buf;
	size_t nalt;

	if (rounds < 1 || rounds > MAX_ROUNDS || mb < 16)
		return 2;
	snprintf(path, sizeof(path), "%s/pc-bench-warm-%d", dir ? dir : "/var/tmp", getpid());
	ps = (uint64_t)pc_page_size();
	npages = mb * MIB / ps;
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		perror(path);
		return 1;
	}
	unlink(path);
	if (fstatfs(fd, &sfs) == 0 && sfs.f_type == TMPFS_MAGIC) {
		printf("SKIP: %s is on tmpfs\n", path);
		return 77;
	}
	buf = malloc(8 * MIB);
	vec = malloc(npages);
	alt = calloc(npages / 32 + 1, sizeof(*alt));
	if (!buf || !vec || !alt)
		return 1;
	memset(buf, 'w', 8 * MIB);
	for (uint64_t off = 0; off < mb * MIB; off += 8 * MIB)
		if (pwrite(fd, buf, 8 * MIB, (off_t)off) != (ssize_t)(8 * MIB))
			return 1;
	free(buf);
	whole = (struct pc_run){ 0, npages };
	/* every other 64 KiB run */
	nalt = 0;
	for (uint64_t p = 0; p + 16 <= npages; p += 32)
		alt[nalt++] = (struct pc_run){ p, 65536 / ps };
	printf("# %llu MiB file, %d rounds\n", (unsigned long long)mb, rounds);

	o.strategy = PC_WARM_READAHEAD;
	o.chunk_bytes = 2 * MIB;
	bench("whole_readahead_2m", &whole, 1, by_pc_warm, &o, by_readahead_2m, rounds);
	o.chunk_bytes = 8 * MIB;
	bench("whole_readahead_8m", &whole, 1, by_pc_warm, &o, by_readahead_2m, rounds);
	o.strategy = PC_WARM_IO_URING;
	if (pc_detect_io_uring() == 1) {
		const struct { uint64_t chunk; unsigned int depth; } u[] = {
			{ 1 * MIB, 8 }, { 2 * MIB, 8 }, { 256 * 1024, 32 }, { 1 * MIB, 2 } };

		for (size_t i = 0; i < sizeof(u) / sizeof(u[0]); i++) {
			char name[64];

			o.chunk_bytes = u[i].chunk;
			o.queue_depth = u[i].depth;
			snprintf(name, sizeof(name), "whole_io_uring_%lluk_qd%u",
				 (unsigned long long)(u[i].chunk / 1024), u[i].depth);
			bench(name, &whole, 1, by_pc_warm, &o, by_readahead_2m, rounds);
		}
	}
	o = (struct pc_warm_opts){ .size = sizeof(o) };
	bench("alt64k_default_vs_happycache", alt, nalt, by_pc_warm, &o, by_happycache, rounds);
	o.strategy = PC_WARM_IO_URING;
	if (pc_detect_io_uring() == 1)
		bench("alt64k_io_uring_vs_happycache", alt, nalt, by_pc_warm, &o, by_happycache,
		      rounds);
	close(fd);
	return failed;
}
