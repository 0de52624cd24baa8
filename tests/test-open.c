/* SPDX-License-Identifier: MIT */
/*
 * What the library opens on its own (SECURITY.md): a device node is never
 * opened unless the caller handed it over, whatever a name was swapped for.
 * Opening a device runs its driver (a watchdog arms, a tape rewinds, a tty
 * may become the controlling terminal), so the library decides the type on
 * an O_PATH fd first. inotify's IN_OPEN on a device node of our own (made
 * with mknod in the scratch directory) tells whether anyone opened it; an
 * O_PATH open raises no event, a real one does (checked first, every time).
 *
 * Runs as root (mknod, uid 65534).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "backend.h"
#include "pagecache/pagecache.h"
#include "pc-test.h"

static size_t ps;

/*
 * A name swapped between readdir and the open, every time: this program's
 * openat() (the library is linked in statically, so its calls land here)
 * renames swap_with over swap_name right before opening swap_name, once.
 */
static const char *swap_name, *swap_with;

int openat(int dirfd, const char *name, int flags, ...);
int openat(int dirfd, const char *name, int flags, ...)
{
	mode_t mode = 0;

	if (flags & (O_CREAT | __O_TMPFILE)) {
		va_list ap;

		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	if (swap_name && strcmp(name, swap_name) == 0) {
		swap_name = NULL;
		if (renameat(AT_FDCWD, swap_with, dirfd, name) < 0)
			perror("test-open: renameat");
	}
	return (int)syscall(SYS_openat, dirfd, name, flags, mode);
}

/* A character device node of our own (1:3 is null, 1:5 zero), world
 * readable and writable, with an inotify watch for opens on it. Returns
 * the inotify fd, or -1 after printing a SKIP line when this cannot be
 * arranged here (no CAP_MKNOD, a nodev mount). */
static int watched_device(const char *what, const char *path, unsigned int minor_)
{
	int ino, fd;

	unlink(path);
	if (mknod(path, S_IFCHR | 0666, makedev(1, minor_)) < 0) {
		pc_test_skip(what, "mknod refused here");
		return -1;
	}
	chmod(path, 0666);
	ino = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	ck_assert_int_ge(ino, 0);
	ck_assert_int_ge(inotify_add_watch(ino, path, IN_OPEN), 0);
	/* the detector works: a real open is seen, an O_PATH one is not */
	fd = open(path, O_PATH | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	close(fd);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		pc_test_skip(what, "the scratch directory is mounted nodev");
		close(ino);
		return -1;
	}
	close(fd);
	return ino;
}

/* IN_OPEN events waiting on ino (drains them). */
static int opens_seen(int ino)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	int n = 0;
	ssize_t len;

	while ((len = read(ino, buf, sizeof(buf))) > 0) {
		for (char *p = buf; p < buf + len;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;

			n += (ev->mask & IN_OPEN) != 0;
			p += sizeof(*ev) + ev->len;
		}
	}
	return n;
}

struct swap {
	const char *file;   /* the file to map, in a directory uid 65534 may write */
	const char *device; /* what its name is replaced with, through a symlink */
};

struct swap_result {
	int ret;
	int quality;
};

/* As uid 65534 (no map_files: the library must use the VMA's path): map a
 * file of our own and delete it. /proc/self/maps now names it "NAME
 * (deleted)", and anyone who may write the directory can put a symlink to a
 * device under that name before the library looks. */
static int swap_fn(void *arg, void *buf, size_t bufsize)
{
	const struct swap *s = arg;
	struct swap_result *res = buf;
	struct pc_residency *r = NULL;
	char deleted[512];
	char *page;
	void *map;
	int fd;

	(void)bufsize;
	page = calloc(1, 2 * ps);
	fd = open(s->file, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (!page || fd < 0 || write(fd, page, 2 * ps) != (ssize_t)(2 * ps))
		return -errno;
	free(page);
	map = mmap(NULL, 2 * ps, PROT_NONE, MAP_SHARED, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return -errno;
	snprintf(deleted, sizeof(deleted), "%s (deleted)", s->file);
	if (unlink(s->file) < 0 || symlink(s->device, deleted) < 0)
		return -errno;
	res->ret = pc_residency_mem(map, 2 * ps, 0, &r);
	res->quality = res->ret == 0 ? pc_residency_quality(r) : -1;
	pc_residency_free(r);
	munmap(map, 2 * ps);
	return 0;
}

START_TEST(mem_device_planted_at_a_mapped_path_is_never_opened)
{
	const char *dir = pc_test_path("open-swap");
	char file[512];
	const char *dev = pc_test_path("open-null");
	struct swap s = { .file = file, .device = dev };
	struct swap_result res = { .ret = -999, .quality = -1 };
	int ino = watched_device("mem_device_planted_at_a_mapped_path_is_never_opened", dev, 3);

	if (ino < 0)
		return;
	ck_assert_int_eq(mkdir(dir, 0777), 0);
	ck_assert_int_eq(chmod(dir, 0777), 0);
	snprintf(file, sizeof(file), "%s/mapped", dir);
	ck_assert_int_ge(opens_seen(ino), 1); /* watched_device's own open */
	ck_assert_int_eq(pc_test_as_nobody(swap_fn, &s, &res, sizeof(res)), 0);
	ck_assert_int_eq(res.ret, 0);
	/* the name leads to another inode: nothing can be said of the mapping */
	ck_assert_int_eq(res.quality, PC_QUALITY_UNKNOWN);
	ck_assert_int_eq(opens_seen(ino), 0);
	close(ino);
}
END_TEST

START_TEST(mem_private_dev_zero_is_exact_and_not_opened)
{
	const char *dev = pc_test_path("open-zero");
	int ino = watched_device("mem_private_dev_zero_is_exact_and_not_opened", dev, 5);
	struct pc_residency *r = NULL;
	char *map;
	int fd;

	if (ino < 0)
		return;
	fd = open(dev, O_RDWR | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	map = mmap(NULL, 4 * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	ck_assert_ptr_ne(map, MAP_FAILED);
	close(fd);
	ck_assert_int_eq(madvise(map, 4 * ps, MADV_NOHUGEPAGE), 0);
	map[1 * ps] = 1;
	ck_assert_int_ge(opens_seen(ino), 1); /* ours (inotify merges repeated events) */
	ck_assert_int_eq(pc_residency_mem(map, 4 * ps, 0, &r), 0);
	/* anonymous memory to the kernel: exact, the touched page alone */
	ck_assert_int_eq(pc_residency_quality(r), PC_QUALITY_EXACT);
	ck_assert_uint_eq(pc_residency_resident(r), 1);
	ck_assert_int_eq(pc_residency_test(r, 1), 1);
	pc_residency_free(r);
	ck_assert_int_eq(opens_seen(ino), 0);
	munmap(map, 4 * ps);
	close(ino);
}
END_TEST

/* pc_detect_nowait()'s fallback in a directory it may not write: one cold
 * page of a file found there. The only file becomes a device node between
 * readdir and the open. */
START_TEST(cold_page_file_swapped_for_a_device_is_never_opened)
{
	const char *dir = pc_test_path("open-cold");
	const char *dev = pc_test_path("open-cold-null");
	int ino = watched_device("cold_page_file_swapped_for_a_device_is_never_opened", dev, 3);
	struct pc_backend *b = pc_kernel_backend();
	struct pc_bfile *f = NULL;
	const char *victim;
	uint64_t page = 0;
	int dirfd;

	if (ino < 0)
		return;
	ck_assert_int_eq(mkdir(dir, 0755), 0);
	/* without the swap this file is the answer (the control) */
	victim = pc_test_make_file("open-cold/victim", 8, 0644, -1, -1);
	pc_test_set_pattern(victim, NULL, 0);
	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(dirfd, 0);
	ck_assert_int_eq(b->ops->find_cold_page(b, dirfd, &f, &page), 0);
	b->ops->close(b, f);
	ck_assert_int_ge(opens_seen(ino), 1);
	swap_with = dev;
	swap_name = "victim";
	ck_assert_int_eq(b->ops->find_cold_page(b, dirfd, &f, &page), -ENOENT);
	ck_assert_ptr_null(swap_name); /* the swap happened */
	ck_assert_int_eq(opens_seen(ino), 0);
	close(dirfd);
	close(ino);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("open");
	TCase *mem = tcase_create("mem");
	TCase *detect = tcase_create("detect");
	SRunner *sr;
	int failed;

	ps = (size_t)sysconf(_SC_PAGESIZE);
	if (!pc_test_is_root()) {
		printf("SKIP: test-open: needs root (mknod, uid 65534)\n");
		return 77;
	}
	pc_test_dir();
	tcase_add_test(mem, mem_device_planted_at_a_mapped_path_is_never_opened);
	tcase_add_test(mem, mem_private_dev_zero_is_exact_and_not_opened);
	suite_add_tcase(s, mem);
	tcase_add_test(detect, cold_page_file_swapped_for_a_device_is_never_opened);
	suite_add_tcase(s, detect);
	sr = srunner_create(s);
	pc_test_cases_dir(); /* a failed case leaves no directory behind */
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
