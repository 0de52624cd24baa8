/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench-util.h"

static char dir_path[4000];
static char file_path[4200];

static void cleanup(void)
{
	if (file_path[0])
		unlink(file_path);
	if (dir_path[0])
		rmdir(dir_path);
}

static void on_signal(int sig)
{
	cleanup(); /* unlink and rmdir are async-signal-safe */
	signal(sig, SIG_DFL);
	raise(sig);
}

const char *bench_scratch(const char *prefix, const char *file, mode_t dir_mode)
{
	const char *base = getenv("PC_BENCH_DIR");
	int n = snprintf(dir_path, sizeof(dir_path), "%s/%s.XXXXXX",
			 base && *base ? base : "/var/tmp", prefix);

	if (n < 0 || (size_t)n >= sizeof(dir_path)) {
		dir_path[0] = '\0';
		errno = ENAMETOOLONG;
		return NULL;
	}
	if (!mkdtemp(dir_path)) {
		dir_path[0] = '\0';
		return NULL;
	}
	atexit(cleanup);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);
	if (chmod(dir_path, dir_mode) < 0) {
		int err = errno;

		cleanup();
		dir_path[0] = '\0';
		errno = err;
		return NULL;
	}
	snprintf(file_path, sizeof(file_path), "%s/%s", dir_path, file);
	return file_path;
}

double bench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}
