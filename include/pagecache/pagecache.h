/* SPDX-License-Identifier: MIT */
/*
 * libpagecache: which pages of which files sit in the page cache, and how
 * far the kernel's answer can be trusted.
 *
 * Conventions: every fallible call returns >= 0 on success and -errno on
 * failure; errno is never the channel. Constructors take an out pointer and
 * leave it untouched on failure. All functions are thread-safe unless their
 * comment says otherwise; kernel facts are detected once per process.
 */
#ifndef PAGECACHE_PAGECACHE_H
#define PAGECACHE_PAGECACHE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PAGECACHE_VERSION_MAJOR 0
#define PAGECACHE_VERSION_MINOR 1
#define PAGECACHE_VERSION_MICRO 0

/**
 * pc_version() - the library's version as "MAJOR.MINOR.MICRO".
 * Returns a static string. @since 0.1
 */
const char *pc_version(void);

/**
 * pc_page_size() - the page size the kernel uses for the page cache, in bytes.
 * @since 0.1
 */
long pc_page_size(void);

/* ---- cachestat(2) -------------------------------------------------------- */

/** Page counts for a byte range of a file, as cachestat(2) reports them. */
struct pc_cachestat {
	uint64_t cache;            /* pages present in the page cache */
	uint64_t dirty;            /* of those, dirty */
	uint64_t writeback;        /* of those, under writeback */
	uint64_t evicted;          /* pages evicted by reclaim (shadow entries) */
	uint64_t recently_evicted; /* of those, evicted recently */
};

/**
 * pc_cachestat() - cachestat(2) on @length bytes of @fd from @offset.
 * @length 0 means to the end of the file. The counts cover the pages present,
 * including pages still being read in (mincore counts only up-to-date ones).
 * Returns 0, -ENOSYS where the kernel (or valgrind) lacks cachestat, -EPERM
 * where the kernel's permission gate (6.14+) or a seccomp/LSM filter denies it,
 * -EBADF (also for O_PATH fds), -EOPNOTSUPP (hugetlbfs), -EINVAL.
 * On overlayfs it counts the overlay inode's own mapping, which stays
 * empty (the pages are the upper or lower file's): 0 cached.
 * @since 0.1
 */
int pc_cachestat(int fd, uint64_t offset, uint64_t length, struct pc_cachestat *out);

/* ---- the kernel's mincore gate -------------------------------------------- */

/**
 * pc_can_do_mincore() - predict whether the kernel's mincore(2) gate lets
 * the calling thread see the residency of @fd's pages.
 *
 * Follows the kernel's can_do_mincore() rules with the calling thread's
 * filesystem credentials: the owner (fsuid, through the mount's idmap), a
 * holder of CAP_FOWNER, or anyone with write permission passes; a read-only
 * superblock denies write permission, a read-only bind mount does not.
 * On kernels whose mincore has no gate (pc_detect_mincore() == PC_MINCORE_FULL)
 * it returns 1 for every file. Where mincore shows no file's page cache to
 * anyone (PC_MINCORE_MAPPED_ONLY, PC_MINCORE_USELESS) it still answers the
 * gate's rule, and 1 does not mean that mincore tells the truth there.
 * The first call runs pc_detect_mincore().
 *
 * The gate looks at the file, its mount and the thread's credentials, not
 * at how @fd was opened: a descriptor open for writing does not open it
 * (unlike cachestat), and an O_PATH descriptor is answered for the file it
 * names, although mincore itself needs a readable descriptor to map.
 * Regular files and block devices only: other types (directories
 * included) give -EINVAL. Inside a user namespace that maps the overflow id
 * (65534) but not every id, a file owned by the overflow id may be
 * predicted hidden where the kernel reveals it, never the reverse.
 *
 * This is a prediction: FUSE, NFS, overlayfs and LSMs can decide otherwise.
 * pc_residency() probes the kernel and never relies on it alone.
 * Returns 1 (residency visible), 0 (the kernel hides it), -EBADF, -EINVAL,
 * -ENOSYS (no faccessat2, before Linux 5.8, for a file the caller neither
 * owns nor holds CAP_FOWNER over), or another -errno.
 * @since 0.1
 */
int pc_can_do_mincore(int fd);

/**
 * pc_evict() - drop @length bytes of @fd from @offset out of the page cache
 * (POSIX_FADV_DONTNEED). @length 0 means to the end of the file. Dirty pages,
 * pages mapped by any process, large folios the range covers only in part
 * (ext4 caches in folios of up to 2 MiB) and tmpfs pages stay. Dropped pages
 * leave no shadow entries. Returns 0 or -errno (-EINVAL when @offset or
 * @length exceeds INT64_MAX).
 * @since 0.1
 */
int pc_evict(int fd, uint64_t offset, uint64_t length);

/* ---- detection of the kernel's semantics ---------------------------------- */

/** What mincore(2) reports for a file mapping whose pages were not faulted in. */
enum pc_mincore_mode {
	PC_MINCORE_UNKNOWN = 0,   /* could not find out */
	PC_MINCORE_FULL,          /* no gate: every file's residency is visible */
	PC_MINCORE_GATED_FAKED,   /* 5.2+: hidden files report every page resident */
	PC_MINCORE_GATED_MAPPED,  /* gate; hidden files report the caller's mapped pages */
	PC_MINCORE_MAPPED_ONLY,   /* 5.0-rc1..rc3: only mapped pages, for everyone */
	PC_MINCORE_USELESS,       /* all-ones emulation (gVisor): no information */
};

/** What a buffered preadv2(RWF_NOWAIT) read does when it misses. */
enum pc_nowait_mode {
	PC_NOWAIT_UNKNOWN = 0,    /* could not find out */
	PC_NOWAIT_UNSUPPORTED,    /* EOPNOTSUPP (tmpfs, procfs, < 4.14) */
	PC_NOWAIT_CLEAN,          /* -EAGAIN and no I/O: a side-effect-free probe */
	PC_NOWAIT_DESTRUCTIVE,    /* -EAGAIN and readahead of the missed range (6.12+) */
};

/** Who may call cachestat(2). */
enum pc_cachestat_mode {
	PC_CACHESTAT_UNKNOWN = 0, /* could not find out */
	PC_CACHESTAT_ABSENT,      /* ENOSYS: before 6.5, or valgrind */
	PC_CACHESTAT_BLOCKED,     /* a seccomp or LSM filter refuses it outright */
	PC_CACHESTAT_GATED,       /* 6.14+: fds open for writing, owners, CAP_FOWNER, writers */
	PC_CACHESTAT_OPEN,        /* 6.5..6.13 unpatched: anyone who can open the file */
};

/**
 * pc_detect_mincore() - the mincore semantics this kernel applies to
 * unprivileged users (enum pc_mincore_mode), probed side-effect free from a
 * helper thread that called setfsuid(65534) when the caller may do that.
 * Uses a memfd and maps the C library; touches no disk. Detected once per
 * process: a mode, once found, is kept; an error is not, and a later call
 * tries again. Returns the mode or -errno.
 * @since 0.1
 */
int pc_detect_mincore(void);

/**
 * pc_detect_nowait() - how RWF_NOWAIT reads behave on the filesystem that
 * holds @dirfd (AT_FDCWD: the current directory); enum pc_nowait_mode.
 * Writes nothing but an unlinked O_TMPFILE there when the directory is
 * writable; otherwise it may use one non-resident page of a readable file in
 * that directory whose residency the caller can see (that page may end up
 * cached); otherwise PC_NOWAIT_UNKNOWN. Cached per filesystem (st_dev),
 * except UNKNOWN; threads asking at once wait for one detection. Takes up
 * to a few hundred milliseconds the first time.
 * Returns the mode or -errno (-EBADF for a negative @dirfd other than
 * AT_FDCWD, -ENOTDIR).
 * @since 0.1
 */
int pc_detect_nowait(int dirfd);

/**
 * pc_detect_cachestat() - who may call cachestat(2) here; enum
 * pc_cachestat_mode. Side-effect free (invalid-flag probes). Detected once
 * per process (errors are not kept). Returns the mode or -errno.
 * @since 0.1
 */
int pc_detect_cachestat(void);

/**
 * pc_detect_io_uring() - 1 if io_uring RWF_NOWAIT reads work for this
 * process, 0 if io_uring is unavailable or disabled. Detected once.
 * @since 0.1
 */
int pc_detect_io_uring(void);

/**
 * pc_mincore_mode_name(), pc_nowait_mode_name(), pc_cachestat_mode_name() -
 * short stable lowercase names ("full", "gated-faked", "gated-mapped",
 * "mapped-only", "useless", "clean", "destructive", "unsupported", "absent",
 * "blocked", "gated", "open", "unknown"); NULL for a value out of range.
 * @since 0.1
 */
const char *pc_mincore_mode_name(int mode);
const char *pc_nowait_mode_name(int mode);
const char *pc_cachestat_mode_name(int mode);

/* ---- residency ------------------------------------------------------------ */

/** How far a residency answer can be trusted. */
enum pc_quality {
	PC_QUALITY_UNKNOWN = 0,   /* the kernel hides it from this caller */
	PC_QUALITY_EXACT,         /* what the page cache holds, as the kernel tells anyone */
	PC_QUALITY_MAPPED,        /* pc_residency_mem() only: the caller's mapped pages; a lower bound */
};

/** Which kernel primitive gave the answer. */
enum pc_source {
	PC_SOURCE_NONE = 0,
	PC_SOURCE_MINCORE,
	PC_SOURCE_CACHESTAT,
	PC_SOURCE_PREADV2,
	PC_SOURCE_IO_URING,
};

/**
 * pc_quality_name(), pc_source_name() - "unknown", "exact", "mapped";
 * "none", "mincore", "cachestat", "preadv2", "io_uring". NULL when out of range.
 * @since 0.1
 */
const char *pc_quality_name(int quality);
const char *pc_source_name(int source);

/* pc_residency() flags */
#define PC_RES_COUNT_ONLY      (1u << 0) /* no bitmap: cachestat when it answers */
#define PC_RES_ALLOW_PERTURB   (1u << 1) /* may probe destructively (caches missed pages) */
#define PC_RES_FORCE_MINCORE   (1u << 2) /* tests, benchmarks: this source or -EOPNOTSUPP */
#define PC_RES_FORCE_CACHESTAT (1u << 3)
#define PC_RES_FORCE_NOWAIT    (1u << 4)

struct pc_residency;

/**
 * pc_residency() - which pages of @fd between @offset and @offset + @length
 * are in the page cache. @offset is rounded down to a page; @length 0 means
 * to the end of the file. Works on regular files, block devices and memfds;
 * other types give -EINVAL (a FIFO is never read).
 *
 * The answer is labelled: PC_QUALITY_EXACT when the kernel told the truth
 * (mincore whose beyond-EOF probe reads 0, cachestat, or RWF_NOWAIT probes),
 * PC_QUALITY_UNKNOWN when the kernel hides the file from the caller and no
 * acceptable probe exists (resident 0, no bitmap). An empty range (at or
 * past EOF) is EXACT with 0 pages and PC_SOURCE_NONE. Where mincore hides a
 * file but cachestat answers the caller (kernels 6.5..6.13 without the
 * cachestat gate, or an fd open for writing), the bitmap comes from
 * cachestat alone.
 * With PC_RES_ALLOW_PERTURB a hidden file is probed with RWF_NOWAIT reads
 * from its last page to its first on a private file description with
 * POSIX_FADV_RANDOM; on kernels where a miss starts readahead this caches
 * the missed pages and pc_residency_perturbed() says so. Such a probe is a
 * sample: the read a miss starts can finish before the probe looks again
 * (seen under CPU load, and always for holes of sparse files), and then
 * that page reads as resident, which it is by then.
 * Without PC_RES_ALLOW_PERTURB probes run only where RWF_NOWAIT is clean;
 * finding that out (once per filesystem, with pc_detect_nowait() in the
 * file's directory) writes an unlinked O_TMPFILE there, and nothing else:
 * no page of any other file is read.
 * On overlayfs the answer comes from mincore, which sees the upper or
 * lower file's pages (cachestat counts the overlay's own mapping, which
 * stays empty). hugetlbfs files are UNKNOWN for everyone: no primitive
 * sees their pages. Block devices are probed with RWF_NOWAIT only with
 * PC_RES_ALLOW_PERTURB (their NOWAIT behaviour is not detected).
 * Never faults a page in. Memory: one bit per page plus a fixed window.
 * mincore needs @fd open for reading; an O_WRONLY fd is answered by
 * cachestat where the kernel allows it (bitmap too); an O_PATH fd gives
 * -EBADF. Returns 0 and *@out, or -errno (-EINVAL for unknown flags or more
 * than one PC_RES_FORCE_* flag, -EOPNOTSUPP when a forced source cannot
 * give a truthful answer).
 * @since 0.1
 */
int pc_residency(int fd, uint64_t offset, uint64_t length, unsigned int flags,
		 struct pc_residency **out);

/**
 * pc_residency_mem() - residency of the caller's own mapping at @addr (page
 * aligned) for @length bytes, as mincore(2) shows it. Anonymous memory and
 * files the caller may see are EXACT; a file mapping the kernel hides is
 * PC_QUALITY_MAPPED on gated-mapped and mapped-only kernels (a lower bound)
 * and UNKNOWN where the kernel fakes the answer; on mapped-only kernels
 * anonymous memory is MAPPED too. The quality is the weakest over the
 * mappings the range meets. Pages are counted from addr's page (first
 * page 0). Accepts PC_RES_COUNT_ONLY; other flags give -EINVAL. -ENOMEM
 * when part of the range is not mapped.
 * @since 0.1
 */
int pc_residency_mem(const void *addr, size_t length, unsigned int flags,
		     struct pc_residency **out);

/** pc_residency_free() - free a result; NULL is allowed. @since 0.1 */
void pc_residency_free(struct pc_residency *r);

/** The file's page number of the first page covered. @since 0.1 */
uint64_t pc_residency_first_page(const struct pc_residency *r);
/** How many pages the result covers. @since 0.1 */
uint64_t pc_residency_npages(const struct pc_residency *r);
/** How many of them are resident (0 when UNKNOWN). @since 0.1 */
uint64_t pc_residency_resident(const struct pc_residency *r);
/** enum pc_quality of the answer. @since 0.1 */
int pc_residency_quality(const struct pc_residency *r);
/** enum pc_source that gave the answer. @since 0.1 */
int pc_residency_source(const struct pc_residency *r);
/** 1 if probing may have brought pages into the cache, else 0. @since 0.1 */
int pc_residency_perturbed(const struct pc_residency *r);
/** The file's size in bytes when the scan started (0 for pc_residency_mem()). @since 0.1 */
uint64_t pc_residency_file_size(const struct pc_residency *r);

/**
 * pc_residency_test() - whether file page @page is resident: 1 or 0;
 * -ENODATA when the result has no bitmap (count-only or unknown), -ERANGE
 * when @page is outside first_page .. first_page + npages - 1 (checked
 * first), -EINVAL for a NULL @r.
 * @since 0.1
 */
int pc_residency_test(const struct pc_residency *r, uint64_t page);

/** A run of consecutive resident pages, in file page numbers. */
struct pc_run {
	uint64_t page;
	uint64_t npages;
};

/**
 * pc_residency_next_run() - the first run of resident pages that starts at
 * or after file page @from. Iterate with
 *   for (p = first; pc_residency_next_run(r, p, &run) > 0; p = run.page + run.npages)
 * Returns 1 and *@run, 0 when there are no more runs, -ENODATA without bitmap,
 * -EINVAL for a NULL @r or @run.
 * @since 0.1
 */
int pc_residency_next_run(const struct pc_residency *r, uint64_t from, struct pc_run *run);

/* ---- the RWF_NOWAIT batch prober ------------------------------------------ */

struct pc_prober;

/**
 * pc_prober_new() - a prober that issues one 1-byte RWF_NOWAIT read per page,
 * batched through io_uring at @queue_depth (1..4096; 0 picks 64), or with
 * preadv2 when io_uring is unavailable.
 * WARNING: on kernels whose NOWAIT is destructive (pc_detect_nowait()), each
 * miss starts readahead: probing changes the page cache.
 * A prober is used by one thread at a time. Returns 0 or -errno.
 * @since 0.1
 */
int pc_prober_new(unsigned int queue_depth, struct pc_prober **out);

/**
 * pc_prober_probe() - probe @n pages (file page numbers) of @fd; @resident[i]
 * is 1 for a hit, 0 for a miss (EAGAIN) or a page at or past EOF.
 * A hit is what was cached when that page's read ran; a miss may also be a
 * page locked or under I/O. On destructive kernels, list the pages from the
 * highest to the lowest and use a POSIX_FADV_RANDOM fd, so that the
 * readahead a miss starts cannot change a later answer; even so a miss can
 * come back as a hit when the read it started is done before the kernel
 * looks again: always for a page in a hole (nothing to read), now and then
 * for others (up to 0.7% of evicted pages on Linux 6.18 at queue depths 1
 * and 2, where each read is dispatched at once; none seen at 64).
 * Returns the number of pages answered (n; 0 when @n is 0) or -errno:
 * -EOPNOTSUPP where the filesystem does not support RWF_NOWAIT (tmpfs,
 * procfs), -EBADF for a bad or not readable @fd, -EINVAL for a NULL @p,
 * NULL @pages or @resident with @n > 0, an @fd that is neither a regular
 * file nor a block device, or a page whose offset does not fit in off_t.
 * On error the contents of @resident are unspecified; the prober stays usable.
 * @since 0.1
 */
ssize_t pc_prober_probe(struct pc_prober *p, int fd, const uint64_t *pages, size_t n,
			uint8_t *resident);

/** PC_SOURCE_IO_URING or PC_SOURCE_PREADV2. @since 0.1 */
int pc_prober_source(const struct pc_prober *p);

/** pc_prober_free() - free a prober; NULL is allowed. @since 0.1 */
void pc_prober_free(struct pc_prober *p);

#ifdef __cplusplus
}
#endif

#endif /* PAGECACHE_PAGECACHE_H */
