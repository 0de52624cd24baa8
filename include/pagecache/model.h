/* SPDX-License-Identifier: MIT */
/*
 * libpagecache's reference model of the kernel: what mincore(2),
 * preadv2(RWF_NOWAIT) and cachestat(2) answer, in each historical and
 * proposed variant, for tasks with given credentials over files with given
 * permissions and page cache contents. Written from the documented facts
 * (doc/kernels.md), not from kernel source.
 *
 * Purposes: prove that the library's detector and pc_residency() never
 * mislabel an answer on kernels that cannot be booted here; let users and
 * kernel developers ask "what would this program see on kernel X";
 * reproduce the side-channel claims made when the mincore gate was designed.
 *
 * Everything here is in-process and deterministic: readahead completes at
 * once, nothing is reclaimed unless asked. A pcm_kernel and everything made
 * from it is used by one thread at a time; separate kernels are independent
 * (there is no global state). Every fallible call returns >= 0 on success
 * and -errno on failure; -EINVAL for a NULL handle or an unknown constant.
 * Page numbers and lengths count model pages (PCM_TUNE_PAGE_SIZE bytes);
 * addresses and the byte ranges of pcm_munmap(), pcm_mincore() and
 * pcm_cachestat() count bytes.
 *
 * What the model keeps, per file page: present in the page cache, up to
 * date, dirty, a shadow entry (left by reclaim), and for tmpfs a swap entry
 * (in the swap cache or not). Per task page-table entry: none, present,
 * swap entry (anonymous pages only), swap entry whose page is in the swap
 * cache, migration, hwpoison, a PMD mapping a THP, a PMD under construction,
 * and whether the page behind it is anonymous. Huge pages (THP, hugetlbfs)
 * are kept per base page: each page carries its own state.
 *
 * Simplifications where doc/kernels.md says nothing (the kernel differs in
 * detail; the differential tests avoid these corners):
 *  - No writeback state: cachestat's writeback is always 0, fsync cleans at
 *    once, DONTNEED starts no writeback and skips dirty pages.
 *  - Every shadow entry is recent: cachestat's recently_evicted == evicted.
 *  - Readahead is synchronous and has no asynchronous markers (see
 *    pcm_pread()); mmap faults ignore the fd's pread readahead state and
 *    the kernel's mmap-miss heuristics.
 *  - Tasks have no supplementary groups; ACL entries are rw- and the ACL
 *    mask allows them.
 *  - Anonymous MAP_SHARED mappings are anonymous (the kernel backs them
 *    with an internal shmem file).
 *  - Adjacent VMAs are never merged.
 * @since 0.1
 */
#ifndef PAGECACHE_MODEL_H
#define PAGECACHE_MODEL_H

#include <stdint.h>

#include "pagecache.h"

#ifdef __cplusplus
extern "C" {
#endif

struct pcm_kernel;
struct pcm_file;
struct pcm_task;
struct pcm_fd;

/* ---- the kernel ----------------------------------------------------------- */

/**
 * pcm_kernel_new() - a model kernel with the given semantics:
 * @mincore_mode an enum pc_mincore_mode (not UNKNOWN), @nowait_mode an enum
 * pc_nowait_mode (not UNKNOWN), @cachestat_mode an enum pc_cachestat_mode
 * (not UNKNOWN). It starts with one system file (pcm_kernel_system_file()).
 * Returns 0 or -EINVAL, -ENOMEM.
 *
 * mincore_mode decides mincore's answer for each VMA of a request:
 *  - PC_MINCORE_FULL: the truth (below) for every VMA.
 *  - PC_MINCORE_GATED_FAKED: the truth where the gate passes; where it
 *    fails, 1 for every page of the request inside that VMA.
 *  - PC_MINCORE_GATED_MAPPED: the truth where the gate passes; where it
 *    fails, the mapped view (below).
 *  - PC_MINCORE_MAPPED_ONLY: the mapped view for every VMA, file or anonymous.
 *  - PC_MINCORE_USELESS: 1 for every mapped page (gVisor's emulation).
 * The gate (pcm_can_do_mincore()): anonymous VMAs pass; a PCM_FILE_NO_INODE
 * mapping (vdso) fails, even for root; otherwise the file's owner (by
 * fsuid), a holder of CAP_FOWNER, or a task with write permission passes.
 * Write permission: a read-only superblock denies, immutable denies, then
 * the owner's, an ACL entry's, the owning group's or others' w bit (first
 * class that matches decides), then CAP_DAC_OVERRIDE grants. A read-only
 * bind mount does not deny.
 * The truth, per page: a present PTE, a PMD-mapped THP, a migration or
 * hwpoison entry -> 1; an anonymous swap entry -> 1 iff its page is in the
 * swap cache (pcm_swap_out() leaves it out: 0); an empty PTE, or a PMD under
 * construction -> the page-cache lookup: 1 iff the file page is present and
 * up to date (0 when absent, a shadow entry, past EOF, or a pending read;
 * a tmpfs swap entry -> 1 iff in the swap cache); in an anonymous VMA, or
 * a PCM_FILE_NO_INODE one, that lookup finds nothing: 0.
 * The mapped view, per page: a present PTE, a THP, a PMD under
 * construction, a migration or hwpoison entry -> 1; empty or swapped -> 0.
 * hugetlbfs mappings (PCM_FILE_HUGETLB): 1 iff the huge PTE is not empty,
 * in the truth and in the mapped view alike.
 *
 * nowait_mode decides pcm_preadv2_nowait(); cachestat_mode decides
 * pcm_cachestat() (PC_CACHESTAT_BLOCKED: -EPERM for everyone, as a seccomp
 * filter does).
 */
int pcm_kernel_new(int mincore_mode, int nowait_mode, int cachestat_mode,
		   struct pcm_kernel **out);

/** pcm_kernel_free() - free the kernel with its files, tasks and fds. NULL is allowed. */
void pcm_kernel_free(struct pcm_kernel *k);

/* pcm_kernel_tune() tunables */
#define PCM_TUNE_PAGE_SIZE          1 /* 4096 (default), 16384 or 65536 */
#define PCM_TUNE_FAULT_AROUND_PAGES 2 /* 16 (default: fault_around_bytes 64K); a power
					 of two up to 512; 1 disables */
#define PCM_TUNE_READAHEAD_PAGES    3 /* 32 (default: read_ahead_kb 128); 0..4096; 0
					 disables readahead and read-around */

/**
 * pcm_kernel_tune() - set a tunable. The page size can only change while the
 * kernel has no files but its system file, and no tasks (it keeps 64 pages).
 * Returns 0 or -EINVAL, -EBUSY.
 */
int pcm_kernel_tune(struct pcm_kernel *k, int tunable, uint64_t value);

/**
 * pcm_kernel_system_file() - the kernel's system file: a shared library
 * owned by root:root, mode 0755, 64 pages, all cached (as the libc every
 * process runs from). The detector probes it. NULL for a NULL kernel.
 */
struct pcm_file *pcm_kernel_system_file(struct pcm_kernel *k);

/* ---- files and their page cache ------------------------------------------ */

/**
 * pcm_file_new() - a file of @npages pages (up to 2^32) owned by @uid:@gid
 * with permission bits @mode (07777), on the kernel's disk filesystem,
 * nothing cached. Files live until pcm_kernel_free().
 * Returns 0 or -EINVAL, -ENOMEM.
 */
int pcm_file_new(struct pcm_kernel *k, uint32_t uid, uint32_t gid, uint32_t mode,
		 uint64_t npages, struct pcm_file **out);

/* pcm_file_set() attributes */
#define PCM_FILE_IMMUTABLE       1 /* chattr +i: value 0 or 1 */
#define PCM_FILE_RDONLY_SB       2 /* on a read-only superblock: 0 or 1 */
#define PCM_FILE_RDONLY_MOUNT    3 /* seen through a read-only bind mount: 0 or 1 */
#define PCM_FILE_SHMEM           4 /* tmpfs/memfd: no readahead, no RWF_NOWAIT, fadvise
				      WILLNEED/DONTNEED do nothing, holes read as zeros
				      without being filled, fsync leaves pages dirty */
#define PCM_FILE_HUGETLB         5 /* hugetlbfs: like SHMEM for I/O, cachestat
				      -EOPNOTSUPP, mincore reads the huge PTE only */
#define PCM_FILE_ACL_WRITE_UID   6 /* add an ACL entry user:value:rw- */
#define PCM_FILE_ACL_WRITE_GID   7 /* add an ACL entry group:value:rw- */
#define PCM_FILE_SIZE_BYTES      8 /* exact size in bytes (npages = size rounded up);
				      truncating zaps the mappings of pages cut off */
#define PCM_FILE_NO_INODE        9 /* a mapping with no file behind it (vdso, vvar): 0 or 1 */

/** pcm_file_set() - set an attribute. Returns 0 or -EINVAL, -ENOMEM, -EFBIG. */
int pcm_file_set(struct pcm_file *f, int attr, uint64_t value);

/* Page states, as pcm_file_page_state() reports them */
#define PCM_PAGE_PRESENT   0x01 /* a folio in the page cache (cachestat's cache) */
#define PCM_PAGE_UPTODATE  0x02 /* its data has been read (mincore's 1) */
#define PCM_PAGE_DIRTY     0x04
#define PCM_PAGE_SHADOW    0x08 /* a shadow entry left by reclaim (cachestat's evicted) */
#define PCM_PAGE_SWAP      0x10 /* tmpfs: the page is in swap */
#define PCM_PAGE_SWAPCACHE 0x20 /* tmpfs: ... and still in the swap cache */
#define PCM_PAGE_RA_MARK   0x40 /* where a readahead window marked the next one's start */

/**
 * pcm_file_cache() - @page is in the page cache and up to date (a shadow or
 * swap entry goes; a dirty page stays dirty). 0, -ERANGE past EOF.
 */
int pcm_file_cache(struct pcm_file *f, uint64_t page);
/**
 * pcm_file_read_pending() - @page is in the page cache but its read has not
 * completed: cachestat counts it, mincore and RWF_NOWAIT do not see it; a
 * fault or pcm_pread() waits and completes it. 0, -ERANGE.
 */
int pcm_file_read_pending(struct pcm_file *f, uint64_t page);
/**
 * pcm_file_drop() - @page is invalidated: gone, no shadow entry, its
 * mappings zapped (anonymous copies stay). 0, -ERANGE.
 */
int pcm_file_drop(struct pcm_file *f, uint64_t page);
/**
 * pcm_file_reclaim() - @page is reclaimed: gone, a shadow entry stays
 * (cachestat's evicted), its mappings zapped. 0, -ERANGE.
 */
int pcm_file_reclaim(struct pcm_file *f, uint64_t page);
/**
 * pcm_file_swap_out() - a tmpfs (PCM_FILE_SHMEM) @page goes to swap, its
 * mappings zapped; with @in_swap_cache it stays in the swap cache (mincore
 * 1). cachestat counts it as evicted. 0, -ERANGE, -ENOENT for a hole,
 * -EINVAL for other files.
 */
int pcm_file_swap_out(struct pcm_file *f, uint64_t page, int in_swap_cache);
/**
 * pcm_file_resident() - the truth: 1 if @page is cached and up to date (for
 * a tmpfs page in swap: in the swap cache), else 0; -ERANGE. This is what
 * mincore answers when it tells the truth about an untouched mapping.
 */
int pcm_file_resident(const struct pcm_file *f, uint64_t page);
/** pcm_file_page_state() - the PCM_PAGE_* bits of @page, or -ERANGE. */
int pcm_file_page_state(const struct pcm_file *f, uint64_t page);
/** pcm_file_npages() - the file's size in pages (0 for NULL). */
uint64_t pcm_file_npages(const struct pcm_file *f);
/** pcm_file_size() - the file's size in bytes (0 for NULL). */
uint64_t pcm_file_size(const struct pcm_file *f);

/* ---- tasks, fds and mappings ---------------------------------------------- */

#define PCM_CAP_FOWNER       (1u << 0)
#define PCM_CAP_DAC_OVERRIDE (1u << 1)

/**
 * pcm_task_new() - a task with filesystem ids @fsuid/@fsgid, no
 * supplementary groups, and effective capabilities @caps (PCM_CAP_*). It
 * lives until pcm_task_free() or pcm_kernel_free(). Returns 0 or -EINVAL,
 * -ENOMEM.
 */
int pcm_task_new(struct pcm_kernel *k, uint32_t fsuid, uint32_t fsgid, unsigned int caps,
		 struct pcm_task **out);

/** pcm_task_free() - unmap everything of @t, close its fds, free it. NULL is allowed. */
void pcm_task_free(struct pcm_task *t);

#define PCM_O_RDONLY 0
#define PCM_O_RDWR   2

/**
 * pcm_open() - open @f for @t (PCM_O_RDONLY or PCM_O_RDWR), permission
 * checked as open(2) does, in this order: read permission (mode bits and
 * ACL entries, CAP_DAC_OVERRIDE), then for writing -EROFS (read-only
 * superblock), -EPERM (immutable), -EACCES (no w bit, no ACL entry, no
 * CAP_DAC_OVERRIDE), -EROFS (read-only mount). The fd is fresh (no read
 * yet), POSIX_FADV_NORMAL, and belongs to @t.
 */
int pcm_open(struct pcm_task *t, struct pcm_file *f, int flags, struct pcm_fd **out);

/**
 * pcm_close() - close an fd (pcm_task_free() closes what is left). Mappings
 * made through it stay. @fd must not be used afterwards.
 */
void pcm_close(struct pcm_fd *fd);

/** pcm_fd_file(), pcm_fd_task() - the file and the task of an open fd. */
struct pcm_file *pcm_fd_file(const struct pcm_fd *fd);
struct pcm_task *pcm_fd_task(const struct pcm_fd *fd);

#define PCM_FADV_NORMAL   0
#define PCM_FADV_RANDOM   1
#define PCM_FADV_WILLNEED 3
#define PCM_FADV_DONTNEED 4

/**
 * pcm_fadvise() - posix_fadvise on @npages pages from @page (0 = to EOF):
 * NORMAL and RANDOM set the fd's readahead mode; WILLNEED reads the pages
 * in; DONTNEED invalidates the pages that are up to date, clean and not
 * mapped by any task's page tables (no shadow entry; pending reads and
 * anonymous copies do not hold a page). WILLNEED and DONTNEED do nothing on
 * tmpfs and hugetlbfs. Returns 0 or -EINVAL.
 */
int pcm_fadvise(struct pcm_fd *fd, uint64_t page, uint64_t npages, int advice);

#define PCM_PROT_NONE  0
#define PCM_PROT_READ  1
#define PCM_PROT_WRITE 2

#define PCM_MAP_SHARED  1
#define PCM_MAP_PRIVATE 2
#define PCM_MAP_FIXED   4 /* or'ed in: *addr is the address (page aligned);
			     whatever was mapped there is unmapped first */

/**
 * pcm_mmap() - map @npages pages of @fd from page @pgoff into @t (@fd NULL:
 * anonymous memory). Nothing is touched; pages past EOF may be mapped.
 * *@addr gets the (page aligned) address: without PCM_MAP_FIXED, the
 * lowest 1 GiB boundary with room and a free page on either side, so that
 * separately made mappings never touch and virtual pages are aligned like
 * file pages. Returns 0 or -EINVAL (also for @npages 0), -EBADF (@fd of
 * another task or closed), -EACCES (a write-shared mapping of a read-only
 * fd), -EOVERFLOW (@pgoff far past any file size), -ENOMEM.
 */
int pcm_mmap(struct pcm_task *t, struct pcm_fd *fd, uint64_t pgoff, uint64_t npages,
	     int prot, int flags, uint64_t *addr);

/**
 * pcm_munmap() - unmap [@addr, @addr + @length bytes rounded up to pages);
 * splits the mappings it cuts; holes are fine. -EINVAL for an unaligned
 * @addr or a zero @length.
 */
int pcm_munmap(struct pcm_task *t, uint64_t addr, uint64_t length);

/**
 * pcm_touch() - a read or write access at @addr (any byte of a page).
 * -EFAULT where a real access would get SIGSEGV (no mapping, PROT_NONE,
 * write to a mapping without PROT_WRITE) or SIGBUS (a file page at or past
 * EOF, a hwpoison entry). Otherwise the page-table entry:
 *  - empty, anonymous VMA: an anonymous page is mapped (also for reads).
 *  - empty, file VMA, read: first fault-around maps the neighbours that are
 *    cached and up to date before this fault, in the block of
 *    PCM_TUNE_FAULT_AROUND_PAGES virtual pages (aligned) that holds @addr,
 *    clamped to the VMA and EOF. Then, if the page is not cached, the
 *    read-around reads pages in: a window of PCM_TUNE_READAHEAD_PAGES
 *    pages starting half of that before the page (clamped to 0 and EOF),
 *    or with readahead 0 that page only; the fd's FADV_RANDOM does not
 *    apply to faults (seen on 6.18: only madvise(MADV_RANDOM), which the
 *    model lacks, stops read-around); only absent pages are read, a
 *    pending one is waited for. A fault that waited for a read is
 *    retried, as the kernel retries it after waiting with mmap_lock
 *    dropped: fault-around runs again and maps the block's pages that are
 *    cached now, those the read-around brought in included (seen on
 *    6.18; not on tmpfs, nor for PCM_FILE_NO_INODE). Then the page is
 *    mapped.
 *  - empty, file VMA, write: the same read-around (no fault-around); on
 *    MAP_SHARED the page is mapped and dirty; on MAP_PRIVATE an anonymous
 *    copy is mapped (the file page stays cached).
 *  - tmpfs: no read-around (a hole or swapped page is brought in alone);
 *    hugetlbfs: no read-around, no fault-around.
 *  - present: a write on MAP_PRIVATE copies (anonymous), on MAP_SHARED
 *    dirties the page; a read does nothing.
 *  - swap entry: swapped in (anonymous, present). Migration entry: the
 *    page is back (present; a file page is cached). THP: nothing. PMD under
 *    construction: becomes a THP.
 */
int pcm_touch(struct pcm_task *t, uint64_t addr, int write);

/**
 * pcm_swap_out() - the present anonymous page at @addr (anonymous VMA, or a
 * private copy in a file VMA) gets a swap entry, not in the swap cache.
 * -EFAULT unmapped, -EINVAL for any other entry.
 */
int pcm_swap_out(struct pcm_task *t, uint64_t addr);

/* pcm_pte_set() and pcm_pte_get() states */
#define PCM_PTE_NONE         0 /* empty (set: zap; the page cache is untouched) */
#define PCM_PTE_MIGRATION    1 /* a migration entry */
#define PCM_PTE_HWPOISON     2 /* a hardware-poison entry */
#define PCM_PMD_THP          3 /* the PMD maps a transparent huge page */
#define PCM_PMD_UNSTABLE     4 /* a THP under construction */
#define PCM_PTE_SWAP_CACHED  5 /* an anonymous swap entry whose page is in the swap cache */
#define PCM_PTE_PRESENT      6 /* pcm_pte_get() only: a present page */
#define PCM_PTE_SWAP         7 /* pcm_pte_get() only: a swap entry, not in the swap cache */
#define PCM_PTE_ANON      0x80 /* pcm_pte_get() flag: the page behind it is anonymous */

/**
 * pcm_pte_set() - force the page-table state of the page at @addr, keeping
 * whether the page behind it is anonymous (always in an anonymous VMA).
 * The page cache is left alone. PCM_PTE_SWAP_CACHED needs an anonymous
 * page. Returns 0, -EFAULT unmapped, -EINVAL.
 */
int pcm_pte_set(struct pcm_task *t, uint64_t addr, int state);

/** pcm_pte_get() - the PCM_PTE_* state of @addr's page, with PCM_PTE_ANON; -EFAULT. */
int pcm_pte_get(struct pcm_task *t, uint64_t addr);

/**
 * pcm_mincore() - mincore(2) as @t: -EINVAL for an unaligned @addr, -ENOMEM
 * for a range past the 47-bit user address space or when part of the range
 * is unmapped (the pages before the hole are filled), 0 for @length 0,
 * -EFAULT for a NULL @vec. @length is rounded up to pages; the request may
 * span several VMAs, each answered as pcm_kernel_new() describes. @vec gets
 * one byte per page, 0 or 1.
 */
int pcm_mincore(struct pcm_task *t, uint64_t addr, uint64_t length, unsigned char *vec);

/**
 * pcm_pread() - a buffered read of @npages pages from @page. Returns the
 * pages read (short at EOF, 0 at or past EOF). If any requested page is not
 * cached and up to date, readahead runs first (on the disk filesystem):
 *  - under FADV_RANDOM: exactly the pages asked;
 *  - page 0 of a fresh fd: the initial window [0, init) where, with
 *    max = PCM_TUNE_READAHEAD_PAGES and r = @npages rounded up to a power
 *    of two, init is 4r if r <= max/32, 2r if r <= max/4, else max (at
 *    least @npages): 4 pages for a 1-page read by default;
 *  - a sequential continuation (@page is where the fd's last read ended):
 *    if it also starts where the fd's last readahead window ended, the next
 *    window there, twice as large (at most max); else an initial window
 *    at @page;
 *  - otherwise (a random read): exactly the pages asked; the window stays.
 * Windows are clamped to EOF and read only absent pages. Simplified: the
 * kernel starts the next window earlier and asynchronously (at a marker
 * page) and recognises random reads by the page cache's history.
 * Afterwards every page read is cached and up to date. tmpfs/hugetlbfs:
 * no readahead, holes are not filled, swapped pages are swapped in.
 */
int pcm_pread(struct pcm_fd *fd, uint64_t page, uint64_t npages);

/**
 * pcm_preadv2_nowait() - a 1-byte preadv2(RWF_NOWAIT) read at @page:
 * -EOPNOTSUPP (PC_NOWAIT_UNSUPPORTED kernel, tmpfs or hugetlbfs), then 0 at
 * or past EOF, 1 for a hit (cached and up to date), -EAGAIN for a miss. On
 * a PC_NOWAIT_DESTRUCTIVE kernel a miss starts readahead of the missed
 * range: the initial window for a 1-page read (4 pages by default) when
 * @page is 0 on a fresh fd without FADV_RANDOM, else @page alone. On a
 * PC_NOWAIT_CLEAN kernel nothing changes. A hit, or a destructive miss,
 * makes the fd no longer fresh.
 */
int pcm_preadv2_nowait(struct pcm_fd *fd, uint64_t page);

/**
 * pcm_pwrite() - a buffered write of @npages whole pages from @page through
 * a writable fd: cached, up to date, dirty; extends the file past EOF.
 * Returns @npages or -EBADF (read-only fd), -EPERM (immutable), -EFBIG.
 */
int pcm_pwrite(struct pcm_fd *fd, uint64_t page, uint64_t npages);

/** pcm_fsync() - write back the file's dirty pages (on tmpfs: nothing). 0. */
int pcm_fsync(struct pcm_fd *fd);

/**
 * pcm_cachestat() - cachestat(2) of @len bytes from byte @off (@len 0: to
 * EOF) as the fd's task, checked in this order: -ENOSYS (absent), -EPERM
 * (blocked), -EFAULT (NULL @out), -EOPNOTSUPP (hugetlbfs), -EPERM (gated,
 * unless the fd is open for writing or the task owns the file, holds
 * CAP_FOWNER or may write it; open: no check). Counts over the file's
 * pages that intersect the range: cache = present (up to date or not),
 * dirty (always 0 on tmpfs, whose dirty pages are not tagged where
 * cachestat looks: seen on 6.18), writeback = 0, evicted = shadow entries
 * and tmpfs pages in swap, recently_evicted = evicted.
 */
int pcm_cachestat(struct pcm_fd *fd, uint64_t off, uint64_t len, struct pc_cachestat *out);

/**
 * pcm_can_do_mincore() - the kernel's gate for @t over @f, whatever the
 * kernel's mincore mode (it applies only on gated kernels): 1 pass, 0 fail.
 */
int pcm_can_do_mincore(struct pcm_task *t, struct pcm_file *f);

/* ---- the library's own strategy, run on the model -------------------------- */

/* Filesystems, for pcm_detect_nowait_fs() */
#define PCM_FS_DISK  0 /* the disk filesystem of pcm_file_new() */
#define PCM_FS_TMPFS 1 /* tmpfs: PCM_FILE_SHMEM files */

/**
 * pcm_detect_mincore(), pcm_detect_nowait(), pcm_detect_cachestat() - the
 * library's own detector (the code behind pc_detect_*()), run on the model
 * as task @t (pcm_detect_nowait(): on the disk filesystem). Not cached:
 * each call probes again. They may create scratch files (owned by @t, gone
 * when closed: an unlinked O_TMPFILE on the disk, or a memfd on tmpfs) and,
 * when @t's fsuid is 0, a temporary task 65534:65534 without capabilities
 * (the helper thread that called setfsuid). Return the enum value or -errno.
 */
int pcm_detect_mincore(struct pcm_task *t);
int pcm_detect_nowait(struct pcm_task *t);
int pcm_detect_cachestat(struct pcm_task *t);
/** pcm_detect_nowait_fs() - pcm_detect_nowait() on filesystem @fs (PCM_FS_*). */
int pcm_detect_nowait_fs(struct pcm_task *t, int fs);

/**
 * pcm_residency() - pc_residency()'s own strategy run on the model through
 * @fd, as the fd's task. The kernel modes it needs are detected on the
 * task's first call and kept for the task's lifetime (as a process keeps
 * them); the NOWAIT mode likewise per filesystem, when a probe needs it.
 * Probes go through a new fd of the same task (FADV_RANDOM); nothing is
 * faulted in. The result is freed with pc_residency_free().
 */
int pcm_residency(struct pcm_fd *fd, uint64_t offset, uint64_t length, unsigned int flags,
		  struct pc_residency **out);

#ifdef __cplusplus
}
#endif

#endif /* PAGECACHE_MODEL_H */
