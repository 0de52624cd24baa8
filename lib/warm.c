/* SPDX-License-Identifier: MIT */
/*
 * pc_warm(): bring recorded runs of a file back into the page cache.
 * Runs are taken in batches that span at most a window of the file; each
 * batch's residency is checked right before it is read, so only the holes
 * (wanted, not resident) are read: cachestat first (nothing or everything
 * present needs no bitmap), pc_residency_on() for a mixed span. Holes go out as readahead(2) calls of at
 * most a chunk each (one call brings at most ~8 MiB: doc/kernels.md section 7)
 * or as io_uring reads at a bounded queue depth into one scratch buffer
 * (the data is not wanted, only its trip through the page cache), or, with
 * PC_WARM_STREAM, as RWF_NOWAIT reads that start the kernel's own readahead
 * (6.12+): its windows grow and its folios get large, where readahead(2)
 * takes the pages one by one (a 4 GiB file here: 0.02 s of CPU against
 * 0.85 s; the time was shorter at first, 0.8-1.5 s against 1.8-2.2 s, and
 * longer in every round side by side later: doc/design.md, so readahead(2)
 * is the default). Those windows may reach past
 * the read that started them, so only the part of a run far enough from
 * its end (or a run that ends at the end of the file) goes out that way;
 * the rest, small holes, and every hole where the kernel does not read
 * ahead on RWF_NOWAIT, are readahead(2)'s.
 */
#include <fcntl.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

#include "kernel/kernel.h"
#include "opts.h"
#include "pc-private.h"
#include "uring-ring.h"

#define PC_WARM_BATCH_RUNS 1024
#define PC_WARM_WINDOW_BYTES (UINT64_C(1) << 30) /* residency checked 1 GiB at a time */
#define PC_WARM_DEFAULT_CHUNK (UINT64_C(2) << 20)
#define PC_WARM_MAX_CHUNK (UINT64_C(64) << 20)
#define PC_WARM_DEFAULT_DEPTH 8
#define PC_WARM_MAX_DEPTH 256
#define PC_WARM_STREAM_MIN (UINT64_C(8) << 20) /* a smaller hole: readahead(2) */

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22 /* Linux 5.14 */
#endif

/* A source of runs: 1 and a run, 0 at the end, or -errno. */
struct warm_source {
	int (*next)(struct warm_source *src, struct pc_run *run);
	const struct pc_run *runs;
	size_t n, i;
	struct pc_snapshot_reader *rd;
	uint64_t snap_ps, ps;
	struct pc_run pending;   /* a converted run not yet handed out */
	int has_pending;
};

struct warm {
	int fd;
	uint64_t ps;
	uint64_t size;           /* bytes, at the start */
	uint64_t eof_page;       /* first page past the end */
	uint64_t window;         /* pages */
	struct pc_warm_opts o;
	struct pc_warm_stats st;
	uint64_t budget;         /* bytes left; UINT64_MAX: no limit */
	uint64_t done;           /* bytes read or queued */
	int hidden;              /* the kernel hides residency: read everything */
	struct pc_backend *b;    /* the kernel, for cachestat and pc_residency_on() */
	struct pc_bfile *bf;     /* fd, wrapped once for every batch */
	int counts_failed;       /* cachestat refused here: pc_residency alone */
	int use_fadvise;         /* readahead(2) refused this file */
	uint64_t ra_call_max;    /* bytes one readahead(2) call reads at most (0: not yet known) */
	/* the batch */
	size_t nbatch;
	struct pc_run carry;     /* the rest of a run split at the window's end */
	int has_carry;
	uint64_t prev_end;
	uint64_t tail_end;       /* the end of the run the batch's last entry is of */
	/* io_uring */
	struct io_uring ring;
	int ring_ready;
	int read_fd;             /* a private description with readahead off, or fd */
	void *buf;
	unsigned int inflight;
	int io_err;
	/* PC_WARM_STREAM */
	int stream;              /* 1: RWF_NOWAIT reads start readahead here; 2: set
				    up, not seen yet; 0: not set up; -1: not here */
	void *stream_buf;        /* what a read of pages already up to date copies */
	uint64_t stream_reach;   /* pages the kernel may read past a read; 0: unknown */
	uint64_t stream_upto;    /* pages below may be the stream's own, still coming */
	size_t batch_cap;        /* at most PC_WARM_BATCH_RUNS: fewer for few runs */
	struct pc_run batch[];
};

static int cancelled(const struct warm *w)
{
	return w->o.cancel && __atomic_load_n(w->o.cancel, __ATOMIC_RELAXED);
}

static void progress(struct warm *w)
{
	if (w->o.progress)
		w->o.progress(w->done, w->o.progress_arg);
}

/* Bytes of the file in pages [page, page + n). */
static uint64_t span_bytes(const struct warm *w, uint64_t page, uint64_t n)
{
	uint64_t start = page * w->ps, end = (page + n) * w->ps;

	return (end < w->size ? end : w->size) - start;
}

/*
 * One readahead(2) or WILLNEED call reads at most the larger of the
 * device's read_ahead_kb and max_sectors_kb (doc/kernels.md section 7):
 * 8 MiB on the build machines, 1.25 MiB on a virtio disk under QEMU.
 * Larger spans go out as several calls, or their tails would silently stay
 * on disk. Where sysfs does not say (btrfs, whose files do not name their
 * device; no /sys), the kernel's default window: 128 KiB.
 */
#define PC_WARM_READAHEAD_CALL_MIN (UINT64_C(128) << 10)

/* A number (KiB) from the block queue of the device dev, or 0. */
static uint64_t queue_kb(dev_t dev, const char *name)
{
	unsigned long kb;
	char path[128];
	FILE *f;
	int got;

	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/queue/%s", major(dev), minor(dev), name);
	f = fopen(path, "re");
	if (!f) {
		/* a partition: the queue is its disk's */
		snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/../queue/%s", major(dev),
			 minor(dev), name);
		f = fopen(path, "re");
	}
	if (!f)
		return 0;
	got = fscanf(f, "%lu", &kb);
	fclose(f);
	return got == 1 ? kb : 0;
}

static uint64_t readahead_call_max(int fd)
{
	uint64_t ra, io, most;
	struct stat st;
	dev_t dev;

	if (fstat(fd, &st) < 0)
		return PC_WARM_READAHEAD_CALL_MIN;
	dev = S_ISBLK(st.st_mode) ? st.st_rdev : st.st_dev;
	ra = queue_kb(dev, "read_ahead_kb");
	io = queue_kb(dev, "max_sectors_kb");
	most = (ra > io ? ra : io) << 10;
	return most > PC_WARM_READAHEAD_CALL_MIN ? most : PC_WARM_READAHEAD_CALL_MIN;
}

static int readahead_call(struct warm *w, uint64_t off, uint64_t len)
{
	if (!w->use_fadvise) {
		if (readahead(w->fd, (off64_t)off, (size_t)len) == 0)
			return 0;
		if (errno != EINVAL)
			return pc_neg_errno();
		w->use_fadvise = 1;
	}
	return -posix_fadvise(w->fd, (off_t)off, (off_t)len, POSIX_FADV_WILLNEED);
}

static int readahead_span(struct warm *w, uint64_t page, uint64_t n)
{
	uint64_t off = page * w->ps, len = span_bytes(w, page, n);

	if (!w->ra_call_max)
		w->ra_call_max = readahead_call_max(w->fd);
	while (len) {
		uint64_t step = len < w->ra_call_max ? len : w->ra_call_max;
		int ret = readahead_call(w, off, step);

		if (ret < 0)
			return ret;
		off += step;
		len -= step;
	}
	return 0;
}

/*
 * PC_WARM_POPULATE: the span mapped shared and read-only, and
 * MADV_POPULATE_READ on it, which returns once every page is read (a
 * 1 GiB evicted file here: ~0.58 s in 8 MiB chunks, where readahead(2)
 * took ~1.03 s just to issue the reads). -EOPNOTSUPP before 5.14 (EINVAL),
 * or where the file cannot be mapped (ENODEV).
 */
static int populate_span(struct warm *w, uint64_t page, uint64_t n)
{
	size_t len = (size_t)(n * w->ps);
	void *addr = mmap(NULL, len, PROT_READ, MAP_SHARED, w->fd, (off_t)(page * w->ps));
	int ret = 0;

	if (addr == MAP_FAILED)
		return errno == ENODEV ? -EOPNOTSUPP : pc_neg_errno();
	if (madvise(addr, len, MADV_POPULATE_READ) < 0)
		ret = errno == EINVAL ? -EOPNOTSUPP : pc_neg_errno();
	munmap(addr, len);
	return ret;
}

/*
 * How far past the end of a read the readahead it starts may reach, in
 * pages: two windows (the next window may start up to a window past the
 * page that set it off), a window being the device's read_ahead_kb (a
 * read no larger than that gets a window that covers it). 0 when the
 * window is not known (no sysfs; btrfs, whose files do not name their
 * device), -1 when it is smaller than a chunk (the read would be only
 * partly covered; with readahead off, a read brings one page).
 */
static int64_t stream_reach(int fd, uint64_t ps, uint64_t chunk_pages)
{
	unsigned long kb;
	char path[96];
	struct stat st;
	uint64_t win;
	dev_t dev;
	FILE *f;
	int got;

	if (fstat(fd, &st) < 0)
		return 0;
	dev = S_ISBLK(st.st_mode) ? st.st_rdev : st.st_dev;
	snprintf(path, sizeof(path), "/sys/class/bdi/%u:%u/read_ahead_kb", major(dev), minor(dev));
	f = fopen(path, "re");
	if (!f) {
		/* a partition: the bdi is its disk's */
		snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/../queue/read_ahead_kb",
			 major(dev), minor(dev));
		f = fopen(path, "re");
	}
	if (!f)
		return 0;
	got = fscanf(f, "%lu", &kb);
	fclose(f);
	if (got != 1)
		return 0;
	win = (uint64_t)kb * 1024 / ps;
	if (win < chunk_pages)
		return -1;
	return (int64_t)(2 * win + 1);
}

/* The first hole worth it: a buffer, the reach. The reads go through the
 * caller's description: a second one, closed at the end, would release
 * the process's fcntl() record locks on the file. */
static void stream_setup(struct warm *w)
{
	int64_t reach;

	w->stream = -1;
	reach = stream_reach(w->fd, w->ps, w->o.chunk_bytes / w->ps);
	if (reach < 0)
		return;
	w->stream_reach = (uint64_t)reach;
	w->stream_buf = malloc((size_t)w->o.chunk_bytes);
	if (!w->stream_buf)
		return;
	w->stream = 2;
}

/*
 * The end (a page) of the part of the hole [page, page + n), in a run that
 * ends at run_end, that may go out as stream reads: the readahead a read
 * starts may reach stream_reach pages past it, and must stay in the run
 * (pages of it already resident are skipped). Past the end of the file
 * nothing is read, so a run that ends there may be streamed to its end;
 * where the reach is not known, only such a run is. page: none of it.
 * Not to the hole's end: a readahead(2) call in the middle of a stream
 * leaves the kernel's windows small and its folios single pages for the
 * rest of it (seen: 1.3 s of CPU instead of 0.02 s for 4 GiB).
 */
static uint64_t stream_end(struct warm *w, uint64_t page, uint64_t n, uint64_t run_end)
{
	uint64_t end = page + n;

	if (w->o.strategy != PC_WARM_STREAM || w->stream < 0 || n * w->ps < PC_WARM_STREAM_MIN)
		return page;
	if (!w->stream)
		stream_setup(w);
	if (w->stream < 0)
		return page;
	if (run_end >= w->eof_page)
		return end;
	if (!w->stream_reach || run_end - page <= w->stream_reach)
		return page;
	return end < run_end - w->stream_reach ? end : run_end - w->stream_reach;
}

/*
 * A chunk as an RWF_NOWAIT read: a miss starts the kernel's readahead there
 * and fails with EAGAIN at once; pages already up to date are copied into
 * the buffer. 0 when the chunk is on its way, 2 when it was all up to
 * date, 1 when readahead(2) must do it: a read that starts on a page still
 * being read in starts nothing, and the window on its way may end inside
 * the chunk, so the chunk's last page is asked with cachestat (it counts
 * pages still being read in, mincore does not; windows are contiguous from
 * where they start, so the last page present means all of them are).
 * Where the first miss started nothing (a kernel before 6.12), cachestat
 * cannot tell, or RWF_NOWAIT is refused, the stream stops for this call.
 */
static int stream_span(struct warm *w, uint64_t page, uint64_t n)
{
	struct iovec iov = { w->stream_buf, (size_t)span_bytes(w, page, n) };
	struct pc_cachestat cs;
	ssize_t got;

	got = preadv2(w->fd, &iov, 1, (off_t)(page * w->ps), RWF_NOWAIT);
	if (got < 0 && errno != EAGAIN) {
		w->stream = -1; /* EOPNOTSUPP: before 4.14, or this filesystem */
		return 1;
	}
	/* whatever the read started reaches this far at most */
	w->stream_upto = w->stream_reach ? page + n + w->stream_reach : w->eof_page;
	if (got >= 0 && (size_t)got == iov.iov_len)
		return 2;
	if (w->b->ops->cachestat(w->b, w->bf, (page + n - 1) * w->ps, w->ps, 0, &cs) < 0) {
		w->stream = -1;
		return 1;
	}
	if (cs.cache == 0) {
		if (w->stream == 2)
			w->stream = -1;
		return 1;
	}
	w->stream = 1;
	return 0;
}

/* The next resident run of r at or after from, leaving out the pages below
 * own that the stream may have brought in before r was taken: those are
 * this call's reads, not pages that were resident already. 1, 0 if none,
 * or -errno. */
static int next_resident(uint64_t own, const struct pc_residency *r, uint64_t from,
			 struct pc_run *res)
{
	for (;;) {
		int ret = pc_residency_next_run(r, from, res);

		if (ret <= 0)
			return ret;
		if (res->page + res->npages > own) {
			if (res->page < own) {
				res->npages -= own - res->page;
				res->page = own;
			}
			return 1;
		}
		from = res->page + res->npages;
	}
}

/* Reap one completion (waiting for it when wait is set): 1, 0 if none. */
static int uring_reap(struct warm *w, int wait)
{
	struct io_uring_cqe *cqe;
	int res, ret = wait ? io_uring_wait_cqe(&w->ring, &cqe) : io_uring_peek_cqe(&w->ring, &cqe);

	if (ret == -EAGAIN && !wait)
		return 0;
	if (ret == -EINTR)
		return 0;
	if (ret < 0)
		return ret;
	res = pc_uring_cqe_res(cqe);
	if (res < 0 && !w->io_err)
		w->io_err = res;
	else if (res > 0)
		w->done += (uint64_t)res;
	io_uring_cqe_seen(&w->ring, cqe);
	w->inflight--;
	return 1;
}

static int uring_drain(struct warm *w)
{
	while (w->inflight) {
		int ret = uring_reap(w, 1);

		if (ret < 0)
			return ret;
	}
	return w->io_err;
}

static int uring_span(struct warm *w, uint64_t page, uint64_t n)
{
	struct io_uring_sqe *sqe;
	int ret;

	while (w->inflight >= w->o.queue_depth) {
		ret = uring_reap(w, 1);
		if (ret < 0)
			return ret;
		progress(w);
	}
	if (w->io_err)
		return w->io_err;
	if (cancelled(w)) /* perhaps set while we waited for a slot */
		return -ECANCELED;
	sqe = io_uring_get_sqe(&w->ring);
	if (!sqe)
		return -EBUSY; /* cannot happen: the ring holds queue_depth entries */
	/* every read lands in the same buffer: only the page cache matters */
	io_uring_prep_read(sqe, w->read_fd, w->buf, (unsigned int)span_bytes(w, page, n),
			   page * w->ps);
	ret = io_uring_submit(&w->ring);
	if (ret < 0)
		return ret;
	w->inflight++;
	while ((ret = uring_reap(w, 0)) > 0)
		progress(w);
	return ret;
}

/* Read the hole [page, page + n), in a run that ends at run_end, in
 * chunks, within the budget. */
static int read_hole(struct warm *w, uint64_t page, uint64_t n, uint64_t run_end)
{
	uint64_t chunk = w->o.chunk_bytes / w->ps;
	uint64_t streamed_to = stream_end(w, page, n, run_end);

	while (n) {
		uint64_t take = n < chunk ? n : chunk;
		uint64_t bytes;
		int ret;

		if (cancelled(w))
			return -ECANCELED;
		bytes = span_bytes(w, page, take);
		if (bytes > w->budget) {
			take = w->budget / w->ps;
			w->st.budget_exhausted = 1;
			if (!take)
				return 0;
			bytes = span_bytes(w, page, take);
		}
		if (w->o.strategy == PC_WARM_IO_URING) {
			ret = uring_span(w, page, take);
		} else if (w->o.strategy == PC_WARM_POPULATE) {
			ret = populate_span(w, page, take);
			if (ret == 0)
				w->done += bytes;
		} else {
			ret = 1;
			/* what the readahead reaches past the read counts
			 * against the budget too: not streamed where that
			 * reach is not known */
			if (page + take <= streamed_to && w->stream >= 0 &&
			    (w->budget == UINT64_MAX ||
			     (w->stream_reach && w->budget / w->ps >= take + w->stream_reach)))
				ret = stream_span(w, page, take);
			if (ret == 0)
				w->st.pages_streamed += take;
			if (ret == 2)
				ret = 0;
			else if (ret == 1)
				ret = readahead_span(w, page, take);
			if (ret == 0)
				w->done += bytes;
		}
		if (ret < 0)
			return ret;
		if (w->o.strategy != PC_WARM_IO_URING)
			progress(w);
		if (w->budget != UINT64_MAX)
			w->budget -= bytes;
		w->st.pages_read += take;
		page += take;
		n -= take;
		if (w->st.budget_exhausted)
			return 0;
	}
	return 0;
}

/* One batch: check residency over its span, then read the holes. */
static int warm_batch(struct warm *w)
{
	struct pc_residency *r = NULL;
	uint64_t own = w->stream_upto; /* as it was when r is taken */
	uint64_t first = w->batch[0].page;
	uint64_t last = w->batch[w->nbatch - 1].page + w->batch[w->nbatch - 1].npages;
	int ret = 0, uniform = 0;

	if (!w->hidden && !w->counts_failed) {
		/* cachestat first: a span with nothing or everything cached (a
		 * whole evicted file, a second restore) needs no bitmap, no
		 * mincore gate probe; its answer is the truth when it is given
		 * (its own gate says EPERM, and the backend refuses it where it
		 * counts the wrong mapping, on overlayfs). pc_residency() takes
		 * uniform chunks from it the same way. */
		struct pc_cachestat cs;

		ret = w->b->ops->cachestat(w->b, w->bf, first * w->ps, (last - first) * w->ps, 0,
					   &cs);
		if (ret < 0) {
			w->counts_failed = 1;
		} else if (cs.cache == 0) {
			uniform = 1;
		} else if (cs.cache >= last - first && first >= w->stream_upto) {
			for (size_t i = 0; i < w->nbatch; i++)
				w->st.pages_resident += w->batch[i].npages;
			w->nbatch = 0;
			return 0;
		}
	}
	if (!w->hidden && !uniform) {
		ret = pc_residency_on(w->b, w->bf, first * w->ps, (last - first) * w->ps, 0, &r);
		if (ret < 0)
			return ret;
		if (pc_residency_quality(r) == PC_QUALITY_UNKNOWN) {
			w->hidden = 1;
			w->st.quality = PC_QUALITY_UNKNOWN;
			pc_residency_free(r);
			r = NULL;
		}
	}
	for (size_t i = 0; i < w->nbatch && !w->st.budget_exhausted; i++) {
		uint64_t from = w->batch[i].page, end = from + w->batch[i].npages;
		/* the last may be the part of a run split at the window's end */
		uint64_t run_end = i + 1 == w->nbatch ? w->tail_end : end;

		while (from < end && !w->st.budget_exhausted) {
			struct pc_run res = { .page = end, .npages = 0 };

			if (r) {
				ret = next_resident(own, r, from, &res);
				if (ret < 0)
					goto out;
				if (ret == 0 || res.page > end)
					res.page = end;
			}
			if (res.page > from) {
				ret = read_hole(w, from, res.page - from, run_end);
				if (ret < 0)
					goto out;
			}
			if (res.page >= end)
				break;
			if (res.npages > end - res.page)
				res.npages = end - res.page;
			w->st.pages_resident += res.npages;
			from = res.page + res.npages;
		}
	}
	ret = 0;
out:
	pc_residency_free(r);
	w->nbatch = 0;
	return ret;
}

/* Take a run into the batch (clamped to the file, split at the window's
 * end); warm the batch when it is full. */
static int add_run(struct warm *w, struct pc_run run)
{
	uint64_t run_end;
	int ret;

	if (!run.npages || run.page < w->prev_end || run.npages > UINT64_MAX - run.page)
		return -EINVAL;
	w->prev_end = run.page + run.npages;
	w->st.pages_wanted += run.npages;
	if (run.page >= w->eof_page) {
		w->st.pages_beyond_eof += run.npages;
		return 0;
	}
	if (run.npages > w->eof_page - run.page) {
		w->st.pages_beyond_eof += run.npages - (w->eof_page - run.page);
		run.npages = w->eof_page - run.page;
	}
	run_end = run.page + run.npages;
	while (run.npages) {
		struct pc_run part = run;
		uint64_t room;

		/* a batch spans at most one window and holds at most BATCH runs */
		if (w->nbatch && (run.page - w->batch[0].page >= w->window ||
				  w->nbatch == w->batch_cap)) {
			ret = warm_batch(w);
			if (ret < 0 || w->st.budget_exhausted)
				return ret;
		}
		room = (w->nbatch ? w->batch[0].page : run.page) + w->window - run.page;
		if (part.npages > room)
			part.npages = room;
		w->batch[w->nbatch++] = part;
		w->tail_end = run_end;
		run.page += part.npages;
		run.npages -= part.npages;
	}
	return 0;
}

static int next_array_run(struct warm_source *src, struct pc_run *run)
{
	if (src->i >= src->n)
		return 0;
	*run = src->runs[src->i++];
	return 1;
}

/* The snapshot's runs in this machine's pages: a run covers every page
 * that holds any of its bytes; runs that meet after conversion merge. */
static int next_snapshot_run(struct warm_source *src, struct pc_run *run)
{
	struct pc_run r;
	int ret;

	for (;;) {
		uint64_t start, end;

		ret = pc_snapshot_next_run(src->rd, &r);
		if (ret < 0)
			return ret;
		if (ret == 0)
			break;
		/* the reader keeps page * page_size within int64_t */
		start = r.page * src->snap_ps / src->ps;
		end = pc_div_round_up((r.page + r.npages) * src->snap_ps, src->ps);
		if (src->has_pending && start <= src->pending.page + src->pending.npages) {
			src->pending.npages = end - src->pending.page;
			continue;
		}
		if (src->has_pending) {
			*run = src->pending;
			src->pending = (struct pc_run){ start, end - start };
			return 1;
		}
		src->pending = (struct pc_run){ start, end - start };
		src->has_pending = 1;
	}
	if (!src->has_pending)
		return 0;
	*run = src->pending;
	src->has_pending = 0;
	return 1;
}

/* The size, from the backend's one statx: it also names the mount, so the
 * filesystem check of cachestat (overlayfs) needs no fstatfs per file. */
static int file_size(struct warm *w)
{
	struct pc_bstat st;
	int ret = w->b->ops->fstat(w->b, w->bf, &st);

	if (ret < 0)
		return ret;
	if (st.type != PC_BFILE_REGULAR && st.type != PC_BFILE_BLOCK)
		return -EINVAL;
	w->size = st.size;
	return 0;
}

/*
 * A second description of fd's file with readahead off: reads on a
 * description with readahead on pull in neighbours of every hole, and
 * io_uring's reads want just the holes; the caller's description keeps
 * its own readahead state. Closing it releases the process's fcntl()
 * record locks on the file (pc_warm.3 says so). Without /proc, fd itself.
 */
static int private_fd(int fd)
{
	char proc[64];
	int priv;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	priv = open(proc, O_RDONLY | O_CLOEXEC | O_NOATIME);
	if (priv < 0 && errno == EPERM)
		priv = open(proc, O_RDONLY | O_CLOEXEC);
	if (priv < 0)
		return fd;
	posix_fadvise(priv, 0, 0, POSIX_FADV_RANDOM);
	return priv;
}

static int warm_setup(struct warm *w, int fd, const struct pc_warm_opts *opts)
{
	int ret = pc_opts_copy(&w->o, sizeof(w->o), opts, opts ? opts->size : 0);

	if (ret < 0)
		return ret;
	w->ps = (uint64_t)pc_page_size();
	w->st.size = sizeof(w->st);
	w->st.quality = PC_QUALITY_EXACT;
	if (w->o.strategy == PC_WARM_DEFAULT)
		w->o.strategy = PC_WARM_READAHEAD; /* the fastest measured here */
	if (w->o.strategy != PC_WARM_READAHEAD && w->o.strategy != PC_WARM_IO_URING &&
	    w->o.strategy != PC_WARM_STREAM && w->o.strategy != PC_WARM_POPULATE)
		return -EINVAL;
	if (!w->o.queue_depth)
		w->o.queue_depth = PC_WARM_DEFAULT_DEPTH;
	if (!w->o.chunk_bytes)
		w->o.chunk_bytes = PC_WARM_DEFAULT_CHUNK;
	if (w->o.queue_depth > PC_WARM_MAX_DEPTH || w->o.chunk_bytes > PC_WARM_MAX_CHUNK)
		return -EINVAL;
	w->o.chunk_bytes = pc_div_round_up(w->o.chunk_bytes, w->ps) * w->ps;
	w->budget = w->o.max_bytes ? w->o.max_bytes : UINT64_MAX;
	w->window = PC_WARM_WINDOW_BYTES / w->ps;
	w->b = pc_kernel_backend();
	ret = pc_kernel_bfile_wrap(fd, &w->bf);
	if (ret < 0)
		return ret;
	ret = file_size(w);
	if (ret < 0)
		return ret;
	w->eof_page = pc_div_round_up(w->size, w->ps);
	if (w->o.strategy == PC_WARM_IO_URING) {
		ret = pc_detect_io_uring();
		if (ret < 0)
			return ret; /* short of memory or descriptors */
		if (ret != 1)
			return -EOPNOTSUPP;
		w->buf = malloc((size_t)w->o.chunk_bytes);
		if (!w->buf)
			return -ENOMEM;
		w->read_fd = private_fd(fd);
		ret = io_uring_queue_init(w->o.queue_depth, &w->ring, 0);
		if (ret == -ENOSYS || ret == -EPERM)
			return -EOPNOTSUPP;
		if (ret < 0)
			return ret;
		w->ring_ready = 1;
	}
	return 0;
}

static int64_t warm_run(int fd, struct warm_source *src, const struct pc_warm_opts *opts,
			struct pc_warm_stats *stats)
{
	/* a small file's few runs need no room for a thousand */
	size_t cap = src->runs && src->n < PC_WARM_BATCH_RUNS ? (src->n ? src->n : 1)
		: PC_WARM_BATCH_RUNS;
	struct warm *w = calloc(1, sizeof(*w) + cap * sizeof(w->batch[0]));
	struct pc_run run;
	int64_t done;
	int ret;

	if (!w)
		return -ENOMEM;
	w->batch_cap = cap;
	w->fd = fd;
	w->read_fd = fd;
	ret = warm_setup(w, fd, opts);
	while (ret == 0 && !w->st.budget_exhausted) {
		if (cancelled(w)) {
			ret = -ECANCELED;
			break;
		}
		ret = src->next(src, &run);
		if (ret <= 0)
			break;
		ret = add_run(w, run);
	}
	if (ret == 0 && w->nbatch && !w->st.budget_exhausted)
		ret = warm_batch(w);
	if (w->ring_ready) {
		int drained = uring_drain(w);

		if (ret == 0)
			ret = drained;
		io_uring_queue_exit(&w->ring);
		progress(w);
	}
	w->st.bytes_done = w->done;
	pc_opts_out(stats, &w->st, sizeof(w->st));
	if (w->bf)
		w->b->ops->close(w->b, w->bf);
	if (w->read_fd != fd)
		close(w->read_fd);
	free(w->stream_buf);
	free(w->buf);
	done = (int64_t)w->done;
	free(w);
	return ret < 0 ? ret : done;
}

PC_EXPORT int64_t pc_warm(int fd, const struct pc_run *runs, size_t n,
			  const struct pc_warm_opts *opts, struct pc_warm_stats *stats)
{
	struct warm_source src = { .next = next_array_run, .runs = runs, .n = n };
	uint64_t end = 0;

	if (n && !runs)
		return -EINVAL;
	/* all of them checked before anything is read */
	for (size_t i = 0; i < n; i++) {
		if (!runs[i].npages || runs[i].page < end ||
		    runs[i].npages > UINT64_MAX - runs[i].page)
			return -EINVAL;
		end = runs[i].page + runs[i].npages;
	}
	return warm_run(fd, &src, opts, stats);
}

PC_EXPORT int64_t pc_warm_snapshot(int fd, struct pc_snapshot_reader *rd,
				   const struct pc_warm_opts *opts, struct pc_warm_stats *stats)
{
	struct warm_source src = { .next = next_snapshot_run, .rd = rd };

	if (!rd || !pc_snapshot_reader_page_size(rd))
		return -EINVAL;
	src.snap_ps = pc_snapshot_reader_page_size(rd);
	src.ps = (uint64_t)pc_page_size();
	return warm_run(fd, &src, opts, stats);
}
