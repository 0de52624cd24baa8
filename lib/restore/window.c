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

#include "diskaddr.h"
#include "jobs.h"

/*
 * --order=disk: the small files go to a window of up to WIN_FILES files
 * (WIN_RUNS runs) first. The workers open them all (rs_job_open()) and ask
 * FIEMAP where each one's first wanted page lies; then one thread warms
 * them in that order (win_warm()). Neighbours on the disk are read one
 * after the other and the block layer merges their reads. On this disk
 * (virtio, rotational 1), for 20,000 files of 4-64 KiB written in another
 * order than their names' one: 360-730 requests instead of 19,700, the
 * tree back in 1.04 s instead of 1.14 (medians of 5 alternating runs; the
 * opening ahead costs 0.23 s that reads in the snapshot's order hide). Two
 * threads reading side by side broke the merges (0.5-1.1 s for the reads
 * alone, 0.35-0.6 with one). Windows of 8,192 files or fewer lost most of
 * the gain on that tree, whose names' order spreads over the whole disk.
 * The window's fds are kept from the opening to the warming, as many as
 * the kept fds leave room for; the rest are opened again then. When the
 * host served that disk from its cache, the disk order still had the pages
 * back sooner, though the command ended later (rs_choose_order()).
 */
/* No room to keep j's fd until it is warmed: rs_job_do() opens it again. */
static void win_close_ahead(struct job *j)
{
	close(j->fd);
	j->fd = -1;
	j->reopen = true;
}

static void win_open(struct win *w, size_t i)
{
	struct restore *c = w->c;
	struct job *j = &w->job[i];
	struct pc_run *runs = w->runs + j->run0;

	j->key = UINT64_MAX;
	if (rs_cancelled(c)) {
		j->opened = true;
		j->ready = false;
		j->fd = -ECANCELED;
		return;
	}
	if (rs_job_open(c, j, runs))
		j->key = pc_disk_address(j->fd, runs[0].page * c->ps, runs[0].npages * c->ps);
	if (j->fd >= 0 && !j->ready) {
		/* changed (--strict), or all beyond its end: j->st says so */
		close(j->fd);
		j->fd = -1;
		j->closed = true;
	} else if (i >= w->room && j->fd >= 0) {
		win_close_ahead(j);
	}
}

static void *win_worker(void *arg)
{
	struct win *w = arg;

	for (;;) {
		size_t i = __atomic_fetch_add(&w->next, 1, __ATOMIC_RELAXED);

		if (i >= w->n)
			return NULL;
		win_open(w, i);
	}
}

static int win_key_cmp(const void *pa, const void *pb)
{
	const struct win_key *a = pa, *b = pb;

	if (a->key != b->key)
		return a->key < b->key ? -1 : 1;
	return a->i < b->i ? -1 : a->i > b->i;
}

/* A new job at the end of the window for f (its runs: the caller's). */
struct job *rs_win_add(struct win *w, const struct pc_restore_file *f, const char *rel)
{
	struct job *j;

	if (w->n == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 1024;
		struct job *p = realloc(w->job, cap * sizeof(*p));

		if (!p)
			return NULL;
		w->job = p;
		w->cap = cap;
	}
	j = &w->job[w->n];
	if (rs_job_init(j, f, rel, w->c->files - 1) < 0)
		return NULL;
	w->n++;
	return j;
}

/* After an error: the window's files closed and forgotten. */
void rs_win_drop(struct win *w)
{
	for (size_t i = 0; i < w->n; i++) {
		if (w->job[i].opened && w->job[i].fd >= 0)
			close(w->job[i].fd);
		free(w->job[i].rel);
	}
	w->n = w->nruns = 0;
}

/* The warming thread of a window: its jobs in disk order. */
struct warmer {
	struct win *w;
	const struct win_key *keys;
	struct jobctx x;
	pthread_t tid;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	size_t done;               /* jobs warmed (lock) */
	size_t want;               /* the counting waits for done >= want (lock) */
};

/*
 * Wait, up to 1 s, while the page of fd is in the cache but not up to date:
 * its read is in flight (mincore counts pages up to date only, cachestat
 * those being read too). For a caller mincore tells the truth. false: it
 * was still in flight at the end.
 */
static bool wait_in_flight(const struct restore *c, int fd, uint64_t page)
{
	struct timespec ts = { 0, 1000000 };
	void *map = mmap(NULL, (size_t)c->ps, PROT_NONE, MAP_SHARED, fd, (off_t)(page * c->ps));
	bool done = false;

	if (map == MAP_FAILED)
		return true;
	for (int i = 0; i < 1000 && !done; i++) {
		struct pc_cachestat cs;
		unsigned char v = 0;

		/* not coming (cachestat 0): rs_settle() reads it again */
		done = mincore(map, (size_t)c->ps, &v) < 0 || (v & 1) ||
			pc_cachestat(fd, page * c->ps, c->ps, &cs) < 0 || cs.cache == 0;
		if (!done)
			nanosleep(&ts, NULL);
	}
	munmap(map, (size_t)c->ps);
	return done;
}

static void *warmer_main(void *arg)
{
	struct warmer *m = arg;

	for (size_t k = 0; k < m->w->n; k++) {
		struct job *j = &m->w->job[m->keys[k].i];

		rs_job_do(&m->x, j, m->w->runs + j->run0);
		/* a wakeup a file cost the warming a third of its speed */
		if ((k + 1) % 64 == 0 || k + 1 == m->w->n) {
			pthread_mutex_lock(&m->lock);
			m->done = k + 1;
			if (m->done >= m->want)
				pthread_cond_signal(&m->cond);
			pthread_mutex_unlock(&m->lock);
		}
	}
	return NULL;
}

/*
 * Follow the disk through the window: it reads in the order the reads went
 * out, roughly, and lags the warming by up to half a second here. Each
 * small file warmed is looked at in that order (rs_quick_look()), waiting for
 * a read still in flight; a file seen complete is closed and rs_settle()
 * never looks at it again. The looks (10 us a file) run while the disk
 * works, instead of after it, where rs_settle()'s first poll of 20,000 files
 * took 0.2 s; rs_early_confirm() looked too soon here, while the reads were
 * still queued. Where mincore does not tell the truth rs_settle() does it.
 */
static void win_follow(struct win *w, const struct win_key *keys)
{
	struct restore *c = w->c;

	for (size_t k = 0; k < w->n && !c->stop && !rs_cancelled(c); k++) {
		const struct job *j = &w->job[keys[k].i];
		const struct pc_run *runs = w->runs + j->run0;
		int fd = j->warmed && j->got > 0 ? rs_kept_fd(c, j->logi) : -1;
		bool truthful, complete = true;

		if (fd < 0 || rs_file_state(c, j->logi) != FILE_PENDING || j->nclamped > PRECHECK_RUNS)
			continue;
		truthful = rs_mincore_truthful(c, fd, j->st.st_uid);
		if (!truthful)
			continue;
		for (size_t r = 0; r < j->nclamped && complete; r++) {
			int q = rs_quick_look(c, fd, runs[r], true);

			if (q == 0) {
				if (!wait_in_flight(c, fd, runs[r].page + runs[r].npages - 1))
					return; /* the disk stalls: rs_settle() takes over */
				q = rs_quick_look(c, fd, runs[r], true);
			}
			complete = q == 1;
		}
		if (complete && rs_set_state(c, j->logi, FILE_COMPLETE) == 0)
			rs_drop_fd(c, j->logi);
	}
}

/*
 * The window's jobs in the order of keys: warmed on one thread, which goes
 * through them without a pause, and counted here right behind it. On this
 * thread, file by file and counted as it goes, when the window could reach
 * the budget, under --rate or on one CPU. A stop the counting finds (the
 * budget, the eviction watch, a signal) cancels the rest. Then
 * win_follow().
 */
static int win_warm(struct win *w, const struct win_key *keys)
{
	struct restore *c = w->c;
	struct warmer m = { .w = w, .keys = keys, .x = { .c = c } };
	uint64_t bound = 0, room = 0;
	size_t seen = 0;           /* jobs known warmed */
	bool threaded;
	int ret = 0;

	for (size_t r = 0; r < w->nruns; r++)
		bound += w->runs[r].npages;
	m.x.stopped = c->stop != PC_RESTORE_STOP_NONE;
	m.x.budget = c->budget;
	/* what the restore has not filled yet of the memory there was */
	if (c->mem_room / c->ps > c->read)
		room = c->mem_room / c->ps - c->read;
	/* or when it could fill half the memory left: pc_warm()'s progress
	 * calls on this thread run the eviction watch while it reads (a
	 * thread that sends it all out in a few ms leaves nothing for it to
	 * stop) */
	m.x.serial = c->threads == 1 || c->rate ||
		(c->budget != UINT64_MAX && bound > c->budget / c->ps) ||
		(c->mem_room != UINT64_MAX && bound > room / 2);
	pthread_mutex_init(&m.lock, NULL);
	pthread_cond_init(&m.cond, NULL);
	threaded = !m.x.serial && pthread_create(&m.tid, NULL, warmer_main, &m) == 0;
	if (!threaded)
		m.x.serial = true; /* the warmer reads it: never written while it runs */
	for (size_t k = 0; k < w->n; k++) {
		struct job *j = &w->job[keys[k].i];
		struct pc_run *runs = w->runs + j->run0;

		if (threaded && k == seen) {
			pthread_mutex_lock(&m.lock);
			m.want = k + 1;
			while (m.done <= k)
				pthread_cond_wait(&m.cond, &m.lock);
			seen = m.done;
			pthread_mutex_unlock(&m.lock);
		} else if (!threaded) {
			rs_job_do(&m.x, j, runs);
		}
		if (ret == 0)
			ret = rs_job_account(c, j, runs);
		else if (j->fd >= 0)
			close(j->fd);
		if (ret < 0 || c->stop)
			__atomic_store_n(&c->cancel, 1, __ATOMIC_RELAXED);
	}
	if (threaded)
		pthread_join(m.tid, NULL);
	pthread_mutex_destroy(&m.lock);
	pthread_cond_destroy(&m.cond);
	if (ret == 0)
		win_follow(w, keys);
	return ret;
}

/* Open the window's files, sort them by disk address, and warm them in
 * that order. */
int rs_win_flush(struct win *w)
{
	struct restore *c = w->c;
	struct win_key *keys;
	pthread_t tid[JOB_THREADS_MAX];
	size_t nt = 0, nthreads = c->threads, kept;
	int ret = 0;

	if (!w->n)
		return 0;
	keys = malloc(w->n * sizeof(*keys));
	if (!keys)
		return -ENOMEM;
	/* the fds kept so far (at most one a restored file), those the
	 * window may keep besides */
	kept = c->files_restored < c->kept_max ? (size_t)c->files_restored : c->kept_max;
	w->room = c->kept_max - kept;
	w->next = 0;
	while (c->bn.method == 0 && w->next < w->n)
		win_open(w, w->next++); /* the first open picks the method, alone */
	while (nt < nthreads && pthread_create(&tid[nt], NULL, win_worker, w) == 0)
		nt++;
	if (!nt)
		win_worker(w);
	for (size_t t = 0; t < nt; t++)
		pthread_join(tid[t], NULL);
	for (size_t i = 0; i < w->n; i++)
		keys[i] = (struct win_key){ w->job[i].key, i };
	if (w->n)
		qsort(keys, w->n, sizeof(*keys), win_key_cmp);
	/* the fds kept ahead are those that will take the kept slots: the
	 * first room in the warming's order */
	for (size_t k = w->room; k < w->n; k++) {
		struct job *j = &w->job[keys[k].i];

		if (j->opened && j->ready && j->fd >= 0)
			win_close_ahead(j);
	}
	ret = win_warm(w, keys);
	for (size_t i = 0; i < w->n; i++)
		free(w->job[i].rel);
	free(keys);
	w->n = w->nruns = 0;
	return ret;
}

