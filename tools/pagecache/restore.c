/* SPDX-License-Identifier: MIT */
/*
 * pagecache restore: bring the pages a snapshot recorded back into the page
 * cache, beneath a root only, within a memory budget, gently unless --fast.
 *
 * The snapshot streams (a seekable one is read through once first, so that
 * a corrupt snapshot reads nothing); runs go to pc_warm() in batches of
 * BATCH_RUNS, which skips pages already resident. What was asked for is
 * logged to a memfd (2 to 3 bytes per run, varints as in the snapshot), so that the final
 * measurement of the wanted pages' residency can read it again whatever
 * the snapshot's size, even from a pipe. --order=physical is the exception:
 * it holds every run of the snapshot (24 bytes each) to sort them by their
 * place on the disk (FIEMAP). Small files go in batches to up to four
 * threads (open, identity, pc_warm()); the main thread counts them in order.
 * With --order=disk (auto's choice on a rotating disk) they go to windows
 * of up to 65536 files instead, opened first and warmed in the order of
 * their place on the disk (win_flush()).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <linux/fiemap.h>
#include <linux/capability.h>
#include <linux/fs.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "diskaddr.h"
#include "snapcli.h"

#define BATCH_RUNS 4096
#define WATCH_SLOTS 8
#define CHANGED_NAMES 20
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

enum stop { STOP_NONE, STOP_BUDGET, STOP_EVICTING, STOP_SIGNAL };

enum skip {
	SKIP_UNKNOWN,     /* recorded unknown at capture: no pages */
	SKIP_MISSING,     /* not there any more */
	SKIP_REFUSED,     /* an unsafe path, a symlink or ".." out of the root */
	SKIP_NOT_REGULAR,
	SKIP_CHANGED,     /* --strict */
	SKIP_NOT_REACHED, /* after a stop */
	SKIP_ERROR,       /* could not be opened or read */
	SKIP_COUNT,
};

static const char *const skip_names[SKIP_COUNT] = {
	"unknown_at_capture", "missing", "refused", "not_regular", "changed",
	"not_reached", "error",
};

static const char *const skip_text[SKIP_COUNT] = {
	"recorded unknown at capture", "missing", "refused (unsafe paths, outside the root)",
	"not a regular file", "changed (--strict)", "not reached", "errors",
};

struct watch {
	int fd;                    /* -1: free */
	uint64_t off, len;
	uint64_t base;             /* recently_evicted after the range was read */
	uint64_t base_all;         /* evicted, likewise */
};

/* --order=physical: a piece of a run within one extent */
struct seg {
	uint64_t page, npages;
	uint64_t phys;             /* bytes; UINT64_MAX: not known */
};

struct pfile {
	char *rel;
	dev_t dev;
	ino_t ino;
	struct seg *segs;
	size_t nsegs;
	uint64_t key;
};

/* --order: ORDER_AUTO is ORDER_DISK on a rotating disk, else ORDER_FILE */
enum order { ORDER_AUTO, ORDER_FILE, ORDER_DISK, ORDER_PHYSICAL };

struct restore {
	/* options */
	bool strict, fast, json, quiet;
	enum order order;
	const char *order_why;     /* what --order=auto chose, and why */
	uint64_t max_bytes;        /* 0: the default */
	uint64_t rate;             /* bytes per second; 0: no limit */
	uint64_t chunk;            /* bytes per readahead call or read; 0: pc_warm's */
	unsigned int queue_depth;  /* io_uring reads in flight; 0: pc_warm's */
	int strategy;
	enum snap_format fmt;
	/* input, root */
	const char *name;
	struct snapsrc *src;
	char *root;
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
	uint64_t skipped[SKIP_COUNT];
	uint64_t changed;
	char *changed_names[CHANGED_NAMES];
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
	bool no_find_renamed;      /* --no-find-renamed */
	uint64_t renamed;
	bool hidden;               /* some file's residency was hidden: all of it read */
	enum stop stop;
	int read_error;
	bool file_failed;          /* a read error in the current file */
	uint64_t file_logged;      /* pages of the current file logged */
	uint64_t file_seen;        /* of those, found resident by pc_warm() */
	uint64_t warned;
	/* the eviction watch */
	struct watch watch[WATCH_SLOTS];
	unsigned int watch_next;
	int watch_state;           /* 0 works, else -errno of cachestat */
	uint64_t evicted_seen;
	double last_watch;
	uint64_t bytes_at_check;   /* c->bytes at the last watch_check() */
	/* the log of wanted runs: per file, path length, path, runs, end mark */
	FILE *log;
	uint64_t log_prev;         /* end of the last run logged for the file */
	/* progress, rate */
	double start, elapsed, last_progress;
	uint64_t done_base;        /* bytes read before the current pc_warm() */
	struct progress progress;
	volatile int cancel;
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
	double last_watch_add;
	const char *gentle;
};

/* SIGINT, SIGTERM: restore stops reading, waits for what it queued and
 * prints its summary ("stopped early: interrupted by a signal"); a second
 * one kills at once. A signal the caller ignores stays ignored. */
static volatile sig_atomic_t got_signal;

static void on_signal(int sig)
{
	got_signal = sig;
}

static const char restore_usage[] =
	"Usage: pagecache restore [OPTIONS] [FILE]\n"
	"\n"
	"Bring the pages recorded in FILE (default: pagecache.snapshot, or\n"
	".happycache.gz with --format=happycache; '-': standard input) back into\n"
	"the page cache. Only pages that are not already resident are read;\n"
	"files are opened beneath the root only.\n"
	"\n"
	"      --root DIR          restore beneath DIR (default: the root recorded\n"
	"                          in the snapshot; for happycache files the current\n"
	"                          directory)\n"
	"      --no-find-renamed   do not look for missing files by their recorded\n"
	"                          device and inode (renamed, or another hard link)\n"
	"      --strict            skip files whose size or mtime changed since the\n"
	"                          dump (default: restore them, and name them)\n"
	"      --max-bytes SIZE    read at most SIZE (K, M, G, T suffixes). Default:\n"
	"                          the memory available (MemAvailable, and the room\n"
	"                          left in the memory cgroup)\n"
	"      --fast              full speed: without it, I/O priority idle and\n"
	"                          SCHED_IDLE, so that a live system comes first\n"
	"      --rate MB           read at most MB megabytes (10^6 bytes) per second\n"
	"      --strategy S        readahead (default: readahead(2) in 2 MiB chunks),\n"
	"                          stream (large holes as RWF_NOWAIT reads that start\n"
	"                          the kernel's own readahead, 6.12+: less CPU; the\n"
	"                          rest as readahead) or io_uring (reads at queue\n"
	"                          depth 8, waited for)\n"
	"      --chunk SIZE        bytes per readahead(2) call or io_uring read\n"
	"                          (default 2M)\n"
	"      --queue-depth N     io_uring reads in flight, 1 to 256 (default 8)\n"
	"      --order O           auto (default: disk on a rotating disk, else file),\n"
	"                          file (files in the snapshot's order), disk (small\n"
	"                          files by the disk address of their first wanted\n"
	"                          page, FIEMAP, up to 65536 at a time) or physical\n"
	"                          (files and runs sorted by their place on the disk;\n"
	"                          holds the whole snapshot's runs in memory)\n"
	"      --format F          auto (default: gzip's magic means happycache;\n"
	"                          needs a seekable FILE), native or happycache\n"
	"      --json              print the summary as one JSON object\n"
	"                          (format_version 1, fields in pagecache(1))\n"
	"  -q, --quiet             no progress line, no per-file notes\n"
	"  -h, --help              show this help\n"
	"\n"
	"Restore stops early when its budget is spent, or when cachestat(2) shows\n"
	"the pages it restored being evicted again (the cache is full).\n"
	"\n"
	"Exit status: 0 done (files skipped for a reason included), 1 a corrupt\n"
	"snapshot, a refused path, a read error, 2 usage error.\n";

enum {
	OPT_ROOT = 256, OPT_STRICT, OPT_MAX_BYTES, OPT_FAST, OPT_RATE, OPT_STRATEGY,
	OPT_ORDER, OPT_FORMAT, OPT_JSON, OPT_CHUNK, OPT_QUEUE_DEPTH, OPT_NO_FIND_RENAMED,
};

static const struct option restore_options[] = {
	{ "root", required_argument, NULL, OPT_ROOT },
	{ "strict", no_argument, NULL, OPT_STRICT },
	{ "max-bytes", required_argument, NULL, OPT_MAX_BYTES },
	{ "fast", no_argument, NULL, OPT_FAST },
	{ "rate", required_argument, NULL, OPT_RATE },
	{ "strategy", required_argument, NULL, OPT_STRATEGY },
	{ "order", required_argument, NULL, OPT_ORDER },
	{ "chunk", required_argument, NULL, OPT_CHUNK },
	{ "queue-depth", required_argument, NULL, OPT_QUEUE_DEPTH },
	{ "no-find-renamed", no_argument, NULL, OPT_NO_FIND_RENAMED },
	{ "format", required_argument, NULL, OPT_FORMAT },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* ---- progress, rate, notes ---- */

static void progress_tick(struct restore *c, uint64_t done, double t)
{
	char b[32], r[32];

	if (!progress_due(&c->progress))
		return;
	human_bytes(done, b, sizeof(b));
	human_bytes((uint64_t)((double)done / (t - c->start)), r, sizeof(r));
	progress_show(&c->progress, "restore: %llu files, %s read, %s/s",
		      (unsigned long long)c->files, b, r);
}

static void note(struct restore *c, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void note(struct restore *c, const char *path, const char *fmt, ...)
{
	va_list ap;

	if (c->quiet)
		return;
	va_start(ap, fmt);
	progress_note(&c->progress, &c->warned, "notes", path, path ? strlen(path) : 0, fmt, ap);
	va_end(ap);
}

/* ---- the eviction watch ---- */

static void watch_free(struct restore *c)
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
static void on_progress(uint64_t bytes_done, void *arg)
{
	struct restore *c = arg;
	uint64_t done = c->done_base + bytes_done;
	double t = now_seconds();

	if (got_signal) {
		c->stop = STOP_SIGNAL;
		c->cancel = 1;
		return;
	}
	if (c->rate) {
		double due = (double)done / (double)c->rate - (t - c->start);

		while (due > 0 && !got_signal) {
			double step = due > 0.2 ? 0.2 : due;
			struct timespec ts = {
				(time_t)step, (long)((step - (double)(time_t)step) * 1e9)
			};

			nanosleep(&ts, NULL);
			due -= step;
		}
		t = now_seconds();
	}
	if (t - c->last_watch >= 0.2) {
		c->last_watch = t;
		if (watch_check(c)) {
			c->stop = STOP_EVICTING;
			c->cancel = 1;
		}
	}
	progress_tick(c, done, t);
}

/* ---- warming ---- */

/* What measure() learnt of a logged file, by its place in the log. */
enum { FILE_PENDING, FILE_COMPLETE, FILE_UNKNOWN, FILE_GONE };

static int set_state(struct restore *c, size_t i, int state);
static int file_state(struct restore *c, size_t i);

/* The fds kept: as many as RLIMIT_NOFILE allows (raised to its hard limit)
 * with room left for the rest (two batches of files in flight, 512, and
 * the snapshot, the root, the log, the eviction watch), at most KEPT_MAX. */
#define KEPT_MAX 65536
#define KEPT_SPARE 1024

static void kept_init(struct restore *c)
{
	struct rlimit rl;

	c->kept_max = 0;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
		getrlimit(RLIMIT_NOFILE, &rl);
	}
	if (rl.rlim_cur > KEPT_SPARE)
		c->kept_max = rl.rlim_cur - KEPT_SPARE > KEPT_MAX ? KEPT_MAX
			: (size_t)(rl.rlim_cur - KEPT_SPARE);
}

/* Keep fd as logged file i's, or close it. */
static void keep_fd(struct restore *c, size_t i, int fd)
{
	if (i >= c->kept_max) {
		close(fd);
		return;
	}
	if (i >= c->nkept) {
		size_t cap = c->nkept ? c->nkept * 2 : 1024;
		int *k;

		while (cap <= i)
			cap *= 2;
		if (cap > c->kept_max)
			cap = c->kept_max;
		k = realloc(c->kept, cap * sizeof(*k));
		if (!k) {
			close(fd);
			return;
		}
		for (size_t j = c->nkept; j < cap; j++)
			k[j] = -1;
		c->kept = k;
		c->nkept = cap;
	}
	if (c->kept[i] >= 0)
		close(c->kept[i]);
	c->kept[i] = fd;
}

static int kept_fd(const struct restore *c, size_t i)
{
	return i < c->nkept ? c->kept[i] : -1;
}

static void drop_fd(struct restore *c, size_t i)
{
	if (i < c->nkept && c->kept[i] >= 0) {
		close(c->kept[i]);
		c->kept[i] = -1;
	}
}

static void kept_free(struct restore *c)
{
	for (size_t i = 0; i < c->nkept; i++)
		if (c->kept[i] >= 0)
			close(c->kept[i]);
	free(c->kept);
	c->kept = NULL;
	c->nkept = 0;
}

/* The log lives in memory (a memfd: no /tmp needed, gone at exit). */
static FILE *log_open(void)
{
	int fd = memfd_create("pagecache-restore-log", MFD_CLOEXEC);
	FILE *f;

	if (fd < 0)
		return NULL;
	f = fdopen(fd, "w+");
	if (!f)
		close(fd);
	return f;
}

static int log_path(struct restore *c, const char *rel)
{
	uint32_t n = (uint32_t)strlen(rel);

	c->log_prev = 0;
	if (fwrite(&n, sizeof(n), 1, c->log) != 1 || fwrite(rel, 1, n, c->log) != n)
		return -EIO;
	return 0;
}

static int put_varint(FILE *f, uint64_t v)
{
	while (v >= 0x80) {
		if (putc_unlocked((int)(v & 0x7f) | 0x80, f) == EOF)
			return -EIO;
		v >>= 7;
	}
	return putc_unlocked((int)v, f) == EOF ? -EIO : 0;
}

static int get_varint(FILE *f, uint64_t *v)
{
	*v = 0;
	for (unsigned int shift = 0; shift < 64; shift += 7) {
		int b = getc_unlocked(f);

		if (b == EOF)
			return -EIO;
		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return 0;
	}
	return -EIO;
}

/* Runs as (gap from the previous run's end, npages) varints, as in the
 * snapshot itself: 2 to 3 bytes a run. (0, 0) ends a file. */
static int log_runs(struct restore *c, const struct pc_run *runs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (put_varint(c->log, runs[i].page - c->log_prev) < 0 ||
		    put_varint(c->log, runs[i].npages) < 0)
			return -EIO;
		c->log_prev = runs[i].page + runs[i].npages;
	}
	return 0;
}

static int log_end(struct restore *c)
{
	if (put_varint(c->log, 0) < 0 || put_varint(c->log, 0) < 0)
		return -EIO;
	return 0;
}

/* The next logged run of a file: 1, 0 at its end, -EIO. */
static int log_next(struct restore *c, uint64_t *prev, struct pc_run *run)
{
	uint64_t gap, n;

	if (get_varint(c->log, &gap) < 0 || get_varint(c->log, &n) < 0)
		return -EIO;
	if (n == 0)
		return 0;
	run->page = *prev + gap;
	run->npages = n;
	*prev = run->page + n;
	return 1;
}

/* Clamp runs to eof_page, adding the pages asked for to *wanted and those
 * beyond the end to *beyond; returns the new n. */
static size_t clamp_runs(struct pc_run *runs, size_t n, uint64_t eof_page, uint64_t *wanted,
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

static size_t clamp(struct restore *c, struct pc_run *runs, size_t n, uint64_t eof_page)
{
	return clamp_runs(runs, n, eof_page, &c->wanted, &c->beyond_eof);
}

/* The file is the one recorded: same size and mtime, or no identity kept. */
static bool same_file(bool identity, uint64_t size, int64_t mtime_ns, const struct stat *st)
{
	return !identity || ((uint64_t)st->st_size == size &&
			     (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec ==
			     mtime_ns);
}

static int warm_account(struct restore *c, int fd, const char *rel, const struct pc_run *runs,
			size_t n, int64_t got, const struct pc_warm_stats *stp);

/* pc_warm() on runs (ascending, within the file) of fd. */
static int warm(struct restore *c, int fd, const char *rel, const struct pc_run *runs, size_t n)
{
	struct pc_warm_opts o = { .size = sizeof(o) };
	struct pc_warm_stats st = { .size = sizeof(st) };
	int64_t got;

	if (!n || c->stop || c->file_failed)
		return 0;
	if (c->budget == 0) {
		c->stop = STOP_BUDGET;
		return 0;
	}
	o.strategy = c->strategy;
	o.chunk_bytes = c->chunk;
	o.queue_depth = c->queue_depth;
	o.max_bytes = c->budget == UINT64_MAX ? 0 : c->budget;
	o.progress = on_progress;
	o.progress_arg = c;
	o.cancel = &c->cancel;
	got = pc_warm(fd, runs, n, &o, &st);
	return warm_account(c, fd, rel, runs, n, got, &st);
}

/* What pc_warm() did for runs of fd: the counts, the budget, the notes,
 * the eviction watch. */
static int warm_account(struct restore *c, int fd, const char *rel, const struct pc_run *runs,
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
		c->stop = STOP_BUDGET;
	if (got == -ECANCELED)
		return 0; /* c->stop says why */
	if (got < 0) {
		/* counted; the rest of this file is left, the next one tried */
		c->read_error = (int)got;
		c->file_failed = true;
		note(c, rel, "read error: %s", strerror((int)-got));
		return 0;
	}
	/* the head of what was read: reclaim takes the oldest pages first,
	 * and cachestat's cost grows with the folios it counts (readahead
	 * makes 4 KiB ones: 83 ms for 1 GiB here), so at most 64 MiB */
	/* small files: one range a tenth of a second is enough to see it */
	if (st.pages_read && (st.pages_read * c->ps >= (UINT64_C(16) << 20) ||
			      now_seconds() - c->last_watch_add >= 0.1)) {
		uint64_t end = runs[n - 1].page + runs[n - 1].npages;
		uint64_t cap = (UINT64_C(64) << 20) / c->ps;

		c->last_watch_add = now_seconds();

		watch_add(c, fd, runs[0].page, end - runs[0].page > cap ? runs[0].page + cap : end);
	}
	/* every 0.2 s, and every 32 MiB read: a fast restore fills a small
	 * cgroup in less than 0.2 s */
	if (!c->stop && (now_seconds() - c->last_watch >= 0.2 ||
			 c->bytes - c->bytes_at_check >= (UINT64_C(32) << 20))) {
		c->last_watch = now_seconds();
		c->bytes_at_check = c->bytes;
		if (watch_check(c))
			c->stop = STOP_EVICTING;
	}
	if (got_signal && !c->stop)
		c->stop = STOP_SIGNAL;
	return 0;
}

/* The recorded path as a path beneath the root: "x" stays; an absolute
 * happycache path must start with the root. NULL: outside. */
static const char *relative(struct restore *c, const char *path)
{
	size_t n = strlen(c->root);

	if (path[0] != '/')
		return path;
	if (strcmp(c->root, "/") == 0)
		return path + 1;
	if (strncmp(path, c->root, n) != 0 || path[n] != '/')
		return NULL;
	return path + n + 1;
}

static void open_failed(struct restore *c, const char *rel, int fd, const struct snap_file *f,
			uint64_t index);

/* Open a recorded file, or count why not: fd, or -1 when skipped. */
static int open_file(struct restore *c, const struct snap_file *f, const char **relp,
		     struct stat *st)
{
	const char *rel = relative(c, f->path);
	int fd;

	if (!rel) {
		c->skipped[SKIP_REFUSED]++;
		note(c, f->path, "refused: not beneath the root %s", c->root);
		return -1;
	}
	*relp = rel;
	fd = beneath_open(&c->bn, rel, st);
	if (fd >= 0)
		return fd;
	open_failed(c, rel, fd, f, c->files - 1);
	return -1;
}

/* Remember a file missing from its path, for find_renamed(): where its
 * device and inode were recorded, and the snapshot can be read again.
 * true when it is (its note waits for the search). */
static bool lost_add(struct restore *c, const struct snap_file *f, const char *rel,
		     uint64_t index)
{
	size_t len = strlen(rel) + 1;
	struct lost *l;

	if (!f || !f->identity || (!f->dev && !f->ino) || !c->can_reread ||
	    c->no_find_renamed || c->nlost >= LOST_MAX || c->lost_bytes + len > LOST_PATH_BYTES)
		return false;
	if (c->nlost == c->caplost) {
		size_t cap = c->caplost ? c->caplost * 2 : 64;

		l = realloc(c->lost, cap * sizeof(*l));
		if (!l)
			return false;
		c->lost = l;
		c->caplost = cap;
	}
	l = &c->lost[c->nlost];
	l->rel = strdup(rel);
	if (!l->rel)
		return false;
	l->found = NULL;
	c->lost_bytes += len;
	l->dev = f->dev;
	l->ino = f->ino;
	l->index = index;
	c->nlost++;
	return true;
}

/* Count (and note) why rel could not be opened: fd is beneath_open's -errno;
 * f (NULL: not known) the file as recorded, index its place. */
static void open_failed(struct restore *c, const char *rel, int fd, const struct snap_file *f,
			uint64_t index)
{
	switch (fd) {
	case -ENOENT:
		c->skipped[SKIP_MISSING]++;
		if (!lost_add(c, f, rel, index))
			note(c, rel, "skipped: missing");
		break;
	case -EINVAL:
	case -ENAMETOOLONG:
	case -EXDEV:
	case -ELOOP:
		c->skipped[SKIP_REFUSED]++;
		note(c, rel, "refused: %s", fd == -EXDEV ? "it resolves outside the root"
		     : fd == -ELOOP ? "a symlink (leaving the root, or met in a component walk)"
		     : fd == -ENAMETOOLONG ? "a name too long (a component of more than NAME_MAX bytes)"
		     : "an unsafe path (absolute, or with '..')");
		break;
	case -EBADFD:
	case -EISDIR:
	case -ENOTDIR:
		c->skipped[SKIP_NOT_REGULAR]++;
		note(c, rel, "skipped: not a regular file");
		break;
	default:
		c->skipped[SKIP_ERROR]++;
		note(c, rel, "skipped: %s", strerror(-fd));
		break;
	}
}

/* true when the file is the one recorded, or has no identity recorded */
static bool identity_ok(struct restore *c, const struct snap_file *f, const char *rel,
			const struct stat *st)
{
	if (same_file(f->identity, f->size, f->mtime_ns, st))
		return true;
	if (c->changed < CHANGED_NAMES)
		c->changed_names[c->changed] = strdup(rel);
	c->changed++;
	if (c->strict)
		c->skipped[SKIP_CHANGED]++;
	return false;
}

/* After the file is opened and its identity checked: log its runs (seed
 * first, then the rest of the snapshot's), warm them in batches, keep fd. */
static int restore_streaming(struct restore *c, const char *rel, int fd, const struct stat *st,
			     struct pc_run *batch, size_t n)
{
	uint64_t eof_page = ((uint64_t)st->st_size + c->ps - 1) / c->ps;
	bool more = true;
	int ret;

	c->files_restored++;
	c->file_failed = false;
	c->file_logged = c->file_seen = 0;
	ret = log_path(c, rel);
	while (ret == 0) {
		if (more && n < BATCH_RUNS) {
			int got = snapsrc_next_run(c->src, &batch[n]);

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
			n = clamp(c, batch, n, eof_page);
			for (size_t k = 0; k < n; k++)
				c->file_logged += batch[k].npages;
			ret = log_runs(c, batch, n);
			if (ret == 0 && !c->stop)
				ret = warm(c, fd, rel, batch, n);
			n = 0;
		}
		if (!more)
			break;
	}
	if (ret < 0) {
		close(fd);
		return ret;
	}
	ret = log_end(c);
	/* every page was resident when pc_warm() looked: the final
	 * measurement need not open this file again */
	if (ret == 0 && c->file_logged == c->file_seen) {
		close(fd);
		ret = set_state(c, c->files_restored - 1, FILE_COMPLETE);
	} else {
		keep_fd(c, c->files_restored - 1, fd);
	}
	return ret;
}

/*
 * Many small files: the opening beneath the root, the identity check and
 * pc_warm() of up to JOB_FILES files (JOB_RUNS runs) at a time run on
 * JOB_THREADS threads; the counting, notes and the log follow in the
 * snapshot's order on the main thread, as if one thread had done it all.
 * The main thread does that for one batch (and looks at the files of
 * earlier ones, early_confirm()) while the workers go on with the next:
 * the disk gets a steady stream of reads, not one burst per batch. A batch
 * runs on one thread, file by file and counted as it goes, when it could
 * reach the budget, under --rate, or before the open method is known.
 */
#define JOB_FILES 256
#define JOB_RUNS 4096
#define JOB_THREADS 4

/*
 * Early confirmation: the small files of a batch are looked at with
 * quick_look() EARLY_LAG batches later, on the main thread while the
 * workers open and warm the next batch. By then their reads have mostly
 * landed; a file seen complete is closed and measure() never opens it
 * again. One that is not complete yet is left to measure().
 */
#define EARLY_LAG 2
#define EARLY_FILES (JOB_FILES * (EARLY_LAG + 1))

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

#ifndef MAP_FIXED_NOREPLACE
/* most architectures' value; where it is not, mmap fails and quick_look() looks */
#define MAP_FIXED_NOREPLACE 0x100000
#endif
#define EARLY_VEC_PAGES 16384      /* pages one early_look_mapped() pass maps */

static int quick_look(struct restore *c, int fd, struct pc_run run, bool truthful);

/* Whether this process is in the initial user namespace, where every id is
 * mapped (its uid_map covers all 2^32 - 1 ids). */
static bool initial_user_ns(void)
{
	unsigned long inside, outside, count, total = 0;
	FILE *f = fopen("/proc/self/uid_map", "re");

	if (!f)
		return false;
	while (fscanf(f, "%lu %lu %lu", &inside, &outside, &count) == 3)
		total += count;
	fclose(f);
	return total >= 4294967295UL;
}

/*
 * Whether mincore tells this process the truth about every file: where it
 * has no gate, or with CAP_FOWNER in the initial user namespace, where the
 * gate's owner-or-capable test passes for every inode that has an owner
 * (mincore_truthful() says which has none). Asked once: restore changes
 * neither its credentials nor its namespace.
 */
static bool mincore_truthful_everywhere(void)
{
	int mode = pc_detect_mincore();

	if (mode == PC_MINCORE_FULL)
		return true;
	if (mode != PC_MINCORE_GATED_FAKED && mode != PC_MINCORE_GATED_MAPPED)
		return false;
	return cap_effective(CAP_FOWNER) && initial_user_ns();
}

/* The id the kernel shows for ids without a mapping (65534 unless changed). */
static uid_t overflow_uid(void)
{
	unsigned long id = 65534;
	FILE *f = fopen("/proc/sys/kernel/overflowuid", "re");

	if (f) {
		if (fscanf(f, "%lu", &id) != 1)
			id = 65534;
		fclose(f);
	}
	return (uid_t)id;
}

/*
 * Whether mincore tells the truth about fd, owned by owner as fstat shows
 * it ((uid_t)-1: fstat is asked). The answer for every file leaves out
 * files shown owned by the overflow id: on an idmapped mount that is an
 * owner its idmap does not map, and then CAP_FOWNER does not pass (mincore
 * faked every page for root there); pc_can_do_mincore() tells them apart,
 * at five system calls or more (it reads the id map each time, and the
 * mount table for such a file).
 */
static bool mincore_truthful(const struct restore *c, int fd, uid_t owner)
{
	int mode = pc_detect_mincore();
	struct stat st;

	if (mode == PC_MINCORE_FULL)
		return true;
	if (mode != PC_MINCORE_GATED_FAKED && mode != PC_MINCORE_GATED_MAPPED)
		return false;
	if (c->mincore_everywhere && owner == (uid_t)-1 && fstat(fd, &st) == 0)
		owner = st.st_uid;
	if (c->mincore_everywhere && owner != (uid_t)-1 && owner != c->overflow_uid)
		return true;
	return pc_can_do_mincore(fd) == 1;
}

/* Queue logged file i for a look, if its runs are few and small: its fd
 * kept, or map (its runs side by side in a batch's map, job_map()). */
static void early_add(struct restore *c, size_t i, const struct pc_run *runs, size_t n,
		      uid_t owner, const char *map)
{
	struct early *e;

	/* a file in a map is looked at there: without its fd */
	if (!n || n > PRECHECK_RUNS || (kept_fd(c, i) < 0 && !map) || c->nearly == EARLY_FILES)
		return;
	for (size_t k = 0; k < n; k++)
		if (runs[k].npages * c->ps > QUICK_RUN_BYTES)
			return;
	if (!c->early) {
		c->early = malloc(EARLY_FILES * sizeof(*c->early));
		if (!c->early)
			return; /* measure() does it all */
	}
	e = &c->early[c->nearly++];
	e->file = i;
	e->batch = c->batches;
	/* job_map() maps only what mincore tells the truth about */
	e->truthful = map || mincore_truthful(c, kept_fd(c, i), owner);
	e->map = map;
	e->seen = -1;
	e->nruns = (unsigned int)n;
	memcpy(e->run, runs, n * sizeof(*runs));
}

/* Pages of the runs of e. */
static uint64_t early_pages(const struct early *e)
{
	uint64_t n = 0;

	for (unsigned int k = 0; k < e->nruns; k++)
		n += e->run[k].npages;
	return n;
}

/*
 * quick_look()'s mincore for many files at once: the runs of early[from,
 * to) that mincore tells the truth about are mapped PROT_NONE one right
 * after the other, in a hole the kernel picked (reserved, then given
 * back), and one mincore and one munmap cover them all: 7.3 us a file
 * instead of 10.6 with a mapping each (5,000 cached files of 4-64 KiB).
 * MAP_FIXED_NOREPLACE refuses a place another thread took in between (a
 * kernel before 4.17 takes it as a hint, and the address tells); the
 * files not mapped keep seen -1. false when none was asked: the caller
 * leaves the rest to quick_look().
 */
static bool early_look_mapped(struct restore *c, size_t from, size_t to)
{
	unsigned char vec[EARLY_VEC_PAGES];
	uint64_t pages = 0, at = 0;
	size_t end = from, mapped;
	bool asked;
	char *base;

	for (size_t i = from; i < to; i++)
		if (!c->early[i].map)
			c->early[i].seen = -1; /* else early_look_maps() looked */
	for (; end < to; end++) {
		const struct early *e = &c->early[end];

		if (!e->truthful || e->map || kept_fd(c, e->file) < 0)
			continue;
		if (pages + early_pages(e) > EARLY_VEC_PAGES)
			break;
		pages += early_pages(e);
	}
	if (!pages)
		return false;
	base = mmap(NULL, (size_t)(pages * c->ps), PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (base == MAP_FAILED)
		return false;
	munmap(base, (size_t)(pages * c->ps));
	for (mapped = from; mapped < end; mapped++) {
		const struct early *e = &c->early[mapped];
		int fd = kept_fd(c, e->file);
		uint64_t k;

		if (!e->truthful || e->map || fd < 0)
			continue;
		for (k = 0; k < e->nruns; k++) {
			size_t len = (size_t)(e->run[k].npages * c->ps);
			char *m = mmap(base + at * c->ps, len, PROT_NONE,
				       MAP_SHARED | MAP_FIXED_NOREPLACE, fd,
				       (off_t)(e->run[k].page * c->ps));

			if (m != base + at * c->ps) {
				if (m != MAP_FAILED)
					munmap(m, len);
				break;
			}
			at += e->run[k].npages;
		}
		if (k < e->nruns)
			break; /* this file's mapped runs are unmapped below */
	}
	if (!at)
		return false;
	asked = mincore(base, (size_t)(at * c->ps), vec) == 0;
	if (asked) {
		uint64_t p = 0;

		for (size_t i = from; i < mapped; i++) {
			struct early *e = &c->early[i];
			uint64_t n = early_pages(e);

			if (!e->truthful || e->map || kept_fd(c, e->file) < 0)
				continue;
			e->seen = 1;
			for (uint64_t q = 0; q < n; q++)
				if (!(vec[p + q] & 1))
					e->seen = 0;
			p += n;
		}
	}
	munmap(base, (size_t)(at * c->ps));
	return asked;
}

/* Batch map k unmapped; the files in it not looked at yet forget it (the
 * early look maps them itself then). */
static void map_drop(struct restore *c, size_t k)
{
	struct mapreg *r = &c->reg[k];
	uintptr_t lo = (uintptr_t)r->base, hi = lo + (uintptr_t)(r->pages * c->ps);

	/* the files looked at in it keep their map as a mark that they were
	 * (early_confirm() takes them right after; it is not read again) */
	for (size_t i = 0; i < c->nearly; i++) {
		struct early *e = &c->early[i];

		if (e->map && e->seen < 0 && (uintptr_t)e->map >= lo && (uintptr_t)e->map < hi)
			e->map = NULL;
	}
	if (!r->holey)
		munmap(r->base, (size_t)(r->pages * c->ps));
	c->reg[k] = c->reg[--c->nreg];
}

/* Keep a warmed batch's map for the early look of its files; the oldest
 * one goes when there is no room (none should be left by then). */
static void map_keep(struct restore *c, char *base, uint64_t pages, bool holey)
{
	if (c->nreg == MAP_REGS) {
		size_t old = 0;

		for (size_t k = 1; k < c->nreg; k++)
			if (c->reg[k].batch < c->reg[old].batch)
				old = k;
		map_drop(c, old);
	}
	c->reg[c->nreg++] = (struct mapreg){ .base = base, .pages = pages, .batch = c->batches,
					     .holey = holey };
}

/* Whether e's runs are all up to date in map r, as mincore answered
 * into c->mapvec for it: 1 or 0; -1 when e is not in r. */
static int map_complete(const struct restore *c, const struct mapreg *r, const struct early *e)
{
	uintptr_t lo = (uintptr_t)r->base, at = (uintptr_t)e->map;
	uint64_t p, n;

	if (!e->map || at < lo || at >= lo + (uintptr_t)(r->pages * c->ps))
		return -1;
	p = (uint64_t)(at - lo) / c->ps;
	n = early_pages(e);
	for (uint64_t q = 0; q < n; q++)
		if (!(c->mapvec[p + q] & 1))
			return 0;
	return 1;
}

/*
 * The early look at the files of batch maps (job_map()) whose time has
 * come: one mincore for each whole map, which is then dropped. Its files
 * are mapped already, side by side: no mapping is made for the look.
 */
static void early_look_maps(struct restore *c, size_t due)
{
	for (size_t k = 0; k < c->nreg;) {
		struct mapreg *r = &c->reg[k];

		if (r->batch + EARLY_LAG > c->batches) {
			k++;
			continue;
		}
		if (mincore(r->base, (size_t)(r->pages * c->ps), c->mapvec) == 0) {
			for (size_t i = 0; i < due; i++) {
				int done = map_complete(c, r, &c->early[i]);

				if (done >= 0)
					c->early[i].seen = (signed char)done;
			}
		}
		map_drop(c, k); /* the last one moved to k */
	}
}

/* Every batch map dropped (the restore's end). */
static void maps_free(struct restore *c)
{
	while (c->nreg)
		map_drop(c, c->nreg - 1);
}

/*
 * The restore's end: the files of the maps still kept (the last batches,
 * whose early look never came) looked at in their maps, one mincore per
 * map, until they are all complete or a look 1 ms after the last finds
 * none more (50 at most): measure() would look at each file on its own.
 * Their reads were just queued, and land within milliseconds. What is
 * not complete then is left to measure(); the maps are dropped.
 */
static void early_finish(struct restore *c)
{
	for (int round = 0; round < 50 && c->nreg && !got_signal; round++) {
		size_t kept = 0, found = 0, left = 0;

		for (size_t k = 0; k < c->nreg; k++) {
			struct mapreg *r = &c->reg[k];

			if (mincore(r->base, (size_t)(r->pages * c->ps), c->mapvec) != 0)
				continue;
			for (size_t i = 0; i < c->nearly; i++) {
				struct early *e = &c->early[i];
				int done = map_complete(c, r, e);

				if (done < 0)
					continue;
				if (done && set_state(c, e->file, FILE_COMPLETE) == 0) {
					drop_fd(c, e->file);
					e->map = NULL;
					e->nruns = 0; /* done: dropped below */
					found++;
				} else {
					left++;
				}
			}
		}
		for (size_t i = 0; i < c->nearly; i++)
			if (c->early[i].nruns)
				c->early[kept++] = c->early[i];
		c->nearly = kept;
		if (!left || (round && !found))
			break;
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	}
	maps_free(c);
}

/* Look at the files queued EARLY_LAG batches ago or more. */
static void early_confirm(struct restore *c)
{
	size_t due = 0, done = 0;
	bool batched = true;

	if (!c->nearly) {
		/* c->early may be NULL: memmove() takes no NULL */
		for (size_t k = 0; k < c->nreg;)
			if (c->reg[k].batch + EARLY_LAG <= c->batches)
				map_drop(c, k);
			else
				k++;
		return;
	}
	while (due < c->nearly && c->early[due].batch + EARLY_LAG <= c->batches)
		due++;
	early_look_maps(c, due);
	while (done < due) {
		size_t from = done;

		if (batched)
			batched = early_look_mapped(c, from, due);
		for (; done < due; done++) {
			struct early *e = &c->early[done];
			int fd = kept_fd(c, e->file);
			unsigned int k = 0;

			if (fd < 0 && (!e->map || e->seen < 0))
				continue;
			if (e->seen < 0 && done > from && e->truthful && batched)
				break; /* not mapped this time: the next pass maps it */
			if (e->seen == 1)
				k = e->nruns;
			else if (e->seen < 0)
				for (; k < e->nruns; k++)
					if (quick_look(c, fd, e->run[k], e->truthful) != 1)
						break;
			if (k == e->nruns && set_state(c, e->file, FILE_COMPLETE) == 0)
				drop_fd(c, e->file);
		}
	}
	memmove(c->early, c->early + done, (c->nearly - done) * sizeof(*c->early));
	c->nearly -= done;
}

struct job {
	char *rel;
	struct snap_file rec;      /* as recorded (its path: rel) */
	uint64_t index;            /* its place in the snapshot */
	size_t run0, nruns;        /* in jobs.runs */
	/* the worker's part: job_open() (ahead, for a window), then pc_warm() */
	bool opened;               /* job_open() done: fd, st, same, ... are set */
	bool ready;                /* ... and it left runs to warm */
	bool reopen;               /* ... and fd closed again (no room to keep it) */
	bool closed;               /* ... and fd closed again (nothing to warm) */
	bool early;                /* job_account() queues it for early_confirm() */
	size_t logi;               /* job_account(): its place in the log */
	uint64_t key;              /* ORDER_DISK: the disk address of the first run */
	int fd;                    /* or beneath_open's -errno; -ECANCELED: not reached */
	struct stat st;
	bool same;                 /* identity as recorded (or none recorded) */
	uint64_t wanted, beyond;   /* pages, as clamp() counts them */
	size_t nclamped;
	bool warmed;
	int64_t got;
	struct pc_warm_stats ws;
	uint64_t slot;             /* its pages' place in the batch's map; UINT64_MAX: none */
	bool to_map;               /* job_do(): opened, for job_map() */
	char *map_at;              /* job_map(): its runs mapped there, side by side */
	uint64_t map_pages;
};

/* A job for the recorded file f, found at rel, the index-th of the
 * snapshot; the rest zero. 0 or -ENOMEM. */
static int job_init(struct job *j, const struct snap_file *f, const char *rel, uint64_t index)
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

/* What job_do() goes by: the workers read the restore's stop and budget
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

struct jobs {
	struct jobctx x;
	struct job job[JOB_FILES];
	size_t n;
	struct pc_run runs[JOB_RUNS];
	size_t nruns;
	uint64_t bound;            /* pages in the runs: the most it can read */
	uint64_t map_pages;        /* the slots of its small files' runs */
	size_t next;               /* the next job to take (atomic) */
	pthread_t tid[JOB_THREADS];
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

static bool cancelled(const struct restore *c)
{
	return __atomic_load_n(&c->cancel, __ATOMIC_RELAXED) || got_signal;
}

/* The first half of a job: the file opened beneath the root, its identity
 * checked, its runs clamped to its size (counted here, added up by the
 * main thread). Whether any are left to warm. */
static bool job_open(struct restore *c, struct job *j, struct pc_run *runs)
{
	j->opened = true;
	j->ready = false;
	j->fd = beneath_open(&c->bn, j->rel, &j->st);
	if (j->fd < 0)
		return false;
	j->same = same_file(j->rec.identity, j->rec.size, j->rec.mtime_ns, &j->st);
	if (!j->same && c->strict)
		return false;
	j->nclamped = clamp_runs(runs, j->nruns, ((uint64_t)j->st.st_size + c->ps - 1) / c->ps,
				 &j->wanted, &j->beyond);
	j->ready = j->nclamped > 0;
	return j->ready;
}

/* The file job_open() opened once more, into j->fd. Another one there
 * now (replaced in between) is taken as the batches would take it: its
 * identity checked, the runs clamped to its size (pages past the first
 * one's end stay counted beyond it). Whether any are left to warm. */
static bool job_reopen(struct restore *c, struct job *j, struct pc_run *runs)
{
	struct stat st;
	uint64_t wanted = 0;

	j->reopen = false;
	j->fd = beneath_open(&c->bn, j->rel, &st);
	if (j->fd < 0 || (st.st_dev == j->st.st_dev && st.st_ino == j->st.st_ino))
		return j->fd >= 0;
	j->st = st;
	j->same = same_file(j->rec.identity, j->rec.size, j->rec.mtime_ns, &st);
	if (!j->same && c->strict)
		return false;
	j->nclamped = clamp_runs(runs, j->nclamped, ((uint64_t)st.st_size + c->ps - 1) / c->ps,
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
static bool job_map(struct jobctx *x, struct job *j, const struct pc_run *runs)
{
	struct restore *c = x->c;
	char *at = x->map + j->slot * c->ps;
	uint64_t off = 0;

	if (!mincore_truthful(c, j->fd, j->st.st_uid))
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
static void job_warm(struct jobctx *x, struct job *j, struct pc_run *runs)
{
	struct restore *c = x->c;
	struct pc_warm_opts o = { .size = sizeof(o) };

	o.strategy = c->strategy;
	o.chunk_bytes = c->chunk;
	o.queue_depth = c->queue_depth;
	o.max_bytes = x->budget == UINT64_MAX ? 0 : x->budget;
	if (x->serial) {
		o.progress = on_progress;
		o.progress_arg = c;
	}
	o.cancel = &c->cancel;
	j->got = pc_warm(j->fd, runs, j->nclamped, &o, &j->ws);
	j->warmed = true;
}

/* Open (unless done ahead) and warm j, whose runs are runs; where the
 * batch has a map and j a slot in it, jobs_do_chunk() maps and warms it. */
static void job_do(struct jobctx *x, struct job *j, struct pc_run *runs)
{
	struct restore *c = x->c;

	j->ws = (struct pc_warm_stats){ .size = sizeof(j->ws) };
	if (x->serial) {
		/* job_account() of the last one may have stopped, or spent */
		x->stopped = c->stop != STOP_NONE;
		x->budget = c->budget;
	}
	if (x->stopped || cancelled(c)) {
		if (j->opened && j->fd >= 0)
			close(j->fd);
		j->fd = -ECANCELED;
		j->closed = false;
		return;
	}
	if (j->opened ? !j->ready : !job_open(c, j, runs))
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
	job_warm(x, j, runs);
}

/* The main thread's part of a job (runs: its runs), in the order of the
 * batches. */
static int job_account(struct restore *c, struct job *j, struct pc_run *runs)
{
	const struct snap_file *f = &j->rec;
	int ret;

	if (j->fd == -ECANCELED) {
		c->skipped[SKIP_NOT_REACHED]++;
		if (got_signal && !c->stop)
			c->stop = STOP_SIGNAL; /* the stop that cancelled it */
		return 0;
	}
	if (j->fd < 0 && !j->closed) {
		open_failed(c, j->rel, j->fd, f, j->index);
		return 0;
	}
	if (!identity_ok(c, f, j->rel, &j->st) && c->strict) {
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
	ret = log_path(c, j->rel);
	if (ret == 0)
		ret = log_runs(c, runs, j->nclamped);
	if (ret == 0 && j->warmed)
		ret = warm_account(c, j->fd, j->rel, runs, j->nclamped, j->got, &j->ws);
	else if (ret == 0 && j->nclamped && !c->stop && c->budget == 0)
		c->stop = STOP_BUDGET;
	if (ret == 0)
		ret = log_end(c);
	if (ret == 0 && c->file_logged == c->file_seen) {
		if (j->fd >= 0)
			close(j->fd);
		ret = set_state(c, c->files_restored - 1, FILE_COMPLETE);
	} else if (j->fd >= 0) {
		keep_fd(c, c->files_restored - 1, j->fd);
		if (ret == 0 && j->warmed && !c->file_failed && j->early)
			early_add(c, c->files_restored - 1, runs, j->nclamped, j->st.st_uid,
				  j->map_at);
	}
	if (got_signal && !c->stop)
		c->stop = STOP_SIGNAL;
	return ret;
}

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

/* Workers per batch: one per CPU, at most JOB_THREADS. */
static size_t job_threads(void)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	return cpus < 1 ? 1 : cpus > JOB_THREADS ? JOB_THREADS : (size_t)cpus;
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

/* Forget a batch: its names freed, its map unmapped unless map_keep()
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
 * Jobs [from, to) of the batch, done by one worker, and those job_map()
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
		job_do(&js->x, &js->job[i], js->runs + js->job[i].run0);
	for (size_t i = from; i < to; i++) {
		struct job *j = &js->job[i];
		struct pc_run *runs = js->runs + j->run0;

		if (j->to_map && !job_map(&js->x, j, runs))
			job_warm(&js->x, j, runs);
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
	stop = cancelled(c);
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
				job_warm(&js->x, m, runs);
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

	early_confirm(js->x.c);
	if (js->x.map) {
		/* kept for the early look of its files */
		map_keep(js->x.c, js->x.map, js->map_pages,
			 __atomic_load_n(&js->x.map_holey, __ATOMIC_RELAXED));
		js->x.map = NULL;
	}
	for (size_t i = 0; i < js->n; i++) {
		if (ret == 0)
			ret = job_account(js->x.c, &js->job[i], js->runs + js->job[i].run0);
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

	js->x.stopped = c->stop != STOP_NONE;
	js->x.budget = c->budget;
	if (c->budget != UINT64_MAX)
		js->x.budget = busy_bound > c->budget / c->ps ? 0 : c->budget - busy_bound * c->ps;
	js->x.serial = job_threads() == 1 || js->n == 1 || c->rate || c->bn.method == 0 ||
		(js->x.budget != UINT64_MAX && js->bound > js->x.budget / c->ps);
	js->next = 0;
	js->nt = 0;
	return js->x.serial;
}

/* The batch on up to JOB_THREADS workers, or here when none can be made;
 * with a map for its small files (job_map()) where the strategy reads
 * ahead (io_uring reads the pages itself). */
static void jobs_run_workers(struct jobs *js)
{
	struct restore *c = js->x.c;
	size_t nthreads = job_threads();

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

	early_confirm(js->x.c);
	for (size_t i = 0; i < js->n && ret == 0; i++) {
		job_do(&js->x, &js->job[i], js->runs + js->job[i].run0);
		ret = job_account(js->x.c, &js->job[i], js->runs + js->job[i].run0);
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

/*
 * --order=disk: the small files go to a window of up to WIN_FILES files
 * (WIN_RUNS runs) first. The workers open them all (job_open()) and ask
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
 * back sooner, though the command ended later (choose_order()).
 */
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

/* No room to keep j's fd until it is warmed: job_do() opens it again. */
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
	if (cancelled(c)) {
		j->opened = true;
		j->ready = false;
		j->fd = -ECANCELED;
		return;
	}
	if (job_open(c, j, runs))
		j->key = disk_address(j->fd, runs[0].page * c->ps, runs[0].npages * c->ps);
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
static struct job *win_add(struct win *w, const struct snap_file *f, const char *rel)
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
	if (job_init(j, f, rel, w->c->files - 1) < 0)
		return NULL;
	w->n++;
	return j;
}

/* After an error: the window's files closed and forgotten. */
static void win_drop(struct win *w)
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

		/* not coming (cachestat 0): settle() reads it again */
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

		job_do(&m->x, j, m->w->runs + j->run0);
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
 * small file warmed is looked at in that order (quick_look()), waiting for
 * a read still in flight; a file seen complete is closed and settle()
 * never looks at it again. The looks (10 us a file) run while the disk
 * works, instead of after it, where settle()'s first poll of 20,000 files
 * took 0.2 s; early_confirm() looked too soon here, while the reads were
 * still queued. Where mincore does not tell the truth settle() does it.
 */
static void win_follow(struct win *w, const struct win_key *keys)
{
	struct restore *c = w->c;

	for (size_t k = 0; k < w->n && !c->stop && !cancelled(c); k++) {
		const struct job *j = &w->job[keys[k].i];
		const struct pc_run *runs = w->runs + j->run0;
		int fd = j->warmed && j->got > 0 ? kept_fd(c, j->logi) : -1;
		bool truthful, complete = true;

		if (fd < 0 || file_state(c, j->logi) != FILE_PENDING || j->nclamped > PRECHECK_RUNS)
			continue;
		truthful = mincore_truthful(c, fd, j->st.st_uid);
		if (!truthful)
			continue;
		for (size_t r = 0; r < j->nclamped && complete; r++) {
			int q = quick_look(c, fd, runs[r], true);

			if (q == 0) {
				if (!wait_in_flight(c, fd, runs[r].page + runs[r].npages - 1))
					return; /* the disk stalls: settle() takes over */
				q = quick_look(c, fd, runs[r], true);
			}
			complete = q == 1;
		}
		if (complete && set_state(c, j->logi, FILE_COMPLETE) == 0)
			drop_fd(c, j->logi);
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
	m.x.stopped = c->stop != STOP_NONE;
	m.x.budget = c->budget;
	/* what the restore has not filled yet of the memory there was */
	if (c->mem_room / c->ps > c->read)
		room = c->mem_room / c->ps - c->read;
	/* or when it could fill half the memory left: pc_warm()'s progress
	 * calls on this thread run the eviction watch while it reads (a
	 * thread that sends it all out in a few ms leaves nothing for it to
	 * stop) */
	m.x.serial = job_threads() == 1 || c->rate ||
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
			job_do(&m.x, j, runs);
		}
		if (ret == 0)
			ret = job_account(c, j, runs);
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
static int win_flush(struct win *w)
{
	struct restore *c = w->c;
	struct win_key *keys;
	pthread_t tid[JOB_THREADS];
	size_t nt = 0, nthreads = job_threads(), kept;
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

/* A file of many runs (the first n in batch, the rest still in the
 * snapshot), after the batches before it: alone, streaming its runs. */
static int restore_alone(struct restore *c, struct jobq *q, const struct snap_file *f,
			 const char *rel, struct pc_run *batch, size_t n)
{
	struct stat st;
	int fd, ret = jobq_finish(q);

	if (ret < 0)
		return ret;
	if (c->stop) {
		c->skipped[SKIP_NOT_REACHED]++;
		return 0;
	}
	fd = beneath_open(&c->bn, rel, &st);
	if (fd < 0) {
		open_failed(c, rel, fd, f, c->files - 1);
		return 0;
	}
	if (!identity_ok(c, f, rel, &st) && c->strict) {
		close(fd);
		return 0;
	}
	return restore_streaming(c, rel, fd, &st, batch, n);
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

/* The snapshot in its order: one file, then the next (--order=file); or
 * the small files of a window in their order on the disk (--order=disk). */
static int restore_in_order(struct restore *c)
{
	struct pc_run *batch = malloc(BATCH_RUNS * sizeof(*batch));
	struct jobs *two = calloc(2, sizeof(*two));
	struct jobq q = { .fill = two, .other = two + 1 };
	struct win w = { .c = c };
	const struct snap_file *f;
	int ret;

	if (c->order == ORDER_DISK)
		w.runs = malloc(WIN_RUNS * sizeof(*w.runs));
	if (!batch || !two || (c->order == ORDER_DISK && !w.runs)) {
		free(batch);
		free(two);
		free(w.runs);
		return -ENOMEM;
	}
	two[0].x.c = two[1].x.c = c;
	while ((ret = snapsrc_next_file(c->src, &f)) > 0) {
		struct jobs *js = q.fill;
		const char *rel;
		struct job *j;
		size_t run0 = js->nruns;
		bool fits = true;
		int more;

		c->files++;
		if (got_signal && !c->stop)
			c->stop = STOP_SIGNAL;
		if (f->quality == PC_QUALITY_UNKNOWN) {
			c->skipped[SKIP_UNKNOWN]++;
			continue;
		}
		if (f->identity && f->npages == 0) {
			c->files_empty++;
			continue;
		}
		if (c->stop) {
			c->skipped[SKIP_NOT_REACHED]++;
			continue;
		}
		rel = relative(c, f->path);
		if (!rel) {
			/* notes stay in the snapshot's order (in disk order
			 * there is none to keep) */
			ret = w.runs ? 0 : jobq_finish(&q);
			if (ret < 0)
				break;
			c->skipped[SKIP_REFUSED]++;
			note(c, f->path, "refused: not beneath the root %s", c->root);
			continue;
		}
		if (w.runs) {
			/* its runs, into the window; a file of JOB_RUNS runs
			 * or more is warmed alone, as below */
			if (w.n == WIN_FILES || WIN_RUNS - w.nruns < JOB_RUNS) {
				ret = win_flush(&w);
				if (ret < 0)
					break;
			}
			run0 = w.nruns;
			while ((more = snapsrc_next_run(c->src, &w.runs[w.nruns])) > 0)
				if (++w.nruns - run0 == JOB_RUNS) {
					fits = false;
					break;
				}
			if (more < 0) {
				ret = more;
				break;
			}
			if (fits) {
				j = win_add(&w, f, rel);
				if (!j) {
					ret = -ENOMEM;
					break;
				}
				j->run0 = run0;
				j->nruns = w.nruns - run0;
				continue;
			}
			memcpy(batch, w.runs + run0, JOB_RUNS * sizeof(*batch));
			w.nruns = run0;
			ret = win_flush(&w);
			if (ret == 0)
				ret = restore_alone(c, &q, f, rel, batch, JOB_RUNS);
			if (ret < 0)
				break;
			continue;
		}
		/* its runs, into the batch while they fit */
		while ((more = snapsrc_next_run(c->src, &js->runs[js->nruns])) > 0) {
			js->bound += js->runs[js->nruns].npages;
			if (++js->nruns == JOB_RUNS) {
				fits = false;
				break;
			}
		}
		if (more < 0) {
			ret = more;
			break;
		}
		if (fits) {
			j = &js->job[js->n];
			ret = job_init(j, f, rel, c->files - 1);
			if (ret < 0)
				break;
			j->early = true;
			j->run0 = run0;
			j->nruns = js->nruns - run0;
			j->slot = map_slot(c, js, js->runs + run0, j->nruns);
			if (++js->n == JOB_FILES || js->nruns == JOB_RUNS)
				ret = jobq_flush(&q);
			if (ret < 0)
				break;
			continue;
		}
		/* a file of many runs: the batch first, then this file alone,
		 * from the runs read so far */
		{
			size_t n = js->nruns - run0;

			memcpy(batch, js->runs + run0, n * sizeof(*batch));
			js->nruns = run0;
			ret = restore_alone(c, &q, f, rel, batch, n);
			if (ret < 0)
				break;
		}
	}
	if (ret == 0)
		ret = win_flush(&w);
	if (ret == 0)
		ret = jobq_finish(&q);
	if (ret < 0) {
		win_drop(&w);
		jobq_drop(&q);
	}
	if (ret == 0)
		early_finish(c);
	maps_free(c);
	free(w.job);
	free(w.runs);
	free(batch);
	free(two);
	return ret;
}

/* ---- --order=physical ---- */

struct extent {
	uint64_t logical, physical, length;
};

/* The file's extents in logical order; *n 0 where FIEMAP is not supported. */
static int file_extents(int fd, uint64_t size, struct extent **out, size_t *n)
{
	enum { PER_CALL = 256 };
	size_t bytes = sizeof(struct fiemap) + PER_CALL * sizeof(struct fiemap_extent);
	struct fiemap *fm = malloc(bytes);
	struct extent *ex = NULL;
	size_t cap = 0;
	uint64_t start = 0;

	*n = 0;
	if (!fm)
		return -ENOMEM;
	while (start < size) {
		bool last = false;

		memset(fm, 0, bytes);
		fm->fm_start = start;
		fm->fm_length = size - start;
		fm->fm_extent_count = PER_CALL;
		if (ioctl(fd, FS_IOC_FIEMAP, fm) < 0)
			break; /* not supported here: no physical order for this file */
		if (fm->fm_mapped_extents == 0)
			break;
		for (unsigned int i = 0; i < fm->fm_mapped_extents; i++) {
			struct fiemap_extent *e = &fm->fm_extents[i];

			if (*n == cap) {
				struct extent *x;

				cap = cap ? cap * 2 : 64;
				x = realloc(ex, cap * sizeof(*x));
				if (!x) {
					free(ex);
					free(fm);
					return -ENOMEM;
				}
				ex = x;
			}
			/* delalloc and unknown extents have no place on disk yet */
			ex[(*n)++] = (struct extent){
				e->fe_logical,
				e->fe_flags & (FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_DELALLOC) ?
					UINT64_MAX : e->fe_physical,
				e->fe_length,
			};
			start = e->fe_logical + e->fe_length;
			if (e->fe_flags & FIEMAP_EXTENT_LAST)
				last = true;
		}
		if (last)
			break;
	}
	free(fm);
	*out = ex;
	return 0;
}

static int add_seg(struct pfile *pf, size_t *cap, uint64_t page, uint64_t npages, uint64_t phys)
{
	if (pf->nsegs == *cap) {
		size_t nc = *cap ? *cap * 2 : 16;
		struct seg *s = realloc(pf->segs, nc * sizeof(*s));

		if (!s)
			return -ENOMEM;
		pf->segs = s;
		*cap = nc;
	}
	pf->segs[pf->nsegs++] = (struct seg){ page, npages, phys };
	return 0;
}

/* Split the runs at extent boundaries, each piece with its disk address. */
static int split_runs(struct restore *c, struct pfile *pf, const struct pc_run *runs, size_t n,
		      const struct extent *ex, size_t nex, size_t *cap)
{
	size_t e = 0;

	for (size_t i = 0; i < n; i++) {
		uint64_t page = runs[i].page, end = page + runs[i].npages;

		while (page < end) {
			uint64_t off = page * c->ps, upto = end, phys = UINT64_MAX;
			int ret;

			while (e < nex && ex[e].logical + ex[e].length <= off)
				e++;
			if (e < nex && ex[e].logical <= off) {
				uint64_t ext_end = (ex[e].logical + ex[e].length + c->ps - 1) / c->ps;

				if (ext_end < upto)
					upto = ext_end;
				if (ex[e].physical != UINT64_MAX)
					phys = ex[e].physical + (off - ex[e].logical);
			} else if (e < nex) {
				uint64_t next = ex[e].logical / c->ps; /* a hole up to there */

				if (next > page && next < upto)
					upto = next;
			}
			ret = add_seg(pf, cap, page, upto - page, phys);
			if (ret < 0)
				return ret;
			page = upto;
		}
	}
	return 0;
}

static int seg_cmp(const void *pa, const void *pb)
{
	const struct seg *a = pa, *b = pb;

	if (a->phys != b->phys)
		return a->phys < b->phys ? -1 : 1;
	return a->page < b->page ? -1 : a->page > b->page;
}

static int pfile_cmp(const void *pa, const void *pb)
{
	const struct pfile *a = pa, *b = pb;

	return a->key < b->key ? -1 : a->key > b->key;
}

static int restore_physical(struct restore *c)
{
	struct pfile *files = NULL;
	size_t nfiles = 0, capfiles = 0;
	struct pc_run *runs = NULL, *group = NULL;
	size_t caprun = 0;
	const struct snap_file *f;
	int ret;

	/* pass 1: every file's runs, split by extent and sorted */
	while ((ret = snapsrc_next_file(c->src, &f)) > 0) {
		struct extent *ex = NULL;
		struct pfile pf = { 0 };
		const char *rel = NULL;
		size_t n = 0, nex = 0, capseg = 0;
		struct stat st;
		int fd, more;

		c->files++;
		if (f->quality == PC_QUALITY_UNKNOWN) {
			c->skipped[SKIP_UNKNOWN]++;
			continue;
		}
		if (f->identity && f->npages == 0) {
			c->files_empty++;
			continue;
		}
		fd = open_file(c, f, &rel, &st);
		if (fd < 0)
			continue;
		if (!identity_ok(c, f, rel, &st) && c->strict) {
			close(fd);
			continue;
		}
		for (;;) {
			if (n == caprun) {
				size_t cap = caprun ? caprun * 2 : 1024;
				struct pc_run *r = realloc(runs, cap * sizeof(*r));

				if (!r) {
					close(fd);
					ret = -ENOMEM;
					goto out;
				}
				runs = r;
				caprun = cap;
			}
			more = snapsrc_next_run(c->src, &runs[n]);
			if (more <= 0)
				break;
			n++;
		}
		if (more < 0) {
			close(fd);
			ret = more;
			goto out;
		}
		n = clamp(c, runs, n, ((uint64_t)st.st_size + c->ps - 1) / c->ps);
		ret = file_extents(fd, (uint64_t)st.st_size, &ex, &nex);
		close(fd);
		if (ret == 0)
			ret = split_runs(c, &pf, runs, n, ex, nex, &capseg);
		free(ex);
		pf.rel = strdup(rel);
		if (ret < 0 || !pf.rel) {
			free(pf.segs);
			free(pf.rel);
			ret = -ENOMEM;
			goto out;
		}
		pf.dev = st.st_dev;
		pf.ino = st.st_ino;
		if (pf.nsegs)
			qsort(pf.segs, pf.nsegs, sizeof(*pf.segs), seg_cmp);
		pf.key = pf.nsegs ? pf.segs[0].phys : UINT64_MAX;
		if (nfiles == capfiles) {
			size_t cap = capfiles ? capfiles * 2 : 256;
			struct pfile *p = realloc(files, cap * sizeof(*p));

			if (!p) {
				free(pf.segs);
				free(pf.rel);
				ret = -ENOMEM;
				goto out;
			}
			files = p;
			capfiles = cap;
		}
		files[nfiles++] = pf;
	}
	if (ret < 0)
		goto out;
	/* stable: files without a disk address keep the snapshot's order */
	for (size_t i = 0; i < nfiles; i++)
		if (files[i].key == UINT64_MAX)
			files[i].key = UINT64_MAX - nfiles + i;
	if (nfiles) /* qsort takes no NULL, even for 0 */
		qsort(files, nfiles, sizeof(*files), pfile_cmp);

	/* pass 2: in disk order; within a file, groups of segments that
	 * ascend in the file go to pc_warm() together */
	group = malloc(BATCH_RUNS * sizeof(*group));
	if (!group) {
		ret = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < nfiles; i++) {
		struct pfile *pf = &files[i];
		struct stat st;
		size_t ng = 0;
		int fd;

		if (c->stop || got_signal) {
			if (!c->stop)
				c->stop = STOP_SIGNAL;
			c->skipped[SKIP_NOT_REACHED]++;
			continue;
		}
		fd = beneath_open(&c->bn, pf->rel, &st);
		if (fd < 0 || st.st_dev != pf->dev || st.st_ino != pf->ino) {
			if (fd >= 0)
				close(fd);
			c->skipped[SKIP_ERROR]++;
			note(c, pf->rel, "skipped: replaced while the restore ran");
			continue;
		}
		c->files_restored++;
		c->file_failed = false;
		ret = log_path(c, pf->rel);
		for (size_t s = 0; s <= pf->nsegs && ret == 0; s++) {
			bool flush = s == pf->nsegs || ng == BATCH_RUNS ||
				(ng && pf->segs[s].page < group[ng - 1].page + group[ng - 1].npages);

			if (flush && ng) {
				ret = warm(c, fd, pf->rel, group, ng);
				ng = 0;
			}
			if (s < pf->nsegs)
				group[ng++] = (struct pc_run){ pf->segs[s].page, pf->segs[s].npages };
		}
		/* the log wants ascending runs: sort the pieces back */
		if (ret == 0) {
			struct pc_run r;

			for (size_t a = 1; a < pf->nsegs; a++) {
				struct seg t = pf->segs[a];
				size_t b = a;

				while (b > 0 && pf->segs[b - 1].page > t.page) {
					pf->segs[b] = pf->segs[b - 1];
					b--;
				}
				pf->segs[b] = t;
			}
			for (size_t s = 0; s < pf->nsegs && ret == 0; s++) {
				r = (struct pc_run){ pf->segs[s].page, pf->segs[s].npages };
				ret = log_runs(c, &r, 1);
			}
		}
		if (ret == 0)
			ret = log_end(c);
		close(fd);
		if (ret < 0)
			break;
	}
out:
	for (size_t i = 0; i < nfiles; i++) {
		free(files[i].rel);
		free(files[i].segs);
	}
	free(files);
	free(runs);
	free(group);
	return ret;
}

/* ---- the end: how much of what was wanted is resident ---- */


static int file_state(struct restore *c, size_t i)
{
	return i < c->nstate ? c->state[i] : FILE_PENDING;
}

static int set_state(struct restore *c, size_t i, int state)
{
	if (i >= c->nstate) {
		size_t cap = c->nstate ? c->nstate * 2 : 1024;
		uint8_t *st;

		while (cap <= i)
			cap *= 2;
		st = realloc(c->state, cap);
		if (!st)
			return -ENOMEM;
		memset(st + c->nstate, FILE_PENDING, cap - c->nstate);
		c->state = st;
		c->nstate = cap;
	}
	c->state[i] = (uint8_t)state;
	return 0;
}

/* Resident pages of the runs of one file, from r. */
static uint64_t resident_in(const struct pc_residency *r, struct pc_run run)
{
	struct pc_run res;
	uint64_t got = 0;

	for (uint64_t p = run.page; p < run.page + run.npages; p = res.page + res.npages) {
		if (pc_residency_next_run(r, p, &res) <= 0 || res.page >= run.page + run.npages)
			break;
		if (res.page < p) {
			res.npages -= p - res.page;
			res.page = p;
		}
		got += res.page + res.npages > run.page + run.npages ?
			run.page + run.npages - res.page : res.npages;
	}
	return got;
}

/* The exact measure of an open file from page from on, npages of it (0:
 * to its end): mincore where it tells the truth (pages up to date, not
 * those still being read in, which cachestat and pc_residency()'s uniform
 * chunks would count), else pc_residency(). */
static int residency_exact(const struct restore *c, int fd, uint64_t from, uint64_t npages,
			   struct pc_residency **r)
{
	int ret = pc_residency(fd, from * c->ps, npages * c->ps, PC_RES_FORCE_MINCORE, r);

	if (ret == -EOPNOTSUPP)
		ret = pc_residency(fd, from * c->ps, npages * c->ps, 0, r);
	return ret;
}

/* The first page of run that r does not hold resident; its end if none. */
static uint64_t first_missing(const struct pc_residency *r, struct pc_run run)
{
	uint64_t p = run.page, end = run.page + run.npages;
	struct pc_run res;

	while (p < end) {
		if (pc_residency_next_run(r, p, &res) <= 0 || res.page > p ||
		    res.page + res.npages <= p)
			return p;
		p = res.page + res.npages;
	}
	return end;
}

/* A measure of a file of at least MEMO_BYTES wanted polls from where the
 * last found a page missing: a 4 GiB file's mincore costs ~85 ms, and its
 * pages land from the front. A plain poll looks at MEMO_BYTES from there,
 * no further (the pages past them count as missing, and the memo moves to
 * the first one missing): it costs what landed since the last poll, not
 * what is left of the file. Not once the memo is stuck with pages still
 * coming past it (poll_whole): the polls must see those land. */
#define MEMO_BYTES (UINT64_C(64) << 20)

static size_t memo_find(const struct restore *c, size_t file)
{
	size_t lo = 0, hi = c->nmemo;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c->memo[mid].file < file)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static uint64_t memo_page(const struct restore *c, size_t file)
{
	size_t k = memo_find(c, file);

	return k < c->nmemo && c->memo[k].file == file ? c->memo[k].page : 0;
}

/* Remember page for file; without memory, nothing (polls measure whole). */
static void memo_set(struct restore *c, size_t file, uint64_t page)
{
	size_t k = memo_find(c, file);

	if (k < c->nmemo && c->memo[k].file == file) {
		c->memo[k].page = page;
		return;
	}
	if (c->nmemo == c->capmemo) {
		size_t cap = c->capmemo ? c->capmemo * 2 : 16;
		struct memo *m = realloc(c->memo, cap * sizeof(*m));

		if (!m)
			return;
		c->memo = m;
		c->capmemo = cap;
	}
	memmove(c->memo + k + 1, c->memo + k, (c->nmemo - k) * sizeof(*c->memo));
	c->memo[k] = (struct memo){ file, page };
	c->nmemo++;
}

/*
 * A quick look at a small run of an open file: 1 when every page of it is
 * in the page cache and up to date, 0 when not (yet), -1 when it cannot
 * tell (measure the file with pc_residency()).
 * - Where mincore tells this caller the truth (truthful: the kernel's gate
 *   passes, pc_can_do_mincore()), mincore through a fresh PROT_NONE
 *   mapping: it counts only pages up to date, and copies nothing.
 * - Else cachestat first (pages present, including pages still being read
 *   in); a run all present is then read with RWF_NOWAIT into a scratch
 *   buffer, which succeeds in full only when every page is up to date (a
 *   page still being read in makes it stop short or fail with EAGAIN).
 *   Nothing is read from the disk: every page was present a moment before
 *   (one evicted in between would be read back in by a kernel whose
 *   RWF_NOWAIT misses start readahead, 6.12+: a page the restore wants
 *   anyway). Copying pages fresh from the disk is what a restore of many
 *   small files spends most of its time on here, hence mincore first.
 */
static int quick_look(struct restore *c, int fd, struct pc_run run, bool truthful)
{
	uint64_t len = run.npages * c->ps;
	struct pc_cachestat cs;
	struct iovec iov;
	ssize_t got;
	int ret;

	if (len > QUICK_RUN_BYTES)
		return -1;
	if (truthful) {
		unsigned char vec[QUICK_RUN_BYTES / 4096];
		void *map = mmap(NULL, (size_t)len, PROT_NONE, MAP_SHARED, fd,
				 (off_t)(run.page * c->ps));

		if (map != MAP_FAILED) {
			ret = mincore(map, (size_t)len, vec);
			munmap(map, (size_t)len);
			if (ret == 0) {
				for (uint64_t k = 0; k < run.npages; k++)
					if (!(vec[k] & 1))
						return 0;
				return 1;
			}
		}
		/* no mapping (RLIMIT_AS, a filesystem without mmap): read */
	}
	if (!c->cachestat_ok || !c->nowait_ok)
		return -1;
	if (!c->scratch) {
		c->scratch = malloc(QUICK_RUN_BYTES);
		if (!c->scratch)
			return -1;
	}
	iov = (struct iovec){ c->scratch, (size_t)len };
	ret = pc_cachestat(fd, run.page * c->ps, len, &cs);
	if (ret == -ENOSYS)
		c->cachestat_ok = false;
	if (ret < 0)
		return -1;
	if (cs.cache < run.npages)
		return 0;
	got = preadv2(fd, &iov, 1, (off_t)(run.page * c->ps), RWF_NOWAIT);
	if (got < 0 && (errno == EOPNOTSUPP || errno == EINVAL || errno == ENOSYS)) {
		c->nowait_ok = false;
		return -1;
	}
	if (got < 0)
		return errno == EAGAIN ? 0 : -1;
	/* short mid-page: the end of the file, in the run's last page (a
	 * page not up to date stops a read at a page boundary) */
	if ((uint64_t)got == len || ((uint64_t)got > len - c->ps && (uint64_t)got % c->ps))
		return 1;
	return -1; /* short: the end of the file moved, or a page not up to date */
}

/* Whether cachestat counts fd's pages: not where it is missing, nor on
 * overlayfs (it counts the overlay inode's own, empty, mapping there). */
static bool cachestat_counts(const struct restore *c, int fd)
{
	return c->cachestat_ok && on_overlayfs(fd) == 0;
}

/*
 * Of run's pages that r does not hold resident, those not in the page
 * cache at all: neither up to date nor still being read in (cachestat
 * counts both), pages that will not come by themselves. -1 when cachestat
 * cannot tell (refused). Only where cachestat_counts().
 */
static int64_t absent_in(struct restore *c, int fd, const struct pc_residency *r,
			 struct pc_run run)
{
	uint64_t p = run.page, end = run.page + run.npages;
	int64_t absent = 0;

	while (p < end) {
		struct pc_cachestat cs;
		struct pc_run res;
		uint64_t hole_end = end;

		if (pc_residency_next_run(r, p, &res) > 0 && res.page < end) {
			if (res.page <= p) {
				p = res.page + res.npages > p ? res.page + res.npages : p + 1;
				continue;
			}
			hole_end = res.page;
		}
		if (pc_cachestat(fd, p * c->ps, (hole_end - p) * c->ps, &cs) < 0)
			return -1;
		if (cs.cache < hole_end - p)
			absent += (int64_t)(hole_end - p - cs.cache);
		p = hole_end;
	}
	return absent;
}

/*
 * Whether the wanted pages of the logged runs at runs_at (in c->log) below
 * page from are all still in the page cache, as cachestat counts them:
 * a poll from the memo at from found the rest complete, and mincore found
 * these up to date before, so being there is enough. cachestat counts a
 * page still being read in too: none of these is, unless reclaim took one
 * since and another reader is reading it again at this very moment (the
 * restore's own rewarm() is covered: poll_resident() drops the memos).
 * 0.2 ms for 4 GiB of the kernel's large readahead folios where mincore
 * takes 37; as long as mincore for 4 KiB ones (15-32 ms). 1 when they
 * are, 0 when not or where cachestat cannot tell, or for more than
 * MEMO_CHECK_RUNS runs (measured whole then), -EIO when the log could not
 * be read. The log is left where it was.
 */
#define MEMO_CHECK_RUNS 64

static int below_present(struct restore *c, int fd, long runs_at, uint64_t from)
{
	long end_at = ftell(c->log);
	unsigned int nruns = 0;
	int ok = end_at >= 0 && cachestat_counts(c, fd) && fseek(c->log, runs_at, SEEK_SET) == 0;
	struct pc_run run;
	uint64_t prev = 0;

	while (ok == 1) {
		int more = log_next(c, &prev, &run);
		uint64_t n;
		struct pc_cachestat cs;

		if (more < 0)
			ok = -EIO;
		if (more <= 0 || run.page >= from)
			break;
		n = from - run.page < run.npages ? from - run.page : run.npages;
		ok = ++nruns <= MEMO_CHECK_RUNS &&
		     pc_cachestat(fd, run.page * c->ps, n * c->ps, &cs) == 0 && cs.cache >= n;
	}
	/* where it was: the next file's record follows */
	if (end_at < 0 || fseek(c->log, end_at, SEEK_SET) != 0)
		return -EIO;
	return ok;
}

/* Resident pages of the logged runs, over every logged file; *unknown
 * when the kernel hides some file's residency. Files found complete (or
 * hidden, or gone) are not opened again by the next call. Unless exact,
 * a file of few runs is first asked with cachestat, run by run: a run
 * with pages missing means the file is not complete, and its count (of
 * pages present) does for this call; only a file that looks complete is
 * measured exactly. With absent (which implies exact), *absent is how many
 * of the pages missing are not in the page cache at all (absent_in()), or
 * UINT64_MAX when some file's could not be told. */
static int measure(struct restore *c, bool exact, uint64_t *wanted, uint64_t *resident,
		   uint64_t *absent, bool *unknown)
{
	char path[PC_SNAPSHOT_PATH_MAX + 1];
	uint32_t n;

	*wanted = *resident = 0;
	*unknown = false;
	c->memo_used = c->memo_placed = c->memo_unsure = false;
	if (absent) {
		*absent = 0;
		exact = true;
	}
	if (fflush(c->log) != 0 || fseek(c->log, 0, SEEK_SET) != 0)
		return -EIO;
	for (size_t i = 0; fread(&n, sizeof(n), 1, c->log) == 1; i++) {
		struct pc_residency *r = NULL;
		struct pc_run run;
		uint64_t fw = 0, fr = 0, prev;
		int state = file_state(c, i);
		unsigned int nruns = 0;
		int confirmed = 0;         /* -1: measure the file with pc_residency() */
		uint64_t from = 0;         /* pages below: resident at the last poll */
		uint64_t missing_at = UINT64_MAX; /* the first wanted page seen missing */
		int truthful = -1;         /* mincore tells the truth: not asked yet */
		bool opened = false, missing = false;
		struct stat st;
		long runs_at;
		int fd = -1, more;

		if (n > PC_SNAPSHOT_PATH_MAX || fread(path, 1, n, c->log) != n)
			return -EIO;
		path[n] = '\0';
		runs_at = ftell(c->log);
		if (runs_at < 0)
			return -EIO;
		if (state == FILE_PENDING) {
			fd = kept_fd(c, i);
			if (fd < 0) {
				fd = beneath_open(&c->bn, path, &st);
				opened = fd >= 0;
			}
			if (fd < 0)
				state = FILE_GONE;
		}
		/* pass 1: the wanted count, and a quick look at few small runs */
		for (prev = 0; (more = log_next(c, &prev, &run)) > 0;) {
			fw += run.npages;
			if (state != FILE_PENDING || exact || confirmed == -1 ||
			    ++nruns > PRECHECK_RUNS) {
				confirmed = -1;
				continue;
			}
			if (truthful < 0)
				truthful = mincore_truthful(c, fd, opened ? st.st_uid
							    : (uid_t)-1);
			int q = quick_look(c, fd, run, truthful);

			if (q < 0) {
				confirmed = -1;
				continue;
			}
			if (q == 0)
				missing = true;
			else
				fr += run.npages;
		}
		if (more < 0)
			goto fail;
		if (missing && confirmed != -1) {
			/* not complete yet: fr counts the runs seen complete */
		} else if (state == FILE_PENDING && confirmed != -1 && !exact) {
			/* every run read back in place: complete */
		} else if (state == FILE_PENDING) {
			/* pass 2: exactly, from the memo's page on */
			fr = 0;
			if (c->use_memo && !absent && fw >= MEMO_BYTES / c->ps)
				from = memo_page(c, i);
			if (from)
				c->memo_used = true;
			/* from a memo, a window; without one (the first poll,
			 * after a rewarm, or when the pages below a memo were
			 * not sure) the whole file */
			if (residency_exact(c, fd, from,
					    from && !c->poll_whole ? MEMO_BYTES / c->ps : 0, &r) < 0) {
				r = NULL;
				state = FILE_GONE;
			} else if (pc_residency_quality(r) == PC_QUALITY_UNKNOWN) {
				state = FILE_UNKNOWN;
			} else {
				if (fseek(c->log, runs_at, SEEK_SET) != 0)
					goto fail;
				int counts = -1; /* cachestat_counts(), asked once */

				for (prev = 0; (more = log_next(c, &prev, &run)) > 0;) {
					/* below from: resident at the last poll */
					uint64_t below = run.page >= from ? 0 :
						from - run.page < run.npages ? from - run.page :
						run.npages;
					struct pc_run rest = { run.page + below, run.npages - below };
					uint64_t got = below + (rest.npages ? resident_in(r, rest) : 0);
					int64_t a = -1;

					fr += got;
					if (got < run.npages && missing_at == UINT64_MAX)
						missing_at = first_missing(r, rest);
					if (!absent || *absent == UINT64_MAX || got == run.npages)
						continue;
					if (counts < 0)
						counts = cachestat_counts(c, fd);
					if (counts)
						a = absent_in(c, fd, r, run);
					*absent = a < 0 ? UINT64_MAX : *absent + (uint64_t)a;
				}
				if (more < 0)
					goto fail;
			}
		} else if (state != FILE_PENDING) {
			fr = 0;
		}
		/* complete from the memo: the pages below it still there, or
		 * measured whole next time first (also when pass 1 saw one
		 * of its small runs not up to date: pass 2 counted the pages
		 * below the memo without looking) */
		if (state == FILE_PENDING && from && fr == fw) {
			int below = missing ? 0 : below_present(c, fd, runs_at, from);

			if (below < 0)
				goto fail;
			memo_set(c, i, 0);
			if (below)
				state = FILE_COMPLETE;
			else
				c->memo_unsure = true;
		} else if (state == FILE_PENDING && fr == fw && !missing) {
			state = FILE_COMPLETE;
		}
		pc_residency_free(r);
		if (opened)
			close(fd);
		if (state == FILE_PENDING && fw >= MEMO_BYTES / c->ps && fr < fw &&
		    missing_at != UINT64_MAX) {
			memo_set(c, i, missing_at);
			c->memo_placed = true;
		}
		if (state != FILE_PENDING)
			drop_fd(c, i);
		if (state == FILE_COMPLETE)
			fr = fw;
		if (state == FILE_UNKNOWN)
			*unknown = true;
		if (state == FILE_GONE && absent && *absent != UINT64_MAX)
			*absent += fw; /* they will not come */
		if (set_state(c, i, state) < 0)
			return -ENOMEM;
		*wanted += fw;
		*resident += fr;
		continue;
fail:
		pc_residency_free(r);
		if (opened)
			close(fd);
		return -EIO;
	}
	return 0;
}

/* Warm the logged runs again: pc_warm() reads only those not resident
 * now (readahead that never landed). */
static int rewarm(struct restore *c)
{
	char path[PC_SNAPSHOT_PATH_MAX + 1];
	struct pc_run *batch = malloc(BATCH_RUNS * sizeof(*batch));
	uint32_t n;
	int ret = 0;

	if (!batch)
		return -ENOMEM;
	if (fflush(c->log) != 0 || fseek(c->log, 0, SEEK_SET) != 0)
		ret = -EIO;
	for (size_t i = 0; ret == 0 && fread(&n, sizeof(n), 1, c->log) == 1; i++) {
		struct stat st;
		bool opened = false;
		size_t k = 0;
		int fd = -1;

		if (n > PC_SNAPSHOT_PATH_MAX || fread(path, 1, n, c->log) != n) {
			ret = -EIO;
			break;
		}
		path[n] = '\0';
		if (file_state(c, i) == FILE_PENDING) {
			fd = kept_fd(c, i);
			opened = fd < 0;
			if (opened)
				fd = beneath_open(&c->bn, path, &st);
		}
		c->file_failed = fd < 0;
		for (uint64_t prev = 0;;) {
			struct pc_run run;
			int more = log_next(c, &prev, &run);

			if (more < 0) {
				ret = -EIO;
				break;
			}
			if (more)
				batch[k++] = run;
			if (k && (k == BATCH_RUNS || !more)) {
				if (fd >= 0)
					warm(c, fd, path, batch, k);
				k = 0;
			}
			if (!more)
				break;
		}
		if (opened && fd >= 0)
			close(fd);
	}
	free(batch);
	return ret;
}

/*
 * Poll until every wanted page is resident, or nothing changed for quiet
 * seconds (10 s at most), or the pages still missing are all absent from
 * the page cache (none is being read in: they will not come by
 * themselves). That is asked (measure()'s absent) when a poll saw no
 * change; where cachestat cannot tell, the quiet time decides alone.
 */
/* How long plain polls must see nothing change before one asks. */
#define ASK_AFTER 0.02

static void poll_resident(struct restore *c, double quiet)
{
	double t0 = now_seconds(), last_change = t0;
	uint64_t prev = UINT64_MAX;
	long sleep_ns;
	bool ask = false, exact = false, can_ask = true;
	int ret;

	/* after rewarm(): pages below a memo may have been read again, and be
	 * on their way still, which cachestat would count (below_present()):
	 * the first poll measures whole */
	c->nmemo = 0;
	c->poll_whole = false;
	for (;;) {
		uint64_t w, r, absent = UINT64_MAX;
		bool unk;
		double t;

		exact = ask;
		c->use_memo = !exact;
		t = now_seconds();
		ret = measure(c, exact, &w, &r, ask ? &absent : NULL, &unk);
		/* sleep twice as long as the poll took (a third of a core at
		 * most), from 2 to 50 ms: a poll of what is left of a large
		 * file is short, of a 4 GiB file whole ~85 ms */
		sleep_ns = (long)((now_seconds() - t) * 2e9);
		sleep_ns = sleep_ns < 2000000 ? 2000000 : sleep_ns > 50000000 ? 50000000 : sleep_ns;
		/* a plain whole poll that left memos: the next one starts at
		 * them, far cheaper (4 GiB streamed in 0.45 s here: settle()
		 * took a median 0.165 s instead of 0.225 over 10 alternating
		 * runs, for the same CPU) */
		if (c->memo_placed && !c->memo_used && !exact)
			sleep_ns = 2000000;
		c->use_memo = false;
		if (ret < 0) {
			c->settle_end = "a measure failed";
			return;
		}
		/* complete from the memo: measured whole next (not the final
		 * count yet, should that measure fail) */
		if (r >= w && !unk && c->memo_unsure)
			continue;
		c->final_wanted = w;
		c->final_resident = r;
		c->final_unknown = unk;
		t = now_seconds();
		if (r >= w && !unk) {
			c->settle_end = "complete";
			return; /* every file measured exactly, and complete */
		}
		if (unk || got_signal) {
			c->settle_end = unk ? "residency hidden" : "signal";
			break;
		}
		if (exact && absent != UINT64_MAX && absent >= w - r) {
			c->settle_end = "nothing more coming";
			return; /* measured exactly, and nothing more is coming */
		}
		if (exact && absent == UINT64_MAX)
			can_ask = false; /* cachestat cannot tell: the quiet time decides */
		/* asked: some pages missing will not come by themselves (or
		 * no telling), while more is coming. A memo may be stuck at
		 * one of them: the plain polls after it look past their window,
		 * to see the rest land. (With every missing page on its way,
		 * the memo moves on as they land.) */
		if (exact && absent != 0)
			c->poll_whole = true;
		/* A plain poll that saw no change for ASK_AFTER asks; one that
		 * asked sleeps. Only plain polls are compared: they count a
		 * small run with pages missing as none, an exact one counts its
		 * pages. (A windowed poll takes a few ms: one that saw nothing
		 * land in that time says little.) */
		ask = !exact && can_ask && r == prev && t - last_change >= ASK_AFTER;
		if (!exact && r != prev) {
			prev = r;
			last_change = t;
		}
		if (t - last_change > quiet || t - t0 > 10.0) {
			c->settle_end = t - last_change > quiet ? "quiet" : "time limit";
			break;
		}
		if (ask)
			continue;
		nanosleep(&(struct timespec){ 0, sleep_ns }, NULL);
	}
	if (exact)
		return;
	/* the counts of files not complete were cachestat's: measure them */
	{
		uint64_t w, r;
		bool unk;

		if (measure(c, true, &w, &r, NULL, &unk) == 0) {
			c->final_wanted = w;
			c->final_resident = r;
			c->final_unknown = unk;
		}
	}
}

/*
 * readahead(2) returns before the I/O lands: wait for it, measuring the
 * wanted pages' residency. A few pages can be gone by then (seen here: 29 to
 * 2,084 of a 4 GiB file, after plain readahead(2) loops too: the machine's
 * DAMON reclaim pages out fresh pages nobody has used, doc/design.md); when
 * poll_resident() finds the missing pages will not come by themselves,
 * their runs are warmed again, twice at most.
 */
static void settle(struct restore *c)
{
	double t0 = now_seconds();
	uint64_t before = c->read, resident_before;
	int ret;

	for (int round = 0; round < 3; round++) {
		poll_resident(c, round < 2 ? 0.3 : 1.0);
		if (c->final_unknown || c->final_resident >= c->final_wanted || c->stop ||
		    got_signal || round == 2)
			break;
		/* pages rewarm() finds resident were counted the first time */
		resident_before = c->resident_before;
		ret = rewarm(c);
		c->resident_before = resident_before;
		if (ret < 0) {
			c->settle_end = "a re-read failed";
			break;
		}
	}
	c->retried = c->read - before;
	c->settle = now_seconds() - t0;
}

static int lost_index_cmp(const void *pa, const void *pb)
{
	const struct lost *a = pa, *b = pb;

	return a->index < b->index ? -1 : a->index > b->index;
}

/* A lost file found at l->found: restored there when it is the file
 * recorded (device, inode, size and mtime), its runs read from f. */
static int restore_found(struct restore *c, const struct snap_file *f, struct lost *l,
			 struct pc_run *batch)
{
	struct stat st;
	int fd = beneath_open(&c->bn, l->found, &st);

	if (fd >= 0 && (uint64_t)st.st_dev == l->dev && (uint64_t)st.st_ino == l->ino &&
	    same_file(true, f->size, f->mtime_ns, &st)) {
		c->skipped[SKIP_MISSING]--;
		c->renamed++;
		note(c, l->found, "restored: the file recorded under another name (renamed "
		     "since the dump, or another of its hard links: the same device, inode, "
		     "size and mtime)");
		return restore_streaming(c, l->found, fd, &st, batch, 0);
	}
	if (fd >= 0)
		close(fd);
	free(l->found);
	l->found = NULL; /* not that file: missing */
	return 0;
}

/*
 * The files missing from their recorded path (lost_add()), looked for
 * beneath the root by the device and inode recorded (find_inodes()): a file
 * renamed since the dump, or one of whose hard links was removed, is
 * restored under the name it has now when its size and mtime are still
 * those recorded (a device and inode number alone can be a new file's, the
 * old one deleted). The snapshot is read again for their runs. Not when
 * the restore stopped early (with --no-find-renamed, or from a pipe,
 * lost_add() keeps no file); a failure of the search itself leaves them
 * missing, with a note, and the restore goes on.
 * Then the notes of those still missing. Returns 0, or a failure of the
 * restore of a found file (its log), which ends the restore as elsewhere.
 */
static int find_renamed(struct restore *c)
{
	struct inode_key *keys;
	struct pc_run *batch = NULL;
	const struct snap_file *f;
	uint64_t index = 0;
	size_t next = 0;
	int ret = 0, failed = 0;
	bool interrupted = false;  /* the search itself: who knows what it missed */

	if (!c->nlost)
		return 0;
	if (c->stop || got_signal)
		goto notes;
	keys = calloc(c->nlost, sizeof(*keys));
	if (!keys) {
		failed = -ENOMEM;
		goto notes;
	}
	for (size_t i = 0; i < c->nlost; i++)
		keys[i] = (struct inode_key){ .dev = c->lost[i].dev, .ino = c->lost[i].ino, .i = i };
	failed = find_inodes(c->bn.rootfd, keys, c->nlost, &got_signal);
	for (size_t k = 0; k < c->nlost; k++)
		c->lost[keys[k].i].found = keys[k].found;
	free(keys);
	if (got_signal) {
		if (!c->stop)
			c->stop = STOP_SIGNAL;
		interrupted = true;
	}
	if (failed <= 0)
		goto notes;
	failed = 0;
	qsort(c->lost, c->nlost, sizeof(*c->lost), lost_index_cmp);
	batch = malloc(BATCH_RUNS * sizeof(*batch));
	failed = batch ? snapsrc_rewind(c->src) : -ENOMEM;
	while (failed == 0 && ret == 0) {
		int more;

		while (next < c->nlost && !c->lost[next].found)
			next++;
		if (next == c->nlost)
			break;
		if (c->budget == 0 && !c->stop)
			c->stop = STOP_BUDGET;
		if (got_signal && !c->stop)
			c->stop = STOP_SIGNAL;
		if (c->stop)
			break;
		more = snapsrc_next_file(c->src, &f);
		if (more <= 0) {
			failed = more ? more : -EIO; /* it was there the first time */
			break;
		}
		if (index++ == c->lost[next].index)
			ret = restore_found(c, f, &c->lost[next++], batch);
	}
	free(batch);
notes:
	if (failed < 0)
		note(c, NULL, "the search for files renamed since the dump failed: %s",
		     strerror(-failed));
	for (size_t i = 0; i < c->nlost; i++) {
		if (c->lost[i].found && i < next)
			continue; /* restored under its name now */
		if ((c->lost[i].found || interrupted) && c->stop) {
			/* found, or maybe to be found, but the restore
			 * stopped before it */
			c->skipped[SKIP_MISSING]--;
			c->skipped[SKIP_NOT_REACHED]++;
			continue;
		}
		note(c, c->lost[i].rel, "skipped: missing");
	}
	return ret;
}

static void lost_free(struct restore *c)
{
	for (size_t i = 0; i < c->nlost; i++) {
		free(c->lost[i].rel);
		free(c->lost[i].found);
	}
	free(c->lost);
}

/* ---- gentle by default ---- */

/* Whether snprintf's result n fit a buffer of size bytes (a sysfs path
 * that does not fit names no device: it is not looked at). */
static bool path_fits(int n, size_t size)
{
	return n >= 0 && (size_t)n < size;
}

/* Whether the block device whose sysfs directory is dir (a disk or a
 * partition) is a rotating one: 1, 0, or -1 when it has no queue (not a
 * block device: tmpfs, NFS, overlayfs, btrfs's anonymous device). */
static int rotating(const char *dir)
{
	char path[96];
	int v = -1;

	for (int i = 0; i < 2 && v < 0; i++) {
		FILE *f;

		/* the second: a partition's queue is its disk's */
		if (!path_fits(snprintf(path, sizeof(path), "%s/%squeue/rotational", dir,
				   i ? "../" : ""), sizeof(path)))
			continue;
		f = fopen(path, "re");
		if (!f)
			continue;
		if (fscanf(f, "%d", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

/*
 * Whether the block device whose sysfs directory is dir (a disk, a
 * partition, or a device-mapper or md device stacked on others, up to
 * depth levels) is virtio-blk all the way down: virtio-blk never clears
 * the rotational flag, whatever the host puts behind it (a stacked
 * device inherits the flag). A loop device goes by its own flag.
 */
static bool virtio_under(const char *dir, int depth)
{
	char path[PATH_MAX], target[256];
	bool all = false;
	struct dirent *e;
	DIR *d;

	for (int i = 0; i < 2; i++) {
		const char *base;
		ssize_t n;

		/* the second: a partition's driver is its disk's */
		if (!path_fits(snprintf(path, sizeof(path), "%s/%sdevice/driver", dir, i ? "../" : ""),
			  sizeof(path)))
			continue;
		n = readlink(path, target, sizeof(target) - 1);
		if (n <= 0)
			continue;
		target[n] = '\0';
		base = strrchr(target, '/');
		return strcmp(base ? base + 1 : target, "virtio_blk") == 0;
	}
	if (!path_fits(snprintf(path, sizeof(path), "%s/slaves", dir), sizeof(path)))
		return false;
	d = depth > 0 ? opendir(path) : NULL;
	if (!d)
		return false;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		if (!path_fits(snprintf(path, sizeof(path), "/sys/class/block/%s", e->d_name),
			  sizeof(path))) {
			all = false;
			break;
		}
		all = virtio_under(path, depth - 1);
		if (!all)
			break;
	}
	closedir(d);
	return all;
}

/*
 * --order=auto: disk order where reads in order of their place on the disk
 * pay (a rotating disk under the root, or virtio-blk), else the snapshot's.
 * A virtio-blk disk's rotational flag says nothing of the storage under
 * it, but on this one (rotational 1) the disk order had the pages back
 * sooner both when the host did not serve the reads from its cache
 * (20,000 small files: 1.04 s against 1.14 s) and when it did (0.60 s
 * against 0.69 s, 11 alternating rounds, timed to the disk's last read;
 * the command itself ends later, 0.70 s against 0.66 s, its look at the
 * window following the reads). Timed to the command's end, the cached
 * case had gone the other way (0.76-0.88 s against 0.63-0.68 s), which
 * kept auto in the snapshot's order there before.
 */
static void choose_order(struct restore *c)
{
	char dir[64];
	struct stat st;

	if (c->order != ORDER_AUTO)
		return;
	c->order = ORDER_FILE;
	c->order_why = "file (auto: the root is not on a rotating disk)";
	if (fstat(c->bn.rootfd, &st) < 0)
		return;
	snprintf(dir, sizeof(dir), "/sys/dev/block/%u:%u", major(st.st_dev), minor(st.st_dev));
	if (rotating(dir) != 1)
		return;
	c->order = ORDER_DISK;
	c->order_why = virtio_under(dir, 4) ?
		"disk (auto: the root is on virtio-blk, whose reads came back sooner in disk order "
		"whether the host cached them or not)" :
		"disk (auto: the root is on a rotating disk)";
}

static const char *order_name(const struct restore *c)
{
	static const char *const names[] = {
		[ORDER_AUTO] = "auto", [ORDER_FILE] = "file", [ORDER_DISK] = "disk",
		[ORDER_PHYSICAL] = "physical",
	};

	return names[c->order];
}

#define IOPRIO_CLASS_SHIFT 13
#define IOPRIO_CLASS_IDLE 3
#define IOPRIO_WHO_PROCESS 1

static void be_gentle(struct restore *c)
{
	struct sched_param sp = { 0 };
	bool io = syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0,
			  IOPRIO_CLASS_IDLE << IOPRIO_CLASS_SHIFT) == 0;
	bool cpu = sched_setscheduler(0, SCHED_IDLE, &sp) == 0;

	c->gentle = io && cpu ? "I/O priority idle, SCHED_IDLE" :
		io ? "I/O priority idle (SCHED_IDLE refused)" :
		cpu ? "SCHED_IDLE (idle I/O priority refused)" : "refused by the kernel";
}

/* ---- the summary ---- */

static const char *stop_text(enum stop s)
{
	switch (s) {
	case STOP_BUDGET: return "budget";
	case STOP_EVICTING: return "evicting";
	case STOP_SIGNAL: return "signal";
	default: return NULL;
	}
}

static void summary_json(struct restore *c, FILE *f)
{
	struct json j;
	uint64_t skipped = 0;

	json_init(&j, f, true);
	json_begin_object(&j, NULL);
	json_uint(&j, "format_version", 1);
	json_cstring(&j, "snapshot", c->name);
	json_cstring(&j, "format", snapsrc_format(c->src) == SNAP_HAPPYCACHE ? "happycache"
		     : "native");
	json_cstring(&j, "root", c->root);
	json_cstring(&j, "open_method", beneath_method(&c->bn));
	json_cstring(&j, "order", order_name(c));
	json_uint(&j, "files", c->files);
	json_uint(&j, "files_restored", c->files_restored);
	json_uint(&j, "files_without_pages", c->files_empty);
	json_uint(&j, "pages_wanted", c->wanted);
	json_uint(&j, "pages_beyond_eof", c->beyond_eof);
	if (c->hidden)
		json_null(&j, "pages_already_resident");
	else
		json_uint(&j, "pages_already_resident", c->resident_before);
	json_uint(&j, "pages_read", c->read);
	json_uint(&j, "bytes_read", c->bytes);
	json_uint(&j, "pages_read_again", c->retried);
	json_uint(&j, "pages_streamed", c->streamed);
	json_double(&j, "seconds", c->elapsed);
	json_double(&j, "bytes_per_second", c->elapsed > 0 ? (double)c->bytes / c->elapsed : 0);
	json_begin_object(&j, "skipped");
	for (int i = 0; i < SKIP_COUNT; i++) {
		json_uint(&j, skip_names[i], c->skipped[i]);
		skipped += c->skipped[i];
	}
	json_end_object(&j);
	json_uint(&j, "files_skipped", skipped);
	json_uint(&j, "renamed", c->renamed);
	json_uint(&j, "changed", c->changed);
	json_begin_array(&j, "changed_files");
	for (uint64_t i = 0; i < c->changed && i < CHANGED_NAMES; i++)
		if (c->changed_names[i])
			json_cstring(&j, NULL, c->changed_names[i]);
	json_end_array(&j);
	if (stop_text(c->stop))
		json_cstring(&j, "stopped", stop_text(c->stop));
	else
		json_null(&j, "stopped");
	if (c->budget_total == UINT64_MAX)
		json_null(&j, "budget_bytes");
	else
		json_uint(&j, "budget_bytes", c->budget_total);
	json_cstring(&j, "budget_from", c->budget_why);
	json_cstring(&j, "eviction_watch", c->watch_state ? strerror(-c->watch_state) : "on");
	json_uint(&j, "evicted_again_pages", c->evicted_seen);
	json_cstring(&j, "gentle", c->gentle ? c->gentle : "no (--fast)");
	json_uint(&j, "final_pages_wanted", c->final_wanted);
	if (c->final_unknown) {
		json_null(&j, "final_pages_resident");
		json_null(&j, "final_resident_percent");
	} else {
		json_uint(&j, "final_pages_resident", c->final_resident);
		json_double(&j, "final_resident_percent", c->final_wanted ?
			    100.0 * (double)c->final_resident / (double)c->final_wanted : 100.0);
	}
	json_double(&j, "settle_seconds", c->settle);
	if (c->settle_end)
		json_cstring(&j, "settle_end", c->settle_end);
	else
		json_null(&j, "settle_end");
	json_end_object(&j);
	json_newline(&j);
}

static void summary_text(struct restore *c, FILE *f)
{
	uint64_t skipped = 0;
	char b[32], r[32], bud[32];

	for (int i = 0; i < SKIP_COUNT; i++)
		skipped += c->skipped[i];
	fprintf(f, "files:          %llu in the snapshot, %llu restored, %llu without pages, "
		"%llu skipped\n", (unsigned long long)c->files,
		(unsigned long long)c->files_restored, (unsigned long long)c->files_empty,
		(unsigned long long)skipped);
	if (skipped) {
		bool first = true;

		fprintf(f, "skipped:        ");
		for (int i = 0; i < SKIP_COUNT; i++) {
			if (!c->skipped[i])
				continue;
			fprintf(f, "%s%llu %s", first ? "" : ", ",
				(unsigned long long)c->skipped[i], skip_text[i]);
			first = false;
		}
		fputc('\n', f);
	}
	if (c->renamed)
		fprintf(f, "renamed:        %llu files found under another name (the same "
			"device, inode, size and mtime) and restored there\n",
			(unsigned long long)c->renamed);
	if (c->changed) {
		fprintf(f, "changed:        %llu files' size or mtime changed since the dump%s:",
			(unsigned long long)c->changed, c->strict ? " (skipped: --strict)" : "");
		for (uint64_t i = 0; i < c->changed && i < CHANGED_NAMES; i++) {
			fputc(' ', f);
			if (c->changed_names[i])
				text_write_path(f, c->changed_names[i], strlen(c->changed_names[i]));
		}
		if (c->changed > CHANGED_NAMES)
			fprintf(f, " ...");
		fputc('\n', f);
	}
	fprintf(f, "pages wanted:   %llu", (unsigned long long)c->wanted);
	if (c->beyond_eof)
		fprintf(f, " (%llu beyond the end of their file now)",
			(unsigned long long)c->beyond_eof);
	fputc('\n', f);
	if (c->hidden)
		fprintf(f, "already resident: unknown for some files (the kernel hides their "
			"residency: every page was read); %llu pages seen\n",
			(unsigned long long)c->resident_before);
	else
		fprintf(f, "already resident: %llu pages\n", (unsigned long long)c->resident_before);
	human_bytes(c->bytes, b, sizeof(b));
	human_bytes(c->elapsed > 0 ? (uint64_t)((double)c->bytes / c->elapsed) : 0, r, sizeof(r));
	fprintf(f, "read:           %llu pages (%s) in %.2f s, %s/s\n",
		(unsigned long long)c->read, b, c->elapsed, r);
	if (c->streamed)
		fprintf(f, "streamed:       %llu of them by the kernel's own readahead, started by "
			"RWF_NOWAIT reads\n", (unsigned long long)c->streamed);
	if (c->retried)
		fprintf(f, "read again:     %llu pages gone before the end (evicted as they "
			"landed, or dropped by readahead; counted above)\n",
			(unsigned long long)c->retried);
	if (c->budget_total != UINT64_MAX) {
		human_bytes(c->budget_total, bud, sizeof(bud));
		fprintf(f, "budget:         %s (%s)\n", bud, c->budget_why);
	}
	if (c->stop == STOP_BUDGET)
		fprintf(f, "stopped early:  the budget was spent\n");
	else if (c->stop == STOP_EVICTING)
		fprintf(f, "stopped early:  the restore was evicting its own pages (%llu pages "
			"of what it read were evicted again: the cache is full)\n",
			(unsigned long long)c->evicted_seen);
	else if (c->stop == STOP_SIGNAL)
		fprintf(f, "stopped early:  interrupted by a signal\n");
	if (c->final_unknown)
		fprintf(f, "resident now:   unknown (the kernel hides some files' residency "
			"from you)\n");
	else
		fprintf(f, "resident now:   %.2f%% of the wanted pages (%llu of %llu, measured "
			"after %.2f s)\n", c->final_wanted ? 100.0 * (double)c->final_resident /
			(double)c->final_wanted : 100.0, (unsigned long long)c->final_resident,
			(unsigned long long)c->final_wanted, c->settle);
	fputs("paths opened:   beneath ", f);
	text_write_path(f, c->root, strlen(c->root));
	fprintf(f, " with %s\n", beneath_method(&c->bn));
	fprintf(f, "order:          %s\n", c->order_why ? c->order_why : order_name(c));
	if (c->watch_state)
		fprintf(f, "eviction watch: off (cachestat: %s)\n", strerror(-c->watch_state));
	fprintf(f, "gentle:         %s\n", c->gentle ? c->gentle : "no (--fast)");
}

int cmd_restore(int argc, char **argv)
{
	struct restore c = { .bn = { .rootfd = -1, .procfd = -1 } };
	const char *root_arg = NULL, *why = NULL;
	static const int sigs[] = { SIGINT, SIGTERM };
	int opt, ret = 0;
	uint64_t v;

	for (unsigned int i = 0; i < WATCH_SLOTS; i++)
		c.watch[i].fd = -1;
	c.cachestat_ok = true;
	c.nowait_ok = true;
	c.fmt = SNAP_AUTO;
	c.ps = (uint64_t)pc_page_size();
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":hq", restore_options, NULL)) != -1) {
		switch (opt) {
		case 'h':
			fputs(restore_usage, stdout);
			goto out;
		case OPT_ROOT: root_arg = optarg; break;
		case OPT_STRICT: c.strict = true; break;
		case OPT_FAST: c.fast = true; break;
		case OPT_JSON: c.json = true; break;
		case 'q': c.quiet = true; break;
		case OPT_MAX_BYTES:
			if (parse_size(optarg, &c.max_bytes) < 0 || c.max_bytes == 0) {
				ret = usage_error("restore", "--max-bytes wants a size like 1G, not '%s'", optarg);
				goto out;
			}
			break;
		case OPT_RATE:
			if (parse_uint(optarg, UINT64_MAX / 1000000, &v) < 0 || v == 0) {
				ret = usage_error("restore", "--rate wants megabytes per second, not '%s'", optarg);
				goto out;
			}
			c.rate = v * 1000000;
			break;
		case OPT_CHUNK:
			if (parse_size(optarg, &c.chunk) < 0 || c.chunk < (uint64_t)pc_page_size() ||
			    c.chunk > (UINT64_C(64) << 20)) {
				ret = usage_error("restore", "--chunk wants a size from a page to 64M, not '%s'",
						  optarg);
				goto out;
			}
			break;
		case OPT_NO_FIND_RENAMED:
			c.no_find_renamed = true;
			break;
		case OPT_QUEUE_DEPTH:
			if (parse_uint(optarg, 256, &v) < 0 || v == 0) {
				ret = usage_error("restore", "--queue-depth wants 1 to 256, not '%s'",
						  optarg);
				goto out;
			}
			c.queue_depth = (unsigned int)v;
			break;
		case OPT_STRATEGY:
			if (strcmp(optarg, "stream") == 0)
				c.strategy = PC_WARM_STREAM;
			else if (strcmp(optarg, "readahead") == 0)
				c.strategy = PC_WARM_READAHEAD;
			else if (strcmp(optarg, "io_uring") == 0)
				c.strategy = PC_WARM_IO_URING;
			else {
				ret = usage_error("restore", "--strategy wants stream, readahead or io_uring, not '%s'",
						  optarg);
				goto out;
			}
			break;
		case OPT_ORDER:
			if (strcmp(optarg, "auto") == 0)
				c.order = ORDER_AUTO;
			else if (strcmp(optarg, "file") == 0)
				c.order = ORDER_FILE;
			else if (strcmp(optarg, "disk") == 0)
				c.order = ORDER_DISK;
			else if (strcmp(optarg, "physical") == 0)
				c.order = ORDER_PHYSICAL;
			else {
				ret = usage_error("restore", "--order wants auto, file, disk or physical, not '%s'",
						  optarg);
				goto out;
			}
			break;
		case OPT_FORMAT:
			if (snap_parse_format(optarg, true, &c.fmt) < 0) {
				ret = usage_error("restore", "--format wants auto, native or happycache, not '%s'",
						  optarg);
				goto out;
			}
			break;
		case ':':
			ret = usage_error("restore", "option '%s' needs an argument", argv[optind - 1]);
			goto out;
		default:
			if (optopt)
				ret = usage_error("restore", "unknown option '-%c'", optopt);
			else
				ret = usage_error("restore", "unknown option '%s'", argv[optind - 1]);
			goto out;
		}
	}
	if (argc - optind > 1) {
		ret = usage_error("restore", "%s", "one snapshot at a time");
		goto out;
	}
	/* as dump writes them by default */
	c.name = optind < argc ? argv[optind] :
		 c.fmt == SNAP_HAPPYCACHE ? ".happycache.gz" : "pagecache.snapshot";

	ret = snapsrc_open(c.name, c.fmt, &c.src);
	if (ret < 0) {
		ret = PC_EXIT_FAILED;
		goto out;
	}
	/* a corrupt snapshot reads nothing (from a pipe: up to the damage) */
	ret = snapsrc_validate(c.src);
	if (ret < 0) {
		snapsrc_report(c.src, ret);
		ret = PC_EXIT_FAILED;
		goto out;
	}
	c.can_reread = ret == 1;
	if (!root_arg) {
		root_arg = snapsrc_root(c.src);
		if (!*root_arg && snapsrc_format(c.src) == SNAP_HAPPYCACHE)
			root_arg = ".";
		if (!*root_arg) {
			ret = usage_error("restore", "%s", "the snapshot records no root: give --root");
			goto out;
		}
	}
	/* paced: a stream's readahead would run up to two windows (16 MiB
	 * with read_ahead_kb 8192) ahead of the pace; readahead(2) reads what
	 * it is asked (pc_warm's default today; this keeps it so for --rate) */
	if (c.rate && c.strategy == PC_WARM_DEFAULT)
		c.strategy = PC_WARM_READAHEAD;
	c.root = realpath(root_arg, NULL);
	if (!c.root || beneath_init(&c.bn, c.root) < 0) {
		cli_error(root_arg, strlen(root_arg), "the root: %s", strerror(errno));
		ret = PC_EXIT_FAILED;
		goto out;
	}
	c.log = log_open();
	if (!c.log) {
		cli_error(NULL, 0, "a temporary file: %s", strerror(errno));
		ret = PC_EXIT_FAILED;
		goto out;
	}
	c.mem_room = memory_budget(&why);
	if (c.max_bytes) {
		c.budget = c.max_bytes;
		c.budget_why = "--max-bytes";
	} else {
		c.budget = c.mem_room;
		c.budget_why = why;
		if (c.budget == UINT64_MAX)
			c.budget_why = "none: the available memory is unknown";
	}
	c.budget_total = c.budget;
	if (!c.fast)
		be_gentle(&c);
	catch_stop_signals(sigs, sizeof(sigs) / sizeof(sigs[0]), on_signal);

	kept_init(&c);
	/* a root on overlayfs (or where fstatfs cannot tell): mappings there
	 * are of a layer's file, which the gate judges through the layer's
	 * mount and, for a metacopy file, another inode than fstat shows (its
	 * data below): pc_can_do_mincore() asks the kernel file by file */
	c.mincore_everywhere = mincore_truthful_everywhere() && on_overlayfs(c.bn.rootfd) == 0;
	c.overflow_uid = overflow_uid();
	progress_init(&c.progress, !c.quiet && !c.json && isatty(STDERR_FILENO));
	c.start = now_seconds();
	choose_order(&c);
	ret = c.order == ORDER_PHYSICAL ? restore_physical(&c) : restore_in_order(&c);
	progress_clear(&c.progress);
	if (ret == 0)
		ret = find_renamed(&c);
	c.elapsed = now_seconds() - c.start;
	progress_clear(&c.progress);
	if (ret < 0 && ret != -ENOMEM && ret != -EIO) {
		snapsrc_report(c.src, ret);
		ret = PC_EXIT_FAILED;
		goto out;
	}
	if (ret < 0) {
		cli_error(NULL, 0, "%s", strerror(-ret));
		ret = PC_EXIT_FAILED;
		goto out;
	}
	settle(&c);
	if (c.json)
		summary_json(&c, stdout);
	else
		summary_text(&c, stdout);
	ret = c.read_error || c.skipped[SKIP_REFUSED] || c.skipped[SKIP_ERROR] ?
		PC_EXIT_FAILED : PC_EXIT_OK;
	if (fflush(stdout) != 0 || ferror(stdout)) {
		cli_error(NULL, 0, "write error on standard output");
		ret = PC_EXIT_FAILED;
	}
out:
	lost_free(&c);
	kept_free(&c);
	free(c.early);
	free(c.mapvec);
	free(c.scratch);
	watch_free(&c);
	snapsrc_free(c.src);
	beneath_close(&c.bn);
	if (c.log)
		fclose(c.log);
	for (int i = 0; i < CHANGED_NAMES; i++)
		free(c.changed_names[i]);
	free(c.root);
	free(c.state);
	free(c.memo);
	return ret;
}
