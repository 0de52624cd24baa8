/* SPDX-License-Identifier: MIT */
/*
 * Where a file's bytes lie on the disk (FIEMAP), to sort reads by it.
 * Shared by restore (--order=disk) and the snapshot bench's helper, which
 * sorts its O_DIRECT reads the same way.
 */
#ifndef PC_DISKADDR_H
#define PC_DISKADDR_H

#include <stdint.h>

/* The disk address of the byte at off of fd, asking FIEMAP for the first
 * extent of [off, off + len); when off lies in a hole, that of the next
 * extent in the range. UINT64_MAX where it is not known: no FIEMAP on
 * this filesystem, nothing allocated in the range, or an extent not yet
 * on the disk (delayed allocation, UNKNOWN), which has no place to sort
 * by. */
uint64_t disk_address(int fd, uint64_t off, uint64_t len);

#endif
