/* SPDX-License-Identifier: MIT */
/*
 * Two threads for one walk: the walking thread reads directories and opens
 * files; a second thread checks them (statx, type, -x, counted once: the
 * walk's own checks, walk_check) and runs the command's callbacks (the
 * residency call, the output) on them. Opening is the walk's largest cost,
 * so the statx goes to the other side, where the library is handed it
 * (pc_residency_facts) instead of taking its own. While that side is
 * behind (or not running: other processes want the CPUs too), the walker
 * takes the statx back, measures the files itself where the command can
 * measure apart from reporting (walk_ops.measure), and closes the fds the
 * consumer is done with, so that both stay busy whichever is faster and
 * the walk never waits long for the other thread. The events travel in
 * batches through a bounded queue and are handled in the order the walk
 * made them, with one consumer, so the output is the same as without the
 * pipeline. The open fds in flight are bounded by the queue's size.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cli.h"

/* Small batches, so that the consumer gets work soon after it asks. */
#define BATCH_EVENTS 32
#define MAX_BATCHES 32
/* Queued batches from which the consumer counts as behind: the walker
 * then takes the statx of the files it opens itself, measures them, and
 * closes the fds the consumer is done with. One: whatever the consumer
 * has not taken yet, the walker might as well do (when other processes
 * keep the second CPU busy, the walk then runs about as one thread
 * would, instead of waiting for the other). */
#define BUSY_BATCHES 1

enum event_type { EV_FILE, EV_NOTE, EV_ERROR };

struct event {
	enum event_type type;
	int err;
	struct walk_file f;       /* EV_FILE; f.path is set when handled */
	size_t path, pathlen;     /* offsets into the batch's text */
	size_t msg;               /* SIZE_MAX: none */
};

struct batch {
	struct event ev[BATCH_EVENTS];
	size_t n;
	/* fds the consumer was done with while it was behind: the walker
	 * closes them when it takes the batch again (closing is a good part
	 * of a file's cost, and the walker is the one with time then) */
	int closefds[BATCH_EVENTS];
	size_t nclose;
	struct buf text;
	struct batch *next;
};

struct pipeline {
	const struct walk_ops *inner;
	void *inner_ctx;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;       /* a batch was queued, or freed, or done */
	struct batch *head, *tail; /* queued, oldest first */
	struct batch *free_list;
	size_t nbatches, max_batches;
	struct batch *filling;     /* the walker's */
	struct walk *walk;         /* set by the walker before its first file */
	bool done;                 /* no more batches will come */
	atomic_size_t queued;      /* batches waiting for the consumer */
	int force_behind;          /* -1, or the test's choice: 1 always, 0 never */
	atomic_int failed;         /* -ENOMEM from the consumer */
};

/* The consumer has a backlog: the walker should take on more. */
static bool behind(struct pipeline *p)
{
	if (p->force_behind >= 0)
		return p->force_behind;
	return atomic_load_explicit(&p->queued, memory_order_relaxed) >= BUSY_BATCHES;
}

static void handle(struct pipeline *p, struct batch *b)
{
	bool defer_close = !p->inner->takes_fd && behind(p);

	for (size_t i = 0; i < b->n; i++) {
		struct event *e = &b->ev[i];
		const char *path = b->text.data + e->path;
		const char *msg = e->msg == SIZE_MAX ? NULL : b->text.data + e->msg;
		int ret;

		switch (e->type) {
		case EV_FILE:
			if (p->failed) {
				if (e->f.pre)
					p->inner->discard(p->inner_ctx, e->f.pre);
				else
					close(e->f.fd);
				break;
			}
			e->f.path = path;
			e->f.pathlen = e->pathlen;
			e->f.keep_fd = defer_close && !e->f.pre;
			ret = walk_check(p->walk, p->inner, p->inner_ctx, &e->f);
			if (e->f.keep_fd)
				b->closefds[b->nclose++] = e->f.fd;
			if (ret == -ENOMEM)
				p->failed = ret; /* the walker sees it at its next push */
			break;
		case EV_NOTE:
			p->inner->note(p->inner_ctx, path, e->pathlen, msg);
			break;
		case EV_ERROR:
			p->inner->error(p->inner_ctx, path, e->pathlen, e->err, msg);
			break;
		}
	}
	b->n = 0;
	b->text.len = 0;
}

static void *consumer(void *arg)
{
	struct pipeline *p = arg;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		struct batch *b;

		while (!p->head && !p->done)
			pthread_cond_wait(&p->cond, &p->lock);
		b = p->head;
		if (!b)
			break;
		p->head = b->next;
		if (!p->head)
			p->tail = NULL;
		atomic_fetch_sub_explicit(&p->queued, 1, memory_order_relaxed);
		pthread_mutex_unlock(&p->lock);
		handle(p, b);
		pthread_mutex_lock(&p->lock);
		b->next = p->free_list;
		p->free_list = b;
		pthread_cond_broadcast(&p->cond);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

static void close_deferred(struct batch *b)
{
	for (size_t i = 0; i < b->nclose; i++)
		close(b->closefds[i]);
	b->nclose = 0;
}

/* Queue the walker's batch and get an empty one; -ENOMEM. */
static int push(struct pipeline *p)
{
	struct batch *b = p->filling;
	int ret = 0;

	pthread_mutex_lock(&p->lock);
	b->next = NULL;
	if (p->tail)
		p->tail->next = b;
	else
		p->head = b;
	p->tail = b;
	atomic_fetch_add_explicit(&p->queued, 1, memory_order_relaxed);
	p->filling = NULL;
	pthread_cond_broadcast(&p->cond);
	while (!p->free_list && p->nbatches >= p->max_batches)
		pthread_cond_wait(&p->cond, &p->lock);
	if (p->free_list) {
		p->filling = p->free_list;
		p->free_list = p->filling->next;
	}
	ret = p->failed;
	pthread_mutex_unlock(&p->lock);
	if (p->filling)
		close_deferred(p->filling);
	if (!p->filling) {
		p->filling = calloc(1, sizeof(*p->filling));
		if (!p->filling)
			return -ENOMEM;
		p->nbatches++; /* only the walker changes it */
	}
	return ret;
}

/* Queue an event; *queued tells whether it went in (and, for a file,
 * whether the fd now belongs to the queue), also when -ENOMEM comes back. */
static int add(struct pipeline *p, enum event_type type, const struct walk_file *f, int err,
	       const char *path, size_t pathlen, const char *msg, bool *queued)
{
	struct batch *b = p->filling;
	struct event *e;

	*queued = false;
	if (!b)
		return -ENOMEM;
	e = &b->ev[b->n];
	e->type = type;
	e->err = err;
	if (f)
		e->f = *f;
	e->path = b->text.len;
	e->pathlen = pathlen;
	e->msg = SIZE_MAX;
	if (buf_append(&b->text, path, pathlen) < 0 || buf_append(&b->text, "", 1) < 0)
		return -ENOMEM;
	if (msg) {
		e->msg = b->text.len;
		if (buf_append(&b->text, msg, strlen(msg) + 1) < 0)
			return -ENOMEM;
	}
	b->n++;
	*queued = true;
	if (b->n == BATCH_EVENTS)
		return push(p);
	return 0;
}

static int on_check(void *ctx, struct walk *w, const struct walk_file *f)
{
	struct pipeline *p = ctx;
	struct walk_file g = *f;
	bool queued;
	int ret;

	/* set once, before the first batch goes to the consumer (through the
	 * lock); written on every call it raced with the consumer's reads */
	if (!p->walk)
		p->walk = w;
	/* the consumer is behind: measure here, it only has to report */
	if (f->has_st && p->inner->measure && behind(p) &&
	    p->inner->measure(p->inner_ctx, f->fd, &f->st, f->mnt_id, &g.pre) == 0)
		g.fd = -1;
	ret = add(p, EV_FILE, &g, 0, f->path, f->pathlen, NULL, &queued);
	if (!queued) {
		if (g.pre)
			p->inner->discard(p->inner_ctx, g.pre);
		else
			close(g.fd);
	}
	return ret;
}

/* A note or error lost to a failed allocation: the walk stops at its next
 * file with -ENOMEM, and the command says "out of memory". */
static void on_note(void *ctx, const char *path, size_t len, const char *why)
{
	bool queued;

	add(ctx, EV_NOTE, NULL, 0, path, len, why, &queued);
}

static void on_error(void *ctx, const char *path, size_t len, int err, const char *msg)
{
	bool queued;

	add(ctx, EV_ERROR, NULL, err, path, len, msg, &queued);
}

static bool busy(void *ctx)
{
	return behind(ctx);
}

const struct walk_ops pipeline_walk_ops = {
	.note = on_note,
	.error = on_error,
	.check = on_check,
	.busy = busy,
};

int pipeline_new(const struct walk_ops *inner, void *inner_ctx, struct pipeline **out)
{
	struct pipeline *p;
	struct rlimit rl;
	size_t max = MAX_BATCHES;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	const char *test;

	/* one CPU: the second thread would only add switches */
	if (ncpu == 1)
		return -EOPNOTSUPP;
	/* each queued batch holds up to BATCH_EVENTS open fds; the walk and
	 * the library need theirs */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
		if (rl.rlim_cur < 1024)
			return -EOPNOTSUPP;
		if ((rl.rlim_cur / 2 - 128) / BATCH_EVENTS < max)
			max = (rl.rlim_cur / 2 - 128) / BATCH_EVENTS;
		if (max < 2)
			max = 2;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->inner = inner;
	p->inner_ctx = inner_ctx;
	p->max_batches = max;
	/* for the tests, whatever the timing: PC_PIPELINE_TEST=walker has the
	 * walker do all it can, =consumer leaves all to the consumer */
	test = getenv("PC_PIPELINE_TEST");
	p->force_behind = !test ? -1 : strcmp(test, "walker") == 0 ? 1 :
			  strcmp(test, "consumer") == 0 ? 0 : -1;
	p->filling = calloc(1, sizeof(*p->filling));
	if (!p->filling) {
		free(p);
		return -ENOMEM;
	}
	p->nbatches = 1;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	if (pthread_create(&p->thread, NULL, consumer, p) != 0) {
		pthread_mutex_destroy(&p->lock);
		pthread_cond_destroy(&p->cond);
		free(p->filling);
		free(p);
		return -EAGAIN;
	}
	*out = p;
	return 0;
}

static void free_batch(struct batch *b)
{
	close_deferred(b);
	buf_free(&b->text);
	free(b);
}

int pipeline_finish(struct pipeline **pp)
{
	struct pipeline *p = *pp;
	struct batch *b;
	int ret;

	if (!p)
		return 0;
	*pp = NULL;
	if (p->filling && p->filling->n)
		push(p); /* an allocation failure shows in p->failed or below */
	pthread_mutex_lock(&p->lock);
	p->done = true;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	pthread_join(p->thread, NULL);
	ret = p->failed;
	if (p->filling)
		free_batch(p->filling);
	while ((b = p->free_list)) {
		p->free_list = b->next;
		free_batch(b);
	}
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->cond);
	free(p);
	return ret;
}
