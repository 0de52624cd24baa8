/* SPDX-License-Identifier: MIT */
/*
 * bench-mktree DIR UNIT NUNITS: the file tree bench-scale.sh walks.
 *
 * Makes DIR/sKK/dMMM/fNNNN for KK < NUNITS, MMM < UNIT / 1000 and
 * NNNN < 1000: UNIT files in each sKK, 1000 files per directory, so that
 * DIR/s00 holds UNIT files and DIR holds UNIT * NUNITS, both walked as one
 * root. File i of each directory holds i % 3 bytes (0, 1 or 2): tiny files,
 * most of them one page, the rest empty. DIR must exist and be empty.
 * Prints nothing; exit status 1 with a message on the first failure.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PER_DIR 1000

static int fail(const char *what, const char *name, int err)
{
	fprintf(stderr, "bench-mktree: %s %s: %s\n", what, name, strerror(err));
	return 1;
}

/* mkdirat + open it; -1 after a message. */
static int make_dir(int at, const char *name)
{
	int fd;

	if (mkdirat(at, name, 0755) < 0) {
		fail("mkdir", name, errno);
		return -1;
	}
	fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		fail("open", name, errno);
	return fd;
}

static int fill_dir(int dfd)
{
	char name[16];

	for (int i = 0; i < PER_DIR; i++) {
		size_t n = (size_t)(i % 3);
		int fd;

		snprintf(name, sizeof(name), "f%04d", i);
		fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd < 0)
			return fail("create", name, errno);
		if (n && write(fd, "xy", n) != (ssize_t)n) {
			int err = errno ? errno : EIO;

			close(fd);
			return fail("write", name, err);
		}
		if (close(fd) < 0)
			return fail("close", name, errno);
	}
	return 0;
}

int main(int argc, char **argv)
{
	unsigned long unit, nunits;
	char *end;
	int top;

	if (argc != 4) {
		fprintf(stderr, "usage: bench-mktree DIR UNIT NUNITS\n");
		return 2;
	}
	errno = 0;
	unit = strtoul(argv[2], &end, 10);
	if (errno || *end || unit == 0 || unit % PER_DIR || unit / PER_DIR > 1000) {
		fprintf(stderr, "bench-mktree: UNIT must be a multiple of %d up to %d\n",
			PER_DIR, PER_DIR * 1000);
		return 2;
	}
	nunits = strtoul(argv[3], &end, 10);
	if (errno || *end || nunits == 0 || nunits > 100) {
		fprintf(stderr, "bench-mktree: NUNITS must be 1 to 100\n");
		return 2;
	}
	top = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (top < 0)
		return fail("open", argv[1], errno);
	for (unsigned long k = 0; k < nunits; k++) {
		char name[16];
		int sfd;

		snprintf(name, sizeof(name), "s%02lu", k);
		sfd = make_dir(top, name);
		if (sfd < 0)
			return 1;
		for (unsigned long m = 0; m < unit / PER_DIR; m++) {
			int dfd, ret;

			snprintf(name, sizeof(name), "d%03lu", m);
			dfd = make_dir(sfd, name);
			if (dfd < 0)
				return 1;
			ret = fill_dir(dfd);
			close(dfd);
			if (ret)
				return ret;
		}
		close(sfd);
	}
	close(top);
	return 0;
}
