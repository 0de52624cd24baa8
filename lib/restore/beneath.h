/* SPDX-License-Identifier: MIT */
/* Opening a recorded path beneath a root, never outside (beneath.c). */
#ifndef PC_RESTORE_BENEATH_H
#define PC_RESTORE_BENEATH_H

#include <sys/stat.h>

struct beneath {
	int rootfd;                /* the caller's */
	int procfd;                /* /proc/self/fd, for the reopen; -1: by path */
	int method;                /* 0 not chosen yet, 1 openat2, 2 component walk */
};

/* rootfd (kept the caller's) with /proc/self/fd opened; walk: the
 * component walk only. */
void pc_beneath_init(struct beneath *b, int rootfd, bool walk);
void pc_beneath_close(struct beneath *b);
/* Open relpath (checked with pc_snapshot_path_check()) beneath the root,
 * read-only, non-blocking, O_NOATIME where permitted, and only when it is
 * a regular file (*st its fstat). The fd or -errno, as pc_open_beneath(). */
int pc_beneath_open(struct beneath *b, const char *relpath, struct stat *st);
/* How paths are opened: "openat2(RESOLVE_BENEATH|RESOLVE_NO_MAGICLINKS)" or
 * "a component walk with O_NOFOLLOW (openat2 unavailable: ENOSYS)". */
const char *pc_beneath_method(const struct beneath *b);

#endif
