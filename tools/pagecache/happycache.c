/* SPDX-License-Identifier: MIT */
/*
 * Netflix happycache's dump format, read and written: gzip-compressed text,
 * a path line, then one line per resident page holding the difference from
 * the previous page number (the first one absolute). After 2^20 pages of a
 * file the path line is repeated and the numbers start again from an
 * absolute page. Path lines are the lines that are not a plain decimal
 * number; they start with "./" or "/".
 *
 * The reader treats its input as hostile: lines are bounded (HC_LINE_MAX),
 * numbers are checked for overflow, pages must ascend and stay below
 * INT64_MAX bytes, a number before any path is an error, and every error
 * names the line and its byte offset in the decompressed text (gzip's own
 * errors: the compressed offset). The gzip layer is strict: one or more
 * whole gzip members and nothing else (zlib's gzread() would take a file
 * that is not gzip as plain text, and drop without a word whatever follows
 * a member that is not another member). Memory: fixed buffers.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "snapcli.h"

/* ---- a strict gunzip over an fd ---- */

struct hc_gunzip {
	int fd;
	z_stream z;
	bool z_ready;
	unsigned char in[HC_BUF];
	uint64_t in_total;         /* compressed bytes read from fd */
	uint64_t members;          /* members ended */
	bool member_done;          /* the last inflate() ended a member */
	bool eof;
	int err;
	char msg[128];
	uint64_t err_offset;
};

static int gunzip_fail(struct hc_gunzip *g, const char *what)
{
	/* the compressed offset of the byte inflate() stopped at */
	g->err_offset = g->in_total - g->z.avail_in;
	snprintf(g->msg, sizeof(g->msg), "gzip: %s (at compressed byte %llu)", what,
		 (unsigned long long)g->err_offset);
	return g->err = -EBADMSG;
}

int hc_gunzip_new(int fd, struct hc_gunzip **out)
{
	struct hc_gunzip *g = calloc(1, sizeof(*g));

	if (!g)
		return -ENOMEM;
	g->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (g->fd < 0) {
		int err = -errno;

		free(g);
		return err;
	}
	/* 16 + 15: gzip members only, the largest window */
	if (inflateInit2(&g->z, 16 + MAX_WBITS) != Z_OK) {
		close(g->fd);
		free(g);
		return -ENOMEM;
	}
	g->z_ready = true;
	*out = g;
	return 0;
}

void hc_gunzip_free(struct hc_gunzip *g)
{
	if (!g)
		return;
	if (g->z_ready)
		inflateEnd(&g->z);
	close(g->fd);
	free(g);
}

const char *hc_gunzip_error(const struct hc_gunzip *g, uint64_t *offset)
{
	if (g->err != -EBADMSG)
		return NULL;
	*offset = g->err_offset;
	return g->msg;
}

ssize_t hc_gunzip_read(struct hc_gunzip *g, void *buf, size_t n)
{
	if (g->err)
		return g->err;
	if (g->eof || n == 0)
		return 0;
	if (n > UINT_MAX)
		n = UINT_MAX;
	g->z.next_out = buf;
	g->z.avail_out = (uInt)n;
	while (g->z.avail_out == n) {
		int ret;

		if (g->z.avail_in == 0) {
			ssize_t got = read(g->fd, g->in, sizeof(g->in));

			if (got < 0 && errno == EINTR)
				continue;
			if (got < 0)
				return g->err = -errno;
			if (got == 0) {
				if (g->member_done) {
					g->eof = true;
					return 0;
				}
				return gunzip_fail(g, g->in_total == 0 ? "the file is empty, not gzip"
						   : "the stream is cut short");
			}
			g->in_total += (uint64_t)got;
			g->z.next_in = g->in;
			g->z.avail_in = (uInt)got;
		}
		if (g->member_done) {
			/* more bytes after a member: another member, or an error */
			if (inflateReset(&g->z) != Z_OK)
				return gunzip_fail(g, "inflateReset failed");
			g->member_done = false;
		}
		ret = inflate(&g->z, Z_NO_FLUSH);
		if (ret == Z_STREAM_END) {
			g->member_done = true;
			g->members++;
		} else if (ret == Z_DATA_ERROR && g->members > 0 &&
			   g->z.total_in <= 2 && g->z.total_out == 0) {
			return gunzip_fail(g, "bytes after the last gzip member that are not another member");
		} else if (ret == Z_DATA_ERROR) {
			return gunzip_fail(g, g->z.msg ? g->z.msg : "corrupt stream");
		} else if (ret == Z_MEM_ERROR) {
			return g->err = -ENOMEM;
		} else if (ret != Z_OK && ret != Z_BUF_ERROR) {
			return gunzip_fail(g, g->z.msg ? g->z.msg : "corrupt stream");
		}
	}
	return (ssize_t)(n - g->z.avail_out);
}

/* ---- the reader ---- */

enum { IT_END, IT_PAGE, IT_PATH };

struct item {
	int kind;
	uint64_t page;                   /* IT_PAGE: absolute */
	char path[HC_LINE_MAX + 1];      /* IT_PATH */
};

struct hc_reader {
	struct hc_gunzip *gz;
	char buf[HC_BUF];
	size_t pos, len;
	uint64_t offset;           /* decompressed offset of buf[pos] */
	uint64_t line_no;          /* lines read so far */
	bool eof;
	char line[HC_LINE_MAX + 1];
	size_t line_len;
	uint64_t line_offset;
	/* line level: page numbers */
	bool seen_path;
	bool after_path;           /* the next number is absolute */
	uint64_t prev;
	uint64_t max_page;
	/* items pushed back: a stack of two */
	struct item back[2];
	int nback;
	struct item it;            /* the item read last */
	/* the current file */
	char path[HC_LINE_MAX + 1];
	uint64_t last;             /* last page handed out in a run of it */
	bool have_last;
	struct pc_run run;         /* a run being built */
	bool have_run;
	bool file_done;
	/* errors */
	int err;
	char msg[160];
	uint64_t err_offset;
};

static int fail(struct hc_reader *r, uint64_t offset, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct hc_reader *r, uint64_t offset, const char *fmt, ...)
{
	va_list ap;

	if (r->err)
		return r->err;
	va_start(ap, fmt);
	vsnprintf(r->msg, sizeof(r->msg), fmt, ap);
	va_end(ap);
	r->err_offset = offset;
	r->err = -EBADMSG;
	return r->err;
}

int hc_reader_new(int fd, struct hc_reader **out)
{
	struct hc_reader *r = calloc(1, sizeof(*r));
	int ret;

	if (!r)
		return -ENOMEM;
	ret = hc_gunzip_new(fd, &r->gz);
	if (ret < 0) {
		free(r);
		return ret;
	}
	r->max_page = (uint64_t)INT64_MAX / (uint64_t)pc_page_size() - 1;
	r->file_done = true;
	*out = r;
	return 0;
}

void hc_reader_free(struct hc_reader *r)
{
	if (!r)
		return;
	hc_gunzip_free(r->gz);
	free(r);
}

const char *hc_reader_error(const struct hc_reader *r, uint64_t *offset)
{
	if (!r->err || r->err != -EBADMSG)
		return NULL;
	*offset = r->err_offset;
	return r->msg;
}

static int fill(struct hc_reader *r)
{
	ssize_t n;

	if (r->eof)
		return 0;
	n = hc_gunzip_read(r->gz, r->buf, HC_BUF);
	if (n == -EBADMSG) {
		uint64_t off = 0;
		const char *m = hc_gunzip_error(r->gz, &off);

		return fail(r, off, "%s", m);
	}
	if (n < 0)
		return r->err = (int)n;
	if (n == 0) {
		r->eof = true;
		return 0;
	}
	r->pos = 0;
	r->len = (size_t)n;
	return (int)n;
}

/* The next line into r->line (without its newline): 1, 0 at the end. */
static int read_line(struct hc_reader *r)
{
	r->line_len = 0;
	r->line_offset = r->offset;
	for (;;) {
		char *nl;
		size_t take;

		if (r->pos == r->len) {
			int ret = fill(r);

			if (ret < 0)
				return ret;
			if (ret == 0) {
				if (r->line_len == 0)
					return 0;
				break; /* a last line without its newline */
			}
		}
		nl = memchr(r->buf + r->pos, '\n', r->len - r->pos);
		take = nl ? (size_t)(nl - (r->buf + r->pos)) : r->len - r->pos;
		if (r->line_len + take > HC_LINE_MAX)
			return fail(r, r->line_offset,
				    "line %llu is longer than %d bytes",
				    (unsigned long long)r->line_no + 1, HC_LINE_MAX);
		memcpy(r->line + r->line_len, r->buf + r->pos, take);
		r->line_len += take;
		r->pos += take;
		r->offset += take;
		if (nl) {
			r->pos++;
			r->offset++;
			break;
		}
	}
	r->line[r->line_len] = '\0';
	r->line_no++;
	if (memchr(r->line, '\0', r->line_len))
		return fail(r, r->line_offset, "line %llu holds a NUL byte",
			    (unsigned long long)r->line_no);
	return 1;
}

static bool plain_decimal(const char *s, size_t len)
{
	if (len == 0)
		return false;
	for (size_t i = 0; i < len; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

static int parse_number(struct hc_reader *r, uint64_t *v)
{
	uint64_t x = 0;

	for (size_t i = 0; i < r->line_len; i++) {
		unsigned int d = (unsigned int)(r->line[i] - '0');

		if (x > (UINT64_MAX - d) / 10)
			return fail(r, r->line_offset, "line %llu: number out of range",
				    (unsigned long long)r->line_no);
		x = x * 10 + d;
	}
	*v = x;
	return 0;
}

/* The next item of the input, from the lines: a path, or a page number
 * made absolute. */
static int read_item(struct hc_reader *r, struct item *it)
{
	for (;;) {
		uint64_t v = 0;
		int ret = read_line(r);

		if (ret < 0)
			return ret;
		if (ret == 0) {
			it->kind = IT_END;
			return 0;
		}
		if (r->line_len == 0)
			continue; /* blank lines carry nothing */
		if (!plain_decimal(r->line, r->line_len)) {
			if (!(r->line_len >= 2 && r->line[0] == '.' && r->line[1] == '/') &&
			    r->line[0] != '/')
				return fail(r, r->line_offset,
					    "line %llu is neither a page number nor a path "
					    "starting with \"./\" or \"/\"",
					    (unsigned long long)r->line_no);
			it->kind = IT_PATH;
			memcpy(it->path, r->line, r->line_len + 1);
			r->seen_path = true;
			r->after_path = true;
			return 0;
		}
		if (!r->seen_path)
			return fail(r, r->line_offset, "line %llu: a page number before any path",
				    (unsigned long long)r->line_no);
		ret = parse_number(r, &v);
		if (ret < 0)
			return ret;
		if (r->after_path) {
			r->after_path = false;
		} else {
			if (v == 0)
				return fail(r, r->line_offset,
					    "line %llu: a page difference of 0 (pages must ascend)",
					    (unsigned long long)r->line_no);
			if (v > r->max_page || r->prev > r->max_page - v)
				return fail(r, r->line_offset, "line %llu: page number out of range",
					    (unsigned long long)r->line_no);
			v += r->prev;
		}
		if (v > r->max_page)
			return fail(r, r->line_offset, "line %llu: page number out of range",
				    (unsigned long long)r->line_no);
		r->prev = v;
		it->kind = IT_PAGE;
		it->page = v;
		return 0;
	}
}

/* The next item into r->it (pushed back ones first). */
static int get_item(struct hc_reader *r)
{
	if (r->err)
		return r->err;
	if (r->nback) {
		r->it = r->back[--r->nback];
		return 0;
	}
	return read_item(r, &r->it);
}

static void unget_item(struct hc_reader *r, const struct item *it)
{
	r->back[r->nback++] = *it;
}

int hc_next_file(struct hc_reader *r, const char **path)
{
	int ret;

	/* what is left of the current file is skipped, a run being built
	 * with it (else hc_next_run() handed it out after the end) */
	r->have_run = false;
	r->have_last = false;
	for (;;) {
		ret = get_item(r);
		if (ret < 0)
			return ret;
		if (r->it.kind == IT_END) {
			r->file_done = true;
			return 0;
		}
		if (r->it.kind == IT_PATH)
			break;
		/* pages of the current file that were not asked for */
	}
	memcpy(r->path, r->it.path, strlen(r->it.path) + 1);
	r->file_done = false;
	*path = r->path;
	return 1;
}

/* Handle a path line met inside a file: 1 when it continues this file
 * (a chunk whose pages carry on ascending), 0 when the file ends there. */
static int same_file_goes_on(struct hc_reader *r)
{
	struct item path = r->it;
	int ret;

	if (strcmp(path.path, r->path) != 0) {
		unget_item(r, &path);
		return 0;
	}
	ret = get_item(r);
	if (ret < 0)
		return ret;
	if (r->it.kind == IT_PAGE && (!r->have_last || r->it.page > r->last)) {
		unget_item(r, &r->it);
		return 1;
	}
	/* a chunk that starts over (or is empty) is another entry */
	unget_item(r, &r->it);
	unget_item(r, &path);
	return 0;
}

int hc_next_run(struct hc_reader *r, struct pc_run *run)
{
	int ret;

	if (r->err)
		return r->err; /* sticky, also after hc_next_file() failed */
	while (!r->file_done) {
		ret = get_item(r);
		if (ret < 0)
			return ret;
		if (r->it.kind == IT_PATH) {
			ret = same_file_goes_on(r);
			if (ret < 0)
				return ret;
			if (ret)
				continue;
			r->file_done = true;
			break;
		}
		if (r->it.kind == IT_END) {
			unget_item(r, &r->it);
			r->file_done = true;
			break;
		}
		/* a page: pages of one chunk ascend (read_item); across chunks
		 * same_file_goes_on() checked it */
		r->last = r->it.page;
		r->have_last = true;
		if (r->have_run && r->it.page == r->run.page + r->run.npages) {
			r->run.npages++;
			continue;
		}
		if (r->have_run) {
			*run = r->run;
			r->run = (struct pc_run){ r->it.page, 1 };
			return 1;
		}
		r->run = (struct pc_run){ r->it.page, 1 };
		r->have_run = true;
	}
	if (r->have_run) {
		*run = r->run;
		r->have_run = false;
		return 1;
	}
	return 0;
}

/* ---- the writer ---- */

struct hc_writer {
	gzFile gz;
	int err;
	/* the file being written (hc_write_file()), until its next */
	const char *path;
	bool path_written;
	uint64_t in_chunk, prev;
	char line[HC_LINE_MAX + 8];
};

int hc_writer_new(int fd, struct hc_writer **out)
{
	struct hc_writer *w = calloc(1, sizeof(*w));
	int dfd;

	if (!w)
		return -ENOMEM;
	dfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (dfd < 0) {
		int err = -errno;

		free(w);
		return err;
	}
	w->gz = gzdopen(dfd, "wb");
	if (!w->gz) {
		close(dfd);
		free(w);
		return -ENOMEM;
	}
	gzbuffer(w->gz, HC_BUF);
	*out = w;
	return 0;
}

static int put(struct hc_writer *w, const char *s, size_t n)
{
	if (w->err)
		return w->err;
	errno = 0;
	if (n && gzwrite(w->gz, s, (unsigned int)n) != (int)n) {
		/* Z_ERRNO: the write's own errno (ENOSPC, EPIPE ...) */
		int e = errno, zerr;

		gzerror(w->gz, &zerr);
		w->err = zerr == Z_ERRNO ? (e ? -e : -EIO) : -ENOMEM;
	}
	return w->err;
}

static int put_path(struct hc_writer *w, const char *relpath)
{
	int ret = put(w, "./", 2);

	if (ret == 0)
		ret = put(w, relpath, strlen(relpath));
	if (ret == 0)
		ret = put(w, "\n", 1);
	return ret;
}

int hc_write_file(struct hc_writer *w, const char *relpath)
{
	w->path = NULL;
	if (strchr(relpath, '\n') || !*relpath)
		return -EINVAL; /* a newline cannot be written in this format */
	/* nor a line the reader refuses: "./" and the path within HC_LINE_MAX
	 * (a walk's relative paths may be longer than PATH_MAX) */
	if (strlen(relpath) > PC_SNAPSHOT_PATH_MAX)
		return -ENAMETOOLONG;
	w->path = relpath;
	w->path_written = false;
	w->in_chunk = w->prev = 0;
	return w->err;
}

int hc_write_run(struct hc_writer *w, const struct pc_run *run)
{
	char num[24];
	int ret = w->err;

	if (!w->path)
		return -EINVAL;
	if (ret == 0 && !w->path_written) {
		ret = put_path(w, w->path);
		w->path_written = true;
	}
	for (uint64_t p = run->page; p < run->page + run->npages && ret == 0; p++) {
		int len;

		if (w->in_chunk == HC_CHUNK_PAGES) {
			ret = put_path(w, w->path);
			w->in_chunk = 0;
		}
		/* the first page of a chunk absolute, then differences */
		len = snprintf(num, sizeof(num), "%llu\n",
			       (unsigned long long)(w->in_chunk ? p - w->prev : p));
		if (ret == 0)
			ret = put(w, num, (size_t)len);
		w->prev = p;
		w->in_chunk++;
	}
	return ret;
}

int hc_write_runs(struct hc_writer *w, const char *relpath, const struct pc_run *runs,
		  size_t n)
{
	int ret = hc_write_file(w, relpath);

	for (size_t i = 0; i < n && ret == 0; i++)
		ret = hc_write_run(w, &runs[i]);
	w->path = NULL;
	return ret;
}

int hc_writer_finish(struct hc_writer *w)
{
	int ret = w->err, z, e;

	errno = 0;
	z = gzclose_w(w->gz);
	e = errno;
	w->gz = NULL;
	if (ret == 0 && z != Z_OK)
		ret = z == Z_ERRNO ? (e ? -e : -EIO) : -ENOMEM;
	w->err = ret ? ret : -EALREADY;
	return ret;
}

void hc_writer_free(struct hc_writer *w)
{
	if (!w)
		return;
	if (w->gz)
		gzclose_w(w->gz);
	free(w);
}
