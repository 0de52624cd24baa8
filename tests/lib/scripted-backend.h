/* SPDX-License-Identifier: MIT */
/*
 * A scripted implementation of struct pc_backend_ops: a tiny in-memory
 * kernel that answers as each variant of doc/kernels.md would (mincore FULL,
 * GATED_FAKED, GATED_MAPPED, MAPPED_ONLY, USELESS; RWF_NOWAIT clean,
 * destructive, unsupported per filesystem; cachestat absent, blocked, gated,
 * open), so that the detector and the residency strategy can be checked on
 * kernels this machine does not run. It counts every call per op and logs
 * every NOWAIT probe, so tests can assert what the strategy did, not only
 * what it answered.
 *
 * Files are small in-memory objects: a size, the page cache truth (one byte
 * per page), the pages mapped in the caller's fresh mapping, and per
 * identity whether the gate passes. The caller is "self" (root or an
 * ordinary user, as configured) except inside as_nobody, where the view
 * switches to uid 65534.
 *
 * Only backend.h and the public header are used: nothing here knows how
 * detect.c or residency.c work inside.
 */
#ifndef PC_SCRIPTED_BACKEND_H
#define PC_SCRIPTED_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"

/* dirfd values name filesystems: dirfd < 0 (and 0) is the memory
 * filesystem that holds memfds (tmpfs), 1 .. PC_SCRIPTED_MAX_FS - 1 are
 * disk filesystems the test configures. */
#define PC_SCRIPTED_MAX_FS 8
#define PC_SCRIPTED_MEMFS 0

/* Who the scripted caller is. */
enum pc_scripted_who {
	PC_SCRIPTED_SELF = 0,
	PC_SCRIPTED_NOBODY = 1,
};

/* The backend ops, for the call counters. */
enum pc_scripted_op {
	PC_SOP_PAGE_SIZE,
	PC_SOP_FSTAT,
	PC_SOP_MINCORE,
	PC_SOP_CACHESTAT,
	PC_SOP_PROBE,          /* calls; pages probed are in the probe log */
	PC_SOP_REOPEN_RANDOM,
	PC_SOP_GATE_PREDICT,
	PC_SOP_MODES,
	PC_SOP_NOWAIT_MODE,
	PC_SOP_CLOSE,
	PC_SOP_SCRATCH_NEW,
	PC_SOP_WRITE_PAGE,
	PC_SOP_SYNC,
	PC_SOP_EVICT,
	PC_SOP_SYSTEM_FILE,
	PC_SOP_FIND_COLD_PAGE,
	PC_SOP_AS_NOBODY,
	PC_SOP_PAUSE_MS,
	PC_SOP_NEXT_DATA,
	PC_SOP_COUNT
};

/* One filesystem. */
struct pc_scripted_fs {
	int nowait;            /* true behaviour: PC_NOWAIT_CLEAN, _DESTRUCTIVE, _UNSUPPORTED */
	int reported_nowait;   /* what the nowait_mode op answers (as if detected) */
	int scratch_error;     /* 0: scratch_new works there; else its -errno */
	int evict_works;       /* POSIX_FADV_DONTNEED drops clean, unmapped pages */
	unsigned int ra_random;   /* pages a NOWAIT miss reads in on a FADV_RANDOM fd (>= 1) */
	unsigned int ra_seq;      /* the same on an ordinary fd (>= 1) */
	unsigned int ra_delay;    /* pause_ms calls before that readahead completes */
	struct pc_sfile *cold_file; /* what find_cold_page may offer, or NULL */
};

/* The kernel variant. Fill with pc_scripted_kernel_init(), then adjust. */
struct pc_scripted_kernel {
	int mincore;           /* enum pc_mincore_mode, FULL .. USELESS */
	int cachestat;         /* enum pc_cachestat_mode, ABSENT .. OPEN */
	int caller_privileged; /* self is root (CAP_FOWNER): new files' gate passes for self */
	int as_nobody_error;   /* 0: as_nobody runs fn as uid 65534; else its -errno */
	long page_size;        /* bytes */
	/* mincore finds a PMD-sized folio (page_size / 8 pages, aligned) that
	 * holds a file's last page cached over the pages after EOF up to its
	 * end too, as shmem's huge pages do; 0: no page past EOF is cached */
	int pmd_tail;
	/* What the modes op reports (as if detected); defaults to the truth. */
	int modes_mincore;
	int modes_cachestat;
	struct pc_scripted_fs fs[PC_SCRIPTED_MAX_FS];
};

/* A file's description for pc_scripted_file_new(). */
struct pc_sfile_opts {
	uint64_t size;         /* bytes */
	int fs;                /* filesystem index (PC_SCRIPTED_MEMFS or 1..) */
	int type;              /* enum pc_bfile_type; 0 means REGULAR */
	int gate[2];           /* [who]: 1 the gate passes (owner, CAP_FOWNER, writer), 0 not */
	int predict[2];        /* [who]: what gate_predict answers; -1: the gate itself */
	int hugetlb;           /* cachestat answers EOPNOTSUPP */
};

/* A NOWAIT probe as it happened. */
struct pc_scripted_probe {
	const struct pc_sfile *file;
	unsigned int handle;   /* the open file description's id (pc_scripted_handle_id) */
	int random;            /* that description had POSIX_FADV_RANDOM */
	uint64_t page;
	int hit;
};

struct pc_scripted;

/* Defaults: the given modes, a root caller whose as_nobody works, 4 KiB
 * pages, the memory filesystem (NOWAIT unsupported, no eviction) and disk
 * filesystems 1.. with the given NOWAIT behaviour, eviction, ra 1/4, no
 * delay, scratch files allowed. */
void pc_scripted_kernel_init(struct pc_scripted_kernel *k, int mincore, int cachestat,
			     int nowait);

int pc_scripted_new(const struct pc_scripted_kernel *k, struct pc_scripted **out);
void pc_scripted_free(struct pc_scripted *s);
struct pc_backend *pc_scripted_backend(struct pc_scripted *s);
/* The live configuration (tests may change it between calls). */
struct pc_scripted_kernel *pc_scripted_config(struct pc_scripted *s);

/* Files belong to s and live until pc_scripted_free(). All pages start
 * not resident and not mapped. NULL on allocation failure. */
struct pc_sfile *pc_scripted_file_new(struct pc_scripted *s, const struct pc_sfile_opts *o);
/* Opens a description of file (writable or read-only, ordinary readahead). */
int pc_scripted_open(struct pc_scripted *s, struct pc_sfile *file, int writable,
		     struct pc_bfile **out);
void pc_scripted_set_system_file(struct pc_scripted *s, struct pc_sfile *file);

uint64_t pc_scripted_file_npages(const struct pc_sfile *file);
uint64_t pc_scripted_file_size(const struct pc_sfile *file);
/* The page cache truth; pages at or past EOF are never resident. */
int pc_scripted_resident(const struct pc_sfile *file, uint64_t page);
void pc_scripted_set_resident(struct pc_sfile *file, uint64_t page, int resident);
uint64_t pc_scripted_count_resident(const struct pc_sfile *file);
/* A mapped page is resident too: mapping one makes it resident. */
void pc_scripted_set_mapped(struct pc_sfile *file, uint64_t page, int mapped);
/* Truncate now (pages past the new end leave the cache). */
void pc_scripted_truncate(struct pc_sfile *file, uint64_t size);
/* Truncate to size right after the next fstat of this file returns. */
void pc_scripted_shrink_after_fstat(struct pc_sfile *file, uint64_t size);

/* Open descriptions. */
int pc_scripted_handle_random(const struct pc_bfile *f);
unsigned int pc_scripted_handle_id(const struct pc_bfile *f);
struct pc_sfile *pc_scripted_handle_file(const struct pc_bfile *f);
unsigned int pc_scripted_open_handles(const struct pc_scripted *s);

/* Make op fail with err (-errno) from now on; 0 to stop. */
void pc_scripted_inject(struct pc_scripted *s, enum pc_scripted_op op, int err);

/* Counters and the probe log, since creation or the last reset. */
unsigned long pc_scripted_calls(const struct pc_scripted *s, enum pc_scripted_op op);
/* The largest npages one mincore call asked for. */
uint64_t pc_scripted_max_mincore_pages(const struct pc_scripted *s);
/* The pages asked of mincore in all (since the last reset). */
uint64_t pc_scripted_mincore_pages(const struct pc_scripted *s);
/* cachestat calls with flags == 0 (real questions, not permission probes). */
unsigned long pc_scripted_cachestat_queries(const struct pc_scripted *s);
/* Writes, syncs and evictions that hit a file that is not a scratch file. */
unsigned long pc_scripted_foreign_changes(const struct pc_scripted *s);
/* Calls on a closed or NULL handle, double closes. */
unsigned long pc_scripted_misuse(const struct pc_scripted *s);
size_t pc_scripted_probe_log(const struct pc_scripted *s, const struct pc_scripted_probe **log);
void pc_scripted_reset_counts(struct pc_scripted *s);

#endif
