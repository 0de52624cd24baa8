/* SPDX-License-Identifier: MIT */
/*
 * The process on the running kernel: the kernel backend it owns, with the
 * facts it detected once (the modes, every filesystem's NOWAIT mode) lent
 * to the strategy, and the public entry points that use them. The layer
 * above kernel/ and strategy/ (doc/design.md, "Layers").
 */
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernel/kernel.h"
#include "opts.h"

static int facts_modes(struct pc_backend *b, struct pc_modes *out)
{
	(void)b;
	/* A detector that failed (no system file, no memfd) knows nothing:
	 * UNKNOWN makes the strategy rely on per-file probes alone. */
	out->mincore = pc_detect_mincore();
	if (out->mincore < 0)
		out->mincore = PC_MINCORE_UNKNOWN;
	out->cachestat = pc_detect_cachestat();
	if (out->cachestat < 0)
		out->cachestat = PC_CACHESTAT_UNKNOWN;
	return 0;
}

/* The NOWAIT mode learned in the directory that f's name leads to (a
 * scratch file there only), or PC_NOWAIT_UNKNOWN. */
static int nowait_own_dir(struct pc_bfile *f, dev_t dev)
{
	char link[64], path[PATH_MAX];
	struct stat st;
	ssize_t len;
	char *slash;
	int dirfd, mode;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", f->fd);
	len = readlink(link, path, sizeof(path) - 1);
	if (len <= 0 || path[0] != '/')
		return PC_NOWAIT_UNKNOWN;
	path[len] = '\0';
	slash = strrchr(path, '/');
	if (slash == path)
		slash[1] = '\0';
	else
		*slash = '\0';
	dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0) {
		mode = pc_neg_errno();
		return pc_err_is_resource(mode) ? mode : PC_NOWAIT_UNKNOWN;
	}
	/* scratch file only: reading a cold page of someone else's file would
	 * perturb the cache the caller did not let us touch; a name renamed
	 * across filesystems teaches nothing */
	if (fstat(dirfd, &st) == 0 && st.st_dev == dev)
		mode = pc_nowait_for_dir(dirfd, 0);
	else
		mode = PC_NOWAIT_UNKNOWN;
	close(dirfd);
	return mode;
}

static int facts_nowait_mode(struct pc_backend *b, struct pc_bfile *f)
{
	struct stat st;
	long fstype;
	int mode;

	(void)b;
	if (fstat(f->fd, &st) < 0)
		return pc_neg_errno();
	/* A block device's page cache is its own, not that of the filesystem
	 * holding its node (devtmpfs answers EOPNOTSUPP; the device does not),
	 * and there is nowhere to write a scratch file on it: unknown. */
	if (S_ISBLK(st.st_mode))
		return PC_NOWAIT_UNKNOWN;
	if (pc_fs_key(f->fd, &st.st_dev, &fstype) < 0)
		return PC_NOWAIT_UNKNOWN;
	mode = pc_nowait_cached(st.st_dev, fstype);
	if (mode >= 0)
		return mode;
	mode = nowait_own_dir(f, st.st_dev);
	/* nothing to learn there (a directory the caller may not write):
	 * what a miss does is the kernel's, learned elsewhere */
	if (mode == PC_NOWAIT_UNKNOWN)
		mode = pc_nowait_borrowed(fstype, NULL, 0);
	if (pc_err_is_resource(mode))
		return mode; /* short of memory or descriptors: not a fact to act on */
	return mode < 0 ? PC_NOWAIT_UNKNOWN : mode;
}

/* ---- once per process on the real kernel --------------------------------- */

/*
 * Facts are cached once found. An error (-ENOMEM, -EMFILE ...) is returned
 * but not cached, so a later call tries again; two threads asking first may
 * both detect, side-effect free, and find the same answer.
 */
#define PC_NOT_DETECTED INT_MIN

static atomic_int mincore_mode = PC_NOT_DETECTED;
static atomic_int cachestat_mode = PC_NOT_DETECTED;

static int detect_cached(atomic_int *cache, int (*detect)(struct pc_backend *b))
{
	int mode = atomic_load_explicit(cache, memory_order_acquire);

	if (mode != PC_NOT_DETECTED)
		return mode;
	mode = detect(pc_kernel_backend());
	if (mode >= 0)
		atomic_store_explicit(cache, mode, memory_order_release);
	return mode;
}

PC_EXPORT int pc_detect_mincore(void)
{
	return detect_cached(&mincore_mode, pc_detect_mincore_on);
}

PC_EXPORT int pc_detect_cachestat(void)
{
	return detect_cached(&cachestat_mode, pc_detect_cachestat_on);
}

/* kept by the kernel layer, whose prober asks for every ring it sets up */
PC_EXPORT int pc_detect_io_uring(void)
{
	return pc_kernel_io_uring();
}

/* NOWAIT results per filesystem, keyed by st_dev and the filesystem's type
 * (in-memory filesystems reuse device numbers after an unmount, so a new
 * mount of another kind must not inherit the old answer). Filesystems are few; the
 * table is bounded and a full table just means detecting again. Detection
 * itself is serialized, so that threads asking about the same filesystem
 * at once write one scratch file, not one each. */
#define PC_NOWAIT_SLOTS 64

static pthread_mutex_t nowait_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t nowait_detect_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	dev_t dev;
	long fstype;
	int mode;
} nowait_table[PC_NOWAIT_SLOTS];
static unsigned int nowait_used;

int pc_nowait_cached(dev_t dev, long fstype)
{
	int mode = -ENOENT;

	pthread_mutex_lock(&nowait_lock);
	for (unsigned int i = 0; i < nowait_used; i++)
		if (nowait_table[i].dev == dev && nowait_table[i].fstype == fstype)
			mode = nowait_table[i].mode;
	pthread_mutex_unlock(&nowait_lock);
	return mode;
}

static void nowait_remember(dev_t dev, long fstype, int mode)
{
	pthread_mutex_lock(&nowait_lock);
	if (nowait_used < PC_NOWAIT_SLOTS) {
		unsigned int i;

		for (i = 0; i < nowait_used; i++)
			if (nowait_table[i].dev == dev && nowait_table[i].fstype == fstype)
				break;
		nowait_table[i].dev = dev;
		nowait_table[i].fstype = fstype;
		nowait_table[i].mode = mode;
		if (i == nowait_used)
			nowait_used++;
	}
	pthread_mutex_unlock(&nowait_lock);
}

/* The mode of the filesystem of directory fd (dev, fstype), detected once. */
static int nowait_for_fd(int fd, dev_t dev, long fstype, int may_use_cold_page)
{
	int mode;

	pthread_mutex_lock(&nowait_detect_lock);
	mode = pc_nowait_cached(dev, fstype);
	if (mode < 0)
		mode = pc_detect_nowait_on_dir(pc_kernel_backend(), fd, may_use_cold_page);
	/* UNKNOWN may be this directory's fault (read-only, full): another
	 * directory of the same filesystem may do better next time. */
	if (mode > PC_NOWAIT_UNKNOWN)
		nowait_remember(dev, fstype, mode);
	pthread_mutex_unlock(&nowait_detect_lock);
	return mode;
}

int pc_nowait_borrowed(long fstype, char *where, size_t size)
{
	const char *dirs[] = { secure_getenv("TMPDIR"), "/var/tmp", "/tmp", secure_getenv("HOME") };

	if (!pc_fs_shared_read_path(fstype))
		return PC_NOWAIT_UNKNOWN;
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		long dir_fstype;
		dev_t dev;
		int fd, mode;

		if (!dirs[i] || dirs[i][0] != '/' || strlen(dirs[i]) >= PATH_MAX)
			continue;
		fd = open(dirs[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0) {
			mode = pc_neg_errno();
			if (pc_err_is_resource(mode))
				return mode;
			continue;
		}
		mode = pc_fs_key(fd, &dev, &dir_fstype);
		/* only the scratch file there: never a cold page of a file */
		if (mode == 0)
			mode = pc_fs_shared_read_path(dir_fstype) ?
				       nowait_for_fd(fd, dev, dir_fstype, 0) : PC_NOWAIT_UNKNOWN;
		close(fd);
		if (pc_err_is_resource(mode))
			return mode;
		if (mode == PC_NOWAIT_CLEAN || mode == PC_NOWAIT_DESTRUCTIVE) {
			if (where && size)
				snprintf(where, size, "%s", dirs[i]);
			return mode;
		}
	}
	return PC_NOWAIT_UNKNOWN;
}

static int nowait_for_dir(int dirfd, int may_use_cold_page, char *where, size_t size)
{
	long fstype = 0;
	dev_t dev;
	int fd, mode;

	if (where && size)
		where[0] = '\0';
	if (dirfd < 0 && dirfd != AT_FDCWD)
		return -EBADF;
	fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return pc_neg_errno();
	mode = pc_fs_key(fd, &dev, &fstype);
	if (mode == 0)
		mode = nowait_for_fd(fd, dev, fstype, 0);
	/* side-effect free first: a scratch file elsewhere, then (when the
	 * caller allows it) a cold page of a file here */
	if (mode == PC_NOWAIT_UNKNOWN)
		mode = pc_nowait_borrowed(fstype, where, size);
	if (mode == PC_NOWAIT_UNKNOWN && may_use_cold_page)
		mode = nowait_for_fd(fd, dev, fstype, 1);
	close(fd);
	return mode;
}

int pc_nowait_for_dir(int dirfd, int may_use_cold_page)
{
	return nowait_for_dir(dirfd, may_use_cold_page, NULL, 0);
}

PC_EXPORT int pc_detect_nowait(int dirfd)
{
	return pc_nowait_for_dir(dirfd, 1);
}

PC_EXPORT int pc_detect_nowait_flags(int dirfd, unsigned int flags)
{
	if (flags & ~PC_DETECT_ALLOW_PERTURB)
		return -EINVAL;
	return pc_nowait_for_dir(dirfd, !!(flags & PC_DETECT_ALLOW_PERTURB));
}

PC_EXPORT int pc_detect_nowait_origin(int dirfd, char *where, size_t size)
{
	if (!where || !size)
		return -EINVAL;
	return nowait_for_dir(dirfd, 0, where, size);
}

PC_EXPORT int pc_can_do_mincore(int fd)
{
	return pc_gate_can_do_mincore(fd, pc_detect_mincore);
}

/* ---- the kernel backend, and pc_residency() on it ------------------------- */

static const struct pc_facts kernel_facts = {
	.modes = facts_modes,
	.nowait_mode = facts_nowait_mode,
};

static struct pc_backend kernel_backend = {
	.ops = &pc_kernel_ops,
	.facts = &kernel_facts,
	.ctx = NULL,
};

struct pc_backend *pc_kernel_backend(void)
{
	return &kernel_backend;
}

int pc_kernel_residency(int fd, const struct pc_file_facts *facts, uint64_t offset,
			uint64_t length, unsigned int flags, struct pc_residency **out)
{
	/* on the stack: nothing to allocate for the caller's own fd */
	struct pc_bfile f = { .fd = fd };
	int ret;

	if (fd < 0)
		return -EBADF;
	if (facts) {
		f.have_facts = 1;
		f.facts_mode = (mode_t)facts->mode;
		f.facts_size = facts->file_size;
		f.mnt_id = facts->mnt_id;
	}
	ret = pc_residency_on(&kernel_backend, &f, offset, length, flags, out);
	pc_kernel_bfile_release(&f);
	return ret;
}

PC_EXPORT int pc_residency(int fd, uint64_t offset, uint64_t length, unsigned int flags,
			   struct pc_residency **out)
{
	if (!out)
		return -EINVAL;
	return pc_kernel_residency(fd, NULL, offset, length, flags, out);
}

PC_EXPORT int pc_residency_facts(int fd, const struct pc_file_facts *facts, uint64_t offset,
				 uint64_t length, unsigned int flags, struct pc_residency **out)
{
	struct pc_file_facts fx;
	int ret;

	if (!out || !facts)
		return -EINVAL;
	ret = pc_opts_copy(&fx, sizeof(fx), facts, facts->size);
	if (ret < 0)
		return ret;
	return pc_kernel_residency(fd, &fx, offset, length, flags, out);
}
