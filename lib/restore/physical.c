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

#include "diskaddr.h"
#include "restore-private.h"

/*
 * PC_RESTORE_ORDER_PHYSICAL: every run of the snapshot held (24 bytes
 * each), split at its file's extents (FIEMAP) and sorted by the place of
 * each piece on the disk; files go in the order of their first piece.
 */

/* a piece of a run within one extent */
struct seg {
	uint64_t page, npages;
	uint64_t phys;             /* bytes; UINT64_MAX: not known */
};

struct pfile {
	char *rel;
	dev_t dev;
	ino_t ino;
	uint64_t index;            /* its place in the snapshot */
	struct seg *segs;
	size_t nsegs;
	uint64_t key;
};

struct pfiles {
	struct pfile *file;
	size_t n, cap;
	struct pc_run *runs;       /* one file's, as read */
	size_t caprun;
};

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
		      const struct pc_extent *ex, size_t nex, size_t *cap)
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

/* The runs of the current file into p->runs: their count, or -errno. */
static int64_t read_runs(struct restore *c, struct pfiles *p)
{
	size_t n = 0;
	int more;

	for (;;) {
		if (n == p->caprun) {
			size_t cap = p->caprun ? p->caprun * 2 : 1024;
			struct pc_run *r = realloc(p->runs, cap * sizeof(*r));

			if (!r)
				return -ENOMEM;
			p->runs = r;
			p->caprun = cap;
		}
		more = rs_next_run(c, &p->runs[n]);
		if (more < 0)
			return more;
		if (more == 0)
			return (int64_t)n;
		n++;
	}
}

static int pfiles_add(struct pfiles *p, const struct pfile *pf)
{
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 256;
		struct pfile *f = realloc(p->file, cap * sizeof(*f));

		if (!f)
			return -ENOMEM;
		p->file = f;
		p->cap = cap;
	}
	p->file[p->n++] = *pf;
	return 0;
}

/* Pass 1 for file f, open at fd (closed here): its runs, split by extent
 * and sorted, added to p. 0 or -errno. */
static int collect_file(struct restore *c, struct pfiles *p, const char *rel, int fd,
			const struct stat *st)
{
	struct pfile pf = { .dev = st->st_dev, .ino = st->st_ino, .index = c->files - 1 };
	struct pc_extent *ex = NULL;
	size_t nex = 0, capseg = 0, n;
	int64_t got = read_runs(c, p);
	int ret;

	if (got < 0) {
		close(fd);
		return (int)got;
	}
	n = rs_clamp(c, p->runs, (size_t)got, ((uint64_t)st->st_size + c->ps - 1) / c->ps);
	ret = pc_file_extents(fd, (uint64_t)st->st_size, &ex, &nex);
	close(fd);
	if (ret == 0)
		ret = split_runs(c, &pf, p->runs, n, ex, nex, &capseg);
	free(ex);
	pf.rel = strdup(rel);
	if (ret == 0 && pf.rel) {
		if (pf.nsegs)
			qsort(pf.segs, pf.nsegs, sizeof(*pf.segs), seg_cmp);
		pf.key = pf.nsegs ? pf.segs[0].phys : UINT64_MAX;
		ret = pfiles_add(p, &pf);
	}
	if (ret < 0 || !pf.rel) {
		free(pf.segs);
		free(pf.rel);
		return -ENOMEM;
	}
	return 0;
}

/* Pass 1: every file's runs, split by extent and sorted; then the files
 * sorted by their first piece. */
static int collect(struct restore *c, struct pfiles *p)
{
	const struct pc_restore_file *f;
	int ret;

	while ((ret = rs_next_file(c, &f)) > 0) {
		const char *rel = NULL;
		struct stat st;
		int fd;

		c->files++;
		if (f->quality == PC_QUALITY_UNKNOWN) {
			c->skipped[PC_RESTORE_SKIP_UNKNOWN_AT_CAPTURE]++;
			continue;
		}
		if (f->identity && f->npages == 0) {
			c->files_empty++;
			continue;
		}
		fd = rs_open_file(c, f, &rel, &st);
		if (fd < 0)
			continue;
		if (!rs_identity_ok(c, f, rel, &st, c->files - 1) && c->strict) {
			close(fd);
			continue;
		}
		ret = collect_file(c, p, rel, fd, &st);
		if (ret < 0)
			return ret;
	}
	if (ret < 0)
		return ret;
	/* stable: files without a disk address keep the snapshot's order */
	for (size_t i = 0; i < p->n; i++)
		if (p->file[i].key == UINT64_MAX)
			p->file[i].key = UINT64_MAX - p->n + i;
	if (p->n) /* qsort takes no NULL, even for 0 */
		qsort(p->file, p->n, sizeof(*p->file), pfile_cmp);
	return 0;
}

/* The log wants ascending runs: the pieces sorted back, and logged. */
static int log_segs(struct restore *c, struct pfile *pf)
{
	int ret = 0;

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
		struct pc_run r = { pf->segs[s].page, pf->segs[s].npages };

		ret = rs_log_runs(c, &r, 1);
	}
	return ret;
}

/* Pass 2 for one file: groups of its pieces that ascend in the file go to
 * pc_warm() together (group: BATCH_RUNS runs). */
static int warm_file(struct restore *c, struct pfile *pf, struct pc_run *group)
{
	struct stat st;
	size_t ng = 0;
	int fd, ret;

	rs_note_cancel(c);
	if (c->stop) {
		c->skipped[PC_RESTORE_SKIP_NOT_REACHED]++;
		return 0;
	}
	fd = pc_beneath_open(&c->bn, pf->rel, &st);
	if (fd < 0 || st.st_dev != pf->dev || st.st_ino != pf->ino) {
		if (fd >= 0)
			close(fd);
		c->skipped[PC_RESTORE_SKIP_ERROR]++;
		rs_event(c, PC_RESTORE_EV_REPLACED, pf->rel, 0, pf->index);
		return 0;
	}
	c->files_restored++;
	c->file_failed = false;
	ret = rs_log_path(c, pf->rel);
	for (size_t s = 0; s <= pf->nsegs && ret == 0; s++) {
		bool flush = s == pf->nsegs || ng == BATCH_RUNS ||
			(ng && pf->segs[s].page < group[ng - 1].page + group[ng - 1].npages);

		if (flush && ng) {
			ret = rs_warm(c, fd, pf->rel, group, ng);
			ng = 0;
		}
		if (s < pf->nsegs)
			group[ng++] = (struct pc_run){ pf->segs[s].page, pf->segs[s].npages };
	}
	if (ret == 0)
		ret = log_segs(c, pf);
	if (ret == 0)
		ret = rs_log_end(c);
	close(fd);
	return ret;
}

int rs_restore_physical(struct restore *c)
{
	struct pfiles p = { 0 };
	struct pc_run *group = NULL;
	int ret = collect(c, &p);

	if (ret == 0) {
		group = malloc(BATCH_RUNS * sizeof(*group));
		if (!group)
			ret = -ENOMEM;
	}
	for (size_t i = 0; i < p.n && ret == 0; i++)
		ret = warm_file(c, &p.file[i], group);
	for (size_t i = 0; i < p.n; i++) {
		free(p.file[i].rel);
		free(p.file[i].segs);
	}
	free(p.file);
	free(p.runs);
	free(group);
	return ret;
}
