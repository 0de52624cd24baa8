/* SPDX-License-Identifier: MIT */
/*
 * --pid: the regular files a process has open (/proc/PID/fd) or mapped
 * (/proc/PID/maps), as pcstat -pid and hcache list them. Each file is
 * opened through /proc, which names the very file the process holds even
 * when it was renamed or deleted; the walk counts each (device, inode) once.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

/* The link's target as the name to show; "(unreadable)" when it cannot be
 * read. Returns the length written into buf (NUL-terminated). */
static size_t link_name(const char *link, char *buf, size_t size)
{
	ssize_t n = readlink(link, buf, size - 1);

	if (n < 0) {
		snprintf(buf, size, "%s", link);
		return strlen(buf);
	}
	buf[n] = '\0';
	return (size_t)n;
}

static int open_fds(struct walk *w, const char *pid)
{
	char dir[64], link[384], name[4096];
	struct dirent *de;
	DIR *d;
	int ret = 0;

	snprintf(dir, sizeof(dir), "/proc/%s/fd", pid);
	d = opendir(dir);
	if (!d) {
		int err = -errno;

		walk_error(w, dir, strlen(dir), err,
			   err == -ENOENT ? "no such process" : NULL);
		return 0;
	}
	while (ret == 0 && (de = readdir(d))) {
		struct stat st;
		size_t len;
		int fd;

		if (de->d_name[0] == '.')
			continue;
		snprintf(link, sizeof(link), "%s/%s", dir, de->d_name);
		/* sockets, pipes, anonymous inodes, devices: part of any process,
		 * not files, and never opened (the process may swap its fds) */
		fd = open_regular_at(AT_FDCWD, link, &st);
		if (fd == -EINVAL || fd == -ENOENT)
			continue;
		len = link_name(link, name, sizeof(name));
		if (fd < 0) {
			walk_error(w, name, len, fd, NULL);
			continue;
		}
		ret = walk_fd(w, fd, name, len);
	}
	closedir(d);
	return ret;
}

int parse_map_line(char *line, char **range, ino_t *ino, char **path)
{
	unsigned long long inode;
	char *p = line, *f[5];

	for (int i = 0; i < 5; i++) {
		while (*p == ' ')
			p++;
		f[i] = p;
		p = strchr(p, ' ');
		if (!p)
			return -EINVAL;
		*p++ = '\0';
	}
	while (*p == ' ')
		p++;
	if (sscanf(f[4], "%llu", &inode) != 1)
		return -EINVAL;
	*range = f[0];
	*ino = (ino_t)inode;
	*path = p;
	return 0;
}

static int mapped_files(struct walk *w, const char *pid)
{
	char maps[64], link[384];
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	FILE *f;
	int ret = 0;

	snprintf(maps, sizeof(maps), "/proc/%s/maps", pid);
	f = fopen(maps, "re");
	if (!f) {
		int err = -errno;

		walk_error(w, maps, strlen(maps), err, err == -ENOENT ? "no such process" : NULL);
		return 0;
	}
	while (ret == 0 && (n = getline(&line, &cap, f)) > 0) {
		char *range, *path;
		struct stat st;
		size_t len;
		ino_t ino;
		int fd;

		if (line[n - 1] == '\n')
			line[--n] = '\0';
		if (parse_map_line(line, &range, &ino, &path) < 0 || ino == 0 ||
		    path[0] != '/')
			continue; /* anonymous memory, [heap], [vdso] ... */
		len = strlen(path);
		/* map_files names the mapped file itself (CAP_SYS_ADMIN);
		 * otherwise the path, if it still leads to the same inode */
		snprintf(link, sizeof(link), "/proc/%s/map_files/%s", pid, range);
		fd = open_regular_at(AT_FDCWD, link, &st);
		if (fd == -EINVAL)
			continue; /* a mapped device (/dev/zero, a GPU): not opened */
		if (fd < 0) {
			/* the type and inode are checked before the open: a
			 * device planted at the shown name is never opened */
			fd = open_regular_at(AT_FDCWD, path, &st);
			/* maps may show another device number than stat
			 * (overlayfs, btrfs): the inode must match */
			if ((fd >= 0 || fd == -EINVAL) && st.st_ino != ino) {
				if (fd >= 0)
					close(fd);
				walk_error(w, path, len, -ESTALE,
					   "not the file the process mapped (replaced or deleted)");
				continue;
			}
			if (fd == -EINVAL)
				continue; /* a mapped device, as above */
			if (fd < 0) {
				walk_error(w, path, len, fd, NULL);
				continue;
			}
		}
		ret = walk_fd(w, fd, path, len);
	}
	free(line);
	fclose(f);
	return ret;
}

int walk_pid(struct walk *w, const char *pid)
{
	char dir[64];
	struct stat st;
	int ret;

	snprintf(dir, sizeof(dir), "/proc/%s", pid);
	if (stat(dir, &st) < 0) {
		walk_error(w, dir, strlen(dir), -errno, errno == ENOENT ? "no such process" : NULL);
		return 0;
	}
	ret = open_fds(w, pid);
	if (ret == 0)
		ret = mapped_files(w, pid);
	return ret;
}
