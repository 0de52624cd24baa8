/* SPDX-License-Identifier: MIT */
/*
 * pc_residency()'s strategy, written once against backend.h:
 *   1. the file's type and page range;
 *   2. counts from cachestat when that is all the caller wants;
 *   3. the verdict: does mincore tell this caller the truth about this file?
 *   4. the source: mincore with cachestat filling uniform chunks, or
 *      RWF_NOWAIT probes where mincore lies, or nothing (UNKNOWN);
 *   5. the labels: quality, source, perturbed.
 */
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "bitmap.h"
#include "opts.h"
#include "pc-private.h"

#define PC_RES_ALL_FLAGS (PC_RES_COUNT_ONLY | PC_RES_ALLOW_PERTURB | PC_RES_FORCE_MINCORE | \
			  PC_RES_FORCE_CACHESTAT | PC_RES_FORCE_NOWAIT)
#define PC_RES_FORCE_MASK (PC_RES_FORCE_MINCORE | PC_RES_FORCE_CACHESTAT | PC_RES_FORCE_NOWAIT)

/* mincore windows: 64 MiB of file (4 KiB pages) for 16 KiB of vector. */
#define PC_WINDOW_PAGES 16384
/* cachestat chunks: one PMD folio (2 MiB on 4 KiB pages), growing while
 * the answers stay uniform. */
#define PC_CHUNK_BYTES (UINT64_C(2) << 20)
#define PC_CHUNK_GROWTH_MAX 64
/* After a mixed chunk, stop asking cachestat for a while: 4x longer each
 * time the next answer is mixed again (a mixed chunk costs both calls). */
#define PC_MIXED_STREAK_MAX 1
#define PC_BACKOFF_GROWTH 4
#define PC_BACKOFF_MAX 4096
/* Pages per probe batch. */
#define PC_PROBE_BATCH 256

struct scan {
	struct pc_backend *b;
	struct pc_bfile *f;
	uint64_t ps;
	struct pc_residency *r;
	unsigned char *vec;    /* mincore window */
	int holes_cached;      /* next_data cannot tell the holes: mincore them */
	int used_mincore;
	int used_cachestat;
};

int pc_file_verdict(struct pc_backend *b, struct pc_bfile *f, const struct pc_modes *m,
		    uint64_t size)
{
	uint64_t ps = (uint64_t)b->ops->page_size(b);
	unsigned char v = 0;
	int ret, pass;

	if (m->mincore == PC_MINCORE_USELESS || m->mincore == PC_MINCORE_MAPPED_ONLY)
		return PC_VERDICT_HIDDEN; /* file pages show only as mapped, or all as 1 */
	/* The probe decides: a page that can never be cached (past the last
	 * page's largest folio, at any page size) reads 1 exactly when the
	 * kernel fakes this file's answers. */
	ret = b->ops->mincore(b, f, pc_never_cached_page(size, ps), 1, &v);
	if (ret == -EACCES || ret == -ENODEV)
		return PC_VERDICT_HIDDEN; /* fd not open for reading, or no mmap here:
					   * mincore cannot answer, others may */
	if (ret < 0)
		return ret;
	if (v & 1)
		return PC_VERDICT_HIDDEN;
	if (m->mincore == PC_MINCORE_FULL || m->mincore == PC_MINCORE_GATED_FAKED)
		return PC_VERDICT_TRUTHFUL;
	/* GATED_MAPPED or UNKNOWN: a failed gate reads 0 there too. cachestat
	 * has the same gate since 6.14: its invalid-flag probe answers EPERM
	 * exactly when the gate fails. But it also lets any fd open for
	 * writing through, which mincore's gate ignores (a file made immutable
	 * after the open, or an fd handed over by a writer): ask through a
	 * read-only reopen. Otherwise the predicate decides. */
	if (m->cachestat == PC_CACHESTAT_GATED) {
		struct pc_cachestat cs;
		struct pc_bfile *ro;

		if (b->ops->reopen_random(b, f, &ro) == 0) {
			ret = b->ops->cachestat(b, ro, 0, 0, 1, &cs);
			b->ops->close(b, ro);
			if (ret == -EPERM)
				return PC_VERDICT_HIDDEN;
			if (ret == -EINVAL)
				return PC_VERDICT_TRUTHFUL;
		}
	}
	pass = b->ops->gate_predict(b, f);
	if (pass < 0)
		return pass;
	return pass ? PC_VERDICT_TRUTHFUL : PC_VERDICT_HIDDEN;
}

/*
 * Where holes are never cached, the pages before the next data are not
 * resident: step over them (where cachestat is missing, a 1 TiB sparse
 * file on tmpfs is otherwise 2^28 pages of mincore, 46 s under valgrind).
 * Asked once per window, so a dense file pays one lseek per window. Any
 * failure only means mincore looks at every page.
 */
static uint64_t skip_hole(struct scan *s, uint64_t page, uint64_t end)
{
	uint64_t data;

	if (s->holes_cached || !s->b->ops->next_data ||
	    s->b->ops->next_data(s->b, s->f, page, &data) < 0) {
		s->holes_cached = 1;
		return page;
	}
	return data > page ? (data < end ? data : end) : page;
}

/* mincore over [page, page + n) into the bitmap, in bounded windows. */
static int fill_mincore(struct scan *s, uint64_t page, uint64_t n)
{
	struct pc_residency *r = s->r;
	uint64_t end = page + n;

	while ((page = skip_hole(s, page, end)) < end) {
		uint64_t w = end - page < PC_WINDOW_PAGES ? end - page : PC_WINDOW_PAGES;
		int ret = s->b->ops->mincore(s->b, s->f, page, w, s->vec);

		if (ret < 0)
			return ret;
		r->resident += pc_bitmap_from_vec(r->bits, page - r->first_page, s->vec, w);
		s->used_mincore = 1;
		page += w;
	}
	return 0;
}

static int chunk_cachestat(struct scan *s, uint64_t page, uint64_t n, uint64_t *cached)
{
	struct pc_cachestat cs;
	int ret = s->b->ops->cachestat(s->b, s->f, page * s->ps, n * s->ps, 0, &cs);

	if (ret < 0)
		return ret;
	*cached = cs.cache < n ? cs.cache : n;
	s->used_cachestat = 1;
	return 0;
}

static void mark_resident(struct scan *s, uint64_t page, uint64_t n)
{
	pc_bitmap_set_range(s->r->bits, page - s->r->first_page, n);
	s->r->resident += n;
}

/*
 * The truthful-mincore fill. cachestat answers uniform chunks (nothing or
 * everything cached) far faster than mincore, and its cost does not depend
 * on how many pages are asked; mixed chunks need mincore. When chunks keep
 * coming back mixed, cachestat is only overhead: skip it for a growing
 * number of chunks, and try again after that.
 */
static int fill_adaptive(struct scan *s, uint64_t start, uint64_t end)
{
	uint64_t chunk = PC_CHUNK_BYTES / s->ps ? PC_CHUNK_BYTES / s->ps : 1;
	uint64_t growth = 1, skip = 0, backoff = 1;
	unsigned int mixed_streak = 0;
	int cachestat_ok = 1;
	uint64_t page = start;

	while (page < end) {
		/* chunks are aligned to chunk boundaries in the file, like folios */
		uint64_t span = chunk * growth - page % chunk;
		uint64_t n = end - page < span ? end - page : span;
		uint64_t cached;
		int ret;

		if (!cachestat_ok || skip) {
			/* one mincore pass over what we do not ask cachestat about */
			uint64_t len = cachestat_ok ? chunk - page % chunk + (skip - 1) * chunk
						    : end - page;

			if (len > end - page)
				len = end - page;
			ret = fill_mincore(s, page, len);
			if (ret < 0)
				return ret;
			page += len;
			skip = 0;
			continue;
		}
		ret = chunk_cachestat(s, page, n, &cached);
		if (ret < 0) {
			cachestat_ok = 0; /* absent, blocked or gated: mincore alone */
			continue;
		}
		if (cached == 0 || cached == n) {
			if (cached)
				mark_resident(s, page, n);
			page += n;
			mixed_streak = 0;
			backoff = 1;
			if (growth < PC_CHUNK_GROWTH_MAX)
				growth *= 2;
			continue;
		}
		if (growth > 1) {
			growth /= 2; /* narrow down before paying for mincore */
			continue;
		}
		ret = fill_mincore(s, page, n);
		if (ret < 0)
			return ret;
		page += n;
		if (++mixed_streak >= PC_MIXED_STREAK_MAX) {
			skip = backoff;
			if (backoff < PC_BACKOFF_MAX)
				backoff *= PC_BACKOFF_GROWTH;
			mixed_streak = 0;
		}
	}
	return 0;
}

/* cachestat alone, bisecting mixed ranges down to single pages: truthful,
 * slow on fine patterns; for PC_RES_FORCE_CACHESTAT with a bitmap. */
static int fill_cachestat(struct scan *s, uint64_t page, uint64_t n)
{
	uint64_t cached;
	int ret = chunk_cachestat(s, page, n, &cached);

	if (ret < 0)
		return ret;
	if (cached == 0)
		return 0;
	if (cached == n) {
		mark_resident(s, page, n);
		return 0;
	}
	ret = fill_cachestat(s, page, n / 2);
	if (ret == 0)
		ret = fill_cachestat(s, page + n / 2, n - n / 2);
	return ret;
}

/* RWF_NOWAIT probes over the range. Destructive kernels: from the last page
 * to the first, since readahead only goes forward, so each answer is true
 * when it is taken. */
static int fill_probe(struct scan *s, struct pc_bfile *pf, int descending, int *source)
{
	struct pc_residency *r = s->r;
	uint64_t pages[PC_PROBE_BATCH];
	uint8_t hit[PC_PROBE_BATCH];
	uint64_t done = 0;

	while (done < r->npages) {
		size_t n = r->npages - done < PC_PROBE_BATCH ? (size_t)(r->npages - done)
							      : PC_PROBE_BATCH;
		ssize_t got;

		for (size_t i = 0; i < n; i++) {
			uint64_t idx = descending ? r->npages - 1 - (done + i) : done + i;

			pages[i] = r->first_page + idx;
		}
		got = s->b->ops->probe(s->b, pf, pages, n, hit, source);
		if (got < 0)
			return (int)got;
		if ((size_t)got != n)
			return -EIO;
		for (size_t i = 0; i < n; i++) {
			if (hit[i]) {
				pc_bitmap_set(r->bits, pages[i] - r->first_page);
				r->resident++;
			}
		}
		done += n;
	}
	return 0;
}

/* Whether bit i of r is set (0 outside the range). */
static int probed_hit(const struct pc_residency *r, uint64_t i)
{
	return i < r->npages && pc_bitmap_test(r->bits, i);
}

/*
 * A clean probe's misses between hits. A cached page can answer EAGAIN:
 * the page a readahead window marks (where the next window is to start)
 * does, without starting any I/O (seen on 6.1 after a sequential read:
 * the first page past the read, with the window's pages after it cached;
 * doc/kernels.md section 2), and so does one that is locked or still
 * being read. Those sit between cached pages. Such misses are asked once
 * more after a pause (a page under I/O lands meanwhile); those that miss
 * again are counted as uncertain and stay reported absent. 0 or -errno.
 */
static int reprobe(struct scan *s, struct pc_bfile *pf, const uint64_t *pages, size_t n,
		   int *source)
{
	struct pc_residency *r = s->r;
	uint8_t hit[PC_PROBE_BATCH];
	ssize_t got = s->b->ops->probe(s->b, pf, pages, n, hit, source);

	if (got < 0)
		return (int)got;
	if ((size_t)got != n)
		return -EIO;
	for (size_t k = 0; k < n; k++) {
		if (hit[k]) {
			pc_bitmap_set(r->bits, pages[k] - r->first_page);
			r->resident++;
		} else {
			r->uncertain++;
		}
	}
	return 0;
}

static int settle_misses(struct scan *s, struct pc_bfile *pf, int *source)
{
	struct pc_residency *r = s->r;
	uint64_t pages[PC_PROBE_BATCH];
	size_t n = 0;
	int ret = 0;

	for (uint64_t i = 1; i + 1 < r->npages && ret == 0; i++) {
		if (probed_hit(r, i) || !probed_hit(r, i - 1) || !probed_hit(r, i + 1))
			continue;
		if (n == 0)
			s->b->ops->pause_ms(s->b, 20);
		pages[n++] = r->first_page + i;
		if (n == PC_PROBE_BATCH) {
			ret = reprobe(s, pf, pages, n, source);
			n = 0;
		}
	}
	if (ret == 0 && n)
		ret = reprobe(s, pf, pages, n, source);
	return ret;
}

/* Forget a partial fill. */
static void reset_bits(struct pc_residency *r)
{
	if (r->bits)
		memset(r->bits, 0, pc_bitmap_words(r->npages) * sizeof(uint64_t));
	r->resident = 0;
}

static void make_unknown(struct pc_residency *r)
{
	free(r->bits);
	r->bits = NULL;
	r->resident = 0;
	r->quality = PC_QUALITY_UNKNOWN;
	r->source = PC_SOURCE_NONE;
	r->perturbed = 0;
}

/* Probe a file mincore hides. Returns 0 (r filled, or made UNKNOWN when no
 * acceptable probe exists) or -errno. Lack of memory or descriptors is an
 * error, never UNKNOWN: that label says the kernel hides the file. */
static int answer_by_probe(struct scan *s, unsigned int flags)
{
	struct pc_residency *r = s->r;
	struct pc_bfile *pf;
	int nowait, destructive, source = PC_SOURCE_NONE, ret;

	nowait = s->b->facts->nowait_mode(s->b, s->f);
	if (pc_err_is_resource(nowait))
		return nowait;
	if (nowait < 0)
		nowait = PC_NOWAIT_UNKNOWN;
	if (nowait == PC_NOWAIT_UNSUPPORTED ||
	    (nowait != PC_NOWAIT_CLEAN && !(flags & PC_RES_ALLOW_PERTURB))) {
		if (flags & PC_RES_FORCE_NOWAIT)
			return -EOPNOTSUPP;
		make_unknown(r);
		return 0;
	}
	destructive = nowait != PC_NOWAIT_CLEAN;
	/* A private open file description with FADV_RANDOM: the caller's fd
	 * keeps its readahead state, and a miss reads in only that page. The
	 * caller may hold an fd to a file it may not open itself (a 0400 file
	 * of another user, passed or opened before a setfsuid()): where a miss
	 * is clean, its own fd is probed then, with positional reads that
	 * leave its offset alone and change no page cache. */
	ret = s->b->ops->reopen_random(s->b, s->f, &pf);
	if ((ret == -EACCES || ret == -EPERM) && !destructive) {
		pf = s->f;
		ret = 0;
	}
	if (ret < 0) {
		if ((flags & PC_RES_FORCE_NOWAIT) || pc_err_is_resource(ret))
			return ret;
		make_unknown(r);
		return 0;
	}
	r->resident = 0;
	r->uncertain = 0;
	r->perturbed = destructive;
	ret = fill_probe(s, pf, destructive, &source);
	/* a destructive probe's misses read their pages in: nothing to ask
	 * again, and asking would find its own reads */
	if (ret == 0 && !destructive && r->bits)
		ret = settle_misses(s, pf, &source);
	if (pf != s->f)
		s->b->ops->close(s->b, pf);
	if (ret == -EOPNOTSUPP && !(flags & PC_RES_FORCE_NOWAIT)) {
		make_unknown(r);
		return 0;
	}
	if (ret < 0)
		return ret;
	r->quality = PC_QUALITY_EXACT;
	r->source = source;
	return 0;
}

static int check_flags(unsigned int flags)
{
	unsigned int force = flags & PC_RES_FORCE_MASK;

	if (flags & ~PC_RES_ALL_FLAGS)
		return -EINVAL;
	if (force & (force - 1))
		return -EINVAL; /* at most one forced source */
	return 0;
}

/* Page range [first, first + npages) of the request, clamped to EOF. */
static void page_range(uint64_t size, uint64_t ps, uint64_t offset, uint64_t length,
		       uint64_t *first, uint64_t *npages)
{
	uint64_t eof = pc_div_round_up(size, ps);
	uint64_t end = eof;

	*first = offset / ps;
	if (length && length <= UINT64_MAX - offset) {
		uint64_t req_end = pc_div_round_up(offset + length, ps);

		if (req_end < end)
			end = req_end;
	}
	*npages = *first < end ? end - *first : 0;
}

static int scan(struct scan *s, unsigned int flags, const struct pc_modes *m)
{
	struct pc_residency *r = s->r;
	int verdict;

	if (flags & PC_RES_FORCE_CACHESTAT) {
		int ret;

		if (flags & PC_RES_COUNT_ONLY) {
			uint64_t cached;

			ret = chunk_cachestat(s, r->first_page, r->npages, &cached);
			if (ret == 0)
				r->resident = cached;
		} else {
			ret = fill_cachestat(s, r->first_page, r->npages);
		}
		if (ret == -EPERM || ret == -ENOSYS || ret == -EOPNOTSUPP)
			return -EOPNOTSUPP;
		if (ret < 0)
			return ret;
		r->quality = PC_QUALITY_EXACT;
		r->source = PC_SOURCE_CACHESTAT;
		return 0;
	}
	/* Counts only: cachestat's own gate is the verdict, no mincore probe. */
	if ((flags & PC_RES_COUNT_ONLY) && !(flags & PC_RES_FORCE_MASK)) {
		uint64_t cached;

		if (chunk_cachestat(s, r->first_page, r->npages, &cached) == 0) {
			r->resident = cached;
			r->quality = PC_QUALITY_EXACT;
			r->source = PC_SOURCE_CACHESTAT;
			return 0;
		}
	}
	verdict = pc_file_verdict(s->b, s->f, m, r->file_size);
	if (verdict < 0)
		return verdict;
	/* Every way on from here counts through the bitmap. */
	if (!r->bits) {
		r->bits = pc_bitmap_new(r->npages);
		if (!r->bits)
			return -ENOMEM;
	}
	if (verdict == PC_VERDICT_HIDDEN || (flags & PC_RES_FORCE_NOWAIT)) {
		if (flags & PC_RES_FORCE_MINCORE)
			return -EOPNOTSUPP;
		if (!(flags & PC_RES_FORCE_NOWAIT)) {
			/* cachestat open to this caller (6.5..6.13 unpatched, or
			 * our fd is open for writing): exact, and side-effect
			 * free, by bisecting mixed ranges. */
			int ret = fill_cachestat(s, r->first_page, r->npages);

			if (ret == 0) {
				r->quality = PC_QUALITY_EXACT;
				r->source = PC_SOURCE_CACHESTAT;
				return 0;
			}
			if (ret != -EPERM && ret != -ENOSYS && ret != -EOPNOTSUPP)
				return ret;
			reset_bits(r);
		}
		return answer_by_probe(s, flags);
	}
	s->vec = malloc(r->npages < PC_WINDOW_PAGES ? (size_t)r->npages : PC_WINDOW_PAGES);
	if (!s->vec)
		return -ENOMEM;
	if (flags & PC_RES_FORCE_MINCORE) {
		int ret = fill_mincore(s, r->first_page, r->npages);

		if (ret < 0)
			return ret;
	} else {
		int ret = fill_adaptive(s, r->first_page, r->first_page + r->npages);

		if (ret < 0)
			return ret;
	}
	r->quality = PC_QUALITY_EXACT;
	r->source = s->used_mincore || !s->used_cachestat ? PC_SOURCE_MINCORE : PC_SOURCE_CACHESTAT;
	return 0;
}

int pc_residency_on(struct pc_backend *b, struct pc_bfile *f, uint64_t offset, uint64_t length,
		    unsigned int flags, struct pc_residency **out)
{
	struct scan s = { .b = b, .f = f };
	struct pc_residency *r;
	struct pc_modes m;
	struct pc_bstat st;
	int ret;

	if (!out)
		return -EINVAL;
	ret = check_flags(flags);
	if (ret < 0)
		return ret;
	ret = b->ops->fstat(b, f, &st);
	if (ret < 0)
		return ret;
	if (st.type != PC_BFILE_REGULAR && st.type != PC_BFILE_BLOCK)
		return -EINVAL;
	s.ps = (uint64_t)b->ops->page_size(b);
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	s.r = r;
	r->file_size = st.size;
	page_range(st.size, s.ps, offset, length, &r->first_page, &r->npages);
	/* The bitmap: the caller wants one; counts that cachestat cannot give
	 * in one call allocate theirs in scan(). */
	if (!(flags & PC_RES_COUNT_ONLY)) {
		r->bits = pc_bitmap_new(r->npages);
		if (!r->bits) {
			free(r);
			return -ENOMEM;
		}
	}
	if (r->npages == 0) {
		r->quality = PC_QUALITY_EXACT; /* nothing to hide: 0 of 0 */
		r->source = PC_SOURCE_NONE;
		ret = 0;
	} else {
		ret = b->facts ? b->facts->modes(b, &m) : -EINVAL;
		if (ret == 0)
			ret = scan(&s, flags, &m);
	}
	free(s.vec);
	if (ret < 0) {
		pc_residency_free(r);
		return ret;
	}
	if (flags & PC_RES_COUNT_ONLY) {
		free(r->bits);
		r->bits = NULL;
	}
	*out = r;
	return 0;
}

PC_EXPORT void pc_residency_free(struct pc_residency *r)
{
	if (!r)
		return;
	free(r->bits);
	free(r);
}

PC_EXPORT uint64_t pc_residency_first_page(const struct pc_residency *r)
{
	return r ? r->first_page : 0;
}

PC_EXPORT uint64_t pc_residency_npages(const struct pc_residency *r)
{
	return r ? r->npages : 0;
}

PC_EXPORT uint64_t pc_residency_resident(const struct pc_residency *r)
{
	return r ? r->resident : 0;
}

PC_EXPORT int pc_residency_quality(const struct pc_residency *r)
{
	return r ? r->quality : -EINVAL;
}

PC_EXPORT int pc_residency_source(const struct pc_residency *r)
{
	return r ? r->source : -EINVAL;
}

PC_EXPORT int pc_residency_perturbed(const struct pc_residency *r)
{
	return r ? r->perturbed : -EINVAL;
}

PC_EXPORT uint64_t pc_residency_uncertain(const struct pc_residency *r)
{
	return r ? r->uncertain : 0;
}

PC_EXPORT uint64_t pc_residency_file_size(const struct pc_residency *r)
{
	return r ? r->file_size : 0;
}

PC_EXPORT int pc_residency_test(const struct pc_residency *r, uint64_t page)
{
	if (!r)
		return -EINVAL;
	if (page < r->first_page || page - r->first_page >= r->npages)
		return -ERANGE;
	if (!r->bits)
		return -ENODATA;
	return pc_bitmap_test(r->bits, page - r->first_page);
}

PC_EXPORT int pc_residency_next_run(const struct pc_residency *r, uint64_t from,
				    struct pc_run *run)
{
	uint64_t start, len;

	if (!r || !run)
		return -EINVAL;
	if (!r->bits)
		return -ENODATA;
	if (from < r->first_page)
		from = r->first_page;
	if (from - r->first_page >= r->npages)
		return 0;
	if (!pc_bitmap_next_run(r->bits, r->npages, from - r->first_page, &start, &len))
		return 0;
	run->page = r->first_page + start;
	run->npages = len;
	return 1;
}
