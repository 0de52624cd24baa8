/* SPDX-License-Identifier: MIT */
/*
 * Whether a small run of an open file is all in the page cache now
 * (rs_quick_look()), and whether mincore tells this caller the truth
 * about a file: the looks of the early confirmation, the windows and the
 * final measure.
 */
#include <errno.h>
#include <linux/capability.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <stdio.h>
#include <sys/uio.h>

#include "restore-private.h"

/* Whether this process is in the initial user namespace, where every id is
 * mapped (its uid_map covers all 2^32 - 1 ids). */
static bool initial_user_ns(void)
{
	unsigned long inside, outside, count, total = 0;
	FILE *f = fopen("/proc/self/uid_map", "re");

	if (!f)
		return false;
	while (fscanf(f, "%lu %lu %lu", &inside, &outside, &count) == 3)
		total += count;
	fclose(f);
	return total >= 4294967295UL;
}

/*
 * Whether mincore tells this process the truth about every file: where it
 * has no gate, or with CAP_FOWNER in the initial user namespace, where the
 * gate's owner-or-capable test passes for every inode that has an owner
 * (rs_mincore_truthful() says which has none). Asked once: restore changes
 * neither its credentials nor its namespace.
 */
bool rs_mincore_truthful_everywhere(void)
{
	int mode = pc_detect_mincore();

	if (mode == PC_MINCORE_FULL)
		return true;
	if (mode != PC_MINCORE_GATED_FAKED && mode != PC_MINCORE_GATED_MAPPED)
		return false;
	return pc_cap_effective(CAP_FOWNER) && initial_user_ns();
}

/* The id the kernel shows for ids without a mapping (65534 unless changed). */
uid_t rs_overflow_uid(void)
{
	unsigned long id = 65534;
	FILE *f = fopen("/proc/sys/kernel/overflowuid", "re");

	if (f) {
		if (fscanf(f, "%lu", &id) != 1)
			id = 65534;
		fclose(f);
	}
	return (uid_t)id;
}

/*
 * Whether mincore tells the truth about fd, owned by owner as fstat shows
 * it ((uid_t)-1: fstat is asked). The answer for every file leaves out
 * files shown owned by the overflow id: on an idmapped mount that is an
 * owner its idmap does not map, and then CAP_FOWNER does not pass (mincore
 * faked every page for root there); pc_can_do_mincore() tells them apart,
 * at five system calls or more (it reads the id map each time, and the
 * mount table for such a file).
 */
bool rs_mincore_truthful(const struct restore *c, int fd, uid_t owner)
{
	int mode = pc_detect_mincore();
	struct stat st;

	if (mode == PC_MINCORE_FULL)
		return true;
	if (mode != PC_MINCORE_GATED_FAKED && mode != PC_MINCORE_GATED_MAPPED)
		return false;
	if (c->mincore_everywhere && owner == (uid_t)-1 && fstat(fd, &st) == 0)
		owner = st.st_uid;
	if (c->mincore_everywhere && owner != (uid_t)-1 && owner != c->overflow_uid)
		return true;
	return pc_can_do_mincore(fd) == 1;
}

/*
 * A quick look at a small run of an open file: 1 when every page of it is
 * in the page cache and up to date, 0 when not (yet), -1 when it cannot
 * tell (measure the file with pc_residency()).
 * - Where mincore tells this caller the truth (truthful: the kernel's gate
 *   passes, pc_can_do_mincore()), mincore through a fresh PROT_NONE
 *   mapping: it counts only pages up to date, and copies nothing.
 * - Else cachestat first (pages present, including pages still being read
 *   in); a run all present is then read with RWF_NOWAIT into a scratch
 *   buffer, which succeeds in full only when every page is up to date (a
 *   page still being read in makes it stop short or fail with EAGAIN).
 *   Nothing is read from the disk: every page was present a moment before
 *   (one evicted in between would be read back in by a kernel whose
 *   RWF_NOWAIT misses start readahead, 6.12+: a page the restore wants
 *   anyway). Copying pages fresh from the disk is what a restore of many
 *   small files spends most of its time on here, hence mincore first.
 */
int rs_quick_look(struct restore *c, int fd, struct pc_run run, bool truthful)
{
	uint64_t len = run.npages * c->ps;
	struct pc_cachestat cs;
	struct iovec iov;
	ssize_t got;
	int ret;

	if (len > QUICK_RUN_BYTES)
		return -1;
	if (truthful) {
		unsigned char vec[QUICK_RUN_BYTES / 4096];
		void *map = mmap(NULL, (size_t)len, PROT_NONE, MAP_SHARED, fd,
				 (off_t)(run.page * c->ps));

		if (map != MAP_FAILED) {
			ret = mincore(map, (size_t)len, vec);
			munmap(map, (size_t)len);
			if (ret == 0) {
				for (uint64_t k = 0; k < run.npages; k++)
					if (!(vec[k] & 1))
						return 0;
				return 1;
			}
		}
		/* no mapping (RLIMIT_AS, a filesystem without mmap): read */
	}
	if (!c->cachestat_ok || !c->nowait_ok)
		return -1;
	if (!c->scratch) {
		c->scratch = malloc(QUICK_RUN_BYTES);
		if (!c->scratch)
			return -1;
	}
	iov = (struct iovec){ c->scratch, (size_t)len };
	ret = pc_cachestat(fd, run.page * c->ps, len, &cs);
	if (ret == -ENOSYS)
		c->cachestat_ok = false;
	if (ret < 0)
		return -1;
	if (cs.cache < run.npages)
		return 0;
	got = preadv2(fd, &iov, 1, (off_t)(run.page * c->ps), RWF_NOWAIT);
	if (got < 0 && (errno == EOPNOTSUPP || errno == EINVAL || errno == ENOSYS)) {
		c->nowait_ok = false;
		return -1;
	}
	if (got < 0)
		return errno == EAGAIN ? 0 : -1;
	/* short mid-page: the end of the file, in the run's last page (a
	 * page not up to date stops a read at a page boundary) */
	if ((uint64_t)got == len || ((uint64_t)got > len - c->ps && (uint64_t)got % c->ps))
		return 1;
	return -1; /* short: the end of the file moved, or a page not up to date */
}
