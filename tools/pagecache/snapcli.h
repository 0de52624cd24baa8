/* SPDX-License-Identifier: MIT */
/* The snapshot subcommands (dump, restore, diff) and what they share: a
 * source of recorded files that reads the native format or happycache's,
 * the happycache reader and writer. */
#ifndef PAGECACHE_SNAPCLI_H
#define PAGECACHE_SNAPCLI_H

#include "cli.h"

int cmd_dump(int argc, char **argv);
int cmd_restore(int argc, char **argv);
int cmd_diff(int argc, char **argv);

enum snap_format { SNAP_AUTO, SNAP_NATIVE, SNAP_HAPPYCACHE };

/* "native", "happycache" (or "auto" on input) into *out; -EINVAL. */
int snap_parse_format(const char *s, bool allow_auto, enum snap_format *out);

/* ---- happycache.c: Netflix happycache's gzip'ed text format ---- */

/* Pages per chunk: the path line is repeated after this many pages. */
#define HC_CHUNK_PAGES (UINT64_C(1) << 20)
/* Longest line the reader accepts: "./", a path, the newline. */
#define HC_LINE_MAX (PC_SNAPSHOT_PATH_MAX + 3)
/* The reader's buffers, and how much each of its hc_gunzip_read() calls
 * asks for (the fuzz driver reads the same way to see the text it saw). */
#define HC_BUF (64 * 1024)

/* A strict gunzip: one or more whole gzip members, nothing else before,
 * between or after them. Reads a dup of fd (the caller keeps fd). */
struct hc_gunzip;
int hc_gunzip_new(int fd, struct hc_gunzip **out);
void hc_gunzip_free(struct hc_gunzip *g);
/* Up to n bytes of text (at least 1 unless at the end): > 0, 0 at the
 * clean end, -EBADMSG (hc_gunzip_error() says why, "gzip: ...", with the
 * compressed offset) or -errno. Errors are sticky. */
ssize_t hc_gunzip_read(struct hc_gunzip *g, void *buf, size_t n);
const char *hc_gunzip_error(const struct hc_gunzip *g, uint64_t *offset);

struct hc_reader;
/* Reads from a dup of fd (the caller keeps fd). */
int hc_reader_new(int fd, struct hc_reader **out);
void hc_reader_free(struct hc_reader *r);
/* The next file: 1 and *path (the path line as written: "./x" or "/x"),
 * 0 at the end, -EBADMSG (hc_reader_error() says why) or -errno. A path
 * line that repeats the current file's path (a chunk of 2^20 pages) does
 * not start a new file when its pages carry on ascending. */
int hc_next_file(struct hc_reader *r, const char **path);
/* The next run of the current file (pages merged when consecutive): 1,
 * 0 at the file's end, or the reader's error. Errors are sticky: after
 * one, both calls return it again. */
int hc_next_run(struct hc_reader *r, struct pc_run *run);
const char *hc_reader_error(const struct hc_reader *r, uint64_t *offset);

struct hc_writer;
/* Writes to a dup of fd (the caller keeps fd, and fsyncs it). */
int hc_writer_new(int fd, struct hc_writer **out);
/* One file: its runs, in pages; nothing is written for a file without.
 * -EINVAL for a path that is empty or holds a newline, -ENAMETOOLONG for
 * one longer than PC_SNAPSHOT_PATH_MAX (nothing written for either). */
int hc_write_runs(struct hc_writer *w, const char *relpath, const struct pc_run *runs,
		  size_t n);
/* The same a run at a time, in memory that does not grow with the runs:
 * hc_write_file() checks the path (the errors above) and keeps it, which
 * must stay valid until the file's last hc_write_run() (runs in order). */
int hc_write_file(struct hc_writer *w, const char *relpath);
int hc_write_run(struct hc_writer *w, const struct pc_run *run);
/* Flush and end the gzip stream; does not close fd. Returns 0 or -errno. */
int hc_writer_finish(struct hc_writer *w);
void hc_writer_free(struct hc_writer *w);

/* ---- snapsrc.c: a recorded snapshot of either format ---- */

struct snap_file {
	const char *path;          /* relative to the root (native), or as
				      recorded with "./" stripped (happycache) */
	bool identity;             /* size, mtime, dev, ino were recorded */
	uint64_t size;
	int64_t mtime_ns;
	uint64_t dev, ino;
	int quality;               /* enum pc_quality */
	uint64_t npages;           /* recorded pages (native; happycache: 0, unknown) */
};

struct snapsrc;
/* Open name ("-": standard input) in the given format; SNAP_AUTO detects
 * gzip's magic on a seekable input and takes native otherwise. On failure
 * an error line has been printed. */
int snapsrc_open(const char *name, enum snap_format fmt, struct snapsrc **out);
void snapsrc_free(struct snapsrc *s);
enum snap_format snapsrc_format(const struct snapsrc *s);
/* Read the whole input once and start again: 1 when done (the input is
 * valid), 0 when the input cannot be read twice (a pipe), -errno for a
 * corrupt input (snapsrc_report() it). */
int snapsrc_validate(struct snapsrc *s);
/* Start again from the first file (a seekable input only: -ESPIPE).
 * Returns 0 or -errno. */
int snapsrc_rewind(struct snapsrc *s);
/* 1 and *f (valid until the next call), 0 at the end, -errno. */
int snapsrc_next_file(struct snapsrc *s, const struct snap_file **f);
/* The next run of the current file in this machine's pages. */
int snapsrc_next_run(struct snapsrc *s, struct pc_run *run);
/* The root recorded at capture ("" when none). */
const char *snapsrc_root(const struct snapsrc *s);
/* The error s met (sticky), or 0. */
int snapsrc_failed(const struct snapsrc *s);
/* Print one line for error err met reading s: the offset and the reason. */
void snapsrc_report(const struct snapsrc *s, int err);
/* s as pc_restore() reads it: snapsrc_next_file(), _next_run(), _rewind(). */
void snapsrc_source(struct snapsrc *s, struct pc_restore_source *src);

#endif
