/* SPDX-License-Identifier: MIT */
/*
 * LD_PRELOAD shim for test-snapshot-cli.py: a kernel without openat2(2).
 * syscall(SYS_openat2, ...) fails with ENOSYS, as it does before Linux 5.6
 * and under valgrind; every other syscall() goes through unchanged.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <sys/syscall.h>

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

long syscall(long nr, ...);

long syscall(long nr, ...)
{
	long (*real)(long, ...) = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
	long a[6];
	va_list ap;

	if (nr == SYS_openat2) {
		errno = ENOSYS;
		return -1;
	}
	va_start(ap, nr);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	return real(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}
