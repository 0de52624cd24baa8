/* SPDX-License-Identifier: MIT */
/*
 * pagecache stat: residency of files and trees, labelled with how far the
 * kernel's answer can be trusted. Rows stream out as files are measured,
 * unless --sort or --top needs them held (--top keeps a bounded heap).
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

enum sort_key { SORT_NONE, SORT_NAME, SORT_SIZE, SORT_RESIDENT, SORT_PERCENT };

struct stat_ctx {
	struct report rep;
	struct totals t;
	unsigned int res_flags;
	bool stats;
	bool quiet;
	uint64_t max_size;         /* UINT64_MAX: no limit */
	enum sort_key sort;
	/* held rows: all of them for --sort, a min-heap of --top N */
	struct row *rows;
	size_t nrows, caprows;
	struct progress progress;
};

static const char stat_usage_head[] =
	"Usage: pagecache stat [OPTIONS] PATH...\n"
	"\n"
	"Show which part of each file sits in the page cache, and how far the\n"
	"kernel's answer can be trusted. Directories are walked recursively.\n"
	"Files whose residency the kernel hides from you show '?' and quality\n"
	"'unknown', never a number that cannot be trusted.\n"
	"\n"
	"Output:\n"
	"      --json              one JSON document (format_version 1)\n"
	"      --ndjson            one JSON object per line, streamed\n"
	"      --bytes             exact sizes in bytes (default: human units)\n"
	"      --pages             sizes in pages\n"
	"      --stats             add dirty, writeback, evicted and recently evicted\n"
	"                          pages (cachestat), where the kernel allows it\n"
	"      --map               draw each file's resident pages, scaled to the\n"
	"                          terminal width (JSON: resident_runs)\n"
	"      --top N             only the N files with the most resident pages\n"
	"      --sort KEY          order by name, size, resident or percent\n"
	"  -q, --quiet             no progress line and no notes about skipped files\n"
	"\n";
static const char stat_usage_tail[] =
	"Probing:\n"
	"      --allow-perturb     probe files the kernel hides with RWF_NOWAIT reads;\n"
	"                          on kernels where a miss starts readahead this\n"
	"                          caches the missed pages (the output says so)\n"
	"\n"
	"Speed:\n"
	"      --threads N         1: walk and measure on one thread; 2 (the\n"
	"                          default with more than one CPU): measure on\n"
	"                          both, print on the second, while the walk goes\n"
	"                          on; the output is the same\n"
	"\n"
	"  -h, --help              show this help\n"
	"\n"
	"Exit status: 0 all went well, 1 some file failed, 2 usage error.\n";

enum {
	OPT_JSON = 256, OPT_NDJSON, OPT_BYTES, OPT_PAGES, OPT_STATS, OPT_MAP, OPT_TOP,
	OPT_SORT, OPT_ALLOW_PERTURB, OPT_THREADS,
};

static const struct option stat_options[] = {
	{ "json", no_argument, NULL, OPT_JSON },
	{ "ndjson", no_argument, NULL, OPT_NDJSON },
	{ "bytes", no_argument, NULL, OPT_BYTES },
	{ "pages", no_argument, NULL, OPT_PAGES },
	{ "stats", no_argument, NULL, OPT_STATS },
	{ "map", no_argument, NULL, OPT_MAP },
	{ "top", required_argument, NULL, OPT_TOP },
	{ "sort", required_argument, NULL, OPT_SORT },
	{ "quiet", no_argument, NULL, 'q' },
	SELECTION_LONG_OPTIONS,
	{ "allow-perturb", no_argument, NULL, OPT_ALLOW_PERTURB },
	{ "threads", required_argument, NULL, OPT_THREADS },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static void progress_tick(struct stat_ctx *c)
{
	double t;
	char size[32];

	if (!progress_due(&c->progress))
		return;
	t = now_seconds() - c->progress.start;
	human_bytes(c->t.size, size, sizeof(size));
	progress_show(&c->progress, "%llu files, %s, %.0f files/s",
		      (unsigned long long)c->t.files, size, (double)c->t.files / t);
}

/* ---- held rows ---- */

static void row_free(struct row *row)
{
	free(row->path);
	pc_residency_free(row->r);
	row->path = NULL;
	row->r = NULL;
}

static int row_cmp_resident(const struct row *a, const struct row *b)
{
	if (a->resident != b->resident)
		return a->resident < b->resident ? -1 : 1;
	if (a->pages != b->pages)
		return a->pages < b->pages ? -1 : 1;
	return 0;
}

static void heap_swap(struct row *a, struct row *b)
{
	struct row t = *a;

	*a = *b;
	*b = t;
}

static void heap_up(struct row *h, size_t i)
{
	while (i > 0) {
		size_t p = (i - 1) / 2;

		if (row_cmp_resident(&h[i], &h[p]) >= 0)
			break;
		heap_swap(&h[i], &h[p]);
		i = p;
	}
}

static void heap_down(struct row *h, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;

		if (l < n && row_cmp_resident(&h[l], &h[m]) < 0)
			m = l;
		if (r < n && row_cmp_resident(&h[r], &h[m]) < 0)
			m = r;
		if (m == i)
			return;
		heap_swap(&h[i], &h[m]);
		i = m;
	}
}

static int copy_path(struct row *row, const char *path, size_t len)
{
	row->path = malloc(len + 1);
	if (!row->path)
		return -ENOMEM;
	memcpy(row->path, path, len + 1);
	row->pathlen = len;
	return 0;
}

/* Keep row (taking its residency) for later output. */
static int hold_row(struct stat_ctx *c, struct row *row, const char *path, size_t len)
{
	uint64_t top = c->rep.top;

	if (top) {
		if (row->quality == PC_QUALITY_UNKNOWN) {
			c->t.top_unknown++; /* cannot be ranked */
			pc_residency_free(row->r);
			return 0;
		}
		if (c->nrows == top) {
			if (row_cmp_resident(row, &c->rows[0]) <= 0) {
				pc_residency_free(row->r);
				return 0;
			}
			if (copy_path(row, path, len) < 0) {
				pc_residency_free(row->r);
				return -ENOMEM;
			}
			row_free(&c->rows[0]);
			c->rows[0] = *row;
			heap_down(c->rows, c->nrows, 0);
			return 0;
		}
	}
	if (c->nrows == c->caprows) {
		size_t cap = c->caprows ? c->caprows * 2 : 64;
		struct row *rows;

		if (top && cap > top)
			cap = top;
		rows = realloc(c->rows, cap * sizeof(*rows));
		if (!rows) {
			pc_residency_free(row->r);
			return -ENOMEM;
		}
		c->rows = rows;
		c->caprows = cap;
	}
	if (copy_path(row, path, len) < 0) {
		pc_residency_free(row->r);
		return -ENOMEM;
	}
	c->rows[c->nrows++] = *row;
	if (top)
		heap_up(c->rows, c->nrows - 1);
	return 0;
}

static enum sort_key g_sort; /* qsort has no context argument */

static int sort_cmp(const void *pa, const void *pb)
{
	const struct row *a = pa, *b = pb;
	bool ka = a->quality != PC_QUALITY_UNKNOWN, kb = b->quality != PC_QUALITY_UNKNOWN;
	int r = 0;

	switch (g_sort) {
	case SORT_SIZE:
		r = a->size == b->size ? 0 : a->size > b->size ? -1 : 1;
		break;
	case SORT_RESIDENT:
	case SORT_PERCENT:
		/* unknown files after all known ones */
		if (ka != kb)
			return ka ? -1 : 1;
		if (g_sort == SORT_RESIDENT) {
			r = -row_cmp_resident(a, b);
		} else {
			/* a.res / a.pages vs b.res / b.pages without rounding */
			unsigned __int128 x = (unsigned __int128)a->resident * (b->pages ? b->pages : 1);
			unsigned __int128 y = (unsigned __int128)b->resident * (a->pages ? a->pages : 1);

			r = x == y ? 0 : x > y ? -1 : 1;
		}
		break;
	default:
		break;
	}
	if (r == 0) {
		size_t n = a->pathlen < b->pathlen ? a->pathlen : b->pathlen;

		r = memcmp(a->path, b->path, n);
		if (r == 0)
			r = a->pathlen < b->pathlen ? -1 : a->pathlen > b->pathlen;
	}
	return r;
}

/* ---- the walk's callbacks ---- */

/* What a file's residency call found: the part of a file's work that
 * needs no order, so the pipeline may do it on either thread. */
struct measured {
	int ret;                   /* pc_residency's error */
	bool filtered;             /* over --max-size */
	struct row row;            /* without its path; row.r kept for --map */
};

static void measure(const struct stat_ctx *c, int fd, const struct stat *st, uint64_t mnt_id,
		    struct measured *m)
{
	struct pc_residency *r = NULL;
	/* the walk's statx stands for the library's own */
	struct pc_file_facts facts = {
		.size = sizeof(facts),
		.mode = st->st_mode,
		.file_size = st->st_size > 0 ? (uint64_t)st->st_size : 0,
		.mnt_id = mnt_id,
	};
	struct row *row = &m->row;

	memset(m, 0, sizeof(*m));
	if (S_ISREG(st->st_mode) && (uint64_t)st->st_size > c->max_size) {
		m->filtered = true;
		return;
	}
	m->ret = pc_residency_facts(fd, &facts, 0, 0, c->res_flags, &r);
	if (m->ret < 0)
		return;
	row->block = S_ISBLK(st->st_mode);
	row->size = pc_residency_file_size(r);
	if (row->block && row->size > c->max_size) {
		pc_residency_free(r);
		m->filtered = true;
		return;
	}
	row->pages = pc_residency_npages(r);
	row->resident = pc_residency_resident(r);
	row->quality = pc_residency_quality(r);
	row->source = pc_residency_source(r);
	row->perturbed = pc_residency_perturbed(r) > 0;
	row->uncertain = pc_residency_uncertain(r);
	if (c->stats && row->quality != PC_QUALITY_UNKNOWN)
		row->has_cs = pc_cachestat(fd, 0, 0, &row->cs) == 0;
	if (c->rep.map)
		row->r = r;
	else
		pc_residency_free(r);
}

/* The rest, in the walk's order: totals and output. Takes m->row.r. */
static int report_file(struct stat_ctx *c, struct measured *m, const char *path, size_t len)
{
	struct row row = m->row;
	int ret = 0;

	if (m->filtered) {
		c->t.filtered++;
		return 0;
	}
	if (m->ret < 0)
		return m->ret;
	row.path = (char *)path;
	row.pathlen = len;
	c->t.files++;
	c->t.size += row.size;
	c->t.pages += row.pages;
	if (row.quality == PC_QUALITY_UNKNOWN) {
		c->t.unknown_files++;
	} else {
		c->t.known_files++;
		c->t.known_pages += row.pages;
		c->t.resident_pages += row.resident;
	}
	if (row.perturbed)
		c->t.perturbed_files++;
	c->t.uncertain_pages += row.uncertain;

	if (c->sort != SORT_NONE || c->rep.top) {
		ret = hold_row(c, &row, path, len);
	} else {
		progress_clear(&c->progress);
		report_row(&c->rep, &row);
		pc_residency_free(row.r);
	}
	progress_tick(c);
	return ret;
}

static int on_file(void *ctx, int fd, const struct stat *st, uint64_t mnt_id, const char *path,
		   size_t len)
{
	struct measured m;

	measure(ctx, fd, st, mnt_id, &m);
	return report_file(ctx, &m, path, len);
}

static int on_measure(void *ctx, int fd, const struct stat *st, uint64_t mnt_id, void **pre)
{
	struct measured *m = malloc(sizeof(*m));

	if (!m)
		return -ENOMEM;
	measure(ctx, fd, st, mnt_id, m);
	close(fd);
	*pre = m;
	return 0;
}

static int on_emit(void *ctx, void *pre, const struct stat *st, const char *path, size_t len)
{
	int ret = report_file(ctx, pre, path, len);

	free(pre);
	return ret;
}

static void on_discard(void *ctx, void *pre)
{
	struct measured *m = pre;

	pc_residency_free(m->row.r);
	free(m);
}

static void on_note(void *ctx, const char *path, size_t len, const char *why)
{
	struct stat_ctx *c = ctx;

	c->t.skipped++;
	report_note(&c->rep, path, len, why);
	if (c->quiet)
		return;
	progress_clear(&c->progress);
	cli_error(path, len, "%s", why);
}

static void on_error(void *ctx, const char *path, size_t len, int err, const char *msg)
{
	struct stat_ctx *c = ctx;

	c->t.errors++;
	report_error(&c->rep, path, len, err, msg);
	progress_clear(&c->progress);
	cli_error(path, len, "%s", msg ? msg : strerror(-err));
}

static const struct walk_ops stat_walk_ops = {
	.file = on_file,
	.note = on_note,
	.error = on_error,
	.measure = on_measure,
	.emit = on_emit,
	.discard = on_discard,
};

/* The options that set no field of stat_ctx. */
struct stat_args {
	bool json, ndjson, bytes, pages;
	uint64_t threads;
};

/* One of stat's own options: 1 handled, 0 not one of them, PC_EXIT_USAGE
 * after a usage message. */
static int stat_option(struct stat_ctx *c, struct stat_args *o, int opt, const char *arg)
{
	uint64_t v;

	switch (opt) {
	case OPT_JSON: o->json = true; break;
	case OPT_NDJSON: o->ndjson = true; break;
	case OPT_BYTES: o->bytes = true; break;
	case OPT_PAGES: o->pages = true; break;
	case OPT_STATS: c->stats = true; break;
	case OPT_MAP: c->rep.map = true; break;
	case 'q': c->quiet = true; break;
	case OPT_ALLOW_PERTURB: c->res_flags |= PC_RES_ALLOW_PERTURB; break;
	case OPT_THREADS:
		if (parse_uint(arg, 2, &o->threads) < 0 || o->threads == 0)
			return usage_error("stat", "--threads wants 1 or 2, not '%s'", arg);
		break;
	case OPT_TOP:
		if (parse_uint(arg, SIZE_MAX / sizeof(struct row), &v) < 0 || v == 0)
			return usage_error("stat", "--top wants a positive number, not '%s'", arg);
		c->rep.top = v;
		break;
	case OPT_SORT:
		if (strcmp(arg, "name") == 0)
			c->sort = SORT_NAME;
		else if (strcmp(arg, "size") == 0)
			c->sort = SORT_SIZE;
		else if (strcmp(arg, "resident") == 0)
			c->sort = SORT_RESIDENT;
		else if (strcmp(arg, "percent") == 0)
			c->sort = SORT_PERCENT;
		else
			return usage_error("stat", "--sort wants name, size, resident or percent, not '%s'",
					   arg);
		break;
	default:
		return 0;
	}
	return 1;
}

/* The command line into c, sel and o. true: go on with the paths at
 * argv[optind]; false: exit with *status. */
static bool parse_args(struct stat_ctx *c, struct selection *sel, struct stat_args *o,
		       int argc, char **argv, int *status)
{
	int opt, ret;

	optind = 1;
	opterr = 0; /* our own messages, with the subcommand's name */
	while ((opt = getopt_long(argc, argv, ":hq" SELECTION_SHORT_OPTIONS, stat_options,
				  NULL)) != -1) {
		if (opt == 'h') {
			printf("%s%s\n%s", stat_usage_head, selection_help, stat_usage_tail);
			*status = PC_EXIT_OK;
			return false;
		}
		ret = selection_option(sel, "stat", opt, optarg);
		if (ret == 0)
			ret = stat_option(c, o, opt, optarg);
		if (ret == 0)
			ret = usage_getopt_error("stat", opt, argv);
		if (ret == -ENOMEM) {
			cli_error(NULL, 0, "out of memory");
			*status = PC_EXIT_FAILED;
			return false;
		}
		if (ret > 1) {
			*status = ret;
			return false;
		}
	}
	if (o->json && o->ndjson)
		*status = usage_error("stat", "%s", "--json and --ndjson exclude each other");
	else if (o->bytes && o->pages)
		*status = usage_error("stat", "%s", "--bytes and --pages exclude each other");
	else
		*status = selection_check(sel, "stat", argc - optind);
	return *status == 0;
}

/* What the options ask of the report and the measurement. */
static void setup_report(struct stat_ctx *c, const struct stat_args *o)
{
	if (c->rep.map)
		c->res_flags &= ~PC_RES_COUNT_ONLY;
	c->rep.mode = o->json ? OUT_JSON : o->ndjson ? OUT_NDJSON : OUT_TEXT;
	c->rep.unit = o->bytes ? UNIT_BYTES : o->pages ? UNIT_PAGES : UNIT_HUMAN;
	c->rep.stats = c->stats;
	c->rep.perturb_column = c->res_flags & PC_RES_ALLOW_PERTURB;
	c->rep.page_size = (uint64_t)pc_page_size();
	c->rep.width = terminal_width(STDOUT_FILENO);
	progress_init(&c->progress, !c->quiet && isatty(STDERR_FILENO));
}

/* Start the report and measure every path, with threads > 1 on a second
 * thread too; returns when all is measured. 0 or -ENOMEM. */
static int walk_all(struct stat_ctx *c, struct selection *sel, uint64_t threads, int npaths,
		    char **paths)
{
	const struct walk_ops *ops = &stat_walk_ops;
	void *ops_ctx = c;
	struct pipeline *pl = NULL;
	struct walk *w = NULL;
	int ret, fin;

	/* measuring and printing on a second thread while this one walks */
	if (threads > 1 && pipeline_new(&stat_walk_ops, c, &pl) == 0) {
		ops = &pipeline_walk_ops;
		ops_ctx = pl;
	}
	ret = walk_new(&sel->wo, ops, ops_ctx, &w);
	if (ret == 0) {
		report_begin(&c->rep);
		ret = selection_walk(sel, w, npaths, paths);
	}
	fin = pipeline_finish(&pl);
	walk_free(w);
	return ret < 0 ? ret : fin;
}

/* The rows held for --sort or --top, in their order. */
static void report_held_rows(struct stat_ctx *c)
{
	if (!c->nrows)
		return;
	if (c->sort == SORT_NONE)
		g_sort = SORT_RESIDENT; /* --top alone: most resident first */
	else
		g_sort = c->sort;
	qsort(c->rows, c->nrows, sizeof(*c->rows), sort_cmp);
	for (size_t i = 0; i < c->nrows; i++)
		report_row(&c->rep, &c->rows[i]);
}

int cmd_stat(int argc, char **argv)
{
	struct stat_ctx c = { 0 };
	struct stat_args o = { .threads = 2 };
	struct selection sel;
	int ret;

	selection_init(&sel);
	c.res_flags = PC_RES_COUNT_ONLY;
	c.rep.out = stdout;
	if (!parse_args(&c, &sel, &o, argc, argv, &ret))
		goto out;
	c.max_size = sel.max_size;
	setup_report(&c, &o);
	if (walk_all(&c, &sel, o.threads, argc - optind, argv + optind) < 0) {
		progress_clear(&c.progress);
		cli_error(NULL, 0, "out of memory");
		ret = PC_EXIT_FAILED;
		goto out;
	}
	progress_clear(&c.progress);
	report_held_rows(&c);
	report_end(&c.rep, &c.t);
	ret = stdout_status(c.t.errors ? PC_EXIT_FAILED : PC_EXIT_OK);
out:
	for (size_t i = 0; i < c.nrows; i++)
		row_free(&c.rows[i]);
	free(c.rows);
	report_free(&c.rep);
	selection_free(&sel);
	return ret;
}
