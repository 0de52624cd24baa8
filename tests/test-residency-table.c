/* SPDX-License-Identifier: MIT */
/*
 * pc_residency()'s strategy on the scripted backend: every kernel variant
 * (mincore x cachestat x NOWAIT) x file kind (owned, foreign 0644 hidden,
 * foreign 0666 visible) x flags. The strategy must never call a wrong or
 * faked answer EXACT, must say perturbed exactly when it probed
 * destructively (and then from the last page to the first), and must not be
 * merely cautious: EXACT whenever a truthful side-effect-free answer
 * exists. Plus the range arithmetic, the run iterator and a file that
 * shrinks during the scan.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "scripted-backend.h"

#define DISK 1
#define PS 4096

/* ck_assert_* records a mark point (a write) per call: per-page checks use
 * this, which costs nothing while it holds. */
#define CHECK(cond, ...) do { if (!(cond)) ck_abort_msg(__VA_ARGS__); } while (0)

static const int mincore_modes[] = {
	PC_MINCORE_FULL, PC_MINCORE_GATED_FAKED, PC_MINCORE_GATED_MAPPED,
	PC_MINCORE_MAPPED_ONLY, PC_MINCORE_USELESS,
};
static const int cachestat_modes[] = {
	PC_CACHESTAT_ABSENT, PC_CACHESTAT_BLOCKED, PC_CACHESTAT_GATED, PC_CACHESTAT_OPEN,
};
static const int nowait_modes[] = {
	PC_NOWAIT_CLEAN, PC_NOWAIT_DESTRUCTIVE, PC_NOWAIT_UNSUPPORTED,
};

#define NMINCORE (int)(sizeof(mincore_modes) / sizeof(mincore_modes[0]))
#define NCACHESTAT (int)(sizeof(cachestat_modes) / sizeof(cachestat_modes[0]))
#define NNOWAIT (int)(sizeof(nowait_modes) / sizeof(nowait_modes[0]))

/* The kinds of file an unprivileged caller meets. */
enum kind {
	KIND_OWNED,         /* the caller owns it: the gate passes */
	KIND_FOREIGN_0644,  /* someone else's, not writable: the gate fails */
	KIND_FOREIGN_0666,  /* someone else's, world-writable: the gate passes */
	KIND_COUNT
};

static const char *kind_name[KIND_COUNT] = { "owned", "foreign-0644", "foreign-0666" };

static const unsigned int flag_sets[] = {
	0,
	PC_RES_COUNT_ONLY,
	PC_RES_ALLOW_PERTURB,
	PC_RES_COUNT_ONLY | PC_RES_ALLOW_PERTURB,
	PC_RES_FORCE_MINCORE,
	PC_RES_FORCE_MINCORE | PC_RES_COUNT_ONLY,
	PC_RES_FORCE_CACHESTAT,
	PC_RES_FORCE_CACHESTAT | PC_RES_COUNT_ONLY,
	PC_RES_FORCE_NOWAIT,
	PC_RES_FORCE_NOWAIT | PC_RES_ALLOW_PERTURB,
};

#define NFLAGS (int)(sizeof(flag_sets) / sizeof(flag_sets[0]))

/* The table's file: 1300 pages and 100 bytes. Pages 0..511 all resident (a
 * full 2 MiB chunk), 512..1023 none, then every other page, so the last
 * page (1300, partial) is resident too. Pages 5 and 1030 are mapped by
 * someone (what mapped-only answers show). */
#define TABLE_SIZE (UINT64_C(1300) * PS + 100)

static int table_pattern(uint64_t p)
{
	if (p < 512)
		return 1;
	if (p < 1024)
		return 0;
	return p % 2 == 0;
}

/* The gate for the scripted caller: root passes everywhere (CAP_FOWNER);
 * an ordinary user on its own and on writable files. */
static int gate_of(const struct pc_scripted_kernel *k, enum kind kind)
{
	return k->caller_privileged || kind != KIND_FOREIGN_0644;
}

struct world {
	struct pc_scripted *s;
	struct pc_backend *b;
	struct pc_sfile *file;
	struct pc_bfile *fd;          /* the caller's open file */
	unsigned char *truth;         /* before the call */
	uint64_t npages;
};

static void world_new(struct world *w, const struct pc_scripted_kernel *k, enum kind kind,
		      uint64_t size, int (*pattern)(uint64_t))
{
	struct pc_sfile_opts o = { 0 };

	memset(w, 0, sizeof(*w));
	ck_assert_int_eq(pc_scripted_new(k, &w->s), 0);
	w->b = pc_scripted_backend(w->s);
	o.size = size;
	o.fs = DISK;
	o.gate[PC_SCRIPTED_SELF] = gate_of(k, kind);
	o.gate[PC_SCRIPTED_NOBODY] = kind == KIND_FOREIGN_0666;
	o.predict[0] = o.predict[1] = -1;
	w->file = pc_scripted_file_new(w->s, &o);
	ck_assert_ptr_nonnull(w->file);
	w->npages = pc_scripted_file_npages(w->file);
	for (uint64_t p = 0; pattern && p < w->npages; p++)
		pc_scripted_set_resident(w->file, p, pattern(p));
	ck_assert_int_eq(pc_scripted_open(w->s, w->file, 0, &w->fd), 0);
}

/* Record the truth as it is now (what an EXACT answer must equal). */
static void world_snapshot(struct world *w)
{
	free(w->truth);
	w->truth = malloc(w->npages ? (size_t)w->npages : 1);
	ck_assert_ptr_nonnull(w->truth);
	for (uint64_t p = 0; p < w->npages; p++)
		w->truth[p] = (unsigned char)pc_scripted_resident(w->file, p);
}

static uint64_t truth_count(const struct world *w, uint64_t first, uint64_t n)
{
	uint64_t c = 0;

	for (uint64_t p = first; p < first + n && p < w->npages; p++)
		c += w->truth[p];
	return c;
}

static void world_free(struct world *w)
{
	w->b->ops->close(w->b, w->fd);
	ck_assert_uint_eq(pc_scripted_open_handles(w->s), 0);
	ck_assert_uint_eq(pc_scripted_misuse(w->s), 0);
	pc_scripted_free(w->s);
	free(w->truth);
}

/* An unprivileged caller (the root case is the 0666 case: everything passes). */
static void kernel_for(struct pc_scripted_kernel *k, int mc, int cs, int nw)
{
	pc_scripted_kernel_init(k, mc, cs, nw);
	k->caller_privileged = 0;
	k->as_nobody_error = -EPERM;
}

/* What a right strategy does. */
enum path {
	PATH_ERROR,       /* returns err */
	PATH_UNKNOWN,     /* UNKNOWN, nothing probed */
	PATH_CACHESTAT,   /* EXACT from cachestat alone (no mincore call) */
	PATH_MINCORE,     /* EXACT from mincore (cachestat may help) */
	PATH_PROBE,       /* EXACT from NOWAIT probes */
	PATH_BISECT,      /* EXACT from cachestat after mincore's verdict said hidden */
};

struct expect {
	enum path path;
	int err;
	int destructive;  /* PATH_PROBE on a destructive filesystem */
};

/* gate: whether the kernel's gate passes for the caller on this file. nw is
 * the NOWAIT mode the strategy is told; UNKNOWN is treated as possibly
 * destructive (probe only when allowed, and say perturbed). */
static struct expect expect_for(int mc, int cs, int nw, int gate, unsigned int flags)
{
	int visible = mc == PC_MINCORE_FULL ||
		      ((mc == PC_MINCORE_GATED_FAKED || mc == PC_MINCORE_GATED_MAPPED) && gate);
	int cachestat_ok = cs == PC_CACHESTAT_OPEN || (cs == PC_CACHESTAT_GATED && gate);
	int perturb = !!(flags & PC_RES_ALLOW_PERTURB);
	int risky = nw == PC_NOWAIT_DESTRUCTIVE || nw == PC_NOWAIT_UNKNOWN;
	int probe_ok = nw == PC_NOWAIT_CLEAN || (risky && perturb);
	struct expect e = { PATH_ERROR, -EOPNOTSUPP, 0 };

	if (flags & PC_RES_FORCE_CACHESTAT) {
		if (cachestat_ok)
			e.path = PATH_CACHESTAT;
		return e;
	}
	if (flags & PC_RES_FORCE_MINCORE) {
		if (visible)
			e.path = PATH_MINCORE;
		return e;
	}
	if (flags & PC_RES_FORCE_NOWAIT) {
		if (probe_ok) {
			e.path = PATH_PROBE;
			e.destructive = risky;
		}
		return e;
	}
	e.err = 0;
	if ((flags & PC_RES_COUNT_ONLY) && cachestat_ok)
		e.path = PATH_CACHESTAT;
	else if (visible)
		e.path = PATH_MINCORE;
	else if (cachestat_ok)
		e.path = PATH_BISECT;
	else if (probe_ok) {
		e.path = PATH_PROBE;
		e.destructive = risky;
	} else {
		e.path = PATH_UNKNOWN;
	}
	return e;
}

static const char *path_name(enum path p)
{
	static const char *names[] = { "error", "unknown", "cachestat", "mincore", "probe",
				       "bisect" };

	return names[p];
}

/* The probes of one call: only on a private random description, each page
 * once, descending when destructive. Returns how many pages were probed. */
static size_t check_probes(struct world *w, const struct expect *e, uint64_t first,
			   uint64_t n, const char *what)
{
	const struct pc_scripted_probe *log;
	size_t nlog = pc_scripted_probe_log(w->s, &log);

	for (size_t i = 0; i < nlog; i++) {
		CHECK(log[i].handle != pc_scripted_handle_id(w->fd),
		      "%s: probed through the caller's own fd", what);
		CHECK(log[i].random, "%s: probed without POSIX_FADV_RANDOM", what);
		CHECK(log[i].page >= first && log[i].page < first + n,
		      "%s: probed page %llu outside the range", what,
		      (unsigned long long)log[i].page);
		if (e->destructive && i > 0)
			CHECK(log[i].page < log[i - 1].page,
			      "%s: destructive probe of page %llu after page %llu", what,
			      (unsigned long long)log[i].page,
			      (unsigned long long)log[i - 1].page);
	}
	CHECK(!pc_scripted_handle_random(w->fd), "%s: the caller's fd lost its readahead",
	      what);
	return nlog;
}

/* One call against the oracle. */
static void check_call(struct world *w, int mc, int cs, int nw, int gate, unsigned int flags,
		       uint64_t offset, uint64_t length, uint64_t first, uint64_t n,
		       const char *what)
{
	struct expect e = expect_for(mc, cs, nw, gate, flags);
	struct pc_residency *r = (struct pc_residency *)&e; /* must stay untouched on error */
	struct pc_residency *sentinel = r;
	size_t probed;
	int ret;

	world_snapshot(w);
	pc_scripted_reset_counts(w->s);
	ret = pc_residency_on(w->b, w->fd, offset, length, flags, &r);
	probed = check_probes(w, &e, first, n, what);

	if (e.path == PATH_ERROR) {
		CHECK(ret == e.err, "%s: returned %d, want %d", what, ret, e.err);
		CHECK(r == sentinel, "%s: *out written on failure", what);
		CHECK(pc_scripted_open_handles(w->s) == 1, "%s: handles left open", what);
		return;
	}
	CHECK(ret == 0, "%s: returned %d, want the %s path", what, ret, path_name(e.path));
	ck_assert_uint_eq(pc_residency_first_page(r), first);
	ck_assert_uint_eq(pc_residency_npages(r), n);
	ck_assert_uint_eq(pc_residency_file_size(r), pc_scripted_file_size(w->file));

	if (e.path == PATH_UNKNOWN) {
		struct pc_run run;

		CHECK(pc_residency_quality(r) == PC_QUALITY_UNKNOWN,
		      "%s: quality %s, want unknown", what,
		      pc_quality_name(pc_residency_quality(r)));
		ck_assert_uint_eq(pc_residency_resident(r), 0);
		ck_assert_int_eq(pc_residency_source(r), PC_SOURCE_NONE);
		ck_assert_int_eq(pc_residency_test(r, first), -ENODATA);
		ck_assert_int_eq(pc_residency_next_run(r, first, &run), -ENODATA);
		CHECK(probed == 0, "%s: probed %zu pages though the answer is unknown",
		      what, probed);
		ck_assert_int_eq(pc_residency_perturbed(r), 0);
	} else {
		uint64_t want = truth_count(w, first, n);

		CHECK(pc_residency_quality(r) == PC_QUALITY_EXACT,
		      "%s: quality %s, want exact (%s)", what,
		      pc_quality_name(pc_residency_quality(r)), path_name(e.path));
		CHECK(pc_residency_resident(r) == want,
		      "%s: EXACT with %llu resident, truth %llu", what,
		      (unsigned long long)pc_residency_resident(r), (unsigned long long)want);
		if (flags & PC_RES_COUNT_ONLY) {
			ck_assert_int_eq(pc_residency_test(r, first), -ENODATA);
		} else {
			for (uint64_t p = first; p < first + n; p++) {
				int got = pc_residency_test(r, p);

				CHECK(got == w->truth[p],
				      "%s: EXACT says page %llu is %d, truth %d", what,
				      (unsigned long long)p, got, w->truth[p]);
			}
		}
		switch (e.path) {
		case PATH_CACHESTAT:
			ck_assert_int_eq(pc_residency_source(r), PC_SOURCE_CACHESTAT);
			CHECK(pc_scripted_calls(w->s, PC_SOP_MINCORE) == 0,
			      "%s: cachestat answered, yet mincore was called", what);
			CHECK(pc_scripted_calls(w->s, PC_SOP_NOWAIT_MODE) == 0,
			      "%s: asked for the NOWAIT mode without probing", what);
			CHECK(probed == 0, "%s: probed", what);
			break;
		case PATH_MINCORE:
			/* finding out the NOWAIT mode writes a scratch file: only
			 * when a probe is needed */
			CHECK(pc_scripted_calls(w->s, PC_SOP_NOWAIT_MODE) == 0,
			      "%s: asked for the NOWAIT mode without probing", what);
			CHECK(pc_residency_source(r) == PC_SOURCE_MINCORE ||
				      pc_residency_source(r) == PC_SOURCE_CACHESTAT,
			      "%s: source %s", what, pc_source_name(pc_residency_source(r)));
			CHECK(probed == 0, "%s: probed %zu pages where mincore tells the truth",
			      what, probed);
			break;
		case PATH_BISECT:
			ck_assert_int_eq(pc_residency_source(r), PC_SOURCE_CACHESTAT);
			CHECK(pc_scripted_calls(w->s, PC_SOP_NOWAIT_MODE) == 0,
			      "%s: asked for the NOWAIT mode though cachestat answers", what);
			CHECK(probed == 0, "%s: probed though cachestat answers", what);
			break;
		case PATH_PROBE:
			CHECK(pc_residency_source(r) == PC_SOURCE_PREADV2 ||
				      pc_residency_source(r) == PC_SOURCE_IO_URING,
			      "%s: source %s", what, pc_source_name(pc_residency_source(r)));
			/* each page once, and a miss between two hits once more
			 * (it misses again here: the script's pages hold still) */
			CHECK(probed == n + pc_residency_uncertain(r),
			      "%s: probed %zu of %llu pages (%llu uncertain)", what, probed,
			      (unsigned long long)n,
			      (unsigned long long)pc_residency_uncertain(r));
			break;
		default:
			break;
		}
		CHECK(pc_residency_perturbed(r) == e.destructive,
		      "%s: perturbed %d, but it %s probe destructively", what,
		      pc_residency_perturbed(r), e.destructive ? "did" : "did not");
	}
	/* the cache changed only where a destructive probe missed */
	if (!e.destructive) {
		for (uint64_t p = 0; p < w->npages; p++)
			CHECK(pc_scripted_resident(w->file, p) == w->truth[p],
			      "%s: page %llu changed without perturbing", what,
			      (unsigned long long)p);
	}
	CHECK(pc_scripted_open_handles(w->s) == 1, "%s: handles left open", what);
	pc_residency_free(r);
}

/* _i: mincore x cachestat x NOWAIT; inside, every kind and flag set. */
START_TEST(residency_table)
{
	int mc = mincore_modes[_i % NMINCORE];
	int cs = cachestat_modes[(_i / NMINCORE) % NCACHESTAT];
	int nw = nowait_modes[_i / (NMINCORE * NCACHESTAT)];
	struct pc_scripted_kernel k;

	kernel_for(&k, mc, cs, nw);
	for (int kind = 0; kind < KIND_COUNT; kind++) {
		for (int fi = 0; fi < NFLAGS; fi++) {
			struct world w;
			char what[200];

			world_new(&w, &k, (enum kind)kind, TABLE_SIZE, table_pattern);
			pc_scripted_set_mapped(w.file, 5, 1);
			pc_scripted_set_mapped(w.file, 1030, 1);
			snprintf(what, sizeof(what), "mincore %s, cachestat %s, nowait %s, %s, flags %#x",
				 pc_mincore_mode_name(mc), pc_cachestat_mode_name(cs),
				 pc_nowait_mode_name(nw), kind_name[kind], flag_sets[fi]);
			check_call(&w, mc, cs, nw, gate_of(&k, (enum kind)kind), flag_sets[fi], 0, 0,
				   0, w.npages, what);
			world_free(&w);
		}
	}
}
END_TEST

/* The same table on a window in the middle of the file (pages 300..1100),
 * so that range arithmetic meets every path. */
START_TEST(residency_table_window)
{
	int mc = mincore_modes[_i % NMINCORE];
	int cs = cachestat_modes[(_i / NMINCORE) % NCACHESTAT];
	int nw = nowait_modes[_i / (NMINCORE * NCACHESTAT)];
	struct pc_scripted_kernel k;

	kernel_for(&k, mc, cs, nw);
	for (int kind = 0; kind < KIND_COUNT; kind++) {
		for (int fi = 0; fi < NFLAGS; fi++) {
			struct world w;
			char what[200];

			world_new(&w, &k, (enum kind)kind, TABLE_SIZE, table_pattern);
			snprintf(what, sizeof(what),
				 "window: mincore %s, cachestat %s, nowait %s, %s, flags %#x",
				 pc_mincore_mode_name(mc), pc_cachestat_mode_name(cs),
				 pc_nowait_mode_name(nw), kind_name[kind], flag_sets[fi]);
			check_call(&w, mc, cs, nw, gate_of(&k, (enum kind)kind), flag_sets[fi],
				   UINT64_C(300) * PS + 17, UINT64_C(800) * PS, 300, 801, what);
			world_free(&w);
		}
	}
}
END_TEST

/* Detection could not tell (a privileged caller that cannot take the
 * unprivileged view gets UNKNOWN on full and gated kernels): the per-file
 * probes must still keep faked and mapped vectors from being EXACT.
 * (Mapped-only kernels are left out: detection tells them from step 1
 * alone, and nothing per file could: a fresh mapping of a file nobody maps
 * reads all 0, on mapped-only kernels as on truthful ones.) */
START_TEST(residency_never_wrong_when_modes_unknown)
{
	int mc = mincore_modes[_i % NMINCORE];
	int cs = cachestat_modes[(_i / NMINCORE) % NCACHESTAT];
	int nw = nowait_modes[_i / (NMINCORE * NCACHESTAT)];
	struct pc_scripted_kernel k;

	if (mc == PC_MINCORE_MAPPED_ONLY)
		return;

	kernel_for(&k, mc, cs, nw);
	k.modes_mincore = PC_MINCORE_UNKNOWN;
	k.modes_cachestat = PC_CACHESTAT_UNKNOWN;
	for (int kind = 0; kind < KIND_COUNT; kind++) {
		for (int fi = 0; fi < NFLAGS; fi++) {
			struct pc_residency *r = NULL;
			struct world w;
			int ret;

			world_new(&w, &k, (enum kind)kind, TABLE_SIZE, table_pattern);
			world_snapshot(&w);
			ret = pc_residency_on(w.b, w.fd, 0, 0, flag_sets[fi], &r);
			if (ret == 0 && pc_residency_quality(r) == PC_QUALITY_EXACT) {
				CHECK(pc_residency_resident(r) == truth_count(&w, 0, w.npages),
				      "modes unknown, truly mincore %s, cachestat %s, nowait %s, "
				      "%s, flags %#x: EXACT with %llu resident, truth %llu",
				      pc_mincore_mode_name(mc), pc_cachestat_mode_name(cs),
				      pc_nowait_mode_name(nw), kind_name[kind], flag_sets[fi],
				      (unsigned long long)pc_residency_resident(r),
				      (unsigned long long)truth_count(&w, 0, w.npages));
				for (uint64_t p = 0; !(flag_sets[fi] & PC_RES_COUNT_ONLY) && p < w.npages; p++)
					CHECK(pc_residency_test(r, p) == w.truth[p], "page %llu",
					      (unsigned long long)p);
			}
			if (ret == 0 && pc_residency_perturbed(r) == 0) {
				for (uint64_t p = 0; p < w.npages; p++)
					CHECK(pc_scripted_resident(w.file, p) == w.truth[p],
					      "modes unknown, nowait %s: page %llu changed, "
					      "perturbed 0", pc_nowait_mode_name(nw),
					      (unsigned long long)p);
			}
			pc_residency_free(r);
			world_free(&w);
		}
	}
}
END_TEST

/* ---- detection, then residency, on one scripted kernel ---------------------- */

enum caller {
	CALLER_ROOT,            /* privileged, as_nobody works */
	CALLER_USER,            /* unprivileged: as_nobody -EPERM */
	CALLER_ROOT_NO_SWITCH,  /* privileged, but as_nobody -EPERM */
	CALLER_COUNT
};

static const char *caller_name[CALLER_COUNT] = { "root", "user", "root-no-switch" };

/* What the strategy is told, as the detector finds it on kernel k. */
static void detect_into(struct pc_scripted_kernel *k)
{
	struct pc_sfile_opts o = { 0 };
	struct pc_scripted *s;
	struct pc_backend *b;
	struct pc_sfile *sys;

	ck_assert_int_eq(pc_scripted_new(k, &s), 0);
	b = pc_scripted_backend(s);
	o.size = (UINT64_C(2) << 20) + 123;
	o.fs = DISK;
	o.gate[PC_SCRIPTED_SELF] = k->caller_privileged;
	o.predict[0] = o.predict[1] = -1;
	sys = pc_scripted_file_new(s, &o);
	ck_assert_ptr_nonnull(sys);
	pc_scripted_set_resident(sys, 0, 1);
	pc_scripted_set_system_file(s, sys);
	k->modes_mincore = pc_detect_mincore_on(b);
	k->modes_cachestat = pc_detect_cachestat_on(b);
	k->fs[DISK].reported_nowait = pc_detect_nowait_on(b, DISK);
	pc_scripted_free(s);
	ck_assert_int_ge(k->modes_mincore, 0);
	ck_assert_int_ge(k->modes_cachestat, 0);
	ck_assert_int_ge(k->fs[DISK].reported_nowait, 0);
}

/* _i: variant x caller. The modes come from the detector, as they do on
 * the real kernel; the oracle knows the truth (and treats a NOWAIT mode the
 * detector could not find as unknown). */
START_TEST(detected_modes_then_residency)
{
	int mc = mincore_modes[_i % NMINCORE];
	int cs = cachestat_modes[(_i / NMINCORE) % NCACHESTAT];
	int nw = nowait_modes[(_i / (NMINCORE * NCACHESTAT)) % NNOWAIT];
	enum caller c = (enum caller)(_i / (NMINCORE * NCACHESTAT * NNOWAIT));
	struct pc_scripted_kernel k;
	int told_nw;

	pc_scripted_kernel_init(&k, mc, cs, nw);
	k.caller_privileged = c != CALLER_USER;
	k.as_nobody_error = c == CALLER_ROOT ? 0 : -EPERM;
	detect_into(&k);
	told_nw = k.fs[DISK].reported_nowait == PC_NOWAIT_UNKNOWN ? PC_NOWAIT_UNKNOWN : nw;
	for (int kind = 0; kind < KIND_COUNT; kind++) {
		for (int fi = 0; fi < NFLAGS; fi++) {
			struct world w;
			char what[256];

			world_new(&w, &k, (enum kind)kind, TABLE_SIZE, table_pattern);
			pc_scripted_set_mapped(w.file, 5, 1);
			pc_scripted_set_mapped(w.file, 1030, 1);
			snprintf(what, sizeof(what),
				 "mincore %s, cachestat %s, nowait %s, %s (detected %s/%s/%s), %s, "
				 "flags %#x", pc_mincore_mode_name(mc), pc_cachestat_mode_name(cs),
				 pc_nowait_mode_name(nw), caller_name[c],
				 pc_mincore_mode_name(k.modes_mincore),
				 pc_cachestat_mode_name(k.modes_cachestat),
				 pc_nowait_mode_name(k.fs[DISK].reported_nowait), kind_name[kind],
				 flag_sets[fi]);
			check_call(&w, mc, cs, told_nw, gate_of(&k, (enum kind)kind), flag_sets[fi],
				   0, 0, 0, w.npages, what);
			world_free(&w);
		}
	}
}
END_TEST

/* ---- readahead that reaches further than one page ------------------------- */

/* A destructive kernel whose FADV_RANDOM still reads ahead 8 pages (or
 * completes a while later): probing from the last page to the first keeps
 * every answer true. */
START_TEST(destructive_probe_true_with_wide_readahead)
{
	const unsigned int ras[] = { 1, 2, 8, 64 };
	const unsigned int delays[] = { 0, 3 };

	for (size_t i = 0; i < sizeof(ras) / sizeof(ras[0]); i++) {
		for (size_t d = 0; d < sizeof(delays) / sizeof(delays[0]); d++) {
			struct pc_scripted_kernel k;
			struct world w;
			char what[128];

			kernel_for(&k, PC_MINCORE_GATED_FAKED, PC_CACHESTAT_GATED,
				   PC_NOWAIT_DESTRUCTIVE);
			k.fs[DISK].ra_random = ras[i];
			k.fs[DISK].ra_delay = delays[d];
			world_new(&w, &k, KIND_FOREIGN_0644, TABLE_SIZE, table_pattern);
			snprintf(what, sizeof(what), "readahead %u pages, delay %u", ras[i], delays[d]);
			check_call(&w, PC_MINCORE_GATED_FAKED, PC_CACHESTAT_GATED,
				   PC_NOWAIT_DESTRUCTIVE, 0, PC_RES_ALLOW_PERTURB, 0, 0,
				   0, w.npages, what);
			world_free(&w);
		}
	}
}
END_TEST

/* After a destructive scan, the missed pages are what came in: the caller
 * learns the truth before, and the side effect is the missed pages. */
START_TEST(destructive_probe_caches_only_missed_pages)
{
	struct pc_scripted_kernel k;
	struct pc_residency *r;
	struct world w;

	kernel_for(&k, PC_MINCORE_GATED_FAKED, PC_CACHESTAT_GATED, PC_NOWAIT_DESTRUCTIVE);
	world_new(&w, &k, KIND_FOREIGN_0644, TABLE_SIZE, table_pattern);
	world_snapshot(&w);
	ck_assert_int_eq(pc_residency_on(w.b, w.fd, UINT64_C(1000) * PS, UINT64_C(10) * PS,
					 PC_RES_ALLOW_PERTURB, &r), 0);
	ck_assert_int_eq(pc_residency_perturbed(r), 1);
	for (uint64_t p = 0; p < w.npages; p++) {
		int inside = p >= 1000 && p < 1010;

		CHECK(pc_scripted_resident(w.file, p) == (inside ? 1 : w.truth[p]), "page %llu",
		      (unsigned long long)p);
	}
	pc_residency_free(r);
	world_free(&w);
}
END_TEST

/* ---- the per-file probe decides, not the predicate ------------------------- */

/* A predicate that is wrong both ways (FUSE, LSMs): on a gated-faked kernel
 * the beyond-EOF probe still tells faked from true. */
START_TEST(probe_decides_over_a_wrong_predicate)
{
	for (int gate = 0; gate <= 1; gate++) {
		struct pc_scripted_kernel k;
		struct pc_sfile_opts o = { 0 };
		struct pc_residency *r;
		struct pc_bfile *fd;
		struct pc_scripted *s;
		struct pc_sfile *file;

		kernel_for(&k, PC_MINCORE_GATED_FAKED, PC_CACHESTAT_ABSENT, PC_NOWAIT_DESTRUCTIVE);
		ck_assert_int_eq(pc_scripted_new(&k, &s), 0);
		o.size = 100 * PS;
		o.fs = DISK;
		o.gate[PC_SCRIPTED_SELF] = gate;
		o.predict[PC_SCRIPTED_SELF] = !gate;
		o.predict[PC_SCRIPTED_NOBODY] = -1;
		file = pc_scripted_file_new(s, &o);
		for (uint64_t p = 0; p < 100; p += 3)
			pc_scripted_set_resident(file, p, 1);
		ck_assert_int_eq(pc_scripted_open(s, file, 0, &fd), 0);
		ck_assert_int_eq(pc_residency_on(pc_scripted_backend(s), fd, 0, 0, 0, &r), 0);
		if (gate) {
			/* the kernel reveals it though the predicate says no: EXACT */
			ck_assert_int_eq(pc_residency_quality(r), PC_QUALITY_EXACT);
			ck_assert_uint_eq(pc_residency_resident(r), 34);
		} else {
			ck_assert_int_eq(pc_residency_quality(r), PC_QUALITY_UNKNOWN);
		}
		pc_residency_free(r);
		pc_scripted_free(s);
	}
}
END_TEST

/* ---- flags ------------------------------------------------------------------ */

START_TEST(unknown_flag_bits_are_einval)
{
	const unsigned int bad[] = { 1u << 5, 1u << 15, 1u << 31, PC_RES_COUNT_ONLY | (1u << 7) };
	struct pc_scripted_kernel k;
	struct world w;

	kernel_for(&k, PC_MINCORE_FULL, PC_CACHESTAT_OPEN, PC_NOWAIT_CLEAN);
	world_new(&w, &k, KIND_OWNED, 10 * PS, table_pattern);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct pc_residency *r = (struct pc_residency *)&w;

		pc_scripted_reset_counts(w.s);
		ck_assert_int_eq(pc_residency_on(w.b, w.fd, 0, 0, bad[i], &r), -EINVAL);
		ck_assert_ptr_eq(r, (struct pc_residency *)&w);
		ck_assert_uint_eq(pc_scripted_calls(w.s, PC_SOP_MINCORE), 0);
		ck_assert_uint_eq(pc_scripted_calls(w.s, PC_SOP_PROBE), 0);
	}
	world_free(&w);
}
END_TEST

START_TEST(force_mincore_on_hidden_file_is_eopnotsupp)
{
	const int modes[] = { PC_MINCORE_GATED_FAKED, PC_MINCORE_GATED_MAPPED };

	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		struct pc_scripted_kernel k;
		struct pc_residency *r = NULL;
		struct world w;

		kernel_for(&k, modes[i], PC_CACHESTAT_GATED, PC_NOWAIT_CLEAN);
		world_new(&w, &k, KIND_FOREIGN_0644, 64 * PS, table_pattern);
		ck_assert_int_eq(pc_residency_on(w.b, w.fd, 0, 0, PC_RES_FORCE_MINCORE, &r),
				 -EOPNOTSUPP);
		ck_assert_ptr_null(r);
		ck_assert_uint_eq(pc_scripted_calls(w.s, PC_SOP_PROBE), 0);
		world_free(&w);
	}
}
END_TEST

/* ---- ranges ----------------------------------------------------------------- */

static int every_third(uint64_t p)
{
	return p % 3 == 0;
}

struct range_case {
	uint64_t offset, length;
	uint64_t first, npages;
};

/* A file of 10 pages and 100 bytes (11 pages), gate passing, FULL kernel. */
START_TEST(offset_and_length_are_clamped)
{
	const uint64_t size = 10 * PS + 100;
	const struct range_case cases[] = {
		{ 0, 0, 0, 11 },                          /* 0 = to EOF */
		{ PS - 1, 0, 0, 11 },                     /* offset rounds down */
		{ 3 * PS + 5, 1, 3, 1 },                  /* one byte: its page */
		{ 3 * PS, 2 * PS, 3, 2 },
		{ 3 * PS + 4000, 200, 3, 2 },             /* two bytes each side of a page edge */
		{ 9 * PS, 100 * PS, 9, 2 },               /* length past EOF: clamped */
		{ 10 * PS + 99, 1, 10, 1 },               /* the last byte */
		{ 10 * PS + 100, 0, 10, 1 },              /* at EOF, inside the last page */
		{ 11 * PS, 0, 11, 0 },                    /* past EOF: empty */
		{ 1000 * PS, 5, 1000, 0 },
		{ PS, UINT64_MAX, 1, 10 },                /* offset + length overflows */
		{ UINT64_MAX - 10, 100, UINT64_MAX / PS, 0 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		for (int force = 0; force < 3; force++) {
			const unsigned int flags[] = { 0, PC_RES_FORCE_MINCORE, PC_RES_FORCE_NOWAIT };
			struct pc_scripted_kernel k;
			struct pc_residency *r = NULL;
			struct world w;
			int ret;

			kernel_for(&k, PC_MINCORE_FULL, PC_CACHESTAT_OPEN, PC_NOWAIT_CLEAN);
			world_new(&w, &k, KIND_OWNED, size, every_third);
			world_snapshot(&w);
			ret = pc_residency_on(w.b, w.fd, cases[i].offset, cases[i].length, flags[force],
					      &r);
			CHECK(ret == 0, "case %zu flags %#x: %d", i, flags[force], ret);
			CHECK(pc_residency_npages(r) == cases[i].npages,
			      "case %zu (offset %llu length %llu): %llu pages, want %llu", i,
			      (unsigned long long)cases[i].offset,
			      (unsigned long long)cases[i].length,
			      (unsigned long long)pc_residency_npages(r),
			      (unsigned long long)cases[i].npages);
			if (cases[i].npages)
				CHECK(pc_residency_first_page(r) == cases[i].first,
				      "case %zu: first page %llu, want %llu", i,
				      (unsigned long long)pc_residency_first_page(r),
				      (unsigned long long)cases[i].first);
			ck_assert_uint_eq(pc_residency_resident(r),
					  truth_count(&w, cases[i].first, cases[i].npages));
			for (uint64_t p = cases[i].first; p < cases[i].first + cases[i].npages; p++)
				CHECK(pc_residency_test(r, p) == w.truth[p], "case %zu: page %llu", i,
				      (unsigned long long)p);
			/* pages outside the result */
			ck_assert_int_eq(pc_residency_test(r, cases[i].first + cases[i].npages),
					 -ERANGE);
			if (cases[i].first)
				ck_assert_int_eq(pc_residency_test(r, cases[i].first - 1), -ERANGE);
			/* nothing past EOF was probed */
			{
				const struct pc_scripted_probe *log;
				size_t nlog = pc_scripted_probe_log(w.s, &log);

				for (size_t j = 0; j < nlog; j++)
					CHECK(log[j].page < 11, "case %zu: probed page %llu", i,
					      (unsigned long long)log[j].page);
			}
			pc_residency_free(r);
			world_free(&w);
		}
	}
}
END_TEST

/* Files of 0 bytes, 1 byte and one page plus one byte. */
START_TEST(tiny_files)
{
	const uint64_t sizes[] = { 0, 1, PS, PS + 1 };

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		for (int kind = 0; kind < KIND_COUNT; kind++) {
			struct pc_scripted_kernel k;
			struct pc_residency *r = NULL;
			struct world w;
			uint64_t n = (sizes[i] + PS - 1) / PS;

			kernel_for(&k, PC_MINCORE_GATED_FAKED, PC_CACHESTAT_GATED, PC_NOWAIT_CLEAN);
			world_new(&w, &k, (enum kind)kind, sizes[i], every_third);
			world_snapshot(&w);
			ck_assert_int_eq(pc_residency_on(w.b, w.fd, 0, 0, 0, &r), 0);
			ck_assert_uint_eq(pc_residency_npages(r), n);
			ck_assert_uint_eq(pc_residency_resident(r), truth_count(&w, 0, n));
			if (n)
				ck_assert_int_eq(pc_residency_quality(r), PC_QUALITY_EXACT);
			for (uint64_t p = 0; p < n; p++)
				CHECK(pc_residency_test(r, p) == w.truth[p], "size %llu: page %llu",
				      (unsigned long long)sizes[i], (unsigned long long)p);
			pc_residency_free(r);
			world_free(&w);
		}
	}
}
END_TEST

START_TEST(file_types)
{
	struct pc_scripted_kernel k;
	struct pc_sfile_opts o = { 0 };
	struct pc_residency *r = NULL;
	struct pc_scripted *s;
	struct pc_sfile *blk, *fifo;
	struct pc_bfile *fd;

	kernel_for(&k, PC_MINCORE_FULL, PC_CACHESTAT_OPEN, PC_NOWAIT_CLEAN);
	ck_assert_int_eq(pc_scripted_new(&k, &s), 0);
	o.fs = DISK;
	o.gate[0] = 1;
	o.predict[0] = o.predict[1] = -1;
	o.size = 0;
	o.type = PC_BFILE_OTHER;
	fifo = pc_scripted_file_new(s, &o);
	o.size = 32 * PS;
	o.type = PC_BFILE_BLOCK;
	blk = pc_scripted_file_new(s, &o);
	pc_scripted_set_resident(blk, 31, 1);

	ck_assert_int_eq(pc_scripted_open(s, fifo, 0, &fd), 0);
	ck_assert_int_eq(pc_residency_on(pc_scripted_backend(s), fd, 0, 0, 0, &r), -EINVAL);
	ck_assert_ptr_null(r);
	ck_assert_uint_eq(pc_scripted_calls(s, PC_SOP_PROBE), 0);
	ck_assert_int_eq(pc_scripted_open(s, blk, 0, &fd), 0);
	ck_assert_int_eq(pc_residency_on(pc_scripted_backend(s), fd, 0, 0, 0, &r), 0);
	ck_assert_uint_eq(pc_residency_npages(r), 32);
	ck_assert_uint_eq(pc_residency_resident(r), 1);
	ck_assert_int_eq(pc_residency_test(r, 31), 1);
	pc_residency_free(r);
	pc_scripted_free(s);
}
END_TEST

/* ---- the run iterator ------------------------------------------------------- */

static int pat_first_last(uint64_t p) { return p == 0 || p == 199; }
static int pat_all(uint64_t p) { (void)p; return 1; }
static int pat_none(uint64_t p) { (void)p; return 0; }
static int pat_alternating(uint64_t p) { return p % 2 == 1; }
static int pat_middle(uint64_t p) { return p >= 60 && p < 140; }
static int pat_word_edges(uint64_t p)
{
	return (p >= 62 && p < 66) || (p >= 127 && p < 129) || p == 192;
}

struct pattern {
	const char *name;
	int (*fn)(uint64_t);
};

static const struct pattern patterns[] = {
	{ "first-and-last", pat_first_last },
	{ "all", pat_all },
	{ "none", pat_none },
	{ "alternating", pat_alternating },
	{ "middle", pat_middle },
	{ "word-edges", pat_word_edges },
};

#define NPATTERNS (int)(sizeof(patterns) / sizeof(patterns[0]))

/* Walk the runs: maximal, in order, inside the result, and together exactly
 * the resident pages. */
static void check_runs(const struct pc_residency *r, int (*fn)(uint64_t), const char *what)
{
	uint64_t first = pc_residency_first_page(r), n = pc_residency_npages(r);
	uint64_t covered = 0, prev_end = 0, p;
	unsigned char *seen = calloc(n ? (size_t)n : 1, 1);
	struct pc_run run;
	int ret, nruns = 0;

	ck_assert_ptr_nonnull(seen);
	for (p = first; (ret = pc_residency_next_run(r, p, &run)) > 0; p = run.page + run.npages) {
		CHECK(run.npages > 0, "%s: empty run", what);
		CHECK(run.page >= p, "%s: run at %llu before %llu", what,
		      (unsigned long long)run.page, (unsigned long long)p);
		CHECK(run.page >= first && run.page + run.npages <= first + n,
		      "%s: run %llu+%llu outside the result", what,
		      (unsigned long long)run.page, (unsigned long long)run.npages);
		CHECK(nruns == 0 || run.page > prev_end, "%s: runs %llu and %llu touch",
		      what, (unsigned long long)prev_end, (unsigned long long)run.page);
		for (uint64_t q = run.page; q < run.page + run.npages; q++)
			seen[q - first] = 1;
		covered += run.npages;
		prev_end = run.page + run.npages;
		CHECK(++nruns < 10000, "%s: endless runs", what);
	}
	ck_assert_int_eq(ret, 0);
	for (uint64_t q = 0; q < n; q++)
		CHECK(seen[q] == fn(first + q), "%s: page %llu in runs %d, truth %d", what,
		      (unsigned long long)(first + q), seen[q], fn(first + q));
	ck_assert_uint_eq(covered, pc_residency_resident(r));
	/* from past the end: none; from before the start: the first run */
	ck_assert_int_eq(pc_residency_next_run(r, first + n, &run), 0);
	ck_assert_int_eq(pc_residency_next_run(r, UINT64_MAX, &run), 0);
	free(seen);
}

/* _i: pattern x source (mincore, clean probes, cachestat bisection) */
START_TEST(runs_follow_the_pattern)
{
	const struct pattern *pt = &patterns[_i % NPATTERNS];
	const unsigned int flags[] = { PC_RES_FORCE_MINCORE, PC_RES_FORCE_NOWAIT,
				       PC_RES_FORCE_CACHESTAT, 0 };
	unsigned int fl = flags[_i / NPATTERNS];
	const uint64_t windows[][2] = { { 0, 0 }, { 50, 100 }, { 63, 2 }, { 199, 1 } };

	for (size_t wi = 0; wi < sizeof(windows) / sizeof(windows[0]); wi++) {
		struct pc_scripted_kernel k;
		struct pc_residency *r = NULL;
		struct world w;
		char what[128];
		struct pc_run run;

		kernel_for(&k, PC_MINCORE_GATED_FAKED, PC_CACHESTAT_GATED, PC_NOWAIT_CLEAN);
		world_new(&w, &k, KIND_OWNED, 200 * PS, pt->fn);
		snprintf(what, sizeof(what), "%s, flags %#x, window %llu+%llu", pt->name, fl,
			 (unsigned long long)windows[wi][0], (unsigned long long)windows[wi][1]);
		ck_assert_int_eq(pc_residency_on(w.b, w.fd, windows[wi][0] * PS,
						 windows[wi][1] * PS, fl, &r), 0);
		check_runs(r, pt->fn, what);
		if (pc_residency_first_page(r) > 0) {
			/* from before the window: the window's first run, clipped */
			int ret = pc_residency_next_run(r, 0, &run);

			ck_assert_int_ge(ret, 0);
			if (ret)
				ck_assert_uint_ge(run.page, pc_residency_first_page(r));
		}
		pc_residency_free(r);
		world_free(&w);
	}
}
END_TEST

START_TEST(runs_need_a_bitmap)
{
	struct pc_scripted_kernel k;
	struct pc_residency *r = NULL;
	struct world w;
	struct pc_run run;

	kernel_for(&k, PC_MINCORE_FULL, PC_CACHESTAT_OPEN, PC_NOWAIT_CLEAN);
	world_new(&w, &k, KIND_OWNED, 20 * PS, pat_all);
	ck_assert_int_eq(pc_residency_on(w.b, w.fd, 0, 0, PC_RES_COUNT_ONLY, &r), 0);
	ck_assert_uint_eq(pc_residency_resident(r), 20);
	ck_assert_int_eq(pc_residency_next_run(r, 0, &run), -ENODATA);
	ck_assert_int_eq(pc_residency_test(r, 0), -ENODATA);
	ck_assert_int_eq(pc_residency_test(r, 20), -ERANGE);
	pc_residency_free(r);
	world_free(&w);
}
END_TEST

/* ---- a file that shrinks between fstat and the scan ------------------------- */

struct shrink_case {
	const char *name;
	int mincore, cachestat, nowait;
	enum kind kind;
	unsigned int flags;
};

static const struct shrink_case shrink_cases[] = {
	{ "adaptive", PC_MINCORE_GATED_FAKED, PC_CACHESTAT_GATED, PC_NOWAIT_DESTRUCTIVE, KIND_OWNED, 0 },
	{ "mincore", PC_MINCORE_FULL, PC_CACHESTAT_ABSENT, PC_NOWAIT_DESTRUCTIVE, KIND_OWNED,
	  PC_RES_FORCE_MINCORE },
	{ "cachestat-bitmap", PC_MINCORE_FULL, PC_CACHESTAT_OPEN, PC_NOWAIT_CLEAN, KIND_OWNED,
	  PC_RES_FORCE_CACHESTAT },
	{ "cachestat-count", PC_MINCORE_FULL, PC_CACHESTAT_OPEN, PC_NOWAIT_CLEAN, KIND_OWNED,
	  PC_RES_COUNT_ONLY },
	{ "clean-probe", PC_MINCORE_GATED_FAKED, PC_CACHESTAT_GATED, PC_NOWAIT_CLEAN,
	  KIND_FOREIGN_0644, 0 },
	{ "destructive-probe", PC_MINCORE_GATED_FAKED, PC_CACHESTAT_GATED, PC_NOWAIT_DESTRUCTIVE,
	  KIND_FOREIGN_0644, PC_RES_ALLOW_PERTURB },
	{ "unknown", PC_MINCORE_GATED_FAKED, PC_CACHESTAT_GATED, PC_NOWAIT_DESTRUCTIVE,
	  KIND_FOREIGN_0644, 0 },
};

static uint64_t shrink_limit;

static int below_shrink_limit(uint64_t p)
{
	return p < shrink_limit;
}

/* _i: case x new size (400 pages, 0 bytes) */
START_TEST(shrinking_file_reads_not_resident_past_new_end)
{
	const struct shrink_case *c = &shrink_cases[_i / 2];
	uint64_t new_pages = _i % 2 ? 0 : 400;
	struct pc_scripted_kernel k;
	struct pc_residency *r = NULL;
	struct world w;

	kernel_for(&k, c->mincore, c->cachestat, c->nowait);
	world_new(&w, &k, c->kind, 1000 * PS, pat_all);
	pc_scripted_shrink_after_fstat(w.file, new_pages * PS);
	ck_assert_int_eq(pc_residency_on(w.b, w.fd, 0, 0, c->flags, &r), 0);
	/* the result covers the size seen at the start */
	ck_assert_uint_eq(pc_residency_npages(r), 1000);
	ck_assert_uint_eq(pc_residency_file_size(r), 1000 * PS);
	ck_assert_uint_eq(pc_scripted_file_size(w.file), new_pages * PS);
	if (pc_residency_quality(r) == PC_QUALITY_EXACT) {
		CHECK(pc_residency_resident(r) == new_pages, "%s: %llu resident, want %llu",
		      c->name, (unsigned long long)pc_residency_resident(r),
		      (unsigned long long)new_pages);
		if (!(c->flags & PC_RES_COUNT_ONLY)) {
			for (uint64_t p = 0; p < 1000; p++)
				CHECK(pc_residency_test(r, p) == (p < new_pages),
				      "%s: page %llu reads %d", c->name,
				      (unsigned long long)p, pc_residency_test(r, p));
			shrink_limit = new_pages;
			check_runs(r, below_shrink_limit, c->name);
		}
	} else {
		ck_assert_str_eq(c->name, "unknown");
		ck_assert_uint_eq(pc_residency_resident(r), 0);
	}
	pc_residency_free(r);
	world_free(&w);
}
END_TEST

/* ---- size ------------------------------------------------------------------- */

/* A sparse 16 GiB file: mincore is asked in bounded windows, the answer is
 * exact, and the strategy's memory does not grow with a page vector. */
START_TEST(sparse_16g_file_in_bounded_windows)
{
	const uint64_t npages = (UINT64_C(16) << 30) / PS;
	const uint64_t hot[] = { 0, 511, 512, 123457, npages / 2, npages - 1 };
	const unsigned int flags[] = { 0, PC_RES_FORCE_MINCORE, PC_RES_COUNT_ONLY };

	for (size_t fi = 0; fi < sizeof(flags) / sizeof(flags[0]); fi++) {
		struct pc_scripted_kernel k;
		struct pc_residency *r = NULL;
		struct world w;

		kernel_for(&k, PC_MINCORE_GATED_FAKED, PC_CACHESTAT_GATED, PC_NOWAIT_DESTRUCTIVE);
		world_new(&w, &k, KIND_OWNED, npages * PS, NULL);
		for (size_t i = 0; i < sizeof(hot) / sizeof(hot[0]); i++)
			pc_scripted_set_resident(w.file, hot[i], 1);
		ck_assert_int_eq(pc_residency_on(w.b, w.fd, 0, 0, flags[fi], &r), 0);
		ck_assert_int_eq(pc_residency_quality(r), PC_QUALITY_EXACT);
		ck_assert_uint_eq(pc_residency_npages(r), npages);
		ck_assert_uint_eq(pc_residency_resident(r), sizeof(hot) / sizeof(hot[0]));
		if (!(flags[fi] & PC_RES_COUNT_ONLY))
			for (size_t i = 0; i < sizeof(hot) / sizeof(hot[0]); i++)
				ck_assert_int_eq(pc_residency_test(r, hot[i]), 1);
		/* a window of at most 1 Mi pages (1 MiB of vector) */
		CHECK(pc_scripted_max_mincore_pages(w.s) <= (UINT64_C(1) << 20),
		      "flags %#x: one mincore call of %llu pages", flags[fi],
		      (unsigned long long)pc_scripted_max_mincore_pages(w.s));
		pc_residency_free(r);
		world_free(&w);
	}
}
END_TEST

/* The verdict's probe past EOF must land past the last page's largest
 * folio, whatever the page size: a PMD folio is ps / 8 pages (2 MiB on
 * 4 KiB pages, 512 MiB on 64 KiB), and a cached last page in one makes
 * mincore read 1 for every page up to its end, as a fake would. A file the
 * caller owns, where cachestat is missing and a probe would perturb, is
 * answered exactly from mincore at every size. */
START_TEST(verdict_probe_clears_the_last_pmd_folio)
{
	static const long sizes[] = { 4096, 16384, 65536 };
	const uint64_t npages = 100;

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct pc_scripted_kernel k;
		struct pc_residency *r = NULL;
		struct world w;
		uint64_t want = 0;

		kernel_for(&k, PC_MINCORE_GATED_FAKED, PC_CACHESTAT_ABSENT, PC_NOWAIT_DESTRUCTIVE);
		k.page_size = sizes[i];
		k.pmd_tail = 1;
		world_new(&w, &k, KIND_OWNED, npages * (uint64_t)sizes[i], every_third);
		pc_scripted_set_resident(w.file, npages - 1, 1);
		for (uint64_t p = 0; p < npages; p++)
			want += pc_scripted_resident(w.file, p);
		ck_assert_int_eq(pc_residency_on(w.b, w.fd, 0, 0, 0, &r), 0);
		CHECK(pc_residency_quality(r) == PC_QUALITY_EXACT,
		      "%ld-byte pages: quality %d for the caller's own file", sizes[i],
		      pc_residency_quality(r));
		ck_assert_uint_eq(pc_residency_resident(r), want);
		ck_assert_int_eq(pc_residency_test(r, npages - 1), 1);
		ck_assert_uint_eq(pc_scripted_calls(w.s, PC_SOP_PROBE), 0);
		pc_residency_free(r);
		world_free(&w);
	}
}
END_TEST

/* A sparse 16 GiB file where cachestat is missing (before 6.5): on the
 * memory filesystem, whose holes are never cached, mincore is asked only
 * about the windows that hold data; on a disk, about every page. The
 * answer is exact either way. */
START_TEST(sparse_memfs_file_mincores_only_its_data)
{
	const uint64_t npages = (UINT64_C(16) << 30) / PS;
	const uint64_t hot[] = { 0, 1, npages / 2 - 1, npages / 2, npages - 3 };
	const unsigned int flags[] = { 0, PC_RES_FORCE_MINCORE };
	const int fss[] = { PC_SCRIPTED_MEMFS, DISK };

	for (size_t fi = 0; fi < 2 * (sizeof(flags) / sizeof(flags[0])); fi++) {
		struct pc_sfile_opts o = { 0 };
		struct pc_scripted_kernel k;
		struct pc_residency *r = NULL;
		struct pc_scripted *s;
		struct pc_bfile *fd;
		struct pc_sfile *file;
		int fs = fss[fi / 2];
		uint64_t asked;

		kernel_for(&k, PC_MINCORE_GATED_FAKED, PC_CACHESTAT_ABSENT, PC_NOWAIT_CLEAN);
		ck_assert_int_eq(pc_scripted_new(&k, &s), 0);
		o.size = npages * PS;
		o.fs = fs;
		o.gate[PC_SCRIPTED_SELF] = 1;
		o.predict[0] = o.predict[1] = -1;
		file = pc_scripted_file_new(s, &o);
		ck_assert_ptr_nonnull(file);
		for (size_t i = 0; i < (sizeof(hot) / sizeof(hot[0])); i++)
			pc_scripted_set_resident(file, hot[i], 1);
		ck_assert_int_eq(pc_scripted_open(s, file, 0, &fd), 0);
		ck_assert_int_eq(pc_residency_on(pc_scripted_backend(s), fd, 0, 0, flags[fi % 2], &r),
				 0);
		ck_assert_int_eq(pc_residency_quality(r), PC_QUALITY_EXACT);
		ck_assert_uint_eq(pc_residency_resident(r), (sizeof(hot) / sizeof(hot[0])));
		for (size_t i = 0; i < (sizeof(hot) / sizeof(hot[0])); i++)
			ck_assert_int_eq(pc_residency_test(r, hot[i]), 1);
		asked = pc_scripted_mincore_pages(s);
		if (fs == PC_SCRIPTED_MEMFS)
			/* three runs of data: a window each, and one page of the
			 * verdict's probe past EOF */
			CHECK(asked <= 3 * 16384 + 1, "flags %#x: %llu pages asked of mincore",
			      flags[fi % 2], (unsigned long long)asked);
		else
			CHECK(asked >= npages, "flags %#x: only %llu pages asked on a disk",
			      flags[fi % 2], (unsigned long long)asked);
		pc_residency_free(r);
		pc_scripted_backend(s)->ops->close(pc_scripted_backend(s), fd);
		ck_assert_uint_eq(pc_scripted_open_handles(s), 0);
		ck_assert_uint_eq(pc_scripted_misuse(s), 0);
		pc_scripted_free(s);
	}
}
END_TEST

/* ---- failures on the way ---------------------------------------------------- */

/* When the private description cannot be opened, nothing is probed and the
 * answer is not EXACT. */
START_TEST(reopen_failure_is_not_an_answer)
{
	struct pc_scripted_kernel k;
	struct pc_residency *r = NULL;
	struct world w;
	int ret;

	kernel_for(&k, PC_MINCORE_GATED_FAKED, PC_CACHESTAT_GATED, PC_NOWAIT_CLEAN);
	world_new(&w, &k, KIND_FOREIGN_0644, 64 * PS, every_third);
	pc_scripted_inject(w.s, PC_SOP_REOPEN_RANDOM, -EMFILE);
	ret = pc_residency_on(w.b, w.fd, 0, 0, 0, &r);
	CHECK(ret < 0 || pc_residency_quality(r) == PC_QUALITY_UNKNOWN,
	      "reopen failed, yet %d / quality %d", ret, ret == 0 ? pc_residency_quality(r) : -1);
	ck_assert_uint_eq(pc_scripted_calls(w.s, PC_SOP_PROBE), 0);
	pc_residency_free(r);
	world_free(&w);
}
END_TEST

/* Errors of the backend come back as errors, with nothing leaked. */
START_TEST(backend_errors_propagate)
{
	const enum pc_scripted_op ops[] = { PC_SOP_FSTAT, PC_SOP_MINCORE, PC_SOP_MODES };

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		struct pc_scripted_kernel k;
		struct pc_residency *r = NULL;
		struct world w;

		kernel_for(&k, PC_MINCORE_FULL, PC_CACHESTAT_ABSENT, PC_NOWAIT_DESTRUCTIVE);
		world_new(&w, &k, KIND_OWNED, 64 * PS, every_third);
		pc_scripted_inject(w.s, ops[i], -EIO);
		ck_assert_int_eq(pc_residency_on(w.b, w.fd, 0, 0, 0, &r), -EIO);
		ck_assert_ptr_null(r);
		world_free(&w);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("residency-table");
	TCase *tt = tcase_create("table");
	TCase *tp = tcase_create("probing");
	TCase *tr = tcase_create("ranges");
	TCase *tx = tcase_create("edges");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tt, 300);
	tcase_add_loop_test(tt, residency_table, 0, NMINCORE * NCACHESTAT * NNOWAIT);
	tcase_add_loop_test(tt, residency_table_window, 0, NMINCORE * NCACHESTAT * NNOWAIT);
	tcase_add_loop_test(tt, residency_never_wrong_when_modes_unknown, 0,
			    NMINCORE * NCACHESTAT * NNOWAIT);
	tcase_add_loop_test(tt, detected_modes_then_residency, 0,
			    NMINCORE * NCACHESTAT * NNOWAIT * CALLER_COUNT);
	suite_add_tcase(s, tt);

	tcase_add_test(tp, destructive_probe_true_with_wide_readahead);
	tcase_add_test(tp, destructive_probe_caches_only_missed_pages);
	tcase_add_test(tp, probe_decides_over_a_wrong_predicate);
	tcase_add_test(tp, reopen_failure_is_not_an_answer);
	suite_add_tcase(s, tp);

	tcase_add_test(tr, unknown_flag_bits_are_einval);
	tcase_add_test(tr, force_mincore_on_hidden_file_is_eopnotsupp);
	tcase_add_test(tr, offset_and_length_are_clamped);
	tcase_add_test(tr, tiny_files);
	tcase_add_test(tr, file_types);
	tcase_add_loop_test(tr, runs_follow_the_pattern, 0, NPATTERNS * 4);
	tcase_add_test(tr, runs_need_a_bitmap);
	suite_add_tcase(s, tr);

	tcase_set_timeout(tx, 300);
	tcase_add_loop_test(tx, shrinking_file_reads_not_resident_past_new_end, 0,
			    (int)(sizeof(shrink_cases) / sizeof(shrink_cases[0])) * 2);
	tcase_add_test(tx, sparse_16g_file_in_bounded_windows);
	tcase_add_test(tx, sparse_memfs_file_mincores_only_its_data);
	tcase_add_test(tx, verdict_probe_clears_the_last_pmd_folio);
	tcase_add_test(tx, backend_errors_propagate);
	suite_add_tcase(s, tx);

	sr = srunner_create(s);
	/* The rows are computations on the scripted backend and the model:
	 * no process state to keep apart, so one process runs them all
	 * unless CK_FORK says otherwise. A fork per row costs more than the
	 * rows do under AddressSanitizer, whose leak check runs at every
	 * exit (residency-table: 35 s forked, 2.4 s in one process); leaks
	 * are still checked, once, when this process exits. */
	if (!getenv("CK_FORK"))
		srunner_set_fork_status(sr, CK_NOFORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
