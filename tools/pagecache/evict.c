/* SPDX-License-Identifier: MIT */
/*
 * pagecache evict: drop files' pages from the page cache
 * (POSIX_FADV_DONTNEED through pc_evict), like vmtouch -e, with the
 * residency before and after where the kernel shows it to the caller.
 */
#include <errno.h>
#include <getopt.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

struct evict_ctx {
	struct action a;             /* first: the walk's callbacks see it */
	uint64_t size, pages;
	uint64_t known_files, known_pages, before, after;
	uint64_t unknown_files;
};

static const char evict_usage_head[] =
	"Usage: pagecache evict [OPTIONS] PATH...\n"
	"\n"
	"Drop the files' pages from the page cache (POSIX_FADV_DONTNEED), like\n"
	"vmtouch -e. Directories are walked recursively. Dirty pages and pages\n"
	"that some process has mapped or locked stay. The residency before and\n"
	"after is shown where the kernel reveals it to you, '?' elsewhere.\n"
	"\n"
	"Output:\n"
	"  -v, --verbose           one line per file\n"
	"      --json              one JSON document (format_version 1)\n"
	"  -q, --quiet             no progress line and no notes about skipped files\n"
	"\n";

static const char evict_usage_tail[] =
	"\n"
	"  -h, --help              show this help\n"
	"\n"
	"Exit status: 0 all went well, 1 some file failed, 2 usage error.\n";

enum { OPT_JSON = 256 };

static const struct option evict_options[] = {
	{ "verbose", no_argument, NULL, 'v' },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "quiet", no_argument, NULL, 'q' },
	SELECTION_LONG_OPTIONS,
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static void text_amount(uint64_t pages, bool known, char *buf, size_t size)
{
	if (!known) {
		snprintf(buf, size, "?");
		return;
	}
	human_bytes(pages * (uint64_t)pc_page_size(), buf, size);
}

static int on_file(void *ctx, int fd, const struct stat *st, uint64_t mnt_id,
		   const char *path, size_t len)
{
	struct evict_ctx *c = ctx;
	uint64_t size, npages = 0, before = 0, after = 0;
	int known_before, known_after, ret;

	ret = file_bytes(fd, st, &size);
	if (ret < 0)
		return ret;
	if (action_too_big(&c->a, size))
		return 0;
	known_before = action_resident(fd, 0, 0, &before, &npages);
	if (known_before < 0)
		return known_before;
	ret = pc_evict(fd, 0, 0);
	if (ret < 0)
		return ret;
	known_after = action_resident(fd, 0, 0, &after, &npages);
	if (known_after < 0)
		return known_after;

	c->a.files++;
	c->size += size;
	c->pages += npages;
	if (known_before && known_after) {
		c->known_files++;
		c->known_pages += npages;
		c->before += before;
		c->after += after;
	} else {
		c->unknown_files++;
	}
	if (c->a.json) {
		struct json *j = &c->a.rep.json;

		json_begin_object(j, NULL);
		json_path(j, path, len);
		json_uint(j, "size", size);
		json_uint(j, "pages", npages);
		if (known_before)
			json_uint(j, "resident_before", before);
		else
			json_null(j, "resident_before");
		if (known_after)
			json_uint(j, "resident_after", after);
		else
			json_null(j, "resident_after");
		json_cstring(j, "quality", known_before && known_after ? "exact" : "unknown");
		json_end_object(j);
	} else if (c->a.verbose) {
		char s[32], b[32], a[32];

		progress_clear(&c->a.progress);
		human_bytes(size, s, sizeof(s));
		text_amount(before, known_before, b, sizeof(b));
		text_amount(after, known_after, a, sizeof(a));
		printf("%7s %7s %7s %-7s ", s, b, a, known_before && known_after ? "exact" : "unknown");
		text_write_path(stdout, path, len);
		putchar('\n');
	}
	if (progress_due(&c->a.progress))
		progress_show(&c->a.progress, "%llu files evicted", (unsigned long long)c->a.files);
	return 0;
}

static const struct walk_ops evict_walk_ops = {
	.file = on_file,
	.note = action_note,
	.error = action_error,
};

static void text_totals(struct evict_ctx *c)
{
	char size[32], b[32], a[32];

	human_bytes(c->size, size, sizeof(size));
	printf("evicted: %llu file%s, %s, %llu page%s", (unsigned long long)c->a.files,
	       c->a.files == 1 ? "" : "s", size, (unsigned long long)c->pages,
	       c->pages == 1 ? "" : "s");
	if (c->known_files) {
		human_bytes(c->before * (uint64_t)pc_page_size(), b, sizeof(b));
		human_bytes(c->after * (uint64_t)pc_page_size(), a, sizeof(a));
		printf("; resident before %s (%llu pages), after %s (%llu pages) in the %llu known file%s",
		       b, (unsigned long long)c->before, a, (unsigned long long)c->after,
		       (unsigned long long)c->known_files, c->known_files == 1 ? "" : "s");
	}
	printf("; %llu unknown; %llu error%s; %llu skipped", (unsigned long long)c->unknown_files,
	       (unsigned long long)c->a.errors, c->a.errors == 1 ? "" : "s",
	       (unsigned long long)c->a.skipped);
	if (c->a.filtered)
		printf("; %llu over --max-size", (unsigned long long)c->a.filtered);
	putchar('\n');
	if (c->unknown_files)
		printf("note: the kernel hides the residency of %llu file%s from this user: "
		       "evicted, but before and after are unknown\n",
		       (unsigned long long)c->unknown_files, c->unknown_files == 1 ? "" : "s");
}

static int evict_option(void *ctx, int opt, char *arg)
{
	struct evict_ctx *c = ctx;

	(void)arg;
	if (opt != OPT_JSON)
		return 0;
	c->a.json = true;
	return 1;
}

static const struct action_cli evict_cli = {
	.options = evict_options,
	.usage_head = evict_usage_head,
	.usage_tail = evict_usage_tail,
	.option = evict_option,
};

static void json_totals(struct evict_ctx *c)
{
	struct json *j = &c->a.rep.json;

	action_json_totals(&c->a);
	json_uint(j, "size", c->size);
	json_uint(j, "pages", c->pages);
	json_uint(j, "known_files", c->known_files);
	json_uint(j, "unknown_files", c->unknown_files);
	json_uint(j, "resident_before", c->before);
	json_uint(j, "resident_after", c->after);
	action_json_end(&c->a);
}

int cmd_evict(int argc, char **argv)
{
	struct evict_ctx c = { 0 };
	struct selection sel;
	int ret;

	selection_init(&sel);
	c.a.cmd = "evict";
	if (!action_options(&c.a, &sel, &evict_cli, &c, argc, argv, &ret))
		goto out;
	if (action_walk(&c.a, &sel, &evict_walk_ops, &c,
			"   SIZE  BEFORE   AFTER QUALITY PATH\n", argc - optind, argv + optind) < 0) {
		progress_clear(&c.a.progress);
		cli_error(NULL, 0, "out of memory");
		ret = PC_EXIT_FAILED;
		goto out;
	}
	if (c.a.json)
		json_totals(&c);
	else
		text_totals(&c);
	ret = action_status(&c.a);
out:
	report_free(&c.a.rep);
	selection_free(&sel);
	return ret;
}
