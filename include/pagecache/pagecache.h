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
 * predicted hidden where the kernel reveals it, never the reverse. The same
 * holds on an idmapped mount: a file shown owned by the overflow id may have
 * an owner the mount's idmap does not map, and then neither the owner test
 * nor CAP_FOWNER passes (mincore fakes for root there), so only write
 * permission, which the kernel evaluates through the idmap, counts for it.
 *
 * This is a prediction: FUSE, NFS, overlayfs and LSMs can decide otherwise.
 * On overlayfs, where the gate judges a layer's file that fstat does not
 * show, the kernel is asked instead when it fakes (PC_MINCORE_GATED_FAKED):
 * through @fd, or, when @fd cannot be mapped (O_PATH, O_WRONLY), through
 * the same inode opened again for reading via /proc/self/fd where the
 * caller may read it; otherwise the rules above answer.
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
 * writable. Otherwise, on a filesystem that reads through the kernel's
 * shared page-cache read path (ext2/3/4, xfs, btrfs), where what a miss
 * does is the kernel's and not the filesystem's, the mode an O_TMPFILE
 * teaches on another such filesystem the caller may write ($TMPDIR,
 * /var/tmp, /tmp, $HOME; pc_detect_nowait_origin() says which). Otherwise
 * it may use one non-resident page of a readable file in that directory
 * whose residency the caller can see (that page may end up cached);
 * otherwise PC_NOWAIT_UNKNOWN. Cached per filesystem (st_dev),
 * except UNKNOWN; threads asking at once wait for one detection. Takes up
 * to a few hundred milliseconds the first time.
 * Returns the mode or -errno (-EBADF for a negative @dirfd other than
 * AT_FDCWD, -ENOTDIR).
 * @since 0.1
 */
int pc_detect_nowait(int dirfd);

/** pc_detect_nowait_flags(): may use a cold page of a file (see above). */
#define PC_DETECT_ALLOW_PERTURB (1u << 0)

/**
 * pc_detect_nowait_flags() - pc_detect_nowait(), which is this with
 * PC_DETECT_ALLOW_PERTURB. Without that flag it never changes the page
 * cache: only the unlinked O_TMPFILE is tried, and where none can be made
 * the answer is a mode already found for the filesystem, or
 * PC_NOWAIT_UNKNOWN. Returns the mode or -errno (-EINVAL for an unknown
 * flag).
 * @since 0.1
 */
int pc_detect_nowait_flags(int dirfd, unsigned int flags);

/**
 * pc_detect_nowait_origin() - pc_detect_nowait_flags(dirfd, 0), and where
 * its answer was learned: where (size bytes, NUL-terminated) gets "" when
 * a scratch file on dirfd's own filesystem taught it, or the directory
 * ($TMPDIR, /var/tmp, /tmp, $HOME) of another filesystem whose scratch
 * file did. The second happens when the caller may write nowhere on
 * dirfd's filesystem and both filesystems read through the kernel's
 * shared page-cache read path (ext2/3/4, xfs, btrfs), where a RWF_NOWAIT
 * miss behaves alike. Returns the mode or -errno (-EINVAL: no buffer).
 * @since 0.2
 */
int pc_detect_nowait_origin(int dirfd, char *where, size_t size);

/**
 * pc_detect_cachestat() - who may call cachestat(2) here; enum
 * pc_cachestat_mode. Side-effect free (invalid-flag probes). Detected once
 * per process (errors are not kept). Returns the mode or -errno.
 * @since 0.1
 */
int pc_detect_cachestat(void);

/**
 * pc_detect_io_uring() - 1 if io_uring RWF_NOWAIT reads work for this
 * process, 0 if io_uring is unavailable or disabled. Detected once; an
 * error is not kept: -ENOMEM, -EMFILE or -ENFILE when the process was
 * short of memory or descriptors to find out.
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
#define PC_RES_FORCE_MINCORE   (1u << 2) /* this source or -EOPNOTSUPP: tests, benchmarks,
						 waiting for pages up to date */
#define PC_RES_FORCE_CACHESTAT (1u << 3)
#define PC_RES_FORCE_NOWAIT    (1u << 4)

struct pc_residency;

/**
 * pc_residency() - which pages of @fd between @offset and @offset + @length
 * are in the page cache. @offset is rounded down to a page; @length 0 means
 * to the end of the file. Works on regular files, block devices and memfds;
 * other types give -EINVAL (a FIFO is never read).
 * A page whose read is still in flight is in the cache for cachestat and
 * not yet for mincore, and spans taken from cachestat (uniform ones, or
 * every page when it is the source) count it resident: while a large
 * readahead is landing the answer can run ahead of mincore's (seen: 100%
 * against 82.5% right after readahead(2) of 4 GiB returned, 200 requests
 * in flight). To wait until pages are up to date, ask with
 * PC_RES_FORCE_MINCORE: it gives -EOPNOTSUPP where mincore cannot tell this
 * caller the truth.
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
 * give a truthful answer; -ENOMEM, -EMFILE, -ENFILE when the process runs
 * short of memory or descriptors, never an UNKNOWN answer instead).
 * @since 0.1
 */
int pc_residency(int fd, uint64_t offset, uint64_t length, unsigned int flags,
		 struct pc_residency **out);

/**
 * What the caller's own statx(2) (or fstat(2)) of an open file said, for
 * pc_residency_facts(). Options block: set @size first.
 */
struct pc_file_facts {
	size_t size;              /* sizeof(struct pc_file_facts) */
	uint32_t mode;            /* stx_mode (st_mode): its type bits are used */
	uint64_t file_size;       /* stx_size (st_size), bytes; block devices: unused */
	uint64_t mnt_id;          /* stx_mnt_id when stx_mask has STATX_MNT_ID_UNIQUE
				   * (Linux 6.8+, a mount id never reused); else 0 */
};

/**
 * pc_residency_facts() - pc_residency() for an @fd that the caller has just
 * statx'ed: @facts stand for the library's own statx of @fd, and with a
 * unique mount id the filesystem's type is remembered per mount (per
 * thread) instead of asked with fstatfs(2) for each file. In a tree walk
 * that is one or two system calls less per file. The answer, its labels and
 * its errors are pc_residency()'s for a file of that type and size; @facts
 * must describe @fd (the wrong mount id can label overlayfs's empty
 * cachestat count as exact). A @mode that is neither a regular file nor a
 * block device gives -EINVAL; @facts NULL or with a @size too small or
 * with unknown non-zero fields after this struct gives -EINVAL.
 * @since 0.1
 */
int pc_residency_facts(int fd, const struct pc_file_facts *facts, uint64_t offset,
		       uint64_t length, unsigned int flags, struct pc_residency **out);

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
/**
 * pc_residency_uncertain() - how many pages a RWF_NOWAIT probe reported
 * absent without being sure: misses between two cached pages that missed
 * again when asked once more (a cached page can answer EAGAIN: the page a
 * readahead window marks, or one that is locked). 0 for every other
 * source, and for NULL. @since 0.2
 */
uint64_t pc_residency_uncertain(const struct pc_residency *r);
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
 * preadv2 when io_uring is unavailable (not when the process is short of
 * memory or descriptors for a ring: -ENOMEM, -EMFILE, -ENFILE).
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

/* ---- snapshots ------------------------------------------------------------ */

/*
 * A snapshot records which pages of which files were resident, so that they
 * can be brought back later (pc_warm()), here or on another machine. The
 * format is in doc/snapshot-format.md: a versioned header, one record per
 * file (its path relative to a root, identity, quality and resident runs),
 * a CRC32C per record and an end record with totals. Writers and readers
 * stream: memory stays bounded (about 260 KiB to write, 200 KiB to read)
 * whatever the snapshot's size.
 */

/** The snapshot format version this library writes and reads. */
#define PC_SNAPSHOT_FORMAT_VERSION 1
/** Longest relative path (and root) a snapshot holds, in bytes. */
#define PC_SNAPSHOT_PATH_MAX 4095

/** What a snapshot's header records. Options block: set @size first. */
struct pc_snapshot_info {
	size_t size;              /* sizeof(struct pc_snapshot_info) */
	const char *root;         /* absolute path the file paths are relative to; NULL: none */
	int64_t capture_time_ns;  /* CLOCK_REALTIME, ns since the epoch; 0: now */
	uint32_t page_size;       /* page size of the runs; 0: pc_page_size() */
	int mincore_mode;         /* pc_detect_mincore() at capture (0: unknown) */
	int cachestat_mode;       /* pc_detect_cachestat() at capture */
	int nowait_mode;          /* pc_detect_nowait_flags(rootfd, 0): no cold page read */
};

/**
 * One file of a snapshot. Passed to the writer (set @size first) and handed
 * out by the reader (owned by the reader, valid until its next
 * pc_snapshot_next_file()).
 */
struct pc_snapshot_file {
	size_t size;              /* sizeof(struct pc_snapshot_file) */
	const char *path;         /* reader: relative to the root; any bytes but NUL */
	uint64_t file_size;       /* st_size at capture, bytes */
	int64_t mtime_ns;         /* st_mtim at capture, ns since the epoch */
	uint64_t dev;             /* st_dev at capture: same-machine identity only */
	uint64_t ino;             /* st_ino at capture */
	int quality;              /* enum pc_quality: UNKNOWN files have no runs */
	uint64_t nruns;           /* reader: runs that follow */
	uint64_t npages;          /* reader: resident pages in those runs */
};

struct pc_snapshot_writer;
struct pc_snapshot_reader;

/**
 * pc_snapshot_writer_new() - a writer that streams a snapshot to @fd (a file,
 * a pipe, a socket) from its current position; the header is written now.
 * @info may be NULL (no root, now, this page size, modes unknown); a root
 * must be absolute. @fd stays the caller's: never closed, never fsynced.
 * A writer that is freed unfinished leaves a snapshot without its end
 * record, which readers reject as truncated. A writer is used by one thread
 * at a time. Returns 0 or -errno (-EINVAL for a bad @info).
 * @since 0.1
 */
int pc_snapshot_writer_new(int fd, const struct pc_snapshot_info *info,
			   struct pc_snapshot_writer **out);

/**
 * pc_snapshot_writer_new_at() - an atomic writer for @path (relative to
 * @dirfd, or absolute): it writes an unnamed temporary file in @path's
 * directory (O_TMPFILE, or a hidden ".name.XXXXXX" file where O_TMPFILE is
 * not supported or /proc is not mounted; ".pagecache-snapshot.XXXXXX" for
 * a name too long for that) created with @mode (umask applies);
 * pc_snapshot_writer_finish() fsyncs it and renames it over @path, then
 * fsyncs the directory. A writer that fails or is freed unfinished leaves
 * no file behind and @path as it was, except when only that last fsync of
 * the directory fails: @path then names the new snapshot already. Only a
 * regular file is replaced: where @path names anything else (a device
 * node such as /dev/null, a FIFO, a directory, a symlink), this call, or
 * pc_snapshot_writer_finish() should one appear there meanwhile, returns
 * -EEXIST and leaves it alone. Returns 0 or -errno.
 * @since 0.1
 */
int pc_snapshot_writer_new_at(int dirfd, const char *path, mode_t mode,
			      const struct pc_snapshot_info *info,
			      struct pc_snapshot_writer **out);

/**
 * pc_snapshot_write_file() - append one file: @relpath (see
 * pc_snapshot_path_check()), @meta's file_size, mtime_ns, dev and ino (its
 * quality, nruns and npages are ignored) and the resident runs of @r. The
 * quality comes from @r: an UNKNOWN result (or @r NULL: the file could not
 * be scanned) is recorded as unknown with no runs, never as resident. A
 * PC_RES_COUNT_ONLY result will do when none or all of its pages are
 * resident; otherwise it gives -ENODATA (scan again with the bitmap).
 * @r's page numbers are in pc_page_size() pages: a writer declared with
 * another page size gives -EINVAL (pc_snapshot_write_runs() takes runs in
 * the writer's unit). Scan the whole file (pages @r does not cover are
 * recorded as not resident).
 * Records are written out as they fill (64 KiB of runs per record).
 * Returns 0 or -errno: -EINVAL for a bad path, -ENAMETOOLONG past
 * PC_SNAPSHOT_PATH_MAX, a write error. An argument error writes nothing
 * and leaves the writer usable; a write error is sticky: every later call
 * of this writer returns it again.
 * @since 0.1
 */
int pc_snapshot_write_file(struct pc_snapshot_writer *w, const char *relpath,
			   const struct pc_snapshot_file *meta, const struct pc_residency *r);

/**
 * pc_snapshot_write_runs() - like pc_snapshot_write_file() with the runs
 * given as an array (file page numbers, ascending, not overlapping, each
 * npages > 0) and the quality taken from @meta->quality (PC_QUALITY_UNKNOWN
 * needs @n == 0). For converters and tools that build runs themselves.
 * Returns 0 or -errno (-EINVAL for bad runs).
 * @since 0.1
 */
int pc_snapshot_write_runs(struct pc_snapshot_writer *w, const char *relpath,
			   const struct pc_snapshot_file *meta, const struct pc_run *runs,
			   size_t n);

/**
 * pc_snapshot_writer_finish() - write the end record (totals) and flush;
 * for an atomic writer also fsync and rename into place. Call once; the
 * writer must still be freed. Returns 0 or -errno (the first error any
 * call of this writer met).
 * @since 0.1
 */
int pc_snapshot_writer_finish(struct pc_snapshot_writer *w);

/**
 * pc_snapshot_writer_free() - free a writer; an atomic writer that did not
 * finish removes its temporary file. NULL is allowed.
 * @since 0.1
 */
void pc_snapshot_writer_free(struct pc_snapshot_writer *w);

/**
 * pc_snapshot_reader_new() - a reader of the snapshot at @fd's current
 * position (a file or a pipe: it only calls read(2), never seeks). Reads
 * nothing yet. The input is untrusted: every length is bounded before use
 * and every record's checksum is verified before anything in it is handed
 * out. A reader is used by one thread at a time; @fd stays the caller's.
 * Returns 0 or -errno.
 * @since 0.1
 */
int pc_snapshot_reader_new(int fd, struct pc_snapshot_reader **out);

/** pc_snapshot_reader_free() - free a reader; NULL is allowed. @since 0.1 */
void pc_snapshot_reader_free(struct pc_snapshot_reader *rd);

/**
 * pc_snapshot_read_header() - read and check the magic, version and header
 * record. The header accessors below answer after it returned 0;
 * pc_snapshot_next_file() calls it when nobody did. Returns 0, -EBADMSG
 * (not a snapshot, corrupt, truncated), -EPROTONOSUPPORT (a format version
 * this library does not know), or a read error.
 * @since 0.1
 */
int pc_snapshot_read_header(struct pc_snapshot_reader *rd);

/**
 * pc_snapshot_next_file() - the next file of the snapshot: 1 and *@file
 * (owned by the reader, valid until the next call), 0 at the end (the end
 * record was read, its totals matched and nothing follows it), or -errno.
 * Runs of the previous file that were not read are read and checked now.
 * Paths are handed out as recorded: check them with pc_snapshot_path_check()
 * before opening anything.
 * @since 0.1
 */
int pc_snapshot_next_file(struct pc_snapshot_reader *rd, const struct pc_snapshot_file **file);

/**
 * pc_snapshot_next_run() - the next resident run of the current file, in the
 * snapshot's page size (pc_snapshot_reader_page_size()), ascending: 1 and
 * *@run, 0 after the file's last run (its counts checked), or -errno. Runs
 * are decoded one record at a time, never all at once.
 * @since 0.1
 */
int pc_snapshot_next_run(struct pc_snapshot_reader *rd, struct pc_run *run);

/**
 * pc_snapshot_reader_error(), pc_snapshot_reader_error_offset() - the first
 * error the reader met: a message ("checksum mismatch in a file record", ...)
 * or NULL when there was none, and the byte offset in the stream (from
 * where the reader started) at which it was found. Errors are sticky: every
 * later call returns the same -errno.
 * @since 0.1
 */
const char *pc_snapshot_reader_error(const struct pc_snapshot_reader *rd);
uint64_t pc_snapshot_reader_error_offset(const struct pc_snapshot_reader *rd);

/**
 * pc_snapshot_reader_version(), pc_snapshot_reader_page_size(),
 * pc_snapshot_reader_capture_time(), pc_snapshot_reader_mincore_mode(),
 * pc_snapshot_reader_cachestat_mode(), pc_snapshot_reader_nowait_mode() -
 * the header's format version, page size of the runs in bytes, capture time
 * (CLOCK_REALTIME ns) and the capturing machine's detected modes. Valid
 * after pc_snapshot_read_header() returned 0 (0 before, and when it failed).
 * Modes are the raw recorded values (a newer writer may record values this
 * library has no name for). @since 0.1
 */
int pc_snapshot_reader_version(const struct pc_snapshot_reader *rd);
uint32_t pc_snapshot_reader_page_size(const struct pc_snapshot_reader *rd);
int64_t pc_snapshot_reader_capture_time(const struct pc_snapshot_reader *rd);
int pc_snapshot_reader_mincore_mode(const struct pc_snapshot_reader *rd);
int pc_snapshot_reader_cachestat_mode(const struct pc_snapshot_reader *rd);
int pc_snapshot_reader_nowait_mode(const struct pc_snapshot_reader *rd);
/** The root recorded at capture ("" when none; NULL before the header). @since 0.1 */
const char *pc_snapshot_reader_root(const struct pc_snapshot_reader *rd);
/** Who wrote it, e.g. "libpagecache 0.1.0" (NULL before the header). @since 0.1 */
const char *pc_snapshot_reader_generator(const struct pc_snapshot_reader *rd);

/**
 * pc_snapshot_path_check() - whether @relpath is safe to open beneath a
 * root: not empty, not absolute, no ".." component, at most
 * PC_SNAPSHOT_PATH_MAX bytes. Only a check of the string: open it with
 * openat2(RESOLVE_BENEATH) all the same, since symlinks inside the root can
 * still point out of it. Returns 0, -EINVAL or -ENAMETOOLONG.
 * @since 0.1
 */
int pc_snapshot_path_check(const char *relpath);

/* ---- warming: bringing recorded pages back -------------------------------- */

/** How pc_warm() reads. */
enum pc_warm_strategy {
	PC_WARM_DEFAULT = 0,      /* the fastest measured here: PC_WARM_READAHEAD */
	PC_WARM_READAHEAD,        /* readahead(2) (WILLNEED where refused), per chunk */
	PC_WARM_IO_URING,         /* io_uring reads, bounded queue depth */
	PC_WARM_STREAM,           /* large holes: RWF_NOWAIT reads that start the
				     kernel's own readahead (6.12+); the rest as
				     PC_WARM_READAHEAD */
	PC_WARM_POPULATE,         /* MADV_POPULATE_READ on a shared mapping, per
				     chunk (5.14+), waited for; the fault's
				     read-around also reads neighbours, up to a
				     readahead window: for whole ranges (@since 0.2) */
};

/** pc_warm() options. Options block: set @size first, zero what you skip. */
struct pc_warm_opts {
	size_t size;              /* sizeof(struct pc_warm_opts) */
	int strategy;             /* enum pc_warm_strategy */
	unsigned int queue_depth; /* io_uring reads in flight, 1..256; 0: 8 */
	uint64_t chunk_bytes;     /* bytes per readahead step or read; 0: 2 MiB,
				     at most 64 MiB (a readahead step larger
				     than 8 MiB goes out as several calls) */
	uint64_t max_bytes;       /* budget of bytes to read; 0: no limit */
	void (*progress)(uint64_t bytes_done, void *arg); /* after each call or read */
	void *progress_arg;
	const volatile int *cancel; /* set non-zero (any thread) to stop: -ECANCELED */
};

/** What pc_warm() did, in pages. Set @size first. */
struct pc_warm_stats {
	size_t size;              /* sizeof(struct pc_warm_stats) */
	uint64_t pages_wanted;    /* pages in the runs taken (all, unless stopped) */
	uint64_t pages_beyond_eof;/* of those, past the file's current end: skipped */
	uint64_t pages_resident;  /* of those, already resident: skipped */
	uint64_t pages_read;      /* of those, read (or readahead asked for) */
	int budget_exhausted;     /* 1 when max_bytes stopped it before the end */
	int quality;              /* enum pc_quality of the residency check; UNKNOWN:
				     the kernel hides it, every page was read */
	uint64_t pages_streamed;  /* of pages_read, those PC_WARM_STREAM left to the
				     kernel's readahead */
	uint64_t bytes_done;      /* bytes read or queued: the return value, and how
				     far it got when that is -errno */
};

/**
 * pc_warm() - bring the @n runs (file page numbers in pc_page_size() pages,
 * ascending, not overlapping) of @fd (a regular file or block device open for
 * reading) back into the page cache. Runs are clamped to the file's current
 * size; pages already resident are skipped (checked with pc_residency() a
 * window at a time, right before reading). PC_WARM_READAHEAD and
 * PC_WARM_STREAM return once the reads are queued: the pages become
 * resident as the I/O completes
 * (poll pc_residency() to wait); PC_WARM_IO_URING returns after the reads
 * completed, PC_WARM_POPULATE once the pages are read. @opts may be NULL;
 * @stats may be NULL.
 * Thread-safe; @opts->cancel may be set from any thread.
 * Returns the bytes read or queued (>= 0), or -errno: -EINVAL (bad runs or
 * options, neither a regular file nor a block device), -EOPNOTSUPP
 * (io_uring unavailable; for PC_WARM_POPULATE, MADV_POPULATE_READ missing,
 * before 5.14, or a file that cannot be mapped),
 * -ECANCELED (@stats says how far it got), a read error.
 * @since 0.1
 */
int64_t pc_warm(int fd, const struct pc_run *runs, size_t n, const struct pc_warm_opts *opts,
		struct pc_warm_stats *stats);

/**
 * pc_warm_snapshot() - pc_warm() on the remaining runs of @rd's current file
 * (after pc_snapshot_next_file()), converted from the snapshot's page size to
 * this machine's. Runs beyond a stop (budget, cancel, error) stay unread;
 * the next pc_snapshot_next_file() skips them. Returns as pc_warm(), or a
 * reader error (-EBADMSG, see pc_snapshot_reader_error()).
 * @since 0.1
 */
int64_t pc_warm_snapshot(int fd, struct pc_snapshot_reader *rd, const struct pc_warm_opts *opts,
			 struct pc_warm_stats *stats);

/* ---- output files replaced atomically ------------------------------------- */

struct pc_outfile;

/** pc_outfile_new_at() flags. */
enum pc_outfile_flags {
	PC_OUTFILE_KEEP_MODE = 1u << 0, /* a file of the caller's that is replaced
					   keeps its mode */
};

/**
 * pc_outfile_new_at() - a file that will replace @path (relative to @dirfd,
 * or absolute) atomically, as pc_snapshot_writer_new_at() replaces a
 * snapshot: write to pc_outfile_fd() (an unnamed O_TMPFILE in @path's
 * directory, or a hidden ".name.XXXXXX" file where O_TMPFILE cannot be
 * named later, ".pagecache-snapshot.XXXXXX" for a name too long for that),
 * created with @mode (umask applies); pc_outfile_commit() puts it in place.
 * Only a regular file is replaced: where @path names anything else (a
 * device node, a FIFO, a directory, a symlink) this call or the commit
 * returns -EEXIST and leaves it alone. Returns 0 or -errno (-EINVAL for an
 * empty name, "." or ".." or an unknown flag, -ENAMETOOLONG).
 * @since 0.2
 */
int pc_outfile_new_at(int dirfd, const char *path, mode_t mode, unsigned int flags,
		      struct pc_outfile **out);

/** pc_outfile_fd() - the fd to write to (the outfile's: not to be closed). @since 0.2 */
int pc_outfile_fd(const struct pc_outfile *f);

/**
 * pc_outfile_commit() - fsync the file, rename it over the target, fsync
 * the directory. Call once. Returns 0 or -errno; after a failure the
 * target is as it was, unless pc_outfile_in_place() says 1 (only the
 * directory's fsync failed). @since 0.2
 */
int pc_outfile_commit(struct pc_outfile *f);

/** pc_outfile_in_place() - 1 when the file was renamed over the target. @since 0.2 */
int pc_outfile_in_place(const struct pc_outfile *f);

/**
 * pc_outfile_free() - close it; one not committed leaves no file behind.
 * NULL is allowed. @since 0.2
 */
void pc_outfile_free(struct pc_outfile *f);

/* ---- restore: a snapshot's pages back, beneath a root ---------------------- */

struct stat;

/**
 * pc_open_beneath() - open @relpath, a regular file beneath the directory
 * @rootfd, for reading, and never anything outside it nor anything else:
 * the string is checked first (pc_snapshot_path_check()), then resolved
 * with openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS) or, where openat2 is
 * missing (ENOSYS: before Linux 5.6, under valgrind) or with
 * PC_BENEATH_WALK, a walk one component at a time that refuses every
 * symlink and "..". The name is opened with O_PATH, checked with fstat and
 * only then reopened: a device node's driver, a FIFO or a socket is never
 * opened for reading. The fd is O_RDONLY | O_NONBLOCK | O_CLOEXEC, with
 * O_NOATIME where the caller may use it. @st (may be NULL) gets its fstat.
 * Thread-safe. Returns the fd or -errno: -EINVAL (an unsafe path: absolute,
 * "..", empty) or -ENAMETOOLONG, -EXDEV (it resolves outside the root),
 * -ELOOP (a symlink that leaves the root, or any symlink in a walk),
 * -EBADFD (not a regular file), -EISDIR, -ENOTDIR, -ENOENT, an open error.
 * pc_restore_event_name(pc_restore_refusal(err)) names such an answer.
 * @since 0.2
 */
int pc_open_beneath(int rootfd, const char *relpath, unsigned int flags, struct stat *st);

/** pc_open_beneath() flags. */
enum pc_beneath_flags {
	PC_BENEATH_WALK = 1u << 0, /* the component walk, even where openat2 works */
};

/**
 * pc_memory_budget() - the bytes a restore may bring into the page cache
 * now: the least of MemAvailable and the room left in the caller's memory
 * cgroup and each of its ancestors (v2: memory.max minus memory.current, v1:
 * memory.limit_in_bytes minus memory.usage_in_bytes; their inactive file
 * pages count as room, as MemAvailable counts the machine's). *@why (may be
 * NULL) gets a static string that says which one set it. Thread-safe.
 * Returns 0, or -ENODATA when nothing could be read (*@bytes is then
 * UINT64_MAX and *@why "unknown").
 * @since 0.2
 */
int pc_memory_budget(uint64_t *bytes, const char **why);

/** One file of a restore's source. Owned by the source. */
struct pc_restore_file {
	size_t size;              /* sizeof(struct pc_restore_file) */
	const char *path;         /* beneath the root; an absolute one must start
				     with pc_restore_opts.root_path */
	int identity;             /* 1: file_size, mtime_ns, dev, ino were recorded */
	uint64_t file_size;       /* st_size at capture */
	int64_t mtime_ns;         /* st_mtim at capture */
	uint64_t dev, ino;        /* st_dev, st_ino at capture (0, 0: not known) */
	int quality;              /* enum pc_quality: UNKNOWN files are skipped */
	uint64_t npages;          /* recorded pages; 0 with identity: none */
};

/**
 * The snapshot pc_restore() reads, as callbacks (the library reads its own
 * format, pc_snapshot_source_new(); any other format is a caller's source).
 * next_file(): 1 and *file (valid until the next call), 0 at the end, or
 * -errno. next_run(): the next run of the current file in pc_page_size()
 * pages, ascending: 1, 0 after its last, or -errno. rewind(): start again
 * at the first file: 0, -ESPIPE when the source can be read only once (a
 * pipe; also rewind NULL), or -errno. Errors should be sticky.
 */
struct pc_restore_source {
	size_t size;              /* sizeof(struct pc_restore_source) */
	void *arg;
	int (*next_file)(void *arg, const struct pc_restore_file **file);
	int (*next_run)(void *arg, struct pc_run *run);
	int (*rewind)(void *arg);
};

/**
 * pc_restore_source_validate() - read all of @src once and rewind it: 1
 * when it is whole and valid, 0 when it cannot be read twice (nothing was
 * read), or its -errno (the source says why). pc_restore() calls it unless
 * told the caller did (PC_RESTORE_VALIDATED). @since 0.2
 */
int pc_restore_source_validate(const struct pc_restore_source *src);

struct pc_snapshot_source;

/**
 * pc_snapshot_source_new() - a pc_restore_source over the native snapshot
 * at @fd's current position (pc_snapshot_reader_new()), its runs converted
 * to this machine's page size; it can be rewound when @fd is a regular
 * file. Reads nothing yet. @fd stays the caller's; the source is used by
 * one thread at a time. Returns 0 or -errno.
 * @since 0.2
 */
int pc_snapshot_source_new(int fd, struct pc_snapshot_source **out);

/** pc_snapshot_source_free() - free it; NULL is allowed. @since 0.2 */
void pc_snapshot_source_free(struct pc_snapshot_source *s);

/**
 * pc_snapshot_source_get() - the callbacks of @s for pc_restore(), into @src
 * (set its size first). @since 0.2
 */
void pc_snapshot_source_get(struct pc_snapshot_source *s, struct pc_restore_source *src);

/**
 * pc_snapshot_source_reader() - the reader @s reads with now (a rewind
 * makes a new one; NULL after a rewind failed): pc_snapshot_read_header()
 * on it gives the recorded root, pc_snapshot_reader_error() why a call of
 * the source failed. @since 0.2
 */
struct pc_snapshot_reader *pc_snapshot_source_reader(struct pc_snapshot_source *s);

/** In what order pc_restore() reads. */
enum pc_restore_order {
	PC_RESTORE_ORDER_AUTO = 0, /* DISK on a rotating disk (or virtio-blk), else FILE */
	PC_RESTORE_ORDER_FILE,     /* the snapshot's order */
	PC_RESTORE_ORDER_DISK,     /* small files by the disk address of their first
				      wanted page, up to 65536 at a time */
	PC_RESTORE_ORDER_PHYSICAL, /* every run sorted by its place on the disk
				      (holds the whole snapshot's runs) */
};

/** Why files were skipped: the index of pc_restore_stats.skipped. */
enum pc_restore_skip {
	PC_RESTORE_SKIP_UNKNOWN_AT_CAPTURE = 0,
	PC_RESTORE_SKIP_MISSING,
	PC_RESTORE_SKIP_REFUSED,    /* an unsafe path, outside the root */
	PC_RESTORE_SKIP_NOT_REGULAR,
	PC_RESTORE_SKIP_CHANGED,    /* PC_RESTORE_STRICT */
	PC_RESTORE_SKIP_NOT_REACHED,/* after a stop */
	PC_RESTORE_SKIP_ERROR,      /* could not be opened, or replaced meanwhile */
	PC_RESTORE_SKIP_COUNT,
};
#define PC_RESTORE_SKIP_MAX 16    /* room in pc_restore_stats.skipped */

/** Why pc_restore() stopped before the end. */
enum pc_restore_stop {
	PC_RESTORE_STOP_NONE = 0,
	PC_RESTORE_STOP_BUDGET,     /* the byte budget was spent */
	PC_RESTORE_STOP_EVICTING,   /* its own pages were being evicted again */
	PC_RESTORE_STOP_CANCELLED,  /* *pc_restore_opts.cancel was set */
};

/** What a pc_restore_event reports. */
enum pc_restore_reason {
	PC_RESTORE_EV_MISSING = 1,     /* skipped: missing */
	PC_RESTORE_EV_NOT_BENEATH,     /* refused: an absolute path not beneath root_path */
	PC_RESTORE_EV_OUTSIDE,         /* refused: it resolves outside the root (EXDEV) */
	PC_RESTORE_EV_SYMLINK,         /* refused: a symlink (ELOOP) */
	PC_RESTORE_EV_NAME_TOO_LONG,   /* refused: a component of more than NAME_MAX */
	PC_RESTORE_EV_UNSAFE_PATH,     /* refused: absolute, or with ".." (EINVAL) */
	PC_RESTORE_EV_NOT_REGULAR,     /* skipped: not a regular file */
	PC_RESTORE_EV_OPEN_ERROR,      /* skipped: @error */
	PC_RESTORE_EV_REPLACED,        /* skipped: replaced while the restore ran */
	PC_RESTORE_EV_READ_ERROR,      /* a read failed (@error); the rest of the file left */
	PC_RESTORE_EV_CHANGED,         /* its size or mtime changed since the capture */
	PC_RESTORE_EV_RENAMED,         /* restored at @path: found by its device and inode */
	PC_RESTORE_EV_SEARCH_FAILED,   /* the search for renamed files failed (@error) */
};

/** One event of a restore, for pc_restore_opts.event. */
struct pc_restore_event {
	size_t size;              /* sizeof(struct pc_restore_event) */
	int reason;               /* enum pc_restore_reason */
	const char *path;         /* as recorded, or beneath the root; NULL: none */
	int error;                /* -errno for OPEN_ERROR, READ_ERROR, SEARCH_FAILED */
	uint64_t index;           /* the file's place in the snapshot (from 0) */
};

/** How far a restore got, for pc_restore_opts.progress. */
struct pc_restore_progress {
	size_t size;              /* sizeof(struct pc_restore_progress) */
	uint64_t files;           /* files of the snapshot taken so far */
	uint64_t bytes_done;      /* read or queued */
	double seconds;           /* since pc_restore() started */
};

/** pc_restore_opts.flags */
enum pc_restore_flags {
	PC_RESTORE_STRICT = 1u << 0,           /* skip files whose size or mtime changed */
	PC_RESTORE_NO_FIND_RENAMED = 1u << 1,  /* do not look for missing files by inode */
	PC_RESTORE_VALIDATED = 1u << 2,        /* the caller ran pc_restore_source_validate():
						  1 in @validated */
};

/** pc_restore() options. Options block: set @size first, zero what you skip. */
struct pc_restore_opts {
	size_t size;              /* sizeof(struct pc_restore_opts) */
	unsigned int flags;       /* enum pc_restore_flags */
	int validated;            /* with PC_RESTORE_VALIDATED: what validate returned */
	const char *root_path;    /* the root's absolute path, for absolute recorded
				     paths (happycache); NULL: those are refused */
	uint64_t max_bytes;       /* byte budget; 0: pc_memory_budget() */
	uint64_t rate;            /* bytes per second at most; 0: no limit */
	int order;                /* enum pc_restore_order */
	int strategy;             /* enum pc_warm_strategy */
	uint64_t chunk_bytes;     /* as pc_warm_opts */
	unsigned int queue_depth; /* as pc_warm_opts */
	unsigned int threads;     /* workers for small files, 1..16; 0: one per CPU,
				     at most 4 */
	const volatile int *cancel; /* set non-zero (any thread, a signal handler) to stop */
	void (*progress)(const struct pc_restore_progress *p, void *arg);
	void (*event)(const struct pc_restore_event *ev, void *arg);
	void *arg;                /* for progress and event */
};

/** What pc_restore() did. Set @size first. */
struct pc_restore_stats {
	size_t size;              /* sizeof(struct pc_restore_stats) */
	uint64_t files;           /* in the snapshot (up to a stop: all of them) */
	uint64_t files_restored;
	uint64_t files_without_pages;
	uint64_t skipped[PC_RESTORE_SKIP_MAX]; /* by enum pc_restore_skip */
	uint64_t changed;         /* size or mtime changed (restored unless STRICT) */
	uint64_t renamed;         /* found by device and inode, restored there */
	uint64_t pages_wanted;
	uint64_t pages_beyond_eof;
	uint64_t pages_resident_before;
	int resident_before_quality; /* UNKNOWN: hidden for some file (all of it read) */
	uint64_t pages_read;
	uint64_t bytes_read;
	uint64_t pages_read_again;/* read once more: gone before the end */
	uint64_t pages_streamed;  /* of pages_read, left to the kernel's readahead */
	uint64_t budget_bytes;    /* UINT64_MAX: no limit */
	const char *budget_from;  /* "max_bytes", or pc_memory_budget()'s why */
	int eviction_watch;       /* 0 on, else cachestat's -errno (off) */
	uint64_t evicted_again_pages;
	int stopped;              /* enum pc_restore_stop */
	int read_error;           /* the last read error (-errno), 0: none */
	int order;                /* enum pc_restore_order, as chosen */
	const char *order_why;    /* PC_RESTORE_ORDER_AUTO's choice and why; else NULL */
	const char *open_method;  /* how paths were opened */
	double seconds;           /* the reading, without the final measurement */
	uint64_t final_pages_wanted;
	uint64_t final_pages_resident;
	int final_quality;        /* EXACT, or UNKNOWN: the kernel hides some file */
	double settle_seconds;    /* the final measurement (waiting for the reads) */
	const char *settle_end;   /* why it ended: "complete", "quiet", ... */
};

/**
 * pc_restore() - bring back the pages @src recorded, beneath the directory
 * @rootfd (opened with pc_open_beneath() semantics: nothing outside it,
 * regular files only), within a byte budget, and wait for them: the
 * stats end with the wanted pages' residency once the reads landed. A
 * source that can be rewound is validated whole first: a corrupt or
 * truncated one reads nothing. Pages already resident are skipped; files
 * whose size or mtime changed are restored (and reported) unless
 * PC_RESTORE_STRICT; files missing from their path are looked for by device
 * and inode. It stops early when the budget is spent, when the pages it
 * read are evicted again (cachestat(2): the cache is full), or on cancel.
 * Callbacks run on the calling thread. Thread-safe: it keeps no state
 * between calls. Per-file failures are events and counts, not errors.
 * Returns 0, or -errno: -EINVAL (bad arguments), the source's error, -EIO or
 * -ENOMEM; @stats then holds what was done so far.
 * @since 0.2
 */
int pc_restore(int rootfd, const struct pc_restore_source *src, const struct pc_restore_opts *opts,
	       struct pc_restore_stats *stats);

/**
 * pc_restore_event_name(), pc_restore_skip_name(), pc_restore_stop_name(),
 * pc_restore_order_name() - names: "refused: outside the root",
 * "unknown_at_capture", "budget", "disk" ...; "unknown" for other values.
 * pc_restore_refusal() - the enum pc_restore_reason for a pc_open_beneath()
 * error. @since 0.2
 */
const char *pc_restore_event_name(int reason);
const char *pc_restore_skip_name(int skip);
const char *pc_restore_stop_name(int stop);
const char *pc_restore_order_name(int order);
int pc_restore_refusal(int err);

#ifdef __cplusplus
}
#endif

#endif /* PAGECACHE_PAGECACHE_H */
