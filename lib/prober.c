/* SPDX-License-Identifier: MIT */
/*
 * The RWF_NOWAIT batch prober: one 1-byte read per page, batched through
 * io_uring, or preadv2 when io_uring is unavailable (KERNEL.md sections 2, 4).
 */
#include <fcntl.h>
#include <liburing.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "pc-private.h"
#include "valgrind-compat.h"

#ifndef RWF_NOWAIT
#define RWF_NOWAIT 0x00000008
#endif

#define PC_PROBER_DEFAULT_DEPTH 64
#define PC_PROBER_MAX_DEPTH 4096

struct pc_prober {
	int source;                 /* PC_SOURCE_IO_URING or PC_SOURCE_PREADV2 */
	unsigned int depth;
	struct io_uring ring;
	char *sink;                 /* one byte per slot: where the reads land */
};

/*
 * io_uring with IORING_OP_READ (5.6+, like the opcode probe itself), or 0
 * when it is disabled (sysctl, seccomp, gVisor: EPERM or ENOSYS) or too old.
 */
static int ring_init(struct io_uring *ring, unsigned int depth)
{
	struct io_uring_probe *probe;
	int ok;

	if (io_uring_queue_init(depth, ring, 0) < 0)
		return 0;
	probe = io_uring_get_probe_ring(ring);
	ok = probe && io_uring_opcode_supported(probe, IORING_OP_READ);
	if (probe)
		io_uring_free_probe(probe);
	if (!ok)
		io_uring_queue_exit(ring);
	return ok;
}

PC_EXPORT int pc_prober_new(unsigned int queue_depth, struct pc_prober **out)
{
	struct pc_prober *p;

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
	p->source = ring_init(&p->ring, queue_depth) ? PC_SOURCE_IO_URING : PC_SOURCE_PREADV2;
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

static ssize_t probe_uring(struct pc_prober *p, int fd, uint64_t page_size,
			   const uint64_t *pages, size_t n, uint8_t *resident)
{
	size_t submitted = 0, done = 0;
	int err = 0;

	while (done < n) {
		struct io_uring_cqe *cqe;
		unsigned int queued = 0;
		int ret;

		while (submitted < n && submitted - done < p->depth) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(&p->ring);

			if (!sqe)
				break;
			io_uring_prep_read(sqe, fd, &p->sink[submitted % p->depth], 1,
					   pages[submitted] * page_size);
			sqe->rw_flags = RWF_NOWAIT;
			io_uring_sqe_set_data64(sqe, submitted);
			submitted++;
			queued++;
		}
		ret = io_uring_submit_and_wait(&p->ring, 1);
		if (ret < 0 && ret != -EINTR) {
			err = ret;
			break;
		}
		(void)queued;
		while (io_uring_peek_cqe(&p->ring, &cqe) == 0) {
			uint64_t idx = io_uring_cqe_get_data64(cqe);
			int r = probe_result(cqe->res);

			io_uring_cqe_seen(&p->ring, cqe);
			done++;
			if (r < 0 && !err)
				err = r;
			if (idx < n)
				resident[idx] = (uint8_t)(r > 0);
		}
	}
	/* Reap what is still in flight after an error, so the ring is reusable. */
	while (done < submitted) {
		struct io_uring_cqe *cqe;

		if (io_uring_wait_cqe(&p->ring, &cqe) < 0)
			break;
		io_uring_cqe_seen(&p->ring, cqe);
		done++;
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
	if (p->source == PC_SOURCE_IO_URING)
		return probe_uring(p, fd, page_size, pages, n, resident);
	return probe_preadv2(p, fd, page_size, pages, n, resident);
}
