/* SPDX-License-Identifier: MIT */
/*
 * The model kernel: tunables, files and their page cache states, tasks and
 * their open file descriptions.
 */
#include <stdlib.h>
#include <string.h>

#include "model-private.h"
#include "pc-private.h"

#define SYSTEM_FILE_PAGES 64

static int mode_valid(int mode, int last)
{
	return mode > 0 && mode <= last;
}

int pcm_file_create(struct pcm_kernel *k, uint32_t uid, uint32_t gid, uint32_t mode,
		    uint64_t npages, int shmem, struct pcm_file **out)
{
	struct pcm_file *f;

	if (!k || !out || (mode & ~07777u) || npages > PCM_MAX_FILE_PAGES)
		return -EINVAL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->pages = calloc(npages ? npages : 1, 1);
	if (!f->pages) {
		free(f);
		return -ENOMEM;
	}
	f->k = k;
	f->uid = uid;
	f->gid = gid;
	f->mode = mode;
	f->npages = npages;
	f->size = npages * k->page_size;
	if (shmem)
		f->attrs |= PCM_F_SHMEM;
	f->next = k->files;
	k->files = f;
	*out = f;
	return 0;
}

static void file_free(struct pcm_file *f)
{
	free(f->pages);
	free(f->acl_uids);
	free(f->acl_gids);
	free(f);
}

static void file_remove(struct pcm_file *f)
{
	struct pcm_file **pp;

	for (pp = &f->k->files; *pp; pp = &(*pp)->next) {
		if (*pp == f) {
			*pp = f->next;
			break;
		}
	}
	file_free(f);
}

void pcm_file_get(struct pcm_file *f)
{
	f->refs++;
}

void pcm_file_put(struct pcm_file *f)
{
	if (--f->refs == 0 && f->unlinked)
		file_remove(f);
}

void pcm_file_unlink(struct pcm_file *f)
{
	f->unlinked = 1;
	if (f->refs == 0)
		file_remove(f);
}

PC_EXPORT int pcm_kernel_new(int mincore_mode, int nowait_mode, int cachestat_mode,
			     struct pcm_kernel **out)
{
	struct pcm_kernel *k;
	struct pcm_file *sys;
	int ret;

	if (!out || !mode_valid(mincore_mode, PC_MINCORE_USELESS) ||
	    !mode_valid(nowait_mode, PC_NOWAIT_DESTRUCTIVE) ||
	    !mode_valid(cachestat_mode, PC_CACHESTAT_OPEN))
		return -EINVAL;
	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	k->mincore_mode = mincore_mode;
	k->nowait_mode = nowait_mode;
	k->cachestat_mode = cachestat_mode;
	k->page_size = 4096;
	k->fault_around_pages = 16;
	k->readahead_pages = 32;
	ret = pcm_file_create(k, 0, 0, 0755, SYSTEM_FILE_PAGES, 0, &sys);
	if (ret < 0) {
		free(k);
		return ret;
	}
	memset(sys->pages, PCM_PAGE_PRESENT | PCM_PAGE_UPTODATE, SYSTEM_FILE_PAGES);
	k->system_file = sys;
	*out = k;
	return 0;
}

PC_EXPORT void pcm_kernel_free(struct pcm_kernel *k)
{
	if (!k)
		return;
	while (k->tasks)
		pcm_task_destroy(k->tasks);
	while (k->files) {
		struct pcm_file *f = k->files;

		k->files = f->next;
		file_free(f);
	}
	free(k);
}

static int is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

PC_EXPORT int pcm_kernel_tune(struct pcm_kernel *k, int tunable, uint64_t value)
{
	if (!k)
		return -EINVAL;
	switch (tunable) {
	case PCM_TUNE_PAGE_SIZE:
		if (value != 4096 && value != 16384 && value != 65536)
			return -EINVAL;
		if (k->tasks || k->files != k->system_file || k->system_file->next)
			return -EBUSY;
		k->page_size = value;
		k->system_file->size = k->system_file->npages * value;
		return 0;
	case PCM_TUNE_FAULT_AROUND_PAGES:
		if (!is_pow2(value) || value > PCM_MAX_FA_PAGES)
			return -EINVAL;
		k->fault_around_pages = value;
		return 0;
	case PCM_TUNE_READAHEAD_PAGES:
		if (value > PCM_MAX_RA_PAGES)
			return -EINVAL;
		k->readahead_pages = value;
		return 0;
	default:
		return -EINVAL;
	}
}

PC_EXPORT struct pcm_file *pcm_kernel_system_file(struct pcm_kernel *k)
{
	return k ? k->system_file : NULL;
}

/* ---- files ------------------------------------------------------------------ */

PC_EXPORT int pcm_file_new(struct pcm_kernel *k, uint32_t uid, uint32_t gid, uint32_t mode,
			   uint64_t npages, struct pcm_file **out)
{
	return pcm_file_create(k, uid, gid, mode, npages, 0, out);
}

static int acl_add(uint32_t **ids, unsigned int *n, uint64_t value)
{
	uint32_t *grown;

	if (value > UINT32_MAX)
		return -EINVAL;
	for (unsigned int i = 0; i < *n; i++)
		if ((*ids)[i] == value)
			return 0;
	grown = realloc(*ids, (*n + 1) * sizeof(**ids));
	if (!grown)
		return -ENOMEM;
	grown[(*n)++] = (uint32_t)value;
	*ids = grown;
	return 0;
}

/* Truncate or extend to size bytes: pages past the new end are gone
 * (mappings of them are zapped), new pages are holes. */
static int file_resize(struct pcm_file *f, uint64_t size)
{
	uint64_t ps = f->k->page_size;
	uint64_t npages = pc_div_round_up(size, ps);
	uint8_t *pages;

	if (npages > PCM_MAX_FILE_PAGES)
		return -EFBIG;
	for (uint64_t p = npages; p < f->npages; p++)
		pcm_file_page_unmap(f, p);
	pages = realloc(f->pages, npages ? npages : 1);
	if (!pages)
		return -ENOMEM;
	if (npages > f->npages)
		memset(pages + f->npages, 0, npages - f->npages);
	f->pages = pages;
	f->npages = npages;
	f->size = size;
	return 0;
}

static int set_flag(struct pcm_file *f, unsigned int bit, uint64_t value)
{
	if (value > 1)
		return -EINVAL;
	if (value)
		f->attrs |= bit;
	else
		f->attrs &= ~bit;
	return 0;
}

PC_EXPORT int pcm_file_set(struct pcm_file *f, int attr, uint64_t value)
{
	if (!f)
		return -EINVAL;
	switch (attr) {
	case PCM_FILE_IMMUTABLE:
		return set_flag(f, PCM_F_IMMUTABLE, value);
	case PCM_FILE_RDONLY_SB:
		return set_flag(f, PCM_F_RDONLY_SB, value);
	case PCM_FILE_RDONLY_MOUNT:
		return set_flag(f, PCM_F_RDONLY_MOUNT, value);
	case PCM_FILE_SHMEM:
		return set_flag(f, PCM_F_SHMEM, value);
	case PCM_FILE_HUGETLB:
		return set_flag(f, PCM_F_HUGETLB, value);
	case PCM_FILE_NO_INODE:
		return set_flag(f, PCM_F_NO_INODE, value);
	case PCM_FILE_ACL_WRITE_UID:
		return acl_add(&f->acl_uids, &f->n_acl_uids, value);
	case PCM_FILE_ACL_WRITE_GID:
		return acl_add(&f->acl_gids, &f->n_acl_gids, value);
	case PCM_FILE_SIZE_BYTES:
		return file_resize(f, value);
	default:
		return -EINVAL;
	}
}

PC_EXPORT int pcm_file_cache(struct pcm_file *f, uint64_t page)
{
	if (!f)
		return -EINVAL;
	if (page >= f->npages)
		return -ERANGE;
	f->pages[page] = (f->pages[page] & PCM_PAGE_DIRTY) | PCM_PAGE_PRESENT | PCM_PAGE_UPTODATE;
	return 0;
}

PC_EXPORT int pcm_file_read_pending(struct pcm_file *f, uint64_t page)
{
	if (!f)
		return -EINVAL;
	if (page >= f->npages)
		return -ERANGE;
	pcm_file_page_unmap(f, page);
	f->pages[page] = PCM_PAGE_PRESENT;
	return 0;
}

PC_EXPORT int pcm_file_drop(struct pcm_file *f, uint64_t page)
{
	if (!f)
		return -EINVAL;
	if (page >= f->npages)
		return -ERANGE;
	pcm_file_page_unmap(f, page);
	f->pages[page] = 0;
	return 0;
}

PC_EXPORT int pcm_file_reclaim(struct pcm_file *f, uint64_t page)
{
	if (!f)
		return -EINVAL;
	if (page >= f->npages)
		return -ERANGE;
	pcm_file_page_unmap(f, page);
	f->pages[page] = PCM_PAGE_SHADOW;
	return 0;
}

PC_EXPORT int pcm_file_swap_out(struct pcm_file *f, uint64_t page, int in_swap_cache)
{
	if (!f || !(f->attrs & PCM_F_SHMEM) || (f->attrs & PCM_F_HUGETLB))
		return -EINVAL;
	if (page >= f->npages)
		return -ERANGE;
	if (!(f->pages[page] & (PCM_PAGE_PRESENT | PCM_PAGE_SWAP)))
		return -ENOENT; /* a hole has nothing to swap */
	pcm_file_page_unmap(f, page);
	f->pages[page] = PCM_PAGE_SWAP | (in_swap_cache ? PCM_PAGE_SWAPCACHE : 0);
	return 0;
}

PC_EXPORT int pcm_file_resident(const struct pcm_file *f, uint64_t page)
{
	if (!f)
		return -EINVAL;
	if (page >= f->npages)
		return -ERANGE;
	if (f->pages[page] & PCM_PAGE_SWAP)
		return !!(f->pages[page] & PCM_PAGE_SWAPCACHE);
	return pcm_page_cached(f, page);
}

PC_EXPORT int pcm_file_page_state(const struct pcm_file *f, uint64_t page)
{
	if (!f)
		return -EINVAL;
	if (page >= f->npages)
		return -ERANGE;
	return f->pages[page];
}

PC_EXPORT uint64_t pcm_file_npages(const struct pcm_file *f)
{
	return f ? f->npages : 0;
}

PC_EXPORT uint64_t pcm_file_size(const struct pcm_file *f)
{
	return f ? f->size : 0;
}

void pcm_file_read_in(struct pcm_file *f, uint64_t page)
{
	uint8_t *p = &f->pages[page];

	/* A refault replaces the shadow entry; a shmem swap entry is swapped in. */
	if (!(*p & PCM_PAGE_PRESENT))
		*p = PCM_PAGE_PRESENT | PCM_PAGE_UPTODATE;
}

void pcm_file_read_wait(struct pcm_file *f, uint64_t page)
{
	pcm_file_read_in(f, page);
	f->pages[page] |= PCM_PAGE_UPTODATE;
}

/* ---- tasks and fds ------------------------------------------------------------- */

int pcm_task_create(struct pcm_kernel *k, uint32_t fsuid, uint32_t fsgid, unsigned int caps,
		    struct pcm_task **out)
{
	struct pcm_task *t;

	if (!k || !out || (caps & ~(PCM_CAP_FOWNER | PCM_CAP_DAC_OVERRIDE)))
		return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->k = k;
	t->fsuid = fsuid;
	t->fsgid = fsgid;
	t->caps = caps;
	t->next_addr = PCM_MAP_ALIGN;
	t->next = k->tasks;
	k->tasks = t;
	*out = t;
	return 0;
}

void pcm_task_destroy(struct pcm_task *t)
{
	struct pcm_task **pp;

	while (t->vmas) {
		struct pcm_vma *v = t->vmas;

		t->vmas = v->next;
		pcm_vma_free(v);
	}
	while (t->fds)
		pcm_close(t->fds);
	for (pp = &t->k->tasks; *pp; pp = &(*pp)->next) {
		if (*pp == t) {
			*pp = t->next;
			break;
		}
	}
	free(t);
}

PC_EXPORT void pcm_task_free(struct pcm_task *t)
{
	if (t)
		pcm_task_destroy(t);
}

PC_EXPORT int pcm_open(struct pcm_task *t, struct pcm_file *f, int flags, struct pcm_fd **out)
{
	struct pcm_fd *fd;
	int ret;

	if (!t || !f || !out || f->k != t->k || (flags != PCM_O_RDONLY && flags != PCM_O_RDWR))
		return -EINVAL;
	/* may_open: inode_permission first (read-only superblock, immutable,
	 * mode bits), then the mount's write access. */
	ret = pcm_may_read(t, f);
	if (ret == 0 && flags == PCM_O_RDWR)
		ret = pcm_may_write(t, f);
	if (ret == 0 && flags == PCM_O_RDWR && (f->attrs & PCM_F_RDONLY_MOUNT))
		ret = -EROFS;
	if (ret < 0)
		return ret;
	fd = calloc(1, sizeof(*fd));
	if (!fd)
		return -ENOMEM;
	fd->task = t;
	fd->file = f;
	fd->writable = flags == PCM_O_RDWR;
	fd->fresh = 1;
	fd->refs = 1;
	fd->open = 1;
	pcm_file_get(f);
	fd->next = t->fds;
	t->fds = fd;
	*out = fd;
	return 0;
}

void pcm_vma_free(struct pcm_vma *v)
{
	if (v->fd)
		pcm_fd_put(v->fd);
	free(v->pte);
	free(v);
}

void pcm_fd_put(struct pcm_fd *fd)
{
	if (--fd->refs)
		return;
	pcm_file_put(fd->file);
	free(fd);
}

PC_EXPORT void pcm_close(struct pcm_fd *fd)
{
	struct pcm_fd **pp;

	if (!fd || !fd->open)
		return;
	for (pp = &fd->task->fds; *pp; pp = &(*pp)->next) {
		if (*pp == fd) {
			*pp = fd->next;
			break;
		}
	}
	fd->open = 0;
	fd->next = NULL;
	pcm_fd_put(fd);
}

PC_EXPORT struct pcm_file *pcm_fd_file(const struct pcm_fd *fd)
{
	return fd ? fd->file : NULL;
}

PC_EXPORT struct pcm_task *pcm_fd_task(const struct pcm_fd *fd)
{
	return fd ? fd->task : NULL;
}
