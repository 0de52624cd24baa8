/* SPDX-License-Identifier: MIT */
/*
 * Output files replaced atomically: the one implementation behind
 * pc_snapshot_writer_new_at() and the command's dump (both formats). An
 * unnamed O_TMPFILE in the target's directory, given a hidden name
 * (".NAME.XXXXXX") and renamed over the target at the end, after an fsync;
 * where the filesystem has no O_TMPFILE, or /proc is not mounted (linking
 * it by AT_EMPTY_PATH alone takes CAP_DAC_READ_SEARCH before Linux 6.10),
 * the hidden name from the start. Only a regular file (or nothing) is
 * replaced, checked at the start and again right before the rename: as
 * root a rename over /dev/null replaced the device node.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../pc-private.h"

#define TMP_TRIES 64

struct pc_outfile {
	int fd;
	int dirfd;                 /* the target's directory */
	char *name;                /* the target's name in dirfd */
	char *tmpname;             /* the visible temporary name, when there is one */
	int unnamed;               /* fd is an unnamed O_TMPFILE */
	int in_place;              /* renamed over the target */
	int committed;
};

/* ".NAME.XXXXXX" with random letters, in the target's directory (for a
 * NAME too long for that, ".pagecache-snapshot.XXXXXX"). */
static char *tmp_name(const char *name)
{
	static const char letters[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	uint8_t rnd[6];
	size_t n = strlen(name);
	char *s;

	if (n > NAME_MAX - 8) {
		name = "pagecache-snapshot";
		n = strlen(name);
	}
	s = malloc(n + 9);
	if (!s)
		return NULL;
	if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd)) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		for (size_t i = 0; i < sizeof(rnd); i++)
			rnd[i] = (uint8_t)((uint64_t)ts.tv_nsec >> (i * 5)) ^ (uint8_t)getpid();
	}
	s[0] = '.';
	memcpy(s + 1, name, n);
	s[n + 1] = '.';
	for (size_t i = 0; i < sizeof(rnd); i++)
		s[n + 2 + i] = letters[rnd[i] % (sizeof(letters) - 1)];
	s[n + 8] = '\0';
	return s;
}

/* What the rename would replace: nothing, or a regular file (its mode
 * into *mode when the caller owns it, else -1). A device node, FIFO,
 * socket, directory or symlink at the name is left alone (-EEXIST). */
static int target_replaceable(const struct pc_outfile *f, int *mode)
{
	struct stat st;

	if (mode)
		*mode = -1;
	if (fstatat(f->dirfd, f->name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : pc_neg_errno();
	if (!S_ISREG(st.st_mode))
		return -EEXIST;
	if (mode && st.st_uid == geteuid())
		*mode = (int)(st.st_mode & 0777);
	return 0;
}

/* Unnamed when the filesystem can, and it can surely be named at the end
 * (through /proc/self/fd), else named. */
static int open_tmp(struct pc_outfile *f, mode_t mode)
{
	if (access("/proc/self/fd", X_OK) == 0) {
		f->fd = openat(f->dirfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, mode);
		if (f->fd >= 0) {
			f->unnamed = 1;
			return 0;
		}
		if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
			return pc_neg_errno();
	}
	for (int i = 0; i < TMP_TRIES; i++) {
		char *name = tmp_name(f->name);

		if (!name)
			return -ENOMEM;
		f->fd = openat(f->dirfd, name, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, mode);
		if (f->fd >= 0) {
			f->tmpname = name;
			return 0;
		}
		free(name);
		if (errno != EEXIST)
			return pc_neg_errno();
	}
	return -EEXIST;
}

static int outfile_open(struct pc_outfile *f, int dirfd, const char *path, mode_t mode,
			unsigned int flags)
{
	const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
	char *dir;
	int keep, ret;

	if (!*base || !strcmp(base, ".") || !strcmp(base, ".."))
		return -EINVAL;
	if (strlen(base) > NAME_MAX)
		return -ENAMETOOLONG;
	f->name = strdup(base);
	dir = slash ? strndup(path, (size_t)(slash - path) + (slash == path)) : strdup(".");
	if (!f->name || !dir) {
		free(dir);
		return -ENOMEM;
	}
	f->dirfd = openat(dirfd, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	free(dir);
	if (f->dirfd < 0)
		return pc_neg_errno();
	ret = target_replaceable(f, &keep);
	if (ret == 0)
		ret = open_tmp(f, mode);
	/* the caller's own file keeps the mode they gave it */
	if (ret == 0 && (flags & PC_OUTFILE_KEEP_MODE) && keep >= 0 &&
	    fchmod(f->fd, (mode_t)keep) < 0)
		ret = pc_neg_errno();
	return ret;
}

PC_EXPORT int pc_outfile_new_at(int dirfd, const char *path, mode_t mode, unsigned int flags,
				struct pc_outfile **out)
{
	struct pc_outfile *f;
	int ret;

	if (!path || !out || (flags & ~(unsigned int)PC_OUTFILE_KEEP_MODE))
		return -EINVAL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->fd = f->dirfd = -1;
	ret = outfile_open(f, dirfd, path, mode, flags);
	if (ret < 0) {
		pc_outfile_free(f);
		return ret;
	}
	*out = f;
	return 0;
}

PC_EXPORT int pc_outfile_fd(const struct pc_outfile *f)
{
	return f ? f->fd : -EINVAL;
}

/* Give the temporary file a name, if it has none (linkat cannot replace). */
static int name_tmp(struct pc_outfile *f)
{
	char proc[64];
	int ret = 0;

	if (!f->unnamed || f->tmpname)
		return 0;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", f->fd);
	for (int i = 0; i < TMP_TRIES; i++) {
		f->tmpname = tmp_name(f->name);
		if (!f->tmpname)
			return -ENOMEM;
		/* AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH; /proc does not */
		if (linkat(f->fd, "", f->dirfd, f->tmpname, AT_EMPTY_PATH) == 0 ||
		    linkat(AT_FDCWD, proc, f->dirfd, f->tmpname, AT_SYMLINK_FOLLOW) == 0)
			return 0;
		ret = pc_neg_errno();
		free(f->tmpname);
		f->tmpname = NULL;
		if (ret != -EEXIST)
			return ret;
	}
	return ret;
}

PC_EXPORT int pc_outfile_commit(struct pc_outfile *f)
{
	int ret;

	if (!f || f->committed || f->in_place)
		return -EINVAL;
	if (fsync(f->fd) < 0)
		return pc_neg_errno();
	ret = target_replaceable(f, NULL);
	if (ret == 0)
		ret = name_tmp(f);
	if (ret < 0)
		return ret;
	if (renameat(f->dirfd, f->tmpname, f->dirfd, f->name) < 0)
		return pc_neg_errno();
	free(f->tmpname);
	f->tmpname = NULL;
	f->in_place = 1;
	if (fsync(f->dirfd) < 0)
		return pc_neg_errno();
	f->committed = 1;
	return 0;
}

PC_EXPORT int pc_outfile_in_place(const struct pc_outfile *f)
{
	return f && f->in_place;
}

PC_EXPORT void pc_outfile_free(struct pc_outfile *f)
{
	if (!f)
		return;
	if (f->tmpname && f->dirfd >= 0)
		unlinkat(f->dirfd, f->tmpname, 0);
	if (f->fd >= 0)
		close(f->fd);
	if (f->dirfd >= 0)
		close(f->dirfd);
	free(f->tmpname);
	free(f->name);
	free(f);
}
