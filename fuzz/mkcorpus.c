/* SPDX-License-Identifier: MIT */
/*
 * mkcorpus OUTDIR: writes the fuzzers' seed corpora, one directory per
 * target (OUTDIR/<target>/NAME).
 * The snapshots are made by the library's own writer (a few by hand from
 * the codec, for shapes the writer never produces: runs split over small R
 * records, paths it refuses), then cut, flipped or patched into broken
 * ones. Names say what the reader must answer, and the replay test
 * (tests/test-fuzz-corpus.c) holds it to that:
 *   valid-*    a whole valid snapshot: the walk ends with 0
 *   bad-*      the walk fails with -EBADMSG or -EPROTONOSUPPORT
 *   regress-*  inputs that once crashed a fuzzer: any clean answer
 * Every snapshot and happycache seed is checked here the same way before
 * it is written.
 * Deterministic: a fixed capture time, so regenerating changes nothing.
 *
 * Regenerate with: ninja -C build-fuzz fuzz-corpus (writes fuzz/corpus).
 * MKCORPUS_VERBOSE=1 prints what the reader says about each snapshot.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pagecache/pagecache.h"
#include "snapshot-codec.h"
#include "snapcli.h"
#include "fuzz.h"

#define CAPTURE_TIME INT64_C(1700000000123456789)

static const char *outdir;

#define CHECK(cond) FUZZ_CHECK(cond)

static void put_file(const char *target, const char *name, const void *data, size_t len)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", outdir, target);
	CHECK(mkdir(path, 0755) == 0 || errno == EEXIST);
	snprintf(path, sizeof(path), "%s/%s/%s", outdir, target, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	CHECK(fd >= 0);
	CHECK(write(fd, data, len) == (ssize_t)len);
	CHECK(close(fd) == 0);
}

/* The reader's error message for a snapshot, for the diagnostics below. */
static void explain(const char *name, const uint8_t *data, size_t len)
{
	const struct pc_snapshot_file *f;
	struct pc_snapshot_reader *rd;
	struct pc_run run;
	int fd = memfd_create("mkcorpus", MFD_CLOEXEC), ret;

	CHECK(fd >= 0 && write(fd, data, len) == (ssize_t)len && lseek(fd, 0, SEEK_SET) == 0);
	CHECK(pc_snapshot_reader_new(fd, &rd) == 0);
	while ((ret = pc_snapshot_next_file(rd, &f)) > 0)
		while ((ret = pc_snapshot_next_run(rd, &run)) > 0)
			;
	fprintf(stderr, "mkcorpus: %s: %s at byte %llu\n", name,
		pc_snapshot_reader_error(rd) ? pc_snapshot_reader_error(rd) : "no error",
		(unsigned long long)pc_snapshot_reader_error_offset(rd));
	pc_snapshot_reader_free(rd);
	close(fd);
}

/* A snapshot seed: checked against its name's promise, then written. */
static void put_snapshot(const char *name, const uint8_t *data, size_t len)
{
	int ret = pc_fuzz_snapshot(data, len);

	if (!strncmp(name, "valid-", 6) && ret != 0) {
		fprintf(stderr, "mkcorpus: %s: the reader says %d, not 0\n", name, ret);
		explain(name, data, len);
		exit(1);
	}
	if (!strncmp(name, "bad-", 4) && ret >= 0) {
		fprintf(stderr, "mkcorpus: %s: the reader accepts it\n", name);
		exit(1);
	}
	if (getenv("MKCORPUS_VERBOSE"))
		explain(name, data, len);
	put_file("fuzz-snapshot", name, data, len);
}

/* ---- snapshots from the writer ---- */

struct snap {
	int fd;
	struct pc_snapshot_writer *w;
};

static void snap_begin(struct snap *s, const char *root, uint32_t page_size, int modes)
{
	struct pc_snapshot_info info = {
		.size = sizeof(info),
		.root = root,
		.capture_time_ns = CAPTURE_TIME,
		.page_size = page_size,
		.mincore_mode = modes,
		.cachestat_mode = modes,
		.nowait_mode = modes,
	};

	s->fd = memfd_create("mkcorpus", MFD_CLOEXEC);
	CHECK(s->fd >= 0);
	CHECK(pc_snapshot_writer_new(s->fd, &info, &s->w) == 0);
}

static void snap_file(struct snap *s, const char *path, int quality, const struct pc_run *runs,
		      size_t n)
{
	struct pc_snapshot_file meta = {
		.size = sizeof(meta),
		.file_size = 1 << 20,
		.mtime_ns = CAPTURE_TIME - 3600 * INT64_C(1000000000),
		.dev = 0x803,
		.ino = 4242 + n,
		.quality = quality,
	};
	int ret = pc_snapshot_write_runs(s->w, path, &meta, runs, n);

	if (ret) {
		fprintf(stderr, "mkcorpus: writing %s: %s\n", path, strerror(-ret));
		exit(1);
	}
}

/* Finish; the bytes (malloc'ed) in *len. */
static uint8_t *snap_end(struct snap *s, size_t *len)
{
	struct stat st;
	uint8_t *p;

	CHECK(pc_snapshot_writer_finish(s->w) == 0);
	pc_snapshot_writer_free(s->w);
	CHECK(fstat(s->fd, &st) == 0);
	*len = (size_t)st.st_size;
	p = malloc(*len);
	CHECK(p);
	CHECK(pread(s->fd, p, *len, 0) == (ssize_t)*len);
	close(s->fd);
	return p;
}

static uint8_t *one_file(size_t *len)
{
	static const struct pc_run runs[] = { { 0, 4 }, { 10, 1 }, { 12, 30 }, { 255, 2 } };
	struct snap s;

	snap_begin(&s, "/srv/data", 4096, 1);
	snap_file(&s, "db/table.ibd", PC_QUALITY_EXACT, runs, 4);
	return snap_end(&s, len);
}

static void writer_seeds(void)
{
	static const struct pc_run few[] = { { 1, 1 }, { 3, 2 } };
	struct pc_run *many;
	char *path;
	struct snap s;
	uint8_t *p;
	size_t len;

	snap_begin(&s, NULL, 4096, 0);
	p = snap_end(&s, &len);
	put_snapshot("valid-empty", p, len);
	free(p);

	p = one_file(&len);
	put_snapshot("valid-one-file", p, len);
	free(p);

	/* more than 64 KiB of runs: the writer continues them in R records */
	many = calloc(40000, sizeof(*many));
	CHECK(many);
	for (size_t i = 0; i < 40000; i++)
		many[i] = (struct pc_run){ 3 * i + (i % 7 == 0), 1 + (i % 3 == 0) };
	snap_begin(&s, "/var/lib/postgresql", 4096, 2);
	snap_file(&s, "base/16384/2619", PC_QUALITY_EXACT, many, 40000);
	snap_file(&s, "base/16384/2620", PC_QUALITY_MAPPED, few, 2);
	p = snap_end(&s, &len);
	put_snapshot("valid-many-runs", p, len);
	free(p);
	free(many);

	/* unknown files carry no runs; mapped ones are a lower bound */
	snap_begin(&s, "/", 4096, 3);
	snap_file(&s, "hidden/secret", PC_QUALITY_UNKNOWN, NULL, 0);
	snap_file(&s, "hidden/secret2", PC_QUALITY_UNKNOWN, NULL, 0);
	snap_file(&s, "mapped/lib.so", PC_QUALITY_MAPPED, few, 2);
	snap_file(&s, "zero", PC_QUALITY_EXACT, NULL, 0);
	p = snap_end(&s, &len);
	put_snapshot("valid-unknown-files", p, len);
	free(p);

	/* any bytes but NUL: newlines, invalid UTF-8, a bidi override,
	 * dots that are not "..", shared prefixes of every length, and the
	 * longest path there is */
	path = malloc(PC_SNAPSHOT_PATH_MAX + 1);
	CHECK(path);
	memset(path, 'p', PC_SNAPSHOT_PATH_MAX);
	for (size_t i = 100; i < PC_SNAPSHOT_PATH_MAX; i += 100)
		path[i] = '/';
	path[PC_SNAPSHOT_PATH_MAX] = '\0';
	snap_begin(&s, "/home/user/a\nroot with \xff bytes", 4096, 0);
	snap_file(&s, "line\nbreak", PC_QUALITY_EXACT, few, 2);
	snap_file(&s, "line\nbreak\ttab", PC_QUALITY_EXACT, few, 2);
	snap_file(&s, "\xff\xfe not utf-8", PC_QUALITY_EXACT, few, 2);
	snap_file(&s, "\xe2\x80\xae" "txt.exe", PC_QUALITY_EXACT, few, 2);
	snap_file(&s, ".../...", PC_QUALITY_EXACT, NULL, 0);
	snap_file(&s, "./a/./b//c/", PC_QUALITY_EXACT, NULL, 0);
	snap_file(&s, "a..", PC_QUALITY_EXACT, NULL, 0);
	snap_file(&s, "..a/b..", PC_QUALITY_EXACT, NULL, 0);
	snap_file(&s, path, PC_QUALITY_EXACT, few, 2);
	path[PC_SNAPSHOT_PATH_MAX - 1] = 'q';
	snap_file(&s, path, PC_QUALITY_EXACT, few, 2);
	snap_file(&s, "p", PC_QUALITY_EXACT, few, 2);
	p = snap_end(&s, &len);
	put_snapshot("valid-odd-paths", p, len);
	free(p);
	free(path);

	/* the page size bounds, and runs ending at the largest file offset */
	snap_begin(&s, "/mnt", 512, 0);
	{
		uint64_t max = (uint64_t)INT64_MAX / 512;
		const struct pc_run edge[] = { { 0, 1 }, { max - 2, 2 } };

		snap_file(&s, "sparse", PC_QUALITY_EXACT, edge, 2);
	}
	p = snap_end(&s, &len);
	put_snapshot("valid-page-512", p, len);
	free(p);
	snap_begin(&s, "/mnt", 1u << 30, 0);
	{
		uint64_t max = (uint64_t)INT64_MAX >> 30;
		const struct pc_run edge[] = { { max - 1, 1 } };

		snap_file(&s, "huge", PC_QUALITY_EXACT, edge, 1);
	}
	p = snap_end(&s, &len);
	put_snapshot("valid-page-1g", p, len);
	free(p);

	/* modes this library has no name for are handed back */
	snap_begin(&s, "/x", 65536, INT_MAX);
	snap_file(&s, "f", PC_QUALITY_EXACT, few, 2);
	p = snap_end(&s, &len);
	put_snapshot("valid-unknown-modes", p, len);
	free(p);
}

/* ---- snapshots by hand ---- */

struct craft {
	uint8_t *p;
	size_t len, cap;
};

static void craft_bytes(struct craft *c, const void *b, size_t n)
{
	if (c->len + n > c->cap) {
		c->cap = (c->len + n) * 2;
		c->p = realloc(c->p, c->cap);
		CHECK(c->p);
	}
	memcpy(c->p + c->len, b, n);
	c->len += n;
}

static void craft_preamble(struct craft *c, uint16_t version)
{
	uint8_t v[2] = { (uint8_t)version, (uint8_t)(version >> 8) };

	craft_bytes(c, PC_SNAP_MAGIC, PC_SNAP_MAGIC_LEN);
	craft_bytes(c, v, 2);
}

/* A record whose payload is the varints, then raw bytes, then varints
 * (UINT64_MAX ends each list; tail may be NULL). */
static void craft_record(struct craft *c, uint8_t type, const uint64_t *head, const void *raw,
			 size_t rawlen, const uint64_t *tail)
{
	uint8_t payload[1024], hdr[PC_SNAP_REC_HEAD], crc[4];
	size_t n = 0;

	for (; head && *head != UINT64_MAX; head++)
		n += pc_varint_put(payload + n, *head);
	CHECK(n + rawlen < sizeof(payload) - 200);
	if (rawlen)
		memcpy(payload + n, raw, rawlen);
	n += rawlen;
	for (; tail && *tail != UINT64_MAX; tail++)
		n += pc_varint_put(payload + n, *tail);
	hdr[0] = type;
	pc_put_le32(hdr + 1, (uint32_t)n);
	pc_put_le32(crc, pc_crc32c(pc_crc32c(0, hdr, sizeof(hdr)), payload, n));
	craft_bytes(c, hdr, sizeof(hdr));
	craft_bytes(c, payload, n);
	craft_bytes(c, crc, sizeof(crc));
}

static void craft_header(struct craft *c)
{
	static const char gen[] = "mkcorpus";
	const uint64_t head[] = { 4096, pc_zigzag(CAPTURE_TIME), 1, 2, 3, 0, sizeof(gen) - 1,
				  UINT64_MAX };

	craft_record(c, PC_SNAP_REC_HEADER, head, gen, sizeof(gen) - 1, NULL);
}

/* A file record: path (no shared prefix), counts, then inline runs. */
static void craft_file(struct craft *c, uint64_t shared, const char *suffix, uint64_t nruns,
		       uint64_t npages, const uint64_t *runs)
{
	uint64_t head[] = { shared, strlen(suffix), UINT64_MAX };
	uint64_t tail[64] = { 8192, pc_zigzag(-1), 0x803, 99, PC_QUALITY_EXACT, nruns, npages };
	size_t n = 7;

	for (; runs && *runs != UINT64_MAX; runs++)
		tail[n++] = *runs;
	tail[n] = UINT64_MAX;
	craft_record(c, PC_SNAP_REC_FILE, head, suffix, strlen(suffix), tail);
}

static void craft_end(struct craft *c, uint64_t files, uint64_t runs, uint64_t pages)
{
	const uint64_t v[] = { files, runs, pages, c->len, UINT64_MAX };

	craft_record(c, PC_SNAP_REC_END, v, NULL, 0, NULL);
}

static void crafted_seeds(void)
{
	struct craft c = { 0 };

	/* runs split over small R records, one of them empty of inline runs;
	 * and a second file sharing part of the first one's path */
	{
		const uint64_t r1[] = { 5, 0, UINT64_MAX }, r2[] = { 0, 1, UINT64_MAX };
		const uint64_t r3[] = { 100, 0, 1, 0, UINT64_MAX };

		craft_preamble(&c, 1);
		craft_header(&c);
		craft_file(&c, 0, "split/runs", 4, 5, NULL);
		craft_record(&c, PC_SNAP_REC_RUNS, r1, NULL, 0, NULL);
		craft_record(&c, PC_SNAP_REC_RUNS, r2, NULL, 0, NULL);
		craft_record(&c, PC_SNAP_REC_RUNS, r3, NULL, 0, NULL);
		craft_file(&c, 6, "more", 1, 1, (const uint64_t[]){ 0, 0, UINT64_MAX });
		craft_end(&c, 2, 5, 6);
		put_snapshot("valid-split-runs", c.p, c.len);
		c.len = 0;
	}
	/* paths the reader hands out and pc_snapshot_path_check() refuses */
	{
		craft_preamble(&c, 1);
		craft_header(&c);
		craft_file(&c, 0, "../../etc/shadow", 0, 0, NULL);
		craft_file(&c, 0, "/etc/passwd", 0, 0, NULL);
		craft_file(&c, 0, "a/../../b", 0, 0, NULL);
		craft_file(&c, 9, "/..", 0, 0, NULL);
		craft_end(&c, 4, 0, 0);
		put_snapshot("valid-escaping-paths", c.p, c.len);
		c.len = 0;
	}
	/* the checksums are right, the contents are not */
	{
		craft_preamble(&c, 1);
		craft_header(&c);
		craft_file(&c, 0, "f", 1, 1, (const uint64_t[]){ 0, 0, UINT64_MAX });
		craft_end(&c, 2, 1, 1);
		put_snapshot("bad-end-totals", c.p, c.len);
		c.len = 0;

		craft_preamble(&c, 1);
		craft_header(&c);
		craft_file(&c, 0, "f", 2, 2, (const uint64_t[]){ 0, 0, UINT64_MAX });
		craft_file(&c, 0, "g", 0, 0, NULL);
		craft_end(&c, 2, 1, 1);
		put_snapshot("bad-runs-missing", c.p, c.len);
		c.len = 0;

		craft_preamble(&c, 1);
		craft_header(&c);
		craft_file(&c, 0, "f", 2, 3, (const uint64_t[]){ 4, 0, 0, 0, UINT64_MAX });
		craft_end(&c, 1, 2, 3);
		put_snapshot("bad-page-count", c.p, c.len);
		c.len = 0;

		craft_preamble(&c, 1);
		craft_header(&c);
		craft_file(&c, 2, "f", 0, 0, NULL);
		craft_end(&c, 1, 0, 0);
		put_snapshot("bad-shared-prefix", c.p, c.len);
		c.len = 0;

		craft_preamble(&c, 1);
		craft_header(&c);
		craft_record(&c, PC_SNAP_REC_RUNS, (const uint64_t[]){ 0, 0, UINT64_MAX }, NULL,
			     0, NULL);
		craft_end(&c, 0, 0, 0);
		put_snapshot("bad-stray-runs", c.p, c.len);
		c.len = 0;

		/* a varint with a redundant zero group: the size 0 as 0x80 0x00 */
		craft_preamble(&c, 1);
		craft_header(&c);
		{
			static const uint8_t f[] = { 0, 1, 'f', 0x80, 0x00, 0, 0, 0, 1, 0, 0 };

			craft_record(&c, PC_SNAP_REC_FILE, NULL, f, sizeof(f), NULL);
		}
		craft_end(&c, 1, 0, 0);
		put_snapshot("bad-varint-not-shortest", c.p, c.len);
		c.len = 0;
	}
	free(c.p);
}

/* Where the last record of a well-formed snapshot starts. */
static size_t last_record(const uint8_t *p, size_t len)
{
	size_t pos = PC_SNAP_PREAMBLE_LEN, last = pos;

	while (pos < len) {
		last = pos;
		pos += PC_SNAP_REC_HEAD + pc_get_le32(p + pos + 1) + PC_SNAP_REC_TAIL;
	}
	CHECK(pos == len);
	return last;
}

/* Broken copies of valid-one-file. */
static void broken_seeds(void)
{
	uint8_t *p, *q;
	size_t len;

	p = one_file(&len);
	put_snapshot("bad-truncated-magic", p, 9);
	put_snapshot("bad-truncated-version", p, 15);
	put_snapshot("bad-truncated-header", p, 30);
	put_snapshot("bad-truncated-file", p, len - 25);
	put_snapshot("bad-truncated-end", p, len - 2);
	put_snapshot("bad-no-end", p, last_record(p, len));

	q = malloc(len + 1);
	CHECK(q);
	memcpy(q, p, len);
	q[len] = 0;
	put_snapshot("bad-trailing-byte", q, len + 1);
	q[40] ^= 0x10;
	put_snapshot("bad-bit-flip", q, len);
	memcpy(q, p, len);
	q[14] = 2;
	put_snapshot("bad-version-2", q, len);
	memcpy(q, p, len);
	q[10] = '\n'; /* "\r\n" became "\n\n": a text-mode transfer */
	put_snapshot("bad-magic", q, len);
	memcpy(q, p, len);
	pc_put_le32(q + PC_SNAP_PREAMBLE_LEN + 1, PC_SNAP_PAYLOAD_MAX + 1);
	put_snapshot("bad-record-too-long", q, len);
	memcpy(q, p, len);
	q[PC_SNAP_PREAMBLE_LEN] = 'X';
	put_snapshot("bad-record-type", q, len);
	free(q);
	free(p);
}

static void path_seeds(void)
{
	static const char *const paths[] = {
		"a", "a/b/c", "..", "../x", "a/..", "a/../b", "/abs", "...", "a/..b",
		".../", "a//b", "./.", "..\n", "a/b/", "\xff/..", "a/.. /b",
	};
	char name[32], *p;

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		snprintf(name, sizeof(name), "path-%02zu", i);
		put_file("fuzz-path-check", name, paths[i], strlen(paths[i]));
	}
	put_file("fuzz-path-check", "empty", "", 0);
	put_file("fuzz-path-check", "nul-inside", "a\0/../b", 7);
	p = malloc(PC_SNAPSHOT_PATH_MAX + 2);
	CHECK(p);
	memset(p, 'x', PC_SNAPSHOT_PATH_MAX + 1);
	p[PC_SNAPSHOT_PATH_MAX - 3] = '/';
	put_file("fuzz-path-check", "longest", p, PC_SNAPSHOT_PATH_MAX);
	put_file("fuzz-path-check", "too-long", p, PC_SNAPSHOT_PATH_MAX + 1);
	memcpy(p + PC_SNAPSHOT_PATH_MAX - 2, "..", 2);
	put_file("fuzz-path-check", "longest-dotdot", p, PC_SNAPSHOT_PATH_MAX);
	free(p);
}

static void text_seeds(void)
{
	static const char *const texts[] = {
		"plain/ascii path.txt",
		"caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80",
		"\xff\xfe\xc0\xaf\xed\xa0\x80\xf4\x90\x80\x80\xf8\x88\x80\x80\x80",
		"\xe2\x80\xaegpj.exe \xe2\x81\xa6\xc2\x85\xc2\xa0",
		"\n\t\r\b\f\x01\x1f\x7f \"quoted\" back\\slash",
		"\xe2\x82",
		"\xf4\x8f\xbf\xbf\xef\xbf\xbf\xc2\x80\xdf\xbf",
		"4096", "4K", "4kib", "1MB", "2G", "3tIb", "5P", "16384P", "16385P",
		"18446744073709551615", "18446744073709551616", "0x10", "1E", "-1", " 1",
		"100000", "100001",
		/* lines of /proc/PID/maps (pid.c), and --pid's bounds */
		"7f1c2a000000-7f1c2a021000 r--p 00000000 08:03 1234567        /usr/lib/libc.so.6",
		"55d0c0a00000-55d0c0a21000 rw-p 00000000 00:00 0                          [heap]",
		"7f00-7f01 r-xp 00000000 fd:01 42   /tmp/a b (deleted)",
		"  a-b c d e 18446744073709551616 /x", "a-b c d e -1 /x", "a-b c d e\t+5 /x",
		"a-b c d e 5", "a-b c d e5 ", "2147483647", "2147483648", "0",
	};
	char name[32];

	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		snprintf(name, sizeof(name), "text-%02zu", i);
		put_file("fuzz-cli-text", name, texts[i], strlen(texts[i]));
	}
	put_file("fuzz-cli-text", "nul-inside", "12\0K", 4);
}

/* ---- happycache files (fuzz-happycache: the first byte is the mode) ---- */

#define HC_RAW 0x00                    /* the rest is the file */
#define HC_TEXT 0x01                   /* the rest is the text, gzip'ed */
#define HC_TEXT_AT(k) (0x03 | (k) << 2) /* ... starting k bytes before HC_BUF */

static void put_hc(const char *name, uint8_t mode, const void *body, size_t len)
{
	uint8_t *p = malloc(len + 1);
	int ret;

	CHECK(p);
	p[0] = mode;
	if (len)
		memcpy(p + 1, body, len);
	ret = pc_fuzz_happycache(p, len + 1);
	if (!strncmp(name, "valid-", 6) && ret != 0) {
		fprintf(stderr, "mkcorpus: %s: the reader says %d, not 0\n", name, ret);
		exit(1);
	}
	if (!strncmp(name, "bad-", 4) && ret != -EBADMSG) {
		fprintf(stderr, "mkcorpus: %s: the reader says %d, not -EBADMSG\n", name, ret);
		exit(1);
	}
	put_file("fuzz-happycache", name, p, len + 1);
	free(p);
}

static void put_hc_text(const char *name, uint8_t mode, const char *text)
{
	put_hc(name, mode, text, strlen(text));
}

struct hc_file {
	const char *path;
	const struct pc_run *runs;
	size_t n;
};

/* A happycache dump of the files by hc_write_runs() (malloc'ed). */
static uint8_t *hc_dump(const struct hc_file *files, size_t nfiles, size_t *len)
{
	struct hc_writer *w;
	struct stat st;
	uint8_t *p;
	int fd = memfd_create("mkcorpus-hc", MFD_CLOEXEC);

	CHECK(fd >= 0);
	CHECK(hc_writer_new(fd, &w) == 0);
	for (size_t i = 0; i < nfiles; i++)
		CHECK(hc_write_runs(w, files[i].path, files[i].runs, files[i].n) == 0);
	CHECK(hc_writer_finish(w) == 0);
	hc_writer_free(w);
	CHECK(fstat(fd, &st) == 0);
	*len = (size_t)st.st_size;
	p = malloc(*len);
	CHECK(p);
	CHECK(pread(fd, p, *len, 0) == (ssize_t)*len);
	close(fd);
	return p;
}

static void happycache_raw_seeds(void)
{
	static const struct pc_run table[] = { { 0, 4 }, { 10, 1 }, { 12, 30 }, { 255, 2 } };
	static const struct pc_run one[] = { { 7, 1 } };
	const struct hc_file files[] = {
		{ "db/table.ibd", table, 4 },
		{ "log/0001", one, 1 },
	};
	static const char garbage[] = "not gzip";
	uint8_t *p, *q;
	size_t len;

	p = hc_dump(files, 2, &len);
	put_hc("valid-raw-dump", HC_RAW, p, len);
	/* gzip members one after another read as one text */
	q = malloc(2 * len + sizeof(garbage));
	CHECK(q);
	memcpy(q, p, len);
	memcpy(q + len, p, len);
	put_hc("valid-raw-two-members", HC_RAW, q, 2 * len);
	/* bytes after a member that are not another one: refused */
	memcpy(q + len, garbage, sizeof(garbage) - 1);
	put_hc("bad-raw-trailing-garbage", HC_RAW, q, len + sizeof(garbage) - 1);
	put_hc("bad-raw-truncated", HC_RAW, p, len / 2);
	put_hc("bad-raw-no-length", HC_RAW, p, len - 4);
	put_hc("bad-raw-header-only", HC_RAW, p, 10);
	memcpy(q, p, len);
	q[len - 8] ^= 0x01; /* the CRC-32 */
	put_hc("bad-raw-crc", HC_RAW, q, len);
	memcpy(q, p, len);
	q[len - 4] ^= 0x01; /* ISIZE */
	put_hc("bad-raw-length", HC_RAW, q, len);
	memcpy(q, p, len);
	q[2] = 9; /* a compression method that is not deflate */
	put_hc("bad-raw-method", HC_RAW, q, len);
	memcpy(q, p, len);
	q[3] = 0x04; /* FEXTRA set, with no extra field there */
	put_hc("raw-flags", HC_RAW, q, len);
	free(q);
	free(p);
	/* an empty file is not a dump (happycache writes a member even for
	 * nothing), and a file that is not gzip is not read as plain text */
	put_hc("bad-raw-empty", HC_RAW, NULL, 0);
	put_hc_text("bad-raw-plain-text", HC_RAW, "./a\n3\n1\n");
	/* (the writer's 2^20-page chunks take seconds to read back under
	 * ASan: tests/test-fuzz-corpus.c checks them instead) */
}

static void happycache_text_seeds(void)
{
	static const struct { const char *name, *text; } texts[] = {
		/* tests/test-snapshot-cli.py's file by hand */
		{ "valid-by-hand", "./a\n3\n1\n1\n95\n./a\n200\n1\n/srv/data/b\n7\n2\n" },
		/* a chunk that goes on, one that starts over, an empty one */
		{ "valid-chunks", "./a\n5\n1\n./a\n9\n./a\n2\n1\n./a\n./a\n20\n./b\n" },
		{ "valid-blank-lines", "\n\n./a\n\n0\n\n\n1\n\n" },
		{ "valid-no-final-newline", "./a\n1\n2" },
		{ "valid-leading-zeros", "./a\n0007\n0001\n./b\n000\n" },
		{ "valid-empty-files", "./a\n./b\n./a\n./a\n6\n" },
		/* path lines hold any bytes but NUL and newline; escapes are
		 * just bytes, a newline in a path cannot be written */
		{ "valid-odd-paths",
		  "./a b\n1\n./tab\there\n1\n./back\\slash\\n\n1\n./caf\xc3\xa9\n1\n"
		  "./\xff\xfe\n1\n./\xe2\x80\xaetxt.exe\n1\n./../../etc/shadow\n1\n"
		  "/123\n1\n./\n1\n.//abs\n1\n./x\r\n1\n./%s%n\n2\n" },
		{ "valid-empty", "" },
		{ "bad-number-first", "12\n./a\n1\n" },
		{ "bad-not-a-path", "./a\n1\na\n1\n" },
		{ "bad-dot", "./a\n.\n" },
		{ "bad-overflow", "./a\n999999999999999999999999999999\n" },
		{ "bad-u64-max-plus-1", "./a\n18446744073709551616\n" },
		{ "bad-u64-max", "./a\n18446744073709551615\n" },
		{ "bad-delta-overflow", "./a\n1\n4611686018427387904\n" },
		{ "bad-zero-delta", "./a\n1\n0\n" },
		{ "bad-nul-in-path", "./a\0b\n1\n" },
		{ "bad-nul-in-number", "./a\n1\0\n" },
		{ "bad-signed", "./a\n+1\n" },
		{ "bad-negative", "./a\n5\n-1\n" },
		{ "bad-space", "./a\n 1\n" },
		{ "bad-hex", "./a\n0x10\n" },
		{ "bad-crlf", "./a\r\n1\r\n" },
		{ "bad-after-chunk", "./a\n5\n./a\n9\n0\n" },
		/* found by fuzz-happycache: a file left after its first run
		 * with a second one being built, then the end; that run came
		 * back from hc_next_run() after hc_next_file() said 0 */
		{ "regress-run-after-end", "./z\n./a\n0\n2\n" },
	};
	uint64_t max_page = (uint64_t)INT64_MAX / (uint64_t)pc_page_size() - 1;
	char *t = malloc(2 * HC_LINE_MAX + 64);
	size_t len;

	CHECK(t);
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		/* bad-nul-*: the text holds a NUL */
		len = strlen(texts[i].text);
		if (strstr(texts[i].name, "nul"))
			len += strlen(texts[i].text + len + 1) + 1;
		put_hc(texts[i].name, HC_TEXT, texts[i].text, len);
	}
	/* the last page there is with this page size, and one past it
	 * (named edge-: the answer depends on the page size) */
	snprintf(t, 64, "./a\n%llu\n", (unsigned long long)max_page);
	put_hc_text("edge-max-page", HC_TEXT, t);
	snprintf(t, 64, "./a\n%llu\n", (unsigned long long)max_page + 1);
	put_hc_text("edge-past-max-page", HC_TEXT, t);
	snprintf(t, 64, "./a\n%llu\n1\n", (unsigned long long)max_page - 1);
	put_hc_text("edge-max-page-by-delta", HC_TEXT, t);

	/* the longest lines there are: "./" and "/" paths of HC_LINE_MAX
	 * bytes; writing them back, the writer must refuse them (it once
	 * wrote lines its own reader refused) */
	len = 0;
	memcpy(t, "./", 2);
	memset(t + 2, 'p', HC_LINE_MAX - 2);
	len += HC_LINE_MAX;
	memcpy(t + len, "\n0\n/", 4);
	len += 4;
	memset(t + len, 'q', HC_LINE_MAX - 1);
	len += HC_LINE_MAX - 1;
	memcpy(t + len, "\n1\n", 3);
	len += 3;
	put_hc("valid-longest-lines", HC_TEXT, t, len);
	/* one byte more */
	memset(t, 'p', HC_LINE_MAX + 1);
	memcpy(t, "./", 2);
	memcpy(t + HC_LINE_MAX + 1, "\n1\n", 3);
	put_hc("bad-too-long", HC_TEXT, t, HC_LINE_MAX + 4);
	put_hc("bad-too-long-at-end", HC_TEXT, t, HC_LINE_MAX + 1);

	/* lines across the reader's buffer boundary */
	put_hc_text("valid-boundary-pages", HC_TEXT_AT(9), "./a\n1\n1\n22\n333\n4444\n1\n");
	put_hc_text("valid-boundary-path", HC_TEXT_AT(0), "./across/the/boundary\n7\n");
	put_hc_text("valid-boundary-newline", HC_TEXT_AT(4), "./ab\n\n3\n");
	put_hc_text("bad-boundary-zero", HC_TEXT_AT(5), "./a\n1\n00\n");
	free(t);
}

int main(int argc, char **argv)
{
	if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		printf("usage: mkcorpus OUTDIR\nWrites the fuzzers' seeds into OUTDIR/<target>/.\n");
		return 0;
	}
	if (argc != 2 || argv[1][0] == '-') {
		fprintf(stderr, "usage: mkcorpus OUTDIR (an OUTDIR starting with '-': write ./%s)\n",
			argc == 2 ? argv[1] : "-x");
		return 2;
	}
	outdir = argv[1];
	CHECK(mkdir(outdir, 0755) == 0 || errno == EEXIST);
	writer_seeds();
	crafted_seeds();
	broken_seeds();
	path_seeds();
	text_seeds();
	happycache_raw_seeds();
	happycache_text_seeds();
	return 0;
}
