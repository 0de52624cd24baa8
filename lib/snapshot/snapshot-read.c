/* SPDX-License-Identifier: MIT */
/*
 * The snapshot reader: a streaming parser of untrusted input. It reads one
 * record at a time into a buffer of fixed size (a length past the format's
 * bound is refused before anything is read for it), verifies the record's
 * CRC32C, and only then decodes it with bounds-checked cursors. Errors are
 * sticky and carry the byte offset where they were found.
 */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pc-private.h"
#include "snapshot-codec.h"

#define PC_SNAP_REC_MAX (PC_SNAP_REC_HEAD + PC_SNAP_PAYLOAD_MAX + PC_SNAP_REC_TAIL)
#define PC_SNAP_IN_CAP (64 * 1024)

enum reader_state {
	RD_START,  /* nothing read yet */
	RD_FILES,  /* between files: an F or the E record comes next */
	RD_RUNS,   /* inside a file's runs */
	RD_END,    /* the end record was read and checked */
};

struct pc_snapshot_reader {
	int fd;
	enum reader_state state;
	int err;
	char msg[192];
	uint64_t err_offset;
	/* input */
	uint8_t *in;
	size_t in_pos, in_len;
	int eof;
	uint64_t offset;        /* stream bytes consumed */
	/* the current record, checksum verified */
	uint8_t *rec;
	uint8_t rec_type;
	uint64_t rec_offset;    /* where it starts */
	struct pc_cursor cur;   /* over its payload */
	/* header */
	int version;
	uint32_t page_size;
	uint64_t max_page;
	int64_t capture_time;
	int mincore_mode, cachestat_mode, nowait_mode;
	char root[PC_SNAP_PATH_MAX + 1];
	char generator[PC_SNAP_GENERATOR_MAX + 1];
	/* the current file */
	char path[PC_SNAP_PATH_MAX + 1];
	size_t path_len;
	struct pc_snapshot_file file;
	uint64_t runs_left, pages_seen, run_end;
	/* totals, checked against the end record */
	uint64_t nfiles, nruns, npages;
};

static int fail(struct pc_snapshot_reader *rd, int err, uint64_t offset, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int fail(struct pc_snapshot_reader *rd, int err, uint64_t offset, const char *fmt, ...)
{
	va_list ap;

	if (rd->err)
		return rd->err;
	rd->err = err;
	rd->err_offset = offset;
	va_start(ap, fmt);
	vsnprintf(rd->msg, sizeof(rd->msg), fmt, ap);
	va_end(ap);
	return err;
}

/* A decoding error at the cursor's position in the current record. */
static const char *type_name(uint8_t type);

static int fail_cursor(struct pc_snapshot_reader *rd, const char *field)
{
	return fail(rd, -EBADMSG, rd->rec_offset + PC_SNAP_REC_HEAD + rd->cur.pos,
		    "%s record: %s: %s", type_name(rd->rec_type), field,
		    rd->cur.what ? rd->cur.what : "invalid");
}

/* Up to n bytes of input into dst; fewer only at the end of the stream. */
static int input(struct pc_snapshot_reader *rd, uint8_t *dst, size_t n, size_t *got)
{
	*got = 0;
	while (*got < n) {
		size_t take;

		if (rd->in_pos == rd->in_len) {
			ssize_t r;

			if (rd->eof)
				break;
			r = read(rd->fd, rd->in, PC_SNAP_IN_CAP);
			if (r < 0) {
				if (errno == EINTR)
					continue;
				int err = pc_neg_errno();

				/* %m: errno's message, thread-safe */
				errno = -err;
				return fail(rd, err, rd->offset, "read error: %m");
			}
			if (r == 0) {
				rd->eof = 1;
				break;
			}
			rd->in_pos = 0;
			rd->in_len = (size_t)r;
		}
		take = rd->in_len - rd->in_pos;
		if (take > n - *got)
			take = n - *got;
		memcpy(dst + *got, rd->in + rd->in_pos, take);
		rd->in_pos += take;
		*got += take;
		rd->offset += take;
	}
	return 0;
}

static const char *type_name(uint8_t type)
{
	switch (type) {
	case PC_SNAP_REC_HEADER: return "header";
	case PC_SNAP_REC_FILE: return "file";
	case PC_SNAP_REC_RUNS: return "runs";
	case PC_SNAP_REC_END: return "end";
	}
	return NULL;
}

/* The next record into rd->rec, its checksum verified; the cursor is set
 * over its payload. */
static int read_record(struct pc_snapshot_reader *rd)
{
	size_t got;
	uint32_t len, crc;
	int ret;

	rd->rec_offset = rd->offset;
	ret = input(rd, rd->rec, PC_SNAP_REC_HEAD, &got);
	if (ret < 0)
		return ret;
	if (got == 0)
		return fail(rd, -EBADMSG, rd->offset, "truncated: the stream ends before the end record");
	if (got < PC_SNAP_REC_HEAD)
		return fail(rd, -EBADMSG, rd->offset,
			    "truncated: the stream ends inside a record header");
	rd->rec_type = rd->rec[0];
	if (!type_name(rd->rec_type))
		return fail(rd, -EBADMSG, rd->rec_offset, "unknown record type 0x%02x",
			    rd->rec_type);
	len = pc_get_le32(rd->rec + 1);
	if (len > PC_SNAP_PAYLOAD_MAX)
		return fail(rd, -EBADMSG, rd->rec_offset + 1,
			    "%s record: length %u exceeds the limit of %u bytes",
			    type_name(rd->rec_type), len, PC_SNAP_PAYLOAD_MAX);
	ret = input(rd, rd->rec + PC_SNAP_REC_HEAD, len + PC_SNAP_REC_TAIL, &got);
	if (ret < 0)
		return ret;
	if (got < len + PC_SNAP_REC_TAIL)
		return fail(rd, -EBADMSG, rd->offset,
			    "truncated: the stream ends inside a %s record of %u bytes at byte %llu",
			    type_name(rd->rec_type), len, (unsigned long long)rd->rec_offset);
	crc = pc_crc32c(0, rd->rec, PC_SNAP_REC_HEAD + len);
	if (crc != pc_get_le32(rd->rec + PC_SNAP_REC_HEAD + len))
		return fail(rd, -EBADMSG, rd->rec_offset, "%s record: checksum mismatch",
			    type_name(rd->rec_type));
	rd->cur = (struct pc_cursor){ .p = rd->rec + PC_SNAP_REC_HEAD, .len = len };
	return 0;
}

static int get_varint(struct pc_snapshot_reader *rd, const char *field, uint64_t *v)
{
	return pc_cursor_varint(&rd->cur, v) < 0 ? fail_cursor(rd, field) : 0;
}

/* A bounded run of bytes with no NUL, copied out as a C string. */
static int get_string(struct pc_snapshot_reader *rd, const char *field, uint64_t max, char *dst,
		      size_t *len)
{
	const uint8_t *bytes;
	uint64_t n;
	int ret = get_varint(rd, field, &n);

	if (ret < 0)
		return ret;
	if (n > max) {
		rd->cur.what = "too long";
		return fail_cursor(rd, field);
	}
	if (pc_cursor_bytes(&rd->cur, n, &bytes) < 0)
		return fail_cursor(rd, field);
	if (memchr(bytes, '\0', (size_t)n)) {
		rd->cur.pos -= (size_t)n;
		rd->cur.what = "contains a NUL byte";
		return fail_cursor(rd, field);
	}
	memcpy(dst, bytes, (size_t)n);
	dst[n] = '\0';
	if (len)
		*len = (size_t)n;
	return 0;
}

static int get_mode(struct pc_snapshot_reader *rd, const char *field, int *mode)
{
	uint64_t v;
	int ret = get_varint(rd, field, &v);

	if (ret < 0)
		return ret;
	if (v > INT_MAX) {
		rd->cur.what = "out of range";
		return fail_cursor(rd, field);
	}
	*mode = (int)v;
	return 0;
}

static int expect_consumed(struct pc_snapshot_reader *rd)
{
	if (pc_cursor_left(&rd->cur)) {
		rd->cur.what = "unexpected bytes";
		return fail_cursor(rd, "trailing data");
	}
	return 0;
}

PC_EXPORT int pc_snapshot_read_header(struct pc_snapshot_reader *rd)
{
	uint8_t pre[PC_SNAP_PREAMBLE_LEN];
	uint64_t ps, t;
	size_t got;
	int ret;

	if (!rd)
		return -EINVAL;
	if (rd->err)
		return rd->err;
	if (rd->state != RD_START)
		return 0;
	ret = input(rd, pre, sizeof(pre), &got);
	if (ret < 0)
		return ret;
	if (got < PC_SNAP_MAGIC_LEN || memcmp(pre, PC_SNAP_MAGIC, PC_SNAP_MAGIC_LEN)) {
		size_t n = got < PC_SNAP_MAGIC_LEN ? got : PC_SNAP_MAGIC_LEN;

		if (memcmp(pre, PC_SNAP_MAGIC, n) == 0)
			return fail(rd, -EBADMSG, got, "truncated: the stream ends inside the magic");
		return fail(rd, -EBADMSG, 0, "not a pagecache snapshot (bad magic)");
	}
	if (got < sizeof(pre))
		return fail(rd, -EBADMSG, got, "truncated: the stream ends inside the version");
	rd->version = pre[PC_SNAP_MAGIC_LEN] | pre[PC_SNAP_MAGIC_LEN + 1] << 8;
	if (rd->version != PC_SNAP_VERSION)
		return fail(rd, -EPROTONOSUPPORT, PC_SNAP_MAGIC_LEN,
			    "format version %d is not supported (this library reads %d)",
			    rd->version, PC_SNAP_VERSION);
	ret = read_record(rd);
	if (ret < 0)
		return ret;
	if (rd->rec_type != PC_SNAP_REC_HEADER)
		return fail(rd, -EBADMSG, rd->rec_offset, "expected the header record, found a %s record",
			    type_name(rd->rec_type));
	if ((ret = get_varint(rd, "page size", &ps)) < 0)
		return ret;
	if (ps < PC_SNAP_PAGE_SIZE_MIN || ps > PC_SNAP_PAGE_SIZE_MAX || (ps & (ps - 1))) {
		rd->cur.what = "not a power of two between 512 and 2^30";
		return fail_cursor(rd, "page size");
	}
	rd->page_size = (uint32_t)ps;
	rd->max_page = (uint64_t)INT64_MAX / ps;
	if ((ret = get_varint(rd, "capture time", &t)) < 0 ||
	    (ret = get_mode(rd, "mincore mode", &rd->mincore_mode)) < 0 ||
	    (ret = get_mode(rd, "cachestat mode", &rd->cachestat_mode)) < 0 ||
	    (ret = get_mode(rd, "nowait mode", &rd->nowait_mode)) < 0 ||
	    (ret = get_string(rd, "root", PC_SNAP_PATH_MAX, rd->root, NULL)) < 0 ||
	    (ret = get_string(rd, "generator", PC_SNAP_GENERATOR_MAX, rd->generator, NULL)) < 0)
		return ret;
	rd->capture_time = pc_unzigzag(t);
	if (rd->root[0] && rd->root[0] != '/')
		return fail(rd, -EBADMSG, rd->rec_offset, "header record: the root is not absolute");
	if ((ret = expect_consumed(rd)) < 0)
		return ret;
	rd->state = RD_FILES;
	return 0;
}

static int read_file_record(struct pc_snapshot_reader *rd)
{
	struct pc_snapshot_file *f = &rd->file;
	uint64_t shared, quality, mtime;
	size_t suffix;
	int ret;

	if ((ret = get_varint(rd, "path prefix", &shared)) < 0)
		return ret;
	if (shared > rd->path_len) {
		rd->cur.what = "longer than the previous path";
		return fail_cursor(rd, "path prefix");
	}
	ret = get_string(rd, "path", PC_SNAP_PATH_MAX - shared, rd->path + shared, &suffix);
	if (ret < 0)
		return ret;
	rd->path_len = (size_t)shared + suffix;
	if (!rd->path_len)
		return fail(rd, -EBADMSG, rd->rec_offset, "file record: empty path");
	memset(f, 0, sizeof(*f));
	f->size = sizeof(*f);
	f->path = rd->path;
	if ((ret = get_varint(rd, "size", &f->file_size)) < 0 ||
	    (ret = get_varint(rd, "mtime", &mtime)) < 0 ||
	    (ret = get_varint(rd, "dev", &f->dev)) < 0 ||
	    (ret = get_varint(rd, "ino", &f->ino)) < 0 ||
	    (ret = get_varint(rd, "quality", &quality)) < 0 ||
	    (ret = get_varint(rd, "run count", &f->nruns)) < 0 ||
	    (ret = get_varint(rd, "page count", &f->npages)) < 0)
		return ret;
	f->mtime_ns = pc_unzigzag(mtime);
	if (quality > PC_QUALITY_MAPPED)
		return fail(rd, -EBADMSG, rd->rec_offset, "file record: unknown quality %llu",
			    (unsigned long long)quality);
	f->quality = (int)quality;
	if ((f->quality == PC_QUALITY_UNKNOWN && f->nruns) || f->nruns > f->npages ||
	    (!f->nruns && f->npages) || f->npages > rd->max_page)
		return fail(rd, -EBADMSG, rd->rec_offset,
			    "file record: inconsistent counts (%llu runs, %llu pages, quality %s)",
			    (unsigned long long)f->nruns, (unsigned long long)f->npages,
			    pc_quality_name(f->quality));
	rd->runs_left = f->nruns;
	rd->pages_seen = 0;
	rd->run_end = 0;
	rd->nfiles++;
	if (!f->nruns) {
		if ((ret = expect_consumed(rd)) < 0)
			return ret;
		rd->state = RD_FILES;
	} else {
		rd->state = RD_RUNS;
	}
	return 1;
}

static int read_end_record(struct pc_snapshot_reader *rd)
{
	uint64_t nfiles, nruns, npages, offset;
	uint8_t extra;
	size_t got;
	int ret;

	if ((ret = get_varint(rd, "file count", &nfiles)) < 0 ||
	    (ret = get_varint(rd, "run count", &nruns)) < 0 ||
	    (ret = get_varint(rd, "page count", &npages)) < 0 ||
	    (ret = get_varint(rd, "offset", &offset)) < 0 || (ret = expect_consumed(rd)) < 0)
		return ret;
	if (nfiles != rd->nfiles || nruns != rd->nruns || npages != rd->npages ||
	    offset != rd->rec_offset)
		return fail(rd, -EBADMSG, rd->rec_offset,
			    "end record: totals do not match (recorded %llu files, %llu runs, "
			    "%llu pages at byte %llu; read %llu, %llu, %llu)",
			    (unsigned long long)nfiles, (unsigned long long)nruns,
			    (unsigned long long)npages, (unsigned long long)offset,
			    (unsigned long long)rd->nfiles, (unsigned long long)rd->nruns,
			    (unsigned long long)rd->npages);
	ret = input(rd, &extra, 1, &got);
	if (ret < 0)
		return ret;
	if (got)
		return fail(rd, -EBADMSG, rd->offset - 1, "data after the end record");
	rd->state = RD_END;
	return 0;
}

PC_EXPORT int pc_snapshot_next_run(struct pc_snapshot_reader *rd, struct pc_run *run)
{
	uint64_t gap, len, page;
	int ret;

	if (!rd || !run)
		return -EINVAL;
	if (rd->err)
		return rd->err;
	if (rd->state != RD_RUNS)
		return 0;
	if (!rd->runs_left) {
		if ((ret = expect_consumed(rd)) < 0)
			return ret;
		if (rd->pages_seen != rd->file.npages)
			return fail(rd, -EBADMSG, rd->rec_offset,
				    "runs of %s: %llu pages, the file record says %llu", rd->path,
				    (unsigned long long)rd->pages_seen,
				    (unsigned long long)rd->file.npages);
		rd->state = RD_FILES;
		return 0;
	}
	if (!pc_cursor_left(&rd->cur)) {
		ret = read_record(rd);
		if (ret < 0)
			return ret;
		if (rd->rec_type != PC_SNAP_REC_RUNS)
			return fail(rd, -EBADMSG, rd->rec_offset,
				    "a %s record where %llu more runs of %s were due",
				    type_name(rd->rec_type), (unsigned long long)rd->runs_left,
				    rd->path);
		if (!pc_cursor_left(&rd->cur))
			return fail(rd, -EBADMSG, rd->rec_offset, "runs record: empty");
	}
	if ((ret = get_varint(rd, "run gap", &gap)) < 0 ||
	    (ret = get_varint(rd, "run length", &len)) < 0)
		return ret;
	if (gap > rd->max_page - rd->run_end || len >= rd->max_page - rd->run_end - gap) {
		rd->cur.what = "the run ends past the largest file offset";
		return fail_cursor(rd, "run");
	}
	page = rd->run_end + gap;
	run->page = page;
	run->npages = len + 1;
	rd->run_end = page + len + 1;
	rd->pages_seen += len + 1;
	if (rd->pages_seen > rd->file.npages) {
		rd->cur.what = "more pages than the file record says";
		return fail_cursor(rd, "run");
	}
	rd->runs_left--;
	rd->nruns++;
	rd->npages += len + 1;
	return 1;
}

PC_EXPORT int pc_snapshot_next_file(struct pc_snapshot_reader *rd,
				    const struct pc_snapshot_file **file)
{
	struct pc_run run;
	int ret;

	if (!rd || !file)
		return -EINVAL;
	ret = pc_snapshot_read_header(rd);
	if (ret < 0)
		return ret;
	while (rd->state == RD_RUNS)
		if ((ret = pc_snapshot_next_run(rd, &run)) < 0)
			return ret;
	if (rd->state == RD_END)
		return 0;
	ret = read_record(rd);
	if (ret < 0)
		return ret;
	switch (rd->rec_type) {
	case PC_SNAP_REC_FILE:
		ret = read_file_record(rd);
		if (ret > 0)
			*file = &rd->file;
		return ret;
	case PC_SNAP_REC_END:
		return read_end_record(rd);
	default:
		return fail(rd, -EBADMSG, rd->rec_offset, "a %s record where a file was due",
			    type_name(rd->rec_type));
	}
}

PC_EXPORT int pc_snapshot_reader_new(int fd, struct pc_snapshot_reader **out)
{
	struct pc_snapshot_reader *rd;

	if (fd < 0 || !out)
		return -EINVAL;
	rd = calloc(1, sizeof(*rd));
	if (!rd)
		return -ENOMEM;
	rd->in = malloc(PC_SNAP_IN_CAP);
	rd->rec = malloc(PC_SNAP_REC_MAX);
	if (!rd->in || !rd->rec) {
		pc_snapshot_reader_free(rd);
		return -ENOMEM;
	}
	rd->fd = fd;
	*out = rd;
	return 0;
}

PC_EXPORT void pc_snapshot_reader_free(struct pc_snapshot_reader *rd)
{
	if (!rd)
		return;
	free(rd->in);
	free(rd->rec);
	free(rd);
}

PC_EXPORT const char *pc_snapshot_reader_error(const struct pc_snapshot_reader *rd)
{
	return rd && rd->err ? rd->msg : NULL;
}

PC_EXPORT uint64_t pc_snapshot_reader_error_offset(const struct pc_snapshot_reader *rd)
{
	return rd ? rd->err_offset : 0;
}

static int header_read(const struct pc_snapshot_reader *rd)
{
	return rd && rd->state != RD_START;
}

PC_EXPORT int pc_snapshot_reader_version(const struct pc_snapshot_reader *rd)
{
	return header_read(rd) ? rd->version : 0;
}

PC_EXPORT uint32_t pc_snapshot_reader_page_size(const struct pc_snapshot_reader *rd)
{
	return header_read(rd) ? rd->page_size : 0;
}

PC_EXPORT int64_t pc_snapshot_reader_capture_time(const struct pc_snapshot_reader *rd)
{
	return header_read(rd) ? rd->capture_time : 0;
}

PC_EXPORT int pc_snapshot_reader_mincore_mode(const struct pc_snapshot_reader *rd)
{
	return header_read(rd) ? rd->mincore_mode : 0;
}

PC_EXPORT int pc_snapshot_reader_cachestat_mode(const struct pc_snapshot_reader *rd)
{
	return header_read(rd) ? rd->cachestat_mode : 0;
}

PC_EXPORT int pc_snapshot_reader_nowait_mode(const struct pc_snapshot_reader *rd)
{
	return header_read(rd) ? rd->nowait_mode : 0;
}

PC_EXPORT const char *pc_snapshot_reader_root(const struct pc_snapshot_reader *rd)
{
	return header_read(rd) ? rd->root : NULL;
}

PC_EXPORT const char *pc_snapshot_reader_generator(const struct pc_snapshot_reader *rd)
{
	return header_read(rd) ? rd->generator : NULL;
}
