// SPDX-License-Identifier: MIT
/*
 * The kernels the suite boots, and what each is known to do. The rows come
 * from the kernels' history (doc/kernels.md says which change gave each
 * answer), never from the library's detector, so that a test comparing
 * the detector with a row can fail.
 */
#include <stdio.h>
#include <sys/utsname.h>

#include "pagecache/pagecache.h"
#include "pc-test.h"

static const struct pc_test_kernel kernels[] = {
	/* Debian 12's own kernel: the mincore gate (5.2), no cachestat (6.5),
	 * RWF_NOWAIT reads that start no readahead (before 6.12). */
	{ 6, 1, PC_MINCORE_GATED_FAKED, PC_CACHESTAT_ABSENT, PC_NOWAIT_CLEAN, 1 },
	/* the build machines': cachestat gated (6.14), RWF_NOWAIT misses
	 * start readahead (6.12) */
	{ 6, 18, PC_MINCORE_GATED_FAKED, PC_CACHESTAT_GATED, PC_NOWAIT_DESTRUCTIVE, 1 },
};

const struct pc_test_kernel *pc_test_kernel(void)
{
	struct utsname u;
	int major, minor;

	if (uname(&u) < 0 || sscanf(u.release, "%d.%d", &major, &minor) != 2)
		return NULL;
	for (size_t i = 0; i < sizeof(kernels) / sizeof(kernels[0]); i++)
		if (kernels[i].major == major && kernels[i].minor == minor)
			return &kernels[i];
	return NULL;
}

int pc_test_expect_mincore(void)
{
	const struct pc_test_kernel *k = pc_test_kernel();

	return k ? k->mincore : -1;
}

int pc_test_expect_cachestat(void)
{
	const struct pc_test_kernel *k = pc_test_kernel();

	/* valgrind 3.19 knows no cachestat(2): ENOSYS whatever the kernel */
	if (pc_test_under_valgrind())
		return PC_CACHESTAT_ABSENT;
	return k ? k->cachestat : -1;
}

int pc_test_expect_nowait(void)
{
	const struct pc_test_kernel *k = pc_test_kernel();

	return k ? k->nowait : -1;
}

int pc_test_expect_io_uring(void)
{
	const struct pc_test_kernel *k = pc_test_kernel();

	return k ? k->io_uring : -1;
}
