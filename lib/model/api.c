/* SPDX-License-Identifier: MIT */
/*
 * The model library's entry points: tasks with a backend whose facts (the
 * detected modes, a filesystem's NOWAIT mode) are found once per task with
 * the strategy's own procedures, and pcm_detect_*(), pcm_residency() on
 * them. The top of libpagecache-model, as process.c is of libpagecache.
 */
#include <stdlib.h>

#include "model-private.h"
#include "pc-private.h"

static int m_modes(struct pc_backend *b, struct pc_modes *out)
{
	struct pcm_backend_state *s = b->ctx;

	if (!s->have_modes) {
		int mincore = pc_detect_mincore_on(b);
		int cachestat;

		if (mincore < 0)
			return mincore;
		cachestat = pc_detect_cachestat_on(b);
		if (cachestat < 0)
			return cachestat;
		s->modes.mincore = mincore;
		s->modes.cachestat = cachestat;
		s->have_modes = 1;
	}
	*out = s->modes;
	return 0;
}

static int m_nowait_mode(struct pc_backend *b, struct pc_bfile *f)
{
	struct pcm_backend_state *s = b->ctx;
	int fs = pcm_fs_of(pcm_bfile_fd(f)->file);

	if (s->nowait[fs] < 0) {
		int mode = pc_detect_nowait_on(b, fs);

		if (mode < 0)
			return mode;
		s->nowait[fs] = mode;
	}
	return s->nowait[fs];
}

static const struct pc_facts model_facts = {
	.modes = m_modes,
	.nowait_mode = m_nowait_mode,
};

PC_EXPORT int pcm_task_new(struct pcm_kernel *k, uint32_t fsuid, uint32_t fsgid,
			   unsigned int caps, struct pcm_task **out)
{
	int ret = pcm_task_create(k, fsuid, fsgid, caps, out);

	if (ret == 0)
		pcm_backend_init(&(*out)->backend, *out, &model_facts);
	return ret;
}

PC_EXPORT int pcm_detect_mincore(struct pcm_task *t)
{
	if (!t)
		return -EINVAL;
	return pc_detect_mincore_on(pcm_task_backend(t));
}

PC_EXPORT int pcm_detect_cachestat(struct pcm_task *t)
{
	if (!t)
		return -EINVAL;
	return pc_detect_cachestat_on(pcm_task_backend(t));
}

PC_EXPORT int pcm_detect_nowait_fs(struct pcm_task *t, int fs)
{
	if (!t || (fs != PCM_FS_DISK && fs != PCM_FS_TMPFS))
		return -EINVAL;
	return pc_detect_nowait_on(pcm_task_backend(t), fs);
}

PC_EXPORT int pcm_detect_nowait(struct pcm_task *t)
{
	return pcm_detect_nowait_fs(t, PCM_FS_DISK);
}

PC_EXPORT int pcm_residency(struct pcm_fd *fd, uint64_t offset, uint64_t length,
			    unsigned int flags, struct pc_residency **out)
{
	struct pc_backend *b;
	struct pc_bfile *f;
	int ret;

	if (!fd || !out)
		return -EINVAL;
	b = pcm_task_backend(fd->task);
	ret = pcm_bfile_wrap(fd, &f);
	if (ret < 0)
		return ret;
	ret = pc_residency_on(b, f, offset, length, flags, out);
	b->ops->close(b, f);
	return ret;
}
