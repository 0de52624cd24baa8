/* SPDX-License-Identifier: MIT */
/*
 * Opening a name whose type must be decided before it is opened for I/O.
 * Opening a device node runs its driver's open (a watchdog arms, a tape
 * rewinds on close, a tty may become the controlling terminal), so
 * "stat the name, then open it" is not enough: the name can change in
 * between. An O_PATH descriptor runs no driver code and reads nothing; the
 * type is decided on it, and that very inode is then reopened through
 * /proc/self/fd, which no rename can redirect.
 */
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pc-private.h"

int pc_open_path(int dirfd, const char *path, int flags, struct stat *st)
{
	int fd = openat(dirfd, path, O_PATH | O_CLOEXEC | (flags & (O_NOFOLLOW | O_DIRECTORY)));

	if (fd < 0)
		return pc_neg_errno();
	if (fstat(fd, st) < 0) {
		int err = pc_neg_errno();

		close(fd);
		return err;
	}
	return fd;
}

int pc_reopen(int pathfd, int flags)
{
	char proc[64];
	int fd;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", pathfd);
	fd = open(proc, flags | O_CLOEXEC);
	return fd < 0 ? pc_neg_errno() : fd;
}
