/* SPDX-License-Identifier: MIT */
/*
 * pc_warm() on real files in the scratch directory: evict, warm chosen runs
 * with each strategy, then mincore shows the runs resident and pages in
 * other 2 MiB regions (out of reach of folios and readahead) still out.
 * Also: resident pages are not read again, the budget and cancellation
 * stop early, runs past a shrunk file are clamped, and snapshot runs in
 * another page size are converted.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "pagecache/pagecache.h"
#include "pc-private.h"
#include "pc-test.h"

#define SETTLE_MS 5000       /* with no page landing */
#define SETTLE_CAP_MS 120000 /* in all */
#define FILE_PAGES 8192 /* 32 MiB with 4 KiB pages: sixteen 2 MiB regions */

static uint64_t ps(void)
{
	return (uint64_t)pc_page_size();
}

/* Pages of FILE_PAGES in 2 MiB regions that no run below touches. */
static const uint64_t far_pages[] = { 600, 1700, 3000, 4500, 5000, 6100, 8000 };
/* Runs in regions 0, 2, 5 and 13 (4 KiB pages). */
static const struct pc_run runs[] = { { 10, 3 }, { 1100, 1 }, { 2600, 40 }, { 7000, 96 } };
#define RUN_PAGES (3 + 1 + 40 + 96)

static struct pc_warm_opts opts_for(int strategy)
{
	return (struct pc_warm_opts){ .size = sizeof(struct pc_warm_opts), .strategy = strategy };
}

static void sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* How many pages of the runs vec shows resident. */
static uint64_t runs_resident(const unsigned char *vec, const struct pc_run *r, size_t n)
{
	uint64_t c = 0;

	for (size_t i = 0; i < n; i++)
		for (uint64_t p = r[i].page; p < r[i].page + r[i].npages; p++)
			c += vec[p] & 1;
	return c;
}

static uint64_t runs_pages(const struct pc_run *r, size_t n)
{
	uint64_t c = 0;

	for (size_t i = 0; i < n; i++)
		c += r[i].npages;
	return c;
}

/*
 * Poll mincore until every page of the runs is resident (readahead returns
 * before the I/O lands); the last vector, or NULL. The bound is on
 * progress, not on speed: NULL once SETTLE_MS pass with no page landing
 * (the reads stopped, or never started), or after SETTLE_CAP_MS in all.
 * Under emulation (tests/vm/) a disk reads tens of MiB in seconds, not in
 * a few hundred milliseconds.
 */
static unsigned char *poll_resident(const char *path, const struct pc_run *r, size_t n)
{
	uint64_t want = runs_pages(r, n), seen = 0;
	unsigned char *vec = NULL;
	int idle = 0;

	for (int waited = 0; idle <= SETTLE_MS && waited <= SETTLE_CAP_MS; waited += 10) {
		uint64_t now;

		free(vec);
		pc_test_mincore(path, &vec);
		now = runs_resident(vec, r, n);
		if (now == want)
			return vec;
		idle = now > seen ? 0 : idle + 10;
		seen = now > seen ? now : seen;
		sleep_ms(10);
	}
	for (size_t i = 0; vec && i < n; i++) {
		uint64_t p = r[i].page, end = r[i].page + r[i].npages;

		while (p < end && (vec[p] & 1))
			p++;
		if (p < end) {
			printf("note: %s: %llu of %llu pages of the runs resident; first missing: "
			       "page %llu (run %llu+%llu)\n", path, (unsigned long long)seen,
			       (unsigned long long)want, (unsigned long long)p,
			       (unsigned long long)r[i].page, (unsigned long long)r[i].npages);
			break;
		}
	}
	fflush(stdout);
	free(vec);
	return NULL;
}

static unsigned char *wait_resident(const char *path, const struct pc_run *r, size_t n)
{
	unsigned char *vec = poll_resident(path, r, n);

	ck_assert_msg(vec, "the warmed runs were not resident: no page landed for %d ms", SETTLE_MS);
	return vec;
}

/*
 * Every page of the runs on its way right after pc_warm() returned:
 * present in the page cache, up to date or still being read in (cachestat
 * counts both). What pc_warm() asked for, before anything could take it
 * away again. Where cachestat is missing (valgrind), nothing to check.
 */
static void assert_asked_for(int fd, const struct pc_run *r, size_t n, uint64_t reclaimed)
{
	for (size_t i = 0; i < n; i++) {
		struct pc_cachestat cs;
		int ret = pc_cachestat(fd, r[i].page * ps(), r[i].npages * ps(), &cs);

		if (ret == -ENOSYS)
			return;
		ck_assert_int_eq(ret, 0);
		if (cs.cache == r[i].npages)
			continue;
		/* the kernel may take a page that landed before cachestat
		 * looks (DAMON, doc/design.md): then wait_resident_again()
		 * reads what went, and a shortfall without reclaim fails */
		ck_assert_msg(pc_test_reclaimed_pages(1) != reclaimed,
			      "run at %llu: %llu of %llu pages asked for",
			      (unsigned long long)r[i].page, (unsigned long long)cs.cache,
			      (unsigned long long)r[i].npages);
		printf("note: run at %llu: %llu of %llu pages there while the kernel reclaimed\n",
		       (unsigned long long)r[i].page, (unsigned long long)cs.cache,
		       (unsigned long long)r[i].npages);
	}
}

/*
 * wait_resident() for runs assert_asked_for() found on their way: pages
 * that landed can be gone again before the poll sees them all (this
 * machine's DAMON pages out fresh pages nobody used, doc/design.md). When
 * the kernel took pages meanwhile, the missing ones are read again,
 * twice at most.
 */
static unsigned char *wait_resident_again(const char *path, int fd, const struct pc_run *r,
					  size_t n)
{
	struct pc_warm_opts ra = opts_for(PC_WARM_READAHEAD);

	for (int attempt = 0;; attempt++) {
		uint64_t before = pc_test_reclaimed_pages(0);
		unsigned char *vec = poll_resident(path, r, n);

		if (vec)
			return vec;
		ck_assert_msg(attempt < 2 && pc_test_reclaimed_pages(1) != before,
			      "the warmed runs were not resident: no page landed for %d ms", SETTLE_MS);
		printf("note: %s: pages missing while the kernel reclaimed: read again\n", path);
		ck_assert_int_ge(pc_warm(fd, r, n, &ra, NULL), 0);
	}
}

static void assert_far_pages_out(const unsigned char *vec)
{
	for (size_t i = 0; i < PC_ARRAY_SIZE(far_pages); i++)
		ck_assert_msg(!(vec[far_pages[i]] & 1), "far page %llu resident",
			      (unsigned long long)far_pages[i]);
}

static int io_uring_missing(const char *name)
{
	if (pc_detect_io_uring() == 1)
		return 0;
	pc_test_skip(name, "io_uring is unavailable here");
	return 1;
}


static void warm_brings_back_runs_only(const char *name, int strategy)
{
	struct pc_warm_opts o = opts_for(strategy);
	struct pc_warm_stats st = { .size = sizeof(st) };
	const char *f = pc_test_make_file(name, FILE_PAGES, 0644, -1, -1);
	unsigned char *vec;
	int fd = open(f, O_RDONLY | O_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	pc_test_set_pattern(f, NULL, 0);
	ck_assert_int_eq(pc_warm(fd, runs, PC_ARRAY_SIZE(runs), &o, &st), RUN_PAGES * ps());
	ck_assert_uint_eq(st.bytes_done, RUN_PAGES * ps()); /* as returned */
	ck_assert_uint_eq(st.pages_wanted, RUN_PAGES);
	ck_assert_uint_eq(st.pages_read, RUN_PAGES);
	ck_assert_uint_eq(st.pages_resident, 0);
	ck_assert_uint_eq(st.pages_beyond_eof, 0);
	ck_assert_int_eq(st.budget_exhausted, 0);
	ck_assert_int_eq(st.quality, PC_QUALITY_EXACT);
	vec = wait_resident(f, runs, PC_ARRAY_SIZE(runs));
	assert_far_pages_out(vec);
	free(vec);
	close(fd);
}

START_TEST(readahead_brings_back_the_runs_only)
{
	warm_brings_back_runs_only("readahead", PC_WARM_READAHEAD);
}
END_TEST

START_TEST(io_uring_brings_back_the_runs_only)
{
	if (io_uring_missing("warm with io_uring"))
		return;
	warm_brings_back_runs_only("io-uring", PC_WARM_IO_URING);
}
END_TEST

/* MADV_POPULATE_READ returns once the pages are read: resident at once,
 * no wait. (The fault's read-around brings neighbours too, up to a
 * readahead window: 8 MiB here, so no far page is asserted out.) */
START_TEST(populate_brings_back_the_runs_at_once)
{
	struct pc_warm_opts o = opts_for(PC_WARM_POPULATE);
	struct pc_warm_stats st = { .size = sizeof(st) };
	const char *f = pc_test_make_file("populate", FILE_PAGES, 0644, -1, -1);
	unsigned char *vec;
	int64_t got;
	int fd = open(f, O_RDONLY | O_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	pc_test_set_pattern(f, NULL, 0);
	got = pc_warm(fd, runs, PC_ARRAY_SIZE(runs), &o, &st);
	if (got == -EOPNOTSUPP) {
		pc_test_skip("populate_brings_back_the_runs_at_once",
			     "no MADV_POPULATE_READ (5.14+)");
		close(fd);
		return;
	}
	ck_assert_int_eq(got, RUN_PAGES * ps());
	ck_assert_uint_eq(st.pages_read, RUN_PAGES);
	pc_test_mincore(f, &vec);
	for (size_t i = 0; i < PC_ARRAY_SIZE(runs); i++)
		for (uint64_t p = runs[i].page; p < runs[i].page + runs[i].npages; p++)
			ck_assert_msg(vec[p] & 1, "page %llu not resident on return",
				      (unsigned long long)p);
	free(vec);
	/* and a second one reads nothing */
	ck_assert_int_eq(pc_warm(fd, runs, PC_ARRAY_SIZE(runs), &o, &st), 0);
	ck_assert_uint_eq(st.pages_resident, RUN_PAGES);
	close(fd);
}
END_TEST

START_TEST(stream_brings_back_small_runs_only)
{
	/* holes too small to stream: readahead(2) takes them */
	warm_brings_back_runs_only("stream", PC_WARM_STREAM);
}
END_TEST

#define BIG_PAGES 16384 /* 64 MiB with 4 KiB pages */

/* Whether RWF_NOWAIT reads start readahead on the scratch filesystem, and
 * cachestat can see it: where PC_WARM_STREAM streams at all. */
static int stream_expected(void)
{
	int dir = open(pc_test_dir(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int nowait;

	ck_assert_int_ge(dir, 0);
	nowait = pc_detect_nowait(dir);
	close(dir);
	return nowait == PC_NOWAIT_DESTRUCTIVE && pc_detect_cachestat() == PC_CACHESTAT_GATED;
}

/* One large run of a 64 MiB file, streamed: every page of it comes, and
 * nothing outside it (the kernel's windows stop short of its end). */
static void stream_one_run(const char *name, struct pc_run run)
{
	struct pc_warm_opts o = opts_for(PC_WARM_STREAM);
	struct pc_warm_stats st = { .size = sizeof(st) };
	const char *f = pc_test_make_file(name, BIG_PAGES, 0644, -1, -1);
	unsigned char *vec;
	uint64_t reclaimed;
	int fd = open(f, O_RDONLY | O_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	pc_test_set_pattern(f, NULL, 0);
	reclaimed = pc_test_reclaimed_pages(1);
	ck_assert_int_eq(pc_warm(fd, &run, 1, &o, &st), (int64_t)(run.npages * ps()));
	ck_assert_uint_eq(st.pages_read, run.npages);
	ck_assert_uint_eq(st.pages_resident, 0);
	ck_assert_uint_le(st.pages_streamed, st.pages_read);
	if (stream_expected())
		ck_assert_msg(st.pages_streamed > 0, "%s: nothing streamed", name);
	else
		ck_assert_uint_eq(st.pages_streamed, 0);
	assert_asked_for(fd, &run, 1, reclaimed);
	vec = wait_resident_again(f, fd, &run, 1);
	for (uint64_t p = 0; p < BIG_PAGES; p++)
		if (p < run.page || p >= run.page + run.npages)
			ck_assert_msg(!(vec[p] & 1), "%s: page %llu outside the run resident", name,
				      (unsigned long long)p);
	free(vec);
	close(fd);
}

START_TEST(stream_reads_a_run_to_the_end_of_the_file)
{
	stream_one_run("stream-to-eof", (struct pc_run){ 2048, BIG_PAGES - 2048 });
}
END_TEST

START_TEST(stream_stops_short_of_a_run_end)
{
	/* 8 MiB to 40 MiB: the 24 MiB after it must stay out */
	stream_one_run("stream-mid", (struct pc_run){ 2048, 8192 });
}
END_TEST

/* A stream over a run partly resident: the resident pages are counted as
 * such, not as read, and the rest comes. Twice: resident at the front,
 * and resident in the middle, after a hole the stream reads (its windows'
 * reach must not swallow pages resident before it started). */
static void stream_partly_resident(const char *name, struct pc_run before)
{
	struct pc_warm_opts o = opts_for(PC_WARM_STREAM), ra = opts_for(PC_WARM_READAHEAD);
	const char *f = pc_test_make_file(name, BIG_PAGES, 0644, -1, -1);
	struct pc_run all = { 0, BIG_PAGES };
	int fd = open(f, O_RDONLY | O_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	/* pages resident a moment before can be gone when pc_warm() looks
	 * (DAMON, doc/design.md): the pages it must find are those mincore
	 * saw just before, and a mismatch while the kernel reclaimed runs
	 * the case again, twice at most */
	for (int attempt = 0;; attempt++) {
		struct pc_warm_stats st = { .size = sizeof(st) };
		uint64_t reclaimed = pc_test_reclaimed_pages(0), seen = 0;
		unsigned char *vec;
		int64_t got;

		pc_test_set_pattern(f, NULL, 0);
		ck_assert_int_ge(pc_warm(fd, &before, 1, &ra, NULL), 0);
		free(wait_resident_again(f, fd, &before, 1));
		pc_test_mincore(f, &vec);
		for (uint64_t p = 0; p < BIG_PAGES; p++)
			seen += vec[p] & 1;
		free(vec);
		got = pc_warm(fd, &all, 1, &o, &st);
		if (got != (int64_t)((BIG_PAGES - seen) * ps()) || st.pages_resident != seen ||
		    st.pages_read != BIG_PAGES - seen) {
			ck_assert_msg(attempt < 2 && pc_test_reclaimed_pages(1) != reclaimed,
				      "%s: %llu pages seen resident, pc_warm found %llu and read "
				      "%llu (returned %lld)", name, (unsigned long long)seen,
				      (unsigned long long)st.pages_resident,
				      (unsigned long long)st.pages_read, (long long)got);
			printf("note: %s: pages went while the kernel reclaimed: again\n", name);
			continue;
		}
		ck_assert_uint_le(seen, before.npages);
		assert_asked_for(fd, &all, 1, reclaimed);
		free(wait_resident_again(f, fd, &all, 1));
		break;
	}
	close(fd);
}

START_TEST(stream_skips_resident_pages)
{
	stream_partly_resident("stream-front", (struct pc_run){ 0, BIG_PAGES / 2 });
	stream_partly_resident("stream-middle", (struct pc_run){ BIG_PAGES / 2, 256 });
}
END_TEST

START_TEST(default_strategy_and_null_opts_work)
{
	const char *f = pc_test_make_file("default", FILE_PAGES, 0644, -1, -1);
	unsigned char *vec;
	int fd = open(f, O_RDONLY | O_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	pc_test_set_pattern(f, NULL, 0);
	ck_assert_int_eq(pc_warm(fd, runs, PC_ARRAY_SIZE(runs), NULL, NULL), RUN_PAGES * ps());
	vec = wait_resident(f, runs, PC_ARRAY_SIZE(runs));
	assert_far_pages_out(vec);
	free(vec);
	close(fd);
}
END_TEST

/* PC_WARM_DEFAULT is readahead(2): a large hole is not streamed, where
 * (stream_expected()) PC_WARM_STREAM streams the same hole. */
START_TEST(default_strategy_is_readahead)
{
	const struct pc_run all = { 0, BIG_PAGES };
	struct pc_warm_stats st = { .size = sizeof(st) };
	const char *f = pc_test_make_file("default-big", BIG_PAGES, 0644, -1, -1);
	unsigned char *vec;
	int fd = open(f, O_RDONLY | O_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	for (int stream = 0; stream < 2; stream++) {
		struct pc_warm_opts o = opts_for(stream ? PC_WARM_STREAM : PC_WARM_DEFAULT);

		pc_test_set_pattern(f, NULL, 0);
		ck_assert_int_eq(pc_warm(fd, &all, 1, &o, &st), (int64_t)(BIG_PAGES * ps()));
		ck_assert_uint_eq(st.pages_read, BIG_PAGES);
		if (!stream)
			ck_assert_uint_eq(st.pages_streamed, 0);
		else if (stream_expected())
			ck_assert_msg(st.pages_streamed > 0, "the stream streamed nothing here");
		vec = wait_resident_again(f, fd, &all, 1);
		free(vec);
	}
	close(fd);
}
END_TEST

static void resident_pages_not_read_again(const char *name, int strategy)
{
	/* pages 10, 11 and 2620 are resident already; 12 and the rest are not */
	static const uint64_t cached[] = { 10, 11, 2620 };
	struct pc_warm_opts o = opts_for(strategy);
	struct pc_warm_stats st = { .size = sizeof(st) };
	const char *f = pc_test_make_file(name, FILE_PAGES, 0644, -1, -1);
	unsigned char *vec;
	int fd = open(f, O_RDONLY | O_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	pc_test_set_pattern(f, cached, PC_ARRAY_SIZE(cached));
	ck_assert_int_eq(pc_warm(fd, runs, PC_ARRAY_SIZE(runs), &o, &st),
			 (RUN_PAGES - 3) * ps());
	ck_assert_uint_eq(st.pages_resident, 3);
	ck_assert_uint_eq(st.pages_read, RUN_PAGES - 3);
	vec = wait_resident(f, runs, PC_ARRAY_SIZE(runs));
	free(vec);
	/* and a second warm right after reads nothing */
	ck_assert_int_eq(pc_warm(fd, runs, PC_ARRAY_SIZE(runs), &o, &st), 0);
	ck_assert_uint_eq(st.pages_read, 0);
	ck_assert_uint_eq(st.pages_resident, RUN_PAGES);
	close(fd);
}

START_TEST(readahead_skips_resident_pages)
{
	resident_pages_not_read_again("skip-readahead", PC_WARM_READAHEAD);
}
END_TEST

START_TEST(io_uring_skips_resident_pages)
{
	if (io_uring_missing("io_uring skips resident pages"))
		return;
	resident_pages_not_read_again("skip-io-uring", PC_WARM_IO_URING);
}
END_TEST

static void budget_stops_early(const char *name, int strategy)
{
	/* 40.5 pages of budget: the first run (3), the second (1), 36 of the third */
	struct pc_warm_opts o = opts_for(strategy);
	struct pc_warm_stats st = { .size = sizeof(st) };
	const struct pc_run got[] = { { 10, 3 }, { 1100, 1 }, { 2600, 36 } };
	const char *f = pc_test_make_file(name, FILE_PAGES, 0644, -1, -1);
	unsigned char *vec;
	int fd = open(f, O_RDONLY | O_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	pc_test_set_pattern(f, NULL, 0);
	o.max_bytes = 40 * ps() + ps() / 2; /* a partial page is not read */
	ck_assert_int_eq(pc_warm(fd, runs, PC_ARRAY_SIZE(runs), &o, &st), 40 * ps());
	ck_assert_int_eq(st.budget_exhausted, 1);
	ck_assert_uint_eq(st.pages_read, 40);
	vec = wait_resident(f, got, PC_ARRAY_SIZE(got));
	ck_assert(!(vec[2600 + 36] & 1));
	ck_assert(!(vec[7000] & 1));
	ck_assert(!(vec[7095] & 1));
	assert_far_pages_out(vec);
	free(vec);
	close(fd);
}

START_TEST(readahead_budget_stops_early)
{
	budget_stops_early("budget-readahead", PC_WARM_READAHEAD);
}
END_TEST

START_TEST(io_uring_budget_stops_early)
{
	if (io_uring_missing("io_uring budget"))
		return;
	budget_stops_early("budget-io-uring", PC_WARM_IO_URING);
}
END_TEST

/* ---- cancellation from another thread ---------------------------------------- */

struct cancel_ctx {
	sem_t first_progress, go_on;
	int calls;
	int fd;
	int strategy;
	volatile int cancel;
	int64_t ret;
	struct pc_warm_stats st;
	struct pc_run many[64];
};

static void block_on_first_progress(uint64_t bytes_done, void *arg)
{
	struct cancel_ctx *c = arg;

	if (c->calls++ == 0) {
		sem_post(&c->first_progress);
		sem_wait(&c->go_on);
	}
}

static void *warm_thread(void *arg)
{
	struct cancel_ctx *c = arg;
	struct pc_warm_opts o = opts_for(c->strategy);

	o.queue_depth = 1;
	o.progress = block_on_first_progress;
	o.progress_arg = c;
	o.cancel = &c->cancel;
	c->st.size = sizeof(c->st);
	c->ret = pc_warm(c->fd, c->many, PC_ARRAY_SIZE(c->many), &o, &c->st);
	return NULL;
}

static void cancel_from_another_thread(const char *name, int strategy)
{
	const char *f = pc_test_make_file(name, FILE_PAGES, 0644, -1, -1);
	struct cancel_ctx *c = calloc(1, sizeof(*c));
	unsigned char *vec;
	pthread_t t;

	ck_assert_ptr_nonnull(c);
	/* not page 0: valgrind reads the head of every file that is mapped */
	for (size_t i = 0; i < PC_ARRAY_SIZE(c->many); i++)
		c->many[i] = (struct pc_run){ 64 + i * 128, 1 };
	c->strategy = strategy;
	c->fd = open(f, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(c->fd, 0);
	pc_test_set_pattern(f, NULL, 0);
	sem_init(&c->first_progress, 0, 0);
	sem_init(&c->go_on, 0, 0);
	ck_assert_int_eq(pthread_create(&t, NULL, warm_thread, c), 0);
	sem_wait(&c->first_progress);
	__atomic_store_n(&c->cancel, 1, __ATOMIC_RELAXED);
	sem_post(&c->go_on);
	pthread_join(t, NULL);
	ck_assert_int_eq(c->ret, -ECANCELED);
	/* one read (queue depth 1) was done when the flag went up */
	ck_assert_uint_eq(c->st.pages_read, 1);
	ck_assert_uint_eq(c->st.bytes_done, ps()); /* how far it got */
	vec = wait_resident(f, c->many, 1);
	for (size_t i = 1; i < PC_ARRAY_SIZE(c->many); i++)
		ck_assert_msg(!(vec[c->many[i].page] & 1), "page %llu read after the cancel",
			      (unsigned long long)c->many[i].page);
	free(vec);
	sem_destroy(&c->first_progress);
	sem_destroy(&c->go_on);
	close(c->fd);
	free(c);
}

START_TEST(readahead_cancel_from_another_thread)
{
	cancel_from_another_thread("cancel-readahead", PC_WARM_READAHEAD);
}
END_TEST

START_TEST(io_uring_cancel_from_another_thread)
{
	if (io_uring_missing("io_uring cancel"))
		return;
	cancel_from_another_thread("cancel-io-uring", PC_WARM_IO_URING);
}
END_TEST

START_TEST(cancel_set_before_start_reads_nothing)
{
	const char *f = pc_test_make_file("cancel-early", 64, 0644, -1, -1);
	struct pc_warm_opts o = opts_for(PC_WARM_DEFAULT);
	struct pc_warm_stats st = { .size = sizeof(st) };
	const int cancel = 1;
	int fd = open(f, O_RDONLY | O_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	o.cancel = &cancel;
	ck_assert_int_eq(pc_warm(fd, runs, 1, &o, &st), -ECANCELED);
	ck_assert_uint_eq(st.pages_read, 0);
	ck_assert_uint_eq(st.bytes_done, 0);
	close(fd);
}
END_TEST

/* ---- clamping and conversion ------------------------------------------------- */

START_TEST(runs_past_a_shrunk_file_are_clamped)
{
	const struct pc_run wanted[] = { { 10, 5 }, { 60, 10 }, { 100, 5 } };
	const struct pc_run kept[] = { { 10, 5 }, { 60, 3 } };
	const char *f = pc_test_make_file("shrunk", 128, 0644, -1, -1);
	struct pc_warm_stats st = { .size = sizeof(st) };
	unsigned char *vec;
	int fd = open(f, O_RDWR | O_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	/* 62.5 pages: page 62 holds the last half page */
	ck_assert_int_eq(ftruncate(fd, (off_t)(62 * ps() + ps() / 2)), 0);
	pc_test_set_pattern(f, NULL, 0);
	ck_assert_int_eq(pc_warm(fd, wanted, PC_ARRAY_SIZE(wanted), NULL, &st),
			 (5 + 2) * ps() + ps() / 2);
	ck_assert_uint_eq(st.pages_wanted, 20);
	ck_assert_uint_eq(st.pages_beyond_eof, 7 + 5);
	ck_assert_uint_eq(st.pages_read, 8);
	vec = wait_resident(f, kept, PC_ARRAY_SIZE(kept));
	free(vec);
	close(fd);
}
END_TEST

START_TEST(snapshot_runs_are_converted_to_this_page_size)
{
	/* a snapshot in quarter pages: runs that share a page merge, partial
	 * pages round outwards */
	const uint64_t q = 4;
	const struct pc_run snap_runs[] = { { 40 * q, 1 }, { 40 * q + 2, 1 }, { 2600 * q + 3, 2 },
					    { 7000 * q, 8 * q } };
	const struct pc_run local[] = { { 40, 1 }, { 2600, 2 }, { 7000, 8 } };
	struct pc_snapshot_info info = { .size = sizeof(info), .page_size = (uint32_t)(ps() / q) };
	struct pc_snapshot_file m = { .size = sizeof(m), .quality = PC_QUALITY_EXACT };
	const char *f = pc_test_make_file("converted", FILE_PAGES, 0644, -1, -1);
	struct pc_warm_stats st = { .size = sizeof(st) };
	const struct pc_snapshot_file *file;
	struct pc_snapshot_writer *w;
	struct pc_snapshot_reader *rd;
	unsigned char *vec;
	int snap = memfd_create("snap", MFD_CLOEXEC), fd = open(f, O_RDONLY | O_CLOEXEC);

	ck_assert_int_ge(snap, 0);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pc_snapshot_writer_new(snap, &info, &w), 0);
	ck_assert_int_eq(pc_snapshot_write_runs(w, "converted", &m, snap_runs,
						PC_ARRAY_SIZE(snap_runs)), 0);
	ck_assert_int_eq(pc_snapshot_writer_finish(w), 0);
	pc_snapshot_writer_free(w);
	ck_assert_int_eq(lseek(snap, 0, SEEK_SET), 0);
	ck_assert_int_eq(pc_snapshot_reader_new(snap, &rd), 0);
	ck_assert_int_eq(pc_snapshot_next_file(rd, &file), 1);
	pc_test_set_pattern(f, NULL, 0);
	ck_assert_int_eq(pc_warm_snapshot(fd, rd, NULL, &st), 11 * ps());
	ck_assert_uint_eq(st.pages_wanted, 11);
	ck_assert_uint_eq(st.pages_read, 11);
	ck_assert_int_eq(pc_snapshot_next_file(rd, &file), 0);
	vec = wait_resident(f, local, PC_ARRAY_SIZE(local));
	ck_assert(!(vec[39] & 1));
	ck_assert(!(vec[41] & 1));
	ck_assert(!(vec[2602] & 1));
	assert_far_pages_out(vec);
	free(vec);
	pc_snapshot_reader_free(rd);
	close(snap);
	close(fd);
}
END_TEST

START_TEST(bad_arguments_are_einval)
{
	const struct pc_run unsorted[] = { { 10, 5 }, { 12, 1 } };
	const struct pc_run empty[] = { { 10, 0 } };
	const char *f = pc_test_make_file("args", 16, 0644, -1, -1);
	struct pc_warm_opts o = opts_for(PC_WARM_DEFAULT);
	unsigned char grown[sizeof(struct pc_warm_opts) + 8] = { 0 };
	int fd = open(f, O_RDONLY | O_CLOEXEC), pipefd[2];

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pc_warm(fd, unsorted, 2, NULL, NULL), -EINVAL);
	ck_assert_int_eq(pc_warm(fd, empty, 1, NULL, NULL), -EINVAL);
	ck_assert_int_eq(pc_warm(fd, NULL, 1, NULL, NULL), -EINVAL);
	ck_assert_int_eq(pc_warm(fd, NULL, 0, NULL, NULL), 0);
	o.strategy = 99;
	ck_assert_int_eq(pc_warm(fd, runs, 1, &o, NULL), -EINVAL);
	o = opts_for(PC_WARM_IO_URING);
	o.queue_depth = 100000;
	ck_assert_int_eq(pc_warm(fd, runs, 1, &o, NULL), -EINVAL);
	/* a newer caller's larger block: unknown fields must be zero */
	o = opts_for(PC_WARM_DEFAULT);
	memcpy(grown, &o, sizeof(o));
	*(size_t *)grown = sizeof(grown);
	ck_assert_int_eq(pc_warm(fd, NULL, 0, (struct pc_warm_opts *)grown, NULL), 0);
	grown[sizeof(grown) - 1] = 1;
	ck_assert_int_eq(pc_warm(fd, NULL, 0, (struct pc_warm_opts *)grown, NULL), -EINVAL);
	/* not a file */
	ck_assert_int_eq(pipe2(pipefd, O_CLOEXEC), 0);
	ck_assert_int_eq(pc_warm(pipefd[0], runs, 1, NULL, NULL), -EINVAL);
	ck_assert_int_eq(pc_warm(-1, runs, 1, NULL, NULL), -EBADF);
	close(pipefd[0]);
	close(pipefd[1]);
	close(fd);
}
END_TEST

/* As uid 65534 on a root-owned 0644 file the kernel hides residency:
 * nothing can be skipped, so every page is read, and the stats say why. */
static int warm_as_nobody(void *arg, void *buf, size_t bufsize)
{
	const char *path = arg;
	struct pc_warm_stats st = { .size = sizeof(st) };
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int64_t ret;

	if (fd < 0)
		return -1;
	ret = pc_warm(fd, runs, PC_ARRAY_SIZE(runs), NULL, &st);
	close(fd);
	if (bufsize >= sizeof(st))
		memcpy(buf, &st, sizeof(st));
	return ret == (int64_t)((RUN_PAGES - st.pages_resident) * ps()) ? 0 : 1;
}

/* The RWF_NOWAIT mode of the scratch directory's filesystem (root's). */
static int nowait_here(void)
{
	int dirfd = open(pc_test_dir(), O_RDONLY | O_DIRECTORY | O_CLOEXEC), mode;

	ck_assert_int_ge(dirfd, 0);
	mode = pc_detect_nowait(dirfd);
	close(dirfd);
	return mode;
}

/* uid 65534 warms a root-owned 0644 file: where mincore hides it and no
 * clean probe exists, every page of the runs is read; where RWF_NOWAIT is
 * clean, the probe tells which are resident already. */
START_TEST(hidden_residency_reads_every_page)
{
	static const uint64_t cached[] = { 10, 11 };
	const char *f = pc_test_make_file("hidden", FILE_PAGES, 0644, 0, 0);
	struct pc_warm_stats st;
	unsigned char *vec;

	if (pc_detect_mincore() == PC_MINCORE_FULL) {
		pc_test_skip("warm of a hidden file", "this kernel hides no file's residency");
		return;
	}
	pc_test_set_pattern(f, cached, PC_ARRAY_SIZE(cached));
	ck_assert_int_eq(pc_test_as_nobody(warm_as_nobody, (void *)f, &st, sizeof(st)), 0);
	if (nowait_here() == PC_NOWAIT_CLEAN) {
		/* a clean probe sees the two cached pages: only the rest is read */
		ck_assert_int_eq(st.quality, PC_QUALITY_EXACT);
		ck_assert_uint_eq(st.pages_resident, PC_ARRAY_SIZE(cached));
		ck_assert_uint_eq(st.pages_read, RUN_PAGES - PC_ARRAY_SIZE(cached));
	} else {
		ck_assert_int_eq(st.quality, PC_QUALITY_UNKNOWN);
		ck_assert_uint_eq(st.pages_resident, 0);
		ck_assert_uint_eq(st.pages_read, RUN_PAGES);
	}
	vec = wait_resident(f, runs, PC_ARRAY_SIZE(runs));
	free(vec);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("warm");
	TCase *tc = tcase_create("warm");
	SRunner *sr;
	int failed;

	if (!pc_test_is_root()) {
		/* mincore tells the truth about every file only to root here */
		printf("SKIP: test-warm needs root\n");
		return 77;
	}
	tcase_add_test(tc, readahead_brings_back_the_runs_only);
	tcase_add_test(tc, io_uring_brings_back_the_runs_only);
	tcase_add_test(tc, populate_brings_back_the_runs_at_once);
	tcase_add_test(tc, stream_brings_back_small_runs_only);
	tcase_add_test(tc, stream_reads_a_run_to_the_end_of_the_file);
	tcase_add_test(tc, stream_stops_short_of_a_run_end);
	tcase_add_test(tc, stream_skips_resident_pages);
	tcase_add_test(tc, default_strategy_and_null_opts_work);
	tcase_add_test(tc, default_strategy_is_readahead);
	tcase_add_test(tc, readahead_skips_resident_pages);
	tcase_add_test(tc, io_uring_skips_resident_pages);
	tcase_add_test(tc, readahead_budget_stops_early);
	tcase_add_test(tc, io_uring_budget_stops_early);
	tcase_add_test(tc, readahead_cancel_from_another_thread);
	tcase_add_test(tc, io_uring_cancel_from_another_thread);
	tcase_add_test(tc, cancel_set_before_start_reads_nothing);
	tcase_add_test(tc, runs_past_a_shrunk_file_are_clamped);
	tcase_add_test(tc, snapshot_runs_are_converted_to_this_page_size);
	tcase_add_test(tc, bad_arguments_are_einval);
	tcase_add_test(tc, hidden_residency_reads_every_page);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	pc_test_cases_dir(); /* a failed case leaves no directory behind */
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
