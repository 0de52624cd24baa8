/* SPDX-License-Identifier: MIT */
/*
 * fuzz-happycache: the happycache-format reader (tools/pagecache/happycache.c)
 * on hostile input. The reader takes an fd, so the file goes into a memfd.
 * The first input byte says how the rest reaches the reader:
 *   even  the rest is the file as it is: the gzip layer (headers, CRC and
 *         length trailers, truncation, concatenated members, garbage after
 *         them, files that are not gzip at all: all refused but members)
 *   odd   the rest is the text, gzip-compressed here in memory, so that
 *         mutations reach the line parser (random bytes almost never
 *         inflate); with bit 1 set too, lines without pages (paths of
 *         "./xxx...") go first so that the text starts (byte >> 2) bytes
 *         before the reader's HC_BUF boundary and its first lines
 *         straddle two reads.
 *
 * The reader's answer is checked against an independent reading of the
 * format (tools/pagecache/snapcli.h, issue 6): lines split at '\n' (a last
 * one without it counts), none longer than HC_LINE_MAX or holding a NUL;
 * blank lines carry nothing; a plain decimal number is a page, absolute
 * after a path line, else the difference (> 0) from the previous page, and
 * no page past INT64_MAX bytes; any other line is a path and starts with
 * "./" or "/"; a number before any path is an error. A path line equal to
 * the current file's continues it when the next item is a page above its
 * last one (a 2^20-page chunk), otherwise it starts another file.
 *
 *   - The text the reader saw (ours, or for raw input the same
 *     hc_gunzip_read() calls replayed) parsed by the reference gives the
 *     same files and runs, or the same error: -EBADMSG, at the same byte
 *     offset of the text, naming the same line and the same reason. Raw
 *     input that the gunzip refuses ends in -EBADMSG with a "gzip:"
 *     message unless a line read before that was wrong. Raw input that is
 *     refused before any text (not gzip) never reads as a file. Nothing else (-EIO, -ENOMEM) on a memfd.
 *   - Always: paths as the format has them (starting "./" or "/", at most
 *     HC_LINE_MAX bytes, no newline); runs non-empty, ascending with a gap
 *     between them (consecutive pages merge), ending within INT64_MAX
 *     bytes; errors sticky; nothing after the end.
 *   - A second walk that skips runs (none, one or all of each file) ends
 *     with the same answer at the same offset.
 *   - An accepted input written again with hc_write_runs() (-EINVAL and
 *     -ENAMETOOLONG exactly for the paths it must refuse) reads back as
 *     the same pages per path.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "snapcli.h"
#include "fuzz.h"

/* Raw input: the text replayed for the reference up to this many bytes
 * (libFuzzer's inputs inflate to a few MB at most). */
#define RAW_TEXT_MAX (32u << 20)
/* Accepted inputs with up to this many pages are written back. */
#define ROUND_TRIP_PAGES (UINT64_C(1) << 21)

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	FUZZ_CHECK(p);
	return p;
}

/* ---- files and runs, as the reader or the reference sees them ---- */

struct entry {
	char *path;
	size_t len;
	struct pc_run *runs;
	size_t nruns, cap;
	bool has_last;
	uint64_t last;             /* the last page */
};

struct entries {
	struct entry *e;
	size_t n, cap;
	uint64_t pages;
};

static struct entry *entry_add(struct entries *es, const char *path, size_t len)
{
	struct entry *e;

	if (es->n == es->cap) {
		es->cap = es->cap ? 2 * es->cap : 8;
		es->e = xrealloc(es->e, es->cap * sizeof(*es->e));
	}
	e = &es->e[es->n++];
	memset(e, 0, sizeof(*e));
	e->path = xrealloc(NULL, len + 1);
	memcpy(e->path, path, len);
	e->path[len] = '\0';
	e->len = len;
	return e;
}

/* Append a run, merging it with the last one when they meet. */
static void entry_run(struct entry *e, uint64_t page, uint64_t npages)
{
	struct pc_run *last = e->nruns ? &e->runs[e->nruns - 1] : NULL;

	if (last && last->page + last->npages == page) {
		last->npages += npages;
	} else {
		if (e->nruns == e->cap) {
			e->cap = e->cap ? 2 * e->cap : 4;
			e->runs = xrealloc(e->runs, e->cap * sizeof(*e->runs));
		}
		e->runs[e->nruns++] = (struct pc_run){ page, npages };
	}
	e->has_last = true;
	e->last = page + npages - 1;
}

static void entries_free(struct entries *es)
{
	for (size_t i = 0; i < es->n; i++) {
		free(es->e[i].path);
		free(es->e[i].runs);
	}
	free(es->e);
	memset(es, 0, sizeof(*es));
}

static bool same_runs(const struct entry *a, const struct entry *b, size_t n)
{
	return !n || !memcmp(a->runs, b->runs, n * sizeof(*a->runs));
}

static bool same_entry(const struct entry *a, const struct entry *b)
{
	return a->len == b->len && !memcmp(a->path, b->path, a->len) && a->nruns == b->nruns &&
	       same_runs(a, b, a->nruns);
}

/* ---- the reference: the format as its description reads ---- */

enum ref_err {
	REF_OK, REF_TOO_LONG, REF_NUL, REF_NOT_PATH, REF_NO_PATH, REF_RANGE, REF_ZERO,
};

/* What the reader's message says for each (it names the line first). */
static const char *const ref_reason[] = {
	[REF_TOO_LONG] = "longer than",
	[REF_NUL] = "NUL byte",
	[REF_NOT_PATH] = "neither a page number nor a path",
	[REF_NO_PATH] = "before any path",
	[REF_RANGE] = "out of range",
	[REF_ZERO] = "difference of 0",
};

struct ref_item {
	bool is_path;
	uint64_t page;
	const char *path;          /* into the text */
	size_t len;
};

struct ref {
	enum ref_err err;
	uint64_t err_offset, err_line;
	bool err_certain;          /* the reader must have met it: the line is
				      whole, or already too long */
	struct ref_item *items;
	size_t nitems, cap;
	struct entries files;
};

static void ref_push(struct ref *r, struct ref_item it)
{
	if (r->nitems == r->cap) {
		r->cap = r->cap ? 2 * r->cap : 64;
		r->items = xrealloc(r->items, r->cap * sizeof(*r->items));
	}
	r->items[r->nitems++] = it;
}

static void ref_lines(struct ref *r, const char *t, size_t len, uint64_t max_page)
{
	bool seen_path = false, after_path = false;
	uint64_t line = 0, prev = 0;

	for (size_t pos = 0; pos < len && r->err == REF_OK;) {
		const char *nl = memchr(t + pos, '\n', len - pos);
		size_t end = nl ? (size_t)(nl - t) : len, n = end - pos;
		const char *s = t + pos;
		enum ref_err err = REF_OK;
		bool digits = n > 0;

		line++;
		for (size_t i = 0; i < n && digits; i++)
			digits = s[i] >= '0' && s[i] <= '9';
		if (n > HC_LINE_MAX) {
			err = REF_TOO_LONG;
		} else if (memchr(s, '\0', n)) {
			err = REF_NUL;
		} else if (n == 0) {
			/* a blank line */
		} else if (!digits) {
			if ((n < 2 || s[0] != '.' || s[1] != '/') && s[0] != '/')
				err = REF_NOT_PATH;
			else
				ref_push(r, (struct ref_item){ .is_path = true, .path = s, .len = n });
			seen_path = after_path = true;
		} else if (!seen_path) {
			err = REF_NO_PATH;
		} else {
			unsigned __int128 v = 0;

			for (size_t i = 0; i < n && v <= UINT64_MAX; i++)
				v = v * 10 + (unsigned int)(s[i] - '0');
			if (v > UINT64_MAX)
				err = REF_RANGE;
			else if (!after_path && v == 0)
				err = REF_ZERO;
			else if ((after_path ? 0 : prev) + v > max_page)
				err = REF_RANGE;
			if (err == REF_OK) {
				prev = (uint64_t)((after_path ? 0 : prev) + v);
				after_path = false;
				ref_push(r, (struct ref_item){ .page = prev });
			}
		}
		if (err != REF_OK) {
			r->err = err;
			r->err_offset = pos;
			r->err_line = line;
			r->err_certain = nl || err == REF_TOO_LONG;
		}
		pos = nl ? end + 1 : len;
	}
}

/* Files from the items: a path line equal to the current file's path goes
 * on with it when the next item is a page above the file's last one. */
static void ref_files(struct ref *r)
{
	struct entry *cur = NULL;

	for (size_t i = 0; i < r->nitems; i++) {
		const struct ref_item *it = &r->items[i];

		if (!it->is_path) {
			FUZZ_CHECK(cur);
			FUZZ_CHECK(!cur->has_last || it->page > cur->last);
			entry_run(cur, it->page, 1);
			r->files.pages++;
			continue;
		}
		if (cur && cur->len == it->len && !memcmp(cur->path, it->path, it->len) &&
		    i + 1 < r->nitems && !r->items[i + 1].is_path &&
		    (!cur->has_last || r->items[i + 1].page > cur->last))
			continue;
		cur = entry_add(&r->files, it->path, it->len);
	}
}

static void ref_parse(struct ref *r, const char *t, size_t len, uint64_t max_page)
{
	memset(r, 0, sizeof(*r));
	ref_lines(r, t, len, max_page);
	ref_files(r);
}

static void ref_free(struct ref *r)
{
	free(r->items);
	entries_free(&r->files);
}

/* ---- the reader ---- */

enum walk_mode {
	WALK_ALL,   /* every run of every file */
	WALK_SKIP,  /* none, one or all runs of each file, in turn */
};

struct walked {
	int ret;
	char msg[256];             /* hc_reader_error(), "" when none */
	uint64_t offset;
	bool runs_seen;
	struct entries files;
};

static void check_path(const char *path)
{
	size_t len = strlen(path);

	FUZZ_CHECK(len >= 1 && len <= HC_LINE_MAX);
	FUZZ_CHECK(path[0] == '/' || (len >= 2 && path[0] == '.' && path[1] == '/'));
	FUZZ_CHECK(!strchr(path, '\n'));
}

/* Up to max runs of the current file into e; 0 or the reader's -errno. */
static int read_runs(struct hc_reader *r, size_t max, uint64_t max_page, struct entry *e,
		     struct walked *w)
{
	uint64_t end = 0;
	struct pc_run run;
	size_t n = 0;
	int ret;

	while (n < max) {
		ret = hc_next_run(r, &run);
		if (ret <= 0) {
			if (ret == 0)
				FUZZ_CHECK(hc_next_run(r, &run) == 0);
			return ret;
		}
		FUZZ_CHECK(ret == 1);
		FUZZ_CHECK(run.npages >= 1);
		FUZZ_CHECK(!n || run.page > end); /* a gap: consecutive pages merge */
		FUZZ_CHECK(run.page <= max_page && run.npages <= max_page - run.page + 1);
		end = run.page + run.npages;
		n++;
		w->runs_seen = true;
		w->files.pages += run.npages;
		entry_run(e, run.page, run.npages);
	}
	return 0;
}

static void walk(int fd, enum walk_mode mode, uint64_t max_page, struct walked *w)
{
	struct hc_reader *r;
	const char *msg;
	int ret;

	memset(w, 0, sizeof(*w));
	FUZZ_CHECK(lseek(fd, 0, SEEK_SET) == 0);
	FUZZ_CHECK(hc_reader_new(fd, &r) == 0);
	for (size_t i = 0;; i++) {
		const char *path = NULL;
		struct entry *e;

		ret = hc_next_file(r, &path);
		if (ret <= 0)
			break;
		FUZZ_CHECK(ret == 1 && path);
		check_path(path);
		e = entry_add(&w->files, path, strlen(path));
		ret = read_runs(r, mode == WALK_ALL || i % 3 == 2 ? SIZE_MAX : i % 3, max_page,
				e, w);
		if (ret < 0)
			break;
	}
	w->ret = ret;
	if (ret == 0) {
		const char *path = NULL;
		struct pc_run run;

		FUZZ_CHECK(hc_next_file(r, &path) == 0 && hc_next_run(r, &run) == 0);
		FUZZ_CHECK(!hc_reader_error(r, &w->offset));
	} else {
		const char *path = NULL;
		struct pc_run run;

		/* a memfd neither fails to read nor runs out of memory here */
		FUZZ_CHECK(ret == -EBADMSG);
		msg = hc_reader_error(r, &w->offset);
		FUZZ_CHECK(msg && msg[0] && strlen(msg) < sizeof(w->msg));
		strcpy(w->msg, msg);
		FUZZ_CHECK(!strncmp(msg, "line ", 5) || !strncmp(msg, "gzip: ", 6));
		FUZZ_CHECK(hc_next_file(r, &path) == ret && hc_next_run(r, &run) == ret);
	}
	hc_reader_free(r);
}

/* ---- inputs ---- */

static int memfd_of(const void *data, size_t size)
{
	int fd = memfd_create("fuzz-happycache", MFD_CLOEXEC);
	size_t done = 0;

	FUZZ_CHECK(fd >= 0);
	while (done < size) {
		ssize_t n = write(fd, (const char *)data + done, size - done);

		FUZZ_CHECK(n > 0);
		done += (size_t)n;
	}
	return fd;
}

/* The text as a gzip file (malloc'ed). */
static uint8_t *gzip_text(const char *text, size_t len, int level, size_t *out_len)
{
	z_stream z = { 0 };
	size_t cap;
	uint8_t *out;

	/* a small window and hash: cheap, and any deflate stream will do */
	FUZZ_CHECK(deflateInit2(&z, level, Z_DEFLATED, 10 + 16, 1, Z_DEFAULT_STRATEGY) == Z_OK);
	cap = deflateBound(&z, (uLong)len);
	out = xrealloc(NULL, cap);
	z.next_in = (Bytef *)(uintptr_t)text;
	z.avail_in = (uInt)len;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	FUZZ_CHECK(deflate(&z, Z_FINISH) == Z_STREAM_END);
	*out_len = cap - z.avail_out;
	FUZZ_CHECK(deflateEnd(&z) == Z_OK);
	return out;
}

/* The text the reader gets from fd, by the same hc_gunzip_read() calls
 * (fill() in happycache.c). Returns 1 when the stream ended cleanly, 0
 * when the gunzip refused it after *len bytes, -1 past RAW_TEXT_MAX. */
static int replay_gunzip(int fd, char **text, size_t *len)
{
	struct hc_gunzip *g;
	char *t = NULL;
	size_t n = 0;
	int ret = 1;

	FUZZ_CHECK(lseek(fd, 0, SEEK_SET) == 0);
	FUZZ_CHECK(hc_gunzip_new(fd, &g) == 0);
	for (;;) {
		ssize_t got;

		if (n + HC_BUF > RAW_TEXT_MAX) {
			ret = -1;
			break;
		}
		t = xrealloc(t, n + HC_BUF);
		got = hc_gunzip_read(g, t + n, HC_BUF);
		if (got < 0) {
			uint64_t off;

			FUZZ_CHECK(got == -EBADMSG);
			FUZZ_CHECK(!strncmp(hc_gunzip_error(g, &off), "gzip: ", 6));
			FUZZ_CHECK(hc_gunzip_read(g, t + n, HC_BUF) == -EBADMSG); /* sticky */
			ret = 0;
			break;
		}
		if (got == 0)
			break;
		n += (size_t)got;
	}
	hc_gunzip_free(g);
	*text = t;
	*len = n;
	return ret;
}

/* ---- the checks ---- */

/* The line number the reader's message names. */
static uint64_t msg_line(const char *msg)
{
	unsigned long long line = 0;

	FUZZ_CHECK(sscanf(msg, "line %llu", &line) == 1);
	return line;
}

static void check_same_error(const struct walked *w, const struct ref *ref)
{
	FUZZ_CHECK(w->ret == -EBADMSG);
	FUZZ_CHECK(w->offset == ref->err_offset);
	FUZZ_CHECK(msg_line(w->msg) == ref->err_line);
	FUZZ_CHECK(strstr(w->msg, ref_reason[ref->err]));
}

/* The reader's files against the reference's. After an error the reader
 * has handed out whole runs only, and stopped somewhere in the last file. */
static void check_files(const struct walked *w, const struct ref *ref, bool complete)
{
	const struct entries *a = &w->files, *b = &ref->files;

	if (complete) {
		FUZZ_CHECK(a->n == b->n && a->pages == b->pages);
		for (size_t i = 0; i < a->n; i++)
			FUZZ_CHECK(same_entry(&a->e[i], &b->e[i]));
		return;
	}
	FUZZ_CHECK(a->n <= b->n);
	for (size_t i = 0; i + 1 < a->n; i++)
		FUZZ_CHECK(same_entry(&a->e[i], &b->e[i]));
	if (a->n) {
		const struct entry *x = &a->e[a->n - 1], *y = &b->e[a->n - 1];

		FUZZ_CHECK(x->len == y->len && !memcmp(x->path, y->path, x->len));
		FUZZ_CHECK(x->nruns <= y->nruns && same_runs(x, y, x->nruns));
	}
}

/* The walk against the reference over the text the reader saw; gz_clean:
 * that text is the whole stream (else zlib refused what followed). */
static void check_reference(const struct walked *w, const char *text, size_t len,
			    bool gz_clean, uint64_t max_page)
{
	struct ref ref;

	ref_parse(&ref, text, len, max_page);
	if (gz_clean) {
		FUZZ_CHECK(strncmp(w->msg, "gzip: ", 6));
		if (ref.err == REF_OK)
			FUZZ_CHECK(w->ret == 0);
		else
			check_same_error(w, &ref);
		check_files(w, &ref, ref.err == REF_OK);
	} else if (!strncmp(w->msg, "gzip: ", 6)) {
		/* zlib's error came first: no whole line before it was wrong */
		FUZZ_CHECK(w->ret == -EBADMSG);
		FUZZ_CHECK(ref.err == REF_OK || !ref.err_certain);
		check_files(w, &ref, false);
	} else {
		FUZZ_CHECK(ref.err != REF_OK && ref.err_certain);
		check_same_error(w, &ref);
		check_files(w, &ref, false);
	}
	ref_free(&ref);
}

/* "./x" is written as x, "/x" as itself (hc_write_runs() adds "./"). */
static const char *relpath_of(const char *path)
{
	return path[0] == '.' ? path + 2 : path;
}

/* Write what an accepted input held, read it back: the same pages per
 * path, with each path as the writer writes it. */
static void round_trip(const struct walked *in, uint64_t max_page)
{
	struct entries want = { 0 };
	struct hc_writer *wr;
	struct walked out;
	int fd = memfd_create("fuzz-happycache-rt", MFD_CLOEXEC);

	FUZZ_CHECK(fd >= 0);
	FUZZ_CHECK(hc_writer_new(fd, &wr) == 0);
	for (size_t i = 0; i < in->files.n; i++) {
		const struct entry *e = &in->files.e[i];
		const char *rel = relpath_of(e->path);
		size_t rlen = strlen(rel);
		int expect = !rlen ? -EINVAL : rlen > PC_SNAPSHOT_PATH_MAX ? -ENAMETOOLONG : 0;
		struct entry *last = want.n ? &want.e[want.n - 1] : NULL;

		FUZZ_CHECK(hc_write_runs(wr, rel, e->runs, e->nruns) == expect);
		if (expect || !e->nruns)
			continue;
		/* a file written twice in a row reads back as one when its
		 * pages go on ascending (the reader takes it for a chunk) */
		if (!last || last->len != rlen + 2 || memcmp(last->path + 2, rel, rlen) ||
		    e->runs[0].page <= last->last) {
			char *p = xrealloc(NULL, rlen + 3);

			memcpy(p, "./", 2);
			memcpy(p + 2, rel, rlen + 1);
			last = entry_add(&want, p, rlen + 2);
			free(p);
		}
		for (size_t k = 0; k < e->nruns; k++)
			entry_run(last, e->runs[k].page, e->runs[k].npages);
	}
	FUZZ_CHECK(hc_writer_finish(wr) == 0);
	hc_writer_free(wr);

	walk(fd, WALK_ALL, max_page, &out);
	FUZZ_CHECK(out.ret == 0);
	FUZZ_CHECK(out.files.n == want.n);
	for (size_t i = 0; i < want.n; i++)
		FUZZ_CHECK(same_entry(&out.files.e[i], &want.e[i]));
	entries_free(&out.files);
	entries_free(&want);
	close(fd);
}

/* pad bytes of lines that carry no pages: path lines of 4 KiB (blank lines
 * would do, but cost the reader a call each) and one or two blank ones. */
static void pad_lines(char *t, size_t pad)
{
	while (pad) {
		size_t n = pad < 4096 ? pad : 4096;

		if (n < 3) {
			memset(t, '\n', n);
		} else {
			memcpy(t, "./", 2);
			memset(t + 2, 'x', n - 3);
			t[n - 1] = '\n';
		}
		t += n;
		pad -= n;
	}
}

int pc_fuzz_happycache_file(const uint8_t *data, size_t size, uint8_t **out, size_t *out_len)
{
	uint8_t mode = size ? data[0] : 0;
	size_t pad = 0, len;
	char *text;

	data += size ? 1 : 0;
	size -= size ? 1 : 0;
	if (!(mode & 1)) {
		*out = xrealloc(NULL, size);
		if (size)
			memcpy(*out, data, size);
		*out_len = size;
		return 0;
	}
	if (mode & 2)
		pad = HC_BUF - (mode >> 2);
	len = pad + size;
	text = xrealloc(NULL, len);
	pad_lines(text, pad);
	if (size)
		memcpy(text + pad, data, size);
	*out = gzip_text(text, len, mode & 2 ? Z_BEST_SPEED : Z_DEFAULT_COMPRESSION, out_len);
	free(text);
	return 1;
}

int pc_fuzz_happycache(const uint8_t *data, size_t size)
{
	uint64_t max_page = (uint64_t)INT64_MAX / (uint64_t)pc_page_size() - 1;
	struct walked all, skip;
	uint8_t *file;
	size_t file_len, text_len;
	char *text;
	int fd, ret, gz;

	pc_fuzz_happycache_file(data, size, &file, &file_len);
	fd = memfd_of(file, file_len);
	free(file);

	walk(fd, WALK_ALL, max_page, &all);
	ret = all.ret;

	/* the text the reader saw: ours, or the gunzip's answer replayed */
	gz = replay_gunzip(fd, &text, &text_len);
	if (size && (data[0] & 1))
		FUZZ_CHECK(gz == 1); /* our own gzip */
	if (gz >= 0)
		check_reference(&all, text, text_len, gz == 1, max_page);
	free(text);

	if (all.runs_seen) {
		walk(fd, WALK_SKIP, max_page, &skip);
		FUZZ_CHECK(skip.ret == all.ret && skip.offset == all.offset);
		FUZZ_CHECK(!strcmp(skip.msg, all.msg));
		entries_free(&skip.files);
	}
	if (ret == 0 && all.files.pages <= ROUND_TRIP_PAGES)
		round_trip(&all, max_page);
	entries_free(&all.files);
	close(fd);
	return ret;
}

#ifndef PC_FUZZ_REPLAY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	pc_fuzz_happycache(data, size);
	return 0;
}
#endif
