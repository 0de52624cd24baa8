/* SPDX-License-Identifier: MIT */
/* Files by device and inode beneath a root (findino.c). */
#ifndef PC_RESTORE_FINDINO_H
#define PC_RESTORE_FINDINO_H

#include <stddef.h>
#include <stdint.h>

struct inode_key {
	uint64_t dev, ino;
	size_t i;                  /* the caller's */
	char *found;               /* pc_find_inodes(): a path beneath the root
				    * (malloc'ed) of a regular file with that
				    * device and inode number in its directory */
};

/* Read the tree beneath rootfd (getdents; no symlink followed, no file
 * opened) until every key without found has one, or *stop is set; sorts
 * keys (by device, then inode). Returns how many keys have found, or
 * -ENOMEM, -EMFILE, -ENFILE (the search could not be complete; keys found
 * so far keep their path). The caller checks what it finds: a directory
 * entry's inode number can be stale, and the file can change before it is
 * opened. */
int pc_find_inodes(int rootfd, struct inode_key *keys, size_t n, const volatile int *stop);

#endif
