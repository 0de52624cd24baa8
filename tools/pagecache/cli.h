/* SPDX-License-Identifier: MIT */
/* What the pagecache command's files share: subcommands, the walk, output
 * helpers and units. The command uses only the public libpagecache API. */
#ifndef PAGECACHE_CLI_H
#define PAGECACHE_CLI_H

#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>

#include <pagecache/pagecache.h>

#define PC_EXIT_OK 0
#define PC_EXIT_FAILED 1
#define PC_EXIT_USAGE 2

/* ---- subcommands (main.c holds the table) ---- */
int cmd_stat(int argc, char **argv);
int cmd_audit(int argc, char **argv);
int cmd_evict(int argc, char **argv);
int cmd_touch(int argc, char **argv);
int cmd_lock(int argc, char **argv);

/* ---- util.c ---- */
extern const char *pc_cli_name; /* "pagecache" */

/* "pagecache: PATH: reason" on stderr, PATH escaped (path may be NULL). */
void cli_error(const char *path, size_t pathlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* "pagecache CMD: message" and "Try 'pagecache CMD --help'." on stderr;
 * returns PC_EXIT_USAGE. */
int usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The getopt_long error cases (':' and '?') as a usage error. */
int usage_getopt_error(const char *cmd, int opt, char **argv);
/* 1024-based human units with one decimal below 10: "0", "512", "4.0K", "12M". */
void human_bytes(uint64_t bytes, char *buf, size_t size);
/* v in decimal into buf (room for 21 bytes); returns the length. */
size_t u64_str(uint64_t v, char *buf);
/* "123", "1K", "2.5M", "8G" with K M G T P suffixes (1024-based) into *out;
 * -EINVAL on junk, -ERANGE on overflow. */
int parse_size(const char *s, uint64_t *out);
/* A non-negative decimal integer no larger than max; -EINVAL or -ERANGE. */
int parse_uint(const char *s, uint64_t max, uint64_t *out);
/* Columns of the terminal on fd, or $COLUMNS, or 80. */
unsigned int terminal_width(int fd);
/* Monotonic time in seconds. */
double now_seconds(void);
/* 1 if fd's file is on overlayfs, 0 if not, -1 if fstatfs cannot tell. */
int on_overlayfs(int fd);
/* Catch each of the n signals sigs with handler, except one the caller
 * ignores (nohup; a background job of a shell without job control), which
 * stays ignored. SA_RESETHAND: a second one acts at once. No SA_RESTART: a
 * blocked read or write returns EINTR, for the command to see the flag. */
void catch_stop_signals(const int *sigs, size_t n, void (*handler)(int));
/* The size in bytes of an open regular file or block device; -errno. */
int file_bytes(int fd, const struct stat *st, uint64_t *out);
/* Open path (beneath dirfd; a /proc magic link is fine) for reading only
 * if it is a regular file: the type is decided on an O_PATH fd, which runs
 * no device driver, and that very inode is reopened through /proc/self/fd.
 * Returns the fd, -EINVAL when it is not a regular file (nothing was opened;
 * *st says what it is), or -errno. */
int open_regular_at(int dirfd, const char *path, struct stat *st);
/* fstat(2) of fd through statx(2), which also tells the mount: *mnt_id
 * gets its unique id (never reused; Linux 6.8+), or 0. 0 or -errno. */
int file_statx(int fd, struct stat *st, uint64_t *mnt_id);

/* A progress line on stderr for work longer than about a second, redrawn
 * at most four times a second; only when enabled (a terminal, no -q). */
struct progress {
	bool enabled, shown;
	double start, last;
};
void progress_init(struct progress *p, bool enabled);
/* true when it is time to redraw (and the caller should call progress_show) */
bool progress_due(struct progress *p);
void progress_show(struct progress *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Erase the line (before other output to stderr or at the end). */
void progress_clear(struct progress *p);
/* A message about one file on stderr ("pagecache: PATH: ..."), the line
 * erased first; *count counts every call, and past CLI_NOTE_LIMIT of them
 * only one more line is printed: "more KIND left out (the summary counts
 * them)". */
#define CLI_NOTE_LIMIT 10
void progress_note(struct progress *p, uint64_t *count, const char *kind, const char *path,
		   size_t pathlen, const char *fmt, va_list ap)
	__attribute__((format(printf, 6, 0)));
/* Grow-only byte buffer. */
struct buf {
	char *data;
	size_t len, cap;
};
int buf_reserve(struct buf *b, size_t extra);
int buf_append(struct buf *b, const void *data, size_t n);
void buf_free(struct buf *b);

/* ---- output.c ---- */
/* Write path to f as text: printable UTF-8 as is; control characters,
 * backslash and bytes that are not valid UTF-8 as C-style escapes
 * (\n \t \\ \xHH), so one path stays on one line. */
void text_write_path(FILE *f, const char *path, size_t len);
/* A message (a path may be in it): control characters, bytes that are not
 * UTF-8 and bidirectional overrides escaped as text_write_path() does;
 * backslashes left alone. */
void text_write_message(FILE *f, const char *msg);
/* Length (1..4) of the valid UTF-8 sequence at s, with its code point in
 * *cp; 0 when none starts there. */
size_t utf8_seq(const unsigned char *s, size_t avail, uint32_t *cp);
/* 1 if the len bytes are valid UTF-8 (no overlongs, no surrogates). */
int utf8_valid(const char *s, size_t len);
/* A command's exit status once standard output is flushed: status, or
 * PC_EXIT_FAILED after "write error on standard output". */
int stdout_status(int status);

/* json.c: a JSON writer that streams to a FILE and tracks commas itself. */
struct json {
	FILE *f;
	int depth;
	bool need_comma[32];
	bool pretty;
};
void json_init(struct json *j, FILE *f, bool pretty);
void json_begin_object(struct json *j, const char *key);
void json_end_object(struct json *j);
void json_begin_array(struct json *j, const char *key);
void json_end_array(struct json *j);
void json_key(struct json *j, const char *key);
/* A string value: invalid UTF-8 becomes U+FFFD, control characters \uXXXX. */
void json_string(struct json *j, const char *key, const char *s, size_t len);
void json_cstring(struct json *j, const char *key, const char *s);
void json_uint(struct json *j, const char *key, uint64_t v);
void json_int(struct json *j, const char *key, int64_t v);
void json_double(struct json *j, const char *key, double v);
void json_bool(struct json *j, const char *key, bool v);
void json_null(struct json *j, const char *key);
/* Closes the line after a top-level value (ndjson). */
void json_newline(struct json *j);
/* Standard base64 (RFC 4648) of len bytes as a JSON string value. */
void json_base64(struct json *j, const char *key, const void *data, size_t len);

/* ---- output.c: the stat report (text table, JSON, NDJSON) ---- */
enum unit_mode { UNIT_HUMAN, UNIT_BYTES, UNIT_PAGES };
enum out_mode { OUT_TEXT, OUT_JSON, OUT_NDJSON };

/* One measured file. */
struct row {
	char *path;
	size_t pathlen;
	bool block;                  /* a block device */
	uint64_t size, pages, resident;
	int quality, source;
	bool perturbed;
	uint64_t uncertain;          /* pc_residency_uncertain() */
	bool has_cs;                 /* --stats and cachestat answered */
	struct pc_cachestat cs;
	struct pc_residency *r;      /* --map: the result with its bitmap */
};

struct totals {
	uint64_t files, size, pages;
	uint64_t known_files, known_pages, resident_pages;
	uint64_t unknown_files, perturbed_files;
	uint64_t uncertain_pages;    /* reported absent, not sure of it */
	uint64_t errors, skipped, filtered;
	uint64_t top_unknown;        /* --top: unknown files left out of the ranking */
};

struct held_msg {
	char *path;
	size_t pathlen;
	int err;                     /* -errno, or 0 for a note */
	char *text;
};

struct report {
	FILE *out;
	enum out_mode mode;
	enum unit_mode unit;
	bool stats, map, perturb_column;
	uint64_t top;                /* --top N, 0 when not asked */
	uint64_t page_size;
	unsigned int width;          /* columns for --map */
	struct json json;
	bool header_done;
	struct held_msg *held;       /* errors and notes for the JSON document */
	size_t nheld, capheld;
};

void report_begin(struct report *rep);
void report_row(struct report *rep, const struct row *row);
void report_error(struct report *rep, const char *path, size_t len, int err, const char *msg);
void report_note(struct report *rep, const char *path, size_t len, const char *why);
void report_end(struct report *rep, const struct totals *t);
/* The fields of the "kernel" object (mincore, cachestat, io_uring, ...). */
void report_json_kernel(struct report *rep);
/* The "errors" and "skipped" arrays of a JSON document (held messages). */
void report_write_held(struct report *rep);
/* "path", and "path_base64" when the path is not valid UTF-8. */
void json_path(struct json *j, const char *path, size_t len);
void report_free(struct report *rep);

/* ---- action.c: what evict, touch and lock share ---- */
/* The start of each of their contexts: counts, messages, progress. */
struct action {
	const char *cmd;
	struct report rep;           /* rep.mode OUT_JSON: messages held for it */
	struct progress progress;
	bool quiet, verbose, json;
	uint64_t max_size;           /* from the selection */
	uint64_t files, errors, skipped, filtered;
};
struct selection;
struct option;
/* The command line of evict, touch or lock, for action_options. */
struct action_cli {
	const struct option *options;  /* getopt_long's long options */
	const char *usage_head, *usage_tail; /* --help: head, selection_help, tail */
	/* The command's own option opt (a long one): 1 handled, 0 not one of
	 * them, PC_EXIT_USAGE (> 1) after a usage message, -ENOMEM. */
	int (*option)(void *ctx, int opt, char *arg);
};
/* Parse argv: -h, -q and -v into a, the selection's options into sel, the
 * rest through cli->option(ctx); then selection_check. true: the command
 * goes on with its paths at argv[optind]; false: it exits with *status
 * (0 after --help, PC_EXIT_USAGE or PC_EXIT_FAILED after a message). */
bool action_options(struct action *a, struct selection *sel, const struct action_cli *cli,
		    void *ctx, int argc, char **argv, int *status);
/* walk_ops callbacks; ctx points to a struct action */
void action_note(void *ctx, const char *path, size_t len, const char *why);
void action_error(void *ctx, const char *path, size_t len, int err, const char *msg);
/* Start the JSON document ("format_version", "command", "kernel", "files": [). */
void action_json_begin(struct action *a);
/* Close "files", write "errors" and "skipped", open "totals" (the caller
 * fills it and calls action_json_end). */
void action_json_totals(struct action *a);
void action_json_end(struct action *a);
/* The resident pages of [offset, offset + len) of fd (len 0: to its end)
 * as far as the kernel shows them: 1 with *resident, 0 when it hides them
 * (unknown, *resident 0), or -errno; *npages, the pages of the range. */
int action_resident(int fd, uint64_t offset, uint64_t len, uint64_t *resident,
		    uint64_t *npages);
/* 1 (and counted as filtered) when the file is over --max-size. */
bool action_too_big(struct action *a, uint64_t size);
struct selection;
struct walk_ops;
/* Set a up from the selection, start the JSON document or (with -v) print
 * header, and walk the paths with ops and ctx. 0, or -ENOMEM. */
int action_walk(struct action *a, struct selection *sel, const struct walk_ops *ops,
		void *ctx, const char *header, int npaths, char **paths);
/* Exit status from the counts, after flushing standard output. */
int action_status(struct action *a);
/* 1 if the calling thread has capability cap in its effective set. */
bool cap_effective(int cap);

/* ---- walk.c ---- */
struct walk;
struct walk_file;

struct walk_ops {
	/* An open regular file (or a block device named on the command line):
	 * fd is O_RDONLY|O_NONBLOCK, st its fstat (taken with file_statx),
	 * mnt_id its unique mount id or 0 (for pc_residency_facts). Return 0,
	 * or -errno to report an error for this file (the walk goes on). The
	 * walk closes fd after the call, unless takes_fd: then file() owns
	 * it, always. */
	int (*file)(void *ctx, int fd, const struct stat *st, uint64_t mnt_id, const char *path,
		    size_t pathlen);
	/* Something skipped that is not a failure (a FIFO, a symlink ...). */
	void (*note)(void *ctx, const char *path, size_t pathlen, const char *why);
	/* A failure on path: err is -errno; msg, when not NULL, says it better
	 * than strerror. */
	void (*error)(void *ctx, const char *path, size_t pathlen, int err, const char *msg);
	bool takes_fd;
	/* When set (the pipeline), the walk does not check the files it opens
	 * but hands each over as it is, maybe not even fstat'ed, and takes
	 * *f's fd with it (closed also on failure); whoever runs the callbacks
	 * checks them with walk_check(), in the walk's order. 0 or -ENOMEM. */
	int (*check)(void *ctx, struct walk *w, const struct walk_file *f);
	/* With check: true while the checking side is behind; the walk then
	 * takes each file's statx and type check itself, so that the work
	 * goes where there is time for it. NULL: never. */
	bool (*busy)(void *ctx);
	/* Optional, with a pipeline: the part of file() that needs no order
	 * (the residency call), which the pipeline runs on the walking thread
	 * while the other one is behind, before the checks. It takes fd and
	 * closes it: 0 and *pre, or -errno with fd left open (file() then
	 * runs as usual). walk_check gives *pre to emit(), which stands in
	 * for file(), when the file passes the checks, else to discard(). */
	int (*measure)(void *ctx, int fd, const struct stat *st, uint64_t mnt_id, void **pre);
	int (*emit)(void *ctx, void *pre, const struct stat *st, const char *path,
		    size_t pathlen);
	void (*discard)(void *ctx, void *pre);
};

/* A file the walk opened, for walk_check(). */
struct walk_file {
	int fd;
	bool has_st;          /* st and mnt_id are set; else walk_check statx's fd
			       * and skips it (with a note) unless regular */
	bool from_fd;         /* walk_fd (--pid): met again, skipped without a note */
	bool keep_fd;         /* walk_check leaves fd open, the caller closes it
			       * (not with ops->takes_fd) */
	void *pre;            /* from ops->measure (has_st is set, fd closed) */
	struct stat st;
	uint64_t mnt_id;
	dev_t root_dev;       /* the device of its PATH (-x) */
	const char *path;
	size_t pathlen;
};

struct walk_opts {
	bool follow;          /* -L: follow symlinks met in the walk */
	bool one_fs;          /* -x: stay on each root's filesystem */
	char **include;       /* fnmatch patterns, NULL-terminated or NULL */
	char **exclude;
	bool one_root;        /* one PATH, no --files-from or --pid: the walk
			       * remembers only files with several links (a
			       * file with one cannot be met twice); memory
			       * then grows with them and the directories,
			       * not with all files */
	/* When set and *stop becomes non-zero (a signal handler's flag), a
	 * directory's walk ends at its next entry and walk_path() returns
	 * -EINTR (a PATH that is a file is measured whole). */
	const volatile sig_atomic_t *stop;
};

int walk_new(const struct walk_opts *opts, const struct walk_ops *ops, void *ctx,
	     struct walk **out);
/* Measure one command-line path: a file, or a directory walked recursively.
 * Symlinks named here are followed. Returns 0 (per-file problems go to
 * ops->error), -ENOMEM, or -EINTR once opts->stop is set. */
int walk_path(struct walk *w, const char *path);
/* Measure an fd opened by the caller (--pid) under the name path: regular
 * files only, counted once like the rest. Takes fd. Returns 0 or -ENOMEM. */
int walk_fd(struct walk *w, int fd, const char *path, size_t pathlen);
/* Report a problem through ops->error / ops->note, in the walk's order. */
void walk_error(struct walk *w, const char *path, size_t pathlen, int err, const char *msg);
void walk_note(struct walk *w, const char *path, size_t pathlen, const char *why);
void walk_free(struct walk *w);
/* The checks the walk makes of each file it opened (its type, -x, counted
 * once), then ops->file (or ops->note / ops->error); closes f->fd unless
 * ops->takes_fd or f->keep_fd. Only one thread may check a walk's files, in its order:
 * the walking thread, or (with ops->check) the one that runs the
 * callbacks. 0 or -ENOMEM. */
int walk_check(struct walk *w, const struct walk_ops *ops, void *ctx, const struct walk_file *f);

/* ---- pipeline.c: a second thread for the walk's callbacks ---- */
struct pipeline;
/* Run inner's callbacks on a second thread, in the order the walk makes
 * them: walk with pipeline_walk_ops and the pipeline as ctx. -EOPNOTSUPP
 * where it would not help (one CPU, few fds), -ENOMEM, -EAGAIN. */
int pipeline_new(const struct walk_ops *inner, void *inner_ctx, struct pipeline **out);
extern const struct walk_ops pipeline_walk_ops;
/* Wait until every event of *pp is handled, free it and set *pp to NULL.
 * 0 (also when *pp is NULL: nothing to finish) or -ENOMEM. */
int pipeline_finish(struct pipeline **pp);

/* ---- pid.c: --pid ---- */
/* The regular files process pid has open (/proc/PID/fd) or mapped
 * (/proc/PID/maps), each once, through walk_fd. Returns 0 or -ENOMEM. */
int walk_pid(struct walk *w, const char *pid);
/* One line of /proc/PID/maps, "start-end perms offset major:minor inode
 * path", cut in place: five fields, each ended by one or more spaces
 * (spaces before the first are skipped), then the path after its leading
 * spaces (possibly empty). *range is the first field, *ino the fifth read
 * as "%llu". Returns 0, or -EINVAL when a field is missing or the fifth
 * does not start like a number. */
int parse_map_line(char *line, char **range, ino_t *ino, char **path);

/* ---- select.c: the options that choose files, shared by the commands
 * that walk (stat, evict, touch, lock) ---- */
enum {
	OPT_SEL_INCLUDE = 1000, OPT_SEL_EXCLUDE, OPT_SEL_MAX_SIZE, OPT_SEL_FILES_FROM,
	OPT_SEL_PID,
};
#define SELECTION_SHORT_OPTIONS "Lx0"
#define SELECTION_LONG_OPTIONS \
	{ "dereference", no_argument, NULL, 'L' }, \
	{ "one-file-system", no_argument, NULL, 'x' }, \
	{ "include", required_argument, NULL, OPT_SEL_INCLUDE }, \
	{ "exclude", required_argument, NULL, OPT_SEL_EXCLUDE }, \
	{ "max-size", required_argument, NULL, OPT_SEL_MAX_SIZE }, \
	{ "files-from", required_argument, NULL, OPT_SEL_FILES_FROM }, \
	{ "null", no_argument, NULL, '0' }, \
	{ "pid", required_argument, NULL, OPT_SEL_PID }
extern const char selection_help[];

struct selection {
	struct walk_opts wo;
	size_t ninclude, nexclude;
	const char *files_from;
	bool nul;
	uint64_t max_size;          /* UINT64_MAX: no limit */
	char **pids;                /* --pid, repeatable */
	size_t npids;
};
void selection_init(struct selection *s);
/* Handle opt if it is a selection option: 1 handled, 0 not one of them,
 * PC_EXIT_USAGE (> 1) after a usage message, -ENOMEM. */
int selection_option(struct selection *s, const char *cmd, int opt, char *arg);
/* After option parsing: usage checks (PC_EXIT_USAGE after a message) or 0;
 * sets s->wo.one_root. */
int selection_check(struct selection *s, const char *cmd, int npaths);
/* Walk the paths, then --files-from, then --pid. 0 or -ENOMEM. */
int selection_walk(struct selection *s, struct walk *w, int npaths, char **paths);
void selection_free(struct selection *s);

#endif
