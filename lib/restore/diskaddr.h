/* SPDX-License-Identifier: MIT */
/*
 * Where a file's bytes lie on the disk (FIEMAP), to sort reads by it: the
 * one FIEMAP caller of the library. Used by pc_restore() (ORDER_DISK,
 * ORDER_PHYSICAL) and the snapshot bench's helper, which sorts its
 * O_DIRECT reads the same way.
 */
#ifndef PC_DISKADDR_H
#define PC_DISKADDR_H

#include <stddef.h>
#include <stdint.h>

/* The disk address of the byte at off of fd, asking FIEMAP for the first
 * extent of [off, off + len); when off lies in a hole, that of the next
 * extent in the range. UINT64_MAX where it is not known: no FIEMAP on
 * this filesystem, nothing allocated in the range, or an extent not yet
 * on the disk (delayed allocation, UNKNOWN), which has no place to sort
 * by. */
uint64_t pc_disk_address(int fd, uint64_t off, uint64_t len);

struct pc_extent {
	uint64_t logical, physical, length; /* physical UINT64_MAX: not on disk yet */
};

/* fd's extents in [0, size), in logical order, malloc'ed into *out (*n 0
 * where FIEMAP is not supported). 0 or -ENOMEM. */
int pc_file_extents(int fd, uint64_t size, struct pc_extent **out, size_t *n);

#endif
