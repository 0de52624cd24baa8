/* SPDX-License-Identifier: MIT */
/*
 * happycache: save which pages of a data directory sit in the page cache,
 * and bring them back after a reboot; what Netflix's happycache does for
 * Cassandra, with libpagecache's snapshot format.
 *
 *   happycache dump DIR SNAPSHOT    record DIR's resident pages
 *   happycache load SNAPSHOT DIR    read them back (only those not resident)
 *
 * Files whose residency the kernel hides from the caller are recorded as
 * unknown, never as resident. Loading opens recorded paths beneath DIR only
 * (openat2 with RESOLVE_BENEATH), so a hostile snapshot cannot read
 * anything outside it. Only the public API of libpagecache and libc.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <pagecache/pagecache.h>

static struct pc_snapshot_writer *writer;
static size_t dir_len;
static unsigned long files, unknown;
static uint64_t resident;

static int dump_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	struct pc_snapshot_file meta = { .size = sizeof(meta) };
	struct pc_residency *r = NULL;
	int fd, ret;

	(void)ftw;
	if (type != FTW_F || !S_ISREG(st->st_mode))
		return 0;
	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "happycache: %s: %s\n", path, strerror(errno));
		return 0;
	}
	meta.file_size = (uint64_t)st->st_size;
	meta.mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
	meta.dev = st->st_dev;
	meta.ino = st->st_ino;
	ret = pc_residency(fd, 0, 0, 0, &r);
	close(fd);
	if (ret < 0)
		r = NULL; /* recorded as unknown */
	if (!r || pc_residency_quality(r) == PC_QUALITY_UNKNOWN)
		unknown++;
	else
		resident += pc_residency_resident(r);
	ret = pc_snapshot_write_file(writer, path + dir_len + 1, &meta, r);
	pc_residency_free(r);
	if (ret < 0) {
		fprintf(stderr, "happycache: writing %s: %s\n", path, strerror(-ret));
		return 1; /* stops the walk */
	}
	files++;
	return 0;
}

static int dump(const char *dir, const char *snapshot)
{
	char root[PATH_MAX];
	struct pc_snapshot_info info = { .size = sizeof(info), .root = root };
	int ret;

	if (!realpath(dir, root)) {
		perror(dir);
		return 1;
	}
	info.mincore_mode = pc_detect_mincore();
	info.cachestat_mode = pc_detect_cachestat();
	/* 0600: root's snapshot tells what the kernel hides from others */
	ret = pc_snapshot_writer_new_at(AT_FDCWD, snapshot, 0600, &info, &writer);
	if (ret < 0) {
		fprintf(stderr, "happycache: %s: %s\n", snapshot, strerror(-ret));
		return 1;
	}
	dir_len = strlen(root);
	ret = nftw(root, dump_one, 64, FTW_PHYS | FTW_MOUNT);
	if (ret == 0)
		ret = pc_snapshot_writer_finish(writer); /* fsync, rename */
	pc_snapshot_writer_free(writer); /* unfinished: no file left behind */
	if (ret != 0) {
		fprintf(stderr, "happycache: dump failed, %s unchanged\n", snapshot);
		return 1;
	}
	printf("%lu files, %llu resident pages, %lu unknown\n", files,
	       (unsigned long long)resident, unknown);
	return 0;
}

static int open_beneath(int dirfd, const char *rel)
{
	struct open_how how = {
		.flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
	};
	struct stat st;
	long fd = syscall(SYS_openat2, dirfd, rel, &how, sizeof(how));

	if (fd < 0)
		return -errno;
	if (fstat((int)fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close((int)fd);
		return -EINVAL;
	}
	return (int)fd;
}

static int load(const char *snapshot, const char *dir)
{
	struct pc_snapshot_reader *rd;
	const struct pc_snapshot_file *f;
	struct pc_warm_stats total = { 0 };
	int sfd = open(snapshot, O_RDONLY | O_CLOEXEC);
	int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int ret, skipped = 0;

	if (sfd < 0 || dirfd < 0) {
		perror(sfd < 0 ? snapshot : dir);
		return 1;
	}
	ret = pc_snapshot_reader_new(sfd, &rd);
	while (ret >= 0 && (ret = pc_snapshot_next_file(rd, &f)) > 0) {
		struct pc_warm_stats st = { .size = sizeof(st) };
		int fd;

		if (f->npages == 0)
			continue; /* nothing resident, or unknown at capture */
		fd = pc_snapshot_path_check(f->path) < 0 ? -EINVAL : open_beneath(dirfd, f->path);
		if (fd < 0) {
			fprintf(stderr, "happycache: %s: %s\n", f->path, strerror(-fd));
			skipped++;
			continue;
		}
		int64_t got = pc_warm_snapshot(fd, rd, NULL, &st); /* bytes, or -errno */

		close(fd);
		if (got < 0 && pc_snapshot_reader_error(rd))
			ret = (int)got; /* a corrupt snapshot: stop */
		else if (got < 0)
			fprintf(stderr, "happycache: %s: %s\n", f->path, strerror((int)-got));
		total.pages_wanted += st.pages_wanted;
		total.pages_resident += st.pages_resident;
		total.pages_read += st.pages_read;
	}
	if (ret < 0 && pc_snapshot_reader_error(rd))
		fprintf(stderr, "happycache: %s: corrupt at byte %llu: %s\n", snapshot,
			(unsigned long long)pc_snapshot_reader_error_offset(rd),
			pc_snapshot_reader_error(rd));
	else if (ret < 0)
		fprintf(stderr, "happycache: %s: %s\n", snapshot, strerror(-ret));
	pc_snapshot_reader_free(rd);
	close(sfd);
	close(dirfd);
	printf("%llu pages wanted, %llu already resident, %llu read, %d files skipped\n",
	       (unsigned long long)total.pages_wanted, (unsigned long long)total.pages_resident,
	       (unsigned long long)total.pages_read, skipped);
	return ret < 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "dump") == 0)
		return dump(argv[2], argv[3]);
	if (argc == 4 && strcmp(argv[1], "load") == 0)
		return load(argv[2], argv[3]);
	fprintf(stderr, "usage: happycache dump DIR SNAPSHOT\n"
			"       happycache load SNAPSHOT DIR\n");
	return 2;
}
