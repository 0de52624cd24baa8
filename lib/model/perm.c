/* SPDX-License-Identifier: MIT */
/*
 * Permission checks: inode_permission() for reads and writes, and the
 * owner-or-writer test shared by mincore's gate and cachestat's (doc/kernels.md
 * sections 1 and 3). The task has no supplementary groups; ACL entries are
 * rw- and the ACL mask is taken to allow them (as setfacl -m recomputes it).
 */
#include "model-private.h"
#include "pc-private.h"

static int acl_has(const uint32_t *ids, unsigned int n, uint32_t id)
{
	for (unsigned int i = 0; i < n; i++)
		if (ids[i] == id)
			return 1;
	return 0;
}

/* generic_permission() for one of the rw bits (04 read, 02 write): the
 * owner class, then the ACL's named entries and the owning group, then
 * others; CAP_DAC_OVERRIDE grants what the bits refuse. */
static int generic_permission(const struct pcm_task *t, const struct pcm_file *f,
			      unsigned int want)
{
	int granted;

	if (t->fsuid == f->uid)
		granted = (f->mode >> 6) & want;
	else if (acl_has(f->acl_uids, f->n_acl_uids, t->fsuid))
		granted = 1;
	else if (acl_has(f->acl_gids, f->n_acl_gids, t->fsgid))
		granted = 1;
	else if (t->fsgid == f->gid)
		granted = (f->mode >> 3) & want;
	else
		granted = f->mode & want;
	if (granted || (t->caps & PCM_CAP_DAC_OVERRIDE))
		return 0;
	return -EACCES;
}

int pcm_may_write(const struct pcm_task *t, const struct pcm_file *f)
{
	if (f->attrs & PCM_F_RDONLY_SB)
		return -EROFS;
	if (f->attrs & PCM_F_IMMUTABLE)
		return -EPERM;
	return generic_permission(t, f, 02);
}

int pcm_may_read(const struct pcm_task *t, const struct pcm_file *f)
{
	return generic_permission(t, f, 04);
}

int pcm_owner_or_writer(const struct pcm_task *t, const struct pcm_file *f)
{
	if (t->fsuid == f->uid || (t->caps & PCM_CAP_FOWNER))
		return 1;
	return pcm_may_write(t, f) == 0;
}

PC_EXPORT int pcm_can_do_mincore(struct pcm_task *t, struct pcm_file *f)
{
	if (!t || !f || t->k != f->k)
		return -EINVAL;
	if (f->attrs & PCM_F_NO_INODE)
		return 0;
	return pcm_owner_or_writer(t, f);
}
