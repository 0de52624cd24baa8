/* SPDX-License-Identifier: MIT */
/*
 * The model's internal state: a kernel owns its files and tasks; a task owns
 * its open file descriptions (fds) and its mappings (VMAs); a VMA holds a
 * reference on the fd it maps. Page states are one byte per page.
 */
#ifndef PCM_MODEL_PRIVATE_H
#define PCM_MODEL_PRIVATE_H

#include <stdint.h>

#include "pagecache/model.h"
#include "backend.h"

/* pcm_file attribute bits */
#define PCM_F_IMMUTABLE    (1u << 0)
#define PCM_F_RDONLY_SB    (1u << 1)
#define PCM_F_RDONLY_MOUNT (1u << 2)
#define PCM_F_SHMEM        (1u << 3)
#define PCM_F_HUGETLB      (1u << 4)
#define PCM_F_NO_INODE     (1u << 5)

/* Upper bounds that keep page arrays and address arithmetic small. */
#define PCM_MAX_FILE_PAGES  (UINT64_C(1) << 32)
#define PCM_MAX_MAP_PAGES   (UINT64_C(1) << 26)
#define PCM_MAX_RA_PAGES    4096
#define PCM_MAX_FA_PAGES    512
/* Mappings made without PCM_MAP_FIXED start on this boundary. */
#define PCM_MAP_ALIGN       (UINT64_C(1) << 30)

struct pcm_file {
	struct pcm_file *next;
	struct pcm_kernel *k;
	uint32_t uid, gid, mode;
	unsigned int attrs;        /* PCM_F_* */
	uint64_t size;             /* bytes */
	uint64_t npages;
	uint8_t *pages;            /* PCM_PAGE_* per page */
	uint32_t *acl_uids, *acl_gids;
	unsigned int n_acl_uids, n_acl_gids;
	unsigned int refs;         /* open file descriptions */
	int unlinked;              /* freed when refs drops to 0 */
};

struct pcm_fd {
	struct pcm_fd *next;       /* in the task's fd table */
	struct pcm_task *task;
	struct pcm_file *file;
	int writable;              /* FMODE_WRITE */
	int random;                /* POSIX_FADV_RANDOM */
	int fresh;                 /* no read has gone through it yet */
	uint64_t ra_start, ra_size;/* the last readahead window */
	uint64_t prev_end;         /* page after the last read */
	unsigned int refs;         /* the fd table's, plus one per VMA */
	int open;                  /* still in the task's fd table */
};

struct pcm_vma {
	struct pcm_vma *next;      /* sorted by start */
	uint64_t start;            /* bytes, page aligned */
	uint64_t npages;
	int prot, flags;
	struct pcm_fd *fd;         /* NULL: anonymous */
	uint64_t pgoff;
	uint8_t *pte;              /* PCM_PTE_* | PCM_PTE_ANON per page */
};

/* The model backend's state for one task (backend.h). */
struct pcm_backend_state {
	struct pc_backend b;
	struct pcm_task *task;
	int have_modes;
	struct pc_modes modes;
	int nowait[2];             /* per filesystem (PCM_FS_*), -1: not known yet */
};

struct pcm_task {
	struct pcm_task *next;
	struct pcm_kernel *k;
	uint32_t fsuid, fsgid;
	unsigned int caps;
	struct pcm_fd *fds;
	struct pcm_vma *vmas;
	uint64_t next_addr;
	struct pcm_backend_state backend;
};

struct pcm_kernel {
	int mincore_mode, nowait_mode, cachestat_mode;
	uint64_t page_size;
	uint64_t fault_around_pages;
	uint64_t readahead_pages;
	struct pcm_file *files;
	struct pcm_task *tasks;
	struct pcm_file *system_file;
};

static inline int pcm_page_cached(const struct pcm_file *f, uint64_t page)
{
	return page < f->npages &&
	       (f->pages[page] & (PCM_PAGE_PRESENT | PCM_PAGE_UPTODATE)) ==
		       (PCM_PAGE_PRESENT | PCM_PAGE_UPTODATE);
}

static inline uint64_t pcm_min(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* The filesystem a file is on, as the backend names them (its dirfds). */
static inline int pcm_fs_of(const struct pcm_file *f)
{
	return f->attrs & PCM_F_SHMEM ? PCM_FS_TMPFS : PCM_FS_DISK;
}

/* kernel.c */
void pcm_file_get(struct pcm_file *f);
void pcm_file_put(struct pcm_file *f);
/* Bring page in (readahead or a read): a present page is left as it is. */
void pcm_file_read_in(struct pcm_file *f, uint64_t page);
/* A read that waits: afterwards the page is present and up to date. */
void pcm_file_read_wait(struct pcm_file *f, uint64_t page);
/* A new file on the disk filesystem or tmpfs, for scratch_new. */
int pcm_file_create(struct pcm_kernel *k, uint32_t uid, uint32_t gid, uint32_t mode,
		    uint64_t npages, int shmem, struct pcm_file **out);
void pcm_file_unlink(struct pcm_file *f);
void pcm_fd_put(struct pcm_fd *fd);
/* A VMA's page table and its file reference (pcm_task_destroy(), mm.c). */
void pcm_vma_free(struct pcm_vma *v);
/* A task without its backend: pcm_task_new() (api.c) gives it one. */
int pcm_task_create(struct pcm_kernel *k, uint32_t fsuid, uint32_t fsgid, unsigned int caps,
		    struct pcm_task **out);
void pcm_task_destroy(struct pcm_task *t);

/* perm.c */
/* inode_permission(MAY_WRITE) or (MAY_READ): 0, -EROFS, -EPERM, -EACCES. */
int pcm_may_write(const struct pcm_task *t, const struct pcm_file *f);
int pcm_may_read(const struct pcm_task *t, const struct pcm_file *f);
/* Owner, CAP_FOWNER or write permission: the shared core of both gates. */
int pcm_owner_or_writer(const struct pcm_task *t, const struct pcm_file *f);

/* mm.c */
struct pcm_vma *pcm_vma_find(const struct pcm_task *t, uint64_t addr);

/* rmap.c */
/* Whether any task maps file page page through a page-table entry. */
int pcm_file_page_mapped(const struct pcm_file *f, uint64_t page);
/* Zap every page-table entry that maps file page page (reclaim, invalidate). */
void pcm_file_page_unmap(struct pcm_file *f, uint64_t page);

/* io.c */
/* The initial readahead window for a request of req pages. */
uint64_t pcm_ra_initial(const struct pcm_kernel *k, uint64_t req);
int pcm_cachestat_flags(struct pcm_fd *fd, uint64_t off, uint64_t len, unsigned int flags,
			struct pc_cachestat *out);

/* backend-model.c */
void pcm_backend_init(struct pcm_backend_state *s, struct pcm_task *t,
		      const struct pc_facts *facts);
struct pc_backend *pcm_task_backend(struct pcm_task *t);
/* The model fd behind a backend file. */
struct pcm_fd *pcm_bfile_fd(struct pc_bfile *f);
/* A backend file for fd that close() does not close. */
int pcm_bfile_wrap(struct pcm_fd *fd, struct pc_bfile **out);

#endif
