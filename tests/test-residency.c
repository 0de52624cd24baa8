/* SPDX-License-Identifier: MIT */
/*
 * pc_residency() on the real kernel of this machine (Linux 6.18, ext4):
 * files with known residency patterns, seen by root and by uid 65534,
 * forced sources, the run iterator, size and range edge cases, file types
 * that must be refused, block devices, memfds and tmpfs.
 *
 * Patterns are built right before each check (evict the whole file, read
 * chosen pages through a POSIX_FADV_RANDOM fd) and compared with what
 * mincore shows root at that moment (doc/kernels.md section 7). When the truth
 * moved during a call (background reclaim), the case sets the pattern up
 * again, a few times at most.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pagecache/pagecache.h"
#include "pc-test.h"

#define FILE_PAGES 64
#define MAXP 256      /* pages a snapshot records */
#define MAXRUNS 128
#define ATTEMPTS 4    /* set-ups of a pattern before giving up on a quiet moment */
#define PC_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static uint64_t ps;

static void setup(void)
{
	ps = (uint64_t)sysconf(_SC_PAGESIZE);
}

/* ---- snapshots of a result (they cross the nobody child's pipe) ---------- */

struct snap {
	int ret;
	uint64_t first_page, npages, resident, file_size;
	int quality, source, perturbed;
	int test_first;          /* pc_residency_test(r, first_page) */
	int runs_ret;            /* last pc_residency_next_run() return */
	unsigned int nruns;
	struct pc_run runs[MAXRUNS];
	int bit[MAXP];           /* pc_residency_test(r, first_page + i) */
	/* the caller's own fd, before and after (hidden-file cases) */
	off_t pos_before, pos_after;
	int fl_before, fl_after;
};

static void snap_take(struct snap *s, int ret, const struct pc_residency *r)
{
	struct pc_run run;
	uint64_t p;
	int rc;

	s->ret = ret;
	if (ret < 0 || !r)
		return;
	s->first_page = pc_residency_first_page(r);
	s->npages = pc_residency_npages(r);
	s->resident = pc_residency_resident(r);
	s->file_size = pc_residency_file_size(r);
	s->quality = pc_residency_quality(r);
	s->source = pc_residency_source(r);
	s->perturbed = pc_residency_perturbed(r);
	s->test_first = pc_residency_test(r, s->first_page);
	for (uint64_t i = 0; i < s->npages && i < MAXP; i++)
		s->bit[i] = pc_residency_test(r, s->first_page + i);
	s->nruns = 0;
	for (p = s->first_page; (rc = pc_residency_next_run(r, p, &run)) > 0;
	     p = run.page + run.npages) {
		if (s->nruns < MAXRUNS)
			s->runs[s->nruns] = run;
		s->nruns++;
		if (run.npages == 0)
			break; /* would loop forever: the checks below catch it */
	}
	s->runs_ret = rc;
}

static int vec_count(const unsigned char *v, uint64_t n)
{
	int c = 0;

	for (uint64_t i = 0; i < n; i++)
		c += v[i] & 1;
	return c;
}

/* An EXACT answer over file pages [first, first + n) equal to truth (indexed
 * by file page), with runs that reproduce it. */
static void assert_snap_exact(const struct snap *s, const unsigned char *truth, uint64_t first,
			      uint64_t n)
{
	unsigned char fromruns[MAXP];
	uint64_t prev_end = 0;

	ck_assert_int_eq(s->ret, 0);
	ck_assert_int_eq(s->quality, PC_QUALITY_EXACT);
	ck_assert_uint_eq(s->first_page, first);
	ck_assert_uint_eq(s->npages, n);
	ck_assert_uint_le(n, MAXP);
	ck_assert_uint_eq(s->resident, (uint64_t)vec_count(truth + first, n));
	for (uint64_t i = 0; i < n; i++)
		ck_assert_msg(s->bit[i] == (truth[first + i] & 1),
			      "page %llu: pc_residency_test %d, mincore %d",
			      (unsigned long long)(first + i), s->bit[i], truth[first + i] & 1);
	/* runs: in order, maximal (a gap between two), inside the range, and
	 * together exactly the resident pages */
	ck_assert_int_eq(s->runs_ret, 0);
	ck_assert_uint_le(s->nruns, MAXRUNS);
	memset(fromruns, 0, sizeof(fromruns));
	for (unsigned int k = 0; k < s->nruns; k++) {
		const struct pc_run *run = &s->runs[k];

		ck_assert_uint_gt(run->npages, 0);
		ck_assert_uint_ge(run->page, first);
		ck_assert_uint_le(run->page + run->npages, first + n);
		if (k > 0)
			ck_assert_uint_gt(run->page, prev_end);
		prev_end = run->page + run->npages;
		for (uint64_t p = run->page; p < run->page + run->npages; p++)
			fromruns[p - first] = 1;
	}
	for (uint64_t i = 0; i < n; i++)
		ck_assert_int_eq(fromruns[i], truth[first + i] & 1);
}

/* cachestat(2) answers root for any file here (6.5+; not under valgrind). */
static int have_cachestat(void)
{
	int m = pc_detect_cachestat();

	return m == PC_CACHESTAT_GATED || m == PC_CACHESTAT_OPEN;
}

/* The RWF_NOWAIT mode of the scratch directory's filesystem. */
static int nowait_here(void)
{
	int dirfd = open(pc_test_dir(), O_RDONLY | O_DIRECTORY | O_CLOEXEC), mode;

	ck_assert_int_ge(dirfd, 0);
	mode = pc_detect_nowait(dirfd);
	close(dirfd);
	return mode;
}

static void assert_snap_unknown(const struct snap *s)
{
	ck_assert_int_eq(s->ret, 0);
	ck_assert_int_eq(s->quality, PC_QUALITY_UNKNOWN);
	ck_assert_int_eq(s->source, PC_SOURCE_NONE);
	ck_assert_uint_eq(s->resident, 0);
	ck_assert_int_eq(s->test_first, -ENODATA);
	ck_assert_int_eq(s->runs_ret, -ENODATA);
	ck_assert_uint_eq(s->nruns, 0);
}

/* The expected vector of a pattern over npages of a block device. */
static unsigned char *pattern_vec_raw(uint64_t npages, const uint64_t *pages, size_t n)
{
	unsigned char *v = calloc(npages ? npages : 1, 1);

	ck_assert_ptr_nonnull(v);
	for (size_t i = 0; i < n; i++)
		v[pages[i]] = 1;
	return v;
}

/* The expected vector of a pattern over npages of a regular file. (Under
 * valgrind too: the library and pc_test_mincore map files PROT_NONE, so
 * valgrind does not read their heads.) */
static unsigned char *pattern_vec(uint64_t npages, const uint64_t *pages, size_t n)
{
	return pattern_vec_raw(npages, pages, n);
}

static int vec_count(const unsigned char *v, uint64_t n);

/* How many pages of [lo, hi) the pattern leaves resident. */
static int pattern_count(uint64_t npages, const uint64_t *pages, size_t n, uint64_t lo,
			 uint64_t hi)
{
	unsigned char *v = pattern_vec(npages, pages, n);
	int c = vec_count(v + lo, hi - lo);

	free(v);
	return c;
}

/* ---- calls, as root and as uid 65534 ------------------------------------- */

struct call {
	const char *path;
	uint64_t offset, length;
	unsigned int flags;
	off_t seek_to;           /* the caller's fd position before the call */
	int advice;              /* posix_fadvise on the caller's fd, or -1 */
	int reread_page0;        /* afterwards: evict, read 1 byte at 0 through the fd */
	int facts;               /* pc_residency_facts() with the test's own statx */
};

#ifndef STATX_MNT_ID_UNIQUE
#define STATX_MNT_ID_UNIQUE 0x00004000U
#endif

/* pc_file_facts from statx(2) of fd, as a tree walk fills them. */
static int facts_of(int fd, struct pc_file_facts *fx)
{
	struct statx stx;

	if (statx(fd, "", AT_EMPTY_PATH, STATX_TYPE | STATX_SIZE | STATX_MNT_ID_UNIQUE, &stx) < 0)
		return -errno;
	memset(fx, 0, sizeof(*fx));
	fx->size = sizeof(*fx);
	fx->mode = stx.stx_mode;
	fx->file_size = stx.stx_size;
	fx->mnt_id = stx.stx_mask & STATX_MNT_ID_UNIQUE ? stx.stx_mnt_id : 0;
	return 0;
}

static int call_fn(void *arg, void *buf, size_t bufsize)
{
	const struct call *c = arg;
	struct snap *s = buf;
	struct pc_residency *r = NULL;
	int fd, ret;

	(void)bufsize;
	fd = open(c->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (c->advice >= 0 && posix_fadvise(fd, 0, 0, c->advice) != 0)
		return -1;
	if (lseek(fd, c->seek_to, SEEK_SET) < 0)
		return -errno;
	s->pos_before = lseek(fd, 0, SEEK_CUR);
	s->fl_before = fcntl(fd, F_GETFL);
	if (c->facts) {
		struct pc_file_facts fx;

		ret = facts_of(fd, &fx);
		if (ret < 0)
			return ret;
		ret = pc_residency_facts(fd, &fx, c->offset, c->length, c->flags, &r);
	} else {
		ret = pc_residency(fd, c->offset, c->length, c->flags, &r);
	}
	snap_take(s, ret, r);
	s->pos_after = lseek(fd, 0, SEEK_CUR);
	s->fl_after = fcntl(fd, F_GETFL);
	pc_residency_free(r);
	if (c->reread_page0) {
		char byte;

		/* let the reads a destructive probe started finish, so that
		 * eviction drops them all */
		if (c->flags & PC_RES_ALLOW_PERTURB)
			usleep(100000);

		/* The caller's fd as the caller left it: what does a miss bring? */
		if (pc_evict(fd, 0, 0) < 0 || pread(fd, &byte, 1, 0) != 1)
			return -2;
	}
	close(fd);
	return 0;
}

static void call_as(int nobody, const struct call *c, struct snap *s)
{
	int ret;

	memset(s, 0, sizeof(*s));
	if (nobody)
		ret = pc_test_as_nobody(call_fn, (void *)c, s, sizeof(*s));
	else
		ret = call_fn((void *)c, s, sizeof(*s));
	ck_assert_msg(ret == 0, "call failed in the %s: %d", nobody ? "nobody child" : "test", ret);
}

/* Wait (bounded) until at least want pages of path are resident. */
static int wait_resident_at_least(const char *path, int want)
{
	for (int i = 0; i < 100; i++) {
		unsigned char *v;
		uint64_t n = pc_test_mincore(path, &v);
		int c = vec_count(v, n);

		free(v);
		if (c >= want)
			return c;
		usleep(10000);
	}
	return -1;
}

/*
 * How a perturbing answer compares with the truth taken right before it:
 * 0 equal, 1 only extra resident pages, -1 a resident page reported missing
 * (or an error, or no answer to compare).
 *
 * Extra pages have a known cause on a destructive kernel: the readahead that
 * a missed RWF_NOWAIT read starts can complete before the read looks again
 * (seen here about once per 1000 probes of a cold page under CPU
 * contention), so the probe reports the page it has just read in. No probe
 * can tell that apart; the cases set the pattern up again and retry.
 */
static int perturbed_vs_truth(const struct snap *s, const unsigned char *truth, uint64_t np)
{
	int extra = 0;

	if (s->ret < 0 || s->quality != PC_QUALITY_EXACT || s->npages != np || np > MAXP)
		return -1;
	if (s->test_first == -ENODATA) { /* counts only */
		uint64_t want = (uint64_t)vec_count(truth, np);

		return s->resident == want ? 0 : s->resident > want ? 1 : -1;
	}
	for (uint64_t i = 0; i < np; i++) {
		if (s->bit[i] == (truth[i] & 1))
			continue;
		if (s->bit[i] == 1 && !(truth[i] & 1))
			extra = 1;
		else
			return -1;
	}
	return extra;
}

/*
 * Set the pattern, take root's mincore truth, make the call, take the truth
 * again; repeat when reclaim moved something in between. Returns the truth
 * (malloc'ed, one byte per file page) and leaves the snapshot in *s.
 * Perturbing calls change the truth themselves: they are compared with the
 * truth taken right before, and repeated only for the race described above.
 */
static unsigned char *pattern_call(const char *path, const uint64_t *pages, size_t n, int nobody,
				   const struct call *c, struct snap *s, int perturbs)
{
	for (int attempt = 0;; attempt++) {
		unsigned char *before, *after, *want;
		uint64_t np, np2;
		int same, last = attempt + 1 == ATTEMPTS;

		pc_test_set_pattern(path, pages, n);
		np = pc_test_mincore(path, &before);
		want = pattern_vec(np, pages, n);
		same = memcmp(before, want, np) == 0;
		free(want);
		if (!same && !last) {
			/* reads a probe started before are still landing */
			usleep(200000);
			free(before);
			continue;
		}
		ck_assert_msg(same, "%s: could not set the pattern up", path);
		call_as(nobody, c, s);
		if (perturbs) {
			int cmp = perturbed_vs_truth(s, before, np);

			if (cmp == 1 && !last) {
				printf("NOTE: %s: a probe reported a page it had just read in; retrying\n",
				       path);
				fflush(stdout);
				wait_resident_at_least(path, (int)np);
				free(before);
				continue;
			}
			return before;
		}
		np2 = pc_test_mincore(path, &after);
		same = np == np2 && memcmp(before, after, np) == 0;
		free(after);
		if (same || last) {
			ck_assert_msg(same, "%s: residency kept moving during the call", path);
			return before;
		}
		free(before);
	}
}

static const uint64_t pat[] = { 0, 1, 2, 5, 17, 40, 41, 63 };
#define NPAT (sizeof(pat) / sizeof(pat[0]))

/* ---- owned files, as root ------------------------------------------------ */

START_TEST(owned_file_bitmap_equals_pattern)
{
	const char *path = pc_test_make_file("owned", FILE_PAGES, 0644, -1, -1);
	struct call c = { .path = path, .advice = -1 };
	struct snap s;
	unsigned char *truth = pattern_call(path, pat, NPAT, 0, &c, &s, 0);

	assert_snap_exact(&s, truth, 0, FILE_PAGES);
	ck_assert(s.source == PC_SOURCE_MINCORE || s.source == PC_SOURCE_CACHESTAT);
	ck_assert_int_eq(s.perturbed, 0);
	ck_assert_uint_eq(s.file_size, FILE_PAGES * ps);
	free(truth);
}
END_TEST

START_TEST(owned_file_fully_cached_and_evicted)
{
	const char *path = pc_test_make_file("uniform", FILE_PAGES, 0644, -1, -1);
	uint64_t all[FILE_PAGES];
	struct call c = { .path = path, .advice = -1 };
	struct snap s;
	unsigned char *truth;

	for (uint64_t i = 0; i < FILE_PAGES; i++)
		all[i] = i;
	truth = pattern_call(path, all, FILE_PAGES, 0, &c, &s, 0);
	assert_snap_exact(&s, truth, 0, FILE_PAGES);
	ck_assert_uint_eq(s.resident, FILE_PAGES);
	ck_assert_uint_eq(s.nruns, 1);
	ck_assert(s.source == PC_SOURCE_MINCORE || s.source == PC_SOURCE_CACHESTAT);
	free(truth);

	truth = pattern_call(path, NULL, 0, 0, &c, &s, 0);
	assert_snap_exact(&s, truth, 0, FILE_PAGES);
	ck_assert_uint_eq(s.resident, 0);
	ck_assert_uint_eq(s.nruns, 0);
	free(truth);
}
END_TEST

START_TEST(owned_0444_file_is_exact_for_its_owner)
{
	const char *path = pc_test_make_file("owned-0444", FILE_PAGES, 0444, -1, -1);
	struct call c = { .path = path, .advice = -1 };
	struct snap s;
	unsigned char *truth = pattern_call(path, pat, NPAT, 0, &c, &s, 0);

	assert_snap_exact(&s, truth, 0, FILE_PAGES);
	free(truth);
}
END_TEST

START_TEST(count_only_counts_without_bitmap)
{
	const char *path = pc_test_make_file("count", FILE_PAGES, 0644, -1, -1);
	struct call c = { .path = path, .advice = -1, .flags = PC_RES_COUNT_ONLY };
	struct snap s;
	unsigned char *truth = pattern_call(path, pat, NPAT, 0, &c, &s, 0);

	ck_assert_int_eq(s.ret, 0);
	ck_assert_int_eq(s.quality, PC_QUALITY_EXACT);
	ck_assert_uint_eq(s.npages, FILE_PAGES);
	ck_assert_uint_eq(s.resident, pattern_count(FILE_PAGES, pat, NPAT, 0, FILE_PAGES));
	ck_assert_int_eq(s.test_first, -ENODATA);
	ck_assert_int_eq(s.runs_ret, -ENODATA);
	/* cachestat answers counts where the kernel has it (valgrind does not) */
	ck_assert_int_eq(s.source, have_cachestat() ? PC_SOURCE_CACHESTAT : PC_SOURCE_MINCORE);
	free(truth);
}
END_TEST

/* pc_residency_facts(): the caller's statx stands for the library's own,
 * and the answers are pc_residency()'s. */
START_TEST(facts_give_the_same_answers)
{
	const char *path = pc_test_make_file("facts", FILE_PAGES, 0644, -1, -1);
	struct call c = { .path = path, .advice = -1, .facts = 1 };
	struct snap s;
	unsigned char *truth = pattern_call(path, pat, NPAT, 0, &c, &s, 0);

	assert_snap_exact(&s, truth, 0, FILE_PAGES);
	ck_assert_uint_eq(s.file_size, FILE_PAGES * ps);
	free(truth);

	c.flags = PC_RES_COUNT_ONLY;
	truth = pattern_call(path, pat, NPAT, 0, &c, &s, 0);
	ck_assert_int_eq(s.ret, 0);
	ck_assert_int_eq(s.quality, PC_QUALITY_EXACT);
	ck_assert_uint_eq(s.npages, FILE_PAGES);
	ck_assert_uint_eq(s.resident, pattern_count(FILE_PAGES, pat, NPAT, 0, FILE_PAGES));
	ck_assert_int_eq(s.test_first, -ENODATA);
	ck_assert_int_eq(s.source, have_cachestat() ? PC_SOURCE_CACHESTAT : PC_SOURCE_MINCORE);
	free(truth);

	/* a range, and twice in a row (the second meets the mount remembered) */
	c.flags = 0;
	c.offset = 3 * ps;
	c.length = 20 * ps;
	for (int i = 0; i < 2; i++) {
		truth = pattern_call(path, pat, NPAT, 0, &c, &s, 0);
		assert_snap_exact(&s, truth, 3, 20);
		free(truth);
	}
}
END_TEST

/* The facts' size is the file's size as the caller saw it: a file that
 * grew since is scanned up to that size. */
START_TEST(facts_size_is_the_callers)
{
	const char *path = pc_test_make_file("facts-size", FILE_PAGES, 0644, -1, -1);
	struct pc_residency *r = NULL;
	struct pc_file_facts fx;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(facts_of(fd, &fx), 0);
	fx.file_size = 10 * ps + 1;
	ck_assert_int_eq(pc_residency_facts(fd, &fx, 0, 0, 0, &r), 0);
	ck_assert_uint_eq(pc_residency_file_size(r), 10 * ps + 1);
	ck_assert_uint_eq(pc_residency_npages(r), 11);
	ck_assert_int_eq(pc_residency_quality(r), PC_QUALITY_EXACT);
	pc_residency_free(r);
	close(fd);
}
END_TEST

START_TEST(facts_refused)
{
	const char *path = pc_test_make_file("facts-bad", 4, 0644, -1, -1);
	struct pc_residency *sentinel = (struct pc_residency *)&sentinel, *r = sentinel;
	struct {
		struct pc_file_facts fx;
		uint64_t newer;
	} big;
	struct pc_file_facts fx;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int dfd = open(pc_test_dir(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_ge(dfd, 0);
	ck_assert_int_eq(facts_of(fd, &fx), 0);
	ck_assert_int_eq(pc_residency_facts(fd, NULL, 0, 0, 0, &r), -EINVAL);
	ck_assert_int_eq(pc_residency_facts(fd, &fx, 0, 0, 0, NULL), -EINVAL);
	ck_assert_int_eq(pc_residency_facts(fd, &fx, 0, 0, 1u << 30, &r), -EINVAL);
	fx.size = 4;
	ck_assert_int_eq(pc_residency_facts(fd, &fx, 0, 0, 0, &r), -EINVAL);
	/* an older caller's struct without the mode: no type, refused */
	fx.size = sizeof(size_t);
	ck_assert_int_eq(pc_residency_facts(fd, &fx, 0, 0, 0, &r), -EINVAL);
	fx.size = sizeof(fx);
	/* a newer caller's field this library does not know */
	memset(&big, 0, sizeof(big));
	big.fx = fx;
	big.fx.size = sizeof(big);
	big.newer = 1;
	ck_assert_int_eq(pc_residency_facts(fd, &big.fx, 0, 0, 0, &r), -EINVAL);
	big.newer = 0;
	ck_assert_int_eq(pc_residency_facts(fd, &big.fx, 0, 0, 0, &r), 0);
	ck_assert_ptr_ne(r, sentinel);
	pc_residency_free(r);
	r = sentinel;
	/* types the library does not measure */
	fx.mode = S_IFIFO | 0644;
	ck_assert_int_eq(pc_residency_facts(fd, &fx, 0, 0, 0, &r), -EINVAL);
	ck_assert_int_eq(facts_of(dfd, &fx), 0);
	ck_assert_int_eq(pc_residency_facts(dfd, &fx, 0, 0, 0, &r), -EINVAL);
	ck_assert_ptr_eq(r, sentinel);
	/* no fd */
	ck_assert_int_eq(facts_of(fd, &fx), 0);
	ck_assert_int_eq(pc_residency_facts(-1, &fx, 0, 0, 0, &r), -EBADF);
	ck_assert_ptr_eq(r, sentinel);
	close(dfd);
	close(fd);
}
END_TEST

START_TEST(runs_reproduce_pattern_and_start_inside_a_run)
{
	static const uint64_t p[] = { 8, 9, 10, 11, 12, 30, 62, 63 };
	const char *path = pc_test_make_file("runs", FILE_PAGES, 0644, -1, -1);
	struct pc_residency *r = NULL;
	struct pc_run run;
	unsigned char *truth;
	int fd;

	for (int attempt = 0;; attempt++) {
		unsigned char *after, *want = pattern_vec(FILE_PAGES, p, PC_ARRAY_LEN(p));
		int same;

		pc_test_set_pattern(path, p, PC_ARRAY_LEN(p));
		pc_test_mincore(path, &truth);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(pc_residency(fd, 0, 0, 0, &r), 0);
		close(fd);
		pc_test_mincore(path, &after);
		same = !memcmp(truth, after, FILE_PAGES) && !memcmp(truth, want, FILE_PAGES);
		free(after);
		free(want);
		if (same)
			break;
		ck_assert_msg(attempt + 1 < ATTEMPTS, "residency kept moving");
		free(truth);
		pc_residency_free(r);
	}
	/* the three runs, in order */
	ck_assert_int_eq(pc_residency_next_run(r, 4, &run), 1);
	ck_assert_uint_eq(run.page, 8);
	ck_assert_uint_eq(run.npages, 5);
	ck_assert_int_eq(pc_residency_next_run(r, run.page + run.npages, &run), 1);
	ck_assert_uint_eq(run.page, 30);
	ck_assert_uint_eq(run.npages, 1);
	ck_assert_int_eq(pc_residency_next_run(r, run.page + run.npages, &run), 1);
	ck_assert_uint_eq(run.page, 62);
	ck_assert_uint_eq(run.npages, 2);
	ck_assert_int_eq(pc_residency_next_run(r, run.page + run.npages, &run), 0);
	/* from inside a run: the rest of that run */
	ck_assert_int_eq(pc_residency_next_run(r, 10, &run), 1);
	ck_assert_uint_eq(run.page, 10);
	ck_assert_uint_eq(run.npages, 3);
	/* from a gap: the next run; from past the end: none */
	ck_assert_int_eq(pc_residency_next_run(r, 13, &run), 1);
	ck_assert_uint_eq(run.page, 30);
	ck_assert_int_eq(pc_residency_next_run(r, FILE_PAGES, &run), 0);
	ck_assert_int_eq(pc_residency_next_run(r, UINT64_MAX, &run), 0);
	ck_assert_int_eq(pc_residency_next_run(r, 0, NULL), -EINVAL);
	ck_assert_int_eq(pc_residency_next_run(NULL, 0, &run), -EINVAL);
	pc_residency_free(r);
	free(truth);
}
END_TEST

/* ---- forced sources, as root --------------------------------------------- */

START_TEST(force_mincore_same_bitmap)
{
	const char *path = pc_test_make_file("force-mincore", FILE_PAGES, 0644, -1, -1);
	struct call c = { .path = path, .advice = -1, .flags = PC_RES_FORCE_MINCORE };
	struct snap s;
	unsigned char *truth = pattern_call(path, pat, NPAT, 0, &c, &s, 0);

	assert_snap_exact(&s, truth, 0, FILE_PAGES);
	ck_assert_int_eq(s.source, PC_SOURCE_MINCORE);
	ck_assert_int_eq(s.perturbed, 0);
	free(truth);
}
END_TEST

START_TEST(force_cachestat_same_bitmap)
{
	const char *path = pc_test_make_file("force-cachestat", FILE_PAGES, 0644, -1, -1);
	struct call c = { .path = path, .advice = -1, .flags = PC_RES_FORCE_CACHESTAT };
	struct snap s;
	unsigned char *truth = pattern_call(path, pat, NPAT, 0, &c, &s, 0);

	if (!have_cachestat()) {
		/* ENOSYS (before 6.5, or valgrind): the forced source cannot answer */
		ck_assert_int_eq(s.ret, -EOPNOTSUPP);
	} else {
		assert_snap_exact(&s, truth, 0, FILE_PAGES);
		ck_assert_int_eq(s.source, PC_SOURCE_CACHESTAT);
		ck_assert_int_eq(s.perturbed, 0);
	}
	free(truth);
	/* counts only, forced */
	c.flags = PC_RES_FORCE_CACHESTAT | PC_RES_COUNT_ONLY;
	truth = pattern_call(path, pat, NPAT, 0, &c, &s, 0);
	if (!have_cachestat()) {
		ck_assert_int_eq(s.ret, -EOPNOTSUPP);
	} else {
		ck_assert_int_eq(s.ret, 0);
		ck_assert_int_eq(s.quality, PC_QUALITY_EXACT);
		ck_assert_int_eq(s.source, PC_SOURCE_CACHESTAT);
		ck_assert_uint_eq(s.resident, pattern_count(FILE_PAGES, pat, NPAT, 0, FILE_PAGES));
		ck_assert_int_eq(s.test_first, -ENODATA);
	}
	free(truth);
}
END_TEST

/* Forced RWF_NOWAIT without PC_RES_ALLOW_PERTURB: refused where a miss
 * starts readahead, exact where the probe is clean; nothing changes. */
START_TEST(force_nowait_without_perturb_follows_the_mode)
{
	const char *path = pc_test_make_file("force-nowait", FILE_PAGES, 0644, -1, -1);
	struct call c = { .path = path, .advice = -1, .flags = PC_RES_FORCE_NOWAIT };
	struct snap s;
	unsigned char *truth, *after;
	int mode = nowait_here();

	pc_test_assert_kernel("pc_detect_nowait()", mode, pc_test_expect_nowait());
	truth = pattern_call(path, pat, NPAT, 0, &c, &s, 0);
	if (mode == PC_NOWAIT_CLEAN) {
		assert_snap_exact(&s, truth, 0, FILE_PAGES);
		ck_assert(s.source == PC_SOURCE_IO_URING || s.source == PC_SOURCE_PREADV2);
		ck_assert_int_eq(s.perturbed, 0);
	} else {
		ck_assert_int_eq(s.ret, -EOPNOTSUPP);
	}
	/* and touched nothing */
	pc_test_mincore(path, &after);
	ck_assert_int_eq(memcmp(truth, after, FILE_PAGES), 0);
	free(after);
	free(truth);
}
END_TEST

START_TEST(force_nowait_with_perturb_same_bitmap_and_perturbed)
{
	const char *path = pc_test_make_file("force-nowait-p", FILE_PAGES, 0644, -1, -1);
	struct call c = { .path = path, .advice = -1,
			  .flags = PC_RES_FORCE_NOWAIT | PC_RES_ALLOW_PERTURB };
	struct snap s;
	int destructive = nowait_here() == PC_NOWAIT_DESTRUCTIVE;
	unsigned char *truth = pattern_call(path, pat, NPAT, 0, &c, &s, destructive), *after;

	assert_snap_exact(&s, truth, 0, FILE_PAGES);
	ck_assert(s.source == PC_SOURCE_IO_URING || s.source == PC_SOURCE_PREADV2);
	ck_assert_int_eq(s.perturbed, destructive);
	if (destructive) {
		/* perturbed is honest: the misses were read in */
		ck_assert_int_eq(wait_resident_at_least(path, FILE_PAGES), FILE_PAGES);
	} else {
		/* a clean probe leaves the misses out, allowed or not */
		pc_test_mincore(path, &after);
		ck_assert_int_eq(memcmp(truth, after, FILE_PAGES), 0);
		free(after);
	}
	free(truth);
}
END_TEST

START_TEST(force_nowait_small_file_uses_preadv2_or_io_uring)
{
	static const uint64_t p[] = { 1, 6 };
	const char *path = pc_test_make_file("force-nowait-small", 8, 0644, -1, -1);
	struct call c = { .path = path, .advice = -1,
			  .flags = PC_RES_FORCE_NOWAIT | PC_RES_ALLOW_PERTURB };
	struct snap s;
	int destructive = nowait_here() == PC_NOWAIT_DESTRUCTIVE;
	unsigned char *truth = pattern_call(path, p, PC_ARRAY_LEN(p), 0, &c, &s, destructive);

	assert_snap_exact(&s, truth, 0, 8);
	ck_assert(s.source == PC_SOURCE_IO_URING || s.source == PC_SOURCE_PREADV2);
	ck_assert_int_eq(s.perturbed, destructive);
	free(truth);
}
END_TEST

START_TEST(flags_unknown_bits_and_two_forces_are_einval)
{
	const char *path = pc_test_make_file("flags", 4, 0644, -1, -1);
	static const unsigned int bad[] = {
		1u << 5, 1u << 31, PC_RES_COUNT_ONLY | (1u << 9),
		PC_RES_FORCE_MINCORE | PC_RES_FORCE_CACHESTAT,
		PC_RES_FORCE_MINCORE | PC_RES_FORCE_NOWAIT,
		PC_RES_FORCE_CACHESTAT | PC_RES_FORCE_NOWAIT,
		PC_RES_FORCE_MINCORE | PC_RES_FORCE_CACHESTAT | PC_RES_FORCE_NOWAIT,
		PC_RES_FORCE_MINCORE | PC_RES_FORCE_NOWAIT | PC_RES_ALLOW_PERTURB,
	};
	struct pc_residency *sentinel = (struct pc_residency *)&bad, *r = sentinel;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	for (size_t i = 0; i < PC_ARRAY_LEN(bad); i++) {
		ck_assert_msg(pc_residency(fd, 0, 0, bad[i], &r) == -EINVAL, "flags %#x", bad[i]);
		ck_assert_ptr_eq(r, sentinel); /* untouched on failure */
	}
	ck_assert_int_eq(pc_residency(fd, 0, 0, 0, NULL), -EINVAL);
	close(fd);
}
END_TEST

/* ---- seen by uid 65534 --------------------------------------------------- */

START_TEST(nobody_foreign_0666_file_is_exact)
{
	const char *path = pc_test_make_file("foreign-0666", FILE_PAGES, 0666, 0, 0);
	struct call c = { .path = path, .advice = -1 };
	struct snap s;
	unsigned char *truth = pattern_call(path, pat, NPAT, 1, &c, &s, 0);

	assert_snap_exact(&s, truth, 0, FILE_PAGES);
	ck_assert(s.source == PC_SOURCE_MINCORE || s.source == PC_SOURCE_CACHESTAT);
	ck_assert_int_eq(s.perturbed, 0);
	free(truth);
}
END_TEST

START_TEST(nobody_acl_writable_file_is_exact)
{
	const char *path = pc_test_make_file("foreign-acl", FILE_PAGES, 0644, 0, 0);
	struct call c = { .path = path, .advice = -1 };
	char cmd[4200];
	struct snap s;
	unsigned char *truth;

	snprintf(cmd, sizeof(cmd), "setfacl -m u:%d:rw -- '%s' 2>/dev/null", PC_TEST_NOBODY, path);
	if (system(cmd) != 0) {
		pc_test_skip("nobody_acl_writable_file_is_exact", "setfacl refused here");
		return;
	}
	truth = pattern_call(path, pat, NPAT, 1, &c, &s, 0);
	assert_snap_exact(&s, truth, 0, FILE_PAGES);
	ck_assert_int_eq(s.perturbed, 0);
	free(truth);
}
END_TEST

START_TEST(nobody_own_0444_file_is_exact)
{
	const char *path = pc_test_make_file("nobody-0444", FILE_PAGES, 0444, PC_TEST_NOBODY,
					     PC_TEST_NOBODY);
	struct call c = { .path = path, .advice = -1 };
	struct snap s;
	unsigned char *truth = pattern_call(path, pat, NPAT, 1, &c, &s, 0);

	assert_snap_exact(&s, truth, 0, FILE_PAGES);
	free(truth);
}
END_TEST

START_TEST(nobody_foreign_0666_forced_sources_same_bitmap)
{
	const char *path = pc_test_make_file("foreign-force", FILE_PAGES, 0666, 0, 0);
	struct call c = { .path = path, .advice = -1, .flags = PC_RES_FORCE_MINCORE };
	struct snap s;
	unsigned char *truth = pattern_call(path, pat, NPAT, 1, &c, &s, 0);

	assert_snap_exact(&s, truth, 0, FILE_PAGES);
	ck_assert_int_eq(s.source, PC_SOURCE_MINCORE);
	free(truth);

	c.flags = PC_RES_FORCE_CACHESTAT;
	truth = pattern_call(path, pat, NPAT, 1, &c, &s, 0);
	if (!have_cachestat()) {
		ck_assert_int_eq(s.ret, -EOPNOTSUPP);
	} else {
		assert_snap_exact(&s, truth, 0, FILE_PAGES);
		ck_assert_int_eq(s.source, PC_SOURCE_CACHESTAT);
	}
	free(truth);
}
END_TEST

/* A root-owned 0644 file in a directory of its own that uid 65534 can
 * traverse; writable_dir makes the directory 01777 (so NOWAIT detection
 * can use an O_TMPFILE there), else 0755 (detection finds nothing it may
 * use: UNKNOWN). */
static const char *hidden_file(const char *dir, int writable_dir)
{
	char name[256];
	const char *d = pc_test_path(dir);

	ck_assert_int_eq(mkdir(d, 0755), 0);
	ck_assert_int_eq(chmod(d, writable_dir ? 01777 : 0755), 0);
	snprintf(name, sizeof(name), "%s/hidden", dir);
	return pc_test_make_file(name, FILE_PAGES, 0644, 0, 0);
}

/*
 * Without PC_RES_ALLOW_PERTURB: where a RWF_NOWAIT miss is clean the probe
 * gives the exact pattern (learned in the directory when it is writable,
 * else with a scratch file where uid 65534 may write: /var/tmp), perturbing
 * nothing; where it starts readahead, UNKNOWN.
 */
static void hidden_is_unknown(const char *dir, int writable_dir)
{
	const char *path = hidden_file(dir, writable_dir);
	struct call c = { .path = path, .advice = -1 };
	int clean = nowait_here() == PC_NOWAIT_CLEAN;
	struct snap s;
	unsigned char *truth;

	/* and through pc_residency_facts(): the caller's statx changes nothing */
	for (c.facts = 0; c.facts < 2; c.facts++) {
		c.flags = 0;
		truth = pattern_call(path, pat, NPAT, 1, &c, &s, 0);
		if (clean) {
			assert_snap_exact(&s, truth, 0, FILE_PAGES);
			ck_assert(s.source == PC_SOURCE_IO_URING || s.source == PC_SOURCE_PREADV2);
		} else {
			assert_snap_unknown(&s);
		}
		ck_assert_uint_eq(s.npages, FILE_PAGES);
		ck_assert_int_eq(s.perturbed, 0);
		free(truth);

		c.flags = PC_RES_COUNT_ONLY;
		truth = pattern_call(path, pat, NPAT, 1, &c, &s, 0);
		if (clean) {
			ck_assert_int_eq(s.quality, PC_QUALITY_EXACT);
			ck_assert_uint_eq(s.resident, pattern_count(FILE_PAGES, pat, NPAT, 0, FILE_PAGES));
		} else {
			assert_snap_unknown(&s);
		}
		free(truth);
	}
}

/* ---- a sequential read's readahead mark, as uid 65534 --------------------- */

#define SEQ_PAGES 2048
#define SEQ_READ 572

struct seq_answer {
	int ret, quality;
	uint64_t resident, uncertain;
	unsigned char bit[SEQ_PAGES];
};

static int seq_nobody_fn(void *arg, void *buf, size_t bufsize)
{
	struct seq_answer *a = buf;
	struct pc_residency *r = NULL;
	int fd = open(arg, O_RDONLY | O_CLOEXEC);

	(void)bufsize;
	if (fd < 0)
		return -errno;
	a->ret = pc_residency(fd, 0, 0, 0, &r);
	close(fd);
	if (a->ret < 0)
		return 0;
	a->quality = pc_residency_quality(r);
	a->resident = pc_residency_resident(r);
	a->uncertain = pc_residency_uncertain(r);
	for (uint64_t p = 0; p < SEQ_PAGES; p++)
		a->bit[p] = pc_residency_test(r, p) == 1;
	pc_residency_free(r);
	return 0;
}

/*
 * A root-owned 0644 file read from its start, as dd would (its first 572
 * pages, and readahead brings more), then asked by uid 65534. Where a
 * RWF_NOWAIT miss is clean the probe answers EXACT, and a page that the
 * readahead window marked answers EAGAIN though it is cached (seen on
 * 6.1: the page right after the read): it must be counted as uncertain,
 * and no page may be reported resident that is not. Where a miss starts
 * readahead the file is unknown.
 */
START_TEST(nobody_sequential_read_marked_page_is_uncertain)
{
	const char *path = pc_test_make_file("seq-read", SEQ_PAGES, 0644, 0, 0);
	struct seq_answer *a = calloc(1, sizeof(*a));
	unsigned char *truth = NULL, *again = NULL;
	uint64_t truth_count = 0, reported_absent_cached = 0;
	char *buf = malloc(16 * ps);
	int fd, stable = 0;

	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(buf);
	pc_test_set_pattern(path, NULL, 0);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	for (uint64_t done = 0; done < SEQ_READ; done += 4) {
		size_t want = (size_t)((SEQ_READ - done < 4 ? SEQ_READ - done : 4) * ps);

		ck_assert_int_eq(read(fd, buf, want), (ssize_t)want);
	}
	close(fd);
	/* readahead lands after read() returns: wait for the cache to hold still */
	for (int i = 0; i < 200 && !stable; i++) {
		free(truth);
		pc_test_mincore(path, &truth);
		usleep(50000);
		pc_test_mincore(path, &again);
		stable = memcmp(truth, again, SEQ_PAGES) == 0;
		free(again);
	}
	ck_assert_msg(stable, "the cache kept moving after the read");
	ck_assert_int_eq(pc_test_as_nobody(seq_nobody_fn, (void *)path, a, sizeof(*a)), 0);
	ck_assert_int_eq(a->ret, 0);
	if (nowait_here() != PC_NOWAIT_CLEAN) {
		ck_assert_int_eq(a->quality, PC_QUALITY_UNKNOWN);
		ck_assert_uint_eq(a->uncertain, 0);
	} else {
		ck_assert_int_eq(a->quality, PC_QUALITY_EXACT);
		for (uint64_t p = 0; p < SEQ_PAGES; p++) {
			truth_count += truth[p] & 1;
			ck_assert_msg(!a->bit[p] || (truth[p] & 1),
				      "page %llu reported resident, mincore says not",
				      (unsigned long long)p);
			reported_absent_cached += !a->bit[p] && (truth[p] & 1);
		}
		ck_assert_uint_eq(a->resident + reported_absent_cached, truth_count);
		/* every cached page reported absent is counted as uncertain */
		ck_assert_msg(reported_absent_cached <= a->uncertain,
			      "%llu cached pages reported absent, %llu counted uncertain",
			      (unsigned long long)reported_absent_cached,
			      (unsigned long long)a->uncertain);
		printf("NOTE: sequential read: %llu of %llu cached pages reported, %llu uncertain\n",
		       (unsigned long long)a->resident, (unsigned long long)truth_count,
		       (unsigned long long)a->uncertain);
		/* 6.1 leaves the mark there (kernel table: clean) */
		if (pc_test_expect_nowait() == PC_NOWAIT_CLEAN)
			ck_assert_uint_ge(a->uncertain, 1);
	}
	/* asking changed nothing */
	pc_test_mincore(path, &again);
	ck_assert_int_eq(memcmp(truth, again, SEQ_PAGES), 0);
	free(again);
	free(truth);
	free(buf);
	free(a);
}
END_TEST

START_TEST(nobody_root_0644_file_is_unknown)
{
	hidden_is_unknown("hid-ro", 0);
}
END_TEST

START_TEST(nobody_root_0644_file_is_unknown_where_nowait_is_known)
{
	hidden_is_unknown("hid-w", 1);
}
END_TEST

START_TEST(nobody_root_0644_force_mincore_and_cachestat_refused)
{
	const char *path = hidden_file("hid-force", 0);
	struct call c = { .path = path, .advice = -1, .flags = PC_RES_FORCE_MINCORE };
	struct snap s;
	unsigned char *truth = pattern_call(path, pat, NPAT, 1, &c, &s, 0);

	ck_assert_int_eq(s.ret, -EOPNOTSUPP);
	free(truth);
	c.flags = PC_RES_FORCE_CACHESTAT;
	truth = pattern_call(path, pat, NPAT, 1, &c, &s, 0);
	ck_assert_int_eq(s.ret, -EOPNOTSUPP);
	free(truth);
	c.flags = PC_RES_FORCE_NOWAIT; /* refused where destructive, not allowed */
	truth = pattern_call(path, pat, NPAT, 1, &c, &s, 0);
	if (nowait_here() == PC_NOWAIT_CLEAN)
		assert_snap_exact(&s, truth, 0, FILE_PAGES);
	else
		ck_assert_int_eq(s.ret, -EOPNOTSUPP);
	free(truth);
}
END_TEST

/*
 * With PC_RES_ALLOW_PERTURB the hidden file is probed: the right pattern,
 * perturbed set. The caller's fd must keep its state. /proc/self/fdinfo
 * shows position and flags but not the readahead state, so: position and
 * status flags are compared directly, and the readahead mode is observed
 * by its effect, a 1-byte read at page 0 of the evicted file through the
 * caller's fd afterwards. With the default mode the kernel reads ahead
 * (more than one page comes in); had the library set POSIX_FADV_RANDOM on
 * the caller's file description, exactly one page would (the control case
 * sets RANDOM itself and sees one). The limit: this observes FMODE_RANDOM
 * and the readahead window, not every field of the kernel's ra state.
 */
static void hidden_with_perturb(const char *dir, int writable_dir, unsigned int extra_flags)
{
	const char *path = hidden_file(dir, writable_dir);
	struct call c = { .path = path, .advice = -1, .seek_to = 12345, .reread_page0 = 1,
			  .flags = PC_RES_ALLOW_PERTURB | extra_flags };
	struct snap s;
	int destructive = nowait_here() == PC_NOWAIT_DESTRUCTIVE;
	/* compared with the truth before the call: the call reads page 0 again */
	unsigned char *truth = pattern_call(path, pat, NPAT, 1, &c, &s, 1), *after;
	uint64_t n;

	ck_assert_int_eq(s.ret, 0);
	ck_assert_int_eq(s.perturbed, destructive);
	ck_assert_int_eq(s.quality, PC_QUALITY_EXACT);
	ck_assert(s.source == PC_SOURCE_IO_URING || s.source == PC_SOURCE_PREADV2);
	if (extra_flags & PC_RES_COUNT_ONLY) {
		ck_assert_uint_eq(s.resident, pattern_count(FILE_PAGES, pat, NPAT, 0, FILE_PAGES));
		ck_assert_int_eq(s.test_first, -ENODATA);
	} else {
		assert_snap_exact(&s, truth, 0, FILE_PAGES);
	}
	/* the caller's fd: position and status flags untouched */
	ck_assert_int_eq(s.pos_before, 12345);
	ck_assert_int_eq(s.pos_after, s.pos_before);
	ck_assert_int_eq(s.fl_after, s.fl_before);
	/* ... and its readahead mode: a miss at page 0 still reads ahead. */
	n = pc_test_mincore(path, &after);
	ck_assert_uint_eq(n, FILE_PAGES);
	ck_assert_msg(after[0] & 1, "page 0 was read through the caller's fd");
	ck_assert_msg((after[1] & 1) && vec_count(after, n) > 1,
		      "only %d page came in: the caller's fd lost its readahead mode",
		      vec_count(after, n));
	free(after);
	free(truth);
}

START_TEST(nobody_root_0644_allow_perturb_gives_pattern)
{
	hidden_with_perturb("hidp-ro", 0, 0);
}
END_TEST

START_TEST(nobody_root_0644_allow_perturb_gives_pattern_where_nowait_is_known)
{
	hidden_with_perturb("hidp-w", 1, 0);
}
END_TEST

START_TEST(nobody_root_0644_allow_perturb_count_only)
{
	hidden_with_perturb("hidp-count", 0, PC_RES_COUNT_ONLY);
}
END_TEST

START_TEST(nobody_root_0644_force_nowait_with_perturb_gives_pattern)
{
	hidden_with_perturb("hidp-force", 0, PC_RES_FORCE_NOWAIT);
}
END_TEST

/* The control for the readahead observation: a caller's fd that is RANDOM
 * brings in exactly one page, so the check above can fail. */
START_TEST(control_random_fd_reads_one_page)
{
	const char *path = pc_test_make_file("ra-control", FILE_PAGES, 0644, 0, 0);
	struct call c = { .path = path, .advice = POSIX_FADV_RANDOM, .reread_page0 = 1,
			  .flags = PC_RES_FORCE_MINCORE };
	unsigned char *after;
	struct snap s;
	uint64_t n;

	call_as(0, &c, &s);
	ck_assert_int_eq(s.ret, 0);
	n = pc_test_mincore(path, &after);
	ck_assert_int_eq(after[0] & 1, 1);
	ck_assert_int_eq(vec_count(after, n), 1);
	free(after);
	/* and the default mode reads ahead, as the hidden-file cases expect */
	c.advice = -1;
	call_as(0, &c, &s);
	n = pc_test_mincore(path, &after);
	ck_assert_int_gt(vec_count(after, n), 1);
	free(after);
}
END_TEST

/* ---- sizes and ranges ---------------------------------------------------- */

static struct pc_residency *residency_of_path(const char *path, uint64_t off, uint64_t len,
					      unsigned int flags)
{
	struct pc_residency *r = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pc_residency(fd, off, len, flags, &r), 0);
	ck_assert_ptr_nonnull(r);
	close(fd);
	return r;
}

static void make_sized_file(const char *path, uint64_t bytes)
{
	char *buf = malloc(bytes ? bytes : 1);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	ck_assert_ptr_nonnull(buf);
	ck_assert_int_ge(fd, 0);
	memset(buf, 'x', bytes ? bytes : 1);
	ck_assert_int_eq(write(fd, buf, bytes), (ssize_t)bytes);
	ck_assert_int_eq(fsync(fd), 0);
	close(fd);
	free(buf);
}

START_TEST(empty_file_has_no_pages)
{
	const char *path = pc_test_path("empty");
	struct pc_residency *r;
	struct pc_run run;

	make_sized_file(path, 0);
	for (unsigned int flags = 0; flags <= PC_RES_COUNT_ONLY; flags++) {
		r = residency_of_path(path, 0, 0, flags);
		ck_assert_uint_eq(pc_residency_npages(r), 0);
		ck_assert_uint_eq(pc_residency_resident(r), 0);
		ck_assert_uint_eq(pc_residency_file_size(r), 0);
		ck_assert_int_eq(pc_residency_quality(r), PC_QUALITY_EXACT);
		ck_assert_int_eq(pc_residency_test(r, 0), -ERANGE);
		ck_assert_int_eq(pc_residency_next_run(r, 0, &run), flags ? -ENODATA : 0);
		pc_residency_free(r);
	}
	r = residency_of_path(path, 5 * ps, 100, 0);
	ck_assert_uint_eq(pc_residency_npages(r), 0);
	pc_residency_free(r);
}
END_TEST

START_TEST(one_byte_file_has_one_page)
{
	static const uint64_t p0[] = { 0 };
	const char *path = pc_test_path("one-byte");
	struct pc_residency *r;

	make_sized_file(path, 1);
	pc_test_set_pattern(path, p0, 1);
	r = residency_of_path(path, 0, 0, 0);
	ck_assert_uint_eq(pc_residency_npages(r), 1);
	ck_assert_uint_eq(pc_residency_file_size(r), 1);
	ck_assert_int_eq(pc_residency_test(r, 0), 1);
	ck_assert_uint_eq(pc_residency_resident(r), 1);
	ck_assert_int_eq(pc_residency_test(r, 1), -ERANGE);
	pc_residency_free(r);

	pc_test_set_pattern(path, NULL, 0);
	r = residency_of_path(path, 0, 0, 0);
	ck_assert_uint_eq(pc_residency_npages(r), 1);
	ck_assert_int_eq(pc_residency_test(r, 0), 0);
	ck_assert_uint_eq(pc_residency_resident(r), 0);
	pc_residency_free(r);
}
END_TEST

START_TEST(page_plus_one_byte_file_has_two_pages)
{
	static const uint64_t p1[] = { 1 };
	const char *path = pc_test_path("page-plus-one");
	struct pc_residency *r;
	struct pc_run run;

	make_sized_file(path, ps + 1);
	pc_test_set_pattern(path, p1, 1);
	r = residency_of_path(path, 0, 0, 0);
	ck_assert_uint_eq(pc_residency_npages(r), 2);
	ck_assert_uint_eq(pc_residency_file_size(r), ps + 1);
	ck_assert_int_eq(pc_residency_test(r, 0), 0);
	ck_assert_int_eq(pc_residency_test(r, 1), 1);
	ck_assert_int_eq(pc_residency_next_run(r, 0, &run), 1);
	ck_assert_uint_eq(run.page, 1);
	ck_assert_uint_eq(run.npages, 1);
	pc_residency_free(r);
	/* the partial last page alone */
	r = residency_of_path(path, ps, 1, 0);
	ck_assert_uint_eq(pc_residency_first_page(r), 1);
	ck_assert_uint_eq(pc_residency_npages(r), 1);
	ck_assert_int_eq(pc_residency_test(r, 1), 1);
	pc_residency_free(r);
}
END_TEST

START_TEST(sparse_16g_file_few_pages_cached_far_apart)
{
	const uint64_t size = UINT64_C(16) << 30;
	const uint64_t last = size / ps - 1;
	/* written pages and holes; reading a hole caches a zero page too */
	const uint64_t written[] = { 0, (UINT64_C(1) << 30) / ps, (UINT64_C(8) << 30) / ps, last };
	const uint64_t p[] = { 0, 1000, (UINT64_C(1) << 30) / ps, (UINT64_C(8) << 30) / ps + 5,
			       last };
	const char *path = pc_test_path("sparse-16g");
	uint64_t want[PC_ARRAY_LEN(p)], nwant = 0;
	struct pc_residency *r = NULL;
	unsigned char *truth = NULL;
	struct pc_run run;
	uint64_t pg, k;
	char *buf = malloc(ps);
	int fd;

	/* the resident pages expected, ascending; page 0 is in the pattern, so
	 * valgrind's header read adds nothing */
	for (size_t i = 0; i < PC_ARRAY_LEN(p); i++)
		want[nwant++] = p[i];
	ck_assert_ptr_nonnull(buf);
	memset(buf, 's', ps);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ck_assert_int_ge(fd, 0);
	if (ftruncate(fd, (off_t)size) < 0) {
		pc_test_skip("sparse_16g_file", "the filesystem refuses a 16 GiB size");
		close(fd);
		free(buf);
		return;
	}
	for (size_t i = 0; i < PC_ARRAY_LEN(written); i++)
		ck_assert_int_eq(pwrite(fd, buf, ps, (off_t)(written[i] * ps)), (ssize_t)ps);
	ck_assert_int_eq(fsync(fd), 0);
	close(fd);
	free(buf);

	for (int attempt = 0;; attempt++) {
		unsigned char *after;
		int same;

		pc_test_set_pattern(path, p, PC_ARRAY_LEN(p));
		ck_assert_uint_eq(pc_test_mincore(path, &truth), size / ps);
		r = residency_of_path(path, 0, 0, 0);
		pc_test_mincore(path, &after);
		same = memcmp(truth, after, size / ps) == 0 && vec_count(truth, size / ps) == (int)nwant;
		for (uint64_t i = 0; same && i < nwant; i++)
			same = truth[want[i]] == 1;
		free(after);
		if (same)
			break;
		ck_assert_msg(attempt + 1 < ATTEMPTS, "residency kept moving");
		free(truth);
		pc_residency_free(r);
	}
	ck_assert_uint_eq(pc_residency_npages(r), size / ps);
	ck_assert_uint_eq(pc_residency_file_size(r), size);
	ck_assert_int_eq(pc_residency_quality(r), PC_QUALITY_EXACT);
	ck_assert_uint_eq(pc_residency_resident(r), nwant);
	for (size_t i = 0; i < nwant; i++) {
		ck_assert_int_eq(pc_residency_test(r, want[i]), 1);
		if (want[i] > 0)
			ck_assert_int_eq(pc_residency_test(r, want[i] - 1), 0);
	}
	/* the runs are exactly the expected pages, consecutive ones merged */
	k = 0;
	for (pg = 0; pc_residency_next_run(r, pg, &run) > 0; pg = run.page + run.npages) {
		ck_assert_uint_lt(k, nwant);
		ck_assert_uint_eq(run.page, want[k]);
		for (uint64_t i = 0; i < run.npages; i++, k++) {
			ck_assert_uint_lt(k, nwant);
			ck_assert_uint_eq(want[k], run.page + i);
		}
	}
	ck_assert_uint_eq(k, nwant);
	ck_assert_int_eq(pc_residency_test(r, last + 1), -ERANGE);
	pc_residency_free(r);
	free(truth);

	/* a range at the far end, and counts only */
	r = residency_of_path(path, size - 3 * ps, 0, 0);
	ck_assert_uint_eq(pc_residency_first_page(r), last - 2);
	ck_assert_uint_eq(pc_residency_npages(r), 3);
	ck_assert_uint_eq(pc_residency_resident(r), 1);
	ck_assert_int_eq(pc_residency_test(r, last), 1);
	pc_residency_free(r);
	r = residency_of_path(path, 0, 0, PC_RES_COUNT_ONLY);
	ck_assert_uint_eq(pc_residency_resident(r), nwant);
	pc_residency_free(r);
	if (have_cachestat()) {
		r = residency_of_path(path, 0, 0, PC_RES_FORCE_CACHESTAT);
		ck_assert_uint_eq(pc_residency_resident(r), nwant);
		for (size_t i = 0; i < nwant; i++)
			ck_assert_int_eq(pc_residency_test(r, want[i]), 1);
		pc_residency_free(r);
	}
	r = residency_of_path(path, 0, 0, PC_RES_FORCE_MINCORE);
	ck_assert_uint_eq(pc_residency_resident(r), nwant);
	pc_residency_free(r);
}
END_TEST

START_TEST(file_truncated_between_two_calls)
{
	static const uint64_t p[] = { 1, 10, 40, 63 };
	const char *path = pc_test_make_file("truncated", FILE_PAGES, 0644, -1, -1);
	struct pc_residency *r1, *r2, *r3;
	int fd;

	pc_test_set_pattern(path, p, PC_ARRAY_LEN(p));
	r1 = residency_of_path(path, 0, 0, 0);
	fd = open(path, O_RDWR | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)(16 * ps)), 0);
	r2 = residency_of_path(path, 0, 0, 0);
	/* grown again: pages 16.. are holes now, and not cached */
	ck_assert_int_eq(ftruncate(fd, (off_t)(FILE_PAGES * ps)), 0);
	r3 = residency_of_path(path, 0, 0, 0);
	close(fd);

	ck_assert_uint_eq(pc_residency_npages(r1), FILE_PAGES);
	ck_assert_uint_eq(pc_residency_resident(r1),
			  pattern_count(FILE_PAGES, p, PC_ARRAY_LEN(p), 0, FILE_PAGES));
	ck_assert_int_eq(pc_residency_test(r1, 63), 1); /* the old answer stays valid */

	ck_assert_uint_eq(pc_residency_npages(r2), 16);
	ck_assert_uint_eq(pc_residency_file_size(r2), 16 * ps);
	ck_assert_uint_eq(pc_residency_resident(r2),
			  pattern_count(FILE_PAGES, p, PC_ARRAY_LEN(p), 0, 16));
	ck_assert_int_eq(pc_residency_test(r2, 1), 1);
	ck_assert_int_eq(pc_residency_test(r2, 10), 1);
	ck_assert_int_eq(pc_residency_test(r2, 40), -ERANGE);

	ck_assert_uint_eq(pc_residency_npages(r3), FILE_PAGES);
	ck_assert_uint_eq(pc_residency_resident(r3),
			  pattern_count(FILE_PAGES, p, PC_ARRAY_LEN(p), 0, 16));
	ck_assert_int_eq(pc_residency_test(r3, 40), 0);
	ck_assert_int_eq(pc_residency_test(r3, 63), 0);
	pc_residency_free(r1);
	pc_residency_free(r2);
	pc_residency_free(r3);
}
END_TEST

struct shrinker {
	const char *path;
	int stop;               /* __atomic: read by the shrinker, set by the case */
	uint64_t max_pages;
};

static void *shrink_loop(void *arg)
{
	struct shrinker *sh = arg;
	int fd = open(sh->path, O_RDWR | O_CLOEXEC);
	char byte = 'z';

	if (fd < 0)
		return NULL;
	for (uint64_t i = 0; !__atomic_load_n(&sh->stop, __ATOMIC_RELAXED); i++) {
		/* grow with a few cached pages, then cut back */
		if (ftruncate(fd, (off_t)(sh->max_pages * ps)) < 0)
			break;
		for (uint64_t pg = 0; pg < sh->max_pages; pg += 97)
			if (pwrite(fd, &byte, 1, (off_t)(pg * ps)) < 0)
				break;
		if (ftruncate(fd, (off_t)((i % 7) * ps)) < 0)
			break;
	}
	close(fd);
	return NULL;
}

START_TEST(file_shrinking_during_scans_does_not_crash)
{
	const char *path = pc_test_make_file("shrinking", 4096, 0644, -1, -1);
	struct shrinker sh = { .path = path, .max_pages = 4096 };
	int rounds = pc_test_under_valgrind() ? 30 : 300;
	pthread_t t;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pthread_create(&t, NULL, shrink_loop, &sh), 0);
	for (int i = 0; i < rounds; i++) {
		static const unsigned int fl[] = { 0, PC_RES_FORCE_MINCORE, PC_RES_COUNT_ONLY };
		struct pc_residency *r = NULL;
		int ret = pc_residency(fd, 0, 0, fl[i % 3], &r);

		ck_assert_msg(ret == 0, "round %d: %d", i, ret);
		ck_assert_uint_le(pc_residency_npages(r),
				  (pc_residency_file_size(r) + ps - 1) / ps);
		ck_assert_uint_le(pc_residency_resident(r), pc_residency_npages(r));
		pc_residency_free(r);
	}
	__atomic_store_n(&sh.stop, 1, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
	close(fd);
}
END_TEST

START_TEST(offset_and_length_edges)
{
	static const uint64_t p[] = { 0, 5, 6, 7, 30, 63 };
	const char *path = pc_test_make_file("ranges", FILE_PAGES, 0644, -1, -1);
	struct {
		uint64_t off, len;
		uint64_t first, npages;  /* first is checked only when npages > 0 */
	} cases[] = {
		{ 5 * ps + 123, 0, 5, FILE_PAGES - 5 },  /* offset rounded down, to EOF */
		{ 0, 1, 0, 1 },
		{ ps - 1, 2, 0, 2 },                     /* straddles a page boundary */
		{ 6 * ps, 2 * ps, 6, 2 },
		{ 6 * ps, 2 * ps + 1, 6, 3 },
		{ 60 * ps, 100 * ps, 60, 4 },            /* length past EOF: clamped */
		{ 3 * ps, UINT64_MAX, 3, FILE_PAGES - 3 },
		{ 63 * ps + ps - 1, 0, 63, 1 },
		{ FILE_PAGES * ps, 0, 0, 0 },            /* at EOF */
		{ FILE_PAGES * ps + 17, ps, 0, 0 },      /* past EOF */
		{ 1000 * ps, 0, 0, 0 },
		{ UINT64_MAX - 10, 100, 0, 0 },          /* offset + length overflows */
		{ UINT64_MAX, UINT64_MAX, 0, 0 },
		{ UINT64_MAX - ps + 1, 0, 0, 0 },
		{ (uint64_t)INT64_MAX, 1, 0, 0 },
	};

	for (int attempt = 0;; attempt++) {
		unsigned char *truth, *want = pattern_vec(FILE_PAGES, p, PC_ARRAY_LEN(p));
		int same;

		pc_test_set_pattern(path, p, PC_ARRAY_LEN(p));
		pc_test_mincore(path, &truth);
		same = memcmp(truth, want, FILE_PAGES) == 0;
		if (same) {
			for (size_t i = 0; i < PC_ARRAY_LEN(cases); i++) {
				struct pc_residency *r = residency_of_path(path, cases[i].off,
									   cases[i].len, 0);
				uint64_t first = pc_residency_first_page(r);
				uint64_t n = pc_residency_npages(r);
				uint64_t res = 0;

				ck_assert_msg(n == cases[i].npages, "case %zu: npages %llu, want %llu",
					      i, (unsigned long long)n,
					      (unsigned long long)cases[i].npages);
				if (n) {
					ck_assert_msg(first == cases[i].first, "case %zu: first %llu",
						      i, (unsigned long long)first);
					ck_assert_int_eq(pc_residency_quality(r), PC_QUALITY_EXACT);
					for (uint64_t pg = first; pg < first + n; pg++) {
						ck_assert_int_eq(pc_residency_test(r, pg), truth[pg]);
						res += truth[pg];
					}
					if (first > 0)
						ck_assert_int_eq(pc_residency_test(r, first - 1),
								 -ERANGE);
					ck_assert_int_eq(pc_residency_test(r, first + n), -ERANGE);
				} else {
					struct pc_run run;

					ck_assert_int_eq(pc_residency_next_run(r, 0, &run), 0);
				}
				ck_assert_uint_eq(pc_residency_resident(r), res);
				pc_residency_free(r);
			}
		}
		free(want);
		free(truth);
		if (same)
			break;
		ck_assert_msg(attempt + 1 < ATTEMPTS, "residency kept moving");
	}
}
END_TEST

/* ---- what is not a file -------------------------------------------------- */

static void assert_refused(int fd, const char *what, int want1, int want2)
{
	struct pc_residency *sentinel = (struct pc_residency *)&ps, *r = sentinel;
	static const unsigned int fl[] = { 0, PC_RES_COUNT_ONLY, PC_RES_ALLOW_PERTURB,
					   PC_RES_FORCE_MINCORE, PC_RES_FORCE_CACHESTAT,
					   PC_RES_FORCE_NOWAIT | PC_RES_ALLOW_PERTURB };

	for (size_t i = 0; i < PC_ARRAY_LEN(fl); i++) {
		int ret = pc_residency(fd, 0, 0, fl[i], &r);

		ck_assert_msg(ret == want1 || ret == want2, "%s, flags %#x: %d", what, fl[i], ret);
		ck_assert_ptr_eq(r, sentinel);
	}
}

START_TEST(bad_fds_are_ebadf)
{
	int fd = open(pc_test_dir(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	assert_refused(-1, "fd -1", -EBADF, -EBADF);
	assert_refused(INT_MIN, "fd INT_MIN", -EBADF, -EBADF);
	ck_assert_int_ge(fd, 0);
	close(fd);
	assert_refused(fd, "a closed fd", -EBADF, -EBADF);
	assert_refused(1000000, "fd 1000000", -EBADF, -EBADF);
}
END_TEST

START_TEST(o_path_fd_is_ebadf)
{
	const char *path = pc_test_make_file("o-path", 4, 0644, -1, -1);
	int fd = open(path, O_PATH | O_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	/* without cachestat (before 6.5, valgrind) a forced one meets ENOSYS first */
	assert_refused(fd, "O_PATH fd", -EBADF, have_cachestat() ? -EBADF : -EOPNOTSUPP);
	close(fd);
}
END_TEST

START_TEST(directory_is_einval)
{
	int fd = open(pc_test_dir(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	assert_refused(fd, "directory", -EINVAL, -EINVAL);
	close(fd);
}
END_TEST

START_TEST(fifo_is_einval_and_does_not_block)
{
	const char *path = pc_test_path("fifo");
	int fd, wfd;

	ck_assert_int_eq(mkfifo(path, 0644), 0);
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	assert_refused(fd, "FIFO, no writer", -EINVAL, -EINVAL);
	/* with a writer and no data: a read would block */
	wfd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	ck_assert_int_ge(wfd, 0);
	ck_assert_int_eq(fcntl(fd, F_SETFL, 0), 0); /* blocking reads */
	assert_refused(fd, "FIFO with a writer", -EINVAL, -EINVAL);
	close(wfd);
	close(fd);
}
END_TEST

START_TEST(socket_is_einval)
{
	int sv[2];

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_refused(sv[0], "socket", -EINVAL, -EINVAL);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

START_TEST(char_devices_are_einval)
{
	static const char *const devs[] = { "/dev/null", "/dev/zero" };

	for (size_t i = 0; i < PC_ARRAY_LEN(devs); i++) {
		int fd = open(devs[i], O_RDONLY | O_CLOEXEC);

		if (fd < 0) {
			pc_test_skip(devs[i], "cannot open it");
			continue;
		}
		assert_refused(fd, devs[i], -EINVAL, -EINVAL);
		close(fd);
	}
}
END_TEST

START_TEST(accessors_accept_null)
{
	struct pc_run run;

	pc_residency_free(NULL);
	ck_assert_uint_eq(pc_residency_npages(NULL), 0);
	ck_assert_uint_eq(pc_residency_resident(NULL), 0);
	ck_assert_uint_eq(pc_residency_first_page(NULL), 0);
	ck_assert_uint_eq(pc_residency_file_size(NULL), 0);
	ck_assert_int_eq(pc_residency_quality(NULL), -EINVAL);
	ck_assert_int_eq(pc_residency_source(NULL), -EINVAL);
	ck_assert_int_eq(pc_residency_perturbed(NULL), -EINVAL);
	ck_assert_int_eq(pc_residency_test(NULL, 0), -EINVAL);
	ck_assert_int_eq(pc_residency_next_run(NULL, 0, &run), -EINVAL);
}
END_TEST

/* ---- memfd, tmpfs, block devices ----------------------------------------- */

static void write_page_at(int fd, uint64_t page)
{
	char *buf = malloc(ps);

	ck_assert_ptr_nonnull(buf);
	memset(buf, 'm', ps);
	ck_assert_int_eq(pwrite(fd, buf, ps, (off_t)(page * ps)), (ssize_t)ps);
	free(buf);
}

START_TEST(memfd_written_pages_are_resident)
{
	static const uint64_t p[] = { 1, 5, 6 };
	struct pc_residency *r = NULL;
	int fd = memfd_create("pc-test", MFD_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)(8 * ps)), 0);
	for (size_t i = 0; i < PC_ARRAY_LEN(p); i++)
		write_page_at(fd, p[i]);
	ck_assert_int_eq(pc_residency(fd, 0, 0, 0, &r), 0);
	ck_assert_uint_eq(pc_residency_npages(r), 8);
	ck_assert_int_eq(pc_residency_quality(r), PC_QUALITY_EXACT);
	ck_assert_uint_eq(pc_residency_resident(r), PC_ARRAY_LEN(p));
	for (uint64_t pg = 0; pg < 8; pg++)
		ck_assert_int_eq(pc_residency_test(r, pg), pg == 1 || pg == 5 || pg == 6);
	pc_residency_free(r);
	ck_assert_int_eq(pc_residency(fd, 0, 0, PC_RES_COUNT_ONLY, &r), 0);
	ck_assert_uint_eq(pc_residency_resident(r), PC_ARRAY_LEN(p));
	pc_residency_free(r);
	/* tmpfs has no RWF_NOWAIT: a forced probe cannot answer */
	ck_assert_int_eq(pc_residency(fd, 0, 0, PC_RES_FORCE_NOWAIT | PC_RES_ALLOW_PERTURB, &r),
			 -EOPNOTSUPP);
	close(fd);
}
END_TEST

/* The raw mincore byte of one page of fd, through a fresh mapping (the
 * caller owns fd: the truth). */
static int raw_mincore(int fd, uint64_t page)
{
	unsigned char v = 0;
	void *m = mmap(NULL, ps, PROT_NONE, MAP_SHARED, fd, (off_t)(page * ps));

	ck_assert_ptr_ne(m, MAP_FAILED);
	ck_assert_int_eq(mincore(m, ps, &v), 0);
	munmap(m, ps);
	return v & 1;
}

/* A 1 TiB sparse memfd (2^28 pages): tmpfs caches nothing of a hole, so
 * the scan steps over holes; a page a read fault filled in is found, a
 * hole read(2) copied zeroes from is not cached, and the pages across the
 * dump's window edge (2^27) and at the end are all there. Without the
 * steps this is 2^28 pages of mincore (48 s where cachestat is missing). */
START_TEST(sparse_memfd_holes_are_stepped_over)
{
	const uint64_t npages = UINT64_C(1) << 28;
	const uint64_t hot[] = { 0, (UINT64_C(1) << 27) - 1, UINT64_C(1) << 27, 12345,
				 npages - 3, npages - 2, npages - 1 };
	const unsigned int flags[] = { 0, PC_RES_FORCE_MINCORE };
	int fd = memfd_create("pc-test-sparse", MFD_CLOEXEC);
	volatile char *m;
	char c;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)(npages * ps)), 0);
	for (size_t i = 0; i < PC_ARRAY_LEN(hot); i++)
		if (hot[i] != 12345)
			write_page_at(fd, hot[i]);
	/* a read fault on a hole gives it a page; read(2) of a hole does not */
	m = mmap(NULL, ps, PROT_READ, MAP_SHARED, fd, (off_t)(12345 * ps));
	ck_assert_ptr_ne((void *)m, MAP_FAILED);
	c = m[0];
	(void)c;
	munmap((void *)m, ps);
	ck_assert_int_eq(pread(fd, &c, 1, (off_t)(54321 * ps)), 1);
	ck_assert_int_eq(raw_mincore(fd, 12345), 1);
	ck_assert_int_eq(raw_mincore(fd, 54321), 0);
	for (size_t fi = 0; fi < PC_ARRAY_LEN(flags); fi++) {
		struct pc_residency *r = NULL;

		ck_assert_int_eq(pc_residency(fd, 0, 0, flags[fi], &r), 0);
		ck_assert_int_eq(pc_residency_quality(r), PC_QUALITY_EXACT);
		ck_assert_uint_eq(pc_residency_npages(r), npages);
		ck_assert_uint_eq(pc_residency_resident(r), PC_ARRAY_LEN(hot));
		for (size_t i = 0; i < PC_ARRAY_LEN(hot); i++)
			ck_assert_int_eq(pc_residency_test(r, hot[i]), 1);
		ck_assert_int_eq(pc_residency_test(r, 54321), 0);
		pc_residency_free(r);
	}
	close(fd);
}
END_TEST

static char shm_dir[64];

static void shm_cleanup(void)
{
	char cmd[128];

	if (shm_dir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf -- '%s'", shm_dir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", shm_dir);
	}
}

/* A root-owned 0644 file on tmpfs with pages p written into holes. */
static const char *shm_file(const uint64_t *p, size_t n, uint64_t npages)
{
	static char path[128];
	int fd;

	snprintf(shm_dir, sizeof(shm_dir), "/dev/shm/pc-test-XXXXXX");
	if (!mkdtemp(shm_dir)) {
		shm_dir[0] = '\0';
		return NULL;
	}
	atexit(shm_cleanup);
	ck_assert_int_eq(chmod(shm_dir, 0755), 0);
	snprintf(path, sizeof(path), "%s/f", shm_dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)(npages * ps)), 0);
	for (size_t i = 0; i < n; i++)
		write_page_at(fd, p[i]);
	close(fd);
	return path;
}

START_TEST(tmpfs_file_exact_for_root_unknown_for_nobody)
{
	static const uint64_t p[] = { 2, 7, 8, 15 };
	const char *path = shm_file(p, PC_ARRAY_LEN(p), 16);
	unsigned char *truth;
	struct call c = { .advice = -1 };
	struct snap s;

	if (!path) {
		pc_test_skip("tmpfs_file", "cannot make a directory in /dev/shm");
		return;
	}
	c.path = path;
	ck_assert_uint_eq(pc_test_mincore(path, &truth), 16);
	ck_assert_int_eq(vec_count(truth, 16), (int)PC_ARRAY_LEN(p));
	call_as(0, &c, &s);
	assert_snap_exact(&s, truth, 0, 16);
	/* nobody: hidden, and tmpfs has no NOWAIT, so even perturbing cannot help */
	call_as(1, &c, &s);
	assert_snap_unknown(&s);
	c.flags = PC_RES_ALLOW_PERTURB;
	call_as(1, &c, &s);
	assert_snap_unknown(&s);
	ck_assert_int_eq(s.perturbed, 0);
	c.flags = PC_RES_ALLOW_PERTURB | PC_RES_FORCE_NOWAIT;
	call_as(1, &c, &s);
	ck_assert_int_eq(s.ret, -EOPNOTSUPP);
	free(truth);
}
END_TEST

static char loopdev[64];

static void loop_detach(void)
{
	char cmd[128];

	if (loopdev[0]) {
		snprintf(cmd, sizeof(cmd), "losetup -d '%s' 2>/dev/null", loopdev);
		if (system(cmd) != 0)
			fprintf(stderr, "could not detach %s\n", loopdev);
		loopdev[0] = '\0';
	}
}

/* mincore of a whole block device through a fresh mapping (root: truth). */
static uint64_t bdev_mincore(int fd, unsigned char **vec)
{
	uint64_t bytes, n;
	void *map;

	ck_assert_int_eq(ioctl(fd, BLKGETSIZE64, &bytes), 0);
	n = bytes / ps;
	*vec = calloc(n, 1);
	ck_assert_ptr_nonnull(*vec);
	map = mmap(NULL, n * ps, PROT_READ, MAP_SHARED, fd, 0);
	ck_assert_ptr_ne(map, MAP_FAILED);
	ck_assert_int_eq(mincore(map, n * ps, *vec), 0);
	munmap(map, n * ps);
	for (uint64_t i = 0; i < n; i++)
		(*vec)[i] &= 1;
	return n;
}

START_TEST(block_device_bitmap_equals_pattern)
{
	static const uint64_t p[] = { 0, 3, 100, 255 };
	const char *img = pc_test_make_file("loop.img", 256, 0600, -1, -1);
	char cmd[4300];
	FILE *f;
	int ok = 0;

	snprintf(cmd, sizeof(cmd), "losetup -f --show -- '%s' 2>/dev/null", img);
	f = popen(cmd, "r");
	if (f) {
		if (fgets(loopdev, sizeof(loopdev), f)) {
			loopdev[strcspn(loopdev, "\n")] = '\0';
			ok = loopdev[0] == '/';
		}
		if (pclose(f) != 0)
			ok = 0;
	}
	if (!ok) {
		loopdev[0] = '\0';
		pc_test_skip("block_device", "losetup refused (no loop devices or no privilege)");
		return;
	}
	atexit(loop_detach);
	for (int attempt = 0;; attempt++) {
		struct pc_residency *r = NULL;
		unsigned char *truth, *after;
		int fd = open(loopdev, O_RDONLY | O_CLOEXEC), same, ret;
		uint64_t n;
		char byte;

		ck_assert_int_ge(fd, 0);
		/* evict the device's cache, then read the pattern page by page */
		ck_assert_int_eq(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
		ck_assert_int_eq(posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM), 0);
		for (size_t i = 0; i < PC_ARRAY_LEN(p); i++)
			ck_assert_int_eq(pread(fd, &byte, 1, (off_t)(p[i] * ps)), 1);
		n = bdev_mincore(fd, &truth);
		ret = pc_residency(fd, 0, 0, 0, &r);
		bdev_mincore(fd, &after);
		same = memcmp(truth, after, n) == 0;
		free(after);
		if (same) {
			unsigned char *want = pattern_vec_raw(n, p, PC_ARRAY_LEN(p));

			ck_assert_uint_eq(n, 256);
			ck_assert_int_eq(memcmp(truth, want, n), 0);
			free(want);
			ck_assert_int_eq(ret, 0);
			ck_assert_uint_eq(pc_residency_file_size(r), 256 * ps);
			ck_assert_uint_eq(pc_residency_npages(r), 256);
			ck_assert_int_eq(pc_residency_quality(r), PC_QUALITY_EXACT);
			ck_assert_uint_eq(pc_residency_resident(r), PC_ARRAY_LEN(p));
			for (uint64_t pg = 0; pg < n; pg++)
				ck_assert_int_eq(pc_residency_test(r, pg), truth[pg]);
		}
		pc_residency_free(r);
		free(truth);
		close(fd);
		if (same)
			break;
		ck_assert_msg(attempt + 1 < ATTEMPTS, "residency kept moving");
	}
	loop_detach();
}
END_TEST

/* ---- pc_residency_mem ---------------------------------------------------- */

START_TEST(mem_anonymous_touched_pages_are_resident)
{
	const size_t n = 16;
	struct pc_residency *r = NULL;
	char *map = mmap(NULL, n * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int ret;

	ck_assert_ptr_ne(map, MAP_FAILED);
	ck_assert_int_eq(madvise(map, n * ps, MADV_NOHUGEPAGE), 0);
	map[0] = 1;
	map[3 * ps] = 1;
	map[15 * ps + 7] = 1;
	ret = pc_residency_mem(map, n * ps, 0, &r);
	ck_assert_int_eq(ret, 0);
	ck_assert_uint_eq(pc_residency_first_page(r), 0);
	ck_assert_uint_eq(pc_residency_npages(r), n);
	ck_assert_int_eq(pc_residency_quality(r), PC_QUALITY_EXACT);
	ck_assert_int_eq(pc_residency_source(r), PC_SOURCE_MINCORE);
	ck_assert_uint_eq(pc_residency_resident(r), 3);
	for (uint64_t pg = 0; pg < n; pg++)
		ck_assert_int_eq(pc_residency_test(r, pg), pg == 0 || pg == 3 || pg == 15);
	pc_residency_free(r);
	ck_assert_int_eq(pc_residency_mem(map, n * ps, PC_RES_COUNT_ONLY, &r), 0);
	ck_assert_uint_eq(pc_residency_resident(r), 3);
	ck_assert_int_eq(pc_residency_test(r, 0), -ENODATA);
	pc_residency_free(r);
	munmap(map, n * ps);
}
END_TEST

START_TEST(mem_bad_arguments)
{
	struct pc_residency *sentinel = (struct pc_residency *)&ps, *r = sentinel;
	char *map;

	/* detection maps and unmaps pages of its own: done first, so that
	 * nothing of it lands in the hole left below */
	ck_assert_int_ge(pc_detect_mincore(), 0);
	map = mmap(NULL, 4 * ps, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(map, MAP_FAILED);
	ck_assert_int_eq(pc_residency_mem(map + 1, ps, 0, &r), -EINVAL);   /* not aligned */
	ck_assert_int_eq(pc_residency_mem(map, ps, PC_RES_ALLOW_PERTURB, &r), -EINVAL);
	ck_assert_int_eq(pc_residency_mem(map, ps, PC_RES_FORCE_MINCORE, &r), -EINVAL);
	ck_assert_int_eq(pc_residency_mem(map, ps, 1u << 20, &r), -EINVAL);
	ck_assert_int_eq(pc_residency_mem(map, ps, 0, NULL), -EINVAL);
	ck_assert_ptr_eq(r, sentinel);
	munmap(map, 4 * ps);
	/* unmapped now */
	ck_assert_int_eq(pc_residency_mem(map, 4 * ps, 0, &r), -ENOMEM);
	ck_assert_ptr_eq(r, sentinel);
	/* and one page up from 0, below vm.mmap_min_addr: never mapped */
	ck_assert_int_eq(pc_residency_mem((void *)(uintptr_t)ps, ps, 0, &r), -ENOMEM);
	ck_assert_ptr_eq(r, sentinel);
}
END_TEST

START_TEST(mem_file_mapping_own_file_is_exact)
{
	static const uint64_t p[] = { 2, 9, 31 };
	const char *path = pc_test_make_file("mem-file", 32, 0644, -1, -1);

	for (int attempt = 0;; attempt++) {
		struct pc_residency *r = NULL;
		unsigned char *truth, *after;
		int fd, same;
		void *map;

		pc_test_set_pattern(path, p, PC_ARRAY_LEN(p));
		fd = open(path, O_RDONLY | O_CLOEXEC);
		ck_assert_int_ge(fd, 0);
		/* mapped at an offset: pages count from the mapping's start
		 * (PROT_NONE: valgrind would read the head of a readable one) */
		map = mmap(NULL, 24 * ps, PROT_NONE, MAP_SHARED, fd, (off_t)(8 * ps));
		ck_assert_ptr_ne(map, MAP_FAILED);
		close(fd);
		pc_test_mincore(path, &truth);
		ck_assert_int_eq(pc_residency_mem(map, 24 * ps, 0, &r), 0);
		pc_test_mincore(path, &after);
		same = memcmp(truth, after, 32) == 0;
		if (same) {
			unsigned char *want = pattern_vec(32, p, PC_ARRAY_LEN(p));

			same = memcmp(truth, want, 32) == 0;
			free(want);
		}
		if (same) {
			ck_assert_uint_eq(pc_residency_first_page(r), 0);
			ck_assert_uint_eq(pc_residency_npages(r), 24);
			ck_assert_int_eq(pc_residency_quality(r), PC_QUALITY_EXACT);
			ck_assert_uint_eq(pc_residency_resident(r), (uint64_t)vec_count(truth + 8, 24));
			for (uint64_t pg = 0; pg < 24; pg++)
				ck_assert_int_eq(pc_residency_test(r, pg), truth[8 + pg]);
		}
		munmap(map, 24 * ps);
		pc_residency_free(r);
		free(truth);
		free(after);
		if (same)
			break;
		ck_assert_msg(attempt + 1 < ATTEMPTS, "residency kept moving");
	}
}
END_TEST

struct mem_hidden {
	const char *path;
};

/* As nobody: map a root 0644 file, touch page 1, ask. The kernel fakes
 * its answer here (GATED_FAKED): UNKNOWN, never all-resident EXACT. */
static int mem_hidden_fn(void *arg, void *buf, size_t bufsize)
{
	const struct mem_hidden *m = arg;
	struct snap *s = buf;
	struct pc_residency *r = NULL;
	volatile char sink;
	int fd = open(m->path, O_RDONLY | O_CLOEXEC);
	char *map;
	int ret;

	(void)bufsize;
	if (fd < 0)
		return -errno;
	map = mmap(NULL, FILE_PAGES * ps, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return -errno;
	sink = map[1 * ps];
	(void)sink;
	ret = pc_residency_mem(map, FILE_PAGES * ps, 0, &r);
	snap_take(s, ret, r);
	pc_residency_free(r);
	munmap(map, FILE_PAGES * ps);
	return 0;
}

START_TEST(mem_file_mapping_hidden_file_is_not_exact)
{
	const char *path = hidden_file("mem-hid", 0);
	struct mem_hidden m = { .path = path };
	struct snap s;

	pc_test_set_pattern(path, pat, NPAT);
	memset(&s, 0, sizeof(s));
	ck_assert_int_eq(pc_test_as_nobody(mem_hidden_fn, &m, &s, sizeof(s)), 0);
	ck_assert_int_eq(s.ret, 0);
	ck_assert_int_eq(pc_detect_mincore(), PC_MINCORE_GATED_FAKED);
	assert_snap_unknown(&s);
}
END_TEST

static int pc_test_on_tmpfs(void)
{
	const char *d = getenv("PC_TEST_DIR");
	struct statfs sfs;

	if (statfs(d && *d ? d : "/var/tmp", &sfs) == 0 && sfs.f_type == TMPFS_MAGIC) {
		printf("SKIP: the test directory is on tmpfs: eviction does not work there\n");
		return 1;
	}
	return 0;
}

int main(void)
{
	Suite *s = suite_create("residency");
	TCase *owned = tcase_create("owned");
	TCase *forced = tcase_create("forced");
	TCase *nobody = tcase_create("nobody");
	TCase *sizes = tcase_create("sizes");
	TCase *types = tcase_create("types");
	TCase *mem = tcase_create("mem");
	SRunner *sr;
	int failed;

	setup();
	tcase_add_test(owned, owned_file_bitmap_equals_pattern);
	tcase_add_test(owned, owned_file_fully_cached_and_evicted);
	tcase_add_test(owned, owned_0444_file_is_exact_for_its_owner);
	tcase_add_test(owned, count_only_counts_without_bitmap);
	tcase_add_test(owned, facts_give_the_same_answers);
	tcase_add_test(owned, facts_size_is_the_callers);
	tcase_add_test(owned, facts_refused);
	tcase_add_test(owned, runs_reproduce_pattern_and_start_inside_a_run);
	suite_add_tcase(s, owned);

	tcase_add_test(forced, force_mincore_same_bitmap);
	tcase_add_test(forced, force_cachestat_same_bitmap);
	tcase_add_test(forced, force_nowait_without_perturb_follows_the_mode);
	tcase_add_test(forced, force_nowait_with_perturb_same_bitmap_and_perturbed);
	tcase_add_test(forced, force_nowait_small_file_uses_preadv2_or_io_uring);
	tcase_add_test(forced, flags_unknown_bits_and_two_forces_are_einval);
	suite_add_tcase(s, forced);

	if (pc_test_is_root()) {
		tcase_add_test(nobody, nobody_foreign_0666_file_is_exact);
		tcase_add_test(nobody, nobody_acl_writable_file_is_exact);
		tcase_add_test(nobody, nobody_own_0444_file_is_exact);
		tcase_add_test(nobody, nobody_foreign_0666_forced_sources_same_bitmap);
		tcase_add_test(nobody, nobody_root_0644_file_is_unknown);
		tcase_add_test(nobody, nobody_sequential_read_marked_page_is_uncertain);
		tcase_add_test(nobody, nobody_root_0644_file_is_unknown_where_nowait_is_known);
		tcase_add_test(nobody, nobody_root_0644_force_mincore_and_cachestat_refused);
		tcase_add_test(nobody, nobody_root_0644_allow_perturb_gives_pattern);
		tcase_add_test(nobody,
			       nobody_root_0644_allow_perturb_gives_pattern_where_nowait_is_known);
		tcase_add_test(nobody, nobody_root_0644_allow_perturb_count_only);
		tcase_add_test(nobody, nobody_root_0644_force_nowait_with_perturb_gives_pattern);
		tcase_add_test(nobody, control_random_fd_reads_one_page);
		tcase_add_test(nobody, tmpfs_file_exact_for_root_unknown_for_nobody);
		suite_add_tcase(s, nobody);
	} else {
		pc_test_skip("uid 65534 cases", "not root: cannot switch to uid 65534");
	}

	tcase_add_test(sizes, empty_file_has_no_pages);
	tcase_add_test(sizes, one_byte_file_has_one_page);
	tcase_add_test(sizes, page_plus_one_byte_file_has_two_pages);
	tcase_add_test(sizes, sparse_16g_file_few_pages_cached_far_apart);
	tcase_add_test(sizes, file_truncated_between_two_calls);
	tcase_add_test(sizes, file_shrinking_during_scans_does_not_crash);
	tcase_add_test(sizes, offset_and_length_edges);
	tcase_set_timeout(sizes, 240);
	suite_add_tcase(s, sizes);

	tcase_add_test(types, bad_fds_are_ebadf);
	tcase_add_test(types, o_path_fd_is_ebadf);
	tcase_add_test(types, directory_is_einval);
	tcase_add_test(types, fifo_is_einval_and_does_not_block);
	tcase_add_test(types, socket_is_einval);
	tcase_add_test(types, char_devices_are_einval);
	tcase_add_test(types, accessors_accept_null);
	tcase_add_test(types, memfd_written_pages_are_resident);
	tcase_add_test(types, sparse_memfd_holes_are_stepped_over);
	if (pc_test_is_root())
		tcase_add_test(types, block_device_bitmap_equals_pattern);
	else
		pc_test_skip("block_device", "not root: cannot set up a loop device");
	tcase_set_timeout(types, 30);
	suite_add_tcase(s, types);

	tcase_add_test(mem, mem_anonymous_touched_pages_are_resident);
	tcase_add_test(mem, mem_bad_arguments);
	tcase_add_test(mem, mem_file_mapping_own_file_is_exact);
	if (pc_test_is_root())
		tcase_add_test(mem, mem_file_mapping_hidden_file_is_not_exact);
	suite_add_tcase(s, mem);

	/* Each forked case makes its own scratch directory: pc_test_dir()'s
	 * exit handler would remove a shared one when the first case exits.
	 * Only the tmpfs check is done here. */
	if (pc_test_on_tmpfs())
		return 77;
	sr = srunner_create(s);
	pc_test_cases_dir(); /* a failed case leaves no directory behind */
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
