/* SPDX-License-Identifier: MIT */
/*
 * pc_residency_mem(): mincore on the caller's own mapping, labelled by what
 * backs each VMA of the range (/proc/self/maps): anonymous memory is always
 * truthful; a file mapping is as truthful as mincore is for that file.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "kernel/kernel.h"
#include "bitmap.h"
#include "pc-private.h"

#define PC_MEM_WINDOW_PAGES 16384

/* Quality of the answers mincore gives for a file mapping of the file at
 * fd, given the kernel's modes; -errno when short of memory or descriptors. */
static int file_quality(int fd, const struct pc_modes *m)
{
	struct pc_backend *b = pc_kernel_backend();
	struct pc_bfile *f;
	struct pc_bstat st;
	int verdict;

	verdict = pc_kernel_bfile_wrap(fd, &f);
	if (verdict < 0)
		return pc_err_is_resource(verdict) ? verdict : PC_QUALITY_UNKNOWN;
	verdict = b->ops->fstat(b, f, &st);
	if (verdict == 0)
		verdict = pc_file_verdict(b, f, m, st.size);
	b->ops->close(b, f);
	if (pc_err_is_resource(verdict))
		return verdict;
	if (verdict == PC_VERDICT_TRUTHFUL)
		return PC_QUALITY_EXACT;
	/* Hidden: the caller's own mapped pages still show where the kernel
	 * falls back to them; elsewhere the answers are fake or useless. */
	if (verdict == PC_VERDICT_HIDDEN &&
	    (m->mincore == PC_MINCORE_GATED_MAPPED || m->mincore == PC_MINCORE_MAPPED_ONLY))
		return PC_QUALITY_MAPPED;
	return PC_QUALITY_UNKNOWN;
}

/*
 * The file behind a VMA, decided on an O_PATH fd before anything is opened
 * for reading: through map_files (privileged callers), or by its path when
 * the device and inode still match (a rename cannot redirect us to another
 * file, and a device node planted there is never opened: opening one runs
 * its driver). Returns a read-only fd of a regular file or block device,
 * VMA_CHR_ZERO for /dev/zero (not opened), -1, or -errno when short of
 * descriptors or memory (-ENOMEM, -EMFILE, -ENFILE; never -2).
 */
#define VMA_CHR_ZERO (-2)

static int open_vma_file(unsigned long start, unsigned long end, const char *path,
			 unsigned int major_, unsigned int minor_, uint64_t ino)
{
	char link[80];
	struct stat st;
	int pathfd, fd;

	snprintf(link, sizeof(link), "/proc/self/map_files/%lx-%lx", start, end);
	pathfd = pc_open_path(AT_FDCWD, link, 0, &st);
	if (pathfd < 0 && path[0] == '/' && !pc_err_is_resource(pathfd))
		pathfd = pc_open_path(AT_FDCWD, path, 0, &st);
	if (pathfd < 0)
		return pc_err_is_resource(pathfd) ? pathfd : -1;
	fd = -1;
	if (major(st.st_dev) == major_ && minor(st.st_dev) == minor_ && (uint64_t)st.st_ino == ino) {
		if (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode)) {
			fd = pc_reopen(pathfd, O_RDONLY | O_NONBLOCK | O_NOCTTY);
			if (fd < 0 && !pc_err_is_resource(fd))
				fd = -1;
		} else if (S_ISCHR(st.st_mode) && major(st.st_rdev) == 1 && minor(st.st_rdev) == 5) {
			fd = VMA_CHR_ZERO;
		}
	}
	close(pathfd);
	return fd;
}

/* The weakest quality over the VMAs that meet [lo, hi), or -errno when
 * short of memory or descriptors (a VMA left unread could be weaker). */
static int range_quality(unsigned long lo, unsigned long hi, const struct pc_modes *m)
{
	int quality = PC_QUALITY_EXACT;
	char *line = NULL;
	size_t cap = 0;
	FILE *maps;

	if (m->mincore == PC_MINCORE_USELESS)
		return PC_QUALITY_UNKNOWN;
	maps = fopen("/proc/self/maps", "re");
	if (!maps)
		return pc_err_is_resource(pc_neg_errno()) ? pc_neg_errno() : PC_QUALITY_UNKNOWN;
	while (quality > PC_QUALITY_UNKNOWN) { /* neither unknown nor an error yet */
		unsigned long start, end;
		unsigned int dev_major, dev_minor;
		uint64_t ino;
		int path_at = 0, q;
		char *path;

		errno = 0;
		if (getline(&line, &cap, maps) < 0) {
			if (errno) /* not the end: a read or allocation failure */
				quality = pc_neg_errno();
			break;
		}
		if (sscanf(line, "%lx-%lx %*s %*s %x:%x %" SCNu64 " %n", &start, &end, &dev_major,
			   &dev_minor, &ino, &path_at) < 5)
			continue;
		if (end <= lo || start >= hi)
			continue;
		path = line + path_at;
		path[strcspn(path, "\n")] = '\0';
		if (ino == 0) {
			/* Anonymous memory is never gated; vdso and vvar have no
			 * file and read all ones even for root. */
			q = path[0] == '[' && strcmp(path, "[heap]") != 0 &&
					    strncmp(path, "[stack", 6) != 0 &&
					    strncmp(path, "[anon", 5) != 0
				    ? PC_QUALITY_UNKNOWN
				    : PC_QUALITY_EXACT;
			/* mapped-only kernels report swapped anonymous pages as 0 */
			if (q == PC_QUALITY_EXACT && m->mincore == PC_MINCORE_MAPPED_ONLY)
				q = PC_QUALITY_MAPPED;
		} else {
			int fd = open_vma_file(start, end, path, dev_major, dev_minor, ino);

			if (fd == VMA_CHR_ZERO)
				/* a private mapping of /dev/zero is anonymous memory;
				 * a shared one is a shmem file, never a char device */
				q = m->mincore == PC_MINCORE_MAPPED_ONLY ? PC_QUALITY_MAPPED
									 : PC_QUALITY_EXACT;
			else if (fd < -1)
				q = fd; /* short of descriptors or memory */
			else
				q = fd < 0 ? PC_QUALITY_UNKNOWN : file_quality(fd, m);
			if (fd >= 0)
				close(fd);
		}
		if (q < 0 || q == PC_QUALITY_UNKNOWN ||
		    (q == PC_QUALITY_MAPPED && quality == PC_QUALITY_EXACT))
			quality = q;
	}
	free(line);
	fclose(maps);
	return quality;
}

PC_EXPORT int pc_residency_mem(const void *addr, size_t length, unsigned int flags,
			       struct pc_residency **out)
{
	uint64_t ps = (uint64_t)pc_page_size();
	uintptr_t start = (uintptr_t)addr;
	unsigned char *vec = NULL;
	struct pc_residency *r;
	struct pc_modes m;
	int ret;

	if (!out || (flags & ~PC_RES_COUNT_ONLY) || start % ps || length > UINTPTR_MAX - start)
		return -EINVAL;
	ret = pc_kernel_backend()->facts->modes(pc_kernel_backend(), &m);
	if (ret < 0)
		return ret;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->npages = pc_div_round_up(length, ps);
	r->source = PC_SOURCE_MINCORE;
	r->quality = r->npages ? range_quality(start, start + r->npages * ps, &m) : PC_QUALITY_EXACT;
	if (r->quality < 0) {
		ret = r->quality;
		goto fail;
	}
	r->bits = pc_bitmap_new(r->npages);
	vec = malloc(r->npages < PC_MEM_WINDOW_PAGES ? (size_t)r->npages + 1 : PC_MEM_WINDOW_PAGES);
	if (!r->bits || !vec) {
		ret = -ENOMEM;
		goto fail;
	}
	/* mincore even when the answer will be UNKNOWN: its errors (ENOMEM for
	 * a hole in the range) are the caller's to see. */
	for (uint64_t p = 0; p < r->npages; p += PC_MEM_WINDOW_PAGES) {
		uint64_t n = r->npages - p < PC_MEM_WINDOW_PAGES ? r->npages - p : PC_MEM_WINDOW_PAGES;

		if (mincore((void *)(start + p * ps), (size_t)(n * ps), vec) < 0) {
			ret = pc_neg_errno();
			goto fail;
		}
		r->resident += pc_bitmap_from_vec(r->bits, p, vec, n);
	}
	free(vec);
	if (r->quality == PC_QUALITY_UNKNOWN) {
		r->resident = 0;
		r->source = PC_SOURCE_NONE;
	}
	if (r->quality == PC_QUALITY_UNKNOWN || (flags & PC_RES_COUNT_ONLY)) {
		free(r->bits);
		r->bits = NULL;
	}
	*out = r;
	return 0;
fail:
	free(vec);
	pc_residency_free(r);
	return ret;
}
