/* SPDX-License-Identifier: MIT */
/*
 * pc_restore(), pc_open_beneath(), pc_memory_budget() on real files in a
 * scratch directory on a real disk, as root (mincore tells root the truth
 * about every file, so what came back is asserted page by page). The
 * snapshot is a source of callbacks the cases fill in (struct tsrc), or
 * the library's own format through pc_snapshot_source_new().
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <pagecache/pagecache.h>

#include "pc-test.h"

#define MAX_FILES 32
#define MAX_RUNS 8
#define MAX_EVENTS 64

/* ---- a source the cases fill in ---- */

struct tfile {
	char path[512];
	struct pc_restore_file rec;
	struct pc_run runs[MAX_RUNS];
	size_t nruns;
};

struct tsrc {
	struct tfile f[MAX_FILES];
	size_t n;
	size_t cur;                /* files handed out */
	size_t run;                /* runs of the current one handed out */
	bool pipe;                 /* no rewind */
	long fail_at;              /* next_file of this index returns -EBADMSG; -1: none */
	unsigned int rewinds;
};

static int t_next_file(void *arg, const struct pc_restore_file **f)
{
	struct tsrc *s = arg;

	if ((long)s->cur == s->fail_at)
		return -EBADMSG;
	if (s->cur == s->n)
		return 0;
	s->f[s->cur].rec.path = s->f[s->cur].path;
	*f = &s->f[s->cur++].rec;
	s->run = 0;
	return 1;
}

static int t_next_run(void *arg, struct pc_run *run)
{
	struct tsrc *s = arg;
	struct tfile *f = &s->f[s->cur - 1];

	if (s->run == f->nruns)
		return 0;
	*run = f->runs[s->run++];
	return 1;
}

static int t_rewind(void *arg)
{
	struct tsrc *s = arg;

	if (s->pipe)
		return -ESPIPE;
	s->cur = s->run = 0;
	s->rewinds++;
	return 0;
}

static struct pc_restore_source t_source(struct tsrc *s)
{
	return (struct pc_restore_source){
		.size = sizeof(struct pc_restore_source), .arg = s, .next_file = t_next_file,
		.next_run = t_next_run, .rewind = t_rewind,
	};
}

/* Record rel (a path beneath the root as the snapshot has it) with the
 * identity of the file at disk (NULL: no identity) and one run. */
static struct tfile *t_add(struct tsrc *s, const char *rel, const char *disk, uint64_t page,
			   uint64_t npages)
{
	struct tfile *f = &s->f[s->n++];
	struct stat st;

	ck_assert_uint_le(s->n, MAX_FILES);
	snprintf(f->path, sizeof(f->path), "%s", rel);
	f->rec = (struct pc_restore_file){ .size = sizeof(f->rec), .quality = PC_QUALITY_EXACT,
					   .npages = npages };
	if (disk) {
		ck_assert_int_eq(stat(disk, &st), 0);
		f->rec.identity = 1;
		f->rec.file_size = (uint64_t)st.st_size;
		f->rec.mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
		f->rec.dev = (uint64_t)st.st_dev;
		f->rec.ino = (uint64_t)st.st_ino;
	}
	f->runs[0] = (struct pc_run){ page, npages };
	f->nruns = npages ? 1 : 0;
	return f;
}

/* ---- events ---- */

struct tev {
	int reason;
	char path[512];
	int error;
};

struct tlog {
	struct tev ev[MAX_EVENTS];
	size_t n;
	void (*hook)(struct tlog *l, const struct pc_restore_event *ev);
	const char *root;          /* for the hooks */
	volatile int cancel;
};

static void on_event(const struct pc_restore_event *ev, void *arg)
{
	struct tlog *l = arg;

	ck_assert_uint_eq(ev->size, sizeof(*ev));
	if (l->n < MAX_EVENTS) {
		l->ev[l->n] = (struct tev){ .reason = ev->reason, .error = ev->error };
		snprintf(l->ev[l->n].path, sizeof(l->ev[l->n].path), "%s", ev->path ? ev->path : "");
		l->n++;
	}
	if (l->hook)
		l->hook(l, ev);
}

static const struct tev *find_event(const struct tlog *l, int reason)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->ev[i].reason == reason)
			return &l->ev[i];
	return NULL;
}

/* ---- files ---- */

static char *root_dir(void)
{
	const char *p = pc_test_path("root");

	mkdir(p, 0755);
	return (char *)p;
}

static int open_root(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	return fd;
}

/* A file of npages pages at root/name, all of it evicted. */
static const char *evicted_file(const char *name, uint64_t npages)
{
	const char *p = pc_test_make_file(name, npages, 0644, -1, -1);

	pc_test_set_pattern(p, NULL, 0);
	return p;
}

static uint64_t resident(const char *path)
{
	unsigned char *vec;
	uint64_t n = pc_test_mincore(path, &vec), got = 0;

	for (uint64_t i = 0; i < n; i++)
		got += vec[i];
	free(vec);
	return got;
}

static int run_restore(int rootfd, struct tsrc *s, struct pc_restore_opts *o,
		       struct tlog *l, struct pc_restore_stats *st)
{
	struct pc_restore_source src = t_source(s);

	o->size = sizeof(*o);
	o->event = on_event;
	o->arg = l;
	if (!o->max_bytes)
		o->max_bytes = UINT64_C(1) << 40; /* the machine's memory is not the case */
	*st = (struct pc_restore_stats){ .size = sizeof(*st) };
	return pc_restore(rootfd, &src, o, st);
}

/* ---- confinement ---- */

START_TEST(dotdot_and_absolute_paths_are_refused)
{
	char *root = root_dir();
	const char *out = evicted_file("outside", 4);
	struct tsrc s = { .fail_at = -1 };
	struct pc_restore_opts o = { .order = PC_RESTORE_ORDER_FILE }; /* events in order */
	struct pc_restore_stats st;
	struct tlog l = { 0 };
	int rootfd = open_root(root);

	t_add(&s, "../outside", out, 0, 4);
	t_add(&s, out, out, 0, 4);                  /* absolute, without root_path */
	ck_assert_int_eq(run_restore(rootfd, &s, &o, &l, &st), 0);
	ck_assert_uint_eq(st.skipped[PC_RESTORE_SKIP_REFUSED], 2);
	ck_assert_uint_eq(st.files_restored, 0);
	ck_assert_uint_eq(resident(out), 0);
	ck_assert_int_eq(l.ev[0].reason, PC_RESTORE_EV_UNSAFE_PATH);
	ck_assert_int_eq(l.ev[1].reason, PC_RESTORE_EV_NOT_BENEATH);
	ck_assert_str_eq(pc_restore_event_name(l.ev[1].reason), "refused: outside the root");
	close(rootfd);
}
END_TEST

START_TEST(absolute_paths_beneath_root_path_are_restored)
{
	char *root = root_dir();
	const char *in = evicted_file("root/in", 8);
	struct tsrc s = { .fail_at = -1 };
	struct pc_restore_opts o = { .root_path = root };
	struct pc_restore_stats st;
	struct tlog l = { 0 };
	int rootfd = open_root(root);

	t_add(&s, in, in, 0, 8);
	ck_assert_int_eq(run_restore(rootfd, &s, &o, &l, &st), 0);
	ck_assert_uint_eq(st.files_restored, 1);
	ck_assert_uint_eq(resident(in), 8);
	o = (struct pc_restore_opts){ .root_path = "relative" };
	ck_assert_int_eq(run_restore(rootfd, &s, &o, &l, &st), -EINVAL);
	close(rootfd);
}
END_TEST

START_TEST(symlinks_out_of_the_root_are_refused)
{
	char *root = root_dir();
	const char *out = evicted_file("outside", 4);
	struct tsrc s = { .fail_at = -1 };
	struct pc_restore_opts o = { 0 };
	struct pc_restore_stats st;
	struct tlog l = { 0 };
	int rootfd = open_root(root);

	ck_assert_int_eq(symlink(out, pc_test_path("root/abs")), 0);
	ck_assert_int_eq(symlink("../outside", pc_test_path("root/rel")), 0);
	t_add(&s, "abs", out, 0, 4);
	t_add(&s, "rel", out, 0, 4);
	ck_assert_int_eq(run_restore(rootfd, &s, &o, &l, &st), 0);
	ck_assert_uint_eq(st.skipped[PC_RESTORE_SKIP_REFUSED], 2);
	ck_assert_uint_eq(resident(out), 0);
	for (size_t i = 0; i < 2; i++)
		ck_assert_msg(l.ev[i].reason == PC_RESTORE_EV_OUTSIDE ||
			      l.ev[i].reason == PC_RESTORE_EV_SYMLINK, "reason %d", l.ev[i].reason);
	/* the walk (openat2 missing) refuses them too */
	ck_assert_int_eq(pc_open_beneath(rootfd, "abs", PC_BENEATH_WALK, NULL), -ELOOP);
	ck_assert_int_eq(pc_open_beneath(rootfd, "rel", PC_BENEATH_WALK, NULL), -ELOOP);
	close(rootfd);
}
END_TEST

START_TEST(devices_fifos_and_sockets_are_not_opened)
{
	char *root = root_dir();
	struct tsrc s = { .fail_at = -1 };
	struct pc_restore_opts o = { 0 };
	struct pc_restore_stats st;
	struct tlog l = { 0 };
	int rootfd = open_root(root);
	bool dev = mknod(pc_test_path("root/null"), S_IFCHR | 0666, makedev(1, 3)) == 0;

	/* a FIFO opened for reading would block until a writer came: the
	 * alarm fails the case instead of hanging it */
	ck_assert_int_eq(mkfifo(pc_test_path("root/fifo"), 0644), 0);
	alarm(20);
	t_add(&s, "fifo", NULL, 0, 1);
	if (dev)
		t_add(&s, "null", NULL, 0, 1);
	else
		pc_test_skip("device_node", "mknod refused (no CAP_MKNOD here)");
	ck_assert_int_eq(run_restore(rootfd, &s, &o, &l, &st), 0);
	ck_assert_uint_eq(st.skipped[PC_RESTORE_SKIP_NOT_REGULAR], dev ? 2 : 1);
	ck_assert_int_eq(l.ev[0].reason, PC_RESTORE_EV_NOT_REGULAR);
	for (unsigned int flags = 0; flags <= PC_BENEATH_WALK; flags += PC_BENEATH_WALK) {
		ck_assert_int_eq(pc_open_beneath(rootfd, "fifo", flags, NULL), -EBADFD);
		if (dev)
			ck_assert_int_eq(pc_open_beneath(rootfd, "null", flags, NULL), -EBADFD);
		ck_assert_int_eq(pc_open_beneath(rootfd, ".", flags, NULL), -EBADFD);
		ck_assert_int_eq(pc_open_beneath(rootfd, "nothing", flags, NULL), -ENOENT);
	}
	ck_assert_int_eq(pc_open_beneath(rootfd, "fifo", 1u << 7, NULL), -EINVAL);
	alarm(0);
	close(rootfd);
}
END_TEST

/* after the first event: the root's name given to another directory, with
 * another "b" in it */
static void replace_root(struct tlog *l, const struct pc_restore_event *ev)
{
	char old[4096];

	if (l->n != 1)
		return;
	snprintf(old, sizeof(old), "%s.old", l->root);
	ck_assert_int_eq(rename(l->root, old), 0);
	ck_assert_int_eq(mkdir(l->root, 0755), 0);
	evicted_file("root/b", 4);
}

START_TEST(a_root_replaced_during_the_restore_is_kept)
{
	char *root = root_dir();
	const char *b = evicted_file("root/b", 4);
	struct tsrc s = { .fail_at = -1 };
	/* one file after the other, in the snapshot's order */
	struct pc_restore_opts o = { .threads = 1, .order = PC_RESTORE_ORDER_FILE };
	struct pc_restore_stats st;
	struct tlog l = { .hook = replace_root, .root = root };
	int rootfd = open_root(root);

	t_add(&s, "gone", NULL, 0, 1);
	t_add(&s, "b", NULL, 0, 4);
	ck_assert_int_eq(run_restore(rootfd, &s, &o, &l, &st), 0);
	ck_assert_int_eq(l.ev[0].reason, PC_RESTORE_EV_MISSING);
	ck_assert_uint_eq(st.files_restored, 1);
	ck_assert_uint_eq(resident(pc_test_path("root.old/b")), 4);
	ck_assert_uint_eq(resident(b), 0); /* the new directory's: not touched */
	close(rootfd);
}
END_TEST

/* ---- identity, renamed files ---- */

START_TEST(changed_files_are_named_and_restored_unless_strict)
{
	char *root = root_dir();
	const char *a = evicted_file("root/a", 8);
	struct tsrc s = { .fail_at = -1 };
	struct pc_restore_opts o = { 0 };
	struct pc_restore_stats st;
	struct tlog l = { 0 };
	int rootfd = open_root(root);

	t_add(&s, "a", a, 0, 8)->rec.file_size += 1; /* recorded one byte longer */
	ck_assert_int_eq(run_restore(rootfd, &s, &o, &l, &st), 0);
	ck_assert_uint_eq(st.changed, 1);
	ck_assert_uint_eq(st.files_restored, 1);
	ck_assert_int_eq(l.ev[0].reason, PC_RESTORE_EV_CHANGED);
	ck_assert_str_eq(l.ev[0].path, "a");
	ck_assert_uint_eq(resident(a), 8);
	pc_test_set_pattern(a, NULL, 0);
	s.cur = 0;
	l.n = 0;
	o = (struct pc_restore_opts){ .flags = PC_RESTORE_STRICT };
	ck_assert_int_eq(run_restore(rootfd, &s, &o, &l, &st), 0);
	ck_assert_uint_eq(st.changed, 1);
	ck_assert_uint_eq(st.skipped[PC_RESTORE_SKIP_CHANGED], 1);
	ck_assert_uint_eq(st.files_restored, 0);
	ck_assert_uint_eq(resident(a), 0);
	close(rootfd);
}
END_TEST

START_TEST(renamed_files_are_found_by_inode)
{
	char *root = root_dir();
	const char *a = evicted_file("root/a", 8);
	const char *moved = pc_test_path("root/sub/moved");
	struct tsrc s = { .fail_at = -1 };
	struct pc_restore_opts o = { 0 };
	struct pc_restore_stats st;
	struct tlog l = { 0 };
	int rootfd = open_root(root);

	t_add(&s, "a", a, 0, 8);
	ck_assert_int_eq(mkdir(pc_test_path("root/sub"), 0755), 0);
	ck_assert_int_eq(rename(a, moved), 0);
	ck_assert_int_eq(run_restore(rootfd, &s, &o, &l, &st), 0);
	ck_assert_uint_eq(st.renamed, 1);
	ck_assert_uint_eq(st.skipped[PC_RESTORE_SKIP_MISSING], 0);
	ck_assert_uint_eq(st.files_restored, 1);
	ck_assert_int_eq(l.ev[0].reason, PC_RESTORE_EV_RENAMED);
	ck_assert_str_eq(l.ev[0].path, "sub/moved");
	ck_assert_uint_eq(resident(moved), 8);
	ck_assert_uint_ge(s.rewinds, 2); /* the validation's, the search's */
	/* not with the flag, nor from a pipe: missing */
	pc_test_set_pattern(moved, NULL, 0);
	for (int k = 0; k < 2; k++) {
		s.cur = 0;
		s.pipe = k == 1;
		l.n = 0;
		o = (struct pc_restore_opts){ .flags = k == 0 ? PC_RESTORE_NO_FIND_RENAMED : 0 };
		ck_assert_int_eq(run_restore(rootfd, &s, &o, &l, &st), 0);
		ck_assert_uint_eq(st.renamed, 0);
		ck_assert_uint_eq(st.skipped[PC_RESTORE_SKIP_MISSING], 1);
		ck_assert_int_eq(l.ev[0].reason, PC_RESTORE_EV_MISSING);
		ck_assert_uint_eq(resident(moved), 0);
	}
	close(rootfd);
}
END_TEST

/* ---- the source ---- */

START_TEST(a_corrupt_source_warms_nothing)
{
	char *root = root_dir();
	const char *a = evicted_file("root/a", 8);
	struct tsrc s = { .fail_at = 2 };
	struct pc_restore_opts o = { 0 };
	struct pc_restore_stats st;
	struct tlog l = { 0 };
	int rootfd = open_root(root);

	t_add(&s, "a", a, 0, 8);
	t_add(&s, "a", a, 0, 8);
	ck_assert_int_eq(run_restore(rootfd, &s, &o, &l, &st), -EBADMSG);
	ck_assert_uint_eq(st.files, 0);
	ck_assert_uint_eq(resident(a), 0);
	/* from a pipe it cannot be read twice: up to the damage */
	s.cur = 0;
	s.pipe = true;
	ck_assert_int_eq(run_restore(rootfd, &s, &o, &l, &st), -EBADMSG);
	ck_assert_uint_eq(st.files, 2);
	close(rootfd);
}
END_TEST

START_TEST(a_native_snapshot_is_a_source)
{
	char *root = root_dir();
	const char *a = evicted_file("root/a", 16);
	struct pc_snapshot_info info = { .size = sizeof(info), .root = root };
	struct pc_snapshot_file meta = { .size = sizeof(meta) };
	struct pc_restore_source src = { .size = sizeof(src) };
	struct pc_restore_stats st = { .size = sizeof(st) };
	struct pc_restore_opts o = { .size = sizeof(o), .max_bytes = UINT64_C(1) << 40 };
	struct pc_run runs[] = { { 2, 3 }, { 10, 4 } };
	struct pc_snapshot_writer *w;
	struct pc_snapshot_source *ss;
	struct stat sb;
	int rootfd = open_root(root);
	int fd = open(pc_test_path("snap"), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	off_t end;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(stat(a, &sb), 0);
	meta.file_size = (uint64_t)sb.st_size;
	meta.mtime_ns = (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
	meta.quality = PC_QUALITY_EXACT;
	ck_assert_int_eq(pc_snapshot_writer_new(fd, &info, &w), 0);
	ck_assert_int_eq(pc_snapshot_write_runs(w, "a", &meta, runs, 2), 0);
	ck_assert_int_eq(pc_snapshot_writer_finish(w), 0);
	pc_snapshot_writer_free(w);
	ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
	ck_assert_int_eq(pc_snapshot_source_new(fd, &ss), 0);
	pc_snapshot_source_get(ss, &src);
	ck_assert_int_eq(pc_restore_source_validate(&src), 1);
	ck_assert_int_eq(pc_snapshot_read_header(pc_snapshot_source_reader(ss)), 0);
	ck_assert_str_eq(pc_snapshot_reader_root(pc_snapshot_source_reader(ss)), root);
	ck_assert_int_eq(pc_restore(rootfd, &src, &o, &st), 0);
	ck_assert_uint_eq(st.pages_wanted, 7);
	ck_assert_uint_eq(resident(a), 7);
	pc_snapshot_source_free(ss);
	/* cut short: nothing is warmed */
	pc_test_set_pattern(a, NULL, 0);
	end = lseek(fd, 0, SEEK_END);
	ck_assert_int_eq(ftruncate(fd, end - 4), 0);
	ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
	ck_assert_int_eq(pc_snapshot_source_new(fd, &ss), 0);
	pc_snapshot_source_get(ss, &src);
	ck_assert_int_eq(pc_restore(rootfd, &src, &o, &st), -EBADMSG);
	ck_assert_ptr_nonnull(pc_snapshot_reader_error(pc_snapshot_source_reader(ss)));
	ck_assert_uint_eq(resident(a), 0);
	pc_snapshot_source_free(ss);
	close(fd);
	close(rootfd);
}
END_TEST

/* ---- budget, order, cancel, stats ---- */

START_TEST(the_budget_stops_the_restore)
{
	char *root = root_dir();
	long ps = pc_page_size();
	const char *a = evicted_file("root/a", 64), *b = evicted_file("root/b", 64);
	struct tsrc s = { .fail_at = -1 };
	struct pc_restore_opts o = { .max_bytes = (uint64_t)ps * 16 };
	struct pc_restore_stats st;
	struct tlog l = { 0 };
	int rootfd = open_root(root);

	t_add(&s, "a", a, 0, 64);
	t_add(&s, "b", b, 0, 64);
	ck_assert_int_eq(run_restore(rootfd, &s, &o, &l, &st), 0);
	ck_assert_int_eq(st.stopped, PC_RESTORE_STOP_BUDGET);
	ck_assert_str_eq(pc_restore_stop_name(st.stopped), "budget");
	ck_assert_uint_le(st.bytes_read, (uint64_t)ps * 16);
	ck_assert_uint_eq(st.budget_bytes, (uint64_t)ps * 16);
	ck_assert_str_eq(st.budget_from, "max_bytes");
	ck_assert_uint_le(resident(a) + resident(b), 16 + 16); /* readahead's own rounding */
	ck_assert_uint_lt(st.final_pages_resident, st.final_pages_wanted);
	close(rootfd);
}
END_TEST

START_TEST(every_order_brings_back_the_same_pages)
{
	char *root = root_dir();
	const char *a = evicted_file("root/a", 32), *b = evicted_file("root/b", 32);
	int rootfd = open_root(root);

	for (int order = PC_RESTORE_ORDER_AUTO; order <= PC_RESTORE_ORDER_PHYSICAL; order++) {
		struct tsrc s = { .fail_at = -1 };
		struct pc_restore_opts o = { .order = order };
		struct pc_restore_stats st;
		struct tlog l = { 0 };
		struct tfile *f;

		pc_test_set_pattern(a, NULL, 0);
		pc_test_set_pattern(b, NULL, 0);
		f = t_add(&s, "a", a, 1, 3);
		f->runs[1] = (struct pc_run){ 20, 5 };
		f->nruns = 2;
		t_add(&s, "b", b, 30, 2);
		ck_assert_int_eq(run_restore(rootfd, &s, &o, &l, &st), 0);
		ck_assert_msg(resident(a) == 8 && resident(b) == 2, "order %s: %llu, %llu",
			      pc_restore_order_name(order), (unsigned long long)resident(a),
			      (unsigned long long)resident(b));
		if (order == PC_RESTORE_ORDER_AUTO) {
			ck_assert_ptr_nonnull(st.order_why);
			ck_assert_int_ne(st.order, PC_RESTORE_ORDER_AUTO);
		} else {
			ck_assert_ptr_null(st.order_why);
			ck_assert_int_eq(st.order, order);
		}
		ck_assert_uint_eq(st.final_pages_resident, 10);
	}
	ck_assert_str_eq(pc_restore_order_name(PC_RESTORE_ORDER_PHYSICAL), "physical");
	close(rootfd);
}
END_TEST

static void cancel_now(struct tlog *l, const struct pc_restore_event *ev)
{
	l->cancel = 1;
}

START_TEST(cancel_stops_before_the_rest)
{
	char *root = root_dir();
	const char *a = evicted_file("root/a", 8);
	struct tsrc s = { .fail_at = -1 };
	struct tlog l = { .hook = cancel_now };
	struct pc_restore_opts o = { .cancel = &l.cancel, .threads = 1,
				       .order = PC_RESTORE_ORDER_FILE };
	struct pc_restore_stats st;
	int rootfd = open_root(root);

	t_add(&s, "gone", NULL, 0, 1); /* its event cancels */
	t_add(&s, "a", a, 0, 8);
	t_add(&s, "a", a, 0, 8);
	ck_assert_int_eq(run_restore(rootfd, &s, &o, &l, &st), 0);
	ck_assert_int_eq(st.stopped, PC_RESTORE_STOP_CANCELLED);
	ck_assert_uint_eq(st.skipped[PC_RESTORE_SKIP_NOT_REACHED], 2);
	ck_assert_uint_eq(st.files_restored, 0);
	ck_assert_uint_eq(resident(a), 0);
	close(rootfd);
}
END_TEST

START_TEST(every_stats_field_counts)
{
	char *root = root_dir();
	long ps = pc_page_size();
	const char *a = evicted_file("root/a", 16), *e = evicted_file("root/e", 4);
	const uint64_t before[] = { 0, 1 };
	struct tsrc s = { .fail_at = -1 };
	struct pc_restore_opts o = { 0 };
	struct pc_restore_stats st;
	struct tlog l = { 0 };
	int rootfd = open_root(root);

	pc_test_set_pattern(a, before, 2);       /* two pages already there */
	t_add(&s, "a", a, 0, 20);                /* 4 of them past the end */
	t_add(&s, "e", e, 0, 0);                 /* recorded without pages */
	t_add(&s, "u", NULL, 0, 1)->rec.quality = PC_QUALITY_UNKNOWN;
	t_add(&s, "gone", NULL, 0, 1);
	t_add(&s, "../x", NULL, 0, 1);
	ck_assert_int_eq(mkdir(pc_test_path("root/dir"), 0755), 0);
	t_add(&s, "dir", NULL, 0, 1);
	ck_assert_int_eq(run_restore(rootfd, &s, &o, &l, &st), 0);
	ck_assert_uint_eq(st.size, sizeof(st));
	ck_assert_uint_eq(st.files, 6);
	ck_assert_uint_eq(st.files_restored, 1);
	ck_assert_uint_eq(st.files_without_pages, 1);
	ck_assert_uint_eq(st.skipped[PC_RESTORE_SKIP_UNKNOWN_AT_CAPTURE], 1);
	ck_assert_uint_eq(st.skipped[PC_RESTORE_SKIP_MISSING], 1);
	ck_assert_uint_eq(st.skipped[PC_RESTORE_SKIP_REFUSED], 1);
	ck_assert_uint_eq(st.skipped[PC_RESTORE_SKIP_NOT_REGULAR], 1);
	ck_assert_uint_eq(st.skipped[PC_RESTORE_SKIP_CHANGED], 0);
	ck_assert_uint_eq(st.skipped[PC_RESTORE_SKIP_NOT_REACHED], 0);
	ck_assert_uint_eq(st.skipped[PC_RESTORE_SKIP_ERROR], 0);
	ck_assert_uint_eq(st.changed, 0);
	ck_assert_uint_eq(st.renamed, 0);
	ck_assert_uint_eq(st.pages_wanted, 20);
	ck_assert_uint_eq(st.pages_beyond_eof, 4);
	ck_assert_uint_eq(st.pages_resident_before, 2);
	ck_assert_int_eq(st.resident_before_quality, PC_QUALITY_EXACT);
	ck_assert_uint_eq(st.pages_read, 14);
	ck_assert_uint_eq(st.bytes_read, 14 * (uint64_t)ps);
	ck_assert_uint_eq(st.pages_read_again, 0);
	ck_assert_uint_eq(st.pages_streamed, 0);
	ck_assert_uint_eq(st.budget_bytes, UINT64_C(1) << 40);
	ck_assert_str_eq(st.budget_from, "max_bytes");
	ck_assert_msg(st.eviction_watch == 0 || st.eviction_watch == -ENOSYS, "watch %d",
		      st.eviction_watch);
	ck_assert_int_eq(st.stopped, PC_RESTORE_STOP_NONE);
	ck_assert_int_eq(st.read_error, 0);
	ck_assert_ptr_nonnull(st.open_method);
	ck_assert_double_ge(st.seconds, 0);
	ck_assert_uint_eq(st.final_pages_wanted, 16);
	ck_assert_uint_eq(st.final_pages_resident, 16);
	ck_assert_int_eq(st.final_quality, PC_QUALITY_EXACT);
	ck_assert_str_eq(st.settle_end, "complete");
	ck_assert_uint_eq(resident(a), 16);
	ck_assert_str_eq(find_event(&l, PC_RESTORE_EV_MISSING)->path, "gone");
	ck_assert_str_eq(find_event(&l, PC_RESTORE_EV_UNSAFE_PATH)->path, "../x");
	ck_assert_int_eq(find_event(&l, PC_RESTORE_EV_NOT_REGULAR)->error, -EBADFD);
	ck_assert_uint_eq(l.n, 3);
	ck_assert_str_eq(pc_restore_skip_name(PC_RESTORE_SKIP_NOT_REGULAR), "not_regular");
	ck_assert_str_eq(pc_restore_skip_name(99), "unknown");
	close(rootfd);
}
END_TEST

/* ---- the eviction watch, in a small memory cgroup ---- */

/* Write text to an existing file (a cgroup's: never created). */
static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* A memory cgroup of limit bytes, made for this process: its directory
 * (malloc'ed); NULL when none can be. Only on a cgroup filesystem whose
 * new directory has the limit file (v2 with the memory controller on, or
 * v1's memory hierarchy). */
static char *memory_cgroup(uint64_t limit)
{
	static const char *const bases[][2] = {
		{ "/sys/fs/cgroup/memory", "memory.limit_in_bytes" },
		{ "/sys/fs/cgroup/unified", "memory.max" },
		{ "/sys/fs/cgroup", "memory.max" },
	};
	char text[32];

	snprintf(text, sizeof(text), "%llu\n", (unsigned long long)limit);
	for (size_t i = 0; i < sizeof(bases) / sizeof(bases[0]); i++) {
		char *dir = NULL, path[4096];
		struct statfs sfs;

		if (statfs(bases[i][0], &sfs) < 0 ||
		    (sfs.f_type != CGROUP_SUPER_MAGIC && sfs.f_type != CGROUP2_SUPER_MAGIC))
			continue;
		if (asprintf(&dir, "%s/pc-test-restore-%d", bases[i][0], (int)getpid()) < 0)
			return NULL;
		if (mkdir(dir, 0755) < 0) {
			free(dir);
			continue;
		}
		snprintf(path, sizeof(path), "%s/%s", dir, bases[i][1]);
		if (write_file(path, text) == 0)
			return dir;
		rmdir(dir);
		free(dir);
	}
	return NULL;
}

START_TEST(evicted_pages_stop_the_restore)
{
	char *root = root_dir(), *cg, procs[4096];
	struct tsrc s = { .fail_at = -1 };
	struct pc_cachestat cs;
	const char *a;
	int rootfd, status, fd;
	pid_t pid;

	a = evicted_file("root/f0", 16);
	fd = open(a, O_RDONLY | O_CLOEXEC);
	if (pc_cachestat(fd, 0, 0, &cs) == -ENOSYS) {
		close(fd);
		pc_test_skip("evicted_pages_stop_the_restore", "no cachestat(2) (6.5+): no watch");
		return;
	}
	close(fd);
	if (pc_test_under_valgrind()) {
		pc_test_skip("evicted_pages_stop_the_restore", "valgrind does not fit in 48 MiB");
		return;
	}
	cg = memory_cgroup(UINT64_C(48) << 20);
	if (!cg) {
		pc_test_skip("evicted_pages_stop_the_restore", "no memory cgroup can be made");
		return;
	}
	for (int i = 0; i < 8; i++) {
		char name[32];

		snprintf(name, sizeof(name), "root/f%d", i);
		t_add(&s, name + 5, evicted_file(name, 4096), 0, 4096); /* 16 MiB each */
	}
	rootfd = open_root(root);
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", cg);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct pc_restore_opts o = { 0 };
		struct pc_restore_stats st;
		struct tlog l = { 0 };
		char pid_text[32];

		snprintf(pid_text, sizeof(pid_text), "%d\n", (int)getpid());
		if (write_file(procs, pid_text) < 0)
			_exit(3);
		if (run_restore(rootfd, &s, &o, &l, &st) < 0)
			_exit(4);
		if (st.stopped == PC_RESTORE_STOP_EVICTING && st.bytes_read < (UINT64_C(128) << 20) &&
		    st.skipped[PC_RESTORE_SKIP_NOT_REACHED] > 0)
			_exit(0);
		fprintf(stderr, "stopped %s, %llu bytes read, %llu pages evicted again\n",
			pc_restore_stop_name(st.stopped), (unsigned long long)st.bytes_read,
			(unsigned long long)st.evicted_again_pages);
		_exit(5);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	rmdir(cg);
	free(cg);
	close(rootfd);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "the child: status %#x (3 no cgroup, 4 failed, 5 not stopped by evictions)",
		      status);
}
END_TEST

/* ---- pc_memory_budget ---- */

START_TEST(the_memory_budget_says_why)
{
	const char *why = NULL;
	uint64_t bytes = 0;
	int ret = pc_memory_budget(&bytes, &why);

	ck_assert_ptr_nonnull(why);
	if (ret == -ENODATA) {
		ck_assert_uint_eq(bytes, UINT64_MAX);
		ck_assert_str_eq(why, "unknown");
	} else {
		ck_assert_int_eq(ret, 0);
		ck_assert_uint_gt(bytes, 0);
		ck_assert_uint_ne(bytes, UINT64_MAX);
	}
	ck_assert_int_eq(pc_memory_budget(NULL, &why), -EINVAL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("restore");
	TCase *tc = tcase_create("restore");
	SRunner *sr;
	int failed;

	if (!pc_test_is_root()) {
		/* mincore tells the truth about every file only to root here,
		 * and device nodes take root to make */
		printf("SKIP: test-restore needs root\n");
		return 77;
	}
	tcase_add_test(tc, dotdot_and_absolute_paths_are_refused);
	tcase_add_test(tc, absolute_paths_beneath_root_path_are_restored);
	tcase_add_test(tc, symlinks_out_of_the_root_are_refused);
	tcase_add_test(tc, devices_fifos_and_sockets_are_not_opened);
	tcase_add_test(tc, a_root_replaced_during_the_restore_is_kept);
	tcase_add_test(tc, changed_files_are_named_and_restored_unless_strict);
	tcase_add_test(tc, renamed_files_are_found_by_inode);
	tcase_add_test(tc, a_corrupt_source_warms_nothing);
	tcase_add_test(tc, a_native_snapshot_is_a_source);
	tcase_add_test(tc, the_budget_stops_the_restore);
	tcase_add_test(tc, every_order_brings_back_the_same_pages);
	tcase_add_test(tc, cancel_stops_before_the_rest);
	tcase_add_test(tc, every_stats_field_counts);
	tcase_add_test(tc, evicted_pages_stop_the_restore);
	tcase_add_test(tc, the_memory_budget_says_why);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	pc_test_cases_dir(); /* a failed case leaves no directory behind */
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
