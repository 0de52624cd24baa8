/* SPDX-License-Identifier: MIT */
/*
 * The backend that asks the running kernel: mincore through fresh untouched
 * mappings, cachestat, RWF_NOWAIT probes, and the detector's scratch files.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <liburing.h>
#include <linux/fs.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "kernel.h"
#include "uring-ring.h"
#include "valgrind-compat.h"

#ifndef HUGETLBFS_MAGIC
#define HUGETLBFS_MAGIC 0x958458f6
#endif
#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC 0x01021994
#endif

/* Files of more pages than this get one mapping for all their mincore
 * windows, instead of one mmap/munmap per window. */
#define PC_MAP_WHOLE_MIN_PAGES 16384

static long k_page_size(struct pc_backend *b)
{
	(void)b;
	return pc_page_size();
}

static int bfile_new(int fd, int owned, struct pc_bfile **out)
{
	struct pc_bfile *f = calloc(1, sizeof(*f));

	if (!f) {
		if (owned)
			close(fd);
		return -ENOMEM;
	}
	f->fd = fd;
	f->owned = owned;
	*out = f;
	return 0;
}

int pc_kernel_bfile_wrap(int fd, struct pc_bfile **out)
{
	if (fd < 0)
		return -EBADF;
	return bfile_new(fd, 0, out);
}


void pc_kernel_bfile_release(struct pc_bfile *f)
{
	pc_prober_free(f->prober);
	if (f->map)
		munmap(f->map, (size_t)(f->map_npages * (uint64_t)pc_page_size()));
	if (f->owned)
		close(f->fd);
}

static void k_close(struct pc_backend *b, struct pc_bfile *f)
{
	(void)b;
	if (!f)
		return;
	pc_kernel_bfile_release(f);
	free(f);
}

/* statx(2) mask bit for a mount id that is never reused (6.8+); Debian
 * 12's headers lack it. Older kernels leave it out of stx_mask. */
#ifndef STATX_MNT_ID_UNIQUE
#define STATX_MNT_ID_UNIQUE 0x00004000U
#endif

static int type_size(struct pc_bfile *f, mode_t mode, uint64_t size, struct pc_bstat *out)
{
	if (S_ISREG(mode)) {
		out->type = PC_BFILE_REGULAR;
		out->size = size;
	} else if (S_ISBLK(mode)) {
		uint64_t bytes;

		if (ioctl(f->fd, BLKGETSIZE64, &bytes) < 0)
			return pc_neg_errno();
		out->type = PC_BFILE_BLOCK;
		out->size = bytes;
	} else {
		out->type = PC_BFILE_OTHER;
		out->size = 0;
	}
	return 0;
}

/* One statx for the type, the size and the mount (which tells fs_check the
 * filesystem without an fstatfs per file); fstat where statx is missing
 * (a seccomp filter from before it). None when the caller gave its own. */
static int k_fstat(struct pc_backend *b, struct pc_bfile *f, struct pc_bstat *out)
{
	struct statx stx;
	struct stat st;

	(void)b;
	if (f->have_facts)
		return type_size(f, f->facts_mode, f->facts_size, out);
	if (statx(f->fd, "", AT_EMPTY_PATH, STATX_TYPE | STATX_SIZE | STATX_MNT_ID_UNIQUE,
		  &stx) == 0) {
		if (stx.stx_mask & STATX_MNT_ID_UNIQUE)
			f->mnt_id = stx.stx_mnt_id;
		return type_size(f, stx.stx_mode, stx.stx_size, out);
	}
	if (errno != ENOSYS)
		return pc_neg_errno();
	if (fstat(f->fd, &st) < 0)
		return pc_neg_errno();
	return type_size(f, st.st_mode, st.st_size > 0 ? (uint64_t)st.st_size : 0, out);
}

/* Map a large file once for all its windows; the mapping is never touched,
 * so it stays as fresh as one made per window. Failing (RLIMIT_AS) is fine:
 * the windows map themselves then. */
static void map_whole(struct pc_bfile *f, uint64_t ps)
{
	struct pc_bstat st;
	uint64_t npages;
	void *map;

	f->map_tried = 1;
	if (k_fstat(NULL, f, &st) < 0)
		return;
	npages = pc_div_round_up(st.size, ps);
	if (npages <= PC_MAP_WHOLE_MIN_PAGES || npages > (SIZE_MAX - ps) / ps ||
	    npages * ps > (uint64_t)INT64_MAX)
		return;
	map = mmap(NULL, (size_t)(npages * ps), PROT_NONE, MAP_SHARED, f->fd, 0);
	if (map == MAP_FAILED)
		return;
	f->map = map;
	f->map_npages = npages;
}

/*
 * Filesystems where a primitive looks at the wrong pages (seen on 6.18):
 * - overlayfs: the data sits in the page cache of the upper or lower
 *   file; cachestat counts the overlay inode's own mapping, which is
 *   always empty, while a mapping (and so mincore) is of the real file.
 * - hugetlbfs: a mapping must be huge-page aligned (EINVAL for the 4 KiB
 *   windows), and mincore there reports only the huge PTEs present in the
 *   caller's page tables, not the file's pages; cachestat and RWF_NOWAIT
 *   answer EOPNOTSUPP. Nothing can tell a hugetlbfs file's residency.
 * Learned once per file with fstatfs, or once per mount and thread where
 * k_fstat saw a mount id that the kernel never reuses (a mount's
 * superblock, and so its filesystem type, never changes); a failing
 * fstatfs blinds nothing and is not remembered.
 */
#define PC_MNT_CACHE 8

struct mnt_fs {
	uint64_t mnt_id;           /* 0: empty slot */
	int blind_cachestat, blind_mincore, holes_uncached;
};

static __thread struct mnt_fs mnt_cache[PC_MNT_CACHE];
static __thread unsigned int mnt_cache_next;

static void fs_check(struct pc_bfile *f)
{
	unsigned long type;
	struct mnt_fs *m;

	if (f->fs_known)
		return;
	f->fs_known = 1;
	if (f->mnt_id) {
		for (unsigned int i = 0; i < PC_MNT_CACHE; i++) {
			if (mnt_cache[i].mnt_id == f->mnt_id) {
				f->fs_blind_cachestat = mnt_cache[i].blind_cachestat;
				f->fs_blind_mincore = mnt_cache[i].blind_mincore;
				f->fs_holes_uncached = mnt_cache[i].holes_uncached;
				return;
			}
		}
	}
	if (pc_fs_type(f->fd, &type) < 0)
		return;
	f->fs_blind_cachestat = type == OVERLAYFS_SUPER_MAGIC;
	f->fs_blind_mincore = type == HUGETLBFS_MAGIC;
	f->fs_holes_uncached = type == TMPFS_MAGIC;
	if (!f->mnt_id)
		return;
	m = &mnt_cache[mnt_cache_next++ % PC_MNT_CACHE];
	m->mnt_id = f->mnt_id;
	m->blind_cachestat = f->fs_blind_cachestat;
	m->blind_mincore = f->fs_blind_mincore;
	m->holes_uncached = f->fs_holes_uncached;
}

/* tmpfs keeps a file's data in the page cache (or swap) and nowhere else:
 * SEEK_DATA finds every page that may be cached, and a hole has none
 * (reading one copies zeroes without adding a page). */
static int k_next_data(struct pc_backend *b, struct pc_bfile *f, uint64_t page, uint64_t *data)
{
	uint64_t ps = (uint64_t)pc_page_size();
	off_t off;

	(void)b;
	fs_check(f);
	if (!f->fs_holes_uncached)
		return -EOPNOTSUPP;
	if (page > (uint64_t)INT64_MAX / ps)
		return -EOVERFLOW;
	off = lseek(f->fd, (off_t)(page * ps), SEEK_DATA);
	if (off < 0) {
		if (errno != ENXIO)
			return pc_neg_errno();
		*data = UINT64_MAX; /* nothing but a hole up to EOF, or past EOF */
		return 0;
	}
	*data = (uint64_t)off / ps;
	return 0;
}

static int k_mincore(struct pc_backend *b, struct pc_bfile *f, uint64_t page,
		     uint64_t npages, unsigned char *vec)
{
	uint64_t ps = (uint64_t)pc_page_size();
	void *map;
	int ret = 0;

	(void)b;
	if (npages == 0)
		return 0;
	fs_check(f);
	if (f->fs_blind_mincore)
		return -ENODEV; /* as for a file without mmap: mincore cannot answer */
	if (!f->map_tried && npages < PC_MAP_WHOLE_MIN_PAGES + 1)
		map_whole(f, ps);
	if (f->map && page < f->map_npages && npages <= f->map_npages - page) {
		if (mincore((char *)f->map + page * ps, (size_t)(npages * ps), vec) < 0)
			return pc_neg_errno();
		return 0;
	}
	if (page > (uint64_t)INT64_MAX / ps || npages > (SIZE_MAX - ps) / ps ||
	    page * ps > (uint64_t)INT64_MAX - npages * ps)
		return -EOVERFLOW;
	/* A fresh mapping that nothing can touch: PTEs stay empty, so mincore
	 * answers from the page cache (or fakes, if the gate fails). PROT_NONE
	 * also keeps valgrind from reading the file's head (it looks for ELF
	 * in readable mappings), which cached pages under the test suite.
	 * mmap still needs an fd open for reading. */
	map = mmap(NULL, (size_t)(npages * ps), PROT_NONE, MAP_SHARED, f->fd, (off_t)(page * ps));
	if (map == MAP_FAILED)
		return pc_neg_errno();
	if (mincore(map, (size_t)(npages * ps), vec) < 0)
		ret = pc_neg_errno();
	munmap(map, (size_t)(npages * ps));
	return ret;
}

static int k_cachestat(struct pc_backend *b, struct pc_bfile *f, uint64_t off, uint64_t len,
		       unsigned int flags, struct pc_cachestat *out)
{
	(void)b;
	fs_check(f);
	if (f->fs_blind_cachestat)
		return -EOPNOTSUPP; /* as on hugetlbfs: cachestat cannot answer */
	return pc_sys_cachestat(f->fd, off, len, flags, out);
}

static ssize_t k_probe(struct pc_backend *b, struct pc_bfile *f, const uint64_t *pages,
		       size_t n, uint8_t *resident, int *source)
{
	(void)b;
	/* Always the prober (io_uring where it works): on 6.18 a preadv2
	 * miss sometimes returns data read in by the readahead it started
	 * itself (a false hit); the io_uring path was not seen doing that. */
	if (!f->prober) {
		int ret = pc_prober_new(0, &f->prober);

		if (ret < 0)
			return ret;
	}
	*source = pc_prober_source(f->prober);
	return pc_prober_probe(f->prober, f->fd, pages, n, resident);
}

static int k_reopen_random(struct pc_backend *b, struct pc_bfile *f, struct pc_bfile **out)
{
	char path[64];
	int fd, err;

	(void)b;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", f->fd);
	/* O_NOATIME where we may (owner, CAP_FOWNER): probes are not use. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOATIME);
	if (fd < 0 && errno == EPERM)
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return pc_neg_errno();
	err = posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
	if (err) {
		close(fd);
		return -err;
	}
	return bfile_new(fd, 1, out);
}

static int k_gate_predict(struct pc_backend *b, struct pc_bfile *f)
{
	(void)b;
	return pc_gate_predict(f->fd);
}

static int k_scratch_new(struct pc_backend *b, int dirfd, uint64_t npages, struct pc_bfile **out)
{
	uint64_t ps = (uint64_t)pc_page_size();
	int fd;

	(void)b;
	if (dirfd < 0)
		fd = memfd_create("pagecache-probe", MFD_CLOEXEC);
	else
		fd = openat(dirfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0)
		return pc_neg_errno();
	if (ftruncate(fd, (off_t)(npages * ps)) < 0) {
		int err = pc_neg_errno();

		close(fd);
		return err;
	}
	return bfile_new(fd, 1, out);
}

static int k_write_page(struct pc_backend *b, struct pc_bfile *f, uint64_t page)
{
	uint64_t ps = (uint64_t)pc_page_size();
	char *buf = malloc(ps);
	ssize_t n;

	(void)b;
	if (!buf)
		return -ENOMEM;
	memset(buf, 0x5a, ps);
	n = pwrite(f->fd, buf, ps, (off_t)(page * ps));
	free(buf);
	if (n < 0)
		return pc_neg_errno();
	return (uint64_t)n == ps ? 0 : -EIO;
}

static int k_sync(struct pc_backend *b, struct pc_bfile *f)
{
	(void)b;
	return fdatasync(f->fd) < 0 ? pc_neg_errno() : 0;
}

static int k_evict(struct pc_backend *b, struct pc_bfile *f, uint64_t page, uint64_t npages)
{
	uint64_t ps = (uint64_t)pc_page_size();

	(void)b;
	return pc_evict(f->fd, page * ps, npages * ps);
}

static int k_system_file(struct pc_backend *b, struct pc_bfile **out)
{
	Dl_info info;
	int fd;

	(void)b;
	/* The libc that holds printf: root-owned, read-only to users, and
	 * its first page is cached because this process runs from it. */
	if (!dladdr((void *)printf, &info) || !info.dli_fname || info.dli_fname[0] != '/')
		return -ENOENT;
	fd = open(info.dli_fname, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return pc_neg_errno();
	return bfile_new(fd, 1, out);
}

/* A page of fd that is not resident, among its first few windows. */
static int cold_page_of(struct pc_bfile *f, uint64_t *page)
{
	enum { WINDOW = 256, WINDOWS = 16 };
	uint64_t ps = (uint64_t)pc_page_size();
	unsigned char vec[WINDOW];
	struct pc_bstat st;
	uint64_t npages;

	if (k_fstat(NULL, f, &st) < 0 || st.type != PC_BFILE_REGULAR)
		return -ENOENT;
	npages = st.size / ps; /* whole pages only: a partial last page never misses cleanly */
	for (uint64_t w = 0; w < WINDOWS && w * WINDOW < npages; w++) {
		uint64_t n = npages - w * WINDOW < WINDOW ? npages - w * WINDOW : WINDOW;

		if (k_mincore(NULL, f, w * WINDOW, n, vec) < 0)
			return -ENOENT;
		for (uint64_t i = 0; i < n; i++) {
			if (!(vec[i] & 1)) {
				*page = w * WINDOW + i;
				return 0;
			}
		}
	}
	return -ENOENT;
}

static int k_find_cold_page(struct pc_backend *b, int dirfd, struct pc_bfile **out,
			    uint64_t *page)
{
	enum { MAX_ENTRIES = 64 };
	struct dirent *de;
	int seen = 0, ret = -ENOENT;
	DIR *dir;
	int dfd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (dfd < 0)
		return pc_neg_errno();
	dir = fdopendir(dfd);
	if (!dir) {
		close(dfd);
		return -ENOMEM;
	}
	while (ret < 0 && seen++ < MAX_ENTRIES && (de = readdir(dir))) {
		struct pc_bfile *f;
		unsigned char v = 1;
		struct pc_bstat st;
		struct stat lst;
		int fd, pathfd;

		if (de->d_type != DT_REG && de->d_type != DT_UNKNOWN)
			continue;
		/* Never open a device node or FIFO: the type is decided on an
		 * O_PATH fd, whatever the name became since readdir. Short of
		 * descriptors or memory: stop, and say so. */
		pathfd = pc_open_path(dirfd, de->d_name, O_NOFOLLOW, &lst);
		if (pathfd < 0) {
			if (pc_err_is_resource(pathfd)) {
				ret = pathfd;
				break;
			}
			continue;
		}
		fd = S_ISREG(lst.st_mode) ? pc_reopen(pathfd, O_RDONLY | O_NONBLOCK) : -1;
		close(pathfd);
		if (fd < 0) {
			if (pc_err_is_resource(fd)) {
				ret = fd;
				break;
			}
			continue;
		}
		(void)posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM); /* a miss reads that page alone */
		if (bfile_new(fd, 1, &f) < 0) {
			ret = -ENOMEM;
			break;
		}
		/* Only a file whose residency we see truthfully can be watched. */
		if (pc_gate_predict(fd) == 1 && k_fstat(b, f, &st) == 0 &&
		    k_mincore(b, f, pc_never_cached_page(st.size, (uint64_t)pc_page_size()), 1,
			      &v) == 0 &&
		    !(v & 1) && cold_page_of(f, page) == 0) {
			*out = f;
			ret = 0;
		} else {
			k_close(b, f);
		}
	}
	closedir(dir);
	return ret;
}

struct nobody_call {
	struct pc_backend *b;
	int (*fn)(struct pc_backend *b, void *arg);
	void *arg;
	int ret;
};

static void *nobody_thread(void *p)
{
	struct nobody_call *c = p;

	/* fsuid and capabilities are per thread: leaving fsuid 0 drops the
	 * filesystem capabilities of this thread only (doc/kernels.md section 1). */
	setfsgid(65534);
	setfsuid(65534);
	if ((uid_t)setfsuid((uid_t)-1) != 65534 || (gid_t)setfsgid((gid_t)-1) != 65534) {
		c->ret = -EPERM;
		return NULL;
	}
	c->ret = c->fn(c->b, c->arg);
	return NULL;
}

static int k_as_nobody(struct pc_backend *b, int (*fn)(struct pc_backend *b, void *arg),
		       void *arg)
{
	struct nobody_call c = { .b = b, .fn = fn, .arg = arg, .ret = -EPERM };
	pthread_t t;
	int err;

	if ((uid_t)setfsuid((uid_t)-1) == 65534)
		return -EPERM; /* nobody already: run as ourselves */
	err = pthread_create(&t, NULL, nobody_thread, &c);
	if (err)
		return -err;
	pthread_join(t, NULL);
	return c.ret;
}

static void k_pause_ms(struct pc_backend *b, unsigned int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };

	(void)b;
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

const struct pc_backend_ops pc_kernel_ops = {
	.page_size = k_page_size,
	.fstat = k_fstat,
	.mincore = k_mincore,
	.next_data = k_next_data,
	.cachestat = k_cachestat,
	.probe = k_probe,
	.reopen_random = k_reopen_random,
	.gate_predict = k_gate_predict,
	.close = k_close,
	.scratch_new = k_scratch_new,
	.write_page = k_write_page,
	.sync = k_sync,
	.evict = k_evict,
	.system_file = k_system_file,
	.find_cold_page = k_find_cold_page,
	.as_nobody = k_as_nobody,
	.pause_ms = k_pause_ms,
};
