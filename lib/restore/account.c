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
#include <sys/resource.h>
#include <unistd.h>

#include "restore-private.h"

void rs_watch_free(struct restore *c)
{
	for (unsigned int i = 0; i < WATCH_SLOTS; i++)
		if (c->watch[i].fd >= 0)
			close(c->watch[i].fd);
}

/* Remember a range just read; its recently_evicted count is the base. */
static void watch_add(struct restore *c, int fd, uint64_t page, uint64_t end)
{
	struct watch *w = &c->watch[c->watch_next];
	struct pc_cachestat cs;
	int ret;

	if (c->watch_state)
		return;
	ret = pc_cachestat(fd, page * c->ps, (end - page) * c->ps, &cs);
	if (ret < 0) {
		c->watch_state = ret;
		return;
	}
	if (w->fd >= 0)
		close(w->fd);
	w->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (w->fd < 0)
		return;
	w->off = page * c->ps;
	w->len = (end - page) * c->ps;
	w->base = cs.recently_evicted;
	w->base_all = cs.evicted;
	c->watch_next = (c->watch_next + 1) % WATCH_SLOTS;
}

/*
 * true when the ranges restored lately lose pages to reclaim: more than 1%
 * of what was read (at least 256 pages) evicted again. recently_evicted is
 * what should show it, but in a cgroup v1 memory cgroup on Linux 6.18 it
 * stayed 0 while a restore in a 64 MiB cgroup evicted 190 MiB of its own
 * pages, and evicted grew page for page (seen): both counts are watched.
 * Shadow entries are reclaimed too, so a count that falls becomes the base.
 */
static bool watch_check(struct restore *c)
{
	uint64_t grown = 0, limit = c->read / 100;

	if (c->watch_state)
		return false;
	for (unsigned int i = 0; i < WATCH_SLOTS; i++) {
		struct watch *w = &c->watch[i];
		struct pc_cachestat cs;

		if (w->fd < 0 || pc_cachestat(w->fd, w->off, w->len, &cs) < 0)
			continue;
		/* the larger growth of the two counts; a count that fell
		 * (shadow entries reclaimed) is the new base */
		uint64_t g = 0;

		if (cs.recently_evicted > w->base)
			g = cs.recently_evicted - w->base;
		else
			w->base = cs.recently_evicted;
		if (cs.evicted > w->base_all) {
			if (cs.evicted - w->base_all > g)
				g = cs.evicted - w->base_all;
		} else {
			w->base_all = cs.evicted;
		}
		grown += g;
	}
	c->evicted_seen = grown > c->evicted_seen ? grown : c->evicted_seen;
	return grown > (limit > 256 ? limit : 256);
}

/* pc_warm's progress callback: the line, the rate limit, the watch. */
void rs_on_progress(uint64_t bytes_done, void *arg)
{
	struct restore *c = arg;
	uint64_t done = c->done_base + bytes_done;
	double t = rs_now();

	if (rs_user_cancel(c)) {
		c->stop = PC_RESTORE_STOP_CANCELLED;
		c->cancel = 1;
		return;
	}
	if (c->rate) {
		double due = (double)done / (double)c->rate - (t - c->start);

		while (due > 0 && !rs_user_cancel(c)) {
			double step = due > 0.2 ? 0.2 : due;
			struct timespec ts = {
				(time_t)step, (long)((step - (double)(time_t)step) * 1e9)
			};

			nanosleep(&ts, NULL);
			due -= step;
		}
		t = rs_now();
	}
	if (t - c->last_watch >= 0.2) {
		c->last_watch = t;
		if (watch_check(c)) {
			c->stop = PC_RESTORE_STOP_EVICTING;
			c->cancel = 1;
		}
	}
	if (c->o.progress) {
		struct pc_restore_progress p = {
			.size = sizeof(p), .files = c->files, .bytes_done = done,
			.seconds = t - c->start,
		};

		c->o.progress(&p, c->o.arg);
	}
}

/* ---- warming ---- */


/* Clamp runs to eof_page, adding the pages asked for to *wanted and those
 * beyond the end to *beyond; returns the new n. */
size_t rs_clamp_runs(struct pc_run *runs, size_t n, uint64_t eof_page, uint64_t *wanted,
			 uint64_t *beyond)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		struct pc_run r = runs[i];

		*wanted += r.npages;
		if (r.page >= eof_page) {
			*beyond += r.npages;
			continue;
		}
		if (r.npages > eof_page - r.page) {
			*beyond += r.npages - (eof_page - r.page);
			r.npages = eof_page - r.page;
		}
		runs[k++] = r;
	}
	return k;
}

size_t rs_clamp(struct restore *c, struct pc_run *runs, size_t n, uint64_t eof_page)
{
	return rs_clamp_runs(runs, n, eof_page, &c->wanted, &c->beyond_eof);
}

/* The file is the one recorded: same size and mtime, or no identity kept. */
bool rs_same_file(bool identity, uint64_t size, int64_t mtime_ns, const struct stat *st)
{
	return !identity || ((uint64_t)st->st_size == size &&
			     (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec ==
			     mtime_ns);
}

/* pc_warm()'s options for the restore, within budget bytes (UINT64_MAX:
 * no limit); no progress callback. */
void rs_warm_opts(const struct restore *c, struct pc_warm_opts *o, uint64_t budget)
{
	*o = (struct pc_warm_opts){ .size = sizeof(*o) };
	o->strategy = c->strategy;
	o->chunk_bytes = c->chunk;
	o->queue_depth = c->queue_depth;
	o->max_bytes = budget == UINT64_MAX ? 0 : budget;
	o->cancel = &c->cancel;
}

/* pc_warm() on runs (ascending, within the file) of fd. */
int rs_warm(struct restore *c, int fd, const char *rel, const struct pc_run *runs, size_t n)
{
	struct pc_warm_opts o = { .size = sizeof(o) };
	struct pc_warm_stats st = { .size = sizeof(st) };
	int64_t got;

	if (!n || c->stop || c->file_failed)
		return 0;
	if (c->budget == 0) {
		c->stop = PC_RESTORE_STOP_BUDGET;
		return 0;
	}
	rs_warm_opts(c, &o, c->budget);
	o.progress = rs_on_progress;
	o.progress_arg = c;
	got = pc_warm(fd, runs, n, &o, &st);
	return rs_warm_account(c, fd, rel, runs, n, got, &st);
}

/* What pc_warm() did for runs of fd: the counts, the budget, the notes,
 * the eviction watch. */
int rs_warm_account(struct restore *c, int fd, const char *rel, const struct pc_run *runs,
			size_t n, int64_t got, const struct pc_warm_stats *stp)
{
	struct pc_warm_stats st = *stp;

	c->file_seen += st.quality == PC_QUALITY_UNKNOWN ? 0 : st.pages_resident;
	c->resident_before += st.pages_resident;
	c->read += st.pages_read;
	c->streamed += st.pages_streamed;
	if (st.quality == PC_QUALITY_UNKNOWN)
		c->hidden = true;
	/* what was read counts also when it stopped (a signal, a read error) */
	if (st.bytes_done) {
		c->bytes += st.bytes_done;
		c->done_base += st.bytes_done;
		if (c->budget != UINT64_MAX)
			c->budget = st.bytes_done >= c->budget ? 0 : c->budget - st.bytes_done;
	}
	if (st.budget_exhausted && !c->stop)
		c->stop = PC_RESTORE_STOP_BUDGET;
	if (got == -ECANCELED)
		return 0; /* c->stop says why */
	if (got < 0) {
		/* counted; the rest of this file is left, the next one tried */
		c->read_error = (int)got;
		c->file_failed = true;
		rs_event(c, PC_RESTORE_EV_READ_ERROR, rel, (int)got, c->files - 1);
		return 0;
	}
	/* the head of what was read: reclaim takes the oldest pages first,
	 * and cachestat's cost grows with the folios it counts (readahead
	 * makes 4 KiB ones: 83 ms for 1 GiB here), so at most 64 MiB */
	/* small files: one range a tenth of a second is enough to see it */
	if (st.pages_read && (st.pages_read * c->ps >= (UINT64_C(16) << 20) ||
			      rs_now() - c->last_watch_add >= 0.1)) {
		uint64_t end = runs[n - 1].page + runs[n - 1].npages;
		uint64_t cap = (UINT64_C(64) << 20) / c->ps;

		c->last_watch_add = rs_now();

		watch_add(c, fd, runs[0].page, end - runs[0].page > cap ? runs[0].page + cap : end);
	}
	/* every 0.2 s, and every 32 MiB read: a fast restore fills a small
	 * cgroup in less than 0.2 s */
	if (!c->stop && (rs_now() - c->last_watch >= 0.2 ||
			 c->bytes - c->bytes_at_check >= (UINT64_C(32) << 20))) {
		c->last_watch = rs_now();
		c->bytes_at_check = c->bytes;
		if (watch_check(c))
			c->stop = PC_RESTORE_STOP_EVICTING;
	}
	rs_note_cancel(c);
	return 0;
}

/* The recorded path as a path beneath the root: "x" stays; an absolute
 * happycache path must start with the root. NULL: outside. */
const char *rs_relative(struct restore *c, const char *path)
{
	size_t n;

	if (path[0] != '/')
		return path;
	if (!c->root)
		return NULL;
	n = strlen(c->root);
	if (strcmp(c->root, "/") == 0)
		return path + 1;
	if (strncmp(path, c->root, n) != 0 || path[n] != '/')
		return NULL;
	return path + n + 1;
}

/* Open a recorded file, or count why not: fd, or -1 when skipped. */
int rs_open_file(struct restore *c, const struct pc_restore_file *f, const char **relp,
		     struct stat *st)
{
	const char *rel = rs_relative(c, f->path);
	int fd;

	if (!rel) {
		c->skipped[PC_RESTORE_SKIP_REFUSED]++;
		rs_event(c, PC_RESTORE_EV_NOT_BENEATH, f->path, 0, c->files - 1);
		return -1;
	}
	*relp = rel;
	fd = pc_beneath_open(&c->bn, rel, st);
	if (fd >= 0)
		return fd;
	rs_open_failed(c, rel, fd, f, c->files - 1);
	return -1;
}

/* Count (and note) why rel could not be opened: fd is pc_beneath_open()'s -errno;
 * f (NULL: not known) the file as recorded, index its place. */
void rs_open_failed(struct restore *c, const char *rel, int fd, const struct pc_restore_file *f,
			uint64_t index)
{
	switch (fd) {
	case -ENOENT:
		c->skipped[PC_RESTORE_SKIP_MISSING]++;
		if (!rs_lost_add(c, f, rel, index))
			rs_event(c, PC_RESTORE_EV_MISSING, rel, 0, index);
		break;
	case -EINVAL:
	case -ENAMETOOLONG:
	case -EXDEV:
	case -ELOOP:
		c->skipped[PC_RESTORE_SKIP_REFUSED]++;
		rs_event(c, pc_restore_refusal(fd), rel, fd, index);
		break;
	case -EBADFD:
	case -EISDIR:
	case -ENOTDIR:
		c->skipped[PC_RESTORE_SKIP_NOT_REGULAR]++;
		rs_event(c, PC_RESTORE_EV_NOT_REGULAR, rel, fd, index);
		break;
	default:
		c->skipped[PC_RESTORE_SKIP_ERROR]++;
		rs_event(c, PC_RESTORE_EV_OPEN_ERROR, rel, fd, index);
		break;
	}
}

/* true when the file is the one recorded, or has no identity recorded */
bool rs_identity_ok(struct restore *c, const struct pc_restore_file *f, const char *rel,
		    const struct stat *st, uint64_t index)
{
	if (rs_same_file(f->identity, f->file_size, f->mtime_ns, st))
		return true;
	c->changed++;
	rs_event(c, PC_RESTORE_EV_CHANGED, rel, 0, index);
	if (c->strict)
		c->skipped[PC_RESTORE_SKIP_CHANGED]++;
	return false;
}

/* After the file is opened and its identity checked: log its runs (seed
 * first, then the rest of the snapshot's), warm them in batches, keep fd. */
int rs_restore_streaming(struct restore *c, const char *rel, int fd, const struct stat *st,
			     struct pc_run *batch, size_t n)
{
	uint64_t eof_page = ((uint64_t)st->st_size + c->ps - 1) / c->ps;
	bool more = true;
	int ret;

	c->files_restored++;
	c->file_failed = false;
	c->file_logged = c->file_seen = 0;
	ret = rs_log_path(c, rel);
	while (ret == 0) {
		if (more && n < BATCH_RUNS) {
			int got = rs_next_run(c, &batch[n]);

			if (got < 0) {
				ret = got;
				break;
			}
			more = got > 0;
			if (more) {
				n++;
				continue;
			}
		}
		if (n) {
			n = rs_clamp(c, batch, n, eof_page);
			for (size_t k = 0; k < n; k++)
				c->file_logged += batch[k].npages;
			ret = rs_log_runs(c, batch, n);
			if (ret == 0 && !c->stop)
				ret = rs_warm(c, fd, rel, batch, n);
			n = 0;
		}
		if (!more)
			break;
	}
	if (ret < 0) {
		close(fd);
		return ret;
	}
	ret = rs_log_end(c);
	/* every page was resident when pc_warm() looked: the final
	 * measurement need not open this file again */
	if (ret == 0 && c->file_logged == c->file_seen) {
		close(fd);
		ret = rs_set_state(c, c->files_restored - 1, FILE_COMPLETE);
	} else {
		rs_keep_fd(c, c->files_restored - 1, fd);
	}
	return ret;
}

