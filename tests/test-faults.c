/* SPDX-License-Identifier: MIT */
/*
 * Faults at the library's level: each one must give a clear -errno that
 * names the cause, free what the call took (memory and descriptors), leave
 * nothing half-written, and leave the process able to get the right answer
 * once the fault is gone (no wrong answer kept in a cache).
 *
 *  - allocation failure: every allocating call of each entry point fails in
 *    turn (tests/lib/failmalloc.c, linked with --wrap), once and from then
 *    on;
 *  - EMFILE: the same entry points under a low RLIMIT_NOFILE;
 *  - mmap failure: pc_residency() on a 64 GiB sparse file under a low
 *    RLIMIT_AS;
 *  - EINTR and short reads: snapshots through pipes a byte at a time while
 *    SIGALRM (no SA_RESTART) interrupts the reads and writes;
 *  - ENOSPC: the atomic snapshot writer on a full tmpfs;
 *  - files truncated or deleted under pc_residency(), snapshots appended to
 *    while they are read;
 *  - cachestat(2) answering ENOSYS (a seccomp filter).
 *
 * Every fault runs in a forked child, so that each one starts from a
 * process that has detected nothing yet.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/lsan_interface.h>
#endif

#include "failmalloc.h"
#include "pagecache/model.h"
#include "pagecache/pagecache.h"
#include "pc-private.h"
#include "pc-test.h"

#define CAPTURE_TIME INT64_C(1700000000123456789)
#define MAX_ITERATIONS 3000

static uint64_t ps;

/* In a forked child Check's asserts must not run (without CK_FORK they
 * would jump back into the runner): die with the reason instead. */
#define REQUIRE(cond)                                                              \
	do {                                                                       \
		if (!(cond)) {                                                     \
			fprintf(stderr, "%s:%d: %s failed (%s)\n", __FILE__, __LINE__, \
				#cond, strerror(errno));                           \
			_exit(5);                                                  \
		}                                                                  \
	} while (0)

/* ---- forked children -------------------------------------------------------- */

/* Leak check of a child that is about to _exit: valgrind checks by itself
 * at exit; LeakSanitizer only at exit(), so ask it now. */
static int child_leaked(void)
{
#ifdef __SANITIZE_ADDRESS__
	return __lsan_do_recoverable_leak_check() != 0;
#else
	return 0;
#endif
}

/*
 * Run fn(arg, out) in a forked child; out (outsize bytes, zeroed first)
 * comes back. NULL, or why the child failed: it died (a crash), hung
 * (timeout seconds, 20 times more under valgrind), leaked, or exited non-zero
 * (valgrind found errors: 3).
 */
static const char *in_child(void (*fn)(void *arg, void *out), void *arg, void *out,
			    size_t outsize, unsigned int timeout)
{
	static char msg[256];
	int pipefd[2], status;
	size_t got = 0;
	ssize_t r;
	pid_t pid;

	memset(out, 0, outsize);
	ck_assert_int_eq(pipe2(pipefd, O_CLOEXEC), 0);
	fflush(NULL);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(pipefd[0]);
		signal(SIGALRM, SIG_DFL); /* Check's handler would kill the whole test */
		alarm(pc_test_under_valgrind() ? 20 * timeout : timeout);
		fn(arg, out);
		alarm(0);
		if (write(pipefd[1], out, outsize) != (ssize_t)outsize)
			_exit(2);
		if (child_leaked())
			_exit(4);
		_exit(0);
	}
	close(pipefd[1]);
	while (got < outsize && (r = read(pipefd[0], (char *)out + got, outsize - got)) > 0)
		got += (size_t)r;
	close(pipefd[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	if (WIFSIGNALED(status)) {
		snprintf(msg, sizeof(msg), "child killed by signal %d%s", WTERMSIG(status),
			 WTERMSIG(status) == SIGALRM ? " (hung)" : "");
		return msg;
	}
	if (WEXITSTATUS(status) == 4)
		return "the child leaked memory (LeakSanitizer's report is above)";
	if (WEXITSTATUS(status) == 3)
		return "valgrind found errors in the child (its report is above)";
	if (WEXITSTATUS(status) != 0 || got != outsize) {
		snprintf(msg, sizeof(msg), "child exited %d", WEXITSTATUS(status));
		return msg;
	}
	return NULL;
}

/* Descriptors open in this process. */
static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1; /* the directory's own */
}

/* The lowest descriptor number not in use. */
static int lowest_free_fd(void)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

	if (fd >= 0)
		close(fd);
	return fd;
}

static void sleep_us(long us)
{
	struct timespec ts = { .tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* ---- digests ------------------------------------------------------------------ */

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

#define FNV_INIT 0xcbf29ce484222325ull

/* Everything a residency result says. */
static void digest_residency(const struct pc_residency *r, char *d, size_t n)
{
	uint64_t h = FNV_INIT, first = pc_residency_first_page(r), np = pc_residency_npages(r);
	int has_bits = np && pc_residency_test(r, first) >= 0;

	for (uint64_t p = first; has_bits && p < first + np; p++) {
		uint8_t bit = (uint8_t)pc_residency_test(r, p);

		h = fnv(h, &bit, 1);
	}
	snprintf(d, n, "quality %s source %s pages %llu+%llu resident %llu perturbed %d size %llu bits %s%016llx",
		 pc_quality_name(pc_residency_quality(r)), pc_source_name(pc_residency_source(r)),
		 (unsigned long long)first, (unsigned long long)np,
		 (unsigned long long)pc_residency_resident(r), pc_residency_perturbed(r),
		 (unsigned long long)pc_residency_file_size(r), has_bits ? "" : "none ",
		 (unsigned long long)(has_bits ? h : 0));
}

static uint64_t file_hash(int fd)
{
	uint8_t buf[4096];
	uint64_t h = FNV_INIT, off = 0;
	ssize_t n;

	while ((n = pread(fd, buf, sizeof(buf), (off_t)off)) > 0) {
		h = fnv(h, buf, (size_t)n);
		off += (uint64_t)n;
	}
	return h ^ off;
}

/* ---- the files the entry points work on ----------------------------------------- */

static const char *mixed_path, *resident_path, *sparse_path, *warm_path, *snap_path;
static const char *snapdir_path;

#define MIXED_PAGES 1536   /* three 2 MiB chunks: all, none, every third page */
#define RESIDENT_PAGES 64
#define SPARSE_PAGES 20000 /* more than one mincore window: mapped once, whole */
#define WARM_PAGES 256

static const struct pc_run warm_runs[] = { { 0, 8 }, { 100, 20 }, { 250, 10 } };
static const uint64_t warm_pattern[] = { 0, 1, 2, 105 };

static void mixed_pattern(void)
{
	uint64_t *pages = malloc(MIXED_PAGES * sizeof(*pages));
	size_t n = 0;

	ck_assert_ptr_nonnull(pages);
	for (uint64_t p = 0; p < 512; p++)
		pages[n++] = p;
	for (uint64_t p = 1024; p < MIXED_PAGES; p += 3)
		pages[n++] = p;
	pc_test_set_pattern(mixed_path, pages, n);
	free(pages);
}

static void all_resident(const char *path, uint64_t npages)
{
	uint64_t *pages = malloc(npages * sizeof(*pages));

	ck_assert_ptr_nonnull(pages);
	for (uint64_t p = 0; p < npages; p++)
		pages[p] = p;
	pc_test_set_pattern(path, pages, npages);
	free(pages);
}

static struct pc_snapshot_info snap_info(void)
{
	return (struct pc_snapshot_info){
		.size = sizeof(struct pc_snapshot_info),
		.root = "/srv/data",
		.capture_time_ns = CAPTURE_TIME,
		.mincore_mode = PC_MINCORE_GATED_FAKED,
		.cachestat_mode = PC_CACHESTAT_GATED,
		.nowait_mode = PC_NOWAIT_DESTRUCTIVE,
	};
}

static struct pc_snapshot_file snap_meta(uint64_t size)
{
	return (struct pc_snapshot_file){
		.size = sizeof(struct pc_snapshot_file),
		.file_size = size,
		.mtime_ns = 42,
		.dev = 0x803,
		.ino = 99,
		.quality = PC_QUALITY_EXACT,
	};
}

/* Runs enough to span several run records (64 KiB of runs each). */
#define SNAP_RUNS 40000
static struct pc_run *snap_runs(void)
{
	static struct pc_run runs[SNAP_RUNS];

	for (size_t i = 0; i < SNAP_RUNS; i++)
		runs[i] = (struct pc_run){ .page = 3 * i + (i % 7 == 0), .npages = 1 + i % 2 };
	return runs;
}

/* A snapshot of a few files, the one with many runs in the middle. */
static int write_test_snapshot(struct pc_snapshot_writer *w)
{
	struct pc_snapshot_file m = snap_meta(1 << 20);
	static const struct pc_run few[] = { { 0, 1 }, { 5, 10 } };
	int ret;

	ret = pc_snapshot_write_runs(w, "a/first", &m, few, 2);
	if (ret == 0)
		ret = pc_snapshot_write_runs(w, "a/many", &m, snap_runs(), SNAP_RUNS);
	m.quality = PC_QUALITY_UNKNOWN;
	if (ret == 0)
		ret = pc_snapshot_write_runs(w, "b/unknown", &m, NULL, 0);
	m.quality = PC_QUALITY_EXACT;
	if (ret == 0)
		ret = pc_snapshot_write_runs(w, "b/last", &m, few, 1);
	return ret;
}

static void make_files(void)
{
	struct pc_snapshot_info info = snap_info();
	struct pc_snapshot_writer *w;
	char byte = 'x';
	int fd;

	if (mixed_path)
		return;
	mixed_path = pc_test_make_file("mixed", MIXED_PAGES, 0644, -1, -1);
	resident_path = pc_test_make_file("resident", RESIDENT_PAGES, 0644, -1, -1);
	warm_path = pc_test_make_file("warm", WARM_PAGES, 0644, -1, -1);
	sparse_path = pc_test_path("sparse");
	fd = open(sparse_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)(SPARSE_PAGES * ps)), 0);
	ck_assert_int_eq(pwrite(fd, &byte, 1, (off_t)(3 * ps)), 1);
	ck_assert_int_eq(pwrite(fd, &byte, 1, (off_t)(17000 * ps)), 1);
	ck_assert_int_eq(fsync(fd), 0);
	close(fd);

	snap_path = pc_test_path("ref.pcs");
	fd = open(snap_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pc_snapshot_writer_new(fd, &info, &w), 0);
	ck_assert_int_eq(write_test_snapshot(w), 0);
	ck_assert_int_eq(pc_snapshot_writer_finish(w), 0);
	pc_snapshot_writer_free(w);
	close(fd);

	snapdir_path = pc_test_path("snapdir");
	mkdir(snapdir_path, 0755);
}

static void set_patterns(void)
{
	const uint64_t sparse_pages[] = { 3, 17000 };

	mixed_pattern();
	all_resident(resident_path, RESIDENT_PAGES);
	pc_test_set_pattern(sparse_path, sparse_pages, 2);
}

/*
 * Keep the patterns' resident pages resident while the children run: a
 * mapping with those pages mlock'ed (as root), so that reclaim on a busy
 * machine cannot take one away between the reference run and a faulted
 * one. Mapped pages look the same to mincore and cachestat (root passes
 * the gate) and to NOWAIT probes.
 */
struct pin {
	void *map;
	size_t len;
};

static struct pin pin_file(const char *path, uint64_t npages)
{
	struct pin p = { .len = npages * ps };
	unsigned char *vec;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	ck_assert_uint_eq(pc_test_mincore(path, &vec), npages);
	p.map = mmap(NULL, p.len, PROT_READ, MAP_SHARED, fd, 0);
	ck_assert_ptr_ne(p.map, MAP_FAILED);
	close(fd);
	for (uint64_t i = 0; i < npages; i++)
		if (vec[i] & 1)
			ck_assert_int_eq(mlock((char *)p.map + i * ps, ps), 0);
	free(vec);
	return p;
}

static void unpin(struct pin *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		munmap(p[i].map, p[i].len); /* unlocks too */
}

static void pin_all(struct pin *pins)
{
	pins[0] = pin_file(mixed_path, MIXED_PAGES);
	pins[1] = pin_file(resident_path, RESIDENT_PAGES);
	pins[2] = pin_file(sparse_path, SPARSE_PAGES);
}

/* ---- the entry points ------------------------------------------------------------ */

/*
 * One entry point: setup() (not armed) opens what run() needs; run() makes
 * the calls and frees what they returned, and on success describes what it
 * got in digest; check() (not armed) looks for anything left half-done;
 * teardown() closes. ctx is the scenario's own.
 */
struct ctx {
	int fd, fd2, dirfd;
	void *map;
	size_t map_len;
	int as_nobody;
	const struct pc_run *runs;
	size_t nruns;
};

struct scenario {
	const char *name;
	void (*setup)(struct ctx *c);
	int (*run)(struct ctx *c, char *digest, size_t n);
	const char *(*check)(struct ctx *c, int ret);
	void (*prepare)(struct ctx *c); /* before each run, not armed */
};

static void open_ro(struct ctx *c, const char *path)
{
	c->fd = open(path, O_RDONLY | O_CLOEXEC);
	REQUIRE(c->fd >= 0);
}

static void setup_mixed(struct ctx *c)
{
	open_ro(c, mixed_path);
}

static void setup_resident(struct ctx *c)
{
	open_ro(c, resident_path);
}

static void setup_sparse(struct ctx *c)
{
	open_ro(c, sparse_path);
}

/* As uid 65534, which mincore's gate hides a root-owned 0644 file from. */
static void setup_resident_nobody(struct ctx *c)
{
	open_ro(c, resident_path);
	REQUIRE(setgroups(0, NULL) == 0);
	REQUIRE(setgid(PC_TEST_NOBODY) == 0);
	REQUIRE(setuid(PC_TEST_NOBODY) == 0);
}

static int run_residency(struct ctx *c, unsigned int flags, char *d, size_t n)
{
	struct pc_residency *r;
	int ret = pc_residency(c->fd, 0, 0, flags, &r);

	if (ret < 0)
		return ret;
	digest_residency(r, d, n);
	pc_residency_free(r);
	return 0;
}

static int run_count(struct ctx *c, char *d, size_t n)
{
	return run_residency(c, PC_RES_COUNT_ONLY, d, n);
}

static int run_adaptive(struct ctx *c, char *d, size_t n)
{
	return run_residency(c, 0, d, n);
}

static int run_force_mincore(struct ctx *c, char *d, size_t n)
{
	return run_residency(c, PC_RES_FORCE_MINCORE, d, n);
}

static int run_bisect(struct ctx *c, char *d, size_t n)
{
	return run_residency(c, PC_RES_FORCE_CACHESTAT, d, n);
}

/* Probes of resident pages only: hits, whatever the kernel's NOWAIT does. */
static int run_probe(struct ctx *c, char *d, size_t n)
{
	return run_residency(c, PC_RES_FORCE_NOWAIT | PC_RES_ALLOW_PERTURB, d, n);
}

static int run_perturb(struct ctx *c, char *d, size_t n)
{
	return run_residency(c, PC_RES_ALLOW_PERTURB, d, n);
}

/* Anonymous memory and a mapping of a file, one call each. */
static void setup_mem(struct ctx *c)
{
	open_ro(c, resident_path);
	c->map_len = 4 * ps;
	c->map = mmap(NULL, c->map_len, PROT_READ, MAP_SHARED, c->fd, 0);
	REQUIRE(c->map != MAP_FAILED);
}

static int run_mem(struct ctx *c, char *d, size_t n)
{
	static char stack_page[8192] __attribute__((aligned(4096)));
	struct pc_residency *r;
	char one[160];
	int ret;

	stack_page[0] = 1; /* resident */
	ret = pc_residency_mem(stack_page, 4096, 0, &r);
	if (ret < 0)
		return ret;
	digest_residency(r, one, sizeof(one));
	pc_residency_free(r);
	ret = pc_residency_mem(c->map, c->map_len, 0, &r);
	if (ret < 0)
		return ret;
	snprintf(d, n, "%s; ", one);
	digest_residency(r, d + strlen(d), n - strlen(d));
	pc_residency_free(r);
	return 0;
}

static int run_detect(struct ctx *c, char *d, size_t n)
{
	int mc = pc_detect_mincore(), cs, nw, io;

	if (mc < 0)
		return mc;
	cs = pc_detect_cachestat();
	if (cs < 0)
		return cs;
	nw = pc_detect_nowait(c->dirfd);
	if (nw < 0)
		return nw;
	io = pc_detect_io_uring();
	if (io < 0)
		return io;
	snprintf(d, n, "mincore %s cachestat %s nowait %s io_uring %d", pc_mincore_mode_name(mc),
		 pc_cachestat_mode_name(cs), pc_nowait_mode_name(nw), io);
	return 0;
}

static void setup_dir(struct ctx *c)
{
	c->dirfd = open(pc_test_dir(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	REQUIRE(c->dirfd >= 0);
	c->fd = -1;
}

static int run_prober(struct ctx *c, char *d, size_t n)
{
	uint64_t pages[RESIDENT_PAGES];
	uint8_t hit[RESIDENT_PAGES];
	struct pc_prober *p;
	ssize_t got;
	int ret, hits = 0;

	for (int i = 0; i < RESIDENT_PAGES; i++)
		pages[i] = (uint64_t)(RESIDENT_PAGES - 1 - i);
	ret = pc_prober_new(8, &p);
	if (ret < 0)
		return ret;
	got = pc_prober_probe(p, c->fd, pages, RESIDENT_PAGES, hit);
	if (got >= 0)
		for (int i = 0; i < RESIDENT_PAGES; i++)
			hits += hit[i];
	snprintf(d, n, "source %s answered %zd hits %d", pc_source_name(pc_prober_source(p)), got,
		 hits);
	pc_prober_free(p);
	return got < 0 ? (int)got : 0;
}

/* The writer on a file the caller opened. */
static void setup_writer_fd(struct ctx *c)
{
	c->fd = open(pc_test_path("out.pcs"), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	REQUIRE(c->fd >= 0);
}

static int run_writer_fd(struct ctx *c, char *d, size_t n)
{
	struct pc_snapshot_info info = snap_info();
	struct pc_snapshot_writer *w;
	int ret;

	if (ftruncate(c->fd, 0) < 0 || lseek(c->fd, 0, SEEK_SET) < 0)
		return -errno;
	ret = pc_snapshot_writer_new(c->fd, &info, &w);
	if (ret < 0)
		return ret;
	ret = write_test_snapshot(w);
	if (ret == 0)
		ret = pc_snapshot_writer_finish(w);
	pc_snapshot_writer_free(w);
	if (ret == 0)
		snprintf(d, n, "snapshot %016llx", (unsigned long long)file_hash(c->fd));
	return ret;
}

/* The atomic writer, over an older snapshot that must survive a failure. */
#define OLD_SNAPSHOT "an older snapshot\n"

static void setup_writer_at(struct ctx *c)
{
	int fd;

	c->dirfd = open(snapdir_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	REQUIRE(c->dirfd >= 0);
	fd = openat(c->dirfd, "snap.pcs", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	REQUIRE(fd >= 0);
	REQUIRE(write(fd, OLD_SNAPSHOT, strlen(OLD_SNAPSHOT)) == (ssize_t)strlen(OLD_SNAPSHOT));
	close(fd);
	c->fd = -1;
}

static int run_writer_at(struct ctx *c, char *d, size_t n)
{
	struct pc_snapshot_info info = snap_info();
	struct pc_snapshot_writer *w;
	int ret, fd;

	ret = pc_snapshot_writer_new_at(c->dirfd, "snap.pcs", 0644, &info, &w);
	if (ret < 0)
		return ret;
	ret = write_test_snapshot(w);
	if (ret == 0)
		ret = pc_snapshot_writer_finish(w);
	pc_snapshot_writer_free(w);
	if (ret < 0)
		return ret;
	fd = openat(c->dirfd, "snap.pcs", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	snprintf(d, n, "snapshot %016llx", (unsigned long long)file_hash(fd));
	close(fd);
	return 0;
}

/* The directory holds snap.pcs alone: the older one after a failure. */
static const char *dir_is_clean(int dirfd, int ret, const char *old)
{
	static char why[300];
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fdopendir(fd);
	struct dirent *de;
	char buf[64];
	ssize_t got;

	if (!d)
		return "cannot list the directory";
	why[0] = '\0';
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    !strcmp(de->d_name, "snap.pcs") || !strcmp(de->d_name, "filler"))
			continue;
		snprintf(why, sizeof(why), "left behind in the directory: %s", de->d_name);
	}
	closedir(d);
	if (why[0])
		return why;
	if (ret == 0)
		return NULL;
	fd = openat(dirfd, "snap.pcs", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return "the older snapshot is gone";
	got = read(fd, buf, sizeof(buf));
	close(fd);
	if (got != (ssize_t)strlen(old) || memcmp(buf, old, (size_t)got) != 0)
		return "the older snapshot was changed";
	return NULL;
}

static const char *check_writer_at(struct ctx *c, int ret)
{
	return dir_is_clean(c->dirfd, ret, OLD_SNAPSHOT);
}

static void setup_reader(struct ctx *c)
{
	open_ro(c, snap_path);
}

/* Everything a snapshot reader hands out from fd, as a digest; each file and
 * run also as one hash in items (when not NULL, up to max), so that what a
 * failed read handed out can be compared with the start of a good one. On
 * an error its message goes to d. */
static int read_snapshot(int fd, char *d, size_t n, uint64_t *items, size_t max, size_t *nitems)
{
	const struct pc_snapshot_file *f;
	struct pc_snapshot_reader *rd;
	uint64_t h = FNV_INIT, files = 0, runs = 0;
	struct pc_run run;
	size_t k = 0;
	int ret;

	ret = pc_snapshot_reader_new(fd, &rd);
	if (ret < 0)
		return ret;
	while ((ret = pc_snapshot_next_file(rd, &f)) > 0) {
		h = fnv(h, f->path, strlen(f->path));
		h = fnv(h, &f->quality, sizeof(f->quality));
		if (items && k < max)
			items[k++] = h;
		files++;
		while ((ret = pc_snapshot_next_run(rd, &run)) > 0) {
			h = fnv(h, &run, sizeof(run));
			if (items && k < max)
				items[k++] = h;
			runs++;
		}
		if (ret < 0)
			break;
	}
	if (ret == 0)
		snprintf(d, n, "files %llu runs %llu hash %016llx root %s", (unsigned long long)files,
			 (unsigned long long)runs, (unsigned long long)h,
			 pc_snapshot_reader_root(rd));
	else
		snprintf(d, n, "%s", pc_snapshot_reader_error(rd) ? pc_snapshot_reader_error(rd) : "");
	if (nitems)
		*nitems = k;
	pc_snapshot_reader_free(rd);
	return ret;
}

static int run_reader(struct ctx *c, char *d, size_t n)
{
	int ret;

	if (lseek(c->fd, 0, SEEK_SET) < 0)
		return -errno;
	ret = read_snapshot(c->fd, d, n, NULL, 0, NULL);
	if (ret < 0)
		d[0] = '\0';
	return ret;
}

static void setup_warm(struct ctx *c)
{
	open_ro(c, warm_path);
}

/* readahead(2) returns before the reads land: describe what pc_warm() saw
 * so that a page still in flight cannot change the digest. */
static int run_warm_with(struct ctx *c, int strategy, char *d, size_t n)
{
	struct pc_warm_opts o = { .size = sizeof(o), .strategy = strategy };
	struct pc_warm_stats st = { .size = sizeof(st) };
	int64_t done;

	done = pc_warm(c->fd, warm_runs, PC_ARRAY_SIZE(warm_runs), &o, &st);
	if (done < 0)
		return (int)done;
	snprintf(d, n, "wanted %llu beyond %llu resident+read %llu quality %s done/page %llu",
		 (unsigned long long)st.pages_wanted, (unsigned long long)st.pages_beyond_eof,
		 (unsigned long long)(st.pages_resident + st.pages_read),
		 pc_quality_name(st.quality),
		 (unsigned long long)((uint64_t)done / ps == st.pages_read));
	return 0;
}

/* Read every page of the resident file again: a page reclaimed since (the
 * machine may be short of memory) would read as a miss. */
static void prepare_resident(struct ctx *c)
{
	char byte;

	for (uint64_t p = 0; p < RESIDENT_PAGES; p++)
		REQUIRE(pread(c->fd, &byte, 1, (off_t)(p * ps)) == 1);
}

static void prepare_warm(struct ctx *c)
{
	(void)c;
	pc_test_set_pattern(warm_path, warm_pattern, PC_ARRAY_SIZE(warm_pattern));
}

static void prepare_warm_snapshot(struct ctx *c)
{
	(void)c;
	pc_test_set_pattern(warm_path, NULL, 0);
}

static int run_warm_readahead(struct ctx *c, char *d, size_t n)
{
	return run_warm_with(c, PC_WARM_READAHEAD, d, n);
}

static int run_warm_uring(struct ctx *c, char *d, size_t n)
{
	return run_warm_with(c, PC_WARM_IO_URING, d, n);
}

/* pc_warm_snapshot() over the reference snapshot's first file. */
static void setup_warm_snapshot(struct ctx *c)
{
	open_ro(c, warm_path);
	c->fd2 = open(snap_path, O_RDONLY | O_CLOEXEC);
	REQUIRE(c->fd2 >= 0);
}

static int run_warm_snapshot(struct ctx *c, char *d, size_t n)
{
	struct pc_warm_stats st = { .size = sizeof(st) };
	const struct pc_snapshot_file *f;
	struct pc_snapshot_reader *rd;
	int64_t done;
	int ret;

	if (lseek(c->fd2, 0, SEEK_SET) < 0)
		return -errno;
	ret = pc_snapshot_reader_new(c->fd2, &rd);
	if (ret < 0)
		return ret;
	ret = pc_snapshot_next_file(rd, &f);
	if (ret == 1) {
		done = pc_warm_snapshot(c->fd, rd, NULL, &st);
		ret = done < 0 ? (int)done : 0;
	} else if (ret == 0) {
		ret = -ENODATA;
	}
	pc_snapshot_reader_free(rd);
	if (ret == 0)
		snprintf(d, n, "wanted %llu resident+read %llu",
			 (unsigned long long)st.pages_wanted,
			 (unsigned long long)(st.pages_resident + st.pages_read));
	return ret;
}

/* The model, built from nothing: a file of 40 pages, a few cached, asked
 * about by its owner (mincore) and by nobody (probes). */
static int run_model(struct ctx *c, char *d, size_t n)
{
	struct pcm_kernel *k;
	struct pcm_file *f;
	struct pcm_task *root, *nobody;
	struct pcm_fd *fd, *nfd;
	struct pc_residency *r;
	unsigned char vec[4];
	uint64_t addr;
	char one[160];
	int ret;

	(void)c;
	ret = pcm_kernel_new(PC_MINCORE_GATED_FAKED, PC_NOWAIT_CLEAN, PC_CACHESTAT_GATED, &k);
	if (ret < 0)
		return ret;
	ret = pcm_file_new(k, 0, 0, 0644, 40, &f);
	for (uint64_t p = 3; ret == 0 && p < 40; p += 5)
		ret = pcm_file_cache(f, p);
	if (ret == 0)
		ret = pcm_task_new(k, 0, 0, 0, &root);
	if (ret == 0)
		ret = pcm_task_new(k, PC_TEST_NOBODY, PC_TEST_NOBODY, 0, &nobody);
	if (ret == 0)
		ret = pcm_open(root, f, PCM_O_RDONLY, &fd);
	if (ret == 0)
		ret = pcm_open(nobody, f, PCM_O_RDONLY, &nfd);
	if (ret == 0)
		ret = pcm_mmap(root, fd, 0, 4, PCM_PROT_READ, PCM_MAP_SHARED, &addr);
	if (ret == 0)
		ret = pcm_mincore(root, addr, 4 * 4096, vec);
	if (ret == 0)
		ret = pcm_residency(fd, 0, 0, 0, &r);
	if (ret == 0) {
		digest_residency(r, one, sizeof(one));
		pc_residency_free(r);
		ret = pcm_residency(nfd, 0, 0, PC_RES_ALLOW_PERTURB, &r);
	}
	if (ret == 0) {
		snprintf(d, n, "vec %d%d%d%d; %s; ", vec[0], vec[1], vec[2], vec[3], one);
		digest_residency(r, d + strlen(d), n - strlen(d));
		pc_residency_free(r);
	}
	pcm_kernel_free(k);
	return ret;
}

static void setup_none(struct ctx *c)
{
	c->fd = -1;
}

#define SCENARIO(name_, setup_, run_, ...) \
	{ .name = name_, .setup = setup_, .run = run_, __VA_ARGS__ }

static const struct scenario scenarios[] = {
	SCENARIO("residency count-only", setup_mixed, run_count),
	SCENARIO("residency adaptive", setup_mixed, run_adaptive),
	SCENARIO("residency mincore, one mapping", setup_sparse, run_force_mincore),
	SCENARIO("residency cachestat bisect", setup_mixed, run_bisect),
	SCENARIO("residency probe", setup_resident, run_probe, .prepare = prepare_resident),
	SCENARIO("residency probe, hidden file", setup_resident_nobody, run_perturb, .prepare = prepare_resident),
	SCENARIO("residency_mem", setup_mem, run_mem),
	SCENARIO("detection", setup_dir, run_detect),
	SCENARIO("prober", setup_resident, run_prober, .prepare = prepare_resident),
	SCENARIO("snapshot writer", setup_writer_fd, run_writer_fd),
	SCENARIO("atomic snapshot writer", setup_writer_at, run_writer_at,
		 .check = check_writer_at),
	SCENARIO("snapshot reader", setup_reader, run_reader),
	SCENARIO("warm readahead", setup_warm, run_warm_readahead, .prepare = prepare_warm),
	SCENARIO("warm io_uring", setup_warm, run_warm_uring, .prepare = prepare_warm),
	SCENARIO("warm snapshot", setup_warm_snapshot, run_warm_snapshot,
		 .prepare = prepare_warm_snapshot),
	SCENARIO("model", setup_none, run_model),
};

/* ---- one faulted call in a child ----------------------------------------------- */

enum fault_kind {
	FAULT_NONE,
	FAULT_MALLOC_ONCE,
	FAULT_MALLOC_FROM,
	FAULT_NOFILE,
};

struct attempt {
	const struct scenario *s;
	int kind;
	uint64_t n;             /* the allocation to fail; for NOFILE, spare descriptors */
};

struct outcome {
	int ret;
	uint64_t fired, calls, live;
	int fds_before, fds_after;
	int again_ret;
	char digest[400];
	char again[400];
	char note[300];
};

static void attempt_child(void *arg, void *out)
{
	const struct attempt *a = arg;
	struct outcome *o = out;
	struct ctx c = { .fd = -1, .fd2 = -1, .dirfd = -1 };
	struct rlimit old, low;
	const char *why;

	a->s->setup(&c);
	if (a->s->prepare)
		a->s->prepare(&c);
	o->fds_before = count_fds();
	if (a->kind == FAULT_NOFILE) {
		REQUIRE(getrlimit(RLIMIT_NOFILE, &old) == 0);
		low = old;
		low.rlim_cur = (rlim_t)lowest_free_fd() + a->n;
		REQUIRE(setrlimit(RLIMIT_NOFILE, &low) == 0);
		fm_arm(0, FM_ONCE);
	} else {
		fm_arm(a->kind == FAULT_NONE ? 0 : a->n,
		       a->kind == FAULT_MALLOC_FROM ? FM_FROM_NTH : FM_ONCE);
	}
	o->ret = a->s->run(&c, o->digest, sizeof(o->digest));
	o->fired = fm_disarm();
	o->calls = fm_calls();
	if (a->kind == FAULT_NOFILE) {
		REQUIRE(setrlimit(RLIMIT_NOFILE, &old) == 0);
		o->fired = o->ret == -EMFILE;
	}
	o->live = fm_live_blocks();
	o->fds_after = count_fds();
	why = a->s->check ? a->s->check(&c, o->ret) : NULL;
	if (why)
		snprintf(o->note, sizeof(o->note), "%s", why);
	/* the fault is gone: the same calls must give the right answer now */
	if (a->s->prepare)
		a->s->prepare(&c);
	o->again_ret = a->s->run(&c, o->again, sizeof(o->again));
}

static const char *kind_name(int kind)
{
	switch (kind) {
	case FAULT_MALLOC_ONCE: return "allocation";
	case FAULT_MALLOC_FROM: return "allocations from";
	case FAULT_NOFILE: return "spare descriptors";
	}
	return "no fault";
}

/* Run the scenario under each fault of the kind until one run of it meets
 * no fault (every allocation was reached, or enough descriptors). */
static void fault_loop(const struct scenario *s, int kind)
{
	struct attempt a = { .s = s, .kind = FAULT_NONE };
	struct outcome ref, o;
	const char *why;
	uint64_t n, faulted = 0, recovered = 0;
	struct pin pins[3];
	int retries = 0;

	make_files();
	set_patterns();
	pin_all(pins);
	why = in_child(attempt_child, &a, &ref, sizeof(ref), 120);
	ck_assert_msg(!why, "%s, no fault: %s", s->name, why);
	ck_assert_msg(ref.ret == 0 || ref.ret == -EOPNOTSUPP, "%s, no fault: %s", s->name,
		      strerror(-ref.ret));
	ck_assert_msg(!strcmp(ref.digest, ref.again), "%s: two runs differ:\n  %s\n  %s", s->name,
		      ref.digest, ref.again);
	for (n = kind == FAULT_NOFILE ? 0 : 1; n < MAX_ITERATIONS; n++) {
		/*
		 * Under valgrind, every n up to 16 and every 16th after: the
		 * asan stage takes every n (with LeakSanitizer, and the live
		 * block count here is the test's own), so what valgrind adds
		 * is a second look at a sample of the failure paths, at fifty
		 * times the cost of each (every 8th took 100 s of the suite's
		 * 10 minutes).
		 */
		if (pc_test_under_valgrind() && kind != FAULT_NOFILE && n > 16 && n % 16)
			continue;
		a = (struct attempt){ .s = s, .kind = kind, .n = n };
		why = in_child(attempt_child, &a, &o, sizeof(o), 120);
		ck_assert_msg(!why, "%s, %s %llu: %s", s->name, kind_name(kind),
			      (unsigned long long)n, why);
		ck_assert_msg(!o.note[0], "%s, %s %llu (%s): %s", s->name, kind_name(kind),
			      (unsigned long long)n, strerror(-o.ret), o.note);
		ck_assert_msg(o.live == 0, "%s, %s %llu (%s): %llu blocks not freed", s->name,
			      kind_name(kind), (unsigned long long)n, strerror(-o.ret),
			      (unsigned long long)o.live);
		ck_assert_msg(o.fds_after == o.fds_before,
			      "%s, %s %llu (%s): %d descriptors before, %d after", s->name,
			      kind_name(kind), (unsigned long long)n, strerror(-o.ret),
			      o.fds_before, o.fds_after);
		/*
		 * Different answers: the library's fault, or the page cache
		 * changed under the test (seen now and then on a loaded machine
		 * under ASan, pinned pages notwithstanding). The library's
		 * faults repeat, the world's do not: the same n runs again, on
		 * patterns made afresh, twice at most before it counts.
		 */
		if ((o.again_ret != ref.ret || strcmp(o.again, ref.digest) ||
		     (o.ret == ref.ret && strcmp(o.digest, ref.digest))) && retries < 2) {
			printf("%s, %s %llu: a different answer, run again:\n  %s\n  %s\n  wanted %s\n",
			       s->name, kind_name(kind), (unsigned long long)n, o.digest, o.again,
			       ref.digest);
			unpin(pins, PC_ARRAY_SIZE(pins));
			set_patterns();
			pin_all(pins);
			retries++;
			n--;
			continue;
		}
		retries = 0;
		ck_assert_msg(o.again_ret == ref.ret && !strcmp(o.again, ref.digest),
			      "%s, %s %llu (%s), then without the fault: %s\n  %s\n  wanted %s",
			      s->name, kind_name(kind), (unsigned long long)n, strerror(-o.ret),
			      strerror(-o.again_ret), o.again, ref.digest);
		if (o.ret == ref.ret) {
			/* succeeded (a fallback) or the same error: the same answer */
			ck_assert_msg(!strcmp(o.digest, ref.digest),
				      "%s, %s %llu: a different answer:\n  %s\n  wanted %s",
				      s->name, kind_name(kind), (unsigned long long)n, o.digest,
				      ref.digest);
			if (o.fired)
				recovered++;
		} else if (kind == FAULT_NOFILE) {
			ck_assert_msg(o.ret == -EMFILE, "%s, %llu spare descriptors: %s, not EMFILE",
				      s->name, (unsigned long long)n, strerror(-o.ret));
		} else {
			/* EAGAIN: pthread_create's word for it */
			ck_assert_msg(o.ret == -ENOMEM || o.ret == -EAGAIN,
				      "%s, %s %llu: %s, not ENOMEM", s->name, kind_name(kind),
				      (unsigned long long)n, strerror(-o.ret));
		}
		if (o.fired)
			faulted++;
		if (kind != FAULT_NOFILE && !o.fired)
			break;
		if (kind == FAULT_NOFILE && o.ret == ref.ret && n >= 8)
			break;
	}
	unpin(pins, PC_ARRAY_SIZE(pins));
	ck_assert_msg(n < MAX_ITERATIONS, "%s: no end after %d faults", s->name, MAX_ITERATIONS);
	printf("%s, %s: %llu faulted runs (%llu recovered), %llu allocating calls\n", s->name,
	       kind_name(kind), (unsigned long long)faulted, (unsigned long long)recovered,
	       (unsigned long long)ref.calls);
	fflush(stdout);
}

/* 1. Allocation failure: the nth allocation of each entry point fails
 * (once, then from there on), for every n the call reaches. */
START_TEST(malloc_failure_once)
{
	fault_loop(&scenarios[_i], FAULT_MALLOC_ONCE);
}
END_TEST

START_TEST(malloc_failure_persisting)
{
	fault_loop(&scenarios[_i], FAULT_MALLOC_FROM);
}
END_TEST

/* 2. EMFILE: 0, 1, 2 ... descriptors to spare. */
START_TEST(emfile)
{
	fault_loop(&scenarios[_i], FAULT_NOFILE);
}
END_TEST

/* 2b. No descriptor to spare at all: each call that needs one says EMFILE. */
struct emfile_out {
	int mincore, cachestat, nowait, io_uring, prober, probe, writer, residency;
	int fds_before, fds_after;
	char residency_digest[200];
};

static void emfile_child(void *arg, void *out)
{
	struct pc_snapshot_info info = snap_info();
	struct emfile_out *o = out;
	struct pc_snapshot_writer *w = NULL;
	struct pc_prober *p = NULL;
	struct pc_residency *r;
	struct rlimit old, low;
	int fd = open(resident_path, O_RDONLY | O_CLOEXEC);
	int dirfd = open(snapdir_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	(void)arg;
	REQUIRE(fd >= 0 && dirfd >= 0);
	o->fds_before = count_fds();
	REQUIRE(getrlimit(RLIMIT_NOFILE, &old) == 0);
	low = old;
	low.rlim_cur = (rlim_t)lowest_free_fd();
	REQUIRE(setrlimit(RLIMIT_NOFILE, &low) == 0);
	o->mincore = pc_detect_mincore();
	o->cachestat = pc_detect_cachestat();
	o->nowait = pc_detect_nowait(dirfd);
	o->io_uring = pc_detect_io_uring();
	o->prober = pc_prober_new(0, &p);
	o->probe = pc_residency(fd, 0, 0, PC_RES_FORCE_NOWAIT | PC_RES_ALLOW_PERTURB, &r);
	if (o->probe == 0)
		pc_residency_free(r);
	o->writer = pc_snapshot_writer_new_at(dirfd, "emfile.pcs", 0644, &info, &w);
	/* root sees this file truthfully through mincore: no descriptor needed */
	o->residency = pc_residency(fd, 0, 0, 0, &r);
	if (o->residency == 0) {
		digest_residency(r, o->residency_digest, sizeof(o->residency_digest));
		pc_residency_free(r);
	}
	REQUIRE(setrlimit(RLIMIT_NOFILE, &old) == 0);
	pc_prober_free(p);
	pc_snapshot_writer_free(w);
	o->fds_after = count_fds();
}

START_TEST(emfile_without_spare_descriptors)
{
	struct emfile_out o;
	const char *why;

	make_files();
	set_patterns();
	why = in_child(emfile_child, NULL, &o, sizeof(o), 120);
	ck_assert_msg(!why, "%s", why);
	ck_assert_int_eq(o.mincore, -EMFILE);  /* its memfd */
	ck_assert_int_eq(o.cachestat, -EMFILE);
	ck_assert_int_eq(o.nowait, -EMFILE);   /* the directory's "." */
	ck_assert_int_eq(o.io_uring, -EMFILE); /* the C library, the ring */
	ck_assert_int_eq(o.prober, -EMFILE);
	ck_assert_int_eq(o.probe, -EMFILE);    /* the private reopen */
	ck_assert_int_eq(o.writer, -EMFILE);   /* the directory */
	ck_assert_msg(o.residency == 0, "pc_residency: %s", strerror(-o.residency));
	ck_assert_msg(strstr(o.residency_digest, "quality exact") &&
		      strstr(o.residency_digest, "pages 0+64 resident 64 "),
		      "%s", o.residency_digest);
	ck_assert_int_eq(o.fds_after, o.fds_before);
}
END_TEST

/* ---- 3. mmap failure: a low RLIMIT_AS ------------------------------------------- */

#define BIG_BYTES (UINT64_C(64) << 30)
static const char *big_path;
static uint64_t big_pages[5];

static void make_big_file(void)
{
	char byte = 'b';
	int fd;

	if (big_path)
		return;
	big_pages[0] = 0;
	big_pages[1] = 1000;
	big_pages[2] = 16383;          /* the last page of the first mincore window */
	big_pages[3] = 16384;
	big_pages[4] = BIG_BYTES / ps - 1;
	big_path = pc_test_path("big");
	fd = open(big_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)BIG_BYTES), 0);
	for (size_t i = 0; i < PC_ARRAY_SIZE(big_pages); i++)
		ck_assert_int_eq(pwrite(fd, &byte, 1, (off_t)(big_pages[i] * ps)), 1);
	ck_assert_int_eq(fsync(fd), 0);
	close(fd);
}

struct as_case {
	uint64_t headroom;       /* address space allowed beyond what is mapped now */
	unsigned int flags;
	int must_answer;         /* 1: must succeed; 0: success or -ENOMEM */
};

struct as_out {
	int limited;             /* a 64 GiB mapping failed with ENOMEM under the limit */
	int ret;
	uint64_t npages, resident;
	int quality, bits_ok;
};

static uint64_t vm_size_bytes(void)
{
	char line[256];
	unsigned long long kb = 0;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmSize: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return (uint64_t)kb * 1024;
}

static void as_child(void *arg, void *out)
{
	const struct as_case *c = arg;
	struct as_out *o = out;
	struct pc_residency *r;
	struct rlimit old, low;
	void *map;
	int fd = open(big_path, O_RDONLY | O_CLOEXEC);

	REQUIRE(fd >= 0);
	REQUIRE(getrlimit(RLIMIT_AS, &old) == 0);
	low = old;
	low.rlim_cur = vm_size_bytes() + c->headroom;
	REQUIRE(setrlimit(RLIMIT_AS, &low) == 0);
	map = mmap(NULL, BIG_BYTES, PROT_NONE, MAP_SHARED, fd, 0);
	o->limited = map == MAP_FAILED && errno == ENOMEM;
	if (map != MAP_FAILED)
		munmap(map, BIG_BYTES);
	o->ret = pc_residency(fd, 0, 0, c->flags, &r);
	REQUIRE(setrlimit(RLIMIT_AS, &old) == 0);
	if (o->ret == 0) {
		o->npages = pc_residency_npages(r);
		o->resident = pc_residency_resident(r);
		o->quality = pc_residency_quality(r);
		o->bits_ok = 1;
		for (size_t i = 0; i < PC_ARRAY_SIZE(big_pages); i++)
			o->bits_ok &= pc_residency_test(r, big_pages[i]) == 1;
		pc_residency_free(r);
	}
	close(fd);
}

static const struct as_case as_cases[] = {
	/* room for the 64 MiB windows, not for the whole file at once */
	{ UINT64_C(1) << 30, PC_RES_FORCE_MINCORE, 1 },
	{ UINT64_C(1) << 30, 0, 1 },
	/* not even for one window */
	{ UINT64_C(16) << 20, PC_RES_FORCE_MINCORE, 0 },
	{ UINT64_C(16) << 20, 0, 0 },
};

START_TEST(mmap_failure_under_rlimit_as)
{
	const struct as_case *c = &as_cases[_i];
	struct as_out o;
	const char *why;

	if (pc_test_under_valgrind()) {
		/* its own address-space manager maps for the client: the
		 * kernel's RLIMIT_AS never sees a 64 GiB client mapping fail */
		pc_test_skip("rlimit_as", "valgrind does not apply RLIMIT_AS to the client's mappings");
		return;
	}
	make_big_file();
	pc_test_set_pattern(big_path, big_pages, PC_ARRAY_SIZE(big_pages));
	why = in_child(as_child, (void *)c, &o, sizeof(o), 120);
	ck_assert_msg(!why, "%s", why);
	ck_assert_msg(o.limited, "a 64 GiB mapping still worked under the limit");
	if (o.ret == 0) {
		ck_assert_uint_eq(o.npages, BIG_BYTES / ps);
		ck_assert_int_eq(o.quality, PC_QUALITY_EXACT);
		ck_assert_uint_eq(o.resident, PC_ARRAY_SIZE(big_pages));
		ck_assert_msg(o.bits_ok, "a resident page missing from the bitmap");
	} else {
		ck_assert_msg(!c->must_answer, "no answer with room for the windows: %s",
			      strerror(-o.ret));
		ck_assert_msg(o.ret == -ENOMEM, "%s, not ENOMEM", strerror(-o.ret));
	}
	printf("RLIMIT_AS +%llu MiB, flags %#x: %s\n", (unsigned long long)(c->headroom >> 20),
	       c->flags, o.ret ? strerror(-o.ret) : "answered");
	fflush(stdout);
}
END_TEST

/* ---- 4. EINTR and short reads and writes ------------------------------------------ */

static volatile sig_atomic_t alarms;
static struct timespec deadline;

static void on_alarm(int sig)
{
	struct timespec now;

	(void)sig;
	alarms++;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (now.tv_sec > deadline.tv_sec)
		_exit(6); /* hung */
}

/* SIGALRM every 2 ms, without SA_RESTART: blocking reads and writes fail
 * with EINTR (or come back short). Its own timer: alarm() stays free. */
static timer_t interrupt_often(unsigned int timeout)
{
	struct sigaction sa = { .sa_handler = on_alarm };
	struct sigevent sev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGALRM };
	struct itimerspec its = { .it_interval = { 0, 2000000 }, .it_value = { 0, 2000000 } };
	timer_t t;

	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += pc_test_under_valgrind() ? 20 * timeout : timeout;
	alarm(0);
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = 0; /* no SA_RESTART */
	REQUIRE(sigaction(SIGALRM, &sa, NULL) == 0);
	REQUIRE(timer_create(CLOCK_MONOTONIC, &sev, &t) == 0);
	REQUIRE(timer_settime(t, 0, &its, NULL) == 0);
	return t;
}

struct eintr_out {
	int ret;
	char digest[300];
	char want[300];
	struct fm_io_counts io;
	int alarms;
	uint64_t got_hash, want_hash;
};

/* The reader: the reference snapshot arrives through a pipe one byte per
 * write, with pauses, while SIGALRM interrupts the reader's read(). */
static void eintr_reader_child(void *arg, void *out)
{
	struct eintr_out *o = out;
	int pipefd[2], status, fd;
	timer_t t;
	pid_t pid;

	(void)arg;
	fd = open(snap_path, O_RDONLY | O_CLOEXEC);
	REQUIRE(fd >= 0);
	REQUIRE(read_snapshot(fd, o->want, sizeof(o->want), NULL, 0, NULL) == 0);
	REQUIRE(lseek(fd, 0, SEEK_SET) == 0);
	REQUIRE(pipe2(pipefd, O_CLOEXEC) == 0);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		uint8_t byte;
		uint64_t n = 0;

		close(pipefd[0]);
		while (read(fd, &byte, 1) == 1) {
			if (write(pipefd[1], &byte, 1) != 1)
				_exit(1);
			if (++n % 512 == 0)
				sleep_us(300);
		}
		_exit(0);
	}
	close(pipefd[1]);
	close(fd);
	t = interrupt_often(120);
	o->ret = read_snapshot(pipefd[0], o->digest, sizeof(o->digest), NULL, 0, NULL);
	timer_delete(t);
	o->alarms = alarms;
	fm_io_counts(&o->io);
	close(pipefd[0]);
	REQUIRE(waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
		WEXITSTATUS(status) == 0);
}

START_TEST(eintr_and_short_reads)
{
	struct eintr_out o;
	const char *why;

	make_files();
	why = in_child(eintr_reader_child, NULL, &o, sizeof(o), 120);
	ck_assert_msg(!why, "%s", why);
	ck_assert_msg(o.ret == 0, "reader: %s (%s)", strerror(-o.ret), o.digest);
	ck_assert_str_eq(o.digest, o.want);
	ck_assert_int_gt(o.alarms, 0);
	ck_assert_msg(o.io.read_eintr > 0, "no read was interrupted (%d signals)", o.alarms);
	printf("reader through a pipe: %d signals, %llu reads interrupted, %llu short\n",
	       o.alarms, (unsigned long long)o.io.read_eintr,
	       (unsigned long long)o.io.read_short);
	fflush(stdout);
}
END_TEST

/* The writer: into a pipe that a slow reader empties a byte at a time,
 * while SIGALRM interrupts the writer's write(). */
static void eintr_writer_child(void *arg, void *out)
{
	struct pc_snapshot_info info = snap_info();
	struct pc_snapshot_writer *w;
	struct eintr_out *o = out;
	int pipefd[2], hashpipe[2], status, fd;
	timer_t t;
	pid_t pid;

	(void)arg;
	fd = open(snap_path, O_RDONLY | O_CLOEXEC);
	REQUIRE(fd >= 0);
	o->want_hash = file_hash(fd);
	close(fd);
	REQUIRE(pipe2(pipefd, O_CLOEXEC) == 0 && pipe2(hashpipe, O_CLOEXEC) == 0);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		uint64_t h = FNV_INIT, n = 0;
		uint8_t buf[1];

		close(pipefd[1]);
		close(hashpipe[0]);
		while (read(pipefd[0], buf, 1) == 1) {
			h = fnv(h, buf, 1);
			if (++n % 4096 == 0)
				sleep_us(200);
		}
		h ^= n;
		_exit(write(hashpipe[1], &h, sizeof(h)) == sizeof(h) ? 0 : 1);
	}
	close(pipefd[0]);
	close(hashpipe[1]);
	t = interrupt_often(120);
	o->ret = pc_snapshot_writer_new(pipefd[1], &info, &w);
	if (o->ret == 0) {
		o->ret = write_test_snapshot(w);
		if (o->ret == 0)
			o->ret = pc_snapshot_writer_finish(w);
		pc_snapshot_writer_free(w);
	}
	timer_delete(t);
	o->alarms = alarms;
	fm_io_counts(&o->io);
	close(pipefd[1]);
	REQUIRE(read(hashpipe[0], &o->got_hash, sizeof(o->got_hash)) == sizeof(o->got_hash));
	close(hashpipe[0]);
	REQUIRE(waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
		WEXITSTATUS(status) == 0);
}

START_TEST(eintr_and_short_writes)
{
	struct eintr_out o;
	const char *why;

	make_files();
	why = in_child(eintr_writer_child, NULL, &o, sizeof(o), 120);
	ck_assert_msg(!why, "%s", why);
	ck_assert_msg(o.ret == 0, "writer: %s", strerror(-o.ret));
	ck_assert_msg(o.got_hash == o.want_hash, "the snapshot through the pipe differs");
	ck_assert_msg(o.io.write_eintr + o.io.write_short > 0,
		      "no write was interrupted (%d signals)", o.alarms);
	printf("writer into a pipe: %d signals, %llu writes interrupted, %llu short\n", o.alarms,
	       (unsigned long long)o.io.write_eintr, (unsigned long long)o.io.write_short);
	fflush(stdout);
}
END_TEST

/* ---- 5. disk full: the atomic writer on a small tmpfs ------------------------------ */

enum { FULL_NONE, FULL_ONE_PAGE, FULL_ALL };

struct enospc_out {
	int skip;
	char why[200];
	int created, wrote, finished;
	char note[300];
};

/* Fill dirfd's filesystem up to its last `keep` pages with "filler". */
static void fill_up(int dirfd, int keep_pages)
{
	static char page[65536];
	int fd = openat(dirfd, "filler", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ssize_t n;

	REQUIRE(fd >= 0);
	memset(page, 'f', sizeof(page));
	do
		n = write(fd, page, (size_t)ps);
	while (n > 0);
	REQUIRE(n < 0 && errno == ENOSPC);
	for (int i = 0; i < keep_pages; i++)
		REQUIRE(ftruncate(fd, lseek(fd, 0, SEEK_END) - (off_t)ps) == 0);
	close(fd);
}

static void enospc_child(void *arg, void *out)
{
	const int *full = arg;
	struct enospc_out *o = out;
	struct pc_snapshot_info info = snap_info();
	struct pc_snapshot_writer *w = NULL;
	const char *mnt = pc_test_path("tmpfs-64k");
	const char *why;
	int dirfd, fd;

	if (unshare(CLONE_NEWNS) < 0 || mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) < 0) {
		o->skip = 1;
		snprintf(o->why, sizeof(o->why), "no private mount namespace: %s", strerror(errno));
		return;
	}
	mkdir(mnt, 0755);
	if (mount("tmpfs", mnt, "tmpfs", 0, "size=64k") < 0) {
		o->skip = 1;
		snprintf(o->why, sizeof(o->why), "cannot mount a tmpfs: %s", strerror(errno));
		return;
	}
	dirfd = open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	REQUIRE(dirfd >= 0);
	fd = openat(dirfd, "snap.pcs", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	REQUIRE(fd >= 0);
	REQUIRE(write(fd, OLD_SNAPSHOT, strlen(OLD_SNAPSHOT)) == (ssize_t)strlen(OLD_SNAPSHOT));
	close(fd);
	if (*full == FULL_ONE_PAGE)
		fill_up(dirfd, 1);
	else if (*full == FULL_ALL)
		fill_up(dirfd, 0);
	o->created = pc_snapshot_writer_new_at(dirfd, "snap.pcs", 0644, &info, &w);
	o->wrote = o->finished = 1;
	if (o->created == 0) {
		if (*full == FULL_ONE_PAGE) {
			/* records that stay in the writer's buffer until finish */
			struct pc_snapshot_file m = snap_meta(1 << 30);

			o->wrote = pc_snapshot_write_runs(w, "only", &m, snap_runs(), 3000);
		} else {
			o->wrote = write_test_snapshot(w);
		}
		o->finished = pc_snapshot_writer_finish(w);
		pc_snapshot_writer_free(w);
	}
	why = dir_is_clean(dirfd, o->finished && o->created == 0 ? o->finished : -1,
			   OLD_SNAPSHOT);
	if (why)
		snprintf(o->note, sizeof(o->note), "%s", why);
	close(dirfd);
	umount2(mnt, MNT_DETACH);
}

START_TEST(enospc_leaves_the_older_snapshot)
{
	static const int fills[] = { FULL_NONE, FULL_ONE_PAGE, FULL_ALL };
	struct enospc_out o;
	const char *why;
	int full = fills[_i];

	make_files();
	why = in_child(enospc_child, &full, &o, sizeof(o), 120);
	ck_assert_msg(!why, "%s", why);
	if (o.skip) {
		pc_test_skip("enospc", o.why);
		return;
	}
	ck_assert_msg(!o.note[0], "%s", o.note);
	switch (full) {
	case FULL_NONE: /* the records outgrow the filesystem */
		ck_assert_int_eq(o.created, 0);
		ck_assert_int_eq(o.wrote, -ENOSPC);
		ck_assert_int_eq(o.finished, -ENOSPC);
		break;
	case FULL_ONE_PAGE: /* the header fits; the records, flushed by finish, do not */
		ck_assert_int_eq(o.created, 0);
		ck_assert_int_eq(o.wrote, 0);
		ck_assert_int_eq(o.finished, -ENOSPC);
		break;
	case FULL_ALL: /* not even the header */
		ck_assert_int_eq(o.created, -ENOSPC);
		break;
	}
}
END_TEST

/* ---- 6. files changing under the calls ----------------------------------------------- */

START_TEST(truncated_or_deleted_after_open)
{
	const char *path = pc_test_make_file("shrinking", 64, 0644, -1, -1);
	struct pc_residency *r;
	int fd, fd2;

	all_resident(path, 64);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	fd2 = open(path, O_WRONLY | O_CLOEXEC);
	ck_assert_int_ge(fd2, 0);

	/* truncated to half: the answer covers what is left */
	ck_assert_int_eq(ftruncate(fd2, (off_t)(32 * ps)), 0);
	ck_assert_int_eq(pc_residency(fd, 0, 0, 0, &r), 0);
	ck_assert_uint_eq(pc_residency_npages(r), 32);
	ck_assert_uint_eq(pc_residency_file_size(r), 32 * ps);
	ck_assert_uint_eq(pc_residency_resident(r), 32);
	ck_assert_int_eq(pc_residency_quality(r), PC_QUALITY_EXACT);
	pc_residency_free(r);
	/* asked about pages past the new end: nothing, exactly */
	ck_assert_int_eq(pc_residency(fd, 40 * ps, 8 * ps, 0, &r), 0);
	ck_assert_uint_eq(pc_residency_npages(r), 0);
	ck_assert_int_eq(pc_residency_quality(r), PC_QUALITY_EXACT);
	pc_residency_free(r);

	/* deleted: the open file is still answered, probes included */
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(pc_residency(fd, 0, 0, 0, &r), 0);
	ck_assert_uint_eq(pc_residency_resident(r), 32);
	pc_residency_free(r);
	ck_assert_int_eq(pc_residency(fd, 0, 0, PC_RES_FORCE_NOWAIT | PC_RES_ALLOW_PERTURB, &r), 0);
	ck_assert_uint_eq(pc_residency_npages(r), 32);
	ck_assert_uint_eq(pc_residency_resident(r), 32);
	pc_residency_free(r);

	/* truncated to nothing */
	ck_assert_int_eq(ftruncate(fd2, 0), 0);
	ck_assert_int_eq(pc_residency(fd, 0, 0, 0, &r), 0);
	ck_assert_uint_eq(pc_residency_npages(r), 0);
	ck_assert_uint_eq(pc_residency_resident(r), 0);
	ck_assert_int_eq(pc_residency_quality(r), PC_QUALITY_EXACT);
	pc_residency_free(r);
	close(fd2);
	close(fd);
}
END_TEST

struct resizer {
	int fd;
	atomic_int stop;
	unsigned long flips;
};

static void *resize_loop(void *arg)
{
	struct resizer *z = arg;
	char byte = 'z';

	while (!atomic_load(&z->stop)) {
		if (ftruncate(z->fd, 0) < 0 || pwrite(z->fd, &byte, 1, (off_t)(255 * ps)) != 1)
			break;
		z->flips++;
	}
	return NULL;
}

/* Sizes changing while pc_residency() runs: every answer is whole (as many
 * pages as its own file size says, no more resident than that), never a
 * crash (the mappings are never touched: no SIGBUS). */
START_TEST(truncated_while_scanned)
{
	const char *path = pc_test_make_file("flapping", 256, 0644, -1, -1);
	static const unsigned int flags[] = { 0, PC_RES_FORCE_MINCORE, PC_RES_COUNT_ONLY,
					      PC_RES_FORCE_NOWAIT | PC_RES_ALLOW_PERTURB };
	struct resizer z = { 0 };
	pthread_t t;
	int fd, rounds = pc_test_under_valgrind() ? 40 : 400;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	z.fd = open(path, O_RDWR | O_CLOEXEC);
	ck_assert_int_ge(z.fd, 0);
	ck_assert_int_eq(pthread_create(&t, NULL, resize_loop, &z), 0);
	for (int i = 0; i < rounds; i++) {
		struct pc_residency *r;
		unsigned int f = flags[i % PC_ARRAY_SIZE(flags)];
		int ret = pc_residency(fd, 0, 0, f, &r);

		ck_assert_msg(ret == 0, "round %d, flags %#x: %s", i, f, strerror(-ret));
		ck_assert_uint_eq(pc_residency_npages(r), (pc_residency_file_size(r) + ps - 1) / ps);
		ck_assert_uint_le(pc_residency_resident(r), pc_residency_npages(r));
		pc_residency_free(r);
	}
	atomic_store(&z.stop, 1);
	pthread_join(t, NULL);
	ck_assert_uint_gt(z.flips, 0);
	close(z.fd);
	close(fd);
}
END_TEST

/* The reference snapshot's items (files and runs, as read_snapshot()
 * hashes them), to compare a partial read with. */
#define MAX_ITEMS (SNAP_RUNS + 64)
static uint64_t *reference_items(size_t *n, char *digest, size_t dn)
{
	uint64_t *items = malloc(MAX_ITEMS * sizeof(*items));
	int fd = open(snap_path, O_RDONLY | O_CLOEXEC);

	ck_assert_ptr_nonnull(items);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(read_snapshot(fd, digest, dn, items, MAX_ITEMS, n), 0);
	close(fd);
	return items;
}

struct appender {
	const char *path;
	uint64_t seed;
};

/* Copy the reference snapshot into path in pieces of 1..8192 bytes, with
 * pauses: a writer that has not finished yet. */
static void *append_loop(void *arg)
{
	struct appender *a = arg;
	static uint8_t buf[8192];
	int in = open(snap_path, O_RDONLY | O_CLOEXEC);
	int out = open(a->path, O_WRONLY | O_APPEND | O_CLOEXEC);
	uint64_t x = a->seed;
	ssize_t n;

	if (in < 0 || out < 0)
		return (void *)1;
	for (;;) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		n = read(in, buf, 1 + (size_t)((x >> 33) % sizeof(buf)));
		if (n <= 0)
			break;
		if (write(out, buf, (size_t)n) != n)
			return (void *)1;
		sleep_us((long)((x >> 20) % 300));
	}
	close(in);
	close(out);
	return NULL;
}

START_TEST(snapshot_appended_while_read)
{
	size_t nref, nread;
	uint64_t *ref, *got;
	char want[300], digest[300];
	const char *path;
	int ret, stopped_short = 0;

	make_files();
	ref = reference_items(&nref, want, sizeof(want));
	got = malloc(MAX_ITEMS * sizeof(*got));
	ck_assert_ptr_nonnull(got);
	path = pc_test_path("growing.pcs");
	for (int round = 0; round < 8; round++) {
		struct appender a = { .path = path, .seed = (uint64_t)round + 1 };
		pthread_t t;
		void *res;
		int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(pthread_create(&t, NULL, append_loop, &a), 0);
		sleep_us(round * 500);
		ret = read_snapshot(fd, digest, sizeof(digest), got, MAX_ITEMS, &nread);
		pthread_join(t, &res);
		ck_assert_ptr_null(res);
		/* the whole snapshot, or a truncation: never an item that is not
		 * the reference's at that place */
		if (ret == 0) {
			ck_assert_str_eq(digest, want);
		} else {
			ck_assert_msg(ret == -EBADMSG && !strncmp(digest, "truncated", 9),
				      "round %d: %s (%s)", round, strerror(-ret), digest);
			stopped_short++;
		}
		ck_assert_uint_le(nread, nref);
		for (size_t i = 0; i < nread; i++)
			ck_assert_msg(got[i] == ref[i], "round %d: item %zu differs", round, i);
		/* the finished file reads whole */
		ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
		ck_assert_int_eq(read_snapshot(fd, digest, sizeof(digest), NULL, 0, NULL), 0);
		ck_assert_str_eq(digest, want);
		/* and anything appended after its end record is refused */
		ck_assert_int_eq(pwrite(fd, "PCSNAP", 6, lseek(fd, 0, SEEK_END)), 6);
		ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
		ret = read_snapshot(fd, digest, sizeof(digest), got, MAX_ITEMS, &nread);
		ck_assert_msg(ret == -EBADMSG && strstr(digest, "after the end record"), "%s",
			      digest);
		close(fd);
	}
	printf("snapshot read while written: %d of 8 reads stopped at a truncation\n",
	       stopped_short);
	fflush(stdout);
	free(got);
	free(ref);
}
END_TEST

/* ---- 7. cachestat(2) refused with ENOSYS by a seccomp filter ---------------------- */

#ifndef __NR_cachestat
#define __NR_cachestat 451
#endif

struct enosys_out {
	int filtered, detected, cachestat, forced;
	int ret[2], quality[2], source[2];
	uint64_t resident[2];
	int bits_match;
};

static void enosys_child(void *arg, void *out)
{
	struct sock_filter insns[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_cachestat, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = PC_ARRAY_SIZE(insns), .filter = insns };
	const unsigned char *truth = arg;
	struct enosys_out *o = out;
	struct pc_cachestat cs;
	struct pc_residency *r;
	int fd = open(mixed_path, O_RDONLY | O_CLOEXEC);

	REQUIRE(fd >= 0);
	REQUIRE(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0);
	/* prctl: valgrind 3.19 does not know seccomp(2) */
	REQUIRE(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) == 0);
	o->filtered = syscall(__NR_cachestat, fd, NULL, NULL, 0) < 0 && errno == ENOSYS;
	o->detected = pc_detect_cachestat();
	o->cachestat = pc_cachestat(fd, 0, 0, &cs);
	o->forced = pc_residency(fd, 0, 0, PC_RES_FORCE_CACHESTAT, &r);
	if (o->forced == 0)
		pc_residency_free(r);
	o->bits_match = 1;
	for (int i = 0; i < 2; i++) {
		o->ret[i] = pc_residency(fd, 0, 0, i ? PC_RES_COUNT_ONLY : 0, &r);
		if (o->ret[i] < 0)
			continue;
		o->quality[i] = pc_residency_quality(r);
		o->source[i] = pc_residency_source(r);
		o->resident[i] = pc_residency_resident(r);
		for (uint64_t p = 0; !i && p < MIXED_PAGES; p++)
			if (pc_residency_test(r, p) != (truth[p] & 1))
				o->bits_match = 0;
		pc_residency_free(r);
	}
	close(fd);
}

START_TEST(cachestat_enosys)
{
	struct enosys_out o;
	unsigned char *truth;
	uint64_t want = 0;
	const char *why;

	make_files();
	mixed_pattern();
	ck_assert_uint_eq(pc_test_mincore(mixed_path, &truth), MIXED_PAGES);
	for (int p = 0; p < MIXED_PAGES; p++)
		want += truth[p] & 1;
	why = in_child(enosys_child, truth, &o, sizeof(o), 120);
	free(truth);
	ck_assert_msg(!why, "%s", why);
	ck_assert_msg(o.filtered, "the filter did not refuse cachestat");
	ck_assert_int_eq(o.detected, PC_CACHESTAT_ABSENT);
	ck_assert_int_eq(o.cachestat, -ENOSYS);
	ck_assert_int_eq(o.forced, -EOPNOTSUPP);
	for (int i = 0; i < 2; i++) {
		ck_assert_msg(o.ret[i] == 0, "%s: %s", i ? "count-only" : "bitmap",
			      strerror(-o.ret[i]));
		ck_assert_int_eq(o.quality[i], PC_QUALITY_EXACT);
		ck_assert_int_eq(o.source[i], PC_SOURCE_MINCORE);
		ck_assert_uint_eq(o.resident[i], want);
	}
	ck_assert_msg(o.bits_match, "the bitmap differs from mincore");
}
END_TEST

/*
 * The cases of this run's share (pc_test_shard()): each iteration of a loop
 * test is a case, numbered from offset. The scenarios that detect RWF_NOWAIT
 * semantics (every child anew: about a second each without cachestat) sit
 * next to each other; the offsets of the three fault kinds spread them over
 * the parts.
 */
static void add_cases(TCase *tc, const TTest *t, int count, unsigned int offset)
{
	unsigned int k, n;

	pc_test_shard(&k, &n);
	for (int i = 0; i < count; i++)
		if (((unsigned int)i + offset) % n == k)
			_tcase_add_test(tc, t, 0, 0, i, i + 1);
}

int main(void)
{
	Suite *s = suite_create("faults");
	TCase *tc = tcase_create("faults");
	const int nscen = (int)PC_ARRAY_SIZE(scenarios);
	unsigned int k, n;
	SRunner *sr;
	int failed;

	ps = (uint64_t)pc_page_size();
	pc_test_dir(); /* exits 77 on tmpfs; forked tests share it */
	tcase_set_timeout(tc, 1200);
	pc_test_shard(&k, &n);
	if (n > 1)
		printf("shard %u/%u of the cases\n", k + 1, n);
	fflush(stdout); /* not once more from every forked case */
	add_cases(tc, malloc_failure_once, nscen, 0);
	add_cases(tc, malloc_failure_persisting, nscen, 1);
	add_cases(tc, emfile, nscen, 0);
	add_cases(tc, emfile_without_spare_descriptors, 1, 0);
	add_cases(tc, mmap_failure_under_rlimit_as, (int)PC_ARRAY_SIZE(as_cases), 1);
	add_cases(tc, eintr_and_short_reads, 1, 1);
	add_cases(tc, eintr_and_short_writes, 1, 0);
	add_cases(tc, enospc_leaves_the_older_snapshot, 3, 1);
	add_cases(tc, truncated_or_deleted_after_open, 1, 0);
	add_cases(tc, truncated_while_scanned, 1, 1);
	add_cases(tc, snapshot_appended_while_read, 1, 0);
	add_cases(tc, cachestat_enosys, 1, 1);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	pc_test_cases_dir(); /* a failed case leaves no directory behind */
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
