/* SPDX-License-Identifier: MIT */
/*
 * A recorded snapshot, native or happycache, read as a stream of files and
 * their runs in this machine's pages. Memory stays bounded: the native
 * reader's fixed buffers or the happycache reader's, one file at a time.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "snapcli.h"

struct snapsrc {
	const char *name;
	int fd;
	bool own_fd;
	off_t start;               /* where the input started, when seekable */
	enum snap_format fmt;
	bool auto_fmt;             /* no --format: detected (from a pipe: native) */
	struct pc_snapshot_source *ns; /* native: the library's source */
	struct pc_restore_source cb;   /* ... and its callbacks */
	struct hc_reader *hc;
	struct snap_file file;
	struct pc_restore_file rfile; /* file, as snapsrc_source() hands it out */
	int err;
};

int snap_parse_format(const char *s, bool allow_auto, enum snap_format *out)
{
	if (strcmp(s, "native") == 0)
		*out = SNAP_NATIVE;
	else if (strcmp(s, "happycache") == 0)
		*out = SNAP_HAPPYCACHE;
	else if (allow_auto && strcmp(s, "auto") == 0)
		*out = SNAP_AUTO;
	else
		return -EINVAL;
	return 0;
}

/* The native snapshot's reader, NULL for happycache's. */
static struct pc_snapshot_reader *native(const struct snapsrc *s)
{
	return s->ns ? pc_snapshot_source_reader(s->ns) : NULL;
}

static int make_reader(struct snapsrc *s)
{
	int ret;

	if (s->fmt == SNAP_HAPPYCACHE)
		return hc_reader_new(s->fd, &s->hc);
	/* the library's source: its runs come in this machine's pages */
	ret = pc_snapshot_source_new(s->fd, &s->ns);
	if (ret < 0)
		return ret;
	s->cb.size = sizeof(s->cb);
	pc_snapshot_source_get(s->ns, &s->cb);
	return pc_snapshot_read_header(native(s));
}

static void drop_reader(struct snapsrc *s)
{
	pc_snapshot_source_free(s->ns);
	hc_reader_free(s->hc);
	s->ns = NULL;
	s->hc = NULL;
	s->err = 0;
}

/* A FIFO opened without waiting: wait for its writer's first bytes, or
 * its close, as a blocking open and read would (but interruptibly, and
 * only for a FIFO). 0, or -1 and errno. */
static int wait_writer(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	struct stat st;

	if (fstat(fd, &st) < 0 || !S_ISFIFO(st.st_mode))
		return 0;
	while (poll(&p, 1, -1) < 0)
		if (errno != EINTR)
			return -1;
	return 0;
}

int snapsrc_open(const char *name, enum snap_format fmt, struct snapsrc **out)
{
	struct snapsrc *s = calloc(1, sizeof(*s));
	struct stat st;
	int ret;

	if (!s) {
		cli_error(NULL, 0, "out of memory");
		return -ENOMEM;
	}
	s->name = name;
	if (strcmp(name, "-") == 0) {
		s->fd = STDIN_FILENO;
	} else {
		/* O_NONBLOCK: the open of a FIFO returns at once (a device's
		 * open is not kept waiting either); a FIFO is then read like a
		 * pipe, as cat would: once its writer has come */
		s->fd = open(name, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		if (s->fd < 0 || wait_writer(s->fd) < 0 || fcntl(s->fd, F_SETFL, 0) < 0) {
			ret = -errno;
			cli_error(name, strlen(name), "%s", strerror(-ret));
			if (s->fd >= 0)
				close(s->fd);
			free(s);
			return ret;
		}
		s->own_fd = true;
	}
	s->start = -1;
	if (fstat(s->fd, &st) == 0 && S_ISREG(st.st_mode))
		s->start = lseek(s->fd, 0, SEEK_CUR);
	s->auto_fmt = fmt == SNAP_AUTO;
	if (fmt == SNAP_AUTO) {
		unsigned char magic[2];

		fmt = SNAP_NATIVE;
		/* peeking needs a seekable input; from a pipe, say --format */
		if (s->start >= 0 && pread(s->fd, magic, 2, s->start) == 2 &&
		    magic[0] == 0x1f && magic[1] == 0x8b)
			fmt = SNAP_HAPPYCACHE;
	}
	s->fmt = fmt;
	ret = make_reader(s);
	if (ret < 0 && native(s)) {
		/* the header: the snapshot's fault, at its offset */
		snapsrc_report(s, ret);
		snapsrc_free(s);
		return ret;
	}
	if (ret < 0) {
		cli_error(name, strlen(name), "%s", strerror(-ret));
		snapsrc_free(s);
		return ret;
	}
	*out = s;
	return 0;
}

void snapsrc_free(struct snapsrc *s)
{
	if (!s)
		return;
	drop_reader(s);
	if (s->own_fd)
		close(s->fd);
	free(s);
}

enum snap_format snapsrc_format(const struct snapsrc *s)
{
	return s->fmt;
}

const char *snapsrc_root(const struct snapsrc *s)
{
	return native(s) ? pc_snapshot_reader_root(native(s)) : "";
}

int snapsrc_failed(const struct snapsrc *s)
{
	return s->err < 0 ? s->err : 0;
}

void snapsrc_report(const struct snapsrc *s, int err)
{
	const char *msg = NULL;
	uint64_t off = 0;

	if (native(s)) {
		msg = pc_snapshot_reader_error(native(s));
		off = pc_snapshot_reader_error_offset(native(s));
	} else if (s->hc) {
		msg = hc_reader_error(s->hc, &off);
	}
	if (err == -EPROTONOSUPPORT)
		cli_error(s->name, strlen(s->name), "a snapshot format version this "
			  "program does not know (it reads version %d)",
			  PC_SNAPSHOT_FORMAT_VERSION);
	else if (msg && err != -EBADMSG)
		/* not the snapshot's fault: a read error (EIO, EISDIR ...) */
		cli_error(s->name, strlen(s->name), "%s at byte %llu", msg,
			  (unsigned long long)off);
	else if (msg && s->fmt == SNAP_HAPPYCACHE)
		cli_error(s->name, strlen(s->name), "corrupt happycache file at byte %llu "
			  "of its text: %s", (unsigned long long)off, msg);
	else if (msg && off == 0 && s->start < 0 && s->auto_fmt && strstr(msg, "bad magic"))
		/* from a pipe SNAP_AUTO cannot peek at gzip's magic */
		cli_error(s->name, strlen(s->name), "corrupt snapshot at byte 0: %s (read from "
			  "a pipe or device, the format is not detected: for a happycache file, give "
			  "--format=happycache)", msg);
	else if (msg)
		cli_error(s->name, strlen(s->name), "corrupt snapshot at byte %llu: %s",
			  (unsigned long long)off, msg);
	else
		cli_error(s->name, strlen(s->name), "%s", strerror(-err));
}

int snapsrc_next_file(struct snapsrc *s, const struct snap_file **f)
{
	int ret;

	if (s->err)
		return s->err;
	memset(&s->file, 0, sizeof(s->file));
	if (s->fmt == SNAP_HAPPYCACHE) {
		const char *path;

		ret = hc_next_file(s->hc, &path);
		if (ret <= 0)
			return s->err = ret;
		/* "./x" (or ".//x") is x beneath the root; "/x" stays absolute */
		if (path[0] == '.') {
			path += 2;
			while (*path == '/')
				path++;
		}
		s->file.path = path;
		s->file.quality = PC_QUALITY_EXACT;
	} else {
		const struct pc_restore_file *rf = NULL;

		ret = s->cb.next_file(s->cb.arg, &rf);
		if (ret <= 0)
			return s->err = ret;
		s->file.path = rf->path;
		s->file.identity = rf->identity;
		s->file.size = rf->file_size;
		s->file.mtime_ns = rf->mtime_ns;
		s->file.dev = rf->dev;
		s->file.ino = rf->ino;
		s->file.quality = rf->quality;
		s->file.npages = rf->npages;
	}
	*f = &s->file;
	return 1;
}

int snapsrc_next_run(struct snapsrc *s, struct pc_run *run)
{
	int ret;

	if (s->err)
		return s->err;
	ret = s->fmt == SNAP_HAPPYCACHE ? hc_next_run(s->hc, run) : s->cb.next_run(s->cb.arg, run);
	if (ret < 0)
		s->err = ret;
	return ret;
}

int snapsrc_validate(struct snapsrc *s)
{
	const struct snap_file *f;
	struct pc_run run;
	int ret;

	if (s->start < 0)
		return 0;
	while ((ret = snapsrc_next_file(s, &f)) > 0)
		while ((ret = snapsrc_next_run(s, &run)) > 0)
			;
	if (ret < 0)
		return ret;
	ret = snapsrc_rewind(s);
	if (ret < 0 && !s->err)
		s->err = ret; /* snapsrc_failed() names this input */
	return ret < 0 ? ret : 1;
}

int snapsrc_rewind(struct snapsrc *s)
{
	if (s->start < 0)
		return -ESPIPE;
	drop_reader(s);
	if (lseek(s->fd, s->start, SEEK_SET) < 0)
		return -errno;
	return make_reader(s);
}

/* ---- as pc_restore() reads it ---- */

static int src_next_file(void *arg, const struct pc_restore_file **out)
{
	struct snapsrc *s = arg;
	const struct snap_file *f = NULL;
	int ret = snapsrc_next_file(s, &f);

	if (ret <= 0)
		return ret;
	s->rfile = (struct pc_restore_file){
		.size = sizeof(s->rfile), .path = f->path, .identity = f->identity,
		.file_size = f->size, .mtime_ns = f->mtime_ns, .dev = f->dev, .ino = f->ino,
		.quality = f->quality, .npages = f->npages,
	};
	*out = &s->rfile;
	return 1;
}

static int src_next_run(void *arg, struct pc_run *run)
{
	return snapsrc_next_run(arg, run);
}

static int src_rewind(void *arg)
{
	return snapsrc_rewind(arg);
}

void snapsrc_source(struct snapsrc *s, struct pc_restore_source *src)
{
	*src = (struct pc_restore_source){
		.size = sizeof(*src), .arg = s, .next_file = src_next_file,
		.next_run = src_next_run, .rewind = src_rewind,
	};
}
