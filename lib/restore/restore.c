/* SPDX-License-Identifier: MIT */
/*
 * pc_restore(): bring the pages a snapshot recorded back into the page
 * cache, beneath a root only, within a memory budget.
 *
 * The source streams (one that can be rewound is read through once first,
 * so that a corrupt snapshot reads nothing); runs go to pc_warm() in
 * batches of BATCH_RUNS, which skips pages already resident. What was
 * asked for is logged to a memfd (2 to 3 bytes per run, varints as in the
 * snapshot), so that the final measurement of the wanted pages' residency
 * can read it again whatever the snapshot's size, even from a pipe.
 * PC_RESTORE_ORDER_PHYSICAL is the exception: it holds every run of the
 * snapshot (24 bytes each) to sort them by their place on the disk
 * (FIEMAP). Small files go in batches to up to four threads (open,
 * identity, pc_warm()); the calling thread counts them in order. With
 * PC_RESTORE_ORDER_DISK (auto's choice on a rotating disk) they go to
 * windows of up to 65536 files instead, opened first and warmed in the
 * order of their place on the disk (window.c). Nothing here is global:
 * every piece of state is the struct restore of one call.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../opts.h"
#include "restore-private.h"

/* ---- names ---- */

PC_EXPORT const char *pc_restore_event_name(int reason)
{
	static const char *const names[] = {
		[PC_RESTORE_EV_MISSING] = "skipped: missing",
		[PC_RESTORE_EV_NOT_BENEATH] = "refused: outside the root",
		[PC_RESTORE_EV_OUTSIDE] = "refused: outside the root",
		[PC_RESTORE_EV_SYMLINK] = "refused: a symlink",
		[PC_RESTORE_EV_NAME_TOO_LONG] = "refused: a name too long",
		[PC_RESTORE_EV_UNSAFE_PATH] = "refused: an unsafe path",
		[PC_RESTORE_EV_NOT_REGULAR] = "skipped: not a regular file",
		[PC_RESTORE_EV_OPEN_ERROR] = "skipped: could not be opened",
		[PC_RESTORE_EV_REPLACED] = "skipped: replaced while the restore ran",
		[PC_RESTORE_EV_READ_ERROR] = "read error",
		[PC_RESTORE_EV_CHANGED] = "changed since the capture",
		[PC_RESTORE_EV_RENAMED] = "restored under another name",
		[PC_RESTORE_EV_SEARCH_FAILED] = "the search for renamed files failed",
	};

	if (reason < 0 || (size_t)reason >= PC_ARRAY_SIZE(names) || !names[reason])
		return "unknown";
	return names[reason];
}

PC_EXPORT const char *pc_restore_skip_name(int skip)
{
	static const char *const names[PC_RESTORE_SKIP_COUNT] = {
		"unknown_at_capture", "missing", "refused", "not_regular", "changed",
		"not_reached", "error",
	};

	return skip < 0 || skip >= PC_RESTORE_SKIP_COUNT ? "unknown" : names[skip];
}

PC_EXPORT const char *pc_restore_stop_name(int stop)
{
	static const char *const names[] = { "none", "budget", "evicting", "cancelled" };

	return stop < 0 || (size_t)stop >= PC_ARRAY_SIZE(names) ? "unknown" : names[stop];
}

PC_EXPORT const char *pc_restore_order_name(int order)
{
	static const char *const names[] = { "auto", "file", "disk", "physical" };

	return order < 0 || (size_t)order >= PC_ARRAY_SIZE(names) ? "unknown" : names[order];
}

/* ---- the source ---- */

static int source_copy(struct pc_restore_source *dst, const struct pc_restore_source *src)
{
	int ret;

	if (!src)
		return -EINVAL;
	ret = pc_opts_copy(dst, sizeof(*dst), src, src->size);
	if (ret == 0 && (!dst->next_file || !dst->next_run))
		ret = -EINVAL;
	return ret;
}

static int validate(const struct pc_restore_source *s)
{
	const struct pc_restore_file *f;
	struct pc_run run;
	int ret;

	if (!s->rewind)
		return 0;
	ret = s->rewind(s->arg);
	if (ret == -ESPIPE)
		return 0;
	if (ret < 0)
		return ret;
	while ((ret = s->next_file(s->arg, &f)) > 0)
		while ((ret = s->next_run(s->arg, &run)) > 0)
			;
	if (ret < 0)
		return ret;
	ret = s->rewind(s->arg);
	return ret < 0 ? ret : 1;
}

PC_EXPORT int pc_restore_source_validate(const struct pc_restore_source *src)
{
	struct pc_restore_source s;
	int ret = source_copy(&s, src);

	return ret < 0 ? ret : validate(&s);
}

/* ---- the restore ---- */

/* The options into c. 0 or -EINVAL. */
static int setup(struct restore *c, int rootfd, const struct pc_restore_source *src,
		 const struct pc_restore_opts *opts)
{
	const unsigned int known = PC_RESTORE_STRICT | PC_RESTORE_NO_FIND_RENAMED |
		PC_RESTORE_VALIDATED;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int ret;

	for (unsigned int i = 0; i < WATCH_SLOTS; i++)
		c->watch[i].fd = -1;
	c->bn.rootfd = c->bn.procfd = -1;
	c->cachestat_ok = c->nowait_ok = true;
	c->ps = (uint64_t)pc_page_size();
	ret = pc_opts_copy(&c->o, sizeof(c->o), opts, opts ? opts->size : 0);
	if (ret == 0)
		ret = source_copy(&c->src, src);
	if (ret < 0 || rootfd < 0 || (c->o.flags & ~known) ||
	    c->o.order < PC_RESTORE_ORDER_AUTO || c->o.order > PC_RESTORE_ORDER_PHYSICAL ||
	    c->o.threads > JOB_THREADS_MAX ||
	    (c->o.root_path && c->o.root_path[0] != '/'))
		return -EINVAL;
	c->strict = c->o.flags & PC_RESTORE_STRICT;
	c->no_find_renamed = c->o.flags & PC_RESTORE_NO_FIND_RENAMED;
	c->order = c->o.order;
	c->rate = c->o.rate;
	c->chunk = c->o.chunk_bytes;
	c->queue_depth = c->o.queue_depth;
	c->strategy = c->o.strategy;
	/* paced: a stream's readahead would run up to two windows (16 MiB
	 * with read_ahead_kb 8192) ahead of the pace; readahead(2) reads
	 * what it is asked (pc_warm's default today; this keeps it so) */
	if (c->rate && c->strategy == PC_WARM_DEFAULT)
		c->strategy = PC_WARM_READAHEAD;
	c->threads = c->o.threads ? c->o.threads
		: cpus < 1 ? 1 : cpus > JOB_THREADS ? JOB_THREADS : (size_t)cpus;
	c->root = c->o.root_path;
	return 0;
}

/* The budget: max_bytes, or the memory there is. */
static void set_budget(struct restore *c)
{
	const char *why = NULL;

	pc_memory_budget(&c->mem_room, &why);
	if (c->o.max_bytes) {
		c->budget = c->o.max_bytes;
		c->budget_why = "max_bytes";
	} else {
		c->budget = c->mem_room;
		c->budget_why = why;
		if (c->budget == UINT64_MAX)
			c->budget_why = "none: the available memory is unknown";
	}
	c->budget_total = c->budget;
}

static void fill_stats(const struct restore *c, struct pc_restore_stats *stats)
{
	struct pc_restore_stats s = { .size = sizeof(s) };

	s.files = c->files;
	s.files_restored = c->files_restored;
	s.files_without_pages = c->files_empty;
	memcpy(s.skipped, c->skipped, sizeof(c->skipped));
	s.changed = c->changed;
	s.renamed = c->renamed;
	s.pages_wanted = c->wanted;
	s.pages_beyond_eof = c->beyond_eof;
	s.pages_resident_before = c->resident_before;
	s.resident_before_quality = c->hidden ? PC_QUALITY_UNKNOWN : PC_QUALITY_EXACT;
	s.pages_read = c->read;
	s.bytes_read = c->bytes;
	s.pages_read_again = c->retried;
	s.pages_streamed = c->streamed;
	s.budget_bytes = c->budget_total;
	s.budget_from = c->budget_why;
	s.eviction_watch = c->watch_state;
	s.evicted_again_pages = c->evicted_seen;
	s.stopped = c->stop;
	s.read_error = c->read_error;
	s.order = c->order;
	s.order_why = c->order_why;
	s.open_method = pc_beneath_method(&c->bn);
	s.seconds = c->elapsed;
	s.final_pages_wanted = c->final_wanted;
	s.final_pages_resident = c->final_resident;
	s.final_quality = c->final_unknown ? PC_QUALITY_UNKNOWN : PC_QUALITY_EXACT;
	s.settle_seconds = c->settle;
	s.settle_end = c->settle_end;
	pc_opts_out(stats, &s, sizeof(s));
}

static void teardown(struct restore *c)
{
	rs_lost_free(c);
	rs_kept_free(c);
	free(c->early);
	free(c->mapvec);
	free(c->scratch);
	rs_watch_free(c);
	pc_beneath_close(&c->bn);
	if (c->log)
		fclose(c->log);
	free(c->state);
	free(c->memo);
}

/* The reading, up to the final measurement: 0 or -errno. */
static int run(struct restore *c)
{
	int ret;

	c->log = rs_log_open();
	if (!c->log)
		return pc_neg_errno();
	set_budget(c);
	rs_kept_init(c);
	/* a root on overlayfs (or where fstatfs cannot tell): mappings there
	 * are of a layer's file, which the gate judges through the layer's
	 * mount and, for a metacopy file, another inode than fstat shows (its
	 * data below): pc_can_do_mincore() asks the kernel file by file */
	c->mincore_everywhere = rs_mincore_truthful_everywhere() &&
		pc_on_overlayfs(c->bn.rootfd) == 0;
	c->overflow_uid = rs_overflow_uid();
	c->start = rs_now();
	rs_choose_order(c);
	ret = c->order == PC_RESTORE_ORDER_PHYSICAL ? rs_restore_physical(c)
		: rs_restore_in_order(c);
	if (ret == 0)
		ret = rs_find_renamed(c);
	c->elapsed = rs_now() - c->start;
	return ret;
}

PC_EXPORT int pc_restore(int rootfd, const struct pc_restore_source *src,
			 const struct pc_restore_opts *opts, struct pc_restore_stats *stats)
{
	struct restore *c = calloc(1, sizeof(*c));
	int ret;

	if (!c)
		return -ENOMEM;
	ret = setup(c, rootfd, src, opts);
	if (ret == 0) {
		/* a corrupt snapshot reads nothing (from a pipe: up to the damage) */
		ret = c->o.flags & PC_RESTORE_VALIDATED ? c->o.validated : validate(&c->src);
		c->can_reread = ret == 1;
	}
	if (ret >= 0) {
		pc_beneath_init(&c->bn, rootfd, false);
		ret = run(c);
	}
	if (ret == 0)
		rs_settle(c);
	fill_stats(c, stats);
	teardown(c);
	free(c);
	return ret < 0 ? ret : 0;
}
