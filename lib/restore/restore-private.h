/* SPDX-License-Identifier: MIT */
/*
 * pc_restore()'s inside, shared by the files of lib/restore/: one restore's
 * state (struct restore), and what each file does with it;
 * the files, each calling only those listed below it (tests/layers):
 *   restore.c   the entry point, options, stats, the source, names
 *   renamed.c   files missing from their path, found by device and inode
 *   jobs.c      small files in batches on worker threads (ORDER_FILE)
 *   window.c    small files in disk order (ORDER_DISK)
 *   job.c       one file's job: opened, warmed, counted
 *   physical.c  every run in disk order (ORDER_PHYSICAL)
 *   measure.c   the end: waiting for the reads, measuring, reading again
 *   early.c     the early look at small files just warmed
 *   account.c   pc_warm() and what it did: counts, budget, rate, the
 *               eviction watch, opening a file, its identity
 *   look.c      is a small run all in the page cache; is mincore truthful
 *   order.c     ORDER_AUTO's choice (rotating disks, virtio-blk)
 *   log.c       the log of wanted runs (a memfd) for the final measure
 *   ctx.c       the clock, the stop, the source, events, kept fds, file
 *               states, the files missing from their path
 *   findino.c, beneath.c, diskaddr.c,
 *   membudget.c, outfile.c, source.c  on their own
 */
#ifndef PC_RESTORE_PRIVATE_H
#define PC_RESTORE_PRIVATE_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "../kernel/kernel.h"
#include "beneath.h"

#define BATCH_RUNS 4096
#define WATCH_SLOTS 8
/* files missing from their path that find_renamed() looks for, at most,
 * and the bytes of their recorded paths (a hostile snapshot's 2^20 paths
 * of 4 KiB would take 4 GiB) */
#define LOST_MAX (1u << 20)
#define LOST_PATH_BYTES (UINT64_C(64) << 20)
#define PRECHECK_RUNS 8 /* runs per file measure() asks cachestat about */
#define QUICK_RUN_BYTES (256 * 1024) /* the largest run quick_look() reads */
#define MAP_REGS 4 /* batches' maps alive at once (EARLY_LAG of them, and room) */
#define MAP_CHUNK_JOBS 32 /* jobs a worker takes at a time (jobs_do_chunk()) */
#define MAP_CHUNK_PAGES (MAP_CHUNK_JOBS * PRECHECK_RUNS * (QUICK_RUN_BYTES / 4096))
#define JOB_FILES 256
#define JOB_RUNS 4096
#define JOB_THREADS 4              /* the default at most */
#define JOB_THREADS_MAX 16         /* pc_restore_opts.threads at most */
#define EARLY_LAG 2
#define EARLY_FILES (JOB_FILES * (EARLY_LAG + 1))

#ifndef MAP_FIXED_NOREPLACE
/* most architectures' value; where it is not, mmap fails and rs_quick_look() looks */
#define MAP_FIXED_NOREPLACE 0x100000
#endif

struct watch {
	int fd;                    /* -1: free */
	uint64_t off, len;
	uint64_t base;             /* recently_evicted after the range was read */
	uint64_t base_all;         /* evicted, likewise */
};

/* What measure() learnt of a logged file, by its place in the log. */
enum { FILE_PENDING, FILE_COMPLETE, FILE_UNKNOWN, FILE_GONE };

struct early {
	size_t file;               /* place in the log */
	uint64_t batch;
	bool truthful;             /* mincore tells the truth about it */
	signed char seen;          /* early_look_mapped(), early_look_maps(): 1 complete,
				      0 not, -1 not asked */
	const char *map;           /* its runs in a batch's map (job_map()); NULL: none */
	unsigned int nruns;
	struct pc_run run[PRECHECK_RUNS];
};

struct restore {
	/* options */
	struct pc_restore_opts o;        /* the caller's, copied */
	bool strict;
	int order;                 /* enum pc_restore_order */
	const char *order_why;     /* what ORDER_AUTO chose, and why */
	uint64_t rate;             /* bytes per second; 0: no limit */
	uint64_t chunk;            /* bytes per readahead call or read; 0: pc_warm's */
	unsigned int queue_depth;  /* io_uring reads in flight; 0: pc_warm's */
	int strategy;
	size_t threads;            /* workers per batch */
	/* input, root */
	struct pc_restore_source src;    /* the caller's, copied */
	const char *root;          /* root_path, or NULL */
	struct beneath bn;
	uint64_t ps;
	/* budget */
	uint64_t budget;           /* bytes left; UINT64_MAX: no limit */
	uint64_t budget_total;
	const char *budget_why;
	uint64_t mem_room;         /* the memory available at the start; UINT64_MAX: unknown */
	/* counts */
	uint64_t files, files_restored, files_empty;
	uint64_t wanted, beyond_eof, resident_before, read, bytes;
	uint64_t skipped[PC_RESTORE_SKIP_COUNT];
	uint64_t changed;
	/* files missing from their recorded path, looked for by device and
	 * inode once the rest is done (find_renamed()): renamed, or another
	 * hard link of them left */
	struct lost {
		uint64_t dev, ino;
		uint64_t index;    /* its place in the snapshot */
		char *rel;         /* its recorded path */
		char *found;       /* find_renamed(): a path it may have now */
	} *lost;
	size_t nlost, caplost;
	uint64_t lost_bytes;       /* of their paths */
	bool can_reread;           /* a seekable snapshot: read again for them */
	bool no_find_renamed;
	uint64_t renamed;
	bool hidden;               /* some file's residency was hidden: all of it read */
	int stop;                  /* enum pc_restore_stop */
	int read_error;
	bool file_failed;          /* a read error in the current file */
	uint64_t file_logged;      /* pages of the current file logged */
	uint64_t file_seen;        /* of those, found resident by pc_warm() */
	/* the eviction watch */
	struct watch watch[WATCH_SLOTS];
	unsigned int watch_next;
	int watch_state;           /* 0 works, else -errno of cachestat */
	uint64_t evicted_seen;
	double last_watch;
	uint64_t bytes_at_check;   /* c->bytes at the last watch_check() */
	double last_watch_add;
	/* the log of wanted runs: per file, path length, path, runs, end mark */
	FILE *log;
	uint64_t log_prev;         /* end of the last run logged for the file */
	/* progress, rate */
	double start, elapsed;
	uint64_t done_base;        /* bytes read before the current pc_warm() */
	volatile int cancel;       /* pc_warm()'s: set on any stop */
	/* the end */
	uint64_t final_wanted, final_resident;
	bool final_unknown;
	double settle;
	const char *settle_end;    /* why settle()'s last wait ended */
	bool poll_whole;           /* plain polls without a window (MEMO_BYTES) */
	uint64_t retried;          /* pages read again by settle() */
	uint64_t streamed;         /* of read, left to the kernel's readahead (stream) */
	uint8_t *state;            /* per logged file: FILE_* (measure()) */
	size_t nstate;
	/* large files' polls start where the last one found a wanted page
	 * missing (measure()); a file that looks complete so counts as
	 * complete when cachestat finds the pages below still there, and is
	 * measured whole once more where it cannot tell */
	struct memo {
		size_t file;
		uint64_t page;     /* every wanted page below was resident */
	} *memo;                   /* by file */
	size_t nmemo, capmemo;
	bool use_memo;             /* the next measure() may start from the memo */
	bool memo_used;            /* the last measure() did */
	bool memo_placed;          /* the last measure() set a file's memo */
	bool memo_unsure;          /* ... and found a file complete above it
				    * alone: measure it whole next */
	/* the fds of the first logged files, kept for measure() and rewarm()
	 * (a reopen beneath the root costs as much as the warming itself) */
	int *kept;                 /* by place in the log; -1: none */
	size_t nkept, kept_max;    /* slots, the most slots (RLIMIT_NOFILE) */
	/* small files looked at early (early_confirm()), by batch */
	struct early *early;
	size_t nearly;
	/* batches' maps (jobs_do_chunk()), kept for their files' early look */
	struct mapreg {
		char *base;
		uint64_t pages;
		uint64_t batch;    /* c->batches when its batch was accounted */
		bool holey;        /* left mapped: another mapping may sit in a hole */
	} reg[MAP_REGS];
	size_t nreg;
	bool map_refused;          /* a file's mapping failed: no more maps (atomic) */
	unsigned char *mapvec;     /* mincore's answer for a whole map */
	uint64_t mapvec_cap;       /* pages */
	uint64_t batches;          /* batches of files flushed so far */
	char *scratch;             /* quick_look()'s reads land here */
	bool mincore_everywhere;   /* ... about every file (mincore_truthful()) */
	uid_t overflow_uid;        /* /proc/sys/kernel/overflowuid */
	bool cachestat_ok;         /* false: cachestat(2) is missing (ENOSYS) */
	bool nowait_ok;            /* false: RWF_NOWAIT reads refused here */
};

double rs_now(void);
/* The caller's cancel flag is set. */
bool rs_user_cancel(const struct restore *c);
/* Any stop: the caller's cancel, or pc_warm()'s own (a stop found). */
bool rs_cancelled(const struct restore *c);
/* The stop the caller's cancel means, when nothing stopped it before. */
void rs_note_cancel(struct restore *c);
int rs_next_file(struct restore *c, const struct pc_restore_file **f);
int rs_next_run(struct restore *c, struct pc_run *run);
void rs_event(struct restore *c, int reason, const char *path, int error, uint64_t index);

/* account.c (the kept fds: ctx.c) */
void rs_watch_free(struct restore *c);
void rs_on_progress(uint64_t bytes_done, void *arg);
void rs_kept_init(struct restore *c);
void rs_keep_fd(struct restore *c, size_t i, int fd);
int rs_kept_fd(const struct restore *c, size_t i);
void rs_drop_fd(struct restore *c, size_t i);
void rs_kept_free(struct restore *c);
size_t rs_clamp_runs(struct pc_run *runs, size_t n, uint64_t eof_page, uint64_t *wanted,
		     uint64_t *beyond);
size_t rs_clamp(struct restore *c, struct pc_run *runs, size_t n, uint64_t eof_page);
bool rs_same_file(bool identity, uint64_t size, int64_t mtime_ns, const struct stat *st);
void rs_warm_opts(const struct restore *c, struct pc_warm_opts *o, uint64_t budget);
int rs_warm(struct restore *c, int fd, const char *rel, const struct pc_run *runs, size_t n);
int rs_warm_account(struct restore *c, int fd, const char *rel, const struct pc_run *runs,
		    size_t n, int64_t got, const struct pc_warm_stats *stp);
const char *rs_relative(struct restore *c, const char *path);
int rs_open_file(struct restore *c, const struct pc_restore_file *f, const char **relp, struct stat *st);
void rs_open_failed(struct restore *c, const char *rel, int fd, const struct pc_restore_file *f,
		    uint64_t index);
bool rs_identity_ok(struct restore *c, const struct pc_restore_file *f, const char *rel,
		    const struct stat *st, uint64_t index);
int rs_restore_streaming(struct restore *c, const char *rel, int fd, const struct stat *st,
			 struct pc_run *batch, size_t n);

/* log.c */
FILE *rs_log_open(void);
int rs_log_path(struct restore *c, const char *rel);
int rs_log_runs(struct restore *c, const struct pc_run *runs, size_t n);
int rs_log_end(struct restore *c);
int rs_log_next(struct restore *c, uint64_t *prev, struct pc_run *run);
/* The next logged file's path into path (PC_SNAPSHOT_PATH_MAX + 1 bytes):
 * 1, 0 at the end, -EIO. */
int rs_log_file(struct restore *c, char *path);

/* early.c (mincore's truthfulness: look.c) */
bool rs_mincore_truthful_everywhere(void);
uid_t rs_overflow_uid(void);
bool rs_mincore_truthful(const struct restore *c, int fd, uid_t owner);
void rs_early_add(struct restore *c, size_t i, const struct pc_run *runs, size_t n,
		  uid_t owner, const char *map);
void rs_map_keep(struct restore *c, char *base, uint64_t pages, bool holey);
void rs_maps_free(struct restore *c);
void rs_early_finish(struct restore *c);
void rs_early_confirm(struct restore *c);

/* jobs.c (job.c, window.c: jobs.h) */
int rs_restore_in_order(struct restore *c);

/* physical.c */
int rs_restore_physical(struct restore *c);

/* measure.c (file states: ctx.c; rs_quick_look(): look.c) */
int rs_file_state(struct restore *c, size_t i);
int rs_set_state(struct restore *c, size_t i, int state);
int rs_quick_look(struct restore *c, int fd, struct pc_run run, bool truthful);
void rs_settle(struct restore *c);

/* renamed.c (rs_lost_add(), rs_lost_free(): ctx.c) */
int rs_find_renamed(struct restore *c);
void rs_lost_free(struct restore *c);
bool rs_lost_add(struct restore *c, const struct pc_restore_file *f, const char *rel, uint64_t index);

/* order.c */
void rs_choose_order(struct restore *c);

#endif
