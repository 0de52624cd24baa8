/* SPDX-License-Identifier: MIT */
/*
 * The snapshot format: writer and streaming reader round trips, the
 * reader's defences against truncated, corrupt and hostile input, the
 * relative-path check, and the atomic writer leaving nothing behind.
 * Everything runs on memfds, pipes and a private temporary directory.
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
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bitmap.h"
#include "pagecache/pagecache.h"
#include "pc-private.h"
#include "pc-test.h"
#include "snapshot-codec.h"

#define CAPTURE_TIME INT64_C(1700000000123456789)

/* ---- helpers ---------------------------------------------------------------- */

static int memfd(void)
{
	int fd = memfd_create("snapshot", MFD_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	return fd;
}

static struct pc_snapshot_info test_info(void)
{
	return (struct pc_snapshot_info){
		.size = sizeof(struct pc_snapshot_info),
		.root = "/srv/data",
		.capture_time_ns = CAPTURE_TIME,
		.mincore_mode = PC_MINCORE_GATED_FAKED,
		.cachestat_mode = PC_CACHESTAT_GATED,
		.nowait_mode = PC_NOWAIT_DESTRUCTIVE,
	};
}

static struct pc_snapshot_file meta(uint64_t size, int quality)
{
	return (struct pc_snapshot_file){
		.size = sizeof(struct pc_snapshot_file),
		.file_size = size,
		.mtime_ns = -5, /* before the epoch: zigzag must carry it */
		.dev = 0x803,
		.ino = 1234567,
		.quality = quality,
	};
}

/* The whole content of fd (from 0), malloc'ed. */
static uint8_t *slurp(int fd, size_t *len)
{
	struct stat st;
	uint8_t *buf;

	ck_assert_int_eq(fstat(fd, &st), 0);
	buf = malloc((size_t)st.st_size + 1);
	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(pread(fd, buf, (size_t)st.st_size, 0), st.st_size);
	*len = (size_t)st.st_size;
	return buf;
}

/* A memfd holding bytes, positioned at 0. */
static int memfd_with(const uint8_t *bytes, size_t len)
{
	int fd = memfd();

	ck_assert_int_eq(write(fd, bytes, len), (ssize_t)len);
	ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
	return fd;
}

/* Read a whole snapshot, runs included: 0 for a clean end or -errno, with
 * the counts seen and the reader's error offset. */
struct scan {
	uint64_t files, runs, pages, offset;
	char msg[256];
};

static int scan_fd(int fd, struct scan *s)
{
	struct pc_snapshot_reader *rd;
	const struct pc_snapshot_file *f;
	struct pc_run run;
	int ret;

	memset(s, 0, sizeof(*s));
	ck_assert_int_eq(pc_snapshot_reader_new(fd, &rd), 0);
	while ((ret = pc_snapshot_next_file(rd, &f)) > 0) {
		s->files++;
		while ((ret = pc_snapshot_next_run(rd, &run)) > 0) {
			s->runs++;
			s->pages += run.npages;
		}
		if (ret < 0)
			break;
	}
	if (ret < 0) {
		ck_assert_ptr_nonnull(pc_snapshot_reader_error(rd));
		snprintf(s->msg, sizeof(s->msg), "%s", pc_snapshot_reader_error(rd));
		s->offset = pc_snapshot_reader_error_offset(rd);
		/* sticky */
		ck_assert_int_eq(pc_snapshot_next_file(rd, &f), ret);
	} else {
		ck_assert_ptr_null(pc_snapshot_reader_error(rd));
	}
	pc_snapshot_reader_free(rd);
	return ret;
}

static int scan_bytes(const uint8_t *bytes, size_t len, struct scan *s)
{
	int fd = memfd_with(bytes, len);
	int ret = scan_fd(fd, s);

	close(fd);
	return ret;
}

/* A small snapshot: three files, one of them unknown, in a memfd. */
static const struct pc_run small_runs[] = { { 0, 1 }, { 5, 3 }, { 100, 20 }, { 1000, 1 } };

static uint8_t *small_snapshot(size_t *len)
{
	struct pc_snapshot_info info = test_info();
	struct pc_snapshot_writer *w;
	struct pc_snapshot_file m = meta(8192 * 1024, PC_QUALITY_EXACT);
	int fd = memfd();
	uint8_t *bytes;

	ck_assert_int_eq(pc_snapshot_writer_new(fd, &info, &w), 0);
	ck_assert_int_eq(pc_snapshot_write_runs(w, "db/a", &m, small_runs,
						PC_ARRAY_SIZE(small_runs)), 0);
	ck_assert_int_eq(pc_snapshot_write_file(w, "db/hidden", &m, NULL), 0);
	ck_assert_int_eq(pc_snapshot_write_runs(w, "db/b", &m, small_runs + 1, 1), 0);
	ck_assert_int_eq(pc_snapshot_writer_finish(w), 0);
	pc_snapshot_writer_free(w);
	bytes = slurp(fd, len);
	close(fd);
	return bytes;
}

/* ---- the codec ---------------------------------------------------------------- */

START_TEST(crc32c_check_value)
{
	uint32_t bitwise = ~0u;
	const char *s = "123456789";

	ck_assert_uint_eq(pc_crc32c(0, s, 9), 0xe3069283);
	ck_assert_uint_eq(pc_crc32c(pc_crc32c(0, s, 4), s + 4, 5), 0xe3069283);
	/* the table against the polynomial, bit by bit */
	for (int i = 0; i < 9; i++) {
		bitwise ^= (uint8_t)s[i];
		for (int k = 0; k < 8; k++)
			bitwise = (bitwise >> 1) ^ ((bitwise & 1) ? 0x82f63b78 : 0);
	}
	ck_assert_uint_eq(~bitwise, 0xe3069283);
}
END_TEST

START_TEST(varints_round_trip_and_reject_bad_encodings)
{
	const uint64_t values[] = { 0, 1, 127, 128, 300, UINT32_MAX, (uint64_t)INT64_MAX,
				    UINT64_MAX };
	uint8_t buf[16];

	for (size_t i = 0; i < PC_ARRAY_SIZE(values); i++) {
		size_t n = pc_varint_put(buf, values[i]);
		struct pc_cursor c = { .p = buf, .len = n };
		uint64_t v;

		ck_assert_uint_le(n, PC_SNAP_VARINT_MAX);
		ck_assert_int_eq(pc_cursor_varint(&c, &v), 0);
		ck_assert_uint_eq(v, values[i]);
		ck_assert_uint_eq(c.pos, n);
		/* one byte short: refused, cursor unmoved */
		c = (struct pc_cursor){ .p = buf, .len = n - 1 };
		ck_assert_int_eq(pc_cursor_varint(&c, &v), -EBADMSG);
		ck_assert_uint_eq(c.pos, 0);
	}
	{
		/* eleven bytes; a tenth byte above 1; a redundant zero group */
		const uint8_t eleven[] = { 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01 };
		const uint8_t big10[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02 };
		const uint8_t padded[] = { 0x81, 0x00 };
		struct pc_cursor c;
		uint64_t v;

		c = (struct pc_cursor){ .p = eleven, .len = sizeof(eleven) };
		ck_assert_int_eq(pc_cursor_varint(&c, &v), -EBADMSG);
		c = (struct pc_cursor){ .p = big10, .len = sizeof(big10) };
		ck_assert_int_eq(pc_cursor_varint(&c, &v), -EBADMSG);
		c = (struct pc_cursor){ .p = padded, .len = sizeof(padded) };
		ck_assert_int_eq(pc_cursor_varint(&c, &v), -EBADMSG);
	}
	ck_assert_int_eq(pc_unzigzag(pc_zigzag(INT64_MIN)), INT64_MIN);
	ck_assert_int_eq(pc_unzigzag(pc_zigzag(-5)), -5);
}
END_TEST

/* ---- round trips -------------------------------------------------------------- */

struct expect_file {
	const char *path;
	int quality;
	const struct pc_run *runs;
	size_t nruns;
};

static void check_files(int fd, const struct expect_file *ex, size_t n)
{
	struct pc_snapshot_reader *rd;
	const struct pc_snapshot_file *f;
	struct pc_run run;

	ck_assert_int_eq(pc_snapshot_reader_new(fd, &rd), 0);
	ck_assert_int_eq(pc_snapshot_reader_version(rd), 0); /* nothing read yet */
	ck_assert_int_eq(pc_snapshot_read_header(rd), 0);
	ck_assert_int_eq(pc_snapshot_reader_version(rd), PC_SNAPSHOT_FORMAT_VERSION);
	ck_assert_uint_eq(pc_snapshot_reader_page_size(rd), (uint32_t)pc_page_size());
	ck_assert_int_eq(pc_snapshot_reader_capture_time(rd), CAPTURE_TIME);
	ck_assert_int_eq(pc_snapshot_reader_mincore_mode(rd), PC_MINCORE_GATED_FAKED);
	ck_assert_int_eq(pc_snapshot_reader_cachestat_mode(rd), PC_CACHESTAT_GATED);
	ck_assert_int_eq(pc_snapshot_reader_nowait_mode(rd), PC_NOWAIT_DESTRUCTIVE);
	ck_assert_str_eq(pc_snapshot_reader_root(rd), "/srv/data");
	ck_assert_ptr_nonnull(strstr(pc_snapshot_reader_generator(rd), pc_version()));
	for (size_t i = 0; i < n; i++) {
		uint64_t pages = 0;

		ck_assert_int_eq(pc_snapshot_next_file(rd, &f), 1);
		ck_assert_str_eq(f->path, ex[i].path);
		ck_assert_int_eq(f->quality, ex[i].quality);
		ck_assert_uint_eq(f->file_size, 8192 * 1024);
		ck_assert_int_eq(f->mtime_ns, -5);
		ck_assert_uint_eq(f->dev, 0x803);
		ck_assert_uint_eq(f->ino, 1234567);
		ck_assert_uint_eq(f->nruns, ex[i].nruns);
		for (size_t k = 0; k < ex[i].nruns; k++) {
			ck_assert_int_eq(pc_snapshot_next_run(rd, &run), 1);
			ck_assert_uint_eq(run.page, ex[i].runs[k].page);
			ck_assert_uint_eq(run.npages, ex[i].runs[k].npages);
			pages += run.npages;
		}
		ck_assert_uint_eq(f->npages, pages);
		ck_assert_int_eq(pc_snapshot_next_run(rd, &run), 0);
		ck_assert_int_eq(pc_snapshot_next_run(rd, &run), 0);
	}
	ck_assert_int_eq(pc_snapshot_next_file(rd, &f), 0);
	ck_assert_int_eq(pc_snapshot_next_file(rd, &f), 0);
	ck_assert_ptr_null(pc_snapshot_reader_error(rd));
	pc_snapshot_reader_free(rd);
}

START_TEST(round_trip_synthetic_records)
{
	static const struct pc_run one[] = { { 7, 1 } };
	static const struct pc_run many[] = { { 0, 1 },	     { 2, 1 },	       { 4, 100 },
					      { 104, 1 },    { 1 << 20, 5 },   { UINT64_C(1) << 40, 3 } };
	static const struct expect_file ex[] = {
		{ "empty", PC_QUALITY_EXACT, NULL, 0 },
		{ "unknown", PC_QUALITY_UNKNOWN, NULL, 0 },
		{ "one/run", PC_QUALITY_EXACT, one, 1 },
		{ "one/runs-many", PC_QUALITY_MAPPED, many, PC_ARRAY_SIZE(many) },
		{ "new\nline", PC_QUALITY_EXACT, one, 1 },
		{ "bad-utf8-\xff\xfe\xc0", PC_QUALITY_EXACT, one, 1 },
		{ "o", PC_QUALITY_EXACT, NULL, 0 }, /* shorter than the previous path */
	};
	struct pc_snapshot_info info = test_info();
	struct pc_snapshot_writer *w;
	int fd = memfd();

	ck_assert_int_eq(pc_snapshot_writer_new(fd, &info, &w), 0);
	for (size_t i = 0; i < PC_ARRAY_SIZE(ex); i++) {
		struct pc_snapshot_file m = meta(8192 * 1024, ex[i].quality);

		if (ex[i].quality == PC_QUALITY_UNKNOWN)
			ck_assert_int_eq(pc_snapshot_write_file(w, ex[i].path, &m, NULL), 0);
		else
			ck_assert_int_eq(pc_snapshot_write_runs(w, ex[i].path, &m, ex[i].runs,
								ex[i].nruns), 0);
	}
	ck_assert_int_eq(pc_snapshot_writer_finish(w), 0);
	ck_assert_int_eq(pc_snapshot_writer_finish(w), -EINVAL); /* once */
	pc_snapshot_writer_free(w);
	ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
	check_files(fd, ex, PC_ARRAY_SIZE(ex));
	close(fd);
}
END_TEST

/* A residency result made by hand (the struct is the library's own). */
static struct pc_residency *fake_residency(uint64_t npages, int quality, int with_bits)
{
	struct pc_residency *r = calloc(1, sizeof(*r));

	ck_assert_ptr_nonnull(r);
	r->npages = npages;
	r->quality = quality;
	r->file_size = npages * (uint64_t)pc_page_size();
	if (with_bits) {
		r->bits = pc_bitmap_new(npages);
		ck_assert_ptr_nonnull(r->bits);
	}
	return r;
}

START_TEST(write_file_takes_quality_and_runs_from_residency)
{
	static const struct pc_run runs_a[] = { { 3, 2 }, { 9, 1 } };
	static const struct pc_run all[] = { { 0, 16 } };
	static const struct expect_file ex[] = {
		{ "a", PC_QUALITY_EXACT, runs_a, 2 },
		{ "hidden", PC_QUALITY_UNKNOWN, NULL, 0 },
		{ "count-none", PC_QUALITY_EXACT, NULL, 0 },
		{ "count-all", PC_QUALITY_EXACT, all, 1 },
	};
	struct pc_snapshot_info info = test_info();
	struct pc_snapshot_file m = meta(8192 * 1024, PC_QUALITY_EXACT);
	struct pc_residency *a = fake_residency(16, PC_QUALITY_EXACT, 1);
	struct pc_residency *hidden = fake_residency(16, PC_QUALITY_UNKNOWN, 1);
	struct pc_residency *none = fake_residency(16, PC_QUALITY_EXACT, 0);
	struct pc_residency *full = fake_residency(16, PC_QUALITY_EXACT, 0);
	struct pc_residency *mixed = fake_residency(16, PC_QUALITY_EXACT, 0);
	struct pc_snapshot_writer *w;
	int fd = memfd();

	pc_bitmap_set_range(a->bits, 3, 2);
	pc_bitmap_set(a->bits, 9);
	a->resident = 3;
	/* an unknown answer is never written as resident, whatever it holds */
	pc_bitmap_set_range(hidden->bits, 0, 16);
	hidden->resident = 16;
	full->resident = 16;
	mixed->resident = 5; /* count only, neither none nor all: no runs to give */
	ck_assert_int_eq(pc_snapshot_writer_new(fd, &info, &w), 0);
	ck_assert_int_eq(pc_snapshot_write_file(w, "a", &m, a), 0);
	ck_assert_int_eq(pc_snapshot_write_file(w, "hidden", &m, hidden), 0);
	ck_assert_int_eq(pc_snapshot_write_file(w, "count-none", &m, none), 0);
	ck_assert_int_eq(pc_snapshot_write_file(w, "count-all", &m, full), 0);
	ck_assert_int_eq(pc_snapshot_write_file(w, "count-mixed", &m, mixed), -ENODATA);
	ck_assert_int_eq(pc_snapshot_writer_finish(w), 0); /* that error was not fatal */
	pc_snapshot_writer_free(w);
	ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
	check_files(fd, ex, PC_ARRAY_SIZE(ex));
	close(fd);
	pc_residency_free(a);
	pc_residency_free(hidden);
	pc_residency_free(none);
	pc_residency_free(full);
	pc_residency_free(mixed);
}
END_TEST

START_TEST(write_file_refuses_a_writer_of_another_page_size)
{
	struct pc_snapshot_info info = test_info();
	struct pc_snapshot_file m = meta(16 * 4096, PC_QUALITY_EXACT);
	struct pc_residency *r = fake_residency(16, PC_QUALITY_EXACT, 1);
	struct pc_snapshot_writer *w;
	int fd = memfd();

	/* pc_residency() counts this machine's pages, the writer another unit */
	info.page_size = (uint32_t)pc_page_size() / 4;
	pc_bitmap_set(r->bits, 3);
	r->resident = 1;
	ck_assert_int_eq(pc_snapshot_writer_new(fd, &info, &w), 0);
	ck_assert_int_eq(pc_snapshot_write_file(w, "a", &m, r), -EINVAL);
	ck_assert_int_eq(pc_snapshot_writer_finish(w), 0); /* an argument error: not sticky */
	pc_snapshot_writer_free(w);
	close(fd);
	pc_residency_free(r);
}
END_TEST

START_TEST(writer_refuses_bad_input)
{
	static const struct pc_run unsorted[] = { { 10, 2 }, { 11, 1 } };
	static const struct pc_run empty_run[] = { { 10, 0 } };
	static const struct pc_run overflow[] = { { UINT64_MAX - 1, 2 } };
	static const struct pc_run one[] = { { 1, 1 } };
	struct pc_snapshot_info info = test_info();
	struct pc_snapshot_file m = meta(0, PC_QUALITY_EXACT);
	struct pc_snapshot_file unknown = meta(0, PC_QUALITY_UNKNOWN);
	struct pc_snapshot_file bad_quality = meta(0, 7);
	struct pc_snapshot_writer *w = NULL;
	char *long_path = malloc(PC_SNAPSHOT_PATH_MAX + 2);
	struct scan s;
	int fd = memfd();

	ck_assert_ptr_nonnull(long_path);
	memset(long_path, 'x', PC_SNAPSHOT_PATH_MAX + 1);
	long_path[PC_SNAPSHOT_PATH_MAX + 1] = '\0';
	info.root = "relative/root";
	ck_assert_int_eq(pc_snapshot_writer_new(fd, &info, &w), -EINVAL);
	ck_assert_ptr_null(w);
	info = test_info();
	info.page_size = 3000;
	ck_assert_int_eq(pc_snapshot_writer_new(fd, &info, &w), -EINVAL);
	info = test_info();
	info.size = 1; /* shorter than the size field */
	ck_assert_int_eq(pc_snapshot_writer_new(fd, &info, &w), -EINVAL);
	ck_assert_int_eq(pc_snapshot_writer_new(-1, NULL, &w), -EINVAL);
	info = test_info();
	ck_assert_int_eq(pc_snapshot_writer_new(fd, &info, &w), 0);
	ck_assert_int_eq(pc_snapshot_write_runs(w, "/etc/shadow", &m, one, 1), -EINVAL);
	ck_assert_int_eq(pc_snapshot_write_runs(w, "a/../../b", &m, one, 1), -EINVAL);
	ck_assert_int_eq(pc_snapshot_write_runs(w, "", &m, one, 1), -EINVAL);
	ck_assert_int_eq(pc_snapshot_write_runs(w, long_path, &m, one, 1), -ENAMETOOLONG);
	ck_assert_int_eq(pc_snapshot_write_runs(w, "a", &m, unsorted, 2), -EINVAL);
	ck_assert_int_eq(pc_snapshot_write_runs(w, "a", &m, empty_run, 1), -EINVAL);
	ck_assert_int_eq(pc_snapshot_write_runs(w, "a", &m, overflow, 1), -EINVAL);
	ck_assert_int_eq(pc_snapshot_write_runs(w, "a", &unknown, one, 1), -EINVAL);
	ck_assert_int_eq(pc_snapshot_write_runs(w, "a", &bad_quality, NULL, 0), -EINVAL);
	/* none of that reached the stream: it is still a valid, empty snapshot */
	ck_assert_int_eq(pc_snapshot_writer_finish(w), 0);
	pc_snapshot_writer_free(w);
	ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
	ck_assert_int_eq(scan_fd(fd, &s), 0);
	ck_assert_uint_eq(s.files, 0);
	free(long_path);
	close(fd);
}
END_TEST

/* ---- streaming a file of more than a million runs through a pipe ----------- */

#define HUGE_RUNS 1100000

struct huge_writer {
	int fd;
	int ret;
	int done;
};

static void *write_huge(void *arg)
{
	struct huge_writer *hw = arg;
	struct pc_snapshot_info info = test_info();
	struct pc_snapshot_file m = meta(8192 * 1024, PC_QUALITY_EXACT);
	/* every other page resident, runs of 1..3 pages: 1 bit per page */
	struct pc_residency *r = fake_residency(HUGE_RUNS * 5ULL, PC_QUALITY_EXACT, 1);
	struct pc_snapshot_writer *w;
	int ret;

	for (uint64_t i = 0; i < HUGE_RUNS; i++)
		pc_bitmap_set_range(r->bits, i * 5, 1 + i % 3);
	r->resident = pc_bitmap_count(r->bits, r->npages);
	ret = pc_snapshot_writer_new(hw->fd, &info, &w);
	if (ret == 0) {
		ret = pc_snapshot_write_file(w, "huge", &m, r);
		if (ret == 0)
			ret = pc_snapshot_write_runs(w, "after", &m, NULL, 0);
		if (ret == 0)
			ret = pc_snapshot_writer_finish(w);
		pc_snapshot_writer_free(w);
	}
	pc_residency_free(r);
	close(hw->fd);
	hw->ret = ret;
	__atomic_store_n(&hw->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

START_TEST(million_runs_stream_through_a_pipe)
{
	struct huge_writer hw = { 0 };
	struct pc_snapshot_reader *rd;
	const struct pc_snapshot_file *f;
	struct pc_run run;
	pthread_t t;
	uint64_t n = 0;
	int pipefd[2], ret;

	ck_assert_int_eq(pipe2(pipefd, O_CLOEXEC), 0);
	hw.fd = pipefd[1];
	ck_assert_int_eq(pthread_create(&t, NULL, write_huge, &hw), 0);
	ck_assert_int_eq(pc_snapshot_reader_new(pipefd[0], &rd), 0);
	ck_assert_int_eq(pc_snapshot_next_file(rd, &f), 1);
	ck_assert_str_eq(f->path, "huge");
	ck_assert_uint_eq(f->nruns, HUGE_RUNS);
	while ((ret = pc_snapshot_next_run(rd, &run)) > 0) {
		if (n == 0) {
			/* the first run arrives while the writer is still writing:
			 * neither side holds the whole map (a pipe holds 64 KiB) */
			ck_assert_int_eq(__atomic_load_n(&hw.done, __ATOMIC_ACQUIRE), 0);
		}
		/* one assertion at the end: Check's are slow by the million */
		if (run.page != n * 5 || run.npages != 1 + n % 3)
			break;
		n++;
	}
	ck_assert_int_eq(ret, 0);
	ck_assert_msg(n == HUGE_RUNS, "run %llu: page %llu, %llu pages", (unsigned long long)n,
		      (unsigned long long)run.page, (unsigned long long)run.npages);
	ck_assert_int_eq(pc_snapshot_next_file(rd, &f), 1);
	ck_assert_str_eq(f->path, "after");
	ck_assert_int_eq(pc_snapshot_next_file(rd, &f), 0);
	pthread_join(t, NULL);
	ck_assert_int_eq(hw.ret, 0);
	pc_snapshot_reader_free(rd);
	close(pipefd[0]);
}
END_TEST

START_TEST(unread_runs_are_skipped_and_checked)
{
	size_t len;
	uint8_t *bytes = small_snapshot(&len);
	struct pc_snapshot_reader *rd;
	const struct pc_snapshot_file *f;
	struct pc_run run;
	int fd = memfd_with(bytes, len);

	ck_assert_int_eq(pc_snapshot_reader_new(fd, &rd), 0);
	ck_assert_int_eq(pc_snapshot_next_file(rd, &f), 1);
	ck_assert_int_eq(pc_snapshot_next_run(rd, &run), 1); /* one of four */
	ck_assert_int_eq(pc_snapshot_next_file(rd, &f), 1);
	ck_assert_str_eq(f->path, "db/hidden");
	ck_assert_int_eq(f->quality, PC_QUALITY_UNKNOWN);
	ck_assert_int_eq(pc_snapshot_next_run(rd, &run), 0);
	ck_assert_int_eq(pc_snapshot_next_file(rd, &f), 1);
	ck_assert_str_eq(f->path, "db/b");
	ck_assert_int_eq(pc_snapshot_next_file(rd, &f), 0);
	pc_snapshot_reader_free(rd);
	close(fd);
	free(bytes);
}
END_TEST

/* ---- truncation and corruption ------------------------------------------------ */

START_TEST(every_truncation_point_is_detected)
{
	size_t len;
	uint8_t *bytes = small_snapshot(&len);
	struct scan s;

	ck_assert_int_eq(scan_bytes(bytes, len, &s), 0);
	ck_assert_uint_eq(s.files, 3);
	ck_assert_uint_eq(s.runs, PC_ARRAY_SIZE(small_runs) + 1);
	for (size_t cut = 0; cut < len; cut++) {
		int ret = scan_bytes(bytes, cut, &s);

		ck_assert_msg(ret == -EBADMSG, "cut at %zu of %zu: %d (%s)", cut, len, ret, s.msg);
		ck_assert_msg(s.offset <= cut, "cut at %zu: error offset %llu (%s)", cut,
			      (unsigned long long)s.offset, s.msg);
	}
	free(bytes);
}
END_TEST

START_TEST(truncation_at_record_boundaries_of_a_long_file)
{
	/* many runs span several records: cutting between two of them (the
	 * stream then ends cleanly at a record boundary) is still detected */
	struct pc_snapshot_info info = test_info();
	struct pc_snapshot_file m = meta(0, PC_QUALITY_EXACT);
	struct pc_run *runs = calloc(100000, sizeof(*runs));
	struct pc_snapshot_writer *w;
	size_t len, pos = PC_SNAP_PREAMBLE_LEN;
	int fd = memfd(), records = 0;
	uint8_t *bytes;
	struct scan s;

	ck_assert_ptr_nonnull(runs);
	for (size_t i = 0; i < 100000; i++)
		runs[i] = (struct pc_run){ i * 1000, 1 + i % 700 };
	ck_assert_int_eq(pc_snapshot_writer_new(fd, &info, &w), 0);
	ck_assert_int_eq(pc_snapshot_write_runs(w, "big", &m, runs, 100000), 0);
	ck_assert_int_eq(pc_snapshot_write_runs(w, "small", &m, runs, 3), 0);
	ck_assert_int_eq(pc_snapshot_writer_finish(w), 0);
	pc_snapshot_writer_free(w);
	bytes = slurp(fd, &len);
	while (pos < len) {
		ck_assert_int_eq(scan_bytes(bytes, pos, &s), -EBADMSG);
		ck_assert_uint_le(s.offset, pos);
		pos += PC_SNAP_REC_HEAD + pc_get_le32(bytes + pos + 1) + PC_SNAP_REC_TAIL;
		records++;
	}
	ck_assert_uint_eq(pos, len);
	ck_assert_int_ge(records, 6); /* H, F, some R, F, E */
	ck_assert_int_eq(scan_bytes(bytes, len, &s), 0);
	ck_assert_uint_eq(s.runs, 100003);
	free(runs);
	free(bytes);
	close(fd);
}
END_TEST

START_TEST(every_single_bit_flip_is_detected)
{
	size_t len;
	uint8_t *bytes = small_snapshot(&len);
	struct scan s;

	for (size_t i = 0; i < len; i++) {
		for (int bit = 0; bit < 8; bit++) {
			int ret;

			bytes[i] ^= (uint8_t)(1u << bit);
			ret = scan_bytes(bytes, len, &s);
			bytes[i] ^= (uint8_t)(1u << bit);
			if (i == PC_SNAP_MAGIC_LEN || i == PC_SNAP_MAGIC_LEN + 1) {
				ck_assert_int_eq(ret, -EPROTONOSUPPORT);
				continue;
			}
			ck_assert_msg(ret == -EBADMSG, "flip of bit %d at byte %zu: %d", bit, i, ret);
			ck_assert_uint_le(s.offset, len);
		}
	}
	free(bytes);
}
END_TEST

START_TEST(random_corruption_is_detected)
{
	size_t len;
	uint8_t *bytes = small_snapshot(&len);
	uint8_t *copy = malloc(len);
	unsigned int seed = 12345;
	struct scan s;

	ck_assert_ptr_nonnull(copy);
	for (int round = 0; round < 2000; round++) {
		int flips = 1 + rand_r(&seed) % 8;

		memcpy(copy, bytes, len);
		for (int k = 0; k < flips; k++)
			copy[(size_t)rand_r(&seed) % len] ^= (uint8_t)(1 + rand_r(&seed) % 255);
		if (!memcmp(copy, bytes, len))
			continue;
		ck_assert_int_lt(scan_bytes(copy, len, &s), 0);
		ck_assert_uint_le(s.offset, len);
	}
	free(copy);
	free(bytes);
}
END_TEST

/* ---- hostile input, written record by record with valid checksums ------------ */

struct forge {
	uint8_t buf[4096];
	size_t len;
	size_t rec;
};

static void forge_preamble(struct forge *f)
{
	memcpy(f->buf, PC_SNAP_MAGIC, PC_SNAP_MAGIC_LEN);
	f->buf[PC_SNAP_MAGIC_LEN] = PC_SNAP_VERSION;
	f->buf[PC_SNAP_MAGIC_LEN + 1] = 0;
	f->len = PC_SNAP_PREAMBLE_LEN;
}

static void forge_begin(struct forge *f, uint8_t type)
{
	f->rec = f->len;
	f->buf[f->len] = type;
	f->len += PC_SNAP_REC_HEAD;
}

static void forge_varint(struct forge *f, uint64_t v)
{
	f->len += pc_varint_put(f->buf + f->len, v);
}

static void forge_bytes(struct forge *f, const void *p, size_t n)
{
	memcpy(f->buf + f->len, p, n);
	f->len += n;
}

static void forge_end(struct forge *f)
{
	pc_put_le32(f->buf + f->rec + 1, (uint32_t)(f->len - f->rec - PC_SNAP_REC_HEAD));
	pc_put_le32(f->buf + f->len, pc_crc32c(0, f->buf + f->rec, f->len - f->rec));
	f->len += PC_SNAP_REC_TAIL;
}

static void forge_header(struct forge *f, const char *root)
{
	forge_preamble(f);
	forge_begin(f, PC_SNAP_REC_HEADER);
	forge_varint(f, 4096);
	forge_varint(f, 0);
	forge_varint(f, 0);
	forge_varint(f, 0);
	forge_varint(f, 0);
	forge_varint(f, strlen(root));
	forge_bytes(f, root, strlen(root));
	forge_varint(f, 4);
	forge_bytes(f, "test", 4);
	forge_end(f);
}

/* A file record's fields after the path. */
static void forge_file_fields(struct forge *f, uint64_t quality, uint64_t nruns, uint64_t npages)
{
	forge_varint(f, 100);  /* size */
	forge_varint(f, 0);    /* mtime */
	forge_varint(f, 1);    /* dev */
	forge_varint(f, 2);    /* ino */
	forge_varint(f, quality);
	forge_varint(f, nruns);
	forge_varint(f, npages);
}

static void forge_simple_file(struct forge *f, const char *path)
{
	forge_begin(f, PC_SNAP_REC_FILE);
	forge_varint(f, 0);
	forge_varint(f, strlen(path));
	forge_bytes(f, path, strlen(path));
	forge_file_fields(f, PC_QUALITY_EXACT, 0, 0);
	forge_end(f);
}

static void forge_end_record(struct forge *f, uint64_t files, uint64_t runs, uint64_t pages)
{
	size_t at = f->len;

	forge_begin(f, PC_SNAP_REC_END);
	forge_varint(f, files);
	forge_varint(f, runs);
	forge_varint(f, pages);
	forge_varint(f, at);
	forge_end(f);
}

/* The forged stream is refused with -EBADMSG and a message containing what. */
static void expect_refused(struct forge *f, const char *what)
{
	struct scan s;
	int ret = scan_bytes(f->buf, f->len, &s);

	ck_assert_msg(ret == -EBADMSG, "%s: got %d", what, ret);
	ck_assert_msg(strstr(s.msg, what), "expected \"%s\", got \"%s\" at %llu", what, s.msg,
		      (unsigned long long)s.offset);
	ck_assert_uint_le(s.offset, f->len);
}

START_TEST(forged_valid_stream_is_accepted)
{
	struct forge f;
	struct scan s;

	/* the forge itself is right: the same helpers make a valid stream */
	forge_header(&f, "/r");
	forge_simple_file(&f, "x");
	forge_end_record(&f, 1, 0, 0);
	ck_assert_int_eq(scan_bytes(f.buf, f.len, &s), 0);
	ck_assert_uint_eq(s.files, 1);
}
END_TEST

START_TEST(hostile_lengths_are_refused)
{
	struct forge f;

	/* a record length of 4 GiB: refused from the 5-byte record header */
	forge_header(&f, "/r");
	f.buf[f.len] = PC_SNAP_REC_FILE;
	pc_put_le32(f.buf + f.len + 1, UINT32_MAX);
	f.len += PC_SNAP_REC_HEAD;
	expect_refused(&f, "exceeds the limit");

	/* a path length of 2^62, and one longer than the record */
	forge_header(&f, "/r");
	forge_begin(&f, PC_SNAP_REC_FILE);
	forge_varint(&f, 0);
	forge_varint(&f, UINT64_C(1) << 62);
	forge_end(&f);
	expect_refused(&f, "path: too long");
	forge_header(&f, "/r");
	forge_begin(&f, PC_SNAP_REC_FILE);
	forge_varint(&f, 0);
	forge_varint(&f, 50);
	forge_bytes(&f, "short", 5);
	forge_end(&f);
	expect_refused(&f, "path: length runs past the end of the record");

	/* a varint of eleven bytes */
	forge_header(&f, "/r");
	forge_begin(&f, PC_SNAP_REC_FILE);
	for (int i = 0; i < 11; i++)
		f.buf[f.len++] = 0xff;
	forge_end(&f);
	expect_refused(&f, "overflows 64 bits");

	/* a shared prefix longer than the previous path */
	forge_header(&f, "/r");
	forge_simple_file(&f, "ab");
	forge_begin(&f, PC_SNAP_REC_FILE);
	forge_varint(&f, 3);
	forge_varint(&f, 1);
	forge_bytes(&f, "c", 1);
	forge_file_fields(&f, PC_QUALITY_EXACT, 0, 0);
	forge_end(&f);
	expect_refused(&f, "longer than the previous path");

	/* a run count of 2^50 with no runs behind it: nothing is allocated for
	 * it, the next record gives it away */
	forge_header(&f, "/r");
	forge_begin(&f, PC_SNAP_REC_FILE);
	forge_varint(&f, 0);
	forge_varint(&f, 1);
	forge_bytes(&f, "x", 1);
	forge_file_fields(&f, PC_QUALITY_EXACT, UINT64_C(1) << 40, UINT64_C(1) << 50);
	forge_end(&f);
	forge_end_record(&f, 1, 0, 0);
	expect_refused(&f, "runs of x were due");

	/* a run past the largest file offset */
	forge_header(&f, "/r");
	forge_begin(&f, PC_SNAP_REC_FILE);
	forge_varint(&f, 0);
	forge_varint(&f, 1);
	forge_bytes(&f, "x", 1);
	forge_file_fields(&f, PC_QUALITY_EXACT, 1, 1);
	forge_varint(&f, UINT64_MAX - 1);
	forge_varint(&f, 0);
	forge_end(&f);
	expect_refused(&f, "past the largest file offset");
}
END_TEST

START_TEST(malformed_records_are_refused)
{
	struct forge f;
	struct scan s;

	/* a NUL inside a path */
	forge_header(&f, "/r");
	forge_begin(&f, PC_SNAP_REC_FILE);
	forge_varint(&f, 0);
	forge_varint(&f, 3);
	forge_bytes(&f, "a\0b", 3);
	forge_file_fields(&f, PC_QUALITY_EXACT, 0, 0);
	forge_end(&f);
	expect_refused(&f, "contains a NUL byte");

	/* an empty path */
	forge_header(&f, "/r");
	forge_simple_file(&f, "");
	expect_refused(&f, "empty path");

	/* a relative root */
	forge_header(&f, "r");
	expect_refused(&f, "root is not absolute");

	/* an unknown file with runs */
	forge_header(&f, "/r");
	forge_begin(&f, PC_SNAP_REC_FILE);
	forge_varint(&f, 0);
	forge_varint(&f, 1);
	forge_bytes(&f, "x", 1);
	forge_file_fields(&f, PC_QUALITY_UNKNOWN, 1, 1);
	forge_varint(&f, 0);
	forge_varint(&f, 0);
	forge_end(&f);
	expect_refused(&f, "inconsistent counts");

	/* runs that add up to more pages than declared */
	forge_header(&f, "/r");
	forge_begin(&f, PC_SNAP_REC_FILE);
	forge_varint(&f, 0);
	forge_varint(&f, 1);
	forge_bytes(&f, "x", 1);
	forge_file_fields(&f, PC_QUALITY_EXACT, 1, 1);
	forge_varint(&f, 0);
	forge_varint(&f, 4);
	forge_end(&f);
	expect_refused(&f, "more pages than the file record says");

	/* trailing bytes after a file's runs */
	forge_header(&f, "/r");
	forge_begin(&f, PC_SNAP_REC_FILE);
	forge_varint(&f, 0);
	forge_varint(&f, 1);
	forge_bytes(&f, "x", 1);
	forge_file_fields(&f, PC_QUALITY_EXACT, 1, 1);
	forge_varint(&f, 0);
	forge_varint(&f, 0);
	forge_varint(&f, 9);
	forge_end(&f);
	forge_end_record(&f, 1, 1, 1);
	expect_refused(&f, "trailing data");

	/* a runs record outside a file; a second header; an unknown type */
	forge_header(&f, "/r");
	forge_begin(&f, PC_SNAP_REC_RUNS);
	forge_varint(&f, 0);
	forge_varint(&f, 0);
	forge_end(&f);
	expect_refused(&f, "a runs record where a file was due");
	forge_header(&f, "/r");
	forge_begin(&f, PC_SNAP_REC_HEADER);
	forge_end(&f);
	expect_refused(&f, "a header record where a file was due");
	forge_header(&f, "/r");
	forge_begin(&f, 'Z');
	forge_end(&f);
	expect_refused(&f, "unknown record type");

	/* totals that do not match, and data after the end */
	forge_header(&f, "/r");
	forge_simple_file(&f, "x");
	forge_end_record(&f, 2, 0, 0);
	expect_refused(&f, "totals do not match");
	forge_header(&f, "/r");
	forge_simple_file(&f, "x");
	forge_end_record(&f, 1, 0, 0);
	f.buf[f.len++] = 0;
	expect_refused(&f, "data after the end record");

	/* not a snapshot at all; an empty input; a newer version */
	memset(&f, 0, sizeof(f));
	memcpy(f.buf, "\x1f\x8b\x08\x00 gzip, maybe happycache", 28);
	f.len = 28;
	expect_refused(&f, "bad magic");
	ck_assert_int_eq(scan_bytes(f.buf, 0, &s), -EBADMSG);
	ck_assert_uint_eq(s.offset, 0);
	forge_header(&f, "/r");
	f.buf[PC_SNAP_MAGIC_LEN] = 2;
	ck_assert_int_eq(scan_bytes(f.buf, f.len, &s), -EPROTONOSUPPORT);
	ck_assert_ptr_nonnull(strstr(s.msg, "version 2"));
}
END_TEST

/* ---- the relative path check -------------------------------------------------- */

START_TEST(path_check_refuses_escapes)
{
	static const char *const ok[] = { "a", "a/b", "..a", "a..", "a/..b/c", "./a", "a/./b",
					  "a//b", "...", "dir/" };
	static const char *const bad[] = { "", "/", "/a", "..", "../a", "a/..", "a/../b",
					   "a/b/../../..", "./.." };
	char *long_path = malloc(PC_SNAPSHOT_PATH_MAX + 2);

	ck_assert_ptr_nonnull(long_path);
	for (size_t i = 0; i < PC_ARRAY_SIZE(ok); i++)
		ck_assert_msg(pc_snapshot_path_check(ok[i]) == 0, "%s refused", ok[i]);
	for (size_t i = 0; i < PC_ARRAY_SIZE(bad); i++)
		ck_assert_msg(pc_snapshot_path_check(bad[i]) == -EINVAL, "%s accepted", bad[i]);
	ck_assert_int_eq(pc_snapshot_path_check(NULL), -EINVAL);
	memset(long_path, 'a', PC_SNAPSHOT_PATH_MAX);
	long_path[PC_SNAPSHOT_PATH_MAX] = '\0';
	ck_assert_int_eq(pc_snapshot_path_check(long_path), 0);
	long_path[PC_SNAPSHOT_PATH_MAX] = 'a';
	long_path[PC_SNAPSHOT_PATH_MAX + 1] = '\0';
	ck_assert_int_eq(pc_snapshot_path_check(long_path), -ENAMETOOLONG);
	free(long_path);
}
END_TEST

/* ---- the atomic writer -------------------------------------------------------- */

static char *make_tmpdir(void)
{
	const char *base = getenv("TMPDIR");
	char *dir = malloc(4096);

	ck_assert_ptr_nonnull(dir);
	snprintf(dir, 4096, "%s/pc-snapshot-XXXXXX", base && *base ? base : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	return dir;
}

/* Names in dir other than . and .., joined by '/' (so "" means empty). */
static void list_dir(const char *dir, char *out, size_t size)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	ck_assert_ptr_nonnull(d);
	out[0] = '\0';
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		strncat(out, e->d_name, size - strlen(out) - 1);
		strncat(out, "/", size - strlen(out) - 1);
	}
	closedir(d);
}

static void remove_tmpdir(char *dir)
{
	char names[1024], path[4200], *name, *save = NULL;

	list_dir(dir, names, sizeof(names));
	for (name = strtok_r(names, "/", &save); name; name = strtok_r(NULL, "/", &save)) {
		snprintf(path, sizeof(path), "%s/%s", dir, name);
		unlink(path);
	}
	rmdir(dir);
	free(dir);
}

START_TEST(atomic_writer_replaces_only_when_finished)
{
	struct pc_snapshot_info info = test_info();
	struct pc_snapshot_file m = meta(0, PC_QUALITY_EXACT);
	struct pc_snapshot_writer *w;
	char *dir = make_tmpdir();
	char names[1024], target[4200];
	struct stat st;
	struct scan s;
	int dfd, fd;

	snprintf(target, sizeof(target), "%s/snap", dir);
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(dfd, 0);
	/* freed unfinished: nothing appears */
	ck_assert_int_eq(pc_snapshot_writer_new_at(dfd, "snap", 0644, &info, &w), 0);
	ck_assert_int_eq(pc_snapshot_write_runs(w, "f", &m, small_runs, 2), 0);
	pc_snapshot_writer_free(w);
	list_dir(dir, names, sizeof(names));
	ck_assert_str_eq(names, "");
	/* an old snapshot stays as it was until the new one is finished */
	fd = open(target, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	ck_assert_int_eq(write(fd, "old", 3), 3);
	close(fd);
	ck_assert_int_eq(pc_snapshot_writer_new_at(AT_FDCWD, target, 0640, &info, &w), 0);
	ck_assert_int_eq(pc_snapshot_write_runs(w, "f", &m, small_runs, 2), 0);
	ck_assert_int_eq(stat(target, &st), 0);
	ck_assert_int_eq(st.st_size, 3);
	list_dir(dir, names, sizeof(names));
	ck_assert_str_eq(names, "snap/");
	ck_assert_int_eq(pc_snapshot_writer_finish(w), 0);
	pc_snapshot_writer_free(w);
	list_dir(dir, names, sizeof(names));
	ck_assert_str_eq(names, "snap/");
	fd = open(target, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(scan_fd(fd, &s), 0);
	ck_assert_uint_eq(s.files, 1);
	ck_assert_uint_eq(s.runs, 2);
	close(fd);
	/* bad names */
	ck_assert_int_eq(pc_snapshot_writer_new_at(dfd, "sub/", 0644, &info, &w), -EINVAL);
	ck_assert_int_eq(pc_snapshot_writer_new_at(dfd, "..", 0644, &info, &w), -EINVAL);
	ck_assert_int_eq(pc_snapshot_writer_new_at(dfd, "missing/snap", 0644, &info, &w),
			 -ENOENT);
	/* a name of NAME_MAX bytes (its temporary file takes another name);
	 * one more is too long */
	{
		char longname[NAME_MAX + 2];

		memset(longname, 's', NAME_MAX);
		longname[NAME_MAX] = '\0';
		ck_assert_int_eq(pc_snapshot_writer_new_at(dfd, longname, 0644, &info, &w), 0);
		ck_assert_int_eq(pc_snapshot_write_runs(w, "f", &m, small_runs, 2), 0);
		ck_assert_int_eq(pc_snapshot_writer_finish(w), 0);
		pc_snapshot_writer_free(w);
		ck_assert_int_eq(fstatat(dfd, longname, &st, 0), 0);
		ck_assert_int_eq(unlinkat(dfd, longname, 0), 0);
		longname[NAME_MAX] = 's';
		longname[NAME_MAX + 1] = '\0';
		ck_assert_int_eq(pc_snapshot_writer_new_at(dfd, longname, 0644, &info, &w),
				 -ENAMETOOLONG);
	}
	close(dfd);
	remove_tmpdir(dir);
}
END_TEST

/* A device node, FIFO, directory or symlink at the target is never
 * replaced, whether it is there at the start or appears before the end. */
START_TEST(atomic_writer_replaces_only_a_regular_file)
{
	struct pc_snapshot_info info = test_info();
	struct pc_snapshot_file m = meta(0, PC_QUALITY_EXACT);
	struct pc_snapshot_writer *w;
	char *dir = make_tmpdir();
	char names[1024];
	struct stat st;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), n;

	ck_assert_int_ge(dfd, 0);
	ck_assert_int_eq(mkfifoat(dfd, "fifo", 0644), 0);
	ck_assert_int_eq(mkdirat(dfd, "dir", 0755), 0);
	ck_assert_int_eq(symlinkat("missing", dfd, "link"), 0);
	ck_assert_int_eq(pc_snapshot_writer_new_at(dfd, "fifo", 0644, &info, &w), -EEXIST);
	ck_assert_int_eq(pc_snapshot_writer_new_at(dfd, "dir", 0644, &info, &w), -EEXIST);
	ck_assert_int_eq(pc_snapshot_writer_new_at(dfd, "link", 0644, &info, &w), -EEXIST);
	/* a FIFO that appears while the snapshot is written stays */
	ck_assert_int_eq(pc_snapshot_writer_new_at(dfd, "late", 0644, &info, &w), 0);
	ck_assert_int_eq(pc_snapshot_write_runs(w, "f", &m, small_runs, 2), 0);
	ck_assert_int_eq(mkfifoat(dfd, "late", 0644), 0);
	ck_assert_int_eq(pc_snapshot_writer_finish(w), -EEXIST);
	pc_snapshot_writer_free(w);
	ck_assert_int_eq(fstatat(dfd, "late", &st, AT_SYMLINK_NOFOLLOW), 0);
	ck_assert(S_ISFIFO(st.st_mode));
	ck_assert_int_eq(fstatat(dfd, "link", &st, AT_SYMLINK_NOFOLLOW), 0);
	ck_assert(S_ISLNK(st.st_mode));
	/* nothing else: no temporary file left */
	list_dir(dir, names, sizeof(names));
	n = 0;
	for (const char *p = names; *p; p++)
		n += *p == '/';
	ck_assert_msg(n == 4, "%s", names);
	ck_assert_int_eq(unlinkat(dfd, "dir", AT_REMOVEDIR), 0);
	close(dfd);
	remove_tmpdir(dir);
}
END_TEST

/* pc_outfile_new_at(), which the writer and dump share: the caller's own
 * file keeps its mode with PC_OUTFILE_KEEP_MODE (not without), nothing is
 * in place before the commit, and a second commit is refused. */
START_TEST(outfile_keeps_the_callers_mode_when_asked)
{
	char *dir = make_tmpdir();
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct pc_outfile *f;
	struct stat st;
	char byte;

	ck_assert_int_ge(dfd, 0);
	for (int keep = 0; keep < 2; keep++) {
		int old = openat(dfd, "out", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

		ck_assert_int_ge(old, 0);
		ck_assert_int_eq(fchmod(old, 0640), 0);
		close(old);
		ck_assert_int_eq(pc_outfile_new_at(dfd, "out", 0600,
						   keep ? PC_OUTFILE_KEEP_MODE : 0, &f), 0);
		ck_assert_int_eq(write(pc_outfile_fd(f), "x", 1), 1);
		ck_assert_int_eq(pc_outfile_in_place(f), 0);
		ck_assert_int_eq(fstatat(dfd, "out", &st, 0), 0);
		ck_assert_int_eq(st.st_size, 0); /* the old one until the commit */
		ck_assert_int_eq(pc_outfile_commit(f), 0);
		ck_assert_int_eq(pc_outfile_in_place(f), 1);
		ck_assert_int_eq(pc_outfile_commit(f), -EINVAL);
		pc_outfile_free(f);
		ck_assert_int_eq(fstatat(dfd, "out", &st, 0), 0);
		ck_assert_int_eq(st.st_size, 1);
		ck_assert_uint_eq(st.st_mode & 0777, keep ? 0640 : 0600);
		old = openat(dfd, "out", O_RDONLY | O_CLOEXEC);
		ck_assert_int_eq(read(old, &byte, 1), 1);
		ck_assert_int_eq(byte, 'x');
		close(old);
	}
	ck_assert_int_eq(pc_outfile_new_at(dfd, "..", 0600, 0, &f), -EINVAL);
	ck_assert_int_eq(pc_outfile_new_at(dfd, "out", 0600, 1u << 9, &f), -EINVAL);
	ck_assert_int_eq(unlinkat(dfd, "out", 0), 0);
	close(dfd);
	remove_tmpdir(dir);
}
END_TEST

/* In a child with a 2 KiB file size limit: the writer fails mid-way, and
 * neither its temporary file nor a target appears. */
START_TEST(atomic_writer_leaves_nothing_on_failure)
{
	char *dir = make_tmpdir();
	char names[1024];
	pid_t pid;
	int status;

	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct rlimit lim = { 2048, 2048 };
		struct pc_snapshot_info info = test_info();
		struct pc_snapshot_file m = meta(0, PC_QUALITY_EXACT);
		struct pc_run runs[600];
		struct pc_snapshot_writer *w;
		int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), ret = 0;

		free(dir); /* valgrind checks the child's leaks at _exit */
		signal(SIGXFSZ, SIG_IGN);
		if (dfd < 0 || setrlimit(RLIMIT_FSIZE, &lim) < 0)
			_exit(2);
		for (int i = 0; i < 600; i++)
			runs[i] = (struct pc_run){ (uint64_t)i * 3, 1 };
		if (pc_snapshot_writer_new_at(dfd, "snap", 0644, &info, &w) < 0)
			_exit(3);
		/* records are written out every 64 KiB: enough of them to fail */
		for (int i = 0; i < 200 && ret == 0; i++)
			ret = pc_snapshot_write_runs(w, "f", &m, runs, 600);
		if (ret == 0)
			ret = pc_snapshot_writer_finish(w);
		else if (pc_snapshot_writer_finish(w) != ret)
			_exit(4); /* the first error again */
		pc_snapshot_writer_free(w);
		_exit(ret == -EFBIG ? 0 : 5);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status 0x%x", status);
	list_dir(dir, names, sizeof(names));
	ck_assert_str_eq(names, "");
	remove_tmpdir(dir);
}
END_TEST

/* ---- size: bytes per run on a realistic case ------------------------------- */

START_TEST(encoding_is_compact)
{
	/* a database-like pattern: hot pages in clusters, mostly short runs
	 * and gaps (xorshift, fixed seed); about 2-3 bytes a run */
	struct pc_snapshot_info info = test_info();
	struct pc_snapshot_file m = meta(0, PC_QUALITY_EXACT);
	struct pc_run *runs = calloc(50000, sizeof(*runs));
	uint64_t x = 88172645463325252ULL, page = 0;
	struct pc_snapshot_writer *w;
	size_t len, before;
	uint8_t *bytes;
	int fd = memfd();

	ck_assert_ptr_nonnull(runs);
	for (size_t i = 0; i < 50000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		page += 1 + (x % 64 < 48 ? x % 16 : x % 4096);
		runs[i] = (struct pc_run){ page, 1 + (x >> 20) % (x % 8 ? 4 : 64) };
		page += runs[i].npages;
	}
	ck_assert_int_eq(pc_snapshot_writer_new(fd, &info, &w), 0);
	ck_assert_int_eq(pc_snapshot_writer_finish(w), 0);
	pc_snapshot_writer_free(w);
	free(slurp(fd, &before));
	ck_assert_int_eq(ftruncate(fd, 0), 0);
	ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
	ck_assert_int_eq(pc_snapshot_writer_new(fd, &info, &w), 0);
	ck_assert_int_eq(pc_snapshot_write_runs(w, "base/16384/2619", &m, runs, 50000), 0);
	ck_assert_int_eq(pc_snapshot_writer_finish(w), 0);
	pc_snapshot_writer_free(w);
	bytes = slurp(fd, &len);
	printf("encoding_is_compact: %zu bytes for 50000 runs: %.2f bytes per run\n",
	       len - before, (double)(len - before) / 50000);
	ck_assert_uint_lt(len - before, 50000 * 3);
	free(bytes);
	free(runs);
	close(fd);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("snapshot");
	TCase *codec = tcase_create("codec");
	TCase *rt = tcase_create("round-trip");
	TCase *bad = tcase_create("untrusted");
	TCase *files = tcase_create("files");
	SRunner *sr;
	int failed;

	tcase_add_test(codec, crc32c_check_value);
	tcase_add_test(codec, varints_round_trip_and_reject_bad_encodings);
	tcase_add_test(codec, encoding_is_compact);
	suite_add_tcase(s, codec);
	tcase_add_test(rt, round_trip_synthetic_records);
	tcase_add_test(rt, write_file_takes_quality_and_runs_from_residency);
	tcase_add_test(rt, writer_refuses_bad_input);
	tcase_add_test(rt, write_file_refuses_a_writer_of_another_page_size);
	tcase_add_test(rt, million_runs_stream_through_a_pipe);
	tcase_add_test(rt, unread_runs_are_skipped_and_checked);
	suite_add_tcase(s, rt);
	tcase_add_test(bad, every_truncation_point_is_detected);
	tcase_add_test(bad, truncation_at_record_boundaries_of_a_long_file);
	tcase_add_test(bad, every_single_bit_flip_is_detected);
	tcase_add_test(bad, random_corruption_is_detected);
	tcase_add_test(bad, forged_valid_stream_is_accepted);
	tcase_add_test(bad, hostile_lengths_are_refused);
	tcase_add_test(bad, malformed_records_are_refused);
	tcase_add_test(bad, path_check_refuses_escapes);
	suite_add_tcase(s, bad);
	tcase_add_test(files, atomic_writer_replaces_only_when_finished);
	tcase_add_test(files, atomic_writer_leaves_nothing_on_failure);
	tcase_add_test(files, atomic_writer_replaces_only_a_regular_file);
	tcase_add_test(files, outfile_keeps_the_callers_mode_when_asked);
	suite_add_tcase(s, files);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
