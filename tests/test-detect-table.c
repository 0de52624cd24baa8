/* SPDX-License-Identifier: MIT */
/*
 * The detector's decision table (doc/kernels.md section 5) on the scripted
 * backend: every mincore, cachestat and NOWAIT variant, seen by a root
 * caller that can switch to uid 65534, by an ordinary user, and by a
 * privileged caller that cannot switch. No expectation here depends on the
 * kernel the tests run on.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "backend.h"
#include "scripted-backend.h"

#define DISK 1  /* dirfd of the scripted disk filesystem */

/* ck_assert_* records a mark point (a write) per call: per-page checks use
 * this, which costs nothing while it holds. */
#define CHECK(cond, ...) do { if (!(cond)) ck_abort_msg(__VA_ARGS__); } while (0)

/* Who runs the detector. */
enum caller {
	CALLER_ROOT,            /* privileged, as_nobody works */
	CALLER_USER,            /* unprivileged: as_nobody -EPERM */
	CALLER_ROOT_NO_SWITCH,  /* privileged, but as_nobody -EPERM */
	CALLER_COUNT
};

static const char *caller_name[CALLER_COUNT] = { "root", "user", "root-no-switch" };

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

struct world {
	struct pc_scripted *s;
	struct pc_backend *b;
	struct pc_sfile *sys;       /* root-owned 0644, cached (libc) */
	unsigned char sys_truth[640];
};

static void apply_caller(struct pc_scripted_kernel *k, enum caller c)
{
	k->caller_privileged = c != CALLER_USER;
	k->as_nobody_error = c == CALLER_ROOT ? 0 : -EPERM;
}

/* A kernel and its system file: 2 MiB + 123 bytes, page 0 (the ELF header)
 * and a scattering of others cached. */
static void world_init(struct world *w, const struct pc_scripted_kernel *k)
{
	struct pc_sfile_opts o = { 0 };
	int ret;

	ret = pc_scripted_new(k, &w->s);
	ck_assert_int_eq(ret, 0);
	w->b = pc_scripted_backend(w->s);
	o.size = (UINT64_C(2) << 20) + 123;
	o.fs = DISK;
	o.gate[PC_SCRIPTED_SELF] = k->caller_privileged;
	o.gate[PC_SCRIPTED_NOBODY] = 0;
	o.predict[0] = o.predict[1] = -1;
	w->sys = pc_scripted_file_new(w->s, &o);
	ck_assert_ptr_nonnull(w->sys);
	ck_assert_uint_le(pc_scripted_file_npages(w->sys), sizeof(w->sys_truth));
	for (uint64_t p = 0; p < pc_scripted_file_npages(w->sys); p++)
		if (p == 0 || p % 7 == 3)
			pc_scripted_set_resident(w->sys, p, 1);
	for (uint64_t p = 0; p < pc_scripted_file_npages(w->sys); p++)
		w->sys_truth[p] = (unsigned char)pc_scripted_resident(w->sys, p);
	pc_scripted_set_system_file(w->s, w->sys);
}

/* Detection is side-effect free: nothing probed, nothing written outside
 * its own scratch files, the system file's cache untouched, no handle
 * left open or misused. */
static void assert_side_effect_free(struct world *w, const char *what)
{
	ck_assert_msg(pc_scripted_calls(w->s, PC_SOP_PROBE) == 0, "%s: probed", what);
	ck_assert_msg(pc_scripted_foreign_changes(w->s) == 0, "%s: changed a foreign file", what);
	for (uint64_t p = 0; p < pc_scripted_file_npages(w->sys); p++)
		CHECK(pc_scripted_resident(w->sys, p) == w->sys_truth[p],
		      "%s: system file page %llu changed", what, (unsigned long long)p);
	ck_assert_msg(pc_scripted_open_handles(w->s) == 0, "%s: %u handles left open", what,
		      pc_scripted_open_handles(w->s));
	ck_assert_msg(pc_scripted_misuse(w->s) == 0, "%s: a closed handle was used", what);
}

/* ---- mincore ---------------------------------------------------------------- */

static int expected_mincore(int mode, enum caller c)
{
	/* A privileged caller that cannot take the unprivileged view passes the
	 * gate itself: FULL and GATED_* look alike to it. MAPPED_ONLY and
	 * USELESS are the same for everyone, and step 1 shows them. */
	if (c == CALLER_ROOT_NO_SWITCH && mode != PC_MINCORE_MAPPED_ONLY &&
	    mode != PC_MINCORE_USELESS)
		return PC_MINCORE_UNKNOWN;
	return mode;
}

/* _i: mincore mode x cachestat mode x caller */
START_TEST(mincore_mode_is_classified)
{
	int mode = mincore_modes[_i % NMINCORE];
	int cs = cachestat_modes[(_i / NMINCORE) % NCACHESTAT];
	enum caller c = (enum caller)(_i / (NMINCORE * NCACHESTAT));
	struct pc_scripted_kernel k;
	struct world w;
	char what[128];
	int got, want = expected_mincore(mode, c);

	pc_scripted_kernel_init(&k, mode, cs, PC_NOWAIT_DESTRUCTIVE);
	apply_caller(&k, c);
	world_init(&w, &k);
	snprintf(what, sizeof(what), "mincore %s, cachestat %s, %s", pc_mincore_mode_name(mode),
		 pc_cachestat_mode_name(cs), caller_name[c]);

	got = pc_detect_mincore_on(w.b);
	ck_assert_msg(got == want, "%s: detected %d (%s), want %s", what, got,
		      got >= 0 ? pc_mincore_mode_name(got) : "error", pc_mincore_mode_name(want));
	assert_side_effect_free(&w, what);
	/* step 2 needs the unprivileged view whenever step 1 saw page-cache
	 * semantics: a privileged caller must have asked for it */
	if (c == CALLER_ROOT && mode != PC_MINCORE_USELESS && mode != PC_MINCORE_MAPPED_ONLY)
		ck_assert_msg(pc_scripted_calls(w.s, PC_SOP_AS_NOBODY) >= 1,
			      "%s: never took the unprivileged view", what);
	pc_scripted_free(w.s);
}
END_TEST

/* The same probe twice gives the same answer (nothing it did changed it). */
START_TEST(mincore_detection_is_repeatable)
{
	struct pc_scripted_kernel k;
	struct world w;

	for (int i = 0; i < NMINCORE; i++) {
		pc_scripted_kernel_init(&k, mincore_modes[i], PC_CACHESTAT_GATED,
					PC_NOWAIT_DESTRUCTIVE);
		world_init(&w, &k);
		ck_assert_int_eq(pc_detect_mincore_on(w.b), mincore_modes[i]);
		ck_assert_int_eq(pc_detect_mincore_on(w.b), mincore_modes[i]);
		assert_side_effect_free(&w, pc_mincore_mode_name(mincore_modes[i]));
		pc_scripted_free(w.s);
	}
}
END_TEST

/* Step 2's page past EOF lies beyond any folio on every page size: where
 * a PMD folio that holds the system file's last page (cached) covers the
 * pages after EOF to its end (page size / 8 pages: 32 MiB on 16 KiB pages,
 * 512 MiB on 64 KiB), a page 2 MiB past EOF reads 1 and a truthful kernel
 * would be taken for one that fakes. _i: page size x mincore mode. */
START_TEST(mincore_probe_passes_any_folio)
{
	static const long sizes[] = { 4096, 16384, 65536 };
	static const int modes[] = { PC_MINCORE_FULL, PC_MINCORE_GATED_FAKED,
				     PC_MINCORE_GATED_MAPPED };
	long ps = sizes[_i % 3];
	int mode = modes[_i / 3];
	struct pc_scripted_kernel k;
	struct world w;
	uint64_t last;
	char what[96];
	int got;

	pc_scripted_kernel_init(&k, mode, PC_CACHESTAT_GATED, PC_NOWAIT_DESTRUCTIVE);
	apply_caller(&k, CALLER_ROOT);
	k.page_size = ps;
	k.pmd_tail = 1;
	world_init(&w, &k);
	last = pc_scripted_file_npages(w.sys) - 1;
	pc_scripted_set_resident(w.sys, last, 1);
	w.sys_truth[last] = 1;
	snprintf(what, sizeof(what), "%ld-byte pages, mincore %s", ps, pc_mincore_mode_name(mode));
	got = pc_detect_mincore_on(w.b);
	ck_assert_msg(got == mode, "%s: detected %d (%s)", what, got,
		      got >= 0 ? pc_mincore_mode_name(got) : "error");
	assert_side_effect_free(&w, what);
	pc_scripted_free(w.s);
}
END_TEST

/* Without a system file, step 2 cannot run: page-cache kernels must not be
 * given a definite mode. */
START_TEST(mincore_without_system_file_is_not_guessed)
{
	const int modes[] = { PC_MINCORE_FULL, PC_MINCORE_GATED_FAKED, PC_MINCORE_GATED_MAPPED };
	struct pc_scripted_kernel k;
	struct world w;

	for (int c = 0; c < CALLER_COUNT; c++) {
		for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
			int got;

			pc_scripted_kernel_init(&k, modes[i], PC_CACHESTAT_OPEN,
						PC_NOWAIT_CLEAN);
			apply_caller(&k, (enum caller)c);
			world_init(&w, &k);
			pc_scripted_set_system_file(w.s, NULL);
			got = pc_detect_mincore_on(w.b);
			ck_assert_msg(got < 0 || got == PC_MINCORE_UNKNOWN,
				      "%s, %s, no system file: detected %d",
				      pc_mincore_mode_name(modes[i]), caller_name[c], got);
			ck_assert_uint_eq(pc_scripted_open_handles(w.s), 0);
			pc_scripted_free(w.s);
		}
	}
}
END_TEST

/* No scratch memfd (step 1 impossible): an error or UNKNOWN, never a mode. */
START_TEST(mincore_without_scratch_is_not_guessed)
{
	struct pc_scripted_kernel k;
	struct world w;

	for (int i = 0; i < NMINCORE; i++) {
		int got;

		pc_scripted_kernel_init(&k, mincore_modes[i], PC_CACHESTAT_OPEN, PC_NOWAIT_CLEAN);
		k.fs[PC_SCRIPTED_MEMFS].scratch_error = -EMFILE;
		world_init(&w, &k);
		got = pc_detect_mincore_on(w.b);
		ck_assert_msg(got < 0 || got == PC_MINCORE_UNKNOWN, "%s, no memfd: detected %d",
			      pc_mincore_mode_name(mincore_modes[i]), got);
		pc_scripted_free(w.s);
	}
}
END_TEST

/* A mincore error in step 2 is reported, not read as an answer. */
START_TEST(mincore_error_is_not_an_answer)
{
	struct pc_scripted_kernel k;
	struct world w;
	int got;

	pc_scripted_kernel_init(&k, PC_MINCORE_GATED_FAKED, PC_CACHESTAT_GATED, PC_NOWAIT_CLEAN);
	world_init(&w, &k);
	pc_scripted_inject(w.s, PC_SOP_MINCORE, -ENOMEM);
	got = pc_detect_mincore_on(w.b);
	ck_assert_msg(got < 0 || got == PC_MINCORE_UNKNOWN, "mincore failing: detected %d", got);
	ck_assert_uint_eq(pc_scripted_open_handles(w.s), 0);
	pc_scripted_free(w.s);
}
END_TEST

/* ---- cachestat -------------------------------------------------------------- */

static int expected_cachestat(int mode, enum caller c)
{
	/* a caller that passes the gate and cannot drop it cannot tell GATED
	 * from OPEN */
	if (c == CALLER_ROOT_NO_SWITCH && (mode == PC_CACHESTAT_GATED || mode == PC_CACHESTAT_OPEN))
		return PC_CACHESTAT_UNKNOWN;
	return mode;
}

/* _i: cachestat mode x mincore mode x caller */
START_TEST(cachestat_mode_is_classified)
{
	int mode = cachestat_modes[_i % NCACHESTAT];
	int mc = mincore_modes[(_i / NCACHESTAT) % NMINCORE];
	enum caller c = (enum caller)(_i / (NMINCORE * NCACHESTAT));
	struct pc_scripted_kernel k;
	struct world w;
	char what[128];
	int got, want = expected_cachestat(mode, c);

	pc_scripted_kernel_init(&k, mc, mode, PC_NOWAIT_DESTRUCTIVE);
	apply_caller(&k, c);
	world_init(&w, &k);
	snprintf(what, sizeof(what), "cachestat %s, mincore %s, %s", pc_cachestat_mode_name(mode),
		 pc_mincore_mode_name(mc), caller_name[c]);

	got = pc_detect_cachestat_on(w.b);
	ck_assert_msg(got == want, "%s: detected %d (%s), want %s", what, got,
		      got >= 0 ? pc_cachestat_mode_name(got) : "error",
		      pc_cachestat_mode_name(want));
	assert_side_effect_free(&w, what);
	/* only invalid-flag probes: no real query was needed */
	ck_assert_msg(pc_scripted_cachestat_queries(w.s) == 0, "%s: %lu real cachestat queries",
		      what, pc_scripted_cachestat_queries(w.s));
	pc_scripted_free(w.s);
}
END_TEST

/* A cachestat gate that only the system file shows: the own memfd passes,
 * so only the second probe, as nobody, can tell GATED from OPEN. */
START_TEST(cachestat_gate_seen_only_as_nobody)
{
	struct pc_scripted_kernel k;
	struct world w;

	pc_scripted_kernel_init(&k, PC_MINCORE_GATED_FAKED, PC_CACHESTAT_GATED, PC_NOWAIT_CLEAN);
	world_init(&w, &k);
	ck_assert_int_eq(pc_detect_cachestat_on(w.b), PC_CACHESTAT_GATED);
	ck_assert_uint_ge(pc_scripted_calls(w.s, PC_SOP_AS_NOBODY), 1);
	ck_assert_uint_ge(pc_scripted_calls(w.s, PC_SOP_CACHESTAT), 2);
	pc_scripted_free(w.s);
}
END_TEST

START_TEST(cachestat_without_scratch_is_not_guessed)
{
	struct pc_scripted_kernel k;
	struct world w;

	for (int i = 0; i < NCACHESTAT; i++) {
		int got;

		pc_scripted_kernel_init(&k, PC_MINCORE_GATED_FAKED, cachestat_modes[i],
					PC_NOWAIT_CLEAN);
		k.fs[PC_SCRIPTED_MEMFS].scratch_error = -EMFILE;
		world_init(&w, &k);
		got = pc_detect_cachestat_on(w.b);
		ck_assert_msg(got < 0 || got == PC_CACHESTAT_UNKNOWN, "%s, no memfd: detected %d",
			      pc_cachestat_mode_name(cachestat_modes[i]), got);
		pc_scripted_free(w.s);
	}
}
END_TEST

START_TEST(cachestat_without_system_file_is_not_guessed)
{
	const int modes[] = { PC_CACHESTAT_GATED, PC_CACHESTAT_OPEN };
	struct pc_scripted_kernel k;
	struct world w;

	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		int got;

		pc_scripted_kernel_init(&k, PC_MINCORE_GATED_FAKED, modes[i], PC_NOWAIT_CLEAN);
		world_init(&w, &k);
		pc_scripted_set_system_file(w.s, NULL);
		got = pc_detect_cachestat_on(w.b);
		ck_assert_msg(got < 0 || got == PC_CACHESTAT_UNKNOWN,
			      "%s, no system file: detected %d", pc_cachestat_mode_name(modes[i]), got);
		pc_scripted_free(w.s);
	}
}
END_TEST

/* ---- NOWAIT ----------------------------------------------------------------- */

/* Whether an owned file's residency shows through mincore on this kernel. */
static int owned_visible(int mincore)
{
	return mincore == PC_MINCORE_FULL || mincore == PC_MINCORE_GATED_FAKED ||
	       mincore == PC_MINCORE_GATED_MAPPED;
}

/*
 * Where the detector can watch the page (its own scratch file, or a cold
 * page it can see), it must find the truth. Where it cannot, it may say
 * UNKNOWN, or UNSUPPORTED (which EOPNOTSUPP shows without watching, given a
 * file to probe), but never the opposite of the truth: CLEAN on a
 * destructive filesystem would let pc_residency probe without asking and
 * without saying it perturbed the cache.
 */
static void check_nowait(int got, int truth, int can_watch, int can_probe, const char *what)
{
	if (can_watch || (can_probe && truth == PC_NOWAIT_UNSUPPORTED)) {
		ck_assert_msg(got == truth, "%s: detected %d (%s), want %s", what, got,
			      got >= 0 ? pc_nowait_mode_name(got) : "error",
			      pc_nowait_mode_name(truth));
		return;
	}
	ck_assert_msg(got == truth || got == PC_NOWAIT_UNKNOWN,
		      "%s: detected %d (%s) though mincore cannot show the page; truth %s", what,
		      got, got >= 0 ? pc_nowait_mode_name(got) : "error",
		      pc_nowait_mode_name(truth));
}

/* _i: NOWAIT behaviour x mincore mode x caller (root / user) */
START_TEST(nowait_mode_is_classified_with_scratch_file)
{
	int truth = nowait_modes[_i % NNOWAIT];
	int mc = mincore_modes[(_i / NNOWAIT) % NMINCORE];
	enum caller c = (_i / (NNOWAIT * NMINCORE)) ? CALLER_USER : CALLER_ROOT;
	struct pc_scripted_kernel k;
	struct world w;
	char what[128];
	int got;

	pc_scripted_kernel_init(&k, mc, PC_CACHESTAT_ABSENT, truth);
	apply_caller(&k, c);
	world_init(&w, &k);
	snprintf(what, sizeof(what), "nowait %s, mincore %s, %s, O_TMPFILE",
		 pc_nowait_mode_name(truth), pc_mincore_mode_name(mc), caller_name[c]);

	got = pc_detect_nowait_on(w.b, DISK);
	/* the miss can be watched with NOWAIT probes themselves: exact on
	 * every mincore variant */
	check_nowait(got, truth, 1, 1, what);
	/* only its own scratch file was written, and it was closed */
	ck_assert_msg(pc_scripted_foreign_changes(w.s) == 0, "%s: wrote a foreign file", what);
	ck_assert_msg(pc_scripted_open_handles(w.s) == 0, "%s: handles left open", what);
	ck_assert_msg(pc_scripted_misuse(w.s) == 0, "%s: handle misused", what);
	ck_assert_msg(pc_scripted_calls(w.s, PC_SOP_FIND_COLD_PAGE) == 0,
		      "%s: looked for someone else's file though a scratch file worked", what);
	pc_scripted_free(w.s);
}
END_TEST

/* The same with a cachestat the caller may use on its own files. */
START_TEST(nowait_mode_with_cachestat_available)
{
	struct pc_scripted_kernel k;
	struct world w;
	char what[128];

	for (int m = 0; m < NMINCORE; m++) {
		for (int n = 0; n < NNOWAIT; n++) {
			int got;

			pc_scripted_kernel_init(&k, mincore_modes[m], PC_CACHESTAT_GATED,
						nowait_modes[n]);
			world_init(&w, &k);
			snprintf(what, sizeof(what), "nowait %s, mincore %s, cachestat gated",
				 pc_nowait_mode_name(nowait_modes[n]),
				 pc_mincore_mode_name(mincore_modes[m]));
			got = pc_detect_nowait_on(w.b, DISK);
			check_nowait(got, nowait_modes[n], 1, 1, what);
			pc_scripted_free(w.s);
		}
	}
}
END_TEST

/* Readahead completes later than the probe returns: without cachestat
 * (which counts pages still being read) polling must wait for it (the
 * scripted clock is pause_ms); with it, no wait is needed. */
START_TEST(nowait_destructive_seen_when_readahead_is_slow)
{
	struct pc_scripted_kernel k;
	struct world w;

	pc_scripted_kernel_init(&k, PC_MINCORE_GATED_FAKED, PC_CACHESTAT_ABSENT,
				PC_NOWAIT_DESTRUCTIVE);
	k.fs[DISK].ra_delay = 4;
	world_init(&w, &k);
	ck_assert_int_eq(pc_detect_nowait_on(w.b, DISK), PC_NOWAIT_DESTRUCTIVE);
	ck_assert_uint_ge(pc_scripted_calls(w.s, PC_SOP_PAUSE_MS), 4);
	pc_scripted_free(w.s);

	pc_scripted_kernel_init(&k, PC_MINCORE_GATED_FAKED, PC_CACHESTAT_GATED,
				PC_NOWAIT_DESTRUCTIVE);
	k.fs[DISK].ra_delay = 4;
	world_init(&w, &k);
	ck_assert_int_eq(pc_detect_nowait_on(w.b, DISK), PC_NOWAIT_DESTRUCTIVE);
	ck_assert_uint_lt(pc_scripted_calls(w.s, PC_SOP_PAUSE_MS), 4);
	pc_scripted_free(w.s);
}
END_TEST

/* A clean filesystem is watched for a while before it is called clean. */
START_TEST(nowait_clean_is_watched_before_it_is_believed)
{
	struct pc_scripted_kernel k;
	struct world w;

	pc_scripted_kernel_init(&k, PC_MINCORE_FULL, PC_CACHESTAT_ABSENT, PC_NOWAIT_CLEAN);
	world_init(&w, &k);
	ck_assert_int_eq(pc_detect_nowait_on(w.b, DISK), PC_NOWAIT_CLEAN);
	/* time passed, and the missed page was looked at again after it (by
	 * mincore or by another probe) */
	ck_assert_uint_ge(pc_scripted_calls(w.s, PC_SOP_PAUSE_MS), 1);
	ck_assert_uint_ge(pc_scripted_calls(w.s, PC_SOP_MINCORE) +
				  pc_scripted_calls(w.s, PC_SOP_PROBE), 3);
	pc_scripted_free(w.s);
}
END_TEST

/* _i: NOWAIT behaviour x mincore mode. A read-only directory: no scratch
 * file; one cold page of a visible file there is probed instead. */
START_TEST(nowait_mode_from_a_cold_page_when_no_scratch_file)
{
	int truth = nowait_modes[_i % NNOWAIT];
	int mc = mincore_modes[_i / NNOWAIT];
	struct pc_scripted_kernel k;
	struct pc_sfile_opts o = { 0 };
	struct pc_sfile *cold;
	struct world w;
	char what[128];
	uint64_t before, after;
	int got;

	pc_scripted_kernel_init(&k, mc, PC_CACHESTAT_ABSENT, truth);
	k.fs[DISK].scratch_error = -EROFS;
	world_init(&w, &k);
	o.size = 64 * 4096;
	o.fs = DISK;
	o.gate[PC_SCRIPTED_SELF] = 1; /* the caller's own file */
	o.predict[0] = o.predict[1] = -1;
	cold = pc_scripted_file_new(w.s, &o);
	ck_assert_ptr_nonnull(cold);
	for (uint64_t p = 0; p < 64; p++)
		if (p != 40)
			pc_scripted_set_resident(cold, p, 1);
	pc_scripted_config(w.s)->fs[DISK].cold_file = cold;
	snprintf(what, sizeof(what), "nowait %s, mincore %s, read-only dir",
		 pc_nowait_mode_name(truth), pc_mincore_mode_name(mc));
	before = pc_scripted_count_resident(cold);

	got = pc_detect_nowait_on(w.b, DISK);
	/* where mincore shows no file, there is no cold page it can vouch for */
	check_nowait(got, truth, owned_visible(mc), owned_visible(mc), what);
	after = pc_scripted_count_resident(cold);
	/* that one page may come in, nothing else */
	ck_assert_msg(after <= before + 1, "%s: %llu pages came in", what,
		      (unsigned long long)(after - before));
	ck_assert_msg(pc_scripted_open_handles(w.s) == 0, "%s: handles left open", what);
	pc_scripted_free(w.s);
}
END_TEST

/* No scratch file and nothing cold to watch: UNKNOWN, and no probe of
 * anything. */
START_TEST(nowait_unknown_without_scratch_or_cold_page)
{
	struct pc_scripted_kernel k;
	struct world w;

	for (int n = 0; n < NNOWAIT; n++) {
		pc_scripted_kernel_init(&k, PC_MINCORE_GATED_FAKED, PC_CACHESTAT_GATED,
					nowait_modes[n]);
		k.fs[DISK].scratch_error = -EACCES;
		world_init(&w, &k);
		ck_assert_int_eq(pc_detect_nowait_on(w.b, DISK), PC_NOWAIT_UNKNOWN);
		ck_assert_uint_eq(pc_scripted_calls(w.s, PC_SOP_PROBE), 0);
		pc_scripted_free(w.s);
	}
}
END_TEST

/* A filesystem where eviction drops nothing: no miss can be made, so a
 * supported NOWAIT cannot be classified; unsupported still shows. */
START_TEST(nowait_unknown_when_eviction_does_nothing)
{
	struct pc_scripted_kernel k;
	struct world w;

	for (int n = 0; n < NNOWAIT; n++) {
		int got;

		pc_scripted_kernel_init(&k, PC_MINCORE_GATED_FAKED, PC_CACHESTAT_GATED,
					nowait_modes[n]);
		k.fs[DISK].evict_works = 0;
		world_init(&w, &k);
		got = pc_detect_nowait_on(w.b, DISK);
		ck_assert_msg(got == (nowait_modes[n] == PC_NOWAIT_UNSUPPORTED ? PC_NOWAIT_UNSUPPORTED
									 : PC_NOWAIT_UNKNOWN),
			      "nowait %s without eviction: detected %d",
			      pc_nowait_mode_name(nowait_modes[n]), got);
		pc_scripted_free(w.s);
	}
}
END_TEST

/* tmpfs: the memory filesystem answers EOPNOTSUPP. */
START_TEST(nowait_unsupported_on_memory_fs)
{
	struct pc_scripted_kernel k;
	struct world w;

	pc_scripted_kernel_init(&k, PC_MINCORE_GATED_FAKED, PC_CACHESTAT_GATED,
				PC_NOWAIT_DESTRUCTIVE);
	world_init(&w, &k);
	ck_assert_int_eq(pc_detect_nowait_on(w.b, PC_SCRIPTED_MEMFS), PC_NOWAIT_UNSUPPORTED);
	pc_scripted_free(w.s);
}
END_TEST

/* Two filesystems of one kernel are told apart. */
START_TEST(nowait_is_per_filesystem)
{
	struct pc_scripted_kernel k;
	struct world w;

	pc_scripted_kernel_init(&k, PC_MINCORE_GATED_FAKED, PC_CACHESTAT_GATED, PC_NOWAIT_CLEAN);
	k.fs[2].nowait = PC_NOWAIT_DESTRUCTIVE;
	k.fs[3].nowait = PC_NOWAIT_UNSUPPORTED;
	world_init(&w, &k);
	ck_assert_int_eq(pc_detect_nowait_on(w.b, 1), PC_NOWAIT_CLEAN);
	ck_assert_int_eq(pc_detect_nowait_on(w.b, 2), PC_NOWAIT_DESTRUCTIVE);
	ck_assert_int_eq(pc_detect_nowait_on(w.b, 3), PC_NOWAIT_UNSUPPORTED);
	pc_scripted_free(w.s);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("detect-table");
	TCase *tm = tcase_create("mincore");
	TCase *tc = tcase_create("cachestat");
	TCase *tn = tcase_create("nowait");
	SRunner *sr;
	int failed;

	tcase_add_loop_test(tm, mincore_mode_is_classified, 0, NMINCORE * NCACHESTAT * CALLER_COUNT);
	tcase_add_test(tm, mincore_detection_is_repeatable);
	tcase_add_loop_test(tm, mincore_probe_passes_any_folio, 0, 9);
	tcase_add_test(tm, mincore_without_system_file_is_not_guessed);
	tcase_add_test(tm, mincore_without_scratch_is_not_guessed);
	tcase_add_test(tm, mincore_error_is_not_an_answer);
	suite_add_tcase(s, tm);

	tcase_add_loop_test(tc, cachestat_mode_is_classified, 0,
			    NCACHESTAT * NMINCORE * CALLER_COUNT);
	tcase_add_test(tc, cachestat_gate_seen_only_as_nobody);
	tcase_add_test(tc, cachestat_without_scratch_is_not_guessed);
	tcase_add_test(tc, cachestat_without_system_file_is_not_guessed);
	suite_add_tcase(s, tc);

	tcase_add_loop_test(tn, nowait_mode_is_classified_with_scratch_file, 0,
			    NNOWAIT * NMINCORE * 2);
	tcase_add_test(tn, nowait_mode_with_cachestat_available);
	tcase_add_test(tn, nowait_destructive_seen_when_readahead_is_slow);
	tcase_add_test(tn, nowait_clean_is_watched_before_it_is_believed);
	tcase_add_loop_test(tn, nowait_mode_from_a_cold_page_when_no_scratch_file, 0,
			    NNOWAIT * NMINCORE);
	tcase_add_test(tn, nowait_unknown_without_scratch_or_cold_page);
	tcase_add_test(tn, nowait_unknown_when_eviction_does_nothing);
	tcase_add_test(tn, nowait_unsupported_on_memory_fs);
	tcase_add_test(tn, nowait_is_per_filesystem);
	suite_add_tcase(s, tn);

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
