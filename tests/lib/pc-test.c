/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/magic.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pc-test.h"

static char *scratch;
static pid_t scratch_owner; /* only the process that made it removes it */
static char *cases;         /* pc_test_cases_dir() */
static pid_t cases_owner;
/* Strings handed out by pc_test_path(), freed at exit. */
static char **paths;
static size_t npaths;

static void die(const char *what)
{
	fprintf(stderr, "pc-test: %s: %s\n", what, strerror(errno));
	exit(99);
}

/* Unmount (lazily) what is still mounted beneath dir in this process's
 * mount namespace, the deepest first: a test case that failed in a forked
 * child, or was killed, never ran its own undo, and rm -rf cannot remove
 * a mount point in use (the directory was left behind). Mount points are
 * compared as mountinfo writes them; dir (a mkdtemp name) needs no
 * escapes. */
static void unmount_beneath(const char *dir)
{
	char line[8192], *points[64];
	size_t n = 0, len = strlen(dir);
	FILE *f = fopen("/proc/self/mountinfo", "re");

	if (!f)
		return;
	while (n < sizeof(points) / sizeof(points[0]) && fgets(line, sizeof(line), f)) {
		char *p = line;

		/* the fifth field is the mount point */
		for (int i = 0; i < 4 && p; i++) {
			p = strchr(p, ' ');
			if (p)
				p++;
		}
		if (!p || strncmp(p, dir, len) != 0 || p[len] != '/')
			continue;
		p[strcspn(p, " ")] = '\0';
		points[n] = strdup(p);
		if (points[n])
			n++;
	}
	fclose(f);
	/* mountinfo lists a mount after the one it sits on */
	while (n > 0) {
		n--;
		if (umount2(points[n], MNT_DETACH) < 0)
			fprintf(stderr, "pc-test: could not unmount %s: %s\n", points[n],
				strerror(errno));
		free(points[n]);
	}
}

/* rm -rf dir, after unmounting what is mounted beneath it. */
static void remove_tree(const char *dir)
{
	char cmd[4200];

	if (geteuid() == 0)
		unmount_beneath(dir);
	snprintf(cmd, sizeof(cmd), "rm -rf -- '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "pc-test: could not remove %s\n", dir);
}

static void remove_scratch(void)
{
	for (size_t i = 0; i < npaths; i++)
		free(paths[i]);
	free(paths);
	paths = NULL;
	npaths = 0;
	if (!scratch)
		return;
	/* forked test children exit too: never remove the parent's directory */
	if (scratch_owner == getpid() && !getenv("PC_TEST_KEEP"))
		remove_tree(scratch);
	free(scratch);
	scratch = NULL;
}

static void remove_cases(void)
{
	if (!cases || cases_owner != getpid() || getenv("PC_TEST_KEEP"))
		return;
	remove_tree(cases);
	free(cases);
	cases = NULL;
}

/* A fresh directory (mode 0755) under $PC_TEST_DIR, or /var/tmp: a private
 * one, so that parallel suites never collide. */
static char *make_temp_dir(void)
{
	const char *env = getenv("PC_TEST_DIR");
	char tmpl[4096], *dir;

	snprintf(tmpl, sizeof(tmpl), "%s/pc-test-XXXXXX", env && *env ? env : "/var/tmp");
	dir = strdup(tmpl);
	if (!dir || !mkdtemp(dir))
		die("mkdtemp");
	if (chmod(dir, 0755) < 0)
		die("chmod scratch dir");
	return dir;
}

void pc_test_cases_dir(void)
{
	struct statfs sfs;

	if (scratch || cases)
		return;
	cases = make_temp_dir();
	cases_owner = getpid();
	atexit(remove_cases);
	/* on tmpfs pc_test_dir() says SKIP, in the case that needs it */
	if (statfs(cases, &sfs) == 0 && sfs.f_type != TMPFS_MAGIC && setenv("PC_TEST_DIR", cases, 1) < 0)
		die("setenv");
}

const char *pc_test_dir(void)
{
	struct statfs sfs;

	if (scratch)
		return scratch;
	scratch = make_temp_dir();
	scratch_owner = getpid();
	atexit(remove_scratch);
	if (statfs(scratch, &sfs) == 0 && sfs.f_type == TMPFS_MAGIC) {
		printf("SKIP: scratch directory %s is on tmpfs: eviction does not work there\n",
		       scratch);
		exit(77);
	}
	return scratch;
}

const char *pc_test_path(const char *name)
{
	size_t len = strlen(pc_test_dir()) + strlen(name) + 2;
	char **grown = realloc(paths, (npaths + 1) * sizeof(*paths));
	char *p = malloc(len);

	if (!grown || !p)
		die("malloc");
	paths = grown;
	paths[npaths++] = p;
	snprintf(p, len, "%s/%s", pc_test_dir(), name);
	return p; /* freed at exit, with the scratch directory */
}

const char *pc_test_make_file(const char *name, uint64_t npages, mode_t mode, int uid, int gid)
{
	const char *path = pc_test_path(name);
	long ps = sysconf(_SC_PAGESIZE);
	char *buf = malloc((size_t)ps);
	int fd;

	if (!buf)
		die("malloc");
	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		die(path);
	for (uint64_t i = 0; i < npages; i++) {
		memset(buf, (int)('a' + i % 26), (size_t)ps);
		if (pwrite(fd, buf, (size_t)ps, (off_t)(i * (uint64_t)ps)) != ps)
			die("pwrite");
	}
	if (fsync(fd) < 0)
		die("fsync");
	if (uid >= 0 && fchown(fd, (uid_t)uid, (gid_t)gid) < 0)
		die("fchown");
	if (fchmod(fd, mode) < 0)
		die("fchmod");
	close(fd);
	free(buf);
	return path;
}

void pc_test_set_pattern(const char *path, const uint64_t *pages, size_t n)
{
	long ps = sysconf(_SC_PAGESIZE);
	char byte;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		die(path);
	fdatasync(fd);
	if (posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) != 0)
		die("fadvise DONTNEED");
	if (posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM) != 0)
		die("fadvise RANDOM");
	for (size_t i = 0; i < n; i++)
		if (pread(fd, &byte, 1, (off_t)(pages[i] * (uint64_t)ps)) < 0)
			die("pread");
	close(fd);
}

uint64_t pc_test_mincore(const char *path, unsigned char **vec)
{
	long ps = sysconf(_SC_PAGESIZE);
	struct stat st;
	uint64_t npages;
	void *map;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st) < 0)
		die(path);
	npages = ((uint64_t)st.st_size + (uint64_t)ps - 1) / (uint64_t)ps;
	*vec = calloc(npages ? npages : 1, 1);
	if (!*vec)
		die("calloc");
	if (npages) {
		/* PROT_NONE: mincore does not care, and valgrind reads the
		 * head of files mapped readable, which would cache it */
		map = mmap(NULL, npages * (uint64_t)ps, PROT_NONE, MAP_SHARED, fd, 0);
		if (map == MAP_FAILED)
			die("mmap");
		if (mincore(map, npages * (uint64_t)ps, *vec) < 0)
			die("mincore");
		munmap(map, npages * (uint64_t)ps);
		for (uint64_t i = 0; i < npages; i++)
			(*vec)[i] &= 1;
	}
	close(fd);
	return npages;
}

int pc_test_as_nobody(int (*fn)(void *arg, void *buf, size_t bufsize), void *arg,
		      void *buf, size_t bufsize)
{
	int pipefd[2], status, ret = -999;
	pid_t pid;

	if (pipe2(pipefd, O_CLOEXEC) < 0)
		die("pipe2");
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		int r;

		close(pipefd[0]);
		if (setgroups(0, NULL) < 0 || setgid(PC_TEST_NOBODY) < 0 ||
		    setuid(PC_TEST_NOBODY) < 0)
			_exit(98);
		if (buf)
			memset(buf, 0, bufsize);
		r = fn(arg, buf, bufsize);
		if (write(pipefd[1], &r, sizeof(r)) != sizeof(r))
			_exit(97);
		if (buf && write(pipefd[1], buf, bufsize) != (ssize_t)bufsize)
			_exit(97);
		_exit(0);
	}
	close(pipefd[1]);
	if (read(pipefd[0], &ret, sizeof(ret)) != sizeof(ret))
		ret = -999;
	else if (buf) {
		size_t got = 0;

		while (got < bufsize) {
			ssize_t n = read(pipefd[0], (char *)buf + got, bufsize - got);

			if (n <= 0)
				break;
			got += (size_t)n;
		}
	}
	close(pipefd[0]);
	if (waitpid(pid, &status, 0) < 0)
		die("waitpid");
	if (WIFSIGNALED(status))
		return -1000 - WTERMSIG(status);
	if (WEXITSTATUS(status) != 0) {
		fprintf(stderr, "pc-test: nobody child exited %d\n", WEXITSTATUS(status));
		return -1000;
	}
	return ret;
}

struct fsuid_call {
	int (*fn)(void *arg);
	void *arg;
	int ret;
};

static void *fsuid_thread(void *p)
{
	struct fsuid_call *c = p;

	setfsgid(PC_TEST_NOBODY);
	setfsuid(PC_TEST_NOBODY);
	if ((int)setfsuid((uid_t)-1) != PC_TEST_NOBODY) {
		c->ret = -EPERM;
		return NULL;
	}
	c->ret = c->fn(c->arg);
	return NULL;
}

int pc_test_in_fsuid_thread(int (*fn)(void *arg), void *arg)
{
	struct fsuid_call c = { .fn = fn, .arg = arg, .ret = -999 };
	pthread_t t;

	if (pthread_create(&t, NULL, fsuid_thread, &c) != 0)
		die("pthread_create");
	pthread_join(t, NULL);
	return c.ret;
}

int pc_test_under_valgrind(void)
{
	const char *v = getenv("PC_UNDER_VALGRIND");

	return v && strcmp(v, "1") == 0;
}

int pc_test_is_root(void)
{
	return geteuid() == 0;
}

void pc_test_shard(unsigned int *k, unsigned int *n)
{
	const char *v = getenv("PC_CASES_SHARD");
	unsigned int kk, nn;
	char end;

	*k = 0;
	*n = 1;
	if (!v || !*v)
		return;
	if (sscanf(v, "%u/%u%c", &kk, &nn, &end) != 2 || kk < 1 || kk > nn) {
		fprintf(stderr, "PC_CASES_SHARD=%s: not K/N with 1 <= K <= N\n", v);
		exit(2);
	}
	*k = kk - 1;
	*n = nn;
}

void pc_test_skip(const char *what, const char *why)
{
	printf("SKIP: %s: %s\n", what, why);
	fflush(stdout);
}

/* The first number in the file at dir/name; -1 when it cannot be read. */
static long long read_number(const char *dir, const char *name)
{
	char path[1024];
	long long v;
	FILE *f;
	int got;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "re");
	if (!f)
		return -1;
	got = fscanf(f, "%lld", &v);
	fclose(f);
	return got == 1 ? v : -1;
}

/* Whether the file at dir/name starts with word. */
static int file_says(const char *dir, const char *name, const char *word)
{
	char path[1024], buf[64];
	FILE *f;
	int says;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "re");
	if (!f)
		return 0;
	says = fscanf(f, "%63s", buf) == 1 && strcmp(buf, word) == 0;
	fclose(f);
	return says;
}

#define DAMON_ADMIN "/sys/kernel/mm/damon/admin/kdamonds"

/* Bytes the running kdamonds' pageout schemes have paged out so far; their
 * counters are refreshed on request ("update_schemes_stats", which changes
 * nothing else; root only). */
static uint64_t damon_paged_out_bytes(void)
{
	char kd[320], ctx[352], sc[640];
	struct dirent *k, *c, *e;
	uint64_t total = 0;
	DIR *kds = opendir(DAMON_ADMIN), *ctxs, *scs;

	if (!kds)
		return 0;
	while ((k = readdir(kds))) {
		FILE *st;

		if (k->d_name[0] == '.')
			continue;
		snprintf(kd, sizeof(kd), "%s/%s", DAMON_ADMIN, k->d_name);
		if (!file_says(kd, "state", "on"))
			continue;
		snprintf(ctx, sizeof(ctx), "%s/state", kd);
		st = fopen(ctx, "we");
		if (!st)
			continue;
		fputs("update_schemes_stats", st);
		if (fclose(st) != 0)
			continue;
		snprintf(ctx, sizeof(ctx), "%s/contexts", kd);
		ctxs = opendir(ctx);
		while (ctxs && (c = readdir(ctxs))) {
			if (c->d_name[0] == '.')
				continue;
			snprintf(sc, sizeof(sc), "%s/%s/schemes", ctx, c->d_name);
			scs = opendir(sc);
			while (scs && (e = readdir(scs))) {
				char d[928], stats[960];
				long long applied;

				if (e->d_name[0] == '.')
					continue;
				snprintf(d, sizeof(d), "%s/%s", sc, e->d_name);
				if (!file_says(d, "action", "pageout"))
					continue;
				snprintf(stats, sizeof(stats), "%s/stats", d);
				applied = read_number(stats, "sz_applied");
				if (applied > 0)
					total += (uint64_t)applied;
			}
			if (scs)
				closedir(scs);
		}
		if (ctxs)
			closedir(ctxs);
	}
	closedir(kds);
	return total;
}

uint64_t pc_test_reclaimed_pages(int refresh_damon)
{
	static uint64_t damon_seen; /* at the last refresh */
	static int damon_asked;
	char name[64];
	unsigned long long value;
	uint64_t total = 0;
	FILE *f = fopen("/proc/vmstat", "re");

	if (refresh_damon || !damon_asked) {
		damon_seen = damon_paged_out_bytes() / (uint64_t)sysconf(_SC_PAGESIZE);
		damon_asked = 1;
	}

	if (f) {
		while (fscanf(f, "%63s %llu", name, &value) == 2)
			if (strcmp(name, "pgsteal_anon") == 0 ||
			    strcmp(name, "pgsteal_file") == 0)
				total += value;
		fclose(f);
	}
	return total + damon_seen;
}
