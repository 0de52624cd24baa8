/* SPDX-License-Identifier: MIT */
/*
 * The RWF_NOWAIT batch prober on real ext4 files: every answer is compared
 * with mincore taken right before probing (the truth: the test owns its
 * files), through io_uring and through the preadv2 fallback, which a forked
 * child forces with a seccomp filter on io_uring_setup. io_uring_enter
 * failures are injected the same way (a seccomp user-notification
 * supervisor) to check that the ring survives them.
 *
 * On this kernel a NOWAIT miss starts readahead (doc/kernels.md section 2), so
 * pages are probed from the highest to the lowest through a
 * POSIX_FADV_RANDOM fd, and each check sets its residency pattern anew.
 */
#include <check.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pagecache/pagecache.h"
#include "pc-test.h"

#define GIB (1024ULL * 1024 * 1024)
#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static uint64_t ps;

/* Why a check failed; checks return NULL or this, so that a forked child
 * can run them too and send the reason back. */
static char why[512];

/* why, formatted; a reason longer than why is cut short, which is fine */
__attribute__((format(printf, 1, 2))) static const char *fail_why(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return why;
}
#define FAIL(...) fail_why(__VA_ARGS__)
#define CHECK(expr) do { const char *m_ = (expr); ck_assert_msg(!m_, "%s", m_); } while (0)

static int cmp_desc(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? 1 : x > y ? -1 : 0;
}

static int open_random(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd >= 0 && posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static int in_set(uint64_t page, const uint64_t *set, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (set[i] == page)
			return 1;
	return 0;
}

struct outcome {
	size_t hits, misses, eof;       /* as mincore saw them right before */
	size_t false_hits;              /* misses answered 1: see below */
	size_t false_misses;            /* hits answered 0: see below */
	size_t misses_cached_after;     /* missed pages resident after probing */
};

/*
 * On a destructive kernel (6.12+) the read a miss starts can finish before
 * the kernel looks at the page again, and the probe then returns data: seen
 * here for up to 0.7% of evicted data pages at queue depths 1 and 2 (none at
 * 64 and more, where the batch's reads are dispatched together after it),
 * and for every page in a hole (nothing to read). Such an answer is allowed
 * when the page is resident after probing, for at most 1 miss in 8: a
 * prober answering 1 for what it did not read fails that. The preadv2
 * path does it far more often when the machine is loaded (the submitting
 * thread is preempted between starting the read and looking again: 9 of 9
 * seen in CI-like runs), so there only the resident-after rule holds; its
 * answers for pages past EOF and for resident pages are still checked.
 * So does code slowed down by a sanitizer or valgrind, on a fast disk: CI's
 * tsan stage saw 1206 of 8000 at one depth. And so does io_uring at depths 1
 * and 2 (one_at_a_time), where the reads go out one or two at a time as on
 * the preadv2 path: CI's plain stage, with other tests running beside it,
 * saw 1244 of 8000 at depth 1. The 1 in 8 holds at the other depths (none
 * seen at 64 and more; the cases at 4 and 8 have few misses).
 */
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define PC_TEST_SLOWED 1
#else
#define PC_TEST_SLOWED 0
#endif

static size_t false_hits_allowed(const struct pc_prober *p, bool one_at_a_time, size_t misses)
{
	if (pc_prober_source(p) == PC_SOURCE_PREADV2 || one_at_a_time || PC_TEST_SLOWED ||
	    pc_test_under_valgrind())
		return misses;
	return 1 + misses / 8;
}

/* valgrind reads the head of every file mapped (looking for ELF), which
 * caches its first 4 pages: checks leave those alone then. */
static uint64_t first_checked_page(void)
{
	return pc_test_under_valgrind() ? 4 : 0;
}

/*
 * The other way round is rarer (seen once in about 10^5 hits): a resident
 * page can be reclaimed between mincore and its probe (kdamond, doc/kernels.md
 * section 7), and EAGAIN may also come from a folio that is busy for a
 * moment. A wrong answer of the prober's own making (answers for the wrong
 * page, a stale answer) shows as many of both kinds.
 */
static size_t false_misses_allowed(size_t hits)
{
	/* 1 in 10^5 on a quiet machine; 8 in 2000 seen with load 7 on 2 cores
	 * (busy folios); a prober answering for the wrong page gets half */
	return 1 + hits / 100;
}

/*
 * Wait for the reads that earlier probes started in path: a page still being
 * read survives POSIX_FADV_DONTNEED, reads 0 in mincore (not up to date) and
 * then turns resident. A blocking read waits for it; through a
 * POSIX_FADV_RANDOM fd it reads exactly the pages asked for, and only the
 * data extents need it (holes are filled without I/O).
 */
static const char *settle(const char *path)
{
	const size_t chunk = 1 << 20;
	char *buf = malloc(chunk);
	const char *fail = NULL;
	int fd = open_random(path);
	off_t data = 0, hole;

	if (!buf || fd < 0)
		fail = FAIL("settle %s: %s", path, strerror(errno));
	while (!fail && (data = lseek(fd, data, SEEK_DATA)) >= 0) {
		hole = lseek(fd, data, SEEK_HOLE);
		if (hole < 0)
			break;
		while (!fail && data < hole) {
			ssize_t got = pread(fd, buf, (size_t)(hole - data) < chunk ?
					    (size_t)(hole - data) : chunk, data);

			if (got <= 0)
				fail = FAIL("settle %s: pread: %s", path,
					    got < 0 ? strerror(errno) : "short file");
			else
				data += got;
		}
	}
	if (!fail && data < 0 && errno != ENXIO)
		fail = FAIL("settle %s: SEEK_DATA: %s", path, strerror(errno));
	if (fd >= 0)
		close(fd);
	free(buf);
	return fail;
}

/* Make exactly hits[] resident in path and return the mincore vector that
 * shows it; checked, so that no case can pass vacuously. */
static const char *set_pattern(const char *path, const uint64_t *hits, size_t nhits,
			       unsigned char **vec, uint64_t *npages)
{
	uint64_t bad = 0;

	for (int attempt = 0; attempt < 5; attempt++) {
		const char *fail = settle(path);

		if (fail)
			return fail;
		pc_test_set_pattern(path, hits, nhits);
		*npages = pc_test_mincore(path, vec);
		for (bad = first_checked_page(); bad < *npages; bad++)
			if ((*vec)[bad] != in_set(bad, hits, nhits))
				break;
		if (bad == *npages)
			return NULL;
		free(*vec);
		*vec = NULL;
	}
	return FAIL("setup: page %llu of %s is not as the pattern wants after 5 tries",
		    (unsigned long long)bad, path);
}

/*
 * Make exactly hits[] resident in path (the whole file evicted first), then
 * probe pages[] from the highest to the lowest through a fresh
 * POSIX_FADV_RANDOM fd and compare every answer with the mincore vector
 * taken right before (0 at or past EOF).
 */
static const char *probe_vs_mincore(struct pc_prober *p, bool one_at_a_time, const char *path,
				    const uint64_t *hits, size_t nhits,
				    const uint64_t *pages_in, size_t n, struct outcome *out)
{
	unsigned char *before = NULL, *after = NULL;
	uint64_t *pages = malloc((n ? n : 1) * sizeof(*pages));
	uint8_t *resident = malloc(n ? n : 1);
	const char *fail = NULL;
	uint64_t npages = 0;
	ssize_t ret;
	int fd = -1;

	memset(out, 0, sizeof(*out));
	if (!pages || !resident)
		return FAIL("malloc");
	memcpy(pages, pages_in, n * sizeof(*pages));
	qsort(pages, n, sizeof(*pages), cmp_desc);
	memset(resident, 0xa5, n);

	fail = set_pattern(path, hits, nhits, &before, &npages);
	if (!fail) {
		fd = open_random(path);
		if (fd < 0)
			fail = FAIL("open %s: %s", path, strerror(errno));
	}
	if (!fail) {
		ret = pc_prober_probe(p, fd, pages, n, resident);
		if (ret != (ssize_t)n)
			fail = FAIL("pc_prober_probe returned %zd (%s), wanted %zu", ret,
				    ret < 0 ? strerror((int)-ret) : "short", n);
	}
	if (!fail && npages)
		pc_test_mincore(path, &after);
	for (size_t i = 0; i < n && !fail; i++) {
		int want = pages[i] < npages ? before[pages[i]] : 0;

		if (resident[i] > 1)
			fail = FAIL("page %llu (answer %zu of %zu) not answered: %d",
				    (unsigned long long)pages[i], i, n, resident[i]);
		else if (pages[i] >= npages && resident[i])
			fail = FAIL("page %llu is past EOF and answered 1",
				    (unsigned long long)pages[i]);
		else if (pages[i] >= npages)
			out->eof++;
		else if (want)
			/* reclaimed between mincore and the probe: a true miss */
			out->hits++, out->false_misses += !resident[i] && after[pages[i]];
		else if (resident[i] && !after[pages[i]])
			fail = FAIL("page %llu (answer %zu of %zu) answered 1, not resident "
				    "before nor after", (unsigned long long)pages[i], i, n);
		else
			out->misses++, out->false_hits += resident[i];
	}
	if (!fail && out->false_hits > false_hits_allowed(p, one_at_a_time, out->misses))
		fail = FAIL("%zu of %zu misses answered 1", out->false_hits, out->misses);
	if (!fail && out->false_misses > false_misses_allowed(out->hits))
		fail = FAIL("%zu of %zu hits answered 0", out->false_misses, out->hits);
	/*
	 * Destructive NOWAIT (6.12+): a miss starts reading that page, so a
	 * missed page may be resident now. Counted, not asserted: when that
	 * read finishes is not ours to say.
	 */
	for (size_t i = 0; i < n && !fail; i++)
		if (pages[i] < npages && !before[pages[i]] && after[pages[i]])
			out->misses_cached_after++;
	if (fd >= 0)
		close(fd);
	free(after);
	free(before);
	free(pages);
	free(resident);
	return fail;
}

static void note(const char *what, const struct outcome *o)
{
	printf("note: %s: %zu hits (%zu answered 0), %zu misses (%zu answered 1; %zu "
	       "resident after probing), %zu past EOF\n", what, o->hits, o->false_misses,
	       o->misses, o->false_hits, o->misses_cached_after, o->eof);
	fflush(stdout);
}

/* ---- the checks, shared by the io_uring tests and the preadv2 child ------ */

/* 2048 pages (8 MiB); one page in 64 resident. */
#define SPARSE_PAGES 2048
#define SPARSE_STEP 64

static const char *sparse_file(void)
{
	return pc_test_make_file("sparse-pattern", SPARSE_PAGES, 0644, -1, -1);
}

static size_t sparse_hits(uint64_t *hits)
{
	size_t n = 0;

	for (uint64_t pg = 3; pg < SPARSE_PAGES; pg += SPARSE_STEP)
		hits[n++] = pg;
	return n;
}

static const char *check_all_hits(struct pc_prober *p, const char *path)
{
	uint64_t hits[SPARSE_PAGES / SPARSE_STEP];
	size_t n = sparse_hits(hits);
	struct outcome o;
	const char *fail = probe_vs_mincore(p, false, path, hits, n, hits, n, &o);

	if (!fail && o.hits != n)
		fail = FAIL("%zu hits of %zu", o.hits, n);
	return fail;
}

static const char *check_all_misses(struct pc_prober *p, const char *path)
{
	uint64_t hits[SPARSE_PAGES / SPARSE_STEP], pages[SPARSE_PAGES / SPARSE_STEP];
	size_t n = sparse_hits(hits);
	struct outcome o;
	const char *fail;

	for (size_t i = 0; i < n; i++)
		pages[i] = hits[i] + SPARSE_STEP / 2;
	fail = probe_vs_mincore(p, false, path, hits, n, pages, n, &o);
	if (!fail && o.misses != n)
		fail = FAIL("%zu misses of %zu", o.misses, n);
	if (!fail)
		note("all misses", &o);
	return fail;
}

static const char *check_mixed(struct pc_prober *p, const char *path)
{
	uint64_t hits[SPARSE_PAGES / SPARSE_STEP], pages[3 * SPARSE_PAGES / SPARSE_STEP];
	size_t nh = sparse_hits(hits), n = 0;
	struct outcome o;
	const char *fail;

	for (size_t i = 0; i < nh; i++) {
		pages[n++] = hits[i];
		pages[n++] = hits[i] + SPARSE_STEP / 2;
		if (i % 2)
			pages[n++] = hits[i] + SPARSE_STEP / 4;
	}
	fail = probe_vs_mincore(p, false, path, hits, nh, pages, n, &o);
	if (!fail && (o.hits != nh || o.misses != n - nh))
		fail = FAIL("%zu hits and %zu misses, wanted %zu and %zu", o.hits, o.misses,
			    nh, n - nh);
	return fail;
}

/* 8 pages and 1 byte: page 8 holds one byte and is inside the file. */
static const char *check_past_eof(struct pc_prober *p)
{
	const char *path = pc_test_make_file("past-eof", 9, 0644, -1, -1);
	uint64_t hits[] = { 5, 8 };
	uint64_t pages[] = { 5, 6, 8, 9, 10, 1000, 1ULL << 40, (uint64_t)INT64_MAX / ps };
	struct outcome o;
	const char *fail;

	if (truncate(path, (off_t)(8 * ps + 1)) < 0)
		return FAIL("truncate: %s", strerror(errno));
	fail = probe_vs_mincore(p, false, path, hits, 2, pages, ARRAY_LEN(pages), &o);
	if (!fail && (o.hits != 2 || o.misses != 1 || o.eof != 5))
		fail = FAIL("%zu hits, %zu misses, %zu past EOF; wanted 2, 1, 5", o.hits,
			    o.misses, o.eof);
	return fail;
}

static const char *check_zero_pages(struct pc_prober *p, const char *path)
{
	uint64_t page = 0;
	uint8_t resident = 0xa5;
	int fd = open_random(path);
	ssize_t r1, r2, r3;

	r1 = pc_prober_probe(p, fd, NULL, 0, NULL);
	r2 = pc_prober_probe(p, fd, &page, 0, &resident);
	r3 = pc_prober_probe(p, -1, NULL, 0, NULL);
	close(fd);
	if (r1 != 0 || r2 != 0)
		return FAIL("n == 0 returned %zd and %zd", r1, r2);
	if (r3 != -EBADF)
		return FAIL("n == 0 with fd -1 returned %zd, wanted -EBADF", r3);
	if (resident != 0xa5)
		return FAIL("n == 0 wrote resident[0]");
	return NULL;
}

/* An fd that may not be probed must give its error; the prober still
 * answers the next, good probe. */
static const char *expect_error(struct pc_prober *p, const char *path, int fd,
				const char *what, ssize_t want)
{
	uint64_t pages[] = { 4, 5, 6, 7, 8, 9, 10, 11, 12, 13 };
	uint64_t hit = 9;
	uint8_t resident[ARRAY_LEN(pages)];
	struct outcome o;
	ssize_t ret = pc_prober_probe(p, fd, pages, ARRAY_LEN(pages), resident);
	const char *fail;

	if (ret != want)
		return FAIL("%s: returned %zd (%s), wanted %zd (%s)", what, ret,
			    ret < 0 ? strerror((int)-ret) : "answers", want,
			    strerror((int)-want));
	fail = probe_vs_mincore(p, false, path, &hit, 1, pages, ARRAY_LEN(pages), &o);
	if (fail) {
		char inner[sizeof(why)];

		/* FAIL writes why, which fail points into */
		memcpy(inner, fail, strnlen(fail, sizeof(inner) - 1));
		inner[strnlen(fail, sizeof(inner) - 1)] = '\0';
		return FAIL("after %s: %s", what, inner);
	}
	return NULL;
}

static const char *check_bad_fds(struct pc_prober *p, const char *path)
{
	const char *fail = NULL;
	int pipefd[2] = { -1, -1 }, sock[2] = { -1, -1 };
	int closed = open(path, O_RDONLY | O_CLOEXEC);
	int wronly = open(path, O_WRONLY | O_CLOEXEC);
	int opath = open(path, O_PATH | O_CLOEXEC);
	int dir = open(pc_test_dir(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC);

	if (closed < 0 || wronly < 0 || opath < 0 || dir < 0 || null < 0 ||
	    pipe2(pipefd, O_CLOEXEC | O_NONBLOCK) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sock) < 0)
		return FAIL("setup: %s", strerror(errno));
	close(closed);
	if (write(pipefd[1], "xxxxxxxxxx", 10) != 10 || write(sock[1], "xxxxxxxxxx", 10) != 10)
		fail = FAIL("setup: write: %s", strerror(errno));
	if (!fail)
		fail = expect_error(p, path, -1, "fd -1", -EBADF);
	if (!fail)
		fail = expect_error(p, path, closed, "closed fd", -EBADF);
	if (!fail)
		fail = expect_error(p, path, wronly, "O_WRONLY fd", -EBADF);
	if (!fail)
		fail = expect_error(p, path, opath, "O_PATH fd", -EBADF);
	if (!fail)
		fail = expect_error(p, path, dir, "directory", -EINVAL);
	/* with data waiting: a read would succeed, a "hit" that means nothing */
	if (!fail)
		fail = expect_error(p, path, pipefd[0], "pipe", -EINVAL);
	if (!fail)
		fail = expect_error(p, path, sock[0], "socket", -EINVAL);
	if (!fail)
		fail = expect_error(p, path, null, "/dev/null", -EINVAL);
	close(wronly);
	close(opath);
	close(dir);
	close(null);
	close(pipefd[0]);
	close(pipefd[1]);
	close(sock[0]);
	close(sock[1]);
	return fail;
}

static const char *check_tmpfs(struct pc_prober *p, const char *path)
{
	const char *fail = NULL;
	char buf[4096];
	int fd = memfd_create("pc-test-prober", MFD_CLOEXEC);

	memset(buf, 'x', sizeof(buf));
	if (fd < 0)
		return FAIL("memfd_create: %s", strerror(errno));
	for (int i = 0; i < 16 && !fail; i++)
		if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
			fail = FAIL("write memfd: %s", strerror(errno));
	if (!fail)
		fail = expect_error(p, path, fd, "memfd (tmpfs)", -EOPNOTSUPP);
	close(fd);
	return fail;
}

/*
 * Sparse 6 GiB file with 16 pages written at 5 GiB, two of them resident.
 * Pages in holes are probed apart: on a destructive kernel their miss fills
 * the hole at once and comes back as a hit.
 */
static const char *check_beyond_4gib(struct pc_prober *p)
{
	const char *path = pc_test_path("six-gib");
	const uint64_t at5 = 5 * GIB / ps, end = 6 * GIB / ps;
	uint64_t hits[] = { at5, at5 + 8 };
	uint64_t pages[18], holes[] = { 0, 4 * GIB / ps - 1, 4 * GIB / ps, at5 - 1, end - 1 };
	uint8_t hole_answers[ARRAY_LEN(holes)];
	size_t n = 0, hole_hits = 0;
	char *buf = malloc(16 * ps);
	unsigned char *after = NULL;
	const char *fail = NULL;
	struct outcome o;
	int fd, mode = PC_NOWAIT_UNKNOWN;

	if (!buf)
		return FAIL("malloc");
	memset(buf, 'z', 16 * ps);
	unlink(path);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || ftruncate(fd, (off_t)(6 * GIB)) < 0 ||
	    pwrite(fd, buf, 16 * ps, (off_t)(5 * GIB)) != (ssize_t)(16 * ps) || fsync(fd) < 0)
		fail = FAIL("setup %s: %s", path, strerror(errno));
	if (fd >= 0)
		close(fd);
	free(buf);
	for (uint64_t i = 0; i < 16; i++)
		pages[n++] = at5 + i;
	pages[n++] = end;
	pages[n++] = end + 1;
	if (!fail)
		fail = probe_vs_mincore(p, false, path, hits, 2, pages, n, &o);
	if (!fail && (o.hits != 2 || o.misses != 14 || o.eof != 2))
		fail = FAIL("%zu hits, %zu misses, %zu past EOF; wanted 2, 14, 2", o.hits,
			    o.misses, o.eof);

	/* the holes: evicted (mincore says so), probed high to low */
	if (!fail) {
		unsigned char *vec = NULL;
		uint64_t npages;

		fail = set_pattern(path, NULL, 0, &vec, &npages);
		free(vec);
	}
	if (!fail) {
		int dirfd = open(pc_test_dir(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		ssize_t ret;

		mode = pc_detect_nowait(dirfd);
		close(dirfd);
		qsort(holes, ARRAY_LEN(holes), sizeof(holes[0]), cmp_desc);
		fd = open_random(path);
		ret = pc_prober_probe(p, fd, holes, ARRAY_LEN(holes), hole_answers);
		close(fd);
		if (ret != (ssize_t)ARRAY_LEN(holes))
			fail = FAIL("holes: probe returned %zd", ret);
	}
	if (!fail)
		pc_test_mincore(path, &after);
	for (size_t i = 0; i < ARRAY_LEN(holes) && !fail; i++) {
		hole_hits += hole_answers[i];
		if (hole_answers[i] > 1)
			fail = FAIL("hole page %llu: answer %d", (unsigned long long)holes[i],
				    hole_answers[i]);
		else if (hole_answers[i] && mode != PC_NOWAIT_DESTRUCTIVE)
			fail = FAIL("hole page %llu answered 1 on a %s kernel",
				    (unsigned long long)holes[i], pc_nowait_mode_name(mode));
		else if (hole_answers[i] && !after[holes[i]])
			fail = FAIL("hole page %llu answered 1 and is not resident",
				    (unsigned long long)holes[i]);
	}
	if (!fail) {
		printf("note: NOWAIT is %s here: %zu of %zu evicted hole pages answered 1\n",
		       pc_nowait_mode_name(mode), hole_hits, ARRAY_LEN(holes));
		fflush(stdout);
	}
	free(after);
	unlink(path);
	return fail;
}

/* ---- io_uring, the default here ------------------------------------------ */

static struct pc_prober *new_prober(unsigned int depth)
{
	struct pc_prober *p = NULL;

	ck_assert_int_eq(pc_prober_new(depth, &p), 0);
	ck_assert_ptr_nonnull(p);
	return p;
}

START_TEST(source_is_io_uring_when_detected)
{
	struct pc_prober *p = new_prober(0);

	ck_assert_int_eq(pc_prober_source(p), pc_detect_io_uring() == 1 ?
			 PC_SOURCE_IO_URING : PC_SOURCE_PREADV2);
	ck_assert_int_eq(pc_prober_source(NULL), -EINVAL);
	pc_prober_free(p);
	pc_prober_free(NULL);
}
END_TEST

START_TEST(all_hits_answer_1)
{
	struct pc_prober *p = new_prober(64);

	CHECK(check_all_hits(p, sparse_file()));
	pc_prober_free(p);
}
END_TEST

START_TEST(all_misses_answer_0)
{
	struct pc_prober *p = new_prober(64);

	CHECK(check_all_misses(p, sparse_file()));
	pc_prober_free(p);
}
END_TEST

START_TEST(mixed_pages_match_mincore)
{
	struct pc_prober *p = new_prober(64);

	CHECK(check_mixed(p, sparse_file()));
	pc_prober_free(p);
}
END_TEST

START_TEST(pages_past_eof_answer_0)
{
	struct pc_prober *p = new_prober(4);

	CHECK(check_past_eof(p));
	pc_prober_free(p);
}
END_TEST

/* 10000 pages of a 40 MiB file, one page in 5 resident, at each depth. */
static const unsigned int depths[] = { 1, 2, 64, 4096 };

START_TEST(more_pages_than_depth_match_mincore)
{
	const uint64_t npages = 40 * 1024 * 1024 / ps, n = 10000;
	const char *path = pc_test_make_file("forty-mib", npages, 0644, -1, -1);
	struct pc_prober *p = new_prober(depths[_i]);
	uint64_t *hits = malloc(npages * sizeof(*hits)), *pages = malloc(n * sizeof(*pages));
	size_t nh = 0;
	struct outcome o;
	char what[64];

	ck_assert_ptr_nonnull(hits);
	ck_assert_ptr_nonnull(pages);
	for (uint64_t pg = 0; pg < npages; pg += 5)
		hits[nh++] = pg;
	for (uint64_t i = 0; i < n; i++)
		pages[i] = npages - n + i;
	CHECK(probe_vs_mincore(p, depths[_i] <= 2, path, hits, nh, pages, n, &o));
	ck_assert_uint_eq(o.hits, n / 5);
	ck_assert_uint_eq(o.misses, n - n / 5);
	snprintf(what, sizeof(what), "depth %u, %llu pages", depths[_i], (unsigned long long)n);
	note(what, &o);
	free(hits);
	free(pages);
	pc_prober_free(p);
}
END_TEST

START_TEST(zero_pages_answer_nothing)
{
	struct pc_prober *p = new_prober(8);

	CHECK(check_zero_pages(p, sparse_file()));
	pc_prober_free(p);
}
END_TEST

START_TEST(null_arguments_are_einval)
{
	const char *path = sparse_file();
	struct pc_prober *p = new_prober(8);
	uint64_t page = 0;
	uint8_t resident;
	int fd = open_random(path);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pc_prober_new(8, NULL), -EINVAL);
	ck_assert_int_eq(pc_prober_probe(NULL, fd, &page, 1, &resident), -EINVAL);
	ck_assert_int_eq(pc_prober_probe(p, fd, NULL, 1, &resident), -EINVAL);
	ck_assert_int_eq(pc_prober_probe(p, fd, &page, 1, NULL), -EINVAL);
	ck_assert_int_eq(pc_prober_probe(p, fd, &page, 1, &resident), 1);
	close(fd);
	pc_prober_free(p);
}
END_TEST

START_TEST(queue_depth_bounds)
{
	struct pc_prober *p = (struct pc_prober *)&p, *keep = p;

	ck_assert_int_eq(pc_prober_new(5000, &p), -EINVAL);
	ck_assert_int_eq(pc_prober_new(4097, &p), -EINVAL);
	ck_assert_int_eq(pc_prober_new(UINT32_MAX, &p), -EINVAL);
	ck_assert_ptr_eq(p, keep); /* untouched on failure */
	p = new_prober(4096);
	pc_prober_free(p);
	p = new_prober(0); /* the default */
	CHECK(check_mixed(p, sparse_file()));
	pc_prober_free(p);
}
END_TEST

START_TEST(offset_beyond_off_t_is_einval)
{
	const char *path = sparse_file();
	struct pc_prober *p = new_prober(8);
	uint64_t pages[] = { 0, (uint64_t)INT64_MAX / ps + 1 };
	uint8_t resident[2];
	int fd = open_random(path);

	ck_assert_int_eq(pc_prober_probe(p, fd, pages, 2, resident), -EINVAL);
	pages[1] = UINT64_MAX;
	ck_assert_int_eq(pc_prober_probe(p, fd, pages, 2, resident), -EINVAL);
	close(fd);
	pc_prober_free(p);
}
END_TEST

START_TEST(tmpfs_is_eopnotsupp_and_ring_stays_usable)
{
	struct pc_prober *p = new_prober(4);

	CHECK(check_tmpfs(p, sparse_file()));
	pc_prober_free(p);
}
END_TEST

START_TEST(bad_fds_are_errors_and_ring_stays_usable)
{
	struct pc_prober *p = new_prober(4);

	CHECK(check_bad_fds(p, sparse_file()));
	pc_prober_free(p);
}
END_TEST

START_TEST(file_beyond_4gib_is_seen)
{
	struct pc_prober *p = new_prober(4);

	CHECK(check_beyond_4gib(p));
	pc_prober_free(p);
}
END_TEST

/* Readahead goes forward: high to low keeps each answer true even on an fd
 * without POSIX_FADV_RANDOM, where a miss reads in a window after it. */
START_TEST(high_to_low_stays_true_on_a_readahead_fd)
{
	const char *path = sparse_file();
	struct pc_prober *p = new_prober(64);
	uint64_t hits[SPARSE_PAGES / SPARSE_STEP], pages[SPARSE_PAGES];
	size_t nh = sparse_hits(hits), false_hits = 0;
	unsigned char *before;
	uint8_t *resident = malloc(SPARSE_PAGES);
	uint64_t npages;
	int fd;

	ck_assert_ptr_nonnull(resident);
	for (uint64_t i = 0; i < SPARSE_PAGES; i++)
		pages[i] = SPARSE_PAGES - 1 - i;
	CHECK(set_pattern(path, hits, nh, &before, &npages));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(posix_fadvise(fd, 0, 0, POSIX_FADV_NORMAL), 0);
	ck_assert_int_eq(pc_prober_probe(p, fd, pages, SPARSE_PAGES, resident), SPARSE_PAGES);
	for (uint64_t i = 0; i < SPARSE_PAGES; i++) {
		if (before[pages[i]])
			ck_assert_msg(resident[i] == 1, "page %llu: resident, answered %d",
				      (unsigned long long)pages[i], resident[i]);
		else
			false_hits += resident[i];
	}
	/* a readahead window reaching backwards would turn whole runs into hits */
	ck_assert_uint_le(false_hits, false_hits_allowed(p, false, SPARSE_PAGES - nh));
	close(fd);
	free(before);
	free(resident);
	pc_prober_free(p);
}
END_TEST

/* The filesystem holding the scratch dir, as a block device: accepted, and
 * answers like mincore. */
START_TEST(block_device_is_probed)
{
	struct stat st;
	char uevent[64], line[128], dev[160] = "";
	FILE *f;
	uint64_t pages[] = { 0, 1, 2 };
	uint8_t resident[3];
	unsigned char vec[3], after[3];
	void *map;
	struct pc_prober *p;
	int fd;

	ck_assert_int_eq(stat(pc_test_dir(), &st), 0);
	snprintf(uevent, sizeof(uevent), "/sys/dev/block/%u:%u/uevent", major(st.st_dev),
		 minor(st.st_dev));
	f = fopen(uevent, "re");
	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, "DEVNAME=", 8) == 0)
			snprintf(dev, sizeof(dev), "/dev/%.*s", (int)strcspn(line + 8, "\n"),
				 line + 8);
	if (f)
		fclose(f);
	fd = dev[0] ? open(dev, O_RDONLY | O_CLOEXEC) : -1;
	if (fd < 0) {
		pc_test_skip("block_device_is_probed", dev[0] ? strerror(errno) : "no device for the scratch dir");
		return;
	}
	ck_assert_int_eq(posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM), 0);
	map = mmap(NULL, 3 * ps, PROT_READ, MAP_SHARED, fd, 0);
	ck_assert_ptr_ne(map, MAP_FAILED);
	p = new_prober(4);
	/* high to low, as always; vec right before */
	qsort(pages, 3, sizeof(pages[0]), cmp_desc);
	ck_assert_int_eq(mincore(map, 3 * ps, vec), 0);
	ck_assert_int_eq(pc_prober_probe(p, fd, pages, 3, resident), 3);
	ck_assert_int_eq(mincore(map, 3 * ps, after), 0);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_le(resident[i], 1);
		/* a miss may come back a hit, but only by reading the page in */
		ck_assert_int_ge(resident[i], vec[pages[i]] & 1);
		ck_assert_int_le(resident[i], after[pages[i]] & 1);
	}
	munmap(map, 3 * ps);
	close(fd);
	pc_prober_free(p);
}
END_TEST

/* ---- forked children with seccomp filters ------------------------------- */

/* Run fn(arg) in a forked child, which ends with _exit (no Check or pc-test
 * exit handlers run twice). NULL or the child's reason. */
static const char *in_child(const char *(*fn)(void *arg), void *arg, unsigned int timeout)
{
	static char msg[sizeof(why)];
	int pipefd[2], status;
	ssize_t got = 0, r;
	pid_t pid;

	ck_assert_int_eq(pipe2(pipefd, O_CLOEXEC), 0);
	fflush(NULL);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		const char *m;

		close(pipefd[0]);
		signal(SIGALRM, SIG_DFL); /* Check's handler would kill the whole test */
		alarm(pc_test_under_valgrind() ? 20 * timeout : timeout); /* a hang fails */
		m = fn(arg);
		if (m && write(pipefd[1], m, strlen(m)) < 0)
			_exit(2);
		_exit(m ? 1 : 0);
	}
	close(pipefd[1]);
	while ((r = read(pipefd[0], msg + got, sizeof(msg) - 1 - (size_t)got)) > 0)
		got += r;
	msg[got] = '\0';
	close(pipefd[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	if (WIFSIGNALED(status)) {
		snprintf(msg, sizeof(msg), "child killed by signal %d%s", WTERMSIG(status),
			 WTERMSIG(status) == SIGALRM ? " (hung)" : "");
		return msg;
	}
	if (WEXITSTATUS(status) != 0)
		return got ? msg : "child failed without a reason";
	return NULL;
}

/* Install a filter: syscall nr -> action, everything else allowed. Returns
 * the listener fd for SECCOMP_RET_USER_NOTIF, 0, or -errno. The child runs
 * native code only, so the syscall number alone is enough. */
static int install_filter(long nr, unsigned int action)
{
	struct sock_filter insns[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned int)nr, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, action),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = ARRAY_LEN(insns), .filter = insns };
	unsigned long flags = action == SECCOMP_RET_USER_NOTIF ?
			      SECCOMP_FILTER_FLAG_NEW_LISTENER : 0;
	long ret;

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	if (!flags) /* prctl: valgrind 3.19 does not know seccomp(2) */
		ret = prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0);
	else
		ret = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog);
	return ret < 0 ? -errno : (int)ret;
}

struct fallback_case {
	const char *sparse;
	int filter_errno;
};

static const char *fallback_child(void *arg)
{
	struct fallback_case *c = arg;
	struct pc_prober *p = NULL;
	const char *fail = NULL;
	int ret;

	ret = install_filter(SYS_io_uring_setup, SECCOMP_RET_ERRNO | (unsigned int)c->filter_errno);
	if (ret < 0)
		return FAIL("seccomp: %s", strerror(-ret));
	/* the filter works: io_uring_setup fails as asked */
	if (syscall(SYS_io_uring_setup, 4, NULL) != -1 || errno != c->filter_errno)
		return FAIL("io_uring_setup was not refused with %s", strerror(c->filter_errno));
	ret = pc_prober_new(4, &p);
	if (ret < 0)
		return FAIL("pc_prober_new: %s", strerror(-ret));
	if (pc_prober_source(p) != PC_SOURCE_PREADV2)
		fail = FAIL("source %s, wanted preadv2", pc_source_name(pc_prober_source(p)));
	if (!fail)
		fail = check_all_hits(p, c->sparse);
	if (!fail)
		fail = check_all_misses(p, c->sparse);
	if (!fail)
		fail = check_mixed(p, c->sparse);
	if (!fail)
		fail = check_past_eof(p);
	if (!fail)
		fail = check_zero_pages(p, c->sparse);
	if (!fail)
		fail = check_tmpfs(p, c->sparse);
	if (!fail)
		fail = check_bad_fds(p, c->sparse);
	if (!fail)
		fail = check_beyond_4gib(p);
	pc_prober_free(p);
	return fail;
}

static const int fallback_errnos[] = { ENOSYS, EPERM };

START_TEST(preadv2_fallback_when_io_uring_is_refused)
{
	struct fallback_case c = { .filter_errno = fallback_errnos[_i] };

	c.sparse = sparse_file();
	CHECK(in_child(fallback_child, &c, 120));
}
END_TEST

/*
 * io_uring_enter failures on demand: a supervisor thread (started before
 * the filter, so it is not filtered itself) answers each io_uring_enter of
 * the child. Calls fail_from .. fail_from + fail_count - 1 (counting from 1)
 * fail with -error; the rest run.
 */
struct enter_plan {
	/*
	 * 16 pages all resident; 16 pages evicted; 0 bytes, where every page
	 * answers 0 (past EOF: no race with readahead, unlike an evicted page)
	 */
	const char *cached, *evicted, *empty;
	int fail_from, fail_count, error;
	ssize_t first_want;             /* what the probe of cached returns */
	int extra_error_calls;          /* probes of empty expected to fail first */
	int unsent_stay_unsent;         /* the failing probe is of evicted, fd kept open */
};

static struct {
	int ready[2];
	int listener;
	int calls;
	const struct enter_plan *plan;
} sup;

static void *supervise(void *unused)
{
	struct seccomp_notif req;
	struct seccomp_notif_resp resp;

	(void)unused;
	if (read(sup.ready[0], &sup.listener, sizeof(sup.listener)) != sizeof(sup.listener))
		return NULL;
	for (;;) {
		int n;

		memset(&req, 0, sizeof(req));
		if (ioctl(sup.listener, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0) {
			if (errno == EINTR || errno == ENOENT)
				continue;
			return NULL;
		}
		n = ++sup.calls;
		memset(&resp, 0, sizeof(resp));
		resp.id = req.id;
		if (n >= sup.plan->fail_from &&
		    (sup.plan->fail_count < 0 || n < sup.plan->fail_from + sup.plan->fail_count))
			resp.error = -sup.plan->error;
		else
			resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
		ioctl(sup.listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
	}
}

static const char *probe_all(struct pc_prober *p, const char *path, int want_value,
			     ssize_t want_ret)
{
	uint64_t pages[16];
	uint8_t resident[16];
	int fd = open_random(path);
	ssize_t ret;

	if (fd < 0)
		return FAIL("open %s: %s", path, strerror(errno));
	for (int i = 0; i < 16; i++)
		pages[i] = 15 - (uint64_t)i;
	memset(resident, 0xa5, sizeof(resident));
	/* fd stays open (the child exits soon): a read sent late, on behalf of
	 * a call that has returned, still finds its file and answers 1 */
	ret = pc_prober_probe(p, fd, pages, 16, resident);
	if (ret != want_ret)
		return FAIL("%s: probe returned %zd (%s), wanted %zd", path, ret,
			    ret < 0 ? strerror((int)-ret) : "answers", want_ret);
	for (int i = 0; ret > 0 && i < 16; i++)
		if (resident[i] != want_value)
			return FAIL("%s: page %d answered %d, wanted %d (a stale answer?)",
				    path, (int)pages[i], resident[i], want_value);
	return NULL;
}

/*
 * A probe of the evicted file fails at its second io_uring_enter, with the
 * reads of pages 11 and 10 queued but not sent, and its fd stays open. The
 * next call must not send them: pages 0..11 of that file stay evicted
 * (a NOWAIT miss reads its page in here, within milliseconds).
 */
static const char *unsent_reads_stay_unsent(struct pc_prober *p, const struct enter_plan *plan)
{
	uint64_t pages[16];
	uint8_t resident[16];
	unsigned char vec[16];
	const char *fail = NULL;
	void *map = MAP_FAILED;
	int fd = open_random(plan->evicted);
	ssize_t ret;

	for (int i = 0; i < 16; i++)
		pages[i] = 15 - (uint64_t)i;
	if (fd >= 0)
		map = mmap(NULL, 16 * ps, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		return FAIL("setup %s: %s", plan->evicted, strerror(errno));
	ret = pc_prober_probe(p, fd, pages, 16, resident);
	if (ret != plan->first_want)
		fail = FAIL("probe of the evicted file returned %zd, wanted %zd", ret,
			    plan->first_want);
	if (!fail)
		fail = probe_all(p, plan->cached, 1, 16);
	for (int t = 0; t < 50 && !fail; t++) {
		if (mincore(map, 16 * ps, vec) < 0)
			fail = FAIL("mincore: %s", strerror(errno));
		for (int pg = 0; pg < 12 && !fail; pg++)
			if (vec[pg] & 1)
				fail = FAIL("page %d of the evicted file was read after the "
					    "call that listed it had failed", pg);
		usleep(10 * 1000);
	}
	munmap(map, 16 * ps);
	close(fd);
	pc_prober_free(p);
	return fail;
}

static const char *enter_failure_child(void *arg)
{
	const struct enter_plan *plan = arg;
	struct pc_prober *p = NULL;
	const char *fail;
	pthread_t t;
	int ret;

	sup.plan = plan;
	if (pipe(sup.ready) < 0 || pthread_create(&t, NULL, supervise, NULL) != 0)
		return FAIL("setup: %s", strerror(errno));
	/* depth 2: a 16-page probe takes 8 io_uring_enter calls */
	ret = pc_prober_new(2, &p);
	if (ret < 0 || pc_prober_source(p) != PC_SOURCE_IO_URING)
		return FAIL("no io_uring prober: %d", ret);
	ret = install_filter(SYS_io_uring_enter, SECCOMP_RET_USER_NOTIF);
	if (ret < 0)
		return FAIL("seccomp user notification: %s", strerror(-ret));
	if (write(sup.ready[1], &ret, sizeof(ret)) != sizeof(ret))
		return FAIL("setup: %s", strerror(errno));

	if (plan->unsent_stay_unsent)
		return unsent_reads_stay_unsent(p, plan);
	fail = probe_all(p, plan->cached, 1, plan->first_want);
	for (int i = 0; !fail && i < plan->extra_error_calls; i++)
		fail = probe_all(p, plan->empty, 0, -plan->error);
	/* the ring is usable, and nothing left over answers for this call */
	if (!fail && plan->fail_count >= 0)
		fail = probe_all(p, plan->empty, 0, 16);
	if (!fail && plan->fail_count >= 0)
		fail = probe_all(p, plan->cached, 1, 16);
	pc_prober_free(p);
	return fail;
}

static const struct enter_plan enter_plans[] = {
	/* transient: retried, the probe succeeds */
	{ .fail_from = 3, .fail_count = 1, .error = EAGAIN, .first_want = 16 },
	{ .fail_from = 3, .fail_count = 5, .error = EINTR, .first_want = 16 },
	{ .fail_from = 3, .fail_count = 3, .error = EBUSY, .first_want = 16 },
	/* hard failure mid-batch: an error; the next call drains and works */
	{ .fail_from = 3, .fail_count = 1, .error = ENOMEM, .first_want = -ENOMEM },
	/* ... and the reads it could not send are never sent */
	{ .fail_from = 3, .fail_count = 1, .error = ENOMEM, .first_want = -ENOMEM,
	  .unsent_stay_unsent = 1 },
	/* ... and when that drain fails too, the call after it works */
	{ .fail_from = 3, .fail_count = 2, .error = ENOMEM, .first_want = -ENOMEM,
	  .extra_error_calls = 1 },
	/* for good: an error, not a hang */
	{ .fail_from = 3, .fail_count = -1, .error = EAGAIN, .first_want = -EAGAIN },
	{ .fail_from = 1, .fail_count = -1, .error = EFAULT, .first_want = -EFAULT },
};

START_TEST(io_uring_enter_failures_leave_the_ring_usable)
{
	struct enter_plan plan = enter_plans[_i];
	uint64_t all[16];

	if (pc_detect_io_uring() != 1) {
		pc_test_skip("io_uring_enter_failures", "io_uring unavailable");
		return;
	}
	if (pc_test_under_valgrind()) {
		pc_test_skip("io_uring_enter_failures", "valgrind 3.19 does not know seccomp(2)");
		return;
	}
	for (int i = 0; i < 16; i++)
		all[i] = (uint64_t)i;
	plan.cached = pc_test_make_file("cached", 16, 0644, -1, -1);
	plan.evicted = pc_test_make_file("evicted", 16, 0644, -1, -1);
	plan.empty = pc_test_make_file("empty", 0, 0644, -1, -1);
	pc_test_set_pattern(plan.cached, all, 16);
	pc_test_set_pattern(plan.evicted, NULL, 0);
	CHECK(in_child(enter_failure_child, &plan, 60));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("prober");
	TCase *tc = tcase_create("prober");
	SRunner *sr;
	int failed;

	ps = (uint64_t)sysconf(_SC_PAGESIZE);
	pc_test_dir(); /* exits 77 on tmpfs; forked tests share it */
	tcase_add_test(tc, source_is_io_uring_when_detected);
	tcase_add_test(tc, all_hits_answer_1);
	tcase_add_test(tc, all_misses_answer_0);
	tcase_add_test(tc, mixed_pages_match_mincore);
	tcase_add_test(tc, pages_past_eof_answer_0);
	tcase_add_loop_test(tc, more_pages_than_depth_match_mincore, 0, ARRAY_LEN(depths));
	tcase_add_test(tc, zero_pages_answer_nothing);
	tcase_add_test(tc, null_arguments_are_einval);
	tcase_add_test(tc, queue_depth_bounds);
	tcase_add_test(tc, offset_beyond_off_t_is_einval);
	tcase_add_test(tc, tmpfs_is_eopnotsupp_and_ring_stays_usable);
	tcase_add_test(tc, bad_fds_are_errors_and_ring_stays_usable);
	tcase_add_test(tc, file_beyond_4gib_is_seen);
	tcase_add_test(tc, high_to_low_stays_true_on_a_readahead_fd);
	tcase_add_test(tc, block_device_is_probed);
	tcase_add_loop_test(tc, preadv2_fallback_when_io_uring_is_refused, 0,
			    ARRAY_LEN(fallback_errnos));
	tcase_add_loop_test(tc, io_uring_enter_failures_leave_the_ring_usable, 0,
			    ARRAY_LEN(enter_plans));
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	pc_test_cases_dir(); /* a failed case leaves no directory behind */
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
