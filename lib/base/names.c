/* SPDX-License-Identifier: MIT */
/* Stable names for the public enums, used by the CLI and JSON output. */
#include "pc-private.h"

static const char *lookup(const char *const *names, size_t n, int value)
{
	if (value < 0 || (size_t)value >= n)
		return NULL;
	return names[value];
}

PC_EXPORT const char *pc_mincore_mode_name(int mode)
{
	static const char *const names[] = {
		[PC_MINCORE_UNKNOWN] = "unknown",
		[PC_MINCORE_FULL] = "full",
		[PC_MINCORE_GATED_FAKED] = "gated-faked",
		[PC_MINCORE_GATED_MAPPED] = "gated-mapped",
		[PC_MINCORE_MAPPED_ONLY] = "mapped-only",
		[PC_MINCORE_USELESS] = "useless",
	};
	return lookup(names, PC_ARRAY_SIZE(names), mode);
}

PC_EXPORT const char *pc_nowait_mode_name(int mode)
{
	static const char *const names[] = {
		[PC_NOWAIT_UNKNOWN] = "unknown",
		[PC_NOWAIT_UNSUPPORTED] = "unsupported",
		[PC_NOWAIT_CLEAN] = "clean",
		[PC_NOWAIT_DESTRUCTIVE] = "destructive",
	};
	return lookup(names, PC_ARRAY_SIZE(names), mode);
}

PC_EXPORT const char *pc_cachestat_mode_name(int mode)
{
	static const char *const names[] = {
		[PC_CACHESTAT_UNKNOWN] = "unknown",
		[PC_CACHESTAT_ABSENT] = "absent",
		[PC_CACHESTAT_BLOCKED] = "blocked",
		[PC_CACHESTAT_GATED] = "gated",
		[PC_CACHESTAT_OPEN] = "open",
	};
	return lookup(names, PC_ARRAY_SIZE(names), mode);
}

PC_EXPORT const char *pc_quality_name(int quality)
{
	static const char *const names[] = {
		[PC_QUALITY_UNKNOWN] = "unknown",
		[PC_QUALITY_EXACT] = "exact",
		[PC_QUALITY_MAPPED] = "mapped",
	};
	return lookup(names, PC_ARRAY_SIZE(names), quality);
}

PC_EXPORT const char *pc_source_name(int source)
{
	static const char *const names[] = {
		[PC_SOURCE_NONE] = "none",
		[PC_SOURCE_MINCORE] = "mincore",
		[PC_SOURCE_CACHESTAT] = "cachestat",
		[PC_SOURCE_PREADV2] = "preadv2",
		[PC_SOURCE_IO_URING] = "io_uring",
	};
	return lookup(names, PC_ARRAY_SIZE(names), source);
}
