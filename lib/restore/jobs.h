/* SPDX-License-Identifier: MIT */
/* A file's job: opened, checked and warmed on a worker, counted on the
 * main thread (jobs.c); batches of them (jobs.c) and windows in disk order
 * (window.c). */
#ifndef PC_RESTORE_JOBS_H
#define PC_RESTORE_JOBS_H

#include "restore-private.h"

struct job {
	char *rel;
	struct pc_restore_file rec;      /* as recorded (its path: rel) */
	uint64_t index;            /* its place in the snapshot */
	size_t run0, nruns;        /* in jobs.runs */
	/* the worker's part: rs_job_open() (ahead, for a window), then pc_warm() */
	bool opened;               /* rs_job_open() done: fd, st, same, ... are set */
	bool ready;                /* ... and it left runs to warm */
	bool reopen;               /* ... and fd closed again (no room to keep it) */
	bool closed;               /* ... and fd closed again (nothing to warm) */
	bool early;                /* rs_job_account() queues it for rs_early_confirm() */
	size_t logi;               /* rs_job_account(): its place in the log */
	uint64_t key;              /* PC_RESTORE_ORDER_DISK: the disk address of the first run */
	int fd;                    /* or beneath_open's -errno; -ECANCELED: not reached */
	struct stat st;
	bool same;                 /* identity as recorded (or none recorded) */
	uint64_t wanted, beyond;   /* pages, as rs_clamp() counts them */
	size_t nclamped;
	bool warmed;
	int64_t got;
	struct pc_warm_stats ws;
	uint64_t slot;             /* its pages' place in the batch's map; UINT64_MAX: none */
	bool to_map;               /* rs_job_do(): opened, for job_map() */
	char *map_at;              /* job_map(): its runs mapped there, side by side */
	uint64_t map_pages;
};

/* What rs_job_do() goes by: the workers read the restore's stop and budget
 * as they were when their batch started (the main thread changes the
 * restore's own while they run); serial: it runs on the main thread, file
 * by file and counted as it goes, and reads them afresh. */
struct jobctx {
	struct restore *c;
	bool serial;
	bool stopped;
	uint64_t budget;           /* bytes; UINT64_MAX: no limit */
	char *map;                 /* the batch's map (job_map()), or NULL */
	bool map_holey;            /* a hole in it (atomic): never unmapped whole */
};

#define WIN_FILES 65536
#define WIN_RUNS (1 << 18)

struct win {
	struct restore *c;
	struct job *job;
	size_t n, cap;
	struct pc_run *runs;       /* WIN_RUNS */
	size_t nruns;
	size_t room;               /* fds the opening may keep */
	size_t next;               /* the next job to open (atomic) */
};

struct win_key {
	uint64_t key;
	size_t i;
};

int rs_job_init(struct job *j, const struct pc_restore_file *f, const char *rel, uint64_t index);
bool rs_job_open(struct restore *c, struct job *j, struct pc_run *runs);
void rs_job_do(struct jobctx *x, struct job *j, struct pc_run *runs);
/* j's runs mapped at its slot of the batch's map (jobs_do_chunk()), or
 * pc_warm() on them. */
bool rs_job_map(struct jobctx *x, struct job *j, const struct pc_run *runs);
void rs_job_warm(struct jobctx *x, struct job *j, struct pc_run *runs);
int rs_job_account(struct restore *c, struct job *j, struct pc_run *runs);

struct job *rs_win_add(struct win *w, const struct pc_restore_file *f, const char *rel);
void rs_win_drop(struct win *w);
int rs_win_flush(struct win *w);

#endif
