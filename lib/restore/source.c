/* SPDX-License-Identifier: MIT */
/*
 * The library's own snapshot format as a pc_restore_source: a reader on a
 * file or a pipe, its runs in this machine's pages, and a rewind (a new
 * reader from the start) where the input is a regular file.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../opts.h"
#include "../pc-private.h"

struct pc_snapshot_source {
	int fd;
	off_t start;               /* where the input started; -1: not seekable */
	struct pc_snapshot_reader *rd;
	struct pc_restore_file file;
	uint64_t snap_ps, ps;      /* the snapshot's page size, this machine's */
	struct pc_run pending;
	bool has_pending;
};

static int open_reader(struct pc_snapshot_source *s)
{
	int ret = pc_snapshot_reader_new(s->fd, &s->rd);

	if (ret < 0)
		s->rd = NULL;
	s->has_pending = false;
	return ret;
}

PC_EXPORT int pc_snapshot_source_new(int fd, struct pc_snapshot_source **out)
{
	struct pc_snapshot_source *s;
	struct stat st;
	int ret;

	if (fd < 0 || !out)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->fd = fd;
	s->ps = (uint64_t)pc_page_size();
	s->start = -1;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
		s->start = lseek(fd, 0, SEEK_CUR);
	ret = open_reader(s);
	if (ret < 0) {
		free(s);
		return ret;
	}
	*out = s;
	return 0;
}

PC_EXPORT void pc_snapshot_source_free(struct pc_snapshot_source *s)
{
	if (!s)
		return;
	pc_snapshot_reader_free(s->rd);
	free(s);
}

PC_EXPORT struct pc_snapshot_reader *pc_snapshot_source_reader(struct pc_snapshot_source *s)
{
	return s ? s->rd : NULL;
}

static int next_file(void *arg, const struct pc_restore_file **f)
{
	struct pc_snapshot_source *s = arg;
	const struct pc_snapshot_file *sf;
	int ret;

	s->has_pending = false;
	if (!s->rd)
		return -EBADF; /* a rewind failed */
	ret = pc_snapshot_next_file(s->rd, &sf);
	if (ret <= 0)
		return ret;
	s->snap_ps = pc_snapshot_reader_page_size(s->rd);
	s->file = (struct pc_restore_file){
		.size = sizeof(s->file), .path = sf->path, .identity = 1,
		.file_size = sf->file_size, .mtime_ns = sf->mtime_ns, .dev = sf->dev,
		.ino = sf->ino, .quality = sf->quality, .npages = sf->npages,
	};
	*f = &s->file;
	return 1;
}

/* The snapshot's runs in this machine's pages: a run covers every page
 * that holds any of its bytes; runs that meet merge. */
static int next_run(void *arg, struct pc_run *run)
{
	struct pc_snapshot_source *s = arg;
	struct pc_run r;
	int ret;

	if (!s->rd)
		return -EBADF;
	if (s->snap_ps == s->ps)
		return pc_snapshot_next_run(s->rd, run);
	for (;;) {
		uint64_t start, end;

		ret = pc_snapshot_next_run(s->rd, &r);
		if (ret < 0)
			return ret;
		if (ret == 0)
			break;
		/* the reader keeps (page + npages) * page_size within int64_t */
		start = r.page * s->snap_ps / s->ps;
		end = ((r.page + r.npages) * s->snap_ps + s->ps - 1) / s->ps;
		if (s->has_pending && start <= s->pending.page + s->pending.npages) {
			s->pending.npages = end - s->pending.page;
			continue;
		}
		if (s->has_pending) {
			*run = s->pending;
			s->pending = (struct pc_run){ start, end - start };
			return 1;
		}
		s->pending = (struct pc_run){ start, end - start };
		s->has_pending = true;
	}
	if (!s->has_pending)
		return 0;
	*run = s->pending;
	s->has_pending = false;
	return 1;
}

static int rewind_source(void *arg)
{
	struct pc_snapshot_source *s = arg;

	if (s->start < 0)
		return -ESPIPE;
	pc_snapshot_reader_free(s->rd);
	s->rd = NULL;
	if (lseek(s->fd, s->start, SEEK_SET) < 0)
		return pc_neg_errno();
	return open_reader(s);
}

PC_EXPORT void pc_snapshot_source_get(struct pc_snapshot_source *s, struct pc_restore_source *src)
{
	struct pc_restore_source cb = {
		.size = sizeof(cb), .arg = s, .next_file = next_file, .next_run = next_run,
		.rewind = rewind_source,
	};

	if (s && src)
		pc_opts_out(src, &cb, sizeof(cb));
}
