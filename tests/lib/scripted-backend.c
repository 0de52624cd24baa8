/* SPDX-License-Identifier: MIT */
/*
 * The scripted backend: doc/kernels.md's variants as a few hundred lines of
 * bookkeeping. Every answer is derived from the per-page truth and the
 * configured variant, never from the machine the tests run on.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "scripted-backend.h"

/* Per-page state bits of a scripted file. */
#define PG_RESIDENT 0x1u
#define PG_MAPPED   0x2u
#define PG_DIRTY    0x4u

struct pc_sfile {
	struct pc_sfile *next;
	uint64_t size;          /* bytes */
	uint64_t cap;           /* pages allocated */
	uint64_t ps;            /* the backend's page size */
	unsigned char *pg;      /* PG_* per page */
	unsigned char *pending; /* pause_ms calls until a started read completes; 0 none */
	int fs;
	int type;
	int gate[2];
	int predict[2];
	int hugetlb;
	int scratch;            /* made by scratch_new: the detector may change it */
	int shrink_armed;
	uint64_t shrink_size;
};

/* An open file description. */
struct pc_bfile {
	struct pc_bfile *next;
	struct pc_sfile *file;
	unsigned int id;
	int writable;
	int random;
	int closed;
};

struct pc_scripted {
	struct pc_backend backend;
	struct pc_scripted_kernel k;
	int who;                        /* enum pc_scripted_who */
	struct pc_sfile *files;
	struct pc_bfile *handles;
	unsigned int next_id;
	unsigned int open;
	struct pc_sfile *system_file;
	int inject[PC_SOP_COUNT];
	unsigned long calls[PC_SOP_COUNT];
	unsigned long cachestat_queries;
	unsigned long foreign_changes;
	unsigned long misuse;
	uint64_t max_mincore;
	uint64_t mincore_pages;
	struct pc_scripted_probe *log;
	size_t nlog, log_cap;
};

static struct pc_scripted *ctx(struct pc_backend *b)
{
	return b->ctx;
}

static uint64_t ps_of(const struct pc_scripted *s)
{
	return (uint64_t)s->k.page_size;
}

static uint64_t file_npages(const struct pc_sfile *file)
{
	return file->size / file->ps + (file->size % file->ps != 0);
}

static struct pc_scripted_fs *fs_of(struct pc_scripted *s, const struct pc_sfile *file)
{
	return &s->k.fs[file->fs];
}

/* Count the call; 0 to go on, or the injected error. */
static int enter(struct pc_scripted *s, enum pc_scripted_op op)
{
	s->calls[op]++;
	return s->inject[op];
}

/* A live handle, or NULL (and a recorded misuse). */
static struct pc_bfile *live(struct pc_scripted *s, struct pc_bfile *f)
{
	if (!f || f->closed) {
		s->misuse++;
		return NULL;
	}
	return f;
}

static int page_resident(const struct pc_scripted *s, const struct pc_sfile *file, uint64_t p)
{
	return p < file_npages(file) && (file->pg[p] & PG_RESIDENT);
}

static int page_mapped(const struct pc_scripted *s, const struct pc_sfile *file, uint64_t p)
{
	return p < file_npages(file) && (file->pg[p] & PG_MAPPED);
}

/* ---- the ops -------------------------------------------------------------- */

static long op_page_size(struct pc_backend *b)
{
	struct pc_scripted *s = ctx(b);

	s->calls[PC_SOP_PAGE_SIZE]++;
	return s->k.page_size;
}

static int op_fstat(struct pc_backend *b, struct pc_bfile *f, struct pc_bstat *st)
{
	struct pc_scripted *s = ctx(b);
	int ret = enter(s, PC_SOP_FSTAT);

	if (ret)
		return ret;
	if (!live(s, f))
		return -EBADF;
	st->type = f->file->type;
	st->size = f->file->size;
	if (f->file->shrink_armed) {
		f->file->shrink_armed = 0;
		pc_scripted_truncate(f->file, f->file->shrink_size);
	}
	return 0;
}

/* Whether the page cache holds file page p, as mincore's lookup finds it:
 * past EOF, in the last page's PMD folio (pmd_tail). */
static int page_cached(const struct pc_scripted *s, const struct pc_sfile *file, uint64_t p)
{
	uint64_t n = file_npages(file), pmd = file->ps / 8;

	if (s->k.pmd_tail && n && p >= n && pmd && p < (n + pmd - 1) / pmd * pmd)
		return page_resident(s, file, n - 1);
	return page_resident(s, file, p);
}

/* What mincore reports for file page p through a fresh, untouched mapping. */
static unsigned char mincore_byte(struct pc_scripted *s, const struct pc_sfile *file, uint64_t p)
{
	int gate = file->gate[s->who];

	switch (s->k.mincore) {
	case PC_MINCORE_FULL:
		return page_cached(s, file, p);
	case PC_MINCORE_GATED_FAKED:
		return gate ? page_cached(s, file, p) : 1;
	case PC_MINCORE_GATED_MAPPED:
		return gate ? page_cached(s, file, p) : page_mapped(s, file, p);
	case PC_MINCORE_MAPPED_ONLY:
		return page_mapped(s, file, p);
	case PC_MINCORE_USELESS:
	default:
		return 1;
	}
}

static int op_mincore(struct pc_backend *b, struct pc_bfile *f, uint64_t page, uint64_t npages,
		      unsigned char *vec)
{
	struct pc_scripted *s = ctx(b);
	int ret = enter(s, PC_SOP_MINCORE);

	if (ret)
		return ret;
	if (!live(s, f))
		return -EBADF;
	if (npages > s->max_mincore)
		s->max_mincore = npages;
	s->mincore_pages += npages;
	if (npages && !vec)
		return -EFAULT;
	/* a mapping of that many pages must fit in the address space */
	if (npages > (UINT64_C(1) << 47) / ps_of(s) || page > UINT64_MAX / ps_of(s) - npages)
		return -ENOMEM;
	for (uint64_t i = 0; i < npages; i++)
		vec[i] = mincore_byte(s, f->file, page + i);
	return 0;
}

/* The memory filesystem keeps data only in its cache: a page that is not
 * resident there is a hole. Disk filesystems cannot say. */
static int op_next_data(struct pc_backend *b, struct pc_bfile *f, uint64_t page, uint64_t *data)
{
	struct pc_scripted *s = ctx(b);
	int ret = enter(s, PC_SOP_NEXT_DATA);

	if (ret)
		return ret;
	if (!live(s, f))
		return -EBADF;
	if (f->file->fs != PC_SCRIPTED_MEMFS)
		return -EOPNOTSUPP;
	for (uint64_t p = page; p < file_npages(f->file); p++) {
		if (page_resident(s, f->file, p)) {
			*data = p;
			return 0;
		}
	}
	*data = UINT64_MAX;
	return 0;
}

static int op_cachestat(struct pc_backend *b, struct pc_bfile *f, uint64_t off, uint64_t len,
			unsigned int flags, struct pc_cachestat *out)
{
	struct pc_scripted *s = ctx(b);
	struct pc_sfile *file;
	uint64_t ps = ps_of(s), first, end, eof;
	int ret = enter(s, PC_SOP_CACHESTAT);

	if (ret)
		return ret;
	/* what the syscall entry does before looking at anything */
	if (s->k.cachestat == PC_CACHESTAT_ABSENT)
		return -ENOSYS;
	if (s->k.cachestat == PC_CACHESTAT_BLOCKED)
		return -EPERM; /* a seccomp filter: even on one's own memfd */
	/* then the kernel's own order: EBADF, EFAULT, EOPNOTSUPP, EPERM, EINVAL */
	if (!live(s, f))
		return -EBADF;
	if (!out)
		return -EFAULT;
	file = f->file;
	if (file->hugetlb)
		return -EOPNOTSUPP;
	if (s->k.cachestat == PC_CACHESTAT_GATED && !file->gate[s->who] && !f->writable)
		return -EPERM;
	if (flags)
		return -EINVAL;
	s->cachestat_queries++;

	memset(out, 0, sizeof(*out));
	eof = file_npages(file);
	first = off / ps;
	if (len == 0 || len > UINT64_MAX - off)
		end = eof;
	else
		end = (off + len - 1) / ps + 1;
	if (end > eof)
		end = eof;
	for (uint64_t p = first; p < end; p++) {
		/* pages still being read in count, as the kernel counts them */
		if ((file->pg[p] & PG_RESIDENT) || (file->pending && file->pending[p])) {
			out->cache++;
			if (file->pg[p] & PG_DIRTY)
				out->dirty++;
		}
	}
	return 0;
}

/* A NOWAIT miss on a destructive kernel: readahead of [p, p + ra). */
static void start_readahead(struct pc_scripted *s, struct pc_sfile *file, uint64_t p,
			    unsigned int ra)
{
	struct pc_scripted_fs *fs = fs_of(s, file);
	uint64_t end = p + (ra ? ra : 1), eof = file_npages(file);

	if (end > eof)
		end = eof;
	if (fs->ra_delay && !file->pending) {
		file->pending = calloc(file->cap ? file->cap : 1, 1);
		if (!file->pending)
			abort();
	}
	for (uint64_t q = p; q < end; q++) {
		if (file->pg[q] & PG_RESIDENT)
			continue;
		if (fs->ra_delay) {
			if (!file->pending[q])
				file->pending[q] = (unsigned char)(fs->ra_delay > 255 ? 255 : fs->ra_delay);
		} else {
			file->pg[q] |= PG_RESIDENT;
		}
	}
}

static ssize_t op_probe(struct pc_backend *b, struct pc_bfile *f, const uint64_t *pages,
			size_t n, uint8_t *resident, int *source)
{
	struct pc_scripted *s = ctx(b);
	struct pc_scripted_fs *fs;
	struct pc_sfile *file;
	int ret = enter(s, PC_SOP_PROBE);

	if (ret)
		return ret;
	if (!live(s, f))
		return -EBADF;
	file = f->file;
	fs = fs_of(s, file);
	if (fs->nowait == PC_NOWAIT_UNSUPPORTED)
		return -EOPNOTSUPP;
	if (n && (!pages || !resident))
		return -EFAULT;
	for (size_t i = 0; i < n; i++) {
		uint64_t p = pages[i];
		int hit = page_resident(s, file, p);

		/* at or past EOF the read returns 0 bytes: not resident, no I/O */
		if (!hit && p < file_npages(file) && fs->nowait == PC_NOWAIT_DESTRUCTIVE)
			start_readahead(s, file, p, f->random ? fs->ra_random : fs->ra_seq);
		resident[i] = (uint8_t)hit;
		if (s->nlog == s->log_cap) {
			size_t cap = s->log_cap ? s->log_cap * 2 : 256;
			struct pc_scripted_probe *log = realloc(s->log, cap * sizeof(*log));

			if (!log)
				abort();
			s->log = log;
			s->log_cap = cap;
		}
		s->log[s->nlog++] = (struct pc_scripted_probe){
			.file = file, .handle = f->id, .random = f->random, .page = p, .hit = hit,
		};
	}
	if (source)
		*source = PC_SOURCE_PREADV2;
	return (ssize_t)n;
}

static struct pc_bfile *handle_new(struct pc_scripted *s, struct pc_sfile *file, int writable)
{
	struct pc_bfile *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->file = file;
	f->writable = writable;
	f->id = ++s->next_id;
	f->next = s->handles;
	s->handles = f;
	s->open++;
	return f;
}

static int op_reopen_random(struct pc_backend *b, struct pc_bfile *f, struct pc_bfile **out)
{
	struct pc_scripted *s = ctx(b);
	struct pc_bfile *nf;
	int ret = enter(s, PC_SOP_REOPEN_RANDOM);

	if (ret)
		return ret;
	if (!live(s, f))
		return -EBADF;
	nf = handle_new(s, f->file, 0);
	if (!nf)
		return -ENOMEM;
	nf->random = 1;
	*out = nf;
	return 0;
}

static int op_gate_predict(struct pc_backend *b, struct pc_bfile *f)
{
	struct pc_scripted *s = ctx(b);
	int ret = enter(s, PC_SOP_GATE_PREDICT);

	if (ret)
		return ret;
	if (!live(s, f))
		return -EBADF;
	if (f->file->predict[s->who] >= 0)
		return f->file->predict[s->who];
	return f->file->gate[s->who];
}

static int op_modes(struct pc_backend *b, struct pc_modes *out)
{
	struct pc_scripted *s = ctx(b);
	int ret = enter(s, PC_SOP_MODES);

	if (ret)
		return ret;
	out->mincore = s->k.modes_mincore;
	out->cachestat = s->k.modes_cachestat;
	return 0;
}

static int op_nowait_mode(struct pc_backend *b, struct pc_bfile *f)
{
	struct pc_scripted *s = ctx(b);
	int ret = enter(s, PC_SOP_NOWAIT_MODE);

	if (ret)
		return ret;
	if (!live(s, f))
		return -EBADF;
	return fs_of(s, f->file)->reported_nowait;
}

static void op_close(struct pc_backend *b, struct pc_bfile *f)
{
	struct pc_scripted *s = ctx(b);

	s->calls[PC_SOP_CLOSE]++;
	if (!live(s, f))
		return;
	f->closed = 1;
	s->open--;
}

static int fs_index(int dirfd)
{
	if (dirfd < 0)
		return PC_SCRIPTED_MEMFS;
	if (dirfd >= PC_SCRIPTED_MAX_FS)
		return -EBADF;
	return dirfd;
}

static int op_scratch_new(struct pc_backend *b, int dirfd, uint64_t npages,
			  struct pc_bfile **out)
{
	struct pc_scripted *s = ctx(b);
	struct pc_sfile_opts o = { 0 };
	struct pc_sfile *file;
	struct pc_bfile *f;
	int ret = enter(s, PC_SOP_SCRATCH_NEW);
	int fs = fs_index(dirfd);

	if (ret)
		return ret;
	if (fs < 0)
		return fs;
	if (s->k.fs[fs].scratch_error)
		return s->k.fs[fs].scratch_error;
	if (npages > UINT64_MAX / ps_of(s))
		return -EFBIG;
	o.size = npages * ps_of(s);
	o.fs = fs;
	o.type = PC_BFILE_REGULAR;
	o.gate[PC_SCRIPTED_SELF] = 1;    /* the owner */
	o.gate[PC_SCRIPTED_NOBODY] = 0;  /* 0600, someone else's */
	o.predict[0] = o.predict[1] = -1;
	file = pc_scripted_file_new(s, &o);
	if (!file)
		return -ENOMEM;
	file->scratch = 1;
	f = handle_new(s, file, 1);
	if (!f)
		return -ENOMEM;
	*out = f;
	return 0;
}

static int op_write_page(struct pc_backend *b, struct pc_bfile *f, uint64_t page)
{
	struct pc_scripted *s = ctx(b);
	int ret = enter(s, PC_SOP_WRITE_PAGE);

	if (ret)
		return ret;
	if (!live(s, f) || !f->writable)
		return -EBADF;
	if (page >= file_npages(f->file))
		return -EFBIG; /* scratch files do not grow here */
	if (!f->file->scratch)
		s->foreign_changes++;
	f->file->pg[page] |= PG_RESIDENT | PG_DIRTY;
	return 0;
}

static int op_sync(struct pc_backend *b, struct pc_bfile *f)
{
	struct pc_scripted *s = ctx(b);
	int ret = enter(s, PC_SOP_SYNC);

	if (ret)
		return ret;
	if (!live(s, f))
		return -EBADF;
	if (!f->file->scratch)
		s->foreign_changes++;
	for (uint64_t p = 0; p < f->file->cap; p++)
		f->file->pg[p] &= (unsigned char)~PG_DIRTY;
	return 0;
}

static int op_evict(struct pc_backend *b, struct pc_bfile *f, uint64_t page, uint64_t npages)
{
	struct pc_scripted *s = ctx(b);
	struct pc_sfile *file;
	uint64_t end;
	int ret = enter(s, PC_SOP_EVICT);

	if (ret)
		return ret;
	if (!live(s, f))
		return -EBADF;
	file = f->file;
	if (!file->scratch)
		s->foreign_changes++;
	if (!fs_of(s, file)->evict_works)
		return 0; /* tmpfs: fadvise succeeds and drops nothing */
	end = file_npages(file);
	if (npages < end - (page < end ? page : end))
		end = page + npages;
	for (uint64_t p = page; p < end; p++) {
		if (file->pg[p] & (PG_DIRTY | PG_MAPPED))
			continue;
		file->pg[p] &= (unsigned char)~PG_RESIDENT;
		if (file->pending)
			file->pending[p] = 0;
	}
	return 0;
}

static int op_system_file(struct pc_backend *b, struct pc_bfile **out)
{
	struct pc_scripted *s = ctx(b);
	struct pc_bfile *f;
	int ret = enter(s, PC_SOP_SYSTEM_FILE);

	if (ret)
		return ret;
	if (!s->system_file)
		return -ENOENT;
	f = handle_new(s, s->system_file, 0);
	if (!f)
		return -ENOMEM;
	*out = f;
	return 0;
}

/* Whether the current identity can see this file's residency with mincore. */
static int residency_visible(struct pc_scripted *s, const struct pc_sfile *file)
{
	switch (s->k.mincore) {
	case PC_MINCORE_FULL:
		return 1;
	case PC_MINCORE_GATED_FAKED:
	case PC_MINCORE_GATED_MAPPED:
		return file->gate[s->who];
	default:
		return 0;
	}
}

static int op_find_cold_page(struct pc_backend *b, int dirfd, struct pc_bfile **out,
			     uint64_t *page)
{
	struct pc_scripted *s = ctx(b);
	struct pc_sfile *file;
	struct pc_bfile *f;
	int ret = enter(s, PC_SOP_FIND_COLD_PAGE);
	int fs = fs_index(dirfd);

	if (ret)
		return ret;
	if (fs < 0)
		return fs;
	file = s->k.fs[fs].cold_file;
	if (!file || !residency_visible(s, file))
		return -ENOENT;
	for (uint64_t p = 0; p < file_npages(file); p++) {
		if (page_resident(s, file, p) || (file->pending && file->pending[p]))
			continue;
		f = handle_new(s, file, 0);
		if (!f)
			return -ENOMEM;
		*out = f;
		*page = p;
		return 0;
	}
	return -ENOENT;
}

static int op_as_nobody(struct pc_backend *b, int (*fn)(struct pc_backend *b, void *arg),
			void *arg)
{
	struct pc_scripted *s = ctx(b);
	int ret = enter(s, PC_SOP_AS_NOBODY);
	int prev;

	if (ret)
		return ret;
	if (s->k.as_nobody_error)
		return s->k.as_nobody_error;
	prev = s->who;
	s->who = PC_SCRIPTED_NOBODY;
	ret = fn(b, arg);
	s->who = prev;
	return ret;
}

static void op_pause_ms(struct pc_backend *b, unsigned int ms)
{
	struct pc_scripted *s = ctx(b);

	s->calls[PC_SOP_PAUSE_MS]++;
	/* time passes: started reads complete */
	for (struct pc_sfile *file = s->files; file; file = file->next) {
		if (!file->pending)
			continue;
		for (uint64_t p = 0; p < file->cap; p++) {
			if (file->pending[p] && --file->pending[p] == 0)
				file->pg[p] |= PG_RESIDENT;
		}
	}
}

static const struct pc_backend_ops scripted_ops = {
	.page_size = op_page_size,
	.fstat = op_fstat,
	.mincore = op_mincore,
	.next_data = op_next_data,
	.cachestat = op_cachestat,
	.probe = op_probe,
	.reopen_random = op_reopen_random,
	.gate_predict = op_gate_predict,
	.close = op_close,
	.scratch_new = op_scratch_new,
	.write_page = op_write_page,
	.sync = op_sync,
	.evict = op_evict,
	.system_file = op_system_file,
	.find_cold_page = op_find_cold_page,
	.as_nobody = op_as_nobody,
	.pause_ms = op_pause_ms,
};

/* the scripted kernel's facts are scripted too: its owner is the test */
static const struct pc_facts scripted_facts = {
	.modes = op_modes,
	.nowait_mode = op_nowait_mode,
};

/* ---- configuration and inspection ----------------------------------------- */

void pc_scripted_kernel_init(struct pc_scripted_kernel *k, int mincore, int cachestat,
			     int nowait)
{
	memset(k, 0, sizeof(*k));
	k->mincore = mincore;
	k->cachestat = cachestat;
	k->caller_privileged = 1;
	k->page_size = 4096;
	k->modes_mincore = mincore;
	k->modes_cachestat = cachestat;
	for (int i = 0; i < PC_SCRIPTED_MAX_FS; i++) {
		struct pc_scripted_fs *fs = &k->fs[i];

		fs->nowait = i == PC_SCRIPTED_MEMFS ? PC_NOWAIT_UNSUPPORTED : nowait;
		fs->reported_nowait = fs->nowait;
		fs->evict_works = i != PC_SCRIPTED_MEMFS;
		fs->ra_random = 1;
		fs->ra_seq = 4;
	}
}

int pc_scripted_new(const struct pc_scripted_kernel *k, struct pc_scripted **out)
{
	struct pc_scripted *s;

	if (k->page_size <= 0)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->k = *k;
	s->backend.ops = &scripted_ops;
	s->backend.facts = &scripted_facts;
	s->backend.ctx = s;
	*out = s;
	return 0;
}

void pc_scripted_free(struct pc_scripted *s)
{
	if (!s)
		return;
	while (s->files) {
		struct pc_sfile *file = s->files;

		s->files = file->next;
		free(file->pg);
		free(file->pending);
		free(file);
	}
	while (s->handles) {
		struct pc_bfile *f = s->handles;

		s->handles = f->next;
		free(f);
	}
	free(s->log);
	free(s);
}

struct pc_backend *pc_scripted_backend(struct pc_scripted *s)
{
	return &s->backend;
}

struct pc_scripted_kernel *pc_scripted_config(struct pc_scripted *s)
{
	return &s->k;
}

struct pc_sfile *pc_scripted_file_new(struct pc_scripted *s, const struct pc_sfile_opts *o)
{
	struct pc_sfile *file;
	uint64_t cap = o->size / ps_of(s) + (o->size % ps_of(s) != 0);

	if (o->fs < 0 || o->fs >= PC_SCRIPTED_MAX_FS || cap > SIZE_MAX)
		return NULL;
	file = calloc(1, sizeof(*file));
	if (!file)
		return NULL;
	file->pg = calloc(cap ? (size_t)cap : 1, 1);
	if (!file->pg) {
		free(file);
		return NULL;
	}
	file->size = o->size;
	file->cap = cap;
	file->ps = ps_of(s);
	file->fs = o->fs;
	file->type = o->type ? o->type : PC_BFILE_REGULAR;
	for (int w = 0; w < 2; w++) {
		file->gate[w] = o->gate[w];
		file->predict[w] = o->predict[w];
	}
	file->hugetlb = o->hugetlb;
	file->next = s->files;
	s->files = file;
	return file;
}

int pc_scripted_open(struct pc_scripted *s, struct pc_sfile *file, int writable,
		     struct pc_bfile **out)
{
	struct pc_bfile *f = handle_new(s, file, writable);

	if (!f)
		return -ENOMEM;
	*out = f;
	return 0;
}

void pc_scripted_set_system_file(struct pc_scripted *s, struct pc_sfile *file)
{
	s->system_file = file;
}

uint64_t pc_scripted_file_size(const struct pc_sfile *file)
{
	return file->size;
}

uint64_t pc_scripted_file_npages(const struct pc_sfile *file)
{
	return file_npages(file);
}

int pc_scripted_resident(const struct pc_sfile *file, uint64_t page)
{
	return page < file->cap && (file->pg[page] & PG_RESIDENT);
}

void pc_scripted_set_resident(struct pc_sfile *file, uint64_t page, int resident)
{
	if (page >= file->cap)
		return;
	if (resident)
		file->pg[page] |= PG_RESIDENT;
	else
		file->pg[page] &= (unsigned char)~(PG_RESIDENT | PG_MAPPED | PG_DIRTY);
}

uint64_t pc_scripted_count_resident(const struct pc_sfile *file)
{
	uint64_t n = 0;

	for (uint64_t p = 0; p < file->cap; p++)
		n += file->pg[p] & PG_RESIDENT;
	return n;
}

void pc_scripted_set_mapped(struct pc_sfile *file, uint64_t page, int mapped)
{
	if (page >= file->cap)
		return;
	if (mapped)
		file->pg[page] |= PG_MAPPED | PG_RESIDENT;
	else
		file->pg[page] &= (unsigned char)~PG_MAPPED;
}

void pc_scripted_truncate(struct pc_sfile *file, uint64_t size)
{
	if (size >= file->size)
		return; /* growing is not modelled */
	file->size = size;
	/* pages wholly past the new end leave the cache */
	for (uint64_t p = file_npages(file); p < file->cap; p++) {
		file->pg[p] = 0;
		if (file->pending)
			file->pending[p] = 0;
	}
}

void pc_scripted_shrink_after_fstat(struct pc_sfile *file, uint64_t size)
{
	file->shrink_armed = 1;
	file->shrink_size = size;
}

int pc_scripted_handle_random(const struct pc_bfile *f)
{
	return f->random;
}

unsigned int pc_scripted_handle_id(const struct pc_bfile *f)
{
	return f->id;
}

struct pc_sfile *pc_scripted_handle_file(const struct pc_bfile *f)
{
	return f->file;
}

unsigned int pc_scripted_open_handles(const struct pc_scripted *s)
{
	return s->open;
}

void pc_scripted_inject(struct pc_scripted *s, enum pc_scripted_op op, int err)
{
	s->inject[op] = err;
}

unsigned long pc_scripted_calls(const struct pc_scripted *s, enum pc_scripted_op op)
{
	return s->calls[op];
}

uint64_t pc_scripted_max_mincore_pages(const struct pc_scripted *s)
{
	return s->max_mincore;
}

uint64_t pc_scripted_mincore_pages(const struct pc_scripted *s)
{
	return s->mincore_pages;
}

unsigned long pc_scripted_cachestat_queries(const struct pc_scripted *s)
{
	return s->cachestat_queries;
}

unsigned long pc_scripted_misuse(const struct pc_scripted *s)
{
	return s->misuse;
}

unsigned long pc_scripted_foreign_changes(const struct pc_scripted *s)
{
	return s->foreign_changes;
}

size_t pc_scripted_probe_log(const struct pc_scripted *s, const struct pc_scripted_probe **log)
{
	*log = s->log;
	return s->nlog;
}

void pc_scripted_reset_counts(struct pc_scripted *s)
{
	memset(s->calls, 0, sizeof(s->calls));
	s->cachestat_queries = 0;
	s->foreign_changes = 0;
	s->max_mincore = 0;
	s->mincore_pages = 0;
	s->nlog = 0;
}
