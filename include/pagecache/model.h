/* SPDX-License-Identifier: MIT */
/*
 * libpagecache's reference model of the kernel: what mincore(2),
 * preadv2(RWF_NOWAIT) and cachestat(2) answer, in each historical and
 * proposed variant, for tasks with given credentials over files with given
 * permissions and page cache contents. Written from the documented facts
 * (the project's KERNEL.md), not from kernel source.
 *
 * Purposes: prove that the library's detector and pc_residency() never
 * mislabel an answer on kernels that cannot be booted here; let users ask
 * "what would this program see on kernel X"; reproduce the side-channel
 * claims made when the mincore gate was designed.
 *
 * Everything here is in-process and deterministic: readahead completes at
 * once, nothing is reclaimed unless asked. A pcm_kernel and everything made
 * from it is used by one thread at a time; separate kernels are independent.
 * Every fallible call returns >= 0 on success and -errno on failure.
 * Page numbers and lengths count model pages (PCM_TUNE_PAGE_SIZE bytes).
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

/**
 * pcm_kernel_new() - a model kernel with the given semantics:
 * @mincore_mode an enum pc_mincore_mode (not UNKNOWN), @nowait_mode an enum
 * pc_nowait_mode (not UNKNOWN), @cachestat_mode an enum pc_cachestat_mode
 * (not UNKNOWN). It starts with one system file (pcm_kernel_system_file()).
 * Returns 0 or -EINVAL, -ENOMEM.
 */
int pcm_kernel_new(int mincore_mode, int nowait_mode, int cachestat_mode,
		   struct pcm_kernel **out);

/** pcm_kernel_free() - free the kernel with its files, tasks and fds. NULL is allowed. */
void pcm_kernel_free(struct pcm_kernel *k);

/* pcm_kernel_tune() tunables */
#define PCM_TUNE_PAGE_SIZE          1 /* 4096 (default), 16384 or 65536 */
#define PCM_TUNE_FAULT_AROUND_PAGES 2 /* 16 (default: fault_around_bytes 64K); 1 disables */
#define PCM_TUNE_READAHEAD_PAGES    3 /* 32 (default: read_ahead_kb 128) */

/**
 * pcm_kernel_tune() - set a tunable. The page size can only change while the
 * kernel has no files but its system file, tasks or fds. Returns 0 or -EINVAL, -EBUSY.
 */
int pcm_kernel_tune(struct pcm_kernel *k, int tunable, uint64_t value);

/**
 * pcm_kernel_system_file() - the kernel's system file: a shared library
 * owned by root, mode 0755, 64 pages, all cached (as the libc every
 * process runs from). The detector probes it.
 */
struct pcm_file *pcm_kernel_system_file(struct pcm_kernel *k);

/* ---- files and their page cache ------------------------------------------ */

/**
 * pcm_file_new() - a file of @npages pages owned by @uid:@gid with permission
 * bits @mode (07777), on the kernel's disk filesystem, nothing cached.
 * Returns 0 or -EINVAL, -ENOMEM.
 */
int pcm_file_new(struct pcm_kernel *k, uint32_t uid, uint32_t gid, uint32_t mode,
		 uint64_t npages, struct pcm_file **out);

/* pcm_file_set() attributes */
#define PCM_FILE_IMMUTABLE       1 /* chattr +i: value 0 or 1 */
#define PCM_FILE_RDONLY_SB       2 /* on a read-only superblock */
#define PCM_FILE_RDONLY_MOUNT    3 /* seen through a read-only bind mount */
#define PCM_FILE_SHMEM           4 /* tmpfs/memfd: no RWF_NOWAIT, no eviction by fadvise */
#define PCM_FILE_HUGETLB         5 /* hugetlbfs: cachestat -EOPNOTSUPP */
#define PCM_FILE_ACL_WRITE_UID   6 /* add an ACL entry user:value:rw- */
#define PCM_FILE_ACL_WRITE_GID   7 /* add an ACL entry group:value:rw- */
#define PCM_FILE_SIZE_BYTES      8 /* exact size in bytes (npages = size rounded up) */
#define PCM_FILE_NO_INODE        9 /* a mapping with no file behind it (vdso, vvar) */

/** pcm_file_set() - set an attribute. Returns 0 or -EINVAL. */
int pcm_file_set(struct pcm_file *f, int attr, uint64_t value);

/** pcm_file_cache() - @page is in the page cache and up to date. 0, -ERANGE past EOF. */
int pcm_file_cache(struct pcm_file *f, uint64_t page);
/** pcm_file_drop() - @page is invalidated: gone, no shadow entry. */
int pcm_file_drop(struct pcm_file *f, uint64_t page);
/** pcm_file_reclaim() - @page is reclaimed: gone, a shadow entry stays (cachestat's evicted). */
int pcm_file_reclaim(struct pcm_file *f, uint64_t page);
/** pcm_file_resident() - the truth: 1 if @page is cached and up to date, else 0; -ERANGE. */
int pcm_file_resident(const struct pcm_file *f, uint64_t page);
/** pcm_file_npages() - the file's size in pages. */
uint64_t pcm_file_npages(const struct pcm_file *f);

/* ---- tasks, fds and mappings ---------------------------------------------- */

#define PCM_CAP_FOWNER       (1u << 0)
#define PCM_CAP_DAC_OVERRIDE (1u << 1)

/** pcm_task_new() - a task with filesystem ids @fsuid/@fsgid and effective capabilities @caps. */
int pcm_task_new(struct pcm_kernel *k, uint32_t fsuid, uint32_t fsgid, unsigned int caps,
		 struct pcm_task **out);

#define PCM_O_RDONLY 0
#define PCM_O_RDWR   2

/**
 * pcm_open() - open @f for @t (PCM_O_RDONLY or PCM_O_RDWR), permission
 * checked as open(2) does: -EACCES, -EROFS (read-only mount or superblock
 * for writing), -EPERM (immutable for writing).
 */
int pcm_open(struct pcm_task *t, struct pcm_file *f, int flags, struct pcm_fd **out);

/** pcm_close() - close an fd (pcm_kernel_free() closes what is left). */
void pcm_close(struct pcm_fd *fd);

#define PCM_FADV_NORMAL   0
#define PCM_FADV_RANDOM   1
#define PCM_FADV_WILLNEED 3
#define PCM_FADV_DONTNEED 4

/**
 * pcm_fadvise() - posix_fadvise on @npages pages from @page (0 = to EOF):
 * NORMAL and RANDOM set the fd's readahead mode; WILLNEED reads the pages in;
 * DONTNEED invalidates the clean pages that no task maps (no shadow entry).
 */
int pcm_fadvise(struct pcm_fd *fd, uint64_t page, uint64_t npages, int advice);

#define PCM_PROT_NONE  0
#define PCM_PROT_READ  1
#define PCM_PROT_WRITE 2

#define PCM_MAP_SHARED  1
#define PCM_MAP_PRIVATE 2

/**
 * pcm_mmap() - map @npages pages of @fd from page @pgoff into @t (@fd NULL:
 * anonymous memory). Nothing is touched. *@addr gets the (page aligned)
 * address. -EACCES for a write-shared mapping of a read-only fd.
 */
int pcm_mmap(struct pcm_task *t, struct pcm_fd *fd, uint64_t pgoff, uint64_t npages,
	     int prot, int flags, uint64_t *addr);

/** pcm_munmap() - unmap [@addr, @addr + @length bytes); may split mappings. */
int pcm_munmap(struct pcm_task *t, uint64_t addr, uint64_t length);

/**
 * pcm_touch() - a read or write access at @addr: a page fault with read-around
 * (the fd's readahead mode decides) and fault-around (already cached
 * neighbours get mapped too). MAP_PRIVATE writes make an anonymous copy.
 * -EFAULT where a real access would get SIGSEGV (no mapping, PROT_NONE,
 * write to a read-only mapping) or SIGBUS (past EOF).
 */
int pcm_touch(struct pcm_task *t, uint64_t addr, int write);

/** pcm_swap_out() - the anonymous page at @addr goes to swap (a swap entry, not in the swap cache). */
int pcm_swap_out(struct pcm_task *t, uint64_t addr);

/* pcm_pte_set() states, for the page-table corner cases of mincore */
#define PCM_PTE_MIGRATION    1 /* a migration entry */
#define PCM_PTE_HWPOISON     2 /* a hardware-poison entry */
#define PCM_PMD_THP          3 /* the PMD maps a transparent huge page */
#define PCM_PMD_UNSTABLE     4 /* a THP under construction */

/** pcm_pte_set() - force the page-table state of the page at @addr. */
int pcm_pte_set(struct pcm_task *t, uint64_t addr, int state);

/**
 * pcm_mincore() - mincore(2) as @t: -EINVAL for an unaligned @addr, -ENOMEM
 * when part of the range is unmapped (the pages before the hole are filled),
 * 0 for @length 0. @vec gets one byte per page, as the variant answers.
 */
int pcm_mincore(struct pcm_task *t, uint64_t addr, uint64_t length, unsigned char *vec);

/**
 * pcm_pread() - a buffered read of @npages pages from @page, with the fd's
 * readahead (none under FADV_RANDOM). Returns the pages read (short at EOF).
 */
int pcm_pread(struct pcm_fd *fd, uint64_t page, uint64_t npages);

/**
 * pcm_preadv2_nowait() - a 1-byte preadv2(RWF_NOWAIT) read at @page: 1 hit,
 * 0 at or past EOF, -EAGAIN miss (on a destructive kernel the miss starts
 * readahead of the missed range), -EOPNOTSUPP (shmem, or no NOWAIT support).
 */
int pcm_preadv2_nowait(struct pcm_fd *fd, uint64_t page);

/**
 * pcm_cachestat() - cachestat(2) of @len bytes from byte @off (@len 0: to
 * EOF) as the fd's task: -ENOSYS (absent), -EPERM (blocked, or the gate),
 * -EOPNOTSUPP (hugetlbfs).
 */
int pcm_cachestat(struct pcm_fd *fd, uint64_t off, uint64_t len, struct pc_cachestat *out);

/** pcm_can_do_mincore() - the kernel's gate for @t over @f: 1 pass, 0 fail. */
int pcm_can_do_mincore(struct pcm_task *t, struct pcm_file *f);

/**
 * pcm_detect_mincore(), pcm_detect_nowait(), pcm_detect_cachestat() - the
 * library's own detector (the code behind pc_detect_*()), run on the model
 * as task @t. They may create and remove scratch files.
 */
int pcm_detect_mincore(struct pcm_task *t);
int pcm_detect_nowait(struct pcm_task *t);
int pcm_detect_cachestat(struct pcm_task *t);

/**
 * pcm_residency() - pc_residency()'s own strategy run on the model through
 * @fd (as the fd's task). The result is freed with pc_residency_free().
 */
int pcm_residency(struct pcm_fd *fd, uint64_t offset, uint64_t length, unsigned int flags,
		  struct pc_residency **out);

#ifdef __cplusplus
}
#endif

#endif /* PAGECACHE_MODEL_H */
