/* SPDX-License-Identifier: MIT */
/*
 * pagecache dump: record which pages of which files sit in the page cache,
 * as a snapshot (doc/snapshot-format.md) or in happycache's format. Walks
 * like `pagecache stat` (walk.c), in readdir order, and writes each file as
 * it is measured: memory holds one file's residency at a time (for a file
 * of more than 2^27 pages, its runs: SCAN_WINDOW_PAGES).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "snapcli.h"


/* SIGINT, SIGTERM, SIGHUP while dump writes a file: the walk ends, the
 * unfinished snapshot is dropped (nothing is written), the command says so
 * and dies of the signal (SA_RESETHAND: a second one kills at once). With
 * -o -, which is not atomic, the signals keep their default action. */
static volatile sig_atomic_t got_signal;

static void on_signal(int sig)
{
	got_signal = sig;
}

struct dump_ctx {
	enum snap_format fmt;
	unsigned int res_flags;
	bool quiet;
	bool follow;               /* -L: a path may leave the root through a symlink */
	int rootfd;                /* with -L: the root, opened as restore opens */
	uint64_t max_size;
	struct pc_snapshot_writer *sw;
	struct hc_writer *hw;
	int err;                   /* a write error: stop */
	/* the snapshot's own files, never recorded in it: the one it
	 * replaces, and the one being written (its temporary file, or
	 * standard output's) */
	struct { dev_t dev; ino_t ino; } self[2];
	int nself;
	/* the PATH being walked, and where it sits beneath the root */
	const char *arg;
	size_t arglen;
	const char *prefix;        /* relative path of arg's target from the root */
	struct buf rel;
	/* totals */
	uint64_t files, pages, resident, runs_total, unknown, perturbed;
	uint64_t errors, skipped, filtered, not_written;
	uint64_t warned;
	struct progress progress;
};

static const char dump_usage[] =
	"Usage: pagecache dump [OPTIONS] PATH...\n"
	"\n"
	"Record which pages of the files under PATH sit in the page cache, so that\n"
	"'pagecache restore' can bring them back later, here or on another machine.\n"
	"Files whose residency the kernel hides from you are recorded as unknown\n"
	"(with a warning), never as resident.\n"
	"\n"
	"  -o, --output FILE       write the snapshot to FILE (default:\n"
	"                          pagecache.snapshot, or .happycache.gz with\n"
	"                          --format=happycache, in the current directory).\n"
	"                          The file is replaced atomically (a temporary\n"
	"                          file, fsync, rename): a failed or interrupted\n"
	"                          dump leaves no partial snapshot. Only a regular\n"
	"                          file is replaced, never a device node, FIFO,\n"
	"                          directory or symlink. '-' writes to standard\n"
	"                          output, which is NOT atomic\n"
	"      --root DIR          record paths relative to DIR (default: PATH when\n"
	"                          one PATH is given, or its directory when PATH is a\n"
	"                          file; required with several PATHs)\n"
	"      --format FORMAT     native (default) or happycache (Netflix\n"
	"                          happycache's gzip'ed text: paths and page numbers\n"
	"                          only, no identity, no unknown files)\n"
	"      --json              print the summary as one JSON object\n"
	"                          (format_version 1, fields in pagecache(1))\n"
	"  -q, --quiet             no progress line, no per-file notes or warnings\n"
	"\n"
	"Selection (as pagecache stat):\n"
	"  -L, --dereference       follow symlinks met in the walk\n"
	"  -x, --one-file-system   stay on the filesystem of each PATH\n"
	"      --include GLOB      record only files matching GLOB (repeatable)\n"
	"      --exclude GLOB      skip files and directories matching GLOB\n"
	"      --max-size SIZE     skip files larger than SIZE (K, M, G, T suffixes)\n"
	"\n"
	"Probing:\n"
	"      --allow-perturb     probe files the kernel hides with RWF_NOWAIT reads;\n"
	"                          on kernels where a miss starts readahead this\n"
	"                          caches the missed pages\n"
	"\n"
	"  -h, --help              show this help\n"
	"\n"
	"Exit status: 0 all went well, 1 some file failed or the snapshot could not\n"
	"be written, 2 usage error.\n";

enum {
	OPT_ROOT = 256, OPT_FORMAT, OPT_JSON, OPT_ALLOW_PERTURB,
};

static const struct option dump_options[] = {
	{ "output", required_argument, NULL, 'o' },
	{ "root", required_argument, NULL, OPT_ROOT },
	{ "format", required_argument, NULL, OPT_FORMAT },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "quiet", no_argument, NULL, 'q' },
	SELECTION_LONG_OPTIONS,
	{ "allow-perturb", no_argument, NULL, OPT_ALLOW_PERTURB },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static void progress_tick(struct dump_ctx *c)
{
	char res[32];

	if (!progress_due(&c->progress))
		return;
	human_bytes(c->resident * (uint64_t)pc_page_size(), res, sizeof(res));
	progress_show(&c->progress, "dump: %llu files, %s resident, %.0f files/s",
		      (unsigned long long)c->files, res,
		      (double)c->files / (now_seconds() - c->progress.start));
}

static void warn_file(struct dump_ctx *c, const char *path, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void warn_file(struct dump_ctx *c, const char *path, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (c->quiet)
		return;
	va_start(ap, fmt);
	progress_note(&c->progress, &c->warned, "warnings", path, len, fmt, ap);
	va_end(ap);
}

/* The walk's path (it starts with the PATH argument) relative to the root. */
static int relative_path(struct dump_ctx *c, const char *path, size_t len)
{
	const char *rest = path + c->arglen;
	size_t restlen = len - c->arglen;

	while (restlen && *rest == '/') {
		rest++;
		restlen--;
	}
	c->rel.len = 0;
	if (buf_append(&c->rel, c->prefix, strlen(c->prefix)) < 0)
		return -ENOMEM;
	if (c->rel.len && restlen && buf_append(&c->rel, "/", 1) < 0)
		return -ENOMEM;
	return buf_append(&c->rel, rest, restlen);
}

/* fn on each resident run of r, in order, until it returns non-zero; a
 * count-only result (none resident, or all) has one run or none. */
static int for_each_run(const struct pc_residency *r, int (*fn)(void *arg, struct pc_run run),
			void *arg)
{
	struct pc_run run;
	uint64_t p = pc_residency_first_page(r);
	int ret = 0;

	if (pc_residency_resident(r) == pc_residency_npages(r) && pc_residency_npages(r) &&
	    pc_residency_quality(r) != PC_QUALITY_UNKNOWN &&
	    pc_residency_next_run(r, p, &run) == -ENODATA)
		return fn(arg, (struct pc_run){ p, pc_residency_npages(r) });
	while (ret == 0 && pc_residency_next_run(r, p, &run) > 0) {
		ret = fn(arg, run);
		p = run.page + run.npages;
	}
	return ret;
}

struct run_count {
	struct dump_ctx *c;
	uint64_t n;
};

static int count_run(void *arg, struct pc_run run)
{
	struct run_count *rc = arg;

	rc->n++;
	return rc->c->fmt == SNAP_HAPPYCACHE ? hc_write_run(rc->c->hw, &run) : 0;
}

/* The resident runs of r, one at a time: *nruns counts them, and with
 * happycache's format each is written as it comes (memory does not grow
 * with a file's runs; the native writer takes them from r itself). */
static int each_run(struct dump_ctx *c, const struct pc_residency *r, uint64_t *nruns)
{
	struct run_count rc = { c, 0 };
	int ret = for_each_run(r, count_run, &rc);

	*nruns = rc.n;
	return ret;
}

/* The residency of [off, off + len) of fd (len 0: to the end), counts
 * first: a range with none or all of its pages resident (most of a data
 * directory's files) needs no bitmap, and cachestat gives that without
 * mmap and mincore; a mixed one is scanned again with the bitmap. Where
 * cachestat cannot answer, pc_residency() takes its usual way (and that
 * answer is kept when it has no runs to lose). Not with --allow-perturb:
 * a second probe would see the pages the first one cached. */
static int measure(struct dump_ctx *c, int fd, const struct pc_file_facts *facts, uint64_t off,
		   uint64_t len, struct pc_residency **r)
{
	bool perturb = c->res_flags & PC_RES_ALLOW_PERTURB;
	int ret = pc_residency_facts(fd, facts, off, len, c->res_flags |
				     (perturb ? 0 : PC_RES_COUNT_ONLY), r);

	if (ret == 0 && !perturb && pc_residency_quality(*r) != PC_QUALITY_UNKNOWN &&
	    pc_residency_resident(*r) != 0 &&
	    pc_residency_resident(*r) != pc_residency_npages(*r)) {
		pc_residency_free(*r);
		*r = NULL;
		ret = pc_residency_facts(fd, facts, off, len, c->res_flags, r);
	}
	return ret;
}

/* A file larger than this is measured a window at a time: one bitmap of a
 * 1000 TiB sparse file would take 34 GB (it gave "out of memory" and
 * ended the dump); 2^27 pages is 16 MiB of bitmap. Its runs are collected
 * for the writer, which needs their count first: 16 bytes a run (twice
 * that while the array grows), at most a run per resident page, so at
 * most 1/128 of the memory the file's cached pages take (against 1/32768
 * of the file's size for a bitmap). */
#define SCAN_WINDOW_PAGES (UINT64_C(1) << 27)

struct scan {
	struct pc_run *runs;
	size_t n, cap;
	uint64_t npages, resident;
	int quality;               /* UNKNOWN as soon as one window is */
	bool perturbed;
};

static int scan_add(void *arg, struct pc_run run)
{
	struct scan *s = arg;

	if (s->n && s->runs[s->n - 1].page + s->runs[s->n - 1].npages == run.page) {
		s->runs[s->n - 1].npages += run.npages; /* across a window's edge */
		return 0;
	}
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		struct pc_run *r = realloc(s->runs, cap * sizeof(*r));

		if (!r)
			return -ENOMEM;
		s->runs = r;
		s->cap = cap;
	}
	s->runs[s->n++] = run;
	return 0;
}

static int run_cmp(const void *a, const void *b)
{
	const struct pc_run *x = a, *y = b;

	return x->page < y->page ? -1 : x->page > y->page;
}

/* The file's npages pages, SCAN_WINDOW_PAGES at a time, counts first as
 * on_file() does for a whole file: the runs in s. With --allow-perturb
 * the windows go from the last to the first, as the library's probe goes
 * through a file (a miss reads ahead: a window after it would see those
 * pages); the runs are sorted at the end. -EINTR on a signal. */
static int scan_windows(struct dump_ctx *c, int fd, const struct pc_file_facts *facts,
			uint64_t npages, struct scan *s)
{
	uint64_t ps = (uint64_t)pc_page_size();
	bool perturb = c->res_flags & PC_RES_ALLOW_PERTURB;
	uint64_t nwin = npages / SCAN_WINDOW_PAGES + (npages % SCAN_WINDOW_PAGES != 0);

	s->npages = npages;
	s->quality = PC_QUALITY_EXACT;
	for (uint64_t k = 0; k < nwin && s->quality != PC_QUALITY_UNKNOWN; k++) {
		uint64_t first = (perturb ? nwin - 1 - k : k) * SCAN_WINDOW_PAGES;
		uint64_t n = npages - first < SCAN_WINDOW_PAGES ? npages - first : SCAN_WINDOW_PAGES;
		struct pc_residency *r = NULL;
		int ret;

		if (got_signal)
			return -EINTR;
		progress_tick(c);
		ret = measure(c, fd, facts, first * ps, n * ps, &r);
		if (ret < 0)
			return ret;
		s->perturbed |= pc_residency_perturbed(r) > 0;
		if (pc_residency_quality(r) == PC_QUALITY_UNKNOWN) {
			s->quality = PC_QUALITY_UNKNOWN;
			s->n = 0;
			s->resident = 0;
			pc_residency_free(r);
			break;
		}
		s->resident += pc_residency_resident(r);
		ret = for_each_run(r, scan_add, s);
		pc_residency_free(r);
		if (ret < 0)
			return ret;
	}
	if (perturb && s->n > 1) {
		size_t m = 0;

		qsort(s->runs, s->n, sizeof(s->runs[0]), run_cmp);
		for (size_t i = 1; i < s->n; i++) {
			if (s->runs[m].page + s->runs[m].npages == s->runs[i].page)
				s->runs[m].npages += s->runs[i].npages;
			else
				s->runs[++m] = s->runs[i];
		}
		s->n = m + 1;
	}
	return 0;
}

/* Write and count what was measured of one file: r, or for a file of more
 * than SCAN_WINDOW_PAGES the runs of its windows in s. */
static int record(struct dump_ctx *c, const char *path, size_t len,
		  struct pc_snapshot_file *meta, const struct pc_residency *r, const struct scan *s)
{
	int quality = r ? pc_residency_quality(r) : s->quality;
	uint64_t nruns = 0;
	int ret;

	if (quality == PC_QUALITY_UNKNOWN) {
		c->unknown++;
		warn_file(c, path, len, "the kernel hides this file's residency: %s",
			  c->fmt == SNAP_HAPPYCACHE ? "left out (happycache cannot say unknown)"
			  : "recorded as unknown (--allow-perturb probes it)");
	}
	if (r ? pc_residency_perturbed(r) > 0 : s->perturbed)
		c->perturbed++;
	if (c->fmt == SNAP_HAPPYCACHE && quality == PC_QUALITY_UNKNOWN) {
		c->not_written++;
		return 0;
	}
	if (c->fmt == SNAP_HAPPYCACHE) {
		ret = hc_write_file(c->hw, c->rel.data);
	} else if (r) {
		ret = pc_snapshot_write_file(c->sw, c->rel.data, meta, r);
	} else {
		meta->quality = quality;
		ret = pc_snapshot_write_runs(c->sw, c->rel.data, meta, s->runs, s->n);
	}
	if (ret == -EINVAL || ret == -ENAMETOOLONG) {
		c->not_written++;
		warn_file(c, path, len, "left out: %s", ret == -ENAMETOOLONG ?
			  "path too long for a snapshot" : c->fmt == SNAP_HAPPYCACHE ?
			  "happycache's format cannot hold a newline in a path" :
			  "a path the snapshot cannot hold");
		return 0;
	}
	if (ret == 0 && r) {
		ret = each_run(c, r, &nruns);
	} else if (ret == 0) {
		nruns = s->n;
		for (size_t i = 0; i < s->n && ret == 0 && c->fmt == SNAP_HAPPYCACHE; i++)
			ret = hc_write_run(c->hw, &s->runs[i]);
	}
	if (ret < 0) {
		c->err = ret; /* a write error: the snapshot is lost */
		return 0;
	}
	c->files++;
	c->pages += r ? pc_residency_npages(r) : s->npages;
	c->resident += r ? pc_residency_resident(r) : s->resident;
	c->runs_total += nruns;
	return 0;
}

/* A file of more than SCAN_WINDOW_PAGES: scanned in windows, written from
 * the runs collected (as many as its resident pages allow at most). */
static int on_large_file(struct dump_ctx *c, int fd, const struct pc_file_facts *facts,
			 struct pc_snapshot_file *meta, uint64_t npages, const char *path,
			 size_t len)
{
	struct scan s = { 0 };
	int ret = scan_windows(c, fd, facts, npages, &s);

	if (ret == -EINTR) {
		if (!c->err)
			c->err = ret; /* the signal: the snapshot is dropped */
		ret = 0;
		goto out;
	}
	if (ret == -ENOMEM) {
		/* its runs (16 bytes each) did not fit: this file only */
		c->errors++;
		progress_clear(&c->progress);
		cli_error(path, len, "left out: out of memory for its %zu runs", s.n);
		ret = 0;
		goto out;
	}
	if (ret == 0)
		ret = record(c, path, len, meta, NULL, &s);
out:
	free(s.runs);
	progress_tick(c);
	return ret;
}

static int on_file(void *ctx, int fd, const struct stat *st, uint64_t mnt_id,
		   const char *path, size_t len)
{
	struct dump_ctx *c = ctx;
	struct pc_snapshot_file meta = { .size = sizeof(meta) };
	/* the walk's statx stands for the library's own */
	struct pc_file_facts facts = {
		.size = sizeof(facts),
		.mode = st->st_mode,
		.file_size = st->st_size > 0 ? (uint64_t)st->st_size : 0,
		.mnt_id = mnt_id,
	};
	struct pc_residency *r = NULL;
	uint64_t npages, ps = (uint64_t)pc_page_size();
	int ret;

	if (got_signal && !c->err)
		c->err = -EINTR; /* the pipeline's files still queued */
	if (c->err)
		return 0;
	if (!S_ISREG(st->st_mode)) {
		c->skipped++;
		warn_file(c, path, len, "skipped: not a regular file (restore reads only those)");
		return 0;
	}
	for (int i = 0; i < c->nself; i++) {
		if (st->st_dev == c->self[i].dev && st->st_ino == c->self[i].ino) {
			c->skipped++;
			warn_file(c, path, len, "skipped: the snapshot being written, or the one "
				  "it replaces");
			return 0;
		}
	}
	if ((uint64_t)st->st_size > c->max_size) {
		c->filtered++;
		return 0;
	}
	if (len < c->arglen || relative_path(c, path, len) < 0)
		return -ENOMEM;
	if (c->follow) {
		/* restore opens beneath the root only: a file reached through a
		 * symlink that leaves it would be refused there */
		struct stat bst;
		int bfd = pc_open_beneath(c->rootfd, c->rel.data, 0, &bst);

		if (bfd >= 0) {
			close(bfd);
		} else if (bfd == -EXDEV || bfd == -ELOOP) {
			c->not_written++;
			warn_file(c, path, len, "left out: reached through a symlink that leaves "
				  "the root (restore would refuse it)");
			return 0;
		}
	}
	meta.file_size = (uint64_t)st->st_size;
	meta.mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
	meta.dev = (uint64_t)st->st_dev;
	meta.ino = (uint64_t)st->st_ino;
	npages = facts.file_size / ps + (facts.file_size % ps != 0);
	if (npages > SCAN_WINDOW_PAGES)
		return on_large_file(c, fd, &facts, &meta, npages, path, len);
	ret = measure(c, fd, &facts, 0, 0, &r);
	if (ret < 0)
		return ret;
	ret = record(c, path, len, &meta, r, NULL);
	pc_residency_free(r);
	progress_tick(c);
	return ret;
}

static void on_note(void *ctx, const char *path, size_t len, const char *why)
{
	struct dump_ctx *c = ctx;

	c->skipped++;
	if (c->quiet)
		return;
	progress_clear(&c->progress);
	cli_error(path, len, "%s", why);
}

static void on_error(void *ctx, const char *path, size_t len, int err, const char *msg)
{
	struct dump_ctx *c = ctx;

	c->errors++;
	progress_clear(&c->progress);
	cli_error(path, len, "%s", msg ? msg : strerror(-err));
}

static const struct walk_ops dump_walk_ops = {
	.file = on_file,
	.note = on_note,
	.error = on_error,
};

/* Where real (an absolute, resolved path) sits beneath root: a malloc'ed
 * relative path ("" for the root itself), or NULL when it is outside. */
static char *beneath_root(const char *root, const char *real)
{
	size_t n = strlen(root);

	if (strcmp(root, "/") == 0)
		return strdup(real + 1);
	if (strncmp(real, root, n) != 0 || (real[n] != '\0' && real[n] != '/'))
		return NULL;
	return strdup(real[n] ? real + n + 1 : "");
}

/*
 * The output file is a pc_outfile: replaced atomically, as
 * pc_snapshot_writer_new_at() replaces a snapshot (dump writes both
 * formats through it, so that it knows the file it writes and leaves it
 * out of the walk). Only a regular file (or nothing) is replaced: as root,
 * -o /dev/null would otherwise replace the device node. Mode 0600 (root's
 * snapshot tells what the kernel hides from other users), or the mode of
 * the caller's own file it replaces.
 */
static const char *out_error(int err)
{
	if (err == -EEXIST) /* out_replaceable() */
		return "not a regular file (dump replaces only a regular file)";
	if (err == -EINTR)
		return "interrupted by a signal";
	return strerror(-err);
}

static void summary(struct dump_ctx *c, FILE *f, bool json, const char *out, int64_t size,
		    const char *root)
{
	uint64_t ps = (uint64_t)pc_page_size();
	char res[32], sz[32];

	if (json) {
		struct json j;

		json_init(&j, f, true);
		json_begin_object(&j, NULL);
		json_uint(&j, "format_version", 1);
		json_cstring(&j, "format", c->fmt == SNAP_HAPPYCACHE ? "happycache" : "native");
		json_cstring(&j, "output", out);
		json_cstring(&j, "root", root);
		json_uint(&j, "files", c->files);
		json_uint(&j, "pages", c->pages);
		json_uint(&j, "resident_pages", c->resident);
		json_uint(&j, "resident_bytes", c->resident * ps);
		json_uint(&j, "runs", c->runs_total);
		json_uint(&j, "unknown_files", c->unknown);
		json_uint(&j, "perturbed_files", c->perturbed);
		json_uint(&j, "not_written", c->not_written);
		json_uint(&j, "skipped", c->skipped);
		json_uint(&j, "filtered", c->filtered);
		json_uint(&j, "errors", c->errors);
		if (size >= 0) {
			json_uint(&j, "snapshot_bytes", (uint64_t)size);
			if (c->runs_total)
				json_double(&j, "bytes_per_run", (double)size / (double)c->runs_total);
			else
				json_null(&j, "bytes_per_run");
		} else {
			json_null(&j, "snapshot_bytes");
			json_null(&j, "bytes_per_run");
		}
		json_end_object(&j);
		json_newline(&j);
		return;
	}
	human_bytes(c->resident * ps, res, sizeof(res));
	fprintf(f, "files:          %llu (%llu unknown: residency hidden by the kernel)\n",
		(unsigned long long)c->files, (unsigned long long)c->unknown);
	fprintf(f, "pages:          %llu, %llu resident (%s) in %llu runs\n",
		(unsigned long long)c->pages, (unsigned long long)c->resident, res,
		(unsigned long long)c->runs_total);
	if (c->perturbed)
		fprintf(f, "perturbed:      %llu files probed with reads that cached pages\n",
			(unsigned long long)c->perturbed);
	if (c->skipped || c->filtered || c->not_written || c->errors)
		fprintf(f, "left out:       %llu skipped, %llu filtered, %llu not writable "
			"in this format, %llu errors\n", (unsigned long long)c->skipped,
			(unsigned long long)c->filtered, (unsigned long long)c->not_written,
			(unsigned long long)c->errors);
	if (size >= 0) {
		human_bytes((uint64_t)size, sz, sizeof(sz));
		fputs("snapshot:       ", f);
		text_write_path(f, out, strlen(out));
		fprintf(f, ", %lld bytes", (long long)size);
		if (c->runs_total)
			fprintf(f, ", %.2f bytes per run", (double)size / (double)c->runs_total);
		fputc('\n', f);
	} else {
		fputs("snapshot:       ", f);
		text_write_path(f, out, strlen(out));
		fputs(" (size unknown: not a regular file)\n", f);
	}
}

/* The summary, on standard error when the snapshot went to standard
 * output; the exit status once it is flushed. */
static int end_output(struct dump_ctx *c, bool to_stdout, bool json, const char *out,
		      int64_t size, const char *root)
{
	int status = c->errors ? PC_EXIT_FAILED : PC_EXIT_OK;

	if (!to_stdout) {
		summary(c, stdout, json, out, size, root);
		return stdout_status(status);
	}
	summary(c, stderr, json, out, size, root);
	if (fflush(stderr) != 0 || ferror(stderr)) {
		cli_error(NULL, 0, "write error on standard error");
		status = PC_EXIT_FAILED;
	}
	return status;
}

/* One run of the command: its options, the root, the output, and how it
 * ends. A step returns true to go on; false with status set (or nomem:
 * "out of memory") to stop. */
struct dump_run {
	struct dump_ctx c;
	struct selection sel;
	struct pc_snapshot_info info;
	struct pc_outfile *ho;
	struct walk *w;
	struct pipeline *pl;
	const char *out, *root_arg;
	char *root, **prefixes;
	char **paths;              /* the PATHs: argv[optind ...] */
	int npaths;
	bool json, to_stdout;
	off_t out_start;
	int64_t size;
	int rootfd;
	int status;
	bool nomem;
};

static bool dump_option(struct dump_run *d, int opt, char **argv)
{
	switch (opt) {
	case 'h':
		fputs(dump_usage, stdout);
		d->status = PC_EXIT_OK;
		return false;
	case 'o': d->out = optarg; break;
	case OPT_ROOT: d->root_arg = optarg; break;
	case OPT_FORMAT:
		if (snap_parse_format(optarg, false, &d->c.fmt) < 0) {
			d->status = usage_error("dump", "--format wants native or happycache, not '%s'",
						optarg);
			return false;
		}
		break;
	case OPT_JSON: d->json = true; break;
	case 'q': d->c.quiet = true; break;
	case OPT_ALLOW_PERTURB: d->c.res_flags |= PC_RES_ALLOW_PERTURB; break;
	default:
		d->status = usage_getopt_error("dump", opt, argv);
		return false;
	}
	return true;
}

/* The options, and what they must not be together. */
static bool parse_args(struct dump_run *d, int argc, char **argv)
{
	int opt, ret;

	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":ho:q" SELECTION_SHORT_OPTIONS, dump_options,
				  NULL)) != -1) {
		ret = selection_option(&d->sel, "dump", opt, optarg);
		if (ret < 0) {
			d->nomem = true;
			return false;
		}
		if (ret > 1) {
			d->status = ret;
			return false;
		}
		if (ret == 0 && !dump_option(d, opt, argv))
			return false;
	}
	d->paths = argv + optind;
	d->npaths = argc - optind;
	if (d->sel.files_from || d->sel.npids)
		/* paths are recorded relative to the root, from each PATH */
		d->status = usage_error("dump", "%s", "dump takes PATHs: no --files-from, no --pid");
	else if ((d->status = selection_check(&d->sel, "dump", d->npaths)))
		;
	else if (d->npaths == 0)
		d->status = usage_error("dump", "%s", "no PATH given");
	else if (!d->root_arg && d->npaths > 1)
		d->status = usage_error("dump", "%s", "--root is needed with several PATHs");
	if (d->status)
		return false;
	if (!d->out)
		d->out = d->c.fmt == SNAP_HAPPYCACHE ? ".happycache.gz" : "pagecache.snapshot";
	d->to_stdout = strcmp(d->out, "-") == 0;
	if (d->to_stdout && isatty(STDOUT_FILENO)) {
		d->status = usage_error("dump", "%s", "will not write a snapshot to a terminal");
		return false;
	}
	return true;
}

/* The root: absolute and resolved, a directory (a file PATH's own), open. */
static bool open_root(struct dump_run *d)
{
	const char *what = d->root_arg ? d->root_arg : d->paths[0];

	if (d->root_arg) {
		d->root = realpath(d->root_arg, NULL);
	} else {
		struct stat st;

		d->root = realpath(d->paths[0], NULL);
		if (d->root && stat(d->root, &st) == 0 && !S_ISDIR(st.st_mode)) {
			char *slash = strrchr(d->root, '/');

			/* a file: its directory ("/" for a file in /) */
			slash[slash == d->root ? 1 : 0] = '\0';
		}
	}
	if (!d->root) {
		cli_error(what, strlen(what), "%s", strerror(errno));
		d->status = PC_EXIT_FAILED;
		return false;
	}
	d->rootfd = open(d->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (d->rootfd < 0) {
		cli_error(d->root, strlen(d->root), "the root: %s", strerror(errno));
		d->status = PC_EXIT_FAILED;
		return false;
	}
	if (d->sel.wo.follow) {
		d->c.follow = true;
		d->c.rootfd = d->rootfd;
	}
	return true;
}

/* Every PATH exists and lies beneath the root, or nothing is written (a
 * typo must not replace a good snapshot with an empty one). */
static bool check_paths(struct dump_run *d)
{
	bool ok = true;

	d->prefixes = calloc((size_t)d->npaths, sizeof(*d->prefixes));
	if (!d->prefixes) {
		d->nomem = true;
		return false;
	}
	for (int i = 0; i < d->npaths; i++) {
		const char *arg = d->paths[i];
		char *real = realpath(arg, NULL);

		if (!real)
			cli_error(arg, strlen(arg), "%s", strerror(errno));
		else if (!(d->prefixes[i] = beneath_root(d->root, real)))
			cli_error(arg, strlen(arg), "%s", errno == ENOMEM ?
				  strerror(ENOMEM) : "not beneath the root");
		if (!d->prefixes[i])
			ok = false;
		free(real);
	}
	if (!ok) {
		cli_error(d->out, strlen(d->out), "%s", "no snapshot written");
		d->status = PC_EXIT_FAILED;
	}
	return ok;
}

/* What the kernel does, as the snapshot records it. */
static void detect_modes(struct dump_run *d)
{
	int ret;

	d->info.root = d->root;
	ret = pc_detect_mincore();
	d->info.mincore_mode = ret > 0 ? ret : 0;
	ret = pc_detect_cachestat();
	d->info.cachestat_mode = ret > 0 ? ret : 0;
	/* not with a cold page of a file: dump changes no page cache */
	ret = pc_detect_nowait_flags(d->rootfd, 0);
	d->info.nowait_mode = ret > 0 ? ret : 0;
}

static void add_self(struct dump_ctx *c, const struct stat *st)
{
	c->self[c->nself++] = (typeof(c->self[0])){ st->st_dev, st->st_ino };
}

/* The output (a temporary file beside it, or standard output) and its
 * writer; the snapshot's own files, which the walk leaves out. */
static bool open_output(struct dump_run *d)
{
	struct stat st;
	int fd = STDOUT_FILENO, ret = 0;

	if (!d->to_stdout && stat(d->out, &st) == 0 && S_ISREG(st.st_mode))
		add_self(&d->c, &st);
	if (!d->to_stdout) {
		ret = pc_outfile_new_at(AT_FDCWD, d->out, 0600, PC_OUTFILE_KEEP_MODE, &d->ho);
		fd = ret == 0 ? pc_outfile_fd(d->ho) : -1;
	}
	if (ret == 0 && d->c.fmt == SNAP_HAPPYCACHE)
		ret = hc_writer_new(fd, &d->c.hw);
	else if (ret == 0)
		ret = pc_snapshot_writer_new(fd, &d->info, &d->c.sw);
	if (ret < 0) {
		cli_error(d->out, strlen(d->out), "cannot write the snapshot: %s", out_error(ret));
		d->status = PC_EXIT_FAILED;
		return false;
	}
	if (d->to_stdout)
		d->out_start = lseek(STDOUT_FILENO, 0, SEEK_CUR);
	if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
		add_self(&d->c, &st);
	return true;
}

/* One tree, the usual case: this thread reads the directories and opens
 * the files, a second one (the pipeline, in the walk's order) measures
 * them and writes the snapshot. With several paths the root prefix
 * changes between them: one thread. */
static bool walk_paths(struct dump_run *d)
{
	const struct walk_ops *ops = &dump_walk_ops;
	void *ops_ctx = &d->c;
	int ret = 0, fin;

	d->c.max_size = d->sel.max_size;
	progress_init(&d->c.progress, !d->c.quiet && isatty(STDERR_FILENO));
	if (d->npaths == 1 && pipeline_new(&dump_walk_ops, &d->c, &d->pl) == 0) {
		ops = &pipeline_walk_ops;
		ops_ctx = d->pl;
	}
	if (walk_new(&d->sel.wo, ops, ops_ctx, &d->w) < 0) {
		d->nomem = true;
		return false;
	}
	for (int i = 0; i < d->npaths && ret == 0 && !d->c.err; i++) {
		/* checked above; one replaced since is walk_path()'s to report */
		d->c.prefix = d->prefixes[i];
		d->c.arg = d->paths[i];
		d->c.arglen = strlen(d->paths[i]);
		ret = walk_path(d->w, d->paths[i]);
	}
	fin = pipeline_finish(&d->pl);
	if (fin < 0)
		ret = fin;
	if (ret < 0 && ret != -EINTR) { /* -EINTR: got_signal, below */
		d->nomem = true;
		return false;
	}
	progress_clear(&d->c.progress);
	return true;
}

/* The end record, fsync, rename; then the snapshot's size where it has one. */
static bool finish_snapshot(struct dump_run *d)
{
	struct stat st;
	int ret = d->c.err;

	if (got_signal)
		ret = -EINTR;
	if (ret == 0 && d->c.sw)
		ret = pc_snapshot_writer_finish(d->c.sw);
	if (ret == 0 && d->c.hw)
		ret = hc_writer_finish(d->c.hw);
	if (ret == 0 && !d->to_stdout)
		ret = pc_outfile_commit(d->ho);
	if (ret < 0) {
		cli_error(d->out, strlen(d->out), "cannot write the snapshot: %s%s", out_error(ret),
			  d->to_stdout ? "" : pc_outfile_in_place(d->ho) ? " (it is in place, but its "
			  "directory could not be synced)" : " (nothing was written)");
		d->status = PC_EXIT_FAILED;
		return false;
	}
	if (d->to_stdout) {
		off_t end = lseek(STDOUT_FILENO, 0, SEEK_CUR);

		if (d->out_start >= 0 && end >= d->out_start && fstat(STDOUT_FILENO, &st) == 0 &&
		    S_ISREG(st.st_mode))
			d->size = end - d->out_start;
	} else if (fstat(pc_outfile_fd(d->ho), &st) == 0) {
		d->size = st.st_size;
	}
	return true;
}

static void dump_run_free(struct dump_run *d)
{
	pipeline_finish(&d->pl);
	pc_snapshot_writer_free(d->c.sw);
	hc_writer_free(d->c.hw);
	pc_outfile_free(d->ho);
	walk_free(d->w);
	if (d->rootfd >= 0)
		close(d->rootfd);
	free(d->root);
	for (int i = 0; d->prefixes && i < d->npaths; i++)
		free(d->prefixes[i]);
	free(d->prefixes);
	buf_free(&d->c.rel);
	selection_free(&d->sel);
}

int cmd_dump(int argc, char **argv)
{
	struct dump_run d = {
		.c = { .rootfd = -1, .fmt = SNAP_NATIVE },
		.info = { .size = sizeof(d.info) },
		.rootfd = -1, .size = -1,
	};

	selection_init(&d.sel);
	if (parse_args(&d, argc, argv)) {
		if (!d.to_stdout) {
			static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };

			d.sel.wo.stop = &got_signal;
			catch_stop_signals(sigs, sizeof(sigs) / sizeof(sigs[0]), on_signal);
		}
		if (open_root(&d) && check_paths(&d)) {
			detect_modes(&d);
			if (open_output(&d) && walk_paths(&d) && finish_snapshot(&d))
				d.status = end_output(&d.c, d.to_stdout, d.json, d.out, d.size, d.root);
		}
	}
	if (d.nomem) {
		progress_clear(&d.c.progress);
		cli_error(NULL, 0, "out of memory");
		d.status = PC_EXIT_FAILED;
	}
	dump_run_free(&d);
	if (got_signal) {
		/* nothing left behind: die of it, for the caller to see */
		signal(got_signal, SIG_DFL);
		raise(got_signal);
	}
	return d.status;
}
