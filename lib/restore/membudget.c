/* SPDX-License-Identifier: MIT */
/*
 * How much memory a restore may fill: MemAvailable from /proc/meminfo, and
 * the room left in the caller's memory cgroup and each of its ancestors
 * (cgroup v2: memory.max minus memory.current; v1: memory.limit_in_bytes
 * minus memory.usage_in_bytes), whichever is smallest. A cgroup's usage
 * counts its page cache, which fills it up to the limit in time: as
 * MemAvailable does for the machine, the cache reclaim takes first (its
 * inactive file pages, memory.stat) counts as room.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../pc-private.h"

/* A decimal number up to max: 0, or -EINVAL, -ERANGE. */
static int parse_uint(const char *s, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == ERANGE || v > max)
		return -ERANGE;
	if (*end)
		return -EINVAL;
	*out = v;
	return 0;
}

static int read_u64_file(const char *path, uint64_t *v, bool *unlimited)
{
	char line[64];
	FILE *f = fopen(path, "re");
	int ret = -EINVAL;

	*unlimited = false;
	if (!f)
		return -errno;
	if (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (strcmp(line, "max") == 0) {
			*unlimited = true;
			ret = 0;
		} else if (parse_uint(line, UINT64_MAX, v) == 0) {
			ret = 0;
		}
	}
	fclose(f);
	return ret;
}

static uint64_t mem_available(void)
{
	char line[256];
	FILE *f = fopen("/proc/meminfo", "re");
	uint64_t v = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long kb;

		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
			v = (uint64_t)kb * 1024;
			break;
		}
	}
	fclose(f);
	return v;
}

/* A count from a memory.stat file; 0 when it is not there. */
static uint64_t stat_field(const char *path, const char *name)
{
	char line[256];
	FILE *f = fopen(path, "re");
	size_t n = strlen(name);
	uint64_t v = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (strncmp(line, name, n) == 0 && line[n] == ' ') {
			if (parse_uint(line + n + 1, UINT64_MAX, &v) < 0)
				v = 0;
			break;
		}
	}
	fclose(f);
	return v;
}

/* The cgroup path of this process in the v2 hierarchy (v2) or in the v1
 * hierarchy that has the memory controller. */
static char *cgroup_path(bool v2)
{
	char *line = NULL, *path = NULL;
	size_t cap = 0;
	FILE *f = fopen("/proc/self/cgroup", "re");

	if (!f)
		return NULL;
	while (!path && getline(&line, &cap, f) > 0) {
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;

		if (!c2)
			continue;
		line[strcspn(line, "\n")] = '\0';
		*c2 = '\0';
		if (v2 && strcmp(line, "0:") == 0 && c1[1] == '\0') {
			path = strdup(c2 + 1);
		} else if (!v2) {
			char *save = NULL;

			for (char *tok = strtok_r(c1 + 1, ",", &save); tok;
			     tok = strtok_r(NULL, ",", &save))
				if (strcmp(tok, "memory") == 0)
					path = strdup(c2 + 1);
		}
	}
	free(line);
	fclose(f);
	return path;
}

/* The mount point of the hierarchy and its root, from mountinfo. */
static int cgroup_mount(bool v2, char **mnt, char **mroot)
{
	char *line = NULL;
	size_t cap = 0;
	FILE *f = fopen("/proc/self/mountinfo", "re");
	int found = 0;

	if (!f)
		return 0;
	while (!found && getline(&line, &cap, f) > 0) {
		char root[4096], point[4096], fstype[64], super[1024];
		char *sep = strstr(line, " - ");

		if (!sep || sscanf(line, "%*s %*s %*s %4095s %4095s", root, point) != 2 ||
		    sscanf(sep + 3, "%63s %*s %1023s", fstype, super) != 2)
			continue;
		if (v2 && strcmp(fstype, "cgroup2") == 0) {
			found = 1;
		} else if (!v2 && strcmp(fstype, "cgroup") == 0) {
			char *save = NULL;

			for (char *tok = strtok_r(super, ",", &save); tok;
			     tok = strtok_r(NULL, ",", &save))
				if (strcmp(tok, "memory") == 0)
					found = 1;
		}
		if (found) {
			/* mountinfo escapes spaces as \040: such mounts are not ours */
			*mnt = strdup(point);
			*mroot = strdup(root);
			if (!*mnt || !*mroot) {
				free(*mnt);
				free(*mroot);
				found = 0;
				break;
			}
		}
	}
	free(line);
	fclose(f);
	return found;
}

/* The least room left in the cgroup and its ancestors; UINT64_MAX: none. */
static uint64_t cgroup_room(bool v2)
{
	const char *limit_name = v2 ? "memory.max" : "memory.limit_in_bytes";
	const char *usage_name = v2 ? "memory.current" : "memory.usage_in_bytes";
	/* v1's usage counts the cgroups below it: so must its cache */
	const char *inactive_name = v2 ? "inactive_file" : "total_inactive_file";
	char *cg = cgroup_path(v2), *mnt = NULL, *mroot = NULL, *dir = NULL;
	uint64_t room = UINT64_MAX;
	const char *rel;
	size_t n;

	if (!cg || !cgroup_mount(v2, &mnt, &mroot))
		goto out;
	n = strlen(mroot);
	rel = cg;
	if (strcmp(mroot, "/") != 0) {
		if (strncmp(cg, mroot, n) != 0)
			goto out;
		rel = cg + n;
	}
	if (asprintf(&dir, "%s%s", mnt, rel) < 0) {
		dir = NULL;
		goto out;
	}
	for (;;) {
		char path[8192];
		uint64_t limit = 0, usage = 0;
		bool unl, unl2;
		char *slash;

		snprintf(path, sizeof(path), "%s/%s", dir, limit_name);
		if (read_u64_file(path, &limit, &unl) == 0 && !unl &&
		    limit < (UINT64_C(1) << 62)) {
			snprintf(path, sizeof(path), "%s/%s", dir, usage_name);
			if (read_u64_file(path, &usage, &unl2) == 0) {
				uint64_t r, inactive;

				snprintf(path, sizeof(path), "%s/memory.stat", dir);
				inactive = stat_field(path, inactive_name);
				usage -= inactive < usage ? inactive : usage;
				r = limit > usage ? limit - usage : 0;

				if (r < room)
					room = r;
			}
		}
		if (strlen(dir) <= strlen(mnt))
			break;
		slash = strrchr(dir, '/');
		if (!slash)
			break;
		*slash = '\0';
	}
out:
	free(cg);
	free(mnt);
	free(mroot);
	free(dir);
	return room;
}

PC_EXPORT int pc_memory_budget(uint64_t *bytes, const char **why)
{
	uint64_t avail = mem_available();
	uint64_t v2 = cgroup_room(true), v1 = cgroup_room(false);
	const char *w = "MemAvailable";

	if (!bytes)
		return -EINVAL;
	if (!avail) {
		avail = UINT64_MAX;
		w = "unknown";
	}
	if (v2 < avail) {
		avail = v2;
		w = "the cgroup's memory.max minus its usage";
	}
	if (v1 < avail) {
		avail = v1;
		w = "the cgroup's memory.limit_in_bytes minus its usage";
	}
	*bytes = avail;
	if (why)
		*why = w;
	return avail == UINT64_MAX ? -ENODATA : 0;
}
