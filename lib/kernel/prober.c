/* SPDX-License-Identifier: MIT */
/*
 * The RWF_NOWAIT batch prober: one 1-byte read per page, batched through
 * io_uring, or preadv2 when io_uring is unavailable (doc/kernels.md sections 2, 4).
 */
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <liburing.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "kernel.h"
#include "uring-ring.h"
#include "valgrind-compat.h"

#define PC_PROBER_DEFAULT_DEPTH 64
#define PC_PROBER_MAX_DEPTH 4096

struct pc_prober {
	int source;                 /* PC_SOURCE_IO_URING or PC_SOURCE_PREADV2 */
	unsigned int depth;
	unsigned int outstanding;   /* SQEs queued whose CQE is not reaped yet */
	struct io_uring ring;
	char *sink;                 /* one byte per slot: where the reads land */
};

/*
 * Whether this process may use a ring for RWF_NOWAIT reads. The read goes
 * to a pipe holding one byte, never to a file: whether a filesystem takes
 * RWF_NOWAIT is its own fact (pc_detect_nowait()), and the probe once read
 * libc's first page, which an initramfs (tmpfs or ramfs: -EOPNOTSUPP
 * before 6.6) or a static program has no answer for. The ring works when
 * the read completes with the byte, or with -EAGAIN or -EOPNOTSUPP (a
 * kernel whose pipes refuse RWF_NOWAIT: the opcode and the flag were
 * understood). A ring that cannot be set up (ENOSYS, EPERM under
 * kernel.io_uring_disabled or a seccomp filter) or that refuses the read
 * (-EINVAL: no IORING_OP_READ before 5.6) does not. Short of memory or
 * descriptors: an error, so that it is not remembered.
 */
int pc_kernel_io_uring_works(void)
{
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe;
	struct io_uring ring;
	int works = 0, ret, pfd[2];
	char byte = 'x';

	if (pipe2(pfd, O_CLOEXEC) < 0) {
		ret = pc_neg_errno();
		return pc_err_is_resource(ret) ? ret : 0;
	}
	if (write(pfd[1], &byte, 1) != 1) {
		ret = pc_neg_errno();
		goto out_pipe;
	}
	ret = io_uring_queue_init(2, &ring, 0);
	if (ret < 0)
		goto out_pipe;
	sqe = io_uring_get_sqe(&ring);
	if (sqe) {
		/* offset -1: the pipe's own position (a pipe has no other) */
		pc_uring_sqe_read_nowait(sqe, pfd[0], &byte, 1, (uint64_t)-1);
		if (io_uring_submit_and_wait(&ring, 1) == 1 && io_uring_peek_cqe(&ring, &cqe) == 0) {
			int res = pc_uring_cqe_res(cqe);

			works = res == 1 || res == -EAGAIN || res == -EOPNOTSUPP;
			io_uring_cqe_seen(&ring, cqe);
		}
	}
	io_uring_queue_exit(&ring);
	ret = 0;
out_pipe:
	close(pfd[0]);
	close(pfd[1]);
	if (ret < 0)
		return pc_err_is_resource(ret) ? ret : 0;
	return works;
}

/* pc_kernel_io_uring_works(), found once: the prober below needs it for
 * every new ring, and nothing above the kernel layer may be asked. An
 * error (short of memory or descriptors) is returned, not kept. */
#define PC_NOT_KNOWN INT_MIN
static atomic_int io_uring_known = PC_NOT_KNOWN;

int pc_kernel_io_uring(void)
{
	int works = atomic_load_explicit(&io_uring_known, memory_order_acquire);

	if (works != PC_NOT_KNOWN)
		return works;
	works = pc_kernel_io_uring_works();
	if (works >= 0)
		atomic_store_explicit(&io_uring_known, works, memory_order_release);
	return works;
}

PC_EXPORT int pc_prober_new(unsigned int queue_depth, struct pc_prober **out)
{
	struct pc_prober *p;
	int ret;

	if (!out || queue_depth > PC_PROBER_MAX_DEPTH)
		return -EINVAL;
	if (queue_depth == 0)
		queue_depth = PC_PROBER_DEFAULT_DEPTH;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->depth = queue_depth;
	p->sink = calloc(queue_depth, 1);
	if (!p->sink) {
		free(p);
		return -ENOMEM;
	}
	/* Disabled io_uring (sysctl, seccomp, gVisor) fails here: use preadv2.
	 * Lack of memory or descriptors is the caller's to know: no silent
	 * switch to the other source. */
	ret = pc_kernel_io_uring();
	if (ret == 1)
		ret = io_uring_queue_init(queue_depth, &p->ring, 0);
	else if (ret == 0)
		ret = -ENOSYS;
	if (pc_err_is_resource(ret)) {
		free(p->sink);
		free(p);
		return ret;
	}
	p->source = ret == 0 ? PC_SOURCE_IO_URING : PC_SOURCE_PREADV2;
	*out = p;
	return 0;
}

PC_EXPORT void pc_prober_free(struct pc_prober *p)
{
	if (!p)
		return;
	if (p->source == PC_SOURCE_IO_URING)
		io_uring_queue_exit(&p->ring);
	free(p->sink);
	free(p);
}

PC_EXPORT int pc_prober_source(const struct pc_prober *p)
{
	return p ? p->source : -EINVAL;
}

/* One probe's outcome from a read's result: 1 hit, 0 miss or EOF, -errno. */
static int probe_result(ssize_t res)
{
	if (res > 0)
		return 1;
	if (res == 0 || res == -EAGAIN)
		return 0;
	return (int)res;
}

static ssize_t probe_preadv2(struct pc_prober *p, int fd, uint64_t page_size,
			     const uint64_t *pages, size_t n, uint8_t *resident)
{
	for (size_t i = 0; i < n; i++) {
		struct iovec iov = { .iov_base = p->sink, .iov_len = 1 };
		ssize_t res;
		int r;

		do
			res = preadv2(fd, &iov, 1, (off_t)(pages[i] * page_size), RWF_NOWAIT);
		while (res < 0 && errno == EINTR);
		r = probe_result(res < 0 ? -errno : res);
		if (r < 0)
			return r;
		resident[i] = (uint8_t)r;
	}
	return (ssize_t)n;
}

/* user_data of a request whose answer nobody waits for any more. */
#define PC_PROBE_STALE UINT64_MAX
/* io_uring_enter failures in a row, without a completion, before giving up. */
#define PC_PROBER_MAX_STALLS 16

/* SQEs of the ring (uring-ring.h says why ring memory is touched only
 * there and in liburing.h). */
static void uring_sqe_probe(struct io_uring_sqe *sqe, int fd, char *sink, uint64_t offset,
			    uint64_t idx)
{
	pc_uring_sqe_read_nowait(sqe, fd, sink, 1, offset);
	io_uring_sqe_set_data64(sqe, idx);
}

static void uring_sqe_stale(struct io_uring_sqe *sqe)
{
	io_uring_prep_nop(sqe);
	io_uring_sqe_set_data64(sqe, PC_PROBE_STALE);
}

/*
 * SQEs the kernel has not consumed (a failed or short submit) stay in the SQ
 * ring and would go out with the next submit, on behalf of a call that has
 * returned: make them NOPs whose completions are dropped.
 */
static void ring_neutralize_pending(struct io_uring *ring)
{
	unsigned int pending = io_uring_sq_ready(ring);
	unsigned int slot = ring->sq.sqe_tail - pending;

	for (unsigned int k = 0; k < pending; k++, slot++)
		uring_sqe_stale(&ring->sq.sqes[slot & ring->sq.ring_mask]);
}

/* Take every completion there is; answers for pages[0..n) go to resident,
 * the first error to *err. Returns how many were taken. */
static unsigned int ring_reap(struct pc_prober *p, size_t n, uint8_t *resident, int *err)
{
	struct io_uring_cqe *cqe;
	unsigned int reaped = 0;

	while (io_uring_peek_cqe(&p->ring, &cqe) == 0) {
		uint64_t idx = io_uring_cqe_get_data64(cqe);
		int r = probe_result(pc_uring_cqe_res(cqe));

		io_uring_cqe_seen(&p->ring, cqe);
		p->outstanding--;
		reaped++;
		if (idx >= n)
			continue; /* stale, or left over from a call that failed */
		if (r < 0 && !*err)
			*err = r;
		else if (r >= 0)
			resident[idx] = (uint8_t)r;
	}
	return reaped;
}

/*
 * Keep at most depth requests outstanding; after the first error queue
 * nothing more but collect what is out. With n == 0 this only drains what
 * an earlier call left behind. The ring stays usable whatever happens: what
 * could not be submitted is neutralized, and what could not be reaped is
 * counted in p->outstanding and drained before the next call.
 */
static ssize_t probe_uring(struct pc_prober *p, int fd, uint64_t page_size,
			   const uint64_t *pages, size_t n, uint8_t *resident)
{
	unsigned int stalls = 0;
	size_t next = 0;
	int err = 0;

	while (p->outstanding || (!err && next < n)) {
		int ret;

		while (!err && next < n && p->outstanding < p->depth) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(&p->ring);

			if (!sqe)
				break;
			/* The bytes are never looked at: slots may be shared. */
			uring_sqe_probe(sqe, fd, &p->sink[next % p->depth], pages[next] * page_size,
					next);
			next++;
			p->outstanding++;
		}
		ret = io_uring_submit_and_wait(&p->ring, 1);
		if (ring_reap(p, n, resident, &err) > 0 || ret > 0)
			stalls = 0;
		if (ret >= 0)
			continue;
		/* interrupted, or short of memory or CQ room for now: try again */
		if ((ret == -EINTR || ret == -EAGAIN || ret == -EBUSY) &&
		    ++stalls < PC_PROBER_MAX_STALLS)
			continue;
		ring_neutralize_pending(&p->ring);
		PC_VALGRIND_MAKE_DEFINED(p->sink, p->depth);
		return err ? err : ret;
	}
	PC_VALGRIND_MAKE_DEFINED(p->sink, p->depth);
	return err ? err : (ssize_t)n;
}

PC_EXPORT ssize_t pc_prober_probe(struct pc_prober *p, int fd, const uint64_t *pages, size_t n,
				  uint8_t *resident)
{
	uint64_t page_size = (uint64_t)pc_page_size();
	struct stat st;

	if (!p || (n && (!pages || !resident)))
		return -EINVAL;
	if (fd < 0)
		return -EBADF;
	for (size_t i = 0; i < n; i++)
		if (pages[i] > (uint64_t)INT64_MAX / page_size)
			return -EINVAL;
	if (n == 0)
		return 0;
	/*
	 * Only files with a page cache: a pipe answers an io_uring NOWAIT read
	 * with -EAGAIN (a fake "miss") and a character device with data (a fake
	 * "hit"), and neither must ever block.
	 */
	if (fstat(fd, &st) < 0)
		return pc_neg_errno();
	if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode))
		return -EINVAL;
	if (p->source == PC_SOURCE_IO_URING) {
		if (p->outstanding) {
			ssize_t ret = probe_uring(p, fd, page_size, NULL, 0, NULL);

			if (ret < 0)
				return ret;
		}
		return probe_uring(p, fd, page_size, pages, n, resident);
	}
	return probe_preadv2(p, fd, page_size, pages, n, resident);
}
