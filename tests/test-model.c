/* SPDX-License-Identifier: MIT */
/* The reference model (include/pagecache/model.h): one case per documented rule. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pagecache/model.h"
#include "model/model-private.h"

#define NOBODY 65534
#define ALLCAPS (PCM_CAP_FOWNER | PCM_CAP_DAC_OVERRIDE)

#define OK(expr) ck_assert_int_eq((expr), 0)

/* ---- helpers ---------------------------------------------------------------- */

static struct pcm_kernel *kernel(int mincore, int nowait, int cachestat)
{
	struct pcm_kernel *k = NULL;

	OK(pcm_kernel_new(mincore, nowait, cachestat, &k));
	return k;
}

/* This machine's kernel: gated-faked, destructive, gated cachestat. */
static struct pcm_kernel *kernel_618(void)
{
	return kernel(PC_MINCORE_GATED_FAKED, PC_NOWAIT_DESTRUCTIVE, PC_CACHESTAT_GATED);
}

static struct pcm_task *task(struct pcm_kernel *k, uint32_t uid, uint32_t gid, unsigned int caps)
{
	struct pcm_task *t = NULL;

	OK(pcm_task_new(k, uid, gid, caps, &t));
	return t;
}

static struct pcm_file *file(struct pcm_kernel *k, uint32_t uid, uint32_t gid, uint32_t mode,
			     uint64_t npages)
{
	struct pcm_file *f = NULL;

	OK(pcm_file_new(k, uid, gid, mode, npages, &f));
	return f;
}

static struct pcm_fd *fd_open(struct pcm_task *t, struct pcm_file *f, int flags)
{
	struct pcm_fd *fd = NULL;

	OK(pcm_open(t, f, flags, &fd));
	return fd;
}

static uint64_t map(struct pcm_task *t, struct pcm_fd *fd, uint64_t pgoff, uint64_t npages,
		    int prot, int flags)
{
	uint64_t addr = 0;

	OK(pcm_mmap(t, fd, pgoff, npages, prot, flags, &addr));
	return addr;
}

static uint64_t ps_of(struct pcm_task *t)
{
	return t->k->page_size;
}

static void cache_pages(struct pcm_file *f, const char *pattern)
{
	for (uint64_t i = 0; pattern[i]; i++)
		if (pattern[i] == '1')
			OK(pcm_file_cache(f, i));
}

/* Rotating result buffers so that several strings fit in one assertion. */
static char *buf_next(void)
{
	static char bufs[4][1024];
	static unsigned int n;

	return bufs[n++ % 4];
}

/* mincore of npages pages from addr as a "0101" string. */
static const char *mc(struct pcm_task *t, uint64_t addr, uint64_t npages)
{
	unsigned char vec[1023];
	char *s = buf_next();

	ck_assert_uint_lt(npages, sizeof(vec));
	OK(pcm_mincore(t, addr, npages * ps_of(t), vec));
	for (uint64_t i = 0; i < npages; i++) {
		ck_assert_uint_le(vec[i], 1);
		s[i] = (char)('0' + vec[i]);
	}
	s[npages] = '\0';
	return s;
}

/* The truth about pages [from, from + n) of f. */
static const char *truth(struct pcm_file *f, uint64_t from, uint64_t n)
{
	char *s = buf_next();

	for (uint64_t i = 0; i < n; i++)
		s[i] = (char)('0' + pcm_file_resident(f, from + i));
	s[n] = '\0';
	return s;
}

/* Page-table entries: '-' none, 'p' file page, 'a' anonymous page, 's' swap,
 * 'c' swap cached, 'm' migration, 'h' hwpoison, 't' THP, 'u' unstable. */
static const char *ptes(struct pcm_task *t, uint64_t addr, uint64_t n)
{
	char *s = buf_next();

	for (uint64_t i = 0; i < n; i++) {
		int pte = pcm_pte_get(t, addr + i * ps_of(t));

		ck_assert_int_ge(pte, 0);
		switch (pte & ~PCM_PTE_ANON) {
		case PCM_PTE_NONE: s[i] = '-'; break;
		case PCM_PTE_PRESENT: s[i] = (pte & PCM_PTE_ANON) ? 'a' : 'p'; break;
		case PCM_PTE_SWAP: s[i] = 's'; break;
		case PCM_PTE_SWAP_CACHED: s[i] = 'c'; break;
		case PCM_PTE_MIGRATION: s[i] = 'm'; break;
		case PCM_PTE_HWPOISON: s[i] = 'h'; break;
		case PCM_PMD_THP: s[i] = 't'; break;
		case PCM_PMD_UNSTABLE: s[i] = 'u'; break;
		default: s[i] = '?'; break;
		}
	}
	s[n] = '\0';
	return s;
}

static unsigned int nfiles(struct pcm_kernel *k)
{
	unsigned int n = 0;

	for (struct pcm_file *f = k->files; f; f = f->next)
		n++;
	return n;
}

/* ---- the kernel ------------------------------------------------------------------ */

START_TEST(kernel_new_rejects_unknown_modes)
{
	struct pcm_kernel *k = NULL;

	ck_assert_int_eq(pcm_kernel_new(PC_MINCORE_UNKNOWN, PC_NOWAIT_CLEAN, PC_CACHESTAT_OPEN, &k),
			 -EINVAL);
	ck_assert_int_eq(pcm_kernel_new(PC_MINCORE_FULL, PC_NOWAIT_UNKNOWN, PC_CACHESTAT_OPEN, &k),
			 -EINVAL);
	ck_assert_int_eq(pcm_kernel_new(PC_MINCORE_FULL, PC_NOWAIT_CLEAN, PC_CACHESTAT_OPEN + 1, &k),
			 -EINVAL);
	ck_assert_int_eq(pcm_kernel_new(PC_MINCORE_USELESS + 1, PC_NOWAIT_CLEAN, PC_CACHESTAT_OPEN,
					&k), -EINVAL);
	ck_assert_ptr_null(k);
	pcm_kernel_free(NULL);
}
END_TEST

START_TEST(system_file_is_root_0755_and_cached)
{
	struct pcm_kernel *k = kernel_618();
	struct pcm_file *sys = pcm_kernel_system_file(k);
	struct pcm_task *root = task(k, 0, 0, ALLCAPS), *nobody = task(k, NOBODY, NOBODY, 0);
	struct pcm_fd *fd = NULL;

	ck_assert_uint_eq(pcm_file_npages(sys), 64);
	ck_assert_uint_eq(pcm_file_size(sys), 64 * 4096);
	for (uint64_t p = 0; p < 64; p++)
		ck_assert_int_eq(pcm_file_resident(sys, p), 1);
	ck_assert_int_eq(pcm_file_resident(sys, 64), -ERANGE);
	OK(pcm_open(nobody, sys, PCM_O_RDONLY, &fd));
	ck_assert_int_eq(pcm_open(nobody, sys, PCM_O_RDWR, &fd), -EACCES);
	ck_assert_int_eq(pcm_can_do_mincore(nobody, sys), 0);
	ck_assert_int_eq(pcm_can_do_mincore(root, sys), 1);
	pcm_kernel_free(k);
}
END_TEST

START_TEST(tune_validates_and_page_size_needs_an_empty_kernel)
{
	struct pcm_kernel *k = kernel_618();

	ck_assert_int_eq(pcm_kernel_tune(k, PCM_TUNE_PAGE_SIZE, 8192), -EINVAL);
	OK(pcm_kernel_tune(k, PCM_TUNE_PAGE_SIZE, 16384));
	ck_assert_uint_eq(pcm_file_size(pcm_kernel_system_file(k)), 64 * 16384);
	ck_assert_int_eq(pcm_kernel_tune(k, PCM_TUNE_FAULT_AROUND_PAGES, 3), -EINVAL);
	ck_assert_int_eq(pcm_kernel_tune(k, PCM_TUNE_FAULT_AROUND_PAGES, 1024), -EINVAL);
	OK(pcm_kernel_tune(k, PCM_TUNE_FAULT_AROUND_PAGES, 1));
	ck_assert_int_eq(pcm_kernel_tune(k, PCM_TUNE_READAHEAD_PAGES, 4097), -EINVAL);
	OK(pcm_kernel_tune(k, PCM_TUNE_READAHEAD_PAGES, 0));
	ck_assert_int_eq(pcm_kernel_tune(k, 99, 1), -EINVAL);
	file(k, 0, 0, 0644, 1);
	ck_assert_int_eq(pcm_kernel_tune(k, PCM_TUNE_PAGE_SIZE, 4096), -EBUSY);
	pcm_kernel_free(k);
}
END_TEST

START_TEST(kernels_are_independent)
{
	struct pcm_kernel *a = kernel_618(), *b = kernel_618();
	struct pcm_task *ta = task(a, 0, 0, ALLCAPS);
	struct pcm_file *fb = file(b, 0, 0, 0644, 1);
	struct pcm_fd *fd = NULL;

	ck_assert_int_eq(pcm_open(ta, fb, PCM_O_RDONLY, &fd), -EINVAL);
	pcm_file_drop(pcm_kernel_system_file(a), 0);
	ck_assert_int_eq(pcm_file_resident(pcm_kernel_system_file(b), 0), 1);
	pcm_kernel_free(a);
	pcm_kernel_free(b);
}
END_TEST

/* ---- sys_mincore ------------------------------------------------------------------ */

START_TEST(mincore_unaligned_start_is_einval)
{
	struct pcm_kernel *k = kernel_618();
	struct pcm_task *t = task(k, 0, 0, ALLCAPS);
	uint64_t a = map(t, NULL, 0, 2, PCM_PROT_READ, PCM_MAP_PRIVATE);
	unsigned char vec[2];

	ck_assert_int_eq(pcm_mincore(t, a + 1, 4096, vec), -EINVAL);
	ck_assert_int_eq(pcm_mincore(t, a + 2048, 0, vec), -EINVAL);
	pcm_kernel_free(k);
}
END_TEST

START_TEST(mincore_zero_length_is_0_even_in_a_hole)
{
	struct pcm_kernel *k = kernel_618();
	struct pcm_task *t = task(k, 0, 0, ALLCAPS);

	OK(pcm_mincore(t, 0x7000, 0, NULL));
	pcm_kernel_free(k);
}
END_TEST

START_TEST(mincore_rounds_length_up_to_pages)
{
	struct pcm_kernel *k = kernel_618();
	struct pcm_task *t = task(k, 0, 0, ALLCAPS);
	uint64_t a = map(t, NULL, 0, 4, PCM_PROT_READ | PCM_PROT_WRITE, PCM_MAP_PRIVATE);
	unsigned char vec[4];

	OK(pcm_touch(t, a + 4096, 1));
	memset(vec, 7, sizeof(vec));
	OK(pcm_mincore(t, a, 1, vec));
	ck_assert_int_eq(vec[0], 0);
	ck_assert_int_eq(vec[1], 7);
	OK(pcm_mincore(t, a, 4096 + 1, vec));
	ck_assert_int_eq(vec[1], 1);
	ck_assert_int_eq(vec[2], 7);
	pcm_kernel_free(k);
}
END_TEST

START_TEST(mincore_hole_is_enomem_with_the_pages_before_filled)
{
	struct pcm_kernel *k = kernel_618();
	struct pcm_task *t = task(k, 0, 0, ALLCAPS);
	uint64_t a = map(t, NULL, 0, 2, PCM_PROT_READ | PCM_PROT_WRITE, PCM_MAP_PRIVATE);
	uint64_t b = a + 3 * 4096;
	unsigned char vec[5];

	OK(pcm_mmap(t, NULL, 0, 2, PCM_PROT_READ, PCM_MAP_PRIVATE | PCM_MAP_FIXED, &b));
	ck_assert_uint_eq(b, a + 3 * 4096);
	OK(pcm_touch(t, a, 0));
	OK(pcm_touch(t, a + 4096, 0));
	memset(vec, 7, sizeof(vec));
	ck_assert_int_eq(pcm_mincore(t, a, 5 * 4096, vec), -ENOMEM);
	ck_assert_int_eq(vec[0], 1);
	ck_assert_int_eq(vec[1], 1);
	ck_assert_int_eq(vec[2], 7);
	ck_assert_int_eq(vec[3], 7);
	/* starting in the hole: nothing */
	ck_assert_int_eq(pcm_mincore(t, a + 2 * 4096, 4096, vec), -ENOMEM);
	ck_assert_int_eq(vec[0], 1);
	ck_assert_int_eq(pcm_mincore(t, 1ull << 47, 4096, vec), -ENOMEM);
	pcm_kernel_free(k);
}
END_TEST

START_TEST(mincore_null_vector_is_efault)
{
	struct pcm_kernel *k = kernel_618();
	struct pcm_task *t = task(k, 0, 0, ALLCAPS);
	uint64_t a = map(t, NULL, 0, 1, PCM_PROT_READ, PCM_MAP_PRIVATE);

	ck_assert_int_eq(pcm_mincore(t, a, 4096, NULL), -EFAULT);
	pcm_kernel_free(k);
}
END_TEST

START_TEST(mincore_spanning_vmas_mixes_real_and_fake_answers)
{
	struct pcm_kernel *k = kernel_618();
	struct pcm_task *t = task(k, NOBODY, NOBODY, 0);
	struct pcm_file *own = file(k, NOBODY, NOBODY, 0600, 2);
	struct pcm_file *foreign = file(k, 0, 0, 0644, 2);
	uint64_t a = map(t, fd_open(t, own, PCM_O_RDONLY), 0, 2, PCM_PROT_READ, PCM_MAP_SHARED);
	uint64_t b = a + 2 * 4096, c = a + 4 * 4096;

	OK(pcm_mmap(t, fd_open(t, foreign, PCM_O_RDONLY), 0, 2, PCM_PROT_READ,
		    PCM_MAP_SHARED | PCM_MAP_FIXED, &b));
	OK(pcm_mmap(t, NULL, 0, 2, PCM_PROT_READ, PCM_MAP_PRIVATE | PCM_MAP_FIXED, &c));
	OK(pcm_file_cache(own, 0));
	ck_assert_str_eq(mc(t, a, 6), "101100");
	pcm_kernel_free(k);
}
END_TEST

/* ---- each semantics, with the gate passing and failing ------------------------ */

/* A 4-page file: page 0 cached, page 1 cached and mapped by the caller,
 * page 2 absent, page 3 a shadow; page 5 is past EOF. */
static const char *semantics_case(int mode, int gate_passes)
{
	struct pcm_kernel *k = kernel(mode, PC_NOWAIT_CLEAN, PC_CACHESTAT_OPEN);
	struct pcm_task *t = task(k, NOBODY, NOBODY, 0);
	struct pcm_file *f = file(k, 0, 0, gate_passes ? 0666 : 0644, 4);
	uint64_t a;
	const char *s;

	OK(pcm_kernel_tune(k, PCM_TUNE_FAULT_AROUND_PAGES, 1));
	OK(pcm_file_cache(f, 0));
	OK(pcm_file_cache(f, 1));
	OK(pcm_file_reclaim(f, 3));
	a = map(t, fd_open(t, f, PCM_O_RDONLY), 0, 6, PCM_PROT_READ, PCM_MAP_SHARED);
	OK(pcm_touch(t, a + 4096, 0));
	s = mc(t, a, 6);
	pcm_kernel_free(k);
	return s;
}

START_TEST(semantics_by_gate)
{
	static const struct {
		int mode;
		const char *pass, *fail;
	} rows[] = {
		{ PC_MINCORE_FULL,         "110000", "110000" },
		{ PC_MINCORE_GATED_FAKED,  "110000", "111111" },
		{ PC_MINCORE_GATED_MAPPED, "110000", "010000" },
		{ PC_MINCORE_MAPPED_ONLY,  "010000", "010000" },
		{ PC_MINCORE_USELESS,      "111111", "111111" },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		ck_assert_str_eq(semantics_case(rows[i].mode, 1), rows[i].pass);
		ck_assert_str_eq(semantics_case(rows[i].mode, 0), rows[i].fail);
	}
}
END_TEST

START_TEST(anonymous_memory_is_never_gated)
{
	static const struct {
		int mode;
		const char *expect; /* untouched, touched, swapped, swap-cached */
	} rows[] = {
		{ PC_MINCORE_FULL,         "0101" },
		{ PC_MINCORE_GATED_FAKED,  "0101" },
		{ PC_MINCORE_GATED_MAPPED, "0101" },
		{ PC_MINCORE_MAPPED_ONLY,  "0100" },
		{ PC_MINCORE_USELESS,      "1111" },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct pcm_kernel *k = kernel(rows[i].mode, PC_NOWAIT_CLEAN, PC_CACHESTAT_OPEN);
		struct pcm_task *t = task(k, NOBODY, NOBODY, 0);
		uint64_t a = map(t, NULL, 0, 4, PCM_PROT_READ | PCM_PROT_WRITE, PCM_MAP_PRIVATE);

		OK(pcm_touch(t, a + 1 * 4096, 0));
		OK(pcm_touch(t, a + 2 * 4096, 1));
		OK(pcm_touch(t, a + 3 * 4096, 1));
		OK(pcm_swap_out(t, a + 2 * 4096));
		OK(pcm_swap_out(t, a + 3 * 4096));
		OK(pcm_pte_set(t, a + 3 * 4096, PCM_PTE_SWAP_CACHED));
		ck_assert_str_eq(ptes(t, a, 4), "-asc");
		ck_assert_str_eq(mc(t, a, 4), rows[i].expect);
		pcm_kernel_free(k);
	}
}
END_TEST

/* ---- the gate --------------------------------------------------------------------- */

/* The gate as mincore shows it on a gated-faked kernel: an untouched page
 * that is not cached reads 0 when the gate passes, 1 when it fails. */
static int gate_seen(struct pcm_task *t, struct pcm_file *f)
{
	struct pcm_fd *fd = fd_open(t, f, PCM_O_RDONLY);
	uint64_t a = map(t, fd, 0, 1, PCM_PROT_READ, PCM_MAP_SHARED);
	const char *s = mc(t, a, 1);
	int pass = s[0] == '0';

	OK(pcm_munmap(t, a, 4096));
	pcm_close(fd);
	ck_assert_int_eq(pcm_can_do_mincore(t, f), pass);
	return pass;
}

START_TEST(gate_owner_passes_even_on_0444)
{
	struct pcm_kernel *k = kernel_618();
	struct pcm_task *t = task(k, 1000, 1000, 0);
	struct pcm_fd *fd = NULL;

	ck_assert_int_eq(gate_seen(t, file(k, 1000, 1000, 0444, 2)), 1);
	ck_assert_int_eq(pcm_open(t, file(k, 1000, 1000, 0444, 2), PCM_O_RDWR, &fd), -EACCES);
	pcm_kernel_free(k);
}
END_TEST

START_TEST(gate_uses_fsuid)
{
	struct pcm_kernel *k = kernel_618();
	struct pcm_file *f = file(k, 1000, 1000, 0644, 2);

	ck_assert_int_eq(gate_seen(task(k, 1000, 2000, 0), f), 1);
	ck_assert_int_eq(gate_seen(task(k, 1001, 1000, 0), f), 0);
	pcm_kernel_free(k);
}
END_TEST

START_TEST(gate_cap_fowner_passes)
{
	struct pcm_kernel *k = kernel_618();
	struct pcm_file *f = file(k, 1000, 1000, 0444, 2);

	ck_assert_int_eq(gate_seen(task(k, 1001, 1001, PCM_CAP_FOWNER), f), 1);
	pcm_kernel_free(k);
}
END_TEST

START_TEST(gate_root_without_caps_fails_dac_override_passes)
{
	struct pcm_kernel *k = kernel_618();
	struct pcm_file *f = file(k, 1000, 1000, 0644, 2);

	ck_assert_int_eq(gate_seen(task(k, 0, 0, 0), f), 0);
	ck_assert_int_eq(gate_seen(task(k, 0, 0, PCM_CAP_DAC_OVERRIDE), f), 1);
	pcm_kernel_free(k);
}
END_TEST

START_TEST(gate_write_bits_pass)
{
	struct pcm_kernel *k = kernel_618();
	struct pcm_file *other = file(k, 0, 100, 0666, 2);
	struct pcm_file *group = file(k, 0, 100, 0664, 2);
	struct pcm_file *owner_only = file(k, 0, 100, 0646, 2);

	ck_assert_int_eq(gate_seen(task(k, NOBODY, NOBODY, 0), other), 1);
	ck_assert_int_eq(gate_seen(task(k, NOBODY, 100, 0), group), 1);
	ck_assert_int_eq(gate_seen(task(k, NOBODY, 101, 0), group), 0);
	/* the owning group's bits decide for its members, not others' bits */
	ck_assert_int_eq(gate_seen(task(k, NOBODY, 100, 0), owner_only), 0);
	ck_assert_int_eq(gate_seen(task(k, NOBODY, 101, 0), owner_only), 1);
	pcm_kernel_free(k);
}
END_TEST

START_TEST(gate_acl_write_entries_pass)
{
	struct pcm_kernel *k = kernel_618();
	struct pcm_file *byuid = file(k, 0, 0, 0644, 2), *bygid = file(k, 0, 0, 0644, 2);

	OK(pcm_file_set(byuid, PCM_FILE_ACL_WRITE_UID, NOBODY));
	OK(pcm_file_set(bygid, PCM_FILE_ACL_WRITE_GID, 300));
	ck_assert_int_eq(gate_seen(task(k, NOBODY, NOBODY, 0), byuid), 1);
	ck_assert_int_eq(gate_seen(task(k, 1000, 1000, 0), byuid), 0);
	ck_assert_int_eq(gate_seen(task(k, NOBODY, 300, 0), bygid), 1);
	ck_assert_int_eq(gate_seen(task(k, NOBODY, NOBODY, 0), bygid), 0);
	ck_assert_int_eq(pcm_file_set(byuid, PCM_FILE_ACL_WRITE_UID, 1ull << 32), -EINVAL);
	pcm_kernel_free(k);
}
END_TEST

START_TEST(gate_immutable_denies_writers_not_owners)
{
	struct pcm_kernel *k = kernel_618();
	struct pcm_file *f = file(k, 1000, 1000, 0666, 2);

	OK(pcm_file_set(f, PCM_FILE_IMMUTABLE, 1));
	ck_assert_int_eq(gate_seen(task(k, NOBODY, NOBODY, 0), f), 0);
	ck_assert_int_eq(gate_seen(task(k, 0, 0, PCM_CAP_DAC_OVERRIDE), f), 0);
	ck_assert_int_eq(gate_seen(task(k, 1000, 1000, 0), f), 1);
	ck_assert_int_eq(gate_seen(task(k, 0, 0, PCM_CAP_FOWNER), f), 1);
	pcm_kernel_free(k);
}
END_TEST

START_TEST(gate_read_only_superblock_denies_writers_not_owners)
{
	struct pcm_kernel *k = kernel_618();
	struct pcm_file *f = file(k, 1000, 1000, 0666, 2);

	OK(pcm_file_set(f, PCM_FILE_RDONLY_SB, 1));
	ck_assert_int_eq(gate_seen(task(k, NOBODY, NOBODY, 0), f), 0);
	ck_assert_int_eq(gate_seen(task(k, 1000, 1000, 0), f), 1);
	pcm_kernel_free(k);
}
END_TEST

START_TEST(gate_read_only_bind_mount_does_not_deny)
{
	struct pcm_kernel *k = kernel_618();
	struct pcm_file *f = file(k, 1000, 1000, 0666, 2);
	struct pcm_task *t = task(k, NOBODY, NOBODY, 0);
	struct pcm_fd *fd = NULL;

	OK(pcm_file_set(f, PCM_FILE_RDONLY_MOUNT, 1));
	ck_assert_int_eq(gate_seen(t, f), 1);
	ck_assert_int_eq(pcm_open(t, f, PCM_O_RDWR, &fd), -EROFS);
	pcm_kernel_free(k);
}
END_TEST

START_TEST(gate_fails_on_no_inode_mappings_even_for_root)
{
	struct pcm_kernel *k = kernel_618();
	struct pcm_kernel *full = kernel(PC_MINCORE_FULL, PC_NOWAIT_CLEAN, PC_CACHESTAT_OPEN);
	struct pcm_task *root = task(k, 0, 0, ALLCAPS), *froot = task(full, 0, 0, ALLCAPS);
	struct pcm_file *vdso = file(k, 0, 0, 0644, 2), *fvdso = file(full, 0, 0, 0644, 2);
	uint64_t a, b;

	OK(pcm_file_set(vdso, PCM_FILE_NO_INODE, 1));
	OK(pcm_file_set(fvdso, PCM_FILE_NO_INODE, 1));
	ck_assert_int_eq(gate_seen(root, vdso), 0);
	/* no gate before 5.2: nothing to look up, so 0 until mapped */
	b = map(froot, fd_open(froot, fvdso, PCM_O_RDONLY), 0, 2, PCM_PROT_READ, PCM_MAP_SHARED);
	OK(pcm_touch(froot, b + 4096, 0));
	ck_assert_str_eq(truth(fvdso, 0, 2), "11");
	ck_assert_str_eq(mc(froot, b, 2), "01");
	a = map(root, fd_open(root, vdso, PCM_O_RDONLY), 0, 2, PCM_PROT_READ, PCM_MAP_SHARED);
	ck_assert_str_eq(mc(root, a, 2), "11");
	pcm_kernel_free(k);
	pcm_kernel_free(full);
}
END_TEST

START_TEST(open_checks_permissions_in_order)
{
	struct pcm_kernel *k = kernel_618();
	struct pcm_task *nobody = task(k, NOBODY, NOBODY, 0);
	struct pcm_task *owner = task(k, 1000, 1000, 0);
	struct pcm_task *dac = task(k, 0, 0, PCM_CAP_DAC_OVERRIDE);
	struct pcm_file *secret = file(k, 1000, 1000, 0600, 1);
	struct pcm_file *ro = file(k, 1000, 1000, 0644, 1);
	struct pcm_file *imm = file(k, 1000, 1000, 0666, 1);
	struct pcm_file *rosb = file(k, 1000, 1000, 0666, 1);
	struct pcm_fd *fd = NULL;

	OK(pcm_file_set(imm, PCM_FILE_IMMUTABLE, 1));
	OK(pcm_file_set(rosb, PCM_FILE_RDONLY_SB, 1));
	OK(pcm_file_set(rosb, PCM_FILE_IMMUTABLE, 1));
	ck_assert_int_eq(pcm_open(nobody, secret, PCM_O_RDONLY, &fd), -EACCES);
	ck_assert_int_eq(pcm_open(nobody, ro, PCM_O_RDWR, &fd), -EACCES);
	ck_assert_int_eq(pcm_open(owner, imm, PCM_O_RDWR, &fd), -EPERM);
	ck_assert_int_eq(pcm_open(owner, rosb, PCM_O_RDWR, &fd), -EROFS);
	ck_assert_int_eq(pcm_open(owner, ro, 1, &fd), -EINVAL);
	ck_assert_ptr_null(fd);
	OK(pcm_open(dac, secret, PCM_O_RDWR, &fd));
	OK(pcm_open(owner, ro, PCM_O_RDWR, &fd));
	pcm_kernel_free(k);
}
END_TEST

/* ---- the truth, page by page ------------------------------------------------------- */

START_TEST(truth_counts_only_up_to_date_pages)
{
	struct pcm_kernel *k = kernel(PC_MINCORE_FULL, PC_NOWAIT_CLEAN, PC_CACHESTAT_OPEN);
	struct pcm_task *t = task(k, 0, 0, ALLCAPS);
	struct pcm_file *f = file(k, 0, 0, 0644, 4);
	struct pcm_fd *fd = fd_open(t, f, PCM_O_RDONLY);
	uint64_t a = map(t, fd, 0, 6, PCM_PROT_READ, PCM_MAP_SHARED);
	struct pc_cachestat cs;

	OK(pcm_file_cache(f, 0));
	OK(pcm_file_read_pending(f, 1));
	OK(pcm_file_reclaim(f, 2));
	ck_assert_str_eq(mc(t, a, 6), "100000"); /* pending, shadow, absent, past EOF */
	OK(pcm_cachestat(fd, 0, 0, &cs));
	ck_assert_uint_eq(cs.cache, 2);
	ck_assert_int_eq(pcm_preadv2_nowait(fd, 1), -EAGAIN);
	OK(pcm_touch(t, a + 4096, 0)); /* the fault waits for the read */
	ck_assert_str_eq(mc(t, a, 2), "11");
	pcm_kernel_free(k);
}
END_TEST

START_TEST(cow_page_in_private_mapping_goes_through_swap)
{
	struct pcm_kernel *k = kernel(PC_MINCORE_FULL, PC_NOWAIT_CLEAN, PC_CACHESTAT_OPEN);
	struct pcm_task *t = task(k, 0, 0, ALLCAPS);
	struct pcm_file *f = file(k, 0, 0, 0644, 2);
	uint64_t a = map(t, fd_open(t, f, PCM_O_RDONLY), 0, 2, PCM_PROT_READ | PCM_PROT_WRITE,
			 PCM_MAP_PRIVATE);

	OK(pcm_touch(t, a, 1));
	ck_assert_str_eq(ptes(t, a, 2), "a-");
	ck_assert_str_eq(truth(f, 0, 2), "11"); /* the file page came in, then was copied */
	OK(pcm_swap_out(t, a));
	ck_assert_str_eq(mc(t, a, 2), "01"); /* the swap entry hides the cached file page */
	OK(pcm_pte_set(t, a, PCM_PTE_SWAP_CACHED));
	ck_assert_str_eq(mc(t, a, 1), "1");
	OK(pcm_touch(t, a, 0));
	ck_assert_str_eq(ptes(t, a, 1), "a");
	ck_assert_int_eq(pcm_swap_out(t, a + 4096), -EINVAL); /* a file page has no swap entry */
	ck_assert_int_eq(pcm_pte_set(t, a + 4096, PCM_PTE_SWAP_CACHED), -EINVAL);
	pcm_kernel_free(k);
}
END_TEST

START_TEST(migration_and_hwpoison_entries_read_1)
{
	struct pcm_kernel *k = kernel(PC_MINCORE_MAPPED_ONLY, PC_NOWAIT_CLEAN, PC_CACHESTAT_OPEN);
	struct pcm_kernel *full = kernel(PC_MINCORE_FULL, PC_NOWAIT_CLEAN, PC_CACHESTAT_OPEN);
	struct pcm_kernel *ks[2] = { k, full };

	for (int i = 0; i < 2; i++) {
		struct pcm_task *t = task(ks[i], 0, 0, ALLCAPS);
		struct pcm_file *f = file(ks[i], 0, 0, 0644, 3);
		uint64_t a = map(t, fd_open(t, f, PCM_O_RDONLY), 0, 3, PCM_PROT_READ,
				 PCM_MAP_SHARED);

		OK(pcm_pte_set(t, a, PCM_PTE_MIGRATION));
		OK(pcm_pte_set(t, a + 4096, PCM_PTE_HWPOISON));
		ck_assert_str_eq(mc(t, a, 3), "110");
		ck_assert_int_eq(pcm_touch(t, a + 4096, 0), -EFAULT); /* SIGBUS */
		OK(pcm_touch(t, a, 0));                               /* migration done */
		ck_assert_str_eq(ptes(t, a, 1), "p");
		ck_assert_int_eq(pcm_file_resident(f, 0), 1);
	}
	pcm_kernel_free(k);
	pcm_kernel_free(full);
}
END_TEST

START_TEST(thp_reads_1_and_unstable_pmd_depends_on_semantics)
{
	static const struct {
		int mode;
		const char *expect; /* THP over an absent page, unstable over cached, over absent */
	} rows[] = {
		{ PC_MINCORE_FULL,        "110" },
		{ PC_MINCORE_MAPPED_ONLY, "111" },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct pcm_kernel *k = kernel(rows[i].mode, PC_NOWAIT_CLEAN, PC_CACHESTAT_OPEN);
		struct pcm_task *t = task(k, 0, 0, ALLCAPS);
		struct pcm_file *f = file(k, 0, 0, 0644, 3);
		uint64_t a = map(t, fd_open(t, f, PCM_O_RDONLY), 0, 3, PCM_PROT_READ,
				 PCM_MAP_SHARED);

		OK(pcm_file_cache(f, 1));
		OK(pcm_pte_set(t, a, PCM_PMD_THP));
		OK(pcm_pte_set(t, a + 4096, PCM_PMD_UNSTABLE));
		OK(pcm_pte_set(t, a + 2 * 4096, PCM_PMD_UNSTABLE));
		ck_assert_str_eq(mc(t, a, 3), rows[i].expect);
		OK(pcm_touch(t, a + 2 * 4096, 0));
		ck_assert_str_eq(ptes(t, a, 3), "tut");
		ck_assert_int_eq(pcm_pte_set(t, a, 42), -EINVAL);
		pcm_kernel_free(k);
	}
}
END_TEST

START_TEST(hugetlb_reads_the_huge_pte_only)
{
	struct pcm_kernel *k = kernel(PC_MINCORE_FULL, PC_NOWAIT_DESTRUCTIVE, PC_CACHESTAT_OPEN);
	struct pcm_task *t = task(k, 0, 0, ALLCAPS), *other = task(k, 0, 0, ALLCAPS);
	struct pcm_file *f = file(k, 0, 0, 0644, 2);
	struct pcm_fd *fd, *ofd;
	struct pc_cachestat cs;
	uint64_t a, b;

	OK(pcm_file_set(f, PCM_FILE_HUGETLB, 1));
	fd = fd_open(t, f, PCM_O_RDONLY);
	ofd = fd_open(other, f, PCM_O_RDONLY);
	a = map(t, fd, 0, 2, PCM_PROT_READ, PCM_MAP_SHARED);
	b = map(other, ofd, 0, 2, PCM_PROT_READ, PCM_MAP_SHARED);
	OK(pcm_touch(other, b, 0));
	ck_assert_int_eq(pcm_file_resident(f, 0), 1);
	ck_assert_str_eq(mc(t, a, 2), "00"); /* the page exists, but not in our page table */
	ck_assert_str_eq(mc(other, b, 2), "10");
	ck_assert_str_eq(ptes(other, b, 2), "p-"); /* no fault-around */
	OK(pcm_touch(t, a + 4096, 0));
	ck_assert_str_eq(mc(t, a, 2), "01");
	ck_assert_int_eq(pcm_cachestat(fd, 0, 0, &cs), -EOPNOTSUPP);
	ck_assert_int_eq(pcm_preadv2_nowait(fd, 0), -EOPNOTSUPP);
	pcm_kernel_free(k);
}
END_TEST

START_TEST(shmem_swap_entries_read_the_swap_cache)
{
	struct pcm_kernel *k = kernel(PC_MINCORE_FULL, PC_NOWAIT_DESTRUCTIVE, PC_CACHESTAT_OPEN);
	struct pcm_task *t = task(k, 0, 0, ALLCAPS);
	struct pcm_file *f = file(k, 0, 0, 0600, 4);
	struct pcm_file *disk = file(k, 0, 0, 0600, 1);
	struct pcm_fd *fd;
	struct pc_cachestat cs;
	uint64_t a;

	OK(pcm_file_set(f, PCM_FILE_SHMEM, 1));
	fd = fd_open(t, f, PCM_O_RDWR);
	ck_assert_int_eq(pcm_pwrite(fd, 0, 3), 3);
	OK(pcm_file_swap_out(f, 1, 0));
	OK(pcm_file_swap_out(f, 2, 1));
	ck_assert_int_eq(pcm_file_swap_out(f, 3, 0), -ENOENT);
	ck_assert_int_eq(pcm_file_swap_out(disk, 0, 0), -EINVAL);
	a = map(t, fd, 0, 4, PCM_PROT_READ, PCM_MAP_SHARED);
	ck_assert_str_eq(mc(t, a, 4), "1010");
	ck_assert_str_eq(truth(f, 0, 4), "1010");
	OK(pcm_cachestat(fd, 0, 0, &cs));
	ck_assert_uint_eq(cs.cache, 1);
	ck_assert_uint_eq(cs.evicted, 2);
	/* a read fault swaps in; no read-around on tmpfs */
	OK(pcm_touch(t, a + 4096, 0));
	ck_assert_str_eq(truth(f, 0, 4), "1110");
	/* a read of a hole does not fill it; a fault does */
	ck_assert_int_eq(pcm_pread(fd, 3, 1), 1);
	ck_assert_int_eq(pcm_file_page_state(f, 3), 0);
	OK(pcm_touch(t, a + 3 * 4096, 0));
	ck_assert_str_eq(truth(f, 0, 4), "1111");
	pcm_kernel_free(k);
}
END_TEST

/* ---- faults ----------------------------------------------------------------------------- */

START_TEST(touch_faults_where_a_real_access_would)
{
	struct pcm_kernel *k = kernel_618();
	struct pcm_task *t = task(k, 0, 0, ALLCAPS);
	struct pcm_file *f = file(k, 0, 0, 0644, 2);
	struct pcm_fd *fd = fd_open(t, f, PCM_O_RDONLY);
	uint64_t none = map(t, fd, 0, 2, PCM_PROT_NONE, PCM_MAP_SHARED);
	uint64_t ro = map(t, fd, 0, 4, PCM_PROT_READ, PCM_MAP_SHARED);

	ck_assert_int_eq(pcm_touch(t, 0x1000, 0), -EFAULT);
	ck_assert_int_eq(pcm_touch(t, none, 0), -EFAULT);
	ck_assert_int_eq(pcm_touch(t, ro, 1), -EFAULT);
	ck_assert_int_eq(pcm_touch(t, ro + 2 * 4096, 0), -EFAULT); /* SIGBUS past EOF */
	ck_assert_str_eq(truth(f, 0, 2), "00");
	OK(pcm_touch(t, ro + 4096 + 123, 0));
	ck_assert_str_eq(truth(f, 0, 2), "11");
	/* mincore still answers for a PROT_NONE mapping (root passes the gate) */
	ck_assert_str_eq(mc(t, none, 2), "11");
	ck_assert_str_eq(ptes(t, none, 2), "--");
	pcm_kernel_free(k);
}
END_TEST

START_TEST(read_fault_reads_around_the_page)
{
	struct pcm_kernel *k = kernel_618();
	struct pcm_task *t = task(k, 0, 0, ALLCAPS);
	struct pcm_file *f = file(k, 0, 0, 0644, 128);
	uint64_t a = map(t, fd_open(t, f, PCM_O_RDONLY), 0, 128, PCM_PROT_READ, PCM_MAP_SHARED);

	OK(pcm_touch(t, a + 64 * 4096, 0));
	for (uint64_t p = 0; p < 128; p++)
		ck_assert_int_eq(pcm_file_resident(f, p), p >= 48 && p < 80);
	/* the retry after the read maps the fault-around block it filled */
	for (uint64_t p = 0; p < 128; p++)
		ck_assert_int_eq(pcm_pte_get(t, a + p * 4096),
				 p >= 64 && p < 80 ? PCM_PTE_PRESENT : 0);
	pcm_kernel_free(k);
}
END_TEST

START_TEST(read_around_is_clamped_to_start_and_eof)
{
	struct pcm_kernel *k = kernel_618();
	struct pcm_task *t = task(k, 0, 0, ALLCAPS);
	struct pcm_file *f = file(k, 0, 0, 0644, 40);
	struct pcm_file *g = file(k, 0, 0, 0644, 40);
	uint64_t a = map(t, fd_open(t, f, PCM_O_RDONLY), 0, 40, PCM_PROT_READ, PCM_MAP_SHARED);
	uint64_t b = map(t, fd_open(t, g, PCM_O_RDONLY), 0, 40, PCM_PROT_READ, PCM_MAP_SHARED);

	OK(pcm_touch(t, a + 3 * 4096, 0));
	for (uint64_t p = 0; p < 40; p++)
		ck_assert_int_eq(pcm_file_resident(f, p), p < 32);
	OK(pcm_touch(t, b + 38 * 4096, 0));
	for (uint64_t p = 0; p < 40; p++)
		ck_assert_int_eq(pcm_file_resident(g, p), p >= 22);
	pcm_kernel_free(k);
}
END_TEST

/* Seen on 6.18 (test-differential): the fault path ignores the fd's
 * FADV_RANDOM, which only pread() and RWF_NOWAIT readahead honour. */
START_TEST(read_around_ignores_fadv_random)
{
	struct pcm_kernel *k = kernel_618();
	struct pcm_task *t = task(k, 0, 0, ALLCAPS);
	struct pcm_file *f = file(k, 0, 0, 0644, 64);
	struct pcm_fd *fd = fd_open(t, f, PCM_O_RDONLY);
	uint64_t a = map(t, fd, 0, 64, PCM_PROT_READ, PCM_MAP_SHARED);

	OK(pcm_fadvise(fd, 0, 0, PCM_FADV_RANDOM));
	OK(pcm_touch(t, a + 20 * 4096, 0));
	for (uint64_t p = 0; p < 64; p++)
		ck_assert_int_eq(pcm_file_resident(f, p), p >= 4 && p < 36);
	/* pread through the same fd does honour it */
	ck_assert_int_eq(pcm_pread(fd, 50, 1), 1);
	for (uint64_t p = 36; p < 64; p++)
		ck_assert_int_eq(pcm_file_resident(f, p), p == 50);
	pcm_kernel_free(k);
}
END_TEST

START_TEST(read_around_follows_the_readahead_tunable)
{
	struct pcm_kernel *k = kernel_618();
	struct pcm_task *t;
	struct pcm_file *f, *g;
	uint64_t a, b;

	OK(pcm_kernel_tune(k, PCM_TUNE_READAHEAD_PAGES, 8));
	t = task(k, 0, 0, ALLCAPS);
	f = file(k, 0, 0, 0644, 64);
	g = file(k, 0, 0, 0644, 64);
	a = map(t, fd_open(t, f, PCM_O_RDONLY), 0, 64, PCM_PROT_READ, PCM_MAP_SHARED);
	OK(pcm_touch(t, a + 20 * 4096, 0));
	for (uint64_t p = 0; p < 64; p++)
		ck_assert_int_eq(pcm_file_resident(f, p), p >= 16 && p < 24);
	OK(pcm_kernel_tune(k, PCM_TUNE_READAHEAD_PAGES, 0));
	b = map(t, fd_open(t, g, PCM_O_RDONLY), 0, 64, PCM_PROT_READ, PCM_MAP_SHARED);
	OK(pcm_touch(t, b + 20 * 4096, 0));
	for (uint64_t p = 0; p < 64; p++)
		ck_assert_int_eq(pcm_file_resident(g, p), p == 20);
	pcm_kernel_free(k);
}
END_TEST

START_TEST(fault_around_maps_cached_neighbours_in_the_block)
{
	struct pcm_kernel *k = kernel_618();
	struct pcm_task *t = task(k, 0, 0, ALLCAPS);
	struct pcm_file *f = file(k, 0, 0, 0644, 64);
	uint64_t a = map(t, fd_open(t, f, PCM_O_RDONLY), 0, 64, PCM_PROT_READ, PCM_MAP_SHARED);

	for (uint64_t p = 0; p < 64; p++)
		if (p != 20)
			OK(pcm_file_cache(f, p));
	OK(pcm_touch(t, a + 18 * 4096, 0));
	ck_assert_str_eq(ptes(t, a + 16 * 4096, 16), "pppp-ppppppppppp");
	ck_assert_str_eq(ptes(t, a, 16), "----------------");
	ck_assert_str_eq(ptes(t, a + 32 * 4096, 16), "----------------");
	ck_assert_int_eq(pcm_file_resident(f, 20), 0); /* fault-around reads nothing */
	pcm_kernel_free(k);
}
END_TEST

/* Seen on 6.18 (test-differential): after a fault that read, the whole
 * fault-around block is mapped, not only what was cached before it. */
START_TEST(fault_around_runs_again_after_read_around)
{
	struct pcm_kernel *k = kernel_618();
	struct pcm_task *t = task(k, 0, 0, ALLCAPS);
	struct pcm_file *f = file(k, 0, 0, 0644, 64);
	struct pcm_fd *fd = fd_open(t, f, PCM_O_RDONLY);
	uint64_t a = map(t, fd, 0, 64, PCM_PROT_READ, PCM_MAP_SHARED);
	uint64_t b = map(t, fd, 0, 64, PCM_PROT_READ, PCM_MAP_SHARED);

	OK(pcm_file_cache(f, 2));
	OK(pcm_touch(t, a + 5 * 4096, 0));
	ck_assert_str_eq(ptes(t, a, 16), "pppppppppppppppp");
	ck_assert_str_eq(ptes(t, a + 16 * 4096, 16), "----------------");
	for (uint64_t p = 0; p < 64; p++)
		ck_assert_int_eq(pcm_file_resident(f, p), p < 32);
	/* without read-around, both rounds show: page 2 was mapped before */
	OK(pcm_kernel_tune(k, PCM_TUNE_READAHEAD_PAGES, 0));
	OK(pcm_touch(t, b + 40 * 4096, 0));
	ck_assert_str_eq(ptes(t, b + 32 * 4096, 16), "--------p-------");
	OK(pcm_file_cache(f, 50));
	OK(pcm_touch(t, b + 53 * 4096, 0));
	ck_assert_str_eq(ptes(t, b + 48 * 4096, 16), "--p--p----------");
	pcm_kernel_free(k);
}
END_TEST

START_TEST(fault_around_is_clamped_to_the_vma_and_eof)
{
	struct pcm_kernel *k = kernel_618();
	struct pcm_task *t = task(k, 0, 0, ALLCAPS);
	struct pcm_file *f = file(k, 0, 0, 0644, 12);
	struct pcm_fd *fd = fd_open(t, f, PCM_O_RDONLY);
	uint64_t a = map(t, fd, 4, 6, PCM_PROT_READ, PCM_MAP_SHARED);
	uint64_t b = map(t, fd, 0, 16, PCM_PROT_READ, PCM_MAP_SHARED);

	for (uint64_t p = 0; p < 12; p++)
		OK(pcm_file_cache(f, p));
	OK(pcm_touch(t, a + 2 * 4096, 0));
	ck_assert_str_eq(ptes(t, a, 6), "pppppp");
	OK(pcm_touch(t, b, 0));
	ck_assert_str_eq(ptes(t, b, 16), "pppppppppppp----");
	pcm_kernel_free(k);
}
END_TEST

START_TEST(fault_around_follows_its_tunable)
{
	struct pcm_kernel *k = kernel_618();
	struct pcm_task *t = task(k, 0, 0, ALLCAPS);
	struct pcm_file *f = file(k, 0, 0, 0644, 16);
	struct pcm_fd *fd = fd_open(t, f, PCM_O_RDONLY);
	uint64_t a = map(t, fd, 0, 16, PCM_PROT_READ, PCM_MAP_SHARED);
	uint64_t b = map(t, fd, 0, 16, PCM_PROT_READ, PCM_MAP_SHARED);

	for (uint64_t p = 0; p < 16; p++)
		OK(pcm_file_cache(f, p));
	OK(pcm_kernel_tune(k, PCM_TUNE_FAULT_AROUND_PAGES, 1));
	OK(pcm_touch(t, a + 5 * 4096, 0));
	ck_assert_str_eq(ptes(t, a, 16), "-----p----------");
	OK(pcm_kernel_tune(k, PCM_TUNE_FAULT_AROUND_PAGES, 4));
	OK(pcm_touch(t, b + 5 * 4096, 0));
	ck_assert_str_eq(ptes(t, b, 16), "----pppp--------");
	pcm_kernel_free(k);
}
END_TEST

START_TEST(write_faults_do_not_fault_around)
{
	struct pcm_kernel *k = kernel_618();
	struct pcm_task *t = task(k, 0, 0, ALLCAPS);
	struct pcm_file *f = file(k, 0, 0, 0644, 16);
	struct pcm_fd *fd = fd_open(t, f, PCM_O_RDWR);
	uint64_t a = map(t, fd, 0, 16, PCM_PROT_READ | PCM_PROT_WRITE, PCM_MAP_SHARED);

	for (uint64_t p = 0; p < 16; p++)
		OK(pcm_file_cache(f, p));
	OK(pcm_touch(t, a + 5 * 4096, 1));
	ck_assert_str_eq(ptes(t, a, 16), "-----p----------");
	pcm_kernel_free(k);
}
END_TEST

START_TEST(page_sizes_16k_and_64k)
{
	static const uint64_t sizes[] = { 16384, 65536 };

	for (size_t i = 0; i < 2; i++) {
		uint64_t ps = sizes[i];
		struct pcm_kernel *k = kernel_618();
		struct pcm_task *t;
		struct pcm_file *f;
		unsigned char vec[3];
		uint64_t a;

		OK(pcm_kernel_tune(k, PCM_TUNE_PAGE_SIZE, ps));
		t = task(k, 0, 0, ALLCAPS);
		f = file(k, 0, 0, 0644, 64);
		ck_assert_uint_eq(pcm_file_size(f), 64 * ps);
		a = map(t, fd_open(t, f, PCM_O_RDONLY), 0, 64, PCM_PROT_READ, PCM_MAP_SHARED);
		ck_assert_uint_eq(a % ps, 0);
		ck_assert_int_eq(pcm_mincore(t, a + 4096, ps, vec), -EINVAL);
		/* read-around and fault-around count pages, whatever their size */
		OK(pcm_file_cache(f, 33));
		OK(pcm_touch(t, a + 40 * ps + 4096, 0));
		for (uint64_t p = 0; p < 64; p++)
			ck_assert_int_eq(pcm_file_resident(f, p), p >= 24 && p < 56);
		ck_assert_str_eq(ptes(t, a + 32 * ps, 16), "pppppppppppppppp");
		ck_assert_str_eq(ptes(t, a + 48 * ps, 16), "----------------");
		/* a byte past a page boundary asks for one more page */
		memset(vec, 7, sizeof(vec));
		OK(pcm_mincore(t, a + 39 * ps, ps + 1, vec));
		ck_assert_int_eq(vec[0], 1);
		ck_assert_int_eq(vec[1], 1);
		ck_assert_int_eq(vec[2], 7);
		ck_assert_int_eq(pcm_munmap(t, a + 4096, ps), -EINVAL);
		OK(pcm_munmap(t, a + ps, 1)); /* rounds up to one page */
		ck_assert_int_eq(pcm_pte_get(t, a + ps), -EFAULT);
		ck_assert_int_eq(pcm_pte_get(t, a + 2 * ps), 0);
		pcm_kernel_free(k);
	}
}
END_TEST

START_TEST(write_fault_on_shared_mapping_dirties_the_page)
{
	struct pcm_kernel *k = kernel_618();
	struct pcm_task *t = task(k, 0, 0, ALLCAPS);
	struct pcm_file *f = file(k, 0, 0, 0644, 4);
	struct pcm_fd *fd = fd_open(t, f, PCM_O_RDWR);
	uint64_t a = map(t, fd, 0, 4, PCM_PROT_READ | PCM_PROT_WRITE, PCM_MAP_SHARED);
	struct pc_cachestat cs;

	OK(pcm_fadvise(fd, 0, 0, PCM_FADV_RANDOM));
	OK(pcm_touch(t, a + 4096, 1));
	ck_assert_int_eq(pcm_file_page_state(f, 1),
			 PCM_PAGE_PRESENT | PCM_PAGE_UPTODATE | PCM_PAGE_DIRTY);
	ck_assert_str_eq(ptes(t, a, 4), "-p--");
	OK(pcm_touch(t, a + 2 * 4096, 0));
	ck_assert_int_eq(pcm_file_page_state(f, 2), PCM_PAGE_PRESENT | PCM_PAGE_UPTODATE);
	OK(pcm_touch(t, a + 2 * 4096, 1)); /* a present page gets dirty */
	OK(pcm_cachestat(fd, 0, 0, &cs));
	ck_assert_uint_eq(cs.dirty, 2);
	OK(pcm_fsync(fd));
	OK(pcm_cachestat(fd, 0, 0, &cs));
	ck_assert_uint_eq(cs.dirty, 0);
	pcm_kernel_free(k);
}
END_TEST

START_TEST(write_fault_on_private_mapping_copies)
{
	struct pcm_kernel *k = kernel_618();
	struct pcm_task *t = task(k, 0, 0, ALLCAPS);
	struct pcm_file *f = file(k, 0, 0, 0644, 4);
	struct pcm_fd *fd = fd_open(t, f, PCM_O_RDONLY);
	uint64_t a = map(t, fd, 0, 4, PCM_PROT_READ | PCM_PROT_WRITE, PCM_MAP_PRIVATE);

	OK(pcm_kernel_tune(k, PCM_TUNE_READAHEAD_PAGES, 0)); /* each fault reads its page */
	OK(pcm_touch(t, a, 1));
	OK(pcm_touch(t, a + 4096, 0));
	OK(pcm_touch(t, a + 4096, 1));
	ck_assert_str_eq(ptes(t, a, 4), "aa--");
	ck_assert_int_eq(pcm_file_page_state(f, 0), PCM_PAGE_PRESENT | PCM_PAGE_UPTODATE);
	ck_assert_int_eq(pcm_file_page_state(f, 1), PCM_PAGE_PRESENT | PCM_PAGE_UPTODATE);
	/* the copies do not hold the file pages: DONTNEED drops them, mincore still says 1 */
	OK(pcm_fadvise(fd, 0, 0, PCM_FADV_DONTNEED));
	ck_assert_str_eq(truth(f, 0, 4), "0000");
	ck_assert_str_eq(mc(t, a, 4), "1100");
	pcm_kernel_free(k);
}
END_TEST

START_TEST(mmap_checks_the_fd)
{
	struct pcm_kernel *k = kernel_618();
	struct pcm_task *t = task(k, 0, 0, ALLCAPS), *u = task(k, 0, 0, ALLCAPS);
	struct pcm_file *f = file(k, 0, 0, 0644, 4);
	struct pcm_fd *fd = fd_open(t, f, PCM_O_RDONLY);
	uint64_t a;

	ck_assert_int_eq(pcm_mmap(t, fd, 0, 1, PCM_PROT_WRITE, PCM_MAP_SHARED, &a), -EACCES);
	OK(pcm_mmap(t, fd, 0, 1, PCM_PROT_WRITE, PCM_MAP_PRIVATE, &a));
	ck_assert_int_eq(pcm_mmap(u, fd, 0, 1, PCM_PROT_READ, PCM_MAP_SHARED, &a), -EBADF);
	ck_assert_int_eq(pcm_mmap(t, fd, 0, 0, PCM_PROT_READ, PCM_MAP_SHARED, &a), -EINVAL);
	ck_assert_int_eq(pcm_mmap(t, fd, 0, 1, PCM_PROT_READ, 3, &a), -EINVAL);
	ck_assert_int_eq(pcm_mmap(t, fd, 0, 1, 4, PCM_MAP_SHARED, &a), -EINVAL);
	a = 123;
	ck_assert_int_eq(pcm_mmap(t, fd, 0, 1, PCM_PROT_READ, PCM_MAP_SHARED | PCM_MAP_FIXED, &a),
			 -EINVAL);
	/* a mapping outlives its fd */
	a = map(t, fd, 0, 4, PCM_PROT_READ, PCM_MAP_SHARED);
	pcm_close(fd);
	OK(pcm_touch(t, a, 0));
	ck_assert_str_eq(mc(t, a, 4), "1111");
	pcm_kernel_free(k);
}
END_TEST

START_TEST(munmap_splits_mappings)
{
	struct pcm_kernel *k = kernel(PC_MINCORE_MAPPED_ONLY, PC_NOWAIT_CLEAN, PC_CACHESTAT_OPEN);
	struct pcm_task *t = task(k, 0, 0, ALLCAPS);
	struct pcm_file *f = file(k, 0, 0, 0644, 8);
	struct pcm_fd *fd = fd_open(t, f, PCM_O_RDONLY);
	uint64_t a = map(t, fd, 0, 8, PCM_PROT_READ, PCM_MAP_SHARED);
	unsigned char vec[8];

	OK(pcm_kernel_tune(k, PCM_TUNE_FAULT_AROUND_PAGES, 1));
	OK(pcm_fadvise(fd, 0, 0, PCM_FADV_RANDOM));
	OK(pcm_touch(t, a, 0));
	for (uint64_t p = 1; p < 8; p += 2)
		OK(pcm_touch(t, a + p * 4096, 0));
	ck_assert_str_eq(mc(t, a, 8), "11010101");
	OK(pcm_munmap(t, a + 3 * 4096, 2 * 4096));
	memset(vec, 7, sizeof(vec));
	ck_assert_int_eq(pcm_mincore(t, a, 8 * 4096, vec), -ENOMEM);
	ck_assert_int_eq(vec[2], 0);
	ck_assert_int_eq(vec[3], 7);
	/* the tail keeps its page tables and its file offset */
	ck_assert_str_eq(mc(t, a + 5 * 4096, 3), "101");
	OK(pcm_touch(t, a + 6 * 4096, 0));
	ck_assert_str_eq(mc(t, a + 5 * 4096, 3), "111");
	/* unmapping the head and a hole is fine */
	OK(pcm_munmap(t, a - 4096, 2 * 4096));
	ck_assert_int_eq(pcm_pte_get(t, a), -EFAULT);
	ck_assert_str_eq(mc(t, a + 4096, 2), "10");
	ck_assert_int_eq(pcm_munmap(t, a + 1, 4096), -EINVAL);
	ck_assert_int_eq(pcm_munmap(t, a, 0), -EINVAL);
	pcm_kernel_free(k);
}
END_TEST

START_TEST(map_fixed_replaces_what_was_there)
{
	struct pcm_kernel *k = kernel_618();
	struct pcm_task *t = task(k, 0, 0, ALLCAPS);
	struct pcm_file *f = file(k, 0, 0, 0644, 4);
	uint64_t a = map(t, NULL, 0, 4, PCM_PROT_READ | PCM_PROT_WRITE, PCM_MAP_PRIVATE);
	uint64_t b = a + 4096;

	for (uint64_t p = 0; p < 4; p++)
		OK(pcm_touch(t, a + p * 4096, 1));
	OK(pcm_mmap(t, fd_open(t, f, PCM_O_RDONLY), 0, 2, PCM_PROT_READ,
		    PCM_MAP_SHARED | PCM_MAP_FIXED, &b));
	ck_assert_str_eq(ptes(t, a, 4), "a--a");
	ck_assert_str_eq(mc(t, a, 4), "1001");
	pcm_kernel_free(k);
}
END_TEST

/* ---- RWF_NOWAIT ------------------------------------------------------------------------- */

START_TEST(nowait_unsupported_kernel_and_tmpfs_answer_eopnotsupp)
{
	struct pcm_kernel *k = kernel(PC_MINCORE_FULL, PC_NOWAIT_UNSUPPORTED, PC_CACHESTAT_OPEN);
	struct pcm_kernel *d = kernel(PC_MINCORE_FULL, PC_NOWAIT_DESTRUCTIVE, PC_CACHESTAT_OPEN);
	struct pcm_task *t = task(k, 0, 0, ALLCAPS), *u = task(d, 0, 0, ALLCAPS);
	struct pcm_file *f = file(k, 0, 0, 0644, 2), *shm = file(d, 0, 0, 0644, 2);

	OK(pcm_file_cache(f, 0));
	ck_assert_int_eq(pcm_preadv2_nowait(fd_open(t, f, PCM_O_RDONLY), 0), -EOPNOTSUPP);
	OK(pcm_file_set(shm, PCM_FILE_SHMEM, 1));
	ck_assert_int_eq(pcm_preadv2_nowait(fd_open(u, shm, PCM_O_RDONLY), 5), -EOPNOTSUPP);
	pcm_kernel_free(k);
	pcm_kernel_free(d);
}
END_TEST

START_TEST(nowait_hit_eof_and_clean_miss)
{
	struct pcm_kernel *k = kernel(PC_MINCORE_FULL, PC_NOWAIT_CLEAN, PC_CACHESTAT_OPEN);
	struct pcm_task *t = task(k, 0, 0, ALLCAPS);
	struct pcm_file *f = file(k, 0, 0, 0644, 8);
	struct pcm_fd *fd = fd_open(t, f, PCM_O_RDONLY);

	OK(pcm_file_cache(f, 5));
	ck_assert_int_eq(pcm_preadv2_nowait(fd, 5), 1);
	ck_assert_int_eq(pcm_preadv2_nowait(fd, 8), 0);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(pcm_preadv2_nowait(fd, 0), -EAGAIN);
		ck_assert_int_eq(pcm_preadv2_nowait(fd, 3), -EAGAIN);
	}
	ck_assert_str_eq(truth(f, 0, 8), "00000100");
	pcm_kernel_free(k);
}
END_TEST

START_TEST(nowait_destructive_miss_reads_the_page)
{
	struct pcm_kernel *k = kernel_618();
	struct pcm_task *t = task(k, 0, 0, ALLCAPS);
	struct pcm_file *f = file(k, 0, 0, 0644, 16);
	struct pcm_fd *fd = fd_open(t, f, PCM_O_RDONLY);

	ck_assert_int_eq(pcm_preadv2_nowait(fd, 10), -EAGAIN);
	ck_assert_str_eq(truth(f, 0, 16), "0000000000100000");
	ck_assert_int_eq(pcm_preadv2_nowait(fd, 10), 1);
	/* not fresh any more: page 0 alone */
	ck_assert_int_eq(pcm_preadv2_nowait(fd, 0), -EAGAIN);
	ck_assert_str_eq(truth(f, 0, 16), "1000000000100000");
	/* a pending read is a miss and stays pending */
	OK(pcm_file_read_pending(f, 12));
	ck_assert_int_eq(pcm_preadv2_nowait(fd, 12), -EAGAIN);
	ck_assert_int_eq(pcm_file_page_state(f, 12), PCM_PAGE_PRESENT);
	pcm_kernel_free(k);
}
END_TEST

START_TEST(nowait_destructive_initial_window_at_page_0_of_a_fresh_fd)
{
	struct pcm_kernel *k = kernel_618();
	struct pcm_task *t = task(k, 0, 0, ALLCAPS);
	struct pcm_file *f = file(k, 0, 0, 0644, 16), *g = file(k, 0, 0, 0644, 2);

	ck_assert_int_eq(pcm_preadv2_nowait(fd_open(t, f, PCM_O_RDONLY), 0), -EAGAIN);
	ck_assert_str_eq(truth(f, 0, 16), "1111000000000000");
	ck_assert_int_eq(pcm_preadv2_nowait(fd_open(t, g, PCM_O_RDONLY), 0), -EAGAIN);
	ck_assert_str_eq(truth(g, 0, 2), "11"); /* clamped to EOF */
	pcm_kernel_free(k);
}
END_TEST

START_TEST(nowait_destructive_under_fadv_random_reads_one_page)
{
	struct pcm_kernel *k = kernel_618();
	struct pcm_task *t = task(k, 0, 0, ALLCAPS);
	struct pcm_file *f = file(k, 0, 0, 0644, 16);
	struct pcm_fd *fd = fd_open(t, f, PCM_O_RDONLY);

	OK(pcm_fadvise(fd, 0, 0, PCM_FADV_RANDOM));
	ck_assert_int_eq(pcm_preadv2_nowait(fd, 0), -EAGAIN);
	ck_assert_str_eq(truth(f, 0, 16), "1000000000000000");
	pcm_kernel_free(k);
}
END_TEST

/* ---- pread and readahead -------------------------------------------------------------- */

START_TEST(pread_initial_window_at_page_0_of_a_fresh_fd)
{
	static const struct {
		uint64_t req, expect;
	} rows[] = { { 1, 4 }, { 2, 4 }, { 3, 8 }, { 8, 16 }, { 16, 32 }, { 64, 64 } };

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct pcm_kernel *k = kernel_618();
		struct pcm_task *t = task(k, 0, 0, ALLCAPS);
		struct pcm_file *f = file(k, 0, 0, 0644, 128);

		ck_assert_int_eq(pcm_pread(fd_open(t, f, PCM_O_RDONLY), 0, rows[i].req),
				 (int)rows[i].req);
		for (uint64_t p = 0; p < 128; p++)
			ck_assert_int_eq(pcm_file_resident(f, p), p < rows[i].expect);
		pcm_kernel_free(k);
	}
}
END_TEST

START_TEST(pread_sequential_reads_ramp_up)
{
	static const struct {
		uint64_t page, cached_to;
	} steps[] = { { 0, 4 }, { 1, 4 }, { 2, 4 }, { 3, 4 }, { 4, 12 }, { 5, 12 } };
	struct pcm_kernel *k = kernel_618();
	struct pcm_task *t = task(k, 0, 0, ALLCAPS);
	struct pcm_file *f = file(k, 0, 0, 0644, 200);
	struct pcm_fd *fd = fd_open(t, f, PCM_O_RDONLY);
	uint64_t page;

	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		ck_assert_int_eq(pcm_pread(fd, steps[i].page, 1), 1);
		for (uint64_t p = 0; p < 200; p++)
			ck_assert_int_eq(pcm_file_resident(f, p), p < steps[i].cached_to);
	}
	for (page = 6; page < 12; page++)
		ck_assert_int_eq(pcm_pread(fd, page, 1), 1);
	ck_assert_int_eq(pcm_pread(fd, 12, 1), 1); /* window 16 */
	ck_assert_int_eq(pcm_file_resident(f, 27), 1);
	ck_assert_int_eq(pcm_file_resident(f, 28), 0);
	ck_assert_int_eq(pcm_pread(fd, 13, 15), 15);
	ck_assert_int_eq(pcm_pread(fd, 28, 1), 1); /* window 32 = max */
	ck_assert_int_eq(pcm_file_resident(f, 59), 1);
	ck_assert_int_eq(pcm_file_resident(f, 60), 0);
	ck_assert_int_eq(pcm_pread(fd, 29, 31), 31);
	ck_assert_int_eq(pcm_pread(fd, 60, 1), 1); /* stays at max */
	ck_assert_int_eq(pcm_file_resident(f, 91), 1);
	ck_assert_int_eq(pcm_file_resident(f, 92), 0);
	pcm_kernel_free(k);
}
END_TEST

START_TEST(pread_random_miss_reads_just_the_pages)
{
	struct pcm_kernel *k = kernel_618();
	struct pcm_task *t = task(k, 0, 0, ALLCAPS);
	struct pcm_file *f = file(k, 0, 0, 0644, 100);
	struct pcm_fd *fd = fd_open(t, f, PCM_O_RDONLY);

	ck_assert_int_eq(pcm_pread(fd, 50, 1), 1);
	ck_assert_int_eq(pcm_pread(fd, 70, 2), 2);
	for (uint64_t p = 0; p < 100; p++)
		ck_assert_int_eq(pcm_file_resident(f, p), p == 50 || p == 70 || p == 71);
	/* continuing where the last read ended starts a new stream */
	ck_assert_int_eq(pcm_pread(fd, 72, 1), 1);
	for (uint64_t p = 72; p < 100; p++)
		ck_assert_int_eq(pcm_file_resident(f, p), p < 76);
	pcm_kernel_free(k);
}
END_TEST

START_TEST(pread_under_fadv_random_reads_exactly_the_pages)
{
	struct pcm_kernel *k = kernel_618();
	struct pcm_task *t = task(k, 0, 0, ALLCAPS);
	struct pcm_file *f = file(k, 0, 0, 0644, 20);
	struct pcm_fd *fd = fd_open(t, f, PCM_O_RDONLY);

	OK(pcm_fadvise(fd, 0, 0, PCM_FADV_RANDOM));
	ck_assert_int_eq(pcm_pread(fd, 0, 1), 1);
	ck_assert_int_eq(pcm_pread(fd, 1, 2), 2);
	ck_assert_int_eq(pcm_pread(fd, 10, 1), 1);
	ck_assert_str_eq(truth(f, 0, 20), "11100000001000000000");
	pcm_kernel_free(k);
}
END_TEST

START_TEST(pread_is_short_at_eof)
{
	struct pcm_kernel *k = kernel_618();
	struct pcm_task *t = task(k, 0, 0, ALLCAPS);
	struct pcm_file *f = file(k, 0, 0, 0644, 5);
	struct pcm_fd *fd = fd_open(t, f, PCM_O_RDONLY);

	ck_assert_int_eq(pcm_pread(fd, 3, 10), 2);
	ck_assert_int_eq(pcm_pread(fd, 5, 1), 0);
	ck_assert_int_eq(pcm_pread(fd, 0, 0), 0);
	ck_assert_str_eq(truth(f, 0, 5), "00011");
	pcm_kernel_free(k);
}
END_TEST

START_TEST(pwrite_needs_a_writable_fd_and_extends_the_file)
{
	struct pcm_kernel *k = kernel_618();
	struct pcm_task *t = task(k, 0, 0, ALLCAPS);
	struct pcm_file *f = file(k, 0, 0, 0644, 2);

	ck_assert_int_eq(pcm_pwrite(fd_open(t, f, PCM_O_RDONLY), 0, 1), -EBADF);
	ck_assert_int_eq(pcm_pwrite(fd_open(t, f, PCM_O_RDWR), 3, 2), 2);
	ck_assert_uint_eq(pcm_file_npages(f), 5);
	ck_assert_uint_eq(pcm_file_size(f), 5 * 4096);
	ck_assert_str_eq(truth(f, 0, 5), "00011");
	ck_assert_int_eq(pcm_file_page_state(f, 4),
			 PCM_PAGE_PRESENT | PCM_PAGE_UPTODATE | PCM_PAGE_DIRTY);
	pcm_kernel_free(k);
}
END_TEST

/* ---- fadvise ---------------------------------------------------------------------------- */

START_TEST(fadvise_willneed_reads_the_range)
{
	struct pcm_kernel *k = kernel_618();
	struct pcm_task *t = task(k, 0, 0, ALLCAPS);
	struct pcm_file *f = file(k, 0, 0, 0644, 10);
	struct pcm_fd *fd = fd_open(t, f, PCM_O_RDONLY);

	OK(pcm_fadvise(fd, 2, 3, PCM_FADV_WILLNEED));
	ck_assert_str_eq(truth(f, 0, 10), "0011100000");
	OK(pcm_fadvise(fd, 8, 0, PCM_FADV_WILLNEED));
	ck_assert_str_eq(truth(f, 0, 10), "0011100011");
	ck_assert_int_eq(pcm_fadvise(fd, 0, 0, 2), -EINVAL);
	pcm_kernel_free(k);
}
END_TEST

START_TEST(fadvise_dontneed_skips_mapped_and_dirty_pages_and_leaves_no_shadow)
{
	struct pcm_kernel *k = kernel_618();
	struct pcm_task *t = task(k, 0, 0, ALLCAPS), *other = task(k, 0, 0, ALLCAPS);
	struct pcm_file *f = file(k, 0, 0, 0644, 6);
	struct pcm_fd *fd = fd_open(t, f, PCM_O_RDWR);
	uint64_t a = map(other, fd_open(other, f, PCM_O_RDONLY), 0, 6, PCM_PROT_READ,
			 PCM_MAP_SHARED);
	struct pc_cachestat cs;

	OK(pcm_kernel_tune(k, PCM_TUNE_FAULT_AROUND_PAGES, 1));
	cache_pages(f, "111111");
	OK(pcm_touch(other, a + 1 * 4096, 0));
	ck_assert_int_eq(pcm_pwrite(fd, 2, 1), 1);
	OK(pcm_file_read_pending(f, 3));
	OK(pcm_fadvise(fd, 0, 0, PCM_FADV_DONTNEED));
	ck_assert_str_eq(truth(f, 0, 6), "011000");
	ck_assert_int_eq(pcm_file_page_state(f, 3), PCM_PAGE_PRESENT);
	OK(pcm_cachestat(fd, 0, 0, &cs));
	ck_assert_uint_eq(cs.evicted, 0);
	pcm_kernel_free(k);
}
END_TEST

START_TEST(fadvise_does_nothing_on_tmpfs)
{
	struct pcm_kernel *k = kernel_618();
	struct pcm_task *t = task(k, 0, 0, ALLCAPS);
	struct pcm_file *f = file(k, 0, 0, 0644, 4);
	struct pcm_fd *fd;

	OK(pcm_file_set(f, PCM_FILE_SHMEM, 1));
	fd = fd_open(t, f, PCM_O_RDWR);
	ck_assert_int_eq(pcm_pwrite(fd, 0, 2), 2);
	OK(pcm_fsync(fd));
	OK(pcm_fadvise(fd, 0, 0, PCM_FADV_DONTNEED));
	OK(pcm_fadvise(fd, 0, 0, PCM_FADV_WILLNEED));
	ck_assert_str_eq(truth(f, 0, 4), "1100");
	ck_assert_int_eq(pcm_file_page_state(f, 0) & PCM_PAGE_DIRTY, PCM_PAGE_DIRTY);
	pcm_kernel_free(k);
}
END_TEST

/* ---- cachestat -------------------------------------------------------------------------- */

/* Seen on 6.18 (test-differential): a memfd with written pages reports dirty 0. */
START_TEST(cachestat_counts_no_dirty_pages_on_tmpfs)
{
	struct pcm_kernel *k = kernel_618();
	struct pcm_task *t = task(k, 0, 0, ALLCAPS);
	struct pcm_file *f = file(k, 0, 0, 0644, 4);
	struct pcm_fd *fd;
	struct pc_cachestat cs;

	OK(pcm_file_set(f, PCM_FILE_SHMEM, 1));
	fd = fd_open(t, f, PCM_O_RDWR);
	ck_assert_int_eq(pcm_pwrite(fd, 1, 2), 2);
	OK(pcm_cachestat(fd, 0, 0, &cs));
	ck_assert_uint_eq(cs.cache, 2);
	ck_assert_uint_eq(cs.dirty, 0);
	/* the pages themselves are dirty: fsync does not clean them */
	ck_assert_int_eq(pcm_file_page_state(f, 1) & PCM_PAGE_DIRTY, PCM_PAGE_DIRTY);
	pcm_kernel_free(k);
}
END_TEST

START_TEST(cachestat_absent_and_blocked_answer_everyone)
{
	struct pcm_kernel *a = kernel(PC_MINCORE_FULL, PC_NOWAIT_CLEAN, PC_CACHESTAT_ABSENT);
	struct pcm_kernel *b = kernel(PC_MINCORE_FULL, PC_NOWAIT_CLEAN, PC_CACHESTAT_BLOCKED);
	struct pcm_task *ta = task(a, 0, 0, ALLCAPS), *tb = task(b, 0, 0, ALLCAPS);
	struct pcm_file *fa = file(a, 0, 0, 0600, 2), *fb = file(b, 0, 0, 0600, 2);
	struct pc_cachestat cs;

	OK(pcm_file_set(fb, PCM_FILE_HUGETLB, 1));
	ck_assert_int_eq(pcm_cachestat(fd_open(ta, fa, PCM_O_RDWR), 0, 0, &cs), -ENOSYS);
	ck_assert_int_eq(pcm_cachestat(fd_open(tb, fb, PCM_O_RDWR), 0, 0, &cs), -EPERM);
	pcm_kernel_free(a);
	pcm_kernel_free(b);
}
END_TEST

START_TEST(cachestat_gated_allows_writers_owners_and_fowner)
{
	struct pcm_kernel *k = kernel_618();
	struct pcm_task *nobody = task(k, NOBODY, NOBODY, 0);
	struct pcm_file *foreign = file(k, 0, 0, 0644, 2);
	struct pcm_file *shared = file(k, 0, 0, 0666, 2);
	struct pcm_file *acl = file(k, 0, 0, 0644, 2);
	struct pcm_file *own = file(k, NOBODY, NOBODY, 0444, 2);
	struct pcm_fd *fd;
	struct pc_cachestat cs;

	OK(pcm_file_set(acl, PCM_FILE_ACL_WRITE_UID, NOBODY));
	fd = fd_open(nobody, foreign, PCM_O_RDONLY);
	ck_assert_int_eq(pcm_cachestat(fd, 0, 0, &cs), -EPERM);
	ck_assert_int_eq(pcm_cachestat_flags(fd, 0, 0, 1, &cs), -EPERM); /* EPERM before EINVAL */
	OK(pcm_cachestat(fd_open(nobody, shared, PCM_O_RDONLY), 0, 0, &cs));
	OK(pcm_cachestat(fd_open(nobody, acl, PCM_O_RDONLY), 0, 0, &cs));
	OK(pcm_cachestat(fd_open(nobody, own, PCM_O_RDONLY), 0, 0, &cs));
	OK(pcm_cachestat(fd_open(task(k, 1, 1, PCM_CAP_FOWNER), foreign, PCM_O_RDONLY), 0, 0, &cs));
	ck_assert_int_eq(pcm_cachestat(fd_open(task(k, 1, 1, 0), foreign, PCM_O_RDONLY), 0, 0, &cs),
			 -EPERM);
	ck_assert_int_eq(pcm_cachestat_flags(fd_open(nobody, own, PCM_O_RDONLY), 0, 0, 1, &cs),
			 -EINVAL);
	pcm_kernel_free(k);
}
END_TEST

START_TEST(cachestat_gated_fmode_write_short_cut)
{
	struct pcm_kernel *k = kernel_618();
	struct pcm_file *f = file(k, 0, 0, 0644, 2);
	struct pcm_task *dac = task(k, 1000, 1000, PCM_CAP_DAC_OVERRIDE);
	struct pcm_task *plain = task(k, 1000, 1000, 0);
	struct pcm_fd *rw = fd_open(dac, f, PCM_O_RDWR);
	struct pc_cachestat cs;

	OK(pcm_file_set(f, PCM_FILE_IMMUTABLE, 0));
	OK(pcm_cachestat(rw, 0, 0, &cs));
	/* the write permission is gone once immutable; the open fd still counts */
	OK(pcm_file_set(f, PCM_FILE_IMMUTABLE, 1));
	OK(pcm_cachestat(rw, 0, 0, &cs));
	ck_assert_int_eq(pcm_pwrite(rw, 0, 1), -EPERM);
	ck_assert_int_eq(pcm_cachestat(fd_open(dac, f, PCM_O_RDONLY), 0, 0, &cs), -EPERM);
	ck_assert_int_eq(pcm_cachestat(fd_open(plain, f, PCM_O_RDONLY), 0, 0, &cs), -EPERM);
	pcm_kernel_free(k);
}
END_TEST

START_TEST(cachestat_open_checks_nothing_but_hugetlb_and_flags)
{
	struct pcm_kernel *k = kernel(PC_MINCORE_GATED_FAKED, PC_NOWAIT_CLEAN, PC_CACHESTAT_OPEN);
	struct pcm_task *nobody = task(k, NOBODY, NOBODY, 0);
	struct pcm_file *f = file(k, 0, 0, 0644, 2), *h = file(k, 0, 0, 0644, 2);
	struct pcm_fd *fd = fd_open(nobody, f, PCM_O_RDONLY);
	struct pc_cachestat cs;

	OK(pcm_file_set(h, PCM_FILE_HUGETLB, 1));
	OK(pcm_file_cache(f, 1));
	OK(pcm_cachestat(fd, 0, 0, &cs));
	ck_assert_uint_eq(cs.cache, 1);
	ck_assert_int_eq(pcm_cachestat_flags(fd, 0, 0, 1, &cs), -EINVAL);
	ck_assert_int_eq(pcm_cachestat(fd, 0, 0, NULL), -EFAULT);
	ck_assert_int_eq(pcm_cachestat(fd_open(nobody, h, PCM_O_RDONLY), 0, 0, &cs), -EOPNOTSUPP);
	ck_assert_int_eq(pcm_cachestat(NULL, 0, 0, &cs), -EBADF);
	pcm_kernel_free(k);
}
END_TEST

START_TEST(cachestat_counts_cache_dirty_and_shadows_over_the_range)
{
	struct pcm_kernel *k = kernel_618();
	struct pcm_task *t = task(k, 0, 0, ALLCAPS);
	struct pcm_file *f = file(k, 0, 0, 0644, 10);
	struct pcm_fd *fd = fd_open(t, f, PCM_O_RDWR);
	struct pc_cachestat cs;

	cache_pages(f, "1100000011");
	OK(pcm_file_read_pending(f, 2));
	ck_assert_int_eq(pcm_pwrite(fd, 3, 2), 2);
	OK(pcm_file_reclaim(f, 5));
	OK(pcm_file_reclaim(f, 6));
	OK(pcm_file_drop(f, 9));
	OK(pcm_cachestat(fd, 0, 0, &cs));
	ck_assert_uint_eq(cs.cache, 6);
	ck_assert_uint_eq(cs.dirty, 2);
	ck_assert_uint_eq(cs.writeback, 0);
	ck_assert_uint_eq(cs.evicted, 2);
	ck_assert_uint_eq(cs.recently_evicted, 2);
	/* bytes [4096 + 1, 4 * 4096 + 1): pages 1 .. 4 */
	OK(pcm_cachestat(fd, 4097, 3 * 4096, &cs));
	ck_assert_uint_eq(cs.cache, 4);
	ck_assert_uint_eq(cs.dirty, 2);
	/* from page 5 to EOF */
	OK(pcm_cachestat(fd, 5 * 4096, 0, &cs));
	ck_assert_uint_eq(cs.cache, 1);
	ck_assert_uint_eq(cs.evicted, 2);
	/* a huge length stops at EOF */
	OK(pcm_cachestat(fd, 8 * 4096, UINT64_MAX, &cs));
	ck_assert_uint_eq(cs.cache, 1);
	/* a refault replaces the shadow */
	ck_assert_int_eq(pcm_pread(fd, 5, 1), 1);
	OK(pcm_cachestat(fd, 0, 0, &cs));
	ck_assert_uint_eq(cs.evicted, 1);
	pcm_kernel_free(k);
}
END_TEST

/* ---- file sizes ------------------------------------------------------------------------- */

START_TEST(size_in_bytes_rounds_pages_and_truncation_zaps)
{
	struct pcm_kernel *k = kernel_618();
	struct pcm_task *t = task(k, 0, 0, ALLCAPS);
	struct pcm_file *f = file(k, 0, 0, 0644, 4);
	uint64_t a = map(t, fd_open(t, f, PCM_O_RDONLY), 0, 4, PCM_PROT_READ, PCM_MAP_SHARED);

	for (uint64_t p = 0; p < 4; p++)
		OK(pcm_touch(t, a + p * 4096, 0));
	OK(pcm_file_set(f, PCM_FILE_SIZE_BYTES, 4096 + 1));
	ck_assert_uint_eq(pcm_file_npages(f), 2);
	ck_assert_uint_eq(pcm_file_size(f), 4097);
	ck_assert_str_eq(ptes(t, a, 4), "pp--");
	ck_assert_int_eq(pcm_touch(t, a + 2 * 4096, 0), -EFAULT);
	ck_assert_int_eq(pcm_file_cache(f, 2), -ERANGE);
	OK(pcm_file_set(f, PCM_FILE_SIZE_BYTES, 3 * 4096));
	ck_assert_str_eq(truth(f, 0, 3), "110");
	pcm_kernel_free(k);
}
END_TEST

/* ---- the detectors ---------------------------------------------------------------------- */

START_TEST(detect_mincore_classifies_each_variant)
{
	static const int modes[] = { PC_MINCORE_FULL, PC_MINCORE_GATED_FAKED,
				     PC_MINCORE_GATED_MAPPED, PC_MINCORE_MAPPED_ONLY,
				     PC_MINCORE_USELESS };

	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		struct pcm_kernel *k = kernel(modes[i], PC_NOWAIT_DESTRUCTIVE, PC_CACHESTAT_GATED);
		struct pcm_task *root = task(k, 0, 0, ALLCAPS);
		struct pcm_task *nobody = task(k, NOBODY, NOBODY, 0);
		unsigned int before = nfiles(k);

		ck_assert_int_eq(pcm_detect_mincore(root), modes[i]);
		ck_assert_int_eq(pcm_detect_mincore(nobody), modes[i]);
		ck_assert_uint_eq(nfiles(k), before); /* scratch files are gone */
		ck_assert_ptr_eq(k->tasks, nobody);   /* and so is the helper task */
		ck_assert_ptr_eq(k->tasks->next, root);
		ck_assert_ptr_null(k->tasks->next->next);
		pcm_kernel_free(k);
	}
}
END_TEST

START_TEST(detect_mincore_unknown_for_an_unprivileged_task_that_passes)
{
	struct pcm_kernel *k = kernel_618();

	/* not root, so it cannot become nobody; yet CAP_FOWNER passes the gate */
	ck_assert_int_eq(pcm_detect_mincore(task(k, 1000, 1000, PCM_CAP_FOWNER)),
			 PC_MINCORE_UNKNOWN);
	pcm_kernel_free(k);
}
END_TEST

START_TEST(detect_cachestat_classifies_each_variant)
{
	static const int modes[] = { PC_CACHESTAT_ABSENT, PC_CACHESTAT_BLOCKED,
				     PC_CACHESTAT_GATED, PC_CACHESTAT_OPEN };

	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		struct pcm_kernel *k = kernel(PC_MINCORE_GATED_FAKED, PC_NOWAIT_CLEAN, modes[i]);

		ck_assert_int_eq(pcm_detect_cachestat(task(k, 0, 0, ALLCAPS)), modes[i]);
		ck_assert_int_eq(pcm_detect_cachestat(task(k, NOBODY, NOBODY, 0)), modes[i]);
		ck_assert_uint_eq(nfiles(k), 1);
		pcm_kernel_free(k);
	}
}
END_TEST

START_TEST(detect_nowait_classifies_each_variant)
{
	static const int modes[] = { PC_NOWAIT_UNSUPPORTED, PC_NOWAIT_CLEAN,
				     PC_NOWAIT_DESTRUCTIVE };
	static const int mincore[] = { PC_MINCORE_FULL, PC_MINCORE_GATED_FAKED,
				       PC_MINCORE_GATED_MAPPED };

	for (size_t m = 0; m < sizeof(mincore) / sizeof(mincore[0]); m++) {
		for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
			struct pcm_kernel *k = kernel(mincore[m], modes[i], PC_CACHESTAT_GATED);
			struct pcm_task *root = task(k, 0, 0, ALLCAPS);
			struct pcm_task *nobody = task(k, NOBODY, NOBODY, 0);

			ck_assert_int_eq(pcm_detect_nowait(root), modes[i]);
			ck_assert_int_eq(pcm_detect_nowait(nobody), modes[i]);
			ck_assert_int_eq(pcm_detect_nowait_fs(nobody, PCM_FS_TMPFS),
					 PC_NOWAIT_UNSUPPORTED);
			ck_assert_int_eq(pcm_detect_nowait_fs(nobody, 2), -EINVAL);
			ck_assert_uint_eq(nfiles(k), 1);
			pcm_kernel_free(k);
		}
	}
}
END_TEST

START_TEST(backend_find_cold_page_needs_a_visible_file)
{
	struct pcm_kernel *k = kernel_618();
	struct pcm_task *nobody = task(k, NOBODY, NOBODY, 0);
	struct pc_backend *b = pcm_task_backend(nobody);
	struct pcm_file *foreign = file(k, 0, 0, 0644, 4);
	struct pcm_file *own;
	struct pc_bfile *bf;
	uint64_t page = 99;

	ck_assert_int_eq(b->ops->find_cold_page(b, PCM_FS_DISK, &bf, &page), -ENOENT);
	own = file(k, NOBODY, NOBODY, 0644, 4);
	cache_pages(own, "11");
	OK(pcm_file_cache(foreign, 0));
	OK(pcm_file_set(file(k, NOBODY, NOBODY, 0644, 4), PCM_FILE_HUGETLB, 1));
	OK(b->ops->find_cold_page(b, PCM_FS_DISK, &bf, &page));
	ck_assert_uint_eq(page, 2);
	b->ops->close(b, bf);
	ck_assert_int_eq(b->ops->find_cold_page(b, PCM_FS_TMPFS, &bf, &page), -ENOENT);
	ck_assert_int_eq(b->ops->as_nobody(b, NULL, NULL), -EPERM);
	pcm_kernel_free(k);
}
END_TEST

/* ---- pcm_residency ---------------------------------------------------------------------- */

/* A 16-page file with pages 1, 2, 9 and 15 cached. */
static struct pcm_file *pattern_file(struct pcm_kernel *k, uint32_t uid, uint32_t mode)
{
	struct pcm_file *f = file(k, uid, uid, mode, 16);

	cache_pages(f, "0110000001000001");
	return f;
}

static const char *bits(const struct pc_residency *r)
{
	char *s = buf_next();
	uint64_t n = pc_residency_npages(r);

	for (uint64_t i = 0; i < n; i++)
		s[i] = (char)('0' + pc_residency_test(r, pc_residency_first_page(r) + i));
	s[n] = '\0';
	return s;
}

/*
 * 6.1 (seen): after a sequential read, the page the readahead window
 * marked for the next window is cached, yet a RWF_NOWAIT read of it fails
 * with EAGAIN and starts nothing; a clean probe of the file therefore
 * reports it absent, and pc_residency() counts it as uncertain. A plain
 * read of it spends the mark.
 */
START_TEST(clean_nowait_misses_a_readahead_marked_page)
{
	struct pcm_kernel *k = kernel(PC_MINCORE_GATED_FAKED, PC_NOWAIT_CLEAN, PC_CACHESTAT_ABSENT);
	struct pcm_task *root = task(k, 0, 0, ALLCAPS);
	struct pcm_task *nobody = task(k, NOBODY, NOBODY, 0);
	struct pcm_file *f = file(k, 0, 0, 0644, 64);
	struct pcm_fd *rd = fd_open(root, f, PCM_O_RDONLY), *probe;
	struct pc_residency *r;
	uint64_t cached = 0, mark = 0;

	ck_assert_int_eq(pcm_pread(rd, 0, 1), 1); /* a fresh fd's first read: a window */
	for (uint64_t p = 0; p < 64; p++) {
		cached += pcm_file_resident(f, p) == 1;
		if (pcm_file_page_state(f, p) & PCM_PAGE_RA_MARK)
			mark = p;
	}
	ck_assert_uint_gt(cached, 2);
	ck_assert_uint_eq(mark, 1); /* the first page past the read */
	probe = fd_open(nobody, f, PCM_O_RDONLY);
	ck_assert_int_eq(pcm_preadv2_nowait(probe, mark), -EAGAIN);
	ck_assert_int_eq(pcm_preadv2_nowait(probe, 0), 1);
	OK(pcm_residency(probe, 0, 0, 0, &r));
	ck_assert_int_eq(pc_residency_quality(r), PC_QUALITY_EXACT);
	ck_assert_int_eq(pc_residency_test(r, mark), 0);
	ck_assert_uint_eq(pc_residency_resident(r), cached - 1);
	ck_assert_uint_eq(pc_residency_uncertain(r), 1);
	pc_residency_free(r);
	/* read, the mark is spent: a hit like any other */
	ck_assert_int_eq(pcm_pread(rd, mark, 1), 1);
	ck_assert_int_eq(pcm_preadv2_nowait(probe, mark), 1);
	pcm_kernel_free(k);
}
END_TEST

START_TEST(residency_exact_when_the_gate_passes)
{
	struct pcm_kernel *k = kernel_618();
	struct pcm_task *nobody = task(k, NOBODY, NOBODY, 0);
	struct pcm_file *own = pattern_file(k, NOBODY, 0644);
	struct pcm_file *shared = pattern_file(k, 0, 0666);
	struct pc_residency *r;

	OK(pcm_residency(fd_open(nobody, own, PCM_O_RDONLY), 0, 0, 0, &r));
	ck_assert_int_eq(pc_residency_quality(r), PC_QUALITY_EXACT);
	ck_assert_str_eq(bits(r), "0110000001000001");
	ck_assert_uint_eq(pc_residency_resident(r), 4);
	ck_assert_int_eq(pc_residency_perturbed(r), 0);
	pc_residency_free(r);
	OK(pcm_residency(fd_open(nobody, shared, PCM_O_RDONLY), 4096, 8 * 4096, 0, &r));
	ck_assert_int_eq(pc_residency_quality(r), PC_QUALITY_EXACT);
	ck_assert_uint_eq(pc_residency_first_page(r), 1);
	ck_assert_str_eq(bits(r), "11000000");
	pc_residency_free(r);
	ck_assert_str_eq(truth(own, 0, 16), "0110000001000001");
	pcm_kernel_free(k);
}
END_TEST

START_TEST(residency_unknown_when_faked_and_nowait_destructive)
{
	struct pcm_kernel *k = kernel_618();
	struct pcm_task *nobody = task(k, NOBODY, NOBODY, 0);
	struct pcm_file *f = pattern_file(k, 0, 0644);
	struct pcm_fd *fd = fd_open(nobody, f, PCM_O_RDONLY);
	struct pc_residency *r;

	OK(pcm_residency(fd, 0, 0, 0, &r));
	ck_assert_int_eq(pc_residency_quality(r), PC_QUALITY_UNKNOWN);
	ck_assert_int_eq(pc_residency_test(r, 1), -ENODATA);
	ck_assert_int_eq(pc_residency_perturbed(r), 0);
	pc_residency_free(r);
	ck_assert_str_eq(truth(f, 0, 16), "0110000001000001");
	/* allowed to perturb: exact at the time of each probe, and the cache changed */
	OK(pcm_residency(fd, 0, 0, PC_RES_ALLOW_PERTURB, &r));
	ck_assert_int_eq(pc_residency_quality(r), PC_QUALITY_EXACT);
	ck_assert_int_eq(pc_residency_source(r), PC_SOURCE_PREADV2);
	ck_assert_int_eq(pc_residency_perturbed(r), 1);
	ck_assert_str_eq(bits(r), "0110000001000001");
	pc_residency_free(r);
	ck_assert_str_eq(truth(f, 0, 16), "1111111111111111");
	pcm_kernel_free(k);
}
END_TEST

START_TEST(residency_exact_through_clean_nowait_probes)
{
	struct pcm_kernel *k = kernel(PC_MINCORE_GATED_FAKED, PC_NOWAIT_CLEAN, PC_CACHESTAT_GATED);
	struct pcm_task *nobody = task(k, NOBODY, NOBODY, 0);
	struct pcm_file *f = pattern_file(k, 0, 0644);
	struct pc_residency *r;

	OK(pcm_residency(fd_open(nobody, f, PCM_O_RDONLY), 0, 0, 0, &r));
	ck_assert_int_eq(pc_residency_quality(r), PC_QUALITY_EXACT);
	ck_assert_int_eq(pc_residency_source(r), PC_SOURCE_PREADV2);
	ck_assert_int_eq(pc_residency_perturbed(r), 0);
	ck_assert_str_eq(bits(r), "0110000001000001");
	pc_residency_free(r);
	ck_assert_str_eq(truth(f, 0, 16), "0110000001000001");
	pcm_kernel_free(k);
}
END_TEST

START_TEST(residency_counts_from_open_cachestat)
{
	struct pcm_kernel *k = kernel(PC_MINCORE_GATED_FAKED, PC_NOWAIT_DESTRUCTIVE,
				      PC_CACHESTAT_OPEN);
	struct pcm_task *nobody = task(k, NOBODY, NOBODY, 0);
	struct pcm_file *f = pattern_file(k, 0, 0644);
	struct pc_residency *r;

	OK(pcm_residency(fd_open(nobody, f, PCM_O_RDONLY), 0, 0, PC_RES_COUNT_ONLY, &r));
	ck_assert_int_eq(pc_residency_quality(r), PC_QUALITY_EXACT);
	ck_assert_int_eq(pc_residency_source(r), PC_SOURCE_CACHESTAT);
	ck_assert_uint_eq(pc_residency_resident(r), 4);
	pc_residency_free(r);
	/* without COUNT_ONLY mincore fakes, but open cachestat still gives
	 * the bitmap, side-effect free, by bisection */
	OK(pcm_residency(fd_open(nobody, f, PCM_O_RDONLY), 0, 0, 0, &r));
	ck_assert_int_eq(pc_residency_quality(r), PC_QUALITY_EXACT);
	ck_assert_int_eq(pc_residency_source(r), PC_SOURCE_CACHESTAT);
	ck_assert_int_eq(pc_residency_perturbed(r), 0);
	ck_assert_uint_eq(pc_residency_resident(r), 4);
	for (uint64_t p = 0; p < pcm_file_npages(f); p++)
		ck_assert_int_eq(pc_residency_test(r, p), pcm_file_resident(f, p));
	pc_residency_free(r);
	pcm_kernel_free(k);
}
END_TEST

START_TEST(residency_unknown_where_gated_mapped_hides_the_file)
{
	static const int cachestat[] = { PC_CACHESTAT_GATED, PC_CACHESTAT_ABSENT };

	for (size_t i = 0; i < 2; i++) {
		struct pcm_kernel *k = kernel(PC_MINCORE_GATED_MAPPED, PC_NOWAIT_DESTRUCTIVE,
					      cachestat[i]);
		struct pcm_task *nobody = task(k, NOBODY, NOBODY, 0);
		struct pcm_file *foreign = pattern_file(k, 0, 0644);
		struct pcm_file *own = pattern_file(k, NOBODY, 0644);
		struct pc_residency *r;

		OK(pcm_residency(fd_open(nobody, foreign, PCM_O_RDONLY), 0, 0, 0, &r));
		ck_assert_int_eq(pc_residency_quality(r), PC_QUALITY_UNKNOWN);
		pc_residency_free(r);
		OK(pcm_residency(fd_open(nobody, own, PCM_O_RDONLY), 0, 0, 0, &r));
		ck_assert_int_eq(pc_residency_quality(r), PC_QUALITY_EXACT);
		ck_assert_str_eq(bits(r), "0110000001000001");
		pc_residency_free(r);
		pcm_kernel_free(k);
	}
}
END_TEST

START_TEST(residency_follows_the_kernel_without_a_truthful_mincore)
{
	struct pcm_kernel *mo = kernel(PC_MINCORE_MAPPED_ONLY, PC_NOWAIT_CLEAN, PC_CACHESTAT_ABSENT);
	struct pcm_kernel *us = kernel(PC_MINCORE_USELESS, PC_NOWAIT_UNSUPPORTED,
				       PC_CACHESTAT_ABSENT);
	struct pcm_task *t = task(mo, 0, 0, ALLCAPS), *u = task(us, 0, 0, ALLCAPS);
	struct pcm_file *f = pattern_file(mo, 0, 0644), *g = pattern_file(us, 0, 0644);
	struct pc_residency *r;

	OK(pcm_residency(fd_open(t, f, PCM_O_RDONLY), 0, 0, 0, &r));
	ck_assert_int_eq(pc_residency_quality(r), PC_QUALITY_EXACT);
	ck_assert_int_eq(pc_residency_source(r), PC_SOURCE_PREADV2);
	ck_assert_str_eq(bits(r), "0110000001000001");
	pc_residency_free(r);
	OK(pcm_residency(fd_open(u, g, PCM_O_RDONLY), 0, 0, PC_RES_ALLOW_PERTURB, &r));
	ck_assert_int_eq(pc_residency_quality(r), PC_QUALITY_UNKNOWN);
	pc_residency_free(r);
	pcm_kernel_free(mo);
	pcm_kernel_free(us);
}
END_TEST

START_TEST(residency_on_16k_pages)
{
	struct pcm_kernel *k = kernel(PC_MINCORE_GATED_FAKED, PC_NOWAIT_CLEAN, PC_CACHESTAT_GATED);
	struct pcm_task *t;
	struct pcm_file *f;
	struct pc_residency *r;

	OK(pcm_kernel_tune(k, PCM_TUNE_PAGE_SIZE, 16384));
	t = task(k, 0, 0, ALLCAPS);
	f = pattern_file(k, 0, 0644);
	OK(pcm_file_set(f, PCM_FILE_SIZE_BYTES, 15 * 16384 + 100));
	OK(pcm_residency(fd_open(t, f, PCM_O_RDONLY), 0, 0, 0, &r));
	ck_assert_int_eq(pc_residency_quality(r), PC_QUALITY_EXACT);
	ck_assert_uint_eq(pc_residency_file_size(r), 15 * 16384 + 100);
	ck_assert_str_eq(bits(r), "0110000001000001");
	pc_residency_free(r);
	pcm_kernel_free(k);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("model");
	TCase *tc = tcase_create("model");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, kernel_new_rejects_unknown_modes);
	tcase_add_test(tc, system_file_is_root_0755_and_cached);
	tcase_add_test(tc, tune_validates_and_page_size_needs_an_empty_kernel);
	tcase_add_test(tc, kernels_are_independent);
	tcase_add_test(tc, mincore_unaligned_start_is_einval);
	tcase_add_test(tc, mincore_zero_length_is_0_even_in_a_hole);
	tcase_add_test(tc, mincore_rounds_length_up_to_pages);
	tcase_add_test(tc, mincore_hole_is_enomem_with_the_pages_before_filled);
	tcase_add_test(tc, mincore_null_vector_is_efault);
	tcase_add_test(tc, mincore_spanning_vmas_mixes_real_and_fake_answers);
	tcase_add_test(tc, semantics_by_gate);
	tcase_add_test(tc, anonymous_memory_is_never_gated);
	tcase_add_test(tc, gate_owner_passes_even_on_0444);
	tcase_add_test(tc, gate_uses_fsuid);
	tcase_add_test(tc, gate_cap_fowner_passes);
	tcase_add_test(tc, gate_root_without_caps_fails_dac_override_passes);
	tcase_add_test(tc, gate_write_bits_pass);
	tcase_add_test(tc, gate_acl_write_entries_pass);
	tcase_add_test(tc, gate_immutable_denies_writers_not_owners);
	tcase_add_test(tc, gate_read_only_superblock_denies_writers_not_owners);
	tcase_add_test(tc, gate_read_only_bind_mount_does_not_deny);
	tcase_add_test(tc, gate_fails_on_no_inode_mappings_even_for_root);
	tcase_add_test(tc, open_checks_permissions_in_order);
	tcase_add_test(tc, truth_counts_only_up_to_date_pages);
	tcase_add_test(tc, clean_nowait_misses_a_readahead_marked_page);
	tcase_add_test(tc, cow_page_in_private_mapping_goes_through_swap);
	tcase_add_test(tc, migration_and_hwpoison_entries_read_1);
	tcase_add_test(tc, thp_reads_1_and_unstable_pmd_depends_on_semantics);
	tcase_add_test(tc, hugetlb_reads_the_huge_pte_only);
	tcase_add_test(tc, shmem_swap_entries_read_the_swap_cache);
	tcase_add_test(tc, touch_faults_where_a_real_access_would);
	tcase_add_test(tc, read_fault_reads_around_the_page);
	tcase_add_test(tc, read_around_is_clamped_to_start_and_eof);
	tcase_add_test(tc, read_around_ignores_fadv_random);
	tcase_add_test(tc, read_around_follows_the_readahead_tunable);
	tcase_add_test(tc, fault_around_maps_cached_neighbours_in_the_block);
	tcase_add_test(tc, fault_around_runs_again_after_read_around);
	tcase_add_test(tc, fault_around_is_clamped_to_the_vma_and_eof);
	tcase_add_test(tc, fault_around_follows_its_tunable);
	tcase_add_test(tc, write_faults_do_not_fault_around);
	tcase_add_test(tc, page_sizes_16k_and_64k);
	tcase_add_test(tc, write_fault_on_shared_mapping_dirties_the_page);
	tcase_add_test(tc, write_fault_on_private_mapping_copies);
	tcase_add_test(tc, mmap_checks_the_fd);
	tcase_add_test(tc, munmap_splits_mappings);
	tcase_add_test(tc, map_fixed_replaces_what_was_there);
	tcase_add_test(tc, nowait_unsupported_kernel_and_tmpfs_answer_eopnotsupp);
	tcase_add_test(tc, nowait_hit_eof_and_clean_miss);
	tcase_add_test(tc, nowait_destructive_miss_reads_the_page);
	tcase_add_test(tc, nowait_destructive_initial_window_at_page_0_of_a_fresh_fd);
	tcase_add_test(tc, nowait_destructive_under_fadv_random_reads_one_page);
	tcase_add_test(tc, pread_initial_window_at_page_0_of_a_fresh_fd);
	tcase_add_test(tc, pread_sequential_reads_ramp_up);
	tcase_add_test(tc, pread_random_miss_reads_just_the_pages);
	tcase_add_test(tc, pread_under_fadv_random_reads_exactly_the_pages);
	tcase_add_test(tc, pread_is_short_at_eof);
	tcase_add_test(tc, pwrite_needs_a_writable_fd_and_extends_the_file);
	tcase_add_test(tc, fadvise_willneed_reads_the_range);
	tcase_add_test(tc, fadvise_dontneed_skips_mapped_and_dirty_pages_and_leaves_no_shadow);
	tcase_add_test(tc, fadvise_does_nothing_on_tmpfs);
	tcase_add_test(tc, cachestat_absent_and_blocked_answer_everyone);
	tcase_add_test(tc, cachestat_gated_allows_writers_owners_and_fowner);
	tcase_add_test(tc, cachestat_gated_fmode_write_short_cut);
	tcase_add_test(tc, cachestat_open_checks_nothing_but_hugetlb_and_flags);
	tcase_add_test(tc, cachestat_counts_cache_dirty_and_shadows_over_the_range);
	tcase_add_test(tc, cachestat_counts_no_dirty_pages_on_tmpfs);
	tcase_add_test(tc, size_in_bytes_rounds_pages_and_truncation_zaps);
	tcase_add_test(tc, detect_mincore_classifies_each_variant);
	tcase_add_test(tc, detect_mincore_unknown_for_an_unprivileged_task_that_passes);
	tcase_add_test(tc, detect_cachestat_classifies_each_variant);
	tcase_add_test(tc, detect_nowait_classifies_each_variant);
	tcase_add_test(tc, backend_find_cold_page_needs_a_visible_file);
	tcase_add_test(tc, residency_exact_when_the_gate_passes);
	tcase_add_test(tc, residency_unknown_when_faked_and_nowait_destructive);
	tcase_add_test(tc, residency_exact_through_clean_nowait_probes);
	tcase_add_test(tc, residency_counts_from_open_cachestat);
	tcase_add_test(tc, residency_unknown_where_gated_mapped_hides_the_file);
	tcase_add_test(tc, residency_follows_the_kernel_without_a_truthful_mincore);
	tcase_add_test(tc, residency_on_16k_pages);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
