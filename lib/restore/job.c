/* SPDX-License-Identifier: MIT */
/*
 * One file's job: opened beneath the root, its identity checked and its
 * runs clamped (on a worker), mapped or warmed, then counted, noted and
 * logged on the main thread in the snapshot's order (rs_job_account()).
 */
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

/* A job for the recorded file f, found at rel, the index-th of the
 * snapshot; the rest zero. 0 or -ENOMEM. */
int rs_job_init(struct job *j, const struct pc_restore_file *f, const char *rel, uint64_t index)
{
	memset(j, 0, sizeof(*j));
	j->rel = strdup(rel);
	if (!j->rel)
		return -ENOMEM;
	j->rec = *f;
	j->rec.path = j->rel;
	j->index = index;
	return 0;
}

/* The first half of a job: the file opened beneath the root, its identity
 * checked, its runs clamped to its size (counted here, added up by the
 * main thread). Whether any are left to warm. */
bool rs_job_open(struct restore *c, struct job *j, struct pc_run *runs)
{
	j->opened = true;
	j->ready = false;
	j->fd = pc_beneath_open(&c->bn, j->rel, &j->st);
	if (j->fd < 0)
		return false;
	j->same = rs_same_file(j->rec.identity, j->rec.file_size, j->rec.mtime_ns, &j->st);
	if (!j->same && c->strict)
		return false;
	j->nclamped = rs_clamp_runs(runs, j->nruns, ((uint64_t)j->st.st_size + c->ps - 1) / c->ps,
				 &j->wanted, &j->beyond);
	j->ready = j->nclamped > 0;
	return j->ready;
}

/* The file rs_job_open() opened once more, into j->fd. Another one there
 * now (replaced in between) is taken as the batches would take it: its
 * identity checked, the runs clamped to its size (pages past the first
 * one's end stay counted beyond it). Whether any are left to warm. */
static bool job_reopen(struct restore *c, struct job *j, struct pc_run *runs)
{
	struct stat st;
	uint64_t wanted = 0;

	j->reopen = false;
	j->fd = pc_beneath_open(&c->bn, j->rel, &st);
	if (j->fd < 0 || (st.st_dev == j->st.st_dev && st.st_ino == j->st.st_ino))
		return j->fd >= 0;
	j->st = st;
	j->same = rs_same_file(j->rec.identity, j->rec.file_size, j->rec.mtime_ns, &st);
	if (!j->same && c->strict)
		return false;
	j->nclamped = rs_clamp_runs(runs, j->nclamped, ((uint64_t)st.st_size + c->ps - 1) / c->ps,
				 &wanted, &j->beyond);
	return j->nclamped > 0;
}

/*
 * A small file's runs, mapped PROT_NONE side by side at its slot in the
 * batch's map (a reservation the main thread made), for jobs_do_chunk():
 * where mincore tells the truth about it. false when it does not or a
 * mapping fails: pc_warm() then, and for every file after it (FUSE with
 * direct_io, sysfs refuse shared mappings with ENODEV). A failed
 * MAP_FIXED may leave its range unmapped (6.18 does, for a file whose
 * mmap refuses), and another thread's mmap may take that hole at once:
 * the runs mapped before it are reserved again (they are this thread's),
 * the failed one's range only if it is still free (MAP_FIXED_NOREPLACE);
 * else the map is marked holey and never unmapped whole. Mapping stops
 * at the first failure, so one map at most stays.
 */
bool rs_job_map(struct jobctx *x, struct job *j, const struct pc_run *runs)
{
	struct restore *c = x->c;
	char *at = x->map + j->slot * c->ps;
	uint64_t off = 0;

	if (!rs_mincore_truthful(c, j->fd, j->st.st_uid))
		return false;
	for (size_t k = 0; k < j->nclamped; k++) {
		size_t len = (size_t)(runs[k].npages * c->ps);

		if (mmap(at + off * c->ps, len, PROT_NONE, MAP_SHARED | MAP_FIXED, j->fd,
			 (off_t)(runs[k].page * c->ps)) == MAP_FAILED) {
			char *hole = at + off * c->ps, *m;

			__atomic_store_n(&c->map_refused, true, __ATOMIC_RELAXED);
			if (off && mmap(at, (size_t)(off * c->ps), PROT_NONE,
					MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED,
					-1, 0) == MAP_FAILED)
				__atomic_store_n(&x->map_holey, true, __ATOMIC_RELAXED);
			m = mmap(hole, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE |
				 MAP_FIXED_NOREPLACE, -1, 0);
			if (m != hole) {
				/* taken, still ours, or (before 4.17) a hint */
				if (m != MAP_FAILED)
					munmap(m, len);
				__atomic_store_n(&x->map_holey, true, __ATOMIC_RELAXED);
			}
			return false;
		}
		off += runs[k].npages;
	}
	j->map_at = at;
	j->map_pages = off;
	return true;
}

/* pc_warm() on j's runs (runs), opened and clamped. */
void rs_job_warm(struct jobctx *x, struct job *j, struct pc_run *runs)
{
	struct restore *c = x->c;
	struct pc_warm_opts o;

	rs_warm_opts(c, &o, x->budget);
	if (x->serial) {
		o.progress = rs_on_progress;
		o.progress_arg = c;
	}
	j->got = pc_warm(j->fd, runs, j->nclamped, &o, &j->ws);
	j->warmed = true;
}

/* Open (unless done ahead) and warm j, whose runs are runs; where the
 * batch has a map and j a slot in it, jobs_do_chunk() maps and warms it. */
void rs_job_do(struct jobctx *x, struct job *j, struct pc_run *runs)
{
	struct restore *c = x->c;

	j->ws = (struct pc_warm_stats){ .size = sizeof(j->ws) };
	if (x->serial) {
		/* rs_job_account() of the last one may have stopped, or spent */
		x->stopped = c->stop != PC_RESTORE_STOP_NONE;
		x->budget = c->budget;
	}
	if (x->stopped || rs_cancelled(c)) {
		if (j->opened && j->fd >= 0)
			close(j->fd);
		j->fd = -ECANCELED;
		j->closed = false;
		return;
	}
	if (j->opened ? !j->ready : !rs_job_open(c, j, runs))
		return;
	if (j->reopen && !job_reopen(c, j, runs))
		return;
	if (x->budget == 0)
		return; /* the main thread stops */
	if (x->map && j->slot != UINT64_MAX &&
	    !__atomic_load_n(&c->map_refused, __ATOMIC_RELAXED)) {
		j->to_map = true; /* jobs_do_chunk() maps it */
		return;
	}
	rs_job_warm(x, j, runs);
}

/* The main thread's part of a job (runs: its runs), in the order of the
 * batches. */
int rs_job_account(struct restore *c, struct job *j, struct pc_run *runs)
{
	const struct pc_restore_file *f = &j->rec;
	int ret;

	if (j->fd == -ECANCELED) {
		c->skipped[PC_RESTORE_SKIP_NOT_REACHED]++;
		rs_note_cancel(c); /* the stop that cancelled it */
		return 0;
	}
	if (j->fd < 0 && !j->closed) {
		rs_open_failed(c, j->rel, j->fd, f, j->index);
		return 0;
	}
	if (!rs_identity_ok(c, f, j->rel, &j->st, j->index) && c->strict) {
		if (j->fd >= 0)
			close(j->fd);
		return 0;
	}
	c->files_restored++;
	j->logi = c->files_restored - 1;
	c->file_failed = false;
	c->file_logged = c->file_seen = 0;
	c->wanted += j->wanted;
	c->beyond_eof += j->beyond;
	for (size_t k = 0; k < j->nclamped; k++)
		c->file_logged += runs[k].npages;
	ret = rs_log_path(c, j->rel);
	if (ret == 0)
		ret = rs_log_runs(c, runs, j->nclamped);
	if (ret == 0 && j->warmed)
		ret = rs_warm_account(c, j->fd, j->rel, runs, j->nclamped, j->got, &j->ws);
	else if (ret == 0 && j->nclamped && !c->stop && c->budget == 0)
		c->stop = PC_RESTORE_STOP_BUDGET;
	if (ret == 0)
		ret = rs_log_end(c);
	if (ret == 0 && c->file_logged == c->file_seen) {
		if (j->fd >= 0)
			close(j->fd);
		ret = rs_set_state(c, c->files_restored - 1, FILE_COMPLETE);
	} else if (j->fd >= 0) {
		rs_keep_fd(c, c->files_restored - 1, j->fd);
		if (ret == 0 && j->warmed && !c->file_failed && j->early)
			rs_early_add(c, c->files_restored - 1, runs, j->nclamped, j->st.st_uid,
				  j->map_at);
	}
	rs_note_cancel(c);
	return ret;
}
