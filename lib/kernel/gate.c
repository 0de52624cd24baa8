/* SPDX-License-Identifier: MIT */
/*
 * Predicting the kernel's mincore gate (can_do_mincore, doc/kernels.md section 1):
 * a file's residency is revealed to the owner (by fsuid), to holders of
 * CAP_FOWNER over the file, and to anyone with write permission. A read-only
 * superblock denies write permission; a read-only bind mount does not.
 * The gate looks at the inode, the mount and the calling thread's
 * credentials, never at how the file was opened.
 */
#include <fcntl.h>
#include <linux/capability.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "kernel.h"

#ifndef AT_EMPTY_PATH
#define AT_EMPTY_PATH 0x1000
#endif
#ifndef STATX_MNT_ID
#define STATX_MNT_ID 0x00001000U /* Linux 5.8 */
#endif
#ifndef AT_EACCESS
#define AT_EACCESS 0x200
#endif
#ifndef __NR_faccessat2
#define __NR_faccessat2 439
#endif

#define UID_MAP "/proc/self/uid_map"
#define OVERFLOW_UID "/proc/sys/kernel/overflowuid"
#define ID_RANGE_ALL 4294967295UL /* "0 0 4294967295": the initial namespace */

/* The calling thread's filesystem uid/gid, as its user namespace shows them:
 * setfsuid(-1) fails and returns the current value. */
static uid_t current_fsuid(void)
{
	return (uid_t)setfsuid((uid_t)-1);
}

int pc_cap_effective(int cap)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];

	memset(data, 0, sizeof(data));
	if (syscall(SYS_capget, &hdr, data) < 0)
		return 0;
	return (data[cap / 32].effective >> (cap % 32)) & 1;
}

/* The id the kernel shows for ids that have no mapping in the caller's
 * user namespace (65534 unless the administrator changed it). */
static unsigned long overflow_id(const char *path)
{
	unsigned long id = 65534;
	FILE *f = fopen(path, "re");

	if (f) {
		if (fscanf(f, "%lu", &id) != 1)
			id = 65534;
		fclose(f);
	}
	return id;
}

/* How an id that fstat or setfsuid(-1) reported relates to the caller's
 * user namespace. An id without a mapping is shown as the overflow id, so
 * when the overflow id is itself mapped, seeing it proves nothing. */
enum id_seen {
	ID_UNMAPPED,
	ID_MAPPED,
	ID_AMBIGUOUS,
};

static enum id_seen id_classify(const char *map, const char *overflow, unsigned long id)
{
	unsigned long inside, outside, count, total = 0;
	int mapped = 0;
	FILE *f = fopen(map, "re");

	if (!f)
		return ID_MAPPED; /* no user namespaces: every id is mapped */
	while (fscanf(f, "%lu %lu %lu", &inside, &outside, &count) == 3) {
		if (id >= inside && id - inside < count)
			mapped = 1;
		total += count;
	}
	fclose(f);
	if (total >= ID_RANGE_ALL)
		return ID_MAPPED; /* nothing is unmapped, so nothing is munged */
	if (!mapped)
		return ID_UNMAPPED;
	return id == overflow_id(overflow) ? ID_AMBIGUOUS : ID_MAPPED;
}

static int mount_idmapped(int fd, const struct stat *st);

static atomic_long overflow_uid_cache = -1;

/* The overflow uid, read once (the sysctl is set at boot, and this runs
 * for every file), published as lib/process.c publishes its facts: threads
 * that race to read it first read the same value. */
static uid_t overflow_uid_once(void)
{
	long id = atomic_load_explicit(&overflow_uid_cache, memory_order_acquire);

	if (id < 0) {
		id = (long)overflow_id(OVERFLOW_UID);
		atomic_store_explicit(&overflow_uid_cache, id, memory_order_release);
	}
	return (uid_t)id;
}

/*
 * Whether fstat's uid is the file's owner as the gate sees it. An idmapped
 * mount shows an owner its idmap does not map as the overflow id, and the
 * gate then finds no owner at all: neither the caller whose fsuid is that
 * id nor CAP_FOWNER passes (seen on 6.18: root with CAP_FOWNER in the
 * initial namespace, a 0644 file of uid 0 through a mount mapping only
 * 1000-1009, mincore faked every page). So the overflow id on an idmapped
 * mount (or one whose options cannot be read) is no owner; the write
 * permission test, which the kernel evaluates through the idmap, decides.
 * The same on overlayfs: its mappings are of the layer's own file, which
 * the gate judges through the layer's mount, and a layer's idmap shows in
 * no mountinfo line of the overlay (seen on 6.18: root, a lower layer
 * mapping only 1000-1009, every page faked, the overlay mount itself not
 * idmapped).
 */
static int owner_known(int fd, const struct stat *st)
{
	if (st->st_uid != overflow_uid_once())
		return 1;
	if (pc_on_overlayfs(fd) != 0)
		return 0;
	return mount_idmapped(fd, st) == 0;
}

/* The owner passes: the kernel compares the caller's fsuid with the file's
 * uid (through the mount's idmap, as fstat shows it). Equal overflow ids
 * may stand for two different users, so they do not count. */
static int owner_passes(int fd, const struct stat *st)
{
	if (st->st_uid != current_fsuid())
		return 0;
	return id_classify(UID_MAP, OVERFLOW_UID, st->st_uid) == ID_MAPPED &&
	       owner_known(fd, st);
}

/* CAP_FOWNER passes when it is in the effective set and the file's uid is
 * mapped in the caller's user namespace. Only the uid: the gate's
 * owner-or-capable test ignores the gid (seen on 6.18 with a uid-mapped,
 * gid-unmapped file), unlike CAP_DAC_OVERRIDE, which needs both and which
 * faccessat evaluates. */
static int fowner_passes(int fd, const struct stat *st)
{
	if (!pc_cap_effective(CAP_FOWNER))
		return 0;
	return id_classify(UID_MAP, OVERFLOW_UID, st->st_uid) == ID_MAPPED &&
	       owner_known(fd, st);
}

/* Mount id of fd (statx STATX_MNT_ID, 5.8+), or -1. */
static long mount_id(int fd)
{
#ifdef STATX_MNT_ID
	struct statx stx;

	if (statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &stx) == 0 && (stx.stx_mask & STATX_MNT_ID))
		return (long)stx.stx_mnt_id;
#else
	(void)fd;
#endif
	return -1;
}

/* Whether a mountinfo line describes the mount with id mnt_id or, when that
 * is unknown (-1), any mount of the superblock whose device is dev: every
 * mount of one superblock shows the same superblock options. */
static int mountinfo_line_matches(const char *line, long mnt_id, dev_t dev)
{
	unsigned int maj, min;
	char *end;
	long id = strtol(line, &end, 10);

	if (mnt_id >= 0)
		return id == mnt_id;
	/* "ID PARENT MAJ:MIN ..." */
	if (sscanf(end, "%*d %u:%u", &maj, &min) != 2)
		return 0;
	return maj == major(dev) && min == minor(dev);
}

/* Whether a comma-separated option list (ending at a space) holds "ro". */
static int opts_have_ro(const char *opts)
{
	const char *end = opts + strcspn(opts, " \n");

	for (const char *p = opts; p < end;) {
		size_t n = strcspn(p, ", \n");

		if (n == 2 && p[0] == 'r' && p[1] == 'o')
			return 1;
		p += n + 1;
	}
	return 0;
}

/* 1 if a mountinfo line's superblock options (after " - FSTYPE SOURCE ")
 * hold "ro", 0 if not, -1 if the line is malformed. */
static int line_superblock_readonly(const char *line)
{
	const char *p = strstr(line, " - ");

	if (!p)
		return -1;
	p += 3;
	for (int field = 0; field < 2; field++) { /* skip fstype, source */
		p = strchr(p, ' ');
		if (!p)
			return -1;
		p++;
	}
	return opts_have_ro(p);
}

/* 1 if a mountinfo line's mount options (its sixth field) hold
 * "idmapped", 0 if not, -1 if the line is malformed. */
static int line_mount_idmapped(const char *line)
{
	const char *p = line;

	for (int field = 0; field < 5; field++) { /* id parent dev root point */
		p = strchr(p, ' ');
		if (!p)
			return -1;
		p++;
	}
	for (const char *end = p + strcspn(p, " \n"); p < end;) {
		size_t n = strcspn(p, ", \n");

		if (n == 8 && strncmp(p, "idmapped", 8) == 0)
			return 1;
		p += n + 1;
	}
	return 0;
}

/* what(line) for the mountinfo line of mount id (mount_id()); -1 if
 * unknown. With no mount id (-1: before 5.8), the first mount of the
 * device: right for the superblock's options, a guess for a mount's own. */
static int mountinfo_ask(long id, const struct stat *st, int (*what)(const char *line))
{
	char *line = NULL;
	size_t cap = 0;
	int ret = -1;
	FILE *f = fopen("/proc/self/mountinfo", "re");

	if (!f)
		return -1;
	while (getline(&line, &cap, f) > 0) {
		if (mountinfo_line_matches(line, id, st->st_dev)) {
			ret = what(line);
			break;
		}
	}
	free(line);
	fclose(f);
	return ret;
}

/* 1 if the superblock holding fd is read-only (from /proc/self/mountinfo),
 * 0 if not, -1 if unknown. */
static int superblock_readonly(int fd, const struct stat *st)
{
	return mountinfo_ask(mount_id(fd), st, line_superblock_readonly);
}

/* 1 if fd's mount is idmapped (Linux 5.12+ says so in its options), 0 if
 * not, -1 if unknown: also without a mount id, where the first mount of the
 * device may be the plain one of an idmapped pair. */
static int mount_idmapped(int fd, const struct stat *st)
{
	long id = mount_id(fd);

	return id < 0 ? -1 : mountinfo_ask(id, st, line_mount_idmapped);
}

/* Write permission, as inode_permission(MAY_WRITE) decides it, with the
 * thread's fs ids and effective capabilities (AT_EACCESS). faccessat runs
 * the full permission check (mode, ACLs, capabilities, immutable flag, a
 * read-only superblock, LSMs) first and looks at the mount's read-only flag
 * only after it passed: EROFS on a writable superblock therefore means
 * that only a read-only bind mount refused, which the gate ignores. */
static int write_permission_passes(int fd, const struct stat *st)
{
	if (syscall(__NR_faccessat2, fd, "", W_OK, AT_EACCESS | AT_EMPTY_PATH) == 0)
		return 1;
	switch (errno) {
	case EACCES:
	case EPERM: /* immutable or append-only */
		return 0;
	case EROFS:
		/* unknown superblock state: say hidden rather than guess truth */
		return superblock_readonly(fd, st) == 0;
	default:
		return pc_neg_errno();
	}
}

/* Only what mincore can be asked about: files that can be mapped and have
 * a page cache. */
static int mappable_file(int fd, struct stat *st)
{
	if (fstat(fd, st) < 0)
		return pc_neg_errno();
	if (!S_ISREG(st->st_mode) && !S_ISBLK(st->st_mode))
		return -EINVAL;
	return 0;
}

static int predict(int fd, const struct stat *st)
{
	if (owner_passes(fd, st) || fowner_passes(fd, st))
		return 1;
	return write_permission_passes(fd, st);
}

int pc_gate_predict(int fd)
{
	struct stat st;
	int ret = mappable_file(fd, &st);

	return ret < 0 ? ret : predict(fd, &st);
}

/*
 * On overlayfs a mapping is of a layer's file, and the gate judges that
 * file: maybe another inode (a metacopy file's data sits in a lower
 * layer), through the layer's own mount (its idmap, its superblock's
 * read-only flag), none of which fstat or faccessat on the overlay shows.
 * Where the kernel fakes (PC_MINCORE_GATED_FAKED) and fd is open for
 * reading, the kernel is asked instead: a page far past the end of the
 * file, never cached, reads resident exactly when the answers are faked
 * (seen on 6.18: a metacopy file chowned to uid 65534 through the overlay,
 * its data root's 0644 file below, was predicted 1 for uid 65534, and
 * every page was faked). Regular files only: a block device's fstat size
 * is 0, and the page would be one it may cache. A file grown past the page
 * meanwhile (it read 1) is not asked. The mapping updates the file's atime
 * where an overlay's mmap does (relatime). An fd that cannot be mapped
 * (O_PATH, O_WRONLY) is asked through the same inode opened again for
 * reading through /proc/self/fd (a regular file's open runs no driver),
 * where the caller may read it: the prediction alone said 1 for such an
 * fd of the metacopy file above. 1 or 0; NOT_ASKED where it cannot ask
 * (not overlayfs, another mode, the file unreadable to the caller, the
 * file grew); -ENOMEM and the like, the process short of memory.
 */
#define NOT_ASKED 2

static int overlay_asked(int fd, const struct stat *st, int (*mincore_mode)(void))
{
	long ps = pc_page_size();
	unsigned char v = 0;
	struct stat now;
	uint64_t page;
	int ret, rfd = -1, flags;
	void *map;

	if (!S_ISREG(st->st_mode) || pc_on_overlayfs(fd) != 1 ||
	    mincore_mode() != PC_MINCORE_GATED_FAKED || ps <= 0)
		return NOT_ASKED;
	/* past the end and any large folio */
	page = pc_never_cached_page((uint64_t)st->st_size, (uint64_t)ps);
	if (page > (uint64_t)INT64_MAX / (uint64_t)ps - 1)
		return NOT_ASKED;
	flags = fcntl(fd, F_GETFL);
	if (flags >= 0 && ((flags & O_PATH) == O_PATH || (flags & O_ACCMODE) == O_WRONLY)) {
		struct stat again;

		rfd = pc_reopen(fd, O_RDONLY | O_NONBLOCK);
		if (rfd < 0)
			return pc_err_is_resource(rfd) ? rfd : NOT_ASKED;
		/* the very inode: /proc/self/fd names it, whatever its name */
		if (fstat(rfd, &again) < 0 || again.st_dev != st->st_dev ||
		    again.st_ino != st->st_ino) {
			close(rfd);
			return NOT_ASKED;
		}
	}
	map = mmap(NULL, (size_t)ps, PROT_NONE, MAP_SHARED, rfd >= 0 ? rfd : fd,
		   (off_t)(page * (uint64_t)ps));
	ret = map == MAP_FAILED ? pc_neg_errno() : 0;
	if (rfd >= 0)
		close(rfd); /* the mapping keeps the file */
	if (ret < 0)
		return pc_err_is_resource(ret) ? ret : NOT_ASKED;
	ret = mincore(map, (size_t)ps, &v) < 0 ? pc_neg_errno() : !(v & 1);
	munmap(map, (size_t)ps);
	if (ret < 0)
		return pc_err_is_resource(ret) ? ret : NOT_ASKED;
	/* faked, or a page of a file grown that far */
	if (ret == 0 && (fstat(fd, &now) < 0 || (uint64_t)now.st_size > page * (uint64_t)ps))
		return NOT_ASKED;
	return ret;
}

int pc_gate_can_do_mincore(int fd, int (*mincore_mode)(void))
{
	struct stat st;
	int ret;

	if (fd < 0)
		return -EBADF;
	ret = mappable_file(fd, &st);
	if (ret < 0)
		return ret;
	if (mincore_mode() == PC_MINCORE_FULL)
		return 1;
	ret = overlay_asked(fd, &st, mincore_mode);
	return ret == NOT_ASKED ? predict(fd, &st) : ret;
}
