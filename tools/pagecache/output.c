/* SPDX-License-Identifier: MIT */
/*
 * The command's output: text with paths escaped so each stays on one
 * line, the exit status once standard output is flushed, and the stat
 * report (the text table, the --map drawing, the JSON document or NDJSON
 * stream).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

size_t utf8_seq(const unsigned char *s, size_t avail, uint32_t *cp)
{
	uint32_t c = s[0], min;
	size_t n, i;

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		c &= 0x1f;
		min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		c &= 0x0f;
		min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		c &= 0x07;
		min = 0x10000;
	} else {
		return 0;
	}
	if (avail < n)
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return n;
}

int utf8_valid(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;

	while (i < len) {
		uint32_t cp;
		size_t n;

		if (p[i] < 0x80) {
			i++;
			continue;
		}
		n = utf8_seq(p + i, len - i, &cp);
		if (!n)
			return 0;
		i += n;
	}
	return 1;
}

/* backslash: escaped too (a path, whose escapes must read back as one) */
static void write_escaped(FILE *f, const char *text, size_t len, bool backslash)
{
	const unsigned char *p = (const unsigned char *)text;
	unsigned char bs = backslash ? '\\' : 0;
	size_t i = 0;

	while (i < len) {
		unsigned char c = p[i];
		uint32_t cp;
		size_t n;

		if (c >= 0x20 && c < 0x7f && c != bs) {
			/* runs of plain ASCII in one call */
			size_t j = i + 1;

			while (j < len && p[j] >= 0x20 && p[j] < 0x7f && p[j] != bs)
				j++;
			fwrite(p + i, 1, j - i, f);
			i = j;
			continue;
		}
		switch (c) {
		case '\\': fputs("\\\\", f); i++; continue;
		case '\n': fputs("\\n", f); i++; continue;
		case '\t': fputs("\\t", f); i++; continue;
		case '\r': fputs("\\r", f); i++; continue;
		}
		n = c >= 0x80 ? utf8_seq(p + i, len - i, &cp) : 0;
		/* C1 controls and the bidirectional overrides could rearrange
		 * what the terminal shows: escape their bytes too */
		if (n && !(cp >= 0x80 && cp <= 0x9f) && !(cp >= 0x202a && cp <= 0x202e) &&
		    !(cp >= 0x2066 && cp <= 0x2069)) {
			fwrite(p + i, 1, n, f);
			i += n;
			continue;
		}
		if (!n)
			n = 1;
		for (size_t k = 0; k < n; k++)
			fprintf(f, "\\x%02x", p[i + k]);
		i += n;
	}
}

void text_write_path(FILE *f, const char *path, size_t len)
{
	write_escaped(f, path, len, true);
}

void text_write_message(FILE *f, const char *msg)
{
	write_escaped(f, msg, strlen(msg), false);
}

int stdout_status(int status)
{
	if (fflush(stdout) != 0 || ferror(stdout)) {
		cli_error(NULL, 0, "write error on standard output");
		return PC_EXIT_FAILED;
	}
	return status;
}


/* ---- the report ---- */

static bool is_known(const struct row *row)
{
	return row->quality != PC_QUALITY_UNKNOWN;
}

static double percent(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

/* "12.3": part/whole in percent with one decimal, rounded, without the
 * cost of floating-point formatting on every row. */
static void percent_text(uint64_t part, uint64_t whole, char *buf, size_t size)
{
	uint64_t tenths = 0;

	size_t n;

	if (whole)
		tenths = (uint64_t)(((unsigned __int128)part * 1000 + whole / 2) / whole);
	if (size < 24) {
		snprintf(buf, size, "?");
		return;
	}
	n = u64_str(tenths / 10, buf);
	buf[n++] = '.';
	buf[n++] = (char)('0' + tenths % 10);
	buf[n] = '\0';
}

/* An amount of pages (and the bytes they stand for) in the chosen unit. */
static void amount(const struct report *rep, uint64_t bytes, uint64_t pages, char *buf,
		   size_t size)
{
	switch (rep->unit) {
	case UNIT_BYTES:
	case UNIT_PAGES:
		if (size < 21)
			snprintf(buf, size, "?");
		else
			u64_str(rep->unit == UNIT_BYTES ? bytes : pages, buf);
		break;
	default:
		human_bytes(bytes, buf, size);
		break;
	}
}

static int amount_width(const struct report *rep)
{
	return rep->unit == UNIT_HUMAN ? 7 : 12;
}

static void text_header(struct report *rep)
{
	int w = amount_width(rep);

	fprintf(rep->out, "%*s %*s %6s %13s %-7s %-9s", w, "SIZE", w, "RESIDENT", "%",
		"PAGES", "QUALITY", "SOURCE");
	if (rep->perturb_column)
		fprintf(rep->out, " %-9s", "PERTURBED");
	if (rep->stats)
		fprintf(rep->out, " %*s %*s %*s %*s", w, "DIRTY", w, "WRITEBACK", w, "EVICTED",
			w, "RECENT");
	fputs(" PATH\n", rep->out);
	rep->header_done = true;
}

/* The file's residency as one line of ' ' (none), 'o' (some) and 'O' (all)
 * characters, each standing for an equal share of its pages. */
static void draw_map(struct report *rep, const struct row *row)
{
	unsigned int width = rep->width > 16 ? rep->width - 4 : 12;
	uint64_t first = pc_residency_first_page(row->r);
	uint64_t np = row->pages, nb = np < width ? np : width;
	uint64_t *counts;
	struct pc_run run;
	char *line;

	if (!is_known(row)) {
		fputs("  [unknown: the kernel hides this file]\n", rep->out);
		return;
	}
	counts = calloc(nb + 1, sizeof(*counts));
	line = malloc(nb + 1);
	if (!counts || !line) {
		free(counts);
		free(line);
		fputs("  [out of memory]\n", rep->out);
		return;
	}
	/* bucket b holds pages [b * np / nb, (b + 1) * np / nb) */
	for (uint64_t p = first; row->r && pc_residency_next_run(row->r, p, &run) > 0;
	     p = run.page + run.npages) {
		uint64_t s = run.page - first, e = s + run.npages;
		uint64_t b = (uint64_t)((unsigned __int128)s * nb / np);

		for (; b < nb; b++) {
			uint64_t bs = (uint64_t)((unsigned __int128)b * np / nb);
			uint64_t be = (uint64_t)((unsigned __int128)(b + 1) * np / nb);

			if (bs >= e)
				break;
			counts[b] += (be < e ? be : e) - (bs > s ? bs : s);
		}
	}
	for (uint64_t b = 0; b < nb; b++) {
		uint64_t bs = (uint64_t)((unsigned __int128)b * np / nb);
		uint64_t be = (uint64_t)((unsigned __int128)(b + 1) * np / nb);

		line[b] = counts[b] == 0 ? ' ' : counts[b] == be - bs ? 'O' : 'o';
	}
	line[nb] = '\0';
	fprintf(rep->out, "  [%s]\n", line);
	free(counts);
	free(line);
}

/* One text row, put together without printf (it shows in profiles of
 * trees of small files). */
struct line {
	char buf[512];
	size_t n;
};

/* s padded with spaces to width: on the left (right-aligned, "%*s") or on
 * the right ("%-*s"); never cut. Fields are short: buf has room for them. */
static void put(struct line *l, const char *s, int width, bool right_align)
{
	size_t len = strlen(s), pad = width > 0 && (size_t)width > len ? (size_t)width - len : 0;

	if (l->n + len + pad + 1 > sizeof(l->buf))
		return;
	if (right_align) {
		memset(l->buf + l->n, ' ', pad);
		l->n += pad;
	}
	memcpy(l->buf + l->n, s, len);
	l->n += len;
	if (!right_align) {
		memset(l->buf + l->n, ' ', pad);
		l->n += pad;
	}
}

static void text_row(struct report *rep, const struct row *row)
{
	uint64_t ps = rep->page_size;
	int w = amount_width(rep);
	char size[32], res[32], pct[32], pages[48];
	struct line l = { .n = 0 };
	size_t n;

	if (!rep->header_done)
		text_header(rep);
	amount(rep, row->size, row->pages, size, sizeof(size));
	if (is_known(row)) {
		amount(rep, row->resident * ps, row->resident, res, sizeof(res));
		percent_text(row->resident, row->pages, pct, sizeof(pct));
		n = u64_str(row->resident, pages);
		pages[n++] = '/';
		u64_str(row->pages, pages + n);
	} else {
		strcpy(res, "?");
		strcpy(pct, "?");
		pages[0] = '?';
		pages[1] = '/';
		u64_str(row->pages, pages + 2);
	}
	put(&l, size, w, true);
	put(&l, " ", 0, false);
	put(&l, res, w, true);
	put(&l, " ", 0, false);
	put(&l, pct, 6, true);
	put(&l, " ", 0, false);
	put(&l, pages, 13, true);
	put(&l, " ", 0, false);
	put(&l, pc_quality_name(row->quality), 7, false);
	put(&l, " ", 0, false);
	put(&l, pc_source_name(row->source), 9, false);
	if (rep->perturb_column) {
		put(&l, " ", 0, false);
		put(&l, row->perturbed ? "yes" : "no", 9, false);
	}
	if (rep->stats) {
		const uint64_t v[4] = { row->cs.dirty, row->cs.writeback, row->cs.evicted,
					row->cs.recently_evicted };

		for (int i = 0; i < 4; i++) {
			char b[32] = "-";

			if (row->has_cs)
				amount(rep, v[i] * ps, v[i], b, sizeof(b));
			put(&l, " ", 0, false);
			put(&l, b, w, true);
		}
	}
	put(&l, " ", 0, false);
	fwrite(l.buf, 1, l.n, rep->out);
	text_write_path(rep->out, row->path, row->pathlen);
	fputc('\n', rep->out);
	if (rep->map)
		draw_map(rep, row);
}

void json_path(struct json *j, const char *path, size_t len)
{
	json_string(j, "path", path, len);
	if (!utf8_valid(path, len))
		json_base64(j, "path_base64", path, len);
}

static void json_row(struct report *rep, const struct row *row)
{
	struct json *j = &rep->json;
	bool known = is_known(row);

	json_begin_object(j, NULL);
	if (rep->mode == OUT_NDJSON)
		json_cstring(j, "type", "file");
	json_path(j, row->path, row->pathlen);
	json_cstring(j, "file_type", row->block ? "block" : "regular");
	json_uint(j, "size", row->size);
	json_uint(j, "pages", row->pages);
	if (known) {
		json_uint(j, "resident_pages", row->resident);
		json_uint(j, "resident_bytes", row->resident * rep->page_size);
		json_double(j, "percent", percent(row->resident, row->pages));
	} else {
		json_null(j, "resident_pages");
		json_null(j, "resident_bytes");
		json_null(j, "percent");
	}
	json_cstring(j, "quality", pc_quality_name(row->quality));
	json_cstring(j, "source", pc_source_name(row->source));
	json_bool(j, "perturbed", row->perturbed);
	json_uint(j, "uncertain_pages", row->uncertain);
	if (rep->stats) {
		if (row->has_cs) {
			json_begin_object(j, "cachestat");
			json_uint(j, "cache", row->cs.cache);
			json_uint(j, "dirty", row->cs.dirty);
			json_uint(j, "writeback", row->cs.writeback);
			json_uint(j, "evicted", row->cs.evicted);
			json_uint(j, "recently_evicted", row->cs.recently_evicted);
			json_end_object(j);
		} else {
			json_null(j, "cachestat");
		}
	}
	if (rep->map) {
		if (known && row->r) {
			struct pc_run run;

			json_begin_array(j, "resident_runs");
			for (uint64_t p = pc_residency_first_page(row->r);
			     pc_residency_next_run(row->r, p, &run) > 0; p = run.page + run.npages) {
				bool pretty = j->pretty;

				j->pretty = false; /* [page, npages] pairs on one line */
				json_begin_array(j, NULL);
				json_uint(j, NULL, run.page);
				json_uint(j, NULL, run.npages);
				json_end_array(j);
				j->pretty = pretty;
			}
			json_end_array(j);
		} else {
			json_null(j, "resident_runs");
		}
	}
	json_end_object(j);
	if (rep->mode == OUT_NDJSON)
		json_newline(j);
}

void report_json_kernel(struct report *rep)
{
	struct json *j = &rep->json;
	int mc = pc_detect_mincore(), cs = pc_detect_cachestat(), io = pc_detect_io_uring();

	json_cstring(j, "mincore", mc >= 0 ? pc_mincore_mode_name(mc) : "unknown");
	json_cstring(j, "cachestat", cs >= 0 ? pc_cachestat_mode_name(cs) : "unknown");
	json_bool(j, "io_uring", io > 0);
	json_uint(j, "page_size", rep->page_size);
	json_cstring(j, "library_version", pc_version());
}

void report_begin(struct report *rep)
{
	struct json *j = &rep->json;

	if (rep->mode == OUT_TEXT)
		return;
	json_init(j, rep->out, rep->mode == OUT_JSON);
	json_begin_object(j, NULL);
	if (rep->mode == OUT_NDJSON) {
		json_cstring(j, "type", "kernel");
		json_uint(j, "format_version", 1);
		report_json_kernel(rep);
		json_end_object(j);
		json_newline(j);
		return;
	}
	json_uint(j, "format_version", 1);
	json_begin_object(j, "kernel");
	report_json_kernel(rep);
	json_end_object(j);
	json_begin_array(j, "files");
}

void report_row(struct report *rep, const struct row *row)
{
	if (rep->mode == OUT_TEXT)
		text_row(rep, row);
	else
		json_row(rep, row);
}

static void json_msg(struct json *j, bool ndjson, const char *path, size_t len, int err,
		     const char *text)
{
	json_begin_object(j, NULL);
	if (ndjson)
		json_cstring(j, "type", err ? "error" : "skipped");
	json_path(j, path, len);
	if (err) {
		json_cstring(j, "error", text);
		json_int(j, "errno", -err);
	} else {
		json_cstring(j, "reason", text);
	}
	json_end_object(j);
	if (ndjson)
		json_newline(j);
}

static void hold(struct report *rep, const char *path, size_t len, int err, const char *text)
{
	struct held_msg *m;

	if (rep->nheld == rep->capheld) {
		size_t cap = rep->capheld ? rep->capheld * 2 : 16;
		struct held_msg *h = realloc(rep->held, cap * sizeof(*h));

		if (!h)
			return; /* the line on stderr still says it */
		rep->held = h;
		rep->capheld = cap;
	}
	m = &rep->held[rep->nheld];
	m->path = malloc(len + 1);
	m->text = strdup(text);
	if (!m->path || !m->text) {
		free(m->path);
		free(m->text);
		return;
	}
	memcpy(m->path, path, len);
	m->path[len] = '\0';
	m->pathlen = len;
	m->err = err;
	rep->nheld++;
}

void report_error(struct report *rep, const char *path, size_t len, int err, const char *msg)
{
	const char *text = msg ? msg : strerror(-err);

	if (rep->mode == OUT_NDJSON)
		json_msg(&rep->json, true, path, len, err ? err : -EIO, text);
	else if (rep->mode == OUT_JSON)
		hold(rep, path, len, err ? err : -EIO, text);
}

void report_note(struct report *rep, const char *path, size_t len, const char *why)
{
	if (rep->mode == OUT_NDJSON)
		json_msg(&rep->json, true, path, len, 0, why);
	else if (rep->mode == OUT_JSON)
		hold(rep, path, len, 0, why);
}

/* The held errors (errors) or notes (!errors) as the array key. */
static void write_held(struct report *rep, const char *key, bool errors)
{
	struct json *j = &rep->json;

	json_begin_array(j, key);
	for (size_t i = 0; i < rep->nheld; i++) {
		const struct held_msg *m = &rep->held[i];

		if ((m->err != 0) == errors)
			json_msg(j, false, m->path, m->pathlen, m->err, m->text);
	}
	json_end_array(j);
}

void report_write_held(struct report *rep)
{
	write_held(rep, "errors", true);
	write_held(rep, "skipped", false);
}

static void json_totals(struct report *rep, const struct totals *t)
{
	struct json *j = &rep->json;

	json_uint(j, "files", t->files);
	json_uint(j, "size", t->size);
	json_uint(j, "pages", t->pages);
	json_uint(j, "known_files", t->known_files);
	json_uint(j, "known_pages", t->known_pages);
	json_uint(j, "resident_pages", t->resident_pages);
	json_uint(j, "resident_bytes", t->resident_pages * rep->page_size);
	if (t->known_pages)
		json_double(j, "percent", percent(t->resident_pages, t->known_pages));
	else
		json_null(j, "percent");
	json_uint(j, "unknown_files", t->unknown_files);
	json_uint(j, "perturbed_files", t->perturbed_files);
	json_uint(j, "uncertain_pages", t->uncertain_pages);
	json_uint(j, "errors", t->errors);
	json_uint(j, "skipped", t->skipped);
	json_uint(j, "filtered", t->filtered);
	if (rep->top) {
		json_uint(j, "top", rep->top);
		json_uint(j, "top_unknown_left_out", t->top_unknown);
	}
}

static void text_totals(struct report *rep, const struct totals *t)
{
	char size[32], res[32];

	amount(rep, t->size, t->pages, size, sizeof(size));
	amount(rep, t->resident_pages * rep->page_size, t->resident_pages, res, sizeof(res));
	fprintf(rep->out, "total: %llu file%s, %s, %llu page%s; ",
		(unsigned long long)t->files, t->files == 1 ? "" : "s", size,
		(unsigned long long)t->pages, t->pages == 1 ? "" : "s");
	if (t->known_files)
		fprintf(rep->out, "resident %s (%llu/%llu pages, %.1f%%) in the %llu known file%s",
			res, (unsigned long long)t->resident_pages,
			(unsigned long long)t->known_pages,
			percent(t->resident_pages, t->known_pages),
			(unsigned long long)t->known_files, t->known_files == 1 ? "" : "s");
	else
		fputs("resident ?", rep->out);
	fprintf(rep->out, "; %llu unknown", (unsigned long long)t->unknown_files);
	if (t->perturbed_files)
		fprintf(rep->out, "; %llu perturbed", (unsigned long long)t->perturbed_files);
	fprintf(rep->out, "; %llu error%s; %llu skipped", (unsigned long long)t->errors,
		t->errors == 1 ? "" : "s", (unsigned long long)t->skipped);
	if (t->filtered)
		fprintf(rep->out, "; %llu over --max-size", (unsigned long long)t->filtered);
	fputc('\n', rep->out);
	if (t->unknown_files)
		fprintf(rep->out,
			"note: the kernel hides the residency of %llu file%s from this user; "
			"their owner, root or a user who may write them can see it "
			"(or use --allow-perturb, which may cache pages)\n",
			(unsigned long long)t->unknown_files, t->unknown_files == 1 ? "" : "s");
	if (rep->top && t->top_unknown)
		fprintf(rep->out, "note: --top left out %llu unknown file%s\n",
			(unsigned long long)t->top_unknown, t->top_unknown == 1 ? "" : "s");
	if (t->uncertain_pages)
		fprintf(rep->out,
			"note: %llu page%s reported absent may be cached: a RWF_NOWAIT probe "
			"could not tell (a readahead window's mark; see pc_residency(3))\n",
			(unsigned long long)t->uncertain_pages, t->uncertain_pages == 1 ? "" : "s");
	if (rep->perturb_column && t->perturbed_files)
		fprintf(rep->out,
			"note: probing %llu hidden file%s may have brought pages into the cache\n",
			(unsigned long long)t->perturbed_files, t->perturbed_files == 1 ? "" : "s");
}

void report_end(struct report *rep, const struct totals *t)
{
	struct json *j = &rep->json;

	if (rep->mode == OUT_TEXT) {
		text_totals(rep, t);
		return;
	}
	if (rep->mode == OUT_NDJSON) {
		json_begin_object(j, NULL);
		json_cstring(j, "type", "totals");
		json_totals(rep, t);
		json_end_object(j);
		json_newline(j);
		return;
	}
	json_end_array(j); /* files */
	report_write_held(rep);
	json_begin_object(j, "totals");
	json_totals(rep, t);
	json_end_object(j);
	json_end_object(j);
	fputc('\n', rep->out);
}

void report_free(struct report *rep)
{
	for (size_t i = 0; i < rep->nheld; i++) {
		free(rep->held[i].path);
		free(rep->held[i].text);
	}
	free(rep->held);
	rep->held = NULL;
	rep->nheld = rep->capheld = 0;
}
