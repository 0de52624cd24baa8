/* SPDX-License-Identifier: MIT */
/*
 * The snapshot writer: records are built in one bounded buffer and written
 * out as it fills, so a snapshot of any size needs about 256 KiB. The
 * atomic variant writes through a pc_outfile (lib/restore/outfile.c): a
 * temporary file beside the target, put in place only when the snapshot
 * is complete.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pc-private.h"
#include "opts.h"
#include "snapshot-codec.h"

#define PC_SNAP_REC_MAX (PC_SNAP_REC_HEAD + PC_SNAP_PAYLOAD_MAX + PC_SNAP_REC_TAIL)
#define PC_SNAP_OUT_CAP (2 * PC_SNAP_REC_MAX)
#define PC_SNAP_FLUSH_AT (64 * 1024)

struct pc_snapshot_writer {
	int fd;
	int err;             /* sticky first error */
	int finished;
	struct pc_outfile *of; /* atomic writers only: fd is its */
	uint32_t page_size;
	uint64_t max_page;   /* run ends stay <= this: offsets fit in off_t */
	uint8_t *buf;        /* records ready to be written, then the one being built */
	size_t len;          /* bytes of complete records in buf */
	size_t rec;          /* start of the record being built */
	size_t pos;          /* end of the record being built */
	char *prev_path;     /* for the shared-prefix path encoding */
	size_t prev_len;
	uint64_t offset;     /* bytes written before buf */
	uint64_t nfiles, nruns, npages;
};

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t done = write(fd, p, n);

		if (done < 0) {
			if (errno == EINTR)
				continue;
			return pc_neg_errno();
		}
		if (done == 0)
			return -EIO;
		p += done;
		n -= (size_t)done;
	}
	return 0;
}

static int flush(struct pc_snapshot_writer *w)
{
	int ret = write_all(w->fd, w->buf, w->len);

	if (ret < 0)
		return ret;
	w->offset += w->len;
	w->len = 0;
	return 0;
}

static int record_begin(struct pc_snapshot_writer *w, uint8_t type)
{
	if (w->len + PC_SNAP_REC_MAX > PC_SNAP_OUT_CAP) {
		int ret = flush(w);

		if (ret < 0)
			return ret;
	}
	w->rec = w->len;
	w->buf[w->rec] = type;
	w->pos = w->rec + PC_SNAP_REC_HEAD;
	return 0;
}

static size_t record_payload(const struct pc_snapshot_writer *w)
{
	return w->pos - w->rec - PC_SNAP_REC_HEAD;
}

static int record_end(struct pc_snapshot_writer *w)
{
	size_t payload = record_payload(w);
	uint32_t crc;

	pc_put_le32(w->buf + w->rec + 1, (uint32_t)payload);
	crc = pc_crc32c(0, w->buf + w->rec, PC_SNAP_REC_HEAD + payload);
	pc_put_le32(w->buf + w->pos, crc);
	w->len = w->pos + PC_SNAP_REC_TAIL;
	if (w->len >= PC_SNAP_FLUSH_AT)
		return flush(w);
	return 0;
}

static void put_varint(struct pc_snapshot_writer *w, uint64_t v)
{
	w->pos += pc_varint_put(w->buf + w->pos, v);
}

static void put_bytes(struct pc_snapshot_writer *w, const void *p, size_t n)
{
	if (!n)
		return; /* p may be NULL (no root) */
	memcpy(w->buf + w->pos, p, n);
	w->pos += n;
}

static int mode_value(int mode)
{
	return mode < 0 ? 0 : mode; /* a pc_detect_*() error records unknown */
}

static int write_header(struct pc_snapshot_writer *w, const struct pc_snapshot_info *info)
{
	char generator[PC_SNAP_GENERATOR_MAX + 1];
	size_t root_len = info->root ? strlen(info->root) : 0;
	int64_t t = info->capture_time_ns;
	uint8_t preamble[PC_SNAP_PREAMBLE_LEN];
	int ret;

	snprintf(generator, sizeof(generator), "libpagecache %s", pc_version());
	if (root_len > PC_SNAP_PATH_MAX)
		return -ENAMETOOLONG;
	if (root_len && info->root[0] != '/')
		return -EINVAL;
	if (!t) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		t = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	}
	memcpy(preamble, PC_SNAP_MAGIC, PC_SNAP_MAGIC_LEN);
	preamble[PC_SNAP_MAGIC_LEN] = PC_SNAP_VERSION & 0xff;
	preamble[PC_SNAP_MAGIC_LEN + 1] = PC_SNAP_VERSION >> 8;
	memcpy(w->buf, preamble, sizeof(preamble));
	w->len = sizeof(preamble);

	ret = record_begin(w, PC_SNAP_REC_HEADER);
	if (ret < 0)
		return ret;
	put_varint(w, w->page_size);
	put_varint(w, pc_zigzag(t));
	put_varint(w, (uint64_t)mode_value(info->mincore_mode));
	put_varint(w, (uint64_t)mode_value(info->cachestat_mode));
	put_varint(w, (uint64_t)mode_value(info->nowait_mode));
	put_varint(w, root_len);
	put_bytes(w, info->root, root_len);
	put_varint(w, strlen(generator));
	put_bytes(w, generator, strlen(generator));
	ret = record_end(w);
	if (ret < 0)
		return ret;
	return flush(w);
}

static int writer_alloc(const struct pc_snapshot_info *user, struct pc_snapshot_info *info,
			struct pc_snapshot_writer **out)
{
	struct pc_snapshot_writer *w;
	uint32_t ps;
	int ret;

	ret = pc_opts_copy(info, sizeof(*info), user, user ? user->size : 0);
	if (ret < 0)
		return ret;
	ps = info->page_size ? info->page_size : (uint32_t)pc_page_size();
	if (ps < PC_SNAP_PAGE_SIZE_MIN || ps > PC_SNAP_PAGE_SIZE_MAX || (ps & (ps - 1)))
		return -EINVAL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->buf = malloc(PC_SNAP_OUT_CAP);
	w->prev_path = malloc(PC_SNAP_PATH_MAX + 1);
	if (!w->buf || !w->prev_path) {
		free(w->buf);
		free(w->prev_path);
		free(w);
		return -ENOMEM;
	}
	w->fd = -1;
	w->page_size = ps;
	w->max_page = (uint64_t)INT64_MAX / ps;
	*out = w;
	return 0;
}

PC_EXPORT int pc_snapshot_writer_new(int fd, const struct pc_snapshot_info *info,
				     struct pc_snapshot_writer **out)
{
	struct pc_snapshot_info copy;
	struct pc_snapshot_writer *w;
	int ret;

	if (fd < 0 || !out)
		return -EINVAL;
	ret = writer_alloc(info, &copy, &w);
	if (ret < 0)
		return ret;
	w->fd = fd;
	ret = write_header(w, &copy);
	if (ret < 0) {
		w->fd = -1;
		pc_snapshot_writer_free(w);
		return ret;
	}
	*out = w;
	return 0;
}

PC_EXPORT int pc_snapshot_writer_new_at(int dirfd, const char *path, mode_t mode,
					const struct pc_snapshot_info *info,
					struct pc_snapshot_writer **out)
{
	struct pc_snapshot_info copy;
	struct pc_snapshot_writer *w;
	int ret;

	if (!path || !out)
		return -EINVAL;
	ret = writer_alloc(info, &copy, &w);
	if (ret < 0)
		return ret;
	ret = pc_outfile_new_at(dirfd, path, mode, 0, &w->of);
	if (ret == 0) {
		w->fd = pc_outfile_fd(w->of);
		ret = write_header(w, &copy);
	}
	if (ret < 0) {
		pc_snapshot_writer_free(w);
		return ret;
	}
	*out = w;
	return 0;
}

PC_EXPORT int pc_snapshot_path_check(const char *relpath)
{
	const char *p;
	size_t len;

	if (!relpath || !*relpath || relpath[0] == '/')
		return -EINVAL;
	len = strlen(relpath);
	if (len > PC_SNAP_PATH_MAX)
		return -ENAMETOOLONG;
	for (p = relpath; p; p = strchr(p, '/')) {
		if (*p == '/')
			p++;
		if (p[0] == '.' && p[1] == '.' && (p[2] == '/' || p[2] == '\0'))
			return -EINVAL;
	}
	return 0;
}

/* A source of runs: next() gives 1 and a run, 0 at the end, or -errno. */
struct run_source {
	int (*next)(struct run_source *src, struct pc_run *run);
	const struct pc_residency *r;
	uint64_t from;
	const struct pc_run *runs;
	size_t n, i;
};

/* A count-only result has no bitmap, but none or all resident are runs too
 * (cachestat answers trees of small files that way). */
static int next_residency_run(struct run_source *src, struct pc_run *run)
{
	const struct pc_residency *r = src->r;
	uint64_t first = pc_residency_first_page(r), npages = pc_residency_npages(r);
	int ret = pc_residency_next_run(r, src->from, run);

	if (ret == -ENODATA && pc_residency_resident(r) == 0)
		return 0;
	if (ret == -ENODATA && pc_residency_resident(r) == npages) {
		if (src->from > first)
			return 0;
		run->page = first;
		run->npages = npages;
		ret = 1;
	}
	if (ret > 0)
		src->from = run->page + run->npages;
	return ret;
}

static int next_array_run(struct run_source *src, struct pc_run *run)
{
	if (src->i >= src->n)
		return 0;
	*run = src->runs[src->i++];
	return 1;
}

/* One pass over the runs: their count and pages, checking their order. */
static int count_runs(struct pc_snapshot_writer *w, struct run_source *src, uint64_t *nruns,
		      uint64_t *npages)
{
	uint64_t end = 0;
	struct pc_run run;
	int ret;

	*nruns = *npages = 0;
	while ((ret = src->next(src, &run)) > 0) {
		if (!run.npages || run.page < end || run.npages > w->max_page ||
		    run.page > w->max_page - run.npages)
			return -EINVAL;
		end = run.page + run.npages;
		(*nruns)++;
		*npages += run.npages;
	}
	return ret;
}

static int write_file(struct pc_snapshot_writer *w, const char *relpath,
		      const struct pc_snapshot_file *meta, int quality, struct run_source *src,
		      void (*rewind)(struct run_source *src))
{
	struct pc_snapshot_file m;
	uint64_t nruns = 0, npages = 0, end = 0;
	size_t len, shared = 0;
	struct pc_run run;
	int ret;

	if (w->err)
		return w->err;
	if (w->finished)
		return -EINVAL;
	ret = pc_snapshot_path_check(relpath);
	if (ret < 0)
		return ret;
	if (!meta)
		return -EINVAL;
	ret = pc_opts_copy(&m, sizeof(m), meta, meta->size);
	if (ret < 0)
		return ret;
	if (quality < PC_QUALITY_UNKNOWN || quality > PC_QUALITY_MAPPED)
		return -EINVAL;
	if (src) {
		ret = count_runs(w, src, &nruns, &npages);
		if (ret < 0)
			return ret;
		if (quality == PC_QUALITY_UNKNOWN && nruns)
			return -EINVAL;
		rewind(src);
	}
	len = strlen(relpath);
	while (shared < len && shared < w->prev_len && relpath[shared] == w->prev_path[shared])
		shared++;

	ret = record_begin(w, PC_SNAP_REC_FILE);
	if (ret < 0)
		goto fail;
	put_varint(w, shared);
	put_varint(w, len - shared);
	put_bytes(w, relpath + shared, len - shared);
	put_varint(w, m.file_size);
	put_varint(w, pc_zigzag(m.mtime_ns));
	put_varint(w, m.dev);
	put_varint(w, m.ino);
	put_varint(w, (uint64_t)quality);
	put_varint(w, nruns);
	put_varint(w, npages);
	memcpy(w->prev_path, relpath, len);
	w->prev_len = len;

	for (uint64_t i = 0; i < nruns; i++) {
		ret = src->next(src, &run);
		if (ret == 0)
			ret = -EIO; /* the source changed under us */
		if (ret < 0)
			goto fail;
		if (record_payload(w) >= PC_SNAP_RUN_BYTES) {
			ret = record_end(w);
			if (ret == 0)
				ret = record_begin(w, PC_SNAP_REC_RUNS);
			if (ret < 0)
				goto fail;
		}
		put_varint(w, run.page - end);
		put_varint(w, run.npages - 1);
		end = run.page + run.npages;
	}
	ret = record_end(w);
	if (ret < 0)
		goto fail;
	w->nfiles++;
	w->nruns += nruns;
	w->npages += npages;
	return 0;
fail:
	w->err = ret;
	return ret;
}

static void rewind_residency(struct run_source *src)
{
	src->from = pc_residency_first_page(src->r);
}

static void rewind_array(struct run_source *src)
{
	src->i = 0;
}

PC_EXPORT int pc_snapshot_write_file(struct pc_snapshot_writer *w, const char *relpath,
				     const struct pc_snapshot_file *meta,
				     const struct pc_residency *r)
{
	struct run_source src = { .next = next_residency_run, .r = r };
	int quality = r ? pc_residency_quality(r) : PC_QUALITY_UNKNOWN;

	if (!w)
		return -EINVAL;
	/* pc_residency() counts this machine's pages: a writer declared with
	 * another page size would record them wrong (pc_snapshot_write_runs()
	 * takes runs in the writer's own unit). */
	if (w->page_size != (uint32_t)pc_page_size())
		return -EINVAL;
	if (quality == PC_QUALITY_UNKNOWN)
		return write_file(w, relpath, meta, quality, NULL, NULL);
	rewind_residency(&src);
	return write_file(w, relpath, meta, quality, &src, rewind_residency);
}

PC_EXPORT int pc_snapshot_write_runs(struct pc_snapshot_writer *w, const char *relpath,
				     const struct pc_snapshot_file *meta,
				     const struct pc_run *runs, size_t n)
{
	struct run_source src = { .next = next_array_run, .runs = runs, .n = n };

	if (!w || !meta || (n && !runs))
		return -EINVAL;
	return write_file(w, relpath, meta, meta->quality, &src, rewind_array);
}

PC_EXPORT int pc_snapshot_writer_finish(struct pc_snapshot_writer *w)
{
	int ret;

	if (!w)
		return -EINVAL;
	if (w->err)
		return w->err;
	if (w->finished)
		return -EINVAL;
	ret = record_begin(w, PC_SNAP_REC_END);
	if (ret == 0) {
		put_varint(w, w->nfiles);
		put_varint(w, w->nruns);
		put_varint(w, w->npages);
		put_varint(w, w->offset + w->rec);
		ret = record_end(w);
	}
	if (ret == 0)
		ret = flush(w);
	if (ret == 0 && w->of)
		ret = pc_outfile_commit(w->of);
	if (ret < 0) {
		w->err = ret;
		return ret;
	}
	w->finished = 1;
	return 0;
}

PC_EXPORT void pc_snapshot_writer_free(struct pc_snapshot_writer *w)
{
	if (!w)
		return;
	pc_outfile_free(w->of); /* unfinished: no file left behind */
	free(w->prev_path);
	free(w->buf);
	free(w);
}
