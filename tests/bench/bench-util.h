/* SPDX-License-Identifier: MIT */
/* What the C benchmarks share: a scratch file that goes away however the
 * bench ends, a clock, and an order for qsort of seconds. */
#ifndef PC_BENCH_UTIL_H
#define PC_BENCH_UTIL_H

#include <sys/types.h>

/* A fresh directory PC_BENCH_DIR/PREFIX.XXXXXX (default /var/tmp) with
 * mode dir_mode, and the path of FILE in it, which the caller creates:
 * both are removed at exit and on SIGINT, SIGTERM and SIGHUP. The path,
 * or NULL with errno set (nothing is left behind then). Once a process. */
const char *bench_scratch(const char *prefix, const char *file, mode_t dir_mode);

/* CLOCK_MONOTONIC, in seconds. */
double bench_now(void);

/* qsort's order of doubles, ascending. */
int bench_cmp_double(const void *a, const void *b);

#endif
