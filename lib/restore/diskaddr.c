/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "diskaddr.h"

#define PER_CALL 256

/* FIEMAP of [start, start + len) into fm (room for count extents): the
 * extents mapped, 0 where it is not supported. */
static unsigned int fiemap(int fd, uint64_t start, uint64_t len, struct fiemap *fm,
			   unsigned int count)
{
	memset(fm, 0, sizeof(*fm) + count * sizeof(struct fiemap_extent));
	fm->fm_start = start;
	fm->fm_length = len;
	fm->fm_extent_count = count;
	if (ioctl(fd, FS_IOC_FIEMAP, fm) < 0)
		return 0;
	return fm->fm_mapped_extents;
}

/* delalloc and unknown extents have no place on disk yet */
static uint64_t physical(const struct fiemap_extent *e)
{
	return e->fe_flags & (FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_DELALLOC) ? UINT64_MAX
		: e->fe_physical;
}

uint64_t pc_disk_address(int fd, uint64_t off, uint64_t len)
{
	/* room for one extent after the header (a struct with the flexible
	 * array inside it is a GNU extension clang refuses) */
	union {
		struct fiemap fm;
		char room[sizeof(struct fiemap) + sizeof(struct fiemap_extent)];
	} q;
	const struct fiemap_extent *ex = q.fm.fm_extents;

	if (fiemap(fd, off, len, &q.fm, 1) == 0 || physical(ex) == UINT64_MAX)
		return UINT64_MAX;
	if (ex->fe_logical > off)
		return ex->fe_physical; /* off in a hole: the next extent */
	return ex->fe_physical + (off - ex->fe_logical);
}

static int add_extent(struct pc_extent **ex, size_t *n, size_t *cap,
		      const struct fiemap_extent *e)
{
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 64;
		struct pc_extent *x = realloc(*ex, nc * sizeof(*x));

		if (!x)
			return -ENOMEM;
		*ex = x;
		*cap = nc;
	}
	(*ex)[(*n)++] = (struct pc_extent){ e->fe_logical, physical(e), e->fe_length };
	return 0;
}

int pc_file_extents(int fd, uint64_t size, struct pc_extent **out, size_t *n)
{
	struct fiemap *fm = malloc(sizeof(*fm) + PER_CALL * sizeof(struct fiemap_extent));
	struct pc_extent *ex = NULL;
	size_t cap = 0;
	uint64_t start = 0;
	bool last = false;

	*n = 0;
	if (!fm)
		return -ENOMEM;
	while (start < size && !last) {
		unsigned int got = fiemap(fd, start, size - start, fm, PER_CALL);

		if (got == 0)
			break; /* not supported here, or nothing more mapped */
		for (unsigned int i = 0; i < got; i++) {
			const struct fiemap_extent *e = &fm->fm_extents[i];

			if (add_extent(&ex, n, &cap, e) < 0) {
				free(ex);
				free(fm);
				*n = 0;
				return -ENOMEM;
			}
			start = e->fe_logical + e->fe_length;
			if (e->fe_flags & FIEMAP_EXTENT_LAST)
				last = true;
		}
	}
	free(fm);
	*out = ex;
	return 0;
}
