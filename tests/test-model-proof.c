/* SPDX-License-Identifier: MIT */
/*
 * The detector and pc_residency()'s strategy, proven on the model
 * (include/pagecache/model.h) for every kernel variant: 5 mincore x 3 NOWAIT
 * x 4 cachestat modes, for privileged and unprivileged tasks, over owned,
 * foreign and writable files, with several residency patterns, flag sets and
 * ranges. The strategy is the library's own (detect.c, residency.c) running
 * on the model backend; the oracle below is written from doc/kernels.md alone:
 *  - the detectors name the variant, whoever asks;
 *  - EXACT answers equal the page cache as it was before the call, and come
 *    from a source that tells this task the truth about this file (never a
 *    faked or mapped-only mincore vector);
 *  - perturbed is set exactly when the strategy probed destructively, and
 *    then the cache changed only there; otherwise it did not change at all;
 *  - EXACT whenever a truthful side-effect-free answer exists, UNKNOWN only
 *    when none does and destructive probing was not allowed.
 * ck_assert writes a mark per call (CK_FORK=no), far too slow for the inner
 * loops: failures are counted, the first few printed, and asserted once.
 */
#include <check.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pagecache/model.h"
#include "model/model-private.h"

#define NOBODY 65534
#define STRANGER 1000
#define ALLCAPS (PCM_CAP_FOWNER | PCM_CAP_DAC_OVERRIDE)

/* The file: 47 pages and 100 bytes (48 pages, the last partial). */
#define FILE_PAGES 48
#define FILE_BYTES (UINT64_C(47) * 4096 + 100)
#define PS 4096

#define MAX_REPORTED 12

static const int mincore_modes[] = {
	PC_MINCORE_FULL, PC_MINCORE_GATED_FAKED, PC_MINCORE_GATED_MAPPED,
	PC_MINCORE_MAPPED_ONLY, PC_MINCORE_USELESS,
};
static const int nowait_modes[] = {
	PC_NOWAIT_UNSUPPORTED, PC_NOWAIT_CLEAN, PC_NOWAIT_DESTRUCTIVE,
};
static const int cachestat_modes[] = {
	PC_CACHESTAT_ABSENT, PC_CACHESTAT_BLOCKED, PC_CACHESTAT_GATED, PC_CACHESTAT_OPEN,
};

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

struct task_kind {
	const char *name;
	uint32_t uid;
	unsigned int caps;
	/* It can learn what other users see: root (a setfsuid helper) or an
	 * ordinary user. A non-root holder of CAP_FOWNER passes the gates on
	 * the system file and cannot switch: UNKNOWN is a right answer there. */
	int sees_policy;
};

static const struct task_kind task_kinds[] = {
	{ "root", 0, ALLCAPS, 1 },            /* privileged */
	{ "root-nocaps", 0, 0, 1 },           /* fsuid 0 without FOWNER, DAC_OVERRIDE */
	{ "nobody", NOBODY, 0, 1 },           /* unprivileged */
	{ "fowner", STRANGER + 1, PCM_CAP_FOWNER, 0 }, /* non-root with CAP_FOWNER */
};

enum file_kind {
	FILE_OWNED,          /* the task owns it, 0644 */
	FILE_OWNED_0444,     /* the owner passes the gate without a w bit */
	FILE_FOREIGN_0644,   /* someone else's, not writable */
	FILE_FOREIGN_0666,   /* someone else's, world-writable */
	FILE_ACL_WRITABLE,   /* someone else's 0644 with an ACL entry user:task:rw- */
	FILE_IMMUTABLE_0666, /* someone else's 0666, made immutable after it was opened
				(the fd may be open for writing: a writer passed it on) */
	FILE_KIND_COUNT
};

static const char *file_kind_name[FILE_KIND_COUNT] = {
	"owned", "owned-0444", "foreign-0644", "foreign-0666", "acl-writable",
	"immutable-0666",
};

/* Residency patterns over the file's pages. */
static int pattern_none(uint64_t p) { (void)p; return 0; }
static int pattern_all(uint64_t p) { (void)p; return 1; }
static int pattern_alternating(uint64_t p) { return p % 2 == 0; }
static int pattern_first(uint64_t p) { return p == 0; }
static int pattern_last(uint64_t p) { return p == FILE_PAGES - 1; }
static int pattern_middle_run(uint64_t p) { return p >= 20 && p < 28; }

static const struct {
	const char *name;
	int (*resident)(uint64_t p);
} patterns[] = {
	{ "none", pattern_none },
	{ "all", pattern_all },
	{ "alternating", pattern_alternating },
	{ "first-page", pattern_first },
	{ "last-page", pattern_last },
	{ "middle-run", pattern_middle_run },
};

static const unsigned int flag_sets[] = {
	0, PC_RES_COUNT_ONLY, PC_RES_ALLOW_PERTURB, PC_RES_COUNT_ONLY | PC_RES_ALLOW_PERTURB,
};

/* Byte ranges: the whole file, and pages 5..35 from an unaligned offset. */
static const struct {
	const char *name;
	uint64_t offset, length;
	uint64_t first, npages;
} ranges[] = {
	{ "whole", 0, 0, 0, FILE_PAGES },
	{ "pages-5-35", 5 * PS + 123, 30 * PS, 5, 31 },
};

struct variant {
	int mincore, nowait, cachestat;
};

struct tally {
	unsigned long detect_checked;
	unsigned long residency_checked;
	unsigned long failures;
	unsigned long writable_hidden_calls; /* the corner a strategy bug hid in */
	unsigned long exact, unknown, perturbed;
};

static struct tally tally;

/*
 * The corner where this proof found a strategy bug (fixed): on a
 * GATED_MAPPED kernel with the gated cachestat, the verdict asked
 * cachestat's invalid-flag probe through the caller's own fd, which
 * cachestat lets through when open for writing while mincore's gate looks
 * at the task's rights only. Counted, so that the proof is known to cover it.
 */
static int writable_but_hidden(const struct variant *v, struct pcm_fd *fd)
{
	return v->mincore == PC_MINCORE_GATED_MAPPED && v->cachestat == PC_CACHESTAT_GATED &&
	       fd->writable && pcm_can_do_mincore(pcm_fd_task(fd), pcm_fd_file(fd)) == 0;
}

static void failure(const char *what, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void failure(const char *what, const char *fmt, ...)
{
	va_list ap;

	if (tally.failures++ >= MAX_REPORTED)
		return;
	printf("FAIL %s: ", what);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

#define CHECK(cond, what, ...) do { if (!(cond)) failure(what, __VA_ARGS__); } while (0)

/* ---- one kernel variant ------------------------------------------------------ */

static void variant_name(const struct variant *v, char *buf, size_t size)
{
	snprintf(buf, size, "mincore %s, nowait %s, cachestat %s",
		 pc_mincore_mode_name(v->mincore), pc_nowait_mode_name(v->nowait),
		 pc_cachestat_mode_name(v->cachestat));
}

/* The detectors, as a task of this kind; they must not touch user files. */
static void prove_detectors(const struct variant *v, struct pcm_kernel *k, struct pcm_task *t,
			    int sees_policy, struct pcm_file *witness, const char *what)
{
	uint8_t before[FILE_PAGES];
	int got;

	for (uint64_t p = 0; p < FILE_PAGES; p++)
		before[p] = (uint8_t)pcm_file_page_state(witness, p);
	got = pcm_detect_mincore(t);
	CHECK(got == v->mincore || (!sees_policy && got == PC_MINCORE_UNKNOWN), what, "pcm_detect_mincore says %s",
	      got < 0 ? strerror(-got) : pc_mincore_mode_name(got));
	got = pcm_detect_nowait(t);
	CHECK(got == v->nowait, what, "pcm_detect_nowait says %s",
	      got < 0 ? strerror(-got) : pc_nowait_mode_name(got));
	got = pcm_detect_cachestat(t);
	CHECK(got == v->cachestat || (!sees_policy && got == PC_CACHESTAT_UNKNOWN), what, "pcm_detect_cachestat says %s",
	      got < 0 ? strerror(-got) : pc_cachestat_mode_name(got));
	for (uint64_t p = 0; p < FILE_PAGES; p++)
		CHECK(pcm_file_page_state(witness, p) == before[p], what,
		      "detection changed page %llu of a user file", (unsigned long long)p);
	CHECK(t->vmas == NULL, what, "detection left a mapping behind");
	CHECK(pcm_file_page_state(pcm_kernel_system_file(k), 0) ==
		      (PCM_PAGE_PRESENT | PCM_PAGE_UPTODATE),
	      what, "detection changed the system file");
	tally.detect_checked++;
}

static struct pcm_file *make_file(struct pcm_kernel *k, const struct task_kind *tk,
				  enum file_kind kind)
{
	uint32_t uid = STRANGER, mode = 0644;
	struct pcm_file *f = NULL;
	int ret;

	switch (kind) {
	case FILE_OWNED:
		uid = tk->uid;
		break;
	case FILE_OWNED_0444:
		uid = tk->uid;
		mode = 0444;
		break;
	case FILE_FOREIGN_0666:
	case FILE_IMMUTABLE_0666:
		mode = 0666;
		break;
	default:
		break;
	}
	ret = pcm_file_new(k, uid, uid, mode, FILE_PAGES, &f);
	if (ret == 0)
		ret = pcm_file_set(f, PCM_FILE_SIZE_BYTES, FILE_BYTES);
	if (ret == 0 && kind == FILE_ACL_WRITABLE)
		ret = pcm_file_set(f, PCM_FILE_ACL_WRITE_UID, tk->uid);
	ck_assert_int_eq(ret, 0);
	ck_assert_uint_eq(pcm_file_npages(f), FILE_PAGES);
	return f;
}

static void set_pattern(struct pcm_file *f, int (*resident)(uint64_t))
{
	for (uint64_t p = 0; p < FILE_PAGES; p++) {
		int ret = resident(p) ? pcm_file_cache(f, p) : pcm_file_drop(f, p);

		if (ret < 0)
			failure("set_pattern", "page %llu: %s", (unsigned long long)p,
				strerror(-ret));
	}
}

static unsigned int count_fds(const struct pcm_task *t)
{
	unsigned int n = 0;

	for (const struct pcm_fd *fd = t->fds; fd; fd = fd->next)
		n++;
	return n;
}

/* What the variant allows for this task, file and fd. */
struct allowance {
	int mincore_truthful;  /* mincore shows this task the page cache */
	int nowait_clean;      /* a side-effect-free probe exists */
	int cachestat_answers; /* cachestat answers this task for this fd */
	int destructive_probe; /* probing is possible but caches what it misses */
};

static struct allowance allowance_of(const struct variant *v, struct pcm_fd *fd)
{
	struct pcm_file *f = pcm_fd_file(fd);
	int gate = pcm_can_do_mincore(pcm_fd_task(fd), f) == 1;
	int writable = fd->writable;
	struct allowance a;

	a.mincore_truthful = v->mincore == PC_MINCORE_FULL ||
			     ((v->mincore == PC_MINCORE_GATED_FAKED ||
			       v->mincore == PC_MINCORE_GATED_MAPPED) && gate);
	a.nowait_clean = v->nowait == PC_NOWAIT_CLEAN && !(f->attrs & PCM_F_SHMEM);
	a.cachestat_answers = v->cachestat == PC_CACHESTAT_OPEN ||
			      (v->cachestat == PC_CACHESTAT_GATED && (gate || writable));
	a.destructive_probe = v->nowait == PC_NOWAIT_DESTRUCTIVE && !(f->attrs & PCM_F_SHMEM);
	return a;
}

/* One pc_residency() call, checked against the page cache before and after. */
static void prove_residency(const struct variant *v, struct pcm_fd *fd, unsigned int flags,
			    int ri, const char *what)
{
	struct pcm_file *f = pcm_fd_file(fd);
	struct pcm_task *t = pcm_fd_task(fd);
	uint64_t first = ranges[ri].first, n = ranges[ri].npages;
	struct allowance a = allowance_of(v, fd);
	int side_effect_free = a.mincore_truthful || a.nowait_clean || a.cachestat_answers;
	int want_perturbed = !side_effect_free && (flags & PC_RES_ALLOW_PERTURB) &&
			     a.destructive_probe;
	int want_exact = side_effect_free || want_perturbed;
	uint8_t state[FILE_PAGES], truth[FILE_PAGES];
	unsigned int fds = count_fds(t);
	struct pc_residency *r = NULL;
	uint64_t want_count = 0, missing = 0;
	int ret, quality, source, perturbed, changed = 0;

	for (uint64_t p = 0; p < FILE_PAGES; p++) {
		state[p] = (uint8_t)pcm_file_page_state(f, p);
		truth[p] = (uint8_t)pcm_file_resident(f, p);
		if (p >= first && p < first + n) {
			want_count += truth[p];
			missing += !truth[p];
		}
	}
	tally.residency_checked++;
	tally.writable_hidden_calls += (unsigned long)writable_but_hidden(v, fd);
	ret = pcm_residency(fd, ranges[ri].offset, ranges[ri].length, flags, &r);
	if (ret < 0) {
		failure(what, "pcm_residency returned %s", strerror(-ret));
		return;
	}
	quality = pc_residency_quality(r);
	source = pc_residency_source(r);
	perturbed = pc_residency_perturbed(r);
	CHECK(pc_residency_first_page(r) == first && pc_residency_npages(r) == n, what,
	      "range %llu+%llu, want %llu+%llu",
	      (unsigned long long)pc_residency_first_page(r),
	      (unsigned long long)pc_residency_npages(r), (unsigned long long)first,
	      (unsigned long long)n);
	CHECK(pc_residency_file_size(r) == FILE_BYTES, what, "file size %llu",
	      (unsigned long long)pc_residency_file_size(r));

	if (quality == PC_QUALITY_EXACT) {
		tally.exact++;
		CHECK(pc_residency_resident(r) == want_count, what,
		      "EXACT with %llu resident, the cache held %llu",
		      (unsigned long long)pc_residency_resident(r),
		      (unsigned long long)want_count);
		if (flags & PC_RES_COUNT_ONLY) {
			CHECK(pc_residency_test(r, first) == -ENODATA, what,
			      "a count-only answer has a bitmap");
		} else {
			for (uint64_t p = first; p < first + n; p++) {
				int got = pc_residency_test(r, p);

				if (got != truth[p]) {
					failure(what, "EXACT says page %llu is %d, the cache said %d",
						(unsigned long long)p, got, truth[p]);
					break;
				}
			}
		}
		/* The source must be one that tells this task the truth. */
		switch (source) {
		case PC_SOURCE_MINCORE:
			CHECK(a.mincore_truthful, what,
			      "EXACT from a mincore that hides this file (a faked or mapped vector)");
			break;
		case PC_SOURCE_CACHESTAT:
			CHECK(a.cachestat_answers, what,
			      "EXACT from cachestat, which does not answer this task");
			break;
		case PC_SOURCE_PREADV2:
		case PC_SOURCE_IO_URING:
			CHECK(a.nowait_clean || ((flags & PC_RES_ALLOW_PERTURB) &&
						 a.destructive_probe),
			      what, "EXACT from NOWAIT probes that were not allowed");
			break;
		default:
			failure(what, "EXACT from source %s", pc_source_name(source));
			break;
		}
	} else if (quality == PC_QUALITY_UNKNOWN) {
		tally.unknown++;
		CHECK(pc_residency_resident(r) == 0 && source == PC_SOURCE_NONE &&
			      perturbed == 0 && pc_residency_test(r, first) == -ENODATA,
		      what, "UNKNOWN with resident %llu, source %s, perturbed %d, a bitmap",
		      (unsigned long long)pc_residency_resident(r), pc_source_name(source),
		      perturbed);
	} else {
		failure(what, "quality %d", quality);
	}
	CHECK((quality == PC_QUALITY_EXACT) == want_exact, what,
	      "quality %s, want %s (mincore %s, nowait clean %d, cachestat %s, flags %#x)",
	      pc_quality_name(quality), want_exact ? "exact" : "unknown",
	      a.mincore_truthful ? "truthful" : "hidden", a.nowait_clean,
	      a.cachestat_answers ? "answers" : "refuses", flags);
	CHECK(perturbed == want_perturbed, what, "perturbed %d, want %d", perturbed,
	      want_perturbed);

	/* The cache after: unchanged, or (a destructive probe) every page of
	 * the range brought in, one per miss, and nothing outside it. */
	for (uint64_t p = 0; p < FILE_PAGES; p++) {
		int now = pcm_file_page_state(f, p);
		int in_range = p >= first && p < first + n;

		if (now != state[p])
			changed = 1;
		if (perturbed && in_range && !truth[p])
			CHECK(pcm_file_resident(f, p) == 1, what,
			      "destructive probe of missed page %llu did not cache it",
			      (unsigned long long)p);
		else
			CHECK(now == state[p], what, "page %llu changed from %#x to %#x%s",
			      (unsigned long long)p, state[p], now,
			      perturbed ? " outside the probed misses" : " without perturbed");
	}
	CHECK(!changed || perturbed, what, "the cache changed but perturbed is 0");
	CHECK(!perturbed || missing == 0 || changed, what,
	      "perturbed is 1 but nothing changed though %llu pages were missing",
	      (unsigned long long)missing);
	if (perturbed)
		tally.perturbed++;
	/* Nothing faulted, nothing left mapped or open. */
	CHECK(t->vmas == NULL, what, "a mapping was left behind");
	CHECK(count_fds(t) == fds, what, "%u fds open after the call, %u before", count_fds(t),
	      fds);
	pc_residency_free(r);
}

/* Every task, file kind, open mode, pattern, flag set and range on one variant. */
static void prove_variant(const struct variant *v)
{
	char vname[160];

	variant_name(v, vname, sizeof(vname));
	for (size_t ti = 0; ti < N_OF(task_kinds); ti++) {
		const struct task_kind *tk = &task_kinds[ti];
		struct pcm_kernel *k = NULL;
		struct pcm_task *t = NULL;
		struct pcm_file *files[FILE_KIND_COUNT];
		char what[400];

		ck_assert_int_eq(pcm_kernel_new(v->mincore, v->nowait, v->cachestat, &k), 0);
		ck_assert_int_eq(pcm_task_new(k, tk->uid, tk->uid, tk->caps, &t), 0);
		for (int kind = 0; kind < FILE_KIND_COUNT; kind++)
			files[kind] = make_file(k, tk, (enum file_kind)kind);
		set_pattern(files[0], pattern_alternating);
		snprintf(what, sizeof(what), "%s, %s: detect", vname, tk->name);
		prove_detectors(v, k, t, tk->sees_policy, files[0], what);

		for (int kind = 0; kind < FILE_KIND_COUNT; kind++) {
			for (int rw = 0; rw < 2; rw++) {
				struct pcm_fd *fd = NULL;

				if (pcm_open(t, files[kind], rw ? PCM_O_RDWR : PCM_O_RDONLY, &fd) < 0) {
					/* read-only must open: every file is world-readable */
					ck_assert_int_eq(rw, 1);
					continue;
				}
				if (kind == FILE_IMMUTABLE_0666)
					ck_assert_int_eq(pcm_file_set(files[kind], PCM_FILE_IMMUTABLE, 1), 0);
				for (size_t pi = 0; pi < N_OF(patterns); pi++) {
					for (size_t fi = 0; fi < N_OF(flag_sets); fi++) {
						for (size_t ri = 0; ri < N_OF(ranges); ri++) {
							set_pattern(files[kind], patterns[pi].resident);
							snprintf(what, sizeof(what),
								 "%s, %s, %s (%s fd), pattern %s, flags %#x, range %s",
								 vname, tk->name, file_kind_name[kind],
								 rw ? "rw" : "ro", patterns[pi].name,
								 flag_sets[fi], ranges[ri].name);
							prove_residency(v, fd, flag_sets[fi], (int)ri, what);
						}
					}
				}
				pcm_close(fd);
				if (kind == FILE_IMMUTABLE_0666)
					ck_assert_int_eq(pcm_file_set(files[kind], PCM_FILE_IMMUTABLE, 0), 0);
			}
		}
		pcm_kernel_free(k);
	}
}

START_TEST(every_variant_task_file_and_flag)
{
	struct variant v;

	memset(&tally, 0, sizeof(tally));
	for (size_t mi = 0; mi < N_OF(mincore_modes); mi++) {
		for (size_t ni = 0; ni < N_OF(nowait_modes); ni++) {
			for (size_t ci = 0; ci < N_OF(cachestat_modes); ci++) {
				v.mincore = mincore_modes[mi];
				v.nowait = nowait_modes[ni];
				v.cachestat = cachestat_modes[ci];
				prove_variant(&v);
			}
		}
	}
	printf("model-proof: %lu variants, %lu detector checks, %lu pc_residency combinations "
	       "(%lu exact, %lu unknown, %lu perturbed), %lu failures; "
	       "%lu calls with a writable fd on a hidden file\n",
	       (unsigned long)(N_OF(mincore_modes) * N_OF(nowait_modes) * N_OF(cachestat_modes)),
	       tally.detect_checked, tally.residency_checked, tally.exact, tally.unknown,
	       tally.perturbed, tally.failures, tally.writable_hidden_calls);
	fflush(stdout);
	ck_assert_uint_eq(tally.detect_checked, 60 * N_OF(task_kinds));
	ck_assert_uint_gt(tally.residency_checked, 60 * 2 * 4 * 5 * 4);
	/* the oracle is not vacuous: every outcome happens */
	ck_assert_uint_gt(tally.exact, 0);
	ck_assert_uint_gt(tally.unknown, 0);
	ck_assert_uint_gt(tally.perturbed, 0);
	ck_assert_msg(tally.failures == 0, "%lu failures (the first %d printed above)",
		      tally.failures, MAX_REPORTED);
	ck_assert_msg(tally.writable_hidden_calls > 0,
		      "the proof no longer covers a writable fd on a file the gate hides");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("model-proof");
	TCase *tc = tcase_create("proof");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, every_variant_task_file_and_flag);
	tcase_set_timeout(tc, 600);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
