/* SPDX-License-Identifier: MIT */
/*
 * What every file of lib/restore/ shares, and calls nothing above it: the
 * clock, the stop, the source, events; the fds kept for the final measure,
 * what measure() learnt of each file, the files missing from their path.
 */
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

#include <sys/resource.h>

#include "restore-private.h"

double rs_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

bool rs_user_cancel(const struct restore *c)
{
	return c->o.cancel && *c->o.cancel;
}

bool rs_cancelled(const struct restore *c)
{
	return __atomic_load_n(&c->cancel, __ATOMIC_RELAXED) || rs_user_cancel(c);
}

void rs_note_cancel(struct restore *c)
{
	if (rs_user_cancel(c) && !c->stop)
		c->stop = PC_RESTORE_STOP_CANCELLED;
}

int rs_next_file(struct restore *c, const struct pc_restore_file **f)
{
	return c->src.next_file(c->src.arg, f);
}

int rs_next_run(struct restore *c, struct pc_run *run)
{
	return c->src.next_run(c->src.arg, run);
}

void rs_event(struct restore *c, int reason, const char *path, int error, uint64_t index)
{
	struct pc_restore_event ev = {
		.size = sizeof(ev), .reason = reason, .path = path, .error = error, .index = index,
	};

	if (c->o.event)
		c->o.event(&ev, c->o.arg);
}

/* The fds kept: as many as RLIMIT_NOFILE allows (the caller may raise it)
 * with room left for the rest (two batches of files in flight, 512, and
 * the snapshot, the root, the log, the eviction watch), at most KEPT_MAX. */
#define KEPT_MAX 65536
#define KEPT_SPARE 1024
void rs_kept_init(struct restore *c)
{
	struct rlimit rl;

	c->kept_max = 0;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return;
	if (rl.rlim_cur > KEPT_SPARE)
		c->kept_max = rl.rlim_cur - KEPT_SPARE > KEPT_MAX ? KEPT_MAX
			: (size_t)(rl.rlim_cur - KEPT_SPARE);
}

/* Keep fd as logged file i's, or close it. */
void rs_keep_fd(struct restore *c, size_t i, int fd)
{
	if (i >= c->kept_max) {
		close(fd);
		return;
	}
	if (i >= c->nkept) {
		size_t cap = c->nkept ? c->nkept * 2 : 1024;
		int *k;

		while (cap <= i)
			cap *= 2;
		if (cap > c->kept_max)
			cap = c->kept_max;
		k = realloc(c->kept, cap * sizeof(*k));
		if (!k) {
			close(fd);
			return;
		}
		for (size_t j = c->nkept; j < cap; j++)
			k[j] = -1;
		c->kept = k;
		c->nkept = cap;
	}
	if (c->kept[i] >= 0)
		close(c->kept[i]);
	c->kept[i] = fd;
}

int rs_kept_fd(const struct restore *c, size_t i)
{
	return i < c->nkept ? c->kept[i] : -1;
}

void rs_drop_fd(struct restore *c, size_t i)
{
	if (i < c->nkept && c->kept[i] >= 0) {
		close(c->kept[i]);
		c->kept[i] = -1;
	}
}

void rs_kept_free(struct restore *c)
{
	for (size_t i = 0; i < c->nkept; i++)
		if (c->kept[i] >= 0)
			close(c->kept[i]);
	free(c->kept);
	c->kept = NULL;
	c->nkept = 0;
}

int rs_file_state(struct restore *c, size_t i)
{
	return i < c->nstate ? c->state[i] : FILE_PENDING;
}

int rs_set_state(struct restore *c, size_t i, int state)
{
	if (i >= c->nstate) {
		size_t cap = c->nstate ? c->nstate * 2 : 1024;
		uint8_t *st;

		while (cap <= i)
			cap *= 2;
		st = realloc(c->state, cap);
		if (!st)
			return -ENOMEM;
		memset(st + c->nstate, FILE_PENDING, cap - c->nstate);
		c->state = st;
		c->nstate = cap;
	}
	c->state[i] = (uint8_t)state;
	return 0;
}

/* Remember a file missing from its path, for rs_find_renamed(): where its
 * device and inode were recorded, and the snapshot can be read again.
 * true when it is (its note waits for the search). */
bool rs_lost_add(struct restore *c, const struct pc_restore_file *f, const char *rel,
		     uint64_t index)
{
	size_t len = strlen(rel) + 1;
	struct lost *l;

	if (!f || !f->identity || (!f->dev && !f->ino) || !c->can_reread ||
	    c->no_find_renamed || c->nlost >= LOST_MAX || c->lost_bytes + len > LOST_PATH_BYTES)
		return false;
	if (c->nlost == c->caplost) {
		size_t cap = c->caplost ? c->caplost * 2 : 64;

		l = realloc(c->lost, cap * sizeof(*l));
		if (!l)
			return false;
		c->lost = l;
		c->caplost = cap;
	}
	l = &c->lost[c->nlost];
	l->rel = strdup(rel);
	if (!l->rel)
		return false;
	l->found = NULL;
	c->lost_bytes += len;
	l->dev = f->dev;
	l->ino = f->ino;
	l->index = index;
	c->nlost++;
	return true;
}

void rs_lost_free(struct restore *c)
{
	for (size_t i = 0; i < c->nlost; i++) {
		free(c->lost[i].rel);
		free(c->lost[i].found);
	}
	free(c->lost);
}

PC_EXPORT int pc_restore_refusal(int err)
{
	switch (err) {
	case -EXDEV: return PC_RESTORE_EV_OUTSIDE;
	case -ELOOP: return PC_RESTORE_EV_SYMLINK;
	case -ENAMETOOLONG: return PC_RESTORE_EV_NAME_TOO_LONG;
	case -EINVAL: return PC_RESTORE_EV_UNSAFE_PATH;
	case -EBADFD:
	case -EISDIR:
	case -ENOTDIR: return PC_RESTORE_EV_NOT_REGULAR;
	case -ENOENT: return PC_RESTORE_EV_MISSING;
	default: return PC_RESTORE_EV_OPEN_ERROR;
	}
}
