/* SPDX-License-Identifier: MIT */
/*
 * File I/O: buffered reads with readahead, preadv2(RWF_NOWAIT), writes,
 * fsync, posix_fadvise and cachestat (doc/kernels.md sections 2 and 3).
 */
#include <string.h>

#include "model-private.h"
#include "pc-private.h"

static uint64_t roundup_pow2(uint64_t v)
{
	uint64_t r = 1;

	while (r < v)
		r <<= 1;
	return r;
}

uint64_t pcm_ra_initial(const struct pcm_kernel *k, uint64_t req)
{
	uint64_t max = k->readahead_pages;
	uint64_t r = roundup_pow2(req ? req : 1);

	if (r <= max / 32)
		return r * 4;
	if (r <= max / 4)
		return r * 2;
	return max;
}

/* Only regular files on a disk filesystem have readahead and eviction. */
static int has_pagecache_io(const struct pcm_file *f)
{
	return !(f->attrs & (PCM_F_SHMEM | PCM_F_HUGETLB));
}

static void read_window(struct pcm_fd *fd, uint64_t start, uint64_t size)
{
	struct pcm_file *f = fd->file;
	uint64_t end = start + pcm_min(size, f->npages - start);

	for (uint64_t p = start; p < end; p++)
		pcm_file_read_in(f, p);
	fd->ra_start = start;
	fd->ra_size = size;
}

/* The synchronous readahead of a read of [page, page + n) that missed. */
static void readahead_miss(struct pcm_fd *fd, uint64_t page, uint64_t n)
{
	const struct pcm_kernel *k = fd->task->k;
	uint64_t size;

	if (fd->random) {
		for (uint64_t p = page; p < page + n; p++)
			pcm_file_read_in(fd->file, p);
		return;
	}
	if (fd->fresh && page == 0) {
		size = pcm_ra_initial(k, n);
	} else if (!fd->fresh && page == fd->prev_end) {
		if (fd->ra_size && page == fd->ra_start + fd->ra_size)
			size = pcm_min(2 * fd->ra_size, k->readahead_pages); /* ramp up */
		else
			size = pcm_ra_initial(k, n); /* a new sequential stream */
	} else {
		/* A random read: just the pages asked, the window stays. */
		for (uint64_t p = page; p < page + n; p++)
			pcm_file_read_in(fd->file, p);
		return;
	}
	read_window(fd, page, size > n ? size : n);
	/* the window marks its first page past the read: a later read
	 * there would start the next window (doc/kernels.md section 2) */
	if (size > n && page + n < fd->file->npages)
		fd->file->pages[page + n] |= PCM_PAGE_RA_MARK;
}

PC_EXPORT int pcm_pread(struct pcm_fd *fd, uint64_t page, uint64_t npages)
{
	struct pcm_file *f;
	uint64_t n;
	int miss = 0;

	if (!fd)
		return -EINVAL;
	f = fd->file;
	if (page >= f->npages || npages == 0)
		return 0;
	n = pcm_min(npages, f->npages - page);
	if (n > INT32_MAX)
		n = INT32_MAX;
	for (uint64_t p = page; p < page + n; p++) {
		if (!pcm_page_cached(f, p))
			miss = 1;
	}
	if (miss && has_pagecache_io(f))
		readahead_miss(fd, page, n);
	for (uint64_t p = page; p < page + n; p++) {
		/* tmpfs and hugetlbfs read holes as zeros without filling them */
		if (!has_pagecache_io(f) && !(f->pages[p] & (PCM_PAGE_PRESENT | PCM_PAGE_SWAP)))
			continue;
		pcm_file_read_wait(f, p);
		f->pages[p] &= (uint8_t)~PCM_PAGE_RA_MARK; /* read: the mark is spent */
	}
	fd->fresh = 0;
	fd->prev_end = page + n;
	return (int)n;
}

PC_EXPORT int pcm_preadv2_nowait(struct pcm_fd *fd, uint64_t page)
{
	const struct pcm_kernel *k;
	struct pcm_file *f;

	if (!fd)
		return -EINVAL;
	f = fd->file;
	k = fd->task->k;
	if (k->nowait_mode == PC_NOWAIT_UNSUPPORTED || !has_pagecache_io(f))
		return -EOPNOTSUPP;
	if (page >= f->npages)
		return 0;
	/* A cached page a readahead window marked: the read would start the
	 * next window, which RWF_NOWAIT may not, so it fails as a miss does,
	 * starting nothing (seen on 6.1). Kernels whose misses read ahead
	 * (6.12+) are not known to do it: there the page is a hit. */
	if (pcm_page_cached(f, page) && (f->pages[page] & PCM_PAGE_RA_MARK) &&
	    k->nowait_mode == PC_NOWAIT_CLEAN)
		return -EAGAIN;
	if (pcm_page_cached(f, page)) {
		fd->fresh = 0;
		fd->prev_end = page + 1;
		return 1;
	}
	if (k->nowait_mode == PC_NOWAIT_DESTRUCTIVE) {
		if (!fd->random && fd->fresh && page == 0)
			read_window(fd, 0, pcm_ra_initial(k, 1));
		else
			pcm_file_read_in(f, page);
		fd->fresh = 0;
	}
	return -EAGAIN;
}

PC_EXPORT int pcm_pwrite(struct pcm_fd *fd, uint64_t page, uint64_t npages)
{
	struct pcm_file *f;
	int ret;

	if (!fd)
		return -EINVAL;
	if (!fd->writable)
		return -EBADF;
	f = fd->file;
	if (f->attrs & PCM_F_IMMUTABLE)
		return -EPERM; /* made immutable after the fd was opened */
	if (npages == 0)
		return 0;
	if (npages > INT32_MAX || page > PCM_MAX_FILE_PAGES ||
	    page + npages > PCM_MAX_FILE_PAGES)
		return -EFBIG;
	if (page + npages > f->npages) {
		ret = pcm_file_set(f, PCM_FILE_SIZE_BYTES, (page + npages) * f->k->page_size);
		if (ret < 0)
			return ret;
	}
	for (uint64_t p = page; p < page + npages; p++)
		f->pages[p] = PCM_PAGE_PRESENT | PCM_PAGE_UPTODATE | PCM_PAGE_DIRTY;
	return (int)npages;
}

PC_EXPORT int pcm_fsync(struct pcm_fd *fd)
{
	struct pcm_file *f;

	if (!fd)
		return -EINVAL;
	f = fd->file;
	if (!has_pagecache_io(f))
		return 0; /* tmpfs: nothing to write back, pages stay dirty */
	for (uint64_t p = 0; p < f->npages; p++)
		f->pages[p] &= (uint8_t)~PCM_PAGE_DIRTY;
	return 0;
}

PC_EXPORT int pcm_fadvise(struct pcm_fd *fd, uint64_t page, uint64_t npages, int advice)
{
	struct pcm_file *f;
	uint64_t end;

	if (!fd)
		return -EINVAL;
	f = fd->file;
	end = npages == 0 || npages > f->npages ? f->npages : pcm_min(page + npages, f->npages);
	switch (advice) {
	case PCM_FADV_NORMAL:
		fd->random = 0;
		return 0;
	case PCM_FADV_RANDOM:
		fd->random = 1;
		return 0;
	case PCM_FADV_WILLNEED:
		if (has_pagecache_io(f))
			for (uint64_t p = page; p < end; p++)
				pcm_file_read_in(f, p);
		return 0;
	case PCM_FADV_DONTNEED:
		if (!has_pagecache_io(f))
			return 0;
		for (uint64_t p = page; p < end; p++) {
			/* Dirty pages wait for writeback; pending reads are locked. */
			if (pcm_page_cached(f, p) && !(f->pages[p] & PCM_PAGE_DIRTY) &&
			    !pcm_file_page_mapped(f, p))
				f->pages[p] = 0;
		}
		return 0;
	default:
		return -EINVAL;
	}
}

int pcm_cachestat_flags(struct pcm_fd *fd, uint64_t off, uint64_t len, unsigned int flags,
			struct pc_cachestat *out)
{
	const struct pcm_kernel *k;
	struct pcm_file *f;
	uint64_t ps, first, last;

	if (!fd)
		return -EBADF;
	k = fd->task->k;
	f = fd->file;
	/* A seccomp filter answers before the syscall runs. */
	if (k->cachestat_mode == PC_CACHESTAT_ABSENT)
		return -ENOSYS;
	if (k->cachestat_mode == PC_CACHESTAT_BLOCKED)
		return -EPERM;
	if (!out)
		return -EFAULT;
	if (f->attrs & PCM_F_HUGETLB)
		return -EOPNOTSUPP;
	if (k->cachestat_mode == PC_CACHESTAT_GATED && !fd->writable &&
	    !pcm_owner_or_writer(fd->task, f))
		return -EPERM;
	if (flags)
		return -EINVAL;
	ps = k->page_size;
	first = off / ps;
	if (len == 0 || len - 1 > UINT64_MAX - off)
		last = UINT64_MAX;
	else
		last = (off + len - 1) / ps;
	memset(out, 0, sizeof(*out));
	for (uint64_t p = first; p < f->npages && p <= last; p++) {
		uint8_t s = f->pages[p];

		if (s & PCM_PAGE_PRESENT)
			out->cache++;
		/* tmpfs keeps its dirty pages untagged in the page cache, where
		 * cachestat looks for them (seen on 6.18: a written memfd
		 * reports dirty 0) */
		if ((s & PCM_PAGE_DIRTY) && has_pagecache_io(f))
			out->dirty++;
		if (s & (PCM_PAGE_SHADOW | PCM_PAGE_SWAP)) {
			out->evicted++;
			out->recently_evicted++;
		}
	}
	return 0;
}

PC_EXPORT int pcm_cachestat(struct pcm_fd *fd, uint64_t off, uint64_t len,
			    struct pc_cachestat *out)
{
	return pcm_cachestat_flags(fd, off, len, 0, out);
}
