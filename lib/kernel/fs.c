/* SPDX-License-Identifier: MIT */
/* What kind of filesystem an fd is on, as the NOWAIT facts are keyed. */
#include <sys/stat.h>
#include <sys/vfs.h>

#include "kernel.h"

int pc_fs_type(int fd, unsigned long *type)
{
	struct statfs sfs;

	if (fstatfs(fd, &sfs) < 0)
		return pc_neg_errno();
	/* a 32-bit magic in a signed word: 0x958458f6 reads negative there */
	*type = (unsigned long)(uint32_t)sfs.f_type;
	return 0;
}

/* The filesystem key of an open fd: 0, or -errno. */
int pc_on_overlayfs(int fd)
{
	unsigned long type;

	return pc_fs_type(fd, &type) < 0 ? -1 : type == OVERLAYFS_SUPER_MAGIC;
}

/* The filesystem key of an open fd: 0, or -errno. */
int pc_fs_key(int fd, dev_t *dev, long *fstype)
{
	unsigned long type;
	struct stat st;
	int ret;

	if (fstat(fd, &st) < 0)
		return pc_neg_errno();
	ret = pc_fs_type(fd, &type);
	if (ret < 0)
		return ret;
	*dev = st.st_dev;
	*fstype = (long)type;
	return 0;
}

/*
 * Filesystems whose buffered reads go through the kernel's shared
 * page-cache read path, where what a RWF_NOWAIT miss does (fail clean, or
 * start readahead: 6.12+) is decided for all of them alike; each still
 * says for itself whether it takes RWF_NOWAIT at all (doc/kernels.md).
 */
int pc_fs_shared_read_path(long fstype)
{
	switch ((unsigned long)fstype) {
	case 0xEF53UL:     /* ext2, ext3, ext4 */
	case 0x58465342UL: /* xfs */
	case 0x9123683EUL: /* btrfs */
		return 1;
	default:
		return 0;
	}
}

