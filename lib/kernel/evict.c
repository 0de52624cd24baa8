/* SPDX-License-Identifier: MIT */
#include <fcntl.h>

#include "pc-private.h"

PC_EXPORT int pc_evict(int fd, uint64_t offset, uint64_t length)
{
	int err;

	if (offset > INT64_MAX || length > INT64_MAX)
		return -EINVAL;
	err = posix_fadvise(fd, (off_t)offset, (off_t)length, POSIX_FADV_DONTNEED);
	return -err;
}
