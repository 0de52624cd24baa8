/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "jobs.h"

/*
 * Many small files: the opening beneath the root, the identity check and
 * pc_warm() of up to JOB_FILES files (JOB_RUNS runs) at a time run on
 * JOB_THREADS threads; the counting, notes and the log follow in the
 * snapshot's order on the main thread, as if one thread had done it all.
 * The main thread does that for one batch (and looks at the files of
 * earlier ones, rs_early_confirm()) while the workers go on with the next:
 * the disk gets a steady stream of reads, not one burst per batch. A batch
 * runs on one thread, file by file and counted as it goes, when it could
 * reach the budget, under --rate, or before the open method is known.
 */

struct jobs {
	struct jobctx x;
	struct job job[JOB_FILES];
	size_t n;
	struct pc_run runs[JOB_RUNS];
	size_t nruns;
	uint64_t bound;            /* pages in the runs: the most it can read */
	uint64_t map_pages;        /* the slots of its small files' runs */
	size_t next;               /* the next job to take (atomic) */
	pthread_t tid[JOB_THREADS_MAX];
	size_t nt;                 /* workers running */
};

/* Two batches: one filled from the snapshot, while the workers open and
 * warm the other; the other is then accounted, in the snapshot's order,
 * while the workers go on with the first. */
struct jobq {
	struct jobs *fill;
	struct jobs *other;
	bool other_busy;           /* started, not accounted yet */
};


static void jobs_do_chunk(struct jobs *js, size_t from, size_t to);

/* A worker: chunks of the batch's jobs until none is left. */
static void *job_worker(void *arg)
{
	struct jobs *js = arg;

	for (;;) {
		size_t i = __atomic_fetch_add(&js->next, MAP_CHUNK_JOBS, __ATOMIC_RELAXED);

		if (i >= js->n)
			return NULL;
		jobs_do_chunk(js, i, i + MAP_CHUNK_JOBS < js->n ? i + MAP_CHUNK_JOBS : js->n);
	}
}

/* Room in c->mapvec for a map of pages pages. */
static bool mapvec_grow(struct restore *c, uint64_t pages)
{
	unsigned char *v;

	if (pages > SIZE_MAX)
		return false;
	v = realloc(c->mapvec, (size_t)pages);
	if (!v)
		return false;
	c->mapvec = v;
	c->mapvec_cap = pages;
	return true;
}

/* Wait for the batch's workers. */
static void jobs_join(struct jobs *js)
{
	if (js->nt)
		job_worker(js); /* the chunks not taken yet: here, not waited for */
	for (size_t i = 0; i < js->nt; i++)
		pthread_join(js->tid[i], NULL);
	js->nt = 0;
}

/* Forget a batch: its names freed, its map unmapped unless rs_map_keep()
 * has it (its fds are the caller's). */
static void jobs_reset(struct jobs *js)
{
	for (size_t i = 0; i < js->n; i++)
		free(js->job[i].rel);
	if (js->x.map && !js->x.map_holey)
		munmap(js->x.map, (size_t)(js->map_pages * js->x.c->ps));
	js->x.map = NULL;
	js->x.map_holey = false;
	js->n = js->nruns = 0;
	js->bound = js->map_pages = 0;
}

/* pc_warm()'s counts for job j, mapped at j->map_at, from mincore's vec
 * for the map (its pages at vec): what was resident, what is read. */
static void map_counts(struct restore *c, struct job *j, const struct pc_run *runs,
		       const unsigned char *vec)
{
	uint64_t resident = 0, bytes = 0, q = 0;

	for (size_t k = 0; k < j->nclamped; k++)
		for (uint64_t p = runs[k].page; p < runs[k].page + runs[k].npages; p++, q++) {
			uint64_t end = (p + 1) * c->ps;

			if (vec[q] & 1)
				resident++;
			else
				bytes += (end < (uint64_t)j->st.st_size ? end
					  : (uint64_t)j->st.st_size) - p * c->ps;
		}
	j->ws.pages_wanted = j->map_pages;
	j->ws.pages_resident = resident;
	j->ws.pages_read = j->map_pages - resident;
	j->ws.quality = PC_QUALITY_EXACT;
	j->ws.bytes_done = bytes;
	j->got = (int64_t)bytes;
	j->warmed = true;
}

/*
 * Jobs [from, to) of the batch, done by one worker, and those rs_job_map()
 * mapped warmed together: one mincore over their stretch of the map tells
 * which wanted pages are resident already (pc_warm()'s check), and one
 * madvise(MADV_WILLNEED) for each stretch that is mapped end to end reads
 * the rest: the kernel's readahead(2) for each mapping in it, under one
 * block plug, so that their requests reach the disk together. Per file
 * that is one mmap instead of statx, cachestat and readahead(2), and the
 * early look makes no mapping of its own (the map stays for it,
 * early_look_maps()). Where mincore or madvise fails, pc_warm().
 */
static void jobs_do_chunk(struct jobs *js, size_t from, size_t to)
{
	struct restore *c = js->x.c;
	unsigned char vec[MAP_CHUNK_PAGES];
	char *lo = NULL, *hi = NULL, *vec_at = NULL;
	size_t first = from;       /* the stretch's first job */
	bool asked = false, stop;

	/* the opening first, then the mappings one after the other: the
	 * process's mmap lock is taken for them in one go, not between
	 * the opens (contended, it cost a context switch each time) */
	for (size_t i = from; i < to; i++)
		rs_job_do(&js->x, &js->job[i], js->runs + js->job[i].run0);
	for (size_t i = from; i < to; i++) {
		struct job *j = &js->job[i];
		struct pc_run *runs = js->runs + j->run0;

		if (j->to_map && !rs_job_map(&js->x, j, runs))
			rs_job_warm(&js->x, j, runs);
		if (!j->map_at)
			continue;
		if (!vec_at)
			vec_at = j->map_at;
		hi = j->map_at + j->map_pages * c->ps;
	}
	if (!vec_at)
		return;
	if ((uint64_t)(hi - vec_at) / c->ps <= sizeof(vec))
		asked = mincore(vec_at, (size_t)(hi - vec_at), vec) == 0;
	stop = rs_cancelled(c);
	hi = NULL;
	for (size_t i = from; i <= to; i++) {
		struct job *j = i < to ? &js->job[i] : NULL;
		int bad = 0;

		if (j && !j->map_at)
			continue;
		if (j && lo && j->map_at == hi) {
			hi += j->map_pages * c->ps;
			continue;
		}
		/* the stretch ends: warm it */
		if (lo && asked && !stop && madvise(lo, (size_t)(hi - lo), MADV_WILLNEED) < 0)
			bad = -errno;
		for (size_t k = first; lo && k < i; k++) {
			struct job *m = &js->job[k];
			struct pc_run *runs = js->runs + m->run0;

			if (!m->map_at)
				continue;
			if (!asked || bad) {
				rs_job_warm(&js->x, m, runs);
				continue;
			}
			map_counts(c, m, runs, vec + (m->map_at - vec_at) / (ptrdiff_t)c->ps);
			if (stop) {
				m->ws.pages_read = 0;
				m->ws.bytes_done = 0;
				m->got = -ECANCELED;
			}
		}
		if (!j)
			break;
		first = i;
		lo = j->map_at;
		hi = lo + j->map_pages * c->ps;
	}
}

/* The main thread's part of a finished batch, in the snapshot's order. */
static int jobs_account(struct jobs *js)
{
	int ret = 0;

	rs_early_confirm(js->x.c);
	if (js->x.map) {
		/* kept for the early look of its files */
		rs_map_keep(js->x.c, js->x.map, js->map_pages,
			 __atomic_load_n(&js->x.map_holey, __ATOMIC_RELAXED));
		js->x.map = NULL;
	}
	for (size_t i = 0; i < js->n; i++) {
		if (ret == 0)
			ret = rs_job_account(js->x.c, &js->job[i], js->runs + js->job[i].run0);
		else if (js->job[i].fd >= 0)
			close(js->job[i].fd);
	}
	jobs_reset(js);
	return ret;
}

/* What the batch's workers go by, and whether it runs here, file by file
 * and counted as it goes: when it could reach the budget (with the pages
 * of the batch still busy, not counted yet), under --rate, on one CPU, or
 * before the open method is known. */
static bool jobs_prepare(struct jobs *js, uint64_t busy_bound)
{
	struct restore *c = js->x.c;

	js->x.stopped = c->stop != PC_RESTORE_STOP_NONE;
	js->x.budget = c->budget;
	if (c->budget != UINT64_MAX)
		js->x.budget = busy_bound > c->budget / c->ps ? 0 : c->budget - busy_bound * c->ps;
	js->x.serial = c->threads == 1 || js->n == 1 || c->rate || c->bn.method == 0 ||
		(js->x.budget != UINT64_MAX && js->bound > js->x.budget / c->ps);
	js->next = 0;
	js->nt = 0;
	return js->x.serial;
}

/* The batch on up to JOB_THREADS workers, or here when none can be made;
 * with a map for its small files (rs_job_map()) where the strategy reads
 * ahead (io_uring reads the pages itself). */
static void jobs_run_workers(struct jobs *js)
{
	struct restore *c = js->x.c;
	size_t nthreads = c->threads;

	js->x.map = NULL;
	if (js->map_pages && c->strategy != PC_WARM_IO_URING &&
	    !__atomic_load_n(&c->map_refused, __ATOMIC_RELAXED) &&
	    (js->map_pages <= c->mapvec_cap || mapvec_grow(c, js->map_pages))) {
		void *m = mmap(NULL, (size_t)(js->map_pages * c->ps), PROT_NONE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

		js->x.map = m == MAP_FAILED ? NULL : m;
	}

	while (js->nt < nthreads && pthread_create(&js->tid[js->nt], NULL, job_worker, js) == 0)
		js->nt++;
	if (!js->nt)
		job_worker(js);
}

/* The batch here, each file counted as it is done. */
static int jobs_run_here(struct jobs *js)
{
	int ret = 0;

	rs_early_confirm(js->x.c);
	for (size_t i = 0; i < js->n && ret == 0; i++) {
		rs_job_do(&js->x, &js->job[i], js->runs + js->job[i].run0);
		ret = rs_job_account(js->x.c, &js->job[i], js->runs + js->job[i].run0);
	}
	jobs_reset(js);
	return ret;
}

/* The filled batch is full (or the snapshot ends): start it, and account
 * the busy one while it runs. */
static int jobq_flush(struct jobq *q)
{
	struct jobs *js = q->fill;
	bool busy = q->other_busy, serial;
	int ret = 0;

	if (!js->n)
		return 0;
	js->x.c->batches++;
	if (busy)
		jobs_join(q->other);
	serial = jobs_prepare(js, busy ? q->other->bound : 0);
	if (serial && busy) {
		/* first the busy one, to keep the snapshot's order */
		q->other_busy = busy = false;
		ret = jobs_account(q->other);
		jobs_prepare(js, 0);
	}
	if (ret < 0) {
		jobs_reset(js);
		return ret;
	}
	if (serial)
		return jobs_run_here(js);
	jobs_run_workers(js);
	if (busy)
		ret = jobs_account(q->other);
	q->fill = q->other;
	q->other = js;
	q->other_busy = true;
	return ret;
}

/* The end: the last batch started, and accounted when its workers are done. */
static int jobq_finish(struct jobq *q)
{
	int ret = jobq_flush(q);

	/* after an error the caller's jobq_drop() forgets the busy batch */
	if (ret < 0 || !q->other_busy)
		return ret;
	q->other_busy = false;
	jobs_join(q->other);
	return jobs_account(q->other);
}

/* After an error: the busy batch waited for and forgotten, the filled one
 * too (not run). */
static void jobq_drop(struct jobq *q)
{
	if (q->other_busy) {
		jobs_join(q->other);
		for (size_t i = 0; i < q->other->n; i++)
			if (q->other->job[i].fd >= 0)
				close(q->other->job[i].fd);
		q->other_busy = false;
	}
	jobs_reset(q->other);
	jobs_reset(q->fill);
}

/* A file of many runs (the first n in batch, the rest still in the
 * snapshot), after the batches before it: alone, streaming its runs. */
static int restore_alone(struct restore *c, struct jobq *q, const struct pc_restore_file *f,
			 const char *rel, struct pc_run *batch, size_t n)
{
	struct stat st;
	int fd, ret = jobq_finish(q);

	if (ret < 0)
		return ret;
	if (c->stop) {
		c->skipped[PC_RESTORE_SKIP_NOT_REACHED]++;
		return 0;
	}
	fd = pc_beneath_open(&c->bn, rel, &st);
	if (fd < 0) {
		rs_open_failed(c, rel, fd, f, c->files - 1);
		return 0;
	}
	if (!rs_identity_ok(c, f, rel, &st, c->files - 1) && c->strict) {
		close(fd);
		return 0;
	}
	return rs_restore_streaming(c, rel, fd, &st, batch, n);
}

/* The place in the batch's map of a file whose runs are few and small, as
 * the early look takes them (its runs as recorded: clamped, they only
 * shrink); UINT64_MAX for the others. */
static uint64_t map_slot(struct restore *c, struct jobs *js, const struct pc_run *runs, size_t n)
{
	uint64_t slot = js->map_pages, pages = 0;

	if (!n || n > PRECHECK_RUNS)
		return UINT64_MAX;
	for (size_t k = 0; k < n; k++) {
		if (runs[k].npages * c->ps > QUICK_RUN_BYTES)
			return UINT64_MAX;
		pages += runs[k].npages;
	}
	js->map_pages += pages;
	return slot;
}

/* The files and runs in flight in the snapshot's order. */
struct inorder {
	struct restore *c;
	struct pc_run *batch;      /* a file alone: BATCH_RUNS */
	struct jobq q;
	struct win w;              /* PC_RESTORE_ORDER_DISK: w.runs set */
};

/* File f (found at rel) into the window, or alone after it when it has
 * JOB_RUNS runs or more. 0 or -errno. */
static int to_window(struct inorder *io, const struct pc_restore_file *f, const char *rel)
{
	struct win *w = &io->w;
	size_t run0;
	struct job *j;
	int more, ret;

	if (w->n == WIN_FILES || WIN_RUNS - w->nruns < JOB_RUNS) {
		ret = rs_win_flush(w);
		if (ret < 0)
			return ret;
	}
	run0 = w->nruns;
	while ((more = rs_next_run(io->c, &w->runs[w->nruns])) > 0)
		if (++w->nruns - run0 == JOB_RUNS)
			break;
	if (more < 0)
		return more;
	if (w->nruns - run0 < JOB_RUNS) {
		j = rs_win_add(w, f, rel);
		if (!j)
			return -ENOMEM;
		j->run0 = run0;
		j->nruns = w->nruns - run0;
		return 0;
	}
	memcpy(io->batch, w->runs + run0, JOB_RUNS * sizeof(*io->batch));
	w->nruns = run0;
	ret = rs_win_flush(w);
	return ret < 0 ? ret : restore_alone(io->c, &io->q, f, rel, io->batch, JOB_RUNS);
}

/* File f (found at rel) into the batch being filled while its runs fit;
 * else the batch first, then this file alone, from the runs read so far.
 * 0 or -errno. */
static int to_batch(struct inorder *io, const struct pc_restore_file *f, const char *rel)
{
	struct restore *c = io->c;
	struct jobs *js = io->q.fill;
	size_t run0 = js->nruns, n;
	bool fits = true;
	struct job *j;
	int more, ret;

	while ((more = rs_next_run(c, &js->runs[js->nruns])) > 0) {
		js->bound += js->runs[js->nruns].npages;
		if (++js->nruns == JOB_RUNS) {
			fits = false;
			break;
		}
	}
	if (more < 0)
		return more;
	if (fits) {
		j = &js->job[js->n];
		ret = rs_job_init(j, f, rel, c->files - 1);
		if (ret < 0)
			return ret;
		j->early = true;
		j->run0 = run0;
		j->nruns = js->nruns - run0;
		j->slot = map_slot(c, js, js->runs + run0, j->nruns);
		if (++js->n == JOB_FILES || js->nruns == JOB_RUNS)
			return jobq_flush(&io->q);
		return 0;
	}
	n = js->nruns - run0;
	memcpy(io->batch, js->runs + run0, n * sizeof(*io->batch));
	js->nruns = run0;
	return restore_alone(c, &io->q, f, rel, io->batch, n);
}

/* One file of the snapshot: counted, skipped, or on its way. 0 or -errno. */
static int take_file(struct inorder *io, const struct pc_restore_file *f)
{
	struct restore *c = io->c;
	const char *rel;
	int ret;

	c->files++;
	rs_note_cancel(c);
	if (f->quality == PC_QUALITY_UNKNOWN) {
		c->skipped[PC_RESTORE_SKIP_UNKNOWN_AT_CAPTURE]++;
		return 0;
	}
	if (f->identity && f->npages == 0) {
		c->files_empty++;
		return 0;
	}
	if (c->stop) {
		c->skipped[PC_RESTORE_SKIP_NOT_REACHED]++;
		return 0;
	}
	rel = rs_relative(c, f->path);
	if (!rel) {
		/* notes stay in the snapshot's order (in disk order there is
		 * none to keep) */
		ret = io->w.runs ? 0 : jobq_finish(&io->q);
		if (ret < 0)
			return ret;
		c->skipped[PC_RESTORE_SKIP_REFUSED]++;
		rs_event(c, PC_RESTORE_EV_NOT_BENEATH, f->path, 0, c->files - 1);
		return 0;
	}
	return io->w.runs ? to_window(io, f, rel) : to_batch(io, f, rel);
}

/* The snapshot in its order: one file, then the next (ORDER_FILE); or the
 * small files of a window in their order on the disk (ORDER_DISK). */
int rs_restore_in_order(struct restore *c)
{
	struct jobs *two = calloc(2, sizeof(*two));
	struct inorder io = {
		.c = c, .batch = malloc(BATCH_RUNS * sizeof(*io.batch)),
		.q = { .fill = two, .other = two + 1 }, .w = { .c = c },
	};
	const struct pc_restore_file *f;
	int ret;

	if (c->order == PC_RESTORE_ORDER_DISK)
		io.w.runs = malloc(WIN_RUNS * sizeof(*io.w.runs));
	if (!io.batch || !two || (c->order == PC_RESTORE_ORDER_DISK && !io.w.runs)) {
		free(io.batch);
		free(two);
		free(io.w.runs);
		return -ENOMEM;
	}
	two[0].x.c = two[1].x.c = c;
	while ((ret = rs_next_file(c, &f)) > 0) {
		ret = take_file(&io, f);
		if (ret < 0)
			break;
	}
	if (ret == 0)
		ret = rs_win_flush(&io.w);
	if (ret == 0)
		ret = jobq_finish(&io.q);
	if (ret < 0) {
		rs_win_drop(&io.w);
		jobq_drop(&io.q);
	}
	if (ret == 0)
		rs_early_finish(c);
	rs_maps_free(c);
	free(io.w.job);
	free(io.w.runs);
	free(io.batch);
	free(two);
	return ret;
}
