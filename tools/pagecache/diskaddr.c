/* SPDX-License-Identifier: MIT */
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <string.h>
#include <sys/ioctl.h>

#include "diskaddr.h"

uint64_t disk_address(int fd, uint64_t off, uint64_t len)
{
	/* room for one extent after the header (a struct with the flexible
	 * array inside it is a GNU extension clang refuses) */
	union {
		struct fiemap fm;
		char room[sizeof(struct fiemap) + sizeof(struct fiemap_extent)];
	} q;
	const struct fiemap_extent *ex = q.fm.fm_extents;

	memset(&q, 0, sizeof(q));
	q.fm.fm_start = off;
	q.fm.fm_length = len;
	q.fm.fm_extent_count = 1;
	if (ioctl(fd, FS_IOC_FIEMAP, &q) < 0 || q.fm.fm_mapped_extents == 0 ||
	    (ex->fe_flags & (FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_DELALLOC)))
		return UINT64_MAX;
	if (ex->fe_logical > off)
		return ex->fe_physical; /* off in a hole: the next extent */
	return ex->fe_physical + (off - ex->fe_logical);
}
