/* SPDX-License-Identifier: MIT */
/*
 * fuzz-cli-text: where the pagecache command handles text it did not
 * write (paths from the filesystem or a snapshot, arguments), linked from
 * tools/pagecache/{json,output,util}.c. Each input goes through all of
 * them, and each answer is checked against an independent reading of what
 * the function promises (tools/pagecache/cli.h):
 *   - utf8_seq() and utf8_valid() agree with the Unicode table of
 *     well-formed sequences (no overlongs, no surrogates, <= U+10FFFF);
 *   - json_string() (as a key and as a value) is one JSON string made of
 *     valid UTF-8 with no raw control characters, and it decodes to the
 *     input with U+FFFD for each byte that is not part of a well-formed
 *     sequence;
 *   - text_write_path() is one line of valid UTF-8 with no control
 *     characters, C1 controls or bidirectional overrides, and its escapes
 *     decode to the input exactly;
 *   - json_base64() decodes to the input; json_path() adds "path_base64"
 *     exactly when the path is not valid UTF-8;
 *   - parse_size() and parse_uint() on a NUL-terminated copy agree with a
 *     reference parser, errors included;
 *   - human_bytes() prints what its floating-point definition ("%.1f" or
 *     "%.0f" of the value in 1024-based units) prints, for the input's
 *     first 8 bytes, for what parse_size() made of it, and for values
 *     next to the rounding ties; u64_str() prints what "%llu" prints;
 *   - parse_map_line() (pid.c, a line of /proc/PID/maps) cuts the fields
 *     where a reference split at spaces does, and reads the inode as
 *     "%llu" does;
 *   - selection_option() (select.c) takes --max-size, --pid and --include
 *     with the input as the argument exactly when the reference parsers
 *     accept it (--pid: 1 .. 2^31 - 1), else a usage error on stderr
 *     (captured here); selection_check() agrees.
 */
#include <ctype.h>
#include <errno.h>
#include <string.h>

#include "cli.h"
#include "fuzz.h"

/* ---- an independent UTF-8 reading: the well-formed byte sequences table */

static size_t ref_seq(const uint8_t *s, size_t avail, uint32_t *cp)
{
	uint8_t b = s[0], lo = 0x80, hi = 0xbf;
	size_t n;

	if (b < 0x80) {
		*cp = b;
		return 1;
	}
	if (b >= 0xc2 && b <= 0xdf)
		n = 2;
	else if (b >= 0xe0 && b <= 0xef)
		n = 3;
	else if (b >= 0xf0 && b <= 0xf4)
		n = 4;
	else
		return 0;
	if (b == 0xe0)
		lo = 0xa0;
	else if (b == 0xed)
		hi = 0x9f;
	else if (b == 0xf0)
		lo = 0x90;
	else if (b == 0xf4)
		hi = 0x8f;
	if (avail < n || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	*cp = n == 2 ? (uint32_t)(b & 0x1f) << 6 | (s[1] & 0x3f)
	    : n == 3 ? (uint32_t)(b & 0x0f) << 12 | (uint32_t)(s[1] & 0x3f) << 6 | (s[2] & 0x3f)
		     : (uint32_t)(b & 0x07) << 18 | (uint32_t)(s[1] & 0x3f) << 12 |
			       (uint32_t)(s[2] & 0x3f) << 6 | (s[3] & 0x3f);
	return n;
}

static int ref_valid(const uint8_t *s, size_t len)
{
	uint32_t cp;

	for (size_t i = 0, n; i < len; i += n) {
		n = ref_seq(s + i, len - i, &cp);
		if (!n)
			return 0;
	}
	return 1;
}

static void check_utf8(const uint8_t *data, size_t size)
{
	for (size_t i = 0; i < size; i++) {
		uint32_t cp = 0, ref_cp = 0;
		size_t n = utf8_seq(data + i, size - i, &cp);

		FUZZ_CHECK(n == ref_seq(data + i, size - i, &ref_cp));
		FUZZ_CHECK(!n || cp == ref_cp);
	}
	FUZZ_CHECK(!utf8_valid((const char *)data, size) == !ref_valid(data, size));
}

/* ---- output capture ---- */

struct out {
	char *p;
	size_t len;
	FILE *f;
};

static void out_open(struct out *o)
{
	o->p = NULL;
	o->len = 0;
	o->f = open_memstream(&o->p, &o->len);
	FUZZ_CHECK(o->f);
}

static void out_close(struct out *o)
{
	FUZZ_CHECK(fclose(o->f) == 0);
}

/* ---- JSON strings ---- */

/* The input as the escaper must render it: bytes of well-formed sequences
 * as they are, U+FFFD for every other byte. */
static uint8_t *expected_text(const uint8_t *s, size_t len, size_t *out_len)
{
	uint8_t *e = malloc(3 * len + 1), *q = e;
	uint32_t cp;

	FUZZ_CHECK(e);
	for (size_t i = 0, n; i < len; i += n) {
		n = ref_seq(s + i, len - i, &cp);
		if (n) {
			memcpy(q, s + i, n);
			q += n;
		} else {
			memcpy(q, "\xef\xbf\xbd", 3);
			q += 3;
			n = 1;
		}
	}
	*out_len = (size_t)(q - e);
	return e;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Decode the JSON string at *pos (RFC 8259) into dst; checks that it has no
 * raw control characters. Advances *pos past the closing quote. */
static size_t json_decode(const char *s, size_t len, size_t *pos, uint8_t *dst)
{
	size_t i = *pos, n = 0;

	FUZZ_CHECK(i < len && s[i] == '"');
	for (i++;; i++) {
		uint8_t c;

		FUZZ_CHECK(i < len);
		c = (uint8_t)s[i];
		FUZZ_CHECK(c >= 0x20);
		if (c == '"')
			break;
		if (c != '\\') {
			dst[n++] = c;
			continue;
		}
		FUZZ_CHECK(++i < len);
		switch (s[i]) {
		case '"': dst[n++] = '"'; break;
		case '\\': dst[n++] = '\\'; break;
		case '/': dst[n++] = '/'; break;
		case 'n': dst[n++] = '\n'; break;
		case 't': dst[n++] = '\t'; break;
		case 'r': dst[n++] = '\r'; break;
		case 'b': dst[n++] = '\b'; break;
		case 'f': dst[n++] = '\f'; break;
		case 'u': {
			uint32_t cp = 0;

			FUZZ_CHECK(len - i > 4);
			for (int k = 1; k <= 4; k++) {
				int h = hexval(s[i + k]);

				FUZZ_CHECK(h >= 0);
				cp = cp << 4 | (uint32_t)h;
			}
			/* the escaper only escapes what it must: C0 controls, DEL */
			FUZZ_CHECK(cp < 0x20 || cp == 0x7f);
			dst[n++] = (uint8_t)cp;
			i += 4;
			break;
		}
		default:
			FUZZ_CHECK(!"a valid JSON escape");
		}
	}
	*pos = i + 1;
	return n;
}

static void check_json(const uint8_t *data, size_t size, const char *key)
{
	size_t exp_len, key_len, pos = 0, n;
	uint8_t *exp = expected_text(data, size, &exp_len), *dec;
	uint8_t *key_exp = expected_text((const uint8_t *)key, strlen(key), &key_len);
	struct json j;
	struct out o;

	out_open(&o);
	json_init(&j, o.f, false);
	json_begin_object(&j, NULL);
	json_string(&j, key, (const char *)data, size);
	json_end_object(&j);
	out_close(&o);

	FUZZ_CHECK(ref_valid((const uint8_t *)o.p, o.len));
	dec = malloc(o.len + 1);
	FUZZ_CHECK(dec);
	FUZZ_CHECK(o.len >= 1 && o.p[0] == '{');
	pos = 1;
	n = json_decode(o.p, o.len, &pos, dec);
	FUZZ_CHECK(n == key_len && !memcmp(dec, key_exp, n));
	FUZZ_CHECK(pos < o.len && o.p[pos] == ':');
	pos++;
	n = json_decode(o.p, o.len, &pos, dec);
	FUZZ_CHECK(n == exp_len && (!n || !memcmp(dec, exp, n)));
	FUZZ_CHECK(pos + 1 == o.len && o.p[pos] == '}');
	free(dec);
	free(o.p);
	free(exp);
	free(key_exp);
}

/* ---- terminal paths ---- */

static void check_text_path(const uint8_t *data, size_t size)
{
	uint8_t *dec;
	size_t n = 0;
	struct out o;
	uint32_t cp;

	out_open(&o);
	text_write_path(o.f, (const char *)data, size);
	out_close(&o);

	FUZZ_CHECK(ref_valid((const uint8_t *)o.p, o.len));
	for (size_t i = 0, k; i < o.len; i += k) {
		k = ref_seq((const uint8_t *)o.p + i, o.len - i, &cp);
		FUZZ_CHECK(k);
		FUZZ_CHECK(cp >= 0x20 && cp != 0x7f);
		FUZZ_CHECK(!(cp >= 0x80 && cp <= 0x9f));
		FUZZ_CHECK(!(cp >= 0x202a && cp <= 0x202e) && !(cp >= 0x2066 && cp <= 0x2069));
	}
	dec = malloc(o.len + 1);
	FUZZ_CHECK(dec);
	for (size_t i = 0; i < o.len; i++) {
		if (o.p[i] != '\\') {
			dec[n++] = (uint8_t)o.p[i];
			continue;
		}
		FUZZ_CHECK(++i < o.len);
		switch (o.p[i]) {
		case '\\': dec[n++] = '\\'; break;
		case 'n': dec[n++] = '\n'; break;
		case 't': dec[n++] = '\t'; break;
		case 'r': dec[n++] = '\r'; break;
		case 'x': {
			int hi, lo;

			FUZZ_CHECK(o.len - i > 2);
			hi = hexval(o.p[i + 1]);
			lo = hexval(o.p[i + 2]);
			FUZZ_CHECK(hi >= 0 && lo >= 0);
			dec[n++] = (uint8_t)(hi << 4 | lo);
			i += 2;
			break;
		}
		default:
			FUZZ_CHECK(!"a known escape");
		}
	}
	FUZZ_CHECK(n == size && (!n || !memcmp(dec, data, n)));
	free(dec);
	free(o.p);
}

/* ---- base64 ---- */

static int b64val(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

static void check_base64(const uint8_t *data, size_t size)
{
	size_t n = 0, body;
	uint8_t *dec;
	struct json j;
	struct out o;

	out_open(&o);
	json_init(&j, o.f, false);
	json_base64(&j, NULL, data, size);
	out_close(&o);

	FUZZ_CHECK(o.len == 2 + (size + 2) / 3 * 4);
	FUZZ_CHECK(o.p[0] == '"' && o.p[o.len - 1] == '"');
	body = o.len - 2;
	dec = malloc(size + 3);
	FUZZ_CHECK(dec);
	for (size_t i = 0; i < body; i += 4) {
		const char *q = o.p + 1 + i;
		uint32_t v = 0;
		int pad = 0;

		for (int k = 0; k < 4; k++) {
			int x = b64val(q[k]);

			if (q[k] == '=' && k >= 2 && i + 4 == body) {
				pad++;
				x = 0;
			}
			FUZZ_CHECK(x >= 0 && (q[k] == '=' || !pad));
			v = v << 6 | (uint32_t)x;
		}
		dec[n++] = (uint8_t)(v >> 16);
		if (pad < 2)
			dec[n++] = (uint8_t)(v >> 8);
		if (pad < 1)
			dec[n++] = (uint8_t)v;
	}
	FUZZ_CHECK(n == size && (!n || !memcmp(dec, data, n)));
	free(dec);
	free(o.p);
}

/* json_path(): {"path":..., "path_base64":...} with the second only for
 * paths that are not UTF-8. */
static void check_json_path(const uint8_t *data, size_t size)
{
	static const char b64key[] = "\"path_base64\":\"";
	uint8_t *dec;
	size_t pos = 1, n;
	struct json j;
	struct out o;

	out_open(&o);
	json_init(&j, o.f, false);
	json_begin_object(&j, NULL);
	json_path(&j, (const char *)data, size);
	json_end_object(&j);
	out_close(&o);

	dec = malloc(o.len + 1);
	FUZZ_CHECK(dec);
	FUZZ_CHECK(o.len > 8 && !memcmp(o.p, "{\"path\":", 8));
	pos = 8;
	n = json_decode(o.p, o.len, &pos, dec);
	(void)n;
	if (ref_valid(data, size)) {
		FUZZ_CHECK(pos + 1 == o.len && o.p[pos] == '}');
	} else {
		FUZZ_CHECK(o.len - pos > sizeof(b64key));
		FUZZ_CHECK(o.p[pos] == ',' && !memcmp(o.p + pos + 1, b64key, sizeof(b64key) - 1));
		/* the base64 itself is check_base64()'s business */
		FUZZ_CHECK(o.p[o.len - 1] == '}' && o.p[o.len - 2] == '"');
	}
	free(dec);
	free(o.p);
}

/* ---- numbers ---- */

/* Leading decimal digits of s into *v; -ERANGE past 2^64 - 1. Sets *end. */
static int ref_digits(const char *s, uint64_t *v, const char **end)
{
	int overflow = 0;

	*v = 0;
	for (*end = s; **end >= '0' && **end <= '9'; (*end)++) {
		unsigned int d = (unsigned int)(**end - '0');

		if (*v > (UINT64_MAX - d) / 10)
			overflow = 1;
		else
			*v = *v * 10 + d;
	}
	return overflow ? -ERANGE : 0;
}

static int ref_parse_uint(const char *s, uint64_t max, uint64_t *out)
{
	const char *end;
	uint64_t v;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	if (ref_digits(s, &v, &end) < 0 || v > max)
		return -ERANGE;
	if (*end)
		return -EINVAL;
	*out = v;
	return 0;
}

static int ref_parse_size(const char *s, uint64_t *out)
{
	static const char units[] = "kmgtp";
	unsigned int shift = 0;
	const char *end, *u;
	uint64_t v;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	if (ref_digits(s, &v, &end) < 0)
		return -ERANGE;
	if (*end) {
		char c = *end;

		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		u = c ? strchr(units, c) : NULL;
		if (!u)
			return -EINVAL;
		shift = 10 * (unsigned int)(u - units + 1);
		end++;
		if (*end == 'i' || *end == 'I')
			end++;
		if (*end == 'b' || *end == 'B')
			end++;
		if (*end)
			return -EINVAL;
	}
	if (shift && v > UINT64_MAX >> shift)
		return -ERANGE;
	*out = v << shift;
	return 0;
}

/* human_bytes() by its definition, in floating point. */
static void ref_human(uint64_t bytes, char *buf, size_t size)
{
	static const char units[] = "KMGTPE";
	double v = (double)bytes;
	int u = -1;

	if (bytes < 1024) {
		snprintf(buf, size, "%llu", (unsigned long long)bytes);
		return;
	}
	while (v >= 1024 && u < 5) {
		v /= 1024;
		u++;
	}
	snprintf(buf, size, v < 9.95 ? "%.1f%c" : "%.0f%c", v, units[u]);
}

static void check_human(uint64_t bytes)
{
	char buf[8], wide[32], ref[32];

	/* the longest answer is "1024K" (1023.99K rounded): 8 bytes will do */
	memset(buf, 'x', sizeof(buf));
	human_bytes(bytes, buf, sizeof(buf));
	FUZZ_CHECK(memchr(buf, '\0', sizeof(buf)));
	human_bytes(bytes, wide, sizeof(wide));
	ref_human(bytes, ref, sizeof(ref));
	if (strcmp(buf, ref) || strcmp(wide, ref)) {
		fprintf(stderr, "human_bytes(%llu): \"%s\" (\"%s\" with room), expected \"%s\"\n",
			(unsigned long long)bytes, buf, wide, ref);
		FUZZ_CHECK(!"human_bytes() as \"%.1f\" or \"%.0f\" print it");
	}
}

static void check_u64_str(uint64_t v)
{
	char buf[24], ref[24];
	size_t n = u64_str(v, buf);

	snprintf(ref, sizeof(ref), "%llu", (unsigned long long)v);
	FUZZ_CHECK(n == strlen(ref) && !strcmp(buf, ref));
}

static void check_numbers(const uint8_t *data, size_t size)
{
	static const uint64_t maxes[] = { UINT64_MAX, 100000, 0 };
	char *s = malloc(size + 1);
	uint64_t v, ref, bytes = 0;
	int ret;

	FUZZ_CHECK(s);
	if (size)
		memcpy(s, data, size);
	s[size] = '\0';

	v = ref = 0;
	ret = parse_size(s, &v);
	FUZZ_CHECK(ret == ref_parse_size(s, &ref));
	FUZZ_CHECK(ret < 0 || v == ref);
	for (size_t i = 0; i < sizeof(maxes) / sizeof(maxes[0]); i++) {
		v = ref = 0;
		ret = parse_uint(s, maxes[i], &v);
		FUZZ_CHECK(ret == ref_parse_uint(s, maxes[i], &ref));
		FUZZ_CHECK(ret < 0 || (v == ref && v <= maxes[i]));
	}
	if (parse_size(s, &v) == 0)
		check_human(v);
	free(s);

	memcpy(&bytes, data, size < sizeof(bytes) ? size : sizeof(bytes));
	check_human(bytes);
	check_u64_str(bytes);
	/* next to the ties: multiples of 0.05 of each unit, give or take a
	 * few bytes (x.x5 rounds to even; 9.95 switches to no decimals) */
	for (unsigned int k = 1; k <= 5; k++) {
		uint64_t den = UINT64_C(1) << (10 * k);
		uint64_t m = (bytes & 0xffffffff) % 20480;
		int64_t delta = (int8_t)(bytes >> 40);

		check_human((uint64_t)((unsigned __int128)m * den / 20) + (uint64_t)delta);
	}
}

/* ---- /proc/PID/maps lines (pid.c) ---- */

/* What "%llu" makes of s: after white space, a sign and a digit at least
 * (0: no match). Past 2^64 - 1, 2^64 - 1; with '-', the value negated. */
static int ref_scan_llu(const char *s, uint64_t *v)
{
	bool neg = false, over = false;
	uint64_t x = 0;

	while (isspace((unsigned char)*s))
		s++;
	if (*s == '+' || *s == '-')
		neg = *s++ == '-';
	if (*s < '0' || *s > '9')
		return 0;
	for (; *s >= '0' && *s <= '9'; s++) {
		unsigned int d = (unsigned int)(*s - '0');

		if (x > (UINT64_MAX - d) / 10)
			over = true;
		else
			x = x * 10 + d;
	}
	*v = over ? UINT64_MAX : neg ? -x : x;
	return 1;
}

static void check_map_line(const char *s)
{
	const char *p = s, *field[5] = { 0 };
	size_t flen[5] = { 0 };
	char *line = strdup(s), *range = NULL, *path = NULL;
	int want = 0, ret;
	uint64_t ino = 0;
	ino_t got = 0;

	FUZZ_CHECK(line);
	for (int i = 0; i < 5 && !want; i++) {
		const char *sp;

		while (*p == ' ')
			p++;
		sp = strchr(p, ' ');
		if (!sp) {
			want = -EINVAL;
			break;
		}
		field[i] = p;
		flen[i] = (size_t)(sp - p);
		p = sp + 1;
	}
	if (!want) {
		char *f4 = strndup(field[4], flen[4]);

		FUZZ_CHECK(f4);
		if (!ref_scan_llu(f4, &ino))
			want = -EINVAL;
		free(f4);
		while (*p == ' ')
			p++;
	}
	ret = parse_map_line(line, &range, &got, &path);
	FUZZ_CHECK(ret == want);
	if (!ret) {
		FUZZ_CHECK(range == line + (field[0] - s) && strlen(range) == flen[0]);
		FUZZ_CHECK((uint64_t)got == ino);
		FUZZ_CHECK(path == line + (p - s) && !strcmp(path, p));
	}
	free(line);
}

/* ---- the selection options (select.c) ---- */

static void check_selection(const char *s)
{
	FILE *saved = stderr;
	struct selection sel;
	uint64_t v = 0;
	char *arg = strdup(s);
	int ret, want, usage = 0;
	struct out err;
	size_t n = 0;

	FUZZ_CHECK(arg);
	out_open(&err);
	stderr = err.f;
	selection_init(&sel);

	want = ref_parse_size(s, &v) == 0;
	ret = selection_option(&sel, "stat", OPT_SEL_MAX_SIZE, arg);
	FUZZ_CHECK(ret == (want ? 1 : PC_EXIT_USAGE));
	FUZZ_CHECK(!want || sel.max_size == v);
	usage += !want;

	want = ref_parse_uint(s, 0x7fffffff, &v) == 0 && v != 0;
	ret = selection_option(&sel, "stat", OPT_SEL_PID, arg);
	FUZZ_CHECK(ret == (want ? 1 : PC_EXIT_USAGE));
	FUZZ_CHECK(sel.npids == (size_t)want && (!want || (sel.pids[0] == arg && !sel.pids[1])));
	usage += !want;

	FUZZ_CHECK(selection_option(&sel, "stat", OPT_SEL_INCLUDE, arg) == 1);
	FUZZ_CHECK(sel.ninclude == 1 && sel.wo.include[0] == arg && !sel.wo.include[1]);
	ret = selection_check(&sel, "stat", 0);
	FUZZ_CHECK(ret == (sel.npids ? 0 : PC_EXIT_USAGE));
	usage += ret != 0;

	stderr = saved;
	out_close(&err);
	/* each usage error ends with the hint, and nothing else was said */
	for (const char *q = err.p; (q = strstr(q, "\nTry 'pagecache stat --help'.\n")); q++)
		n++;
	FUZZ_CHECK(strstr(s, "Try") ? n >= (size_t)usage : n == (size_t)usage);
	FUZZ_CHECK(!usage || !strncmp(err.p, "pagecache stat: ", 16));
	selection_free(&sel);
	free(err.p);
	free(arg);
}

int pc_fuzz_cli_text(const uint8_t *data, size_t size)
{
	char *key = malloc(size + 1);

	FUZZ_CHECK(key);
	if (size)
		memcpy(key, data, size);
	key[size] = '\0';
	check_utf8(data, size);
	check_json(data, size, key);
	check_text_path(data, size);
	check_base64(data, size);
	check_json_path(data, size);
	check_numbers(data, size);
	check_map_line(key);
	check_selection(key);
	free(key);
	return 0;
}

#ifndef PC_FUZZ_REPLAY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	pc_fuzz_cli_text(data, size);
	return 0;
}
#endif
