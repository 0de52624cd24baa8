/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "restore-private.h"

/* The log lives in memory (a memfd: no /tmp needed, gone at exit). */
FILE *rs_log_open(void)
{
	int fd = memfd_create("pagecache-restore-log", MFD_CLOEXEC);
	FILE *f;

	if (fd < 0)
		return NULL;
	f = fdopen(fd, "w+");
	if (!f)
		close(fd);
	return f;
}

int rs_log_path(struct restore *c, const char *rel)
{
	uint32_t n = (uint32_t)strlen(rel);

	c->log_prev = 0;
	if (fwrite(&n, sizeof(n), 1, c->log) != 1 || fwrite(rel, 1, n, c->log) != n)
		return -EIO;
	return 0;
}

static int put_varint(FILE *f, uint64_t v)
{
	while (v >= 0x80) {
		if (putc_unlocked((int)(v & 0x7f) | 0x80, f) == EOF)
			return -EIO;
		v >>= 7;
	}
	return putc_unlocked((int)v, f) == EOF ? -EIO : 0;
}

static int get_varint(FILE *f, uint64_t *v)
{
	*v = 0;
	for (unsigned int shift = 0; shift < 64; shift += 7) {
		int b = getc_unlocked(f);

		if (b == EOF)
			return -EIO;
		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return 0;
	}
	return -EIO;
}

/* Runs as (gap from the previous run's end, npages) varints, as in the
 * snapshot itself: 2 to 3 bytes a run. (0, 0) ends a file. */
int rs_log_runs(struct restore *c, const struct pc_run *runs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (put_varint(c->log, runs[i].page - c->log_prev) < 0 ||
		    put_varint(c->log, runs[i].npages) < 0)
			return -EIO;
		c->log_prev = runs[i].page + runs[i].npages;
	}
	return 0;
}

int rs_log_end(struct restore *c)
{
	if (put_varint(c->log, 0) < 0 || put_varint(c->log, 0) < 0)
		return -EIO;
	return 0;
}

/* The next logged run of a file: 1, 0 at its end, -EIO. */
int rs_log_next(struct restore *c, uint64_t *prev, struct pc_run *run)
{
	uint64_t gap, n;

	if (get_varint(c->log, &gap) < 0 || get_varint(c->log, &n) < 0)
		return -EIO;
	if (n == 0)
		return 0;
	run->page = *prev + gap;
	run->npages = n;
	*prev = run->page + n;
	return 1;
}


int rs_log_file(struct restore *c, char *path)
{
	uint32_t n;

	if (fread(&n, sizeof(n), 1, c->log) != 1)
		return 0;
	if (n > PC_SNAPSHOT_PATH_MAX || fread(path, 1, n, c->log) != n)
		return -EIO;
	path[n] = '\0';
	return 1;
}
