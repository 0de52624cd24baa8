/* SPDX-License-Identifier: MIT */
/* A small streaming JSON writer: commas and nesting tracked for the caller,
 * strings escaped (U+FFFD for bytes that are not UTF-8), base64 values. */
#include <math.h>
#include <string.h>

#include "cli.h"

void json_init(struct json *j, FILE *f, bool pretty)
{
	memset(j, 0, sizeof(*j));
	j->f = f;
	j->pretty = pretty;
}

static void indent(struct json *j)
{
	if (!j->pretty)
		return;
	fputc('\n', j->f);
	for (int i = 0; i < j->depth; i++)
		fputs("  ", j->f);
}

static void raw_string(FILE *f, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;

	fputc('"', f);
	while (i < len) {
		unsigned char c = p[i];
		uint32_t cp;
		size_t n;

		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
			size_t k = i + 1;

			while (k < len && p[k] >= 0x20 && p[k] < 0x7f && p[k] != '"' && p[k] != '\\')
				k++;
			fwrite(p + i, 1, k - i, f);
			i = k;
			continue;
		}
		switch (c) {
		case '"': fputs("\\\"", f); i++; continue;
		case '\\': fputs("\\\\", f); i++; continue;
		case '\n': fputs("\\n", f); i++; continue;
		case '\t': fputs("\\t", f); i++; continue;
		case '\r': fputs("\\r", f); i++; continue;
		case '\b': fputs("\\b", f); i++; continue;
		case '\f': fputs("\\f", f); i++; continue;
		}
		if (c < 0x20 || c == 0x7f) {
			fprintf(f, "\\u%04x", c);
			i++;
			continue;
		}
		n = utf8_seq(p + i, len - i, &cp);
		if (n) {
			fwrite(p + i, 1, n, f);
			i += n;
		} else {
			fputs("\xef\xbf\xbd", f); /* U+FFFD for each bad byte */
			i++;
		}
	}
	fputc('"', f);
}

static void value_prefix(struct json *j, const char *key)
{
	if (j->need_comma[j->depth])
		fputc(',', j->f);
	if (j->depth > 0)
		indent(j);
	j->need_comma[j->depth] = true;
	if (key) {
		raw_string(j->f, key, strlen(key));
		fputs(j->pretty ? ": " : ":", j->f);
	}
}

static void open_container(struct json *j, const char *key, char c)
{
	value_prefix(j, key);
	fputc(c, j->f);
	if (j->depth + 1 < (int)(sizeof(j->need_comma) / sizeof(j->need_comma[0])))
		j->depth++;
	j->need_comma[j->depth] = false;
}

static void close_container(struct json *j, char c)
{
	bool had = j->need_comma[j->depth];

	if (j->depth > 0)
		j->depth--;
	if (had)
		indent(j);
	fputc(c, j->f);
}

void json_begin_object(struct json *j, const char *key)
{
	open_container(j, key, '{');
}

void json_end_object(struct json *j)
{
	close_container(j, '}');
}

void json_begin_array(struct json *j, const char *key)
{
	open_container(j, key, '[');
}

void json_end_array(struct json *j)
{
	close_container(j, ']');
}

void json_key(struct json *j, const char *key)
{
	value_prefix(j, key);
}

void json_string(struct json *j, const char *key, const char *s, size_t len)
{
	value_prefix(j, key);
	raw_string(j->f, s, len);
}

void json_cstring(struct json *j, const char *key, const char *s)
{
	if (!s) {
		json_null(j, key);
		return;
	}
	json_string(j, key, s, strlen(s));
}

void json_uint(struct json *j, const char *key, uint64_t v)
{
	value_prefix(j, key);
	fprintf(j->f, "%llu", (unsigned long long)v);
}

void json_int(struct json *j, const char *key, int64_t v)
{
	value_prefix(j, key);
	fprintf(j->f, "%lld", (long long)v);
}

void json_double(struct json *j, const char *key, double v)
{
	value_prefix(j, key);
	if (isfinite(v))
		fprintf(j->f, "%.2f", v);
	else
		fputs("null", j->f);
}

void json_bool(struct json *j, const char *key, bool v)
{
	value_prefix(j, key);
	fputs(v ? "true" : "false", j->f);
}

void json_null(struct json *j, const char *key)
{
	value_prefix(j, key);
	fputs("null", j->f);
}

void json_newline(struct json *j)
{
	fputc('\n', j->f);
	j->need_comma[0] = false;
}

void json_base64(struct json *j, const char *key, const void *data, size_t len)
{
	static const char tab[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const unsigned char *p = data;
	size_t i;

	value_prefix(j, key);
	fputc('"', j->f);
	for (i = 0; i + 2 < len; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];

		fputc(tab[v >> 18], j->f);
		fputc(tab[(v >> 12) & 63], j->f);
		fputc(tab[(v >> 6) & 63], j->f);
		fputc(tab[v & 63], j->f);
	}
	if (len - i == 1) {
		uint32_t v = (uint32_t)p[i] << 16;

		fputc(tab[v >> 18], j->f);
		fputc(tab[(v >> 12) & 63], j->f);
		fputs("==", j->f);
	} else if (len - i == 2) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8;

		fputc(tab[v >> 18], j->f);
		fputc(tab[(v >> 12) & 63], j->f);
		fputc(tab[(v >> 6) & 63], j->f);
		fputc('=', j->f);
	}
	fputc('"', j->f);
}
