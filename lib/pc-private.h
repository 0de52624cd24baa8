/* SPDX-License-Identifier: MIT */
/* Internal helpers shared by the library's modules. Not installed. */
#ifndef PC_PRIVATE_H
#define PC_PRIVATE_H

#include <errno.h>
#include <stdint.h>
#include <sys/stat.h>

#include "pagecache/pagecache.h"

#define PC_EXPORT __attribute__((visibility("default")))

#define PC_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* statfs's f_type of overlayfs: the backend's cachestat and the gate's
 * owner treat it apart */
#ifndef OVERLAYFS_SUPER_MAGIC
#define OVERLAYFS_SUPER_MAGIC 0x794c7630
#endif

/* -errno from the last failed libc call, never 0. */
static inline int pc_neg_errno(void)
{
	return errno > 0 ? -errno : -EIO;
}

/* Whether -errno says the process ran short of a resource (memory,
 * descriptors): the caller's to see, never to be turned into a weaker
 * answer or remembered as a fact about the kernel. */
static inline int pc_err_is_resource(int err)
{
	return err == -ENOMEM || err == -EMFILE || err == -ENFILE;
}

static inline uint64_t pc_div_round_up(uint64_t n, uint64_t d)
{
	return n / d + (n % d != 0);
}

/* A page of a file of size bytes (pages of ps bytes) that no folio holds,
 * so never cached (doc/kernels.md section 5): one page more than the largest
 * folio past the last page. Folios are at most PMD sized and aligned, and
 * a PMD maps a page table page of 8-byte entries: ps / 8 pages (2 MiB on
 * 4 KiB pages, 32 MiB on 16 KiB, 512 MiB on 64 KiB). */
static inline uint64_t pc_never_cached_page(uint64_t size, uint64_t ps)
{
	return pc_div_round_up(size, ps) + ps / 8 + 1;
}

/* cachestat(2), raw: flags passed through so detection can probe with 1. */
int pc_sys_cachestat(int fd, uint64_t offset, uint64_t length, unsigned int flags,
		     struct pc_cachestat *out);

/* Whether the calling thread is ignored by the gate because it owns the
 * file, holds CAP_FOWNER over it or may write it (doc/kernels.md section 1),
 * without consulting the detected mincore mode: 1, 0 or -errno. */
int pc_gate_predict(int fd);

/* An O_PATH fd for @path beneath @dirfd (O_NOFOLLOW and O_DIRECTORY in
 * @flags are kept), fstat'ed into @st; no driver's open runs and nothing is
 * read. Decide on @st, then pc_reopen() it. The fd, or -errno (open.c). */
int pc_open_path(int dirfd, const char *path, int flags, struct stat *st);

/* The inode behind @pathfd opened again with @flags (O_CLOEXEC added),
 * through /proc/self/fd: the same inode whatever happened to its name
 * since. The fd, or -errno (-ENOENT without /proc). */
int pc_reopen(int pathfd, int flags);

/* A residency answer (residency.c). bits is NULL for count-only and
 * unknown results; bit i stands for file page first_page + i. */
struct pc_residency {
	uint64_t first_page;
	uint64_t npages;
	uint64_t resident;
	uint64_t file_size;
	int quality;
	int source;
	int perturbed;
	uint64_t uncertain; /* pages reported absent that a probe could not settle */
	uint64_t *bits;
};

#endif
