/* SPDX-License-Identifier: MIT */
/*
 * pagecache audit: what this kernel reveals about the page cache and to
 * whom. The library's detectors (pc_detect_*) give the facts; this file
 * adds the filesystem of each PATH, the caller's own rights, and a verdict
 * on the side channels of doc/kernels.md for unprivileged users.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <linux/capability.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "cli.h"

#ifndef STATX_MNT_ID
#define STATX_MNT_ID 0x00001000U
#endif

static const char audit_usage[] =
	"Usage: pagecache audit [--json] [PATH...]\n"
	"\n"
	"Report what this kernel reveals about the page cache and to whom: the\n"
	"mincore(2) and cachestat(2) semantics for unprivileged users, how\n"
	"RWF_NOWAIT reads behave on the filesystem of each PATH (default: the\n"
	"current directory), io_uring, the page size, the kernel release and\n"
	"your own rights; then a verdict on which page-cache side channels are\n"
	"open to unprivileged users here.\n"
	"\n"
	"Detection is side-effect free, except that the RWF_NOWAIT check writes\n"
	"an unlinked O_TMPFILE in each directory (or, in a read-only directory,\n"
	"may bring one page of a file there into the cache).\n"
	"\n"
	"      --json              one JSON document (format_version 1)\n"
	"  -h, --help              show this help\n"
	"\n"
	"Exit status: 0 all went well, 1 a PATH could not be examined, 2 usage error.\n";

enum { OPT_JSON = 256 };

static const struct option audit_options[] = {
	{ "json", no_argument, NULL, OPT_JSON },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

enum channel_status { CH_UNKNOWN, CH_OPEN, CH_CLOSED };

static const char *status_name(enum channel_status s)
{
	return s == CH_OPEN ? "open" : s == CH_CLOSED ? "closed" : "unknown";
}

struct fs_info {
	const char *path;       /* as given */
	int err;                /* -errno when the path could not be examined */
	char fstype[64];
	char *mount_point;      /* NULL when not found */
	unsigned int major, minor;
	int nowait;             /* enum pc_nowait_mode or -errno */
	char nowait_origin[PATH_MAX]; /* "" or the directory the mode was learned in */
};

struct caller {
	uid_t uid, euid, fsuid;
	bool fowner, dac_override, sys_admin, ipc_lock;
	const char *view;       /* "root", "cap_fowner", "unprivileged" */
};

struct audit {
	struct utsname uts;
	long page_size;
	int mincore, cachestat, io_uring;
	int io_uring_disabled;  /* the sysctl, -1 when absent */
	struct caller me;
	struct fs_info *fs;
	size_t nfs;
};

/* ---- gathering ---- */

static void get_caller(struct caller *c)
{
	uid_t ruid, euid, suid;

	getresuid(&ruid, &euid, &suid);
	c->uid = ruid;
	c->euid = euid;
	c->fsuid = (uid_t)setfsuid((uid_t)-1); /* an invalid id only reads it */
	c->fowner = cap_effective(CAP_FOWNER);
	c->dac_override = cap_effective(CAP_DAC_OVERRIDE);
	c->sys_admin = cap_effective(CAP_SYS_ADMIN);
	c->ipc_lock = cap_effective(CAP_IPC_LOCK);
	if (c->fowner)
		c->view = c->euid == 0 ? "root" : "cap_fowner";
	else
		c->view = "unprivileged";
}

static int read_sysctl_int(const char *path)
{
	char buf[32];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return atoi(buf);
}

/* mountinfo escapes space, tab, newline and backslash as \ooo */
static void unescape_octal(char *s)
{
	char *o = s;

	while (*s) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*o++ = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 | (s[3] - '0'));
			s += 4;
		} else {
			*o++ = *s++;
		}
	}
	*o = '\0';
}

/* The mount point and filesystem type of mount id in /proc/self/mountinfo. */
static void find_mount(uint64_t mnt_id, struct fs_info *fi)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL;
	size_t cap = 0;

	if (!f)
		return;
	while (getline(&line, &cap, f) > 0) {
		char *sep = strstr(line, " - ");
		char *save = NULL, *field[5], *fstype;
		unsigned long long id;
		int i;

		if (!sep)
			continue;
		*sep = '\0';
		for (i = 0; i < 5; i++) {
			field[i] = strtok_r(i ? NULL : line, " ", &save);
			if (!field[i])
				break;
		}
		if (i < 5 || sscanf(field[0], "%llu", &id) != 1 || id != mnt_id)
			continue;
		fstype = strtok_r(sep + 3, " ", &save);
		if (fstype)
			snprintf(fi->fstype, sizeof(fi->fstype), "%s", fstype);
		unescape_octal(field[4]);
		fi->mount_point = strdup(field[4]);
		break;
	}
	free(line);
	fclose(f);
}

static const char *magic_name(unsigned long magic)
{
	static const struct {
		unsigned long magic;
		const char *name;
	} names[] = {
		{ 0xef53, "ext4" }, { 0x58465342, "xfs" }, { 0x9123683e, "btrfs" },
		{ 0x01021994, "tmpfs" }, { 0x9fa0, "proc" }, { 0x62656572, "sysfs" },
		{ 0x794c7630, "overlay" }, { 0x6969, "nfs" }, { 0x65735546, "fuse" },
		{ 0xf2f52010, "f2fs" }, { 0x2fc12fc1, "zfs" }, { 0x958458f6, "hugetlbfs" },
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].magic == magic)
			return names[i].name;
	return NULL;
}

static void examine_path(struct fs_info *fi)
{
	struct statx stx;
	struct statfs sfs;
	int fd, dirfd;

	fi->nowait = PC_NOWAIT_UNKNOWN;
	/* O_PATH: statx, fstatfs and a directory's *at calls need no more, and
	 * a device or FIFO named here is looked at, never opened */
	fd = open(fi->path, O_PATH | O_CLOEXEC);
	if (fd < 0) {
		fi->err = -errno;
		return;
	}
	if (statx(fd, "", AT_EMPTY_PATH, STATX_TYPE | STATX_MNT_ID, &stx) < 0) {
		fi->err = -errno;
		close(fd);
		return;
	}
	fi->major = stx.stx_dev_major;
	fi->minor = stx.stx_dev_minor;
	if (stx.stx_mask & STATX_MNT_ID)
		find_mount(stx.stx_mnt_id, fi);
	if (!fi->fstype[0] && fstatfs(fd, &sfs) == 0) {
		const char *name = magic_name((unsigned long)sfs.f_type);

		if (name)
			snprintf(fi->fstype, sizeof(fi->fstype), "%s", name);
		else
			snprintf(fi->fstype, sizeof(fi->fstype), "0x%lx", (unsigned long)sfs.f_type);
	}
	/* the NOWAIT check works in a directory: a file's own directory */
	if (S_ISDIR(stx.stx_mode)) {
		dirfd = fd;
	} else {
		char *copy = strdup(fi->path), *slash;

		if (!copy) {
			fi->err = -ENOMEM;
			close(fd);
			return;
		}
		slash = strrchr(copy, '/');
		if (!slash)
			strcpy(copy, ".");
		else if (slash == copy)
			copy[1] = '\0';
		else
			*slash = '\0';
		dirfd = open(copy, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		free(copy);
		close(fd);
		if (dirfd < 0) {
			fi->err = -errno;
			return;
		}
	}
	/* not with a cold page of a file: audit changes no page cache */
	fi->nowait = pc_detect_nowait_origin(dirfd, fi->nowait_origin, sizeof(fi->nowait_origin));
	close(dirfd);
}

/* ---- the verdict ---- */

struct channel {
	const char *id;         /* "mincore", "cachestat", "rwf_nowait", "io_uring" */
	const struct fs_info *fs; /* per-filesystem channels */
	enum channel_status status;
	const char *probe;      /* "clean", "destructive" or NULL */
	const char *why;
};

/* What a detector's mode means, and the side channel it leaves. */
struct mode_info {
	int mode;
	enum channel_status status;
	const char *meaning;
};

/* Each table ends with its UNKNOWN mode, which stands for any mode not
 * listed (a -errno too). */
static const struct mode_info mincore_modes[] = {
	{ PC_MINCORE_FULL, CH_OPEN,
	  "no gate: any user sees which pages of any file it can map are cached" },
	{ PC_MINCORE_GATED_FAKED, CH_CLOSED,
	  "gated (5.2+): files a user neither owns nor may write read as fully "
	  "resident, whatever the truth" },
	{ PC_MINCORE_GATED_MAPPED, CH_CLOSED,
	  "gated: for files a user neither owns nor may write, only the pages it "
	  "mapped itself" },
	{ PC_MINCORE_MAPPED_ONLY, CH_CLOSED,
	  "only the caller's own mapped pages, for everyone (5.0-rc1..rc3)" },
	{ PC_MINCORE_USELESS, CH_CLOSED,
	  "every page reads as resident (an emulation): no information" },
	{ PC_MINCORE_UNKNOWN, CH_UNKNOWN, "could not be found out" },
};

static const struct mode_info cachestat_modes[] = {
	{ PC_CACHESTAT_ABSENT, CH_CLOSED, "not in this kernel (before 6.5)" },
	{ PC_CACHESTAT_BLOCKED, CH_CLOSED, "refused outright by a seccomp or LSM filter" },
	{ PC_CACHESTAT_GATED, CH_CLOSED, "gated (6.14+): owners, writers and CAP_FOWNER only" },
	{ PC_CACHESTAT_OPEN, CH_OPEN, "open: any user who can open a file gets its page counts" },
	{ PC_CACHESTAT_UNKNOWN, CH_UNKNOWN, "could not be found out" },
};

static const struct mode_info nowait_modes[] = {
	{ PC_NOWAIT_UNSUPPORTED, CH_CLOSED, "not supported on this filesystem (EOPNOTSUPP)" },
	{ PC_NOWAIT_CLEAN, CH_OPEN,
	  "a miss fails with EAGAIN and reads nothing: a side-effect-free probe" },
	{ PC_NOWAIT_DESTRUCTIVE, CH_OPEN,
	  "a miss fails with EAGAIN and starts reading the page in (6.12+)" },
	{ PC_NOWAIT_UNKNOWN, CH_UNKNOWN, "could not be found out (a read-only directory?)" },
};

static const struct mode_info *mode_info(const struct mode_info *table, size_t n, int mode)
{
	for (size_t i = 0; i + 1 < n; i++)
		if (table[i].mode == mode)
			return &table[i];
	return &table[n - 1];
}

#define MODE_INFO(table, mode) mode_info(table, sizeof(table) / sizeof(table[0]), mode)

static const char *mincore_meaning(int mode)
{
	return MODE_INFO(mincore_modes, mode)->meaning;
}

static const char *cachestat_meaning(int mode)
{
	return MODE_INFO(cachestat_modes, mode)->meaning;
}

static const char *nowait_meaning(int mode)
{
	return MODE_INFO(nowait_modes, mode)->meaning;
}

static void nowait_channel(struct channel *ch, int mode)
{
	ch->status = MODE_INFO(nowait_modes, mode)->status;
	ch->probe = NULL;
	switch (mode) {
	case PC_NOWAIT_CLEAN:
		ch->probe = "clean";
		ch->why = "a side-effect-free probe of any readable file, page by page";
		break;
	case PC_NOWAIT_DESTRUCTIVE:
		ch->probe = "destructive";
		ch->why = "a probe that caches what it misses: each page tells once "
			  "(the first access only)";
		break;
	case PC_NOWAIT_UNSUPPORTED:
		ch->why = "RWF_NOWAIT is not supported on this filesystem";
		break;
	default:
		ch->why = "the RWF_NOWAIT behaviour could not be found out here";
		break;
	}
}

/* Fills ch (room for 2 + 2 * nfs entries); returns how many. */
static size_t channels(const struct audit *a, struct channel *ch)
{
	size_t n = 0;

	ch[n] = (struct channel){ "mincore", NULL, MODE_INFO(mincore_modes, a->mincore)->status,
				  NULL, mincore_meaning(a->mincore) };
	n++;
	ch[n] = (struct channel){ "cachestat", NULL,
				  MODE_INFO(cachestat_modes, a->cachestat)->status, NULL,
				  cachestat_meaning(a->cachestat) };
	n++;
	for (size_t i = 0; i < a->nfs; i++) {
		const struct fs_info *fi = &a->fs[i];

		if (fi->err)
			continue;
		ch[n].id = "rwf_nowait";
		ch[n].fs = fi;
		nowait_channel(&ch[n], fi->nowait);
		n++;
		ch[n].id = "io_uring";
		ch[n].fs = fi;
		if (a->io_uring > 0) {
			nowait_channel(&ch[n], fi->nowait);
			if (fi->nowait == PC_NOWAIT_CLEAN)
				ch[n].why = "the same probe as preadv2, in batches: side-effect free";
			else if (fi->nowait == PC_NOWAIT_DESTRUCTIVE)
				ch[n].why = "the same probe as preadv2, in batches: it caches what "
					    "it misses (the first access only)";
		} else {
			ch[n].status = CH_CLOSED;
			ch[n].probe = NULL;
			ch[n].why = "io_uring is unavailable or disabled for this process";
		}
		n++;
	}
	return n;
}

static const char *channel_title(const char *id)
{
	if (strcmp(id, "mincore") == 0)
		return "mincore(2)";
	if (strcmp(id, "cachestat") == 0)
		return "cachestat(2)";
	if (strcmp(id, "rwf_nowait") == 0)
		return "preadv2(RWF_NOWAIT)";
	return "io_uring RWF_NOWAIT reads";
}

/* ---- output ---- */

static const char *cap_word(bool b)
{
	return b ? "yes" : "no";
}

/* How many channels are open, closed and unknown: count[CH_OPEN] ... */
static void count_status(const struct channel *ch, size_t nch, size_t count[3])
{
	count[CH_UNKNOWN] = count[CH_OPEN] = count[CH_CLOSED] = 0;
	for (size_t i = 0; i < nch; i++)
		count[ch[i].status]++;
}

static void text_report(const struct audit *a, const struct channel *ch, size_t nch)
{
	const struct caller *me = &a->me;
	size_t count[3];

	printf("kernel:     %s %s (%s)\n", a->uts.sysname, a->uts.release, a->uts.machine);
	printf("page size:  %ld bytes\n", a->page_size);
	printf("library:    libpagecache %s\n", pc_version());
	printf("\nWhat the kernel reveals to users who neither own nor may write a file:\n");
	printf("  mincore:    %-12s %s\n", a->mincore >= 0 ? pc_mincore_mode_name(a->mincore) : "unknown",
	       mincore_meaning(a->mincore));
	printf("  cachestat:  %-12s %s\n",
	       a->cachestat >= 0 ? pc_cachestat_mode_name(a->cachestat) : "unknown",
	       cachestat_meaning(a->cachestat));
	printf("  io_uring:   %-12s %s", a->io_uring > 0 ? "available" : "unavailable",
	       a->io_uring > 0 ? "RWF_NOWAIT reads through io_uring work for this process" :
				 "io_uring cannot be used by this process");
	if (a->io_uring_disabled >= 0)
		printf(" (sysctl kernel.io_uring_disabled = %d)", a->io_uring_disabled);
	putchar('\n');
	for (size_t i = 0; i < a->nfs; i++) {
		const struct fs_info *fi = &a->fs[i];

		printf("  RWF_NOWAIT on ");
		text_write_path(stdout, fi->path, strlen(fi->path));
		if (fi->err) {
			printf(": %s\n", strerror(-fi->err));
			continue;
		}
		printf(" (%s", fi->fstype[0] ? fi->fstype : "?");
		if (fi->mount_point) {
			printf(" on ");
			text_write_path(stdout, fi->mount_point, strlen(fi->mount_point));
		}
		printf(", device %u:%u):\n              %-12s %s\n", fi->major, fi->minor,
		       fi->nowait >= 0 ? pc_nowait_mode_name(fi->nowait) : "unknown",
		       nowait_meaning(fi->nowait));
		if (fi->nowait_origin[0]) {
			printf("              (learned with a scratch file in ");
			text_write_path(stdout, fi->nowait_origin, strlen(fi->nowait_origin));
			printf(": you may write nowhere here, and both filesystems read through "
			       "the kernel's shared page-cache path)\n");
		}
	}
	printf("\nYou: uid %u, euid %u, fsuid %u; CAP_FOWNER %s, CAP_DAC_OVERRIDE %s, "
	       "CAP_SYS_ADMIN %s, CAP_IPC_LOCK %s\n",
	       (unsigned int)me->uid, (unsigned int)me->euid, (unsigned int)me->fsuid,
	       cap_word(me->fowner), cap_word(me->dac_override), cap_word(me->sys_admin),
	       cap_word(me->ipc_lock));
	if (me->fowner)
		printf("  view: %s: you see the residency of every file (CAP_FOWNER passes "
		       "both gates), except files an idmapped mount shows without an owner\n",
		       me->view);
	else
		printf("  view: unprivileged%s: you see the residency of files you own or may "
		       "write; others are 'unknown'\n", me->euid == 0 ? " (uid 0 without CAP_FOWNER)" : "");

	printf("\nVerdict: page-cache side channels for unprivileged users on this machine\n");
	for (size_t i = 0; i < nch; i++) {
		const struct channel *c = &ch[i];

		printf("  %-7s  %s", status_name(c->status), channel_title(c->id));
		if (c->fs) {
			printf(" on ");
			text_write_path(stdout, c->fs->path, strlen(c->fs->path));
			printf(" (%s)", c->fs->fstype[0] ? c->fs->fstype : "?");
		}
		printf(": %s\n", c->why);
	}
	count_status(ch, nch, count);
	printf("  => %zu open, %zu closed, %zu unknown.", count[CH_OPEN], count[CH_CLOSED],
	       count[CH_UNKNOWN]);
	if (count[CH_OPEN] == 0 && count[CH_UNKNOWN] == 0)
		printf(" Unprivileged users cannot learn which pages of others' files are cached.\n");
	else if (count[CH_OPEN])
		printf(" Unprivileged users can learn which pages of files they may read are "
		       "cached through the open channels.\n");
	else
		putchar('\n');
	for (size_t i = 0; i < nch; i++) {
		if (ch[i].status == CH_OPEN && strcmp(ch[i].id, "io_uring") == 0) {
			printf("  (sysctl kernel.io_uring_disabled=2 closes the io_uring channel; "
			       "the preadv2 one stays)\n");
			break;
		}
	}
}

static void json_kernel(struct json *j, const struct audit *a)
{
	json_begin_object(j, "kernel");
	json_cstring(j, "sysname", a->uts.sysname);
	json_cstring(j, "release", a->uts.release);
	json_cstring(j, "version", a->uts.version);
	json_cstring(j, "machine", a->uts.machine);
	json_uint(j, "page_size", (uint64_t)a->page_size);
	json_cstring(j, "library_version", pc_version());
	json_end_object(j);
}

/* "mincore", "cachestat" and "io_uring": what the detectors found. */
static void json_detectors(struct json *j, const struct audit *a)
{
	json_begin_object(j, "mincore");
	json_cstring(j, "mode", a->mincore >= 0 ? pc_mincore_mode_name(a->mincore) : "unknown");
	json_cstring(j, "meaning", mincore_meaning(a->mincore));
	json_end_object(j);
	json_begin_object(j, "cachestat");
	json_cstring(j, "mode",
		     a->cachestat >= 0 ? pc_cachestat_mode_name(a->cachestat) : "unknown");
	json_cstring(j, "meaning", cachestat_meaning(a->cachestat));
	json_end_object(j);
	json_begin_object(j, "io_uring");
	json_bool(j, "available", a->io_uring > 0);
	if (a->io_uring_disabled >= 0)
		json_int(j, "io_uring_disabled", a->io_uring_disabled);
	else
		json_null(j, "io_uring_disabled");
	json_end_object(j);
}

static void json_filesystem(struct json *j, const struct fs_info *fi)
{
	json_begin_object(j, NULL);
	json_path(j, fi->path, strlen(fi->path));
	if (fi->err) {
		json_cstring(j, "error", strerror(-fi->err));
		json_int(j, "errno", -fi->err);
		json_end_object(j);
		return;
	}
	json_cstring(j, "fstype", fi->fstype[0] ? fi->fstype : NULL);
	json_cstring(j, "mount_point", fi->mount_point);
	json_begin_object(j, "device");
	json_uint(j, "major", fi->major);
	json_uint(j, "minor", fi->minor);
	json_end_object(j);
	json_cstring(j, "nowait", fi->nowait >= 0 ? pc_nowait_mode_name(fi->nowait) : "unknown");
	json_cstring(j, "meaning", nowait_meaning(fi->nowait));
	json_cstring(j, "nowait_learned_in", fi->nowait_origin[0] ? fi->nowait_origin : NULL);
	json_end_object(j);
}

static void json_caller(struct json *j, const struct caller *me)
{
	json_begin_object(j, "caller");
	json_uint(j, "uid", me->uid);
	json_uint(j, "euid", me->euid);
	json_uint(j, "fsuid", me->fsuid);
	json_begin_object(j, "capabilities");
	json_bool(j, "fowner", me->fowner);
	json_bool(j, "dac_override", me->dac_override);
	json_bool(j, "sys_admin", me->sys_admin);
	json_bool(j, "ipc_lock", me->ipc_lock);
	json_end_object(j);
	json_cstring(j, "view", me->view);
	json_cstring(j, "sees", me->fowner ? "every file" : "files it owns or may write");
	json_end_object(j);
}

/* "side_channels" and the "verdict" that counts them. */
static void json_channels(struct json *j, const struct channel *ch, size_t nch)
{
	size_t count[3];

	json_begin_array(j, "side_channels");
	for (size_t i = 0; i < nch; i++) {
		const struct channel *c = &ch[i];

		json_begin_object(j, NULL);
		json_cstring(j, "channel", c->id);
		if (c->fs)
			json_string(j, "path", c->fs->path, strlen(c->fs->path));
		else
			json_null(j, "path");
		json_cstring(j, "status", status_name(c->status));
		json_cstring(j, "probe", c->probe);
		json_cstring(j, "why", c->why);
		json_end_object(j);
	}
	json_end_array(j);
	count_status(ch, nch, count);
	json_begin_object(j, "verdict");
	json_uint(j, "open", count[CH_OPEN]);
	json_uint(j, "closed", count[CH_CLOSED]);
	json_uint(j, "unknown", count[CH_UNKNOWN]);
	json_end_object(j);
}

static void json_report(const struct audit *a, const struct channel *ch, size_t nch)
{
	struct json j;

	json_init(&j, stdout, true);
	json_begin_object(&j, NULL);
	json_uint(&j, "format_version", 1);
	json_kernel(&j, a);
	json_detectors(&j, a);
	json_begin_array(&j, "filesystems");
	for (size_t i = 0; i < a->nfs; i++)
		json_filesystem(&j, &a->fs[i]);
	json_end_array(&j);
	json_caller(&j, &a->me);
	json_channels(&j, ch, nch);
	json_end_object(&j);
	putchar('\n');
}

int cmd_audit(int argc, char **argv)
{
	static char *here[] = { "." };
	struct audit a = { 0 };
	struct channel *ch = NULL;
	char **paths;
	bool json = false;
	int opt, npaths, status = PC_EXIT_OK;

	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":h", audit_options, NULL)) != -1) {
		switch (opt) {
		case 'h':
			fputs(audit_usage, stdout);
			return PC_EXIT_OK;
		case OPT_JSON:
			json = true;
			break;
		default:
			return usage_getopt_error("audit", opt, argv);
		}
	}
	npaths = argc - optind;
	paths = argv + optind;
	if (npaths == 0) {
		npaths = 1;
		paths = here;
	}
	a.fs = calloc((size_t)npaths, sizeof(*a.fs));
	ch = calloc(2 + 2 * (size_t)npaths, sizeof(*ch));
	if (!a.fs || !ch) {
		cli_error(NULL, 0, "out of memory");
		status = PC_EXIT_FAILED;
		goto out;
	}
	uname(&a.uts);
	a.page_size = pc_page_size();
	a.mincore = pc_detect_mincore();
	a.cachestat = pc_detect_cachestat();
	a.io_uring = pc_detect_io_uring();
	a.io_uring_disabled = read_sysctl_int("/proc/sys/kernel/io_uring_disabled");
	get_caller(&a.me);
	a.nfs = (size_t)npaths;
	for (int i = 0; i < npaths; i++) {
		a.fs[i].path = paths[i];
		examine_path(&a.fs[i]);
		if (a.fs[i].err) {
			cli_error(paths[i], strlen(paths[i]), "%s", strerror(-a.fs[i].err));
			status = PC_EXIT_FAILED;
		}
	}
	if (json)
		json_report(&a, ch, channels(&a, ch));
	else
		text_report(&a, ch, channels(&a, ch));
	status = stdout_status(status);
out:
	for (size_t i = 0; i < a.nfs; i++)
		free(a.fs[i].mount_point);
	free(a.fs);
	free(ch);
	return status;
}
