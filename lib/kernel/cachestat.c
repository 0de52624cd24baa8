/* SPDX-License-Identifier: MIT */
/* cachestat(2): Linux 6.5+, no glibc wrapper, and Debian 12's headers lack
 * both the number and the structs, so both are defined here. */
#include <sys/syscall.h>
#include <unistd.h>

#include "pc-private.h"

#ifndef __NR_cachestat
#define __NR_cachestat 451 /* the same on every architecture (unified table) */
#endif

struct pc_kernel_cachestat_range {
	uint64_t off;
	uint64_t len;
};

struct pc_kernel_cachestat {
	uint64_t nr_cache;
	uint64_t nr_dirty;
	uint64_t nr_writeback;
	uint64_t nr_evicted;
	uint64_t nr_recently_evicted;
};

int pc_sys_cachestat(int fd, uint64_t offset, uint64_t length, unsigned int flags,
		     struct pc_cachestat *out)
{
	struct pc_kernel_cachestat_range range = { .off = offset, .len = length };
	struct pc_kernel_cachestat cs = { 0 };

	if (syscall(__NR_cachestat, fd, &range, &cs, flags) < 0)
		return pc_neg_errno();
	if (out) {
		out->cache = cs.nr_cache;
		out->dirty = cs.nr_dirty;
		out->writeback = cs.nr_writeback;
		out->evicted = cs.nr_evicted;
		out->recently_evicted = cs.nr_recently_evicted;
	}
	return 0;
}

PC_EXPORT int pc_cachestat(int fd, uint64_t offset, uint64_t length, struct pc_cachestat *out)
{
	if (!out)
		return -EINVAL;
	return pc_sys_cachestat(fd, offset, length, 0, out);
}
