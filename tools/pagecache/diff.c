/* SPDX-License-Identifier: MIT */
/*
 * pagecache diff OLD NEW: per file, the pages that became resident (added)
 * and those that left (removed) between two snapshots, with totals.
 *
 * Both snapshots stream. A dump writes files in walk order, which is
 * readdir order: two dumps of the same tree usually list the files in the
 * same order, and then the two are read in lockstep, comparing the runs of
 * one file from each as they are decoded (nothing is held). Where the
 * orders differ (files created or deleted, directories rewritten), a file
 * met on one side only is held (its path and runs) in a hash table until
 * its partner turns up on the other side; what is still held at the end
 * was only in OLD (all its pages removed) or only in NEW (all added). So
 * memory is bounded by the part of the snapshots whose order differs; once
 * one side has ended, a file of the other that no held entry matches is
 * counted as it streams, not held. Both inputs are read through once
 * first where they can be (files, not pipes), so that a corrupt one
 * prints nothing but its error.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "snapcli.h"

struct held {
	char *path;
	struct snap_file meta;
	struct pc_run *runs;
	size_t n;
	uint64_t streamed;        /* pages of a file not held (runs NULL) */
	struct held *next;
};

struct table {
	struct held **slots;
	size_t cap, n;
};

/* Runs from a stream or from an array. */
struct runs_it {
	struct snapsrc *src;
	const struct pc_run *a;
	size_t n, i;
};

struct diff {
	enum snap_format fmt;
	bool json;
	struct json j;
	struct table old_only, new_only;
	uint64_t files_both, files_old_only, files_new_only, files_changed, unknown;
	uint64_t added, removed, common;
	uint64_t ps;
};

static const char diff_usage[] =
	"Usage: pagecache diff [OPTIONS] OLD NEW\n"
	"\n"
	"Per file, the pages resident in NEW but not in OLD (added) and in OLD but\n"
	"not in NEW (removed), and the totals: what a job pulled into the cache, or\n"
	"what it pushed out. Snapshots of either format; files match by path.\n"
	"Only files that differ are listed.\n"
	"\n"
	"      --format F          of a snapshot read from a pipe ('-', a FIFO):\n"
	"                          native (default) or happycache; a regular file's\n"
	"                          format is detected (gzip's magic: happycache)\n"
	"      --json              one JSON document (format_version 1, fields in\n"
	"                          pagecache(1))\n"
	"  -h, --help              show this help\n"
	"\n"
	"Exit status: 0 done, 1 a snapshot could not be read, 2 usage error.\n";

static const struct option diff_options[] = {
	{ "json", no_argument, NULL, 'j' },
	{ "format", required_argument, NULL, 'f' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static size_t hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return (size_t)h;
}

static int table_add(struct table *t, struct held *h)
{
	if ((t->n + 1) * 2 > t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 256;
		struct held **slots = calloc(cap, sizeof(*slots));

		if (!slots)
			return -ENOMEM;
		for (size_t i = 0; i < t->cap; i++) {
			struct held *e = t->slots[i];

			while (e) {
				struct held *nx = e->next;
				size_t k = hash(e->path) & (cap - 1);

				e->next = slots[k];
				slots[k] = e;
				e = nx;
			}
		}
		free(t->slots);
		t->slots = slots;
		t->cap = cap;
	}
	{
		size_t k = hash(h->path) & (t->cap - 1);

		h->next = t->slots[k];
		t->slots[k] = h;
		t->n++;
	}
	return 0;
}

/* Take the held entry for path out of t, or NULL. */
static struct held *table_take(struct table *t, const char *path)
{
	struct held **pp;

	if (!t->cap)
		return NULL;
	for (pp = &t->slots[hash(path) & (t->cap - 1)]; *pp; pp = &(*pp)->next) {
		struct held *h = *pp;

		if (strcmp(h->path, path) == 0) {
			*pp = h->next;
			t->n--;
			return h;
		}
	}
	return NULL;
}

static void held_free(struct held *h)
{
	if (!h)
		return;
	free(h->path);
	free(h->runs);
	free(h);
}

static void table_free(struct table *t)
{
	for (size_t i = 0; i < t->cap; i++) {
		struct held *e = t->slots[i];

		while (e) {
			struct held *nx = e->next;

			held_free(e);
			e = nx;
		}
	}
	free(t->slots);
}

static int it_next(struct runs_it *it, struct pc_run *run)
{
	if (it->src)
		return snapsrc_next_run(it->src, run);
	if (it->i >= it->n)
		return 0;
	*run = it->a[it->i++];
	return 1;
}

/* Read the current file of src (its runs) into a held entry. */
static int hold(struct snapsrc *src, const struct snap_file *f, struct held **out)
{
	struct held *h = calloc(1, sizeof(*h));
	size_t cap = 0;
	int ret;

	if (!h)
		return -ENOMEM;
	h->path = strdup(f->path);
	h->meta = *f;
	h->meta.path = h->path;
	if (!h->path) {
		held_free(h);
		return -ENOMEM;
	}
	for (;;) {
		if (h->n == cap) {
			size_t nc = cap ? cap * 2 : 16;
			struct pc_run *r = realloc(h->runs, nc * sizeof(*r));

			if (!r) {
				held_free(h);
				return -ENOMEM;
			}
			h->runs = r;
			cap = nc;
		}
		ret = snapsrc_next_run(src, &h->runs[h->n]);
		if (ret < 0) {
			held_free(h);
			return ret;
		}
		if (ret == 0)
			break;
		h->n++;
	}
	*out = h;
	return 0;
}

/* Bytes of pages pages, saturated (a snapshot may claim 2^60 pages). */
static uint64_t bytes_of(const struct diff *d, uint64_t pages)
{
	return pages > UINT64_MAX / d->ps ? UINT64_MAX : pages * d->ps;
}

static void emit(struct diff *d, const char *path, const char *status, uint64_t added,
		 uint64_t removed, uint64_t common, bool unknown, bool changed)
{
	if (!unknown && !added && !removed)
		return;
	if (d->json) {
		json_begin_object(&d->j, NULL);
		json_path(&d->j, path, strlen(path));
		json_cstring(&d->j, "status", status);
		if (unknown) {
			json_null(&d->j, "added_pages");
			json_null(&d->j, "removed_pages");
		} else {
			json_uint(&d->j, "added_pages", added);
			json_uint(&d->j, "removed_pages", removed);
		}
		json_uint(&d->j, "common_pages", common);
		json_bool(&d->j, "changed", changed);
		json_end_object(&d->j);
		return;
	}
	if (unknown) {
		printf("%8s %8s  ", "?", "?");
	} else {
		char a[32], r[32], as[34], rs[34];

		human_bytes(bytes_of(d, added), a, sizeof(a));
		human_bytes(bytes_of(d, removed), r, sizeof(r));
		snprintf(as, sizeof(as), "+%s", a);
		snprintf(rs, sizeof(rs), "-%s", r);
		printf("%8s %8s  ", as, rs);
	}
	text_write_path(stdout, path, strlen(path));
	if (strcmp(status, "both") != 0)
		printf("  (%s)", strcmp(status, "old_only") == 0 ? "only in OLD" : "only in NEW");
	else if (unknown)
		printf("  (residency unknown in a snapshot)");
	else if (changed)
		printf("  (size or mtime changed)");
	putchar('\n');
}

/* Compare the runs of one file in both snapshots. */
static int compare(struct diff *d, const char *path, const struct snap_file *of,
		   struct runs_it *o, const struct snap_file *nf, struct runs_it *n)
{
	uint64_t added = 0, removed = 0, common = 0;
	bool unknown = of->quality == PC_QUALITY_UNKNOWN || nf->quality == PC_QUALITY_UNKNOWN;
	bool changed = of->identity && nf->identity &&
		(of->size != nf->size || of->mtime_ns != nf->mtime_ns);
	struct pc_run a, b;
	int ha, hb;

	ha = it_next(o, &a);
	hb = ha < 0 ? 0 : it_next(n, &b);
	while (ha > 0 || hb > 0) {
		uint64_t take;

		if (hb <= 0) {
			removed += a.npages;
			a.npages = 0;
		} else if (ha <= 0) {
			added += b.npages;
			b.npages = 0;
		} else if (a.page < b.page) {
			take = (a.page + a.npages < b.page ? a.page + a.npages : b.page) - a.page;
			removed += take;
			a.page += take;
			a.npages -= take;
		} else if (b.page < a.page) {
			take = (b.page + b.npages < a.page ? b.page + b.npages : a.page) - b.page;
			added += take;
			b.page += take;
			b.npages -= take;
		} else {
			take = a.npages < b.npages ? a.npages : b.npages;
			common += take;
			a.page += take;
			a.npages -= take;
			b.page += take;
			b.npages -= take;
		}
		if (ha > 0 && a.npages == 0)
			ha = it_next(o, &a);
		if (hb > 0 && b.npages == 0)
			hb = it_next(n, &b);
		if (ha < 0 || hb < 0)
			return ha < 0 ? ha : hb;
	}
	if (ha < 0 || hb < 0)
		return ha < 0 ? ha : hb;
	d->files_both++;
	if (changed)
		d->files_changed++;
	if (unknown) {
		d->unknown++;
	} else {
		d->added += added;
		d->removed += removed;
		d->common += common;
	}
	emit(d, path, "both", added, removed, common, unknown, changed);
	return 0;
}

static void one_side(struct diff *d, struct held *h, bool old)
{
	uint64_t pages = h->streamed;
	bool unknown = h->meta.quality == PC_QUALITY_UNKNOWN;

	for (size_t i = 0; i < h->n; i++)
		pages += h->runs[i].npages;
	if (old)
		d->files_old_only++;
	else
		d->files_new_only++;
	if (unknown)
		d->unknown++;
	else if (old)
		d->removed += pages;
	else
		d->added += pages;
	emit(d, h->path, old ? "old_only" : "new_only", old ? 0 : pages, old ? pages : 0, 0,
	     unknown, false);
}

/* The file f just read from side src: compare it with its held partner
 * from the other side, or hold it; once the other side has ended
 * (other_done), nothing can match it later: counted as it streams. */
static int unmatched(struct diff *d, struct snapsrc *src, const struct snap_file *f, bool old,
		     bool other_done)
{
	struct held *partner = table_take(old ? &d->new_only : &d->old_only, f->path);
	struct held *h;
	int ret;

	if (!partner && other_done) {
		struct held one = { .path = (char *)f->path, .meta = *f };
		struct pc_run run;

		one.meta.path = f->path;
		while ((ret = snapsrc_next_run(src, &run)) > 0)
			one.streamed += run.npages;
		if (ret < 0)
			return ret;
		one_side(d, &one, old);
		return 0;
	}

	if (partner) {
		struct runs_it stream = { .src = src };
		struct runs_it arr = { .a = partner->runs, .n = partner->n };

		ret = old ? compare(d, f->path, f, &stream, &partner->meta, &arr)
			  : compare(d, f->path, &partner->meta, &arr, f, &stream);
		held_free(partner);
		return ret;
	}
	ret = hold(src, f, &h);
	if (ret < 0)
		return ret;
	ret = table_add(old ? &d->old_only : &d->new_only, h);
	if (ret < 0)
		held_free(h);
	return ret;
}

static void drain(struct diff *d, struct table *t, bool old)
{
	for (size_t i = 0; i < t->cap; i++)
		for (struct held *e = t->slots[i]; e; e = e->next)
			one_side(d, e, old);
}

/* --format is for a snapshot that cannot be looked at before it is read
 * (standard input, a FIFO, <(zcat ...)); a regular file's is detected. */
static enum snap_format format_for(const char *name, enum snap_format fmt)
{
	struct stat st;
	int ret = strcmp(name, "-") == 0 ? fstat(STDIN_FILENO, &st) : stat(name, &st);

	return ret == 0 && S_ISREG(st.st_mode) ? SNAP_AUTO : fmt;
}

/* The options into d, and the two snapshot names. true: go on; false:
 * exit with *status. */
static bool parse_args(struct diff *d, int argc, char **argv, int *status)
{
	int opt;

	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":h", diff_options, NULL)) != -1) {
		switch (opt) {
		case 'h':
			fputs(diff_usage, stdout);
			*status = PC_EXIT_OK;
			return false;
		case 'j':
			d->json = true;
			break;
		case 'f':
			if (snap_parse_format(optarg, true, &d->fmt) < 0) {
				fprintf(stderr, "%s diff: --format wants auto, native or happycache, "
					"not '%s'\nTry 'pagecache diff --help'.\n", pc_cli_name, optarg);
				*status = PC_EXIT_USAGE;
				return false;
			}
			break;
		default:
			fprintf(stderr, "%s diff: unknown option '%s'\nTry 'pagecache diff --help'.\n",
				pc_cli_name, argv[optind - 1]);
			*status = PC_EXIT_USAGE;
			return false;
		}
	}
	if (argc - optind != 2) {
		fprintf(stderr, "%s diff: wants two snapshots, OLD and NEW\n"
			"Try 'pagecache diff --help'.\n", pc_cli_name);
		*status = PC_EXIT_USAGE;
		return false;
	}
	if (strcmp(argv[optind], "-") == 0 && strcmp(argv[optind + 1], "-") == 0) {
		fprintf(stderr, "%s diff: only one snapshot can come from standard input\n",
			pc_cli_name);
		*status = PC_EXIT_USAGE;
		return false;
	}
	return true;
}

/* Open both snapshots and read them through once where they can be: a
 * corrupt one prints nothing but its error (from a pipe: what came before
 * the damage may have been printed). 0, or -1 after the error. */
static int open_inputs(const struct diff *d, const char *old, const char *new,
		       struct snapsrc **so, struct snapsrc **sn)
{
	int ret;

	if (snapsrc_open(old, format_for(old, d->fmt), so) < 0 ||
	    snapsrc_open(new, format_for(new, d->fmt), sn) < 0)
		return -1;
	ret = snapsrc_validate(*so);
	if (ret >= 0)
		ret = snapsrc_validate(*sn);
	if (ret < 0) {
		snapsrc_report(snapsrc_failed(*so) ? *so : *sn, ret);
		return -1;
	}
	return 0;
}

/* Files match by their paths relative to each root (a happycache file
 * records none): say so when the roots differ. */
static void note_roots(struct snapsrc *so, struct snapsrc *sn)
{
	if (!*snapsrc_root(so) || !*snapsrc_root(sn) ||
	    strcmp(snapsrc_root(so), snapsrc_root(sn)) == 0)
		return;
	fflush(stdout);
	fprintf(stderr, "%s: note: the snapshots record different roots (", pc_cli_name);
	text_write_path(stderr, snapsrc_root(so), strlen(snapsrc_root(so)));
	fputs(" and ", stderr);
	text_write_path(stderr, snapsrc_root(sn), strlen(snapsrc_root(sn)));
	fputs("): files are matched by their paths beneath each\n", stderr);
}

static void begin_output(struct diff *d, const char *old, const char *new,
			 struct snapsrc *so, struct snapsrc *sn)
{
	if (!d->json) {
		printf("%8s %8s  %s\n", "ADDED", "REMOVED", "PATH");
		return;
	}
	json_init(&d->j, stdout, true);
	json_begin_object(&d->j, NULL);
	json_uint(&d->j, "format_version", 1);
	json_cstring(&d->j, "old", old);
	json_cstring(&d->j, "new", new);
	json_cstring(&d->j, "old_root", snapsrc_root(so));
	json_cstring(&d->j, "new_root", snapsrc_root(sn));
	json_uint(&d->j, "page_size", d->ps);
	json_begin_array(&d->j, "files");
}

/* Read both snapshots in lockstep: a file at the same place in both is
 * compared as it streams, any other goes through unmatched(). 0 or -errno. */
static int diff_streams(struct diff *d, struct snapsrc *so, struct snapsrc *sn)
{
	const struct snap_file *of = NULL, *nf = NULL;
	int ret = 0, ro, rn;

	ro = snapsrc_next_file(so, &of);
	rn = snapsrc_next_file(sn, &nf);
	while (ro > 0 || rn > 0) {
		if (ro > 0 && rn > 0 && strcmp(of->path, nf->path) == 0) {
			struct runs_it a = { .src = so }, b = { .src = sn };

			ret = compare(d, of->path, of, &a, nf, &b);
			if (ret < 0)
				return ret;
			ro = snapsrc_next_file(so, &of);
			rn = snapsrc_next_file(sn, &nf);
			continue;
		}
		if (ro > 0) {
			ret = unmatched(d, so, of, true, rn == 0);
			if (ret < 0)
				return ret;
			ro = snapsrc_next_file(so, &of);
		}
		if (rn > 0) {
			ret = unmatched(d, sn, nf, false, ro == 0);
			if (ret < 0)
				return ret;
			rn = snapsrc_next_file(sn, &nf);
		}
	}
	return ro < 0 ? ro : rn < 0 ? rn : 0;
}

static void end_output(struct diff *d)
{
	char a[32], r[32], c[32];

	if (d->json) {
		json_end_array(&d->j);
		json_begin_object(&d->j, "totals");
		json_uint(&d->j, "files_in_both", d->files_both);
		json_uint(&d->j, "files_only_in_old", d->files_old_only);
		json_uint(&d->j, "files_only_in_new", d->files_new_only);
		json_uint(&d->j, "files_changed", d->files_changed);
		json_uint(&d->j, "files_unknown", d->unknown);
		json_uint(&d->j, "added_pages", d->added);
		json_uint(&d->j, "removed_pages", d->removed);
		json_uint(&d->j, "common_pages", d->common);
		json_end_object(&d->j);
		json_end_object(&d->j);
		json_newline(&d->j);
		return;
	}
	human_bytes(bytes_of(d, d->added), a, sizeof(a));
	human_bytes(bytes_of(d, d->removed), r, sizeof(r));
	human_bytes(bytes_of(d, d->common), c, sizeof(c));
	printf("total: +%s (%llu pages) -%s (%llu pages), %s in both; files: %llu in "
	       "both, %llu only in OLD, %llu only in NEW, %llu changed, %llu unknown\n",
	       a, (unsigned long long)d->added, r, (unsigned long long)d->removed, c,
	       (unsigned long long)d->files_both, (unsigned long long)d->files_old_only,
	       (unsigned long long)d->files_new_only, (unsigned long long)d->files_changed,
	       (unsigned long long)d->unknown);
}

int cmd_diff(int argc, char **argv)
{
	struct diff d = { .fmt = SNAP_AUTO };
	struct snapsrc *so = NULL, *sn = NULL;
	const char *old, *new;
	int ret;

	d.ps = (uint64_t)pc_page_size();
	if (!parse_args(&d, argc, argv, &ret))
		return ret;
	old = argv[optind];
	new = argv[optind + 1];
	if (open_inputs(&d, old, new, &so, &sn) < 0) {
		ret = PC_EXIT_FAILED;
		goto out;
	}
	note_roots(so, sn);
	begin_output(&d, old, new, so, sn);
	ret = diff_streams(&d, so, sn);
	if (ret < 0) {
		fflush(stdout);
		if (ret == -ENOMEM)
			cli_error(NULL, 0, "out of memory");
		else
			snapsrc_report(snapsrc_failed(so) ? so : sn, ret);
		ret = PC_EXIT_FAILED;
		goto out;
	}
	drain(&d, &d.old_only, true);
	drain(&d, &d.new_only, false);
	end_output(&d);
	ret = stdout_status(PC_EXIT_OK);
out:
	table_free(&d.old_only);
	table_free(&d.new_only);
	snapsrc_free(so);
	snapsrc_free(sn);
	return ret;
}
