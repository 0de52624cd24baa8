/* SPDX-License-Identifier: MIT */
/*
 * Differential tests: the model (include/pagecache/model.h) configured as
 * this machine's kernel (gated-faked mincore, destructive NOWAIT, gated
 * cachestat, this disk's read_ahead_kb) against the kernel itself.
 *
 * A scenario is data: a list of steps (open, mmap, touch, pread through a
 * POSIX_FADV_RANDOM fd, evict, mincore, cachestat, NOWAIT probes ...), each
 * done by a task: root, root without CAP_FOWNER/CAP_DAC_OVERRIDE, or uid
 * 65534; setup steps (making files, chattr, setfacl, residency patterns, the
 * root view of the page cache) run as root. The interpreter runs a scenario
 * once on the real kernel (each task is a forked worker process with those
 * credentials, fed steps through a pipe; files live in pc_test_dir()) and
 * once on the model (one pcm_task per task), recording every observable
 * result in a transcript; the transcripts must be equal byte for byte.
 *
 * What the real kernel does on its own is kept out of the comparison by
 * construction (doc/kernels.md section 7), not by loosening it: files start cold
 * (evicted after they are written), patterns are built by evicting whole
 * files and reading chosen pages through a POSIX_FADV_RANDOM fd, touched
 * pages are far from other cached pages unless a scenario is about
 * fault-around, no single page is ever evicted from inside a large folio,
 * and after anything that starts asynchronous reads (a NOWAIT miss, a
 * read-around) a SETTLE step waits until every page the cache holds is up
 * to date (cachestat's count equals mincore's) and stable. After a NOWAIT
 * miss through a fd without FADV_RANDOM only the probed page is compared.
 * Which pages a read fault maps is compared only on a cold file, whose
 * read-around is one request: the kernel retries the fault after the read
 * and its fault-around maps what has completed by then, so a read split
 * by cached pages maps a varying part of the block.
 * Real mappings are placed 2 MiB aligned, as the model places them, so that
 * fault-around blocks are the same; they are made PROT_NONE and then
 * mprotect()ed, because valgrind reads the head of every file mapped
 * readable (which would cache page 0 under valgrind only).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <linux/capability.h>
#include <linux/fs.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pagecache/model.h"
#include "pc-test.h"

#ifndef RWF_NOWAIT
#define RWF_NOWAIT 0x00000008
#endif

/* ---- the scenario language ------------------------------------------------ */

enum op {
	OP_END = 0,
	/* setup, as root (the test process itself on the real kernel) */
	OP_MAKE,        /* a: file, b: owner uid (= gid), c: mode, d: pages; starts cold */
	OP_IMMUTABLE,   /* a: file; chattr +i */
	OP_ACL_WRITE,   /* a: file, b: uid; setfacl -m u:uid:rw */
	OP_PATTERN,     /* a: file, list: pages; evict it all, read list via FADV_RANDOM */
	OP_SETTLE,      /* wait until no read is in flight (the model: nothing) */
	OP_TRUTH,       /* a: file, b: first page, c: pages (0: all); mincore as root */
	OP_TRUTH_CS,    /* a: file; cachestat of the whole file as root */
	/* a task's steps */
	OP_OPEN,        /* a: fd slot, b: file, c: O_RDONLY or O_RDWR */
	OP_MEMFD,       /* a: fd slot, b: pages; memfd_create + ftruncate */
	OP_CLOSE,       /* a: fd slot */
	OP_FADVISE,     /* a: fd slot, b: advice (FADV_*) over the whole file */
	OP_PREAD,       /* a: fd slot, b: page, c: pages; records pages read */
	OP_PWRITE,      /* a: fd slot, b: page, c: pages; records pages written */
	OP_FSYNC,       /* a: fd slot */
	OP_NOWAIT,      /* a: fd slot, b: page; 1-byte preadv2(RWF_NOWAIT) */
	OP_CACHESTAT,   /* a: fd slot, b: page, c: pages (0: to EOF) */
	OP_MMAP,        /* a: map slot, b: fd slot (-1 anonymous), c: pgoff, d: pages,
			   e: PROT_*, f: MAP_SHARED/MAP_PRIVATE, g: at map slot (-1: anywhere),
			   h: at page of that slot (MAP_FIXED there) */
	OP_MUNMAP,      /* a: map slot, b: page, c: pages */
	OP_TOUCH,       /* a: map slot, b: page, c: write; d: 1 if it must fault */
	OP_MINCORE,     /* a: map slot, b: byte offset, c: length in bytes, d: vector bytes */
	OP_PTES,        /* a: map slot, b: page, c: pages; which the task has mapped
			   (/proc/self/pagemap's present bit) */
	OP_COUNT
};

static const char *const op_names[OP_COUNT] = {
	"end", "make", "immutable", "acl-write", "pattern", "settle", "truth", "truth-cachestat",
	"open", "memfd", "close", "fadvise", "pread", "pwrite", "fsync", "nowait", "cachestat",
	"mmap", "munmap", "touch", "mincore", "ptes",
};

/* root; uid 65534 (a forked child that called setgid, setuid); root without
 * CAP_FOWNER, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH; root that called
 * setfsuid(65534), which drops the filesystem capabilities (the helper
 * thread of the detector). Supplementary groups are dropped. */
enum task_id { SETUP = -1, ROOT = 0, NOBODY, ROOT_NOCAPS, FSUID_NOBODY, NTASKS };

static const char *const task_names[NTASKS] = { "root", "nobody", "root-nocaps",
						 "fsuid-nobody" };

enum { FADV_NORMAL_, FADV_RANDOM_, FADV_WILLNEED_, FADV_DONTNEED_ };

#define NFILES 4
#define NSLOTS 4
#define NLIST 16
#define LIST_END (-1)
#define UID_ROOT 0
#define UID_NOBODY PC_TEST_NOBODY
#define UID_OTHER 4242

static const uint32_t task_uids[NTASKS] = { UID_ROOT, UID_NOBODY, UID_ROOT, UID_NOBODY };

struct step {
	int op;
	int task;
	long a, b, c, d, e, f, g, h;
	int list[NLIST];
};

struct scenario {
	const char *name;
	const struct step *steps;
};

/* Steps. Page numbers and lengths count pages except in MINCORE_B. */
#define MAKE(fi, uid, mode, np) { .op = OP_MAKE, .task = SETUP, .a = fi, .b = uid, .c = mode, .d = np }
#define IMMUTABLE(fi) { .op = OP_IMMUTABLE, .task = SETUP, .a = fi }
#define ACL_WRITE(fi, uid) { .op = OP_ACL_WRITE, .task = SETUP, .a = fi, .b = uid }
#define PATTERN(fi, ...) { .op = OP_PATTERN, .task = SETUP, .a = fi, .list = { __VA_ARGS__, LIST_END } }
#define COLD(fi) PATTERN(fi, LIST_END)
#define SETTLE { .op = OP_SETTLE, .task = SETUP }
#define TRUTH(fi) { .op = OP_TRUTH, .task = SETUP, .a = fi }
#define TRUTH_PAGES(fi, p, n) { .op = OP_TRUTH, .task = SETUP, .a = fi, .b = p, .c = n }
#define TRUTH_CS(fi) { .op = OP_TRUTH_CS, .task = SETUP, .a = fi }
#define OPEN(t, slot, fi, fl) { .op = OP_OPEN, .task = t, .a = slot, .b = fi, .c = fl }
#define MEMFD(t, slot, np) { .op = OP_MEMFD, .task = t, .a = slot, .b = np }
#define CLOSE(t, slot) { .op = OP_CLOSE, .task = t, .a = slot }
#define FADV(t, slot, adv) { .op = OP_FADVISE, .task = t, .a = slot, .b = adv }
#define RANDOM(t, slot) FADV(t, slot, FADV_RANDOM_)
#define EVICT(t, slot) FADV(t, slot, FADV_DONTNEED_)
#define PREAD(t, slot, p, n) { .op = OP_PREAD, .task = t, .a = slot, .b = p, .c = n }
#define PWRITE(t, slot, p, n) { .op = OP_PWRITE, .task = t, .a = slot, .b = p, .c = n }
#define FSYNC(t, slot) { .op = OP_FSYNC, .task = t, .a = slot }
#define NOWAIT(t, slot, p) { .op = OP_NOWAIT, .task = t, .a = slot, .b = p }
#define CSTAT(t, slot, p, n) { .op = OP_CACHESTAT, .task = t, .a = slot, .b = p, .c = n }
#define MMAP(t, m, slot, off, np, prot, fl) \
	{ .op = OP_MMAP, .task = t, .a = m, .b = slot, .c = off, .d = np, .e = prot, .f = fl, .g = -1 }
#define MMAP_AT(t, m, slot, off, np, prot, fl, at, atp) \
	{ .op = OP_MMAP, .task = t, .a = m, .b = slot, .c = off, .d = np, .e = prot, .f = fl, \
	  .g = at, .h = atp }
#define ANON(t, m, np) MMAP(t, m, -1, 0, np, PROT_READ | PROT_WRITE, MAP_PRIVATE)
#define MUNMAP(t, m, p, n) { .op = OP_MUNMAP, .task = t, .a = m, .b = p, .c = n }
#define TOUCH(t, m, p) { .op = OP_TOUCH, .task = t, .a = m, .b = p }
#define WTOUCH(t, m, p) { .op = OP_TOUCH, .task = t, .a = m, .b = p, .c = 1 }
#define TOUCH_FAULTS(t, m, p) { .op = OP_TOUCH, .task = t, .a = m, .b = p, .d = 1 }
#define MINCORE(t, m, p, n) \
	{ .op = OP_MINCORE, .task = t, .a = m, .b = (p) * PS, .c = (n) * PS, .d = n }
#define MINCORE_B(t, m, off, len, vlen) \
	{ .op = OP_MINCORE, .task = t, .a = m, .b = off, .c = len, .d = vlen }

#define PTES(t, m, p, n) { .op = OP_PTES, .task = t, .a = m, .b = p, .c = n }

#define STEPS(...) ((const struct step[]){ __VA_ARGS__, { .op = OP_END } })

/* Scenario byte offsets assume 4 KiB pages; other page sizes skip them all. */
#define PS 4096
#define RO O_RDONLY
#define RW O_RDWR
#define PR PROT_READ
#define PRW (PROT_READ | PROT_WRITE)
#define SH MAP_SHARED
#define PRIV MAP_PRIVATE
#define A 0 /* file slots */
#define B 1

/* The scenarios: one line each. */
static const struct scenario scenarios[] = {
	{ "root-owned-0644-truth", STEPS(MAKE(A, UID_ROOT, 0644, 64), PATTERN(A, 3, 20, 45), OPEN(ROOT, 0, A, RO), MMAP(ROOT, 0, 0, 0, 64, PR, SH), MINCORE(ROOT, 0, 0, 64), CSTAT(ROOT, 0, 0, 0), CSTAT(ROOT, 0, 16, 16), NOWAIT(ROOT, 0, 20)) },
	{ "nobody-foreign-0644-faked", STEPS(MAKE(A, UID_ROOT, 0644, 64), PATTERN(A, 3, 20, 45), OPEN(NOBODY, 0, A, RO), MMAP(NOBODY, 0, 0, 0, 64, PR, SH), MINCORE(NOBODY, 0, 0, 64), CSTAT(NOBODY, 0, 0, 0), OPEN(NOBODY, 1, A, RW), TRUTH(A)) },
	{ "nobody-owned-0644-truth", STEPS(MAKE(A, UID_NOBODY, 0644, 64), PATTERN(A, 5, 33, 62), OPEN(NOBODY, 0, A, RO), MMAP(NOBODY, 0, 0, 0, 64, PR, SH), MINCORE(NOBODY, 0, 0, 64), CSTAT(NOBODY, 0, 0, 0), CSTAT(NOBODY, 0, 32, 32)) },
	{ "nobody-foreign-0666-writer-passes", STEPS(MAKE(A, UID_OTHER, 0666, 64), PATTERN(A, 1, 40), OPEN(NOBODY, 0, A, RO), MMAP(NOBODY, 0, 0, 0, 64, PR, SH), MINCORE(NOBODY, 0, 0, 64), CSTAT(NOBODY, 0, 0, 0)) },
	{ "nobody-owned-0444-owner-passes", STEPS(MAKE(A, UID_NOBODY, 0444, 64), PATTERN(A, 10, 50), OPEN(NOBODY, 0, A, RO), MMAP(NOBODY, 0, 0, 0, 64, PR, SH), MINCORE(NOBODY, 0, 0, 64), CSTAT(NOBODY, 0, 0, 0), OPEN(NOBODY, 1, A, RW)) },
	{ "root-foreign-0444-dac-override", STEPS(MAKE(A, UID_NOBODY, 0444, 64), PATTERN(A, 7), OPEN(ROOT, 0, A, RW), MMAP(ROOT, 0, 0, 0, 64, PR, SH), MINCORE(ROOT, 0, 0, 64), PWRITE(ROOT, 0, 30, 1), CSTAT(ROOT, 0, 0, 0), FSYNC(ROOT, 0), CSTAT(ROOT, 0, 0, 0), MINCORE(ROOT, 0, 0, 64)) },
	{ "nobody-acl-writable-passes", STEPS(MAKE(A, UID_OTHER, 0644, 64), ACL_WRITE(A, UID_NOBODY), PATTERN(A, 2, 22, 42), OPEN(NOBODY, 0, A, RO), MMAP(NOBODY, 0, 0, 0, 64, PR, SH), MINCORE(NOBODY, 0, 0, 64), CSTAT(NOBODY, 0, 0, 0), OPEN(NOBODY, 1, A, RW)) },
	{ "nobody-foreign-0640-unreadable", STEPS(MAKE(A, UID_ROOT, 0640, 16), OPEN(NOBODY, 0, A, RO), OPEN(ROOT_NOCAPS, 0, A, RO), OPEN(ROOT_NOCAPS, 1, A, RW)) },
	{ "nobody-immutable-foreign-0666-faked", STEPS(MAKE(A, UID_OTHER, 0666, 64), IMMUTABLE(A), PATTERN(A, 4, 44), OPEN(NOBODY, 0, A, RO), OPEN(NOBODY, 1, A, RW), MMAP(NOBODY, 0, 0, 0, 64, PR, SH), MINCORE(NOBODY, 0, 0, 64), CSTAT(NOBODY, 0, 0, 0)) },
	{ "nobody-immutable-owned-passes", STEPS(MAKE(A, UID_NOBODY, 0644, 64), IMMUTABLE(A), PATTERN(A, 6, 60), OPEN(NOBODY, 0, A, RO), OPEN(NOBODY, 1, A, RW), MMAP(NOBODY, 0, 0, 0, 64, PR, SH), MINCORE(NOBODY, 0, 0, 64), CSTAT(NOBODY, 0, 0, 0)) },
	{ "root-immutable-foreign-fowner-passes", STEPS(MAKE(A, UID_NOBODY, 0644, 64), IMMUTABLE(A), PATTERN(A, 9, 19), OPEN(ROOT, 0, A, RO), MMAP(ROOT, 0, 0, 0, 64, PR, SH), MINCORE(ROOT, 0, 0, 64), CSTAT(ROOT, 0, 0, 0), OPEN(ROOT, 1, A, RW)) },
	{ "nobody-writable-fd-then-immutable", STEPS(MAKE(A, UID_OTHER, 0666, 64), PATTERN(A, 8, 48), OPEN(NOBODY, 0, A, RW), OPEN(NOBODY, 1, A, RO), IMMUTABLE(A), CSTAT(NOBODY, 0, 0, 0), CSTAT(NOBODY, 1, 0, 0), MMAP(NOBODY, 0, 1, 0, 64, PR, SH), MINCORE(NOBODY, 0, 0, 64), PWRITE(NOBODY, 0, 1, 1)) },
	{ "root-nocaps-foreign-faked", STEPS(MAKE(A, UID_NOBODY, 0644, 64), PATTERN(A, 12, 52), OPEN(ROOT_NOCAPS, 0, A, RO), MMAP(ROOT_NOCAPS, 0, 0, 0, 64, PR, SH), MINCORE(ROOT_NOCAPS, 0, 0, 64), CSTAT(ROOT_NOCAPS, 0, 0, 0), OPEN(ROOT_NOCAPS, 1, A, RW)) },
	{ "root-nocaps-owned-0600-truth", STEPS(MAKE(A, UID_ROOT, 0600, 64), PATTERN(A, 13, 53), OPEN(ROOT_NOCAPS, 0, A, RO), MMAP(ROOT_NOCAPS, 0, 0, 0, 64, PR, SH), MINCORE(ROOT_NOCAPS, 0, 0, 64), CSTAT(ROOT_NOCAPS, 0, 0, 0)) },
	{ "fsuid-nobody-foreign-faked-owned-truth", STEPS(MAKE(A, UID_ROOT, 0644, 64), MAKE(B, UID_NOBODY, 0644, 64), PATTERN(A, 3, 30), PATTERN(B, 4, 40), OPEN(FSUID_NOBODY, 0, A, RO), OPEN(FSUID_NOBODY, 1, B, RO), MMAP(FSUID_NOBODY, 0, 0, 0, 64, PR, SH), MMAP(FSUID_NOBODY, 1, 1, 0, 64, PR, SH), MINCORE(FSUID_NOBODY, 0, 0, 64), MINCORE(FSUID_NOBODY, 1, 0, 64), CSTAT(FSUID_NOBODY, 0, 0, 0), CSTAT(FSUID_NOBODY, 1, 0, 0), OPEN(FSUID_NOBODY, 2, A, RW)) },
	{ "fsuid-nobody-root-group-0640", STEPS(MAKE(A, UID_ROOT, 0640, 16), OPEN(FSUID_NOBODY, 0, A, RO), OPEN(ROOT, 0, A, RO)) },
	{ "nobody-memfd", STEPS(MEMFD(NOBODY, 0, 8), PWRITE(NOBODY, 0, 0, 1), PWRITE(NOBODY, 0, 2, 1), MMAP(NOBODY, 0, 0, 0, 8, PR, SH), MINCORE(NOBODY, 0, 0, 8), CSTAT(NOBODY, 0, 0, 0), NOWAIT(NOBODY, 0, 0), NOWAIT(NOBODY, 0, 1), EVICT(NOBODY, 0), FSYNC(NOBODY, 0), MINCORE(NOBODY, 0, 0, 8), CSTAT(NOBODY, 0, 0, 0), PREAD(NOBODY, 0, 4, 1), MINCORE(NOBODY, 0, 0, 8)) },
	{ "nobody-memfd-read-fault-fills-hole", STEPS(MEMFD(NOBODY, 0, 8), PWRITE(NOBODY, 0, 1, 1), MMAP(NOBODY, 0, 0, 0, 8, PR, SH), TOUCH(NOBODY, 0, 5), MINCORE(NOBODY, 0, 0, 8), CSTAT(NOBODY, 0, 0, 0), CLOSE(NOBODY, 0), CSTAT(NOBODY, 0, 0, 0), MINCORE(NOBODY, 0, 0, 8)) },
	{ "root-willneed-reads-the-file", STEPS(MAKE(A, UID_ROOT, 0644, 64), COLD(A), OPEN(ROOT, 0, A, RO), FADV(ROOT, 0, FADV_WILLNEED_), SETTLE, TRUTH(A), CSTAT(ROOT, 0, 0, 0)) },
	{ "nobody-anonymous", STEPS(ANON(NOBODY, 0, 8), TOUCH(NOBODY, 0, 1), WTOUCH(NOBODY, 0, 4), MINCORE(NOBODY, 0, 0, 8), MUNMAP(NOBODY, 0, 4, 1), MINCORE(NOBODY, 0, 0, 4)) },
	{ "nobody-private-cow-owned", STEPS(MAKE(A, UID_NOBODY, 0644, 64), COLD(A), OPEN(NOBODY, 0, A, RO), RANDOM(NOBODY, 0), MMAP(NOBODY, 0, 0, 0, 64, PRW, PRIV), WTOUCH(NOBODY, 0, 5), SETTLE, MINCORE(NOBODY, 0, 0, 64), TRUTH(A), EVICT(NOBODY, 0), MINCORE(NOBODY, 0, 0, 64), TRUTH(A), CSTAT(NOBODY, 0, 0, 0)) },
	{ "nobody-private-cow-foreign", STEPS(MAKE(A, UID_ROOT, 0644, 64), COLD(A), OPEN(NOBODY, 0, A, RO), RANDOM(NOBODY, 0), MMAP(NOBODY, 0, 0, 0, 64, PRW, PRIV), WTOUCH(NOBODY, 0, 5), SETTLE, MINCORE(NOBODY, 0, 0, 64), TRUTH(A), EVICT(NOBODY, 0), TRUTH(A)) },
	{ "nobody-prot-none-mincore-works", STEPS(MAKE(A, UID_NOBODY, 0644, 64), PATTERN(A, 11, 31), OPEN(NOBODY, 0, A, RO), MMAP(NOBODY, 0, 0, 0, 64, PROT_NONE, SH), MINCORE(NOBODY, 0, 0, 64), TOUCH_FAULTS(NOBODY, 0, 11), TOUCH_FAULTS(NOBODY, 0, 12), MINCORE(NOBODY, 0, 0, 64)) },
	{ "nobody-prot-none-foreign-faked", STEPS(MAKE(A, UID_ROOT, 0644, 64), PATTERN(A, 11, 31), OPEN(NOBODY, 0, A, RO), MMAP(NOBODY, 0, 0, 0, 64, PROT_NONE, PRIV), MINCORE(NOBODY, 0, 0, 64)) },
	{ "nobody-multi-vma-real-and-fake", STEPS(MAKE(A, UID_NOBODY, 0644, 32), MAKE(B, UID_ROOT, 0644, 32), PATTERN(A, 3, 17), PATTERN(B, 2, 5, 20), OPEN(NOBODY, 0, A, RO), OPEN(NOBODY, 1, B, RO), MMAP(NOBODY, 0, 0, 0, 32, PR, SH), MMAP_AT(NOBODY, 1, 1, 0, 16, PR, SH, 0, 16), MINCORE(NOBODY, 0, 0, 32), MINCORE(NOBODY, 0, 14, 6), MINCORE(NOBODY, 1, 0, 16)) },
	{ "nobody-multi-vma-fake-then-real", STEPS(MAKE(A, UID_ROOT, 0644, 32), MAKE(B, UID_NOBODY, 0644, 32), PATTERN(A, 1), PATTERN(B, 4, 9), OPEN(NOBODY, 0, A, RO), OPEN(NOBODY, 1, B, RO), MMAP(NOBODY, 0, 0, 0, 24, PR, SH), MMAP_AT(NOBODY, 1, 1, 0, 12, PR, SH, 0, 12), MINCORE(NOBODY, 0, 0, 24), ANON(NOBODY, 2, 8), MMAP_AT(NOBODY, 3, -1, 0, 4, PRW, PRIV, 0, 20), WTOUCH(NOBODY, 3, 1), MINCORE(NOBODY, 0, 0, 24)) },
	{ "root-multi-vma-both-truth", STEPS(MAKE(A, UID_NOBODY, 0644, 32), MAKE(B, UID_ROOT, 0644, 32), PATTERN(A, 3, 17), PATTERN(B, 2, 5, 20), OPEN(ROOT, 0, A, RO), OPEN(ROOT, 1, B, RO), MMAP(ROOT, 0, 0, 0, 32, PR, SH), MMAP_AT(ROOT, 1, 1, 0, 16, PR, SH, 0, 16), MINCORE(ROOT, 0, 0, 32)) },
	{ "nobody-mincore-unaligned-einval", STEPS(MAKE(A, UID_NOBODY, 0644, 8), PATTERN(A, 1), OPEN(NOBODY, 0, A, RO), MMAP(NOBODY, 0, 0, 0, 8, PR, SH), MINCORE_B(NOBODY, 0, 100, PS, 2), MINCORE_B(NOBODY, 0, PS - 1, 2 * PS, 3), MINCORE_B(NOBODY, 0, PS, 0, 2), MINCORE_B(NOBODY, 0, PS, 1, 2), MINCORE_B(NOBODY, 0, 0, PS + 1, 3)) },
	{ "nobody-mincore-hole-enomem", STEPS(MAKE(A, UID_NOBODY, 0644, 16), PATTERN(A, 1, 3, 14), OPEN(NOBODY, 0, A, RO), MMAP(NOBODY, 0, 0, 0, 16, PR, SH), MUNMAP(NOBODY, 0, 12, 4), MINCORE(NOBODY, 0, 0, 16), MINCORE(NOBODY, 0, 12, 2), MUNMAP(NOBODY, 0, 4, 2), MINCORE(NOBODY, 0, 0, 12), MINCORE(NOBODY, 0, 6, 6)) },
	{ "nobody-mincore-hole-after-faked", STEPS(MAKE(A, UID_ROOT, 0644, 16), PATTERN(A, 2), OPEN(NOBODY, 0, A, RO), MMAP(NOBODY, 0, 0, 0, 16, PR, SH), MUNMAP(NOBODY, 0, 8, 8), MINCORE(NOBODY, 0, 0, 16)) },
	{ "root-fault-through-random-fd-reads-around", STEPS(MAKE(A, UID_ROOT, 0644, 64), COLD(A), OPEN(ROOT, 0, A, RO), RANDOM(ROOT, 0), MMAP(ROOT, 0, 0, 0, 64, PR, SH), TOUCH(ROOT, 0, 30), SETTLE, TRUTH(A), MINCORE(ROOT, 0, 0, 64)) },
	{ "nobody-fault-read-around-small-file", STEPS(MAKE(A, UID_NOBODY, 0644, 64), COLD(A), OPEN(NOBODY, 0, A, RO), MMAP(NOBODY, 0, 0, 0, 64, PR, SH), TOUCH(NOBODY, 0, 30), SETTLE, TRUTH(A), MINCORE(NOBODY, 0, 0, 64)) },
	{ "root-fault-read-around-window", STEPS(MAKE(A, UID_ROOT, 0644, 6144), COLD(A), OPEN(ROOT, 0, A, RO), MMAP(ROOT, 0, 0, 0, 6144, PR, SH), TOUCH(ROOT, 0, 3000), SETTLE, TRUTH(A)) },
	{ "root-fault-around-keeps-cached-neighbours", STEPS(MAKE(A, UID_ROOT, 0644, 64), PATTERN(A, 8, 9, 10, 12, 40), OPEN(ROOT, 0, A, RO), MMAP(ROOT, 0, 0, 0, 64, PR, SH), TOUCH(ROOT, 0, 10), EVICT(ROOT, 0), TRUTH(A), CSTAT(ROOT, 0, 0, 0), PTES(ROOT, 0, 0, 16)) },
	{ "root-fault-through-random-fd-read-around-window", STEPS(MAKE(A, UID_ROOT, 0644, 6144), COLD(A), OPEN(ROOT, 0, A, RO), RANDOM(ROOT, 0), MMAP(ROOT, 0, 0, 0, 6144, PR, SH), TOUCH(ROOT, 0, 3000), SETTLE, TRUTH(A)) },
	{ "root-fault-around-after-read-around", STEPS(MAKE(A, UID_ROOT, 0644, 32), COLD(A), OPEN(ROOT, 0, A, RO), MMAP(ROOT, 0, 0, 0, 32, PR, SH), TOUCH(ROOT, 0, 20), SETTLE, PTES(ROOT, 0, 0, 32), TRUTH(A), EVICT(ROOT, 0), TRUTH(A)) },
	{ "root-fault-around-cached-block", STEPS(MAKE(A, UID_ROOT, 0644, 64), PATTERN(A, 16, 18, 21, 31, 33), OPEN(ROOT, 0, A, RO), MMAP(ROOT, 0, 0, 0, 64, PR, SH), TOUCH(ROOT, 0, 21), PTES(ROOT, 0, 0, 64), TRUTH(A)) },
	{ "root-evict-skips-mapped-pages", STEPS(MAKE(A, UID_ROOT, 0644, 64), PATTERN(A, 10, 50), OPEN(ROOT, 0, A, RO), RANDOM(ROOT, 0), MMAP(ROOT, 0, 0, 0, 64, PR, SH), TOUCH(ROOT, 0, 10), EVICT(ROOT, 0), TRUTH(A), CSTAT(ROOT, 0, 0, 0), MUNMAP(ROOT, 0, 0, 64), EVICT(ROOT, 0), TRUTH(A)) },
	{ "nobody-nowait-random-miss-caches-the-page", STEPS(MAKE(A, UID_ROOT, 0644, 64), PATTERN(A, 20), OPEN(NOBODY, 0, A, RO), RANDOM(NOBODY, 0), NOWAIT(NOBODY, 0, 20), NOWAIT(NOBODY, 0, 21), SETTLE, NOWAIT(NOBODY, 0, 21), TRUTH(A), NOWAIT(NOBODY, 0, 63), NOWAIT(NOBODY, 0, 64), SETTLE, TRUTH(A)) },
	{ "nobody-nowait-fresh-fd-page-0", STEPS(MAKE(A, UID_ROOT, 0644, 64), COLD(A), OPEN(NOBODY, 0, A, RO), NOWAIT(NOBODY, 0, 0), SETTLE, TRUTH_PAGES(A, 0, 1), NOWAIT(NOBODY, 0, 0)) },
	{ "root-pread-random-and-cachestat-ranges", STEPS(MAKE(A, UID_ROOT, 0644, 64), COLD(A), OPEN(ROOT, 0, A, RO), RANDOM(ROOT, 0), PREAD(ROOT, 0, 7, 1), PREAD(ROOT, 0, 50, 2), PREAD(ROOT, 0, 63, 4), PREAD(ROOT, 0, 64, 1), TRUTH(A), TRUTH_CS(A), CSTAT(ROOT, 0, 0, 32), CSTAT(ROOT, 0, 32, 32), CSTAT(ROOT, 0, 50, 1), CSTAT(ROOT, 0, 64, 8)) },
	{ "nobody-shared-write-dirties", STEPS(MAKE(A, UID_NOBODY, 0644, 64), COLD(A), OPEN(NOBODY, 0, A, RW), RANDOM(NOBODY, 0), MMAP(NOBODY, 0, 0, 0, 64, PRW, SH), WTOUCH(NOBODY, 0, 7), CSTAT(NOBODY, 0, 0, 0), FSYNC(NOBODY, 0), CSTAT(NOBODY, 0, 0, 0), EVICT(NOBODY, 0), TRUTH(A)) },
	{ "nobody-mmap-permissions", STEPS(MAKE(A, UID_NOBODY, 0644, 8), OPEN(NOBODY, 0, A, RO), MMAP(NOBODY, 0, 0, 0, 8, PRW, SH), MMAP(NOBODY, 1, 0, 0, 8, PRW, PRIV), WTOUCH(NOBODY, 1, 3), MINCORE(NOBODY, 1, 0, 8), TOUCH_FAULTS(NOBODY, 1, 9), PWRITE(NOBODY, 0, 0, 1)) },
	{ "nobody-touch-past-eof-faults", STEPS(MAKE(A, UID_NOBODY, 0644, 4), COLD(A), OPEN(NOBODY, 0, A, RO), MMAP(NOBODY, 0, 0, 0, 8, PR, SH), TOUCH_FAULTS(NOBODY, 0, 6), TOUCH(NOBODY, 0, 2), SETTLE, MINCORE(NOBODY, 0, 0, 8), NOWAIT(NOBODY, 0, 4), PREAD(NOBODY, 0, 3, 2)) },
};

#define NSCENARIOS (int)(sizeof(scenarios) / sizeof(scenarios[0]))

/* ---- transcripts ------------------------------------------------------------- */

struct rec {
	int recorded;
	long ret;
	size_t n;
	unsigned char *data;
};

static void rec_set(struct rec *r, long ret, const void *data, size_t n)
{
	r->recorded = 1;
	r->ret = ret;
	r->n = n;
	free(r->data);
	r->data = NULL;
	if (n) {
		r->data = malloc(n);
		ck_assert_ptr_nonnull(r->data);
		memcpy(r->data, data, n);
	}
}

static void recs_free(struct rec *recs, int n)
{
	for (int i = 0; i < n; i++)
		free(recs[i].data);
	free(recs);
}

static int nsteps(const struct scenario *sc)
{
	int n = 0;

	while (sc->steps[n].op != OP_END)
		n++;
	return n;
}

/* Steps left out under valgrind, in both executors alike. */
static int skipped_here(const struct step *st)
{
	if (!pc_test_under_valgrind())
		return 0;
	if (st->op == OP_CACHESTAT || st->op == OP_TRUTH_CS)
		return 1; /* valgrind 3.19 has no cachestat(2) */
	if (st->op == OP_TOUCH && st->d)
		return 1; /* memcheck reports the access before the signal */
	return 0;
}

static long pages_of(long bytes)
{
	return bytes < 0 ? bytes : (bytes + PS - 1) / PS;
}

/* ---- the real kernel --------------------------------------------------------- */

struct real_map {
	char *addr;
	size_t npages;
};

/* What one task (a worker process) holds. */
struct real_task {
	int fd[NSLOTS];
	struct real_map map[NSLOTS];
};

struct real_worker {
	pid_t pid;
	int cmd, res;
};

struct real {
	const struct scenario *sc;
	int index;
	const char *path[NFILES];
	int made[NFILES];
	int immutable[NFILES];
	struct real_worker w[NTASKS];
};

static sigjmp_buf touch_env;
static volatile char touch_sink;

static void touch_fault(int sig)
{
	(void)sig;
	siglongjmp(touch_env, 1);
}

static ssize_t read_full(int fd, void *buf, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = read(fd, (char *)buf + got, n - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? -1 : (ssize_t)got;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

static int write_full(int fd, const void *buf, size_t n)
{
	size_t done = 0;

	while (done < n) {
		ssize_t w = write(fd, (const char *)buf + done, n - done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		done += (size_t)w;
	}
	return 0;
}

static long neg_errno(void)
{
	return -(long)errno;
}

/* mmap at a fixed address. The mapping is made PROT_NONE and then given
 * its protection: valgrind reads the first KiB of every file mapped
 * readable (looking for ELF), which would cache page 0 and its readahead
 * window under valgrind only. mprotect refuses what mmap would (EACCES
 * for a writable shared mapping of a read-only fd). */
static long real_mmap_fixed(char *at, size_t len, int prot, int flags, int fd, off_t off)
{
	if (mmap(at, len, PROT_NONE, flags | MAP_FIXED, fd, off) == MAP_FAILED)
		return neg_errno();
	if (prot != PROT_NONE && mprotect(at, len, prot) < 0) {
		long err = neg_errno();

		munmap(at, len);
		return err;
	}
	return 0;
}

/* A mapping placed on a 2 MiB boundary, as the model places its own (on
 * 1 GiB ones): virtual pages then line up with file pages the same way,
 * and so do fault-around blocks. */
static long real_mmap_aligned(size_t len, int prot, int flags, int fd, off_t off, char **out)
{
	const size_t align = (size_t)2 << 20;
	size_t total = len + align;
	char *res, *at;
	long ret;

	res = mmap(NULL, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (res == MAP_FAILED)
		return neg_errno();
	at = (char *)(((uintptr_t)res + align - 1) & ~(uintptr_t)(align - 1));
	ret = real_mmap_fixed(at, len, prot, flags, fd, off);
	if (ret < 0) {
		munmap(res, total);
		return ret;
	}
	if (at > res)
		munmap(res, (size_t)(at - res));
	if (res + total > at + len)
		munmap(at + len, (size_t)(res + total - (at + len)));
	*out = at;
	return 0;
}

static void real_task_step(struct real *x, struct real_task *t, const struct step *st,
			   struct rec *r)
{
	struct pc_cachestat cs;
	int fd = st->a >= 0 && st->a < NSLOTS ? t->fd[st->a] : -1;
	long ret;

	switch (st->op) {
	case OP_OPEN:
		ret = open(x->path[st->b], (int)st->c | O_CLOEXEC);
		if (ret >= 0) {
			t->fd[st->a] = (int)ret;
			ret = 0;
		} else {
			ret = neg_errno();
		}
		rec_set(r, ret, NULL, 0);
		break;
	case OP_MEMFD:
		ret = memfd_create("pc-differential", MFD_CLOEXEC);
		if (ret >= 0) {
			t->fd[st->a] = (int)ret;
			ret = ftruncate((int)ret, (off_t)st->b * PS) < 0 ? neg_errno() : 0;
		} else {
			ret = neg_errno();
		}
		rec_set(r, ret, NULL, 0);
		break;
	case OP_CLOSE:
		ret = close(fd) < 0 ? neg_errno() : 0;
		t->fd[st->a] = -1;
		rec_set(r, ret, NULL, 0);
		break;
	case OP_FADVISE: {
		static const int advice[] = { POSIX_FADV_NORMAL, POSIX_FADV_RANDOM,
					      POSIX_FADV_WILLNEED, POSIX_FADV_DONTNEED };

		ret = -(long)posix_fadvise(fd, 0, 0, advice[st->b]);
		rec_set(r, ret, NULL, 0);
		break;
	}
	case OP_PREAD:
	case OP_PWRITE: {
		size_t len = (size_t)st->c * PS;
		char *buf = malloc(len);

		ck_assert_ptr_nonnull(buf);
		memset(buf, 'w', len);
		if (st->op == OP_PREAD)
			ret = pread(fd, buf, len, (off_t)st->b * PS);
		else
			ret = pwrite(fd, buf, len, (off_t)st->b * PS);
		ret = ret < 0 ? neg_errno() : pages_of(ret);
		free(buf);
		rec_set(r, ret, NULL, 0);
		break;
	}
	case OP_FSYNC:
		ret = fsync(fd) < 0 ? neg_errno() : 0;
		rec_set(r, ret, NULL, 0);
		break;
	case OP_NOWAIT: {
		char byte;
		struct iovec iov = { .iov_base = &byte, .iov_len = 1 };

		ret = preadv2(fd, &iov, 1, (off_t)st->b * PS, RWF_NOWAIT);
		rec_set(r, ret < 0 ? neg_errno() : ret, NULL, 0);
		break;
	}
	case OP_CACHESTAT:
		memset(&cs, 0, sizeof(cs));
		ret = pc_cachestat(fd, (uint64_t)st->b * PS, (uint64_t)st->c * PS, &cs);
		rec_set(r, ret, &cs, ret == 0 ? sizeof(cs) : 0);
		break;
	case OP_MMAP: {
		size_t len = (size_t)st->d * PS;
		int mfd = st->b >= 0 ? t->fd[st->b] : -1;
		int flags = (int)st->f | (st->b < 0 ? MAP_ANONYMOUS : 0);
		char *at = NULL;

		if (st->g < 0) {
			ret = real_mmap_aligned(len, (int)st->e, flags, mfd, (off_t)st->c * PS, &at);
		} else {
			at = t->map[st->g].addr + st->h * PS;
			ret = real_mmap_fixed(at, len, (int)st->e, flags, mfd, (off_t)st->c * PS);
		}
		if (ret == 0) {
			t->map[st->a].addr = at;
			t->map[st->a].npages = (size_t)st->d;
		}
		rec_set(r, ret, NULL, 0);
		break;
	}
	case OP_MUNMAP:
		ret = munmap(t->map[st->a].addr + st->b * PS, (size_t)st->c * PS) < 0 ? neg_errno()
										     : 0;
		rec_set(r, ret, NULL, 0);
		break;
	case OP_TOUCH: {
		volatile char *p = (volatile char *)(t->map[st->a].addr + st->b * PS);

		if (sigsetjmp(touch_env, 1) == 0) {
			if (st->c)
				*p = 'x';
			else
				touch_sink = *p; /* used, or valgrind drops the load */
			ret = 0;
		} else {
			ret = -EFAULT;
		}
		rec_set(r, ret, NULL, 0);
		break;
	}
	case OP_MINCORE: {
		unsigned char *vec = malloc((size_t)st->d + 1);

		ck_assert_ptr_nonnull(vec);
		memset(vec, 0xee, (size_t)st->d);
		ret = mincore(t->map[st->a].addr + st->b, (size_t)st->c, vec) < 0 ? neg_errno() : 0;
		rec_set(r, ret, vec, (size_t)st->d);
		free(vec);
		break;
	}
	case OP_PTES: {
		size_t n = (size_t)st->c;
		uint64_t *entries = calloc(n, sizeof(*entries));
		unsigned char *present = calloc(n, 1);
		int pm = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
		uintptr_t vpage = (uintptr_t)(t->map[st->a].addr + st->b * PS) / PS;

		ck_assert(entries && present);
		ret = pm < 0 ? neg_errno() : 0;
		if (ret == 0 && pread(pm, entries, n * sizeof(*entries),
				      (off_t)(vpage * sizeof(*entries))) != (ssize_t)(n * sizeof(*entries)))
			ret = -EIO;
		if (pm >= 0)
			close(pm);
		for (size_t i = 0; ret == 0 && i < n; i++)
			present[i] = (unsigned char)(entries[i] >> 63);
		rec_set(r, ret, present, ret == 0 ? n : 0);
		free(entries);
		free(present);
		break;
	}
	default:
		ck_abort_msg("op %d is not a task's", st->op);
	}
}

static void drop_fs_caps(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d) < 0)
		_exit(96);
	d[0].effective &= ~((1u << CAP_FOWNER) | (1u << CAP_DAC_OVERRIDE) |
			    (1u << CAP_DAC_READ_SEARCH));
	if (syscall(SYS_capset, &h, d) < 0)
		_exit(96);
}

/* A worker: becomes the task, then runs the steps it is sent. */
static void __attribute__((noreturn)) worker_main(struct real *x, int task, int cmd, int res)
{
	struct real_task t;
	struct sigaction sa;
	struct step st;

	for (int i = 0; i < NSLOTS; i++)
		t.fd[i] = -1;
	memset(t.map, 0, sizeof(t.map));
	if (task != ROOT && setgroups(0, NULL) < 0)
		_exit(98);
	if (task == NOBODY && (setgid(UID_NOBODY) < 0 || setuid(UID_NOBODY) < 0))
		_exit(98);
	if (task == ROOT_NOCAPS)
		drop_fs_caps();
	if (task == FSUID_NOBODY) {
		setfsgid(UID_NOBODY);
		setfsuid(UID_NOBODY);
		if ((int)setfsuid((uid_t)-1) != UID_NOBODY || (int)setfsgid((gid_t)-1) != UID_NOBODY)
			_exit(95);
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = touch_fault;
	sa.sa_flags = SA_NODEFER;
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
	while (read_full(cmd, &st, sizeof(st)) == (ssize_t)sizeof(st) && st.op != OP_END) {
		struct rec r = { 0 };
		uint64_t n;

		real_task_step(x, &t, &st, &r);
		n = r.n;
		if (write_full(res, &r.ret, sizeof(r.ret)) < 0 ||
		    write_full(res, &n, sizeof(n)) < 0 || (n && write_full(res, r.data, n) < 0))
			_exit(97);
		free(r.data);
	}
	for (int i = 0; i < NSLOTS; i++)
		if (t.fd[i] >= 0)
			close(t.fd[i]);
	_exit(0);
}

static void real_start_worker(struct real *x, int task)
{
	int cmd[2], res[2];
	pid_t pid;

	ck_assert_int_eq(pipe2(cmd, O_CLOEXEC), 0);
	ck_assert_int_eq(pipe2(res, O_CLOEXEC), 0);
	fflush(NULL);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(cmd[1]);
		close(res[0]);
		worker_main(x, task, cmd[0], res[1]);
	}
	close(cmd[0]);
	close(res[1]);
	x->w[task].pid = pid;
	x->w[task].cmd = cmd[1];
	x->w[task].res = res[0];
}

static void real_stop_workers(struct real *x)
{
	for (int t = 0; t < NTASKS; t++) {
		struct step end = { .op = OP_END };
		int status;

		if (!x->w[t].pid)
			continue;
		write_full(x->w[t].cmd, &end, sizeof(end));
		close(x->w[t].cmd);
		close(x->w[t].res);
		ck_assert_int_eq(waitpid(x->w[t].pid, &status, 0), x->w[t].pid);
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			      "%s: the %s worker ended with status %#x", x->sc->name,
			      task_names[t], status);
		x->w[t].pid = 0;
	}
}

static uint64_t real_npages(int fd)
{
	struct stat st;

	ck_assert_int_eq(fstat(fd, &st), 0);
	return ((uint64_t)st.st_size + PS - 1) / PS;
}

/* mincore as root through a fresh mapping: the page cache itself. */
static long real_truth(const char *path, uint64_t first, uint64_t n, unsigned char **vec,
		       uint64_t *count)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	void *m;
	long ret = 0;

	ck_assert_int_ge(fd, 0);
	if (n == 0)
		n = real_npages(fd) - first;
	*vec = calloc((size_t)n + 1, 1);
	ck_assert_ptr_nonnull(*vec);
	m = mmap(NULL, (size_t)n * PS, PROT_NONE, MAP_SHARED, fd, (off_t)first * PS);
	ck_assert_ptr_ne(m, MAP_FAILED);
	/* readable only now: see real_mmap_fixed() */
	ck_assert_int_eq(mprotect(m, (size_t)n * PS, PROT_READ), 0);
	if (mincore(m, (size_t)n * PS, *vec) < 0)
		ret = neg_errno();
	munmap(m, (size_t)n * PS);
	close(fd);
	*count = 0;
	for (uint64_t i = 0; i < n; i++)
		*count += (*vec)[i] & 1;
	return ret < 0 ? ret : (long)n;
}

/* Wait until no read is in flight in any file of the scenario: every page
 * cachestat counts is up to date (mincore counts it) and the count holds
 * still; under valgrind (no cachestat) only the latter. At most ~2 s. */
static void real_settle(struct real *x)
{
	for (int f = 0; f < NFILES; f++) {
		long prev = -1;
		int stable = 0;

		if (!x->made[f])
			continue;
		for (int i = 0; i < 400 && stable < 2; i++) {
			struct pc_cachestat cs;
			unsigned char *vec;
			uint64_t count;
			int fd = open(x->path[f], O_RDONLY | O_CLOEXEC);
			int consistent;

			ck_assert_int_ge(fd, 0);
			consistent = pc_cachestat(fd, 0, 0, &cs) < 0;
			close(fd);
			real_truth(x->path[f], 0, 0, &vec, &count);
			free(vec);
			consistent = consistent || cs.cache == count;
			stable = consistent && (long)count == prev ? stable + 1 : 0;
			prev = (long)count;
			if (stable < 2)
				usleep(5000);
		}
	}
}

static int real_set_immutable(const char *path, int on)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int flags, ret = 0;

	if (fd < 0)
		return -errno;
	if (ioctl(fd, FS_IOC_GETFLAGS, &flags) < 0)
		ret = -errno;
	if (ret == 0) {
		flags = on ? flags | FS_IMMUTABLE_FL : flags & ~FS_IMMUTABLE_FL;
		if (ioctl(fd, FS_IOC_SETFLAGS, &flags) < 0)
			ret = -errno;
	}
	close(fd);
	return ret;
}

/* A setup step on the real kernel; 1 (and why) when the scenario cannot run here. */
static int real_setup_step(struct real *x, const struct step *st, struct rec *r, char *why,
			   size_t whylen)
{
	unsigned char *vec;
	uint64_t count;
	long ret;

	switch (st->op) {
	case OP_MAKE: {
		char name[64];
		int fd;

		snprintf(name, sizeof(name), "s%02d-f%ld", x->index, st->a);
		pc_test_make_file(name, (uint64_t)st->d, (mode_t)st->c, (int)st->b, (int)st->b);
		fd = open(x->path[st->a], O_RDONLY | O_CLOEXEC);
		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
		close(fd);
		x->made[st->a] = 1;
		return 0;
	}
	case OP_IMMUTABLE:
		ret = real_set_immutable(x->path[st->a], 1);
		if (ret < 0) {
			snprintf(why, whylen, "chattr +i refused: %s", strerror((int)-ret));
			return 1;
		}
		x->immutable[st->a] = 1;
		return 0;
	case OP_ACL_WRITE: {
		char cmd[4300];

		snprintf(cmd, sizeof(cmd), "setfacl -m u:%ld:rw -- '%s' 2>/dev/null", st->b,
			 x->path[st->a]);
		if (system(cmd) != 0) {
			snprintf(why, whylen, "setfacl failed (no acl tools or no ACL support)");
			return 1;
		}
		return 0;
	}
	case OP_PATTERN: {
		uint64_t pages[NLIST];
		size_t n = 0;

		while (n < NLIST && st->list[n] != LIST_END) {
			pages[n] = (uint64_t)st->list[n];
			n++;
		}
		pc_test_set_pattern(x->path[st->a], pages, n);
		return 0;
	}
	case OP_SETTLE:
		real_settle(x);
		return 0;
	case OP_TRUTH:
		ret = real_truth(x->path[st->a], (uint64_t)st->b, (uint64_t)st->c, &vec, &count);
		rec_set(r, ret, vec, ret > 0 ? (size_t)ret : 0);
		free(vec);
		return 0;
	case OP_TRUTH_CS: {
		struct pc_cachestat cs;
		int fd = open(x->path[st->a], O_RDONLY | O_CLOEXEC);

		ck_assert_int_ge(fd, 0);
		memset(&cs, 0, sizeof(cs));
		ret = pc_cachestat(fd, 0, 0, &cs);
		close(fd);
		rec_set(r, ret, &cs, ret == 0 ? sizeof(cs) : 0);
		return 0;
	}
	default:
		ck_abort_msg("op %d is not a setup step", st->op);
	}
	return 0;
}

static void real_task_remote(struct real *x, const struct step *st, struct rec *r)
{
	struct real_worker *w = &x->w[st->task];
	uint64_t n;
	long ret;

	ck_assert_int_eq(write_full(w->cmd, st, sizeof(*st)), 0);
	ck_assert_msg(read_full(w->res, &ret, sizeof(ret)) == (ssize_t)sizeof(ret) &&
			      read_full(w->res, &n, sizeof(n)) == (ssize_t)sizeof(n),
		      "%s: the %s worker died", x->sc->name, task_names[st->task]);
	r->recorded = 1;
	r->ret = ret;
	r->n = (size_t)n;
	free(r->data);
	r->data = NULL;
	if (n) {
		r->data = malloc((size_t)n);
		ck_assert_ptr_nonnull(r->data);
		ck_assert_int_eq(read_full(w->res, r->data, (size_t)n), (ssize_t)n);
	}
}

/* Runs the scenario on the kernel. Returns 0, or 1 with why when it cannot run here. */
static int real_run(int index, struct rec *recs, char *why, size_t whylen)
{
	const struct scenario *sc = &scenarios[index];
	struct real x;
	int used[NTASKS] = { 0 }, skip = 0, i;

	memset(&x, 0, sizeof(x));
	x.sc = sc;
	x.index = index;
	for (int f = 0; f < NFILES; f++) {
		char name[64];

		snprintf(name, sizeof(name), "s%02d-f%d", index, f);
		x.path[f] = pc_test_path(name);
	}
	for (i = 0; sc->steps[i].op != OP_END; i++)
		if (sc->steps[i].task >= 0)
			used[sc->steps[i].task] = 1;
	for (int t = 0; t < NTASKS; t++)
		if (used[t])
			real_start_worker(&x, t);
	for (i = 0; !skip && sc->steps[i].op != OP_END; i++) {
		const struct step *st = &sc->steps[i];

		if (skipped_here(st))
			continue;
		if (st->task == SETUP)
			skip = real_setup_step(&x, st, &recs[i], why, whylen);
		else
			real_task_remote(&x, st, &recs[i]);
	}
	real_stop_workers(&x);
	for (int f = 0; f < NFILES; f++) {
		if (x.immutable[f])
			ck_assert_int_eq(real_set_immutable(x.path[f], 0), 0);
		if (x.made[f])
			unlink(x.path[f]);
	}
	return skip;
}

/* ---- the model ----------------------------------------------------------------- */

struct model {
	struct pcm_kernel *k;
	int cachestat_mode; /* the mode the model was told */
	struct pcm_task *setup;
	struct pcm_task *task[NTASKS];
	struct pcm_file *file[NFILES];
	struct pcm_fd *fd[NTASKS][NSLOTS];
	uint64_t map[NTASKS][NSLOTS];
};

static int model_prot(long prot)
{
	return (prot & PROT_READ ? PCM_PROT_READ : 0) | (prot & PROT_WRITE ? PCM_PROT_WRITE : 0);
}

static int model_open_flags(long flags)
{
	return (flags & O_ACCMODE) == O_RDWR ? PCM_O_RDWR : PCM_O_RDONLY;
}

static long model_truth(struct model *m, struct pcm_file *f, uint64_t first, uint64_t n,
			unsigned char **vec)
{
	struct pcm_fd *fd;
	uint64_t addr;
	long ret;

	if (n == 0)
		n = pcm_file_npages(f) - first;
	*vec = calloc((size_t)n + 1, 1);
	ck_assert_ptr_nonnull(*vec);
	ck_assert_int_eq(pcm_open(m->setup, f, PCM_O_RDONLY, &fd), 0);
	ck_assert_int_eq(pcm_mmap(m->setup, fd, first, n, PCM_PROT_READ, PCM_MAP_SHARED, &addr), 0);
	ret = pcm_mincore(m->setup, addr, n * PS, *vec);
	ck_assert_int_eq(pcm_munmap(m->setup, addr, n * PS), 0);
	pcm_close(fd);
	return ret < 0 ? ret : (long)n;
}

static void model_setup_step(struct model *m, const struct step *st, struct rec *r)
{
	struct pcm_file *f = st->a >= 0 && st->a < NFILES ? m->file[st->a] : NULL;
	struct pc_cachestat cs;
	struct pcm_fd *fd;
	unsigned char *vec;
	long ret;

	switch (st->op) {
	case OP_MAKE:
		ck_assert_int_eq(pcm_file_new(m->k, (uint32_t)st->b, (uint32_t)st->b,
					      (uint32_t)st->c, (uint64_t)st->d, &m->file[st->a]), 0);
		break;
	case OP_IMMUTABLE:
		ck_assert_int_eq(pcm_file_set(f, PCM_FILE_IMMUTABLE, 1), 0);
		break;
	case OP_ACL_WRITE:
		ck_assert_int_eq(pcm_file_set(f, PCM_FILE_ACL_WRITE_UID, (uint64_t)st->b), 0);
		break;
	case OP_PATTERN:
		/* as pc_test_set_pattern(): evict it all, then read through a random fd */
		ck_assert_int_eq(pcm_open(m->setup, f, PCM_O_RDONLY, &fd), 0);
		ck_assert_int_eq(pcm_fsync(fd), 0);
		ck_assert_int_eq(pcm_fadvise(fd, 0, 0, PCM_FADV_DONTNEED), 0);
		ck_assert_int_eq(pcm_fadvise(fd, 0, 0, PCM_FADV_RANDOM), 0);
		for (int i = 0; i < NLIST && st->list[i] != LIST_END; i++)
			ck_assert_int_eq(pcm_pread(fd, (uint64_t)st->list[i], 1), 1);
		pcm_close(fd);
		break;
	case OP_SETTLE:
		break; /* the model's reads complete at once */
	case OP_TRUTH:
		ret = model_truth(m, f, (uint64_t)st->b, (uint64_t)st->c, &vec);
		rec_set(r, ret, vec, ret > 0 ? (size_t)ret : 0);
		free(vec);
		break;
	case OP_TRUTH_CS:
		ck_assert_int_eq(pcm_open(m->setup, f, PCM_O_RDONLY, &fd), 0);
		memset(&cs, 0, sizeof(cs));
		ret = pcm_cachestat(fd, 0, 0, &cs);
		pcm_close(fd);
		rec_set(r, ret, &cs, ret == 0 ? sizeof(cs) : 0);
		break;
	default:
		ck_abort_msg("op %d is not a setup step", st->op);
	}
}

static void model_task_step(struct model *m, const struct step *st, struct rec *r)
{
	static const int advice[] = { PCM_FADV_NORMAL, PCM_FADV_RANDOM, PCM_FADV_WILLNEED,
				      PCM_FADV_DONTNEED };
	struct pcm_task *t = m->task[st->task];
	struct pcm_fd **fds = m->fd[st->task];
	uint64_t *maps = m->map[st->task];
	struct pcm_fd *fd = st->a >= 0 && st->a < NSLOTS ? fds[st->a] : NULL;
	struct pc_cachestat cs;
	long ret;

	switch (st->op) {
	case OP_OPEN:
		ret = pcm_open(t, m->file[st->b], model_open_flags(st->c), &fds[st->a]);
		rec_set(r, ret, NULL, 0);
		break;
	case OP_MEMFD: {
		struct pcm_file *f;

		/* memfd_create: the creator's file, mode 0777, on tmpfs */
		ck_assert_int_eq(pcm_file_new(m->k, task_uids[st->task], task_uids[st->task], 0777,
					      (uint64_t)st->b, &f), 0);
		ck_assert_int_eq(pcm_file_set(f, PCM_FILE_SHMEM, 1), 0);
		ret = pcm_open(t, f, PCM_O_RDWR, &fds[st->a]);
		rec_set(r, ret, NULL, 0);
		break;
	}
	case OP_CLOSE:
		pcm_close(fd);
		fds[st->a] = NULL;
		rec_set(r, 0, NULL, 0);
		break;
	case OP_FADVISE:
		ret = pcm_fadvise(fd, 0, 0, advice[st->b]);
		rec_set(r, ret, NULL, 0);
		break;
	case OP_PREAD:
		ret = pcm_pread(fd, (uint64_t)st->b, (uint64_t)st->c);
		rec_set(r, ret, NULL, 0);
		break;
	case OP_PWRITE:
		ret = pcm_pwrite(fd, (uint64_t)st->b, (uint64_t)st->c);
		rec_set(r, ret, NULL, 0);
		break;
	case OP_FSYNC:
		ret = pcm_fsync(fd);
		rec_set(r, ret, NULL, 0);
		break;
	case OP_NOWAIT:
		ret = pcm_preadv2_nowait(fd, (uint64_t)st->b);
		rec_set(r, ret, NULL, 0);
		break;
	case OP_CACHESTAT:
		memset(&cs, 0, sizeof(cs));
		/* a kernel without the syscall says ENOSYS before it looks at
		 * the fd; the model's call needs an fd to find its kernel */
		if (!fd && m->cachestat_mode == PC_CACHESTAT_ABSENT)
			ret = -ENOSYS;
		else
			ret = pcm_cachestat(fd, (uint64_t)st->b * PS, (uint64_t)st->c * PS, &cs);
		rec_set(r, ret, &cs, ret == 0 ? sizeof(cs) : 0);
		break;
	case OP_MMAP: {
		int flags = st->f == MAP_SHARED ? PCM_MAP_SHARED : PCM_MAP_PRIVATE;
		uint64_t addr = 0;

		if (st->g >= 0) {
			flags |= PCM_MAP_FIXED;
			addr = maps[st->g] + (uint64_t)st->h * PS;
		}
		ret = pcm_mmap(t, st->b >= 0 ? fds[st->b] : NULL, (uint64_t)st->c, (uint64_t)st->d,
			       model_prot(st->e), flags, &addr);
		if (ret == 0)
			maps[st->a] = addr;
		rec_set(r, ret, NULL, 0);
		break;
	}
	case OP_MUNMAP:
		ret = pcm_munmap(t, maps[st->a] + (uint64_t)st->b * PS, (uint64_t)st->c * PS);
		rec_set(r, ret, NULL, 0);
		break;
	case OP_TOUCH:
		ret = pcm_touch(t, maps[st->a] + (uint64_t)st->b * PS, (int)st->c);
		rec_set(r, ret, NULL, 0);
		break;
	case OP_MINCORE: {
		unsigned char *vec = malloc((size_t)st->d + 1);

		ck_assert_ptr_nonnull(vec);
		memset(vec, 0xee, (size_t)st->d);
		ret = pcm_mincore(t, maps[st->a] + (uint64_t)st->b, (uint64_t)st->c, vec);
		rec_set(r, ret, vec, (size_t)st->d);
		free(vec);
		break;
	}
	case OP_PTES: {
		size_t n = (size_t)st->c;
		unsigned char *present = calloc(n, 1);

		ck_assert_ptr_nonnull(present);
		for (size_t i = 0; i < n; i++) {
			int pte = pcm_pte_get(t, maps[st->a] + ((uint64_t)st->b + i) * PS);

			/* present bit: a page (file, anonymous or THP) behind the entry */
			present[i] = pte >= 0 && ((pte & 0x0f) == PCM_PTE_PRESENT ||
						  (pte & 0x0f) == PCM_PMD_THP);
		}
		rec_set(r, 0, present, n);
		free(present);
		break;
	}
	default:
		ck_abort_msg("op %d is not a task's", st->op);
	}
}

static uint64_t readahead_pages; /* this disk's read_ahead_kb, in pages */

/* The kernel the model is told it is: the kernel table's row for the
 * running kernel (tests/lib/pc-kernels.c), or what the detector finds on a
 * kernel the table lacks. */
static void model_modes(int *mincore, int *nowait, int *cachestat)
{
	const struct pc_test_kernel *k = pc_test_kernel();
	int dirfd;

	if (k) {
		*mincore = k->mincore;
		*nowait = k->nowait;
		*cachestat = pc_test_expect_cachestat(); /* valgrind: absent */
		return;
	}
	dirfd = open(pc_test_dir(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(dirfd, 0);
	*mincore = pc_detect_mincore();
	*nowait = pc_detect_nowait(dirfd);
	*cachestat = pc_detect_cachestat();
	close(dirfd);
}

static void model_run(int index, struct rec *recs)
{
	static const unsigned int caps[NTASKS] = { PCM_CAP_FOWNER | PCM_CAP_DAC_OVERRIDE, 0, 0, 0 };
	const struct scenario *sc = &scenarios[index];
	int mincore, nowait, cachestat;
	struct model m;

	memset(&m, 0, sizeof(m));
	model_modes(&mincore, &nowait, &cachestat);
	m.cachestat_mode = cachestat;
	ck_assert_int_eq(pcm_kernel_new(mincore, nowait, cachestat, &m.k), 0);
	ck_assert_int_eq(pcm_kernel_tune(m.k, PCM_TUNE_READAHEAD_PAGES, readahead_pages), 0);
	ck_assert_int_eq(pcm_task_new(m.k, 0, 0, PCM_CAP_FOWNER | PCM_CAP_DAC_OVERRIDE, &m.setup), 0);
	for (int t = 0; t < NTASKS; t++)
		ck_assert_int_eq(pcm_task_new(m.k, task_uids[t], task_uids[t], caps[t], &m.task[t]), 0);
	for (int i = 0; sc->steps[i].op != OP_END; i++) {
		const struct step *st = &sc->steps[i];

		if (skipped_here(st))
			continue;
		if (st->task == SETUP)
			model_setup_step(&m, st, &recs[i]);
		else
			model_task_step(&m, st, &recs[i]);
	}
	pcm_kernel_free(m.k);
}

/* ---- comparing ------------------------------------------------------------------ */

static void describe_step(const struct step *st, char *buf, size_t size)
{
	snprintf(buf, size, "%s %s(a=%ld b=%ld c=%ld d=%ld)",
		 st->task == SETUP ? "setup" : task_names[st->task], op_names[st->op], st->a,
		 st->b, st->c, st->d);
}

static void describe_rec(const struct step *st, const struct rec *r, char *buf, size_t size)
{
	size_t len;

	if (!r->recorded) {
		snprintf(buf, size, "(nothing recorded)");
		return;
	}
	len = (size_t)snprintf(buf, size, "ret %ld", r->ret);
	if (r->n && (st->op == OP_CACHESTAT || st->op == OP_TRUTH_CS) &&
	    r->n == sizeof(struct pc_cachestat)) {
		struct pc_cachestat cs;

		memcpy(&cs, r->data, sizeof(cs));
		snprintf(buf + len, size - len,
			 " cache %" PRIu64 " dirty %" PRIu64 " writeback %" PRIu64
			 " evicted %" PRIu64 " recently %" PRIu64,
			 cs.cache, cs.dirty, cs.writeback, cs.evicted, cs.recently_evicted);
		return;
	}
	if (r->n > 128) {
		/* long vectors as runs: "0x1976 1x2048 0x2120" */
		for (size_t i = 0; i < r->n && len + 40 < size;) {
			size_t j = i;

			while (j < r->n && r->data[j] == r->data[i])
				j++;
			len += (size_t)snprintf(buf + len, size - len, " %#x*%zu", r->data[i], j - i);
			i = j;
		}
	} else if (r->n && len + 2 < size) {
		buf[len++] = ' ';
		for (size_t i = 0; i < r->n && len + 1 < size; i++) {
			unsigned char c = r->data[i];

			buf[len++] = c == 0 ? '0' : c == 1 ? '1' : c == 0xee ? '.' : '?';
		}
		buf[len] = '\0';
	}
}

/*
 * An RWF_NOWAIT read the model calls a miss (EAGAIN) and the kernel
 * answered with data: on a destructive kernel the read a miss starts can
 * finish before the kernel looks at the page again (doc/design.md), often
 * when the test runs slowly (valgrind, sanitizers, load) on a fast disk.
 * Either answer leaves the page cached, which the steps after it compare.
 */
static bool nowait_raced(const struct step *st, const struct rec *real, const struct rec *model)
{
	return st->op == OP_NOWAIT && real->recorded && model->recorded && real->ret == 1 &&
	       model->ret == -EAGAIN;
}

/* Returns the number of differing steps (the first few are printed);
 * *raced counts the NOWAIT races left out. */
static int compare(int index, const struct rec *real, const struct rec *model, int *raced)
{
	const struct scenario *sc = &scenarios[index];
	int diffs = 0;

	for (int i = 0; sc->steps[i].op != OP_END; i++) {
		const struct rec *a = &real[i], *b = &model[i];
		char what[160], ra[8300], rb[8300];

		if (a->recorded == b->recorded && a->ret == b->ret && a->n == b->n &&
		    (a->n == 0 || memcmp(a->data, b->data, a->n) == 0))
			continue;
		if (nowait_raced(&sc->steps[i], a, b)) {
			(*raced)++;
			continue;
		}
		if (diffs++ >= 4)
			continue;
		describe_step(&sc->steps[i], what, sizeof(what));
		describe_rec(&sc->steps[i], a, ra, sizeof(ra));
		describe_rec(&sc->steps[i], b, rb, sizeof(rb));
		printf("MISMATCH %s, step %d (%s):\n  kernel: %s\n  model:  %s\n", sc->name, i,
		       what, ra, rb);
	}
	return diffs;
}

/* ---- this machine ---------------------------------------------------------------- */

static long read_long_file(const char *path)
{
	FILE *f = fopen(path, "re");
	long v = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%ld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/* read_ahead_kb of the disk that holds the scratch directory, or -1. */
static long scratch_read_ahead_kb(void)
{
	struct stat st;
	char path[128];
	long kb;

	if (stat(pc_test_dir(), &st) < 0)
		return -1;
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/queue/read_ahead_kb",
		 major(st.st_dev), minor(st.st_dev));
	kb = read_long_file(path);
	if (kb < 0) { /* a partition: its disk's queue */
		snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/../queue/read_ahead_kb",
			 major(st.st_dev), minor(st.st_dev));
		kb = read_long_file(path);
	}
	if (kb < 0) {
		snprintf(path, sizeof(path), "/sys/class/bdi/%u:%u/read_ahead_kb",
			 major(st.st_dev), minor(st.st_dev));
		kb = read_long_file(path);
	}
	return kb;
}

/*
 * Known model limitations: a scenario that differs on a kernel of the
 * table (tests/lib/pc-kernels.c) for a reason we have seen and not yet
 * modelled. There it must differ (so that the limitation is tested and the
 * entry goes when the model learns the case); it is not counted as a
 * mismatch. README.md and doc/kernels.md section 8 list them.
 */
static const struct {
	int major, minor;
	const char *scenario;
	const char *why;
} limitations[] = {
	{ 6, 1, "root-fault-around-after-read-around",
	  "6.1's read-around for a fault at page 20 of a cold 32-page file leaves page 24 out "
	  "(pages 16-23 and 25-31 come in); the model reads 16-31, as 6.18 does" },
};

/* The limitation that applies to scenario name on this kernel, or NULL. */
static const char *limitation(const char *name)
{
	const struct pc_test_kernel *k = pc_test_kernel();

	for (size_t i = 0; k && i < sizeof(limitations) / sizeof(limitations[0]); i++)
		if (limitations[i].major == k->major && limitations[i].minor == k->minor &&
		    strcmp(limitations[i].scenario, name) == 0)
			return limitations[i].why;
	return NULL;
}

START_TEST(kernel_and_model_agree)
{
	int run = 0, skipped = 0, mismatched = 0, steps = 0, limited = 0;
	long kb = scratch_read_ahead_kb();

	if (kb < 0 || kb / 4 > 4096) {
		pc_test_skip("differential", "cannot tell this disk's read_ahead_kb for the model");
		return;
	}
	readahead_pages = (uint64_t)kb / 4;
	signal(SIGPIPE, SIG_IGN); /* a worker that died is reported, not fatal */
	if (pc_test_under_valgrind()) {
		pc_test_skip("cachestat-steps", "valgrind 3.19 has no cachestat(2): not compared");
		pc_test_skip("faulting-touches", "memcheck reports the access itself: not run");
	}
	printf("differential: model tuned to read_ahead_kb=%ld (%" PRIu64 " pages)\n", kb,
	       readahead_pages);
	for (int i = 0; i < NSCENARIOS; i++) {
		const char *only = getenv("PC_DIFF_ONLY"); /* debugging: one scenario */
		int n = nsteps(&scenarios[i]);
		struct rec *real = calloc((size_t)n + 1, sizeof(*real));
		struct rec *model = calloc((size_t)n + 1, sizeof(*model));
		char why[200] = "";
		bool modeled = false;
		int diffs, raced = 0;

		ck_assert(real && model);
		if (only && strcmp(only, scenarios[i].name) != 0) {
			recs_free(real, n + 1);
			recs_free(model, n + 1);
			continue;
		}
		for (int attempt = 0;; attempt++) {
			uint64_t before = pc_test_reclaimed_pages(0), moved;

			if (real_run(i, real, why, sizeof(why))) {
				diffs = -1;
				break;
			}
			if (!modeled) /* the model is deterministic: once */
				model_run(i, model);
			modeled = true;
			raced = 0;
			diffs = compare(i, real, model, &raced);
			if (!diffs)
				break;
			/* the kernel reclaimed pages meanwhile (this machine's
			 * DAMON reclaim takes cold file pages at any time): the
			 * kernel's side is run again, twice at most. DAMON's
			 * count is refreshed only now (it costs ~0.5 s). */
			moved = pc_test_reclaimed_pages(1) - before;
			if (!moved || attempt == 2)
				break;
			printf("%s differs while reclaim took %" PRIu64 " pages: run again\n",
			       scenarios[i].name, moved);
			recs_free(real, n + 1);
			real = calloc((size_t)n + 1, sizeof(*real));
			ck_assert(real);
		}
		if (diffs < 0) {
			pc_test_skip(scenarios[i].name, why);
			skipped++;
		} else {
			const char *known = limitation(scenarios[i].name);

			run++;
			steps += n;
			if (known && diffs) {
				printf("%-48s DIFFERS, a known model limitation here: %s\n",
				       scenarios[i].name, known);
				limited++;
				recs_free(real, n + 1);
				recs_free(model, n + 1);
				continue;
			}
			if (known) {
				printf("%s: listed as a model limitation here, but the same: "
				       "the model has learned the case, drop the entry\n",
				       scenarios[i].name);
				mismatched++;
			}
			if (diffs)
				mismatched++;
			printf("%-48s %s", scenarios[i].name, diffs ? "DIFFERS" : "same");
			if (raced)
				printf(" (%d NOWAIT misses answered with data: raced)", raced);
			printf("\n");
		}
		recs_free(real, n + 1);
		recs_free(model, n + 1);
	}
	printf("differential: %d scenarios (%d steps) compared, %d skipped, %d differ, "
	       "%d differ as known model limitations\n", run, steps, skipped, mismatched, limited);
	fflush(stdout);
	ck_assert_int_ge(NSCENARIOS, 25);
	ck_assert_int_ge(run + skipped, getenv("PC_DIFF_ONLY") ? 1 : NSCENARIOS);
	ck_assert_int_eq(mismatched, 0);
}
END_TEST

int main(void)
{
	Suite *s;
	TCase *tc;
	SRunner *sr;
	int failed;

	if (!pc_test_is_root()) {
		printf("SKIP: the differential tests need root (to drop to uid 65534)\n");
		return 77;
	}
	if (sysconf(_SC_PAGESIZE) != PS) {
		printf("SKIP: the scenarios are written for 4 KiB pages\n");
		return 77;
	}
	pc_test_dir();
	s = suite_create("differential");
	tc = tcase_create("kernel-vs-model");
	tcase_add_test(tc, kernel_and_model_agree);
	tcase_set_timeout(tc, 600);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	pc_test_cases_dir(); /* a failed case leaves no directory behind */
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
