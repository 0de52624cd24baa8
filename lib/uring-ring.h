/* SPDX-License-Identifier: MIT */
/*
 * The only accesses to io_uring ring memory (SQEs and CQEs, shared with
 * the kernel) outside liburing.h's own inline functions. ThreadSanitizer
 * never sees liburing map or unmap a ring, so it takes accesses to a new
 * ring at a freed ring's address for races with the old owner (two threads
 * detecting io_uring at once did it: each made, used and freed its own
 * ring): tests/tsan.supp names these functions, and liburing.h, for that
 * reason. They touch nothing but the entry they are given. It also holds
 * the library's one fallback for RWF_NOWAIT (preadv2 and io_uring reads).
 */
#ifndef PC_URING_RING_H
#define PC_URING_RING_H

#include <liburing.h>
#include <stdint.h>
#include <sys/uio.h>

/* Linux 4.14's value: a safety net (liburing.h's <linux/fs.h> names it) */
#ifndef RWF_NOWAIT
#define RWF_NOWAIT 0x00000008
#endif

/* sqe: an RWF_NOWAIT read of len bytes of fd at off into buf. */
static inline void pc_uring_sqe_read_nowait(struct io_uring_sqe *sqe, int fd, void *buf,
					    unsigned int len, uint64_t off)
{
	io_uring_prep_read(sqe, fd, buf, len, off);
	sqe->rw_flags = RWF_NOWAIT;
}

/* cqe's result: bytes, or -errno. */
static inline int pc_uring_cqe_res(const struct io_uring_cqe *cqe)
{
	return cqe->res;
}

#endif
