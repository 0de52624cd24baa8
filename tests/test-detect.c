/* SPDX-License-Identifier: MIT */
/*
 * Detection on this machine's kernel (Linux 6.18, ext4): these cases assert
 * this kernel's answers on purpose. The decision table itself is tested on
 * a scripted backend elsewhere.
 *
 *   mincore    gated-faked (root asks on behalf of users; users see the same)
 *   cachestat  gated (absent under valgrind, which returns ENOSYS)
 *   nowait     destructive on ext4, unsupported on tmpfs
 *   io_uring   1
 *
 * Detection is cached per process, so the cases that need a process that
 * has not detected anything yet run first; when Check does not fork (under
 * valgrind) a later one that finds detection already done says SKIP.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "pagecache/pagecache.h"
#include "pc-test.h"

#define PC_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define NTHREADS 8
#define FILE_PAGES 64

static int nofork;          /* Check runs every case in this one process */
static int detected_here;   /* this process has called a detector */

/* 1 when the case may run: detection must not have happened in this process. */
static int fresh_process(const char *name)
{
	if (nofork && detected_here) {
		pc_test_skip(name, "Check does not fork here and detection already ran");
		return 0;
	}
	return 1;
}

/* ---- directories --------------------------------------------------------- */

/* A private directory on tmpfs, removed at exit. */
static char shm_dir[64];

static void shm_cleanup(void)
{
	char cmd[128];

	if (shm_dir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf -- '%s'", shm_dir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", shm_dir);
		shm_dir[0] = '\0';
	}
}

static const char *shm_path(void)
{
	if (shm_dir[0])
		return shm_dir;
	snprintf(shm_dir, sizeof(shm_dir), "/dev/shm/pc-detect-XXXXXX");
	if (!mkdtemp(shm_dir)) {
		shm_dir[0] = '\0';
		return NULL;
	}
	atexit(shm_cleanup);
	return shm_dir;
}

/* A subdirectory of the scratch dir with the given mode and owner. */
static const char *subdir(const char *name, mode_t mode, int uid)
{
	const char *d = pc_test_path(name);

	ck_assert_int_eq(mkdir(d, 0755), 0);
	if (uid >= 0)
		ck_assert_int_eq(chown(d, (uid_t)uid, (gid_t)uid), 0);
	ck_assert_int_eq(chmod(d, mode), 0);
	return d;
}

static int open_dir(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	ck_assert_msg(fd >= 0, "%s: %s", path, strerror(errno));
	return fd;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The directory's entries, sorted, joined with '/'. Malloc'ed. */
static char *listing(const char *path)
{
	char *names[256], *out;
	size_t n = 0, len = 1;
	struct dirent *de;
	DIR *d = opendir(path);

	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d)) && n < PC_ARRAY_LEN(names)) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		names[n] = strdup(de->d_name);
		len += strlen(de->d_name) + 1;
		n++;
	}
	closedir(d);
	qsort(names, n, sizeof(names[0]), cmp_str);
	out = calloc(1, len);
	ck_assert_ptr_nonnull(out);
	for (size_t i = 0; i < n; i++) {
		strcat(out, names[i]);
		strcat(out, "/");
		free(names[i]);
	}
	return out;
}

static int count_fds(void)
{
	struct dirent *de;
	int n = 0;
	DIR *d = opendir("/proc/self/fd");

	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n - 1; /* the directory's own fd */
}

static int resident_count(const char *path)
{
	unsigned char *v;
	uint64_t n = pc_test_mincore(path, &v);
	int c = 0;

	for (uint64_t i = 0; i < n; i++)
		c += v[i] & 1;
	free(v);
	return c;
}

/* ---- as uid 65534 -------------------------------------------------------- */

struct nobody_answers {
	int mincore, cachestat, io_uring;
	int nowait_own_dir, nowait_shm, nowait_fdcwd;
};

struct nobody_dirs {
	const char *own;   /* a directory uid 65534 owns, on ext4 */
	const char *shm;   /* a directory uid 65534 owns, on tmpfs */
};

static int nobody_detect_fn(void *arg, void *buf, size_t bufsize)
{
	const struct nobody_dirs *d = arg;
	struct nobody_answers *a = buf;
	int fd;

	(void)bufsize;
	a->mincore = pc_detect_mincore();
	a->cachestat = pc_detect_cachestat();
	a->io_uring = pc_detect_io_uring();
	fd = open(d->own, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	a->nowait_own_dir = fd < 0 ? -1000 : pc_detect_nowait(fd);
	if (fd >= 0)
		close(fd);
	fd = open(d->shm, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	a->nowait_shm = fd < 0 ? -1000 : pc_detect_nowait(fd);
	if (fd >= 0)
		close(fd);
	a->nowait_fdcwd = chdir(d->own) < 0 ? -1000 : pc_detect_nowait(AT_FDCWD);
	return 0;
}

START_TEST(nobody_gets_the_same_answers)
{
	struct nobody_answers a;
	struct nobody_dirs d;
	const char *shm;
	char shm_sub[128];

	if (!fresh_process("nobody_gets_the_same_answers"))
		return;
	d.own = subdir("nobody-own", 0755, PC_TEST_NOBODY);
	shm = shm_path();
	if (!shm) {
		pc_test_skip("nobody_gets_the_same_answers", "no directory on /dev/shm");
		return;
	}
	ck_assert_int_eq(chmod(shm, 0755), 0);
	snprintf(shm_sub, sizeof(shm_sub), "%s/nobody", shm);
	ck_assert_int_eq(mkdir(shm_sub, 0755), 0);
	ck_assert_int_eq(chown(shm_sub, PC_TEST_NOBODY, PC_TEST_NOBODY), 0);
	d.shm = shm_sub;
	memset(&a, 0, sizeof(a));
	ck_assert_int_eq(pc_test_as_nobody(nobody_detect_fn, &d, &a, sizeof(a)), 0);
	pc_test_assert_kernel("a.mincore", a.mincore, pc_test_expect_mincore());
	pc_test_assert_kernel("a.cachestat", a.cachestat, pc_test_expect_cachestat());
	pc_test_assert_kernel("a.io_uring", a.io_uring, pc_test_expect_io_uring());
	pc_test_assert_kernel("a.nowait_own_dir", a.nowait_own_dir, pc_test_expect_nowait());
	ck_assert_int_eq(a.nowait_shm, PC_NOWAIT_UNSUPPORTED);
	pc_test_assert_kernel("a.nowait_fdcwd", a.nowait_fdcwd, pc_test_expect_nowait());
}
END_TEST

/* As uid 65534, on directory arg: pc_detect_nowait() in buf's one int;
 * with two ints, pc_detect_nowait_flags() with no flag, then with every
 * flag but PC_DETECT_ALLOW_PERTURB (unknown ones: -EINVAL). */
static int nobody_nowait_fn(void *arg, void *buf, size_t bufsize)
{
	const char *dir = arg;
	int *mode = buf;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (bufsize == sizeof(int)) {
		mode[0] = pc_detect_nowait(fd);
	} else {
		mode[0] = pc_detect_nowait_flags(fd, 0);
		mode[1] = pc_detect_nowait_flags(fd, ~PC_DETECT_ALLOW_PERTURB);
	}
	close(fd);
	return 0;
}

/* A directory uid 65534 can read but not write, holding only a file the
 * kernel hides from it: nothing to detect with there, so the mode is the
 * one a scratch file teaches in a directory it may write elsewhere (ext4
 * both: the kernel's shared read path), and nothing here is touched. */
START_TEST(nobody_nowait_learned_elsewhere_where_nothing_here_is_usable)
{
	const char *dir = subdir("ro-hidden", 0755, -1);
	const char *path = pc_test_make_file("ro-hidden/hidden", FILE_PAGES, 0644, 0, 0);
	char *before, *after;
	int mode = -999, resident;

	if (!fresh_process("nobody_nowait_learned_elsewhere_where_nothing_here_is_usable"))
		return;
	pc_test_set_pattern(path, NULL, 0);
	resident = resident_count(path);
	ck_assert_int_eq(resident, 0);
	before = listing(dir);
	ck_assert_int_eq(pc_test_as_nobody(nobody_nowait_fn, (void *)dir, &mode, sizeof(mode)), 0);
	after = listing(dir);
	pc_test_assert_kernel("nobody's pc_detect_nowait()", mode, pc_test_expect_nowait());
	ck_assert_str_eq(before, after);
	ck_assert_int_eq(resident_count(path), resident); /* the hidden file was left alone */
	free(before);
	free(after);
}
END_TEST

/* A directory uid 65534 cannot write, holding a 0666 file it may see:
 * detection may use one cold page of it (the header's promise), and
 * writes nothing there. */
START_TEST(nobody_nowait_uses_one_cold_page_of_a_visible_file)
{
	const char *dir = subdir("ro-visible", 0755, -1);
	const char *path = pc_test_make_file("ro-visible/open", FILE_PAGES, 0666, 0, 0);
	char *before, *after;
	int mode = -999, resident, resident_before;

	if (!fresh_process("nobody_nowait_uses_one_cold_page_of_a_visible_file"))
		return;
	pc_test_set_pattern(path, NULL, 0);
	resident_before = resident_count(path);
	ck_assert_int_eq(resident_before, 0);
	before = listing(dir);
	ck_assert_int_eq(pc_test_as_nobody(nobody_nowait_fn, (void *)dir, &mode, sizeof(mode)), 0);
	after = listing(dir);
	pc_test_assert_kernel("mode", mode, pc_test_expect_nowait());
	ck_assert_str_eq(before, after);
	resident = resident_count(path) - resident_before;
	ck_assert_msg(resident <= 1, "detection cached %d pages of the file it used, not one",
		      resident);
	free(before);
	free(after);
}
END_TEST

/* The same directory and file, asked without PC_DETECT_ALLOW_PERTURB: no
 * scratch file can be made, the cold page is not used: unknown, and the
 * file's pages stay out. */
START_TEST(nobody_nowait_flags_without_perturb_leave_the_cache_alone)
{
	const char *dir = subdir("ro-visible-np", 0755, -1);
	const char *path = pc_test_make_file("ro-visible-np/open", FILE_PAGES, 0666, 0, 0);
	int mode[2] = { -999, -999 };

	if (!fresh_process("nobody_nowait_flags_without_perturb_leave_the_cache_alone"))
		return;
	pc_test_set_pattern(path, NULL, 0);
	ck_assert_int_eq(resident_count(path), 0);
	ck_assert_int_eq(pc_test_as_nobody(nobody_nowait_fn, (void *)dir, mode,
					   sizeof(mode)), 0);
	/* learned with a scratch file elsewhere, not with the cold page here */
	pc_test_assert_kernel("nobody's pc_detect_nowait_flags(0)", mode[0], pc_test_expect_nowait());
	ck_assert_int_eq(mode[1], -EINVAL);
	ck_assert_int_eq(resident_count(path), 0);
}
END_TEST

/* ---- from several threads at once ---------------------------------------- */

struct thread_answers {
	pthread_barrier_t *barrier;
	int scratch_fd, shm_fd;
	int mincore, cachestat, io_uring, nowait_scratch, nowait_shm;
};

static void *detect_thread(void *arg)
{
	struct thread_answers *a = arg;

	pthread_barrier_wait(a->barrier);
	a->nowait_scratch = pc_detect_nowait(a->scratch_fd);
	a->mincore = pc_detect_mincore();
	a->nowait_shm = a->shm_fd >= 0 ? pc_detect_nowait(a->shm_fd) : PC_NOWAIT_UNSUPPORTED;
	a->cachestat = pc_detect_cachestat();
	a->io_uring = pc_detect_io_uring();
	return NULL;
}

START_TEST(eight_threads_at_once_agree)
{
	struct thread_answers a[NTHREADS];
	pthread_t t[NTHREADS];
	pthread_barrier_t barrier;
	const char *shm = shm_path();
	const char *dir = subdir("threads", 0755, -1);
	char *before = listing(dir), *after;
	int scratch_fd = open_dir(dir);
	int shm_fd = shm ? open_dir(shm) : -1;

	if (!fresh_process("eight_threads_at_once_agree"))
		return;
	detected_here = 1;
	ck_assert_int_eq(pthread_barrier_init(&barrier, NULL, NTHREADS), 0);
	for (int i = 0; i < NTHREADS; i++) {
		a[i] = (struct thread_answers){ .barrier = &barrier, .scratch_fd = scratch_fd,
						.shm_fd = shm_fd };
		ck_assert_int_eq(pthread_create(&t[i], NULL, detect_thread, &a[i]), 0);
	}
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&barrier);
	for (int i = 0; i < NTHREADS; i++) {
		pc_test_assert_kernel("a[i].mincore", a[i].mincore, pc_test_expect_mincore());
		pc_test_assert_kernel("a[i].cachestat", a[i].cachestat, pc_test_expect_cachestat());
		pc_test_assert_kernel("a[i].io_uring", a[i].io_uring, pc_test_expect_io_uring());
		pc_test_assert_kernel("a[i].nowait_scratch", a[i].nowait_scratch, pc_test_expect_nowait());
		ck_assert_int_eq(a[i].nowait_shm, PC_NOWAIT_UNSUPPORTED);
	}
	after = listing(dir);
	ck_assert_str_eq(before, after);
	free(before);
	free(after);
	close(scratch_fd);
	if (shm_fd >= 0)
		close(shm_fd);
}
END_TEST

/* ---- this kernel's answers ----------------------------------------------- */

START_TEST(mincore_is_the_kernel_tables)
{
	detected_here = 1;
	pc_test_assert_kernel("pc_detect_mincore()", pc_detect_mincore(), pc_test_expect_mincore());
	ck_assert_ptr_nonnull(pc_mincore_mode_name(pc_detect_mincore()));
}
END_TEST

START_TEST(cachestat_is_the_kernel_tables)
{
	detected_here = 1;
	pc_test_assert_kernel("pc_detect_cachestat()", pc_detect_cachestat(), pc_test_expect_cachestat());
	ck_assert_ptr_nonnull(pc_cachestat_mode_name(pc_detect_cachestat()));
}
END_TEST

START_TEST(io_uring_works)
{
	detected_here = 1;
	pc_test_assert_kernel("pc_detect_io_uring()", pc_detect_io_uring(), pc_test_expect_io_uring());
}
END_TEST

START_TEST(nowait_on_ext4_is_the_kernel_tables_and_writes_nothing)
{
	const char *dir = subdir("nowait-ext4", 0755, -1);
	const char *path = pc_test_make_file("nowait-ext4/cold", FILE_PAGES, 0644, -1, -1);
	char *before, *after;
	int fd, fds_before, resident;

	detected_here = 1;
	pc_test_set_pattern(path, NULL, 0);
	resident = resident_count(path);
	ck_assert_int_eq(resident, 0);
	fds_before = count_fds();
	before = listing(dir);
	fd = open_dir(dir);
	pc_test_assert_kernel("pc_detect_nowait(fd)", pc_detect_nowait(fd), pc_test_expect_nowait());
	ck_assert_ptr_nonnull(pc_nowait_mode_name(pc_detect_nowait(fd)));
	close(fd);
	after = listing(dir);
	ck_assert_str_eq(before, after);
	/* it used its own O_TMPFILE: the files already there were not touched */
	ck_assert_int_eq(resident_count(path), resident);
	ck_assert_int_eq(count_fds(), fds_before);
	free(before);
	free(after);
}
END_TEST

START_TEST(nowait_unsupported_on_tmpfs_and_writes_nothing)
{
	const char *shm = shm_path();
	char *before, *after;
	struct statfs sfs;
	int fd;

	detected_here = 1;
	if (!shm || statfs(shm, &sfs) < 0 || sfs.f_type != TMPFS_MAGIC) {
		pc_test_skip("nowait_unsupported_on_tmpfs", "/dev/shm is not a tmpfs here");
		return;
	}
	before = listing(shm);
	fd = open_dir(shm);
	ck_assert_int_eq(pc_detect_nowait(fd), PC_NOWAIT_UNSUPPORTED);
	close(fd);
	after = listing(shm);
	ck_assert_str_eq(before, after);
	free(before);
	free(after);
	fd = open_dir("/dev/shm");
	ck_assert_int_eq(pc_detect_nowait(fd), PC_NOWAIT_UNSUPPORTED);
	close(fd);
}
END_TEST

START_TEST(nowait_at_fdcwd_is_the_current_directory)
{
	const char *dir = subdir("cwd", 0755, -1);
	const char *shm = shm_path();
	char *before = listing(dir), *after;

	detected_here = 1;
	ck_assert_int_eq(chdir(dir), 0);
	pc_test_assert_kernel("pc_detect_nowait(AT_FDCWD)", pc_detect_nowait(AT_FDCWD), pc_test_expect_nowait());
	after = listing(dir);
	ck_assert_str_eq(before, after);
	if (shm) {
		ck_assert_int_eq(chdir(shm), 0);
		ck_assert_int_eq(pc_detect_nowait(AT_FDCWD), PC_NOWAIT_UNSUPPORTED);
	}
	ck_assert_int_eq(chdir("/"), 0);
	free(before);
	free(after);
}
END_TEST

START_TEST(nowait_bad_dirfds)
{
	const char *path = pc_test_make_file("not-a-dir", 1, 0644, -1, -1);
	int sv[2], fd;

	detected_here = 1;
	ck_assert_int_eq(pc_detect_nowait(-1), -EBADF);
	ck_assert_int_eq(pc_detect_nowait(-2), -EBADF);
	ck_assert_int_eq(pc_detect_nowait(1000000), -EBADF);
	fd = open_dir(pc_test_dir());
	close(fd);
	ck_assert_int_eq(pc_detect_nowait(fd), -EBADF); /* closed */
	fd = open(path, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pc_detect_nowait(fd), -ENOTDIR);
	close(fd);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	ck_assert_int_eq(pc_detect_nowait(sv[0]), -ENOTDIR);
	close(sv[0]);
	close(sv[1]);
	/* an O_PATH directory fd names a directory well enough */
	fd = open(pc_test_dir(), O_PATH | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	pc_test_assert_kernel("pc_detect_nowait(fd)", pc_detect_nowait(fd), pc_test_expect_nowait());
	close(fd);
}
END_TEST

START_TEST(mincore_and_cachestat_detection_leave_nothing_behind)
{
	const char *dir = subdir("side-effects", 0755, -1);
	char *before = listing(dir), *after;
	int fds_before = count_fds();

	detected_here = 1;
	ck_assert_int_eq(chdir(dir), 0);
	pc_test_assert_kernel("pc_detect_mincore()", pc_detect_mincore(), pc_test_expect_mincore());
	pc_test_assert_kernel("pc_detect_cachestat()", pc_detect_cachestat(), pc_test_expect_cachestat());
	pc_test_assert_kernel("pc_detect_io_uring()", pc_detect_io_uring(), pc_test_expect_io_uring());
	ck_assert_int_eq(chdir("/"), 0);
	after = listing(dir);
	ck_assert_str_eq(before, after);
	ck_assert_int_eq(count_fds(), fds_before);
	free(before);
	free(after);
}
END_TEST

/* ---- the predicate agrees with pc_residency's verdict -------------------- */

struct verdict {
	int can;       /* pc_can_do_mincore */
	int ret;       /* pc_residency */
	int quality;
};

static int verdict_fn(void *arg, void *buf, size_t bufsize)
{
	const char *path = arg;
	struct verdict *v = buf;
	struct pc_residency *r = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	(void)bufsize;
	if (fd < 0)
		return -errno;
	v->can = pc_can_do_mincore(fd);
	v->ret = pc_residency(fd, 0, 0, 0, &r);
	v->quality = v->ret == 0 ? pc_residency_quality(r) : -1;
	pc_residency_free(r);
	close(fd);
	return 0;
}

/* The RWF_NOWAIT mode (root's detection) of the directory holding path. */
static int nowait_of(const char *path)
{
	char dir[4096];
	char *slash;
	int fd, mode;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	ck_assert_ptr_nonnull(slash);
	*slash = '\0';
	fd = open_dir(dir);
	mode = pc_detect_nowait(fd);
	close(fd);
	return mode;
}

static void assert_verdict(const char *path, int nobody, int can)
{
	struct verdict v = { -999, -999, -999 };
	int ret;

	if (nobody)
		ret = pc_test_as_nobody(verdict_fn, (void *)path, &v, sizeof(v));
	else
		ret = verdict_fn((void *)path, &v, sizeof(v));
	ck_assert_int_eq(ret, 0);
	ck_assert_msg(v.can == can, "%s as %s: pc_can_do_mincore %d", path,
		      nobody ? "nobody" : "root", v.can);
	ck_assert_int_eq(v.ret, 0);
	/* what mincore hides, a clean RWF_NOWAIT probe still answers exactly */
	ck_assert_msg(v.quality == (can || nowait_of(path) == PC_NOWAIT_CLEAN ?
					    PC_QUALITY_EXACT : PC_QUALITY_UNKNOWN),
		      "%s as %s: quality %d", path, nobody ? "nobody" : "root", v.quality);
}

START_TEST(can_do_mincore_agrees_with_residency)
{
	static const uint64_t p[] = { 1, 7 };
	const char *own = pc_test_make_file("v-own", 8, 0644, -1, -1);
	const char *open666 = pc_test_make_file("v-0666", 8, 0666, 0, 0);
	const char *acl = pc_test_make_file("v-acl", 8, 0644, 0, 0);
	const char *mine = pc_test_make_file("v-nobody-0444", 8, 0444, PC_TEST_NOBODY,
					     PC_TEST_NOBODY);
	const char *hidden;
	char cmd[4200];
	int fd;

	detected_here = 1;
	subdir("v-hid", 0755, -1);
	hidden = pc_test_make_file("v-hid/hidden", 8, 0644, 0, 0);
	pc_test_set_pattern(hidden, p, PC_ARRAY_LEN(p));
	assert_verdict(own, 0, 1);
	assert_verdict(hidden, 0, 1);  /* root: CAP_FOWNER */
	assert_verdict(open666, 1, 1);
	assert_verdict(mine, 1, 1);
	assert_verdict(hidden, 1, 0);
	snprintf(cmd, sizeof(cmd), "setfacl -m u:%d:rw -- '%s' 2>/dev/null", PC_TEST_NOBODY, acl);
	if (system(cmd) == 0)
		assert_verdict(acl, 1, 1);
	else
		pc_test_skip("can_do_mincore, ACL file", "setfacl refused here");

	ck_assert_int_eq(pc_can_do_mincore(-1), -EBADF);
	fd = open(own, O_RDONLY | O_CLOEXEC);
	close(fd);
	ck_assert_int_eq(pc_can_do_mincore(fd), -EBADF);
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
	Suite *s = suite_create("detect");
	TCase *fresh = tcase_create("fresh");
	TCase *kernel = tcase_create("kernel");
	SRunner *sr;
	int failed;

	/* Each forked case makes its own scratch directory (a shared one would
	 * be removed by the first case's exit handler); only the tmpfs check
	 * is done here. */
	if (pc_test_on_tmpfs())
		return 77;
	/* first: the cases that need a process that has not detected yet */
	if (pc_test_is_root()) {
		tcase_add_test(fresh, nobody_gets_the_same_answers);
		tcase_add_test(fresh, nobody_nowait_learned_elsewhere_where_nothing_here_is_usable);
		tcase_add_test(fresh, nobody_nowait_uses_one_cold_page_of_a_visible_file);
		tcase_add_test(fresh, nobody_nowait_flags_without_perturb_leave_the_cache_alone);
	} else {
		pc_test_skip("uid 65534 cases", "not root: cannot switch to uid 65534");
	}
	tcase_add_test(fresh, eight_threads_at_once_agree);
	suite_add_tcase(s, fresh);

	tcase_add_test(kernel, mincore_is_the_kernel_tables);
	tcase_add_test(kernel, cachestat_is_the_kernel_tables);
	tcase_add_test(kernel, io_uring_works);
	tcase_add_test(kernel, nowait_on_ext4_is_the_kernel_tables_and_writes_nothing);
	tcase_add_test(kernel, nowait_unsupported_on_tmpfs_and_writes_nothing);
	tcase_add_test(kernel, nowait_at_fdcwd_is_the_current_directory);
	tcase_add_test(kernel, nowait_bad_dirfds);
	tcase_add_test(kernel, mincore_and_cachestat_detection_leave_nothing_behind);
	if (pc_test_is_root())
		tcase_add_test(kernel, can_do_mincore_agrees_with_residency);
	suite_add_tcase(s, kernel);

	sr = srunner_create(s);
	nofork = srunner_fork_status(sr) == CK_NOFORK;
	pc_test_cases_dir(); /* a failed case leaves no directory behind */
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
