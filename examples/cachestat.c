/* SPDX-License-Identifier: MIT */
/*
 * cachestat: for each file, its size in pages, what cachestat(2) counts in
 * the page cache, and whether mincore(2) would tell this caller the truth.
 *
 *   cc cachestat.c $(pkg-config --cflags --libs pagecache) -o cachestat
 *   ./cachestat FILE...
 *
 * A file whose counts the kernel refuses (EPERM) is an answer, not an
 * error; a file that cannot be opened is an error: the exit status is 1.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <pagecache/pagecache.h>

static int show(const char *path, long page_size)
{
	struct pc_cachestat cs;
	struct stat st;
	uint64_t pages;
	int fd, ret, can;

	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC); /* a FIFO must not hang us */
	if (fd < 0) {
		fprintf(stderr, "cachestat: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) < 0) {
		fprintf(stderr, "cachestat: %s: %s\n", path, strerror(errno));
		close(fd);
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		fprintf(stderr, "cachestat: %s: not a regular file\n", path);
		close(fd);
		return -1;
	}
	pages = ((uint64_t)st.st_size + (uint64_t)page_size - 1) / (uint64_t)page_size;
	printf("%s: %" PRIu64 " pages; ", path, pages);

	ret = pc_cachestat(fd, 0, 0, &cs);
	if (ret == 0)
		printf("cachestat: cache %" PRIu64 " dirty %" PRIu64 " writeback %" PRIu64
		       " evicted %" PRIu64 " recently_evicted %" PRIu64 "; ",
		       cs.cache, cs.dirty, cs.writeback, cs.evicted, cs.recently_evicted);
	else
		printf("cachestat: %s; ", strerror(-ret));

	/* Another answer, not an error: 0 means mincore would lie to us. */
	can = pc_can_do_mincore(fd);
	if (can == 1)
		printf("mincore: visible\n");
	else if (can == 0)
		printf("mincore: hidden\n");
	else
		printf("mincore: %s\n", strerror(-can));
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	long page_size = pc_page_size();
	int status = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: cachestat FILE...\n");
		return 2;
	}
	if (page_size <= 0) {
		fprintf(stderr, "cachestat: page size: %s\n", strerror((int)-page_size));
		return 1;
	}
	for (int i = 1; i < argc; i++)
		if (show(argv[i], page_size) < 0)
			status = 1;
	return status;
}
