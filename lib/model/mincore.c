/* SPDX-License-Identifier: MIT */
/*
 * sys_mincore: the walk over VMAs, the per-VMA gate, and the per-page
 * answer in each semantics (doc/kernels.md section 1).
 */
#include <string.h>

#include "model-private.h"
#include "pc-private.h"

#define PCM_ADDR_LIMIT (UINT64_C(1) << 47)

#define PTE_KIND(pte) ((pte) & 0x0f)

enum view {
	VIEW_TRUTH,   /* page cache semantics: the gate passes, or there is none */
	VIEW_MAPPED,  /* only what the caller's page tables hold */
	VIEW_ONES,    /* faked (gate fails on GATED_FAKED) or useless: all 1s */
};

/* A page-cache lookup of the page behind an empty entry. */
static unsigned char cache_lookup(const struct pcm_vma *v, uint64_t i)
{
	const struct pcm_file *f = v->fd ? v->fd->file : NULL;
	uint64_t page = v->pgoff + i;

	if (!f || (f->attrs & PCM_F_NO_INODE) || page >= f->npages)
		return 0; /* anonymous, or nothing to look up */
	if (f->pages[page] & PCM_PAGE_SWAP)
		return !!(f->pages[page] & PCM_PAGE_SWAPCACHE); /* shmem: the swap cache */
	return (unsigned char)pcm_page_cached(f, page);
}

static unsigned char page_truth(const struct pcm_vma *v, uint64_t i)
{
	switch (PTE_KIND(v->pte[i])) {
	case PCM_PTE_PRESENT:
	case PCM_PMD_THP:
	case PCM_PTE_MIGRATION:
	case PCM_PTE_HWPOISON:
	case PCM_PTE_SWAP_CACHED:
		return 1;
	case PCM_PTE_SWAP:
		return 0; /* not in the swap cache */
	default: /* none, or a PMD still under construction */
		return cache_lookup(v, i);
	}
}

static unsigned char page_mapped(const struct pcm_vma *v, uint64_t i)
{
	switch (PTE_KIND(v->pte[i])) {
	case PCM_PTE_PRESENT:
	case PCM_PMD_THP:
	case PCM_PMD_UNSTABLE:
	case PCM_PTE_MIGRATION:
	case PCM_PTE_HWPOISON:
		return 1;
	default: /* none, or swapped out */
		return 0;
	}
}

static int is_hugetlb(const struct pcm_vma *v)
{
	return v->fd && (v->fd->file->attrs & PCM_F_HUGETLB);
}

static enum view vma_view(struct pcm_task *t, const struct pcm_vma *v)
{
	int gate;

	switch (t->k->mincore_mode) {
	case PC_MINCORE_USELESS:
		return VIEW_ONES;
	case PC_MINCORE_MAPPED_ONLY:
		return VIEW_MAPPED;
	case PC_MINCORE_FULL:
		return VIEW_TRUTH;
	default:
		break;
	}
	gate = !v->fd || pcm_can_do_mincore(t, v->fd->file) == 1;
	if (gate)
		return VIEW_TRUTH;
	return t->k->mincore_mode == PC_MINCORE_GATED_FAKED ? VIEW_ONES : VIEW_MAPPED;
}

static void fill(struct pcm_task *t, const struct pcm_vma *v, uint64_t i, uint64_t n,
		 unsigned char *vec)
{
	enum view view = vma_view(t, v);

	for (uint64_t j = 0; j < n; j++) {
		if (view == VIEW_ONES)
			vec[j] = 1;
		else if (is_hugetlb(v))
			vec[j] = PTE_KIND(v->pte[i + j]) != PCM_PTE_NONE; /* the huge PTE */
		else if (view == VIEW_MAPPED)
			vec[j] = page_mapped(v, i + j);
		else
			vec[j] = page_truth(v, i + j);
	}
}

PC_EXPORT int pcm_mincore(struct pcm_task *t, uint64_t addr, uint64_t length,
			  unsigned char *vec)
{
	uint64_t ps, end, cur;

	if (!t)
		return -EINVAL;
	ps = t->k->page_size;
	if (addr % ps)
		return -EINVAL;
	if (addr >= PCM_ADDR_LIMIT || length > PCM_ADDR_LIMIT - addr)
		return -ENOMEM;
	if (length == 0)
		return 0;
	if (!vec)
		return -EFAULT;
	end = addr + pc_div_round_up(length, ps) * ps;
	for (cur = addr; cur < end;) {
		const struct pcm_vma *v = pcm_vma_find(t, cur);
		uint64_t i, n;

		if (!v)
			return -ENOMEM; /* the pages before the hole are filled */
		i = (cur - v->start) / ps;
		n = pcm_min(v->npages - i, (end - cur) / ps);
		fill(t, v, i, n, vec + (cur - addr) / ps);
		cur += n * ps;
	}
	return 0;
}
