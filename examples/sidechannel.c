/* SPDX-License-Identifier: MIT */
/*
 * sidechannel: the page-cache side channels of 2019, measured on the
 * library's model of each kernel (pagecache/model.h).
 *
 *   cc sidechannel.c $(pkg-config --cflags --libs pagecache) -o sidechannel
 *   ./sidechannel [--json]
 *
 * A victim (uid 1000) reads a secret sequence of pages of a root-owned 0644
 * file through an FADV_RANDOM fd (so exactly those pages come in), then
 * exits; the holding victim also keeps them mapped. An unprivileged
 * attacker (uid 65534, no capabilities, FADV_RANDOM fd) looks with one probe:
 *   mincore    mincore(2) of its own untouched mapping
 *   cachestat  cachestat(2) of each one-page range
 *   nowait     preadv2(RWF_NOWAIT) of each page, highest page first
 *   faults     touch the last page of each 16-page block of a fresh mapping
 *              of its own, then mincore: fault-around maps the neighbours
 *              that were cached (the touched pages themselves are lost);
 *              its faults also read around what they touch (an fd's
 *              FADV_RANDOM does not stop that: seen on 6.18), so it claims
 *              pages the victim never read and later sees nothing new
 *   evict      POSIX_FADV_DONTNEED of the whole file between observations,
 *              with the best probe that libpagecache's detector finds
 *   evict,held the same against a victim that keeps its mapping
 * Then the victim reads a second sequence (8 of its pages again, 24 new)
 * and the attacker looks again; it reports what changed since its last
 * look (a look right after its own observation or eviction).
 * Cells: % of the sequence's pages found / % of the other pages claimed.
 * Exit status: 0 when every cell matches the claim in variants[], else 1.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pagecache/model.h>

#define NPAGES  256
#define NSECRET 32
#define NAGAIN  8        /* pages of the first sequence that the second reads again */
#define PS      4096     /* the model's default page size */
#define FA      16       /* its default fault-around block, in pages */
#define SEED    UINT64_C(20190105)
#define VICTIM   1000
#define ATTACKER 65534

enum { CH_MINCORE, CH_CACHESTAT, CH_NOWAIT, CH_FAULTS, CH_EVICT, CH_EVICT_HELD, NCH };
enum { PR_NONE, PR_MINCORE, PR_CACHESTAT, PR_NOWAIT, PR_FAULTS };
static const char *const ch_names[NCH] = {
	"mincore", "cachestat", "nowait", "faults", "evict", "evict,held" };
static const char *const pr_names[] = { "none", "mincore", "cachestat", "nowait", "faults" };

/*
 * The claims, per cell: found and claimed of the first sequence, then of
 * the second. Found: A all, 0 none, N exactly the new pages (not those read
 * again), P some. Claimed (false positives): 0 none, A all, P some.
 */
struct variant {
	const char *era;
	int mincore, nowait, cachestat;
	const char *expect[NCH];
};

static const struct variant variants[] = {
	{ "< 4.14", PC_MINCORE_FULL, PC_NOWAIT_UNSUPPORTED, PC_CACHESTAT_ABSENT,
	  { "A0N0", "0000", "0000", "PP00", "A0A0", "A0N0" } },
	{ "4.14..5.1", PC_MINCORE_FULL, PC_NOWAIT_CLEAN, PC_CACHESTAT_ABSENT,
	  { "A0N0", "0000", "A0N0", "PP00", "A0A0", "A0N0" } },
	{ "5.0-rc1..3", PC_MINCORE_MAPPED_ONLY, PC_NOWAIT_CLEAN, PC_CACHESTAT_ABSENT,
	  { "0000", "0000", "A0N0", "PP00", "A0A0", "A0N0" } },
	{ "5.2..6.4", PC_MINCORE_GATED_FAKED, PC_NOWAIT_CLEAN, PC_CACHESTAT_ABSENT,
	  { "AA00", "0000", "A0N0", "PP00", "A0A0", "A0N0" } },
	{ "6.5..6.11", PC_MINCORE_GATED_FAKED, PC_NOWAIT_CLEAN, PC_CACHESTAT_OPEN,
	  { "AA00", "A0N0", "A0N0", "PP00", "A0A0", "A0N0" } },
	{ "6.12..6.13", PC_MINCORE_GATED_FAKED, PC_NOWAIT_DESTRUCTIVE, PC_CACHESTAT_OPEN,
	  { "AA00", "A0N0", "A000", "PP00", "A0A0", "A0N0" } },
	{ "6.14+", PC_MINCORE_GATED_FAKED, PC_NOWAIT_DESTRUCTIVE, PC_CACHESTAT_GATED,
	  { "AA00", "0000", "A000", "PP00", "A0A0", "A0N0" } },
	{ "Babka 2019", PC_MINCORE_GATED_MAPPED, PC_NOWAIT_CLEAN, PC_CACHESTAT_ABSENT,
	  { "0000", "0000", "A0N0", "PP00", "A0A0", "A0N0" } },
};
#define NVARIANTS (sizeof(variants) / sizeof(variants[0]))

struct round { int found, claimed; };
struct cell {
	int probe;
	struct round r[2];
	char got[5];
};

struct world {
	struct pcm_kernel *k;
	struct pcm_file *f;
	struct pcm_task *victim, *attacker;
	struct pcm_fd *vfd, *afd;
	uint64_t vmap, amap; /* the victim's mapping (0: none), the attacker's */
	int held;
};

static void die(const char *what, int err)
{
	fprintf(stderr, "sidechannel: %s: %s\n", what, strerror(-err));
	exit(2);
}

#define TRY(expr) do { int ret_ = (expr); if (ret_ < 0) die(#expr, ret_); } while (0)

/* ---- the secrets ------------------------------------------------------------ */

static uint64_t rng_state = SEED;

static uint32_t rng(uint32_t bound) /* splitmix64 */
{
	uint64_t z = (rng_state += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return (uint32_t)((z ^ (z >> 31)) % bound);
}

static void shuffle(uint32_t *a, uint32_t n)
{
	for (uint32_t i = n - 1; i > 0; i--) {
		uint32_t j = rng(i + 1), t = a[i];

		a[i] = a[j];
		a[j] = t;
	}
}

static uint32_t seq[2][NSECRET];
static unsigned char secret[2][NPAGES];

static void make_secrets(void)
{
	uint32_t perm[NPAGES];

	for (uint32_t i = 0; i < NPAGES; i++)
		perm[i] = i;
	shuffle(perm, NPAGES);
	memcpy(seq[0], perm, sizeof(seq[0]));
	memcpy(seq[1], perm, NAGAIN * sizeof(uint32_t));
	memcpy(seq[1] + NAGAIN, perm + NSECRET, (NSECRET - NAGAIN) * sizeof(uint32_t));
	shuffle(seq[1], NSECRET);
	for (int s = 0; s < 2; s++)
		for (int i = 0; i < NSECRET; i++)
			secret[s][seq[s][i]] = 1;
}

/* ---- the tasks ---------------------------------------------------------------- */

static void victim_run(struct world *w, const uint32_t *pages)
{
	/* Reads through its FADV_RANDOM fd bring in exactly those pages (a
	 * fault would read around them whatever the fd's advice, as 6.18 does). */
	for (int i = 0; i < NSECRET; i++)
		TRY(pcm_pread(w->vfd, pages[i], 1));
	if (!w->held)
		return; /* the victim process exits */
	/* ... and the holding victim maps them too: cached already, so the
	 * faults read nothing, and mapped pages cannot be evicted */
	if (!w->vmap)
		TRY(pcm_mmap(w->victim, w->vfd, 0, NPAGES, PCM_PROT_READ, PCM_MAP_PRIVATE, &w->vmap));
	for (int i = 0; i < NSECRET; i++)
		TRY(pcm_touch(w->victim, w->vmap + (uint64_t)pages[i] * PS, 0));
}

/* One look with @probe: seen[p] = 1 where the attacker believes p cached. */
static void observe(struct world *w, int probe, unsigned char *seen)
{
	struct pc_cachestat cs;
	uint64_t addr;
	int ret;

	memset(seen, 0, NPAGES);
	switch (probe) {
	case PR_MINCORE:
		TRY(pcm_mincore(w->attacker, w->amap, NPAGES * PS, seen));
		break;
	case PR_CACHESTAT:
		for (uint64_t p = 0; p < NPAGES; p++) {
			ret = pcm_cachestat(w->afd, p * PS, PS, &cs);
			if (ret == -ENOSYS || ret == -EPERM)
				return; /* absent or denied: nothing seen */
			TRY(ret);
			seen[p] = cs.cache > 0;
		}
		break;
	case PR_NOWAIT:
		for (uint64_t p = NPAGES; p-- > 0;) {
			ret = pcm_preadv2_nowait(w->afd, p);
			if (ret == -EOPNOTSUPP)
				return;
			if (ret != -EAGAIN)
				TRY(ret);
			seen[p] = ret == 1;
		}
		break;
	case PR_FAULTS:
		TRY(pcm_mmap(w->attacker, w->afd, 0, NPAGES, PCM_PROT_READ, PCM_MAP_SHARED, &addr));
		for (uint64_t p = FA - 1; p < NPAGES; p += FA)
			TRY(pcm_touch(w->attacker, addr + p * PS, 0));
		TRY(pcm_mincore(w->attacker, addr, NPAGES * PS, seen));
		for (uint64_t p = FA - 1; p < NPAGES; p += FA)
			seen[p] = 0; /* touched: mapped whatever it was */
		TRY(pcm_munmap(w->attacker, addr, NPAGES * PS));
		break;
	}
}

/* The attacker asks libpagecache's detector which probe works for it. */
static int pick_probe(struct pcm_task *t)
{
	int m = pcm_detect_mincore(t), n = pcm_detect_nowait(t), c = pcm_detect_cachestat(t);

	TRY(m);
	TRY(n);
	TRY(c);
	if (m == PC_MINCORE_FULL)
		return PR_MINCORE;
	if (c == PC_CACHESTAT_OPEN)
		return PR_CACHESTAT;
	if (n == PC_NOWAIT_CLEAN || n == PC_NOWAIT_DESTRUCTIVE)
		return PR_NOWAIT;
	if (m == PC_MINCORE_GATED_MAPPED || m == PC_MINCORE_MAPPED_ONLY)
		return PR_FAULTS;
	return PR_NONE;
}

/* ---- one cell --------------------------------------------------------------------- */

static char found_class(const unsigned char *est, int s)
{
	int tp = 0, is_new = s == 1;

	for (int p = 0; p < NPAGES; p++) {
		if (!secret[s][p])
			continue;
		tp += est[p];
		if (s == 0 || est[p] != !secret[0][p])
			is_new = 0;
	}
	return tp == NSECRET ? 'A' : tp == 0 ? '0' : is_new ? 'N' : 'P';
}

static void score(const unsigned char *est, int s, struct cell *c)
{
	int tp = 0, fp = 0;

	for (int p = 0; p < NPAGES; p++) {
		tp += est[p] && secret[s][p];
		fp += est[p] && !secret[s][p];
	}
	c->r[s].found = tp;
	c->r[s].claimed = fp;
	c->got[2 * s] = found_class(est, s);
	c->got[2 * s + 1] = fp == 0 ? '0' : fp == NPAGES - NSECRET ? 'A' : 'P';
}

static void run_cell(const struct variant *v, int ch, struct cell *c)
{
	unsigned char o1[NPAGES], base[NPAGES], o2[NPAGES];
	int evict = ch == CH_EVICT || ch == CH_EVICT_HELD;
	struct world w = { .held = ch == CH_EVICT_HELD };

	TRY(pcm_kernel_new(v->mincore, v->nowait, v->cachestat, &w.k));
	TRY(pcm_file_new(w.k, 0, 0, 0644, NPAGES, &w.f)); /* nothing cached */
	TRY(pcm_task_new(w.k, VICTIM, VICTIM, 0, &w.victim));
	TRY(pcm_task_new(w.k, ATTACKER, ATTACKER, 0, &w.attacker));
	TRY(pcm_open(w.victim, w.f, PCM_O_RDONLY, &w.vfd));
	TRY(pcm_open(w.attacker, w.f, PCM_O_RDONLY, &w.afd));
	TRY(pcm_fadvise(w.vfd, 0, 0, PCM_FADV_RANDOM));
	TRY(pcm_fadvise(w.afd, 0, 0, PCM_FADV_RANDOM));
	TRY(pcm_mmap(w.attacker, w.afd, 0, NPAGES, PCM_PROT_READ, PCM_MAP_SHARED, &w.amap));
	c->probe = evict ? pick_probe(w.attacker) : PR_MINCORE + ch;

	victim_run(&w, seq[0]);
	observe(&w, c->probe, o1);
	if (evict) /* evict, look at what is left, evict what the look cached */
		TRY(pcm_fadvise(w.afd, 0, 0, PCM_FADV_DONTNEED));
	observe(&w, c->probe, base);
	if (evict)
		TRY(pcm_fadvise(w.afd, 0, 0, PCM_FADV_DONTNEED));
	victim_run(&w, seq[1]);
	observe(&w, c->probe, o2);
	for (int p = 0; p < NPAGES; p++)
		o2[p] = o2[p] && !base[p]; /* what changed since the last look */

	score(o1, 0, c);
	score(o2, 1, c);
	c->got[4] = '\0';
	pcm_kernel_free(w.k);
}

/* ---- output --------------------------------------------------------------------------- */

static int pct(int n, int of)
{
	return (200 * n + of) / (2 * of);
}

static void print_text(struct cell cells[][NCH])
{
	static const char *const titles[2] = {
		"First sequence (32 pages): % found / % of the other 224 pages claimed",
		"Second sequence (8 pages again, 24 new), what changed since the last look" };
	char buf[32];

	for (int s = 0; s < 2; s++) {
		printf("%s%s\n\n%-11s %-12s %-11s %-9s", s ? "\n" : "", titles[s],
		       "kernel", "mincore", "nowait", "cachestat");
		for (int ch = 0; ch < NCH; ch++)
			printf(" %-10s", ch_names[ch]);
		printf("%s\n", s ? " evict probe" : "");
		for (size_t i = 0; i < NVARIANTS; i++) {
			const struct variant *v = &variants[i];

			printf("%-11s %-12s %-11s %-9s", v->era, pc_mincore_mode_name(v->mincore),
			       pc_nowait_mode_name(v->nowait), pc_cachestat_mode_name(v->cachestat));
			for (int ch = 0; ch < NCH; ch++) {
				const struct cell *c = &cells[i][ch];
				int bad = memcmp(c->got + 2 * s, v->expect[ch] + 2 * s, 2) != 0;

				snprintf(buf, sizeof(buf), "%d/%d%s", pct(c->r[s].found, NSECRET),
					 pct(c->r[s].claimed, NPAGES - NSECRET), bad ? "!" : "");
				printf(" %-*s", ch == NCH - 1 && !s ? 0 : 10, buf);
			}
			printf("%s%s\n", s ? " " : "", s ? pr_names[cells[i][CH_EVICT].probe] : "");
		}
	}
}

static void print_json(struct cell cells[][NCH], int ok)
{
	printf("{\"pages\":%d,\"secret\":%d,\"again\":%d,\"seed\":%" PRIu64
	       ",\"victim\":\"pread,fadv_random\",\"rows\":[", NPAGES, NSECRET, NAGAIN, SEED);
	for (size_t i = 0; i < NVARIANTS; i++) {
		const struct variant *v = &variants[i];

		printf("%s{\"kernel\":\"%s\",\"mincore\":\"%s\",\"nowait\":\"%s\",\"cachestat\":\"%s\","
		       "\"cells\":[", i ? "," : "", v->era, pc_mincore_mode_name(v->mincore),
		       pc_nowait_mode_name(v->nowait), pc_cachestat_mode_name(v->cachestat));
		for (int ch = 0; ch < NCH; ch++) {
			const struct cell *c = &cells[i][ch];

			printf("%s{\"channel\":\"%s\",\"probe\":\"%s\",\"first\":{\"found\":%d,"
			       "\"claimed\":%d},\"second\":{\"found\":%d,\"claimed\":%d},"
			       "\"expected\":\"%s\",\"got\":\"%s\"}", ch ? "," : "", ch_names[ch],
			       pr_names[c->probe], c->r[0].found, c->r[0].claimed, c->r[1].found,
			       c->r[1].claimed, v->expect[ch], c->got);
		}
		printf("]}");
	}
	printf("],\"ok\":%s}\n", ok ? "true" : "false");
}

int main(int argc, char **argv)
{
	static struct cell cells[NVARIANTS][NCH];
	int json = argc == 2 && strcmp(argv[1], "--json") == 0;
	int ok = 1;

	if (argc > 2 || (argc == 2 && !json)) {
		fprintf(stderr, "usage: sidechannel [--json]\n");
		return 2;
	}
	make_secrets();
	for (size_t i = 0; i < NVARIANTS; i++) {
		for (int ch = 0; ch < NCH; ch++) {
			run_cell(&variants[i], ch, &cells[i][ch]);
			if (strcmp(cells[i][ch].got, variants[i].expect[ch]) != 0) {
				fprintf(stderr, "sidechannel: %s %s: got %s, expected %s\n",
					variants[i].era, ch_names[ch], cells[i][ch].got,
					variants[i].expect[ch]);
				ok = 0;
			}
		}
	}
	if (json)
		print_json(cells, ok);
	else
		print_text(cells);
	return ok ? 0 : 1;
}
