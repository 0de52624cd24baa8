/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "restore-private.h"

/* ---- the end: how much of what was wanted is resident ---- */


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

/* Whether cachestat counts fd's pages: not where it is missing, nor on
 * overlayfs (it counts the overlay inode's own, empty, mapping there). */
static bool cachestat_counts(const struct restore *c, int fd)
{
	return c->cachestat_ok && pc_on_overlayfs(fd) == 0;
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
		int more = rs_log_next(c, &prev, &run);
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

/* One logged file as measure() goes through it. */
struct mfile {
	size_t i;                  /* its place in the log */
	const char *path;
	long runs_at;              /* where its runs start in the log */
	int state;
	int fd;
	bool opened;               /* fd is measure()'s own */
	struct stat st;            /* when opened */
	uint64_t fw, fr;           /* pages wanted, resident */
	bool missing;              /* pass 1 saw a run not complete */
	int confirmed;             /* -1: measure the file with pc_residency() */
	uint64_t from;             /* pages below: resident at the last poll */
	uint64_t missing_at;       /* the first wanted page seen missing */
};

/* Pass 1: the wanted count, and a quick look at few small runs (unless
 * exact). 0 or -EIO. */
static int measure_quick(struct restore *c, struct mfile *m, bool exact)
{
	int truthful = -1;         /* mincore tells the truth: not asked yet */
	unsigned int nruns = 0;
	struct pc_run run;
	uint64_t prev;
	int more;

	for (prev = 0; (more = rs_log_next(c, &prev, &run)) > 0;) {
		int q;

		m->fw += run.npages;
		if (m->state != FILE_PENDING || exact || m->confirmed == -1 ||
		    ++nruns > PRECHECK_RUNS) {
			m->confirmed = -1;
			continue;
		}
		if (truthful < 0)
			truthful = rs_mincore_truthful(c, m->fd, m->opened ? m->st.st_uid
						       : (uid_t)-1);
		q = rs_quick_look(c, m->fd, run, truthful);
		if (q < 0) {
			m->confirmed = -1;
			continue;
		}
		if (q == 0)
			m->missing = true;
		else
			m->fr += run.npages;
	}
	return more < 0 ? -EIO : 0;
}

/* Pass 2: exactly, from the memo's page on; with absent, the pages missing
 * that are not in the page cache at all are added to it. 0 or -EIO. */
static int measure_exact(struct restore *c, struct mfile *m, uint64_t *absent)
{
	struct pc_residency *r = NULL;
	int counts = -1;           /* cachestat_counts(), asked once */
	struct pc_run run;
	uint64_t prev;
	int more = 0;

	m->fr = 0;
	if (c->use_memo && !absent && m->fw >= MEMO_BYTES / c->ps)
		m->from = memo_page(c, m->i);
	if (m->from)
		c->memo_used = true;
	/* from a memo, a window; without one (the first poll, after a
	 * rewarm, or when the pages below a memo were not sure) the whole
	 * file */
	if (residency_exact(c, m->fd, m->from,
			    m->from && !c->poll_whole ? MEMO_BYTES / c->ps : 0, &r) < 0) {
		m->state = FILE_GONE;
		return 0;
	}
	if (pc_residency_quality(r) == PC_QUALITY_UNKNOWN) {
		m->state = FILE_UNKNOWN;
		pc_residency_free(r);
		return 0;
	}
	if (fseek(c->log, m->runs_at, SEEK_SET) != 0)
		more = -1;
	for (prev = 0; more == 0 && (more = rs_log_next(c, &prev, &run)) > 0; more = 0) {
		/* below from: resident at the last poll */
		uint64_t below = run.page >= m->from ? 0 :
			m->from - run.page < run.npages ? m->from - run.page : run.npages;
		struct pc_run rest = { run.page + below, run.npages - below };
		uint64_t got = below + (rest.npages ? resident_in(r, rest) : 0);
		int64_t a = -1;

		m->fr += got;
		if (got < run.npages && m->missing_at == UINT64_MAX)
			m->missing_at = first_missing(r, rest);
		if (!absent || *absent == UINT64_MAX || got == run.npages)
			continue;
		if (counts < 0)
			counts = cachestat_counts(c, m->fd);
		if (counts)
			a = absent_in(c, m->fd, r, run);
		*absent = a < 0 ? UINT64_MAX : *absent + (uint64_t)a;
	}
	pc_residency_free(r);
	return more < 0 ? -EIO : 0;
}

/* What the passes found: the file's state, its memo. 0 or -errno. */
static int measure_conclude(struct restore *c, struct mfile *m, uint64_t *absent)
{
	/* complete from the memo: the pages below it still there, or
	 * measured whole next time first (also when pass 1 saw one of its
	 * small runs not up to date: pass 2 counted the pages below the memo
	 * without looking) */
	if (m->state == FILE_PENDING && m->from && m->fr == m->fw) {
		int below = m->missing ? 0 : below_present(c, m->fd, m->runs_at, m->from);

		if (below < 0)
			return -EIO;
		memo_set(c, m->i, 0);
		if (below)
			m->state = FILE_COMPLETE;
		else
			c->memo_unsure = true;
	} else if (m->state == FILE_PENDING && m->fr == m->fw && !m->missing) {
		m->state = FILE_COMPLETE;
	}
	if (m->state == FILE_PENDING && m->fw >= MEMO_BYTES / c->ps && m->fr < m->fw &&
	    m->missing_at != UINT64_MAX) {
		memo_set(c, m->i, m->missing_at);
		c->memo_placed = true;
	}
	if (m->state != FILE_PENDING)
		rs_drop_fd(c, m->i);
	if (m->state == FILE_COMPLETE)
		m->fr = m->fw;
	if (m->state == FILE_GONE && absent && *absent != UINT64_MAX)
		*absent += m->fw; /* they will not come */
	return rs_set_state(c, m->i, m->state) < 0 ? -ENOMEM : 0;
}

/* One logged file (its path read, the log at its runs): pass 1, pass 2
 * where needed, the conclusion. 0 or -errno. */
static int measure_file(struct restore *c, struct mfile *m, bool exact, uint64_t *absent)
{
	int ret;

	m->state = rs_file_state(c, m->i);
	m->fd = -1;
	if (m->state == FILE_PENDING) {
		m->fd = rs_kept_fd(c, m->i);
		if (m->fd < 0) {
			m->fd = pc_beneath_open(&c->bn, m->path, &m->st);
			m->opened = m->fd >= 0;
		}
		if (m->fd < 0)
			m->state = FILE_GONE;
	}
	ret = measure_quick(c, m, exact);
	if (ret < 0) {
		/* the log could not be read */
	} else if (m->missing && m->confirmed != -1) {
		/* not complete yet: fr counts the runs seen complete */
	} else if (m->state == FILE_PENDING && m->confirmed != -1 && !exact) {
		/* every run read back in place: complete */
	} else if (m->state == FILE_PENDING) {
		ret = measure_exact(c, m, absent);
	} else {
		m->fr = 0;
	}
	if (ret == 0)
		ret = measure_conclude(c, m, absent);
	if (m->opened)
		close(m->fd);
	return ret;
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
	int more;

	*wanted = *resident = 0;
	*unknown = false;
	c->memo_used = c->memo_placed = c->memo_unsure = false;
	if (absent) {
		*absent = 0;
		exact = true;
	}
	if (fflush(c->log) != 0 || fseek(c->log, 0, SEEK_SET) != 0)
		return -EIO;
	for (size_t i = 0; (more = rs_log_file(c, path)) > 0; i++) {
		struct mfile m = { .i = i, .path = path, .missing_at = UINT64_MAX };
		int ret;

		m.runs_at = ftell(c->log);
		if (m.runs_at < 0)
			return -EIO;
		ret = measure_file(c, &m, exact, absent);
		if (ret < 0)
			return ret;
		if (m.state == FILE_UNKNOWN)
			*unknown = true;
		*wanted += m.fw;
		*resident += m.fr;
	}
	return more;
}

/* Warm the logged runs again: pc_warm() reads only those not resident
 * now (readahead that never landed). */
static int rewarm(struct restore *c)
{
	char path[PC_SNAPSHOT_PATH_MAX + 1];
	struct pc_run *batch = malloc(BATCH_RUNS * sizeof(*batch));
	int ret = 0, got = 0;

	if (!batch)
		return -ENOMEM;
	if (fflush(c->log) != 0 || fseek(c->log, 0, SEEK_SET) != 0)
		ret = -EIO;
	for (size_t i = 0; ret == 0 && (got = rs_log_file(c, path)) > 0; i++) {
		struct stat st;
		bool opened = false;
		size_t k = 0;
		int fd = -1;

		if (rs_file_state(c, i) == FILE_PENDING) {
			fd = rs_kept_fd(c, i);
			opened = fd < 0;
			if (opened)
				fd = pc_beneath_open(&c->bn, path, &st);
		}
		c->file_failed = fd < 0;
		for (uint64_t prev = 0;;) {
			struct pc_run run;
			int more = rs_log_next(c, &prev, &run);

			if (more < 0) {
				ret = -EIO;
				break;
			}
			if (more)
				batch[k++] = run;
			if (k && (k == BATCH_RUNS || !more)) {
				if (fd >= 0)
					rs_warm(c, fd, path, batch, k);
				k = 0;
			}
			if (!more)
				break;
		}
		if (opened && fd >= 0)
			close(fd);
	}
	free(batch);
	return ret < 0 ? ret : got;
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
	double t0 = rs_now(), last_change = t0;
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
		t = rs_now();
		ret = measure(c, exact, &w, &r, ask ? &absent : NULL, &unk);
		/* sleep twice as long as the poll took (a third of a core at
		 * most), from 2 to 50 ms: a poll of what is left of a large
		 * file is short, of a 4 GiB file whole ~85 ms */
		sleep_ns = (long)((rs_now() - t) * 2e9);
		sleep_ns = sleep_ns < 2000000 ? 2000000 : sleep_ns > 50000000 ? 50000000 : sleep_ns;
		/* a plain whole poll that left memos: the next one starts at
		 * them, far cheaper (4 GiB streamed in 0.45 s here: rs_settle()
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
		t = rs_now();
		if (r >= w && !unk) {
			c->settle_end = "complete";
			return; /* every file measured exactly, and complete */
		}
		if (unk || rs_user_cancel(c)) {
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
void rs_settle(struct restore *c)
{
	double t0 = rs_now();
	uint64_t before = c->read, resident_before;
	int ret;

	for (int round = 0; round < 3; round++) {
		poll_resident(c, round < 2 ? 0.3 : 1.0);
		if (c->final_unknown || c->final_resident >= c->final_wanted || c->stop ||
		    rs_user_cancel(c) || round == 2)
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
	c->settle = rs_now() - t0;
}

