/* SPDX-License-Identifier: MIT */
/*
 * The questions the residency strategy and the detector ask of a kernel.
 *
 * The strategy (strategy/detect.c, strategy/residency.c) is written once
 * against these ops and runs unchanged on the real kernel (kernel/) and on
 * the in-process model (model/); it makes no syscall and calls nothing but
 * the ops and base/. A backend calls nothing above this interface. What
 * the layer above detected once (the modes, a filesystem's NOWAIT mode) it
 * lends through struct pc_facts: the strategy asks, and never calls up.
 * doc/design.md ("Layers") has the whole picture; tests/check-layers.py
 * keeps it true.
 */
#ifndef PC_BACKEND_H
#define PC_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "pagecache/pagecache.h"

/* One open file as a backend sees it: the kernel wraps an fd, the model a
 * pcm_fd. Owned by the backend; the strategy only passes it back. */
struct pc_bfile;

enum pc_bfile_type {
	PC_BFILE_REGULAR = 1,  /* regular files and memfds */
	PC_BFILE_BLOCK,        /* block devices (size from BLKGETSIZE64) */
	PC_BFILE_OTHER,        /* directories, FIFOs, sockets, char devices ... */
};

struct pc_bstat {
	int type;              /* enum pc_bfile_type */
	uint64_t size;         /* bytes */
};

/* The detected process-wide facts the strategy needs. */
struct pc_modes {
	int mincore;           /* enum pc_mincore_mode (policy for unprivileged users) */
	int cachestat;         /* enum pc_cachestat_mode */
};

struct pc_backend;

struct pc_backend_ops {
	long (*page_size)(struct pc_backend *b);

	/* --- questions about one open file ---------------------------------- */
	int (*fstat)(struct pc_backend *b, struct pc_bfile *f, struct pc_bstat *st);
	/* mincore(2) of file pages [page, page + npages) through a fresh,
	 * untouched PROT_READ MAP_SHARED mapping; pages past EOF are allowed
	 * (they are never touched). vec gets one byte per page, bit 0 set for
	 * resident, exactly as the kernel fills it. 0 or -errno. */
	int (*mincore)(struct pc_backend *b, struct pc_bfile *f, uint64_t page,
		       uint64_t npages, unsigned char *vec);
	/* Optional (NULL: any hole may be cached). Where a file's data lives
	 * only in the page cache (and swap), so that no page of a hole is ever
	 * cached (tmpfs, memfds): *data = the first page at or after page that
	 * holds data (lseek SEEK_DATA), UINT64_MAX when none does. -EOPNOTSUPP
	 * elsewhere: a disk filesystem caches the zeroes read from a hole. */
	int (*next_data)(struct pc_backend *b, struct pc_bfile *f, uint64_t page,
			 uint64_t *data);
	/* cachestat(2) of a byte range, flags passed through. 0 or -errno. */
	int (*cachestat)(struct pc_backend *b, struct pc_bfile *f, uint64_t off,
			 uint64_t len, unsigned int flags, struct pc_cachestat *out);
	/* One 1-byte RWF_NOWAIT read per listed page, in the order given;
	 * resident[i] = 1 for a hit, 0 for EAGAIN or EOF. *source gets
	 * PC_SOURCE_IO_URING or PC_SOURCE_PREADV2. n or -errno. */
	ssize_t (*probe)(struct pc_backend *b, struct pc_bfile *f, const uint64_t *pages,
			 size_t n, uint8_t *resident, int *source);
	/* A new open file description of the same file, read-only, with
	 * POSIX_FADV_RANDOM, so that probing does not disturb the caller's fd
	 * (its readahead state). Closed with close(). 0 or -errno. */
	int (*reopen_random)(struct pc_backend *b, struct pc_bfile *f, struct pc_bfile **out);
	/* The predicate (kernel/gate.c on the kernel): 1 pass, 0 fail, -errno. */
	int (*gate_predict)(struct pc_backend *b, struct pc_bfile *f);
	void (*close)(struct pc_backend *b, struct pc_bfile *f);

	/* --- primitives for the detector ------------------------------------ */
	/* A scratch file of npages zero pages, owned by the caller: in memory
	 * (memfd) when dirfd < 0, else an unlinked O_TMPFILE on dirfd's
	 * filesystem. 0, -EROFS/-EACCES/-EOPNOTSUPP... when it cannot be made. */
	int (*scratch_new)(struct pc_backend *b, int dirfd, uint64_t npages,
			   struct pc_bfile **out);
	/* Write one page of non-zero bytes at page (caches it). */
	int (*write_page)(struct pc_backend *b, struct pc_bfile *f, uint64_t page);
	int (*sync)(struct pc_backend *b, struct pc_bfile *f);
	/* POSIX_FADV_DONTNEED over [page, page + npages). */
	int (*evict)(struct pc_backend *b, struct pc_bfile *f, uint64_t page, uint64_t npages);
	/* A file that ordinary users cannot write, owned by root, and that is
	 * surely cached (the libc holding printf). 0 or -errno. */
	int (*system_file)(struct pc_backend *b, struct pc_bfile **out);
	/* A readable file in dirfd's directory with at least one page that is
	 * not resident and whose residency the caller can see; *page gets it.
	 * -ENOENT when there is none. */
	int (*find_cold_page)(struct pc_backend *b, int dirfd, struct pc_bfile **out,
			      uint64_t *page);
	/* Run fn as an unprivileged user (fsuid/fsgid 65534, no capabilities)
	 * would: the kernel uses a helper thread that called setfsuid(65534).
	 * Returns fn's value (the detector's fns return 0 and leave their
	 * answers in arg), or -EPERM when the caller cannot switch (it is
	 * unprivileged already) and fn did not run. */
	int (*as_nobody)(struct pc_backend *b, int (*fn)(struct pc_backend *b, void *arg),
			 void *arg);
	/* Wait before polling again (the model returns at once). */
	void (*pause_ms)(struct pc_backend *b, unsigned int ms);
};

/* What the backend's owner knows of the kernel behind it, detected with the
 * strategy's own procedures and cached by the owner (process.c for the
 * running kernel, model/api.c for a model task). */
struct pc_facts {
	/* Detected modes (policy for unprivileged users). 0 or -errno. */
	int (*modes)(struct pc_backend *b, struct pc_modes *out);
	/* enum pc_nowait_mode of f's filesystem. Asked only when a probe is
	 * needed: finding out writes a scratch file. */
	int (*nowait_mode)(struct pc_backend *b, struct pc_bfile *f);
};

struct pc_backend {
	const struct pc_backend_ops *ops;
	const struct pc_facts *facts; /* the owner's; NULL: pc_residency_on() refuses */
	void *ctx;                  /* the implementation's own state */
};

/* ---- the strategy, written once (detect.c, residency.c) ------------------ */

/* Decision procedures of doc/kernels.md section 5; each returns the enum value
 * or -errno. They make no decision on what "this machine" is. */
int pc_detect_mincore_on(struct pc_backend *b);
int pc_detect_cachestat_on(struct pc_backend *b);
int pc_detect_nowait_on(struct pc_backend *b, int dirfd);
/* The same; without may_use_cold_page only the scratch file is tried, and
 * nothing of anyone else's is read (pc_residency() without perturbation). */
int pc_detect_nowait_on_dir(struct pc_backend *b, int dirfd, int may_use_cold_page);

enum pc_verdict {
	PC_VERDICT_TRUTHFUL,   /* mincore tells this caller the truth about the file */
	PC_VERDICT_HIDDEN,     /* mincore fakes, shows mapped pages only, or is useless */
};

/* Whether mincore is truthful for f (size bytes) and this caller: the
 * beyond-EOF probe, then the gate where a failed gate reads 0 too.
 * enum pc_verdict or -errno. */
int pc_file_verdict(struct pc_backend *b, struct pc_bfile *f, const struct pc_modes *m,
		    uint64_t size);

/* pc_residency()'s strategy for an open backend file. */
int pc_residency_on(struct pc_backend *b, struct pc_bfile *f, uint64_t offset,
		    uint64_t length, unsigned int flags, struct pc_residency **out);

/* ---- the real kernel (process.c) -------------------------------------- */

/* The process-wide kernel backend, with the process's detection caches as
 * its facts. */
struct pc_backend *pc_kernel_backend(void);
/* pc_residency_on() for the caller's fd on the kernel; with facts (the
 * caller's statx, pc_file_facts), the backend's fstat answers from them. */
int pc_kernel_residency(int fd, const struct pc_file_facts *facts, uint64_t offset,
			uint64_t length, unsigned int flags, struct pc_residency **out);
/* pc_detect_nowait(), with or without the cold-page fallback. */
int pc_nowait_for_dir(int dirfd, int may_use_cold_page);
/* The NOWAIT mode remembered for a filesystem, or -ENOENT. */
int pc_nowait_cached(dev_t dev, long fstype);
/* For a filesystem of type fstype whose own directories teach nothing (none
 * the caller may write): the RWF_NOWAIT mode learned with a scratch file in
 * $TMPDIR, /var/tmp, /tmp or $HOME, on a filesystem of the shared read path
 * (both must be), or PC_NOWAIT_UNKNOWN; where (when not NULL) gets the
 * directory it was learned in. -errno when short of memory or descriptors. */
int pc_nowait_borrowed(long fstype, char *where, size_t size);

#endif
