/* SPDX-License-Identifier: MIT */
/*
 * The library's thread-safety claim, under load: 8 threads at once, each
 * looping a fixed number of times over detection, pc_can_do_mincore(),
 * pc_residency() (bitmap, COUNT_ONLY and a sub-range) on shared and
 * per-thread files, pc_residency_mem() and a prober of its own. Half the
 * threads run with fsuid/fsgid 65534 (the way pc_test_in_fsuid_thread()
 * does it, but at the same time as the others): every thread must see the
 * answers its own credentials give, and keep its own fsuid, whatever the
 * library does for the other threads (its detector switches a helper
 * thread to 65534 too). Every thread also reads one snapshot, written
 * before they start, with a reader of its own, and writes a snapshot of
 * its own file to a memfd and reads it back.
 *
 * Run in CI under ThreadSanitizer (scripts/test.sh, stage tsan) and once
 * by hand under helgrind.
 *
 * Residency patterns are set before the threads start and nothing in the
 * threads changes them: pc_residency() and pc_residency_mem() only map
 * (PROT_NONE, never touched) and ask mincore or cachestat, and the probers
 * probe only pages that are resident (a NOWAIT miss starts readahead on
 * this kernel, doc/kernels.md section 2) and one page past EOF, through
 * POSIX_FADV_RANDOM fds. Something on these machines reclaims cold pages on
 * its own (doc/kernels.md section 7), so a round whose pattern moved under it
 * (checked with mincore after the threads are done) is run again.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "backend.h"
#include "pagecache/pagecache.h"
#include "pc-test.h"

#define NTHREADS 8
#define FILE_PAGES 64
#define ANON_PAGES 16
#define PAST_EOF_PAGE (FILE_PAGES + 16)
/* the sub-range asked for with an offset and a length */
#define SUB_FIRST 8
#define SUB_PAGES 32
#define ITERATIONS 40
#define ITERATIONS_VALGRIND 4
#define ROUNDS 3
#define CAPTURE_TIME INT64_C(1700000000123456789)
/* a record of the shared snapshot with no file behind it */
#define UNKNOWN_PATH "gone/unknown-file"

static uint64_t ps;
static int nofork;          /* Check runs every case in this one process */
static int detected_here;   /* this process has called a detector */

/* ---- files with known patterns -------------------------------------------- */

struct pfile {
	const char *name;
	int fd;                            /* O_RDONLY, POSIX_FADV_RANDOM */
	uint64_t pages[FILE_PAGES];        /* the pattern: these pages are resident */
	size_t npages;
	unsigned char want[FILE_PAGES];    /* the same as a vector */
	int hidden_from_nobody;            /* root's 0644 and 0400 files: the gate fails for 65534 */
};

static void pattern_add(struct pfile *f, uint64_t page)
{
	f->pages[f->npages++] = page;
	f->want[page] = 1;
}

static uint64_t want_count(const struct pfile *f, uint64_t first, uint64_t n)
{
	uint64_t c = 0;

	for (uint64_t p = first; p < first + n; p++)
		c += f->want[p];
	return c;
}

/* mincore of the whole file through a PROT_NONE mapping (the truth for
 * root; PROT_NONE so that valgrind does not read the file's head, which
 * would cache it). 1 when it shows exactly the pattern. */
static int truth_is_pattern(const struct pfile *f)
{
	unsigned char vec[FILE_PAGES];
	void *map = mmap(NULL, FILE_PAGES * ps, PROT_NONE, MAP_SHARED, f->fd, 0);
	int same;

	ck_assert_ptr_ne(map, MAP_FAILED);
	ck_assert_int_eq(mincore(map, FILE_PAGES * ps, vec), 0);
	munmap(map, FILE_PAGES * ps);
	same = 1;
	for (int p = 0; p < FILE_PAGES; p++)
		if ((vec[p] & 1) != f->want[p])
			same = 0;
	return same;
}

/* Evict the file, read the pattern's pages one by one, and check it. */
static void set_pattern(const struct pfile *f, const char *path)
{
	for (int attempt = 0; attempt < 5; attempt++) {
		pc_test_set_pattern(path, f->pages, f->npages);
		if (truth_is_pattern(f))
			return;
	}
	ck_abort_msg("setup: %s does not hold its pattern after 5 tries", f->name);
}

/* ---- what every thread shares --------------------------------------------- */

struct detection {
	int mincore, cachestat, io_uring, nowait_scratch, nowait_shm;
};

struct shared {
	pthread_barrier_t start;
	struct pfile *root_0644, *root_0666;
	int detect_fd;    /* scratch subdirectory everyone may write: O_TMPFILE there */
	const char *snapshot;          /* written before the threads start */
	struct pfile *recorded[NTHREADS + 2]; /* its files, in order (then UNKNOWN_PATH) */
	int shm_fd;       /* /dev/shm, or -1 */
	int iterations;
	/* nobody threads detect first: root threads wait for them */
	int nobody_first;
	int nobody_waiting;
	pthread_mutex_t lock;
	pthread_cond_t cond;
};

struct worker {
	pthread_t thread;
	int index;
	int nobody;           /* fsuid/fsgid 65534 */
	struct shared *sh;
	struct pfile *own;    /* this thread's file, 0400: root's, or 65534's (the owner passes alone) */
	struct pfile *next;   /* the next thread's: root needs CAP_FOWNER for 65534's file */
	uid_t fsuid;          /* what setfsuid(-1) must keep answering */
	gid_t fsgid;
	/* results */
	char fail[512];       /* the first hard failure: the case fails */
	struct detection det; /* the first iteration's answers */
	int iterations_done;
	/* answers that differ from a pattern: only a moved pattern excuses them */
	unsigned long mismatches;
	char mismatch[256];
	unsigned long probe_hits, probe_misses;
};

static void __attribute__((format(printf, 2, 3))) hard_fail(struct worker *w, const char *fmt, ...)
{
	va_list ap;
	int len;

	if (w->fail[0])
		return;
	len = snprintf(w->fail, sizeof(w->fail), "thread %d (%s): ", w->index,
		       w->nobody ? "fsuid 65534" : "own credentials");
	va_start(ap, fmt);
	vsnprintf(w->fail + len, sizeof(w->fail) - (size_t)len, fmt, ap);
	va_end(ap);
}

static void __attribute__((format(printf, 2, 3))) mismatch(struct worker *w, const char *fmt, ...)
{
	va_list ap;

	if (!w->mismatches++) {
		va_start(ap, fmt);
		vsnprintf(w->mismatch, sizeof(w->mismatch), fmt, ap);
		va_end(ap);
	}
}

/* ---- detection -------------------------------------------------------------- */

static void detect_all(struct worker *w, int iteration)
{
	const struct shared *sh = w->sh;
	struct detection d = { 0 };

	/* a different order in every thread and iteration */
	for (int k = 0; k < 5; k++) {
		switch ((k + iteration + w->index) % 5) {
		case 0:
			d.mincore = pc_detect_mincore();
			break;
		case 1:
			d.cachestat = pc_detect_cachestat();
			break;
		case 2:
			d.nowait_scratch = pc_detect_nowait(sh->detect_fd);
			break;
		case 3:
			d.nowait_shm = sh->shm_fd >= 0 ? pc_detect_nowait(sh->shm_fd)
						       : PC_NOWAIT_UNSUPPORTED;
			break;
		default:
			d.io_uring = pc_detect_io_uring();
			break;
		}
	}
	if (iteration == 0) {
		w->det = d;
		if (d.mincore <= PC_MINCORE_UNKNOWN || d.cachestat <= PC_CACHESTAT_UNKNOWN ||
		    d.nowait_scratch <= PC_NOWAIT_UNKNOWN || d.nowait_shm != PC_NOWAIT_UNSUPPORTED ||
		    (d.io_uring != 0 && d.io_uring != 1))
			hard_fail(w, "detection: mincore %d cachestat %d nowait %d nowait(shm) %d io_uring %d",
			     d.mincore, d.cachestat, d.nowait_scratch, d.nowait_shm, d.io_uring);
		return;
	}
	if (memcmp(&d, &w->det, sizeof(d)) != 0)
		hard_fail(w, "iteration %d: detection changed: mincore %d/%d cachestat %d/%d nowait %d/%d "
		     "nowait(shm) %d/%d io_uring %d/%d", iteration, d.mincore, w->det.mincore,
		     d.cachestat, w->det.cachestat, d.nowait_scratch, w->det.nowait_scratch,
		     d.nowait_shm, w->det.nowait_shm, d.io_uring, w->det.io_uring);
}

/* ---- residency of files ----------------------------------------------------- */

/* Whether the kernel's answers about f are the truth for this thread. */
static int visible(const struct worker *w, const struct pfile *f)
{
	return !w->nobody || !f->hidden_from_nobody || w->det.mincore == PC_MINCORE_FULL;
}

/* Whether no source may answer this thread about f: mincore fakes or shows
 * only mapped pages, cachestat is gated or absent, and NOWAIT probes would
 * cache pages (not allowed without PC_RES_ALLOW_PERTURB). */
static int must_be_unknown(const struct worker *w, const struct pfile *f)
{
	return !visible(w, f) && w->det.cachestat != PC_CACHESTAT_OPEN &&
	       w->det.nowait_scratch != PC_NOWAIT_CLEAN;
}

static void check_residency(struct worker *w, const struct pfile *f, uint64_t first,
			    uint64_t n, unsigned int flags)
{
	const char *kind = flags & PC_RES_COUNT_ONLY ? "count" : "bitmap";
	struct pc_residency *r = NULL;
	uint64_t len = n == FILE_PAGES ? 0 : n * ps;
	int ret = pc_residency(f->fd, first * ps, len, flags, &r);
	int quality;

	if (ret < 0) {
		hard_fail(w, "pc_residency(%s, %s): %s", f->name, kind, strerror(-ret));
		return;
	}
	quality = pc_residency_quality(r);
	if (pc_residency_first_page(r) != first || pc_residency_npages(r) != n ||
	    pc_residency_file_size(r) != FILE_PAGES * ps || pc_residency_perturbed(r) != 0) {
		hard_fail(w, "pc_residency(%s, %s): range %llu+%llu size %llu perturbed %d", f->name, kind,
		     (unsigned long long)pc_residency_first_page(r),
		     (unsigned long long)pc_residency_npages(r),
		     (unsigned long long)pc_residency_file_size(r), pc_residency_perturbed(r));
	} else if (quality == PC_QUALITY_UNKNOWN) {
		if (!must_be_unknown(w, f))
			hard_fail(w, "pc_residency(%s, %s): UNKNOWN for a file this thread may see",
			     f->name, kind);
		else if (pc_residency_resident(r) != 0 || pc_residency_source(r) != PC_SOURCE_NONE ||
			 pc_residency_test(r, first) != -ENODATA)
			hard_fail(w, "pc_residency(%s, %s): UNKNOWN with resident %llu source %d",
			     f->name, kind, (unsigned long long)pc_residency_resident(r),
			     pc_residency_source(r));
	} else if (quality != PC_QUALITY_EXACT || pc_residency_source(r) == PC_SOURCE_NONE) {
		hard_fail(w, "pc_residency(%s, %s): quality %d source %d", f->name, kind, quality,
		     pc_residency_source(r));
	} else if (must_be_unknown(w, f)) {
		hard_fail(w, "pc_residency(%s, %s): EXACT (source %d) for a file the kernel hides",
		     f->name, kind, pc_residency_source(r));
	} else {
		if (pc_residency_resident(r) != want_count(f, first, n))
			mismatch(w, "pc_residency(%s, %s): %llu resident, the pattern has %llu",
				 f->name, kind, (unsigned long long)pc_residency_resident(r),
				 (unsigned long long)want_count(f, first, n));
		for (uint64_t p = first; p < first + n; p++) {
			int bit = pc_residency_test(r, p);

			if (flags & PC_RES_COUNT_ONLY) {
				if (bit != -ENODATA)
					hard_fail(w, "pc_residency(%s, count): test(%llu) = %d", f->name,
					     (unsigned long long)p, bit);
				break;
			}
			if (bit < 0) {
				hard_fail(w, "pc_residency(%s): test(%llu) = %d", f->name,
				     (unsigned long long)p, bit);
				break;
			}
			if (bit != f->want[p]) {
				mismatch(w, "pc_residency(%s): page %llu is %d, the pattern says %d",
					 f->name, (unsigned long long)p, bit, f->want[p]);
				break;
			}
		}
	}
	pc_residency_free(r);
}

static void check_can_do_mincore(struct worker *w, const struct pfile *f)
{
	int ret = pc_can_do_mincore(f->fd);

	if (ret != visible(w, f))
		hard_fail(w, "pc_can_do_mincore(%s) = %d, want %d", f->name, ret, visible(w, f));
}

/* ---- residency of memory ---------------------------------------------------- */

/* Anonymous pages this thread touched: always EXACT. */
static void check_mem_anonymous(struct worker *w)
{
	struct pc_residency *r = NULL;
	uint64_t touched = 0;
	char *map = mmap(NULL, ANON_PAGES * ps, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int ret;

	if (map == MAP_FAILED) {
		hard_fail(w, "mmap anonymous: %s", strerror(errno));
		return;
	}
	(void)madvise(map, ANON_PAGES * ps, MADV_NOHUGEPAGE);
	for (uint64_t p = 0; p < ANON_PAGES; p++) {
		if ((p + (uint64_t)w->index) % 3 == 0) {
			map[p * ps] = 1;
			touched++;
		}
	}
	ret = pc_residency_mem(map, ANON_PAGES * ps, 0, &r);
	if (ret < 0) {
		hard_fail(w, "pc_residency_mem(anonymous): %s", strerror(-ret));
	} else if (pc_residency_quality(r) != PC_QUALITY_EXACT ||
		   pc_residency_resident(r) != touched || pc_residency_npages(r) != ANON_PAGES) {
		hard_fail(w, "pc_residency_mem(anonymous): quality %d, %llu of %llu resident, want %llu",
		     pc_residency_quality(r), (unsigned long long)pc_residency_resident(r),
		     (unsigned long long)pc_residency_npages(r), (unsigned long long)touched);
	} else {
		for (uint64_t p = 0; p < ANON_PAGES; p++) {
			if (pc_residency_test(r, p) != ((p + (uint64_t)w->index) % 3 == 0)) {
				hard_fail(w, "pc_residency_mem(anonymous): page %llu is %d",
				     (unsigned long long)p, pc_residency_test(r, p));
				break;
			}
		}
	}
	pc_residency_free(r);
	munmap(map, ANON_PAGES * ps);
}

/* A mapping of f that nothing touches: it shows the page cache to whoever
 * may see f, and never EXACT to anyone else. */
static void check_mem_file(struct worker *w, const struct pfile *f)
{
	struct pc_residency *r = NULL;
	void *map = mmap(NULL, FILE_PAGES * ps, PROT_NONE, MAP_SHARED, f->fd, 0);
	int ret, quality;

	if (map == MAP_FAILED) {
		hard_fail(w, "mmap %s: %s", f->name, strerror(errno));
		return;
	}
	ret = pc_residency_mem(map, FILE_PAGES * ps, 0, &r);
	quality = ret < 0 ? ret : pc_residency_quality(r);
	if (ret < 0) {
		hard_fail(w, "pc_residency_mem(%s): %s", f->name, strerror(-ret));
	} else if (!visible(w, f)) {
		/* hidden and never touched: no page of ours is mapped either */
		if (quality == PC_QUALITY_EXACT || pc_residency_resident(r) != 0)
			hard_fail(w, "pc_residency_mem(%s): quality %d with %llu resident for a file "
			     "the kernel hides", f->name, quality,
			     (unsigned long long)pc_residency_resident(r));
	} else if (quality != PC_QUALITY_EXACT) {
		hard_fail(w, "pc_residency_mem(%s): quality %d", f->name, quality);
	} else {
		if (pc_residency_resident(r) != f->npages)
			mismatch(w, "pc_residency_mem(%s): %llu resident, the pattern has %zu",
				 f->name, (unsigned long long)pc_residency_resident(r), f->npages);
		for (uint64_t p = 0; p < FILE_PAGES; p++) {
			if (pc_residency_test(r, p) != f->want[p]) {
				mismatch(w, "pc_residency_mem(%s): page %llu is %d", f->name,
					 (unsigned long long)p, pc_residency_test(r, p));
				break;
			}
		}
	}
	pc_residency_free(r);
	munmap(map, FILE_PAGES * ps);
}

/* ---- the prober -------------------------------------------------------------- */

/* The pattern's pages from the highest to the lowest, after one page past
 * EOF: every answer but that one must be a hit, and no probe can miss. */
static void probe_file(struct worker *w, struct pc_prober *p, const struct pfile *f)
{
	uint64_t pages[FILE_PAGES + 1];
	uint8_t resident[FILE_PAGES + 1];
	size_t n = 0;
	ssize_t ret;

	pages[n++] = PAST_EOF_PAGE;
	for (size_t i = f->npages; i-- > 0;)
		pages[n++] = f->pages[i];
	memset(resident, 0xff, sizeof(resident));
	ret = pc_prober_probe(p, f->fd, pages, n, resident);
	if (ret != (ssize_t)n) {
		hard_fail(w, "pc_prober_probe(%s) = %zd, want %zu", f->name, ret, n);
		return;
	}
	if (resident[0] != 0)
		hard_fail(w, "pc_prober_probe(%s): page %d past EOF answered %d", f->name,
		     PAST_EOF_PAGE, resident[0]);
	for (size_t i = 1; i < n; i++) {
		if (resident[i] == 1) {
			w->probe_hits++;
		} else if (resident[i] == 0) {
			w->probe_misses++;
		} else {
			hard_fail(w, "pc_prober_probe(%s): page %llu answered %d", f->name,
			     (unsigned long long)pages[i], resident[i]);
			return;
		}
	}
}

static void check_prober(struct worker *w, int iteration)
{
	struct pc_prober *p = NULL;
	/* the default depth, and a small one that a batch overflows */
	int ret = pc_prober_new(iteration % 2 ? 4 : 0, &p);
	int want_source;

	if (ret < 0) {
		hard_fail(w, "pc_prober_new: %s", strerror(-ret));
		return;
	}
	want_source = w->det.io_uring == 1 ? PC_SOURCE_IO_URING : PC_SOURCE_PREADV2;
	if (pc_prober_source(p) != want_source)
		hard_fail(w, "pc_prober_source = %d, want %d", pc_prober_source(p), want_source);
	probe_file(w, p, w->sh->root_0644);
	probe_file(w, p, w->sh->root_0666);
	probe_file(w, p, w->own);
	pc_prober_free(p);
}

/* ---- snapshots ---------------------------------------------------------------- */

static const struct pc_snapshot_info snapshot_info = {
	.size = sizeof(struct pc_snapshot_info),
	.capture_time_ns = CAPTURE_TIME,
	.mincore_mode = PC_MINCORE_GATED_FAKED,
	.cachestat_mode = PC_CACHESTAT_GATED,
	.nowait_mode = PC_NOWAIT_DESTRUCTIVE,
};

/* The pattern of f as runs; returns how many. */
static size_t pattern_runs(const struct pfile *f, struct pc_run *runs)
{
	size_t n = 0;

	for (uint64_t p = 0; p < FILE_PAGES; p++) {
		if (!f->want[p])
			continue;
		if (n && runs[n - 1].page + runs[n - 1].npages == p) {
			runs[n - 1].npages++;
		} else {
			runs[n].page = p;
			runs[n].npages = 1;
			n++;
		}
	}
	return n;
}

/* Read runs of the current file and compare them with want[] (NULL: none
 * expected). Returns NULL or why not. */
static const char *read_runs_match(struct pc_snapshot_reader *rd, const unsigned char *want,
				   char *why, size_t whylen)
{
	unsigned char got[FILE_PAGES] = { 0 };
	struct pc_run run;
	int ret;

	while ((ret = pc_snapshot_next_run(rd, &run)) == 1) {
		if (!want || run.page + run.npages > FILE_PAGES || run.npages == 0) {
			snprintf(why, whylen, "unexpected run %llu+%llu",
				 (unsigned long long)run.page, (unsigned long long)run.npages);
			return why;
		}
		memset(got + run.page, 1, (size_t)run.npages);
	}
	if (ret < 0) {
		snprintf(why, whylen, "pc_snapshot_next_run: %s (%s)", strerror(-ret),
			 pc_snapshot_reader_error(rd) ? pc_snapshot_reader_error(rd) : "?");
		return why;
	}
	for (int p = 0; want && p < FILE_PAGES; p++) {
		if (got[p] != want[p]) {
			snprintf(why, whylen, "page %d is %d in the snapshot, want %d", p, got[p],
				 want[p]);
			return why;
		}
	}
	return NULL;
}

/* The shared snapshot, through a reader (and a file description) of this
 * thread's own: header, every file's identity and runs, the end. */
static void check_shared_snapshot(struct worker *w)
{
	const struct shared *sh = w->sh;
	struct pc_snapshot_reader *rd = NULL;
	const struct pc_snapshot_file *file;
	char why[256];
	int fd = open(sh->snapshot, O_RDONLY | O_CLOEXEC);
	int ret, i;

	if (fd < 0) {
		hard_fail(w, "open %s: %s", sh->snapshot, strerror(errno));
		return;
	}
	ret = pc_snapshot_reader_new(fd, &rd);
	if (ret == 0)
		ret = pc_snapshot_read_header(rd);
	if (ret < 0) {
		hard_fail(w, "snapshot header: %s", strerror(-ret));
		goto out;
	}
	if (pc_snapshot_reader_version(rd) != PC_SNAPSHOT_FORMAT_VERSION ||
	    pc_snapshot_reader_page_size(rd) != ps ||
	    pc_snapshot_reader_capture_time(rd) != CAPTURE_TIME ||
	    pc_snapshot_reader_mincore_mode(rd) != snapshot_info.mincore_mode ||
	    pc_snapshot_reader_cachestat_mode(rd) != snapshot_info.cachestat_mode ||
	    pc_snapshot_reader_nowait_mode(rd) != snapshot_info.nowait_mode ||
	    !pc_snapshot_reader_root(rd) || strcmp(pc_snapshot_reader_root(rd), pc_test_dir()) != 0) {
		hard_fail(w, "snapshot header: version %d page size %u root %s",
			  pc_snapshot_reader_version(rd), pc_snapshot_reader_page_size(rd),
			  pc_snapshot_reader_root(rd) ? pc_snapshot_reader_root(rd) : "(null)");
		goto out;
	}
	for (i = 0; (ret = pc_snapshot_next_file(rd, &file)) == 1; i++) {
		const struct pfile *f = i < NTHREADS + 2 ? sh->recorded[i] : NULL;
		const char *name = f ? f->name : UNKNOWN_PATH;
		struct stat st;

		if (i > NTHREADS + 2 || strcmp(file->path, name) != 0) {
			hard_fail(w, "snapshot file %d is %s, want %s", i, file->path,
				  i > NTHREADS + 2 ? "the end" : name);
			goto out;
		}
		if (!f) {
			if (file->quality != PC_QUALITY_UNKNOWN || file->nruns || file->npages)
				hard_fail(w, "snapshot %s: quality %d with %llu runs", name,
					  file->quality, (unsigned long long)file->nruns);
		} else if (fstat(f->fd, &st) < 0 || file->file_size != (uint64_t)st.st_size ||
			   file->ino != (uint64_t)st.st_ino || file->dev != (uint64_t)st.st_dev ||
			   file->quality != PC_QUALITY_EXACT || file->npages != f->npages) {
			hard_fail(w, "snapshot %s: size %llu ino %llu quality %d, %llu pages",
				  name, (unsigned long long)file->file_size,
				  (unsigned long long)file->ino, file->quality,
				  (unsigned long long)file->npages);
		}
		if (w->fail[0])
			goto out;
		if (read_runs_match(rd, f ? f->want : NULL, why, sizeof(why))) {
			hard_fail(w, "snapshot %s: %s", name, why);
			goto out;
		}
	}
	if (ret < 0)
		hard_fail(w, "pc_snapshot_next_file: %s (%s)", strerror(-ret),
			  pc_snapshot_reader_error(rd) ? pc_snapshot_reader_error(rd) : "?");
	else if (i != NTHREADS + 3)
		hard_fail(w, "the snapshot ended after %d files, want %d", i, NTHREADS + 3);
out:
	pc_snapshot_reader_free(rd);
	close(fd);
}

/* This thread's own file, scanned now, written to a snapshot in a memfd
 * with a writer of its own and read back: the runs must be the scan's. */
static void check_own_snapshot(struct worker *w)
{
	struct pc_snapshot_file meta = { .size = sizeof(meta) };
	const struct pc_snapshot_file *file = NULL;
	struct pc_snapshot_writer *wr = NULL;
	struct pc_snapshot_reader *rd = NULL;
	struct pc_residency *r = NULL;
	unsigned char scanned[FILE_PAGES];
	char why[256];
	struct stat st;
	int fd = memfd_create("threads-snapshot", MFD_CLOEXEC);
	int ret;

	if (fd < 0 || fstat(w->own->fd, &st) < 0) {
		hard_fail(w, "memfd_create or fstat: %s", strerror(errno));
		goto out;
	}
	ret = pc_residency(w->own->fd, 0, 0, 0, &r);
	if (ret < 0) {
		hard_fail(w, "pc_residency(%s): %s", w->own->name, strerror(-ret));
		goto out;
	}
	for (uint64_t p = 0; p < FILE_PAGES; p++)
		scanned[p] = pc_residency_test(r, p) == 1;
	meta.file_size = (uint64_t)st.st_size;
	meta.dev = (uint64_t)st.st_dev;
	meta.ino = (uint64_t)st.st_ino;
	ret = pc_snapshot_writer_new(fd, &snapshot_info, &wr);
	if (ret == 0)
		ret = pc_snapshot_write_file(wr, w->own->name, &meta, r);
	if (ret == 0)
		ret = pc_snapshot_writer_finish(wr);
	if (ret < 0) {
		hard_fail(w, "writing a snapshot of %s: %s", w->own->name, strerror(-ret));
		goto out;
	}
	if (lseek(fd, 0, SEEK_SET) != 0) {
		hard_fail(w, "lseek: %s", strerror(errno));
		goto out;
	}
	ret = pc_snapshot_reader_new(fd, &rd);
	if (ret == 0)
		ret = pc_snapshot_next_file(rd, &file);
	if (ret != 1 || strcmp(file->path, w->own->name) != 0 ||
	    file->npages != pc_residency_resident(r)) {
		hard_fail(w, "reading back the snapshot of %s: %d", w->own->name, ret);
		goto out;
	}
	if (read_runs_match(rd, scanned, why, sizeof(why))) {
		hard_fail(w, "reading back the snapshot of %s: %s", w->own->name, why);
		goto out;
	}
	ret = pc_snapshot_next_file(rd, &file);
	if (ret != 0)
		hard_fail(w, "the snapshot of %s does not end after it: %d", w->own->name, ret);
out:
	pc_snapshot_reader_free(rd);
	pc_snapshot_writer_free(wr);
	pc_residency_free(r);
	if (fd >= 0)
		close(fd);
}

/* ---- the thread --------------------------------------------------------------- */

static void check_credentials(struct worker *w, int iteration)
{
	uid_t fsuid = (uid_t)setfsuid((uid_t)-1);
	gid_t fsgid = (gid_t)setfsgid((gid_t)-1);

	if (fsuid != w->fsuid || fsgid != w->fsgid)
		hard_fail(w, "iteration %d: fsuid/fsgid %u/%u, want %u/%u", iteration, (unsigned)fsuid,
		     (unsigned)fsgid, (unsigned)w->fsuid, (unsigned)w->fsgid);
}

static void first_wave_done(struct worker *w)
{
	struct shared *sh = w->sh;

	pthread_mutex_lock(&sh->lock);
	if (w->nobody)
		sh->nobody_waiting--;
	else
		while (sh->nobody_first && sh->nobody_waiting > 0)
			pthread_cond_wait(&sh->cond, &sh->lock);
	pthread_cond_broadcast(&sh->cond);
	pthread_mutex_unlock(&sh->lock);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct shared *sh = w->sh;
	int announced = 0;

	if (w->nobody) {
		setfsgid(PC_TEST_NOBODY);
		setfsuid(PC_TEST_NOBODY);
		w->fsuid = PC_TEST_NOBODY;
		w->fsgid = PC_TEST_NOBODY;
	} else {
		w->fsuid = (uid_t)setfsuid((uid_t)-1);
		w->fsgid = (gid_t)setfsgid((gid_t)-1);
	}
	check_credentials(w, -1);
	pthread_barrier_wait(&sh->start);
	if (!w->nobody)
		first_wave_done(w);
	for (int it = 0; it < sh->iterations && !w->fail[0]; it++) {
		detect_all(w, it);
		if (w->nobody && !announced) {
			first_wave_done(w);
			announced = 1;
		}
		if (w->fail[0])
			break;
		check_can_do_mincore(w, sh->root_0644);
		check_can_do_mincore(w, sh->root_0666);
		check_can_do_mincore(w, w->own);
		check_can_do_mincore(w, w->next);
		check_residency(w, sh->root_0644, 0, FILE_PAGES, 0);
		check_residency(w, sh->root_0644, 0, FILE_PAGES, PC_RES_COUNT_ONLY);
		check_residency(w, sh->root_0644, SUB_FIRST, SUB_PAGES, 0);
		check_residency(w, sh->root_0666, 0, FILE_PAGES, 0);
		check_residency(w, sh->root_0666, 0, FILE_PAGES, PC_RES_COUNT_ONLY);
		check_residency(w, w->own, 0, FILE_PAGES, 0);
		check_residency(w, w->own, SUB_FIRST, SUB_PAGES, PC_RES_COUNT_ONLY);
		check_residency(w, w->next, 0, FILE_PAGES, 0);
		check_residency(w, w->next, 0, FILE_PAGES, PC_RES_COUNT_ONLY);
		check_mem_anonymous(w);
		check_mem_file(w, sh->root_0644);
		check_mem_file(w, w->own);
		check_prober(w, it);
		check_shared_snapshot(w);
		check_own_snapshot(w);
		check_credentials(w, it);
		w->iterations_done = it + 1;
	}
	if (w->nobody && !announced)
		first_wave_done(w); /* failed before detecting: never keep the others waiting */
	return NULL;
}

/* ---- the cases ------------------------------------------------------------------ */

static int iterations(void)
{
	const char *env = getenv("PC_TEST_THREAD_ITERATIONS");

	if (env && *env)
		return atoi(env);
	return pc_test_under_valgrind() ? ITERATIONS_VALGRIND : ITERATIONS;
}

static int open_random(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	ck_assert_msg(fd >= 0, "open %s: %s", path, strerror(errno));
	ck_assert_int_eq(posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM), 0);
	return fd;
}

static struct pfile *make_pfile(const char *name, mode_t mode, int uid, int hidden)
{
	struct pfile *f = calloc(1, sizeof(*f));

	ck_assert_ptr_nonnull(f);
	f->name = name;
	f->hidden_from_nobody = hidden;
	f->fd = open_random(pc_test_make_file(name, FILE_PAGES, mode, uid, uid));
	return f;
}

/* /dev/shm when it is tmpfs (NOWAIT is unsupported there), else -1. */
static int open_shm(void)
{
	struct statfs sfs;

	if (statfs("/dev/shm", &sfs) < 0 || sfs.f_type != TMPFS_MAGIC) {
		pc_test_skip("nowait on /dev/shm", "/dev/shm is not tmpfs here");
		return -1;
	}
	return open("/dev/shm", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

/* The snapshot every thread reads: the patterns of the shared and own
 * files, and one file recorded as unknown. Written from the patterns, not
 * from a scan, so that it does not depend on the page cache. */
static void write_shared_snapshot(struct shared *sh, struct pfile **own)
{
	struct pc_snapshot_info info = snapshot_info;
	struct pc_snapshot_writer *w = NULL;
	struct pc_run runs[FILE_PAGES];

	sh->snapshot = pc_test_path("threads.snap");
	sh->recorded[0] = sh->root_0644;
	sh->recorded[1] = sh->root_0666;
	for (int i = 0; i < NTHREADS; i++)
		sh->recorded[i + 2] = own[i];
	info.root = pc_test_dir();
	ck_assert_int_eq(pc_snapshot_writer_new_at(AT_FDCWD, sh->snapshot, 0644, &info, &w), 0);
	for (int i = 0; i < NTHREADS + 2; i++) {
		const struct pfile *f = sh->recorded[i];
		struct pc_snapshot_file meta = { .size = sizeof(meta), .quality = PC_QUALITY_EXACT };
		struct stat st;

		ck_assert_int_eq(fstat(f->fd, &st), 0);
		meta.file_size = (uint64_t)st.st_size;
		meta.mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
		meta.dev = (uint64_t)st.st_dev;
		meta.ino = (uint64_t)st.st_ino;
		ck_assert_int_eq(pc_snapshot_write_runs(w, f->name, &meta, runs,
							pattern_runs(f, runs)), 0);
	}
	{
		struct pc_snapshot_file meta = { .size = sizeof(meta),
						 .quality = PC_QUALITY_UNKNOWN };

		ck_assert_int_eq(pc_snapshot_write_runs(w, UNKNOWN_PATH, &meta, NULL, 0), 0);
	}
	ck_assert_int_eq(pc_snapshot_writer_finish(w), 0);
	pc_snapshot_writer_free(w);
}

static void run_threads(int nobody_first)
{
	const int root = pc_test_is_root();
	struct worker w[NTHREADS];
	struct shared sh;
	struct pfile *own[NTHREADS];
	const char *detect_dir = pc_test_path("detect");
	int round, nrounds_disturbed = 0;

	memset(&sh, 0, sizeof(sh));
	sh.iterations = iterations();
	ck_assert_int_gt(sh.iterations, 0);
	sh.nobody_first = nobody_first && root;
	/* a directory everyone may write: every thread's NOWAIT detection
	 * makes its O_TMPFILE there, and finds no file to disturb */
	ck_assert_int_eq(mkdir(detect_dir, 0777), 0);
	ck_assert_int_eq(chmod(detect_dir, 0777), 0);
	sh.detect_fd = open(detect_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(sh.detect_fd, 0);
	sh.shm_fd = open_shm();
	ck_assert_int_eq(pthread_mutex_init(&sh.lock, NULL), 0);
	ck_assert_int_eq(pthread_cond_init(&sh.cond, NULL), 0);

	sh.root_0644 = make_pfile("root-0644", 0644, -1, 1);
	sh.root_0666 = make_pfile("root-0666", 0666, -1, 0);
	for (uint64_t p = 0; p < FILE_PAGES; p++) {
		if (p % 9 == 1 || p == 2 || p == FILE_PAGES - 1)
			pattern_add(sh.root_0644, p);
		if (p % 7 == 3 || p == 0)
			pattern_add(sh.root_0666, p);
	}
	if (!root)
		pc_test_skip("fsuid 65534 threads", "not root: cannot switch fsuid");
	for (int i = 0; i < NTHREADS; i++) {
		static const char *names[NTHREADS] = { "own-0", "own-1", "own-2", "own-3",
						       "own-4", "own-5", "own-6", "own-7" };
		int nobody = root && i % 2 == 1;

		own[i] = make_pfile(names[i], 0400, nobody ? PC_TEST_NOBODY : -1, !nobody);
		for (uint64_t p = 0; p < FILE_PAGES; p++)
			if ((p * 5 + (uint64_t)i) % 11 == 0)
				pattern_add(own[i], p);
	}

	write_shared_snapshot(&sh, own);

	for (round = 0; round < ROUNDS; round++) {
		unsigned long mismatches = 0, hits = 0, misses = 0;
		struct pfile *all[NTHREADS + 2];
		int moved = 0;

		all[0] = sh.root_0644;
		all[1] = sh.root_0666;
		for (int i = 0; i < NTHREADS; i++)
			all[i + 2] = own[i];
		for (int i = 0; i < NTHREADS + 2; i++)
			set_pattern(all[i], pc_test_path(all[i]->name));

		ck_assert_int_eq(pthread_barrier_init(&sh.start, NULL, NTHREADS), 0);
		sh.nobody_waiting = 0;
		for (int i = 0; i < NTHREADS; i++) {
			w[i] = (struct worker){ .index = i, .nobody = root && i % 2 == 1,
						.sh = &sh, .own = own[i],
						.next = own[(i + 1) % NTHREADS] };
			sh.nobody_waiting += w[i].nobody;
		}
		for (int i = 0; i < NTHREADS; i++)
			ck_assert_int_eq(pthread_create(&w[i].thread, NULL, worker_main, &w[i]), 0);
		for (int i = 0; i < NTHREADS; i++)
			ck_assert_int_eq(pthread_join(w[i].thread, NULL), 0);
		pthread_barrier_destroy(&sh.start);
		detected_here = 1;

		for (int i = 0; i < NTHREADS; i++) {
			ck_assert_msg(!w[i].fail[0], "%s", w[i].fail);
			ck_assert_int_eq(w[i].iterations_done, sh.iterations);
			ck_assert_msg(memcmp(&w[i].det, &w[0].det, sizeof(w[0].det)) == 0,
				      "threads 0 and %d detected differently", i);
			mismatches += w[i].mismatches;
			hits += w[i].probe_hits;
			misses += w[i].probe_misses;
		}
		for (int i = 0; i < NTHREADS + 2; i++)
			if (!truth_is_pattern(all[i]))
				moved = 1;
		/* A page reclaimed between two answers and read back by a probe
		 * that missed it (destructive NOWAIT) leaves no trace at the end:
		 * a round with both kinds of disagreement is run again too. */
		if (moved || (mismatches && misses)) {
			nrounds_disturbed++;
			printf("round %d: a pattern moved under the threads (%lu answers "
			       "differed, %lu probe misses); again\n", round, mismatches, misses);
			continue;
		}
		for (int i = 0; i < NTHREADS; i++)
			ck_assert_msg(!w[i].mismatches, "thread %d: %lu answers differ from the "
				      "pattern, which held: first: %s", i, w[i].mismatches,
				      w[i].mismatch);
		/* A NOWAIT read of a resident page may still answer EAGAIN for a
		 * folio busy at that moment (doc/kernels.md section 2): rarely. */
		ck_assert_msg(misses <= 1 + hits / 1000, "%lu of %lu probes of resident pages "
			      "missed", misses, hits + misses);
		ck_assert_uint_gt(hits, 0);
		printf("%s: round %d: %d threads (%d with fsuid 65534) x %d iterations agree; "
		       "%lu probes of resident pages hit, %lu missed\n",
		       nobody_first ? "nobody first" : "all at once", round, NTHREADS,
		       root ? NTHREADS / 2 : 0, sh.iterations, hits, misses);
		break;
	}
	ck_assert_msg(round < ROUNDS, "the patterns moved in all %d rounds", ROUNDS);

	/* What every thread was told is what the library tells this thread,
	 * and what a detection run afresh (not cached) finds. */
	ck_assert_int_eq(w[0].det.mincore, pc_detect_mincore());
	ck_assert_int_eq(w[0].det.cachestat, pc_detect_cachestat());
	ck_assert_int_eq(w[0].det.io_uring, pc_detect_io_uring());
	ck_assert_int_eq(w[0].det.nowait_scratch, pc_detect_nowait(sh.detect_fd));
	ck_assert_int_eq(w[0].det.mincore, pc_detect_mincore_on(pc_kernel_backend()));
	ck_assert_int_eq(w[0].det.cachestat, pc_detect_cachestat_on(pc_kernel_backend()));

	for (int i = 0; i < NTHREADS; i++) {
		close(own[i]->fd);
		free(own[i]);
	}
	close(sh.root_0644->fd);
	close(sh.root_0666->fd);
	free(sh.root_0644);
	free(sh.root_0666);
	close(sh.detect_fd);
	if (sh.shm_fd >= 0)
		close(sh.shm_fd);
	pthread_cond_destroy(&sh.cond);
	pthread_mutex_destroy(&sh.lock);
	ck_assert_int_eq(rmdir(detect_dir), 0); /* detection left no file there */
}

/* The fsuid-65534 threads detect before the others run anything: the
 * process's answers come from a thread that is not root. */
START_TEST(nobody_threads_detect_first)
{
	if (nofork && detected_here) {
		pc_test_skip("nobody_threads_detect_first",
			     "Check does not fork here and detection already ran");
		return;
	}
	run_threads(1);
}
END_TEST

/* Everyone at once from the first call on. */
START_TEST(eight_threads_at_once_agree_with_the_patterns)
{
	run_threads(0);
}
END_TEST

static int on_tmpfs(void)
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
	Suite *s = suite_create("threads");
	TCase *tc = tcase_create("threads");
	SRunner *sr;
	int failed;

	ps = (uint64_t)sysconf(_SC_PAGESIZE);
	/* each forked case makes its own scratch directory */
	if (on_tmpfs())
		return 77;
	tcase_add_test(tc, nobody_threads_detect_first);
	tcase_add_test(tc, eight_threads_at_once_agree_with_the_patterns);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	nofork = srunner_fork_status(sr) == CK_NOFORK;
	pc_test_cases_dir(); /* a failed case leaves no directory behind */
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
