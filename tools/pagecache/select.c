/* SPDX-License-Identifier: MIT */
/* The options that choose which files a command works on (paths, the walk's
 * filters, --files-from, --pid), parsed and run in one place for stat,
 * evict, touch and lock. */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

const char selection_help[] =
	"Selection:\n"
	"  -L, --dereference       follow symlinks met in the walk\n"
	"  -x, --one-file-system   stay on the filesystem of each PATH\n"
	"      --include GLOB      only files matching GLOB (repeatable)\n"
	"      --exclude GLOB      skip files and directories matching GLOB\n"
	"                          (a GLOB with a '/' matches the whole path,\n"
	"                          otherwise the name)\n"
	"      --max-size SIZE     skip files larger than SIZE (K, M, G, T suffixes)\n"
	"      --files-from FILE   read more paths from FILE ('-': standard input),\n"
	"                          one per line\n"
	"  -0, --null              paths in --files-from end with NUL, not newline\n"
	"      --pid PID           the files process PID has open or mapped\n"
	"                          (repeatable)\n";

void selection_init(struct selection *s)
{
	memset(s, 0, sizeof(*s));
	s->max_size = UINT64_MAX;
}

static int add_string(char ***list, size_t *n, char *str)
{
	char **l = realloc(*list, (*n + 2) * sizeof(*l));

	if (!l)
		return -ENOMEM;
	l[(*n)++] = str;
	l[*n] = NULL;
	*list = l;
	return 0;
}

int selection_option(struct selection *s, const char *cmd, int opt, char *arg)
{
	uint64_t v;

	switch (opt) {
	case 'L':
		s->wo.follow = true;
		return 1;
	case 'x':
		s->wo.one_fs = true;
		return 1;
	case '0':
		s->nul = true;
		return 1;
	case OPT_SEL_INCLUDE:
		return add_string(&s->wo.include, &s->ninclude, arg) < 0 ? -ENOMEM : 1;
	case OPT_SEL_EXCLUDE:
		return add_string(&s->wo.exclude, &s->nexclude, arg) < 0 ? -ENOMEM : 1;
	case OPT_SEL_MAX_SIZE:
		if (parse_size(arg, &s->max_size) < 0)
			return usage_error(cmd, "--max-size wants a size like 100M, not '%s'", arg);
		return 1;
	case OPT_SEL_FILES_FROM:
		if (s->files_from)
			return usage_error(cmd, "--files-from given twice");
		s->files_from = arg;
		return 1;
	case OPT_SEL_PID:
		if (parse_uint(arg, 0x7fffffff, &v) < 0 || v == 0)
			return usage_error(cmd, "--pid wants a process id, not '%s'", arg);
		return add_string(&s->pids, &s->npids, arg) < 0 ? -ENOMEM : 1;
	}
	return 0;
}

int selection_check(const struct selection *s, const char *cmd, int npaths)
{
	if (s->nul && !s->files_from)
		return usage_error(cmd, "%s", "-0 goes with --files-from");
	if (npaths <= 0 && !s->files_from && !s->npids)
		return usage_error(cmd, "%s", "no PATH given");
	return 0;
}

static int walk_files_from(struct walk *w, const char *name, int delim)
{
	FILE *f = strcmp(name, "-") == 0 ? stdin : fopen(name, "re");
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int ret = 0;

	if (!f) {
		walk_error(w, name, strlen(name), -errno, NULL);
		return 0;
	}
	while ((n = getdelim(&line, &cap, delim, f)) >= 0) {
		if (n > 0 && line[n - 1] == delim)
			line[--n] = '\0';
		if (n == 0)
			continue;
		if (memchr(line, '\0', (size_t)n)) {
			walk_error(w, line, strlen(line), -EINVAL,
				   "a path read from --files-from holds a NUL byte (use -0?)");
			continue;
		}
		ret = walk_path(w, line);
		if (ret < 0)
			break;
	}
	if (ret == 0 && ferror(f))
		walk_error(w, name, strlen(name), -EIO, "read error");
	free(line);
	if (f != stdin)
		fclose(f);
	return ret;
}

int selection_walk(struct selection *s, struct walk *w, int npaths, char **paths)
{
	int ret = 0;

	for (int i = 0; i < npaths && ret == 0; i++)
		ret = walk_path(w, paths[i]);
	if (ret == 0 && s->files_from)
		ret = walk_files_from(w, s->files_from, s->nul ? '\0' : '\n');
	for (size_t i = 0; i < s->npids && ret == 0; i++)
		ret = walk_pid(w, s->pids[i]);
	return ret;
}

void selection_free(struct selection *s)
{
	free(s->wo.include);
	free(s->wo.exclude);
	free(s->pids);
	s->wo.include = s->wo.exclude = s->pids = NULL;
}
