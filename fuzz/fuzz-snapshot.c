/* SPDX-License-Identifier: MIT */
/*
 * fuzz-snapshot: the native snapshot reader (lib/snapshot/snapshot-read.c) on
 * hostile input. The reader takes an fd, so the input goes into a memfd.
 * Random mutations almost never keep a record's CRC32C right, and the
 * reader decodes nothing behind a bad checksum; so each input is read
 * twice: as it is (the framing and the checksum checks), and with every
 * record's checksum recomputed (the decoder behind them).
 *
 * Every walk checks the reader's promises (include/pagecache/pagecache.h,
 * doc/snapshot-format.md): only -EBADMSG or -EPROTONOSUPPORT, with a
 * message and an offset inside the input, and sticky; paths of 1 .. 4095
 * bytes; runs ascending, not overlapping, non-empty, ending inside an
 * int64 file offset, and adding up to the file's counts. Each input is
 * walked again skipping runs and handing some files' runs to
 * pc_warm_snapshot() (against a small memfd): the walk must end with the
 * same error at the same offset. A snapshot the reader accepts is written
 * out again with the writer and read back: same files, same runs.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pagecache/pagecache.h"
#include "snapshot-codec.h"
#include "fuzz.h"

enum walk_mode {
	WALK_ALL,   /* every run of every file */
	WALK_SKIP,  /* none, one or all runs of a file, or pc_warm_snapshot(), in turn */
};

struct walked_file {
	char *path;
	struct pc_snapshot_file meta;
	struct pc_run *runs;
	size_t nruns, cap;
};

/* What one walk saw. */
struct walked {
	int ret;                 /* 0: a whole valid snapshot; or the -errno */
	int runs_seen;           /* some file had runs */
	uint64_t err_offset;
	uint32_t page_size;
	int64_t capture_time;
	int modes[3];
	char *root;
	struct walked_file *files;
	size_t nfiles, cap;
};

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	FUZZ_CHECK(p);
	return p;
}

static char *xstrdup(const char *s)
{
	char *d = strdup(s);

	FUZZ_CHECK(d);
	return d;
}

static void walked_free(struct walked *w)
{
	for (size_t i = 0; i < w->nfiles; i++) {
		free(w->files[i].path);
		free(w->files[i].runs);
	}
	free(w->files);
	free(w->root);
	memset(w, 0, sizeof(*w));
}

/* A memfd holding the bytes, positioned at 0. */
static int memfd_of(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz-snapshot", MFD_CLOEXEC);
	size_t done = 0;

	FUZZ_CHECK(fd >= 0);
	while (done < size) {
		ssize_t n = write(fd, data + done, size - done);

		FUZZ_CHECK(n > 0);
		done += (size_t)n;
	}
	FUZZ_CHECK(lseek(fd, 0, SEEK_SET) == 0);
	return fd;
}

int pc_fuzz_fix_crcs(const uint8_t *data, size_t size, uint8_t **out)
{
	uint8_t *p = malloc(size ? size : 1);
	size_t pos = PC_SNAP_PREAMBLE_LEN;
	int changed = 0;

	if (!p)
		return -ENOMEM;
	if (size)
		memcpy(p, data, size);
	while (size >= PC_SNAP_REC_HEAD && pos <= size - PC_SNAP_REC_HEAD) {
		uint32_t len = pc_get_le32(p + pos + 1), crc;

		if (len > PC_SNAP_PAYLOAD_MAX ||
		    size - pos - PC_SNAP_REC_HEAD < (size_t)len + PC_SNAP_REC_TAIL)
			break;
		crc = pc_crc32c(0, p + pos, PC_SNAP_REC_HEAD + len);
		if (pc_get_le32(p + pos + PC_SNAP_REC_HEAD + len) != crc) {
			pc_put_le32(p + pos + PC_SNAP_REC_HEAD + len, crc);
			changed++;
		}
		pos += PC_SNAP_REC_HEAD + (size_t)len + PC_SNAP_REC_TAIL;
	}
	*out = p;
	return changed;
}

static void check_header(struct pc_snapshot_reader *rd)
{
	uint32_t ps = pc_snapshot_reader_page_size(rd);
	const char *root = pc_snapshot_reader_root(rd);
	const char *gen = pc_snapshot_reader_generator(rd);

	FUZZ_CHECK(pc_snapshot_reader_version(rd) == PC_SNAPSHOT_FORMAT_VERSION);
	FUZZ_CHECK(ps >= 512 && ps <= (1u << 30) && !(ps & (ps - 1)));
	FUZZ_CHECK(root && strlen(root) <= PC_SNAPSHOT_PATH_MAX);
	FUZZ_CHECK(!root[0] || root[0] == '/');
	FUZZ_CHECK(gen && strlen(gen) <= 64);
	FUZZ_CHECK(pc_snapshot_reader_mincore_mode(rd) >= 0);
	FUZZ_CHECK(pc_snapshot_reader_cachestat_mode(rd) >= 0);
	FUZZ_CHECK(pc_snapshot_reader_nowait_mode(rd) >= 0);
}

static void check_file(const struct pc_snapshot_file *f, uint32_t page_size)
{
	size_t len;
	int ret;

	FUZZ_CHECK(f && f->size == sizeof(*f) && f->path);
	len = strlen(f->path);
	FUZZ_CHECK(len >= 1 && len <= PC_SNAPSHOT_PATH_MAX);
	FUZZ_CHECK(f->quality >= PC_QUALITY_UNKNOWN && f->quality <= PC_QUALITY_MAPPED);
	FUZZ_CHECK(f->quality != PC_QUALITY_UNKNOWN || f->nruns == 0);
	FUZZ_CHECK(f->nruns <= f->npages);
	FUZZ_CHECK(!f->nruns == !f->npages);
	FUZZ_CHECK(f->npages <= (uint64_t)INT64_MAX / page_size);
	ret = pc_snapshot_path_check(f->path);
	FUZZ_CHECK(ret == 0 || ret == -EINVAL);
}

/* A failed walk: an error the API documents, explained, located, sticky. */
static void check_error(struct pc_snapshot_reader *rd, int ret, size_t size)
{
	const struct pc_snapshot_file *f = NULL;
	const char *msg = pc_snapshot_reader_error(rd);
	struct pc_run run;

	FUZZ_CHECK(ret == -EBADMSG || ret == -EPROTONOSUPPORT);
	FUZZ_CHECK(msg && msg[0]);
	FUZZ_CHECK(pc_snapshot_reader_error_offset(rd) <= size);
	FUZZ_CHECK(pc_snapshot_read_header(rd) == ret);
	FUZZ_CHECK(pc_snapshot_next_file(rd, &f) == ret);
	FUZZ_CHECK(pc_snapshot_next_run(rd, &run) == ret);
}

static void add_run(struct walked_file *wf, const struct pc_run *run)
{
	if (wf->nruns == wf->cap) {
		wf->cap = wf->cap ? 2 * wf->cap : 4;
		wf->runs = xrealloc(wf->runs, wf->cap * sizeof(*wf->runs));
	}
	wf->runs[wf->nruns++] = *run;
}

/* Up to max runs of the current file (SIZE_MAX: all of them, and then the
 * file's counts are checked). Returns 0 or the reader's -errno. */
static int read_runs(struct pc_snapshot_reader *rd, const struct pc_snapshot_file *f,
		     uint32_t page_size, size_t max, struct walked_file *wf)
{
	uint64_t end = 0, nruns = 0, npages = 0;
	struct pc_run run;
	int ret;

	while (nruns < max) {
		ret = pc_snapshot_next_run(rd, &run);
		if (ret < 0)
			return ret;
		if (ret == 0) {
			FUZZ_CHECK(nruns == f->nruns && npages == f->npages);
			FUZZ_CHECK(pc_snapshot_next_run(rd, &run) == 0);
			return 0;
		}
		FUZZ_CHECK(ret == 1);
		FUZZ_CHECK(run.npages >= 1 && run.page >= end);
		FUZZ_CHECK(run.page <= (uint64_t)INT64_MAX / page_size);
		FUZZ_CHECK(run.npages <= (uint64_t)INT64_MAX / page_size - run.page);
		end = run.page + run.npages;
		nruns++;
		npages += run.npages;
		FUZZ_CHECK(nruns <= f->nruns && npages <= f->npages);
		if (wf)
			add_run(wf, &run);
	}
	return 0;
}

/* pc_warm_snapshot()'s target: a small file, so most runs lie past its end. */
#define WARM_FILE_SIZE (64 * 1024)

static int warm_fd(void)
{
	static int fd = -1;

	if (fd < 0) {
		static const uint8_t zero[WARM_FILE_SIZE];

		fd = memfd_of(zero, sizeof(zero));
	}
	return fd;
}

/* The rest of the current file's runs through pc_warm_snapshot(): 0 or the
 * reader's -errno. */
static int warm_runs(struct pc_snapshot_reader *rd)
{
	struct pc_warm_stats st = { .size = sizeof(st) };
	int64_t ret = pc_warm_snapshot(warm_fd(), rd, NULL, &st);

	if (ret < 0) {
		FUZZ_CHECK(ret == pc_snapshot_next_file(rd, &(const struct pc_snapshot_file *){ 0 }));
		return (int)ret;
	}
	FUZZ_CHECK(ret <= WARM_FILE_SIZE);
	FUZZ_CHECK(st.pages_read <= st.pages_wanted && st.pages_resident <= st.pages_wanted);
	FUZZ_CHECK(st.pages_beyond_eof <= st.pages_wanted);
	return 0;
}

static void walk(const uint8_t *data, size_t size, enum walk_mode mode, struct walked *w)
{
	const struct pc_snapshot_file *f;
	struct pc_snapshot_reader *rd;
	uint32_t ps = 0;
	int fd = memfd_of(data, size), ret;

	memset(w, 0, sizeof(*w));
	FUZZ_CHECK(pc_snapshot_reader_new(fd, &rd) == 0);
	FUZZ_CHECK(!pc_snapshot_reader_root(rd) && !pc_snapshot_reader_page_size(rd));
	FUZZ_CHECK(!pc_snapshot_reader_error(rd));
	ret = pc_snapshot_read_header(rd);
	if (ret == 0) {
		check_header(rd);
		ps = pc_snapshot_reader_page_size(rd);
		w->page_size = ps;
		w->capture_time = pc_snapshot_reader_capture_time(rd);
		w->modes[0] = pc_snapshot_reader_mincore_mode(rd);
		w->modes[1] = pc_snapshot_reader_cachestat_mode(rd);
		w->modes[2] = pc_snapshot_reader_nowait_mode(rd);
		w->root = xstrdup(pc_snapshot_reader_root(rd));
	} else {
		FUZZ_CHECK(!pc_snapshot_reader_page_size(rd) && !pc_snapshot_reader_root(rd));
	}
	for (size_t i = 0; ret == 0; i++) {
		struct walked_file *wf = NULL;
		size_t max = SIZE_MAX;

		f = NULL;
		ret = pc_snapshot_next_file(rd, &f);
		if (ret <= 0)
			break;
		FUZZ_CHECK(ret == 1);
		check_file(f, ps);
		w->runs_seen |= f->nruns > 0;
		if (mode == WALK_ALL) {
			if (w->nfiles == w->cap) {
				w->cap = w->cap ? 2 * w->cap : 8;
				w->files = xrealloc(w->files, w->cap * sizeof(*w->files));
			}
			wf = &w->files[w->nfiles++];
			memset(wf, 0, sizeof(*wf));
			wf->path = xstrdup(f->path);
			wf->meta = *f;
			wf->meta.path = NULL;
		} else if (i % 4 == 3) {
			ret = warm_runs(rd);
			continue;
		} else {
			max = i % 4 == 0 ? 0 : i % 4 == 1 ? 1 : SIZE_MAX;
		}
		ret = read_runs(rd, f, ps, max, wf);
	}
	if (ret < 0) {
		check_error(rd, ret, size);
		w->err_offset = pc_snapshot_reader_error_offset(rd);
	} else {
		struct pc_run run;

		FUZZ_CHECK(ret == 0 && !pc_snapshot_reader_error(rd));
		FUZZ_CHECK(pc_snapshot_next_file(rd, &f) == 0);
		FUZZ_CHECK(pc_snapshot_next_run(rd, &run) == 0);
	}
	w->ret = ret;
	pc_snapshot_reader_free(rd);
	close(fd);
}

/* Write what an accepted snapshot held with the writer, read that back, and
 * compare. Files whose paths pc_snapshot_path_check() refuses (the reader
 * hands them out, the writer must not take them) are left out. */
static void round_trip(const struct walked *in)
{
	struct pc_snapshot_info info = {
		.size = sizeof(info),
		.root = in->root[0] ? in->root : NULL,
		.capture_time_ns = in->capture_time,
		.page_size = in->page_size,
		.mincore_mode = in->modes[0],
		.cachestat_mode = in->modes[1],
		.nowait_mode = in->modes[2],
	};
	struct pc_snapshot_writer *wr;
	struct walked out;
	size_t j = 0, len;
	uint8_t *bytes;
	struct stat st;
	int fd = memfd_create("fuzz-round-trip", MFD_CLOEXEC);

	FUZZ_CHECK(fd >= 0);
	FUZZ_CHECK(pc_snapshot_writer_new(fd, &info, &wr) == 0);
	for (size_t i = 0; i < in->nfiles; i++) {
		const struct walked_file *wf = &in->files[i];
		int check = pc_snapshot_path_check(wf->path);
		struct pc_snapshot_file meta = wf->meta;

		meta.size = sizeof(meta);
		FUZZ_CHECK(pc_snapshot_write_runs(wr, wf->path, &meta, wf->runs, wf->nruns) == check);
	}
	FUZZ_CHECK(pc_snapshot_writer_finish(wr) == 0);
	pc_snapshot_writer_free(wr);

	FUZZ_CHECK(fstat(fd, &st) == 0);
	len = (size_t)st.st_size;
	bytes = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
	FUZZ_CHECK(bytes != MAP_FAILED);
	walk(bytes, len, WALK_ALL, &out);
	munmap(bytes, len);
	close(fd);

	FUZZ_CHECK(out.ret == 0);
	FUZZ_CHECK(out.page_size == in->page_size && !strcmp(out.root, in->root));
	FUZZ_CHECK(!memcmp(out.modes, in->modes, sizeof(in->modes)));
	FUZZ_CHECK(!in->capture_time || out.capture_time == in->capture_time);
	for (size_t i = 0; i < in->nfiles; i++) {
		const struct walked_file *a = &in->files[i], *b;

		if (pc_snapshot_path_check(a->path))
			continue;
		FUZZ_CHECK(j < out.nfiles);
		b = &out.files[j++];
		FUZZ_CHECK(!strcmp(a->path, b->path));
		FUZZ_CHECK(a->meta.file_size == b->meta.file_size);
		FUZZ_CHECK(a->meta.mtime_ns == b->meta.mtime_ns);
		FUZZ_CHECK(a->meta.dev == b->meta.dev && a->meta.ino == b->meta.ino);
		FUZZ_CHECK(a->meta.quality == b->meta.quality);
		FUZZ_CHECK(a->meta.nruns == b->meta.nruns && a->meta.npages == b->meta.npages);
		FUZZ_CHECK(a->nruns == b->nruns);
		FUZZ_CHECK(!a->nruns || !memcmp(a->runs, b->runs, a->nruns * sizeof(*a->runs)));
	}
	FUZZ_CHECK(j == out.nfiles);
	walked_free(&out);
}

int pc_fuzz_snapshot(const uint8_t *data, size_t size)
{
	struct walked as_is, fixed, skip;
	const uint8_t *best = data;
	uint8_t *copy;
	int changed, ret;

	walk(data, size, WALK_ALL, &as_is);
	ret = as_is.ret;
	changed = pc_fuzz_fix_crcs(data, size, &copy);
	FUZZ_CHECK(changed >= 0);
	if (changed == 0) {
		fixed = as_is;
	} else {
		walk(copy, size, WALK_ALL, &fixed);
		best = copy;
		/* the reader checks every record up to the end: a snapshot it
		 * accepted had no checksum to fix */
		FUZZ_CHECK(as_is.ret < 0);
	}
	/* skipping runs makes a difference only where there are some */
	if (fixed.runs_seen) {
		walk(best, size, WALK_SKIP, &skip);
		FUZZ_CHECK(skip.ret == fixed.ret && skip.err_offset == fixed.err_offset);
		walked_free(&skip);
	}
	if (fixed.ret == 0)
		round_trip(&fixed);
	if (changed)
		walked_free(&fixed);
	walked_free(&as_is);
	free(copy);
	return ret;
}

#ifndef PC_FUZZ_REPLAY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	pc_fuzz_snapshot(data, size);
	return 0;
}
#endif
