/* SPDX-License-Identifier: MIT */
/* Small helpers of the pagecache command: error lines, human units, number
 * parsing, terminal width, a growable buffer. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <sys/ioctl.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

const char *pc_cli_name = "pagecache";

void cli_error(const char *path, size_t pathlen, const char *fmt, ...)
{
	char small[512], *msg = small;
	va_list ap;
	int n;

	fflush(stdout);
	fprintf(stderr, "%s: ", pc_cli_name);
	if (path) {
		text_write_path(stderr, path, pathlen);
		fputs(": ", stderr);
	}
	/* the message may quote a path (a snapshot's, the root): escaped, so
	 * that no byte of it reaches the terminal as a control */
	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n >= (int)sizeof(small)) {
		msg = malloc((size_t)n + 1);
		if (msg) {
			va_start(ap, fmt);
			vsnprintf(msg, (size_t)n + 1, fmt, ap);
			va_end(ap);
		} else {
			msg = small; /* cut short */
		}
	}
	if (n >= 0)
		text_write_message(stderr, msg);
	if (msg != small)
		free(msg);
	fputc('\n', stderr);
}

int usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "%s %s: ", pc_cli_name, cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry '%s %s --help'.\n", pc_cli_name, cmd);
	return PC_EXIT_USAGE;
}

int usage_getopt_error(const char *cmd, int opt, char **argv)
{
	if (opt == ':')
		return usage_error(cmd, "option '%s' needs an argument", argv[optind - 1]);
	if (optopt)
		return usage_error(cmd, "unknown option '-%c'", optopt);
	return usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
}

size_t u64_str(uint64_t v, char *buf)
{
	char tmp[24];
	size_t n = 0, i;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (i = 0; i < n; i++)
		buf[i] = tmp[n - 1 - i];
	buf[n] = '\0';
	return n;
}

/* num / den rounded to nearest, ties to even, as printf rounds an exact
 * binary value */
static uint64_t div_round_even(unsigned __int128 num, uint64_t den)
{
	uint64_t q = (uint64_t)(num / den), r = (uint64_t)(num % den);

	if (r > den - r || (r == den - r && (q & 1)))
		q++;
	return q;
}

void human_bytes(uint64_t bytes, char *buf, size_t size)
{
	static const char units[] = "KMGTPE";
	double v = (double)bytes;
	int u = -1;

	if (bytes < 1024) {
		snprintf(buf, size, "%llu", (unsigned long long)bytes);
		return;
	}
	if (bytes < (1ull << 53) && size >= 8) {
		/* exact in a double: the same digits as "%.1f" / "%.0f" below,
		 * without floating-point formatting on every row */
		uint64_t den = 1024;
		size_t n;

		u = 0;
		while (bytes / den >= 1024 && u < 5) {
			den <<= 10;
			u++;
		}
		/* v < 9.95 exactly: no such v lies between 9.95 and its double */
		if ((unsigned __int128)bytes * 20 < (unsigned __int128)den * 199) {
			uint64_t tenths = div_round_even((unsigned __int128)bytes * 10, den);

			n = u64_str(tenths / 10, buf);
			buf[n++] = '.';
			buf[n++] = (char)('0' + tenths % 10);
		} else {
			n = u64_str(div_round_even(bytes, den), buf);
		}
		buf[n++] = units[u];
		buf[n] = '\0';
		return;
	}
	while (v >= 1024 && u < 5) {
		v /= 1024;
		u++;
	}
	/* 9.96 would print as "10.0": use the integer form from there on */
	if (v < 9.95)
		snprintf(buf, size, "%.1f%c", v, units[u]);
	else
		snprintf(buf, size, "%.0f%c", v, units[u]);
}

int parse_uint(const char *s, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == ERANGE || v > max)
		return -ERANGE;
	if (*end)
		return -EINVAL;
	*out = v;
	return 0;
}

int parse_size(const char *s, uint64_t *out)
{
	unsigned long long v;
	unsigned int shift = 0;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	if (*end) {
		const char *p = strchr("KMGTP", *end & ~0x20);

		if (!p || !*p)
			return -EINVAL;
		shift = 10 * (unsigned int)(p - "KMGTP" + 1);
		end++;
		/* accept K, KB, KiB */
		if ((*end & ~0x20) == 'I')
			end++;
		if ((*end & ~0x20) == 'B')
			end++;
		if (*end)
			return -EINVAL;
	}
	if (shift && v > (UINT64_MAX >> shift))
		return -ERANGE;
	*out = (uint64_t)v << shift;
	return 0;
}

unsigned int terminal_width(int fd)
{
	struct winsize ws;
	const char *env;

	if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col;
	env = getenv("COLUMNS");
	if (env) {
		uint64_t v;

		if (parse_uint(env, 100000, &v) == 0 && v > 0)
			return (unsigned int)v;
	}
	return 80;
}

double now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int buf_reserve(struct buf *b, size_t extra)
{
	size_t cap;
	char *p;

	if (b->len + extra < b->len)
		return -ENOMEM;
	if (b->len + extra <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 256;
	while (cap < b->len + extra) {
		if (cap > SIZE_MAX / 2)
			return -ENOMEM;
		cap *= 2;
	}
	p = realloc(b->data, cap);
	if (!p)
		return -ENOMEM;
	b->data = p;
	b->cap = cap;
	return 0;
}

int buf_append(struct buf *b, const void *data, size_t n)
{
	int ret = buf_reserve(b, n + 1);

	if (ret < 0)
		return ret;
	memcpy(b->data + b->len, data, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

void buf_free(struct buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

int on_overlayfs(int fd)
{
	struct statfs sfs;

	if (fstatfs(fd, &sfs) < 0)
		return -1;
	return sfs.f_type == (typeof(sfs.f_type))OVERLAYFS_SUPER_MAGIC;
}

int file_bytes(int fd, const struct stat *st, uint64_t *out)
{
	if (S_ISBLK(st->st_mode)) {
		uint64_t n;

		if (ioctl(fd, BLKGETSIZE64, &n) < 0)
			return -errno;
		*out = n;
		return 0;
	}
	if (!S_ISREG(st->st_mode))
		return -EINVAL;
	*out = (uint64_t)st->st_size;
	return 0;
}

void progress_init(struct progress *p, bool enabled)
{
	p->enabled = enabled;
	p->shown = false;
	p->start = now_seconds();
	p->last = 0;
}

bool progress_due(struct progress *p)
{
	double t;

	if (!p->enabled)
		return false;
	t = now_seconds();
	if (t - p->start < 1.0 || t - p->last < 0.25)
		return false;
	p->last = t;
	return true;
}

void progress_show(struct progress *p, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "\r\033[K%s: ", pc_cli_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fflush(stderr);
	p->shown = true;
}

void progress_clear(struct progress *p)
{
	if (p->shown) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
		p->shown = false;
	}
}

void progress_note(struct progress *p, uint64_t *count, const char *kind, const char *path,
		   size_t pathlen, const char *fmt, va_list ap)
{
	char msg[256];

	if (++*count > CLI_NOTE_LIMIT) {
		if (*count == CLI_NOTE_LIMIT + 1) {
			progress_clear(p);
			cli_error(NULL, 0, "more %s left out (the summary counts them)", kind);
		}
		return;
	}
	vsnprintf(msg, sizeof(msg), fmt, ap);
	progress_clear(p);
	cli_error(path, pathlen, "%s", msg);
}

int open_regular_at(int dirfd, const char *path, struct stat *st)
{
	char proc[64];
	int pathfd = openat(dirfd, path, O_PATH | O_CLOEXEC), fd;

	if (pathfd < 0)
		return -errno;
	if (fstat(pathfd, st) < 0) {
		int err = -errno;

		close(pathfd);
		return err;
	}
	if (!S_ISREG(st->st_mode)) {
		close(pathfd);
		return -EINVAL;
	}
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", pathfd);
	fd = open(proc, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		fd = -errno;
	close(pathfd);
	return fd;
}

/* statx(2) mask bit for a mount id that is never reused (6.8+); Debian
 * 12's headers lack it. Older kernels leave it out of stx_mask. */
#ifndef STATX_MNT_ID_UNIQUE
#define STATX_MNT_ID_UNIQUE 0x00004000U
#endif

int file_statx(int fd, struct stat *st, uint64_t *mnt_id)
{
	struct statx stx;

	*mnt_id = 0;
	if (statx(fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS | STATX_MNT_ID_UNIQUE, &stx) < 0) {
		if (errno != ENOSYS)
			return -errno;
		return fstat(fd, st) < 0 ? -errno : 0; /* a filter from before statx */
	}
	memset(st, 0, sizeof(*st));
	st->st_dev = makedev(stx.stx_dev_major, stx.stx_dev_minor);
	st->st_ino = (ino_t)stx.stx_ino;
	st->st_mode = stx.stx_mode;
	st->st_nlink = (nlink_t)stx.stx_nlink;
	st->st_uid = stx.stx_uid;
	st->st_gid = stx.stx_gid;
	st->st_rdev = makedev(stx.stx_rdev_major, stx.stx_rdev_minor);
	st->st_size = (off_t)stx.stx_size;
	st->st_blksize = (blksize_t)stx.stx_blksize;
	st->st_blocks = (blkcnt_t)stx.stx_blocks;
	st->st_atim.tv_sec = stx.stx_atime.tv_sec;
	st->st_atim.tv_nsec = stx.stx_atime.tv_nsec;
	st->st_mtim.tv_sec = stx.stx_mtime.tv_sec;
	st->st_mtim.tv_nsec = stx.stx_mtime.tv_nsec;
	st->st_ctim.tv_sec = stx.stx_ctime.tv_sec;
	st->st_ctim.tv_nsec = stx.stx_ctime.tv_nsec;
	if (stx.stx_mask & STATX_MNT_ID_UNIQUE)
		*mnt_id = stx.stx_mnt_id;
	return 0;
}

void catch_stop_signals(const int *sigs, size_t n, void (*handler)(int))
{
	struct sigaction sa = { .sa_handler = handler, .sa_flags = SA_RESETHAND }, old;

	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < n; i++)
		if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
			sigaction(sigs[i], &sa, NULL);
}
