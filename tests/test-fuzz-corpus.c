/* SPDX-License-Identifier: MIT */
/*
 * The fuzzers' corpora (fuzz/corpus/<target>/) replayed through the fuzz
 * drivers (fuzz/fuzz-*.c, built here with PC_FUZZ_REPLAY: no libFuzzer),
 * in the ordinary build, so that every seed and every regress-* input that
 * once crashed a fuzzer is checked by plain `meson test`, by the valgrind
 * run and by the gcc ASan build too. The drivers abort when the code under
 * test breaks a promise; here each answer must also be a clean one:
 *   fuzz-snapshot    valid-* read to the end (0), bad-* fail with -EBADMSG
 *                    or -EPROTONOSUPPORT, anything else one of those three;
 *                    and through a pipe the reader answers as from a memfd
 *   fuzz-path-check  0, -EINVAL or -ENAMETOOLONG
 *   fuzz-cli-text    0
 *   fuzz-happycache  valid-* read to the end (0), bad-* fail with -EBADMSG,
 *                    anything else one of the two; and through a pipe the
 *                    reader answers as from a memfd
 * And one check too slow for a fuzzer: the happycache writer's chunks of
 * 2^20 pages read back as one file.
 * Usage: test-fuzz-corpus CORPUS_DIR (meson passes fuzz/corpus).
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sys/mman.h>
#include <zlib.h>

#include "pagecache/pagecache.h"
#include "snapcli.h"
#include "fuzz.h"

static const char *corpus_root;

struct input {
	char *name;
	uint8_t *data;
	size_t len;
};

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct input *)a)->name, ((const struct input *)b)->name);
}

/* Every regular file of corpus_root/target, sorted by name. */
static size_t load(const char *target, struct input **out)
{
	char dir[4096], path[8192];
	struct input *in = NULL;
	struct dirent *de;
	size_t n = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/%s", corpus_root, target);
	d = opendir(dir);
	ck_assert_msg(d, "%s: %s", dir, strerror(errno));
	while ((de = readdir(d))) {
		struct stat st;
		int fd;

		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (de->d_name[0] == '.' || stat(path, &st) || !S_ISREG(st.st_mode))
			continue;
		in = realloc(in, (n + 1) * sizeof(*in));
		ck_assert_ptr_nonnull(in);
		in[n].name = strdup(de->d_name);
		in[n].len = (size_t)st.st_size;
		in[n].data = malloc(in[n].len + 1);
		ck_assert(in[n].name && in[n].data);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(read(fd, in[n].data, in[n].len), (ssize_t)in[n].len);
		close(fd);
		n++;
	}
	closedir(d);
	qsort(in, n, sizeof(*in), by_name);
	*out = in;
	return n;
}

static void unload(struct input *in, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(in[i].name);
		free(in[i].data);
	}
	free(in);
}

static int prefixed(const char *name, const char *prefix)
{
	return !strncmp(name, prefix, strlen(prefix));
}

/* ---- the snapshot reader through a pipe ---- */

struct feeder {
	int fd;
	const uint8_t *data;
	size_t len;
};

/* Writes the input in small pieces, so reads may come back short. */
static void *feed(void *arg)
{
	struct feeder *f = arg;

	for (size_t done = 0; done < f->len;) {
		size_t chunk = f->len - done < 1000 ? f->len - done : 1000;
		ssize_t n = write(f->fd, f->data + done, chunk);

		if (n <= 0)
			break; /* the reader stopped early: EPIPE */
		done += (size_t)n;
	}
	close(f->fd);
	return NULL;
}

/* Read every file and run from a pipe; the walk's end: 0 or -errno. */
static int walk_pipe(const uint8_t *data, size_t len)
{
	const struct pc_snapshot_file *f;
	struct pc_snapshot_reader *rd;
	struct feeder feeder = { .data = data, .len = len };
	struct pc_run run;
	pthread_t thread;
	int fds[2], ret;

	ck_assert_int_eq(pipe2(fds, O_CLOEXEC), 0);
	feeder.fd = fds[1];
	ck_assert_int_eq(pthread_create(&thread, NULL, feed, &feeder), 0);
	ck_assert_int_eq(pc_snapshot_reader_new(fds[0], &rd), 0);
	while ((ret = pc_snapshot_next_file(rd, &f)) > 0)
		while ((ret = pc_snapshot_next_run(rd, &run)) > 0)
			;
	pc_snapshot_reader_free(rd);
	close(fds[0]); /* the feeder, if still writing, gets EPIPE */
	ck_assert_int_eq(pthread_join(thread, NULL), 0);
	return ret;
}

START_TEST(snapshot_corpus)
{
	size_t n, valid = 0, bad = 0;
	struct input *in;

	n = load("fuzz-snapshot", &in);
	for (size_t i = 0; i < n; i++) {
		int ret = pc_fuzz_snapshot(in[i].data, in[i].len);
		int clean = ret == -EBADMSG || ret == -EPROTONOSUPPORT;

		if (prefixed(in[i].name, "valid-")) {
			ck_assert_msg(ret == 0, "%s: %d, expected 0", in[i].name, ret);
			valid++;
		} else if (prefixed(in[i].name, "bad-")) {
			ck_assert_msg(clean, "%s: %d, expected -EBADMSG or -EPROTONOSUPPORT",
				      in[i].name, ret);
			bad++;
		} else {
			ck_assert_msg(ret == 0 || clean, "%s: %d", in[i].name, ret);
		}
		ck_assert_msg(walk_pipe(in[i].data, in[i].len) == ret,
			      "%s: through a pipe the reader says otherwise", in[i].name);
	}
	/* the seeds mkcorpus writes are all there */
	ck_assert_uint_ge(valid, 8);
	ck_assert_uint_ge(bad, 15);
	unload(in, n);
}
END_TEST

START_TEST(path_check_corpus)
{
	size_t n, ok = 0, inval = 0, toolong = 0;
	struct input *in;

	n = load("fuzz-path-check", &in);
	for (size_t i = 0; i < n; i++) {
		int ret = pc_fuzz_path_check(in[i].data, in[i].len);

		ck_assert_msg(ret == 0 || ret == -EINVAL || ret == -ENAMETOOLONG, "%s: %d",
			      in[i].name, ret);
		ok += ret == 0;
		inval += ret == -EINVAL;
		toolong += ret == -ENAMETOOLONG;
	}
	ck_assert(ok >= 3 && inval >= 3 && toolong >= 1);
	unload(in, n);
}
END_TEST

START_TEST(cli_text_corpus)
{
	struct input *in;
	size_t n;

	n = load("fuzz-cli-text", &in);
	ck_assert_uint_ge(n, 10);
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(pc_fuzz_cli_text(in[i].data, in[i].len) == 0, "%s", in[i].name);
	unload(in, n);
}
END_TEST

/* ---- the happycache reader ---- */

/* Read every file and run from fd; the walk's end: 0 or -errno. */
static int hc_walk(int fd)
{
	struct hc_reader *r;
	const char *path;
	struct pc_run run;
	int ret;

	ck_assert_int_eq(hc_reader_new(fd, &r), 0);
	while ((ret = hc_next_file(r, &path)) > 0)
		while ((ret = hc_next_run(r, &run)) > 0)
			;
	hc_reader_free(r);
	return ret;
}

static int hc_walk_pipe(const uint8_t *data, size_t len)
{
	struct feeder feeder = { .data = data, .len = len };
	pthread_t thread;
	int fds[2], ret;

	ck_assert_int_eq(pipe2(fds, O_CLOEXEC), 0);
	feeder.fd = fds[1];
	ck_assert_int_eq(pthread_create(&thread, NULL, feed, &feeder), 0);
	ret = hc_walk(fds[0]);
	close(fds[0]);
	ck_assert_int_eq(pthread_join(thread, NULL), 0);
	return ret;
}

START_TEST(happycache_corpus)
{
	size_t n, valid = 0, bad = 0;
	struct input *in;

	n = load("fuzz-happycache", &in);
	for (size_t i = 0; i < n; i++) {
		int ret = pc_fuzz_happycache(in[i].data, in[i].len);
		uint8_t *file;
		size_t len;

		if (prefixed(in[i].name, "valid-")) {
			ck_assert_msg(ret == 0, "%s: %d, expected 0", in[i].name, ret);
			valid++;
		} else if (prefixed(in[i].name, "bad-")) {
			ck_assert_msg(ret == -EBADMSG, "%s: %d, expected -EBADMSG", in[i].name, ret);
			bad++;
		} else {
			ck_assert_msg(ret == 0 || ret == -EBADMSG, "%s: %d", in[i].name, ret);
		}
		pc_fuzz_happycache_file(in[i].data, in[i].len, &file, &len);
		ck_assert_msg(hc_walk_pipe(file, len) == ret,
			      "%s: through a pipe the reader says otherwise", in[i].name);
		free(file);
	}
	/* the seeds mkcorpus writes are all there */
	ck_assert_uint_ge(valid, 14);
	ck_assert_uint_ge(bad, 28);
	unload(in, n);
}
END_TEST

/* More than 2^20 pages of one file: the writer repeats the path line with
 * the next page absolute, and the reader takes that chunk as the same
 * file (the runs come back merged across it). */
START_TEST(happycache_chunks)
{
	const struct pc_run runs[] = {
		{ 3, HC_CHUNK_PAGES + 2 }, { 2 * HC_CHUNK_PAGES + 10, 5 },
	};
	struct hc_writer *w;
	struct hc_reader *r;
	struct pc_run run;
	const char *path;
	size_t len = 0, cap = 8 << 20, line = 0, paths = 0, wrong = 0;
	char *text = malloc(cap), *p, *nl;
	gzFile gz;
	int fd = memfd_create("hc-chunks", MFD_CLOEXEC), n;

	ck_assert(text && fd >= 0);
	ck_assert_int_eq(hc_writer_new(fd, &w), 0);
	ck_assert_int_eq(hc_write_runs(w, "big", runs, 2), 0);
	ck_assert_int_eq(hc_writer_finish(w), 0);
	hc_writer_free(w);

	/* the text: "./big" again at line 2^20 + 2, then 3 + 2^20 */
	ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
	gz = gzdopen(fcntl(fd, F_DUPFD_CLOEXEC, 0), "rb");
	ck_assert_ptr_nonnull(gz);
	while ((n = gzread(gz, text + len, (unsigned int)(cap - len))) > 0)
		len += (size_t)n;
	ck_assert_int_eq(n, 0);
	ck_assert_uint_lt(len, cap);
	gzclose_r(gz);
	/* (no ck_assert per line: each one costs Check a message) */
	for (p = text; p < text + len && (nl = memchr(p, '\n', (size_t)(text + len - p)));
	     p = nl + 1) {
		line++;
		if (nl - p == 5 && !memcmp(p, "./big", 5)) {
			paths++;
			wrong += line != 1 && line != HC_CHUNK_PAGES + 2;
			wrong += line > 1 && strncmp(nl + 1, "1048579\n", 8);
		}
	}
	ck_assert_ptr_eq(p, text + len);
	ck_assert_uint_eq(wrong, 0);
	ck_assert_uint_eq(paths, 2);
	ck_assert_uint_eq(line, 2 + HC_CHUNK_PAGES + 2 + 5);

	ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
	ck_assert_int_eq(hc_reader_new(fd, &r), 0);
	ck_assert_int_eq(hc_next_file(r, &path), 1);
	ck_assert_str_eq(path, "./big");
	for (size_t i = 0; i < 2; i++) {
		ck_assert_int_eq(hc_next_run(r, &run), 1);
		ck_assert_uint_eq(run.page, runs[i].page);
		ck_assert_uint_eq(run.npages, runs[i].npages);
	}
	ck_assert_int_eq(hc_next_run(r, &run), 0);
	ck_assert_int_eq(hc_next_file(r, &path), 0);
	hc_reader_free(r);
	close(fd);
	free(text);
}
END_TEST

int main(int argc, char **argv)
{
	Suite *s = suite_create("fuzz-corpus");
	TCase *tc = tcase_create("replay");
	SRunner *sr;
	int failed;

	if (argc != 2) {
		fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
		return 2;
	}
	corpus_root = argv[1];
	signal(SIGPIPE, SIG_IGN);
	tcase_add_test(tc, snapshot_corpus);
	tcase_add_test(tc, path_check_corpus);
	tcase_add_test(tc, cli_text_corpus);
	tcase_add_test(tc, happycache_corpus);
	tcase_add_test(tc, happycache_chunks);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
