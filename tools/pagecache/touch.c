/* SPDX-License-Identifier: MIT */
/*
 * pagecache touch: bring files (or a byte range of each) into the page
 * cache, like vmtouch -t.
 *
 * How, by measurement on this machine (a 1 GiB evicted file, five rounds
 * alternated, medians; the disk is shared and noisy): MADV_POPULATE_READ
 * on a shared read-only mapping per 8 MiB chunk ~0.58 s, mmap and touching
 * each page (vmtouch -t) ~0.89 s, readahead(2) per 8 MiB chunk ~1.03 s
 * just to issue the reads, POSIX_FADV_WILLNEED per chunk ~1.09 s, io_uring
 * 2 MiB reads at depth 8 ~1.5 s. MADV_POPULATE_READ (5.14+) is the default:
 * it returns when the pages are read, so the rate it reports is the real
 * one, and it makes the large folios that later cachestat calls are fast
 * on (doc/kernels.md section 7: readahead and WILLNEED make 4 KiB folios). The
 * others stay available with --method. populate and io_uring are
 * pc_warm()'s PC_WARM_POPULATE and PC_WARM_IO_URING, which skip what is
 * resident and return once the reads are done; readahead and WILLNEED read
 * at most ~8 MiB per call, hence the chunks, and each chunk is waited for
 * two chunks later by reading one byte of its last page.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

#define TOUCH_CHUNK (8u << 20)       /* readahead / WILLNEED call size */
#define TOUCH_WAIT_BEHIND 2          /* chunks in flight before waiting */
#define URING_READ (2u << 20)        /* io_uring read size */
#define URING_DEPTH 8

enum method { METHOD_POPULATE, METHOD_READAHEAD, METHOD_WILLNEED, METHOD_URING };

struct touch_ctx {
	struct action a;             /* first: the walk's callbacks see it */
	enum method method;
	bool has_range;
	uint64_t range_start, range_end; /* [start, end), end UINT64_MAX: to EOF */
	uint64_t bytes, size;
	uint64_t known_files, known_pages, resident;
	uint64_t unknown_files;
};

static const char touch_usage_head[] =
	"Usage: pagecache touch [OPTIONS] PATH...\n"
	"\n"
	"Bring the files into the page cache, like vmtouch -t. Directories are\n"
	"walked recursively. Reports the bytes read and the rate, and how much\n"
	"of each file is resident afterwards where the kernel shows it to you.\n"
	"\n"
	"      --range A-B         only bytes A (inclusive) to B (exclusive) of each\n"
	"                          file; K, M, G suffixes; 'A-' to the end, '-B'\n"
	"                          from the start\n"
	"      --method M          populate (default, the fastest measured here:\n"
	"                          MADV_POPULATE_READ on a mapping, 8 MiB at a\n"
	"                          time), readahead (readahead(2) per 8 MiB chunk),\n"
	"                          willneed (POSIX_FADV_WILLNEED per chunk) or\n"
	"                          io_uring (2 MiB reads, 8 in flight)\n"
	"\n"
	"Output:\n"
	"  -v, --verbose           one line per file\n"
	"      --json              one JSON document (format_version 1)\n"
	"  -q, --quiet             no progress line and no notes about skipped files\n"
	"\n";

static const char touch_usage_tail[] =
	"\n"
	"  -h, --help              show this help\n"
	"\n"
	"Exit status: 0 all went well, 1 some file failed, 2 usage error.\n";

enum { OPT_JSON = 256, OPT_RANGE, OPT_METHOD };

static const struct option touch_options[] = {
	{ "range", required_argument, NULL, OPT_RANGE },
	{ "method", required_argument, NULL, OPT_METHOD },
	{ "verbose", no_argument, NULL, 'v' },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "quiet", no_argument, NULL, 'q' },
	SELECTION_LONG_OPTIONS,
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int parse_range(char *arg, uint64_t *start, uint64_t *end)
{
	char *dash = strchr(arg, '-');
	int ret = 0;

	if (!dash)
		return -EINVAL;
	*dash = '\0';
	*start = 0;
	*end = UINT64_MAX;
	if (*arg)
		ret = parse_size(arg, start);
	if (ret == 0 && dash[1])
		ret = parse_size(dash + 1, end);
	*dash = '-';
	if (ret == 0 && *start >= *end)
		ret = -EINVAL;
	return ret;
}

static void show_progress(struct touch_ctx *c, uint64_t extra)
{
	double t;
	char done[32], rate[32];

	if (!progress_due(&c->a.progress))
		return;
	t = now_seconds() - c->a.progress.start;
	human_bytes(c->bytes + extra, done, sizeof(done));
	human_bytes((uint64_t)((double)(c->bytes + extra) / t), rate, sizeof(rate));
	progress_show(&c->a.progress, "%llu files, %s read, %s/s",
		      (unsigned long long)c->a.files, done, rate);
}

/* Wait until the page at off is read (it was asked for earlier). */
static int wait_for(int fd, uint64_t off)
{
	char byte;

	if (pread(fd, &byte, 1, (off_t)off) < 0)
		return -errno;
	return 0;
}

static int touch_advise(struct touch_ctx *c, int fd, uint64_t start, uint64_t end)
{
	uint64_t ps = (uint64_t)pc_page_size();
	uint64_t waited = start;

	for (uint64_t off = start; off < end; off += TOUCH_CHUNK) {
		uint64_t len = end - off < TOUCH_CHUNK ? end - off : TOUCH_CHUNK;
		int ret;

		if (c->method == METHOD_READAHEAD) {
			if (readahead(fd, (off_t)off, len) < 0)
				return -errno;
		} else {
			ret = posix_fadvise(fd, (off_t)off, (off_t)len, POSIX_FADV_WILLNEED);
			if (ret)
				return -ret;
		}
		if (off >= start + TOUCH_WAIT_BEHIND * (uint64_t)TOUCH_CHUNK) {
			uint64_t behind = off - TOUCH_WAIT_BEHIND * (uint64_t)TOUCH_CHUNK;

			ret = wait_for(fd, behind + TOUCH_CHUNK - ps);
			if (ret < 0)
				return ret;
			waited = behind + TOUCH_CHUNK;
			show_progress(c, waited - start);
		}
	}
	/* the chunks still in flight: wait for the last page of each */
	while (waited < end) {
		uint64_t last = waited + TOUCH_CHUNK < end ? waited + TOUCH_CHUNK : end;
		int ret = wait_for(fd, (last - 1) & ~(ps - 1));

		if (ret < 0)
			return ret;
		waited = last;
	}
	return 0;
}

static void warm_progress(uint64_t bytes_done, void *arg)
{
	show_progress(arg, bytes_done);
}

/* populate and io_uring: pc_warm() on [start, end) of fd, which reads
 * what is not resident and returns once it is read. -EOPNOTSUPP when the
 * kernel has no MADV_POPULATE_READ (before 5.14), or no io_uring. */
static int touch_warm(struct touch_ctx *c, int fd, uint64_t start, uint64_t end)
{
	uint64_t ps = (uint64_t)pc_page_size();
	struct pc_run run = { start / ps, (end - start + ps - 1) / ps };
	struct pc_warm_opts o = {
		.size = sizeof(o), .progress = warm_progress, .progress_arg = c,
	};
	int64_t got;

	if (c->method == METHOD_URING) {
		o.strategy = PC_WARM_IO_URING;
		o.chunk_bytes = URING_READ;
		o.queue_depth = URING_DEPTH;
	} else {
		o.strategy = PC_WARM_POPULATE;
		o.chunk_bytes = TOUCH_CHUNK;
	}
	got = pc_warm(fd, &run, 1, &o, NULL);
	return got < 0 ? (int)got : 0;
}

static int on_file(void *ctx, int fd, const struct stat *st, uint64_t mnt_id,
		   const char *path, size_t len)
{
	struct touch_ctx *c = ctx;
	uint64_t ps = (uint64_t)pc_page_size();
	uint64_t size, start, end, resident = 0, npages = 0;
	bool known;
	int ret, flags;

	ret = file_bytes(fd, st, &size);
	if (ret < 0)
		return ret;
	if (action_too_big(&c->a, size))
		return 0;
	/* reads that wait: the walk opened it O_NONBLOCK (for FIFOs' sake) */
	flags = fcntl(fd, F_GETFL);
	if (flags >= 0)
		fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
	start = c->range_start < size ? c->range_start & ~(ps - 1) : size;
	end = c->range_end < size ? c->range_end : size;
	end = end > start ? (end + ps - 1) & ~(ps - 1) : start;
	if (end > size)
		end = size; /* the last partial page is read whole anyway */
	if (end > start) {
		if (c->method == METHOD_POPULATE || c->method == METHOD_URING) {
			ret = touch_warm(c, fd, start, end);
			if (ret == -EOPNOTSUPP && c->method == METHOD_POPULATE)
				c->method = METHOD_READAHEAD; /* before 5.14 */
		}
		if (c->method == METHOD_READAHEAD || c->method == METHOD_WILLNEED)
			ret = touch_advise(c, fd, start, end);
		if (ret < 0)
			return ret;
	}
	c->a.files++;
	c->bytes += end - start;
	c->size += size;

	known = true; /* nothing asked, nothing hidden */
	if (end > start) {
		ret = action_resident(fd, start, end - start, &resident, &npages);
		if (ret < 0)
			return ret;
		known = ret;
	}
	if (known) {
		c->known_files++;
		c->known_pages += npages;
		c->resident += resident;
	} else {
		c->unknown_files++;
	}
	if (c->a.json) {
		struct json *j = &c->a.rep.json;

		json_begin_object(j, NULL);
		json_path(j, path, len);
		json_uint(j, "size", size);
		json_uint(j, "offset", start);
		json_uint(j, "bytes_read", end - start);
		json_uint(j, "pages", npages);
		if (known)
			json_uint(j, "resident_after", resident);
		else
			json_null(j, "resident_after");
		json_cstring(j, "quality", known ? "exact" : "unknown");
		json_end_object(j);
	} else if (c->a.verbose) {
		char s[32], rd[32], res[32] = "?";

		progress_clear(&c->a.progress);
		human_bytes(size, s, sizeof(s));
		human_bytes(end - start, rd, sizeof(rd));
		if (known)
			human_bytes(resident * ps, res, sizeof(res));
		printf("%7s %7s %7s %-7s ", s, rd, res, known ? "exact" : "unknown");
		text_write_path(stdout, path, len);
		putchar('\n');
	}
	show_progress(c, 0);
	return 0;
}

static const struct walk_ops touch_walk_ops = {
	.file = on_file,
	.note = action_note,
	.error = action_error,
};

static const char *method_name(enum method m)
{
	switch (m) {
	case METHOD_POPULATE: return "populate";
	case METHOD_URING: return "io_uring";
	case METHOD_WILLNEED: return "willneed";
	default: return "readahead";
	}
}

static int touch_option(void *ctx, int opt, char *arg)
{
	struct touch_ctx *c = ctx;

	switch (opt) {
	case OPT_JSON:
		c->a.json = true;
		return 1;
	case OPT_RANGE:
		if (parse_range(arg, &c->range_start, &c->range_end) < 0)
			return usage_error("touch", "--range wants A-B with A < B (like 0-64M), not '%s'",
					   arg);
		c->has_range = true;
		return 1;
	case OPT_METHOD:
		if (strcmp(arg, "populate") == 0)
			c->method = METHOD_POPULATE;
		else if (strcmp(arg, "readahead") == 0)
			c->method = METHOD_READAHEAD;
		else if (strcmp(arg, "willneed") == 0)
			c->method = METHOD_WILLNEED;
		else if (strcmp(arg, "io_uring") == 0)
			c->method = METHOD_URING;
		else
			return usage_error("touch", "--method wants populate, readahead, willneed or io_uring, not '%s'",
					   arg);
		return 1;
	default:
		return 0;
	}
}

static const struct action_cli touch_cli = {
	.options = touch_options,
	.usage_head = touch_usage_head,
	.usage_tail = touch_usage_tail,
	.option = touch_option,
};

static void json_totals(struct touch_ctx *c, double t)
{
	struct json *j = &c->a.rep.json;

	action_json_totals(&c->a);
	json_uint(j, "size", c->size);
	json_uint(j, "bytes_read", c->bytes);
	json_double(j, "seconds", t);
	json_double(j, "bytes_per_second", t > 0 ? (double)c->bytes / t : 0);
	json_cstring(j, "method", method_name(c->method));
	json_uint(j, "known_files", c->known_files);
	json_uint(j, "unknown_files", c->unknown_files);
	json_uint(j, "pages", c->known_pages);
	json_uint(j, "resident_after", c->resident);
	action_json_end(&c->a);
}

static void text_totals(struct touch_ctx *c, double t)
{
	char rd[32], rate[32], res[32];

	human_bytes(c->bytes, rd, sizeof(rd));
	human_bytes(t > 0 ? (uint64_t)((double)c->bytes / t) : 0, rate, sizeof(rate));
	human_bytes(c->resident * (uint64_t)pc_page_size(), res, sizeof(res));
	printf("touched: %llu file%s, %s read in %.2f s (%s/s, %s)",
	       (unsigned long long)c->a.files, c->a.files == 1 ? "" : "s", rd, t, rate,
	       method_name(c->method));
	if (c->known_files)
		printf("; resident after %s (%llu/%llu pages) in the %llu known file%s", res,
		       (unsigned long long)c->resident, (unsigned long long)c->known_pages,
		       (unsigned long long)c->known_files, c->known_files == 1 ? "" : "s");
	printf("; %llu unknown; %llu error%s; %llu skipped\n",
	       (unsigned long long)c->unknown_files, (unsigned long long)c->a.errors,
	       c->a.errors == 1 ? "" : "s", (unsigned long long)c->a.skipped);
}

int cmd_touch(int argc, char **argv)
{
	struct touch_ctx c = { 0 };
	struct selection sel;
	double t;
	int ret;

	selection_init(&sel);
	c.a.cmd = "touch";
	c.range_end = UINT64_MAX;
	if (!action_options(&c.a, &sel, &touch_cli, &c, argc, argv, &ret))
		goto out;
	if (action_walk(&c.a, &sel, &touch_walk_ops, &c,
			"   SIZE    READ RESIDENT QUALITY PATH\n", argc - optind, argv + optind) < 0) {
		progress_clear(&c.a.progress);
		cli_error(NULL, 0, "out of memory");
		ret = PC_EXIT_FAILED;
		goto out;
	}
	t = now_seconds() - c.a.progress.start;
	if (c.a.json)
		json_totals(&c, t);
	else
		text_totals(&c, t);
	ret = action_status(&c.a);
out:
	report_free(&c.a.rep);
	selection_free(&sel);
	return ret;
}
