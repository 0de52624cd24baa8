/* SPDX-License-Identifier: MIT */
/*
 * Finding files by device and inode beneath a root: where restore looks
 * for a recorded file that is missing from its path but may have been
 * renamed or still be there under another hard link, on the machine that
 * dumped it. The tree is read with getdents alone (readdir's d_ino; fstatat
 * only where the filesystem gives no type, for each directory before it
 * is entered, and for the files on overlayfs, whose device may be a
 * layer's), one open directory per level, each opened from its
 * parent with O_NOFOLLOW | O_DIRECTORY: no symlink is followed and nothing
 * outside the root is reached. Entries are compared only in directories on
 * a device some wanted file was on; another filesystem mounted in the tree
 * is entered only when it is such a device (so /proc, /sys, a network or
 * FUSE mount are left alone, and an automount point is not triggered:
 * AT_NO_AUTOMOUNT), and a directory met again below itself (a bind mount)
 * is not entered twice.
 */
#include <dirent.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "findino.h"
#include "restore-private.h"

/* the path of the entry at hand, grown as it must */
struct buf {
	char *data;
	size_t len, cap;
};

static int buf_append(struct buf *b, const char *data, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		char *p;

		while (cap < b->len + n + 1)
			cap *= 2;
		p = realloc(b->data, cap);
		if (!p)
			return -ENOMEM;
		b->data = p;
		b->cap = cap;
	}
	memcpy(b->data + b->len, data, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

/* Deeper than this, a tree is left alone (a bind mount can make a loop). */
#define FINDINO_MAX_DEPTH 256

static int key_cmp(const void *pa, const void *pb)
{
	const struct inode_key *a = pa, *b = pb;

	if (a->dev != b->dev)
		return a->dev < b->dev ? -1 : 1;
	return a->ino < b->ino ? -1 : a->ino > b->ino;
}

static bool dev_wanted(const struct inode_key *keys, size_t n, uint64_t dev)
{
	size_t lo = 0, hi = n;

	/* keys are sorted by device first: the first key of dev, if any */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (keys[mid].dev < dev)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && keys[lo].dev == dev;
}

struct level {
	DIR *d;
	uint64_t dev, ino;
	size_t pathlen;            /* of the path up to this directory */
	bool stat_files;           /* overlayfs: a file's device may not be its
				    * directory's (a lower layer's): fstatat */
};

/* Whether the files of directory fd need a stat of their own: on
 * overlayfs, or where fstatfs cannot tell. */
static bool stat_files(int fd)
{
	return pc_on_overlayfs(fd) != 0;
}

/* Whether st is one of the directories being read (a loop). */
static bool on_stack(const struct level *levels, size_t depth, const struct stat *st)
{
	for (size_t i = 0; i < depth; i++)
		if (levels[i].dev == (uint64_t)st->st_dev && levels[i].ino == (uint64_t)st->st_ino)
			return true;
	return false;
}

/* Append "/name" (or "name" at the top) to *path; 0 or -ENOMEM. */
static int path_push(struct buf *path, size_t at, const char *name)
{
	path->len = at;
	if (at && buf_append(path, "/", 1) < 0)
		return -ENOMEM;
	if (buf_append(path, name, strlen(name)) < 0)
		return -ENOMEM;
	return 0;
}

/* The walk: a stack of open directories, the path of the entry at hand,
 * and the keys still without a path. */
struct search {
	struct level levels[FINDINO_MAX_DEPTH];
	size_t depth;
	struct buf path;
	struct inode_key *keys;
	size_t n, left;
};

/* A regular file with the key of some keys: every one of those without a
 * path gets this one. 0 or -ENOMEM. */
static int found_file(struct search *s, const struct level *l, const char *name,
		      struct inode_key *k, const struct inode_key *key)
{
	/* the first name met (a hard link's others are alike), for every
	 * key of that file (two recorded names) */
	while (k > s->keys && !key_cmp(k - 1, key))
		k--;
	if (path_push(&s->path, l->pathlen, name) < 0)
		return -ENOMEM;
	for (; k < s->keys + s->n && !key_cmp(k, key); k++) {
		if (k->found)
			continue;
		if (!(k->found = strndup(s->path.data, s->path.len)))
			return -ENOMEM;
		s->left--;
	}
	return 0;
}

/* Enter directory name of l (st: its fstatat) when it is worth it:
 * another filesystem only where a wanted file was, no automount
 * triggered, no directory entered twice. 0 or -errno (the search would
 * be incomplete). */
static int enter_dir(struct search *s, struct level *l, const char *name)
{
	struct stat st, st2;
	int fd;

	if (s->depth == FINDINO_MAX_DEPTH ||
	    fstatat(dirfd(l->d), name, &st, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT) < 0 ||
	    !S_ISDIR(st.st_mode) ||
	    ((uint64_t)st.st_dev != l->dev && !dev_wanted(s->keys, s->n, (uint64_t)st.st_dev)) ||
	    on_stack(s->levels, s->depth, &st))
		return 0;
	fd = openat(dirfd(l->d), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && (errno == EMFILE || errno == ENFILE || errno == ENOMEM))
		return -errno;
	if (fd < 0)
		return 0; /* unreadable, or gone: nothing to find there */
	if (path_push(&s->path, l->pathlen, name) < 0) {
		close(fd);
		return -ENOMEM;
	}
	/* what was looked at is what was opened */
	if (fstat(fd, &st2) < 0 || st2.st_dev != st.st_dev || st2.st_ino != st.st_ino ||
	    !(s->levels[s->depth].d = fdopendir(fd))) {
		close(fd);
		return 0;
	}
	s->levels[s->depth].dev = (uint64_t)st.st_dev;
	s->levels[s->depth].ino = (uint64_t)st.st_ino;
	s->levels[s->depth].pathlen = s->path.len;
	s->levels[s->depth].stat_files = stat_files(fd);
	s->depth++;
	return 0;
}

/* The next entry of the deepest directory. 0 or -errno. */
static int search_step(struct search *s)
{
	struct level *l = &s->levels[s->depth - 1];
	struct inode_key key, *k;
	struct dirent *e;
	unsigned char type;
	struct stat st;

	errno = 0;
	e = readdir(l->d);
	if (!e) {
		closedir(l->d);
		s->depth--;
		return 0;
	}
	if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
		return 0;
	type = e->d_type;
	key = (struct inode_key){ .dev = l->dev, .ino = e->d_ino };
	if (type == DT_UNKNOWN || (type == DT_REG && l->stat_files)) {
		if (fstatat(dirfd(l->d), e->d_name, &st, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT) < 0)
			return 0;
		type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_UNKNOWN;
		key.dev = (uint64_t)st.st_dev;
		key.ino = (uint64_t)st.st_ino;
	}
	if (type == DT_REG && dev_wanted(s->keys, s->n, key.dev) &&
	    (k = bsearch(&key, s->keys, s->n, sizeof(*s->keys), key_cmp)) && !k->found)
		return found_file(s, l, e->d_name, k, &key);
	return type == DT_DIR ? enter_dir(s, l, e->d_name) : 0;
}

int pc_find_inodes(int rootfd, struct inode_key *keys, size_t n, const volatile int *stop)
{
	struct search *s;
	struct stat st;
	int fd, ret = 0;
	size_t left = 0;

	for (size_t i = 0; i < n; i++)
		left += !keys[i].found;
	qsort(keys, n, sizeof(*keys), key_cmp);
	if (!left)
		return 0;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->keys = keys;
	s->n = n;
	s->left = left;
	fd = openat(rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0 && (fstat(fd, &st) < 0 || !(s->levels[0].d = fdopendir(fd)))) {
		close(fd);
		fd = -1;
	}
	if (fd >= 0) {
		s->levels[0].dev = (uint64_t)st.st_dev;
		s->levels[0].ino = (uint64_t)st.st_ino;
		s->levels[0].stat_files = stat_files(fd);
		s->depth = 1;
	}
	while (s->depth && s->left && !(stop && *stop) && ret == 0)
		ret = search_step(s);
	while (s->depth)
		closedir(s->levels[--s->depth].d);
	free(s->path.data);
	free(s);
	if (ret < 0)
		return ret;
	for (size_t i = 0; i < n; i++)
		ret += keys[i].found != NULL;
	return ret;
}
