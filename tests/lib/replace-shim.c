/* SPDX-License-Identifier: MIT */
/*
 * LD_PRELOAD shim for test-cli-special.py: makes "a file replaced between
 * the walk and its open" happen every time. When the program opens a name
 * equal to $PC_SHIM_NAME (relative to a directory fd, as the walk does),
 * the shim first removes that name and, if $PC_SHIM_WITH is set, renames
 * that path into its place; then the real open runs. Once per process.
 */
/* openat and openat64 are both defined here: no redirection of one to the other */
#undef _FILE_OFFSET_BITS
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef int (*openat_fn)(int, const char *, int, ...);

static int done;

static void maybe_replace(int dirfd, const char *name)
{
	const char *want = getenv("PC_SHIM_NAME"), *with = getenv("PC_SHIM_WITH");
	struct stat st;

	if (done || !want || strcmp(name, want) != 0)
		return;
	done = 1;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
		unlinkat(dirfd, name, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0);
	if (with && *with && renameat(AT_FDCWD, with, dirfd, name) < 0)
		perror("replace-shim: renameat");
}

static int call_real(const char *sym, int dirfd, const char *name, int flags, mode_t mode)
{
	openat_fn real = (openat_fn)dlsym(RTLD_NEXT, sym);

	if (!real)
		real = (openat_fn)dlsym(RTLD_NEXT, "openat");
	return real(dirfd, name, flags, mode);
}

#define SHIM(sym)                                                      \
	int sym(int dirfd, const char *name, int flags, ...);          \
	int sym(int dirfd, const char *name, int flags, ...)           \
	{                                                              \
		mode_t mode = 0;                                       \
		if (flags & (O_CREAT | __O_TMPFILE)) {                 \
			va_list ap;                                    \
			va_start(ap, flags);                           \
			mode = va_arg(ap, mode_t);                     \
			va_end(ap);                                    \
		}                                                      \
		maybe_replace(dirfd, name);                            \
		return call_real(#sym, dirfd, name, flags, mode);      \
	}

SHIM(openat)
SHIM(openat64)
