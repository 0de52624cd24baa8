/* SPDX-License-Identifier: MIT */
/*
 * Allocation failure on demand: the --wrap targets of tests/test-faults
 * (see failmalloc.h). __real_X is the C library's X as the dynamic linker
 * resolves it (glibc's, or valgrind's and ASan's replacements).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/types.h>

#include "failmalloc.h"

void *__real_malloc(size_t size);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t size);
void __real_free(void *p);
int __real_posix_memalign(void **p, size_t align, size_t size);
void *__real_aligned_alloc(size_t align, size_t size);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
FILE *__real_fopen(const char *path, const char *mode);
DIR *__real_fdopendir(int fd);
ssize_t __real_getline(char **line, size_t *cap, FILE *f);
int __real_pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *),
			  void *arg);

void *__wrap_malloc(size_t size);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t size);
void __wrap_free(void *p);
int __wrap_posix_memalign(void **p, size_t align, size_t size);
void *__wrap_aligned_alloc(size_t align, size_t size);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);
FILE *__wrap_fopen(const char *path, const char *mode);
DIR *__wrap_fdopendir(int fd);
ssize_t __wrap_getline(char **line, size_t *cap, FILE *f);
int __wrap_pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *),
			  void *arg);
ssize_t __real_read(int fd, void *buf, size_t n);
ssize_t __real_write(int fd, const void *buf, size_t n);
ssize_t __wrap_read(int fd, void *buf, size_t n);
ssize_t __wrap_write(int fd, const void *buf, size_t n);

static atomic_int armed;
static atomic_int mode;
static atomic_uint_fast64_t nth, calls, failed;

/* ---- blocks handed out since fm_arm() ------------------------------------ */

#define SLOTS (1u << 16)
#define TOMBSTONE ((void *)1)

static pthread_mutex_t set_lock = PTHREAD_MUTEX_INITIALIZER;
static void *set[SLOTS];
static uint64_t live;
static int tracking;

static size_t slot_of(const void *p)
{
	uint64_t h = (uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15ull;

	return (size_t)(h >> 48) & (SLOTS - 1);
}

static void track(void *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&set_lock);
	if (tracking) {
		size_t i = slot_of(p);

		for (unsigned int k = 0; k < SLOTS; k++, i = (i + 1) & (SLOTS - 1)) {
			if (!set[i] || set[i] == TOMBSTONE) {
				set[i] = p;
				live++;
				break;
			}
		}
		if (live >= SLOTS - 1) {
			fprintf(stderr, "failmalloc: too many live blocks to track\n");
			abort();
		}
	}
	pthread_mutex_unlock(&set_lock);
}

static void untrack(void *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&set_lock);
	if (tracking) {
		size_t i = slot_of(p);

		for (unsigned int k = 0; k < SLOTS && set[i]; k++, i = (i + 1) & (SLOTS - 1)) {
			if (set[i] == p) {
				set[i] = TOMBSTONE;
				live--;
				break;
			}
		}
	}
	pthread_mutex_unlock(&set_lock);
}

/* ---- the countdown ------------------------------------------------------- */

/* Whether this allocating call fails. */
static int fail_now(void)
{
	uint64_t i;

	if (!atomic_load(&armed))
		return 0;
	i = atomic_fetch_add(&calls, 1) + 1;
	if (!atomic_load(&nth))
		return 0;
	if (i == atomic_load(&nth) || (atomic_load(&mode) == FM_FROM_NTH && i > atomic_load(&nth))) {
		atomic_fetch_add(&failed, 1);
		return 1;
	}
	return 0;
}

void fm_arm(uint64_t n, int m)
{
	pthread_mutex_lock(&set_lock);
	memset(set, 0, sizeof(set));
	live = 0;
	tracking = 1;
	pthread_mutex_unlock(&set_lock);
	atomic_store(&calls, 0);
	atomic_store(&failed, 0);
	atomic_store(&nth, n);
	atomic_store(&mode, m);
	atomic_store(&armed, 1);
}

uint64_t fm_disarm(void)
{
	atomic_store(&armed, 0);
	return atomic_load(&failed);
}

uint64_t fm_calls(void)
{
	return atomic_load(&calls);
}

uint64_t fm_live_blocks(void)
{
	uint64_t n;

	pthread_mutex_lock(&set_lock);
	n = live;
	pthread_mutex_unlock(&set_lock);
	return n;
}

/* ---- the wrappers -------------------------------------------------------- */

void *__wrap_malloc(size_t size)
{
	void *p;

	if (fail_now()) {
		errno = ENOMEM;
		return NULL;
	}
	p = __real_malloc(size);
	track(p);
	return p;
}

void *__wrap_calloc(size_t n, size_t size)
{
	void *p;

	if (fail_now()) {
		errno = ENOMEM;
		return NULL;
	}
	p = __real_calloc(n, size);
	track(p);
	return p;
}

void *__wrap_realloc(void *old, size_t size)
{
	void *p;

	if (fail_now()) {
		errno = ENOMEM;
		return NULL;
	}
	p = __real_realloc(old, size);
	if (p || !size) {
		untrack(old);
		track(p);
	}
	return p;
}

void __wrap_free(void *p)
{
	untrack(p);
	__real_free(p);
}

int __wrap_posix_memalign(void **out, size_t align, size_t size)
{
	int ret;

	if (fail_now())
		return ENOMEM;
	ret = __real_posix_memalign(out, align, size);
	if (ret == 0)
		track(*out);
	return ret;
}

void *__wrap_aligned_alloc(size_t align, size_t size)
{
	void *p;

	if (fail_now()) {
		errno = ENOMEM;
		return NULL;
	}
	p = __real_aligned_alloc(align, size);
	track(p);
	return p;
}

char *__wrap_strdup(const char *s)
{
	char *p;

	if (fail_now()) {
		errno = ENOMEM;
		return NULL;
	}
	p = __real_strdup(s);
	track(p);
	return p;
}

char *__wrap_strndup(const char *s, size_t n)
{
	char *p;

	if (fail_now()) {
		errno = ENOMEM;
		return NULL;
	}
	p = __real_strndup(s, n);
	track(p);
	return p;
}

/* The C library allocates these itself (a FILE, a DIR, a line buffer, a
 * thread's stack and TLS) and frees them itself: failed, never tracked. */
FILE *__wrap_fopen(const char *path, const char *m)
{
	if (fail_now()) {
		errno = ENOMEM;
		return NULL;
	}
	return __real_fopen(path, m);
}

DIR *__wrap_fdopendir(int fd)
{
	if (fail_now()) {
		errno = ENOMEM;
		return NULL;
	}
	return __real_fdopendir(fd);
}

ssize_t __wrap_getline(char **line, size_t *cap, FILE *f)
{
	/* only a call that must allocate can run out of memory */
	if ((!*line || !*cap) && fail_now()) {
		errno = ENOMEM;
		return -1;
	}
	return __real_getline(line, cap, f);
}

int __wrap_pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *),
			  void *arg)
{
	if (fail_now())
		return EAGAIN;
	return __real_pthread_create(t, attr, fn, arg);
}

/* ---- counting interrupted and short I/O --------------------------------------- */

static atomic_uint_fast64_t read_eintr, read_short, write_eintr, write_short;

ssize_t __wrap_read(int fd, void *buf, size_t n)
{
	ssize_t got = __real_read(fd, buf, n);

	if (got < 0 && errno == EINTR)
		atomic_fetch_add(&read_eintr, 1);
	else if (got > 0 && (size_t)got < n)
		atomic_fetch_add(&read_short, 1);
	return got;
}

ssize_t __wrap_write(int fd, const void *buf, size_t n)
{
	ssize_t done = __real_write(fd, buf, n);

	if (done < 0 && errno == EINTR)
		atomic_fetch_add(&write_eintr, 1);
	else if (done >= 0 && (size_t)done < n)
		atomic_fetch_add(&write_short, 1);
	return done;
}

void fm_io_counts(struct fm_io_counts *out)
{
	out->read_eintr = atomic_load(&read_eintr);
	out->read_short = atomic_load(&read_short);
	out->write_eintr = atomic_load(&write_eintr);
	out->write_short = atomic_load(&write_short);
}
