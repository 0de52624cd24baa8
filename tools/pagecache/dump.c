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

int cmd_dump(int argc, char **argv)
{
	struct dump_ctx c = { .rootfd = -1 };
	struct selection sel;
	struct pc_snapshot_info info = { .size = sizeof(info) };
	struct pc_outfile *ho = NULL;
	struct walk *w = NULL;
	struct pipeline *pl = NULL;
	const struct walk_ops *ops = &dump_walk_ops;
	void *ops_ctx = &c;
	const char *out = NULL, *root_arg = NULL;
	char *root = NULL, **prefixes = NULL;
	bool json = false, to_stdout;
	off_t out_start = 0;
	int64_t size = -1;
	int opt, ret = 0, rootfd = -1, fin;

	selection_init(&sel);
	c.fmt = SNAP_NATIVE;
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":ho:q" SELECTION_SHORT_OPTIONS, dump_options,
				  NULL)) != -1) {
		ret = selection_option(&sel, "dump", opt, optarg);
		if (ret < 0)
			goto nomem;
		if (ret > 1)
			goto out;
		if (ret == 1) {
			ret = 0;
			continue; /* a selection option */
		}
		switch (opt) {
		case 'h':
			fputs(dump_usage, stdout);
			goto out;
		case 'o': out = optarg; break;
		case OPT_ROOT: root_arg = optarg; break;
		case OPT_FORMAT:
			if (snap_parse_format(optarg, false, &c.fmt) < 0) {
				ret = usage_error("dump", "--format wants native or happycache, not '%s'",
						  optarg);
				goto out;
			}
			break;
		case OPT_JSON: json = true; break;
		case 'q': c.quiet = true; break;
		case OPT_ALLOW_PERTURB: c.res_flags |= PC_RES_ALLOW_PERTURB; break;
		default:
			ret = usage_getopt_error("dump", opt, argv);
			goto out;
		}
	}
	if (sel.files_from || sel.npids) {
		/* paths are recorded relative to the root, from each PATH */
		ret = usage_error("dump", "%s", "dump takes PATHs: no --files-from, no --pid");
		goto out;
	}
	ret = selection_check(&sel, "dump", argc - optind);
	if (ret)
		goto out;
	if (optind >= argc) {
		ret = usage_error("dump", "%s", "no PATH given");
		goto out;
	}
	if (!root_arg && argc - optind > 1) {
		ret = usage_error("dump", "%s", "--root is needed with several PATHs");
		goto out;
	}
	if (!out)
		out = c.fmt == SNAP_HAPPYCACHE ? ".happycache.gz" : "pagecache.snapshot";
	to_stdout = strcmp(out, "-") == 0;
	if (to_stdout && isatty(STDOUT_FILENO)) {
		ret = usage_error("dump", "%s", "will not write a snapshot to a terminal");
		goto out;
	}

	if (!to_stdout) {
		static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };

		sel.wo.stop = &got_signal;
		catch_stop_signals(sigs, sizeof(sigs) / sizeof(sigs[0]), on_signal);
	}
	/* the root: absolute and resolved, a directory */
	if (root_arg) {
		root = realpath(root_arg, NULL);
	} else {
		struct stat st;

		root = realpath(argv[optind], NULL);
		if (root && stat(root, &st) == 0 && !S_ISDIR(st.st_mode)) {
			char *slash = strrchr(root, '/');

			/* a file: its directory ("/" for a file in /) */
			slash[slash == root ? 1 : 0] = '\0';
		}
	}
	if (!root) {
		ret = -errno;
		cli_error(root_arg ? root_arg : argv[optind],
			  strlen(root_arg ? root_arg : argv[optind]), "%s", strerror(-ret));
		ret = PC_EXIT_FAILED;
		goto out;
	}
	rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0) {
		cli_error(root, strlen(root), "the root: %s", strerror(errno));
		ret = PC_EXIT_FAILED;
		goto out;
	}
	if (sel.wo.follow) {
		c.follow = true;
		c.rootfd = rootfd;
	}
	/* every PATH exists and lies beneath the root, or nothing is written
	 * (a typo must not replace a good snapshot with an empty one) */
	ret = 0;
	prefixes = calloc((size_t)(argc - optind), sizeof(*prefixes));
	if (!prefixes)
		goto nomem;
	for (int i = optind; i < argc; i++) {
		char *real = realpath(argv[i], NULL);

		if (!real)
			cli_error(argv[i], strlen(argv[i]), "%s", strerror(errno));
		else if (!(prefixes[i - optind] = beneath_root(root, real)))
			cli_error(argv[i], strlen(argv[i]), "%s", errno == ENOMEM ?
				  strerror(ENOMEM) : "not beneath the root");
		if (!prefixes[i - optind])
			ret = PC_EXIT_FAILED;
		free(real);
	}
	if (ret) {
		cli_error(out, strlen(out), "%s", "no snapshot written");
		goto out;
	}
	info.root = root;
	ret = pc_detect_mincore();
	info.mincore_mode = ret > 0 ? ret : 0;
	ret = pc_detect_cachestat();
	info.cachestat_mode = ret > 0 ? ret : 0;
	/* not with a cold page of a file: dump changes no page cache */
	ret = pc_detect_nowait_flags(rootfd, 0);
	info.nowait_mode = ret > 0 ? ret : 0;
	ret = 0;

	{
		struct stat st;

		if (!to_stdout && stat(out, &st) == 0 && S_ISREG(st.st_mode))
			c.self[c.nself++] = (typeof(c.self[0])){ st.st_dev, st.st_ino };
	}
	{
		int fd = STDOUT_FILENO;

		if (!to_stdout) {
			ret = pc_outfile_new_at(AT_FDCWD, out, 0600, PC_OUTFILE_KEEP_MODE, &ho);
			fd = ret == 0 ? pc_outfile_fd(ho) : -1;
		}
		if (ret == 0 && c.fmt == SNAP_HAPPYCACHE)
			ret = hc_writer_new(fd, &c.hw);
		else if (ret == 0)
			ret = pc_snapshot_writer_new(fd, &info, &c.sw);
	}
	if (ret < 0) {
		cli_error(out, strlen(out), "cannot write the snapshot: %s", out_error(ret));
		ret = PC_EXIT_FAILED;
		goto out;
	}
	if (to_stdout)
		out_start = lseek(STDOUT_FILENO, 0, SEEK_CUR);
	{
		struct stat st;
		int fd = to_stdout ? STDOUT_FILENO : pc_outfile_fd(ho);

		if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
			c.self[c.nself++] = (typeof(c.self[0])){ st.st_dev, st.st_ino };
	}

	c.max_size = sel.max_size;
	progress_init(&c.progress, !c.quiet && isatty(STDERR_FILENO));
	/* One tree, the usual case: this thread reads the directories and
	 * opens the files, a second one (the pipeline, in the walk's order)
	 * measures them and writes the snapshot. With several paths the root
	 * prefix changes between them: one thread. */
	if (argc - optind == 1 && pipeline_new(&dump_walk_ops, &c, &pl) == 0) {
		ops = &pipeline_walk_ops;
		ops_ctx = pl;
	}
	if (walk_new(&sel.wo, ops, ops_ctx, &w) < 0)
		goto nomem;
	for (int i = optind; i < argc && ret == 0 && !c.err; i++) {
		/* checked above; one replaced since is walk_path()'s to report */
		c.prefix = prefixes[i - optind];
		c.arg = argv[i];
		c.arglen = strlen(argv[i]);
		ret = walk_path(w, argv[i]);
	}
	fin = pipeline_finish(&pl);
	if (fin < 0)
		ret = fin;
	if (ret == -EINTR)
		ret = 0; /* got_signal, below */
	if (ret < 0)
		goto nomem;
	progress_clear(&c.progress);

	/* finish: the end record, fsync, rename */
	ret = c.err;
	if (got_signal)
		ret = -EINTR;
	if (ret == 0 && c.sw)
		ret = pc_snapshot_writer_finish(c.sw);
	if (ret == 0 && c.hw)
		ret = hc_writer_finish(c.hw);
	if (ret == 0 && !to_stdout)
		ret = pc_outfile_commit(ho);
	if (ret < 0) {
		cli_error(out, strlen(out), "cannot write the snapshot: %s%s", out_error(ret),
			  to_stdout ? "" : pc_outfile_in_place(ho) ? " (it is in place, but its directory "
			  "could not be synced)" : " (nothing was written)");
		ret = PC_EXIT_FAILED;
		goto out;
	}
	{
		struct stat st;

		if (to_stdout) {
			off_t end = lseek(STDOUT_FILENO, 0, SEEK_CUR);

			if (out_start >= 0 && end >= out_start && fstat(STDOUT_FILENO, &st) == 0 &&
			    S_ISREG(st.st_mode))
				size = end - out_start;
		} else if (fstat(pc_outfile_fd(ho), &st) == 0) {
			size = st.st_size;
		}
	}
	ret = end_output(&c, to_stdout, json, out, size, root);
	goto out;
nomem:
	progress_clear(&c.progress);
	cli_error(NULL, 0, "out of memory");
	ret = PC_EXIT_FAILED;
out:
	pipeline_finish(&pl);
	pc_snapshot_writer_free(c.sw);
	hc_writer_free(c.hw);
	pc_outfile_free(ho);
	walk_free(w);
	if (rootfd >= 0)
		close(rootfd);
	free(root);
	for (int i = 0; prefixes && i < argc - optind; i++)
		free(prefixes[i]);
	free(prefixes);
	buf_free(&c.rel);
	selection_free(&sel);
	if (got_signal) {
		/* nothing left behind: die of it, for the caller to see */
		signal(got_signal, SIG_DFL);
		raise(got_signal);
	}
	return ret;
}
