/* SPDX-License-Identifier: MIT */
/*
 * The model as a backend (backend.h): the detector and pc_residency()'s
 * strategy run unchanged against a model task. The entry points that run
 * them, and the facts they lend, are model/api.c's.
 */
#include <stdlib.h>

#include "model-private.h"
#include "pc-private.h"

/* The owner of a scratch file is the task; it disappears when closed. */
struct pc_bfile {
	struct pcm_fd *fd;
	int owned;          /* close fd (and so drop a scratch file) in close() */
};

static struct pcm_task *self(struct pc_backend *b)
{
	return ((struct pcm_backend_state *)b->ctx)->task;
}

static int bfile_new(struct pcm_fd *fd, int owned, struct pc_bfile **out)
{
	struct pc_bfile *f = calloc(1, sizeof(*f));

	if (!f) {
		if (owned)
			pcm_close(fd);
		return -ENOMEM;
	}
	f->fd = fd;
	f->owned = owned;
	*out = f;
	return 0;
}

static long m_page_size(struct pc_backend *b)
{
	return (long)self(b)->k->page_size;
}

static int m_fstat(struct pc_backend *b, struct pc_bfile *f, struct pc_bstat *st)
{
	(void)b;
	st->type = PC_BFILE_REGULAR;
	st->size = f->fd->file->size;
	return 0;
}

static int m_mincore(struct pc_backend *b, struct pc_bfile *f, uint64_t page, uint64_t npages,
		     unsigned char *vec)
{
	struct pcm_task *t = self(b);
	uint64_t addr;
	int ret;

	if (npages == 0)
		return 0;
	ret = pcm_mmap(t, f->fd, page, npages, PCM_PROT_READ, PCM_MAP_SHARED, &addr);
	if (ret < 0)
		return ret;
	ret = pcm_mincore(t, addr, npages * t->k->page_size, vec);
	pcm_munmap(t, addr, npages * t->k->page_size);
	return ret;
}

static int m_cachestat(struct pc_backend *b, struct pc_bfile *f, uint64_t off, uint64_t len,
		       unsigned int flags, struct pc_cachestat *out)
{
	(void)b;
	return pcm_cachestat_flags(f->fd, off, len, flags, out);
}

static ssize_t m_probe(struct pc_backend *b, struct pc_bfile *f, const uint64_t *pages,
		       size_t n, uint8_t *resident, int *source)
{
	(void)b;
	*source = PC_SOURCE_PREADV2;
	for (size_t i = 0; i < n; i++) {
		int ret = pcm_preadv2_nowait(f->fd, pages[i]);

		if (ret < 0 && ret != -EAGAIN)
			return ret;
		resident[i] = ret == 1;
	}
	return (ssize_t)n;
}

static int m_reopen_random(struct pc_backend *b, struct pc_bfile *f, struct pc_bfile **out)
{
	struct pcm_fd *fd;
	int ret;

	ret = pcm_open(self(b), f->fd->file, PCM_O_RDONLY, &fd);
	if (ret < 0)
		return ret;
	pcm_fadvise(fd, 0, 0, PCM_FADV_RANDOM);
	return bfile_new(fd, 1, out);
}

static int m_gate_predict(struct pc_backend *b, struct pc_bfile *f)
{
	return pcm_can_do_mincore(self(b), f->fd->file);
}

static void m_close(struct pc_backend *b, struct pc_bfile *f)
{
	(void)b;
	if (!f)
		return;
	if (f->owned)
		pcm_close(f->fd);
	free(f);
}

static int m_scratch_new(struct pc_backend *b, int dirfd, uint64_t npages, struct pc_bfile **out)
{
	struct pcm_task *t = self(b);
	struct pcm_file *file;
	struct pcm_fd *fd;
	int ret;

	if (dirfd != PCM_FS_DISK && dirfd != PCM_FS_TMPFS && dirfd >= 0)
		return -EBADF;
	ret = pcm_file_create(t->k, t->fsuid, t->fsgid, 0600, npages,
			      dirfd < 0 || dirfd == PCM_FS_TMPFS, &file);
	if (ret < 0)
		return ret;
	ret = pcm_open(t, file, PCM_O_RDWR, &fd);
	pcm_file_unlink(file); /* O_TMPFILE, memfd: gone with the last fd */
	if (ret < 0)
		return ret;
	return bfile_new(fd, 1, out);
}

static int m_write_page(struct pc_backend *b, struct pc_bfile *f, uint64_t page)
{
	int ret = pcm_pwrite(f->fd, page, 1);

	(void)b;
	return ret < 0 ? ret : 0;
}

static int m_sync(struct pc_backend *b, struct pc_bfile *f)
{
	(void)b;
	return pcm_fsync(f->fd);
}

static int m_evict(struct pc_backend *b, struct pc_bfile *f, uint64_t page, uint64_t npages)
{
	(void)b;
	return pcm_fadvise(f->fd, page, npages, PCM_FADV_DONTNEED);
}

static int m_system_file(struct pc_backend *b, struct pc_bfile **out)
{
	struct pcm_task *t = self(b);
	struct pcm_fd *fd;
	int ret;

	ret = pcm_open(t, t->k->system_file, PCM_O_RDONLY, &fd);
	if (ret < 0)
		return ret;
	return bfile_new(fd, 1, out);
}

/* A page the task could watch: a file on that filesystem it may read and
 * whose residency it sees truthfully, with a page that is not cached. */
static int m_find_cold_page(struct pc_backend *b, int dirfd, struct pc_bfile **out,
			    uint64_t *page)
{
	struct pcm_task *t = self(b);
	int mode = t->k->mincore_mode;

	if (dirfd != PCM_FS_DISK && dirfd != PCM_FS_TMPFS)
		return -EBADF;
	if (mode == PC_MINCORE_MAPPED_ONLY || mode == PC_MINCORE_USELESS)
		return -ENOENT;
	for (struct pcm_file *f = t->k->files; f; f = f->next) {
		struct pcm_fd *fd;

		if (f->unlinked || pcm_fs_of(f) != dirfd ||
		    (f->attrs & (PCM_F_NO_INODE | PCM_F_HUGETLB)) ||
		    pcm_may_read(t, f) < 0)
			continue;
		if (mode != PC_MINCORE_FULL && pcm_can_do_mincore(t, f) != 1)
			continue;
		for (uint64_t p = 0; p < f->npages; p++) {
			if (pcm_file_resident(f, p) == 1)
				continue;
			if (pcm_open(t, f, PCM_O_RDONLY, &fd) < 0)
				break;
			*page = p;
			return bfile_new(fd, 1, out);
		}
	}
	return -ENOENT;
}

static int m_as_nobody(struct pc_backend *b, int (*fn)(struct pc_backend *b, void *arg),
		       void *arg)
{
	struct pcm_task *t = self(b), *nobody;
	int ret;

	if (t->fsuid != 0)
		return -EPERM;
	ret = pcm_task_create(t->k, 65534, 65534, 0, &nobody);
	if (ret < 0)
		return ret;
	/* the same facts' owner: nobody's own modes are detected as asked */
	pcm_backend_init(&nobody->backend, nobody, b->facts);
	ret = fn(&nobody->backend.b, arg);
	pcm_task_destroy(nobody);
	return ret;
}

static void m_pause_ms(struct pc_backend *b, unsigned int ms)
{
	(void)b;
	(void)ms;
}

static const struct pc_backend_ops model_ops = {
	.page_size = m_page_size,
	.fstat = m_fstat,
	.mincore = m_mincore,
	.cachestat = m_cachestat,
	.probe = m_probe,
	.reopen_random = m_reopen_random,
	.gate_predict = m_gate_predict,
	.close = m_close,
	.scratch_new = m_scratch_new,
	.write_page = m_write_page,
	.sync = m_sync,
	.evict = m_evict,
	.system_file = m_system_file,
	.find_cold_page = m_find_cold_page,
	.as_nobody = m_as_nobody,
	.pause_ms = m_pause_ms,
};

void pcm_backend_init(struct pcm_backend_state *s, struct pcm_task *t,
		      const struct pc_facts *facts)
{
	s->b.ops = &model_ops;
	s->b.facts = facts;
	s->b.ctx = s;
	s->task = t;
	s->have_modes = 0;
	s->nowait[PCM_FS_DISK] = -1;
	s->nowait[PCM_FS_TMPFS] = -1;
}

struct pc_backend *pcm_task_backend(struct pcm_task *t)
{
	return &t->backend.b;
}

int pcm_bfile_wrap(struct pcm_fd *fd, struct pc_bfile **out)
{
	return bfile_new(fd, 0, out);
}

struct pcm_fd *pcm_bfile_fd(struct pc_bfile *f)
{
	return f->fd;
}
