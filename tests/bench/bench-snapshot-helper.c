/* SPDX-License-Identifier: MIT */
/*
 * Helper of bench-snapshot.sh: the other tools' methods, and the wait until
 * every wanted page is resident (readahead(2) and WILLNEED return before
 * the I/O lands).
 *
 *   bench-snapshot-helper poll SNAPSHOT ROOT [TIMEOUT_S]
 *       poll mincore (pc_residency with PC_RES_FORCE_MINCORE: only pages
 *       up to date count) until every page the snapshot records is
 *       resident under ROOT (or none arrived for 2 s); prints
 *       "resident=<percent> last=<epoch seconds when the count last grew>
 *       first=<1 when the first pass found them all resident already>"
 *   bench-snapshot-helper iowatch STATFILE
 *       read a block device's stat file (/sys/dev/block/M:m/stat) every
 *       millisecond until SIGTERM, then print "last=<epoch seconds when
 *       its count of sectors read last grew>" (last=0 when it never did):
 *       when the reads of a method that returns before its
 *       pages land (readahead(2), WILLNEED) ended, to the millisecond
 *   bench-snapshot-helper willneed8 SNAPSHOT ROOT
 *       happycache's load: POSIX_FADV_WILLNEED on runs of at most 8 pages,
 *       one call each
 *   bench-snapshot-helper diskorder SNAPSHOT ROOT
 *       the disk order alone, as doc/design.md measures it: each file
 *       opened beneath ROOT (openat2, without restore's O_PATH check that
 *       never opens a device node), fstat, FIEMAP of its first run and
 *       cachestat of each run on two threads; then, in the order of the
 *       first runs' disk addresses, readahead(2) of each run not all
 *       cached, and close, on one. Nothing counted, nothing looked at.
 *   bench-snapshot-helper direct SNAPSHOT ROOT CHUNK_BYTES DEPTH
 *       the disk's own pace for exactly the wanted bytes: the files
 *       opened with O_DIRECT and their runs cut into reads of CHUNK_BYTES
 *       at most, sorted by where they lie on the disk (FIEMAP), as many
 *       files at a time as the fd limit allows (untimed); then those
 *       reads, DEPTH in flight through io_uring, the page cache left
 *       alone, until the last one lands (timed). Prints "bytes=<n>
 *       seconds=<s>": what the disk gives for those bytes at that moment.
 *   bench-snapshot-helper readahead FILE CHUNK_BYTES
 *       readahead(2) over the whole file in chunks
 *   bench-snapshot-helper pattern FILE RUN_BYTES
 *       evict FILE, then read every other run of RUN_BYTES through a
 *       POSIX_FADV_RANDOM fd (doc/kernels.md section 7)
 *   bench-snapshot-helper tree DIR NFILES SEED
 *       NFILES files of 4-64 KiB in 100 directories
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <liburing.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <pagecache/pagecache.h>

#include "diskaddr.h"

struct file {
	char *path;
	struct pc_run *runs;
	size_t n;
	uint64_t pages;
	int done;
	/* diskorder */
	int fd;
	uint64_t key;              /* the first run's disk address */
	uint64_t cached;           /* bit k: runs[k] all cached (k < 64) */
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static _Noreturn void die(const char *what, int err)
{
	fprintf(stderr, "bench-snapshot-helper: %s: %s\n", what, strerror(err < 0 ? -err : err));
	exit(1);
}

/* The snapshot's files with their runs (this machine's page size assumed). */
static struct file *load(const char *snap, size_t *nfiles)
{
	struct pc_snapshot_reader *rd;
	const struct pc_snapshot_file *f;
	struct file *files = NULL;
	size_t n = 0, cap = 0;
	int fd = open(snap, O_RDONLY | O_CLOEXEC), ret;

	if (fd < 0)
		die(snap, errno);
	ret = pc_snapshot_reader_new(fd, &rd);
	if (ret < 0)
		die("reader", ret);
	while ((ret = pc_snapshot_next_file(rd, &f)) > 0) {
		struct pc_run run;
		size_t rcap = 0;
		struct file *x;

		if (n == cap) {
			cap = cap ? cap * 2 : 1024;
			files = realloc(files, cap * sizeof(*files));
			if (!files)
				die("memory", ENOMEM);
		}
		x = &files[n++];
		memset(x, 0, sizeof(*x));
		x->path = strdup(f->path);
		while ((ret = pc_snapshot_next_run(rd, &run)) > 0) {
			if (x->n == rcap) {
				rcap = rcap ? rcap * 2 : 16;
				x->runs = realloc(x->runs, rcap * sizeof(*x->runs));
				if (!x->runs)
					die("memory", ENOMEM);
			}
			x->runs[x->n++] = run;
			x->pages += run.npages;
		}
		if (ret < 0)
			die("snapshot", ret);
	}
	if (ret < 0)
		die("snapshot", ret);
	pc_snapshot_reader_free(rd);
	close(fd);
	*nfiles = n;
	return files;
}

static uint64_t resident_of(int dirfd, struct file *f)
{
	struct pc_residency *r;
	uint64_t got = 0;
	int fd = openat(dirfd, f->path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	/* mincore: only pages up to date count. pc_residency() takes uniform
	 * spans from cachestat, which counts pages still being read in: right
	 * after readahead(2) of a 4 GiB file returned, it said 100% while 200
	 * requests (17% of the pages) were still on their way, and a method
	 * that returns before its reads land was timed short */
	if (pc_residency(fd, 0, 0, PC_RES_FORCE_MINCORE, &r) == 0) {
		for (size_t i = 0; i < f->n; i++)
			for (uint64_t p = f->runs[i].page; p < f->runs[i].page + f->runs[i].npages;
			     p++)
				got += pc_residency_test(r, p) == 1;
		pc_residency_free(r);
	}
	close(fd);
	return got;
}

static double wall(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Poll until every recorded page is resident, or the count stopped
 * growing for 2 s (pages that will not come), or timeout. Prints the
 * percentage and the wall-clock time at which the pass that saw the
 * count last grow began: about when the last page landed, whether or not
 * all did; and whether the first pass found every page resident (then
 * they landed before this poll began: before the command's end). */
static int cmd_poll(const char *snap, const char *root, double timeout)
{
	size_t n, left;
	int passes = 0, first = 0;
	struct file *files = load(snap, &n);
	uint64_t want = 0, have = 0, partial = 0, prev = UINT64_MAX;
	int dirfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	double t0 = now(), last = wall(), last_mono = now();

	if (dirfd < 0)
		die(root, errno);
	for (size_t i = 0; i < n; i++)
		want += files[i].pages;
	left = n;
	for (;;) {
		/* when this pass sees the final count, the pages landed before
		 * its end and after the previous pass began: its start is the
		 * time taken (the same rule for every method) */
		double pass_wall = wall(), pass_mono = now();

		partial = 0;
		for (size_t i = 0; i < n; i++) {
			uint64_t got;

			if (files[i].done)
				continue;
			got = resident_of(dirfd, &files[i]);
			if (got == files[i].pages) {
				files[i].done = 1;
				have += got;
				left--;
			} else {
				partial += got;
			}
		}
		if (have + partial != prev) {
			prev = have + partial;
			last = pass_wall;
			last_mono = pass_mono;
		}
		if (++passes == 1)
			first = !left;
		if (!left || now() - t0 > timeout || now() - last_mono > 2.0)
			break;
		usleep(2000);
	}
	printf("resident=%.3f last=%.6f first=%d\n",
	       want ? 100.0 * (double)(have + partial) / (double)want : 100.0, last, first);
	return 0;
}

static int cmd_willneed8(const char *snap, const char *root)
{
	size_t n;
	struct file *files = load(snap, &n);
	int dirfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	uint64_t ps = (uint64_t)pc_page_size();

	if (dirfd < 0)
		die(root, errno);
	for (size_t i = 0; i < n; i++) {
		int fd = openat(dirfd, files[i].path, O_RDONLY | O_CLOEXEC);

		if (fd < 0)
			continue;
		for (size_t k = 0; k < files[i].n; k++)
			for (uint64_t p = files[i].runs[k].page;
			     p < files[i].runs[k].page + files[i].runs[k].npages; p += 8) {
				uint64_t end = files[i].runs[k].page + files[i].runs[k].npages;
				uint64_t len = (end - p < 8 ? end - p : 8) * ps;

				posix_fadvise(fd, (off_t)(p * ps), (off_t)len, POSIX_FADV_WILLNEED);
			}
		close(fd);
	}
	return 0;
}

struct order {
	struct file *files;
	size_t n;
	size_t next;               /* atomic */
	int dirfd;
	uint64_t ps;
};

static int open_beneath(int dirfd, const char *path)
{
	struct open_how how = {
		.flags = O_RDONLY | O_NONBLOCK | O_NOATIME | O_NOFOLLOW | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
	};

	return (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
}

static void *order_open(void *arg)
{
	struct order *o = arg;
	size_t i;

	while ((i = __atomic_fetch_add(&o->next, 1, __ATOMIC_RELAXED)) < o->n) {
		struct file *f = &o->files[i];
		struct stat st;

		f->key = UINT64_MAX;
		f->fd = open_beneath(o->dirfd, f->path);
		if (f->fd < 0 || !f->n)
			continue; /* out of fds: opened again when read */
		if (fstat(f->fd, &st) < 0 || !S_ISREG(st.st_mode)) {
			close(f->fd);
			f->fd = -2;
			continue;
		}
		f->key = pc_disk_address(f->fd, f->runs[0].page * o->ps, f->runs[0].npages * o->ps);
		for (size_t k = 0; k < f->n && k < 64; k++) {
			struct pc_cachestat cs;

			if (pc_cachestat(f->fd, f->runs[k].page * o->ps, f->runs[k].npages * o->ps,
					 &cs) == 0 && cs.cache >= f->runs[k].npages)
				f->cached |= UINT64_C(1) << k;
		}
	}
	return NULL;
}

static int key_cmp(const void *pa, const void *pb)
{
	const struct file *a = pa, *b = pb;

	return a->key < b->key ? -1 : a->key > b->key;
}

static int cmd_diskorder(const char *snap, const char *root)
{
	struct order o = { .ps = (uint64_t)pc_page_size() };
	pthread_t tid;
	int helper;

	o.files = load(snap, &o.n);
	o.dirfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (o.dirfd < 0)
		die(root, errno);
	helper = pthread_create(&tid, NULL, order_open, &o) == 0;
	order_open(&o);
	if (helper)
		pthread_join(tid, NULL);
	qsort(o.files, o.n, sizeof(*o.files), key_cmp);
	for (size_t i = 0; i < o.n; i++) {
		struct file *f = &o.files[i];

		if (f->fd == -1)
			f->fd = open_beneath(o.dirfd, f->path);
		if (f->fd < 0)
			continue;
		for (size_t k = 0; k < f->n; k++)
			if (k >= 64 || !(f->cached & (UINT64_C(1) << k)))
				readahead(f->fd, (off64_t)(f->runs[k].page * o.ps),
					  (size_t)(f->runs[k].npages * o.ps));
		close(f->fd);
	}
	return 0;
}

static volatile sig_atomic_t stop_watch;

static void on_term(int sig)
{
	(void)sig;
	stop_watch = 1;
}

/* Sectors read so far (the third field of a block device's stat file);
 * -1 when it cannot be read. */
static long long sectors_read(int fd)
{
	char buf[512];
	unsigned long long ios, merges, sectors;
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	if (n <= 0)
		return -1;
	buf[n] = '\0';
	if (sscanf(buf, "%llu %llu %llu", &ios, &merges, &sectors) != 3)
		return -1;
	return (long long)sectors;
}

static int cmd_iowatch(const char *statfile)
{
	struct sigaction sa = { .sa_handler = on_term };
	int fd = open(statfile, O_RDONLY | O_CLOEXEC);
	long long prev, now_s;
	double last = 0;

	if (fd < 0 || (prev = sectors_read(fd)) < 0)
		die(statfile, fd < 0 ? errno : EINVAL);
	sigaction(SIGTERM, &sa, NULL);
	/* a bench killed midway leaves no watch behind */
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() == 1)
		stop_watch = 1;
	for (;;) {
		struct timespec ms = { 0, 1000000 };
		/* read before the stop is seen: what landed since the last
		 * look counts too */
		bool stop = stop_watch;

		now_s = sectors_read(fd);
		if (now_s > prev) {
			prev = now_s;
			last = wall();
		}
		/* no wait for reads still in flight: the poll, which asks
		 * mincore, has seen every wanted page up to date, so their
		 * reads have ended; later ones are of other pages */
		if (stop)
			break;
		nanosleep(&ms, NULL);
	}
	printf("last=%.6f\n", last);
	close(fd);
	return 0;
}

/* A read of cmd_direct(): where its bytes lie on the disk, and which. */
struct dread {
	uint64_t phys;             /* UINT64_MAX: not known (sorted last) */
	uint64_t off, len;
	int fd;
};

static int dread_cmp(const void *pa, const void *pb)
{
	const struct dread *a = pa, *b = pb;

	if (a->phys != b->phys)
		return a->phys < b->phys ? -1 : 1;
	return a->off < b->off ? -1 : a->off > b->off;
}

/* Wait for one read; its buffer slot goes back on the free stack. */
static void direct_reap(struct io_uring *ring, unsigned int *free_slots, unsigned int *nfree,
			uint64_t *bytes)
{
	struct io_uring_cqe *cqe;
	int ret = io_uring_wait_cqe(ring, &cqe);

	if (ret < 0)
		die("io_uring_wait_cqe", ret);
	if (cqe->res < 0)
		die("O_DIRECT read", cqe->res);
	*bytes += (uint64_t)cqe->res;
	free_slots[(*nfree)++] = (unsigned int)io_uring_cqe_get_data64(cqe);
	io_uring_cqe_seen(ring, cqe);
}

/* The reads of files [from, to) of cmd_direct(): untimed, each file opened
 * with O_DIRECT and its runs cut into chunks, sorted by where they lie on
 * the disk (the order it serves best); timed, those reads at depth. */
static double direct_window(struct file *files, size_t from, size_t to, int dirfd, uint64_t chunk,
			    unsigned int depth, void *buf, uint64_t *bytes)
{
	uint64_t ps = (uint64_t)pc_page_size();
	unsigned int *free_slots = calloc(depth, sizeof(*free_slots)), nfree;
	struct dread *reads = NULL;
	size_t nreads = 0, cap = 0;
	struct io_uring ring;
	double t0, t;
	int ret;

	if (!free_slots)
		die("memory", ENOMEM);
	for (nfree = 0; nfree < depth; nfree++)
		free_slots[nfree] = nfree;
	for (size_t i = from; i < to; i++) {
		int fd = openat(dirfd, files[i].path, O_RDONLY | O_DIRECT | O_CLOEXEC);

		if (fd < 0)
			die(files[i].path, errno);
		files[i].fd = fd;
		for (size_t k = 0; k < files[i].n; k++) {
			uint64_t off = files[i].runs[k].page * ps;
			uint64_t end = off + files[i].runs[k].npages * ps;

			for (; off < end; off += chunk) {
				if (nreads == cap) {
					cap = cap ? 2 * cap : 4096;
					reads = realloc(reads, cap * sizeof(*reads));
					if (!reads)
						die("memory", ENOMEM);
				}
				reads[nreads++] = (struct dread){
					.phys = pc_disk_address(fd, off, ps),
					.off = off,
					.len = end - off < chunk ? end - off : chunk,
					.fd = fd,
				};
			}
		}
	}
	qsort(reads, nreads, sizeof(*reads), dread_cmp);
	ret = io_uring_queue_init(depth, &ring, 0);
	if (ret < 0)
		die("io_uring_queue_init", ret);
	t0 = now();
	for (size_t r = 0; r < nreads; r++) {
		struct io_uring_sqe *sqe;
		unsigned int slot;

		if (!nfree)
			direct_reap(&ring, free_slots, &nfree, bytes);
		slot = free_slots[--nfree];
		sqe = io_uring_get_sqe(&ring);
		if (!sqe)
			die("io_uring_get_sqe", EBUSY);
		/* a buffer per read in flight: the data is thrown away, but
		 * two reads landing in one buffer at once would race */
		io_uring_prep_read(sqe, reads[r].fd, (char *)buf + (size_t)slot * chunk,
				   (unsigned int)reads[r].len, reads[r].off);
		io_uring_sqe_set_data64(sqe, slot);
		ret = io_uring_submit(&ring);
		if (ret < 0)
			die("io_uring_submit", ret);
	}
	while (nfree < depth)
		direct_reap(&ring, free_slots, &nfree, bytes);
	t = now() - t0;
	io_uring_queue_exit(&ring);
	for (size_t i = from; i < to; i++)
		close(files[i].fd);
	free(reads);
	free(free_slots);
	return t;
}

static int cmd_direct(const char *snap, const char *root, uint64_t chunk, unsigned int depth)
{
	size_t n, win;
	struct file *files = load(snap, &n);
	int dirfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	uint64_t ps = (uint64_t)pc_page_size(), bytes = 0;
	double t = 0;
	struct rlimit rl;
	void *buf;

	if (dirfd < 0)
		die(root, errno);
	if (!chunk || chunk % ps || chunk > (UINT64_C(1) << 30) || !depth || depth > 1024)
		die("direct: CHUNK_BYTES must be a multiple of the page size up to 1 GiB, DEPTH 1-1024",
		    EINVAL);
	if (posix_memalign(&buf, (size_t)ps, (size_t)(chunk * depth)))
		die("memory", ENOMEM);
	/* a window's files stay open until its reads are done: as many as
	 * the fd limit allows, less the ones the process has besides (the
	 * standard three, the root, the ring) */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	win = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur > 16 ? (size_t)rl.rlim_cur - 16 : 1;
	for (size_t from = 0; from < n; from += win)
		t += direct_window(files, from, n - from < win ? n : from + win, dirfd, chunk, depth,
				   buf, &bytes);
	printf("bytes=%llu seconds=%.6f\n", (unsigned long long)bytes, t);
	free(buf);
	return 0;
}

static int cmd_readahead(const char *path, uint64_t chunk)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;

	if (fd < 0 || fstat(fd, &st) < 0)
		die(path, errno);
	for (uint64_t off = 0; off < (uint64_t)st.st_size; off += chunk)
		if (readahead(fd, (off64_t)off, (size_t)chunk) < 0)
			die("readahead", errno);
	close(fd);
	return 0;
}

static int cmd_pattern(const char *path, uint64_t run)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	char *buf = malloc(run);

	if (fd < 0 || fstat(fd, &st) < 0 || !buf)
		die(path, errno);
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
	for (uint64_t off = 0; off < (uint64_t)st.st_size; off += 2 * run)
		if (pread(fd, buf, run, (off_t)off) < 0)
			die("pread", errno);
	free(buf);
	close(fd);
	return 0;
}

static int cmd_tree(const char *dir, unsigned long nfiles, unsigned int seed)
{
	static char data[64 * 1024];
	char path[4096];

	srand(seed);
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (char)rand();
	for (unsigned long i = 0; i < nfiles; i++) {
		size_t size = 4096 + (size_t)rand() % (60 * 1024 + 1);
		int fd;

		snprintf(path, sizeof(path), "%s/d%02lu", dir, i % 100);
		mkdir(path, 0755);
		snprintf(path, sizeof(path), "%s/d%02lu/f%06lu", dir, i % 100, i);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0 || write(fd, data, size) != (ssize_t)size)
			die(path, errno);
		close(fd);
	}
	sync();
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 4 && strcmp(argv[1], "poll") == 0)
		return cmd_poll(argv[2], argv[3], argc > 4 ? atof(argv[4]) : 120.0);
	if (argc == 4 && strcmp(argv[1], "willneed8") == 0)
		return cmd_willneed8(argv[2], argv[3]);
	if (argc == 3 && strcmp(argv[1], "iowatch") == 0)
		return cmd_iowatch(argv[2]);
	if (argc == 4 && strcmp(argv[1], "diskorder") == 0)
		return cmd_diskorder(argv[2], argv[3]);
	if (argc == 6 && strcmp(argv[1], "direct") == 0)
		return cmd_direct(argv[2], argv[3], strtoull(argv[4], NULL, 0),
				  (unsigned int)strtoul(argv[5], NULL, 0));
	if (argc == 4 && strcmp(argv[1], "readahead") == 0)
		return cmd_readahead(argv[2], strtoull(argv[3], NULL, 0));
	if (argc == 4 && strcmp(argv[1], "pattern") == 0)
		return cmd_pattern(argv[2], strtoull(argv[3], NULL, 0));
	if (argc == 5 && strcmp(argv[1], "tree") == 0)
		return cmd_tree(argv[2], strtoul(argv[3], NULL, 0), (unsigned int)atoi(argv[4]));
	fprintf(stderr, "usage: see the comment at the top of bench-snapshot-helper.c\n");
	return 2;
}
