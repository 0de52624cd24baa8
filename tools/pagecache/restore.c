/* SPDX-License-Identifier: MIT */
/*
 * pagecache restore: the options, the gentle I/O policy and the output of
 * a restore; pc_restore() does the restore itself (lib/restore/). The
 * snapshot comes through snapsrc (native or happycache) as a
 * pc_restore_source; a seekable one is validated here, before anything
 * else, so that a corrupt snapshot is reported first and reads nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "snapcli.h"

#define CHANGED_NAMES 20

static const char *const skip_text[PC_RESTORE_SKIP_COUNT] = {
	"recorded unknown at capture", "missing", "refused (unsafe paths, outside the root)",
	"not a regular file", "changed (--strict)", "not reached", "errors",
};

struct restore {
	/* options */
	struct pc_restore_opts o;
	bool fast, json, quiet;
	enum snap_format fmt;
	/* input, root */
	const char *name;
	struct snapsrc *src;
	char *root;
	int rootfd;
	/* output */
	struct progress progress;
	uint64_t warned;
	char *changed_names[CHANGED_NAMES];
	uint64_t nchanged;
	const char *gentle;
	struct pc_restore_stats st;
};

/* SIGINT, SIGTERM: restore stops reading, waits for what it queued and
 * prints its summary ("stopped early: interrupted by a signal"); a second
 * one kills at once. A signal the caller ignores stays ignored. */
static volatile sig_atomic_t got_signal;

static void on_signal(int sig)
{
	got_signal = sig;
}

static const char restore_usage[] =
	"Usage: pagecache restore [OPTIONS] [FILE]\n"
	"\n"
	"Bring the pages recorded in FILE (default: pagecache.snapshot, or\n"
	".happycache.gz with --format=happycache; '-': standard input) back into\n"
	"the page cache. Only pages that are not already resident are read;\n"
	"files are opened beneath the root only.\n"
	"\n"
	"      --root DIR          restore beneath DIR (default: the root recorded\n"
	"                          in the snapshot; for happycache files the current\n"
	"                          directory)\n"
	"      --no-find-renamed   do not look for missing files by their recorded\n"
	"                          device and inode (renamed, or another hard link)\n"
	"      --strict            skip files whose size or mtime changed since the\n"
	"                          dump (default: restore them, and name them)\n"
	"      --max-bytes SIZE    read at most SIZE (K, M, G, T suffixes). Default:\n"
	"                          the memory available (MemAvailable, and the room\n"
	"                          left in the memory cgroup)\n"
	"      --fast              full speed: without it, I/O priority idle and\n"
	"                          SCHED_IDLE, so that a live system comes first\n"
	"      --rate MB           read at most MB megabytes (10^6 bytes) per second\n"
	"      --strategy S        readahead (default: readahead(2) in 2 MiB chunks),\n"
	"                          stream (large holes as RWF_NOWAIT reads that start\n"
	"                          the kernel's own readahead, 6.12+: less CPU; the\n"
	"                          rest as readahead) or io_uring (reads at queue\n"
	"                          depth 8, waited for)\n"
	"      --chunk SIZE        bytes per readahead(2) call or io_uring read\n"
	"                          (default 2M)\n"
	"      --queue-depth N     io_uring reads in flight, 1 to 256 (default 8)\n"
	"      --order O           auto (default: disk on a rotating disk, else file),\n"
	"                          file (files in the snapshot's order), disk (small\n"
	"                          files by the disk address of their first wanted\n"
	"                          page, FIEMAP, up to 65536 at a time) or physical\n"
	"                          (files and runs sorted by their place on the disk;\n"
	"                          holds the whole snapshot's runs in memory)\n"
	"      --format F          auto (default: gzip's magic means happycache;\n"
	"                          needs a seekable FILE), native or happycache\n"
	"      --json              print the summary as one JSON object\n"
	"                          (format_version 1, fields in pagecache(1))\n"
	"  -q, --quiet             no progress line, no per-file notes\n"
	"  -h, --help              show this help\n"
	"\n"
	"Restore stops early when its budget is spent, or when cachestat(2) shows\n"
	"the pages it restored being evicted again (the cache is full).\n"
	"\n"
	"Exit status: 0 done (files skipped for a reason included), 1 a corrupt\n"
	"snapshot, a refused path, a read error, 2 usage error.\n";

enum {
	OPT_ROOT = 256, OPT_STRICT, OPT_MAX_BYTES, OPT_FAST, OPT_RATE, OPT_STRATEGY,
	OPT_ORDER, OPT_FORMAT, OPT_JSON, OPT_CHUNK, OPT_QUEUE_DEPTH, OPT_NO_FIND_RENAMED,
};

static const struct option restore_options[] = {
	{ "root", required_argument, NULL, OPT_ROOT },
	{ "strict", no_argument, NULL, OPT_STRICT },
	{ "max-bytes", required_argument, NULL, OPT_MAX_BYTES },
	{ "fast", no_argument, NULL, OPT_FAST },
	{ "rate", required_argument, NULL, OPT_RATE },
	{ "strategy", required_argument, NULL, OPT_STRATEGY },
	{ "order", required_argument, NULL, OPT_ORDER },
	{ "chunk", required_argument, NULL, OPT_CHUNK },
	{ "queue-depth", required_argument, NULL, OPT_QUEUE_DEPTH },
	{ "no-find-renamed", no_argument, NULL, OPT_NO_FIND_RENAMED },
	{ "format", required_argument, NULL, OPT_FORMAT },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* ---- progress, notes ---- */

static void on_progress(const struct pc_restore_progress *p, void *arg)
{
	struct restore *c = arg;
	char b[32], r[32];

	if (!progress_due(&c->progress))
		return;
	human_bytes(p->bytes_done, b, sizeof(b));
	human_bytes((uint64_t)((double)p->bytes_done / p->seconds), r, sizeof(r));
	progress_show(&c->progress, "restore: %llu files, %s read, %s/s",
		      (unsigned long long)p->files, b, r);
}

static void note(struct restore *c, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void note(struct restore *c, const char *path, const char *fmt, ...)
{
	va_list ap;

	if (c->quiet)
		return;
	va_start(ap, fmt);
	progress_note(&c->progress, &c->warned, "notes", path, path ? strlen(path) : 0, fmt, ap);
	va_end(ap);
}

/* A refusal's words, as restore has always said them. */
static const char *refusal_text(int reason)
{
	switch (reason) {
	case PC_RESTORE_EV_OUTSIDE: return "it resolves outside the root";
	case PC_RESTORE_EV_SYMLINK:
		return "a symlink (leaving the root, or met in a component walk)";
	case PC_RESTORE_EV_NAME_TOO_LONG:
		return "a name too long (a component of more than NAME_MAX bytes)";
	default: return "an unsafe path (absolute, or with '..')";
	}
}

static void on_event(const struct pc_restore_event *ev, void *arg)
{
	struct restore *c = arg;

	switch (ev->reason) {
	case PC_RESTORE_EV_CHANGED:
		if (c->nchanged < CHANGED_NAMES)
			c->changed_names[c->nchanged] = strdup(ev->path);
		c->nchanged++;
		break;
	case PC_RESTORE_EV_MISSING: note(c, ev->path, "skipped: missing"); break;
	case PC_RESTORE_EV_NOT_BENEATH:
		note(c, ev->path, "refused: not beneath the root %s", c->root);
		break;
	case PC_RESTORE_EV_OUTSIDE:
	case PC_RESTORE_EV_SYMLINK:
	case PC_RESTORE_EV_NAME_TOO_LONG:
	case PC_RESTORE_EV_UNSAFE_PATH:
		note(c, ev->path, "refused: %s", refusal_text(ev->reason));
		break;
	case PC_RESTORE_EV_NOT_REGULAR: note(c, ev->path, "skipped: not a regular file"); break;
	case PC_RESTORE_EV_OPEN_ERROR:
		note(c, ev->path, "skipped: %s", strerror(-ev->error));
		break;
	case PC_RESTORE_EV_REPLACED:
		note(c, ev->path, "skipped: replaced while the restore ran");
		break;
	case PC_RESTORE_EV_READ_ERROR:
		note(c, ev->path, "read error: %s", strerror(-ev->error));
		break;
	case PC_RESTORE_EV_RENAMED:
		note(c, ev->path, "restored: the file recorded under another name (renamed "
		     "since the dump, or another of its hard links: the same device, inode, "
		     "size and mtime)");
		break;
	case PC_RESTORE_EV_SEARCH_FAILED:
		note(c, NULL, "the search for files renamed since the dump failed: %s",
		     strerror(-ev->error));
		break;
	default:
		break;
	}
}

/* ---- gentle by default ---- */

#define IOPRIO_CLASS_SHIFT 13
#define IOPRIO_CLASS_IDLE 3
#define IOPRIO_WHO_PROCESS 1

static void be_gentle(struct restore *c)
{
	struct sched_param sp = { 0 };
	bool io = syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0,
			  IOPRIO_CLASS_IDLE << IOPRIO_CLASS_SHIFT) == 0;
	bool cpu = sched_setscheduler(0, SCHED_IDLE, &sp) == 0;

	c->gentle = io && cpu ? "I/O priority idle, SCHED_IDLE" :
		io ? "I/O priority idle (SCHED_IDLE refused)" :
		cpu ? "SCHED_IDLE (idle I/O priority refused)" : "refused by the kernel";
}

/* ---- the summary ---- */

static const char *stop_text(int s)
{
	switch (s) {
	case PC_RESTORE_STOP_BUDGET: return "budget";
	case PC_RESTORE_STOP_EVICTING: return "evicting";
	case PC_RESTORE_STOP_CANCELLED: return "signal";
	default: return NULL;
	}
}

static const char *budget_from(const struct restore *c)
{
	return c->o.max_bytes ? "--max-bytes" : c->st.budget_from;
}

static double resident_percent(const struct pc_restore_stats *s)
{
	return s->final_pages_wanted ?
		100.0 * (double)s->final_pages_resident / (double)s->final_pages_wanted : 100.0;
}

static void json_counts(struct restore *c, struct json *j)
{
	const struct pc_restore_stats *s = &c->st;
	uint64_t skipped = 0;

	json_uint(j, "files", s->files);
	json_uint(j, "files_restored", s->files_restored);
	json_uint(j, "files_without_pages", s->files_without_pages);
	json_uint(j, "pages_wanted", s->pages_wanted);
	json_uint(j, "pages_beyond_eof", s->pages_beyond_eof);
	if (s->resident_before_quality == PC_QUALITY_UNKNOWN)
		json_null(j, "pages_already_resident");
	else
		json_uint(j, "pages_already_resident", s->pages_resident_before);
	json_uint(j, "pages_read", s->pages_read);
	json_uint(j, "bytes_read", s->bytes_read);
	json_uint(j, "pages_read_again", s->pages_read_again);
	json_uint(j, "pages_streamed", s->pages_streamed);
	json_double(j, "seconds", s->seconds);
	json_double(j, "bytes_per_second", s->seconds > 0 ? (double)s->bytes_read / s->seconds : 0);
	json_begin_object(j, "skipped");
	for (int i = 0; i < PC_RESTORE_SKIP_COUNT; i++) {
		json_uint(j, pc_restore_skip_name(i), s->skipped[i]);
		skipped += s->skipped[i];
	}
	json_end_object(j);
	json_uint(j, "files_skipped", skipped);
	json_uint(j, "renamed", s->renamed);
	json_uint(j, "changed", s->changed);
	json_begin_array(j, "changed_files");
	for (uint64_t i = 0; i < s->changed && i < CHANGED_NAMES; i++)
		if (c->changed_names[i])
			json_cstring(j, NULL, c->changed_names[i]);
	json_end_array(j);
}

static void summary_json(struct restore *c, FILE *f)
{
	const struct pc_restore_stats *s = &c->st;
	struct json j;

	json_init(&j, f, true);
	json_begin_object(&j, NULL);
	json_uint(&j, "format_version", 1);
	json_cstring(&j, "snapshot", c->name);
	json_cstring(&j, "format", snapsrc_format(c->src) == SNAP_HAPPYCACHE ? "happycache"
		     : "native");
	json_cstring(&j, "root", c->root);
	json_cstring(&j, "open_method", s->open_method);
	json_cstring(&j, "order", pc_restore_order_name(s->order));
	json_counts(c, &j);
	if (stop_text(s->stopped))
		json_cstring(&j, "stopped", stop_text(s->stopped));
	else
		json_null(&j, "stopped");
	if (s->budget_bytes == UINT64_MAX)
		json_null(&j, "budget_bytes");
	else
		json_uint(&j, "budget_bytes", s->budget_bytes);
	json_cstring(&j, "budget_from", budget_from(c));
	json_cstring(&j, "eviction_watch", s->eviction_watch ? strerror(-s->eviction_watch) : "on");
	json_uint(&j, "evicted_again_pages", s->evicted_again_pages);
	json_cstring(&j, "gentle", c->gentle ? c->gentle : "no (--fast)");
	json_uint(&j, "final_pages_wanted", s->final_pages_wanted);
	if (s->final_quality == PC_QUALITY_UNKNOWN) {
		json_null(&j, "final_pages_resident");
		json_null(&j, "final_resident_percent");
	} else {
		json_uint(&j, "final_pages_resident", s->final_pages_resident);
		json_double(&j, "final_resident_percent", resident_percent(s));
	}
	json_double(&j, "settle_seconds", s->settle_seconds);
	if (s->settle_end)
		json_cstring(&j, "settle_end", s->settle_end);
	else
		json_null(&j, "settle_end");
	json_end_object(&j);
	json_newline(&j);
}

/* files, skipped, renamed, changed */
static void text_files(struct restore *c, FILE *f)
{
	const struct pc_restore_stats *s = &c->st;
	uint64_t skipped = 0;
	bool first = true;

	for (int i = 0; i < PC_RESTORE_SKIP_COUNT; i++)
		skipped += s->skipped[i];
	fprintf(f, "files:          %llu in the snapshot, %llu restored, %llu without pages, "
		"%llu skipped\n", (unsigned long long)s->files,
		(unsigned long long)s->files_restored, (unsigned long long)s->files_without_pages,
		(unsigned long long)skipped);
	for (int i = 0; skipped && i < PC_RESTORE_SKIP_COUNT; i++) {
		if (!s->skipped[i])
			continue;
		fprintf(f, "%s%llu %s", first ? "skipped:        " : ", ",
			(unsigned long long)s->skipped[i], skip_text[i]);
		first = false;
	}
	if (skipped)
		fputc('\n', f);
	if (s->renamed)
		fprintf(f, "renamed:        %llu files found under another name (the same "
			"device, inode, size and mtime) and restored there\n",
			(unsigned long long)s->renamed);
	if (!s->changed)
		return;
	fprintf(f, "changed:        %llu files' size or mtime changed since the dump%s:",
		(unsigned long long)s->changed,
		c->o.flags & PC_RESTORE_STRICT ? " (skipped: --strict)" : "");
	for (uint64_t i = 0; i < s->changed && i < CHANGED_NAMES; i++) {
		fputc(' ', f);
		if (c->changed_names[i])
			text_write_path(f, c->changed_names[i], strlen(c->changed_names[i]));
	}
	if (s->changed > CHANGED_NAMES)
		fprintf(f, " ...");
	fputc('\n', f);
}

/* pages wanted, already resident, read, streamed, read again */
static void text_pages(const struct pc_restore_stats *s, FILE *f)
{
	char b[32], r[32];

	fprintf(f, "pages wanted:   %llu", (unsigned long long)s->pages_wanted);
	if (s->pages_beyond_eof)
		fprintf(f, " (%llu beyond the end of their file now)",
			(unsigned long long)s->pages_beyond_eof);
	fputc('\n', f);
	if (s->resident_before_quality == PC_QUALITY_UNKNOWN)
		fprintf(f, "already resident: unknown for some files (the kernel hides their "
			"residency: every page was read); %llu pages seen\n",
			(unsigned long long)s->pages_resident_before);
	else
		fprintf(f, "already resident: %llu pages\n",
			(unsigned long long)s->pages_resident_before);
	human_bytes(s->bytes_read, b, sizeof(b));
	human_bytes(s->seconds > 0 ? (uint64_t)((double)s->bytes_read / s->seconds) : 0, r,
		    sizeof(r));
	fprintf(f, "read:           %llu pages (%s) in %.2f s, %s/s\n",
		(unsigned long long)s->pages_read, b, s->seconds, r);
	if (s->pages_streamed)
		fprintf(f, "streamed:       %llu of them by the kernel's own readahead, started by "
			"RWF_NOWAIT reads\n", (unsigned long long)s->pages_streamed);
	if (s->pages_read_again)
		fprintf(f, "read again:     %llu pages gone before the end (evicted as they "
			"landed, or dropped by readahead; counted above)\n",
			(unsigned long long)s->pages_read_again);
}

static void summary_text(struct restore *c, FILE *f)
{
	const struct pc_restore_stats *s = &c->st;
	char bud[32];

	text_files(c, f);
	text_pages(s, f);
	if (s->budget_bytes != UINT64_MAX) {
		human_bytes(s->budget_bytes, bud, sizeof(bud));
		fprintf(f, "budget:         %s (%s)\n", bud, budget_from(c));
	}
	if (s->stopped == PC_RESTORE_STOP_BUDGET)
		fprintf(f, "stopped early:  the budget was spent\n");
	else if (s->stopped == PC_RESTORE_STOP_EVICTING)
		fprintf(f, "stopped early:  the restore was evicting its own pages (%llu pages "
			"of what it read were evicted again: the cache is full)\n",
			(unsigned long long)s->evicted_again_pages);
	else if (s->stopped == PC_RESTORE_STOP_CANCELLED)
		fprintf(f, "stopped early:  interrupted by a signal\n");
	if (s->final_quality == PC_QUALITY_UNKNOWN)
		fprintf(f, "resident now:   unknown (the kernel hides some files' residency "
			"from you)\n");
	else
		fprintf(f, "resident now:   %.2f%% of the wanted pages (%llu of %llu, measured "
			"after %.2f s)\n", resident_percent(s),
			(unsigned long long)s->final_pages_resident,
			(unsigned long long)s->final_pages_wanted, s->settle_seconds);
	fputs("paths opened:   beneath ", f);
	text_write_path(f, c->root, strlen(c->root));
	fprintf(f, " with %s\n", s->open_method);
	fprintf(f, "order:          %s\n", s->order_why ? s->order_why
		: pc_restore_order_name(s->order));
	if (s->eviction_watch)
		fprintf(f, "eviction watch: off (cachestat: %s)\n", strerror(-s->eviction_watch));
	fprintf(f, "gentle:         %s\n", c->gentle ? c->gentle : "no (--fast)");
}

/* ---- the command ---- */

static int parse_choice(const char *arg, const char *const *names, int n, int *out)
{
	for (int i = 0; i < n; i++)
		if (strcmp(arg, names[i]) == 0) {
			*out = i;
			return 0;
		}
	return -EINVAL;
}

/* One option with an argument into c; 0 or PC_EXIT_USAGE (said). */
static int parse_arg(struct restore *c, int opt, const char *arg, const char **root)
{
	static const char *const strategies[] = { "", "readahead", "io_uring", "stream" };
	static const char *const orders[] = { "auto", "file", "disk", "physical" };
	uint64_t v;

	switch (opt) {
	case OPT_ROOT: *root = arg; return 0;
	case OPT_MAX_BYTES:
		if (parse_size(arg, &c->o.max_bytes) < 0 || c->o.max_bytes == 0)
			return usage_error("restore", "--max-bytes wants a size like 1G, not '%s'", arg);
		return 0;
	case OPT_RATE:
		if (parse_uint(arg, UINT64_MAX / 1000000, &v) < 0 || v == 0)
			return usage_error("restore", "--rate wants megabytes per second, not '%s'", arg);
		c->o.rate = v * 1000000;
		return 0;
	case OPT_CHUNK:
		if (parse_size(arg, &c->o.chunk_bytes) < 0 ||
		    c->o.chunk_bytes < (uint64_t)pc_page_size() || c->o.chunk_bytes > (UINT64_C(64) << 20))
			return usage_error("restore", "--chunk wants a size from a page to 64M, not '%s'",
					   arg);
		return 0;
	case OPT_QUEUE_DEPTH:
		if (parse_uint(arg, 256, &v) < 0 || v == 0)
			return usage_error("restore", "--queue-depth wants 1 to 256, not '%s'", arg);
		c->o.queue_depth = (unsigned int)v;
		return 0;
	case OPT_STRATEGY:
		if (!*arg || parse_choice(arg, strategies, 4, &c->o.strategy) < 0)
			return usage_error("restore", "--strategy wants stream, readahead or io_uring, not '%s'",
					   arg);
		return 0;
	case OPT_ORDER:
		if (parse_choice(arg, orders, 4, &c->o.order) < 0)
			return usage_error("restore", "--order wants auto, file, disk or physical, not '%s'",
					   arg);
		return 0;
	default: /* OPT_FORMAT */
		if (snap_parse_format(arg, true, &c->fmt) < 0)
			return usage_error("restore", "--format wants auto, native or happycache, not '%s'",
					   arg);
		return 0;
	}
}

/* The options: 0, 1 for --help (printed), or PC_EXIT_USAGE (said). */
static int parse_options(struct restore *c, int argc, char **argv, const char **root)
{
	int opt, ret;

	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":hq", restore_options, NULL)) != -1) {
		switch (opt) {
		case 'h':
			fputs(restore_usage, stdout);
			return 1;
		case OPT_STRICT: c->o.flags |= PC_RESTORE_STRICT; break;
		case OPT_NO_FIND_RENAMED: c->o.flags |= PC_RESTORE_NO_FIND_RENAMED; break;
		case OPT_FAST: c->fast = true; break;
		case OPT_JSON: c->json = true; break;
		case 'q': c->quiet = true; break;
		case ':':
			return usage_error("restore", "option '%s' needs an argument", argv[optind - 1]);
		case '?':
			if (optopt)
				return usage_error("restore", "unknown option '-%c'", optopt);
			return usage_error("restore", "unknown option '%s'", argv[optind - 1]);
		default:
			ret = parse_arg(c, opt, optarg, root);
			if (ret)
				return ret;
		}
	}
	if (argc - optind > 1)
		return usage_error("restore", "%s", "one snapshot at a time");
	/* as dump writes them by default */
	c->name = optind < argc ? argv[optind] :
		 c->fmt == SNAP_HAPPYCACHE ? ".happycache.gz" : "pagecache.snapshot";
	return 0;
}

/* The snapshot opened and validated, the root found and opened: 0, or an
 * exit status (said). */
static int prepare(struct restore *c, const char *root_arg)
{
	int ret;

	if (snapsrc_open(c->name, c->fmt, &c->src) < 0)
		return PC_EXIT_FAILED;
	/* a corrupt snapshot reads nothing (from a pipe: up to the damage) */
	ret = snapsrc_validate(c->src);
	if (ret < 0) {
		snapsrc_report(c->src, ret);
		return PC_EXIT_FAILED;
	}
	c->o.flags |= PC_RESTORE_VALIDATED;
	c->o.validated = ret;
	if (!root_arg) {
		root_arg = snapsrc_root(c->src);
		if (!*root_arg && snapsrc_format(c->src) == SNAP_HAPPYCACHE)
			root_arg = ".";
		if (!*root_arg)
			return usage_error("restore", "%s", "the snapshot records no root: give --root");
	}
	c->root = realpath(root_arg, NULL);
	if (c->root)
		c->rootfd = open(c->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (!c->root || c->rootfd < 0) {
		cli_error(root_arg, strlen(root_arg), "the root: %s", strerror(errno));
		return PC_EXIT_FAILED;
	}
	c->o.root_path = c->root;
	return 0;
}

/* The fds restore may keep open for its final measure: all it may have. */
static void raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* pc_restore() and its summary: the exit status. */
static int run(struct restore *c)
{
	static const int sigs[] = { SIGINT, SIGTERM };
	struct pc_restore_source src = { .size = sizeof(src) };
	int ret;

	if (!c->fast)
		be_gentle(c);
	catch_stop_signals(sigs, sizeof(sigs) / sizeof(sigs[0]), on_signal);
	raise_nofile();
	c->o.cancel = &got_signal;
	c->o.progress = on_progress;
	c->o.event = on_event;
	c->o.arg = c;
	progress_init(&c->progress, !c->quiet && !c->json && isatty(STDERR_FILENO));
	c->st.size = sizeof(c->st);
	snapsrc_source(c->src, &src);
	ret = pc_restore(c->rootfd, &src, &c->o, &c->st);
	progress_clear(&c->progress);
	if (ret < 0 && ret != -ENOMEM && ret != -EIO) {
		snapsrc_report(c->src, ret);
		return PC_EXIT_FAILED;
	}
	if (ret < 0) {
		cli_error(NULL, 0, "%s", strerror(-ret));
		return PC_EXIT_FAILED;
	}
	if (c->json)
		summary_json(c, stdout);
	else
		summary_text(c, stdout);
	ret = c->st.read_error || c->st.skipped[PC_RESTORE_SKIP_REFUSED] ||
		c->st.skipped[PC_RESTORE_SKIP_ERROR] ? PC_EXIT_FAILED : PC_EXIT_OK;
	if (fflush(stdout) != 0 || ferror(stdout)) {
		cli_error(NULL, 0, "write error on standard output");
		ret = PC_EXIT_FAILED;
	}
	return ret;
}

int cmd_restore(int argc, char **argv)
{
	struct restore c = { .o = { .size = sizeof(c.o) }, .fmt = SNAP_AUTO, .rootfd = -1 };
	const char *root_arg = NULL;
	int ret = parse_options(&c, argc, argv, &root_arg);

	if (ret == 1)
		return PC_EXIT_OK; /* --help */
	if (ret == 0)
		ret = prepare(&c, root_arg);
	if (ret == 0)
		ret = run(&c);
	snapsrc_free(c.src);
	if (c.rootfd >= 0)
		close(c.rootfd);
	for (int i = 0; i < CHANGED_NAMES; i++)
		free(c.changed_names[i]);
	free(c.root);
	return ret;
}
