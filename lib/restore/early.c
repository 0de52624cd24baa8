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

#include "restore-private.h"

/*
 * Early confirmation: the small files of a batch are looked at with
 * rs_quick_look() EARLY_LAG batches later, on the main thread while the
 * workers open and warm the next batch. By then their reads have mostly
 * landed; a file seen complete is closed and measure() never opens it
 * again. One that is not complete yet is left to measure().
 */

#define EARLY_VEC_PAGES 16384      /* pages one early_look_mapped() pass maps */

/* Queue logged file i for a look, if its runs are few and small: its fd
 * kept, or map (its runs side by side in a batch's map, job_map()). */
void rs_early_add(struct restore *c, size_t i, const struct pc_run *runs, size_t n,
		      uid_t owner, const char *map)
{
	struct early *e;

	/* a file in a map is looked at there: without its fd */
	if (!n || n > PRECHECK_RUNS || (rs_kept_fd(c, i) < 0 && !map) || c->nearly == EARLY_FILES)
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
	e->truthful = map || rs_mincore_truthful(c, rs_kept_fd(c, i), owner);
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
 * rs_quick_look()'s mincore for many files at once: the runs of early[from,
 * to) that mincore tells the truth about are mapped PROT_NONE one right
 * after the other, in a hole the kernel picked (reserved, then given
 * back), and one mincore and one munmap cover them all: 7.3 us a file
 * instead of 10.6 with a mapping each (5,000 cached files of 4-64 KiB).
 * MAP_FIXED_NOREPLACE refuses a place another thread took in between (a
 * kernel before 4.17 takes it as a hint, and the address tells); the
 * files not mapped keep seen -1. false when none was asked: the caller
 * leaves the rest to rs_quick_look().
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

		if (!e->truthful || e->map || rs_kept_fd(c, e->file) < 0)
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
		int fd = rs_kept_fd(c, e->file);
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

			if (!e->truthful || e->map || rs_kept_fd(c, e->file) < 0)
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
	 * (rs_early_confirm() takes them right after; it is not read again) */
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
void rs_map_keep(struct restore *c, char *base, uint64_t pages, bool holey)
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
void rs_maps_free(struct restore *c)
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
void rs_early_finish(struct restore *c)
{
	for (int round = 0; round < 50 && c->nreg && !rs_user_cancel(c); round++) {
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
				if (done && rs_set_state(c, e->file, FILE_COMPLETE) == 0) {
					rs_drop_fd(c, e->file);
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
	rs_maps_free(c);
}

/* Look at the files queued EARLY_LAG batches ago or more. */
void rs_early_confirm(struct restore *c)
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
			int fd = rs_kept_fd(c, e->file);
			unsigned int k = 0;

			if (fd < 0 && (!e->map || e->seen < 0))
				continue;
			if (e->seen < 0 && done > from && e->truthful && batched)
				break; /* not mapped this time: the next pass maps it */
			if (e->seen == 1)
				k = e->nruns;
			else if (e->seen < 0)
				for (; k < e->nruns; k++)
					if (rs_quick_look(c, fd, e->run[k], e->truthful) != 1)
						break;
			if (k == e->nruns && rs_set_state(c, e->file, FILE_COMPLETE) == 0)
				rs_drop_fd(c, e->file);
		}
	}
	memmove(c->early, c->early + done, (c->nearly - done) * sizeof(*c->early));
	c->nearly -= done;
}

