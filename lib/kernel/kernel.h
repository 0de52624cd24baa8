/* SPDX-License-Identifier: MIT */
/*
 * The running kernel's layer: the backend (backend.c) and the primitives it
 * is made of (cachestat, the gate's prediction, the NOWAIT prober, opening
 * by O_PATH). Everything here calls only libc, liburing and base/; what is
 * detected once per process sits above, in process.c.
 */
#ifndef PC_KERNEL_H
#define PC_KERNEL_H

#include <sys/types.h>

#include "backend.h"
#include "pc-private.h"

/* One open file as the kernel backend sees it. Public to process.c so that
 * a caller's own fd can be wrapped on the stack. */
struct pc_bfile {
	int fd;
	int owned;                 /* close fd in close() */
	struct pc_prober *prober;  /* made on the first probe */
	void *map;                 /* PROT_NONE mapping of pages [0, map_npages): never touched */
	uint64_t map_npages;
	int map_tried;
	uint64_t mnt_id;           /* unique mount id from k_fstat (statx), 0: unknown */
	int have_facts;            /* the caller's statx: k_fstat asks no more */
	mode_t facts_mode;
	uint64_t facts_size;
	int fs_known;              /* fs_blind_* below are set */
	int fs_blind_cachestat;    /* overlayfs: cachestat counts an empty mapping */
	int fs_blind_mincore;      /* hugetlbfs: no 4 KiB mapping, PTEs only */
	int fs_holes_uncached;     /* tmpfs: data lives only in the page cache */
};

/* The kernel backend's ops; its owner (process.c) adds the facts. */
extern const struct pc_backend_ops pc_kernel_ops;

/* Wrap an fd the caller owns (not closed by close()). */
int pc_kernel_bfile_wrap(int fd, struct pc_bfile **out);
/* What a bfile holds (its prober, its mapping, an owned fd), but not the
 * bfile itself. */
void pc_kernel_bfile_release(struct pc_bfile *f);

/* 1 if an io_uring RWF_NOWAIT read works in this process, 0 if not, or
 * -ENOMEM, -EMFILE, -ENFILE when the process was short of them to try;
 * pc_kernel_io_uring() asks once and keeps the answer. */
int pc_kernel_io_uring_works(void);
int pc_kernel_io_uring(void);

/* statfs's f_type of fd's filesystem (its magic number) into *type: 0, or
 * -errno (fs.c). */
int pc_fs_type(int fd, unsigned long *type);
/* 1 if fd's file is on overlayfs, 0 if not, -1 if fstatfs cannot tell. */
int pc_on_overlayfs(int fd);
/* Whether the calling thread has capability cap in its effective set:
 * 1 or 0 (0 too when capget fails) (gate.c). */
int pc_cap_effective(int cap);
/* The key NOWAIT results are remembered by: device and filesystem type
 * (fs.c). 0, or -errno. */
int pc_fs_key(int fd, dev_t *dev, long *fstype);
/* 1 when buffered reads of filesystem type fstype (statfs f_type) go
 * through the kernel's shared page-cache read path. */
int pc_fs_shared_read_path(long fstype);

/* pc_can_do_mincore() for fd, asking mincore_mode() (the detected enum
 * pc_mincore_mode) only when the answer depends on it (gate.c). */
int pc_gate_can_do_mincore(int fd, int (*mincore_mode)(void));

#endif
