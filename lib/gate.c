/* SPDX-License-Identifier: MIT */
/*
 * Predicting the kernel's mincore gate (can_do_mincore, KERNEL.md section 1):
 * a file's residency is revealed to the owner (by fsuid), to holders of
 * CAP_FOWNER over the file, and to anyone with write permission. A read-only
 * superblock denies write permission; a read-only bind mount does not.
 */
#include <fcntl.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pc-private.h"

#ifndef AT_EMPTY_PATH
#define AT_EMPTY_PATH 0x1000
#endif
#ifndef AT_EACCESS
#define AT_EACCESS 0x200
#endif
#ifndef __NR_faccessat2
#define __NR_faccessat2 439
#endif

/* The calling thread's filesystem uid/gid: setfsuid(-1) fails and returns
 * the current value. */
static uid_t current_fsuid(void)
{
	return (uid_t)setfsuid((uid_t)-1);
}

static gid_t current_fsgid(void)
{
	return (gid_t)setfsgid((gid_t)-1);
}

/* Whether the calling thread has cap in its effective set. */
static int has_effective_cap(int cap)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];

	memset(data, 0, sizeof(data));
	if (syscall(SYS_capget, &hdr, data) < 0)
		return 0;
	return (data[cap / 32].effective >> (cap % 32)) & 1;
}

/* Whether id is mapped in the caller's user namespace (map is
 * /proc/self/uid_map or gid_map). Capabilities over an inode count only
 * when both its uid and gid are mapped. */
static int id_is_mapped(const char *map, unsigned long id)
{
	unsigned long inside, outside, count;
	int mapped = 0;
	FILE *f = fopen(map, "re");

	if (!f)
		return 1; /* no user namespaces: everything is mapped */
	while (fscanf(f, "%lu %lu %lu", &inside, &outside, &count) == 3) {
		if (id >= inside && id - inside < count) {
			mapped = 1;
			break;
		}
	}
	fclose(f);
	return mapped;
}

/* Mount id of fd (statx STATX_MNT_ID, 5.8+), or -1. */
static long mount_id(int fd)
{
#ifdef STATX_MNT_ID
	struct statx stx;

	if (statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &stx) == 0 && (stx.stx_mask & STATX_MNT_ID))
		return (long)stx.stx_mnt_id;
#else
	(void)fd;
#endif
	return -1;
}

/* Whether a comma-separated option list (ending at a space) holds "ro". */
static int opts_have_ro(const char *opts)
{
	const char *end = opts + strcspn(opts, " \n");

	for (const char *p = opts; p < end;) {
		size_t n = strcspn(p, ", \n");

		if (n == 2 && p[0] == 'r' && p[1] == 'o')
			return 1;
		p += n + 1;
	}
	return 0;
}

/* 1 if the superblock holding fd is read-only (from /proc/self/mountinfo:
 * superblock options follow " - fstype source "), 0 if not, -1 unknown. */
static int superblock_readonly(int fd)
{
	long id = mount_id(fd);
	char *line = NULL;
	size_t cap = 0;
	int ret = -1;
	FILE *f;

	if (id < 0)
		return -1;
	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return -1;
	while (getline(&line, &cap, f) > 0) {
		char *sep, *p;

		if (strtol(line, NULL, 10) != id)
			continue;
		sep = strstr(line, " - ");
		if (!sep)
			break;
		p = sep + 3;
		for (int field = 0; field < 2 && p; field++) { /* skip fstype, source */
			p = strchr(p, ' ');
			if (p)
				p++;
		}
		if (p)
			ret = opts_have_ro(p);
		break;
	}
	free(line);
	fclose(f);
	return ret;
}

/* Write permission from the mode bits alone, for the read-only bind mount
 * case where faccessat answers EROFS without looking at them. */
static int mode_allows_write(const struct stat *st, uid_t fsuid, gid_t fsgid)
{
	if (has_effective_cap(CAP_DAC_OVERRIDE))
		return 1;
	if (st->st_uid == fsuid)
		return (st->st_mode & S_IWUSR) != 0;
	if (st->st_gid == fsgid)
		return (st->st_mode & S_IWGRP) != 0;
	{
		gid_t groups[256];
		int n = getgroups((int)PC_ARRAY_SIZE(groups), groups);

		for (int i = 0; i < n; i++)
			if (groups[i] == st->st_gid)
				return (st->st_mode & S_IWGRP) != 0;
	}
	return (st->st_mode & S_IWOTH) != 0;
}

int pc_gate_predict(int fd)
{
	struct stat st;
	uid_t fsuid = current_fsuid();

	if (fstat(fd, &st) < 0)
		return pc_neg_errno();
	if (st.st_uid == fsuid)
		return 1;
	if (has_effective_cap(CAP_FOWNER) && id_is_mapped("/proc/self/uid_map", st.st_uid) &&
	    id_is_mapped("/proc/self/gid_map", st.st_gid))
		return 1;
	if (syscall(__NR_faccessat2, fd, "", W_OK, AT_EACCESS | AT_EMPTY_PATH) == 0)
		return 1;
	switch (errno) {
	case EACCES:
	case EPERM:     /* immutable or append-only */
	case ETXTBSY:
		return 0;
	case EROFS:
		/* A read-only superblock denies; a read-only bind mount does not,
		 * and then only the permission bits decide. */
		if (superblock_readonly(fd) != 0)
			return 0;
		return mode_allows_write(&st, fsuid, current_fsgid());
	default:
		return pc_neg_errno();
	}
}

PC_EXPORT int pc_can_do_mincore(int fd)
{
	if (fd < 0)
		return -EBADF;
	if (pc_detect_mincore() == PC_MINCORE_FULL) {
		struct stat st;

		return fstat(fd, &st) < 0 ? pc_neg_errno() : 1;
	}
	return pc_gate_predict(fd);
}
