/* SPDX-License-Identifier: MIT */
/*
 * pc_cachestat(): counts checked against mincore (as root, mincore tells the
 * truth) on a file with a known residency pattern, the kernel's permission
 * gate (6.14+: writers, owners, CAP_FOWNER), and the argument errors.
 * Under valgrind cachestat is ENOSYS: the kernel-specific asserts turn into
 * "returns -ENOSYS cleanly".
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pagecache/pagecache.h"
#include "pc-private.h"
#include "pc-test.h"

#define SETTLE_MS 5000 /* cachestat counts pages still being read */
#define PATTERN_NPAGES 1024

static const uint64_t pattern[] = { 0, 3, 4, 5, 100, 257, 600, 1000, 1023 };

static long ps(void)
{
	return sysconf(_SC_PAGESIZE);
}

/* Under valgrind (ENOSYS) the kernel's answers cannot be checked: assert the
 * clean -ENOSYS instead and report the skip. Returns 1 when skipped. */
static int skip_under_valgrind(const char *name)
{
	struct pc_cachestat cs;
	int fd;

	if (!pc_test_under_valgrind())
		return 0;
	fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	memset(&cs, 0xa5, sizeof(cs));
	ck_assert_int_eq(pc_cachestat(fd, 0, 0, &cs), -ENOSYS);
	close(fd);
	pc_test_skip(name, "valgrind does not know cachestat (ENOSYS asserted instead)");
	return 1;
}

static uint64_t count_resident(const unsigned char *vec, uint64_t npages, uint64_t first,
			       uint64_t last)
{
	uint64_t n = 0;

	for (uint64_t i = first; i <= last && i < npages; i++)
		n += vec[i] & 1;
	return n;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* A byte range and the page range cachestat covers for it. */
struct range {
	uint64_t off, len;
};

static void range_pages(struct range r, uint64_t npages, uint64_t *first, uint64_t *last)
{
	*first = r.off / (uint64_t)ps();
	*last = r.len ? (r.off + r.len - 1) / (uint64_t)ps() : npages - 1;
}

START_TEST(counts_match_mincore)
{
	const uint64_t P = (uint64_t)ps();
	const struct range ranges[] = {
		{ 0, 0 },                 /* length 0: to EOF */
		{ 500 * P, 0 },           /* to EOF from the middle */
		{ 0, P },                 /* page 0 alone */
		{ 0, 3 * P },
		{ P, 2 * P },             /* between resident pages */
		{ 3 * P, 3 * P },         /* a run of three */
		{ 99 * P, 3 * P },
		{ 100 * P + 17, P },      /* unaligned: pages 100 and 101 */
		{ 256 * P, 344 * P },     /* 257 in, 600 just outside */
		{ 600 * P, 424 * P },
		{ 1000 * P, 1ULL << 40 }, /* past EOF */
	};
	const char *f = pc_test_make_file("pattern", PATTERN_NPAGES, 0644, 0, 0);
	struct pc_cachestat cs[PC_ARRAY_SIZE(ranges)];
	unsigned char *vec = NULL, *again = NULL;
	uint64_t npages = 0, resident;
	int fd, settled = 0;

	if (skip_under_valgrind("cachestat counts vs mincore"))
		return;
	fd = open(f, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	pc_test_set_pattern(f, pattern, PC_ARRAY_SIZE(pattern));
	/* reads may still be in flight: poll until both agree on the whole
	 * file, then take every range between two identical mincore views */
	for (int waited = 0; waited <= SETTLE_MS && !settled; waited += 10) {
		free(vec);
		free(again);
		npages = pc_test_mincore(f, &vec);
		for (size_t i = 0; i < PC_ARRAY_SIZE(ranges); i++)
			ck_assert_int_eq(pc_cachestat(fd, ranges[i].off, ranges[i].len, &cs[i]), 0);
		pc_test_mincore(f, &again);
		settled = memcmp(vec, again, npages) == 0 &&
			  cs[0].cache == count_resident(vec, npages, 0, npages - 1);
		if (!settled)
			sleep_ms(10);
	}
	ck_assert_msg(settled, "cachestat and mincore did not agree within %d ms", SETTLE_MS);
	ck_assert_uint_eq(npages, PATTERN_NPAGES);
	/* the pattern is there and the file is not all resident, so the
	 * comparison below can tell the two apart */
	for (size_t i = 0; i < PC_ARRAY_SIZE(pattern); i++)
		ck_assert_msg(vec[pattern[i]] & 1, "pattern page %llu not resident",
			      (unsigned long long)pattern[i]);
	resident = count_resident(vec, npages, 0, npages - 1);
	ck_assert_uint_lt(resident, npages / 2);
	for (size_t i = 0; i < PC_ARRAY_SIZE(ranges); i++) {
		uint64_t first, last, expect;

		range_pages(ranges[i], npages, &first, &last);
		expect = count_resident(vec, npages, first, last);
		ck_assert_msg(cs[i].cache == expect,
			      "range %zu (off %llu len %llu): cachestat %llu, mincore %llu", i,
			      (unsigned long long)ranges[i].off, (unsigned long long)ranges[i].len,
			      (unsigned long long)cs[i].cache, (unsigned long long)expect);
		ck_assert_uint_eq(cs[i].dirty, 0);
		ck_assert_uint_eq(cs[i].writeback, 0);
	}
	free(vec);
	free(again);
	close(fd);
}
END_TEST

START_TEST(past_eof_counts_nothing)
{
	const char *f = pc_test_make_file("short", 4, 0644, 0, 0);
	struct pc_cachestat cs;
	int fd = open(f, O_RDONLY | O_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	if (skip_under_valgrind("cachestat past EOF")) {
		close(fd);
		return;
	}
	ck_assert_int_eq(pc_cachestat(fd, 16 * (uint64_t)ps(), 0, &cs), 0);
	ck_assert_uint_eq(cs.cache, 0);
	ck_assert_uint_eq(cs.dirty, 0);
	close(fd);
}
END_TEST

START_TEST(dirty_pages_counted_until_fsync)
{
	const uint64_t P = (uint64_t)ps();
	const char *f = pc_test_make_file("dirty", 64, 0644, 0, 0);
	struct pc_cachestat cs, whole;
	char *buf = malloc(2 * P);
	int fd = open(f, O_RDWR | O_CLOEXEC);

	ck_assert_ptr_nonnull(buf);
	ck_assert_int_ge(fd, 0);
	if (skip_under_valgrind("cachestat dirty pages")) {
		free(buf);
		close(fd);
		return;
	}
	pc_test_set_pattern(f, NULL, 0); /* nothing cached, nothing dirty */
	memset(buf, 'D', 2 * P);
	ck_assert_int_eq(pwrite(fd, buf, 2 * P, (off_t)(10 * P)), (ssize_t)(2 * P));
	ck_assert_int_eq(pc_cachestat(fd, 10 * P, 2 * P, &cs), 0);
	ck_assert_int_eq(pc_cachestat(fd, 0, 0, &whole), 0);
	/* writeback may have started on its own: dirty moves to writeback */
	ck_assert_uint_eq(cs.cache, 2);
	ck_assert_uint_eq(cs.dirty + cs.writeback, 2);
	ck_assert_uint_ge(whole.dirty + whole.writeback, 2);
	ck_assert_int_eq(fsync(fd), 0);
	ck_assert_int_eq(pc_cachestat(fd, 10 * P, 2 * P, &cs), 0);
	ck_assert_uint_eq(cs.cache, 2);
	ck_assert_uint_eq(cs.dirty, 0);
	ck_assert_uint_eq(cs.writeback, 0);
	free(buf);
	close(fd);
}
END_TEST

/* ---- the permission gate (6.14+) ------------------------------------------- */

static int nobody_cachestat_path(void *arg, void *buf, size_t bufsize)
{
	struct pc_cachestat cs;
	int fd = open(arg, O_RDONLY | O_CLOEXEC), ret;

	if (fd < 0)
		return -1000 + errno; /* never a cachestat answer */
	ret = pc_cachestat(fd, 0, 0, &cs);
	close(fd);
	return ret;
}

static int nobody_cachestat_fd(void *arg, void *buf, size_t bufsize)
{
	struct pc_cachestat cs;

	return pc_cachestat(*(int *)arg, 0, 0, &cs);
}

START_TEST(other_user_0644_is_eperm)
{
	const char *f = pc_test_make_file("cs-root-0644", 4, 0644, 0, 0);
	struct pc_cachestat cs;
	int fd;

	if (skip_under_valgrind("cachestat EPERM as 65534"))
		return;
	ck_assert_int_eq(pc_test_as_nobody(nobody_cachestat_path, (void *)f, NULL, 0), -EPERM);
	fd = open(f, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pc_cachestat(fd, 0, 0, &cs), 0); /* root: allowed */
	close(fd);
}
END_TEST

START_TEST(owner_and_write_permission_allowed)
{
	const char *own = pc_test_make_file("cs-owned-0444", 4, 0444, PC_TEST_NOBODY,
					    PC_TEST_NOBODY);
	const char *writable = pc_test_make_file("cs-root-0666", 4, 0666, 0, 0);

	if (skip_under_valgrind("cachestat owner / write permission"))
		return;
	ck_assert_int_eq(pc_test_as_nobody(nobody_cachestat_path, (void *)own, NULL, 0), 0);
	ck_assert_int_eq(pc_test_as_nobody(nobody_cachestat_path, (void *)writable, NULL, 0), 0);
}
END_TEST

START_TEST(write_fd_allowed_read_fd_not)
{
	/* root opens root's 0644 file both ways; 65534 inherits the fds:
	 * only the one open for writing lets cachestat through */
	const char *f = pc_test_make_file("cs-fd-0644", 4, 0644, 0, 0);
	const char *writable = pc_test_make_file("cs-fd-0666", 4, 0666, 0, 0);
	int rdwr = open(f, O_RDWR | O_CLOEXEC);
	int rdonly = open(f, O_RDONLY | O_CLOEXEC);
	int own_rdwr;

	ck_assert_int_ge(rdwr, 0);
	ck_assert_int_ge(rdonly, 0);
	if (skip_under_valgrind("cachestat through an O_RDWR fd")) {
		close(rdwr);
		close(rdonly);
		return;
	}
	ck_assert_int_eq(pc_test_as_nobody(nobody_cachestat_fd, &rdwr, NULL, 0), 0);
	ck_assert_int_eq(pc_test_as_nobody(nobody_cachestat_fd, &rdonly, NULL, 0), -EPERM);
	close(rdwr);
	close(rdonly);
	own_rdwr = open(writable, O_RDWR | O_CLOEXEC);
	ck_assert_int_ge(own_rdwr, 0);
	ck_assert_int_eq(pc_test_as_nobody(nobody_cachestat_fd, &own_rdwr, NULL, 0), 0);
	close(own_rdwr);
}
END_TEST

static int thread_cachestat_fd(void *arg)
{
	struct pc_cachestat cs;

	return pc_cachestat(*(int *)arg, 0, 0, &cs);
}

START_TEST(fsuid_thread_sees_the_gate)
{
	const char *f = pc_test_make_file("cs-thread-0644", 4, 0644, 0, 0);
	int rdwr = open(f, O_RDWR | O_CLOEXEC);
	int rdonly = open(f, O_RDONLY | O_CLOEXEC);
	struct pc_cachestat cs;

	ck_assert_int_ge(rdwr, 0);
	ck_assert_int_ge(rdonly, 0);
	if (skip_under_valgrind("cachestat in a setfsuid thread")) {
		close(rdwr);
		close(rdonly);
		return;
	}
	ck_assert_int_eq(pc_test_in_fsuid_thread(thread_cachestat_fd, &rdonly), -EPERM);
	ck_assert_int_eq(pc_test_in_fsuid_thread(thread_cachestat_fd, &rdwr), 0);
	ck_assert_int_eq(pc_cachestat(rdonly, 0, 0, &cs), 0); /* the main thread is root */
	close(rdwr);
	close(rdonly);
}
END_TEST

static int nobody_flags_probe(void *arg, void *buf, size_t bufsize)
{
	int fd = open(arg, O_RDONLY | O_CLOEXEC), ret;

	if (fd < 0)
		return -1000 + errno;
	ret = pc_sys_cachestat(fd, 0, 0, 1, NULL);
	close(fd);
	return ret;
}

START_TEST(invalid_flags_probe_tells_gate_apart)
{
	/* doc/kernels.md section 3: EPERM is checked before the flags */
	const char *hidden = pc_test_make_file("cs-probe-0644", 1, 0644, 0, 0);
	const char *writable = pc_test_make_file("cs-probe-0666", 1, 0666, 0, 0);

	if (skip_under_valgrind("cachestat flags probe"))
		return;
	ck_assert_int_eq(pc_test_as_nobody(nobody_flags_probe, (void *)hidden, NULL, 0), -EPERM);
	ck_assert_int_eq(pc_test_as_nobody(nobody_flags_probe, (void *)writable, NULL, 0), -EINVAL);
}
END_TEST

/* ---- argument errors ---------------------------------------------------------- */

START_TEST(bad_fd_is_ebadf)
{
	struct pc_cachestat cs;
	int fd;

	if (skip_under_valgrind("cachestat bad fd"))
		return;
	ck_assert_int_eq(pc_cachestat(-1, 0, 0, &cs), -EBADF);
	fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(pc_cachestat(fd, 0, 0, &cs), -EBADF); /* just closed */
}
END_TEST

START_TEST(o_path_fd_is_ebadf)
{
	const char *f = pc_test_make_file("cs-opath", 1, 0644, 0, 0);
	struct pc_cachestat cs;
	int fd = open(f, O_PATH | O_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	if (!skip_under_valgrind("cachestat O_PATH fd"))
		ck_assert_int_eq(pc_cachestat(fd, 0, 0, &cs), -EBADF);
	close(fd);
}
END_TEST

START_TEST(null_out_is_einval)
{
	/* checked before the syscall: the same under valgrind */
	ck_assert_int_eq(pc_cachestat(-1, 0, 0, NULL), -EINVAL);
	ck_assert_int_eq(pc_cachestat(0, 0, 0, NULL), -EINVAL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cachestat");
	TCase *tc = tcase_create("cachestat");
	struct pc_cachestat cs;
	SRunner *sr;
	int failed, fd;

	if (!pc_test_is_root()) {
		printf("SKIP: test-cachestat needs root\n");
		return 77;
	}
	fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && pc_cachestat(fd, 0, 0, &cs) == -ENOSYS && !pc_test_under_valgrind()) {
		printf("SKIP: test-cachestat: this kernel has no cachestat (6.5+)\n");
		close(fd);
		return 77;
	}
	if (fd >= 0)
		close(fd);
	/* no pc_test_dir() here: its atexit cleanup would run in every forked
	 * test child and remove the directory under its siblings */
	tcase_add_test(tc, counts_match_mincore);
	tcase_add_test(tc, past_eof_counts_nothing);
	tcase_add_test(tc, dirty_pages_counted_until_fsync);
	tcase_add_test(tc, other_user_0644_is_eperm);
	tcase_add_test(tc, owner_and_write_permission_allowed);
	tcase_add_test(tc, write_fd_allowed_read_fd_not);
	tcase_add_test(tc, fsuid_thread_sees_the_gate);
	tcase_add_test(tc, invalid_flags_probe_tells_gate_apart);
	tcase_add_test(tc, bad_fd_is_ebadf);
	tcase_add_test(tc, o_path_fd_is_ebadf);
	tcase_add_test(tc, null_out_is_einval);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	pc_test_cases_dir(); /* a failed case leaves no directory behind */
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
