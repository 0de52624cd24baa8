/* SPDX-License-Identifier: MIT */
/*
 * The directory walk: relative to directory fds (openat), so the depth of a
 * tree and the length of its paths do not matter to the kernel; symlinks are
 * not followed unless asked; FIFOs, sockets and devices met in a walk are
 * never opened; each file (device, inode) is measured once. A type readdir
 * did not give (DT_UNKNOWN, a symlink followed with -L, a named path) is
 * decided on an O_PATH fd, which runs no driver, and that inode is then
 * reopened through /proc/self/fd. Entries readdir called regular files or
 * directories are opened at once (one syscall a file), O_NOFOLLOW, so that
 * a name swapped since can only be something its writer could mknod or
 * hard-link there, never a symlink to /dev.
 *
 * Each directory's entries are read completely when it is entered, so only
 * its fd needs to stay open while its subdirectories are walked. Beyond a
 * budget of open directory fds, the shallowest are closed and reopened
 * through ".." on the way back up (checked by device and inode).
 *
 * Memory grows with what must be remembered to count each file once, not
 * with the files walked: every directory entered (device, inode), so that
 * one reached again (a bind mount, a symlink with -L, another PATH) is not
 * walked twice, and the files that can be met again: with one root and no
 * -L only a file with more than one link can be, so only those; with
 * several roots or -L, or for fds (--pid: a file open and mapped), all.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cli.h"

/* An open-addressing hash set of (device, inode). */
struct inode_key {
	dev_t dev;
	ino_t ino;
	bool used;
};

struct inode_set {
	struct inode_key *slots;
	size_t cap; /* a power of two */
	size_t n;
};

static size_t inode_hash(dev_t dev, ino_t ino)
{
	uint64_t h = (uint64_t)ino * 0x9e3779b97f4a7c15ull;

	h ^= (uint64_t)dev * 0xc2b2ae3d27d4eb4full;
	h ^= h >> 29;
	return (size_t)h;
}

static int inode_set_grow(struct inode_set *s)
{
	size_t cap = s->cap ? s->cap * 2 : 1024;
	struct inode_key *slots = calloc(cap, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < s->cap; i++) {
		size_t j;

		if (!s->slots[i].used)
			continue;
		j = inode_hash(s->slots[i].dev, s->slots[i].ino) & (cap - 1);
		while (slots[j].used)
			j = (j + 1) & (cap - 1);
		slots[j] = s->slots[i];
	}
	free(s->slots);
	s->slots = slots;
	s->cap = cap;
	return 0;
}

/* 1 if (dev, ino) is in the set. */
static bool inode_set_has(const struct inode_set *s, dev_t dev, ino_t ino)
{
	size_t j;

	if (!s->n)
		return false;
	j = inode_hash(dev, ino) & (s->cap - 1);
	while (s->slots[j].used) {
		if (s->slots[j].dev == dev && s->slots[j].ino == ino)
			return true;
		j = (j + 1) & (s->cap - 1);
	}
	return false;
}

/* 1 if newly added, 0 if it was there, -ENOMEM. */
static int inode_set_add(struct inode_set *s, dev_t dev, ino_t ino)
{
	size_t j;

	if ((s->n + 1) * 2 > s->cap) {
		int ret = inode_set_grow(s);

		if (ret < 0)
			return ret;
	}
	j = inode_hash(dev, ino) & (s->cap - 1);
	while (s->slots[j].used) {
		if (s->slots[j].dev == dev && s->slots[j].ino == ino)
			return 0;
		j = (j + 1) & (s->cap - 1);
	}
	s->slots[j].dev = dev;
	s->slots[j].ino = ino;
	s->slots[j].used = true;
	s->n++;
	return 1;
}

struct level {
	int fd;              /* -1 while closed to save fds */
	dev_t dev;
	ino_t ino;
	struct buf names;    /* entries: one d_type byte, the name, NUL */
	size_t pos;          /* next entry in names */
	size_t pathlen;      /* this directory's path is path[0 .. pathlen) */
};

struct walk {
	struct walk_opts opts;
	const struct walk_ops *ops;
	void *ctx;
	struct inode_set seen;  /* files that can be met again */
	struct inode_set dirs;  /* every directory entered */
	struct level *levels;
	size_t depth, cap;
	size_t low_open;     /* levels below this index have their fd closed */
	size_t fd_budget;
	dev_t root_dev;
	struct buf path;
};

int walk_new(const struct walk_opts *opts, const struct walk_ops *ops, void *ctx,
	     struct walk **out)
{
	struct walk *w = calloc(1, sizeof(*w));
	struct rlimit rl;

	if (!w)
		return -ENOMEM;
	w->opts = *opts;
	w->ops = ops;
	w->ctx = ctx;
	/* leave most fds to the caller and the library (io_uring, reopens) */
	w->fd_budget = 128;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur / 4 < w->fd_budget)
		w->fd_budget = rl.rlim_cur / 4 > 4 ? rl.rlim_cur / 4 : 4;
	*out = w;
	return 0;
}

void walk_free(struct walk *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->cap; i++) {
		if (i < w->depth && w->levels[i].fd >= 0)
			close(w->levels[i].fd);
		buf_free(&w->levels[i].names);
	}
	free(w->levels);
	free(w->seen.slots);
	free(w->dirs.slots);
	buf_free(&w->path);
	free(w);
}

static void note(struct walk *w, const char *why)
{
	w->ops->note(w->ctx, w->path.data, w->path.len, why);
}

static void error(struct walk *w, int err)
{
	w->ops->error(w->ctx, w->path.data, w->path.len, err, NULL);
}

static const char *type_note(mode_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFIFO: return "skipped: a FIFO (not opened)";
	case S_IFSOCK: return "skipped: a socket";
	case S_IFCHR: return "skipped: a character device (not opened)";
	case S_IFBLK: return "skipped: a block device met in a walk (name it to measure it)";
	case S_IFLNK: return "skipped: a symlink (not followed without -L)";
	case S_IFDIR: return "skipped: changed into a directory during the walk";
	default: return "skipped: not a regular file";
	}
}

static mode_t dtype_mode(unsigned char t)
{
	switch (t) {
	case DT_REG: return S_IFREG;
	case DT_DIR: return S_IFDIR;
	case DT_LNK: return S_IFLNK;
	case DT_FIFO: return S_IFIFO;
	case DT_SOCK: return S_IFSOCK;
	case DT_CHR: return S_IFCHR;
	case DT_BLK: return S_IFBLK;
	default: return 0;
	}
}

static bool matches(const char *pattern, const char *path, const char *name)
{
	/* a pattern with a slash is matched against the whole path */
	if (strchr(pattern, '/'))
		return fnmatch(pattern, path, 0) == 0;
	return fnmatch(pattern, name, 0) == 0;
}

static bool excluded(struct walk *w, const char *name)
{
	if (!w->opts.exclude)
		return false;
	for (char **p = w->opts.exclude; *p; p++)
		if (matches(*p, w->path.data, name))
			return true;
	return false;
}

static bool included(struct walk *w, const char *name)
{
	if (!w->opts.include || !*w->opts.include)
		return true;
	for (char **p = w->opts.include; *p; p++)
		if (matches(*p, w->path.data, name))
			return true;
	return false;
}

static const char *base_name(const char *path, size_t len)
{
	while (len > 1 && path[len - 1] == '/')
		len--;
	for (size_t i = len; i > 0; i--)
		if (path[i - 1] == '/')
			return path + i;
	return path;
}

/* A file that does not pass the checks: its fd, or what was measured. */
static void drop(const struct walk_ops *ops, void *ctx, const struct walk_file *f)
{
	if (f->pre)
		ops->discard(ctx, f->pre);
	else if (!f->keep_fd)
		close(f->fd);
}

int walk_check(struct walk *w, const struct walk_ops *ops, void *ctx, const struct walk_file *f)
{
	const struct stat *st = &f->st;
	uint64_t mnt_id = f->mnt_id;
	struct stat stbuf;
	int ret;

	if (!f->has_st) {
		ret = file_statx(f->fd, &stbuf, &mnt_id);
		if (ret < 0) {
			ops->error(ctx, f->path, f->pathlen, ret, NULL);
			drop(ops, ctx, f);
			return 0;
		}
		st = &stbuf;
		if (!S_ISREG(st->st_mode)) {
			ops->note(ctx, f->path, f->pathlen, type_note(st->st_mode));
			drop(ops, ctx, f);
			return 0;
		}
	}
	if (w->opts.one_fs && st->st_dev != f->root_dev) {
		ops->note(ctx, f->path, f->pathlen, "skipped: on another filesystem (-x)");
		drop(ops, ctx, f);
		return 0;
	}
	/* a file with one link in a single root's walk cannot come again
	 * (its directory could, through a bind mount: that is skipped whole);
	 * it is still looked up, in case it lost links since it was met */
	if (f->from_fd || !w->opts.one_root || w->opts.follow || st->st_nlink > 1)
		ret = inode_set_add(&w->seen, st->st_dev, st->st_ino);
	else
		ret = inode_set_has(&w->seen, st->st_dev, st->st_ino) ? 0 : 1;
	if (ret == 0 && !f->from_fd)
		ops->note(ctx, f->path, f->pathlen, w->opts.follow ?
			  "skipped: a file already counted (a hard link, or a symlink followed to it)" :
			  "skipped: a hard link to a file already counted");
	if (ret != 1) {
		drop(ops, ctx, f);
		return ret == -ENOMEM ? ret : 0;
	}
	if (f->pre) {
		ret = ops->emit(ctx, f->pre, st, f->path, f->pathlen);
	} else {
		ret = ops->file(ctx, f->fd, st, mnt_id, f->path, f->pathlen);
		if (!ops->takes_fd && !f->keep_fd)
			close(f->fd);
	}
	if (ret < 0 && ret != -ENOMEM)
		ops->error(ctx, f->path, f->pathlen, ret, NULL);
	return ret == -ENOMEM ? ret : 0;
}

/* An open file found at w->path, st its fstat (NULL: not taken yet, only
 * with ops->check): checked here, or handed over to be checked in order.
 * Closes fd. 0 or -ENOMEM. */
static int measure(struct walk *w, int fd, const struct stat *st, uint64_t mnt_id, bool from_fd)
{
	struct walk_file f = {
		.fd = fd,
		.has_st = st != NULL,
		.from_fd = from_fd,
		.mnt_id = mnt_id,
		.root_dev = w->root_dev,
		.path = w->path.data,
		.pathlen = w->path.len,
	};

	if (st)
		f.st = *st;
	if (w->ops->check)
		return w->ops->check(w->ctx, w, &f);
	return walk_check(w, w->ops, w->ctx, &f);
}

static int set_path(struct walk *w, size_t prefix, const char *name)
{
	size_t n = strlen(name);

	w->path.len = prefix;
	if (prefix && w->path.data[prefix - 1] != '/')
		if (buf_append(&w->path, "/", 1) < 0)
			return -ENOMEM;
	return buf_append(&w->path, name, n);
}

static int read_entries(struct level *l)
{
	int dfd = fcntl(l->fd, F_DUPFD_CLOEXEC, 0);
	struct dirent *de;
	DIR *d;

	l->names.len = 0;
	l->pos = 0;
	if (dfd < 0)
		return -errno;
	d = fdopendir(dfd);
	if (!d) {
		int err = -errno;

		close(dfd);
		return err;
	}
	for (;;) {
		size_t n;

		errno = 0;
		de = readdir(d);
		if (!de)
			break;
		if (de->d_name[0] == '.' &&
		    (de->d_name[1] == '\0' || (de->d_name[1] == '.' && de->d_name[2] == '\0')))
			continue;
		n = strlen(de->d_name);
		if (buf_reserve(&l->names, n + 2) < 0) {
			closedir(d);
			return -ENOMEM;
		}
		l->names.data[l->names.len++] = (char)de->d_type;
		memcpy(l->names.data + l->names.len, de->d_name, n + 1);
		l->names.len += n + 1;
	}
	if (errno) {
		int err = -errno;

		closedir(d);
		return err;
	}
	closedir(d);
	return 0;
}

/* Enter the directory open at fd (already fstat'ed). Takes fd. */
static int push_dir(struct walk *w, int fd, const struct stat *st)
{
	struct level *l;
	int ret;

	for (size_t i = 0; i < w->depth; i++) {
		if (w->levels[i].dev == st->st_dev && w->levels[i].ino == st->st_ino) {
			note(w, "skipped: a directory loop");
			close(fd);
			return 0;
		}
	}
	ret = inode_set_add(&w->dirs, st->st_dev, st->st_ino);
	if (ret <= 0) {
		if (ret == 0)
			note(w, "skipped: a directory already walked (reached again through "
				"a bind mount, a symlink or another PATH)");
		close(fd);
		return ret;
	}
	if (w->depth == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 16;
		struct level *ls = realloc(w->levels, cap * sizeof(*ls));

		if (!ls) {
			close(fd);
			return -ENOMEM;
		}
		memset(ls + w->cap, 0, (cap - w->cap) * sizeof(*ls));
		w->levels = ls;
		w->cap = cap;
	}
	if (w->depth - w->low_open >= w->fd_budget) {
		close(w->levels[w->low_open].fd);
		w->levels[w->low_open].fd = -1;
		w->low_open++;
	}
	l = &w->levels[w->depth++];
	l->fd = fd;
	l->dev = st->st_dev;
	l->ino = st->st_ino;
	l->pathlen = w->path.len;
	ret = read_entries(l);
	if (ret == -ENOMEM)
		return ret;
	if (ret < 0) {
		error(w, ret);
		l->names.len = 0; /* walk nothing of it, pop it next */
	}
	return 0;
}

/* Leave the top directory; reopen its parent through ".." if it was closed.
 * Returns 0, or -ESTALE when the parent cannot be found again (the rest of
 * this root is abandoned, with an error line). */
static int pop_dir(struct walk *w)
{
	struct level *top = &w->levels[--w->depth];
	struct level *parent;
	struct stat st;
	int fd;

	if (w->depth == 0 || w->levels[w->depth - 1].fd >= 0) {
		close(top->fd);
		return 0;
	}
	parent = &w->levels[w->depth - 1];
	fd = openat(top->fd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	close(top->fd);
	if (fd >= 0 && (fstat(fd, &st) < 0 || st.st_dev != parent->dev ||
			st.st_ino != parent->ino)) {
		close(fd);
		fd = -1;
	}
	if (fd < 0) {
		w->path.len = parent->pathlen;
		w->path.data[w->path.len] = '\0';
		w->ops->error(w->ctx, w->path.data, w->path.len, -ESTALE,
			      "moved during the walk; the rest of it is not measured");
		while (w->depth > 0) {
			struct level *l = &w->levels[--w->depth];

			if (l->fd >= 0)
				close(l->fd);
		}
		return -ESTALE;
	}
	parent->fd = fd;
	w->low_open--;
	return 0;
}

/* Flags for opening an entry readdir said was a regular file or directory:
 * it was no symlink then, so O_NOFOLLOW in any case (a symlink swapped in
 * since is not followed blindly); O_NONBLOCK and O_NOCTTY in case it became
 * a FIFO or a terminal. */
static int open_flags(void)
{
	return O_RDONLY | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW;
}

/*
 * An O_PATH fd of name, fstat'ed: opening it runs no driver and reads
 * nothing, so the type is decided before anything is opened for reading
 * (a device node's open has effects of its own). -1 after a note or an
 * error line.
 */
static int open_path(struct walk *w, int dirfd, const char *name, bool follow, struct stat *st)
{
	int fd = openat(dirfd, name, O_PATH | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW));

	if (fd < 0) {
		int err = -errno;

		if (err == -ENOENT && follow && fstatat(dirfd, name, st, AT_SYMLINK_NOFOLLOW) == 0)
			note(w, "skipped: a dangling symlink");
		else
			error(w, err);
		return -1;
	}
	if (fstat(fd, st) < 0) {
		error(w, -errno);
		close(fd);
		return -1;
	}
	return fd;
}

/* Open the inode behind the O_PATH fd pathfd for reading, through
 * /proc/self/fd: the one whose type was decided, whatever became of its
 * name. Without /proc, by the name again (the caller checks the type on
 * the fd it gets). Returns the fd or -errno. */
static int reopen(int pathfd, int dirfd, const char *name, bool follow, int flags)
{
	char proc[64];
	int fd;

	flags |= O_RDONLY | O_NONBLOCK | O_NOCTTY;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", pathfd);
	fd = open(proc, flags | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT)
		fd = openat(dirfd, name, flags | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW));
	return fd < 0 ? -errno : fd;
}

/* The statx of fd (for w->path) into *st and *mnt_id: true when it is a
 * regular file; else false, with the error or a note of its type
 * reported and fd closed. */
static bool stat_regular(struct walk *w, int fd, struct stat *st, uint64_t *mnt_id)
{
	int ret = file_statx(fd, st, mnt_id);

	if (ret < 0) {
		error(w, ret);
		close(fd);
		return false;
	}
	if (!S_ISREG(st->st_mode)) {
		note(w, type_note(st->st_mode));
		close(fd);
		return false;
	}
	return true;
}

static int visit(struct walk *w, int dirfd, const char *name, unsigned char dtype);

/* An entry of dirfd that is a directory (pathfd: its O_PATH fd, or -1 when
 * readdir said so): opened, checked and pushed. Closes pathfd. */
static int visit_dir(struct walk *w, int dirfd, const char *name, int pathfd)
{
	struct stat st;
	int fd;

	if (excluded(w, name)) {
		if (pathfd >= 0)
			close(pathfd);
		return 0;
	}
	if (pathfd >= 0) {
		fd = reopen(pathfd, dirfd, name, w->opts.follow, O_DIRECTORY);
		close(pathfd);
	} else {
		/* no longer a directory (a symlink or anything else
		 * swapped in since readdir): decide again, on O_PATH */
		fd = openat(dirfd, name, open_flags() | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0 && (errno == ELOOP || errno == ENOTDIR))
			return visit(w, dirfd, name, DT_UNKNOWN);
		fd = fd < 0 ? -errno : fd;
	}
	if (fd < 0) {
		error(w, fd);
		return 0;
	}
	if (fstat(fd, &st) < 0) {
		error(w, -errno);
		close(fd);
		return 0;
	}
	if (!S_ISDIR(st.st_mode)) {
		note(w, type_note(st.st_mode));
		close(fd);
		return 0;
	}
	if (w->opts.one_fs && st.st_dev != w->root_dev) {
		note(w, "skipped: on another filesystem (-x)");
		close(fd);
		return 0;
	}
	return push_dir(w, fd, &st);
}

static int visit(struct walk *w, int dirfd, const char *name, unsigned char dtype)
{
	mode_t mode = dtype_mode(dtype);
	int fd, pathfd = -1;
	uint64_t mnt_id;
	struct stat st;

	/* What readdir could not tell, or a symlink to follow: decided on an
	 * O_PATH fd. Everything else is opened at once (one syscall a file). */
	if (mode == 0 || (mode == S_IFLNK && w->opts.follow)) {
		pathfd = open_path(w, dirfd, name, w->opts.follow, &st);
		if (pathfd < 0)
			return 0;
		mode = st.st_mode & S_IFMT;
	}
	if (mode == S_IFDIR)
		return visit_dir(w, dirfd, name, pathfd);
	if (mode != S_IFREG) {
		if (pathfd >= 0)
			close(pathfd);
		note(w, type_note(mode));
		return 0;
	}
	if (!included(w, name) || excluded(w, name)) {
		if (pathfd >= 0)
			close(pathfd);
		return 0;
	}
	if (pathfd >= 0) {
		fd = reopen(pathfd, dirfd, name, w->opts.follow, 0);
		close(pathfd);
	} else {
		fd = openat(dirfd, name, open_flags() | O_CLOEXEC);
		/* with -L, a symlink swapped in since readdir is followed,
		 * but only once its target's type is known */
		if (fd < 0 && errno == ELOOP && w->opts.follow)
			return visit(w, dirfd, name, DT_LNK);
		fd = fd < 0 ? -errno : fd;
	}
	if (fd < 0) {
		if (fd == -ELOOP && !w->opts.follow)
			note(w, type_note(S_IFLNK)); /* replaced by a symlink */
		else
			error(w, fd);
		return 0;
	}
	/* the pipeline's other thread takes the statx and the checks,
	 * unless it is behind */
	if (w->ops->check && !(w->ops->busy && w->ops->busy(w->ctx)))
		return measure(w, fd, NULL, 0, false);
	if (!stat_regular(w, fd, &st, &mnt_id))
		return 0;
	return measure(w, fd, &st, mnt_id, false);
}

static int walk_tree(struct walk *w, int fd, const struct stat *st)
{
	int ret = push_dir(w, fd, st);

	while (ret >= 0 && w->depth > 0) {
		struct level *l = &w->levels[w->depth - 1];
		unsigned char dtype;
		const char *name;

		if (w->opts.stop && *w->opts.stop) {
			ret = -EINTR;
			break;
		}
		if (l->pos >= l->names.len) {
			ret = pop_dir(w);
			if (ret == -ESTALE)
				ret = 0;
			continue;
		}
		dtype = (unsigned char)l->names.data[l->pos];
		name = l->names.data + l->pos + 1;
		l->pos += strlen(name) + 2;
		ret = set_path(w, l->pathlen, name);
		if (ret == 0)
			ret = visit(w, l->fd, name, dtype);
	}
	while (w->depth > 0) {
		struct level *l = &w->levels[--w->depth];

		if (l->fd >= 0)
			close(l->fd);
	}
	w->low_open = 0;
	return ret;
}

int walk_path(struct walk *w, const char *path)
{
	uint64_t mnt_id;
	struct stat st;
	int fd, pathfd, ret;

	w->path.len = 0;
	ret = buf_append(&w->path, path, strlen(path));
	if (ret < 0)
		return ret;
	/* symlinks named by the user are followed; the type is decided on an
	 * O_PATH fd, so a character device or FIFO named is never opened */
	pathfd = openat(AT_FDCWD, path, O_PATH | O_CLOEXEC);
	if (pathfd < 0 || fstat(pathfd, &st) < 0) {
		error(w, -errno);
		if (pathfd >= 0)
			close(pathfd);
		return 0;
	}
	if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) {
		note(w, type_note(st.st_mode));
		close(pathfd);
		return 0;
	}
	if (!S_ISDIR(st.st_mode) && (!included(w, base_name(path, strlen(path))) ||
				     excluded(w, base_name(path, strlen(path))))) {
		close(pathfd);
		return 0;
	}
	fd = reopen(pathfd, AT_FDCWD, path, true, S_ISDIR(st.st_mode) ? O_DIRECTORY : 0);
	close(pathfd);
	if (fd < 0) {
		error(w, fd);
		return 0;
	}
	ret = file_statx(fd, &st, &mnt_id);
	if (ret < 0) {
		error(w, ret);
		close(fd);
		return 0;
	}
	w->root_dev = st.st_dev;
	if (S_ISDIR(st.st_mode))
		return walk_tree(w, fd, &st);
	if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) {
		note(w, type_note(st.st_mode));
		close(fd);
		return 0;
	}
	return measure(w, fd, &st, mnt_id, false);
}

int walk_fd(struct walk *w, int fd, const char *path, size_t pathlen)
{
	uint64_t mnt_id;
	struct stat st;

	w->path.len = 0;
	if (buf_append(&w->path, path, pathlen) < 0) {
		close(fd);
		return -ENOMEM;
	}
	if (!stat_regular(w, fd, &st, &mnt_id))
		return 0;
	if (!included(w, base_name(w->path.data, w->path.len)) ||
	    excluded(w, base_name(w->path.data, w->path.len))) {
		close(fd);
		return 0;
	}
	w->root_dev = st.st_dev;
	/* a process holds a file open and mapped, or mapped many times */
	return measure(w, fd, &st, mnt_id, true);
}

void walk_error(struct walk *w, const char *path, size_t pathlen, int err, const char *msg)
{
	w->ops->error(w->ctx, path, pathlen, err, msg);
}

void walk_note(struct walk *w, const char *path, size_t pathlen, const char *why)
{
	w->ops->note(w->ctx, path, pathlen, why);
}
