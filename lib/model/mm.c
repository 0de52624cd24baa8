/* SPDX-License-Identifier: MIT */
/*
 * Address spaces: VMAs and their page tables, mmap and munmap (with
 * splitting), and page faults with read-around and fault-around.
 */
#include <stdlib.h>
#include <string.h>

#include "model-private.h"
#include "pc-private.h"

/* User addresses end here (x86_64's 47 bits). */
#define PCM_ADDR_LIMIT (UINT64_C(1) << 47)

#define PTE_KIND(pte) ((pte) & 0x0f)

struct pcm_vma *pcm_vma_find(const struct pcm_task *t, uint64_t addr)
{
	uint64_t ps = t->k->page_size;

	for (struct pcm_vma *v = t->vmas; v; v = v->next) {
		if (addr < v->start)
			return NULL;
		if (addr - v->start < v->npages * ps)
			return v;
	}
	return NULL;
}

/* ---- mmap and munmap ------------------------------------------------------- */

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

/* The lowest PCM_MAP_ALIGN boundary with len free bytes and a free page on
 * either side, or 0. */
static uint64_t find_free(const struct pcm_task *t, uint64_t len)
{
	uint64_t ps = t->k->page_size;
	uint64_t start = PCM_MAP_ALIGN;

	for (struct pcm_vma *v = t->vmas; v; v = v->next) {
		uint64_t end = v->start + v->npages * ps;

		if (end + ps <= start)
			continue;
		if (v->start >= start + len + ps)
			break;
		start = align_up(end + ps, PCM_MAP_ALIGN);
	}
	return start + len <= PCM_ADDR_LIMIT ? start : 0;
}

static void vma_insert(struct pcm_task *t, struct pcm_vma *nv)
{
	struct pcm_vma **pp = &t->vmas;

	while (*pp && (*pp)->start < nv->start)
		pp = &(*pp)->next;
	nv->next = *pp;
	*pp = nv;
}

/* The part of v from page i on becomes a VMA of its own, after v. */
static int vma_split(struct pcm_vma *v, uint64_t i, uint64_t ps)
{
	struct pcm_vma *tail = calloc(1, sizeof(*tail));

	if (!tail)
		return -ENOMEM;
	tail->pte = malloc(v->npages - i);
	if (!tail->pte) {
		free(tail);
		return -ENOMEM;
	}
	memcpy(tail->pte, v->pte + i, v->npages - i);
	tail->start = v->start + i * ps;
	tail->npages = v->npages - i;
	tail->prot = v->prot;
	tail->flags = v->flags;
	tail->fd = v->fd;
	tail->pgoff = v->pgoff + (v->fd ? i : 0);
	if (tail->fd)
		tail->fd->refs++;
	v->npages = i;
	tail->next = v->next;
	v->next = tail;
	return 0;
}

/* Unmap [start, end): split the VMAs at the edges, free what is inside. */
static int unmap_range(struct pcm_task *t, uint64_t start, uint64_t end)
{
	uint64_t ps = t->k->page_size;
	struct pcm_vma **pp = &t->vmas;
	int ret;

	while (*pp) {
		struct pcm_vma *v = *pp;
		uint64_t vend = v->start + v->npages * ps;

		if (vend <= start) {
			pp = &v->next;
			continue;
		}
		if (v->start >= end)
			break;
		if (v->start < start) {
			ret = vma_split(v, (start - v->start) / ps, ps);
			if (ret < 0)
				return ret;
			pp = &v->next;
			continue;
		}
		if (vend > end) {
			ret = vma_split(v, (end - v->start) / ps, ps);
			if (ret < 0)
				return ret;
		}
		*pp = v->next;
		pcm_vma_free(v);
	}
	return 0;
}

PC_EXPORT int pcm_mmap(struct pcm_task *t, struct pcm_fd *fd, uint64_t pgoff, uint64_t npages,
		       int prot, int flags, uint64_t *addr)
{
	int type = flags & (PCM_MAP_SHARED | PCM_MAP_PRIVATE);
	struct pcm_vma *v;
	uint64_t ps, len, start;
	int ret;

	if (!t || !addr || npages == 0 || npages > PCM_MAX_MAP_PAGES ||
	    (prot & ~(PCM_PROT_READ | PCM_PROT_WRITE)) ||
	    (flags & ~(PCM_MAP_SHARED | PCM_MAP_PRIVATE | PCM_MAP_FIXED)) ||
	    (type != PCM_MAP_SHARED && type != PCM_MAP_PRIVATE))
		return -EINVAL;
	if (fd && (fd->task != t || !fd->open))
		return -EBADF;
	if (fd && type == PCM_MAP_SHARED && (prot & PCM_PROT_WRITE) && !fd->writable)
		return -EACCES;
	if (fd && pgoff > PCM_MAX_FILE_PAGES * 2)
		return -EOVERFLOW;
	ps = t->k->page_size;
	len = npages * ps;
	if (flags & PCM_MAP_FIXED) {
		start = *addr;
		if (start % ps || start == 0)
			return -EINVAL;
		if (start >= PCM_ADDR_LIMIT || len > PCM_ADDR_LIMIT - start)
			return -ENOMEM;
	} else {
		start = find_free(t, len);
		if (!start)
			return -ENOMEM;
	}
	v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	v->pte = calloc(npages, 1);
	if (!v->pte) {
		free(v);
		return -ENOMEM;
	}
	if (flags & PCM_MAP_FIXED) {
		ret = unmap_range(t, start, start + len);
		if (ret < 0) {
			free(v->pte);
			free(v);
			return ret;
		}
	}
	v->start = start;
	v->npages = npages;
	v->prot = prot;
	v->flags = type;
	v->fd = fd;
	v->pgoff = fd ? pgoff : 0;
	if (fd)
		fd->refs++;
	vma_insert(t, v);
	*addr = start;
	return 0;
}

PC_EXPORT int pcm_munmap(struct pcm_task *t, uint64_t addr, uint64_t length)
{
	uint64_t ps, end;

	if (!t)
		return -EINVAL;
	ps = t->k->page_size;
	if (addr % ps || length == 0 || addr >= PCM_ADDR_LIMIT ||
	    length > PCM_ADDR_LIMIT - addr)
		return -EINVAL;
	end = addr + align_up(length, ps);
	return unmap_range(t, addr, end);
}

/* ---- faults -------------------------------------------------------------------- */

/* Map the cached neighbours of virtual page vpage in its fault-around
 * block, clamped to the VMA and to EOF. */
static void fault_around(struct pcm_task *t, struct pcm_vma *v, uint64_t vpage)
{
	uint64_t fa = t->k->fault_around_pages;
	uint64_t ps = t->k->page_size;
	uint64_t vfirst = v->start / ps, vend = vfirst + v->npages;
	uint64_t from = vpage & ~(fa - 1), to = from + fa;
	struct pcm_file *f = v->fd->file;

	if (fa <= 1)
		return;
	if (from < vfirst)
		from = vfirst;
	if (to > vend)
		to = vend;
	for (uint64_t j = from; j < to; j++) {
		uint64_t i = j - vfirst;

		if (v->pte[i] == PCM_PTE_NONE && pcm_page_cached(f, v->pgoff + i))
			v->pte[i] = PCM_PTE_PRESENT;
	}
}

/* Read-around for a missing page (not for shmem or hugetlbfs): a window
 * of readahead_pages around it. The fault path does not look at the fd's
 * FADV_RANDOM (seen on 6.18: a fault through such a fd reads the whole
 * window); only readahead 0 makes it read the page alone. */
static void read_around(struct pcm_fd *fd, uint64_t page)
{
	struct pcm_file *f = fd->file;
	uint64_t ra = fd->task->k->readahead_pages;
	uint64_t from, to;

	if (ra == 0) {
		pcm_file_read_in(f, page);
		return;
	}
	from = page >= ra / 2 ? page - ra / 2 : 0;
	to = pcm_min(from + ra, f->npages);
	for (uint64_t p = from; p < to; p++)
		pcm_file_read_in(f, p);
}

static int file_fault(struct pcm_task *t, struct pcm_vma *v, uint64_t i, int write)
{
	struct pcm_file *f = v->fd->file;
	uint64_t page = v->pgoff + i;
	int private = v->flags == PCM_MAP_PRIVATE;

	if (page >= f->npages)
		return -EFAULT; /* SIGBUS */
	if (f->attrs & PCM_F_HUGETLB) {
		pcm_file_read_wait(f, page);
		v->pte[i] = PCM_PTE_PRESENT | (write && private ? PCM_PTE_ANON : 0);
		if (write && !private)
			f->pages[page] |= PCM_PAGE_DIRTY;
		return 0;
	}
	/* A read fault maps what is cached around it before anything is read. */
	if (!write)
		fault_around(t, v, v->start / t->k->page_size + i);
	if (!pcm_page_cached(f, page)) {
		int disk = !(f->attrs & (PCM_F_SHMEM | PCM_F_NO_INODE));

		if (!(f->attrs & PCM_F_SHMEM) && !(f->pages[page] & PCM_PAGE_PRESENT))
			read_around(v->fd, page);
		pcm_file_read_wait(f, page);
		/* The kernel waits for the read with mmap_lock dropped and
		 * retries the fault; the retry's fault-around maps what the
		 * read-around brought into the block (seen on 6.18). */
		if (disk && !write)
			fault_around(t, v, v->start / t->k->page_size + i);
	}
	if (write && private) {
		v->pte[i] = PCM_PTE_PRESENT | PCM_PTE_ANON;
		return 0;
	}
	v->pte[i] = PCM_PTE_PRESENT;
	if (write)
		f->pages[page] |= PCM_PAGE_DIRTY;
	return 0;
}

PC_EXPORT int pcm_touch(struct pcm_task *t, uint64_t addr, int write)
{
	struct pcm_vma *v;
	uint64_t i;
	uint8_t *pte;

	if (!t)
		return -EINVAL;
	v = pcm_vma_find(t, addr);
	if (!v || v->prot == PCM_PROT_NONE || (write && !(v->prot & PCM_PROT_WRITE)))
		return -EFAULT; /* SIGSEGV */
	i = (addr - v->start) / t->k->page_size;
	pte = &v->pte[i];
	switch (PTE_KIND(*pte)) {
	case PCM_PTE_HWPOISON:
		return -EFAULT; /* SIGBUS */
	case PCM_PTE_SWAP:
	case PCM_PTE_SWAP_CACHED:
		*pte = PCM_PTE_PRESENT | PCM_PTE_ANON; /* swap-in */
		return 0;
	case PCM_PMD_UNSTABLE:
		*pte = PCM_PMD_THP | (*pte & PCM_PTE_ANON); /* construction completes */
		return 0;
	case PCM_PMD_THP:
		return 0;
	case PCM_PTE_MIGRATION:
		/* The fault waits for migration to finish: the page is back. */
		*pte = PCM_PTE_PRESENT | (*pte & PCM_PTE_ANON);
		if (!(*pte & PCM_PTE_ANON) && v->fd) {
			if (v->pgoff + i >= v->fd->file->npages) {
				*pte = PCM_PTE_NONE;
				return -EFAULT;
			}
			pcm_file_read_wait(v->fd->file, v->pgoff + i);
		}
		/* the page is present now */
		/* fall through */
	case PCM_PTE_PRESENT:
		if (!write || (*pte & PCM_PTE_ANON))
			return 0;
		if (v->flags == PCM_MAP_PRIVATE)
			*pte = PCM_PTE_PRESENT | PCM_PTE_ANON; /* copy on write */
		else
			v->fd->file->pages[v->pgoff + i] |= PCM_PAGE_DIRTY;
		return 0;
	default: /* PCM_PTE_NONE */
		if (!v->fd) {
			*pte = PCM_PTE_PRESENT | PCM_PTE_ANON;
			return 0;
		}
		return file_fault(t, v, i, write);
	}
}

PC_EXPORT int pcm_swap_out(struct pcm_task *t, uint64_t addr)
{
	struct pcm_vma *v;
	uint8_t *pte;

	if (!t)
		return -EINVAL;
	v = pcm_vma_find(t, addr);
	if (!v)
		return -EFAULT;
	pte = &v->pte[(addr - v->start) / t->k->page_size];
	if (*pte != (PCM_PTE_PRESENT | PCM_PTE_ANON))
		return -EINVAL; /* only a present anonymous page goes to swap */
	*pte = PCM_PTE_SWAP | PCM_PTE_ANON;
	return 0;
}

PC_EXPORT int pcm_pte_set(struct pcm_task *t, uint64_t addr, int state)
{
	struct pcm_vma *v;
	uint8_t *pte, anon;

	if (!t)
		return -EINVAL;
	v = pcm_vma_find(t, addr);
	if (!v)
		return -EFAULT;
	pte = &v->pte[(addr - v->start) / t->k->page_size];
	anon = !v->fd || (*pte & PCM_PTE_ANON) ? PCM_PTE_ANON : 0;
	switch (state) {
	case PCM_PTE_NONE:
		*pte = PCM_PTE_NONE;
		return 0;
	case PCM_PTE_SWAP_CACHED:
		if (!anon || PTE_KIND(*pte) == PCM_PTE_NONE)
			return -EINVAL; /* only an anonymous page has a swap entry */
		/* fall through */
	case PCM_PTE_MIGRATION:
	case PCM_PTE_HWPOISON:
	case PCM_PMD_THP:
	case PCM_PMD_UNSTABLE:
		*pte = (uint8_t)state | anon;
		return 0;
	default:
		return -EINVAL;
	}
}

PC_EXPORT int pcm_pte_get(struct pcm_task *t, uint64_t addr)
{
	struct pcm_vma *v;

	if (!t)
		return -EINVAL;
	v = pcm_vma_find(t, addr);
	if (!v)
		return -EFAULT;
	return v->pte[(addr - v->start) / t->k->page_size];
}
