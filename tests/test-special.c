/* SPDX-License-Identifier: MIT */
/*
 * Special files and filesystems (issue 7): what pc_residency, pc_cachestat,
 * pc_can_do_mincore, pc_detect_nowait and the prober answer for each, as
 * documented in the README's table. One case per row; what other suites
 * already cover (EINVAL for FIFOs, sockets and char devices, a block
 * device's bitmap, a tmpfs file as uid 65534, a sparse 16 GiB file, files
 * shrinking under a scan) is not repeated here.
 *
 * Runs as root, in a private mount namespace of its own: every mount it
 * makes is invisible outside and is undone at the end of its case.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/xattr.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pagecache/pagecache.h"
#include "pc-test.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define MAXP 64      /* pages a snapshot records */
#define ATTEMPTS 4   /* set-ups of a pattern before giving up on a quiet moment */

#ifndef __NR_open_tree
#define __NR_open_tree 428
#endif
#ifndef __NR_move_mount
#define __NR_move_mount 429
#endif
#ifndef __NR_mount_setattr
#define __NR_mount_setattr 442
#endif
#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#endif
#ifndef MOUNT_ATTR_IDMAP
#define MOUNT_ATTR_IDMAP 0x00100000
#endif

struct pc_mount_attr {
	uint64_t attr_set, attr_clr, propagation, userns_fd;
};

static uint64_t ps;

/* ---- mounts and loop devices, undone at the end of each case ------------- */

static char *mounts[16];
static size_t nmounts;
static char loopdev[64];

static void undo_all(void)
{
	while (nmounts > 0) {
		char *m = mounts[--nmounts];

		if (umount2(m, MNT_DETACH) < 0)
			fprintf(stderr, "umount %s: %s\n", m, strerror(errno));
		free(m);
	}
	if (loopdev[0]) {
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "losetup -d '%s' 2>/dev/null", loopdev);
		if (system(cmd) != 0)
			fprintf(stderr, "could not detach %s\n", loopdev);
		loopdev[0] = '\0';
	}
}

/* The scratch directory; the undo handler runs before its removal (atexit
 * handlers run in reverse order). */
static const char *scratch(void)
{
	static pid_t registered;
	const char *d = pc_test_dir();

	if (registered != getpid()) {
		registered = getpid();
		atexit(undo_all);
	}
	return d;
}

static const char *sub(const char *name)
{
	scratch();
	return pc_test_path(name);
}

static void track_mount(const char *path)
{
	ck_assert_uint_lt(nmounts, ARRAY_LEN(mounts));
	mounts[nmounts] = strdup(path);
	ck_assert_ptr_nonnull(mounts[nmounts]);
	nmounts++;
}

static int run_cmd(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int run_cmd(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	fflush(NULL);
	st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int mkdir_p(const char *path)
{
	return mkdir(path, 0755) == 0 || errno == EEXIST ? 0 : -errno;
}

/* ---- files and patterns --------------------------------------------------- */

static void write_pages(int fd, const uint64_t *pages, size_t n, char fill)
{
	char *buf = malloc(ps);

	ck_assert_ptr_nonnull(buf);
	memset(buf, fill, ps);
	for (size_t i = 0; i < n; i++)
		ck_assert_int_eq(pwrite(fd, buf, ps, (off_t)(pages[i] * ps)), (ssize_t)ps);
	free(buf);
}

/* A file of npages pages (0644 root unless changed), synced. */
static void make_file(const char *path, uint64_t npages, mode_t mode)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, mode);

	ck_assert_msg(fd >= 0, "create %s: %s", path, strerror(errno));
	for (uint64_t p = 0; p < npages; p++)
		write_pages(fd, &p, 1, 'f');
	ck_assert_int_eq(fsync(fd), 0);
	ck_assert_int_eq(fchmod(fd, mode), 0);
	close(fd);
}

/* Evict fd's file, then read the listed pages through a RANDOM fd (no
 * fsync: works on read-only mounts; the file must be clean). */
static void set_pattern_fd(int fd, const uint64_t *pages, size_t n)
{
	char byte;

	ck_assert_int_eq(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
	ck_assert_int_eq(posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM), 0);
	for (size_t i = 0; i < n; i++)
		ck_assert_int_eq(pread(fd, &byte, 1, (off_t)(pages[i] * ps)), 1);
}

static void set_pattern_path(const char *path, const uint64_t *pages, size_t n)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	ck_assert_msg(fd >= 0, "open %s: %s", path, strerror(errno));
	set_pattern_fd(fd, pages, n);
	close(fd);
}

static void mincore_fd(int fd, uint64_t n, unsigned char *vec);
static int vec_is_pattern(const unsigned char *vec, uint64_t n, const uint64_t *p, size_t np);

/* Set a pattern on the first npages (<= 64) of path and wait until mincore
 * shows it: reads that probes started may still be in flight, and
 * DONTNEED skips pages under I/O. */
static void settle_pattern(const char *path, uint64_t npages, const uint64_t *pages, size_t n)
{
	unsigned char v[64];

	ck_assert_uint_le(npages, 64);
	for (int i = 0; i < 50; i++) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);

		ck_assert_int_ge(fd, 0);
		set_pattern_fd(fd, pages, n);
		mincore_fd(fd, npages, v);
		close(fd);
		if (vec_is_pattern(v, npages, pages, n))
			return;
		usleep(20000);
	}
	ck_abort_msg("%s: the pattern never settled", path);
}

/* mincore of the first n pages of fd through a fresh mapping (root: the
 * truth); 1 per resident page in vec. */
static void mincore_fd(int fd, uint64_t n, unsigned char *vec)
{
	/* PROT_NONE: valgrind reads the head of readable file mappings */
	void *map = mmap(NULL, n * ps, PROT_NONE, MAP_SHARED, fd, 0);

	ck_assert_ptr_ne(map, MAP_FAILED);
	ck_assert_int_eq(mincore(map, n * ps, vec), 0);
	munmap(map, n * ps);
	for (uint64_t i = 0; i < n; i++)
		vec[i] &= 1;
}

static int vec_is_pattern(const unsigned char *vec, uint64_t n, const uint64_t *p, size_t np)
{
	for (uint64_t i = 0; i < n; i++) {
		int want = 0;

		for (size_t k = 0; k < np; k++)
			want |= p[k] == i;
		if (vec[i] != want)
			return 0;
	}
	return 1;
}

/* ---- results that cross a child's pipe ----------------------------------- */

struct snap {
	int ret;
	uint64_t first_page, npages, resident, file_size;
	int quality, source, perturbed;
	int bit[MAXP];
};

static void snap_take(struct pc_residency *r, struct snap *s)
{
	s->first_page = pc_residency_first_page(r);
	s->npages = pc_residency_npages(r);
	s->resident = pc_residency_resident(r);
	s->file_size = pc_residency_file_size(r);
	s->quality = pc_residency_quality(r);
	s->source = pc_residency_source(r);
	s->perturbed = pc_residency_perturbed(r);
	for (uint64_t i = 0; i < s->npages && i < MAXP; i++)
		s->bit[i] = pc_residency_test(r, s->first_page + i);
	pc_residency_free(r);
}

static void snap_fd(int fd, uint64_t off, uint64_t len, unsigned int flags, struct snap *s)
{
	struct pc_residency *r = NULL;

	memset(s, 0, sizeof(*s));
	s->ret = pc_residency(fd, off, len, flags, &r);
	if (s->ret == 0)
		snap_take(r, s);
}

#ifndef STATX_MNT_ID_UNIQUE
#define STATX_MNT_ID_UNIQUE 0x00004000U
#endif

/* The same through pc_residency_facts(), with a statx as a walk takes it. */
static void snap_fd_facts(int fd, unsigned int flags, struct snap *s)
{
	struct pc_residency *r = NULL;
	struct pc_file_facts fx = { .size = sizeof(fx) };
	struct statx stx;

	memset(s, 0, sizeof(*s));
	ck_assert_int_eq(statx(fd, "", AT_EMPTY_PATH,
			       STATX_TYPE | STATX_SIZE | STATX_MNT_ID_UNIQUE, &stx), 0);
	fx.mode = stx.stx_mode;
	fx.file_size = stx.stx_size;
	fx.mnt_id = stx.stx_mask & STATX_MNT_ID_UNIQUE ? stx.stx_mnt_id : 0;
	s->ret = pc_residency_facts(fd, &fx, 0, 0, flags, &r);
	if (s->ret == 0)
		snap_take(r, s);
}

struct nobody_call {
	const char *path;
	int fd;            /* used when path is NULL (inherited by the child) */
	unsigned int flags;
	int can_do;        /* out: pc_can_do_mincore */
	int cachestat;     /* out: pc_cachestat's return */
};

struct nobody_out {
	struct snap s;
	int can_do, cachestat;
};

static int nobody_fn(void *arg, void *buf, size_t bufsize)
{
	struct nobody_call *c = arg;
	struct nobody_out *o = buf;
	struct pc_cachestat cs;
	int fd = c->path ? open(c->path, O_RDONLY | O_CLOEXEC) : c->fd;

	if (bufsize < sizeof(*o))
		return -EINVAL;
	if (fd < 0)
		return -errno;
	snap_fd(fd, 0, 0, c->flags, &o->s);
	o->can_do = pc_can_do_mincore(fd);
	o->cachestat = pc_cachestat(fd, 0, 0, &cs);
	if (c->path)
		close(fd);
	return 0;
}

/* pc_can_do_mincore() of path opened with the flags in *arg, as the
 * caller; its answer in buf (an int). */
static int can_do_with_flags(void *arg, void *buf, size_t bufsize)
{
	const struct nobody_call *c = arg;
	int fd = open(c->path, (int)c->flags | O_CLOEXEC);

	if (bufsize < sizeof(int))
		return -EINVAL;
	if (fd < 0)
		return -errno;
	*(int *)buf = pc_can_do_mincore(fd);
	close(fd);
	return 0;
}

static void as_nobody(const char *path, int fd, unsigned int flags, struct nobody_out *o)
{
	struct nobody_call c = { .path = path, .fd = fd, .flags = flags };

	memset(o, 0, sizeof(*o));
	ck_assert_int_eq(pc_test_as_nobody(nobody_fn, &c, o, sizeof(*o)), 0);
}

static void assert_exact_pattern(const struct snap *s, uint64_t npages, const uint64_t *p,
				 size_t np)
{
	ck_assert_int_eq(s->ret, 0);
	ck_assert_int_eq(s->quality, PC_QUALITY_EXACT);
	ck_assert_uint_eq(s->npages, npages);
	ck_assert_uint_eq(s->resident, np);
	for (uint64_t i = 0; i < npages && i < MAXP; i++) {
		int want = 0;

		for (size_t k = 0; k < np; k++)
			want |= p[k] == s->first_page + i;
		ck_assert_msg(s->bit[i] == want, "page %llu: %d, want %d",
			      (unsigned long long)(s->first_page + i), s->bit[i], want);
	}
}

static void assert_unknown(const struct snap *s, uint64_t npages)
{
	ck_assert_int_eq(s->ret, 0);
	ck_assert_int_eq(s->quality, PC_QUALITY_UNKNOWN);
	ck_assert_int_eq(s->source, PC_SOURCE_NONE);
	ck_assert_uint_eq(s->npages, npages);
	ck_assert_uint_eq(s->resident, 0);
	ck_assert_int_eq(s->perturbed, 0);
	if (npages)
		ck_assert_int_eq(s->bit[0], -ENODATA);
}

/* A file mincore hides from uid 65534, asked without PC_RES_ALLOW_PERTURB:
 * UNKNOWN, or, where a RWF_NOWAIT miss is clean (6.1: the kernel table)
 * and the filesystem takes RWF_NOWAIT, an EXACT answer from that probe,
 * which perturbed nothing. (That such answers equal root's mincore is
 * test-residency's to show.) */
static void assert_hidden(const struct snap *s, uint64_t npages)
{
	if (s->quality != PC_QUALITY_EXACT) {
		assert_unknown(s, npages);
		return;
	}
	ck_assert_int_eq(s->ret, 0);
	ck_assert_msg(pc_test_expect_nowait() == PC_NOWAIT_CLEAN || pc_test_expect_nowait() < 0,
		      "EXACT for a hidden file where RWF_NOWAIT is not clean");
	ck_assert(s->source == PC_SOURCE_IO_URING || s->source == PC_SOURCE_PREADV2);
	ck_assert_int_eq(s->perturbed, 0);
	ck_assert_uint_eq(s->npages, npages);
	ck_assert_uint_le(s->resident, npages);
}

/* cachestat usable by root here (not valgrind, not filtered). */
static int have_cachestat(void)
{
	int m = pc_detect_cachestat();

	return m == PC_CACHESTAT_GATED || m == PC_CACHESTAT_OPEN;
}

/* pc_cachestat's answer where the kernel has none: -ENOSYS or -EPERM. */
static int cachestat_missing(int ret)
{
	return !have_cachestat() && (ret == -ENOSYS || ret == -EPERM);
}

static ssize_t probe_one(int fd, uint64_t page, uint8_t *hit)
{
	struct pc_prober *p = NULL;
	ssize_t n;

	ck_assert_int_eq(pc_prober_new(0, &p), 0);
	n = pc_prober_probe(p, fd, &page, 1, hit);
	pc_prober_free(p);
	return n;
}

static int nowait_of_dir(const char *dir)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), mode;

	ck_assert_msg(dfd >= 0, "open %s: %s", dir, strerror(errno));
	mode = pc_detect_nowait(dfd);
	close(dfd);
	return mode;
}

/* ---- /proc ---------------------------------------------------------------- */

START_TEST(proc_files_are_empty_and_exact)
{
	static const char *const files[] = { "/proc/self/status", "/proc/meminfo" };

	for (size_t i = 0; i < ARRAY_LEN(files); i++) {
		static const unsigned int fl[] = { 0, PC_RES_COUNT_ONLY, PC_RES_ALLOW_PERTURB,
						   PC_RES_FORCE_MINCORE };
		int fd = open(files[i], O_RDONLY | O_CLOEXEC);
		struct pc_cachestat cs = { 0 };
		struct stat st;
		struct snap s;
		uint8_t hit = 7;
		int ret;

		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(fstat(fd, &st), 0);
		ck_assert(S_ISREG(st.st_mode));
		ck_assert_int_eq(st.st_size, 0);
		/* size 0: no page to tell about, whatever the flags */
		for (size_t k = 0; k < ARRAY_LEN(fl); k++) {
			snap_fd(fd, 0, 0, fl[k], &s);
			ck_assert_int_eq(s.ret, 0);
			ck_assert_int_eq(s.quality, PC_QUALITY_EXACT);
			ck_assert_int_eq(s.source, PC_SOURCE_NONE);
			ck_assert_uint_eq(s.npages, 0);
			ck_assert_uint_eq(s.resident, 0);
		}
		ret = pc_cachestat(fd, 0, 0, &cs);
		ck_assert(ret == 0 || cachestat_missing(ret));
		ck_assert_uint_eq(cs.cache, 0);
		ck_assert_int_eq(pc_can_do_mincore(fd), 1); /* root */
		/* procfs has no RWF_NOWAIT reads */
		ck_assert_int_eq(probe_one(fd, 0, &hit), -EOPNOTSUPP);
		close(fd);
	}
	/* nothing to detect with: no O_TMPFILE, no file with a page */
	ck_assert_int_eq(nowait_of_dir("/proc/self"), PC_NOWAIT_UNKNOWN);
}
END_TEST

/* ---- /sys ----------------------------------------------------------------- */

static const char *sysfs_file(void)
{
	static const char *const cands[] = { "/sys/kernel/uevent_seqnum", "/sys/kernel/profiling",
					     "/sys/power/state", "/sys/kernel/mm/transparent_hugepage/enabled" };

	for (size_t i = 0; i < ARRAY_LEN(cands); i++) {
		struct stat st;

		if (stat(cands[i], &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 4096 &&
		    (st.st_mode & 0777) == 0444 && st.st_uid == 0)
			return cands[i];
	}
	return NULL;
}

START_TEST(sys_file_one_page_never_cached)
{
	const char *path = sysfs_file();
	struct pc_cachestat cs = { 0 };
	struct nobody_out o;
	struct snap s;
	uint8_t hit = 7;
	int fd, ret;

	if (!path) {
		pc_test_skip("sys_file", "no root-owned 0444 sysfs attribute of 4096 bytes");
		return;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	/* sysfs shows 4096 bytes and keeps nothing in the page cache;
	 * it has no mmap (mincore cannot answer) and no RWF_NOWAIT */
	snap_fd(fd, 0, 0, 0, &s);
	ck_assert_int_eq(s.ret, 0);
	ck_assert_uint_eq(s.npages, 1);
	ck_assert_uint_eq(s.file_size, 4096);
	if (have_cachestat()) {
		ck_assert_int_eq(s.quality, PC_QUALITY_EXACT);
		ck_assert_int_eq(s.source, PC_SOURCE_CACHESTAT);
		ck_assert_uint_eq(s.resident, 0);
		ck_assert_int_eq(s.bit[0], 0);
		snap_fd(fd, 0, 0, PC_RES_COUNT_ONLY, &s);
		ck_assert_int_eq(s.quality, PC_QUALITY_EXACT);
		ck_assert_uint_eq(s.resident, 0);
	} else {
		assert_unknown(&s, 1); /* nothing else can see it */
	}
	snap_fd(fd, 0, 0, PC_RES_FORCE_MINCORE, &s);
	ck_assert_int_eq(s.ret, -EOPNOTSUPP);
	snap_fd(fd, 0, 0, PC_RES_FORCE_NOWAIT | PC_RES_ALLOW_PERTURB, &s);
	ck_assert_int_eq(s.ret, -EOPNOTSUPP);
	ret = pc_cachestat(fd, 0, 0, &cs);
	ck_assert(ret == 0 || cachestat_missing(ret));
	ck_assert_uint_eq(cs.cache, 0);
	ck_assert_int_eq(pc_can_do_mincore(fd), 1); /* a prediction: mincore itself cannot map it */
	ck_assert_int_eq(probe_one(fd, 0, &hit), -EOPNOTSUPP);
	ck_assert_int_eq(nowait_of_dir("/sys/kernel"), PC_NOWAIT_UNKNOWN);
	/* uid 65534: cachestat's gate refuses, nothing else answers */
	as_nobody(NULL, fd, 0, &o);
	assert_unknown(&o.s, 1);
	ck_assert_int_eq(o.can_do, 0);
	ck_assert(o.cachestat == -EPERM || o.cachestat == -ENOSYS);
	as_nobody(NULL, fd, PC_RES_ALLOW_PERTURB, &o);
	assert_unknown(&o.s, 1);
	close(fd);
}
END_TEST

/* ---- character devices ---------------------------------------------------- */

START_TEST(char_devices_refused_everywhere)
{
	static const char *const devs[] = { "/dev/zero", "/dev/null" };

	for (size_t i = 0; i < ARRAY_LEN(devs); i++) {
		int fd = open(devs[i], O_RDWR | O_CLOEXEC);
		struct pc_cachestat cs = { .cache = 99 };
		uint8_t hit = 7;
		int ret;

		if (fd < 0) {
			pc_test_skip(devs[i], "cannot open it");
			continue;
		}
		/* pc_residency's -EINVAL is in test-residency; the rest here */
		ck_assert_int_eq(pc_can_do_mincore(fd), -EINVAL);
		ck_assert_int_eq(probe_one(fd, 0, &hit), -EINVAL);
		ck_assert_int_eq(hit, 7);
		/* the raw syscall answers for the device node's empty mapping */
		ret = pc_cachestat(fd, 0, 0, &cs);
		ck_assert(ret == 0 || cachestat_missing(ret));
		if (ret == 0)
			ck_assert_uint_eq(cs.cache, 0);
		close(fd);
	}
	/* /dev is devtmpfs: O_TMPFILE works, RWF_NOWAIT does not */
	ck_assert_int_eq(nowait_of_dir("/dev"), PC_NOWAIT_UNSUPPORTED);
}
END_TEST

/* ---- a block device -------------------------------------------------------- */

static int attach_loop(const char *img)
{
	char cmd[4300];
	FILE *f;
	int ok = 0;

	snprintf(cmd, sizeof(cmd), "losetup -f --show -- '%s' 2>/dev/null", img);
	fflush(NULL);
	f = popen(cmd, "r");
	if (!f)
		return 0;
	if (fgets(loopdev, sizeof(loopdev), f)) {
		loopdev[strcspn(loopdev, "\n")] = '\0';
		ok = loopdev[0] == '/';
	}
	if (pclose(f) != 0)
		ok = 0;
	if (!ok)
		loopdev[0] = '\0';
	return ok;
}

START_TEST(block_device_cache_dies_with_its_last_opener)
{
	static const uint64_t p[] = { 2, 40, 100 };
	const char *img = sub("blk.img");
	unsigned char vec[128];
	struct snap s;
	uint8_t hit = 7;
	int holder, fd, ok = 0;

	scratch();
	make_file(img, 128, 0600);
	if (!attach_loop(img)) {
		pc_test_skip("block_device", "losetup refused (no loop devices or no privilege)");
		return;
	}
	for (int attempt = 0; attempt < ATTEMPTS && !ok; attempt++) {
		holder = open(loopdev, O_RDONLY | O_CLOEXEC);
		ck_assert_int_ge(holder, 0);
		set_pattern_fd(holder, p, ARRAY_LEN(p));
		snap_fd(holder, 0, 0, 0, &s);
		mincore_fd(holder, 128, vec);
		ok = vec_is_pattern(vec, 128, p, ARRAY_LEN(p));
		if (ok) {
			assert_exact_pattern(&s, 128, p, ARRAY_LEN(p));
			snap_fd(holder, 0, 0, PC_RES_COUNT_ONLY, &s);
			ck_assert_uint_eq(s.resident, ARRAY_LEN(p));
			/* RWF_NOWAIT works on the device itself */
			ck_assert_int_eq(probe_one(holder, 40, &hit), 1);
			ck_assert_int_eq(hit, 1);
			ck_assert_int_eq(pc_can_do_mincore(holder), 1);
		}
		/* the last opener closes: the kernel drops the device's cache */
		close(holder);
	}
	ck_assert_msg(ok, "residency kept moving");
	fd = open(loopdev, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	snap_fd(fd, 0, 0, 0, &s);
	ck_assert_int_eq(s.quality, PC_QUALITY_EXACT);
	ck_assert_uint_eq(s.npages, 128);
	ck_assert_uint_eq(s.resident, 0);
	/* its NOWAIT mode is not that of /dev (devtmpfs: unsupported), and it
	 * is not detected: a forced probe needs ALLOW_PERTURB */
	snap_fd(fd, 0, 0, PC_RES_FORCE_NOWAIT, &s);
	ck_assert_int_eq(s.ret, -EOPNOTSUPP);
	snap_fd(fd, 0, 0, PC_RES_FORCE_NOWAIT | PC_RES_ALLOW_PERTURB, &s);
	ck_assert_int_eq(s.ret, 0);
	ck_assert_int_eq(s.quality, PC_QUALITY_EXACT);
	ck_assert_int_eq(s.perturbed, 1);
	ck_assert(s.source == PC_SOURCE_IO_URING || s.source == PC_SOURCE_PREADV2);
	close(fd);
	undo_all();
}
END_TEST

/* ---- FIFOs and sockets ----------------------------------------------------- */

START_TEST(fifo_and_socket_never_block)
{
	const char *fifo = sub("fifo");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct pc_cachestat cs;
	int fds[3], wfd, sfd, ret;
	uint8_t hit = 7;

	ck_assert_int_eq(mkfifo(fifo, 0644), 0);
	/* a FIFO with a writer and no data, in blocking mode: any read blocks */
	fds[0] = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	ck_assert_int_ge(fds[0], 0);
	wfd = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	ck_assert_int_ge(wfd, 0);
	ck_assert_int_eq(fcntl(fds[0], F_SETFL, 0), 0);
	/* a bound, listening socket and a socket file opened O_PATH */
	sfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(sfd, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/sock", scratch());
	ck_assert_int_eq(bind(sfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(sfd, 1), 0);
	fds[1] = sfd;
	fds[2] = open(sa.sun_path, O_PATH | O_CLOEXEC);
	ck_assert_int_ge(fds[2], 0);
	for (int i = 0; i < 3; i++) {
		struct snap s;

		snap_fd(fds[i], 0, 0, PC_RES_ALLOW_PERTURB, &s);
		ck_assert_int_eq(s.ret, -EINVAL); /* fstat tells the type, even O_PATH */
		ck_assert_int_eq(pc_can_do_mincore(fds[i]), -EINVAL);
		ret = probe_one(fds[i], 0, &hit);
		ck_assert_msg(ret == -EINVAL || (i == 2 && ret == -EBADF), "probe %d: %d", i, ret);
		ret = pc_cachestat(fds[i], 0, 0, &cs);
		ck_assert_msg(ret == 0 || ret == -EBADF || cachestat_missing(ret),
			      "cachestat %d: %d", i, ret);
		if (i == 2 && !cachestat_missing(ret))
			ck_assert_int_eq(ret, -EBADF); /* O_PATH */
		if (ret == 0)
			ck_assert_uint_eq(cs.cache, 0);
	}
	ck_assert_int_eq(hit, 7);
	close(fds[0]);
	close(fds[2]);
	close(wfd);
	close(sfd);
}
END_TEST

/* ---- tmpfs ----------------------------------------------------------------- */

static void tmpfs_row(const char *dir)
{
	static const uint64_t p[] = { 0, 3, 5 };
	char path[4200];
	struct pc_cachestat cs;
	struct snap s;
	uint8_t hit = 7;
	int fd, ret;

	snprintf(path, sizeof(path), "%s/pc-special-tmpfs.%d", dir, (int)getpid());
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(unlink(path), 0);
	/* 8 pages, 3 written, the rest holes */
	ck_assert_int_eq(ftruncate(fd, (off_t)(8 * ps)), 0);
	write_pages(fd, p, ARRAY_LEN(p), 't');
	for (int round = 0; round < 2; round++) {
		snap_fd(fd, 0, 0, 0, &s);
		assert_exact_pattern(&s, 8, p, ARRAY_LEN(p));
		snap_fd(fd, 0, 0, PC_RES_FORCE_MINCORE, &s);
		assert_exact_pattern(&s, 8, p, ARRAY_LEN(p));
		snap_fd(fd, 0, 0, PC_RES_COUNT_ONLY, &s);
		ck_assert_int_eq(s.quality, PC_QUALITY_EXACT);
		ck_assert_uint_eq(s.resident, ARRAY_LEN(p));
		/* eviction does nothing on tmpfs: the pages are the file */
		ck_assert_int_eq(pc_evict(fd, 0, 0), 0);
	}
	ret = pc_cachestat(fd, 0, 0, &cs);
	ck_assert(ret == 0 || cachestat_missing(ret));
	if (ret == 0)
		ck_assert_uint_eq(cs.cache, ARRAY_LEN(p));
	snap_fd(fd, 0, 0, PC_RES_FORCE_NOWAIT | PC_RES_ALLOW_PERTURB, &s);
	ck_assert_int_eq(s.ret, -EOPNOTSUPP);
	ck_assert_int_eq(probe_one(fd, 0, &hit), -EOPNOTSUPP);
	ck_assert_int_eq(pc_can_do_mincore(fd), 1);
	ck_assert_int_eq(nowait_of_dir(dir), PC_NOWAIT_UNSUPPORTED);
	close(fd);
}

START_TEST(tmpfs_resident_stays_resident)
{
	const char *mnt = sub("tmpfs");
	struct stat st;

	if (stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) && access("/dev/shm", W_OK) == 0)
		tmpfs_row("/dev/shm");
	else
		pc_test_skip("tmpfs /dev/shm", "no writable /dev/shm");
	ck_assert_int_eq(mkdir_p(mnt), 0);
	if (mount("pc-test", mnt, "tmpfs", 0, "size=4m,mode=0755") < 0) {
		pc_test_skip("tmpfs_mount", strerror(errno));
		return;
	}
	track_mount(mnt);
	tmpfs_row(mnt);
	undo_all();
}
END_TEST

/* ---- hugetlbfs ------------------------------------------------------------- */

static int fs_configured(const char *name)
{
	char line[256];
	FILE *f = fopen("/proc/filesystems", "re");
	int found = 0;

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		char *t = strrchr(line, '\t');

		line[strcspn(line, "\n")] = '\0';
		found = strcmp(t ? t + 1 : line, name) == 0;
	}
	fclose(f);
	return found;
}

static long meminfo_value(const char *key)
{
	char line[256];
	long v = -1;
	FILE *f = fopen("/proc/meminfo", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, key, strlen(key)) == 0 && line[strlen(key)] == ':')
			v = strtol(line + strlen(key) + 1, NULL, 10);
	fclose(f);
	return v;
}

static void assert_hugetlbfs_unknown(int fd, uint64_t npages)
{
	static const unsigned int fl[] = { 0, PC_RES_COUNT_ONLY, PC_RES_ALLOW_PERTURB };
	static const unsigned int forced[] = {
		PC_RES_FORCE_MINCORE, PC_RES_FORCE_CACHESTAT,
		PC_RES_FORCE_NOWAIT | PC_RES_ALLOW_PERTURB,
	};
	struct pc_cachestat cs;
	struct snap s;
	uint8_t hit = 7;
	int ret;

	for (size_t i = 0; i < ARRAY_LEN(fl); i++) {
		snap_fd(fd, 0, 0, fl[i], &s);
		assert_unknown(&s, npages);
	}
	for (size_t i = 0; i < ARRAY_LEN(forced); i++) {
		snap_fd(fd, 0, 0, forced[i], &s);
		ck_assert_int_eq(s.ret, -EOPNOTSUPP);
	}
	ret = pc_cachestat(fd, 0, 0, &cs);
	ck_assert(ret == -EOPNOTSUPP || cachestat_missing(ret));
	ck_assert_int_eq(probe_one(fd, 0, &hit), -EOPNOTSUPP);
	ck_assert_int_eq(pc_can_do_mincore(fd), 1); /* a prediction; mincore cannot be used */
}

START_TEST(hugetlbfs_is_unknown_to_everyone)
{
	const char *mnt = sub("hugetlbfs");
	long hpsize = meminfo_value("Hugepagesize"), hpfree = meminfo_value("HugePages_Free");
	char path[4200];
	uint64_t hbytes;
	int fd, mode;

	if (!fs_configured("hugetlbfs")) {
		pc_test_skip("hugetlbfs", "the kernel has no hugetlbfs (not in /proc/filesystems)");
		return;
	}
	ck_assert_int_gt(hpsize, 0);
	hbytes = (uint64_t)hpsize * 1024;
	ck_assert_int_eq(mkdir_p(mnt), 0);
	if (mount("pc-test", mnt, "hugetlbfs", 0, "mode=0755") < 0) {
		pc_test_skip("hugetlbfs", strerror(errno));
		return;
	}
	track_mount(mnt);
	/* a file of two huge pages, with no page allocated */
	snprintf(path, sizeof(path), "%s/f", mnt);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)(2 * hbytes)), 0);
	assert_hugetlbfs_unknown(fd, 2 * hbytes / ps);
	/* O_TMPFILE works, writing does not: nothing to probe with. (A
	 * process that detected on a tmpfs unmounted before may get its
	 * "unsupported": the cache is keyed by st_dev, which anonymous
	 * filesystems reuse.) */
	mode = nowait_of_dir(mnt);
	ck_assert(mode == PC_NOWAIT_UNKNOWN || mode == PC_NOWAIT_UNSUPPORTED);
	if (hpfree < 1) {
		pc_test_skip("hugetlbfs_with_a_page",
			     "no free huge page (vm.nr_hugepages is 0 on this machine)");
	} else {
		/* one huge page allocated and mapped by us: still nothing can tell */
		char *m = mmap(NULL, hbytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

		ck_assert_ptr_ne(m, MAP_FAILED);
		m[0] = 1;
		assert_hugetlbfs_unknown(fd, 2 * hbytes / ps);
		munmap(m, hbytes);
	}
	close(fd);
	unlink(path);
	undo_all();
}
END_TEST

/* ---- overlayfs ------------------------------------------------------------- */

START_TEST(overlayfs_counts_the_real_files_pages)
{
	static const uint64_t p[] = { 1, 6, 12 };
	const char *lower = sub("ovl-lower"), *upper = sub("ovl-upper"), *work = sub("ovl-work");
	const char *merged = sub("ovl");
	char opts[13000], low_m[4200], up_m[4200], low_r[4200], up_r[4200];
	struct nobody_out o;
	int ok = 0;

	if (!fs_configured("overlay")) {
		pc_test_skip("overlayfs", "the kernel has no overlayfs (not in /proc/filesystems)");
		return;
	}
	ck_assert_int_eq(mkdir_p(lower), 0);
	ck_assert_int_eq(mkdir_p(upper), 0);
	ck_assert_int_eq(mkdir_p(work), 0);
	ck_assert_int_eq(mkdir_p(merged), 0);
	snprintf(low_r, sizeof(low_r), "%s/low", lower);
	snprintf(up_r, sizeof(up_r), "%s/up", upper);
	snprintf(low_m, sizeof(low_m), "%s/low", merged);
	snprintf(up_m, sizeof(up_m), "%s/up", merged);
	make_file(low_r, 16, 0644);
	snprintf(opts, sizeof(opts), "%s/up", lower);
	make_file(opts, 16, 0666);
	snprintf(opts, sizeof(opts), "lowerdir=%s,upperdir=%s,workdir=%s", lower, upper, work);
	if (mount("overlay", merged, "overlay", 0, opts) < 0) {
		pc_test_skip("overlayfs", strerror(errno));
		return;
	}
	track_mount(merged);
	{
		/* copy "up" up: open it for writing through the overlay */
		int fd = open(up_m, O_WRONLY | O_CLOEXEC);

		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(fsync(fd), 0);
		close(fd);
		ck_assert_int_eq(access(up_r, F_OK), 0);
	}
	for (int attempt = 0; attempt < ATTEMPTS && !ok; attempt++) {
		unsigned char vl[16], vu[16];
		struct snap sl, su, cl, cu, fl1, fl2, fu1;
		int fl, fu;

		/* patterns on the real files, where the pages live */
		set_pattern_path(low_r, p, ARRAY_LEN(p));
		set_pattern_path(up_r, p, 2);
		fl = open(low_m, O_RDONLY | O_CLOEXEC);
		fu = open(up_m, O_RDONLY | O_CLOEXEC);
		ck_assert_int_ge(fl, 0);
		ck_assert_int_ge(fu, 0);
		snap_fd(fl, 0, 0, 0, &sl);
		snap_fd(fu, 0, 0, 0, &su);
		snap_fd(fl, 0, 0, PC_RES_COUNT_ONLY, &cl);
		snap_fd(fu, 0, 0, PC_RES_COUNT_ONLY, &cu);
		/* the caller's statx with the overlay's mount id: overlayfs
		 * is still known as such, first and when remembered */
		snap_fd_facts(fl, PC_RES_COUNT_ONLY, &fl1);
		snap_fd_facts(fl, PC_RES_COUNT_ONLY, &fl2);
		snap_fd_facts(fu, PC_RES_COUNT_ONLY, &fu1);
		mincore_fd(fl, 16, vl);
		mincore_fd(fu, 16, vu);
		ok = vec_is_pattern(vl, 16, p, ARRAY_LEN(p)) && vec_is_pattern(vu, 16, p, 2);
		if (ok) {
			struct pc_cachestat cs = { .cache = 99 };
			int ret;
			uint8_t hit = 7;
			struct snap s;

			assert_exact_pattern(&sl, 16, p, ARRAY_LEN(p));
			ck_assert_int_eq(sl.source, PC_SOURCE_MINCORE);
			assert_exact_pattern(&su, 16, p, 2);
			ck_assert_int_eq(cl.quality, PC_QUALITY_EXACT);
			ck_assert_uint_eq(cl.resident, ARRAY_LEN(p));
			ck_assert_int_eq(cl.source, PC_SOURCE_MINCORE);
			ck_assert_uint_eq(cu.resident, 2);
			ck_assert_int_eq(fl1.ret, 0);
			ck_assert_int_eq(fl1.quality, PC_QUALITY_EXACT);
			ck_assert_uint_eq(fl1.resident, ARRAY_LEN(p));
			ck_assert_int_eq(fl1.source, PC_SOURCE_MINCORE);
			ck_assert_int_eq(fl2.ret, 0);
			ck_assert_uint_eq(fl2.resident, ARRAY_LEN(p));
			ck_assert_int_eq(fl2.source, PC_SOURCE_MINCORE);
			ck_assert_int_eq(fu1.ret, 0);
			ck_assert_uint_eq(fu1.resident, 2);
			/* cachestat itself counts the overlay inode's empty mapping */
			ret = pc_cachestat(fl, 0, 0, &cs);
			ck_assert(ret == 0 || cachestat_missing(ret));
			if (ret == 0)
				ck_assert_uint_eq(cs.cache, 0);
			snap_fd(fl, 0, 0, PC_RES_FORCE_CACHESTAT, &s);
			ck_assert_int_eq(s.ret, -EOPNOTSUPP);
			ck_assert_int_eq(probe_one(fl, 1, &hit), -EOPNOTSUPP);
			ck_assert_int_eq(pc_can_do_mincore(fl), 1);
		}
		close(fl);
		close(fu);
	}
	ck_assert_msg(ok, "residency kept moving");
	ck_assert_int_eq(nowait_of_dir(merged), PC_NOWAIT_UNSUPPORTED);
	/* uid 65534: the 0644 lower file is hidden (no NOWAIT to probe with),
	 * the 0666 copied-up file is not */
	as_nobody(low_m, -1, PC_RES_ALLOW_PERTURB, &o);
	assert_hidden(&o.s, 16);
	ck_assert_int_eq(o.can_do, 0);
	set_pattern_path(up_r, p, 2);
	as_nobody(up_m, -1, 0, &o);
	ck_assert_int_eq(o.s.quality, PC_QUALITY_EXACT);
	ck_assert_int_eq(o.s.source, PC_SOURCE_MINCORE);
	ck_assert_uint_eq(o.s.npages, 16);
	ck_assert_int_eq(o.s.bit[p[0]], 1);
	ck_assert_int_eq(o.can_do, 1);
	undo_all();
}
END_TEST

/* ---- a read-only bind mount ----------------------------------------------- */

START_TEST(readonly_bind_mount_keeps_the_gate_open)
{
	static const uint64_t p[] = { 0, 9 };
	const char *src = sub("robind-src"), *dst = sub("robind");
	char f666[4200], f644[4200];
	struct nobody_out o;
	int ok = 0;

	ck_assert_int_eq(mkdir_p(src), 0);
	ck_assert_int_eq(mkdir_p(dst), 0);
	snprintf(f666, sizeof(f666), "%s/root-0666", src);
	make_file(f666, 16, 0666);
	snprintf(f644, sizeof(f644), "%s/root-0644", src);
	make_file(f644, 16, 0644);
	if (mount(src, dst, "none", MS_BIND, NULL) < 0) {
		pc_test_skip("readonly_bind_mount", strerror(errno));
		return;
	}
	track_mount(dst);
	ck_assert_int_eq(mount("none", dst, "none", MS_REMOUNT | MS_BIND | MS_RDONLY, NULL), 0);
	snprintf(f666, sizeof(f666), "%s/root-0666", dst);
	snprintf(f644, sizeof(f644), "%s/root-0644", dst);
	for (int attempt = 0; attempt < ATTEMPTS && !ok; attempt++) {
		unsigned char v[16];
		struct nobody_out c;
		int fd;

		set_pattern_path(f666, p, ARRAY_LEN(p));
		as_nobody(f666, -1, 0, &o);
		as_nobody(f666, -1, PC_RES_COUNT_ONLY, &c);
		fd = open(f666, O_RDONLY | O_CLOEXEC);
		ck_assert_int_ge(fd, 0);
		mincore_fd(fd, 16, v);
		close(fd);
		ok = vec_is_pattern(v, 16, p, ARRAY_LEN(p));
		if (ok) {
			/* writers by permission pass the gate: the mount's ro flag
			 * does not count (doc/kernels.md section 1) */
			assert_exact_pattern(&o.s, 16, p, ARRAY_LEN(p));
			ck_assert_int_eq(o.can_do, 1);
			ck_assert_int_eq(c.s.quality, PC_QUALITY_EXACT);
			ck_assert_uint_eq(c.s.resident, ARRAY_LEN(p));
			if (have_cachestat()) {
				ck_assert_int_eq(c.s.source, PC_SOURCE_CACHESTAT);
				ck_assert_int_eq(c.cachestat, 0);
			}
		}
	}
	ck_assert_msg(ok, "residency kept moving");
	as_nobody(f644, -1, 0, &o);
	assert_hidden(&o.s, 16);
	/* same filesystem as the scratch directory: the same NOWAIT mode */
	ck_assert_int_eq(nowait_of_dir(dst), nowait_of_dir(src));
	undo_all();
}
END_TEST

/* ---- a read-only superblock ----------------------------------------------- */

START_TEST(readonly_superblock_hides_from_writers_by_permission)
{
	static const uint64_t p[] = { 3, 4, 11 };
	const char *img = sub("ext4.img"), *mnt = sub("rosb");
	char path[4200];
	struct nobody_out o;
	int ok = 0, root_mode;

	ck_assert_int_eq(mkdir_p(mnt), 0);
	if (run_cmd("truncate -s 16M '%s' && mkfs.ext4 -q -F '%s' >/dev/null 2>&1", img, img) != 0) {
		pc_test_skip("readonly_superblock", "mkfs.ext4 failed");
		return;
	}
	if (run_cmd("mount -o loop -t ext4 '%s' '%s' 2>/dev/null", img, mnt) != 0) {
		pc_test_skip("readonly_superblock", "mount -o loop refused");
		return;
	}
	track_mount(mnt);
	ck_assert_int_eq(chmod(mnt, 0755), 0);
	snprintf(path, sizeof(path), "%s/root-0666", mnt);
	make_file(path, 16, 0666);
	ck_assert_int_eq(mount("none", mnt, "none", MS_REMOUNT | MS_RDONLY, NULL), 0);
	for (int attempt = 0; attempt < ATTEMPTS && !ok; attempt++) {
		unsigned char v[16];
		struct snap s;
		int fd = open(path, O_RDONLY | O_CLOEXEC);

		ck_assert_int_ge(fd, 0);
		set_pattern_fd(fd, p, ARRAY_LEN(p));
		snap_fd(fd, 0, 0, 0, &s);
		as_nobody(NULL, fd, 0, &o);
		mincore_fd(fd, 16, v);
		ok = vec_is_pattern(v, 16, p, ARRAY_LEN(p));
		if (ok) {
			assert_exact_pattern(&s, 16, p, ARRAY_LEN(p)); /* root */
			/* 0666, but a read-only superblock denies MAY_WRITE */
			assert_hidden(&o.s, 16);
			ck_assert_int_eq(o.can_do, 0);
			ck_assert(o.cachestat == -EPERM || o.cachestat == -ENOSYS);
		}
		close(fd);
	}
	ck_assert_msg(ok, "residency kept moving");
	as_nobody(path, -1, PC_RES_COUNT_ONLY, &o);
	assert_hidden(&o.s, 16);
	/* with ALLOW_PERTURB, uid 65534 probes (the pattern, and perturbed) */
	ok = 0;
	for (int attempt = 0; attempt < ATTEMPTS && !ok; attempt++) {
		unsigned char v[16];
		int fd = open(path, O_RDONLY | O_CLOEXEC);

		ck_assert_int_ge(fd, 0);
		set_pattern_fd(fd, p, ARRAY_LEN(p));
		mincore_fd(fd, 16, v);
		ok = vec_is_pattern(v, 16, p, ARRAY_LEN(p));
		if (ok) {
			as_nobody(NULL, fd, PC_RES_ALLOW_PERTURB, &o);
			ok = o.s.resident == ARRAY_LEN(p); /* a false hit: again */
			if (ok) {
				assert_exact_pattern(&o.s, 16, p, ARRAY_LEN(p));
				/* perturbed where a miss starts readahead (ext4 both) */
				ck_assert_int_eq(o.s.perturbed,
						 nowait_of_dir(scratch()) != PC_NOWAIT_CLEAN);
			}
		}
		close(fd);
	}
	ck_assert_msg(ok, "probing as uid 65534 never gave the pattern");
	/* no O_TMPFILE on a read-only filesystem: root may watch a cold page
	 * of a visible file; uid 65534 sees none truthfully */
	settle_pattern(path, 16, p, ARRAY_LEN(p)); /* the probes above cached it all */
	root_mode = nowait_of_dir(mnt);
	ck_assert_int_eq(root_mode, nowait_of_dir(scratch())); /* ext4 both */
	undo_all();
}
END_TEST

/* ---- an idmapped mount ---------------------------------------------------- */

/* A user namespace that maps map (same map for uids and gids), as an fd. */
static int userns_fd(const char *map)
{
	int ready[2], go[2], fd = -1;
	char c, path[64];
	pid_t pid;

	ck_assert_int_eq(pipe2(ready, O_CLOEXEC), 0);
	ck_assert_int_eq(pipe2(go, O_CLOEXEC), 0);
	fflush(NULL);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(ready[0]);
		close(go[1]);
		c = unshare(CLONE_NEWUSER) == 0 ? 'r' : 'e';
		if (write(ready[1], &c, 1) != 1)
			_exit(1);
		if (read(go[0], &c, 1) < 0)
			_exit(1);
		_exit(0);
	}
	close(ready[1]);
	close(go[0]);
	if (read(ready[0], &c, 1) == 1 && c == 'r') {
		static const char *const which[] = { "uid_map", "gid_map" };
		int ok = 1;

		for (int i = 0; i < 2 && ok; i++) {
			int mfd;

			snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, which[i]);
			mfd = open(path, O_WRONLY | O_CLOEXEC);
			ok = mfd >= 0 && write(mfd, map, strlen(map)) == (ssize_t)strlen(map);
			if (mfd >= 0)
				close(mfd);
		}
		snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
		if (ok)
			fd = open(path, O_RDONLY | O_CLOEXEC);
	}
	close(go[1]);
	close(ready[0]);
	waitpid(pid, NULL, 0);
	return fd;
}

/* Mount src at dst through the idmap map (uids and gids alike). NULL, or
 * why the machine cannot (the caller skips). */
static const char *idmapped_mount(const char *src, const char *dst, const char *map)
{
	struct pc_mount_attr attr = { .attr_set = MOUNT_ATTR_IDMAP };
	const char *why = NULL;
	int tfd, nsfd;

	ck_assert_int_eq(mkdir_p(src), 0);
	ck_assert_int_eq(mkdir_p(dst), 0);
	nsfd = userns_fd(map);
	if (nsfd < 0)
		return "no user namespace to take the idmap from";
	tfd = (int)syscall(__NR_open_tree, AT_FDCWD, src, OPEN_TREE_CLONE | O_CLOEXEC);
	if (tfd < 0) {
		close(nsfd);
		return "open_tree(OPEN_TREE_CLONE) refused";
	}
	attr.userns_fd = (uint64_t)nsfd;
	if (syscall(__NR_mount_setattr, tfd, "", AT_EMPTY_PATH, &attr, sizeof(attr)) < 0) {
		why = "mount_setattr(MOUNT_ATTR_IDMAP) refused";
	} else {
		ck_assert_int_eq(syscall(__NR_move_mount, tfd, "", AT_FDCWD, dst,
					 MOVE_MOUNT_F_EMPTY_PATH), 0);
		track_mount(dst);
	}
	close(tfd);
	close(nsfd);
	return why;
}

/*
 * A 16-page 0644 file name owned by uid/gid owner in directory src_name,
 * and the same directory mounted at dst_name through map; its path each
 * way in plain and mapped (4200 bytes each). Through the mount the owner
 * shows as 65534. 0 when the machine cannot (skipped as skip_name), else 1.
 */
static int idmapped_file(const char *src_name, const char *dst_name, const char *name,
			 uid_t owner, const char *map, const char *skip_name, char *plain,
			 char *mapped)
{
	const char *src = sub(src_name), *dst = sub(dst_name), *why;
	struct stat st;

	ck_assert_int_eq(mkdir_p(src), 0);
	snprintf(plain, 4200, "%s/%s", src, name);
	make_file(plain, 16, 0644);
	ck_assert_int_eq(chown(plain, owner, owner), 0);
	snprintf(mapped, 4200, "%s/%s", dst, name);
	why = idmapped_mount(src, dst, map);
	if (why) {
		pc_test_skip(skip_name, why);
		return 0;
	}
	ck_assert_int_eq(stat(mapped, &st), 0);
	ck_assert_uint_eq(st.st_uid, PC_TEST_NOBODY);
	return 1;
}

START_TEST(idmapped_mount_owner_through_the_idmap)
{
	static const uint64_t p[] = { 2, 7 };
	char plain[4200], mapped[4200];
	struct nobody_out o, c;
	int ok = 0;

	/* on-disk uid/gid 1000 show as 65534 through the mount */
	if (!idmapped_file("idmap-src", "idmapped", "user1000-0644", 1000, "1000 65534 1\n",
			   "idmapped_mount", plain, mapped))
		return;
	for (int attempt = 0; attempt < ATTEMPTS && !ok; attempt++) {
		unsigned char v[16];
		int fd;

		set_pattern_path(plain, p, ARRAY_LEN(p));
		as_nobody(mapped, -1, 0, &o);
		as_nobody(mapped, -1, PC_RES_COUNT_ONLY, &c);
		fd = open(plain, O_RDONLY | O_CLOEXEC);
		ck_assert_int_ge(fd, 0);
		mincore_fd(fd, 16, v);
		close(fd);
		ok = vec_is_pattern(v, 16, p, ARRAY_LEN(p));
		if (ok) {
			/* uid 65534 owns it through the idmap: exact */
			assert_exact_pattern(&o.s, 16, p, ARRAY_LEN(p));
			ck_assert_int_eq(o.can_do, 1);
			ck_assert_int_eq(c.s.quality, PC_QUALITY_EXACT);
			ck_assert_uint_eq(c.s.resident, ARRAY_LEN(p));
			if (have_cachestat())
				ck_assert_int_eq(c.cachestat, 0);
		}
	}
	ck_assert_msg(ok, "residency kept moving");
	/* the same inode by its plain path: someone else's 0644 file */
	as_nobody(plain, -1, 0, &o);
	assert_hidden(&o.s, 16);
	ck_assert_int_eq(o.can_do, 0);
	undo_all();
}
END_TEST

/*
 * root sees the 16-page file by its plain path, and through hidden the
 * kernel fakes every page of the same inode: pc_can_do_mincore() says
 * hidden there and pc_residency() unknown, visible by the plain path.
 * With pages p of it resident; tried again while reclaim moves them.
 */
/*
 * hidden: the file plain through a mount that hides it from root. Where
 * the kernel fakes mincore there (every page 1 while plain shows the
 * pattern), pc_can_do_mincore() must say 0 and pc_residency() UNKNOWN;
 * where it shows the truth, 1 and the pattern. must_fake: the kernel table
 * says this kernel fakes here (6.18, seen); otherwise either is accepted,
 * as long as the library agrees with what the kernel does. Returns 1 when
 * the kernel faked.
 */
static int assert_gate_for_root(const char *plain, const char *hidden, const uint64_t *p,
				size_t np, int must_fake)
{
	int ok = 0, faked = 0;

	for (int attempt = 0; attempt < ATTEMPTS && !ok; attempt++) {
		struct pc_residency *r = NULL;
		unsigned char plain_v[16], hidden_v[16];
		int fd, hfd, all = 1;

		set_pattern_path(plain, p, np);
		fd = open(plain, O_RDONLY | O_CLOEXEC);
		hfd = open(hidden, O_RDONLY | O_CLOEXEC);
		ck_assert_int_ge(fd, 0);
		ck_assert_int_ge(hfd, 0);
		mincore_fd(hfd, 16, hidden_v);
		mincore_fd(fd, 16, plain_v);
		ok = vec_is_pattern(plain_v, 16, p, np);
		for (int i = 0; i < 16; i++)
			all &= hidden_v[i] & 1;
		faked = all;
		if (ok && !faked)
			ok = vec_is_pattern(hidden_v, 16, p, np);
		if (ok) {
			ck_assert_msg(faked || !must_fake, "%s: the kernel did not fake mincore", hidden);
			ck_assert_int_eq(pc_can_do_mincore(hfd), !faked);
			ck_assert_int_eq(pc_residency(hfd, 0, 0, 0, &r), 0);
			if (!faked || pc_residency_quality(r) == PC_QUALITY_EXACT) {
				/* the truth: mincore's, or a clean probe's where it fakes */
				ck_assert_int_eq(pc_residency_quality(r), PC_QUALITY_EXACT);
				ck_assert_msg(!faked || pc_test_expect_nowait() != PC_NOWAIT_DESTRUCTIVE,
					      "%s: EXACT where mincore fakes and NOWAIT is destructive",
					      hidden);
				ck_assert_uint_eq(pc_residency_resident(r), np);
				for (size_t k = 0; k < np; k++)
					ck_assert_int_eq(pc_residency_test(r, p[k]), 1);
			} else {
				ck_assert_int_eq(pc_residency_quality(r), PC_QUALITY_UNKNOWN);
			}
			pc_residency_free(r);
			ck_assert_int_eq(pc_can_do_mincore(fd), 1);
		}
		close(hfd);
		close(fd);
	}
	ck_assert_msg(ok, "residency kept moving");
	return faked;
}

static void assert_faked_for_root(const char *plain, const char *hidden, const uint64_t *p,
				  size_t np)
{
	assert_gate_for_root(plain, hidden, p, np, 1);
}

/*
 * An overlay of lower mounted at dir (its upper and work layers at
 * dir-upper and dir-work) with extra options (or ""), tracked for
 * undo_all(); 0, or -errno from mount(2).
 */
static int overlay_mount(const char *lower, const char *dir, const char *extra)
{
	char upper[4200], work[4200], opts[13000];

	snprintf(upper, sizeof(upper), "%s-upper", dir);
	snprintf(work, sizeof(work), "%s-work", dir);
	ck_assert_int_eq(mkdir_p(upper), 0);
	ck_assert_int_eq(mkdir_p(work), 0);
	ck_assert_int_eq(mkdir_p(dir), 0);
	snprintf(opts, sizeof(opts), "lowerdir=%s,upperdir=%s,workdir=%s%s", lower, upper, work,
		 extra);
	if (mount("overlay", dir, "overlay", 0, opts) < 0)
		return -errno;
	track_mount(dir);
	return 0;
}

/*
 * An owner the mount's idmap does not map shows as the overflow id, and the
 * gate finds no owner: root's CAP_FOWNER does not pass, and a 0644 file's
 * pages are faked even for root (seen on 6.18). pc_can_do_mincore() says
 * hidden, pc_residency() unknown; by its plain path the same inode is
 * root's to see.
 */
START_TEST(idmapped_mount_unmapped_owner_hides_from_root)
{
	static const uint64_t p[] = { 1, 5 };
	char plain[4200], mapped[4200];

	/* only 1000-1009 are mapped: on-disk uid 0 has no owner through it,
	 * and shows as the overflow id */
	if (!idmapped_file("idmap-src2", "idmapped2", "root-0644", 0, "1000 5000 10\n",
			   "idmapped_mount_unmapped_owner", plain, mapped))
		return;
	assert_faked_for_root(plain, mapped, p, ARRAY_LEN(p));
	undo_all();
}
END_TEST

/*
 * The same file through an overlay whose lower layer is that idmapped
 * mount. The overlay's own mount is not idmapped, and none of its
 * mountinfo lines shows the layer's idmap, but mincore judges the layer's
 * file through the layer's mount and fakes every page (seen on 6.18):
 * pc_can_do_mincore() must say hidden there too (it said 1), and
 * pc_residency() unknown.
 */
static int is_kernel(int major, int minor)
{
	const struct pc_test_kernel *k = pc_test_kernel();

	return k && k->major == major && k->minor == minor;
}

START_TEST(idmapped_mount_under_overlay_hides_from_root)
{
	static const uint64_t p[] = { 3, 9 };
	const char *ovl = sub("ovl");
	char plain[4200], mapped[4200], over[4200];

	if (!idmapped_file("idmap-src3", "idmapped3", "root-0644", 0, "1000 5000 10\n",
			   "idmapped_mount_under_overlay", plain, mapped))
		return;
	if (overlay_mount(sub("idmapped3"), ovl, "") < 0) {
		pc_test_skip("idmapped_mount_under_overlay",
			     "overlayfs refused an idmapped lower layer (before 5.19)");
		undo_all();
		return;
	}
	snprintf(over, sizeof(over), "%s/root-0644", ovl);
	/* 6.18 fakes here (seen); other kernels are held to their own answer */
	if (!assert_gate_for_root(plain, over, p, ARRAY_LEN(p), is_kernel(6, 18)))
		printf("NOTE: idmapped_mount_under_overlay: this kernel shows root the truth "
		       "through the overlay\n");
	undo_all();
}
END_TEST

/*
 * A metacopy overlay: a file chowned to uid 65534 through it gets a
 * metadata-only copy in the upper layer, and its data (so its mappings)
 * stays root's 0644 file below. fstat and faccessat see uid 65534's file;
 * the gate judges root's, and fakes every page for uid 65534 (seen on
 * 6.18). pc_can_do_mincore() asks the kernel on overlayfs (a page past the
 * end reads resident exactly when faked): 0 for uid 65534 (the prediction
 * said 1), also for an O_PATH fd it cannot map (asked through a reopen; it
 * said 1), 1 for root; pc_residency() unknown for uid 65534.
 */
START_TEST(overlay_metacopy_data_below_hides)
{
	const char *lower = sub("meta-lower"), *ovl = sub("meta-ovl");
	char plain[4200], over[4200], up[4200];
	struct nobody_out o;
	struct stat st;
	int ofd, ret;

	ck_assert_int_eq(mkdir_p(lower), 0);
	snprintf(plain, sizeof(plain), "%s/root-0644", lower);
	make_file(plain, 16, 0644);
	ck_assert_int_eq(chown(plain, 0, 0), 0);
	ret = overlay_mount(lower, ovl, ",metacopy=on");
	if (ret < 0) {
		/* metacopy=on is known since 4.19; older kernels say EINVAL */
		ck_assert_msg(ret == -EINVAL, "overlayfs mount: %s", strerror(-ret));
		pc_test_skip("overlay_metacopy", "overlayfs refused metacopy=on (EINVAL)");
		return;
	}
	snprintf(over, sizeof(over), "%s/root-0644", ovl);
	ck_assert_int_eq(chown(over, PC_TEST_NOBODY, PC_TEST_NOBODY), 0);
	/* a copy-up of the metadata alone, or overlayfs turned metacopy off
	 * (an upper layer without trusted xattrs): then nothing to test */
	snprintf(up, sizeof(up), "%s-upper/root-0644", ovl);
	if (getxattr(up, "trusted.overlay.metacopy", NULL, 0) < 0) {
		pc_test_skip("overlay_metacopy", "the chown copied the data up (no metacopy)");
		undo_all();
		return;
	}
	ck_assert_int_eq(stat(over, &st), 0);
	ck_assert_uint_eq(st.st_uid, PC_TEST_NOBODY);
	ck_assert_int_eq(stat(plain, &st), 0);
	ck_assert_uint_eq(st.st_uid, 0);
	as_nobody(over, -1, 0, &o);
	ck_assert_int_eq(o.can_do, 0);
	assert_hidden(&o.s, 16);
	{
		struct nobody_call c = { .path = over, .flags = O_PATH };
		int can_do = -1;

		ck_assert_int_eq(pc_test_as_nobody(can_do_with_flags, &c, &can_do, sizeof(can_do)),
				 0);
		ck_assert_int_eq(can_do, 0);
	}
	ofd = open(over, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(ofd, 0);
	ck_assert_int_eq(pc_can_do_mincore(ofd), 1);
	close(ofd);
	undo_all();
}
END_TEST

/* ---- files larger than 4 GiB ---------------------------------------------- */

START_TEST(file_beyond_4gib_pages_around_the_boundary)
{
	/* pages on both sides of byte 2^32, and one beyond 8 GiB */
	const uint64_t b4 = (UINT64_C(4) << 30) / ps;
	const uint64_t p[] = { 0, b4 - 1, b4, b4 + 1, 2 * b4 + 3 };
	const uint64_t npages = 2 * b4 + 8;
	const char *path = sub("big");
	struct pc_cachestat cs;
	struct pc_prober *pr = NULL;
	uint8_t hit[ARRAY_LEN(p)];
	uint64_t rev[ARRAY_LEN(p)];
	int fd, ok = 0;

	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)(npages * ps)), 0);
	write_pages(fd, p, ARRAY_LEN(p), 'b');
	ck_assert_int_eq(fsync(fd), 0);
	for (int attempt = 0; attempt < ATTEMPTS && !ok; attempt++) {
		struct snap s, w, c;
		unsigned char v[16];
		void *map;

		set_pattern_fd(fd, p, ARRAY_LEN(p));
		snap_fd(fd, 0, 0, PC_RES_COUNT_ONLY, &c);
		/* a window that starts 4 pages before 4 GiB */
		snap_fd(fd, (b4 - 4) * ps, 16 * ps, 0, &w);
		snap_fd(fd, 0, 0, 0, &s);
		map = mmap(NULL, 16 * ps, PROT_NONE, MAP_SHARED, fd, (off_t)((b4 - 4) * ps));
		ck_assert_ptr_ne(map, MAP_FAILED);
		ck_assert_int_eq(mincore(map, 16 * ps, v), 0);
		munmap(map, 16 * ps);
		ok = (v[2] & 1) == 0 && (v[3] & 1) && (v[4] & 1) && (v[5] & 1) && !(v[6] & 1) &&
		     s.resident == ARRAY_LEN(p);
		if (!ok)
			continue;
		ck_assert_int_eq(s.quality, PC_QUALITY_EXACT);
		ck_assert_uint_eq(s.npages, npages);
		ck_assert_uint_eq(s.file_size, npages * ps);
		ck_assert_uint_eq(c.resident, ARRAY_LEN(p));
		ck_assert_int_eq(w.quality, PC_QUALITY_EXACT);
		ck_assert_uint_eq(w.first_page, b4 - 4);
		ck_assert_uint_eq(w.npages, 16);
		ck_assert_uint_eq(w.resident, 3);
		for (int i = 0; i < 16; i++)
			ck_assert_int_eq(w.bit[i], i >= 3 && i <= 5);
		/* cachestat beyond 4 GiB */
		if (pc_cachestat(fd, b4 * ps, 2 * ps, &cs) == 0)
			ck_assert_uint_eq(cs.cache, 2);
		/* the prober reads there too (highest first: no readahead reaches) */
		for (size_t i = 0; i < ARRAY_LEN(p); i++)
			rev[i] = p[ARRAY_LEN(p) - 1 - i];
		ck_assert_int_eq(pc_prober_new(0, &pr), 0);
		ck_assert_int_eq(pc_prober_probe(pr, fd, rev, ARRAY_LEN(rev), hit),
				 (ssize_t)ARRAY_LEN(rev));
		pc_prober_free(pr);
		for (size_t i = 0; i < ARRAY_LEN(p); i++)
			ck_assert_int_eq(hit[i], 1);
	}
	ck_assert_msg(ok, "residency kept moving");
	close(fd);
}
END_TEST

/* ---- a sparse 1 TiB file -------------------------------------------------- */

static long vm_kib(const char *key)
{
	char line[256];
	long v = -1;
	FILE *f = fopen("/proc/self/status", "re");

	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, key, strlen(key)) == 0 && line[strlen(key)] == ':')
			v = strtol(line + strlen(key) + 1, NULL, 10);
	fclose(f);
	return v;
}

/* Reset the peak RSS to the current RSS. */
static void reset_hwm(void)
{
	int fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "5", 1), 1);
	close(fd);
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/*
 * A sparse file past 4 GiB, answered with bounded memory. 1 TiB where
 * cachestat answers the count in one call; where it is missing (before
 * 6.5, valgrind) the answer is a mincore walk, 2^28 pages of it for 1 TiB
 * (44 s per call in the 6.1 guest under emulation), so 16 GiB there:
 * still page indexes past 2^20 and offsets past 2^32.
 */
START_TEST(sparse_1tib_file_bounded_memory)
{
	const uint64_t size = have_cachestat() ? UINT64_C(1) << 40 : UINT64_C(1) << 34;
	const uint64_t npages = size / ps;
	const uint64_t p[] = { 0, npages / 2 + 7, npages - 1 };
	const long bitmap_kib = (long)(npages / 8 / 1024); /* 32 MiB for 1 TiB of 4 KiB pages */
	const char *path = sub("tera");
	struct pc_residency *r = NULL;
	struct pc_run run;
	long base, peak;
	double t;
	int fd;

	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ck_assert_int_ge(fd, 0);
	if (ftruncate(fd, (off_t)size) < 0) {
		pc_test_skip("sparse_1tib", "the filesystem refuses a sparse file that large");
		close(fd);
		return;
	}
	/* holes: a read caches a zero page */
	set_pattern_fd(fd, p, ARRAY_LEN(p));

	reset_hwm();
	base = vm_kib("VmRSS");
	t = now_s();
	ck_assert_int_eq(pc_residency(fd, 0, 0, PC_RES_COUNT_ONLY, &r), 0);
	t = now_s() - t;
	peak = vm_kib("VmHWM");
	printf("sparse_1tib: %llu GiB, count only %.3f s, peak RSS +%ld KiB\n",
	       (unsigned long long)(size >> 30), t, peak - base);
	ck_assert_int_eq(pc_residency_quality(r), PC_QUALITY_EXACT);
	ck_assert_uint_eq(pc_residency_npages(r), npages);
	ck_assert_uint_eq(pc_residency_resident(r), ARRAY_LEN(p));
	ck_assert_int_eq(pc_residency_test(r, 0), -ENODATA);
	pc_residency_free(r);
	/* one cachestat call: no bitmap, no window; or mincore's window */
	ck_assert_int_lt(peak - base, have_cachestat() ? 4096 : 8192);

	reset_hwm();
	base = vm_kib("VmRSS");
	t = now_s();
	ck_assert_int_eq(pc_residency(fd, 0, 0, 0, &r), 0);
	t = now_s() - t;
	peak = vm_kib("VmHWM");
	printf("sparse_1tib: bitmap %.3f s, peak RSS +%ld KiB (bitmap %ld KiB)\n", t,
	       peak - base, bitmap_kib);
	/* the bitmap at most, plus a fixed window and some slack */
	ck_assert_int_lt(peak - base, bitmap_kib + 8192);
	ck_assert_int_eq(pc_residency_quality(r), PC_QUALITY_EXACT);
	ck_assert_uint_eq(pc_residency_resident(r), ARRAY_LEN(p));
	for (size_t i = 0; i < ARRAY_LEN(p); i++)
		ck_assert_int_eq(pc_residency_test(r, p[i]), 1);
	ck_assert_int_eq(pc_residency_next_run(r, 1, &run), 1);
	ck_assert_uint_eq(run.page, p[1]);
	ck_assert_uint_eq(run.npages, 1);
	pc_residency_free(r);
	close(fd);
	unlink(path);
}
END_TEST

/* ---- a file growing while scanned ----------------------------------------- */

struct grower {
	const char *path;
	int stop;               /* __atomic: read by the grower, set by the case */
};

static void *grow_loop(void *arg)
{
	struct grower *g = arg;
	int fd = open(g->path, O_RDWR | O_CLOEXEC);
	char byte = 'g';

	if (fd < 0)
		return NULL;
	for (uint64_t i = 1; !__atomic_load_n(&g->stop, __ATOMIC_RELAXED); i++) {
		/* grow by 64 pages at a time, writing the last one; restart at 4096 */
		uint64_t pages = 64 + (i % 64) * 64;

		if (pwrite(fd, &byte, 1, (off_t)((pages - 1) * ps)) < 0)
			break;
		if (i % 64 == 0 && ftruncate(fd, (off_t)(64 * ps)) < 0)
			break;
	}
	close(fd);
	return NULL;
}

START_TEST(file_growing_during_scans_covers_the_start_size)
{
	const char *path = sub("growing");
	struct grower g = { .path = path };
	int rounds = pc_test_under_valgrind() ? 30 : 300;
	pthread_t t;
	int fd;

	make_file(path, 64, 0644);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pthread_create(&t, NULL, grow_loop, &g), 0);
	for (int i = 0; i < rounds; i++) {
		static const unsigned int fl[] = { 0, PC_RES_FORCE_MINCORE, PC_RES_COUNT_ONLY };
		struct pc_residency *r = NULL;
		int ret = pc_residency(fd, 0, 0, fl[i % 3], &r);

		ck_assert_msg(ret == 0, "round %d: %d", i, ret);
		/* the result covers the size seen when the scan started */
		ck_assert_uint_eq(pc_residency_npages(r),
				  (pc_residency_file_size(r) + ps - 1) / ps);
		ck_assert_uint_ge(pc_residency_file_size(r), 64 * ps);
		ck_assert_int_eq(pc_residency_quality(r), PC_QUALITY_EXACT);
		ck_assert_uint_le(pc_residency_resident(r), pc_residency_npages(r));
		pc_residency_free(r);
	}
	__atomic_store_n(&g.stop, 1, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
	close(fd);
}
END_TEST

/* ---- a deleted file that is still open ------------------------------------ */

START_TEST(deleted_but_open_file_is_measured)
{
	static const uint64_t p[] = { 1, 2, 30 };
	const char *path = sub("deleted");
	struct nobody_out o;
	struct stat st;
	int fd, ok = 0;

	make_file(path, 32, 0644);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	ck_assert_int_eq(st.st_nlink, 0);
	for (int attempt = 0; attempt < ATTEMPTS && !ok; attempt++) {
		unsigned char v[32];
		struct snap s, c;

		set_pattern_fd(fd, p, ARRAY_LEN(p));
		snap_fd(fd, 0, 0, 0, &s);
		snap_fd(fd, 0, 0, PC_RES_COUNT_ONLY, &c);
		mincore_fd(fd, 32, v);
		ok = vec_is_pattern(v, 32, p, ARRAY_LEN(p));
		if (ok) {
			assert_exact_pattern(&s, 32, p, ARRAY_LEN(p));
			ck_assert_uint_eq(c.resident, ARRAY_LEN(p));
			ck_assert_int_eq(pc_can_do_mincore(fd), 1);
		}
	}
	ck_assert_msg(ok, "residency kept moving");
	/* uid 65534 with the inherited fd: hidden; probing works through
	 * /proc/self/fd although the name is gone */
	as_nobody(NULL, fd, 0, &o);
	assert_hidden(&o.s, 32);
	ok = 0;
	for (int attempt = 0; attempt < ATTEMPTS && !ok; attempt++) {
		set_pattern_fd(fd, p, ARRAY_LEN(p));
		as_nobody(NULL, fd, PC_RES_ALLOW_PERTURB, &o);
		ok = o.s.resident == ARRAY_LEN(p);
		if (ok) {
			assert_exact_pattern(&o.s, 32, p, ARRAY_LEN(p));
			ck_assert_int_eq(o.s.perturbed, nowait_of_dir(scratch()) != PC_NOWAIT_CLEAN);
		}
	}
	ck_assert_msg(ok, "probing as uid 65534 never gave the pattern");
	close(fd);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("special");
	TCase *files = tcase_create("files");
	TCase *mounts_tc = tcase_create("mounts");
	TCase *sizes = tcase_create("sizes");
	SRunner *sr;
	int failed;

	ps = (uint64_t)sysconf(_SC_PAGESIZE);
	if (!pc_test_is_root()) {
		printf("SKIP: test-special: needs root (mounts, loop devices, uid 65534)\n");
		return 77;
	}
	/* our own mount namespace: nothing we mount is seen outside */
	if (unshare(CLONE_NEWNS) < 0 || mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) < 0) {
		printf("SKIP: test-special: no private mount namespace: %s\n", strerror(errno));
		return 77;
	}
	tcase_add_test(files, proc_files_are_empty_and_exact);
	tcase_add_test(files, sys_file_one_page_never_cached);
	tcase_add_test(files, char_devices_refused_everywhere);
	tcase_add_test(files, block_device_cache_dies_with_its_last_opener);
	tcase_add_test(files, fifo_and_socket_never_block);
	tcase_add_test(files, deleted_but_open_file_is_measured);
	tcase_set_timeout(files, 60);
	suite_add_tcase(s, files);

	tcase_add_test(mounts_tc, tmpfs_resident_stays_resident);
	tcase_add_test(mounts_tc, hugetlbfs_is_unknown_to_everyone);
	tcase_add_test(mounts_tc, overlayfs_counts_the_real_files_pages);
	tcase_add_test(mounts_tc, readonly_bind_mount_keeps_the_gate_open);
	tcase_add_test(mounts_tc, readonly_superblock_hides_from_writers_by_permission);
	tcase_add_test(mounts_tc, idmapped_mount_owner_through_the_idmap);
	tcase_add_test(mounts_tc, idmapped_mount_unmapped_owner_hides_from_root);
	tcase_add_test(mounts_tc, idmapped_mount_under_overlay_hides_from_root);
	tcase_add_test(mounts_tc, overlay_metacopy_data_below_hides);
	tcase_set_timeout(mounts_tc, 60);
	suite_add_tcase(s, mounts_tc);

	tcase_add_test(sizes, file_beyond_4gib_pages_around_the_boundary);
	tcase_add_test(sizes, sparse_1tib_file_bounded_memory);
	tcase_add_test(sizes, file_growing_during_scans_covers_the_start_size);
	tcase_set_timeout(sizes, 240);
	suite_add_tcase(s, sizes);

	sr = srunner_create(s);
	pc_test_cases_dir(); /* a failed case leaves no directory behind */
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
