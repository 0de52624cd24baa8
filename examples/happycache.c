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
 * unknown, never as resident. Loading is pc_restore(): recorded paths are
 * opened beneath DIR only, regular files only, so a hostile snapshot cannot
 * read anything outside it nor open a device; files whose size or mtime
 * changed are named, missing ones looked for by inode, and the exit status
 * is 1 when a file was refused or could not be read. Only the public API
 * of libpagecache and libc.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <pagecache/pagecache.h>

static struct pc_snapshot_writer *writer;
static const char *snapshot_name;
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

/* A file the restore skipped, refused or could not read: one line. */
static void on_event(const struct pc_restore_event *ev, void *arg)
{
	(void)arg;
	if (ev->reason == PC_RESTORE_EV_CHANGED)
		fprintf(stderr, "happycache: %s: changed since the dump (restored)\n", ev->path);
	else if (ev->error && ev->path)
		fprintf(stderr, "happycache: %s: %s (%s)\n", ev->path,
			pc_restore_event_name(ev->reason), strerror(-ev->error));
	else
		fprintf(stderr, "happycache: %s: %s\n", ev->path ? ev->path : snapshot_name,
			pc_restore_event_name(ev->reason));
}

static int load(const char *snapshot, const char *dir)
{
	struct pc_restore_opts opts = { .size = sizeof(opts), .event = on_event };
	struct pc_restore_stats st = { .size = sizeof(st) };
	struct pc_restore_source src = { .size = sizeof(src) };
	struct pc_snapshot_source *s = NULL;
	int sfd = open(snapshot, O_RDONLY | O_CLOEXEC);
	int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int ret = 0;

	snapshot_name = snapshot;
	if (sfd < 0 || dirfd < 0) {
		perror(sfd < 0 ? snapshot : dir);
		ret = -1;
	} else {
		ret = pc_snapshot_source_new(sfd, &s);
	}
	if (s) {
		/* confinement beneath dir, identity (size and mtime), renamed
		 * files, the memory budget and waiting for the reads: the
		 * library's; a corrupt snapshot is found before anything is read */
		pc_snapshot_source_get(s, &src);
		ret = pc_restore(dirfd, &src, &opts, &st);
		if (ret < 0 && pc_snapshot_reader_error(pc_snapshot_source_reader(s)))
			fprintf(stderr, "happycache: %s: corrupt at byte %llu: %s\n", snapshot,
				(unsigned long long)pc_snapshot_reader_error_offset(
					pc_snapshot_source_reader(s)),
				pc_snapshot_reader_error(pc_snapshot_source_reader(s)));
		else if (ret < 0)
			fprintf(stderr, "happycache: %s: %s\n", snapshot, strerror(-ret));
		else
			printf("%llu pages wanted, %llu already resident, %llu read, %llu resident "
			       "now, %llu files restored, %llu skipped\n",
			       (unsigned long long)st.pages_wanted,
			       (unsigned long long)st.pages_resident_before,
			       (unsigned long long)st.pages_read,
			       (unsigned long long)st.final_pages_resident,
			       (unsigned long long)st.files_restored,
			       (unsigned long long)(st.files - st.files_restored -
						    st.files_without_pages));
	} else if (ret < 0 && sfd >= 0 && dirfd >= 0) {
		fprintf(stderr, "happycache: %s: %s\n", snapshot, strerror(-ret));
	}
	pc_snapshot_source_free(s);
	if (sfd >= 0)
		close(sfd);
	if (dirfd >= 0)
		close(dirfd);
	/* files refused or unreadable count as a failure, as a corrupt snapshot */
	if (ret == 0 && (st.skipped[PC_RESTORE_SKIP_REFUSED] || st.skipped[PC_RESTORE_SKIP_ERROR] ||
			 st.read_error))
		return 1;
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
