/* SPDX-License-Identifier: MIT */
/*
 * Which semantics the kernel applies (doc/kernels.md section 5): decision
 * procedures that run on any backend. process.c runs them once per process
 * on the real kernel, model/api.c once per model task.
 */
#include <stdlib.h>

#include "backend.h"
#include "pc-private.h"

/* A page past EOF that no folio can hold (pc_never_cached_page()). */
static uint64_t beyond_eof_page(struct pc_backend *b, uint64_t size)
{
	return pc_never_cached_page(size, (uint64_t)b->ops->page_size(b));
}

/* Step 1: own memfd of two pages, page 0 written, mincore on a fresh
 * mapping. Returns PC_MINCORE_FULL for page-cache semantics (the gate is
 * decided in step 2), MAPPED_ONLY, USELESS, UNKNOWN, or -errno. */
static int mincore_semantics(struct pc_backend *b)
{
	const struct pc_backend_ops *ops = b->ops;
	struct pc_bfile *f;
	unsigned char vec[2] = { 0, 0 };
	int ret;

	ret = ops->scratch_new(b, -1, 2, &f);
	if (ret < 0)
		return ret;
	ret = ops->write_page(b, f, 0);
	if (ret == 0)
		ret = ops->mincore(b, f, 0, 2, vec);
	ops->close(b, f);
	if (ret < 0)
		return ret;
	switch ((vec[0] & 1) << 1 | (vec[1] & 1)) {
	case 2: /* [1,0] */
		return PC_MINCORE_FULL;
	case 0: /* [0,0] */
		return PC_MINCORE_MAPPED_ONLY;
	case 3: /* [1,1] */
		return PC_MINCORE_USELESS;
	default:
		return PC_MINCORE_UNKNOWN;
	}
}

struct gate_probe {
	int status;       /* 0 or -errno */
	int beyond_eof;   /* mincore of a page far past EOF */
	int page0;        /* mincore of page 0 (the ELF header: cached) */
	int self_passes;  /* the predicate for whoever ran the probe */
};

/* Step 2 (run as nobody when possible): the system file's answers. The
 * outcome goes to arg, so that as_nobody's own -EPERM stays unambiguous. */
static int gate_probe_fn(struct pc_backend *b, void *arg)
{
	const struct pc_backend_ops *ops = b->ops;
	struct gate_probe *g = arg;
	struct pc_bfile *f;
	struct pc_bstat st;
	unsigned char v;
	int ret;

	ret = ops->system_file(b, &f);
	if (ret < 0) {
		g->status = ret;
		return 0;
	}
	ret = ops->fstat(b, f, &st);
	if (ret == 0)
		ret = ops->mincore(b, f, beyond_eof_page(b, st.size), 1, &v);
	if (ret == 0) {
		g->beyond_eof = v & 1;
		ret = ops->mincore(b, f, 0, 1, &v);
	}
	if (ret == 0) {
		g->page0 = v & 1;
		g->self_passes = ops->gate_predict(b, f);
		ret = g->self_passes < 0 ? g->self_passes : 0;
	}
	ops->close(b, f);
	g->status = ret;
	return 0;
}

int pc_detect_mincore_on(struct pc_backend *b)
{
	struct gate_probe g = { 0 };
	int semantics, ret;

	semantics = mincore_semantics(b);
	if (semantics < 0 || semantics == PC_MINCORE_USELESS || semantics == PC_MINCORE_UNKNOWN)
		return semantics;
	ret = b->ops->as_nobody(b, gate_probe_fn, &g);
	if (ret == -EPERM) {
		/* Unprivileged already: our own view is the users' view, unless
		 * we pass the gate on the system file anyway. */
		ret = gate_probe_fn(b, &g);
		if (g.status == 0 && g.self_passes && semantics == PC_MINCORE_FULL)
			return PC_MINCORE_UNKNOWN;
	}
	if (ret < 0)
		return ret;
	if (g.status < 0)
		return g.status;
	if (g.beyond_eof && g.page0)
		return semantics == PC_MINCORE_FULL ? PC_MINCORE_GATED_FAKED : PC_MINCORE_UNKNOWN;
	if (!g.beyond_eof && g.page0)
		return semantics == PC_MINCORE_FULL ? PC_MINCORE_FULL : PC_MINCORE_UNKNOWN;
	if (!g.beyond_eof && !g.page0)
		return semantics == PC_MINCORE_MAPPED_ONLY ? PC_MINCORE_MAPPED_ONLY
							   : PC_MINCORE_GATED_MAPPED;
	return PC_MINCORE_UNKNOWN;
}

/* cachestat with an invalid flag on the system file, as nobody: the
 * permission check comes before the flags check. The answer goes to
 * *(int *)arg, so that as_nobody's own -EPERM stays unambiguous. */
static int cachestat_gate_fn(struct pc_backend *b, void *arg)
{
	struct pc_cachestat cs;
	struct pc_bfile *f;
	int *answer = arg;
	int ret;

	ret = b->ops->system_file(b, &f);
	if (ret < 0) {
		*answer = ret;
		return 0;
	}
	ret = b->ops->gate_predict(b, f);
	if (ret == 0)
		ret = b->ops->cachestat(b, f, 0, 0, 1, &cs);
	else if (ret > 0)
		ret = -EBUSY; /* we pass the gate anyway: nothing to learn */
	b->ops->close(b, f);
	*answer = ret;
	return 0;
}

int pc_detect_cachestat_on(struct pc_backend *b)
{
	struct pc_cachestat cs;
	struct pc_bfile *f;
	int answer = 0;
	int ret;

	ret = b->ops->scratch_new(b, -1, 1, &f);
	if (ret < 0)
		return ret;
	ret = b->ops->cachestat(b, f, 0, 0, 1, &cs);
	b->ops->close(b, f);
	if (ret == -ENOSYS)
		return PC_CACHESTAT_ABSENT;
	if (ret == -EPERM)
		return PC_CACHESTAT_BLOCKED; /* our own file: a filter, not the gate */
	if (pc_err_is_resource(ret))
		return ret;
	if (ret != -EINVAL)
		return PC_CACHESTAT_UNKNOWN;

	ret = b->ops->as_nobody(b, cachestat_gate_fn, &answer);
	if (ret == -EPERM)
		ret = cachestat_gate_fn(b, &answer);
	if (ret < 0)
		return ret;
	if (answer == -EPERM)
		return PC_CACHESTAT_GATED;
	if (answer == -EINVAL)
		return PC_CACHESTAT_OPEN;
	/* no system file or no memory for it: nothing learnt, nothing to keep */
	if (pc_err_is_resource(answer))
		return answer;
	return PC_CACHESTAT_UNKNOWN;
}

/* One NOWAIT probe of page: 1 hit, 0 miss, or a negative errno. */
static int probe_one(struct pc_backend *b, struct pc_bfile *f, uint64_t page)
{
	uint8_t hit = 0;
	int source;
	ssize_t n = b->ops->probe(b, f, &page, 1, &hit, &source);

	if (n < 0)
		return (int)n;
	return n == 1 ? hit : -EIO;
}

/* Whether page of f is in the cache (even while still being read),
 * asked without reading it: cachestat. 1, 0, or -1 when it does not answer
 * (absent, blocked, or gated on a file that is not ours). */
static int present(struct pc_backend *b, struct pc_bfile *f, uint64_t page)
{
	uint64_t ps = (uint64_t)b->ops->page_size(b);
	struct pc_cachestat cs;

	if (b->ops->cachestat(b, f, page * ps, ps, 0, &cs) < 0)
		return -1;
	return cs.cache > 0;
}

/*
 * Whether page of our own scratch file is out of the cache, asked without
 * reading it: cachestat (we own the file, so no gate applies), else mincore
 * where it shows the page cache. 1 cold, 0 resident, -1 cannot tell.
 */
static int confirm_cold(struct pc_backend *b, struct pc_bfile *f, uint64_t page)
{
	struct pc_modes m;
	unsigned char v;
	int in = present(b, f, page);

	if (in >= 0)
		return !in;
	if (b->facts && b->facts->modes(b, &m) == 0 &&
	    (m.mincore == PC_MINCORE_FULL || m.mincore == PC_MINCORE_GATED_FAKED ||
	     m.mincore == PC_MINCORE_GATED_MAPPED) &&
	    b->ops->mincore(b, f, page, 1, &v) == 0)
		return !(v & 1);
	return -1;
}

/*
 * Probe page of f, which should not be resident, and watch whether the miss
 * brings it in. The watching is done with NOWAIT probes too, not mincore:
 * mincore may show only mapped pages (MAPPED_ONLY) or all ones (USELESS).
 * A hit on the first probe of a page known to be cold means the probe's own
 * readahead finished before the read looked again (seen under CPU load on
 * destructive kernels). Returns the mode, or -EAGAIN when the first probe
 * hit a page not known to be cold: nothing learnt.
 */
static int nowait_watch(struct pc_backend *b, struct pc_bfile *f, uint64_t page, int cold)
{
	int hit = probe_one(b, f, page);

	if (hit == -EOPNOTSUPP)
		return PC_NOWAIT_UNSUPPORTED;
	if (pc_err_is_resource(hit))
		return hit;
	if (hit < 0)
		return PC_NOWAIT_UNKNOWN;
	if (hit)
		return cold == 1 ? PC_NOWAIT_DESTRUCTIVE : -EAGAIN;
	/* The readahead a miss starts puts the page in the cache at once and
	 * reads it asynchronously: cachestat (which counts pages still being
	 * read) sees it right away where it answers us; the probes see it only
	 * once the read completes, which a busy disk can delay.
	 * On a clean kernel the repeated misses change nothing either. */
	for (unsigned int waited = 0, pause = 5; waited < 1000; waited += pause) {
		int in = present(b, f, page);

		if (in == 1)
			return PC_NOWAIT_DESTRUCTIVE;
		/* cachestat sees the page at once: ~100 ms settles it. Without
		 * it, only the read's completion shows, which a loaded disk
		 * (or valgrind) delays: back off up to about a second. */
		if (in == 0 && waited >= 100)
			break;
		if (in < 0 && pause < 100)
			pause *= 2;
		b->ops->pause_ms(b, pause);
		hit = probe_one(b, f, page);
		if (pc_err_is_resource(hit))
			return hit;
		if (hit < 0)
			return PC_NOWAIT_UNKNOWN;
		if (hit)
			return PC_NOWAIT_DESTRUCTIVE;
	}
	return PC_NOWAIT_CLEAN;
}

static int nowait_scratch(struct pc_backend *b, struct pc_bfile *f)
{
	const struct pc_backend_ops *ops = b->ops;
	int ret;

	ret = ops->write_page(b, f, 0);
	if (ret == 0)
		ret = ops->write_page(b, f, 1);
	if (ret == 0)
		ret = ops->sync(b, f);
	if (pc_err_is_resource(ret))
		return ret;
	if (ret < 0)
		return PC_NOWAIT_UNKNOWN;
	/* A resident page first: unsupported filesystems (tmpfs) answer
	 * EOPNOTSUPP, and they cannot evict either. */
	ret = probe_one(b, f, 0);
	if (ret == -EOPNOTSUPP)
		return PC_NOWAIT_UNSUPPORTED;
	if (pc_err_is_resource(ret))
		return ret;
	if (ret < 0)
		return PC_NOWAIT_UNKNOWN;
	/* A few tries: a page whose eviction cannot be confirmed and that then
	 * reads as a hit teaches nothing, and the next eviction may work. */
	for (int attempt = 0; attempt < 3; attempt++) {
		int cold;

		if (ops->evict(b, f, 0, 2) < 0)
			return PC_NOWAIT_UNKNOWN;
		cold = confirm_cold(b, f, 1);
		if (cold == 0)
			continue; /* still resident: under I/O, or not evictable */
		ret = nowait_watch(b, f, 1, cold);
		if (ret != -EAGAIN)
			return ret;
	}
	return PC_NOWAIT_UNKNOWN;
}

int pc_detect_nowait_on_dir(struct pc_backend *b, int dirfd, int may_use_cold_page)
{
	struct pc_bfile *f;
	uint64_t page;
	int ret;

	/* Short of memory or descriptors: an error, not a weaker answer (the
	 * caller would take UNKNOWN for a fact about the filesystem). */
	ret = b->ops->scratch_new(b, dirfd, 2, &f);
	if (ret == 0) {
		ret = nowait_scratch(b, f);
		b->ops->close(b, f);
		return ret;
	}
	if (pc_err_is_resource(ret))
		return ret;
	if (!may_use_cold_page)
		return PC_NOWAIT_UNKNOWN;
	/* Read-only or foreign directory: one cold page of a file we can see. */
	ret = b->ops->find_cold_page(b, dirfd, &f, &page);
	if (pc_err_is_resource(ret))
		return ret;
	if (ret < 0)
		return PC_NOWAIT_UNKNOWN;
	/* find_cold_page just saw the page cold through a truthful mincore */
	ret = nowait_watch(b, f, page, 1);
	b->ops->close(b, f);
	if (pc_err_is_resource(ret))
		return ret;
	return ret < 0 ? PC_NOWAIT_UNKNOWN : ret;
}

int pc_detect_nowait_on(struct pc_backend *b, int dirfd)
{
	return pc_detect_nowait_on_dir(b, dirfd, 1);
}
