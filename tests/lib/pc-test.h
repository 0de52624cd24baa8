/* SPDX-License-Identifier: MIT */
/* Helpers shared by the test suites: scratch files on a real disk, known
 * residency patterns, and running code as uid 65534. */
#ifndef PC_TEST_H
#define PC_TEST_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PC_TEST_NOBODY 65534

/* A scratch directory on a real disk that uid 65534 can traverse: $PC_TEST_DIR
 * or a fresh mkdtemp under /var/tmp (mode 0755), removed at exit. Exits 77
 * when it is on tmpfs (eviction does not work there). */
const char *pc_test_dir(void);

/* Called by a suite's main before it runs the cases: a directory of its
 * own that every forked case makes its scratch directory in ($PC_TEST_DIR),
 * removed at the suite's exit, with whatever is still mounted beneath it.
 * A case that fails dies without removing its own (nor undoing its mounts). */
void pc_test_cases_dir(void);

/* A path in pc_test_dir() (static buffer per call site is not needed: the
 * string is malloc'ed and freed at exit). */
const char *pc_test_path(const char *name);

/* Create name in the scratch dir with npages pages of non-zero bytes, then
 * fsync, chown uid:gid (unless uid < 0) and chmod mode. Returns the path. */
const char *pc_test_make_file(const char *name, uint64_t npages, mode_t mode, int uid, int gid);

/* Evict the whole file (fsync + POSIX_FADV_DONTNEED), then read the listed
 * pages through a POSIX_FADV_RANDOM fd so each comes in alone. */
void pc_test_set_pattern(const char *path, const uint64_t *pages, size_t n);

/* mincore vector of the whole file through a fresh mapping; the truth when
 * the caller passes the gate (root). Returns the page count, vec malloc'ed. */
uint64_t pc_test_mincore(const char *path, unsigned char **vec);

/* Run fn(arg, buf, bufsize) in a forked child as uid/gid 65534 with no
 * supplementary groups; its return value and up to bufsize bytes it writes
 * to buf come back. Returns fn's value, or -1000 - signal when the child
 * died. buf may be NULL. */
int pc_test_as_nobody(int (*fn)(void *arg, void *buf, size_t bufsize), void *arg,
		      void *buf, size_t bufsize);

/* Run fn(arg) in a thread that first called setfsuid/setfsgid(65534). */
int pc_test_in_fsuid_thread(int (*fn)(void *arg), void *arg);

/* 1 when the suite runs under valgrind (PC_UNDER_VALGRIND=1). */
int pc_test_under_valgrind(void);

/* 1 when running as root. */
int pc_test_is_root(void);

/* This run's share of a test split into parts that run side by side
 * (tests/vm/vmtests.py): PC_CASES_SHARD=K/N gives *k = K - 1 and *n = N;
 * unset, 0 and 1. A malformed value ends the test (exit 2). A test takes
 * the cases whose number modulo N is *k. */
void pc_test_shard(unsigned int *k, unsigned int *n);

/* Pages the kernel has taken from the page cache so far: /proc/vmstat's
 * pgsteal_anon and pgsteal_file, and what DAMON's pageout schemes paged
 * out (which does not move pgsteal: doc/design.md) as of their last
 * refresh. A refresh waits for the kdamond (0.4-0.5 s here): it is done on
 * the first call and when refresh_damon is set, so ask with it only after
 * a case differed. Not thread-safe (one test thread asks). */
uint64_t pc_test_reclaimed_pages(int refresh_damon);

/* A kernel the suite boots, and what it is known to do (tests/lib/pc-kernels.c;
 * doc/kernels.md): mincore, cachestat and RWF_NOWAIT modes (RWF_NOWAIT on
 * a filesystem that reads through the shared page-cache path, ext4 say) and
 * whether io_uring works (1). */
struct pc_test_kernel {
	int major, minor;
	int mincore, cachestat, nowait, io_uring;
};

/* The running kernel's row (by major.minor), or NULL when the table has none. */
const struct pc_test_kernel *pc_test_kernel(void);

/* What the running kernel's row says, for this process (under valgrind
 * cachestat is absent); -1 when the table has no row for the kernel. */
int pc_test_expect_mincore(void);
int pc_test_expect_cachestat(void);
int pc_test_expect_nowait(void);
int pc_test_expect_io_uring(void);

/* In a Check case: got equals want, the kernel table's answer; on a kernel
 * the table lacks (want < 0), got is at least an answer (>= 0). */
#define pc_test_assert_kernel(what, got, want)                                               \
	do {                                                                                  \
		int pc_got_ = (got), pc_want_ = (want);                                       \
		if (pc_want_ >= 0)                                                            \
			ck_assert_msg(pc_got_ == pc_want_, "%s: %d, where the kernel table says %d", \
				      (what), pc_got_, pc_want_);                             \
		else                                                                          \
			ck_assert_msg(pc_got_ >= 0, "%s: %d (a kernel the table lacks)", (what), \
				      pc_got_);                                               \
	} while (0)

/* Print "SKIP: <what>: <why>" so scripts/test.sh can collect it. */
void pc_test_skip(const char *what, const char *why);

#endif
