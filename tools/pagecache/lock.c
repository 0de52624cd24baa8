/* SPDX-License-Identifier: MIT */
/*
 * pagecache lock: keep files resident until SIGINT or SIGTERM, like
 * vmtouch -l. Each file is mapped (PROT_READ, MAP_SHARED) and locked with
 * mlock2(MLOCK_ONFAULT) plus MADV_POPULATE_READ (5.14+), which reads the
 * pages in and locks them without touching them from user space; older
 * kernels get mlock(2). RLIMIT_MEMLOCK is checked before each file, unless
 * the caller has CAP_IPC_LOCK.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

#ifndef MLOCK_ONFAULT
#define MLOCK_ONFAULT 0x01
#endif
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif

struct lock_ctx {
	struct action a;             /* first: the walk's callbacks see it */
	bool unlimited;              /* CAP_IPC_LOCK or RLIMIT_MEMLOCK infinity */
	uint64_t limit;              /* RLIMIT_MEMLOCK in bytes */
	uint64_t locked;             /* bytes locked, ours and before us */
	uint64_t bytes, pages;       /* what this command locked */
	sigset_t stop;               /* SIGINT, SIGTERM */
	bool stopped;
	const char *pidfile;         /* --pidfile, or NULL */
};

static const char lock_usage_head[] =
	"Usage: pagecache lock [OPTIONS] PATH...\n"
	"\n"
	"Read the files into the page cache and keep them there until SIGINT or\n"
	"SIGTERM, like vmtouch -l (mmap, mlock2(MLOCK_ONFAULT) and\n"
	"MADV_POPULATE_READ, or mlock). Directories are walked recursively.\n"
	"Without CAP_IPC_LOCK at most RLIMIT_MEMLOCK bytes can be locked: the\n"
	"command says how much that is, and files that do not fit get an error.\n"
	"\n"
	"      --pidfile FILE      write the process id to FILE once the files are\n"
	"                          locked; removed at exit\n"
	"  -v, --verbose           one line per locked file\n"
	"  -q, --quiet             no notes about skipped files\n"
	"\n";

static const char lock_usage_tail[] =
	"\n"
	"  -h, --help              show this help\n"
	"\n"
	"Exit status (after the signal): 0 all went well, 1 some file failed,\n"
	"2 usage error. With nothing locked it exits at once.\n";

enum { OPT_PIDFILE = 256 };

static const struct option lock_options[] = {
	{ "pidfile", required_argument, NULL, OPT_PIDFILE },
	{ "verbose", no_argument, NULL, 'v' },
	{ "quiet", no_argument, NULL, 'q' },
	SELECTION_LONG_OPTIONS,
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* VmLck of this process in bytes (memory locked before we start). */
static uint64_t locked_now(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	unsigned long long kb = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmLck: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return (uint64_t)kb * 1024;
}

static int lock_range(void *addr, size_t len)
{
	if (syscall(SYS_mlock2, addr, len, MLOCK_ONFAULT) == 0) {
		if (madvise(addr, len, MADV_POPULATE_READ) == 0)
			return 0;
		if (errno != EINVAL) /* EINVAL: a kernel before 5.14 */
			return -errno;
		munlock(addr, len);
	} else if (errno != ENOSYS && errno != EINVAL) {
		return -errno;
	}
	if (mlock(addr, len) < 0)
		return -errno;
	return 0;
}

static int on_file(void *ctx, int fd, const struct stat *st, uint64_t mnt_id,
		   const char *path, size_t len)
{
	struct lock_ctx *c = ctx;
	uint64_t ps = (uint64_t)pc_page_size();
	uint64_t size, mapped;
	sigset_t pending;
	void *addr;
	int ret;

	if (c->stopped)
		return 0;
	if (sigpending(&pending) == 0 &&
	    (sigismember(&pending, SIGINT) || sigismember(&pending, SIGTERM))) {
		c->stopped = true; /* a signal came while locking: stop soon */
		return 0;
	}
	ret = file_bytes(fd, st, &size);
	if (ret < 0)
		return ret;
	if (action_too_big(&c->a, size))
		return 0;
	if (size == 0) {
		c->a.files++; /* nothing to lock, nothing that can fail */
		return 0;
	}
	if (size > SIZE_MAX)
		return -EFBIG;
	mapped = (size + ps - 1) & ~(ps - 1);
	if (!c->unlimited && c->locked + mapped > c->limit) {
		char want[32], left[32], msg[128];

		human_bytes(mapped, want, sizeof(want));
		human_bytes(c->limit > c->locked ? c->limit - c->locked : 0, left, sizeof(left));
		snprintf(msg, sizeof(msg), "not locked: needs %s, only %s left under RLIMIT_MEMLOCK",
			 want, left);
		action_error(c, path, len, -ENOMEM, msg);
		return 0;
	}
	addr = mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, fd, 0);
	if (addr == MAP_FAILED)
		return -errno;
	ret = lock_range(addr, (size_t)size);
	if (ret < 0) {
		munmap(addr, (size_t)size);
		return ret;
	}
	/* the mapping stays until exit; the walk closes fd */
	c->a.files++;
	c->locked += mapped;
	c->bytes += size;
	c->pages += mapped / ps;
	if (c->a.verbose) {
		char s[32];

		human_bytes(size, s, sizeof(s));
		printf("locked %7s ", s);
		text_write_path(stdout, path, len);
		putchar('\n');
	}
	return 0;
}

static const struct walk_ops lock_walk_ops = {
	.file = on_file,
	.note = action_note,
	.error = action_error,
};

static int write_pidfile(const char *name)
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%ld\n", (long)getpid());
	/* O_NONBLOCK: a FIFO put at that name must not hang us (ENXIO without
	 * a reader; with one, the type check below refuses it) */
	int fd = open(name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK,
		      0644);
	struct stat st;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL; /* not a file of ours to remove either */
	}
	if (write(fd, buf, (size_t)n) != n) {
		int err = errno ? -errno : -EIO;

		close(fd);
		unlink(name);
		return err;
	}
	if (close(fd) < 0) {
		unlink(name);
		return -errno;
	}
	return 0;
}

static int lock_option(void *ctx, int opt, char *arg)
{
	struct lock_ctx *c = ctx;

	if (opt != OPT_PIDFILE)
		return 0;
	c->pidfile = arg;
	return 1;
}

static const struct action_cli lock_cli = {
	.options = lock_options,
	.usage_head = lock_usage_head,
	.usage_tail = lock_usage_tail,
	.option = lock_option,
};

/* Block SIGINT and SIGTERM (one that comes while locking ends the command
 * once it is safe), learn how much may be locked, and say so. */
static void lock_begin(struct lock_ctx *c)
{
	struct rlimit rl;
	char lim[32], left[32];

	sigemptyset(&c->stop);
	sigaddset(&c->stop, SIGINT);
	sigaddset(&c->stop, SIGTERM);
	sigprocmask(SIG_BLOCK, &c->stop, NULL);

	c->locked = locked_now();
	if (getrlimit(RLIMIT_MEMLOCK, &rl) < 0) {
		rl.rlim_cur = RLIM_INFINITY;
	}
	c->unlimited = cap_effective(CAP_IPC_LOCK) || rl.rlim_cur == RLIM_INFINITY;
	c->limit = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)rl.rlim_cur;
	if (c->unlimited) {
		printf("lock: no limit on locked memory (%s)\n",
		       rl.rlim_cur == RLIM_INFINITY ? "RLIMIT_MEMLOCK unlimited" : "CAP_IPC_LOCK");
	} else {
		human_bytes(c->limit, lim, sizeof(lim));
		human_bytes(c->limit > c->locked ? c->limit - c->locked : 0, left, sizeof(left));
		printf("lock: RLIMIT_MEMLOCK is %s: at most %s more can be locked "
		       "(no CAP_IPC_LOCK)\n", lim, left);
	}
	fflush(stdout);
}

static void text_totals(const struct lock_ctx *c)
{
	char tot[32];

	human_bytes(c->bytes, tot, sizeof(tot));
	printf("locked: %llu file%s, %s (%llu page%s); %llu error%s; %llu skipped",
	       (unsigned long long)c->a.files, c->a.files == 1 ? "" : "s", tot,
	       (unsigned long long)c->pages, c->pages == 1 ? "" : "s",
	       (unsigned long long)c->a.errors, c->a.errors == 1 ? "" : "s",
	       (unsigned long long)c->a.skipped);
	if (c->a.filtered)
		printf("; %llu over --max-size", (unsigned long long)c->a.filtered);
	putchar('\n');
}

/* Write --pidfile, wait for SIGINT or SIGTERM, remove the pidfile; the
 * exit status. The mappings stay locked until the process exits. */
static int hold_until_signal(struct lock_ctx *c)
{
	int ret, sig;

	if (c->pidfile) {
		ret = write_pidfile(c->pidfile);
		if (ret < 0) {
			cli_error(c->pidfile, strlen(c->pidfile), "%s", strerror(-ret));
			return PC_EXIT_FAILED;
		}
	}
	printf("lock: holding them until SIGINT or SIGTERM (pid %ld)\n", (long)getpid());
	fflush(stdout);
	do {
		sig = sigwaitinfo(&c->stop, NULL);
	} while (sig < 0 && errno == EINTR);
	printf("lock: %s: released\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
	ret = action_status(&c->a);
	if (c->pidfile)
		unlink(c->pidfile);
	return ret;
}

int cmd_lock(int argc, char **argv)
{
	struct lock_ctx c = { 0 };
	struct selection sel;
	struct walk *w = NULL;
	int ret;

	selection_init(&sel);
	c.a.cmd = "lock";
	if (!action_options(&c.a, &sel, &lock_cli, &c, argc, argv, &ret))
		goto out;
	c.a.max_size = sel.max_size;
	c.a.rep.mode = OUT_TEXT;
	progress_init(&c.a.progress, false);
	lock_begin(&c);
	if (walk_new(&sel.wo, &lock_walk_ops, &c, &w) < 0 ||
	    selection_walk(&sel, w, argc - optind, argv + optind) < 0) {
		cli_error(NULL, 0, "out of memory");
		ret = PC_EXIT_FAILED;
		goto out;
	}
	text_totals(&c);
	if (c.stopped || c.pages == 0) {
		printf("lock: %s\n", c.stopped ? "stopped by a signal" : "nothing to hold");
		ret = action_status(&c.a);
	} else {
		ret = hold_until_signal(&c);
	}
out:
	report_free(&c.a.rep);
	walk_free(w);
	selection_free(&sel);
	return ret;
}
