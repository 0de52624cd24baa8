/* SPDX-License-Identifier: MIT */
/*
 * Allocation failure on demand, for tests/test-faults.c only.
 *
 * That binary is linked with -Wl,--wrap for malloc, calloc, realloc, free,
 * posix_memalign, aligned_alloc, strdup, strndup and the C library calls of
 * lib/ that allocate inside the C library (fopen, fdopendir, getline,
 * pthread_create): every call the test and libpagecache's internal static
 * library make goes through failmalloc.c, which hands it on to the real
 * function (glibc's, or valgrind's and ASan's replacements, which the
 * dynamic linker finds first) unless it was told to fail that call. Nothing
 * in lib/ changes; other libraries (Check, liburing, glibc itself) are not
 * affected.
 *
 * A failed call fails as the C library documents it for lack of memory:
 * NULL (ENOMEM) from the allocators, fopen and fdopendir, -1 (ENOMEM) from
 * getline when it would have to allocate, EAGAIN from pthread_create.
 */
#ifndef PC_FAILMALLOC_H
#define PC_FAILMALLOC_H

#include <stdint.h>

enum fm_mode {
	FM_ONCE = 0,      /* fail the nth call only; later calls succeed */
	FM_FROM_NTH = 1,  /* fail the nth call and every later one */
};

/* Fail the nth (1-based) allocating call from now on, in any thread of the
 * process (the library's helper threads too), per mode. n == 0 arms
 * nothing but still counts calls and tracks blocks. */
void fm_arm(uint64_t nth, int mode);

/* Stop failing. Returns how many calls were failed since fm_arm(). */
uint64_t fm_disarm(void);

/* Allocating calls seen since fm_arm(). */
uint64_t fm_calls(void);

/* Blocks handed out by the wrapped allocators since fm_arm() (while armed
 * or not) that were not freed yet: 0 after a call that cleaned up. Blocks
 * allocated before fm_arm() are not tracked. */
uint64_t fm_live_blocks(void);

/* read(2) and write(2) of the test and the library are wrapped too, only to
 * count, so that a test can show its signals did interrupt them: calls
 * that failed with EINTR, and calls that moved fewer bytes than asked. */
struct fm_io_counts {
	uint64_t read_eintr, read_short, write_eintr, write_short;
};
void fm_io_counts(struct fm_io_counts *out);

#endif
