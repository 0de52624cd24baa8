/* SPDX-License-Identifier: MIT */
/*
 * The reverse map: which page-table entries, in any task, map a file's
 * page. Reclaim and invalidation (kernel.c) zap them; io.c asks whether a
 * page is mapped. Below both kernel.c and mm.c.
 */
#include "model-private.h"

#define PTE_KIND(pte) ((pte) & 0x0f)

/* An entry that maps the file's own page (not an anonymous copy). */
static int maps_file_page(uint8_t pte)
{
	int kind = PTE_KIND(pte);

	return !(pte & PCM_PTE_ANON) &&
	       (kind == PCM_PTE_PRESENT || kind == PCM_PMD_THP || kind == PCM_PTE_MIGRATION);
}

/* Calls fn on every page-table entry, in any task, for file page page. */
static int for_each_file_pte(struct pcm_file *f, uint64_t page,
			     int (*fn)(uint8_t *pte))
{
	for (struct pcm_task *t = f->k->tasks; t; t = t->next) {
		for (struct pcm_vma *v = t->vmas; v; v = v->next) {
			if (!v->fd || v->fd->file != f || page < v->pgoff ||
			    page - v->pgoff >= v->npages)
				continue;
			if (fn(&v->pte[page - v->pgoff]))
				return 1;
		}
	}
	return 0;
}

static int pte_maps(uint8_t *pte)
{
	return maps_file_page(*pte);
}

static int pte_zap(uint8_t *pte)
{
	if (maps_file_page(*pte))
		*pte = PCM_PTE_NONE;
	return 0;
}

int pcm_file_page_mapped(const struct pcm_file *f, uint64_t page)
{
	return for_each_file_pte((struct pcm_file *)f, page, pte_maps);
}

void pcm_file_page_unmap(struct pcm_file *f, uint64_t page)
{
	for_each_file_pte(f, page, pte_zap);
}
