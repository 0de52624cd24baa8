/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "findino.h"
#include "restore-private.h"

static int lost_index_cmp(const void *pa, const void *pb)
{
	const struct lost *a = pa, *b = pb;

	return a->index < b->index ? -1 : a->index > b->index;
}

/* A lost file found at l->found: restored there when it is the file
 * recorded (device, inode, size and mtime), its runs read from f. */
static int restore_found(struct restore *c, const struct pc_restore_file *f, struct lost *l,
			 struct pc_run *batch)
{
	struct stat st;
	int fd = pc_beneath_open(&c->bn, l->found, &st);

	if (fd >= 0 && (uint64_t)st.st_dev == l->dev && (uint64_t)st.st_ino == l->ino &&
	    rs_same_file(true, f->file_size, f->mtime_ns, &st)) {
		c->skipped[PC_RESTORE_SKIP_MISSING]--;
		c->renamed++;
		rs_event(c, PC_RESTORE_EV_RENAMED, l->found, 0, l->index);
		return rs_restore_streaming(c, l->found, fd, &st, batch, 0);
	}
	if (fd >= 0)
		close(fd);
	free(l->found);
	l->found = NULL; /* not that file: missing */
	return 0;
}

/*
 * The files missing from their recorded path (rs_lost_add()), looked for
 * beneath the root by the device and inode recorded (find_inodes()): a file
 * renamed since the dump, or one of whose hard links was removed, is
 * restored under the name it has now when its size and mtime are still
 * those recorded (a device and inode number alone can be a new file's, the
 * old one deleted). The snapshot is read again for their runs. Not when
 * the restore stopped early (with --no-find-renamed, or from a pipe,
 * rs_lost_add() keeps no file); a failure of the search itself leaves them
 * missing, with a note, and the restore goes on.
 * Then the notes of those still missing. Returns 0, or a failure of the
 * restore of a found file (its log), which ends the restore as elsewhere.
 */
int rs_find_renamed(struct restore *c)
{
	struct inode_key *keys;
	struct pc_run *batch = NULL;
	const struct pc_restore_file *f;
	uint64_t index = 0;
	size_t next = 0;
	int ret = 0, failed = 0;
	bool interrupted = false;  /* the search itself: who knows what it missed */

	if (!c->nlost)
		return 0;
	rs_note_cancel(c);
	if (c->stop)
		goto notes;
	keys = calloc(c->nlost, sizeof(*keys));
	if (!keys) {
		failed = -ENOMEM;
		goto notes;
	}
	for (size_t i = 0; i < c->nlost; i++)
		keys[i] = (struct inode_key){ .dev = c->lost[i].dev, .ino = c->lost[i].ino, .i = i };
	failed = pc_find_inodes(c->bn.rootfd, keys, c->nlost, c->o.cancel);
	for (size_t k = 0; k < c->nlost; k++)
		c->lost[keys[k].i].found = keys[k].found;
	free(keys);
	if (rs_user_cancel(c)) {
		rs_note_cancel(c);
		interrupted = true;
	}
	if (failed <= 0)
		goto notes;
	failed = 0;
	qsort(c->lost, c->nlost, sizeof(*c->lost), lost_index_cmp);
	batch = malloc(BATCH_RUNS * sizeof(*batch));
	failed = batch ? c->src.rewind(c->src.arg) : -ENOMEM;
	while (failed == 0 && ret == 0) {
		int more;

		while (next < c->nlost && !c->lost[next].found)
			next++;
		if (next == c->nlost)
			break;
		if (c->budget == 0 && !c->stop)
			c->stop = PC_RESTORE_STOP_BUDGET;
		rs_note_cancel(c);
		if (c->stop)
			break;
		more = rs_next_file(c, &f);
		if (more <= 0) {
			failed = more ? more : -EIO; /* it was there the first time */
			break;
		}
		if (index++ == c->lost[next].index)
			ret = restore_found(c, f, &c->lost[next++], batch);
	}
	free(batch);
notes:
	if (failed < 0)
		rs_event(c, PC_RESTORE_EV_SEARCH_FAILED, NULL, failed, 0);
	for (size_t i = 0; i < c->nlost; i++) {
		if (c->lost[i].found && i < next)
			continue; /* restored under its name now */
		if ((c->lost[i].found || interrupted) && c->stop) {
			/* found, or maybe to be found, but the restore
			 * stopped before it */
			c->skipped[PC_RESTORE_SKIP_MISSING]--;
			c->skipped[PC_RESTORE_SKIP_NOT_REACHED]++;
			continue;
		}
		rs_event(c, PC_RESTORE_EV_MISSING, c->lost[i].rel, 0, c->lost[i].index);
	}
	return ret;
}

